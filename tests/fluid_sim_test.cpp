// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/fluid_sim_test.cpp - PowerTCP and theta-PowerTCP, as implemented by
// include/lumen/powertcp.h, against the thesis' Theorems 1-3 (research/
// powertcp.md §7, test oracles T1-T3), in the fluid simulator of fluid_sim.h:
// every flow runs the real core, fed by real INT options (PowerTCP) or by
// RTT samples only (theta-PowerTCP).
//
//   Equilibrium (Thm 1, T1)   queue -> sum(beta), aggregate window -> b*tau +
//                             sum(beta), link fully used, queue not cycling
//   Fairness (Thm 3, T2)      equal beta: Jain >= 0.99; beta 1:2:3: shares
//                             proportional to beta within 10%
//   Convergence (Thm 2, T3)   settling time of the aggregate window after a
//                             flow joins or the windows are displaced
//
// Base setting: bottleneck b = HostBw = 25 Gbit/s, tau = 40 us (b*tau =
// 125 kB), MSS 1500, one ACK per MSS, step 160 ns; beta = HostBw*tau/N.
//
// What the simulations showed, and what the core does about it (measured
// numbers are printed by every test, "[fluid]" lines):
//
// 1. PowerTCP as Alg. 1 prints it (the full gamma-blend on every ACK, cwnd_old
//    refreshed once per RTT) fell into a limit cycle of period ~3 tau when
//    sum(beta) < ~0.4 b*tau (2 flows, N = 10: queue 1.9x sum(beta), CV 0.86)
//    and rang for tens of RTTs elsewhere: with ~40 ACKs per RTT the blend
//    completes within a few ACKs, so the loop gain per RTT is far above the
//    gamma that Theorems 1-2 analyse (one step of weight gamma per update
//    interval). Looking up cwnd_old as the window the ACKed data was sent
//    with (Eq. 2.16's w(t - theta)) did not remove the ringing on its own.
//    The core now applies the analysed law continuously: each ACK moves the
//    window gamma * acked/cwnd of the way to cwnd_old/power + beta, so one
//    window of ACKs makes one gamma step (the ODE of Eq. 2.23 with
//    delta_t = RTT), and every ACK still reacts to the latest power. All
//    equilibria below settle within 1% of theory with queue CV <= 0.03.
// 2. theta-PowerTCP with the RTT history advanced once per RTT (an earlier
//    reading of B2) never smoothed (dt >= tau gives the EWMA weight 1) and
//    diverged for gamma = 0.9, N = 10 (queue 3-6x sum(beta)). The core now
//    follows Alg. 2 literally: gradient and smoothing on every ACK, window
//    once per RTT; the default gamma = 0.9 converges.
// 3. Found and fixed in powertcp.h: lumen_ptcp_int_power() took Delta-t only
//    from a hop whose power beat the running maximum, which starts at 0, so
//    a power sample of exactly 0 (idle link, or an ACK interval shorter than
//    one INT tx unit) entered the EWMA with weight 0 and the smoothed power
//    never came down: two flows stayed at 50% utilisation with an empty
//    queue. The first usable hop now always sets Delta-t.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/stats.h"
#include "fluid_sim.h"

