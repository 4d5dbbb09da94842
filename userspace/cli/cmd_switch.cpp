// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/cli/cmd_switch.cpp - `lumen switch`: turn a veth link into a
// software INT switch egress port (bpf/int_switch.bpf.c), detach it, and
// report its queue, drop, ECN and INT statistics.
//
// One attach = one loaded instance of int_switch with its port id in
// .rodata; the programs stay alive through their tc filters after this
// process exits. State shared by every process lives under LUMEN_PIN_ROOT:
//   lumen_sw_cfg    the contract's per-port configuration (in_use, rate, ...)
//   lumen_sw_stats  the contract's per-port counters
//   lumen_sw_ports  this tool's record of each port: device names, netns
//                   names and inodes, ifindexes, tc filter handles and
//                   program ids, and what the attach created, so detach and
//                   stats work from any process. Only this file reads it.
// Every change holds an exclusive flock on LUMEN_PIN_ROOT.
#include "base/args.h"
#include "base/error.h"
#include "base/fd.h"
#include "base/interrupt.h"
#include "base/json.h"
#include "base/rollback.h"
#include "base/system.h"
#include "base/units.h"
#include "bpfctl/bpf_util.h"
#include "cli/commands.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <functional>
#include <memory>
#include <net/if.h>
#include <optional>
#include <sched.h>
#include <string>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include <linux/ethtool.h>
#include <linux/sockios.h>

extern "C" {
#include "lumen/bpf_shared.h"
}
#include "int_switch.skel.h"

namespace lumen
{
namespace
{

const char kUsage[] =
	R"(usage: lumen switch attach DEV [--netns NS] --peer PEER [--peer-netns NS] --rate RATE
                         [--buffer BYTES] [--ecn-threshold BYTES] [--no-int] [--port-id N]
       lumen switch detach (DEV [--netns NS] | --port-id N | --all)
       lumen switch stats [--json] [--port-id N]
       lumen switch sample [--interval D] [--count N]

Software INT switch: the veth link DEV -> PEER becomes a switch egress port with
a real queue. DEV (in network namespace --netns, default: the current one)
gets a tbf root qdisc at RATE: the bottleneck. A tc program on DEV's egress
hook (before tbf) counts enqueued bytes, tail-drops above the buffer and
CE-marks ECT packets above the ECN threshold; a tc program on PEER's ingress
hook (PEER = DEV's veth peer, in --peer-netns) counts dequeued bytes, so the
queue is exactly enqueued - dequeued bytes (packets in PEER's receive backlog
count as queued). At dequeue it fills the lumen INT TCP option (kind 253,
ExID 0x4C55) of data segments: dequeue time, dequeued bytes, queue length
and link rate go into the next free hop slot. Ports in series on one path
fill successive slots (multi-hop INT).

attach
  DEV                  veth device, egress side of the port
  --netns NS           network namespace of DEV (ip netns name)
  --peer PEER          the veth peer of DEV (required)
  --peer-netns NS      network namespace of PEER (default: the current one)
  --rate RATE          port rate: 100mbit, 1gbit, 2.5gbit, 25G, or Mbit/s
                       (required; whole Mbit/s, 1 Mbit/s .. 1.6 Tbit/s).
                       Bytes are counted at L2 (Ethernet header included),
                       as tbf does. A warning is printed when the INT rate
                       code cannot carry RATE exactly.
  --buffer BYTES       switch buffer, tail drop above it (default 1m;
                       k/m/g = 1024 multiples; at least one full frame,
                       at most 1g)
  --ecn-threshold BYTES
                       DCTCP-style marking threshold K: ECT packets arriving
                       while the queue exceeds K are marked CE (default 0 =
                       off; must be below the buffer)
  --no-int             do not fill INT options (queue, drops, ECN only)
  --port-id N          port id 0..63 (default: the lowest free one)
  Creates clsact qdiscs where missing, replaces DEV's root qdisc with
  "tbf rate RATE burst B limit BUFFER+96k" (B = max(2 frames, 500 us at
  RATE); the limit is above the buffer so tbf never drops before the port
  does), attaches both programs, and records the port. On any failure
  everything done so far is undone. TCP hands GSO packets (up to 64 KiB)
  to the device even with offloads off: they are admitted, dropped and
  marked whole; 'ip link set DEV gso_max_segs 1' gives per-segment
  behaviour at a CPU cost. Run lumen from the host's mount namespace (not
  under 'ip netns exec', which hides /sys/fs/bpf); use --netns instead.

detach
  Removes the programs, the tbf root qdisc (DEV falls back to the kernel's
  default qdisc; a root qdisc replaced at attach is not restored), clsact
  qdiscs the attach created once no other filter uses them, and the port's
  configuration and counters. With --all every port goes. When no port is
  left the pinned switch maps are removed.

stats
  Per port: rate, buffer, ECN threshold, queue now, maximum queue, median and
  99th percentile of the queue sampled at every dequeue (estimated from log2
  buckets, linear inside a bucket), enqueued / dequeued bytes and packets,
  drops, ECN marks, INT hops filled, requests found full, malformed options.
  --json prints one JSON object {"ports": [...]} including the histogram
  (bucket b counts samples in [2^(b-1), 2^b) bytes, bucket 0 empty queues).

sample
  Streams the counters of every attached port, for an experiment runner on
  another machine (lumen experiment run --hosts): first one JSON line
  {"ports": [{"port_id", "dev", "dev_netns", "rate_mbps"}, ...]}, then every
  --interval (default 10ms, 1ms..10s) one line {"t_ns": CLOCK_MONOTONIC,
  "c": [[enq_bytes, deq_bytes, drops, ecn_marks], ...]} in the ports' order
  (queue = enq - deq), until SIGTERM/SIGINT or --count lines.
)";

constexpr std::uint64_t kMaxBuffer = 1ull << 30; // 1 GiB: the histogram's last bucket
constexpr std::uint64_t kDefaultBuffer = 1ull << 20;
// one GSO packet admitted into an empty queue: 64 KiB + per-segment headers
constexpr std::uint64_t kTbfLimitSlack = 96 * 1024;
constexpr std::size_t kNetnsNameMax = 63;
const char kRecordsMap[] = "lumen_sw_ports";
const char kCfgMap[] = "lumen_sw_cfg";
const char kStatsMap[] = "lumen_sw_stats";

// Value of the pinned array lumen_sw_ports (index = port id).
struct PortRecord {
	__u32 in_use;
	__u32 flags; // kRec*
	char dev[IFNAMSIZ];
	char peer[IFNAMSIZ];
	char dev_netns[kNetnsNameMax + 1]; // "" = not a named namespace
	char peer_netns[kNetnsNameMax + 1];
	__u64 dev_netns_ino;
	__u64 peer_netns_ino;
	__u32 dev_ifindex;
	__u32 peer_ifindex;
	__u32 egress_handle;
	__u32 egress_priority;
	__u32 ingress_handle;
	__u32 ingress_priority;
	__u32 egress_prog_id;
	__u32 ingress_prog_id;
	__u32 burst_bytes;
	__u32 limit_bytes;
};

constexpr __u32 kRecClsactDev = 0x1; // the attach created DEV's clsact
constexpr __u32 kRecClsactPeer = 0x2; // the attach created PEER's clsact

std::string errstr(int err)
{
	return std::strerror(err < 0 ? -err : err);
}

// ---------------------------------------------------------------------
// Network namespaces

std::uint64_t fd_inode(int fd)
{
	struct stat st;
	if (::fstat(fd, &st) != 0)
		throw Error(std::string("fstat: ") + std::strerror(errno));
	return st.st_ino;
}

struct Netns {
	std::string name; // "" = the caller's namespace
	Fd fd;
	std::uint64_t ino = 0;
	std::string label() const
	{
		return name.empty() ? std::string("current netns") : "netns " + name;
	}
};

void check_netns_name(const std::string &name, const std::string &what)
{
	if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos)
		throw UsageError(what + ": '" + name + "' is not a network namespace name");
	if (name.size() > kNetnsNameMax)
		throw UsageError(what + ": namespace name longer than " + std::to_string(kNetnsNameMax) +
				 " characters");
}

