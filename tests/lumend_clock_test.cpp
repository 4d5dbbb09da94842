// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/lumend_clock_test.cpp - when lumend trusts its clock
// (userspace/lumend/clock.h): the verdict on an error bound, the jump
// detector against CLOCK_MONOTONIC, and the quiet/resume state machine fed
// a made-up sequence of checks; opening clocks that are not there;
// CLOCK_TAI against a PHC and the kernel's TAI offset, from a made-up source.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

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

// A made-up clock source: each TAI-PHC-TAI bracket i is widths[i] ns wide
// (cycled), the PHC read in its middle at phc_minus_tai plus skews[i] (a
// read that lands off the middle), and the kernel's word as given.
class FakeSource : public ClockSource
{
      public:
	std::vector<uint64_t> widths = {40};
	std::vector<int64_t> skews = {0};
	int64_t phc_minus_tai = 0;
	bool phc_readable = true;
	Timex tx = synced(0);
	Timex timex() const override
	{
		return tx;
	}
	bool tai(uint64_t *ns) const override
	{
		const size_t b = n_ / 2;
		*ns = kBase + b * 100'000 + (n_ % 2 ? widths[b % widths.size()] : 0);
		n_++;
		return true;
	}
	bool phc(uint64_t *ns) const override
	{
		const size_t b = n_ / 2; // between the bracket's two TAI reads
		*ns = (uint64_t)((int64_t)(kBase + b * 100'000 + widths[b % widths.size()] / 2) + phc_minus_tai +
				 skews[b % skews.size()]);
		return phc_readable;
	}

      private:
	static constexpr uint64_t kBase = 1'790'000'000'000'000'000; // a TAI time, ns
	mutable size_t n_ = 0;
};

// Brackets TAI, PHC, TAI: the narrowest wins, the PHC taken at its middle.
TEST(LumendClock, TaiPhcNarrowestBracket)
{
	FakeSource f;
	// three brackets: 10 us wide, 200 ns wide, 5 us wide; in the wide ones
	// the PHC read lands microseconds off their middle (a preemption)
	f.widths = {10'000, 200, 5000};
	f.skews = {4000, 0, -2000};
	f.phc_minus_tai = 1000;
	TaiPhc m = measure_tai_phc(f, 3);
	ASSERT_TRUE(m.ok);
	EXPECT_EQ(m.offset_ns, 1000); // PHC - TAI at the narrow bracket's middle
	EXPECT_EQ(m.uncertainty_ns, 100u);
	f.phc_readable = false;
	EXPECT_FALSE(measure_tai_phc(f, 3).ok);
}

// Issue 25 §3: with --phc, lumend counted slots on the PHC and judged only
// the PHC's bound, while the senders count on CLOCK_TAI. Now CLOCK_TAI is
// compared with the PHC at every check, and the hop is part of the bound.
TEST(LumendClock, PhcBoundIncludesClockTaiHop)
{
	CheckPlan plan;
	plan.phc = true;
	plan.stated_ns = 200; // --phc-error 200
	plan.compare_phc = true;
	plan.phc_name = "/dev/ptp7";
	FakeSource f;
	f.widths = {40};
	f.phc_minus_tai = 300; // CLOCK_TAI 300 ns behind the PHC
	ClockReading r = check_clock(f, plan, 1000);
	EXPECT_TRUE(r.ok) << r.why;
	EXPECT_TRUE(r.tai_phc_checked);
	EXPECT_EQ(r.tai_phc_offset_ns, 300);
	EXPECT_EQ(r.tai_phc_uncertainty_ns, 20u);
	EXPECT_EQ(r.phc_bound_ns, 200u);
	EXPECT_EQ(r.bound_ns, 200u + 300 + 20);
	// the same within a margin the PHC alone met, but not with the hop
	r = check_clock(f, plan, 400);
	EXPECT_FALSE(r.ok);
	EXPECT_NE(r.why.find("CLOCK_TAI, which senders count slots on, is -300 ns from /dev/ptp7"), std::string::npos)
		<< r.why;
	EXPECT_NE(r.why.find("phc2sys"), std::string::npos) << r.why;
	// CLOCK_TAI on UTC (the kernel's TAI offset 0): 37 s off, and why
	f.phc_minus_tai = 37'000'000'000;
	f.tx.tai_offset_s = 0;
	r = check_clock(f, plan, 1000);
	EXPECT_FALSE(r.ok);
	EXPECT_NE(r.why.find("the kernel's TAI offset is 0"), std::string::npos) << r.why;
	// a read delay alone can exceed the margin: a vague bracket is no proof
	f = FakeSource();
	f.widths = {3000};
	r = check_clock(f, plan, 1000);
	EXPECT_EQ(r.tai_phc_offset_ns, 0);
	EXPECT_EQ(r.bound_ns, 200u + 1500);
	EXPECT_FALSE(r.ok);
	// the PHC unreadable beside CLOCK_TAI: not trusted
	f.phc_readable = false;
	r = check_clock(f, plan, 1'000'000);
	EXPECT_FALSE(r.ok);
	EXPECT_NE(r.why.find("cannot be compared with /dev/ptp7"), std::string::npos) << r.why;
}

// ptp4l's readings: a follower of a grandmaster, offset `offset_ns`.
std::shared_ptr<Ptp4lBound> following(int64_t offset_ns)
{
	auto b = std::make_shared<Ptp4lBound>();
	TimeStatus st;
	st.master_offset_ns = offset_ns;
	st.ingress_ns = 1;
	st.gm_present = true;
	b->feed(st, "", 1'000'000'000);
	return b;
}

// Issue 25 §3: --ptp4l on CLOCK_TAI judged only ptp4l's offset (the PHC's to
// the master). The kernel's TAI offset of 0 (CLOCK_TAI reading UTC) now keeps
// it quiet, saying why; --tai-offset-0-ok lifts that; without a PHC to
// compare with, status says the hop was not checked.
TEST(LumendClock, Ptp4lOnTaiChecksTheTaiOffset)
{
	auto b = following(100);
	CheckPlan plan;
	plan.ptp4l = b.get();
	FakeSource f;
	ClockReading r = check_clock(f, plan, 1000);
	EXPECT_TRUE(r.ok) << r.why;
	EXPECT_EQ(r.bound_ns, 100u);
	EXPECT_FALSE(r.tai_phc_checked);
	EXPECT_NE(r.tai_phc_note.find("no PHC known"), std::string::npos) << r.tai_phc_note;
	f.tx.tai_offset_s = 0;
	r = check_clock(f, plan, 1000);
	EXPECT_FALSE(r.ok);
	EXPECT_NE(r.why.find("the kernel's TAI offset is 0"), std::string::npos) << r.why;
	EXPECT_NE(r.why.find("37 s"), std::string::npos) << r.why;
	plan.tai_offset_0_ok = true;
	EXPECT_TRUE(check_clock(f, plan, 1000).ok);
	// a stated bound on CLOCK_TAI (--clock-error) is not second-guessed
	CheckPlan stated;
	stated.stated_ns = 0;
	EXPECT_TRUE(check_clock(f, stated, 1000).ok);
	// ptp4l's own reason stays first when both fail
	auto lost = std::make_shared<Ptp4lBound>();
	lost->feed(std::nullopt, "ptp4l at /x is not there", 1);
	plan.tai_offset_0_ok = false;
	plan.ptp4l = lost.get();
	r = check_clock(f, plan, 1000);
	EXPECT_FALSE(r.ok);
	EXPECT_EQ(r.why.rfind("ptp4l at /x is not there", 0), 0u) << r.why;
	EXPECT_NE(r.why.find("and the kernel's TAI offset is 0"), std::string::npos) << r.why;
}

// --ptp4l on CLOCK_TAI with --tai-phc: phc2sys's hop is measured and added.
TEST(LumendClock, Ptp4lOnTaiWithItsPhc)
{
	auto b = following(-100);
	CheckPlan plan;
	plan.ptp4l = b.get();
	plan.compare_phc = true;
	plan.phc_name = "/dev/ptp3";
	FakeSource f;
	f.widths = {60};
	f.phc_minus_tai = -400; // CLOCK_TAI 400 ns ahead of the PHC (phc2sys lagging)
	ClockReading r = check_clock(f, plan, 1000);
	EXPECT_TRUE(r.ok) << r.why;
	EXPECT_EQ(r.tai_phc_offset_ns, -400);
	EXPECT_EQ(r.bound_ns, 100u + 400 + 30);
	f.phc_minus_tai = -2000;
	r = check_clock(f, plan, 1000);
	EXPECT_FALSE(r.ok);
	EXPECT_NE(r.why.find("is +2 us from /dev/ptp3"), std::string::npos) << r.why;
}

// The real path needs a PHC: where /dev/ptp0 exists, --phc reads CLOCK_TAI
// beside it through the dynamic POSIX clock.
TEST(LumendClock, RealPhcComparedWithTai)
{
	if (access("/dev/ptp0", R_OK) != 0)
		GTEST_SKIP() << "no readable /dev/ptp0 here: CLOCK_TAI against a real PHC is checked where one is";
	Clock c = Clock::phc("/dev/ptp0", 0);
	ClockReading r = c.check(1'000'000'000'000ull);
	EXPECT_TRUE(r.tai_phc_checked) << r.why;
	EXPECT_LT(r.tai_phc_uncertainty_ns, 1'000'000u);
}

} // namespace
