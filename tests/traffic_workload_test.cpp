// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// The traffic generator's arithmetic (userspace/traffic/workload.h): the
// shipped flow-size distributions are sampled as their CDF says, arrivals
// are Poisson at the rate the load asks for, and ideal FCT, slowdown and
// percentiles match hand-computed values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "base/error.h"
#include "traffic/workload.h"

using namespace lumen;

namespace
{

constexpr int kSamples = 200000;
constexpr std::uint64_t kSeed = 20240605;

// Kolmogorov-Smirnov bound for n = 200 000 samples: the asymptotic
// critical value at significance 0.001 is 1.95 / sqrt(n) = 0.00436. A
// correct sampler exceeds it with probability 0.1% for a random seed; the
// seed is fixed, so the test is deterministic, and a sampler that is wrong
// by more than a few tenths of a percent anywhere on the CDF fails it (see
// KsDetectsAWrongDistribution).
const double kKsBound = 1.95 / std::sqrt(double(kSamples));

std::vector<double> draw(const FlowSizeCdf &cdf, std::uint64_t seed)
{
	Rng rng(seed);
	std::vector<double> v(kSamples);
	for (auto &x : v)
		x = cdf.quantile(rng.uniform());
	return v;
}

// sup |F_n(x) - F(x)| over the sorted samples (F continuous).
double ks_distance(std::vector<double> samples, const FlowSizeCdf &reference)
{
	std::sort(samples.begin(), samples.end());
	double n = double(samples.size()), d = 0;
	for (std::size_t i = 0; i < samples.size(); i++) {
		double f = reference.cdf(samples[i]);
		d = std::max({d, double(i + 1) / n - f, f - double(i) / n});
	}
	return d;
}

// E[X^2] of the interpolated distribution: a uniform segment [a, b] with
// mass p contributes p (a^2 + ab + b^2) / 3.
double second_moment(const FlowSizeCdf &cdf)
{
	const auto &p = cdf.points();
	double m2 = p[0].cdf * p[0].size_bytes * p[0].size_bytes;
	for (std::size_t i = 1; i < p.size(); i++) {
		double a = p[i - 1].size_bytes, b = p[i].size_bytes;
		m2 += (p[i].cdf - p[i - 1].cdf) * (a * a + a * b + b * b) / 3;
	}
	return m2;
}

FlowSizeCdf shipped(const std::string &name)
{
	return load_cdf_file(resolve_workload_path(name));
}

std::string parse_error(const std::string &text)
{
	try {
		parse_cdf_text(text, "t.csv");
	} catch (const Error &e) {
		return e.what();
	}
	return "";
}

TEST(TrafficWorkload, ShippedTablesLoadWithTheirDocumentedMeans)
{
	FlowSizeCdf ws = shipped("websearch");
	ASSERT_EQ(ws.points().size(), 12u);
	// hand sum over the 11 segments of (dp x midpoint)
	EXPECT_DOUBLE_EQ(ws.mean_bytes(), 1711250.0);
	EXPECT_NEAR(ws.quantile(0.5), 50000 + (0.5 - 0.4) / 0.13 * 30000, 1e-6);
	FlowSizeCdf dm = shipped("datamining");
	ASSERT_EQ(dm.points().size(), 17u);
	EXPECT_NEAR(dm.mean_bytes(), 5036535.175, 1e-3);
	EXPECT_NEAR(dm.quantile(0.5), 900 + (0.5 - 0.47) / 0.08 * 200, 1e-9);
}

TEST(TrafficWorkload, SamplingMatchesTheCdf)
{
	for (const char *name : {"websearch", "datamining"}) {
		FlowSizeCdf cdf = shipped(name);
		double d = ks_distance(draw(cdf, kSeed), cdf);
		EXPECT_LT(d, kKsBound) << name;
	}
}

TEST(TrafficWorkload, KsDetectsAWrongDistribution)
{
	// the same points read as steps (each size gets its whole CDF jump,
	// the NetBench "upper bound" reading) are not the interpolated curve
	FlowSizeCdf ws = shipped("websearch");
	std::vector<FlowSizeCdf::Point> steps;
	for (std::size_t i = 1; i < ws.points().size(); i++) {
		double x = ws.points()[i].size_bytes;
		steps.push_back({x - 1, ws.points()[i - 1].cdf});
		steps.push_back({x, ws.points()[i].cdf});
	}
	FlowSizeCdf stepped(steps, "steps");
	EXPECT_GT(ks_distance(draw(stepped, kSeed), ws), 10 * kKsBound);
	EXPECT_GT(ks_distance(draw(shipped("datamining"), kSeed), ws), 10 * kKsBound);
}

TEST(TrafficWorkload, SampleMeanMatchesAnalyticalMean)
{
	for (const char *name : {"websearch", "datamining"}) {
		FlowSizeCdf cdf = shipped(name);
		Rng rng(kSeed + 1);
		double sum = 0;
		for (int i = 0; i < kSamples; i++)
			sum += double(cdf.sample_bytes(rng.uniform()));
		double mean = cdf.mean_bytes();
		double sd = std::sqrt(second_moment(cdf) - mean * mean);
		// 4 standard errors: a correct sampler is outside with p < 1e-4
		EXPECT_NEAR(sum / kSamples, mean, 4 * sd / std::sqrt(double(kSamples))) << name;
	}
}

TEST(TrafficWorkload, SamplesAreWholeBytesOfAtLeastOne)
{
	FlowSizeCdf ws = shipped("websearch");
	EXPECT_EQ(ws.sample_bytes(0.0), 1u); // the table starts at 0 bytes
	EXPECT_EQ(ws.sample_bytes(0.15), 10000u);
	EXPECT_EQ(ws.sample_bytes(1.0), 30000000u);
	EXPECT_EQ(ws.sample_bytes(0.075), 5000u);
	// an atom at the first point: cdf 0.25 at 500 bytes
	FlowSizeCdf atom({{500, 0.25}, {1500, 1}}, "atom");
	EXPECT_EQ(atom.sample_bytes(0.1), 500u);
	EXPECT_EQ(atom.sample_bytes(0.625), 1000u);
	EXPECT_DOUBLE_EQ(atom.mean_bytes(), 0.25 * 500 + 0.75 * 1000);
	EXPECT_DOUBLE_EQ(atom.cdf(499), 0);
	EXPECT_DOUBLE_EQ(atom.cdf(500), 0.25);
}

TEST(TrafficWorkload, CdfParserRefusesMalformedFiles)
{
	const std::string ok = "# c\nsize_bytes,cdf\n0,0\n100,0.5\n\n200,1\n";
	EXPECT_EQ(parse_error(ok), "");
	EXPECT_EQ(parse_cdf_text(ok, "t").points().size(), 3u);
	struct Case {
		std::string text, want;
	};
	std::vector<Case> cases = {
		{"0,0\n100,0.5\n50,1\n", "t.csv:3: sizes must not decrease"},
		{"0,0\n100,0.5\n200,0.4\n300,1\n", "t.csv:3: cdf must not decrease"},
		{"0,0\n100,0.5\n200,0.9\n", "t.csv:3: the cdf must end at 1"},
		{"0,0\n1x0,0.5\n200,1\n", "t.csv:2: size '1x0' is not a number"},
		{"0,0\n100,abc\n200,1\n", "t.csv:2: cdf 'abc' is not a number"},
		{"0,0\n100,nan\n200,1\n", "t.csv:2: cdf 'nan' is not a number"},
		{"0,0\n100,1.5\n", "t.csv:2: cdf 1.5 is outside [0, 1]"},
		{"-5,0\n100,1\n", "t.csv:1: size must be >= 0"},
		{"0 0\n100,1\n", "t.csv:1: expected 'size_bytes,cdf'"},
		{"0,0,1\n100,1\n", "t.csv:1: expected 'size_bytes,cdf'"},
		{"0,0\nsize_bytes,cdf\n100,1\n", "t.csv:2: size 'size_bytes' is not a number"},
		{"# only comments\n", "t.csv: no 'size_bytes,cdf' rows"},
		{"", "t.csv: no 'size_bytes,cdf' rows"},
	};
	for (const auto &c : cases)
		EXPECT_NE(parse_error(c.text).find(c.want), std::string::npos)
			<< "text:\n"
			<< c.text << "got: " << parse_error(c.text);
}

TEST(TrafficWorkload, WorkloadPathsResolve)
{
	EXPECT_NE(resolve_workload_path("websearch").find("/workloads/websearch.csv"), std::string::npos);
	EXPECT_THROW(resolve_workload_path("no-such-workload"), Error);
	EXPECT_THROW(resolve_workload_path("/nonexistent/x.csv"), Error);
	EXPECT_THROW(load_cdf_file("/nonexistent/x.csv"), Error);
}

TEST(TrafficArrivals, PoissonRateFollowsTheLoadDefinition)
{
	// 0.5 x 1 Gbit/s / (8 x 1 MB) = 62.5 flows/s
	EXPECT_DOUBLE_EQ(poisson_rate_per_s(0.5, 1e9, 1e6), 62.5);
	EXPECT_DOUBLE_EQ(poisson_rate_per_s(0.3, 1e9, 1711250), 0.3e9 / (8 * 1711250.0));
	EXPECT_THROW(poisson_rate_per_s(0, 1e9, 1e6), Error);
	EXPECT_THROW(poisson_rate_per_s(0.5, 1e9, 0), Error);
}

TEST(TrafficArrivals, InterArrivalsAreExponential)
{
	const double rate = 62.5;
	Rng rng(kSeed);
	std::vector<double> gaps(kSamples);
	double sum = 0, sum_sq = 0;
	for (auto &g : gaps) {
		g = exponential_interval_s(rate, rng.uniform());
		ASSERT_GE(g, 0);
		ASSERT_TRUE(std::isfinite(g));
		sum += g;
		sum_sq += g * g;
	}
	double mean = sum / kSamples;
	double cv = std::sqrt(sum_sq / kSamples - mean * mean) / mean;
	// mean: SE = mean / sqrt(n) = 0.22%; CV of an exponential is 1 with
	// SE ~ sqrt(2 / n) = 0.3%: 1% and 0.02 are > 4 SE
	EXPECT_NEAR(mean, 1 / rate, 0.01 / rate);
	EXPECT_NEAR(cv, 1.0, 0.02);
	// the count in a window: 62.5/s for 1000 s = 62 500 +- 250 (Poisson sd)
	double t = 0;
	int arrivals = 0;
	Rng rng2(kSeed + 7);
	while ((t += exponential_interval_s(rate, rng2.uniform())) < 1000)
		arrivals++;
	EXPECT_NEAR(arrivals, 62500, 1000);
	// memorylessness: P(gap > mean) = e^-1
	double above = double(std::count_if(gaps.begin(), gaps.end(), [&](double g) { return g > 1 / rate; }));
	EXPECT_NEAR(above / kSamples, std::exp(-1.0), 0.005);
}

TEST(TrafficArrivals, RngIsReproducibleAndUnbiased)
{
	Rng a(42), b(42), c(43);
	for (int i = 0; i < 100; i++) {
		double x = a.uniform();
		EXPECT_EQ(x, b.uniform());
		EXPECT_GE(x, 0.0);
		EXPECT_LT(x, 1.0);
	}
	EXPECT_NE(a.uniform(), c.uniform());
	std::vector<int> counts(3);
	for (int i = 0; i < 30000; i++)
		counts[a.below(3)]++;
	for (int n : counts)
		EXPECT_NEAR(n, 10000, 400); // sd 82
}

TEST(TrafficFct, WireBytesCountHeadersPerSegment)
{
	// 1432 payload + 16 header = one full 1448-byte segment + 66 bytes
	EXPECT_EQ(wire_bytes(1432), 1514u);
	EXPECT_EQ(wire_bytes(1433), 1449u + 2 * 66);
	EXPECT_EQ(wire_bytes(0), 16u + 66);
	EXPECT_EQ(wire_bytes(1000, 500, 40), 1016u + 3 * 40);
}

TEST(TrafficFct, IdealFctAndSlowdownOnHandCases)
{
	// 1 segment, 1514 B at 1 Gbit/s = 12 112 ns, plus 2 x 100 us
	EXPECT_EQ(ideal_fct_ns(1432, 1'000'000'000, 100'000), 212112u);
	// 9094 B: 9110 stream bytes, 7 segments, 9572 wire bytes = 76 576 ns
	EXPECT_EQ(ideal_fct_ns(9094, 1'000'000'000, 100'000), 276576u);
	// 1 MB at 10 Gbit/s, RTT 10 us: 691 segments, 1 045 622 wire bytes
	// = 836 497.6 ns (rounded), plus 20 us
	EXPECT_EQ(ideal_fct_ns(1'000'000, 10'000'000'000ull, 10'000), 856498u);
	// no overflow for a TiB at 1 Mbit/s: ~8.8e15 ns
	EXPECT_NEAR(double(ideal_fct_ns(1ull << 40, 1'000'000, 0)), 8.796e15 * 1.0456, 0.01e15);
	EXPECT_DOUBLE_EQ(slowdown(424224, 212112), 2.0);
	EXPECT_DOUBLE_EQ(slowdown(212112, 212112), 1.0);
	EXPECT_DOUBLE_EQ(slowdown(5, 0), 0.0);
}

TEST(TrafficFct, PercentilesInterpolateBetweenRanks)
{
	EXPECT_DOUBLE_EQ(percentile_at({4, 1, 3, 2}, 50), 2.5);
	EXPECT_DOUBLE_EQ(percentile_at({4, 1, 3, 2}, 0), 1);
	EXPECT_DOUBLE_EQ(percentile_at({4, 1, 3, 2}, 100), 4);
	std::vector<double> v;
	for (int i = 1; i <= 100; i++)
		v.push_back(i);
	EXPECT_NEAR(percentile_at(v, 99), 99.01, 1e-9);
	EXPECT_DOUBLE_EQ(percentile_at({7}, 99), 7);
	EXPECT_DOUBLE_EQ(percentile_at({}, 50), 0);
}

} // namespace
