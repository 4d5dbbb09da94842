// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/rdcn_fluid_test.cpp - the PowerTCP thesis' reconfigurable datacenter
// network case study (2.4; ../shared/research/powertcp.md 8) in the fluid
// simulator of fluid_sim.h, at the thesis' own rates and times.
//
// The thesis' setting, for one destination ToR: its servers (25 Gbit/s
// each) send through their ToR, which forwards over the packet network (25
// Gbit/s) except for one day of every week, when the optical circuit switch
// connects the two ToRs at 100 Gbit/s: 24 matchings of a 225 us day and a
// 20 us night make a week of 5.88 ms; base RTT 24 us, so a day is about 9
// RTTs. The ToR's queue for the destination (its VOQ) is the one hop here,
// whose rate is the circuit's during the day and the packet network's
// otherwise; INT reports that rate, so an INT-fed sender sees the circuit
// in the next ACK. Ten long flows, one per server, as the thesis' ToRs have.
// The thesis' numbers (its ns-3 simulation): PowerTCP fills the circuit
// within about one RTT, uses 80-85 % of it, and keeps the queue near empty;
// HPCC keeps queues low but does not fill the circuit.
//
// Measured here per day, after two weeks of warm-up, over three days:
//   utilisation  bytes the circuit carried during the day over 100 Gbit/s
//                times the day;
//   ramp         RTTs from circuit-up until an RTT runs the circuit at 0.9
//                of its rate (0: none did);
//   drain        the queue's peak after the day ends (what was in flight for
//                the circuit lands in the 25 Gbit/s VOQ), in packet-network
//                BDPs.
// Measured (every day alike): PowerTCP 0.855 of the circuit, full rate in
// the 5th RTT, 4.1 packet BDPs of queue after the day; theta-PowerTCP 0.83,
// 5th RTT, 4.0; HPCC 0.52-0.54, never at 0.9 in one RTT, 2.5-2.6. So
// PowerTCP's utilisation is the thesis' 80-85 %; its ramp is 5 RTTs, not
// one (the damping of this core, powertcp.h C2, and per-ACK updates where
// the thesis updates once per RTT); HPCC does not fill the circuit, as the
// thesis found. theta-PowerTCP, which sees only delay, does almost as well
// here: the ten flows' standing queue on the packet network (beta each)
// drains at 4x the rate when the circuit comes, and it reads the falling
// RTT as room. The queue after the day is the windows of the circuit in
// flight: no algorithm can avoid it without knowing the schedule (reTCP's
// prebuffering does the reverse). Checked, with margins: PowerTCP >= 0.8
// of each day, full rate within 6 RTTs, at least theta-PowerTCP's
// utilisation and above HPCC's; HPCC >= 0.3 (it does read the rate); every
// queue after a day within the circuit's BDP plus the flows' beta. The
// numbers are printed ("[rdcn]" lines). Not modelled: the packet network
// shared with other destinations, the thesis' once-per-RTT updates, packets.
#include <algorithm>
#include <cstdio>
#include <vector>

#include <gtest/gtest.h>

#include "fluid_sim.h"

