// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// include/lumen/optical_wire.h: the kernel gate's booking of a GSO/TSO
// burst (its segments' wire times, back to back, whole in one window), the
// gso_max_size that keeps a burst inside a window, the rotor switch's
// check of a frame's tail, and the gate's judgement of a stale lumend.
#include <gtest/gtest.h>

#include <cstdint>

#include "lumen/optical_wire.h"
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

// The segments a device makes of the skb, one by one: what the burst
// costs on the wire.
uint64_t segments_wire_ns(uint32_t len, uint32_t seg_size, uint32_t hdr, uint32_t rate)
{
	if (!seg_size || len <= hdr || len - hdr <= seg_size)
		return lumen_wire_ns(len, rate);
	uint64_t ns = 0;
	for (uint32_t left = len - hdr; left > 0;) {
		uint32_t p = left < seg_size ? left : seg_size;
		ns += lumen_wire_ns(hdr + p, rate);
		left -= p;
	}
	return ns;
}

TEST(OpticalWire, OneFrameIsItsWireTime)
{
	// 1500 bytes at 1 Gbit/s: (1500 + 24) * 8 ns
	EXPECT_EQ(lumen_burst_wire_ns(1500, 0, 0, 1000), 12192u);
	// a GSO skb that holds one segment's payload is one frame
	EXPECT_EQ(lumen_burst_wire_ns(1514, 1448, 66, 1000), lumen_wire_ns(1514, 1000));
}

TEST(OpticalWire, ATsoBurstBooksEverySegmentsHeadersAndFraming)
{
	// 64 KB of TCP payload in MSS-sized segments, 66 bytes of headers
	// (Ethernet, IPv4, TCP with timestamps): 45 segments, 44 full
	const uint32_t hdr = 66, mss = 1448, payload = 45 * mss, len = hdr + payload;
	uint64_t want = 45 * lumen_wire_ns(hdr + mss, 1000);
	EXPECT_EQ(lumen_burst_wire_ns(len, mss, hdr, 1000), want);
	// skb->len alone misses 44 headers and 44 framings: 44 * 90 bytes
	EXPECT_EQ(want - lumen_wire_ns(len, 1000), 44u * (66 + 24) * 8);
	// a short last segment
	EXPECT_EQ(lumen_burst_wire_ns(hdr + 2 * mss + 100, mss, hdr, 1000),
		  2 * lumen_wire_ns(hdr + mss, 1000) + lumen_wire_ns(hdr + 100, 1000));
}

TEST(OpticalWire, BurstMatchesItsSegmentsOneByOne)
{
	lumen::test::Rng rng(7);
	for (int i = 0; i < 20000; i++) {
		uint32_t hdr = 42 + (uint32_t)rng.below(100);
		uint32_t seg = 1 + (uint32_t)rng.below(9000);
		uint32_t len = 1 + (uint32_t)rng.below(65536);
		uint32_t rate = 1 + (uint32_t)rng.below(400000);
		ASSERT_EQ(lumen_burst_wire_ns(len, seg, hdr, rate), segments_wire_ns(len, seg, hdr, rate))
			<< "len " << len << " seg " << seg << " hdr " << hdr << " rate " << rate;
	}
}

TEST(OpticalWire, ABurstDepartsWholeInAWindowOrNever)
{
	// slots of 100 us, guard 10 us, margin 5 us: windows of 80 us
	lumen_slot_timing t = timing(0, 100000, 10000, 3);
	EXPECT_EQ(lumen_window_ns(&t, 5000), 80000u);
	EXPECT_EQ(lumen_window_ns(&t, 45000), 0u);
	// a 64 KB burst at 10 Gbit/s (~54 us) fits a window: from inside a
	// window with 30 us left it waits for the next connecting one (wait
	// 0 now, 2 after: the slot 3 slots on), whole
	uint64_t burst = lumen_burst_wire_ns(66 + 65160, 1448, 66, 10000);
	ASSERT_GT(burst, 30000u);
	ASSERT_LE(burst, 80000u);
	uint64_t dep = lumen_slot_departure(&t, 55000, 5000, burst, 0, 2);
	EXPECT_EQ(dep, 300000u + 5000u);
	EXPECT_LE(dep + burst, 300000u + 95000u);
	// at 1 Gbit/s it is ~540 us: longer than any window, never
	uint64_t slow = lumen_burst_wire_ns(66 + 65160, 1448, 66, 1000);
	EXPECT_GT(slow, lumen_window_ns(&t, 5000));
	EXPECT_EQ(lumen_slot_departure(&t, 0, 5000, slow, 0, 2), 0u);
}

