// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/base/stats.h - the summary statistics every lumen report uses,
// defined once: the experiment runner, the benchmarks and the simulators'
// tests all call these.
#pragma once

#include <limits>
#include <vector>

namespace lumen
{

// What a statistic of no values is.
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The q-quantile (q in [0, 1]) with linear interpolation between closest
// ranks (numpy's default): position q * (n - 1) in the sorted values.
// Empty input -> NaN.
double percentile(std::vector<double> values, double q);

// Jain's index (sum x)^2 / (n * sum x^2): 1 = all equal, 1/n = one takes
// all. Empty input or all zeros -> NaN (nothing to be fair about).
double jain_index(const std::vector<double> &x);

} // namespace lumen
