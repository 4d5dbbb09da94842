// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/bpfctl/rotor.h - the control plane of the emulated optical
// circuit switch (bpf/rotor_switch.bpf.c): load it with a schedule onto the
// ports of one namespace, replace its schedule, read its counters, remove
// it. The testbed's "rotor" topology and `lumen rotor` go through this API.
//
// One rotor per machine: its maps are pinned under
// LUMEN_PIN_ROOT/LUMEN_PIN_ROTOR_DIR (cfg, match, stats), so any process
// can read the counters; the program lives as long as its tc filters (on
// the ports, in the rotor's namespace).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

extern "C" {
#include "lumen/bpf_shared.h"
}

#include "sched/schedule.h"

namespace lumen
{

struct RotorPortSpec {
	std::string dev; // in the rotor's namespace
	std::uint32_t node = 0, uplink = 0;
};

struct RotorRequest {
	std::string netns; // "" = the caller's
	std::vector<RotorPortSpec> ports; // one per (node, uplink): nodes * uplinks
	std::vector<std::uint32_t> host_addrs; // IPv4, host byte order, by node
	sched::Schedule schedule;
	std::uint32_t max_period = 0; // slots per bank the tables make room for (0: sched::table_period's)
};

// UsageError for a request that cannot describe a rotor: a schedule over
// LUMEN_ROTOR_MAX_PORTS ports, ports missing, repeated or out of range,
// addresses not one per node or repeated.
void check_rotor_request(const RotorRequest &req);
// Loads and attaches, all or nothing. Error when a rotor is attached
// already, or on any failure (libbpf's log tail included).
void attach_rotor(const RotorRequest &req);
// Puts a new schedule in force at once (same nodes and uplinks, a period
// that fits the tables: UsageError otherwise), atomically: its tables go
// into the bank not in force, then the switch changes banks. Not a change
// the hosts follow (stage_rotor is).
void load_rotor_schedule(const sched::Schedule &s);
// The rotor's part in a schedule change at an instant (sched/change.h):
// announce s for switch_ns, commit or abort the change to a version.
// UsageError for a step the rotor's state refuses; nothing changes then.
void stage_rotor(const sched::Schedule &s, std::uint64_t switch_ns);
void commit_rotor(std::uint64_t version);
// The links' rate (0: unknown): with it the switch judges a frame from its
// head to its tail, its wire time later (rotor_switch.bpf.c).
void set_rotor_rate(std::uint32_t rate_mbps);
void abort_rotor(std::uint64_t version);
bool rotor_attached();
// Unpins the maps (the filters go with the rotor's devices); false when no
// rotor was attached.
bool detach_rotor();

struct RotorStatus {
	lumen_rotor_cfg cfg{};
	std::vector<lumen_rotor_stats> ports; // uplink * nodes + node, summed over CPUs
	lumen_rotor_stats total{};
};
// Error when no rotor is attached.
RotorStatus read_rotor();
// The counters' names and help, by index (LUMEN_ROTOR_COUNTERS).
const char *rotor_counter_name(std::uint32_t i);
const char *rotor_counter_help(std::uint32_t i);

} // namespace lumen
