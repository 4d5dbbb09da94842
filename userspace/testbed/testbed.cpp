// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/testbed/testbed.cpp - building and tearing down namespace testbeds
// (testbed.h) with iproute2, ethtool, sysctl and `lumen switch attach`.
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
#include "testbed/testbed.h"

#include "base/error.h"
#include "base/fd.h"
#include "base/interrupt.h"
#include "base/ping.h"
#include "base/system.h"
#include "base/units.h"
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
namespace
{

using nlohmann::json;

const char kStateDir[] = "/run/lumen/testbeds";
const char kFailAtEnv[] = "LUMEN_TESTBED_FAIL_AT";
const std::vector<std::string> kOffloadsOff = {"tso", "off", "gso", "off", "gro", "off", "tx", "off", "rx", "off"};

// ---------------------------------------------------------------------
// small system helpers

void sleep_ms(int ms)
{
	std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

// What a child needs to enter a host: its network namespace and the
// testbed's cgroup, opened here so that errors reach the caller, not the
// child; and its argv as exec wants it.
int open_netns(const std::string &netns)
{
	int fd = ::open(("/run/netns/" + netns).c_str(), O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		throw Error("cannot open network namespace " + netns + ": " + errno_text(errno));
	return fd;
}

int open_cgroup_procs(const std::string &cgroup)
{
	int fd = ::open((cgroup + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		throw Error("cannot open " + cgroup + "/cgroup.procs: " + errno_text(errno));
	return fd;
}

std::vector<char *> exec_argv(const std::vector<std::string> &argv)
{
	std::vector<char *> cargv;
	for (const auto &a : argv)
		cargv.push_back(const_cast<char *>(a.c_str()));
	cargv.push_back(nullptr);
	return cargv;
}

void write_all(int fd, const std::string &text, const std::string &what)
{
	std::size_t done = 0;
	while (done < text.size()) {
		ssize_t n = ::write(fd, text.data() + done, text.size() - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			throw Error("cannot write " + what + ": " + errno_text(errno));
		done += static_cast<std::size_t>(n);
	}
}

std::string read_file(const std::string &path)
{
	std::ifstream f(path);
	if (!f)
		throw Error("cannot read " + path + ": " + errno_text(errno));
	std::stringstream ss;
	ss << f.rdbuf();
	return ss.str();
}

std::vector<std::string> list_dir(const std::string &path)
{
	std::vector<std::string> names;
	DIR *d = ::opendir(path.c_str());
	if (!d)
		return names;
	while (dirent *e = ::readdir(d)) {
		std::string n = e->d_name;
		if (n != "." && n != "..")
			names.push_back(n);
	}
	::closedir(d);
	std::sort(names.begin(), names.end());
	return names;
}

void make_dirs(const std::string &path)
{
	std::string partial;
	std::stringstream ss(path);
	std::string part;
	while (std::getline(ss, part, '/')) {
		if (part.empty())
			continue;
		partial += "/" + part;
		if (::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST)
			throw Error("cannot create " + partial + ": " + errno_text(errno));
	}
}

bool starts_with(const std::string &s, const std::string &prefix)
{
	return s.compare(0, prefix.size(), prefix) == 0;
}

std::string command_text(const std::vector<std::string> &argv)
{
	std::string out;
	for (const auto &a : argv)
		out += (out.empty() ? "" : " ") + a;
	return out;
}

std::string trim(std::string s)
{
	while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
		s.pop_back();
	return s;
}

// ---------------------------------------------------------------------
// processes: identity that survives pid reuse (pid + start time)

// Field 22 of /proc/<pid>/stat (clock ticks since boot); 0 = no such
// process or a zombie.
std::uint64_t process_start_time(pid_t pid)
{
	std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
	std::string line;
	if (pid <= 0 || !f || !std::getline(f, line))
		return 0;
	auto close = line.rfind(')');
	if (close == std::string::npos)
		return 0;
	std::istringstream rest(line.substr(close + 1));
	std::string field;
	std::vector<std::string> fields;
	while (rest >> field)
		fields.push_back(field);
	// fields[0] is field 3 (state), so field 22 is fields[19]
	if (fields.size() < 20 || fields[0] == "Z")
		return 0;
	return std::stoull(fields[19]);
}

json process_identity(pid_t pid)
{
	return json{{"pid", pid}, {"start", process_start_time(pid)}};
}

bool identity_alive(const json &id)
{
	if (!id.is_object() || !id.contains("pid") || !id.contains("start"))
		return false;
	const auto pid = id["pid"].get<pid_t>();
	const auto start = id["start"].get<std::uint64_t>();
	return start != 0 && process_start_time(pid) == start;
}

// ---------------------------------------------------------------------
// external commands

struct HelperResult {
	int exit_code = 0; // 128 + signal when killed
	std::string output; // stdout and stderr together
};

int wait_child(pid_t pid)
{
	int status = 0;
	while (::waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			return -1;
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}

std::string read_until_eof(int fd)
{
	std::string out;
	char buf[4096];
	for (;;) {
		ssize_t n = ::read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		out.append(buf, static_cast<std::size_t>(n));
	}
	return out;
}

// Runs argv (PATH search) in its own process group with default signal
// handling, `input` as its stdin, and collects its output. `started` sees
// the pid before the wait (to journal it). A signal to lumen does not stop
// the wait: the command always finishes.
HelperResult run_helper(const std::vector<std::string> &argv, const std::string &input = "",
			const std::function<void(pid_t)> &started = nullptr)
{
	int pipe_fds[2];
	if (::pipe2(pipe_fds, O_CLOEXEC) != 0)
		throw Error("pipe: " + errno_text(errno));
	Fd out_read(pipe_fds[0]), out_write(pipe_fds[1]);
	Fd in(::memfd_create("lumen-testbed-input", MFD_CLOEXEC));
	if (in.get() < 0)
		throw Error("memfd_create: " + errno_text(errno));
	write_all(in.get(), input, "a command's input");
	::lseek(in.get(), 0, SEEK_SET);

	posix_spawn_file_actions_t actions;
	posix_spawn_file_actions_init(&actions);
	posix_spawn_file_actions_adddup2(&actions, in.get(), 0);
	posix_spawn_file_actions_adddup2(&actions, out_write.get(), 1);
	posix_spawn_file_actions_adddup2(&actions, out_write.get(), 2);
	posix_spawnattr_t attr;
	posix_spawnattr_init(&attr);
	sigset_t none, defaults;
	sigemptyset(&none);
	sigemptyset(&defaults);
	for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE})
		sigaddset(&defaults, sig);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &defaults);
	posix_spawnattr_setpgroup(&attr, 0);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

	std::vector<char *> cargv;
	for (const auto &a : argv)
		cargv.push_back(const_cast<char *>(a.c_str()));
	cargv.push_back(nullptr);
	pid_t pid = -1;
	int rc = posix_spawnp(&pid, cargv[0], &actions, &attr, cargv.data(), environ);
	posix_spawn_file_actions_destroy(&actions);
	posix_spawnattr_destroy(&attr);
	if (rc != 0)
		throw Error("cannot run " + argv[0] + ": " + errno_text(rc));
	out_write.reset();
	if (started)
		started(pid);
	HelperResult r;
	r.output = read_until_eof(out_read.get());
	r.exit_code = wait_child(pid);
	return r;
}

// Runs argv; throws Error with its output when it fails.
std::string run_or_throw(const std::vector<std::string> &argv, const std::string &input = "",
			 const std::function<void(pid_t)> &started = nullptr)
{
	HelperResult r = run_helper(argv, input, started);
	if (r.exit_code != 0)
		throw Error("'" + command_text(argv) + "' failed (exit " + std::to_string(r.exit_code) +
			    "): " + trim(r.output));
	return r.output;
}

std::string lumen_exe()
{
	char buf[4096];
	ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
	if (n <= 0)
		throw Error("cannot find the lumen executable (/proc/self/exe): " + errno_text(errno));
	return std::string(buf, static_cast<std::size_t>(n));
}

bool in_path(const std::string &tool)
{
	const char *path = std::getenv("PATH");
	std::stringstream ss(path ? path : "/usr/sbin:/usr/bin:/sbin:/bin");
	std::string dir;
	while (std::getline(ss, dir, ':'))
		if (!dir.empty() && ::access((dir + "/" + tool).c_str(), X_OK) == 0)
			return true;
	return false;
}

void require_tools()
{
	const std::pair<const char *, const char *> tools[] = {
		{"ip", "iproute2"}, {"ethtool", "ethtool"}, {"sysctl", "procps"}, {"ping", "iputils-ping"}};
	for (const auto &[tool, package] : tools)
		if (!in_path(tool))
			throw Error(std::string("testbeds need '") + tool + "' (Debian package " + package + ")");
}

// ---------------------------------------------------------------------
// cgroup v2, namespaces, switch ports

std::string testbed_cgroup(const std::string &name)
{
	return cgroup2_root() + "/lt-" + name;
}

bool netns_exists(const std::string &ns)
{
	return path_exists("/run/netns/" + ns);
}

std::vector<std::string> netns_with_prefix(const std::string &prefix)
{
	std::vector<std::string> out;
	for (const auto &n : list_dir("/run/netns"))
		if (starts_with(n, prefix))
			out.push_back(n);
	return out;
}

struct NsId {
	dev_t dev;
	ino_t ino;
};

std::vector<NsId> netns_ids(const std::vector<std::string> &names)
{
	std::vector<NsId> ids;
	for (const auto &n : names) {
		struct stat st;
		if (::stat(("/run/netns/" + n).c_str(), &st) == 0)
			ids.push_back({st.st_dev, st.st_ino});
	}
	return ids;
}

// SIGKILLs every process inside one of the namespaces; returns how many.
int kill_netns_processes(const std::vector<NsId> &ids)
{
	int killed = 0;
	for (const auto &entry : list_dir("/proc")) {
		if (entry.find_first_not_of("0123456789") != std::string::npos)
			continue;
		struct stat st;
		if (::stat(("/proc/" + entry + "/ns/net").c_str(), &st) != 0)
			continue;
		for (const auto &id : ids) {
			if (st.st_dev == id.dev && st.st_ino == id.ino) {
				::kill(static_cast<pid_t>(std::stol(entry)), SIGKILL);
				killed++;
			}
		}
	}
	return killed;
}

std::vector<pid_t> cgroup_pids(const std::string &cg)
{
	std::vector<pid_t> pids;
	std::ifstream f(cg + "/cgroup.procs");
	pid_t p;
	while (f >> p)
		pids.push_back(p);
	return pids;
}

// Kills what runs in the cgroup and the namespaces, until nothing is left
// (or 5 s have passed: then the removal below reports what is stuck).
void kill_testbed_processes(const std::string &cg, const std::vector<std::string> &namespaces)
{
	const std::vector<NsId> ids = netns_ids(namespaces);
	for (int round = 0; round < 250; round++) {
		bool any = false;
		if (!cg.empty() && path_exists(cg)) {
			for (pid_t p : cgroup_pids(cg)) {
				::kill(p, SIGKILL);
				any = true;
			}
		}
		any |= kill_netns_processes(ids) > 0;
		if (!any)
			return;
		sleep_ms(20);
	}
}

std::string remove_cgroup(const std::string &cg)
{
	for (int attempt = 0; attempt < 100; attempt++) {
		if (::rmdir(cg.c_str()) == 0 || errno == ENOENT)
			return "";
		if (errno != EBUSY)
			break;
		for (pid_t p : cgroup_pids(cg))
			::kill(p, SIGKILL);
		sleep_ms(20);
	}
	return "cannot remove cgroup " + cg + ": " + errno_text(errno);
}

std::string delete_netns(const std::string &ns)
{
	if (!netns_exists(ns))
		return "";
	HelperResult r = run_helper({"ip", "netns", "del", ns});
	if (r.exit_code != 0 && netns_exists(ns))
		return "cannot delete network namespace " + ns + ": " + trim(r.output);
	return "";
}

struct SwitchPort {
	std::uint32_t id;
	std::string dev, netns;
	std::string state; // "ok", "netns of DEV gone", ...
};

// A port whose device namespace no longer exists by name can never work
// again. Its record must go: the kernel reuses namespace inodes and veth
// ifindexes at once, so a new namespace may look like the port's device.
bool port_is_dead(const SwitchPort &p)
{
	return !p.netns.empty() && !netns_exists(p.netns) && p.state.find(" gone") != std::string::npos;
}

std::vector<SwitchPort> switch_ports(const std::string &exe)
{
	std::string out = run_or_throw({exe, "switch", "stats", "--json"});
	std::vector<SwitchPort> ports;
	try {
		const json doc = json::parse(out); // the loop below must not walk a temporary
		for (const auto &p : doc.at("ports"))
			ports.push_back({p.at("port_id").get<std::uint32_t>(), p.at("dev").get<std::string>(),
					 p.at("dev_netns").get<std::string>(), p.at("state").get<std::string>()});
	} catch (const json::exception &e) {
		throw Error(std::string("cannot read 'lumen switch stats --json': ") + e.what());
	}
	return ports;
}

std::string detach_port(const std::string &exe, const SwitchPort &p)
{
	std::vector<std::string> argv = {exe, "switch", "detach"};
	if (netns_exists(p.netns))
		argv.insert(argv.end(), {p.dev, "--netns", p.netns});
	else
		argv.insert(argv.end(), {"--port-id", std::to_string(p.id)});
	HelperResult r = run_helper(argv);
	if (r.exit_code != 0)
		return "cannot detach switch port " + std::to_string(p.id) + " (" + p.dev + " in " + p.netns +
		       "): " + trim(r.output);
	return "";
}

// ---------------------------------------------------------------------
// the state file

std::string state_path(const std::string &name)
{
	return std::string(kStateDir) + "/" + name + ".json";
}

// The delay lines' stats files and logs.
std::string delay_dir(const std::string &testbed)
{
	return std::string(kStateDir) + "/" + testbed + ".d";
}

std::string temp_path(const std::string &name)
{
	return std::string(kStateDir) + "/." + name + ".json.tmp." + std::to_string(::getpid());
}

void write_temp(const std::string &tmp, const std::string &text)
{
	Fd f(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
	if (f.get() < 0)
		throw Error("cannot write " + tmp + ": " + errno_text(errno));
	write_all(f.get(), text, tmp);
}

void save_state(const json &doc)
{
	const std::string name = doc.at("name").get<std::string>();
	const std::string tmp = temp_path(name);
	write_temp(tmp, doc.dump(1, '\t') + "\n");
	if (::rename(tmp.c_str(), state_path(name).c_str()) != 0) {
		int err = errno;
		::unlink(tmp.c_str());
		throw Error("cannot write " + state_path(name) + ": " + errno_text(err));
	}
}

// Writes the first version of the state file; false if one exists.
bool create_state_exclusively(const json &doc)
{
	const std::string name = doc.at("name").get<std::string>();
	const std::string tmp = temp_path(name);
	write_temp(tmp, doc.dump(1, '\t') + "\n");
	int rc = ::link(tmp.c_str(), state_path(name).c_str());
	int err = errno;
	::unlink(tmp.c_str());
	if (rc == 0)
		return true;
	if (err == EEXIST)
		return false;
	throw Error("cannot create " + state_path(name) + ": " + errno_text(err));
}

std::optional<json> load_state(const std::string &name)
{
	const std::string path = state_path(name);
	if (!path_exists(path))
		return std::nullopt;
	try {
		json doc = json::parse(read_file(path));
		if (!doc.is_object() || doc.value("name", "") != name)
			throw Error("it describes another testbed");
		return doc;
	} catch (const std::exception &e) {
		throw Error("state file " + path + " is unreadable (" + e.what() + "); check 'ip netns list' for lt-" +
			    name + "-* and remove the file by hand");
	}
}

// Serialises creation and teardown of testbeds between processes.
class StateDirLock
{
      public:
	StateDirLock()
	{
		make_dirs(kStateDir);
		const std::string path = std::string(kStateDir) + "/.lock";
		fd_.reset(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
		if (fd_.get() < 0)
			throw Error("cannot open " + path + ": " + errno_text(errno));
		while (::flock(fd_.get(), LOCK_EX) != 0)
			if (errno != EINTR)
				throw Error("cannot lock " + path + ": " + errno_text(errno));
	}

      private:
	Fd fd_;
};

std::string random_instance()
{
	std::random_device rd;
	char buf[17];
	std::snprintf(buf, sizeof(buf), "%08x%08x", rd(), rd());
	return buf;
}

// ---------------------------------------------------------------------
// teardown: replay the journal newest first, then sweep by name

void wait_for_helper(const json &doc)
{
	if (!doc.contains("helper") || !identity_alive(doc["helper"]))
		return;
	const auto pid = doc["helper"]["pid"].get<pid_t>();
	for (int i = 0; i < 1500 && identity_alive(doc["helper"]); i++)
		sleep_ms(20);
	if (identity_alive(doc["helper"])) {
		std::fprintf(stderr,
			     "lumen testbed: command %d of the dead creator still runs after 30 s: killing it\n", pid);
		::kill(pid, SIGKILL);
	}
}

std::vector<std::string> journal_names(const json &doc, const std::string &kind, const std::string &key)
{
	std::vector<std::string> out;
	for (const auto &e : doc.value("journal", json::array()))
		if (e.value("kind", "") == kind)
			out.push_back(e.value(key, ""));
	return out;
}

// Detaches the switch ports of the journal (newest first), then any other
// port whose device lives in one of the testbed's namespaces. Adds the
// namespaces of ports that could not be detached to `keep`: deleting them
// would leave a port record behind that a new namespace could match.
void detach_testbed_ports(const json &doc, const std::string &exe, std::vector<std::string> *failures,
			  std::set<std::string> *keep)
{
	const std::string prefix = testbed_netns_prefix(doc.at("name").get<std::string>());
	std::vector<SwitchPort> ours;
	try {
		for (const auto &p : switch_ports(exe))
			if (starts_with(p.netns, prefix))
				ours.push_back(p);
	} catch (const Error &e) {
		failures->push_back(e.what());
		for (const auto &ns : netns_with_prefix(prefix))
			keep->insert(ns);
		return;
	}
	std::vector<SwitchPort> ordered;
	const json journal = doc.value("journal", json::array());
	for (auto it = journal.rbegin(); it != journal.rend(); ++it) {
		if (it->value("kind", "") != "port")
			continue;
		for (auto p = ours.begin(); p != ours.end(); ++p) {
			if (p->dev == it->value("dev", "") && p->netns == it->value("netns", "")) {
				ordered.push_back(*p);
				ours.erase(p);
				break;
			}
		}
	}
	ordered.insert(ordered.end(), ours.begin(), ours.end());
	for (const auto &p : ordered) {
		std::string failure = detach_port(exe, p);
		if (!failure.empty()) {
			failures->push_back(failure);
			keep->insert(p.netns);
		}
	}
}

std::string delete_netns_unless_kept(const std::string &ns, const std::set<std::string> &keep)
{
	if (keep.count(ns) && netns_exists(ns))
		return "kept network namespace " + ns + ": a switch port in it is still attached";
	return delete_netns(ns);
}

// SIGTERM to the delay lines, so they exit cleanly (final counters
// written); whatever still runs after 2 s is SIGKILLed with the rest of
// the namespaces' processes.
void stop_delay_lines(const json &doc)
{
	std::vector<json> running;
	for (const auto &e : doc.value("journal", json::array()))
		if (e.value("kind", "") == "delayline" && identity_alive(e.value("process", json())))
			running.push_back(e["process"]);
	for (const auto &id : running)
		::kill(id["pid"].get<pid_t>(), SIGTERM);
	for (int i = 0; i < 100; i++) {
		if (std::none_of(running.begin(), running.end(), identity_alive))
			return;
		sleep_ms(20);
	}
}

std::string remove_delay_dir(const std::string &testbed)
{
	const std::string dir = delay_dir(testbed);
	for (const auto &f : list_dir(dir))
		::unlink((dir + "/" + f).c_str());
	if (::rmdir(dir.c_str()) != 0 && errno != ENOENT)
		return "cannot remove " + dir + ": " + errno_text(errno);
	return "";
}

// Undoes everything a state file records; returns what could not be undone.
std::vector<std::string> teardown(const json &doc)
{
	std::vector<std::string> failures;
	const std::string name = doc.at("name").get<std::string>();
	const std::string prefix = testbed_netns_prefix(name);
	wait_for_helper(doc);

	std::vector<std::string> namespaces = netns_with_prefix(prefix);
	std::string cg = doc.value("cgroup", "");
	stop_delay_lines(doc);
	kill_testbed_processes(cg, namespaces);

	std::set<std::string> keep;
	try {
		detach_testbed_ports(doc, lumen_exe(), &failures, &keep);
	} catch (const Error &e) {
		failures.push_back(e.what());
		for (const auto &ns : namespaces)
			keep.insert(ns);
	}

	const json journal = doc.value("journal", json::array());
	for (auto it = journal.rbegin(); it != journal.rend(); ++it) {
		std::string failure;
		if (it->value("kind", "") == "netns")
			failure = delete_netns_unless_kept(it->value("name", ""), keep);
		else if (it->value("kind", "") == "cgroup")
			failure = remove_cgroup(it->value("path", ""));
		if (!failure.empty())
			failures.push_back(failure);
	}
	// namespaces created after their entry was written but never recorded
	for (const auto &ns : netns_with_prefix(prefix)) {
		if (keep.count(ns))
			continue; // reported above
		std::string failure = delete_netns(ns);
		if (!failure.empty())
			failures.push_back(failure);
	}
	std::string failure = remove_delay_dir(name);
	if (!failure.empty())
		failures.push_back(failure);
	return failures;
}

// Runs the teardown; removes the state file when everything is gone,
// otherwise keeps it (without an owner) so `lumen testbed down` can retry.
std::vector<std::string> teardown_and_forget(json doc)
{
	std::vector<std::string> failures = teardown(doc);
	const std::string path = state_path(doc.at("name").get<std::string>());
	if (failures.empty()) {
		if (::unlink(path.c_str()) != 0 && errno != ENOENT)
			failures.push_back("cannot remove " + path + ": " + errno_text(errno));
		return failures;
	}
	doc["owner"] = nullptr;
	doc["helper"] = nullptr;
	doc["teardown_failures"] = failures;
	try {
		save_state(doc);
	} catch (const Error &e) {
		failures.push_back(e.what());
	}
	return failures;
}

void print_failures(const std::string &name, const std::vector<std::string> &failures)
{
	for (const auto &f : failures)
		std::fprintf(stderr, "lumen testbed %s: teardown: %s\n", name.c_str(), f.c_str());
	if (!failures.empty())
		std::fprintf(stderr, "lumen testbed %s: state kept in %s; retry with 'lumen testbed down %s'\n",
			     name.c_str(), state_path(name).c_str(), name.c_str());
}

// ---------------------------------------------------------------------
// JSON forms of hosts and ports (state file, status)

json host_json(const TestbedHost &h)
{
	return json{{"name", h.name}, {"netns", h.netns}, {"addr", h.addr}, {"role", h.role}};
}

json port_json(const TestbedPort &p)
{
	return json{{"name", p.name},
		    {"dev", p.dev},
		    {"netns", p.netns},
		    {"peer", p.peer},
		    {"peer_netns", p.peer_netns},
		    {"port_id", p.port_id},
		    {"rate_mbps", p.rate_mbps},
		    {"bottleneck", p.bottleneck}};
}

TestbedHost host_from_json(const json &j)
{
	return {j.at("name").get<std::string>(), j.at("netns").get<std::string>(), j.at("addr").get<std::string>(),
		j.at("role").get<std::string>()};
}

TestbedPort port_from_json(const json &j)
{
	TestbedPort p;
	p.name = j.at("name").get<std::string>();
	p.dev = j.at("dev").get<std::string>();
	p.netns = j.at("netns").get<std::string>();
	p.peer = j.at("peer").get<std::string>();
	p.peer_netns = j.at("peer_netns").get<std::string>();
	p.port_id = j.at("port_id").get<std::uint32_t>();
	p.rate_mbps = j.at("rate_mbps").get<std::uint32_t>();
	p.bottleneck = j.at("bottleneck").get<bool>();
	return p;
}

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

// Refuses to start when anything of that name is around already, or when
// the switch has too few free ports.
void check_nothing_exists(const TopologySpec &spec, const std::string &exe)
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
	for (const auto &p : switch_ports(exe)) {
		if (port_is_dead(p)) {
			std::fprintf(stderr, "testbed %s: removing dead switch port %u (%s in %s: %s)\n",
				     spec.name.c_str(), p.id, p.dev.c_str(), p.netns.c_str(), p.state.c_str());
			std::string failure = detach_port(exe, p);
			if (failure.empty())
				continue;
			std::fprintf(stderr, "testbed %s: %s\n", spec.name.c_str(), failure.c_str());
		}
		if (starts_with(p.netns, prefix))
			throw Error("switch port " + std::to_string(p.id) + " is on " + p.dev + " in " + p.netns +
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

} // namespace

struct Testbed::State {
	TopologySpec spec;
	TestbedPlan plan;
	std::vector<TestbedHost> hosts;
	std::vector<TestbedPort> ports;
	std::string cgroup;
	std::uint64_t base_rtt_ns = 0;
	std::string instance;
	bool released = false;
	bool destroyed = false;
};

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
	for (const auto &[node, settings] : plan.sysctls) {
		const std::string &ns = plan.node(node).netns;
		c.step("sysctl in " + ns, [&] {
			std::vector<std::string> argv = {"ip", "netns", "exec", ns, "sysctl", "-q", "-w"};
			argv.insert(argv.end(), settings.begin(), settings.end());
			c.run(argv);
		});
	}
	c.stage_end();
}

// One veth pair between two namespaces, offloads off on both ends.
void create_veth(Creation &c, const std::string &ns_x, const std::string &dev_x, const std::string &ns_y,
		 const std::string &dev_y)
{
	c.run({"ip", "link", "add", "name", dev_x, "netns", ns_x, "type", "veth", "peer", "name", dev_y, "netns",
	       ns_y});
	for (const auto &[ns, dev] : {std::pair{ns_x, dev_x}, std::pair{ns_y, dev_y}}) {
		std::vector<std::string> argv = {"ip", "netns", "exec", ns, "ethtool", "-K", dev};
		argv.insert(argv.end(), kOffloadsOff.begin(), kOffloadsOff.end());
		c.run(argv);
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
			if (e->node == node)
				batch += "link set " + e->dev + " up\naddr add " + e->cidr + " dev " + e->dev + "\n";
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

std::uint32_t parse_attached_port_id(const std::string &output)
{
	const std::string tag = "switch port ";
	auto at = output.find(tag);
	if (at != std::string::npos) {
		std::size_t end = at + tag.size();
		while (end < output.size() && output[end] >= '0' && output[end] <= '9')
			end++;
		if (end > at + tag.size() && end < output.size() && output[end] == ':')
			return static_cast<std::uint32_t>(std::stoul(output.substr(at + tag.size())));
	}
	throw Error("cannot find the port id in the output of 'lumen switch attach': " + trim(output));
}

void attach_ports(Creation &c, Testbed::State &st)
{
	c.stage_begin(std::to_string(st.plan.ports.size()) + " INT switch ports");
	for (const auto &pp : st.plan.ports) {
		const TestbedPort &p = pp.port;
		c.step("switch port " + p.name, [&] {
			c.journal({{"kind", "port"}, {"dev", p.dev}, {"netns", p.netns}});
			std::vector<std::string> argv = {c.exe(),	 "switch",
							 "attach",	 p.dev,
							 "--netns",	 p.netns,
							 "--peer",	 p.peer,
							 "--peer-netns", p.peer_netns,
							 "--rate",	 rate_arg_text(pp.link.rate_mbps),
							 "--buffer",	 std::to_string(pp.link.buffer_bytes)};
			if (pp.link.ecn_threshold_bytes)
				argv.insert(argv.end(),
					    {"--ecn-threshold", std::to_string(pp.link.ecn_threshold_bytes)});
			if (!pp.link.int_enabled)
				argv.push_back("--no-int");
			TestbedPort attached = p;
			attached.port_id = parse_attached_port_id(c.run(argv));
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
	Fd ns(open_netns(netns));
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

void measure_base_rtt(Creation &c, Testbed::State &st)
{
	const PlanNode &from = st.plan.node(st.plan.rtt_from), &to = st.plan.node(st.plan.rtt_to);
	c.stage_begin("base RTT " + from.name + " -> " + to.name);
	c.step("base RTT", [&] {
		HelperResult r = run_helper({"ip", "netns", "exec", from.netns, "ping", "-n", "-q", "-c", "8", "-i",
					     "0.05", "-W", "2", to.addr},
					    "", [&](pid_t pid) {
						    c.doc()["helper"] = process_identity(pid);
						    c.save();
					    });
		st.base_rtt_ns = ping_min_rtt_ns(r.output);
		if (r.exit_code != 0 || st.base_rtt_ns == 0)
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
	const std::string exe = lumen_exe();
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
		check_nothing_exists(spec, exe);
		if (!create_state_exclusively(doc))
			throw Error("testbed " + spec.name + " exists (" + state_path(spec.name) +
				    "); 'lumen testbed down " + spec.name + "' removes it");
	}
	Creation c(spec.name, exe, std::move(doc));
	try {
		build(c, *st);
		c.doc() = complete_doc(c.doc(), *st, monotonic_ns() - t0);
		c.save();
	} catch (const std::exception &e) {
		std::fprintf(stderr, "testbed %s: setup failed after %d steps, tearing down: %s\n", spec.name.c_str(),
			     c.steps(), e.what());
		StateDirLock lock;
		print_failures(spec.name, teardown_and_forget(c.doc()));
		throw;
	}
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
	Fd netns(open_netns(host.netns));
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
