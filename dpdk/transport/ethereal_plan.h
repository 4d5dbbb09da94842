// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// dpdk/transport/ethereal_plan.h - Ethereal's selectPath: which flows of a
// collective's step to split, into what byte ranges, and which uplink
// (leaf -> spine link, so also which spine and which downlink into the
// destination leaf) each piece takes.
//
// The problem. In a leaf-spine fabric with s spines, a host sends a batch of
// n equal flows of f bytes to the hosts of one other leaf. Packet spraying
// puts f*n/s bytes on every uplink; ECMP hashes whole flows and, with n on
// the order of s, leaves some uplinks with two or three flows and others
// idle. Ethereal (Addanki's dissertation, ch. 3, Theorem 4) gets spraying's
// balance with single-path flows by splitting only what does not divide:
//
//   floor(n/s) flows per uplink, whole;
//   the r = n mod s others each split into s/g equal subflows, g = gcd(r, s),
//   and r/g of those on every uplink.
//
// Every uplink then carries f*floor(n/s) + (f*g/s)*(r/g) = f*n/s bytes, and
// the split adds r*(s-g)/g flows. r = 0 splits nothing (gcd(0, s) = s):
// all-to-all on a non-oversubscribed fabric needs no split; a 4-channel ring
// on 16 uplinks splits every flow 4 ways (16 subflows per NIC). Among splits
// into *equal* parts this is the fewest: r*gamma/s subflows per uplink must
// be whole, so gamma = s/g is the least split factor.
//
// Fewer with unequal parts (SplitRule::kWrap). If the parts of a flow may
// differ in size, lay the r remainder flows end to end (r*f bytes) and cut
// the stream into s consecutive shares of r*f/s bytes, one per uplink:
// McNaughton's wrap-around rule for scheduling with preemption. A flow is cut
// only where a share ends inside it, so the r flows become r + s - g pieces:
// s - g extra flows instead of r*(s-g)/g (8 uplinks, 3 flows: 7 instead of
// 21; 16 uplinks, 6 flows: 14 instead of 42; the same 12 for the 4-channel
// ring). No plan with equal uplink loads has fewer: in the graph joining each
// flow to the uplinks it uses, a connected part with a flows and b uplinks
// holds a*f = b*r*f/s bytes, so a/b = r/s and at most g parts exist; a
// connected graph on a + b nodes has a + b - 1 edges, hence at least
// r + s - g pieces. The seed's rule stays the default (kEqual): equal
// subflows are what it evaluates and what NCCL's QP splitting produces.
//
// Bytes that do not divide. Parts are whole bytes: a flow of f bytes split k
// ways gives f mod k parts one byte longer. Pieces are handed out in rounds
// of s, each round's largest to the least-loaded uplink (ties: the lowest
// index); every piece of a round is within one byte of the others, so the
// uplinks' total loads never differ by more than one byte, and a demand's
// per-uplink load is f*n/s within r/g bytes (kEqual) or one byte (kWrap).
// The parts of one flow always take distinct uplinks. A flow shorter than
// its split factor gets empty parts, which are dropped.
//
// Destinations in this host's own leaf use no uplink (kLocalUplink). Each
// demand is planned on its own (two demands to one leaf are two groups, each
// balanced), in the order given. The plan is refused whole, with a message,
// when its subflows would exceed the NIC's cap (the seed's open issue: state
// per flow at the NIC) or its inputs are out of range.
//
// Pure code: no DPDK, no allocation but the plan's vectors, deterministic.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lumen::dp
{

enum class SplitRule : uint8_t {
	kEqual, // Theorem 4: each remainder flow into s/g equal subflows
	kWrap, // the fewest subflows: remainder flows cut at the uplinks' shares
};

const char *split_rule_name(SplitRule r);
bool split_rule_from_name(const std::string &name, SplitRule *out);

// n flows of `bytes` each from this host to hosts of leaf `leaf`.
struct PlanDemand {
	uint32_t leaf = 0;
	uint32_t flows = 0;
	uint64_t bytes = 0;
};

struct PlanParams {
	uint32_t uplinks = 0; // s: spines, one uplink each
	uint32_t local_leaf = 0; // this host's leaf
	SplitRule rule = SplitRule::kEqual;
	uint32_t max_subflows = 16384; // the NIC's connection state (lumen-dp's max_conns)
};

constexpr uint32_t kPlanMaxUplinks = 1024;
constexpr uint32_t kPlanMaxFlows = 1u << 20; // per demand
constexpr uint64_t kPlanMaxBytes = 1ull << 40; // per flow
constexpr size_t kPlanMaxDemands = 65536;
constexpr uint64_t kPlanMaxTotalBytes = 1ull << 62; // the batch, so no load overflows
constexpr int32_t kLocalUplink = -1; // a destination in this host's leaf

struct PlanSubflow {
	uint32_t demand = 0; // index into the demands given
	uint32_t flow = 0; // 0..flows-1 within its demand
	uint32_t part = 0; // 0.. within its flow, in byte order
	uint64_t offset = 0; // first byte within its flow
	uint64_t bytes = 0; // > 0
	int32_t uplink = kLocalUplink; // 0..s-1, or kLocalUplink
};

struct Plan {
	std::vector<PlanSubflow> subflows; // by demand, flow, offset
	std::vector<uint64_t> uplink_bytes; // s entries
	uint64_t local_bytes = 0; // to this host's own leaf
	uint64_t flows = 0; // flows of the demands
	uint64_t extra() const
	{
		return subflows.size() > flows ? subflows.size() - flows : 0;
	}
};

// The plan for one batch, or "" and *out untouched on an error.
std::string ethereal_plan(const PlanParams &p, const std::vector<PlanDemand> &demands, Plan *out);

// How many subflows n flows of f bytes to another leaf become on s uplinks
// under a rule (the closed forms above; also the cap's check).
uint64_t ethereal_subflows(uint64_t n, uint64_t f, uint32_t s, SplitRule rule);

} // namespace lumen::dp
