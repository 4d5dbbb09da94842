// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/baselines_fluid_test.cpp - HPCC (include/lumen/hpcc.h, the PowerTCP
// core's LUMEN_PTCP_MODE_HPCC) and TIMELY (include/lumen/timely.h) in the
// fluid simulator of fluid_sim.h, against what their papers claim:
//
//   HPCC     utilisation settles at eta (95 %) with a near-empty queue
//            (inflight ~ eta * BDP: the headroom absorbs the additive
//            steps); after a flow joins, the queue drains and the link is
//            used again within a few RTTs; the most utilised hop of a
//            multi-hop path is the one held at eta; PowerTCP beside it, as
//            the thesis compares them, holds the queue it is designed for
//            (sum of beta) at full utilisation.
//   TIMELY   holds the RTT between T_low and T_high (a bounded queue) at high
//            utilisation; it has no unique fixed point (the TIMELY paper and
//            Zhu et al., CoNEXT 2016), so only bounds are checked.
//
// Base setting as fluid_sim_test: bottleneck = HostBw = 25 Gbit/s, tau =
// 40 us (BDP 125 kB), MSS 1500, one ACK per MSS, step 160 ns. Measured
// numbers are printed ("[fluid]" lines).
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/stats.h"
#include "fluid_sim.h"

