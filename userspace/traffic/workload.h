// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/traffic/workload.h - the traffic generator's arithmetic, kept free
// of I/O so it is unit-testable: flow-size distributions given as CDF
// tables (parsing, inverse-transform sampling with linear interpolation,
// analytical mean), Poisson arrivals for a target load, ideal flow
// completion time, slowdown and percentiles.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace lumen
{

// A flow-size distribution: points (size, cdf) with sizes and cdf values
// non-decreasing, cdf in [0, 1] and the last cdf exactly 1. Between points
// the distribution is uniform (linear interpolation of the CDF); a first
// cdf above 0 is an atom at the first size.
class FlowSizeCdf
{
      public:
	struct Point {
		double size_bytes;
		double cdf;
	};

	// Refuses (Error) an invalid table; `origin` names it in messages.
	FlowSizeCdf(std::vector<Point> points, const std::string &origin);

	// Inverse transform: the size at cumulative probability u in [0, 1].
	double quantile(double u) const;
	// quantile(u) rounded to whole bytes, at least 1 (0 means "long flow"
	// on the wire).
	std::uint64_t sample_bytes(double u) const;
	// P(size <= x) of the interpolated distribution.
	double cdf(double x) const;
	// Mean of the interpolated distribution (each segment contributes its
	// probability times its midpoint).
	double mean_bytes() const;
	const std::vector<Point> &points() const
	{
		return points_;
	}

      private:
	std::vector<Point> points_;
};

// Parses a CDF file: '#' comment lines and blank lines anywhere, an optional
// "size_bytes,cdf" header, then "size,cdf" rows. Errors are Error
// "FILE:LINE: why".
FlowSizeCdf parse_cdf_text(const std::string &text, const std::string &origin);
FlowSizeCdf load_cdf_file(const std::string &path);

// Where the shipped data lives: $LUMEN_DATA_DIR, else the source tree's
// data/ directory (compile-time LUMEN_SOURCE_DIR).
std::string data_dir();
// "websearch" / "datamining" -> DATA/workloads/NAME.csv; anything with a
// '/' or ending in .csv is a path. Error when the file is missing.
std::string resolve_workload_path(const std::string &name_or_path);

// Deterministic pseudo-random numbers: std::mt19937_64's output sequence is
// fixed by the standard, but the std:: distributions are not, so the
// mapping to doubles and ranges is done here and a seed gives the same run
// with every standard library.
class Rng
{
      public:
	explicit Rng(std::uint64_t seed) : engine_(seed)
	{
	}
	double uniform(); // [0, 1), 53 random bits
	std::uint64_t below(std::uint64_t n); // [0, n), n > 0

      private:
	std::mt19937_64 engine_;
};

// Poisson arrivals whose mean offered load is `load` x `link_rate_bps` for
// flows of mean size `mean_bytes`:
//   rate (flows/s) = load x link_rate_bps / (8 x mean_bytes).
double poisson_rate_per_s(double load, double link_rate_bps, double mean_bytes);
// Exponential inter-arrival time with mean 1/rate, from u in [0, 1).
double exponential_interval_s(double rate_per_s, double u);

// Bytes a flow puts on the wire: the 16-byte lumen header plus `payload`,
// cut into segments of `mss` bytes, each carrying `overhead` bytes of
// Ethernet + IP + TCP headers (defaults: MTU 1500 IPv4 with timestamps:
// MSS 1448, 14 + 20 + 20 + 12 = 66 bytes; counted at L2 like tbf).
constexpr std::uint64_t kWireHeaderBytes = 16;
constexpr std::uint64_t kDefaultMss = 1448;
constexpr std::uint64_t kDefaultSegmentOverhead = 66;
std::uint64_t wire_bytes(std::uint64_t payload, std::uint64_t mss = kDefaultMss,
			 std::uint64_t overhead = kDefaultSegmentOverhead);
// ideal FCT = 2 x base_rtt + wire_bytes x 8 / link_rate: one RTT for the
// handshake, one for the last byte to arrive and the completion to return,
// plus the serialization at the sender's link rate.
std::uint64_t ideal_fct_ns(std::uint64_t payload, std::uint64_t link_rate_bps, std::uint64_t base_rtt_ns);
// fct / ideal (0 when ideal is 0).
double slowdown(std::uint64_t fct_ns, std::uint64_t ideal_ns);

// Percentile p in [0, 100] with linear interpolation between the closest
// ranks (numpy's default); `values` need not be sorted. 0 when empty.
double percentile_at(std::vector<double> values, double p);

} // namespace lumen
