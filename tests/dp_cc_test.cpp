// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/dp_cc_test.cpp - lumen-dp's congestion control (dpdk/transport/cc.h):
// DCTCP's rules one by one with a window-filling sender, PowerTCP,
// theta-PowerTCP and HPCC through the shared core with synthetic RTT and INT
// streams, TIMELY's rate per completion event and per loss episode, and
// parameter validation. The closed loop (two flows at one bottleneck) is
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
using lumen::dp::Timely;

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
// HPCC: the PowerTCP core in LUMEN_PTCP_MODE_HPCC, through the same class

TEST(DpHpccTest, StartsWithOneHostBdpInHpccMode)
{
	PowerTcp cc(ptcp_params(CcAlgorithm::kHpcc));
	EXPECT_STREQ(cc.name(), "hpcc");
	EXPECT_STREQ(make_cc(ptcp_params(CcAlgorithm::kHpcc))->name(), "hpcc");
	EXPECT_EQ(cc.state().mode, uint32_t(LUMEN_PTCP_MODE_HPCC));
	EXPECT_EQ(cc.cwnd_bytes(), kBdp);
	EXPECT_EQ(cc.pacing_bps(), 25000000000ull);
	EXPECT_EQ(cc.core_params().hpcc.eta, uint32_t(LUMEN_HPCC_DEFAULT_ETA));
	EXPECT_EQ(cc.core_params().hpcc.max_stage, uint32_t(LUMEN_HPCC_DEFAULT_MAX_STAGE));
}

TEST(DpHpccTest, ParametersReachTheCore)
{
	CcParams p = ptcp_params(CcAlgorithm::kHpcc);
	p.hpcc_eta = 60000;
	p.hpcc_max_stage = 3;
	p.hpcc_wai_bytes = 777;
	PowerTcp cc(p);
	EXPECT_EQ(cc.core_params().hpcc.eta, 60000u);
	EXPECT_EQ(cc.core_params().hpcc.max_stage, 3u);
	EXPECT_EQ(cc.core_params().hpcc.wai_bytes, 777u);
	// PowerTCP leaves HPCC's fields at the core's defaults
	p.algorithm = CcAlgorithm::kPowerTcp;
	EXPECT_EQ(p.ptcp_params().hpcc.eta, uint32_t(LUMEN_HPCC_DEFAULT_ETA));
	EXPECT_EQ(p.ptcp_params().hpcc.wai_bytes, 0u);
}

constexpr uint64_t kWai = (kBdp * (65536 - LUMEN_HPCC_DEFAULT_ETA) >> 16) / 10; // W_AI: 312 bytes

// A growing queue at the hop (1.5x its rate): U far above eta, every round
// multiplicative, down to the floor, all from INT.
TEST(DpHpccTest, AHotHopCutsTheWindow)
{
	PowerTcp cc(ptcp_params(CcAlgorithm::kHpcc));
	PtDriver d(cc, true);

	d.acks(60, 2250);
	EXPECT_GT(d.qlen(), kBdp / 2);
	EXPECT_LT(cc.cwnd_bytes(), kBdp / 2);
	EXPECT_EQ(cc.state().hpcc.inc_stage, 0u); // multiplicative steps only
	d.acks(60, 2250);
	EXPECT_EQ(cc.cwnd_bytes(), 2u * kPtMss); // the core's floor
	EXPECT_EQ(cc.event_count(LUMEN_PTCP_EVBIT_INT_UPDATES), 119u); // every ACK but the first
	EXPECT_EQ(cc.event_count(LUMEN_PTCP_EVBIT_FALLBACK_UPDATES), 0u);
	EXPECT_EQ(cc.last_result(), LUMEN_PTCP_UPDATED_INT);
	EXPECT_EQ(cc.pacing_bps(), cc.cwnd_bytes() * 8 * 1000000000ull / kTau);
}

