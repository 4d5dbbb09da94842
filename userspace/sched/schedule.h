// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/sched/schedule.h - a periodic optical circuit schedule: what a
// rotor switch does in every slot, and so when each end host may send
// directly to each other one.
//
// The network (thesis ch. 7, RotorNet, Sirius, Vermilion): N nodes (ToRs or
// hosts), each with d uplinks; uplink p of every node goes to circuit
// switch p, which in every slot of length slot_ns connects its ports by one
// matching and cycles through `period` matchings, forever. A slot begins at
// T0 + t * slot_ns (T0: TAI nanoseconds of slot 0 of period 0); guard_ns of
// it, at its end (the sources' convention) or at its start, is the
// reconfiguration: nothing may be sent then. So node i may send to node j
// in slot t through uplink p exactly when matching (p, t mod period) maps
// i to j, in that slot's usable part of slot_ns - guard_ns.
//
// A matching is stored as a permutation: dst(p, s, i) is where node i's
// uplink p leads in slot s; dst == i means the uplink is idle (a self-loop
// or padding slot). Every (uplink, slot) is a permutation, because a
// circuit switch connects each input to one output and each output to one
// input. In one slot a node's uplinks reach distinct destinations, unless
// `parallel` says the schedule means otherwise (Vermilion with d > 1 puts
// a heavy pair on several uplinks at once).
//
// The emulated graph (thesis Def. 15, Cor. 1) collapses time: pair (u, v)
// gets circuits(u, v) of the period's (slot, uplink) positions, so its
// single-hop rate is circuits(u, v) * duty / period in units of one
// uplink's rate, duty = 1 - guard_ns / slot_ns.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

extern "C" {
#include "lumen/optical.h"
}

namespace lumen::sched
{

constexpr uint32_t kFormatVersion = 1; // the file's "format_version"
constexpr uint32_t kMaxNodes = 4096;
constexpr uint32_t kMaxUplinks = 64;
constexpr uint64_t kMaxEntries = 1ull << 24; // uplinks * period * nodes

enum class GuardAt {
	kEnd,
	kStart
};

struct Schedule {
	uint64_t version = 0; // this schedule's version (hosts switch versions together)
	uint32_t nodes = 0; // N, nodes 0..N-1
	uint32_t uplinks = 0; // d
	uint32_t period = 0; // slots per period
	uint64_t slot_ns = 0;
	uint64_t guard_ns = 0; // < slot_ns
	GuardAt guard_at = GuardAt::kEnd;
	uint64_t t0_ns = 0; // TAI ns of slot 0 of period 0
	double link_gbps = 0; // one uplink's rate (0: not given)
	bool parallel = false; // a node's uplinks may reach one destination in the same slot
	std::string generator; // how it was made, for people ("round-robin", "vermilion k=3 l=1 ...")
	// dst[(p * period + s) * nodes + i]: where node i's uplink p leads in slot s
	std::vector<uint32_t> dst;

