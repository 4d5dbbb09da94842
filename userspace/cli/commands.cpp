// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#include "cli/commands.h"

#include <algorithm>
#include <cstring>

namespace lumen
{

static std::vector<Command> &registry()
{
	static std::vector<Command> cmds; // constructed on first use: safe from static initialisers
	return cmds;
}

void register_command(const Command &cmd)
{
	auto &cmds = registry();
	cmds.push_back(cmd);
	std::sort(cmds.begin(), cmds.end(),
		  [](const Command &a, const Command &b) { return std::strcmp(a.name, b.name) < 0; });
}

const std::vector<Command> &commands()
{
	return registry();
}

const Command *find_command(const std::string &name)
{
	for (const auto &c : registry())
		if (name == c.name)
			return &c;
	return nullptr;
}

} // namespace lumen