// The law W = Wc * eta / U + W_AI, once per round, at a link exactly busy
// (U = 1, no queue): each round takes the window eta / U = 0.95 of the way,
// to the fixed point W_AI / (1 - eta / U) = 20 W_AI, where the cut and the
// additive step balance. (Open loop: the window does not change U here.)
TEST(DpHpccTest, TheWindowMovesTowardUEqualsEta)
{
	PowerTcp cc(ptcp_params(CcAlgorithm::kHpcc));
	PtDriver d(cc, true);

	d.acks(40, 1500);
	uint64_t first = cc.cwnd_bytes();
	EXPECT_LT(first, kBdp);
	d.acks(400, 1500);
	uint64_t mid = cc.cwnd_bytes();
	EXPECT_LT(mid, first);
	d.acks(1600, 1500);
	EXPECT_LT(cc.cwnd_bytes(), mid);
	EXPECT_NEAR(double(cc.cwnd_bytes()), 20.0 * kWai, 0.05 * 20 * kWai);
	EXPECT_EQ(cc.state().hpcc.inc_stage, 0u);
}

// Below eta (a half-busy link, U = 0.5): max_stage rounds of + W_AI, then a
// multiplicative step up by eta / U (1.9x), here to the ceiling.
TEST(DpHpccTest, BelowEtaAdditiveStagesThenAMultiplicativeStep)
{
	PowerTcp cc(ptcp_params(CcAlgorithm::kHpcc));
	PtDriver d(cc, true);

	d.acks(20, 750);
	EXPECT_EQ(cc.state().hpcc.inc_stage, 1u);
	EXPECT_EQ(cc.state().hpcc.wc_bytes, kBdp + kWai);
	EXPECT_EQ(cc.cwnd_bytes(), kBdp + 2 * kWai);
	d.acks(160, 750);
	EXPECT_EQ(cc.cwnd_bytes(), kBdp + kBeta); // 1.9x, clamped by the core

	// with max_stage 0 the first round is multiplicative already
	CcParams p = ptcp_params(CcAlgorithm::kHpcc);
	p.hpcc_max_stage = 0;
	PowerTcp eager(p);
	PtDriver e(eager, true);
	e.acks(20, 750);
	EXPECT_EQ(eager.cwnd_bytes(), kBdp + kBeta);
}

// No INT on the path: HPCC falls back to the RTT (U from theta-PowerTCP's
// estimate), once per round, and the growing queue still cuts the window.
TEST(DpHpccTest, MissingIntFallsBackToTheRtt)
{
	PowerTcp cc(ptcp_params(CcAlgorithm::kHpcc));
	PtDriver d(cc, false);

	d.acks(400, 2250);
	EXPECT_LT(cc.cwnd_bytes(), kBdp / 2);
	EXPECT_EQ(cc.event_count(LUMEN_PTCP_EVBIT_NO_INT), 400u);
	EXPECT_GT(cc.event_count(LUMEN_PTCP_EVBIT_FALLBACK_UPDATES), 5u);
	EXPECT_EQ(cc.event_count(LUMEN_PTCP_EVBIT_INT_UPDATES), 0u);
	EXPECT_EQ(cc.last_result() == LUMEN_PTCP_UPDATED_INT, false);
}

TEST(DpHpccTest, LossLeavesTheWindowAlone)
{
	PowerTcp cc(ptcp_params(CcAlgorithm::kHpcc));
	PtDriver d(cc, true);

	d.acks(60, 2250);
	uint64_t cwnd = cc.cwnd_bytes();
	cc.on_loss(1, false);
	cc.on_loss(2, true);
	cc.undo_timeout();
	EXPECT_EQ(cc.cwnd_bytes(), cwnd);
	EXPECT_EQ(cc.counters().losses, 1u);
	EXPECT_EQ(cc.counters().timeouts, 1u);
}

// ---------------------------------------------------------------------------
// TIMELY

