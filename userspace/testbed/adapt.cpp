// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/testbed/adapt.cpp - traffic-aware operation of a rotor testbed
// (adapt.h).
#include "testbed/adapt.h"

#include "base/error.h"
#include "base/interrupt.h"
#include "base/system.h"
#include "bpfctl/optical_gate.h"

namespace lumen
{

namespace
{

// Every pair's bytes so far, row = source (hosts without a gate: 0).
std::vector<uint64_t> read_demand(const TestbedStatus &st, uint32_t *gated)
{
	size_t n = st.hosts.size();
	std::vector<uint64_t> bytes(n * n, 0);
	*gated = 0;
	for (size_t i = 0; i < n; i++) {
		if (!gate_attached(st.hosts[i].netns, "eth0"))
			continue;
		GateStatus g = read_gate(st.hosts[i].netns, "eth0");
		for (size_t j = 0; j < n && j < g.dsts.size(); j++)
			bytes[i * n + j] = g.dsts[j].bytes;
		(*gated)++;
	}
	return bytes;
}

} // namespace

void adapt_testbed(const std::string &name, const AdaptOptions &o,
		   const std::function<void(const AdaptRound &)> &on_round)
{
	auto st = testbed_status(name);
	if (!st || !st->complete)
		throw UsageError("no complete testbed '" + name + "'");
	if (st->schedule_path.empty())
		throw UsageError("testbed '" + name + "' is not a rotor testbed (no schedule)");
	uint32_t n = (uint32_t)st->hosts.size();
	sched::DemandEstimate estimate(n, o.alpha);
	uint32_t gated = 0;
	estimate.add(read_demand(*st, &gated), monotonic_ns());
	for (uint32_t round = 1; o.rounds == 0 || round <= o.rounds; round++) {
		sleep_interruptible_ns(o.window_ns);
		AdaptRound r;
		r.round = round;
		estimate.add(read_demand(*st, &r.gated), monotonic_ns());
		r.demand = estimate.rates();
		sched::Schedule current = sched::load(st->schedule_path);
		r.decision = sched::decide(current, r.demand, o.vermilion, o.min_gain);
		if (r.decision.change) {
			ChangeTargets targets;
			targets.testbed = name;
			targets.lumends = o.lumends;
			try {
				r.change = change_schedule(targets, r.decision.next, o.how);
				r.changed = true;
			} catch (const UsageError &e) {
				r.error = e.what();
			}
		}
		on_round(r);
	}
}

} // namespace lumen
