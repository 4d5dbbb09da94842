// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/testbed/schedule_change.cpp - a rotor testbed's schedule change
// (schedule_change.h).
#include "testbed/schedule_change.h"

#include "base/error.h"
#include "base/system.h"
#include "bpfctl/optical_gate.h"
#include "bpfctl/rotor.h"

namespace lumen
{

std::vector<sched::ChangeParty> testbed_change_parties(const TestbedStatus &st)
{
	std::vector<sched::ChangeParty> parties;
	parties.push_back({"the rotor switch", [](const sched::Schedule &s, uint64_t at) { stage_rotor(s, at); },
			   [](uint64_t v) { commit_rotor(v); }, [](uint64_t v) { abort_rotor(v); }});
	for (const TestbedHost &h : st.hosts) {
		if (!gate_attached(h.netns, "eth0"))
			continue;
		std::string ns = h.netns;
		parties.push_back({"the gate of " + h.name,
				   [ns](const sched::Schedule &s, uint64_t at) { stage_gate(ns, "eth0", s, at); },
				   [ns](uint64_t v) { commit_gate(ns, "eth0", v); },
				   [ns](uint64_t v) { abort_gate(ns, "eth0", v); }});
	}
	return parties;
}

TestbedChangeResult change_testbed_schedule(const std::string &name, sched::Schedule s, const TestbedChange &how)
{
	auto st = testbed_status(name);
	if (!st || !st->complete)
		throw UsageError("no complete testbed '" + name + "'");
	if (st->schedule_path.empty())
		throw UsageError("testbed '" + name + "' is not a rotor testbed (no schedule)");
	sched::validate(s, "the new schedule");
	if (s.nodes != st->hosts.size())
		throw UsageError("a schedule of " + std::to_string(s.nodes) + " nodes for a rotor testbed of " +
				 std::to_string(st->hosts.size()));
	RotorStatus rotor = read_rotor();
	uint64_t now = tai_ns();
	sched::ChangeView v = sched::view(sched::banks_of(rotor.cfg), now);
	if (v.quiet || std::string(v.state) != "none")
		throw UsageError("the rotor switch is in the middle of a change (" + sched::describe(v) +
				 "): commit or abort it first ('lumen rotor commit|abort')");
	TestbedChangeResult r;
	r.from_version = v.in_force.version;
	if (s.version <= r.from_version)
		s.version = r.from_version + 1;
	s.t0_ns = how.at_ns ? how.at_ns : sched::next_period_boundary(v.in_force, now + how.lead_ns);
	std::vector<sched::ChangeParty> parties = testbed_change_parties(*st);
	for (const auto &p : parties)
		r.parties.push_back(p.name);
	r.outcome = sched::run_change(parties, s, tai_ns);
	sched::save(s, st->schedule_path);
	return r;
}

} // namespace lumen
