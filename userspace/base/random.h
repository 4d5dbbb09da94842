// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/base/random.h - what userspace draws from lumen's seeded
// generator (include/lumen/rng.h): a double in [0, 1) and a shuffle, both
// the same for a seed on every compiler and standard library (the
// standard's distributions and std::shuffle are each library's own), so a
// seed names one demand, schedule or workload everywhere.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

extern "C" {
#include <lumen/rng.h>
}

namespace lumen
{

// Uniform in [0, 1): the top 53 bits, every double of the form k / 2^53.
inline double rng_unit(lumen_rng &r)
{
	return double(lumen_rng_next(&r) >> 11) * 0x1.0p-53;
}

// Fisher-Yates from the back: every permutation equally likely (up to the
// multiply-and-shift's bias below n / 2^32, for n < 2^32).
template <typename T> void rng_shuffle(std::vector<T> &v, lumen_rng &r)
{
	for (std::size_t i = v.size(); i > 1; i--)
		std::swap(v[i - 1], v[lumen_rng_below(&r, i)]);
}

} // namespace lumen
