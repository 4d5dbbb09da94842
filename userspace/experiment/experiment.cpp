// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/experiment/experiment.cpp - parsing and validating experiment
// descriptions (experiment.h).
#include "experiment/experiment.h"

#include "base/error.h"
#include "base/json_fields.h"
#include "base/list.h"
#include "base/units.h"
#include "experiment/experiment_fields.h"
#include "testbed/testbed.h"

#include <nlohmann/json.hpp>

extern "C" {
#include <lumen/path_policy.h>
}

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <set>

namespace lumen
{

// the helpers experiment_study.cpp shares (experiment_fields.h), and the
// rest of the parser's pieces
namespace spec_fields
{

using nlohmann::json;
using namespace json_fields;

constexpr std::uint64_t kMaxDurationNs = 3600ull * 1000000000ull; // one hour per run
constexpr std::uint64_t kMaxIncastBytes = 1ull << 30;
constexpr std::uint32_t kMaxFlowsPerSender = 64;
constexpr std::uint32_t kMaxBursts = 10000;

std::uint64_t get_duration(const json &v, const Where &w)
{
	if (v.is_number()) {
		double s = v.get<double>();
		if (!(s >= 0) || s * 1e9 > double(kMaxDurationNs))
			w.fail("a time in seconds must be within 0..3600");
		return static_cast<std::uint64_t>(std::llround(s * 1e9));
	}
	if (!v.is_string())
		w.fail("expected a time (\"20s\", \"500ms\" or a number of seconds), got " + kind_of(v));
	try {
		return parse_duration_ns(v.get<std::string>(), w.path, kMaxDurationNs);
	} catch (const UsageError &e) {
		w.fail(e.what());
	}
}

std::uint64_t get_uint(const json &v, const Where &w, std::uint64_t min, std::uint64_t max)
{
	if (!v.is_number_unsigned() || v.get<std::uint64_t>() < min || v.get<std::uint64_t>() > max)
		w.fail("expected a whole number within " + std::to_string(min) + ".." + std::to_string(max));
	return v.get<std::uint64_t>();
}

double get_load(const json &v, const Where &w)
{
	if (!v.is_number() || !(v.get<double>() > 0) || v.get<double>() > 1)
		w.fail("expected a load within (0, 1] (fraction of the sender's link rate)");
	return v.get<double>();
}

std::uint64_t get_bytes(const json &v, const Where &w, std::uint64_t max)
{
	if (v.is_number_unsigned()) {
		if (v.get<std::uint64_t>() == 0 || v.get<std::uint64_t>() > max)
			w.fail("expected 1.." + std::to_string(max) + " bytes");
		return v.get<std::uint64_t>();
	}
	if (!v.is_string())
		w.fail("expected a size (\"64k\", \"1m\" or a number of bytes), got " + kind_of(v));
	try {
		std::uint64_t b = parse_bytes(v.get<std::string>(), w.path, max);
		if (b == 0)
			w.fail("a size must be at least one byte");
		return b;
	} catch (const UsageError &e) {
		w.fail(e.what());
	}
}

std::vector<std::string> get_selectors(const json &v, const Where &w)
{
	if (v.is_string())
		return {get_string(v, w)};
	if (!v.is_array() || v.empty())
		w.fail("expected a host selector or a non-empty list of them (\"s1\", \"s2..s5\", \"senders\")");
	std::vector<std::string> out;
	for (std::size_t i = 0; i < v.size(); i++) {
		std::string s = get_string(v[i], w.at(i));
		if (s.empty())
			w.at(i).fail("empty host selector");
		out.push_back(s);
	}
	return out;
}

PhaseKind get_phase_kind(const json &v, const Where &w)
{
	std::string s = get_string(v, w);
	if (s == "long")
		return PhaseKind::Long;
	if (s == "poisson")
		return PhaseKind::Poisson;
	if (s == "incast")
		return PhaseKind::Incast;
	w.fail("unknown phase kind '" + s + "' (long, poisson or incast)");
}

void parse_long_phase(const json &p, const Where &w, PhaseSpec &ph)
{
	allow_keys(p, w, {"name", "kind", "from", "to", "start", "duration", "flows"});
	ph.duration_ns = get_duration(require(p, w, "duration"), w.at("duration"));
	if (ph.duration_ns == 0)
		w.at("duration").fail("a long phase needs a duration above 0");
	if (p.contains("flows"))
		ph.flows = static_cast<std::uint32_t>(get_uint(p["flows"], w.at("flows"), 1, kMaxFlowsPerSender));
}

void parse_poisson_phase(const json &p, const Where &w, PhaseSpec &ph, bool swept)
{
	allow_keys(p, w, {"name", "kind", "from", "to", "start", "duration", "workload", "load", "max_flows"});
	ph.duration_ns = get_duration(require(p, w, "duration"), w.at("duration"));
	if (ph.duration_ns == 0)
		w.at("duration").fail("a poisson phase needs a duration above 0");
	ph.workload = get_string(require(p, w, "workload"), w.at("workload"));
	if (ph.workload.empty())
		w.at("workload").fail("empty workload (websearch, datamining or a CSV file)");
	if (swept && p.contains("load"))
		w.at("load").fail("the experiment sweeps \"loads\": a poisson phase must not set its own load");
	if (!swept)
		ph.load = get_load(require(p, w, "load"), w.at("load"));
	if (p.contains("max_flows"))
		ph.max_flows = get_uint(p["max_flows"], w.at("max_flows"), 1, 10'000'000);
}

void parse_incast_phase(const json &p, const Where &w, PhaseSpec &ph)
{
	allow_keys(p, w, {"name", "kind", "from", "to", "start", "size", "bursts", "period"});
	ph.size_bytes = get_bytes(require(p, w, "size"), w.at("size"), kMaxIncastBytes);
	ph.bursts = static_cast<std::uint32_t>(get_uint(require(p, w, "bursts"), w.at("bursts"), 1, kMaxBursts));
	ph.period_ns = get_duration(require(p, w, "period"), w.at("period"));
	if (ph.period_ns == 0)
		w.at("period").fail("the burst period must be above 0");
}

PhaseSpec parse_phase(const json &p, const Where &w, bool swept)
{
	if (!p.is_object())
		w.fail("expected a phase object, got " + kind_of(p));
	PhaseSpec ph;
	ph.name = get_name(require(p, w, "name"), w.at("name"), 24);
	ph.kind = get_phase_kind(require(p, w, "kind"), w.at("kind"));
	ph.from = get_selectors(require(p, w, "from"), w.at("from"));
	ph.to = get_selectors(require(p, w, "to"), w.at("to"));
	if (p.contains("start"))
		ph.start_ns = get_duration(p["start"], w.at("start"));
	switch (ph.kind) {
	case PhaseKind::Long:
		parse_long_phase(p, w, ph);
		break;
	case PhaseKind::Poisson:
		parse_poisson_phase(p, w, ph, swept);
		break;
	case PhaseKind::Incast:
		parse_incast_phase(p, w, ph);
		break;
	}
	return ph;
}

// A non-empty JSON list of names, each checked by `check` (which fails at
// its Where), none twice.
std::vector<std::string> get_names(const json &v, const Where &w, const std::string &expected,
				   const std::function<void(const std::string &, const Where &)> &check)
{
	if (!v.is_array() || v.empty())
		w.fail("expected a non-empty list of " + expected);
	std::vector<std::string> out;
	for (std::size_t i = 0; i < v.size(); i++) {
		std::string a = get_string(v[i], w.at(i));
		check(a, w.at(i));
		if (std::find(out.begin(), out.end(), a) != out.end())
			w.at(i).fail("'" + a + "' is listed twice");
		out.push_back(a);
	}
	return out;
}

std::vector<std::string> get_algorithms(const json &v, const Where &w)
{
	return get_names(v, w, "congestion control names", [](const std::string &a, const Where &at) {
		check_algorithm_name(a, at.source + ": " + at.path);
	});
}

std::vector<double> get_loads(const json &v, const Where &w)
{
	if (!v.is_array() || v.empty())
		w.fail("expected a non-empty list of loads within (0, 1]");
	std::vector<double> out;
	for (std::size_t i = 0; i < v.size(); i++) {
		double l = get_load(v[i], w.at(i));
		if (std::find(out.begin(), out.end(), l) != out.end())
			w.at(i).fail("load listed twice");
		out.push_back(l);
	}
	return out;
}

std::vector<std::uint32_t> get_sender_counts(const json &v, const Where &w)
{
	if (!v.is_array() || v.empty())
		w.fail("expected a non-empty list of sender counts within 1..1000");
	std::vector<std::uint32_t> out;
	for (std::size_t i = 0; i < v.size(); i++) {
		auto n = static_cast<std::uint32_t>(get_uint(v[i], w.at(i), 1, 1000));
		if (std::find(out.begin(), out.end(), n) != out.end())
			w.at(i).fail("sender count listed twice");
		out.push_back(n);
	}
	return out;
}

std::map<std::string, std::string> get_cc_params(const json &v, const Where &w)
{
	if (!v.is_object())
		w.fail("expected an object of `lumen cc set` parameters ({\"gamma\": \"0.9\"})");
	std::map<std::string, std::string> out;
	for (const auto &item : v.items()) {
		static const std::vector<std::string> known = {"gamma", "flows", "beta"};
		if (std::find(known.begin(), known.end(), item.key()) == known.end())
			w.at(item.key())
				.fail("not a parameter the runner lets an experiment set (gamma, flows, beta; host-bw "
				      "and "
				      "base-rtt come from the testbed)");
		const json &val = item.value();
		if (val.is_number())
			out[item.key()] = val.dump();
		else
			out[item.key()] = get_string(val, w.at(item.key()));
	}
	return out;
}

std::vector<std::string> get_path_policies(const json &v, const Where &w)
{
	return get_names(v, w, "path policies (" + path_policy_list() + ")", [](const std::string &a, const Where &at) {
		if (!is_path_policy(a))
			at.fail("unknown path policy '" + a + "' (" + path_policy_list() + ")");
	});
}

// "leaf<L>-spine<S>" of the topology -> (L, S)
void get_failed_link(const json &v, const Where &w, const TopologySpec &topo, DatapathSpec &dp)
{
	std::string s = get_string(v, w);
	unsigned l = 0, sp = 0;
	char tail = 0;
	if (std::sscanf(s.c_str(), "leaf%u-spine%u%c", &l, &sp, &tail) != 2 || l < 1 || l > topo.leaves || sp < 1 ||
	    sp > topo.spines)
		w.fail("'" + s + "' is not a link leaf<1.." + std::to_string(topo.leaves) + ">-spine<1.." +
		       std::to_string(topo.spines) + "> of the topology");
	dp.fail_leaf = l;
	dp.fail_spine = sp;
}

void get_dp_cc(const json &v, const Where &w, DatapathSpec &dp)
{
	if (!v.contains("cc"))
		return;
	dp.cc = get_string(v["cc"], w.at("cc"));
	if (dp.cc != "dctcp" && dp.cc != "powertcp" && dp.cc != "theta-powertcp" && dp.cc != "hpcc" &&
	    dp.cc != "timely")
		w.at("cc").fail("unknown congestion control '" + dp.cc +
				"' (dctcp, powertcp, theta-powertcp, hpcc, timely)");
}

DatapathSpec parse_datapath(const json &v, const Where &w, const std::string &topology_json, std::uint64_t duration_ns)
{
	if (!v.is_object())
		w.fail("expected an object (pattern, message_size, cc, seed, failure; or collectives, ...)");
	if (!v.contains("collectives"))
		allow_keys(v, w, {"pattern", "message_size", "cc", "seed", "failure"});
	TopologySpec topo;
	try {
		topo = parse_topology(topology_json);
	} catch (const UsageError &e) {
		throw UsageError(w.source + ": $.topology: " + e.what());
	}
	if (topo.kind != TopologyKind::LeafSpine || !topo.dpdk_hosts || topo.leaves < 2)
		w.fail("a datapath experiment runs on a leafspine of 2 or more leaves with \"host_stack\": \"dpdk\"");
	DatapathSpec dp;
	dp.enabled = true;
	if (v.contains("collectives")) {
		parse_collective_study(v, w, topo, dp);
		get_dp_cc(v, w, dp);
		return dp;
	}
	if (v.contains("pattern")) {
		dp.pattern = get_string(v["pattern"], w.at("pattern"));
		if (dp.pattern != "permutation")
			w.at("pattern").fail("unknown pattern '" + dp.pattern + "' (permutation)");
	}
	if (v.contains("message_size"))
		dp.message_size = get_bytes(v["message_size"], w.at("message_size"), 1ull << 30);
	if (dp.message_size == 0)
		w.at("message_size").fail("must be above 0");
	get_dp_cc(v, w, dp);
	if (v.contains("seed"))
		dp.seed = get_uint(v["seed"], w.at("seed"), 0, UINT32_MAX);
	if (v.contains("failure")) {
		const json &f = v["failure"];
		Where wf = w.at("failure");
		if (!f.is_object())
			wf.fail("expected an object (link, at)");
		allow_keys(f, wf, {"link", "at"});
		get_failed_link(require(f, wf, "link"), wf.at("link"), topo, dp);
		dp.fail_at_ns = get_duration(require(f, wf, "at"), wf.at("at"));
		if (dp.fail_at_ns == 0 || dp.fail_at_ns >= duration_ns)
			wf.at("at").fail("must be within the run (above 0, below the duration)");
	}
	return dp;
}

constexpr std::uint64_t kMaxSeed = 1000000;
constexpr std::size_t kMaxSeeds = 100;

std::vector<std::uint64_t> get_seeds(const json &v, const Where &w)
{
	if (!v.is_array() || v.empty() || v.size() > kMaxSeeds)
		w.fail("expected a non-empty list of at most " + std::to_string(kMaxSeeds) + " seeds within 1.." +
		       std::to_string(kMaxSeed));
	std::vector<std::uint64_t> out;
	for (std::size_t i = 0; i < v.size(); i++) {
		std::uint64_t s = get_uint(v[i], w.at(i), 1, kMaxSeed);
		if (std::find(out.begin(), out.end(), s) != out.end())
			w.at(i).fail("seed " + std::to_string(s) + " is listed twice");
		out.push_back(s);
	}
	return out;
}

std::vector<std::string> get_plain_names(const json &v, const Where &w, std::size_t max_len, const std::string &what)
{
	return get_names(v, w, what,
			 [max_len](const std::string &a, const Where &at) { get_name(json(a), at, max_len); });
}

ClaimSpec parse_claim(const json &c, const Where &w)
{
	if (!c.is_object())
		w.fail("expected a claim object, got " + kind_of(c));
	allow_keys(c, w, {"id", "text", "source", "member", "cases", "metric", "algo", "vs", "thesis", "expect"});
	ClaimSpec cl;
	cl.id = get_name(require(c, w, "id"), w.at("id"), 48);
	cl.text = get_string(require(c, w, "text"), w.at("text"));
	if (c.contains("source"))
		cl.source = get_string(c["source"], w.at("source"));
	cl.member = get_name(require(c, w, "member"), w.at("member"), 32);
	cl.cases = get_plain_names(require(c, w, "cases"), w.at("cases"), 32, "case names (\"load60\", \"run\")");
	cl.metric = get_string(require(c, w, "metric"), w.at("metric"));
	if (cl.metric.empty())
		w.at("metric").fail("empty metric name");
	cl.algo = get_string(require(c, w, "algo"), w.at("algo"));
	check_algorithm_name(cl.algo, w.source + ": " + w.at("algo").path);
	cl.vs = get_string(require(c, w, "vs"), w.at("vs"));
	check_algorithm_name(cl.vs, w.source + ": " + w.at("vs").path);
	if (cl.algo == cl.vs)
		w.at("vs").fail("compares " + cl.algo + " with itself");
	if (c.contains("thesis") && !c["thesis"].is_null()) {
		const json &t = c["thesis"];
		if (!t.is_number() || !(t.get<double>() >= -1) || t.get<double>() > 100)
			w.at("thesis").fail(
				"expected the thesis' relative difference (-0.33 = 33 % lower), within -1..100");
		cl.thesis = t.get<double>();
	}
	cl.expect = get_string(require(c, w, "expect"), w.at("expect"));
	if (cl.expect != "lower" && cl.expect != "higher" && cl.expect != "similar")
		w.at("expect").fail("expected lower, higher or similar, not '" + cl.expect + "'");
	return cl;
}

void parse_suite(const json &doc, const Where &w, ExperimentSpec &spec)
{
	allow_keys(doc, w, {"name", "description", "suite", "algorithms", "seeds", "smoke", "claims"});
	const json &members = doc["suite"];
	if (!members.is_array() || members.empty())
		w.at("suite").fail("expected a non-empty list of member experiments (paths relative to the suite's "
				   "file, without .json)");
	for (std::size_t i = 0; i < members.size(); i++) {
		std::string m = get_string(members[i], w.at("suite").at(i));
		if (m.empty() || m.find("..") != std::string::npos || m[0] == '/')
			w.at("suite").at(i).fail("'" + m + "' is not a member below the suite's directory");
		if (std::find(spec.suite.begin(), spec.suite.end(), m) != spec.suite.end())
			w.at("suite").at(i).fail("'" + m + "' is listed twice");
		spec.suite.push_back(m);
	}
	if (doc.contains("algorithms"))
		spec.algorithms = get_algorithms(doc["algorithms"], w.at("algorithms"));
	if (doc.contains("seeds"))
		spec.seeds = get_seeds(doc["seeds"], w.at("seeds"));
	if (doc.contains("smoke")) {
		const json &sm = doc["smoke"];
		Where ws = w.at("smoke");
		if (!sm.is_object())
			ws.fail("expected an object (members, algorithms, loads)");
		allow_keys(sm, ws, {"members", "algorithms", "loads"});
		if (sm.contains("members"))
			spec.suite_smoke.members = get_plain_names(sm["members"], ws.at("members"), 32, "member names");
		if (sm.contains("algorithms"))
			spec.suite_smoke.algorithms = get_algorithms(sm["algorithms"], ws.at("algorithms"));
		if (sm.contains("loads"))
			spec.suite_smoke.loads = get_loads(sm["loads"], ws.at("loads"));
	}
	if (doc.contains("claims")) {
		const json &cl = doc["claims"];
		if (!cl.is_array())
			w.at("claims").fail("expected a list of claims");
		std::set<std::string> ids;
		for (std::size_t i = 0; i < cl.size(); i++) {
			spec.claims.push_back(parse_claim(cl[i], w.at("claims").at(i)));
			if (!ids.insert(spec.claims.back().id).second)
				w.at("claims").at(i).at("id").fail("claim id '" + spec.claims.back().id +
								   "' is used twice");
		}
	}
}

void check_phases_fit(const ExperimentSpec &spec, const Where &w)
{
	std::set<std::string> names;
	for (std::size_t i = 0; i < spec.phases.size(); i++) {
		const PhaseSpec &ph = spec.phases[i];
		if (!names.insert(ph.name).second)
			w.at("phases").at(i).at("name").fail("phase name '" + ph.name + "' is used twice");
		if (ph.end_ns() > spec.duration_ns)
			w.at("phases").at(i).fail("ends at " + std::to_string(double(ph.end_ns()) / 1e9) +
						  " s, after the experiment's duration");
	}
	if (spec.warmup_ns >= spec.duration_ns)
		w.at("warmup").fail("the warm-up must be shorter than the duration");
}

double seconds(std::uint64_t ns)
{
	return double(ns) / 1e9;
}

std::uint64_t scale_ns(std::uint64_t ns, double factor)
{
	return static_cast<std::uint64_t>(std::llround(double(ns) * factor));
}

// "s12" -> ("s", 12); no trailing digits -> false
bool split_trailing_number(const std::string &s, std::string &prefix, std::uint64_t &number)
{
	std::size_t i = s.size();
	while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9')
		i--;
	if (i == s.size() || s.size() - i > 9)
		return false;
	prefix = s.substr(0, i);
	number = std::stoull(s.substr(i));
	return true;
}

std::vector<std::string> expand_range(const std::string &sel, const std::string &what)
{
	std::size_t dots = sel.find("..");
	std::string a = sel.substr(0, dots), b = sel.substr(dots + 2);
	std::string pa, pb;
	std::uint64_t na = 0, nb = 0;
	if (!split_trailing_number(a, pa, na) || !split_trailing_number(b, pb, nb) || pa != pb || na > nb)
		throw UsageError(what + ": '" + sel +
				 "' is not a host range (two names that differ in a trailing number, "
				 "lowest first: s2..s11)");
	std::vector<std::string> out;
	for (std::uint64_t n = na; n <= nb; n++)
		out.push_back(pa + std::to_string(n));
	return out;
}

} // namespace spec_fields

using namespace spec_fields;

std::uint64_t PhaseSpec::end_ns() const
{
	if (kind == PhaseKind::Incast)
		return start_ns + std::uint64_t(bursts - 1) * period_ns;
	return start_ns + duration_ns;
}

void check_algorithm_name(const std::string &name, const std::string &what)
{
	bool ok = !name.empty() && name.size() <= 15 && std::all_of(name.begin(), name.end(), [](char c) {
		return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
	});
	if (!ok)
		throw UsageError(what + ": '" + name +
				 "' is not a congestion control name (1..15 of a-z, 0-9 and _; e.g. cubic, bbr, " +
				 bpf_algorithm_list() + ")");
}

// "a,b,c": each name checked, none twice; `what` names the list in the error.
static std::vector<std::string>
parse_name_list(const std::string &text, const std::function<void(const std::string &)> &check, const std::string &what)
{
	std::vector<std::string> out = split_list(text, what, "name", Duplicates::kRefuse);
	for (const std::string &a : out)
		check(a);
	return out;
}

std::vector<std::string> parse_algorithm_list(const std::string &text)
{
	return parse_name_list(
		text, [](const std::string &a) { check_algorithm_name(a, "--algos"); }, "--algos");
}

bool is_bpf_algorithm(const std::string &name)
{
	return name == "bpf_powertcp" || name == "bpf_theta_ptcp" || name == "bpf_hpcc" || name == "bpf_timely";
}

const char *bpf_algorithm_list()
{
	return "bpf_powertcp, bpf_theta_ptcp, bpf_hpcc, bpf_timely";
}

std::vector<std::uint64_t> parse_seed_list(const std::string &text)
{
	std::vector<std::string> words = split_list(text, "--seeds", "seed", Duplicates::kRefuse);
	std::vector<std::uint64_t> out;
	for (const auto &w : words)
		out.push_back(parse_uint(w, "--seeds", 1, kMaxSeed));
	if (out.size() > kMaxSeeds)
		throw UsageError("--seeds: at most " + std::to_string(kMaxSeeds) + " seeds");
	return out;
}

std::uint64_t traffic_seed(std::uint64_t run_seed, std::size_t phase, std::size_t sender)
{
	// 1000003 apart: the phase/sender offsets (< 1000003 for any
	// description) never make two seeds' generators collide
	return (run_seed - 1) * 1000003 + 1000 * (phase + 1) + sender + 1;
}

ExperimentSpec parse_experiment(const std::string &json_text, const std::string &source)
{
	json doc = parse_document(json_text, source);
	Where w{source, ""};
	ExperimentSpec spec;
	spec.source = source;
	if (doc.is_object() && doc.contains("suite")) {
		spec.name = get_name(require(doc, w, "name"), w.at("name"), 32);
		if (doc.contains("description"))
			spec.description = get_string(doc["description"], w.at("description"));
		parse_suite(doc, w, spec);
		return spec;
	}
	allow_keys(doc, w,
		   {"name", "description", "topology", "algorithms", "duration", "smoke_duration", "warmup", "loads",
		    "load_scale", "seeds", "sender_counts", "cc_params", "int_version", "phases", "datapath"});
	spec.name = get_name(require(doc, w, "name"), w.at("name"), 32);
	if (doc.contains("description"))
		spec.description = get_string(doc["description"], w.at("description"));
	const json &topo = require(doc, w, "topology");
	if (!topo.is_object())
		w.at("topology").fail("expected a testbed description object, got " + kind_of(topo));
	spec.topology_json = topo.dump();
	const bool datapath = doc.contains("datapath");
	spec.algorithms = datapath ? get_path_policies(require(doc, w, "algorithms"), w.at("algorithms"))
				   : get_algorithms(require(doc, w, "algorithms"), w.at("algorithms"));
	spec.duration_ns = get_duration(require(doc, w, "duration"), w.at("duration"));
	if (spec.duration_ns == 0)
		w.at("duration").fail("the duration must be above 0");
	spec.smoke_duration_ns = spec.duration_ns;
	if (doc.contains("smoke_duration")) {
		spec.smoke_duration_ns = get_duration(doc["smoke_duration"], w.at("smoke_duration"));
		if (spec.smoke_duration_ns == 0 || spec.smoke_duration_ns > spec.duration_ns)
			w.at("smoke_duration").fail("must be above 0 and at most the duration");
	}
	if (datapath) {
		for (const char *k :
		     {"warmup", "loads", "load_scale", "seeds", "sender_counts", "cc_params", "int_version", "phases"})
			if (doc.contains(k))
				w.at(k).fail("a datapath experiment has no " + std::string(k) +
					     " (its workload is in \"datapath\")");
		spec.datapath = parse_datapath(doc["datapath"], w.at("datapath"), spec.topology_json, spec.duration_ns);
		return spec;
	}
	if (doc.contains("warmup"))
		spec.warmup_ns = get_duration(doc["warmup"], w.at("warmup"));
	if (doc.contains("loads"))
		spec.loads = get_loads(doc["loads"], w.at("loads"));
	if (doc.contains("load_scale")) {
		const json &v = doc["load_scale"];
		if (!v.is_number() || !(v.get<double>() > 0) || v.get<double>() > 1)
			w.at("load_scale")
				.fail("expected a factor within (0, 1]: the generators' load over the case's");
		spec.load_scale = v.get<double>();
	}
	if (doc.contains("seeds"))
		spec.seeds = get_seeds(doc["seeds"], w.at("seeds"));
	if (doc.contains("sender_counts")) {
		if (doc.contains("loads"))
			w.at("sender_counts").fail("one sweep per experiment: loads or sender_counts, not both");
		spec.sender_counts = get_sender_counts(doc["sender_counts"], w.at("sender_counts"));
	}
	if (doc.contains("cc_params"))
		spec.cc_params = get_cc_params(doc["cc_params"], w.at("cc_params"));
	if (doc.contains("int_version")) {
		const json &v = doc["int_version"];
		if (!v.is_number_unsigned() || (v.get<std::uint64_t>() != 1 && v.get<std::uint64_t>() != 2))
			w.at("int_version")
				.fail("the INT option version: 1 (3 hops next to TCP timestamps) or 2 "
				      "(wide records, partial echoes: lumen int enable --wide)");
		spec.int_version = v.get<std::uint32_t>();
	}
	const json &phases = require(doc, w, "phases");
	if (!phases.is_array() || phases.empty())
		w.at("phases").fail("expected a non-empty list of traffic phases");
	for (std::size_t i = 0; i < phases.size(); i++)
		spec.phases.push_back(parse_phase(phases[i], w.at("phases").at(i), !spec.loads.empty()));
	if (!spec.loads.empty() && std::none_of(spec.phases.begin(), spec.phases.end(),
						[](const PhaseSpec &p) { return p.kind == PhaseKind::Poisson; }))
		w.at("loads").fail("a load sweep needs at least one poisson phase");
	if (!spec.sender_counts.empty() && std::none_of(spec.phases.begin(), spec.phases.end(),
							[](const PhaseSpec &p) { return p.kind == PhaseKind::Long; }))
		w.at("sender_counts").fail("a sender sweep needs at least one long phase");
	check_phases_fit(spec, w);
	return spec;
}

std::string experiment_to_json(const ExperimentSpec &spec)
{
	json doc;
	doc["name"] = spec.name;
	doc["description"] = spec.description;
	doc["source"] = spec.source;
	doc["algorithms"] = spec.algorithms;
	if (spec.is_suite()) {
		doc["suite"] = spec.suite;
		doc["seeds"] = spec.seeds;
		doc["claims"] = spec.claims.size();
		return doc.dump(2);
	}
	doc["topology"] = json::parse(spec.topology_json);
	doc["seeds"] = spec.seeds;
	doc["load_scale"] = spec.load_scale;
	doc["duration_s"] = seconds(spec.duration_ns);
	doc["warmup_s"] = seconds(spec.warmup_ns);
	if (!spec.loads.empty())
		doc["loads"] = spec.loads;
	if (!spec.sender_counts.empty())
		doc["sender_counts"] = spec.sender_counts;
	doc["cc_params"] = spec.cc_params;
	doc["int_version"] = spec.int_version;
	doc["phases"] = json::array();
	for (const auto &ph : spec.phases) {
		json p;
		p["name"] = ph.name;
		p["kind"] = phase_kind_name(ph.kind);
		p["from"] = ph.from;
		p["to"] = ph.to;
		p["start_s"] = seconds(ph.start_ns);
		switch (ph.kind) {
		case PhaseKind::Long:
			p["duration_s"] = seconds(ph.duration_ns);
			p["flows"] = ph.flows;
			break;
		case PhaseKind::Poisson:
			p["duration_s"] = seconds(ph.duration_ns);
			p["workload"] = ph.workload;
			if (spec.loads.empty())
				p["load"] = ph.load;
			if (ph.max_flows)
				p["max_flows"] = ph.max_flows;
			break;
		case PhaseKind::Incast:
			p["size_bytes"] = ph.size_bytes;
			p["bursts"] = ph.bursts;
			p["period_s"] = seconds(ph.period_ns);
			break;
		}
		doc["phases"].push_back(p);
	}
	if (spec.datapath.enabled && spec.datapath.collective_study) {
		doc["datapath"] = collective_study_json(spec.datapath);
	} else if (spec.datapath.enabled) {
		const DatapathSpec &dp = spec.datapath;
		json d = {{"pattern", dp.pattern}, {"message_size", dp.message_size}, {"cc", dp.cc}, {"seed", dp.seed}};
		if (dp.fail_leaf)
			d["failure"] = {{"link", "leaf" + std::to_string(dp.fail_leaf) + "-spine" +
							 std::to_string(dp.fail_spine)},
					{"at_s", seconds(dp.fail_at_ns)}};
		doc["datapath"] = d;
	}
	return doc.dump(2);
}

ExperimentSpec scale_to_duration(const ExperimentSpec &spec, std::uint64_t duration_ns)
{
	if (duration_ns == 0)
		throw UsageError("the duration must be above 0");
	double f = double(duration_ns) / double(spec.duration_ns);
	ExperimentSpec s = spec;
	s.duration_ns = duration_ns;
	s.smoke_duration_ns = std::min(scale_ns(spec.smoke_duration_ns, f), duration_ns);
	s.warmup_ns = scale_ns(spec.warmup_ns, f);
	s.datapath.fail_at_ns = std::min(scale_ns(spec.datapath.fail_at_ns, f), duration_ns);
	for (auto &ph : s.phases) {
		ph.start_ns = scale_ns(ph.start_ns, f);
		ph.duration_ns = scale_ns(ph.duration_ns, f);
		ph.period_ns = std::max<std::uint64_t>(scale_ns(ph.period_ns, f), 1);
		if (ph.kind != PhaseKind::Incast && ph.duration_ns == 0)
			throw UsageError("duration " + std::to_string(seconds(duration_ns)) + " s leaves phase '" +
					 ph.name + "' no time");
	}
	return s;
}

std::string CollectiveRunSpec::label() const
{
	return channels > 1 ? collective + "-c" + std::to_string(channels) : collective;
}

std::string path_policy_list()
{
	std::string out;
	for (int m = 0; m < LUMEN_PATH_MODES; m++)
		out += (m ? ", " : "") + std::string(lumen_path_mode_name((enum lumen_path_mode)m));
	return out;
}

bool is_path_policy(const std::string &name)
{
	for (int m = 0; m < LUMEN_PATH_MODES; m++)
		if (name == lumen_path_mode_name((enum lumen_path_mode)m))
			return true;
	return false;
}

std::vector<std::string> parse_path_policy_list(const std::string &text)
{
	return parse_name_list(
		text,
		[](const std::string &name) {
			if (!is_path_policy(name))
				throw UsageError("unknown path policy '" + name + "' (" + path_policy_list() + ")");
		},
		"path policy");
}

std::vector<ExperimentCase> experiment_cases(const ExperimentSpec &spec)
{
	std::vector<ExperimentCase> out;
	if (spec.datapath.enabled) {
		out.push_back({"healthy", 0, 0});
		if (spec.datapath.fail_leaf)
			out.push_back({"failure", 0, 0});
		return out;
	}
	for (double l : spec.loads) {
		char name[32];
		std::snprintf(name, sizeof(name), "load%g", l * 100);
		out.push_back({name, l, 0});
	}
	for (std::uint32_t n : spec.sender_counts)
		out.push_back({"senders" + std::to_string(n), 0, n});
	if (out.empty())
		out.push_back({"run", 0, 0});
	return out;
}

std::vector<std::string> phase_senders(const PhaseSpec &phase, const ExperimentCase &cs,
				       const std::vector<HostRef> &hosts, const std::string &what)
{
	auto from = expand_hosts(phase.from, hosts, what);
	if (phase.kind != PhaseKind::Long || cs.senders == 0)
		return from;
	if (from.size() < cs.senders)
		throw UsageError(what + ": case " + cs.name + " needs " + std::to_string(cs.senders) +
				 " senders, the selectors name " + std::to_string(from.size()));
	from.resize(cs.senders);
	return from;
}

std::vector<std::string> expand_hosts(const std::vector<std::string> &selectors, const std::vector<HostRef> &hosts,
				      const std::string &what)
{
	std::vector<std::string> out;
	auto add = [&out](const std::string &n) {
		if (std::find(out.begin(), out.end(), n) == out.end())
			out.push_back(n);
	};
	auto exists = [&hosts](const std::string &n) {
		return std::any_of(hosts.begin(), hosts.end(), [&n](const HostRef &h) { return h.name == n; });
	};
	for (const auto &sel : selectors) {
		if (sel == "senders" || sel == "receivers" || sel == "hosts") {
			std::string role = sel == "hosts" ? "" : sel.substr(0, sel.size() - 1);
			std::size_t before = out.size();
			for (const auto &h : hosts)
				if (role.empty() || h.role == role)
					add(h.name);
			if (out.size() == before && role.empty() == false &&
			    std::none_of(hosts.begin(), hosts.end(),
					 [&role](const HostRef &h) { return h.role == role; }))
				throw UsageError(what + ": the testbed has no " + sel);
			continue;
		}
		std::vector<std::string> names =
			sel.find("..") != std::string::npos ? expand_range(sel, what) : std::vector<std::string>{sel};
		for (const auto &n : names) {
			if (!exists(n)) {
				std::string known;
				for (const auto &h : hosts)
					known += (known.empty() ? "" : " ") + h.name;
				throw UsageError(what + ": the testbed has no host '" + n + "' (hosts: " + known + ")");
			}
			add(n);
		}
	}
	return out;
}

} // namespace lumen
