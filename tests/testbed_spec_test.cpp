// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// Testbed descriptions (userspace/testbed/testbed.h): the JSON format and the
// `lumen testbed up` flags accept the documented forms and the shipped
// examples, and refuse everything else with an error naming the key.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/args.h"
#include "base/error.h"
#include "testbed/testbed.h"

using namespace lumen;

namespace
{

// The UsageError text of parsing `text`, "" when it parsed.
std::string json_error(const std::string &text)
{
	try {
		parse_topology(text);
	} catch (const UsageError &e) {
		return e.what();
	}
	return "";
}

std::string args_error(const std::vector<std::string> &argv)
{
	try {
		topology_from_args(Args::parse(argv, {"--no-int"}));
	} catch (const UsageError &e) {
		return e.what();
	}
	return "";
}

TopologySpec from_args(const std::vector<std::string> &argv)
{
	return topology_from_args(Args::parse(argv, {"--no-int"}));
}

bool contains(const std::string &text, const std::string &part)
{
	return text.find(part) != std::string::npos;
}

std::string read_example(const std::string &name)
{
	std::ifstream f(std::string(LUMEN_SOURCE_DIR) + "/testbeds/" + name);
	std::stringstream ss;
	ss << f.rdbuf();
	return ss.str();
}

void expect_same(const TopologySpec &a, const TopologySpec &b)
{
	EXPECT_EQ(topology_to_json(a), topology_to_json(b));
	EXPECT_EQ(a.name, b.name);
	EXPECT_EQ(a.kind, b.kind);
}

TEST(TestbedSpec, ShippedExamplesParse)
{
	TopologySpec db = parse_topology(read_example("dumbbell.json"));
	EXPECT_EQ(db.kind, TopologyKind::Dumbbell);
	EXPECT_EQ(db.senders, 4u);
	EXPECT_EQ(db.bottleneck.rate_mbps, 1000u);
	EXPECT_EQ(db.bottleneck.buffer_bytes, 256u * 1024);
	EXPECT_EQ(db.bottleneck.ecn_threshold_bytes, 64u * 1024);
	EXPECT_EQ(db.host_link.rate_mbps, 10000u);

	TopologySpec in = parse_topology(read_example("incast.json"));
	EXPECT_EQ(in.kind, TopologyKind::Incast);
	EXPECT_EQ(in.senders, 10u);
	EXPECT_EQ(in.receivers, 1u);

	TopologySpec ls = parse_topology(read_example("leafspine.json"));
	EXPECT_EQ(ls.kind, TopologyKind::LeafSpine);
	EXPECT_EQ(ls.leaves, 2u);
	EXPECT_EQ(ls.spines, 2u);
	EXPECT_EQ(ls.hosts_per_leaf, 2u);
}

TEST(TestbedSpec, JsonRoundTrip)
{
	for (const char *file : {"dumbbell.json", "incast.json", "leafspine.json"}) {
		TopologySpec s = parse_topology(read_example(file));
		expect_same(s, parse_topology(topology_to_json(s)));
	}
	TopologySpec odd = parse_topology(
		R"({"name": "x1", "topology": "dumbbell", "senders": 3, "receivers": 2,
		    "bottleneck": {"rate": 2500, "buffer": 100000, "ecn_threshold": 30000, "int": false},
		    "host_link": {"rate": "25gbit"}})");
	EXPECT_EQ(odd.bottleneck.rate_mbps, 2500u);
	EXPECT_FALSE(odd.bottleneck.int_enabled);
	expect_same(odd, parse_topology(topology_to_json(odd)));
}

TEST(TestbedSpec, DefaultsAndHostRateFollowsTheBottleneck)
{
	TopologySpec s = parse_topology(R"({"topology": "incast", "bottleneck": {"rate": "10gbit"}})");
	EXPECT_EQ(s.name, "lumen");
	EXPECT_EQ(s.senders, 2u);
	EXPECT_EQ(s.host_link.rate_mbps, 10000u);
	EXPECT_EQ(s.bottleneck.buffer_bytes, 1u << 20);
	EXPECT_TRUE(s.bottleneck.int_enabled);
	TopologySpec l = parse_topology(R"({"topology": "leafspine", "fabric_link": {"rate": "40gbit"}})");
	EXPECT_EQ(l.host_link.rate_mbps, 40000u);
}

