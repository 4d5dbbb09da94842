// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/bpfctl/rotor.cpp - loader of the rotor switch (rotor.h).
#include "bpfctl/rotor.h"

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <set>

#include "base/error.h"
#include "base/netns.h"
#include "base/rollback.h"
#include "base/system.h"
#include "bpfctl/bpf_util.h"
#include "bpfctl/tc.h"
#include "sched/change.h"
#include "rotor_switch.skel.h"

namespace lumen
{

namespace
{

constexpr const char *kCfg = LUMEN_PIN_ROTOR_DIR "/cfg";
constexpr const char *kMatch = LUMEN_PIN_ROTOR_DIR "/match";
constexpr const char *kStats = LUMEN_PIN_ROTOR_DIR "/stats";

struct SkelDeleter {
	void operator()(rotor_switch *s) const
	{
		rotor_switch__destroy(s);
	}
};

void update(int fd, std::uint32_t key, const void *value, const char *what)
{
	if (bpf_map_update_elem(fd, &key, value, BPF_ANY) != 0)
		throw Error(std::string("rotor: cannot write ") + what + ": " + std::strerror(errno));
}

// Bank `bank`'s matchings in rotor_match's layout:
// ((bank * uplinks + uplink) * table_period + slot) * nodes + node.
void write_match(int fd, const sched::Schedule &s, std::uint32_t bank, std::uint32_t table_period)
{
	for (std::uint32_t p = 0; p < s.uplinks; p++)
		for (std::uint32_t t = 0; t < s.period; t++)
			for (std::uint32_t i = 0; i < s.nodes; i++) {
				std::uint32_t dst = s.to(p, t, i);
				update(fd, ((bank * s.uplinks + p) * table_period + t) * s.nodes + i, &dst,
				       "the matchings");
			}
}

lumen_rotor_cfg read_cfg(int fd)
{
	std::uint32_t zero = 0;
	lumen_rotor_cfg c{};
	if (bpf_map_lookup_elem_flags(fd, &zero, &c, BPF_F_LOCK) != 0)
		throw Error(std::string("rotor: cannot read its configuration: ") + std::strerror(errno));
	return c;
}

void write_cfg(int fd, const lumen_rotor_cfg &c)
{
	std::uint32_t zero = 0;
	if (bpf_map_update_elem(fd, &zero, &c, BPF_F_LOCK) != 0)
		throw Error(std::string("rotor: cannot write its configuration: ") + std::strerror(errno));
}

// The attached rotor's maps, under the pin root's lock; UsageError for a
// schedule that does not fit them.
struct Attached {
	PinRootLock lock;
	Fd cfg_fd, match;
	lumen_rotor_cfg cfg{};

