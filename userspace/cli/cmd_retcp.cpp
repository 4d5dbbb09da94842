// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/cli/cmd_retcp.cpp - `lumen retcp`: the reTCP baseline of a
// reconfigurable network, bpf_retcp (bpfctl/retcp.h).
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "base/args.h"
#include "base/error.h"
#include "base/list.h"
#include "base/units.h"
#include "bpfctl/cc.h"
#include "bpfctl/retcp.h"
#include "cli/commands.h"
#include "sched/schedule.h"

namespace lumen
{
namespace
{

const char kUsage[] =
	R"(usage: lumen retcp load --lumend NAME --schedule FILE --addrs A,B,... [--jump N]
                        [--prebuffer D] [--stale D] [--allow]
       lumen retcp unload
       lumen retcp status [--json]

reTCP (include/lumen/retcp.h) as the congestion control bpf_retcp: Reno
whose window (and ssthresh) is multiplied by --jump when the circuit to the
destination comes up, and divided by it when the circuit goes, the baseline
the PowerTCP thesis compares PowerTCP against on a reconfigurable network.
The circuit is the schedule's, as the lumend pinned under NAME (lumend --pin
NAME, this host's) publishes it at every slot boundary: per destination
node, the next window in which this host reaches it. While that lumend says
quiet (clock not trusted, a change missed, stopped) or publishes nothing
for --stale, every flow runs on the packet network's window. A destination
that is no node of the schedule gets plain Reno. The change takes effect on
the flow's first ACK after it. Select it per socket or per namespace, as any
algorithm (TCP_CONGESTION, sysctl net.ipv4.tcp_congestion_control).

  --lumend NAME     the lumend to follow (its node is this host's)
  --schedule FILE   the schedule that lumend runs (its nodes, slot length)
  --addrs A,B,...   the IPv4 address of node 0, 1, ... (one per node)
  --jump N          circuit rate / packet network rate, 1..64 (default 4, the
                    thesis' 100 vs 25 Gbit/s)
  --prebuffer D     jump up this long before the circuit opens (0 .. 100ms,
                    default 0; the thesis runs 1800us and 600us), so the
                    ToR's queue holds data when it does
  --stale D         lumend's state older than D means lumend is gone: the
                    packet network's window (default 4 slots, >= 100 ms)
  --allow           also allow it to unprivileged users and other network
                    namespaces (net.ipv4.tcp_allowed_congestion_control)

unload unregisters it (refused while it is this namespace's default);
status shows its configuration, the lumend's last word and its counters.
Needs root, BTF and Linux >= 6.1. See docs/optical.md.
)";

int cmd_load(const Args &a)
{
	a.allow_only({"--lumend", "--schedule", "--addrs", "--jump", "--prebuffer", "--stale", "--allow"});
	if (a.positional.size() != 1)
		throw UsageError("load takes no positional argument");
	if (!a.has("--lumend") || !a.has("--schedule") || !a.has("--addrs"))
		throw UsageError("load needs --lumend NAME, --schedule FILE and --addrs A,B,...");
	RetcpRequest req;
	req.lumend = *a.get("--lumend");
	req.host_addrs = parse_ipv4_list(*a.get("--addrs"), "--addrs");
	if (a.has("--jump"))
		req.params.jump = (std::uint32_t)parse_uint(*a.get("--jump"), "--jump", 1, LUMEN_RETCP_JUMP_MAX);
	if (a.has("--prebuffer"))
		req.params.prebuffer_ns =
			parse_duration_ns(*a.get("--prebuffer"), "--prebuffer", LUMEN_RETCP_PREBUFFER_MAX_NS);
	if (a.has("--stale"))
		req.stale_ns = parse_duration_ns(*a.get("--stale"), "--stale", 3600 * kSec);
	req.allow = a.has("--allow");
	req.schedule = sched::load(*a.get("--schedule"));
	load_retcp(req);
	std::printf(LUMEN_CC_NAME_RETCP " registered: following lumend '%s', %u nodes, jump %u, prebuffer %llu ns\n",
		    req.lumend.c_str(), req.schedule.nodes, req.params.jump,
		    (unsigned long long)req.params.prebuffer_ns);
	return 0;
}

int cmd_unload(const Args &a)
{
	a.allow_only({});
	if (!unload_retcp())
		std::printf(LUMEN_CC_NAME_RETCP " is not loaded: nothing to do\n");
	else
		std::printf(LUMEN_CC_NAME_RETCP " unregistered\n");
	return 0;
}

int cmd_status(const Args &a)
{
	a.allow_only({"--json"});
	const RetcpStatus st = retcp_status();
	nlohmann::json counters = nlohmann::json::object();
	for (unsigned i = 0; i < LUMEN_RETCP_CNT_MAX; i++)
		counters[kRetcpCounters[i].name] = st.counters[i];
	if (a.has("--json")) {
		nlohmann::json j = {{"loaded", st.loaded}, {"registered", st.registered}};
		if (st.loaded) {
			j["jump"] = st.cfg.params.jump;
			j["prebuffer_ns"] = st.cfg.params.prebuffer_ns;
			j["stale_ns"] = st.cfg.stale_ns;
			j["nodes"] = st.cfg.nodes;
			j["self"] = st.cfg.self;
			j["lumend_quiet"] = st.lumend.quiet;
			j["lumend_version"] = st.lumend.version;
			j["lumend_age_ns"] = st.lumend_age_ns;
			j["lumend_stale"] = st.lumend_stale;
			j["counters"] = counters;
		}
		std::printf("%s\n", j.dump().c_str());
		return 0;
	}
	if (!st.loaded) {
		std::printf(LUMEN_CC_NAME_RETCP ": not loaded%s\n",
			    st.registered ? " (but registered: not by lumen?)" : "");
		return 0;
	}
	std::printf(LUMEN_CC_NAME_RETCP ": %s; node %u of %u, jump %u, prebuffer %llu ns, stale after %llu ns\n",
		    st.registered ? "registered" : "NOT registered", st.cfg.self, st.cfg.nodes, st.cfg.params.jump,
		    (unsigned long long)st.cfg.params.prebuffer_ns, (unsigned long long)st.cfg.stale_ns);
	const char *word = st.lumend.quiet   ? "quiet (every flow on the packet network's window)"
			   : st.lumend_stale ? "gating, but stale: gone without its last word? (every flow on the "
					       "packet network's window)"
					     : "gating";
	std::printf("lumend: schedule version %llu, last boundary %.3f ms ago, %s\n",
		    (unsigned long long)st.lumend.version, (double)st.lumend_age_ns / 1e6, word);
	for (unsigned i = 0; i < LUMEN_RETCP_CNT_MAX; i++)
		std::printf("  %-14s %12llu  %s\n", kRetcpCounters[i].name, (unsigned long long)st.counters[i],
			    kRetcpCounters[i].help);
	return 0;
}

int run(const std::vector<std::string> &argv)
{
	Args a = Args::parse(argv, {"--json", "--allow"});
	return run_subcommand<Args>(a.positional.empty() ? nullptr : &a.positional[0],
				    {{"load", cmd_load}, {"unload", cmd_unload}, {"status", cmd_status}}, a);
}

} // namespace

const Command kRetcpCommand = {"retcp", "reTCP: Reno whose window jumps with the circuit (bpf_retcp), for lumend",
			       kUsage, run};

} // namespace lumen
