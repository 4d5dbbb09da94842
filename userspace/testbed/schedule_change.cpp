// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/testbed/schedule_change.cpp - a rotor testbed's schedule change
// (schedule_change.h).
#include "testbed/schedule_change.h"

#include <optional>

#include "base/error.h"
#include "base/json_socket.h"
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

sched::ChangeParty lumend_change_party(const std::string &control, const std::string &file, const std::string &token)
{
	auto ask = [control, token](const nlohmann::json &req) { json_request(control, req, "lumend", token); };
	const bool remote = is_tcp_endpoint(control);
	return {"lumend at " + control,
		[ask, file, remote](const sched::Schedule &s, uint64_t at) {
			if (remote) // the file is on this host, not on lumend's
				ask({{"cmd", "stage"}, {"schedule", sched::to_json(s)}, {"at", at}});
			else
				ask({{"cmd", "stage"}, {"file", file}, {"at", at}});
		},
		[ask](uint64_t v) {
			ask({{"cmd", "commit"}, {"version", v}});
		},
		[ask](uint64_t v) {
			ask({{"cmd", "abort"}, {"version", v}});
		}};
}

namespace
{

// The schedule in force at a lumend, from its status.
sched::ChangeView lumend_view(const std::string &control, const std::string &token)
{
	nlohmann::json st = json_request(control, {{"cmd", "status"}}, "lumend", token);
	sched::ChangeView v;
	const nlohmann::json &t = st.at("timing");
	v.in_force.version = st.at("version").get<uint64_t>();
	v.in_force.timing.t0_ns = t.at("t0_ns").get<uint64_t>();
	v.in_force.timing.slot_ns = t.at("slot_ns").get<uint64_t>();
	v.in_force.timing.guard_ns = t.at("guard_ns").get<uint64_t>();
	v.in_force.timing.period = t.at("period").get<uint32_t>();
	v.in_force.timing.guard_at_start = t.at("guard_at").get<std::string>() == "start";
	v.quiet = st.value("quiet", 0u) & LUMEN_QUIET_VERSION;
	if (st.contains("change") && st["change"].is_object())
		v.state = "under way";
	return v;
}

} // namespace

TestbedChangeResult change_schedule(const ChangeTargets &targets, sched::Schedule s, const TestbedChange &how)
{
	if (targets.testbed.empty() && targets.lumends.empty())
		throw UsageError("a change needs parties: a rotor testbed, lumends, or both");
	sched::validate(s, "the new schedule");
	std::optional<TestbedStatus> st;
	sched::ChangeView v;
	std::string reference;
	if (!targets.testbed.empty()) {
		st = testbed_status(targets.testbed);
		if (!st || !st->complete)
			throw UsageError("no complete testbed '" + targets.testbed + "'");
		if (st->schedule_path.empty())
			throw UsageError("testbed '" + targets.testbed + "' is not a rotor testbed (no schedule)");
		if (s.nodes != st->hosts.size())
			throw UsageError("a schedule of " + std::to_string(s.nodes) + " nodes for a rotor testbed of " +
					 std::to_string(st->hosts.size()));
		v = sched::view(sched::banks_of(read_rotor().cfg), tai_ns());
		reference = "the rotor switch";
	} else {
		v = lumend_view(targets.lumends[0], targets.lumend_token);
		reference = "lumend at " + targets.lumends[0];
	}
	if (v.quiet || std::string(v.state) != "none")
		throw UsageError(reference + " is in the middle of a change: commit or abort it first");
	TestbedChangeResult r;
	r.from_version = v.in_force.version;
	if (s.version <= r.from_version)
		s.version = r.from_version + 1;
	s.t0_ns = how.at_ns ? how.at_ns : sched::next_period_boundary(v.in_force, tai_ns() + how.lead_ns);
	/* the parties that read files (lumend) read this one */
	make_dirs(how.dir);
	std::string file = how.dir + "/v" + std::to_string(s.version) + "-" + std::to_string(s.t0_ns) + ".json";
	sched::save(s, file);
	std::vector<sched::ChangeParty> parties;
	if (st)
		parties = testbed_change_parties(*st);
	for (const std::string &c : targets.lumends)
		parties.push_back(lumend_change_party(c, file, targets.lumend_token));
	for (const auto &p : parties)
		r.parties.push_back(p.name);
	r.outcome = sched::run_change(parties, s, tai_ns);
	if (st)
		sched::save(s, st->schedule_path);
	return r;
}

} // namespace lumen