Netns open_netns(const std::string &name)
{
	Netns ns;
	ns.name = name;
	std::string path = name.empty() ? "/proc/self/ns/net" : "/run/netns/" + name;
	ns.fd = Fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
	if (ns.fd.get() < 0) {
		if (errno == ENOENT)
			throw Error("unknown network namespace '" + name + "' (no " + path + "; see 'ip netns list')");
		throw Error("cannot open " + path + ": " + std::strerror(errno));
	}
	ns.ino = fd_inode(ns.fd.get());
	return ns;
}

// The namespace a record names: by name when it still has the recorded
// inode, else the caller's, else any /run/netns entry with that inode.
std::optional<Netns> find_netns(const std::string &name, std::uint64_t ino)
{
	std::vector<std::string> candidates;
	if (!name.empty())
		candidates.push_back(name);
	candidates.push_back("");
	if (DIR *d = ::opendir("/run/netns")) {
		while (struct dirent *e = ::readdir(d)) {
			std::string n = e->d_name;
			if (n != "." && n != ".." && n != name)
				candidates.push_back(n);
		}
		::closedir(d);
	}
	for (const auto &c : candidates) {
		try {
			Netns ns = open_netns(c);
			if (ns.ino == ino)
				return ns;
		} catch (const Error &) {
		}
	}
	return std::nullopt;
}

// Enters a namespace for the lifetime of the guard.
class NetnsGuard
{
      public:
	explicit NetnsGuard(const Netns &target)
	{
		home_ = Fd(::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC));
		if (home_.get() < 0)
			throw Error(std::string("cannot open /proc/self/ns/net: ") + std::strerror(errno));
		if (fd_inode(home_.get()) == target.ino)
			return; // already there
		if (::setns(target.fd.get(), CLONE_NEWNET) != 0)
			throw Error("cannot enter " + target.label() + ": " + std::strerror(errno));
		entered_ = true;
	}
	NetnsGuard(const NetnsGuard &) = delete;
	NetnsGuard &operator=(const NetnsGuard &) = delete;
	~NetnsGuard()
	{
		if (entered_ && ::setns(home_.get(), CLONE_NEWNET) != 0) {
			std::fprintf(stderr, "lumen switch: cannot return to the original netns: %s\n",
				     std::strerror(errno));
			std::abort(); // continuing in the wrong namespace would act on the wrong devices
		}
	}

      private:
	Fd home_;
	bool entered_ = false;
};

// ---------------------------------------------------------------------
// Devices (call inside the device's namespace)

void check_ifname(const std::string &name, const std::string &what)
{
	if (name.empty() || name.size() >= IFNAMSIZ || name.find('/') != std::string::npos ||
	    name.find_first_of(" \t\n") != std::string::npos)
		throw UsageError(what + ": '" + name + "' is not a network device name");
}

struct DevInfo {
	unsigned ifindex = 0;
	unsigned mtu = 0;
	std::string driver;
	unsigned peer_ifindex = 0; // veth only
};

DevInfo dev_info(const std::string &name, const Netns &ns)
{
	DevInfo info;
	info.ifindex = ::if_nametoindex(name.c_str());
	if (info.ifindex == 0)
		throw Error("unknown device '" + name + "' in " + ns.label());
	Fd sock(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
	if (sock.get() < 0)
		throw Error(std::string("socket: ") + std::strerror(errno));
	struct ifreq ifr;
	std::memset(&ifr, 0, sizeof(ifr));
	std::snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name.c_str());
	if (::ioctl(sock.get(), SIOCGIFMTU, &ifr) != 0)
		throw Error("cannot read the MTU of " + name + ": " + std::strerror(errno));
	info.mtu = static_cast<unsigned>(ifr.ifr_mtu);

	struct ethtool_drvinfo drv;
	std::memset(&drv, 0, sizeof(drv));
	drv.cmd = ETHTOOL_GDRVINFO;
	ifr.ifr_data = reinterpret_cast<char *>(&drv);
	if (::ioctl(sock.get(), SIOCETHTOOL, &ifr) != 0)
		return info; // no ethtool: certainly no veth
	info.driver = std::string(drv.driver, strnlen(drv.driver, sizeof(drv.driver)));
	if (info.driver != "veth" || drv.n_stats == 0 || drv.n_stats > 4096)
		return info;

	// veth's first ethtool statistic is "peer_ifindex", the peer's ifindex in its own netns
	std::vector<char> strings(sizeof(struct ethtool_gstrings) + std::size_t(drv.n_stats) * ETH_GSTRING_LEN);
	auto *gs = reinterpret_cast<struct ethtool_gstrings *>(strings.data());
	gs->cmd = ETHTOOL_GSTRINGS;
	gs->string_set = ETH_SS_STATS;
	gs->len = drv.n_stats;
	ifr.ifr_data = reinterpret_cast<char *>(gs);
	if (::ioctl(sock.get(), SIOCETHTOOL, &ifr) != 0)
		return info;
	std::vector<char> values(sizeof(struct ethtool_stats) + std::size_t(drv.n_stats) * sizeof(__u64));
	auto *es = reinterpret_cast<struct ethtool_stats *>(values.data());
	es->cmd = ETHTOOL_GSTATS;
	es->n_stats = drv.n_stats;
	ifr.ifr_data = reinterpret_cast<char *>(es);
	if (::ioctl(sock.get(), SIOCETHTOOL, &ifr) != 0)
		return info;
	for (__u32 i = 0; i < drv.n_stats && i < gs->len; i++) {
		const char *s = reinterpret_cast<const char *>(gs->data) + std::size_t(i) * ETH_GSTRING_LEN;
		if (strncmp(s, "peer_ifindex", ETH_GSTRING_LEN) == 0) {
			__u64 v;
			std::memcpy(&v, reinterpret_cast<const char *>(es->data) + i * sizeof(__u64), sizeof(v));
			info.peer_ifindex = static_cast<unsigned>(v);
			break;
		}
	}
	return info;
}

