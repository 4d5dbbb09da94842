// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// `lumen experiment run --vm` (userspace/experiment/experiment_vm.h) and the
// kernel module pieces of the runner (experiment_kmod.h): the --vm values,
// the paths a VM cannot see, the vm-run command line, the module's counters
// and parameters, including their save and restore on a fake sysfs tree.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "base/error.h"
#include "base/units.h"
#include "experiment/experiment.h"
#include "experiment/experiment_kmod.h"
#include "experiment/experiment_vm.h"

using namespace lumen;

namespace
{

TEST(ExperimentVm, KernelValues)
{
	EXPECT_EQ(parse_vm_kernel("6.1"), "6.1");
	EXPECT_EQ(parse_vm_kernel("6.12"), "6.12");
	for (const char *bad : {"", "6", "6.10", "5.10", "6.1.0-56-amd64", "6.12 ", "latest"})
		EXPECT_THROW(parse_vm_kernel(bad), UsageError) << bad;
}

TEST(ExperimentVm, DefaultAlgorithmsAreValidAndIncludeTheModule)
{
	auto algos = vm_default_algorithms();
	std::string list;
	for (const auto &a : algos)
		list += (list.empty() ? "" : ",") + a;
	EXPECT_EQ(parse_algorithm_list(list), algos);
	EXPECT_EQ(std::count_if(algos.begin(), algos.end(), is_kmod_algorithm), 3);
}

TEST(ExperimentVm, GuestTmpfsPaths)
{
	for (const char *p : {"/tmp", "/tmp/x", "/var/tmp/a/b", "/run", "/run/lumen", "/dev/shm/q"})
		EXPECT_TRUE(below_guest_tmpfs(p)) << p;
	for (const char *p : {"/", "/tmpfoo", "/work/main/build/x", "/var/tmpx", "/running", "/dev/shmem", "/var"})
		EXPECT_FALSE(below_guest_tmpfs(p)) << p;
}

std::vector<std::string> after(const std::vector<std::string> &argv, const std::string &word)
{
	auto it = std::find(argv.begin(), argv.end(), word);
	return it == argv.end() ? std::vector<std::string>{} : std::vector<std::string>(it + 1, argv.end());
}

// A launch from a source tree at /src, as the tests below vary it.
VmLaunch source_tree_launch()
{
	VmLaunch l;
	l.vm_run = "/src/tools/vm-run";
	l.kernel = "6.12";
	l.kmod = "/src/build/kmod-6.12/tcp_powertcp.ko";
	l.lumen = "/src/build/userspace/lumen";
	l.experiment_file = "/src/experiments/quick.json";
	l.out_dir = "/src/build/out";
	return l;
}

TEST(ExperimentVm, VmRunCommandLine)
{
	VmLaunch l = source_tree_launch();
	l.algorithms = {"powertcp", "cubic"};
	l.smoke = true;
	l.rate_mbps = 100;
	l.delay_ns = 250'500;
	l.timeout_s = 900;
	auto argv = vm_run_argv(l);
	ASSERT_GE(argv.size(), 2u);
	EXPECT_EQ(argv[0], "/src/tools/vm-run");
	EXPECT_EQ(after(argv, "--kernel").front(), "6.12");
	EXPECT_EQ(after(argv, "--module").front(), l.kmod);
	EXPECT_EQ(after(argv, "--share").front(), l.out_dir);
	EXPECT_EQ(after(argv, "--timeout").front(), "900");
	auto cmd = after(argv, "--");
	ASSERT_GE(cmd.size(), 5u);
	EXPECT_EQ(cmd[0], "env");
	EXPECT_EQ(cmd[2], l.lumen);
	EXPECT_EQ(std::vector<std::string>(cmd.begin() + 3, cmd.begin() + 6),
		  (std::vector<std::string>{"experiment", "run", l.experiment_file}));
	EXPECT_EQ(after(cmd, "--out").front(), l.out_dir);
	EXPECT_EQ(after(cmd, "--algos").front(), "powertcp,cubic");
	EXPECT_EQ(after(cmd, "--rate").front(), "100");
	EXPECT_NE(std::find(cmd.begin(), cmd.end(), "--smoke"), cmd.end());
	EXPECT_EQ(std::find(cmd.begin(), cmd.end(), "--duration"), cmd.end());
	// the inner run parses what the outer one gives it
	EXPECT_EQ(parse_rate_mbps(after(cmd, "--rate").front(), "--rate"), 100u);
	EXPECT_EQ(parse_duration_ns(after(cmd, "--delay").front(), "--delay", 1'000'000'000), 250'500u);

	l.smoke = false;
	l.rate_mbps.reset();
	l.delay_ns.reset();
	l.duration_ns = 12'500'000'000ull;
	cmd = after(vm_run_argv(l), "--");
	EXPECT_EQ(std::find(cmd.begin(), cmd.end(), "--smoke"), cmd.end());
	EXPECT_EQ(std::find(cmd.begin(), cmd.end(), "--rate"), cmd.end());
	EXPECT_EQ(std::find(cmd.begin(), cmd.end(), "--delay"), cmd.end());
	EXPECT_EQ(parse_duration_ns(after(cmd, "--duration").front(), "d", 3600'000'000'000ull), 12'500'000'000ull);
}

TEST(ExperimentVm, VmRunSharesDirectoriesBelowGuestTmpfs)
{
	VmLaunch l = source_tree_launch();
	l.timeout_s = 900;
	// a tree outside the guest's tmpfs paths needs no --visible
	EXPECT_TRUE(after(vm_run_argv(l), "--visible").empty());

	// a clone under /tmp: the binary's and the description's directories,
	// each once, before the command
	l.lumen = "/tmp/clone/build/userspace/lumen";
	l.experiment_file = "/tmp/clone/build/userspace/x.json";
	auto argv = vm_run_argv(l);
	auto dashdash = std::find(argv.begin(), argv.end(), "--");
	EXPECT_EQ(std::count(argv.begin(), dashdash, "--visible"), 1);
	EXPECT_EQ(after(argv, "--visible").front(), "/tmp/clone/build/userspace");
	l.experiment_file = "/run/user/0/quick.json";
	argv = vm_run_argv(l);
	dashdash = std::find(argv.begin(), argv.end(), "--");
	EXPECT_EQ(std::count(argv.begin(), dashdash, "--visible"), 2);
	EXPECT_NE(std::find(argv.begin(), dashdash, "/run/user/0"), dashdash);
	auto cmd = after(argv, "--");
	ASSERT_GE(cmd.size(), 3u);
	EXPECT_EQ(cmd[2], l.lumen);
}

TEST(ExperimentVm, TimeoutGrowsWithRuns)
{
	ExperimentSpec s;
	s.duration_ns = 4'000'000'000ull;
	s.algorithms = {"cubic"};
	std::uint64_t one = vm_timeout_s(s);
	s.algorithms = {"cubic", "bbr", "powertcp"};
	std::uint64_t three = vm_timeout_s(s);
	EXPECT_GT(three, one);
	EXPECT_GE(three, 3 * 2 * 4u); // at least twice each run's length
	s.loads = {0.2, 0.5};
	EXPECT_GT(vm_timeout_s(s), three);
}

TEST(ExperimentVm, MissingKmodSaysHowToBuildIt)
{
	try {
		find_kmod("6.1", "");
		// the build tree may have it: then it is an absolute path to a file
		EXPECT_EQ(find_kmod("6.1", "").front(), '/');
	} catch (const Error &e) {
		EXPECT_NE(std::string(e.what()).find("tools/kmod-build --kernel 6.1"), std::string::npos) << e.what();
	}
	EXPECT_THROW(find_kmod("6.12", "/nonexistent/tcp_powertcp.ko"), UsageError);
}

TEST(ExperimentKmod, Algorithms)
{
	EXPECT_TRUE(is_kmod_algorithm("powertcp"));
	EXPECT_TRUE(is_kmod_algorithm("theta_powertcp"));
	EXPECT_TRUE(is_kmod_algorithm("hpcc"));
	EXPECT_STREQ(cc_impl("hpcc"), "kmod");
	EXPECT_FALSE(is_kmod_algorithm("bpf_powertcp"));
	EXPECT_FALSE(is_kmod_algorithm("cubic"));
	EXPECT_STREQ(cc_impl("powertcp"), "kmod");
	EXPECT_STREQ(cc_impl("bpf_theta_ptcp"), "bpf");
	EXPECT_STREQ(cc_impl("bbr"), "kernel");
}

TEST(ExperimentKmod, StatsParse)
{
	auto c = parse_kmod_stats("flows 4\nint_updates 1234\nint_echoes 5000\nstates 0\n", "stats");
	EXPECT_EQ(c.size(), 4u);
	EXPECT_EQ(c.at("int_updates"), 1234u);
	EXPECT_EQ(c.at("states"), 0u);
	for (const char *bad :
	     {"", "flows\n", "flows x\n", "flows 1 2\n", "flows -1\n", "a 1\na 2\n", "flows 99999999999999999999\n"})
		EXPECT_THROW(parse_kmod_stats(bad, "stats"), Error) << bad;
}

TEST(ExperimentKmod, StatsDelta)
{
	KmodCounters before = {{"int_updates", 100}, {"flows", 2}, {"states", 2}, {"hooks", 1}};
	KmodCounters after = {{"int_updates", 350}, {"flows", 6}, {"states", 1}, {"no_mem", 3}, {"hooks", 1}};
	auto d = kmod_counters_delta(before, after);
	EXPECT_EQ(d.at("int_updates"), 250u);
	EXPECT_EQ(d.at("flows"), 4u);
	EXPECT_EQ(d.at("states"), 1u); // a gauge: its value now
	EXPECT_EQ(d.at("hooks"), 1u); // a gauge too
	EXPECT_EQ(d.at("no_mem"), 3u); // new counter: all of it
}

TEST(ExperimentKmod, ParamValues)
{
	auto p = kmod_param_values(100, 212'400, {});
	ASSERT_EQ(p.size(), 2u);
	EXPECT_EQ(p[0], (std::pair<std::string, std::string>{"host_bw_mbps", "100"}));
	EXPECT_EQ(p[1], (std::pair<std::string, std::string>{"base_rtt_us", "212"}));

	p = kmod_param_values(1000, 200'000,
			      {{"gamma", "0.9"}, {"flows", "4"}, {"beta", "64k"}, {"host-bw", "10gbit"}});
	std::map<std::string, std::string> m(p.begin(), p.end());
	EXPECT_EQ(m.at("gamma"), "900"); // permille in the module
	EXPECT_EQ(m.at("expected_flows"), "4");
	EXPECT_EQ(m.at("beta_bytes"), "65536");
	EXPECT_EQ(m.at("host_bw_mbps"), "10000"); // cc_params win over the path
	EXPECT_EQ(p.size(), 5u);
	EXPECT_EQ(kmod_param_values(1000, 200'000, {{"base-rtt", "auto"}})[1].second, "0");

	EXPECT_THROW(kmod_param_values(0, 200'000, {}), UsageError);
	EXPECT_THROW(kmod_param_values(100, 2'000'000'000ull, {}), UsageError); // > 1 s
	EXPECT_THROW(kmod_param_values(100, 200'000, {{"alpha", "1"}}), UsageError);
	EXPECT_THROW(kmod_param_values(100, 200'000, {{"gamma", "2"}}), UsageError);
	EXPECT_THROW(kmod_param_values(100, 200'000, {{"flows", "0"}}), UsageError);

	// HPCC's keys as the module's hpcc_* parameters
	p = kmod_param_values(1000, 200'000, {{"eta", "0.9"}, {"max-stage", "3"}, {"wai", "2k"}});
	m = std::map<std::string, std::string>(p.begin(), p.end());
	EXPECT_EQ(m.at("hpcc_eta"), "900"); // permille
	EXPECT_EQ(m.at("hpcc_max_stage"), "3");
	EXPECT_EQ(m.at("hpcc_wai_bytes"), "2048");
	EXPECT_EQ(kmod_param_values(1000, 200'000, {{"wai", "auto"}})[2].second, "0");
	EXPECT_THROW(kmod_param_values(100, 200'000, {{"eta", "0.4"}}), UsageError);
	EXPECT_THROW(kmod_param_values(100, 200'000, {{"max-stage", "101"}}), UsageError);
	EXPECT_THROW(kmod_param_values(100, 200'000, {{"wai", "2g"}}), UsageError);
}

// A fake /sys/module/tcp_powertcp for the parameter writes.
class FakeSysfs : public ::testing::Test
{
      protected:
	void SetUp() override
	{
		dir_ = std::filesystem::temp_directory_path() / ("lumen-kmod-test." + std::to_string(::getpid()));
		std::filesystem::create_directories(dir_ / "parameters");
		write("host_bw_mbps", "0\n");
		write("base_rtt_us", "0\n");
		std::ofstream(dir_ / "powertcp") << "flows 7\nint_updates 42\nstates 1\nhooks 1\n";
		::setenv("LUMEN_KMOD_SYSFS", dir_.c_str(), 1);
		::setenv("LUMEN_KMOD_PROC", (dir_ / "powertcp").c_str(), 1);
	}
	void TearDown() override
	{
		::unsetenv("LUMEN_KMOD_SYSFS");
		::unsetenv("LUMEN_KMOD_PROC");
		std::filesystem::remove_all(dir_);
	}
	void write(const std::string &name, const std::string &text)
	{
		std::ofstream(dir_ / "parameters" / name) << text;
	}
	std::string read(const std::string &name)
	{
		std::ifstream f(dir_ / "parameters" / name);
		std::stringstream ss;
		ss << f.rdbuf();
		return ss.str();
	}
	std::filesystem::path dir_;
};

TEST_F(FakeSysfs, ParamsSetAndRestored)
{
	ASSERT_TRUE(kmod_loaded());
	{
		KmodParamsSet set({{"host_bw_mbps", "100"}, {"base_rtt_us", "212"}});
		EXPECT_EQ(read("host_bw_mbps"), "100");
		EXPECT_EQ(read("base_rtt_us"), "212");
	}
	EXPECT_EQ(read("host_bw_mbps"), "0");
	EXPECT_EQ(read("base_rtt_us"), "0");
}

TEST_F(FakeSysfs, FailedSetRestoresWhatItWrote)
{
	EXPECT_THROW(KmodParamsSet({{"host_bw_mbps", "100"}, {"no_such_param", "1"}}), Error);
	EXPECT_EQ(read("host_bw_mbps"), "0");
}

TEST_F(FakeSysfs, Stats)
{
	auto c = read_kmod_stats();
	EXPECT_EQ(c.at("flows"), 7u);
	EXPECT_EQ(c.at("int_updates"), 42u);
	KmodCounters sum;
	kmod_counters_add(sum, c);
	kmod_counters_add(sum, c);
	EXPECT_EQ(sum.at("flows"), 14u); // per namespace: summed
	EXPECT_EQ(sum.at("hooks"), 1u); // host-wide: not
}

TEST(ExperimentKmod, NotLoaded)
{
	::setenv("LUMEN_KMOD_SYSFS", "/nonexistent/tcp_powertcp", 1);
	EXPECT_FALSE(kmod_loaded());
	EXPECT_THROW(read_kmod_stats(), Error);
	::unsetenv("LUMEN_KMOD_SYSFS");
}

} // namespace
