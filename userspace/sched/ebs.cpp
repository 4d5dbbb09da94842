// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/sched/ebs.cpp - Shale's Elementary Basis Schedule (seed 001,
// §2.3; the formal definition in its appendix), an oblivious schedule with
// a shorter period than round robin for traffic that may take several
// hops.
//
// Give each node h coordinates in [0, m), its index in base m (N = m^h).
// Phase p is a round robin among the m nodes that differ only in
// coordinate p: in its slot s (1 <= s < m) node i reaches i + s * e_p, its
// coordinate p moved by s mod m. The h phases, one after the other, are the
// period: h * (m - 1) slots, against N - 1 for round robin, so a node waits
// at most h(m - 1) slots for any neighbour, but it has only h(m - 1)
// neighbours. Shale reaches every other node in at most h direct hops (one
// per coordinate) after h spraying hops, and guarantees 1 / (2h) of the
// hose; h = 1 is round robin.
//
// Any N (Shale's Dummy EBS, seed 001 §3.7.1): take M = m^h virtual nodes,
// m the smallest with m^h >= N, and make M - N of them dummies, drawn from
// Shale's potential dummy set
//   D = { (i_0, ..., i_{h-2}, j + i_0 + ... + i_{h-2} mod m) : j in [0, h) }
// layer j = 0 first, then 1, ..., evenly spaced within the last layer
// taken. Each layer is a Latin hyperplane: every line of the layout (the m
// nodes that differ in one coordinate) holds exactly one of its nodes, so
// no line loses more than h of its m nodes. The real nodes are the other
// virtual ones in increasing order (ebs_layout()).
//
// What differs from Shale, and why: Shale leaves a circuit to or from a
// dummy unused, so a slot is a partial matching. lumen's schedule file
// needs every (uplink, slot) to be a permutation (a dst for every node), so
// a node whose partner in the slot's shift is a dummy reaches instead the
// next real node along that shift's cycle: the one whose own partner from
// behind was the dummy, and whose receiver Shale would leave idle. These
// closing circuits stay within one coordinate's line and use only
// positions Shale leaves idle, so the schedule holds every circuit of
// Shale's, in the same slot on the same uplink. Shale's routing (which
// removes every flow path through a dummy and never uses the closing
// circuits) therefore keeps Lemma 5's guarantee on it: throughput
// (1 / 2h)(1 - 2h^2 / m) of the hose for sufficiently large N
// (ebs_shale_guarantee()); lumen's own senders go direct only and get what
// single_hop_throughput() computes. Two uplinks of a node may then meet one
// destination in a slot; the schedule says so (`parallel`). With far more
// virtual nodes than real ones (10 nodes, h = 3: 27) a node can be alone on
// all its lines; such a schedule is refused.
//
// With d uplinks, uplink u runs the slots u, u + d, ... of the period, as
// round robin does: the period is ceil(h(m - 1) / d).
#include <algorithm>
#include <string>
#include <vector>

#include "base/error.h"
#include "sched/schedule.h"