// ---------------------------------------------------------------------
// tc (iproute2), run inside a namespace

struct TcResult {
	int status = -1; // exit status, -1 when tc could not run
	std::string out; // stdout and stderr
};

TcResult run_tc(const Netns &ns, const std::vector<std::string> &args)
{
	std::vector<std::string> words = {"tc"};
	words.insert(words.end(), args.begin(), args.end());
	std::vector<char *> argv;
	for (auto &w : words)
		argv.push_back(w.data());
	argv.push_back(nullptr);

	int pfd[2];
	if (::pipe2(pfd, O_CLOEXEC) != 0)
		throw Error(std::string("pipe: ") + std::strerror(errno));
	std::fflush(nullptr);
	pid_t pid = ::fork();
	if (pid < 0) {
		::close(pfd[0]);
		::close(pfd[1]);
		throw Error(std::string("fork: ") + std::strerror(errno));
	}
	if (pid == 0) {
		if (::setns(ns.fd.get(), CLONE_NEWNET) != 0)
			::_exit(126);
		::dup2(pfd[1], STDOUT_FILENO);
		::dup2(pfd[1], STDERR_FILENO);
		::execvp("tc", argv.data());
		::execv("/usr/sbin/tc", argv.data());
		::execv("/sbin/tc", argv.data());
		::_exit(127);
	}
	::close(pfd[1]);
	TcResult r;
	char buf[4096];
	ssize_t n;
	while ((n = ::read(pfd[0], buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR))
		if (n > 0)
			r.out.append(buf, static_cast<std::size_t>(n));
	::close(pfd[0]);
	int wstatus = 0;
	while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
	}
	if (WIFEXITED(wstatus)) {
		r.status = WEXITSTATUS(wstatus);
		if (r.status == 127)
			throw Error("cannot run tc (iproute2) — is it installed?");
		if (r.status == 126)
			throw Error("cannot enter " + ns.label() + " to run tc");
	}
	while (!r.out.empty() && (r.out.back() == '\n' || r.out.back() == ' '))
		r.out.pop_back();
	return r;
}

std::string tc_command_text(const std::vector<std::string> &args)
{
	std::string s = "tc";
	for (const auto &a : args)
		s += " " + a;
	return s;
}

void tc_or_throw(const Netns &ns, const std::vector<std::string> &args)
{
	TcResult r = run_tc(ns, args);
	if (r.status != 0)
		throw Error("'" + tc_command_text(args) + "' in " + ns.label() + " failed: " + r.out);
}

// True when the qdisc at ffff: of DEV is a clsact (an "ingress" qdisc has the
// same handle, and accepts a filter for the egress parent without ever
// running it on egress).
bool has_clsact(const Netns &ns, const std::string &dev)
{
	TcResult r = run_tc(ns, {"qdisc", "show", "dev", dev});
	return r.status == 0 &&
	       (r.out.rfind("qdisc clsact ", 0) == 0 || r.out.find("\nqdisc clsact ") != std::string::npos);
}

// True when DEV has no tc filter left on either clsact hook.
bool clsact_unused(const Netns &ns, const std::string &dev)
{
	for (const char *dir : {"ingress", "egress"}) {
		TcResult r = run_tc(ns, {"filter", "show", "dev", dev, dir});
		if (r.status != 0 || !r.out.empty())
			return false;
	}
	return true;
}

// ---------------------------------------------------------------------
// Pinned maps

Fd open_pinned(const char *name)
{
	std::string path = pin_path(name);
	int fd = bpf_obj_get(path.c_str());
	if (fd < 0)
		return Fd();
	return Fd(fd);
}

void check_map_layout(int fd, const char *name, __u32 value_size)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);
	std::memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len) != 0)
		throw Error(std::string("cannot inspect pinned map ") + name + ": " + std::strerror(errno));
	if (info.type != BPF_MAP_TYPE_ARRAY || info.key_size != 4 || info.value_size != value_size ||
	    info.max_entries != LUMEN_SWITCH_MAX_PORTS)
		throw Error(pin_path(name) +
			    " has another layout (left by another lumen version?): detach and remove it");
}

// The record map, created and pinned when `create` is set and it is missing.
Fd open_records(bool create)
{
	Fd fd = open_pinned(kRecordsMap);
	if (fd.get() >= 0) {
		check_map_layout(fd.get(), kRecordsMap, sizeof(PortRecord));
		return fd;
	}
	if (!create)
		return fd;
	int m = bpf_map_create(BPF_MAP_TYPE_ARRAY, kRecordsMap, sizeof(__u32), sizeof(PortRecord),
			       LUMEN_SWITCH_MAX_PORTS, nullptr);
	if (m < 0)
		throw Error(std::string("cannot create map ") + kRecordsMap + ": " + std::strerror(errno));
	Fd created(m);
	if (bpf_obj_pin(created.get(), pin_path(kRecordsMap).c_str()) != 0)
		throw Error("cannot pin " + pin_path(kRecordsMap) + ": " + std::strerror(errno));
	return created;
}

template <typename T> T read_entry(int fd, __u32 id)
{
	T v;
	std::memset(&v, 0, sizeof(v));
	if (fd >= 0 && bpf_map_lookup_elem(fd, &id, &v) != 0)
		throw Error("cannot read switch port " + std::to_string(id) + ": " + std::strerror(errno));
	return v;
}

template <typename T> void write_entry(int fd, __u32 id, const T &v)
{
	if (bpf_map_update_elem(fd, &id, &v, BPF_ANY) != 0)
		throw Error("cannot write switch port " + std::to_string(id) + ": " + std::strerror(errno));
}

template <typename T> void zero_entry(int fd, __u32 id)
{
	T v;
	std::memset(&v, 0, sizeof(v));
	write_entry(fd, id, v);
}

// Exclusive lock on the pin directory: attach / detach are read-modify-write.
class PinLock
{
      public:
	PinLock()
	{
		std::string dir = ensure_pin_root();
		fd_ = Fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
		if (fd_.get() < 0 || ::flock(fd_.get(), LOCK_EX) != 0)
			throw Error("cannot lock " + dir + ": " + std::strerror(errno));
	}

      private:
	Fd fd_;
};

bool any_port_in_use(int records_fd, int cfg_fd)
{
	for (__u32 id = 0; id < LUMEN_SWITCH_MAX_PORTS; id++) {
		if (records_fd >= 0 && read_entry<PortRecord>(records_fd, id).in_use)
			return true;
		if (cfg_fd >= 0 && read_entry<lumen_switch_port_cfg>(cfg_fd, id).in_use)
			return true;
	}
	return false;
}

// Unpins the switch maps when no port uses them (call with the lock held).
void remove_pins_if_unused()
{
	Fd records = open_pinned(kRecordsMap);
	Fd cfg = open_pinned(kCfgMap);
	try {
		if (any_port_in_use(records.get(), cfg.get()))
			return;
	} catch (const Error &) {
		return; // unreadable: leave them for a human
	}
	for (const char *name : {kRecordsMap, kCfgMap, kStatsMap})
		::unlink(pin_path(name).c_str());
}

