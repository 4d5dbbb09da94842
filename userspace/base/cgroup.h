// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/base/cgroup.h - cgroup v2: where the hierarchy is mounted,
// opening a cgroup directory (with an error that says what PATH is instead),
// its cgroup.procs for moving a process in, and a cgroup's path from its id
// (what the kernel reports for a BPF cgroup link).
#pragma once

#include "base/fd.h"

#include <cstdint>
#include <string>

namespace lumen
{

// Where the cgroup v2 hierarchy is mounted (the first cgroup2 in
// /proc/mounts); Error when there is none.
std::string cgroup2_root();
// The directory of cgroup v2 `path`, opened O_DIRECTORY; Error when it does
// not exist, is not a directory or is not on a cgroup2 file system.
Fd open_cgroup_dir(const std::string &path);
// PATH/cgroup.procs, opened for writing a pid into it.
Fd open_cgroup_procs(const std::string &path);
// The path of the cgroup with kernfs id `id` (its file handle); "" when it
// cannot be resolved (removed, id 0, no cgroup2 mount).
std::string cgroup_path_from_id(std::uint64_t id);

} // namespace lumen
