// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/bpfctl/cc.h - the control plane of bpf/powertcp.bpf.c: load and
// register PowerTCP / theta-PowerTCP as struct_ops, unload, read state,
// counters and parameters, and publish new parameters. `lumen cc` prints
// what these return; the experiment runner calls them directly.
//
// What a load leaves behind, all under LUMEN_PIN_ROOT (names in
// lumen/bpf_shared.h):
//   cc_ops_int, cc_ops_theta   the two struct_ops maps. libbpf 1.1 has no
//                              struct_ops links, so registration is the map
//                              update of old, which persists after this
//                              process exits; unload deletes the element.
//   lumen_cc_params            parameters, one value per algorithm, set
//                              and copied under its spin lock
//   lumen_cc_faults            fault injection for tests (0: none)
//   lumen_cc_stats             per-CPU counters
//   lumen_cc_sk                per-socket state
//   lumen_int_sk               INT echoes, shared with the INT sockops part,
//                              which may own it; removed only when that part
//                              is not loaded
//
// `allow` adds both names to net.ipv4.tcp_allowed_congestion_control. The
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

constexpr unsigned kCcAlgoCount = LUMEN_CC_PARAM_ENTRIES;

struct CcAlgo {
	const char *name; // registered congestion control name
	lumen_ptcp_mode mode; // index into lumen_cc_params
	const char *ops_pin; // pin of its struct_ops map
	const char *map_name; // kernel name of its struct_ops map
};
extern const CcAlgo kCcAlgos[kCcAlgoCount];

struct CounterName {
	const char *name; // JSON key and table row
	const char *help;
};
extern const CounterName kCcCounters[LUMEN_CC_CNT_MAX];

// Which algorithms a change applies to: bit i = kCcAlgos[i].
constexpr unsigned kCcAllAlgos = (1u << kCcAlgoCount) - 1;
// "bpf_powertcp", "bpf_theta_ptcp" or "both"; UsageError otherwise.
unsigned parse_cc_algo_mask(const std::string &word);

// A parsed `PARAM=VALUE ...` list; unset fields are left alone.
struct CcParamChange {
	std::optional<std::uint32_t> gamma, flows, beta, host_bw;
	std::optional<std::uint64_t> base_rtt;

	bool empty() const;
	void apply(lumen_ptcp_params *p) const;
};
// gamma=G flows=N beta=BYTES host-bw=RATE base-rtt=DUR; UsageError on a bad
// word, an unknown or repeated parameter.
CcParamChange parse_cc_params(const std::vector<std::string> &words);

struct CcLoadRequest {
	unsigned algos = kCcAllAlgos; // whose parameters `change` sets
	CcParamChange change;
	bool allow = false; // add both names to the allowed list
};
struct CcLoadResult {
	lumen_ptcp_params params[kCcAlgoCount];
	bool int_sockops = false; // the INT source is loaded
};
// Validates everything first (UsageError), then loads and registers both
// algorithms; Error "already loaded" / "stale pins" when something of an
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
	bool loaded = false; // both registered, every pin there
	bool anything = false; // any of it there
	bool int_sockops = false;
	std::string default_cc; // net.ipv4.tcp_congestion_control here
	std::optional<std::vector<lumen_ptcp_params>> params; // live slots
	std::optional<std::vector<std::uint64_t>> counters; // enum lumen_cc_counter
};
CcStatus cc_status();

// Applies `change` to the algorithms in `algos` (each result validated
// before anything is written; on a failed write the earlier ones are put
// back) and returns the parameters now live. Error when not loaded.
std::vector<lumen_ptcp_params> set_cc_params(unsigned algos, const CcParamChange &change);

} // namespace lumen
