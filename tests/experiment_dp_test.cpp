// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/experiment_dp_test.cpp - datapath experiments without a testbed: the
// "datapath" part of a description (the built-in spray and its mistakes),
// and the analysis of a run (lumen-dp's --fct-csv, completion times, uplink
// imbalance, queues, packets into a dead link).
#include <gtest/gtest.h>

#include "base/error.h"
#include "base/system.h"
#include "experiment/experiment.h"
#include "experiment/experiment_dp.h"
#include "experiment_dp_test_util.h"

#include <nlohmann/json.hpp>

using namespace lumen;
using nlohmann::json;

namespace
{

json spray()
{
	return test::builtin_experiment("spray");
}

std::string parse_error(const json &doc)
{
	return test::parse_error(doc, "s.json");
}

using test::tick;

} // namespace

TEST(ExperimentDp, TheBuiltInSprayParses)
{
	ExperimentSpec s = parse_experiment(spray().dump(), "spray.json");
	EXPECT_TRUE(s.datapath.enabled);
	EXPECT_EQ(s.algorithms, (std::vector<std::string>{"ecmp", "ops", "reps", "reps-freeze"}));
	EXPECT_EQ(s.datapath.fail_leaf, 1u);
	EXPECT_EQ(s.datapath.fail_spine, 1u);
	EXPECT_EQ(s.datapath.message_size, 1u << 20);
	auto cases = experiment_cases(s);
	ASSERT_EQ(cases.size(), 2u);
	EXPECT_EQ(cases[1].name, "failure");
	// the failure keeps its place in a shorter run
	ExperimentSpec smoke = scale_to_duration(s, s.smoke_duration_ns);
	EXPECT_EQ(smoke.datapath.fail_at_ns * s.duration_ns / smoke.duration_ns, s.datapath.fail_at_ns);
	// config.json / results.json say what ran
	json out = json::parse(experiment_to_json(s));
	EXPECT_EQ(out["datapath"]["failure"]["link"], "leaf1-spine1");
	EXPECT_EQ(out["datapath"]["cc"], "dctcp");
}

TEST(ExperimentDp, MistakesAreNamed)
{
	json d = spray();
	d["algorithms"] = {"ops", "cubic"};
	EXPECT_NE(parse_error(d).find("unknown path policy 'cubic'"), std::string::npos) << parse_error(d);
	d = spray();
	d["datapath"]["failure"]["link"] = "leaf1-spine5";
	EXPECT_NE(parse_error(d).find("not a link leaf<1..2>-spine<1..4>"), std::string::npos) << parse_error(d);
	d = spray();
	d["datapath"]["failure"]["at"] = "30s";
	EXPECT_NE(parse_error(d).find("within the run"), std::string::npos) << parse_error(d);
	d = spray();
	d["topology"].erase("host_stack");
	EXPECT_NE(parse_error(d).find("host_stack"), std::string::npos) << parse_error(d);
	d = spray();
	d["phases"] = json::array();
	EXPECT_NE(parse_error(d).find("has no phases"), std::string::npos) << parse_error(d);
	d = spray();
	d["datapath"]["cc"] = "cubic";
	EXPECT_NE(parse_error(d).find("unknown congestion control"), std::string::npos) << parse_error(d);
	EXPECT_NE(parse_error(d).find("hpcc, timely"), std::string::npos) << parse_error(d);
	for (const char *cc : {"dctcp", "powertcp", "theta-powertcp", "hpcc", "timely"}) {
		d = spray();
		d["datapath"]["cc"] = cc;
		EXPECT_EQ(parse_experiment(d.dump(), "spray.json").datapath.cc, cc);
	}
	d = spray();
	d["datapath"]["pace"] = 1;
	EXPECT_NE(parse_error(d).find("pace"), std::string::npos) << parse_error(d);
	EXPECT_EQ(parse_path_policy_list("reps,ecmp"), (std::vector<std::string>{"reps", "ecmp"}));
	EXPECT_THROW(parse_path_policy_list("reps,reps"), UsageError);
	EXPECT_THROW(parse_path_policy_list("reps,"), UsageError);
}

TEST(ExperimentDp, FctCsvAndCompletionTimes)
{
	auto m = parse_fct_csv("host,conn,msg,bytes,posted_ns,done_ns\n"
			       "h1_1,1,0,1000,1000000,3000000\n"
			       "h1_1,1,1,1000,3000000,4000000\n"
			       "h1_2,2,0,1000,1000000,\n",
			       "f.csv");
	ASSERT_EQ(m.size(), 3u);
	EXPECT_FALSE(m[2].done);
	DpFct f = dp_fct(m, 11000000);
	EXPECT_EQ(f.completed, 2u);
	EXPECT_EQ(f.unfinished, 1u);
	EXPECT_DOUBLE_EQ(f.max_ms, 2.0);
	EXPECT_DOUBLE_EQ(f.p50_ms, 1.5);
	EXPECT_DOUBLE_EQ(f.unfinished_age_ms, 10.0);
	EXPECT_THROW(parse_fct_csv("conn,msg\n", "f.csv"), Error);
	EXPECT_THROW(parse_fct_csv("host,conn,msg,bytes,posted_ns,done_ns\nh,1,x\n", "f.csv"), Error);
	EXPECT_THROW(parse_fct_csv("host,conn,msg,bytes,posted_ns,done_ns\nh,1,0,1,9,3\n", "f.csv"), Error);
}

TEST(ExperimentDp, ImbalanceQueuesAndTheDeadLink)
{
	// two leaves of two uplinks: leaf 1 balanced, leaf 2 all on one
	std::vector<QueueTick> t = {tick(0, {0, 0, 0, 0}), tick(10, {100, 100, 200, 0}, {0, 5000, 0, 0}),
				    tick(20, {200, 200, 400, 0}, {0, 9000, 0, 0})};
	EXPECT_DOUBLE_EQ(dp_imbalance(t, {{0, 1}, {2, 3}}, 0, 20), 2.0);
	EXPECT_DOUBLE_EQ(dp_imbalance(t, {{0, 1}}, 0, 20), 1.0);
	EXPECT_DOUBLE_EQ(dp_imbalance(t, {{0, 1}}, 5, 15), 0.0); // one sample: no interval
	DpQueue q = dp_queue(t, {1});
	EXPECT_DOUBLE_EQ(q.max_kb, 9.0);
	// the count grows until 30 ms after the failure, then stays
	std::vector<std::pair<std::uint64_t, std::uint64_t>> d = {
		{1000'000'000, 50}, {1010'000'000, 60}, {1030'000'000, 70}, {1600'000'000, 70}};
	DpDeadLink k = dp_dead_link(d, 500'000'000);
	EXPECT_EQ(k.total, 20u);
	EXPECT_DOUBLE_EQ(k.last_ms, 30.0);
	EXPECT_TRUE(k.stopped);
	d.back().second = 71; // still growing at the end
	EXPECT_FALSE(dp_dead_link(d, 500'000'000).stopped);
}
