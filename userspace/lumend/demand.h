// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/lumend/demand.h - what this host offered to each node of the
// schedule, for a coordinator on another host: the `demand` request.
//
// Traffic-aware operation (docs/optical.md) needs every host's row of the
// demand matrix. On one machine `lumen sched adapt --testbed` reads each
// host's gate itself; across machines each host's lumend reads its own
// sources and answers `{"cmd":"demand"}`, so the coordinator needs nothing
// but the lumends' control endpoints. The sources:
//   --gate DEV [--gate-netns NS]  the kernel gate on DEV (bpfctl/optical_gate.h):
//                                 its bytes per destination node
//   --dp-telemetry PREFIX,...     lumen-dp processes (their DPDK telemetry):
//                                 the offered_bytes of each gated lumen-dp
//                                 host that is this lumend's node
// The counters only grow (a gate attached again starts from zero: the
// coordinator's estimate takes a counter that went back as a new baseline).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lumen::lumend
{

struct DemandSources {
	std::string gate_dev, gate_netns; // "" : no kernel gate
	std::vector<std::string> dp_telemetry;
	bool any() const
	{
		return !gate_dev.empty() || !dp_telemetry.empty();
	}
};

// Bytes offered to each of `nodes` nodes so far by node `self`, summed
// over the sources, and the sources read. Error when a source cannot be
// read (a gate not attached, a lumen-dp not answering) or names no host of
// this node; UsageError when there is no source.
struct DemandReading {
	std::vector<uint64_t> bytes;
	std::vector<std::string> sources;
};
DemandReading read_demand(const DemandSources &src, uint32_t self, uint32_t nodes);

// lumen-dp's /lumen/gate answers of one process, folded into bytes: those
// whose "node" is self (pure; the telemetry's shape is checked). Returns
// how many hosts were self's.
uint32_t add_dp_gates(const std::vector<nlohmann::json> &gates, uint32_t self, std::vector<uint64_t> *bytes,
		      const std::string &where);

} // namespace lumen::lumend
