// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/testbed/testbed_plan.cpp - the address, link, port and route plan
// of a testbed (the scheme is documented in testbed_plan.h).
#include "testbed/testbed_plan.h"

#include "base/error.h"

#include <algorithm>
#include <cstdio>
#include <map>

namespace lumen
{
namespace
{

std::string str(std::uint32_t v)
{
	return std::to_string(v);
}

// "s" + str(i), appended: GCC 12 -O3 warns (-Wrestrict, a false positive,
// GCC PR105329) when a literal is prepended to a temporary std::string
std::string indexed(const char *prefix, std::uint32_t i)
{
	std::string s = prefix;
	s += str(i);
	return s;
}

std::string ipv4(std::uint32_t a, std::uint32_t b, std::uint32_t c, std::uint32_t d)
{
	return str(a) + "." + str(b) + "." + str(c) + "." + str(d);
}

std::string cidr(const std::string &addr, int prefix)
{
	return addr + "/" + std::to_string(prefix);
}

// Builds the plan node by node; the topology functions below only say
// which nodes exist and how they connect.
class PlanBuilder
{
      public:
	PlanBuilder(const std::string &testbed, bool dpdk_hosts) : dpdk_(dpdk_hosts)
	{
		plan_.testbed = testbed;
	}

	void add_switch(const std::string &name, std::vector<std::string> sysctls)
	{
		plan_.nodes.push_back({name, testbed_netns(plan_.testbed, name), true, "switch", ""});
		sysctls.insert(sysctls.begin(), {"net.ipv4.ip_forward=1", "net.ipv4.conf.all.rp_filter=0",
						 "net.ipv4.conf.default.rp_filter=0"});
		add_common_sysctls(name, std::move(sysctls));
	}

	// A host on /24 subnet a.b.c.0: the host is .1, its switch's gateway .254.
	void add_host(const std::string &name, const std::string &role, const std::string &sw, std::uint32_t b,
		      std::uint32_t c, const LinkSpec &link, bool bottleneck)
	{
		const std::string addr = ipv4(10, b, c, 1), gateway = ipv4(10, b, c, 254);
		switch_of_[name] = sw;
		if (dpdk_) {
			add_dpdk_host(name, role, sw, addr, gateway, host_mac(b, c, 0x01), host_mac(b, c, 0xfe), link,
				      bottleneck);
			return;
		}
		plan_.nodes.push_back({name, testbed_netns(plan_.testbed, name), false, role, addr});
		add_common_sysctls(name, {});
		add_link({sw, name, cidr(gateway, 24), ""}, {name, "eth0", cidr(addr, 24), ""}, link, bottleneck);
		plan_.routes.push_back({name, "default", {{gateway, "eth0"}}});
	}

	// A link between two switches: each side's device is named after the other.
	void add_fabric_link(const std::string &x, const std::string &x_cidr, const std::string &y,
			     const std::string &y_cidr, const LinkSpec &link, bool bottleneck)
	{
		add_link({x, y, x_cidr, ""}, {y, x, y_cidr, ""}, link, bottleneck);
	}

	void add_route(const std::string &node, const std::string &dest, std::vector<PlanNexthop> nexthops)
	{
		plan_.routes.push_back({node, dest, std::move(nexthops)});
	}

	// DPDK hosts have no IP stack to answer a ping: the RTT is measured
	// from the first host's switch to the second's gateway address.
	void measure_rtt(const std::string &from, const std::string &to)
	{
		plan_.rtt_from = from;
		plan_.rtt_to = to;
		if (!dpdk_)
			return;
		plan_.rtt_switch = switch_of_.at(from);
		for (const auto &n : plan_.neighbours) {
			const std::string gateway = n.addr.substr(0, n.addr.rfind('.')) + ".254";
			if (n.dev == to)
				plan_.rtt_addr = gateway;
			if (n.dev == from)
				plan_.rtt_source = gateway;
		}
	}

