// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/cli/cmd_gate.cpp - `lumen gate`: direct-hop gating of a host's
// kernel traffic on a reconfigurable network (bpfctl/optical_gate.h).
#include <arpa/inet.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "base/args.h"
#include "base/error.h"
#include "base/list.h"
#include "base/system.h"
#include "base/units.h"
#include "bpfctl/optical_gate.h"
#include "cli/commands.h"
#include "sched/change.h"
#include "sched/schedule.h"
#include "testbed/testbed.h"

namespace lumen
{
namespace
{

const char kUsage[] =
	R"(usage: lumen gate attach DEV [--netns NS] --schedule FILE --node I --addrs A,B,... --rate R [GATE]
       lumen gate attach --testbed NAME --host H --rate R [GATE]
       lumen gate detach DEV [--netns NS] | --testbed NAME --host H
       lumen gate stats DEV [--netns NS] [--json] | --testbed NAME --host H [--json]
       lumen gate stage DEV [--netns NS] | --testbed NAME --host H  --schedule FILE --at NS
       lumen gate commit|abort DEV [--netns NS] | --testbed NAME --host H  --version V

Direct-hop gating of the kernel's traffic on a host of a reconfigurable
(optical circuit) network, docs/optical.md: DEV's root qdisc becomes fq and
a tc egress program gives every IPv4 packet to a node of the schedule the
departure time of the next window in which this host (--node I) reaches its
destination and the packet fits (windows shrunk by --margin on each side,
filled at the link's --rate: their byte budget). Packets wait; none is
dropped for want of a circuit. A TSO/GSO burst is booked as its segments
back to back, whole in one window; the gate lowers DEV's gso_max_size to
what a window carries, and drops a burst longer than any window (too_long).
Needs sch_fq (Debian's kernels have it; this machine's host kernel may not:
use tools/vm-run).

  --addrs A,B,...   the IPv4 address of node 0, 1, ... (one per node)
  --rate R          the link's rate, e.g. 1gbit (wire times and budgets)
GATE:
  --margin D        clock margin on each side of a window (default 0)
  --max-hold D      a packet that would wait longer is dropped (counted as
                    overflow): each destination's queue, bounded in time
                    (default 10 s)
  --max-period N    room in the tables for schedules of up to N slots, for
                    changes (default 8 x nodes)
  --lumend NAME     obey the lumend that publishes its slot state under NAME
                    (lumend --pin NAME, same node): while it says quiet
                    (clock not trusted, a change missed, stopped), every
                    packet to a node is dropped (counted as quiet)
  --stale D         with --lumend: lumend's state older than D (no slot
                    boundary published: lumend killed or stuck) makes the
                    gate drop every packet to a node (counted as stale)
                    until lumend publishes again (default 4 slots, at
                    least 100 ms)
  --testbed NAME --host H   a host of a rotor testbed: its eth0 and
                    namespace, its node, the testbed's addresses and schedule

stage, commit and abort are the gate's part in a schedule change at an
instant (what 'lumen sched change' does on every party): stage announces
FILE (same nodes) to take over at NS (CLOCK_TAI ns, a period boundary of
the schedule in force); once committed, departures from NS on follow it.
A gate with a change staged but not committed sends nothing that would
leave after NS (dropped, counted as quiet) until it is committed or aborted.
)";

struct Target {
	std::string netns, dev;
	std::string schedule;
	std::uint32_t node = 0;
	std::vector<std::uint32_t> addrs;
	bool from_testbed = false;
};

std::uint32_t parse_addr(const std::string &text)
{
	in_addr a{};
	if (inet_pton(AF_INET, text.c_str(), &a) != 1)
		throw UsageError("--addrs: '" + text + "' is not an IPv4 address");
	return ntohl(a.s_addr);
}

Target target_of(const Args &a, bool need_schedule)
{
	Target t;
	if (a.has("--testbed")) {
		if (a.positional.size() != 1 || a.has("--netns") || (need_schedule && a.has("--schedule")) ||
		    a.has("--node") || a.has("--addrs"))
			throw UsageError(
				"--testbed takes --host H instead of DEV, --netns, --schedule, --node and --addrs");
		if (!a.has("--host"))
			throw UsageError("--testbed needs --host H");
		auto st = testbed_status(*a.get("--testbed"));
		if (!st || !st->complete)
			throw UsageError("no complete testbed '" + *a.get("--testbed") + "'");
		if (st->schedule_path.empty())
			throw UsageError("testbed '" + st->name + "' is not a rotor testbed (no schedule)");
		t.from_testbed = true;
		t.schedule = st->schedule_path;
		t.dev = "eth0";
		bool found = false;
		for (std::uint32_t i = 0; i < st->hosts.size(); i++) {
			t.addrs.push_back(parse_addr(st->hosts[i].addr));
			if (st->hosts[i].name == *a.get("--host")) {
				t.netns = st->hosts[i].netns;
				t.node = i;
				found = true;
			}
		}
		if (!found)
			throw UsageError("testbed '" + st->name + "' has no host '" + *a.get("--host") + "'");
		return t;
	}
	if (a.positional.size() != 2)
		throw UsageError("give DEV, or --testbed NAME --host H");
	t.dev = a.positional[1];
	t.netns = a.get("--netns").value_or("");
	if (!need_schedule)
		return t;
	if (!a.has("--schedule") || !a.has("--node") || !a.has("--addrs"))
		throw UsageError("attach DEV needs --schedule FILE, --node I and --addrs A,B,...");
	t.schedule = *a.get("--schedule");
	t.node = (std::uint32_t)parse_uint(*a.get("--node"), "--node", 0, LUMEN_GATE_MAX_NODES - 1);
	// node i's address is the i-th item: an empty one would shift the rest,
	// and one address for two nodes would leave the gate guessing
	t.addrs = parse_ipv4_list(*a.get("--addrs"), "--addrs");
	return t;
}

int cmd_attach(const Args &a)
{
	a.allow_only({"--netns", "--schedule", "--node", "--addrs", "--rate", "--margin", "--max-hold", "--max-period",
		      "--lumend", "--stale", "--testbed", "--host"});
	Target t = target_of(a, true);
	if (!a.has("--rate"))
		throw UsageError("attach needs --rate R (the link's rate)");
	GateRequest req;
	req.netns = t.netns;
	req.dev = t.dev;
	req.schedule = sched::load(t.schedule);
	req.self = t.node;
	req.host_addrs = t.addrs;
	req.rate_mbps = parse_rate_mbps(*a.get("--rate"), "--rate");
	if (a.has("--margin"))
		req.margin_ns = parse_duration_ns(*a.get("--margin"), "--margin", 10 * kSec);
	if (a.has("--max-hold"))
		req.max_hold_ns = parse_duration_ns(*a.get("--max-hold"), "--max-hold", 3600 * kSec);
	if (a.has("--max-period"))
		req.max_period =
			(std::uint32_t)parse_uint(*a.get("--max-period"), "--max-period", 1, LUMEN_SLOT_MAX_PERIOD);
	req.lumend = a.get("--lumend").value_or("");
	if (a.has("--stale")) {
		if (req.lumend.empty())
			throw UsageError("--stale needs --lumend (it is the age of lumend's state)");
		req.stale_ns = parse_duration_ns(*a.get("--stale"), "--stale", 3600 * kSec);
	}
	attach_gate(req);
	std::printf("gate on %s%s: node %u of %u, schedule version %llu, %s, margin %llu ns\n", t.dev.c_str(),
		    t.netns.empty() ? "" : (" in " + t.netns).c_str(), t.node, req.schedule.nodes,
		    (unsigned long long)req.schedule.version, format_rate_mbps(req.rate_mbps).c_str(),
		    (unsigned long long)req.margin_ns);
	return 0;
}

int cmd_detach(const Args &a)
{
	a.allow_only({"--netns", "--testbed", "--host"});
	Target t = target_of(a, false);
	if (!detach_gate(t.netns, t.dev))
		throw Error("no gate on " + t.dev + (t.netns.empty() ? "" : " in " + t.netns));
	std::printf("gate on %s removed\n", t.dev.c_str());
	return 0;
}

// 2.5 ms, 10 s, 0 ns: a duration for the stats table
std::string dur(std::uint64_t ns)
{
	char b[32];
	if (ns >= 1'000'000'000ull)
		std::snprintf(b, sizeof(b), "%.6g s", (double)ns / 1e9);
	else if (ns >= 1'000'000ull)
		std::snprintf(b, sizeof(b), "%.6g ms", (double)ns / 1e6);
	else if (ns >= 1'000ull)
		std::snprintf(b, sizeof(b), "%.6g us", (double)ns / 1e3);
	else
		std::snprintf(b, sizeof(b), "%llu ns", (unsigned long long)ns);
	return b;
}

int cmd_stats(const Args &a)
{
	a.allow_only({"--netns", "--testbed", "--host", "--json"});
	Target t = target_of(a, false);
	GateStatus st = read_gate(t.netns, t.dev);
	const std::uint64_t now = tai_ns();
	sched::ChangeView v = sched::view(sched::banks_of(st.cfg), now);
	GateDevice dev = read_gate_device(t.netns, t.dev);
	if (a.has("--json")) {
		std::printf("%s\n", gate_status_json(st, dev, now).dump(2).c_str());
		return 0;
	}
	std::string lumend;
	for (const std::string &q : sched::quiet_names(st.osched.quiet))
		lumend += (lumend.empty() ? "; lumend says quiet: " : ", ") + q;
	std::printf("gate on %s: node %u of %u, %s%s\n", t.dev.c_str(), st.cfg.self, st.cfg.nodes,
		    sched::describe(v).c_str(), lumend.c_str());
	if (gate_change_overdue(st.cfg, now))
		std::printf("  the change is overdue: never committed; quiet until its coordinator's word (lumen gate "
			    "commit if the others switched, abort if none did)\n");
	/* what attach configured: the limits a user tunes */
	std::string stale =
		st.cfg.stale_ns ? dur(st.cfg.stale_ns) + " (lumend's state older: stale)" : "none (no --lumend)";
	std::printf("  rate %u Mbit/s, margin %s, max hold %s, stale limit %s\n", st.cfg.rate_mbps,
		    dur(st.cfg.margin_ns).c_str(), dur(st.cfg.max_hold_ns).c_str(), stale.c_str());
	if (dev.mtu)
		std::printf("  gso_max_size %llu bytes (the windows carry %llu), mtu %llu\n",
			    (unsigned long long)dev.gso_max_size,
			    (unsigned long long)gate_gso_cap(st.cfg, (std::uint32_t)dev.mtu, now),
			    (unsigned long long)dev.mtu);
	std::printf("%6s", "dst");
	for (std::uint32_t i = 0; i < LUMEN_GATE_NCOUNTERS; i++)
		std::printf(" %10s", gate_counter_name(i));
	std::printf(" %12s\n", "held max us");
	for (std::uint32_t k = 0; k <= st.dsts.size(); k++) {
		const lumen_gate_stats &s = k < st.dsts.size() ? st.dsts[k] : st.total;
		if (k < st.dsts.size())
			std::printf("%6u", k);
		else
			std::printf("%6s", "total");
		for (std::uint32_t i = 0; i < LUMEN_GATE_NCOUNTERS; i++)
			std::printf(" %10llu", (unsigned long long)s.packets[i]);
		std::printf(" %12.1f\n", (double)s.held_max_ns / 1e3);
	}
	return 0;
}

int cmd_stage(const Args &a)
{
	a.allow_only({"--netns", "--testbed", "--host", "--schedule", "--at"});
	Target t = target_of(a, false);
	if (!a.has("--schedule") || !a.has("--at"))
		throw UsageError("stage needs --schedule FILE and --at NS");
	sched::Schedule s = sched::load(*a.get("--schedule"));
	std::uint64_t at = parse_uint(*a.get("--at"), "--at", 1, UINT64_MAX);
	stage_gate(t.netns, t.dev, s, at);
	std::printf("gate on %s: version %llu staged for %llu ns TAI\n", t.dev.c_str(), (unsigned long long)s.version,
		    (unsigned long long)at);
	return 0;
}

int cmd_commit_abort(const Args &a, bool commit)
{
	a.allow_only({"--netns", "--testbed", "--host", "--version"});
	Target t = target_of(a, false);
	if (!a.has("--version"))
		throw UsageError(std::string(commit ? "commit" : "abort") + " needs --version V");
	std::uint64_t version = parse_uint(*a.get("--version"), "--version", 0, UINT64_MAX);
	if (commit)
		commit_gate(t.netns, t.dev, version);
	else
		abort_gate(t.netns, t.dev, version);
	std::printf("gate on %s: the change to version %llu is %s\n", t.dev.c_str(), (unsigned long long)version,
		    commit ? "committed" : "aborted");
	return 0;
}

int run(const std::vector<std::string> &argv)
{
	Args a = Args::parse(argv, {"--json"});
	return run_subcommand<Args>(a.positional.empty() ? nullptr : &a.positional[0],
				    {{"attach", cmd_attach},
				     {"detach", cmd_detach},
				     {"stats", cmd_stats},
				     {"stage", cmd_stage},
				     {"commit", [](const Args &x) { return cmd_commit_abort(x, true); }},
				     {"abort", [](const Args &x) { return cmd_commit_abort(x, false); }}},
				    a);
}

} // namespace

const Command kGateCommand = {"gate", "direct-hop gating of a host's kernel traffic on an optical circuit schedule",
			      kUsage, run};

} // namespace lumen
