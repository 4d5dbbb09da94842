// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/bpfctl/optical_gate.cpp - loader of the kernel's direct-hop
// gate (optical_gate.h).
#include "bpfctl/optical_gate.h"

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>

#include "base/error.h"
#include "base/netns.h"
#include "base/process.h"
#include "base/rollback.h"
#include "base/system.h"
#include "bpfctl/bpf_util.h"
#include "bpfctl/osched_state.h"
#include "bpfctl/tc.h"
#include "sched/change.h"
extern "C" {
#include "lumen/optical_wire.h"
}
#include "optical_gate.skel.h"

namespace lumen
{

namespace
{

/* fq's own horizon: beyond it, fq drops what the gate booked */
constexpr std::uint64_t kDefaultMaxHoldNs = 10'000'000'000ull;

// the stale limit without --stale: lumen_osched_default_stale_ns
// (include/lumen/optical_wire.h), as lumen-dp's page reader takes it
std::uint64_t default_stale_ns_of(std::uint64_t slot_ns)
{
	return lumen_osched_default_stale_ns(slot_ns);
}
std::uint64_t default_stale_ns(const sched::Schedule &s)
{
	return default_stale_ns_of(s.slot_ns);
}

GateDevice device_of(const Netns &ns, const std::string &dev)
{
	ProcessOptions opts;
	opts.netns_fd = ns.fd.get();
	ProcessResult r = run_process({"ip", "-d", "-o", "link", "show", "dev", dev}, opts);
	auto field = [&r](const std::string &name) -> std::uint64_t {
		std::size_t at = r.output.find(" " + name + " ");
		return at == std::string::npos ? 0
					       : std::strtoull(r.output.c_str() + at + name.size() + 2, nullptr, 10);
	};
	GateDevice d;
	if (r.status == 0) {
		d.mtu = field("mtu");
		d.gso_max_size = field("gso_max_size");
	}
	return d;
}

// Keeps TCP's TSO bursts (and UDP's GSO) within a window: lowers DEV's
// gso_max_size to what the schedule's window carries (gate_gso_cap: at a
// stage, the shorter of both schedules'), when it is above (ip link; TCP
// reads it when a connection starts). Never raised, and left so by detach:
// smaller bursts change nothing but the CPU cost of a send. A kernel that
// does not let it change (before 5.19) is said, not
// refused: such a burst is then dropped and counted as too_long.
void cap_gso(const Netns &ns, const std::string &dev, const lumen_gate_cfg &cfg)
{
	ProcessOptions opts;
	opts.netns_fd = ns.fd.get();
	GateDevice d = device_of(ns, dev);
	std::uint64_t mtu = d.mtu, now = d.gso_max_size;
	std::uint64_t cap = gate_gso_cap(cfg, (std::uint32_t)mtu, tai_ns());
	if (!mtu || !now || now <= cap)
		return;
	ProcessResult set = run_process({"ip", "link", "set", "dev", dev, "gso_max_size", std::to_string(cap)}, opts);
	if (set.status != 0)
		std::fprintf(stderr,
			     "lumen gate: cannot lower %s's gso_max_size from %llu to %llu bytes (%s): TSO bursts "
			     "longer than a window will be dropped (too_long)\n",
			     dev.c_str(), (unsigned long long)now, (unsigned long long)cap, set.output.c_str());
}

struct SkelDeleter {
	void operator()(optical_gate *s) const
	{
		optical_gate__destroy(s);
	}
};

std::string gate_dir(const std::string &netns, const std::string &dev)
{
	return std::string(LUMEN_PIN_GATE_DIR) + "/" + (netns.empty() ? "-" : netns) + "@" + dev;
}

void update(int fd, std::uint32_t key, const void *value, const char *what)
{
	if (bpf_map_update_elem(fd, &key, value, BPF_ANY) != 0)
		throw Error(std::string("gate: cannot write ") + what + ": " + std::strerror(errno));
}

lumen_gate_cfg read_cfg(int fd)
{
	std::uint32_t zero = 0;
	lumen_gate_cfg c{};
	if (bpf_map_lookup_elem_flags(fd, &zero, &c, BPF_F_LOCK) != 0)
		throw Error(std::string("gate: cannot read its configuration: ") + std::strerror(errno));
	return c;
}

void write_cfg(int fd, const lumen_gate_cfg &c)
{
	std::uint32_t zero = 0;
	if (bpf_map_update_elem(fd, &zero, &c, BPF_F_LOCK) != 0)
		throw Error(std::string("gate: cannot write its configuration: ") + std::strerror(errno));
}

// self's waits in s, into bank's part of gate_waits
void write_waits(int fd, const sched::Schedule &s, std::uint32_t self, std::uint32_t bank, std::uint32_t table_period)
{
	std::vector<std::uint16_t> w = sched::wait_table(s, self);
	for (std::uint32_t k = 0; k < w.size(); k++) {
		std::uint32_t v = w[k];
		update(fd, (bank & 1) * table_period * s.nodes + k, &v, "its waits");
	}
}

// A gate's maps, under the pin root's lock, for a change of its schedule.
struct Attached {
	PinRootLock lock;
	Fd cfg_fd, waits, clock;
	lumen_gate_cfg cfg{};

