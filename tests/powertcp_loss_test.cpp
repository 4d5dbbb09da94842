// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// The TCP binding's loss response (powertcp_ack.h, "Loss and recovery"):
// one cut per episode, packet conservation in recovery, slow start back to
// the cut after an RTO, undo of a spurious episode; and, as a shell would
// drive it against a policer that drops without a queue and with no INT,
// that losses stay occasional instead of persistent.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>

extern "C" {
#include "lumen/powertcp_ack.h"
}

namespace
{

constexpr uint32_t kMss = 1000;
constexpr uint32_t kOpen = 0, kCwr = 2, kRecovery = LUMEN_TCP_CA_RECOVERY, kLoss = LUMEN_TCP_CA_LOSS;
constexpr uint32_t kClamp = 1u << 20;

lumen_ptcp_params params()
{
	lumen_ptcp_params p;
	lumen_ptcp_params_default(&p);
	p.host_bw_mbps = 10000; // 1.25 bytes/ns
	p.base_rtt_ns = 80000; // host BDP 100000 bytes = 100 segments
	p.expected_flows = 10; // beta 10000 bytes
	return p;
}

// A flow as a shell drives it: the loss state before the core, the core,
// snd_cwnd after it. Every ACK acknowledges `acked` segments.
struct Shell {
	lumen_ptcp_params p = params();
	lumen_ptcp st{};
	uint32_t una = 5000, nxt = 5000, delivered = 0, snd_cwnd = 0, segs_out = 0;
	uint64_t now = 1000000;
	bool respond = true; // false: the binding without its loss response

	explicit Shell(lumen_ptcp_mode mode = LUMEN_PTCP_MODE_THETA)
	{
		lumen_ptcp_init(&st, &p, mode, nxt, kMss);
		nxt += uint32_t(st.cwnd_bytes);
		snd_cwnd = lumen_ptcp_cwnd_segs(st.cwnd_bytes, kMss, kClamp);
	}

	uint32_t ack(uint32_t ca_state, uint32_t in_flight, uint32_t acked = 1, uint64_t rtt_ns = 80000,
		     uint32_t *events = nullptr)
	{
		now += 2000;
		una += acked * kMss;
		delivered += acked;
		nxt = std::max(nxt, una);
		uint32_t packets_out = (nxt - una) / kMss;
		lumen_ptcp_tcp t;
		// in_flight = packets_out - lost_out here
		lumen_ptcp_tcp_make(&t, ca_state, packets_out, 0, packets_out - std::min(in_flight, packets_out), 0,
				    delivered, segs_out, snd_cwnd);
		lumen_ptcp_ack a{};
		lumen_ptcp_ack_make(&a, now / 1000, int64_t(rtt_ns / 1000), una, nxt, kMss);
		uint32_t ev = respond ? lumen_ptcp_loss_begin(&st, &p, &t, nxt, kMss) : 0;
		ev |= lumen_ptcp_ack_process(&st, &p, &a, nullptr, nullptr);
		snd_cwnd = respond ? lumen_ptcp_loss_cwnd(&st, &p, &t, kMss, kClamp)
				   : lumen_ptcp_cwnd_segs(st.cwnd_bytes, kMss, kClamp);
		if (events)
			*events = ev;
		return snd_cwnd;
	}
	// the sender keeps snd_cwnd in flight
	void send_window()
	{
		uint32_t to = una + snd_cwnd * kMss;
		if (int32_t(to - nxt) > 0) {
			segs_out += (to - nxt) / kMss;
			nxt = to;
		}
	}
	// the sender sends n segments (new data or retransmissions)
	void send(uint32_t n)
	{
		segs_out += n;
		nxt += n * kMss;
	}
};

} // namespace

