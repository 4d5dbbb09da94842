// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// The `lumen` command table and subcommand dispatch (userspace/cli/
// commands.h): every command is in the table once, sorted, and a missing or
// unknown subcommand is refused with the list of the valid ones.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "base/error.h"
#include "cli/commands.h"

namespace
{

using namespace lumen;

TEST(CommandTable, EveryCommandOnceSortedWithUsage)
{
	const auto &cmds = commands();
	std::vector<std::string> names;
	for (const auto &c : cmds) {
		names.push_back(c.name);
		EXPECT_NE(c.run, nullptr) << c.name;
		EXPECT_GT(std::strlen(c.summary), 0u) << c.name;
		EXPECT_NE(std::string(c.usage).find("lumen " + std::string(c.name)), std::string::npos) << c.name;
		EXPECT_EQ(find_command(c.name), &c);
	}
	EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
	EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
	for (const char *always : {"delayline", "experiment", "host", "testbed", "traffic"})
		EXPECT_NE(find_command(always), nullptr) << always;
	EXPECT_EQ(find_command("frobnicate"), nullptr);
}

std::string usage_error_of(const std::string *name)
{
	try {
		run_subcommand<int>(
			name, {{"up", [](const int &) { return 1; }}, {"down", [](const int &) { return 2; }}}, 0);
	} catch (const UsageError &e) {
		return e.what();
	}
	return "";
}

TEST(Subcommands, PicksByNameAndRefusesTheRest)
{
	const std::string up = "up", down = "down", other = "sideways";
	auto run = [](const std::string &n, int arg) {
		return run_subcommand<int>(
			&n, {{"up", [](const int &a) { return a + 1; }}, {"down", [](const int &a) { return a - 1; }}},
			arg);
	};
	EXPECT_EQ(run(up, 10), 11);
	EXPECT_EQ(run(down, 10), 9);
	EXPECT_EQ(usage_error_of(nullptr), "missing subcommand (up, down)");
	EXPECT_EQ(usage_error_of(&other), "unknown subcommand 'sideways' (up, down)");
	EXPECT_EQ(usage_error_of(&up), "");
}

TEST(Subcommands, EveryCommandRefusesAnUnknownOne)
{
	for (const auto &c : commands()) {
		if (std::string(c.name) == "delayline")
			continue; // no subcommands: DEV_A DEV_B [options]
		try {
			c.run({"frobnicate"});
			ADD_FAILURE() << c.name << " ran 'frobnicate'";
		} catch (const UsageError &e) {
			EXPECT_NE(std::string(e.what()).find("unknown subcommand 'frobnicate'"), std::string::npos)
				<< c.name << ": " << e.what();
		}
	}
}

} // namespace
