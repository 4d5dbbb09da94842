// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/cli/cmd_cc.cpp - `lumen cc`: load, unload, inspect and tune the
// PowerTCP / theta-PowerTCP congestion control (bpf/powertcp.bpf.c), which
// registers as bpf_powertcp and bpf_theta_ptcp.
//
// What a load leaves behind, all under LUMEN_PIN_ROOT:
//   cc_ops_int, cc_ops_theta   the two struct_ops maps. libbpf 1.1 has no
//                              struct_ops links, so registration is the map
//                              update of old, which persists after this
//                              process exits; unload deletes the element.
//   lumen_cc_params            parameters, two slots per algorithm; the
//   lumen_cc_param_gen         generation names the live one (bpf_shared.h):
//                              `set` fills the other, then publishes it
//   lumen_cc_faults            fault injection for tests (0: none)
//   lumen_cc_stats             per-CPU counters
//   lumen_cc_sk                per-socket state
//   lumen_int_sk               INT echoes, shared with `lumen int` (sockops),
//                              which may own it; removed only when the
//                              sockops part is not loaded
//
// --allow adds both names to net.ipv4.tcp_allowed_congestion_control. The
// kernel keeps that list as a flag on each registered algorithm, so our names
// can be in it only while they are registered, i.e. only because a load put
// them there: unload removes them (and unregistering would drop them anyway),
// which restores the list to what it was before the load without a marker.
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
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <utility>
#include <vector>

#include "powertcp.skel.h"

extern "C" {
#include "lumen/bpf_shared.h"
}

namespace lumen
{
namespace
{

struct Algo {
	const char *name; // registered congestion control name
	lumen_ptcp_mode mode; // index into lumen_cc_params
	const char *ops_pin; // pin of its struct_ops map
	const char *map_name; // kernel name of its struct_ops map
};

const Algo kAlgos[LUMEN_CC_PARAM_ENTRIES] = {
	{LUMEN_CC_NAME_INT, LUMEN_PTCP_MODE_INT, "cc_ops_int", "ptcp_ops_int"},
	{LUMEN_CC_NAME_THETA, LUMEN_PTCP_MODE_THETA, "cc_ops_theta", "ptcp_ops_theta"},
};

// Maps this part owns (pinned by name by libbpf).
const char *const kOwnMaps[] = {"lumen_cc_params", "lumen_cc_param_gen", "lumen_cc_faults", "lumen_cc_stats",
				"lumen_cc_sk"};
const char *const kIntSkMap = "lumen_int_sk";
// Pins that mean the INT sockops part is loaded (bpf_shared.h names).
const char *const kSockopsMaps[] = {"lumen_int_cfg", "lumen_int_stats"};

const char *const kCounterNames[LUMEN_CC_CNT_MAX] = {
	"flows",    "acks",	"int_updates",	"rtt_updates", "fallback_updates", "no_int",
	"no_state", "restarts", "int_unusable", "rtt_guard",   "param_retry",
};
static_assert(LUMEN_CC_CNT_PARAM_RETRY == 10 && LUMEN_CC_CNT_MAX == 11, "update kCounterNames");

const char *const kAvailable = "net.ipv4.tcp_available_congestion_control";
const char *const kAllowed = "net.ipv4.tcp_allowed_congestion_control";
const char *const kDefault = "net.ipv4.tcp_congestion_control";

// ---------------------------------------------------------------------
// Small helpers

struct SkelDeleter {
	void operator()(powertcp *s) const
	{
		powertcp__destroy(s);
	}
};

bool contains(const std::vector<std::string> &words, const std::string &w)
{
	return std::find(words.begin(), words.end(), w) != words.end();
}

bool is_registered(const char *name)
{
	return contains(split_words(read_sysctl(kAvailable)), name);
}

void unpin(const std::string &path)
{
	if (::unlink(path.c_str()) != 0 && errno != ENOENT)
		throw Error("cannot remove " + path + ": " + errno_text(errno));
}

bool sockops_loaded()
{
	for (const char *m : kSockopsMaps)
		if (path_exists(pin_path(m)))
			return true;
	return false;
}

// ---------------------------------------------------------------------
// Parameters

// A parsed `PARAM=VALUE ...` list; unset fields are left alone.
struct ParamChange {
	std::optional<std::uint32_t> gamma, flows, beta, host_bw;
	std::optional<std::uint64_t> base_rtt;

