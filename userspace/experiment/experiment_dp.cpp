// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/experiment/experiment_dp.cpp - datapath experiments (see
// experiment_dp.h): the analysis of a run, then the runner.
#include "experiment/experiment_dp.h"

#include "base/error.h"
#include "base/interrupt.h"
#include "base/netns.h"
#include "base/process.h"
#include "base/stats.h"
#include "base/system.h"
#include "base/units.h"
#include "bpfctl/switch_port.h"
#include "experiment/experiment_netns.h"
#include "experiment/experiment_proc.h"
#include "experiment/experiment_results.h"
#include "experiment/report_plot.h"
#include "testbed/testbed.h"
#include "testbed/testbed_plan.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace lumen
{

using nlohmann::json;

// ---------------------------------------------------------------------
// Analysis

std::vector<DpMessage> parse_fct_csv(const std::string &text, const std::string &what)
{
	std::vector<DpMessage> out;
	std::istringstream in(text);
	std::string line;
	std::size_t n = 0;
	while (std::getline(in, line)) {
		n++;
		if (n == 1) {
			if (line != "host,conn,msg,bytes,posted_ns,done_ns")
				throw Error(what + ": line 1 is not lumen-dp's --fct-csv header");
			continue;
		}
		if (line.empty())
			continue;
		DpMessage m;
		char host[64] = {};
		unsigned long long bytes = 0, posted = 0, done = 0;
		int got = std::sscanf(line.c_str(), "%63[^,],%u,%u,%llu,%llu,%llu", host, &m.conn, &m.msg, &bytes,
				      &posted, &done);
		if (got != 5 && got != 6)
			throw Error(what + ": line " + std::to_string(n) + " is malformed: '" + line + "'");
		m.host = host;
		m.bytes = bytes;
		m.posted_ns = posted;
		m.done = got == 6;
		m.done_ns = m.done ? done : 0;
		if (m.done && m.done_ns < m.posted_ns)
			throw Error(what + ": line " + std::to_string(n) + " completes before it was posted");
		out.push_back(m);
	}
	if (n == 0)
		throw Error(what + ": empty");
	return out;
}

DpFct dp_fct(const std::vector<DpMessage> &msgs, std::uint64_t end_ns)
{
	DpFct f;
	std::vector<double> ms;
	for (const auto &m : msgs) {
		if (m.done) {
			ms.push_back(double(m.done_ns - m.posted_ns) / 1e6);
			continue;
		}
		f.unfinished++;
		if (end_ns > m.posted_ns)
			f.unfinished_age_ms = std::max(f.unfinished_age_ms, double(end_ns - m.posted_ns) / 1e6);
	}
	f.completed = ms.size();
	if (!ms.empty()) {
		f.p50_ms = percentile(ms, 0.5);
		f.p99_ms = percentile(ms, 0.99);
		f.max_ms = *std::max_element(ms.begin(), ms.end());
	}
	return f;
}

double dp_imbalance(const std::vector<QueueTick> &ticks, const std::vector<std::vector<std::size_t>> &groups,
		    std::uint64_t from_ns, std::uint64_t to_ns)
{
	const QueueTick *a = nullptr, *b = nullptr;
	for (const auto &t : ticks) {
		if (t.t_ns < from_ns || t.t_ns > to_ns)
			continue;
		if (!a)
			a = &t;
		b = &t;
	}
	double worst = 0;
	if (!a || a == b)
		return 0;
	for (const auto &g : groups) {
		std::vector<double> sent;
		for (std::size_t i : g)
			if (i < a->ports.size() && i < b->ports.size())
				sent.push_back(double(b->ports[i].deq_bytes - a->ports[i].deq_bytes));
		double sum = 0;
		for (double x : sent)
			sum += x;
		if (sent.empty() || sum <= 0)
			continue;
		worst = std::max(worst, *std::max_element(sent.begin(), sent.end()) / (sum / double(sent.size())));
	}
	return worst;
}

DpQueue dp_queue(const std::vector<QueueTick> &ticks, const std::vector<std::size_t> &ports)
{
	std::vector<double> kb;
	for (const auto &t : ticks)
		for (std::size_t i : ports)
			if (i < t.ports.size())
				kb.push_back(double(t.ports[i].qlen_bytes) / 1e3);
	DpQueue q;
	if (!kb.empty()) {
		q.p99_kb = percentile(kb, 0.99);
		q.max_kb = *std::max_element(kb.begin(), kb.end());
	}
	return q;
}

DpDeadLink dp_dead_link(const std::vector<std::pair<std::uint64_t, std::uint64_t>> &samples, std::uint64_t quiet_ns)
{
	DpDeadLink d;
	if (samples.empty())
		return d;
	const auto &first = samples.front();
	std::uint64_t last_growth = first.first;
	for (std::size_t i = 1; i < samples.size(); i++)
		if (samples[i].second > samples[i - 1].second)
			last_growth = samples[i].first;
	d.total = samples.back().second - first.second;
	d.last_ms = double(last_growth - first.first) / 1e6;
	d.stopped = samples.back().first - last_growth >= quiet_ns;
	return d;
}

std::string find_lumen_dp(const std::string &exe)
{
	if (const char *env = std::getenv("LUMEN_DP_BIN"); env && *env) {
		if (::access(env, X_OK) != 0)
			throw Error(std::string("LUMEN_DP_BIN=") + env + " is not an executable");
		return env;
	}
	const std::string dir = exe.substr(0, exe.rfind('/'));
	for (const std::string &p : {dir + "/lumen-dp", dir + "/../dpdk/app/lumen-dp"})
		if (::access(p.c_str(), X_OK) == 0)
			return p;
	throw Error("no lumen-dp next to " + exe + " or in the build tree (" + dir +
		    "/../dpdk/app/lumen-dp); build it (needs libdpdk-dev) or set LUMEN_DP_BIN");
}

DpLayout port_layout(const std::vector<PortInfo> &ports, std::uint32_t leaves)
{
	DpLayout l;
	l.uplink_groups.resize(leaves);
	for (std::size_t i = 0; i < ports.size(); i++) {
		unsigned leaf = 0, spine = 0;
		char next = 0;
		if (std::sscanf(ports[i].name.c_str(), "spine%u->leaf%u", &spine, &leaf) == 2)
			l.spine_ports.push_back(i);
		else if (std::sscanf(ports[i].name.c_str(), "leaf%u->spine%u", &leaf, &spine) == 2 && leaf >= 1 &&
			 leaf <= leaves) {
			l.uplinks.push_back(i);
			l.uplink_groups[leaf - 1].push_back(i);
		} else if (std::sscanf(ports[i].name.c_str(), "leaf%u->%c", &leaf, &next) == 2)
			l.downlinks.push_back(i); // towards a host
	}
	return l;
}

DpPlan prepare_dp_plan(const ExperimentSpec &spec_in, const RunOptions &opts)
{
	if (!opts.hosts_file.empty() || !opts.vm_kernel.empty())
		throw UsageError(spec_in.name + " is a datapath experiment (lumen-dp): it runs on this machine's "
						"namespace testbed, not with --hosts or --vm");
	install_interrupt_handlers();
	DpPlan plan;
	plan.spec = resolve_experiment(spec_in, opts);
	for (const auto &p : plan.spec.algorithms)
		if (!is_path_policy(p))
			throw UsageError("'" + p + "' is not a path policy (" + path_policy_list() + ")");
	plan.topo = parse_topology(plan.spec.topology_json);
	if (opts.rate_mbps)
		plan.topo.fabric_link.rate_mbps = plan.topo.host_link.rate_mbps = *opts.rate_mbps;
	if (opts.delay_ns) { // the fabric's: DPDK hosts' own links cannot be delayed
		RunOptions delay_only;
		delay_only.delay_ns = opts.delay_ns;
		apply_link_overrides(plan.topo, delay_only);
	}
	require_root();
	preflight_common();
	plan.lumen_dp = find_lumen_dp(self_exe());
	const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
	plan.lcore = cores - 1; // lumen-dp busy-polls the last core; the routers forward on the others
	plan.dir = opts.out_dir.empty() ? default_out_dir(plan.spec) : opts.out_dir;
	prepare_out_dir(plan.dir);
	make_dirs(plan.dir + "/raw");
	return plan;
}

std::vector<std::string> lumen_dp_hosts_argv(const DpPlan &plan, const Testbed &tb, const std::string &mode,
					     const std::string &prefix)
{
	std::vector<std::string> a = {
		plan.lumen_dp,	     "--no-huge",     "--no-pci", "-m", "1024", "-l", std::to_string(plan.lcore),
		"--log-level=error", "--file-prefix", prefix};
	std::vector<std::string> hosts;
	std::size_t port = 0;
	for (const auto &h : tb.hosts()) {
		a.push_back("--vdev");
		a.push_back("net_af_packet" + std::to_string(port) + ",iface=" + h.dev +
			    ",framecnt=2048,qdisc_bypass=1");
		hosts.push_back("--host");
		hosts.push_back(std::to_string(port) + "," + h.addr + "," + h.gateway_mac);
		port++;
	}
	a.push_back("--");
	a.push_back(mode);
	a.insert(a.end(), hosts.begin(), hosts.end());
	// PowerTCP's, HPCC's and TIMELY's HostBw is the testbed's host link, not
	// lumen-dp's default NIC (25 Gbit/s: a host BDP, beta and W_AI ~100x too
	// large on a 200 Mbit/s fabric), and tau the smallest RTT a flow sees
	// (the testbed's ping RTT is the kernel's, not lumen-dp's own path)
	if (plan.spec.datapath.cc != "dctcp" && plan.topo.host_link.rate_mbps) {
		a.push_back("--host-bw-mbps");
		a.push_back(std::to_string(plan.topo.host_link.rate_mbps));
		a.push_back("--base-rtt-us");
		a.push_back("0");
	}
	return a;
}

void set_link(const TopologySpec &topo, std::uint32_t leaf, std::uint32_t spine, bool up)
{
	run_checked({"ip", "-n", testbed_netns(topo.name, "leaf" + std::to_string(leaf)), "link", "set",
		     "spine" + std::to_string(spine), up ? "up" : "down"});
}

// After a failure run: the link up again and forwarding (the leaf's
// multipath route takes the nexthop back when the carrier returns). What
// its two switch ports had queued when it went down was dropped by the
// kernel and is still counted as queued: above the ECN threshold the port
// would mark every packet of the later runs, above the buffer drop them
// all. Nothing runs now, so the ports are healed (heal_switch_ports).
void restore_link(const TopologySpec &topo, std::uint32_t leaf, std::uint32_t spine)
{
	set_link(topo, leaf, spine, true);
	const std::string leaf_ns = testbed_netns(topo.name, "leaf" + std::to_string(leaf)),
			  spine_ns = testbed_netns(topo.name, "spine" + std::to_string(spine));
	for (const SwitchPort &p : list_switch_ports(false))
		if ((p.dev_netns == leaf_ns && p.dev == "spine" + std::to_string(spine)) ||
		    (p.dev_netns == spine_ns && p.dev == "leaf" + std::to_string(leaf))) {
			SwitchPortSelector sel;
			sel.id = p.id;
			heal_switch_ports(sel);
		}
	const std::string peer =
		"10." + std::to_string(100 + spine) + "." + std::to_string(leaf) + ".2"; // the spine's end
	for (int i = 0; i < 100; i++) {
		if (run_process({"ip", "netns", "exec", testbed_netns(topo.name, "leaf" + std::to_string(leaf)), "ping",
				 "-n", "-q", "-c", "1", "-W", "1", peer})
			    .status == 0)
			return;
		sleep_interruptible_ns(100 * kMs);
	}
	throw Error("the link leaf" + std::to_string(leaf) + "-spine" + std::to_string(spine) +
		    " does not forward again after the failure run");
}

std::uint64_t heal_idle_ports()
{
	sleep_interruptible_ns(100 * kMs);
	SwitchPortSelector all;
	all.all = true;
	std::uint64_t healed = 0;
	for (const SwitchPortHealed &h : heal_switch_ports(all))
		healed += h.bytes;
	return healed;
}

std::string tail_of(const std::string &path)
{
	std::string t;
	try {
		t = read_file(path);
	} catch (const Error &) {
		return "(no output)";
	}
	return t.size() > 800 ? "..." + t.substr(t.size() - 800) : t;
}

std::string dp_fmt(const char *f, double v)
{
	char b[64];
	std::snprintf(b, sizeof(b), f, v);
	return b;
}

namespace
{

constexpr std::uint64_t kSampleNs = 10 * kMs;
constexpr std::uint64_t kDpStartLeadNs = 3 * kSec; // EAL and 2 x hosts af_packet ports
constexpr std::uint64_t kGraceNs = 30 * kSec;
constexpr std::uint64_t kQuietNs = 500 * kMs; // "stopped sending into the dead link"
constexpr unsigned kLeafSpineHops = 3; // switch egress ports between hosts on different leaves

// rx and tx packets per device of a namespace (/proc/net/dev, read from
// inside it: no process per sample).
std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> netdev_packets(const Netns &ns)
{
	std::string text;
	{
		NetnsGuard in(ns);
		text = read_file("/proc/thread-self/net/dev");
	}
	std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> out;
	std::istringstream lines(text);
	std::string line;
	while (std::getline(lines, line)) {
		std::size_t colon = line.find(':');
		if (colon == std::string::npos)
			continue;
		std::string dev = line.substr(0, colon);
		dev.erase(0, dev.find_first_not_of(' '));
		unsigned long long v[10] = {};
		if (std::sscanf(line.c_str() + colon + 1, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
				&v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]) == 10)
			out[dev] = {v[1], v[9]};
	}
	return out;
}

// What enters spine S from the leaves other than L and does not leave it
// towards them: what it tries to send to leaf L over the dead link.
std::uint64_t dead_link_packets(const Netns &spine, std::uint32_t dead_leaf, std::uint32_t leaves)
{
	auto c = netdev_packets(spine);
	std::uint64_t in = 0, out = 0;
	for (std::uint32_t m = 1; m <= leaves; m++) {
		if (m == dead_leaf)
			continue;
		auto it = c.find("leaf" + std::to_string(m));
		if (it != c.end()) {
			in += it->second.first;
			out += it->second.second;
		}
	}
	return in > out ? in - out : 0;
}

struct DpRun {
	std::string case_name, policy;
	json summary;
	std::vector<DpMessage> msgs;
	std::vector<QueueTick> ticks;
	std::vector<std::pair<std::uint64_t, std::uint64_t>> dead;
	std::uint64_t start_ns = 0, end_ns = 0, fail_ns = 0;
	DpFct fct;
	double imbalance = 0;
	DpQueue spine_q, uplink_q;
	DpDeadLink dead_link;
	std::uint64_t healed_bytes = 0; // switch port counts the run left off (heal_idle_ports)
};

std::vector<std::string> lumen_dp_argv(const DpPlan &plan, const Testbed &tb, const std::string &policy,
				       const std::string &prefix, std::uint64_t start_at, const std::string &raw)
{
	const DatapathSpec &dp = plan.spec.datapath;
	std::vector<std::string> a = lumen_dp_hosts_argv(plan, tb, "hosts", prefix);
	char seconds[32];
	std::snprintf(seconds, sizeof(seconds), "%.3f", double(plan.spec.duration_ns) / 1e9);
	for (const std::string &s : {std::string("--pattern"),	dp.pattern,
				     std::string("--shift"),	std::to_string(plan.topo.hosts_per_leaf),
				     std::string("--path"),	policy,
				     std::string("--cc"),	dp.cc,
				     std::string("--seed"),	std::to_string(dp.seed),
				     std::string("--msgs"),	std::string("0"),
				     std::string("--msg-size"), std::to_string(dp.message_size),
				     std::string("--time"),	std::string(seconds),
				     std::string("--start-at"), std::to_string(start_at),
				     std::string("--json"),	raw + ".json",
				     std::string("--fct-csv"),	raw + ".csv"})
		a.push_back(s);
	// PowerTCP and HPCC run on INT: DATA asks the switch ports on its way
	// (leaf uplink, spine, leaf downlink) for a hop record each
	if (dp.cc == "powertcp" || dp.cc == "hpcc") {
		a.push_back("--int-slots");
		a.push_back(std::to_string(kLeafSpineHops));
	}
	return a;
}

DpRun run_one(const DpPlan &plan, const Testbed &tb, QueueSource &queue, const std::string &case_name,
	      const std::string &policy, std::size_t index, std::size_t total)
{
	const DatapathSpec &dp = plan.spec.datapath;
	const bool fail = case_name == "failure";
	DpRun r;
	r.case_name = case_name;
	r.policy = policy;
	const std::string tag = case_name + "-" + policy, raw = plan.dir + "/raw/" + tag, log = raw + ".log";
	const std::string prefix = "lumen-x-" + std::to_string(::getpid()) + "-" + std::to_string(index);
	const std::uint64_t start_at = monotonic_ns() + kDpStartLeadNs;
	progress("[" + plan.spec.name + "] run " + std::to_string(index + 1) + "/" + std::to_string(total) + ": " +
		 case_name + ", " + policy);

	ChildSet procs;
	procs.add(tb.spawn(tb.hosts().front(), lumen_dp_argv(plan, tb, policy, prefix, start_at, raw), log, log),
		  "lumen-dp " + tag);
	std::optional<Netns> spine;
	if (fail)
		spine.emplace(open_netns(testbed_netns(plan.topo.name, "spine" + std::to_string(dp.fail_spine))));
	const std::uint64_t end = start_at + plan.spec.duration_ns, deadline = end + kGraceNs;
	std::uint64_t next_progress = start_at + kSec;
	std::vector<QueueTick> warmup;
	while (procs.poll() > 0) {
		const std::uint64_t now = monotonic_ns();
		if (now > deadline)
			throw Error("lumen-dp " + tag + " did not end " + std::to_string(kGraceNs / kSec) +
				    " s after its time; output: " + tail_of(log));
		if (now >= start_at)
			queue.poll(r.ticks);
		if (fail && !r.fail_ns && now >= start_at + dp.fail_at_ns) {
			set_link(plan.topo, dp.fail_leaf, dp.fail_spine, false);
			r.fail_ns = monotonic_ns();
		}
		if (r.fail_ns)
			r.dead.emplace_back(now, dead_link_packets(*spine, dp.fail_leaf, plan.topo.leaves));
		if (now >= next_progress && now < end) {
			char line[160];
			std::snprintf(line, sizeof(line), "[%s] %s, %s: %.0f/%.0f s%s", plan.spec.name.c_str(),
				      case_name.c_str(), policy.c_str(), double(now - start_at) / 1e9,
				      double(plan.spec.duration_ns) / 1e9, r.fail_ns ? " (link down)" : "");
			progress(line);
			next_progress += kSec;
		}
		sleep_interruptible_ns(kSampleNs);
	}
	if (fail)
		restore_link(plan.topo, dp.fail_leaf, dp.fail_spine);
	if (!procs.failures().empty())
		throw Error(procs.failures().front() + ": " + tail_of(log));
	try {
		r.summary = json::parse(read_file(raw + ".json"));
		r.start_ns = r.summary.at("clients_start_mono_ns").get<std::uint64_t>();
		r.end_ns = r.start_ns + std::uint64_t(r.summary.at("seconds").get<double>() * 1e9);
	} catch (const json::exception &e) {
		throw Error("lumen-dp's summary " + raw + ".json: " + e.what());
	}
	r.msgs = parse_fct_csv(read_file(raw + ".csv"), raw + ".csv");
	return r;
}

void analyse(DpRun &r, const DpLayout &lay)
{
	r.fct = dp_fct(r.msgs, r.end_ns);
	// the first tenth of the run is the start-up of every connection
	const std::uint64_t from = r.start_ns + (r.end_ns - r.start_ns) / 10;
	r.imbalance = dp_imbalance(r.ticks, lay.uplink_groups, from, r.fail_ns ? r.fail_ns : r.end_ns);
	r.spine_q = dp_queue(r.ticks, lay.spine_ports);
	r.uplink_q = dp_queue(r.ticks, lay.uplinks);
	r.dead_link = dp_dead_link(r.dead, kQuietNs);
}

json run_json(const DpRun &r)
{
	const json &t = r.summary.at("totals");
	double secs = double(r.end_ns - r.start_ns) / 1e9;
	json j = {
		{"case", r.case_name},
		{"policy", r.policy},
		{"messages", r.fct.completed},
		{"unfinished", r.fct.unfinished},
		{"healed_bytes", r.healed_bytes},
		{"unfinished_age_ms", r.fct.unfinished_age_ms},
		{"fct_ms", {{"p50", r.fct.p50_ms}, {"p99", r.fct.p99_ms}, {"max", r.fct.max_ms}}},
		{"goodput_mbps", secs > 0 ? double(t.at("bytes_delivered").get<std::uint64_t>()) * 8 / secs / 1e6 : 0},
		{"data_sent", t.at("data_sent")},
		{"retransmits", t.at("retransmits")},
		{"spurious_retransmits", t.at("dup_rcvd")},
		{"timeouts", t.at("timeouts")},
		{"ecn_echoes", t.at("ecn_echoes")},
		{"corrupt", t.at("corrupt")},
		{"uplink_imbalance", r.imbalance},
		{"spine_queue_kb", {{"p99", r.spine_q.p99_kb}, {"max", r.spine_q.max_kb}}},
		{"uplink_queue_kb", {{"p99", r.uplink_q.p99_kb}, {"max", r.uplink_q.max_kb}}}};
	if (r.fail_ns)
		j["dead_link"] = {{"packets", r.dead_link.total},
				  {"last_ms", r.dead_link.last_ms},
				  {"stopped", r.dead_link.stopped},
				  {"failed_at_s", double(r.fail_ns - r.start_ns) / 1e9}};
	return j;
}

void write_report(const DpPlan &plan, const std::vector<DpRun> &runs, std::uint64_t base_rtt_ns)
{
	json doc = {{"experiment", json::parse(experiment_to_json(plan.spec))},
		    {"topology", json::parse(topology_to_json(plan.topo))},
		    {"base_rtt_us", double(base_rtt_ns) / 1e3},
		    {"runs", json::array()}};
	std::string csv =
		"case,policy,messages,unfinished,fct_p50_ms,fct_p99_ms,fct_max_ms,unfinished_age_ms,"
		"goodput_mbps,retransmits,spurious_retransmits,timeouts,uplink_imbalance,spine_queue_p99_kb,"
		"spine_queue_max_kb,uplink_queue_p99_kb,uplink_queue_max_kb,dead_link_packets,dead_link_last_ms,"
		"dead_link_stopped\n";
	std::string fct = "case,policy,host,conn,msg,posted_s,fct_ms\n";
	std::printf("\n%-8s %-11s %6s %5s %8s %8s %8s %7s %7s %7s %6s %6s %9s %9s %8s\n", "case", "policy", "msgs",
		    "unfin", "p50 ms", "p99 ms", "max ms", "Mbit/s", "retx", "spur", "RTOs", "imbal", "spineQ99K",
		    "upQ99K", "deadpkts");
	for (const auto &r : runs) {
		json j = run_json(r);
		doc["runs"].push_back(j);
		const bool f = j.contains("dead_link");
		csv += r.case_name + "," + r.policy + "," + std::to_string(r.fct.completed) + "," +
		       std::to_string(r.fct.unfinished) + "," + dp_fmt("%.3f", r.fct.p50_ms) + "," +
		       dp_fmt("%.3f", r.fct.p99_ms) + "," + dp_fmt("%.3f", r.fct.max_ms) + "," +
		       dp_fmt("%.1f", r.fct.unfinished_age_ms) + "," + dp_fmt("%.1f", j["goodput_mbps"].get<double>()) +
		       "," + j["retransmits"].dump() + "," + j["spurious_retransmits"].dump() + "," +
		       j["timeouts"].dump() + "," + dp_fmt("%.3f", r.imbalance) + "," +
		       dp_fmt("%.1f", r.spine_q.p99_kb) + "," + dp_fmt("%.1f", r.spine_q.max_kb) + "," +
		       dp_fmt("%.1f", r.uplink_q.p99_kb) + "," + dp_fmt("%.1f", r.uplink_q.max_kb) + "," +
		       (f ? std::to_string(r.dead_link.total) : "") + "," +
		       (f ? dp_fmt("%.0f", r.dead_link.last_ms) : "") + "," +
		       (f ? (r.dead_link.stopped ? "1" : "0") : "") + "\n";
		for (const auto &m : r.msgs)
			if (m.done)
				fct += r.case_name + "," + r.policy + "," + m.host + "," + std::to_string(m.conn) +
				       "," + std::to_string(m.msg) + "," +
				       dp_fmt("%.6f", double(m.posted_ns - r.start_ns) / 1e9) + "," +
				       dp_fmt("%.3f", double(m.done_ns - m.posted_ns) / 1e6) + "\n";
		std::printf("%-8s %-11s %6llu %5llu %8.1f %8.1f %8.1f %7.1f %7s %7s %6s %6.2f %9.1f %9.1f %8s\n",
			    r.case_name.c_str(), r.policy.c_str(), (unsigned long long)r.fct.completed,
			    (unsigned long long)r.fct.unfinished, r.fct.p50_ms, r.fct.p99_ms, r.fct.max_ms,
			    j["goodput_mbps"].get<double>(), j["retransmits"].dump().c_str(),
			    j["spurious_retransmits"].dump().c_str(), j["timeouts"].dump().c_str(), r.imbalance,
			    r.spine_q.p99_kb, r.uplink_q.p99_kb,
			    f ? (std::to_string(r.dead_link.total) + (r.dead_link.stopped ? "" : "+")).c_str() : "-");
	}
	std::printf("(unfin: messages unfinished at the end; deadpkts: packets into the dead link after the "
		    "failure, + = still sending into it at the end)\n\n");
	write_file(plan.dir + "/results.json", doc.dump(2) + "\n");
	write_file(plan.dir + "/results.csv", csv);
	write_file(plan.dir + "/fct.csv", fct);
}

// gnuplot: completion-time CDFs per case (a line per policy), and the
// packets into the dead link over the time since the failure.
std::vector<PlotScript> dp_plots(const std::vector<DpRun> &runs)
{
	std::vector<PlotScript> plots;
	std::vector<std::string> cases;
	for (const auto &r : runs)
		if (std::find(cases.begin(), cases.end(), r.case_name) == cases.end())
			cases.push_back(r.case_name);
	std::string s = "set terminal pngcairo size 900," + std::to_string(360 * cases.size()) +
			" font ',10' noenhanced\nset output 'fct_cdf.png'\nset multiplot layout " +
			std::to_string(cases.size()) + ",1\n";
	std::string blocks, cmds;
	std::size_t b = 0;
	for (const auto &c : cases) {
		std::string plot;
		for (const auto &r : runs) {
			if (r.case_name != c)
				continue;
			std::vector<double> ms;
			for (const auto &m : r.msgs)
				if (m.done)
					ms.push_back(double(m.done_ns - m.posted_ns) / 1e6);
			std::sort(ms.begin(), ms.end());
			const std::string name = "$d" + std::to_string(b++);
			blocks += name + " << EOD\n";
			for (std::size_t i = 0; i < ms.size(); i++)
				blocks += dp_fmt("%.3f", ms[i]) + " " +
					  dp_fmt("%.5f", double(i + 1) / double(ms.size())) + "\n";
			blocks += "EOD\n";
			if (ms.empty())
				continue;
			plot += std::string(plot.empty() ? "plot " : ", ") + name +
				" using 1:2 with steps lw 2 title '" + r.policy + "'";
		}
		cmds += "set title 'message completion times, " + c +
			"'\nset xlabel 'completion time (ms)'\nset ylabel 'CDF'\nset key bottom right\nset grid\n" +
			(plot.empty() ? "plot 0 notitle" : plot) + "\n";
	}
	plots.push_back({"fct_cdf", "message completion times", blocks + s + cmds + "unset multiplot\n"});

	std::string dblocks, dplot;
	for (const auto &r : runs) {
		if (r.dead.empty())
			continue;
		const std::string name = "$dead" + std::to_string(b++);
		dblocks += name + " << EOD\n";
		for (const auto &[t, n] : r.dead)
			dblocks += dp_fmt("%.3f", double(t - r.dead.front().first) / 1e6) + " " +
				   std::to_string(n - r.dead.front().second) + "\n";
		dblocks += "EOD\n";
		dplot += std::string(dplot.empty() ? "plot " : ", ") + name + " using 1:2 with lines lw 2 title '" +
			 r.policy + "'";
	}
	if (!dplot.empty())
		plots.push_back({"dead_link", "packets into the failed link",
				 dblocks +
					 "set terminal pngcairo size 900,400 font ',10' noenhanced\nset output "
					 "'dead_link.png'\nset title 'packets sent into the failed link since it "
					 "failed'\nset xlabel 'time since the failure (ms)'\nset ylabel 'packets "
					 "(cumulative)'\nset key top left\nset grid\n" +
					 dplot + "\n"});
	return plots;
}

} // namespace

