// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/testbed/testbed.cpp - building and tearing down namespace testbeds
// (testbed.h) with iproute2, ethtool, sysctl and the switch control plane
// (bpfctl/switch_port.h).
//
// The state file /run/lumen/testbeds/<name>.json is the journal: every
// object (cgroup, namespace, switch port) is recorded in it before it is
// created, and it is rewritten atomically (temporary file + rename) at
// every change. Teardown replays it newest first, then sweeps by name
// ("lt-<name>-*" namespaces, switch ports in them, the "lt-<name>" cgroup),
// so an object created right after its journal entry was written is never
// missed. Veth links, addresses, routes and namespace sysctls live inside
// the namespaces and go with them; nothing is changed in the caller's
// namespace.
//
// External commands run in their own process group: Ctrl-C reaches only
// lumen, which lets the running command finish and then tears down. The
// pid of the running command is journalled too, so `lumen testbed down`
// after a SIGKILLed creator waits for it before replaying.
#include "testbed/testbed_internal.h"

#include "base/error.h"
#include "base/fd.h"
#include "base/interrupt.h"
#include "base/netns.h"
#include "base/ping.h"
#include "base/process.h"
#include "base/system.h"
#include "base/units.h"
#include "bpfctl/switch_port.h"
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

namespace lumen
{

using namespace testbed_detail;

// ---------------------------------------------------------------------
// Testbed

Testbed::Testbed(State *state) : state_(state)
{
}

Testbed::Testbed(Testbed &&other) noexcept : state_(other.state_)
{
	other.state_ = nullptr;
}

Testbed &Testbed::operator=(Testbed &&other) noexcept
{
	if (this != &other) {
		if (state_ && !state_->released)
			destroy();
		delete state_;
		state_ = other.state_;
		other.state_ = nullptr;
	}
	return *this;
}

Testbed::~Testbed()
{
	if (state_ && !state_->released)
		destroy();
	delete state_;
}

Testbed Testbed::create(const TopologySpec &spec)
{
	const std::uint64_t t0 = monotonic_ns();
	auto st = std::make_unique<State>();
	st->spec = spec;
	st->plan = plan_testbed(spec); // validates
	st->hosts = st->plan.hosts();
	require_root();
	require_tools();
	st->cgroup = testbed_cgroup(spec.name);
	st->instance = random_instance();

	json doc = {{"version", 1},
		    {"name", spec.name},
		    {"instance", st->instance},
		    {"owner", process_identity(::getpid())},
		    {"complete", false},
		    {"spec", json::parse(topology_to_json(spec))},
		    {"cgroup", ""},
		    {"journal", json::array()},
		    {"helper", nullptr}};
	{
		StateDirLock lock;
		check_nothing_exists(spec);
		if (!create_state_exclusively(doc))
			throw Error("testbed " + spec.name + " exists (" + state_path(spec.name) +
				    "); 'lumen testbed down " + spec.name + "' removes it");
	}
	build_testbed(*st, std::move(doc), t0);
	std::fprintf(stderr, "testbed %s: up in %.2f s, base RTT %.1f us\n", spec.name.c_str(),
		     double(monotonic_ns() - t0) / 1e9, double(st->base_rtt_ns) / 1e3);
	return Testbed(st.release());
}

bool Testbed::destroy_by_name(const std::string &name)
{
	StateDirLock lock;
	std::optional<json> doc = load_state(name);
	if (!doc)
		return false;
	if (doc->contains("owner") && identity_alive((*doc)["owner"]) &&
	    (*doc)["owner"]["pid"].get<pid_t>() != ::getpid()) {
		const bool complete = doc->value("complete", false);
		throw Error("testbed " + name + " is " + (complete ? "in use" : "being created") + " by process " +
			    std::to_string((*doc)["owner"]["pid"].get<pid_t>()) +
			    "; stop that process (Ctrl-C) and it tears the testbed down");
	}
	std::fprintf(stderr, "testbed %s: tearing down\n", name.c_str());
	std::vector<std::string> failures = teardown_and_forget(*doc);
	print_failures(name, failures);
	if (!failures.empty())
		throw Error("testbed " + name + " was not completely removed (see above)");
	return true;
}

Testbed Testbed::open(const std::string &name)
{
	std::optional<json> doc = load_state(name);
	if (!doc)
		throw Error("no testbed " + name + " (see 'lumen testbed status')");
	if (!doc->value("complete", false))
		throw Error("testbed " + name + " is not completely set up (see 'lumen testbed status " + name + "')");
	auto st = std::make_unique<State>();
	try {
		st->spec = parse_topology(doc->at("spec").dump());
		st->plan = plan_testbed(st->spec);
		for (const auto &h : doc->at("hosts"))
			st->hosts.push_back(host_from_json(h));
		for (const auto &p : doc->at("ports"))
			st->ports.push_back(port_from_json(p));
		st->cgroup = doc->at("cgroup").get<std::string>();
		st->base_rtt_ns = doc->at("base_rtt_ns").get<std::uint64_t>();
		st->instance = doc->at("instance").get<std::string>();
	} catch (const std::exception &e) {
		throw Error("state file " + state_path(name) + " is malformed: " + e.what());
	}
	st->released = true;
	return Testbed(st.release());
}

std::vector<std::string> Testbed::list()
{
	std::vector<std::string> names;
	const std::string suffix = ".json";
	for (const auto &f : list_dir(kStateDir))
		if (f[0] != '.' && f.size() > suffix.size() &&
		    f.compare(f.size() - suffix.size(), suffix.size(), suffix) == 0)
			names.push_back(f.substr(0, f.size() - suffix.size()));
	return names;
}

void Testbed::destroy()
{
	if (!state_ || state_->destroyed)
		return;
	state_->destroyed = true;
	const std::string &name = state_->spec.name;
	try {
		StateDirLock lock;
		std::optional<json> doc = load_state(name);
		if (!doc || doc->value("instance", "") != state_->instance) {
			std::fprintf(stderr, "testbed %s: already torn down by another process\n", name.c_str());
			return;
		}
		std::fprintf(stderr, "testbed %s: tearing down\n", name.c_str());
		print_failures(name, teardown_and_forget(*doc));
	} catch (const std::exception &e) {
		std::fprintf(stderr, "testbed %s: teardown: %s\n", name.c_str(), e.what());
	}
}

void Testbed::release()
{
	if (!state_ || state_->released)
		return;
	state_->released = true;
	StateDirLock lock;
	std::optional<json> doc = load_state(state_->spec.name);
	if (doc && doc->value("instance", "") == state_->instance) {
		(*doc)["owner"] = nullptr;
		save_state(*doc);
	}
}

const TopologySpec &Testbed::spec() const
{
	return state_->spec;
}

const std::vector<TestbedHost> &Testbed::hosts() const
{
	return state_->hosts;
}

std::vector<TestbedHost> Testbed::with_role(const std::string &role) const
{
	std::vector<TestbedHost> out;
	for (const auto &h : state_->hosts)
		if (h.role == role)
			out.push_back(h);
	return out;
}

const std::vector<TestbedPort> &Testbed::ports() const
{
	return state_->ports;
}

const std::string &Testbed::cgroup() const
{
	return state_->cgroup;
}

std::uint64_t Testbed::base_rtt_ns() const
{
	return state_->base_rtt_ns;
}

namespace
{

std::string resolve_executable(const std::string &name)
{
	if (name.find('/') != std::string::npos)
		return name;
	const char *path = std::getenv("PATH");
	std::stringstream ss(path ? path : "/usr/sbin:/usr/bin:/sbin:/bin");
	std::string dir;
	while (std::getline(ss, dir, ':'))
		if (!dir.empty() && ::access((dir + "/" + name).c_str(), X_OK) == 0)
			return dir + "/" + name;
	throw Error("cannot start '" + name + "': not found in PATH");
}

int open_output(const std::string &path)
{
	if (path.empty())
		return -1;
	int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		throw Error("cannot open " + path + ": " + errno_text(errno));
	return fd;
}

// In the forked child: only async-signal-safe calls. Reports errno on
// `err_fd` and exits if any step fails.
[[noreturn]] void exec_in_host(int cgroup_fd, int netns_fd, int in_fd, int out_fd, int err_fd, int report_fd,
			       const char *exe, char *const argv[])
{
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, nullptr);
	int ok = ::write(cgroup_fd, "0", 1) == 1 && ::setns(netns_fd, CLONE_NEWNET) == 0 &&
		 (in_fd < 0 || ::dup2(in_fd, 0) == 0) && (out_fd < 0 || ::dup2(out_fd, 1) == 1) &&
		 (err_fd < 0 || ::dup2(err_fd, 2) == 2);
	if (ok)
		::execve(exe, argv, environ);
	int err = errno;
	(void)!::write(report_fd, &err, sizeof(err));
	::_exit(127);
}

} // namespace