TEST(TestbedSpec, UnknownKeysNameTheirPath)
{
	EXPECT_TRUE(contains(json_error(R"({"topology": "dumbbell", "sendres": 2})"), "$.sendres: unknown key"));
	EXPECT_TRUE(contains(json_error(R"({"topology": "dumbbell", "bottleneck": {"rate": "1gbit", "bufer": 1}})"),
			     "$.bottleneck.bufer: unknown key"));
	// keys of another topology kind
	EXPECT_TRUE(contains(json_error(R"({"topology": "dumbbell", "leaves": 2})"), "$.leaves"));
	EXPECT_TRUE(contains(json_error(R"({"topology": "incast", "receivers": 2})"), "$.receivers"));
	EXPECT_TRUE(contains(json_error(R"({"topology": "leafspine", "bottleneck": {}})"), "$.bottleneck"));
	EXPECT_TRUE(contains(json_error(R"({"topology": "leafspine", "senders": 2})"), "$.senders"));
}

TEST(TestbedSpec, MalformedDocuments)
{
	EXPECT_TRUE(contains(json_error("{"), "not valid JSON"));
	EXPECT_TRUE(contains(json_error(R"({"topology": "dumbbell", "senders": 1e309})"), "not valid JSON"));
	EXPECT_TRUE(contains(json_error("[1]"), "$: must be an object"));
	EXPECT_TRUE(contains(json_error("{}"), "$.topology: missing"));
	EXPECT_TRUE(contains(json_error(R"({"topology": 1})"), "$.topology: must be a string"));
	EXPECT_TRUE(contains(json_error(R"({"topology": "ring"})"), "unknown topology 'ring'"));
	EXPECT_TRUE(
		contains(json_error(R"({"topology": "dumbbell", "senders": "4"})"), "$.senders: must be an integer"));
	EXPECT_TRUE(contains(json_error(R"({"topology": "dumbbell", "senders": -1})"), "$.senders"));
	EXPECT_TRUE(contains(json_error(R"({"topology": "dumbbell", "senders": 2.5})"), "$.senders"));
	EXPECT_TRUE(contains(json_error(R"({"topology": "dumbbell", "bottleneck": []})"),
			     "$.bottleneck: must be an object"));
	EXPECT_TRUE(contains(json_error(R"({"topology": "dumbbell", "bottleneck": {"rate": true}})"),
			     "$.bottleneck.rate: must be a string"));
	EXPECT_TRUE(contains(json_error(R"({"topology": "dumbbell", "bottleneck": {"int": "yes"}})"),
			     "$.bottleneck.int: must be true or false"));
	EXPECT_TRUE(contains(json_error(R"({"topology": "dumbbell", "name": 7})"), "$.name: must be a string"));
	EXPECT_TRUE(contains(json_error(R"({"topology": "dumbbell", "description": 7})"), "$.description"));
}

TEST(TestbedSpec, Names)
{
	EXPECT_EQ(json_error(R"({"topology": "dumbbell", "name": "a1234567"})"), "");
	for (const char *bad : {"", "Upper", "a-b", "a_b", "toolong99", "x y"})
		EXPECT_TRUE(contains(json_error(std::string(R"({"topology": "dumbbell", "name": ")") + bad + "\"}"),
				     "$.name"))
			<< bad;
}

