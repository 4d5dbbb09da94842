// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// lumen-dp's receive window (dpdk/transport/rx_window.h): cum, SACK and
// rwnd for in-order, reordered, duplicated, dropped and
// hostile PSNs, across the 2^32 wrap. The randomized suites replay traffic
// against a reference model that keeps the received PSNs (unwrapped to 64
// bits) in a std::set and recomputes everything from scratch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

#include "test_rng.h"
#include "transport/rx_window.h"

namespace
{

using lumen::dp::RxWindow;
using Arrival = RxWindow::Arrival;
using lumen::test::Rng;

// The reference: what the window must say, from first principles.
struct Model {
	uint32_t capacity;
	uint32_t base; // PSN of unwrapped position 0
	uint64_t cum = 0; // unwrapped
	std::set<uint64_t> got; // received, at or after cum

	Model(uint32_t cap, uint32_t first) : capacity(cap), base(first)
	{
	}
	uint32_t psn32(uint64_t p) const
	{
		return base + static_cast<uint32_t>(p);
	}
	uint32_t cum32() const
	{
		return psn32(cum);
	}
	Arrival on_data(uint32_t psn)
	{
		uint32_t d = psn - cum32();

		if (static_cast<int32_t>(d) < 0)
			return Arrival::kDuplicate;
		if (d >= capacity)
			return Arrival::kBeyond;
		uint64_t p = cum + d;

		if (!got.insert(p).second)
			return Arrival::kDuplicate;
		while (got.count(cum)) {
			got.erase(cum);
			cum++;
		}
		return Arrival::kNew;
	}
	uint64_t sack() const
	{
		uint64_t v = 0;

		for (uint32_t i = 0; i < 64; i++)
			if (got.count(cum + 1 + i))
				v |= 1ull << i;
		return v;
	}
	uint32_t rwnd() const
	{
		if (got.empty())
			return capacity;
		return capacity - static_cast<uint32_t>(*got.rbegin() + 1 - cum);
	}
};

void expect_same(const RxWindow &w, const Model &m, const char *where)
{
	ASSERT_EQ(w.cum(), m.cum32()) << where;
	ASSERT_EQ(w.sack(), m.sack()) << where;
	ASSERT_EQ(w.rwnd(), m.rwnd()) << where;
}

TEST(DpRxWindow, RefusesBadCapacities)
{
	for (uint32_t bad : {0u, 1u, 32u, 63u, 100u, 96u, 65537u, 131072u, 0x80000000u})
		EXPECT_THROW(RxWindow{bad}, std::invalid_argument) << bad;
	for (uint32_t good : {64u, 128u, 4096u, 65536u}) {
		RxWindow w(good);
		EXPECT_EQ(w.capacity(), good);
		EXPECT_EQ(w.rwnd(), good);
		EXPECT_EQ(w.cum(), 0u);
	}
}

TEST(DpRxWindow, InOrderAdvances)
{
	RxWindow w(64);
	w.reset(1000);
	for (uint32_t p = 1000; p < 1010; p++) {
		EXPECT_EQ(w.reorder_depth(p), 0u);
		EXPECT_EQ(w.on_data(p), Arrival::kNew);
		EXPECT_EQ(w.cum(), p + 1);
		EXPECT_EQ(w.sack(), 0u);
		EXPECT_EQ(w.rwnd(), 64u);
	}
	EXPECT_TRUE(w.received(999));
	EXPECT_TRUE(w.received(1009));
	EXPECT_FALSE(w.received(1010));
}

TEST(DpRxWindow, HoleThenFill)
{
	RxWindow w(64);
	w.reset(10);
	EXPECT_EQ(w.on_data(11), Arrival::kNew);
	EXPECT_EQ(w.on_data(12), Arrival::kNew);
	EXPECT_EQ(w.on_data(14), Arrival::kNew);
	EXPECT_EQ(w.cum(), 10u);
	EXPECT_EQ(w.sack(), 0b1011u); // 11, 12, 14
	EXPECT_EQ(w.rwnd(), 64u - 5); // 10..14 taken
	EXPECT_EQ(w.reorder_depth(14), 4u);
	EXPECT_EQ(w.on_data(10), Arrival::kNew);
	EXPECT_EQ(w.cum(), 13u);
	EXPECT_EQ(w.sack(), 0b1u); // 14 = cum + 1 + 0
	EXPECT_EQ(w.on_data(13), Arrival::kNew);
	EXPECT_EQ(w.cum(), 15u);
	EXPECT_EQ(w.sack(), 0u);
	EXPECT_EQ(w.rwnd(), 64u);
}

TEST(DpRxWindow, DuplicatesBehindAndBeyond)
{
	RxWindow w(128);
	w.reset(500);
	ASSERT_EQ(w.on_data(500), Arrival::kNew);
	ASSERT_EQ(w.on_data(503), Arrival::kNew);
	EXPECT_EQ(w.on_data(503), Arrival::kDuplicate);
	EXPECT_EQ(w.on_data(500), Arrival::kDuplicate); // behind cum
	EXPECT_EQ(w.on_data(1), Arrival::kDuplicate);
	EXPECT_EQ(w.on_data(501 + 128), Arrival::kBeyond); // cum + capacity
	EXPECT_EQ(w.on_data(501 + 127), Arrival::kNew); // the last PSN with room
	EXPECT_EQ(w.rwnd(), 0u);
	EXPECT_EQ(w.on_data(501 + 0x7FFFFFFFu), Arrival::kBeyond); // far ahead
	EXPECT_EQ(w.on_data(501 + 0x80000000u), Arrival::kDuplicate); // "behind" by serial order
	EXPECT_EQ(w.reorder_depth(499), 0u);
	EXPECT_EQ(w.cum(), 501u);
	w.on_data(501);
	w.on_data(502);
	EXPECT_EQ(w.cum(), 504u);
}

TEST(DpRxWindow, FullWindowSlidesWholeRing)
{
	// capacity - 1 PSNs above a hole, then the hole: cum runs over the
	// whole ring (every word, the wrap inside the ring) in one arrival
	for (uint32_t cap : {64u, 128u, 1024u}) {
		for (uint32_t first : {0u, 37u, 0xFFFFFFFFu - 70, 0xFFFFFFC0u}) {
			RxWindow w(cap);
			w.reset(first);
			for (uint32_t i = 1; i < cap; i++)
				ASSERT_EQ(w.on_data(first + i), Arrival::kNew);
			EXPECT_EQ(w.rwnd(), 0u);
			// bit 63 is cum + 64: beyond a 64-PSN window
			EXPECT_EQ(w.sack(), cap == 64 ? ~0ull >> 1 : ~0ull);
			EXPECT_EQ(w.on_data(first + cap), Arrival::kBeyond);
			ASSERT_EQ(w.on_data(first), Arrival::kNew);
			EXPECT_EQ(w.cum(), first + cap);
			EXPECT_EQ(w.rwnd(), cap);
			EXPECT_EQ(w.sack(), 0u);
			// the ring is clean: the next window starts empty
			for (uint32_t i = 0; i < cap; i++)
				ASSERT_FALSE(w.received(first + cap + i));
		}
	}
}

TEST(DpRxWindow, SackAcrossTheWrap)
{
	RxWindow w(64);
	w.reset(0xFFFFFFF0u);
	// cum at 2^32 - 16; PSNs 2^32 - 14 .. 2^32 - 1 and 0 .. 5 arrive
	for (uint32_t p = 0xFFFFFFF2u; p != 6; p++)
		ASSERT_EQ(w.on_data(p), Arrival::kNew);
	uint64_t want = 0;
	for (uint32_t i = 1; i <= 20; i++) // cum + 2 .. cum + 21
		want |= 1ull << i;
	EXPECT_EQ(w.sack(), want);
	EXPECT_EQ(w.rwnd(), 64u - 22);
	EXPECT_EQ(w.reorder_depth(3), 19u);
	w.on_data(0xFFFFFFF0u);
	EXPECT_EQ(w.cum(), 0xFFFFFFF1u);
	w.on_data(0xFFFFFFF1u);
	EXPECT_EQ(w.cum(), 6u);
	EXPECT_EQ(w.on_data(0xFFFFFFFFu), Arrival::kDuplicate);
	EXPECT_EQ(w.on_data(69), Arrival::kNew);
	EXPECT_EQ(w.on_data(70), Arrival::kBeyond);
}

TEST(DpRxWindow, HostilePsnsKeepItConsistent)
{
	// Every class of nonsense PSN, relative to wherever cum is, checked
	// against the model after each arrival.
	Rng rng(7);
	for (uint32_t cap : {64u, 256u}) {
		RxWindow w(cap);
		Model m(cap, 0xFFFFFF00u);
		w.reset(m.base);
		for (int i = 0; i < 20000; i++) {
			uint32_t c = w.cum(), psn;
			switch (rng.below(9)) {
			case 0:
				psn = static_cast<uint32_t>(rng.next());
				break;
			case 1:
				psn = c - 1 - static_cast<uint32_t>(rng.below(1000));
				break;
			case 2:
				psn = c + cap + static_cast<uint32_t>(rng.below(3));
				break;
			case 3:
				psn = c + 0x80000000u + static_cast<uint32_t>(rng.below(3)) - 1;
				break;
			case 4:
				psn = c + cap - 1;
				break;
			default: // mostly plausible traffic so that cum moves
				psn = c + static_cast<uint32_t>(rng.below(cap / 4));
				break;
			}
			ASSERT_EQ(w.reorder_depth(psn),
				  static_cast<int32_t>(psn - m.cum32()) < 0 ? 0u : psn - m.cum32());
			ASSERT_EQ(w.on_data(psn), m.on_data(psn)) << i;
			expect_same(w, m, "hostile");
		}
		EXPECT_GT(m.cum, 1000u); // it did move, across the wrap
	}
}

struct Traffic {
	uint32_t cap;
	uint64_t spread; // reordering: arrival key = index + [0, spread]
	unsigned drop_pct, dup_pct, hostile_pct;
};

// A stream of n PSNs with reordering, drops (resent later, as a sender's
// retransmission would be), duplicates and hostile PSNs, replayed into the
// window and the model; then a final in-order resend of everything still
// missing must take cum to the stream's end.
void replay(const Traffic &t, uint64_t seed, uint32_t first, uint64_t n)
{
	Rng rng(seed);
	RxWindow w(t.cap);
	Model m(t.cap, first);
	w.reset(first);

	std::vector<std::pair<uint64_t, int64_t>> arrivals; // key, PSN index (-1: hostile)
	for (uint64_t k = 0; k < n; k++) {
		uint64_t key = k * 4 + rng.below(t.spread * 4 + 1);
		if (rng.chance(t.drop_pct))
			key += 4 * (t.spread + t.cap / 2 + rng.below(t.cap)); // the resend
		arrivals.emplace_back(key, static_cast<int64_t>(k));
		if (rng.chance(t.dup_pct))
			arrivals.emplace_back(key + rng.below(4 * t.spread + 8), static_cast<int64_t>(k));
		if (rng.chance(t.hostile_pct))
			arrivals.emplace_back(key, -1);
	}
	std::stable_sort(arrivals.begin(), arrivals.end(),
			 [](const auto &a, const auto &b) { return a.first < b.first; });

	for (const auto &[key, idx] : arrivals) {
		uint32_t psn =
			idx < 0 ? w.cum() + static_cast<uint32_t>(rng.below(2) ? rng.next() : rng.below(2 * t.cap))
				: first + static_cast<uint32_t>(idx);
		uint32_t depth = w.reorder_depth(psn);
		ASSERT_EQ(depth, static_cast<int32_t>(psn - m.cum32()) < 0 ? 0u : psn - m.cum32());
		ASSERT_EQ(w.on_data(psn), m.on_data(psn)) << "key " << key;
		ASSERT_EQ(w.cum(), m.cum32());
		ASSERT_EQ(w.sack(), m.sack());
		ASSERT_EQ(w.rwnd(), m.rwnd());
	}
	// the sender's final sweep: everything from cum on, in order
	uint64_t stream_end = std::max<uint64_t>(n, m.got.empty() ? 0 : *m.got.rbegin() + 1);
	for (uint64_t p = m.cum; p < stream_end; p++) {
		Arrival want = m.on_data(m.psn32(p));
		ASSERT_EQ(w.on_data(m.psn32(p)), want);
	}
	expect_same(w, m, "after the sweep");
	EXPECT_EQ(w.cum(), first + static_cast<uint32_t>(stream_end));
}

TEST(DpRxWindow, RandomReorderMatchesModel)
{
	const Traffic cases[] = {
		{64, 0, 0, 0, 0}, // in order
		{64, 8, 0, 0, 0}, // mild reordering
		{64, 40, 3, 3, 0}, // reordering near the window, drops, duplicates
		{128, 300, 2, 5, 0}, // reordering beyond the window: kBeyond
		{1024, 200, 5, 5, 0},	{256, 50, 2, 2, 2}, // with hostile PSNs
		{65536, 5000, 1, 1, 1},
	};
	uint64_t seed = 100;
	for (const Traffic &t : cases) {
		for (uint32_t first : {0u, 0xFFFFFFFFu - 5000, 0x7FFFFFF0u}) {
			SCOPED_TRACE(::testing::Message()
				     << "cap " << t.cap << " spread " << t.spread << " first " << first);
			replay(t, seed++, first, t.cap >= 65536 ? 30000 : 12000);
			if (HasFatalFailure())
				return;
		}
	}
}

} // namespace
