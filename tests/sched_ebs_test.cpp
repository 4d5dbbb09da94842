// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/sched_ebs_test.cpp - Shale's Elementary Basis Schedule
// (userspace/sched/ebs.cpp): for N = m^h, a node meets exactly the nodes
// that differ from it in one coordinate, each once per period of
// ceil(h(m - 1) / d), and reaches any node in as many direct hops as their
// coordinates differ (at most h: Shale's direct half); h = 1 is round
// robin. For other N (Dummy EBS) every slot is still a permutation, every
// circuit stays on one coordinate's line of the virtual layout, and the
// circuits connect every node to every other, or the schedule is refused.
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
				if (h == 3 && n == 10)
					continue; // cut off (RefusesBadShapes)
				Schedule s = ebs(n, d, h, timing());
				EXPECT_NO_THROW(validate(s)); // every (uplink, slot) a permutation
				uint32_t m = 2;
				uint64_t virt = 0;
				for (;; m++) {
					virt = 1;
					for (uint32_t i = 0; i < h; i++)
						virt *= m;
					if (virt >= n)
						break;
				}
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
							uint64_t vi = (uint64_t)i * virt / n,
								 vj = (uint64_t)j * virt / n;
							ASSERT_EQ(differing(vi, vj, m, h), 1u) << i << "->" << j;
						}
				if (n <= 100) {
					std::vector<uint32_t> hp = hops(s);
					for (uint32_t x : hp)
						ASSERT_NE(x, UINT32_MAX);
				}
			}
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
	Timing bad = timing();
	bad.guard_ns = bad.slot_ns;
	EXPECT_NE(refusal([&] { ebs(16, 1, 2, bad); }).find("guard_ns"), std::string::npos);
}

} // namespace
