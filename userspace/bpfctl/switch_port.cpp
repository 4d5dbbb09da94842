// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/bpfctl/switch_port.cpp - see switch_port.h.
#include "bpfctl/switch_port.h"

#include "base/error.h"
#include "base/interrupt.h"
#include "base/netns.h"
#include "base/rollback.h"
#include "base/system.h"
#include "bpfctl/bpf_util.h"
#include "bpfctl/tc.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <net/if.h>
#include <sys/file.h>
#include <unistd.h>

#include "int_switch.skel.h"

namespace lumen
{

namespace
{

// one GSO packet admitted into an empty queue: 64 KiB + per-segment headers
constexpr std::uint64_t kTbfLimitSlack = 96 * 1024;
const char kRecordsMap[] = LUMEN_PIN_SW_PORTS;
const char kCfgMap[] = LUMEN_PIN_SW_CFG;
const char kStatsMap[] = LUMEN_PIN_SW_STATS;

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
constexpr __u32 kRecPending = 0x4; // the attach has not finished (or its process died)
constexpr const char *kPendingState = "attaching (or its attacher died: detach it)";
constexpr __u32 kRecTbf = 0x8; // the attach replaced DEV's root qdisc with its tbf

// The two sides of a recorded port: DEV's egress, PEER's ingress.
struct RecordSide {
	const char *dev;
	const char *netns;
	std::uint64_t ino;
	unsigned ifindex;
	bpf_tc_attach_point point;
	__u32 handle, priority, prog_id;
	bool created_clsact;
	bool root_tbf;
};
std::array<RecordSide, 2> record_sides(const PortRecord &rec)
{
	return {{
		{rec.dev, rec.dev_netns, rec.dev_netns_ino, rec.dev_ifindex, BPF_TC_EGRESS, rec.egress_handle,
		 rec.egress_priority, rec.egress_prog_id, (rec.flags & kRecClsactDev) != 0,
		 // a finished attach always set it (records of older versions lack kRecTbf)
		 (rec.flags & kRecTbf) != 0 || (rec.flags & kRecPending) == 0},
		{rec.peer, rec.peer_netns, rec.peer_netns_ino, rec.peer_ifindex, BPF_TC_INGRESS, rec.ingress_handle,
		 rec.ingress_priority, rec.ingress_prog_id, (rec.flags & kRecClsactPeer) != 0, false},
	}};
}

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

std::string where(const std::string &dev, const std::string &netns)
{
	return dev + (netns.empty() ? "" : " (netns " + netns + ")");
}

struct SkelDeleter {
	void operator()(int_switch *s) const
	{
		int_switch__destroy(s);
	}
};

// Removes one port; returns warnings (the port is gone either way).
std::vector<std::string> detach_port(int records_fd, __u32 id, const PortRecord &rec)
{
	std::vector<std::string> warnings;
	Fd cfg = open_pinned(kCfgMap);
	Fd stats = open_pinned(kStatsMap);
	// stop the programs first: they pass packets untouched once in_use is 0
	if (cfg.get() >= 0)
		zero_entry<lumen_switch_port_cfg>(cfg.get(), id);

	for (const RecordSide &s : record_sides(rec)) {
		std::optional<Netns> ns = find_netns(s.netns, s.ino);
		if (!ns)
			continue; // namespace gone: its devices, qdiscs and filters went with it
		NetnsGuard g(*ns);
		if (::if_nametoindex(s.dev) != s.ifindex)
			continue; // device gone (or renamed and replaced): nothing of ours left on it
		std::string w = detach_filter(s.ifindex, s.point, {s.handle, s.priority, s.prog_id}, s.dev);
		if (!w.empty())
			warnings.push_back(w);
		if (s.root_tbf) {
			ProcessResult r = run_tc(*ns, {"qdisc", "show", "dev", s.dev, "root"});
			if (r.status == 0 && r.output.rfind("qdisc tbf ", 0) == 0) {
				ProcessResult d = run_tc(*ns, {"qdisc", "del", "dev", s.dev, "root"});
				if (d.status != 0)
					warnings.push_back("cannot delete the tbf root qdisc of " + std::string(s.dev) +
							   ": " + d.output);
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

// "ok", or what is missing, checked in the namespaces of the record.
std::string port_state(const PortRecord &rec)
{

	const std::array<RecordSide, 2> sides = record_sides(rec);
	for (const RecordSide &s : sides) {
		std::optional<Netns> ns = find_netns(s.netns, s.ino);
		if (!ns)
			return std::string("netns of ") + s.dev + " gone";
		NetnsGuard g(*ns);
		if (::if_nametoindex(s.dev) != s.ifindex)
			return std::string(s.dev) + " gone";
		if (rec.flags & kRecPending)
			return kPendingState;
		if (query_filter(s.ifindex, s.point, s.handle, s.priority) != s.prog_id)
			return std::string(s.point == BPF_TC_EGRESS ? "egress" : "ingress") +
			       " program detached from " + s.dev;
	}
	return "ok";
}

SwitchPort port_of(__u32 id, const PortRecord &rec)
{
	SwitchPort p;
	p.id = id;
	p.recorded = rec.in_use != 0;
	if (p.recorded) {
		p.dev = rec.dev;
		p.dev_netns = rec.dev_netns;
		p.peer = rec.peer;
		p.peer_netns = rec.peer_netns;
	}
	return p;
}

} // namespace

std::uint64_t switch_queue_quantile(const lumen_switch_port_stats &st, double q)
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

void check_switch_port_request(const SwitchPortRequest &req)
{
	check_ifname(req.dev, "DEV");
	check_ifname(req.peer, "--peer");
	if (!req.dev_netns.empty())
		check_netns_name(req.dev_netns, "--netns");
	if (!req.peer_netns.empty())
		check_netns_name(req.peer_netns, "--peer-netns");
	if (req.rate_mbps == 0 || req.rate_mbps > LUMEN_INT_RATE_MAX_MBPS)
		throw UsageError("--rate must be 1 Mbit/s .. " + std::to_string(LUMEN_INT_RATE_MAX_MBPS) + " Mbit/s");
	if (req.buffer_bytes == 0)
		throw UsageError("--buffer: 0 would drop every packet (the buffer must hold at least one frame)");
	if (req.buffer_bytes > kSwitchMaxBuffer || req.ecn_threshold_bytes > kSwitchMaxBuffer)
		throw UsageError("--buffer and --ecn-threshold must be at most " + std::to_string(kSwitchMaxBuffer) +
				 " bytes");
	if (req.ecn_threshold_bytes != 0 && req.ecn_threshold_bytes >= req.buffer_bytes)
		throw UsageError("--ecn-threshold " + std::to_string(req.ecn_threshold_bytes) +
				 " must be below --buffer " + std::to_string(req.buffer_bytes) +
				 " (nothing could ever be marked)");
	if (req.port_id && *req.port_id >= LUMEN_SWITCH_MAX_PORTS)
		throw UsageError("--port-id must be below " + std::to_string(LUMEN_SWITCH_MAX_PORTS));
}

SwitchPortAttached attach_switch_port(const SwitchPortRequest &req)
{
	check_switch_port_request(req);
	const std::string &dev = req.dev, &peer = req.peer;
	const std::uint32_t rate = req.rate_mbps;
	const std::uint64_t buffer = req.buffer_bytes, ecn = req.ecn_threshold_bytes;
	const bool int_on = req.int_enabled;
	const std::optional<__u32> want_id = req.port_id;
	require_root();
	require_btf();

	Netns dev_ns = open_netns(req.dev_netns);
	Netns peer_ns = open_netns(req.peer_netns);
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
	// tbf: burst of 500 us at line rate, at least two frames; limit above the buffer.
	const std::uint64_t burst = std::max<std::uint64_t>(2 * frame, std::uint64_t(rate) * 1000000 / 8 / 2000);
	const std::uint64_t limit = buffer + kTbfLimitSlack;
	if (burst > 0xffffffffull)
		throw UsageError("--rate too high for a tbf burst");

	// Ctrl-C sets a flag instead of killing us half-way: checked before
	// the commit, so either the whole port stays or nothing of it
	PinRootLock lock; // attach / detach are read-modify-write
	capture_libbpf_log();
	std::unique_ptr<int_switch, SkelDeleter> skel; // outlives the undo steps that use its map fds
	Fd records; // so does this
	Rollback undo("switch port attach");
	try {
		records = open_records(true);
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

		PortRecord rec;
		std::memset(&rec, 0, sizeof(rec));
		std::snprintf(rec.dev, sizeof(rec.dev), "%s", dev.c_str());
		std::snprintf(rec.peer, sizeof(rec.peer), "%s", peer.c_str());
		std::snprintf(rec.dev_netns, sizeof(rec.dev_netns), "%s", req.dev_netns.c_str());
		std::snprintf(rec.peer_netns, sizeof(rec.peer_netns), "%s", req.peer_netns.c_str());
		rec.dev_netns_ino = dev_ns.ino;
		rec.peer_netns_ino = peer_ns.ino;
		rec.dev_ifindex = di.ifindex;
		rec.peer_ifindex = pi.ifindex;
		rec.burst_bytes = static_cast<__u32>(burst);
		rec.limit_bytes = static_cast<__u32>(limit);

		// Recorded before anything is set up, and again after each step: a
		// process killed half-way (SIGKILL, a crash) leaves a record that
		// names the devices and what was attached, so detach (by device,
		// by the testbed's namespaces, or --all) can clean up after it.
		rec.in_use = 1;
		rec.flags = kRecPending;
		const __u32 port = *id;
		const int records_fd = records.get();
		write_entry(records_fd, port, rec);
		undo.add("forget the port's record",
			 [records_fd, port]() { zero_entry<PortRecord>(records_fd, port); });

		// load one instance for this port; the maps are shared through their pins
		bpf_object_open_opts oo = pin_root_open_opts();
		skel.reset(int_switch__open_opts(&oo));
		if (!skel)
			throw Error("cannot open the int_switch BPF object: " + errno_text(errno) + libbpf_log_tail());
		skel->rodata->lumen_port_id = *id;
		if (int err = int_switch__load(skel.get()))
			throw Error("cannot load the int_switch BPF programs: " + errno_text(err) + libbpf_log_tail());
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
		undo.add("clear the port's configuration", [cfg_fd, stats_fd, port]() {
			zero_entry<lumen_switch_port_cfg>(cfg_fd, port);
			zero_entry<lumen_switch_port_stats>(stats_fd, port);
		});

		// One side of the port: its clsact (created when missing) and its
		// program, each recorded (crash recovery) and undone (errors).
		struct Side {
			const Netns &ns;
			unsigned ifindex;
			const std::string &name;
			bpf_tc_attach_point point;
			int prog_fd;
			__u32 clsact_flag;
			__u32 &handle, &priority, &prog_id;
		};
		auto attach_side = [&](const Side &sd) {
			NetnsGuard g(sd.ns);
			const unsigned ifx = sd.ifindex;
			const Netns &ns = sd.ns;
			if (create_clsact(ifx, sd.name)) {
				rec.flags |= sd.clsact_flag;
				write_entry(records_fd, port, rec);
				undo.add("remove clsact from " + sd.name, [&ns, ifx]() {
					NetnsGuard g2(ns);
					destroy_clsact(ifx);
				});
			} else if (sd.point == BPF_TC_EGRESS && !has_clsact(ns, sd.name)) {
				throw Error(sd.name +
					    " has an 'ingress' qdisc, which has no egress hook: remove it ('tc qdisc "
					    "del dev " +
					    sd.name + " ingress') or replace it with clsact");
			}
			TcFilter f = attach_filter(ifx, sd.point, sd.prog_fd, sd.name);
			sd.handle = f.handle;
			sd.priority = f.priority;
			sd.prog_id = f.prog_id;
			write_entry(records_fd, port, rec);
			const std::string name = sd.name;
			const bpf_tc_attach_point point = sd.point;
			undo.add(std::string("detach the ") + (point == BPF_TC_EGRESS ? "egress" : "ingress") +
					 " program",
				 [&ns, ifx, f, point, name]() {
					 NetnsGuard g2(ns);
					 detach_filter(ifx, point, f, name);
				 });
		};
		// dequeue side first: a packet counted at enqueue is then always counted at dequeue
		attach_side({peer_ns, pi.ifindex, peer, BPF_TC_INGRESS, bpf_program__fd(skel->progs.lumen_sw_ingress),
			     kRecClsactPeer, rec.ingress_handle, rec.ingress_priority, rec.ingress_prog_id});
		attach_side({dev_ns, di.ifindex, dev, BPF_TC_EGRESS, bpf_program__fd(skel->progs.lumen_sw_egress),
			     kRecClsactDev, rec.egress_handle, rec.egress_priority, rec.egress_prog_id});
		// the bottleneck; replacing the root qdisc flushes what the old one held
		rec.flags |= kRecTbf;
		write_entry(records_fd, port, rec);
		tc_or_throw(dev_ns,
			    {"qdisc", "replace", "dev", dev, "root", "tbf", "rate", std::to_string(rate) + "mbit",
			     "burst", std::to_string(burst), "limit", std::to_string(limit)});
		undo.add("remove the tbf qdisc", [&dev_ns, dev]() {
			run_tc(dev_ns, {"qdisc", "del", "dev", dev, "root"});
		});

		throw_if_interrupted(); // Ctrl-C during setup: undo it all
		rec.flags &= ~kRecPending;
		write_entry(records_fd, port, rec);
		undo.commit();

		SwitchPortAttached out;
		out.id = port;
		out.burst_bytes = burst;
		out.limit_bytes = limit;
		out.egress_prog_id = rec.egress_prog_id;
		out.ingress_prog_id = rec.ingress_prog_id;
		out.rate_code = code;
		return out;
	} catch (...) {
		undo.run();
		throw;
	}
}

std::vector<SwitchPort> list_switch_ports(bool with_state)
{
	capture_libbpf_log(); // a vanished qdisc must not print libbpf noise
	Fd records = open_records(false);
	Fd cfg_fd = open_pinned(kCfgMap);
	Fd stats_fd = open_pinned(kStatsMap);
	if (cfg_fd.valid())
		check_map_layout(cfg_fd.get(), kCfgMap, sizeof(lumen_switch_port_cfg));
	if (stats_fd.valid())
		check_map_layout(stats_fd.get(), kStatsMap, sizeof(lumen_switch_port_stats));
	std::vector<SwitchPort> ports;
	// A record without a configuration is an attach under way, or one whose
	// process died before it configured the port: listed, so that a human
	// (or a testbed's down) sees it and can detach it.
	for (__u32 id = 0; id < LUMEN_SWITCH_MAX_PORTS && (cfg_fd.valid() || records.valid()); id++) {
		lumen_switch_port_cfg cfg;
		std::memset(&cfg, 0, sizeof(cfg));
		if (cfg_fd.valid())
			cfg = read_entry<lumen_switch_port_cfg>(cfg_fd.get(), id);
		PortRecord rec = read_entry<PortRecord>(records.get(), id);
		if (!cfg.in_use && !rec.in_use)
			continue;
		SwitchPort p = port_of(id, rec);
		p.cfg = cfg;
		if (stats_fd.valid())
			p.stats = read_entry<lumen_switch_port_stats>(stats_fd.get(), id);
		if (!rec.in_use)
			p.state = "no record";
		else if (with_state)
			p.state = port_state(rec);
		else if (!cfg.in_use)
			p.state = kPendingState;
		ports.push_back(std::move(p));
	}
	return ports;
}

namespace
{

/* A selector's device namespace (DEV given), its names checked; root. */
std::optional<Netns> selector_netns(const SwitchPortSelector &sel)
{
	std::optional<Netns> ns;
	if (sel.dev) {
		check_ifname(*sel.dev, "DEV");
		if (!sel.dev_netns.empty())
			check_netns_name(sel.dev_netns, "--netns");
		ns = open_netns(sel.dev_netns);
	}
	require_root();
	return ns;
}

/* Whether the port id (record rec) is one the selector names. */
bool selected(const SwitchPortSelector &sel, const std::optional<Netns> &ns, __u32 id, const PortRecord &rec)
{
	if (sel.all)
		return true;
	if (sel.id && *sel.id != id)
		return false;
	return !ns || (rec.in_use && rec.dev_netns_ino == ns->ino && *sel.dev == rec.dev);
}

[[noreturn]] void no_such_port(const SwitchPortSelector &sel, const std::optional<Netns> &ns)
{
	if (sel.id)
		throw Error("switch port " + std::to_string(*sel.id) + " is not attached");
	throw Error(*sel.dev + " (" + ns->label() + ") is not a switch port; see 'lumen switch stats'");
}

} // namespace

std::vector<SwitchPortDetached> detach_switch_ports(const SwitchPortSelector &sel)
{
	std::optional<Netns> ns = selector_netns(sel);
	PinRootLock lock; // attach / detach are read-modify-write
	capture_libbpf_log();
	std::vector<SwitchPortDetached> done;
	{
		Fd records = open_records(false);
		Fd cfg = open_pinned(kCfgMap);
		if (!records.valid() && !cfg.valid()) {
			remove_pins_if_unused();
			if (sel.all)
				return done;
			throw Error("no switch port is attached");
		}
		if (cfg.valid())
			check_map_layout(cfg.get(), kCfgMap, sizeof(lumen_switch_port_cfg));
		for (__u32 id = 0; id < LUMEN_SWITCH_MAX_PORTS; id++) {
			PortRecord rec = read_entry<PortRecord>(records.get(), id);
			// a configuration without a record (an attach killed half-way) is detached by id or --all
			bool configured = cfg.valid() && read_entry<lumen_switch_port_cfg>(cfg.get(), id).in_use;
			if (!rec.in_use && !configured)
				continue;
			if (!selected(sel, ns, id, rec))
				continue;
			SwitchPortDetached d;
			d.port = port_of(id, rec);
			d.warnings = detach_port(records.get(), id, rec);
			done.push_back(std::move(d));
		}
	}
	remove_pins_if_unused();
	if (done.empty() && !sel.all)
		no_such_port(sel, ns);
	return done;
}

std::vector<SwitchPortHealed> heal_switch_ports(const SwitchPortSelector &sel)
{
	std::optional<Netns> ns = selector_netns(sel);
	PinRootLock lock; // the configuration is read-modify-write
	capture_libbpf_log();
	Fd records = open_records(false);
	Fd cfg = open_pinned(kCfgMap);
	Fd stats = open_pinned(kStatsMap);
	if (!records.valid() || !cfg.valid() || !stats.valid())
		throw Error("no switch port is attached");
	check_map_layout(cfg.get(), kCfgMap, sizeof(lumen_switch_port_cfg));
	check_map_layout(stats.get(), kStatsMap, sizeof(lumen_switch_port_stats));
	std::vector<SwitchPortHealed> done;
	for (__u32 id = 0; id < LUMEN_SWITCH_MAX_PORTS; id++) {
		PortRecord rec = read_entry<PortRecord>(records.get(), id);
		lumen_switch_port_cfg c = read_entry<lumen_switch_port_cfg>(cfg.get(), id);
		if (!rec.in_use || !c.in_use)
			continue;
		if (!selected(sel, ns, id, rec))
			continue;
		SwitchPortHealed h;
		h.port = port_of(id, rec);
		h.port.cfg = c;
		h.port.stats = read_entry<lumen_switch_port_stats>(stats.get(), id);
		const lumen_switch_port_stats &st = h.port.stats;
		h.bytes = st.enq_bytes > st.deq_bytes ? st.enq_bytes - st.deq_bytes : 0;
		if (h.bytes) {
			c.heal_bytes = h.bytes;
			c.heal_gen = (__u32)st.heal_gen_done + 1; // differs from what was applied
			write_entry(cfg.get(), id, c);
		}
		done.push_back(std::move(h));
	}
	if (done.empty() && !sel.all)
		no_such_port(sel, ns);
	return done;
}

SwitchCounters::SwitchCounters() : fd_(open_pinned(kStatsMap))
{
	if (!fd_.valid())
		throw Error("no switch port attached (no pinned " + pin_path(kStatsMap) + ")");
	check_map_layout(fd_.get(), kStatsMap, sizeof(lumen_switch_port_stats));
}

lumen_switch_port_stats SwitchCounters::read(std::uint32_t id) const
{
	return read_entry<lumen_switch_port_stats>(fd_.get(), id);
}

} // namespace lumen
