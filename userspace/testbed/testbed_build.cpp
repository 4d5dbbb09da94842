// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/testbed/testbed_build.cpp - creating a testbed: cgroup,
// namespaces, veth links, addresses and routes, INT switch ports, delay
// lines and the base RTT, each step journalled before it runs (see
// testbed.cpp), with LUMEN_TESTBED_FAIL_AT to inject a failure after step N.
#include "testbed/testbed_internal.h"

#include "base/error.h"
#include "base/fd.h"
#include "base/interrupt.h"
#include "base/netns.h"
#include "base/ping.h"
#include "base/process.h"
#include "base/system.h"
#include "base/units.h"
#include "bpfctl/rotor.h"
#include "bpfctl/switch_port.h"
#include "sched/schedule.h"
#include "testbed/testbed_plan.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sstream>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern "C" {
#include "lumen/bpf_shared.h"
}

extern char **environ;

namespace lumen::testbed_detail
{

namespace
{

const std::vector<std::string> kOffloadsOff = {"tso", "off", "gso", "off", "gro", "off", "tx", "off", "rx", "off"};

// ---------------------------------------------------------------------
// creation

int parse_fail_at()
{
	const char *v = std::getenv(kFailAtEnv);
	if (!v || !*v)
		return 0;
	try {
		return static_cast<int>(parse_uint(v, kFailAtEnv, 1, 1000000));
	} catch (const UsageError &e) {
		throw Error(e.what());
	}
}

} // namespace

// Refuses to start when anything of that name is around already, or when
// the switch has too few free ports.
void check_nothing_exists(const TopologySpec &spec)
{
	if (path_exists(state_path(spec.name)))
		throw Error("testbed " + spec.name + " exists (" + state_path(spec.name) + "); 'lumen testbed down " +
			    spec.name + "' removes it");
	const std::string prefix = testbed_netns_prefix(spec.name);
	std::vector<std::string> stale = netns_with_prefix(prefix);
	if (!stale.empty())
		throw Error("network namespaces " + stale.front() + (stale.size() > 1 ? " and others" : "") +
			    " exist but no testbed " + spec.name + " is recorded; remove them ('ip netns del') first");
	if (path_exists(testbed_cgroup(spec.name)))
		throw Error("cgroup " + testbed_cgroup(spec.name) + " exists but no testbed " + spec.name +
			    " is recorded; remove it (rmdir) first");
	std::uint32_t used = 0;
	for (const auto &p : list_switch_ports()) {
		if (port_is_dead(p)) {
			std::fprintf(stderr, "testbed %s: removing dead switch port %u (%s in %s: %s)\n",
				     spec.name.c_str(), p.id, p.dev.c_str(), p.dev_netns.c_str(), p.state.c_str());
			std::string failure = detach_port(p);
			if (failure.empty())
				continue;
			std::fprintf(stderr, "testbed %s: %s\n", spec.name.c_str(), failure.c_str());
		}
		if (starts_with(p.dev_netns, prefix))
			throw Error("switch port " + std::to_string(p.id) + " is on " + p.dev + " in " + p.dev_netns +
				    ", a namespace of testbed " + spec.name +
				    " that is not recorded; 'lumen switch "
				    "detach --port-id " +
				    std::to_string(p.id) + "' first");
		used++;
	}
	const std::uint32_t need = topology_port_count(spec);
	if (used + need > LUMEN_SWITCH_MAX_PORTS)
		throw Error("the testbed needs " + std::to_string(need) + " INT switch ports but only " +
			    std::to_string(LUMEN_SWITCH_MAX_PORTS - used) + " of " +
			    std::to_string(LUMEN_SWITCH_MAX_PORTS) + " are free (see 'lumen switch stats')");
}

namespace
{

// One creation: journals into `doc` (and the state file), counts steps for
// LUMEN_TESTBED_FAIL_AT, and prints a progress line per stage.
class Creation
{
      public:
	Creation(const std::string &name, const std::string &exe, json doc)
	    : name_(name), exe_(exe), doc_(std::move(doc)), fail_at_(parse_fail_at())
	{
	}

	json &doc()
	{
		return doc_;
	}

	void save()
	{
		save_state(doc_);
	}

	// Records an object before it is created.
	void journal(json entry)
	{
		doc_["journal"].push_back(std::move(entry));
		save();
	}

	// One step: between steps a signal stops the creation; the injected
	// failure fires after step N was done, so its object must go too.
	void step(const std::string &what, const std::function<void()> &action)
	{
		throw_if_interrupted();
		action();
		if (++steps_ == fail_at_)
			throw Error("injected failure after step " + std::to_string(steps_) + " (" + what + ", " +
				    kFailAtEnv + ")");
	}

