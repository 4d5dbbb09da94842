// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/experiment/report.h - what `lumen experiment` collected in one run
// (one algorithm, one case), how it is summarised, and the result files:
// the traffic generator's CSVs read back, the merged CSVs (flows, samples,
// queue, throughput), summary.json and the terminal table. The plots are in
// report_plot.h. Everything here works on data in memory, so tests feed it
// synthetic runs.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "traffic/traffic_records.h"

namespace lumen
{

// The exact CSV headers of `lumen traffic client`: defined once, by the
// writer (traffic_records), read back here.
inline constexpr const char *kTrafficFlowsHeader = kFlowsCsvHeader;
inline constexpr const char *kTrafficSamplesHeader = kSamplesCsvHeader;

// One row of the generator's flows.csv.
struct FlowRecord {
	std::string label;
	std::uint64_t flow_id = 0;
	std::string dst, cc, kind;
	std::uint64_t size_bytes = 0, start_ns = 0, end_ns = 0, fct_ns = 0, bytes = 0, retrans = 0, ideal_fct_ns = 0;
	double slowdown = 0;
	std::string status; // "ok" or "error:<why>"
	bool ok() const
	{
		return status == "ok";
	}
};

// One row of the generator's samples.csv (TCP_INFO of an open flow).
struct FlowSample {
	std::string label;
	std::uint64_t flow_id = 0, t_ns = 0, bytes_acked = 0, cwnd = 0, srtt_us = 0, retrans = 0;
	std::uint64_t pacing_rate_bps = 0, delivery_rate_bps = 0;
};

// Parse the generator's files; UsageError naming `source` and the line on a
// wrong header, a wrong number of fields or a malformed number.
std::vector<FlowRecord> parse_flows_csv(const std::string &text, const std::string &source);
std::vector<FlowSample> parse_samples_csv(const std::string &text, const std::string &source);

// A switch port's counters at one queue sampling tick.
struct PortCounters {
	std::uint64_t qlen_bytes = 0, enq_bytes = 0, deq_bytes = 0, drops = 0, ecn_marks = 0;
};
struct QueueTick {
	std::uint64_t t_ns = 0; // CLOCK_MONOTONIC
	std::vector<PortCounters> ports; // index = RunData::ports
};

struct PortInfo {
	std::string name; // "sw1->r1"
	std::uint32_t rate_mbps = 0;
	bool bottleneck = false;
};

struct IncastInfo {
	std::string phase;
	std::uint32_t fan_in = 0; // senders per burst
	std::uint64_t size_bytes = 0, start_ns = 0, period_ns = 0; // start: CLOCK_MONOTONIC
	std::uint32_t bursts = 0;
};

// Everything one run produced. Times are CLOCK_MONOTONIC ns; t0_ns is the
// common start (--start-at) of every generator of the run.
struct RunData {
	std::string algo, case_name;
	std::uint64_t seed = 1; // the run's seed (experiment.h: traffic_seed())
	double load = 0; // the case's load (0 = none swept)
	std::uint64_t t0_ns = 0, length_ns = 0, warmup_ns = 0;
	std::uint64_t traffic_end_ns = 0; // relative: when the last long/poisson phase stops
	std::vector<PortInfo> ports;
	std::vector<QueueTick> queue;
	std::vector<FlowRecord> flows;
	std::vector<FlowSample> samples;
	std::vector<IncastInfo> incasts;
	int client_failures = 0; // generators that exited non-zero
	std::uint64_t healed_bytes = 0; // queue drift the run found at its start (Fabric::heal_idle_queues)
};

constexpr std::uint64_t kThroughputBinNs = 100'000'000; // throughput.csv: 100 ms

// ---------------------------------------------------------------------
// Summary

struct Percentiles {
	std::size_t count = 0;
	double p50 = 0, p99 = 0, p999 = 0, max = 0; // NaN when count is 0
};

struct IncastSummary {
	std::string phase;
	std::uint32_t fan_in = 0, bursts = 0;
	std::uint64_t size_bytes = 0;
	double peak_queue_max_bytes = 0, peak_queue_mean_bytes = 0;
	double drain_ms_median = 0, drain_ms_max = 0; // over drained bursts (NaN if none)
	std::uint32_t undrained = 0; // bursts whose queue did not drain within the period
	double util_kept = 0; // bottleneck utilisation from burst start to the next one (mean)
};

struct RunSummary {
	std::string algo, case_name;
	std::uint64_t seed = 1;
	double load = 0;
	std::size_t flows = 0, completed = 0, errors = 0;
	std::uint64_t retransmits = 0;
	std::uint64_t healed_bytes = 0; // RunData's
	double goodput_mbps = 0; // bytes of all flows / traffic time
	std::optional<double> utilisation; // bottleneck deq rate / link rate (dumbbell, incast)
	Percentiles queue_bytes; // observed queue over the measurement window
	double jain = 0; // mean 100 ms Jain index over long flows (NaN: < 2 flows)
	std::vector<IncastSummary> incasts;
	std::map<std::string, Percentiles> slowdown; // short/medium/long/all (poisson flows)
};

// The port the run is about: of the ports the testbed marks as bottleneck
// (a dumbbell marks both directions of its middle link), the one that
// carried the most bytes; -1 when none is marked (leaf-spine).
int bottleneck_port(const RunData &run);
// The queue the run is about at each tick: the bottleneck port, or (no
// bottleneck, leaf-spine) the longest queue of any port.
std::vector<std::uint64_t> observed_queue(const RunData &run);
// Per flow throughput bins from t0 over the run (key "label#flow_id").
std::map<std::string, std::vector<double>> flow_throughput_bins(const RunData &run);

RunSummary summarise_run(const RunData &run);
nlohmann::json summary_to_json(const RunSummary &s);

// Every number of a summary by name (NaN where it does not exist):
// goodput_mbps, utilisation, queue_p50_bytes, queue_p99_bytes,
// queue_max_bytes, jain, retransmits, errors, completed, flows;
// fct.<short|medium|long|all>.<count|p50|p99|p999> (poisson flows);
// incast.<phase>.<peak_max_bytes|peak_mean_bytes|drain_ms_median|
// drain_ms_max|util_kept>.
std::map<std::string, double> run_metrics(const RunSummary &s);

// Mean and spread of one number over seeds: n counts the values that exist
// (not NaN); sd is the sample standard deviation (0 below two values); all
// NaN when n is 0.
struct Spread {
	std::size_t n = 0;
	double mean = 0, sd = 0, min = 0, max = 0;
};
Spread spread_of(const std::vector<double> &values);

// One (case, algorithm) over its seeds, in the order the runs came.
struct SeedAggregate {
	std::string case_name, algo;
	double load = 0;
	std::vector<std::uint64_t> seeds;
	std::map<std::string, Spread> metrics; // run_metrics() names
};
std::vector<SeedAggregate> aggregate_over_seeds(const std::vector<RunSummary> &summaries);
// {"cells": [{"case", "algo", "load", "seeds", "metrics": {name: {n, mean, sd, min, max}}}]}
nlohmann::json aggregate_to_json(const std::vector<SeedAggregate> &cells);
// The table of the main numbers as "mean ±sd [min..max]" per (case, algorithm).
std::string aggregate_table(const std::vector<SeedAggregate> &cells);
// "12.3 ±1.2 [11.0..13.5]" (scaled by `scale`, printf format `format`), "-" without values.
std::string spread_text(const Spread &s, const char *format, double scale = 1);

// ---------------------------------------------------------------------
// Result files (every merged CSV starts with algo,case,seed)

extern const char kFlowsHeader[];
extern const char kSamplesHeader[];
extern const char kQueueHeader[];
extern const char kThroughputHeader[];

void write_flows_csv(std::ostream &out, const std::vector<RunData> &runs);
void write_samples_csv(std::ostream &out, const std::vector<RunData> &runs);
void write_queue_csv(std::ostream &out, const std::vector<RunData> &runs);
void write_throughput_csv(std::ostream &out, const std::vector<RunData> &runs);

// The terminal table: one block per metric family present; with more than
// one seed, runs are named with theirs and the table over seeds follows.
std::string summary_table(const std::vector<RunSummary> &summaries);

} // namespace lumen