namespace
{

using lumen::fluid::Config;
using lumen::fluid::FlowSpec;
using lumen::fluid::kNever;
using lumen::fluid::Measurement;
using lumen::fluid::Sample;
using lumen::fluid::Simulator;

constexpr std::uint32_t kRateMbps = 25000; // bottleneck and host NIC
constexpr std::uint64_t kTau = 40000; // ns
constexpr std::uint64_t kStep = 160; // ns: 500 bytes at 25 Gbit/s
constexpr std::uint32_t kTraceEvery = 5; // one sample per 800 ns

const char *ModeName(lumen_ptcp_mode mode)
{
	return mode == LUMEN_PTCP_MODE_INT ? "PowerTCP" : "theta-PowerTCP";
}

struct Scenario {
	std::string name;
	lumen_ptcp_mode mode = LUMEN_PTCP_MODE_INT;
	int flows = 4;
	std::uint32_t expected_flows = 10; // N in beta = HostBw * tau / N
	double gamma = 0.9;
	std::uint32_t rate_mbps = kRateMbps;
	std::uint64_t tau_ns = kTau;
	std::uint64_t step_ns = kStep;
	std::vector<std::uint32_t> hops; // empty: one hop at rate_mbps
	std::vector<std::uint32_t> betas; // explicit per-flow beta in bytes
	std::uint64_t stagger_ns = 0; // flow i starts at i * stagger_ns
};

lumen_ptcp_params Params(const Scenario &s, int flow)
{
	lumen_ptcp_params p;

	lumen_ptcp_params_default(&p);
	p.gamma = (std::uint32_t)std::lround(s.gamma * (double)LUMEN_PTCP_ONE);
	p.expected_flows = s.expected_flows;
	p.host_bw_mbps = s.rate_mbps;
	p.base_rtt_ns = s.tau_ns;
	if (!s.betas.empty())
		p.beta_bytes = s.betas[(std::size_t)flow];
	return p;
}

Config MakeConfig(const Scenario &s, int extra_flows = 0)
{
	Config c;

	c.step_ns = s.step_ns;
	c.base_rtt_ns = s.tau_ns;
	c.host_bw_mbps = s.rate_mbps;
	c.hop_rates_mbps = s.hops.empty() ? std::vector<std::uint32_t>{s.rate_mbps} : s.hops;
	c.trace_every_steps = kTraceEvery;
	for (int i = 0; i < s.flows + extra_flows; i++) {
		FlowSpec f;

		f.params = Params(s, std::min(i, s.flows - 1));
		f.mode = s.mode;
		f.start_ns = (std::uint64_t)i * s.stagger_ns;
		f.isn = 0xfff00000u - 7919u * (std::uint32_t)i;
		c.flows.push_back(f);
	}
	return c;
}

double Beta(const Simulator &sim, std::size_t flow)
{
	return (double)lumen_ptcp_beta(&sim.params(flow), sim.tau_ns());
}

double ActiveBetaSum(const Simulator &sim)
{
	double sum = 0;

	for (std::size_t i = 0; i < sim.flow_count(); i++) {
		if (sim.active(i))
			sum += Beta(sim, i);
	}
	return sum;
}

// mean and coefficient of variation of the bottleneck queue since t_from
struct QueueStats {
	double mean = 0;
	double cv = 0;
};

QueueStats QueueSince(const Simulator &sim, std::uint64_t t_from)
{
	double sum = 0, sq = 0, n = 0;

	for (const Sample &s : sim.trace()) {
		if (s.t_ns <= t_from)
			continue;
		sum += (double)s.queue;
		sq += (double)s.queue * (double)s.queue;
		n++;
	}
	QueueStats q;
	if (n == 0)
		return q;
	q.mean = sum / n;
	q.cv = std::sqrt(std::max(0.0, sq / n - q.mean * q.mean)) / std::max(q.mean, 1.0);
	return q;
}

// The feedback path must have worked on every ACK: no encoder or parser
// error, no stale/implausible INT delta, no path change, no fallback.
void ExpectCleanFeedback(const Simulator &sim)
{
	EXPECT_EQ(sim.counters().int_encode_errors, 0u);
	EXPECT_EQ(sim.counters().int_parse_errors, 0u);
	for (std::size_t i = 0; i < sim.flow_count(); i++) {
		const lumen_ptcp_stats &st = sim.ptcp(i).stats;

		SCOPED_TRACE("flow " + std::to_string(i));
		EXPECT_GT(st.acks, 0u);
		EXPECT_EQ(st.int_stale, 0u);
		EXPECT_EQ(st.int_path_changes, 0u);
		EXPECT_EQ(st.int_overflow, 0u);
		EXPECT_EQ(st.fallback_updates, 0u);
		if (sim.ptcp(i).mode == LUMEN_PTCP_MODE_INT) {
			EXPECT_EQ(st.int_missing, 0u);
			EXPECT_GT(st.int_updates, 0u);
			EXPECT_EQ(st.rtt_updates, 0u);
		} else {
			EXPECT_GT(st.rtt_updates, 0u);
			EXPECT_EQ(st.int_updates, 0u);
		}
	}
}

void Record(const std::string &key, double value)
{
	::testing::Test::RecordProperty(key, std::to_string(value));
}

// ------------------------------------------------------------------------
// Theorem 1 / T1: equilibrium, and T5-style sanity (full link, small queue)

class Equilibrium : public ::testing::TestWithParam<Scenario>
{
};

TEST_P(Equilibrium, QueueIsSumOfBetaAndWindowIsBdpPlusSumOfBeta)
{
	const Scenario &s = GetParam();
	Simulator sim(MakeConfig(s));
	const std::uint64_t warm = 120 * s.tau_ns, end = warm + 60 * s.tau_ns;

	sim.run_until(warm);
	sim.begin_measure();
	sim.run_until(end);
	const Measurement m = sim.end_measure();
	const QueueStats q = QueueSince(sim, warm);

	const double beta_sum = ActiveBetaSum(sim);
	const double bdp = (double)sim.bdp_bytes();
	const double w_e = bdp + beta_sum;
	std::printf("[fluid] equilibrium %-28s %-14s n=%d: queue %.0f B (theory %.0f, %.3fx, cv %.3f), "
		    "aggregate cwnd %.0f B (theory %.0f, %.3fx), utilisation %.4f, queueing delay %.2f tau\n",
		    s.name.c_str(), ModeName(s.mode), s.flows, m.avg_queue, beta_sum, m.avg_queue / beta_sum, q.cv,
		    m.avg_aggregate_cwnd, w_e, m.avg_aggregate_cwnd / w_e, m.utilization, m.avg_queue / bdp);
	Record("queue_over_sum_beta", m.avg_queue / beta_sum);
	Record("window_over_theory", m.avg_aggregate_cwnd / w_e);
	Record("utilisation", m.utilization);
	Record("queue_cv", q.cv);

	EXPECT_NEAR(m.avg_queue, beta_sum, 0.10 * beta_sum);
	EXPECT_NEAR(m.avg_aggregate_cwnd, w_e, 0.10 * w_e);
	EXPECT_GE(m.utilization, 0.95);
	// converged, not cycling around the right mean: the limit cycles seen
	// outside the stable region have a queue CV of 0.5-0.9
	EXPECT_LE(q.cv, 0.25);
	// equal beta: every flow holds w_e / n (Theorem 3)
	for (std::size_t i = 0; i < sim.flow_count(); i++)
		EXPECT_NEAR(m.avg_cwnd[i], w_e / s.flows, 0.10 * w_e / s.flows) << "flow " << i;
	// On a path with a faster first hop, the maximum must select the
	// bottleneck. Not on every ACK: over a short ACK interval the bottleneck's
	// dq + tx can cancel to 0 in 1 KiB units (clamped, A5) while the 100G
	// hop's 4 KiB tx counter ticks once (e.g. 4 KiB in 256 ns = power 1.28),
	// so ~12% of updates take the first hop; the dt-weighted EWMA averages
	// that out (the equilibrium above is exact). A maximum that picked the
	// wrong hop systematically would score ~0 here.
	if (s.mode == LUMEN_PTCP_MODE_INT) {
		const auto &hist = sim.counters().int_max_hop;
		std::uint64_t total = 0;
		for (std::uint64_t c : hist)
			total += c;
		const double at_bottleneck = (double)hist[sim.bottleneck()] / (double)std::max<std::uint64_t>(total, 1);
		std::printf("[fluid]   INT maximum at the bottleneck hop %zu in %.4f of %llu updates\n",
			    sim.bottleneck(), at_bottleneck, (unsigned long long)total);
		Record("max_at_bottleneck", at_bottleneck);
		EXPECT_GE(at_bottleneck, 0.80);
	}
	ExpectCleanFeedback(sim);
}

void PrintTo(const Scenario &s, std::ostream *os)
{
	*os << s.name << " (" << ModeName(s.mode) << ", n=" << s.flows << ", N=" << s.expected_flows
	    << ", gamma=" << s.gamma << ")";
}

std::string ScenarioName(const ::testing::TestParamInfo<Scenario> &info)
{
	return info.param.name;
}

Scenario Case(std::string name, lumen_ptcp_mode mode, int n, std::uint32_t expected_flows, double gamma)
{
	Scenario s;

	s.name = std::move(name);
	s.mode = mode;
	s.flows = n;
	s.expected_flows = expected_flows;
	s.gamma = gamma;
	return s;
}

Scenario Case10G20us(std::string name, lumen_ptcp_mode mode, int n, std::uint32_t expected_flows, double gamma)
{
	Scenario s = Case(std::move(name), mode, n, expected_flows, gamma);

	s.rate_mbps = 10000;
	s.tau_ns = 20000;
	s.step_ns = 80; // tau / 2 must be a multiple of the step
	return s;
}

Scenario CaseTwoHop(std::string name, lumen_ptcp_mode mode, int n, std::uint32_t expected_flows, double gamma)
{
	Scenario s = Case(std::move(name), mode, n, expected_flows, gamma);

	s.hops = {100000, kRateMbps}; // a 100G uplink, then the 25G bottleneck
	return s;
}

// PowerTCP: sum(beta) / (b tau) = 0.4 ... 1.0, where the per-ACK law converges.
INSTANTIATE_TEST_SUITE_P(PowerTcp, Equilibrium,
			 ::testing::Values(Case("n4_N10", LUMEN_PTCP_MODE_INT, 4, 10, 0.9),
					   Case("n8_N10", LUMEN_PTCP_MODE_INT, 8, 10, 0.9),
					   Case("n2_N10", LUMEN_PTCP_MODE_INT, 2, 10, 0.9),
					   Case("n2_N4", LUMEN_PTCP_MODE_INT, 2, 4, 0.9),
					   Case("n4_N4", LUMEN_PTCP_MODE_INT, 4, 4, 0.9),
					   Case10G20us("n4_N4_10G_20us", LUMEN_PTCP_MODE_INT, 4, 4, 0.9),
					   CaseTwoHop("n4_N4_two_hops", LUMEN_PTCP_MODE_INT, 4, 4, 0.9)),
			 ScenarioName);

INSTANTIATE_TEST_SUITE_P(Theta, Equilibrium,
			 ::testing::Values(Case("n4_N10", LUMEN_PTCP_MODE_THETA, 4, 10, 0.9),
					   Case("n2_N10", LUMEN_PTCP_MODE_THETA, 2, 10, 0.9),
					   Case("n2_N2", LUMEN_PTCP_MODE_THETA, 2, 2, 0.9),
					   Case("n4_N2", LUMEN_PTCP_MODE_THETA, 4, 2, 0.9),
					   Case("n4_N10_gamma05", LUMEN_PTCP_MODE_THETA, 4, 10, 0.5),
					   Case("n8_N10_gamma05", LUMEN_PTCP_MODE_THETA, 8, 10, 0.5),
					   Case10G20us("n4_N10_gamma05_10G_20us", LUMEN_PTCP_MODE_THETA, 4, 10, 0.5)),
			 ScenarioName);

// ------------------------------------------------------------------------
// Theorem 3 / T2: fairness

// Default gamma; sum(beta) ~ b tau, inside the stable region of both laws.
Scenario FairnessScenario(lumen_ptcp_mode mode)
{
	return Case("", mode, 4, 4, 0.9);
}

class Fairness : public ::testing::TestWithParam<lumen_ptcp_mode>
{
};

TEST_P(Fairness, EqualBetaGivesEqualSharesEvenForLateFlows)
{
	Scenario s = FairnessScenario(GetParam());
	s.stagger_ns = 10 * s.tau_ns; // flows join one by one at line rate
	Simulator sim(MakeConfig(s));
	const std::uint64_t warm = 3 * s.stagger_ns + 100 * s.tau_ns;

	sim.run_until(warm);
	sim.begin_measure();
	sim.run_until(warm + 50 * s.tau_ns);
	const Measurement m = sim.end_measure();
	const double jain = lumen::jain_index(m.throughput_gbps);

	std::printf("[fluid] fairness equal beta %-14s: throughput Gbit/s", ModeName(s.mode));
	for (double t : m.throughput_gbps)
		std::printf(" %.3f", t);
	std::printf(", Jain %.5f, utilisation %.4f\n", jain, m.utilization);
	Record("jain", jain);

	EXPECT_GE(jain, 0.99);
	EXPECT_GE(m.utilization, 0.95);
	ExpectCleanFeedback(sim);
}

TEST_P(Fairness, UnequalBetaGivesSharesProportionalToBeta)
{
	Scenario s = FairnessScenario(GetParam());
	s.flows = 3;
	// 1:2:3, sum(beta) = 0.96 b tau. (With 12.5/25/37.5 kB, sum = 0.6 b tau,
	// PowerTCP's per-ACK law cycles: queue 1.33x sum(beta), CV 0.37.)
	s.betas = {20000, 40000, 60000};
	s.stagger_ns = 5 * s.tau_ns;
	Simulator sim(MakeConfig(s));
	const std::uint64_t warm = 150 * s.tau_ns;

	sim.run_until(warm);
	sim.begin_measure();
	sim.run_until(warm + 50 * s.tau_ns);
	const Measurement m = sim.end_measure();

	double total = 0;
	for (double t : m.throughput_gbps)
		total += t;
	const double beta_sum = ActiveBetaSum(sim);
	const double w_e = (double)sim.bdp_bytes() + beta_sum;
	std::printf("[fluid] fairness beta 1:2:3 %-14s:", ModeName(s.mode));
	for (std::size_t i = 0; i < sim.flow_count(); i++) {
		const double share = m.throughput_gbps[i] / total, want = Beta(sim, i) / beta_sum;

		std::printf(" flow %zu share %.4f (beta share %.4f, %.3fx) cwnd %.0f (theory %.0f);", i, share, want,
			    share / want, m.avg_cwnd[i], w_e * Beta(sim, i) / beta_sum);
		Record("share_ratio_" + std::to_string(i), share / want);
		EXPECT_NEAR(share, want, 0.10 * want) << "flow " << i;
		// Theorem 3: (w_i)_e = (sum(beta) + b tau) / sum(beta) * beta_i
		EXPECT_NEAR(m.avg_cwnd[i], w_e * Beta(sim, i) / beta_sum, 0.10 * w_e * Beta(sim, i) / beta_sum)
			<< "flow " << i;
	}
	std::printf(" utilisation %.4f\n", m.utilization);
	EXPECT_GE(m.utilization, 0.95);
	ExpectCleanFeedback(sim);
}

INSTANTIATE_TEST_SUITE_P(Modes, Fairness, ::testing::Values(LUMEN_PTCP_MODE_INT, LUMEN_PTCP_MODE_THETA),
			 [](const ::testing::TestParamInfo<lumen_ptcp_mode> &info) {
				 return std::string(info.param == LUMEN_PTCP_MODE_INT ? "PowerTcp" : "Theta");
			 });

// ------------------------------------------------------------------------
// Theorem 2 / T3: convergence after a step perturbation

enum class Perturbation {
	kJoin, // one more flow starts at line rate (cwnd = host BDP)
	kDouble, // every window doubled (and the per-RTT record with it)
	kHalve, // every window halved
};

const char *PerturbationName(Perturbation p)
{
	switch (p) {
	case Perturbation::kJoin:
		return "flow joins";
	case Perturbation::kDouble:
		return "windows x2";
	default:
		return "windows x0.5";
	}
}

// Times (in tau) after which the error of the aggregate window, averaged
// over one tau (centred; Theorem 2 is about the fluid window, not its
// per-ACK jitter), stays below 1/e, 10% and 1% of the initial error.
struct Settling {
	double e0 = 0; // |W(0+) - W_e|, bytes
	double w_e = 0; // settled aggregate window (measured), bytes
	double w_theory = 0; // b tau + sum(beta)
	double rtt_e = 0; // tau + sum(beta) / b, in tau
	double t37 = 0, t10 = 0, t1 = 0;
	double window_end = 0; // the analysis window, in tau
};

Settling RunPerturbation(const Scenario &s, Perturbation p)
{
	const std::uint64_t t0 = 100 * s.tau_ns, t_end = t0 + 80 * s.tau_ns;
	Config cfg = MakeConfig(s, p == Perturbation::kJoin ? 1 : 0);

	if (p == Perturbation::kJoin)
		cfg.flows.back().start_ns = t0;
	Simulator sim(cfg);
	sim.run_until(t0);
	if (p != Perturbation::kJoin) {
		for (std::size_t i = 0; i < sim.flow_count(); i++) {
			lumen_ptcp &st = sim.ptcp_mut(i);
			const std::uint64_t w = p == Perturbation::kDouble ? 2 * st.cwnd_bytes : st.cwnd_bytes / 2;

			lumen_ptcp_set_cwnd(&st, &cfg.flows[i].params, w, sim.snd_nxt(i), cfg.mss);
		}
	}
	sim.run_until(t_end - 30 * s.tau_ns);
	sim.begin_measure();
	sim.run_until(t_end);
	const Measurement m = sim.end_measure();

	Settling r;
	const double beta_sum = ActiveBetaSum(sim);
	r.w_e = m.avg_aggregate_cwnd;
	r.w_theory = (double)sim.bdp_bytes() + beta_sum;
	r.rtt_e = 1.0 + beta_sum / (double)sim.bdp_bytes();

	const std::vector<Sample> &tr = sim.trace();
	const std::size_t half = (std::size_t)(s.tau_ns / (s.step_ns * kTraceEvery) / 2);
	std::size_t i0 = 0;
	while (i0 < tr.size() && tr[i0].t_ns <= t0)
		i0++;
	if (i0 >= tr.size())
		return r;
	r.e0 = std::fabs((double)tr[i0].aggregate_cwnd - r.w_e);
	double acc = 0;
	std::vector<double> avg(tr.size(), 0);
	for (std::size_t i = 0; i < tr.size(); i++) {
		acc += (double)tr[i].aggregate_cwnd;
		if (i >= 2 * half) {
			acc -= (double)tr[i - 2 * half].aggregate_cwnd;
			avg[i - half] = acc / (double)(2 * half);
		}
	}
	for (std::size_t i = i0 + half; i + half < tr.size(); i++) {
		const double e = std::fabs(avg[i] - r.w_e);
		const double t = (double)(tr[i].t_ns - t0) / (double)s.tau_ns;

		if (e > 0.3679 * r.e0)
			r.t37 = t;
		if (e > 0.10 * r.e0)
			r.t10 = t;
		if (e > 0.01 * r.e0)
			r.t1 = t;
		r.window_end = t;
	}
	ExpectCleanFeedback(sim);
	return r;
}

void Print(const Scenario &s, Perturbation p, const Settling &r, double thesis)
{
	std::printf("[fluid] convergence %-14s %-13s: W_e %.0f B (theory %.0f), e0 %.0f B, settled to 1/e in %.2f tau, "
		    "to 10%% in %.2f tau, to 1%% in %.2f tau (of %.0f); thesis 5*dt/gamma = %.2f tau "
		    "(dt = RTT_e = %.2f tau, gamma %.2f)\n",
		    ModeName(s.mode), PerturbationName(p), r.w_e, r.w_theory, r.e0, r.t37, r.t10, r.t1, r.window_end,
		    thesis, r.rtt_e, s.gamma);
	Record("t37_tau", r.t37);
	Record("t10_tau", r.t10);
	Record("t1_tau", r.t1);
	Record("thesis_5dt_over_gamma_tau", thesis);
}

void PrintTo(Perturbation p, std::ostream *os)
{
	*os << PerturbationName(p);
}

class Convergence : public ::testing::TestWithParam<Perturbation>
{
};

// Theorem 2 (oracle T3): with one control step of weight gamma per update
// interval delta_t, the aggregate window error decays as exp(-gamma t /
// delta_t): 99.3% is gone after 5 delta_t / gamma. Here delta_t is one round,
// RTT_e = tau + sum(beta)/b at equilibrium, for both laws (theta-PowerTCP
// steps once per RTT; PowerTCP spreads one step over the ACKs of a window).
// The measured settling time may exceed 5 RTT_e / gamma by a bounded factor
// for what the first-order model leaves out: (a) feedback arrives one RTT
// late, and the power EWMA adds a time constant of tau; (b) rounds are
// longer than RTT_e while the queue is above equilibrium, and the first
// step after the perturbation waits for the current round; (c) the tau-wide
// averaging of the measured window adds up to tau/2. For theta-PowerTCP the
// RTT gradient adds a second root. The bound is 2.25x (measured 0.7-2.03x,
// largest when a flow joins); a law that rings or does not converge never
// settles to 1% and fails it.
TEST_P(Convergence, ThetaSettlesWithinTheorem2Bound)
{
	for (double gamma : {0.9, 0.5}) {
		const Perturbation p = GetParam();
		Scenario s = Case("", LUMEN_PTCP_MODE_THETA, 4, 10, gamma);
		const Settling r = RunPerturbation(s, p);
		const double thesis = 5.0 * r.rtt_e / s.gamma;

		Print(s, p, r, thesis);
		EXPECT_NEAR(r.w_e, r.w_theory, 0.05 * r.w_theory);
		EXPECT_GT(r.e0, 0.3 * (double)lumen_ptcp_bytes_in(kRateMbps, kTau));
		EXPECT_LE(r.t1, 2.25 * thesis);
		EXPECT_LT(r.t1, r.window_end - 20); // settled well before the end
	}
}

TEST_P(Convergence, PowerTcpSettlesWithinTheorem2Bound)
{
	for (unsigned n_expected : {10u, 4u}) {
		const Perturbation p = GetParam();
		Scenario s = Case("", LUMEN_PTCP_MODE_INT, 4, n_expected, 0.9);
		const Settling r = RunPerturbation(s, p);
		const double thesis = 5.0 * r.rtt_e / s.gamma;

		Print(s, p, r, thesis);
		EXPECT_NEAR(r.w_e, r.w_theory, 0.05 * r.w_theory);
		EXPECT_GT(r.e0, 0.3 * (double)lumen_ptcp_bytes_in(kRateMbps, kTau));
		EXPECT_LE(r.t37, 3.0 * (r.rtt_e + 1.0)); // first-order response within 3 loops
		EXPECT_LE(r.t1, 2.25 * thesis);
		EXPECT_LT(r.t1, r.window_end - 20);
	}
}

INSTANTIATE_TEST_SUITE_P(Perturbations, Convergence,
			 ::testing::Values(Perturbation::kJoin, Perturbation::kDouble, Perturbation::kHalve),
			 [](const ::testing::TestParamInfo<Perturbation> &info) {
				 switch (info.param) {
				 case Perturbation::kJoin:
					 return std::string("FlowJoins");
				 case Perturbation::kDouble:
					 return std::string("WindowsDoubled");
				 default:
					 return std::string("WindowsHalved");
				 }
			 });

// ------------------------------------------------------------------------
// Simulator sanity: the model itself, independent of the control law

// One flow whose NIC (10 Gbit/s) is slower than the bottleneck (25 Gbit/s)
// never queues: it is paced at HostBw, the link carries exactly that, and the
// RTT it measures is tau (exact NIC timestamps) plus at most the
// serialisation of what it sent in one step. With base_rtt_ns = 0 the core
// tracks tau as the minimum RTT: it must find the simulator's tau.
TEST(FluidSimulator, NicLimitedFlowSeesBaseRtt)
{
	for (lumen_ptcp_mode mode : {LUMEN_PTCP_MODE_INT, LUMEN_PTCP_MODE_THETA}) {
		Scenario s = Case("", mode, 1, 10, 0.9);
		Config cfg = MakeConfig(s);
		cfg.host_bw_mbps = 10000;
		cfg.flows[0].params.host_bw_mbps = 10000;
		cfg.flows[0].params.base_rtt_ns = 0; // track the minimum RTT
		Simulator sim(cfg);

		sim.run_until(20 * kTau);
		sim.begin_measure();
		sim.run_until(60 * kTau);
		const Measurement m = sim.end_measure();

		std::printf("[fluid] sanity %-14s NIC-limited flow: %.4f Gbit/s, queue %.1f B, tracked tau %llu ns "
			    "(simulated %llu)\n",
			    ModeName(mode), m.throughput_gbps[0], m.avg_queue, (unsigned long long)sim.ptcp(0).tau_ns,
			    (unsigned long long)kTau);
		EXPECT_NEAR(m.throughput_gbps[0], 10.0, 0.01);
		EXPECT_NEAR(m.utilization, 0.4, 0.004);
		EXPECT_LT(m.avg_queue, 600.0); // at most one step of its own data
		EXPECT_GE(sim.ptcp(0).tau_ns, kTau);
		EXPECT_LE(sim.ptcp(0).tau_ns, kTau + kStep);
		EXPECT_EQ(sim.counters().int_parse_errors, 0u);
		EXPECT_EQ(sim.counters().int_encode_errors, 0u);
	}
}

// Jain's index helper on known inputs.
TEST(FluidSimulator, JainIndex)
{
	EXPECT_DOUBLE_EQ(lumen::jain_index({1, 1, 1, 1}), 1.0);
	EXPECT_DOUBLE_EQ(lumen::jain_index({1, 0, 0, 0}), 0.25);
	EXPECT_NEAR(lumen::jain_index({1, 2, 3}), 36.0 / 42.0, 1e-12);
}

} // namespace
