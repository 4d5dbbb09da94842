// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/sched_adapt_test.cpp - traffic-aware operation (userspace/sched/
// adapt.h): the demand estimated from byte counters (first interval, EWMA,
// a counter that goes back, bad input) and the decision to change.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/error.h"
#include "sched/adapt.h"
#include "sched/schedule.h"

namespace
{

using lumen::UsageError;
using namespace lumen::sched;

constexpr uint64_t kSec = 1'000'000'000;

TEST(DemandEstimate, FirstIntervalWholeThenEwma)
{
	DemandEstimate e(2, 0.25);
	EXPECT_FALSE(e.add({0, 100, 0, 0}, 0)); // the baseline
	EXPECT_FALSE(e.ready());
	EXPECT_TRUE(e.add({0, 1100, 0, 0}, kSec)); // 1000 B/s
	EXPECT_DOUBLE_EQ(e.rates()[1], 1000.0);
	EXPECT_TRUE(e.add({0, 1100 + 6000, 0, 0}, 3 * kSec)); // 3000 B/s over 2 s
	EXPECT_DOUBLE_EQ(e.rates()[1], 0.25 * 3000 + 0.75 * 1000);
	EXPECT_EQ(e.intervals(), 2u);
}

TEST(DemandEstimate, ACounterGoingBackStartsANewBaseline)
{
	DemandEstimate e(2, 1.0);
	e.add({0, 5000, 0, 0}, 0);
	e.add({0, 6000, 0, 0}, kSec);
	EXPECT_FALSE(e.add({0, 10, 0, 0}, 2 * kSec)); // a gate attached again
	EXPECT_DOUBLE_EQ(e.rates()[1], 1000.0); // unchanged
	EXPECT_TRUE(e.add({0, 510, 0, 0}, 3 * kSec));
	EXPECT_DOUBLE_EQ(e.rates()[1], 500.0);
	EXPECT_FALSE(e.add({0, 600, 0, 0}, 3 * kSec)); // no time passed
}

TEST(DemandEstimate, RefusesBadInput)
{
	EXPECT_THROW(DemandEstimate(0, 0.5), UsageError);
	EXPECT_THROW(DemandEstimate(3, 0.0), UsageError);
	EXPECT_THROW(DemandEstimate(3, 1.5), UsageError);
	DemandEstimate e(3, 0.5);
	EXPECT_THROW(e.add({1, 2, 3}, 0), UsageError);
}

Schedule rr4()
{
	Timing t;
	t.slot_ns = 80'000'000;
	t.guard_ns = 8'000'000;
	t.t0_ns = 12345;
	t.version = 4;
	return round_robin(4, 1, false, t);
}

TEST(Decide, ASkewedRingIsWorthVermilion)
{
	// h(i) -> h(i+1) ten times every other pair (tests/e2e/vermilion_test.sh)
	std::vector<double> d = {0, 10, 1, 1, 1, 0, 10, 1, 1, 1, 0, 10, 10, 1, 1, 0};
	AdaptDecision a = decide(rr4(), d, VermilionParams{}, 0.05);
	EXPECT_TRUE(a.change) << a.why;
	EXPECT_GT(a.theta_next, a.theta_now + 0.05);
	EXPECT_EQ(a.next.version, 5u);
	EXPECT_EQ(a.next.slot_ns, 80'000'000u);
	EXPECT_EQ(a.next.guard_ns, 8'000'000u);
	EXPECT_NE(a.why.find("change"), std::string::npos);
	// demanding more than Vermilion adds: no change
	EXPECT_FALSE(decide(rr4(), d, VermilionParams{}, 0.9).change);
}

TEST(Decide, NoDemandNoChange)
{
	std::vector<double> d(16, 0.0);
	d[0] = 5; // only to itself
	AdaptDecision a = decide(rr4(), d, VermilionParams{}, 0.0);
	EXPECT_FALSE(a.change);
	EXPECT_EQ(a.why, "no demand measured");
}

TEST(Decide, UniformDemandIsServedByRoundRobinAlready)
{
	std::vector<double> d(16, 1.0);
	for (int i = 0; i < 4; i++)
		d[i * 5] = 0;
	AdaptDecision a = decide(rr4(), d, VermilionParams{}, 0.05);
	EXPECT_FALSE(a.change) << a.why;
}

} // namespace
