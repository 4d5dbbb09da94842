// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/testbed/adapt.cpp - traffic-aware operation of a rotor testbed
// (adapt.h).
#include "testbed/adapt.h"

#include "base/dpdk_telemetry.h"
#include "base/error.h"
#include "base/interrupt.h"
#include "base/system.h"
#include "bpfctl/optical_gate.h"

namespace lumen
{

namespace
{

// What lumen-dp's gates offered to each node so far (/lumen/gate, the
// frames' bytes), added to the rows of the testbed's hosts they are: a
// lumen-dp host is named by its address. Error for a lumen-dp host that is
// none of the testbed's, or an answer without the counters.
void add_dp_demand(const TestbedStatus &st, const std::string &where, std::vector<uint64_t> *bytes, uint32_t *gated)
{
	size_t n = st.hosts.size();
	DpdkTelemetry tel(where);
	nlohmann::json names = tel.query("/lumen/hosts");
	if (!names.is_array())
		throw Error("DPDK telemetry at " + tel.path() +
			    " lists no lumen-dp hosts (/lumen/hosts): is it lumen-dp, and has its run begun?");
	for (const nlohmann::json &name : names) {
		if (!name.is_string())
			continue;
		nlohmann::json g = tel.query("/lumen/gate," + name.get<std::string>());
		if (g.is_null())
			continue; /* not gated */
		size_t i = 0;
		while (i < n && st.hosts[i].addr != name.get<std::string>())
			i++;
		if (i == n)
			throw Error("lumen-dp host " + name.get<std::string>() + " (" + tel.path() +
				    ") is no host of the testbed");
		const nlohmann::json &offered = g.contains("offered_bytes") ? g["offered_bytes"] : nlohmann::json();
		if (!offered.is_array())
			throw Error("lumen-dp at " + tel.path() + " gave no offered_bytes for " +
				    name.get<std::string>());
		for (size_t j = 0; j < n && j < offered.size(); j++)
			if (offered[j].is_number_unsigned())
				(*bytes)[i * n + j] += offered[j].get<uint64_t>();
		(*gated)++;
	}
}

// Every pair's bytes so far, row = source (hosts without a gate: 0).
std::vector<uint64_t> read_demand(const TestbedStatus &st, const AdaptOptions &o, uint32_t *gated)
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
	for (const std::string &where : o.dp_telemetry)
		add_dp_demand(st, where, &bytes, gated);
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
	estimate.add(read_demand(*st, o, &gated), monotonic_ns());
	for (uint32_t round = 1; o.rounds == 0 || round <= o.rounds; round++) {
		sleep_interruptible_ns(o.window_ns);
		AdaptRound r;
		r.round = round;
		estimate.add(read_demand(*st, o, &r.gated), monotonic_ns());
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
