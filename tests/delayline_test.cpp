// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/delayline_test.cpp - the delay line's queue (order, release times,
// the byte bound and drop accounting, wrap-around against a reference
// model) and the testbed plan of delayed links.
#include "base/error.h"
#include "testbed/delayline.h"
#include "testbed/testbed_plan.h"

#include <gtest/gtest.h>

#include <deque>
#include <random>
#include <vector>

namespace
{

using lumen::DelayQueue;

std::vector<std::uint8_t> frame_of(std::size_t len, std::uint8_t tag)
{
	std::vector<std::uint8_t> f(len);
	for (std::size_t i = 0; i < len; i++)
		f[i] = static_cast<std::uint8_t>(tag + i);
	return f;
}

std::size_t record_size(std::size_t len)
{
	return DelayQueue::kRecordHeader + ((len + 7) & ~std::size_t(7));
}

TEST(DelayQueue, KeepsOrderAndReleaseTimes)
{
	DelayQueue q(64 << 10);
	EXPECT_TRUE(q.empty());
	for (std::uint8_t i = 0; i < 10; i++)
		ASSERT_TRUE(q.push(1000 + i * 10, frame_of(60 + i, i)));
	EXPECT_EQ(q.queued_frames(), 10u);
	for (std::uint8_t i = 0; i < 10; i++) {
		ASSERT_FALSE(q.empty());
		EXPECT_EQ(q.front_release_ns(), 1000u + i * 10);
		auto f = q.front();
		EXPECT_EQ(std::vector<std::uint8_t>(f.begin(), f.end()), frame_of(60 + i, i));
		q.pop();
	}
	EXPECT_TRUE(q.empty());
	EXPECT_EQ(q.used_bytes(), 0u);
	EXPECT_EQ(q.pushed(), 10u);
	EXPECT_EQ(q.dropped(), 0u);
}

TEST(DelayQueue, PoppedFrameStaysReadableUntilNextPush)
{
	DelayQueue q(4096);
	ASSERT_TRUE(q.push(1, frame_of(100, 7)));
	ASSERT_TRUE(q.push(2, frame_of(100, 9)));
	auto first = q.front();
	q.pop();
	auto second = q.front();
	q.pop();
	EXPECT_EQ(std::vector<std::uint8_t>(first.begin(), first.end()), frame_of(100, 7));
	EXPECT_EQ(std::vector<std::uint8_t>(second.begin(), second.end()), frame_of(100, 9));
}

TEST(DelayQueue, DropsAndCountsWhenFull)
{
	DelayQueue q(8192);
	const std::size_t per = record_size(1514);
	const std::size_t fit = 8192 / per; // 5 records of 1536 bytes
	for (std::size_t i = 0; i < fit; i++)
		ASSERT_TRUE(q.push(i, frame_of(1514, 0)));
	EXPECT_FALSE(q.push(100, frame_of(1514, 0)));
	EXPECT_FALSE(q.push(100, frame_of(1000, 0)));
	EXPECT_EQ(q.dropped(), 2u);
	EXPECT_EQ(q.dropped_bytes(), 2514u);
	EXPECT_EQ(q.queued_frames(), fit);
	EXPECT_LE(q.used_bytes(), q.capacity());
	// a small one still fits in what is left
	EXPECT_TRUE(q.push(100, frame_of(8192 - fit * per - DelayQueue::kRecordHeader, 0)));
	EXPECT_EQ(q.used_bytes(), q.capacity());
	// after one pop a full frame fits again (wrapping to the start)
	q.pop();
	EXPECT_TRUE(q.push(101, frame_of(1514, 3)));
	EXPECT_EQ(q.pushed(), fit + 2);
	EXPECT_EQ(q.max_used_bytes(), q.capacity());
}

TEST(DelayQueue, FrameLargerThanTheRingIsDropped)
{
	DelayQueue q(4096);
	EXPECT_FALSE(q.push(1, frame_of(5000, 0)));
	EXPECT_EQ(q.dropped(), 1u);
	EXPECT_TRUE(q.empty());
}

TEST(DelayQueue, RefusesBadUse)
{
	EXPECT_THROW(DelayQueue(100), lumen::Error);
	DelayQueue q(4096);
	EXPECT_THROW(q.pop(), lumen::Error);
	ASSERT_TRUE(q.push(50, frame_of(10, 0)));
	EXPECT_THROW(q.push(49, frame_of(10, 0)), lumen::Error);
}

// Random pushes and pops against a deque: same frames, same order, the
// ring never over its capacity, and a push fails only when the frame
// really does not fit in the free bytes.
TEST(DelayQueue, MatchesAReferenceFifoThroughManyWraps)
{
	struct Ref {
		std::uint64_t release;
		std::vector<std::uint8_t> data;
	};
	DelayQueue q(16384);
	std::deque<Ref> ref;
	std::mt19937 rng(42);
	std::uint64_t now = 0, drops = 0;
	for (int step = 0; step < 200000; step++) {
		if (rng() % 100 < 55) {
			const std::size_t len = 42 + rng() % 1473;
			auto f = frame_of(len, static_cast<std::uint8_t>(step));
			now += rng() % 3;
			const std::size_t free_bytes = q.capacity() - q.used_bytes();
			if (q.push(now, f)) {
				ref.push_back({now, f});
			} else {
				drops++;
				// refused only when the free bytes, split in at most two
				// pieces (end of the ring, start of it), hold no piece of
				// that size
				EXPECT_LT(free_bytes, 2 * record_size(len)) << "step " << step;
			}
		} else if (!ref.empty()) {
			ASSERT_FALSE(q.empty());
			ASSERT_EQ(q.front_release_ns(), ref.front().release);
			auto f = q.front();
			ASSERT_EQ(std::vector<std::uint8_t>(f.begin(), f.end()), ref.front().data) << "step " << step;
			q.pop();
			ref.pop_front();
		}
		ASSERT_EQ(q.queued_frames(), ref.size());
		ASSERT_LE(q.used_bytes(), q.capacity());
	}
	EXPECT_EQ(q.dropped(), drops);
	EXPECT_GT(drops, 0u); // the bound was reached
	EXPECT_LE(q.max_used_bytes(), q.capacity());
}

// ---------------------------------------------------------------------
// the plan of a delayed link

lumen::TopologySpec dumbbell_with_delay(std::uint64_t delay_ns)
{
	lumen::TopologySpec s;
	s.name = "t";
	s.kind = lumen::TopologyKind::Dumbbell;
	s.bottleneck.rate_mbps = 200;
	s.bottleneck.delay_ns = delay_ns;
	return s;
}

TEST(DelayPlan, NoDelayNoDelayLine)
{
	const lumen::TestbedPlan p = lumen::plan_testbed(dumbbell_with_delay(0));
	EXPECT_TRUE(p.delay_lines.empty());
	for (const auto &l : p.links)
		EXPECT_EQ(l.delay_node, "");
}

TEST(DelayPlan, DelayedBottleneckGetsAMiddleNode)
{
	const lumen::TestbedPlan p = lumen::plan_testbed(dumbbell_with_delay(1000000));
	ASSERT_EQ(p.delay_lines.size(), 1u);
	const lumen::PlanDelayLine &d = p.delay_lines[0];
	EXPECT_EQ(d.node, "dl-sw1-sw2");
	EXPECT_EQ(d.dev_a, "sw1");
	EXPECT_EQ(d.dev_b, "sw2");
	EXPECT_EQ(d.delay_ns, 1000000u);
	const lumen::PlanNode &n = p.node(d.node);
	EXPECT_EQ(n.netns, "lt-t-dl-sw1-sw2");
	EXPECT_EQ(n.role, "delay");
	EXPECT_FALSE(n.is_switch);
	// not a host: nothing to spawn there
	for (const auto &h : p.hosts())
		EXPECT_NE(h.name, d.node);
	// both switch ports of the link have their veth peer in the middle node
	int peers_in_middle = 0;
	for (const auto &pp : p.ports)
		if (pp.port.bottleneck) {
			EXPECT_EQ(pp.port.peer_netns, n.netns);
			EXPECT_EQ(pp.port.peer, pp.port.name.substr(0, 3)); // the port's own switch
			peers_in_middle++;
		}
	EXPECT_EQ(peers_in_middle, 2);
	// the queue holds twice the bandwidth-delay product and more
	EXPECT_GE(d.queue_bytes, 2 * 200000000ull / 8 / 1000);
	EXPECT_LE(d.queue_bytes, 64ull << 20);
}

TEST(DelayPlan, LongDelayQueueIsCapped)
{
	lumen::TopologySpec s = dumbbell_with_delay(1000000000);
	s.bottleneck.rate_mbps = 10000;
	s.host_link.rate_mbps = 10000;
	const lumen::TestbedPlan p = lumen::plan_testbed(s);
	ASSERT_EQ(p.delay_lines.size(), 1u);
	EXPECT_EQ(p.delay_lines[0].queue_bytes, 64ull << 20);
}

TEST(DelayPlan, DelayedHostLinksOnALeafSpine)
{
	lumen::TopologySpec s;
	s.name = "t";
	s.kind = lumen::TopologyKind::LeafSpine;
	s.host_link.delay_ns = 5000;
	const lumen::TestbedPlan p = lumen::plan_testbed(s);
	EXPECT_EQ(p.delay_lines.size(), s.leaves * s.hosts_per_leaf);
	for (const auto &d : p.delay_lines) {
		EXPECT_LE(d.dev_a.size(), 15u);
		EXPECT_LE(d.dev_b.size(), 15u);
		EXPECT_EQ(d.delay_ns, 5000u);
	}
	EXPECT_EQ(p.hosts().size(), s.leaves * s.hosts_per_leaf);
}

} // namespace

namespace
{

// the state file stores the spec as JSON: a delay must read back unchanged
TEST(DelayPlan, DelayRoundTripsThroughJson)
{
	lumen::TopologySpec s = dumbbell_with_delay(1234000);
	s.host_link.delay_ns = 10000;
	const lumen::TopologySpec back = lumen::parse_topology(lumen::topology_to_json(s));
	EXPECT_EQ(back.bottleneck.delay_ns, 1234000u);
	EXPECT_EQ(back.host_link.delay_ns, 10000u);
	EXPECT_EQ(lumen::parse_topology(lumen::topology_to_json(dumbbell_with_delay(0))).bottleneck.delay_ns, 0u);
}

} // namespace