TEST(Loss, EnteringRecoveryHalvesOnceAndCountsIt)
{
	Shell f;
	f.send_window();
	const uint64_t before = f.st.cwnd_bytes;
	ASSERT_EQ(before, 100000u); // one host BDP
	uint32_t ev = 0;
	f.ack(kRecovery, 100, 1, 80000, &ev);
	EXPECT_TRUE(ev & LUMEN_PTCP_EV(LOSS_CUTS));
	// half of min(cwnd, FlightSize = 99 segments after this ACK)
	EXPECT_EQ(f.st.cwnd_bytes, 99u * kMss / 2);
	EXPECT_EQ(f.st.loss.undo_cwnd_bytes, before);
	EXPECT_EQ(f.st.stats.loss_cuts, 1u);
	for (int i = 0; i < 20; i++) {
		f.ack(kRecovery, 60, 1, 80000, &ev);
		EXPECT_FALSE(ev & LUMEN_PTCP_EV(LOSS_CUTS));
	}
	EXPECT_EQ(f.st.stats.loss_cuts, 1u);
}

TEST(Loss, CutUsesFlightSizeWhenTheFlowIsApplicationLimited)
{
	Shell f;
	f.nxt = f.una + 21 * kMss; // 20 segments out after the ACK
	f.ack(kRecovery, 20);
	EXPECT_EQ(f.st.cwnd_bytes, 10u * kMss);
}

TEST(Loss, CutNeverGoesBelowTwoSegments)
{
	Shell f;
	f.nxt = f.una + 2 * kMss;
	f.ack(kRecovery, 1);
	EXPECT_EQ(f.st.cwnd_bytes, uint64_t(LUMEN_PTCP_MIN_CWND_SEGS) * kMss);
	EXPECT_GE(f.snd_cwnd, uint32_t(LUMEN_PTCP_MIN_CWND_SEGS));
}

TEST(Loss, RecoveryFollowsPrrAndNeverExceedsTheCut)
{
	Shell f(LUMEN_PTCP_MODE_INT);
	f.send_window();
	// the ACK that enters recovery: 99 out after it, 3 of them lost
	EXPECT_EQ(f.ack(kRecovery, 96), 97u); // the fast retransmit goes out
	const uint32_t target = uint32_t(f.st.cwnd_bytes / kMss), fs = f.st.loss.prr_recover_fs;
	ASSERT_EQ(target, 49u);
	ASSERT_EQ(fs, 99u);
	f.send(1);
	// pipe above the target: segments go out in proportion target / RecoverFS
	// to what is delivered
	uint32_t pipe = 96, sent = 1, delivered = 1;
	while (pipe > target) {
		uint32_t w = f.ack(kRecovery, pipe - 1);
		pipe--;
		delivered++;
		ASSERT_GE(w, pipe);
		uint32_t n = w - pipe;
		f.send(n);
		pipe += n;
		sent += n;
		// PRR while the pipe the ACK left is above the target:
		// sent == ceil(delivered * target / RecoverFS)
		if (pipe - n > target) {
			EXPECT_EQ(sent, (delivered * target + fs - 1) / fs) << "delivered " << delivered;
		}
	}
	// at or below the target: refill by at most delivered + 1 per ACK, to it
	uint32_t w = f.ack(kRecovery, target - 10, 2);
	EXPECT_EQ(w, target - 10 + std::min(10u, 3u + (delivered + 2 > sent ? delivered + 2 - sent : 0)));
	for (int i = 0; i < 200; i++) {
		f.send_window();
		EXPECT_LE(f.ack(kRecovery, f.snd_cwnd, 1, 3000), target); // power far below 1: would grow
		EXPECT_LE(f.st.cwnd_bytes, uint64_t(target + 1) * kMss);
	}
}

TEST(Loss, AfterAnRtoTheWindowSlowStartsBackToTheCut)
{
	Shell f;
	f.send_window();
	f.snd_cwnd = 1; // the kernel: in flight + 1 after marking all lost
	f.ack(kLoss, 0, 1);
	const uint32_t cut_segs = uint32_t(f.st.loss.ceiling_bytes / kMss);
	ASSERT_GT(cut_segs, 8u);
	uint32_t prev = f.snd_cwnd;
	EXPECT_EQ(prev, 2u); // max(1, 0) + 1 delivered, floored at 2
	while (f.snd_cwnd < cut_segs) {
		uint32_t w = f.ack(kLoss, f.snd_cwnd, 2);
		EXPECT_EQ(w, std::min(prev + 2, cut_segs));
		prev = w;
	}
	EXPECT_EQ(f.st.stats.loss_cuts, 1u);
}

