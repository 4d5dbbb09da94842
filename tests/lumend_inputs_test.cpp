// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/lumend_inputs_test.cpp - what lumend reads besides its control
// socket: schedule files only when regular and of bounded size
// (/dev/zero, a FIFO, a directory, a huge file: refused at once), and
// ptp4l's answers only from ptp4l's own socket (userspace/lumend/ptp4l.h).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/fd.h"
#include "base/system.h"
#include "lumend/daemon.h"
#include "lumend/ptp4l.h"
#include "sched/schedule.h"

namespace
{

using namespace lumen;
using namespace lumen::lumend;

class LumendInputs : public ::testing::Test
{
      protected:
	void SetUp() override
	{
		char tmpl[] = "/tmp/lumend-in-XXXXXX";
		ASSERT_NE(mkdtemp(tmpl), nullptr);
		dir_ = tmpl;
	}
	void TearDown() override
	{
		std::system(("rm -rf '" + dir_ + "'").c_str());
	}
	// The refusal of load_schedule_file(path), and that it came at once.
	static std::string refusal(const std::string &path)
	{
		auto t0 = std::chrono::steady_clock::now();
		try {
			load_schedule_file(path);
		} catch (const UsageError &e) {
			EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1)) << path;
			return e.what();
		}
		ADD_FAILURE() << path << " accepted";
		return "";
	}
	std::string dir_;
};

TEST_F(LumendInputs, ScheduleFilesRegularAndBounded)
{
	sched::Timing t;
	t.slot_ns = 50'000;
	t.guard_ns = 4'000;
	t.version = 3;
	const std::string good = dir_ + "/s.json";
	write_file(good, sched::to_text(sched::round_robin(4, 1, false, t)));
	EXPECT_EQ(load_schedule_file(good).version, 3u);

	EXPECT_NE(refusal("/dev/zero").find("no regular file"), std::string::npos);
	EXPECT_NE(refusal(dir_).find("no regular file"), std::string::npos);
	const std::string fifo = dir_ + "/fifo";
	ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
	EXPECT_NE(refusal(fifo).find("no regular file"), std::string::npos); // the open does not wait for a writer
	const std::string huge = dir_ + "/huge.json";
	{
		Fd fd(open(huge.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
		ASSERT_EQ(ftruncate(fd.get(), (off_t)kMaxScheduleFile + 1), 0); // sparse: no disk used
	}
	EXPECT_NE(refusal(huge).find("a schedule file has at most"), std::string::npos);
	EXPECT_NE(refusal(dir_ + "/none.json").find("cannot open"), std::string::npos);
	write_file(dir_ + "/bad.json", "{\"format\":");
	EXPECT_THROW(load_schedule_file(dir_ + "/bad.json"), UsageError);
}

TEST(LumendPtp4lSender, OnlyPtp4lsSocketCounts)
{
	sockaddr_un sa = {};
	sa.sun_family = AF_UNIX;
	std::strcpy(sa.sun_path, "/var/run/ptp4l");
	socklen_t len = (socklen_t)(offsetof(sockaddr_un, sun_path) + std::strlen(sa.sun_path) + 1);
	EXPECT_TRUE(from_ptp4l(sa, len, "/var/run/ptp4l"));
	EXPECT_FALSE(from_ptp4l(sa, len, "/var/run/ptp4l-other"));
	EXPECT_FALSE(from_ptp4l(sa, len - 2, "/var/run/ptp4l")); // "/var/run/ptp4": another path
	EXPECT_FALSE(from_ptp4l(sa, (socklen_t)offsetof(sockaddr_un, sun_path), "/var/run/ptp4l")); // unnamed
	std::strcpy(sa.sun_path, "/tmp/rogue");
	EXPECT_FALSE(from_ptp4l(sa, len, "/var/run/ptp4l"));
}

void put_be(std::vector<uint8_t> &m, size_t at, uint64_t v, int bytes)
{
	for (int i = bytes - 1; i >= 0; i--, v >>= 8)
		m[at + (size_t)i] = (uint8_t)v;
}

// Somebody else on the host sends lumend a perfect TIME_STATUS_NP answer
// (offset 0, a grandmaster present) for the query it is about to make: it
// used to be taken as ptp4l's.
TEST_F(LumendInputs, ForgedPtp4lAnswerIgnored)
{
	const std::string ptp4l = dir_ + "/ptp4l", ours = dir_ + "/lumend-ptp4l", rogue = dir_ + "/rogue";
	auto bound = [](const std::string &path) {
		Fd fd(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
		sockaddr_un sa = {};
		sa.sun_family = AF_UNIX;
		std::strcpy(sa.sun_path, path.c_str());
		EXPECT_EQ(bind(fd.get(), (sockaddr *)&sa, sizeof(sa)), 0) << path;
		return fd;
	};
	Fd silent_ptp4l = bound(ptp4l), forger = bound(rogue);
	Ptp4lClient client(ptp4l, ours);

	std::vector<uint8_t> m = time_status_request(1); // the client's first query is seq 1
	m[34 + 12] = 2; // RESPONSE
	put_be(m, 48 + 2, 52, 2);
	m.resize(m.size() + 50, 0);
	put_be(m, 54 + 38, 1, 4); // gmPresent
	put_be(m, 54 + 42, 0x1234, 8);
	put_be(m, 2, m.size(), 2);
	std::string why;
	ASSERT_TRUE(parse_time_status(m.data(), m.size(), &why)) << why;
	sockaddr_un to = {};
	to.sun_family = AF_UNIX;
	std::strcpy(to.sun_path, ours.c_str());
	ASSERT_EQ(sendto(forger.get(), m.data(), m.size(), 0, (sockaddr *)&to, sizeof(to)), (ssize_t)m.size());

	EXPECT_FALSE(client.query(200, &why));
	EXPECT_NE(why.find("did not answer"), std::string::npos) << why;
	EXPECT_EQ(client.rejected(), 1u);

	// the same bytes from ptp4l's socket are its answer
	ASSERT_EQ(sendto(silent_ptp4l.get(), m.data(), m.size(), 0, (sockaddr *)&to, sizeof(to)), (ssize_t)m.size());
	m[31] = 2; // the next query's sequence number
	ASSERT_EQ(sendto(silent_ptp4l.get(), m.data(), m.size(), 0, (sockaddr *)&to, sizeof(to)), (ssize_t)m.size());
	auto st = client.query(200, &why);
	ASSERT_TRUE(st) << why;
	EXPECT_TRUE(st->gm_present);
}

} // namespace
