// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#include "base/units.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "lumen/int_option.h" /* LUMEN_INT_RATE_MAX_MBPS: what INT can encode */

namespace lumen
{

static std::string range_text(std::uint64_t min, std::uint64_t max)
{
	// appended, not "[" + ...: GCC 12 at -O3 warns (-Wrestrict) about its
	// own inlined operator+ for a string literal on the left
	std::string out(1, '[');
	out.append(std::to_string(min)).append(", ").append(std::to_string(max)).append("]");
	return out;
}

std::uint64_t parse_uint(std::string_view text, std::string_view what, std::uint64_t min, std::uint64_t max)
{
	std::string s(text);
	if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos)
		throw UsageError(std::string(what) + ": '" + s + "' is not a non-negative integer");
	errno = 0;
	unsigned long long v = std::strtoull(s.c_str(), nullptr, 10);
	if (errno == ERANGE || v < min || v > max)
		throw UsageError(std::string(what) + ": " + s + " is outside " + range_text(min, max));
	return v;
}

// Number with an optional unit suffix; returns false when the number part
// is malformed. The suffix is lower-cased.
static bool split_number(std::string_view text, double *value, std::string *suffix)
{
	std::string s(text);
	std::size_t i = 0;
	while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.'))
		i++;
	if (i == 0)
		return false;
	std::string num = s.substr(0, i);
	if (std::count(num.begin(), num.end(), '.') > 1 || num == ".")
		return false;
	*value = std::strtod(num.c_str(), nullptr);
	*suffix = s.substr(i);
	for (auto &c : *suffix)
		c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
	return std::isfinite(*value);
}

std::uint32_t parse_rate_mbps(std::string_view text, std::string_view what)
{
	double v;
	std::string unit;
	if (!split_number(text, &v, &unit))
		throw UsageError(std::string(what) + ": '" + std::string(text) +
				 "' is not a rate (e.g. 1gbit, 100mbit)");
	double mult;
	if (unit.empty() || unit == "mbit" || unit == "m" || unit == "mbps")
		mult = 1;
	else if (unit == "gbit" || unit == "g" || unit == "gbps")
		mult = 1000;
	else if (unit == "tbit" || unit == "t")
		mult = 1e6;
	else if (unit == "kbit" || unit == "k")
		mult = 1e-3;
	else
		throw UsageError(std::string(what) + ": unknown rate unit '" + unit + "' (kbit, mbit, gbit, tbit)");
	double mbps = v * mult;
	if (mbps < 1 || mbps > LUMEN_INT_RATE_MAX_MBPS || std::fabs(mbps - std::round(mbps)) > 1e-6)
		throw UsageError(std::string(what) + ": " + std::string(text) +
				 " must be a whole number of Mbit/s within [1 Mbit/s, 1.6 Tbit/s]");
	return static_cast<std::uint32_t>(std::llround(mbps));
}

std::uint64_t parse_bytes(std::string_view text, std::string_view what, std::uint64_t max)
{
	double v;
	std::string unit;
	if (!split_number(text, &v, &unit))
		throw UsageError(std::string(what) + ": '" + std::string(text) +
				 "' is not a size (e.g. 1500, 64k, 1m)");
	double mult;
	if (unit.empty() || unit == "b")
		mult = 1;
	else if (unit == "k" || unit == "kb" || unit == "kib")
		mult = 1024;
	else if (unit == "m" || unit == "mb" || unit == "mib")
		mult = 1024.0 * 1024;
	else if (unit == "g" || unit == "gb" || unit == "gib")
		mult = 1024.0 * 1024 * 1024;
	else
		throw UsageError(std::string(what) + ": unknown size unit '" + unit + "' (k, m, g)");
	double bytes = v * mult;
	if (bytes > double(max) || std::fabs(bytes - std::round(bytes)) > 1e-6)
		throw UsageError(std::string(what) + ": " + std::string(text) +
				 " must be a whole number of bytes <= " + std::to_string(max));
	return static_cast<std::uint64_t>(std::llround(bytes));
}

std::uint64_t parse_duration_ns(std::string_view text, std::string_view what, std::uint64_t max)
{
	double v;
	std::string unit;
	if (!split_number(text, &v, &unit) || unit.empty())
		throw UsageError(std::string(what) + ": '" + std::string(text) +
				 "' is not a duration (e.g. 20us, 1ms)");
	double mult;
	if (unit == "ns")
		mult = 1;
	else if (unit == "us")
		mult = 1e3;
	else if (unit == "ms")
		mult = 1e6;
	else if (unit == "s")
		mult = 1e9;
	else
		throw UsageError(std::string(what) + ": unknown time unit '" + unit + "' (ns, us, ms, s)");
	double ns = v * mult;
	if (ns > double(max) || std::fabs(ns - std::round(ns)) > 1e-6)
		throw UsageError(std::string(what) + ": " + std::string(text) +
				 " must be a whole number of ns <= " + std::to_string(max) + " ns");
	return static_cast<std::uint64_t>(std::llround(ns));
}

double parse_number(std::string_view text, std::string_view what, double min, double max)
{
	double v;
	std::string unit;
	if (!split_number(text, &v, &unit) || !unit.empty())
		throw UsageError(std::string(what) + ": '" + std::string(text) + "' is not a number");
	if (v < min || v > max)
		throw UsageError(std::string(what) + ": " + std::string(text) + " is outside [" + std::to_string(min) +
				 ", " + std::to_string(max) + "]");
	return v;
}

std::uint32_t parse_q16(std::string_view text, std::string_view what, double min, double max)
{
	return static_cast<std::uint32_t>(std::llround(parse_number(text, what, min, max) * 65536.0));
}

std::string format_rate_mbps(std::uint64_t mbps)
{
	if (mbps >= 1000000 && mbps % 1000000 == 0)
		return std::to_string(mbps / 1000000) + " Tbit/s";
	if (mbps >= 1000 && mbps % 1000 == 0)
		return std::to_string(mbps / 1000) + " Gbit/s";
	return std::to_string(mbps) + " Mbit/s";
}

std::string rate_arg_text(std::uint32_t mbps)
{
	if (mbps >= 1000 && mbps % 1000 == 0)
		return std::to_string(mbps / 1000) + "gbit";
	return std::to_string(mbps) + "mbit";
}

} // namespace lumen
