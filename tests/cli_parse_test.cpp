// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// The `lumen` command's argument parsing and validation (userspace/base/
// args.h): every parser accepts the documented forms, refuses malformed
// text and out-of-range values with a UsageError naming the argument.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/args.h"
#include "base/error.h"
#include "base/json.h"
#include "base/list.h"
#include "base/ping.h"
#include "base/system.h"
#include "base/units.h"

using namespace lumen;

namespace
{

template <typename F> std::string usage_error(F f)
{
	try {
		f();
	} catch (const UsageError &e) {
		return e.what();
	}
	return "";
}

TEST(Args, SplitsPositionalOptionsAndFlags)
{
	auto a = Args::parse({"attach", "veth0", "--rate", "1gbit", "--buffer=64k", "--no-int", "--", "x"},
			     {"--no-int"});
	EXPECT_EQ(a.positional, (std::vector<std::string>{"attach", "veth0", "--", "x"}));
	EXPECT_EQ(a.get("--rate"), "1gbit");
	EXPECT_EQ(a.get("--buffer"), "64k");
	EXPECT_TRUE(a.has("--no-int"));
	EXPECT_FALSE(a.has("--peer"));
	EXPECT_NO_THROW(a.allow_only({"--rate", "--buffer", "--no-int"}));
	EXPECT_NE(usage_error([&] { a.allow_only({"--rate"}); }).find("unknown option --buffer"), std::string::npos);
	EXPECT_NE(usage_error([] { Args::parse({"--rate"}); }).find("needs a value"), std::string::npos);
}

TEST(Parse, Integers)
{
	EXPECT_EQ(parse_uint("0", "slots", 0, 5), 0u);
	EXPECT_EQ(parse_uint("5", "slots", 0, 5), 5u);
	for (const char *bad : {"", "-1", "6", "1.5", "3x", " 3", "99999999999999999999999"})
		EXPECT_NE(usage_error([&] { parse_uint(bad, "slots", 0, 5); }).find("slots"), std::string::npos) << bad;
}

TEST(Parse, Rates)
{
	EXPECT_EQ(parse_rate_mbps("1gbit", "rate"), 1000u);
	EXPECT_EQ(parse_rate_mbps("2.5gbit", "rate"), 2500u);
	EXPECT_EQ(parse_rate_mbps("100mbit", "rate"), 100u);
	EXPECT_EQ(parse_rate_mbps("25G", "rate"), 25000u);
	EXPECT_EQ(parse_rate_mbps("800M", "rate"), 800u);
	EXPECT_EQ(parse_rate_mbps("10000", "rate"), 10000u);
	EXPECT_EQ(parse_rate_mbps("1.6tbit", "rate"), 1600000u);
	for (const char *bad : {"", "gbit", "1.5mbit", "0", "500kbit", "2tbit", "1 gbit", "1gbps2", "1..5g", "-1g"})
		EXPECT_NE(usage_error([&] { parse_rate_mbps(bad, "--rate"); }).find("--rate"), std::string::npos)
			<< bad;
}

TEST(Parse, Bytes)
{
	EXPECT_EQ(parse_bytes("1500", "buffer", 1u << 30), 1500u);
	EXPECT_EQ(parse_bytes("64k", "buffer", 1u << 30), 65536u);
	EXPECT_EQ(parse_bytes("1m", "buffer", 1u << 30), 1048576u);
	EXPECT_EQ(parse_bytes("2MiB", "buffer", 1u << 30), 2097152u);
	EXPECT_EQ(parse_bytes("1.5k", "buffer", 1u << 30), 1536u);
	for (const char *bad : {"", "k", "2g", "1.1", "12q", "-5"})
		EXPECT_NE(usage_error([&] { parse_bytes(bad, "--buffer", 1u << 30); }).find("--buffer"),
			  std::string::npos)
			<< bad;
}

TEST(Parse, Durations)
{
	EXPECT_EQ(parse_duration_ns("20us", "base-rtt", 1000000000), 20000u);
	EXPECT_EQ(parse_duration_ns("1ms", "base-rtt", 1000000000), 1000000u);
	EXPECT_EQ(parse_duration_ns("500ns", "base-rtt", 1000000000), 500u);
	EXPECT_EQ(parse_duration_ns("0.1s", "base-rtt", 1000000000), 100000000u);
	EXPECT_EQ(parse_duration_ns("0us", "base-rtt", 1000000000), 0u);
	for (const char *bad : {"", "20", "us", "2s", "1.0001ns", "5min"})
		EXPECT_NE(usage_error([&] { parse_duration_ns(bad, "base-rtt", 1000000000); }).find("base-rtt"),
			  std::string::npos)
			<< bad;
}

TEST(Parse, Q16Fractions)
{
	EXPECT_EQ(parse_q16("0.9", "gamma", 0.01, 1.0), 58982u);
	EXPECT_EQ(parse_q16("1", "gamma", 0.01, 1.0), 65536u);
	EXPECT_EQ(parse_q16("0.01", "gamma", 0.01, 1.0), 655u);
	for (const char *bad : {"", "2", "0", "0.001", "0.9x", "abc"})
		EXPECT_NE(usage_error([&] { parse_q16(bad, "gamma", 0.01, 1.0); }).find("gamma"), std::string::npos)
			<< bad;
}

// base/list.h: the one comma-list parser every option list goes through
TEST(Parse, CommaLists)
{
	using V = std::vector<std::string>;
	EXPECT_EQ(split_list("a", "--x", "name"), V{"a"});
	EXPECT_EQ(split_list("a,b,a", "--x", "name"), (V{"a", "b", "a"})); // kAllow: order and repeats kept
	EXPECT_EQ(split_list(" a,b ", "--x", "name"), (V{" a", "b "})); // verbatim: the item's parser judges
	EXPECT_EQ(usage_error([] { split_list("", "--x", "name"); }), "--x: an empty name in ''");
	EXPECT_EQ(usage_error([] { split_list("a,,b", "--x", "name"); }), "--x: an empty name in 'a,,b'");
	EXPECT_EQ(usage_error([] { split_list(",a", "--x", "name"); }), "--x: an empty name in ',a'");
	EXPECT_EQ(usage_error([] { split_list("a,", "--x", "name"); }), "--x: an empty name in 'a,'");
	EXPECT_EQ(usage_error([] { split_list("a,b,a", "--x", "name", Duplicates::kRefuse); }),
		  "--x: name 'a' is listed twice");

	using U = std::vector<std::uint64_t>;
	EXPECT_EQ(parse_uint_list("32,256", "--nodes", "node count", 2, 4096), (U{32, 256}));
	EXPECT_EQ(usage_error([] { parse_uint_list("32,256,32", "--nodes", "node count", 2, 4096); }),
		  "--nodes: node count 32 is listed twice");
	EXPECT_EQ(usage_error([] { parse_uint_list("8,08", "--nodes", "node count", 2, 4096); }),
		  "--nodes: node count 8 is listed twice"); // the numbers compare
	EXPECT_EQ(parse_uint_list("8,8", "--x", "count", 1, 9, Duplicates::kAllow), (U{8, 8}));
	EXPECT_EQ(usage_error([] { parse_uint_list("32,x", "--nodes", "node count", 2, 4096); }),
		  "--nodes: 'x' is not a non-negative integer");
	EXPECT_EQ(usage_error([] { parse_uint_list("32,1", "--nodes", "node count", 2, 4096); }),
		  "--nodes: 1 is outside [2, 4096]");
	EXPECT_EQ(usage_error([] { parse_uint_list("32,", "--nodes", "node count", 2, 4096); }),
		  "--nodes: an empty node count in '32,'");

	// addresses: host byte order, node i's at i; no node shares one
	using A = std::vector<std::uint32_t>;
	EXPECT_EQ(parse_ipv4_list("10.0.0.1,10.0.0.2", "--addrs"), (A{0x0a000001, 0x0a000002}));
	EXPECT_EQ(usage_error([] { parse_ipv4_list("10.0.0.1,10.0.0.256", "--addrs"); }),
		  "--addrs: '10.0.0.256' is not an IPv4 address");
	EXPECT_EQ(usage_error([] { parse_ipv4_list("10.0.0.1,10.0.0.1", "--addrs"); }),
		  "--addrs: address '10.0.0.1' is listed twice");
	EXPECT_EQ(usage_error([] { parse_ipv4_list("10.0.0.1,", "--addrs"); }),
		  "--addrs: an empty address in '10.0.0.1,'");

	// Args::list is the same splitter
	Args a = Args::parse({"x", "--lumend", "a,,b"});
	EXPECT_EQ(usage_error([&] { a.list("--lumend", "socket"); }), "--lumend: an empty socket in 'a,,b'");
	EXPECT_TRUE(Args::parse({"x"}).list("--lumend", "socket").empty());
}

TEST(Output, JsonIsWellFormed)
{
	Json j;
	j.num("a", std::uint64_t(1)).num("b", 0.5).str("c", "x\"y\\z\n\x01").raw("d", "[1,2]");
	EXPECT_EQ(j.dump(), "{\"a\": 1, \"b\": 0.5, \"c\": \"x\\\"y\\\\z\\n\\u0001\", \"d\": [1,2]}");
	EXPECT_EQ(split_words("  reno  bbr\tcubic\n"), (std::vector<std::string>{"reno", "bbr", "cubic"}));
}

TEST(Output, RatesPrintOneWayAndReadBack)
{
	EXPECT_EQ(format_rate_mbps(100), "100 Mbit/s");
	EXPECT_EQ(format_rate_mbps(2500), "2500 Mbit/s");
	EXPECT_EQ(format_rate_mbps(25000), "25 Gbit/s");
	EXPECT_EQ(format_rate_mbps(1600000), "1600 Gbit/s");
	EXPECT_EQ(format_rate_mbps(2000000), "2 Tbit/s");
	EXPECT_EQ(format_rate_mbps(0), "0 Mbit/s");
	for (std::uint32_t mbps : {1u, 100u, 999u, 1000u, 2500u, 40000u, 1600000u}) {
		EXPECT_EQ(parse_rate_mbps(rate_arg_text(mbps), "rate"), mbps) << rate_arg_text(mbps);
	}
	EXPECT_EQ(rate_arg_text(40000), "40gbit");
	EXPECT_EQ(rate_arg_text(100), "100mbit");
}

TEST(Ping, MinimumOfTheSummary)
{
	EXPECT_EQ(ping_min_rtt_ns("8 packets transmitted, 8 received, 0% packet loss, time 357ms\n"
				  "rtt min/avg/max/mdev = 0.051/0.060/0.081/0.010 ms\n"),
		  51000u);
	EXPECT_EQ(ping_min_rtt_ns("round-trip min/avg/max = 1.250/2.000/3.000 ms\n"), 1250000u);
	// no reply, no summary, or garbage where the number should be
	EXPECT_EQ(ping_min_rtt_ns("8 packets transmitted, 0 received, 100% packet loss\n"), 0u);
	EXPECT_EQ(ping_min_rtt_ns(""), 0u);
	EXPECT_EQ(ping_min_rtt_ns("rtt min/avg/max/mdev = x/1/2/3 ms"), 0u);
	EXPECT_EQ(ping_min_rtt_ns("rtt min/avg/max/mdev = -1/1/2/3 ms"), 0u);
	EXPECT_EQ(ping_min_rtt_ns("rtt min/avg/max/mdev = nan/1/2/3 ms"), 0u);
	EXPECT_EQ(ping_min_rtt_ns("rtt min/avg/max/mdev"), 0u);
}

} // namespace
