// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/sched_change_test.cpp - a schedule change at an instant: the bank a
// party follows at each time (lumen_change_bank, include/lumen/optical.h),
// each party's steps (userspace/sched/change.h) and their refusals, and the
// coordinator's two phases with parties that refuse or fail.
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "base/error.h"
#include "sched/change.h"
#include "sched/schedule.h"
#include "test_refusal.h"

namespace
{

using lumen::UsageError;
using namespace lumen::sched;

constexpr uint64_t kT0 = 1'000'000'000'000ull;

Schedule rr(uint64_t version, uint64_t slot_ns = 100'000)
{
	Timing t;
	t.slot_ns = slot_ns;
	t.guard_ns = slot_ns / 10;
	t.t0_ns = kT0;
	t.version = version;
	return round_robin(4, 1, false, t); // period 3
}

Banks attached(const Schedule &s)
{
	Banks b;
	b.bank[0] = bank_of(s, s.t0_ns);
	return b;
}

using lumen::test::refusal;

TEST(ChangeBank, EachStateAtEachSideOfTheInstant)
{
	lumen_sched_change c{};
	c.switch_ns = 500;
	c.bank = 1;
	EXPECT_EQ(lumen_change_bank(&c, 0), 1);
	EXPECT_EQ(lumen_change_bank(&c, 10'000), 1); // none: one schedule, whatever the time
	c.state = LUMEN_CHANGE_STAGED;
	EXPECT_EQ(lumen_change_bank(&c, 499), 1);
	EXPECT_EQ(lumen_change_bank(&c, 500), -1); // not committed: quiet from the instant on
	c.state = LUMEN_CHANGE_COMMITTED;
	EXPECT_EQ(lumen_change_bank(&c, 499), 1);
	EXPECT_EQ(lumen_change_bank(&c, 500), 0);
	c.state = 7; // garbage: never a bank after the instant
	EXPECT_EQ(lumen_change_bank(&c, 500), -1);
	c.bank = 6; // only the low bit counts
	c.state = LUMEN_CHANGE_NONE;
	EXPECT_EQ(lumen_change_bank(&c, 0), 0);
}

TEST(Change, StageCommitSettle)
{
	Banks b = attached(rr(1));
	uint64_t period = 300'000, now = kT0 + 10 * period + 5;
	uint64_t at = next_period_boundary(b.bank[0], now);
	EXPECT_EQ(at, kT0 + 11 * period);
	EXPECT_EQ(next_period_boundary(b.bank[0], at), at);
	EXPECT_EQ(next_period_boundary(b.bank[0], 3), kT0); // before t0: t0

	Banks s = stage(b, rr(2, 50'000), at, now);
	EXPECT_EQ(s.change.state, (uint32_t)LUMEN_CHANGE_STAGED);
	EXPECT_EQ(s.bank[1].version, 2u);
	EXPECT_EQ(s.bank[1].timing.t0_ns, at); // the new schedule starts at the instant
	EXPECT_EQ(s.bank[1].timing.slot_ns, 50'000u);
	EXPECT_EQ(in_force(s, at - 1), &s.bank[0]);
	EXPECT_EQ(in_force(s, at), nullptr);
	ChangeView v = view(s, at);
	EXPECT_TRUE(v.quiet);
	EXPECT_EQ(describe(v), "quiet (the change from version 1 was not committed here), change to version 2 at " +
				       std::to_string(at) + " ns TAI: staged");

	Banks c = commit(s, 2);
	EXPECT_EQ(commit(c, 2).change.state, (uint32_t)LUMEN_CHANGE_COMMITTED); // again: no error
	EXPECT_EQ(in_force(c, at)->version, 2u);
	EXPECT_EQ(in_force(c, at - 1)->version, 1u);
	EXPECT_EQ(settle(c, at - 1).change.state, (uint32_t)LUMEN_CHANGE_COMMITTED);
	Banks after = settle(c, at);
	EXPECT_EQ(after.change.state, (uint32_t)LUMEN_CHANGE_NONE);
	EXPECT_EQ(after.change.bank, 1u);
	EXPECT_EQ(describe(view(c, at)), "schedule version 2");

	// the next change goes into bank 0, at a boundary of version 2's period
	uint64_t at2 = next_period_boundary(after.bank[1], at + 1);
	EXPECT_EQ(at2, at + 150'000);
	Banks s2 = stage(c, rr(3), at2, at + 1); // settles first
	EXPECT_EQ(s2.change.bank, 1u);
	EXPECT_EQ(s2.bank[0].version, 3u);
}

TEST(Change, RefusalsChangeNothing)
{
	Banks b = attached(rr(4));
	uint64_t now = kT0 + 1'000'000, at = next_period_boundary(b.bank[0], now + 1);
	EXPECT_NE(refusal([&] { stage(b, rr(5), now, now); }).find("not in the future"), std::string::npos);
	EXPECT_NE(refusal([&] { stage(b, rr(5), at + 1, now); }).find("not a period boundary"), std::string::npos);
	EXPECT_NE(refusal([&] { stage(b, rr(4), at, now); }).find("version 4 is not above the one in force, 4"),
		  std::string::npos);
	EXPECT_NE(refusal([&] { commit(b, 5); }).find("no change is staged"), std::string::npos);
	EXPECT_NE(refusal([&] { abort(b, 5); }).find("no change is staged"), std::string::npos);
	Schedule bad = rr(5);
	bad.guard_ns = bad.slot_ns;
	EXPECT_NE(refusal([&] { stage(b, bad, at, now); }), "");

	Banks s = stage(b, rr(5), at, now);
	EXPECT_NE(refusal([&] { stage(s, rr(6), at, now); }).find("under way"), std::string::npos);
	EXPECT_NE(refusal([&] { replace(s, rr(6), now); }).find("under way"), std::string::npos);
	EXPECT_NE(refusal([&] { commit(s, 6); }).find("to version 5, not 6"), std::string::npos);
	EXPECT_EQ(abort(s, 5).change.state, (uint32_t)LUMEN_CHANGE_NONE);
	EXPECT_EQ(in_force(abort(s, 5), at + 1)->version, 4u); // the old schedule stays
	Banks c = commit(s, 5);
	EXPECT_NE(refusal([&] { abort(c, 5); }).find("cannot be aborted"), std::string::npos);
}

TEST(Change, ReplaceSwapsBanksAtOnce)
{
	Banks b = attached(rr(1));
	Banks r = replace(b, rr(9), kT0);
	EXPECT_EQ(r.change.bank, 1u);
	EXPECT_EQ(in_force(r, kT0)->version, 9u);
	EXPECT_EQ(replace(r, rr(10), kT0).change.bank, 0u);
}

TEST(Change, TablePeriod)
{
	Schedule s = rr(1); // 4 nodes, period 3
	EXPECT_EQ(table_period(s, 4, 0), 32u); // room for k * n / d up to k = 8
	EXPECT_EQ(table_period(s, 4, 3), 3u);
	EXPECT_NE(refusal([&] { table_period(s, 4, 2); }).find("less than the schedule's period"), std::string::npos);
	EXPECT_NE(refusal([&] { table_period(s, 1u << 20, 0); }).find("over the tables' limit"), std::string::npos);
	EXPECT_EQ(table_period(s, 1u << 18, 0), 8u); // 2^22 entries / 2 banks / 2^18 a slot
}

// A party of the coordinator that records what it was told.
struct Fake {
	explicit Fake(std::string n) : name(std::move(n))
	{
	}
	std::string name;
	bool refuse_stage = false, fail_commit = false;
	std::vector<std::string> log;

	ChangeParty party()
	{
		return {name,
			[this](const Schedule &s, uint64_t at) {
				if (refuse_stage)
					throw UsageError("no room");
				log.push_back("stage " + std::to_string(s.version) + "@" + std::to_string(at));
			},
			[this](uint64_t v) {
				if (fail_commit)
					throw std::runtime_error("unreachable");
				log.push_back("commit " + std::to_string(v));
			},
			[this](uint64_t v) { log.push_back("abort " + std::to_string(v)); }};
	}
};

TEST(RunChange, AllCommit)
{
	Fake a("a"), b("b");
	Schedule s = rr(2);
	s.t0_ns = 1000;
	ChangeOutcome o = run_change({a.party(), b.party()}, s, [] { return uint64_t(10); });
	EXPECT_EQ(a.log, (std::vector<std::string>{"stage 2@1000", "commit 2"}));
	EXPECT_EQ(b.log, a.log);
	EXPECT_TRUE(o.commit_failures.empty());
	EXPECT_EQ(o.switch_ns, 1000u);
}

TEST(RunChange, OneRefusesEveryoneAborts)
{
	Fake a("a"), b("b"), c("c");
	b.refuse_stage = true;
	Schedule s = rr(2);
	s.t0_ns = 1000;
	std::string why = refusal([&] {
		run_change({a.party(), b.party(), c.party()}, s, [] { return uint64_t(10); });
	});
	EXPECT_NE(why.find("b refused the change to version 2: no room (aborted everywhere)"), std::string::npos)
		<< why;
	EXPECT_EQ(a.log, (std::vector<std::string>{"stage 2@1000", "abort 2"}));
	EXPECT_TRUE(c.log.empty()); // never told
}

TEST(RunChange, TooLateAborts)
{
	Fake a("a");
	Schedule s = rr(2);
	s.t0_ns = 1000;
	std::string why = refusal([&] { run_change({a.party()}, s, [] { return uint64_t(1000); }); });
	EXPECT_NE(why.find("past its instant"), std::string::npos) << why;
	EXPECT_EQ(a.log, (std::vector<std::string>{"stage 2@1000", "abort 2"}));
}

TEST(RunChange, AFailedCommitIsReportedTheOthersSwitch)
{
	Fake a("a"), b("b");
	a.fail_commit = true;
	Schedule s = rr(2);
	s.t0_ns = 1000;
	ChangeOutcome o = run_change({a.party(), b.party()}, s, [] { return uint64_t(10); });
	EXPECT_EQ(o.commit_failures, (std::vector<std::string>{"a: unreachable"}));
	EXPECT_EQ(b.log, (std::vector<std::string>{"stage 2@1000", "commit 2"}));
}

} // namespace