namespace
{

using lumen::fluid::Config;
using lumen::fluid::FlowSpec;
using lumen::fluid::Measurement;
using lumen::fluid::Simulator;

constexpr std::uint32_t kRateMbps = 25000;
constexpr std::uint64_t kTau = 40000;

lumen_ptcp_params Params(std::uint32_t host_mbps = kRateMbps)
{
	lumen_ptcp_params p;

	lumen_ptcp_params_default(&p);
	p.host_bw_mbps = host_mbps;
	p.base_rtt_ns = kTau;
	return p;
}

FlowSpec Hpcc(std::uint64_t start_ns = 0)
{
	FlowSpec f;

	f.params = Params();
	f.mode = LUMEN_PTCP_MODE_HPCC;
	f.start_ns = start_ns;
	return f;
}

FlowSpec Timely()
{
	FlowSpec f;

	f.params = Params();
	f.timely = true;
	lumen_timely_params_default(&f.timely_params);
	f.timely_params.host_bw_mbps = kRateMbps;
	return f;
}

Config Base(std::vector<FlowSpec> flows, std::vector<std::uint32_t> hops = {kRateMbps})
{
	Config c;

	c.base_rtt_ns = kTau;
	c.host_bw_mbps = kRateMbps;
	c.hop_rates_mbps = std::move(hops);
	c.trace_every_steps = 5;
	for (std::size_t i = 0; i < flows.size(); i++)
		flows[i].isn = 0xfff00000u - 7919u * (std::uint32_t)i;
	c.flows = std::move(flows);
	return c;
}

Measurement Measure(Simulator &sim, std::uint64_t warm, std::uint64_t len)
{
	sim.run_until(warm);
	sim.begin_measure();
	sim.run_until(warm + len);
	return sim.end_measure();
}

void ExpectIntWorked(const Simulator &sim)
{
	EXPECT_EQ(sim.counters().int_encode_errors, 0u);
	EXPECT_EQ(sim.counters().int_parse_errors, 0u);
	for (std::size_t i = 0; i < sim.flow_count(); i++) {
		const lumen_ptcp_stats &st = sim.ptcp(i).stats;
		EXPECT_GT(st.int_updates, 0u) << "flow " << i;
		EXPECT_EQ(st.fallback_updates, 0u) << "flow " << i;
		EXPECT_EQ(st.int_stale + st.int_path_changes, 0u) << "flow " << i;
	}
}

TEST(HpccFluid, UtilisationSettlesAtEtaWithANearEmptyQueue)
{
	for (int n : {1, 4}) {
		std::vector<FlowSpec> flows(n, Hpcc());
		Simulator sim(Base(flows));
		const Measurement m = Measure(sim, 100 * kTau, 60 * kTau);
		const double bdp = (double)sim.bdp_bytes();
		std::printf("[fluid] hpcc n=%d: utilisation %.4f, queue avg %.0f B (%.4f BDP) max %llu B, aggregate "
			    "cwnd %.3f BDP, Jain %.4f\n",
			    n, m.utilization, m.avg_queue, m.avg_queue / bdp, (unsigned long long)m.max_queue,
			    m.avg_aggregate_cwnd / bdp, lumen::jain_index(m.throughput_gbps));
		EXPECT_NEAR(m.utilization, 0.95, 0.03) << n;
		EXPECT_LE(m.avg_queue, 0.05 * bdp) << n;
		EXPECT_NEAR(m.avg_aggregate_cwnd / bdp, 0.95, 0.06) << n;
		ExpectIntWorked(sim);
	}
}

// A flow joins a busy link at line rate (W_init = BDP): the queue it makes
// drains and the link is used again within a few RTTs.
TEST(HpccFluid, AJoiningFlowIsAbsorbedWithinAFewRtts)
{
	Simulator sim(Base({Hpcc(), Hpcc(), Hpcc(80 * kTau)}));
	sim.run_until(80 * kTau);
	const double bdp = (double)sim.bdp_bytes();
	std::uint64_t peak = 0;
	while (sim.now_ns() < 84 * kTau) {
		sim.step();
		peak = std::max(peak, sim.queue_bytes(0));
	}
	sim.run_until(90 * kTau); // 10 RTTs after the join
	const Measurement m = Measure(sim, 90 * kTau, 20 * kTau);
	std::printf("[fluid] hpcc join: peak queue %.2f BDP, 10-30 RTTs after: utilisation %.4f, queue %.4f BDP\n",
		    (double)peak / bdp, m.utilization, m.avg_queue / bdp);
	EXPECT_GT((double)peak, 0.5 * bdp); // the new flow's line-rate start did queue
	EXPECT_GE(m.utilization, 0.90);
	EXPECT_LE(m.avg_queue, 0.05 * bdp);
	// the newcomer got a real share (HPCC's fairness comes slowly, from W_AI)
	EXPECT_GT(m.throughput_gbps[2], 0.1 * 25.0 / 3);
}

// Two hops, the second slower: it is the one held at eta.
TEST(HpccFluid, TheMostUtilisedHopIsHeldAtEta)
{
	std::vector<FlowSpec> flows(2, Hpcc());
	Simulator sim(Base(flows, {kRateMbps, 10000}));
	const Measurement m = Measure(sim, 100 * kTau, 60 * kTau);
	const double bdp = (double)sim.bdp_bytes();
	std::printf("[fluid] hpcc two hops: bottleneck %zu utilisation %.4f, queue %.4f BDP; hop 0 queue %.0f B; "
		    "INT updates by hop: %llu %llu\n",
		    sim.bottleneck(), m.utilization, m.avg_queue / bdp, m.avg_hop_queue[0],
		    (unsigned long long)sim.counters().int_max_hop[0],
		    (unsigned long long)sim.counters().int_max_hop[1]);
	EXPECT_EQ(sim.bottleneck(), 1u);
	EXPECT_NEAR(m.utilization, 0.95, 0.03);
	EXPECT_LE(m.avg_queue, 0.05 * bdp);
	EXPECT_GT(sim.counters().int_max_hop[1], 10 * sim.counters().int_max_hop[0]);
}

// The thesis' comparison in miniature: PowerTCP holds sum(beta) at full
// utilisation, HPCC an empty queue at eta. Both run the same machinery.
TEST(HpccFluid, PowerTcpBesideHpccOnTheSameLink)
{
	std::vector<FlowSpec> ptcp(4, Hpcc());
	for (auto &f : ptcp)
		f.mode = LUMEN_PTCP_MODE_INT;
	Simulator a(Base(ptcp)), b(Base(std::vector<FlowSpec>(4, Hpcc())));
	const Measurement ma = Measure(a, 100 * kTau, 60 * kTau), mb = Measure(b, 100 * kTau, 60 * kTau);
	const double bdp = (double)a.bdp_bytes();
	std::printf("[fluid] 4 flows: PowerTCP utilisation %.4f queue %.3f BDP; HPCC utilisation %.4f queue %.3f BDP\n",
		    ma.utilization, ma.avg_queue / bdp, mb.utilization, mb.avg_queue / bdp);
	EXPECT_GT(ma.utilization, mb.utilization);
	EXPECT_GE(ma.utilization, 0.99);
}

TEST(TimelyFluid, HoldsTheRttBetweenItsThresholdsAtHighUtilisation)
{
	for (int n : {1, 4}) {
		std::vector<FlowSpec> flows(n, Timely());
		Simulator sim(Base(flows));
		const Measurement m = Measure(sim, 200 * kTau, 100 * kTau);
		const double bdp = (double)sim.bdp_bytes();
		// queueing delay of the time-averaged and the largest queue
		const double q_us = m.avg_queue / 3125.0, qmax_us = (double)m.max_queue / 3125.0; // 25 Gbit/s
		std::uint32_t events = 0, high = 0;
		for (std::size_t i = 0; i < sim.flow_count(); i++) {
			events += sim.timely(i).stats.events;
			high += sim.timely(i).stats.high;
		}
		std::printf("[fluid] timely n=%d: utilisation %.4f, queue avg %.3f BDP (%.1f us) max %.1f us, "
			    "events %u (above T_high %u), Jain %.4f\n",
			    n, m.utilization, m.avg_queue / bdp, q_us, qmax_us, events, high,
			    lumen::jain_index(m.throughput_gbps));
		EXPECT_GE(m.utilization, 0.85) << n;
		// RTT = tau + queueing below T_high (500 us) on average and at worst
		EXPECT_LT(40.0 + q_us, 500.0) << n;
		EXPECT_LT(40.0 + qmax_us, 600.0) << n;
		EXPECT_GT(events, 100u) << n;
		EXPECT_EQ(sim.counters().acks_with_int, 0u); // TIMELY asks for no INT
	}
}

} // namespace
