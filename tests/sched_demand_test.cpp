// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// sched_demand_test: the demand shapes of userspace/sched/demand.h come
// from lumen's own generator (include/lumen/rng.h, userspace/base/random.h),
// so a seed is one matrix on every compiler and standard library. The
// expected numbers below are SplitMix64's published outputs for seed 0
// (0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f), worked out
// here by hand, not by the code under test; with std::uniform_real_
// distribution or std::shuffle they would be whatever the library makes.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <vector>

#include "base/random.h"
#include "sched/demand.h"

using namespace lumen;
using namespace lumen::sched;

namespace
{

constexpr uint64_t kOut[] = {0xe220a8397b1dcdafull, 0x6e789e6aa1b965f4ull, 0x06c45d188009454full};

double unit_of(uint64_t x)
{
	return double(x >> 11) / double(1ull << 53);
}

uint32_t below(uint64_t x, uint64_t n)
{
	return (uint32_t)(((x >> 32) * n) >> 32);
}

} // namespace

TEST(Demand, ASeedIsTheSameRandomMatrixEverywhere)
{
	std::vector<double> m = make_demand(DemandShape::kRandom, 2, 0);
	ASSERT_EQ(m.size(), 4u);
	EXPECT_EQ(m[0], 0.0);
	EXPECT_EQ(m[1], unit_of(kOut[0])); // (0, 1) first, row by row
	EXPECT_EQ(m[2], unit_of(kOut[1]));
	EXPECT_EQ(m[3], 0.0);
}

TEST(Demand, ASeedIsTheSamePermutationEverywhere)
{
	// Fisher-Yates from the back over (0, 1, 2): swap 2 with below(3), then 1 with below(2)
	std::vector<uint32_t> order{0, 1, 2};
	std::swap(order[2], order[below(kOut[0], 3)]);
	std::swap(order[1], order[below(kOut[1], 2)]);
	std::vector<double> m = make_demand(DemandShape::kPermutation, 3, 0);
	for (uint32_t i = 0; i < 3; i++)
		for (uint32_t j = 0; j < 3; j++)
			EXPECT_EQ(m[i * 3 + j],
				  j == order[(std::find(order.begin(), order.end(), i) - order.begin() + 1) % 3] ? 1.0
														 : 0.0)
				<< i << " -> " << j;
}

// The helpers themselves: unit in [0, 1); a shuffle is a permutation, every
// one about equally likely (chi-square over the 6 orders of 3).
TEST(Random, UnitAndShuffle)
{
	lumen_rng r;
	lumen_rng_seed(&r, 0);
	EXPECT_EQ(rng_unit(r), unit_of(kOut[0]));
	std::map<std::vector<int>, int> seen;
	const int kDraws = 60000;
	for (int k = 0; k < kDraws; k++) {
		std::vector<int> v{0, 1, 2};
		rng_shuffle(v, r);
		seen[v]++;
		double u = rng_unit(r);
		ASSERT_TRUE(u >= 0.0 && u < 1.0);
	}
	ASSERT_EQ(seen.size(), 6u);
	double chi = 0, want = kDraws / 6.0;
	for (const auto &kv : seen)
		chi += (kv.second - want) * (kv.second - want) / want;
	EXPECT_LT(chi, 20.5) << "5 degrees of freedom, p = 0.001";
}
