// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// lumend - the end-host daemon of a periodic optical circuit schedule
// (issue 13): keeps slot time on CLOCK_TAI or a PTP hardware clock,
// publishes it with this node's tables in a shared-memory page for the
// senders (lumen-dp), goes quiet when the clock cannot be trusted, and
// answers on a control socket (lumen sched status). userspace/lumend/ is
// the library; docs/lumend.md the manual.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "base/error.h"
#include "lumend/daemon.h"

int main(int argc, char **argv)
{
	std::vector<std::string> args(argv + 1, argv + argc);
	for (const auto &a : args) {
		if (a == "--help" || a == "-h") {
			std::fputs(lumen::lumend::kUsage, stdout);
			return 0;
		}
	}
	try {
		return lumen::lumend::run(lumen::lumend::parse_options(args));
	} catch (const lumen::UsageError &e) {
		std::fprintf(stderr, "lumend: %s\n(see 'lumend --help')\n", e.what());
		return 2;
	} catch (const std::exception &e) {
		std::fprintf(stderr, "lumend: %s\n", e.what());
		return 1;
	}
}