namespace
{

constexpr uint32_t kTmMss = 1500;
constexpr uint64_t kTmRate = 1250000000ull; // 10 Gbit/s in bytes/s
constexpr uint64_t kTmDelta = 1250000ull; // 10 Mbit/s: HostBw / 1000

CcParams timely_params()
{
	CcParams p;
	p.algorithm = CcAlgorithm::kTimely;
	p.mss = kTmMss;
	p.host_bw_bps = 10000000000ull; // the paper's
	return p;
}

// ACKs of a sender that keeps a fixed amount of data in flight ahead of
// snd_una; event() acknowledges one whole segment (16 KB) with one ACK, one
// completion event each.
class TmDriver
{
      public:
	explicit TmDriver(Timely &cc) : cc_(cc)
	{
	}
	void ack(uint64_t rtt_ns, uint32_t bytes = kTmMss)
	{
		CcAck a;
		una_ += bytes;
		now_ += 1000;
		a.now_ns = now_;
		a.acked_pkts = (bytes + kTmMss - 1) / kTmMss;
		a.acked_bytes = bytes;
		a.rtt_ns = rtt_ns;
		a.snd_una_bytes = una_;
		a.snd_nxt_bytes = nxt();
		cc_.on_ack(a);
	}
	void event(uint64_t rtt_ns)
	{
		ack(rtt_ns, LUMEN_TIMELY_DEFAULT_SEG_BYTES);
	}
	uint32_t una() const
	{
		return una_;
	}
	uint32_t nxt() const
	{
		return una_ + kInFlight;
	}
	static constexpr uint32_t kInFlight = 200000;

      private:
	Timely &cc_;
	uint64_t now_ = 7000000;
	uint32_t una_ = 0xfffe0000u;
};

// Halve the rate by a loss, and end that episode (snd_una past the snd_nxt
// of the loss), so that the rate has room to grow.
void halve(Timely &cc, TmDriver &d)
{
	d.ack(0); // the sequence space: the loss's snd_nxt is this ACK's
	cc.on_loss(1, false);
	d.ack(0, TmDriver::kInFlight + 1);
	ASSERT_FALSE(cc.in_loss_episode());
}

} // namespace

TEST(DpTimelyTest, StartsAtLineRate)
{
	Timely cc(timely_params());
	EXPECT_STREQ(cc.name(), "timely");
	EXPECT_STREQ(make_cc(timely_params())->name(), "timely");
	EXPECT_EQ(cc.pacing_bps(), 10000000000ull);
	EXPECT_EQ(cc.rate_bytes_per_s(), kTmRate);
	// twice the rate times T_low before any RTT: 2 * 1.25e9 B/s * 50 us
	EXPECT_EQ(cc.cwnd_bytes(), 125000u);
	EXPECT_EQ(cc.core_params().host_bw_mbps, 10000u);
	EXPECT_EQ(cc.core_params().t_low_ns, LUMEN_TIMELY_DEFAULT_T_LOW_NS);
	EXPECT_EQ(cc.core_params().seg_bytes, uint32_t(LUMEN_TIMELY_DEFAULT_SEG_BYTES));
}

TEST(DpTimelyTest, ParametersReachTheCore)
{
	CcParams p = timely_params();
	p.timely_t_low_ns = 30000;
	p.timely_t_high_ns = 300000;
	p.timely_min_rtt_ns = 10000;
	p.timely_delta_mbps = 50;
	p.timely_alpha = 32768;
	p.timely_beta = 16384;
	p.timely_hai_events = 3;
	p.timely_seg_bytes = 65536;
	Timely cc(p);
	const lumen_timely_params &c = cc.core_params();
	EXPECT_EQ(c.t_low_ns, 30000u);
	EXPECT_EQ(c.t_high_ns, 300000u);
	EXPECT_EQ(c.min_rtt_ns, 10000u);
	EXPECT_EQ(c.delta_mbps, 50u);
	EXPECT_EQ(c.alpha, 32768u);
	EXPECT_EQ(c.beta, 16384u);
	EXPECT_EQ(c.hai_events, 3u);
	EXPECT_EQ(c.seg_bytes, 65536u);
}

// Below T_low every event adds delta (the first only seeds the RTT history).
TEST(DpTimelyTest, LowRttRaisesTheRate)
{
	Timely cc(timely_params());
	TmDriver d(cc);
	halve(cc, d);
	uint64_t half = cc.rate_bytes_per_s();
	EXPECT_EQ(half, kTmRate / 2);

	d.event(20000); // seeds
	EXPECT_EQ(cc.rate_bytes_per_s(), half);
	for (int i = 1; i <= 10; i++) {
		d.event(20000);
		EXPECT_EQ(cc.rate_bytes_per_s(), half + uint64_t(i) * kTmDelta);
	}
	EXPECT_EQ(cc.state().stats.low, 10u);
	EXPECT_EQ(cc.pacing_bps(), cc.rate_bytes_per_s() * 8);
	EXPECT_EQ(cc.counters().updates, 11u);
	// the window is twice the rate times the latest RTT
	EXPECT_EQ(cc.cwnd_bytes(), cc.rate_bytes_per_s() / 1000 * 20000 / 1000000 * 2);
}

