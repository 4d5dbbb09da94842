// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/lumend_control_test.cpp - lumend's control protocol
// (userspace/lumend/control.h): requests parsed and refused, the status
// and stats answers built from made-up engine statistics, the options;
// and the socket itself, served by ControlLoop on io_uring: several
// requests on one connection, a bad one among them, an overlong line, one
// lumend per socket, the socket file gone at the end.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <thread>

#include "base/control_auth.h"
#include "base/error.h"
#include "base/fd.h"
#include "base/json_socket.h"
#include "sched/change.h"
#include "base/system.h"
#include "lumend/control.h"
#include "lumend/daemon.h"
#include "lumend/demand.h"

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

// The parser's message quotes the bad input; bytes that are not UTF-8 made
// the answer's dump() throw, which ended lumend's control thread (found by
// tests/fuzz/lumend_request_fuzzer.cpp)
TEST(LumendControl, BytesNotUtf8Answered)
{
	Handlers h = handlers();
	for (const std::string &bad :
	     {std::string("\xff"), std::string("{\"cmd\":\xfe}"), std::string("{\"cmd\xff\":1}")}) {
		std::string a;
		ASSERT_NO_THROW(a = answer_line(bad, h));
		EXPECT_NE(error_of(a).find("not JSON"), std::string::npos) << a;
	}
}

TEST(LumendControl, LocalKeysRefusedOverTcp)
{
	Handlers h = handlers();
	h["stage"] = Handler({"file", "schedule"},
			     [](const json &req) {
				     return json{{"keys", req.size()}};
			     },
			     {"file"});
	bool ok = true;
	// a path names a file on lumend's host: over TCP, refused before the handler runs
	std::string e = error_of(answer_line(R"({"cmd":"stage","file":"/dev/zero"})", h, &ok, true));
	EXPECT_NE(e.find("\"file\" names a file on lumend's host and is refused over TCP"), std::string::npos) << e;
	EXPECT_FALSE(ok);
	// inline, over TCP: fine; a path on the local socket: fine
	EXPECT_EQ(answer_line(R"({"cmd":"stage","schedule":{}})", h, &ok, true), R"({"keys":2})");
	EXPECT_TRUE(ok);
	EXPECT_EQ(answer_line(R"({"cmd":"stage","file":"/etc/s.json"})", h, &ok, false), R"({"keys":2})");
	// a token in the request is just an unknown key now: it never travels
	EXPECT_EQ(error_of(answer_line(R"({"cmd":"status","token":"0123456789abcdef-secret"})", h)),
		  "unknown key 'token' in the request");
}

TEST(LumendControl, Endpoints)
{
	EXPECT_TRUE(is_tcp_endpoint("10.0.0.1:7100"));
	EXPECT_TRUE(is_tcp_endpoint("[fd00::1]:7100"));
	EXPECT_TRUE(is_tcp_endpoint("host-3:7100"));
	EXPECT_FALSE(is_tcp_endpoint("/run/lumen/lumend.sock"));
	EXPECT_FALSE(is_tcp_endpoint("./a:b/sock"));
	EXPECT_FALSE(is_tcp_endpoint("lumend.sock"));
	std::string host;
	unsigned port = 0;
	split_host_port("[fd00::1]:7100", "x", &host, &port);
	EXPECT_EQ(host, "fd00::1");
	EXPECT_EQ(port, 7100u);
	split_host_port("10.0.0.1:1", "x", &host, &port);
	EXPECT_EQ(host, "10.0.0.1");
	EXPECT_EQ(port, 1u);
	for (const char *bad : {"10.0.0.1", ":7100", "10.0.0.1:", "10.0.0.1:0", "10.0.0.1:65536", "10.0.0.1:12a",
				"fd00::1:7100", "[fd00::1:7100", "[]:7100", "10.0.0.1:123456"})
		EXPECT_THROW(split_host_port(bad, "x", &host, &port), UsageError) << bad;
	EXPECT_TRUE(tokens_equal("abc", "abc"));
	EXPECT_FALSE(tokens_equal("abc", "abd"));
	EXPECT_FALSE(tokens_equal("abc", "abcd"));
	EXPECT_FALSE(tokens_equal("abcd", "abc"));
	EXPECT_FALSE(tokens_equal("", "a"));
}

