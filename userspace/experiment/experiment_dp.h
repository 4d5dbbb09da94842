// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/experiment/experiment_dp.h - datapath experiments: lumen-dp
// (dpdk/) on a namespace leaf-spine whose hosts are DPDK ports
// (host_stack "dpdk"), one lumen-dp process serving every host from one
// lcore over net_af_packet. Per case (healthy; failure) and path policy
// (ecmp, ops, reps, reps-freeze) one run: every host sends messages back
// to back to the host of the same index on the next leaf for the
// duration, the switch ports are sampled every 10 ms, and in the failure
// case a leaf-spine link goes down mid-run in the leaf's namespace (the
// leaf routes around it; the other leaves keep hashing into it), the
// packets into the dead link counted every 10 ms from the spine's
// interface counters. The report (results.json, results.csv, fct.csv,
// plots, a table) has per run: message completion times, retransmissions
// (and how many were spurious), timeouts, load imbalance over the leaves'
// uplinks, queues of the spine and uplink ports, and packets into the dead
// link with the time from the failure to the last of them.
//
// The analysis is pure (below) and unit-tested; run_dp_experiment is the
// shell that creates the testbed and runs lumen-dp.
#pragma once

#include "experiment/experiment.h"
#include "experiment/experiment_run.h"
#include "experiment/report.h"
#include "testbed/testbed.h"

#include <cstdint>
#include <string>
#include <vector>

namespace lumen
{

// One line of lumen-dp's --fct-csv.
struct DpMessage {
	std::string host;
	std::uint32_t conn = 0, msg = 0;
	std::uint64_t bytes = 0, posted_ns = 0, done_ns = 0; // CLOCK_MONOTONIC
	bool done = false; // false: unfinished when the run ended
};
// Error naming `what` and the line for a malformed file.
std::vector<DpMessage> parse_fct_csv(const std::string &text, const std::string &what);

struct DpFct {
	std::uint64_t completed = 0, unfinished = 0;
	double p50_ms = 0, p99_ms = 0, max_ms = 0; // of the completed ones
	double unfinished_age_ms = 0; // the oldest unfinished message's age at end_ns
};
DpFct dp_fct(const std::vector<DpMessage> &msgs, std::uint64_t end_ns);

// max/mean of the bytes each of `group`'s ports sent in [from_ns, to_ns],
// the worst over the groups (a leaf's uplinks are a group); 0 when idle.
double dp_imbalance(const std::vector<QueueTick> &ticks, const std::vector<std::vector<std::size_t>> &groups,
		    std::uint64_t from_ns, std::uint64_t to_ns);

// p99 and max of the queue of the ports in `ports`, over every sample.
struct DpQueue {
	double p99_kb = 0, max_kb = 0;
};
DpQueue dp_queue(const std::vector<QueueTick> &ticks, const std::vector<std::size_t> &ports);

// Packets into a dead link: samples (CLOCK_MONOTONIC, cumulative count)
// from the failure on. total: from the first sample to the last; last_ms:
// when the count last grew, after the first sample; stopped: it did not
// grow over the last `quiet_ns` of the samples (else the policy never
// stopped sending into it).
struct DpDeadLink {
	std::uint64_t total = 0;
	double last_ms = 0;
	bool stopped = false;
};
DpDeadLink dp_dead_link(const std::vector<std::pair<std::uint64_t, std::uint64_t>> &samples, std::uint64_t quiet_ns);

// The lumen-dp binary: $LUMEN_DP_BIN, else lumen-dp next to the lumen
// binary `exe` (installed), else the build tree's (../dpdk/app/lumen-dp
// from userspace/); Error when none exists.
std::string find_lumen_dp(const std::string &exe);

// The switch ports of a leaf-spine by role (indices into the sampler's
// ports): spine -> leaf, leaf -> spine (also per leaf), leaf -> host.
struct DpLayout {
	std::vector<std::size_t> spine_ports, uplinks, downlinks;
	std::vector<std::vector<std::size_t>> uplink_groups; // per leaf
};
DpLayout port_layout(const std::vector<PortInfo> &ports, std::uint32_t leaves);

// What a datapath run needs, resolved and checked (root, lumen-dp, the
// result directory with raw/): prepare_dp_plan refuses --hosts and --vm
// and algorithms that are not path policies.
struct DpPlan {
	ExperimentSpec spec;
	TopologySpec topo;
	std::string dir, lumen_dp;
	unsigned lcore = 0;
};
DpPlan prepare_dp_plan(const ExperimentSpec &spec, const RunOptions &opts);

// lumen-dp's EAL arguments (one af_packet port per testbed host, on the
// plan's lcore, files under `prefix`), then `mode` and one --host per
// testbed host in the testbed's order (leaf by leaf).
std::vector<std::string> lumen_dp_hosts_argv(const DpPlan &plan, const Testbed &tb, const std::string &mode,
					     const std::string &prefix);

// The link leaf<leaf>-spine<spine> down or up (in the leaf's namespace);
// restore_link brings it up and waits until it forwards again.
void set_link(const TopologySpec &topo, std::uint32_t leaf, std::uint32_t spine, bool up);
void restore_link(const TopologySpec &topo, std::uint32_t leaf, std::uint32_t spine);
// Between two runs: once the queues have drained (100 ms), every switch
// port's count healed (heal_switch_ports): a packet a run's burst lost
// after the port counted it in (a peer's receive backlog over
// net.core.netdev_max_backlog, a link set down) would stay counted as
// queued, and above a port's ECN threshold mark every packet of the later
// runs. Returns the bytes healed: what the run before left.
std::uint64_t heal_idle_ports();

// The last 800 bytes of a log, for errors.
std::string tail_of(const std::string &path);
// printf of one number
std::string dp_fmt(const char *f, double v);

// Runs it (see the header comment); returns the result directory.
std::string run_dp_experiment(const ExperimentSpec &spec, const RunOptions &opts);

} // namespace lumen
