// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/sched/vermilion.cpp - Vermilion's traffic-aware periodic
// schedule (vermilion.h): matrix rounding, the emulated multigraph, and its
// cutting into perfect matchings laid out over the period's slots.
//
// Why it works (paper Theorem 3): after normalising, every row and column
// of the demand sums to at most 1, so the scaled matrix A = (k - l) * n * M
// has sums <= (k - l) * n and the rounded R keeps them (they are integers).
// R_uv + l >= A_uv for every pair (a rounded-down entry lost less than 1,
// and l >= 1 covers it), and each node still has l * n of its k * n edges
// left for the l-per-pair oblivious part. A circuit is worth d / (k * n) of
// an uplink (period k * n / d), so a pair gets at least A_uv * d / (k * n)
// = ((k - l) / k) * d * M_uv: the hose-scaled demand times (k - l) / k,
// and the guard time takes its fraction (1 - duty) off every circuit.
// That argument needs steps 1-6: with 2l > k the complete graph is built
// instead and only its k circuits per pair (1 / n of the uplinks) are
// guaranteed (vermilion.h).
//
// Cutting the multigraph: consistent rounding does that too. If H is
// D-regular (every row and column sums to D), rounding H * D1 / D gives a
// D1-regular part H1 with each pair's copies split as floor or ceil of its
// share, and H - H1 is (D - D1)-regular. Halving recursively until the
// parts are single matchings (D = 1), with each half a contiguous range of
// slots, spreads every pair evenly over the period: each range the
// recursion made, of s slots, holds copies * s / period of the pair's
// circuits give or take a small constant (each level adds less than 1 to
// its share of the parent's error), so its longest wait stays within a
// small factor of period / copies (at most 3.5 in a sweep of n <= 64).
// Splitting at slot boundaries first (parts of whole slots, d matchings
// each) gives every pair floor or ceil of copies / period in each slot: a
// node's d uplinks reach one destination twice only for a pair with more
// copies than slots, which no schedule could avoid.
//
// Sizes: a split costs a max flow over the part's support, and the parts of
// one level of the recursion together hold at most n * k * n copies, so the
// whole cut is about log2(k * n) max flows over the multigraph.
#include "sched/vermilion.h"

#include "base/error.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>

namespace lumen::sched
{

namespace
{

constexpr double kTolerance = 1e-9; // relative: scaled sums that should be integers are
constexpr double kMaxSum = 9007199254740992.0; // 2^53: larger sums lose their integers
constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

// x, or the integer it lies within the tolerance of
double snap(double x)
{
	double r = std::nearbyint(x);
	return std::fabs(x - r) <= kTolerance * std::max(1.0, std::fabs(x)) ? r : x;
}

// Dinic's max flow. Every edge is stored next to its reverse (id ^ 1), whose
// residual capacity is the flow on the edge; the adjacency is built once,
// as flat arrays, when the flow starts.
class Dinic
{
      public:
	explicit Dinic(uint32_t nodes) : nodes_(nodes)
	{
	}
	uint32_t add(uint32_t from, uint32_t to, int64_t cap)
	{
		auto id = static_cast<uint32_t>(edges_.size());
		edges_.push_back({from, to, cap});
		edges_.push_back({to, from, 0});
		return id;
	}
	int64_t flow(uint32_t id) const
	{
		return edges_[id ^ 1].cap;
	}
	int64_t max_flow(uint32_t s, uint32_t t)
	{
		index();
		int64_t total = 0;
		while (levels(s, t)) {
			std::copy(start_.begin(), start_.end() - 1, next_.begin());
			while (int64_t f = push(s, t, std::numeric_limits<int64_t>::max()))
				total += f;
		}
		return total;
	}