// ---------------------------------------------------------------------
// tc hooks through libbpf

struct TcFilter {
	__u32 handle = 0;
	__u32 priority = 0;
	__u32 prog_id = 0;
};

bpf_tc_hook make_hook(unsigned ifindex, bpf_tc_attach_point point)
{
	bpf_tc_hook hook;
	std::memset(&hook, 0, sizeof(hook));
	hook.sz = sizeof(hook);
	hook.ifindex = static_cast<int>(ifindex);
	hook.attach_point = point;
	return hook;
}

bpf_tc_opts make_opts()
{
	bpf_tc_opts opts;
	std::memset(&opts, 0, sizeof(opts));
	opts.sz = sizeof(opts);
	return opts;
}

// Creates the clsact qdisc; returns whether it was created (false: existed).
bool create_clsact(unsigned ifindex, const std::string &dev)
{
	bpf_tc_hook hook = make_hook(ifindex, BPF_TC_INGRESS);
	int err = bpf_tc_hook_create(&hook);
	if (err == -EEXIST)
		return false;
	if (err)
		throw Error("cannot create a clsact qdisc on " + dev + ": " + errstr(err) + libbpf_log_tail(5));
	return true;
}

void destroy_clsact(unsigned ifindex)
{
	bpf_tc_hook hook = make_hook(ifindex, static_cast<bpf_tc_attach_point>(BPF_TC_INGRESS | BPF_TC_EGRESS));
	bpf_tc_hook_destroy(&hook);
}

TcFilter attach_filter(unsigned ifindex, bpf_tc_attach_point point, int prog_fd, const std::string &dev)
{
	bpf_tc_hook hook = make_hook(ifindex, point);
	bpf_tc_opts opts = make_opts();
	opts.prog_fd = prog_fd;
	int err = bpf_tc_attach(&hook, &opts);
	if (err)
		throw Error("cannot attach the " + std::string(point == BPF_TC_EGRESS ? "egress" : "ingress") +
			    " program to " + dev + ": " + errstr(err) + libbpf_log_tail(5));
	TcFilter f;
	f.handle = opts.handle;
	f.priority = opts.priority;
	f.prog_id = opts.prog_id;
	return f;
}

// The program id on a filter, 0 when the filter is gone.
__u32 query_filter(unsigned ifindex, bpf_tc_attach_point point, __u32 handle, __u32 priority)
{
	bpf_tc_hook hook = make_hook(ifindex, point);
	bpf_tc_opts opts = make_opts();
	opts.handle = handle;
	opts.priority = priority;
	if (bpf_tc_query(&hook, &opts) != 0)
		return 0;
	return opts.prog_id;
}

// Detaches a filter if it still runs the recorded program. Returns a warning or "".
std::string detach_filter(unsigned ifindex, bpf_tc_attach_point point, __u32 handle, __u32 priority, __u32 prog_id,
			  const std::string &dev)
{
	const char *dir = point == BPF_TC_EGRESS ? "egress" : "ingress";
	__u32 now = query_filter(ifindex, point, handle, priority);
	if (now == 0)
		return "";
	if (now != prog_id)
		return std::string("the ") + dir + " filter on " + dev + " runs program " + std::to_string(now) +
		       ", not the switch's " + std::to_string(prog_id) + ": left in place";
	bpf_tc_hook hook = make_hook(ifindex, point);
	bpf_tc_opts opts = make_opts();
	opts.handle = handle;
	opts.priority = priority;
	int err = bpf_tc_detach(&hook, &opts);
	if (err)
		return std::string("cannot detach the ") + dir + " filter from " + dev + ": " + errstr(err);
	return "";
}

// ---------------------------------------------------------------------
// Formatting

std::string fmt_bytes(std::uint64_t b)
{
	char buf[64];
	if (b >= 10ull * 1024 * 1024)
		std::snprintf(buf, sizeof(buf), "%llu B (%.1f MiB)", static_cast<unsigned long long>(b),
			      double(b) / (1024.0 * 1024.0));
	else if (b >= 10ull * 1024)
		std::snprintf(buf, sizeof(buf), "%llu B (%.1f KiB)", static_cast<unsigned long long>(b),
			      double(b) / 1024.0);
	else
		std::snprintf(buf, sizeof(buf), "%llu B", static_cast<unsigned long long>(b));
	return buf;
}

std::string where(const std::string &dev, const std::string &netns)
{
	return dev + (netns.empty() ? "" : " (netns " + netns + ")");
}

// ---------------------------------------------------------------------
// attach

struct SkelDeleter {
	void operator()(int_switch *s) const
	{
		int_switch__destroy(s);
	}
};

