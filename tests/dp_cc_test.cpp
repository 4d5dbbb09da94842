// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/dp_cc_test.cpp - lumen-dp's congestion control (dpdk/transport/cc.h):
// DCTCP's rules one by one with a window-filling sender, PowerTCP and
// theta-PowerTCP through the shared core with synthetic RTT and INT streams,
// and parameter validation. The closed loop (two flows at one bottleneck) is
// dp_cc_loop_test.cpp.
#include "transport/cc.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace
{

using lumen::dp::CcAck;
using lumen::dp::CcAlgorithm;
using lumen::dp::CcParams;
using lumen::dp::CongestionControl;
using lumen::dp::Dctcp;
using lumen::dp::make_cc;
using lumen::dp::PowerTcp;

constexpr uint32_t kMss = 1000;

bool before(uint32_t a, uint32_t b)
{
	return int32_t(a - b) < 0;
}

double alpha_of(const Dctcp &cc)
{
	return double(cc.alpha_q20()) / Dctcp::kAlphaOne;
}

CcParams dctcp_params()
{
	CcParams p;
	p.algorithm = CcAlgorithm::kDctcp;
	p.mss = kMss;
	p.init_cwnd_pkts = 10;
	return p;
}

// A sender that keeps its window full and gets one ACK per packet, in order.
// A round is the ACKs of the data in flight when it began (one RTT).
class Driver
{
      public:
	Driver(CongestionControl &cc, uint32_t isn) : cc_(cc), una_(isn), nxt_(isn)
	{
		fill();
	}

	// mark(k) says whether the k-th packet ACKed carried CE
	template <typename Mark> void round(Mark mark)
	{
		uint32_t end = nxt_;
		while (before(una_, end))
			ack(mark(acked_++) ? 1 : 0);
	}
	void rounds(int n, bool ce)
	{
		for (int i = 0; i < n; i++)
			round([ce](uint64_t) { return ce; });
	}
	// The engine's order: the ACK, then the loss it revealed, then sending.
	void ack(uint32_t ce, bool loss = false)
	{
		CcAck a;
		una_ += kMss;
		now_ += 1000;
		a.now_ns = now_;
		a.acked_pkts = 1;
		a.acked_bytes = kMss;
		a.ce_pkts = ce;
		a.rtt_ns = 20000;
		a.snd_una_bytes = una_;
		a.snd_nxt_bytes = nxt_;
		cc_.on_ack(a);
		if (loss)
			cc_.on_loss(now_, false);
		fill();
	}
	// Go-Back-N after an RTO: everything in flight is sent again
	void rewind()
	{
		nxt_ = una_;
		fill();
	}
	uint32_t una() const
	{
		return una_;
	}

      private:
	void fill()
	{
		while (uint64_t(nxt_ - una_) + kMss <= cc_.cwnd_bytes())
			nxt_ += kMss;
	}

	CongestionControl &cc_;
	uint32_t una_, nxt_;
	uint64_t now_ = 1000000;
	uint64_t acked_ = 0;
};

// 3 of every 10 packets marked, evenly spread
bool thirty_percent(uint64_t k)
{
	return (k * 3) % 10 < 3;
}

} // namespace

// ---------------------------------------------------------------------------
// DCTCP

TEST(DctcpTest, AlphaConvergesToMarkedFraction)
{
	// a fixed window of 100 packets: every window holds exactly 30 marks
	CcParams p = dctcp_params();
	p.init_cwnd_pkts = 100;
	p.dctcp_min_cwnd_pkts = 100;
	p.dctcp_max_cwnd_bytes = 100 * kMss;
	Dctcp cc(p);
	Driver d(cc, 12345);

	EXPECT_DOUBLE_EQ(alpha_of(cc), 1.0); // Linux's initial alpha
	for (int i = 0; i < 150; i++)
		d.round(thirty_percent);
	EXPECT_NEAR(alpha_of(cc), 0.3, 0.005);
	// once per window of data: one update per round (the first window
	// opens at the first ACK, so it ends one ACK early)
	// windows of 99 ACKs: the window's end is the snd_nxt when its first
	// ACK came, and the sender refills only after that ACK
	EXPECT_GE(cc.counters().updates, 150u);
	EXPECT_LE(cc.counters().updates, 153u);

	// marks stop: alpha decays by (1 - 1/16) per window
	d.rounds(100, false);
	EXPECT_LT(alpha_of(cc), 0.3 * 0.01);
}