      private:
	struct Edge {
		uint32_t from, to;
		int64_t cap;
	};
	void index()
	{
		start_.assign(nodes_ + 1, 0);
		for (const Edge &e : edges_)
			start_[e.from + 1]++;
		for (uint32_t x = 0; x < nodes_; x++)
			start_[x + 1] += start_[x];
		order_.resize(edges_.size());
		std::vector<uint32_t> fill(start_.begin(), start_.end() - 1);
		for (uint32_t id = 0; id < edges_.size(); id++)
			order_[fill[edges_[id].from]++] = id;
		level_.resize(nodes_);
		next_.resize(nodes_);
	}
	bool levels(uint32_t s, uint32_t t)
	{
		std::fill(level_.begin(), level_.end(), kNone);
		std::vector<uint32_t> queue{s};
		level_[s] = 0;
		for (size_t i = 0; i < queue.size(); i++) {
			uint32_t u = queue[i];
			for (uint32_t j = start_[u]; j < start_[u + 1]; j++) {
				const Edge &e = edges_[order_[j]];
				if (e.cap > 0 && level_[e.to] == kNone) {
					level_[e.to] = level_[u] + 1;
					queue.push_back(e.to);
				}
			}
		}
		return level_[t] != kNone;
	}
	int64_t push(uint32_t u, uint32_t t, int64_t limit)
	{
		if (u == t)
			return limit;
		for (uint32_t &j = next_[u]; j < start_[u + 1]; j++) {
			Edge &e = edges_[order_[j]];
			if (e.cap <= 0 || level_[e.to] != level_[u] + 1)
				continue;
			if (int64_t f = push(e.to, t, std::min(limit, e.cap))) {
				e.cap -= f;
				edges_[order_[j] ^ 1].cap += f;
				return f;
			}
		}
		return 0;
	}