// Between T_low and T_high the gradient decides: a rising RTT cuts, a
// falling one raises (by 5 delta after 5 such events: HAI).
TEST(DpTimelyTest, RisingRttCutsTheRateFallingRttRaisesIt)
{
	Timely cc(timely_params());
	TmDriver d(cc);

	uint64_t rate = cc.rate_bytes_per_s();
	for (uint64_t rtt = 100000; rtt <= 200000; rtt += 20000) {
		d.event(rtt);
		EXPECT_LE(cc.rate_bytes_per_s(), rate) << rtt;
		rate = cc.rate_bytes_per_s();
	}
	EXPECT_EQ(cc.state().stats.decreases, 5u);
	EXPECT_LT(cc.rate_bytes_per_s(), kTmRate / 2);

	uint64_t low = cc.rate_bytes_per_s();
	for (uint64_t rtt = 190000; rtt >= 100000; rtt -= 10000) {
		d.event(rtt);
		EXPECT_GE(cc.rate_bytes_per_s(), rate) << rtt;
		rate = cc.rate_bytes_per_s();
	}
	EXPECT_GT(cc.rate_bytes_per_s(), low);
	EXPECT_GT(cc.state().stats.increases + cc.state().stats.hai, 5u);
	EXPECT_GT(cc.state().stats.hai, 0u);
}

// Above T_high: rate * (1 - beta * (1 - T_high / rtt)), 0.6 at twice T_high.
TEST(DpTimelyTest, AboveTHighTheRateFallsWithTheRtt)
{
	Timely cc(timely_params());
	TmDriver d(cc);

	d.event(1000000); // seeds
	d.event(1000000);
	EXPECT_NEAR(double(cc.rate_bytes_per_s()), 0.6 * kTmRate, 0.001 * kTmRate);
	EXPECT_EQ(cc.state().stats.high, 1u);
}

// A loss halves the rate once per episode; the episode ends when snd_una
// passes the snd_nxt of the loss, and the next loss cuts again.
TEST(DpTimelyTest, LossHalvesOncePerEpisode)
{
	Timely cc(timely_params());
	TmDriver d(cc);
	d.ack(20000);
	uint32_t end = d.nxt(); // snd_nxt at the loss

	cc.on_loss(1, false);
	EXPECT_EQ(cc.rate_bytes_per_s(), kTmRate / 2);
	EXPECT_TRUE(cc.in_loss_episode());
	cc.on_loss(2, false); // the same episode
	cc.on_loss(3, true);
	EXPECT_EQ(cc.rate_bytes_per_s(), kTmRate / 2);
	EXPECT_EQ(cc.counters().loss_cuts, 1u);
	EXPECT_EQ(cc.counters().losses, 2u);
	EXPECT_EQ(cc.counters().timeouts, 1u);

	d.ack(0, end - d.una()); // snd_una reaches, but does not pass, the loss's snd_nxt
	EXPECT_TRUE(cc.in_loss_episode());
	cc.on_loss(4, false);
	EXPECT_EQ(cc.counters().loss_cuts, 1u);
	d.ack(0, 1);
	EXPECT_FALSE(cc.in_loss_episode());
	cc.on_loss(5, false);
	EXPECT_EQ(cc.rate_bytes_per_s(), kTmRate / 4);
	EXPECT_EQ(cc.counters().loss_cuts, 2u);
	EXPECT_EQ(cc.state().stats.loss_cuts, 2u);
}

// A loss before the first ACK: its episode ends with the first ACK's snd_nxt.
TEST(DpTimelyTest, LossBeforeTheFirstAck)
{
	Timely cc(timely_params());
	TmDriver d(cc);

	cc.on_loss(1, true);
	EXPECT_EQ(cc.rate_bytes_per_s(), kTmRate / 2);
	d.ack(0);
	EXPECT_TRUE(cc.in_loss_episode());
	EXPECT_EQ(cc.rate_bytes_per_s(), kTmRate / 2); // the first ACK keeps the cut
	d.ack(0, TmDriver::kInFlight);
	EXPECT_TRUE(cc.in_loss_episode()); // at the first ACK's snd_nxt
	d.ack(0);
	EXPECT_FALSE(cc.in_loss_episode());
}