	std::string run(const std::vector<std::string> &argv, const std::string &input = "")
	{
		return run_or_throw(argv, input, [this](pid_t pid) {
			doc_["helper"] = process_identity(pid);
			save();
		});
	}

	void stage_begin(const std::string &what)
	{
		stage_ = what;
		stage_start_ = monotonic_ns();
	}

	void stage_end()
	{
		std::fprintf(stderr, "testbed %s: %s (%.2f s)\n", name_.c_str(), stage_.c_str(),
			     double(monotonic_ns() - stage_start_) / 1e9);
	}

	const std::string &exe() const
	{
		return exe_;
	}

	int steps() const
	{
		return steps_;
	}

      private:
	std::string name_, exe_;
	json doc_;
	int fail_at_;
	int steps_ = 0;
	std::string stage_;
	std::uint64_t stage_start_ = 0;
};

void create_cgroup(Creation &c, Testbed::State &st)
{
	c.stage_begin("cgroup " + st.cgroup);
	c.step("cgroup", [&] {
		c.journal({{"kind", "cgroup"}, {"path", st.cgroup}});
		c.doc()["cgroup"] = st.cgroup;
		if (::mkdir(st.cgroup.c_str(), 0755) != 0)
			throw Error("cannot create cgroup " + st.cgroup + ": " + errno_text(errno));
	});
	c.stage_end();
}

void create_namespaces(Creation &c, const TestbedPlan &plan)
{
	c.stage_begin(std::to_string(plan.nodes.size()) + " network namespaces with their sysctls");
	for (const auto &n : plan.nodes) {
		c.step("netns " + n.netns, [&] {
			c.journal({{"kind", "netns"}, {"name", n.netns}});
			c.run({"ip", "netns", "add", n.netns});
		});
	}
	for (const auto &entry : plan.sysctls) {
		// not a structured binding: clang before 16 cannot capture one
		const std::vector<std::string> &settings = entry.second;
		const std::string &ns = plan.node(entry.first).netns;
		c.step("sysctl in " + ns, [&] {
			std::vector<std::string> argv = {"ip", "netns", "exec", ns, "sysctl", "-q", "-w"};
			argv.insert(argv.end(), settings.begin(), settings.end());
			c.run(argv);
		});
	}
	c.stage_end();
}

// Every online CPU as a cpumask in sysfs' format (32-bit hex words, the
// most significant first, comma-separated).
std::string all_cpus_mask()
{
	const long n = std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN));
	std::string mask;
	for (long word = (n - 1) / 32; word >= 0; word--) {
		const long bits = std::min(32L, n - word * 32);
		char hex[32];
		std::snprintf(hex, sizeof(hex), "%lx", bits == 32 ? 0xffffffffUL : (1UL << bits) - 1);
		if (!mask.empty())
			mask += ',';
		mask += hex;
	}
	return mask;
}

// One veth pair between two namespaces, offloads off on both ends, and RPS
// on both ends' receive queues. Without RPS a veth delivers each packet into
// the receive backlog of the CPU that sent it, and a flow whose sender moves
// between CPUs (or whose packets a tbf releases from different CPUs) arrives
// reordered: the receiver's out-of-order queue, spurious retransmissions and
// window cuts, and INT echoes out of order. RPS hashes each flow to one CPU.
void create_veth(Creation &c, const std::string &ns_x, const std::string &dev_x, const std::string &ns_y,
		 const std::string &dev_y)
{
	c.run({"ip", "link", "add", "name", dev_x, "netns", ns_x, "type", "veth", "peer", "name", dev_y, "netns",
	       ns_y});
	const std::string cpus = all_cpus_mask();
	for (const auto &[ns, dev] : {std::pair{ns_x, dev_x}, std::pair{ns_y, dev_y}}) {
		std::vector<std::string> argv = {"ip", "netns", "exec", ns, "ethtool", "-K", dev};
		argv.insert(argv.end(), kOffloadsOff.begin(), kOffloadsOff.end());
		c.run(argv);
		c.run({"ip", "netns", "exec", ns, "sh", "-c",
		       "for q in /sys/class/net/" + dev + "/queues/rx-*; do echo " + cpus + " > $q/rps_cpus; done"});
	}
}

