// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/bpfctl/cc.h - the control plane of bpf/powertcp.bpf.c and
// bpf/timely.bpf.c: load and register PowerTCP / theta-PowerTCP / HPCC and
// TIMELY as struct_ops, unload, read state, counters and parameters, and
// publish new parameters. `lumen cc` prints what these return; the
// experiment runner calls them directly.
//
// What a load leaves behind, all under LUMEN_PIN_ROOT (names in
// lumen/bpf_shared.h):
//   cc_ops_int, cc_ops_theta,  the struct_ops maps. libbpf 1.1 has no
//   cc_ops_hpcc, cc_ops_timely struct_ops links, so registration is the map
//                              update of old, which persists after this
//                              process exits; unload deletes the element.
//   lumen_cc_params            parameters of the PowerTCP core, one value
//                              per mode (int, theta, hpcc), set and copied
//                              under its spin lock
//   lumen_timely_params        TIMELY's, one value, the same way
//   lumen_cc_faults            fault injection for tests (0: none), both objects
//   lumen_cc_stats             per-CPU counters of the PowerTCP core
//   lumen_timely_stats         per-CPU counters of TIMELY
//   lumen_cc_sk, lumen_timely_sk  per-socket state
//   lumen_int_sk               INT echoes, shared with the INT sockops part,
//                              which may own it; removed only when that part
//                              is not loaded
//
// `allow` adds every name to net.ipv4.tcp_allowed_congestion_control. The
// kernel keeps that list as a flag on each registered algorithm, so our names
// can be in it only while they are registered, i.e. only because a load put
// them there: unload removes them (and unregistering would drop them anyway),
// which restores the list to what it was before the load without a marker.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <linux/types.h>

extern "C" {
#include "lumen/bpf_shared.h"
}

namespace lumen
{

// The algorithms, by index: the PowerTCP core's modes first (index = enum
// lumen_ptcp_mode = its slot in lumen_cc_params), then TIMELY.
constexpr unsigned kCcPtcpAlgoCount = LUMEN_CC_PARAM_ENTRIES;
constexpr unsigned kCcTimely = kCcPtcpAlgoCount; // index of bpf_timely
constexpr unsigned kCcAlgoCount = kCcPtcpAlgoCount + 1;

struct CcAlgo {
	const char *name; // registered congestion control name
	lumen_ptcp_mode mode; // index into lumen_cc_params (PowerTCP core only)
	const char *ops_pin; // pin of its struct_ops map
	const char *map_name; // kernel name of its struct_ops map
};
extern const CcAlgo kCcAlgos[kCcAlgoCount];

struct CounterName {
	const char *name; // JSON key and table row
	const char *help;
};
extern const CounterName kCcCounters[LUMEN_CC_CNT_MAX];
extern const CounterName kTimelyCounters[LUMEN_TIMELY_CNT_MAX];

// Which algorithms a change applies to: bit i = kCcAlgos[i].
constexpr unsigned kCcAllAlgos = (1u << kCcAlgoCount) - 1;
constexpr unsigned kCcPtcpAlgos = (1u << kCcPtcpAlgoCount) - 1;
constexpr unsigned kCcTimelyBit = 1u << kCcTimely;
// An algorithm's name, or "all" (also "both", its name from when there were
// two); UsageError otherwise.
unsigned parse_cc_algo_mask(const std::string &word);

// A parsed `PARAM=VALUE ...` list; unset fields are left alone. Each key
// belongs to some of the algorithms (see parse_cc_params); the values'
// ranges are the cores' (lumen_*_params_validate), checked on the result.
struct CcParamChange {
	// the PowerTCP core (bpf_powertcp, bpf_theta_ptcp, bpf_hpcc); host_bw
	// is TIMELY's too
	std::optional<std::uint32_t> gamma, flows, beta, host_bw;
	std::optional<std::uint64_t> base_rtt;
	// HPCC's law (bpf_hpcc only)
	std::optional<std::uint32_t> eta, max_stage, wai;
	// TIMELY (bpf_timely only)
	std::optional<std::uint64_t> t_low, t_high, min_rtt;
	std::optional<std::uint32_t> delta, alpha, timely_beta, hai_events, segment;

	bool empty() const;
	// the algorithms (kCcAlgos bits) that have at least one of the keys set
	unsigned algos() const;
	// PowerTCP-core keys, and HPCC's for mode LUMEN_PTCP_MODE_HPCC
	void apply(lumen_ptcp_params *p, lumen_ptcp_mode mode = LUMEN_PTCP_MODE_INT) const;
	// TIMELY's keys (host-bw included)
	void apply(lumen_timely_params *p) const;
};
// gamma=G flows=N beta=BYTES host-bw=RATE base-rtt=DUR (PowerTCP core),
// eta=U max-stage=N wai=BYTES (HPCC), t-low=DUR t-high=DUR min-rtt=DUR
// delta=RATE alpha=F beta=F hai-events=N segment=BYTES host-bw=RATE (TIMELY).
// `beta` is TIMELY's fraction when `algos` is bpf_timely alone, else the
// PowerTCP core's bytes. UsageError on a bad word, an unknown or repeated
// parameter, or one no algorithm in `algos` has.
CcParamChange parse_cc_params(const std::vector<std::string> &words, unsigned algos = kCcAllAlgos);

// Every algorithm's parameters.
struct CcParamSets {
	lumen_ptcp_params ptcp[kCcPtcpAlgoCount]; // index = mode
	lumen_timely_params timely;
};
// The defaults with `change` applied to the algorithms in `algos`; each set
// validated by its core (UsageError "invalid parameters for NAME: <the
// core's message>").
CcParamSets cc_param_sets(const CcParamSets &base, unsigned algos, const CcParamChange &change);
CcParamSets cc_default_param_sets();

struct CcLoadRequest {
	unsigned algos = kCcAllAlgos; // whose parameters `change` sets
	CcParamChange change;
	bool allow = false; // add every name to the allowed list
};
struct CcLoadResult {
	lumen_ptcp_params params[kCcPtcpAlgoCount];
	lumen_timely_params timely;
	bool int_sockops = false; // the INT source is loaded
};
// Validates everything first (UsageError), then loads and registers every
// algorithm; Error "already loaded" / "stale pins" when something of an
// earlier load is there. Any failure, and a Ctrl-C during it, undoes all of
// it. Root only.
CcLoadResult load_cc(const CcLoadRequest &req);

struct CcUnloadResult {
	bool nothing_loaded = false;
	bool int_sk_kept = false; // the INT sockops part still uses lumen_int_sk
};
// Refused (Error) while the current namespace's default is one of ours.
CcUnloadResult unload_cc();

struct CcStatus {
	bool registered[kCcAlgoCount] = {};
	bool allowed[kCcAlgoCount] = {};
	bool loaded = false; // all registered, every pin there
	bool anything = false; // any of it there
	bool int_sockops = false;
	std::string default_cc; // net.ipv4.tcp_congestion_control here
	std::optional<std::vector<lumen_ptcp_params>> params; // live slots, index = mode
	std::optional<lumen_timely_params> timely_params;
	std::optional<std::vector<std::uint64_t>> counters; // enum lumen_cc_counter
	std::optional<std::vector<std::uint64_t>> timely_counters; // enum lumen_timely_counter
};
CcStatus cc_status();

// Applies `change` to the algorithms in `algos` (each result validated
// before anything is written; on a failed write the earlier ones are put
// back) and returns the parameters now live. Error when not loaded.
CcParamSets set_cc_params(unsigned algos, const CcParamChange &change);

} // namespace lumen