// undo_timeout gives back what an RTO's cut took, and only that.
TEST(DpTimelyTest, UndoRestoresAnRtoCut)
{
	Timely cc(timely_params());
	TmDriver d(cc);
	d.ack(20000);

	cc.on_loss(1, true);
	cc.on_loss(2, true); // backed off: the same episode
	EXPECT_EQ(cc.rate_bytes_per_s(), kTmRate / 2);
	cc.undo_timeout();
	EXPECT_EQ(cc.rate_bytes_per_s(), kTmRate);
	EXPECT_EQ(cc.pacing_bps(), kTmRate * 8);
	EXPECT_FALSE(cc.in_loss_episode());
	EXPECT_EQ(cc.counters().undone_timeouts, 1u);
	EXPECT_EQ(cc.state().stats.loss_undos, 1u);
	cc.undo_timeout(); // nothing left to undo
	EXPECT_EQ(cc.counters().undone_timeouts, 1u);

	// a fast loss's cut is not an RTO's
	cc.on_loss(3, false);
	cc.on_loss(4, true);
	cc.undo_timeout();
	EXPECT_EQ(cc.rate_bytes_per_s(), kTmRate / 2);
	EXPECT_EQ(cc.counters().undone_timeouts, 1u);

	// once snd_una has moved, the RTO stands
	Timely late(timely_params());
	TmDriver e(late);
	e.ack(20000);
	late.on_loss(5, true);
	e.ack(20000);
	late.undo_timeout();
	EXPECT_EQ(late.rate_bytes_per_s(), kTmRate / 2);
	EXPECT_EQ(late.counters().undone_timeouts, 0u);
}

TEST(DpTimelyTest, IdleRestartForgetsTheRttHistoryKeepsTheRate)
{
	Timely cc(timely_params());
	TmDriver d(cc);
	d.event(100000);
	d.event(150000);
	uint64_t rate = cc.rate_bytes_per_s();
	ASSERT_NE(cc.state().prev_rtt_ns, 0u);
	ASSERT_NE(cc.state().rtt_diff_ns, 0);

	cc.on_idle_restart(1);
	EXPECT_EQ(cc.state().prev_rtt_ns, 0u);
	EXPECT_EQ(cc.state().rtt_diff_ns, 0);
	EXPECT_EQ(cc.rate_bytes_per_s(), rate);
	EXPECT_EQ(cc.counters().idle_restarts, 1u);
	d.event(400000); // seeds again: no gradient from before the idle
	EXPECT_EQ(cc.rate_bytes_per_s(), rate);
}

// The rate's floor is delta; the window's, 4 MSS.
TEST(DpTimelyTest, FloorsAreTheCores)
{
	Timely cc(timely_params());
	TmDriver d(cc);
	for (int i = 0; i < 100; i++)
		d.event(999000000);
	EXPECT_EQ(cc.rate_bytes_per_s(), kTmDelta);
	CcParams p = timely_params();
	p.host_bw_bps = 100000000; // 100 Mbit/s: delta 1 Mbit/s
	Timely slow(p);
	TmDriver s(slow);
	for (int i = 0; i < 100; i++)
		s.event(900000);
	EXPECT_EQ(slow.cwnd_bytes(), 4u * kTmMss);
}

// ---------------------------------------------------------------------------
// Parameters