TEST(DctcpTest, AlphaGainIsConfigurable)
{
	CcParams p = dctcp_params();
	p.init_cwnd_pkts = p.dctcp_min_cwnd_pkts = 100;
	p.dctcp_max_cwnd_bytes = 100 * kMss;
	p.dctcp_g_shift = 0; // g = 1: alpha is the last window's fraction
	Dctcp cc(p);
	Driver d(cc, 0);

	d.round(thirty_percent);
	d.round(thirty_percent);
	EXPECT_NEAR(alpha_of(cc), 0.3, 0.011);
}

// Every ACK marked: one cut per round, never two, down to the minimum window.
static void one_cut_per_window(uint32_t isn)
{
	CcParams p = dctcp_params();
	p.init_cwnd_pkts = 100;
	Dctcp cc(p);
	Driver d(cc, isn);

	for (int r = 0; r < 12; r++) {
		uint64_t cuts = cc.counters().ecn_cuts;
		uint64_t cwnd = cc.cwnd_bytes();

		d.rounds(1, true);
		EXPECT_EQ(cc.counters().ecn_cuts, cuts + 1) << "round " << r;
		// alpha stays 1 with every packet marked: each cut halves
		EXPECT_EQ(cc.cwnd_bytes(), std::max<uint64_t>(cwnd - cwnd / 2, kMss)) << "round " << r;
		EXPECT_FALSE(cc.in_slow_start());
	}
	EXPECT_EQ(cc.cwnd_bytes(), kMss); // the floor
}

TEST(DctcpTest, ExactlyOneCutPerWindow)
{
	one_cut_per_window(1000);
}

TEST(DctcpTest, ExactlyOneCutPerWindowAcrossSequenceWrap)
{
	one_cut_per_window(0xffffffffu - 150 * kMss);
}

TEST(DctcpTest, AlphaWindowsAcrossSequenceWrap)
{
	CcParams p = dctcp_params();
	p.init_cwnd_pkts = p.dctcp_min_cwnd_pkts = 100;
	p.dctcp_max_cwnd_bytes = 100 * kMss;
	Dctcp cc(p);
	uint32_t isn = 0xffffffffu - 2000 * kMss; // wraps after 20 rounds
	Driver d(cc, isn);

	for (int i = 0; i < 60; i++)
		d.round(thirty_percent);
	EXPECT_LT(d.una(), isn); // wrapped
	EXPECT_GE(cc.counters().updates, 60u);
	EXPECT_LE(cc.counters().updates, 62u);
	EXPECT_NEAR(alpha_of(cc), 0.3, 0.03);
}

TEST(DctcpTest, NoCutWithoutCe)
{
	CcParams p = dctcp_params();
	p.dctcp_max_cwnd_bytes = 200 * kMss;
	Dctcp cc(p);
	Driver d(cc, 0);

	d.rounds(30, false);
	EXPECT_EQ(cc.counters().ecn_cuts, 0u);
	EXPECT_EQ(cc.counters().loss_cuts, 0u);
	EXPECT_TRUE(cc.in_slow_start());
	EXPECT_EQ(cc.cwnd_bytes(), 200u * kMss);
	EXPECT_LT(alpha_of(cc), 0.2); // (15/16)^30 = 0.14
}

TEST(DctcpTest, SlowStartDoublesPerRtt)
{
	Dctcp cc(dctcp_params());
	Driver d(cc, 7);

	EXPECT_EQ(cc.cwnd_bytes(), 10u * kMss);
	for (int r = 1; r <= 8; r++) {
		d.rounds(1, false);
		EXPECT_EQ(cc.cwnd_bytes(), (10u * kMss) << r) << "round " << r;
	}
}

TEST(DctcpTest, AdditiveIncreaseOneMssPerRtt)
{
	CcParams p = dctcp_params();
	p.init_cwnd_pkts = 100;
	Dctcp cc(p);
	Driver d(cc, 0);

	cc.on_loss(0, false); // ends slow start: ssthresh = cwnd = half
	EXPECT_EQ(cc.cwnd_bytes(), 50u * kMss);
	EXPECT_EQ(cc.ssthresh_bytes(), 50u * kMss);
	EXPECT_TRUE(cc.reducing());
	d.rounds(1, false); // the data sent before the loss: no growth
	EXPECT_EQ(cc.cwnd_bytes(), 50u * kMss);
	d.rounds(1, false);
	EXPECT_FALSE(cc.reducing());

	uint64_t start = cc.cwnd_bytes();
	for (int r = 0; r < 20; r++) {
		uint64_t before_round = cc.cwnd_bytes();
		d.rounds(1, false);
		uint64_t grown = cc.cwnd_bytes() - before_round;
		EXPECT_GE(grown, kMss * 8 / 10) << "round " << r;
		EXPECT_LE(grown, kMss * 12 / 10) << "round " << r;
	}
	uint64_t total = cc.cwnd_bytes() - start;
	EXPECT_GE(total, 19u * kMss);
	EXPECT_LE(total, 21u * kMss);
}

