// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// lumen-dp's timer wheel (dpdk/transport/timer_wheel.h): timers fire at the
// first advance() at or after their expiry and never before, in tick order;
// past expiries fire on the next advance(); timers rotations away wait for
// their round; callbacks may cancel or re-arm any node, themselves included;
// idle timers cost nothing in slots that are not visited (counted with the
// wheel's stats, not timed). A randomized suite checks every advance()
// against a model of which nodes are armed and when they are due.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <stdexcept>
#include <vector>

#include "test_rng.h"
#include "transport/timer_wheel.h"

namespace
{

using lumen::dp::TimerNode;
using lumen::dp::TimerWheel;
using lumen::test::Rng;

std::vector<TimerNode> nodes(uint32_t n)
{
	std::vector<TimerNode> v(n);
	for (uint32_t i = 0; i < n; i++)
		v[i].owner = i;
	return v;
}

TEST(DpTimerWheel, RefusesBadParams)
{
	EXPECT_THROW(TimerWheel(0, 64), std::invalid_argument);
	for (uint32_t bad : {0u, 3u, 100u, (1u << 24) + 1, 1u << 25})
		EXPECT_THROW(TimerWheel(1000, bad), std::invalid_argument) << bad;
	TimerWheel w(1000, 1);
	EXPECT_EQ(w.slots(), 1u);
	EXPECT_EQ(w.tick_ns(), 1000u);
	EXPECT_EQ(w.size(), 0u);
}

TEST(DpTimerWheel, FiresInTickOrderNeverEarly)
{
	Rng rng(3);
	const uint64_t tick = 1000;
	auto n = nodes(500); // nodes outlive the wheel (or are disarmed first)
	TimerWheel w(tick, 64);
	for (auto &node : n)
		w.arm(node, rng.range(1, 300 * tick));
	EXPECT_EQ(w.size(), 500u);
	uint64_t prev = 0, now = 0;
	std::set<uint32_t> fired;
	while (w.size() > 0) {
		now += rng.range(1, 5 * tick);
		uint64_t last_tick = 0;
		uint32_t k = w.advance(now, [&](TimerNode &node) {
			EXPECT_FALSE(node.armed);
			EXPECT_LE(node.expiry_ns, now);
			EXPECT_GT(node.expiry_ns, prev) << "fired late";
			EXPECT_GE(node.expiry_ns / tick, last_tick) << "out of tick order";
			last_tick = node.expiry_ns / tick;
			EXPECT_TRUE(fired.insert(node.owner).second);
		});
		EXPECT_EQ(k, static_cast<uint32_t>(std::count_if(n.begin(), n.end(), [&](const TimerNode &x) {
				  return x.expiry_ns > prev && x.expiry_ns <= now;
			  })));
		prev = now;
	}
	EXPECT_EQ(fired.size(), 500u);
	EXPECT_EQ(w.stats().fired, 500u);
}

TEST(DpTimerWheel, PastExpiryFiresOnNextAdvance)
{
	TimerWheel w(1000, 16, 50000);
	TimerNode past, now_, later;
	int fired = 0;
	auto count = [&](TimerNode &) { fired++; };
	w.arm(past, 1000);
	w.arm(now_, 50000);
	w.arm(later, 50001);
	EXPECT_EQ(w.advance(50000, count), 2u); // same time as the wheel: no slot to visit
	EXPECT_FALSE(past.armed);
	EXPECT_FALSE(now_.armed);
	EXPECT_TRUE(later.armed);
	EXPECT_EQ(w.advance(40000, count), 0u); // time does not go back
	EXPECT_EQ(w.now(), 50000u);
	EXPECT_EQ(w.advance(50001, count), 1u);
	EXPECT_EQ(fired, 3);
	EXPECT_EQ(w.size(), 0u);
}

TEST(DpTimerWheel, CancelAndRearm)
{
	TimerWheel w(100, 8);
	auto n = nodes(3);
	std::vector<uint32_t> order;
	auto rec = [&](TimerNode &node) { order.push_back(node.owner); };
	w.arm(n[0], 500);
	w.arm(n[1], 600);
	w.arm(n[2], 700);
	w.cancel(n[1]);
	w.cancel(n[1]); // twice: nothing
	EXPECT_EQ(w.size(), 2u);
	w.arm(n[0], 900); // re-arm moves it
	w.arm(n[0], 2500); // and again, three rotations on
	EXPECT_EQ(w.size(), 2u);
	w.advance(800, rec);
	EXPECT_EQ(order, (std::vector<uint32_t>{2}));
	w.advance(2499, rec);
	EXPECT_EQ(order.size(), 1u);
	w.advance(2500, rec);
	EXPECT_EQ(order, (std::vector<uint32_t>{2, 0}));
	EXPECT_FALSE(n[1].armed);
	EXPECT_EQ(n[1].prev, nullptr);
}

TEST(DpTimerWheel, FarFutureWaitsForItsRound)
{
	const uint64_t tick = 100, rotation = 8 * tick;
	TimerWheel w(tick, 8);
	auto n = nodes(4);
	w.arm(n[0], 10 * rotation + 50); // same slot as 50, ten rounds on
	w.arm(n[1], 50);
	w.arm(n[2], 3 * rotation + 50);
	w.arm(n[3], 1000 * rotation + 799);
	std::vector<std::pair<uint32_t, uint64_t>> fired;
	for (uint64_t now = 0; now <= 20 * rotation; now += tick / 2)
		w.advance(now, [&](TimerNode &node) { fired.push_back({node.owner, now}); });
	ASSERT_EQ(fired.size(), 3u);
	EXPECT_EQ(fired[0], std::make_pair(1u, uint64_t{50}));
	EXPECT_EQ(fired[1], std::make_pair(2u, 3 * rotation + 50));
	EXPECT_EQ(fired[2], std::make_pair(0u, 10 * rotation + 50));
	EXPECT_TRUE(n[3].armed);
	// a jump of many rotations visits every slot once, and fires it
	uint64_t slots_before = w.stats().slots_visited;
	EXPECT_EQ(w.advance(1000 * rotation + 799, [](TimerNode &) {}), 1u);
	EXPECT_EQ(w.stats().slots_visited - slots_before, 8u);
	EXPECT_EQ(w.size(), 0u);
}

TEST(DpTimerWheel, CallbackCancelsOthersAndItself)
{
	TimerWheel w(1000, 64);
	auto n = nodes(4);
	w.arm(n[0], 5000);
	w.arm(n[1], 5000); // same tick: waits on the list being run
	w.arm(n[2], 7000); // a later slot of the same advance
	w.arm(n[3], 9000); // not due
	std::vector<uint32_t> fired;
	w.advance(8000, [&](TimerNode &node) {
		fired.push_back(node.owner);
		w.cancel(node); // already disarmed: nothing
		w.cancel(n[1]);
		w.cancel(n[2]);
	});
	EXPECT_EQ(fired, (std::vector<uint32_t>{0}));
	EXPECT_EQ(w.size(), 1u);
	EXPECT_FALSE(n[1].armed);
	EXPECT_FALSE(n[2].armed);
	EXPECT_TRUE(n[3].armed);
	w.advance(100000, [&](TimerNode &node) { fired.push_back(node.owner); });
	EXPECT_EQ(fired, (std::vector<uint32_t>{0, 3}));
}

TEST(DpTimerWheel, CallbackRearmsWithoutLooping)
{
	TimerWheel w(1000, 16);
	TimerNode periodic, stubborn;
	int p_fires = 0, s_fires = 0;
	w.arm(periodic, 2500);
	w.arm(stubborn, 100);
	auto cb = [&](TimerNode &node) {
		if (&node == &periodic) {
			p_fires++;
			w.arm(node, node.expiry_ns + 2500);
		} else {
			s_fires++;
			w.arm(node, 0); // in the past: the next advance, not this one
		}
	};
	for (uint64_t now = 1000; now <= 100000; now += 1000)
		EXPECT_LE(w.advance(now, cb), 2u);
	EXPECT_EQ(p_fires, 40); // 2500, 5000, ..., 100000
	EXPECT_EQ(s_fires, 100);
	EXPECT_EQ(w.size(), 2u);
	// a callback that re-arms another node still waiting to be looked at
	TimerNode a, b;
	w.cancel(periodic);
	w.cancel(stubborn);
	w.arm(a, 100500);
	w.arm(b, 100600);
	std::vector<TimerNode *> fired;
	w.advance(101000, [&](TimerNode &node) {
		fired.push_back(&node);
		if (&node == &a)
			w.arm(b, 200000);
	});
	EXPECT_EQ(fired, (std::vector<TimerNode *>{&a}));
	EXPECT_TRUE(b.armed);
	EXPECT_EQ(w.advance(200000, [](TimerNode &) {}), 1u);
}

TEST(DpTimerWheel, CallbackArmsANewNodeDueNow)
{
	TimerWheel w(1000, 16);
	TimerNode a, c;
	int c_fired = 0;
	w.arm(a, 3000);
	auto cb = [&](TimerNode &node) {
		if (&node == &a)
			w.arm(c, 2000); // already due: fires on the next advance
		else
			c_fired++;
	};
	EXPECT_EQ(w.advance(5000, cb), 1u);
	EXPECT_EQ(c_fired, 0);
	EXPECT_TRUE(c.armed);
	EXPECT_EQ(w.advance(5000, cb), 1u);
	EXPECT_EQ(c_fired, 1);
}

TEST(DpTimerWheel, IdleTimersCostNothingInSlotsNotVisited)
{
	const uint64_t tick = 1000;
	const uint32_t slots = 4096;
	auto n = nodes(10000), m = nodes(10000);
	TimerWheel w(tick, slots);
	// all in one tick half a rotation ahead, a thousand rotations on
	const uint64_t far = 1000ull * slots * tick + (slots / 2) * tick;
	for (auto &node : n)
		w.arm(node, far);
	auto none = [](TimerNode &) { FAIL() << "nothing is due"; };
	for (uint64_t t = 1; t <= 1000; t++)
		w.advance(t * tick, none);
	EXPECT_EQ(w.stats().slots_visited, 1000u);
	EXPECT_EQ(w.stats().nodes_visited, 0u);
	EXPECT_EQ(w.size(), 10000u);

	// spread over every slot instead: a node is looked at once per
	// rotation, so one tick's advance looks at ceil(10000 / 4096) at most
	TimerWheel s(tick, slots);
	for (uint32_t i = 0; i < 10000; i++)
		s.arm(m[i], 1000ull * slots * tick + i * tick);
	uint64_t worst = 0;
	for (uint64_t t = 1; t <= slots; t++) {
		uint64_t before = s.stats().nodes_visited;
		s.advance(t * tick, none);
		worst = std::max(worst, s.stats().nodes_visited - before);
	}
	EXPECT_EQ(s.stats().slots_visited, slots);
	EXPECT_EQ(s.stats().nodes_visited, 10000u);
	EXPECT_LE(worst, 3u);
	EXPECT_EQ(s.size(), 10000u);
}

TEST(DpTimerWheel, DestructorDisarms)
{
	auto n = nodes(3);
	{
		TimerWheel w(10, 4);
		w.arm(n[0], 5);
		w.arm(n[1], 500);
		w.arm(n[2], 0);
	}
	for (auto &node : n) {
		EXPECT_FALSE(node.armed);
		EXPECT_EQ(node.next, nullptr);
	}
}

TEST(DpTimerWheel, TimesNearTheTopOfTheClock)
{
	TimerWheel w(1, 8, UINT64_MAX - 100);
	TimerNode a, b;
	w.arm(a, UINT64_MAX);
	w.arm(b, UINT64_MAX - 50);
	int fired = 0;
	EXPECT_EQ(w.advance(UINT64_MAX - 50, [&](TimerNode &) { fired++; }), 1u);
	EXPECT_EQ(w.advance(UINT64_MAX, [&](TimerNode &) { fired++; }), 1u);
	EXPECT_EQ(fired, 2);
}

// Random arming, cancelling and advancing, with callbacks that cancel or
// re-arm themselves and others. The model tracks each node's expiry as the
// operations happen (in the callbacks too) and checks that every firing
// node is armed and due, that every node due when advance() starts fires
// unless a callback touched it first, and that nothing else fires.
TEST(DpTimerWheel, RandomMatchesModel)
{
	for (uint32_t slots : {1u, 8u, 256u}) {
		Rng rng(slots);
		const uint64_t tick = 1000, rotation = tick * slots;
		TimerWheel w(tick, slots, 5000);
		auto n = nodes(300);
		std::map<uint32_t, uint64_t> armed; // the model
		uint64_t now = 5000;

		auto arm = [&](uint32_t i, uint64_t exp) {
			w.arm(n[i], exp);
			armed[i] = exp;
		};
		auto cancel = [&](uint32_t i) {
			w.cancel(n[i]);
			armed.erase(i);
		};
		auto random_expiry = [&]() -> uint64_t {
			switch (rng.below(4)) {
			case 0: // past or now
				return now - std::min<uint64_t>(now, rng.below(3 * tick));
			case 1: // rotations away
				return now + rng.below(20 * rotation);
			default:
				return now + 1 + rng.below(rotation + tick);
			}
		};
		for (int step = 0; step < 30000; step++) {
			uint32_t i = static_cast<uint32_t>(rng.below(n.size()));
			uint64_t r = rng.below(10);
			if (r < 4) {
				arm(i, random_expiry());
			} else if (r < 5) {
				cancel(i);
			} else {
				now += rng.chance(5) ? rng.below(3 * rotation) : rng.below(2 * tick);
				std::set<uint32_t> due, touched, fired;
				for (const auto &[k, exp] : armed)
					if (exp <= now)
						due.insert(k);
				w.advance(now, [&](TimerNode &node) {
					uint32_t k = node.owner;
					ASSERT_TRUE(armed.count(k)) << "a cancelled node fired";
					ASSERT_LE(armed[k], now);
					ASSERT_TRUE(due.count(k)) << "armed during this advance, fired in it";
					ASSERT_TRUE(fired.insert(k).second);
					armed.erase(k);
					switch (rng.below(6)) {
					case 0:
						arm(k, random_expiry()); // itself, maybe in the past
						touched.insert(k);
						break;
					case 1: {
						uint32_t o = static_cast<uint32_t>(rng.below(n.size()));
						cancel(o);
						touched.insert(o);
						break;
					}
					case 2: {
						uint32_t o = static_cast<uint32_t>(rng.below(n.size()));
						arm(o, random_expiry());
						touched.insert(o);
						break;
					}
					default:
						break;
					}
				});
				if (HasFatalFailure())
					return;
				for (uint32_t k : due)
					ASSERT_TRUE(fired.count(k) || touched.count(k))
						<< "due node " << k << " missed";
			}
			ASSERT_EQ(w.size(), armed.size());
			for (uint32_t k = 0; k < n.size(); k++)
				ASSERT_EQ(n[k].armed, armed.count(k) == 1);
		}
		for (auto &node : n)
			w.cancel(node);
	}
}

} // namespace
