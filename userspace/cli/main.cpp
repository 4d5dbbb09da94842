// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// lumen - the command line of lumen: the eBPF parts (PowerTCP congestion
// control, INT sockops, the software INT switch), namespace testbeds, the
// traffic generator and the experiment runner; one command per entry of the
// table in commands.cpp.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "base/error.h"
#include "cli/commands.h"

namespace
{

void print_help(FILE *out)
{
	std::fprintf(out, "usage: lumen <command> [arguments]   (lumen <command> --help for details)\n\ncommands:\n");
	int width = 0;
	for (const auto &c : lumen::commands())
		width = std::max(width, static_cast<int>(std::strlen(c.name)));
	for (const auto &c : lumen::commands())
		std::fprintf(out, "  %-*s  %s\n", width, c.name, c.summary);
	std::fprintf(out, "\nPinned state lives under /sys/fs/bpf/lumen; every command needs root.\n");
}

} // namespace

int main(int argc, char **argv)
{
	std::vector<std::string> args(argv + 1, argv + argc);
	if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
		if (args.size() == 2 && lumen::find_command(args[1])) {
			std::fputs(lumen::find_command(args[1])->usage, stdout);
			return 0;
		}
		print_help(args.empty() ? stderr : stdout);
		return args.empty() ? 2 : 0;
	}
	const lumen::Command *cmd = lumen::find_command(args[0]);
	if (!cmd) {
		std::fprintf(stderr, "lumen: unknown command '%s'\n", args[0].c_str());
		print_help(stderr);
		return 2;
	}
	std::vector<std::string> rest(args.begin() + 1, args.end());
	for (const auto &a : rest) {
		if (a == "--help" || a == "-h") {
			std::fputs(cmd->usage, stdout);
			return 0;
		}
	}
	try {
		return cmd->run(rest);
	} catch (const lumen::UsageError &e) {
		std::fprintf(stderr, "lumen %s: %s\n(see 'lumen %s --help')\n", cmd->name, e.what(), cmd->name);
		return 2;
	} catch (const std::exception &e) {
		std::fprintf(stderr, "lumen %s: %s\n", cmd->name, e.what());
		return 1;
	}
}
