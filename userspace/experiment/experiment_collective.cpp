// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/experiment/experiment_collective.cpp - collective studies (see
// experiment_collective.h): the analysis, then the runner; the report is
// in experiment_collective_report.cpp.
#include "experiment/experiment_collective.h"
#include "experiment/experiment_collective_report.h"

#include "base/error.h"
#include "base/interrupt.h"
#include "base/process.h"
#include "base/stats.h"
#include "base/system.h"
#include "base/units.h"
#include "experiment/experiment_dp.h"
#include "experiment/experiment_netns.h"
#include "experiment/experiment_proc.h"
#include "experiment/experiment_results.h"
#include "experiment/report_plot.h"
#include "testbed/testbed.h"
#include "testbed/testbed_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <thread>
#include <unistd.h>

namespace lumen
{

using nlohmann::json;

// ---------------------------------------------------------------------
// Analysis

SeedSpread seed_spread(const std::vector<double> &values)
{
	SeedSpread s;
	s.n = values.size();
	if (values.empty())
		return s;
	double sum = 0;
	for (double v : values)
		sum += v;
	s.mean = sum / double(s.n);
	s.min = *std::min_element(values.begin(), values.end());
	s.max = *std::max_element(values.begin(), values.end());
	if (s.n > 1) {
		double sq = 0;
		for (double v : values)
			sq += (v - s.mean) * (v - s.mean);
		s.sd = std::sqrt(sq / double(s.n - 1));
	}
	return s;
}

std::vector<double> port_bytes(const std::vector<QueueTick> &ticks, const std::vector<std::size_t> &ports,
			       std::uint64_t from_ns, std::uint64_t to_ns)
{
	std::vector<double> out(ports.size(), 0);
	if (ticks.size() < 2)
		return out;
	const QueueTick *a = &ticks.front(), *b = &ticks.back();
	for (const auto &t : ticks) {
		if (t.t_ns <= from_ns)
			a = &t;
		if (t.t_ns >= to_ns && b == &ticks.back())
			b = &t;
	}
	if (a == b || b->t_ns < a->t_ns)
		return out;
	for (std::size_t k = 0; k < ports.size(); k++) {
		const std::size_t i = ports[k];
		if (i < a->ports.size() && i < b->ports.size() && b->ports[i].deq_bytes >= a->ports[i].deq_bytes)
			out[k] = double(b->ports[i].deq_bytes - a->ports[i].deq_bytes);
	}
	return out;
}

double max_over_mean(const std::vector<double> &values)
{
	double sum = 0;
	for (double v : values)
		sum += v;
	if (values.empty() || sum <= 0)
		return 0;
	return *std::max_element(values.begin(), values.end()) / (sum / double(values.size()));
}

std::vector<QueueTick> ticks_around(const std::vector<QueueTick> &ticks, std::uint64_t from_ns, std::uint64_t to_ns,
				    std::uint64_t margin_ns)
{
	std::size_t lo = 0, hi = ticks.size();
	for (std::size_t i = 0; i < ticks.size(); i++) {
		if (ticks[i].t_ns + margin_ns < from_ns)
			lo = i;
		if (ticks[i].t_ns > to_ns + margin_ns && hi == ticks.size())
			hi = i + 1;
	}
	return std::vector<QueueTick>(ticks.begin() + std::ptrdiff_t(lo), ticks.begin() + std::ptrdiff_t(hi));
}

std::vector<QueueTick> ticks_within(const std::vector<QueueTick> &ticks, std::uint64_t from_ns, std::uint64_t to_ns)
{
	std::vector<QueueTick> out;
	for (const auto &t : ticks)
		if (t.t_ns >= from_ns && t.t_ns <= to_ns)
			out.push_back(t);
	return out;
}

double busiest_utilisation(const std::vector<QueueTick> &ticks, const std::vector<std::size_t> &ports,
			   const std::vector<std::uint32_t> &rates_mbps, std::uint64_t from_ns, std::uint64_t to_ns)
{
	if (to_ns <= from_ns)
		return 0;
	const std::vector<double> bytes = port_bytes(ticks, ports, from_ns, to_ns);
	double best = 0;
	for (std::size_t k = 0; k < ports.size() && k < rates_mbps.size(); k++)
		if (rates_mbps[k])
			best = std::max(best,
					bytes[k] * 8 / (double(rates_mbps[k]) * 1e6 * double(to_ns - from_ns) / 1e9));
	return best;
}

namespace
{

std::string read_file_or_empty(const std::string &path)
{
	try {
		return read_file(path);
	} catch (const Error &) {
		return "";
	}
}

constexpr std::uint64_t kCollSampleNs = kMs; // a 16 KB collective lasts milliseconds
constexpr std::uint64_t kCollGraceNs = 20 * kSec; // EAL, af_packet ports, path discovery
constexpr std::uint64_t kTbfSlackBytes = 96 * 1024; // as lumen switch attach sets the limit
constexpr std::uint64_t kFrameBytes = 1514;

// One leaf-spine link's rate, both directions, as `lumen switch attach`
// shapes a port: tbf rate R, burst max(2 frames, 500 us at R), limit
// buffer + 96k (the port tail-drops at the buffer before tbf would).
void set_link_rate(const Testbed &tb, const TopologySpec &topo, std::uint32_t leaf, std::uint32_t spine, double mbps)
{
	const std::string up = "leaf" + std::to_string(leaf) + "->spine" + std::to_string(spine),
			  down = "spine" + std::to_string(spine) + "->leaf" + std::to_string(leaf);
	const std::uint64_t kbit = std::uint64_t(std::llround(mbps * 1000));
	const std::uint64_t burst = std::max<std::uint64_t>(2 * kFrameBytes, kbit * 1000 / 8 / 2000);
	const std::uint64_t limit = topo.fabric_link.buffer_bytes + kTbfSlackBytes;
	std::size_t found = 0;
	for (const auto &p : tb.ports()) {
		if (p.name != up && p.name != down)
			continue;
		run_checked({"ip", "netns", "exec", p.netns, "tc", "qdisc", "change", "dev", p.dev, "root", "tbf",
			     "rate", std::to_string(kbit) + "kbit", "burst", std::to_string(burst), "limit",
			     std::to_string(limit)});
		found++;
	}
	if (found != 2)
		throw Error("the testbed has no ports " + up + " and " + down + " to slow down");
}

// What the DPDK hosts send enters the leaf on the core that sent it, the
// one lumen-dp busy-polls, and would wait there for ksoftirqd: the leaves
// take it in on the other cores instead (RPS on their host-facing veths).
void leaves_receive_off_lcore(const Testbed &tb, unsigned lcore)
{
	const unsigned cores = std::max(2u, std::thread::hardware_concurrency());
	char mask[32];
	std::snprintf(mask, sizeof(mask), "%llx", ((1ull << std::min(cores, 63u)) - 1) & ~(1ull << lcore));
	for (const auto &p : tb.ports())
		if (p.name.rfind("leaf", 0) == 0 && p.name.find("->spine") == std::string::npos)
			run_checked(
				{"ip", "netns", "exec", p.netns, "sh", "-c",
				 std::string("echo ") + mask + " > /sys/class/net/" + p.dev + "/queues/rx-0/rps_cpus"});
}

// Ethereal's path discovery: a Linux router answers at most one ICMP
// error per second per destination after a burst of 6; the spines must
// answer every probe.
void spines_answer_probes(const TopologySpec &topo)
{
	for (std::uint32_t s = 1; s <= topo.spines; s++)
		run_checked({"ip", "netns", "exec", testbed_netns(topo.name, "spine" + std::to_string(s)), "sysctl",
			     "-q", "-w", "net.ipv4.icmp_ratelimit=0"});
}

std::vector<std::string> collective_argv(const DpPlan &plan, const Testbed &tb, const CollRun &r,
					 const std::string &prefix, const std::string &raw)
{
	std::vector<std::string> a = lumen_dp_hosts_argv(plan, tb, "collective", prefix);
	for (const std::string &s :
	     {std::string("--collective"), r.coll.collective, std::string("--size"), std::to_string(r.bytes),
	      std::string("--channels"), std::to_string(r.coll.channels), std::string("--leaves"),
	      std::to_string(plan.topo.leaves), std::string("--path"), r.policy, std::string("--cc"),
	      plan.spec.datapath.cc, std::string("--seed"), std::to_string(r.seed), std::string("--json"),
	      raw + ".json", std::string("--quiet"), std::string("--time"),
	      dp_fmt("%.3f", double(plan.spec.duration_ns) / 1e9)})
		a.push_back(s);
	if (!r.randomize)
		a.push_back("--no-randomize");
	if (plan.spec.datapath.rto_min_ns) {
		a.push_back("--rto-min-us");
		a.push_back(std::to_string(plan.spec.datapath.rto_min_ns / 1000));
		if (plan.spec.datapath.rto_min_ns > 100 * 1000 * 1000) { // above lumen-dp's default ceiling
			a.push_back("--rto-max-us");
			a.push_back(std::to_string(plan.spec.datapath.rto_min_ns / 1000));
		}
	}
	if (r.policy == "ethereal") { // plan the flows over the uplinks, pinned by probed ports
		a.push_back("--discover-paths");
		a.push_back(std::to_string(plan.topo.spines));
		if (plan.spec.datapath.ce_nack_threshold_pct >= 0) {
			a.push_back("--ce-nack-threshold");
			a.push_back(std::to_string(plan.spec.datapath.ce_nack_threshold_pct));
		}
	}
	return a;
}

// One lumen-dp collective run: sampled every millisecond while it runs; its
// summary read back. A run that fails (exit status, wrong ranks, no end)
// is recorded with its reason, not thrown: the study goes on and fails at
// its end.
void run_one(const DpPlan &plan, const Testbed &tb, QueueSource &queue, CollRun &r, std::size_t index,
	     std::size_t total)
{
	const std::string raw = plan.dir + "/raw/" + r.tag(), log = raw + ".log";
	const std::string prefix = "lumen-c-" + std::to_string(::getpid()) + "-" + std::to_string(index);
	progress("[" + plan.spec.name + "] run " + std::to_string(index + 1) + "/" + std::to_string(total) + ": " +
		 r.tag());
	ChildSet procs;
	procs.add(tb.spawn(tb.hosts().front(), collective_argv(plan, tb, r, prefix, raw), log, log),
		  "lumen-dp " + r.tag());
	const std::uint64_t deadline = monotonic_ns() + plan.spec.duration_ns + kCollGraceNs;
	std::vector<QueueTick> ticks;
	// lumen-dp's collective mode reports no CLOCK_MONOTONIC start
	// (clients_start_mono_ns is 0): the collective starts when lumen-dp
	// says so on stderr, right before its loop
	const std::string started = "lumen-dp collective: " + r.coll.collective + " of ";
	std::uint64_t seen_start = 0;
	// the failure: the link goes down as the collective starts, after
	// Ethereal's path discovery (down before the run, leaf L routes around
	// it, lumen-dp's planner finds no port for that uplink from leaf L and
	// fails the collective); leaf L routes around it, the others keep
	// hashing into it
	const bool fail = r.case_name == "failure";
	while (procs.poll() > 0) {
		if (!seen_start && read_file_or_empty(log).find(started) != std::string::npos) {
			seen_start = monotonic_ns();
			if (fail) { // in a child: the samples go on while ip runs (a 16 KB collective lasts ms)
				const DatapathSpec &dp = plan.spec.datapath;
				procs.add(
					tb.spawn(tb.hosts().front(),
						 {"ip", "-n",
						  testbed_netns(plan.topo.name, "leaf" + std::to_string(dp.fail_leaf)),
						  "link", "set", "spine" + std::to_string(dp.fail_spine), "down"}),
					"the link's failure");
				r.fail_ns = monotonic_ns();
			}
		}
		if (monotonic_ns() > deadline) {
			r.error = "did not end within " + dp_fmt("%.0f", double(plan.spec.duration_ns) / 1e9) +
				  " s (+ start-up): " + tail_of(log);
			return; // ChildSet's destructor stops it
		}
		queue.poll(ticks);
		sleep_interruptible_ns(kCollSampleNs);
	}
	queue.poll(ticks);
	if (r.fail_ns)
		restore_link(plan.topo, plan.spec.datapath.fail_leaf, plan.spec.datapath.fail_spine);
	try {
		r.summary = json::parse(read_file(raw + ".json"));
		r.start_ns = r.summary.at("clients_start_mono_ns").get<std::uint64_t>();
		if (!r.start_ns)
			r.start_ns = seen_start;
		r.end_ns = r.start_ns + std::uint64_t(r.summary.at("seconds").get<double>() * 1e9);
		const json &c = r.summary.at("collective");
		r.wrong_ranks = c.at("wrong_ranks").get<std::uint32_t>();
	} catch (const std::exception &e) {
		r.error = "no usable summary " + raw + ".json (" + e.what() + "): " + tail_of(log);
		return;
	}
	// ranks that did not finish within the time limit (ECMP on a dead
	// link never does) are an outcome; a rank that ended wrong, or with an
	// error of its own, is an error
	const std::string out = read_file_or_empty(log);
	const std::string rank_said = "differ from the reference; rank";
	const bool rank_error = out.find(rank_said) != std::string::npos;
	if (r.wrong_ranks && !rank_error &&
	    r.summary.value("seconds", 0.0) * 1e9 >= 0.99 * double(plan.spec.duration_ns))
		r.unfinished = true;
	else if (r.wrong_ranks)
		r.error = std::to_string(r.wrong_ranks) + " rank(s) differ from the reference" +
			  (rank_error ? "; " + out.substr(out.find(rank_said) + rank_said.size() - 4, 200) : "");
	else if (!procs.failures().empty())
		r.error = procs.failures().front() + ": " + tail_of(log);
	// the sampler shares two cores with lumen-dp's busy-polling lcore and
	// the routers' softirqs and can go tens of milliseconds without
	// running: the bytes a port moved in the last step may only be known
	// from the sample taken after lumen-dp exited, so that one is kept
	r.ticks = ticks_around(ticks, r.start_ns, r.end_ns, 2 * kCollSampleNs);
}

void analyse(CollRun &r, const DpLayout &lay, const std::vector<std::uint32_t> &rates,
	     const std::vector<std::size_t> &dead_ports)
{
	if (!r.error.empty() || r.unfinished)
		return;
	const json &c = r.summary.at("collective"), &t = r.summary.at("totals");
	r.time_us = c.at("time_us").get<double>();
	r.algbw = c.at("algbw_gbps").get<double>();
	r.busbw = c.at("busbw_gbps").get<double>();
	for (const auto &s : c.at("steps")) {
		r.step_cct_us.push_back(s.at("cct_us").get<double>());
		r.subflows += s.at("subflows").get<std::uint64_t>();
		CollStep st;
		st.cct_us = r.step_cct_us.back();
		st.start_ns = s.value("start_ns", std::uint64_t(0));
		st.end_ns = s.value("end_ns", std::uint64_t(0));
		for (const char *k : {"retransmits", "nacks_rcvd", "timeouts", "reroutes", "reorder_max"})
			if (s.contains(k))
				st.counters[k] = double(s.at(k).get<std::uint64_t>());
		r.steps.push_back(st);
	}
	for (const char *k : {"retransmits", "timeouts", "nacks_rcvd", "reroutes", "spurious_rtos", "reroutes_undone"})
		r.counters[k] = double(t.at(k).get<std::uint64_t>());
	double reorder = 0; // the deepest reordering of any step (PSNs)
	for (const CollStep &st : r.steps)
		if (st.counters.count("reorder_max"))
			reorder = std::max(reorder, st.counters.at("reorder_max"));
	r.counters["reorder_max"] = reorder;
	double full = 0; // lumen-dp could not hand frames to a port: it, not the fabric, was short
	for (const auto &h : r.summary.at("hosts"))
		if (h.contains("port"))
			full += double(h["port"].value("tx_full", 0ull) + h["port"].value("no_mbuf", 0ull));
	r.counters["dp_tx_full"] = full;
	// the worst leaf's uplink max/mean between two instants
	auto uplinks = [&](std::uint64_t from, std::uint64_t to, std::vector<double> *bytes) {
		double worst = 0;
		for (const auto &g : lay.uplink_groups) {
			std::vector<double> b = port_bytes(r.ticks, g, from, to);
			if (bytes)
				bytes->insert(bytes->end(), b.begin(), b.end());
			worst = std::max(worst, max_over_mean(b));
		}
		return worst;
	};
	r.uplink_max_mean = uplinks(r.start_ns, r.end_ns, &r.uplink_bytes);
	const std::vector<QueueTick> in_run = ticks_within(r.ticks, r.start_ns, r.end_ns);
	// a port whose link is down counts what it took in as queued for
	// good (enqueued, never dequeued): in the failure case the failed
	// link's ports are left out of the queues
	std::vector<std::size_t> spine_ports;
	for (std::size_t i : lay.spine_ports)
		if (!r.fail_ns || std::find(dead_ports.begin(), dead_ports.end(), i) == dead_ports.end())
			spine_ports.push_back(i);
	r.spine_q = dp_queue(in_run, spine_ports);
	r.down_q = dp_queue(in_run, lay.downlinks);
	for (CollStep &st : r.steps) {
		if (!st.start_ns || st.end_ns <= st.start_ns)
			continue; // a lumen-dp without step times
		st.uplink_max_mean = uplinks(st.start_ns, st.end_ns, nullptr);
		const std::vector<QueueTick> in_step = ticks_within(r.ticks, st.start_ns, st.end_ns);
		st.samples = in_step.size();
		st.spine_q = dp_queue(in_step, spine_ports);
		st.down_q = dp_queue(in_step, lay.downlinks);
	}
	std::vector<std::size_t> fabric = lay.uplinks;
	fabric.insert(fabric.end(), lay.spine_ports.begin(), lay.spine_ports.end());
	fabric.insert(fabric.end(), lay.downlinks.begin(), lay.downlinks.end());
	std::vector<std::uint32_t> fabric_rates;
	for (std::size_t i : fabric)
		fabric_rates.push_back(i < rates.size() ? rates[i] : 0);
	r.watched_downlink = lay.downlinks.empty() ? 0 : lay.downlinks.front();
	r.busiest_util = busiest_utilisation(r.ticks, fabric, fabric_rates, r.start_ns, r.end_ns);
}

} // namespace

std::string run_collective_experiment(const ExperimentSpec &spec_in, const RunOptions &opts)
{
	DpPlan plan = prepare_dp_plan(spec_in, opts);
	const DatapathSpec &dp = plan.spec.datapath;
	const CollectiveStudySpec &study = opts.smoke ? dp.smoke : dp.study;
	std::vector<std::string> policies = plan.spec.algorithms;
	if (opts.algorithms.empty() && !study.algorithms.empty())
		policies = study.algorithms; // the smoke run's own
	std::vector<CollRun> runs;
	for (const auto &cs : study.cases)
		for (const auto &coll : study.collectives)
			for (std::uint64_t bytes : study.sizes)
				for (bool rnd : study.randomize)
					for (const auto &policy : policies)
						for (std::uint64_t seed : study.seeds) {
							CollRun r;
							r.case_name = cs;
							r.coll = coll;
							r.bytes = bytes;
							r.policy = policy;
							r.randomize = rnd;
							r.seed = seed;
							runs.push_back(r);
						}
	progress("[" + plan.spec.name + "] " + std::to_string(runs.size()) +
		 " collective run(s) with lumen-dp on lcore " + std::to_string(plan.lcore) + "; results in " +
		 plan.dir);
	std::uint64_t base_rtt = 0;
	std::vector<PortInfo> ports;
	const std::uint64_t t0 = monotonic_ns();
	{
		Testbed tb = Testbed::create(plan.topo);
		base_rtt = tb.base_rtt_ns();
		spines_answer_probes(plan.topo);
		leaves_receive_off_lcore(tb, plan.lcore);
		auto sampler = make_port_sampler(tb.ports());
		ports = sampler->ports();
		const DpLayout lay = port_layout(ports, plan.topo.leaves);
		std::vector<std::uint32_t> rates;
		std::vector<std::size_t> dead_ports; // the failure's link, both directions
		const std::string up = "leaf" + std::to_string(dp.fail_leaf) + "->spine" +
				       std::to_string(dp.fail_spine),
				  down = "spine" + std::to_string(dp.fail_spine) + "->leaf" +
					 std::to_string(dp.fail_leaf);
		for (const auto &p : ports) {
			if (p.name == up || p.name == down)
				dead_ports.push_back(rates.size());
			rates.push_back(p.rate_mbps);
		}
		std::size_t index = 0;
		heal_idle_ports();
		for (const auto &cs : study.cases) {
			if (cs == "slow") // the sampled rate stays the nominal one: utilisation is of the link as built
				set_link_rate(tb, plan.topo, dp.slow_leaf, dp.slow_spine,
					      dp.slow_fraction * plan.topo.fabric_link.rate_mbps);
			for (auto &r : runs) {
				if (r.case_name != cs)
					continue;
				run_one(plan, tb, *sampler, r, index++, runs.size());
				analyse(r, lay, rates, dead_ports);
				r.healed_bytes = heal_idle_ports();
				if (!r.error.empty())
					progress("[" + plan.spec.name + "] " + r.tag() + " FAILED: " + r.error);
				if (r.unfinished)
					progress("[" + plan.spec.name + "] " + r.tag() + ": unfinished after " +
						 dp_fmt("%.1f s", double(plan.spec.duration_ns) / 1e9));
			}
			if (cs == "slow")
				set_link_rate(tb, plan.topo, dp.slow_leaf, dp.slow_spine,
					      plan.topo.fabric_link.rate_mbps);
		}
		progress("[" + plan.spec.name + "] tearing down");
	}
	const double minutes = double(monotonic_ns() - t0) / 60e9;
	write_collective_report(plan, runs, base_rtt, minutes);
	for (const auto &png : render_plots(collective_plots(runs, plan.topo, ports), plan.dir))
		progress("[" + plan.spec.name + "] plot " + png);
	progress("[" + plan.spec.name + "] results in " + plan.dir);
	std::size_t failed = 0;
	for (const auto &r : runs)
		failed += !r.error.empty();
	if (failed)
		throw Error(std::to_string(failed) + " of " + std::to_string(runs.size()) +
			    " collective runs failed (wrong ranks or lumen-dp errors; see the table and " + plan.dir +
			    "/raw)");
	return plan.dir;
}

} // namespace lumen
