// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/cli/cmd_cc.cpp - `lumen cc`: load, unload, inspect and tune the
// PowerTCP / theta-PowerTCP / HPCC and TIMELY struct_ops through
// bpfctl/cc.h, and print what it reports.
#include "base/args.h"
#include "base/error.h"
#include "base/interrupt.h"
#include "base/json.h"
#include "base/units.h"
#include "bpfctl/cc.h"
#include "bpfctl/cc_flows.h"
#include "cli/commands.h"

#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace lumen
{
namespace
{

unsigned algo_mask(const Args &a)
{
	auto v = a.get("--algo");
	return v ? parse_cc_algo_mask(*v) : kCcAllAlgos;
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

// One algorithm's parameters, (key, value) in table order.
using ParamRows = std::vector<std::pair<std::string, std::string>>;

ParamRows param_rows(const lumen_ptcp_params &p, lumen_ptcp_mode mode)
{
	ParamRows rows = {
		{"gamma", fmt_gamma(p.gamma)},
		{"flows", std::to_string(p.expected_flows)},
		{"beta", p.beta_bytes ? std::to_string(p.beta_bytes) + " B" : "auto (host BDP / flows)"},
		{"host-bw", format_rate_mbps(p.host_bw_mbps)},
		{"base-rtt", p.base_rtt_ns ? fmt_ns(p.base_rtt_ns) : "auto (min RTT)"},
	};
	if (mode == LUMEN_PTCP_MODE_HPCC) {
		rows.push_back({"eta", fmt_gamma(p.hpcc.eta)});
		rows.push_back({"max-stage", std::to_string(p.hpcc.max_stage)});
		rows.push_back({"wai", p.hpcc.wai_bytes ? std::to_string(p.hpcc.wai_bytes) + " B"
							: "auto (W_init (1 - eta) / flows)"});
	}
	return rows;
}

ParamRows param_rows(const lumen_timely_params &p)
{
	return {
		{"host-bw", format_rate_mbps(p.host_bw_mbps)},
		{"t-low", fmt_ns(p.t_low_ns)},
		{"t-high", fmt_ns(p.t_high_ns)},
		{"min-rtt", p.min_rtt_ns ? fmt_ns(p.min_rtt_ns) : "auto (min RTT)"},
		{"delta", p.delta_mbps ? format_rate_mbps(p.delta_mbps) : "auto (host-bw / 1000)"},
		{"alpha", fmt_gamma(p.alpha)},
		{"beta", fmt_gamma(p.beta)},
		{"hai-events", std::to_string(p.hai_events)},
		{"segment", std::to_string(p.seg_bytes) + " B"},
	};
}

std::string param_json(const lumen_ptcp_params &p, lumen_ptcp_mode mode)
{
	Json j;
	j.num("gamma", p.gamma / 65536.0)
		.num("gamma_q16", std::uint64_t{p.gamma})
		.num("flows", std::uint64_t{p.expected_flows})
		.num("beta_bytes", std::uint64_t{p.beta_bytes})
		.num("host_bw_mbps", std::uint64_t{p.host_bw_mbps})
		.num("base_rtt_ns", std::uint64_t{p.base_rtt_ns});
	if (mode == LUMEN_PTCP_MODE_HPCC)
		j.num("eta", p.hpcc.eta / 65536.0)
			.num("eta_q16", std::uint64_t{p.hpcc.eta})
			.num("max_stage", std::uint64_t{p.hpcc.max_stage})
			.num("wai_bytes", std::uint64_t{p.hpcc.wai_bytes});
	return j.dump();
}

std::string param_json(const lumen_timely_params &p)
{
	return Json()
		.num("host_bw_mbps", std::uint64_t{p.host_bw_mbps})
		.num("t_low_ns", std::uint64_t{p.t_low_ns})
		.num("t_high_ns", std::uint64_t{p.t_high_ns})
		.num("min_rtt_ns", std::uint64_t{p.min_rtt_ns})
		.num("delta_mbps", std::uint64_t{p.delta_mbps})
		.num("alpha", p.alpha / 65536.0)
		.num("alpha_q16", std::uint64_t{p.alpha})
		.num("beta", p.beta / 65536.0)
		.num("beta_q16", std::uint64_t{p.beta})
		.num("hai_events", std::uint64_t{p.hai_events})
		.num("segment_bytes", std::uint64_t{p.seg_bytes})
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

// Two tables: the PowerTCP core's algorithms side by side, then TIMELY's.
void print_params(const lumen_ptcp_params *p, const lumen_timely_params *timely, unsigned mask)
{
	if (mask & kCcPtcpAlgos) {
		std::vector<std::string> head = {"param     "};
		std::vector<ParamRows> cols;
		for (unsigned i = 0; i < kCcPtcpAlgoCount; i++)
			if (mask & (1u << i)) {
				head.push_back(kCcAlgos[i].name);
				cols.push_back(param_rows(p[i], kCcAlgos[i].mode));
			}
		print_row(head, 25);
		// the longest column has every key (HPCC's has its own at the end)
		std::size_t longest = 0;
		for (std::size_t c = 0; c < cols.size(); c++)
			if (cols[c].size() > cols[longest].size())
				longest = c;
		for (std::size_t r = 0; r < cols[longest].size(); r++) {
			std::vector<std::string> cells = {cols[longest][r].first};
			cells[0].resize(10, ' ');
			for (const auto &col : cols)
				cells.push_back(r < col.size() ? col[r].second : "-");
			print_row(cells, 25);
		}
	}
	if (timely && (mask & kCcTimelyBit)) {
		print_row({"param     ", LUMEN_CC_NAME_TIMELY}, 25);
		for (const auto &[key, value] : param_rows(*timely)) {
			std::string k = key;
			k.resize(10, ' ');
			print_row({k, value}, 25);
		}
	}
}

int cc_load(const Args &a)
{
	a.allow_only({"--allow", "--algo"});
	CcLoadRequest req;
	req.algos = algo_mask(a);
	req.allow = a.has("--allow");
	req.change = parse_cc_params({a.positional.begin() + 1, a.positional.end()}, req.algos);
	CcLoadResult r = load_cc(req);
	std::printf("lumen cc: registered %s, %s, %s and %s (pinned under %s)%s\n", LUMEN_CC_NAME_INT,
		    LUMEN_CC_NAME_THETA, LUMEN_CC_NAME_HPCC, LUMEN_CC_NAME_TIMELY, LUMEN_PIN_ROOT,
		    req.allow ? "; allowed in every network namespace" : "");
	if (!r.int_sockops)
		std::printf("lumen cc: INT sockops not loaded: %s and %s use their RTT fallback until 'lumen int' "
			    "runs\n",
			    LUMEN_CC_NAME_INT, LUMEN_CC_NAME_HPCC);
	print_params(r.params, &r.timely, kCcAllAlgos);
	return 0;
}

int cc_unload(const Args &a)
{
	a.allow_only({});
	if (a.positional.size() > 1)
		throw UsageError("unload takes no arguments");
	CcUnloadResult r = unload_cc();
	if (r.nothing_loaded) {
		std::printf("lumen cc: nothing loaded\n");
		return 0;
	}
	std::printf("lumen cc: unregistered %s, %s, %s and %s, removed their pins%s\n", LUMEN_CC_NAME_INT,
		    LUMEN_CC_NAME_THETA, LUMEN_CC_NAME_HPCC, LUMEN_CC_NAME_TIMELY,
		    r.int_sk_kept ? " (lumen_int_sk kept: the INT sockops part uses it)" : "");
	return 0;
}

// The per-flow counts of why INT was not used, as in /proc/net/powertcp_flows.
std::vector<std::pair<const char *, std::uint64_t>> flow_counts(const lumen_cc_flow &f)
{
	const lumen_ptcp_stats &c = f.stats;
	return {
#define LUMEN_FLOW_COUNT(field, name) {name, c.field},
		LUMEN_PTCP_FLOW_COUNTS(LUMEN_FLOW_COUNT)
#undef LUMEN_FLOW_COUNT
	};
}

// The per-flow counts of a TIMELY flow: its events by kind.
std::vector<std::pair<const char *, std::uint64_t>> timely_counts(const lumen_timely_flow &f)
{
	const lumen_timely_stats &c = f.stats;
	return {{"events", c.events},
		{"low", c.low},
		{"high", c.high},
		{"increases", c.increases},
		{"hai", c.hai},
		{"decreases", c.decreases},
		{"loss_cuts", c.loss_cuts},
		{"loss_undos", c.loss_undos}};
}

std::string flow_json(const CcFlow &f)
{
	Json j;
	if (f.timely) {
		j.str("local", f.local)
			.str("remote", f.remote)
			.str("algo", f.algo)
			.num("netns_ino", std::uint64_t{f.netns_ino})
			.num("cwnd_bytes", std::uint64_t{f.traw.cwnd_bytes})
			.num("rate_bps", std::uint64_t{f.traw.rate} * 8)
			.num("rtt_ns", std::uint64_t{f.traw.last_rtt_ns})
			.num("min_rtt_ns", std::uint64_t{f.traw.min_rtt_ns})
			.raw("rtt_diff_ns", std::to_string(f.traw.rtt_diff_ns))
			.raw("in_loss", f.traw.in_loss ? "true" : "false");
		for (const auto &[name, v] : timely_counts(f.traw))
			j.num(name, v);
		return j.dump();
	}
	j.str("local", f.local)
		.str("remote", f.remote)
		.str("algo", f.algo)
		.num("netns_ino", std::uint64_t{f.netns_ino})
		.num("cwnd_bytes", std::uint64_t{f.raw.cwnd_bytes})
		.num("tau_ns", std::uint64_t{f.raw.tau_ns})
		.num("rate_bps", std::uint64_t{f.raw.pacing_rate} * 8);
	for (const auto &[name, v] : flow_counts(f.raw))
		j.num(name, v);
	return j.dump();
}

void print_timely_flows(const std::vector<const CcFlow *> &flows)
{
	std::printf("%s flows (%zu; rate, window, RTTs and completion events by kind)\n", LUMEN_CC_NAME_TIMELY,
		    flows.size());
	if (flows.empty())
		return;
	std::printf("  %-22s %-22s %-10s %12s %10s %7s %7s %8s %6s %6s %6s %6s %6s %6s %6s\n", "local", "remote",
		    "netns", "rate_mbps", "cwnd", "rtt_us", "min_us", "events", "low", "high", "inc", "hai", "dec",
		    "cuts", "undos");
	for (const CcFlow *f : flows) {
		const lumen_timely_flow &t = f->traw;
		const lumen_timely_stats &c = t.stats;
		std::printf("  %-22s %-22s %-10u %12llu %10llu %7llu %7llu %8u %6u %6u %6u %6u %6u %6u %6u\n",
			    f->local.c_str(), f->remote.c_str(), f->netns_ino,
			    static_cast<unsigned long long>(t.rate * 8 / 1000000),
			    static_cast<unsigned long long>(t.cwnd_bytes),
			    static_cast<unsigned long long>(t.last_rtt_ns / 1000),
			    static_cast<unsigned long long>(t.min_rtt_ns / 1000), c.events, c.low, c.high, c.increases,
			    c.hai, c.decreases, c.loss_cuts, c.loss_undos);
	}
}

void print_flows(const std::vector<CcFlow> &all)
{
	std::vector<const CcFlow *> flows, timely;
	for (const auto &f : all)
		(f.timely ? timely : flows).push_back(&f);
	std::printf("flows (%zu; ACKs, and why INT was not used for them)\n", flows.size());
	if (flows.empty()) {
		print_timely_flows(timely);
		return;
	}
	std::printf("  %-22s %-22s %-10s %-14s %10s %7s %8s %8s %8s %8s %6s %6s %6s %6s %6s\n", "local", "remote",
		    "netns", "algo", "cwnd", "tau_us", "acks", "int_upd", "fallback", "no_int", "gap", "stale", "dup",
		    "path", "cuts");
	for (const CcFlow *f : flows) {
		const lumen_ptcp_stats &c = f->raw.stats;
		std::printf("  %-22s %-22s %-10u %-14s %10llu %7llu %8u %8u %8u %8u %6u %6u %6u %6u %6u\n",
			    f->local.c_str(), f->remote.c_str(), f->netns_ino, f->algo.c_str(),
			    static_cast<unsigned long long>(f->raw.cwnd_bytes),
			    static_cast<unsigned long long>(f->raw.tau_ns / 1000), c.acks, c.int_updates,
			    c.fallback_updates, c.int_missing, c.int_gap, c.int_stale, c.int_duplicate,
			    c.int_path_changes, c.loss_cuts);
	}
	print_timely_flows(timely);
}

int cc_status(const Args &a)
{
	a.allow_only({"--json"});
	if (a.positional.size() > 1)
		throw UsageError("status takes no arguments");
	CcStatus s = lumen::cc_status();
	const char *state = s.loaded ? "loaded" : (s.anything ? "partly loaded (run 'lumen cc unload')" : "not loaded");
	std::optional<std::vector<CcFlow>> flows;
	std::string flows_error;
	if (s.loaded) {
		try {
			flows = cc_flows();
		} catch (const Error &e) {
			flows_error = e.what(); // the rest of the status stands
		}
	}

	if (a.has("--json")) {
		Json reg, allowed, pj, cj, tj;
		for (unsigned i = 0; i < kCcAlgoCount; i++) {
			reg.raw(kCcAlgos[i].name, s.registered[i] ? "true" : "false");
			allowed.raw(kCcAlgos[i].name, s.allowed[i] ? "true" : "false");
			if (s.params && i < kCcPtcpAlgoCount)
				pj.raw(kCcAlgos[i].name, param_json((*s.params)[i], kCcAlgos[i].mode));
		}
		if (s.timely_params)
			pj.raw(LUMEN_CC_NAME_TIMELY, param_json(*s.timely_params));
		if (s.counters)
			for (unsigned k = 0; k < LUMEN_CC_CNT_MAX; k++)
				cj.num(kCcCounters[k].name, (*s.counters)[k]);
		if (s.timely_counters)
			for (unsigned k = 0; k < LUMEN_TIMELY_CNT_MAX; k++)
				tj.num(kTimelyCounters[k].name, (*s.timely_counters)[k]);
		Json out;
		out.raw("loaded", s.loaded ? "true" : "false")
			.str("state", state)
			.raw("registered", reg.dump())
			.raw("allowed", allowed.dump())
			.str("default", s.default_cc)
			.raw("int_sockops", s.int_sockops ? "true" : "false")
			.raw("params", s.params ? pj.dump() : "null")
			.raw("counters", s.counters ? cj.dump() : "null")
			.raw("timely_counters", s.timely_counters ? tj.dump() : "null");
		std::string fj = flows ? std::string(1, '[') : std::string("null");
		if (flows) {
			for (std::size_t i = 0; i < flows->size(); i++) {
				if (i)
					fj.push_back(',');
				fj.append(flow_json((*flows)[i]));
			}
			fj.push_back(']');
		}
		out.raw("flows", fj);
		std::printf("%s\n", out.dump().c_str());
		return 0;
	}

	std::printf("PowerTCP / HPCC / TIMELY struct_ops: %s\n", state);
	std::printf("  %-16s %-11s %-8s %s\n", "algorithm", "registered", "allowed", "default here");
	for (unsigned i = 0; i < kCcAlgoCount; i++)
		std::printf("  %-16s %-11s %-8s %s\n", kCcAlgos[i].name, s.registered[i] ? "yes" : "no",
			    s.allowed[i] ? "yes" : "no", s.default_cc == kCcAlgos[i].name ? "yes" : "no");
	std::printf("INT source (sockops, lumen_int_sk): %s\n", s.int_sockops ? "loaded"
									      : "not loaded: " LUMEN_CC_NAME_INT
										" and " LUMEN_CC_NAME_HPCC
										" run on their RTT fallback");
	if (s.params) {
		std::printf("parameters\n");
		print_params(s.params->data(), s.timely_params ? &*s.timely_params : nullptr, kCcAllAlgos);
	}
	if (s.counters) {
		std::printf("counters of %s, %s and %s (all sockets, since load)\n", LUMEN_CC_NAME_INT,
			    LUMEN_CC_NAME_THETA, LUMEN_CC_NAME_HPCC);
		for (unsigned k = 0; k < LUMEN_CC_CNT_MAX; k++)
			std::printf("  %-18s %12llu  %s\n", kCcCounters[k].name,
				    static_cast<unsigned long long>((*s.counters)[k]), kCcCounters[k].help);
	}
	if (s.timely_counters) {
		std::printf("counters of %s (all sockets, since load)\n", LUMEN_CC_NAME_TIMELY);
		for (unsigned k = 0; k < LUMEN_TIMELY_CNT_MAX; k++)
			std::printf("  %-18s %12llu  %s\n", kTimelyCounters[k].name,
				    static_cast<unsigned long long>((*s.timely_counters)[k]), kTimelyCounters[k].help);
	}
	if (flows)
		print_flows(*flows);
	else if (!flows_error.empty())
		std::printf("flows: unavailable: %s\n", flows_error.c_str());
	return 0;
}

int cc_set(const Args &a)
{
	a.allow_only({"--algo"});
	unsigned mask = algo_mask(a);
	if (a.positional.size() < 2)
		throw UsageError("set needs at least one PARAM=VALUE (see 'lumen cc --help')");
	CcParamChange change = parse_cc_params({a.positional.begin() + 1, a.positional.end()}, mask);
	CcParamSets now = set_cc_params(mask, change);
	std::printf("lumen cc: parameters updated (in effect from the next ACK of every flow)\n");
	// the algorithms the change reached
	print_params(now.ptcp, &now.timely, mask & change.algos());
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
		      "PowerTCP, theta-PowerTCP, HPCC and TIMELY as BPF congestion control\n"
		      "(struct_ops), registered as " LUMEN_CC_NAME_INT " (INT-based, RTT fallback without\n"
		      "INT), " LUMEN_CC_NAME_THETA " (RTT-based), " LUMEN_CC_NAME_HPCC " (HPCC on the same INT and\n"
		      "fallback as " LUMEN_CC_NAME_INT ") and " LUMEN_CC_NAME_TIMELY " (RTT-gradient rate control).\n"
		      "Select one per socket (setsockopt TCP_CONGESTION, iperf3 -C NAME) or per\n"
		      "network namespace (sysctl net.ipv4.tcp_congestion_control=NAME). Needs root,\n"
		      "kernel BTF, Linux >= 6.0.\n"
		      "\n"
		      "  load     load and register all four algorithms. State is pinned under\n"
		      "           " LUMEN_PIN_ROOT "; they stay registered after lumen exits.\n"
		      "           PARAM=VALUE sets initial parameters. Refused when already loaded.\n"
		      "           Any failure undoes everything done so far (nothing is left\n"
		      "           half-loaded).\n"
		      "    --allow  also add every name to net.ipv4.tcp_allowed_congestion_control,\n"
		      "             so non-root users and non-initial network namespaces may select\n"
		      "             them; unload takes them out again\n"
		      "  unload   remove the names from the allowed list, unregister them and\n"
		      "           remove their pins (lumen_int_sk stays while 'lumen int' is\n"
		      "           loaded). Refused while the current namespace's default is one of\n"
		      "           them. Sockets, and namespace defaults, already using one keep it\n"
		      "           until they close or change. With nothing loaded: a note, exit 0.\n"
		      "  status   registration, allowed list, parameters, counters and every flow:\n"
		      "           PowerTCP-core flows with their window, tau and why INT was not\n"
		      "           used for their ACKs; TIMELY flows with their rate, window, RTTs and\n"
		      "           events; --json for a machine-readable object\n"
		      "  set      change parameters of the loaded algorithms; running flows use\n"
		      "           them from their next ACK. Every value is checked first: on any\n"
		      "           error nothing changes.\n"
		      "\n"
		      "  --algo ALGO  " LUMEN_CC_NAME_INT ", " LUMEN_CC_NAME_THETA ", " LUMEN_CC_NAME_HPCC
		      ", " LUMEN_CC_NAME_TIMELY "\n"
		      "               or all (default; 'both' is accepted too): whose parameters\n"
		      "               load / set change. A parameter applies to the chosen\n"
		      "               algorithms that have it; one none of them has is refused.\n"
		      "\n"
		      "parameters of " LUMEN_CC_NAME_INT ", " LUMEN_CC_NAME_THETA " and " LUMEN_CC_NAME_HPCC ":\n"
		      "  gamma=G       EWMA weight of the window update, 0.01..1 (default 0.9)\n"
		      "  flows=N       expected flows N, 1..1000000 (default 10):\n"
		      "                beta = host-bw * base-rtt / N\n"
		      "  beta=BYTES    additive increase per RTT (1500, 64k, 1m), at most 1g;\n"
		      "                0 or auto: derived from flows (default)\n"
		      "  host-bw=RATE  host link rate (25gbit, 100mbit, 10000 = Mbit/s), 1mbit to\n"
		      "                1.6tbit (default 25gbit). host-bw * base-rtt is the initial\n"
		      "                window; with beta, it caps the window. Also TIMELY's.\n"
		      "  base-rtt=DUR  base RTT tau (20us, 1ms), 1us..1s (default 20us); 0 or auto:\n"
		      "                the minimum RTT each flow observes. host-bw * base-rtt must\n"
		      "                not exceed 1 GiB.\n"
		      "parameters of " LUMEN_CC_NAME_HPCC " only:\n"
		      "  eta=U         target utilisation, 0.5..1 (default 0.95)\n"
		      "  max-stage=N   additive steps before a multiplicative one, 0..100 (default 5)\n"
		      "  wai=BYTES     additive increase W_AI, at most 1g; 0 or auto:\n"
		      "                host-bw * base-rtt * (1 - eta) / flows (default)\n"
		      "parameters of " LUMEN_CC_NAME_TIMELY " (with --algo " LUMEN_CC_NAME_TIMELY " for beta):\n"
		      "  host-bw=RATE  line rate: the start and ceiling of the rate (default 10gbit)\n"
		      "  t-low=DUR     below it: additive increase, 1us..1s (default 50us)\n"
		      "  t-high=DUR    above it: multiplicative decrease, above t-low, at most 1s\n"
		      "                (default 500us)\n"
		      "  min-rtt=DUR   the gradient's normaliser, 1us..1s; 0 or auto: the smallest\n"
		      "                RTT the flow has seen (default)\n"
		      "  delta=RATE    additive step, at most host-bw; 0 or auto: host-bw / 1000\n"
		      "                (default)\n"
		      "  alpha=F       EWMA weight of a new RTT difference, (0, 1] (default 0.875)\n"
		      "  beta=F        multiplicative decrease, (0, 1] (default 0.8)\n"
		      "  hai-events=N  gradient <= 0 events before hyperactive increase, 1..1000\n"
		      "                (default 5)\n"
		      "  segment=BYTES bytes acknowledged per completion event, 1k..16m (default 16k)\n"
		      "\n"
		      "counters: 'lumen cc status' lists each with what it counts\n"
		      "\n"
		      "examples:\n"
		      "  lumen cc load --allow host-bw=10gbit base-rtt=auto\n"
		      "  lumen cc set --algo " LUMEN_CC_NAME_THETA " gamma=0.7\n"
		      "  lumen cc set --algo " LUMEN_CC_NAME_HPCC " eta=0.9 max-stage=3\n"
		      "  lumen cc set --algo " LUMEN_CC_NAME_TIMELY " t-low=30us t-high=300us beta=0.5\n"
		      "  ip netns exec NS sysctl -w net.ipv4.tcp_congestion_control=" LUMEN_CC_NAME_INT "\n"
		      "  lumen cc status --json\n"
		      "  lumen cc unload\n";

} // namespace

const Command kCcCommand = {"cc", "PowerTCP / theta-PowerTCP / HPCC / TIMELY congestion control (struct_ops)", kUsage,
			    run_cc};

} // namespace lumen
