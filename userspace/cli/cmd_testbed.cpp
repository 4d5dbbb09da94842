// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/cli/cmd_testbed.cpp - `lumen testbed`: build a namespace
// testbed from a description (testbed.h), tear it down, show its state.
#include "base/args.h"
#include "base/error.h"
#include "base/interrupt.h"
#include "base/system.h"
#include "base/units.h"
#include "cli/commands.h"
#include "testbed/testbed.h"
#include "testbed/testbed_plan.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <sys/wait.h>

namespace lumen
{
namespace
{

using nlohmann::json;

const char kUsage[] =
	R"(usage: lumen testbed up FILE.json [--name N] [--json]
       lumen testbed up --topology dumbbell|incast|leafspine|rotor [--name N]
                        [--senders N] [--receivers N] [--leaves N] [--spines N]
                        [--hosts-per-leaf N] [--rate R] [--host-rate R] [--fabric-rate R]
                        [--buffer B] [--ecn-threshold B] [--no-int] [--delay D]
                        [--host-stack kernel|dpdk] [--nodes N] [--slot D] [--guard D]
                        [--schedule FILE] [--json]
       lumen testbed down (NAME | --all)
       lumen testbed status [NAME] [--json]
       lumen testbed exec NAME HOST [--] COMMAND [ARG...]

Network-namespace testbeds with the software INT switch ('lumen switch') on
every switch egress port. Each node is a namespace "lt-<name>-<node>"; hosts
have eth0, a switch's device towards node X is named X. Veth offloads are off
(MTU-sized packets) and RPS spreads flows over the CPUs (each flow in order on
one). Every process of the testbed belongs to the cgroup v2
directory "lt-<name>". The format of FILE.json, the addressing and the
examples are in docs/testbeds.md and testbeds/*.json.

up
  Builds the testbed and leaves it up; prints its hosts (name, namespace,
  address, role), its switch ports and the base RTT (minimum of 8 pings,
  idle network; leafspine: between hosts on different leaves).
  --topology KIND      dumbbell: --senders hosts (default 2) on switch sw1,
                       --receivers hosts (default 1) on sw2, the bottleneck
                       sw1 <-> sw2 between them.
                       incast: --senders hosts and one receiver r1 on switch
                       sw; the bottleneck is the port sw -> r1.
                       leafspine: --leaves (2..8, default 2) with
                       --hosts-per-leaf (1..16, default 2) hosts each, every
                       leaf linked to every one of --spines (1..4, default 2);
                       a leaf spreads flows to other leaves over all spines
                       (ECMP, hashed on L4 ports).
                       rotor: --nodes hosts h1..hN (2..64, default 4) on
                       one emulated optical circuit switch that forwards a
                       frame only while the schedule connects its source
                       and destination: --schedule FILE (lumen sched), or
                       round robin with --slot (1ms) and --guard (100us);
                       no base RTT (docs/optical.md)
  --name N             1 to 8 of a-z, 0-9 (default: lumen; with FILE.json,
                       overrides the file's name)
  --rate R             dumbbell/incast: the bottleneck rate; leafspine: every
                       link (1mbit .. 100gbit, default 1gbit)
  --host-rate R        host links (default: as fast as --rate). Host egress
                       is not shaped, so dumbbell/incast host links must be
                       at least as fast as the bottleneck.
  --fabric-rate R      leafspine: leaf <-> spine links (default: --rate)
  --buffer B           switch buffer of every port (default 1m, tail drop)
  --ecn-threshold B    CE-mark above B on every port (default 0 = off)
  --no-int             ports do not fill INT options
  --delay D            extra one-way delay of every link (0 = none, or
                       1us .. 1s): a delay line ('lumen delayline') in a
                       namespace in the middle of each link; see
                       docs/testbeds.md for its cost and limits
  --host-stack S       kernel (default): hosts are namespaces with
                       addresses; dpdk: the hosts' devices, without
                       addresses and with fixed MACs, share the namespace
                       "lt-<name>-dpdk" for lumen-dp (net_af_packet); the
                       switches know their MACs (docs/testbeds.md)
  --json               print the result as one JSON object
  The INT switch needs at most 64 ports in all (dumbbell: senders +
  receivers + 2, incast: senders + 1, leafspine: leaves x hosts-per-leaf +
  2 x leaves x spines), shared with every other switch user.
  Creation is atomic: each object is journalled in
  /run/lumen/testbeds/<name>.json before it is created; a failure or Ctrl-C
  tears down what was built, newest first. A name in use is refused.
  LUMEN_TESTBED_FAIL_AT=N makes step N fail (for tests).

down
  Tears a testbed down from its state file (also when its creator was
  killed): kills the processes in its namespaces and cgroup, detaches its
  switch ports, deletes its namespaces and cgroup, removes the state file.
  Refused while the process that created it still holds it. --all: every
  recorded testbed.

exec
  Runs COMMAND in host HOST of testbed NAME: in its network namespace and
  the testbed's cgroup (like the experiment runner's processes; /sys still
  shows the caller's namespace). Exits with the command's status.

status
  Without NAME: one line per recorded testbed. With NAME: its hosts and
  ports. --json prints {"testbeds": [...]} (or the one testbed's object).
)";

// ---------------------------------------------------------------------
// output

std::string fmt_bytes(std::uint64_t b)
{
	char buf[32];
	if (b >= (1u << 20) && b % (1u << 20) == 0)
		std::snprintf(buf, sizeof(buf), "%lluM", static_cast<unsigned long long>(b >> 20));
	else if (b >= 1024 && b % 1024 == 0)
		std::snprintf(buf, sizeof(buf), "%lluK", static_cast<unsigned long long>(b >> 10));
	else
		std::snprintf(buf, sizeof(buf), "%llu", static_cast<unsigned long long>(b));
	return buf;
}

std::string fmt_us(std::uint64_t ns)
{
	char buf[32];
	std::snprintf(buf, sizeof(buf), "%.1f us", double(ns) / 1e3);
	return buf;
}

// The link class a port was built from (buffer, ECN, INT are per link).
LinkSpec port_link(const TopologySpec &spec, const std::string &port_name)
{
	for (const auto &p : plan_testbed(spec).ports)
		if (p.port.name == port_name)
			return p.link;
	return {};
}

void print_table(const std::vector<std::vector<std::string>> &rows)
{
	std::vector<std::size_t> width;
	for (const auto &r : rows)
		for (std::size_t i = 0; i < r.size(); i++) {
			if (width.size() <= i)
				width.push_back(0);
			width[i] = std::max(width[i], r[i].size());
		}
	for (const auto &r : rows) {
		std::string line;
		for (std::size_t i = 0; i < r.size(); i++)
			line += r[i] + (i + 1 < r.size() ? std::string(width[i] - r[i].size() + 2, ' ') : "");
		line.erase(line.find_last_not_of(' ') + 1);
		std::printf("%s\n", line.c_str());
	}
}

void print_testbed(const TestbedStatus &s)
{
	std::printf("testbed %s: %s, %s; base RTT %s; setup %.2f s\n", s.name.c_str(), topology_kind_name(s.spec.kind),
		    s.state.c_str(), fmt_us(s.base_rtt_ns).c_str(), double(s.setup_ns) / 1e9);
	std::printf("cgroup %s\n", s.cgroup.c_str());
	if (!s.schedule_path.empty())
		std::printf("rotor switch schedule %s ('lumen rotor stats' counts its frames)\n",
			    s.schedule_path.c_str());
	std::printf("\n");
	std::vector<std::vector<std::string>> hosts = {{"HOST", "NETNS", "ADDRESS", "ROLE"}};
	if (s.spec.dpdk_hosts)
		hosts[0].insert(hosts[0].end(), {"DEVICE", "MAC", "GATEWAY MAC"});
	for (const auto &h : s.hosts) {
		hosts.push_back({h.name, h.netns, h.addr, h.role});
		if (s.spec.dpdk_hosts)
			hosts.back().insert(hosts.back().end(), {h.dev, h.mac, h.gateway_mac});
	}
	print_table(hosts);
	std::printf("\n");
	std::vector<std::vector<std::string>> ports = {
		{"PORT", "ID", "DEVICE", "NETNS", "RATE", "BUFFER", "ECN", "INT", ""}};
	for (const auto &p : s.ports) {
		LinkSpec l = port_link(s.spec, p.name);
		ports.push_back({p.name, std::to_string(p.port_id), p.dev, p.netns, format_rate_mbps(p.rate_mbps),
				 fmt_bytes(l.buffer_bytes),
				 l.ecn_threshold_bytes ? fmt_bytes(l.ecn_threshold_bytes) : "off",
				 l.int_enabled ? "on" : "off", p.bottleneck ? "bottleneck" : ""});
	}
	print_table(ports);
	if (s.delay_lines.empty())
		return;
	std::printf("\n");
	std::vector<std::vector<std::string>> lines = {{"DELAY LINE", "DELAY", "PID", "FROM->TO", "FRAMES IN", "OUT",
							"DROPPED", "QUEUE MAX", "CPU S", "STATE"}};
	for (const auto &d : s.delay_lines)
		for (const auto &dir : d.directions) {
			char cpu[32];
			std::snprintf(cpu, sizeof(cpu), "%.2f", d.cpu_s);
			lines.push_back({d.link, fmt_us(d.delay_ns), std::to_string(d.pid), dir.from + "->" + dir.to,
					 std::to_string(dir.frames_in), std::to_string(dir.frames_out),
					 std::to_string(dir.dropped_full + dir.dropped_oversize + dir.send_errors),
					 fmt_bytes(dir.queue_max_bytes), cpu, d.state});
		}
	print_table(lines);
}

json testbed_json(const TestbedStatus &s)
{
	json hosts = json::array(), ports = json::array();
	for (const auto &h : s.hosts) {
		hosts.push_back({{"name", h.name}, {"netns", h.netns}, {"addr", h.addr}, {"role", h.role}});
		if (!h.mac.empty()) {
			hosts.back()["dev"] = h.dev;
			hosts.back()["mac"] = h.mac;
			hosts.back()["gateway_mac"] = h.gateway_mac;
		}
	}
	for (const auto &p : s.ports)
		ports.push_back({{"name", p.name},
				 {"port_id", p.port_id},
				 {"dev", p.dev},
				 {"netns", p.netns},
				 {"peer", p.peer},
				 {"peer_netns", p.peer_netns},
				 {"rate_mbps", p.rate_mbps},
				 {"bottleneck", p.bottleneck}});
	json delay_lines = json::array();
	for (const auto &d : s.delay_lines) {
		json dirs = json::array();
		for (const auto &x : d.directions)
			dirs.push_back({{"from", x.from},
					{"to", x.to},
					{"frames_in", x.frames_in},
					{"frames_out", x.frames_out},
					{"bytes_out", x.bytes_out},
					{"dropped_full", x.dropped_full},
					{"dropped_oversize", x.dropped_oversize},
					{"send_errors", x.send_errors},
					{"queue_max_bytes", x.queue_max_bytes},
					{"queue_capacity", x.queue_capacity}});
		delay_lines.push_back({{"link", d.link},
				       {"netns", d.netns},
				       {"delay_ns", d.delay_ns},
				       {"pid", d.pid},
				       {"running", d.running},
				       {"state", d.state},
				       {"cpu_s", d.cpu_s},
				       {"directions", dirs}});
	}
	return json{{"name", s.name},
		    {"delay_lines", delay_lines},
		    {"topology", topology_kind_name(s.spec.kind)},
		    {"state", s.state},
		    {"complete", s.complete},
		    {"cgroup", s.cgroup},
		    {"base_rtt_ns", s.base_rtt_ns},
		    {"schedule", s.schedule_path},
		    {"setup_ns", s.setup_ns},
		    {"netns_expected", s.netns_expected},
		    {"netns_present", s.netns_present},
		    {"spec", json::parse(topology_to_json(s.spec))},
		    {"hosts", hosts},
		    {"ports", ports}};
}

// ---------------------------------------------------------------------
// subcommands

const std::vector<std::string> kTopologyFlags = {
	"--topology", "--senders",    "--receivers",   "--leaves", "--spines", "--hosts-per-leaf",
	"--rate",     "--host-rate",  "--fabric-rate", "--buffer", "--no-int", "--ecn-threshold",
	"--delay",    "--host-stack", "--nodes",       "--slot",   "--guard",  "--schedule"};

std::string read_description(const std::string &path)
{
	std::ifstream f(path);
	if (!f)
		throw UsageError("cannot read " + path);
	std::stringstream ss;
	ss << f.rdbuf();
	return ss.str();
}

TopologySpec spec_from_command_line(const Args &a)
{
	if (a.positional.size() > 2)
		throw UsageError("up takes at most one description file");
	if (a.positional.size() == 1)
		return topology_from_args(a);
	for (const auto &f : kTopologyFlags)
		if (a.has(f))
			throw UsageError(f + " cannot be combined with a description file (" + a.positional[1] +
					 " describes the topology)");
	TopologySpec spec;
	try {
		spec = parse_topology(read_description(a.positional[1]));
	} catch (const UsageError &e) {
		throw UsageError(a.positional[1] + ": " + e.what());
	}
	if (a.has("--name")) {
		spec.name = *a.get("--name");
		validate_topology(spec);
	}
	return spec;
}

int cmd_up(const Args &a)
{
	std::vector<std::string> known = kTopologyFlags;
	known.insert(known.end(), {"--name", "--json"});
	a.allow_only(known);
	const TopologySpec spec = spec_from_command_line(a);
	require_root();
	install_interrupt_handlers();
	const auto t0 = std::chrono::steady_clock::now();
	Testbed tb = Testbed::create(spec);
	tb.release();
	TestbedStatus s;
	s.name = spec.name;
	s.spec = spec;
	s.state = "up";
	s.complete = true;
	s.hosts = tb.hosts();
	s.ports = tb.ports();
	s.cgroup = tb.cgroup();
	s.base_rtt_ns = tb.base_rtt_ns();
	s.setup_ns = static_cast<std::uint64_t>(
		std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
	s.netns_expected = s.netns_present = static_cast<std::uint32_t>(plan_testbed(spec).nodes.size());
	if (a.has("--json"))
		std::printf("%s\n", testbed_json(s).dump(2).c_str());
	else
		print_testbed(s);
	return 0;
}

int cmd_down(const Args &a)
{
	a.allow_only({"--all"});
	const bool all = a.has("--all");
	if (all == (a.positional.size() == 2) || a.positional.size() > 2)
		throw UsageError("down takes one testbed NAME or --all");
	require_root();
	install_interrupt_handlers(); // a teardown always finishes
	if (!all) {
		const std::string &name = a.positional[1];
		if (!Testbed::destroy_by_name(name))
			throw Error("no testbed " + name + " (see 'lumen testbed status')");
		std::printf("testbed %s: down\n", name.c_str());
		return 0;
	}
	int failed = 0;
	for (const auto &name : Testbed::list()) {
		try {
			if (Testbed::destroy_by_name(name))
				std::printf("testbed %s: down\n", name.c_str());
		} catch (const Error &e) {
			std::fprintf(stderr, "lumen testbed: %s\n", e.what());
			failed++;
		}
	}
	return failed ? 1 : 0;
}

int cmd_status(const Args &a)
{
	a.allow_only({"--json"});
	if (a.positional.size() > 2)
		throw UsageError("status takes at most one testbed NAME");
	const bool as_json = a.has("--json");
	if (a.positional.size() == 2) {
		std::optional<TestbedStatus> s = testbed_status(a.positional[1]);
		if (!s)
			throw Error("no testbed " + a.positional[1] + " (see 'lumen testbed status')");
		if (as_json)
			std::printf("%s\n", testbed_json(*s).dump(2).c_str());
		else
			print_testbed(*s);
		return 0;
	}
	json all = json::array();
	std::vector<std::vector<std::string>> rows = {
		{"NAME", "TOPOLOGY", "HOSTS", "PORTS", "NETNS", "BASE RTT", "STATE"}};
	for (const auto &name : Testbed::list()) {
		std::optional<TestbedStatus> s = testbed_status(name);
		if (!s)
			continue;
		all.push_back(testbed_json(*s));
		rows.push_back({s->name, topology_kind_name(s->spec.kind), std::to_string(s->hosts.size()),
				std::to_string(s->ports.size()),
				std::to_string(s->netns_present) + "/" + std::to_string(s->netns_expected),
				s->complete ? fmt_us(s->base_rtt_ns) : "-", s->state});
	}
	if (as_json)
		std::printf("%s\n", json{{"testbeds", all}}.dump(2).c_str());
	else if (rows.size() == 1)
		std::printf("no testbed\n");
	else
		print_table(rows);
	return 0;
}

// exec takes its words raw: the command's own options are not lumen's.
int cmd_exec(const std::vector<std::string> &args)
{
	std::size_t first = 3;
	if (args.size() > first && args[first] == "--")
		first++;
	if (args.size() <= first)
		throw UsageError("exec takes NAME HOST [--] COMMAND [ARG...]");
	require_root();
	Testbed tb = Testbed::open(args[1]);
	const std::vector<TestbedHost> &hosts = tb.hosts();
	auto host = std::find_if(hosts.begin(), hosts.end(), [&](const TestbedHost &h) { return h.name == args[2]; });
	if (host == hosts.end()) {
		std::string names;
		for (const auto &h : hosts)
			names += (names.empty() ? "" : ", ") + h.name;
		throw UsageError("testbed " + args[1] + " has no host '" + args[2] + "' (hosts: " + names + ")");
	}
	pid_t pid = tb.spawn(*host, std::vector<std::string>(args.begin() + std::ptrdiff_t(first), args.end()));
	int status = 0;
	while (::waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			throw Error(std::string("waitpid: ") + std::strerror(errno));
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int run_testbed(const std::vector<std::string> &args)
{
	if (!args.empty() && args[0] == "exec")
		return cmd_exec(args);
	Args a = Args::parse(args, {"--no-int", "--all", "--json"});
	return run_subcommand<Args>(a.positional.empty() ? nullptr : &a.positional[0],
				    {{"up", cmd_up}, {"down", cmd_down}, {"status", cmd_status}}, a);
}

} // namespace

const Command kTestbedCommand = {"testbed", "namespace testbeds: dumbbell, incast, leaf-spine with INT switch ports",
				 kUsage, run_testbed};

} // namespace lumen
