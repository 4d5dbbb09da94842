// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/cli/cmd_sched.cpp - `lumen sched`: make, check and look at
// periodic optical circuit schedules (userspace/sched).
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>

#include "base/args.h"
#include "base/error.h"
#include "base/fd.h"
#include "base/system.h"
#include "base/interrupt.h"
#include "base/json_socket.h"
#include "base/list.h"
#include "base/units.h"
#include "cli/commands.h"
#include "experiment/report_plot.h"
#include "sched/demand.h"
#include "sched/report.h"
#include "sched/schedule.h"
#include "sched/vermilion.h"
#include "testbed/adapt.h"
#include "testbed/schedule_change.h"

namespace lumen
{
namespace
{

const char kUsage[] =
	R"(usage: lumen sched generate round-robin --nodes N [--uplinks D] [--self-loops] [TIMING] --out FILE
       lumen sched generate ebs --nodes N --h H [--uplinks D] [TIMING] --out FILE
       lumen sched generate vermilion --demand FILE [--k K] [--l L] [--uplinks D] [--seed S] [TIMING] --out FILE
       lumen sched validate FILE [--json]
       lumen sched show FILE [--demand FILE] [--slots N] [--png FILE] [--json]
       lumen sched bench [--nodes N,M...] [--k K] [--l L] [--uplinks D] [--shape S] [--rounds R] [--json]
       lumen sched status [--control PATH | --control HOST:PORT --control-token FILE] [--json]
       lumen sched change FILE [--testbed NAME] [--lumend SOCK|HOST:PORT,... [--control-token FILE]]
                         [--lead D | --at NS] [--dir DIR] [--json]
       lumen sched adapt --testbed NAME [--window D] [--rounds N] [--alpha A] [--min-gain G] [--k K] [--l L]
                         [--seed S] [--lumend SOCK|HOST:PORT,... [--control-token FILE]]
                         [--dp-telemetry PREFIX,...] [--lead D] [--dir DIR] [--json]
       lumen sched adapt --lumend SOCK|HOST:PORT,... [--control-token FILE] [...]

Periodic optical circuit schedules (RotorNet, Sirius, Vermilion): in every
slot each circuit switch (one per uplink) connects the nodes by one
matching; a node may send directly to another only in the slots where they
are connected, outside the guard. The file format is in docs/optical.md.

generate round-robin   the oblivious schedule: node i reaches i + s for every
                       shift s, each pair once per period of ceil((N-1)/D)
                       slots (ceil(N/D) with --self-loops, shift 0 idle)
generate ebs           Shale's Elementary Basis Schedule: nodes as H
                       coordinates in base m (m^H >= N), a round robin per
                       coordinate, period ceil(H(m-1)/D); a node reaches the
                       nodes that differ from it in one coordinate (Shale
                       routes over up to 2H hops); H 1 is round robin.
                       N below m^H: M - N of Shale's dummy nodes, a circuit
                       Shale leaves idle closed to the next node on its
                       cycle; Shale's routing keeps Lemma 5's guarantee
generate vermilion     Vermilion's traffic-aware schedule for a demand matrix
                       (N lines of N numbers, row = source): K*N matchings
                       over D uplinks, period K*N/D; every pair at least L
                       circuits; single-hop throughput >= (K-L)/K x duty
                       when 2L <= K; with 2L > K (no trust) the schedule is
                       K rounds of round robin and only 1/N x duty holds
  --k K (3), --l L (1), --seed S (1), --uplinks D (1, must divide K*N)
validate FILE          check a schedule file; prints what it gives its pairs
show FILE              the summary, a table per uplink of each node's
                       destination per slot (--slots N: the first N, 32),
                       --demand: the demand's single-hop and two-hop
                       (Valiant) throughput; --png: the matchings as a picture
bench                  how long Vermilion takes on one core: per node count
                       (32,256), --rounds (5) demands of --shape (random,
                       skewed, permutation, ring, hot-row; random) made
                       from seeds 1..R, each timed; prints the median and
                       the worst, and the lowest single-hop throughput next
                       to the guarantee: (K-L)/K x duty when 2L <= K, else
                       1/N x duty (the complete graph)
status                 what lumend, the schedule's daemon on this host, says
                       on its control socket (--control, /run/lumen/lumend.sock;
                       or a lumend on another host, HOST:PORT of its
                       --control-tcp, with --control-token FILE, its token):
                       the schedule in force, the clock, whether senders may
                       send, the slot boundary errors (docs/lumend.md)
change FILE            the schedule becomes FILE at one instant for every
                       party: a rotor testbed's rotor switch and its hosts'
                       gates (--testbed), lumends by their control sockets
                       (--lumend; HOST:PORT for one on another host, which
                       gets the schedule in the request and wants the token
                       of --control-token FILE); the instant is the first period boundary
                       --lead (1s) from now, or --at NS (CLOCK_TAI). Two
                       phases: every party takes the new schedule for that
                       instant, then every party commits; if one refuses,
                       all abort and the old schedule stays. FILE's version
                       is raised above the one in force if it is not; its
                       t0 becomes the instant. The parties read it from a
                       file in --dir (/run/lumen/changes)
adapt                  traffic-aware operation of a rotor testbed: every
                       --window (2s) the bytes each host's gate saw per
                       destination (the kernel gates', and lumen-dp's through
                       DPDK telemetry: --dp-telemetry, its --file-prefix or
                       socket), their rates smoothed by an EWMA (--alpha
                       0.5: the newest window's weight), Vermilion for them
                       (--k, --l, --seed), and a change at an instant
                       (as 'change', with --lumend, --lead, --dir) when that
                       serves at least --min-gain (0.05) more of the demand
                       single-hop than the schedule in force. --rounds N
                       windows (1; 0: until Ctrl-C), a line (or JSON object)
                       per round. Without --testbed, across machines: each
                       --lumend answers its host's demand (lumend --gate,
                       --dp-telemetry), the first the schedule in force,
                       and the lumends change

TIMING (generate):
  --slot D             slot length, guard included (100us)
  --guard D            reconfiguration time per slot, nothing sent (10us)
  --guard-at end|start where in the slot the guard lies (end)
  --t0 NS|now[+D]      CLOCK_TAI time of slot 0 of period 0 (now+1s: one
                       second from now, rounded up to a whole slot)
  --version N          the schedule's version (1)
  --link RATE          one uplink's rate, e.g. 25gbit (not given)

Exit status: 0 ok, 1 failure, 2 a bad option or an invalid file (the
message names the file, where in it, and what is wrong).
)";

sched::Timing parse_timing(const Args &a)
{
	sched::Timing t;
	if (a.has("--slot"))
		t.slot_ns = parse_duration_ns(*a.get("--slot"), "--slot", 10 * kSec);
	if (a.has("--guard"))
		t.guard_ns = parse_duration_ns(*a.get("--guard"), "--guard", 10 * kSec);
	if (t.guard_ns >= t.slot_ns)
		throw UsageError("--guard must be shorter than --slot");
	if (a.has("--guard-at")) {
		std::string g = *a.get("--guard-at");
		if (g != "end" && g != "start")
			throw UsageError("--guard-at: '" + g + "' is neither end nor start");
		t.guard_at = g == "start" ? sched::GuardAt::kStart : sched::GuardAt::kEnd;
	}
	std::string t0 = a.get("--t0").value_or("now+1s");
	if (t0.rfind("now", 0) == 0) {
		uint64_t ahead = 0;
		if (t0.size() > 3) {
			if (t0[3] != '+')
				throw UsageError("--t0: '" + t0 + "' is neither a number of ns nor now[+DURATION]");
			ahead = parse_duration_ns(t0.substr(4), "--t0", 3600 * kSec);
		}
		uint64_t now = tai_ns() + ahead;
		t.t0_ns = (now + t.slot_ns - 1) / t.slot_ns * t.slot_ns;
	} else
		t.t0_ns = parse_uint(t0, "--t0", 0, UINT64_MAX);
	if (a.has("--version"))
		t.version = parse_uint(*a.get("--version"), "--version", 0, UINT64_MAX);
	if (a.has("--link"))
		t.link_gbps = parse_rate_mbps(*a.get("--link"), "--link") / 1000.0;
	return t;
}

std::string out_path(const Args &a)
{
	if (!a.has("--out") || a.get("--out")->empty())
		throw UsageError("generate needs --out FILE");
	return *a.get("--out");
}

int cmd_generate(const Args &a)
{
	static const std::vector<std::string> timing = {"--slot",    "--guard", "--guard-at", "--t0",
							"--version", "--link",	"--out"};
	if (a.positional.size() != 2)
		throw UsageError("generate takes one kind: round-robin, ebs or vermilion");
	const std::string &kind = a.positional[1];
	if (kind == "round-robin") {
		std::vector<std::string> known = timing;
		known.insert(known.end(), {"--nodes", "--uplinks", "--self-loops"});
		a.allow_only(known);
		if (!a.has("--nodes"))
			throw UsageError("generate round-robin needs --nodes N");
		uint32_t n = (uint32_t)parse_uint(*a.get("--nodes"), "--nodes", 2, sched::kMaxNodes);
		uint32_t d = (uint32_t)parse_uint(a.get("--uplinks").value_or("1"), "--uplinks", 1, sched::kMaxUplinks);
		std::string path = out_path(a);
		sched::Schedule s = sched::round_robin(n, d, a.has("--self-loops"), parse_timing(a));
		sched::save(s, path);
		std::printf("wrote %s\n%s", path.c_str(), sched::summary_text(s, nullptr).c_str());
		return 0;
	}
	if (kind == "ebs") {
		std::vector<std::string> known = timing;
		known.insert(known.end(), {"--nodes", "--uplinks", "--h"});
		a.allow_only(known);
		if (!a.has("--nodes") || !a.has("--h"))
			throw UsageError("generate ebs needs --nodes N and --h H");
		uint32_t n = (uint32_t)parse_uint(*a.get("--nodes"), "--nodes", 2, sched::kMaxNodes);
		uint32_t h = (uint32_t)parse_uint(*a.get("--h"), "--h", 1, 20);
		uint32_t d = (uint32_t)parse_uint(a.get("--uplinks").value_or("1"), "--uplinks", 1, sched::kMaxUplinks);
		std::string path = out_path(a);
		sched::Schedule s = sched::ebs(n, d, h, parse_timing(a));
		sched::save(s, path);
		std::printf("wrote %s\n%s", path.c_str(), sched::summary_text(s, nullptr).c_str());
		// what Shale proves, for its own routing: not what direct hops get
		std::printf("Shale's routing (up to 2H hops) guarantees %.4f of the hose%s\n",
			    sched::ebs_shale_guarantee(n, h),
			    s.generator.find("dummy") != std::string::npos ? " (Lemma 5)" : "");
		return 0;
	}
	if (kind == "vermilion") {
		std::vector<std::string> known = timing;
		known.insert(known.end(), {"--demand", "--k", "--l", "--uplinks", "--seed"});
		a.allow_only(known);
		if (!a.has("--demand"))
			throw UsageError("generate vermilion needs --demand FILE");
		uint32_t n = 0;
		std::vector<double> demand = sched::load_demand(*a.get("--demand"), &n);
		sched::VermilionParams p;
		p.k = (uint32_t)parse_uint(a.get("--k").value_or("3"), "--k", 1, 64);
		p.l = (uint32_t)parse_uint(a.get("--l").value_or("1"), "--l", 1, 64);
		p.uplinks = (uint32_t)parse_uint(a.get("--uplinks").value_or("1"), "--uplinks", 1, sched::kMaxUplinks);
		p.seed = parse_uint(a.get("--seed").value_or("1"), "--seed", 0, UINT64_MAX);
		p.timing = parse_timing(a);
		std::string path = out_path(a);
		sched::Schedule s = sched::vermilion(demand, n, p);
		sched::save(s, path);
		std::printf("wrote %s\n%s", path.c_str(), sched::summary_text(s, &demand).c_str());
		return 0;
	}
	throw UsageError("unknown schedule kind '" + kind + "' (round-robin, ebs, vermilion)");
}

int cmd_validate(const Args &a)
{
	a.allow_only({"--json"});
	if (a.positional.size() != 2)
		throw UsageError("validate takes one schedule file");
	sched::Schedule s = sched::load(a.positional[1]);
	if (a.has("--json"))
		std::printf("%s\n", sched::summary(s, nullptr).dump(2).c_str());
	else
		std::printf("%s: valid\n%s", a.positional[1].c_str(), sched::summary_text(s, nullptr).c_str());
	return 0;
}

int cmd_show(const Args &a)
{
	a.allow_only({"--demand", "--slots", "--png", "--json"});
	if (a.positional.size() != 2)
		throw UsageError("show takes one schedule file");
	std::string png = a.get("--png").value_or("");
	if (a.has("--png") && (png.size() < 5 || png.substr(png.size() - 4) != ".png"))
		throw UsageError("--png: the file name must end in .png");
	sched::Schedule s = sched::load(a.positional[1]);
	std::vector<double> demand;
	if (a.has("--demand")) {
		uint32_t n = 0;
		demand = sched::load_demand(*a.get("--demand"), &n);
		if (n != s.nodes)
			throw UsageError(*a.get("--demand") + ": " + std::to_string(n) + " nodes, the schedule has " +
					 std::to_string(s.nodes));
	}
	const std::vector<double> *d = a.has("--demand") ? &demand : nullptr;
	uint32_t slots = (uint32_t)parse_uint(a.get("--slots").value_or("32"), "--slots", 1, UINT32_MAX);
	if (!png.empty()) {
		size_t slash = png.rfind('/');
		std::string dir = slash == std::string::npos ? "." : png.substr(0, slash);
		std::string name = png.substr(slash == std::string::npos ? 0 : slash + 1);
		name = name.substr(0, name.size() - 4);
		render_plots({{name, "circuit schedule", sched::plot_script(s, name + ".png")}}, dir);
	}
	if (a.has("--json")) {
		nlohmann::json j = sched::summary(s, d);
		if (!png.empty())
			j["png"] = png;
		std::printf("%s\n", j.dump(2).c_str());
		return 0;
	}
	std::printf("%s%s", sched::summary_text(s, d).c_str(), sched::slot_table(s, slots).c_str());
	if (!png.empty())
		std::printf("wrote %s\n", png.c_str());
	return 0;
}

// bench --nodes: a size given twice would only be timed twice
std::vector<uint32_t> parse_node_list(const std::string &text)
{
	std::vector<uint32_t> out;
	for (uint64_t n : parse_uint_list(text, "--nodes", "node count", 2, sched::kMaxNodes))
		out.push_back((uint32_t)n);
	return out;
}

int cmd_bench(const Args &a)
{
	a.allow_only({"--nodes", "--k", "--l", "--uplinks", "--shape", "--rounds", "--json"});
	if (a.positional.size() != 1)
		throw UsageError("bench takes no file");
	std::vector<uint32_t> sizes = parse_node_list(a.get("--nodes").value_or("32,256"));
	sched::VermilionParams p;
	p.k = (uint32_t)parse_uint(a.get("--k").value_or("3"), "--k", 1, 64);
	p.l = (uint32_t)parse_uint(a.get("--l").value_or("1"), "--l", 1, 64);
	p.uplinks = (uint32_t)parse_uint(a.get("--uplinks").value_or("1"), "--uplinks", 1, sched::kMaxUplinks);
	sched::DemandShape shape = sched::parse_demand_shape(a.get("--shape").value_or("random"));
	uint32_t rounds = (uint32_t)parse_uint(a.get("--rounds").value_or("5"), "--rounds", 1, 1000);
	bool json = a.has("--json");
	nlohmann::json results = nlohmann::json::array();

	if (!json)
		std::printf("%6s %8s %12s %12s %10s %8s %s\n", "nodes", "period", "median ms", "worst ms", "theta min",
			    "bound", "rule");
	for (uint32_t n : sizes) {
		std::vector<double> ms;
		double theta = 1e300;
		uint32_t period = 0;
		double duty = 0;
		for (uint32_t r = 0; r < rounds; r++) {
			std::vector<double> demand = sched::make_demand(shape, n, r + 1);
			p.seed = r + 1;
			auto t0 = std::chrono::steady_clock::now();
			sched::Schedule s = sched::vermilion(demand, n, p);
			auto t1 = std::chrono::steady_clock::now();
			ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
			theta = std::min(theta, sched::single_hop_throughput(s, demand));
			period = s.period;
			duty = s.duty();
			if (!json)
				std::fprintf(stderr, "lumen sched bench: %u nodes, round %u of %u: %.3f ms\n", n, r + 1,
					     rounds, ms.back());
		}
		std::sort(ms.begin(), ms.end());
		/* Theorem 3's (k - l) / k needs 2l <= k; with 2l > k (no trust)
		 * the schedule is the complete graph, which guarantees 1 / n */
		sched::VermilionGuarantee g = sched::vermilion_guarantee(n, p);
		double median = ms[ms.size() / 2], bound = g.fraction * duty;
		if (json)
			results.push_back({{"nodes", n},
					   {"period", period},
					   {"median_ms", median},
					   {"worst_ms", ms.back()},
					   {"theta_min", theta},
					   {"bound", bound},
					   {"bound_rule", g.rule},
					   {"rounds", rounds},
					   {"shape", sched::demand_shape_name(shape)}});
		else
			std::printf("%6u %8u %12.3f %12.3f %10.4f %8.4f %s\n", n, period, median, ms.back(), theta,
				    bound, g.rule);
	}
	if (json)
		std::printf("%s\n", results.dump(2).c_str());
	return 0;
}

// ----------------------------------------------------------------------
// `lumen sched status`: one request on lumend's control socket
// (userspace/lumend/control.h: a JSON line each way)

const char kLumendSocket[] = "/run/lumen/lumend.sock"; // lumend's --control default

// The token for lumends reached over TCP (base/json_socket.h): read from
// the file of `opt`, which any HOST:PORT among endpoints needs.
std::string lumend_token(const Args &a, const std::vector<std::string> &endpoints, const std::string &opt)
{
	bool tcp = false;
	for (const std::string &e : endpoints)
		tcp = tcp || is_tcp_endpoint(e);
	if (!a.has(opt)) {
		if (tcp)
			throw UsageError("a lumend at HOST:PORT answers only with its token: give " + opt + " FILE");
		return "";
	}
	if (!tcp)
		throw UsageError(opt + " is for lumends at HOST:PORT (a Unix socket needs none)");
	return read_token_file(*a.get(opt), opt);
}

std::string ns_words(const nlohmann::json &v)
{
	if (!v.is_number())
		return "unknown";
	double ns = v.get<double>();
	char buf[32];
	if (ns < 1e3)
		std::snprintf(buf, sizeof(buf), "%.0f ns", ns);
	else if (ns < 1e6)
		std::snprintf(buf, sizeof(buf), "%.3g us", ns / 1e3);
	else if (ns < 1e9)
		std::snprintf(buf, sizeof(buf), "%.3g ms", ns / 1e6);
	else
		std::snprintf(buf, sizeof(buf), "%.3g s", ns / 1e9);
	return buf;
}

int cmd_status(const Args &a)
{
	a.allow_only({"--control", "--control-token", "--json"});
	if (a.positional.size() != 1)
		throw UsageError("status takes no file");
	const std::string control = a.get("--control").value_or(kLumendSocket);
	nlohmann::json j =
		json_request(control, {{"cmd", "status"}}, "lumend", lumend_token(a, {control}, "--control-token"));
	if (a.has("--json")) {
		std::printf("%s\n", j.dump(2).c_str());
		return 0;
	}
	nlohmann::json t = j.value("timing", nlohmann::json::object()), c = j.value("clock", nlohmann::json::object());
	nlohmann::json e = j.value("boundary_error_ns", nlohmann::json::object());
	std::printf("lumend (pid %d): node %u of %u, schedule version %llu (%s)\n", j.value("pid", 0),
		    j.value("node", 0u), j.value("nodes", 0u), j.value("version", 0ull),
		    j.value("schedule_file", std::string("?")).c_str());
	unsigned stride = j.value("stride", 1u);
	std::string every = "every boundary";
	if (stride != 1) // appended: GCC 12's -Wrestrict at -O3 on "literal" + string
		every = std::string("every ").append(std::to_string(stride)).append("th boundary");
	std::printf("  slots:  %u of %s, guard %s at the %s; margin %s; published %s\n", t.value("period", 0u),
		    ns_words(t.value("slot_ns", nlohmann::json())).c_str(),
		    ns_words(t.value("guard_ns", nlohmann::json())).c_str(),
		    t.value("guard_at", std::string("end")).c_str(),
		    ns_words(j.value("margin_ns", nlohmann::json())).c_str(), every.c_str());
	std::printf("  clock:  %s, error bound %s%s\n", c.value("source", std::string("?")).c_str(),
		    ns_words(c.value("error_bound_ns", nlohmann::json())).c_str(),
		    c.value("stated", false) ? " (stated)" : "");
	if (j.value("gating", false))
		std::printf("  state:  gating (senders may send in their windows)\n");
	else {
		std::string reasons;
		for (const auto &r : j.value("quiet_reasons", nlohmann::json::array()))
			reasons += (reasons.empty() ? "" : ", ") + r.get<std::string>();
		std::printf("  state:  QUIET (%s): %s\n", reasons.c_str(), j.value("why", std::string()).c_str());
	}
	std::printf("  slot %llu; boundary error p50 %s, p99 %s, max %s; published %llu, late %llu, missed %llu\n",
		    j.value("slot", 0ull), ns_words(e.value("p50", nlohmann::json())).c_str(),
		    ns_words(e.value("p99", nlohmann::json())).c_str(),
		    ns_words(e.value("max", nlohmann::json())).c_str(), j.value("published", 0ull),
		    j.value("late", 0ull), j.value("missed", 0ull));
	return 0;
}

int cmd_change(const Args &a)
{
	a.allow_only({"--testbed", "--lumend", "--control-token", "--lead", "--at", "--dir", "--json"});
	if (a.positional.size() != 2 || (!a.has("--testbed") && !a.has("--lumend")))
		throw UsageError("change takes one schedule file, and --testbed NAME or --lumend SOCK,... (or both)");
	ChangeTargets targets;
	targets.testbed = a.get("--testbed").value_or("");
	targets.lumends = a.list("--lumend", "socket");
	targets.lumend_token = lumend_token(a, targets.lumends, "--control-token");
	if (a.has("--lead") && a.has("--at"))
		throw UsageError("give --lead or --at, not both");
	TestbedChange how;
	if (a.has("--lead"))
		how.lead_ns = parse_duration_ns(*a.get("--lead"), "--lead", 3600 * kSec);
	if (a.has("--at"))
		how.at_ns = parse_uint(*a.get("--at"), "--at", 1, UINT64_MAX);
	if (a.has("--dir"))
		how.dir = *a.get("--dir");
	TestbedChangeResult r = change_schedule(targets, sched::load(a.positional[1]), how);
	const sched::ChangeOutcome &o = r.outcome;
	if (a.has("--json")) {
		nlohmann::json j = {{"from_version", r.from_version},
				    {"version", o.version},
				    {"switch_ns", o.switch_ns},
				    {"staged_ns", o.staged_ns},
				    {"committed_ns", o.committed_ns},
				    {"parties", r.parties},
				    {"commit_failures", o.commit_failures}};
		std::printf("%s\n", j.dump(2).c_str());
	} else {
		std::printf("schedule version %llu -> %llu at %llu ns TAI (%.3f s from the commit), %zu parties:\n",
			    (unsigned long long)r.from_version, (unsigned long long)o.version,
			    (unsigned long long)o.switch_ns, (double)(o.switch_ns - o.committed_ns) / 1e9,
			    r.parties.size());
		for (const std::string &p : r.parties)
			std::printf("  %s\n", p.c_str());
		for (const std::string &f : o.commit_failures)
			std::printf("commit failed (quiet from the instant on): %s\n", f.c_str());
	}
	return o.commit_failures.empty() ? 0 : 1;
}

int cmd_adapt(const Args &a)
{
	a.allow_only({"--testbed", "--window", "--rounds", "--alpha", "--min-gain", "--k", "--l", "--seed", "--lumend",
		      "--control-token", "--lead", "--dir", "--json", "--dp-telemetry"});
	if (a.positional.size() != 1 || (!a.has("--testbed") && !a.has("--lumend")))
		throw UsageError("adapt takes --testbed NAME or --lumend ENDPOINT,... (or both), and no file");
	AdaptOptions o;
	if (a.has("--window"))
		o.window_ns = parse_duration_ns(*a.get("--window"), "--window", 3600 * kSec);
	if (o.window_ns < 10 * kMs)
		throw UsageError("--window must be at least 10ms");
	if (a.has("--rounds"))
		o.rounds = (uint32_t)parse_uint(*a.get("--rounds"), "--rounds", 0, 1'000'000);
	if (a.has("--alpha"))
		o.alpha = parse_number(*a.get("--alpha"), "--alpha", 0.001, 1);
	if (a.has("--min-gain"))
		o.min_gain = parse_number(*a.get("--min-gain"), "--min-gain", 0, 1);
	if (a.has("--k"))
		o.vermilion.k = (uint32_t)parse_uint(*a.get("--k"), "--k", 1, 64);
	if (a.has("--l"))
		o.vermilion.l = (uint32_t)parse_uint(*a.get("--l"), "--l", 1, 64);
	if (a.has("--seed"))
		o.vermilion.seed = parse_uint(*a.get("--seed"), "--seed", 0, UINT64_MAX);
	if (a.has("--lead"))
		o.how.lead_ns = parse_duration_ns(*a.get("--lead"), "--lead", 3600 * kSec);
	if (a.has("--dir"))
		o.how.dir = *a.get("--dir");
	o.lumends = a.list("--lumend", "socket");
	o.lumend_token = lumend_token(a, o.lumends, "--control-token");
	o.dp_telemetry = a.list("--dp-telemetry", "socket");
	bool json = a.has("--json");
	install_interrupt_handlers();
	auto report = [&](const AdaptRound &r) {
		const sched::AdaptDecision &d = r.decision;
		if (json) {
			nlohmann::json j = {{"round", r.round},
					    {"gated_hosts", r.gated},
					    {"demand_bytes_per_s", r.demand},
					    {"theta_now", d.theta_now},
					    {"theta_next", d.theta_next},
					    {"changed", r.changed},
					    {"why", d.why}};
			if (r.changed)
				j["change"] = {{"version", r.change.outcome.version},
					       {"switch_ns", r.change.outcome.switch_ns},
					       {"commit_failures", r.change.outcome.commit_failures}};
			if (!r.error.empty())
				j["error"] = r.error;
			std::printf("%s\n", j.dump().c_str());
		} else {
			std::printf("round %u: %u gated hosts; %s", r.round, r.gated, d.why.c_str());
			if (r.changed)
				std::printf("; version %llu at %llu ns TAI",
					    (unsigned long long)r.change.outcome.version,
					    (unsigned long long)r.change.outcome.switch_ns);
			if (!r.error.empty())
				std::printf("; the change failed: %s", r.error.c_str());
			std::printf("\n");
		}
		std::fflush(stdout);
	};
	if (a.has("--testbed"))
		adapt_testbed(*a.get("--testbed"), o, report);
	else
		adapt_lumends(o, report);
	return 0;
}

int run(const std::vector<std::string> &argv)
{
	Args a = Args::parse(argv, {"--json", "--self-loops"});
	return run_subcommand<Args>(a.positional.empty() ? nullptr : &a.positional[0],
				    {{"generate", cmd_generate},
				     {"validate", cmd_validate},
				     {"show", cmd_show},
				     {"bench", cmd_bench},
				     {"status", cmd_status},
				     {"change", cmd_change},
				     {"adapt", cmd_adapt}},
				    a);
}

} // namespace

const Command kSchedCommand = {
	"sched", "make, check and show periodic optical circuit schedules (round robin, Vermilion)", kUsage, run};

} // namespace lumen
