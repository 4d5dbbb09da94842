// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// Real hosts for `lumen experiment run --hosts`: host inventories
// (userspace/experiment/inventory.h) parsed and every mistake refused with the
// file and JSON path; the SSH command lines (remote.h): argv quoted so a
// POSIX shell gives back exactly the same words, the inventory's options
// before the runner's, no destination taken for an option; and `lumen host`
// argument checks. The SSH runs themselves are tests/e2e/remote_test.sh.
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <string>
#include <unistd.h>
#include <vector>

#include "base/error.h"
#include "cli/commands.h"
#include "experiment/experiment_proc.h"
#include "experiment/experiment_remote.h"
#include "experiment/experiment_run.h"
#include "experiment/inventory.h"
#include "experiment/remote.h"

using namespace lumen;

namespace
{

const char kInventory[] = R"({
  "name": "lab",
  "path_rate": "10gbit",
  "base_rtt": "25us",
  "ssh_options": ["-i", "/root/.ssh/lab"],
  "lumen": "/opt/lumen/bin/lumen",
  "workdir": "/var/tmp",
  "hosts": [
    {"name": "s1", "role": "sender", "ssh": "root@10.0.0.1", "addr": "192.168.1.1"},
    {"name": "s2", "role": "sender", "ssh": "lab-s2", "addr": "192.168.1.2", "ssh_options": ["-p", "2222"],
     "lumen": "/usr/local/bin/lumen"},
    {"name": "r1", "role": "receiver", "ssh": "root@10.0.0.3", "addr": "192.168.1.3"},
    {"name": "h4", "ssh": "h4", "addr": "192.168.1.4"}
  ],
  "switches": [{"name": "sw1", "ssh": "root@10.0.0.9", "ports": ["eth1", "eth2"], "bottleneck": ["eth2"]}]
})";

// The inventory with `from` replaced by `to` (once), parsed: the error text.
std::string error_with(const std::string &from, const std::string &to)
{
	std::string text = kInventory;
	auto at = text.find(from);
	EXPECT_NE(at, std::string::npos) << from;
	if (at == std::string::npos)
		return "";
	text.replace(at, from.size(), to);
	try {
		parse_inventory(text, "lab.json");
	} catch (const UsageError &e) {
		return e.what();
	}
	return "(accepted)";
}

TEST(Inventory, ParsesEveryField)
{
	Inventory inv = parse_inventory(kInventory, "lab.json");
	EXPECT_EQ(inv.name, "lab");
	EXPECT_EQ(inv.path_rate_mbps, 10000u);
	EXPECT_EQ(inv.base_rtt_ns, 25000u);
	EXPECT_EQ(inv.workdir, "/var/tmp");
	ASSERT_EQ(inv.hosts.size(), 4u);
	EXPECT_EQ(inv.hosts[0].role, "sender");
	EXPECT_EQ(inv.hosts[0].lumen, "/opt/lumen/bin/lumen");
	EXPECT_EQ(inv.hosts[0].ssh_options, (std::vector<std::string>{"-i", "/root/.ssh/lab"}));
	// a host's own options come after the inventory's; its lumen wins
	EXPECT_EQ(inv.hosts[1].ssh_options, (std::vector<std::string>{"-i", "/root/.ssh/lab", "-p", "2222"}));
	EXPECT_EQ(inv.hosts[1].lumen, "/usr/local/bin/lumen");
	EXPECT_EQ(inv.hosts[3].role, "host"); // the default
	EXPECT_EQ(inv.host("r1").addr, "192.168.1.3");
	EXPECT_THROW(inv.host("nope"), Error);
	ASSERT_EQ(inv.switches.size(), 1u);
	EXPECT_EQ(inv.switches[0].ports, (std::vector<std::string>{"eth1", "eth2"}));
	EXPECT_EQ(inv.switches[0].bottleneck, (std::vector<std::string>{"eth2"}));
	EXPECT_NE(inventory_to_json(inv).find("\"192.168.1.4\""), std::string::npos);
}

TEST(Inventory, DefaultsAndMeasuredRtt)
{
	Inventory inv = parse_inventory(
		R"({"path_rate": "1gbit", "hosts": [{"name": "a", "ssh": "a", "addr": "10.0.0.1"}]})", "x.json");
	EXPECT_EQ(inv.base_rtt_ns, 0u); // measured
	EXPECT_EQ(inv.workdir, "/tmp");
	EXPECT_EQ(inv.hosts[0].lumen, "lumen");
	EXPECT_TRUE(inv.switches.empty());
}