	Attached(const std::string &netns, const std::string &dev)
	{
		const std::string dir = gate_dir(netns, dev);
		if (!pinned(dir + "/cfg"))
			throw Error("no gate on " + dev + (netns.empty() ? "" : " in " + netns));
		cfg_fd = open_pin(dir + "/cfg");
		waits = open_pin(dir + "/waits");
		clock = open_pin(dir + "/clock");
		cfg = read_cfg(cfg_fd.get());
	}
	// The latest time a packet already given a departure occupies the
	// wire to any destination (CLOCK_TAI ns).
	std::uint64_t booked_until() const
	{
		std::uint64_t until = 0;
		for (std::uint32_t k = 0; k < cfg.nodes; k++) {
			lumen_gate_clock c{};
			if (bpf_map_lookup_elem(clock.get(), &k, &c) != 0)
				throw Error(std::string("gate: cannot read its wire clocks: ") + std::strerror(errno));
			until = std::max<std::uint64_t>(until, c.free_tai_ns);
		}
		return until;
	}
	void check(const sched::Schedule &s) const
	{
		sched::validate(s, "gate schedule");
		if (s.nodes != cfg.nodes)
			throw UsageError("gate: the schedule has " + std::to_string(s.nodes) + " nodes, the gate " +
					 std::to_string(cfg.nodes));
		if (s.period > cfg.table_period)
			throw UsageError("gate: a period of " + std::to_string(s.period) +
					 " slots does not fit the gate's tables (made for " +
					 std::to_string(cfg.table_period) + "; attach it with room for more)");
		if (2 * cfg.margin_ns >= s.slot_ns - s.guard_ns)
			throw UsageError("gate: its margin of " + std::to_string(cfg.margin_ns) +
					 " ns on each side leaves nothing of the new schedule's " +
					 std::to_string(s.slot_ns - s.guard_ns) + " usable ns");
	}
	// s's waits into bank (one no packet reads), then next.
	void write(const sched::Schedule *s, std::uint32_t bank, const sched::Banks &next)
	{
		if (s)
			write_waits(waits.get(), *s, cfg.self, bank, cfg.table_period);
		lumen_gate_cfg c = cfg;
		sched::set_banks(c, next);
		write_cfg(cfg_fd.get(), c);
	}
};

} // namespace

std::uint64_t gate_gso_cap(const lumen_gate_cfg &cfg, std::uint32_t mtu, std::uint64_t now_ns)
{
	const sched::Banks b = sched::settle(sched::banks_of(cfg), now_ns);
	const std::uint32_t cur = b.change.bank & 1;
	std::uint64_t window = lumen_window_ns(&b.bank[cur].timing, cfg.margin_ns);
	if (b.change.state != LUMEN_CHANGE_NONE) {
		/* a burst booked before the instant leaves on the old windows,
		 * one after it on the new: it must fit both */
		std::uint64_t next = lumen_window_ns(&b.bank[cur ^ 1].timing, cfg.margin_ns);
		if (next < window)
			window = next;
	}
	return std::max<std::uint64_t>(lumen_gso_cap_bytes(window, cfg.rate_mbps, mtu), mtu);
}

void check_gate_request(const GateRequest &req)
{
	const sched::Schedule &s = req.schedule;
	sched::validate(s, "gate schedule");
	check_ifname(req.dev, "gate device");
	if (!req.lumend.empty())
		osched_dir(req.lumend);
	if (s.nodes > LUMEN_GATE_MAX_NODES)
		throw UsageError("gate: the schedule is over the gate's tables (" +
				 std::to_string(LUMEN_GATE_MAX_NODES) + " nodes)");
	sched::table_period(s, s.nodes, req.max_period);
	if (req.self >= s.nodes)
		throw UsageError("gate: node " + std::to_string(req.self) + " is not in the schedule (0.." +
				 std::to_string(s.nodes - 1) + ")");
	if (req.host_addrs.size() != s.nodes)
		throw UsageError("gate: " + std::to_string(req.host_addrs.size()) + " addresses for " +
				 std::to_string(s.nodes) + " nodes");
	if (std::set<std::uint32_t>(req.host_addrs.begin(), req.host_addrs.end()).size() != s.nodes)
		throw UsageError("gate: two nodes have the same address");
	if (!req.rate_mbps)
		throw UsageError("gate: the link's rate is needed (wire times)");
	if (2 * req.margin_ns >= s.slot_ns - s.guard_ns)
		throw UsageError("gate: a margin of " + std::to_string(req.margin_ns) +
				 " ns on each side leaves nothing of " + std::to_string(s.slot_ns - s.guard_ns) +
				 " usable ns");
}

void attach_gate(const GateRequest &req)
{
	check_gate_request(req);
	require_btf();
	ensure_pin_root();
	PinRootLock lock;
	const std::string dir = gate_dir(req.netns, req.dev);
	if (pinned(dir + "/cfg"))
		throw Error("gate: " + req.dev + " has a gate already (" + pin_path(dir) + ")");
	const sched::Schedule &s = req.schedule;
	Netns ns = open_netns(req.netns);
	capture_libbpf_log();
	std::unique_ptr<optical_gate, SkelDeleter> skel(optical_gate__open());
	if (!skel)
		throw Error("gate: cannot open the BPF object: " + libbpf_log_tail());
	std::uint32_t table_period = sched::table_period(s, s.nodes, req.max_period);
	if (!req.lumend.empty()) {
		/* lumend's map in place of the gate's own: the program reads its quiet word */
		lumen_osched_state ls = read_osched(req.lumend);
		if (ls.self != req.self)
			throw UsageError("gate: lumend '" + req.lumend + "' follows node " + std::to_string(ls.self) +
					 ", the gate is for node " + std::to_string(req.self));
		Fd osched = open_pin(osched_dir(req.lumend) + "/state");
		if (bpf_map__reuse_fd(skel->maps.gate_osched, osched.get()) != 0)
			throw Error("gate: cannot use lumend's slot state " + pin_path(osched_dir(req.lumend)) + ": " +
				    std::strerror(errno));
	}
	if (bpf_map__set_max_entries(skel->maps.gate_waits, 2 * table_period * s.nodes) != 0 ||
	    bpf_map__set_max_entries(skel->maps.gate_clock, s.nodes) != 0 ||
	    bpf_map__set_max_entries(skel->maps.gate_stats, s.nodes) != 0)
		throw Error("gate: cannot size its maps");
	if (int err = optical_gate__load(skel.get()))
		throw Error("gate: cannot load the BPF program (" + errno_text(err) + "): " + libbpf_log_tail());

	lumen_gate_cfg cfg{};
	cfg.banks[0] = sched::bank_of(s, s.t0_ns);
	cfg.margin_ns = req.margin_ns;
	cfg.self = req.self;
	cfg.nodes = s.nodes;
	cfg.rate_mbps = req.rate_mbps;
	cfg.table_period = table_period;
	cfg.max_hold_ns = req.max_hold_ns ? req.max_hold_ns : kDefaultMaxHoldNs;
	if (!req.lumend.empty())
		cfg.stale_ns = req.stale_ns ? req.stale_ns : default_stale_ns(s);
	write_cfg(bpf_map__fd(skel->maps.gate_cfg), cfg);
	write_waits(bpf_map__fd(skel->maps.gate_waits), s, req.self, 0, table_period);
	for (std::uint32_t i = 0; i < s.nodes; i++) {
		std::uint32_t addr = htonl(req.host_addrs[i]);
		if (bpf_map_update_elem(bpf_map__fd(skel->maps.gate_hosts), &addr, &i, BPF_ANY) != 0)
			throw Error(std::string("gate: cannot write the addresses: ") + std::strerror(errno));
	}

	Rollback undo("gate attach");
	{
		/* fq's horizon beyond the gate's: every packet the gate books, fq holds */
		std::uint64_t horizon_us = cfg.max_hold_ns / 1000 + 1'000'000;
		ProcessResult r = run_tc(ns, {"qdisc", "replace", "dev", req.dev, "root", "fq", "limit", "100000",
					      "flow_limit", "100000", "horizon", std::to_string(horizon_us) + "us"});
		if (r.status != 0)
			throw Error("gate: cannot put the fq qdisc on " + req.dev + " (" + r.output +
				    "): gating needs sch_fq to hold packets until their departure; this kernel may "
				    "lack it (run it in a VM: tools/vm-run)");
		const std::string dev = req.dev;
		undo.add("remove fq from " + dev, [&ns, dev]() { run_tc(ns, {"qdisc", "del", "dev", dev, "root"}); });
		NetnsGuard g(ns);
		unsigned ifx = dev_info(dev, ns).ifindex;
		if (create_clsact(ifx, dev))
			undo.add("remove clsact from " + dev, [&ns, ifx]() {
				NetnsGuard g2(ns);
				destroy_clsact(ifx);
			});
		cap_gso(ns, dev, cfg);
		TcFilter f = attach_filter(ifx, BPF_TC_EGRESS, bpf_program__fd(skel->progs.lumen_gate_egress), dev);
		undo.add("detach the gate from " + dev, [&ns, ifx, f, dev]() {
			NetnsGuard g2(ns);
			detach_filter(ifx, BPF_TC_EGRESS, f, dev);
		});
	}
	for (const std::string &d : {std::string(LUMEN_PIN_GATE_DIR), dir}) {
		std::string path = pin_path(d);
		if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST)
			throw Error("cannot create " + path + ": " + std::strerror(errno));
	}
	undo.add("remove " + pin_path(dir), [dir]() { ::rmdir(pin_path(dir).c_str()); });
	struct Pin {
		std::string name;
		bpf_map *map;
	} pins[] = {{dir + "/cfg", skel->maps.gate_cfg},
		    {dir + "/stats", skel->maps.gate_stats},
		    {dir + "/waits", skel->maps.gate_waits},
		    {dir + "/clock", skel->maps.gate_clock},
		    {dir + "/osched", skel->maps.gate_osched}};
	for (const Pin &p : pins) {
		std::string path = pin_path(p.name);
		if (bpf_obj_pin(bpf_map__fd(p.map), path.c_str()) != 0)
			throw Error("cannot pin " + path + ": " + std::strerror(errno));
		undo.add("unpin " + path, [path]() { ::unlink(path.c_str()); });
	}
	undo.commit();
}

