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
#include <chrono>
#include <mutex>
#include <string>
#include <random>
#include <thread>
#include <vector>

#include "base/system.h"
#include "lumend/slot_engine.h"

namespace
{

using namespace lumen;
using namespace lumen::lumend;

// An engine running on a thread of its own until stop() or the end of the
// scope (a failed assertion leaves early: the thread is joined all the same).
struct EngineThread {
	std::atomic<bool> stopping{false};
	std::thread t;
	explicit EngineThread(SlotEngine &e) : t([this, &e] { e.run(stopping, 0); })
	{
	}
	void stop()
	{
		stopping = true;
		if (t.joinable())
			t.join();
	}
	~EngineThread()
	{
		stop();
	}
};

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

// A round robin of NODES for node SELF, its t0 the slot boundary before
// now on CLOCK.
std::shared_ptr<Plan> round_robin_now(const Clock &clock, uint32_t nodes, uint32_t self, uint64_t slot_ns,
				      uint64_t guard_ns, uint64_t margin_ns)
{
	auto plan = std::make_shared<Plan>();
	plan->schedule = sched::round_robin(nodes, 1, false, {});
	plan->schedule.slot_ns = slot_ns;
	plan->schedule.guard_ns = guard_ns;
	plan->schedule.t0_ns = clock.now() / slot_ns * slot_ns;
	plan->tables = build_tables(plan->schedule, self);
	plan->margin_ns = margin_ns;
	return plan;
}

// The engine on CLOCK_TAI, 200 us slots, into an anonymous page: every
// boundary published or missed, each published in the slot it names (its
// time read at most a slot after the boundary), never going back; errors
// measured; quiet until the clock checks out; STOPPED at the end.
//
// Not "so many boundaries in 50 ms": on a loaded machine the thread may
// start late or be descheduled for milliseconds, and what it then misses
// is counted, not a failure. It runs until it has published 240
// boundaries and checked the clock twice (a generous cap ends a stalled
// one, a failure), and the count is checked from its own start.
TEST(LumendEngineRun, PublishesBoundaries)
{
	constexpr uint64_t kSlot = 200'000, kCapNs = 60'000'000'000;
	Clock clock = Clock::tai(0);
	auto plan = round_robin_now(clock, 4, 2, kSlot, 20'000, 5000);
	const uint64_t t0 = plan->schedule.t0_ns;
	ShmPage page = ShmPage::anonymous(plan->tables, plan->margin_ns, LUMEN_QUIET_CLOCK);
	EngineOptions o;
	o.check_interval_ns = 5'000'000;
	o.resume_after = 2;
	o.quiet_log = true;
	SlotEngine engine(clock, page, plan, o);
	EngineThread running(engine);

	// the page as a sender reads it, meanwhile
	const lumen_osched_page *pg = page.page();
	uint64_t reads = 0, last = 0;
	const uint64_t start = monotonic_ns();
	for (;;) {
		uint32_t s = lumen_osched_read_begin(pg);
		uint64_t slot = pg->slot, at = pg->boundary_ns;
		if (!lumen_osched_read_retry(pg, s) && at) {
			uint64_t now = clock.now();
			reads++;
			ASSERT_GE(slot, last) << "back in time";
			ASSERT_GE(at, t0 + slot * kSlot) << "slot " << slot << " published before its boundary";
			ASSERT_LT(at, t0 + (slot + 1) * kSlot)
				<< "slot " << slot << " published after the next boundary";
			ASSERT_LE(at, now);
			last = slot;
		}
		EngineStats seen = engine.snapshot();
		if (seen.published >= 240 && seen.clock_checks >= 2 && reads)
			break;
		ASSERT_LT(monotonic_ns() - start, kCapNs) << "stalled: " << seen.published << " boundaries published, "
							  << seen.clock_checks << " clock checks";
		std::this_thread::sleep_for(std::chrono::microseconds(200));
	}
	running.stop();
	EngineStats st = engine.snapshot();
	// every boundary from the first after the engine's own start to the
	// last one published was either published or missed
	uint64_t first = first_slot_after(plan->tables.timing, st.started_ns, 1);
	EXPECT_EQ(st.published + st.missed, st.slot - first + 1);
	EXPECT_GE(st.published, 240u);
	EXPECT_GT(reads, 0u);
	EXPECT_EQ(st.errors.count(), st.published);
	EXPECT_LT(st.errors.max(), kSlot); // each in the slot it names
	EXPECT_EQ(page.page()->slot, st.slot);
	EXPECT_EQ(page.page()->late, st.late);
	EXPECT_EQ(page.page()->missed, st.missed);
	EXPECT_GE(page.page()->boundary_ns, t0 + st.slot * kSlot);
	EXPECT_EQ(st.clock_bad_checks, 0u);
	EXPECT_EQ(page.page()->quiet, 0u); // the clock checked out
	EXPECT_GE(st.clock_checks, 2u);
	EXPECT_EQ(st.clock_jumps, 0u);
	engine.say_stopped();
	EXPECT_EQ(page.page()->quiet, LUMEN_QUIET_STOPPED);
	EXPECT_EQ(page.page()->seq % 2, 0u);
}

// run(stop, until) returns once the next boundary is past until, having
// gone at least to the last boundary before it (a later one, counted as
// late, if it woke late): measured against until, not against how long
// the call took.
TEST(LumendEngineRun, RunsUntilAnInstant)
{
	constexpr uint64_t kSlot = 100'000;
	Clock clock = Clock::tai(0);
	auto plan = round_robin_now(clock, 3, 0, kSlot, 10'000, 1000);
	ShmPage page = ShmPage::anonymous(plan->tables, plan->margin_ns, 0);
	EngineOptions o;
	o.quiet_log = true;
	SlotEngine engine(clock, page, plan, o);
	std::atomic<bool> stop{false};
	uint64_t until = clock.now() + 5'000'000;
	engine.run(stop, until);
	uint64_t returned = clock.now();
	EngineStats st = engine.snapshot();
	uint64_t last_before = (until - plan->schedule.t0_ns) / kSlot;
	uint64_t first = first_slot_after(plan->tables.timing, st.started_ns, 1);
	if (first > last_before) {
		// it began after until (descheduled that long): nothing to do
		EXPECT_EQ(st.published, 0u);
		return;
	}
	EXPECT_GE(st.slot, last_before);
	EXPECT_EQ(st.published + st.missed, st.slot - first + 1);
	EXPECT_GE(returned, plan->schedule.t0_ns + last_before * kSlot);
	EXPECT_EQ(page.page()->slot, st.slot);
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
	EngineThread running(engine);
	std::this_thread::sleep_for(std::chrono::milliseconds(10));
	engine.offer(make(2));
	// a cap for a failure, not a window: a loaded machine may take long
	uint64_t deadline = clock.now() + 60'000'000'000;
	while (engine.snapshot().version != 2 && clock.now() < deadline)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	running.stop();
	EXPECT_EQ(engine.snapshot().version, 2u);
	EXPECT_EQ(engine.snapshot().applied, 1u);
	EXPECT_EQ(engine.plan()->path, "2");
	EXPECT_EQ(page.page()->version, 2u);
}

// A change staged and never committed (include/lumen/optical.h): from its
// instant lumend says quiet (version) and keeps saying so however long it
// waits: it never aborts by itself (the coordinator may have committed the
// others) nor takes the new schedule; once overdue it says so, once, and
// counts it. The coordinator's word still ends it: an abort keeps the old
// schedule, a late commit puts the new one in force.
TEST(LumendEngineRun, AChangeNeverCommittedStaysQuietAndIsSaidOverdue)
{
	constexpr uint64_t kSlot = 100'000;
	Clock clock = Clock::tai(0);
	auto make = [&](uint64_t version, uint64_t t0) {
		auto plan = std::make_shared<Plan>();
		sched::Timing t;
		t.slot_ns = kSlot;
		t.guard_ns = 10'000;
		t.t0_ns = t0;
		t.version = version;
		plan->schedule = sched::round_robin(3, 1, false, t);
		plan->tables = build_tables(plan->schedule, 0);
		plan->margin_ns = 1000;
		return plan;
	};
	const uint64_t t0 = clock.now() / kSlot * kSlot;
	auto first = make(1, t0);
	const uint64_t period = kSlot * first->schedule.period;
	ShmPage page = ShmPage::anonymous(first->tables, first->margin_ns, 0);
	struct Log {
		std::mutex mu;
		std::vector<std::string> lines;
		static void add(const std::string &l, void *self)
		{
			Log *g = (Log *)self;
			std::lock_guard<std::mutex> lock(g->mu);
			g->lines.push_back(l);
		}
		size_t count(const std::string &word)
		{
			std::lock_guard<std::mutex> lock(mu);
			return (size_t)std::count_if(lines.begin(), lines.end(), [&](const std::string &l) {
				return l.find(word) != std::string::npos;
			});
		}
	} log;
	EngineOptions o;
	o.quiet_log = true;
	o.overdue_ns = 20'000'000;
	o.log_fn = &Log::add;
	o.log_arg = &log;
	SlotEngine engine(clock, page, first, o);
	EngineThread running(engine);
	// a cap for a failure, not a window: a loaded machine may take long
	const uint64_t cap = clock.now() + 60'000'000'000;
	auto wait_for = [&](auto done) {
		while (!done() && clock.now() < cap)
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
		return done();
	};
	auto next_instant = [&] { return t0 + ((clock.now() + 5'000'000 - t0) / period + 1) * period; };

	uint64_t at = next_instant();
	engine.stage(make(2, at), at);
	ASSERT_TRUE(wait_for([&] { return engine.snapshot().changes_overdue == 1; }));
	EXPECT_GT(clock.now(), at + o.overdue_ns);
	// well past it, nothing changed: quiet for the change, the old version,
	// the instant still in the page, boundaries still published
	const uint64_t slot = page.page()->slot;
	std::this_thread::sleep_for(std::chrono::milliseconds(30));
	EXPECT_TRUE(page.page()->quiet & LUMEN_QUIET_VERSION);
	EXPECT_EQ(page.page()->version, 1u);
	EXPECT_EQ(page.page()->change_ns, at);
	EXPECT_GT(page.page()->slot, slot);
	EXPECT_EQ(engine.snapshot().changes_overdue, 1u);
	EXPECT_EQ(log.count("overdue"), 1u);
	EXPECT_EQ(log.count("is due and not committed"), 1u);
	// an abort: the old schedule again, the instant gone from the page
	engine.abort();
	ASSERT_TRUE(wait_for([&] { return !(page.page()->quiet & LUMEN_QUIET_VERSION) && !page.page()->change_ns; }));
	EXPECT_EQ(page.page()->version, 1u);

	// again, and a late commit: the new schedule in force
	at = next_instant();
	engine.stage(make(3, at), at);
	ASSERT_TRUE(wait_for([&] { return engine.snapshot().changes_overdue == 2; }));
	EXPECT_EQ(page.page()->version, 1u);
	engine.commit();
	ASSERT_TRUE(wait_for([&] { return page.page()->version == 3; }));
	EXPECT_TRUE(wait_for([&] { return !(page.page()->quiet & LUMEN_QUIET_VERSION); }));
	EXPECT_EQ(page.page()->change_ns, 0u);
	EXPECT_EQ(log.count("overdue"), 2u);
}

} // namespace
