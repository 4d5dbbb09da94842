// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#include "traffic/workload.h"

#include "base/error.h"
#include "base/system.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace lumen
{

// ---------------------------------------------------------------------
// FlowSizeCdf

namespace
{

std::string point_text(std::size_t i)
{
	return "point " + std::to_string(i + 1);
}

// Checks the table's shape; `origin` prefixes every message.
void validate_points(const std::vector<FlowSizeCdf::Point> &pts, const std::string &origin)
{
	if (pts.empty())
		throw Error(origin + ": no (size, cdf) points");
	for (std::size_t i = 0; i < pts.size(); i++) {
		const auto &p = pts[i];
		if (!std::isfinite(p.size_bytes) || p.size_bytes < 0)
			throw Error(origin + ": " + point_text(i) + ": size must be a finite number >= 0");
		if (!std::isfinite(p.cdf) || p.cdf < 0 || p.cdf > 1)
			throw Error(origin + ": " + point_text(i) + ": cdf must be within [0, 1]");
		if (i > 0 && p.size_bytes < pts[i - 1].size_bytes)
			throw Error(origin + ": " + point_text(i) + ": sizes must not decrease");
		if (i > 0 && p.cdf < pts[i - 1].cdf)
			throw Error(origin + ": " + point_text(i) + ": cdf must not decrease");
	}
	if (pts.back().cdf != 1.0)
		throw Error(origin + ": the last cdf value must be 1");
}

} // namespace

FlowSizeCdf::FlowSizeCdf(std::vector<Point> points, const std::string &origin) : points_(std::move(points))
{
	validate_points(points_, origin);
}

double FlowSizeCdf::quantile(double u) const
{
	u = std::clamp(u, 0.0, 1.0);
	if (u <= points_.front().cdf)
		return points_.front().size_bytes;
	// first point whose cdf reaches u; the one before it is below u
	auto it =
		std::lower_bound(points_.begin(), points_.end(), u, [](const Point &p, double v) { return p.cdf < v; });
	if (it == points_.end())
		return points_.back().size_bytes;
	const Point &hi = *it;
	const Point &lo = *(it - 1);
	double frac = (u - lo.cdf) / (hi.cdf - lo.cdf);
	return lo.size_bytes + frac * (hi.size_bytes - lo.size_bytes);
}

std::uint64_t FlowSizeCdf::sample_bytes(double u) const
{
	double bytes = std::round(quantile(u));
	return bytes < 1 ? 1 : static_cast<std::uint64_t>(bytes);
}

double FlowSizeCdf::cdf(double x) const
{
	if (x < points_.front().size_bytes)
		return 0;
	if (x >= points_.back().size_bytes)
		return 1;
	// last point at or below x; the next one is above it
	auto it = std::upper_bound(points_.begin(), points_.end(), x,
				   [](double v, const Point &p) { return v < p.size_bytes; });
	const Point &hi = *it;
	const Point &lo = *(it - 1);
	double frac = (x - lo.size_bytes) / (hi.size_bytes - lo.size_bytes);
	return lo.cdf + frac * (hi.cdf - lo.cdf);
}

double FlowSizeCdf::mean_bytes() const
{
	double mean = points_.front().cdf * points_.front().size_bytes;
	for (std::size_t i = 1; i < points_.size(); i++) {
		const Point &lo = points_[i - 1];
		const Point &hi = points_[i];
		mean += (hi.cdf - lo.cdf) * (lo.size_bytes + hi.size_bytes) / 2;
	}
	return mean;
}

// ---------------------------------------------------------------------
// CDF files

namespace
{

// A whole-field decimal number (strtod syntax, no trailing junk).
bool parse_number(const std::string &field, double *out)
{
	std::string t = trim(field);
	if (t.empty())
		return false;
	errno = 0;
	char *end = nullptr;
	double v = std::strtod(t.c_str(), &end);
	if (errno != 0 || end != t.c_str() + t.size() || !std::isfinite(v))
		return false;
	*out = v;
	return true;
}

FlowSizeCdf::Point parse_row(const std::string &line, const std::string &where)
{
	auto comma = line.find(',');
	if (comma == std::string::npos || line.find(',', comma + 1) != std::string::npos)
		throw Error(where + ": expected 'size_bytes,cdf', got '" + line + "'");
	FlowSizeCdf::Point p{};
	if (!parse_number(line.substr(0, comma), &p.size_bytes))
		throw Error(where + ": size '" + trim(line.substr(0, comma)) + "' is not a number");
	if (!parse_number(line.substr(comma + 1), &p.cdf))
		throw Error(where + ": cdf '" + trim(line.substr(comma + 1)) + "' is not a number");
	return p;
}

} // namespace

FlowSizeCdf parse_cdf_text(const std::string &text, const std::string &origin)
{
	std::vector<FlowSizeCdf::Point> points;
	std::istringstream in(text);
	std::string raw;
	std::size_t lineno = 0;
	bool seen_row = false;
	while (std::getline(in, raw)) {
		lineno++;
		std::string line = trim(raw);
		if (line.empty() || line[0] == '#')
			continue;
		std::string where = origin + ":" + std::to_string(lineno);
		if (!seen_row && line == "size_bytes,cdf") {
			seen_row = true;
			continue;
		}
		seen_row = true;
		FlowSizeCdf::Point p = parse_row(line, where);
		// per-row checks here so the message carries the line number
		if (p.size_bytes < 0)
			throw Error(where + ": size must be >= 0");
		if (p.cdf < 0 || p.cdf > 1)
			throw Error(where + ": cdf " + trim(line.substr(line.find(',') + 1)) + " is outside [0, 1]");
		if (!points.empty() && p.size_bytes < points.back().size_bytes)
			throw Error(where + ": sizes must not decrease");
		if (!points.empty() && p.cdf < points.back().cdf)
			throw Error(where + ": cdf must not decrease (not monotone)");
		points.push_back(p);
	}
	if (points.empty())
		throw Error(origin + ": no 'size_bytes,cdf' rows");
	if (points.back().cdf != 1.0)
		throw Error(origin + ":" + std::to_string(lineno) + ": the cdf must end at 1 (last row has " +
			    std::to_string(points.back().cdf) + ")");
	return FlowSizeCdf(std::move(points), origin);
}

FlowSizeCdf load_cdf_file(const std::string &path)
{
	std::ifstream in(path);
	if (!in)
		throw Error("cannot read workload file " + path);
	std::ostringstream text;
	text << in.rdbuf();
	return parse_cdf_text(text.str(), path);
}

std::string data_dir()
{
	const char *env = std::getenv("LUMEN_DATA_DIR");
	if (env && *env)
		return env;
	return std::string(LUMEN_SOURCE_DIR) + "/data";
}

std::string resolve_workload_path(const std::string &name_or_path)
{
	bool is_path = name_or_path.find('/') != std::string::npos ||
		       (name_or_path.size() > 4 && name_or_path.substr(name_or_path.size() - 4) == ".csv");
	std::string path = is_path ? name_or_path : data_dir() + "/workloads/" + name_or_path + ".csv";
	if (!path_exists(path))
		throw Error("workload '" + name_or_path + "': " + path +
			    (is_path ? " does not exist" : " does not exist (set LUMEN_DATA_DIR?)"));
	return path;
}

// ---------------------------------------------------------------------
// Random numbers and arrivals

double Rng::uniform()
{
	return static_cast<double>(engine_() >> 11) * 0x1.0p-53;
}

std::uint64_t Rng::below(std::uint64_t n)
{
	// rejection keeps it unbiased for any n
	std::uint64_t limit = UINT64_MAX - UINT64_MAX % n;
	std::uint64_t v;
	do {
		v = engine_();
	} while (v >= limit);
	return v % n;
}

double poisson_rate_per_s(double load, double link_rate_bps, double mean_bytes)
{
	if (!(load > 0) || !(link_rate_bps > 0) || !(mean_bytes > 0))
		throw Error("poisson arrivals need load, link rate and mean flow size > 0");
	return load * link_rate_bps / (8.0 * mean_bytes);
}

double exponential_interval_s(double rate_per_s, double u)
{
	// 1 - u is in (0, 1]: the logarithm is finite
	return -std::log1p(-u) / rate_per_s;
}

// ---------------------------------------------------------------------
// FCT arithmetic

std::uint64_t wire_bytes(std::uint64_t payload, std::uint64_t mss, std::uint64_t overhead)
{
	std::uint64_t stream = payload + kWireHeaderBytes;
	std::uint64_t segments = (stream + mss - 1) / mss;
	return stream + segments * overhead;
}

std::uint64_t ideal_fct_ns(std::uint64_t payload, std::uint64_t link_rate_bps, std::uint64_t base_rtt_ns)
{
	// long double: wire bytes x 8e9 overflows 64 bits beyond ~2.3 GB
	long double serialization =
		static_cast<long double>(wire_bytes(payload)) * 8.0L * 1e9L / static_cast<long double>(link_rate_bps);
	return 2 * base_rtt_ns + static_cast<std::uint64_t>(std::llround(serialization));
}

double slowdown(std::uint64_t fct_ns, std::uint64_t ideal_ns)
{
	if (ideal_ns == 0)
		return 0;
	return static_cast<double>(fct_ns) / static_cast<double>(ideal_ns);
}

double percentile_at(std::vector<double> values, double p)
{
	if (values.empty())
		return 0;
	std::sort(values.begin(), values.end());
	double rank = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(values.size() - 1);
	auto lo = static_cast<std::size_t>(std::floor(rank));
	std::size_t hi = std::min(lo + 1, values.size() - 1);
	double frac = rank - static_cast<double>(lo);
	return values[lo] + frac * (values[hi] - values[lo]);
}

} // namespace lumen