TEST(DctcpTest, SmallAcksStillAddUp)
{
	CcParams p = dctcp_params();
	p.init_cwnd_pkts = 1000;
	Dctcp cc(p);
	Driver d(cc, 0);

	cc.on_loss(0, false);
	d.rounds(2, false); // past the reduction
	uint64_t cwnd = cc.cwnd_bytes();
	// ACKs of 100 bytes: each adds 100 * mss / cwnd < 1 byte
	CcAck a;
	uint32_t una = d.una();
	for (uint64_t acked = 0; acked < cwnd; acked += 100) {
		una += 100;
		a.acked_pkts = 1;
		a.acked_bytes = 100;
		a.snd_una_bytes = una;
		a.snd_nxt_bytes = una + uint32_t(cwnd);
		cc.on_ack(a);
	}
	// 1 MSS, less the growth of cwnd during the window (1/500)
	EXPECT_GE(cc.cwnd_bytes(), cwnd + kMss - 5);
	EXPECT_LE(cc.cwnd_bytes(), cwnd + kMss);
}

TEST(DctcpTest, FastLossHalvesOncePerWindow)
{
	CcParams p = dctcp_params();
	p.init_cwnd_pkts = 64;
	Dctcp cc(p);
	Driver d(cc, 0);

	d.ack(0, true); // slow start to 65 packets, then the loss
	uint64_t cwnd = 65 * kMss;
	cc.on_loss(2, false); // the same window
	EXPECT_EQ(cc.cwnd_bytes(), cwnd / 2);
	EXPECT_EQ(cc.counters().losses, 2u);
	EXPECT_EQ(cc.counters().loss_cuts, 1u);
	// marks of data sent before the halving do not cut either
	d.rounds(1, true);
	EXPECT_EQ(cc.counters().ecn_cuts, 0u);
	EXPECT_EQ(cc.cwnd_bytes(), cwnd / 2);
	// the next window may be reduced again
	d.rounds(1, false);
	EXPECT_FALSE(cc.reducing());
	cwnd = cc.cwnd_bytes();
	cc.on_loss(3, false);
	EXPECT_EQ(cc.counters().loss_cuts, 2u);
	EXPECT_EQ(cc.cwnd_bytes(), cwnd / 2);
}

TEST(DctcpTest, RtoRestartsSlowStartFromOneMss)
{
	CcParams p = dctcp_params();
	p.init_cwnd_pkts = 100;
	Dctcp cc(p);
	Driver d(cc, 0xfffff000u);

	cc.on_loss(10, true);
	EXPECT_EQ(cc.cwnd_bytes(), kMss);
	EXPECT_EQ(cc.ssthresh_bytes(), 50u * kMss);
	EXPECT_TRUE(cc.in_slow_start());
	// a second RTO of the same data does not halve ssthresh again
	cc.on_loss(20, true);
	EXPECT_EQ(cc.ssthresh_bytes(), 50u * kMss);
	EXPECT_EQ(cc.counters().timeouts, 2u);
	// neither does a fast loss during the retransmission
	cc.on_loss(30, false);
	EXPECT_EQ(cc.counters().loss_cuts, 0u);
	EXPECT_EQ(cc.cwnd_bytes(), kMss);

	// Go-Back-N: slow start from one MSS up to ssthresh, then +1 MSS
	d.rewind();
	uint64_t expect = kMss;
	for (int r = 0; r < 5; r++) {
		d.rounds(1, false);
		expect *= 2;
		EXPECT_EQ(cc.cwnd_bytes(), expect) << "round " << r;
	}
	d.rounds(1, false); // 32 -> 50 (ssthresh) and into additive increase
	EXPECT_FALSE(cc.in_slow_start());
	EXPECT_GE(cc.cwnd_bytes(), 50u * kMss);
	EXPECT_LE(cc.cwnd_bytes(), 51u * kMss);
}

