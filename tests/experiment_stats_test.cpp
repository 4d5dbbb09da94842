// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// The statistics of `lumen experiment` (userspace/experiment/experiment_stats.h)
// on cases small enough to compute by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "experiment/experiment_stats.h"

using namespace lumen;

TEST(Percentile, InterpolatesBetweenClosestRanks)
{
	// sorted 1 2 3 4: position q * 3
	std::vector<double> v = {4, 1, 3, 2};
	EXPECT_DOUBLE_EQ(percentile(v, 0.0), 1.0);
	EXPECT_DOUBLE_EQ(percentile(v, 0.5), 2.5); // between 2 and 3
	EXPECT_DOUBLE_EQ(percentile(v, 0.99), 3.97); // 3 + 0.97 * (4 - 3)
	EXPECT_DOUBLE_EQ(percentile(v, 1.0), 4.0);
	EXPECT_DOUBLE_EQ(percentile({7}, 0.99), 7.0);
	EXPECT_DOUBLE_EQ(percentile({10, 20, 30}, 0.25), 15.0); // position 0.5
	EXPECT_TRUE(std::isnan(percentile({}, 0.5)));
}

TEST(Jain, EqualSharesAreFairOneTakerIsNot)
{
	EXPECT_DOUBLE_EQ(jain_index({5, 5, 5, 5}), 1.0);
	EXPECT_DOUBLE_EQ(jain_index({1, 0, 0, 0}), 0.25); // 1/n
	EXPECT_DOUBLE_EQ(jain_index({1, 2}), 0.9); // 3^2 / (2 * 5)
	EXPECT_TRUE(std::isnan(jain_index({})));
	EXPECT_TRUE(std::isnan(jain_index({0, 0})));
}

