// userspace/bpfctl/cc_flows.h - the flows of the struct_ops algorithms
// (bpf_powertcp, bpf_theta_ptcp, bpf_hpcc; bpf_timely): one record per
// socket with state, read through the iterators of bpf/cc_flows.bpf.c over
// the pinned lumen_cc_sk and lumen_timely_sk.
#pragma once

#include "lumen/bpf_shared.h"

#include <string>
#include <vector>

namespace lumen
{

struct CcFlow {
	std::string local, remote; // "addr:port", IPv6 as "[addr]:port"
	std::string algo; // the struct_ops name
	std::uint32_t netns_ino = 0;
	bool timely = false; // raw (PowerTCP core) or traw (TIMELY) holds the record
	lumen_cc_flow raw{}; // window, tau, rate and the per-flow counts
	lumen_timely_flow traw{}; // rate, window, RTTs and the per-flow counts
};

// Every flow with state, in every namespace. Error when not loaded (no
// pinned lumen_cc_sk) or when the iterator cannot be loaded.
std::vector<CcFlow> cc_flows();

// One record as read from an iterator (exposed for tests).
CcFlow cc_flow_from(const lumen_cc_flow &raw);
CcFlow cc_flow_from(const lumen_timely_flow &raw);

} // namespace lumen
