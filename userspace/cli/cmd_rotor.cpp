// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/cli/cmd_rotor.cpp - `lumen rotor`: the emulated optical circuit
// switch of a rotor testbed (bpfctl/rotor.h): what became of the frames
// that came in on each port, and a new schedule for it.
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "base/args.h"
#include "base/error.h"
#include "bpfctl/rotor.h"
#include "cli/commands.h"
#include "sched/schedule.h"

namespace lumen
{
namespace
{

const char kUsage[] =
	R"(usage: lumen rotor stats [--json]
       lumen rotor load SCHEDULE

The rotor switch of a rotor testbed ('lumen testbed up --topology rotor',
docs/optical.md): one eBPF program on every port that forwards a frame
only while the current slot of its schedule (CLOCK_TAI) connects the
frame's source to its destination, outside the guard, and drops and counts
everything else.

stats    per port (node, uplink) and in total: frames forwarded, and frames
         dropped in the guard, in a slot that does not connect the pair,
         before the schedule's t0, to an unknown address, not IPv4
load     replace the schedule's tables (same nodes and uplinks, a period no
         longer than the first one's); the tables change one by one, so
         frames in flight during the load may see a mix: for tests
)";

nlohmann::json stats_json(const lumen_rotor_stats &st)
{
	nlohmann::json j;
	for (std::uint32_t i = 0; i < LUMEN_ROTOR_NCOUNTERS; i++)
		j[rotor_counter_name(i)] = st.frames[i];
	j["forwarded_bytes"] = st.forwarded_bytes;
	return j;
}

int cmd_stats(const Args &a)
{
	a.allow_only({"--json"});
	if (a.positional.size() != 1)
		throw UsageError("stats takes no argument");
	RotorStatus st = read_rotor();
	if (a.has("--json")) {
		nlohmann::json ports = nlohmann::json::array();
		for (std::uint32_t k = 0; k < st.ports.size(); k++) {
			nlohmann::json p = stats_json(st.ports[k]);
			p["node"] = k % st.cfg.nodes;
			p["uplink"] = k / st.cfg.nodes;
			ports.push_back(p);
		}
		nlohmann::json j = {{"version", st.cfg.version},
				    {"nodes", st.cfg.nodes},
				    {"uplinks", st.cfg.uplinks},
				    {"period", st.cfg.timing.period},
				    {"slot_ns", st.cfg.timing.slot_ns},
				    {"guard_ns", st.cfg.timing.guard_ns},
				    {"t0_ns", st.cfg.timing.t0_ns},
				    {"total", stats_json(st.total)},
				    {"ports", ports}};
		std::printf("%s\n", j.dump(2).c_str());
		return 0;
	}
	std::printf("rotor switch: schedule version %llu, %u nodes, %u uplink(s), period %u slots of %.3f us (guard "
		    "%.3f us)\n",
		    (unsigned long long)st.cfg.version, st.cfg.nodes, st.cfg.uplinks, st.cfg.timing.period,
		    (double)st.cfg.timing.slot_ns / 1e3, (double)st.cfg.timing.guard_ns / 1e3);
	std::printf("%6s %6s", "node", "uplink");
	for (std::uint32_t i = 0; i < LUMEN_ROTOR_NCOUNTERS; i++)
		std::printf(" %12s", rotor_counter_name(i));
	std::printf("\n");
	for (std::uint32_t k = 0; k <= st.ports.size(); k++) {
		const lumen_rotor_stats &p = k < st.ports.size() ? st.ports[k] : st.total;
		if (k < st.ports.size())
			std::printf("%6u %6u", k % st.cfg.nodes, k / st.cfg.nodes);
		else
			std::printf("%13s", "total");
		for (std::uint32_t i = 0; i < LUMEN_ROTOR_NCOUNTERS; i++)
			std::printf(" %12llu", (unsigned long long)p.frames[i]);
		std::printf("\n");
	}
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

int run(const std::vector<std::string> &argv)
{
	Args a = Args::parse(argv, {"--json"});
	return run_subcommand<Args>(a.positional.empty() ? nullptr : &a.positional[0],
				    {{"stats", cmd_stats}, {"load", cmd_load}}, a);
}

} // namespace

const Command kRotorCommand = {"rotor", "the emulated optical circuit switch of a rotor testbed: counters, schedule",
			       kUsage, run};

} // namespace lumen
