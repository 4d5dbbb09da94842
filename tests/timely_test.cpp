// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// TIMELY (include/lumen/timely.h) against a double-precision transcription of
// the TIMELY paper's Algorithm 1 (SIGCOMM 2015), with lumen's documented
// decisions (rate within [delta, HostBw], the first sample only seeds,
// completion events every seg_bytes), and the TCP binding's helpers.
//
// Bound asserted for one event from the same state, random or along a
// trajectory of 20k events: rate |err| <= 1.5e-4 of the rate before the event
// + 2 bytes/s (the gradient and the factors in Q16). Whole trajectories are
// not compared: the branch taken depends on the sign of rtt_diff, so one
// rounding difference near zero sends the two down different, equally valid
// paths.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

extern "C" {
#include "lumen/timely.h"
}

namespace
{

constexpr double kOne = 65536.0;

lumen_timely_params params()
{
	lumen_timely_params p;
	lumen_timely_params_default(&p);
	EXPECT_EQ(lumen_timely_params_validate(&p), 0);
	return p;
}

// Algorithm 1, in double precision
struct RefTimely {
	double alpha, beta, t_low, t_high, delta, lo, hi;
	unsigned hai_events;
	double rate, prev_rtt = 0, rtt_diff = 0, min_rtt = 0;
	unsigned neg = 0;

	explicit RefTimely(const lumen_timely_params &p)
	{
		alpha = p.alpha / kOne;
		beta = p.beta / kOne;
		t_low = double(p.t_low_ns);
		t_high = double(p.t_high_ns);
		double dmbps = p.delta_mbps ? p.delta_mbps : std::max(1.0, std::floor(p.host_bw_mbps / 1000.0));
		delta = dmbps * 125000.0;
		hi = p.host_bw_mbps * 125000.0;
		lo = std::min(delta, hi);
		hai_events = p.hai_events;
		rate = hi;
	}

