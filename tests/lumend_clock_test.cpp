// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/lumend_clock_test.cpp - when lumend trusts its clock
// (userspace/lumend/clock.h): the verdict on an error bound, the jump
// detector against CLOCK_MONOTONIC, and the quiet/resume state machine fed
// a made-up sequence of checks; opening clocks that are not there.
#include <gtest/gtest.h>

#include <string>

#include "base/error.h"
#include "lumend/clock.h"

namespace
{

using namespace lumen;
using namespace lumen::lumend;

Timex synced(int64_t maxerror_us)
{
	Timex t;
	t.read = true;
	t.unsync = false;
	t.maxerror_us = maxerror_us;
	t.esterror_us = maxerror_us / 2;
	t.tai_offset_s = 37;
	return t;
}

TEST(LumendClock, BoundFromTheKernel)
{
	ClockReading r = judge_bound(synced(2), -1, 2500);
	EXPECT_TRUE(r.ok);
	EXPECT_EQ(r.bound_ns, 2000u);
	EXPECT_FALSE(r.stated);
	EXPECT_EQ(r.why, "");

	r = judge_bound(synced(3), -1, 2500);
	EXPECT_FALSE(r.ok);
	EXPECT_EQ(r.bound_ns, 3000u);
	EXPECT_NE(r.why.find("exceeds the margin 2.5 us"), std::string::npos) << r.why;
	EXPECT_NE(r.why.find("maxerror"), std::string::npos) << r.why;

	Timex unsync = synced(0);
	unsync.unsync = true;
	r = judge_bound(unsync, -1, 1'000'000);
	EXPECT_FALSE(r.ok);
	EXPECT_EQ(r.bound_ns, UINT64_MAX);
	EXPECT_NE(r.why.find("STA_UNSYNC"), std::string::npos) << r.why;

	r = judge_bound(Timex{}, -1, 1'000'000); // adjtimex failed
	EXPECT_FALSE(r.ok);
	EXPECT_NE(r.why.find("unknown"), std::string::npos) << r.why;
}

TEST(LumendClock, StatedBoundOverridesTheKernel)
{
	Timex unsync;
	unsync.read = true;
	unsync.unsync = true;
	ClockReading r = judge_bound(unsync, 0, 0);
	EXPECT_TRUE(r.ok);
	EXPECT_TRUE(r.stated);
	EXPECT_EQ(r.bound_ns, 0u);
	r = judge_bound(unsync, 600, 500);
	EXPECT_FALSE(r.ok);
	EXPECT_NE(r.why.find("600 ns (stated) exceeds the margin 500 ns"), std::string::npos) << r.why;
}

TEST(LumendClock, NsText)
{
	EXPECT_EQ(ns_text(0), "0 ns");
	EXPECT_EQ(ns_text(999), "999 ns");
	EXPECT_EQ(ns_text(2500), "2.5 us");
	EXPECT_EQ(ns_text(16'000'000'000ull), "16 s");
	EXPECT_EQ(ns_text(UINT64_MAX), "unknown");
}

// Samples 1 ms apart on both clocks, each read in 100 ns.
struct Feed {
	JumpDetector d;
	uint64_t mono = 1'000'000'000, clock = 1'700'000'000'000'000'000ull;
	int64_t step(int64_t clock_extra, uint64_t width = 100)
	{
		mono += 1'000'000;
		clock = (uint64_t)((int64_t)clock + 1'000'000 + clock_extra);
		return d.feed(mono - width / 2, clock, mono + width / 2);
	}
};

TEST(LumendClock, JumpDetection)
{
	Feed f{JumpDetector(2500, 0)};
	EXPECT_EQ(f.d.feed(f.mono - 50, f.clock, f.mono + 50), 0); // the first sample only sets the reference
	for (int i = 0; i < 100; i++)
		ASSERT_EQ(f.step(i % 2 ? 50 : -50), 0); // read jitter
	EXPECT_EQ(f.step(2000), 0); // within the tolerance
	EXPECT_EQ(f.step(10'000), 10'000); // stepped forward
	EXPECT_EQ(f.step(-3'000'000), -3'000'000); // backwards: the read goes back 2 ms
	EXPECT_EQ(f.d.jumps(), 2u);
	// a read going back, however little, is a jump
	f.mono += 10;
	f.clock -= 5;
	EXPECT_EQ(f.d.feed(f.mono - 50, f.clock, f.mono + 50), -15);
	EXPECT_EQ(f.d.jumps(), 3u);
	// a vague sample (preempted between its reads) is not a jump
	EXPECT_EQ(f.step(30'000, 80'000), 0);
	// a missed wake-up (both clocks 1 s on) is not a jump either
	f.mono += 1'000'000'000;
	f.clock += 1'000'000'000;
	EXPECT_EQ(f.step(0), 0);
	// after reset() the next sample is a new reference
	f.d.reset();
	f.clock += 5'000'000'000;
	EXPECT_EQ(f.step(0), 0);
	EXPECT_EQ(f.step(0), 0);
}

TEST(LumendClock, JumpDetectionAllowsPhcDrift)
{
	Feed f{JumpDetector(1000, 1000)}; // 1000 ppm: 1 us per ms
	f.step(0);
	EXPECT_EQ(f.step(1500), 0); // 1.5 us over 1 ms: within 1 us + 1 us
	EXPECT_NE(f.step(2200), 0);
	Feed tai{JumpDetector(1000, 0)};
	tai.step(0);
	EXPECT_NE(tai.step(1500), 0);
}

TEST(LumendClock, GateQuietAndResume)
{
	ClockGate g(3);
	EXPECT_TRUE(g.quiet()); // nothing checked yet
	EXPECT_EQ(g.check(true, ""), ClockGate::Change::kNone);
	EXPECT_NE(g.why().find("1 of 3"), std::string::npos) << g.why();
	EXPECT_EQ(g.check(true, ""), ClockGate::Change::kNone);
	EXPECT_EQ(g.check(true, ""), ClockGate::Change::kResumed);
	EXPECT_FALSE(g.quiet());
	EXPECT_EQ(g.why(), "");
	EXPECT_EQ(g.quiet_events(), 0u);

	// a bad check: quiet at once, says why
	EXPECT_EQ(g.check(false, "bound too big"), ClockGate::Change::kQuiet);
	EXPECT_TRUE(g.quiet());
	EXPECT_EQ(g.why(), "bound too big");
	EXPECT_EQ(g.quiet_events(), 1u);
	// two good, one bad: the count starts again
	g.check(true, "");
	g.check(true, "");
	EXPECT_EQ(g.check(false, "again"), ClockGate::Change::kNone);
	EXPECT_EQ(g.streak(), 0u);
	EXPECT_EQ(g.check(true, ""), ClockGate::Change::kNone);
	EXPECT_EQ(g.check(true, ""), ClockGate::Change::kNone);
	EXPECT_EQ(g.check(true, ""), ClockGate::Change::kResumed);

	// a jump between checks: quiet, then three good checks
	EXPECT_EQ(g.jump("jumped +1 ms"), ClockGate::Change::kQuiet);
	EXPECT_EQ(g.quiet_events(), 2u);
	EXPECT_EQ(g.jump("jumped again"), ClockGate::Change::kNone);
	EXPECT_EQ(g.why(), "jumped again");
	for (int i = 0; i < 2; i++)
		EXPECT_EQ(g.check(true, ""), ClockGate::Change::kNone);
	EXPECT_EQ(g.check(true, ""), ClockGate::Change::kResumed);
}

TEST(LumendClock, GateOfOne)
{
	ClockGate g(1);
	EXPECT_EQ(g.check(true, ""), ClockGate::Change::kResumed);
	EXPECT_EQ(g.check(false, "x"), ClockGate::Change::kQuiet);
	EXPECT_EQ(g.check(true, ""), ClockGate::Change::kResumed);
}

TEST(LumendClock, Opening)
{
	Clock tai = Clock::tai(-1);
	EXPECT_FALSE(tai.is_phc());
	EXPECT_EQ(tai.name(), "CLOCK_TAI");
	EXPECT_GT(tai.now(), 1'500'000'000'000'000'000ull);
	uint64_t t = tai.now() + 200'000;
	tai.sleep_until(t);
	EXPECT_GE(tai.now(), t);
	try {
		Clock::phc("/dev/ptp99", 100);
		FAIL() << "opened /dev/ptp99";
	} catch (const Error &e) {
		EXPECT_NE(std::string(e.what()).find("/dev/ptp99"), std::string::npos) << e.what();
	}
	// a file that is no clock
	EXPECT_THROW(Clock::phc("/dev/null", 100), Error);
}

} // namespace
