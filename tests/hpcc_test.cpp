// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// HPCC (include/lumen/hpcc.h, run by include/lumen/powertcp.h as
// LUMEN_PTCP_MODE_HPCC) against a double-precision transcription of the HPCC
// paper's Algorithm 1 (SIGCOMM 2019), with lumen's documented resolutions
// (first sample seeds U, windows clamped to [2 MSS, host BDP + beta], Wc
// moves on the first ACK at or past the snd_nxt of its last move).
//
// Bounds asserted:
//   one hop's U                  |err| <= 2^-15 + 2e-5 * U
//   ComputeWind, one step        |err| <= 2 bytes
//   whole trajectories (20k ACKs, random load and queue)
//                                cwnd relative error p99 <= 0.2 %, max <= 1 %
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

extern "C" {
#include "lumen/powertcp_ack.h"
}

namespace
{

constexpr double kOne = 65536.0;
constexpr uint32_t kMss = 1448;

lumen_ptcp_params params(uint32_t rate_mbps = 10000, uint64_t tau_ns = 20000)
{
	lumen_ptcp_params p;
	lumen_ptcp_params_default(&p);
	p.host_bw_mbps = rate_mbps;
	p.base_rtt_ns = tau_ns;
	EXPECT_EQ(lumen_ptcp_params_validate(&p), 0);
	return p;
}

lumen_int_hop hop(uint64_t t_ns, uint64_t tx, uint64_t qlen, uint32_t rate_mbps)
{
	lumen_int_hop h{};
	lumen_int_hop_make(&h, t_ns, tx, qlen, lumen_int_rate_encode(rate_mbps));
	return h;
}

lumen_int_opt echo_of(const std::vector<lumen_int_hop> &hops)
{
	lumen_int_opt o{};
	o.version = LUMEN_INT_VERSION;
	o.flags = LUMEN_INT_FLAG_ECHO;
	for (const auto &h : hops)
		o.hops[o.count++] = h;
	o.slots = o.count;
	return o;
}

// ------------------------------------------------------------------------
// Reference (double precision), Algorithm 1 of the paper

double ref_hop_util(const lumen_int_delta &d, double tau_ns)
{
	double b = d.rate_mbps * 125000.0; // bytes/s
	double q = double(std::min(d.qlen_bytes, d.qlen_prev_bytes));
	double tx_rate = double(d.tx_bytes) / (double(d.dt_ns) * 1e-9);
	return q / (b * tau_ns * 1e-9) + tx_rate / b;
}

struct RefHpcc {
	double eta, wai, lo, hi, tau;
	int max_stage;
	double wc, u = 0;
	int inc_stage = 0;
	uint32_t last_update_seq;
	std::vector<lumen_int_hop> prev;

	RefHpcc(const lumen_ptcp_params &p, uint32_t snd_nxt)
	{
		tau = double(p.base_rtt_ns);
		double bdp = std::floor(p.host_bw_mbps * 125000.0 * tau * 1e-9);
		double beta = std::max(1.0, std::floor(bdp / p.expected_flows));
		eta = p.hpcc.eta / kOne;
		max_stage = int(p.hpcc.max_stage);
		wai = p.hpcc.wai_bytes ? p.hpcc.wai_bytes
				       : std::max(1.0, std::floor(bdp * (1 - eta) / p.expected_flows));
		lo = 2.0 * kMss;
		hi = bdp + beta;
		wc = std::clamp(bdp, lo, hi);
		last_update_seq = snd_nxt;
	}

	// MeasureInflight (lines 1-10); false when the ACK only re-baselines
	bool measure(const lumen_int_opt &e)
	{
		bool usable = prev.size() == e.count;
		double umax = 0, dt_max = 0;
		for (size_t i = 0; usable && i < e.count; i++) {
			lumen_int_delta d;
			if (lumen_int_hop_delta(&prev[i], &e.hops[i], &d) != 0) {
				usable = false;
				break;
			}
			double ui = ref_hop_util(d, tau);
			if (ui > umax || dt_max == 0) {
				umax = ui;
				dt_max = double(d.dt_ns);
			}
		}
		prev.assign(e.hops, e.hops + e.count);
		if (!usable)
			return false;
		double t = std::min(dt_max, tau);
		u = u == 0 ? umax : (1 - t / tau) * u + t / tau * umax;
		return true;
	}

