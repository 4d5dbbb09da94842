// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/experiment/experiment_remote.cpp - real hosts over SSH (see
// experiment_remote.h).
#include "experiment/experiment_remote.h"

#include "base/error.h"
#include "base/interrupt.h"
#include "base/ping.h"
#include "base/system.h"
#include "base/units.h"
#include "experiment/experiment_kmod.h"
#include "experiment/experiment_proc.h"
#include "experiment/remote.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace lumen
{

namespace
{

using nlohmann::json;

constexpr const char *kKmodParams = "/sys/module/tcp_powertcp/parameters";
constexpr std::uint64_t kSamplerReadyNs = 15 * kSec;

void warn(const std::string &what)
{
	std::fprintf(stderr, "lumen experiment: warning: %s\n", what.c_str());
}

// What `lumen host info --json` said, and the clock.
struct NodeInfo {
	std::string hostname, kernel_release, boot_id, lumen_version, cgroup2_root;
	bool btf = false, kmod_loaded = false, init_netns = true;
	std::vector<std::string> available_cc;
	ClockOffset clock;
};

// A host or a switch of the inventory.
struct Node {
	SshTarget target;
	bool is_switch = false;
	std::string role, addr; // hosts
	NodeInfo info;
	std::size_t kernel = 0; // index into the kernels
};

NodeInfo parse_info(const std::string &text, const SshTarget &t)
{
	NodeInfo n;
	try {
		json j = json::parse(text);
		n.hostname = j.at("hostname").get<std::string>();
		n.kernel_release = j.at("kernel_release").get<std::string>();
		n.boot_id = j.at("boot_id").get<std::string>();
		n.lumen_version = j.at("lumen_version").get<std::string>();
		n.cgroup2_root = j.at("cgroup2_root").get<std::string>();
		n.btf = j.at("btf").get<bool>();
		n.kmod_loaded = j.at("kmod_loaded").get<bool>();
		n.available_cc = j.at("available_cc").get<std::vector<std::string>>();
		n.init_netns = j.at("init_netns").get<bool>();
	} catch (const json::exception &e) {
		throw Error("'" + t.lumen + " host info --json' on " + t.name + " answered something else (" +
			    e.what() + "): " + trim(text));
	}
	if (n.boot_id.empty())
		throw Error(t.name + " reports no boot id");
	return n;
}

NodeInfo probe_node(const SshTarget &t)
{
	ProcessResult r = ssh_run(t, {t.lumen, "host", "info", "--json"});
	if (r.status == 255)
		throw Error("cannot reach " + t.name + " (ssh " + t.destination + "): " + trim(r.output));
	if (r.status == 127)
		throw Error("no lumen on " + t.name + " ('" + t.lumen +
			    "' not found; install lumen there or set \"lumen\" in the inventory): " + trim(r.output));
	if (r.status != 0)
		throw Error("'" + t.lumen + " host info' failed on " + t.name + " (exit " + std::to_string(r.status) +
			    "): " + trim(r.output));
	NodeInfo info = parse_info(r.output, t);
	info.clock = ssh_clock_offset(t);
	return info;
}

std::vector<Node> inventory_nodes(const Inventory &inv)
{
	std::vector<Node> nodes;
	for (const auto &h : inv.hosts) {
		Node n;
		n.target = {h.name, h.ssh, h.ssh_options, h.lumen};
		n.role = h.role;
		n.addr = h.addr;
		nodes.push_back(n);
	}
	for (const auto &s : inv.switches) {
		Node n;
		n.target = {s.name, s.ssh, s.ssh_options, s.lumen};
		n.is_switch = true;
		n.role = "switch";
		nodes.push_back(n);
	}
	return nodes;
}

// Why a node cannot take part, or "".
std::string node_problem(const Node &n)
{
	if (n.info.lumen_version != lumen_version())
		return "runs lumen " + n.info.lumen_version + ", this runner " + lumen_version() +
		       " (the CSV formats must match: install the same version)";
	if (n.info.cgroup2_root.empty())
		return "has no cgroup v2 hierarchy mounted";
	return "";
}

std::string fmt_us(double ns)
{
	char buf[32];
	std::snprintf(buf, sizeof(buf), "%.1f", ns / 1e3);
	return buf;
}

// ---------------------------------------------------------------------
// Queues of Linux switches, streamed by `lumen switch sample`

class RemoteQueue : public QueueSource
{
      public:
	struct Stream {
		std::string name, file; // local file the ssh session writes
		std::int64_t offset_ns = 0;
		std::size_t first_port = 0; // index of its first watched port in ports_
		std::vector<int> columns; // per watched port: index in the sample lines
		std::size_t read = 0; // bytes of the file consumed
		std::string partial;
	};

	const std::vector<PortInfo> &ports() const override
	{
		return ports_;
	}

	// Reads the header line of a stream (waiting for it), picks the ports.
	void add_stream(Stream s, const InventorySwitch &sw, ChildSet &samplers)
	{
		std::uint64_t deadline = monotonic_ns() + kSamplerReadyNs;
		std::string header;
		for (;;) {
			std::string text = read_all(s.file);
			auto nl = text.find('\n');
			if (nl != std::string::npos) {
				header = text.substr(0, nl);
				s.read = nl + 1;
				break;
			}
			if (samplers.poll() < samplers.size())
				throw Error("the queue sampler on " + sw.name + " stopped: " + trim(text));
			if (monotonic_ns() > deadline)
				throw Error("no queue samples from " + sw.name + " within 15 s: " + trim(text));
			sleep_interruptible_ns(20 * kMs);
		}
		json head;
		try {
			head = json::parse(header).at("ports");
		} catch (const json::exception &e) {
			throw Error("'lumen switch sample' on " + sw.name + " said: " + header);
		}
		s.first_port = ports_.size();
		std::set<std::string> found;
		for (std::size_t i = 0; i < head.size(); i++) {
			std::string dev = head[i].value("dev", "");
			if (!sw.ports.empty() && std::find(sw.ports.begin(), sw.ports.end(), dev) == sw.ports.end())
				continue;
			found.insert(dev);
			bool bottleneck =
				std::find(sw.bottleneck.begin(), sw.bottleneck.end(), dev) != sw.bottleneck.end();
			ports_.push_back({sw.name + ":" + dev, head[i].value("rate_mbps", 0u), bottleneck});
			s.columns.push_back(static_cast<int>(i));
			latest_.push_back({});
		}
		for (const auto &want : sw.ports)
			if (!found.count(want))
				throw Error(sw.name + " has no switch port " + want + " ('lumen switch stats' there)");
		for (const auto &want : sw.bottleneck)
			if (!found.count(want))
				throw Error(sw.name + " has no switch port " + want + " (bottleneck)");
		streams_.push_back(std::move(s));
	}

	void poll(std::vector<QueueTick> &out) override
	{
		// the other switches first, so a tick of the first one carries
		// their freshest counters
		for (std::size_t i = streams_.size(); i-- > 0;)
			consume(streams_[i], i == 0 ? &out : nullptr);
	}

      private:
	static std::string read_all(const std::string &path)
	{
		std::ifstream f(path);
		std::stringstream ss;
		ss << f.rdbuf();
		return ss.str();
	}

	void consume(Stream &s, std::vector<QueueTick> *out)
	{
		std::ifstream f(s.file);
		f.seekg(static_cast<std::streamoff>(s.read));
		std::string chunk((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
		s.read += chunk.size();
		s.partial += chunk;
		std::size_t nl;
		while ((nl = s.partial.find('\n')) != std::string::npos) {
			std::string line = s.partial.substr(0, nl);
			s.partial.erase(0, nl + 1);
			std::uint64_t t = 0;
			try {
				json j = json::parse(line);
				t = j.at("t_ns").get<std::uint64_t>();
				const json &c = j.at("c");
				for (std::size_t k = 0; k < s.columns.size(); k++) {
					const json &v = c.at(static_cast<std::size_t>(s.columns[k]));
					PortCounters &p = latest_[s.first_port + k];
					p.enq_bytes = v.at(0).get<std::uint64_t>();
					p.deq_bytes = v.at(1).get<std::uint64_t>();
					p.drops = v.at(2).get<std::uint64_t>();
					p.ecn_marks = v.at(3).get<std::uint64_t>();
					p.qlen_bytes = p.enq_bytes > p.deq_bytes ? p.enq_bytes - p.deq_bytes : 0;
				}
			} catch (const json::exception &) {
				throw Error("malformed queue sample from " + s.name + ": " + line);
			}
			if (out)
				out->push_back({static_cast<std::uint64_t>(static_cast<std::int64_t>(t) - s.offset_ns),
						latest_});
		}
	}

	std::vector<PortInfo> ports_;
	std::vector<PortCounters> latest_;
	std::vector<Stream> streams_;
};

// ---------------------------------------------------------------------
// The hosts

// Runs every argv at once (ssh to many hosts), waits for all.
std::vector<ProcessResult> run_parallel(const std::vector<std::vector<std::string>> &argvs, const std::string &scratch)
{
	std::vector<pid_t> pids;
	std::vector<std::string> files;
	std::vector<ProcessResult> results(argvs.size());
	for (std::size_t i = 0; i < argvs.size(); i++) {
		std::string file = scratch + "/.parallel-" + std::to_string(::getpid()) + "-" + std::to_string(i);
		int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0)
			throw Error("cannot create " + file + ": " + std::strerror(errno));
		pid_t pid = ::fork();
		if (pid == 0) {
			int null_fd = ::open("/dev/null", O_RDONLY);
			if (null_fd < 0 || ::dup2(null_fd, 0) < 0 || ::dup2(fd, 1) < 0 || ::dup2(fd, 2) < 0)
				::_exit(127);
			std::vector<char *> args;
			for (const auto &a : argvs[i])
				args.push_back(const_cast<char *>(a.c_str()));
			args.push_back(nullptr);
			::execvp(args[0], args.data());
			::_exit(127);
		}
		::close(fd);
		if (pid < 0)
			throw Error(std::string("fork: ") + std::strerror(errno));
		pids.push_back(pid);
		files.push_back(file);
	}
	for (std::size_t i = 0; i < pids.size(); i++) {
		int wstatus = 0;
		while (::waitpid(pids[i], &wstatus, 0) < 0 && errno == EINTR) {
		}
		results[i].status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
		std::ifstream f(files[i]);
		std::stringstream ss;
		ss << f.rdbuf();
		results[i].output = ss.str();
		::unlink(files[i].c_str());
	}
	return results;
}

class RemoteFabric : public Fabric
{
      public:
	RemoteFabric(const Inventory &inv, const ExperimentSpec &spec, const std::string &run_id,
		     const std::string &raw_dir, ProgressFn progress)
	    : inv_(inv), run_id_(run_id), raw_dir_(raw_dir), progress_(progress)
	{
		try {
			setup(spec);
		} catch (...) {
			teardown();
			throw;
		}
	}
	RemoteFabric(const RemoteFabric &) = delete;
	RemoteFabric &operator=(const RemoteFabric &) = delete;
	~RemoteFabric() override
	{
		teardown();
	}

	const std::vector<FabricHost> &hosts() const override
	{
		return hosts_;
	}
	std::uint32_t path_rate_mbps() const override
	{
		return inv_.path_rate_mbps;
	}
	std::uint64_t base_rtt_ns() const override
	{
		return base_rtt_ns_;
	}
	QueueSource &queue() override
	{
		if (samplers_.poll() < samplers_.size())
			throw Error("a queue sampler stopped: " + samplers_.failures().front() + " (see " + raw_dir_ +
				    "/switch-*.jsonl)");
		return queue_;
	}

	void load_algorithms(const AlgorithmSetup &setup) override
	{
		check_algorithms(setup);
		for (std::size_t k : traffic_kernels()) {
			Kernel &kr = kernels_[k];
			const SshTarget &t = rep(k);
			if (!setup.bpf_params.empty()) {
				std::vector<std::string> argv = {t.lumen, "cc", "load", "--allow"};
				argv.insert(argv.end(), setup.bpf_params.begin(), setup.bpf_params.end());
				try {
					ssh_run_checked(t, argv, "lumen cc load");
				} catch (const Error &e) {
					if (nodes_[kr.rep].info.init_netns)
						throw;
					throw Error(std::string(e.what()) + " (every host of " + t.name +
						    "'s kernel is in a child network namespace, where kernel-wide "
						    "settings are read-only: add a host or switch of that machine's "
						    "initial namespace to the inventory)");
				}
				kr.cc_loaded = true;
			}
			if (setup.kmod_params)
				for (const auto &[name, value] : *setup.kmod_params) {
					std::string path = std::string(kKmodParams) + "/" + name;
					std::string old =
						trim(ssh_run_checked(t, {"cat", "--", path}, "reading " + path));
					write_remote(t, path, value);
					kr.kmod_saved.emplace_back(path, old);
				}
			if (setup.int_sockops) {
				std::vector<std::string> argv = {t.lumen, "int", "enable", "--cgroup", cgroup_dir(k)};
				if (setup.int_wide)
					argv.push_back("--wide");
				ssh_run_checked(t, argv, "lumen int enable");
				kr.int_enabled = true;
			}
		}
	}

	std::string host_dir(const std::string &host, const std::string &raw) override
	{
		std::size_t k = node(host).kernel;
		std::string name = raw.substr(raw.find_last_of('/') + 1);
		std::string dir = kernels_[k].workdir + "/" + name; // in our private directory
		if (kernels_[k].dirs.insert(dir).second)
			ssh_run_checked(rep(k), {"mkdir", "-p", "--", dir}, "mkdir " + dir);
		return dir;
	}

	pid_t spawn_lumen(const std::string &host, const std::vector<std::string> &args, const std::string &stdout_path,
			  const std::string &stderr_path, bool with_input) override
	{
		const Node &n = node(host);
		std::vector<std::string> argv = {n.target.lumen};
		argv.insert(argv.end(), args.begin(), args.end());
		return run_sessions_.spawn(n.target, run_id_, argv, stdout_path, stderr_path, with_input);
	}

	void send_input(pid_t pid, const std::string &text) override
	{
		run_sessions_.write_input(pid, text);
	}

	bool fetch(const std::string &host, const std::string &path, const std::string &local_path) override
	{
		try {
			ssh_fetch(node(host).target, path, local_path);
			return true;
		} catch (const Error &e) {
			warn(e.what());
			return false;
		}
	}

	std::int64_t clock_offset_ns(const std::string &host) const override
	{
		return node(host).info.clock.offset_ns;
	}

	void end_run() override
	{
		run_sessions_.close_inputs();
	}

	// `lumen switch heal --all` on every switch of the inventory: its
	// lines "switch port N (...): B bytes healed" summed.
	std::uint64_t heal_idle_queues() override
	{
		std::uint64_t healed = 0;
		for (const Node &n : nodes_) {
			if (!n.is_switch)
				continue;
			std::string out = ssh_run_checked(n.target, {n.target.lumen, "switch", "heal", "--all"},
							  "lumen switch heal on " + n.target.name);
			std::istringstream lines(out);
			for (std::string line; std::getline(lines, line);) {
				const std::string tail = " bytes healed";
				std::size_t colon = line.rfind(": ");
				if (colon == std::string::npos || line.size() < tail.size() ||
				    line.compare(line.size() - tail.size(), tail.size(), tail) != 0)
					continue;
				healed += std::strtoull(line.c_str() + colon + 2, nullptr, 10);
			}
		}
		return healed;
	}

	KmodCounters kmod_stats() override
	{
		KmodCounters sum;
		for (std::size_t k : traffic_kernels()) {
			std::string path = "/proc/net/powertcp"; // the host's own namespace
			auto c = parse_kmod_stats(ssh_run_checked(rep(k), {"cat", "--", path}, "reading " + path),
						  rep(k).name + ":" + path);
			for (const auto &[name, v] : c)
				sum[name] += v; // one kernel each: hooks counts kernels with hooks
		}
		return sum;
	}

	std::string describe_json() const override
	{
		json nodes = json::array();
		for (const auto &n : nodes_)
			nodes.push_back({{"name", n.target.name},
					 {"kind", n.is_switch ? "switch" : "host"},
					 {"role", n.role},
					 {"addr", n.addr},
					 {"ssh", n.target.destination},
					 {"hostname", n.info.hostname},
					 {"kernel_release", n.info.kernel_release},
					 {"boot_id", n.info.boot_id},
					 {"kernel_group", n.kernel},
					 {"clock_offset_ns", n.info.clock.offset_ns},
					 {"clock_rtt_ns", n.info.clock.rtt_ns}});
		json ports = json::array();
		for (const auto &p : queue_.ports())
			ports.push_back({{"name", p.name}, {"rate_mbps", p.rate_mbps}, {"bottleneck", p.bottleneck}});
		return json{{"hosts",
			     {{"inventory", json::parse(inventory_to_json(inv_))},
			      {"run_id", run_id_},
			      {"base_rtt_ns", base_rtt_ns_},
			      {"base_rtt_measured", inv_.base_rtt_ns == 0},
			      {"nodes", nodes},
			      {"kernels", kernels_.size()},
			      {"switch_ports", ports}}}}
			.dump();
	}

      private:
	struct Kernel {
		std::size_t rep = 0; // the node that runs this kernel's setup
		bool traffic = false; // a host (not only a switch) runs on it
		bool cgroup = false, cc_loaded = false, int_enabled = false;
		std::string workdir; // made by make_workdir(); "" = none
		std::vector<std::pair<std::string, std::string>> kmod_saved; // path, old value
		std::set<std::string> dirs;
	};

	const Node &node(const std::string &name) const
	{
		for (const auto &n : nodes_)
			if (n.target.name == name)
				return n;
		throw Error("the inventory has no host " + name);
	}
	const SshTarget &rep(std::size_t k) const
	{
		return nodes_[kernels_[k].rep].target;
	}
	std::vector<std::size_t> traffic_kernels() const
	{
		std::vector<std::size_t> out;
		for (std::size_t k = 0; k < kernels_.size(); k++)
			if (kernels_[k].traffic)
				out.push_back(k);
		return out;
	}
	// A new private directory under the inventory's workdir for what the
	// generators write: mktemp(1) makes it with mode 0700 under a random
	// name it refuses to reuse, so no other user of a shared /tmp can plant
	// a symlink where root writes, or have a file of theirs taken for ours.
	std::string make_workdir(std::size_t k)
	{
		std::string out = ssh_run_checked(rep(k), {"mktemp", "-d", "-p", inv_.workdir, run_id_ + ".XXXXXXXX"},
						  "mktemp -d in " + inv_.workdir);
		std::string dir = private_workdir_path(out, inv_.workdir + "/" + run_id_ + ".");
		if (dir.empty())
			throw Error("mktemp -d in " + inv_.workdir + " on " + rep(k).name + " answered '" + out + "'");
		return dir;
	}
	std::string cgroup_dir(std::size_t k) const
	{
		return nodes_[kernels_[k].rep].info.cgroup2_root + "/" + run_id_;
	}

	static void write_remote(const SshTarget &t, const std::string &path, const std::string &value)
	{
		ssh_run_checked(t, {"sh", "-c", "printf '%s\\n' \"$1\" > \"$2\"", "sh", value, path},
				"writing " + path);
	}

	void setup(const ExperimentSpec &spec)
	{
		nodes_ = inventory_nodes(inv_);
		progress_("[" + spec.name + "] checking " + std::to_string(nodes_.size()) + " host(s) of " +
			  inv_.source + " over SSH");
		for (auto &n : nodes_) {
			n.info = probe_node(n.target);
			std::string problem = node_problem(n);
			if (!problem.empty())
				throw Error(n.target.name + " " + problem);
		}
		// one setup per kernel, from a node in its initial network
		// namespace if there is one (a machine's namespaces share the
		// kernel; some of its settings are only writable from there)
		std::map<std::string, std::size_t> by_boot;
		for (std::size_t i = 0; i < nodes_.size(); i++) {
			auto [it, fresh] = by_boot.emplace(nodes_[i].info.boot_id, kernels_.size());
			if (fresh) {
				kernels_.push_back({});
				kernels_.back().rep = i;
			}
			Kernel &kr = kernels_[it->second];
			if (nodes_[i].info.init_netns && !nodes_[kr.rep].info.init_netns)
				kr.rep = i;
			nodes_[i].kernel = it->second;
			kr.traffic |= !nodes_[i].is_switch;
		}
		for (const auto &n : nodes_)
			if (!n.is_switch)
				hosts_.push_back({n.target.name, n.role, n.addr});
		for (std::size_t k = 0; k < kernels_.size(); k++) {
			ssh_run_checked(rep(k), {rep(k).lumen, "host", "cgroup-create", run_id_},
					"lumen host cgroup-create");
			kernels_[k].cgroup = true;
			kernels_[k].workdir = make_workdir(k);
		}
		start_samplers();
		base_rtt_ns_ = inv_.base_rtt_ns ? inv_.base_rtt_ns : measure_base_rtt(spec);
		std::string offsets;
		for (const auto &n : nodes_)
			offsets += " " + n.target.name + " " + fmt_us(double(n.info.clock.offset_ns)) + "us(+-" +
				   fmt_us(double(n.info.clock.rtt_ns) / 2) + ")";
		progress_("[" + spec.name + "] " + std::to_string(nodes_.size()) + " host(s) on " +
			  std::to_string(kernels_.size()) + " kernel(s); base RTT " + fmt_us(double(base_rtt_ns_)) +
			  " us" + (inv_.base_rtt_ns ? " (inventory)" : " (measured)") + "; clock offsets" + offsets);
	}

	void start_samplers()
	{
		for (const auto &sw : inv_.switches) {
			const Node &n = node(sw.name);
			RemoteQueue::Stream s;
			s.name = sw.name;
			s.file = raw_dir_ + "/switch-" + sw.name + ".jsonl";
			s.offset_ns = n.info.clock.offset_ns;
			pid_t pid = sampler_sessions_.spawn(n.target, run_id_,
							    {n.target.lumen, "switch", "sample", "--interval", "10ms"},
							    s.file, s.file);
			samplers_.add(pid, "queue sampler on " + sw.name);
			queue_.add_stream(s, sw, samplers_);
		}
	}

	// The idle RTT of the longest path: the largest of the minimum RTTs
	// from each sender to each of its destinations.
	std::uint64_t measure_base_rtt(const ExperimentSpec &spec)
	{
		std::vector<HostRef> refs;
		for (const auto &h : hosts_)
			refs.push_back({h.name, h.role});
		std::set<std::pair<std::string, std::string>> pairs;
		for (const auto &ph : spec.phases) {
			auto from = expand_hosts(ph.from, refs, spec.source + ": phase " + ph.name + ": from");
			auto to = expand_hosts(ph.to, refs, spec.source + ": phase " + ph.name + ": to");
			for (const auto &f : from)
				for (const auto &t : to)
					if (f != t)
						pairs.insert({f, t});
		}
		std::vector<std::vector<std::string>> argvs;
		std::vector<std::string> names;
		for (const auto &[f, t] : pairs) {
			argvs.push_back(ssh_argv(node(f).target, {"ping", "-n", "-q", "-c", "8", "-i", "0.05", "-W",
								  "2", node(t).addr}));
			names.push_back(f + " -> " + t + " (" + node(t).addr + ")");
		}
		auto results = run_parallel(argvs, raw_dir_);
		std::uint64_t rtt = 0;
		for (std::size_t i = 0; i < results.size(); i++) {
			std::uint64_t r = ping_min_rtt_ns(results[i].output);
			if (results[i].status != 0 || r == 0)
				throw Error("no ping reply " + names[i] +
					    ": the hosts cannot reach each other on their "
					    "\"addr\"; ping said: " +
					    trim(results[i].output));
			rtt = std::max(rtt, r);
		}
		if (rtt == 0)
			throw Error("no sender/receiver pair to measure the base RTT on (set \"base_rtt\")");
		return rtt;
	}

	void check_algorithms(const AlgorithmSetup &setup)
	{
		for (std::size_t k : traffic_kernels()) {
			const Node &n = nodes_[kernels_[k].rep];
			for (const auto &a : setup.algorithms) {
				bool bpf = a == "bpf_powertcp" || a == "bpf_theta_ptcp";
				if (bpf && !n.info.btf)
					throw Error(n.target.name + " (" + n.info.kernel_release + ") has no BTF (" +
						    "/sys/kernel/btf/vmlinux): the eBPF algorithms cannot load there");
				if (bpf)
					continue;
				bool kmod = is_kmod_algorithm(a);
				if (kmod && !n.info.kmod_loaded)
					throw Error("'" + a + "' is tcp_powertcp's and the module is not loaded on " +
						    n.target.name + " (insmod tcp_powertcp.ko built for " +
						    n.info.kernel_release + ", README)");
				if (std::find(n.info.available_cc.begin(), n.info.available_cc.end(), a) !=
				    n.info.available_cc.end())
					continue;
				// a module of the kernel (tcp_bbr): load it rather than let every flow fail
				ssh_run(n.target, {"modprobe", "tcp_" + a});
				auto now = split_words(ssh_run_checked(
					n.target, {"cat", "/proc/sys/net/ipv4/tcp_available_congestion_control"},
					"reading the available congestion control"));
				if (std::find(now.begin(), now.end(), a) == now.end())
					throw Error("congestion control '" + a + "' is not available on " +
						    n.target.name + " (" + n.info.kernel_release + "; 'modprobe tcp_" +
						    a + "' did not add it)");
			}
		}
	}

	// Each step on its own: one failure must not leave the rest undone.
	void undo(const std::string &what, const std::function<void()> &step)
	{
		try {
			step();
		} catch (const std::exception &e) {
			warn(what + ": " + e.what());
		}
	}

	void teardown()
	{
		run_sessions_.close_inputs();
		sampler_sessions_.close_inputs();
		samplers_.stop_all();
		for (std::size_t k = 0; k < kernels_.size(); k++) {
			Kernel &kr = kernels_[k];
			const SshTarget &t = rep(k);
			if (kr.int_enabled)
				undo("lumen int disable on " + t.name, [&] {
					ssh_run_checked(t, {t.lumen, "int", "disable"}, "lumen int disable");
				});
			if (kr.cgroup)
				undo("removing cgroup " + run_id_ + " on " + t.name, [&] {
					ssh_run_checked(t, {t.lumen, "host", "cgroup-remove", run_id_},
							"lumen host cgroup-remove");
				});
			if (!kr.workdir.empty())
				undo("removing " + kr.workdir + " on " + t.name, [&] {
					ssh_run_checked(t, {"rm", "-rf", "--", kr.workdir}, "rm " + kr.workdir);
				});
			for (auto it = kr.kmod_saved.rbegin(); it != kr.kmod_saved.rend(); ++it)
				undo("restoring " + it->first + " on " + t.name,
				     [&] { write_remote(t, it->first, it->second); });
			if (kr.cc_loaded)
				undo("lumen cc unload on " + t.name, [&] {
					ssh_run_checked(t, {t.lumen, "cc", "unload"}, "lumen cc unload");
				});
			// done (or warned about): a second teardown does nothing
			kr.int_enabled = kr.cgroup = kr.cc_loaded = false;
			kr.workdir.clear();
			kr.kmod_saved.clear();
		}
	}

	Inventory inv_;
	std::string run_id_, raw_dir_;
	ProgressFn progress_;
	std::vector<Node> nodes_;
	std::vector<Kernel> kernels_;
	std::vector<FabricHost> hosts_;
	std::uint64_t base_rtt_ns_ = 0;
	RemoteQueue queue_;
	SshSessions sampler_sessions_, run_sessions_;
	ChildSet samplers_;
};

} // namespace

std::unique_ptr<Fabric> connect_hosts(const Inventory &inv, const ExperimentSpec &spec, const std::string &run_id,
				      const std::string &raw_dir, ProgressFn progress)
{
	return std::make_unique<RemoteFabric>(inv, spec, run_id, raw_dir, progress);
}

std::string check_hosts(const Inventory &inv, std::string &problem_out)
{
	std::vector<Node> nodes = inventory_nodes(inv);
	char line[512];
	std::snprintf(line, sizeof(line), "%-10s %-8s %-22s %-16s %-24s %-7s %-3s %-12s %s\n", "name", "role", "ssh",
		      "addr", "kernel", "lumen", "BTF", "clock us", "congestion control");
	std::string table = line;
	table += std::string(std::strlen(line) - 1, '-') + "\n";
	std::string first_problem;
	std::map<std::string, std::string> kernels; // boot id -> first node
	for (auto &n : nodes) {
		std::string problem;
		try {
			n.info = probe_node(n.target);
			problem = node_problem(n);
		} catch (const Error &e) {
			problem = e.what();
		}
		if (!problem.empty()) {
			std::snprintf(line, sizeof(line), "%-10s %-8s %-22s ", n.target.name.c_str(), n.role.c_str(),
				      n.target.destination.c_str());
			table += line + ("CANNOT RUN: " + problem) + "\n";
			if (first_problem.empty())
				first_problem = n.target.name + ": " + problem;
			continue;
		}
		auto [it, fresh] = kernels.emplace(n.info.boot_id, n.target.name);
		std::string clock =
			fmt_us(double(n.info.clock.offset_ns)) + "+-" + fmt_us(double(n.info.clock.rtt_ns) / 2);
		std::snprintf(line, sizeof(line), "%-10s %-8s %-22s %-16s %-24s %-7s %-3s %-12s %s%s\n",
			      n.target.name.c_str(), n.role.c_str(), n.target.destination.c_str(), n.addr.c_str(),
			      n.info.kernel_release.c_str(), n.info.lumen_version.c_str(), n.info.btf ? "yes" : "no",
			      clock.c_str(), join_words(n.info.available_cc, ",").c_str(),
			      n.info.kmod_loaded ? ",tcp_powertcp" : "");
		table += line;
		if (!fresh)
			table += std::string(11, ' ') + "(shares the kernel of " + it->second + ")\n";
	}
	problem_out = first_problem;
	return table;
}

std::string private_workdir_path(const std::string &mktemp_output, const std::string &prefix)
{
	std::string out = trim(mktemp_output);
	std::string path = out.substr(out.find_last_of('\n') == std::string::npos ? 0 : out.find_last_of('\n') + 1);
	if (path.size() != prefix.size() + 8 || path.compare(0, prefix.size(), prefix) != 0)
		return "";
	for (std::size_t i = prefix.size(); i < path.size(); i++)
		if (!std::isalnum(static_cast<unsigned char>(path[i])))
			return "";
	return path;
}

} // namespace lumen
