// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// Experiment descriptions (userspace/experiment/experiment.h): what parses, and
// that every mistake is refused with a message naming the file, the JSON
// path and the problem.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "base/error.h"
#include "experiment/experiment.h"
#include "experiment/experiment_run.h"
#include "testbed/testbed.h"

using namespace lumen;

namespace
{

const char kValid[] = R"({
  "name": "t1", "description": "two flows and a burst",
  "topology": {"topology": "dumbbell", "senders": 3},
  "algorithms": ["bpf_powertcp", "cubic"],
  "duration": "10s", "smoke_duration": 2, "warmup": "1s",
  "cc_params": {"gamma": 0.9},
  "phases": [
    {"name": "long", "kind": "long", "from": ["s1", "s2"], "to": "r1", "duration": "10s"},
    {"name": "burst", "kind": "incast", "from": ["s3"], "to": ["r1"], "start": "4s",
     "size": "64k", "bursts": 3, "period": "2s"}
  ]
})";

std::string error_of(const std::string &text)
{
	try {
		parse_experiment(text, "x.json");
	} catch (const UsageError &e) {
		return e.what();
	}
	return "(accepted)";
}

// kValid with one substring replaced.
std::string variant(const std::string &from, const std::string &to)
{
	std::string s = kValid;
	auto pos = s.find(from);
	EXPECT_NE(pos, std::string::npos) << from;
	return s.replace(pos, from.size(), to);
}

} // namespace

