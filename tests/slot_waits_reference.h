// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/slot_waits_reference.h - the waits table of one destination
// computed the plain way, for tests of the optical code that need one
// without trusting the builders under test: for each slot of the period,
// how many slots until one that connects (LUMEN_SLOT_NEVER: none does).
#ifndef LUMEN_TESTS_SLOT_WAITS_REFERENCE_H
#define LUMEN_TESTS_SLOT_WAITS_REFERENCE_H

#include <cstdint>
#include <vector>

#include "lumen/optical.h"

namespace lumen::test
{

inline std::vector<uint32_t> slot_waits(const std::vector<bool> &open)
{
	uint32_t n = (uint32_t)open.size();
	std::vector<uint32_t> w(n, LUMEN_SLOT_NEVER);
	for (uint32_t s = 0; s < n; s++)
		for (uint32_t d = 0; d < n; d++)
			if (open[(s + d) % n]) {
				w[s] = d;
				break;
			}
	return w;
}

} // namespace lumen::test

#endif
