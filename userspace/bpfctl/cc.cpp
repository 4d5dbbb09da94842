// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/bpfctl/cc.cpp - see cc.h.
#include "bpfctl/cc.h"

#include "base/error.h"
#include "base/fd.h"
#include "base/interrupt.h"
#include "base/rollback.h"
#include "base/system.h"
#include "base/units.h"
#include "bpfctl/bpf_util.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iterator>
#include <memory>
#include <sys/utsname.h>

#include "powertcp.skel.h"
#include "timely.skel.h"

namespace lumen
{

const CcAlgo kCcAlgos[kCcAlgoCount] = {
	{LUMEN_CC_NAME_INT, LUMEN_PTCP_MODE_INT, LUMEN_PIN_CC_OPS_INT, "ptcp_ops_int"},
	{LUMEN_CC_NAME_THETA, LUMEN_PTCP_MODE_THETA, LUMEN_PIN_CC_OPS_THETA, "ptcp_ops_theta"},
	{LUMEN_CC_NAME_HPCC, LUMEN_PTCP_MODE_HPCC, LUMEN_PIN_CC_OPS_HPCC, "ptcp_ops_hpcc"},
	// mode: unused (TIMELY has its own parameter map)
	{LUMEN_CC_NAME_TIMELY, LUMEN_PTCP_MODE_INT, LUMEN_PIN_CC_OPS_TIMELY, "timely_ops"},
};
static_assert(LUMEN_PTCP_MODE_INT == 0 && LUMEN_PTCP_MODE_THETA == 1 && LUMEN_PTCP_MODE_HPCC == 2,
	      "kCcAlgos[i] is mode i");

#define LUMEN_COUNTER_NAME(id, name, help) {name, help},
const CounterName kCcCounters[LUMEN_CC_CNT_MAX] = {LUMEN_CC_COUNTERS(LUMEN_COUNTER_NAME)};
const CounterName kTimelyCounters[LUMEN_TIMELY_CNT_MAX] = {LUMEN_TIMELY_COUNTERS(LUMEN_COUNTER_NAME)};
#undef LUMEN_COUNTER_NAME

namespace
{

// Maps this part owns (pinned by name by libbpf; lumen_cc_faults by both objects).
const char *const kOwnMaps[] = {LUMEN_PIN_CC_PARAMS,	 LUMEN_PIN_CC_FAULTS,	 LUMEN_PIN_CC_STATS, LUMEN_PIN_CC_SK,
				LUMEN_PIN_TIMELY_PARAMS, LUMEN_PIN_TIMELY_STATS, LUMEN_PIN_TIMELY_SK};
// Pins that mean the INT sockops part is loaded.
const char *const kSockopsPins[] = {LUMEN_PIN_INT_CFG, LUMEN_PIN_INT_STATS};

const char *const kAvailable = "net.ipv4.tcp_available_congestion_control";
const char *const kAllowed = "net.ipv4.tcp_allowed_congestion_control";
const char *const kDefault = "net.ipv4.tcp_congestion_control";

struct SkelDeleter {
	void operator()(powertcp *s) const
	{
		powertcp__destroy(s);
	}
	void operator()(timely *s) const
	{
		timely__destroy(s);
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

bool sockops_loaded()
{
	for (const char *m : kSockopsPins)
		if (pinned(m))
			return true;
	return false;
}

void validate(const lumen_ptcp_params &p, const char *algo)
{
	int err = lumen_ptcp_params_validate(&p);
	if (err)
		throw UsageError(std::string("invalid parameters for ") + algo + ": " + lumen_ptcp_param_strerror(err));
}

void validate(const lumen_timely_params &p)
{
	int err = lumen_timely_params_validate(&p);
	if (err)
		throw UsageError(std::string("invalid parameters for " LUMEN_CC_NAME_TIMELY ": ") +
				 lumen_timely_param_strerror(err));
}

// One algorithm's value of lumen_cc_params (see the header), read and
// written under its spin lock (BPF_F_LOCK), as the programs copy it.
lumen_cc_param_val read_param_val(int fd, std::uint32_t mode)
{
	lumen_cc_param_val v{};
	if (bpf_map_lookup_elem_flags(fd, &mode, &v, BPF_F_LOCK) != 0)
		throw Error("cannot read lumen_cc_params[" + std::to_string(mode) + "]: " + errno_text(errno));
	return v;
}

// What the programs use now.
void read_params(int fd, lumen_ptcp_params (&p)[LUMEN_CC_PARAM_ENTRIES])
{
	for (std::uint32_t i = 0; i < LUMEN_CC_PARAM_ENTRIES; i++)
		p[i] = read_param_val(fd, i).params;
}

// TIMELY's one value of lumen_timely_params, as lumen_cc_params' are.
lumen_timely_param_val read_timely_val(int fd)
{
	lumen_timely_param_val v{};
	std::uint32_t key = 0;
	if (bpf_map_lookup_elem_flags(fd, &key, &v, BPF_F_LOCK) != 0)
		throw Error("cannot read lumen_timely_params[0]: " + errno_text(errno));
	return v;
}

void publish_timely(int fd, const lumen_timely_params &p)
{
	lumen_timely_param_val v{};
	std::uint32_t key = 0;
	v.gen = read_timely_val(fd).gen + 1;
	v.params = p;
	if (bpf_map_update_elem(fd, &key, &v, BPF_F_LOCK) != 0)
		throw Error("cannot write lumen_timely_params[0]: " + errno_text(errno));
}

// Publishes new parameters for one algorithm, with the next generation: one
// locked update, so readers see all of it or none.
void publish_params(int fd, std::uint32_t mode, const lumen_ptcp_params &p)
{
	lumen_cc_param_val v{};
	v.gen = read_param_val(fd, mode).gen + 1;
	v.params = p;
	if (bpf_map_update_elem(fd, &mode, &v, BPF_F_LOCK) != 0)
		throw Error("cannot write lumen_cc_params[" + std::to_string(mode) + "]: " + errno_text(errno));
}

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

struct Survey {
	bool registered[kCcAlgoCount] = {};
	bool allowed[kCcAlgoCount] = {};
	bool ops_pinned[kCcAlgoCount] = {};
	std::vector<std::string> own_pins; // ours that exist (ops and maps)
	bool int_sk_pinned = false;
	bool sockops = false;

	bool any_registered() const
	{
		return std::any_of(std::begin(registered), std::end(registered), [](bool r) { return r; });
	}
	bool loaded() const
	{
		return std::all_of(std::begin(registered), std::end(registered), [](bool r) { return r; }) &&
		       own_pins.size() == kCcAlgoCount + std::size(kOwnMaps);
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
	for (unsigned i = 0; i < kCcAlgoCount; i++) {
		s.registered[i] = contains(avail, kCcAlgos[i].name);
		s.allowed[i] = contains(allowed, kCcAlgos[i].name);
		s.ops_pinned[i] = path_exists(pin_path(kCcAlgos[i].ops_pin));
		if (s.ops_pinned[i])
			s.own_pins.push_back(kCcAlgos[i].ops_pin);
	}
	for (const char *m : kOwnMaps)
		if (path_exists(pin_path(m)))
			s.own_pins.push_back(m);
	s.int_sk_pinned = pinned(LUMEN_PIN_INT_SK);
	s.sockops = sockops_loaded();
	return s;
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

} // namespace

unsigned parse_cc_algo_mask(const std::string &word)
{
	if (word == "all" || word == "both")
		return kCcAllAlgos;
	for (unsigned i = 0; i < kCcAlgoCount; i++)
		if (word == kCcAlgos[i].name)
			return 1u << i;
	throw UsageError("--algo must be " LUMEN_CC_NAME_INT ", " LUMEN_CC_NAME_THETA ", " LUMEN_CC_NAME_HPCC
			 ", " LUMEN_CC_NAME_TIMELY " or all, not '" +
			 word + "'");
}

bool CcParamChange::empty() const
{
	return algos() == 0;
}

unsigned CcParamChange::algos() const
{
	unsigned m = 0;
	if (gamma || flows || beta || base_rtt)
		m |= kCcPtcpAlgos;
	if (host_bw)
		m |= kCcPtcpAlgos | kCcTimelyBit;
	if (eta || max_stage || wai)
		m |= 1u << LUMEN_PTCP_MODE_HPCC;
	if (t_low || t_high || min_rtt || delta || alpha || timely_beta || hai_events || segment)
		m |= kCcTimelyBit;
	return m;
}

void CcParamChange::apply(lumen_ptcp_params *p, lumen_ptcp_mode mode) const
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
	if (mode != LUMEN_PTCP_MODE_HPCC)
		return;
	if (eta)
		p->hpcc.eta = *eta;
	if (max_stage)
		p->hpcc.max_stage = *max_stage;
	if (wai)
		p->hpcc.wai_bytes = *wai;
}

void CcParamChange::apply(lumen_timely_params *p) const
{
	if (host_bw)
		p->host_bw_mbps = *host_bw;
	if (t_low)
		p->t_low_ns = *t_low;
	if (t_high)
		p->t_high_ns = *t_high;
	if (min_rtt)
		p->min_rtt_ns = *min_rtt;
	if (delta)
		p->delta_mbps = *delta;
	if (alpha)
		p->alpha = *alpha;
	if (timely_beta)
		p->beta = *timely_beta;
	if (hai_events)
		p->hai_events = *hai_events;
	if (segment)
		p->seg_bytes = *segment;
}

namespace
{

const char kParamList[] = "params: gamma, flows, beta, host-bw, base-rtt; " LUMEN_CC_NAME_HPCC
			  ": eta, max-stage, wai; " LUMEN_CC_NAME_TIMELY
			  ": t-low, t-high, min-rtt, delta, alpha, beta, hai-events, segment, host-bw";

// The names of the algorithms in mask, for messages.
std::string algo_names(unsigned mask)
{
	std::vector<std::string> names;
	for (unsigned i = 0; i < kCcAlgoCount; i++)
		if (mask & (1u << i))
			names.push_back(kCcAlgos[i].name);
	return join_words(names, ", ");
}

// Format checks only, with bounds that keep the values in their fields:
// the ranges are the cores' (validate()), with the cores' messages.
constexpr std::uint64_t kAnyDuration = 1000 * kSec;
constexpr double kAnyFraction = 1000.0; // its Q16 fits 32 bits

std::uint32_t u32_of(std::uint64_t v)
{
	return static_cast<std::uint32_t>(v);
}

} // namespace

CcParamChange parse_cc_params(const std::vector<std::string> &words, unsigned algos)
{
	const bool timely_beta = algos == kCcTimelyBit;
	CcParamChange c;
	for (const auto &w : words) {
		auto eq = w.find('=');
		if (eq == std::string::npos || eq == 0)
			throw UsageError("'" + w + "' is not PARAM=VALUE (" + kParamList + ")");
		std::string key = w.substr(0, eq), val = w.substr(eq + 1);
		auto once = [&](bool already) {
			if (already)
				throw UsageError("parameter " + key + " given twice");
		};
		bool is_auto = val == "auto" || val == "0";
		CcParamChange one; // this key alone: whose is it
		if (key == "gamma") {
			once(c.gamma.has_value());
			c.gamma = one.gamma = parse_q16(val, "gamma", 0.01, 1.0);
		} else if (key == "flows") {
			once(c.flows.has_value());
			c.flows = one.flows = u32_of(parse_uint(val, "flows", 1, LUMEN_PTCP_EXPECTED_FLOWS_MAX));
		} else if (key == "beta" && timely_beta) {
			once(c.timely_beta.has_value());
			c.timely_beta = one.timely_beta = parse_q16(val, "beta", 0, kAnyFraction);
		} else if (key == "beta") {
			once(c.beta.has_value());
			c.beta = one.beta =
				val == "auto" ? 0 : u32_of(parse_bytes(val, "beta", LUMEN_PTCP_BETA_MAX_BYTES));
		} else if (key == "host-bw") {
			once(c.host_bw.has_value());
			c.host_bw = one.host_bw = parse_rate_mbps(val, "host-bw");
		} else if (key == "base-rtt") {
			once(c.base_rtt.has_value());
			c.base_rtt = one.base_rtt =
				is_auto ? 0 : parse_duration_ns(val, "base-rtt", LUMEN_PTCP_BASE_RTT_MAX_NS);
		} else if (key == "eta") {
			once(c.eta.has_value());
			c.eta = one.eta = parse_q16(val, "eta", 0, kAnyFraction);
		} else if (key == "max-stage") {
			once(c.max_stage.has_value());
			c.max_stage = one.max_stage = u32_of(parse_uint(val, "max-stage", 0, UINT32_MAX));
		} else if (key == "wai") {
			once(c.wai.has_value());
			c.wai = one.wai = is_auto ? 0 : u32_of(parse_bytes(val, "wai", UINT32_MAX));
		} else if (key == "t-low") {
			once(c.t_low.has_value());
			c.t_low = one.t_low = parse_duration_ns(val, "t-low", kAnyDuration);
		} else if (key == "t-high") {
			once(c.t_high.has_value());
			c.t_high = one.t_high = parse_duration_ns(val, "t-high", kAnyDuration);
		} else if (key == "min-rtt") {
			once(c.min_rtt.has_value());
			c.min_rtt = one.min_rtt = is_auto ? 0 : parse_duration_ns(val, "min-rtt", kAnyDuration);
		} else if (key == "delta") {
			once(c.delta.has_value());
			c.delta = one.delta = is_auto ? 0 : parse_rate_mbps(val, "delta");
		} else if (key == "alpha") {
			once(c.alpha.has_value());
			c.alpha = one.alpha = parse_q16(val, "alpha", 0, kAnyFraction);
		} else if (key == "hai-events") {
			once(c.hai_events.has_value());
			c.hai_events = one.hai_events = u32_of(parse_uint(val, "hai-events", 0, UINT32_MAX));
		} else if (key == "segment") {
			once(c.segment.has_value());
			c.segment = one.segment = u32_of(parse_bytes(val, "segment", UINT32_MAX));
		} else {
			throw UsageError("unknown parameter '" + key + "' (" + kParamList + ")");
		}
		if (!(one.algos() & algos))
			throw UsageError(key + " is a parameter of " + algo_names(one.algos()) + ", not of " +
					 algo_names(algos));
	}
	return c;
}

CcParamSets cc_default_param_sets()
{
	CcParamSets s;
	for (auto &p : s.ptcp)
		lumen_ptcp_params_default(&p);
	lumen_timely_params_default(&s.timely);
	return s;
}

CcParamSets cc_param_sets(const CcParamSets &base, unsigned algos, const CcParamChange &change)
{
	CcParamSets out = base;
	for (unsigned i = 0; i < kCcPtcpAlgoCount; i++) {
		if (algos & (1u << i))
			change.apply(&out.ptcp[i], kCcAlgos[i].mode);
		validate(out.ptcp[i], kCcAlgos[i].name);
	}
	if (algos & kCcTimelyBit)
		change.apply(&out.timely);
	validate(out.timely);
	return out;
}

CcLoadResult load_cc(const CcLoadRequest &req)
{
	CcLoadResult out;
	if (req.algos & ~kCcAllAlgos || !req.algos)
		throw UsageError("no such algorithm");
	CcParamSets sets = cc_param_sets(cc_default_param_sets(), req.algos, req.change);
	std::copy(std::begin(sets.ptcp), std::end(sets.ptcp), out.params);
	out.timely = sets.timely;

	require_root();
	require_btf();
	require_kernel_support();
	// one load or unload at a time (and no `lumen int` change in between):
	// two loads racing both found nothing loaded, and the loser's rollback
	// removed the pins the winner had just made
	PinRootLock lock;
	Survey s = survey();
	for (unsigned i = 0; i < kCcAlgoCount; i++)
		if (s.registered[i])
			throw Error(std::string("already loaded: ") + kCcAlgos[i].name +
				    " is registered (see 'lumen cc status'; 'lumen cc unload' removes it)");
	if (!s.own_pins.empty())
		throw Error("stale pins under " LUMEN_PIN_ROOT " (" + join_words(s.own_pins, ", ") +
			    ") from an earlier load: run 'lumen cc unload' first");

	// Ctrl-C sets a flag instead of killing us half-way: checked before
	// the commit, so either all of the load stays or none of it
	install_interrupt_handlers();
	capture_libbpf_log();
	clear_libbpf_log();
	ensure_pin_root();
	const bool int_sk_existed = pinned(LUMEN_PIN_INT_SK);

	bpf_object_open_opts opts = pin_root_open_opts();
	std::unique_ptr<powertcp, SkelDeleter> skel(powertcp__open_opts(&opts));
	if (!skel)
		throw Error("cannot open the BPF object: " + errno_text(errno) + libbpf_log_tail());
	std::unique_ptr<timely, SkelDeleter> tskel(timely__open_opts(&opts));
	if (!tskel)
		throw Error("cannot open the BPF object of " LUMEN_CC_NAME_TIMELY ": " + errno_text(errno) +
			    libbpf_log_tail());

	Rollback rb("lumen cc load"); // declared after skel: runs while the skeleton's fds are open
	int err = powertcp__load(skel.get());
	// libbpf unpins what it pinned when a load fails; make sure of it
	rb.add("unpin maps", [int_sk_existed]() {
		for (const char *m : kOwnMaps)
			remove_pin(m);
		if (!int_sk_existed && !sockops_loaded())
			remove_pin(LUMEN_PIN_INT_SK);
	});
	if (err)
		throw Error("cannot load the BPF programs (verifier or kernel refused them): " + errno_text(err) +
			    libbpf_log_tail(30));
	clear_libbpf_log();
	err = timely__load(tskel.get()); // reuses lumen_cc_faults, pinned by the first
	if (err)
		throw Error("cannot load the BPF programs of " LUMEN_CC_NAME_TIMELY
			    " (verifier or kernel refused them): " +
			    errno_text(err) + libbpf_log_tail(30));

	// each algorithm's first set (the maps start zeroed: generation 0)
	for (std::uint32_t i = 0; i < kCcPtcpAlgoCount; i++)
		publish_params(bpf_map__fd(skel->maps.lumen_cc_params), i, out.params[i]);
	publish_timely(bpf_map__fd(tskel->maps.lumen_timely_params), out.timely);

	bpf_map *ops[kCcAlgoCount] = {skel->maps.ptcp_ops_int, skel->maps.ptcp_ops_theta, skel->maps.ptcp_ops_hpcc,
				      tskel->maps.timely_ops};
	for (unsigned i = 0; i < kCcAlgoCount; i++) {
		std::string pin = pin_path(kCcAlgos[i].ops_pin);
		if (bpf_map__pin(ops[i], pin.c_str()) != 0)
			throw Error("cannot pin " + pin + ": " + errno_text(errno) + libbpf_log_tail());
		const char *name = kCcAlgos[i].ops_pin;
		rb.add("unpin " + pin, [name]() { remove_pin(name); });
	}
	for (unsigned i = 0; i < kCcAlgoCount; i++) {
		bpf_link *link = bpf_map__attach_struct_ops(ops[i]);
		if (!link) {
			int e = errno;
			throw Error(std::string("cannot register ") + kCcAlgos[i].name + ": " +
				    (e == EEXIST ? "an algorithm of that name is already registered" : errno_text(e)) +
				    libbpf_log_tail());
		}
		// keep the registration when the link object goes away
		bpf_link__disconnect(link);
		bpf_link__destroy(link);
		int fd = bpf_map__fd(ops[i]);
		rb.add(std::string("unregister ") + kCcAlgos[i].name, [fd]() {
			__u32 zero = 0;
			if (bpf_map_delete_elem(fd, &zero) != 0 && errno != ENOENT)
				throw Error(errno_text(errno));
		});
	}
	if (req.allow) {
		for (const auto &algo : kCcAlgos) {
			std::string name = algo.name;
			if (allow_congestion_control(name, true))
				rb.add("disallow " + name, [name]() { allow_congestion_control(name, false); });
		}
	}
	throw_if_interrupted(); // Ctrl-C during the load: the rollback undoes it
	rb.commit();
	out.int_sockops = s.sockops;
	return out;
}

CcUnloadResult unload_cc()
{
	require_root();
	PinRootLock lock;
	CcUnloadResult out;
	Survey s = survey();
	if (!s.anything()) {
		out.nothing_loaded = true;
		return out;
	}
	std::string def = read_sysctl(kDefault);
	for (unsigned i = 0; i < kCcAlgoCount; i++)
		if (s.registered[i] && def == kCcAlgos[i].name)
			throw Error(std::string(kDefault) + " is " + def +
				    " in this network namespace; choose another default first "
				    "(e.g. sysctl -w " +
				    kDefault + "=cubic)");

	for (const auto &algo : kCcAlgos)
		allow_congestion_control(algo.name, false);

	for (unsigned i = 0; i < kCcAlgoCount; i++) {
		if (!s.ops_pinned[i])
			continue;
		Fd fd = open_pin(kCcAlgos[i].ops_pin);
		__u32 zero = 0;
		// ENOENT: never registered; EINPROGRESS: already being torn down
		if (bpf_map_delete_elem(fd.get(), &zero) != 0 && errno != ENOENT && errno != EINPROGRESS)
			throw Error(std::string("cannot unregister ") + kCcAlgos[i].name + ": " + errno_text(errno));
	}
	for (unsigned i = 0; i < kCcAlgoCount; i++) {
		if (!is_registered(kCcAlgos[i].name))
			continue;
		unregister_by_scan(kCcAlgos[i].map_name);
		if (is_registered(kCcAlgos[i].name))
			throw Error(std::string(kCcAlgos[i].name) +
				    " is still registered, but not by lumen's struct_ops map (see 'bpftool "
				    "struct_ops show')");
	}

	for (const auto &algo : kCcAlgos)
		remove_pin(algo.ops_pin);
	for (const char *m : kOwnMaps)
		remove_pin(m);
	out.int_sk_kept = s.sockops && s.int_sk_pinned;
	if (!s.sockops)
		remove_pin(LUMEN_PIN_INT_SK);
	return out;
}

CcStatus cc_status()
{
	require_root();
	Survey s = survey();
	CcStatus out;
	for (unsigned i = 0; i < kCcAlgoCount; i++) {
		out.registered[i] = s.registered[i];
		out.allowed[i] = s.allowed[i];
	}
	out.loaded = s.loaded();
	out.anything = s.anything();
	out.int_sockops = s.sockops;
	out.default_cc = read_sysctl(kDefault);
	if (pinned(LUMEN_PIN_CC_PARAMS)) {
		lumen_ptcp_params p[kCcPtcpAlgoCount];
		read_params(open_pin(LUMEN_PIN_CC_PARAMS).get(), p);
		out.params = std::vector<lumen_ptcp_params>(p, p + kCcPtcpAlgoCount);
	}
	if (pinned(LUMEN_PIN_CC_STATS))
		out.counters = sum_percpu_counters(open_pin(LUMEN_PIN_CC_STATS).get(), LUMEN_CC_CNT_MAX);
	if (pinned(LUMEN_PIN_TIMELY_PARAMS))
		out.timely_params = read_timely_val(open_pin(LUMEN_PIN_TIMELY_PARAMS).get()).params;
	if (pinned(LUMEN_PIN_TIMELY_STATS))
		out.timely_counters = sum_percpu_counters(open_pin(LUMEN_PIN_TIMELY_STATS).get(), LUMEN_TIMELY_CNT_MAX);
	return out;
}

CcParamSets set_cc_params(unsigned algos, const CcParamChange &change)
{
	require_root();
	if (algos & ~kCcAllAlgos || !algos)
		throw UsageError("no such algorithm");
	for (const char *m : {LUMEN_PIN_CC_PARAMS, LUMEN_PIN_TIMELY_PARAMS})
		if (!pinned(m))
			throw Error("not loaded (no " + pin_path(m) + "): run 'lumen cc load' first");
	// one writer at a time: two sets interleaving could both take the same
	// next generation, and a reader that copied the first would keep it
	PinRootLock lock;
	Fd params = open_pin(LUMEN_PIN_CC_PARAMS);
	Fd tparams = open_pin(LUMEN_PIN_TIMELY_PARAMS);
	CcParamSets old;
	read_params(params.get(), old.ptcp);
	old.timely = read_timely_val(tparams.get()).params;
	CcParamSets next = cc_param_sets(old, algos, change);
	// every value validated: now write the sets the change reaches (a new
	// generation makes every flow copy again), undoing the earlier ones on
	// a failed one
	const unsigned reached = algos & change.algos();
	std::vector<std::function<void()>> undo;
	try {
		for (std::uint32_t i = 0; i < kCcPtcpAlgoCount; i++) {
			if (!(reached & (1u << i)))
				continue;
			publish_params(params.get(), i, next.ptcp[i]);
			undo.push_back([&params, &old, i]() { publish_params(params.get(), i, old.ptcp[i]); });
		}
		if (reached & kCcTimelyBit)
			publish_timely(tparams.get(), next.timely);
	} catch (const Error &) {
		for (auto it = undo.rbegin(); it != undo.rend(); ++it)
			(*it)();
		throw;
	}
	return next;
}

} // namespace lumen