int cmd_attach(const Args &a)
{
	a.allow_only({"--netns", "--peer", "--peer-netns", "--rate", "--buffer", "--ecn-threshold", "--no-int",
		      "--port-id"});
	if (a.positional.size() != 2)
		throw UsageError("attach takes exactly one device (the egress side of the port)");
	const std::string dev = a.positional[1];
	check_ifname(dev, "DEV");
	if (!a.has("--peer"))
		throw UsageError("attach needs --peer PEER (the veth peer of " + dev + ")");
	const std::string peer = *a.get("--peer");
	check_ifname(peer, "--peer");
	const std::string dev_ns_name = a.get("--netns").value_or("");
	const std::string peer_ns_name = a.get("--peer-netns").value_or("");
	if (a.has("--netns"))
		check_netns_name(dev_ns_name, "--netns");
	if (a.has("--peer-netns"))
		check_netns_name(peer_ns_name, "--peer-netns");
	if (!a.has("--rate"))
		throw UsageError("attach needs --rate RATE (e.g. 100mbit, 10gbit)");
	const std::uint32_t rate = parse_rate_mbps(*a.get("--rate"), "--rate");
	const std::uint64_t buffer =
		a.has("--buffer") ? parse_bytes(*a.get("--buffer"), "--buffer", kMaxBuffer) : kDefaultBuffer;
	if (buffer == 0)
		throw UsageError("--buffer: 0 would drop every packet (the buffer must hold at least one frame)");
	const std::uint64_t ecn =
		a.has("--ecn-threshold") ? parse_bytes(*a.get("--ecn-threshold"), "--ecn-threshold", kMaxBuffer) : 0;
	if (ecn != 0 && ecn >= buffer)
		throw UsageError("--ecn-threshold " + std::to_string(ecn) + " must be below --buffer " +
				 std::to_string(buffer) + " (nothing could ever be marked)");
	std::optional<__u32> want_id;
	if (a.has("--port-id"))
		want_id =
			static_cast<__u32>(parse_uint(*a.get("--port-id"), "--port-id", 0, LUMEN_SWITCH_MAX_PORTS - 1));
	const bool int_on = !a.has("--no-int");

	require_root();
	require_btf();

	Netns dev_ns = open_netns(dev_ns_name);
	Netns peer_ns = open_netns(peer_ns_name);
	if (dev_ns.ino == peer_ns.ino && dev == peer)
		throw UsageError("DEV and --peer are the same device");
	DevInfo di, pi;
	{
		NetnsGuard g(dev_ns);
		di = dev_info(dev, dev_ns);
	}
	{
		NetnsGuard g(peer_ns);
		pi = dev_info(peer, peer_ns);
	}
	if (di.driver != "veth")
		throw Error(dev + " is not a veth device (driver '" + di.driver +
			    "'): the switch needs a veth pair, whose peer sees what tbf dequeues");
	if (pi.driver != "veth")
		throw Error(peer + " is not a veth device (driver '" + pi.driver + "')");
	if (di.peer_ifindex != pi.ifindex || pi.peer_ifindex != di.ifindex)
		throw Error(peer + " (" + peer_ns.label() + ") is not the veth peer of " + dev + " (" + dev_ns.label() +
			    ")");
	const std::uint64_t frame = std::uint64_t(di.mtu) + 14;
	if (buffer < frame)
		throw UsageError("--buffer " + std::to_string(buffer) + " is smaller than one full frame of " + dev +
				 " (MTU " + std::to_string(di.mtu) + " + 14 = " + std::to_string(frame) + " bytes)");

	const __u16 code = lumen_int_rate_encode(rate);
	if (int_on && lumen_int_rate_mbps(code) != rate)
		std::fprintf(
			stderr,
			"lumen switch: warning: the INT rate code cannot carry %u Mbit/s exactly; hop records will "
			"say %u Mbit/s (code %u)\n",
			rate, lumen_int_rate_mbps(code), code);
	// tbf: burst of 500 us at line rate, at least two frames; limit above the buffer.
	const std::uint64_t burst = std::max<std::uint64_t>(2 * frame, std::uint64_t(rate) * 1000000 / 8 / 2000);
	const std::uint64_t limit = buffer + kTbfLimitSlack;
	if (burst > 0xffffffffull)
		throw UsageError("--rate too high for a tbf burst");

	// Ctrl-C sets a flag instead of killing us half-way: checked before
	// the commit, so either the whole port stays or nothing of it
	install_interrupt_handlers();
	PinLock lock;
	capture_libbpf_log();
	std::unique_ptr<int_switch, SkelDeleter> skel; // outlives the undo steps that use its map fds
	Rollback undo("lumen switch attach");
	try {
		Fd records = open_records(true);
		Fd cfg_pin = open_pinned(kCfgMap);
		if (cfg_pin.get() >= 0)
			check_map_layout(cfg_pin.get(), kCfgMap, sizeof(lumen_switch_port_cfg));
		undo.add("remove unused pins", []() { remove_pins_if_unused(); });

		// port id, and the devices must not be ports already
		std::optional<__u32> id = want_id;
		for (__u32 i = 0; i < LUMEN_SWITCH_MAX_PORTS; i++) {
			PortRecord r = read_entry<PortRecord>(records.get(), i);
			bool used = r.in_use ||
				    (cfg_pin.get() >= 0 && read_entry<lumen_switch_port_cfg>(cfg_pin.get(), i).in_use);
			if (r.in_use && r.dev_netns_ino == dev_ns.ino && r.dev_ifindex == di.ifindex)
				throw Error(dev + " (" + dev_ns.label() + ") is already switch port " +
					    std::to_string(i));
			if (r.in_use && r.peer_netns_ino == peer_ns.ino && r.peer_ifindex == pi.ifindex)
				throw Error(peer + " (" + peer_ns.label() + ") is already the peer of switch port " +
					    std::to_string(i));
			if (want_id && *want_id == i && used)
				throw Error("switch port id " + std::to_string(i) + " is in use (" +
					    where(r.dev, r.dev_netns) + "); see 'lumen switch stats'");
			if (!id && !used)
				id = i;
		}
		if (!id)
			throw Error("all " + std::to_string(LUMEN_SWITCH_MAX_PORTS) + " switch port ids are in use");

		// load one instance for this port; the maps are shared through their pins
		bpf_object_open_opts oo;
		std::memset(&oo, 0, sizeof(oo));
		oo.sz = sizeof(oo);
		oo.pin_root_path = LUMEN_PIN_ROOT;
		skel.reset(int_switch__open_opts(&oo));
		if (!skel)
			throw Error("cannot open the int_switch BPF object: " + errstr(errno) + libbpf_log_tail());
		skel->rodata->lumen_port_id = *id;
		if (int err = int_switch__load(skel.get()))
			throw Error("cannot load the int_switch BPF programs: " + errstr(err) + libbpf_log_tail());
		const int cfg_fd = bpf_map__fd(skel->maps.lumen_sw_cfg);
		const int stats_fd = bpf_map__fd(skel->maps.lumen_sw_stats);

		lumen_switch_port_cfg cfg;
		std::memset(&cfg, 0, sizeof(cfg));
		cfg.in_use = 1;
		cfg.rate_mbps = rate;
		cfg.rate_code = code;
		cfg.buffer_bytes = static_cast<__u32>(buffer);
		cfg.ecn_threshold_bytes = static_cast<__u32>(ecn);
		cfg.int_enabled = int_on ? 1 : 0;
		zero_entry<lumen_switch_port_stats>(stats_fd, *id);
		write_entry(cfg_fd, *id, cfg);
		const __u32 port = *id;
		undo.add("clear the port's configuration", [cfg_fd, stats_fd, port]() {
			zero_entry<lumen_switch_port_cfg>(cfg_fd, port);
			zero_entry<lumen_switch_port_stats>(stats_fd, port);
		});

		PortRecord rec;
		std::memset(&rec, 0, sizeof(rec));
		std::snprintf(rec.dev, sizeof(rec.dev), "%s", dev.c_str());
		std::snprintf(rec.peer, sizeof(rec.peer), "%s", peer.c_str());
		std::snprintf(rec.dev_netns, sizeof(rec.dev_netns), "%s", dev_ns_name.c_str());
		std::snprintf(rec.peer_netns, sizeof(rec.peer_netns), "%s", peer_ns_name.c_str());
		rec.dev_netns_ino = dev_ns.ino;
		rec.peer_netns_ino = peer_ns.ino;
		rec.dev_ifindex = di.ifindex;
		rec.peer_ifindex = pi.ifindex;
		rec.burst_bytes = static_cast<__u32>(burst);
		rec.limit_bytes = static_cast<__u32>(limit);

		// dequeue side first: a packet counted at enqueue is then always counted at dequeue
		{
			NetnsGuard g(peer_ns);
			const unsigned ifx = pi.ifindex;
			if (create_clsact(ifx, peer)) {
				rec.flags |= kRecClsactPeer;
				undo.add("remove clsact from " + peer, [&peer_ns, ifx]() {
					NetnsGuard g2(peer_ns);
					destroy_clsact(ifx);
				});
			}
			TcFilter f =
				attach_filter(ifx, BPF_TC_INGRESS, bpf_program__fd(skel->progs.lumen_sw_ingress), peer);
			rec.ingress_handle = f.handle;
			rec.ingress_priority = f.priority;
			rec.ingress_prog_id = f.prog_id;
			undo.add("detach the ingress program", [&peer_ns, ifx, f, peer]() {
				NetnsGuard g2(peer_ns);
				detach_filter(ifx, BPF_TC_INGRESS, f.handle, f.priority, f.prog_id, peer);
			});
		}
		{
			NetnsGuard g(dev_ns);
			const unsigned ifx = di.ifindex;
			if (create_clsact(ifx, dev)) {
				rec.flags |= kRecClsactDev;
				undo.add("remove clsact from " + dev, [&dev_ns, ifx]() {
					NetnsGuard g2(dev_ns);
					destroy_clsact(ifx);
				});
			} else if (!has_clsact(dev_ns, dev)) {
				throw Error(dev +
					    " has an 'ingress' qdisc, which has no egress hook: remove it ('tc qdisc "
					    "del dev " +
					    dev + " ingress') or replace it with clsact");
			}
			TcFilter f =
				attach_filter(ifx, BPF_TC_EGRESS, bpf_program__fd(skel->progs.lumen_sw_egress), dev);
			rec.egress_handle = f.handle;
			rec.egress_priority = f.priority;
			rec.egress_prog_id = f.prog_id;
			undo.add("detach the egress program", [&dev_ns, ifx, f, dev]() {
				NetnsGuard g2(dev_ns);
				detach_filter(ifx, BPF_TC_EGRESS, f.handle, f.priority, f.prog_id, dev);
			});
		}
		// the bottleneck; replacing the root qdisc flushes what the old one held
		tc_or_throw(dev_ns,
			    {"qdisc", "replace", "dev", dev, "root", "tbf", "rate", std::to_string(rate) + "mbit",
			     "burst", std::to_string(burst), "limit", std::to_string(limit)});
		undo.add("remove the tbf qdisc", [&dev_ns, dev]() {
			run_tc(dev_ns, {"qdisc", "del", "dev", dev, "root"});
		});

		throw_if_interrupted(); // Ctrl-C during setup: undo it all
		rec.in_use = 1;
		write_entry(records.get(), port, rec);
		undo.commit();

		std::printf("switch port %u: %s -> %s, rate %s, buffer %s, ECN threshold %s, INT %s\n", port,
			    where(dev, dev_ns_name).c_str(), where(peer, peer_ns_name).c_str(),
			    format_rate_mbps(rate).c_str(), fmt_bytes(buffer).c_str(),
			    ecn ? fmt_bytes(ecn).c_str() : "off", int_on ? "on" : "off");
		std::printf("  tbf rate %umbit burst %llu limit %llu on %s; programs %u (egress), %u (ingress)\n", rate,
			    static_cast<unsigned long long>(burst), static_cast<unsigned long long>(limit), dev.c_str(),
			    rec.egress_prog_id, rec.ingress_prog_id);
		return 0;
	} catch (...) {
		undo.run();
		throw;
	}
}

