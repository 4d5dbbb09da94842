// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/experiment/experiment_kmod.h - the kernel module tcp_powertcp in an
// experiment: which algorithms are its own (powertcp, theta_powertcp, hpcc), its
// runtime parameters set for a run and restored afterwards (as `lumen cc
// load` parameters are for the eBPF algorithms), and its stats counters,
// read around each run for summary.json.
#pragma once

#include "base/netns.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace lumen
{

// The module's algorithms, by the names it registers.
bool is_kmod_algorithm(const std::string &name); // powertcp, theta_powertcp, hpcc

// How an algorithm is implemented: "kmod", "bpf" (struct_ops) or "kernel"
// (cubic, bbr, ... of the running kernel). For config.json.
const char *cc_impl(const std::string &algo);

// /sys/module/tcp_powertcp (LUMEN_KMOD_SYSFS overrides it, for tests).
std::string kmod_sysfs_dir();
bool kmod_loaded();

using KmodCounters = std::map<std::string, std::uint64_t>;

// /proc/net/powertcp: one "name value" per line. Throws Error naming
// `what` and the line on anything else.
KmodCounters parse_kmod_stats(const std::string &text, const std::string &what);
// after - before per counter; the gauges "states" and "hooks" are taken
// from `after` as they are.
KmodCounters kmod_counters_delta(const KmodCounters &before, const KmodCounters &after);
// /proc/net/powertcp of the calling thread's network namespace, or of `ns`
// (counters are per namespace; LUMEN_KMOD_PROC overrides the path, for
// tests). Error if the module is not loaded or the file is not counters.
std::string kmod_proc_path();
KmodCounters read_kmod_stats();
KmodCounters read_kmod_stats(const Netns &ns);
// Counters of several namespaces: summed; "hooks" (host-wide) the largest.
void kmod_counters_add(KmodCounters &sum, const KmodCounters &one);

// Module parameter values for a run: host_bw_mbps and base_rtt_us from the
// path, then the experiment's cc_params (the `lumen cc set` names: gamma,
// flows, beta, host-bw, base-rtt) translated to the module's units.
// UsageError for a parameter or value the module does not take.
using KmodParamList = std::vector<std::pair<std::string, std::string>>;
KmodParamList kmod_param_values(std::uint32_t host_bw_mbps, std::uint64_t tau_ns,
				const std::map<std::string, std::string> &cc_params);

// Writes the parameters now and the previous values back on destruction
// (in reverse order, so combinations the module validates together stay
// valid on the way back).
class KmodParamsSet
{
      public:
	explicit KmodParamsSet(const KmodParamList &values);
	KmodParamsSet(const KmodParamsSet &) = delete;
	KmodParamsSet &operator=(const KmodParamsSet &) = delete;
	~KmodParamsSet();

      private:
	void restore();
	KmodParamList saved_; // name, old value; in the order written
};

} // namespace lumen
