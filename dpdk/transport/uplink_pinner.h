// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// dpdk/transport/uplink_pinner.h - Ethereal's uplinks made real: which
// source port a subflow takes so that the fabric's ECMP sends it to the
// uplink the plan gave it, and where it goes when its path fails.
//
// The port map (port_map.h) says which entropies lead to which uplink, per
// destination. The pinner keeps, per uplink, the subflows pinned to it
// (this host's local view of the uplinks' load, as Algorithm 3's greedy
// assignment has it) and:
//
//   pin     a subflow to an uplink: the next of that uplink's known
//           entropies to the destination (round robin, so subflows of one
//           uplink spread over the spine's own ECMP further on);
//   choose  after a NACK or a timeout (Engine::choose_path): the
//           least-loaded uplink other than the one the subflow left, ties
//           to the lowest index, among those with a known entropy to its
//           destination; the uplink left is remembered as suspect for
//           suspect_ns and avoided while another exists. With no
//           alternative known, any entropy but the old one (the engine's
//           default reroute);
//   undo    a move a spurious RTO made (Engine::on_reroute_undone): the
//           subflow is back on the uplink it left, which is not suspect
//           (it delivered).
//
// The pinner remembers the uplink of every entropy it handed out: the map
// forgets an entropy that failed (or seemed to) until probing finds it again,
// and the loads must still count the subflows that hold it.
// Loads count subflows, not bytes: a collective's subflows of one batch have
// equal sizes (the plan makes them so), and a count needs no feedback. Pure
// code, no DPDK.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "transport/engine.h"
#include "transport/port_map.h"

namespace lumen::dp
{

class UplinkPinner
{
      public:
	UplinkPinner(const PortMap &map, uint32_t uplinks, uint64_t suspect_ns = 10'000'000);

	// The entropy for a subflow to dst on uplink, counted on it; false
	// when the map knows no entropy of that uplink to dst.
	bool pin(uint32_t dst, uint32_t uplink, uint16_t *entropy);
	// Where a subflow to dst pinned on old_entropy goes now (see above);
	// Engine::kNoPathChoice when no other uplink is known.
	uint16_t choose(uint32_t dst, uint16_t old_entropy, uint64_t now_ns);
	// A subflow to dst went back from entropy `from` to `to` (see above).
	void undo(uint32_t dst, uint16_t from, uint16_t to);

	// Subflows pinned per uplink.
	const std::vector<uint32_t> &load() const
	{
		return load_;
	}
	uint64_t rerouted() const
	{
		return rerouted_;
	}
	uint64_t undone() const
	{
		return undone_;
	}

      private:
	int uplink_of(uint32_t dst, uint16_t entropy) const;

	const PortMap &map_;
	std::vector<uint32_t> load_;
	std::vector<uint64_t> suspect_until_;
	std::unordered_map<uint64_t, uint32_t> next_; // (dst, uplink) -> round robin position
	std::unordered_map<uint64_t, uint32_t> given_; // (dst, entropy) -> uplink, as pin() handed it out
	uint64_t suspect_ns_;
	uint64_t rerouted_ = 0, undone_ = 0;
};

} // namespace lumen::dp