TEST(Inventory, RefusesMistakesNamingFileAndPath)
{
	EXPECT_EQ(error_with("\"path_rate\": \"10gbit\",", ""), "lab.json: missing key \"path_rate\"");
	EXPECT_NE(error_with("\"10gbit\"", "\"fast\"").find("lab.json: path_rate:"), std::string::npos);
	EXPECT_NE(error_with("\"25us\"", "\"0us\"").find("base_rtt: must be above 0"), std::string::npos);
	EXPECT_NE(error_with("\"role\": \"receiver\"", "\"role\": \"server\"")
			  .find("hosts[2].role: unknown role 'server'"),
		  std::string::npos);
	EXPECT_NE(
		error_with("\"name\": \"s2\"", "\"name\": \"s1\"").find("hosts[1].name: host name 's1' is used twice"),
		std::string::npos);
	EXPECT_NE(error_with("\"192.168.1.2\"", "\"192.168.1.1\"").find("hosts[1].addr: address 192.168.1.1"),
		  std::string::npos);
	EXPECT_NE(error_with("\"192.168.1.3\"", "\"192.168.1.300\"").find("is not an IPv4 address"), std::string::npos);
	// an SSH "destination" that ssh would take as an option
	EXPECT_NE(error_with("\"root@10.0.0.3\"", "\"-oProxyCommand=x\"").find("hosts[2].ssh:"), std::string::npos);
	EXPECT_NE(error_with("\"root@10.0.0.3\"", "\"root@host name\"").find("not an SSH destination"),
		  std::string::npos);
	EXPECT_NE(error_with("\"/var/tmp\"", "\"tmp\"").find("workdir: 'tmp' is not an absolute directory"),
		  std::string::npos);
	EXPECT_NE(error_with("\"/var/tmp\"", "\"/\"").find("workdir"), std::string::npos);
	EXPECT_NE(error_with("\"bottleneck\": [\"eth2\"]", "\"bottleneck\": [\"eth3\"]")
			  .find("switches[0].bottleneck[0]: 'eth3' is not one of \"ports\""),
		  std::string::npos);
	EXPECT_NE(error_with("\"eth1\"", "\"a/b\"").find("switches[0].ports[0]"), std::string::npos);
	EXPECT_NE(error_with("\"name\": \"sw1\"", "\"name\": \"r1\"").find("switches[0].name: name 'r1' is used twice"),
		  std::string::npos);
	EXPECT_NE(error_with("\"workdir\"", "\"workdirs\"").find("workdirs: unknown key"), std::string::npos);
	EXPECT_NE(error_with("\"ssh\": \"h4\", ", "").find("hosts[3]: missing key \"ssh\""), std::string::npos);
	EXPECT_NE(error_with("\"/opt/lumen/bin/lumen\"", "\"-x\"").find("lumen: '-x' is not a program path"),
		  std::string::npos);
	EXPECT_NE(error_with("{\n  \"name\"", "[{\n  \"name\"").find("not valid JSON"), std::string::npos);
	EXPECT_NE(error_with("\"path_rate\": \"10gbit\"", "\"path_rate\": 1e309").find("lab.json: not valid JSON"),
		  std::string::npos);
	try {
		parse_inventory(R"({"path_rate": "1gbit", "hosts": []})", "e.json");
		ADD_FAILURE() << "an empty host list was accepted";
	} catch (const UsageError &e) {
		EXPECT_NE(std::string(e.what()).find("e.json: hosts: expected a list of 1.."), std::string::npos);
	}
	EXPECT_THROW(load_inventory("/nonexistent/inventory.json"), UsageError);
}

// What /bin/sh makes of a quoted command: the words, NUL-separated.
std::vector<std::string> shell_words(const std::vector<std::string> &argv)
{
	ProcessResult r = run_process({"sh", "-c", "printf '%s\\0' " + shell_command(argv)});
	EXPECT_EQ(r.status, 0) << r.output;
	std::vector<std::string> words;
	std::string cur;
	for (char c : r.output) {
		if (c == '\0') {
			words.push_back(cur);
			cur.clear();
		} else {
			cur += c;
		}
	}
	return words;
}

TEST(Remote, QuotedWordsReachTheShellUnchanged)
{
	std::vector<std::string> tricky = {"plain", "two words",  "it's",      "'", "''",     "$HOME", "`id`", "a\\b",
					   "*",	    "x;rm -rf /", "new\nline", "",  "\"dq\"", "--",    "-n"};
	EXPECT_EQ(shell_words(tricky), tricky);
	EXPECT_EQ(shell_quote(""), "''");
	EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
}

TEST(Remote, SshArgvPutsTheInventoryOptionsFirst)
{
	SshTarget t{"s1", "root@10.0.0.1", {"-i", "/k", "-o", "ConnectTimeout=3"}, "/opt/lumen"};
	auto argv = ssh_argv(t, {"/opt/lumen", "host", "info", "--json"});
	ASSERT_GE(argv.size(), 8u);
	EXPECT_EQ(argv[0], "ssh");
	// ssh keeps the first value of an option: the inventory's must come first
	EXPECT_EQ((std::vector<std::string>(argv.begin() + 1, argv.begin() + 5)),
		  (std::vector<std::string>{"-i", "/k", "-o", "ConnectTimeout=3"}));
	auto has = [&](const std::string &w) { return std::find(argv.begin(), argv.end(), w) != argv.end(); };
	EXPECT_TRUE(has("BatchMode=yes"));
	EXPECT_TRUE(has("-T"));
	EXPECT_EQ(argv[argv.size() - 2], "root@10.0.0.1");
	EXPECT_EQ(argv.back(), "'/opt/lumen' 'host' 'info' '--json'");
	SshTarget bad{"x", "-oProxyCommand=sh", {}, "lumen"};
	EXPECT_THROW(ssh_argv(bad, {"true"}), Error);
}

