// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/experiment/experiment_claims.cpp - see experiment_claims.h.
#include "experiment/experiment_claims.h"

#include "base/stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace lumen
{

namespace
{

using nlohmann::json;

const RunSummary *claim_find_run(const std::vector<RunSummary> &runs, const std::string &algo, const std::string &cs,
				 std::uint64_t seed)
{
	for (const auto &r : runs)
		if (r.algo == algo && r.case_name == cs && r.seed == seed)
			return &r;
	return nullptr;
}

double claim_metric_of(const RunSummary &r, const std::string &name)
{
	auto m = run_metrics(r);
	auto it = m.find(name);
	return it == m.end() ? kNaN : it->second;
}

std::string claim_verdict_of(const ClaimSpec &c, const std::vector<double> &diffs)
{
	if (diffs.empty())
		return "no data";
	bool lower = c.expect == "lower", similar = c.expect == "similar";
	std::size_t right = 0, wrong = 0;
	for (double d : diffs) {
		if (similar) {
			right += std::fabs(d) <= kClaimSimilar;
			wrong += std::fabs(d) > kClaimSimilar;
			continue;
		}
		right += lower ? d < 0 : d > 0;
		wrong += lower ? d > 0 : d < 0;
	}
	if (right == diffs.size())
		return "agrees";
	if (wrong == diffs.size())
		return "disagrees";
	return "mixed";
}

json claim_num(double v)
{
	return std::isnan(v) ? json(nullptr) : json(v);
}

json claim_spread_json(const Spread &s)
{
	return {{"n", s.n},
		{"mean", claim_num(s.mean)},
		{"sd", claim_num(s.sd)},
		{"min", claim_num(s.min)},
		{"max", claim_num(s.max)}};
}

std::string claim_pct(double v)
{
	if (std::isnan(v))
		return "-";
	char buf[32];
	std::snprintf(buf, sizeof(buf), "%+.0f %%", v * 100);
	return buf;
}

std::string claim_csv_num(double v)
{
	if (std::isnan(v))
		return "";
	char buf[32];
	std::snprintf(buf, sizeof(buf), "%.6g", v);
	return buf;
}

std::string claim_csv_text(const std::string &s)
{
	std::string out = "\"";
	for (char c : s)
		out += c == '"' ? std::string("\"\"") : std::string(1, c);
	return out + "\"";
}

std::string claim_join(const std::vector<std::string> &v, const char *sep)
{
	std::string out;
	for (const auto &x : v)
		out += (out.empty() ? "" : sep) + x;
	return out;
}

} // namespace

std::vector<ClaimResult> evaluate_claims(const std::vector<ClaimSpec> &claims,
					 const std::map<std::string, std::vector<RunSummary>> &by_member)
{
	std::vector<ClaimResult> out;
	for (const auto &c : claims) {
		ClaimResult res;
		res.claim = c;
		std::vector<double> diffs, avals, bvals;
		auto member = by_member.find(c.member);
		if (member != by_member.end()) {
			std::vector<std::uint64_t> seeds;
			for (const auto &r : member->second)
				if (std::find(seeds.begin(), seeds.end(), r.seed) == seeds.end())
					seeds.push_back(r.seed);
			for (std::uint64_t seed : seeds) {
				// a seed counts only with every case measured for both
				double dsum = 0, asum = 0, bsum = 0;
				bool complete = true;
				for (const auto &cs : c.cases) {
					const RunSummary *a = claim_find_run(member->second, c.algo, cs, seed);
					const RunSummary *b = claim_find_run(member->second, c.vs, cs, seed);
					double av = a ? claim_metric_of(*a, c.metric) : kNaN;
					double bv = b ? claim_metric_of(*b, c.metric) : kNaN;
					if (std::isnan(av) || std::isnan(bv) || !(bv > 0)) {
						complete = false;
						break;
					}
					dsum += av / bv - 1;
					asum += av;
					bsum += bv;
				}
				if (!complete)
					continue;
				double n = double(c.cases.size());
				diffs.push_back(dsum / n);
				avals.push_back(asum / n);
				bvals.push_back(bsum / n);
				res.seeds.push_back(seed);
			}
		}
		res.measured = spread_of(diffs);
		res.algo_value = spread_of(avals);
		res.vs_value = spread_of(bvals);
		res.verdict = claim_verdict_of(c, diffs);
		out.push_back(res);
	}
	return out;
}

json claims_to_json(const std::vector<ClaimResult> &results)
{
	json j;
	j["similar_within"] = kClaimSimilar;
	j["claims"] = json::array();
	for (const auto &r : results) {
		const ClaimSpec &c = r.claim;
		j["claims"].push_back({{"id", c.id},
				       {"text", c.text},
				       {"source", c.source},
				       {"member", c.member},
				       {"cases", c.cases},
				       {"metric", c.metric},
				       {"algo", c.algo},
				       {"vs", c.vs},
				       {"expect", c.expect},
				       {"thesis", c.thesis ? json(*c.thesis) : json(nullptr)},
				       {"measured", claim_spread_json(r.measured)},
				       {"seeds", r.seeds},
				       {"algo_value", claim_spread_json(r.algo_value)},
				       {"vs_value", claim_spread_json(r.vs_value)},
				       {"verdict", r.verdict}});
	}
	return j;
}

std::string claims_csv(const std::vector<ClaimResult> &results)
{
	std::string out = "id,member,cases,metric,algo,vs,thesis,measured_mean,measured_sd,measured_min,measured_max,"
			  "seeds,algo_mean,vs_mean,expect,verdict,source,text\n";
	for (const auto &r : results) {
		const ClaimSpec &c = r.claim;
		out += c.id + "," + c.member + "," + claim_join(c.cases, ";") + "," + c.metric + "," + c.algo + "," +
		       c.vs + "," + (c.thesis ? claim_csv_num(*c.thesis) : std::string()) + "," +
		       claim_csv_num(r.measured.mean) + "," + claim_csv_num(r.measured.sd) + "," +
		       claim_csv_num(r.measured.min) + "," + claim_csv_num(r.measured.max) + "," +
		       std::to_string(r.seeds.size()) + "," + claim_csv_num(r.algo_value.mean) + "," +
		       claim_csv_num(r.vs_value.mean) + "," + c.expect + "," + r.verdict + "," +
		       claim_csv_text(c.source) + "," + claim_csv_text(c.text) + "\n";
	}
	return out;
}

std::string claims_table(const std::vector<ClaimResult> &results)
{
	std::vector<std::vector<std::string>> rows = {
		{"claim", "algo vs", "metric (cases)", "thesis", "lumen: mean +-sd [min..max] (seeds)", "verdict"}};
	for (const auto &r : results) {
		const ClaimSpec &c = r.claim;
		std::string measured = "-";
		if (r.measured.n > 0) {
			measured = claim_pct(r.measured.mean);
			if (r.measured.n > 1)
				measured += " +-" + claim_pct(r.measured.sd).substr(1) + " [" +
					    claim_pct(r.measured.min) + ".." + claim_pct(r.measured.max) + "]";
			measured += " (" + std::to_string(r.measured.n) + ")";
		}
		rows.push_back({c.id, c.algo + " vs " + c.vs, c.metric + " (" + claim_join(c.cases, ",") + ")",
				c.thesis ? claim_pct(*c.thesis) : c.expect, measured, r.verdict});
	}
	std::vector<std::size_t> width(rows[0].size(), 0);
	for (const auto &row : rows)
		for (std::size_t i = 0; i < row.size(); i++)
			width[i] = std::max(width[i], row[i].size());
	std::string out;
	for (std::size_t k = 0; k < rows.size(); k++) {
		for (std::size_t i = 0; i < rows[k].size(); i++) {
			std::string pad(width[i] - rows[k][i].size(), ' ');
			out += i == 3 ? pad + rows[k][i] : rows[k][i] + (i + 1 < rows[k].size() ? pad : "");
			out += i + 1 < rows[k].size() ? "  " : "\n";
		}
		if (k == 0) {
			std::size_t total = 0;
			for (auto w : width)
				total += w + 2;
			out += std::string(total - 2, '-') + "\n";
		}
	}
	return out;
}

} // namespace lumen