	uint32_t to(uint32_t uplink, uint32_t slot, uint32_t node) const
	{
		return dst[((size_t)uplink * period + slot) * nodes + node];
	}
	uint32_t &to(uint32_t uplink, uint32_t slot, uint32_t node)
	{
		return dst[((size_t)uplink * period + slot) * nodes + node];
	}
	// the fraction of a slot that carries data
	double duty() const
	{
		return slot_ns ? 1.0 - (double)guard_ns / (double)slot_ns : 0.0;
	}
	// an empty schedule of the given shape, every uplink idle
	static Schedule idle(uint32_t nodes, uint32_t uplinks, uint32_t period);
};

// Throws UsageError naming the first mistake: a shape out of range, dst of
// the wrong size, a destination that is no node, an (uplink, slot) that is
// not a permutation, a node whose uplinks reach one destination twice in a
// slot (unless parallel), guard_ns >= slot_ns, slot_ns 0. `source` prefixes
// the message (a file name).
void validate(const Schedule &s, const std::string &source = "schedule");

// The JSON file format (docs/optical.md): every field above, the matchings as
// "matchings": [uplink][slot][node]. from_json refuses unknown keys, wrong
// types, a format_version it does not know, and whatever validate refuses.
nlohmann::json to_json(const Schedule &s);
Schedule from_json(const nlohmann::json &j, const std::string &source);
// The file's text: to_json's, one key and one slot's matching per line.
std::string to_text(const Schedule &s);
// Reads and validates a schedule file; UsageError "<path>: ..." otherwise.
Schedule load(const std::string &path);
// Writes atomically (a temporary file renamed over path); Error on failure.
void save(const Schedule &s, const std::string &path);

// ----------------------------------------------------------------------
// Capacity (the emulated graph)

// circuits[u * N + v]: the (slot, uplink) positions of a period in which u
// reaches v (u != v; the diagonal counts idle positions).
std::vector<uint32_t> circuits(const Schedule &s);

// Single-hop throughput of a demand matrix (N x N, row = source, any unit,
// diagonal ignored, entries >= 0, not all 0) under the hose model: the
// demand is scaled so that the busiest node's row or column sum equals its
// d uplinks, and theta is the largest factor by which that scaled demand
// fits the pairs' single-hop rates: min over pairs with demand of
// (circuits(u,v) * duty / period) / scaled(u,v). UsageError for a matrix of
// the wrong size or with negative or non-finite entries.
double single_hop_throughput(const Schedule &s, const std::vector<double> &demand);

// The same demand routed obliviously over two hops (Valiant load
// balancing, what RotorNet and Sirius do): each pair's traffic is spread
// evenly over all N nodes as intermediates (u and v themselves meaning the
// direct circuit); theta is the largest factor by which the hose-scaled
// demand fits every circuit's rate. Round robin gives about 1/2 on any
// demand: the oblivious bound that Vermilion beats.
double vlb_throughput(const Schedule &s, const std::vector<double> &demand);

// Per pair, the largest gap in slots between consecutive slots in which u
// reaches v, cyclically over the period (period when once; 0 when never):
// a packet for v waits at most gap * slot_ns for its circuit.
std::vector<uint32_t> max_gaps(const Schedule &s);

// The timing every shell computes slots with (include/lumen/optical.h).
lumen_slot_timing slot_timing(const Schedule &s);

// For a sender at node self: waits[t * N + dst], the slots from slot t of
// the period until one in which self reaches dst on any uplink (0: t
// itself), or 0xffff (LUMEN_SLOT_NEVER) when no slot does and for dst ==
// self. What include/lumen/optical.h's lumen_slot_departure() takes, for
// the kernel's gate, lumend's page and lumen-dp. UsageError when self is
// no node or the period does not fit 16-bit waits (over 0xfff0 slots).
std::vector<uint16_t> wait_table(const Schedule &s, uint32_t self);

// ----------------------------------------------------------------------
// Generators

struct Timing {
	uint64_t slot_ns = 100'000;
	uint64_t guard_ns = 10'000;
	GuardAt guard_at = GuardAt::kEnd;
	uint64_t t0_ns = 0;
	uint64_t version = 1;
	double link_gbps = 0;
};

// What every generator starts from: Schedule::idle of that shape with the
// timing's version, slot, guard, t0 and link rate.
Schedule idle_schedule(uint32_t nodes, uint32_t uplinks, uint32_t period, const Timing &timing);

// Round robin (RotorNet, Sirius; thesis §7, Shale's SRRD): matching s maps
// i to (i + s) mod N for s = 1..N-1; uplink p runs the shifts s = p+1,
// p+1+d, ... in order, so the period is ceil((N-1)/d) and each node meets
// every other exactly once per period. With self_loops the shifts are
// s = 0..N-1 (s = 0 idle), uplink p runs p, p+d, ..., period ceil(N/d)
// (N/d when d divides N: the thesis' convention). UsageError for N < 2,
// d < 1, d > kMaxUplinks, N > kMaxNodes.
Schedule round_robin(uint32_t nodes, uint32_t uplinks, bool self_loops, const Timing &timing);

// Shale's Elementary Basis Schedule (ebs.cpp): nodes as h coordinates in
// base m (m the smallest with m^h >= N), one round robin per coordinate
// after the other: node i reaches i + s * e_p in slot p(m - 1) + s - 1,
// period ceil(h(m - 1) / d). N below m^h (Shale's Dummy EBS): M - N of the
// m^h virtual nodes are dummies from Shale's dummy set (ebs_layout), and a
// circuit Shale would leave idle because it meets a dummy closes the gap
// to the next real node on its shift's cycle, so every slot stays a
// permutation (parallel set if two uplinks of a node then meet in a slot).
// h = 1 is round robin. UsageError for N < 2, d out of range, h not in
// 1..20, m^h over 2^20, or a Dummy EBS whose circuits leave a node cut off
// (m^h far above N).
Schedule ebs(uint32_t nodes, uint32_t uplinks, uint32_t h, const Timing &timing);

// Where ebs() puts N nodes: m, M = m^h, and node k's virtual node
// (increasing; the ones left out are the dummies). UsageError as ebs().
struct EbsLayout {
	uint32_t m = 0;
	uint64_t virt = 0;
	std::vector<uint64_t> virt_of;
};
EbsLayout ebs_layout(uint32_t nodes, uint32_t h);
// Virtual node v's layer in Shale's potential dummy set: (last coordinate
// minus the sum of the others) mod m; v is a potential dummy when < h.
uint32_t ebs_dummy_layer(uint64_t v, uint32_t m, uint32_t h);
// The throughput Shale's routing (h spraying and h direct hops, flow
// through dummies removed) guarantees on ebs(nodes, ., h), as a fraction
// of the hose: 1 / 2h for N = m^h (Shale §2.3), else Lemma 5's
// (1 / 2h)(1 - 2h^2 / m), 0 when that is negative (Lemma 5 holds for
// sufficiently large N). lumen's direct-hop senders do not route so; for
// them single_hop_throughput() is what counts.
double ebs_shale_guarantee(uint32_t nodes, uint32_t h);

} // namespace lumen::sched
