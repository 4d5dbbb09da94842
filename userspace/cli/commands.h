// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/cli/commands.h - the subcommand registry. Each cmd_<name>.cpp
// defines one Command and registers it with a static LUMEN_COMMAND(...).
#pragma once

#include <string>
#include <vector>

namespace lumen
{

struct Command {
	const char *name; // "cc"
	const char *summary; // one line for `lumen --help`
	const char *usage; // full text for `lumen <name> --help`
	// args: everything after the subcommand name. Returns the exit status;
	// throws Error / UsageError.
	int (*run)(const std::vector<std::string> &args);
};

void register_command(const Command &cmd);
const std::vector<Command> &commands();
const Command *find_command(const std::string &name);

struct CommandRegistrar {
	explicit CommandRegistrar(const Command &cmd)
	{
		register_command(cmd);
	}
};

#define LUMEN_COMMAND_CAT2(a, b) a##b
#define LUMEN_COMMAND_CAT(a, b) LUMEN_COMMAND_CAT2(a, b)
#define LUMEN_COMMAND(...)                                                                                             \
	static const ::lumen::CommandRegistrar LUMEN_COMMAND_CAT(lumen_command_,                                       \
								 __LINE__)(::lumen::Command{__VA_ARGS__})

} // namespace lumen
