// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// Path policies (include/lumen/path_policy.h): ECMP keeps one entropy, OPS
// sprays uniformly, REPS explores a BDP round-robin then recycles the
// entropies of clean ACKs oldest first, drops marked ones, overwrites the
// oldest when its ring is full, and reps-freeze replays known-good paths
// after a low-RTT timeout, then re-explores; Ethereal keeps one pinned
// entropy and wants a reroute only for a NACK or a timeout on it. A network
// with a dead path checks the point of it all: REPS stops using the dead
// path, OPS does not.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string>
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

// How many distinct entropies n connections of a pinning policy start on
// (one seeded generator for them all).
size_t first_entropies(lumen_path_mode mode, int n)
{
	std::set<uint16_t> seen;
	lumen_rng rng;
	lumen_rng_seed(&rng, 7);
	lumen_path_params p = params();
	for (int i = 0; i < n; i++) {
		lumen_path st;
		lumen_path_init(&st, &p, mode, &rng);
		seen.insert(lumen_path_next(&st, &p, &rng, 0));
	}
	return seen.size();
}

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
	// exploration counter; the freeze deadline comes after. Ethereal's
	// reroute wish is a bit of the freeze byte, not more state.
	EXPECT_EQ(offsetof(lumen_path, frozen_until_us), 24u);
	EXPECT_LT(offsetof(lumen_path, frozen_until_us), 25u);
	EXPECT_EQ(sizeof(lumen_path), 28u);
	EXPECT_EQ(LUMEN_PATH_REROUTE & (LUMEN_PATH_FROZEN | LUMEN_PATH_REPLAY_MASK), 0u);
}

TEST(PathModes, EveryModeHasItsOwnName)
{
	std::set<std::string> names;
	for (uint32_t m = 0; m < LUMEN_PATH_MODES; m++) {
		std::string n = lumen_path_mode_name(m);
		EXPECT_NE(n, "?") << "mode " << m;
		names.insert(n);
	}
	EXPECT_EQ(names.size(), (size_t)LUMEN_PATH_MODES);
	EXPECT_STREQ(lumen_path_mode_name(LUMEN_PATH_REPS_FREEZE), "reps-freeze");
	EXPECT_STREQ(lumen_path_mode_name(LUMEN_PATH_ETHEREAL), "ethereal");
	EXPECT_EQ(LUMEN_PATH_ETHEREAL, LUMEN_PATH_REPS_FREEZE + 1);
	EXPECT_STREQ(lumen_path_mode_name(LUMEN_PATH_MODES), "?");
	EXPECT_STREQ(lumen_path_mode_name(0xFFFFFFFFu), "?");
}

