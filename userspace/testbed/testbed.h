// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/testbed/testbed.h - network-namespace testbeds built from a small
// declarative description: a dumbbell, an N:1 incast star and a 2-tier
// leaf-spine with ECMP. Every switch egress port is a software INT switch
// port (`lumen switch attach`): a tbf at the link rate with an exact queue,
// tail drop at the buffer, optional ECN marking and INT stamping.
//
// Creation is atomic: every step is journalled (to memory and to a state
// file under /run/lumen/testbeds) before it is done, and a failure, an
// exception or a signal tears down exactly what was created, newest first.
// `lumen testbed down NAME` replays the state file of a testbed whose
// creator died. Teardown also restores every sysctl the testbed changed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace lumen
{

// One class of links. Rates in Mbit/s; 0 ecn_threshold = no ECN marking.
struct LinkSpec {
	std::uint32_t rate_mbps = 1000;
	std::uint64_t buffer_bytes = 1 << 20;
	std::uint64_t ecn_threshold_bytes = 0;
	bool int_enabled = true;
	std::uint64_t delay_ns = 0; // extra one-way delay on the link, emulated without netem
};

enum class TopologyKind {
	Dumbbell,
	Incast,
	LeafSpine,
	Rotor
};

// The declarative description: parse_topology() reads it from JSON text,
// topology_from_args() from `lumen testbed up --topology ... ` flags.
struct TopologySpec {
	std::string name = "lumen"; // [a-z0-9]{1,8}: namespaces are "lt-<name>-<node>"
	TopologyKind kind = TopologyKind::Dumbbell;
	// dumbbell: `senders` hosts on the left switch, `receivers` on the right,
	// one bottleneck link between the switches; incast: `senders` hosts and
	// one receiver on one switch, the bottleneck is the receiver's port
	std::uint32_t senders = 2;
	std::uint32_t receivers = 1;
	// leafspine: `leaves` leaf switches with `hosts_per_leaf` hosts each,
	// every leaf linked to every one of `spines` spine switches; leaves
	// spread traffic to other leaves over all spines by ECMP (multipath
	// routes, L4 hash)
	std::uint32_t leaves = 2;
	std::uint32_t spines = 2;
	std::uint32_t hosts_per_leaf = 2;
	LinkSpec host_link; // host <-> its switch (and the incast receiver's port)
	LinkSpec bottleneck; // dumbbell: switch <-> switch; incast: switch -> receiver
	LinkSpec fabric_link; // leafspine: leaf <-> spine
	// "host_stack": "kernel" (default): each host is a namespace with an
	// address and the kernel's TCP/IP; "dpdk": the hosts' ends of their
	// links are devices without addresses in one namespace
	// ("lt-<name>-dpdk"), named after the hosts and with fixed MACs, for a
	// userspace stack (lumen-dp over net_af_packet) to send and receive on;
	// each switch has a permanent neighbour entry for its DPDK hosts (nothing
	// answers ARP for them)
	bool dpdk_hosts = false;
	// rotor: `nodes` hosts h1..hN on one subnet, each linked to an emulated
	// optical circuit switch (bpf/rotor_switch.bpf.c) that forwards a frame
	// only while the schedule connects its source and destination: the
	// schedule file `schedule` (lumen sched; its nodes must be `nodes`), or
	// else round robin with slots of slot_ns and guards of guard_ns,
	// starting at the period boundary before the testbed comes up. Hosts
	// know each other's MAC (no ARP through circuits).
	std::uint32_t nodes = 4;
	std::uint64_t slot_ns = 1'000'000;
	std::uint64_t guard_ns = 100'000;
	std::string schedule_file;
};

// Throws UsageError naming the bad key (JSON path) and the accepted values;
// unknown keys are refused too.
TopologySpec parse_topology(const std::string &json_text);
std::string topology_to_json(const TopologySpec &spec);

struct Args;
// The same description from `lumen testbed up` flags (--topology, --name,
// --senders, --rate, ...); throws UsageError like parse_topology().
TopologySpec topology_from_args(const Args &args);
// Checks ranges and combinations (both parsers call it; so does create()).
void validate_topology(const TopologySpec &spec);
const char *topology_kind_name(TopologyKind kind); // "dumbbell", "incast", "leafspine", "rotor"

struct TestbedHost {
	std::string name; // "s1", "r1", "h3" (leafspine: h<leaf>_<i>)
	std::string netns; // ip netns name
	std::string addr; // IPv4 address, dotted
	std::string role; // "sender", "receiver" or "host" (leafspine)
	// DPDK hosts (TopologySpec::dpdk_hosts): the device in `netns` that is
	// the host, its MAC and the MAC of its gateway (the switch's end)
	std::string dev, mac, gateway_mac;
};

// A switch egress port with the INT switch attached (int or not, it always
// has the exact queue and the statistics).
struct TestbedPort {
	std::string name; // "sw1->r1"
	std::string dev, netns; // egress device and its namespace
	std::string peer, peer_netns; // the veth peer (where dequeue is counted)
	std::uint32_t port_id = 0; // index into the switch's statistics map
	std::uint32_t rate_mbps = 0;
	bool bottleneck = false; // the port the topology is about (dumbbell/incast)
};

class Testbed
{
      public:
	// Builds the testbed; on any failure tears down what it built and
	// throws Error. Prints one progress line per stage to stderr.
	static Testbed create(const TopologySpec &spec);
	// Tears down a testbed by name from its state file (another process
	// created it, maybe one that crashed). Returns false if none exists.
	static bool destroy_by_name(const std::string &name);
	static std::vector<std::string> list(); // names with a state file
	// A complete testbed another process created (`lumen testbed up`), to
	// spawn processes in; the object does not own it (released: its
	// destructor leaves it up). Throws Error if there is none.
	static Testbed open(const std::string &name);

	Testbed(Testbed &&) noexcept;
	Testbed &operator=(Testbed &&) noexcept;
	Testbed(const Testbed &) = delete;
	Testbed &operator=(const Testbed &) = delete;
	~Testbed(); // destroy() unless released

	void destroy(); // idempotent; restores everything, removes the state file
	void release(); // keep it after this object dies (`lumen testbed up`)

	const TopologySpec &spec() const;
	const std::vector<TestbedHost> &hosts() const;
	std::vector<TestbedHost> with_role(const std::string &role) const;
	const std::vector<TestbedPort> &ports() const;
	// The cgroup v2 directory every process of the testbed runs in (the
	// INT sockops program attaches here).
	const std::string &cgroup() const;
	// Minimum ping RTT first sender -> first receiver (leafspine: between
	// hosts on different leaves), measured after setup, idle network.
	std::uint64_t base_rtt_ns() const;

	// Starts argv in a host: joins the testbed's cgroup and the host's
	// network namespace, stdout (and stderr) to the given files ("" =
	// inherit), stdin from `stdin_fd` (-1 = inherit). Returns the pid; the
	// caller waits for it.
	pid_t spawn(const TestbedHost &host, const std::vector<std::string> &argv, const std::string &stdout_path = "",
		    const std::string &stderr_path = "", int stdin_fd = -1) const;

	struct State; // testbed.cpp

      private:
	explicit Testbed(State *state);
	State *state_ = nullptr;
};

// The delay line of a delayed link (`lumen delayline` in the namespace in
// the middle of the link) and its last counters (its stats file, 0.5 s old
// at most).
struct TestbedDelayLine {
	struct Direction {
		std::string from, to; // the delay node's devices (named after the nodes they face)
		std::uint64_t frames_in = 0, frames_out = 0, bytes_out = 0;
		std::uint64_t dropped_full = 0, dropped_oversize = 0, send_errors = 0;
		std::uint64_t queue_max_bytes = 0, queue_capacity = 0;
	};
	std::string link; // "sw1-sw2"
	std::string netns;
	std::uint64_t delay_ns = 0; // each direction
	pid_t pid = 0;
	bool running = false;
	std::string state; // what the daemon last said: "running", "stopped: ..."
	double cpu_s = 0; // user + system
	std::vector<Direction> directions;
};

// What the state file of a testbed says (`lumen testbed status`).
struct TestbedStatus {
	std::string name;
	TopologySpec spec;
	std::string state; // "up", "up, in use by pid N", "being created by pid N", "incomplete ..."
	bool complete = false;
	std::vector<TestbedHost> hosts; // complete testbeds only
	std::vector<TestbedPort> ports;
	std::string cgroup;
	std::uint64_t base_rtt_ns = 0;
	std::uint64_t setup_ns = 0; // how long `up` took
	std::uint32_t netns_expected = 0, netns_present = 0; // journalled namespaces / still there
	std::vector<TestbedDelayLine> delay_lines;
	std::string schedule_path; // rotor: the schedule the rotor switch follows
};
// nullopt when no testbed of that name is recorded.
std::optional<TestbedStatus> testbed_status(const std::string &name);

} // namespace lumen
