// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/experiment/experiment_results.h - inside the experiment
// library: the plan of an experiment as the runner resolved it, and what a
// finished experiment writes into its directory: config.json (what ran,
// where, with which options), summary.json and summary.txt (report.h's
// statistics per run), the CSVs and the plots.
#pragma once

#include "experiment/experiment.h"
#include "experiment/experiment_fabric.h"
#include "experiment/experiment_kmod.h"
#include "experiment/experiment_run.h"
#include "experiment/report.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace lumen
{

constexpr std::uint64_t kQueueSampleNs = 10'000'000; // the switch queues: every 10 ms

struct Plan {
	ExperimentSpec spec;
	std::string exe, dir;
	std::uint32_t path_rate_mbps = 0; // the path's slowest link: ideal FCT, poisson load
	std::uint64_t base_rtt_ns = 0; // measured, idle
	std::uint64_t tau_ns = 0; // PowerTCP's base RTT: max(measured, 200 us)
	std::uint64_t timely_t_low_ns = 0, timely_t_high_ns = 0; // bpf_timely's, from tau (0: not run)
	std::map<std::string, std::string> kmod_params; // as written to tcp_powertcp
};

// tcp_powertcp's counters over one run; empty for runs of other algorithms.
using KmodRunCounters = std::optional<KmodCounters>;

// Whether any of the spec's algorithms satisfies pred.
inline bool uses(const ExperimentSpec &spec, bool (*pred)(const std::string &))
{
	return std::any_of(spec.algorithms.begin(), spec.algorithms.end(), pred);
}

// A progress line on stderr (long runs say what they are doing).
void progress(const std::string &line);

// config.json: the experiment, the options, this machine, the fabric and
// every run's start.
nlohmann::json config_json(const Plan &plan, const RunOptions &opts, Fabric &fab, const std::vector<RunData> &runs);
// summary.json, aggregate.json (over seeds), summary.txt, the CSVs and the
// plots (of the first seed); prints the summary; returns the runs' summaries.
std::vector<RunSummary> write_results(const Plan &plan, const std::vector<RunData> &runs,
				      const std::vector<KmodRunCounters> &counters);

} // namespace lumen
