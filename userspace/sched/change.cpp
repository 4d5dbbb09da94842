// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/sched/change.cpp - the steps of a schedule change (change.h).
#include "sched/change.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "base/error.h"

namespace lumen::sched
{

namespace
{

constexpr uint64_t kMaxTableEntries = 1ull << 22;

std::string pending(const Banks &b)
{
	return "the change to version " + std::to_string(b.bank[(b.change.bank & 1) ^ 1].version) + " (" +
	       change_state_name(b.change.state) + ", at " + std::to_string(b.change.switch_ns) + " ns TAI)";
}

} // namespace

const lumen_sched_bank *in_force(const Banks &b, uint64_t now_ns)
{
	int k = lumen_change_bank(&b.change, now_ns);
	return k < 0 ? nullptr : &b.bank[k];
}

const char *change_state_name(uint32_t state)
{
	switch (state) {
	case LUMEN_CHANGE_NONE:
		return "none";
	case LUMEN_CHANGE_STAGED:
		return "staged";
	case LUMEN_CHANGE_COMMITTED:
		return "committed";
	default:
		return "?";
	}
}

ChangeView view(const Banks &b0, uint64_t now_ns)
{
	Banks b = settle(b0, now_ns);
	ChangeView v;
	const lumen_sched_bank *f = in_force(b, now_ns);
	v.quiet = !f;
	v.in_force = b.bank[b.change.bank & 1];
	if (f)
		v.in_force = *f;
	if (b.change.state != LUMEN_CHANGE_NONE) {
		v.state = change_state_name(b.change.state);
		v.next_version = b.bank[(b.change.bank & 1) ^ 1].version;
		v.switch_ns = b.change.switch_ns;
	}
	return v;
}

std::string describe(const ChangeView &v)
{
	std::string out = v.quiet ? "quiet (the change from version " + std::to_string(v.in_force.version) +
					    " was not committed here)"
				  : "schedule version " + std::to_string(v.in_force.version);
	if (std::string(v.state) != "none")
		out += ", change to version " + std::to_string(v.next_version) + " at " + std::to_string(v.switch_ns) +
		       " ns TAI: " + v.state;
	return out;
}

nlohmann::json change_json(const ChangeView &v)
{
	if (std::string(v.state) == "none")
		return nullptr;
	return {{"state", v.state}, {"version", v.next_version}, {"switch_ns", v.switch_ns}};
}

std::vector<std::string> quiet_names(uint32_t quiet)
{
	static const std::pair<uint32_t, const char *> bits[] = {{LUMEN_QUIET_NO_SCHEDULE, "no-schedule"},
								 {LUMEN_QUIET_CLOCK, "clock"},
								 {LUMEN_QUIET_STOPPED, "stopped"},
								 {LUMEN_QUIET_VERSION, "version"}};
	std::vector<std::string> out;
	uint32_t known = 0;
	for (const auto &[bit, name] : bits) {
		known |= bit;
		if (quiet & bit)
			out.push_back(name);
	}
	if (quiet & ~known) {
		char hex[16];
		std::snprintf(hex, sizeof(hex), "0x%x", quiet & ~known);
		out.push_back(hex);
	}
	return out;
}

Banks settle(const Banks &b, uint64_t now_ns)
{
	Banks out = b;
	if (b.change.state == LUMEN_CHANGE_COMMITTED && now_ns >= b.change.switch_ns) {
		out.change.bank = (b.change.bank & 1) ^ 1;
		out.change.state = LUMEN_CHANGE_NONE;
	}
	return out;
}

lumen_sched_bank bank_of(const Schedule &s, uint64_t switch_ns)
{
	lumen_sched_bank k{};
	k.timing = slot_timing(s);
	k.timing.t0_ns = switch_ns;
	k.version = s.version;
	return k;
}

uint64_t next_period_boundary(const lumen_sched_bank &f, uint64_t t_ns)
{
	const lumen_slot_timing &t = f.timing;
	uint64_t len = t.slot_ns * t.period;
	if (t_ns <= t.t0_ns || !len)
		return t.t0_ns;
	uint64_t k = (t_ns - t.t0_ns + len - 1) / len;
	return t.t0_ns + k * len;
}

Banks stage(const Banks &b0, const Schedule &s, uint64_t switch_ns, uint64_t now_ns)
{
	validate(s, "the new schedule");
	Banks b = settle(b0, now_ns);
	if (b.change.state != LUMEN_CHANGE_NONE)
		throw UsageError(pending(b) + " is under way: commit or abort it first");
	const lumen_sched_bank &f = b.bank[b.change.bank & 1];
	if (switch_ns <= now_ns)
		throw UsageError("the change's instant " + std::to_string(switch_ns) +
				 " ns TAI is not in the future (now " + std::to_string(now_ns) + ")");
	if (next_period_boundary(f, switch_ns) != switch_ns)
		throw UsageError("the change's instant " + std::to_string(switch_ns) +
				 " ns TAI is not a period boundary of version " + std::to_string(f.version) +
				 " (the next is " + std::to_string(next_period_boundary(f, switch_ns)) + ")");
	if (s.version <= f.version)
		throw UsageError("the new schedule's version " + std::to_string(s.version) +
				 " is not above the one in force, " + std::to_string(f.version));
	b.bank[(b.change.bank & 1) ^ 1] = bank_of(s, switch_ns);
	b.change.switch_ns = switch_ns;
	b.change.state = LUMEN_CHANGE_STAGED;
	return b;
}

// UsageError unless a change to `version` is under way.
static void require_change_to(const Banks &b, uint64_t version)
{
	uint64_t next = b.bank[(b.change.bank & 1) ^ 1].version;
	if (b.change.state == LUMEN_CHANGE_NONE)
		throw UsageError("no change is staged (version " + std::to_string(version) + ")");
	if (next != version)
		throw UsageError("the change staged is to version " + std::to_string(next) + ", not " +
				 std::to_string(version));
}

Banks commit(const Banks &b0, uint64_t version)
{
	Banks b = b0;
	require_change_to(b, version);
	b.change.state = LUMEN_CHANGE_COMMITTED;
	return b;
}

Banks abort(const Banks &b0, uint64_t version)
{
	Banks b = b0;
	require_change_to(b, version);
	if (b.change.state != LUMEN_CHANGE_STAGED)
		throw UsageError(pending(b) + " is committed: the others may switch; it cannot be aborted");
	b.change.state = LUMEN_CHANGE_NONE;
	return b;
}

Banks replace(const Banks &b0, const Schedule &s, uint64_t now_ns)
{
	validate(s, "the schedule");
	Banks b = settle(b0, now_ns);
	if (b.change.state != LUMEN_CHANGE_NONE)
		throw UsageError(pending(b) + " is under way: commit or abort it first");
	uint32_t next = (b.change.bank & 1) ^ 1;
	b.bank[next] = bank_of(s, s.t0_ns);
	b.change.bank = next;
	return b;
}

ChangeOutcome run_change(const std::vector<ChangeParty> &parties, const Schedule &s,
			 const std::function<uint64_t()> &now)
{
	ChangeOutcome out;
	out.version = s.version;
	out.switch_ns = s.t0_ns;
	size_t staged = 0;
	auto abort_staged = [&]() {
		for (size_t i = 0; i < staged; i++) {
			try {
				parties[i].abort(s.version);
			} catch (const std::exception &) {
				/* it stays quiet from the instant on: nothing better to do */
			}
		}
	};
	for (; staged < parties.size(); staged++) {
		try {
			parties[staged].stage(s, s.t0_ns);
		} catch (const std::exception &e) {
			abort_staged();
			throw UsageError(parties[staged].name + " refused the change to version " +
					 std::to_string(s.version) + ": " + e.what() + " (aborted everywhere)");
		}
	}
	out.staged_ns = now();
	if (out.staged_ns >= s.t0_ns) {
		abort_staged();
		throw UsageError("announcing the change to version " + std::to_string(s.version) + " took until " +
				 std::to_string(out.staged_ns) + " ns TAI, past its instant " +
				 std::to_string(s.t0_ns) + ": aborted everywhere; give it a longer lead");
	}
	for (const ChangeParty &p : parties) {
		try {
			p.commit(s.version);
		} catch (const std::exception &e) {
			out.commit_failures.push_back(p.name + ": " + e.what());
		}
	}
	out.committed_ns = now();
	return out;
}

uint32_t table_period(const Schedule &s, uint32_t rows, uint32_t asked)
{
	uint64_t room = kMaxTableEntries / (2ull * std::max<uint32_t>(rows, 1));
	uint64_t limit = std::min<uint64_t>(room, LUMEN_SLOT_MAX_PERIOD);
	if (s.period > limit)
		throw UsageError("a period of " + std::to_string(s.period) + " slots is over the tables' limit, " +
				 std::to_string(limit) + " for " + std::to_string(rows) + " entries a slot");
	if (asked) {
		if (asked < s.period)
			throw UsageError("room for " + std::to_string(asked) +
					 " slots is less than the schedule's period, " + std::to_string(s.period));
		if (asked > limit)
			throw UsageError("room for " + std::to_string(asked) + " slots is over the tables' limit, " +
					 std::to_string(limit));
		return asked;
	}
	uint64_t want = std::min<uint64_t>(8ull * s.nodes, limit);
	return (uint32_t)std::max<uint64_t>(want, s.period);
}

} // namespace lumen::sched
