// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/base/args.h - command-line words: --key value / --key=value /
// --flag options, and validated parsers for the units lumen accepts (rates,
// sizes, durations, fractions).
#pragma once

#include "base/error.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lumen
{

// Positional words and --key value / --key=value / --flag options.
struct Args {
	std::vector<std::string> positional;
	std::map<std::string, std::string> options; // "--rate" -> "1gbit"; flags map to ""

	// Splits argv; `flags` are the options that take no value.
	static Args parse(const std::vector<std::string> &argv, const std::vector<std::string> &flags = {});
	bool has(const std::string &opt) const;
	std::optional<std::string> get(const std::string &opt) const;
	// Refuses options not in `known` (UsageError naming the first one).
	void allow_only(const std::vector<std::string> &known) const;
};

// Each parser refuses malformed text and out-of-range values with a
// UsageError that names `what` and the accepted range.
std::uint64_t parse_uint(std::string_view text, std::string_view what, std::uint64_t min, std::uint64_t max);
// "1gbit", "100mbit", "2.5gbit", "25G", "800M", "10000" (Mbit/s) -> Mbit/s
std::uint32_t parse_rate_mbps(std::string_view text, std::string_view what);
// "1500", "64k", "1m", "2MiB" -> bytes (k/m/g = 1024 multiples, like tc)
std::uint64_t parse_bytes(std::string_view text, std::string_view what, std::uint64_t max);
// "20us", "1ms", "500ns", "0.1s" -> ns
std::uint64_t parse_duration_ns(std::string_view text, std::string_view what, std::uint64_t max);
// "0.9" -> Q16 (65536 = 1.0), within [min, max]
std::uint32_t parse_q16(std::string_view text, std::string_view what, double min, double max);

} // namespace lumen