std::string run_dp_experiment(const ExperimentSpec &spec_in, const RunOptions &opts)
{
	DpPlan plan = prepare_dp_plan(spec_in, opts);
	const auto cases = experiment_cases(plan.spec);
	const std::size_t total = cases.size() * plan.spec.algorithms.size();
	progress("[" + plan.spec.name + "] " + std::to_string(total) + " run(s) of " +
		 dp_fmt("%.1f", double(plan.spec.duration_ns) / 1e9) + " s with lumen-dp on lcore " +
		 std::to_string(plan.lcore) + "; results in " + plan.dir);
	std::vector<DpRun> runs;
	std::uint64_t base_rtt = 0;
	{
		Testbed tb = Testbed::create(plan.topo);
		base_rtt = tb.base_rtt_ns();
		auto sampler = make_port_sampler(tb.ports());
		const DpLayout lay = port_layout(sampler->ports(), plan.topo.leaves);
		std::size_t index = 0;
		heal_idle_ports();
		for (const auto &cs : cases)
			for (const auto &policy : plan.spec.algorithms) {
				runs.push_back(run_one(plan, tb, *sampler, cs.name, policy, index++, total));
				analyse(runs.back(), lay);
				runs.back().healed_bytes = heal_idle_ports();
			}
		progress("[" + plan.spec.name + "] tearing down");
	}
	write_report(plan, runs, base_rtt);
	for (const auto &png : render_plots(dp_plots(runs), plan.dir))
		progress("[" + plan.spec.name + "] plot " + png);
	progress("[" + plan.spec.name + "] results in " + plan.dir);
	return plan.dir;
}

} // namespace lumen
