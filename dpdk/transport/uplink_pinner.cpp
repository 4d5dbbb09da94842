// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// dpdk/transport/uplink_pinner.cpp - subflows pinned to uplinks
// (uplink_pinner.h).
#include "transport/uplink_pinner.h"

namespace lumen::dp
{

UplinkPinner::UplinkPinner(const PortMap &map, uint32_t uplinks, uint64_t suspect_ns)
    : map_(map), load_(uplinks, 0), suspect_until_(uplinks, 0), suspect_ns_(suspect_ns)
{
}

bool UplinkPinner::pin(uint32_t dst, uint32_t uplink, uint16_t *entropy)
{
	if (uplink >= load_.size())
		return false;
	const std::vector<uint16_t> &known = map_.entropies_of(dst, uplink);
	if (known.empty())
		return false;
	uint32_t &at = next_[(uint64_t)dst << 32 | uplink];
	*entropy = known[at++ % known.size()];
	load_[uplink]++;
	given_[(uint64_t)dst << 16 | *entropy] = uplink;
	return true;
}

/* The uplink pin() gave an entropy of dst, else the map's; -1: neither knows. */
int UplinkPinner::uplink_of(uint32_t dst, uint16_t entropy) const
{
	auto it = given_.find((uint64_t)dst << 16 | entropy);
	return it != given_.end() ? (int)it->second : map_.uplink_of(dst, entropy);
}

void UplinkPinner::undo(uint32_t dst, uint16_t from, uint16_t to)
{
	const int left = uplink_of(dst, from), back = uplink_of(dst, to);
	if (left >= 0 && load_[(size_t)left])
		load_[(size_t)left]--;
	if (back >= 0) {
		load_[(size_t)back]++;
		suspect_until_[(size_t)back] = 0;
	}
	undone_++;
}

uint16_t UplinkPinner::choose(uint32_t dst, uint16_t old_entropy, uint64_t now_ns)
{
	const int left = uplink_of(dst, old_entropy);
	if (left >= 0) {
		suspect_until_[(size_t)left] = now_ns + suspect_ns_;
		if (load_[(size_t)left])
			load_[(size_t)left]--;
	}
	/* the least loaded other uplink with a known entropy, not suspect
	 * when one is not; ties to the lowest index */
	int best = -1;
	bool best_suspect = true;
	for (uint32_t u = 0; u < load_.size(); u++) {
		if ((int)u == left || map_.entropies_of(dst, u).empty())
			continue;
		bool suspect = now_ns < suspect_until_[u];
		if (best < 0 || (best_suspect && !suspect) ||
		    (suspect == best_suspect && load_[u] < load_[(size_t)best])) {
			best = (int)u;
			best_suspect = suspect;
		}
	}
	uint16_t e;
	if (best < 0 || !pin(dst, (uint32_t)best, &e)) {
		return Engine::kNoPathChoice; /* off the map: the engine's random choice */
	}
	rerouted_++;
	return e;
}

} // namespace lumen::dp
