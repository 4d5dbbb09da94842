// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/experiment/experiment_claims.h - the claims of a suite's report
// (experiment.h, ClaimSpec; experiments/thesis.json): per claim, the
// thesis' relative difference between two algorithms and lumen's, measured
// per seed on identical traffic (the same seed runs the same flows for
// every algorithm) and summarised over the seeds. Written to claims.json,
// claims.csv and claims.txt, whatever the outcome.
#pragma once

#include "experiment/experiment.h"
#include "experiment/report.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace lumen
{

struct ClaimResult {
	ClaimSpec claim;
	// algo / vs - 1 of the claim's metric, per seed averaged over its
	// cases, then over the seeds that have every case for both algorithms
	Spread measured;
	std::vector<std::uint64_t> seeds; // the seeds measured
	Spread algo_value, vs_value; // the metric itself (mean over the cases), over those seeds
	// agrees: every seed's difference has the expected sign (similar:
	// is within 10 %); disagrees: every seed's has the other sign (similar:
	// is beyond 10 %); mixed: the seeds differ; no data: nothing to
	// compare (an algorithm, case or metric not run)
	std::string verdict;
};

constexpr double kClaimSimilar = 0.10;

// by_member: each member experiment's run summaries, by its name.
std::vector<ClaimResult> evaluate_claims(const std::vector<ClaimSpec> &claims,
					 const std::map<std::string, std::vector<RunSummary>> &by_member);

nlohmann::json claims_to_json(const std::vector<ClaimResult> &results);
// id,member,cases,metric,algo,vs,thesis,measured_mean,measured_sd,measured_min,measured_max,seeds,
// algo_mean,vs_mean,expect,verdict,source,text
std::string claims_csv(const std::vector<ClaimResult> &results);
std::string claims_table(const std::vector<ClaimResult> &results);

} // namespace lumen
