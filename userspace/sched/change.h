// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/sched/change.h - the steps of a schedule change at an instant
// (include/lumen/optical.h: two banks, announce then commit), as every
// party's control plane takes them: the rotor switch's loader, each gate's,
// lumend. Pure: each step checks the request against the party's state and
// returns the state to write, or throws UsageError and changes nothing.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

extern "C" {
#include "lumen/optical.h"
}

#include <nlohmann/json.hpp>

#include "sched/schedule.h"

namespace lumen::sched
{

// A party's two banks and the change between them (the fields of
// lumen_rotor_cfg and lumen_gate_cfg that a change touches).
struct Banks {
	lumen_sched_change change{};
	lumen_sched_bank bank[2]{};
};

// A party's configuration (lumen_rotor_cfg, lumen_gate_cfg) to and from Banks.
template <class Cfg> Banks banks_of(const Cfg &c)
{
	Banks b;
	b.change = c.change;
	b.bank[0] = c.banks[0];
	b.bank[1] = c.banks[1];
	return b;
}
template <class Cfg> void set_banks(Cfg &c, const Banks &b)
{
	c.change = b.change;
	c.banks[0] = b.bank[0];
	c.banks[1] = b.bank[1];
}

// The bank in force at now_ns (after a committed change's instant, the new
// one), or nullptr while quiet (after the instant of an uncommitted change).
const lumen_sched_bank *in_force(const Banks &b, uint64_t now_ns);
// "none", "staged", "committed" or "?".
const char *change_state_name(uint32_t state);

// What a party follows at now_ns, for status lines and JSON.
struct ChangeView {
	bool quiet = false; // after the instant of a change not committed here
	lumen_sched_bank in_force{}; // the bank in force (before the change's instant when quiet)
	const char *state = "none"; // of the change under way, or "none"
	uint64_t next_version = 0, switch_ns = 0; // the change under way's
};
ChangeView view(const Banks &b, uint64_t now_ns);
// "schedule version V" or "quiet (the change to V at T was not committed)",
// then ", change to V at T ns TAI: staged|committed" when one is under way.
std::string describe(const ChangeView &v);
// {"state", "version", "switch_ns"} of the change under way, or null.
nlohmann::json change_json(const ChangeView &v);

// The names of the LUMEN_QUIET_* bits set in quiet ("no-schedule", "clock",
// "stopped", "version"; unknown bits as "0x...").
std::vector<std::string> quiet_names(uint32_t quiet);

// A committed change whose instant has passed becomes the only schedule.
Banks settle(const Banks &b, uint64_t now_ns);
// The bank of s with its t0 moved to switch_ns.
lumen_sched_bank bank_of(const Schedule &s, uint64_t switch_ns);

// Announce: s takes over at switch_ns (its t0 is ignored). UsageError when a
// change is under way, the instant is not after now_ns or not a period
// boundary of the schedule in force, or s's version is not above it.
Banks stage(const Banks &b, const Schedule &s, uint64_t switch_ns, uint64_t now_ns);
// Commit the change staged for `version` (again: no error). UsageError when
// none is staged, or it is another version.
Banks commit(const Banks &b, uint64_t version);
// Abort the change staged for `version`: the schedule in force stays.
// UsageError when it is committed (the others may have switched) or none is.
Banks abort(const Banks &b, uint64_t version);
// No change: s in force at once (a test's tool: the parties do not switch
// together). UsageError while a change is under way.
Banks replace(const Banks &b, const Schedule &s, uint64_t now_ns);

// The first boundary of the schedule in force's period at or after t_ns.
uint64_t next_period_boundary(const lumen_sched_bank &in_force, uint64_t t_ns);

// One party of a change, as the coordinator reaches it (the rotor switch,
// a host's gate, a lumend): its three steps, each throwing on refusal.
struct ChangeParty {
	std::string name;
	std::function<void(const Schedule &, uint64_t switch_ns)> stage;
	std::function<void(uint64_t version)> commit, abort;
};

struct ChangeOutcome {
	uint64_t version = 0, switch_ns = 0;
	uint64_t staged_ns = 0, committed_ns = 0; // when each phase ended (the clock given)
	std::vector<std::string> commit_failures; // "party: why": quiet from the instant on
};

// The coordinator of a change: announce s (its t0 and version as given) to
// every party; if one refuses, abort it on those that took it and throw
// UsageError naming the party and why. If announcing took until the instant,
// abort everywhere (UsageError: a longer lead is needed). Otherwise commit
// everywhere; a party whose commit fails is listed (it keeps quiet from the
// instant until told), the others switch. now() is CLOCK_TAI's ns.
ChangeOutcome run_change(const std::vector<ChangeParty> &parties, const Schedule &s,
			 const std::function<uint64_t()> &now);

// How many slots per bank a party's tables make room for: at least s's
// period; by default room for the periods Vermilion makes (k * nodes /
// uplinks, k up to 8), as long as the tables stay under 2^22 entries
// (`rows`: entries per slot, nodes or uplinks * nodes). `asked` > 0 asks
// for that room (UsageError under s's period, or over the limits).
uint32_t table_period(const Schedule &s, uint32_t rows, uint32_t asked);

} // namespace lumen::sched