int run_cmd(const std::vector<std::string> &argv)
{
	const Command *c = find_command(argv[0]);
	if (!c)
		throw Error("no command " + argv[0]);
	return c->run(std::vector<std::string>(argv.begin() + 1, argv.end()));
}

TEST(HostCommand, RefusesBadArguments)
{
	EXPECT_THROW(run_cmd({"host"}), UsageError);
	EXPECT_THROW(run_cmd({"host", "frobnicate"}), UsageError);
	EXPECT_THROW(run_cmd({"host", "run", "true"}), UsageError); // no "--"
	EXPECT_THROW(run_cmd({"host", "run", "--"}), UsageError); // no command
	EXPECT_THROW(run_cmd({"host", "run", "--grace", "soon", "--", "true"}), UsageError);
	EXPECT_THROW(run_cmd({"host", "run", "--bogus", "x", "--", "true"}), UsageError);
	EXPECT_THROW(run_cmd({"host", "cgroup-create", "../escape"}), UsageError);
	EXPECT_THROW(run_cmd({"host", "cgroup-remove", ".hidden"}), UsageError);
	EXPECT_THROW(run_cmd({"host", "cgroup-create", std::string(65, 'a')}), UsageError);
	EXPECT_THROW(run_cmd({"host", "info", "extra"}), UsageError);
	EXPECT_THROW(run_cmd({"switch", "sample", "--interval", "100us"}), UsageError);
	EXPECT_THROW(run_cmd({"switch", "sample", "--count", "0"}), UsageError);
}

} // namespace

// The start barrier's channel: a line reaches the child's input; a child that
// no longer reads it is an Error, never a SIGPIPE that ends the runner.
TEST(ChildInputs, WritesLinesAndReportsAGoneReader)
{
	int p[2];
	ASSERT_EQ(::pipe(p), 0);
	ChildInputs inputs;
	inputs.add(4242, p[1]);
	inputs.write(4242, "start-at 5\n");
	char buf[32] = {};
	ASSERT_EQ(::read(p[0], buf, sizeof(buf)), 11);
	EXPECT_STREQ(buf, "start-at 5\n");
	EXPECT_THROW(inputs.write(4243, "x"), Error); // not ours

	::close(p[0]); // the child is gone
	auto old = std::signal(SIGPIPE, SIG_DFL);
	try {
		inputs.write(4242, "start-at 6\n");
		ADD_FAILURE() << "a write to a closed pipe succeeded";
	} catch (const Error &e) {
		EXPECT_NE(std::string(e.what()).find("Broken pipe"), std::string::npos) << e.what();
	}
	sigset_t pending;
	sigpending(&pending);
	EXPECT_FALSE(sigismember(&pending, SIGPIPE)); // taken back, not left to fire
	std::signal(SIGPIPE, old);
	inputs.close_all();
	EXPECT_THROW(inputs.write(4242, "x"), Error);
}

// The remote work directory is the one mktemp made, or the run stops: a
// login script's chatter before it is fine, anything else is refused.
TEST(Remote, PrivateWorkdirIsWhatMktempMade)
{
	const std::string prefix = "/tmp/lumen-x-ctl-42.";
	EXPECT_EQ(private_workdir_path("/tmp/lumen-x-ctl-42.aB3dE6gH\n", prefix), "/tmp/lumen-x-ctl-42.aB3dE6gH");
	EXPECT_EQ(private_workdir_path("welcome\n/tmp/lumen-x-ctl-42.aB3dE6gH\n", prefix),
		  "/tmp/lumen-x-ctl-42.aB3dE6gH");
	EXPECT_EQ(private_workdir_path("", prefix), "");
	EXPECT_EQ(private_workdir_path("mktemp: failed\n", prefix), "");
	EXPECT_EQ(private_workdir_path("/tmp/lumen-x-ctl-42.XXXXXXXX/../etc\n", prefix), "");
	EXPECT_EQ(private_workdir_path("/tmp/lumen-x-ctl-42.aB3/E6gH\n", prefix), "");
	EXPECT_EQ(private_workdir_path("/tmp/lumen-x-ctl-42.aB3dE6g\n", prefix), ""); // too short
	EXPECT_EQ(private_workdir_path("/var/lumen-x-ctl-42.aB3dE6gH\n", prefix), ""); // elsewhere
}
