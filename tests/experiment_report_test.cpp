// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// Experiment results (userspace/experiment/report.h, report_plot.h): the
// generator's CSVs read back, a synthetic run summarised to hand-computed
// numbers, the merged CSVs' shape, the table, and the plots rendered by
// gnuplot into real PNGs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "base/error.h"
#include "base/stats.h"
#include "experiment/experiment_claims.h"
#include "experiment/experiment_proc.h"
#include "experiment/report.h"
#include "experiment/report_plot.h"

using namespace lumen;

namespace
{

constexpr std::uint64_t kSec = 1'000'000'000, kMs = 1'000'000;
constexpr std::uint64_t kT0 = 5 * kSec;

// Two long flows of 500 Mbit/s each through a 1 Gbit/s bottleneck whose
// queue sits at 10 000 bytes, except 50 ms of 50 000 bytes after an incast
// burst at t0 + 1 s.
RunData dumbbell_run()
{
	RunData r;
	r.algo = "cubic";
	r.case_name = "run";
	r.t0_ns = kT0;
	r.length_ns = 2 * kSec;
	r.warmup_ns = 500 * kMs;
	r.traffic_end_ns = 2 * kSec;
	r.ports = {{"sw1->sw2", 1000, true}, {"sw1->s1", 1000, false}};
	for (std::uint64_t t = 0; t <= 2 * kSec; t += 10 * kMs) {
		QueueTick tick;
		tick.t_ns = kT0 + t;
		bool burst = t >= 1000 * kMs && t < 1050 * kMs;
		tick.ports = {{burst ? 50'000u : 10'000u, 0, t / 8, 0, 0}, {0, 0, 0, 0, 0}}; // 1 Gbit/s = 1/8 byte/ns
		r.queue.push_back(tick);
	}
	for (std::uint64_t id = 0; id < 2; id++) {
		FlowRecord f;
		f.label = "long.s" + std::to_string(id + 1);
		f.flow_id = id;
		f.dst = "10.0.0.1";
		f.cc = "cubic";
		f.kind = "long";
		f.start_ns = kT0;
		f.end_ns = kT0 + 2 * kSec;
		f.bytes = f.size_bytes = 125'000'000; // 500 Mbit/s for 2 s
		f.fct_ns = 2 * kSec;
		f.retrans = 3 + id;
		f.status = "ok";
		r.flows.push_back(f);
		for (std::uint64_t t = 100 * kMs; t < 2 * kSec; t += 100 * kMs)
			r.samples.push_back({f.label, id, kT0 + t, t / 16, 10, 100, 0, 0, 0}); // 1/16 byte/ns
	}
	r.incasts.push_back({"burst", 10, 64'000, kT0 + 1 * kSec, 500 * kMs, 1});
	return r;
}

FlowRecord poisson_flow(std::uint64_t id, std::uint64_t size, double slowdown, const std::string &status = "ok")
{
	FlowRecord f;
	f.label = "web.h1_1";
	f.flow_id = id;
	f.cc = "bbr";
	f.kind = "poisson";
	f.size_bytes = f.bytes = size;
	f.start_ns = kT0 + id * 10 * kMs;
	f.end_ns = f.start_ns + 5 * kMs;
	f.slowdown = slowdown;
	f.status = status;
	return f;
}

RunData poisson_run()
{
	RunData r;
	r.algo = "bbr";
	r.case_name = "load50";
	r.load = 0.5;
	r.t0_ns = kT0;
	r.length_ns = 1 * kSec;
	r.traffic_end_ns = 1 * kSec;
	r.ports = {{"leaf1->h1_1", 1000, false}, {"leaf1->spine1", 1000, false}};
	for (std::uint64_t t = 0; t <= kSec; t += 10 * kMs)
		r.queue.push_back({kT0 + t, {{t == 500 * kMs ? 3000u : 0u, 0, 0, 0, 0}, {1000, 0, 0, 0, 0}}});
	r.flows = {poisson_flow(0, 5'000, 2.0), poisson_flow(1, 5'000, 4.0), poisson_flow(2, 2'000'000, 1.5),
		   poisson_flow(3, 50'000, 9.0), poisson_flow(4, 5'000, 0, "error:timeout")};
	return r;
}

std::vector<std::string> lines_of(const std::string &text)
{
	std::vector<std::string> out;
	std::istringstream in(text);
	std::string l;
	while (std::getline(in, l))
		out.push_back(l);
	return out;
}

std::size_t fields(const std::string &line)
{
	return std::count(line.begin(), line.end(), ',') + 1;
}

template <typename W> std::vector<std::string> csv_lines(W writer, const std::vector<RunData> &runs)
{
	std::ostringstream out;
	writer(out, runs);
	return lines_of(out.str());
}

} // namespace

TEST(TrafficCsv, ReadsTheGeneratorsFiles)
{
	std::string flows = std::string(kTrafficFlowsHeader) +
			    "\nlong.s1,0,10.1.1.1,cubic,long,1000,10,20,10,1000,2,5,2.5,ok\n"
			    "inc.s2,1,10.1.1.1,bbr,incast,64000,30,0,0,12,0,0,0,error:connect: refused, twice\n";
	auto f = parse_flows_csv(flows, "a.csv");
	ASSERT_EQ(f.size(), 2u);
	EXPECT_EQ(f[0].label, "long.s1");
	EXPECT_EQ(f[0].retrans, 2u);
	EXPECT_DOUBLE_EQ(f[0].slowdown, 2.5);
	EXPECT_TRUE(f[0].ok());
	EXPECT_EQ(f[1].status, "error:connect: refused, twice"); // the last field keeps its commas
	EXPECT_FALSE(f[1].ok());

	std::string samples = std::string(kTrafficSamplesHeader) + "\nlong.s1,0,100,2000,10,120,0,1000,900\n";
	auto s = parse_samples_csv(samples, "b.csv");
	ASSERT_EQ(s.size(), 1u);
	EXPECT_EQ(s[0].cwnd, 10u);
	EXPECT_EQ(s[0].delivery_rate_bps, 900u);

	auto error = [](const std::string &text) {
		try {
			parse_flows_csv(text, "c.csv");
		} catch (const UsageError &e) {
			return std::string(e.what());
		}
		return std::string("(accepted)");
	};
	EXPECT_NE(error("label,flow\n").find("c.csv: line 1: expected the header"), std::string::npos);
	EXPECT_NE(error("").find("(empty file)"), std::string::npos);
	EXPECT_NE(error(std::string(kTrafficFlowsHeader) + "\nx,1,2\n").find("c.csv: line 2: expected 14 fields"),
		  std::string::npos);
	EXPECT_NE(error(std::string(kTrafficFlowsHeader) + "\nx,one,d,c,long,1,1,1,1,1,1,1,1,ok\n")
			  .find("c.csv: line 2: field 2 'one' is not a whole number"),
		  std::string::npos);
	EXPECT_NE(error(std::string(kTrafficFlowsHeader) + "\nx,1,d,c,long,1,1,1,1,1,1,1,fast,ok\n")
			  .find("field 13 'fast' is not a number"),
		  std::string::npos);
}

TEST(Summary, DumbbellRunByHand)
{
	RunSummary s = summarise_run(dumbbell_run());
	EXPECT_EQ(s.flows, 2u);
	EXPECT_EQ(s.completed, 2u);
	EXPECT_EQ(s.errors, 0u);
	EXPECT_EQ(s.retransmits, 7u);
	EXPECT_NEAR(s.goodput_mbps, 1000.0, 1e-9); // 250 MB in 2 s
	ASSERT_TRUE(s.utilisation.has_value());
	EXPECT_NEAR(*s.utilisation, 1.0, 1e-9);
	// window [0.5 s, 2 s]: 151 samples, 5 of them at 50 000
	EXPECT_EQ(s.queue_bytes.count, 151u);
	EXPECT_DOUBLE_EQ(s.queue_bytes.p50, 10'000.0);
	EXPECT_DOUBLE_EQ(s.queue_bytes.max, 50'000.0);
	EXPECT_NEAR(s.jain, 1.0, 1e-12);
	ASSERT_EQ(s.incasts.size(), 1u);
	const IncastSummary &i = s.incasts[0];
	EXPECT_EQ(i.fan_in, 10u);
	EXPECT_DOUBLE_EQ(i.peak_queue_max_bytes, 50'000.0);
	EXPECT_DOUBLE_EQ(i.drain_ms_median, 50.0); // back to 10 000 at t0 + 1.05 s
	EXPECT_EQ(i.undrained, 0u);
	EXPECT_NEAR(i.util_kept, 1.0, 1e-9);
	EXPECT_TRUE(s.slowdown.empty()); // no poisson flows

	auto j = summary_to_json(s);
	EXPECT_EQ(j["incast"][0]["phase"], "burst");
	EXPECT_EQ(j["queue_bytes"]["count"], 151);
}

TEST(Summary, UnfairFlowsLowerJain)
{
	RunData r = dumbbell_run();
	for (auto &smp : r.samples)
		if (smp.flow_id == 1)
			smp.bytes_acked /= 3; // flow 1 gets a third of flow 0's rate
	r.flows[1].bytes /= 3;
	RunSummary s = summarise_run(r);
	EXPECT_NEAR(s.jain, 16.0 / 20.0, 1e-9); // rates 3:1 -> (4)^2 / (2 * 10)
}

TEST(Summary, BottleneckIsTheBusierMarkedPort)
{
	RunData r = dumbbell_run();
	EXPECT_EQ(bottleneck_port(r), 0);
	// mark the reverse port too and let it carry more: it becomes the one
	r.ports[1].bottleneck = true;
	for (auto &t : r.queue)
		t.ports[1].deq_bytes = t.ports[0].deq_bytes * 2;
	EXPECT_EQ(bottleneck_port(r), 1);
	r.ports[0].bottleneck = r.ports[1].bottleneck = false;
	EXPECT_EQ(bottleneck_port(r), -1);
}

TEST(Summary, SlowdownBucketsOfPoissonFlows)
{
	RunSummary s = summarise_run(poisson_run());
	EXPECT_EQ(s.errors, 1u);
	EXPECT_FALSE(s.utilisation.has_value()); // no bottleneck port
	EXPECT_DOUBLE_EQ(s.queue_bytes.max, 3000.0); // longest queue of any port
	EXPECT_DOUBLE_EQ(s.queue_bytes.p50, 1000.0);
	EXPECT_EQ(s.slowdown.at("short").count, 2u);
	EXPECT_DOUBLE_EQ(s.slowdown.at("short").p50, 3.0);
	EXPECT_DOUBLE_EQ(s.slowdown.at("short").p99, 3.98);
	EXPECT_EQ(s.slowdown.at("medium").count, 0u);
	EXPECT_TRUE(std::isnan(s.slowdown.at("medium").p50));
	EXPECT_DOUBLE_EQ(s.slowdown.at("long").p50, 1.5);
	EXPECT_EQ(s.slowdown.at("all").count, 4u); // the 50 KB flow counts only here
	EXPECT_DOUBLE_EQ(s.slowdown.at("all").p50, 3.0);
	EXPECT_TRUE(std::isnan(s.jain));

	auto j = summary_to_json(s);
	EXPECT_TRUE(j["fct_slowdown"]["medium"]["p50"].is_null());
	EXPECT_TRUE(j["utilisation"].is_null());
}

TEST(ResultFiles, HeadersAndShapes)
{
	std::vector<RunData> runs = {dumbbell_run(), poisson_run()};
	auto flows = csv_lines(write_flows_csv, runs);
	EXPECT_EQ(flows[0], kFlowsHeader);
	ASSERT_EQ(flows.size(), 1u + 2 + 5);
	for (const auto &l : flows)
		EXPECT_EQ(fields(l), fields(kFlowsHeader)) << l;
	EXPECT_EQ(flows[1].rfind("cubic,run,1,0.000,long.s1,0,", 0), 0u) << flows[1];

	auto samples = csv_lines(write_samples_csv, runs);
	EXPECT_EQ(samples[0], kSamplesHeader);
	EXPECT_EQ(samples.size(), 1u + 2 * 19);

	auto queue = csv_lines(write_queue_csv, runs);
	EXPECT_EQ(queue[0], kQueueHeader);
	EXPECT_EQ(queue.size(), 1u + 201 * 2 + 101 * 2);
	EXPECT_EQ(queue[1], "cubic,run,1,0.000,sw1->sw2,1,10000,0,0,0,0");

	auto tput = csv_lines(write_throughput_csv, runs);
	EXPECT_EQ(tput[0], kThroughputHeader);
	// long flows: 20 bins of 100 ms each; poisson flows (5 ms long): one bin each
	EXPECT_EQ(tput.size(), 1u + 2 * 20 + 5);
	EXPECT_EQ(tput[1], "cubic,run,1,long.s1,0,long,0.0,500");
	for (const auto &l : tput)
		EXPECT_EQ(fields(l), fields(kThroughputHeader)) << l;
}

TEST(ResultFiles, TableHasEveryRunAndSection)
{
	std::vector<RunSummary> sums = {summarise_run(dumbbell_run()), summarise_run(poisson_run())};
	std::string t = summary_table(sums);
	EXPECT_NE(t.find("util %"), std::string::npos);
	EXPECT_NE(t.find("load50 bbr"), std::string::npos);
	EXPECT_NE(t.find("100.0"), std::string::npos); // cubic's utilisation
	EXPECT_NE(t.find("10:1"), std::string::npos); // the incast section
	EXPECT_NE(t.find("FCT slowdown"), std::string::npos);
	EXPECT_NE(t.find("3.98"), std::string::npos); // bbr's short p99
}

// Mean and spread over seeds: NaN values are missing, not zeros; the
// sample standard deviation; a run the other seeds lack a metric of.
TEST(Seeds, SpreadByHand)
{
	Spread s = spread_of({2, 4, 4, 4, 5, 5, 7, 9, kNaN});
	EXPECT_EQ(s.n, 8u);
	EXPECT_DOUBLE_EQ(s.mean, 5.0);
	EXPECT_DOUBLE_EQ(s.sd, std::sqrt(32.0 / 7.0));
	EXPECT_DOUBLE_EQ(s.min, 2.0);
	EXPECT_DOUBLE_EQ(s.max, 9.0);
	Spread one = spread_of({3});
	EXPECT_EQ(one.n, 1u);
	EXPECT_DOUBLE_EQ(one.sd, 0.0);
	Spread none = spread_of({kNaN});
	EXPECT_EQ(none.n, 0u);
	EXPECT_TRUE(std::isnan(none.mean));
	EXPECT_EQ(spread_text(none, "%.1f"), "-");
	EXPECT_EQ(spread_text(spread_of({1, 3}), "%.1f"), "2.0 +-1.4 [1.0..3.0]");
}

TEST(Seeds, AggregatePerCaseAndAlgorithm)
{
	std::vector<RunSummary> sums;
	for (std::uint64_t seed : {1, 2, 3}) {
		RunData d = dumbbell_run(), p = poisson_run();
		d.seed = p.seed = seed;
		RunSummary sd = summarise_run(d), sp = summarise_run(p);
		sd.goodput_mbps = 100.0 * double(seed); // 100, 200, 300
		sp.slowdown["short"].p999 = double(seed); // 1, 2, 3
		sums.push_back(sd);
		sums.push_back(sp);
	}
	auto cells = aggregate_over_seeds(sums);
	ASSERT_EQ(cells.size(), 2u);
	EXPECT_EQ(cells[0].algo, "cubic");
	EXPECT_EQ(cells[0].seeds, (std::vector<std::uint64_t>{1, 2, 3}));
	const Spread &g = cells[0].metrics.at("goodput_mbps");
	EXPECT_EQ(g.n, 3u);
	EXPECT_DOUBLE_EQ(g.mean, 200.0);
	EXPECT_DOUBLE_EQ(g.sd, 100.0);
	EXPECT_DOUBLE_EQ(g.min, 100.0);
	EXPECT_DOUBLE_EQ(g.max, 300.0);
	EXPECT_EQ(cells[1].case_name, "load50");
	EXPECT_DOUBLE_EQ(cells[1].metrics.at("fct.short.p999").mean, 2.0);
	EXPECT_EQ(cells[1].metrics.at("fct.medium.p50").n, 0u); // no medium flows: missing, not 0
	EXPECT_EQ(cells[0].metrics.count("fct.short.p999"), 0u); // no poisson flows at all
	EXPECT_EQ(cells[0].metrics.at("incast.burst.peak_max_bytes").n, 3u);

	auto j = aggregate_to_json(cells);
	EXPECT_EQ(j["cells"][0]["metrics"]["goodput_mbps"]["sd"].get<double>(), 100.0);
	EXPECT_TRUE(j["cells"][1]["metrics"]["fct.medium.p50"]["mean"].is_null());
	EXPECT_EQ(j["cells"][1]["load"].get<double>(), 0.5);

	// the table names runs by seed and adds the table over seeds
	std::string t = summary_table(sums);
	EXPECT_NE(t.find("cubic s2"), std::string::npos) << t;
	EXPECT_NE(t.find("over seeds"), std::string::npos) << t;
	EXPECT_NE(t.find("200 +-100 [100..300]"), std::string::npos) << t;
	// one seed: the table as it was
	std::string one = summary_table({sums[0], sums[1]});
	EXPECT_EQ(one.find("over seeds"), std::string::npos);
	EXPECT_EQ(one.find("cubic s1"), std::string::npos);
	EXPECT_EQ(summary_to_json(sums[2])["seed"].get<std::uint64_t>(), 2u);
}

TEST(Seeds, PercentileNinetyNineNine)
{
	RunData r = poisson_run();
	r.flows.clear();
	for (std::uint64_t i = 0; i < 1001; i++)
		r.flows.push_back(poisson_flow(i, 5'000, double(i)));
	RunSummary s = summarise_run(r);
	EXPECT_DOUBLE_EQ(s.slowdown.at("short").p999, 999.0); // position 0.999 x 1000
	EXPECT_DOUBLE_EQ(run_metrics(s).at("fct.short.p999"), 999.0);
	EXPECT_EQ(summary_to_json(s)["fct_slowdown"]["short"]["p999"].get<double>(), 999.0);
}

namespace
{

RunSummary claim_run(const std::string &algo, const std::string &cs, std::uint64_t seed, double short_p999,
		     double queue_p99)
{
	RunSummary s;
	s.algo = algo;
	s.case_name = cs;
	s.seed = seed;
	s.slowdown["short"].count = 10;
	s.slowdown["short"].p999 = short_p999;
	s.queue_bytes.count = 100;
	s.queue_bytes.p99 = queue_p99;
	return s;
}

ClaimSpec claim(const std::string &id, std::vector<std::string> cases, const std::string &metric,
		const std::string &expect, std::optional<double> thesis = -0.33)
{
	ClaimSpec c;
	c.id = id;
	c.text = id;
	c.member = "web";
	c.cases = std::move(cases);
	c.metric = metric;
	c.algo = "bpf_powertcp";
	c.vs = "bpf_hpcc";
	c.thesis = thesis;
	c.expect = expect;
	return c;
}

} // namespace

// Per seed algo / vs - 1, averaged over the claim's cases, then mean and
// spread over the seeds; verdicts; a case or algorithm not run is no data.
TEST(Claims, RatiosPerSeedBySpread)
{
	std::map<std::string, std::vector<RunSummary>> by = {
		{"web",
		 {claim_run("bpf_powertcp", "load60", 1, 6, 100), claim_run("bpf_hpcc", "load60", 1, 10, 50),
		  claim_run("bpf_powertcp", "load60", 2, 8, 100), claim_run("bpf_hpcc", "load60", 2, 10, 200),
		  claim_run("bpf_powertcp", "load20", 1, 1, 100), claim_run("bpf_hpcc", "load20", 1, 2, 100),
		  claim_run("bpf_powertcp", "load20", 2, 3, 100), claim_run("bpf_hpcc", "load20", 2, 2, 100)}}};
	std::vector<ClaimSpec> claims = {
		claim("short60", {"load60"}, "fct.short.p999", "lower"), // -40 %, -20 %
		claim("queue60", {"load60"}, "queue_p99_bytes", "lower"), // +100 %, -50 %
		claim("both", {"load20", "load60"}, "fct.short.p999",
		      "lower"), // seed 1: (-50 - 40) / 2; 2: (+50 - 20) / 2
		claim("higher", {"load60"}, "fct.short.p999", "higher", std::nullopt),
		claim("similar", {"load20"}, "queue_p99_bytes", "similar", std::nullopt),
		claim("missing", {"load80"}, "fct.short.p999", "lower"),
		claim("nometric", {"load60"}, "incast.x.util_kept", "lower"),
	};
	auto r = evaluate_claims(claims, by);
	ASSERT_EQ(r.size(), claims.size());
	EXPECT_EQ(r[0].seeds, (std::vector<std::uint64_t>{1, 2}));
	EXPECT_DOUBLE_EQ(r[0].measured.mean, -0.3);
	EXPECT_NEAR(r[0].measured.sd, std::sqrt(0.02), 1e-12);
	EXPECT_DOUBLE_EQ(r[0].measured.min, -0.4);
	EXPECT_DOUBLE_EQ(r[0].measured.max, -0.2);
	EXPECT_DOUBLE_EQ(r[0].algo_value.mean, 7.0);
	EXPECT_DOUBLE_EQ(r[0].vs_value.mean, 10.0);
	EXPECT_EQ(r[0].verdict, "agrees");
	EXPECT_DOUBLE_EQ(r[1].measured.mean, 0.25);
	EXPECT_EQ(r[1].verdict, "mixed");
	EXPECT_DOUBLE_EQ(r[2].measured.min, -0.45);
	EXPECT_DOUBLE_EQ(r[2].measured.max, 0.15);
	EXPECT_EQ(r[2].verdict, "mixed");
	EXPECT_EQ(r[3].verdict, "disagrees");
	EXPECT_EQ(r[4].verdict, "agrees"); // seed 1 -0 %, seed 2 0 %
	EXPECT_EQ(r[5].verdict, "no data");
	EXPECT_EQ(r[5].measured.n, 0u);
	EXPECT_EQ(r[6].verdict, "no data");
	EXPECT_EQ(evaluate_claims(claims, {})[0].verdict, "no data"); // member not run

	auto j = claims_to_json(r);
	EXPECT_EQ(j["claims"][0]["thesis"].get<double>(), -0.33);
	EXPECT_EQ(j["claims"][0]["measured"]["mean"].get<double>(), -0.3);
	EXPECT_TRUE(j["claims"][3]["thesis"].is_null());
	EXPECT_TRUE(j["claims"][5]["measured"]["mean"].is_null());
	auto csv = lines_of(claims_csv(r));
	ASSERT_EQ(csv.size(), 1u + claims.size());
	EXPECT_EQ(csv[1].rfind("short60,web,load60,fct.short.p999,bpf_powertcp,bpf_hpcc,-0.33,-0.3,", 0), 0u) << csv[1];
	std::string t = claims_table(r);
	EXPECT_NE(t.find("-33 %"), std::string::npos) << t;
	EXPECT_NE(t.find("-30 % +-14 % [-40 %..-20 %] (2)"), std::string::npos) << t;
	EXPECT_NE(t.find("no data"), std::string::npos);
}

// "similar" is judged per seed like the signs: every seed within 10 %
// agrees, every seed beyond disagrees (also when their mean is within 10 %:
// +25 % and -20 % are not similar), and seeds on both sides are mixed.
TEST(Claims, SimilarIsJudgedPerSeed)
{
	std::map<std::string, std::vector<RunSummary>> by = {
		{"web",
		 {claim_run("bpf_powertcp", "load20", 1, 105, 125), claim_run("bpf_hpcc", "load20", 1, 100, 100),
		  claim_run("bpf_powertcp", "load20", 2, 92, 80), claim_run("bpf_hpcc", "load20", 2, 100, 100),
		  claim_run("bpf_powertcp", "load60", 1, 150, 100), claim_run("bpf_hpcc", "load60", 1, 100, 104),
		  claim_run("bpf_powertcp", "load60", 2, 150, 200), claim_run("bpf_hpcc", "load60", 2, 100, 100)}}};
	auto r = evaluate_claims({claim("near", {"load20"}, "fct.short.p999", "similar", std::nullopt),
				  claim("spread", {"load20"}, "queue_p99_bytes", "similar", std::nullopt),
				  claim("far", {"load60"}, "fct.short.p999", "similar", std::nullopt),
				  claim("one", {"load60"}, "queue_p99_bytes", "similar", std::nullopt)},
				 by);
	ASSERT_EQ(r.size(), 4u);
	EXPECT_EQ(r[0].verdict, "agrees"); // +5 %, -8 %
	EXPECT_NEAR(r[1].measured.mean, 0.025, 1e-12); // +25 %, -20 %
	EXPECT_EQ(r[1].verdict, "disagrees"); // the mean rule said "agrees"
	EXPECT_EQ(r[2].verdict, "disagrees"); // +50 %, +50 %
	EXPECT_EQ(r[3].verdict, "mixed"); // -4 %, +100 %
}

// Real hosts without a switch in the inventory: no queue samples, so no
// queue or incast plot (gnuplot refuses an empty data set); the summary
// still has the flows.
TEST(Plots, NoQueueSamplesNoQueuePlots)
{
	RunData run = dumbbell_run();
	run.ports.clear();
	run.queue.clear();
	RunSummary sum = summarise_run(run);
	EXPECT_EQ(sum.queue_bytes.count, 0u);
	EXPECT_FALSE(sum.utilisation);
	EXPECT_GT(sum.flows, 0u);
	EXPECT_TRUE(sum.incasts.empty()); // not "0 KB peak, undrained"
	std::vector<std::string> names;
	for (const auto &p : plot_scripts({run}, {sum}))
		names.push_back(p.name);
	EXPECT_EQ(names, (std::vector<std::string>{"throughput", "cwnd"}));
	EXPECT_NE(summary_table({sum}).find(run.algo), std::string::npos);
}

TEST(Plots, GnuplotRendersEveryPlot)
{
	if (run_process({"sh", "-c", "command -v gnuplot"}).status != 0)
		GTEST_SKIP() << "gnuplot not installed";
	std::vector<RunData> runs = {dumbbell_run(), poisson_run()};
	std::vector<RunSummary> sums = {summarise_run(runs[0]), summarise_run(runs[1])};
	auto scripts = plot_scripts(runs, sums);
	std::vector<std::string> names;
	for (const auto &p : scripts)
		names.push_back(p.name);
	EXPECT_EQ(names, (std::vector<std::string>{"throughput", "queue", "cwnd", "fct_slowdown", "incast"}));

	char tmpl[] = "/tmp/lumen-plot-test-XXXXXX";
	ASSERT_NE(mkdtemp(tmpl), nullptr);
	std::string dir = tmpl;
	auto pngs = render_plots(scripts, dir);
	ASSERT_EQ(pngs.size(), scripts.size());
	for (const auto &png : pngs) {
		std::ifstream f(png, std::ios::binary);
		std::string data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
		EXPECT_EQ(data.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8)) << png;
		EXPECT_GT(data.size(), 5000u) << png;
	}
	run_process({"rm", "-rf", dir});
}
