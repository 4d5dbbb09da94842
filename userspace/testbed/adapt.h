// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/testbed/adapt.h - traffic-aware operation of a rotor testbed
// (`lumen sched adapt`), or of the hosts of several machines through their
// lumends: every window, the bytes each host's gate saw per
// destination (the kernel gate's counters, and lumen-dp's gates through
// DPDK telemetry), an EWMA of the rates, a Vermilion schedule for them, and
// a change at an instant for every party when it serves the demand better
// enough (sched/adapt.h, schedule_change.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sched/adapt.h"
#include "testbed/schedule_change.h"

namespace lumen
{

struct AdaptOptions {
	uint64_t window_ns = 2'000'000'000; // between readings of the counters
	uint32_t rounds = 1; // windows to run (0: until interrupted)
	double alpha = 0.5; // the EWMA's weight of the newest window
	double min_gain = 0.05; // single-hop throughput a change must add
	sched::VermilionParams vermilion; // k, l, uplinks, seed (the timing is the schedule's)
	TestbedChange how; // the change's lead (or instant) and file directory
	std::vector<std::string> lumends; // also change these lumends (control endpoints)
	std::string lumend_token; // for those at HOST:PORT
	// lumen-dp processes (DPDK file prefixes or telemetry sockets) whose
	// gated hosts are hosts of the testbed: their demand is read too
	std::vector<std::string> dp_telemetry;
};

struct AdaptRound {
	uint32_t round = 0;
	uint32_t gated = 0; // gates read, kernel and lumen-dp (hosts with none: demand unknown, 0)
	std::vector<double> demand; // bytes/s, EWMA, row = source
	sched::AdaptDecision decision;
	bool changed = false;
	TestbedChangeResult change; // when changed
	std::string error; // a change that failed (refused and aborted everywhere)
};

// Runs the rounds; on_round after each. UsageError for a testbed that is
// not a complete rotor testbed; a change that fails is reported in its
// round, and the next rounds go on; Interrupted on Ctrl-C.
void adapt_testbed(const std::string &name, const AdaptOptions &o,
		   const std::function<void(const AdaptRound &)> &on_round);

// The same across machines: the demand from each lumend of o.lumends (its
// `demand`: every host's lumend reads its own gate and lumen-dp), the
// schedule in force from the first, and the change made by the lumends
// (each host's gate follows its lumend). A round whose reading fails says so
// in its error and changes nothing. UsageError without lumends, or with
// o.dp_telemetry (a testbed's).
void adapt_lumends(const AdaptOptions &o, const std::function<void(const AdaptRound &)> &on_round);

} // namespace lumen
