// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/testbed/adapt.cpp - traffic-aware operation of a rotor testbed
// (adapt.h).
#include "testbed/adapt.h"

#include "base/dpdk_telemetry.h"
#include "base/error.h"
#include "base/interrupt.h"
#include "base/json_socket.h"
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
	for (const auto &[name, g] : lumen_dp_gates(tel)) {
		size_t i = 0;
		while (i < n && st.hosts[i].addr != name)
			i++;
		if (i == n)
			throw Error("lumen-dp host " + name + " (" + tel.path() + ") is no host of the testbed");
		const nlohmann::json &offered = g.contains("offered_bytes") ? g["offered_bytes"] : nlohmann::json();
		if (!offered.is_array())
			throw Error("lumen-dp at " + tel.path() + " gave no offered_bytes for " + name);
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

// The matrix of the lumends' rows (demand.h in lumend): each answers for
// its node. Error for an answer of another schedule size, a node out of
// range, or two lumends of one node.
std::vector<uint64_t> read_lumend_demand(const AdaptOptions &o, uint32_t n, uint32_t *gated)
{
	std::vector<uint64_t> bytes((size_t)n * n, 0);
	std::vector<std::string> by_node(n);
	*gated = 0;
	for (const std::string &ep : o.lumends) {
		nlohmann::json d = json_request(ep, {{"cmd", "demand"}}, "lumend at " + ep, o.lumend_token);
		if (!d.contains("node") || !d["node"].is_number_unsigned() || !d.contains("nodes") ||
		    !d["nodes"].is_number_unsigned() || !d.contains("bytes") || !d["bytes"].is_array())
			throw Error("lumend at " + ep + " answered 'demand' without node, nodes and bytes");
		const uint64_t node = d["node"].get<uint64_t>();
		if (d["nodes"].get<uint64_t>() != n || node >= n || d["bytes"].size() != n)
			throw Error("lumend at " + ep + " counts for node " + std::to_string(node) + " of " +
				    d["nodes"].dump() + "; the schedule in force has " + std::to_string(n));
		if (!by_node[node].empty())
			throw Error("lumends at " + by_node[node] + " and " + ep + " both are node " +
				    std::to_string(node));
		by_node[node] = ep;
		for (uint32_t j = 0; j < n; j++) {
			const nlohmann::json &v = d["bytes"][j];
			if (!v.is_number_unsigned())
				throw Error("lumend at " + ep + " answered a byte count that is no number");
			bytes[(size_t)node * n + j] = v.get<uint64_t>();
		}
		(*gated)++;
	}
	return bytes;
}

// The schedule in force, as the first lumend has it.
sched::Schedule lumend_schedule(const AdaptOptions &o)
{
	const std::string &ep = o.lumends.at(0);
	return sched::from_json(json_request(ep, {{"cmd", "schedule"}}, "lumend at " + ep, o.lumend_token),
				"the schedule of lumend at " + ep);
}

// The rounds: read, estimate, decide, change. A round whose reading fails
// says so and changes nothing; the next one tries again.
void run_rounds(uint32_t n, const AdaptOptions &o, const ChangeTargets &targets,
		const std::function<std::vector<uint64_t>(uint32_t *gated)> &read,
		const std::function<sched::Schedule()> &in_force,
		const std::function<void(const AdaptRound &)> &on_round)
{
	sched::DemandEstimate estimate(n, o.alpha);
	uint32_t gated = 0;
	estimate.add(read(&gated), monotonic_ns());
	for (uint32_t round = 1; o.rounds == 0 || round <= o.rounds; round++) {
		sleep_interruptible_ns(o.window_ns);
		AdaptRound r;
		r.round = round;
		try {
			estimate.add(read(&r.gated), monotonic_ns());
		} catch (const Error &e) {
			r.error = std::string("reading the demand: ") + e.what();
			r.demand = estimate.rates();
			r.decision.why = "no decision";
			on_round(r);
			continue;
		}
		r.demand = estimate.rates();
		r.decision = sched::decide(in_force(), r.demand, o.vermilion, o.min_gain);
		if (r.decision.change) {
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

} // namespace

void adapt_lumends(const AdaptOptions &o, const std::function<void(const AdaptRound &)> &on_round)
{
	if (o.lumends.empty())
		throw UsageError("adapt needs --testbed NAME or --lumend ENDPOINT,...");
	if (!o.dp_telemetry.empty())
		throw UsageError("--dp-telemetry goes with --testbed; without one, each lumend reads its own "
				 "(lumend --dp-telemetry)");
	const uint32_t n = lumend_schedule(o).nodes;
	ChangeTargets targets;
	targets.lumends = o.lumends;
	targets.lumend_token = o.lumend_token;
	run_rounds(
		n, o, targets, [&](uint32_t *gated) { return read_lumend_demand(o, n, gated); },
		[&] { return lumend_schedule(o); }, on_round);
}

void adapt_testbed(const std::string &name, const AdaptOptions &o,
		   const std::function<void(const AdaptRound &)> &on_round)
{
	auto st = testbed_status(name);
	if (!st || !st->complete)
		throw UsageError("no complete testbed '" + name + "'");
	if (st->schedule_path.empty())
		throw UsageError("testbed '" + name + "' is not a rotor testbed (no schedule)");
	ChangeTargets targets;
	targets.testbed = name;
	targets.lumends = o.lumends;
	targets.lumend_token = o.lumend_token;
	run_rounds((uint32_t)st->hosts.size(), o, targets, [&](uint32_t *gated) { return read_demand(*st, o, gated); },
		   [&] { return sched::load(st->schedule_path); }, on_round);
}

} // namespace lumen