	Attached()
	{
		if (!rotor_attached())
			throw Error("no rotor switch is attached");
		cfg_fd = open_pin(kCfg);
		match = open_pin(kMatch);
		cfg = read_cfg(cfg_fd.get());
	}
	void check(const sched::Schedule &s) const
	{
		sched::validate(s, "rotor schedule");
		if (s.nodes != cfg.nodes || s.uplinks != cfg.uplinks)
			throw UsageError("rotor: the schedule has " + std::to_string(s.nodes) + " nodes and " +
					 std::to_string(s.uplinks) + " uplinks, the rotor " +
					 std::to_string(cfg.nodes) + " and " + std::to_string(cfg.uplinks));
		if (s.period > cfg.table_period)
			throw UsageError("rotor: a period of " + std::to_string(s.period) +
					 " slots does not fit the rotor's tables (made for " +
					 std::to_string(cfg.table_period) + "; attach it with room for more)");
	}
	// Writes s's matchings into bank (one no packet reads), then next.
	void write(const sched::Schedule *s, std::uint32_t bank, const sched::Banks &next)
	{
		if (s)
			write_match(match.get(), *s, bank & 1, cfg.table_period);
		lumen_rotor_cfg c = cfg;
		sched::set_banks(c, next);
		write_cfg(cfg_fd.get(), c);
	}
};

} // namespace

void check_rotor_request(const RotorRequest &req)
{
	const sched::Schedule &s = req.schedule;
	sched::validate(s, "rotor schedule");
	if ((std::uint64_t)s.nodes * s.uplinks > LUMEN_ROTOR_MAX_PORTS)
		throw UsageError("rotor: " + std::to_string(s.nodes) + " nodes x " + std::to_string(s.uplinks) +
				 " uplinks is over " + std::to_string(LUMEN_ROTOR_MAX_PORTS) + " ports");
	if (s.period > LUMEN_SLOT_MAX_PERIOD)
		throw UsageError("rotor: a period over " + std::to_string(LUMEN_SLOT_MAX_PERIOD) + " slots");
	if (req.ports.size() != (size_t)s.nodes * s.uplinks)
		throw UsageError("rotor: " + std::to_string(req.ports.size()) + " ports for " +
				 std::to_string(s.nodes) + " nodes x " + std::to_string(s.uplinks) + " uplinks");
	std::set<std::pair<std::uint32_t, std::uint32_t>> seen;
	std::set<std::string> devs;
	for (const RotorPortSpec &p : req.ports) {
		check_ifname(p.dev, "rotor port");
		if (p.node >= s.nodes || p.uplink >= s.uplinks)
			throw UsageError("rotor: port " + p.dev + " is node " + std::to_string(p.node) + ", uplink " +
					 std::to_string(p.uplink) + ": not in the schedule");
		if (!seen.insert({p.node, p.uplink}).second || !devs.insert(p.dev).second)
			throw UsageError("rotor: port " + p.dev + " (node " + std::to_string(p.node) + ", uplink " +
					 std::to_string(p.uplink) + ") is given twice");
	}
	if (req.host_addrs.size() != s.nodes)
		throw UsageError("rotor: " + std::to_string(req.host_addrs.size()) + " host addresses for " +
				 std::to_string(s.nodes) + " nodes");
	if (std::set<std::uint32_t>(req.host_addrs.begin(), req.host_addrs.end()).size() != s.nodes)
		throw UsageError("rotor: two nodes have the same address");
}

bool rotor_attached()
{
	return pinned(kCfg);
}

void attach_rotor(const RotorRequest &req)
{
	check_rotor_request(req);
	require_btf();
	ensure_pin_root();
	PinRootLock lock;
	if (rotor_attached())
		throw Error("a rotor switch is attached already (" + pin_path(kCfg) + ")");
	const sched::Schedule &s = req.schedule;
	Netns ns = open_netns(req.netns);
	capture_libbpf_log();
	std::unique_ptr<rotor_switch, SkelDeleter> skel(rotor_switch__open());
	if (!skel)
		throw Error("rotor: cannot open the BPF object: " + libbpf_log_tail());
	std::uint32_t table_period = sched::table_period(s, s.uplinks * s.nodes, req.max_period);
	if (bpf_map__set_max_entries(skel->maps.rotor_match, 2 * s.uplinks * table_period * s.nodes) != 0)
		throw Error("rotor: cannot size the matchings map");
	if (int err = rotor_switch__load(skel.get()))
		throw Error("rotor: cannot load the BPF program (" + errno_text(err) + "): " + libbpf_log_tail());

	lumen_rotor_cfg cfg{};
	cfg.nodes = s.nodes;
	cfg.uplinks = s.uplinks;
	cfg.table_period = table_period;
	cfg.banks[0] = sched::bank_of(s, s.t0_ns);
	write_cfg(bpf_map__fd(skel->maps.rotor_cfg), cfg);
	write_match(bpf_map__fd(skel->maps.rotor_match), s, 0, table_period);
	for (std::uint32_t i = 0; i < s.nodes; i++) {
		std::uint32_t addr = htonl(req.host_addrs[i]);
		if (bpf_map_update_elem(bpf_map__fd(skel->maps.rotor_hosts), &addr, &i, BPF_ANY) != 0)
			throw Error(std::string("rotor: cannot write the host addresses: ") + std::strerror(errno));
	}

	Rollback undo("rotor attach");
	{
		NetnsGuard g(ns);
		for (const RotorPortSpec &p : req.ports) {
			DevInfo d = dev_info(p.dev, ns);
			lumen_rotor_port rp{p.node, p.uplink};
			if (bpf_map_update_elem(bpf_map__fd(skel->maps.rotor_ports), &d.ifindex, &rp, BPF_ANY) != 0)
				throw Error(std::string("rotor: cannot write its ports: ") + std::strerror(errno));
			update(bpf_map__fd(skel->maps.rotor_out), p.uplink * s.nodes + p.node, &d.ifindex, "its ports");
		}
		for (const RotorPortSpec &p : req.ports) {
			unsigned ifx = dev_info(p.dev, ns).ifindex;
			std::string dev = p.dev;
			if (create_clsact(ifx, dev))
				undo.add("remove clsact from " + dev, [&ns, ifx]() {
					NetnsGuard g2(ns);
					destroy_clsact(ifx);
				});
			TcFilter f = attach_filter(ifx, BPF_TC_INGRESS,
						   bpf_program__fd(skel->progs.lumen_rotor_ingress), dev);
			undo.add("detach the rotor from " + dev, [&ns, ifx, f, dev]() {
				NetnsGuard g2(ns);
				detach_filter(ifx, BPF_TC_INGRESS, f, dev);
			});
		}
	}
	std::string dir = pin_path(LUMEN_PIN_ROTOR_DIR);
	if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
		throw Error("cannot create " + dir + ": " + std::strerror(errno));
	undo.add("remove " + dir, [dir]() { ::rmdir(dir.c_str()); });
	struct Pin {
		const char *name;
		bpf_map *map;
	} pins[] = {{kCfg, skel->maps.rotor_cfg}, {kMatch, skel->maps.rotor_match}, {kStats, skel->maps.rotor_stats}};
	for (const Pin &p : pins) {
		if (bpf_obj_pin(bpf_map__fd(p.map), pin_path(p.name).c_str()) != 0)
			throw Error("cannot pin " + pin_path(p.name) + ": " + std::strerror(errno));
		std::string path = pin_path(p.name);
		undo.add("unpin " + path, [path]() { ::unlink(path.c_str()); });
	}
	undo.commit();
}

void load_rotor_schedule(const sched::Schedule &s)
{
	Attached a;
	a.check(s);
	sched::Banks next = sched::replace(sched::banks_of(a.cfg), s, tai_ns());
	a.write(&s, next.change.bank, next);
}

void stage_rotor(const sched::Schedule &s, std::uint64_t switch_ns)
{
	Attached a;
	a.check(s);
	sched::Banks next = sched::stage(sched::banks_of(a.cfg), s, switch_ns, tai_ns());
	a.write(&s, next.change.bank ^ 1, next);
}

void set_rotor_rate(std::uint32_t rate_mbps)
{
	Attached a;
	lumen_rotor_cfg c = a.cfg;
	c.rate_mbps = rate_mbps;
	write_cfg(a.cfg_fd.get(), c);
}

void commit_rotor(std::uint64_t version)
{
	Attached a;
	a.write(nullptr, 0, sched::commit(sched::banks_of(a.cfg), version));
}

void abort_rotor(std::uint64_t version)
{
	Attached a;
	a.write(nullptr, 0, sched::abort(sched::banks_of(a.cfg), version));
}

bool detach_rotor()
{
	ensure_pin_root();
	PinRootLock lock;
	bool was = rotor_attached();
	for (const char *name : {kCfg, kMatch, kStats})
		remove_pin(name);
	::rmdir(pin_path(LUMEN_PIN_ROTOR_DIR).c_str());
	return was;
}

RotorStatus read_rotor()
{
	if (!rotor_attached())
		throw Error("no rotor switch is attached (no " + pin_path(kCfg) + ")");
	Fd cfg_fd = open_pin(kCfg), stats = open_pin(kStats);
	RotorStatus st;
	st.cfg = read_cfg(cfg_fd.get());
	int ncpu = libbpf_num_possible_cpus();
	if (ncpu <= 0)
		throw Error("cannot count possible CPUs");
	std::vector<lumen_rotor_stats> per_cpu((size_t)ncpu);
	std::uint32_t ports = st.cfg.nodes * st.cfg.uplinks;
	st.ports.assign(ports, lumen_rotor_stats{});
	for (std::uint32_t k = 0; k < ports; k++) {
		if (bpf_map_lookup_elem(stats.get(), &k, per_cpu.data()) != 0)
			throw Error("rotor: cannot read the counters of port " + std::to_string(k) + ": " +
				    std::strerror(errno));
		for (const lumen_rotor_stats &c : per_cpu) {
			for (std::uint32_t i = 0; i < LUMEN_ROTOR_NCOUNTERS; i++) {
				st.ports[k].frames[i] += c.frames[i];
				st.total.frames[i] += c.frames[i];
			}
			st.ports[k].forwarded_bytes += c.forwarded_bytes;
			st.total.forwarded_bytes += c.forwarded_bytes;
			st.ports[k].stamped += c.stamped;
			st.total.stamped += c.stamped;
			st.ports[k].delay_max_ns = std::max(st.ports[k].delay_max_ns, c.delay_max_ns);
			st.total.delay_max_ns = std::max(st.total.delay_max_ns, c.delay_max_ns);
		}
	}
	return st;
}

const char *rotor_counter_name(std::uint32_t i)
{
#define LUMEN_ROTOR_NAME(id, name, help) name,
	static const char *const names[] = {LUMEN_ROTOR_COUNTERS(LUMEN_ROTOR_NAME)};
#undef LUMEN_ROTOR_NAME
	return i < LUMEN_ROTOR_NCOUNTERS ? names[i] : "?";
}

const char *rotor_counter_help(std::uint32_t i)
{
#define LUMEN_ROTOR_HELP(id, name, help) help,
	static const char *const helps[] = {LUMEN_ROTOR_COUNTERS(LUMEN_ROTOR_HELP)};
#undef LUMEN_ROTOR_HELP
	return i < LUMEN_ROTOR_NCOUNTERS ? helps[i] : "?";
}

} // namespace lumen