// Veth pairs are created directly in their namespaces and die with them. A
// delayed link is two pairs, a <-> delay node <-> b; the delay node's
// devices are named after the node they face.
void create_links(Creation &c, const TestbedPlan &plan)
{
	c.stage_begin(std::to_string(plan.links.size()) + " veth links, offloads off");
	for (const auto &l : plan.links) {
		const std::string &ns_a = plan.node(l.a.node).netns, &ns_b = plan.node(l.b.node).netns;
		c.step("link " + l.a.node + "-" + l.b.node, [&] {
			if (l.delay_node.empty()) {
				create_veth(c, ns_a, l.a.dev, ns_b, l.b.dev);
				return;
			}
			const std::string &ns_d = plan.node(l.delay_node).netns;
			create_veth(c, ns_a, l.a.dev, ns_d, l.a.node);
			create_veth(c, ns_d, l.b.node, ns_b, l.b.dev);
		});
	}
	c.stage_end();
}

// `ip -batch` lines bringing up a node's devices, addresses and routes.
std::string node_batch(const TestbedPlan &plan, const std::string &node)
{
	std::string batch = "link set lo up\n";
	for (const auto &l : plan.links)
		for (const PlanEnd *e : {&l.a, &l.b})
			if (e->node == node) {
				if (!e->mac.empty())
					batch += "link set " + e->dev + " address " + e->mac + "\n";
				batch += "link set " + e->dev + " up\n";
				if (!e->cidr.empty())
					batch += "addr add " + e->cidr + " dev " + e->dev + "\n";
			}
	for (const auto &n : plan.neighbours)
		if (n.node == node)
			batch += "neigh replace " + n.addr + " lladdr " + n.mac + " dev " + n.dev + " nud permanent\n";
	for (const auto &d : plan.delay_lines)
		if (d.node == node)
			batch += "link set " + d.dev_a + " up\nlink set " + d.dev_b + " up\n";
	for (const auto &r : plan.routes) {
		if (r.node != node)
			continue;
		batch += "route add " + r.dest;
		if (r.nexthops.size() == 1)
			batch += " via " + r.nexthops[0].via + " dev " + r.nexthops[0].dev;
		else
			for (const auto &nh : r.nexthops)
				batch += " nexthop via " + nh.via + " dev " + nh.dev;
		batch += "\n";
	}
	return batch;
}

void configure_nodes(Creation &c, const TestbedPlan &plan)
{
	c.stage_begin("addresses and routes");
	for (const auto &n : plan.nodes)
		c.step("addresses of " + n.name, [&] {
			c.run({"ip", "-n", n.netns, "-batch", "-"}, node_batch(plan, n.name));
		});
	c.stage_end();
}

void attach_ports(Creation &c, Testbed::State &st)
{
	c.stage_begin(std::to_string(st.plan.ports.size()) + " INT switch ports");
	for (const auto &pp : st.plan.ports) {
		const TestbedPort &p = pp.port;
		c.step("switch port " + p.name, [&] {
			c.journal({{"kind", "port"}, {"dev", p.dev}, {"netns", p.netns}});
			SwitchPortRequest req;
			req.dev = p.dev;
			req.dev_netns = p.netns;
			req.peer = p.peer;
			req.peer_netns = p.peer_netns;
			req.rate_mbps = pp.link.rate_mbps;
			req.buffer_bytes = pp.link.buffer_bytes;
			req.ecn_threshold_bytes = pp.link.ecn_threshold_bytes;
			req.int_enabled = pp.link.int_enabled;
			TestbedPort attached = p;
			attached.port_id = attach_switch_port(req).id;
			st.ports.push_back(attached);
		});
	}
	c.stage_end();
}

// In the forked child (only async-signal-safe calls): a new session, so
// no terminal signal reaches the daemon, then a grandchild that joins the
// cgroup and the namespace and execs. The child reports the grandchild's
// pid and exits: init reaps the daemon, the creator never has a zombie.
[[noreturn]] void fork_daemon(int cgroup_fd, int netns_fd, int null_fd, int log_fd, int report_fd, const char *exe,
			      char *const argv[])
{
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, nullptr);
	::setsid();
	pid_t pid = ::fork();
	if (pid != 0) {
		(void)!::write(report_fd, &pid, sizeof(pid));
		::_exit(pid < 0 ? 127 : 0);
	}
	int ok = ::write(cgroup_fd, "0", 1) == 1 && ::setns(netns_fd, CLONE_NEWNET) == 0 && ::dup2(null_fd, 0) == 0 &&
		 ::dup2(log_fd, 1) == 1 && ::dup2(log_fd, 2) == 2;
	if (ok)
		::execve(exe, argv, environ);
	int err = errno;
	(void)!::write(report_fd, &err, sizeof(err));
	::_exit(127);
}

