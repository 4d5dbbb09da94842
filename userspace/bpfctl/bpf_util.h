// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/bpfctl/bpf_util.h - what every loader of lumen's eBPF parts
// needs: the BTF check, the bpffs pin directory, libbpf's log, per-CPU
// counter sums.
#pragma once

#include "base/error.h"
#include "base/fd.h"

#include <bpf/libbpf.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lumen
{

void require_btf(); // Error when /sys/kernel/btf/vmlinux is missing
// Makes sure LUMEN_PIN_ROOT exists on a mounted bpffs (mounts one at
// /sys/fs/bpf if nothing is there). Returns the directory.
std::string ensure_pin_root();
std::string pin_path(std::string_view name); // LUMEN_PIN_ROOT "/" name
// Options for a skeleton's open: maps marked for pinning are shared through
// LUMEN_PIN_ROOT (reused when pinned, pinned when loaded).
bpf_object_open_opts pin_root_open_opts();
bool pinned(std::string_view name); // pin_path(name) exists
// bpf_obj_get of a pin: Error naming the pin when it cannot be opened.
Fd open_pin(std::string_view name);
// Removes a pin; false when there was none, Error when it cannot be removed.
bool remove_pin(std::string_view name);

// Exclusive flock on the pin directory, for read-modify-write of pinned
// state (switch ports, parameter publication): one writer at a time.
class PinRootLock
{
      public:
	PinRootLock();

      private:
	Fd fd_;
};

// libbpf's messages are collected, not printed; on failure the last lines
// go into the error text (verifier logs, missing kernel features).
void capture_libbpf_log();
std::string libbpf_log_tail(std::size_t lines = 20);
void clear_libbpf_log();

// Sums a per-CPU array of u64 counters (map fd), entries [0, n).
std::vector<std::uint64_t> sum_percpu_counters(int map_fd, std::uint32_t n);

} // namespace lumen