pid_t Testbed::spawn(const TestbedHost &host, const std::vector<std::string> &argv, const std::string &stdout_path,
		     const std::string &stderr_path, int stdin_fd) const
{
	if (argv.empty())
		throw Error("spawn: empty command");
	const std::string exe = resolve_executable(argv[0]);
	Fd netns = std::move(open_netns(host.netns).fd);
	Fd cgroup(open_cgroup_procs(state_->cgroup));
	Fd out(open_output(stdout_path)), err(open_output(stderr_path));
	int report[2];
	if (::pipe2(report, O_CLOEXEC) != 0)
		throw Error("pipe: " + errno_text(errno));
	Fd report_read(report[0]), report_write(report[1]);
	std::vector<char *> cargv = exec_argv(argv);

	pid_t pid = ::fork();
	if (pid < 0)
		throw Error("fork: " + errno_text(errno));
	if (pid == 0)
		exec_in_host(cgroup.get(), netns.get(), stdin_fd, out.get(), err.get(), report_write.get(), exe.c_str(),
			     cargv.data());
	report_write.reset();
	int child_errno = 0;
	ssize_t n;
	while ((n = ::read(report_read.get(), &child_errno, sizeof(child_errno))) < 0 && errno == EINTR) {
	}
	if (n == sizeof(child_errno)) {
		wait_child(pid);
		throw Error("cannot start '" + command_text(argv) + "' in " + host.name + ": " +
			    errno_text(child_errno));
	}
	return pid;
}