// Eifel: RTOs an ACK showed spurious give back the window and ssthresh from
// before the first of them, and the window may be cut again at once; once
// snd_una has moved without that, nothing is restored.
TEST(DctcpTest, ASpuriousRtoIsUndone)
{
	CcParams p = dctcp_params();
	p.init_cwnd_pkts = 40;
	Dctcp cc(p);
	Driver d(cc, 7);

	d.rounds(1, false); // slow start: 80 packets
	const uint64_t cwnd = cc.cwnd_bytes(), ssthresh = cc.ssthresh_bytes();
	ASSERT_EQ(cwnd, 80u * kMss);
	cc.on_loss(10, true);
	cc.on_loss(20, true); // backed off: still the same episode
	ASSERT_EQ(cc.cwnd_bytes(), kMss);
	cc.undo_timeout();
	EXPECT_EQ(cc.cwnd_bytes(), cwnd);
	EXPECT_EQ(cc.ssthresh_bytes(), ssthresh);
	EXPECT_FALSE(cc.reducing());
	EXPECT_EQ(cc.counters().undone_timeouts, 1u);
	cc.undo_timeout(); // nothing left to undo
	EXPECT_EQ(cc.counters().undone_timeouts, 1u);
	d.rounds(1, true); // a marked window cuts
	EXPECT_EQ(cc.counters().ecn_cuts, 1u);

	// a genuine RTO: the ACK that moves snd_una ends the chance
	cc.on_loss(30, true);
	d.rewind();
	d.ack(0);
	const uint64_t after = cc.cwnd_bytes();
	cc.undo_timeout();
	EXPECT_EQ(cc.cwnd_bytes(), after);
	EXPECT_EQ(cc.counters().undone_timeouts, 1u);
}

TEST(DctcpTest, MinAndMaxClamps)
{
	CcParams p = dctcp_params();
	p.dctcp_min_cwnd_pkts = 3;
	p.dctcp_max_cwnd_bytes = 40 * kMss;
	Dctcp cc(p);
	Driver d(cc, 0);

	d.rounds(10, false);
	EXPECT_EQ(cc.cwnd_bytes(), 40u * kMss);
	d.rounds(20, true);
	EXPECT_EQ(cc.cwnd_bytes(), 3u * kMss);
	cc.on_loss(0, true);
	EXPECT_EQ(cc.cwnd_bytes(), 3u * kMss);
	EXPECT_EQ(cc.ssthresh_bytes(), 3u * kMss);
}

// REPS "wait to decrease": 10% of ACKs marked keeps the EWMA below 0.25.
static uint64_t cuts_with_marking(bool wtd, uint64_t every)
{
	CcParams p = dctcp_params();
	p.init_cwnd_pkts = 50;
	p.dctcp_max_cwnd_bytes = 200 * kMss;
	p.dctcp_wtd = wtd;
	Dctcp cc(p);
	Driver d(cc, 0);

	for (int i = 0; i < 200; i++)
		d.round([every](uint64_t k) { return k % every == every - 1; });
	if (wtd && every >= 10) {
		EXPECT_LT(cc.wtd_avg_q16(), 16384u);
		EXPECT_GT(cc.counters().wtd_held, 0u);
	}
	return cc.counters().ecn_cuts;
}

TEST(DctcpTest, WaitToDecreaseIgnoresSparseMarks)
{
	EXPECT_GT(cuts_with_marking(false, 10), 10u);
	EXPECT_EQ(cuts_with_marking(true, 10), 0u);
	// half the ACKs marked: the average passes 0.25 and WTD cuts
	EXPECT_GT(cuts_with_marking(true, 2), 10u);
}

TEST(DctcpTest, WaitToDecreaseThresholdIsConfigurable)
{
	CcParams p = dctcp_params();
	p.dctcp_wtd = true;
	p.dctcp_wtd_threshold = 0; // every mark may cut: plain DCTCP
	Dctcp cc(p);
	Driver d(cc, 0);

	d.round([](uint64_t k) { return k == 3; });
	EXPECT_EQ(cc.counters().ecn_cuts, 1u);
	EXPECT_EQ(cc.counters().wtd_held, 0u);
}

TEST(DctcpTest, PacingIsOptional)
{
	Dctcp plain(dctcp_params());
	EXPECT_EQ(plain.pacing_bps(), 0u);

	CcParams p = dctcp_params();
	p.dctcp_pacing = true;
	p.host_bw_bps = 10000000000ull;
	Dctcp cc(p);
	// before an RTT sample: base RTT 20 us; 10 kB / 20 us = 4 Gbit/s, x2 in slow start
	EXPECT_EQ(cc.pacing_bps(), 8000000000ull);
	Driver d(cc, 0);
	d.ack(0);
	cc.on_loss(0, false); // congestion avoidance: x1.2
	EXPECT_EQ(cc.srtt_ns(), 20000u);
	EXPECT_EQ(cc.pacing_bps(), cc.cwnd_bytes() * 8 * 1000000000ull / 20000 * 12 / 10);
	// capped at the host's rate
	p.host_bw_bps = 1000000000ull;
	Dctcp slow(p);
	EXPECT_EQ(slow.pacing_bps(), p.host_bw_bps);
}

