// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/base/args.h - command-line words: positional words and
// --key value / --key=value / --flag options (values: base/units.h).
#pragma once

#include "base/error.h"

#include <map>
#include <optional>
#include <string>
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
	// The comma-separated words of opt (none when it is not given);
	// UsageError "OPT: an empty WHAT in '...'" for an empty word.
	std::vector<std::string> list(const std::string &opt, const std::string &what) const;
	// Refuses options not in `known` (UsageError naming the first one).
	void allow_only(const std::vector<std::string> &known) const;
};

} // namespace lumen
