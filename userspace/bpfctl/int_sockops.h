// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/bpfctl/int_sockops.h - the control plane of
// bpf/int_sockops.bpf.c: load the INT sockops program, attach it to a
// cgroup v2 with a pinned bpf_link so it outlives this process, detach it,
// and read its configuration and counters. `lumen int` prints what these
// return; the experiment runner calls them directly.
//
// Pinned under LUMEN_PIN_ROOT while enabled (names in lumen/bpf_shared.h):
//   int_sockops_link   the cgroup link; unpinning it detaches the program
//   int_sockops_prog   the program
//   lumen_int_cfg      struct lumen_int_config
//   lumen_int_stats    per-CPU counters (enum lumen_int_counter)
//   lumen_int_sk       per-socket INT state, shared with the PowerTCP
//                      struct_ops (bpfctl/cc.h), which may have pinned it
//                      first and keeps it while it is loaded.
#pragma once

#include "bpfctl/cc.h" // CounterName

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lumen
{

extern const CounterName kIntCounters[LUMEN_INT_CNT_MAX];

constexpr unsigned kIntDefaultSlots = 3;
constexpr unsigned kIntDefaultSlotsWide = 2;
// NOP,NOP,TS takes 12 of the 40 option bytes: 28 remain, 3 slots of version
// 1 (26 bytes) or 2 of version 2 (24 bytes).
constexpr unsigned kIntSlotsWithTimestamps = 3;
constexpr unsigned kIntSlotsWithTimestampsWide = 2;

struct IntEnableRequest {
	std::string cgroup; // a cgroup v2 directory
	bool wide = false; // version 2 of the option (wide records, partial echoes)
	unsigned slots = 0; // 1..lumen_int_max_slots(version); 0 = the version's default
	std::uint32_t families = 0; // LUMEN_INT_FAMILY_* bits; 0 = both
	std::vector<std::uint16_t> ports; // at most LUMEN_INT_MAX_PORTS; empty = all
};
// The configuration the program gets; UsageError when the request is out
// of range (slots, ports, families).
lumen_int_config int_config(const IntEnableRequest &req);
// Loads, configures, attaches and pins; all or nothing (Ctrl-C included).
// Error when already enabled or the cgroup is not a cgroup v2 directory.
void enable_int(const IntEnableRequest &req);

struct IntDisableResult {
	bool removed = false; // false: nothing was enabled
	bool sk_kept = false; // lumen_int_sk stays: the struct_ops part uses it
};
IntDisableResult disable_int();

struct IntStatus {
	bool enabled = false; // the link is pinned
	bool attached = false; // ... and its cgroup still exists
	std::uint32_t link_id = 0, prog_id = 0;
	std::uint64_t cgroup_id = 0;
	std::string cgroup; // "" when it cannot be resolved
	std::optional<lumen_int_config> config;
	std::optional<std::vector<std::uint64_t>> counters; // enum lumen_int_counter
	bool sk_pinned = false;
};
IntStatus int_status();

std::string int_families_text(std::uint32_t families); // "ipv4", "ipv6", "ipv4,ipv6"
std::string int_ports_text(const lumen_int_config &cfg); // "all" or "80,443"

} // namespace lumen
