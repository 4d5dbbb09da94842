// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/sched_vermilion_test.cpp - Vermilion's traffic-aware schedule
// (userspace/sched/vermilion.h): consistent matrix rounding, the shape and
// validity of the schedules, and the guarantee (paper Theorem 3, thesis
// Thm 24 with l): every demand in the hose model gets a single-hop
// throughput of at least ((k - l) / k) * duty when 2l <= k, and of
// duty / n when 2l > k (the complete graph, where (k - l) / k fails).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/error.h"
#include "sched/schedule.h"
#include "sched/vermilion.h"
#include "test_rng.h"
#include "test_refusal.h"

namespace
{

using lumen::UsageError;
using lumen::test::Rng;
using namespace lumen::sched;

using lumen::test::refusal;

// ----------------------------------------------------------------------
// Demand matrices (row = source, diagonal 0)

std::vector<double> random_demand(uint32_t n, uint64_t seed)
{
	Rng rng(seed);
	std::vector<double> m((size_t)n * n, 0);
	for (uint32_t u = 0; u < n; u++)
		for (uint32_t v = 0; v < n; v++)
			if (u != v)
				m[(size_t)u * n + v] = double(rng.below(1000)) / 7.0;
	return m;
}

// pair (u, v)'s weight falls as 1 / rank^1.2 over a random ranking of pairs
std::vector<double> zipf(uint32_t n, uint64_t seed)
{
	Rng rng(seed);
	std::vector<size_t> pairs;
	for (uint32_t u = 0; u < n; u++)
		for (uint32_t v = 0; v < n; v++)
			if (u != v)
				pairs.push_back((size_t)u * n + v);
	for (size_t i = pairs.size(); i > 1; i--)
		std::swap(pairs[i - 1], pairs[rng.below(i)]);
	std::vector<double> m((size_t)n * n, 0);
	for (size_t r = 0; r < pairs.size(); r++)
		m[pairs[r]] = 1.0 / std::pow(double(r + 1), 1.2);
	return m;
}

// node 0 sends to everyone at full rate, the others whisper
std::vector<double> hot_row(uint32_t n)
{
	std::vector<double> m((size_t)n * n, 0);
	for (uint32_t u = 0; u < n; u++)
		for (uint32_t v = 0; v < n; v++)
			if (u != v)
				m[(size_t)u * n + v] = u == 0 ? 1.0 : 0.001;
	return m;
}

std::vector<double> permutation(uint32_t n, uint64_t seed)
{
	Rng rng(seed);
	std::vector<uint32_t> p(n);
	for (uint32_t i = 0; i < n; i++)
		p[i] = i;
	for (uint32_t i = n; i > 1; i--)
		std::swap(p[i - 1], p[rng.below(i)]);
	std::vector<double> m((size_t)n * n, 0);
	for (uint32_t u = 0; u < n; u++)
		if (p[u] != u) // a fixed point sends nothing
			m[(size_t)u * n + p[u]] = 5;
	if (*std::max_element(m.begin(), m.end()) == 0)
		m[1] = 5; // the identity: send something
	return m;
}

// u -> u + 1: the oblivious designs' worst case (throughput 1/2)
std::vector<double> ring(uint32_t n)
{
	std::vector<double> m((size_t)n * n, 0);
	for (uint32_t u = 0; u < n; u++)
		m[(size_t)u * n + (u + 1) % n] = 1;
	return m;
}

VermilionParams params(uint32_t k, uint32_t l, uint32_t d, uint64_t seed = 1)
{
	VermilionParams p;
	p.k = k;
	p.l = l;
	p.uplinks = d;
	p.seed = seed;
	return p;
}

// ----------------------------------------------------------------------
// Consistent rounding

// Each entry and each row and column sum of r is the floor or the ceiling
// of a's, integers stay, zeros stay zero.
void expect_consistent(const std::vector<double> &a, const std::vector<uint64_t> &r, uint32_t n)
{
	ASSERT_EQ(r.size(), a.size());
	std::vector<double> ra(n, 0), ca(n, 0);
	std::vector<uint64_t> rr(n, 0), cr(n, 0);
	for (uint32_t u = 0; u < n; u++) {
		for (uint32_t v = 0; v < n; v++) {
			size_t i = (size_t)u * n + v;
			EXPECT_GE(double(r[i]), std::floor(a[i])) << u << "," << v;
			EXPECT_LE(double(r[i]), std::ceil(a[i])) << u << "," << v;
			if (a[i] == std::floor(a[i])) {
				EXPECT_EQ(double(r[i]), a[i]) << u << "," << v;
			}
			ra[u] += a[i];
			ca[v] += a[i];
			rr[u] += r[i];
			cr[v] += r[i];
		}
	}
	for (uint32_t x = 0; x < n; x++) {
		EXPECT_GE(double(rr[x]), std::floor(ra[x] - 1e-9)) << "row " << x;
		EXPECT_LE(double(rr[x]), std::ceil(ra[x] + 1e-9)) << "row " << x;
		EXPECT_GE(double(cr[x]), std::floor(ca[x] - 1e-9)) << "col " << x;
		EXPECT_LE(double(cr[x]), std::ceil(ca[x] + 1e-9)) << "col " << x;
	}
}

TEST(RoundConsistently, HandExample)
{
	// rows sum to 1.5 and 1.5, columns to 1.2 and 1.8
	std::vector<double> a = {0.5, 1.0, 0.7, 0.8};
	std::vector<uint64_t> r = round_consistently(a, 2);
	expect_consistent(a, r, 2);
	EXPECT_EQ(r[1], 1u); // an integer stays
}

TEST(RoundConsistently, RandomMatrices)
{
	Rng rng(42);
	for (uint32_t n = 2; n <= 40; n++) {
		for (int rep = 0; rep < 3; rep++) {
			std::vector<double> a((size_t)n * n);
			for (double &x : a) {
				uint64_t kind = rng.below(4);
				x = kind == 0	? 0.0
				    : kind == 1 ? double(rng.below(20))
						: double(rng.below(1 << 20)) / 65536.0;
			}
			std::vector<uint64_t> r = round_consistently(a, n);
			SCOPED_TRACE("n=" + std::to_string(n));
			expect_consistent(a, r, n);
		}
	}
}

TEST(RoundConsistently, IntegerMatricesAndZerosStay)
{
	Rng rng(7);
	for (uint32_t n : {1u, 3u, 16u}) {
		std::vector<double> a((size_t)n * n);
		for (double &x : a)
			x = rng.chance(30) ? 0.0 : double(rng.below(100));
		std::vector<uint64_t> r = round_consistently(a, n);
		for (size_t i = 0; i < a.size(); i++)
			EXPECT_EQ(double(r[i]), a[i]);
	}
	EXPECT_TRUE(round_consistently({}, 0).empty());
}

TEST(RoundConsistently, ScaledSumsThatShouldBeIntegersAre)
{
	// ten times 0.1 adds up to 0.9999999999999999 in doubles; the row's
	// sum is 1 and its rounding must keep exactly 1 (not 0)
	const uint32_t n = 10;
	std::vector<double> a((size_t)n * n, 0.1);
	std::vector<uint64_t> r = round_consistently(a, n);
	for (uint32_t u = 0; u < n; u++) {
		uint64_t row = 0, col = 0;
		for (uint32_t v = 0; v < n; v++) {
			row += r[(size_t)u * n + v];
			col += r[(size_t)v * n + u];
		}
		EXPECT_EQ(row, 1u);
		EXPECT_EQ(col, 1u);
	}
	// a permutation scaled by (k - l) * n after a normalisation by 3
	std::vector<double> b = {0, 1.0 / 3 * 3 * 8, 0, 0, 0, 1.0 / 3 * 3 * 8, 1.0 / 3 * 3 * 8, 0, 0};
	std::vector<uint64_t> rb = round_consistently(b, 3);
	EXPECT_EQ(rb, (std::vector<uint64_t>{0, 8, 0, 0, 0, 8, 8, 0, 0}));
	// a value a hair off an integer counts as that integer
	std::vector<uint64_t> rc = round_consistently({2.0000000000001, 0, 0, 3 - 1e-13}, 2);
	EXPECT_EQ(rc, (std::vector<uint64_t>{2, 0, 0, 3}));
}

TEST(RoundConsistently, LargeMatrix)
{
	const uint32_t n = 256;
	std::vector<double> a = random_demand(n, 3);
	for (double &x : a)
		x /= 50;
	expect_consistent(a, round_consistently(a, n), n);
}

TEST(RoundConsistently, RefusesBadInput)
{
	EXPECT_NE(refusal([] { round_consistently({1, 2, 3}, 2); }), "");
	EXPECT_NE(refusal([] { round_consistently({1, 2, 3, 4}, 3); }), "");
	EXPECT_NE(refusal([] { round_consistently({1, -0.5, 3, 4}, 2); }).find("[0][1]"), std::string::npos);
	EXPECT_NE(refusal([] { round_consistently({1, 2, std::nan(""), 4}, 2); }).find("[1][0]"), std::string::npos);
	double inf = std::numeric_limits<double>::infinity();
	EXPECT_NE(refusal([inf] { round_consistently({1, 2, 3, inf}, 2); }).find("[1][1]"), std::string::npos);
	EXPECT_NE(refusal([] { round_consistently({1e300, 1e300, 0, 0}, 2); }), "");
}

// ----------------------------------------------------------------------
// Schedules

// The shape every Vermilion schedule has, whatever the demand.
void expect_vermilion_shape(const Schedule &s, uint32_t n, const VermilionParams &p)
{
	ASSERT_NO_THROW(validate(s));
	EXPECT_EQ(s.nodes, n);
	EXPECT_EQ(s.uplinks, p.uplinks);
	EXPECT_EQ(s.period, p.k * n / p.uplinks);
	EXPECT_EQ(s.slot_ns, p.timing.slot_ns);
	EXPECT_EQ(s.guard_ns, p.timing.guard_ns);
	EXPECT_EQ(s.version, p.timing.version);
	EXPECT_EQ(s.generator.rfind("vermilion k=" + std::to_string(p.k) + " l=" + std::to_string(p.l), 0), 0u)
		<< s.generator;
	std::vector<uint32_t> c = circuits(s);
	bool crowded = false; // a pair with more circuits than slots
	for (uint32_t u = 0; u < n; u++) {
		for (uint32_t v = 0; v < n; v++) {
			if (u == v)
				continue;
			uint32_t x = c[(size_t)u * n + v];
			EXPECT_GE(x, p.l) << u << "->" << v; // any-to-any connectivity
			crowded |= x > s.period;
		}
	}
	// one destination twice in a slot only when some pair cannot avoid it
	EXPECT_EQ(s.parallel, crowded);
}

TEST(Vermilion, EveryScheduleValidates)
{
	for (uint32_t n : {2u, 3u, 4u, 8u, 16u, 32u}) {
		for (uint32_t k : {1u, 2u, 3u, 6u}) {
			std::vector<uint32_t> ls = {1};
			if (k >= 2)
				ls.push_back(2);
			if (k > 2)
				ls.push_back(k);
			for (uint32_t l : ls) {
				for (uint32_t d : {1u, 2u, 4u}) {
					if ((k * n) % d)
						continue;
					for (uint64_t seed : {1u, 2u, 9u}) {
						SCOPED_TRACE("n=" + std::to_string(n) + " k=" + std::to_string(k) +
							     " l=" + std::to_string(l) + " d=" + std::to_string(d) +
							     " seed=" + std::to_string(seed));
						std::vector<double> m = random_demand(n, seed);
						VermilionParams p = params(k, l, d, seed);
						expect_vermilion_shape(vermilion(m, n, p), n, p);
					}
				}
			}
		}
	}
}

TEST(Vermilion, SingleHopThroughputBound)
{
	struct Case {
		uint32_t k, l;
	};
	const Case cases[] = {{2, 1}, {3, 1}, {4, 2}, {4, 1}, {6, 1}, {6, 2}, {6, 3}};
	const uint64_t guards[] = {0, 10'000, 50'000}; // of 100 us slots
	for (uint32_t n : {3u, 4u, 8u, 16u, 32u}) {
		for (const Case &c : cases) {
			for (uint32_t d : {1u, 2u, 4u}) {
				if ((c.k * n) % d)
					continue;
				for (int kind = 0; kind < 6; kind++) {
					uint64_t seed = 100 + kind + n;
					std::vector<double> m = kind == 0   ? random_demand(n, seed)
								: kind == 1 ? zipf(n, seed)
								: kind == 2 ? hot_row(n)
								: kind == 3 ? permutation(n, seed)
								: kind == 4 ? ring(n)
									    : zipf(n, seed + 1);
					VermilionParams p = params(c.k, c.l, d, seed);
					p.timing.guard_ns = guards[(n + kind) % 3];
					Schedule s = vermilion(m, n, p);
					double bound = double(c.k - c.l) / c.k * s.duty();
					EXPECT_GE(single_hop_throughput(s, m), bound - 1e-9)
						<< "n=" << n << " k=" << c.k << " l=" << c.l << " d=" << d << " demand "
						<< kind;
				}
			}
		}
	}
}

TEST(Vermilion, GuaranteeFollowsTheTrust)
{
	EXPECT_DOUBLE_EQ(vermilion_guarantee(4, params(3, 1, 1)).fraction, 2.0 / 3);
	EXPECT_STREQ(vermilion_guarantee(4, params(3, 1, 1)).rule, "(k-l)/k");
	EXPECT_DOUBLE_EQ(vermilion_guarantee(8, params(4, 2, 1)).fraction, 0.5); // 2l = k: still trusted
	EXPECT_DOUBLE_EQ(vermilion_guarantee(4, params(3, 2, 1)).fraction, 0.25);
	EXPECT_STREQ(vermilion_guarantee(4, params(3, 2, 1)).rule, "1/n");
	EXPECT_DOUBLE_EQ(vermilion_guarantee(16, params(5, 3, 1)).fraction, 1.0 / 16);
	EXPECT_DOUBLE_EQ(vermilion_guarantee(6, params(2, 2, 1)).fraction, 1.0 / 6);
	EXPECT_THROW(vermilion_guarantee(4, params(2, 3, 1)), UsageError);
	EXPECT_THROW(vermilion_guarantee(1, params(3, 1, 1)), UsageError);
}

// Every (n, k, l), trusted or not: the computed schedule meets the stated
// guarantee on every demand shape, and a ring (a permutation: every row
// one pair) meets it exactly when there is no trust. With k = 3, l = 2,
// n = 4 the ring gets duty / 4, under the (k - l) / k = 1/3 once claimed.
TEST(Vermilion, SingleHopGuaranteeForEveryTrust)
{
	struct Case {
		uint32_t n, k, l;
	};
	const Case cases[] = {{4, 3, 2}, {4, 3, 1},  {4, 2, 2},	 {5, 5, 3}, {6, 3, 2}, {8, 4, 3},
			      {8, 4, 2}, {16, 5, 3}, {16, 6, 2}, {3, 1, 1}, {12, 7, 4}};
	for (const Case &c : cases) {
		for (uint32_t d : {1u, 2u}) {
			if ((c.k * c.n) % d)
				continue;
			for (int kind = 0; kind < 5; kind++) {
				SCOPED_TRACE("n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) +
					     " l=" + std::to_string(c.l) + " d=" + std::to_string(d) + " demand " +
					     std::to_string(kind));
				uint64_t seed = 7 + kind + c.n;
				std::vector<double> m = kind == 0   ? random_demand(c.n, seed)
							: kind == 1 ? zipf(c.n, seed)
							: kind == 2 ? hot_row(c.n)
							: kind == 3 ? permutation(c.n, seed)
								    : ring(c.n);
				VermilionParams p = params(c.k, c.l, d, seed);
				p.timing.guard_ns = 10'000; // duty 0.9
				Schedule s = vermilion(m, c.n, p);
				VermilionGuarantee g = vermilion_guarantee(c.n, p);
				double theta = single_hop_throughput(s, m);
				EXPECT_GE(theta, g.fraction * s.duty() - 1e-9);
				if (2 * c.l > c.k && kind == 4) {
					EXPECT_NEAR(theta, s.duty() / c.n, 1e-12);
				}
			}
		}
	}
	Schedule s = vermilion(ring(4), 4, params(3, 2, 1));
	double theta = single_hop_throughput(s, ring(4));
	EXPECT_NEAR(theta, s.duty() / 4, 1e-12);
	EXPECT_LT(theta, double(3 - 2) / 3 * s.duty() - 0.05); // the old claim fails here
}

// optical.md's toy check: ring pairs get 2 * 4 rounded circuits plus the
// oblivious one, other pairs the oblivious one; each node's last of its 12
// positions comes from the configuration model (a random permutation,
// possibly idle).
TEST(Vermilion, ThesisToyRing)
{
	const uint32_t n = 4;
	for (uint64_t seed = 1; seed <= 20; seed++) {
		Schedule s = vermilion(ring(n), n, params(3, 1, 1, seed));
		ASSERT_NO_THROW(validate(s));
		ASSERT_EQ(s.period, 12u);
		std::vector<uint32_t> c = circuits(s);
		std::vector<uint32_t> extra_in(n, 0);
		for (uint32_t u = 0; u < n; u++) {
			uint32_t extra_out = 0;
			for (uint32_t v = 0; v < n; v++) {
				uint32_t base = u == v ? 0 : v == (u + 1) % n ? 9 : 1;
				uint32_t x = c[(size_t)u * n + v];
				ASSERT_GE(x, base);
				extra_out += x - base;
				extra_in[v] += x - base;
			}
			EXPECT_EQ(extra_out, 1u);
		}
		EXPECT_EQ(extra_in, std::vector<uint32_t>(n, 1));
		// ring pairs: >= 9/12 of an uplink for a demand of 1 uplink
		EXPECT_GE(single_hop_throughput(s, ring(n)), 0.75 * s.duty() - 1e-12);
	}
}

TEST(Vermilion, HeavyPairsAreSpreadOverThePeriod)
{
	// Not a theorem: the recursive halving keeps a pair's longest wait
	// within a small factor (<= 3.5 in a sweep) of period / circuits.
	for (uint32_t d : {1u, 2u}) {
		for (auto m : {ring(32), hot_row(32), zipf(32, 5)}) {
			Schedule s = vermilion(m, 32, params(3, 1, d));
			std::vector<uint32_t> c = circuits(s), gap = max_gaps(s);
			for (uint32_t u = 0; u < 32; u++) {
				for (uint32_t v = 0; v < 32; v++) {
					size_t e = (size_t)u * 32 + v;
					if (u == v || c[e] < 2)
						continue;
					double ideal = std::max(1.0, double(s.period) / c[e]);
					EXPECT_LE(gap[e], 4 * ideal) << u << "->" << v << " circuits " << c[e];
				}
			}
		}
	}
}

TEST(Vermilion, NoTrustIsRepeatedRoundRobin)
{
	// gamma = k / l < 2: k copies of the complete graph, whatever the demand
	for (uint32_t d : {1u, 2u, 3u}) {
		Schedule s = vermilion(ring(6), 6, params(3, 2, d));
		ASSERT_NO_THROW(validate(s));
		EXPECT_FALSE(s.parallel);
		std::vector<uint32_t> c = circuits(s), gap = max_gaps(s);
		for (uint32_t u = 0; u < 6; u++) {
			for (uint32_t v = 0; v < 6; v++) {
				EXPECT_EQ(c[(size_t)u * 6 + v], 3u); // the diagonal: idle
				if (u != v) {
					EXPECT_EQ(gap[(size_t)u * 6 + v], 6 / d); // evenly spaced
				}
			}
		}
		for (uint32_t t = 0; t < s.period; t++) // every matching is a shift
			for (uint32_t p = 0; p < d; p++)
				for (uint32_t u = 0; u < 6; u++)
					EXPECT_EQ((s.to(p, t, u) + 6 - u) % 6, s.to(p, t, 0));
	}
	// more uplinks than nodes: a pair's 3 circuits share 2 slots
	Schedule s = vermilion(ring(2), 2, params(3, 2, 3));
	ASSERT_NO_THROW(validate(s));
	EXPECT_TRUE(s.parallel);
}

TEST(Vermilion, ParallelOnlyWhenUnavoidable)
{
	// ring with d = 4: each ring pair has about 2/3 of 3n circuits, more
	// than the n * 3 / 4 slots
	Schedule s = vermilion(ring(16), 16, params(3, 1, 4));
	ASSERT_NO_THROW(validate(s));
	EXPECT_TRUE(s.parallel);
	// uniform demand with d = 2: every pair has 3 circuits of 24 slots
	std::vector<double> uniform(16 * 16, 1);
	Schedule u = vermilion(uniform, 16, params(3, 1, 2));
	ASSERT_NO_THROW(validate(u));
	EXPECT_FALSE(u.parallel);
}

TEST(Vermilion, SameSeedSameSchedule)
{
	std::vector<double> m = zipf(16, 3);
	Schedule a = vermilion(m, 16, params(3, 1, 2, 77));
	Schedule b = vermilion(m, 16, params(3, 1, 2, 77));
	EXPECT_EQ(a.dst, b.dst);
	EXPECT_EQ(a.generator, b.generator);
	bool differs = false;
	for (uint64_t seed = 78; seed < 88 && !differs; seed++)
		differs = vermilion(m, 16, params(3, 1, 2, seed)).dst != a.dst;
	EXPECT_TRUE(differs);
	EXPECT_NE(a.generator.find("seed=77"), std::string::npos);
}

TEST(Vermilion, TimingIsCopied)
{
	VermilionParams p = params(3, 1, 1);
	p.timing.slot_ns = 50'000;
	p.timing.guard_ns = 2'000;
	p.timing.guard_at = GuardAt::kStart;
	p.timing.t0_ns = 123;
	p.timing.version = 9;
	p.timing.link_gbps = 100;
	Schedule s = vermilion(ring(4), 4, p);
	EXPECT_EQ(s.slot_ns, 50'000u);
	EXPECT_EQ(s.guard_ns, 2'000u);
	EXPECT_EQ(s.guard_at, GuardAt::kStart);
	EXPECT_EQ(s.t0_ns, 123u);
	EXPECT_EQ(s.version, 9u);
	EXPECT_EQ(s.link_gbps, 100);
	EXPECT_EQ(s.generator, "vermilion k=3 l=1 seed=1");
}

TEST(Vermilion, RefusesBadParameters)
{
	std::vector<double> m = ring(4);
	auto with = [&m](uint32_t n, VermilionParams p) { return refusal([&] { vermilion(m, n, p); }); };
	EXPECT_NE(with(4, params(0, 1, 1)).find("k must"), std::string::npos);
	EXPECT_NE(with(4, params(3, 0, 1)).find("l must"), std::string::npos);
	EXPECT_NE(with(4, params(3, 4, 1)).find("l must"), std::string::npos);
	EXPECT_NE(with(4, params(3, 1, 0)).find("uplinks"), std::string::npos);
	EXPECT_NE(with(4, params(3, 1, 65)).find("uplinks"), std::string::npos);
	EXPECT_NE(with(4, params(3, 1, 5)).find("uplinks"), std::string::npos); // 5 does not divide 12
	EXPECT_NE(with(4, params(2'000'000, 1, 1)).find("k=2000000"), std::string::npos); // k * n^2 too large
	EXPECT_NE(refusal([] { vermilion({0}, 1, params(3, 1, 1)); }).find("nodes"), std::string::npos);
	EXPECT_NE(refusal([] { vermilion({}, kMaxNodes + 1, params(3, 1, 1)); }).find("nodes"), std::string::npos);
	VermilionParams bad_guard = params(3, 1, 1);
	bad_guard.timing.guard_ns = bad_guard.timing.slot_ns;
	EXPECT_NE(with(4, bad_guard).find("guard_ns"), std::string::npos);

	// the demand
	EXPECT_NE(refusal([] { vermilion(ring(3), 4, params(3, 1, 1)); }).find("demand"), std::string::npos);
	std::vector<double> neg = ring(4);
	neg[2] = -1;
	EXPECT_NE(refusal([&] { vermilion(neg, 4, params(3, 1, 1)); }).find("demand[0][2]"), std::string::npos);
	std::vector<double> nan = ring(4);
	nan[5] = std::nan("");
	EXPECT_NE(refusal([&] { vermilion(nan, 4, params(3, 1, 1)); }).find("demand[1][1]"), std::string::npos);
	std::vector<double> diagonal(16, 0);
	diagonal[0] = diagonal[5] = 3; // only self-traffic: nothing to schedule
	EXPECT_NE(refusal([&] { vermilion(diagonal, 4, params(3, 1, 1)); }).find("demand"), std::string::npos);
	EXPECT_NE(refusal([&] { vermilion(diagonal, 4, params(3, 2, 1)); }).find("demand"), std::string::npos);
}

TEST(Vermilion, LargeNetwork)
{
	const uint32_t n = 256;
	std::vector<double> m = random_demand(n, 11);
	VermilionParams p = params(3, 1, 1);
	Schedule s = vermilion(m, n, p);
	ASSERT_NO_THROW(validate(s));
	EXPECT_EQ(s.period, 768u);
	EXPECT_GE(single_hop_throughput(s, m), 2.0 / 3 * s.duty() - 1e-9);
	Schedule r = vermilion(ring(n), n, params(3, 1, 4));
	ASSERT_NO_THROW(validate(r));
	EXPECT_GE(single_hop_throughput(r, ring(n)), 2.0 / 3 * r.duty() - 1e-9);
}

} // namespace