TEST(CcParamsTest, DefaultsAreValid)
{
	for (CcAlgorithm a : {CcAlgorithm::kDctcp, CcAlgorithm::kPowerTcp, CcAlgorithm::kThetaPowerTcp,
			      CcAlgorithm::kHpcc, CcAlgorithm::kTimely}) {
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
		// HPCC: the core's words (lumen_hpcc_param_strerror)
		{"hpcc eta 0.4", CcAlgorithm::kHpcc, [](CcParams &p) { p.hpcc_eta = 26214; },
		 "hpcc eta must be within [0.5, 1]"},
		{"hpcc eta 1.1", CcAlgorithm::kHpcc, [](CcParams &p) { p.hpcc_eta = 72090; }, "hpcc eta"},
		{"hpcc stage 101", CcAlgorithm::kHpcc, [](CcParams &p) { p.hpcc_max_stage = 101; },
		 "hpcc max_stage must be within [0, 100]"},
		{"hpcc wai 1 GiB + 1", CcAlgorithm::kHpcc, [](CcParams &p) { p.hpcc_wai_bytes = (1u << 30) + 1; },
		 "hpcc W_AI must be at most 1 GiB"},
		{"hpcc gamma 0 (shared)", CcAlgorithm::kHpcc, [](CcParams &p) { p.ptcp_gamma = 0; }, "hpcc: gamma"},
		{"hpcc mss 0", CcAlgorithm::kHpcc, [](CcParams &p) { p.mss = 0; }, "mss"},
		// TIMELY: the core's words (lumen_timely_param_strerror)
		{"timely T_low 0", CcAlgorithm::kTimely, [](CcParams &p) { p.timely_t_low_ns = 0; },
		 "timely T_low must be within [1 us, 1 s]"},
		{"timely T_high = T_low", CcAlgorithm::kTimely,
		 [](CcParams &p) { p.timely_t_high_ns = p.timely_t_low_ns; }, "timely T_high must be above T_low"},
		{"timely min_rtt 500 ns", CcAlgorithm::kTimely, [](CcParams &p) { p.timely_min_rtt_ns = 500; },
		 "timely min_rtt"},
		{"timely delta above host bw", CcAlgorithm::kTimely, [](CcParams &p) { p.timely_delta_mbps = 25001; },
		 "timely delta"},
		{"timely alpha 0", CcAlgorithm::kTimely, [](CcParams &p) { p.timely_alpha = 0; }, "timely alpha"},
		{"timely beta 1.5", CcAlgorithm::kTimely, [](CcParams &p) { p.timely_beta = 98304; }, "timely beta"},
		{"timely hai 0", CcAlgorithm::kTimely, [](CcParams &p) { p.timely_hai_events = 0; }, "timely HAI"},
		{"timely segment 512", CcAlgorithm::kTimely, [](CcParams &p) { p.timely_seg_bytes = 512; },
		 "timely segment"},
		{"timely host bw 0", CcAlgorithm::kTimely, [](CcParams &p) { p.host_bw_bps = 0; }, "host_bw"},
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
	// HPCC's fields count for HPCC only, TIMELY's for TIMELY only
	p.hpcc_eta = 0;
	p.timely_alpha = 0;
	EXPECT_EQ(p.validate(), "");
	p.algorithm = CcAlgorithm::kPowerTcp;
	EXPECT_EQ(p.validate(), "");
	p.algorithm = CcAlgorithm::kHpcc;
	EXPECT_NE(p.validate().find("hpcc eta"), std::string::npos);
	p.hpcc_eta = LUMEN_HPCC_DEFAULT_ETA;
	EXPECT_EQ(p.validate(), "");
	p.algorithm = CcAlgorithm::kTimely;
	EXPECT_NE(p.validate().find("timely alpha"), std::string::npos);
	p.timely_alpha = LUMEN_TIMELY_DEFAULT_ALPHA;
	p.ptcp_gamma = 0; // PowerTCP's, unused by TIMELY
	EXPECT_EQ(p.validate(), "");
}

TEST(CcParamsTest, ConstructorsCheckTheAlgorithm)
{
	EXPECT_THROW(Dctcp{ptcp_params(CcAlgorithm::kPowerTcp)}, std::invalid_argument);
	EXPECT_THROW(PowerTcp{dctcp_params()}, std::invalid_argument);
	EXPECT_THROW(PowerTcp{timely_params()}, std::invalid_argument);
	EXPECT_THROW(Timely{ptcp_params(CcAlgorithm::kHpcc)}, std::invalid_argument);
	EXPECT_THROW(Dctcp{ptcp_params(CcAlgorithm::kHpcc)}, std::invalid_argument);
	EXPECT_STREQ(lumen::dp::cc_algorithm_name(CcAlgorithm::kHpcc), "hpcc");
	EXPECT_STREQ(lumen::dp::cc_algorithm_name(CcAlgorithm::kTimely), "timely");
}