// ---------------------------------------------------------------------
// status

namespace
{

TestbedDelayLine::Direction direction_from_json(const json &j)
{
	TestbedDelayLine::Direction d;
	d.from = j.value("from", "");
	d.to = j.value("to", "");
	d.frames_in = j.value("frames_in", std::uint64_t(0));
	d.frames_out = j.value("frames_out", std::uint64_t(0));
	d.bytes_out = j.value("bytes_out", std::uint64_t(0));
	d.dropped_full = j.value("dropped_full", std::uint64_t(0));
	d.dropped_oversize = j.value("dropped_oversize", std::uint64_t(0));
	d.send_errors = j.value("send_errors", std::uint64_t(0));
	d.queue_max_bytes = j.value("queue_max_bytes", std::uint64_t(0));
	d.queue_capacity = j.value("queue_capacity", std::uint64_t(0));
	return d;
}

// A journalled delay line and what its stats file says.
TestbedDelayLine delay_line_status(const json &entry)
{
	TestbedDelayLine d;
	d.link = entry.value("link", "");
	d.netns = entry.value("netns", "");
	d.delay_ns = entry.value("delay_ns", std::uint64_t(0));
	const json process = entry.value("process", json());
	d.running = identity_alive(process);
	d.pid = process.is_object() ? process.value("pid", pid_t(0)) : 0;
	d.state = d.running ? "running" : "not running";
	try {
		const json stats = json::parse(read_file(entry.value("stats", "")));
		if (!d.running)
			d.state = "not running (" + stats.value("state", "") + ")";
		d.cpu_s = stats.value("cpu_user_s", 0.0) + stats.value("cpu_sys_s", 0.0);
		for (const auto &dir : stats.value("directions", json::array()))
			d.directions.push_back(direction_from_json(dir));
	} catch (const std::exception &) {
		d.state += ", no counters";
	}
	return d;
}

} // namespace

std::optional<TestbedStatus> testbed_status(const std::string &name)
{
	std::optional<json> doc = load_state(name);
	if (!doc)
		return std::nullopt;
	TestbedStatus s;
	s.name = name;
	try {
		s.spec = parse_topology(doc->at("spec").dump());
		s.complete = doc->value("complete", false);
		const bool owned = doc->contains("owner") && identity_alive((*doc)["owner"]);
		const std::string owner = owned ? std::to_string((*doc)["owner"]["pid"].get<pid_t>()) : "";
		if (doc->contains("teardown_failures"))
			s.state = "teardown failed: run 'lumen testbed down " + name + "'";
		else if (s.complete)
			s.state = owned ? "up, in use by pid " + owner : "up";
		else
			s.state = owned ? "being created by pid " + owner
					: "incomplete (its creator died): run 'lumen testbed down " + name + "'";
		for (const auto &h : doc->value("hosts", json::array()))
			s.hosts.push_back(host_from_json(h));
		for (const auto &p : doc->value("ports", json::array()))
			s.ports.push_back(port_from_json(p));
		s.cgroup = doc->value("cgroup", "");
		s.base_rtt_ns = doc->value("base_rtt_ns", std::uint64_t(0));
		s.schedule_path = doc->value("schedule", "");
		s.setup_ns = doc->value("setup_ns", std::uint64_t(0));
		for (const auto &ns : journal_names(*doc, "netns", "name")) {
			s.netns_expected++;
			s.netns_present += netns_exists(ns) ? 1 : 0;
		}
		for (const auto &e : doc->value("journal", json::array()))
			if (e.value("kind", "") == "delayline")
				s.delay_lines.push_back(delay_line_status(e));
	} catch (const std::exception &e) {
		throw Error("state file " + state_path(name) + " is malformed: " + e.what());
	}
	return s;
}

} // namespace lumen
