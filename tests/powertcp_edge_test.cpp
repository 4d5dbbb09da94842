// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// Edge cases of the PowerTCP core: parameter validation, first ACK, no INT,
// duplicate / zero / wrapped timestamps and counters, path changes, extreme
// rates and queues, sequence wraparound, runtime parameter changes; and of
// the shells' per-ACK policy (powertcp_ack.h): RTT sample conversion,
// counter events, segments and pacing. Run under UBSan in CI, so any
// overflow or division by zero fails the suite.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <string>

extern "C" {
#include "lumen/powertcp_ack.h"
}

namespace
{

constexpr uint32_t kMss = 1448;

lumen_ptcp_params params_10g_20us()
{
	lumen_ptcp_params p;
	lumen_ptcp_params_default(&p);
	p.host_bw_mbps = 10000; // 1.25 bytes/ns
	p.base_rtt_ns = 20000; // host BDP 25000 bytes
	p.expected_flows = 10; // beta 2500 bytes
	return p;
}

// A one- or multi-hop echo as the receiver would return it.
struct Path {
	struct Hop {
		uint16_t rate;
		uint64_t tx = 0, qlen = 0;
	};
	std::vector<Hop> hops;
	uint64_t now = 0;

	explicit Path(std::vector<uint32_t> rates_mbps, uint64_t start_ns = 1000000)
	{
		for (uint32_t r : rates_mbps)
			hops.push_back(Hop{lumen_int_rate_encode(r)});
		now = start_ns;
	}

	// advance time; every hop sends util * rate * dt and its queue moves by dq
	lumen_int_opt step(uint64_t dt_ns, double util, int64_t dq)
	{
		now += dt_ns;
		lumen_int_opt o{};
		o.version = LUMEN_INT_VERSION;
		o.flags = LUMEN_INT_FLAG_ECHO;
		o.slots = o.count = uint8_t(hops.size());
		for (size_t i = 0; i < hops.size(); i++) {
			auto &h = hops[i];
			h.tx += uint64_t(util * lumen_int_rate_mbps(h.rate) / 8000.0 * double(dt_ns));
			h.qlen = uint64_t(std::max<int64_t>(0, int64_t(h.qlen) + dq));
			lumen_int_hop_make(&o.hops[i], now, h.tx, h.qlen, h.rate);
		}
		return o;
	}
};

struct Flow {
	lumen_ptcp_params p;
	lumen_ptcp st{};
	uint32_t una, nxt;
	uint64_t now = 1000000;

	Flow(const lumen_ptcp_params &params, lumen_ptcp_mode mode, uint32_t isn = 1000) : p(params), una(isn)
	{
		EXPECT_EQ(lumen_ptcp_params_validate(&p), 0);
		lumen_ptcp_init(&st, &p, mode, isn, kMss);
		nxt = isn + uint32_t(st.cwnd_bytes);
	}