// ---------------------------------------------------------------------
// detach

// Removes one port; returns warnings (the port is gone either way).
std::vector<std::string> detach_port(int records_fd, __u32 id, const PortRecord &rec)
{
	std::vector<std::string> warnings;
	Fd cfg = open_pinned(kCfgMap);
	Fd stats = open_pinned(kStatsMap);
	// stop the programs first: they pass packets untouched once in_use is 0
	if (cfg.get() >= 0)
		zero_entry<lumen_switch_port_cfg>(cfg.get(), id);

	struct Side {
		const char *dev;
		const char *netns;
		std::uint64_t ino;
		unsigned ifindex;
		bpf_tc_attach_point point;
		__u32 handle, priority, prog_id;
		bool created_clsact;
		bool root_tbf;
	};
	const Side sides[2] = {
		{rec.dev, rec.dev_netns, rec.dev_netns_ino, rec.dev_ifindex, BPF_TC_EGRESS, rec.egress_handle,
		 rec.egress_priority, rec.egress_prog_id, (rec.flags & kRecClsactDev) != 0, true},
		{rec.peer, rec.peer_netns, rec.peer_netns_ino, rec.peer_ifindex, BPF_TC_INGRESS, rec.ingress_handle,
		 rec.ingress_priority, rec.ingress_prog_id, (rec.flags & kRecClsactPeer) != 0, false},
	};
	for (const Side &s : sides) {
		std::optional<Netns> ns = find_netns(s.netns, s.ino);
		if (!ns)
			continue; // namespace gone: its devices, qdiscs and filters went with it
		NetnsGuard g(*ns);
		if (::if_nametoindex(s.dev) != s.ifindex)
			continue; // device gone (or renamed and replaced): nothing of ours left on it
		std::string w = detach_filter(s.ifindex, s.point, s.handle, s.priority, s.prog_id, s.dev);
		if (!w.empty())
			warnings.push_back(w);
		if (s.root_tbf) {
			TcResult r = run_tc(*ns, {"qdisc", "show", "dev", s.dev, "root"});
			if (r.status == 0 && r.out.rfind("qdisc tbf ", 0) == 0) {
				TcResult d = run_tc(*ns, {"qdisc", "del", "dev", s.dev, "root"});
				if (d.status != 0)
					warnings.push_back("cannot delete the tbf root qdisc of " + std::string(s.dev) +
							   ": " + d.out);
			}
		}
		if (s.created_clsact && clsact_unused(*ns, s.dev))
			destroy_clsact(s.ifindex);
	}
	if (stats.get() >= 0)
		zero_entry<lumen_switch_port_stats>(stats.get(), id);
	if (records_fd >= 0)
		zero_entry<PortRecord>(records_fd, id);
	return warnings;
}

