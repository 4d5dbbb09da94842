// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/experiment/experiment_stats.cpp - see experiment_stats.h.
#include "experiment/experiment_stats.h"

#include "base/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace lumen
{

namespace
{

constexpr std::uint64_t kShortBelow = 10'000;
constexpr std::uint64_t kMediumFrom = 100'000;
constexpr std::uint64_t kMediumTo = 1'000'000;

double mbps(double bytes, std::uint64_t ns)
{
	return bytes * 8.0 * 1e3 / double(ns); // bytes*8 / (ns/1e9) / 1e6
}

} // namespace

std::string size_bucket(std::uint64_t size_bytes)
{
	if (size_bytes < kShortBelow)
		return "short";
	if (size_bytes >= kMediumFrom && size_bytes <= kMediumTo)
		return "medium";
	if (size_bytes > kMediumTo)
		return "long";
	return "";
}

const std::vector<std::string> &size_bucket_names()
{
	static const std::vector<std::string> names = {"short", "medium", "long"};
	return names;
}

double counter_at(const std::vector<CounterPoint> &points, std::uint64_t t_ns)
{
	if (points.empty() || t_ns < points.front().t_ns)
		return 0;
	if (t_ns >= points.back().t_ns)
		return double(points.back().bytes);
	// first point strictly after t: t lies in [prev, next)
	auto next = std::upper_bound(points.begin(), points.end(), t_ns,
				     [](std::uint64_t t, const CounterPoint &p) { return t < p.t_ns; });
	auto prev = next - 1;
	double span = double(next->t_ns - prev->t_ns);
	double frac = span > 0 ? double(t_ns - prev->t_ns) / span : 1.0;
	return double(prev->bytes) + (double(next->bytes) - double(prev->bytes)) * frac;
}

std::vector<double> bin_rates_mbps(const std::vector<CounterPoint> &points, std::uint64_t t0_ns, std::uint64_t bin_ns,
				   std::size_t bins)
{
	std::vector<double> rates(bins, 0.0);
	if (bin_ns == 0)
		return rates;
	double before = counter_at(points, t0_ns);
	for (std::size_t i = 0; i < bins; i++) {
		double after = counter_at(points, t0_ns + (i + 1) * bin_ns);
		rates[i] = mbps(after - before, bin_ns);
		before = after;
	}
	return rates;
}

double counter_rate_mbps(const std::vector<CounterPoint> &points, std::uint64_t from_ns, std::uint64_t to_ns)
{
	if (to_ns <= from_ns)
		return kNaN;
	return mbps(counter_at(points, to_ns) - counter_at(points, from_ns), to_ns - from_ns);
}

double mean_bin_jain(const std::vector<FlowBins> &flows, std::uint64_t t0_ns, std::uint64_t bin_ns,
		     std::size_t first_bin, std::size_t last_bin)
{
	double sum = 0;
	std::size_t counted = 0;
	for (std::size_t b = first_bin; b < last_bin; b++) {
		std::uint64_t from = t0_ns + b * bin_ns, to = from + bin_ns;
		std::vector<double> rates;
		for (const auto &f : flows)
			if (f.start_ns <= from && f.end_ns >= to && b < f.mbps.size())
				rates.push_back(f.mbps[b]);
		if (rates.size() < 2)
			continue;
		double j = jain_index(rates);
		if (std::isnan(j))
			continue;
		sum += j;
		counted++;
	}
	return counted ? sum / double(counted) : kNaN;
}

BurstStats analyse_burst(const std::vector<QueueSample> &queue, std::uint64_t burst_ns, std::uint64_t window_end_ns,
			 std::uint64_t baseline_ns, std::uint64_t peak_within_ns)
{
	BurstStats s;
	std::vector<double> before;
	for (const auto &q : queue)
		if (q.t_ns < burst_ns && q.t_ns + baseline_ns >= burst_ns)
			before.push_back(double(q.qlen_bytes));
	s.baseline_bytes = before.empty() ? 0 : static_cast<std::uint64_t>(std::llround(percentile(before, 0.5)));

	std::uint64_t peak_end = std::min(burst_ns + peak_within_ns, window_end_ns);
	std::size_t peak_at = queue.size();
	for (std::size_t i = 0; i < queue.size(); i++) {
		const auto &q = queue[i];
		if (q.t_ns < burst_ns || q.t_ns >= peak_end)
			continue;
		if (peak_at == queue.size() || q.qlen_bytes > s.peak_bytes) {
			s.peak_bytes = q.qlen_bytes;
			peak_at = i;
		}
	}
	if (peak_at == queue.size())
		return s; // no sample inside the window
	s.peak_after_ns = queue[peak_at].t_ns - burst_ns;

	std::uint64_t excess = s.peak_bytes > s.baseline_bytes ? s.peak_bytes - s.baseline_bytes : 0;
	std::uint64_t drained_at = s.baseline_bytes + excess / 10;
	for (std::size_t i = peak_at; i < queue.size() && queue[i].t_ns < window_end_ns; i++) {
		if (queue[i].qlen_bytes <= drained_at) {
			s.drain_ns = queue[i].t_ns - burst_ns;
			break;
		}
	}
	return s;
}

} // namespace lumen
