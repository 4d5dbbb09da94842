// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#include "base/args.h"

#include "base/list.h"

#include <algorithm>
#include <cstdint>
#include <string>

namespace lumen
{

Args Args::parse(const std::vector<std::string> &argv, const std::vector<std::string> &flags)
{
	Args a;
	for (std::size_t i = 0; i < argv.size(); i++) {
		const std::string &w = argv[i];
		if (w.rfind("--", 0) != 0 || w == "--") {
			a.positional.push_back(w);
			continue;
		}
		auto eq = w.find('=');
		if (eq != std::string::npos) {
			a.options[w.substr(0, eq)] = w.substr(eq + 1);
			continue;
		}
		bool is_flag = false;
		for (const auto &f : flags)
			is_flag |= (f == w);
		if (is_flag) {
			a.options[w] = "";
		} else {
			if (i + 1 >= argv.size())
				throw UsageError("option " + w + " needs a value");
			a.options[w] = argv[++i];
		}
	}
	return a;
}

bool Args::has(const std::string &opt) const
{
	return options.count(opt) != 0;
}

std::optional<std::string> Args::get(const std::string &opt) const
{
	auto it = options.find(opt);
	if (it == options.end())
		return std::nullopt;
	return it->second;
}

std::vector<std::string> Args::list(const std::string &opt, const std::string &what) const
{
	std::optional<std::string> text = get(opt);
	if (!text)
		return {};
	return split_list(*text, opt, what);
}

void Args::allow_only(const std::vector<std::string> &known) const
{
	for (const auto &[k, v] : options) {
		bool ok = false;
		for (const auto &n : known)
			ok |= (n == k);
		if (!ok)
			throw UsageError("unknown option " + k);
	}
}

} // namespace lumen