TEST(DctcpTest, IdleRestartFallsBackToInitialWindow)
{
	Dctcp cc(dctcp_params());
	Driver d(cc, 0);

	d.rounds(4, false);
	uint64_t cwnd = cc.cwnd_bytes();
	ASSERT_EQ(cwnd, 160u * kMss);
	cc.on_idle_restart(1);
	EXPECT_EQ(cc.cwnd_bytes(), 10u * kMss);
	EXPECT_EQ(cc.ssthresh_bytes(), UINT64_MAX); // never reduced: still slow start
	EXPECT_EQ(cc.counters().idle_restarts, 1u);
}

TEST(DctcpTest, IdleRestartRemembersThreeQuartersInSsthresh)
{
	CcParams p = dctcp_params();
	p.init_cwnd_pkts = 6;
	Dctcp cc(p);
	Driver d(cc, 0);

	cc.on_loss(0, true); // ssthresh 3 packets
	d.rewind();
	d.rounds(6, false); // 1, 2, 3, then +1 per round
	uint64_t cwnd = cc.cwnd_bytes();
	ASSERT_GT(cwnd, 6u * kMss);
	cc.on_idle_restart(1);
	EXPECT_EQ(cc.ssthresh_bytes(), cwnd - cwnd / 4);
	EXPECT_EQ(cc.cwnd_bytes(), 6u * kMss);
}

// An ACK for several packets (delayed, or folded while it waited for a
// circuit: ack_coalescer.h) grows the window by its unmarked packets' share
// before it cuts, as their own ACKs would have: in slow start, 6 unmarked of
// 8 add 6 MSS, then the first cut (alpha starts at 1) halves.
TEST(DctcpTest, AnAckForManyPacketsGrowsByItsUnmarkedShare)
{
	for (uint32_t ce : {0u, 2u, 8u}) {
		Dctcp cc(dctcp_params());
		CcAck a;
		a.now_ns = 1000000;
		a.acked_pkts = 8;
		a.acked_bytes = 8 * kMss;
		a.ce_pkts = ce;
		a.rtt_ns = 20000;
		a.snd_una_bytes = 8 * kMss;
		a.snd_nxt_bytes = 10 * kMss;
		cc.on_ack(a);
		uint64_t grown = 10 * kMss + (8 - ce) * kMss;
		EXPECT_EQ(cc.cwnd_bytes(), ce ? grown / 2 : grown) << ce << " marked";
		EXPECT_EQ(cc.counters().ecn_cuts, ce ? 1u : 0u);
	}
}

TEST(DctcpTest, CeBeyondPacketsIsClamped)
{
	Dctcp cc(dctcp_params());
	CcAck a;
	a.acked_pkts = 0; // a duplicate ACK: no packets, so no marks either
	a.ce_pkts = 5;
	a.snd_una_bytes = 0;
	a.snd_nxt_bytes = 10 * kMss;
	cc.on_ack(a);
	EXPECT_EQ(cc.counters().ecn_cuts, 0u);
}

// ---------------------------------------------------------------------------
// PowerTCP and theta-PowerTCP

namespace
{

constexpr uint32_t kPtMss = 1500;
constexpr uint64_t kTau = 20000; // ns
constexpr uint64_t kBdp = 62500; // 25 Gbit/s * 20 us
constexpr uint64_t kBeta = kBdp / 10;
constexpr uint64_t kPktNs = 480; // 1500 B at 25 Gbit/s

CcParams ptcp_params(CcAlgorithm a)
{
	CcParams p;
	p.algorithm = a;
	p.mss = kPtMss;
	p.host_bw_bps = 25000000000ull;
	p.base_rtt_ns = kTau;
	return p;
}

// One packet ACKed every kPktNs, the window kept full, a queue of q bytes
// seen in the RTT (and, with INT, in one hop's records).
class PtDriver
{
      public:
	explicit PtDriver(PowerTcp &cc, bool with_int) : cc_(cc), with_int_(with_int)
	{
		rate_code_ = lumen_int_rate_encode(25000);
	}

	// arrivals: bytes entering the hop's queue per ACK (1500 = link rate);
	// the hop sends at link rate while it has a queue, else what arrives
	void ack(uint64_t arrivals)
	{
		uint64_t served = qlen_ + arrivals >= kPtMss ? kPtMss : qlen_ + arrivals;
		qlen_ = qlen_ + arrivals - served;
		tx_ += served;
		now_ += kPktNs;
		una_ += kPtMss;
		CcAck a;
		a.now_ns = now_;
		a.acked_pkts = 1;
		a.acked_bytes = kPtMss;
		a.rtt_ns = kTau + qlen_ * 8000 / 25000;
		a.snd_una_bytes = una_;
		a.snd_nxt_bytes = una_ + uint32_t(cc_.cwnd_bytes());
		if (with_int_) {
			echo_ = {};
			echo_.version = LUMEN_INT_VERSION;
			echo_.flags = LUMEN_INT_FLAG_ECHO;
			echo_.slots = echo_.count = 1;
			lumen_int_hop_make(&echo_.hops[0], now_ + 777, tx_, qlen_, rate_code_);
			a.int_echo = &echo_;
		}
		cc_.on_ack(a);
	}
	void acks(int n, uint64_t arrivals)
	{
		for (int i = 0; i < n; i++)
			ack(arrivals);
	}
	uint64_t qlen() const
	{
		return qlen_;
	}