TEST(LumendControl, TokenFiles)
{
	char tmpl[] = "/tmp/lumend-token-XXXXXX";
	ASSERT_NE(mkdtemp(tmpl), nullptr);
	const std::string dir = tmpl, f = dir + "/token";
	auto write = [&](const std::string &text, mode_t mode) {
		unlink(f.c_str());
		Fd fd(open(f.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
		ASSERT_TRUE(fd.valid());
		ASSERT_EQ(::write(fd.get(), text.data(), text.size()), (ssize_t)text.size());
		ASSERT_EQ(fchmod(fd.get(), mode), 0);
	};
	write("0123456789abcdef\n", 0600);
	EXPECT_EQ(read_token_file(f, "--t"), "0123456789abcdef");
	write("0123456789abcdef", 0400);
	EXPECT_EQ(read_token_file(f, "--t"), "0123456789abcdef");
	auto refused = [&](const std::string &why) {
		try {
			read_token_file(f, "--t");
			ADD_FAILURE() << "accepted; expected: " << why;
		} catch (const UsageError &e) {
			EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
		}
	};
	write("0123456789abcdef\n", 0640);
	refused("others than its owner");
	write("0123456789abcdef\n", 0604);
	refused("others than its owner");
	write("short\n", 0600);
	refused("16 to 256");
	write(std::string(257, 'a'), 0600);
	refused("16 to 256");
	write("0123456789 abcdef\n", 0600);
	refused("not printable");
	write("0123456789abcdef\nsecond line\n", 0600);
	refused("not printable");
	unlink(f.c_str());
	refused("cannot open");
	ASSERT_EQ(mkdir(f.c_str(), 0700), 0);
	refused("no regular file");
	std::system(("rm -rf '" + dir + "'").c_str());
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
	EXPECT_FALSE(s["clock"].contains("tai_vs_phc")); // neither measured nor said why not
	// CLOCK_TAI measured against the PHC (clock.h): the hop and its parts
	st.clock.tai_phc_checked = true;
	st.clock.tai_phc_offset_ns = -300;
	st.clock.tai_phc_uncertainty_ns = 20;
	st.clock.phc_bound_ns = 200;
	st.clock.bound_ns = 520;
	json c = status_json(info, st, plan)["clock"];
	EXPECT_EQ(c["error_bound_ns"], 520);
	EXPECT_EQ(c["tai_vs_phc"], json({{"checked", true},
					 {"offset_ns", -300},
					 {"uncertainty_ns", 20},
					 {"phc_bound_ns", 200},
					 {"note", ""}}));
	st.clock = ClockReading();
	st.clock.tai_phc_note = "not checked: no PHC known";
	c = status_json(info, st, plan)["clock"];
	EXPECT_EQ(c["tai_vs_phc"]["checked"], false);
	EXPECT_TRUE(c["tai_vs_phc"]["offset_ns"].is_null());
	EXPECT_EQ(c["tai_vs_phc"]["note"], "not checked: no PHC known");
	st.clock.bound_ns = UINT64_MAX;

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

// The control socket's limits are options (before: compiled-in defaults,
// and any of these words was an unknown option): set, defaults kept,
// and each bad value refused with the option's name (exit 2 in main).
TEST(LumendControl, ControlLimitOptions)
{
	const std::vector<std::string> base = {"--schedule", "s.json", "--node", "0"};
	auto with = [&](std::vector<std::string> more) {
		std::vector<std::string> w = base;
		w.insert(w.end(), more.begin(), more.end());
		return w;
	};
	Options o = parse_options(base);
	EXPECT_EQ(o.control_limits.max_local, 16u);
	EXPECT_EQ(o.control_limits.max_per_peer, 4u);
	o = parse_options(
		with({"--control-max-local", "2", "--control-max-tcp", "40", "--control-max-per-peer", "40",
		      "--control-idle", "5s", "--control-read-timeout", "1.5s", "--control-out-pause", "64k",
		      "--control-max-out", "1m", "--control-auth-failures", "3", "--control-auth-backoff", "120s"}));
	const ControlLimits &l = o.control_limits;
	EXPECT_EQ(l.max_local, 2u);
	EXPECT_EQ(l.max_tcp, 40u);
	EXPECT_EQ(l.max_per_peer, 40u);
	EXPECT_EQ(l.idle_ms, 5000u);
	EXPECT_EQ(l.read_ms, 1500u);
	EXPECT_EQ(l.out_pause, 64u << 10);
	EXPECT_EQ(l.max_out, 1u << 20);
	EXPECT_EQ(l.auth_failures, 3u);
	EXPECT_EQ(l.auth_window_ms, 120'000u);
	// zero, overflow, words, negative, a duration without its unit or under 1 s
	for (const auto &[words, want] : std::vector<std::pair<std::vector<std::string>, std::string>>{
		     {{"--control-max-local", "0"}, "--control-max-local: 0 is outside"},
		     {{"--control-max-tcp", "99999999999999999999999"},
		      "--control-max-tcp: 99999999999999999999999 is"},
		     {{"--control-max-tcp", "1025"}, "--control-max-tcp: 1025 is outside"},
		     {{"--control-max-per-peer", "four"}, "--control-max-per-peer: 'four' is not"},
		     {{"--control-auth-failures", "-1"}, "--control-auth-failures: '-1' is not"},
		     {{"--control-auth-failures", ""}, "--control-auth-failures"},
		     {{"--control-idle", "60"}, "--control-idle: '60' is not a duration"},
		     {{"--control-idle", "0s"}, "--control-idle: 0s is under 1s"},
		     {{"--control-read-timeout", "500ms"}, "--control-read-timeout: 500ms is under 1s"},
		     {{"--control-auth-backoff", "2d"}, "--control-auth-backoff: unknown time unit"},
		     {{"--control-idle", "100000s"}, "--control-idle: 100000s must be"},
		     {{"--control-out-pause", "0"}, "--control-out-pause: 0 is under 4k"},
		     {{"--control-max-out", "5g"}, "--control-max-out: 5g must be"},
		     {{"--control-max-out", "lots"}, "--control-max-out: 'lots' is not a size"},
		     // together: one defeats the other
		     {{"--control-max-per-peer", "17"}, "--control-max-per-peer 17 is above --control-max-tcp 16"},
		     {{"--control-out-pause", "1m", "--control-max-out", "512k"},
		      "--control-out-pause 1048576 is above --control-max-out 524288"},
	     })
		EXPECT_NE(refusal(with(words)).find(want), std::string::npos)
			<< words[0] << " " << words[1] << ": " << refusal(with(words));
	// every one of them is in --help
	for (const ControlLimitOption &c : kControlLimitOptions)
		EXPECT_NE(std::string(kUsage).find(c.name), std::string::npos) << c.name;
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

	// the demand's sources
	o = parse_options({"--schedule", "s", "--node", "0", "--gate", "eth0", "--gate-netns", "h1", "--dp-telemetry",
			   "a,/run/b.sock"});
	EXPECT_EQ(o.demand.gate_dev, "eth0");
	EXPECT_EQ(o.demand.gate_netns, "h1");
	EXPECT_EQ(o.demand.dp_telemetry, (std::vector<std::string>{"a", "/run/b.sock"}));
	EXPECT_NE(refusal({"--schedule", "s", "--node", "1", "--gate-netns", "h1"}).find("goes with --gate"),
		  std::string::npos);
	EXPECT_NE(refusal({"--schedule", "s", "--node", "1", "--gate", ""}).find("--gate"), std::string::npos);
	EXPECT_NE(refusal({"--schedule", "s", "--node", "1", "--dp-telemetry", "a,,b"}).find("an empty prefix"),
		  std::string::npos);
	// control over TCP
	EXPECT_NE(refusal({"--schedule", "s", "--node", "1", "--control-tcp", "10.0.0.1:7311"})
			  .find("--control-tcp needs --control-token"),
		  std::string::npos);
	EXPECT_NE(refusal({"--schedule", "s", "--node", "1", "--control-tcp", "10.0.0.1", "--control-token", "/x"})
			  .find("not HOST:PORT"),
		  std::string::npos);
	{
		// a port alone: loopback
		char tmpl[] = "/tmp/lumend-opt-XXXXXX";
		ASSERT_NE(mkdtemp(tmpl), nullptr);
		const std::string f = std::string(tmpl) + "/token";
		write_file(f, "0123456789abcdef\n");
		ASSERT_EQ(chmod(f.c_str(), 0600), 0);
		o = parse_options({"--schedule", "s", "--node", "1", "--control-tcp", "7311", "--control-token", f});
		EXPECT_EQ(o.control_tcp, "127.0.0.1:7311");
		o = parse_options(
			{"--schedule", "s", "--node", "1", "--control-tcp", "[::1]:7311", "--control-token", f});
		EXPECT_EQ(o.control_tcp, "[::1]:7311");
		std::system(("rm -rf '" + std::string(tmpl) + "'").c_str());
	}
	EXPECT_NE(refusal({"--schedule", "s", "--node", "1", "--control-token", "/x"}).find("goes with --control-tcp"),
		  std::string::npos);
	EXPECT_NE(refusal({"--schedule", "s", "--node", "1", "--control-tcp", "10.0.0.1:7311", "--control-token",
			   "/nonexistent/token"})
			  .find("cannot open"),
		  std::string::npos);
}

TEST(LumendDemand, LumenDpGatesOfThisNode)
{
	auto gate = [](uint64_t node, std::vector<uint64_t> offered) {
		return json{{"node", node}, {"offered_bytes", offered}, {"sent_bytes", offered}};
	};
	std::vector<uint64_t> bytes(4, 0);
	// two hosts of node 1 (two lumen-dp hosts may share a node's uplink),
	// one of node 2: only node 1's add up
	EXPECT_EQ(add_dp_gates({gate(1, {0, 0, 10, 20}), gate(2, {5, 5, 0, 5}), gate(1, {1, 0, 2, 3})}, 1, &bytes, "x"),
		  2u);
	EXPECT_EQ(bytes, (std::vector<uint64_t>{1, 0, 12, 23}));
	// a shorter or longer array than the schedule: what fits
	EXPECT_EQ(add_dp_gates({gate(1, {7}), gate(1, {0, 0, 0, 0, 99})}, 1, &bytes, "x"), 2u);
	EXPECT_EQ(bytes, (std::vector<uint64_t>{8, 0, 12, 23}));
	EXPECT_EQ(add_dp_gates({gate(3, {1, 1, 1, 1})}, 1, &bytes, "x"), 0u);
	EXPECT_EQ(bytes, (std::vector<uint64_t>{8, 0, 12, 23}));
	// shapes that are not a gate's
	EXPECT_THROW(add_dp_gates({json{{"offered_bytes", {1}}}}, 1, &bytes, "x"), Error);
	EXPECT_THROW(add_dp_gates({json{{"node", -1}, {"offered_bytes", {1}}}}, 1, &bytes, "x"), Error);
	EXPECT_THROW(add_dp_gates({json{{"node", 1}}}, 1, &bytes, "x"), Error);
	EXPECT_THROW(add_dp_gates({json{{"node", 1}, {"offered_bytes", 5}}}, 1, &bytes, "x"), Error);
	EXPECT_THROW(add_dp_gates({json::array()}, 1, &bytes, "x"), Error);
	EXPECT_EQ(bytes, (std::vector<uint64_t>{8, 0, 12, 23}));
	// no source at all: a usage error, said so
	try {
		read_demand(DemandSources{}, 0, 4);
		ADD_FAILURE() << "read_demand without sources";
	} catch (const UsageError &e) {
		EXPECT_NE(std::string(e.what()).find("--gate DEV or --dp-telemetry"), std::string::npos);
	}
	// a lumen-dp that is not there
	DemandSources src;
	src.dp_telemetry = {"/nonexistent/dpdk_telemetry.v2"};
	EXPECT_THROW(read_demand(src, 0, 4), Error);
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
		// an overlong line: answered, then closed (the send may see the
		// close before it has written everything)
		Fd c = connect_to();
		std::string junk(kMaxRequest + 10, 'x');
		for (size_t done = 0; done < junk.size();) {
			ssize_t n = send(c.get(), junk.data() + done, junk.size() - done, MSG_NOSIGNAL);
			if (n <= 0)
				break;
			done += (size_t)n;
		}
		std::string got = read_lines(c.get(), 2);
		EXPECT_NE(got.find("at most 1048576 bytes"), std::string::npos) << got;
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

// A TCP port nobody listens on now (bound to port 0 and let go).
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

TEST_F(LumendSocket, TcpWithToken)
{
	const std::string token = "tcp-token-0123456789";
	unsigned port = free_tcp_port();
	ASSERT_NE(port, 0u);
	const std::string at = "127.0.0.1:" + std::to_string(port);
	EXPECT_THROW(ControlLoop("", -1, at, ""), UsageError);
	EXPECT_THROW(ControlLoop("", -1, "localhost:" + std::to_string(port), token), UsageError); // not numeric
	std::unique_ptr<ControlLoop> loop;
	try {
		loop = std::make_unique<ControlLoop>(path_, -1, at, token);
	} catch (const Error &e) {
		if (std::string(e.what()).find("io_uring") != std::string::npos)
			GTEST_SKIP() << e.what();
		throw;
	}
	EXPECT_THROW(ControlLoop("", -1, at, token), Error); // the port is taken
	ControlHooks hooks;
	hooks.handlers = handlers();
	hooks.handlers["size"] = Handler({"blob"}, [](const json &req) {
		return json{{"size", req.at("blob").get<std::string>().size()}};
	});
	std::thread t([&] { loop->run(hooks); });
	// over TCP, through the client's own code: signed with the token, unsigned
	EXPECT_EQ(json_request(at, {{"cmd", "status"}}, "lumend", token), json({{"node", 1}}));
	try {
		json_request(at, {{"cmd", "status"}}, "lumend");
		ADD_FAILURE() << "answered without the token";
	} catch (const Error &e) {
		EXPECT_NE(std::string(e.what()).find("authentication failed"), std::string::npos) << e.what();
	}
	try {
		json_request(at, {{"cmd", "status"}}, "lumend", token + "x");
		ADD_FAILURE() << "answered with another token";
	} catch (const Error &e) {
		EXPECT_NE(std::string(e.what()).find("MAC does not match"), std::string::npos) << e.what();
	}
	// the Unix socket beside it wants none
	EXPECT_EQ(json_request(path_, {{"cmd", "status"}}, "lumend"), json({{"node", 1}}));
	// a request of most of a MiB (a big schedule staged inline) is one line
	std::string blob(900'000, 'b');
	EXPECT_EQ(json_request(at, {{"cmd", "size"}, {"blob", blob}}, "lumend", token), json({{"size", 900'000}}));
	loop->stop();
	t.join();
	EXPECT_EQ(loop->requests(), 5u);
	EXPECT_EQ(loop->bad_requests(), 2u);
	loop.reset();
	// gone with the loop: nothing answers there any more
	EXPECT_THROW(json_request(at, {{"cmd", "status"}}, "lumend", token), Error);
}

// Someone between the client and lumend (here a fake lumend that reads the
// request and writes what it likes): the client refuses an unsigned answer,
// a genuine answer to an earlier request, and one signed with another
// token. Before answers were signed, it took any JSON object it was given.
TEST(LumendClient, RefusesAnswersNotSignedForItsRequest)
{
	const std::string token = "tcp-token-0123456789";
	Fd listener(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
	sockaddr_in sa = {};
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof(sa);
	ASSERT_EQ(bind(listener.get(), (sockaddr *)&sa, sizeof(sa)), 0);
	ASSERT_EQ(getsockname(listener.get(), (sockaddr *)&sa, &len), 0);
	ASSERT_EQ(listen(listener.get(), 4), 0);
	const std::string at = "127.0.0.1:" + std::to_string(ntohs(sa.sin_port));
	// answer(request line) -> the line the fake sends back
	auto serve_once = [&](std::function<std::string(const std::string &)> answer) {
		return std::thread([&listener, answer] {
			Fd c(accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
			std::string in;
			char buf[4096];
			while (in.find('\n') == std::string::npos) {
				ssize_t n = recv(c.get(), buf, sizeof(buf), 0);
				if (n <= 0)
					return;
				in.append(buf, (size_t)n);
			}
			const std::string out = answer(in.substr(0, in.find('\n'))) + "\n";
			if (send(c.get(), out.data(), out.size(), MSG_NOSIGNAL) < 0)
				return;
		});
	};
	auto nonce_of = [](const std::string &request) { return request.substr(request.find(' ', 12) + 1, 32); };
	auto refused = [&](std::function<std::string(const std::string &)> answer, const std::string &want) {
		std::thread t = serve_once(answer);
		try {
			json_request(at, {{"cmd", "commit"}, {"version", 2}}, "lumend", token);
			ADD_FAILURE() << "took an answer it should refuse (" << want << ")";
		} catch (const Error &e) {
			EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
		}
		t.join();
	};
	const std::string forged = R"({"committed":2})";
	refused([&](const std::string &) { return forged; }, "not signed");
	// an unsigned refusal is shown as what it says, and still refused
	refused([&](const std::string &) { return R"({"error":"authentication failed: nope"})"; },
		"not signed (over TCP lumend signs every answer to a signed request");
	refused([&](const std::string &) { return R"({"error":"authentication failed: nope"})"; }, "it says: "
												   "authentication "
												   "failed: nope");
	// a genuine answer, recorded from an earlier request, replayed
	const std::string recorded = sign_control_answer(token, "00112233445566778899aabbccddeeff", forged);
	refused([&](const std::string &) { return recorded; }, "replayed answer");
	refused([&](const std::string &req) { return sign_control_answer(token + "x", nonce_of(req), forged); },
		"MAC does not match");
	// what lumend sends: signed for this request
	std::thread t =
		serve_once([&](const std::string &req) { return sign_control_answer(token, nonce_of(req), forged); });
	EXPECT_EQ(json_request(at, {{"cmd", "commit"}, {"version", 2}}, "lumend", token), json({{"committed", 2}}));
	t.join();
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
