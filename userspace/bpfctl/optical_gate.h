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

#include <nlohmann/json.hpp>

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

// The largest GSO skb (gso_max_size) a gate lets DEV make: what the
// shortest window carries (lumen_gso_cap_bytes, never under the MTU) of the
// schedule in force at now_ns and, while a change is under way, the next
// one, so that a burst fits the windows on both sides of the instant.
// attach lowers DEV's gso_max_size to it, and so does stage when the new
// schedule's windows are shorter (TCP reads it when a connection starts).
std::uint64_t gate_gso_cap(const lumen_gate_cfg &cfg, std::uint32_t mtu, std::uint64_t now_ns);

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
// DEV's MTU and gso_max_size as `ip -d link` shows them (0: unknown).
struct GateDevice {
	std::uint64_t mtu = 0, gso_max_size = 0;
};
GateDevice read_gate_device(const std::string &netns, const std::string &dev);
// `lumen gate stats --json`: the gate's state at now_ns (TAI), what attach
// configured (margin, rate, max hold, the stale limit, the GSO cap and the
// device's gso_max_size) and its counters.
nlohmann::json gate_status_json(const GateStatus &st, const GateDevice &d, std::uint64_t now_ns);
// A change staged here and not committed, its instant more than the gate's
// stale limit (or 4 slots, at least 100 ms) ago: the gate is quiet until its
// coordinator's word (include/lumen/optical.h); stats say so.
bool gate_change_overdue(const lumen_gate_cfg &cfg, std::uint64_t now_ns);
const char *gate_counter_name(std::uint32_t i);

} // namespace lumen
