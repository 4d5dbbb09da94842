// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/experiment/experiment_fabric.h - what the experiment runner runs
// on: the hosts it starts traffic generators in, the switch queues it
// samples, the algorithms it loads, and the clocks it lines up. Two
// implementations: a namespace testbed on this machine (experiment_run.cpp)
// and real hosts driven over SSH (experiment_remote.h). The run loop in
// experiment_run.cpp only sees this interface, so a run on real servers is
// the same run as on the built-in testbed.
#pragma once

#include "experiment/experiment_kmod.h"
#include "experiment/report.h"

#include <cstdint>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace lumen
{

struct FabricHost {
	std::string name, role, addr; // role: sender | receiver | host
};

// The switch ports the runner watches.
class QueueSource
{
      public:
	virtual ~QueueSource() = default;
	virtual const std::vector<PortInfo> &ports() const = 0;
	// Appends the samples taken since the last call (a local source takes
	// one now), in this machine's CLOCK_MONOTONIC.
	virtual void poll(std::vector<QueueTick> &out) = 0;
};

// What the experiment loads for its algorithms; undone when the fabric goes.
struct AlgorithmSetup {
	std::vector<std::string> algorithms; // checked to exist where traffic runs
	std::vector<std::string> bpf_params; // `lumen cc load --allow` params; empty = no bpf_* algorithm
	bool int_sockops = false; // `lumen int enable` on the run's cgroup
	bool int_wide = false; // ... with --wide (INT option version 2)
	std::optional<KmodParamList> kmod_params; // tcp_powertcp's parameters for the run
};

class Fabric
{
      public:
	virtual ~Fabric() = default;

	virtual const std::vector<FabricHost> &hosts() const = 0;
	virtual std::uint32_t path_rate_mbps() const = 0;
	virtual std::uint64_t base_rtt_ns() const = 0; // idle
	virtual QueueSource &queue() = 0;
	virtual void load_algorithms(const AlgorithmSetup &setup) = 0;

	// Where `host` writes a generator's files for the run whose local raw
	// directory is `raw`; made if needed.
	virtual std::string host_dir(const std::string &host, const std::string &raw) = 0;
	// Starts `lumen ARGS...` (the host's lumen) in `host`, its output in
	// local files; the caller owns the local pid. with_input: its standard
	// input stays open for send_input() until end_run().
	virtual pid_t spawn_lumen(const std::string &host, const std::vector<std::string> &args,
				  const std::string &stdout_path, const std::string &stderr_path, bool with_input) = 0;
	// Sends `text` to the standard input of a process spawn_lumen started
	// with_input; Error if it no longer reads it.
	virtual void send_input(pid_t pid, const std::string &text) = 0;
	// Brings a file the host wrote (under host_dir) to the local path;
	// false if it does not exist there.
	virtual bool fetch(const std::string &host, const std::string &path, const std::string &local_path) = 0;
	// The host's CLOCK_MONOTONIC minus ours.
	virtual std::int64_t clock_offset_ns(const std::string &host) const = 0;
	// After a run's processes are gone: release what spawn kept.
	virtual void end_run() = 0;
	// tcp_powertcp's counters, summed over the kernels that run traffic.
	virtual KmodCounters kmod_stats() = 0;
	// Between runs, with every port idle: what a switch port still counts
	// as queued is drift (packets counted in that the kernel dropped on
	// their way out: bpf/int_switch.bpf.c, "What makes the count drift"),
	// and is counted as gone, so that the next run starts from an empty
	// queue and not from a phantom one its INT reports and its ECN and
	// tail drop act on. Returns the bytes healed.
	virtual std::uint64_t heal_idle_queues() = 0;

	// For config.json: the testbed or the hosts.
	virtual std::string describe_json() const = 0;
};

} // namespace lumen
