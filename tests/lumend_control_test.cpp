// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/lumend_control_test.cpp - lumend's control protocol
// (userspace/lumend/control.h): requests parsed and refused, the status
// and stats answers built from made-up engine statistics, the options;
// and the socket itself, served by ControlLoop on io_uring: several
// requests on one connection, a bad one among them, an overlong line, one
// lumend per socket, the socket file gone at the end.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <thread>

#include "base/error.h"
#include "base/fd.h"
#include "sched/change.h"
#include "base/system.h"
#include "lumend/control.h"
#include "lumend/daemon.h"

namespace
{

using namespace lumen;
using namespace lumen::lumend;
using json = nlohmann::json;

Handlers handlers()
{
	Handlers h;
	h["status"] = [] { return json{{"node", 1}}; };
	h["stats"] = [] { return json{{"published", 7}}; };
	h["fails"] = []() -> json { throw Error("no luck"); };
	return h;
}

// The "error" of an answer ("" when it has none).
std::string error_of(const std::string &answer)
{
	json j = json::parse(answer);
	return j.contains("error") ? j["error"].get<std::string>() : "";
}

TEST(LumendControl, Requests)
{
	Handlers h = handlers();
	bool ok = false;
	EXPECT_EQ(answer_line(R"({"cmd":"status"})", h, &ok), R"({"node":1})");
	EXPECT_TRUE(ok);
	EXPECT_EQ(answer_line(R"(  {"cmd" : "stats"}  )", h), R"({"published":7})");

	EXPECT_NE(error_of(answer_line("status", h, &ok)).find("not JSON"), std::string::npos);
	EXPECT_FALSE(ok);
	EXPECT_NE(error_of(answer_line(R"({"cmd":"status")", h)).find("not JSON"), std::string::npos);
	EXPECT_NE(error_of(answer_line("[1,2]", h)).find("a request is a JSON object"), std::string::npos);
	EXPECT_NE(error_of(answer_line(R"({"command":"status"})", h)).find("\"cmd\""), std::string::npos);
	EXPECT_NE(error_of(answer_line(R"({"cmd":3})", h)).find("\"cmd\""), std::string::npos);
	EXPECT_EQ(error_of(answer_line(R"({"cmd":"status","verbose":true})", h)),
		  "unknown key 'verbose' in the request");
	EXPECT_EQ(error_of(answer_line(R"({"cmd":"reboot"})", h, &ok)),
		  "unknown command 'reboot' (fails, stats, status)");
	EXPECT_FALSE(ok);
	// a handler's failure is an answer too
	EXPECT_EQ(error_of(answer_line(R"({"cmd":"fails"})", h, &ok)), "fails: no luck");
	EXPECT_TRUE(ok);
}

TEST(LumendControl, StatusAndStats)
{
	Plan plan;
	sched::Timing t;
	t.slot_ns = 50'000;
	t.guard_ns = 4'000;
	t.version = 9;
	plan.schedule = sched::round_robin(6, 1, false, t);
	plan.tables = build_tables(plan.schedule, 2);
	plan.margin_ns = 1000;
	plan.path = "/etc/lumen/s.json";
	EngineStats st;
	st.started_ns = 1'000'000'000;
	st.published = 100;
	st.late = 3;
	st.missed = 1;
	st.slot = 4242;
	st.version = 9;
	st.margin_ns = 1000;
	st.quiet = LUMEN_QUIET_CLOCK;
	st.why = "the clock jumped";
	st.clock.bound_ns = UINT64_MAX;
	for (uint64_t v = 1; v <= 100; v++)
		st.errors.add(v);
	Info info;
	info.pid = 77;
	info.clock = "CLOCK_TAI";
	info.shm = "/dev/shm/x";
	info.reloads = 2;
	info.reloads_refused = 1;
	info.now_ns = 3'500'000'000;

	json s = status_json(info, st, plan);
	EXPECT_EQ(s["pid"], 77);
	EXPECT_EQ(s["node"], 2);
	EXPECT_EQ(s["nodes"], 6);
	EXPECT_EQ(s["version"], 9);
	EXPECT_EQ(s["schedule_file"], "/etc/lumen/s.json");
	EXPECT_EQ(s["timing"]["slot_ns"], 50'000);
	EXPECT_EQ(s["timing"]["period"], 5);
	EXPECT_EQ(s["timing"]["guard_at"], "end");
	EXPECT_EQ(s["quiet"], LUMEN_QUIET_CLOCK);
	EXPECT_EQ(s["quiet_reasons"], json::array({"clock"}));
	EXPECT_EQ(s["gating"], false);
	EXPECT_EQ(s["why"], "the clock jumped");
	EXPECT_TRUE(s["clock"]["error_bound_ns"].is_null());
	EXPECT_EQ(s["slot"], 4242);
	EXPECT_EQ(s["boundary_error_ns"]["p50"], 50);
	EXPECT_EQ(s["boundary_error_ns"]["max"], 100);
	EXPECT_DOUBLE_EQ(s["uptime_s"].get<double>(), 2.5);

	json x = stats_json(info, st);
	EXPECT_EQ(x["published"], 100);
	EXPECT_EQ(x["late"], 3);
	EXPECT_EQ(x["missed"], 1);
	EXPECT_EQ(x["reloads"], 2);
	EXPECT_EQ(x["reloads_refused"], 1);
	EXPECT_EQ(x["boundary_error_ns"]["count"], 100);
	EXPECT_EQ(x["boundary_error_ns"]["p99"], 99);

	EXPECT_EQ(sched::quiet_names(0), std::vector<std::string>{});
	EXPECT_EQ(sched::quiet_names(LUMEN_QUIET_CLOCK | LUMEN_QUIET_STOPPED),
		  (std::vector<std::string>{"clock", "stopped"}));
	EXPECT_EQ(sched::quiet_names(LUMEN_QUIET_VERSION | 0x40), (std::vector<std::string>{"version", "0x40"}));
}

// The UsageError of parse_options(words) ("" when none).
std::string refusal(const std::vector<std::string> &words)
{
	try {
		parse_options(words);
	} catch (const UsageError &e) {
		return e.what();
	}
	return "";
}

TEST(LumendControl, Options)
{
	Options o = parse_options({"--schedule", "s.json", "--node", "3"});
	EXPECT_EQ(o.schedule, "s.json");
	EXPECT_EQ(o.node, 3u);
	EXPECT_EQ(o.shm, LUMEN_OSCHED_SHM);
	EXPECT_EQ(o.control, "/run/lumen/lumend.sock");
	EXPECT_TRUE(o.engine.spin_auto);
	EXPECT_EQ(o.margin_ns, -1);
	o = parse_options({"--schedule=s.json", "--node=0", "--margin", "2.5us", "--spin", "30000", "--measure", "0.5",
			   "--json", "--clock-error", "0"});
	EXPECT_EQ(o.margin_ns, 2500);
	EXPECT_EQ(o.engine.spin_ns, 30'000u);
	EXPECT_FALSE(o.engine.spin_auto);
	EXPECT_EQ(o.measure_ns, 500'000'000u);
	EXPECT_EQ(o.clock_error_ns, 0);
	EXPECT_TRUE(o.json);
	o = parse_options({"--schedule", "s", "--node", "0", "--fifo", "50", "--cpu", "1", "--stride", "3"});
	EXPECT_EQ(o.engine.fifo, 50);
	EXPECT_EQ(o.engine.cpu, 1);
	EXPECT_EQ(o.engine.stride, 3u);
	o = parse_options({"--schedule", "s", "--node", "0", "--phc", "/dev/ptp0", "--phc-error", "100ns"});
	EXPECT_EQ(o.phc, "/dev/ptp0");
	EXPECT_EQ(o.phc_error_ns, 100);

	EXPECT_NE(refusal({"--node", "1"}).find("--schedule"), std::string::npos);
	EXPECT_NE(refusal({"--schedule", "s"}).find("--node"), std::string::npos);
	EXPECT_NE(refusal({"--schedule", "s", "--node", "x"}).find("--node"), std::string::npos);
	EXPECT_NE(refusal({"--schedule", "s", "--node", "1", "--phc", "/dev/ptp0"}).find("--phc-error"),
		  std::string::npos);
	EXPECT_NE(refusal({"--schedule", "s", "--node", "1", "--phc-error", "5"}).find("--phc DEV"), std::string::npos);
	EXPECT_NE(refusal({"--schedule", "s", "--node", "1", "--json"}).find("--measure"), std::string::npos);
	EXPECT_NE(refusal({"--schedule", "s", "--node", "1", "--measure", "0"}).find("--measure"), std::string::npos);
	EXPECT_NE(refusal({"--schedule", "s", "--node", "1", "--spin", "fast"}).find("--spin"), std::string::npos);
	EXPECT_NE(refusal({"--schedule", "s", "--node", "1", "--fifo", "0"}).find("--fifo"), std::string::npos);
	EXPECT_NE(refusal({"--schedule", "s", "--node", "1", "--frobnicate", "1"}).find("unknown option --frobnicate"),
		  std::string::npos);
	EXPECT_NE(refusal({"--schedule", "s", "--node", "1", "extra"}).find("unexpected argument"), std::string::npos);
}

// ---------------------------------------------------------------------------
// The socket

class LumendSocket : public ::testing::Test
{
      protected:
	void SetUp() override
	{
		char tmpl[] = "/tmp/lumend-ctl-XXXXXX";
		ASSERT_NE(mkdtemp(tmpl), nullptr);
		dir_ = tmpl;
		path_ = dir_ + "/run/lumend.sock"; // the directory is made
	}
	void TearDown() override
	{
		std::system(("rm -rf '" + dir_ + "'").c_str());
	}
	Fd connect_to() const
	{
		Fd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
		sockaddr_un sa = {};
		sa.sun_family = AF_UNIX;
		std::strcpy(sa.sun_path, path_.c_str());
		EXPECT_EQ(connect(fd.get(), (sockaddr *)&sa, sizeof(sa)), 0) << path_;
		timeval tv = {5, 0};
		setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		return fd;
	}
	// Reads until `lines` newlines or end of file.
	static std::string read_lines(int fd, int lines)
	{
		std::string out;
		char buf[512];
		while (std::count(out.begin(), out.end(), '\n') < lines) {
			ssize_t n = recv(fd, buf, sizeof(buf), 0);
			if (n <= 0)
				break;
			out.append(buf, (size_t)n);
		}
		return out;
	}
	std::string dir_, path_;
};

TEST_F(LumendSocket, ServesRequestsOnIoUring)
{
	std::unique_ptr<ControlLoop> loop;
	try {
		loop = std::make_unique<ControlLoop>(path_, -1);
	} catch (const Error &e) {
		if (std::string(e.what()).find("io_uring") != std::string::npos)
			GTEST_SKIP() << e.what();
		throw;
	}
	// a second one on the same path is refused while the first listens
	EXPECT_THROW(ControlLoop(path_, -1), Error);

	ControlHooks hooks;
	hooks.handlers = handlers();
	std::thread t([&] { loop->run(hooks); });
	{
		Fd c = connect_to();
		std::string req = "{\"cmd\":\"status\"}\n{\"cmd\":\"nope\"}\r\n\n{\"cmd\":\"stats\"}\n";
		ASSERT_EQ(send(c.get(), req.data(), req.size(), 0), (ssize_t)req.size());
		std::string got = read_lines(c.get(), 3);
		EXPECT_EQ(got, "{\"node\":1}\n{\"error\":\"unknown command 'nope' (fails, stats, status)\"}\n"
			       "{\"published\":7}\n");
		// a request in pieces
		ASSERT_EQ(send(c.get(), "{\"cmd\":", 7, 0), 7);
		usleep(20'000);
		ASSERT_EQ(send(c.get(), "\"stats\"}\n", 9, 0), 9);
		EXPECT_EQ(read_lines(c.get(), 1), "{\"published\":7}\n");
	}
	{
		// an overlong line: answered, then closed
		Fd c = connect_to();
		std::string junk(kMaxRequest + 10, 'x');
		ASSERT_EQ(send(c.get(), junk.data(), junk.size(), 0), (ssize_t)junk.size());
		std::string got = read_lines(c.get(), 2);
		EXPECT_NE(got.find("at most 4096 bytes"), std::string::npos) << got;
		EXPECT_EQ(std::count(got.begin(), got.end(), '\n'), 1);
	}
	loop->stop();
	t.join();
	EXPECT_EQ(loop->requests(), 5u);
	EXPECT_EQ(loop->bad_requests(), 2u);
	EXPECT_TRUE(path_exists(path_));
	loop.reset();
	EXPECT_FALSE(path_exists(path_)); // removed at the end
}

TEST_F(LumendSocket, StaleSocketReplacedOtherFilesNot)
{
	{
		// a socket file nobody listens on (a crashed lumend's)
		make_dirs(dir_ + "/run");
		Fd s(socket(AF_UNIX, SOCK_STREAM, 0));
		sockaddr_un sa = {};
		sa.sun_family = AF_UNIX;
		std::strcpy(sa.sun_path, path_.c_str());
		ASSERT_EQ(bind(s.get(), (sockaddr *)&sa, sizeof(sa)), 0);
	}
	try {
		ControlLoop loop(path_, -1);
		Fd c = connect_to();
		EXPECT_TRUE(c.valid());
	} catch (const Error &e) {
		if (std::string(e.what()).find("io_uring") != std::string::npos)
			GTEST_SKIP() << e.what();
		throw;
	}
	write_file(path_, "not a socket");
	EXPECT_THROW(ControlLoop(path_, -1), Error);
	EXPECT_EQ(read_file(path_), "not a socket");
	EXPECT_THROW(ControlLoop(dir_ + "/" + std::string(120, 'x'), -1), UsageError);
}

} // namespace
