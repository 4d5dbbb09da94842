// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/dp_cc_loop_test.cpp - lumen-dp's congestion control
// (dpdk/transport/cc.h) in a closed loop: two flows of one algorithm share
// a single bottleneck and must fill it (HPCC: to its target utilisation),
// fairly (TIMELY: neither starved), with a bounded queue.
#include "transport/cc.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace
{

using lumen::dp::CcAck;
using lumen::dp::CcAlgorithm;
using lumen::dp::CcParams;
using lumen::dp::CongestionControl;
using lumen::dp::make_cc;

// A single bottleneck, packet by packet: two flows of one algorithm.
//
// Time moves in steps of one packet time at the bottleneck (1500 B at
// 10 Gbit/s = 1.2 us). Each step: ACKs that arrived are handed to their
// flow's CC; each sender sends at most one packet (its NIC runs at the
// bottleneck's rate) if its window and pacing allow; packets reach the
// switch tau/2 later, are marked CE when the queue they join exceeds K, and
// the switch sends one per step, stamping an INT hop record (queue left
// behind, cumulative tx, its clock); the ACK with that record and the CE bit
// reaches the sender tau/2 after the dequeue. No loss: the buffer is
// unbounded, so a bounded queue is the CC's doing. The second flow may join
// late; throughput, utilisation and queue are measured after a warm-up.

constexpr uint32_t kMss = 1500;
constexpr uint64_t kDctcpK = 15000; // 10 packets; the BDP is 20
constexpr uint64_t kNoEcn = UINT64_MAX;

struct LoopConfig {
	CcAlgorithm algorithm;
	uint64_t ecn_k_bytes = kNoEcn;
	uint64_t second_start_step = 0;
	uint64_t steps = 80000; // 96 ms
	uint64_t warmup_steps = 20000;
};

struct LoopResult {
	double utilization;
	double avg_queue;
	uint64_t max_queue;
	std::vector<uint64_t> delivered; // per flow, after warm-up
};

LoopResult run_loop(const LoopConfig &cfg)
{
	constexpr uint64_t kLinkBps = 10000000000ull;
	constexpr uint64_t kStep = 1200; // ns
	constexpr uint64_t kHalfRtt = 10 * kStep;
	constexpr int kFlows = 2;

	struct Pkt {
		int flow;
		uint64_t send_ns, at_ns;
		bool ce;
		lumen_int_hop hop;
	};
	struct Flow {
		std::unique_ptr<CongestionControl> cc;
		uint32_t una, nxt;
		uint64_t next_send_ns;
	};

	CcParams params;
	params.algorithm = cfg.algorithm;
	params.mss = kMss;
	params.host_bw_bps = kLinkBps;
	params.base_rtt_ns = 2 * kHalfRtt;
	std::vector<Flow> flows;
	for (int i = 0; i < kFlows; i++)
		flows.push_back(Flow{make_cc(params), 0xfff00000u + uint32_t(i) * 77777u, 0, 0});
	for (Flow &f : flows)
		f.nxt = f.una;
	std::deque<Pkt> wire, queue, acks;
	uint16_t rate_code = lumen_int_rate_encode(10000);
	uint64_t tx_total = 99999, queue_bytes = 0, busy = 0, queue_sum = 0, max_queue = 0;
	LoopResult res{};
	res.delivered.assign(kFlows, 0);

	for (uint64_t s = 0; s < cfg.steps; s++) {
		uint64_t now = 1000000 + s * kStep;
		bool measure = s >= cfg.warmup_steps;

		while (!acks.empty() && acks.front().at_ns <= now) {
			Pkt p = acks.front();
			acks.pop_front();
			Flow &f = flows[size_t(p.flow)];
			lumen_int_opt echo{};
			echo.version = LUMEN_INT_VERSION;
			echo.flags = LUMEN_INT_FLAG_ECHO;
			echo.slots = echo.count = 1;
			echo.hops[0] = p.hop;
			f.una += kMss;
			CcAck a;
			a.now_ns = now;
			a.acked_pkts = 1;
			a.acked_bytes = kMss;
			a.ce_pkts = p.ce ? 1 : 0;
			a.rtt_ns = now - p.send_ns;
			a.snd_una_bytes = f.una;
			a.snd_nxt_bytes = f.nxt;
			a.int_echo = &echo;
			f.cc->on_ack(a);
			if (measure)
				res.delivered[size_t(p.flow)] += kMss;
		}
		for (int j = 0; j < kFlows; j++) {
			// take turns: the second packet of a step joins a longer
			// queue, and a fixed order would always mark the same flow
			int i = (j + int(s)) % kFlows;
			Flow &f = flows[size_t(i)];
			if (i == 1 && s < cfg.second_start_step)
				continue;
			if (now < f.next_send_ns || uint64_t(f.nxt - f.una) + kMss > f.cc->cwnd_bytes())
				continue;
			f.nxt += kMss;
			wire.push_back(Pkt{i, now, now + kHalfRtt, false, {}});
			uint64_t gap = kStep;
			if (f.cc->pacing_bps())
				gap = std::max<uint64_t>(gap, kMss * 8 * 1000000000ull / f.cc->pacing_bps());
			// the pacer's clock runs on from when this packet was due,
			// not from the step that sent it: otherwise every gap would
			// round up to whole steps (a rate just below the link's
			// would send every other step). Up to a step of credit.
			f.next_send_ns = std::max(f.next_send_ns, now - kStep) + gap;
		}
		while (!wire.empty() && wire.front().at_ns <= now) {
			Pkt p = wire.front();
			wire.pop_front();
			queue_bytes += kMss;
			p.ce = queue_bytes > cfg.ecn_k_bytes;
			queue.push_back(p);
		}
		if (!queue.empty()) {
			Pkt p = queue.front();
			queue.pop_front();
			queue_bytes -= kMss;
			tx_total += kMss;
			lumen_int_hop_make(&p.hop, now + 31337, tx_total, queue_bytes, rate_code);
			p.at_ns = now + kHalfRtt;
			acks.push_back(p);
			if (measure)
				busy++;
		}
		if (measure) {
			queue_sum += queue_bytes;
			max_queue = std::max(max_queue, queue_bytes);
		}
	}
	res.utilization = double(busy) / double(cfg.steps - cfg.warmup_steps);
	res.avg_queue = double(queue_sum) / double(cfg.steps - cfg.warmup_steps);
	res.max_queue = max_queue;
	return res;
}

std::string describe(const LoopResult &r)
{
	return "utilization " + std::to_string(r.utilization) + ", queue avg " + std::to_string(r.avg_queue) + " max " +
	       std::to_string(r.max_queue) + ", delivered " + std::to_string(r.delivered[0]) + " / " +
	       std::to_string(r.delivered[1]);
}

// A full link, and each flow within 10% of an equal share.
void expect_fair_and_full(const LoopResult &r)
{
	EXPECT_GT(r.utilization, 0.99) << describe(r);
	uint64_t total = r.delivered[0] + r.delivered[1];
	for (uint64_t d : r.delivered)
		EXPECT_NEAR(double(d), 0.5 * double(total), 0.05 * double(total)) << describe(r);
}

} // namespace

