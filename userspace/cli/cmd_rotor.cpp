// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/cli/cmd_rotor.cpp - `lumen rotor`: the emulated optical circuit
// switch of a rotor testbed (bpfctl/rotor.h): what became of the frames
// that came in on each port, and a new schedule for it.
#include <algorithm>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "base/args.h"
#include "base/error.h"
#include "base/system.h"
#include "base/units.h"
#include "bpfctl/rotor.h"
#include "cli/commands.h"
#include "sched/change.h"
#include "sched/schedule.h"

namespace lumen
{
namespace
{

const char kUsage[] =
	R"(usage: lumen rotor stats [--json]
       lumen rotor load SCHEDULE
       lumen rotor stage SCHEDULE --at NS
       lumen rotor commit|abort VERSION
       lumen rotor rate R|0

The rotor switch of a rotor testbed ('lumen testbed up --topology rotor',
docs/optical.md): one eBPF program on every port that forwards a frame
only while the current slot of its schedule (CLOCK_TAI) connects the
frame's source to its destination, outside the guard, and drops and counts
everything else.

stats    per port (node, uplink) and in total: frames forwarded, and frames
         dropped in the guard, in a slot that does not connect the pair,
         before the schedule's t0, to an unknown address, not IPv4, during
         a change not committed, and late: a gated host stamped them with a
         departure inside a window of the pair, and they came after it;
         stamped: frames that carried a departure, delay max: the longest
         one arrived after it
load     put a new schedule in force at once (same nodes and uplinks, a
         period that fits the tables), atomically; the hosts do not follow:
         for tests
stage    the rotor's part in a schedule change at an instant (what 'lumen
         sched change' does on every party): announce SCHEDULE to take over
         at NS (CLOCK_TAI ns, a period boundary of the schedule in force)
commit   the change to VERSION happens at its instant; until a change is
abort    committed, the rotor forwards nothing after the instant (counted as
         changing); abort keeps the schedule in force
rate     the links' rate, e.g. 1gbit: a veth delivers a frame at once, a
         link in its wire time; with a rate the switch puts the frame's
         tail where the link would and drops (as guard) a frame whose tail
         reaches the guard, as a real switch loses that light; 0 (the
         default): the head alone is judged
)";

nlohmann::json stats_json(const lumen_rotor_stats &st)
{
	nlohmann::json j;
	for (std::uint32_t i = 0; i < LUMEN_ROTOR_NCOUNTERS; i++)
		j[rotor_counter_name(i)] = st.frames[i];
	j["forwarded_bytes"] = st.forwarded_bytes;
	j["stamped"] = st.stamped;
	j["delay_max_ns"] = st.delay_max_ns;
	return j;
}

int cmd_stats(const Args &a)
{
	a.allow_only({"--json"});
	if (a.positional.size() != 1)
		throw UsageError("stats takes no argument");
	RotorStatus st = read_rotor();
	const std::uint64_t now = tai_ns();
	sched::ChangeView v = sched::view(sched::banks_of(st.cfg), now);
	const lumen_slot_timing &t = v.in_force.timing;
	/* staged and never committed, the instant 4 slots (at least 100 ms)
	 * ago: the switch drops every frame (changing) until the word comes
	 * (include/lumen/optical.h) */
	const bool overdue =
		lumen_change_overdue(&st.cfg.change, now, std::max<std::uint64_t>(4 * t.slot_ns, 100'000'000ull)) != 0;
	if (a.has("--json")) {
		nlohmann::json ports = nlohmann::json::array();
		for (std::uint32_t k = 0; k < st.ports.size(); k++) {
			nlohmann::json p = stats_json(st.ports[k]);
			p["node"] = k % st.cfg.nodes;
			p["uplink"] = k / st.cfg.nodes;
			ports.push_back(p);
		}
		nlohmann::json j = {{"version", v.in_force.version},
				    {"quiet", v.quiet},
				    {"change", sched::change_json(v)},
				    {"change_overdue", overdue},
				    {"nodes", st.cfg.nodes},
				    {"uplinks", st.cfg.uplinks},
				    {"period", t.period},
				    {"slot_ns", t.slot_ns},
				    {"guard_ns", t.guard_ns},
				    {"t0_ns", t.t0_ns},
				    {"table_period", st.cfg.table_period},
				    {"rate_mbps", st.cfg.rate_mbps},
				    {"total", stats_json(st.total)},
				    {"ports", ports}};
		std::printf("%s\n", j.dump(2).c_str());
		return 0;
	}
	std::printf("rotor switch: %s; %u nodes, %u uplink(s), period %u slots of %.3f us (guard %.3f us)\n",
		    sched::describe(v).c_str(), st.cfg.nodes, st.cfg.uplinks, t.period, (double)t.slot_ns / 1e3,
		    (double)t.guard_ns / 1e3);
	if (overdue)
		std::printf("  the change is overdue: never committed; every frame dropped (changing) until its "
			    "coordinator's word (lumen rotor commit if the hosts switched, abort if none did)\n");
	std::printf("%6s %6s", "node", "uplink");
	for (std::uint32_t i = 0; i < LUMEN_ROTOR_NCOUNTERS; i++)
		std::printf(" %12s", rotor_counter_name(i));
	std::printf(" %12s %12s\n", "stamped", "delay max us");
	for (std::uint32_t k = 0; k <= st.ports.size(); k++) {
		const lumen_rotor_stats &p = k < st.ports.size() ? st.ports[k] : st.total;
		if (k < st.ports.size())
			std::printf("%6u %6u", k % st.cfg.nodes, k / st.cfg.nodes);
		else
			std::printf("%13s", "total");
		for (std::uint32_t i = 0; i < LUMEN_ROTOR_NCOUNTERS; i++)
			std::printf(" %12llu", (unsigned long long)p.frames[i]);
		std::printf(" %12llu %12.1f\n", (unsigned long long)p.stamped, (double)p.delay_max_ns / 1e3);
	}
	return 0;
}

int cmd_rate(const Args &a)
{
	a.allow_only({});
	if (a.positional.size() != 2)
		throw UsageError("rate takes one rate (e.g. 1gbit, or 0: none)");
	std::uint32_t mbps = a.positional[1] == "0" ? 0 : parse_rate_mbps(a.positional[1], "rate");
	set_rotor_rate(mbps);
	std::printf("rotor switch: links at %s\n", mbps ? format_rate_mbps(mbps).c_str() : "no rate (heads only)");
	return 0;
}

int cmd_load(const Args &a)
{
	a.allow_only({});
	if (a.positional.size() != 2)
		throw UsageError("load takes one schedule file");
	sched::Schedule s = sched::load(a.positional[1]);
	load_rotor_schedule(s);
	std::printf("rotor switch: schedule version %llu loaded\n", (unsigned long long)s.version);
	return 0;
}

int cmd_stage(const Args &a)
{
	a.allow_only({"--at"});
	if (a.positional.size() != 2 || !a.has("--at"))
		throw UsageError("stage takes one schedule file and --at NS");
	sched::Schedule s = sched::load(a.positional[1]);
	std::uint64_t at = parse_uint(*a.get("--at"), "--at", 1, UINT64_MAX);
	stage_rotor(s, at);
	std::printf("rotor switch: version %llu staged for %llu ns TAI\n", (unsigned long long)s.version,
		    (unsigned long long)at);
	return 0;
}

std::uint64_t version_arg(const Args &a, const char *what)
{
	a.allow_only({});
	if (a.positional.size() != 2)
		throw UsageError(std::string(what) + " takes the VERSION of the change");
	return parse_uint(a.positional[1], "VERSION", 0, UINT64_MAX);
}

int cmd_commit(const Args &a)
{
	std::uint64_t version = version_arg(a, "commit");
	commit_rotor(version);
	std::printf("rotor switch: the change to version %llu is committed\n", (unsigned long long)version);
	return 0;
}

int cmd_abort(const Args &a)
{
	std::uint64_t version = version_arg(a, "abort");
	abort_rotor(version);
	std::printf("rotor switch: the change to version %llu is aborted\n", (unsigned long long)version);
	return 0;
}

int run(const std::vector<std::string> &argv)
{
	Args a = Args::parse(argv, {"--json"});
	return run_subcommand<Args>(a.positional.empty() ? nullptr : &a.positional[0],
				    {{"stats", cmd_stats},
				     {"load", cmd_load},
				     {"stage", cmd_stage},
				     {"commit", cmd_commit},
				     {"abort", cmd_abort},
				     {"rate", cmd_rate}},
				    a);
}

} // namespace

const Command kRotorCommand = {"rotor", "the emulated optical circuit switch of a rotor testbed: counters, schedule",
			       kUsage, run};

} // namespace lumen
