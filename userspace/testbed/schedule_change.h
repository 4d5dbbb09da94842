// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/testbed/schedule_change.h - a schedule change on a rotor
// testbed, at one instant for every party (sched/change.h): the rotor
// switch and the gate on each host that has one. `lumen sched change`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sched/change.h"
#include "testbed/testbed.h"

namespace lumen
{

// The rotor switch, then the hosts' gates (those attached, on eth0).
std::vector<sched::ChangeParty> testbed_change_parties(const TestbedStatus &st);

struct TestbedChange {
	uint64_t at_ns = 0; // the instant (0: the first period boundary `lead_ns` from now)
	uint64_t lead_ns = 1'000'000'000; // time for the parties to take the announcement
};

struct TestbedChangeResult {
	sched::ChangeOutcome outcome;
	std::vector<std::string> parties;
	uint64_t from_version = 0;
};

// Changes testbed `name`'s schedule to s: its version raised above the one
// in force if it is not, its t0 the instant; the testbed's schedule file is
// s once committed. UsageError (nothing changed) for a testbed that is not a
// rotor testbed, a schedule of other nodes, or a party that refuses.
TestbedChangeResult change_testbed_schedule(const std::string &name, sched::Schedule s, const TestbedChange &how);

} // namespace lumen