	// A rotor switch: a node with no addresses whose devices, one per
	// host, the rotor program forwards between (rotor_switch.bpf.c).
	void add_rotor(const std::string &name)
	{
		plan_.nodes.push_back({name, testbed_netns(plan_.testbed, name), true, "rotor", ""});
		add_common_sysctls(name, {});
		plan_.rotor_node = name;
	}

	// A host on the rotor's subnet 10.0.0.0/24 (node index i: 10.0.0.<i+1>,
	// MAC 02:4c:00:00:00:<i+1>); its circuit link is not an INT port.
	void add_rotor_host(const std::string &name, std::uint32_t index)
	{
		const std::string addr = ipv4(10, 0, 0, index + 1);
		plan_.nodes.push_back({name, testbed_netns(plan_.testbed, name), false, "host", addr});
		add_common_sysctls(name, {});
		plan_.links.push_back({{plan_.rotor_node, name, "", ""},
				       {name, "eth0", cidr(addr, 24), host_mac(0, 0, index + 1)},
				       LinkSpec{},
				       false,
				       ""});
		plan_.rotor_ports.push_back({name, index});
		plan_.rotor_addrs.push_back((10u << 24) | (index + 1));
	}

	// Every rotor host knows every other's MAC: ARP cannot cross circuits.
	void add_rotor_neighbours()
	{
		for (const auto &[a, i] : plan_.rotor_ports)
			for (const auto &[b, j] : plan_.rotor_ports)
				if (i != j)
					plan_.neighbours.push_back(
						{a, ipv4(10, 0, 0, j + 1), host_mac(0, 0, j + 1), "eth0"});
	}

	TestbedPlan take()
	{
		return std::move(plan_);
	}

      private:
	// IPv6 off: no router solicitations or neighbour discovery in the
	// switch queues and counters, only the experiment's IPv4 traffic.
	void add_common_sysctls(const std::string &node, std::vector<std::string> sysctls)
	{
		sysctls.push_back("net.ipv6.conf.all.disable_ipv6=1");
		sysctls.push_back("net.ipv6.conf.default.disable_ipv6=1");
		plan_.sysctls.emplace_back(node, std::move(sysctls));
	}

	static std::string host_mac(std::uint32_t b, std::uint32_t c, std::uint32_t last)
	{
		char mac[18];
		std::snprintf(mac, sizeof(mac), "02:4c:00:%02x:%02x:%02x", b & 0xff, c & 0xff, last & 0xff);
		return mac;
	}

	// A DPDK host: its end of the link is a device named after it in the
	// shared node "dpdk", without an address; its switch knows its MAC.
	void add_dpdk_host(const std::string &name, const std::string &role, const std::string &sw,
			   const std::string &addr, const std::string &gateway, const std::string &mac,
			   const std::string &gateway_mac, const LinkSpec &link, bool bottleneck)
	{
		const std::string netns = testbed_netns(plan_.testbed, kDpdkNode);
		if (plan_.dpdk_hosts.empty()) {
			plan_.nodes.push_back({kDpdkNode, netns, false, "dpdk", ""});
			add_common_sysctls(kDpdkNode, {"net.ipv4.conf.all.forwarding=0"});
		}
		add_link({sw, name, cidr(gateway, 24), gateway_mac}, {kDpdkNode, name, "", mac}, link, bottleneck);
		plan_.dpdk_hosts.push_back({name, netns, addr, role, name, mac, gateway_mac});
		plan_.neighbours.push_back({sw, addr, mac, name});
	}

	bool is_switch(const std::string &node) const
	{
		for (const auto &n : plan_.nodes)
			if (n.name == node)
				return n.is_switch;
		return false;
	}

	// The node in the middle of a delayed link; "" when it has no delay.
	std::string add_delay_node(const PlanEnd &a, const PlanEnd &b, const LinkSpec &link)
	{
		if (link.delay_ns == 0)
			return "";
		const std::string name = "dl-" + a.node + "-" + b.node;
		plan_.nodes.push_back({name, testbed_netns(plan_.testbed, name), false, "delay", ""});
		add_common_sysctls(name, {});
		plan_.delay_lines.push_back(
			{name, a.node + "-" + b.node, a.node, b.node, link.delay_ns, delay_queue_bytes(link)});
		return name;
	}

