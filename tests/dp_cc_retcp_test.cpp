// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/dp_cc_retcp_test.cpp - lumen-dp's reTCP (dpdk/transport/cc.h: DCTCP
// with lumen/retcp.h's circuit jumps): without a circuit signal it is DCTCP
// ACK for ACK; with one (on_circuit), the window and ssthresh jump by
// retcp_jump when the circuit comes up (prebuffer_ns early) and back when
// it goes, within the window's bounds, counted, and on_circuit says when to
// ask again; and its parameters are checked. The engine's side (asked per
// ACK and on a timer) runs in tests/dpdk/optical_test.sh.
#include "transport/cc.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>

namespace
{

using lumen::dp::CcAck;
using lumen::dp::CcAlgorithm;
using lumen::dp::CcParams;
using lumen::dp::Dctcp;
using lumen::dp::make_cc;

constexpr uint32_t kMss = 1000;

CcParams retcp_params(uint32_t jump, uint64_t prebuffer_ns)
{
	CcParams p;
	p.algorithm = CcAlgorithm::kRetcp;
	p.mss = kMss;
	p.init_cwnd_pkts = 10;
	p.retcp_jump = jump;
	p.retcp_prebuffer_ns = prebuffer_ns;
	return p;
}

// One ACK of one packet.
struct Acker {
	uint32_t una = 0, nxt = 100 * kMss;
	uint64_t now = 1'000'000;

