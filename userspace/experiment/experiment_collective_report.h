// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/experiment/experiment_collective_report.h - one run of a
// collective study and its report (experiment_collective.h): results.json
// (runs and cells), results.csv (one row per cell: mean and sd over the
// seeds), runs.csv, a table on stdout, and the plots (CCT per policy with
// error bars; the queue at one receiver's ToR downlink over time with and
// without randomization; the bytes per uplink).
#pragma once

#include "experiment/experiment.h"
#include "experiment/experiment_dp.h"
#include "experiment/report.h"
#include "experiment/report_plot.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace lumen
{

// One step of a run: lumen-dp's CCT and transport counters for the step
// (summed over its ranks), the uplinks and queues while it ran (the port
// samples between its first rank's start and its last rank's end: a step
// shorter than a sample period has none, and zeros here).
struct CollStep {
	double cct_us = 0;
	std::uint64_t start_ns = 0, end_ns = 0; // CLOCK_MONOTONIC
	double uplink_max_mean = 0; // the worst leaf's
	DpQueue spine_q, down_q; // over the samples taken within the step
	std::size_t samples = 0; // how many: none leaves the queues unknown (0)
	std::map<std::string, double> counters; // retransmits, nacks_rcvd, timeouts, reroutes
};

struct CollRun {
	std::string case_name;
	CollectiveRunSpec coll;
	std::uint64_t bytes = 0;
	std::string policy;
	bool randomize = true;
	std::uint64_t seed = 0;

	std::string error; // "" = the run completed with every rank right (or is unfinished)
	bool unfinished = false; // a rank had not finished at the time limit ("duration")
	nlohmann::json summary; // lumen-dp's --json
	std::vector<QueueTick> ticks; // the samples of the run (and one on each side)
	std::uint64_t start_ns = 0, end_ns = 0; // CLOCK_MONOTONIC, lumen-dp's clients
	std::uint64_t fail_ns = 0; // case failure: when the link went down
	std::uint32_t wrong_ranks = 0;
	std::uint64_t healed_bytes = 0; // switch port counts the run left off (heal_idle_ports)
	double time_us = 0, algbw = 0, busbw = 0;
	std::vector<double> step_cct_us;
	std::vector<CollStep> steps; // per step (with step_cct_us[k] as its cct_us)
	std::uint64_t subflows = 0;
	std::map<std::string, double> counters; // retransmits, timeouts, nacks_rcvd, reroutes
	std::vector<double> uplink_bytes; // leaf by leaf, spine by spine
	double uplink_max_mean = 0; // the worst leaf's
	DpQueue spine_q, down_q;
	double busiest_util = 0; // of the fabric's ports during the run
	std::size_t watched_downlink = 0; // sample index of the port of incast.png (the first ToR downlink)

	// "healthy-alltoall-1048576-reps-rnd-s1"
	std::string tag() const;
	// the cell it belongs to: everything but the seed
	std::string cell() const;
};

void write_collective_report(const DpPlan &plan, const std::vector<CollRun> &runs, std::uint64_t base_rtt_ns,
			     double minutes);
// ports: the sampler's (names for the titles)
std::vector<PlotScript> collective_plots(const std::vector<CollRun> &runs, const TopologySpec &topo,
					 const std::vector<PortInfo> &ports);

} // namespace lumen
