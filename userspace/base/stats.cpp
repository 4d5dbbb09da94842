// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#include "base/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace lumen
{

double percentile(std::vector<double> values, double q)
{
	if (values.empty())
		return kNaN;
	std::sort(values.begin(), values.end());
	double pos = std::clamp(q, 0.0, 1.0) * double(values.size() - 1);
	auto lo = static_cast<std::size_t>(std::floor(pos));
	std::size_t hi = std::min(lo + 1, values.size() - 1);
	double frac = pos - double(lo);
	return values[lo] + (values[hi] - values[lo]) * frac;
}

double jain_index(const std::vector<double> &x)
{
	double sum = 0, sum_sq = 0;
	for (double v : x) {
		sum += v;
		sum_sq += v * v;
	}
	if (x.empty() || sum_sq == 0)
		return kNaN;
	return sum * sum / (double(x.size()) * sum_sq);
}

} // namespace lumen
