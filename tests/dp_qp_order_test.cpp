// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// Randomized QP ordering (Ethereal's flowArrival, dpdk/transport/engine.h):
// a batch posted together takes its turns in a random order that the round
// robin then keeps, every order equally likely (chi-square over many seeds),
// the same for a seed and different across seeds; a flow's first packet
// waits a uniform start delay and never leaves before it; only a post to an
// idle connection is an arrival; FIFO when the ordering is off.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "dp_test_frames.h"
#include "transport/engine.h"

namespace
{

using namespace lumen::dp;
using test::VecSink;

const Mac kMacA{2, 0, 0, 0, 0, 1}, kMacB{2, 0, 0, 0, 0, 2};
constexpr uint32_t kIpA = 0x0A000001, kIpB = 0x0A000002;

EngineConfig config(uint64_t seed, bool randomize = true, uint64_t jitter_ns = 0)
{
	EngineConfig c;
	c.ip = kIpA;
	c.mac = kMacA;
	c.cc.mss = c.max_payload();
	c.seed = seed;
	c.randomize_order = randomize;
	c.start_jitter_ns = jitter_ns;
	return c;
}

uint32_t conn_of(const test::Frame &f)
{
	return lumen_dp_get32(f.data() + LUMEN_DP_HDR_OFF + 4);
}

// n connections, each posted a message of `pkts` packets at time 0; the
// connection of each turn over `turns` tx calls of one quantum's worth.
std::vector<uint32_t> turns(Engine &e, uint32_t n, uint32_t pkts, uint32_t calls)
{
	std::vector<Connection *> conns;
	for (uint32_t i = 0; i < n; i++) {
		conns.push_back(test::connect_open(e, kIpB, kMacB, i + 1, 0));
		EXPECT_NE(conns.back(), nullptr);
	}
	for (Connection *c : conns)
		e.post(*c, pkts * e.config().max_payload(), 0);
	std::vector<uint32_t> order;
	for (uint32_t call = 0; call < calls; call++) {
		VecSink sink(e.config().mtu + 14);
		EXPECT_EQ(e.tx(sink, 1000, 2), 2u);
		/* two packets of one connection per call: its turn took both
		 * (a quantum is 16, the budget 2) */
		EXPECT_EQ(conn_of(sink.frames[0]), conn_of(sink.frames[1]));
		order.push_back(conn_of(sink.frames[0]));
	}
	return order;
}

TEST(DpQpOrder, FifoWhenOff)
{
	Engine e(config(7, false));
	std::vector<uint32_t> got = turns(e, 20, 8, 20), want(20);
	std::iota(want.begin(), want.end(), 1u);
	EXPECT_EQ(got, want);
	EXPECT_EQ(e.stats().arrivals, 0u);
}

TEST(DpQpOrder, ABatchTakesARandomOrderThatTheRoundRobinKeeps)
{
	Engine e(config(7));
	constexpr uint32_t n = 100;
	std::vector<uint32_t> got = turns(e, n, 8, 2 * n);
	std::vector<uint32_t> first(got.begin(), got.begin() + n), second(got.begin() + n, got.end());
	std::vector<uint32_t> sorted = first, ids(n);
	std::sort(sorted.begin(), sorted.end());
	std::iota(ids.begin(), ids.end(), 1u);
	EXPECT_EQ(sorted, ids); /* every connection once in a round */
	EXPECT_NE(first, ids); /* not the order of the posts */
	EXPECT_EQ(second, first); /* the next round in the same order */
	EXPECT_EQ(e.stats().arrivals, n);
}

TEST(DpQpOrder, TheSameForASeedDifferentAcrossSeeds)
{
	Engine a(config(11)), b(config(11)), c(config(12));
	std::vector<uint32_t> oa = turns(a, 30, 2, 30), ob = turns(b, 30, 2, 30), oc = turns(c, 30, 2, 30);
	EXPECT_EQ(oa, ob);
	EXPECT_NE(oa, oc);
}

// The place each of 8 connections takes, over 4000 seeds: every
// (connection, place) pair equally likely. Chi-square with 49 degrees of
// freedom; 85.4 is its 0.999 quantile, and the seeds are fixed, so the
// test is deterministic.
TEST(DpQpOrder, EveryOrderEquallyLikely)
{
	constexpr uint32_t n = 8, runs = 4000;
	std::vector<std::vector<uint32_t>> count(n, std::vector<uint32_t>(n, 0));
	std::vector<uint32_t> first_count(n, 0);
	for (uint32_t seed = 1; seed <= runs; seed++) {
		Engine e(config(seed * 0x9E3779B97F4A7C15ull));
		std::vector<uint32_t> order = turns(e, n, 2, n);
		for (uint32_t place = 0; place < n; place++)
			count[order[place] - 1][place]++;
	}
	double chi2 = 0, expect = (double)runs / n;
	for (const auto &row : count)
		for (uint32_t c : row)
			chi2 += (c - expect) * (c - expect) / expect;
	EXPECT_LT(chi2, 85.4);
}

// A start jitter of J: each flow's first packet leaves at its start time,
// uniform in [0, J], never before it; later packets are not held.
TEST(DpQpOrder, StartJitterIsUniformAndHeld)
{
	constexpr uint64_t kJ = 100'000;
	constexpr uint32_t n = 400;
	Engine e(config(5, true, kJ));
	std::vector<Connection *> conns;
	for (uint32_t i = 0; i < n; i++)
		conns.push_back(test::connect_open(e, kIpB, kMacB, i + 1, 0));
	for (Connection *c : conns)
		e.post(*c, 2 * e.config().max_payload(), 0);
	std::vector<uint64_t> first(n + 1, UINT64_MAX);
	for (uint64_t now = 0; now <= kJ + 1000; now += 500) {
		VecSink sink(e.config().mtu + 14);
		e.tx(sink, now, 1 << 20);
		for (const auto &f : sink.frames)
			first[conn_of(f)] = std::min(first[conn_of(f)], now);
	}
	uint32_t below_half = 0;
	for (const auto &c : e.connections()) {
		const uint64_t t = first[c->conn_id];
		ASSERT_NE(t, UINT64_MAX) << "connection " << c->conn_id << " never sent";
		EXPECT_LE(c->start_ns, kJ);
		EXPECT_GE(t, c->start_ns); /* not before its start */
		EXPECT_LT(t, c->start_ns + 500); /* and at the first poll after it */
		EXPECT_EQ(c->stats.data_sent, 2u); /* its second packet not held */
		below_half += c->start_ns < kJ / 2;
	}
	/* uniform: half of the starts in the first half, within 4.5 sigma (10) */
	EXPECT_NEAR(below_half, n / 2, 45u);
}

TEST(DpQpOrder, OnlyAPostToAnIdleConnectionIsAnArrival)
{
	Engine e(config(3, true, 50'000));
	Connection *c = e.connect(kIpB, kMacB, 1, 0);
	e.post(*c, 1000, 0);
	const uint64_t start = c->start_ns;
	e.post(*c, 1000, 10);
	e.post(*c, 1000, 20);
	EXPECT_EQ(e.stats().arrivals, 1u);
	EXPECT_EQ(c->start_ns, start); /* later messages of the flow do not move its start */
}

TEST(DpQpOrder, JitterIsValidated)
{
	EngineConfig c = config(1, true, 1'000'000'001);
	EXPECT_NE(c.validate().find("start-jitter-us"), std::string::npos);
	c.start_jitter_ns = 1'000'000'000;
	EXPECT_EQ(c.validate(), "");
}

} // namespace