TEST(TestbedSpec, RateRanges)
{
	auto rate = [](const std::string &r) {
		return json_error(R"({"topology": "dumbbell", "bottleneck": {"rate": ")" + r + "\"}}");
	};
	EXPECT_EQ(rate("1mbit"), "");
	EXPECT_EQ(rate("100gbit"), "");
	EXPECT_TRUE(contains(rate("101gbit"), "$.bottleneck.rate"));
	EXPECT_TRUE(contains(rate("101gbit"), "100 Gbit/s"));
	EXPECT_TRUE(contains(rate("500kbit"), "$.bottleneck.rate"));
	EXPECT_TRUE(contains(rate("fast"), "$.bottleneck.rate"));
	EXPECT_TRUE(contains(rate("1.5mbit"), "$.bottleneck.rate"));
	EXPECT_TRUE(
		contains(json_error(R"({"topology": "dumbbell", "bottleneck": {"rate": 0}})"), "$.bottleneck.rate"));
}

TEST(TestbedSpec, BufferEcnAndDelay)
{
	auto link = [](const std::string &body) {
		return json_error(R"({"topology": "dumbbell", "bottleneck": {)" + body + "}}");
	};
	EXPECT_EQ(link(R"("buffer": 1514)"), "");
	EXPECT_EQ(link(R"("buffer": "1g")"), "");
	EXPECT_TRUE(contains(link(R"("buffer": 1513)"), "$.bottleneck.buffer"));
	EXPECT_TRUE(contains(link(R"("buffer": "2g")"), "$.bottleneck.buffer"));
	EXPECT_TRUE(contains(link(R"("buffer": "64k", "ecn_threshold": "64k")"), "$.bottleneck.ecn_threshold"));
	EXPECT_EQ(link(R"("buffer": "64k", "ecn_threshold": "32k")"), "");
	EXPECT_EQ(link(R"("delay": 0)"), "");
	EXPECT_EQ(link(R"("delay": "0us")"), "");
	EXPECT_EQ(link(R"("delay": "50us")"), "");
	EXPECT_EQ(link(R"("delay": "1s")"), "");
	EXPECT_TRUE(contains(link(R"("delay": "500ns")"), "outside [1us, 1s]"));
	EXPECT_TRUE(contains(link(R"("delay": "500ns")"), "$.bottleneck.delay"));
	EXPECT_TRUE(contains(link(R"("delay": "2s")"), "$.bottleneck.delay"));
	EXPECT_TRUE(contains(link(R"("delay": "soon")"), "$.bottleneck.delay"));
}

TEST(TestbedSpec, CountRanges)
{
	auto doc = [](const std::string &kind, const std::string &body) {
		return json_error(R"({"topology": ")" + kind + "\", " + body + "}");
	};
	EXPECT_TRUE(contains(doc("dumbbell", R"("senders": 0)"), "$.senders"));
	EXPECT_TRUE(contains(doc("dumbbell", R"("senders": 65)"), "$.senders"));
	EXPECT_TRUE(contains(doc("dumbbell", R"("receivers": 0)"), "$.receivers"));
	EXPECT_TRUE(contains(doc("leafspine", R"("leaves": 1)"), "$.leaves"));
	EXPECT_TRUE(contains(doc("leafspine", R"("leaves": 9)"), "$.leaves"));
	EXPECT_TRUE(contains(doc("leafspine", R"("spines": 0)"), "$.spines"));
	EXPECT_TRUE(contains(doc("leafspine", R"("spines": 5)"), "$.spines"));
	EXPECT_TRUE(contains(doc("leafspine", R"("hosts_per_leaf": 17)"), "$.hosts_per_leaf"));
	// at most 64 switch ports in all
	EXPECT_EQ(doc("dumbbell", R"("senders": 61, "receivers": 1)"), "");
	EXPECT_TRUE(contains(doc("dumbbell", R"("senders": 62, "receivers": 1)"), "needs 65 INT switch ports"));
	EXPECT_EQ(doc("incast", R"("senders": 63)"), "");
	EXPECT_TRUE(contains(doc("incast", R"("senders": 64)"), "needs 65"));
	EXPECT_EQ(doc("leafspine", R"("leaves": 4, "spines": 2, "hosts_per_leaf": 8)"), "");
	EXPECT_TRUE(contains(doc("leafspine", R"("leaves": 8, "spines": 4, "hosts_per_leaf": 16)"), "needs 192"));
}