// Starts argv as a daemon in the testbed's cgroup and namespace `netns`,
// stdout and stderr to log_path; returns its pid.
pid_t spawn_daemon(const std::string &cgroup, const std::string &netns, const std::string &log_path,
		   const std::vector<std::string> &argv)
{
	Fd ns = std::move(open_netns(netns).fd);
	Fd cg(open_cgroup_procs(cgroup));
	Fd null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
	Fd log(::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
	if (null.get() < 0 || log.get() < 0)
		throw Error("cannot open " + log_path + " or /dev/null: " + errno_text(errno));
	int report[2];
	if (::pipe2(report, O_CLOEXEC) != 0)
		throw Error("pipe: " + errno_text(errno));
	Fd report_read(report[0]), report_write(report[1]);
	std::vector<char *> cargv = exec_argv(argv);
	pid_t child = ::fork();
	if (child < 0)
		throw Error("fork: " + errno_text(errno));
	if (child == 0)
		fork_daemon(cg.get(), ns.get(), null.get(), log.get(), report_write.get(), argv[0].c_str(),
			    cargv.data());
	report_write.reset();
	wait_child(child);
	pid_t daemon = -1;
	int exec_errno = 0;
	if (::read(report_read.get(), &daemon, sizeof(daemon)) != sizeof(daemon) || daemon <= 0)
		throw Error("cannot start '" + command_text(argv) + "': fork failed");
	if (::read(report_read.get(), &exec_errno, sizeof(exec_errno)) == sizeof(exec_errno))
		throw Error("cannot start '" + command_text(argv) + "' in " + netns + ": " + errno_text(exec_errno));
	return daemon;
}

std::string last_lines(const std::string &path)
{
	std::string text;
	try {
		text = trim(read_file(path));
	} catch (const Error &) {
		return "(no log)";
	}
	return text.size() > 600 ? "..." + text.substr(text.size() - 600) : text;
}

// The daemon writes its stats file once its sockets are bound.
void wait_until_ready(pid_t pid, const std::string &stats, const std::string &log, const std::string &what)
{
	const json identity = process_identity(pid);
	for (int i = 0; i < 250; i++) {
		if (path_exists(stats))
			return;
		if (!identity_alive(identity))
			throw Error(what + " exited at start: " + last_lines(log));
		sleep_ms(20);
	}
	throw Error(what + " is not ready after 5 s: " + last_lines(log));
}

// One `lumen delayline` per delayed link, in the link's delay node and the
// testbed's cgroup; journalled before it starts, its pid right after.
void start_delay_lines(Creation &c, Testbed::State &st)
{
	if (st.plan.delay_lines.empty())
		return;
	c.stage_begin(std::to_string(st.plan.delay_lines.size()) + " delay lines");
	make_dirs(delay_dir(st.spec.name));
	for (const auto &d : st.plan.delay_lines) {
		const std::string netns = st.plan.node(d.node).netns;
		const std::string stats = delay_dir(st.spec.name) + "/" + d.node + ".json";
		const std::string log = delay_dir(st.spec.name) + "/" + d.node + ".log";
		c.step("delay line " + d.link, [&] {
			::unlink(stats.c_str());
			c.journal({{"kind", "delayline"},
				   {"link", d.link},
				   {"netns", netns},
				   {"delay_ns", d.delay_ns},
				   {"stats", stats},
				   {"process", nullptr}});
			const pid_t pid = spawn_daemon(st.cgroup, netns, log,
						       {c.exe(), "delayline", d.dev_a, d.dev_b, "--delay",
							std::to_string(d.delay_ns) + "ns", "--queue",
							std::to_string(d.queue_bytes), "--stats-file", stats});
			c.doc()["journal"].back()["process"] = process_identity(pid);
			c.save();
			wait_until_ready(pid, stats, log, "the delay line of " + d.link);
		});
	}
	c.stage_end();
}

// The rotor's schedule: the testbed's file, or round robin from the
// period boundary before now (CLOCK_TAI, the rotor program's clock), so
// the circuits turn at once. Kept in the testbed's directory for the hosts'
// gating and lumend to follow.
sched::Schedule rotor_schedule(const TopologySpec &spec)
{
	if (!spec.schedule_file.empty()) {
		sched::Schedule s = sched::load(spec.schedule_file);
		if (s.nodes != spec.nodes)
			throw UsageError(spec.schedule_file + ": a schedule of " + std::to_string(s.nodes) +
					 " nodes for a rotor testbed of " + std::to_string(spec.nodes));
		return s;
	}
	std::uint64_t now = tai_ns();
	sched::Timing t;
	t.slot_ns = spec.slot_ns;
	t.guard_ns = spec.guard_ns;
	sched::Schedule s = sched::round_robin(spec.nodes, 1, false, t);
	std::uint64_t period_ns = (std::uint64_t)s.period * s.slot_ns;
	s.t0_ns = now - now % period_ns;
	return s;
}

void attach_rotor_switch(Creation &c, Testbed::State &st)
{
	if (st.plan.rotor_node.empty())
		return;
	c.stage_begin("rotor switch");
	c.step("rotor switch", [&] {
		sched::Schedule s = rotor_schedule(st.spec);
		make_dirs(delay_dir(st.spec.name));
		const std::string path = delay_dir(st.spec.name) + "/schedule.json";
		sched::save(s, path);
		RotorRequest req;
		req.netns = st.plan.node(st.plan.rotor_node).netns;
		for (const auto &[dev, node] : st.plan.rotor_ports)
			req.ports.push_back({dev, node, 0});
		req.host_addrs = st.plan.rotor_addrs;
		req.schedule = s;
		c.journal({{"kind", "rotor"}});
		attach_rotor(req);
		c.doc()["schedule"] = path;
		c.save();
	});
	c.stage_end();
}

void measure_base_rtt(Creation &c, Testbed::State &st)
{
	if (st.plan.rtt_from.empty())
		return; /* a rotor: a reply waits for its own circuit */
	// DPDK hosts answer no ping: from the first host's switch to the
	// second's gateway address (testbed_plan.h)
	const bool dpdk = !st.plan.rtt_switch.empty();
	const PlanNode &from = st.plan.node(dpdk ? st.plan.rtt_switch : st.plan.rtt_from);
	const PlanNode to = dpdk ? PlanNode{st.plan.rtt_to + "'s gateway", "", false, "", st.plan.rtt_addr}
				 : st.plan.node(st.plan.rtt_to);
	c.stage_begin("base RTT " + from.name + " -> " + to.name);
	c.step("base RTT", [&] {
		std::vector<std::string> ping = {"ip", "netns", "exec", from.netns, "ping", "-n", "-q",
						 "-c", "8",	"-i",	"0.05",	    "-W",   "2",  to.addr};
		if (dpdk) // a switch's address the other switch routes back to
			ping.insert(ping.end(), {"-I", st.plan.rtt_source});
		ProcessResult r = run_helper(ping, "", [&](pid_t pid) {
			c.doc()["helper"] = process_identity(pid);
			c.save();
		});
		st.base_rtt_ns = ping_min_rtt_ns(r.output);
		if (r.status != 0 || st.base_rtt_ns == 0)
			throw Error("no ping reply from " + from.name + " to " + to.name + " (" + to.addr +
				    "): the testbed does not forward; ping said: " + trim(r.output));
	});
	c.stage_end();
}

void build(Creation &c, Testbed::State &st)
{
	create_cgroup(c, st);
	create_namespaces(c, st.plan);
	create_links(c, st.plan);
	configure_nodes(c, st.plan);
	attach_ports(c, st);
	attach_rotor_switch(c, st);
	start_delay_lines(c, st);
	measure_base_rtt(c, st);
}

json complete_doc(json doc, const Testbed::State &st, std::uint64_t setup_ns)
{
	doc["complete"] = true;
	doc["helper"] = nullptr;
	doc["base_rtt_ns"] = st.base_rtt_ns;
	doc["setup_ns"] = setup_ns;
	doc["hosts"] = json::array();
	for (const auto &h : st.hosts)
		doc["hosts"].push_back(host_json(h));
	doc["ports"] = json::array();
	for (const auto &p : st.ports)
		doc["ports"].push_back(port_json(p));
	return doc;
}

} // namespace

void build_testbed(Testbed::State &st, json doc, std::uint64_t t0)
{
	Creation c(st.spec.name, self_exe(), std::move(doc));
	try {
		build(c, st);
		c.doc() = complete_doc(c.doc(), st, monotonic_ns() - t0);
		c.save();
	} catch (const std::exception &e) {
		std::fprintf(stderr, "testbed %s: setup failed after %d steps, tearing down: %s\n",
			     st.spec.name.c_str(), c.steps(), e.what());
		StateDirLock lock;
		print_failures(st.spec.name, teardown_and_forget(c.doc()));
		throw;
	}
}

} // namespace lumen::testbed_detail