	// ComputeWind (lines 11-20), clamped
	double compute(bool update_wc)
	{
		double w;
		bool mi = u >= eta || inc_stage >= max_stage;
		if (mi)
			w = wc / (std::max(u, LUMEN_HPCC_U_MIN / kOne) / eta) + wai;
		else
			w = wc + wai;
		w = std::clamp(w, lo, hi);
		if (update_wc) {
			inc_stage = mi ? 0 : inc_stage + 1;
			wc = w;
		}
		return w;
	}
};

// ------------------------------------------------------------------------

TEST(Hpcc, HopUtilisationMatchesThePaper)
{
	std::mt19937_64 rng(7);
	for (int i = 0; i < 200000; i++) {
		lumen_int_delta d{};
		d.rate_mbps = uint32_t(1000 + rng() % 400000);
		d.dt_ns = 100 + rng() % 1000000;
		double b_dt = d.rate_mbps * 125.0 * double(d.dt_ns) * 1e-6; // bytes in dt at line rate
		d.tx_bytes = uint64_t(b_dt * double(rng() % 1500) / 1000.0);
		d.qlen_bytes = rng() % (8u << 20);
		d.qlen_prev_bytes = rng() % 2 ? d.qlen_bytes : rng() % (8u << 20);
		uint64_t tau = 1000 + rng() % 200000;
		double ref = ref_hop_util(d, double(tau));
		double got = double(lumen_hpcc_hop_util(&d, tau)) / kOne;
		if (ref * kOne >= double(LUMEN_HPCC_U_MAX))
			continue; // clamped on purpose
		ASSERT_NEAR(got, ref, 1.0 / 32768 + 2e-5 * ref) << "i " << i;
	}
}

TEST(Hpcc, ComputeWindMatchesThePaper)
{
	std::mt19937_64 rng(11);
	lumen_hpcc_params hp;
	lumen_hpcc_params_default(&hp);
	for (int i = 0; i < 200000; i++) {
		lumen_hpcc h;
		lumen_hpcc_reset(&h, 3000 + rng() % (1u << 29));
		h.inc_stage = uint32_t(rng() % 8);
		uint64_t u = rng() % (4 * LUMEN_HPCC_ONE);
		uint64_t wai = 1 + rng() % 100000;
		int mi = 0;
		double w = double(lumen_hpcc_compute_wind(&h, &hp, u, wai, &mi));
		double eta = hp.eta / kOne, uu = double(u) / kOne;
		bool ref_mi = uu >= eta || h.inc_stage >= hp.max_stage;
		// U as a divisor is floored at LUMEN_HPCC_U_MIN, 655 / 65536 (~0.01)
		double ref = ref_mi ? double(h.wc_bytes) / (std::max(uu, LUMEN_HPCC_U_MIN / kOne) / eta) + double(wai)
				    : double(h.wc_bytes) + double(wai);
		ASSERT_EQ(mi, ref_mi ? 1 : 0);
		ASSERT_NEAR(w, ref, 2.0) << "wc " << h.wc_bytes << " u " << u;
	}
}

// Algorithm 1 over random load: the fixed-point core follows the reference.
TEST(Hpcc, TrajectoryMatchesAReferenceTranscription)
{
	for (uint64_t seed : {1, 2, 3}) {
		std::mt19937_64 rng(seed);
		lumen_ptcp_params p = params();
		lumen_ptcp st;
		const uint32_t isn = 0xffff0000u; // wraps
		lumen_ptcp_init(&st, &p, LUMEN_PTCP_MODE_HPCC, isn, kMss);
		RefHpcc ref(p, isn);
		uint32_t una = isn, nxt = isn;
		uint64_t now = 1000000000ull, tx = 0, q = 0;
		double load = 1.0;
		std::vector<double> err;
		for (int i = 0; i < 20000; i++) {
			if (i % 500 == 0)
				load = 0.5 + double(rng() % 1000) / 1000.0; // 0.5 .. 1.5 of the link
			uint64_t dt = 1000 + rng() % 3000;
			now += dt;
			// 10 Gbit/s = 1.25 bytes/ns: arrivals at load, queue integrates the excess
			double in = load * 1.25 * double(dt), out = 1.25 * double(dt);
			double qn = std::max(0.0, double(q) + in - out);
			tx += uint64_t(std::min(out, in + double(q)));
			q = uint64_t(std::min(qn, 4.0e6));
			lumen_int_opt e = echo_of({hop(now, tx, q, 10000)});
			una += kMss;
			nxt = una + uint32_t(st.cwnd_bytes);
			lumen_ptcp_ack a{};
			a.now_ns = now;
			a.rtt_ns = 24000; // below the guard: INT decides
			a.snd_una = una;
			a.snd_nxt = nxt;
			a.mss = kMss;
			lumen_ptcp_result r = lumen_ptcp_on_ack(&st, &p, &a, &e);
			if (ref.measure(e)) {
				ASSERT_EQ(r, LUMEN_PTCP_UPDATED_INT) << i;
				bool new_round = !lumen_seq_after(ref.last_update_seq, una);
				if (new_round)
					ref.last_update_seq = nxt;
				double w = ref.compute(new_round);
				err.push_back(std::fabs(double(st.cwnd_bytes) - w) / w);
				ASSERT_EQ(st.hpcc.inc_stage, uint32_t(ref.inc_stage)) << i;
			} else {
				ASSERT_EQ(r, LUMEN_PTCP_HELD) << i;
			}
		}
		ASSERT_GT(err.size(), 19000u);
		std::sort(err.begin(), err.end());
		double p99 = err[err.size() * 99 / 100], mx = err.back();
		std::printf("[hpcc] seed %llu: cwnd error p99 %.2e max %.2e, int updates %u\n",
			    (unsigned long long)seed, p99, mx, st.stats.int_updates);
		EXPECT_LE(p99, 0.002);
		EXPECT_LE(mx, 0.01);
	}
}

// Lines 12-19: five additive rounds below eta, then a multiplicative one.
TEST(Hpcc, StagesAdditiveThenMultiplicative)
{
	lumen_ptcp_params p = params();
	lumen_hpcc h;
	lumen_hpcc_reset(&h, 10000);
	const uint64_t wai = lumen_hpcc_wai(&p.hpcc, 25000, p.expected_flows);
	EXPECT_EQ(wai, 125u); // 25000 * 0.05 / 10
	const uint64_t u = LUMEN_HPCC_ONE / 2; // half-used link
	for (uint32_t stage = 0; stage < LUMEN_HPCC_DEFAULT_MAX_STAGE; stage++) {
		int mi = -1;
		uint64_t w = lumen_hpcc_compute_wind(&h, &p.hpcc, u, wai, &mi);
		EXPECT_EQ(mi, 0);
		EXPECT_EQ(w, h.wc_bytes + wai);
		lumen_hpcc_commit(&h, w, mi);
		EXPECT_EQ(h.inc_stage, stage + 1);
	}
	int mi = -1;
	uint64_t wc = h.wc_bytes, w = lumen_hpcc_compute_wind(&h, &p.hpcc, u, wai, &mi);
	EXPECT_EQ(mi, 1); // maxStage reached: W = Wc * eta / U + W_AI, ~1.9x
	EXPECT_NEAR(double(w), double(wc) * 0.95 / 0.5 + double(wai), 2.0);
	lumen_hpcc_commit(&h, w, mi);
	EXPECT_EQ(h.inc_stage, 0u);
	// a congested link: multiplicative decrease at once
	w = lumen_hpcc_compute_wind(&h, &p.hpcc, 2 * LUMEN_HPCC_ONE, wai, &mi);
	EXPECT_EQ(mi, 1);
	EXPECT_NEAR(double(w), double(h.wc_bytes) * 0.95 / 2 + double(wai), 2.0);
}

// The reference moves once per RTT: a burst of ACKs seeing one congestion
// event does not compound it, and every ACK still reacts to its own U.
TEST(Hpcc, ReferenceWindowMovesOncePerRtt)
{
	lumen_ptcp_params p = params();
	lumen_ptcp st;
	lumen_ptcp_init(&st, &p, LUMEN_PTCP_MODE_HPCC, 0, kMss);
	uint64_t now = 1000000, tx = 0;
	uint32_t una = 0;
	auto ack = [&](uint64_t q, uint32_t nxt) {
		now += 1000;
		tx += 1250; // link busy
		lumen_int_opt e = echo_of({hop(now, tx, q, 10000)});
		una += kMss;
		lumen_ptcp_ack a{now, 22000, una, nxt, kMss};
		return lumen_ptcp_on_ack(&st, &p, &a, &e);
	};
	EXPECT_EQ(ack(50000, 50000), LUMEN_PTCP_HELD); // baseline
	const uint64_t wc0 = st.hpcc.wc_bytes;
	EXPECT_EQ(ack(50000, 50000), LUMEN_PTCP_UPDATED_INT); // new round, U = 3: Wc moves
	const uint64_t wc1 = st.hpcc.wc_bytes;
	EXPECT_LT(wc1, wc0);
	for (int i = 0; i < 20; i++) // the rest of the round: Wc stays
		ack(50000, 50000);
	EXPECT_EQ(st.hpcc.wc_bytes, wc1);
	EXPECT_LT(st.cwnd_bytes, wc1); // but each ACK's W is Wc * eta / U + W_AI
}

// A window imposed from outside (loss cut) is the new reference.
TEST(Hpcc, ImposedWindowResetsTheReference)
{
	lumen_ptcp_params p = params();
	lumen_ptcp st;
	lumen_ptcp_init(&st, &p, LUMEN_PTCP_MODE_HPCC, 0, kMss);
	EXPECT_EQ(st.hpcc.wc_bytes, st.cwnd_bytes); // W_init = host BDP: line rate
	EXPECT_EQ(st.cwnd_bytes, 25000u);
	lumen_ptcp_set_cwnd(&st, &p, 8000, 100000, kMss);
	EXPECT_EQ(st.hpcc.wc_bytes, 8000u);
	EXPECT_EQ(st.hpcc.inc_stage, 0u);
}

// The most utilised hop decides (lines 3-7).
TEST(Hpcc, MostUtilisedHopDecides)
{
	lumen_ptcp_params p = params(25000);
	lumen_ptcp st;
	lumen_ptcp_init(&st, &p, LUMEN_PTCP_MODE_HPCC, 0, kMss);
	uint64_t now = 1000000, tx0 = 0, tx1 = 0;
	uint32_t una = 0;
	for (int i = 0; i < 50; i++) {
		now += 2000;
		tx0 += 2000 * 25000 / 8000 / 2; // 25 Gbit/s hop at 50 %
		tx1 += 2000 * 10000 / 8000; // 10 Gbit/s hop busy, 20 kB queued
		lumen_int_opt e = echo_of({hop(now, tx0, 0, 25000), hop(now, tx1, 20000, 10000)});
		una += kMss;
		lumen_ptcp_ack a{now, 30000, una, una + 60000, kMss};
		lumen_ptcp_on_ack(&st, &p, &a, &e);
	}
	EXPECT_EQ(st.max_hop, 1);
	// U of hop 1: 1 + 20000 / (1.25 * 20000) = 1.8
	EXPECT_NEAR(double(st.smooth_power) / kOne, 1.8, 0.05);
}

TEST(Hpcc, BadParametersAreRefusedWithTheirReason)
{
	lumen_ptcp_params p = params();
	p.hpcc.eta = LUMEN_HPCC_ETA_MIN - 1;
	EXPECT_EQ(lumen_ptcp_params_validate(&p), -LUMEN_PTCP_PARAM_EHPCC_ETA);
	EXPECT_STREQ(lumen_ptcp_param_strerror(-LUMEN_PTCP_PARAM_EHPCC_ETA),
		     "hpcc eta must be within [0.5, 1] (Q16: [32768, 65536])");
	p.hpcc.eta = LUMEN_HPCC_ONE + 1;
	EXPECT_EQ(lumen_ptcp_params_validate(&p), -LUMEN_PTCP_PARAM_EHPCC_ETA);
	p = params();
	p.hpcc.max_stage = LUMEN_HPCC_MAX_STAGE_MAX + 1;
	EXPECT_EQ(lumen_ptcp_params_validate(&p), -LUMEN_PTCP_PARAM_EHPCC_STAGE);
	p = params();
	p.hpcc.wai_bytes = LUMEN_HPCC_WAI_MAX_BYTES + 1;
	EXPECT_EQ(lumen_ptcp_params_validate(&p), -LUMEN_PTCP_PARAM_EHPCC_WAI);
	EXPECT_NE(std::string(lumen_ptcp_param_strerror(-LUMEN_PTCP_PARAM_EHPCC_WAI)).find("W_AI"), std::string::npos);
	p.hpcc.wai_bytes = LUMEN_HPCC_WAI_MAX_BYTES;
	p.hpcc.eta = LUMEN_HPCC_ONE;
	p.hpcc.max_stage = 0;
	EXPECT_EQ(lumen_ptcp_params_validate(&p), 0);
}

// Without INT for a round, HPCC updates from the RTT: a queue it cannot see
// through INT still shrinks the window (the shared fallback).
TEST(Hpcc, WithoutIntTheRttFallbackShrinksTheWindow)
{
	lumen_ptcp_params p = params();
	lumen_ptcp st;
	lumen_ptcp_init(&st, &p, LUMEN_PTCP_MODE_HPCC, 0, kMss);
	uint64_t now = 1000000;
	uint32_t una = 0;
	for (int i = 0; i < 400; i++) {
		now += 3000;
		una += kMss;
		lumen_ptcp_ack a{now, 60000, una, una + uint32_t(st.cwnd_bytes), kMss}; // 3 tau
		lumen_ptcp_on_ack(&st, &p, &a, nullptr);
	}
	EXPECT_GT(st.stats.fallback_updates, 5u);
	EXPECT_EQ(st.stats.int_updates, 0u);
	// fixed point of W = W * eta / 3 + W_AI: ~1.5 W_AI, floored at 2 MSS
	EXPECT_LE(st.cwnd_bytes, 2u * kMss + 200);
}

} // namespace