TEST(TestbedSpec, HostLinksAtLeastAsFastAsTheBottleneck)
{
	EXPECT_TRUE(contains(
		json_error(
			R"({"topology": "dumbbell", "bottleneck": {"rate": "10gbit"}, "host_link": {"rate": "1gbit"}})"),
		"$.host_link.rate"));
	EXPECT_EQ(
		json_error(
			R"({"topology": "leafspine", "fabric_link": {"rate": "10gbit"}, "host_link": {"rate": "1gbit"}})"),
		"");
}

TEST(TestbedSpec, ValidateRefusesWhatTheParsersWould)
{
	TopologySpec s;
	EXPECT_NO_THROW(validate_topology(s));
	s.senders = 0;
	EXPECT_THROW(validate_topology(s), UsageError);
	s = TopologySpec();
	s.bottleneck.delay_ns = 999;
	EXPECT_THROW(validate_topology(s), UsageError);
	s.bottleneck.delay_ns = 1000;
	EXPECT_NO_THROW(validate_topology(s));
	s = TopologySpec();
	s.kind = TopologyKind::Incast;
	s.receivers = 2;
	EXPECT_THROW(validate_topology(s), UsageError);
	s = TopologySpec();
	s.name = "no-dash";
	EXPECT_THROW(validate_topology(s), UsageError);
}

TEST(TestbedFlags, Defaults)
{
	TopologySpec s = from_args({"up", "--topology", "dumbbell"});
	expect_same(s, TopologySpec());
	EXPECT_TRUE(contains(args_error({"up"}), "--topology"));
	EXPECT_TRUE(contains(args_error({"up", "--topology", "star"}), "unknown topology"));
}

TEST(TestbedFlags, RatesPerKind)
{
	TopologySpec db = from_args({"up", "--topology", "dumbbell", "--rate", "10gbit", "--senders", "3"});
	EXPECT_EQ(db.bottleneck.rate_mbps, 10000u);
	EXPECT_EQ(db.host_link.rate_mbps, 10000u);
	EXPECT_EQ(db.senders, 3u);
	TopologySpec fast =
		from_args({"up", "--topology", "incast", "--rate", "1gbit", "--host-rate", "25gbit", "--name", "inc"});
	EXPECT_EQ(fast.host_link.rate_mbps, 25000u);
	EXPECT_EQ(fast.bottleneck.rate_mbps, 1000u);
	EXPECT_EQ(fast.name, "inc");
	TopologySpec ls = from_args({"up", "--topology", "leafspine", "--rate", "2gbit", "--fabric-rate", "4gbit",
				     "--leaves", "3", "--spines", "1", "--hosts-per-leaf", "4"});
	EXPECT_EQ(ls.host_link.rate_mbps, 2000u);
	EXPECT_EQ(ls.fabric_link.rate_mbps, 4000u);
	EXPECT_EQ(ls.leaves, 3u);
	EXPECT_EQ(ls.spines, 1u);
	EXPECT_EQ(ls.hosts_per_leaf, 4u);
	EXPECT_TRUE(contains(args_error({"up", "--topology", "dumbbell", "--rate", "10gbit", "--host-rate", "1gbit"}),
			     "host_link.rate"));
	EXPECT_TRUE(contains(args_error({"up", "--topology", "dumbbell", "--rate", "200gbit"}), "--rate"));
}

TEST(TestbedFlags, CommonLinkFlagsApplyToEveryLink)
{
	TopologySpec s = from_args({"up", "--topology", "leafspine", "--buffer", "256k", "--ecn-threshold", "64k",
				    "--no-int", "--delay", "0us"});
	for (const LinkSpec *l : {&s.host_link, &s.fabric_link}) {
		EXPECT_EQ(l->buffer_bytes, 256u * 1024);
		EXPECT_EQ(l->ecn_threshold_bytes, 64u * 1024);
		EXPECT_FALSE(l->int_enabled);
		EXPECT_EQ(l->delay_ns, 0u);
	}
	EXPECT_TRUE(contains(args_error({"up", "--topology", "dumbbell", "--delay", "100ns"}), "outside [1us, 1s]"));
	EXPECT_TRUE(contains(args_error({"up", "--topology", "dumbbell", "--buffer", "1k"}), "buffer"));
}

