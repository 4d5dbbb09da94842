// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/experiment/experiment_run.h - running an experiment on a namespace
// testbed, or on real hosts over SSH (--hosts, experiment_remote.h): testbed
// up (or hosts checked), PowerTCP and INT loaded when an algorithm needs
// them, one run per (case, algorithm) with traffic servers and clients in
// the hosts and the switch queues sampled every 10 ms, then everything
// undone and the results written (report.h, report_plot.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "experiment/experiment.h"
#include "experiment/report.h"
#include "testbed/testbed.h"

namespace lumen
{

struct RunOptions {
	std::string out_dir; // "" = results/<name>-<UTC timestamp>
	std::vector<std::string> algorithms; // empty = the experiment's
	std::optional<std::uint64_t> duration_ns; // --duration
	bool smoke = false; // --smoke: the experiment's smoke_duration, its first seed only
	std::vector<std::uint64_t> seeds; // --seeds: empty = the experiment's
	std::optional<std::uint32_t> rate_mbps; // --rate: the bottleneck's (fabric's) rate instead
	std::optional<std::uint64_t> delay_ns; // --delay: the bottleneck's (fabric's) extra one-way delay instead
	std::string vm_kernel; // --vm: "" = here; 6.1 | 6.12 (experiment_vm.h)
	std::string kmod; // --kmod: tcp_powertcp.ko for the VM ("" = the build tree's)
	std::string hosts_file; // --hosts: drive the hosts of this inventory over SSH (inventory.h)
};

// The directory experiments are looked up in: $LUMEN_DATA_DIR/experiments,
// else the source tree's experiments/.
std::string experiments_dir();
// NAME -> experiments_dir()/NAME.json; a path (has '/' or ends in .json)
// is taken as it is. Error when it does not exist.
std::string find_experiment_file(const std::string &name_or_path);
ExperimentSpec load_experiment(const std::string &name_or_path);

// results/<name>-<UTC timestamp>
std::string default_out_dir(const ExperimentSpec &spec);
// Creates the result directory; UsageError unless it is new or empty.
void prepare_out_dir(const std::string &dir);

// --rate and --delay: the link the experiment's traffic shares (dumbbell:
// the middle link; incast: the receiver's port; leaf-spine: the fabric)
// at another rate or extra one-way delay. UsageError (naming the option)
// when the result is not a valid topology; topo unchanged then.
void apply_link_overrides(TopologySpec &topo, const RunOptions &opts);

// The spec as it will run: duration (--duration, --smoke), algorithms,
// seeds (--seeds; --smoke keeps the first).
ExperimentSpec resolve_experiment(const ExperimentSpec &spec, const RunOptions &opts);

// A suite's members (ExperimentSpec::suite, relative to its file) as they
// will run: the suite's algorithms and seeds, with --smoke the suite's
// "smoke" members, algorithms and loads.
std::vector<ExperimentSpec> suite_members(const ExperimentSpec &suite, bool smoke);

// TIMELY's thresholds for a testbed whose PowerTCP tau is tau_ns: the
// TIMELY paper's ratios to its minimum RTT (20 us; T_low 50 us = 2.5x,
// T_high 500 us = 25x).
constexpr double kTimelyTLowPerTau = 2.5, kTimelyTHighPerTau = 25.0;
std::uint64_t timely_t_low_ns(std::uint64_t tau_ns);
std::uint64_t timely_t_high_ns(std::uint64_t tau_ns);

// Runs it (a TCP experiment, a datapath one, or a suite); returns the
// result directory. Throws Error / Interrupted after undoing everything it
// set up.
std::string run_experiment(const ExperimentSpec &spec, const RunOptions &opts);
// A TCP experiment; sums: the summaries of its runs.
std::string run_tcp_experiment(const ExperimentSpec &spec, const RunOptions &opts, std::vector<RunSummary> &sums);
// A suite: every member into DIR/<member name>/ (a complete result
// directory each), then the claims into DIR/claims.{json,csv,txt}.
std::string run_suite(const ExperimentSpec &suite, const RunOptions &opts);

} // namespace lumen
