// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/sched/vermilion.h - Vermilion's traffic-aware periodic schedule
// (Addanki et al., paper Algorithm 1; thesis Algorithm 7 with the trust
// parameter l), from a demand matrix:
//
//   1. normalise the demand (hose model: the busiest row or column sum is 1)
//   2. scale it by (k - l) * n
//   3. round it consistently: every entry to its floor or ceiling, every
//      row and column sum too (Bacharach's matrix rounding, solved as a
//      feasible integral flow), zeros stay zero
//   4. give every pair u != v its rounded entry plus l more edges (the
//      oblivious part that keeps any-to-any connectivity)
//   5. fill every node to out- and in-degree k * n with random edges
//      (configuration model; self-loops are idle slots)
//   6. cut the k*n-regular bipartite multigraph into k * n perfect
//      matchings (a regular bipartite multigraph always has one: Koenig),
//      d per slot for a period of k*n/d slots: by halving it recursively
//      (each half again regular, by the same consistent rounding), which
//      also spreads each pair's circuits evenly over the period
//
// With gamma = k / l < 2 there is no trust in the demand and the schedule
// is k copies of the complete graph (round robin with self-loops; thesis
// Algorithm 7, line 2).
//
// What is guaranteed, single-hop, to every demand in the hose model (the
// thesis' Theorem 24 and its proof; the paper's Theorem 3 is l = 1):
//   gamma >= 2 (2l <= k): ((k - l) / k) * duty  (Theorem 3 / Thm 22 / Thm 24)
//   gamma <  2 (2l >  k): (1 / n) * duty
// The proof of (k - l) / k holds only for the emulated topology of steps
// 1-6; the complete graph gives a pair k of its node's k * n circuits,
// 1 / n of the uplinks, whatever the demand, so a permutation or a ring
// gets duty / n (n = 4, k = 3, l = 2: duty / 4, not (k - l) / k = 1/3).
// The thesis' 1/2 for gamma < 2 is the complete graph's throughput with
// two-hop (Valiant) routing [18, 42], which lumen's direct-hop senders do
// not do; sched::vlb_throughput measures it.
#pragma once

#include <cstdint>
#include <vector>

#include "sched/schedule.h"

namespace lumen::sched
{

struct VermilionParams {
	uint32_t k = 3; // matchings per node per period, in units of n (>= 1)
	uint32_t l = 1; // oblivious edges per pair (1 <= l <= k)
	uint32_t uplinks = 1; // d; must divide k * n
	uint64_t seed = 1; // the configuration model's random pairing of the fill edges
	Timing timing;
};

// Consistent rounding of an n x n matrix of finite entries >= 0 (row
// major): each result entry is floor or ceil of its entry (an integer entry
// stays), each row and column sum is floor or ceil of the original's.
// UsageError for a bad size or entry.
std::vector<uint64_t> round_consistently(const std::vector<double> &a, uint32_t n);

// The schedule for demand (n x n, row = source, diagonal ignored, >= 0,
// finite, not all 0). UsageError for bad parameters (k < 1, l < 1, l > k,
// uplinks not dividing k * n, n < 2 or > kMaxNodes, k * n * n over
// kMaxEntries, a slot of 0 or a guard not shorter than the slot) or a bad
// matrix. The
// result validates; `parallel` is set only when some slot must give a
// node's uplinks one destination twice.
Schedule vermilion(const std::vector<double> &demand, uint32_t nodes, const VermilionParams &params);

// The single-hop throughput vermilion(demand, nodes, params) guarantees to
// every demand in the hose model, as a fraction of the duty cycle
// (multiply by 1 - guard_ns / slot_ns), and the rule it comes from.
// UsageError for parameters vermilion() refuses.
struct VermilionGuarantee {
	double fraction; // (k - l) / k when 2l <= k, else 1 / nodes
	const char *rule; // "(k-l)/k" or "1/n"
};
VermilionGuarantee vermilion_guarantee(uint32_t nodes, const VermilionParams &params);

} // namespace lumen::sched
