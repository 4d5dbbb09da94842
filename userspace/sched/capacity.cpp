// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/sched/capacity.cpp - what a schedule gives each pair, computed
// exactly from its matchings (the emulated graph, thesis Def. 15 and
// Cor. 1): circuits per period, single-hop and two-hop (Valiant)
// throughput of a demand matrix under the hose model, and the longest wait
// for a circuit.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "base/error.h"
#include "sched/schedule.h"

namespace lumen::sched
{

std::vector<uint32_t> circuits(const Schedule &s)
{
	std::vector<uint32_t> c((size_t)s.nodes * s.nodes, 0);
	for (uint32_t p = 0; p < s.uplinks; p++)
		for (uint32_t t = 0; t < s.period; t++)
			for (uint32_t i = 0; i < s.nodes; i++)
				c[(size_t)i * s.nodes + s.to(p, t, i)]++;
	return c;
}

namespace
{

// The demand scaled to the hose: the busiest node's row or column sum
// (off the diagonal) becomes its d uplinks.
std::vector<double> hose_scaled(const Schedule &s, const std::vector<double> &demand)
{
	uint32_t n = s.nodes;
	if (demand.size() != (size_t)n * n)
		throw UsageError("the demand matrix has " + std::to_string(demand.size()) + " entries, not " +
				 std::to_string(n) + " x " + std::to_string(n));
	std::vector<double> row(n, 0), col(n, 0);
	for (uint32_t u = 0; u < n; u++)
		for (uint32_t v = 0; v < n; v++) {
			double x = demand[(size_t)u * n + v];
			if (!std::isfinite(x) || x < 0)
				throw UsageError("demand[" + std::to_string(u) + "][" + std::to_string(v) +
						 "] is not a finite number >= 0");
			if (u == v)
				continue;
			row[u] += x;
			col[v] += x;
		}
	double hose = std::max(*std::max_element(row.begin(), row.end()), *std::max_element(col.begin(), col.end()));
	if (!(hose > 0))
		throw UsageError("the demand matrix has no demand between distinct nodes");
	std::vector<double> m(demand.size(), 0);
	for (uint32_t u = 0; u < n; u++)
		for (uint32_t v = 0; v < n; v++)
			if (u != v)
				m[(size_t)u * n + v] = demand[(size_t)u * n + v] * s.uplinks / hose;
	return m;
}

// A pair's single-hop rate in uplinks: its share of the period's positions.
std::vector<double> rates(const Schedule &s)
{
	std::vector<uint32_t> c = circuits(s);
	std::vector<double> r(c.size());
	for (size_t i = 0; i < c.size(); i++)
		r[i] = c[i] * s.duty() / s.period;
	return r;
}

double fit(const std::vector<double> &rate, const std::vector<double> &load, uint32_t n)
{
	double theta = std::numeric_limits<double>::infinity();
	for (uint32_t u = 0; u < n; u++)
		for (uint32_t v = 0; v < n; v++) {
			size_t e = (size_t)u * n + v;
			if (u != v && load[e] > 0)
				theta = std::min(theta, rate[e] / load[e]);
		}
	return theta;
}

} // namespace

double single_hop_throughput(const Schedule &s, const std::vector<double> &demand)
{
	return fit(rates(s), hose_scaled(s, demand), s.nodes);
}

double vlb_throughput(const Schedule &s, const std::vector<double> &demand)
{
	uint32_t n = s.nodes;
	std::vector<double> m = hose_scaled(s, demand), load(m.size(), 0);
	std::vector<double> out(n, 0), in(n, 0);

	/* u -> w -> v for each of the n choices of w, 1/n each; w = u or w = v
	 * is the direct circuit. Load on (a, b): a's traffic through b as
	 * intermediate (out[a] / n, b != a), traffic to b through a (in[b] / n),
	 * and the two direct shares of m(a, b), counted once each above. */
	for (uint32_t u = 0; u < n; u++)
		for (uint32_t v = 0; v < n; v++) {
			out[u] += m[(size_t)u * n + v];
			in[v] += m[(size_t)u * n + v];
		}
	for (uint32_t a = 0; a < n; a++)
		for (uint32_t b = 0; b < n; b++)
			if (a != b)
				load[(size_t)a * n + b] = (out[a] + in[b]) / n;
	return fit(rates(s), load, n);
}

lumen_slot_timing slot_timing(const Schedule &s)
{
	lumen_slot_timing t{};
	t.t0_ns = s.t0_ns;
	t.slot_ns = s.slot_ns;
	t.guard_ns = s.guard_ns;
	t.period = s.period;
	t.guard_at_start = s.guard_at == GuardAt::kStart;
	return t;
}

std::vector<uint16_t> wait_table(const Schedule &s, uint32_t self)
{
	if (self >= s.nodes)
		throw UsageError("node " + std::to_string(self) + " is not in the schedule (0.." +
				 std::to_string(s.nodes - 1) + ")");
	if (s.period > LUMEN_SLOT_MAX_PERIOD)
		throw UsageError("a period of " + std::to_string(s.period) + " slots is over " +
				 std::to_string(LUMEN_SLOT_MAX_PERIOD) + " (16-bit waits)");
	/* Backwards over two periods: next[dst] is the latest-seen (so the
	 * earliest from here on) unrolled slot in which self reaches dst; the
	 * second period's pass makes it wrap around for the first one. */
	const uint32_t n = s.nodes, period = s.period;
	constexpr uint64_t kNone = UINT64_MAX;
	std::vector<uint64_t> next(n, kNone);
	std::vector<uint16_t> w((size_t)period * n, LUMEN_SLOT_NEVER);
	for (uint64_t u = 2 * (uint64_t)period; u-- > 0;) {
		uint32_t slot = (uint32_t)(u % period);
		for (uint32_t p = 0; p < s.uplinks; p++) {
			uint32_t dst = s.to(p, slot, self);
			if (dst != self)
				next[dst] = u;
		}
		if (u >= period)
			continue;
		for (uint32_t dst = 0; dst < n; dst++)
			if (next[dst] != kNone)
				w[(size_t)slot * n + dst] = (uint16_t)(next[dst] - u);
	}
	return w;
}

std::vector<uint32_t> max_gaps(const Schedule &s)
{
	uint32_t n = s.nodes;
	std::vector<uint32_t> first((size_t)n * n, UINT32_MAX), last((size_t)n * n, 0), gap((size_t)n * n, 0);

	for (uint32_t t = 0; t < s.period; t++)
		for (uint32_t p = 0; p < s.uplinks; p++)
			for (uint32_t i = 0; i < n; i++) {
				size_t e = (size_t)i * n + s.to(p, t, i);
				if (first[e] == UINT32_MAX) {
					first[e] = last[e] = t;
					continue;
				}
				gap[e] = std::max(gap[e], t - last[e]);
				last[e] = t;
			}
	for (size_t e = 0; e < gap.size(); e++)
		if (first[e] != UINT32_MAX) /* around the end of the period */
			gap[e] = std::max(gap[e], first[e] + s.period - last[e]);
	return gap;
}

} // namespace lumen::sched
