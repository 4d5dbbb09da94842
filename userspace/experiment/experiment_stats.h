// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/experiment/experiment_stats.h - the statistics of `lumen experiment`
// as pure functions over plain vectors (percentiles and Jain's index are
// base/stats.h): flow-size buckets, time-series binning of cumulative byte counters,
// counter rates, and the incast burst analysis (queue peak, drain time).
// No I/O here, so every definition is unit-tested on hand-computed cases
// (tests/experiment_stats_test.cpp).
#pragma once

#include "base/stats.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lumen
{

// The thesis' FCT size buckets (research digest §2): short < 10 KB, medium
// 100 KB .. 1 MB, long > 1 MB (KB = 1000 bytes). Sizes in between belong to
// no bucket ("") and are counted only under "all".
std::string size_bucket(std::uint64_t size_bytes);
const std::vector<std::string> &size_bucket_names(); // short, medium, long

// One point of a cumulative byte counter (bytes_acked of a flow, dequeued
// bytes of a port).
struct CounterPoint {
	std::uint64_t t_ns = 0;
	std::uint64_t bytes = 0;
};

// The counter at time t, interpolated linearly between the points (sorted by
// time): 0 before the first point, the last value after the last point.
double counter_at(const std::vector<CounterPoint> &points, std::uint64_t t_ns);

// Mbit/s of a cumulative counter in each of `bins` intervals of `bin_ns`
// starting at t0_ns: (counter(end) - counter(start)) * 8 / bin.
std::vector<double> bin_rates_mbps(const std::vector<CounterPoint> &points, std::uint64_t t0_ns, std::uint64_t bin_ns,
				   std::size_t bins);

// Mean Mbit/s of a counter over [from_ns, to_ns] (interpolated); NaN for an
// empty interval.
double counter_rate_mbps(const std::vector<CounterPoint> &points, std::uint64_t from_ns, std::uint64_t to_ns);

// A flow's throughput in fixed bins, with the interval it was open.
struct FlowBins {
	std::uint64_t start_ns = 0, end_ns = 0;
	std::vector<double> mbps; // bin i = [t0 + i * bin, t0 + (i + 1) * bin)
};

// Short-term fairness: the mean, over the bins in [first_bin, last_bin) in
// which at least two flows were open for the whole bin, of Jain's index of
// those flows' throughputs in the bin. NaN when no bin qualifies.
double mean_bin_jain(const std::vector<FlowBins> &flows, std::uint64_t t0_ns, std::uint64_t bin_ns,
		     std::size_t first_bin, std::size_t last_bin);

struct QueueSample {
	std::uint64_t t_ns = 0;
	std::uint64_t qlen_bytes = 0;
};

// What one incast burst did to the queue. The baseline is the median queue
// in the `baseline_ns` before the burst; the peak is the maximum in
// [burst_ns, min(burst_ns + peak_within_ns, window_end_ns)) (close to the
// burst, so a later spike of other traffic is not taken for it); the queue
// counts as drained at the first sample
// after the peak at or below baseline + 10% of (peak - baseline), i.e. once
// 90% of the excess is gone. drain_ns is measured from the burst start and
// is empty when the queue did not drain inside the window.
struct BurstStats {
	std::uint64_t baseline_bytes = 0;
	std::uint64_t peak_bytes = 0;
	std::uint64_t peak_after_ns = 0; // peak time - burst start
	std::optional<std::uint64_t> drain_ns;
};
BurstStats analyse_burst(const std::vector<QueueSample> &queue, std::uint64_t burst_ns, std::uint64_t window_end_ns,
			 std::uint64_t baseline_ns, std::uint64_t peak_within_ns);

} // namespace lumen
