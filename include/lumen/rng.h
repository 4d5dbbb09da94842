/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * lumen/rng.h - lumen's seeded generator: SplitMix64 (Steele, Lea and Flood,
 * "Fast splittable pseudorandom number generators", OOPSLA 2014), one per
 * host, lcore or computation, never shared. A seed gives the same numbers on
 * every compiler and standard library and in the kernel, eBPF and DPDK
 * (std::uniform_*_distribution and std::shuffle do not: their algorithms
 * are the library's), so runs, schedules and demands reproduce anywhere.
 * Userspace helpers on top of it (a unit double, a shuffle) are in
 * userspace/base/random.h.
 */
#ifndef LUMEN_RNG_H
#define LUMEN_RNG_H

#include "types.h"

struct lumen_rng {
	__u64 state;
};

LUMEN_INLINE void lumen_rng_seed(struct lumen_rng *r, __u64 seed)
{
	r->state = seed;
}

/* SplitMix64's finaliser: a well-mixed 64-bit value of z (hashing, too). */
LUMEN_INLINE __u64 lumen_mix64(__u64 z)
{
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

LUMEN_INLINE __u64 lumen_rng_next(struct lumen_rng *r)
{
	return lumen_mix64(r->state += 0x9E3779B97F4A7C15ull);
}

/* Uniform in [0, n) for 1 <= n <= 2^32, by multiply and shift (no division). */
LUMEN_INLINE __u32 lumen_rng_below(struct lumen_rng *r, __u64 n)
{
	return (__u32)(((lumen_rng_next(r) >> 32) * n) >> 32);
}

#endif /* LUMEN_RNG_H */