	lumen_ptcp_result ack(const lumen_int_opt *echo, uint64_t rtt_ns, uint32_t acked = kMss, uint64_t dt = 2000)
	{
		now += dt;
		una += acked;
		nxt = una + uint32_t(st.cwnd_bytes);
		lumen_ptcp_ack a{now, rtt_ns, una, nxt, kMss};
		return lumen_ptcp_on_ack(&st, &p, &a, echo);
	}
	// an ACK carrying the path's echo after dt_ns (Path::step), no RTT sample
	lumen_ptcp_result ack_after(Path &path, uint64_t dt_ns, double util, int64_t dq)
	{
		lumen_int_opt echo = path.step(dt_ns, util, dq);
		return ack(&echo, 0);
	}
};

// ------------------------------------------------------------------------
// Parameters

TEST(Params, DefaultsAreValidAndFromTheThesis)
{
	lumen_ptcp_params p;
	lumen_ptcp_params_default(&p);
	EXPECT_EQ(lumen_ptcp_params_validate(&p), 0);
	EXPECT_NEAR(p.gamma / 65536.0, 0.9, 1e-4);
	EXPECT_EQ(p.beta_bytes, 0u);
}

TEST(Params, FitHostBwKeepsARateThatFitsAndClampsOneThatDoesNot)
{
	lumen_ptcp_params p = params_10g_20us();
	EXPECT_EQ(lumen_ptcp_fit_host_bw(&p, 100000), 100000u); // 250 KB BDP
	p.base_rtt_ns = 1000000000ull; // 1 s: 10 Gbit/s is 1.25 GB, over 1 GiB
	uint32_t fit = lumen_ptcp_fit_host_bw(&p, 10000);
	EXPECT_EQ(fit, 8589u); // floor(2^30 * 8000 / 1e9)
	p.host_bw_mbps = fit;
	EXPECT_EQ(lumen_ptcp_params_validate(&p), 0);
	p.host_bw_mbps = fit + 1;
	EXPECT_EQ(lumen_ptcp_params_validate(&p), -LUMEN_PTCP_PARAM_EBDP);
	p.base_rtt_ns = 0; // tracked tau adapts to the rate instead
	EXPECT_EQ(lumen_ptcp_fit_host_bw(&p, 1600000), 1600000u);
	EXPECT_EQ(lumen_ptcp_fit_host_bw(&p, 0), LUMEN_PTCP_HOST_BW_MIN_MBPS);
}

TEST(Params, EachOutOfRangeFieldIsRefusedWithItsOwnError)
{
	struct Case {
		const char *name;
		void (*mutate)(lumen_ptcp_params *);
		int err;
	} cases[] = {
		{"gamma 0", [](lumen_ptcp_params *p) { p->gamma = 0; }, LUMEN_PTCP_PARAM_EGAMMA},
		{"gamma < 0.01", [](lumen_ptcp_params *p) { p->gamma = LUMEN_PTCP_GAMMA_MIN - 1; },
		 LUMEN_PTCP_PARAM_EGAMMA},
		{"gamma > 1", [](lumen_ptcp_params *p) { p->gamma = LUMEN_PTCP_ONE + 1; }, LUMEN_PTCP_PARAM_EGAMMA},
		{"flows 0", [](lumen_ptcp_params *p) { p->expected_flows = 0; }, LUMEN_PTCP_PARAM_EFLOWS},
		{"flows huge", [](lumen_ptcp_params *p) { p->expected_flows = LUMEN_PTCP_EXPECTED_FLOWS_MAX + 1; },
		 LUMEN_PTCP_PARAM_EFLOWS},
		{"beta > 1GiB", [](lumen_ptcp_params *p) { p->beta_bytes = (1u << 30) + 1; }, LUMEN_PTCP_PARAM_EBETA},
		{"host bw 0", [](lumen_ptcp_params *p) { p->host_bw_mbps = 0; }, LUMEN_PTCP_PARAM_EHOSTBW},
		{"host bw > 1.6T", [](lumen_ptcp_params *p) { p->host_bw_mbps = LUMEN_INT_RATE_MAX_MBPS + 1; },
		 LUMEN_PTCP_PARAM_EHOSTBW},
		{"rtt < 1us", [](lumen_ptcp_params *p) { p->base_rtt_ns = 999; }, LUMEN_PTCP_PARAM_ERTT},
		{"rtt > 1s", [](lumen_ptcp_params *p) { p->base_rtt_ns = 1000000001; }, LUMEN_PTCP_PARAM_ERTT},
		{"bdp > 1GiB",
		 [](lumen_ptcp_params *p) {
			 p->host_bw_mbps = 400000;
			 p->base_rtt_ns = 100000000;
		 },
		 LUMEN_PTCP_PARAM_EBDP},
	};
	std::set<std::string> messages;
	for (auto &c : cases) {
		lumen_ptcp_params p;
		lumen_ptcp_params_default(&p);
		c.mutate(&p);
		EXPECT_EQ(lumen_ptcp_params_validate(&p), -c.err) << c.name;
		messages.insert(lumen_ptcp_param_strerror(-c.err));
	}
	EXPECT_EQ(messages.size(), 6u); // one distinct message per error
	EXPECT_STREQ(lumen_ptcp_param_strerror(0), "ok");
}

TEST(Params, BoundaryValuesAreAccepted)
{
	lumen_ptcp_params p;
	lumen_ptcp_params_default(&p);
	p.gamma = LUMEN_PTCP_GAMMA_MIN;
	EXPECT_EQ(lumen_ptcp_params_validate(&p), 0);
	p.gamma = LUMEN_PTCP_GAMMA_MAX;
	p.expected_flows = 1;
	p.base_rtt_ns = LUMEN_PTCP_BASE_RTT_MIN_NS;
	p.host_bw_mbps = LUMEN_PTCP_HOST_BW_MAX_MBPS;
	EXPECT_EQ(lumen_ptcp_params_validate(&p), 0);
	p.host_bw_mbps = 1;
	p.base_rtt_ns = LUMEN_PTCP_BASE_RTT_MAX_NS;
	p.expected_flows = LUMEN_PTCP_EXPECTED_FLOWS_MAX;
	p.beta_bytes = 1u << 30;
	EXPECT_EQ(lumen_ptcp_params_validate(&p), 0);
	p.base_rtt_ns = 0; // auto: 1 Mbit/s * 1 s fits
	EXPECT_EQ(lumen_ptcp_params_validate(&p), 0);
}

// ------------------------------------------------------------------------
// Start-up, first ACK, no INT

TEST(Start, InitialWindowIsOneHostBdpAndPacedOverTau)
{
	Flow f(params_10g_20us(), LUMEN_PTCP_MODE_INT);
	EXPECT_EQ(f.st.cwnd_bytes, 25000u);
	EXPECT_EQ(f.st.pacing_rate, 1250000000u); // line rate: 25000 B / 20 us
	EXPECT_EQ(f.st.smooth_power, 0u);
}

TEST(Start, TinyBdpIsFlooredAtTwoSegments)
{
	lumen_ptcp_params p;
	lumen_ptcp_params_default(&p);
	p.host_bw_mbps = 1;
	p.base_rtt_ns = 1000; // BDP 0 bytes
	Flow f(p, LUMEN_PTCP_MODE_INT);
	EXPECT_EQ(f.st.cwnd_bytes, 2u * kMss);
	EXPECT_GT(f.st.pacing_rate, 0u);
}

TEST(Start, FirstInt_AckOnlyBaselines)
{
	Flow f(params_10g_20us(), LUMEN_PTCP_MODE_INT);
	Path path({10000});
	EXPECT_EQ(f.ack_after(path, 40000, 1.0, 0), LUMEN_PTCP_HELD);
	EXPECT_EQ(f.st.cwnd_bytes, 25000u);
	EXPECT_EQ(f.st.prev_hop_count, 1);
	EXPECT_EQ(f.ack_after(path, 40000, 1.0, 0), LUMEN_PTCP_UPDATED_INT); // 50000 bytes: 512 B units are 1%
	EXPECT_NEAR(double(f.st.smooth_power) / 65536, 1.0, 0.015);
	EXPECT_EQ(f.st.stats.int_updates, 1u);
	EXPECT_EQ(f.st.stats.int_path_changes, 0u);
}

TEST(NoInt, WithoutRttSamplesTheWindowIsHeld)
{
	Flow f(params_10g_20us(), LUMEN_PTCP_MODE_INT);
	for (int i = 0; i < 100; i++)
		EXPECT_EQ(f.ack(nullptr, 0), LUMEN_PTCP_HELD);
	EXPECT_EQ(f.st.cwnd_bytes, 25000u);
	EXPECT_EQ(f.st.stats.int_missing, 100u);
	EXPECT_EQ(f.st.stats.fallback_updates, 0u);
}

TEST(NoInt, FallsBackToThetaOncePerRtt)
{
	Flow f(params_10g_20us(), LUMEN_PTCP_MODE_INT);
	lumen_int_opt empty{};
	empty.version = LUMEN_INT_VERSION;
	empty.flags = LUMEN_INT_FLAG_ECHO; // echo with zero hops: no INT switch on the path
	int updates = 0;
	for (int i = 0; i < 200; i++) {
		// RTT doubled (queue of one BDP): power 2, window shrinks
		if (f.ack(i % 2 ? &empty : nullptr, 40000, kMss, 2000) == LUMEN_PTCP_UPDATED_RTT)
			updates++;
	}
	EXPECT_EQ(f.st.stats.int_missing, 200u);
	EXPECT_EQ(uint32_t(updates), f.st.stats.fallback_updates);
	EXPECT_EQ(f.st.stats.rtt_updates, 0u);
	// one update per round of ~cwnd bytes: far fewer than one per ACK
	EXPECT_GE(updates, 5);
	EXPECT_LE(updates, 100);
	EXPECT_EQ(f.st.smooth_power, 0u); // the INT estimator saw nothing
	EXPECT_NEAR(double(f.st.smooth_rtt_power) / 65536, 2.0, 0.05);
	EXPECT_LT(f.st.cwnd_bytes, 25000u);
}

TEST(NoInt, ThetaModeIgnoresIntAndUpdatesOncePerRtt)
{
	Flow f(params_10g_20us(), LUMEN_PTCP_MODE_THETA);
	Path path({10000});
	int updates = 0;
	for (int i = 0; i < 100; i++) {
		auto e = path.step(2000, 1.0, 0);
		if (f.ack(&e, 20000) != LUMEN_PTCP_HELD)
			updates++;
	}
	EXPECT_EQ(f.st.stats.int_updates, 0u);
	EXPECT_EQ(f.st.stats.int_missing, 0u);
	EXPECT_EQ(uint32_t(updates), f.st.stats.rtt_updates);
	EXPECT_GE(updates, 3);
	EXPECT_LE(updates, 20);
}

// ------------------------------------------------------------------------
// Timestamps and counters

TEST(Counters, DuplicateEchoIsNoNewsAndKeepsHistory)
{
	Flow f(params_10g_20us(), LUMEN_PTCP_MODE_INT);
	Path path({10000, 25000});
	auto e1 = path.step(2000, 1.0, 0);
	f.ack(&e1, 0);
	auto e2 = path.step(2000, 1.0, 0);
	f.ack(&e2, 0);
	uint64_t cwnd = f.st.cwnd_bytes;
	EXPECT_EQ(f.ack(&e2, 0), LUMEN_PTCP_HELD); // delayed ACK echoing the same request
	EXPECT_EQ(f.st.stats.int_duplicate, 1u);
	EXPECT_EQ(f.st.cwnd_bytes, cwnd);
	EXPECT_EQ(f.ack_after(path, 2000, 1.0, 0), LUMEN_PTCP_UPDATED_INT);
}

TEST(Counters, ZeroTimestampsAndCountersAreOrdinaryValues)
{
	Flow f(params_10g_20us(), LUMEN_PTCP_MODE_INT);
	Path path({10000}, 0);
	path.now = 0;
	lumen_int_opt e0{};
	e0.version = LUMEN_INT_VERSION;
	e0.flags = LUMEN_INT_FLAG_ECHO;
	e0.slots = e0.count = 1;
	lumen_int_hop_make(&e0.hops[0], 0, 0, 0, lumen_int_rate_encode(10000));
	EXPECT_EQ(e0.hops[0].ts, 0u);
	EXPECT_EQ(e0.hops[0].tx, 0u);
	f.ack(&e0, 0);
	auto e1 = path.step(16000, 1.0, 0);
	EXPECT_EQ(f.ack(&e1, 0), LUMEN_PTCP_UPDATED_INT);
	EXPECT_NEAR(double(f.st.last_power) / 65536, 1.0, 0.01);
}

TEST(Counters, PowerIsTheSameAcrossTimestampAndByteCounterWraps)
{
	// the same traffic pattern observed far from and right at a wrap
	for (uint64_t start :
	     {uint64_t(1000000), uint64_t(LUMEN_INT_WRAP_NS - 1000), uint64_t(7 * LUMEN_INT_WRAP_NS - 16)}) {
		Flow f(params_10g_20us(), LUMEN_PTCP_MODE_INT);
		Path path({10000}, start);
		path.hops[0].tx = (1ull << (LUMEN_INT_TX_BITS + lumen_int_unit_shift(10000))) - 3000;
		auto e0 = path.step(0, 1.0, 0);
		f.ack(&e0, 0);
		// 80 us at 10 Gbit/s = 100000 bytes of capacity (512 B units: 0.5%)
		auto e1 = path.step(80000, 0.75, 5120); // 75% out + 5120 B queued
		ASSERT_EQ(f.ack(&e1, 0), LUMEN_PTCP_UPDATED_INT) << start;
		double want = (0.75 + 5120.0 / 100000) * (1 + 5120.0 / 25000);
		EXPECT_NEAR(double(f.st.last_power) / 65536, want, 0.01) << start;
	}
}

TEST(Counters, StaleSampleBeyondHalfWrapIsRefusedAndRebaselined)
{
	Flow f(params_10g_20us(), LUMEN_PTCP_MODE_INT);
	Path path({10000});
	auto e0 = path.step(1000, 1.0, 0);
	f.ack(&e0, 0);
	auto e1 = path.step(LUMEN_INT_WRAP_NS / 2 + 100, 0.0, 0); // idle for 2.1 ms
	EXPECT_EQ(f.ack(&e1, 0), LUMEN_PTCP_HELD);
	EXPECT_EQ(f.st.stats.int_stale, 1u);
	EXPECT_EQ(f.ack_after(path, 2000, 1.0, 0), LUMEN_PTCP_UPDATED_INT);
}

TEST(Counters, ImplausibleByteCounterIsRefused)
{
	Flow f(params_10g_20us(), LUMEN_PTCP_MODE_INT);
	Path path({10000});
	f.ack_after(path, 1000, 1.0, 0);
	EXPECT_EQ(f.ack_after(path, 1000, 8.0, 0), LUMEN_PTCP_HELD); // 8x line rate: a switch restart, not traffic
	EXPECT_EQ(f.st.stats.int_stale, 1u);
}

// ------------------------------------------------------------------------
// Paths

TEST(Paths, HopCountChangeRebaselines)
{
	Flow f(params_10g_20us(), LUMEN_PTCP_MODE_INT);
	Path two({10000, 40000});
	Path three({10000, 40000, 100000});
	auto a = two.step(2000, 1.0, 0);
	f.ack(&a, 0);
	auto b = two.step(2000, 1.0, 0);
	EXPECT_EQ(f.ack(&b, 0), LUMEN_PTCP_UPDATED_INT);
	EXPECT_EQ(f.ack_after(three, 2000, 1.0, 0), LUMEN_PTCP_HELD);
	EXPECT_EQ(f.st.stats.int_path_changes, 1u);
	EXPECT_EQ(f.st.prev_hop_count, 3);
	EXPECT_EQ(f.ack_after(three, 2000, 1.0, 0), LUMEN_PTCP_UPDATED_INT);
}

// A hop's rate stepping (a circuit coming up) is information, not a path
// change: the record with the new rate cannot be differenced with the old
// one (the byte unit depends on the rate), so that ACK gives no sample, and
// the next is normalised by the new rate; the smoothed power is kept.
TEST(Paths, RateChangeOfAHopIsInformation)
{
	Flow f(params_10g_20us(), LUMEN_PTCP_MODE_INT);
	Path path({10000});
	auto a = path.step(2000, 1.0, 0);
	f.ack(&a, 0);
	auto a2 = path.step(2000, 1.0, 0);
	EXPECT_EQ(f.ack(&a2, 0), LUMEN_PTCP_UPDATED_INT);
	const uint64_t smooth = f.st.smooth_power;
	path.hops[0].rate = lumen_int_rate_encode(40000);
	auto b = path.step(2000, 0.25, 0); // the same bytes as before: a quarter of the new rate
	EXPECT_EQ(f.ack(&b, 0), LUMEN_PTCP_HELD);
	EXPECT_EQ(f.st.stats.int_rate_changes, 1u);
	EXPECT_EQ(f.st.stats.int_path_changes, 0u);
	EXPECT_EQ(f.st.stats.int_stale, 0u);
	EXPECT_EQ(f.st.smooth_power, smooth) << "history kept";
	auto c = path.step(2000, 0.25, 0);
	EXPECT_EQ(f.ack(&c, 0), LUMEN_PTCP_UPDATED_INT);
	// the power of a quarter-used link, normalised by the new rate
	EXPECT_NEAR(double(f.st.last_power) / LUMEN_PTCP_ONE, 0.25, 0.05);
	EXPECT_LT(f.st.smooth_power, smooth);
	// and back down: counted again, sampled again
	path.hops[0].rate = lumen_int_rate_encode(10000);
	auto d = path.step(2000, 1.0, 0);
	EXPECT_EQ(f.ack(&d, 0), LUMEN_PTCP_HELD);
	auto e = path.step(2000, 1.0, 0);
	EXPECT_EQ(f.ack(&e, 0), LUMEN_PTCP_UPDATED_INT);
	EXPECT_EQ(f.st.stats.int_rate_changes, 2u);
	EXPECT_EQ(f.st.stats.int_path_changes, 0u);
	// a rate code of 0 ("unknown") is no rate to sample against: an
	// unusable record (counted with the path changes), not a rate change
	path.hops[0].rate = 0;
	auto g = path.step(2000, 1.0, 0);
	EXPECT_EQ(f.ack(&g, 0), LUMEN_PTCP_HELD);
	EXPECT_EQ(f.st.stats.int_rate_changes, 2u);
}

TEST(Paths, MaximumOverHopsPicksTheBottleneck)
{
	Flow f(params_10g_20us(), LUMEN_PTCP_MODE_INT);
	Path path({100000, 10000, 40000});
	auto a = path.step(2000, 0.5, 0);
	f.ack(&a, 0);
	// hop 1 builds a queue; the others are half busy
	path.now += 4000;
	lumen_int_opt b{};
	b.version = LUMEN_INT_VERSION;
	b.flags = LUMEN_INT_FLAG_ECHO;
	b.slots = b.count = 3;
	for (int i = 0; i < 3; i++) {
		auto &h = path.hops[size_t(i)];
		h.tx += uint64_t(0.5 * lumen_int_rate_mbps(h.rate) / 8000.0 * 4000);
		if (i == 1) {
			h.tx += 2500; // now fully busy
			h.qlen += 12500; // half a BDP queued
		}
		lumen_int_hop_make(&b.hops[i], path.now, h.tx, h.qlen, h.rate);
	}
	EXPECT_EQ(f.ack(&b, 0), LUMEN_PTCP_UPDATED_INT);
	EXPECT_EQ(f.st.max_hop, 1);
	// lambda = (12500 + 5000) / 4000ns = 3.5x of 1.25 B/ns; voltage 1.5;
	// 10 Gbit/s counts 512 B units, so one unit of 5000 bytes is 10%
	EXPECT_NEAR(double(f.st.last_power) / 65536, 3.5 * 1.5, 0.15);
}

TEST(Paths, OverflowFlagIsCounted)
{
	Flow f(params_10g_20us(), LUMEN_PTCP_MODE_INT);
	Path path({10000});
	auto a = path.step(2000, 1.0, 0);
	a.flags |= LUMEN_INT_FLAG_OVERFLOW;
	f.ack(&a, 0);
	EXPECT_EQ(f.st.stats.int_overflow, 1u);
}

// ------------------------------------------------------------------------
// Extremes: nothing overflows or divides by zero (UBSan), results stay bounded

TEST(Extremes, RatesQueuesAndParametersAtTheirLimits)
{
	std::mt19937_64 rng(7);
	const uint32_t rates[] = {1, 2, 10, 1000, 100000, 1270000, LUMEN_INT_RATE_MAX_MBPS};
	const uint64_t taus[] = {LUMEN_PTCP_BASE_RTT_MIN_NS, 20000, 1000000, 0};
	for (uint32_t host : {1u, 1000u, 100000u, LUMEN_PTCP_HOST_BW_MAX_MBPS})
		for (uint64_t tau : taus)
			for (uint32_t gamma : {uint32_t(LUMEN_PTCP_GAMMA_MIN), uint32_t(LUMEN_PTCP_ONE)}) {
				lumen_ptcp_params p;
				lumen_ptcp_params_default(&p);
				p.host_bw_mbps = host;
				p.base_rtt_ns = tau;
				p.gamma = gamma;
				if (lumen_ptcp_params_validate(&p))
					continue;
				for (int mode = 0; mode < 2; mode++) {
					Flow f(p, lumen_ptcp_mode(mode));
					for (uint32_t rate : rates) {
						Path path({rate, rates[rng() % std::size(rates)]});
						for (int i = 0; i < 50; i++) {
							double util = (rng() % 3 == 0) ? 0.0 : 1.0;
							int64_t dq =
								(rng() % 2) ? int64_t(1) << 40 : -(int64_t(1) << 40);
							auto e = path.step(16 + rng() % 100000, util, dq);
							uint64_t rtt =
								(rng() % 4 == 0) ? 0 : 1 + rng() % (uint64_t(1) << 33);
							f.ack(&e, rtt, uint32_t(rng()), rng() % 5000000);
							ASSERT_GE(f.st.cwnd_bytes, 2u * kMss);
							ASSERT_LE(f.st.cwnd_bytes, LUMEN_PTCP_MAX_CWND_BYTES);
							ASSERT_LE(f.st.smooth_power, LUMEN_PTCP_POWER_MAX);
							ASSERT_LE(f.st.last_power, LUMEN_PTCP_POWER_MAX);
						}
					}
				}
			}
}

TEST(Extremes, SaturatedQueueGivesLargePowerAndShrinksTheWindow)
{
	Flow f(params_10g_20us(), LUMEN_PTCP_MODE_INT);
	Path path({10000});
	auto a = path.step(2000, 1.0, 100000000); // 100 MB: field saturates
	f.ack(&a, 0);
	EXPECT_EQ(a.hops[0].qlen, LUMEN_INT_QLEN_MAX);
	f.ack_after(path, 2000, 1.0, 0);
	EXPECT_GT(f.st.last_power, 100 * LUMEN_PTCP_ONE); // >= 4.19 ms of queue vs tau 20 us
	EXPECT_LT(f.st.cwnd_bytes, 25000u); // the first ACK already cuts
	for (int i = 0; i < 17; i++) { // one window of ACKs
		f.ack_after(path, 2000, 1.0, 0);
	}
	EXPECT_LT(f.st.cwnd_bytes, 25000u / 2);
}

TEST(Extremes, IdleNetworkPowerIsFlooredSoTheWindowStaysBounded)
{
	Flow f(params_10g_20us(), LUMEN_PTCP_MODE_INT);
	Path path({10000});
	for (int i = 0; i < 2000; i++) {
		auto e = path.step(2000, 0.0, 0); // nothing sent: power 0
		f.ack(&e, 0, 20000);
	}
	EXPECT_EQ(f.st.smooth_power, 1u); // smallest positive Q16
	EXPECT_EQ(f.st.cwnd_bytes, 25000u + 2500u); // capped at host BDP + beta
}

TEST(Extremes, ZeroMssIsTreatedAsOneByte)
{
	lumen_ptcp_params p = params_10g_20us();
	lumen_ptcp st;
	lumen_ptcp_init(&st, &p, LUMEN_PTCP_MODE_INT, 0, 0);
	lumen_ptcp_ack a{100, 1000, 10, 20, 0};
	lumen_ptcp_on_ack(&st, &p, &a, nullptr);
	EXPECT_GE(st.cwnd_bytes, 2u);
}

// ------------------------------------------------------------------------
// Old window, sequence wraparound, tau tracking, restart, runtime changes

TEST(OldWindow, HistoryReturnsTheWindowTheAckedDataWasSentWith)
{
	lumen_ptcp_params p = params_10g_20us();
	lumen_ptcp st;
	const uint32_t isn = 0xffffc000u; // the history straddles the sequence wrap
	lumen_ptcp_init(&st, &p, LUMEN_PTCP_MODE_INT, isn, kMss);
	ASSERT_EQ(st.cwnd_bytes, 25000u);
	// impose windows 10000, 11000, ... while sending 2000 bytes per ACK
	uint32_t nxt = isn, una = isn;
	std::vector<std::pair<uint32_t, uint64_t>> sent; // (first seq, window)
	for (int k = 0; k < 12; k++) {
		lumen_ptcp_set_cwnd(&st, &p, 10000 + 1000 * k, nxt, kMss);
		sent.push_back({nxt, st.cwnd_bytes});
		nxt += 2000;
		lumen_ptcp_remember(&st, nxt);
	}
	(void)una;
	// set_cwnd resets the history: everything from its snd_nxt on has that window
	EXPECT_EQ(lumen_ptcp_cwnd_at(&st, nxt), 21000u);
	// now let the law run: windows change while data goes out
	lumen_ptcp_set_cwnd(&st, &p, 16000, nxt, kMss);
	std::vector<std::pair<uint32_t, uint64_t>> recs{{nxt, 16000}};
	for (int k = 0; k < 40; k++) {
		st.cwnd_bytes = 16000 + 500 * uint64_t(k);
		nxt += 1000;
		uint32_t head_seq = st.hist[st.hist_head].seq;
		lumen_ptcp_remember(&st, nxt);
		if (st.hist[st.hist_head].seq != head_seq)
			recs.push_back({nxt, st.cwnd_bytes});
	}
	ASSERT_GE(recs.size(), size_t(LUMEN_PTCP_CWND_HIST)); // a record every cwnd/8 of data
	// every byte covered by the last 8 records maps to the newest record before it
	for (size_t r = recs.size() - LUMEN_PTCP_CWND_HIST; r < recs.size(); r++) {
		uint32_t inside = recs[r].first + 1;
		EXPECT_EQ(lumen_ptcp_cwnd_at(&st, inside), recs[r].second) << r;
	}
	// older than the history: the oldest record
	uint64_t oldest = recs[recs.size() - LUMEN_PTCP_CWND_HIST].second;
	EXPECT_EQ(lumen_ptcp_cwnd_at(&st, isn), oldest);
}

TEST(OldWindow, PerAckStepsAddUpToOneGammaStepPerWindow)
{
	// power 1 and cwnd_old == cwnd: the target is cwnd + beta. After one
	// window of ACKs of any size the window moved 1 - e^-gamma (continuous)
	// to gamma (one ACK of a whole window) of the way.
	lumen_ptcp_params p = params_10g_20us();
	for (uint64_t ack_size : {uint64_t(25000), uint64_t(5000), uint64_t(1448), uint64_t(100)}) {
		uint64_t cwnd = 20000, target = 20000 + 2500;
		uint64_t acked = 0;
		while (acked < 20000) {
			cwnd = lumen_ptcp_step_toward(p.gamma, ack_size, cwnd, target);
			acked += ack_size;
		}
		double moved = double(cwnd - 20000) / 2500;
		// (slightly below 1 - e^-0.9 = 0.59: the window grows as it goes)
		EXPECT_GE(moved, 0.55) << ack_size;
		EXPECT_LE(moved, 0.9 + 0.001) << ack_size;
	}
	// downwards, and never past the target
	EXPECT_EQ(lumen_ptcp_step_toward(LUMEN_PTCP_ONE, 1000, 1000, 10), 10u);
	EXPECT_EQ(lumen_ptcp_step_toward(p.gamma, 0, 5000, 10), 5000u); // nothing acked: no step
}

TEST(Tau, AutoTracksTheMinimumRttAndScalesBetaAndCap)
{
	lumen_ptcp_params p = params_10g_20us();
	p.base_rtt_ns = 0;
	Flow f(p, LUMEN_PTCP_MODE_THETA);
	EXPECT_EQ(f.st.cwnd_bytes, 25000u); // default tau 20 us until a sample
	f.ack(nullptr, 80000);
	EXPECT_EQ(f.st.tau_ns, 80000u);
	f.ack(nullptr, 50000);
	f.ack(nullptr, 90000);
	EXPECT_EQ(f.st.tau_ns, 50000u);
	EXPECT_EQ(lumen_ptcp_tau(&f.st, &p), 50000u);
	EXPECT_EQ(lumen_ptcp_beta(&p, 50000), 62500u / 10);
	f.ack(nullptr, 1); // below 1 us: clamped
	EXPECT_EQ(f.st.tau_ns, LUMEN_PTCP_BASE_RTT_MIN_NS);
}

// A path change that lengthens the RTT 16x (past the RTT guard's 8 tau):
// the old minimum is forgotten within one window (10 s), never before its
// half ended; a shorter RTT counts at once
TEST(Tau, AutoMinimumIsWindowedSoAPathChangeIsLearnt)
{
	lumen_ptcp_params p = params_10g_20us();
	p.base_rtt_ns = 0;
	Flow f(p, LUMEN_PTCP_MODE_THETA);
	constexpr uint64_t kMs = 1000000, kWindow = LUMEN_PTCP_TAU_WINDOW_NS;
	for (int i = 0; i < 300; i++) // 3 s on the short path
		f.ack(nullptr, 50000, kMss, 10 * kMs);
	EXPECT_EQ(f.st.tau_ns, 50000u);
	uint64_t changed = f.now, learnt = 0;
	for (int i = 0; i < 1500 && !learnt; i++) { // up to 15 s on the long one
		f.ack(nullptr, 800000, kMss, 10 * kMs);
		if (f.st.tau_ns == 800000)
			learnt = f.now;
		else
			ASSERT_EQ(f.st.tau_ns, 50000u) << "at +" << (f.now - changed) / kMs << " ms";
	}
	ASSERT_NE(learnt, 0u) << "tau never left the old path's RTT";
	EXPECT_LE(learnt - changed, kWindow);
	EXPECT_GE(learnt - changed, kWindow / 2 - 3000 * kMs); // the old half ended, at most 3 s in
	// a shorter RTT at once; an idle gap longer than the window forgets all
	f.ack(nullptr, 700000, kMss, kMs);
	EXPECT_EQ(f.st.tau_ns, 700000u);
	f.ack(nullptr, 900000, kMss, kWindow + kMs);
	EXPECT_EQ(f.st.tau_ns, 900000u);
}

TEST(Restart, ForgetsHistoryButKeepsTheWindow)
{
	Flow f(params_10g_20us(), LUMEN_PTCP_MODE_INT);
	Path path({10000});
	for (int i = 0; i < 10; i++) {
		auto e = path.step(2000, 1.0, 100);
		f.ack(&e, 21000);
	}
	uint64_t cwnd = f.st.cwnd_bytes;
	lumen_ptcp_restart(&f.st, f.nxt);
	EXPECT_EQ(f.st.cwnd_bytes, cwnd);
	EXPECT_EQ(f.st.smooth_power, 0u);
	EXPECT_EQ(f.st.prev_hop_count, 0);
	EXPECT_EQ(f.st.have_rtt, 0);
	EXPECT_EQ(f.ack_after(path, 2000, 1.0, 0), LUMEN_PTCP_HELD); // new baseline first
}

TEST(Runtime, LoweringHostBandwidthClampsExistingFlows)
{
	Flow f(params_10g_20us(), LUMEN_PTCP_MODE_INT);
	EXPECT_EQ(f.st.cwnd_bytes, 25000u);
	f.p.host_bw_mbps = 1000; // BDP 2500, beta 250: cap 2750 bytes
	ASSERT_EQ(lumen_ptcp_params_validate(&f.p), 0);
	f.ack(nullptr, 0);
	EXPECT_EQ(f.st.cwnd_bytes, 2u * kMss); // cap below the 2-segment floor: floor wins
	EXPECT_EQ(f.st.pacing_rate, lumen_ptcp_pacing_rate(2u * kMss, 20000));
}

TEST(Theta, GradientBelowMinusOneIsClampedAndFloored)
{
	lumen_ptcp_params p = params_10g_20us();
	lumen_ptcp st;
	lumen_ptcp_init(&st, &p, LUMEN_PTCP_MODE_THETA, 0, kMss);
	lumen_ptcp_ack a{1000000, 200000, 0, 100, kMss};
	lumen_ptcp_rtt_sample(&st, &a, 20000);
	a = lumen_ptcp_ack{1010000, 20000, 100, 200, kMss}; // RTT fell 180 us in 10 us
	ASSERT_EQ(lumen_ptcp_rtt_sample(&st, &a, 20000), 1);
	EXPECT_EQ(st.last_power, 0u);
	EXPECT_EQ(st.smooth_rtt_power, 1u); // a sample of 0 still counts
	EXPECT_EQ(lumen_ptcp_update_window(&p, 20000, kMss, st.smooth_rtt_power, 10000, 10000),
		  lumen_ptcp_clamp_cwnd(&p, 20000, kMss, 1000000)); // floor 0.01 -> x100, capped
}

TEST(Theta, SteepRiseIsBounded)
{
	lumen_ptcp_params p = params_10g_20us();
	lumen_ptcp st;
	lumen_ptcp_init(&st, &p, LUMEN_PTCP_MODE_THETA, 0, kMss);
	lumen_ptcp_ack a{1000000, 1000, 0, 100, kMss};
	lumen_ptcp_rtt_sample(&st, &a, 1000);
	a = lumen_ptcp_ack{1000001, std::numeric_limits<uint64_t>::max(), 100, 200, kMss};
	ASSERT_EQ(lumen_ptcp_rtt_sample(&st, &a, 1000), 1);
	EXPECT_EQ(st.last_power, LUMEN_PTCP_POWER_MAX);
}

TEST(Theta, SameTimestampGivesNoGradient)
{
	lumen_ptcp_params p = params_10g_20us();
	lumen_ptcp st;
	lumen_ptcp_init(&st, &p, LUMEN_PTCP_MODE_THETA, 0, kMss);
	lumen_ptcp_ack a{1000000, 30000, 0, 100, kMss};
	lumen_ptcp_rtt_sample(&st, &a, 20000);
	a.rtt_ns = 90000; // same arrival time: no division by zero, no sample
	EXPECT_EQ(lumen_ptcp_rtt_sample(&st, &a, 20000), 0);
	EXPECT_EQ(st.smooth_rtt_power, 0u);
}

// ------------------------------------------------------------------------
// The shells' per-ACK policy (powertcp_ack.h)

TEST(ShellRtt, KernelSampleBecomesNanosecondsAndNoneStaysNone)
{
	EXPECT_EQ(lumen_ptcp_rtt_ns(-1), 0u); // the kernel's "no sample"
	EXPECT_EQ(lumen_ptcp_rtt_ns(-1000), 0u);
	EXPECT_EQ(lumen_ptcp_rtt_ns(std::numeric_limits<int64_t>::min()), 0u);
	EXPECT_EQ(lumen_ptcp_rtt_ns(0), 1000u); // sub-microsecond: still a sample
	EXPECT_EQ(lumen_ptcp_rtt_ns(1), 1000u);
	EXPECT_EQ(lumen_ptcp_rtt_ns(250), 250000u);
	EXPECT_EQ(lumen_ptcp_rtt_ns(std::numeric_limits<int32_t>::max()), 2147483647000ull); // ack_sample's range
	const uint64_t cap = LUMEN_PTCP_RTT_US_MAX * 1000;
	EXPECT_EQ(lumen_ptcp_rtt_ns(int64_t(LUMEN_PTCP_RTT_US_MAX)), cap);
	EXPECT_EQ(lumen_ptcp_rtt_ns(int64_t(LUMEN_PTCP_RTT_US_MAX) + 1), cap);
	// 2^62 us * 1000 is 0 mod 2^64 and INT64_MAX * 1000 is close to it:
	// without the cap they would read as "no sample" or as ~584 years
	EXPECT_EQ(lumen_ptcp_rtt_ns(int64_t(1) << 62), cap);
	EXPECT_EQ(lumen_ptcp_rtt_ns(std::numeric_limits<int64_t>::max()), cap);
}

TEST(ShellRtt, CappedSamplesActAsTheCoresOwnClamp)
{
	// the cap is behind the core's 2^32 ns clamp, so it changes nothing:
	// two flows, one fed the capped value, one far more, stay identical
	lumen_ptcp_params p = params_10g_20us();
	p.base_rtt_ns = 0; // the tau fallback sees the samples too
	for (lumen_ptcp_mode mode : {LUMEN_PTCP_MODE_INT, LUMEN_PTCP_MODE_THETA}) {
		Flow a(p, mode), b(p, mode);
		for (int i = 0; i < 50; i++) {
			uint64_t rtt = i % 3 ? 30000 : 0;
			a.ack(nullptr, rtt ? rtt : lumen_ptcp_rtt_ns(std::numeric_limits<int64_t>::max()), 3000);
			b.ack(nullptr, rtt ? rtt : 1ull << 60, 3000);
			ASSERT_EQ(a.st.cwnd_bytes, b.st.cwnd_bytes) << i;
			ASSERT_EQ(a.st.smooth_rtt_power, b.st.smooth_rtt_power) << i;
			ASSERT_EQ(a.st.rtt_floor_ns, b.st.rtt_floor_ns) << i;
			ASSERT_EQ(a.st.tau_ns, b.st.tau_ns) << i;
		}
		EXPECT_GT(a.st.stats.rtt_updates + a.st.stats.fallback_updates, 0u);
	}
}

TEST(ShellAck, MakeTakesTcpTimeInMicrosecondsAndCopiesTheRest)
{
	lumen_ptcp_ack a;
	lumen_ptcp_ack_make(&a, 123456789, 42, 0xfffffff0u, 0x10u, 1448);
	EXPECT_EQ(a.now_ns, 123456789000ull);
	EXPECT_EQ(a.rtt_ns, 42000u);
	EXPECT_EQ(a.snd_una, 0xfffffff0u);
	EXPECT_EQ(a.snd_nxt, 0x10u);
	EXPECT_EQ(a.mss, 1448u);
	lumen_ptcp_ack_make(&a, 0, -1, 0, 0, 0);
	EXPECT_EQ(a.now_ns, 0u);
	EXPECT_EQ(a.rtt_ns, 0u);
	EXPECT_EQ(a.mss, 0u); // left to the core, which takes 0 as 1 byte
	EXPECT_EQ(lumen_ptcp_tcp_ns(1), 1000u);
}

TEST(ShellOutput, WindowInSegmentsRoundsDownAndStaysWithinTheClamps)
{
	const uint32_t no_clamp = std::numeric_limits<uint32_t>::max();
	EXPECT_EQ(lumen_ptcp_cwnd_segs(25000, kMss, no_clamp), 17u); // 17.3 segments
	EXPECT_EQ(lumen_ptcp_cwnd_segs(2 * kMss - 1, kMss, no_clamp), 2u);
	EXPECT_EQ(lumen_ptcp_cwnd_segs(1000, kMss, no_clamp), 2u); // the core's floor
	EXPECT_EQ(lumen_ptcp_cwnd_segs(0, kMss, no_clamp), 2u);
	EXPECT_EQ(lumen_ptcp_cwnd_segs(25000, 0, no_clamp), 25000u); // mss unknown: 1 byte
	EXPECT_EQ(lumen_ptcp_cwnd_segs(25000, kMss, 10), 10u); // snd_cwnd_clamp wins
	EXPECT_EQ(lumen_ptcp_cwnd_segs(25000, kMss, 1), 1u); // even below the floor
	EXPECT_EQ(lumen_ptcp_cwnd_segs(25000, kMss, 0), 1u); // but never 0
	// no truncation to 32 bits: the clamp bounds the result first
	EXPECT_EQ(lumen_ptcp_cwnd_segs(std::numeric_limits<uint64_t>::max(), 1, no_clamp), no_clamp);
	EXPECT_EQ(lumen_ptcp_cwnd_segs(uint64_t(1) << 32, 1, 1000), 1000u);
}

TEST(ShellOutput, PacingRateIsCappedByMaxPacingRate)
{
	const uint64_t unlimited = std::numeric_limits<uint64_t>::max(); // ~0UL, the default
	EXPECT_EQ(lumen_ptcp_pacing_cap(1250000000u, unlimited), 1250000000u);
	EXPECT_EQ(lumen_ptcp_pacing_cap(1250000000u, 125000u), 125000u);
	EXPECT_EQ(lumen_ptcp_pacing_cap(0, 125000u), 0u);
}

TEST(ShellEvents, EventBitsAreDistinct)
{
	uint32_t all = 0;
	int n = 0;
#define LUMEN_TEST_EVENT(id)                                                                                           \
	EXPECT_EQ(all &LUMEN_PTCP_EV(id), 0u) << #id;                                                                  \
	all |= LUMEN_PTCP_EV(id);                                                                                      \
	n++;
	LUMEN_PTCP_EVENTS(LUMEN_TEST_EVENT)
#undef LUMEN_TEST_EVENT
	EXPECT_EQ(n, LUMEN_PTCP_EVBIT_COUNT);
	EXPECT_EQ(all, (1u << LUMEN_PTCP_EVBIT_COUNT) - 1);
}

// Flow through lumen_ptcp_ack_process(), as a shell runs it.
struct ShellFlow : Flow {
	using Flow::Flow;
	uint32_t ack(const lumen_int_opt *echo, uint64_t rtt_ns, lumen_ptcp_result *res = nullptr)
	{
		now += 2000;
		una += kMss;
		nxt = una + uint32_t(st.cwnd_bytes);
		lumen_ptcp_ack a{now, rtt_ns, una, nxt, kMss};
		return lumen_ptcp_ack_process(&st, &p, &a, echo, res);
	}
};

constexpr uint32_t kAck = LUMEN_PTCP_EV(ACKS);

TEST(ShellEvents, EachKindOfAckMovesItsCounters)
{
	ShellFlow f(params_10g_20us(), LUMEN_PTCP_MODE_INT);
	Path path({10000});
	lumen_ptcp_result res = LUMEN_PTCP_UPDATED_RTT;
	EXPECT_EQ(f.ack(nullptr, 0, &res), kAck | LUMEN_PTCP_EV(NO_INT));
	EXPECT_EQ(res, LUMEN_PTCP_HELD);
	auto ev1 = path.step(2000, 1.0, 0);
	EXPECT_EQ(f.ack(&ev1, 0), kAck | LUMEN_PTCP_EV(INT_UNUSABLE)); // a baseline gives no sample
	auto e2 = path.step(2000, 1.0, 0);
	EXPECT_EQ(f.ack(&e2, 0, &res), kAck | LUMEN_PTCP_EV(INT_UPDATES));
	EXPECT_EQ(res, LUMEN_PTCP_UPDATED_INT);
	// a duplicate echo gives no sample either: unusable (why: duplicate),
	// but not "no INT"
	EXPECT_EQ(f.ack(&e2, 0), kAck | LUMEN_PTCP_EV(INT_UNUSABLE) | LUMEN_PTCP_EV(INT_DUPLICATE));
	// a change of the hop's rate: no sample from this echo, the next uses the new rate
	path.hops[0].rate = lumen_int_rate_encode(25000);
	auto e3 = path.step(2000, 1.0, 0);
	EXPECT_EQ(f.ack(&e3, 0), kAck | LUMEN_PTCP_EV(INT_UNUSABLE) | LUMEN_PTCP_EV(INT_RATE_CHANGES));
	auto e4 = path.step(2000, 1.0, 0);
	EXPECT_EQ(f.ack(&e4, 0), kAck | LUMEN_PTCP_EV(INT_UPDATES));
	// a change of the hop count: a path change, re-baselined
	Path longer({25000, 40000});
	auto e5 = longer.step(2000, 1.0, 0);
	EXPECT_EQ(f.ack(&e5, 0), kAck | LUMEN_PTCP_EV(INT_UNUSABLE) | LUMEN_PTCP_EV(INT_PATH_CHANGES));

	// INT mode without echoes: one RTT update per round, as a fallback
	uint32_t fallback = 0;
	for (int i = 0; i < 100; i++) {
		uint32_t ev = f.ack(nullptr, 40000);
		EXPECT_TRUE(ev & LUMEN_PTCP_EV(NO_INT));
		EXPECT_FALSE(ev & LUMEN_PTCP_EV(RTT_UPDATES));
		fallback += !!(ev & LUMEN_PTCP_EV(FALLBACK_UPDATES));
	}
	EXPECT_GT(fallback, 0u);
	EXPECT_EQ(fallback, f.st.stats.fallback_updates);

	// theta mode: RTT updates, never NO_INT, whatever echoes come
	ShellFlow t(params_10g_20us(), LUMEN_PTCP_MODE_THETA);
	uint32_t rtt_updates = 0;
	for (int i = 0; i < 100; i++) {
		auto e = path.step(2000, 1.0, 0);
		uint32_t ev = t.ack(i % 2 ? &e : nullptr, 40000);
		EXPECT_EQ(ev & ~(LUMEN_PTCP_EV(RTT_UPDATES)), kAck) << i;
		rtt_updates += !!(ev & LUMEN_PTCP_EV(RTT_UPDATES));
	}
	EXPECT_GT(rtt_updates, 0u);
	EXPECT_EQ(rtt_updates, t.st.stats.rtt_updates);
}

// NO_INT_FLOWS: once per flow, at its LUMEN_PTCP_NO_INT_ROUNDS-th RTT update,
// only when no echo with INT hops ever came
uint32_t no_int_reports(ShellFlow &f, const lumen_int_opt *first_echo)
{
	uint32_t reports = 0;
	for (int i = 0; i < 2000; i++) {
		uint32_t ev = f.ack(i == 0 ? first_echo : nullptr, 40000);
		if (ev & LUMEN_PTCP_EV(NO_INT_FLOWS)) {
			EXPECT_EQ(f.st.stats.fallback_updates, uint32_t(LUMEN_PTCP_NO_INT_ROUNDS));
			reports++;
		}
	}
	EXPECT_GT(f.st.stats.fallback_updates, uint32_t(LUMEN_PTCP_NO_INT_ROUNDS));
	return reports;
}

TEST(ShellEvents, AFlowThatNeverSeesIntIsReportedOnce)
{
	ShellFlow none(params_10g_20us(), LUMEN_PTCP_MODE_INT);
	EXPECT_EQ(no_int_reports(none, nullptr), 1u);
	// echoes without hops (no INT switch on the path) are no INT either
	lumen_int_opt hopless{};
	hopless.flags = LUMEN_INT_FLAG_ECHO;
	ShellFlow no_hops(params_10g_20us(), LUMEN_PTCP_MODE_INT);
	EXPECT_EQ(no_int_reports(no_hops, &hopless), 1u);
	// one echo with a hop: INT is there, the rest is the fallback's business
	Path path({10000});
	auto e = path.step(2000, 1.0, 0);
	ShellFlow once(params_10g_20us(), LUMEN_PTCP_MODE_INT);
	EXPECT_EQ(no_int_reports(once, &e), 0u);
	// theta-PowerTCP runs on RTT by design: never reported
	ShellFlow theta(params_10g_20us(), LUMEN_PTCP_MODE_THETA);
	for (int i = 0; i < 2000; i++)
		EXPECT_FALSE(theta.ack(nullptr, 40000) & LUMEN_PTCP_EV(NO_INT_FLOWS));
}

} // namespace
