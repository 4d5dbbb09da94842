// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/experiment_collective_test.cpp - collective studies without a
// testbed: the built-in `ethereal` and the mistakes in a "datapath" with
// "collectives", and the analysis of a run (mean and spread over seeds,
// bytes per port over a run shorter than the sampling period, max/mean,
// the samples of a run, the busiest port's utilisation, the ports of a
// leaf-spine by role).
#include <gtest/gtest.h>

#include "base/error.h"
#include "experiment/experiment.h"
#include "experiment/experiment_collective.h"
#include "experiment/experiment_dp.h"
#include "experiment_dp_test_util.h"

#include <nlohmann/json.hpp>

using namespace lumen;
using nlohmann::json;

using test::tick;

TEST(ExperimentCollective, TheBuiltInEtherealParses)
{
	ExperimentSpec s = parse_experiment(test::builtin_experiment("ethereal").dump(), "ethereal.json");
	const DatapathSpec &dp = s.datapath;
	ASSERT_TRUE(dp.enabled && dp.collective_study);
	EXPECT_EQ(s.algorithms, (std::vector<std::string>{"ecmp", "ops", "reps", "ethereal"}));
	ASSERT_EQ(dp.study.collectives.size(), 2u);
	EXPECT_EQ(dp.study.collectives[0].label(), "alltoall");
	EXPECT_EQ(dp.study.collectives[1].label(), "allreduce-c4");
	EXPECT_EQ(dp.study.sizes, (std::vector<std::uint64_t>{16384, 1 << 20}));
	EXPECT_EQ(dp.study.randomize, (std::vector<bool>{true, false}));
	EXPECT_EQ(dp.study.seeds.size(), 3u);
	EXPECT_EQ(dp.study.cases, (std::vector<std::string>{"healthy", "slow", "failure"}));
	EXPECT_EQ(dp.slow_leaf, 1u);
	EXPECT_DOUBLE_EQ(dp.slow_fraction, 0.25);
	EXPECT_EQ(dp.fail_leaf, 2u);
	EXPECT_EQ(dp.fail_at_ns, 0u); // down at the collective's start
	// the smoke run: its own keys, the study's for the rest
	EXPECT_EQ(dp.smoke.algorithms, (std::vector<std::string>{"ecmp", "reps", "ethereal"}));
	EXPECT_EQ(dp.smoke.cases, (std::vector<std::string>{"healthy"}));
	EXPECT_EQ(dp.smoke.seeds.size(), 1u);
	EXPECT_EQ(dp.smoke.collectives.size(), 2u);
	EXPECT_EQ(dp.ce_nack_threshold_pct, -1); // lumen-dp's own unless given
	json out = json::parse(experiment_to_json(s));
	EXPECT_EQ(out["datapath"]["slow_link"]["link"], "leaf1-spine1");
	EXPECT_FALSE(out["datapath"].contains("ce_nack_threshold"));
	json d = test::builtin_experiment("ethereal");
	d["datapath"]["ce_nack_threshold"] = 70;
	ExperimentSpec t = parse_experiment(d.dump(), "t.json");
	EXPECT_EQ(t.datapath.ce_nack_threshold_pct, 70);
	EXPECT_EQ(json::parse(experiment_to_json(t))["datapath"]["ce_nack_threshold"], 70);
	EXPECT_EQ(out["datapath"]["smoke"]["cases"], json({"healthy"}));
}

