// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// lumen-dp's RTO estimator (dpdk/transport/rto.h): RFC 6298's numbers for
// hand-computed samples, a long random series against the formulas in
// long double, the granularity floor, the clamps, exponential backoff and
// its reset, min RTT, and parameter validation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "test_rng.h"
#include "transport/rto.h"

namespace
{

using lumen::dp::RtoEstimator;
using lumen::dp::RtoParams;

constexpr uint64_t kUs = 1000, kMs = 1000 * kUs;

TEST(DpRto, InitialBeforeAnySample)
{
	RtoEstimator r;
	EXPECT_FALSE(r.has_sample());
	EXPECT_EQ(r.rto_ns(), 1 * kMs);
	EXPECT_EQ(r.srtt_ns(), 0u);
	EXPECT_EQ(r.min_rtt_ns(), 0u);
	r.backoff();
	EXPECT_EQ(r.rto_ns(), 2 * kMs);
	EXPECT_EQ(r.params().min_ns, 200 * kUs);
	EXPECT_EQ(r.params().max_ns, 100 * kMs);
}

TEST(DpRto, Rfc6298Numbers)
{
	RtoEstimator r;
	// first sample: SRTT = R, RTTVAR = R/2, RTO = SRTT + max(G, 4 RTTVAR)
	r.sample(100 * kUs);
	EXPECT_EQ(r.srtt_ns(), 100000u);
	EXPECT_EQ(r.rttvar_ns(), 50000u);
	EXPECT_EQ(r.rto_ns(), 300000u);
	// RTTVAR = 3/4 * 50000 + 1/4 * |100000 - 200000| = 62500
	// SRTT = 7/8 * 100000 + 1/8 * 200000 = 112500
	r.sample(200 * kUs);
	EXPECT_EQ(r.rttvar_ns(), 62500u);
	EXPECT_EQ(r.srtt_ns(), 112500u);
	EXPECT_EQ(r.rto_ns(), 112500u + 4 * 62500);
	// a sample equal to SRTT: RTTVAR = 3/4 * 62500, SRTT unchanged
	r.sample(112500);
	EXPECT_EQ(r.rttvar_ns(), 46875u);
	EXPECT_EQ(r.srtt_ns(), 112500u);
	EXPECT_EQ(r.rto_ns(), 300000u);
	// RTTVAR = (140625 + 12500) / 4 = 38281.25, SRTT = (787500 + 100000) / 8 = 110937.5
	r.sample(100 * kUs);
	EXPECT_EQ(r.rttvar_ns(), 38281u);
	EXPECT_EQ(r.srtt_ns(), 110937u);
	EXPECT_EQ(r.rto_ns(), 110937u + 4 * 38281);
	EXPECT_EQ(r.latest_ns(), 100 * kUs);
	EXPECT_EQ(r.min_rtt_ns(), 100 * kUs);
}

TEST(DpRto, GranularityFloorsTheVariance)
{
	RtoParams p;
	p.min_ns = 1;
	p.granularity_ns = 5 * kUs;
	RtoEstimator r(p);
	r.sample(10 * kUs);
	EXPECT_EQ(r.rto_ns(), 30 * kUs); // 10 + 4 * 5
	for (int i = 0; i < 100; i++)
		r.sample(10 * kUs);
	EXPECT_EQ(r.rttvar_ns(), 0u);
	EXPECT_EQ(r.srtt_ns(), 10 * kUs);
	EXPECT_EQ(r.rto_ns(), 15 * kUs); // 10 + G
}

TEST(DpRto, Clamps)
{
	RtoEstimator r;
	r.sample(1 * kUs); // 1 + 4 * 0.5 = 3 us
	EXPECT_EQ(r.rto_ns(), 200 * kUs);
	RtoEstimator big;
	big.sample(1000 * kMs);
	EXPECT_EQ(big.rto_ns(), 100 * kMs);
	EXPECT_EQ(big.srtt_ns(), 1000 * kMs); // the estimate itself is not clamped
	RtoEstimator huge;
	huge.sample(UINT64_MAX); // clamped to 2^40 ns so the arithmetic cannot overflow
	huge.sample(UINT64_MAX);
	EXPECT_EQ(huge.srtt_ns(), RtoEstimator::kMaxSampleNs);
	EXPECT_EQ(huge.rto_ns(), 100 * kMs);
	huge.sample(0);
	EXPECT_EQ(huge.min_rtt_ns(), 0u);
	EXPECT_EQ(huge.rto_ns(), 100 * kMs);
}

TEST(DpRto, BackoffDoublesUpToMaxAndSampleResets)
{
	RtoEstimator r;
	r.sample(100 * kUs);
	ASSERT_EQ(r.rto_ns(), 300 * kUs);
	uint64_t want = 300 * kUs;
	for (int i = 1; i <= 8; i++) {
		r.backoff();
		want *= 2;
		EXPECT_EQ(r.rto_ns(), want) << i; // 76.8 ms after 8
	}
	r.backoff();
	EXPECT_EQ(r.rto_ns(), 100 * kMs); // 153.6 ms, capped
	EXPECT_EQ(r.backoffs(), 9u);
	for (int i = 0; i < 100; i++)
		r.backoff();
	EXPECT_EQ(r.backoffs(), 9u); // no shift beyond the cap, however many timeouts
	EXPECT_EQ(r.rto_ns(), 100 * kMs);
	r.sample(100 * kUs);
	EXPECT_EQ(r.backoffs(), 0u);
	EXPECT_EQ(r.rto_ns(), 100 * kUs + 4 * (3 * 50000 / 4)); // SRTT 100, RTTVAR 37.5 us
}

TEST(DpRto, MinAndLatest)
{
	RtoEstimator r;
	for (uint64_t s : {50 * kUs, 30 * kUs, 80 * kUs, 31 * kUs})
		r.sample(s);
	EXPECT_EQ(r.min_rtt_ns(), 30 * kUs);
	EXPECT_EQ(r.latest_ns(), 31 * kUs);
	r.reset();
	EXPECT_FALSE(r.has_sample());
	EXPECT_EQ(r.min_rtt_ns(), 0u);
	EXPECT_EQ(r.rto_ns(), 1 * kMs);
	r.sample(90 * kUs);
	EXPECT_EQ(r.min_rtt_ns(), 90 * kUs);
}

TEST(DpRto, LongSeriesMatchesTheFormulas)
{
	// Integer ns against exact RFC 6298 arithmetic: the truncations stay
	// within a few ns (SRTT's error <= 8 ns, RTTVAR's <= 12 ns, RTO's <= 56).
	lumen::test::Rng rng(42);
	RtoParams p;
	p.min_ns = 1;
	p.max_ns = 1ull << 40;
	p.initial_ns = 1;
	p.granularity_ns = 100;
	RtoEstimator r(p);
	long double srtt = 0, var = 0;
	for (int i = 0; i < 20000; i++) {
		uint64_t s = 10 * kUs + rng.below(i % 1000 < 500 ? 20 * kUs : 5 * kMs);
		r.sample(s);
		if (i == 0) {
			srtt = s;
			var = s / 2.0L;
		} else {
			var = 0.75L * var + 0.25L * std::fabs(srtt - static_cast<long double>(s));
			srtt = 0.875L * srtt + 0.125L * s;
		}
		long double rto = srtt + std::max<long double>(100, 4 * var);
		ASSERT_NEAR(static_cast<long double>(r.srtt_ns()), srtt, 8.0L) << i;
		ASSERT_NEAR(static_cast<long double>(r.rttvar_ns()), var, 12.0L) << i;
		ASSERT_NEAR(static_cast<long double>(r.rto_ns()), rto, 56.0L) << i;
	}
}

TEST(DpRto, RefusesBadParams)
{
	auto bad = [](auto change) {
		RtoParams p;
		change(p);
		EXPECT_NE(p.validate(), nullptr);
		EXPECT_THROW(RtoEstimator{p}, std::invalid_argument);
	};
	bad([](RtoParams &p) { p.min_ns = 0; });
	bad([](RtoParams &p) { p.max_ns = p.min_ns - 1; });
	bad([](RtoParams &p) { p.max_ns = (1ull << 40) + 1; });
	bad([](RtoParams &p) { p.initial_ns = p.min_ns - 1; });
	bad([](RtoParams &p) { p.initial_ns = p.max_ns + 1; });
	bad([](RtoParams &p) { p.granularity_ns = p.max_ns + 1; });
	EXPECT_EQ(RtoParams{}.validate(), nullptr);
}

} // namespace
