// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#include "base/ping.h"

#include <cmath>
#include <cstdlib>

namespace lumen
{

std::uint64_t ping_min_rtt_ns(const std::string &output)
{
	auto at = output.find("min/avg/max");
	if (at == std::string::npos)
		return 0;
	at = output.find(" = ", at);
	if (at == std::string::npos)
		return 0;
	char *end = nullptr;
	double ms = std::strtod(output.c_str() + at + 3, &end);
	if (end == output.c_str() + at + 3 || !std::isfinite(ms) || ms <= 0 || ms > 1e6)
		return 0;
	return static_cast<std::uint64_t>(std::llround(ms * 1e6));
}

} // namespace lumen
