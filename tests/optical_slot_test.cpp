// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// include/lumen/optical.h: where a time falls in a slot schedule, the
// usable windows, wire times, the rotor switch's verdict, and the departure
// time of a frame, checked against a brute-force walk over the slots.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "lumen/optical.h"
#include "slot_waits_reference.h"
#include "test_rng.h"

namespace
{

lumen_slot_timing timing(uint64_t t0, uint64_t slot, uint64_t guard, uint32_t period, bool at_start = false)
{
	lumen_slot_timing t{};
	t.t0_ns = t0;
	t.slot_ns = slot;
	t.guard_ns = guard;
	t.period = period;
	t.guard_at_start = at_start;
	return t;
}

TEST(OpticalSlot, RefusesInvalidTimings)
{
	lumen_slot_timing good = timing(0, 100, 10, 4);
	EXPECT_EQ(lumen_slot_timing_valid(&good), 0);
	for (const lumen_slot_timing &t : {timing(0, 0, 0, 4), timing(0, 100, 100, 4), timing(0, 100, 10, 0),
					   timing(0, 100, 10, LUMEN_SLOT_MAX_PERIOD + 1)}) {
		lumen_slot_pos pos;
		__u64 open, close;
		EXPECT_EQ(lumen_slot_timing_valid(&t), -1);
		EXPECT_EQ(lumen_slot_at(&t, 1000, &pos), -1);
		EXPECT_EQ(lumen_slot_window(&t, 1, 0, &open, &close), -1);
		EXPECT_EQ(lumen_slot_departure(&t, 1000, 0, 1, 0, 0), 0u);
	}
	lumen_slot_timing bad = timing(0, 100, 10, 4);
	bad.guard_at_start = 2;
	EXPECT_EQ(lumen_slot_timing_valid(&bad), -1);
}

TEST(OpticalSlot, WhereATimeFalls)
{
	lumen_slot_timing t = timing(1000, 100, 10, 3);
	lumen_slot_pos pos;

	EXPECT_EQ(lumen_slot_at(&t, 999, &pos), -1); /* not begun */
	ASSERT_EQ(lumen_slot_at(&t, 1000, &pos), 0);
	EXPECT_EQ(pos.slot, 0u);
	EXPECT_EQ(pos.in_period, 0u);
	EXPECT_EQ(pos.offset_ns, 0u);
	EXPECT_EQ(pos.usable, 1u);
	ASSERT_EQ(lumen_slot_at(&t, 1000 + 4 * 100 + 89, &pos), 0);
	EXPECT_EQ(pos.slot, 4u);
	EXPECT_EQ(pos.in_period, 1u);
	EXPECT_EQ(pos.usable, 1u);
	ASSERT_EQ(lumen_slot_at(&t, 1000 + 4 * 100 + 90, &pos), 0); /* the guard ends the slot */
	EXPECT_EQ(pos.usable, 0u);
	t.guard_at_start = 1;
	ASSERT_EQ(lumen_slot_at(&t, 1000 + 4 * 100 + 9, &pos), 0);
	EXPECT_EQ(pos.usable, 0u);
	ASSERT_EQ(lumen_slot_at(&t, 1000 + 4 * 100 + 10, &pos), 0);
	EXPECT_EQ(pos.usable, 1u);
	ASSERT_EQ(lumen_slot_at(&t, UINT64_MAX, &pos), 0); /* the end of time is a slot too */
	EXPECT_EQ(pos.slot, (UINT64_MAX - 1000) / 100);
}

TEST(OpticalSlot, WindowsAndMargins)
{
	lumen_slot_timing t = timing(1000, 100, 10, 3);
	__u64 open, close;

	ASSERT_EQ(lumen_slot_window(&t, 2, 0, &open, &close), 0);
	EXPECT_EQ(open, 1200u);
	EXPECT_EQ(close, 1290u);
	ASSERT_EQ(lumen_slot_window(&t, 2, 5, &open, &close), 0);
	EXPECT_EQ(open, 1205u);
	EXPECT_EQ(close, 1285u);
	t.guard_at_start = 1;
	ASSERT_EQ(lumen_slot_window(&t, 2, 5, &open, &close), 0);
	EXPECT_EQ(open, 1215u);
	EXPECT_EQ(close, 1295u);
	EXPECT_EQ(lumen_slot_window(&t, 2, 44, &open, &close), 0); /* 2 ns left */
	EXPECT_EQ(lumen_slot_window(&t, 2, 45, &open, &close), -1); /* margins eat the window */
	/* a slot that would end beyond 2^64 ns */
	uint64_t last = (UINT64_MAX - 1000) / 100;
	EXPECT_EQ(lumen_slot_window(&t, last - 1, 0, &open, &close), 0);
	EXPECT_EQ(lumen_slot_window(&t, last, 0, &open, &close), -1);
	EXPECT_EQ(lumen_slot_window(&t, UINT64_MAX, 0, &open, &close), -1);
}

TEST(OpticalSlot, WireTime)
{
	EXPECT_EQ(lumen_wire_ns(1500 + 14, 10'000), 1231u); /* (1514 + 24) * 8 / 10 Gbit/s = 1230.4, rounded up */
	EXPECT_EQ(lumen_wire_ns(64, 100'000), 8u); /* 88 * 8 / 100 = 7.04 -> 8 */
	EXPECT_EQ(lumen_wire_ns(64, 0), 0u);
	EXPECT_EQ(lumen_wire_ns(UINT32_MAX, 1), ((uint64_t)UINT32_MAX + 24) * 8000);
}

TEST(OpticalSlot, RotorVerdict)
{
	lumen_slot_timing t = timing(0, 100, 10, 3);
	lumen_slot_pos pos;
	ASSERT_EQ(lumen_slot_at(&t, 50, &pos), 0);
	EXPECT_EQ(lumen_rotor_check(&pos, 1, 2, 2), LUMEN_ROTOR_FORWARD);
	EXPECT_EQ(lumen_rotor_check(&pos, 1, 2, 3), LUMEN_ROTOR_WRONG_SLOT);
	EXPECT_EQ(lumen_rotor_check(&pos, 1, 1, 1), LUMEN_ROTOR_WRONG_SLOT); /* an idle uplink */
	ASSERT_EQ(lumen_slot_at(&t, 95, &pos), 0);
	EXPECT_EQ(lumen_rotor_check(&pos, 1, 2, 2), LUMEN_ROTOR_GUARD);
}

// The earliest start >= now of a frame of `wire` ns inside a usable window
// (shrunk by margin) of a slot whose bit is set in `open` (by slot of the
// period), found by walking the slots one by one; 0 when there is none
// within two periods.
uint64_t walk(const lumen_slot_timing &t, const std::vector<bool> &open, uint64_t now, uint64_t margin, uint64_t wire)
{
	if (now < t.t0_ns)
		return 0;
	uint64_t k = (now - t.t0_ns) / t.slot_ns;
	for (uint64_t s = k; s < k + 2ull * t.period + 2; s++) {
		if (!open[s % t.period])
			continue;
		uint64_t start = t.t0_ns + s * t.slot_ns + (t.guard_at_start ? t.guard_ns : 0);
		uint64_t o = start + margin, c = start + (t.slot_ns - t.guard_ns) - margin;
		if (o >= c || wire > c - o)
			return 0;
		uint64_t go = now > o ? now : o;
		if (go + wire <= c)
			return go;
	}
	return 0;
}

TEST(OpticalSlot, DepartureMatchesAWalkOverTheSlots)
{
	lumen::test::Rng rng(42);
	for (int round = 0; round < 200'000; round++) {
		uint32_t period = (uint32_t)rng.range(1, 12);
		uint64_t slot = rng.range(2, 1000), guard = rng.range(0, slot - 1);
		lumen_slot_timing t = timing(rng.range(0, 5000), slot, guard, period, rng.below(2));
		std::vector<bool> open(period);
		for (uint32_t s = 0; s < period; s++)
			open[s] = rng.below(3) == 0;
		std::vector<uint32_t> w = lumen::test::slot_waits(open);
		uint64_t now = rng.range(t.t0_ns >= 100 ? t.t0_ns - 100 : 0, t.t0_ns + 20 * slot);
		uint64_t margin = rng.range(0, (slot - guard) / 2 + 2), wire = rng.range(0, slot);
		lumen_slot_pos pos;
		uint32_t now_w = LUMEN_SLOT_NEVER, next_w = LUMEN_SLOT_NEVER;
		if (lumen_slot_at(&t, now, &pos) == 0) {
			now_w = w[pos.in_period];
			next_w = w[(pos.in_period + 1) % period];
		}
		uint64_t want = walk(t, open, now, margin, wire);
		uint64_t got = lumen_slot_departure(&t, now, margin, wire, now_w, next_w);
		ASSERT_EQ(got, want) << "round " << round << ": t0 " << t.t0_ns << " slot " << slot << " guard "
				     << guard << (t.guard_at_start ? " at start" : " at end") << " period " << period
				     << " now " << now << " margin " << margin << " wire " << wire;
	}
}

TEST(OpticalSlot, DepartureRefusesWhatNeverFits)
{
	lumen_slot_timing t = timing(0, 100, 10, 4);
	EXPECT_EQ(lumen_slot_departure(&t, 50, 0, 91, 0, 0), 0u); /* longer than a window */
	EXPECT_EQ(lumen_slot_departure(&t, 50, 0, 10, LUMEN_SLOT_NEVER, 0), 0u);
	EXPECT_EQ(lumen_slot_departure(&t, 50, 0, 10, 4, 0), 0u); /* a wait of a whole period is no wait */
	EXPECT_EQ(lumen_slot_departure(&t, 50, 0, 10, 0, 0), 50u);
	EXPECT_EQ(lumen_slot_departure(&t, 85, 0, 10, 0, 0), 100u); /* does not fit: the next slot */
	EXPECT_EQ(lumen_slot_departure(&t, 85, 0, 10, 0, 2), 300u);
	EXPECT_EQ(lumen_slot_departure(&t, 85, 0, 10, 1, 0), 100u);
	EXPECT_EQ(lumen_slot_departure(&t, UINT64_MAX - 5, 0, 1, 0, 0), 0u); /* past the end of time */
}

} // namespace
