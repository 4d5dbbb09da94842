// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// `lumen sched` end to end through its command (cli/cmd_sched.cpp): files
// made, checked and drawn; every mistake refused with a message that says
// what is wrong, and nothing written.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/system.h"
#include "cli/commands.h"
#include "sched/demand.h"
#include "sched/report.h"
#include "sched/schedule.h"

namespace
{

using namespace lumen;
using Words = std::vector<std::string>;

class SchedCli : public ::testing::Test
{
      protected:
	void SetUp() override
	{
		char tmpl[] = "/tmp/lumen-sched-cli-XXXXXX";
		ASSERT_NE(mkdtemp(tmpl), nullptr);
		dir_ = tmpl;
	}
	void TearDown() override
	{
		std::system(("rm -rf '" + dir_ + "'").c_str());
	}

	int run(const Words &args)
	{
		return find_command("sched")->run(args);
	}
	// The UsageError that `lumen sched args` raises ("" when none).
	std::string refusal(const Words &args)
	{
		try {
			run(args);
		} catch (const UsageError &e) {
			return e.what();
		}
		return "";
	}
	std::string path(const std::string &name) const
	{
		return dir_ + "/" + name;
	}

	std::string dir_;
};

TEST_F(SchedCli, RoundRobinMadeCheckedAndDrawn)
{
	std::string f = path("rr.json");
	ASSERT_EQ(run({"generate", "round-robin", "--nodes", "8", "--uplinks", "2", "--slot", "50us", "--guard", "5us",
		       "--t0", "123456789000", "--version", "3", "--link", "25gbit", "--out", f}),
		  0);
	sched::Schedule s = sched::load(f);
	EXPECT_EQ(s.period, 4u);
	EXPECT_EQ(s.slot_ns, 50'000u);
	EXPECT_EQ(s.guard_ns, 5'000u);
	EXPECT_EQ(s.t0_ns, 123456789000u);
	EXPECT_EQ(s.version, 3u);
	EXPECT_DOUBLE_EQ(s.link_gbps, 25);
	EXPECT_EQ(run({"validate", f}), 0);
	EXPECT_EQ(run({"validate", f, "--json"}), 0);
	std::string png = path("rr.png");
	EXPECT_EQ(run({"show", f, "--slots", "2", "--png", png}), 0);
	struct stat st {
	};
	ASSERT_EQ(stat(png.c_str(), &st), 0);
	EXPECT_GT(st.st_size, 1000);
	EXPECT_EQ(run({"show", f, "--json"}), 0);
}

TEST_F(SchedCli, T0NowIsAWholeSlotInTheFuture)
{
	std::string f = path("now.json");
	timespec ts{};
	clock_gettime(CLOCK_TAI, &ts);
	uint64_t before = (uint64_t)ts.tv_sec * 1'000'000'000ull + (uint64_t)ts.tv_nsec;
	ASSERT_EQ(run({"generate", "round-robin", "--nodes", "4", "--slot", "300us", "--t0", "now+2s", "--out", f}), 0);
	sched::Schedule s = sched::load(f);
	EXPECT_EQ(s.t0_ns % 300'000, 0u);
	EXPECT_GE(s.t0_ns, before + 2'000'000'000ull);
	EXPECT_LT(s.t0_ns, before + 3'000'000'000ull);
}

TEST_F(SchedCli, VermilionFromADemandFile)
{
	std::string demand = path("ring.csv"), f = path("v.json");
	write_file(demand, "# a ring of 4\n0,1,0,0\n0,0,1,0\n0 0 0 1\n1\t0\t0\t0\n");
	ASSERT_EQ(run({"generate", "vermilion", "--demand", demand, "--k", "3", "--out", f}), 0);
	sched::Schedule s = sched::load(f);
	EXPECT_EQ(s.period, 12u);
	uint32_t n = 0;
	std::vector<double> d = sched::load_demand(demand, &n);
	EXPECT_GE(sched::single_hop_throughput(s, d), 2.0 / 3 * s.duty() - 1e-9);
	EXPECT_EQ(run({"show", f, "--demand", demand}), 0);
}

TEST_F(SchedCli, ShaleEbsMadeAndShown)
{
	std::string f = path("e.json");
	ASSERT_EQ(run({"generate", "ebs", "--nodes", "16", "--h", "2", "--uplinks", "2", "--out", f}), 0);
	sched::Schedule s = sched::load(f);
	EXPECT_EQ(s.period, 3u); // 2 phases of 3 shifts over 2 uplinks
	EXPECT_EQ(s.generator, "ebs h=2 m=4");
	EXPECT_EQ(run({"show", f}), 0);
}

TEST_F(SchedCli, MistakesAreRefusedAndNothingIsWritten)
{
	std::string f = path("x.json"), demand = path("d.csv"), bad = path("bad.json");
	write_file(demand, "0 1 2\n1 0\n");
	write_file(bad, "{\"format\": \"lumen-schedule\"}");
	struct Case {
		Words args;
		const char *says;
	} cases[] = {
		{{"generate"}, "one kind"},
		{{"generate", "banyan", "--out", f}, "unknown schedule kind 'banyan'"},
		{{"generate", "round-robin", "--out", f}, "needs --nodes"},
		{{"generate", "round-robin", "--nodes", "8"}, "needs --out"},
		{{"generate", "round-robin", "--nodes", "1", "--out", f}, "--nodes"},
		{{"generate", "round-robin", "--nodes", "8", "--uplinks", "0", "--out", f}, "--uplinks"},
		{{"generate", "round-robin", "--nodes", "8", "--slot", "10us", "--guard", "10us", "--out", f},
		 "--guard must be shorter"},
		{{"generate", "round-robin", "--nodes", "8", "--guard-at", "middle", "--out", f}, "--guard-at"},
		{{"generate", "round-robin", "--nodes", "8", "--t0", "yesterday", "--out", f}, "--t0"},
		{{"generate", "round-robin", "--nodes", "8", "--t0", "now-1s", "--out", f}, "--t0"},
		{{"generate", "round-robin", "--nodes", "8", "--k", "3", "--out", f}, "--k"},
		{{"generate", "ebs", "--nodes", "16", "--out", f}, "needs --nodes N and --h H"},
		{{"generate", "ebs", "--nodes", "16", "--h", "0", "--out", f}, "--h"},
		{{"generate", "ebs", "--nodes", "16", "--h", "2", "--k", "3", "--out", f}, "--k"},
		{{"generate", "vermilion", "--out", f}, "needs --demand"},
		{{"generate", "vermilion", "--demand", demand, "--out", f}, "d.csv:2: 2 entries, the first row has 3"},
		{{"generate", "vermilion", "--demand", path("none.csv"), "--out", f}, "none.csv"},
		{{"validate"}, "one schedule file"},
		{{"validate", bad}, "bad.json: missing key \"format_version\""},
		{{"show", bad}, "bad.json"},
		{{"show", path("rr.json"), "--png", path("p.gif")}, "must end in .png"},
	};
	for (const Case &c : cases) {
		std::string why = refusal(c.args);
		EXPECT_NE(why.find(c.says), std::string::npos) << "expected '" << c.says << "', got '" << why << "'";
	}
	EXPECT_FALSE(path_exists(f));
}

TEST_F(SchedCli, AnInvalidScheduleIsNotSavedOverAGoodOne)
{
	std::string f = path("keep.json");
	ASSERT_EQ(run({"generate", "round-robin", "--nodes", "4", "--out", f}), 0);
	std::string before = read_file(f);
	sched::Schedule s = sched::load(f);
	s.to(0, 0, 0) = 2; /* two nodes reach node 2 */
	EXPECT_THROW(sched::save(s, f), UsageError);
	EXPECT_EQ(read_file(f), before);
}

} // namespace