	// Every switch side of a link is an egress port towards the other side;
	// its veth peer is the other side's device, or the delay node's.
	void add_link(const PlanEnd &a, const PlanEnd &b, const LinkSpec &link, bool bottleneck)
	{
		const std::string delay_node = add_delay_node(a, b, link);
		plan_.links.push_back({a, b, link, bottleneck, delay_node});
		for (const auto &[from, to] : {std::pair{a, b}, std::pair{b, a}}) {
			if (!is_switch(from.node))
				continue;
			TestbedPort p;
			p.name = from.node + "->" + (to.node == kDpdkNode ? to.dev : to.node);
			p.dev = from.dev;
			p.netns = testbed_netns(plan_.testbed, from.node);
			p.peer = delay_node.empty() ? to.dev : from.node;
			p.peer_netns = testbed_netns(plan_.testbed, delay_node.empty() ? to.node : delay_node);
			p.rate_mbps = link.rate_mbps;
			p.bottleneck = bottleneck;
			plan_.ports.push_back({p, link});
		}
	}

	static constexpr const char *kDpdkNode = "dpdk";
	bool dpdk_;
	std::map<std::string, std::string> switch_of_; // host -> its switch
	TestbedPlan plan_;
};

TestbedPlan plan_dumbbell(const TopologySpec &spec)
{
	PlanBuilder b(spec.name, spec.dpdk_hosts);
	b.add_switch("sw1", {});
	b.add_switch("sw2", {});
	b.add_fabric_link("sw1", "10.0.0.1/30", "sw2", "10.0.0.2/30", spec.bottleneck, true);
	for (std::uint32_t i = 1; i <= spec.senders; i++)
		b.add_host(indexed("s", i), "sender", "sw1", 1, i, spec.host_link, false);
	for (std::uint32_t j = 1; j <= spec.receivers; j++)
		b.add_host(indexed("r", j), "receiver", "sw2", 2, j, spec.host_link, false);
	b.add_route("sw1", "10.2.0.0/16", {{"10.0.0.2", "sw2"}});
	b.add_route("sw2", "10.1.0.0/16", {{"10.0.0.1", "sw1"}});
	b.measure_rtt("s1", "r1");
	return b.take();
}

TestbedPlan plan_incast(const TopologySpec &spec)
{
	PlanBuilder b(spec.name, spec.dpdk_hosts);
	b.add_switch("sw", {});
	for (std::uint32_t i = 1; i <= spec.senders; i++)
		b.add_host(indexed("s", i), "sender", "sw", 1, i, spec.host_link, false);
	b.add_host("r1", "receiver", "sw", 2, 1, spec.bottleneck, true);
	b.measure_rtt("s1", "r1");
	return b.take();
}

std::string leaf_name(std::uint32_t l)
{
	return "leaf" + str(l);
}

std::string spine_name(std::uint32_t s)
{
	return "spine" + str(s);
}

TestbedPlan plan_leafspine(const TopologySpec &spec)
{
	PlanBuilder b(spec.name, spec.dpdk_hosts);
	// leaves hash forwarded flows on their L4 ports (policy 1), so the
	// flows between two hosts spread over the spines
	for (std::uint32_t l = 1; l <= spec.leaves; l++)
		b.add_switch(leaf_name(l), {"net.ipv4.fib_multipath_hash_policy=1"});
	for (std::uint32_t s = 1; s <= spec.spines; s++)
		b.add_switch(spine_name(s), {});
	for (std::uint32_t l = 1; l <= spec.leaves; l++)
		for (std::uint32_t s = 1; s <= spec.spines; s++)
			b.add_fabric_link(leaf_name(l), cidr(ipv4(10, 100 + s, l, 1), 24), spine_name(s),
					  cidr(ipv4(10, 100 + s, l, 2), 24), spec.fabric_link, false);
	for (std::uint32_t l = 1; l <= spec.leaves; l++)
		for (std::uint32_t i = 1; i <= spec.hosts_per_leaf; i++)
			b.add_host(indexed("h", l) + indexed("_", i), "host", leaf_name(l), l, i, spec.host_link,
				   false);
	for (std::uint32_t l = 1; l <= spec.leaves; l++) {
		for (std::uint32_t m = 1; m <= spec.leaves; m++) {
			if (m == l)
				continue;
			std::vector<PlanNexthop> over_every_spine;
			for (std::uint32_t s = 1; s <= spec.spines; s++)
				over_every_spine.push_back({ipv4(10, 100 + s, l, 2), spine_name(s)});
			b.add_route(leaf_name(l), ipv4(10, m, 0, 0) + "/16", over_every_spine);
		}
	}
	for (std::uint32_t s = 1; s <= spec.spines; s++)
		for (std::uint32_t l = 1; l <= spec.leaves; l++)
			b.add_route(spine_name(s), ipv4(10, l, 0, 0) + "/16",
				    {{ipv4(10, 100 + s, l, 1), leaf_name(l)}});
	b.measure_rtt("h1_1", "h2_1");
	return b.take();
}

// Hosts h1..hN on one circuit switch; no routes (one subnet), no base
// RTT (a ping's reply waits for its own circuit).
TestbedPlan plan_rotor(const TopologySpec &spec)
{
	PlanBuilder b(spec.name, false);
	b.add_rotor("rotor");
	for (std::uint32_t i = 0; i < spec.nodes; i++)
		b.add_rotor_host(indexed("h", i + 1), i);
	b.add_rotor_neighbours();
	return b.take();
}

} // namespace

std::string testbed_netns_prefix(const std::string &testbed)
{
	return "lt-" + testbed + "-";
}

std::string testbed_netns(const std::string &testbed, const std::string &node)
{
	return testbed_netns_prefix(testbed) + node;
}

std::uint64_t delay_queue_bytes(const LinkSpec &link)
{
	const std::uint64_t carried = std::uint64_t(link.rate_mbps) * link.delay_ns / 8000; // Mbit/s x ns / 8 / 1e3
	return std::min<std::uint64_t>(2 * carried + (4u << 20), 64u << 20);
}

std::uint32_t topology_port_count(const TopologySpec &spec)
{
	switch (spec.kind) {
	case TopologyKind::Dumbbell:
		return spec.senders + spec.receivers + 2;
	case TopologyKind::Incast:
		return spec.senders + 1;
	case TopologyKind::LeafSpine:
		return spec.leaves * spec.hosts_per_leaf + 2 * spec.leaves * spec.spines;
	case TopologyKind::Rotor:
		return 0; /* circuits, no INT switch ports */
	}
	return 0;
}

TestbedPlan plan_testbed(const TopologySpec &spec)
{
	validate_topology(spec);
	switch (spec.kind) {
	case TopologyKind::Dumbbell:
		return plan_dumbbell(spec);
	case TopologyKind::Incast:
		return plan_incast(spec);
	case TopologyKind::LeafSpine:
		return plan_leafspine(spec);
	case TopologyKind::Rotor:
		return plan_rotor(spec);
	}
	throw Error("unknown topology kind");
}

const PlanNode &TestbedPlan::node(const std::string &name) const
{
	for (const auto &n : nodes)
		if (n.name == name)
			return n;
	throw Error("testbed " + testbed + " has no node '" + name + "'");
}

std::vector<TestbedHost> TestbedPlan::hosts() const
{
	std::vector<TestbedHost> out;
	if (!dpdk_hosts.empty())
		return dpdk_hosts;
	for (const auto &n : nodes)
		if (!n.is_switch && n.role != "delay")
			out.push_back({n.name, n.netns, n.addr, n.role, "eth0", "", ""});
	return out;
}

std::vector<TestbedPort> TestbedPlan::testbed_ports() const
{
	std::vector<TestbedPort> out;
	for (const auto &p : ports)
		out.push_back(p.port);
	return out;
}

} // namespace lumen
