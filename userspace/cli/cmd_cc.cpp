// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/cli/cmd_cc.cpp - `lumen cc`: load, unload, inspect and tune the
// PowerTCP / theta-PowerTCP struct_ops through bpfctl/cc.h, and print what
// it reports.
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

void print_params(const lumen_ptcp_params *p, unsigned mask)
{
	std::vector<std::string> head = {"param     "};
	for (unsigned i = 0; i < kCcAlgoCount; i++)
		if (mask & (1u << i))
			head.push_back(kCcAlgos[i].name);
	print_row(head, 25);
	std::vector<std::vector<std::pair<std::string, std::string>>> rows;
	for (unsigned i = 0; i < kCcAlgoCount; i++)
		rows.push_back(param_rows(p[i]));
	for (std::size_t r = 0; r < rows[0].size(); r++) {
		std::vector<std::string> cells = {rows[0][r].first};
		cells[0].resize(10, ' ');
		for (unsigned i = 0; i < kCcAlgoCount; i++)
			if (mask & (1u << i))
				cells.push_back(rows[i][r].second);
		print_row(cells, 25);
	}
}

int cc_load(const Args &a)
{
	a.allow_only({"--allow", "--algo"});
	CcLoadRequest req;
	req.algos = algo_mask(a);
	req.change = parse_cc_params({a.positional.begin() + 1, a.positional.end()});
	req.allow = a.has("--allow");
	CcLoadResult r = load_cc(req);
	std::printf("lumen cc: registered %s and %s (pinned under %s)%s\n", LUMEN_CC_NAME_INT, LUMEN_CC_NAME_THETA,
		    LUMEN_PIN_ROOT, req.allow ? "; allowed in every network namespace" : "");
	if (!r.int_sockops)
		std::printf("lumen cc: INT sockops not loaded: %s uses its RTT fallback until 'lumen int' runs\n",
			    LUMEN_CC_NAME_INT);
	print_params(r.params, kCcAllAlgos);
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
	std::printf("lumen cc: unregistered %s and %s, removed their pins%s\n", LUMEN_CC_NAME_INT, LUMEN_CC_NAME_THETA,
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

std::string flow_json(const CcFlow &f)
{
	Json j;
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

void print_flows(const std::vector<CcFlow> &flows)
{
	std::printf("flows (%zu; ACKs, and why INT was not used for them)\n", flows.size());
	if (flows.empty())
		return;
	std::printf("  %-22s %-22s %-10s %-14s %10s %7s %8s %8s %8s %8s %6s %6s %6s %6s %6s\n", "local", "remote",
		    "netns", "algo", "cwnd", "tau_us", "acks", "int_upd", "fallback", "no_int", "gap", "stale", "dup",
		    "path", "cuts");
	for (const auto &f : flows) {
		const lumen_ptcp_stats &c = f.raw.stats;
		std::printf("  %-22s %-22s %-10u %-14s %10llu %7llu %8u %8u %8u %8u %6u %6u %6u %6u %6u\n",
			    f.local.c_str(), f.remote.c_str(), f.netns_ino, f.algo.c_str(),
			    static_cast<unsigned long long>(f.raw.cwnd_bytes),
			    static_cast<unsigned long long>(f.raw.tau_ns / 1000), c.acks, c.int_updates,
			    c.fallback_updates, c.int_missing, c.int_gap, c.int_stale, c.int_duplicate,
			    c.int_path_changes, c.loss_cuts);
	}
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
		Json reg, allowed, pj, cj;
		for (unsigned i = 0; i < kCcAlgoCount; i++) {
			reg.raw(kCcAlgos[i].name, s.registered[i] ? "true" : "false");
			allowed.raw(kCcAlgos[i].name, s.allowed[i] ? "true" : "false");
			if (s.params)
				pj.raw(kCcAlgos[i].name, param_json((*s.params)[i]));
		}
		if (s.counters)
			for (unsigned k = 0; k < LUMEN_CC_CNT_MAX; k++)
				cj.num(kCcCounters[k].name, (*s.counters)[k]);
		Json out;
		out.raw("loaded", s.loaded ? "true" : "false")
			.str("state", state)
			.raw("registered", reg.dump())
			.raw("allowed", allowed.dump())
			.str("default", s.default_cc)
			.raw("int_sockops", s.int_sockops ? "true" : "false")
			.raw("params", s.params ? pj.dump() : "null")
			.raw("counters", s.counters ? cj.dump() : "null");
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

	std::printf("PowerTCP struct_ops: %s\n", state);
	std::printf("  %-16s %-11s %-8s %s\n", "algorithm", "registered", "allowed", "default here");
	for (unsigned i = 0; i < kCcAlgoCount; i++)
		std::printf("  %-16s %-11s %-8s %s\n", kCcAlgos[i].name, s.registered[i] ? "yes" : "no",
			    s.allowed[i] ? "yes" : "no", s.default_cc == kCcAlgos[i].name ? "yes" : "no");
	std::printf("INT source (sockops, lumen_int_sk): %s\n",
		    s.int_sockops ? "loaded" : "not loaded: " LUMEN_CC_NAME_INT " runs on its RTT fallback");
	if (s.params) {
		std::printf("parameters\n");
		print_params(s.params->data(), kCcAllAlgos);
	}
	if (s.counters) {
		std::printf("counters (all sockets, since load)\n");
		for (unsigned k = 0; k < LUMEN_CC_CNT_MAX; k++)
			std::printf("  %-18s %12llu  %s\n", kCcCounters[k].name,
				    static_cast<unsigned long long>((*s.counters)[k]), kCcCounters[k].help);
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
		throw UsageError("set needs at least one PARAM=VALUE (gamma, flows, beta, host-bw, base-rtt)");
	CcParamChange change = parse_cc_params({a.positional.begin() + 1, a.positional.end()});
	std::vector<lumen_ptcp_params> now = set_cc_params(mask, change);
	std::printf("lumen cc: parameters updated (in effect from the next ACK of every flow)\n");
	print_params(now.data(), mask);
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
		      "  status   registration, allowed list, parameters, counters and every flow\n"
		      "           with its window, tau and why INT was not used for its ACKs;\n"
		      "           --json for a machine-readable object\n"
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
		      "counters: 'lumen cc status' lists each with what it counts\n"
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