int cmd_detach(const Args &a)
{
	a.allow_only({"--netns", "--all", "--port-id"});
	const bool all = a.has("--all");
	const int ways = (a.positional.size() == 2) + all + a.has("--port-id");
	if (a.positional.size() > 2 || ways != 1)
		throw UsageError("detach takes one of: DEV [--netns NS], --port-id N, --all");
	if (a.has("--netns") && a.positional.size() != 2)
		throw UsageError("--netns goes with DEV");
	std::string dev;
	std::optional<Netns> ns;
	if (a.positional.size() == 2) {
		dev = a.positional[1];
		check_ifname(dev, "DEV");
		std::string n = a.get("--netns").value_or("");
		if (a.has("--netns"))
			check_netns_name(n, "--netns");
		ns = open_netns(n);
	}
	std::optional<__u32> want_id;
	if (a.has("--port-id"))
		want_id =
			static_cast<__u32>(parse_uint(*a.get("--port-id"), "--port-id", 0, LUMEN_SWITCH_MAX_PORTS - 1));
	require_root();

	PinLock lock;
	capture_libbpf_log();
	Fd records = open_records(false);
	Fd cfg = open_pinned(kCfgMap);
	if (records.get() < 0 && cfg.get() < 0) {
		remove_pins_if_unused();
		if (all)
			return 0;
		throw Error("no switch port is attached");
	}
	if (cfg.get() >= 0)
		check_map_layout(cfg.get(), kCfgMap, sizeof(lumen_switch_port_cfg));
	int detached = 0, rc = 0;
	for (__u32 id = 0; id < LUMEN_SWITCH_MAX_PORTS; id++) {
		PortRecord rec = read_entry<PortRecord>(records.get(), id);
		// a configuration without a record (an attach killed half-way) is detached by id or --all
		bool configured = cfg.get() >= 0 && read_entry<lumen_switch_port_cfg>(cfg.get(), id).in_use;
		if (!rec.in_use && !configured)
			continue;
		if (!all) {
			if (want_id && *want_id != id)
				continue;
			if (ns && (!rec.in_use || rec.dev_netns_ino != ns->ino || dev != rec.dev))
				continue;
		}
		for (const auto &w : detach_port(records.get(), id, rec)) {
			std::fprintf(stderr, "lumen switch: warning: port %u: %s\n", id, w.c_str());
			rc = 1;
		}
		if (rec.in_use)
			std::printf("switch port %u (%s -> %s) detached\n", id, where(rec.dev, rec.dev_netns).c_str(),
				    where(rec.peer, rec.peer_netns).c_str());
		else
			std::printf("switch port %u (no record) detached\n", id);
		detached++;
	}
	records.reset();
	cfg.reset();
	remove_pins_if_unused();
	if (!detached && !all) {
		if (want_id)
			throw Error("switch port " + std::to_string(*want_id) + " is not attached");
		throw Error(dev + " (" + ns->label() + ") is not a switch port; see 'lumen switch stats'");
	}
	return rc;
}

// ---------------------------------------------------------------------
// stats

// Queue length at quantile q (0..1) from the log2 histogram.
std::uint64_t hist_quantile(const lumen_switch_port_stats &st, double q)
{
	std::uint64_t total = 0;
	for (auto c : st.qlen_hist)
		total += c;
	if (total == 0)
		return 0;
	double rank = q * double(total);
	double cum = 0;
	for (int b = 0; b < LUMEN_SWITCH_QHIST_BUCKETS; b++) {
		double c = double(st.qlen_hist[b]);
		if (c == 0)
			continue;
		if (cum + c >= rank) {
			if (b == 0)
				return 0;
			double lo = std::ldexp(1.0, b - 1), hi = std::ldexp(1.0, b);
			double frac = std::clamp((rank - cum) / c, 0.0, 1.0);
			auto v = static_cast<std::uint64_t>(lo + (hi - 1 - lo) * frac);
			return std::min<std::uint64_t>(v, st.qlen_max); // never above what was seen
		}
		cum += c;
	}
	return st.qlen_max;
}

// "ok", or what is missing, checked in the namespaces of the record.
std::string port_state(const PortRecord &rec)
{
	struct Side {
		const char *dev;
		const char *netns;
		std::uint64_t ino;
		unsigned ifindex;
		bpf_tc_attach_point point;
		__u32 handle, priority, prog_id;
	};
	const Side sides[2] = {
		{rec.dev, rec.dev_netns, rec.dev_netns_ino, rec.dev_ifindex, BPF_TC_EGRESS, rec.egress_handle,
		 rec.egress_priority, rec.egress_prog_id},
		{rec.peer, rec.peer_netns, rec.peer_netns_ino, rec.peer_ifindex, BPF_TC_INGRESS, rec.ingress_handle,
		 rec.ingress_priority, rec.ingress_prog_id},
	};
	for (const Side &s : sides) {
		std::optional<Netns> ns = find_netns(s.netns, s.ino);
		if (!ns)
			return std::string("netns of ") + s.dev + " gone";
		NetnsGuard g(*ns);
		if (::if_nametoindex(s.dev) != s.ifindex)
			return std::string(s.dev) + " gone";
		if (query_filter(s.ifindex, s.point, s.handle, s.priority) != s.prog_id)
			return std::string(s.point == BPF_TC_EGRESS ? "egress" : "ingress") +
			       " program detached from " + s.dev;
	}
	return "ok";
}

