// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/cli/cmd_int.cpp - `lumen int`: load the INT sockops program
// (bpf/int_sockops.bpf.c), attach it to a cgroup v2 with a pinned bpf_link so
// it outlives this process, and report its configuration and counters.
//
// Pinned under LUMEN_PIN_ROOT while enabled:
//   int_sockops_link   the cgroup link; unpinning it detaches the program
//   int_sockops_prog   the program
//   lumen_int_cfg      struct lumen_int_config
//   lumen_int_stats    per-CPU counters (enum lumen_int_counter)
//   lumen_int_sk       per-socket INT state, shared with the PowerTCP
//                      struct_ops object (`lumen cc`), which may have pinned
//                      it first and keeps it while it is loaded.
#include "base/args.h"
#include "base/error.h"
#include "base/fd.h"
#include "base/interrupt.h"
#include "base/json.h"
#include "base/system.h"
#include "base/units.h"
#include "bpfctl/bpf_util.h"
#include "cli/commands.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <vector>

#include <linux/bpf.h>
#include <linux/magic.h>

extern "C" {
#include "lumen/bpf_shared.h"
}

#include "int_sockops.skel.h"

namespace lumen
{
namespace
{

constexpr const char *kLinkPin = "int_sockops_link";
constexpr const char *kProgPin = "int_sockops_prog";
constexpr const char *kMapSk = "lumen_int_sk";
constexpr const char *kMapCfg = "lumen_int_cfg";
constexpr const char *kMapStats = "lumen_int_stats";
constexpr unsigned kDefaultSlots = 3;
// NOP,NOP,TS takes 12 of the 40 option bytes: 28 remain, 3 slots (26 bytes).
constexpr unsigned kSlotsWithTimestamps = 3;

// Indexed by enum lumen_int_counter.
struct CounterInfo {
	const char *name; // JSON key and table row
	const char *help;
};
constexpr std::array<CounterInfo, LUMEN_INT_CNT_MAX> kCounters = {{
	{"flows", "connections that enabled INT"},
	{"filtered", "connections the filters excluded"},
	{"req_written", "requests written on data segments"},
	{"echo_written", "echoes written on pure ACKs"},
	{"req_parsed", "requests parsed (receiver)"},
	{"echo_parsed", "echoes parsed (sender)"},
	{"malformed", "options refused by the parser"},
	{"no_room", "segments without option room (skipped)"},
	{"no_storage", "sk_storage could not be created"},
}};
static_assert(LUMEN_INT_CNT_MAX == 9, "a counter was added: update kCounters");

const char kUsage[] = "usage: lumen int enable --cgroup PATH [--slots N] [--port P]... [--ipv4 | --ipv6]\n"
		      "       lumen int disable\n"
		      "       lumen int status [--json]\n"
		      "\n"
		      "In-band network telemetry (INT) for TCP flows, as one cgroup sockops program.\n"
		      "For every connection established in the cgroup (and its descendants) that\n"
		      "passes the filters, data segments carry an INT request (TCP option kind 253,\n"
		      "ExID 0x4C55) with N empty hop slots that INT switches fill; the receiver\n"
		      "echoes the latest request on every pure ACK, and the sender stores the echo\n"
		      "for the PowerTCP congestion control (lumen cc). Connections established\n"
		      "before `enable` are not affected.\n"
		      "\n"
		      "enable   load, configure and attach; stays attached after lumen exits.\n"
		      "  --cgroup PATH  a cgroup v2 directory, e.g. /sys/fs/cgroup/mygroup\n"
		      "  --slots N      hop slots per request, 1..5 (default 3). With TCP timestamps\n"
		      "                 on, only 3 fit next to them; more slots need\n"
		      "                 net.ipv4.tcp_timestamps=0, otherwise every request is\n"
		      "                 skipped and counted as no_room.\n"
		      "  --port P       only flows whose local or remote port is P; repeat the\n"
		      "                 option or give a comma list, at most 8 ports (default: all)\n"
		      "  --ipv4         only IPv4 flows (IPv4-mapped IPv6 sockets count as IPv4)\n"
		      "  --ipv6         only IPv6 flows (default: both families)\n"
		      "disable  detach the program and remove its pinned state. The per-socket map\n"
		      "         lumen_int_sk stays pinned while the PowerTCP struct_ops (lumen cc)\n"
		      "         is loaded, since it shares it.\n"
		      "status   whether the program is attached, where, its configuration and its\n"
		      "         counters; --json for a machine-readable object.\n"
		      "\n"
		      "Counters:\n"
		      "  flows         connections that enabled INT (each end counts once)\n"
		      "  filtered      connections the port/family filters excluded\n"
		      "  req_written   requests written on data segments (a GSO burst counts once;\n"
		      "                each of its segments carries a copy)\n"
		      "  echo_written  echoes written on pure ACKs\n"
		      "  req_parsed    requests parsed (receiver)\n"
		      "  echo_parsed   echoes parsed (sender)\n"
		      "  malformed     INT options the parser refused (state left unchanged)\n"
		      "  no_room       segments where the option did not fit (SACK blocks, slots)\n"
		      "  no_storage    connections whose per-socket state could not be created\n"
		      "\n"
		      "State is pinned under " LUMEN_PIN_ROOT ": int_sockops_link, int_sockops_prog,\n"
		      "lumen_int_cfg, lumen_int_stats, lumen_int_sk.\n";

bool pinned(const char *name)
{
	return path_exists(pin_path(name));
}

// Anything of the PowerTCP struct_ops part (lumen cc) pinned: its links
// ("cc_*") or its maps ("lumen_cc_*"). It shares lumen_int_sk.
bool cc_part_loaded()
{
	DIR *d = ::opendir(LUMEN_PIN_ROOT);
	if (!d)
		return false;
	bool found = false;
	while (struct dirent *e = ::readdir(d)) {
		std::string n = e->d_name;
		if (n.rfind("cc_", 0) == 0 || n.rfind("lumen_cc_", 0) == 0)
			found = true;
	}
	::closedir(d);
	return found;
}

// Removes a pin; returns whether something was removed.
bool unpin(const std::string &path)
{
	if (::unlink(path.c_str()) == 0)
		return true;
	if (errno != ENOENT)
		throw Error("cannot remove " + path + ": " + errno_text(errno));
	return false;
}

std::string families_text(std::uint32_t families)
{
	switch (families) {
	case LUMEN_INT_FAMILY_IPV4:
		return "ipv4";
	case LUMEN_INT_FAMILY_IPV6:
		return "ipv6";
	default:
		return "ipv4,ipv6";
	}
}

std::string ports_text(const lumen_int_config &cfg)
{
	if (cfg.nports == 0)
		return "all";
	std::string s;
	for (std::uint32_t i = 0; i < cfg.nports && i < LUMEN_INT_MAX_PORTS; i++) {
		if (i)
			s += ',';
		s += std::to_string(cfg.ports[i]);
	}
	return s;
}

std::string cgroup2_mount()
{
	std::ifstream in("/proc/mounts");
	std::string line;
	while (std::getline(in, line)) {
		std::istringstream f(line);
		std::string dev, dir, type;
		if (f >> dev >> dir >> type && type == "cgroup2")
			return dir;
	}
	return "";
}

// Opens a cgroup v2 directory, or explains why PATH is not one.
int open_cgroup(const std::string &path)
{
	int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		if (e == ENOENT)
			throw Error("cgroup " + path + " does not exist");
		if (e == ENOTDIR)
			throw Error("cgroup " + path + " is not a directory");
		throw Error("cannot open cgroup " + path + ": " + errno_text(e));
	}
	struct statfs fs;
	if (::fstatfs(fd, &fs) != 0 || fs.f_type != CGROUP2_SUPER_MAGIC) {
		::close(fd);
		std::string m = cgroup2_mount();
		throw Error(path + " is not a cgroup v2 directory" +
			    (m.empty() ? std::string(" (no cgroup2 hierarchy is mounted)")
				       : " (the cgroup2 hierarchy is mounted at " + m + ")"));
	}
	return fd;
}

// Path of a cgroup v2 from its id (the kernfs node id, which is also its
// file handle); empty when it cannot be resolved (e.g. removed).
std::string cgroup_path_from_id(std::uint64_t id)
{
	std::string mnt = cgroup2_mount();
	if (mnt.empty() || id == 0)
		return "";
	Fd mfd(::open(mnt.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	if (mfd.get() < 0)
		return "";
	alignas(struct file_handle) unsigned char hbuf[sizeof(struct file_handle) + sizeof(std::uint64_t)] = {};
	auto *fh = reinterpret_cast<struct file_handle *>(hbuf);
	fh->handle_bytes = sizeof(std::uint64_t);
	fh->handle_type = 0xfe; // FILEID_KERNFS
	std::memcpy(hbuf + sizeof(struct file_handle), &id, sizeof(id));
	Fd cfd(::open_by_handle_at(mfd.get(), fh, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	if (cfd.get() < 0)
		return "";
	char buf[4096];
	std::string link = "/proc/self/fd/" + std::to_string(cfd.get());
	ssize_t n = ::readlink(link.c_str(), buf, sizeof(buf) - 1);
	if (n <= 0)
		return "";
	buf[n] = '\0';
	return buf;
}

// ---------------------------------------------------------------------
// enable

struct EnableOptions {
	std::string cgroup;
	lumen_int_config cfg{};
};

EnableOptions parse_enable(const std::vector<std::string> &args)
{
	// --port may repeat; Args keeps one value per option, so collect it here.
	std::vector<std::string> rest, port_words;
	for (std::size_t i = 0; i < args.size(); i++) {
		const std::string &w = args[i];
		if (w == "--port") {
			if (i + 1 >= args.size())
				throw UsageError("option --port needs a value");
			port_words.push_back(args[++i]);
		} else if (w.rfind("--port=", 0) == 0) {
			port_words.push_back(w.substr(7));
		} else {
			rest.push_back(w);
		}
	}
	Args a = Args::parse(rest, {"--ipv4", "--ipv6"});
	a.allow_only({"--cgroup", "--slots", "--ipv4", "--ipv6"});
	if (!a.positional.empty())
		throw UsageError("unexpected argument '" + a.positional[0] + "'");

	EnableOptions o;
	auto cg = a.get("--cgroup");
	if (!cg || cg->empty())
		throw UsageError("enable needs --cgroup PATH (a cgroup v2 directory)");
	o.cgroup = *cg;

	o.cfg.enabled = 1;
	o.cfg.slots = kDefaultSlots;
	if (auto s = a.get("--slots"))
		o.cfg.slots = static_cast<std::uint32_t>(parse_uint(*s, "--slots", 1, LUMEN_INT_MAX_HOPS));

	if (a.has("--ipv4") && a.has("--ipv6"))
		throw UsageError("--ipv4 and --ipv6 exclude each other (give neither for both families)");
	o.cfg.families = a.has("--ipv4") ? LUMEN_INT_FAMILY_IPV4 : a.has("--ipv6") ? LUMEN_INT_FAMILY_IPV6 : 0;

	std::vector<std::uint16_t> ports;
	for (const auto &w : port_words) {
		std::string item;
		std::istringstream in(w);
		bool any = false;
		while (std::getline(in, item, ',')) {
			any = true;
			auto p = static_cast<std::uint16_t>(parse_uint(item, "--port", 1, 65535));
			if (std::find(ports.begin(), ports.end(), p) == ports.end())
				ports.push_back(p);
		}
		if (!any)
			throw UsageError("--port: '' is not a port");
	}
	if (ports.size() > LUMEN_INT_MAX_PORTS)
		throw UsageError("too many ports: " + std::to_string(ports.size()) + " given, at most " +
				 std::to_string(LUMEN_INT_MAX_PORTS));
	o.cfg.nports = static_cast<std::uint32_t>(ports.size());
	for (std::size_t i = 0; i < ports.size(); i++)
		o.cfg.ports[i] = ports[i];
	return o;
}

// Everything enable creates, undone in reverse unless commit() is called.
class EnableTransaction
{
      public:
	EnableTransaction()
	{
		for (const char *m : {kMapSk, kMapCfg, kMapStats})
			map_was_pinned_.push_back(pinned(m));
	}
	~EnableTransaction()
	{
		if (committed_)
			return;
		if (link_pinned_)
			::unlink(pin_path(kLinkPin).c_str());
		if (prog_pinned_)
			::unlink(pin_path(kProgPin).c_str());
		if (link_)
			bpf_link__destroy(link_); // detaches: its only reference
		std::size_t i = 0;
		for (const char *m : {kMapSk, kMapCfg, kMapStats}) {
			// only what this attempt pinned; lumen_int_sk may be lumen cc's
			if (!map_was_pinned_[i++])
				::unlink(pin_path(m).c_str());
		}
		if (skel_)
			int_sockops__destroy(skel_);
	}
	EnableTransaction(const EnableTransaction &) = delete;
	EnableTransaction &operator=(const EnableTransaction &) = delete;

	void commit()
	{
		committed_ = true;
		if (link_)
			bpf_link__destroy(link_); // pinned: closing our fd keeps it
		if (skel_)
			int_sockops__destroy(skel_);
	}

	int_sockops *skel_ = nullptr;
	bpf_link *link_ = nullptr;
	bool link_pinned_ = false;
	bool prog_pinned_ = false;

      private:
	std::vector<bool> map_was_pinned_;
	bool committed_ = false;
};

void zero_counters(int fd)
{
	int ncpu = libbpf_num_possible_cpus();
	if (ncpu <= 0)
		throw Error("cannot count possible CPUs");
	std::vector<std::uint64_t> zeros(static_cast<std::size_t>(ncpu), 0);
	for (std::uint32_t k = 0; k < LUMEN_INT_CNT_MAX; k++)
		if (bpf_map_update_elem(fd, &k, zeros.data(), BPF_ANY) != 0)
			throw Error("cannot reset counter " + std::to_string(k) + ": " + errno_text(errno));
}

int cmd_enable(const std::vector<std::string> &args)
{
	EnableOptions o = parse_enable(args);
	require_root();
	require_btf();
	Fd cg(open_cgroup(o.cgroup));
	ensure_pin_root();
	if (pinned(kLinkPin) || pinned(kProgPin))
		throw Error("INT sockops is already enabled (see 'lumen int status'; 'lumen int disable' first)");

	capture_libbpf_log();
	clear_libbpf_log();
	// Ctrl-C sets a flag instead of killing us half-way: checked before
	// the commit, so either all of the setup stays or none of it
	install_interrupt_handlers();
	EnableTransaction tx;

	bpf_object_open_opts oo{};
	oo.sz = sizeof(oo);
	oo.pin_root_path = LUMEN_PIN_ROOT;
	tx.skel_ = int_sockops__open_opts(&oo);
	if (!tx.skel_)
		throw Error("cannot open the int_sockops BPF object: " + errno_text(errno) + libbpf_log_tail());
	if (int err = int_sockops__load(tx.skel_))
		throw Error("cannot load the int_sockops BPF object: " + errno_text(err) +
			    " (a map pinned under " LUMEN_PIN_ROOT " with another layout?)" + libbpf_log_tail());

	const std::uint32_t zero = 0;
	if (bpf_map_update_elem(bpf_map__fd(tx.skel_->maps.lumen_int_cfg), &zero, &o.cfg, BPF_ANY) != 0)
		throw Error("cannot write the INT configuration: " + errno_text(errno));
	zero_counters(bpf_map__fd(tx.skel_->maps.lumen_int_stats));

	tx.link_ = bpf_program__attach_cgroup(tx.skel_->progs.lumen_int_sockops, cg.get());
	if (!tx.link_) {
		int e = errno;
		throw Error("cannot attach to cgroup " + o.cgroup + ": " + errno_text(e) + libbpf_log_tail());
	}
	if (int err = bpf_link__pin(tx.link_, pin_path(kLinkPin).c_str()))
		throw Error("cannot pin the cgroup link at " + pin_path(kLinkPin) + ": " + errno_text(err));
	tx.link_pinned_ = true;
	if (int err = bpf_program__pin(tx.skel_->progs.lumen_int_sockops, pin_path(kProgPin).c_str()))
		throw Error("cannot pin the program at " + pin_path(kProgPin) + ": " + errno_text(err));
	tx.prog_pinned_ = true;
	throw_if_interrupted(); // Ctrl-C during setup: undo it all (tx)
	tx.commit();

	std::printf("INT sockops enabled on cgroup %s: %u hop slot%s, families %s, ports %s\n", o.cgroup.c_str(),
		    o.cfg.slots, o.cfg.slots == 1 ? "" : "s", families_text(o.cfg.families).c_str(),
		    ports_text(o.cfg).c_str());
	if (o.cfg.slots > kSlotsWithTimestamps) {
		std::string ts;
		try {
			ts = read_sysctl("net.ipv4.tcp_timestamps");
		} catch (const Error &) {
		}
		if (ts != "0")
			std::fprintf(stderr,
				     "lumen int: note: %u slots (%u bytes) do not fit next to TCP timestamps; "
				     "requests will be skipped (no_room) unless net.ipv4.tcp_timestamps=0\n",
				     o.cfg.slots, LUMEN_INT_OPT_LEN(o.cfg.slots));
	}
	return 0;
}

// ---------------------------------------------------------------------
// disable

int cmd_disable(const std::vector<std::string> &args)
{
	Args a = Args::parse(args);
	a.allow_only({});
	if (!a.positional.empty())
		throw UsageError("unexpected argument '" + a.positional[0] + "'");
	require_root();

	bool removed = false;
	std::string link = pin_path(kLinkPin);
	if (path_exists(link)) {
		// Detach explicitly, so a process still holding the link cannot
		// keep the program attached after the pin is gone.
		Fd fd(bpf_obj_get(link.c_str()));
		if (fd.get() >= 0 && bpf_link_detach(fd.get()) != 0 && errno != EINVAL && errno != ENOLINK)
			throw Error("cannot detach " + link + ": " + errno_text(errno));
		removed |= unpin(link);
	}
	removed |= unpin(pin_path(kProgPin));
	removed |= unpin(pin_path(kMapCfg));
	removed |= unpin(pin_path(kMapStats));
	bool kept_sk = false;
	if (cc_part_loaded())
		kept_sk = pinned(kMapSk);
	else
		removed |= unpin(pin_path(kMapSk));

	if (!removed) {
		std::printf("INT sockops is not enabled: nothing to do\n");
		return 0;
	}
	std::printf("INT sockops disabled\n");
	if (kept_sk)
		std::printf("kept %s: the PowerTCP struct_ops (lumen cc) still uses it\n", pin_path(kMapSk).c_str());
	return 0;
}

// ---------------------------------------------------------------------
// status

struct LinkState {
	bool attached = false;
	std::uint32_t link_id = 0, prog_id = 0;
	std::uint64_t cgroup_id = 0;
	std::string cgroup;
};

LinkState read_link()
{
	LinkState s;
	std::string path = pin_path(kLinkPin);
	if (!path_exists(path))
		return s;
	Fd fd(bpf_obj_get(path.c_str()));
	if (fd.get() < 0)
		throw Error("cannot open " + path + ": " + errno_text(errno));
	bpf_link_info info{};
	std::uint32_t len = sizeof(info);
	if (bpf_obj_get_info_by_fd(fd.get(), &info, &len) != 0)
		throw Error("cannot query " + path + ": " + errno_text(errno));
	s.link_id = info.id;
	s.prog_id = info.prog_id;
	if (info.type == BPF_LINK_TYPE_CGROUP) {
		s.cgroup_id = info.cgroup.cgroup_id;
		// a link whose cgroup was removed reports id 0 (defunct)
		s.attached = s.cgroup_id != 0;
		s.cgroup = cgroup_path_from_id(s.cgroup_id);
	}
	return s;
}

std::string json_bool(bool b)
{
	return b ? "true" : "false";
}

int cmd_status(const std::vector<std::string> &args)
{
	Args a = Args::parse(args, {"--json"});
	a.allow_only({"--json"});
	if (!a.positional.empty())
		throw UsageError("unexpected argument '" + a.positional[0] + "'");
	require_root();
	bool json = a.has("--json");

	LinkState link = read_link();
	bool have_cfg = false;
	lumen_int_config cfg{};
	if (pinned(kMapCfg)) {
		Fd fd(bpf_obj_get(pin_path(kMapCfg).c_str()));
		const std::uint32_t zero = 0;
		if (fd.get() < 0 || bpf_map_lookup_elem(fd.get(), &zero, &cfg) != 0)
			throw Error("cannot read " + pin_path(kMapCfg) + ": " + errno_text(errno));
		have_cfg = true;
	}
	std::vector<std::uint64_t> counters;
	if (pinned(kMapStats)) {
		Fd fd(bpf_obj_get(pin_path(kMapStats).c_str()));
		if (fd.get() < 0)
			throw Error("cannot open " + pin_path(kMapStats) + ": " + errno_text(errno));
		counters = sum_percpu_counters(fd.get(), LUMEN_INT_CNT_MAX);
	}
	bool enabled = pinned(kLinkPin);
	bool sk_pinned = pinned(kMapSk);

	if (json) {
		Json j;
		j.raw("enabled", json_bool(enabled)).raw("attached", json_bool(link.attached));
		j.str("cgroup", link.cgroup).num("cgroup_id", link.cgroup_id);
		j.num("link_id", std::uint64_t{link.link_id}).num("prog_id", std::uint64_t{link.prog_id});
		if (have_cfg) {
			std::string ports = "[";
			for (std::uint32_t i = 0; i < cfg.nports && i < LUMEN_INT_MAX_PORTS; i++)
				ports += (i ? ", " : "") + std::to_string(cfg.ports[i]);
			ports += "]";
			Json c;
			c.raw("active", json_bool(cfg.enabled != 0)).num("slots", std::uint64_t{cfg.slots});
			c.num("option_bytes", std::uint64_t{LUMEN_INT_OPT_LEN(cfg.slots)});
			c.str("families", families_text(cfg.families)).raw("ports", ports);
			j.raw("config", c.dump());
		} else {
			j.raw("config", "null");
		}
		if (!counters.empty()) {
			Json c;
			for (std::size_t i = 0; i < counters.size(); i++)
				c.num(kCounters[i].name, counters[i]);
			j.raw("counters", c.dump());
		} else {
			j.raw("counters", "null");
		}
		j.raw("sk_storage_pinned", json_bool(sk_pinned));
		std::printf("%s\n", j.dump().c_str());
		return 0;
	}

	if (!enabled) {
		std::printf("INT sockops: not enabled\n");
	} else {
		std::printf("INT sockops: %s\n", link.attached ? "attached" : "pinned but detached (cgroup removed?)");
		std::printf("  cgroup       %s (id %llu)\n", link.cgroup.empty() ? "?" : link.cgroup.c_str(),
			    static_cast<unsigned long long>(link.cgroup_id));
		std::printf("  link id      %u, program id %u\n", link.link_id, link.prog_id);
	}
	if (have_cfg) {
		std::printf("  config       %s, %u hop slot%s (%u option bytes), families %s, ports %s\n",
			    cfg.enabled ? "active" : "inactive", cfg.slots, cfg.slots == 1 ? "" : "s",
			    LUMEN_INT_OPT_LEN(cfg.slots), families_text(cfg.families).c_str(), ports_text(cfg).c_str());
	}
	std::printf("  lumen_int_sk %s\n", sk_pinned ? "pinned" : "not pinned");
	if (!counters.empty()) {
		std::printf("  counters\n");
		for (std::size_t i = 0; i < counters.size(); i++)
			std::printf("    %-13s %12llu  %s\n", kCounters[i].name,
				    static_cast<unsigned long long>(counters[i]), kCounters[i].help);
	}
	return 0;
}

int run_int(const std::vector<std::string> &args)
{
	using Words = std::vector<std::string>;
	const Words rest(args.empty() ? args.end() : args.begin() + 1, args.end());
	return run_subcommand<Words>(args.empty() ? nullptr : &args[0],
				     {{"enable", cmd_enable}, {"disable", cmd_disable}, {"status", cmd_status}}, rest);
}

} // namespace

const Command kIntCommand = {"int", "INT TCP option plumbing (cgroup sockops): enable, disable, status", kUsage,
			     run_int};

} // namespace lumen