	void update(double rtt)
	{
		min_rtt = min_rtt == 0 ? rtt : std::min(min_rtt, rtt);
		if (prev_rtt == 0) {
			prev_rtt = rtt;
			return;
		}
		double new_diff = rtt - prev_rtt;
		prev_rtt = rtt;
		// lumen keeps rtt_diff in whole ns, rounded down
		rtt_diff = std::floor((1 - alpha) * rtt_diff + alpha * new_diff);
		double gradient = rtt_diff / min_rtt;
		if (rtt < t_low) {
			rate += delta;
		} else if (rtt > t_high) {
			rate *= 1 - beta * (1 - t_high / rtt);
			neg = 0;
		} else if (gradient <= 0) {
			neg++;
			rate += (neg >= hai_events ? 5 : 1) * delta;
		} else {
			rate *= std::max(0.0, 1 - beta * std::min(gradient, 1.0));
			neg = 0;
		}
		rate = std::clamp(rate, lo, hi);
	}
};

TEST(Timely, OneEventMatchesThePaperFromTheSameState)
{
	std::mt19937_64 rng(5);
	lumen_timely_params p = params();
	for (int i = 0; i < 200000; i++) {
		lumen_timely st;
		lumen_timely_init(&st, &p, 0);
		st.rate = 125000ull * (10 + rng() % 10000);
		st.prev_rtt_ns = 10000 + rng() % 1000000;
		st.rtt_diff_ns = int64_t(rng() % 200000) - 100000;
		st.min_rtt_ns = 10000 + rng() % 20000;
		st.neg_events = uint32_t(rng() % 7);
		RefTimely ref(p);
		ref.rate = double(st.rate);
		ref.prev_rtt = double(st.prev_rtt_ns);
		ref.rtt_diff = double(st.rtt_diff_ns);
		ref.min_rtt = double(st.min_rtt_ns);
		ref.neg = st.neg_events;
		uint64_t rtt = 10000 + rng() % 1000000;
		const double before = double(st.rate);
		lumen_timely_update(&st, &p, rtt);
		ref.update(double(rtt));
		ASSERT_NEAR(double(st.rate), ref.rate, before * 1.5e-4 + 2) << "i " << i << " rtt " << rtt;
		ASSERT_EQ(st.neg_events, ref.neg);
	}
}

TEST(Timely, EveryStepOfATrajectoryMatchesAReferenceTranscription)
{
	lumen_timely_params p = params();
	for (uint64_t seed : {1, 2, 3}) {
		std::mt19937_64 rng(seed);
		lumen_timely st;
		lumen_timely_init(&st, &p, 0);
		RefTimely ref(p);
		double rtt = 40000;
		std::vector<double> err;
		for (int i = 0; i < 20000; i++) {
			// a queue that drifts, with noise: RTT between 20 us and 900 us
			rtt = std::clamp(rtt + double(int64_t(rng() % 40001) - 20000), 20000.0, 900000.0);
			// the reference takes the step from the core's state
			ref.rate = double(st.rate);
			ref.prev_rtt = double(st.prev_rtt_ns);
			ref.rtt_diff = double(st.rtt_diff_ns);
			ref.min_rtt = double(st.min_rtt_ns);
			ref.neg = st.neg_events;
			const double before = double(st.rate);
			lumen_timely_update(&st, &p, uint64_t(rtt));
			ref.update(std::floor(rtt));
			err.push_back(std::fabs(double(st.rate) - ref.rate) / before);
			ASSERT_EQ(st.neg_events, ref.neg) << i;
		}
		std::sort(err.begin(), err.end());
		std::printf("[timely] seed %llu: rate error p50 %.2e max %.2e; events %u low %u high %u inc %u hai %u "
			    "dec %u\n",
			    (unsigned long long)seed, err[err.size() / 2], err.back(), st.stats.events, st.stats.low,
			    st.stats.high, st.stats.increases, st.stats.hai, st.stats.decreases);
		EXPECT_LE(err.back(), 1.5e-4);
		// every branch ran
		EXPECT_GT(st.stats.low, 0u);
		EXPECT_GT(st.stats.high, 0u);
		EXPECT_GT(st.stats.increases, 0u);
		EXPECT_GT(st.stats.hai, 0u);
		EXPECT_GT(st.stats.decreases, 0u);
	}
}

TEST(Timely, EachBranchDoesWhatThePaperSays)
{
	lumen_timely_params p = params(); // 10 Gbit/s: delta 10 Mbit/s
	const uint64_t delta = 10 * 125000ull;
	lumen_timely st;
	lumen_timely_init(&st, &p, 0);
	EXPECT_EQ(st.rate, 10000 * 125000ull); // line rate
	EXPECT_EQ(lumen_timely_update(&st, &p, 100000), LUMEN_TIMELY_SEEDED);
	st.rate = 5000 * 125000ull;
	// below T_low: + delta
	EXPECT_EQ(lumen_timely_update(&st, &p, 40000), LUMEN_TIMELY_LOW);
	EXPECT_EQ(st.rate, 5000 * 125000ull + delta);
	// above T_high: x (1 - 0.8 (1 - 500/1000)) = x 0.6
	uint64_t r = st.rate;
	EXPECT_EQ(lumen_timely_update(&st, &p, 1000000), LUMEN_TIMELY_HIGH);
	EXPECT_NEAR(double(st.rate), double(r) * 0.6, double(r) * 1e-4);
	// falling RTT in the band: additive, then HAI on the 5th event in a row
	for (int i = 1; i <= 6; i++) {
		r = st.rate;
		lumen_timely_action a = lumen_timely_update(&st, &p, uint64_t(400000 - i * 10000));
		EXPECT_EQ(a, i >= 5 ? LUMEN_TIMELY_HAI : LUMEN_TIMELY_INCREASE) << i;
		EXPECT_EQ(st.rate, r + (i >= 5 ? 5 : 1) * delta) << i;
	}
	// a rising RTT: x (1 - beta * gradient), and HAI starts over
	r = st.rate;
	EXPECT_EQ(lumen_timely_update(&st, &p, 450000), LUMEN_TIMELY_DECREASE);
	EXPECT_LT(st.rate, r);
	EXPECT_EQ(st.neg_events, 0u);
}

TEST(Timely, RateStaysBetweenDeltaAndLineRate)
{
	lumen_timely_params p = params();
	lumen_timely st;
	lumen_timely_init(&st, &p, 0);
	lumen_timely_update(&st, &p, 20000);
	for (int i = 0; i < 100; i++)
		lumen_timely_update(&st, &p, 20000 + uint64_t(i) * 100000); // steep rise
	EXPECT_EQ(st.rate, lumen_timely_delta(&p));
	for (int i = 0; i < 100000; i++)
		lumen_timely_update(&st, &p, 10000); // below T_low forever
	EXPECT_EQ(st.rate, 10000 * 125000ull);
}

TEST(Timely, CompletionEventsComeEverySegmentWithAnRttSample)
{
	lumen_timely_params p = params();
	lumen_timely st;
	const uint32_t isn = 0xfffff000u; // wraps
	lumen_timely_init(&st, &p, isn);
	uint32_t una = isn;
	int events = 0;
	// the first ACK ends the (empty) first round: the seeding event
	EXPECT_EQ(lumen_timely_on_ack(&st, &p, una + 1024, una + (1u << 30), 30000), 1);
	una += 1024;
	for (int i = 0; i < 160; i++) {
		una += 1024;
		// snd_nxt far ahead: only segments complete events
		events += lumen_timely_on_ack(&st, &p, una, una + (1u << 30), i % 40 == 39 ? 0 : 30000);
	}
	// 160 KiB in 16 KiB segments; the segment that completed on ACK 79
	// waited for ACK 80's sample, which shifts the rest: events on ACKs 15,
	// 31, 47, 63, 80, 96, 112, 128, 144
	EXPECT_EQ(events, 9);
	EXPECT_EQ(st.stats.events, 10u);
	// an ACK that acknowledges nothing new adds nothing
	EXPECT_EQ(lumen_timely_on_ack(&st, &p, una - 100, una, 30000), 0);
}

// A slow flow gets an event per round trip, not only per segment.
TEST(Timely, ARoundTripOfDataIsAnEventToo)
{
	lumen_timely_params p = params();
	lumen_timely st;
	lumen_timely_init(&st, &p, 0);
	uint32_t una = 0;
	int events = 0;
	for (int i = 0; i < 40; i++) {
		una += 1448;
		// a 4-packet window: each ACK lets one more out
		events += lumen_timely_on_ack(&st, &p, una, una + 4 * 1448, 30000);
	}
	// the first ACK ends the empty first round; then every 4th ACK reaches
	// the snd_nxt of the event before: ACKs 1, 5, ..., 37
	EXPECT_EQ(events, 10);
}

TEST(Timely, LossHalvesOncePerEpisodeAndUndoRestores)
{
	lumen_timely_params p = params();
	lumen_timely st;
	lumen_timely_init(&st, &p, 0);
	const uint64_t r = st.rate;
	lumen_timely_loss(&st, &p, 1);
	lumen_timely_loss(&st, &p, 1); // same episode
	EXPECT_EQ(st.rate, r / 2);
	EXPECT_EQ(st.stats.loss_cuts, 1u);
	lumen_timely_loss(&st, &p, 0);
	lumen_timely_loss(&st, &p, 1); // a new episode
	EXPECT_EQ(st.rate, r / 4);
	lumen_timely_undo(&st, &p);
	EXPECT_EQ(st.rate, r / 2);
	lumen_timely_undo(&st, &p); // nothing more to undo
	EXPECT_EQ(st.rate, r / 2);
	EXPECT_EQ(st.stats.loss_undos, 1u);
}

TEST(Timely, WindowIsTwiceRateTimesRtt)
{
	lumen_timely_params p = params();
	lumen_timely st;
	lumen_timely_init(&st, &p, 0);
	EXPECT_EQ(lumen_timely_cwnd_bytes(&st, &p, 1448), 2 * 1250000000ull * 50000 / 1000000000); // T_low
	lumen_timely_update(&st, &p, 100000);
	EXPECT_EQ(lumen_timely_cwnd_bytes(&st, &p, 1448), 250000u);
	st.rate = lumen_timely_delta(&p);
	EXPECT_EQ(lumen_timely_cwnd_bytes(&st, &p, 1448), 4u * 1448); // the floor
}

TEST(Timely, RestartForgetsTheRttHistoryAndKeepsTheRate)
{
	lumen_timely_params p = params();
	lumen_timely st;
	lumen_timely_init(&st, &p, 0);
	lumen_timely_update(&st, &p, 100000);
	lumen_timely_update(&st, &p, 200000);
	const uint64_t r = st.rate;
	lumen_timely_restart(&st);
	EXPECT_EQ(st.rate, r);
	EXPECT_EQ(lumen_timely_update(&st, &p, 300000), LUMEN_TIMELY_SEEDED);
}

// TCP's TX_START at a low rate is pacing, not idle.
TEST(Timely, IdleIsTwiceTheWindowsSendTimeAndAtLeastAMillisecond)
{
	lumen_timely_params p = params();
	lumen_timely st;
	lumen_timely_init(&st, &p, 0);
	st.rate = 1250000; // 10 Mbit/s: 12500 bytes take 10 ms, twice 20 ms
	EXPECT_FALSE(lumen_timely_idle(&st, 12500, 1000000000, 1000000000 + 19999999));
	EXPECT_TRUE(lumen_timely_idle(&st, 12500, 1000000000, 1000000000 + 20000000));
	st.rate = 1250000000; // 10 Gbit/s: the 1 ms floor
	EXPECT_FALSE(lumen_timely_idle(&st, 12500, 1000000000, 1000000000 + 999999));
	EXPECT_TRUE(lumen_timely_idle(&st, 12500, 1000000000, 1000000000 + 1000000));
	EXPECT_TRUE(lumen_timely_idle(&st, 12500, 1000000000, 999999999)); // clock went back
}

TEST(Timely, BadParametersAreRefusedWithTheirReason)
{
	struct Case {
		void (*mutate)(lumen_timely_params &);
		int err;
	};
	const Case cases[] = {
		{[](lumen_timely_params &p) { p.t_low_ns = 0; }, LUMEN_TIMELY_PARAM_ETLOW},
		{[](lumen_timely_params &p) { p.t_high_ns = p.t_low_ns; }, LUMEN_TIMELY_PARAM_ETHIGH},
		{[](lumen_timely_params &p) { p.min_rtt_ns = 999; }, LUMEN_TIMELY_PARAM_EMINRTT},
		{[](lumen_timely_params &p) { p.host_bw_mbps = 0; }, LUMEN_TIMELY_PARAM_EHOSTBW},
		{[](lumen_timely_params &p) { p.delta_mbps = p.host_bw_mbps + 1; }, LUMEN_TIMELY_PARAM_EDELTA},
		{[](lumen_timely_params &p) { p.alpha = 0; }, LUMEN_TIMELY_PARAM_EALPHA},
		{[](lumen_timely_params &p) { p.beta = LUMEN_TIMELY_ONE + 1; }, LUMEN_TIMELY_PARAM_EBETA},
		{[](lumen_timely_params &p) { p.hai_events = 0; }, LUMEN_TIMELY_PARAM_EHAI},
		{[](lumen_timely_params &p) { p.seg_bytes = 1023; }, LUMEN_TIMELY_PARAM_ESEG},
	};
	for (const Case &c : cases) {
		lumen_timely_params p = params();
		c.mutate(p);
		EXPECT_EQ(lumen_timely_params_validate(&p), -c.err);
		EXPECT_NE(std::string(lumen_timely_param_strerror(-c.err)).find("timely"), std::string::npos);
	}
	EXPECT_STREQ(lumen_timely_param_strerror(0), "ok");
}

} // namespace