      private:
	PowerTcp &cc_;
	bool with_int_;
	uint16_t rate_code_;
	lumen_int_opt echo_{};
	uint64_t now_ = 5000000;
	uint32_t una_ = 0xffff0000u;
	uint64_t qlen_ = 0, tx_ = 123456789;
};

} // namespace

TEST(PowerTcpTest, StartsWithOneHostBdpPacedAtLineRate)
{
	for (CcAlgorithm a : {CcAlgorithm::kPowerTcp, CcAlgorithm::kThetaPowerTcp}) {
		auto cc = make_cc(ptcp_params(a));
		EXPECT_EQ(cc->cwnd_bytes(), kBdp);
		EXPECT_EQ(cc->pacing_bps(), 25000000000ull);
	}
	EXPECT_STREQ(make_cc(ptcp_params(CcAlgorithm::kPowerTcp))->name(), "powertcp");
	EXPECT_STREQ(make_cc(ptcp_params(CcAlgorithm::kThetaPowerTcp))->name(), "theta_powertcp");
	EXPECT_STREQ(make_cc(dctcp_params())->name(), "dctcp");
}

TEST(PowerTcpTest, ThetaFallsWhileTheQueueBuildsAndRisesWhenItDrains)
{
	PowerTcp cc(ptcp_params(CcAlgorithm::kThetaPowerTcp));
	PtDriver d(cc, false);

	d.acks(300, 1500); // at exactly the link rate, no queue
	EXPECT_EQ(cc.cwnd_bytes(), kBdp + kBeta); // power 1: up by beta, clamped there
	d.acks(400, 2250); // 1.5x the link rate: the RTT grows
	EXPECT_GT(d.qlen(), kBdp);
	EXPECT_LT(cc.cwnd_bytes(), kBdp / 2);
	EXPECT_GT(cc.event_count(LUMEN_PTCP_EVBIT_RTT_UPDATES), 5u);
	EXPECT_EQ(cc.event_count(LUMEN_PTCP_EVBIT_NO_INT), 0u); // theta wants none

	d.acks(3000, 0); // no more arrivals: drains, then RTT = base
	EXPECT_EQ(d.qlen(), 0u);
	d.acks(2000, 1500);
	EXPECT_EQ(cc.cwnd_bytes(), kBdp + kBeta);
	EXPECT_EQ(cc.pacing_bps(), (kBdp + kBeta) * 8 * 1000000000ull / kTau);
}

TEST(PowerTcpTest, ThetaHoldsAtTheFixedPointOfAConstantQueue)
{
	// a standing queue q, neither growing nor shrinking: power (q + bdp)/bdp
	// and the window's fixed point cwnd = cwnd / power + beta
	PowerTcp cc(ptcp_params(CcAlgorithm::kThetaPowerTcp));
	PtDriver d(cc, false);

	d.acks(10, 1500 + kBdp / 10); // a queue of one BDP in 10 ACKs
	d.acks(6000, 1500);
	// w = w * bdp / (2 bdp) + beta: w = 2 beta
	EXPECT_NEAR(double(cc.cwnd_bytes()), 2.0 * kBeta, 0.05 * 2 * kBeta);
}

TEST(PowerTcpTest, IntPowerSetsTheDirection)
{
	PowerTcp cc(ptcp_params(CcAlgorithm::kPowerTcp));
	PtDriver d(cc, true);

	d.acks(300, 1500); // busy, empty queue: power 1, the window grows to its cap
	EXPECT_EQ(cc.cwnd_bytes(), kBdp + kBeta);
	EXPECT_GT(cc.event_count(LUMEN_PTCP_EVBIT_INT_UPDATES), 50u);
	EXPECT_EQ(cc.state().stats.int_stale, 0u);

	d.acks(150, 2250); // a growing queue: power > 1
	EXPECT_GT(d.qlen(), 50000u);
	EXPECT_LT(cc.cwnd_bytes(), kBdp * 3 / 4);
	uint64_t low = cc.cwnd_bytes();

	d.acks(200, 0); // drain
	d.acks(400, 750); // half the link rate, no queue: power 0.5
	EXPECT_GT(cc.cwnd_bytes(), low * 3 / 2);
	EXPECT_EQ(cc.event_count(LUMEN_PTCP_EVBIT_FALLBACK_UPDATES), 0u);
	EXPECT_EQ(cc.last_result(), LUMEN_PTCP_UPDATED_INT);
	EXPECT_EQ(cc.counters().updates, cc.event_count(LUMEN_PTCP_EVBIT_INT_UPDATES));
}