bool gate_attached(const std::string &netns, const std::string &dev)
{
	return pinned(gate_dir(netns, dev) + "/cfg");
}

bool detach_gate(const std::string &netns, const std::string &dev)
{
	ensure_pin_root();
	PinRootLock lock;
	const std::string dir = gate_dir(netns, dev);
	bool was = pinned(dir + "/cfg");
	if (netns.empty() || netns_exists(netns)) {
		Netns ns = open_netns(netns);
		run_tc(ns, {"qdisc", "del", "dev", dev, "root"});
		run_tc(ns, {"qdisc", "del", "dev", dev, "clsact"});
	}
	remove_pin(dir + "/cfg");
	remove_pin(dir + "/stats");
	remove_pin(dir + "/waits");
	remove_pin(dir + "/clock");
	remove_pin(dir + "/osched");
	::rmdir(pin_path(dir).c_str());
	return was;
}

GateStatus read_gate(const std::string &netns, const std::string &dev)
{
	const std::string dir = gate_dir(netns, dev);
	if (!pinned(dir + "/cfg"))
		throw Error("no gate on " + dev + (netns.empty() ? "" : " in " + netns) + " (no " + pin_path(dir) +
			    ")");
	Fd cfg_fd = open_pin(dir + "/cfg"), stats = open_pin(dir + "/stats");
	GateStatus st;
	st.cfg = read_cfg(cfg_fd.get());
	if (pinned(dir + "/osched")) {
		Fd osched = open_pin(dir + "/osched");
		std::uint32_t zero = 0;
		if (bpf_map_lookup_elem(osched.get(), &zero, &st.osched) != 0)
			throw Error(std::string("gate: cannot read lumend's slot state: ") + std::strerror(errno));
	}
	int ncpu = libbpf_num_possible_cpus();
	if (ncpu <= 0)
		throw Error("cannot count possible CPUs");
	std::vector<lumen_gate_stats> per_cpu((size_t)ncpu);
	st.dsts.assign(st.cfg.nodes, lumen_gate_stats{});
	for (std::uint32_t k = 0; k < st.cfg.nodes; k++) {
		if (bpf_map_lookup_elem(stats.get(), &k, per_cpu.data()) != 0)
			throw Error("gate: cannot read its counters: " + std::string(std::strerror(errno)));
		for (const lumen_gate_stats &c : per_cpu) {
			for (std::uint32_t i = 0; i < LUMEN_GATE_NCOUNTERS; i++) {
				st.dsts[k].packets[i] += c.packets[i];
				st.total.packets[i] += c.packets[i];
			}
			st.dsts[k].held_ns += c.held_ns;
			st.total.held_ns += c.held_ns;
			st.dsts[k].bytes += c.bytes;
			st.total.bytes += c.bytes;
			st.dsts[k].held_max_ns = std::max(st.dsts[k].held_max_ns, c.held_max_ns);
			st.total.held_max_ns = std::max(st.total.held_max_ns, c.held_max_ns);
		}
	}
	return st;
}

