// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// `lumen traffic` without a network: command-line validation
// (traffic_options.h), the wire header and completion (traffic_wire.h),
// and the CSV rows and summary (traffic_records.h).
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "base/error.h"
#include "traffic/traffic_options.h"
#include "traffic/traffic_records.h"
#include "traffic/traffic_wire.h"

using namespace lumen;

namespace
{

using Words = std::vector<std::string>;

std::string client_error(const Words &args)
{
	try {
		parse_traffic_client_options(args);
	} catch (const UsageError &e) {
		return e.what();
	}
	return "";
}

std::string server_error(const Words &args)
{
	try {
		parse_traffic_server_options(args);
	} catch (const UsageError &e) {
		return e.what();
	}
	return "";
}

Words with(Words base, const Words &extra)
{
	base.insert(base.end(), extra.begin(), extra.end());
	return base;
}

std::size_t columns(const std::string &row)
{
	return static_cast<std::size_t>(std::count(row.begin(), row.end(), ',')) + 1;
}

TEST(TrafficCli, ParsesEveryWorkload)
{
	auto l = parse_traffic_client_options(
		{"--to", "10.0.0.2,fd00::2", "--long", "3", "--duration", "2.5s", "--cc", "cubic", "--port", "6000"});
	EXPECT_EQ(l.workload, TrafficWorkload::Long);
	EXPECT_EQ(l.long_flows, 3u);
	EXPECT_EQ(l.duration_ns, 2'500'000'000u);
	ASSERT_EQ(l.to.size(), 2u);
	EXPECT_EQ(l.to[0].addr.ss_family, AF_INET);
	EXPECT_EQ(ntohs(reinterpret_cast<const sockaddr_in *>(&l.to[0].addr)->sin_port), 6000);
	EXPECT_EQ(l.to[1].addr.ss_family, AF_INET6);
	EXPECT_EQ(l.to[1].text, "fd00::2");
	EXPECT_EQ(l.cc, "cubic");
	EXPECT_EQ(l.sample_ns, 10'000'000u); // defaults of the contract
	EXPECT_EQ(l.link_rate_bps, 1'000'000'000u);
	EXPECT_EQ(l.base_rtt_ns, 100'000u);
	EXPECT_FALSE(l.start_at_ns);

	auto p = parse_traffic_client_options({"--to", "10.0.0.2", "--poisson", "websearch", "--load", "0.3",
					       "--duration", "3s", "--max-flows", "50", "--link-rate", "10gbit",
					       "--base-rtt", "20us", "--seed", "7", "--label", "ph1.h2", "--json"});
	EXPECT_EQ(p.workload, TrafficWorkload::Poisson);
	EXPECT_EQ(p.poisson_workload, "websearch");
	EXPECT_DOUBLE_EQ(p.load, 0.3);
	EXPECT_EQ(p.max_flows, 50u);
	EXPECT_EQ(p.link_rate_bps, 10'000'000'000u);
	EXPECT_EQ(p.base_rtt_ns, 20'000u);
	EXPECT_EQ(p.seed, 7u);
	EXPECT_EQ(p.label, "ph1.h2");
	EXPECT_TRUE(p.json);

	auto i = parse_traffic_client_options({"--to", "10.0.0.2", "--incast", "64k", "--bursts", "5", "--period",
					       "100ms", "--start-at", "123456789", "--sample", "1ms", "--quiet"});
	EXPECT_EQ(i.workload, TrafficWorkload::Incast);
	EXPECT_EQ(i.incast_size, 65536u);
	EXPECT_EQ(i.bursts, 5u);
	EXPECT_EQ(i.period_ns, 100'000'000u);
	EXPECT_EQ(i.start_at_ns, 123456789u);
	EXPECT_EQ(i.sample_ns, 1'000'000u);
	EXPECT_TRUE(i.quiet);
}

TEST(TrafficCli, RefusesBadClientArguments)
{
	const Words to = {"--to", "10.0.0.2"};
	const Words lng = {"--to", "10.0.0.2", "--long", "1", "--duration", "1s"};
	struct Case {
		Words args;
		std::string want;
	};
	std::vector<Case> cases = {
		{{"--long", "1", "--duration", "1s"}, "needs --to"},
		{{"--to", "10.0.0.256", "--long", "1", "--duration", "1s"}, "--to: '10.0.0.256' is not a numeric"},
		{{"--to", "10.0.0.2,", "--long", "1", "--duration", "1s"}, "--to: '' is not a numeric"},
		{{"--to", "host.example", "--long", "1", "--duration", "1s"}, "is not a numeric IPv4 or IPv6"},
		{to, "exactly one workload"},
		{with(lng, {"--incast", "1k"}), "exactly one workload"},
		{with(to, {"--long", "1"}), "--long needs --duration"},
		{with(to, {"--long", "0", "--duration", "1s"}), "--long: 0 is outside [1, 10000]"},
		{with(to, {"--long", "2", "--duration", "0.5ms"}), "--duration: must be at least 1ms"},
		{with(to, {"--long", "2", "--duration", "10"}), "--duration: '10' is not a duration"},
		{with(lng, {"--load", "0.5"}), "--load does not apply to --long"},
		{with(lng, {"--period", "1s"}), "--period does not apply to --long"},
		{with(to, {"--poisson", "websearch", "--duration", "1s"}), "--poisson needs --load"},
		{with(to, {"--poisson", "websearch", "--load", "0.5"}), "--poisson needs --duration"},
		{with(to, {"--poisson", "websearch", "--load", "0", "--duration", "1s"}),
		 "--load: 0 is outside (0, 1]"},
		{with(to, {"--poisson", "websearch", "--load", "1.5", "--duration", "1s"}), "outside (0, 1]"},
		{with(to, {"--poisson", "websearch", "--load", "half", "--duration", "1s"}), "--load: 'half' is not"},
		{with(to, {"--poisson", "", "--load", "0.5", "--duration", "1s"}), "--poisson needs a workload"},
		{with(to, {"--poisson", "websearch", "--load", "0.5", "--duration", "1s", "--max-flows", "0"}),
		 "--max-flows: 0 is outside"},
		{with(to, {"--incast", "0", "--bursts", "1", "--period", "1s"}), "at least 1 byte"},
		{with(to, {"--incast", "1k", "--bursts", "0", "--period", "1s"}), "--bursts: 0 is outside"},
		{with(to, {"--incast", "1k", "--bursts", "1"}), "--incast needs --period"},
		{with(to, {"--incast", "1k", "--period", "1s"}), "--incast needs --bursts"},
		{with(to, {"--incast", "1k", "--bursts", "1", "--period", "1s", "--duration", "1s"}),
		 "--duration does not apply to --incast"},
		{with(lng, {"--cc", "cu bic"}), "--cc: 'cu bic' may only contain"},
		{with(lng, {"--cc", "a_very_long_algorithm_name"}), "--cc: 'a_very_long_algorithm_name' must be 1..15"},
		{with(lng, {"--label", "a,b"}), "--label: 'a,b' may only contain"},
		{with(lng, {"--port", "0"}), "--port: 0 is outside [1, 65535]"},
		{with(lng, {"--port", "65536"}), "--port: 65536 is outside"},
		{with(lng, {"--sample", "10us"}), "--sample: must be at least 100us"},
		{with(lng, {"--link-rate", "fast"}), "--link-rate: 'fast' is not a rate"},
		{with(lng, {"--base-rtt", "11s"}), "--base-rtt"},
		{with(lng, {"--start-at", "0"}), "--start-at (CLOCK_MONOTONIC ns): 0 is outside"},
		{with(lng, {"--start-at", "-5"}), "is not a non-negative integer"},
		{with(lng, {"--seed", "x"}), "--seed: 'x' is not"},
		{with(lng, {"--drain-timeout", "0s"}), "--drain-timeout: must be above 0"},
		{with(lng, {"--flows-csv", ""}), "--flows-csv needs a file name"},
		{with(lng, {"--bogus", "1"}), "unknown option --bogus"},
		{with(lng, {"extra"}), "unexpected argument 'extra'"},
	};
	for (const auto &c : cases) {
		std::string got = client_error(c.args);
		EXPECT_NE(got.find(c.want), std::string::npos) << "want '" << c.want << "', got '" << got << "'";
	}
}

// The experiment runner's start barrier: a line on standard input.
TEST(TrafficCli, StartFromInput)
{
	auto o = parse_traffic_client_options(
		{"--to", "10.0.0.2", "--long", "1", "--duration", "1s", "--start-from-input"});
	EXPECT_TRUE(o.start_from_input);
	EXPECT_FALSE(o.start_at_ns);
	EXPECT_NE(client_error({"--to", "10.0.0.2", "--long", "1", "--duration", "1s", "--start-from-input",
				"--start-at", "5"})
			  .find("exclude each other"),
		  std::string::npos);

	EXPECT_EQ(parse_start_line("start-at 123456789", "stdin"), 123456789u);
	auto refused = [](const std::string &line) {
		try {
			parse_start_line(line, "stdin");
		} catch (const UsageError &e) {
			return std::string(e.what());
		}
		return std::string("(accepted)");
	};
	EXPECT_NE(refused("go").find("stdin: expected 'start-at MONO_NS', got 'go'"), std::string::npos);
	EXPECT_NE(refused("start-at").find("expected"), std::string::npos);
	EXPECT_NE(refused("start-at 0").find("outside"), std::string::npos);
	EXPECT_NE(refused("start-at -1").find("not a non-negative integer"), std::string::npos);
	EXPECT_NE(refused("start-at 12x").find("not a non-negative integer"), std::string::npos);
	EXPECT_NE(refused("start-at 99999999999999999999").find("stdin"), std::string::npos);
	EXPECT_NE(refused("START-AT 5").find("expected"), std::string::npos);
}

TEST(TrafficCli, ServerOptions)
{
	auto s = parse_traffic_server_options({"--port", "7000", "--bind", "fd00::1", "--ready-file", "/tmp/r"});
	EXPECT_EQ(s.port, 7000);
	EXPECT_EQ(s.bind, "fd00::1");
	EXPECT_EQ(s.ready_file, "/tmp/r");
	auto d = parse_traffic_server_options({});
	EXPECT_EQ(d.port, kDefaultTrafficPort);
	EXPECT_FALSE(d.bind);
	EXPECT_NE(server_error({"--bind", "localhost"}).find("--bind: 'localhost' is not a numeric"),
		  std::string::npos);
	EXPECT_NE(server_error({"--port", "abc"}).find("--port"), std::string::npos);
	EXPECT_NE(server_error({"--to", "1.2.3.4"}).find("unknown option --to"), std::string::npos);
	EXPECT_NE(server_error({"now"}).find("unexpected argument"), std::string::npos);
}

TEST(TrafficWire, HeaderRoundTripsInNetworkOrder)
{
	std::uint8_t buf[kTrafficHeaderSize];
	encode_header(TrafficHeader{0, 0x0102030405060708ull}, buf);
	const std::uint8_t want[kTrafficHeaderSize] = {'L', 'M', 'T', 'F', 0, 1, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8};
	EXPECT_EQ(std::memcmp(buf, want, sizeof(want)), 0);
	TrafficHeader h;
	std::string why;
	ASSERT_TRUE(decode_header(buf, &h, &why)) << why;
	EXPECT_EQ(h.size, 0x0102030405060708ull);
	EXPECT_EQ(h.flags, 0);
	encode_header(TrafficHeader{0, 0}, buf);
	ASSERT_TRUE(decode_header(buf, &h, &why));
	EXPECT_EQ(h.size, 0u);
}

TEST(TrafficWire, RefusesBadMagicVersionAndFlags)
{
	std::uint8_t buf[kTrafficHeaderSize];
	TrafficHeader h;
	std::string why;
	encode_header(TrafficHeader{0, 100}, buf);
	buf[0] = 'X';
	EXPECT_FALSE(decode_header(buf, &h, &why));
	EXPECT_NE(why.find("bad magic 0x584d5446"), std::string::npos) << why;

	encode_header(TrafficHeader{0, 100}, buf);
	buf[5] = 2;
	EXPECT_FALSE(decode_header(buf, &h, &why));
	EXPECT_NE(why.find("unsupported version 2"), std::string::npos) << why;

	encode_header(TrafficHeader{0, 100}, buf);
	buf[7] = 1;
	EXPECT_FALSE(decode_header(buf, &h, &why));
	EXPECT_NE(why.find("unknown flags 0x0001"), std::string::npos) << why;
}

TEST(TrafficWire, CompletionRoundTrips)
{
	std::uint8_t buf[kTrafficCompletionSize];
	encode_completion(1711250, buf);
	EXPECT_EQ(buf[7], 1711250 & 0xff);
	EXPECT_EQ(buf[0], 0);
	EXPECT_EQ(decode_completion(buf), 1711250u);
}

TEST(TrafficRecords, RowsMatchTheContractHeaders)
{
	EXPECT_STREQ(kFlowsCsvHeader,
		     "label,flow_id,dst,cc,kind,size_bytes,start_ns,end_ns,fct_ns,bytes,retrans,ideal_fct_ns,slowdown,"
		     "status");
	EXPECT_STREQ(kSamplesCsvHeader,
		     "label,flow_id,t_ns,bytes_acked,cwnd,srtt_us,retrans,pacing_rate_bps,delivery_rate_bps");
	ClientFlowRecord r;
	r.flow_id = 3;
	r.dst = "10.0.0.2";
	r.cc = "cubic";
	r.kind = "poisson";
	r.size_bytes = 1432;
	r.start_ns = 1000;
	r.end_ns = 1000 + 424224;
	r.bytes = 1432;
	r.retrans = 1;
	r.status = "ok";
	std::string row = flow_csv_row("h1", r, 1'000'000'000, 100'000);
	EXPECT_EQ(row, "h1,3,10.0.0.2,cubic,poisson,1432,1000,425224,424224,1432,1,212112,2.0000,ok");
	EXPECT_EQ(columns(row), columns(kFlowsCsvHeader));
	r.status = error_status("connect: No route, \"x\"\nhere");
	EXPECT_EQ(r.status, "error:connect: No route; ;x;;here");
	EXPECT_EQ(columns(flow_csv_row("h1", r, 1'000'000'000, 100'000)), columns(kFlowsCsvHeader));

	TcpSample s;
	s.flow_id = 3;
	s.t_ns = 5;
	s.cwnd = 10;
	std::string srow = sample_csv_row("h1", s);
	EXPECT_EQ(srow, "h1,3,5,0,10,0,0,0,0");
	EXPECT_EQ(columns(srow), columns(kSamplesCsvHeader));
}

TEST(TrafficRecords, SummaryCountsAndPercentiles)
{
	std::vector<ClientFlowRecord> recs(3);
	recs[0].start_ns = 0;
	recs[0].end_ns = 424224; // slowdown 2 for 1432 B at 1G / 100 us
	recs[0].size_bytes = recs[0].bytes = 1432;
	recs[0].status = "ok";
	recs[1].start_ns = 1'000'000;
	recs[1].end_ns = 1'212'112; // slowdown 1
	recs[1].size_bytes = recs[1].bytes = 1432;
	recs[1].status = "ok";
	recs[2].start_ns = 500;
	recs[2].end_ns = 2'000'000;
	recs[2].size_bytes = 1'000'000;
	recs[2].bytes = 0;
	recs[2].status = error_status("timeout");
	TrafficSummary s = summarize(recs, 1'000'000'000, 100'000);
	EXPECT_EQ(s.flows, 3u);
	EXPECT_EQ(s.completed, 2u);
	EXPECT_EQ(s.errors, 1u);
	EXPECT_EQ(s.bytes, 2864u);
	// 2864 B over [0, 2 ms] = 11.456 Mbit/s
	EXPECT_NEAR(s.goodput_mbps, 11.456, 1e-9);
	EXPECT_NEAR(s.slowdown_p50, 1.5, 1e-9);
	EXPECT_NEAR(s.slowdown_p99, 1.99, 1e-9);
	EXPECT_NEAR(s.fct_p50_us, (424.224 + 212.112) / 2, 1e-9);
	std::string j = summary_json(s);
	for (const char *key :
	     {"\"flows\": 3", "\"completed\": 2", "\"errors\": 1", "\"bytes\": 2864", "\"goodput_mbps\"",
	      "\"fct_us\": {\"p50\"", "\"slowdown\": {\"p50\": 1.5", "\"cpu_user_s\"", "\"cpu_sys_s\""})
		EXPECT_NE(j.find(key), std::string::npos) << key << " in " << j;
}

} // namespace

// A generator runs as root: a symlink planted where its CSV goes is refused
// and what it points to is left as it was.
std::string slurp(const std::string &path)
{
	std::ifstream f(path);
	std::stringstream ss;
	ss << f.rdbuf();
	return ss.str();
}

TEST(TrafficRecords, CsvWriterRefusesASymlink)
{
	char dir[] = "/tmp/lumen-csv-test.XXXXXX";
	ASSERT_NE(::mkdtemp(dir), nullptr);
	std::string target = std::string(dir) + "/precious", link = std::string(dir) + "/flows.csv";
	std::ofstream(target) << "keep me\n";
	ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
	try {
		CsvWriter w(link, "a,b");
		ADD_FAILURE() << "a symlink was written through";
	} catch (const Error &e) {
		EXPECT_NE(std::string(e.what()).find("symbolic link"), std::string::npos) << e.what();
	}
	EXPECT_EQ(slurp(target), "keep me\n");
	{
		CsvWriter w(std::string(dir) + "/ok.csv", "a,b"); // a plain new file is fine
	}
	EXPECT_EQ(slurp(std::string(dir) + "/ok.csv"), "a,b\n");
	// --new-files: an existing file (or link) is refused and left alone
	for (const std::string &path : {target, link}) {
		try {
			CsvWriter w(path, "a,b", true);
			ADD_FAILURE() << "an existing " << path << " was opened";
		} catch (const Error &e) {
			EXPECT_TRUE(std::string(e.what()).find("exists already") != std::string::npos ||
				    std::string(e.what()).find("symbolic link") != std::string::npos)
				<< e.what();
		}
	}
	EXPECT_EQ(slurp(target), "keep me\n");
	{
		CsvWriter w(std::string(dir) + "/new.csv", "a,b", true);
	}
	EXPECT_EQ(slurp(std::string(dir) + "/new.csv"), "a,b\n");
	EXPECT_TRUE(parse_traffic_client_options({"--to", "10.0.0.2", "--long", "1", "--duration", "1s", "--new-files"})
			    .new_files);
	for (const char *f : {"/precious", "/flows.csv", "/ok.csv", "/new.csv"})
		::unlink((std::string(dir) + f).c_str());
	::rmdir(dir);
}
