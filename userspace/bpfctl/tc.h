// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/bpfctl/tc.h - traffic control for the eBPF parts: qdiscs through
// iproute2's tc (run inside a namespace), clsact hooks and BPF filters
// through libbpf (call inside the device's namespace, see NetnsGuard).
#pragma once

#include "base/netns.h"
#include "base/process.h"

#include <bpf/libbpf.h>

#include <string>
#include <vector>

namespace lumen
{

// `tc ARGS...` in `ns`; its own failure is in the result.
ProcessResult run_tc(const Netns &ns, const std::vector<std::string> &args);
// As run_tc; Error "'tc ...' in <ns> failed: <output>" unless it succeeds.
void tc_or_throw(const Netns &ns, const std::vector<std::string> &args);
// True when the qdisc at ffff: of DEV is a clsact (an "ingress" qdisc has
// the same handle, and accepts a filter for the egress parent without
// ever running it on egress).
bool has_clsact(const Netns &ns, const std::string &dev);
// True when DEV has no tc filter left on either clsact hook.
bool clsact_unused(const Netns &ns, const std::string &dev);

struct TcFilter {
	__u32 handle = 0;
	__u32 priority = 0;
	__u32 prog_id = 0;
};

// Creates the clsact qdisc; returns whether it was created (false: existed).
bool create_clsact(unsigned ifindex, const std::string &dev);
void destroy_clsact(unsigned ifindex);
TcFilter attach_filter(unsigned ifindex, bpf_tc_attach_point point, int prog_fd, const std::string &dev);
// The program id on a filter, 0 when the filter is gone.
__u32 query_filter(unsigned ifindex, bpf_tc_attach_point point, __u32 handle, __u32 priority);
// Detaches the filter if it still runs `prog_id`; returns a warning or "".
std::string detach_filter(unsigned ifindex, bpf_tc_attach_point point, const TcFilter &f, const std::string &dev);

} // namespace lumen