TEST(SizeBucket, ThesisBoundaries)
{
	EXPECT_EQ(size_bucket(1), "short");
	EXPECT_EQ(size_bucket(9'999), "short");
	EXPECT_EQ(size_bucket(10'000), ""); // 10 KB .. 100 KB: no bucket
	EXPECT_EQ(size_bucket(99'999), "");
	EXPECT_EQ(size_bucket(100'000), "medium");
	EXPECT_EQ(size_bucket(1'000'000), "medium");
	EXPECT_EQ(size_bucket(1'000'001), "long");
	EXPECT_EQ(size_bucket_names(), (std::vector<std::string>{"short", "medium", "long"}));
}

TEST(Counter, InterpolatesLinearlyAndHoldsOutside)
{
	std::vector<CounterPoint> pts = {{100, 0}, {200, 1000}, {400, 1000}};
	EXPECT_DOUBLE_EQ(counter_at(pts, 50), 0.0);
	EXPECT_DOUBLE_EQ(counter_at(pts, 100), 0.0);
	EXPECT_DOUBLE_EQ(counter_at(pts, 150), 500.0);
	EXPECT_DOUBLE_EQ(counter_at(pts, 200), 1000.0);
	EXPECT_DOUBLE_EQ(counter_at(pts, 300), 1000.0);
	EXPECT_DOUBLE_EQ(counter_at(pts, 5000), 1000.0);
	EXPECT_DOUBLE_EQ(counter_at({}, 10), 0.0);
}

TEST(Counter, BinsAndRates)
{
	// 125 MB in one second = 1000 Mbit/s, then nothing
	std::vector<CounterPoint> pts = {{0, 0}, {1'000'000'000, 125'000'000}};
	auto bins = bin_rates_mbps(pts, 0, 500'000'000, 3);
	ASSERT_EQ(bins.size(), 3u);
	EXPECT_DOUBLE_EQ(bins[0], 1000.0);
	EXPECT_DOUBLE_EQ(bins[1], 1000.0);
	EXPECT_DOUBLE_EQ(bins[2], 0.0);
	// a bin straddling the end: half of it at 1000 Mbit/s
	auto shifted = bin_rates_mbps(pts, 750'000'000, 500'000'000, 1);
	EXPECT_DOUBLE_EQ(shifted[0], 500.0);
	EXPECT_DOUBLE_EQ(counter_rate_mbps(pts, 250'000'000, 750'000'000), 1000.0);
	EXPECT_DOUBLE_EQ(counter_rate_mbps(pts, 500'000'000, 1'500'000'000), 500.0);
	EXPECT_TRUE(std::isnan(counter_rate_mbps(pts, 10, 10)));
}

TEST(MeanBinJain, OnlyBinsWithTwoFullyOpenFlows)
{
	const std::uint64_t bin = 100;
	FlowBins a{0, 300, {1, 1, 2}}, b{0, 300, {1, 3, 2}};
	FlowBins late{150, 300, {0, 9, 9}}; // not open for all of bin 1; bin 2 only
	// bin 0: a, b -> 1; bin 1: a, b -> 16 / 20 = 0.8; bin 2: a, b, late -> 13^2 / (3 * 89)
	double bin2 = 13.0 * 13.0 / (3.0 * 89.0);
	EXPECT_NEAR(mean_bin_jain({a, b, late}, 0, bin, 0, 3), (1.0 + 0.8 + bin2) / 3.0, 1e-12);
	EXPECT_NEAR(mean_bin_jain({a, b}, 0, bin, 1, 2), 0.8, 1e-12);
	EXPECT_TRUE(std::isnan(mean_bin_jain({a}, 0, bin, 0, 3))); // one flow: nothing to compare
	EXPECT_TRUE(std::isnan(mean_bin_jain({a, b}, 0, bin, 2, 2)));
}

TEST(Burst, PeakAndTimeToDrainNinetyPercent)
{
	// before the burst at t=40: median of the samples in [10, 40) = 100
	std::vector<QueueSample> q = {{0, 5000},  {10, 100},  {20, 200}, {30, 100}, {40, 1100},
				      {50, 2100}, {60, 1500}, {70, 400}, {80, 250}, {90, 150}};
	BurstStats s = analyse_burst(q, 40, 100, 30, 1000);
	EXPECT_EQ(s.baseline_bytes, 100u);
	EXPECT_EQ(s.peak_bytes, 2100u);
	EXPECT_EQ(s.peak_after_ns, 10u);
	// drained at <= 100 + 2000 / 10 = 300: the sample at t=80
	ASSERT_TRUE(s.drain_ns.has_value());
	EXPECT_EQ(*s.drain_ns, 40u);

	BurstStats cut = analyse_burst(q, 40, 80, 30, 1000); // window ends before it drains
	EXPECT_EQ(cut.peak_bytes, 2100u);
	EXPECT_FALSE(cut.drain_ns.has_value());

	// a later spike (t=90: 5000) outside the peak window is not the burst's
	std::vector<QueueSample> spike = q;
	spike.back().qlen_bytes = 5000;
	BurstStats near = analyse_burst(spike, 40, 100, 30, 20);
	EXPECT_EQ(near.peak_bytes, 2100u);
	ASSERT_TRUE(near.drain_ns.has_value());
	EXPECT_EQ(*near.drain_ns, 40u);
	EXPECT_EQ(analyse_burst(spike, 40, 100, 30, 1000).peak_bytes, 5000u);

	BurstStats flat = analyse_burst({{0, 0}, {10, 0}, {20, 0}}, 10, 30, 10, 1000);
	EXPECT_EQ(flat.peak_bytes, 0u);
	ASSERT_TRUE(flat.drain_ns.has_value());
	EXPECT_EQ(*flat.drain_ns, 0u); // nothing to drain

	BurstStats none = analyse_burst({{0, 10}}, 100, 200, 50, 1000); // no sample in the window
	EXPECT_EQ(none.peak_bytes, 0u);
	EXPECT_FALSE(none.drain_ns.has_value());
}
