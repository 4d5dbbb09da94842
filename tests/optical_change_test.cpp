// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// include/lumen/optical.h: a sender's departure while a schedule change may
// be under way (lumen_change_lookup, lumen_change_departure: the kernel
// gate's decision, bpf/optical_gate.bpf.c), checked against a walk that
// knows nothing of banks, waits or crossings: it lists the times a frame
// could first leave at (from when it is booked, each window's opening, the
// instant) and takes the earliest at which the frame is on the wire under
// one schedule only, start to end, inside a window of a slot that connects
// the pair. Many schedules of either shape on each side of a change
// (periods and slots of different lengths, the guard at the start or the
// end), changes at a period boundary or not, none, staged or committed,
// bases before, around and after the instant, frames of any length,
// margins.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "lumen/optical.h"
#include "slot_waits_reference.h"
#include "test_rng.h"

namespace
{

// One bank as the walk sees it: the timing, and which slots of the period
// connect this host to the destination.
struct Bank {
	lumen_slot_timing t{};
	std::vector<bool> open;
};

struct Outcome {
	lumen_gate_verdict verdict;
	uint64_t dep;
	bool operator==(const Outcome &o) const
	{
		return verdict == o.verdict && (verdict != LUMEN_GATE_DEPART || dep == o.dep);
	}
};

std::ostream &operator<<(std::ostream &os, const Outcome &o)
{
	static const char *const names[] = {"depart", "never", "quiet"};
	os << names[o.verdict];
	if (o.verdict == LUMEN_GATE_DEPART)
		os << " at " << o.dep;
	return os;
}

// Whether a frame on the wire over [d, d + wire] is inside a usable window
// (shrunk by margin) of a slot of b that connects the pair.
bool fits(const Bank &b, uint64_t d, uint64_t margin, uint64_t wire)
{
	const lumen_slot_timing &t = b.t;
	if (d < t.t0_ns)
		return false;
	uint64_t k = (d - t.t0_ns) / t.slot_ns;
	if (!b.open[k % t.period])
		return false;
	uint64_t start = t.t0_ns + k * t.slot_ns + (t.guard_at_start ? t.guard_ns : 0);
	uint64_t usable = t.slot_ns - t.guard_ns;
	if (2 * margin >= usable)
		return false;
	return d >= start + margin && d + wire <= start + usable - margin;
}

// The openings of b's connecting windows from the slot `from` falls in,
// over two periods and two slots (a frame that fits no window among them
// fits none: the schedule repeats).
void openings(const Bank &b, uint64_t from, uint64_t margin, std::vector<uint64_t> *out)
{
	const lumen_slot_timing &t = b.t;
	if (from < t.t0_ns)
		return;
	uint64_t k = (from - t.t0_ns) / t.slot_ns;
	for (uint64_t s = k; s < k + 2ull * t.period + 2; s++)
		if (b.open[s % t.period])
			out->push_back(t.t0_ns + s * t.slot_ns + (t.guard_at_start ? t.guard_ns : 0) + margin);
}

// The walk. The schedule in force over a frame's time on the wire: the old
// one when it starts before the instant and is off the wire by then, the
// new one (committed) when it starts at or after it; none when it straddles
// the instant or, staged, starts at or after it. A schedule booked from
// before its t0 carries nothing (lumen_slot_departure's contract): the old
// one from base, the new one from the later of base and the instant. Times
// start at 1 ns: a departure of 0 is optical.h's "never".
Outcome walk(const lumen_sched_change &c, const Bank banks[2], uint64_t base, uint64_t margin, uint64_t wire)
{
	const Bank &old = banks[c.bank & 1], &neu = banks[(c.bank & 1) ^ 1];
	const bool change = c.state != LUMEN_CHANGE_NONE, committed = c.state == LUMEN_CHANGE_COMMITTED;
	const uint64_t new_from = std::max<uint64_t>(base, c.switch_ns);
	const bool old_begun = base >= old.t.t0_ns, new_begun = new_from >= neu.t.t0_ns;

	std::vector<uint64_t> times{base};
	if (change)
		times.push_back(c.switch_ns);
	if (old_begun)
		openings(old, base, margin, &times);
	if (change && committed && new_begun)
		openings(neu, new_from, margin, &times);
	std::sort(times.begin(), times.end());
	for (uint64_t d : times) {
		if (d < base)
			continue;
		if (!change || (d < c.switch_ns && d + wire <= c.switch_ns)) {
			if (old_begun && fits(old, d, margin, wire))
				return {LUMEN_GATE_DEPART, d};
		} else if (d >= c.switch_ns && committed) {
			if (new_begun && fits(neu, d, margin, wire))
				return {LUMEN_GATE_DEPART, d};
		}
	}
	// nothing fits before the instant of a change not committed: what
	// might after it is not this host's to know
	return {change && !committed ? LUMEN_GATE_QUIET : LUMEN_GATE_NEVER, 0};
}

// What a gate does: lookup, its tables, departure (bpf/optical_gate.bpf.c
// looks its maps up where lumen_change_lookup says).
Outcome gate(const lumen_sched_change &c, const Bank banks[2], uint64_t base, uint64_t margin, uint64_t wire)
{
	lumen_sched_bank sb[2]{};
	std::vector<uint32_t> w[2];
	for (int i = 0; i < 2; i++) {
		sb[i].timing = banks[i].t;
		w[i] = lumen::test::slot_waits(banks[i].open);
	}
	lumen_change_query q;
	lumen_change_lookup(&c, sb, base, &q);
	for (int i = 0; i < 2; i++) {
		if (!q.need[i])
			continue;
		EXPECT_LT(q.now[i], w[q.bank[i]].size());
		EXPECT_LT(q.next[i], w[q.bank[i]].size());
		q.wait_now[i] = w[q.bank[i]][q.now[i]];
		q.wait_next[i] = w[q.bank[i]][q.next[i]];
	}
	__u64 dep = 0;
	lumen_gate_verdict v = lumen_change_departure(sb, margin, wire, &q, &dep);
	return {v, v == LUMEN_GATE_DEPART ? dep : 0};
}

Bank bank(uint64_t t0, uint64_t slot, uint64_t guard, uint32_t period, bool at_start, std::vector<bool> open)
{
	Bank b;
	b.t.t0_ns = t0;
	b.t.slot_ns = slot;
	b.t.guard_ns = guard;
	b.t.period = period;
	b.t.guard_at_start = at_start;
	b.open = std::move(open);
	return b;
}

lumen_sched_change change(uint32_t state, uint32_t bank, uint64_t switch_ns)
{
	lumen_sched_change c{};
	c.state = state;
	c.bank = bank;
	c.switch_ns = switch_ns;
	return c;
}

// The cases by hand. Old (bank 0): 100 ns slots, guard 10 at the end,
// period 2, the pair connected in slot 0: windows [0, 90), [200, 290)...
// New (bank 1), from the instant at 200: 50 ns slots, guard 5 at the
// start, period 3, connected in slot 1: windows [255, 300), [405, 450)...
TEST(OpticalChange, TheCasesByHand)
{
	Bank b[2] = {bank(0, 100, 10, 2, false, {true, false}), bank(200, 50, 5, 3, true, {false, true, false})};
	lumen_sched_change none = change(LUMEN_CHANGE_NONE, 0, 200), staged = change(LUMEN_CHANGE_STAGED, 0, 200),
			   committed = change(LUMEN_CHANGE_COMMITTED, 0, 200);
	const Outcome at50{LUMEN_GATE_DEPART, 50}, at200{LUMEN_GATE_DEPART, 200}, at255{LUMEN_GATE_DEPART, 255},
		at400{LUMEN_GATE_DEPART, 400}, at405{LUMEN_GATE_DEPART, 405}, quiet{LUMEN_GATE_QUIET, 0},
		never{LUMEN_GATE_NEVER, 0};
	// off the wire before the instant: the old schedule, whatever the change
	for (const lumen_sched_change &c : {none, staged, committed})
		EXPECT_EQ(gate(c, b, 50, 0, 40), at50);
	// does not fit what is left of the window: the next old one is at the
	// instant, so the new schedule's (committed), quiet (staged), the old
	// one's (no change)
	EXPECT_EQ(gate(none, b, 85, 0, 10), at200);
	EXPECT_EQ(gate(staged, b, 85, 0, 10), quiet);
	EXPECT_EQ(gate(committed, b, 85, 0, 10), at255);
	// at or after the instant: the new schedule, or quiet
	EXPECT_EQ(gate(committed, b, 200, 0, 10), at255);
	EXPECT_EQ(gate(committed, b, 296, 0, 10), at405);
	EXPECT_EQ(gate(staged, b, 200, 0, 10), quiet);
	// longer than a new window (45 ns) but not an old one (90 ns)
	EXPECT_EQ(gate(committed, b, 85, 0, 60), never);
	EXPECT_EQ(gate(none, b, 85, 0, 60), at200);
	// the bank bit says which is old: from bank 1 (windows [255, 300),
	// [405, 450)...) to bank 0 ([200, 290), [400, 490)...)
	EXPECT_EQ(gate(change(LUMEN_CHANGE_COMMITTED, 1, 400), b, 210, 0, 10), at255);
	EXPECT_EQ(gate(change(LUMEN_CHANGE_COMMITTED, 1, 300), b, 296, 0, 10), at400);
	// the walk agrees with every one of them
	for (const lumen_sched_change &c : {none, staged, committed})
		for (uint64_t base : {1, 50, 85, 89, 90, 195, 199, 200, 250, 296, 1000})
			for (uint64_t wire : {0, 10, 40, 45, 46, 60, 90, 91})
				EXPECT_EQ(gate(c, b, base, 0, wire), walk(c, b, base, 0, wire))
					<< "state " << c.state << " base " << base << " wire " << wire;
}

// How the departures fell, so that the test shows it reached each branch.
struct Coverage {
	uint64_t none = 0, old_before = 0, crossed_to_new = 0, after_to_new = 0, staged_quiet_crossing = 0,
		 staged_quiet_after = 0, never_committed = 0;
};

TEST(OpticalChange, DecisionMatchesAWalkOverTheSlots)
{
	lumen::test::Rng rng(29);
	Coverage cov;
	for (int round = 0; round < 200'000; round++) {
		Bank b[2];
		for (Bank &k : b) {
			uint32_t period = (uint32_t)rng.range(1, 9);
			uint64_t slot = rng.range(2, 1000), guard = rng.range(0, slot - 1);
			k = bank(0, slot, guard, period, rng.below(2), std::vector<bool>(period));
			for (uint32_t s = 0; s < period; s++)
				k.open[s] = rng.below(3) == 0;
		}
		uint32_t old = (uint32_t)rng.below(2);
		Bank &o = b[old], &n = b[old ^ 1];
		o.t.t0_ns = rng.range(1, 5000);
		// the instant: mostly a period boundary of the old schedule
		uint64_t operiod = o.t.slot_ns * o.t.period;
		uint64_t sw = o.t.t0_ns + rng.range(0, 4) * operiod;
		if (rng.chance(15))
			sw = o.t.t0_ns + rng.range(0, 4 * operiod);
		// the new schedule's t0: the instant (lumend's), one or more of
		// its slots before it, or rarely after it (it carries nothing
		// before it has begun)
		n.t.t0_ns = sw;
		if (rng.chance(20))
			n.t.t0_ns = sw - std::min<uint64_t>(sw - 1, rng.range(1, 3) * n.t.slot_ns);
		else if (rng.chance(3))
			n.t.t0_ns = sw + rng.range(1, n.t.slot_ns);
		uint32_t state = (uint32_t)rng.below(3);
		lumen_sched_change c = change(state, old | (uint32_t)rng.below(2) << 1, sw); // only the low bit counts
		// the base: before the old t0, before, around or after the instant
		uint64_t base;
		switch (rng.below(5)) {
		case 0:
			base = rng.range(o.t.t0_ns > 100 ? o.t.t0_ns - 100 : 1, o.t.t0_ns + operiod);
			break;
		case 1:
			base = rng.range(sw > 3 * operiod ? sw - 3 * operiod : 1, sw);
			break;
		case 2:
			base = rng.range(sw > 2 * o.t.slot_ns ? sw - 2 * o.t.slot_ns : 1, sw + 2 * n.t.slot_ns);
			break;
		case 3:
			base = sw + rng.range(0, 3 * n.t.slot_ns * n.t.period);
			break;
		default:
			base = rng.range(1, sw + 5000);
		}
		uint64_t margin =
			rng.range(0, std::max(o.t.slot_ns - o.t.guard_ns, n.t.slot_ns - n.t.guard_ns) / 2 + 2);
		uint64_t wire = rng.range(0, std::max(o.t.slot_ns, n.t.slot_ns));
		if (rng.chance(20))
			wire = rng.range(0, 10);
		Outcome want = walk(c, b, base, margin, wire);
		Outcome got = gate(c, b, base, margin, wire);
		ASSERT_EQ(got, want) << "round " << round << ": state " << state << " old bank " << old << " instant "
				     << sw << " base " << base << " margin " << margin << " wire " << wire
				     << "\n  old: t0 " << o.t.t0_ns << " slot " << o.t.slot_ns << " guard "
				     << o.t.guard_ns << (o.t.guard_at_start ? " at start" : " at end") << " period "
				     << o.t.period << "\n  new: t0 " << n.t.t0_ns << " slot " << n.t.slot_ns
				     << " guard " << n.t.guard_ns << (n.t.guard_at_start ? " at start" : " at end")
				     << " period " << n.t.period;
		if (state == LUMEN_CHANGE_NONE)
			cov.none++;
		else if (got.verdict == LUMEN_GATE_DEPART && got.dep < sw)
			cov.old_before++;
		else if (got.verdict == LUMEN_GATE_DEPART)
			(base < sw ? cov.crossed_to_new : cov.after_to_new)++;
		else if (got.verdict == LUMEN_GATE_QUIET)
			(base < sw ? cov.staged_quiet_crossing : cov.staged_quiet_after)++;
		else
			cov.never_committed++; // staged is never "never"; no change is counted above
	}
	// every branch, many times over
	const std::pair<const char *, uint64_t> seen[] = {{"none", cov.none},
							  {"old_before", cov.old_before},
							  {"crossed_to_new", cov.crossed_to_new},
							  {"after_to_new", cov.after_to_new},
							  {"staged_quiet_crossing", cov.staged_quiet_crossing},
							  {"staged_quiet_after", cov.staged_quiet_after},
							  {"never_committed", cov.never_committed}};
	for (const auto &[name, n] : seen) {
		EXPECT_GT(n, 1000u) << name;
		RecordProperty(name, std::to_string(n));
	}
}

// A frame that ends exactly at the instant is the old schedule's; one a
// nanosecond longer is not. (Only an instant inside an old window tells:
// at a slot boundary the window has closed by then.)
TEST(OpticalChange, OffTheWireByTheInstantToTheNanosecond)
{
	// old: one slot of 1000 ns, no guard, always connected; a change at
	// 950, inside its window; new: the same, never connected
	Bank b[2] = {bank(1, 1000, 0, 1, false, {true}), bank(950, 1000, 0, 1, false, {false})};
	lumen_sched_change c = change(LUMEN_CHANGE_COMMITTED, 0, 950);
	EXPECT_EQ(gate(c, b, 900, 0, 50), (Outcome{LUMEN_GATE_DEPART, 900}));
	EXPECT_EQ(gate(c, b, 900, 0, 51), (Outcome{LUMEN_GATE_NEVER, 0}));
	c.state = LUMEN_CHANGE_STAGED;
	EXPECT_EQ(gate(c, b, 900, 0, 51), (Outcome{LUMEN_GATE_QUIET, 0}));
	c.state = LUMEN_CHANGE_NONE; // no change: the window is the old one's to its end
	EXPECT_EQ(gate(c, b, 900, 0, 51), (Outcome{LUMEN_GATE_DEPART, 900}));
	// the old schedule's wait of 0 everywhere says nothing after the
	// instant: the new one's tables are looked up there
	lumen_sched_bank sb[2]{};
	sb[0].timing = b[0].t;
	sb[1].timing = b[1].t;
	lumen_change_query q;
	c.state = LUMEN_CHANGE_COMMITTED;
	lumen_change_lookup(&c, sb, 900, &q);
	EXPECT_EQ(q.need[0], 1u);
	EXPECT_EQ(q.bank[0], 0u);
	EXPECT_EQ(q.need[1], 1u);
	EXPECT_EQ(q.bank[1], 1u);
	EXPECT_EQ(q.from_ns[1], 950u);
	c.state = LUMEN_CHANGE_STAGED; // nothing of the new one is needed
	lumen_change_lookup(&c, sb, 900, &q);
	EXPECT_EQ(q.need[1], 0u);
	c.state = LUMEN_CHANGE_NONE;
	lumen_change_lookup(&c, sb, 5000, &q);
	EXPECT_EQ(q.need[0], 1u);
	EXPECT_EQ(q.bank[0], 0u);
	EXPECT_EQ(q.need[1], 0u);
	c.state = LUMEN_CHANGE_STAGED;
	lumen_change_lookup(&c, sb, 950, &q); // quiet: no lookup at all
	EXPECT_EQ(q.need[0], 0u);
	EXPECT_EQ(q.need[1], 0u);
}

} // namespace

