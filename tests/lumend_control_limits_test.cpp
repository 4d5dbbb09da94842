// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/lumend_control_limits_test.cpp - what keeps lumend's control socket
// (userspace/lumend/control.h) serving its owner whatever the network does:
// separate budgets for the Unix socket and TCP, a limit per address, idle
// and read timeouts, pending answers capped, a request's header refused on
// its first bytes, replays refused, failed authentications backed off, a
// wildcard address warned about.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/control_auth.h"
#include "base/error.h"
#include "base/fd.h"
#include "base/json_socket.h"
#include "lumend/control.h"

namespace
{

using namespace lumen;
using namespace lumen::lumend;
using json = nlohmann::json;

const std::string kToken = "limits-token-0123456789";

uint64_t now_ms()
{
	timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1'000'000;
}

unsigned free_tcp_port()
{
	Fd s(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
	sockaddr_in sa = {};
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof(sa);
	if (bind(s.get(), (sockaddr *)&sa, sizeof(sa)) != 0 || getsockname(s.get(), (sockaddr *)&sa, &len) != 0)
		return 0;
	return ntohs(sa.sin_port);
}

class ControlLimitsTest : public ::testing::Test
{
      protected:
	void SetUp() override
	{
		char tmpl[] = "/tmp/lumend-lim-XXXXXX";
		ASSERT_NE(mkdtemp(tmpl), nullptr);
		dir_ = tmpl;
		path_ = dir_ + "/lumend.sock";
		port_ = free_tcp_port();
		ASSERT_NE(port_, 0u);
		at_ = "127.0.0.1:" + std::to_string(port_);
	}
	void TearDown() override
	{
		if (loop_) {
			loop_->stop();
			thread_.join();
			loop_.reset();
		}
		std::system(("rm -rf '" + dir_ + "'").c_str());
	}
	// Starts the loop with these limits; false: no io_uring here (skip).
	bool start(const ControlLimits &limits, Handlers extra = {})
	{
		try {
			loop_ = std::make_unique<ControlLoop>(path_, -1, at_, kToken, limits);
		} catch (const Error &e) {
			if (std::string(e.what()).find("io_uring") != std::string::npos)
				return false;
			throw;
		}
		hooks_.handlers["status"] = [] { return json{{"node", 1}}; };
		for (auto &[k, v] : extra)
			hooks_.handlers[k] = v;
		thread_ = std::thread([this] { loop_->run(hooks_); });
		return true;
	}
	Fd tcp() const
	{
		Fd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
		sockaddr_in sa = {};
		sa.sin_family = AF_INET;
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		sa.sin_port = htons((uint16_t)port_);
		EXPECT_EQ(connect(fd.get(), (sockaddr *)&sa, sizeof(sa)), 0);
		return fd;
	}
	// What a connection says before its end, waiting up to ms.
	static std::string until_closed(int fd, int ms)
	{
		std::string out;
		char buf[4096];
		auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
		for (;;) {
			int left = (int)std::chrono::duration_cast<std::chrono::milliseconds>(
					   end - std::chrono::steady_clock::now())
					   .count();
			pollfd p = {fd, POLLIN, 0};
			if (left <= 0 || poll(&p, 1, left) <= 0)
				return out + "<open>";
			ssize_t n = recv(fd, buf, sizeof(buf), 0);
			if (n <= 0)
				return out;
			out.append(buf, (size_t)n);
		}
	}
	static void send_all(int fd, const std::string &s)
	{
		for (size_t done = 0; done < s.size();) {
			ssize_t n = send(fd, s.data() + done, s.size() - done, MSG_NOSIGNAL);
			ASSERT_GT(n, 0);
			done += (size_t)n;
		}
	}
	std::string dir_, path_, at_;
	unsigned port_ = 0;
	std::unique_ptr<ControlLoop> loop_;
	ControlHooks hooks_;
	std::thread thread_;
};

// The issue's case: the network's idle connections used to take the budget
// the local owner shares with them.
TEST_F(ControlLimitsTest, IdleTcpConnectionsDoNotLockTheOwnerOut)
{
	ControlLimits l;
	l.max_per_peer = 64; // all from 127.0.0.1 here: the budgets alone must do it
	if (!start(l))
		GTEST_SKIP() << "no io_uring";
	std::vector<Fd> idle;
	for (int i = 0; i < 40; i++)
		idle.push_back(tcp());
	usleep(100'000);
	EXPECT_EQ(json_request(path_, {{"cmd", "status"}}, "lumend"), json({{"node", 1}}));
	// TCP's own budget is full: the next is told so
	Fd more = tcp();
	EXPECT_NE(until_closed(more.get(), 2000).find("TCP control connections open, its most"), std::string::npos);
	EXPECT_GE(loop_->refused(), 40u - l.max_tcp);
}

TEST_F(ControlLimitsTest, PerAddressLimit)
{
	ControlLimits l;
	l.max_per_peer = 3;
	if (!start(l))
		GTEST_SKIP() << "no io_uring";
	std::vector<Fd> held;
	for (int i = 0; i < 3; i++)
		held.push_back(tcp());
	Fd fourth = tcp();
	EXPECT_NE(until_closed(fourth.get(), 2000).find("the most one address may have"), std::string::npos);
	held.pop_back();
	usleep(100'000);
	// a slot freed is a slot again
	EXPECT_EQ(json_request(at_, {{"cmd", "status"}}, "lumend", kToken), json({{"node", 1}}));
}

TEST_F(ControlLimitsTest, IdleAndReadTimeouts)
{
	ControlLimits l;
	l.idle_ms = 300;
	l.read_ms = 300;
	l.sweep_ms = 50;
	if (!start(l))
		GTEST_SKIP() << "no io_uring";
	// says nothing: closed
	Fd silent = tcp();
	auto t0 = std::chrono::steady_clock::now();
	EXPECT_EQ(until_closed(silent.get(), 3000), "");
	EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(2000));
	// dribbles a line without ever ending it (moving all the time, so the
	// idle timeout alone would not close it): closed by the read timeout
	Fd slow = tcp();
	std::string line = sign_control_request(kToken, R"({"cmd":"status"})", now_ms());
	bool closed = false;
	for (size_t i = 0; i < line.size() && !closed; i++) {
		closed = send(slow.get(), &line[i], 1, MSG_NOSIGNAL) != 1;
		usleep(40'000);
		pollfd p = {slow.get(), POLLIN, 0};
		closed = closed || poll(&p, 1, 0) > 0;
	}
	EXPECT_TRUE(closed);
	EXPECT_GE(loop_->timed_out(), 2u);
	// the same on the Unix socket
	Fd local(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
	sockaddr_un sa = {};
	sa.sun_family = AF_UNIX;
	std::strcpy(sa.sun_path, path_.c_str());
	ASSERT_EQ(connect(local.get(), (sockaddr *)&sa, sizeof(sa)), 0);
	EXPECT_EQ(until_closed(local.get(), 3000), "");
}

TEST_F(ControlLimitsTest, UnreadAnswersStopTheReading)
{
	ControlLimits l;
	l.out_pause = 16 << 10;
	l.max_out = 1 << 20;
	l.idle_ms = 500;
	l.sweep_ms = 50;
	Handlers h;
	h["big"] = [] { return json{{"blob", std::string(64 << 10, 'b')}}; };
	h["huge"] = [] { return json{{"blob", std::string(2 << 20, 'h')}}; };
	if (!start(l, h))
		GTEST_SKIP() << "no io_uring";
	// 2000 requests in a row, no answer read: 128 MB of answers if lumend
	// answered them all
	Fd c(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
	sockaddr_un sa = {};
	sa.sun_family = AF_UNIX;
	std::strcpy(sa.sun_path, path_.c_str());
	ASSERT_EQ(connect(c.get(), (sockaddr *)&sa, sizeof(sa)), 0);
	std::string many;
	for (int i = 0; i < 2000; i++)
		many += "{\"cmd\":\"big\"}\n";
	timeval tv = {0, 300'000};
	setsockopt(c.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	ssize_t sent = send(c.get(), many.data(), many.size(), MSG_NOSIGNAL);
	EXPECT_GT(sent, 0);
	usleep(300'000);
	EXPECT_LT(loop_->requests(), 200u) << "answers kept piling up";
	// not reading at all: the idle timeout ends it
	usleep(1'000'000);
	EXPECT_GE(loop_->timed_out(), 1u);
	// one answer past max_out: closed, nothing sent
	Fd d(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
	ASSERT_EQ(connect(d.get(), (sockaddr *)&sa, sizeof(sa)), 0);
	send_all(d.get(), "{\"cmd\":\"huge\"}\n");
	EXPECT_EQ(until_closed(d.get(), 3000), "");
}

TEST_F(ControlLimitsTest, HeaderRefusedOnItsFirstBytes)
{
	if (!start({}))
		GTEST_SKIP() << "no io_uring";
	// the old protocol, a token in clear, and no newline: refused before the
	// line ends (it used to be buffered up to 1 MiB and parsed)
	Fd c = tcp();
	send_all(c.get(),
		 R"({"cmd":"stage","token":"limits-token-0123456789","schedule":{"x":")" + std::string(100'000, 'x'));
	std::string got = until_closed(c.get(), 2000);
	EXPECT_NE(got.find("authentication failed: over TCP a request line is \\\"LUMEN-HMAC1"), std::string::npos)
		<< got;
	EXPECT_EQ(loop_->auth_failed(), 1u);
}

TEST_F(ControlLimitsTest, ReplayAndStaleRefused)
{
	if (!start({}))
		GTEST_SKIP() << "no io_uring";
	const std::string nonce = new_control_nonce();
	const std::string line = sign_control_request(kToken, R"({"cmd":"status"})", now_ms(), nonce) + "\n";
	Fd c = tcp();
	send_all(c.get(), line);
	Fd r = tcp();
	send_all(r.get(), line);
	usleep(100'000);
	// the answer is signed for this request (control_auth.h); the replay's refusal is not
	EXPECT_EQ(until_closed(c.get(), 300), sign_control_answer(kToken, nonce, "{\"node\":1}") + "\n<open>");
	EXPECT_NE(until_closed(r.get(), 2000).find("a replay"), std::string::npos);
	Fd s = tcp();
	send_all(s.get(), sign_control_request(kToken, R"({"cmd":"status"})", now_ms() - 60'000) + "\n");
	EXPECT_NE(until_closed(s.get(), 2000).find("more than 30 s"), std::string::npos);
}

TEST_F(ControlLimitsTest, FailedAuthenticationsBackedOff)
{
	ControlLimits l;
	l.auth_failures = 3;
	if (!start(l))
		GTEST_SKIP() << "no io_uring";
	for (int i = 0; i < 3; i++)
		EXPECT_THROW(json_request(at_, {{"cmd", "status"}}, "lumend", kToken + "-guess" + std::to_string(i)),
			     Error);
	// now this address is refused at once, whatever it would send, for a while
	Fd c = tcp();
	EXPECT_NE(until_closed(c.get(), 2000).find("too many failed authentications from 127.0.0.1"),
		  std::string::npos);
	EXPECT_THROW(json_request(at_, {{"cmd", "status"}}, "lumend", kToken), Error);
	EXPECT_EQ(loop_->auth_failed(), 3u);
	// the owner on the Unix socket is not concerned
	EXPECT_EQ(json_request(path_, {{"cmd", "status"}}, "lumend"), json({{"node", 1}}));
}

TEST_F(ControlLimitsTest, WildcardAddressWarned)
{
	at_ = "0.0.0.0:" + std::to_string(port_);
	testing::internal::CaptureStderr();
	try {
		ControlLoop loop("", -1, at_, kToken);
	} catch (const Error &e) {
		testing::internal::GetCapturedStderr();
		if (std::string(e.what()).find("io_uring") != std::string::npos)
			GTEST_SKIP() << e.what();
		throw;
	}
	EXPECT_NE(testing::internal::GetCapturedStderr().find("warning: --control-tcp 0.0.0.0:"), std::string::npos);
	testing::internal::CaptureStderr();
	{
		ControlLoop loop("", -1, "127.0.0.1:" + std::to_string(port_), kToken);
	}
	EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

} // namespace
