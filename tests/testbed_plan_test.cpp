// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// The testbed plan (userspace/testbed/testbed_plan.h): port counts per
// topology, unique names and addresses, and routes that deliver every host
// pair - checked by forwarding a packet through the plan's routing tables
// (longest prefix match, every ECMP next hop followed).
#include <gtest/gtest.h>

#include <arpa/inet.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/error.h"
#include "testbed/testbed_plan.h"

extern "C" {
#include "lumen/bpf_shared.h"
}

using namespace lumen;

namespace
{

TopologySpec dumbbell(std::uint32_t senders, std::uint32_t receivers)
{
	TopologySpec s;
	s.name = "t";
	s.kind = TopologyKind::Dumbbell;
	s.senders = senders;
	s.receivers = receivers;
	return s;
}

TopologySpec incast(std::uint32_t senders)
{
	TopologySpec s = dumbbell(senders, 1);
	s.kind = TopologyKind::Incast;
	s.bottleneck.rate_mbps = 100;
	return s;
}

TopologySpec leafspine(std::uint32_t leaves, std::uint32_t spines, std::uint32_t hosts)
{
	TopologySpec s;
	s.name = "t";
	s.kind = TopologyKind::LeafSpine;
	s.leaves = leaves;
	s.spines = spines;
	s.hosts_per_leaf = hosts;
	return s;
}

std::vector<TopologySpec> every_shape()
{
	std::vector<TopologySpec> out;
	for (std::uint32_t s : {1u, 2u, 10u, 30u})
		for (std::uint32_t r : {1u, 3u})
			out.push_back(dumbbell(s, r));
	for (std::uint32_t s : {1u, 10u, 63u})
		out.push_back(incast(s));
	for (std::uint32_t l : {2u, 3u, 4u})
		for (std::uint32_t sp : {1u, 2u, 4u})
			for (std::uint32_t h : {1u, 2u, 5u})
				if (topology_port_count(leafspine(l, sp, h)) <= LUMEN_SWITCH_MAX_PORTS)
					out.push_back(leafspine(l, sp, h));
	return out;
}

std::uint32_t ip(const std::string &dotted)
{
	in_addr a{};
	EXPECT_EQ(inet_pton(AF_INET, dotted.c_str(), &a), 1) << dotted;
	return ntohl(a.s_addr);
}

struct Prefix {
	std::uint32_t net = 0;
	int len = 0;
	bool has(std::uint32_t addr) const
	{
		std::uint32_t mask = len == 0 ? 0 : ~0u << (32 - len);
		return (addr & mask) == (net & mask);
	}
};

Prefix prefix(const std::string &text)
{
	if (text == "default")
		return {};
	auto slash = text.find('/');
	return {ip(text.substr(0, slash)), std::stoi(text.substr(slash + 1))};
}

// Follows the plan's routing tables from `node` to `dst`; true when every
// path (every ECMP next hop) reaches the host owning dst within 8 hops.
bool delivers(const TestbedPlan &plan, const std::string &node, std::uint32_t dst, int hops = 0)
{
	if (hops > 8)
		return false;
	const PlanNode &n = plan.node(node);
	if (!n.is_switch && !n.addr.empty() && ip(n.addr) == dst)
		return true;
	// connected subnets first (most specific: /24 or /30), then routes
	int best_len = -1;
	std::vector<std::string> next_nodes;
	for (const auto &l : plan.links) {
		for (const auto &[self, other] : {std::pair{l.a, l.b}, std::pair{l.b, l.a}}) {
			if (self.node != node || !prefix(self.cidr).has(dst))
				continue;
			if (prefix(self.cidr).len > best_len) {
				best_len = prefix(self.cidr).len;
				next_nodes.clear();
			}
			next_nodes.push_back(other.node);
		}
	}
	for (const auto &r : plan.routes) {
		if (r.node != node || !prefix(r.dest).has(dst) || prefix(r.dest).len <= best_len)
			continue;
		best_len = prefix(r.dest).len;
		next_nodes.clear();
		for (const auto &nh : r.nexthops)
			for (const auto &l : plan.links)
				for (const auto &[self, other] : {std::pair{l.a, l.b}, std::pair{l.b, l.a}})
					if (self.node == node && self.dev == nh.dev &&
					    other.cidr.substr(0, other.cidr.find('/')) == nh.via)
						next_nodes.push_back(other.node);
		if (next_nodes.size() != r.nexthops.size())
			return false; // a next hop that is no neighbour
	}
	if (next_nodes.empty())
		return false;
	for (const auto &next : next_nodes)
		if (!delivers(plan, next, dst, hops + 1))
			return false;
	return true;
}

TEST(TestbedPlan, PortCountsPerTopology)
{
	EXPECT_EQ(topology_port_count(dumbbell(2, 1)), 5u);
	EXPECT_EQ(topology_port_count(incast(10)), 11u);
	EXPECT_EQ(topology_port_count(leafspine(2, 2, 2)), 12u);
	EXPECT_EQ(topology_port_count(leafspine(4, 2, 8)), 48u);
	for (const auto &spec : every_shape()) {
		TestbedPlan p = plan_testbed(spec);
		EXPECT_EQ(p.ports.size(), topology_port_count(spec));
		EXPECT_LE(p.ports.size(), std::size_t(LUMEN_SWITCH_MAX_PORTS));
	}
}

TEST(TestbedPlan, NamesAreUniqueAndFitTheKernelLimits)
{
	for (const auto &spec : every_shape()) {
		TestbedPlan p = plan_testbed(spec);
		std::set<std::string> netns, devs, ports;
		for (const auto &n : p.nodes) {
			EXPECT_TRUE(netns.insert(n.netns).second) << n.netns;
			EXPECT_EQ(n.netns, "lt-t-" + n.name);
			EXPECT_LE(n.netns.size(), 63u);
		}
		for (const auto &l : p.links) {
			for (const auto *e : {&l.a, &l.b}) {
				EXPECT_TRUE(devs.insert(e->node + "/" + e->dev).second) << e->node << " " << e->dev;
				EXPECT_LE(e->dev.size(), 15u);
				EXPECT_NE(e->dev, "lo");
			}
		}
		for (const auto &pp : p.ports)
			EXPECT_TRUE(ports.insert(pp.port.netns + "/" + pp.port.dev).second);
	}
}

TEST(TestbedPlan, AddressesAreUniqueAndHostsMatchTheirLinks)
{
	for (const auto &spec : every_shape()) {
		TestbedPlan p = plan_testbed(spec);
		std::set<std::string> addrs;
		for (const auto &l : p.links) {
			for (const auto *e : {&l.a, &l.b})
				EXPECT_TRUE(addrs.insert(e->cidr.substr(0, e->cidr.find('/'))).second) << e->cidr;
			// both ends in one subnet
			EXPECT_TRUE(prefix(l.a.cidr).has(ip(l.b.cidr.substr(0, l.b.cidr.find('/')))));
		}
		for (const auto &h : p.hosts())
			EXPECT_TRUE(addrs.count(h.addr)) << h.addr;
	}
}

TEST(TestbedPlan, EveryHostPairIsRouted)
{
	for (const auto &spec : every_shape()) {
		TestbedPlan p = plan_testbed(spec);
		std::vector<TestbedHost> hosts = p.hosts();
		for (const auto &from : hosts) {
			for (const auto &to : hosts) {
				if (from.name == to.name)
					continue;
				EXPECT_TRUE(delivers(p, from.name, ip(to.addr)))
					<< topology_kind_name(spec.kind) << " " << from.name << " -> " << to.name;
			}
		}
	}
}

TEST(TestbedPlan, PortsAreSwitchEgressTowardsTheLinkPeer)
{
	for (const auto &spec : every_shape()) {
		TestbedPlan p = plan_testbed(spec);
		for (const auto &pp : p.ports) {
			bool found = false;
			for (const auto &l : p.links)
				for (const auto &[self, other] : {std::pair{l.a, l.b}, std::pair{l.b, l.a}})
					if (p.node(self.node).netns == pp.port.netns && self.dev == pp.port.dev) {
						found = true;
						EXPECT_TRUE(p.node(self.node).is_switch);
						EXPECT_EQ(pp.port.peer, other.dev);
						EXPECT_EQ(pp.port.peer_netns, p.node(other.node).netns);
						EXPECT_EQ(pp.port.rate_mbps, l.spec.rate_mbps);
						EXPECT_EQ(pp.port.name, self.node + "->" + other.node);
					}
			EXPECT_TRUE(found) << pp.port.name;
		}
	}
}

TEST(TestbedPlan, Dumbbell)
{
	TopologySpec spec = dumbbell(3, 2);
	spec.bottleneck.rate_mbps = 100;
	spec.bottleneck.buffer_bytes = 64 * 1024;
	TestbedPlan p = plan_testbed(spec);
	EXPECT_EQ(p.hosts().size(), 5u);
	std::vector<std::string> bottlenecks;
	for (const auto &pp : p.ports)
		if (pp.port.bottleneck) {
			bottlenecks.push_back(pp.port.name);
			EXPECT_EQ(pp.port.rate_mbps, 100u);
			EXPECT_EQ(pp.link.buffer_bytes, 64u * 1024);
		} else {
			EXPECT_EQ(pp.port.rate_mbps, spec.host_link.rate_mbps);
		}
	EXPECT_EQ(bottlenecks, (std::vector<std::string>{"sw1->sw2", "sw2->sw1"}));
	EXPECT_EQ(p.node("s2").addr, "10.1.2.1");
	EXPECT_EQ(p.node("r2").addr, "10.2.2.1");
	EXPECT_EQ(p.node("s1").role, "sender");
	EXPECT_EQ(p.node("r1").role, "receiver");
	EXPECT_EQ(p.rtt_from, "s1");
	EXPECT_EQ(p.rtt_to, "r1");
}

TEST(TestbedPlan, IncastBottleneckIsTheReceiverPort)
{
	TestbedPlan p = plan_testbed(incast(10));
	int bottlenecks = 0;
	for (const auto &pp : p.ports) {
		if (!pp.port.bottleneck)
			continue;
		bottlenecks++;
		EXPECT_EQ(pp.port.name, "sw->r1");
		EXPECT_EQ(pp.port.rate_mbps, 100u);
	}
	EXPECT_EQ(bottlenecks, 1);
	EXPECT_EQ(p.hosts().size(), 11u);
}

TEST(TestbedPlan, LeafSpineSpreadsOverEverySpine)
{
	TestbedPlan p = plan_testbed(leafspine(3, 2, 2));
	std::map<std::string, int> remote_routes;
	for (const auto &r : p.routes) {
		if (r.node.rfind("leaf", 0) != 0 || r.dest == "default")
			continue;
		remote_routes[r.node]++;
		ASSERT_EQ(r.nexthops.size(), 2u) << r.node << " " << r.dest;
		EXPECT_NE(r.nexthops[0].dev, r.nexthops[1].dev);
	}
	for (const char *leaf : {"leaf1", "leaf2", "leaf3"})
		EXPECT_EQ(remote_routes[leaf], 2) << leaf;
	// leaves hash on L4 ports; every switch forwards
	for (const auto &[node, settings] : p.sysctls) {
		const bool is_leaf = node.rfind("leaf", 0) == 0;
		const bool hashes = std::find(settings.begin(), settings.end(),
					      "net.ipv4.fib_multipath_hash_policy=1") != settings.end();
		const bool forwards =
			std::find(settings.begin(), settings.end(), "net.ipv4.ip_forward=1") != settings.end();
		EXPECT_EQ(hashes, is_leaf) << node;
		EXPECT_EQ(forwards, p.node(node).is_switch) << node;
	}
	EXPECT_EQ(p.node(p.rtt_from).netns, "lt-t-h1_1");
	EXPECT_EQ(p.node(p.rtt_to).netns, "lt-t-h2_1");
	EXPECT_EQ(p.node("h3_2").addr, "10.3.2.1");
}

TEST(TestbedPlan, InvalidSpecsAreRefused)
{
	EXPECT_THROW(plan_testbed(leafspine(8, 4, 16)), UsageError);
	EXPECT_THROW(plan_testbed(dumbbell(0, 1)), UsageError);
}

TEST(TestbedPlan, RotorHostsKnowEachOtherAndHaveNoPorts)
{
	TopologySpec spec;
	spec.kind = TopologyKind::Rotor;
	spec.name = "ro";
	spec.nodes = 5;
	TestbedPlan p = plan_testbed(spec);
	EXPECT_TRUE(p.ports.empty());
	EXPECT_TRUE(p.routes.empty());
	EXPECT_TRUE(p.rtt_from.empty()); /* no base RTT through circuits */
	EXPECT_EQ(p.rotor_node, "rotor");
	EXPECT_EQ(p.node("rotor").netns, "lt-ro-rotor");
	ASSERT_EQ(p.rotor_ports.size(), 5u);
	ASSERT_EQ(p.rotor_addrs.size(), 5u);
	ASSERT_EQ(p.links.size(), 5u);
	for (std::uint32_t i = 0; i < 5; i++) {
		const std::string h = "h" + std::to_string(i + 1);
		EXPECT_EQ(p.rotor_ports[i], std::make_pair(h, i));
		EXPECT_EQ(p.rotor_addrs[i], (10u << 24) | (i + 1));
		EXPECT_EQ(p.node(h).addr, "10.0.0." + std::to_string(i + 1));
		EXPECT_EQ(p.links[i].a.node, "rotor");
		EXPECT_EQ(p.links[i].a.dev, h);
		EXPECT_EQ(p.links[i].a.cidr, ""); /* the rotor has no address */
		EXPECT_EQ(p.links[i].b.cidr, "10.0.0." + std::to_string(i + 1) + "/24");
	}
	/* every host has a permanent entry for every other: 5 x 4 */
	ASSERT_EQ(p.neighbours.size(), 20u);
	for (const auto &n : p.neighbours) {
		EXPECT_EQ(n.dev, "eth0");
		EXPECT_NE(p.node(n.node).addr, n.addr);
		std::uint32_t j = std::stoul(n.addr.substr(n.addr.rfind('.') + 1));
		char mac[18];
		std::snprintf(mac, sizeof(mac), "02:4c:00:00:00:%02x", j);
		EXPECT_EQ(n.mac, mac);
	}
	for (const auto &l : p.links) {
		EXPECT_FALSE(l.b.mac.empty());
	}
}

} // namespace
