// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// UplinkPinner (dpdk/transport/uplink_pinner.h) on a discovered fake fabric
// (dp_fake_fabric.h): pinning takes an entropy that the fabric sends to the
// asked uplink, in turn over the known ones; a reroute goes to the least
// loaded other uplink, never the one left, avoids a suspect uplink while
// another exists and forgets the suspicion after its time; off the map it
// leaves the choice to the engine; and an engine with the pinner as its
// choose_path moves an ethereal connection off a dead uplink to a known one.
#include <gtest/gtest.h>

#include "transport/uplink_pinner.h"

#include "dp_fake_fabric.h"
#include "dp_test_frames.h"

using namespace lumen::dp;
using namespace lumen::dp::test;

namespace
{

// A fabric of 4 spines, the map of kDsts[0] discovered.
struct Discovered : Sim {
	Discovered() : Sim(params())
	{
		map.want(kDsts[0], kGw, now);
		EXPECT_TRUE(run([&] { return map.settled(kDsts[0]); }, 100 * kMs));
		expect_complete(kDsts[0]);
	}
};

TEST(DpUplinkPinner, PinsToTheAskedUplinkInTurn)
{
	Discovered f;
	UplinkPinner p(f.map, 4);
	for (uint32_t u = 0; u < 4; u++) {
		const auto &known = f.map.entropies_of(kDsts[0], u);
		for (size_t k = 0; k < 2 * known.size(); k++) {
			uint16_t e = 0;
			ASSERT_TRUE(p.pin(kDsts[0], u, &e));
			EXPECT_EQ(e, known[k % known.size()]); /* round robin over the known ones */
			EXPECT_EQ(spine_ip(f.spine_of(kDsts[0], e)),
				  f.map.router_of(u)); /* where the fabric sends it */
		}
		EXPECT_EQ(p.load()[u], 2 * known.size());
	}
	uint16_t e = 0;
	EXPECT_FALSE(p.pin(kDsts[1], 0, &e)); /* a destination never probed */
	EXPECT_FALSE(p.pin(kDsts[0], 4, &e)); /* no such uplink */
}

TEST(DpUplinkPinner, RerouteGoesToTheLeastLoadedOtherUplink)
{
	Discovered f;
	UplinkPinner p(f.map, 4);
	uint16_t e[4];
	/* loads 3, 1, 2, 2 */
	for (uint32_t u : {0u, 0u, 0u, 1u, 2u, 2u, 3u, 3u})
		ASSERT_TRUE(p.pin(kDsts[0], u, &e[u]));
	uint16_t moved = p.choose(kDsts[0], e[0], 0);
	EXPECT_EQ(f.map.uplink_of(kDsts[0], moved), 1); /* least loaded, not the one left */
	EXPECT_EQ(p.load(), (std::vector<uint32_t>{2, 2, 2, 2}));
	/* uplink 0 is suspect now: a subflow leaving uplink 1 goes to 2 (ties
	 * to the lowest index), not to 0 although it is as loaded */
	uint16_t next = p.choose(kDsts[0], moved, 1 * kMs);
	EXPECT_EQ(f.map.uplink_of(kDsts[0], next), 2);
	EXPECT_EQ(p.load(), (std::vector<uint32_t>{2, 1, 3, 2}));
	/* at 5 ms uplinks 0 and 1 are suspect: one leaving 3 goes to 2,
	 * loaded or not */
	uint16_t busy = p.choose(kDsts[0], e[3], 5 * kMs);
	EXPECT_EQ(f.map.uplink_of(kDsts[0], busy), 2);
	EXPECT_EQ(p.load(), (std::vector<uint32_t>{2, 1, 4, 1}));
	/* at 20 ms the suspicions are over (10 ms each): one leaving 2 goes
	 * to the least loaded, 1 (tied with 3, the lower index) */
	uint16_t later = p.choose(kDsts[0], next, 20 * kMs);
	EXPECT_EQ(f.map.uplink_of(kDsts[0], later), 1);
	EXPECT_EQ(p.load(), (std::vector<uint32_t>{2, 2, 3, 1}));
	EXPECT_EQ(p.rerouted(), 4u);
}

// A move a spurious RTO made, undone: the subflow counts on the uplink it
// left again, which is no longer suspect, even after the map forgot the
// entropy (the shell invalidates it on the reroute).
TEST(DpUplinkPinner, AnUndoneMoveGoesBackAndClearsTheSuspicion)
{
	Discovered f;
	UplinkPinner p(f.map, 4);
	uint16_t e[4];
	for (uint32_t u = 0; u < 4; u++)
		ASSERT_TRUE(p.pin(kDsts[0], u, &e[u]));
	uint16_t moved = p.choose(kDsts[0], e[0], 0);
	ASSERT_NE(f.map.uplink_of(kDsts[0], moved), 0);
	f.map.invalidate(kDsts[0], e[0], 0);
	ASSERT_EQ(f.map.uplink_of(kDsts[0], e[0]), -1);
	p.undo(kDsts[0], moved, e[0]);
	EXPECT_EQ(p.load(), (std::vector<uint32_t>{1, 1, 1, 1}));
	EXPECT_EQ(p.undone(), 1u);
	/* uplink 0 delivered: not suspect, so a subflow leaving 3 may take it
	 * (least loaded after the move away, lowest index) */
	uint16_t next = p.choose(kDsts[0], e[3], 1 * kMs);
	EXPECT_EQ(f.map.uplink_of(kDsts[0], next), 0);
}

TEST(DpUplinkPinner, EveryOtherUplinkSuspectStillMoves)
{
	Discovered f;
	UplinkPinner p(f.map, 2 /* only uplinks 0 and 1 counted */);
	uint16_t a, b;
	ASSERT_TRUE(p.pin(kDsts[0], 0, &a));
	ASSERT_TRUE(p.pin(kDsts[0], 1, &b));
	uint16_t x = p.choose(kDsts[0], a, 0); /* 0 -> 1, 0 suspect */
	EXPECT_EQ(f.map.uplink_of(kDsts[0], x), 1);
	uint16_t y = p.choose(kDsts[0], x, 1 * kMs); /* 1 -> 0: suspect, but the only other */
	EXPECT_EQ(f.map.uplink_of(kDsts[0], y), 0);
}

TEST(DpUplinkPinner, OffTheMapTheEngineChooses)
{
	Discovered f;
	UplinkPinner p(f.map, 4);
	EXPECT_EQ(p.choose(kDsts[1], 7, 0), Engine::kNoPathChoice); /* a destination never probed */
	UplinkPinner one(f.map, 1);
	uint16_t e;
	ASSERT_TRUE(one.pin(kDsts[0], 0, &e));
	EXPECT_EQ(one.choose(kDsts[0], e, 0), Engine::kNoPathChoice); /* no other uplink */
	EXPECT_EQ(one.rerouted(), 0u);
}

// The engine's side: an ethereal connection whose pinned uplink dies (its
// packets dropped) times out and moves where the pinner says, a known port
// of another uplink; kNoPathChoice falls back to the default reroute
// without counting a bad choice.
TEST(DpUplinkPinner, AnEngineMovesItsConnectionWhereThePinnerSays)
{
	Discovered f;
	UplinkPinner p(f.map, 4);
	EngineConfig c = f.cfg;
	c.path_mode = LUMEN_PATH_ETHEREAL;
	c.gbn = true;
	c.cc.mss = c.max_payload();
	Engine e(c);
	Connection *conn = test::connect_open(e, kDsts[0], kGw, 1, 0);
	ASSERT_NE(conn, nullptr);
	uint16_t first;
	ASSERT_TRUE(p.pin(kDsts[0], 2, &first));
	ASSERT_TRUE(e.pin(*conn, first));
	uint16_t asked = 0;
	e.choose_path = [&](Connection &, uint16_t old) {
		asked = old;
		return p.choose(kDsts[0], old, 0);
	};
	e.post(*conn, 4 * c.max_payload(), 0);
	VecSink sink(c.mtu + 14);
	e.tx(sink, 0, 64);
	ASSERT_FALSE(sink.frames.empty());
	e.timers(1'000'000'000); /* nothing came back: the RTO */
	EXPECT_EQ(asked, first);
	EXPECT_EQ(conn->stats.reroutes, 1u);
	VecSink again(c.mtu + 14);
	e.tx(again, 1'000'000'000, 64);
	ASSERT_FALSE(again.frames.empty());
	uint16_t now_on = (uint16_t)(lumen_dp_get16(&again.frames[0][34]) - c.sport_base);
	EXPECT_NE(f.map.uplink_of(kDsts[0], now_on), 2);
	EXPECT_GE(f.map.uplink_of(kDsts[0], now_on), 0); /* a port the probes found */
	/* off the map: the default moves it, no bad choice counted */
	e.choose_path = [](Connection &, uint16_t) { return Engine::kNoPathChoice; };
	e.timers(3'000'000'000);
	EXPECT_EQ(conn->stats.reroutes, 2u);
	EXPECT_EQ(e.stats().bad_path_choices, 0u);
}

} // namespace