TEST(PowerTcpTest, IntModeWithoutEchoFallsBackToRtt)
{
	PowerTcp cc(ptcp_params(CcAlgorithm::kPowerTcp));
	PtDriver d(cc, false); // no INT on the path

	d.acks(400, 2250);
	EXPECT_LT(cc.cwnd_bytes(), kBdp / 2);
	EXPECT_EQ(cc.event_count(LUMEN_PTCP_EVBIT_NO_INT), 400u);
	EXPECT_GT(cc.event_count(LUMEN_PTCP_EVBIT_FALLBACK_UPDATES), 5u);
	EXPECT_EQ(cc.event_count(LUMEN_PTCP_EVBIT_INT_UPDATES), 0u);
}

TEST(PowerTcpTest, LossLeavesTheWindowAlone)
{
	PowerTcp cc(ptcp_params(CcAlgorithm::kPowerTcp));
	PtDriver d(cc, true);

	d.acks(150, 2250);
	uint64_t cwnd = cc.cwnd_bytes();
	uint64_t rate = cc.pacing_bps();
	cc.on_loss(1, false);
	cc.on_loss(2, true);
	EXPECT_EQ(cc.cwnd_bytes(), cwnd);
	EXPECT_EQ(cc.pacing_bps(), rate);
	EXPECT_EQ(cc.counters().losses, 1u);
	EXPECT_EQ(cc.counters().timeouts, 1u);
}

TEST(PowerTcpTest, IdleRestartDiscardsHistoryKeepsWindow)
{
	PowerTcp cc(ptcp_params(CcAlgorithm::kThetaPowerTcp));
	cc.on_idle_restart(1); // before any ACK: nothing to discard
	EXPECT_EQ(cc.counters().idle_restarts, 0u);

	PtDriver d(cc, false);
	d.acks(200, 2250);
	uint64_t cwnd = cc.cwnd_bytes();
	ASSERT_NE(cc.state().smooth_rtt_power, 0u);
	cc.on_idle_restart(100000000);
	EXPECT_EQ(cc.cwnd_bytes(), cwnd);
	EXPECT_EQ(cc.state().smooth_rtt_power, 0u);
	EXPECT_EQ(cc.counters().idle_restarts, 1u);
	EXPECT_EQ(cc.event_count(LUMEN_PTCP_EVBIT_RESTARTS), 1u);
}

TEST(PowerTcpTest, ClampsAreTheCores)
{
	// the window stays within [2 MSS, BDP + beta]
	CcParams p = ptcp_params(CcAlgorithm::kThetaPowerTcp);
	p.ptcp_beta_bytes = 100;
	PowerTcp cc(p);
	PtDriver d(cc, false);

	d.acks(3000, 3000); // a queue that never stops growing
	EXPECT_EQ(cc.cwnd_bytes(), 2u * kPtMss);
	EXPECT_EQ(cc.core_params().beta_bytes, 100u);
	EXPECT_EQ(cc.core_params().host_bw_mbps, 25000u);
}

// ---------------------------------------------------------------------------
// Parameters

TEST(CcParamsTest, DefaultsAreValid)
{
	for (CcAlgorithm a : {CcAlgorithm::kDctcp, CcAlgorithm::kPowerTcp, CcAlgorithm::kThetaPowerTcp}) {
		CcParams p;
		p.algorithm = a;
		EXPECT_EQ(p.validate(), "") << lumen::dp::cc_algorithm_name(a);
		EXPECT_NE(make_cc(p), nullptr);
	}
}