namespace
{

using lumen::fluid::Config;
using lumen::fluid::FlowSpec;
using lumen::fluid::Measurement;
using lumen::fluid::Simulator;

constexpr std::uint32_t kPacketMbps = 25000; /* the packet network, and each server's link */
constexpr std::uint32_t kCircuitMbps = 100000;
constexpr std::uint64_t kTau = 24000; /* the thesis' largest base RTT */
constexpr std::uint64_t kDay = 225000, kNight = 20000, kMatchings = 24;
constexpr std::uint64_t kWeek = kMatchings * (kDay + kNight);
constexpr int kServers = 10;

Config Rdcn(lumen_ptcp_mode mode)
{
	Config c;

	c.base_rtt_ns = kTau;
	c.host_bw_mbps = kPacketMbps;
	c.hop_rates_mbps = {kPacketMbps};
	for (int i = 0; i < kServers; i++) {
		FlowSpec f;
		lumen_ptcp_params_default(&f.params);
		f.params.host_bw_mbps = kPacketMbps;
		f.params.base_rtt_ns = kTau;
		f.params.expected_flows = kServers;
		f.mode = mode;
		f.start_ns = (std::uint64_t)i * 1600; /* staggered by 10 steps */
		c.flows.push_back(f);
	}
	return c;
}

struct Day {
	double utilization = 0;
	int ramp_rtts = 0;
	double drain_peak_bdp = 0;
};

/* One week from its day's start: the day at the circuit's rate, then the
 * night and the other matchings at the packet network's. */
Day RunWeek(Simulator &sim)
{
	Day d;
	const double packet_bdp = (double)lumen_ptcp_bytes_in(kPacketMbps, kTau);
	std::uint64_t served = 0;

	sim.set_hop_rate(0, kCircuitMbps);
	for (std::uint64_t t = 0, k = 1; t < kDay; k++) {
		const std::uint64_t len = std::min(kTau, kDay - t);
		sim.begin_measure();
		sim.run_for(len);
		const Measurement m = sim.end_measure();
		for (std::uint64_t b : m.bytes)
			served += b;
		if (!d.ramp_rtts && len == kTau && m.utilization >= 0.9)
			d.ramp_rtts = (int)k;
		t += len;
	}
	d.utilization = (double)served * 8000.0 / ((double)kCircuitMbps * (double)kDay);
	sim.set_hop_rate(0, kPacketMbps);
	sim.begin_measure();
	sim.run_for(20 * kTau);
	d.drain_peak_bdp = (double)sim.end_measure().max_queue / packet_bdp;
	sim.run_for(kWeek - kDay - 20 * kTau);
	return d;
}

std::vector<Day> RunRdcn(lumen_ptcp_mode mode, const char *name)
{
	Simulator sim(Rdcn(mode));
	std::vector<Day> days;

	/* settle on the packet network, then two weeks of warm-up */
	sim.run_until(kWeek - kDay);
	for (int w = 0; w < 5; w++) {
		Day d = RunWeek(sim);
		if (w >= 2)
			days.push_back(d);
	}
	EXPECT_EQ(sim.counters().int_encode_errors, 0u);
	EXPECT_EQ(sim.counters().int_parse_errors, 0u);
	for (const Day &d : days)
		std::printf("[rdcn] %s: circuit utilisation %.3f, full rate after %d RTT(s), queue after the day "
			    "%.2f packet BDPs\n",
			    name, d.utilization, d.ramp_rtts, d.drain_peak_bdp);
	return days;
}

/* What can be queued when the circuit goes: the circuit's BDP and the
 * flows' beta (one host BDP / N each: one packet-network BDP in all) in
 * flight, less the packet network's BDP, in packet-network BDPs. */
double DrainBoundBdps()
{
	const double circuit = (double)kCircuitMbps / kPacketMbps; /* its BDP */
	const double beta = 1.0; /* N flows x host BDP / N */
	const double packet = 1.0; /* what the packet network itself holds */
	return circuit + beta - packet + 0.25; /* + slack for the windows' overshoot */
}

TEST(RdcnFluid, PowerTcpFillsEachDaysCircuitWithinAFewRtts)
{
	const std::vector<Day> p = RunRdcn(LUMEN_PTCP_MODE_INT, "powertcp");
	for (const Day &d : p) {
		EXPECT_GE(d.utilization, 0.8);
		EXPECT_GE(d.ramp_rtts, 1);
		EXPECT_LE(d.ramp_rtts, 6);
		EXPECT_LE(d.drain_peak_bdp, DrainBoundBdps());
	}
}

TEST(RdcnFluid, ThetaPowerTcpFollowsTheDrainingQueueButNotAsFar)
{
	const std::vector<Day> p = RunRdcn(LUMEN_PTCP_MODE_INT, "powertcp");
	const std::vector<Day> t = RunRdcn(LUMEN_PTCP_MODE_THETA, "theta-powertcp");
	for (std::size_t i = 0; i < p.size(); i++) {
		EXPECT_LE(t[i].utilization, p[i].utilization) << "day " << i;
		EXPECT_LE(t[i].drain_peak_bdp, DrainBoundBdps()) << "day " << i;
	}
}

TEST(RdcnFluid, HpccReadsTheCircuitButFillsItMoreSlowly)
{
	const std::vector<Day> p = RunRdcn(LUMEN_PTCP_MODE_INT, "powertcp");
	const std::vector<Day> h = RunRdcn(LUMEN_PTCP_MODE_HPCC, "hpcc");
	for (std::size_t i = 0; i < p.size(); i++) {
		EXPECT_LT(h[i].utilization, p[i].utilization) << "day " << i;
		EXPECT_GE(h[i].utilization, 0.3) << "day " << i; /* it does read the rate */
		EXPECT_LE(h[i].drain_peak_bdp, DrainBoundBdps()) << "day " << i;
	}
}

} // namespace
