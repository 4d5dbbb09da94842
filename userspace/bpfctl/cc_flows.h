// userspace/bpfctl/cc_flows.h - the flows of the struct_ops algorithms
// (bpf_powertcp, bpf_theta_ptcp): one record per socket with state, read
// through the iterator of bpf/cc_flows.bpf.c over the pinned lumen_cc_sk.
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
	lumen_cc_flow raw{}; // window, tau, rate and the per-flow counts
};

// Every flow with state, in every namespace. Error when not loaded (no
// pinned lumen_cc_sk) or when the iterator cannot be loaded.
std::vector<CcFlow> cc_flows();

// One record as read from the iterator (exposed for tests).
CcFlow cc_flow_from(const lumen_cc_flow &raw);

} // namespace lumen