TEST(TestbedFlags, FlagsOfAnotherKindAreRefused)
{
	EXPECT_TRUE(contains(args_error({"up", "--topology", "dumbbell", "--leaves", "2"}), "--leaves does not apply"));
	EXPECT_TRUE(contains(args_error({"up", "--topology", "dumbbell", "--fabric-rate", "1gbit"}), "--fabric-rate"));
	EXPECT_TRUE(contains(args_error({"up", "--topology", "incast", "--receivers", "2"}), "--receivers"));
	EXPECT_TRUE(contains(args_error({"up", "--topology", "leafspine", "--senders", "2"}), "--senders"));
	EXPECT_TRUE(contains(args_error({"up", "--topology", "leafspine", "--leaves", "9"}), "--leaves"));
	EXPECT_TRUE(contains(args_error({"up", "--topology", "dumbbell", "--senders", "x"}), "--senders"));
	EXPECT_TRUE(contains(args_error({"up", "--topology", "dumbbell", "--name", "Big"}), "--name"));
}

TEST(TestbedSpec, Rotor)
{
	TopologySpec r =
		parse_topology(R"({"name": "ro", "topology": "rotor", "nodes": 6, "slot": "500us", "guard": "50us"})");
	EXPECT_EQ(r.kind, TopologyKind::Rotor);
	EXPECT_EQ(r.nodes, 6u);
	EXPECT_EQ(r.slot_ns, 500'000u);
	EXPECT_EQ(r.guard_ns, 50'000u);
	EXPECT_TRUE(r.schedule_file.empty());
	expect_same(r, parse_topology(topology_to_json(r)));
	TopologySpec f = parse_topology(R"({"topology": "rotor", "nodes": 3, "schedule": "/tmp/s.json", "guard": 0})");
	EXPECT_EQ(f.schedule_file, "/tmp/s.json");
	EXPECT_EQ(f.guard_ns, 0u);
	expect_same(f, parse_topology(topology_to_json(f)));

	EXPECT_TRUE(contains(json_error(R"({"topology": "rotor", "nodes": 65})"), "$.nodes"));
	EXPECT_TRUE(contains(json_error(R"({"topology": "rotor", "slot": "10ns"})"), "$.slot"));
	EXPECT_TRUE(contains(json_error(R"({"topology": "rotor", "slot": "1ms", "guard": "2ms"})"),
			     "$.guard: 2000000 ns must be shorter than the slot"));
	EXPECT_TRUE(contains(json_error(R"({"topology": "rotor", "schedule": 5})"), "$.schedule: must be the path"));
	EXPECT_TRUE(contains(json_error(R"({"topology": "rotor", "senders": 2})"), "$.senders: unknown key"));
	EXPECT_TRUE(contains(json_error(R"({"topology": "rotor", "host_stack": "dpdk"})"), "kernel hosts"));
	EXPECT_TRUE(contains(json_error(R"({"topology": "ring"})"), "(dumbbell, incast, leafspine, rotor)"));
}

TEST(TestbedFlags, Rotor)
{
	TopologySpec r = from_args({"up", "--topology", "rotor", "--nodes", "8", "--slot", "2ms", "--guard", "200us"});
	EXPECT_EQ(r.nodes, 8u);
	EXPECT_EQ(r.slot_ns, 2'000'000u);
	EXPECT_EQ(r.guard_ns, 200'000u);
	EXPECT_TRUE(contains(args_error({"up", "--topology", "rotor", "--rate", "1gbit"}), "--rate does not apply"));
	EXPECT_TRUE(contains(args_error({"up", "--topology", "dumbbell", "--nodes", "4"}), "--nodes does not apply"));
	EXPECT_TRUE(contains(args_error({"up", "--topology", "rotor", "--schedule", ""}), "--schedule needs a file"));
	EXPECT_TRUE(contains(args_error({"up", "--topology", "rotor", "--slot", "1ms", "--guard", "1ms"}), "guard"));
}

} // namespace
