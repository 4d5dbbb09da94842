// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/experiment/experiment_study.cpp - the "datapath" of a
// collective study (experiment.h's CollectiveStudySpec): parsing with
// errors naming the JSON path, and the description as JSON again.
#include "experiment/experiment.h"

#include "base/units.h"
#include "experiment/experiment_fields.h"
#include "testbed/testbed.h"

#include <algorithm>
#include <set>

namespace lumen
{
namespace spec_fields
{
namespace
{

// "leaf<L>-spine<S>" -> (L, S), for the slow link
void get_slow_link(const json &v, const Where &w, const TopologySpec &topo, DatapathSpec &dp)
{
	DatapathSpec link;
	get_failed_link(v, w, topo, link);
	dp.slow_leaf = link.fail_leaf;
	dp.slow_spine = link.fail_spine;
}

// The keys of a collective study that "smoke" may replace; `base` holds
// what is not given.
CollectiveStudySpec parse_study(const json &v, const Where &w, CollectiveStudySpec base)
{
	if (v.contains("collectives")) {
		const json &c = v["collectives"];
		Where wc = w.at("collectives");
		if (!c.is_array() || c.empty())
			wc.fail("expected a non-empty list of {\"collective\": NAME, \"channels\": C}");
		base.collectives.clear();
		for (std::size_t i = 0; i < c.size(); i++) {
			Where wi = wc.at(i);
			if (!c[i].is_object())
				wi.fail("expected an object {\"collective\": NAME, \"channels\": C}");
			allow_keys(c[i], wi, {"collective", "channels"});
			CollectiveRunSpec r;
			r.collective = get_string(require(c[i], wi, "collective"), wi.at("collective"));
			static const std::set<std::string> known = {"alltoall",	 "allgather",	  "reducescatter",
								    "allreduce", "allreduce-a2a", "permutation"};
			if (!known.count(r.collective))
				wi.at("collective")
					.fail("unknown collective '" + r.collective +
					      "' (alltoall, allgather, reducescatter, allreduce, allreduce-a2a, "
					      "permutation)");
			if (c[i].contains("channels"))
				r.channels = std::uint32_t(get_uint(c[i]["channels"], wi.at("channels"), 1, 16));
			for (const auto &o : base.collectives)
				if (o.label() == r.label())
					wi.fail("'" + r.label() + "' is listed twice");
			base.collectives.push_back(r);
		}
	}
	if (v.contains("sizes")) {
		const json &z = v["sizes"];
		if (!z.is_array() || z.empty())
			w.at("sizes").fail("expected a non-empty list of sizes per rank (\"16k\", \"1m\")");
		base.sizes.clear();
		for (std::size_t i = 0; i < z.size(); i++) {
			std::uint64_t b = get_bytes(z[i], w.at("sizes").at(i), 256ull << 20);
			if (b % 4)
				w.at("sizes").at(i).fail("must be a multiple of 4 bytes (the collectives' elements)");
			if (std::find(base.sizes.begin(), base.sizes.end(), b) != base.sizes.end())
				w.at("sizes").at(i).fail("listed twice");
			base.sizes.push_back(b);
		}
	}
	if (v.contains("randomize")) {
		const json &r = v["randomize"];
		if (!r.is_array() || r.empty() || r.size() > 2 ||
		    !std::all_of(r.begin(), r.end(), [](const json &x) { return x.is_boolean(); }) ||
		    (r.size() == 2 && r[0] == r[1]))
			w.at("randomize").fail("expected [true], [false] or [true, false] (false: --no-randomize)");
		base.randomize.assign(r.begin(), r.end());
	}
	if (v.contains("seeds")) {
		const json &z = v["seeds"];
		if (!z.is_array() || z.empty())
			w.at("seeds").fail("expected a non-empty list of seeds (whole numbers)");
		base.seeds.clear();
		for (std::size_t i = 0; i < z.size(); i++) {
			std::uint64_t seed = get_uint(z[i], w.at("seeds").at(i), 0, UINT32_MAX);
			if (std::find(base.seeds.begin(), base.seeds.end(), seed) != base.seeds.end())
				w.at("seeds").at(i).fail("seed " + std::to_string(seed) + " is listed twice");
			base.seeds.push_back(seed);
		}
	}
	if (v.contains("cases"))
		base.cases = get_names(v["cases"], w.at("cases"), "cases (healthy, slow, failure)",
				       [](const std::string &c, const Where &at) {
					       if (c != "healthy" && c != "slow" && c != "failure")
						       at.fail("unknown case '" + c + "' (healthy, slow, failure)");
				       });
	if (v.contains("algorithms"))
		base.algorithms = get_path_policies(v["algorithms"], w.at("algorithms"));
	return base;
}

} // namespace

void parse_collective_study(const json &v, const Where &w, const TopologySpec &topo, DatapathSpec &dp)
{
	allow_keys(v, w,
		   {"collectives", "sizes", "randomize", "seeds", "cases", "cc", "slow_link", "failure", "rto_min",
		    "ce_nack_threshold", "smoke"});
	dp.collective_study = true;
	CollectiveStudySpec defaults;
	defaults.sizes = {1 << 20};
	defaults.randomize = {true};
	defaults.seeds = {1};
	defaults.cases = {"healthy"};
	require(v, w, "collectives");
	dp.study = parse_study(v, w, defaults);
	if (v.contains("slow_link")) {
		const json &s = v["slow_link"];
		Where ws = w.at("slow_link");
		if (!s.is_object())
			ws.fail("expected an object (link, rate_fraction)");
		allow_keys(s, ws, {"link", "rate_fraction"});
		get_slow_link(require(s, ws, "link"), ws.at("link"), topo, dp);
		if (s.contains("rate_fraction")) {
			const json &f = s["rate_fraction"];
			if (!f.is_number() || !(f.get<double>() > 0) || !(f.get<double>() < 1) ||
			    f.get<double>() * topo.fabric_link.rate_mbps < 1)
				ws.at("rate_fraction")
					.fail("expected a fraction of the fabric rate within (0, 1), at least 1 "
					      "Mbit/s");
			dp.slow_fraction = f.get<double>();
		}
	}
	if (v.contains("failure")) {
		const json &f = v["failure"];
		Where wf = w.at("failure");
		if (!f.is_object())
			wf.fail("expected an object (link)");
		if (f.contains("at"))
			wf.at("at").fail("a collective study takes the link down before each run: no \"at\"");
		allow_keys(f, wf, {"link"});
		get_failed_link(require(f, wf, "link"), wf.at("link"), topo, dp);
	}
	if (v.contains("rto_min")) {
		dp.rto_min_ns = get_duration(v["rto_min"], w.at("rto_min"));
		if (dp.rto_min_ns < 1000 || dp.rto_min_ns > 1000 * kMs)
			w.at("rto_min").fail("lumen-dp's retransmission timeout floor: within 1us..1s");
	}
	if (v.contains("ce_nack_threshold")) {
		const json &t = v["ce_nack_threshold"];
		if (!t.is_number_integer() || t.get<std::int64_t>() < 0 || t.get<std::int64_t>() > 99)
			w.at("ce_nack_threshold")
				.fail("Ethereal's receiver NACKs a window more than this percent CE-marked: a whole "
				      "number within 0..99 (0: never)");
		dp.ce_nack_threshold_pct = int(t.get<std::int64_t>());
	}
	if (v.contains("smoke")) {
		if (!v["smoke"].is_object())
			w.at("smoke").fail("expected an object of the study's keys to replace in a --smoke run");
		allow_keys(v["smoke"], w.at("smoke"),
			   {"collectives", "sizes", "randomize", "seeds", "cases", "algorithms"});
		dp.smoke = parse_study(v["smoke"], w.at("smoke"), dp.study);
	} else
		dp.smoke = dp.study;
	for (const auto *st : {&dp.study, &dp.smoke}) {
		const Where wc = st == &dp.study ? w.at("cases") : w.at("smoke").at("cases");
		for (const auto &c : st->cases) {
			if (c == "slow" && !dp.slow_leaf)
				wc.fail("case 'slow' needs \"slow_link\"");
			if (c == "failure" && !dp.fail_leaf)
				wc.fail("case 'failure' needs \"failure\"");
		}
	}
}

namespace
{

json study_json(const CollectiveStudySpec &st)
{
	json c = json::array();
	for (const auto &r : st.collectives)
		c.push_back({{"collective", r.collective}, {"channels", r.channels}});
	json j = {{"collectives", c},
		  {"sizes", st.sizes},
		  {"randomize", st.randomize},
		  {"seeds", st.seeds},
		  {"cases", st.cases}};
	if (!st.algorithms.empty())
		j["algorithms"] = st.algorithms;
	return j;
}

} // namespace

json collective_study_json(const DatapathSpec &dp)
{
	json d = study_json(dp.study);
	d["cc"] = dp.cc;
	if (dp.slow_leaf)
		d["slow_link"] = {
			{"link", "leaf" + std::to_string(dp.slow_leaf) + "-spine" + std::to_string(dp.slow_spine)},
			{"rate_fraction", dp.slow_fraction}};
	if (dp.fail_leaf)
		d["failure"] = {
			{"link", "leaf" + std::to_string(dp.fail_leaf) + "-spine" + std::to_string(dp.fail_spine)}};
	if (dp.rto_min_ns)
		d["rto_min_s"] = double(dp.rto_min_ns) / 1e9;
	if (dp.ce_nack_threshold_pct >= 0)
		d["ce_nack_threshold"] = dp.ce_nack_threshold_pct;
	d["smoke"] = study_json(dp.smoke);
	return d;
}

} // namespace spec_fields
} // namespace lumen