	bool empty() const
	{
		return !gamma && !flows && !beta && !host_bw && !base_rtt;
	}
	void apply(lumen_ptcp_params *p) const
	{
		if (gamma)
			p->gamma = *gamma;
		if (flows)
			p->expected_flows = *flows;
		if (beta)
			p->beta_bytes = *beta;
		if (host_bw)
			p->host_bw_mbps = *host_bw;
		if (base_rtt)
			p->base_rtt_ns = *base_rtt;
	}
};

ParamChange parse_params(const std::vector<std::string> &words)
{
	ParamChange c;
	for (const auto &w : words) {
		auto eq = w.find('=');
		if (eq == std::string::npos || eq == 0)
			throw UsageError("'" + w +
					 "' is not PARAM=VALUE (params: gamma, flows, beta, host-bw, base-rtt)");
		std::string key = w.substr(0, eq), val = w.substr(eq + 1);
		auto once = [&](bool already) {
			if (already)
				throw UsageError("parameter " + key + " given twice");
		};
		if (key == "gamma") {
			once(c.gamma.has_value());
			c.gamma = parse_q16(val, "gamma", 0.01, 1.0);
		} else if (key == "flows") {
			once(c.flows.has_value());
			c.flows =
				static_cast<std::uint32_t>(parse_uint(val, "flows", 1, LUMEN_PTCP_EXPECTED_FLOWS_MAX));
		} else if (key == "beta") {
			once(c.beta.has_value());
			c.beta = val == "auto" ? 0
					       : static_cast<std::uint32_t>(
							 parse_bytes(val, "beta", LUMEN_PTCP_BETA_MAX_BYTES));
		} else if (key == "host-bw") {
			once(c.host_bw.has_value());
			c.host_bw = parse_rate_mbps(val, "host-bw");
		} else if (key == "base-rtt") {
			once(c.base_rtt.has_value());
			c.base_rtt = (val == "auto" || val == "0")
					     ? 0
					     : parse_duration_ns(val, "base-rtt", LUMEN_PTCP_BASE_RTT_MAX_NS);
		} else {
			throw UsageError("unknown parameter '" + key +
					 "' (params: gamma, flows, beta, host-bw, base-rtt)");
		}
	}
	return c;
}

// Which algorithms --algo selects: bit i = kAlgos[i].
unsigned parse_algo_mask(const Args &a)
{
	auto v = a.get("--algo");
	if (!v || *v == "both")
		return 3;
	for (unsigned i = 0; i < LUMEN_CC_PARAM_ENTRIES; i++)
		if (*v == kAlgos[i].name)
			return 1u << i;
	throw UsageError("--algo must be " LUMEN_CC_NAME_INT ", " LUMEN_CC_NAME_THETA " or both, not '" + *v + "'");
}

void validate(const lumen_ptcp_params &p, const char *algo)
{
	int err = lumen_ptcp_params_validate(&p);
	if (err)
		throw UsageError(std::string("invalid parameters for ") + algo + ": " + lumen_ptcp_param_strerror(err));
}

std::string fmt_ns(std::uint64_t ns)
{
	if (ns % 1000000 == 0)
		return std::to_string(ns / 1000000) + " ms";
	if (ns % 1000 == 0)
		return std::to_string(ns / 1000) + " us";
	return std::to_string(ns) + " ns";
}

std::string fmt_gamma(std::uint32_t q16)
{
	char buf[32];
	std::snprintf(buf, sizeof(buf), "%.4g", q16 / 65536.0);
	return buf;
}

std::vector<std::pair<std::string, std::string>> param_rows(const lumen_ptcp_params &p)
{
	return {
		{"gamma", fmt_gamma(p.gamma)},
		{"flows", std::to_string(p.expected_flows)},
		{"beta", p.beta_bytes ? std::to_string(p.beta_bytes) + " B" : "auto (host BDP / flows)"},
		{"host-bw", format_rate_mbps(p.host_bw_mbps)},
		{"base-rtt", p.base_rtt_ns ? fmt_ns(p.base_rtt_ns) : "auto (min RTT)"},
	};
}

std::string param_json(const lumen_ptcp_params &p)
{
	return Json()
		.num("gamma", p.gamma / 65536.0)
		.num("gamma_q16", std::uint64_t{p.gamma})
		.num("flows", std::uint64_t{p.expected_flows})
		.num("beta_bytes", std::uint64_t{p.beta_bytes})
		.num("host_bw_mbps", std::uint64_t{p.host_bw_mbps})
		.num("base_rtt_ns", std::uint64_t{p.base_rtt_ns})
		.dump();
}

// One line of a table: cells padded to `width`, except the last.
void print_row(const std::vector<std::string> &cells, int width)
{
	std::string line = " ";
	for (std::size_t i = 0; i < cells.size(); i++) {
		line += " " + cells[i];
		if (i + 1 < cells.size() && cells[i].size() < static_cast<std::size_t>(width))
			line.append(static_cast<std::size_t>(width) - cells[i].size(), ' ');
	}
	std::printf("%s\n", line.c_str());
}

void print_params(const lumen_ptcp_params (&p)[LUMEN_CC_PARAM_ENTRIES], unsigned mask)
{
	std::vector<std::string> head = {"param     "};
	for (unsigned i = 0; i < LUMEN_CC_PARAM_ENTRIES; i++)
		if (mask & (1u << i))
			head.push_back(kAlgos[i].name);
	print_row(head, 25);
	std::vector<std::vector<std::pair<std::string, std::string>>> rows;
	for (const auto &x : p)
		rows.push_back(param_rows(x));
	for (std::size_t r = 0; r < rows[0].size(); r++) {
		std::vector<std::string> cells = {rows[0][r].first};
		cells[0].resize(10, ' ');
		for (unsigned i = 0; i < LUMEN_CC_PARAM_ENTRIES; i++)
			if (mask & (1u << i))
				cells.push_back(rows[i][r].second);
		print_row(cells, 25);
	}
}

// The parameter maps (see the header): slots and generations.
struct ParamMaps {
	int params_fd, gen_fd;
};

std::uint32_t read_gen(const ParamMaps &m, std::uint32_t mode)
{
	std::uint32_t gen = 0;
	if (bpf_map_lookup_elem(m.gen_fd, &mode, &gen) != 0)
		throw Error("cannot read lumen_cc_param_gen[" + std::to_string(mode) + "]: " + errno_text(errno));
	return gen;
}

void write_slot(const ParamMaps &m, std::uint32_t slot, const lumen_ptcp_params &p)
{
	if (bpf_map_update_elem(m.params_fd, &slot, &p, BPF_ANY) != 0)
		throw Error("cannot write lumen_cc_params[" + std::to_string(slot) + "]: " + errno_text(errno));
}

// What the programs use now: each algorithm's live slot.
void read_params(const ParamMaps &m, lumen_ptcp_params (&p)[LUMEN_CC_PARAM_ENTRIES])
{
	for (std::uint32_t i = 0; i < LUMEN_CC_PARAM_ENTRIES; i++) {
		std::uint32_t slot = lumen_cc_param_slot(i, read_gen(m, i));
		if (bpf_map_lookup_elem(m.params_fd, &slot, &p[i]) != 0)
			throw Error("cannot read lumen_cc_params[" + std::to_string(slot) + "]: " + errno_text(errno));
	}
}

// Publishes new parameters for one algorithm: the idle slot first, then the
// generation that makes it live (one word, so readers see all or nothing).
void publish_params(const ParamMaps &m, std::uint32_t mode, const lumen_ptcp_params &p)
{
	std::uint32_t next = read_gen(m, mode) + 1;
	write_slot(m, lumen_cc_param_slot(mode, next), p);
	if (bpf_map_update_elem(m.gen_fd, &mode, &next, BPF_ANY) != 0)
		throw Error("cannot write lumen_cc_param_gen[" + std::to_string(mode) + "]: " + errno_text(errno));
}

int open_pin(const char *name)
{
	std::string pin = pin_path(name);
	int fd = bpf_obj_get(pin.c_str());
	if (fd < 0)
		throw Error("cannot open " + pin + ": " + errno_text(errno));
	return fd;
}

// The pinned parameter maps, for status and set.
struct PinnedParams {
	Fd params{open_pin("lumen_cc_params")};
	Fd gen{open_pin("lumen_cc_param_gen")};

