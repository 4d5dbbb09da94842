// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/sched_ebs_test.cpp - Shale's Elementary Basis Schedule
// (userspace/sched/ebs.cpp): for N = m^h, a node meets exactly the nodes
// that differ from it in one coordinate, each once per period of
// ceil(h(m - 1) / d), and reaches any node in as many direct hops as their
// coordinates differ (at most h: Shale's direct half); h = 1 is round
// robin. For other N (Dummy EBS) the dummies come from Shale's dummy set,
// the schedule holds every circuit of Shale's (the rest close gaps Shale
// leaves idle), every slot is still a permutation, every circuit stays on
// one coordinate's line of the virtual layout, no semi-path loses more
// than Lemma 5's share of its intermediates to dummies, and the circuits
// connect every node to every other, or the schedule is refused.
#include <algorithm>
#include <deque>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/error.h"
#include "sched/schedule.h"
#include "test_refusal.h"

namespace
{

using namespace lumen::sched;
using lumen::test::refusal;

Timing timing()
{
	Timing t;
	t.slot_ns = 100'000;
	t.guard_ns = 10'000;
	t.t0_ns = 1'700'000'000'000'000'000ull;
	return t;
}

// coordinates of x in base m, h of them, differing from y's
uint32_t differing(uint64_t x, uint64_t y, uint32_t m, uint32_t h)
{
	uint32_t n = 0;
	for (uint32_t p = 0; p < h; p++, x /= m, y /= m)
		n += x % m != y % m;
	return n;
}

// hops[u * N + v]: the fewest direct hops from u to v over the circuits of
// a period (UINT32_MAX: unreachable)
std::vector<uint32_t> hops(const Schedule &s)
{
	uint32_t n = s.nodes;
	std::vector<uint32_t> c = circuits(s), out((size_t)n * n, UINT32_MAX);
	for (uint32_t u = 0; u < n; u++) {
		std::deque<uint32_t> q{u};
		out[(size_t)u * n + u] = 0;
		while (!q.empty()) {
			uint32_t x = q.front();
			q.pop_front();
			for (uint32_t y = 0; y < n; y++)
				if (y != x && c[(size_t)x * n + y] && out[(size_t)u * n + y] == UINT32_MAX) {
					out[(size_t)u * n + y] = out[(size_t)u * n + x] + 1;
					q.push_back(y);
				}
		}
	}
	return out;
}

TEST(SchedEbs, ExactOneCircuitPerNeighbourPerPeriod)
{
	struct Shape {
		uint32_t m, h;
	} shapes[] = {{4, 2}, {3, 3}, {2, 4}, {5, 2}, {2, 6}, {16, 1}};
	for (const Shape &sh : shapes)
		for (uint32_t d : {1u, 2u, 3u}) {
			uint32_t n = 1;
			for (uint32_t i = 0; i < sh.h; i++)
				n *= sh.m;
			SCOPED_TRACE("m=" + std::to_string(sh.m) + " h=" + std::to_string(sh.h) +
				     " d=" + std::to_string(d));
			Schedule s = ebs(n, d, sh.h, timing());
			EXPECT_NO_THROW(validate(s));
			EXPECT_FALSE(s.parallel);
			EXPECT_EQ(s.period, (sh.h * (sh.m - 1) + d - 1) / d);
			EXPECT_EQ(s.generator, "ebs h=" + std::to_string(sh.h) + " m=" + std::to_string(sh.m));
			std::vector<uint32_t> c = circuits(s), g = max_gaps(s), hp = hops(s);
			for (uint32_t u = 0; u < n; u++)
				for (uint32_t v = 0; v < n; v++) {
					if (u == v)
						continue;
					uint32_t k = differing(u, v, sh.m, sh.h);
					size_t uv = (size_t)u * n + v;
					ASSERT_EQ(c[uv], k == 1 ? 1u : 0u) << u << "->" << v;
					ASSERT_EQ(g[uv], k == 1 ? s.period : 0u) << u << "->" << v;
					ASSERT_EQ(hp[uv], k) << u << "->" << v;
				}
		}
}

TEST(SchedEbs, HOneIsRoundRobin)
{
	for (uint32_t n : {2u, 7u, 16u})
		for (uint32_t d : {1u, 3u}) {
			Schedule e = ebs(n, d, 1, timing()), r = round_robin(n, d, false, timing());
			EXPECT_EQ(e.period, r.period);
			EXPECT_EQ(e.dst, r.dst) << "n=" << n << " d=" << d;
		}
}

TEST(SchedEbs, DummyKeepsPermutationsLinesAndConnectivity)
{
	for (uint32_t n : {5u, 10u, 17u, 20u, 50u, 100u, 1000u})
		for (uint32_t h : {2u, 3u})
			for (uint32_t d : {1u, 2u}) {
				SCOPED_TRACE("n=" + std::to_string(n) + " h=" + std::to_string(h) +
					     " d=" + std::to_string(d));
				if (h == 3 && (n == 5 || n == 10))
					continue; // cut off (RefusesBadShapes)
				Schedule s = ebs(n, d, h, timing());
				EXPECT_NO_THROW(validate(s)); // every (uplink, slot) a permutation
				EbsLayout layout = ebs_layout(n, h);
				const uint32_t m = layout.m;
				const uint64_t virt = layout.virt;
				EXPECT_EQ(s.period, (h * (m - 1) + d - 1) / d);
				if (virt > n) {
					EXPECT_NE(s.generator.find("dummy M=" + std::to_string(virt)),
						  std::string::npos);
				}
				// every circuit along one coordinate of the virtual layout
				for (uint32_t p = 0; p < d; p++)
					for (uint32_t t = 0; t < s.period; t++)
						for (uint32_t i = 0; i < n; i++) {
							uint32_t j = s.to(p, t, i);
							if (j == i)
								continue;
							uint64_t vi = layout.virt_of[i], vj = layout.virt_of[j];
							ASSERT_EQ(differing(vi, vj, m, h), 1u) << i << "->" << j;
						}
				if (n <= 100) {
					std::vector<uint32_t> hp = hops(s);
					for (uint32_t x : hp)
						ASSERT_NE(x, UINT32_MAX);
				}
			}
}

// virtual node v moved by s along coordinate p (base m)
uint64_t shifted(uint64_t v, uint32_t m, uint32_t p, uint32_t s)
{
	uint64_t w = 1;
	for (uint32_t i = 0; i < p; i++)
		w *= m;
	uint64_t c = v / w % m;
	return v - c * w + (c + s) % m * w;
}

const uint32_t kDummyNodes[] = {20, 50, 90, 200, 700, 1000};

TEST(SchedEbs, DummiesComeFromShalesSet)
{
	for (uint32_t n : kDummyNodes)
		for (uint32_t h : {2u, 3u}) {
			SCOPED_TRACE("n=" + std::to_string(n) + " h=" + std::to_string(h));
			EbsLayout l = ebs_layout(n, h);
			ASSERT_EQ(l.virt_of.size(), n);
			std::vector<char> real(l.virt, 0);
			for (uint32_t k = 0; k < n; k++) {
				if (k) {
					ASSERT_LT(l.virt_of[k - 1], l.virt_of[k]);
				}
				real[l.virt_of[k]] = 1;
			}
			uint32_t top = 0; // the highest layer a dummy was taken from
			for (uint64_t v = 0; v < l.virt; v++)
				if (!real[v]) {
					uint32_t j = ebs_dummy_layer(v, l.m, h);
					ASSERT_LT(j, h) << "dummy " << v << " is not in Shale's set";
					top = std::max(top, j);
				}
			for (uint64_t v = 0; v < l.virt; v++) // lower layers are used up first
				if (ebs_dummy_layer(v, l.m, h) < top) {
					ASSERT_FALSE(real[v]) << v;
				}
		}
	// a layer meets every line once: with m = 10, h = 2, layer 0 is the
	// "diagonal" c1 = c0
	for (uint64_t v = 0; v < 100; v++)
		EXPECT_EQ(ebs_dummy_layer(v, 10, 2) == 0, v / 10 == v % 10) << v;
}

// Shale's Dummy EBS leaves a circuit that meets a dummy idle; ebs() must
// keep every other circuit where Shale has it and put its closing circuits
// only where Shale's sender and receiver are both idle. This is what
// carries Lemma 5's guarantee over to the schedule lumen writes.
TEST(SchedEbs, HoldsEveryCircuitOfShales)
{
	for (uint32_t n : kDummyNodes)
		for (uint32_t h : {2u, 3u})
			for (uint32_t d : {1u, 2u}) {
				SCOPED_TRACE("n=" + std::to_string(n) + " h=" + std::to_string(h) +
					     " d=" + std::to_string(d));
				Schedule s = ebs(n, d, h, timing());
				EbsLayout l = ebs_layout(n, h);
				std::vector<int64_t> real_of(l.virt, -1);
				for (uint32_t k = 0; k < n; k++)
					real_of[l.virt_of[k]] = k;
				uint64_t closing = 0;
				for (uint32_t u = 0; u < d; u++)
					for (uint32_t t = 0; t < s.period; t++) {
						uint32_t q = u + t * d;
						if (q >= h * (l.m - 1))
							continue; // padding
						uint32_t p = q / (l.m - 1), sh = q % (l.m - 1) + 1;
						for (uint32_t i = 0; i < n; i++) {
							uint32_t j = s.to(u, t, i);
							int64_t shale = real_of[shifted(l.virt_of[i], l.m, p, sh)];
							if (shale >= 0) {
								ASSERT_EQ(j, shale) << i;
								continue;
							}
							// Shale: i's sender idle; j's receiver too
							// (its sender from behind is a dummy), or i idle
							closing += j != i;
							int64_t from = real_of[shifted(l.virt_of[j], l.m, p, l.m - sh)];
							ASSERT_TRUE(j == i || from < 0) << i << "->" << j;
						}
					}
				if (l.virt > n) {
					EXPECT_GT(closing, 0u); // the dummies were met
				}
			}
}

// Lemma 5's counting: a semi-path from a to an intermediate fixes the
// coordinates one phase after the other from some phase on; the share of
// intermediates (all M, dummies included) whose semi-path from a meets a
// dummy is at most h^2 / m, for every real a and starting phase. The
// guarantee (1 / 2h)(1 - 2h^2 / m) is 1 / 2h less twice that.
TEST(SchedEbs, SemiPathsLoseAtMostLemma5sShare)
{
	for (uint32_t n : kDummyNodes)
		for (uint32_t h : {2u, 3u}) {
			SCOPED_TRACE("n=" + std::to_string(n) + " h=" + std::to_string(h));
			EbsLayout l = ebs_layout(n, h);
			std::vector<char> real(l.virt, 0);
			for (uint64_t v : l.virt_of)
				real[v] = 1;
			std::vector<uint64_t> w(h, 1);
			for (uint32_t p = 1; p < h; p++)
				w[p] = w[p - 1] * l.m;
			double worst = 0;
			for (uint64_t a : l.virt_of)
				for (uint32_t first = 0; first < h; first++) {
					uint64_t lost = 0;
					for (uint64_t v = 0; v < l.virt; v++) {
						uint64_t x = a;
						bool hit = false;
						for (uint32_t k = 0; k < h && !hit; k++) {
							uint32_t p = (first + k) % h;
							x = x - x / w[p] % l.m * w[p] + v / w[p] % l.m * w[p];
							hit = !real[x];
						}
						lost += hit;
					}
					worst = std::max(worst, double(lost) / l.virt);
				}
			EXPECT_LE(worst, double(h) * h / l.m + 1e-12);
			if (l.virt == n) {
				EXPECT_EQ(worst, 0.0);
				EXPECT_DOUBLE_EQ(ebs_shale_guarantee(n, h), 1 / (2.0 * h));
			} else {
				EXPECT_DOUBLE_EQ(ebs_shale_guarantee(n, h),
						 std::max(0.0, (1 - 2.0 * h * h / l.m) / (2.0 * h)));
			}
		}
	EXPECT_DOUBLE_EQ(ebs_shale_guarantee(100, 2), 0.25); // 10^2: plain EBS, 1 / 2h
	EXPECT_DOUBLE_EQ(ebs_shale_guarantee(90, 2), 0.25 * (1 - 8.0 / 10));
	EXPECT_DOUBLE_EQ(ebs_shale_guarantee(50, 2), 0.0); // m = 8: Lemma 5 says nothing yet
}

TEST(SchedEbs, RefusesBadShapes)
{
	EXPECT_NE(refusal([] { ebs(1, 1, 2, timing()); }).find("nodes 1"), std::string::npos);
	EXPECT_NE(refusal([] { ebs(16, 0, 2, timing()); }).find("uplinks 0"), std::string::npos);
	EXPECT_NE(refusal([] { ebs(16, 65, 2, timing()); }).find("uplinks 65"), std::string::npos);
	EXPECT_NE(refusal([] { ebs(16, 1, 0, timing()); }).find("h 0"), std::string::npos);
	EXPECT_NE(refusal([] { ebs(16, 1, 21, timing()); }).find("h 21"), std::string::npos);
	// 10 nodes over 27 virtual ones: a node alone on all its lines
	EXPECT_NE(refusal([] { ebs(10, 1, 3, timing()); }).find("unreachable from node 0: take a smaller h"),
		  std::string::npos);
	// 2 nodes over 4: Shale's dummies are the diagonal, the two left differ
	// in both coordinates
	EXPECT_NE(refusal([] { ebs(2, 1, 2, timing()); }).find("unreachable from node 0"), std::string::npos);
	Timing bad = timing();
	bad.guard_ns = bad.slot_ns;
	EXPECT_NE(refusal([&] { ebs(16, 1, 2, bad); }).find("guard_ns"), std::string::npos);
}

} // namespace
