// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/base/list.cpp - comma-separated lists (list.h).
#include "base/list.h"

#include "base/units.h"

#include <arpa/inet.h>

#include <algorithm>

namespace lumen
{

namespace
{

std::string in_quotes(std::string_view s)
{
	return "'" + std::string(s) + "'";
}

} // namespace

std::vector<std::string> split_list(std::string_view text, std::string_view what, std::string_view item,
				    Duplicates duplicates)
{
	std::vector<std::string> out;
	for (size_t start = 0; start <= text.size();) {
		size_t comma = std::min(text.find(',', start), text.size());
		if (comma == start)
			throw UsageError(std::string(what) + ": an empty " + std::string(item) + " in " +
					 in_quotes(text));
		std::string one(text.substr(start, comma - start));
		if (duplicates == Duplicates::kRefuse && std::find(out.begin(), out.end(), one) != out.end())
			throw UsageError(std::string(what) + ": " + std::string(item) + " " + in_quotes(one) +
					 " is listed twice");
		out.push_back(std::move(one));
		start = comma + 1;
	}
	return out;
}

std::vector<std::uint64_t> parse_uint_list(std::string_view text, std::string_view what, std::string_view item,
					   std::uint64_t min, std::uint64_t max, Duplicates duplicates)
{
	std::vector<std::uint64_t> out;
	for (const std::string &one : split_list(text, what, item)) {
		std::uint64_t v = parse_uint(one, what, min, max);
		if (duplicates == Duplicates::kRefuse && std::find(out.begin(), out.end(), v) != out.end())
			throw UsageError(std::string(what) + ": " + std::string(item) + " " + std::to_string(v) +
					 " is listed twice");
		out.push_back(v);
	}
	return out;
}

std::vector<std::uint32_t> parse_ipv4_list(std::string_view text, std::string_view what)
{
	std::vector<std::uint32_t> out;
	for (const std::string &one : split_list(text, what, "address")) {
		in_addr a{};
		if (inet_pton(AF_INET, one.c_str(), &a) != 1)
			throw UsageError(std::string(what) + ": " + in_quotes(one) + " is not an IPv4 address");
		if (std::find(out.begin(), out.end(), ntohl(a.s_addr)) != out.end())
			throw UsageError(std::string(what) + ": address " + in_quotes(one) + " is listed twice");
		out.push_back(ntohl(a.s_addr));
	}
	return out;
}

} // namespace lumen
