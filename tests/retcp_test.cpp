// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// reTCP's circuit-aware jumps (include/lumen/retcp.h): the phase a circuit
// window puts a flow in at any time, with and without prebuffering, and the
// window and ssthresh jumps on a change of phase, over a whole rotation of a
// schedule as the thesis' RDCN runs it (a day of circuit, the rest packet).
#include <gtest/gtest.h>

#include <cstdint>

extern "C" {
#include "lumen/retcp.h"
}

namespace
{

constexpr uint32_t kInf = 0x7fffffff; // TCP_INFINITE_SSTHRESH

lumen_retcp_params params(uint32_t jump, uint64_t prebuffer_ns)
{
	lumen_retcp_params p;
	lumen_retcp_params_default(&p);
	p.jump = jump;
	p.prebuffer_ns = prebuffer_ns;
	EXPECT_EQ(lumen_retcp_params_validate(&p), 0);
	return p;
}

uint32_t phase(uint64_t open, uint64_t close, uint64_t pre, uint64_t now, __u64 *until)
{
	return lumen_retcp_phase(open, close, pre, now, until);
}

TEST(RetcpParams, DefaultsAreTheThesisAndBoundsAreEnforced)
{
	lumen_retcp_params p;
	lumen_retcp_params_default(&p);
	EXPECT_EQ(p.jump, 4u);
	EXPECT_EQ(p.prebuffer_ns, 0u);
	EXPECT_EQ(lumen_retcp_params_validate(&p), 0);
	p.jump = 0;
	EXPECT_EQ(lumen_retcp_params_validate(&p), -LUMEN_RETCP_PARAM_EJUMP);
	p.jump = 65;
	EXPECT_EQ(lumen_retcp_params_validate(&p), -LUMEN_RETCP_PARAM_EJUMP);
	p.jump = 64;
	EXPECT_EQ(lumen_retcp_params_validate(&p), 0);
	p.prebuffer_ns = LUMEN_RETCP_PREBUFFER_MAX_NS + 1;
	EXPECT_EQ(lumen_retcp_params_validate(&p), -LUMEN_RETCP_PARAM_EPREBUFFER);
	EXPECT_STREQ(lumen_retcp_param_strerror(-LUMEN_RETCP_PARAM_EPREBUFFER),
		     "retcp prebuffer must be within [0, 100 ms]");
	EXPECT_STREQ(lumen_retcp_param_strerror(99), "unknown retcp parameter error");
}

TEST(RetcpPhase, TheCircuitWindowWithoutPrebuffering)
{
	__u64 until = 1;
	// before the window: packet, until it opens
	EXPECT_EQ(phase(1000, 3000, 0, 999, &until), LUMEN_RETCP_PACKET);
	EXPECT_EQ(until, 1000u);
	// [open, close): circuit, until it closes
	EXPECT_EQ(phase(1000, 3000, 0, 1000, &until), LUMEN_RETCP_CIRCUIT);
	EXPECT_EQ(until, 3000u);
	EXPECT_EQ(phase(1000, 3000, 0, 2999, &until), LUMEN_RETCP_CIRCUIT);
	EXPECT_EQ(until, 3000u);
	// past: packet, and no change known until lumend publishes the next
	EXPECT_EQ(phase(1000, 3000, 0, 3000, &until), LUMEN_RETCP_PACKET);
	EXPECT_EQ(until, 0u);
}

TEST(RetcpPhase, PrebufferingStartsTheCircuitPhaseEarly)
{
	__u64 until = 0;
	EXPECT_EQ(phase(10000, 20000, 1800, 8199, &until), LUMEN_RETCP_PACKET);
	EXPECT_EQ(until, 8200u);
	EXPECT_EQ(phase(10000, 20000, 1800, 8200, &until), LUMEN_RETCP_CIRCUIT);
	EXPECT_EQ(until, 20000u);
	// a prebuffer longer than the time since 0 does not wrap
	EXPECT_EQ(phase(500, 20000, 1800, 0, &until), LUMEN_RETCP_CIRCUIT);
	EXPECT_EQ(until, 20000u);
	// prebuffering never extends the circuit's end
	EXPECT_EQ(phase(10000, 20000, 1800, 20000, &until), LUMEN_RETCP_PACKET);
}

TEST(RetcpPhase, NoWindowOrAMalformedOneIsThePacketNetwork)
{
	__u64 until = 7;
	EXPECT_EQ(phase(0, 0, 0, 5, &until), LUMEN_RETCP_PACKET); // none in the period
	EXPECT_EQ(until, 0u);
	EXPECT_EQ(phase(3000, 3000, 600, 2900, &until), LUMEN_RETCP_PACKET); // empty
	EXPECT_EQ(phase(3000, 1000, 600, 2900, &until), LUMEN_RETCP_PACKET); // inverted
	EXPECT_EQ(until, 0u);
}

TEST(RetcpJump, UpByTheRateRatioAndBackDown)
{
	auto p = params(4, 0);
	lumen_retcp r;
	lumen_retcp_init(&r);
	uint32_t ssthresh = 20;
	// same phase: nothing changes
	EXPECT_EQ(lumen_retcp_on_phase(&r, &p, LUMEN_RETCP_PACKET, 10, &ssthresh, 2, 10000, kInf), 10u);
	EXPECT_EQ(ssthresh, 20u);
	EXPECT_EQ(r.jumps_up + r.jumps_down, 0u);
	// the circuit: x4, once
	EXPECT_EQ(lumen_retcp_on_phase(&r, &p, LUMEN_RETCP_CIRCUIT, 10, &ssthresh, 2, 10000, kInf), 40u);
	EXPECT_EQ(ssthresh, 80u);
	EXPECT_EQ(lumen_retcp_on_phase(&r, &p, LUMEN_RETCP_CIRCUIT, 41, &ssthresh, 2, 10000, kInf), 41u);
	// back: /4 of what Reno made of it meanwhile
	EXPECT_EQ(lumen_retcp_on_phase(&r, &p, LUMEN_RETCP_PACKET, 44, &ssthresh, 2, 10000, kInf), 11u);
	EXPECT_EQ(ssthresh, 20u);
	EXPECT_EQ(r.jumps_up, 1u);
	EXPECT_EQ(r.jumps_down, 1u);
	// an unknown phase is ignored
	EXPECT_EQ(lumen_retcp_on_phase(&r, &p, 7, 11, &ssthresh, 2, 10000, kInf), 11u);
	EXPECT_EQ(r.phase, (uint32_t)LUMEN_RETCP_PACKET);
}

TEST(RetcpJump, BoundsHoldAtTheExtremes)
{
	auto p = params(64, 0);
	lumen_retcp r;
	lumen_retcp_init(&r);
	uint32_t ssthresh = kInf;
	// slow start (ssthresh unset) stays so; the window stops at the clamp
	EXPECT_EQ(lumen_retcp_on_phase(&r, &p, LUMEN_RETCP_CIRCUIT, 0xffffffffu, &ssthresh, 2, 0xfffffffeu, kInf),
		  0xfffffffeu);
	EXPECT_EQ(ssthresh, kInf);
	// down: never below the minimum window (and a minimum of 0 means 1)
	EXPECT_EQ(lumen_retcp_on_phase(&r, &p, LUMEN_RETCP_PACKET, 3, &ssthresh, 2, 1000, kInf), 2u);
	lumen_retcp_on_phase(&r, &p, LUMEN_RETCP_CIRCUIT, 3, &ssthresh, 0, 1000, kInf);
	EXPECT_EQ(lumen_retcp_on_phase(&r, &p, LUMEN_RETCP_PACKET, 3, &ssthresh, 0, 1000, kInf), 1u);
	// a clamp below the minimum is the minimum; a big ssthresh stays finite
	ssthresh = kInf - 1;
	EXPECT_EQ(lumen_retcp_on_phase(&r, &p, LUMEN_RETCP_CIRCUIT, 5, &ssthresh, 4, 1, kInf), 4u);
	EXPECT_EQ(ssthresh, kInf - 1);
}

// One rotation after another: a 225 us day every 585 us (the thesis' day;
// a 24-matching week shortened), the window of a flow that Reno would keep at
// 10 packets on the packet network. With 60 us of prebuffering the window
// is up from 60 us before each day until its end, and back after.
TEST(RetcpJump, FollowsTheScheduleOverRotations)
{
	constexpr uint64_t kDay = 225000, kPeriod = 585000, kPre = 60000;
	auto p = params(4, kPre);
	lumen_retcp r;
	lumen_retcp_init(&r);
	uint32_t cwnd = 10, ssthresh = 10;
	uint64_t circuit_ns = 0, ticks = 0;
	for (uint64_t now = 0; now < 10 * kPeriod; now += 1000, ticks++) {
		// lumend's window: the current day until it ends, then the next
		uint64_t k = now / kPeriod, open = k * kPeriod + 300000;
		if (now >= open + kDay)
			open += kPeriod;
		__u64 until = 0;
		uint32_t ph = lumen_retcp_phase(open, open + kDay, kPre, now, &until);
		cwnd = lumen_retcp_on_phase(&r, &p, ph, cwnd, &ssthresh, 2, 1000, kInf);
		ASSERT_EQ(cwnd, ph == LUMEN_RETCP_CIRCUIT ? 40u : 10u) << now;
		ASSERT_GT(until, now) << now;
		circuit_ns += ph == LUMEN_RETCP_CIRCUIT ? 1000 : 0;
	}
	EXPECT_EQ(r.jumps_up, 10u);
	EXPECT_EQ(r.jumps_down, 10u);
	EXPECT_EQ(circuit_ns, 10 * (kDay + kPre));
	EXPECT_GT(ticks, 0u);
}

} // namespace
