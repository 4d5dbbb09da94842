// The completion-time histogram (dpdk/transport/latency_histogram.h):
// bucket boundaries, quantiles against the exact nearest rank of the same
// values (never below, at most 1/64 above), merging, the extremes of the
// 64-bit range, and memory that does not grow with the values recorded.
#include "transport/latency_histogram.h"

#include <algorithm>
#include <cmath>
#include <random>

#include <gtest/gtest.h>

using lumen::dp::LatencyHistogram;

namespace
{

uint64_t exact(std::vector<uint64_t> v, double q)
{
	std::sort(v.begin(), v.end());
	if (q >= 1)
		return v.back();
	auto rank = (size_t)std::ceil(q * (double)v.size());
	return v[std::max<size_t>(rank, 1) - 1];
}

} // namespace

TEST(LatencyHistogram, BucketsAreContiguousAndNarrow)
{
	// every bucket starts right after the previous one's top, and is at
	// most 1/64 of its values wide
	uint64_t prev_top = 0;
	for (size_t b = 1; b < LatencyHistogram::kBuckets; b++) {
		uint64_t top = LatencyHistogram::bucket_top(b), first = prev_top + 1;
		ASSERT_GT(top, prev_top) << b;
		EXPECT_EQ(LatencyHistogram::bucket_of(first), b) << b;
		EXPECT_EQ(LatencyHistogram::bucket_of(top), b) << b;
		EXPECT_LE(top - first, first / 64) << b;
		prev_top = top;
	}
	EXPECT_EQ(prev_top, UINT64_MAX); // the last bucket ends at 2^64 - 1
	EXPECT_EQ(LatencyHistogram::bucket_of(UINT64_MAX), LatencyHistogram::kBuckets - 1);
	for (uint64_t v = 0; v < 128; v++)
		EXPECT_EQ(LatencyHistogram::bucket_top(LatencyHistogram::bucket_of(v)), v); // exact below 128
}

TEST(LatencyHistogram, QuantilesWithinTheBucketPrecision)
{
	std::mt19937_64 rng(7);
	std::lognormal_distribution<double> fct(std::log(20'000.0), 1.5); // ns: tens of us, a long tail
	LatencyHistogram h;
	std::vector<uint64_t> v;
	for (int i = 0; i < 200'000; i++) {
		auto x = (uint64_t)fct(rng);
		v.push_back(x);
		h.record(x);
	}
	ASSERT_EQ(h.count(), v.size());
	for (double q : {0.0, 0.001, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999, 1.0}) {
		uint64_t want = exact(v, q), got = h.quantile(q);
		EXPECT_GE(got, want) << q;
		EXPECT_LE(got - want, want / 64 + 1) << q;
	}
	EXPECT_EQ(h.quantile(1.0), *std::max_element(v.begin(), v.end()));
	EXPECT_EQ(h.quantile(0.0), *std::min_element(v.begin(), v.end()));
	double mean = 0;
	for (uint64_t x : v)
		mean += (double)x;
	EXPECT_NEAR(h.mean(), mean / (double)v.size(), 1e-6 * h.mean());
}

TEST(LatencyHistogram, MergeIsTheSameAsOne)
{
	LatencyHistogram a, b, both;
	for (uint64_t i = 1; i <= 1000; i++) {
		(i % 3 ? a : b).record(i * 997);
		both.record(i * 997);
	}
	a.merge(b);
	EXPECT_EQ(a.count(), both.count());
	for (double q : {0.01, 0.5, 0.99, 1.0})
		EXPECT_EQ(a.quantile(q), both.quantile(q)) << q;
	EXPECT_EQ(a.min(), both.min());
	LatencyHistogram empty;
	a.merge(empty); // an empty one changes nothing, its min included
	EXPECT_EQ(a.min(), both.min());
	EXPECT_EQ(a.max(), both.max());
}

TEST(LatencyHistogram, EmptyAndExtremes)
{
	LatencyHistogram h;
	EXPECT_EQ(h.quantile(0.5), 0u);
	EXPECT_EQ(h.max(), 0u);
	EXPECT_EQ(h.min(), 0u);
	EXPECT_EQ(h.mean(), 0.0);
	h.record(UINT64_MAX);
	h.record(0);
	EXPECT_EQ(h.quantile(1.0), UINT64_MAX);
	EXPECT_EQ(h.quantile(0.5), 0u);
	EXPECT_EQ(h.quantile(0.51), UINT64_MAX);
	EXPECT_EQ(h.quantile(-1), 0u);
	EXPECT_EQ(h.quantile(std::nan("")), 0u);
	// one value: every quantile is it, exactly
	LatencyHistogram one;
	one.record(123'456'789);
	for (double q : {0.0, 0.5, 0.99, 1.0})
		EXPECT_EQ(one.quantile(q), 123'456'789u) << q;
}