TEST(Loss, RtoDuringRecoveryCutsAgainAndCwrIsNoLoss)
{
	Shell f;
	f.send_window();
	f.ack(kCwr, 100);
	EXPECT_EQ(f.st.stats.loss_cuts, 0u); // ECN: the power's business
	f.ack(kRecovery, 100);
	const uint64_t first = f.st.cwnd_bytes;
	f.ack(kLoss, 0);
	EXPECT_EQ(f.st.stats.loss_cuts, 2u);
	EXPECT_LT(f.st.cwnd_bytes, first);
}

TEST(Loss, AfterRecoveryTheCeilingRisesByBetaPerWindowThenGoes)
{
	Shell f(LUMEN_PTCP_MODE_INT);
	f.send_window();
	f.ack(kRecovery, 100);
	const uint64_t cut = f.st.cwnd_bytes;
	for (int i = 0; i < 60; i++)
		f.ack(kRecovery, 40);
	EXPECT_EQ(f.st.loss.ceiling_bytes, cut); // no growth inside the episode
	// recovery over; RTT samples of 3 us (as the kernel takes on some lossy
	// paths) give a power far below 1: the control law alone would return
	// to its cap at once, the ceiling lets it rise by min(beta = 10
	// segments, ceiling / 8) per window delivered
	uint64_t ceiling = cut, acks = 0, windows = 0, delivered_in_window = 0;
	while (f.st.loss.ceiling_bytes != 0 && acks < 100000) {
		f.send_window();
		f.ack(kOpen, f.snd_cwnd, 1, 3000);
		acks++;
		EXPECT_LE(f.st.cwnd_bytes, std::max<uint64_t>(ceiling, f.st.loss.ceiling_bytes));
		if (f.st.loss.ceiling_bytes) {
			EXPECT_GE(f.st.loss.ceiling_bytes, ceiling); // never falls outside an episode
			EXPECT_LE(f.st.loss.ceiling_bytes - ceiling, 10000u / 2); // small steps
			ceiling = f.st.loss.ceiling_bytes;
		}
		if ((delivered_in_window += kMss) >= ceiling) {
			windows++;
			delivered_in_window = 0;
		}
	}
	EXPECT_EQ(f.st.loss.ceiling_bytes, 0u); // gone at BDP + beta
	// 49500 -> 110000 at +1/8 per window (below beta here): 7 windows
	EXPECT_GE(windows, 5u);
	EXPECT_LE(windows, 8u);
}

TEST(Loss, AnEpisodeDuringTheRiseCutsFromTheCurrentWindow)
{
	Shell f;
	f.send_window();
	f.ack(kRecovery, 100);
	for (int i = 0; i < 200; i++) {
		f.send_window();
		f.ack(kOpen, f.snd_cwnd);
	}
	const uint64_t w = f.st.cwnd_bytes;
	f.send_window();
	f.ack(kRecovery, f.snd_cwnd);
	EXPECT_EQ(f.st.stats.loss_cuts, 2u);
	EXPECT_LE(f.st.loss.ceiling_bytes, w / 2 + kMss);
}

