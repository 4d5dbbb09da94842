// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/base/units.h - the units lumen reads and writes: rates, sizes,
// durations and fractions, parsed with validation and formatted one way.
#pragma once

#include "base/error.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace lumen
{

// Nanoseconds per millisecond and per second (CLOCK_MONOTONIC arithmetic).
constexpr std::uint64_t kMs = 1'000'000, kSec = 1'000'000'000;

// Each parser refuses malformed text and out-of-range values with a
// UsageError that names `what` and the accepted range.
std::uint64_t parse_uint(std::string_view text, std::string_view what, std::uint64_t min, std::uint64_t max);
// "1gbit", "100mbit", "2.5gbit", "25G", "800M", "10000" (Mbit/s) -> Mbit/s
std::uint32_t parse_rate_mbps(std::string_view text, std::string_view what);
// "1500", "64k", "1m", "2MiB" -> bytes (k/m/g = 1024 multiples, like tc)
std::uint64_t parse_bytes(std::string_view text, std::string_view what, std::uint64_t max);
// "20us", "1ms", "500ns", "0.1s" -> ns
std::uint64_t parse_duration_ns(std::string_view text, std::string_view what, std::uint64_t max);
// "0.9" -> 0.9, within [min, max]
double parse_number(std::string_view text, std::string_view what, double min, double max);
// "0.9" -> Q16 (65536 = 1.0), within [min, max]
std::uint32_t parse_q16(std::string_view text, std::string_view what, double min, double max);

// For people: "25 Gbit/s", "1 Tbit/s", "100 Mbit/s" (exact multiples only)
std::string format_rate_mbps(std::uint64_t mbps);
// For lumen's own options and files, read back by parse_rate_mbps: "25gbit", "100mbit"
std::string rate_arg_text(std::uint32_t mbps);

} // namespace lumen