	uint32_t nodes_;
	std::vector<Edge> edges_;
	std::vector<uint32_t> start_, order_, level_, next_;
};

// One consistent-rounding problem: cell i lies in [lo, lo + up], row u's
// sum in [row_lo[u], row_hi[u]], columns alike. Cells not listed are 0.
struct Cell {
	uint32_t u, v;
	uint64_t lo;
	bool up;
};
struct Bounds {
	uint32_t n = 0;
	std::vector<Cell> cells;
	std::vector<uint64_t> row_lo, row_hi, col_lo, col_hi;
};

// A feasible integral flow with lower bounds, one value per cell: source ->
// row -> column -> sink plus sink -> source, each lower bound moved into
// the node balances and met from a super source and sink (the textbook
// reduction). Only cells that may round up become edges; the flow is
// integral, so each carries 0 or 1 on top of its floor.
std::vector<uint64_t> solve(const Bounds &b)
{
	const uint32_t n = b.n, src = 0, sink = 1, ss = 2 + 2 * n, tt = 3 + 2 * n;
	auto row = [](uint32_t u) { return 2 + u; };
	auto col = [n](uint32_t v) { return 2 + n + v; };
	Dinic net(4 + 2 * n);
	std::vector<int64_t> balance(4 + 2 * n, 0);
	auto lower = [&balance](uint32_t from, uint32_t to, uint64_t lo) {
		balance[from] -= static_cast<int64_t>(lo);
		balance[to] += static_cast<int64_t>(lo);
	};
	for (uint32_t u = 0; u < n; u++) {
		lower(src, row(u), b.row_lo[u]);
		if (b.row_hi[u] > b.row_lo[u])
			net.add(src, row(u), static_cast<int64_t>(b.row_hi[u] - b.row_lo[u]));
		lower(col(u), sink, b.col_lo[u]);
		if (b.col_hi[u] > b.col_lo[u])
			net.add(col(u), sink, static_cast<int64_t>(b.col_hi[u] - b.col_lo[u]));
	}
	std::vector<uint32_t> ids(b.cells.size(), kNone);
	for (size_t i = 0; i < b.cells.size(); i++) {
		const Cell &c = b.cells[i];
		lower(row(c.u), col(c.v), c.lo);
		if (c.up)
			ids[i] = net.add(row(c.u), col(c.v), 1);
	}
	net.add(sink, src, std::numeric_limits<int64_t>::max() / 4);
	int64_t need = 0;
	for (uint32_t x = 0; x < balance.size(); x++) {
		if (balance[x] > 0) {
			net.add(ss, x, balance[x]);
			need += balance[x];
		} else if (balance[x] < 0) {
			net.add(x, tt, -balance[x]);
		}
	}
	if (net.max_flow(ss, tt) != need)
		throw Error("matrix rounding: no consistent rounding found (numerical trouble?)");
	std::vector<uint64_t> out(b.cells.size());
	for (size_t i = 0; i < out.size(); i++)
		out[i] = b.cells[i].lo + (ids[i] != kNone ? static_cast<uint64_t>(net.flow(ids[i])) : 0);
	return out;
}

// a multigraph as its support: `copies` edges u -> v (u = v: idle)
struct Link {
	uint32_t u, v, copies;
};
using Multigraph = std::vector<Link>;

// Cuts the `count`-regular g into its count perfect matchings, written to
// out from matching `first` on (matching i: out[i * n + u] = v), by
// consistent halving (see the top of the file). Ranges of whole slots (d
// matchings each) are halved at a slot boundary.
void cut(Multigraph g, uint32_t n, uint32_t d, uint32_t first, uint32_t count, std::vector<uint32_t> &out)
{
	if (count == 1) {
		for (const Link &e : g) // 1-regular: one copy per row
			out[(size_t)first * n + e.u] = e.v;
		return;
	}
	const uint32_t slots = count / d, part = slots > 1 ? slots / 2 * d : count / 2;
	Bounds b;
	b.n = n;
	b.row_lo.assign(n, part);
	b.row_hi = b.col_lo = b.col_hi = b.row_lo;
	b.cells.reserve(g.size());
	for (const Link &e : g) {
		uint64_t share = (uint64_t)e.copies * part;
		b.cells.push_back({e.u, e.v, share / count, share % count != 0});
	}
	std::vector<uint64_t> x = solve(b);
	b = Bounds();
	Multigraph head, tail;
	for (size_t i = 0; i < g.size(); i++) {
		auto h = static_cast<uint32_t>(x[i]);
		if (h)
			head.push_back({g[i].u, g[i].v, h});
		if (g[i].copies > h)
			tail.push_back({g[i].u, g[i].v, g[i].copies - h});
	}
	g = Multigraph();
	cut(std::move(head), n, d, first, part, out);
	cut(std::move(tail), n, d, first + part, count - part, out);
}

void check_params(uint32_t n, const VermilionParams &p)
{
	auto fail = [](const std::string &what) { throw UsageError("vermilion: " + what); };
	if (n < 2 || n > kMaxNodes)
		fail("nodes must be in 2.." + std::to_string(kMaxNodes) + " (got " + std::to_string(n) + ")");
	if (p.k < 1)
		fail("k must be >= 1");
	if (p.l < 1 || p.l > p.k)
		fail("l must be in 1..k (got l=" + std::to_string(p.l) + ", k=" + std::to_string(p.k) + ")");
	if ((uint64_t)p.k * n * n > kMaxEntries)
		fail("k=" + std::to_string(p.k) +
		     " is too large: k * nodes^2 must be <= " + std::to_string(kMaxEntries));
	if (p.uplinks < 1 || p.uplinks > kMaxUplinks)
		fail("uplinks must be in 1.." + std::to_string(kMaxUplinks) + " (got " + std::to_string(p.uplinks) +
		     ")");
	if ((p.k * n) % p.uplinks)
		fail("uplinks (" + std::to_string(p.uplinks) + ") must divide k * nodes = " + std::to_string(p.k * n));
	if (p.timing.slot_ns == 0 || p.timing.guard_ns >= p.timing.slot_ns)
		fail("timing: slot_ns must be > 0 and guard_ns < slot_ns");
}

// the off-diagonal demand divided by its busiest row or column sum
std::vector<double> normalised(const std::vector<double> &demand, uint32_t n)
{
	if (demand.size() != (size_t)n * n)
		throw UsageError("vermilion: demand must have nodes * nodes = " + std::to_string((size_t)n * n) +
				 " entries (got " + std::to_string(demand.size()) + ")");
	std::vector<double> rows(n, 0), cols(n, 0);
	for (uint32_t u = 0; u < n; u++) {
		for (uint32_t v = 0; v < n; v++) {
			double x = demand[(size_t)u * n + v];
			if (!std::isfinite(x) || x < 0)
				throw UsageError("vermilion: demand[" + std::to_string(u) + "][" + std::to_string(v) +
						 "] must be finite and >= 0");
			if (u != v) {
				rows[u] += x;
				cols[v] += x;
			}
		}
	}
	double top = std::max(*std::max_element(rows.begin(), rows.end()), *std::max_element(cols.begin(), cols.end()));
	if (top == 0)
		throw UsageError("vermilion: demand has no traffic between distinct nodes");
	if (!std::isfinite(top))
		throw UsageError("vermilion: demand's row or column sums overflow");
	std::vector<double> m(demand.size(), 0);
	for (uint32_t u = 0; u < n; u++)
		for (uint32_t v = 0; v < n; v++)
			if (u != v)
				m[(size_t)u * n + v] = demand[(size_t)u * n + v] / top;
	return m;
}

// Steps 1-5: the k*n-regular multigraph (diagonal = idle). The shuffle is
// written out (std::shuffle's algorithm differs between standard
// libraries; mt19937_64's output does not), so a seed means the same
// schedule everywhere.
Multigraph emulated_topology(const std::vector<double> &demand, uint32_t n, const VermilionParams &p)
{
	std::vector<double> a = normalised(demand, n);
	for (double &x : a)
		x *= double(p.k - p.l) * n;
	std::vector<uint64_t> r = round_consistently(a, n);
	const uint32_t deg = p.k * n;
	std::vector<uint32_t> e(r.size(), 0), out_left(n, deg), in_left(n, deg);
	for (uint32_t u = 0; u < n; u++) {
		for (uint32_t v = 0; v < n; v++) {
			uint64_t x = u == v ? 0 : r[(size_t)u * n + v] + p.l;
			// rounded sums are <= (k - l) * n, plus l * (n - 1) < k * n
			if (x > out_left[u] || x > in_left[v])
				throw Error("vermilion: rounded demand exceeds the degree (internal error)");
			e[(size_t)u * n + v] = static_cast<uint32_t>(x);
			out_left[u] -= static_cast<uint32_t>(x);
			in_left[v] -= static_cast<uint32_t>(x);
		}
	}
	// configuration model: shuffle the in-stubs, pair them with the out-stubs
	std::vector<uint32_t> outs, ins;
	for (uint32_t u = 0; u < n; u++) {
		outs.insert(outs.end(), out_left[u], u);
		ins.insert(ins.end(), in_left[u], u);
	}
	std::mt19937_64 rng(p.seed);
	for (size_t i = ins.size(); i > 1; i--)
		std::swap(ins[i - 1], ins[rng() % i]);
	for (size_t i = 0; i < outs.size(); i++)
		e[(size_t)outs[i] * n + ins[i]]++;
	Multigraph g;
	for (uint32_t u = 0; u < n; u++)
		for (uint32_t v = 0; v < n; v++)
			if (e[(size_t)u * n + v])
				g.push_back({u, v, e[(size_t)u * n + v]});
	return g;
}

// With gamma = k / l < 2: k rounds of the n shifts i -> i + s. Matching i
// goes to slot i / d, so a slot holds consecutive shifts (distinct
// destinations whenever d <= n) and shift s recurs every n / d slots.
std::vector<uint32_t> complete_graph(uint32_t n, uint32_t k)
{
	std::vector<uint32_t> out((size_t)k * n * n);
	for (uint32_t i = 0; i < k * n; i++)
		for (uint32_t u = 0; u < n; u++)
			out[(size_t)i * n + u] = (u + i) % n;
	return out;
}

// true when some node's uplinks reach one destination twice in one slot
bool repeats(const Schedule &s)
{
	std::vector<uint64_t> seen(s.nodes, ~0ull);
	uint64_t stamp = 0;
	for (uint32_t t = 0; t < s.period; t++) {
		for (uint32_t u = 0; u < s.nodes; u++, stamp++) {
			for (uint32_t p = 0; p < s.uplinks; p++) {
				uint32_t v = s.to(p, t, u);
				if (v == u)
					continue;
				if (seen[v] == stamp)
					return true;
				seen[v] = stamp;
			}
		}
	}
	return false;
}

} // namespace

std::vector<uint64_t> round_consistently(const std::vector<double> &a, uint32_t n)
{
	if (a.size() != (size_t)n * n)
		throw UsageError("round_consistently: the matrix must have n * n = " + std::to_string((size_t)n * n) +
				 " entries (got " + std::to_string(a.size()) + ")");
	Bounds b;
	b.n = n;
	std::vector<double> rows(n, 0), cols(n, 0);
	double total = 0;
	for (size_t i = 0; i < a.size(); i++) {
		if (!std::isfinite(a[i]) || a[i] < 0)
			throw UsageError("round_consistently: entry [" + std::to_string(i / n) + "][" +
					 std::to_string(i % n) + "] must be finite and >= 0");
		double x = snap(a[i]);
		if (x == 0)
			continue;
		// before the cast below: a double past 2^64 has no uint64_t value
		if (x >= kMaxSum)
			throw UsageError("round_consistently: the entries must sum to less than 2^53");
		b.cells.push_back({static_cast<uint32_t>(i / n), static_cast<uint32_t>(i % n),
				   static_cast<uint64_t>(std::floor(x)), std::floor(x) != x});
		rows[i / n] += x;
		cols[i % n] += x;
		total += x;
	}
	if (total >= kMaxSum)
		throw UsageError("round_consistently: the entries must sum to less than 2^53");
	for (double x : rows) {
		b.row_lo.push_back(static_cast<uint64_t>(std::floor(snap(x))));
		b.row_hi.push_back(static_cast<uint64_t>(std::ceil(snap(x))));
	}
	for (double x : cols) {
		b.col_lo.push_back(static_cast<uint64_t>(std::floor(snap(x))));
		b.col_hi.push_back(static_cast<uint64_t>(std::ceil(snap(x))));
	}
	std::vector<uint64_t> cell = solve(b), out(a.size(), 0);
	for (size_t i = 0; i < cell.size(); i++)
		out[(size_t)b.cells[i].u * n + b.cells[i].v] = cell[i];
	return out;
}

VermilionGuarantee vermilion_guarantee(uint32_t nodes, const VermilionParams &params)
{
	check_params(nodes, params);
	if (2 * params.l > params.k)
		return {1.0 / nodes, "1/n"};
	return {double(params.k - params.l) / params.k, "(k-l)/k"};
}

Schedule vermilion(const std::vector<double> &demand, uint32_t nodes, const VermilionParams &params)
{
	check_params(nodes, params);
	const uint32_t n = nodes, d = params.uplinks, count = params.k * n, period = count / d;
	std::vector<uint32_t> m((size_t)count * n); // matching i is uplink i % d's in slot i / d
	if (2 * params.l > params.k) {
		normalised(demand, n); // not used, but it must be a valid demand
		m = complete_graph(n, params.k);
	} else {
		cut(emulated_topology(demand, n, params), n, d, 0, count, m);
	}

	Schedule s = idle_schedule(n, d, period, params.timing);
	s.generator = "vermilion k=" + std::to_string(params.k) + " l=" + std::to_string(params.l) +
		      " seed=" + std::to_string(params.seed);
	for (uint32_t i = 0; i < count; i++)
		for (uint32_t u = 0; u < n; u++)
			s.to(i % d, i / d, u) = m[(size_t)i * n + u];
	s.parallel = d > 1 && repeats(s);
	return s;
}

} // namespace lumen::sched
