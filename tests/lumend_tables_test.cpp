// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/lumend_tables_test.cpp - the tables lumend publishes for its node
// (userspace/lumend/shm_page.h): the waits table against a brute-force scan
// of the schedule, the dsts table, the limits, and the page layout.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "base/error.h"
#include "lumend/shm_page.h"
#include "sched/schedule.h"

namespace
{

using namespace lumen;
using namespace lumen::lumend;

// The definition, slowly: the fewest slots from s until one in which self
// reaches dst on some uplink, or NEVER.
uint16_t brute_wait(const sched::Schedule &s, uint32_t self, uint32_t slot, uint32_t dst)
{
	if (dst == self)
		return LUMEN_SLOT_NEVER;
	for (uint32_t w = 0; w < s.period; w++)
		for (uint32_t p = 0; p < s.uplinks; p++)
			if (s.to(p, (slot + w) % s.period, self) == dst)
				return (uint16_t)w;
	return LUMEN_SLOT_NEVER;
}

void expect_matches(const sched::Schedule &s)
{
	for (uint32_t self = 0; self < s.nodes; self++) {
		Tables t = build_tables(s, self);
		ASSERT_EQ(t.waits.size(), (size_t)s.period * s.nodes);
		ASSERT_EQ(t.dsts.size(), (size_t)s.period * s.uplinks);
		for (uint32_t slot = 0; slot < s.period; slot++) {
			for (uint32_t dst = 0; dst < s.nodes; dst++)
				ASSERT_EQ(t.waits[(size_t)slot * s.nodes + dst], brute_wait(s, self, slot, dst))
					<< "self " << self << " slot " << slot << " dst " << dst;
			for (uint32_t p = 0; p < s.uplinks; p++)
				ASSERT_EQ(t.dsts[(size_t)slot * s.uplinks + p], s.to(p, slot, self));
		}
	}
}

sched::Timing timing()
{
	sched::Timing t;
	t.slot_ns = 100'000;
	t.guard_ns = 10'000;
	t.t0_ns = 1'700'000'000'000'000'000ull;
	t.version = 3;
	t.link_gbps = 25;
	return t;
}

// Random permutations per (uplink, slot), a few slots all idle, so that
// some pairs are never connected.
sched::Schedule random_schedule(uint32_t n, uint32_t d, uint32_t period, uint32_t seed)
{
	std::mt19937 rng(seed);
	sched::Schedule s = sched::Schedule::idle(n, d, period);
	s.slot_ns = 50'000;
	s.guard_ns = 5'000;
	s.parallel = true;
	for (uint32_t p = 0; p < d; p++)
		for (uint32_t slot = 0; slot < period; slot++) {
			if (rng() % 4 == 0)
				continue; // idle: identity
			std::vector<uint32_t> perm(n);
			for (uint32_t i = 0; i < n; i++)
				perm[i] = i;
			std::shuffle(perm.begin(), perm.end(), rng);
			for (uint32_t i = 0; i < n; i++)
				s.to(p, slot, i) = perm[i];
		}
	return s;
}

TEST(LumendTables, RoundRobinMatchesBruteForce)
{
	for (uint32_t n : {2u, 5u, 8u})
		for (uint32_t d : {1u, 2u, 3u})
			for (bool loops : {false, true}) {
				if (d > n)
					continue;
				SCOPED_TRACE("n " + std::to_string(n) + " d " + std::to_string(d));
				expect_matches(sched::round_robin(n, d, loops, timing()));
			}
}

TEST(LumendTables, RandomSchedulesMatchBruteForce)
{
	for (uint32_t seed = 1; seed <= 20; seed++) {
		SCOPED_TRACE("seed " + std::to_string(seed));
		expect_matches(random_schedule(3 + seed % 6, 1 + seed % 3, 1 + seed % 11, seed));
	}
}

TEST(LumendTables, RoundRobinWaits)
{
	// 4 nodes, 1 uplink: shift s+1 in slot s, so node 0 reaches 1, 2, 3 in
	// slots 0, 1, 2 and waits (3 + dst - 1 - slot) mod 3 for dst
	Tables t = build_tables(sched::round_robin(4, 1, false, timing()), 0);
	EXPECT_EQ(t.timing.period, 3u);
	for (uint32_t slot = 0; slot < 3; slot++) {
		EXPECT_EQ(t.waits[slot * 4 + 0], LUMEN_SLOT_NEVER);
		for (uint32_t dst = 1; dst < 4; dst++)
			EXPECT_EQ(t.waits[slot * 4 + dst], (3 + dst - 1 - slot) % 3);
	}
}

TEST(LumendTables, HeaderFields)
{
	sched::Schedule s = sched::round_robin(6, 2, false, timing());
	s.guard_at = sched::GuardAt::kStart;
	Tables t = build_tables(s, 4);
	EXPECT_EQ(t.self, 4u);
	EXPECT_EQ(t.nodes, 6u);
	EXPECT_EQ(t.uplinks, 2u);
	EXPECT_EQ(t.version, 3u);
	EXPECT_EQ(t.rate_mbps, 25'000u);
	EXPECT_EQ(t.timing.t0_ns, s.t0_ns);
	EXPECT_EQ(t.timing.slot_ns, 100'000u);
	EXPECT_EQ(t.timing.guard_ns, 10'000u);
	EXPECT_EQ(t.timing.guard_at_start, 1u);
	EXPECT_EQ(lumen_slot_timing_valid(&t.timing), 0);
}

TEST(LumendTables, Limits)
{
	sched::Schedule s = sched::round_robin(4, 1, false, timing());
	EXPECT_THROW(build_tables(s, 4), UsageError);
	// a period too long for 16-bit waits
	sched::Schedule big = sched::Schedule::idle(2, 1, LUMEN_SLOT_MAX_PERIOD + 1);
	big.slot_ns = 1000;
	EXPECT_THROW(build_tables(big, 0), UsageError);
	sched::Schedule edge = sched::Schedule::idle(2, 1, LUMEN_SLOT_MAX_PERIOD);
	edge.slot_ns = 1000;
	edge.to(0, LUMEN_SLOT_MAX_PERIOD - 1, 0) = 1;
	edge.to(0, LUMEN_SLOT_MAX_PERIOD - 1, 1) = 0;
	Tables t = build_tables(edge, 0);
	EXPECT_EQ(t.waits[1], LUMEN_SLOT_MAX_PERIOD - 1); // from slot 0 to the last
	EXPECT_EQ(t.waits[(size_t)(LUMEN_SLOT_MAX_PERIOD - 1) * 2 + 1], 0u);
}

TEST(LumendTables, Layout)
{
	Layout l = layout_for(8, 2, 7);
	EXPECT_EQ(l.waits_off, 192u); // after the header, three cache lines
	EXPECT_EQ(l.waits_off % 64, 0u);
	EXPECT_EQ(l.dsts_off % 64, 0u);
	EXPECT_GE(l.dsts_off, l.waits_off + 8u * 7 * 2);
	EXPECT_GE(l.size, (uint64_t)l.dsts_off + 2u * 7 * 2);
	EXPECT_EQ(l.size % 4096, 0u);
	Layout big = layout_for(4096, 1, 4096);
	EXPECT_GE(big.size, 192u + 4096ull * 4096 * 2);
}

} // namespace
