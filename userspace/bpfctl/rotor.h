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
};

// UsageError for a request that cannot describe a rotor: a schedule over
// LUMEN_ROTOR_MAX_PORTS ports, ports missing, repeated or out of range,
// addresses not one per node or repeated.
void check_rotor_request(const RotorRequest &req);
// Loads and attaches, all or nothing. Error when a rotor is attached
// already, or on any failure (libbpf's log tail included).
void attach_rotor(const RotorRequest &req);
// Writes a new schedule's tables (same nodes and uplinks; a period no
// longer than the one attached): UsageError otherwise. The slot in force
// changes table by table: a test's tool, not a synchronized change.
void load_rotor_schedule(const sched::Schedule &s);
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