	ParamMaps maps() const
	{
		return {params.get(), gen.get()};
	}
};

// ---------------------------------------------------------------------
// Kernel support

void require_kernel_support()
{
	struct btf *vmlinux = btf__load_vmlinux_btf();
	if (!vmlinux)
		throw Error("cannot read the kernel BTF: " + errno_text(errno));
	int id = btf__find_by_name_kind(vmlinux, "bpf_struct_ops_tcp_congestion_ops", BTF_KIND_STRUCT);
	btf__free(vmlinux);
	if (id < 0)
		throw Error("kernel too old or built without BPF congestion control (no "
			    "bpf_struct_ops_tcp_congestion_ops in its BTF): Linux >= 6.0 with "
			    "CONFIG_BPF_JIT and CONFIG_BPF_SYSCALL is required");
	struct utsname u;
	unsigned major = 0;
	if (::uname(&u) == 0 && std::sscanf(u.release, "%u.", &major) == 1 && major < 6)
		throw Error(std::string("kernel ") + u.release +
			    " too old: BPF congestion control may set sk_pacing_rate and sk_pacing_status "
			    "only since Linux 6.0");
}

// ---------------------------------------------------------------------
// What is loaded

struct Survey {
	bool registered[LUMEN_CC_PARAM_ENTRIES] = {};
	bool allowed[LUMEN_CC_PARAM_ENTRIES] = {};
	bool ops_pinned[LUMEN_CC_PARAM_ENTRIES] = {};
	std::vector<std::string> own_pins; // ours that exist (ops and maps)
	bool int_sk_pinned = false;
	bool sockops = false;

