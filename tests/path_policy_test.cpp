// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// Path policies (include/lumen/path_policy.h): ECMP keeps one entropy, OPS
// sprays uniformly, REPS explores a BDP round-robin then recycles the
// entropies of clean ACKs oldest first, drops marked ones, overwrites the
// oldest when its ring is full, and reps-freeze replays known-good paths
// after a low-RTT timeout, then re-explores. A network with a dead path
// checks the point of it all: REPS stops using the dead path, OPS does not.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <vector>

extern "C" {
#include "lumen/path_policy.h"
}

namespace
{

constexpr uint64_t kMs = 1'000'000;

lumen_path_params params(uint32_t entropies = 256, uint32_t explore = 16)
{
	lumen_path_params p;
	lumen_path_params_default(&p);
	p.entropies = entropies;
	p.explore_pkts = explore;
	EXPECT_EQ(lumen_path_params_validate(&p), 0);
	return p;
}

struct Conn {
	lumen_path_params p;
	lumen_path st{};
	lumen_rng rng{};

	Conn(lumen_path_mode mode, const lumen_path_params &params, uint64_t seed = 1) : p(params)
	{
		lumen_rng_seed(&rng, seed);
		lumen_path_init(&st, &p, mode, &rng);
	}
	uint16_t next(uint64_t now = 0)
	{
		return lumen_path_next(&st, &p, &rng, now);
	}
	void fb(uint32_t e, lumen_path_signal s, uint64_t now = 0, uint64_t rtt = 10000, uint64_t base = 10000)
	{
		lumen_path_feedback(&st, &p, e, s, now, rtt, base);
	}
	std::vector<uint16_t> explore_all()
	{
		std::vector<uint16_t> out;
		while (st.explore_left > 0)
			out.push_back(next());
		return out;
	}
};

TEST(PathParams, DefaultsAreTheSeedsAndBadValuesAreNamed)
{
	lumen_path_params p;
	lumen_path_params_default(&p);
	EXPECT_EQ(p.entropies, 256u);
	EXPECT_EQ(lumen_path_params_validate(&p), 0);
	auto bad = [&](auto change, int field) {
		lumen_path_params q = p;
		change(q);
		EXPECT_EQ(lumen_path_params_validate(&q), field);
	};
	bad([](lumen_path_params &q) { q.entropies = 0; }, -1);
	bad([](lumen_path_params &q) { q.entropies = 65537; }, -1);
	bad([](lumen_path_params &q) { q.explore_pkts = 65536; }, -2);
	bad([](lumen_path_params &q) { q.freeze_ns = 999; }, -3);
	bad([](lumen_path_params &q) { q.freeze_ns = 2'000'000'000; }, -3);
	bad([](lumen_path_params &q) { q.freeze_rtt_q8 = 255; }, -4);
}

TEST(PathState, AsSmallAsThePaperSays)
{
	// REPS: the ring, its head and count, the mode, the round robin and the
	// exploration counter; the freeze deadline comes after
	EXPECT_EQ(offsetof(lumen_path, frozen_until_us), 24u);
	EXPECT_LT(offsetof(lumen_path, frozen_until_us), 25u);
	EXPECT_EQ(sizeof(lumen_path), 28u);
}

TEST(Rng, ReproducibleAndWithinRange)
{
	lumen_rng a, b;
	lumen_rng_seed(&a, 42);
	lumen_rng_seed(&b, 42);
	for (int i = 0; i < 1000; i++)
		ASSERT_EQ(lumen_rng_next(&a), lumen_rng_next(&b));
	std::vector<int> hist(7);
	for (int i = 0; i < 70000; i++) {
		uint32_t v = lumen_rng_below(&a, 7);
		ASSERT_LT(v, 7u);
		hist[v]++;
	}
	for (int h : hist)
		EXPECT_NEAR(h, 10000, 500);
	EXPECT_EQ(lumen_rng_below(&a, 1), 0u);
	lumen_rng_seed(&b, 43);
	EXPECT_NE(lumen_rng_next(&a), lumen_rng_next(&b));
}

TEST(Ecmp, OneEntropyWhateverHappens)
{
	Conn c(LUMEN_PATH_ECMP, params());
	uint16_t e = c.next();
	for (int i = 0; i < 100; i++) {
		c.fb(e, i % 2 ? LUMEN_PATH_ECN : LUMEN_PATH_TIMEOUT);
		ASSERT_EQ(c.next(), e);
	}
	// connections differ (seeded): 64 connections use many paths
	std::set<uint16_t> seen;
	lumen_rng rng;
	lumen_rng_seed(&rng, 7);
	lumen_path_params p = params();
	for (int i = 0; i < 64; i++) {
		lumen_path st;
		lumen_path_init(&st, &p, LUMEN_PATH_ECMP, &rng);
		seen.insert(lumen_path_next(&st, &p, &rng, 0));
	}
	EXPECT_GT(seen.size(), 50u);
}

TEST(Ops, SpraysUniformlyAndIgnoresFeedback)
{
	Conn c(LUMEN_PATH_OPS, params(8));
	std::vector<int> hist(8);
	for (int i = 0; i < 80000; i++) {
		uint16_t e = c.next();
		ASSERT_LT(e, 8);
		hist[e]++;
		c.fb(e, LUMEN_PATH_GOOD);
	}
	for (int h : hist)
		EXPECT_NEAR(h, 10000, 600);
	EXPECT_EQ(c.st.count, 0); // no ring
}

TEST(Reps, ExploresOneBdpRoundRobinFromARandomStart)
{
	Conn c(LUMEN_PATH_REPS, params(256, 16));
	auto ex = c.explore_all();
	ASSERT_EQ(ex.size(), 16u);
	for (size_t i = 1; i < ex.size(); i++)
		EXPECT_EQ(ex[i], (ex[i - 1] + 1) % 256);
	// no more than the entropy space, even with a larger BDP
	Conn small(LUMEN_PATH_REPS, params(4, 100));
	auto ex4 = small.explore_all();
	EXPECT_EQ(std::set<uint16_t>(ex4.begin(), ex4.end()).size(), 4u);
	EXPECT_EQ(ex4.size(), 4u);
	// the round robin wraps at the end of the space
	Conn w(LUMEN_PATH_REPS, params(3, 3));
	auto ex3 = w.explore_all();
	EXPECT_EQ(std::set<uint16_t>(ex3.begin(), ex3.end()), (std::set<uint16_t>{0, 1, 2}));
}

TEST(Reps, RecyclesCleanAcksOldestFirstOncePerAck)
{
	Conn c(LUMEN_PATH_REPS, params(256, 4));
	c.explore_all();
	c.fb(10, LUMEN_PATH_GOOD);
	c.fb(20, LUMEN_PATH_ECN); // marked: dropped
	c.fb(30, LUMEN_PATH_GOOD);
	c.fb(40, LUMEN_PATH_NACK); // dropped
	c.fb(50, LUMEN_PATH_GOOD);
	EXPECT_EQ(c.next(), 10);
	EXPECT_EQ(c.next(), 30);
	EXPECT_EQ(c.next(), 50);
	// empty: back to the round robin, which continues after the exploration
	uint16_t rr = c.next();
	EXPECT_EQ(c.next(), (rr + 1) % 256);
}

TEST(Reps, AFullRingForgetsTheOldest)
{
	Conn c(LUMEN_PATH_REPS, params(256, 0));
	for (uint32_t e = 100; e < 100 + LUMEN_REPS_RING + 3; e++)
		c.fb(e, LUMEN_PATH_GOOD);
	EXPECT_EQ(c.st.count, LUMEN_REPS_RING);
	for (uint32_t e = 103; e < 103 + LUMEN_REPS_RING; e++)
		EXPECT_EQ(c.next(), e);
	EXPECT_EQ(c.st.count, 0);
}

TEST(Reps, RefusesAnEchoItCannotHaveSent)
{
	Conn c(LUMEN_PATH_REPS, params(16, 0));
	c.fb(16, LUMEN_PATH_GOOD);
	c.fb(65535, LUMEN_PATH_GOOD);
	c.fb(0xFFFFFFFFu, LUMEN_PATH_GOOD);
	EXPECT_EQ(c.st.count, 0);
	for (int i = 0; i < 100; i++)
		ASSERT_LT(c.next(), 16);
}

TEST(RepsFreeze, LowRttTimeoutReplaysKnownGoodPathsThenReexplores)
{
	lumen_path_params p = params(256, 4);
	p.freeze_ns = 10 * kMs;
	Conn c(LUMEN_PATH_REPS_FREEZE, p);
	c.explore_all();
	c.fb(7, LUMEN_PATH_GOOD, 1 * kMs);
	c.fb(9, LUMEN_PATH_GOOD, 1 * kMs);
	// a timeout at a high RTT is congestion: no freeze
	c.fb(3, LUMEN_PATH_TIMEOUT, 2 * kMs, 100000, 10000);
	EXPECT_EQ(c.st.freeze, 0);
	// at a low RTT it is a failure: freeze
	c.fb(3, LUMEN_PATH_TIMEOUT, 2 * kMs, 12000, 10000);
	EXPECT_EQ(c.st.freeze & LUMEN_PATH_FROZEN, LUMEN_PATH_FROZEN);
	std::vector<uint16_t> replay;
	for (int i = 0; i < 6; i++)
		replay.push_back(c.next(5 * kMs));
	EXPECT_EQ(replay, (std::vector<uint16_t>{7, 9, 7, 9, 7, 9})); // not consumed
	c.fb(11, LUMEN_PATH_GOOD, 6 * kMs); // good ACKs still join
	EXPECT_EQ(c.next(6 * kMs), 7);
	EXPECT_EQ(c.next(6 * kMs), 9);
	EXPECT_EQ(c.next(6 * kMs), 11);
	// a second timeout while frozen does not extend it
	c.fb(3, LUMEN_PATH_TIMEOUT, 11 * kMs, 12000, 10000);
	// deadline 2 ms + 10 ms: thawed, the ring forgotten, exploring again
	uint16_t e = c.next(12 * kMs);
	EXPECT_EQ(c.st.freeze, 0);
	EXPECT_EQ(c.st.count, 0);
	EXPECT_EQ(c.st.explore_left, 3);
	EXPECT_EQ(c.next(12 * kMs), (e + 1) % 256);
}

TEST(RepsFreeze, NoFreezeWhileExploringOrForPlainReps)
{
	Conn c(LUMEN_PATH_REPS_FREEZE, params(256, 4));
	c.fb(1, LUMEN_PATH_TIMEOUT, 0, 1000, 10000);
	EXPECT_EQ(c.st.freeze, 0);
	Conn r(LUMEN_PATH_REPS, params(256, 0));
	r.fb(1, LUMEN_PATH_TIMEOUT, 0, 1000, 10000);
	EXPECT_EQ(r.st.freeze, 0);
	// absurd RTTs cannot overflow the comparison into a freeze
	Conn big(LUMEN_PATH_REPS_FREEZE, params(256, 0));
	big.fb(1, LUMEN_PATH_TIMEOUT, 0, UINT64_MAX, UINT64_MAX);
	big.fb(1, LUMEN_PATH_TIMEOUT, 0, 1, UINT64_MAX);
	EXPECT_EQ(big.st.freeze, 0);
}

TEST(RepsFreeze, AnEmptyRingFreezesOnRandomPaths)
{
	Conn c(LUMEN_PATH_REPS_FREEZE, params(64, 0));
	c.fb(1, LUMEN_PATH_TIMEOUT, 0, 1000, 10000);
	ASSERT_EQ(c.st.freeze & LUMEN_PATH_FROZEN, LUMEN_PATH_FROZEN);
	std::set<uint16_t> seen;
	for (int i = 0; i < 200; i++)
		seen.insert(c.next(1 * kMs));
	EXPECT_GT(seen.size(), 40u);
}

// A fabric of 8 paths where ECMP maps entropy e to path e % 8, path 3 dead
// (its packets time out) and path 5 congested (every packet CE-marked).
// Each packet's fate comes back one "RTT" (here: 8 packets) later.
struct Fabric {
	std::map<int, int> sent; // per path, after warm-up
	int run(Conn &c, int packets)
	{
		std::vector<std::pair<uint16_t, lumen_path_signal>> in_flight;
		uint64_t now = 0;
		for (int i = 0; i < packets; i++) {
			now += 1000;
			uint16_t e = c.next(now);
			int path = e % 8;
			if (i >= packets / 2)
				sent[path]++;
			in_flight.push_back({e, path == 3   ? LUMEN_PATH_TIMEOUT
						: path == 5 ? LUMEN_PATH_ECN
							    : LUMEN_PATH_GOOD});
			if (in_flight.size() > 8) {
				auto [fe, fs] = in_flight.front();
				in_flight.erase(in_flight.begin());
				c.fb(fe, fs, now, 10000, 10000);
			}
		}
		return sent[3] + sent[5];
	}
};

TEST(PathPolicies, RepsAvoidsADeadAndACongestedPathOpsDoesNot)
{
	Fabric ops_f, reps_f, freeze_f;
	Conn ops(LUMEN_PATH_OPS, params(256, 16));
	Conn reps(LUMEN_PATH_REPS, params(256, 16));
	Conn freeze(LUMEN_PATH_REPS_FREEZE, params(256, 16));
	int bad_ops = ops_f.run(ops, 20000);
	int bad_reps = reps_f.run(reps, 20000);
	int bad_freeze = freeze_f.run(freeze, 20000);
	std::printf("packets on the bad paths, of the last 10000: ops %d, reps %d, reps-freeze %d\n", bad_ops, bad_reps,
		    bad_freeze);
	// spraying sends 2/8 of its packets to the bad paths
	EXPECT_NEAR(bad_ops, 10000 * 2 / 8, 300);
	// REPS recycles only what came back clean: nearly nothing on them
	EXPECT_LT(bad_reps, 100) << "reps sent " << bad_reps << " of 10000 to the bad paths";
	EXPECT_LT(bad_freeze, 100) << "reps-freeze sent " << bad_freeze;
}

} // namespace