TEST(Loss, UndoRestoresTheWindowBeforeTheCutOnce)
{
	Shell f;
	f.send_window();
	const uint64_t before = f.st.cwnd_bytes;
	f.ack(kRecovery, 100);
	ASSERT_LT(f.st.cwnd_bytes, before);
	uint32_t ev = 0;
	uint32_t segs = lumen_ptcp_undo(&f.st, &f.p, f.nxt, kMss, kClamp, &ev);
	EXPECT_TRUE(ev & LUMEN_PTCP_EV(LOSS_UNDOS));
	EXPECT_EQ(f.st.cwnd_bytes, before);
	EXPECT_EQ(segs, uint32_t(before / kMss));
	EXPECT_EQ(f.st.loss.ceiling_bytes, 0u);
	// a second undo, or one without a cut, changes nothing
	ev = 0;
	EXPECT_EQ(lumen_ptcp_undo(&f.st, &f.p, f.nxt, kMss, kClamp, &ev), segs);
	EXPECT_EQ(ev, 0u);
	EXPECT_EQ(f.st.stats.loss_undos, 1u);
	EXPECT_EQ(lumen_ptcp_undo(&f.st, &f.p, f.nxt, kMss, 5, nullptr), 5u); // the clamp holds
}

TEST(Loss, MakeInFlightNeverUnderflows)
{
	lumen_ptcp_tcp t;
	lumen_ptcp_tcp_make(&t, kOpen, 5, 4, 9, 2, 0, 0, 10);
	EXPECT_EQ(t.in_flight, 2u);
	lumen_ptcp_tcp_make(&t, kOpen, 10, 3, 2, 1, 0, 0, 10);
	EXPECT_EQ(t.in_flight, 6u);
	lumen_ptcp_tcp_make(&t, kOpen, 0xffffffffu, 0, 0, 0xffffffffu, 0, 0, 10);
	EXPECT_EQ(t.in_flight, 0xffffffffu);
}

// A policer of `rate` segments per RTT that drops above it with no queue
// (so the RTT stays at its base and the power at 1), no INT. Per RTT the
// flow sends its window; above the rate TCP enters recovery for one RTT.
// Without a loss response the window stays at BDP and every round loses;
// with it, losses come once per cycle (halve, then +1/8 per round back up:
// every ~10 rounds here) and the flow still uses most of the rate.
struct PolicerRun {
	double loss_share, util;
	uint32_t cuts;
};

PolicerRun police(lumen_ptcp_mode mode, bool respond)
{
	Shell f(mode);
	f.respond = respond;
	const uint32_t rate = 30; // segments per RTT; host BDP is 100
	const int rounds = 400;
	int lossy = 0;
	uint64_t got = 0;
	for (int r = 0; r < rounds; r++) {
		uint32_t w = f.snd_cwnd;
		bool loss = w > rate;
		lossy += loss;
		got += std::min(w, rate);
		// 4 ACKs per round (delayed ACKs), each 80 us / 4 apart; a lossy
		// round is in recovery until its last ACK (high_seq acknowledged)
		f.nxt = f.una + w * kMss;
		uint32_t per = std::max(1u, std::min(w, rate) / 4);
		for (uint32_t a = 0; a < 4; a++) {
			f.now += 20000 - 2000; // ack() adds 2 us
			uint32_t pipe = w > per * (a + 1) ? w - per * (a + 1) : 0;
			f.ack(loss && a < 3 ? kRecovery : kOpen, pipe, per);
		}
	}
	return {double(lossy) / rounds, double(got) / (double(rate) * rounds), f.st.stats.loss_cuts};
}

TEST(Loss, PolicerWithoutIntLosesOncePerCycleNotEveryRound)
{
	for (lumen_ptcp_mode mode : {LUMEN_PTCP_MODE_THETA, LUMEN_PTCP_MODE_INT}) {
		PolicerRun without = police(mode, false), with = police(mode, true);
		std::printf("mode %d: loss share %.2f -> %.2f, utilization %.2f -> %.2f, cuts %u\n", int(mode),
			    without.loss_share, with.loss_share, without.util, with.util, with.cuts);
		EXPECT_GT(without.loss_share, 0.95) << "mode " << mode;
		EXPECT_EQ(without.cuts, 0u);
		EXPECT_LT(with.loss_share, 0.2) << "mode " << mode;
		EXPECT_GT(with.util, 0.6) << "mode " << mode;
		EXPECT_GT(with.cuts, 20u) << "mode " << mode;
	}
}