namespace lumen::sched
{

namespace
{

// The smallest m >= 2 with m^h >= nodes, and M = m^h; false when M would
// exceed kMaxVirtual (h far beyond log2 N).
constexpr uint64_t kMaxVirtual = 1u << 20;

bool radix(uint32_t nodes, uint32_t h, uint32_t *m, uint64_t *virt)
{
	for (uint64_t b = 2;; b++) {
		uint64_t p = 1;
		for (uint32_t i = 0; i < h && p <= kMaxVirtual; i++)
			p *= b;
		if (p > kMaxVirtual)
			return false;
		if (p >= nodes) {
			*m = (uint32_t)b;
			*virt = p;
			return true;
		}
	}
}

// Every node reachable from node 0 over the period's circuits, or a
// UsageError naming one that is not. Every slot is a permutation, so every
// circuit lies on a cycle and reachable from 0 means strongly connected.
// Dummy EBS over many more virtual nodes than real ones (m^h far above N)
// can cut a node off: all its lines empty but for itself.
void require_connected(const Schedule &s, uint64_t virt)
{
	std::vector<char> seen(s.nodes, 0);
	std::vector<uint32_t> frontier{0};
	seen[0] = 1;
	while (!frontier.empty()) {
		uint32_t x = frontier.back();
		frontier.pop_back();
		for (uint32_t u = 0; u < s.uplinks; u++)
			for (uint32_t t = 0; t < s.period; t++) {
				uint32_t y = s.to(u, t, x);
				if (!seen[y]) {
					seen[y] = 1;
					frontier.push_back(y);
				}
			}
	}
	for (uint32_t i = 0; i < s.nodes; i++)
		if (!seen[i])
			throw UsageError("ebs: " + std::to_string(s.nodes) + " nodes spread over " +
					 std::to_string(virt) + " virtual ones leave node " + std::to_string(i) +
					 " unreachable from node 0: take a smaller h");
}

// coordinate p of virtual node v in base m
uint64_t coordinate(uint64_t v, uint32_t m, uint32_t p)
{
	for (uint32_t i = 0; i < p; i++)
		v /= m;
	return v % m;
}

void check_shape(uint32_t nodes, uint32_t h)
{
	if (nodes < 2 || nodes > kMaxNodes)
		throw UsageError("ebs: nodes " + std::to_string(nodes) + " is not in 2.." + std::to_string(kMaxNodes));
	if (h < 1 || h > 20)
		throw UsageError("ebs: h " + std::to_string(h) + " is not in 1..20");
}

} // namespace

uint32_t ebs_dummy_layer(uint64_t v, uint32_t m, uint32_t h)
{
	uint64_t rest = 0; // i_0 + ... + i_{h-2} mod m
	for (uint32_t p = 0; p + 1 < h; p++)
		rest = (rest + coordinate(v, m, p)) % m;
	return (uint32_t)((coordinate(v, m, h - 1) + m - rest) % m);
}

EbsLayout ebs_layout(uint32_t nodes, uint32_t h)
{
	check_shape(nodes, h);
	EbsLayout l;
	if (!radix(nodes, h, &l.m, &l.virt))
		throw UsageError("ebs: h " + std::to_string(h) + " lays " + std::to_string(nodes) +
				 " nodes out over more than " + std::to_string(kMaxVirtual) +
				 " virtual ones: take a smaller h");
	// Shale's potential dummies by layer (layers >= m do not exist: with
	// h >= m every virtual node is in some layer < h)
	std::vector<std::vector<uint64_t>> layers(std::min(h, l.m));
	for (uint64_t v = 0; v < l.virt; v++) {
		uint32_t j = ebs_dummy_layer(v, l.m, h);
		if (j < layers.size())
			layers[j].push_back(v);
	}
	std::vector<char> dummy(l.virt, 0);
	uint64_t need = l.virt - nodes;
	for (const std::vector<uint64_t> &layer : layers) {
		uint64_t take = std::min<uint64_t>(need, layer.size());
		for (uint64_t q = 0; q < take; q++) // evenly spaced over the layer
			dummy[layer[q * layer.size() / take]] = 1;
		need -= take;
	}
	// Shale shows |D| = h m^(h-1) >= m^h - (m-1)^h > M - N (§3.7.1)
	if (need)
		throw Error("ebs: Shale's dummy set is too small for " + std::to_string(nodes) +
			    " nodes (internal error)");
	for (uint64_t v = 0; v < l.virt; v++)
		if (!dummy[v])
			l.virt_of.push_back(v);
	return l;
}

double ebs_shale_guarantee(uint32_t nodes, uint32_t h)
{
	EbsLayout l = ebs_layout(nodes, h);
	if (l.virt == nodes)
		return 1.0 / (2.0 * h); // plain EBS (Shale §2.3)
	return std::max(0.0, 1.0 / (2.0 * h) * (1.0 - 2.0 * h * h / l.m));
}

Schedule ebs(uint32_t nodes, uint32_t uplinks, uint32_t h, const Timing &timing)
{
	check_shape(nodes, h);
	if (uplinks < 1 || uplinks > kMaxUplinks)
		throw UsageError("ebs: uplinks " + std::to_string(uplinks) + " is not in 1.." +
				 std::to_string(kMaxUplinks));
	EbsLayout layout = ebs_layout(nodes, h);
	const uint32_t m = layout.m;
	const uint64_t virt = layout.virt;
	uint32_t slots = h * (m - 1); // matchings per period, before the uplinks share them
	uint32_t period = (slots + uplinks - 1) / uplinks;
	if ((uint64_t)uplinks * period * nodes > kMaxEntries)
		throw UsageError("ebs: uplinks x period x nodes is over " + std::to_string(kMaxEntries));

	// real_of: virtual -> node, or -1 for a dummy
	const std::vector<uint64_t> &virt_of = layout.virt_of;
	std::vector<int64_t> real_of(virt, -1);
	for (uint32_t k = 0; k < nodes; k++)
		real_of[virt_of[k]] = k;
	std::vector<uint64_t> weight(h); // m^p
	for (uint32_t p = 0; p < h; p++)
		weight[p] = p ? weight[p - 1] * m : 1;
	// virtual v moved by s along coordinate p
	auto shift = [&](uint64_t v, uint32_t p, uint32_t s) {
		uint64_t c = v / weight[p] % m;
		return v - c * weight[p] + (c + s) % m * weight[p];
	};

	Schedule out = idle_schedule(nodes, uplinks, period, timing);
	out.generator = "ebs h=" + std::to_string(h) + " m=" + std::to_string(m);
	if (virt > nodes)
		out.generator += " dummy M=" + std::to_string(virt) + " (Shale's dummy set, idle circuits closed)";
	for (uint32_t u = 0; u < uplinks; u++)
		for (uint32_t t = 0; t < period; t++) {
			uint32_t q = u + t * uplinks; // the q-th matching of the period
			if (q >= slots)
				continue; // padding: the last slot has fewer matchings than uplinks
			uint32_t p = q / (m - 1), s = q % (m - 1) + 1;
			for (uint32_t i = 0; i < nodes; i++) {
				uint64_t w = shift(virt_of[i], p, s);
				while (real_of[w] < 0) // a missing node: the next one on the cycle
					w = shift(w, p, s); // the closing circuit (top of the file)
				out.to(u, t, i) = (uint32_t)real_of[w];
			}
		}
	for (uint32_t t = 0; t < period && !out.parallel; t++)
		for (uint32_t i = 0; i < nodes && !out.parallel; i++)
			for (uint32_t a = 0; a < uplinks && !out.parallel; a++)
				for (uint32_t b = a + 1; b < uplinks; b++)
					if (out.to(a, t, i) == out.to(b, t, i) && out.to(a, t, i) != i) {
						out.parallel = true;
						break;
					}
	require_connected(out, virt);
	validate(out, "ebs");
	return out;
}

} // namespace lumen::sched