TEST(ExperimentSpec, ParsesAValidDescription)
{
	ExperimentSpec s = parse_experiment(kValid, "x.json");
	EXPECT_EQ(s.name, "t1");
	EXPECT_EQ(s.algorithms, (std::vector<std::string>{"bpf_powertcp", "cubic"}));
	EXPECT_EQ(s.duration_ns, 10'000'000'000u);
	EXPECT_EQ(s.smoke_duration_ns, 2'000'000'000u);
	EXPECT_EQ(s.warmup_ns, 1'000'000'000u);
	EXPECT_EQ(s.cc_params.at("gamma"), "0.9");
	EXPECT_EQ(s.int_version, 1u); // the default
	EXPECT_EQ(parse_experiment(variant("\"cc_params\"", "\"int_version\": 2, \"cc_params\""), "x.json").int_version,
		  2u);
	ASSERT_EQ(s.phases.size(), 2u);
	EXPECT_EQ(s.phases[0].kind, PhaseKind::Long);
	EXPECT_EQ(s.phases[0].to, (std::vector<std::string>{"r1"}));
	EXPECT_EQ(s.phases[0].flows, 1u);
	EXPECT_EQ(s.phases[1].kind, PhaseKind::Incast);
	EXPECT_EQ(s.phases[1].size_bytes, 65536u);
	EXPECT_EQ(s.phases[1].end_ns(), 8'000'000'000u); // last burst at 4 + 2 * 2 s
	EXPECT_NE(s.topology_json.find("dumbbell"), std::string::npos);
	auto cases = experiment_cases(s);
	ASSERT_EQ(cases.size(), 1u);
	EXPECT_EQ(cases[0].name, "run");
	// the JSON written back parses again to the same experiment
	EXPECT_NE(experiment_to_json(s).find("\"burst\""), std::string::npos);
}

TEST(ExperimentSpec, RefusesMistakesNamingWhere)
{
	struct Case {
		std::string text, expect;
	};
	std::vector<Case> cases = {
		{"{", "x.json: not valid JSON"},
		{variant("\"smoke_duration\": 2", "\"smoke_duration\": 1e309"), "x.json: not valid JSON"},
		{variant("\"smoke_duration\": 2", "\"smoke_duration\": -1e309"), "x.json: not valid JSON"},
		{"[]", "x.json: expected an object"},
		{variant("\"name\": \"t1\",", ""), "missing key \"name\""},
		{variant("\"t1\"", "\"T 1\""), "name: 'T 1' is not a name"},
		{variant("\"warmup\"", "\"warmpu\""), "x.json: warmpu: unknown key"},
		{variant("\"cubic\"]", "\"cubic\", \"cubic\"]"), "algorithms[2]: 'cubic' is listed twice"},
		{variant("\"cubic\"]", "\"Cubic!\"]"), "is not a congestion control name"},
		{variant("\"algorithms\": [\"bpf_powertcp\", \"cubic\"]", "\"algorithms\": []"),
		 "algorithms: expected a non-empty list"},
		{variant("\"duration\": \"10s\"", "\"duration\": \"10 parsecs\""), "duration"},
		{variant("\"smoke_duration\": 2", "\"smoke_duration\": 20"), "smoke_duration: must be above 0"},
		{variant("\"warmup\": \"1s\"", "\"warmup\": \"10s\""), "warmup: the warm-up must be shorter"},
		{variant("\"kind\": \"long\"", "\"kind\": \"short\""), "phases[0].kind: unknown phase kind 'short'"},
		{variant("\"to\": \"r1\"", "\"to\": []"), "phases[0].to: expected a host selector"},
		{variant("\"to\": \"r1\",", ""), "phases[0]: missing key \"to\""},
		{variant("\"size\": \"64k\", ", ""), "phases[1]: missing key \"size\""},
		{variant("\"bursts\": 3", "\"bursts\": 0"), "phases[1].bursts: expected a whole number"},
		{variant("\"bursts\": 3", "\"bursts\": 5"), "phases[1]: ends at 12"},
		{variant("\"period\": \"2s\"", "\"period\": \"2s\", \"load\": 0.5"), "phases[1].load: unknown key"},
		{variant("\"name\": \"burst\"", "\"name\": \"long\""), "phase name 'long' is used twice"},
		{variant("{\"gamma\": 0.9}", "{\"host-bw\": \"1gbit\"}"), "cc_params.host-bw: not a parameter"},
		{variant("\"cc_params\"", "\"int_version\": 3, \"cc_params\""),
		 "int_version: the INT option version: 1"},
		{variant("\"cc_params\"", "\"int_version\": \"2\", \"cc_params\""),
		 "int_version: the INT option version"},
		{variant("\"warmup\": \"1s\",", "\"warmup\": \"1s\", \"loads\": [0.5],"),
		 "loads: a load sweep needs at least one poisson phase"},
	};
	for (const auto &c : cases)
		EXPECT_NE(error_of(c.text).find(c.expect), std::string::npos)
			<< "got: " << error_of(c.text) << "\nwanted: " << c.expect;
}

TEST(ExperimentSpec, PoissonPhasesAndLoadSweeps)
{
	std::string poisson = R"({"name": "w", "topology": {"topology": "leafspine"}, "algorithms": ["cubic"],
	  "duration": 10, "loads": [0.2, 0.5],
	  "phases": [{"name": "web", "kind": "poisson", "from": "hosts", "to": "hosts",
	              "duration": 10, "workload": "websearch"}]})";
	ExperimentSpec s = parse_experiment(poisson, "w.json");
	auto cases = experiment_cases(s);
	ASSERT_EQ(cases.size(), 2u);
	EXPECT_EQ(cases[0].name, "load20");
	EXPECT_DOUBLE_EQ(cases[0].load, 0.2);
	EXPECT_EQ(cases[1].name, "load50");

	std::string own_load = poisson;
	own_load.replace(own_load.find("\"workload\""), 10, "\"load\": 0.3, \"workload\"");
	EXPECT_NE(error_of(own_load).find("must not set its own load"), std::string::npos) << error_of(own_load);

	std::string no_sweep = poisson;
	no_sweep.replace(no_sweep.find("\"loads\": [0.2, 0.5],"), 20, "");
	EXPECT_NE(error_of(no_sweep).find("phases[0]: missing key \"load\""), std::string::npos) << error_of(no_sweep);
	std::string too_much = no_sweep;
	too_much.replace(too_much.find("\"workload\""), 10, "\"load\": 1.5, \"workload\"");
	EXPECT_NE(error_of(too_much).find("phases[0].load: expected a load within (0, 1]"), std::string::npos)
		<< error_of(too_much);
}

TEST(ExperimentSpec, SenderSweeps)
{
	std::string sweep =
		R"({"name": "b", "topology": {"topology": "dumbbell", "senders": 4}, "algorithms": ["cubic"],
	  "duration": 10, "sender_counts": [2, 4],
	  "phases": [{"name": "long", "kind": "long", "from": "senders", "to": "r1", "duration": 10},
	             {"name": "burst", "kind": "incast", "from": "senders", "to": "r1", "start": 2,
	              "size": "64k", "bursts": 1, "period": 1}]})";
	ExperimentSpec s = parse_experiment(sweep, "b.json");
	auto cases = experiment_cases(s);
	ASSERT_EQ(cases.size(), 2u);
	EXPECT_EQ(cases[0].name, "senders2");
	EXPECT_EQ(cases[0].senders, 2u);
	EXPECT_EQ(cases[1].name, "senders4");
	EXPECT_NE(experiment_to_json(s).find("\"sender_counts\""), std::string::npos);

	// a long phase takes the first N of its hosts; other kinds keep theirs
	std::vector<HostRef> hosts = {{"s1", "sender"}, {"s2", "sender"}, {"s3", "sender"}, {"r1", "receiver"}};
	EXPECT_EQ(phase_senders(s.phases[0], cases[0], hosts, "from"), (std::vector<std::string>{"s1", "s2"}));
	EXPECT_EQ(phase_senders(s.phases[1], cases[0], hosts, "from").size(), 3u);
	try {
		phase_senders(s.phases[0], cases[1], hosts, "phase long: from");
		ADD_FAILURE() << "4 senders out of 3 accepted";
	} catch (const UsageError &e) {
		EXPECT_NE(std::string(e.what()).find("phase long: from: case senders4 needs 4 senders, the selectors "
						     "name 3"),
			  std::string::npos)
			<< e.what();
	}

	auto refused = [](std::string text, const std::string &from, const std::string &to) {
		text.replace(text.find(from), from.size(), to);
		return error_of(text);
	};
	EXPECT_NE(refused(sweep, "[2, 4]", "[2, 2]").find("sender_counts[1]: sender count listed twice"),
		  std::string::npos);
	EXPECT_NE(refused(sweep, "[2, 4]", "[0]").find("sender_counts[0]: expected a whole number within 1..1000"),
		  std::string::npos);
	EXPECT_NE(refused(sweep, "[2, 4]", "[]").find("sender_counts: expected a non-empty list"), std::string::npos);
	EXPECT_NE(refused(sweep, "\"sender_counts\"", "\"loads\": [0.5], \"sender_counts\"")
			  .find("sender_counts: one sweep per experiment"),
		  std::string::npos);
	EXPECT_NE(refused(sweep,
			  "{\"name\": \"long\", \"kind\": \"long\", \"from\": \"senders\", \"to\": \"r1\", "
			  "\"duration\": 10},",
			  "")
			  .find("sender_counts: a sender sweep needs at least one long phase"),
		  std::string::npos);
}

