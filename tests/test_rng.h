// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/test_rng.h - a deterministic, platform-independent generator
// (SplitMix64) for tests whose inputs must be the same on every machine.
#ifndef LUMEN_TESTS_TEST_RNG_H
#define LUMEN_TESTS_TEST_RNG_H

#include <cstdint>

namespace lumen::test
{

struct Rng {
	std::uint64_t s;
	explicit Rng(std::uint64_t seed) : s(seed)
	{
	}
	std::uint64_t next()
	{
		std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
		z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
		z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
		return z ^ (z >> 31);
	}
	/* Uniform-ish in [lo, hi] (modulo bias is irrelevant here). */
	std::uint64_t range(std::uint64_t lo, std::uint64_t hi)
	{
		return lo + next() % (hi - lo + 1);
	}
	std::uint64_t below(std::uint64_t n)
	{
		return next() % n;
	}
	std::uint8_t byte()
	{
		return static_cast<std::uint8_t>(next());
	}
	bool chance(unsigned percent)
	{
		return below(100) < percent;
	}
};

} // namespace lumen::test

#endif // LUMEN_TESTS_TEST_RNG_H