GateDevice read_gate_device(const std::string &netns, const std::string &dev)
{
	if (!netns.empty() && !netns_exists(netns))
		return {};
	return device_of(open_netns(netns), dev);
}

bool gate_change_overdue(const lumen_gate_cfg &cfg, std::uint64_t now_ns)
{
	const std::uint64_t limit =
		cfg.stale_ns ? cfg.stale_ns : default_stale_ns_of(cfg.banks[cfg.change.bank & 1].timing.slot_ns);
	return lumen_change_overdue(&cfg.change, now_ns, limit) != 0;
}

nlohmann::json gate_status_json(const GateStatus &st, const GateDevice &d, std::uint64_t now_ns)
{
	sched::ChangeView v = sched::view(sched::banks_of(st.cfg), now_ns);
	nlohmann::json dsts = nlohmann::json::array();
	auto one = [](const lumen_gate_stats &s) {
		nlohmann::json j;
		for (std::uint32_t i = 0; i < LUMEN_GATE_NCOUNTERS; i++)
			j[gate_counter_name(i)] = s.packets[i];
		j["bytes"] = s.bytes;
		j["held_ns"] = s.held_ns;
		j["held_max_ns"] = s.held_max_ns;
		return j;
	};
	for (const auto &x : st.dsts)
		dsts.push_back(one(x));
	return {{"node", st.cfg.self},
		{"nodes", st.cfg.nodes},
		{"version", v.in_force.version},
		{"quiet", v.quiet},
		{"change", sched::change_json(v)},
		{"change_overdue", gate_change_overdue(st.cfg, now_ns)},
		{"lumend_quiet", sched::quiet_names(st.osched.quiet)},
		{"rate_mbps", st.cfg.rate_mbps},
		{"margin_ns", st.cfg.margin_ns},
		{"max_hold_ns", st.cfg.max_hold_ns},
		/* 0: attached without --lumend, never stale */
		{"stale_ns", st.cfg.stale_ns},
		{"lumend_boundary_ns", st.osched.boundary_ns},
		/* the cap the gate's windows ask for (both schedules' while a
		 * change is under way) and what the device has (0: unknown) */
		{"gso",
		 {{"cap", d.mtu ? gate_gso_cap(st.cfg, (std::uint32_t)d.mtu, now_ns) : 0},
		  {"max_size", d.gso_max_size},
		  {"mtu", d.mtu}}},
		{"table_period", st.cfg.table_period},
		{"total", one(st.total)},
		{"destinations", dsts}};
}

