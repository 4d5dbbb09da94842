// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/lumend_engine_test.cpp - the slot engine's pure parts
// (userspace/lumend/slot_engine.h): the error histogram and its
// percentiles, which boundary comes next and what a late wake-up missed,
// the stride for short slots and the spin tuner; then a short run of the
// engine itself on CLOCK_TAI.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "lumend/slot_engine.h"

namespace
{

using namespace lumen;
using namespace lumen::lumend;

TEST(LumendHistogram, BucketsCoverEveryValueInOrder)
{
	EXPECT_EQ(Histogram::bucket_of(0), 0u);
	EXPECT_EQ(Histogram::bucket_of(255), 255u);
	EXPECT_EQ(Histogram::bucket_of(UINT64_MAX), Histogram::kBuckets - 1);
	EXPECT_EQ(Histogram::upper_of(Histogram::kBuckets - 1), UINT64_MAX);
	for (unsigned b = 0; b + 1 < Histogram::kBuckets; b++) {
		ASSERT_EQ(Histogram::bucket_of(Histogram::upper_of(b)), b);
		ASSERT_EQ(Histogram::bucket_of(Histogram::upper_of(b) + 1), b + 1);
	}
	// within 1/32 above 256
	for (uint64_t v : {300ull, 1000ull, 12345ull, 999'999ull, 1ull << 40})
		EXPECT_LE(Histogram::upper_of(Histogram::bucket_of(v)) - v, v / 32);
}

TEST(LumendHistogram, Percentiles)
{
	Histogram h;
	EXPECT_EQ(h.percentile(0.5), 0u);
	for (uint64_t v = 1; v <= 100; v++)
		h.add(v);
	EXPECT_EQ(h.count(), 100u);
	EXPECT_EQ(h.percentile(0.5), 50u); // exact below 256 ns
	EXPECT_EQ(h.percentile(0.99), 99u);
	EXPECT_EQ(h.percentile(1.0), 100u);
	EXPECT_EQ(h.percentile(0.0), 1u);
	EXPECT_EQ(h.max(), 100u);
	EXPECT_DOUBLE_EQ(h.mean(), 50.5);

	// against sorting: never below the true value, at most 1/32 above it,
	// never above the maximum
	std::mt19937_64 rng(7);
	std::lognormal_distribution<double> dist(8, 2);
	Histogram g;
	std::vector<uint64_t> all;
	for (int i = 0; i < 20000; i++) {
		uint64_t v = (uint64_t)dist(rng);
		g.add(v);
		all.push_back(v);
	}
	std::sort(all.begin(), all.end());
	for (double q : {0.5, 0.9, 0.99, 0.999}) {
		uint64_t truth = all[(size_t)std::ceil(q * (double)all.size()) - 1], got = g.percentile(q);
		EXPECT_GE(got, truth) << q;
		EXPECT_LE(got, truth + truth / 32) << q;
	}
	EXPECT_EQ(g.percentile(1.0), all.back());
	EXPECT_EQ(g.max(), all.back());
}

lumen_slot_timing timing(uint64_t t0, uint64_t slot)
{
	lumen_slot_timing t = {};
	t.t0_ns = t0;
	t.slot_ns = slot;
	t.guard_ns = slot / 10;
	t.period = 3;
	return t;
}

TEST(LumendSlots, FirstSlotAfter)
{
	lumen_slot_timing t = timing(1'000'000, 1000);
	EXPECT_EQ(first_slot_after(t, 0, 1), 0u); // not begun: slot 0 at t0
	EXPECT_EQ(first_slot_after(t, 1'000'000, 1), 0u);
	EXPECT_EQ(first_slot_after(t, 1'000'001, 1), 1u);
	EXPECT_EQ(first_slot_after(t, 1'005'000, 1), 5u); // on a boundary: that one
	EXPECT_EQ(first_slot_after(t, 1'005'001, 4), 8u); // multiples of the stride
}

TEST(LumendSlots, CatchUp)
{
	lumen_slot_timing t = timing(1'000'000, 1000);
	// woke in time (before the next boundary): that slot, nothing missed
	CatchUp c = catch_up(t, 5, 1'005'000, 1);
	EXPECT_EQ(c.slot, 5u);
	EXPECT_EQ(c.missed, 0u);
	c = catch_up(t, 5, 1'005'999, 1);
	EXPECT_EQ(c.slot, 5u);
	// woke in slot 8: 5, 6, 7 missed, 8 published
	c = catch_up(t, 5, 1'008'100, 1);
	EXPECT_EQ(c.slot, 8u);
	EXPECT_EQ(c.missed, 3u);
	// stride 4: due 8, woke in 17: 8 and 12 missed, 16 published
	c = catch_up(t, 8, 1'017'500, 4);
	EXPECT_EQ(c.slot, 16u);
	EXPECT_EQ(c.missed, 2u);
	c = catch_up(t, 8, 1'011'999, 4);
	EXPECT_EQ(c.slot, 8u);
	EXPECT_EQ(c.missed, 0u);
}

TEST(LumendSlots, Stride)
{
	EXPECT_EQ(auto_stride(1'000'000), 1u);
	EXPECT_EQ(auto_stride(10'000), 1u);
	EXPECT_EQ(auto_stride(5'000), 2u);
	EXPECT_EQ(auto_stride(3'000), 4u);
	EXPECT_EQ(auto_stride(1), 10'000u);
}

TEST(LumendSlots, SpinTuner)
{
	SpinTuner s(20'000, 1'000'000);
	EXPECT_EQ(s.spin(), 20'000u);
	// a machine whose sleeps wake 30..39 us late
	for (unsigned i = 0; i < SpinTuner::kFirst - 1; i++)
		s.add(30'000 + (i % 10) * 1000);
	EXPECT_EQ(s.spin(), 20'000u);
	s.add(30'000);
	EXPECT_EQ(s.p90(), 38'000u); // the first guess, from kFirst sleeps
	EXPECT_EQ(s.spin(), 76'000u);
	// a few very late wake-ups (the run queue, not the timer) leave it be
	for (unsigned i = 0; i < SpinTuner::kWindow; i++)
		s.add(i % 100 == 0 ? 5'000'000 : 10'000);
	EXPECT_EQ(s.p90(), 10'000u);
	EXPECT_EQ(s.p99(), 5'000'000u);
	EXPECT_EQ(s.spin(), 20'000u); // twice 10 us, no lower than the floor
	for (unsigned i = 0; i < SpinTuner::kWindow; i++)
		s.add(900'000);
	EXPECT_EQ(s.spin(), 1'000'000u); // the ceiling
}

// The engine on CLOCK_TAI for 50 ms of 200 us slots into an anonymous
// page: boundaries published in order, errors measured, quiet until the
// clock checks out (stated error 0), STOPPED at the end.
TEST(LumendEngineRun, PublishesBoundaries)
{
	Clock clock = Clock::tai(0);
	auto plan = std::make_shared<Plan>();
	plan->schedule = sched::round_robin(4, 1, false, {});
	plan->schedule.slot_ns = 200'000;
	plan->schedule.guard_ns = 20'000;
	plan->schedule.t0_ns = clock.now() / 200'000 * 200'000;
	plan->tables = build_tables(plan->schedule, 2);
	plan->margin_ns = 5000;
	ShmPage page = ShmPage::anonymous(plan->tables, plan->margin_ns, LUMEN_QUIET_CLOCK);
	EngineOptions o;
	o.check_interval_ns = 5'000'000;
	o.resume_after = 2;
	o.quiet_log = true;
	SlotEngine engine(clock, page, plan, o);
	std::atomic<bool> stop{false};
	uint64_t start = clock.now();
	engine.run(stop, start + 50'000'000);
	EngineStats st = engine.snapshot();
	// every boundary from the first to the last published one was either
	// published or missed: ~250 in 50 ms (more if the thread was late at
	// the end)
	uint64_t first = first_slot_after(plan->tables.timing, st.started_ns, 1);
	EXPECT_EQ(st.published + st.missed, st.slot - first + 1);
	EXPECT_GE(st.slot - first + 1, 240u);
	EXPECT_GT(st.published, 50u);
	EXPECT_EQ(st.errors.count(), st.published);
	EXPECT_EQ(page.page()->slot, st.slot);
	EXPECT_EQ(page.page()->late, st.late);
	EXPECT_EQ(page.page()->missed, st.missed);
	EXPECT_GE(page.page()->boundary_ns, plan->schedule.t0_ns + st.slot * 200'000);
	EXPECT_EQ(page.page()->quiet, 0u); // the clock checked out
	EXPECT_GE(st.clock_checks, 2u);
	EXPECT_EQ(st.clock_jumps, 0u);
	engine.say_stopped();
	EXPECT_EQ(page.page()->quiet, LUMEN_QUIET_STOPPED);
	EXPECT_EQ(page.page()->seq % 2, 0u);
}

// A schedule offered while running is in force after the next boundary.
TEST(LumendEngineRun, AppliesAnOfferedSchedule)
{
	Clock clock = Clock::tai(0);
	auto make = [&](uint64_t version) {
		auto plan = std::make_shared<Plan>();
		sched::Timing t;
		t.slot_ns = 100'000;
		t.guard_ns = 10'000;
		t.t0_ns = clock.now() / 100'000 * 100'000;
		t.version = version;
		plan->schedule = sched::round_robin(3, 1, false, t);
		plan->tables = build_tables(plan->schedule, 0);
		plan->margin_ns = 1000;
		plan->path = std::to_string(version); // (not "v" + ...: GCC 12's -Wrestrict at -O3)
		return plan;
	};
	auto first = make(1);
	ShmPage page = ShmPage::anonymous(first->tables, first->margin_ns, 0);
	EngineOptions o;
	o.quiet_log = true;
	SlotEngine engine(clock, page, first, o);
	std::atomic<bool> stop{false};
	std::thread t([&] { engine.run(stop, 0); });
	std::this_thread::sleep_for(std::chrono::milliseconds(10));
	engine.offer(make(2));
	uint64_t deadline = clock.now() + 2'000'000'000;
	while (engine.snapshot().version != 2 && clock.now() < deadline)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	stop = true;
	t.join();
	EXPECT_EQ(engine.snapshot().version, 2u);
	EXPECT_EQ(engine.snapshot().applied, 1u);
	EXPECT_EQ(engine.plan()->path, "2");
	EXPECT_EQ(page.page()->version, 2u);
}

} // namespace
