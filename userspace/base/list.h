// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/base/list.h - comma-separated lists on command lines
// ("--nodes 32,256", "--addrs A,B"): one parser, so every list refuses the
// same mistakes with the same words. An empty item ("a,,b", a leading or
// trailing comma, an empty list) is refused rather than skipped, because a
// skipped item shifts every later one (--addrs maps items to node numbers)
// or silently runs less than was asked for.
#pragma once

#include "base/error.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lumen
{

enum class Duplicates {
	kAllow, // order matters and repeats mean something (rank order, ...)
	kRefuse, // a repeat is a mistake: "<what>: <item> 'x' is listed twice"
};

// The items of text, split at every comma, kept verbatim (no trimming: a
// space is part of an item and the item's own parser judges it). `what`
// names the list in messages (an option, "--nodes"), `item` one entry
// ("node count"). UsageError "<what>: an empty <item> in '<text>'".
std::vector<std::string> split_list(std::string_view text, std::string_view what, std::string_view item,
				    Duplicates duplicates = Duplicates::kAllow);

// Each item a whole number in [min, max] (base/units.h parse_uint; its
// message names `what`). Duplicates compare the numbers, so "8,08" repeats.
std::vector<std::uint64_t> parse_uint_list(std::string_view text, std::string_view what, std::string_view item,
					   std::uint64_t min, std::uint64_t max,
					   Duplicates duplicates = Duplicates::kRefuse);

// Each item a dotted IPv4 address, in host byte order; one address twice is
// refused ("--addrs" maps item i to node i: two nodes cannot share one).
std::vector<std::uint32_t> parse_ipv4_list(std::string_view text, std::string_view what);

} // namespace lumen
