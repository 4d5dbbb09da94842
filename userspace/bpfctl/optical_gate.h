// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/bpfctl/optical_gate.h - the control plane of direct-hop gating
// in the kernel (bpf/optical_gate.bpf.c): on a host's device towards a
// rotor switch, an fq root qdisc and a tc egress program that gives each
// packet to a node of the schedule the departure time of its next window.
// `lumen gate` goes through this API.
//
// One gate per (namespace, device); its maps are pinned under
// LUMEN_PIN_ROOT/LUMEN_PIN_GATE_DIR/<netns>@<dev>/ (cfg, stats, waits, clock), so
// any process can read its counters, change its schedule and detach it.
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

struct GateRequest {
	std::string netns; // "" = the caller's
	std::string dev;
	sched::Schedule schedule;
	std::uint32_t self = 0; // this host's node
	std::vector<std::uint32_t> host_addrs; // IPv4, host byte order, by node
	std::uint32_t rate_mbps = 0; // the link's rate (> 0)
	std::uint64_t margin_ns = 0; // windows shrink by this on each side
	std::uint64_t max_hold_ns = 0; // longest wait before a packet is dropped (0: 10 s)
	std::uint32_t max_period = 0; // slots per bank the tables make room for (0: sched::table_period's)
	std::string lumend; // follow the quiet word of the lumend pinned under this name ("": none)
	// with lumend: its state older than this is stale (lumend died): drop
	// everything (0: 4 slots, at least 100 ms)
	std::uint64_t stale_ns = 0;
};

// UsageError for a request that cannot work: self not a node, addresses
// not one per node or repeated, no rate, a margin that leaves no window, a
// period or node count over the tables' limits.
void check_gate_request(const GateRequest &req);
// Replaces DEV's root qdisc by fq (Error naming sch_fq when the kernel has
// none) and attaches the program, all or nothing. Error when DEV has a gate.
void attach_gate(const GateRequest &req);
bool gate_attached(const std::string &netns, const std::string &dev);
// Removes the program, the fq qdisc and the pins; false when there was no gate.
bool detach_gate(const std::string &netns, const std::string &dev);

// The gate's part in a schedule change at an instant (sched/change.h):
// announce s (same nodes, a period that fits the tables) for switch_ns,
// commit or abort the change to a version. UsageError for a step the
// gate's state refuses, Error when DEV has no gate; nothing changes then.
void stage_gate(const std::string &netns, const std::string &dev, const sched::Schedule &s, std::uint64_t switch_ns);
void commit_gate(const std::string &netns, const std::string &dev, std::uint64_t version);
void abort_gate(const std::string &netns, const std::string &dev, std::uint64_t version);

struct GateStatus {
	lumen_gate_cfg cfg{};
	lumen_osched_state osched{}; // what the gate reads of its lumend (all zero: none)
	std::vector<lumen_gate_stats> dsts; // by destination node, summed over CPUs
	lumen_gate_stats total{};
};
// Error when DEV has no gate.
GateStatus read_gate(const std::string &netns, const std::string &dev);
const char *gate_counter_name(std::uint32_t i);

} // namespace lumen
