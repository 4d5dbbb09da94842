// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/testbed/testbed_journal.cpp - the testbed library's helpers
// (processes, cgroups, namespaces, switch ports), the state file and
// teardown. See testbed.cpp for the journal's design.
#include "testbed/testbed_internal.h"

#include "base/error.h"
#include "base/fd.h"
#include "base/interrupt.h"
#include "base/netns.h"
#include "base/ping.h"
#include "base/cgroup.h"
#include "base/process.h"
#include "base/system.h"
#include "base/units.h"
#include "bpfctl/rotor.h"
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

namespace lumen::testbed_detail
{

// ---------------------------------------------------------------------
// small system helpers

void sleep_ms(int ms)
{
	std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

// A child's argv as exec wants it.
std::vector<char *> exec_argv(const std::vector<std::string> &argv)
{
	std::vector<char *> cargv;
	for (const auto &a : argv)
		cargv.push_back(const_cast<char *>(a.c_str()));
	cargv.push_back(nullptr);
	return cargv;
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

// Runs argv in its own process group (see the top of the file), `input`
// as its stdin; `started` sees the pid before the wait (to journal it).
ProcessResult run_helper(const std::vector<std::string> &argv, const std::string &input,
			 const std::function<void(pid_t)> &started)
{
	ProcessOptions opts;
	opts.input = input;
	opts.own_process_group = true;
	opts.started = started;
	return run_process(argv, opts);
}

// Runs argv; throws Error with its output when it fails.
std::string run_or_throw(const std::vector<std::string> &argv, const std::string &input,
			 const std::function<void(pid_t)> &started)
{
	ProcessOptions opts;
	opts.input = input;
	opts.own_process_group = true;
	opts.started = started;
	return run_checked(argv, opts);
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
	ProcessResult r = run_helper({"ip", "netns", "del", ns});
	if (r.status != 0 && netns_exists(ns))
		return "cannot delete network namespace " + ns + ": " + trim(r.output);
	return "";
}

// A port whose device namespace no longer exists by name can never work
// again. Its record must go: the kernel reuses namespace inodes and veth
// ifindexes at once, so a new namespace may look like the port's device.
bool port_is_dead(const SwitchPort &p)
{
	return !p.dev_netns.empty() && !netns_exists(p.dev_netns) && p.state.find(" gone") != std::string::npos;
}

std::string detach_port(const SwitchPort &p)
{
	SwitchPortSelector sel;
	if (netns_exists(p.dev_netns)) {
		sel.dev = p.dev;
		sel.dev_netns = p.dev_netns;
	} else {
		sel.id = p.id;
	}
	try {
		std::string warnings;
		for (const auto &d : detach_switch_ports(sel))
			for (const auto &w : d.warnings)
				warnings += (warnings.empty() ? "" : "; ") + w;
		if (warnings.empty())
			return "";
		return "switch port " + std::to_string(p.id) + " (" + p.dev + " in " + p.dev_netns + "): " + warnings;
	} catch (const Error &e) {
		return "cannot detach switch port " + std::to_string(p.id) + " (" + p.dev + " in " + p.dev_netns +
		       "): " + e.what();
	}
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
void detach_testbed_ports(const json &doc, std::vector<std::string> *failures, std::set<std::string> *keep)
{
	const std::string prefix = testbed_netns_prefix(doc.at("name").get<std::string>());
	std::vector<SwitchPort> ours;
	try {
		for (const auto &p : list_switch_ports())
			if (starts_with(p.dev_netns, prefix))
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
			if (p->dev == it->value("dev", "") && p->dev_netns == it->value("netns", "")) {
				ordered.push_back(*p);
				ours.erase(p);
				break;
			}
		}
	}
	ordered.insert(ordered.end(), ours.begin(), ours.end());
	for (const auto &p : ordered) {
		std::string failure = detach_port(p);
		if (!failure.empty()) {
			failures->push_back(failure);
			keep->insert(p.dev_netns);
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
		detach_testbed_ports(doc, &failures, &keep);
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
	// the rotor's maps (its filters went with its namespace)
	if (!journal_names(doc, "rotor", "kind").empty()) {
		try {
			detach_rotor();
		} catch (const Error &e) {
			failures.push_back(std::string("cannot remove the rotor switch: ") + e.what());
		}
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
	json j{{"name", h.name}, {"netns", h.netns}, {"addr", h.addr}, {"role", h.role}};
	if (!h.mac.empty()) {
		j["dev"] = h.dev;
		j["mac"] = h.mac;
		j["gateway_mac"] = h.gateway_mac;
	}
	return j;
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
	return {j.at("name").get<std::string>(),      j.at("netns").get<std::string>(),
		j.at("addr").get<std::string>(),      j.at("role").get<std::string>(),
		j.value("dev", std::string("eth0")),  j.value("mac", std::string()),
		j.value("gateway_mac", std::string())};
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

} // namespace lumen::testbed_detail