// A change announced and never committed (include/lumen/optical.h: the
// coordinator died between the phases, or the commit was lost). The safe
// rule: nothing crosses the instant, and from the instant on the party is
// quiet however long ago it was: it never goes back to the old bank alone
// (the committed parties switched) nor on to the new one (an abort may
// have been lost). lumen_change_overdue only says how long nobody told it.
TEST(OpticalChange, AChangeNeverCommittedExpiresIntoQuiet)
{
	Bank b[2] = {bank(0, 100, 10, 2, false, {true, false}), bank(200, 50, 5, 3, true, {false, true, false})};
	const lumen_sched_change staged = change(LUMEN_CHANGE_STAGED, 0, 200);
	const Outcome quiet{LUMEN_GATE_QUIET, 0};
	// before the instant: the old bank, for what is off the wire by then
	EXPECT_EQ(lumen_change_bank(&staged, 199), 0);
	EXPECT_EQ(gate(staged, b, 50, 0, 40), (Outcome{LUMEN_GATE_DEPART, 50}));
	EXPECT_EQ(gate(staged, b, 85, 0, 10), quiet); // would cross: not booked
	// from the instant on: quiet, a nanosecond or an hour after it
	for (uint64_t t : {200ull, 201ull, 10'000ull, 3'600'000'000'000ull, ~0ull - 1}) {
		EXPECT_EQ(lumen_change_bank(&staged, t), -1) << t;
		EXPECT_EQ(gate(staged, b, t, 0, 10), quiet) << t;
	}
	// overdue: staged, and the instant more than the limit ago
	EXPECT_FALSE(lumen_change_overdue(&staged, 150, 100));
	EXPECT_FALSE(lumen_change_overdue(&staged, 200, 100));
	EXPECT_FALSE(lumen_change_overdue(&staged, 300, 100));
	EXPECT_TRUE(lumen_change_overdue(&staged, 301, 100));
	EXPECT_TRUE(lumen_change_overdue(&staged, 3'600'000'000'000ull, 100));
	for (uint32_t state : {LUMEN_CHANGE_NONE, LUMEN_CHANGE_COMMITTED}) {
		const lumen_sched_change c = change(state, 0, 200);
		EXPECT_FALSE(lumen_change_overdue(&c, 10'000, 100)) << state;
	}
	// the coordinator's word ends it whenever it comes: a late commit puts
	// the new bank in force at once, an abort the old
	const lumen_sched_change late = change(LUMEN_CHANGE_COMMITTED, 0, 200);
	EXPECT_EQ(lumen_change_bank(&late, 10'000), 1);
	const lumen_sched_change aborted = change(LUMEN_CHANGE_NONE, 0, 200);
	EXPECT_EQ(lumen_change_bank(&aborted, 10'000), 0);
}
