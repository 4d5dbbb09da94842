// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/testbed/testbed_plan.h - what a testbed consists of, computed from
// its TopologySpec without touching the system: nodes (one network
// namespace each), veth links with their addresses, INT switch ports,
// routes and per-namespace sysctls. Testbed::create() carries the plan out;
// the unit tests check it (port counts, unique addresses, routes).
//
// Addressing (IPv4; every testbed has its own namespaces, so testbeds may
// use the same addresses):
//   dumbbell   sender i    10.1.i.1/24, its gateway 10.1.i.254 on sw1
//              receiver j  10.2.j.1/24, its gateway 10.2.j.254 on sw2
//              sw1 <-> sw2 10.0.0.1/30 <-> 10.0.0.2/30 (the bottleneck)
//   incast     as the dumbbell, one switch "sw", one receiver r1
//   leafspine  host h<l>_<i> 10.l.i.1/24, gateway 10.l.i.254 on leaf<l>
//   rotor      host h<i> 10.0.0.i/24, MAC 02:4c:00:00:00:<i>, on the rotor
//              switch's device h<i> (no address: the rotor program forwards)
//   DPDK hosts (host_stack "dpdk"): the same addresses, used by the DPDK
//              stack; the host device "<host>" in node "dpdk" has MAC
//              02:4c:00:<b>:<c>:01 and its gateway 02:4c:00:<b>:<c>:fe,
//              for host address 10.b.c.1 (in hex)
//              leaf<l> <-> spine<s>  10.(100+s).l.1/24 <-> 10.(100+s).l.2/24
//              leaf<l> reaches 10.m.0.0/16 (m != l) over every spine:
//              one multipath route, hashed on L4 ports
// A host's device is eth0; a switch's device towards node X is named X
// ("s1", "sw2", "h2_3", "spine1", "leaf4").
//
// A link with a delay gets a delay node "dl-<a>-<b>" in its middle: two veth
// pairs a <-> dl <-> b instead of one, the dl side of each named after the
// node it faces, no addresses, and `lumen delayline` forwarding between
// them. The switch ports of the link keep their device; their veth peer
// (where the INT switch counts the dequeue and fills INT) is in the delay
// node, so the delay line holds frames after the switch queue has let them
// go and the queue accounting does not see the delay.
#pragma once

#include "testbed/testbed.h"

#include <string>
#include <utility>
#include <vector>

namespace lumen
{

struct PlanNode {
	std::string name; // "s1", "sw1", "h2_3", "leaf1"
	std::string netns; // "lt-<testbed>-<name>"
	bool is_switch = false;
	std::string role; // hosts: "sender", "receiver", "host"; switches: "switch"; delay nodes: "delay"
	std::string addr; // hosts: their IPv4 address; switches: ""
};

struct PlanEnd {
	std::string node; // PlanNode::name
	std::string dev; // device name in the node's namespace
	std::string cidr; // "10.1.1.1/24"; "" = no address (a DPDK host)
	std::string mac; // "" = the kernel's choice
};

// A permanent neighbour entry: `node` reaches `addr` at `mac` through `dev`.
struct PlanNeighbour {
	std::string node, addr, mac, dev;
};

struct PlanLink {
	PlanEnd a, b;
	LinkSpec spec;
	bool bottleneck = false;
	std::string delay_node; // "" = a direct veth pair; else the delay node in the middle
};

// The delay line of one delayed link: runs in `node`, between dev_a (the
// veth end facing link end a, named after a's node) and dev_b.
struct PlanDelayLine {
	std::string node; // "dl-sw1-sw2"
	std::string link; // "sw1-sw2"
	std::string dev_a, dev_b;
	std::uint64_t delay_ns = 0; // each direction
	std::uint64_t queue_bytes = 0; // each direction: delay_queue_bytes()
};

// A switch egress port: TestbedPort (port_id 0 until attached) plus the
// link class it was configured from.
struct PlanPort {
	TestbedPort port;
	LinkSpec link;
};

struct PlanNexthop {
	std::string via; // gateway address
	std::string dev;
};

struct PlanRoute {
	std::string node;
	std::string dest; // "default" or "10.2.0.0/16"
	std::vector<PlanNexthop> nexthops; // more than one = ECMP
};

struct TestbedPlan {
	std::string testbed; // TopologySpec::name
	std::vector<PlanNode> nodes; // switches first, then hosts
	std::vector<PlanLink> links;
	std::vector<PlanPort> ports;
	std::vector<PlanRoute> routes;
	std::vector<PlanDelayLine> delay_lines;
	// sysctl "key=value" settings per node, applied before its links exist
	std::vector<std::pair<std::string, std::vector<std::string>>> sysctls;
	std::string rtt_from, rtt_to; // host names the base RTT is measured between
	// DPDK hosts: the hosts (they are no nodes: their devices share the
	// node "dpdk"), the switches' neighbour entries for them, and the base
	// RTT between the switches of rtt_from and rtt_to instead (from
	// rtt_switch to rtt_addr, the gateway address of rtt_to)
	std::vector<TestbedHost> dpdk_hosts;
	std::vector<PlanNeighbour> neighbours;
	std::string rtt_switch, rtt_addr;
	std::string rtt_source; // rtt_from's gateway address: the replies' route back
	// rotor: the rotor switch's node, its ports (device, node index: the
	// devices are named after the hosts) and the hosts' addresses by node
	// index (host byte order); "" / empty for other topologies
	std::string rotor_node;
	std::vector<std::pair<std::string, std::uint32_t>> rotor_ports;
	std::vector<std::uint32_t> rotor_addrs;

	const PlanNode &node(const std::string &name) const; // throws Error if unknown
	std::vector<TestbedHost> hosts() const; // not the delay nodes
	std::vector<TestbedPort> testbed_ports() const;
};

std::string testbed_netns(const std::string &testbed, const std::string &node);
std::string testbed_netns_prefix(const std::string &testbed); // "lt-<name>-"
// Number of INT switch ports the topology needs (at most LUMEN_SWITCH_MAX_PORTS).
std::uint32_t topology_port_count(const TopologySpec &spec);
TestbedPlan plan_testbed(const TopologySpec &spec);
// Bound of each direction's delay queue on a link: twice what the link
// carries in one delay (rate x delay) plus 4 MiB for bursts (a host's
// egress is not shaped), at most 64 MiB.
std::uint64_t delay_queue_bytes(const LinkSpec &link);

} // namespace lumen
