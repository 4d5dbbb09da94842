// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/cli/commands.h - the `lumen` command table. Each cmd_<name>.cpp
// defines one Command (kCcCommand, ...); commands.cpp lists them all, so
// the table is written down once, in one place, and nothing registers
// itself at start-up.
#pragma once

#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

namespace lumen
{

struct Command {
	const char *name; // "cc"
	const char *summary; // one line for `lumen --help`
	const char *usage; // full text for `lumen <name> --help`
	// args: everything after the command name. Returns the exit status;
	// throws Error / UsageError.
	int (*run)(const std::vector<std::string> &args);
};

// Every command of this build, sorted by name.
const std::vector<Command> &commands();
const Command *find_command(const std::string &name);

// The commands (cmd_<name>.cpp), thin: each parses its arguments, calls
// its library (bpfctl, traffic, testbed, experiment) and prints.
extern const Command kCcCommand;
extern const Command kDelaylineCommand;
extern const Command kExperimentCommand;
extern const Command kGateCommand;
extern const Command kHostCommand;
extern const Command kIntCommand;
extern const Command kRetcpCommand;
extern const Command kRotorCommand;
extern const Command kSchedCommand;
extern const Command kSwitchCommand;
extern const Command kTestbedCommand;
extern const Command kTrafficCommand;

// A command's subcommands ("lumen cc load"): `name` picks one (nullptr when
// the command line has none); UsageError "missing subcommand (a, b)" or
// "unknown subcommand 'x' (a, b)" otherwise. Arg is what the handlers take:
// the parsed Args, or the words after the subcommand.
template <class Arg> struct Subcommand {
	const char *name;
	std::function<int(const Arg &)> run;
};

std::string subcommand_names(const std::vector<const char *> &names);
[[noreturn]] void refuse_subcommand(const std::string *name, const std::vector<const char *> &names);

template <class Arg>
int run_subcommand(const std::string *name, std::initializer_list<Subcommand<Arg>> subs, const Arg &arg)
{
	std::vector<const char *> names;
	for (const auto &s : subs) {
		if (name && *name == s.name)
			return s.run(arg);
		names.push_back(s.name);
	}
	refuse_subcommand(name, names);
}

} // namespace lumen
