// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/testbed/schedule_change.h - a schedule change at one instant
// for every party (sched/change.h): a rotor testbed's rotor switch and the
// gate on each of its hosts that has one, and lumends by their control
// sockets. `lumen sched change`.
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

// lumend at a control endpoint: a Unix socket on this host stages the
// schedule file `file` (which holds the change's schedule, its t0 the
// instant); HOST:PORT (another host: base/json_socket.h) gets the schedule
// itself in the request, with token.
sched::ChangeParty lumend_change_party(const std::string &control, const std::string &file,
				       const std::string &token = "");

// Who changes: a rotor testbed's parties, lumends, or both.
struct ChangeTargets {
	std::string testbed; // "": none
	std::vector<std::string> lumends; // control endpoints: Unix sockets, HOST:PORT
	std::string lumend_token; // for the HOST:PORT ones
};

struct TestbedChange {
	uint64_t at_ns = 0; // the instant (0: the first period boundary `lead_ns` from now)
	uint64_t lead_ns = 1'000'000'000; // time for the parties to take the announcement
	std::string dir = "/run/lumen/changes"; // where the parties that read files (lumend) find the schedule
};

struct TestbedChangeResult {
	sched::ChangeOutcome outcome;
	std::vector<std::string> parties;
	uint64_t from_version = 0;
};

// Changes the targets' schedule to s: its version raised above the one in
// force if it is not, its t0 the instant. The schedule in force is the
// rotor switch's (a testbed) or the first lumend's. The parties get s as a
// file in how.dir; a testbed's schedule file is s once
// committed. UsageError (nothing changed) for no target, a testbed that is
// not a rotor testbed, a schedule of other nodes, a change already under
// way, or a party that refuses.
TestbedChangeResult change_schedule(const ChangeTargets &targets, sched::Schedule s, const TestbedChange &how);

} // namespace lumen