TEST(OpticalWire, GsoCapKeepsEveryBurstInsideItsWindow)
{
	// a 80 us window at 1 Gbit/s carries 10 KB: far below 64 KB
	uint64_t cap = lumen_gso_cap_bytes(80000, 1000, 1500);
	EXPECT_GT(cap, 8000u);
	EXPECT_LT(cap, 10000u);
	EXPECT_EQ(lumen_gso_cap_bytes(100, 1000, 1500), 0u); // not even headers
	lumen::test::Rng rng(11);
	for (int i = 0; i < 20000; i++) {
		uint64_t window = 1000 + rng.below(2000000);
		uint32_t rate = 10 + (uint32_t)rng.below(400000);
		uint32_t mtu = 576 + (uint32_t)rng.below(9000 - 576);
		uint64_t c = lumen_gso_cap_bytes(window, rate, mtu);
		if (c < 200)
			continue;
		// the worst burst under the cap: any headers, TCP's segments
		// of mtu minus its IP and TCP headers
		uint32_t hdr = 54 + (uint32_t)rng.below(81); // 14 + 20..60 + 20..60
		uint32_t len = (uint32_t)(c > 65535 ? 65535 : c);
		if (len <= hdr)
			continue;
		uint32_t mss = mtu - (hdr - 14);
		ASSERT_LE(lumen_burst_wire_ns(len, mss, hdr, rate), window)
			<< "window " << window << " rate " << rate << " mtu " << mtu << " hdr " << hdr << " cap " << c;
	}
}

TEST(OpticalWire, TailMustLeaveBeforeTheGuard)
{
	// guard at the end: usable [0, 900) of each slot of 1000 ns
	lumen_slot_timing end = timing(0, 1000, 100, 3);
	lumen_slot_pos pos;
	ASSERT_EQ(lumen_slot_at(&end, 800, &pos), 0);
	ASSERT_TRUE(pos.usable);
	EXPECT_TRUE(lumen_slot_tail_fits(&end, &pos, 100)); // tail exactly at the guard
	EXPECT_FALSE(lumen_slot_tail_fits(&end, &pos, 101)); // one ns into it
	EXPECT_TRUE(lumen_slot_tail_fits(&end, &pos, 0));
	// guard at the start: usable [100, 1000); the tail reaches the next
	// slot's guard
	lumen_slot_timing start = timing(0, 1000, 100, 3, true);
	ASSERT_EQ(lumen_slot_at(&start, 1900, &pos), 0);
	ASSERT_TRUE(pos.usable);
	EXPECT_TRUE(lumen_slot_tail_fits(&start, &pos, 100));
	EXPECT_FALSE(lumen_slot_tail_fits(&start, &pos, 101));
	// what the gate books passes the switch's check: departure and tail in
	// the window whatever the frame
	lumen::test::Rng rng(3);
	for (int i = 0; i < 20000; i++) {
		const lumen_slot_timing &t = rng.below(2) ? start : end;
		uint64_t wire = 1 + rng.below(900), now = rng.below(100000);
		uint64_t dep = lumen_slot_departure(&t, now, 0, wire, 0, 0);
		ASSERT_NE(dep, 0u);
		ASSERT_EQ(lumen_slot_at(&t, dep, &pos), 0);
		ASSERT_TRUE(pos.usable);
		ASSERT_TRUE(lumen_slot_tail_fits(&t, &pos, wire)) << "dep " << dep << " wire " << wire;
	}
}

TEST(OpticalWire, StaleLumend)
{
	const uint64_t s = 1000000000ull, limit = 100000000ull;
	EXPECT_FALSE(lumen_osched_stale(5 * s, 0, 0)); // no lumend: never
	EXPECT_FALSE(lumen_osched_stale(5 * s, 4 * s, 0));
	EXPECT_TRUE(lumen_osched_stale(5 * s, 0, limit)); // never published
	EXPECT_FALSE(lumen_osched_stale(5 * s, 5 * s - limit, limit)); // at the limit
	EXPECT_TRUE(lumen_osched_stale(5 * s, 5 * s - limit - 1, limit)); // past it
	EXPECT_FALSE(lumen_osched_stale(5 * s, 5 * s + limit, limit)); // a clock ahead is news
}

} // namespace
