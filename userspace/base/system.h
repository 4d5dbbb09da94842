// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/base/system.h - the machine lumen runs on: privilege, files,
// the monotonic clock, the cgroup v2 mount, sysctl, and word lists.
#pragma once

#include "base/error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace lumen
{

void require_root(); // Error "must run as root" otherwise
bool path_exists(const std::string &path);
std::uint64_t monotonic_ns(); // CLOCK_MONOTONIC in ns
// Where the cgroup v2 hierarchy is mounted (first cgroup2 in
// /proc/mounts); Error when there is none.
std::string cgroup2_root();

// sysctl by its dotted name ("net.ipv4.tcp_congestion_control"); read
// values are trimmed.
std::string read_sysctl(const std::string &name);
void write_sysctl(const std::string &name, const std::string &value);
// Adds or removes one algorithm from net.ipv4.tcp_allowed_congestion_control
// (a space-separated list); returns whether the list changed.
bool allow_congestion_control(const std::string &algo, bool allow);

std::vector<std::string> split_words(const std::string &text);
// The words joined by `sep`: {"a", "b"}, ", " -> "a, b".
std::string join_words(const std::vector<std::string> &words, const char *sep);

} // namespace lumen
