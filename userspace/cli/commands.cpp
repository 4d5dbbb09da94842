// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#include "cli/commands.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"

namespace lumen
{

// in name order (cli_commands_test checks it): `lumen --help` lists them so
const std::vector<Command> &commands()
{
	static const std::vector<Command> table = {
		kCcCommand,    kDelaylineCommand, kExperimentCommand, kGateCommand,   kHostCommand,    kIntCommand,
		kRetcpCommand, kRotorCommand,	  kSchedCommand,      kSwitchCommand, kTestbedCommand, kTrafficCommand,
	};
	return table;
}

const Command *find_command(const std::string &name)
{
	for (const auto &c : commands())
		if (name == c.name)
			return &c;
	return nullptr;
}

std::string subcommand_names(const std::vector<const char *> &names)
{
	std::string out;
	for (const char *n : names)
		out += (out.empty() ? "" : ", ") + std::string(n);
	return out;
}

void refuse_subcommand(const std::string *name, const std::vector<const char *> &names)
{
	if (!name)
		throw UsageError("missing subcommand (" + subcommand_names(names) + ")");
	throw UsageError("unknown subcommand '" + *name + "' (" + subcommand_names(names) + ")");
}

} // namespace lumen