int cmd_stats(const Args &a)
{
	a.allow_only({"--json", "--port-id"});
	if (a.positional.size() != 1)
		throw UsageError("stats takes no positional argument");
	std::optional<__u32> want_id;
	if (a.has("--port-id"))
		want_id =
			static_cast<__u32>(parse_uint(*a.get("--port-id"), "--port-id", 0, LUMEN_SWITCH_MAX_PORTS - 1));
	const bool json = a.has("--json");
	require_root();
	capture_libbpf_log(); // a vanished qdisc must not print libbpf noise

	Fd records = open_records(false);
	Fd cfg_fd = open_pinned(kCfgMap);
	Fd stats_fd = open_pinned(kStatsMap);
	if (cfg_fd.get() >= 0)
		check_map_layout(cfg_fd.get(), kCfgMap, sizeof(lumen_switch_port_cfg));
	if (stats_fd.get() >= 0)
		check_map_layout(stats_fd.get(), kStatsMap, sizeof(lumen_switch_port_stats));

	std::vector<std::string> json_ports;
	int shown = 0;
	for (__u32 id = 0; id < LUMEN_SWITCH_MAX_PORTS && cfg_fd.get() >= 0; id++) {
		if (want_id && *want_id != id)
			continue;
		auto cfg = read_entry<lumen_switch_port_cfg>(cfg_fd.get(), id);
		if (!cfg.in_use)
			continue;
		auto st = read_entry<lumen_switch_port_stats>(stats_fd.get(), id);
		PortRecord rec = read_entry<PortRecord>(records.get(), id);
		std::string state = rec.in_use ? port_state(rec) : "no record";
		std::uint64_t qnow = st.enq_bytes > st.deq_bytes ? st.enq_bytes - st.deq_bytes : 0;
		std::uint64_t p50 = hist_quantile(st, 0.5), p99 = hist_quantile(st, 0.99);
		shown++;
		if (json) {
			std::string hist = "[";
			for (int b = 0; b < LUMEN_SWITCH_QHIST_BUCKETS; b++)
				hist += (b ? ", " : "") + std::to_string(st.qlen_hist[b]);
			hist += "]";
			Json j;
			j.num("port_id", std::uint64_t(id))
				.str("dev", rec.dev)
				.str("dev_netns", rec.dev_netns)
				.str("peer", rec.peer)
				.str("peer_netns", rec.peer_netns)
				.str("state", state)
				.num("rate_mbps", std::uint64_t(cfg.rate_mbps))
				.num("rate_code", std::uint64_t(cfg.rate_code))
				.num("buffer_bytes", std::uint64_t(cfg.buffer_bytes))
				.num("ecn_threshold_bytes", std::uint64_t(cfg.ecn_threshold_bytes))
				.num("int_enabled", std::uint64_t(cfg.int_enabled))
				.num("qlen_bytes", qnow)
				.num("qlen_max_bytes", std::uint64_t(st.qlen_max))
				.num("qlen_p50_bytes", p50)
				.num("qlen_p99_bytes", p99)
				.num("qlen_samples", std::uint64_t(st.qlen_samples))
				.num("enq_bytes", std::uint64_t(st.enq_bytes))
				.num("enq_packets", std::uint64_t(st.enq_packets))
				.num("deq_bytes", std::uint64_t(st.deq_bytes))
				.num("deq_packets", std::uint64_t(st.deq_packets))
				.num("drops", std::uint64_t(st.drops))
				.num("drop_bytes", std::uint64_t(st.drop_bytes))
				.num("ecn_marks", std::uint64_t(st.ecn_marks))
				.num("int_filled", std::uint64_t(st.int_filled))
				.num("int_full", std::uint64_t(st.int_full))
				.num("int_malformed", std::uint64_t(st.int_malformed))
				.raw("qlen_hist", hist);
			json_ports.push_back(j.dump());
			continue;
		}
		std::printf("port %u: %s -> %s [%s]\n", id, where(rec.dev, rec.dev_netns).c_str(),
			    where(rec.peer, rec.peer_netns).c_str(), state.c_str());
		std::printf("  rate %s (INT code %u = %u Mbit/s), buffer %s, ECN threshold %s, INT %s\n",
			    format_rate_mbps(cfg.rate_mbps).c_str(), cfg.rate_code, lumen_int_rate_mbps(cfg.rate_code),
			    fmt_bytes(cfg.buffer_bytes).c_str(),
			    cfg.ecn_threshold_bytes ? fmt_bytes(cfg.ecn_threshold_bytes).c_str() : "off",
			    cfg.int_enabled ? "on" : "off");
		std::printf("  queue now %s, max %s, median ~%s, p99 ~%s (%llu samples)\n", fmt_bytes(qnow).c_str(),
			    fmt_bytes(st.qlen_max).c_str(), fmt_bytes(p50).c_str(), fmt_bytes(p99).c_str(),
			    static_cast<unsigned long long>(st.qlen_samples));
		std::printf(
			"  enqueued %llu B / %llu pkts, dequeued %llu B / %llu pkts\n",
			static_cast<unsigned long long>(st.enq_bytes), static_cast<unsigned long long>(st.enq_packets),
			static_cast<unsigned long long>(st.deq_bytes), static_cast<unsigned long long>(st.deq_packets));
		std::printf("  dropped %llu pkts / %llu B, ECN marked %llu\n",
			    static_cast<unsigned long long>(st.drops), static_cast<unsigned long long>(st.drop_bytes),
			    static_cast<unsigned long long>(st.ecn_marks));
		std::printf("  INT hops filled %llu, requests full %llu, malformed %llu\n",
			    static_cast<unsigned long long>(st.int_filled),
			    static_cast<unsigned long long>(st.int_full),
			    static_cast<unsigned long long>(st.int_malformed));
	}
	if (json) {
		std::string out = "{\"ports\": [";
		for (std::size_t i = 0; i < json_ports.size(); i++)
			out += (i ? ", " : "") + json_ports[i];
		std::printf("%s]}\n", out.c_str());
		return 0;
	}
	if (want_id && !shown)
		throw Error("switch port " + std::to_string(*want_id) + " is not attached");
	if (!shown)
		std::printf("no switch port attached\n");
	return 0;
}

int cmd_sample(const Args &a)
{
	a.allow_only({"--interval", "--count"});
	if (a.positional.size() != 1)
		throw UsageError("sample takes no positional argument");
	constexpr std::uint64_t kMsNs = 1'000'000;
	std::uint64_t interval = 10 * kMsNs;
	if (a.has("--interval")) {
		interval = parse_duration_ns(*a.get("--interval"), "--interval", 10'000 * kMsNs);
		if (interval < kMsNs)
			throw UsageError("--interval: at least 1ms");
	}
	std::uint64_t count = 0; // 0 = until stopped
	if (a.has("--count"))
		count = parse_uint(*a.get("--count"), "--count", 1, 100'000'000);
	require_root();
	Fd records = open_records(false);
	Fd cfg_fd = open_pinned(kCfgMap);
	Fd stats_fd = open_pinned(kStatsMap);
	if (cfg_fd.get() < 0 || stats_fd.get() < 0)
		throw Error("no switch port attached (no pinned " + std::string(kCfgMap) + ")");
	check_map_layout(cfg_fd.get(), kCfgMap, sizeof(lumen_switch_port_cfg));
	check_map_layout(stats_fd.get(), kStatsMap, sizeof(lumen_switch_port_stats));

	std::vector<__u32> ids;
	std::string head = "{\"ports\": [";
	for (__u32 id = 0; id < LUMEN_SWITCH_MAX_PORTS; id++) {
		auto cfg = read_entry<lumen_switch_port_cfg>(cfg_fd.get(), id);
		if (!cfg.in_use)
			continue;
		PortRecord rec = records.get() >= 0 ? read_entry<PortRecord>(records.get(), id) : PortRecord{};
		Json j;
		j.num("port_id", std::uint64_t(id))
			.str("dev", rec.in_use ? rec.dev : "")
			.str("dev_netns", rec.in_use ? rec.dev_netns : "")
			.num("rate_mbps", std::uint64_t(cfg.rate_mbps));
		head += (ids.empty() ? "" : ", ") + j.dump();
		ids.push_back(id);
	}
	if (ids.empty())
		throw Error("no switch port attached");
	std::setvbuf(stdout, nullptr, _IOLBF, 0);
	std::printf("%s]}\n", head.c_str());

	install_interrupt_handlers();
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (std::uint64_t n = 0; (count == 0 || n < count) && !interrupted(); n++) {
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		std::string line =
			"{\"t_ns\": " +
			std::to_string(std::uint64_t(now.tv_sec) * 1'000'000'000ull + std::uint64_t(now.tv_nsec)) +
			", \"c\": [";
		for (std::size_t i = 0; i < ids.size(); i++) {
			auto st = read_entry<lumen_switch_port_stats>(stats_fd.get(), ids[i]);
			line += (i ? ", [" : "[") + std::to_string(st.enq_bytes) + ", " + std::to_string(st.deq_bytes) +
				", " + std::to_string(st.drops) + ", " + std::to_string(st.ecn_marks) + "]";
		}
		std::printf("%s]}\n", line.c_str());
		std::uint64_t t = std::uint64_t(next.tv_nsec) + interval;
		next.tv_sec += static_cast<time_t>(t / 1'000'000'000ull);
		next.tv_nsec = static_cast<long>(t % 1'000'000'000ull);
		while (!interrupted() && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nullptr) == EINTR) {
		}
	}
	return 0;
}

int run_switch(const std::vector<std::string> &args)
{
	Args a = Args::parse(args, {"--no-int", "--all", "--json"});
	return run_subcommand<Args>(
		a.positional.empty() ? nullptr : &a.positional[0],
		{{"attach", cmd_attach}, {"detach", cmd_detach}, {"stats", cmd_stats}, {"sample", cmd_sample}}, a);
}

} // namespace

const Command kSwitchCommand = {"switch", "software INT switch port on a veth link (tbf queue, drops, ECN, INT)",
				kUsage, run_switch};

} // namespace lumen
