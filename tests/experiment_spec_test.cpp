// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// Experiment descriptions (userspace/experiment/experiment.h): what parses, and
// that every mistake is refused with a message naming the file, the JSON
// path and the problem.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "experiment/experiment.h"

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
	EXPECT_FALSE(is_bpf_algorithm("cubic"));
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
