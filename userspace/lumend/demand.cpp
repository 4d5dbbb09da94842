// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/lumend/demand.cpp - this host's row of the demand matrix
// (demand.h).
#include "lumend/demand.h"

#include "base/dpdk_telemetry.h"
#include "base/error.h"
#include "bpfctl/optical_gate.h"

namespace lumen::lumend
{

uint32_t add_dp_gates(const std::vector<nlohmann::json> &gates, uint32_t self, std::vector<uint64_t> *bytes,
		      const std::string &where)
{
	uint32_t mine = 0;
	for (const nlohmann::json &g : gates) {
		if (!g.is_object() || !g.contains("node") || !g["node"].is_number_unsigned())
			throw Error("lumen-dp at " + where + " gave a gate without its node (an older lumen-dp?)");
		if (g["node"].get<uint64_t>() != self)
			continue;
		const nlohmann::json &offered = g.contains("offered_bytes") ? g["offered_bytes"] : nlohmann::json();
		if (!offered.is_array())
			throw Error("lumen-dp at " + where + " gave a gate without offered_bytes");
		for (size_t j = 0; j < bytes->size() && j < offered.size(); j++)
			if (offered[j].is_number_unsigned())
				(*bytes)[j] += offered[j].get<uint64_t>();
		mine++;
	}
	return mine;
}

DemandReading read_demand(const DemandSources &src, uint32_t self, uint32_t nodes)
{
	if (!src.any())
		throw UsageError("this lumend reads no demand: start it with --gate DEV or --dp-telemetry PREFIX");
	DemandReading r;
	r.bytes.assign(nodes, 0);
	if (!src.gate_dev.empty()) {
		GateStatus g = read_gate(src.gate_netns, src.gate_dev);
		for (size_t j = 0; j < nodes && j < g.dsts.size(); j++)
			r.bytes[j] += g.dsts[j].bytes;
		r.sources.push_back("gate " + src.gate_dev +
				    (src.gate_netns.empty() ? "" : " (netns " + src.gate_netns + ")"));
	}
	for (const std::string &where : src.dp_telemetry) {
		DpdkTelemetry tel(where);
		std::vector<nlohmann::json> gates;
		for (auto &named : lumen_dp_gates(tel))
			gates.push_back(std::move(named.second));
		if (add_dp_gates(gates, self, &r.bytes, tel.path()) == 0)
			throw Error("lumen-dp at " + tel.path() + " has no gated host of node " + std::to_string(self));
		r.sources.push_back("lumen-dp " + tel.path());
	}
	return r;
}

} // namespace lumen::lumend