TEST(CcParamsTest, RefusesBadValues)
{
	struct Case {
		const char *what;
		CcAlgorithm algorithm;
		void (*edit)(CcParams &);
		const char *expect; // a word of the message
	};
	const Case cases[] = {
		{"mss 0", CcAlgorithm::kDctcp, [](CcParams &p) { p.mss = 0; }, "mss"},
		{"mss 0 (ptcp)", CcAlgorithm::kPowerTcp, [](CcParams &p) { p.mss = 0; }, "mss"},
		{"mss 70000", CcAlgorithm::kDctcp, [](CcParams &p) { p.mss = 70000; }, "mss"},
		{"algorithm", CcAlgorithm(7), [](CcParams &) {}, "algorithm"},
		{"host bw 0", CcAlgorithm::kDctcp, [](CcParams &p) { p.host_bw_bps = 0; }, "host_bw"},
		{"host bw 2T", CcAlgorithm::kPowerTcp, [](CcParams &p) { p.host_bw_bps = 2000000000000ull; },
		 "host_bw"},
		{"rtt 500 ns", CcAlgorithm::kThetaPowerTcp, [](CcParams &p) { p.base_rtt_ns = 500; }, "base_rtt"},
		{"gamma 0", CcAlgorithm::kPowerTcp, [](CcParams &p) { p.ptcp_gamma = 0; }, "gamma"},
		{"gamma 1.5", CcAlgorithm::kThetaPowerTcp, [](CcParams &p) { p.ptcp_gamma = 98304; }, "gamma"},
		{"flows 0", CcAlgorithm::kPowerTcp, [](CcParams &p) { p.ptcp_expected_flows = 0; }, "expected_flows"},
		{"beta 2 GiB", CcAlgorithm::kPowerTcp, [](CcParams &p) { p.ptcp_beta_bytes = 1u << 31; }, "beta"},
		{"bdp 1.6T x 1s", CcAlgorithm::kPowerTcp,
		 [](CcParams &p) {
			 p.host_bw_bps = 1600000000000ull;
			 p.base_rtt_ns = 1000000000;
		 },
		 "1 GiB"},
		{"g shift 17", CcAlgorithm::kDctcp, [](CcParams &p) { p.dctcp_g_shift = 17; }, "g_shift"},
		{"alpha 2", CcAlgorithm::kDctcp, [](CcParams &p) { p.dctcp_alpha_init = 131072; }, "alpha"},
		{"min cwnd 0", CcAlgorithm::kDctcp, [](CcParams &p) { p.dctcp_min_cwnd_pkts = 0; }, "min_cwnd"},
		{"max cwnd 2 GiB", CcAlgorithm::kDctcp, [](CcParams &p) { p.dctcp_max_cwnd_bytes = 1ull << 31; },
		 "max_cwnd"},
		{"min above max", CcAlgorithm::kDctcp,
		 [](CcParams &p) {
			 p.dctcp_min_cwnd_pkts = 20;
			 p.dctcp_max_cwnd_bytes = 10 * p.mss;
		 },
		 "min_cwnd"},
		{"init 0", CcAlgorithm::kDctcp, [](CcParams &p) { p.init_cwnd_pkts = 0; }, "init_cwnd"},
		{"init above max", CcAlgorithm::kDctcp,
		 [](CcParams &p) { p.dctcp_max_cwnd_bytes = 5 * uint64_t(p.mss); }, "init_cwnd"},
		{"wtd weight 0", CcAlgorithm::kDctcp, [](CcParams &p) { p.dctcp_wtd_weight = 0; }, "wtd_weight"},
		{"wtd threshold 2", CcAlgorithm::kDctcp, [](CcParams &p) { p.dctcp_wtd_threshold = 131072; },
		 "wtd_threshold"},
	};
	for (const Case &c : cases) {
		CcParams p;
		p.algorithm = c.algorithm;
		c.edit(p);
		std::string err = p.validate();
		EXPECT_NE(err.find(c.expect), std::string::npos) << c.what << ": \"" << err << "\"";
		EXPECT_THROW(make_cc(p), std::invalid_argument) << c.what;
	}
}

TEST(CcParamsTest, OnlyTheChosenAlgorithmsFieldsCount)
{
	CcParams p;
	p.ptcp_gamma = 0; // PowerTCP's, unused by DCTCP
	p.host_bw_bps = 1600000000000ull;
	p.base_rtt_ns = 1000000000; // a BDP PowerTCP refuses
	EXPECT_EQ(p.validate(), "");
	p.algorithm = CcAlgorithm::kPowerTcp;
	EXPECT_NE(p.validate(), "");
	p.algorithm = CcAlgorithm::kThetaPowerTcp;
	p.dctcp_g_shift = 99; // DCTCP's, unused by PowerTCP
	p.ptcp_gamma = LUMEN_PTCP_DEFAULT_GAMMA;
	p.host_bw_bps = 100000000000ull;
	p.base_rtt_ns = 0; // auto
	EXPECT_EQ(p.validate(), "");
}

TEST(CcParamsTest, ConstructorsCheckTheAlgorithm)
{
	EXPECT_THROW(Dctcp{ptcp_params(CcAlgorithm::kPowerTcp)}, std::invalid_argument);
	EXPECT_THROW(PowerTcp{dctcp_params()}, std::invalid_argument);
}