TEST(PathModes, ANameGivesItsModeBackAndNothingElseDoes)
{
	for (uint32_t m = 0; m < LUMEN_PATH_MODES; m++)
		EXPECT_EQ(lumen_path_mode_from_name(lumen_path_mode_name(m)), (int)m);
	for (const char *bad : {"", "?", "rep", "repss", "reps-", "REPS", "ecmp ", "reps-freezer", "ethereal\n"})
		EXPECT_EQ(lumen_path_mode_from_name(bad), -1) << "'" << bad << "'";
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
	EXPECT_GT(first_entropies(LUMEN_PATH_ECMP, 64), 50u);
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

TEST(Ethereal, OnePinnedEntropyThatGoodAndEcnDoNotMove)
{
	Conn c(LUMEN_PATH_ETHEREAL, params(256, 16));
	uint16_t e = c.next();
	for (int i = 0; i < 100; i++) {
		c.fb(e, i % 2 ? LUMEN_PATH_ECN : LUMEN_PATH_GOOD);
		ASSERT_EQ(c.next(), e);
	}
	EXPECT_FALSE(lumen_path_reroute_wanted(&c.st));
	EXPECT_EQ(c.st.count, 0); // no ring, no exploration
	// connections start apart, as ECMP's
	EXPECT_GT(first_entropies(LUMEN_PATH_ETHEREAL, 64), 50u);
}

TEST(Ethereal, NackOrTimeoutOnThePinnedEntropyWantsAReroute)
{
	for (lumen_path_signal s : {LUMEN_PATH_NACK, LUMEN_PATH_TIMEOUT}) {
		Conn c(LUMEN_PATH_ETHEREAL, params(16, 0));
		ASSERT_EQ(lumen_path_pin(&c.st, &c.p, 5), 0);
		EXPECT_EQ(c.next(), 5);
		c.fb(5, s);
		EXPECT_TRUE(lumen_path_reroute_wanted(&c.st)) << "signal " << s;
		EXPECT_EQ(c.next(), 5); // the caller moves it, not the policy
		EXPECT_EQ(lumen_path_take_reroute(&c.st), 1);
		EXPECT_FALSE(lumen_path_reroute_wanted(&c.st));
		EXPECT_EQ(lumen_path_take_reroute(&c.st), 0); // taken once
		ASSERT_EQ(lumen_path_pin(&c.st, &c.p, 9), 0);
		for (int i = 0; i < 10; i++)
			ASSERT_EQ(c.next(), 9);
		// the old path's late news moves nothing
		c.fb(5, s);
		EXPECT_FALSE(lumen_path_reroute_wanted(&c.st));
		c.fb(9, s);
		EXPECT_TRUE(lumen_path_reroute_wanted(&c.st));
		// pinning is the reroute: the wish is done
		ASSERT_EQ(lumen_path_pin(&c.st, &c.p, 2), 0);
		EXPECT_FALSE(lumen_path_reroute_wanted(&c.st));
	}
}

TEST(Ethereal, RefusesEntropiesOutsideTheSpace)
{
	Conn c(LUMEN_PATH_ETHEREAL, params(16, 0));
	ASSERT_EQ(lumen_path_pin(&c.st, &c.p, 15), 0);
	c.fb(15, LUMEN_PATH_NACK);
	ASSERT_TRUE(lumen_path_reroute_wanted(&c.st));
	lumen_path before = c.st;
	// a chooser's answer out of range: refused, nothing changed
	for (uint32_t bad : {16u, 65535u, 65536u, 0xFFFFFFFFu}) {
		EXPECT_EQ(lumen_path_pin(&c.st, &c.p, bad), -1) << bad;
		EXPECT_EQ(std::memcmp(&before, &c.st, sizeof(before)), 0);
	}
	EXPECT_EQ(c.next(), 15);
	EXPECT_TRUE(lumen_path_reroute_wanted(&c.st));
	lumen_path_take_reroute(&c.st);
	// echoes it cannot have sent: no reroute (16 wraps to 0, not to 15)
	for (uint32_t bad : {16u, 31u, 65535u, 0xFFFFFFFFu}) {
		c.fb(bad, LUMEN_PATH_NACK);
		c.fb(bad, LUMEN_PATH_TIMEOUT);
	}
	EXPECT_FALSE(lumen_path_reroute_wanted(&c.st));
	// one entropy: pinned to it, a reroute may be wanted, 0 is all there is
	Conn one(LUMEN_PATH_ETHEREAL, params(1, 0));
	EXPECT_EQ(one.next(), 0);
	one.fb(0, LUMEN_PATH_TIMEOUT);
	EXPECT_TRUE(lumen_path_reroute_wanted(&one.st));
	EXPECT_EQ(lumen_path_pin(&one.st, &one.p, 1), -1);
	EXPECT_EQ(lumen_path_pin(&one.st, &one.p, 0), 0);
}

TEST(Ethereal, OtherModesNeitherWantReroutesNorTakePins)
{
	for (lumen_path_mode m : {LUMEN_PATH_ECMP, LUMEN_PATH_OPS, LUMEN_PATH_REPS, LUMEN_PATH_REPS_FREEZE}) {
		Conn c(m, params(16, 0));
		for (uint32_t e = 0; e < 16; e++) {
			c.fb(e, LUMEN_PATH_NACK);
			c.fb(e, LUMEN_PATH_TIMEOUT, 0, 100000, 10000); // high RTT: no freeze
		}
		EXPECT_FALSE(lumen_path_reroute_wanted(&c.st)) << "mode " << m;
		uint8_t freeze = c.st.freeze;
		EXPECT_EQ(lumen_path_take_reroute(&c.st), 0);
		EXPECT_EQ(c.st.freeze, freeze);
		// ECMP's entropy can be pinned too; the others have none to pin
		EXPECT_EQ(lumen_path_pin(&c.st, &c.p, 3), m == LUMEN_PATH_ECMP ? 0 : -1) << "mode " << m;
	}
	// a frozen reps-freeze keeps its freeze byte whatever is taken
	Conn f(LUMEN_PATH_REPS_FREEZE, params(16, 0));
	f.fb(1, LUMEN_PATH_GOOD);
	f.fb(1, LUMEN_PATH_TIMEOUT, 0, 1000, 10000);
	ASSERT_EQ(f.st.freeze & LUMEN_PATH_FROZEN, LUMEN_PATH_FROZEN);
	uint8_t freeze = f.st.freeze;
	EXPECT_EQ(lumen_path_take_reroute(&f.st), 0);
	EXPECT_EQ(f.st.freeze, freeze);
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

// Ethereal on the same fabric, pinned to the dead path: its first timeout
// moves it (here to the next entropy, the caller's choice), the timeouts
// of the packets still on the dead path do not move it again, and it never
// goes back. Marks do not move it (path 5 is the receiver's business).
TEST(PathPolicies, EtherealLeavesADeadPathOnceAndStaysOnAMarkedOne)
{
	for (uint32_t start : {3u, 5u}) {
		Fabric f;
		Conn c(LUMEN_PATH_ETHEREAL, params(256, 16));
		ASSERT_EQ(lumen_path_pin(&c.st, &c.p, start), 0);
		int reroutes = 0;
		// Fabric::run's feedback, then the caller's reroute, packet by packet
		std::vector<std::pair<uint16_t, lumen_path_signal>> in_flight;
		for (int i = 0; i < 2000; i++) {
			uint16_t e = c.next();
			f.sent[e % 8]++;
			in_flight.push_back({e, e % 8 == 3   ? LUMEN_PATH_TIMEOUT
						: e % 8 == 5 ? LUMEN_PATH_ECN
							     : LUMEN_PATH_GOOD});
			if (in_flight.size() > 8) {
				c.fb(in_flight.front().first, in_flight.front().second);
				in_flight.erase(in_flight.begin());
				if (lumen_path_take_reroute(&c.st)) {
					reroutes++;
					ASSERT_EQ(lumen_path_pin(&c.st, &c.p, (c.next() + 1) % 256), 0);
				}
			}
		}
		if (start == 3) {
			EXPECT_EQ(reroutes, 1);
			EXPECT_EQ(f.sent[3], 9); // until the first timeout came back
			EXPECT_EQ(f.sent[4], 2000 - 9);
		} else {
			EXPECT_EQ(reroutes, 0);
			EXPECT_EQ(f.sent[5], 2000);
		}
	}
}

} // namespace
