// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// dpdk/transport/psn.h - packet sequence numbers (PSNs) are 32-bit serial
// numbers (RFC 1982): they wrap, so "earlier" is a signed difference.
#pragma once

#include <cstdint>

namespace lumen::dp
{

/* a is before b when a - b, as a signed 32-bit, is < 0 (within 2^31 of each other) */
inline bool psn_before(uint32_t a, uint32_t b)
{
	return static_cast<int32_t>(a - b) < 0;
}

} // namespace lumen::dp