TEST(ExperimentCollective, MistakesAreNamed)
{
	auto err = [](const std::function<void(json &)> &change) {
		json d = test::builtin_experiment("ethereal");
		change(d);
		return test::parse_error(d, "e.json");
	};
	auto has = [](const std::string &e, const std::string &what) { return e.find(what) != std::string::npos; };
	std::string e = err([](json &d) { d["datapath"]["collectives"][0]["collective"] = "broadcast"; });
	EXPECT_TRUE(has(e, "datapath.collectives[0].collective: unknown collective 'broadcast'")) << e;
	e = err([](json &d) { d["datapath"]["collectives"][1]["channels"] = 0; });
	EXPECT_TRUE(has(e, "channels: expected a whole number within 1..16")) << e;
	e = err([](json &d) { d["datapath"]["collectives"][1] = {{"collective", "alltoall"}}; });
	EXPECT_TRUE(has(e, "'alltoall' is listed twice")) << e;
	e = err([](json &d) { d["datapath"]["sizes"] = {"16k", 1001}; });
	EXPECT_TRUE(has(e, "sizes[1]: must be a multiple of 4")) << e;
	e = err([](json &d) { d["datapath"]["sizes"] = json::array(); });
	EXPECT_TRUE(has(e, "non-empty list of sizes")) << e;
	e = err([](json &d) { d["datapath"]["randomize"] = {true, true}; });
	EXPECT_TRUE(has(e, "[true, false]")) << e;
	e = err([](json &d) { d["datapath"]["randomize"] = {"yes"}; });
	EXPECT_TRUE(has(e, "--no-randomize")) << e;
	e = err([](json &d) { d["datapath"]["seeds"] = {1, 1}; });
	EXPECT_TRUE(has(e, "seed 1 is listed twice")) << e;
	e = err([](json &d) { d["datapath"]["cases"] = {"healthy", "flaky"}; });
	EXPECT_TRUE(has(e, "unknown case 'flaky'")) << e;
	e = err([](json &d) { d["datapath"].erase("slow_link"); });
	EXPECT_TRUE(has(e, "case 'slow' needs \"slow_link\"")) << e;
	e = err([](json &d) { d["datapath"]["slow_link"]["rate_fraction"] = 1.5; });
	EXPECT_TRUE(has(e, "rate_fraction: expected a fraction")) << e;
	e = err([](json &d) { d["datapath"]["slow_link"]["link"] = "leaf5-spine1"; });
	EXPECT_TRUE(has(e, "not a link leaf<1..4>-spine<1..4>")) << e;
	e = err([](json &d) { d["datapath"]["failure"]["at"] = "1s"; });
	EXPECT_TRUE(has(e, "down before each run")) << e;
	e = err([](json &d) { d["datapath"]["message_size"] = "1m"; });
	EXPECT_TRUE(has(e, "message_size")) << e;
	e = err([](json &d) {
		d["datapath"]["smoke"]["cases"] = {"failure"};
		d["datapath"].erase("failure");
	});
	EXPECT_TRUE(has(e, "needs \"failure\"")) << e;
	e = err([](json &d) { d["datapath"]["smoke"]["algorithms"] = {"spray"}; });
	EXPECT_TRUE(has(e, "smoke.algorithms[0]: unknown path policy 'spray'")) << e;
	e = err([](json &d) { d["datapath"]["smoke"]["cc"] = "dctcp"; });
	EXPECT_TRUE(has(e, "smoke.cc: unknown key")) << e;
	e = err([](json &d) { d["datapath"]["rto_min"] = "2s"; });
	EXPECT_TRUE(has(e, "rto_min")) << e;
	for (json bad : {json(100), json(-1), json(50.5), json("50")}) {
		e = err([&bad](json &d) { d["datapath"]["ce_nack_threshold"] = bad; });
		EXPECT_TRUE(has(e, "ce_nack_threshold: Ethereal's receiver")) << e;
	}
}

TEST(ExperimentCollective, SpreadOverSeeds)
{
	SeedSpread s = seed_spread({2, 4, 6});
	EXPECT_EQ(s.n, 3u);
	EXPECT_DOUBLE_EQ(s.mean, 4);
	EXPECT_DOUBLE_EQ(s.sd, 2); // sample standard deviation
	EXPECT_DOUBLE_EQ(s.min, 2);
	EXPECT_DOUBLE_EQ(s.max, 6);
	EXPECT_DOUBLE_EQ(seed_spread({5}).sd, 0);
	EXPECT_EQ(seed_spread({}).n, 0u);
}