void stage_gate(const std::string &netns, const std::string &dev, const sched::Schedule &s, std::uint64_t switch_ns)
{
	Attached a(netns, dev);
	a.check(s);
	sched::Banks next = sched::stage(sched::banks_of(a.cfg), s, switch_ns, tai_ns());
	a.write(&s, next.change.bank ^ 1, next);
	/* Packets given departures before the announcement may leave after
	 * the instant, on the old schedule's windows: fq cannot take them
	 * back. From now on none is booked past the instant (staged); once
	 * the programs that read the state before are done (they run in
	 * microseconds), the wire clocks say whether any was. */
	::usleep(2000);
	std::uint64_t booked = a.booked_until();
	if (booked > switch_ns) {
		a.write(nullptr, 0, sched::abort(next, s.version));
		throw UsageError("gate: packets on " + dev + " are booked until " + std::to_string(booked) +
				 " ns TAI, past the instant " + std::to_string(switch_ns) + " (by " +
				 std::to_string((booked - switch_ns) / 1000000) +
				 " ms): give the change a longer lead");
	}
	/* A schedule with shorter windows: TSO bursts made for the old ones
	 * would be too long for the new (dropped as too_long), so DEV's
	 * gso_max_size comes down to the shorter now, as attach set it for
	 * the first (issue 25, §4). Connections already open keep the size
	 * they read when they started. */
	lumen_gate_cfg c = a.cfg;
	sched::set_banks(c, next);
	if (netns.empty() || netns_exists(netns))
		cap_gso(open_netns(netns), dev, c);
}

void commit_gate(const std::string &netns, const std::string &dev, std::uint64_t version)
{
	Attached a(netns, dev);
	a.write(nullptr, 0, sched::commit(sched::banks_of(a.cfg), version));
}

void abort_gate(const std::string &netns, const std::string &dev, std::uint64_t version)
{
	Attached a(netns, dev);
	a.write(nullptr, 0, sched::abort(sched::banks_of(a.cfg), version));
}

const char *gate_counter_name(std::uint32_t i)
{
#define LUMEN_GATE_NAME(id, name, help) name,
	static const char *const names[] = {LUMEN_GATE_COUNTERS(LUMEN_GATE_NAME)};
#undef LUMEN_GATE_NAME
	return i < LUMEN_GATE_NCOUNTERS ? names[i] : "?";
}

} // namespace lumen