	bool any_registered() const
	{
		return registered[0] || registered[1];
	}
	bool loaded() const
	{
		return registered[0] && registered[1] && own_pins.size() == 2 + std::size(kOwnMaps);
	}
	bool anything() const
	{
		return any_registered() || !own_pins.empty();
	}
};

Survey survey()
{
	Survey s;
	auto avail = split_words(read_sysctl(kAvailable));
	auto allowed = split_words(read_sysctl(kAllowed));
	for (unsigned i = 0; i < LUMEN_CC_PARAM_ENTRIES; i++) {
		s.registered[i] = contains(avail, kAlgos[i].name);
		s.allowed[i] = contains(allowed, kAlgos[i].name);
		s.ops_pinned[i] = path_exists(pin_path(kAlgos[i].ops_pin));
		if (s.ops_pinned[i])
			s.own_pins.push_back(kAlgos[i].ops_pin);
	}
	for (const char *m : kOwnMaps)
		if (path_exists(pin_path(m)))
			s.own_pins.push_back(m);
	s.int_sk_pinned = path_exists(pin_path(kIntSkMap));
	s.sockops = sockops_loaded();
	return s;
}

std::string join(const std::vector<std::string> &v)
{
	std::string out;
	for (const auto &w : v)
		out += (out.empty() ? "" : ", ") + w;
	return out;
}

// Unregisters struct_ops maps of this part found by kernel map name, for
// when the pins are gone (removed by hand, bpffs remounted). Returns how many
// were unregistered.
int unregister_by_scan(const char *map_name)
{
	int n = 0;
	__u32 id = 0;
	while (bpf_map_get_next_id(id, &id) == 0) {
		Fd fd(bpf_map_get_fd_by_id(id));
		if (fd.get() < 0)
			continue;
		bpf_map_info info{};
		__u32 len = sizeof(info);
		if (bpf_obj_get_info_by_fd(fd.get(), &info, &len) != 0)
			continue;
		if (info.type != BPF_MAP_TYPE_STRUCT_OPS || std::strcmp(info.name, map_name) != 0)
			continue;
		__u32 zero = 0;
		if (bpf_map_delete_elem(fd.get(), &zero) == 0)
			n++;
	}
	return n;
}

// ---------------------------------------------------------------------
// Subcommands

int cc_load(const Args &a)
{
	a.allow_only({"--allow", "--algo"});
	unsigned mask = parse_algo_mask(a);
	ParamChange change = parse_params({a.positional.begin() + 1, a.positional.end()});
	lumen_ptcp_params params[LUMEN_CC_PARAM_ENTRIES];
	for (unsigned i = 0; i < LUMEN_CC_PARAM_ENTRIES; i++) {
		lumen_ptcp_params_default(&params[i]);
		if (mask & (1u << i))
			change.apply(&params[i]);
		validate(params[i], kAlgos[i].name);
	}
	const bool allow = a.has("--allow");

	require_root();
	require_btf();
	require_kernel_support();
	Survey s = survey();
	for (unsigned i = 0; i < LUMEN_CC_PARAM_ENTRIES; i++)
		if (s.registered[i])
			throw Error(std::string("already loaded: ") + kAlgos[i].name +
				    " is registered (see 'lumen cc status'; 'lumen cc unload' removes it)");
	if (!s.own_pins.empty())
		throw Error("stale pins under " LUMEN_PIN_ROOT " (" + join(s.own_pins) +
			    ") from an earlier load: run 'lumen cc unload' first");

	// Ctrl-C sets a flag instead of killing us half-way: checked before
	// the commit, so either all of the load stays or none of it
	install_interrupt_handlers();
	capture_libbpf_log();
	clear_libbpf_log();
	ensure_pin_root();
	const bool int_sk_existed = path_exists(pin_path(kIntSkMap));

	bpf_object_open_opts opts{};
	opts.sz = sizeof(opts);
	opts.pin_root_path = LUMEN_PIN_ROOT;
	std::unique_ptr<powertcp, SkelDeleter> skel(powertcp__open_opts(&opts));
	if (!skel)
		throw Error("cannot open the BPF object: " + errno_text(errno) + libbpf_log_tail());

	Rollback rb("lumen cc load"); // declared after skel: runs while the skeleton's fds are open
	int err = powertcp__load(skel.get());
	// libbpf unpins what it pinned when a load fails; make sure of it
	rb.add("unpin maps", [int_sk_existed]() {
		for (const char *m : kOwnMaps)
			unpin(pin_path(m));
		if (!int_sk_existed && !sockops_loaded())
			unpin(pin_path(kIntSkMap));
	});
	if (err)
		throw Error("cannot load the BPF programs (verifier or kernel refused them): " + errno_text(err) +
			    libbpf_log_tail(30));

	// both slots of each algorithm, generation 0 (the maps start zeroed)
	ParamMaps maps = {bpf_map__fd(skel->maps.lumen_cc_params), bpf_map__fd(skel->maps.lumen_cc_param_gen)};
	for (std::uint32_t i = 0; i < LUMEN_CC_PARAM_ENTRIES; i++)
		for (std::uint32_t gen : {0u, 1u})
			write_slot(maps, lumen_cc_param_slot(i, gen), params[i]);

	bpf_map *ops[LUMEN_CC_PARAM_ENTRIES] = {skel->maps.ptcp_ops_int, skel->maps.ptcp_ops_theta};
	for (unsigned i = 0; i < LUMEN_CC_PARAM_ENTRIES; i++) {
		std::string pin = pin_path(kAlgos[i].ops_pin);
		if (bpf_map__pin(ops[i], pin.c_str()) != 0)
			throw Error("cannot pin " + pin + ": " + errno_text(errno) + libbpf_log_tail());
		rb.add("unpin " + pin, [pin]() { unpin(pin); });
	}
	for (unsigned i = 0; i < LUMEN_CC_PARAM_ENTRIES; i++) {
		bpf_link *link = bpf_map__attach_struct_ops(ops[i]);
		if (!link) {
			int e = errno;
			throw Error(std::string("cannot register ") + kAlgos[i].name + ": " +
				    (e == EEXIST ? "an algorithm of that name is already registered" : errno_text(e)) +
				    libbpf_log_tail());
		}
		// keep the registration when the link object goes away
		bpf_link__disconnect(link);
		bpf_link__destroy(link);
		int fd = bpf_map__fd(ops[i]);
		rb.add(std::string("unregister ") + kAlgos[i].name, [fd]() {
			__u32 zero = 0;
			if (bpf_map_delete_elem(fd, &zero) != 0 && errno != ENOENT)
				throw Error(errno_text(errno));
		});
	}
	if (allow) {
		for (const auto &algo : kAlgos) {
			std::string name = algo.name;
			if (allow_congestion_control(name, true))
				rb.add("disallow " + name, [name]() { allow_congestion_control(name, false); });
		}
	}
	throw_if_interrupted(); // Ctrl-C during the load: the rollback undoes it
	rb.commit();

	std::printf("lumen cc: registered %s and %s (pinned under %s)%s\n", LUMEN_CC_NAME_INT, LUMEN_CC_NAME_THETA,
		    LUMEN_PIN_ROOT, allow ? "; allowed in every network namespace" : "");
	if (!s.sockops)
		std::printf("lumen cc: INT sockops not loaded: %s uses its RTT fallback until 'lumen int' runs\n",
			    LUMEN_CC_NAME_INT);
	print_params(params, 3);
	return 0;
}

int cc_unload(const Args &a)
{
	a.allow_only({});
	if (a.positional.size() > 1)
		throw UsageError("unload takes no arguments");
	require_root();
	Survey s = survey();
	if (!s.anything()) {
		std::printf("lumen cc: nothing loaded\n");
		return 0;
	}
	std::string def = read_sysctl(kDefault);
	for (unsigned i = 0; i < LUMEN_CC_PARAM_ENTRIES; i++)
		if (s.registered[i] && def == kAlgos[i].name)
			throw Error(std::string(kDefault) + " is " + def +
				    " in this network namespace; choose another default first "
				    "(e.g. sysctl -w " +
				    kDefault + "=cubic)");

	for (const auto &algo : kAlgos)
		allow_congestion_control(algo.name, false);

	for (unsigned i = 0; i < LUMEN_CC_PARAM_ENTRIES; i++) {
		std::string pin = pin_path(kAlgos[i].ops_pin);
		if (!s.ops_pinned[i])
			continue;
		Fd fd(bpf_obj_get(pin.c_str()));
		if (fd.get() < 0)
			throw Error("cannot open " + pin + ": " + errno_text(errno));
		__u32 zero = 0;
		// ENOENT: never registered; EINPROGRESS: already being torn down
		if (bpf_map_delete_elem(fd.get(), &zero) != 0 && errno != ENOENT && errno != EINPROGRESS)
			throw Error(std::string("cannot unregister ") + kAlgos[i].name + ": " + errno_text(errno));
	}
	for (unsigned i = 0; i < LUMEN_CC_PARAM_ENTRIES; i++) {
		if (!is_registered(kAlgos[i].name))
			continue;
		unregister_by_scan(kAlgos[i].map_name);
		if (is_registered(kAlgos[i].name))
			throw Error(std::string(kAlgos[i].name) +
				    " is still registered, but not by lumen's struct_ops map (see 'bpftool "
				    "struct_ops show')");
	}

	for (const auto &algo : kAlgos)
		unpin(pin_path(algo.ops_pin));
	for (const char *m : kOwnMaps)
		unpin(pin_path(m));
	bool int_sk_kept = s.sockops && s.int_sk_pinned;
	if (!s.sockops)
		unpin(pin_path(kIntSkMap));

	std::printf("lumen cc: unregistered %s and %s, removed their pins%s\n", LUMEN_CC_NAME_INT, LUMEN_CC_NAME_THETA,
		    int_sk_kept ? " (lumen_int_sk kept: the INT sockops part uses it)" : "");
	return 0;
}

int cc_status(const Args &a)
{
	a.allow_only({"--json"});
	if (a.positional.size() > 1)
		throw UsageError("status takes no arguments");
	require_root();
	Survey s = survey();
	std::string def = read_sysctl(kDefault);

	std::optional<std::vector<lumen_ptcp_params>> params;
	std::optional<std::vector<std::uint64_t>> counters;
	if (path_exists(pin_path("lumen_cc_params")) && path_exists(pin_path("lumen_cc_param_gen"))) {
		PinnedParams pinned;
		lumen_ptcp_params p[LUMEN_CC_PARAM_ENTRIES];
		read_params(pinned.maps(), p);
		params = std::vector<lumen_ptcp_params>(p, p + LUMEN_CC_PARAM_ENTRIES);
	}
	if (path_exists(pin_path("lumen_cc_stats"))) {
		Fd fd(bpf_obj_get(pin_path("lumen_cc_stats").c_str()));
		if (fd.get() < 0)
			throw Error("cannot open " + pin_path("lumen_cc_stats") + ": " + errno_text(errno));
		counters = sum_percpu_counters(fd.get(), LUMEN_CC_CNT_MAX);
	}
	const char *state =
		s.loaded() ? "loaded" : (s.anything() ? "partly loaded (run 'lumen cc unload')" : "not loaded");

	if (a.has("--json")) {
		Json reg, allowed, pj, cj;
		for (unsigned i = 0; i < LUMEN_CC_PARAM_ENTRIES; i++) {
			reg.raw(kAlgos[i].name, s.registered[i] ? "true" : "false");
			allowed.raw(kAlgos[i].name, s.allowed[i] ? "true" : "false");
			if (params)
				pj.raw(kAlgos[i].name, param_json((*params)[i]));
		}
		if (counters)
			for (unsigned k = 0; k < LUMEN_CC_CNT_MAX; k++)
				cj.num(kCounterNames[k], (*counters)[k]);
		Json out;
		out.raw("loaded", s.loaded() ? "true" : "false")
			.str("state", state)
			.raw("registered", reg.dump())
			.raw("allowed", allowed.dump())
			.str("default", def)
			.raw("int_sockops", s.sockops ? "true" : "false")
			.raw("params", params ? pj.dump() : "null")
			.raw("counters", counters ? cj.dump() : "null");
		std::printf("%s\n", out.dump().c_str());
		return 0;
	}

	std::printf("PowerTCP struct_ops: %s\n", state);
	std::printf("  %-16s %-11s %-8s %s\n", "algorithm", "registered", "allowed", "default here");
	for (unsigned i = 0; i < LUMEN_CC_PARAM_ENTRIES; i++)
		std::printf("  %-16s %-11s %-8s %s\n", kAlgos[i].name, s.registered[i] ? "yes" : "no",
			    s.allowed[i] ? "yes" : "no", def == kAlgos[i].name ? "yes" : "no");
	std::printf("INT source (sockops, lumen_int_sk): %s\n",
		    s.sockops ? "loaded" : "not loaded: " LUMEN_CC_NAME_INT " runs on its RTT fallback");
	if (params) {
		lumen_ptcp_params p[LUMEN_CC_PARAM_ENTRIES] = {(*params)[0], (*params)[1]};
		std::printf("parameters\n");
		print_params(p, 3);
	}
	if (counters) {
		std::printf("counters (all sockets, since load)\n");
		for (unsigned k = 0; k < LUMEN_CC_CNT_MAX; k++)
			std::printf("  %-18s %llu\n", kCounterNames[k],
				    static_cast<unsigned long long>((*counters)[k]));
	}
	return 0;
}

int cc_set(const Args &a)
{
	a.allow_only({"--algo"});
	unsigned mask = parse_algo_mask(a);
	if (a.positional.size() < 2)
		throw UsageError("set needs at least one PARAM=VALUE (gamma, flows, beta, host-bw, base-rtt)");
	ParamChange change = parse_params({a.positional.begin() + 1, a.positional.end()});

	require_root();
	for (const char *m : {"lumen_cc_params", "lumen_cc_param_gen"})
		if (!path_exists(pin_path(m)))
			throw Error("not loaded (no " + pin_path(m) + "): run 'lumen cc load' first");
	// one writer at a time: two sets interleaving would publish a slot the
	// other is still writing
	Fd root(::open(LUMEN_PIN_ROOT, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	if (root.get() < 0 || ::flock(root.get(), LOCK_EX) != 0)
		throw Error("cannot lock " LUMEN_PIN_ROOT ": " + errno_text(errno));
	PinnedParams pinned;
	ParamMaps maps = pinned.maps();
	lumen_ptcp_params old[LUMEN_CC_PARAM_ENTRIES], next[LUMEN_CC_PARAM_ENTRIES];
	read_params(maps, old);
	for (unsigned i = 0; i < LUMEN_CC_PARAM_ENTRIES; i++) {
		next[i] = old[i];
		if (mask & (1u << i)) {
			change.apply(&next[i]);
			validate(next[i], kAlgos[i].name);
		}
	}
	// every value validated: now write, undoing the first on a failed second
	for (std::uint32_t i = 0; i < LUMEN_CC_PARAM_ENTRIES; i++) {
		if (!(mask & (1u << i)))
			continue;
		try {
			publish_params(maps, i, next[i]);
		} catch (const Error &) {
			for (std::uint32_t j = 0; j < i; j++)
				if (mask & (1u << j))
					publish_params(maps, j, old[j]);
			throw;
		}
	}
	std::printf("lumen cc: parameters updated (in effect from the next ACK of every flow)\n");
	print_params(next, mask);
	return 0;
}

int run_cc(const std::vector<std::string> &argv)
{
	Args a = Args::parse(argv, {"--allow", "--json"});
	return run_subcommand<Args>(a.positional.empty() ? nullptr : &a.positional[0],
				    {{"load", cc_load}, {"unload", cc_unload}, {"status", cc_status}, {"set", cc_set}},
				    a);
}

const char kUsage[] = "usage: lumen cc load [--allow] [--algo ALGO] [PARAM=VALUE...]\n"
		      "       lumen cc unload\n"
		      "       lumen cc status [--json]\n"
		      "       lumen cc set [--algo ALGO] PARAM=VALUE...\n"
		      "\n"
		      "PowerTCP and theta-PowerTCP as BPF congestion control (struct_ops), registered\n"
		      "as " LUMEN_CC_NAME_INT " (INT-based, RTT fallback without INT) and\n"
		      "" LUMEN_CC_NAME_THETA " (RTT-based). Select one per socket (setsockopt\n"
		      "TCP_CONGESTION, iperf3 -C NAME) or per network namespace (sysctl\n"
		      "net.ipv4.tcp_congestion_control=NAME). Needs root, kernel BTF, Linux >= 6.0.\n"
		      "\n"
		      "  load     load and register both algorithms. State is pinned under\n"
		      "           " LUMEN_PIN_ROOT "; they stay registered after lumen exits.\n"
		      "           PARAM=VALUE sets initial parameters. Refused when already loaded.\n"
		      "           Any failure undoes everything done so far (nothing is left\n"
		      "           half-loaded).\n"
		      "    --allow  also add both names to net.ipv4.tcp_allowed_congestion_control,\n"
		      "             so non-root users and non-initial network namespaces may select\n"
		      "             them; unload takes them out again\n"
		      "  unload   remove both names from the allowed list, unregister them and\n"
		      "           remove their pins (lumen_int_sk stays while 'lumen int' is\n"
		      "           loaded). Refused while the current namespace's default is one of\n"
		      "           them. Sockets, and namespace defaults, already using one keep it\n"
		      "           until they close or change. With nothing loaded: a note, exit 0.\n"
		      "  status   registration, allowed list, parameters and counters; --json for\n"
		      "           a machine-readable object\n"
		      "  set      change parameters of the loaded algorithms; running flows use\n"
		      "           them from their next ACK. Every value is checked first: on any\n"
		      "           error nothing changes.\n"
		      "\n"
		      "  --algo ALGO  " LUMEN_CC_NAME_INT ", " LUMEN_CC_NAME_THETA " or both (default): whose\n"
		      "               parameters load / set change\n"
		      "\n"
		      "parameters:\n"
		      "  gamma=G       EWMA weight of the window update, 0.01..1 (default 0.9)\n"
		      "  flows=N       expected flows N, 1..1000000 (default 10):\n"
		      "                beta = host-bw * base-rtt / N\n"
		      "  beta=BYTES    additive increase per RTT (1500, 64k, 1m), at most 1g;\n"
		      "                0 or auto: derived from flows (default)\n"
		      "  host-bw=RATE  host link rate (25gbit, 100mbit, 10000 = Mbit/s), 1mbit to\n"
		      "                1.6tbit (default 25gbit). host-bw * base-rtt is the initial\n"
		      "                window; with beta, it caps the window.\n"
		      "  base-rtt=DUR  base RTT tau (20us, 1ms), 1us..1s (default 20us); 0 or auto:\n"
		      "                the minimum RTT each flow observes. host-bw * base-rtt must\n"
		      "                not exceed 1 GiB.\n"
		      "\n"
		      "counters (status):\n"
		      "  flows             connections initialised\n"
		      "  acks              ACKs processed\n"
		      "  int_updates       window updates from INT power\n"
		      "  rtt_updates       " LUMEN_CC_NAME_THETA " window updates\n"
		      "  fallback_updates  " LUMEN_CC_NAME_INT " updates from RTT, for lack of INT\n"
		      "  no_int            " LUMEN_CC_NAME_INT " ACKs without a new INT echo\n"
		      "  no_state          ACKs or connections without socket state (no memory)\n"
		      "  restarts          idle restarts (history discarded)\n"
		      "  int_unusable      " LUMEN_CC_NAME_INT " echoes that gave no INT sample (counted as no INT)\n"
		      "  rtt_guard         INT updates overridden by an RTT floor of >= 8 base RTTs\n"
		      "\n"
		      "examples:\n"
		      "  lumen cc load --allow host-bw=10gbit base-rtt=auto\n"
		      "  lumen cc set --algo " LUMEN_CC_NAME_THETA " gamma=0.7\n"
		      "  ip netns exec NS sysctl -w net.ipv4.tcp_congestion_control=" LUMEN_CC_NAME_INT "\n"
		      "  lumen cc status --json\n"
		      "  lumen cc unload\n";

} // namespace

const Command kCcCommand = {"cc", "PowerTCP / theta-PowerTCP congestion control (struct_ops)", kUsage, run_cc};

} // namespace lumen
