// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/base: the one way lumen runs a helper command (process.h), the
// namespace and device name checks (netns.h) and the small text and file
// helpers (system.h).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <functional>
#include <string>
#include <unistd.h>
#include <vector>

#include "base/error.h"
#include "base/fd.h"
#include "base/netns.h"
#include "base/process.h"
#include "base/system.h"

using namespace lumen;

namespace
{

std::string error_of(const std::function<void()> &f)
{
	try {
		f();
	} catch (const Error &e) {
		return e.what();
	}
	return "";
}

} // namespace

TEST(Process, CollectsOutputAndStatus)
{
	ProcessResult r = run_process({"sh", "-c", "echo out; echo err >&2; exit 3"});
	EXPECT_EQ(r.status, 3);
	EXPECT_NE(r.output.find("out\n"), std::string::npos);
	EXPECT_NE(r.output.find("err\n"), std::string::npos);
}

TEST(Process, FeedsInputAndEndsIt)
{
	ProcessOptions opts;
	opts.input = std::string(200000, 'x') + "\n"; // more than a pipe holds
	EXPECT_EQ(run_process({"wc", "-c"}, opts).output, "200001\n");
	EXPECT_EQ(run_process({"cat"}).output, ""); // no input: end of file at once, no hang
}

TEST(Process, RunsInTheGivenDirectory)
{
	ProcessOptions opts;
	opts.cwd = "/";
	EXPECT_EQ(run_process({"pwd"}, opts).output, "/\n");
	opts.cwd = "/nonexistent-lumen-dir";
	EXPECT_NE(error_of([&] { run_process({"pwd"}, opts); }).find("cannot change directory"), std::string::npos);
}

TEST(Process, SignalsAreStatus128Plus)
{
	EXPECT_EQ(run_process({"sh", "-c", "kill -TERM $$"}).status, 128 + 15);
}

TEST(Process, MissingProgramIsAnErrorNotAStatus)
{
	std::string e = error_of([] { run_process({"lumen-no-such-program"}); });
	EXPECT_NE(e.find("cannot run 'lumen-no-such-program': not found"), std::string::npos) << e;
	EXPECT_NE(error_of([] { run_process({}); }), "");
}

TEST(Process, OwnProcessGroupOnlyWhenAsked)
{
	// fields 1 and 5 of /proc/<pid>/stat: pid and process group
	const std::vector<std::string> argv = {"sh", "-c", "cut -d' ' -f1,5 /proc/$$/stat"};
	std::vector<std::string> w = split_words(run_process(argv).output);
	ASSERT_EQ(w.size(), 2u);
	EXPECT_EQ(w[1], std::to_string(::getpgrp()));
	ProcessOptions opts;
	opts.own_process_group = true;
	pid_t seen = 0;
	opts.started = [&](pid_t pid) { seen = pid; };
	w = split_words(run_process(argv, opts).output);
	ASSERT_EQ(w.size(), 2u);
	EXPECT_EQ(w[0], w[1]);
	EXPECT_EQ(w[0], std::to_string(seen));
}

TEST(Process, NamespaceThatCannotBeEnteredIsAnError)
{
	Fd not_a_netns(::open("/dev/null", O_RDONLY | O_CLOEXEC));
	ASSERT_TRUE(not_a_netns.valid());
	ProcessOptions opts;
	opts.netns_fd = not_a_netns.get();
	EXPECT_NE(error_of([&] { run_process({"true"}, opts); }).find("cannot enter the network namespace"),
		  std::string::npos);
}

TEST(Process, CheckedRunNamesTheCommandAndItsOutput)
{
	EXPECT_EQ(run_checked({"echo", "fine"}), "fine\n");
	std::string e = error_of([] { run_checked({"sh", "-c", "echo broken; exit 4"}); });
	EXPECT_EQ(e, "'sh -c echo broken; exit 4' failed (exit 4): broken");
}

TEST(Netns, NamesAreChecked)
{
	for (const char *bad : {"", ".", "..", "a/b"})
		EXPECT_THROW(check_netns_name(bad, "--netns"), UsageError) << bad;
	EXPECT_THROW(check_netns_name(std::string(kNetnsNameMax + 1, 'n'), "--netns"), UsageError);
	EXPECT_NO_THROW(check_netns_name(std::string(kNetnsNameMax, 'n'), "--netns"));
	for (const char *bad : {"", "eth 0", "a/b", "sixteen-chars-xx"})
		EXPECT_THROW(check_ifname(bad, "DEV"), UsageError) << bad;
	EXPECT_NO_THROW(check_ifname("veth0", "DEV"));
	EXPECT_FALSE(netns_exists(""));
	EXPECT_FALSE(netns_exists("lumen-no-such-netns"));
}

TEST(System, TextHelpers)
{
	EXPECT_EQ(trim("a b \r\n\n"), "a b");
	EXPECT_EQ(trim(""), "");
	EXPECT_TRUE(starts_with("lt-x-h0", "lt-x-"));
	EXPECT_FALSE(starts_with("lt", "lt-x-"));
	EXPECT_EQ(command_text({"tc", "qdisc", "show"}), "tc qdisc show");
}

TEST(System, FilesAndDirectories)
{
	char tmpl[] = "/tmp/lumen-base-test-XXXXXX";
	ASSERT_NE(::mkdtemp(tmpl), nullptr);
	const std::string dir = tmpl;
	make_dirs(dir + "/b/c");
	make_dirs(dir + "/a");
	Fd f(::open((dir + "/a/file").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
	ASSERT_TRUE(f.valid());
	write_all(f.get(), "one\ntwo\n", "the test file");
	f.reset();
	EXPECT_EQ(read_file(dir + "/a/file"), "one\ntwo\n");
	EXPECT_EQ(list_dir(dir), (std::vector<std::string>{"a", "b"}));
	EXPECT_TRUE(list_dir(dir + "/missing").empty());
	EXPECT_NE(error_of([&] { read_file(dir + "/missing"); }).find(dir + "/missing"), std::string::npos);
	run_checked({"rm", "-rf", dir});
}