TEST(ExperimentCollective, BytesPerPortOverAShortRun)
{
	// samples at 0, 10, 20, 30; the run is [12, 18]: from the last sample
	// at or before its start to the first at or after its end
	std::vector<QueueTick> t = {tick(0, {0, 0}), tick(10, {100, 50}), tick(20, {300, 50}), tick(30, {400, 60})};
	EXPECT_EQ(port_bytes(t, {0, 1}, 12, 18), (std::vector<double>{200, 0}));
	EXPECT_EQ(port_bytes(t, {1}, 0, 30), (std::vector<double>{60}));
	// the run's end beyond the last sample (lumen-dp had exited): the last
	EXPECT_EQ(port_bytes(t, {0}, 15, 99), (std::vector<double>{300}));
	EXPECT_EQ(port_bytes({t[0]}, {0}, 0, 5), (std::vector<double>{0}));
	EXPECT_EQ(port_bytes(t, {7}, 0, 30), (std::vector<double>{0})); // no such port
	EXPECT_DOUBLE_EQ(max_over_mean({100, 100, 200, 0}), 2.0);
	EXPECT_DOUBLE_EQ(max_over_mean({5, 5}), 1.0);
	EXPECT_DOUBLE_EQ(max_over_mean({0, 0}), 0.0);
	EXPECT_DOUBLE_EQ(max_over_mean({}), 0.0);
}

TEST(ExperimentCollective, KeptSamplesBracketTheRun)
{
	// the sampler was starved from 12 to 90; the run is [40, 60], margin 2
	std::vector<QueueTick> t = {tick(0, {0}),   tick(5, {10}),   tick(10, {20}),
				    tick(12, {30}), tick(90, {500}), tick(95, {510})};
	std::vector<QueueTick> kept = ticks_around(t, 40, 60, 2);
	ASSERT_EQ(kept.size(), 2u); // 12 and 90: nothing within, the nearest on each side
	EXPECT_EQ(kept.front().t_ns, 12u);
	EXPECT_EQ(kept.back().t_ns, 90u);
	EXPECT_EQ(port_bytes(kept, {0}, 40, 60), (std::vector<double>{470}));
	// samples within the margin stay, with the nearest beyond it
	kept = ticks_around(t, 11, 91, 2);
	ASSERT_EQ(kept.size(), 5u);
	EXPECT_EQ(kept.front().t_ns, 5u);
	EXPECT_EQ(kept.back().t_ns, 95u);
	EXPECT_EQ(ticks_around(t, 0, 200, 2).size(), t.size());
	EXPECT_TRUE(ticks_around({}, 0, 10, 2).empty());
}

TEST(ExperimentCollective, QueuesWithinTheRunAndUtilisation)
{
	std::vector<QueueTick> t = {tick(0, {0, 0}, {9000, 0}), tick(10, {0, 0}, {1000, 2000}),
				    tick(20, {0, 0}, {3000, 4000}), tick(30, {0, 0}, {9000, 0})};
	const std::vector<QueueTick> in = ticks_within(t, 5, 25);
	ASSERT_EQ(in.size(), 2u);
	DpQueue q = dp_queue(in, {0});
	EXPECT_DOUBLE_EQ(q.max_kb, 3.0); // the samples outside the run do not count
	// 1 Mbit/s for 8 ms = 1000 bytes
	std::vector<QueueTick> u = {tick(0, {0, 0}), tick(8'000'000, {1000, 250})};
	EXPECT_DOUBLE_EQ(busiest_utilisation(u, {0, 1}, {1, 1}, 0, 8'000'000), 1.0);
	EXPECT_DOUBLE_EQ(busiest_utilisation(u, {1}, {1}, 0, 8'000'000), 0.25);
	EXPECT_DOUBLE_EQ(busiest_utilisation(u, {0}, {0}, 0, 8'000'000), 0.0); // no rate: not judged
	EXPECT_DOUBLE_EQ(busiest_utilisation(u, {0}, {1}, 5, 5), 0.0);
}

TEST(ExperimentCollective, PortsByRole)
{
	std::vector<PortInfo> ports;
	for (const char *n : {"leaf1->h1_1", "leaf1->spine1", "leaf1->spine2", "spine1->leaf1", "spine2->leaf2",
			      "leaf2->spine1", "leaf2->h2_1", "leaf2->spine2"})
		ports.push_back({n, 10, false});
	DpLayout l = port_layout(ports, 2);
	EXPECT_EQ(l.downlinks, (std::vector<std::size_t>{0, 6}));
	EXPECT_EQ(l.spine_ports, (std::vector<std::size_t>{3, 4}));
	EXPECT_EQ(l.uplinks, (std::vector<std::size_t>{1, 2, 5, 7}));
	ASSERT_EQ(l.uplink_groups.size(), 2u);
	EXPECT_EQ(l.uplink_groups[1], (std::vector<std::size_t>{5, 7}));
}