TEST(CcLoopTest, DctcpFillsTheLinkWithAQueueNearK)
{
	LoopResult r = run_loop({CcAlgorithm::kDctcp, kDctcpK});
	expect_fair_and_full(r);
	EXPECT_GT(r.avg_queue, 0.5 * kDctcpK) << describe(r);
	EXPECT_LT(r.avg_queue, 1.5 * kDctcpK) << describe(r);
	EXPECT_LT(r.max_queue, 2 * kDctcpK) << describe(r);
}

// The equilibrium queue of PowerTCP is the sum of the flows' beta (thesis,
// theorem 1): 2 * BDP / 10 = 6000 bytes here, give or take a packet.
TEST(CcLoopTest, PowerTcpFillsTheLinkWithAQueueNearSumOfBeta)
{
	LoopResult r = run_loop({CcAlgorithm::kPowerTcp});
	expect_fair_and_full(r);
	EXPECT_NEAR(r.avg_queue, 6000.0, 1500.0) << describe(r);
	EXPECT_LE(r.max_queue, 9000u) << describe(r);
}

TEST(CcLoopTest, ThetaPowerTcpFillsTheLinkWithAQueueNearSumOfBeta)
{
	LoopResult r = run_loop({CcAlgorithm::kThetaPowerTcp});
	expect_fair_and_full(r);
	EXPECT_NEAR(r.avg_queue, 6000.0, 1500.0) << describe(r);
	EXPECT_LE(r.max_queue, 9000u) << describe(r);
}