TEST(ExperimentSpec, ScalesEveryTime)
{
	ExperimentSpec s = parse_experiment(kValid, "x.json");
	ExperimentSpec half = scale_to_duration(s, 5'000'000'000);
	EXPECT_EQ(half.duration_ns, 5'000'000'000u);
	EXPECT_EQ(half.warmup_ns, 500'000'000u);
	EXPECT_EQ(half.phases[0].duration_ns, 5'000'000'000u);
	EXPECT_EQ(half.phases[1].start_ns, 2'000'000'000u);
	EXPECT_EQ(half.phases[1].period_ns, 1'000'000'000u);
	EXPECT_EQ(half.phases[1].bursts, 3u); // counts and sizes stay
	EXPECT_EQ(half.phases[1].size_bytes, 65536u);
	EXPECT_THROW(scale_to_duration(s, 0), UsageError);
}

TEST(ExperimentSpec, AlgorithmLists)
{
	EXPECT_EQ(parse_algorithm_list("cubic,bbr"), (std::vector<std::string>{"cubic", "bbr"}));
	EXPECT_THROW(parse_algorithm_list(""), UsageError);
	EXPECT_THROW(parse_algorithm_list("cubic,"), UsageError);
	EXPECT_THROW(parse_algorithm_list("cubic,cubic"), UsageError);
	EXPECT_THROW(parse_algorithm_list("a_very_long_algorithm_name"), UsageError);
	EXPECT_TRUE(is_bpf_algorithm("bpf_powertcp"));
	EXPECT_TRUE(is_bpf_algorithm("bpf_theta_ptcp"));
	EXPECT_TRUE(is_bpf_algorithm("bpf_hpcc"));
	EXPECT_TRUE(is_bpf_algorithm("bpf_timely"));
	EXPECT_FALSE(is_bpf_algorithm("hpcc")); // the module's
	EXPECT_FALSE(is_bpf_algorithm("cubic"));
	EXPECT_NE(std::string(bpf_algorithm_list()).find("bpf_timely"), std::string::npos);
	EXPECT_NE(error_of(variant("\"cubic\"]", "\"Cubic!\"]")).find("bpf_hpcc, bpf_timely"), std::string::npos);
}

TEST(ExperimentSeeds, KeyAndOption)
{
	EXPECT_EQ(parse_experiment(kValid, "x.json").seeds, (std::vector<std::uint64_t>{1})); // the default
	ExperimentSpec s = parse_experiment(variant("\"cc_params\"", "\"seeds\": [3, 1, 2], \"cc_params\""), "x.json");
	EXPECT_EQ(s.seeds, (std::vector<std::uint64_t>{3, 1, 2}));
	EXPECT_NE(experiment_to_json(s).find("\"seeds\""), std::string::npos);
	struct Case {
		std::string seeds, expect;
	};
	std::vector<Case> cases = {
		{"[]", "x.json: seeds: expected a non-empty list of at most 100 seeds within 1..1000000"},
		{"1", "seeds: expected a non-empty list"},
		{"[0]", "seeds[0]: expected a whole number within 1..1000000"},
		{"[1000001]", "seeds[0]: expected a whole number within 1..1000000"},
		{"[1.5]", "seeds[0]: expected a whole number"},
		{"[\"1\"]", "seeds[0]: expected a whole number"},
		{"[1, 2, 1]", "seeds[2]: seed 1 is listed twice"},
	};
	for (const auto &c : cases) {
		std::string e = error_of(variant("\"cc_params\"", "\"seeds\": " + c.seeds + ", \"cc_params\""));
		EXPECT_NE(e.find(c.expect), std::string::npos) << "got: " << e << "\nwanted: " << c.expect;
	}
	EXPECT_EQ(parse_seed_list("1,2,3"), (std::vector<std::uint64_t>{1, 2, 3}));
	EXPECT_EQ(parse_seed_list("7"), (std::vector<std::uint64_t>{7}));
	for (const char *bad : {"", "1,", "1,1", "0", "1000001", "a", "-1", "1.5"})
		EXPECT_THROW(parse_seed_list(bad), UsageError) << bad;

	// --seeds replaces the description's; --smoke keeps only the first
	RunOptions o;
	EXPECT_EQ(resolve_experiment(s, o).seeds, (std::vector<std::uint64_t>{3, 1, 2}));
	o.seeds = {5, 6};
	EXPECT_EQ(resolve_experiment(s, o).seeds, (std::vector<std::uint64_t>{5, 6}));
	o.smoke = true;
	EXPECT_EQ(resolve_experiment(s, o).seeds, (std::vector<std::uint64_t>{5}));
	o.seeds.clear();
	EXPECT_EQ(resolve_experiment(s, o).seeds, (std::vector<std::uint64_t>{3}));
}

// The generators' seeds: a function of the run's seed, the phase and the
// sender only (so every algorithm of a seed runs the same flows), the same
// as before seeds existed for seed 1, and never the same for two
// (seed, phase, sender) of any description.
TEST(ExperimentSeeds, TrafficSeedsPerRunSeed)
{
	EXPECT_EQ(traffic_seed(1, 0, 0), 1001u);
	EXPECT_EQ(traffic_seed(1, 1, 4), 2005u);
	std::set<std::uint64_t> seen;
	for (std::uint64_t seed : {1, 2, 3, 1000000})
		for (std::size_t p = 0; p < 20; p++)
			for (std::size_t h = 0; h < 64; h++)
				EXPECT_TRUE(seen.insert(traffic_seed(seed, p, h)).second)
					<< seed << " " << p << " " << h;
	EXPECT_NE(traffic_seed(1, 0, 0), traffic_seed(2, 0, 0));
	EXPECT_EQ(traffic_seed(2, 3, 4), traffic_seed(2, 3, 4)); // no other input (algorithm) exists
}

TEST(ExperimentSeeds, LoadScale)
{
	ExperimentSpec s = parse_experiment(variant("\"cc_params\"", "\"load_scale\": 0.25, \"cc_params\""), "x.json");
	EXPECT_DOUBLE_EQ(s.load_scale, 0.25);
	EXPECT_DOUBLE_EQ(parse_experiment(kValid, "x.json").load_scale, 1.0);
	for (const char *bad : {"0", "1.5", "\"0.5\"", "-0.1"})
		EXPECT_NE(error_of(variant("\"cc_params\"", std::string("\"load_scale\": ") + bad + ", \"cc_params\""))
				  .find("load_scale: expected a factor within (0, 1]"),
			  std::string::npos)
			<< bad;
}

// TIMELY's thresholds from tau: the TIMELY paper's 2.5x and 25x its minimum RTT.
TEST(ExperimentSeeds, TimelyThresholdsFromTau)
{
	EXPECT_EQ(timely_t_low_ns(20'000), 50'000u); // the paper's 20 us -> 50 us, 500 us
	EXPECT_EQ(timely_t_high_ns(20'000), 500'000u);
	EXPECT_EQ(timely_t_low_ns(200'000), 500'000u);
	EXPECT_EQ(timely_t_high_ns(200'000), 5'000'000u);
}

// --rate and --delay: the shared link (dumbbell: the bottleneck; leaf-spine:
// the fabric), validated as the spec is; a bad value changes nothing.
TEST(ExperimentOverrides, RateAndDelayOfTheSharedLink)
{
	const TopologySpec dumbbell = parse_topology(
		R"({"topology": "dumbbell", "senders": 2, "bottleneck": {"rate": "1gbit", "buffer": "1m"}})");
	RunOptions o;
	TopologySpec t = dumbbell;
	apply_link_overrides(t, o);
	EXPECT_EQ(t.bottleneck.rate_mbps, 1000u);
	EXPECT_EQ(t.bottleneck.delay_ns, 0u);
	o.delay_ns = 250'000;
	apply_link_overrides(t, o);
	EXPECT_EQ(t.bottleneck.delay_ns, 250'000u);
	EXPECT_EQ(t.bottleneck.rate_mbps, 1000u);
	EXPECT_EQ(t.host_link.delay_ns, 0u);
	o.rate_mbps = 100;
	apply_link_overrides(t, o);
	EXPECT_EQ(t.bottleneck.rate_mbps, 100u);

	TopologySpec ls = parse_topology(R"({"topology": "leafspine", "leaves": 2, "spines": 2, "hosts_per_leaf": 1,
					     "fabric_link": {"rate": "1gbit"}})");
	apply_link_overrides(ls, o);
	EXPECT_EQ(ls.fabric_link.delay_ns, 250'000u);
	EXPECT_EQ(ls.fabric_link.rate_mbps, 100u);
	EXPECT_EQ(ls.host_link.delay_ns, 0u);

	o.rate_mbps.reset();
	o.delay_ns = 500; // below a delay line's 1 us
	t = dumbbell;
	try {
		apply_link_overrides(t, o);
		ADD_FAILURE() << "a 500 ns delay was accepted";
	} catch (const UsageError &e) {
		EXPECT_NE(std::string(e.what()).find("--delay"), std::string::npos) << e.what();
	}
	EXPECT_EQ(t.bottleneck.delay_ns, 0u);
}

const char kSuite[] = R"({
  "name": "s", "description": "a suite", "suite": ["a/web", "a/inc"],
  "algorithms": ["bpf_powertcp", "bpf_hpcc"], "seeds": [1, 2],
  "smoke": {"members": ["web"], "algorithms": ["bpf_powertcp"], "loads": [0.6]},
  "claims": [{"id": "c1", "text": "t", "source": "L1", "member": "web", "cases": ["load60"],
              "metric": "fct.short.p999", "algo": "bpf_powertcp", "vs": "bpf_hpcc", "thesis": -0.33,
              "expect": "lower"}]
})";

TEST(ExperimentSuite, ParsesAndRefuses)
{
	ExperimentSpec s = parse_experiment(kSuite, "s.json");
	EXPECT_TRUE(s.is_suite());
	EXPECT_EQ(s.suite, (std::vector<std::string>{"a/web", "a/inc"}));
	EXPECT_EQ(s.seeds, (std::vector<std::uint64_t>{1, 2}));
	EXPECT_EQ(s.suite_smoke.members, (std::vector<std::string>{"web"}));
	EXPECT_EQ(s.suite_smoke.loads, (std::vector<double>{0.6}));
	ASSERT_EQ(s.claims.size(), 1u);
	EXPECT_EQ(s.claims[0].cases, (std::vector<std::string>{"load60"}));
	EXPECT_DOUBLE_EQ(*s.claims[0].thesis, -0.33);
	EXPECT_NE(experiment_to_json(s).find("\"suite\""), std::string::npos); // config of a suite (no topology)
	auto refused = [](const std::string &from, const std::string &to) {
		std::string t = kSuite;
		t.replace(t.find(from), from.size(), to);
		try {
			parse_experiment(t, "s.json");
		} catch (const UsageError &e) {
			return std::string(e.what());
		}
		return std::string("(accepted)");
	};
	EXPECT_NE(refused("\"suite\": [\"a/web\", \"a/inc\"]", "\"suite\": []")
			  .find("s.json: suite: expected a non-empty"),
		  std::string::npos);
	EXPECT_NE(refused("\"a/inc\"", "\"../x\"").find("suite[1]: '../x' is not a member"), std::string::npos);
	EXPECT_NE(refused("\"a/inc\"", "\"a/web\"").find("suite[1]: 'a/web' is listed twice"), std::string::npos);
	EXPECT_NE(refused("\"seeds\": [1, 2]", "\"seeds\": [0]").find("seeds[0]"), std::string::npos);
	EXPECT_NE(refused("\"description\"", "\"duration\": 3, \"description\"").find("duration: unknown key"),
		  std::string::npos);
	EXPECT_NE(refused("\"lower\"", "\"less\"").find("claims[0].expect: expected lower, higher or similar"),
		  std::string::npos);
	EXPECT_NE(refused("\"vs\": \"bpf_hpcc\"", "\"vs\": \"bpf_powertcp\"").find("claims[0].vs: compares"),
		  std::string::npos);
	EXPECT_NE(refused("-0.33", "\"-33%\"").find("claims[0].thesis: expected the thesis' relative difference"),
		  std::string::npos);
	EXPECT_NE(refused("\"cases\": [\"load60\"]", "\"cases\": []").find("claims[0].cases: expected a non-empty"),
		  std::string::npos);
	EXPECT_NE(refused("\"loads\": [0.6]", "\"loads\": [0.6], \"seeds\": [1]").find("smoke.seeds: unknown key"),
		  std::string::npos);
}

// The built-in thesis suite: its members load, get the suite's algorithms
// and seeds, --smoke runs the smoke's member, algorithms and load; every
// claim names a member, a case it has and algorithms it runs.
TEST(ExperimentSuite, BuiltinThesis)
{
	ExperimentSpec t = load_experiment("thesis");
	ASSERT_TRUE(t.is_suite());
	EXPECT_EQ(t.seeds, (std::vector<std::uint64_t>{1, 2, 3}));
	auto members = suite_members(t, false);
	ASSERT_EQ(members.size(), 2u);
	EXPECT_EQ(members[0].name, "thesis-websearch");
	EXPECT_EQ(members[1].name, "thesis-incast");
	for (const auto &m : members) {
		EXPECT_EQ(m.algorithms, t.algorithms);
		EXPECT_EQ(m.seeds, t.seeds);
	}
	EXPECT_EQ(experiment_cases(members[0]).size(), 3u);
	EXPECT_DOUBLE_EQ(members[0].load_scale, 0.25);
	for (const auto &c : t.claims) {
		auto m = std::find_if(members.begin(), members.end(),
				      [&c](const ExperimentSpec &s) { return s.name == c.member; });
		ASSERT_NE(m, members.end()) << c.id;
		auto cases = experiment_cases(*m);
		for (const auto &cs : c.cases)
			EXPECT_TRUE(std::any_of(cases.begin(), cases.end(),
						[&cs](const ExperimentCase &x) { return x.name == cs; }))
				<< c.id << " " << cs;
		for (const auto &a : {c.algo, c.vs})
			EXPECT_NE(std::find(t.algorithms.begin(), t.algorithms.end(), a), t.algorithms.end()) << c.id;
	}
	auto smoke = suite_members(t, true);
	ASSERT_EQ(smoke.size(), 1u);
	EXPECT_EQ(smoke[0].name, "thesis-websearch");
	EXPECT_EQ(smoke[0].algorithms, (std::vector<std::string>{"bpf_powertcp", "bpf_hpcc"}));
	EXPECT_EQ(smoke[0].loads, (std::vector<double>{0.6}));
	RunOptions o;
	o.smoke = true;
	EXPECT_EQ(resolve_experiment(smoke[0], o).seeds.size(), 1u);
}

// The built-ins that compare algorithms default to the thesis' baselines.
TEST(ExperimentSuite, BuiltinAlgorithms)
{
	std::vector<std::string> six = {"bpf_powertcp", "bpf_theta_ptcp", "bpf_hpcc", "bpf_timely", "cubic", "bbr"};
	for (const char *name : {"incast", "websearch", "fairness"})
		EXPECT_EQ(load_experiment(name).algorithms, six) << name;
	EXPECT_EQ(load_experiment("quick").algorithms, (std::vector<std::string>{"bpf_powertcp", "bpf_hpcc", "cubic"}));
	auto shallow = load_experiment("shallow").algorithms;
	EXPECT_NE(std::find(shallow.begin(), shallow.end(), "bpf_timely"), shallow.end());
}

TEST(HostSelectors, NamesRangesAndRoles)
{
	std::vector<HostRef> hosts = {
		{"s1", "sender"}, {"s2", "sender"}, {"s3", "sender"}, {"s10", "sender"}, {"r1", "receiver"}};
	EXPECT_EQ(expand_hosts({"s2..s3", "s1"}, hosts, "from"), (std::vector<std::string>{"s2", "s3", "s1"}));
	EXPECT_EQ(expand_hosts({"senders"}, hosts, "from"), (std::vector<std::string>{"s1", "s2", "s3", "s10"}));
	EXPECT_EQ(expand_hosts({"receivers", "r1"}, hosts, "to"), (std::vector<std::string>{"r1"}));
	EXPECT_EQ(expand_hosts({"hosts"}, hosts, "to").size(), 5u);
	auto msg = [&](const std::vector<std::string> &sel) {
		try {
			expand_hosts(sel, hosts, "phase p: from");
		} catch (const UsageError &e) {
			return std::string(e.what());
		}
		return std::string("(accepted)");
	};
	EXPECT_NE(msg({"s4"}).find("phase p: from: the testbed has no host 's4' (hosts: s1 s2 s3 s10 r1)"),
		  std::string::npos);
	EXPECT_NE(msg({"s1..s4"}).find("no host 's4'"), std::string::npos); // s4 missing inside the range
	EXPECT_NE(msg({"s3..s1"}).find("is not a host range"), std::string::npos);
	EXPECT_NE(msg({"s1..r1"}).find("is not a host range"), std::string::npos);
	std::vector<HostRef> leafspine = {{"h1_1", "host"}, {"h1_2", "host"}};
	EXPECT_EQ(expand_hosts({"h1_1..h1_2"}, leafspine, "to"), (std::vector<std::string>{"h1_1", "h1_2"}));
	try {
		expand_hosts({"senders"}, leafspine, "from");
		ADD_FAILURE() << "a leaf-spine has no senders";
	} catch (const UsageError &e) {
		EXPECT_NE(std::string(e.what()).find("the testbed has no senders"), std::string::npos);
	}
}