	CcAck next(uint32_t ce = 0)
	{
		CcAck a;
		una += kMss;
		nxt += kMss;
		now += 1000;
		a.now_ns = now;
		a.acked_pkts = 1;
		a.acked_bytes = kMss;
		a.ce_pkts = ce;
		a.rtt_ns = 20000;
		a.snd_una_bytes = una;
		a.snd_nxt_bytes = nxt;
		return a;
	}
};

// The circuit signal at TAI time tai, window [open, close), then an ACK.
uint64_t circuit_then_ack(Dctcp &cc, Acker &a, uint64_t tai, uint64_t open, uint64_t close)
{
	uint64_t until = cc.on_circuit(true, tai, open, close);
	cc.on_ack(a.next());
	return until;
}

TEST(DpRetcp, ParametersAreChecked)
{
	CcParams p = retcp_params(4, 0);
	EXPECT_EQ(p.validate(), "");
	EXPECT_STREQ(make_cc(p)->name(), "retcp");
	p.retcp_jump = 0;
	EXPECT_EQ(p.validate(), "retcp jump (circuit rate / packet rate) must be within [1, 64]");
	EXPECT_THROW(make_cc(p), std::invalid_argument);
	p = retcp_params(4, 100'000'001);
	EXPECT_EQ(p.validate(), "retcp prebuffer must be within [0, 100 ms]");
	p = retcp_params(4, 0);
	p.dctcp_g_shift = 17; // DCTCP's own fields are checked too
	EXPECT_EQ(p.validate(), "dctcp_g_shift must be within [0, 16] (g = 2^-shift)");
	// a DCTCP set does not look at reTCP's fields
	p = retcp_params(0, 0);
	p.algorithm = CcAlgorithm::kDctcp;
	EXPECT_EQ(p.validate(), "");
}

// No gate, or no circuit to the peer: reTCP is DCTCP, ACK for ACK, marks,
// cuts and losses included.
TEST(DpRetcp, WithoutACircuitItIsDctcp)
{
	CcParams d = retcp_params(4, 0);
	d.algorithm = CcAlgorithm::kDctcp;
	auto dctcp = make_cc(d);
	auto retcp = make_cc(retcp_params(4, 0));
	Acker ad, ar;
	for (int i = 0; i < 3000; i++) {
		uint32_t ce = i % 7 == 0;
		dctcp->on_ack(ad.next(ce));
		retcp->on_ack(ar.next(ce));
		if (i % 500 == 250) {
			dctcp->on_loss(ad.now, false);
			retcp->on_loss(ar.now, false);
		}
		ASSERT_EQ(dctcp->cwnd_bytes(), retcp->cwnd_bytes()) << i;
	}
	EXPECT_GT(retcp->counters().ecn_cuts, 0u);
	EXPECT_EQ(retcp->counters().circuit_up + retcp->counters().circuit_down, 0u);
}

TEST(DpRetcp, JumpsUpWithTheCircuitAndBackAtItsEnd)
{
	Dctcp cc(retcp_params(4, 0));
	Acker a;
	const uint64_t open = 5'000'000, close = 5'225'000;
	// before it: the packet network, until it opens
	EXPECT_EQ(circuit_then_ack(cc, a, 4'000'000, open, close), open);
	uint64_t w = cc.cwnd_bytes();
	EXPECT_EQ(cc.circuit_phase(), (uint32_t)LUMEN_RETCP_PACKET);
	EXPECT_EQ(circuit_then_ack(cc, a, open, open, close), close); // it opens, until it closes
	EXPECT_EQ(cc.circuit_phase(), (uint32_t)LUMEN_RETCP_CIRCUIT);
	// x4, then this ACK's slow-start growth
	EXPECT_EQ(cc.cwnd_bytes(), 4 * w + kMss);
	EXPECT_EQ(cc.ssthresh_bytes(), UINT64_MAX); // slow start stays slow start
	uint64_t up = cc.cwnd_bytes();
	circuit_then_ack(cc, a, open + 1000, open, close); // no second jump
	EXPECT_EQ(cc.cwnd_bytes(), up + kMss);
	// its end: the window the gate tells of next is the next day's
	circuit_then_ack(cc, a, close, close + 1'000'000, close + 1'225'000);
	EXPECT_EQ(cc.circuit_phase(), (uint32_t)LUMEN_RETCP_PACKET);
	EXPECT_EQ(cc.cwnd_bytes(), (up + kMss) / 4 + kMss);
	EXPECT_EQ(cc.counters().circuit_up, 1u);
	EXPECT_EQ(cc.counters().circuit_down, 1u);
	// no circuit to tell of (the gate went quiet) is the packet network
	// too: no jump from the packet phase, no time to ask again
	uint64_t before = cc.cwnd_bytes();
	EXPECT_EQ(cc.on_circuit(false, close + 10, 0, 0), 0u);
	cc.on_ack(a.next());
	EXPECT_EQ(cc.cwnd_bytes(), before + kMss);
	// ... and from the circuit phase, a jump down
	cc.on_circuit(true, close + 1'000'000, close + 1'000'000, close + 1'225'000);
	EXPECT_EQ(cc.circuit_phase(), (uint32_t)LUMEN_RETCP_CIRCUIT);
	cc.on_circuit(false, close + 1'000'001, 0, 0);
	EXPECT_EQ(cc.circuit_phase(), (uint32_t)LUMEN_RETCP_PACKET);
	EXPECT_EQ(cc.cwnd_bytes(), before + kMss);
}

TEST(DpRetcp, SsthreshJumpsWithTheWindowAfterACut)
{
	Dctcp cc(retcp_params(4, 0));
	Acker a;
	for (int i = 0; i < 20; i++)
		cc.on_ack(a.next());
	cc.on_loss(a.now, false); // halves: ssthresh set
	uint64_t ss = cc.ssthresh_bytes();
	ASSERT_LT(ss, UINT64_MAX);
	circuit_then_ack(cc, a, 10, 10, 20);
	EXPECT_EQ(cc.ssthresh_bytes(), 4 * ss);
	circuit_then_ack(cc, a, 20, 100, 200);
	EXPECT_EQ(cc.ssthresh_bytes(), ss);
}

TEST(DpRetcp, PrebufferingJumpsEarly)
{
	Dctcp cc(retcp_params(4, 600'000));
	Acker a;
	const uint64_t open = 5'000'000, close = 5'225'000;
	EXPECT_EQ(circuit_then_ack(cc, a, open - 600'001, open, close), open - 600'000);
	EXPECT_EQ(cc.circuit_phase(), (uint32_t)LUMEN_RETCP_PACKET);
	circuit_then_ack(cc, a, open - 600'000, open, close);
	EXPECT_EQ(cc.circuit_phase(), (uint32_t)LUMEN_RETCP_CIRCUIT);
	EXPECT_EQ(cc.counters().circuit_up, 1u);
}

TEST(DpRetcp, TheWindowStaysWithinItsBounds)
{
	CcParams p = retcp_params(64, 0);
	p.dctcp_max_cwnd_bytes = 200 * kMss;
	p.dctcp_min_cwnd_pkts = 2;
	Dctcp cc(p);
	Acker a;
	circuit_then_ack(cc, a, 10, 10, 20);
	EXPECT_EQ(cc.cwnd_bytes(), 200u * kMss); // 10 * 64 packets, clamped
	cc.on_loss(a.now, true); // RTO: the minimum
	circuit_then_ack(cc, a, 30, 100, 200);
	EXPECT_GE(cc.cwnd_bytes(), 2u * kMss);
	EXPECT_LE(cc.cwnd_bytes(), 3u * kMss);
}

} // namespace