// A flow that joins a busy link (after 12 ms, 500 RTTs) gets its share.
TEST(CcLoopTest, ALateFlowConvergesToItsShare)
{
	for (CcAlgorithm a : {CcAlgorithm::kDctcp, CcAlgorithm::kPowerTcp, CcAlgorithm::kThetaPowerTcp}) {
		SCOPED_TRACE(lumen::dp::cc_algorithm_name(a));
		LoopConfig cfg{a, a == CcAlgorithm::kDctcp ? kDctcpK : kNoEcn};
		cfg.second_start_step = 10000;
		cfg.warmup_steps = 30000;
		LoopResult r = run_loop(cfg);
		expect_fair_and_full(r);
		EXPECT_LT(r.max_queue, 2 * kDctcpK) << describe(r);
	}
}

// HPCC aims at U = eta (0.95) of the link with the queue near empty: the
// bottleneck about 95% busy, at most a packet or two queued, fair shares,
// also for a flow that joins late.
TEST(CcLoopTest, HpccHoldsTheLinkNearEtaWithAnEmptyQueue)
{
	for (uint64_t second_start : {uint64_t(0), uint64_t(10000)}) {
		SCOPED_TRACE(second_start ? "late second flow" : "together");
		LoopConfig cfg{CcAlgorithm::kHpcc};
		cfg.second_start_step = second_start;
		cfg.warmup_steps = second_start ? 30000 : 20000;
		LoopResult r = run_loop(cfg);
		EXPECT_GT(r.utilization, 0.92) << describe(r);
		EXPECT_LT(r.utilization, 0.97) << describe(r);
		EXPECT_LT(r.avg_queue, double(kMss)) << describe(r);
		EXPECT_LE(r.max_queue, 3u * kMss) << describe(r);
		uint64_t total = r.delivered[0] + r.delivered[1];
		for (uint64_t d : r.delivered)
			EXPECT_NEAR(double(d), 0.5 * double(total), 0.05 * double(total)) << describe(r);
	}
}

// TIMELY raises its rate while the RTT is below T_low (50 us; the base RTT
// here is 24 us) and follows the gradient above it: the link nearly full,
// the queue held around the T_low's worth (26 us, 32.5 kB) and far below
// T_high's, neither flow starved (TIMELY does not promise fair shares).
TEST(CcLoopTest, TimelyFillsTheLinkWithAQueueNearTLow)
{
	constexpr double kTLowQueue = 26000 * 1.25; // bytes: (T_low - base RTT) at 10 Gbit/s
	for (uint64_t second_start : {uint64_t(0), uint64_t(10000)}) {
		SCOPED_TRACE(second_start ? "late second flow" : "together");
		LoopConfig cfg{CcAlgorithm::kTimely};
		cfg.second_start_step = second_start;
		cfg.warmup_steps = second_start ? 30000 : 20000;
		LoopResult r = run_loop(cfg);
		EXPECT_GT(r.utilization, 0.95) << describe(r);
		EXPECT_LT(r.avg_queue, kTLowQueue) << describe(r);
		EXPECT_LT(double(r.max_queue), 2 * kTLowQueue) << describe(r);
		uint64_t total = r.delivered[0] + r.delivered[1];
		for (uint64_t d : r.delivered)
			EXPECT_GT(double(d), 0.35 * double(total)) << describe(r);
	}
}
