// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/experiment/experiment_run.cpp - the experiment runner (see
// experiment_run.h). The order of a run:
//   1. resolve the description, check the algorithms and tools exist, make
//      the result directory;
//   2. the fabric (experiment_fabric.h): Testbed::create (atomic), or the
//      hosts of --hosts checked and prepared over SSH (experiment_remote.h);
//      then `lumen cc load --allow` with the path's rate and base RTT if a
//      bpf_* algorithm runs (with bpf_timely: its t-low/t-high at the
//      TIMELY paper's ratios to tau), the same values as tcp_powertcp's
//      module parameters if one of its algorithms runs (powertcp,
//      theta_powertcp, hpcc: in a VM, experiment_vm.h), then `lumen int
//      enable --cgroup <the run's cgroup>` if an INT-fed algorithm runs
//      (bpf_powertcp, bpf_hpcc, powertcp, hpcc);
//   3. per case, seed and algorithm: traffic servers in the receiving hosts, then
//      clients in the sending hosts, each set up and waiting on a start
//      barrier (--start-from-input) until all are, then sent one common
//      CLOCK_MONOTONIC start in its own host's clock; the switch queues are
//      sampled every 10 ms until the clients are done; their CSVs are
//      collected (and moved into this machine's clock);
//   4. teardown in reverse (RAII, so also on errors and Ctrl-C), then the
//      result files, plots and the terminal table.
#include "experiment/experiment_run.h"

#include "base/error.h"
#include "base/interrupt.h"
#include "base/system.h"
#include "base/units.h"
#include "bpfctl/bpf_util.h"
#include "bpfctl/cc.h"
#include "bpfctl/int_sockops.h"
#include "bpfctl/switch_port.h"
#include "experiment/experiment_claims.h"
#include "experiment/experiment_collective.h"
#include "experiment/experiment_dp.h"
#include "experiment/experiment_fabric.h"
#include "experiment/experiment_kmod.h"
#include "experiment/experiment_netns.h"
#include "experiment/experiment_proc.h"
#include "experiment/experiment_remote.h"
#include "experiment/experiment_results.h"
#include "experiment/inventory.h"
#include "experiment/report.h"
#include "experiment/report_plot.h"
#include "testbed/testbed.h"

#include <bpf/bpf.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

extern "C" {
#include "lumen/bpf_shared.h"
}

namespace lumen
{

namespace
{

using nlohmann::json;

constexpr std::uint64_t kProgressNs = kSec;
constexpr std::uint64_t kMinTauNs = 200'000; // veth understates the loaded RTT
// from the start barrier (every generator ready) to the common start: one
// line to each generator over a pipe or an open SSH channel
constexpr std::uint64_t kStartLeadNs = 500 * kMs;
constexpr std::uint64_t kReadyTimeoutNs = 30 * kSec; // process start-up, over SSH on a loaded lab
constexpr std::uint64_t kMinGraceNs = 5 * kSec;
constexpr std::uint16_t kFirstPort = 5500;

// Sleeps until the absolute CLOCK_MONOTONIC time, or throws Interrupted.
void sleep_until(std::uint64_t t_ns)
{
	struct timespec ts = {static_cast<time_t>(t_ns / kSec), static_cast<long>(t_ns % kSec)};
	while (!interrupted() && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
	}
	throw_if_interrupted();
}

std::string us_text(std::uint64_t ns)
{
	return std::to_string((ns + 500) / 1000) + "us";
}

std::string seconds_text(std::uint64_t ns)
{
	char buf[32];
	std::snprintf(buf, sizeof(buf), "%.3fs", double(ns) / 1e9);
	return buf;
}

// A name for what this run creates on hosts (cgroup, work directory):
// unique per runner host and process.
std::string run_id()
{
	char host[64] = {};
	::gethostname(host, sizeof(host) - 1);
	std::string clean;
	for (char c : std::string(host))
		if (std::isalnum(static_cast<unsigned char>(c)))
			clean += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
	return "lumen-x-" + clean.substr(0, 16) + "-" + std::to_string(::getpid());
}

// ---------------------------------------------------------------------
// One run

struct ClientJob {
	std::string label, host, flows_csv, samples_csv, log; // local files
	std::string host_flows_csv, host_samples_csv; // where the host writes them
	pid_t pid = -1;
	std::uint64_t start_ns = 0; // the phase's start, from the common start
};

std::vector<HostRef> host_refs(const Fabric &fab)
{
	std::vector<HostRef> refs;
	for (const auto &h : fab.hosts())
		refs.push_back({h.name, h.role});
	return refs;
}

const FabricHost &host_named(const Fabric &fab, const std::string &name)
{
	for (const auto &h : fab.hosts())
		if (h.name == name)
			return h;
	throw Error("no host " + name);
}

std::vector<std::string> workload_args(const PhaseSpec &ph, double case_load, double load_scale)
{
	switch (ph.kind) {
	case PhaseKind::Long:
		return {"--long", std::to_string(ph.flows), "--duration", seconds_text(ph.duration_ns)};
	case PhaseKind::Poisson: {
		char load[32];
		std::snprintf(load, sizeof(load), "%g", (case_load > 0 ? case_load : ph.load) * load_scale);
		std::vector<std::string> a = {"--poisson", ph.workload,	 "--load",
					      load,	   "--duration", seconds_text(ph.duration_ns)};
		if (ph.max_flows) {
			a.push_back("--max-flows");
			a.push_back(std::to_string(ph.max_flows));
		}
		return a;
	}
	case PhaseKind::Incast:
		return {"--incast", std::to_string(ph.size_bytes), "--bursts", std::to_string(ph.bursts),
			"--period", seconds_text(ph.period_ns)};
	}
	return {};
}

// The hosts that receive in any phase (they run a server).
std::vector<std::string> receiving_hosts(const Plan &plan, Fabric &fab)
{
	std::vector<std::string> out;
	auto refs = host_refs(fab);
	for (const auto &ph : plan.spec.phases)
		for (const auto &h : expand_hosts(ph.to, refs, "phase " + ph.name + ": to"))
			if (std::find(out.begin(), out.end(), h) == out.end())
				out.push_back(h);
	return out;
}

void check_selectors(const Plan &plan, Fabric &fab)
{
	auto refs = host_refs(fab);
	for (const auto &ph : plan.spec.phases) {
		for (const auto &cs : experiment_cases(plan.spec))
			phase_senders(ph, cs, refs, plan.spec.source + ": phase " + ph.name + ": from");
		expand_hosts(ph.to, refs, plan.spec.source + ": phase " + ph.name + ": to");
	}
}

// Waits until each log has a line "ready" (servers: listening; clients:
// set up, waiting for their start time). A process's output is a local
// file wherever it runs (over SSH too), so that is what is watched.
void wait_ready(const std::vector<std::string> &logs, ChildSet &procs, const std::string &what)
{
	// not "\n" + log: GCC 12 -O3 warns, -Wrestrict, a false positive
	// (GCC PR105329)
	auto ready = [](const std::string &text) {
		return text.rfind("ready\n", 0) == 0 || text.find("\nready\n") != std::string::npos;
	};
	std::uint64_t deadline = monotonic_ns() + kReadyTimeoutNs;
	for (const auto &log : logs) {
		while (!ready(read_file(log))) {
			if (procs.poll() < procs.size())
				throw Error("a " + what + " exited early: " + procs.failures().front() + ": " +
					    read_file(log));
			if (monotonic_ns() > deadline)
				throw Error(what + " not ready after " + seconds_text(kReadyTimeoutNs) + " (see " +
					    log + ")");
			sleep_interruptible_ns(10 * kMs);
		}
	}
}

void start_servers(const Plan &plan, Fabric &fab, std::uint16_t port, const std::string &raw, ChildSet &servers)
{
	std::vector<std::string> logs;
	for (const auto &name : receiving_hosts(plan, fab)) {
		std::string log = raw + "/server-" + name + ".log";
		pid_t pid =
			fab.spawn_lumen(name, {"traffic", "server", "--port", std::to_string(port)}, log, log, false);
		servers.add(pid, "traffic server in " + name);
		logs.push_back(log);
	}
	wait_ready(logs, servers, "traffic server");
}

// Starts every traffic client, set up and waiting for its start time
// (--start-from-input), and returns once all are ready: whatever their
// start-up took (SSH, a loaded host), release_clients() then starts them
// together.
std::vector<ClientJob> spawn_clients(const Plan &plan, Fabric &fab, const std::string &algo, const ExperimentCase &cs,
				     std::uint64_t run_seed, std::uint16_t port, const std::string &raw,
				     ChildSet &clients)
{
	auto refs = host_refs(fab);
	std::vector<ClientJob> jobs;
	for (std::size_t p = 0; p < plan.spec.phases.size(); p++) {
		const PhaseSpec &ph = plan.spec.phases[p];
		auto from = phase_senders(ph, cs, refs, "phase " + ph.name + ": from");
		auto to = expand_hosts(ph.to, refs, "phase " + ph.name + ": to");
		for (std::size_t i = 0; i < from.size(); i++) {
			std::string addrs;
			for (const auto &t : to)
				if (t != from[i])
					addrs += (addrs.empty() ? "" : ",") + host_named(fab, t).addr;
			if (addrs.empty())
				throw UsageError("phase " + ph.name + ": host " + from[i] +
						 " has nobody to send to (its only destination is itself)");
			ClientJob job;
			job.label = ph.name + "." + from[i];
			job.host = from[i];
			job.flows_csv = raw + "/" + job.label + ".flows.csv";
			job.samples_csv = raw + "/" + job.label + ".samples.csv";
			job.log = raw + "/" + job.label + ".log";
			std::string dir = fab.host_dir(job.host, raw);
			job.host_flows_csv = dir + "/" + job.label + ".flows.csv";
			job.host_samples_csv = dir + "/" + job.label + ".samples.csv";
			job.start_ns = ph.start_ns;
			// the same seed for every algorithm: identical workloads
			std::uint64_t seed = traffic_seed(run_seed, p, i);
			std::vector<std::string> argv = {"traffic",	  "client",
							 "--to",	  addrs,
							 "--port",	  std::to_string(port),
							 "--cc",	  algo,
							 "--label",	  job.label,
							 "--seed",	  std::to_string(seed),
							 "--sample",	  "10ms",
							 "--link-rate",	  std::to_string(plan.path_rate_mbps),
							 "--base-rtt",	  us_text(plan.base_rtt_ns),
							 "--flows-csv",	  job.host_flows_csv,
							 "--samples-csv", job.host_samples_csv,
							 "--new-files",	  "--start-from-input",
							 "--json"};
			auto w = workload_args(ph, cs.load, plan.spec.load_scale);
			argv.insert(argv.end(), w.begin(), w.end());
			job.pid = fab.spawn_lumen(from[i], argv, raw + "/" + job.label + ".json", job.log, true);
			clients.add(job.pid, "traffic client " + job.label);
			jobs.push_back(job);
		}
	}
	std::vector<std::string> logs;
	for (const auto &job : jobs)
		logs.push_back(job.log);
	wait_ready(logs, clients, "traffic client");
	return jobs;
}

// Sends every client its start time: the common start t0 (our clock) plus
// its phase's start, in the sender's clock.
void release_clients(Fabric &fab, const std::vector<ClientJob> &jobs, std::uint64_t t0)
{
	for (const auto &job : jobs) {
		auto start_at = static_cast<std::uint64_t>(static_cast<std::int64_t>(t0 + job.start_ns) +
							   fab.clock_offset_ns(job.host));
		fab.send_input(job.pid, "start-at " + std::to_string(start_at) + "\n");
	}
}

std::string progress_line(const std::string &tag, const RunData &run, std::uint64_t now, std::uint64_t duration,
			  std::size_t running, std::size_t total)
{
	char buf[256];
	double t = now > run.t0_ns ? double(now - run.t0_ns) / 1e9 : -double(run.t0_ns - now) / 1e9;
	std::string extra;
	if (!run.queue.empty()) {
		std::vector<std::uint64_t> q = observed_queue(run);
		std::snprintf(buf, sizeof(buf), "  queue %.1f KB", double(q.back()) / 1024.0);
		extra += buf;
		int b = bottleneck_port(run);
		std::size_t n = run.queue.size();
		std::size_t back = std::min<std::size_t>(n - 1, kProgressNs / kQueueSampleNs);
		if (b >= 0 && back > 0) {
			const QueueTick &a = run.queue[n - 1 - back], &z = run.queue[n - 1];
			double mbps =
				double(z.ports[b].deq_bytes - a.ports[b].deq_bytes) * 8e3 / double(z.t_ns - a.t_ns);
			std::snprintf(buf, sizeof(buf), "  bottleneck %.0f Mbit/s", mbps);
			extra += buf;
		}
	}
	std::snprintf(buf, sizeof(buf), "%s t=%5.1f/%.0f s%s  generators running %zu/%zu", tag.c_str(), t,
		      double(duration) / 1e9, extra.c_str(), running, total);
	return buf;
}

// Samples the switch until the clients are done (or the deadline passes).
void sample_until_done(RunData &run, QueueSource &queue, ChildSet &clients, std::uint64_t duration,
		       const std::string &tag)
{
	std::uint64_t grace = std::max(kMinGraceNs, duration / 2);
	std::uint64_t deadline = run.t0_ns + duration + grace;
	std::uint64_t next = monotonic_ns(), next_progress = run.t0_ns;
	while (clients.poll() > 0) {
		sleep_until(next);
		std::uint64_t t = monotonic_ns();
		std::vector<QueueTick> ticks;
		queue.poll(ticks);
		for (auto &tick : ticks)
			if (tick.t_ns + kQueueSampleNs >= run.t0_ns) // from just before the start
				run.queue.push_back(std::move(tick));
		if (t >= next_progress) {
			progress(progress_line(tag, run, t, duration, clients.running(), clients.size()));
			next_progress += kProgressNs;
		}
		if (t > deadline) {
			progress(tag + " generators still running " + seconds_text(grace) +
				 " after the end: stopping them");
			clients.stop_all();
			break;
		}
		next += kQueueSampleNs;
		if (next < t)
			next = t; // fell behind (busy machine): do not burst
	}
}

// A time of the host's CLOCK_MONOTONIC in ours (0 stays "none").
std::uint64_t to_local_clock(std::uint64_t t_ns, std::int64_t offset_ns)
{
	return t_ns == 0 ? 0 : static_cast<std::uint64_t>(static_cast<std::int64_t>(t_ns) - offset_ns);
}

void collect_client_output(RunData &run, Fabric &fab, const std::vector<ClientJob> &jobs, const ChildSet &clients)
{
	std::vector<std::string> missing;
	for (const auto &job : jobs) {
		std::int64_t offset = fab.clock_offset_ns(job.host);
		if (!fab.fetch(job.host, job.host_flows_csv, job.flows_csv)) {
			std::string log = path_exists(job.log) ? read_file(job.log) : "";
			missing.push_back(job.label + ": " + (log.empty() ? "no output" : log));
			continue;
		}
		auto flows = parse_flows_csv(read_file(job.flows_csv), job.flows_csv);
		for (auto &f : flows) {
			f.start_ns = to_local_clock(f.start_ns, offset);
			f.end_ns = to_local_clock(f.end_ns, offset);
		}
		run.flows.insert(run.flows.end(), flows.begin(), flows.end());
		if (fab.fetch(job.host, job.host_samples_csv, job.samples_csv)) {
			auto samples = parse_samples_csv(read_file(job.samples_csv), job.samples_csv);
			for (auto &smp : samples)
				smp.t_ns = to_local_clock(smp.t_ns, offset);
			run.samples.insert(run.samples.end(), samples.begin(), samples.end());
		}
	}
	run.client_failures = static_cast<int>(clients.failures().size());
	if (!missing.empty() && missing.size() == jobs.size())
		throw Error("no traffic generator of run " + run.algo + "/" + run.case_name +
			    " wrote results; first: " + missing.front());
	for (const auto &m : missing)
		progress("  warning: no flows.csv from " + m);
}

std::vector<IncastInfo> incast_infos(const Plan &plan, Fabric &fab, std::uint64_t t0)
{
	std::vector<IncastInfo> out;
	for (const auto &ph : plan.spec.phases) {
		if (ph.kind != PhaseKind::Incast)
			continue;
		IncastInfo i;
		i.phase = ph.name;
		i.fan_in = static_cast<std::uint32_t>(expand_hosts(ph.from, host_refs(fab), ph.name).size());
		i.size_bytes = ph.size_bytes;
		i.start_ns = t0 + ph.start_ns;
		i.period_ns = ph.period_ns;
		i.bursts = ph.bursts;
		out.push_back(i);
	}
	return out;
}

std::uint64_t traffic_end(const ExperimentSpec &spec)
{
	std::uint64_t end = 0;
	for (const auto &ph : spec.phases)
		if (ph.kind != PhaseKind::Incast)
			end = std::max(end, ph.end_ns());
	return end;
}

RunData run_once(const Plan &plan, Fabric &fab, const std::string &algo, const ExperimentCase &cs, std::uint64_t seed,
		 std::size_t index, std::size_t total, std::uint64_t healed_bytes)
{
	const bool seeded = plan.spec.seeds.size() > 1;
	std::string seed_tag = seeded ? " seed " + std::to_string(seed) : "";
	char tag_buf[160];
	std::snprintf(tag_buf, sizeof(tag_buf), "[%s %zu/%zu %s%s%s%s]", plan.spec.name.c_str(), index + 1, total,
		      algo.c_str(), cs.name == "run" ? "" : " ", cs.name == "run" ? "" : cs.name.c_str(),
		      seed_tag.c_str());
	std::string tag = tag_buf;
	std::string raw = plan.dir + "/raw/" + algo + "-" + cs.name + (seeded ? "-s" + std::to_string(seed) : "");
	make_dirs(raw);
	auto port = static_cast<std::uint16_t>(kFirstPort + index);

	RunData run;
	run.algo = algo;
	run.case_name = cs.name;
	run.seed = seed;
	run.load = cs.load;
	run.warmup_ns = plan.spec.warmup_ns;
	run.traffic_end_ns = traffic_end(plan.spec);
	run.ports = fab.queue().ports();
	run.healed_bytes = healed_bytes;
	if (healed_bytes)
		progress(tag + " the switch ports still counted " + std::to_string(healed_bytes) +
			 " bytes as queued after the last run: drift, healed (healed_bytes in summary.json)");

	progress(tag + " starting traffic servers and generators");
	ChildSet servers, clients;
	start_servers(plan, fab, port, raw, servers); // returns once every server is ready
	auto jobs = spawn_clients(plan, fab, algo, cs, seed, port, raw, clients); // the start barrier
	run.t0_ns = monotonic_ns() + kStartLeadNs;
	run.incasts = incast_infos(plan, fab, run.t0_ns);
	release_clients(fab, jobs, run.t0_ns);
	sample_until_done(run, fab.queue(), clients, plan.spec.duration_ns, tag);
	servers.stop_all();
	fab.end_run();
	std::uint64_t sampled =
		run.queue.empty() || run.queue.back().t_ns < run.t0_ns ? 0 : run.queue.back().t_ns - run.t0_ns;
	run.length_ns = std::max(plan.spec.duration_ns, sampled);
	collect_client_output(run, fab, jobs, clients);
	progress(tag + " done: " + std::to_string(run.flows.size()) + " flows, " +
		 std::to_string(clients.failures().size()) + " generator(s) reported incomplete flows");
	return run;
}

// Waits (up to 3 s) for the queues of the previous run to empty.
void settle(QueueSource &queue)
{
	std::uint64_t deadline = monotonic_ns() + 3 * kSec;
	std::vector<QueueTick> ticks;
	while (monotonic_ns() < deadline) {
		ticks.clear();
		queue.poll(ticks);
		if (!ticks.empty() && std::all_of(ticks.back().ports.begin(), ticks.back().ports.end(),
						  [](const PortCounters &c) { return c.qlen_bytes == 0; }))
			break;
		if (queue.ports().empty())
			break; // nothing to watch
		sleep_interruptible_ns(50 * kMs);
	}
	sleep_interruptible_ns(300 * kMs);
}

// ---------------------------------------------------------------------
// Setup

std::uint32_t path_rate(const TopologySpec &t)
{
	std::uint32_t r = t.host_link.rate_mbps;
	if (t.kind == TopologyKind::LeafSpine)
		return std::min(r, t.fabric_link.rate_mbps);
	return std::min(r, t.bottleneck.rate_mbps);
}

} // namespace

// --rate (e.g. one an emulated VM can fill) and --delay (e.g. a BDP of
// more packets than a namespace testbed's microseconds give).
void apply_link_overrides(TopologySpec &topo, const RunOptions &opts)
{
	if (!opts.rate_mbps && !opts.delay_ns)
		return;
	TopologySpec t = topo;
	LinkSpec &link = t.kind == TopologyKind::LeafSpine ? t.fabric_link : t.bottleneck;
	if (opts.rate_mbps)
		link.rate_mbps = *opts.rate_mbps;
	if (opts.delay_ns)
		link.delay_ns = *opts.delay_ns;
	try {
		validate_topology(t);
	} catch (const UsageError &e) {
		const char *what = !opts.delay_ns ? "--rate: " : opts.rate_mbps ? "--rate/--delay: " : "--delay: ";
		throw UsageError(what + std::string(e.what()));
	}
	topo = t;
}

namespace
{

TopologySpec topology_for_run(const ExperimentSpec &spec, const RunOptions &opts)
{
	TopologySpec topo;
	try {
		topo = parse_topology(spec.topology_json);
	} catch (const UsageError &e) {
		throw UsageError(spec.source + ": topology: " + e.what());
	}
	apply_link_overrides(topo, opts);
	// a name of our own, so concurrent runs (and other testbeds) never clash
	char name[16];
	std::snprintf(name, sizeof(name), "x%x", static_cast<unsigned>(::getpid()) & 0xfffffff);
	topo.name = name;
	return topo;
}

// `lumen cc load` parameters: the PowerTCP core's host-bw and base-rtt
// (host-bw is TIMELY's line rate too), TIMELY's thresholds scaled to tau
// when it runs, then the experiment's own.
std::vector<std::string> cc_params(const Plan &plan)
{
	std::vector<std::string> params = {"host-bw=" + std::to_string(plan.path_rate_mbps),
					   "base-rtt=" + us_text(plan.tau_ns)};
	if (plan.timely_t_low_ns) {
		params.push_back("t-low=" + us_text(plan.timely_t_low_ns));
		params.push_back("t-high=" + us_text(plan.timely_t_high_ns));
	}
	for (const auto &[k, v] : plan.spec.cc_params)
		params.push_back(k + "=" + v);
	return params;
}

// The algorithms whose window follows INT echoes: they need the sockops
// program that requests and echoes INT on the testbed's sockets.
bool needs_int(const std::string &algo)
{
	return algo == "bpf_powertcp" || algo == "powertcp" || algo == "bpf_hpcc" || algo == "hpcc";
}

bool is_bpf_timely(const std::string &algo)
{
	return algo == "bpf_timely";
}

} // namespace

void progress(const std::string &line)
{
	std::fprintf(stderr, "%s\n", line.c_str());
	std::fflush(stderr);
}

std::string default_out_dir(const ExperimentSpec &spec)
{
	return "results/" + spec.name + "-" + utc_timestamp("%Y%m%dT%H%M%SZ");
}

void prepare_out_dir(const std::string &dir)
{
	make_dirs(dir);
	if (DIR *d = ::opendir(dir.c_str())) {
		bool empty = true;
		while (struct dirent *e = ::readdir(d))
			if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
				empty = false;
		::closedir(d);
		if (!empty)
			throw UsageError("--out " + dir + " exists and is not empty; choose a new directory");
	}
}

std::string experiments_dir()
{
	const char *env = std::getenv("LUMEN_DATA_DIR");
	if (env && *env)
		return std::string(env) + "/experiments";
	return std::string(LUMEN_SOURCE_DIR) + "/experiments";
}

std::string find_experiment_file(const std::string &name_or_path)
{
	bool is_path = name_or_path.find('/') != std::string::npos ||
		       (name_or_path.size() > 5 && name_or_path.compare(name_or_path.size() - 5, 5, ".json") == 0);
	std::string path = is_path ? name_or_path : experiments_dir() + "/" + name_or_path + ".json";
	if (!path_exists(path)) {
		if (is_path)
			throw UsageError("no experiment file " + path);
		throw UsageError("no built-in experiment '" + name_or_path + "' (no " + path +
				 "; 'lumen experiment list' shows them; set LUMEN_DATA_DIR to the directory holding "
				 "experiments/)");
	}
	return path;
}

ExperimentSpec load_experiment(const std::string &name_or_path)
{
	std::string path = find_experiment_file(name_or_path);
	return parse_experiment(read_file(path), path);
}

ExperimentSpec resolve_experiment(const ExperimentSpec &spec, const RunOptions &opts)
{
	ExperimentSpec s = spec;
	if (opts.duration_ns)
		s = scale_to_duration(s, *opts.duration_ns);
	else if (opts.smoke)
		s = scale_to_duration(s, s.smoke_duration_ns);
	if (!opts.algorithms.empty())
		s.algorithms = opts.algorithms;
	if (!opts.seeds.empty())
		s.seeds = opts.seeds;
	if (opts.smoke && s.seeds.size() > 1)
		s.seeds = std::vector<std::uint64_t>{s.seeds.front()}; // not resize(1): GCC 12 -Warray-bounds
	return s;
}

std::uint64_t timely_t_low_ns(std::uint64_t tau_ns)
{
	return static_cast<std::uint64_t>(std::llround(double(tau_ns) * kTimelyTLowPerTau));
}

std::uint64_t timely_t_high_ns(std::uint64_t tau_ns)
{
	return static_cast<std::uint64_t>(std::llround(double(tau_ns) * kTimelyTHighPerTau));
}

std::vector<ExperimentSpec> suite_members(const ExperimentSpec &suite, bool smoke)
{
	std::string dir = suite.source.substr(0, suite.source.rfind('/') + 1);
	std::vector<ExperimentSpec> out;
	for (const auto &m : suite.suite) {
		std::string path = dir + m + ".json";
		if (!path_exists(path))
			throw UsageError(suite.source + ": suite: no member experiment " + path);
		ExperimentSpec s = parse_experiment(read_file(path), path);
		if (s.is_suite() || s.datapath.enabled)
			throw UsageError(suite.source + ": suite: " + path +
					 " is not a TCP experiment (suites hold TCP experiments only)");
		if (smoke && !suite.suite_smoke.members.empty() &&
		    std::find(suite.suite_smoke.members.begin(), suite.suite_smoke.members.end(), s.name) ==
			    suite.suite_smoke.members.end())
			continue;
		if (!suite.algorithms.empty())
			s.algorithms = suite.algorithms;
		s.seeds = suite.seeds;
		if (smoke && !suite.suite_smoke.algorithms.empty())
			s.algorithms = suite.suite_smoke.algorithms;
		if (smoke && !suite.suite_smoke.loads.empty() && !s.loads.empty()) {
			std::vector<double> keep;
			for (double l : s.loads)
				if (std::find(suite.suite_smoke.loads.begin(), suite.suite_smoke.loads.end(), l) !=
				    suite.suite_smoke.loads.end())
					keep.push_back(l);
			if (!keep.empty())
				s.loads = keep;
		}
		out.push_back(s);
	}
	for (const auto &m : suite.suite_smoke.members)
		if (std::none_of(out.begin(), out.end(), [&m](const ExperimentSpec &s) { return s.name == m; }))
			throw UsageError(suite.source + ": smoke.members: '" + m + "' is not the name of a member");
	return out;
}

std::string run_experiment(const ExperimentSpec &spec_in, const RunOptions &opts)
{
	if (spec_in.datapath.enabled && spec_in.datapath.collective_study)
		return run_collective_experiment(spec_in, opts);
	if (spec_in.datapath.enabled)
		return run_dp_experiment(spec_in, opts);
	if (spec_in.is_suite())
		return run_suite(spec_in, opts);
	std::vector<RunSummary> sums;
	return run_tcp_experiment(spec_in, opts, sums);
}

std::string run_tcp_experiment(const ExperimentSpec &spec_in, const RunOptions &opts, std::vector<RunSummary> &sums)
{
	install_interrupt_handlers();
	Plan plan;
	plan.spec = resolve_experiment(spec_in, opts);
	plan.exe = self_exe();
	std::optional<Inventory> inventory;
	std::optional<TopologySpec> topo;
	if (!opts.hosts_file.empty()) {
		inventory = load_inventory(opts.hosts_file);
		preflight_common();
		plan.path_rate_mbps = inventory->path_rate_mbps;
	} else {
		topo = topology_for_run(plan.spec, opts);
		preflight_testbed(plan.spec);
		plan.path_rate_mbps = path_rate(*topo);
	}
	plan.dir = opts.out_dir.empty() ? default_out_dir(plan.spec) : opts.out_dir;
	prepare_out_dir(plan.dir);

	auto cases = experiment_cases(plan.spec);
	std::size_t total = cases.size() * plan.spec.seeds.size() * plan.spec.algorithms.size();
	progress("[" + plan.spec.name + "] " + std::to_string(total) + " run(s) of " +
		 seconds_text(plan.spec.duration_ns) + "; results in " + plan.dir);

	std::vector<RunData> runs;
	std::vector<KmodRunCounters> kmod_counters; // one per run
	{
		std::unique_ptr<Fabric> fabric;
		if (inventory) {
			make_dirs(plan.dir + "/raw");
			fabric = connect_hosts(*inventory, plan.spec, run_id(), plan.dir + "/raw", progress);
		} else {
			fabric = make_netns_fabric(*topo, plan.exe, plan.path_rate_mbps);
		}
		Fabric &fab = *fabric;
		plan.base_rtt_ns = fab.base_rtt_ns();
		plan.tau_ns = std::max(plan.base_rtt_ns, kMinTauNs);
		if (uses(plan.spec, is_bpf_timely)) {
			plan.timely_t_low_ns = timely_t_low_ns(plan.tau_ns);
			plan.timely_t_high_ns = timely_t_high_ns(plan.tau_ns);
		}
		check_selectors(plan, fab); // before anything runs

		AlgorithmSetup setup;
		setup.algorithms = plan.spec.algorithms;
		if (uses(plan.spec, is_bpf_algorithm))
			setup.bpf_params = cc_params(plan);
		if (uses(plan.spec, is_kmod_algorithm)) {
			setup.kmod_params = kmod_param_values(plan.path_rate_mbps, plan.tau_ns, plan.spec.cc_params);
			plan.kmod_params = std::map<std::string, std::string>(setup.kmod_params->begin(),
									      setup.kmod_params->end());
		}
		setup.int_sockops = uses(plan.spec, needs_int);
		setup.int_wide = plan.spec.int_version == LUMEN_INT_VERSION_WIDE;
		fab.load_algorithms(setup);
		write_file(plan.dir + "/config.json", config_json(plan, opts, fab, runs).dump(2) + "\n");

		std::size_t index = 0;
		for (const auto &cs : cases)
			for (std::uint64_t seed : plan.spec.seeds)
				for (const auto &algo : plan.spec.algorithms) {
					std::uint64_t healed = 0;
					if (index > 0) {
						settle(fab.queue());
						healed = fab.heal_idle_queues();
					}
					KmodRunCounters before;
					if (is_kmod_algorithm(algo))
						before = fab.kmod_stats();
					runs.push_back(run_once(plan, fab, algo, cs, seed, index++, total, healed));
					kmod_counters.push_back(
						before ? KmodRunCounters(kmod_counters_delta(*before, fab.kmod_stats()))
						       : std::nullopt);
				}
		write_file(plan.dir + "/config.json", config_json(plan, opts, fab, runs).dump(2) + "\n");
		progress("[" + plan.spec.name + "] tearing down");
	}
	sums = write_results(plan, runs, kmod_counters);
	return plan.dir;
}

std::string run_suite(const ExperimentSpec &suite, const RunOptions &opts)
{
	if (!opts.hosts_file.empty())
		throw UsageError(suite.name +
				 " is a suite of experiments on their own testbeds: --hosts does not apply");
	std::vector<ExperimentSpec> members = suite_members(suite, opts.smoke);
	std::string dir = opts.out_dir.empty() ? default_out_dir(suite) : opts.out_dir;
	prepare_out_dir(dir);
	json cfg;
	cfg["suite"] = json::parse(experiment_to_json(suite));
	cfg["options"] = {{"smoke", opts.smoke},
			  {"algorithms_override", opts.algorithms},
			  {"seeds_override", opts.seeds},
			  {"rate_override_mbps", opts.rate_mbps ? json(*opts.rate_mbps) : json(nullptr)},
			  {"delay_override_us", opts.delay_ns ? json(double(*opts.delay_ns) / 1e3) : json(nullptr)}};
	cfg["members"] = json::array();
	for (const auto &m : members)
		cfg["members"].push_back({{"name", m.name}, {"source", m.source}, {"dir", m.name}});
	cfg["lumen_version"] = lumen_version();
	cfg["started_utc"] = utc_timestamp("%Y-%m-%dT%H:%M:%SZ");
	write_file(dir + "/suite.json", cfg.dump(2) + "\n");
	progress("[" + suite.name + "] " + std::to_string(members.size()) + " experiment(s); results in " + dir);

	std::map<std::string, std::vector<RunSummary>> by_member;
	for (const auto &m : members) {
		RunOptions mo = opts;
		mo.out_dir = dir + "/" + m.name;
		progress("[" + suite.name + "] experiment " + m.name);
		run_tcp_experiment(m, mo, by_member[m.name]);
	}
	auto results = evaluate_claims(suite.claims, by_member);
	json cj = claims_to_json(results);
	cj["suite"] = suite.name;
	cj["smoke"] = opts.smoke;
	write_file(dir + "/claims.json", cj.dump(2) + "\n");
	write_file(dir + "/claims.csv", claims_csv(results));
	std::string table = claims_table(results);
	write_file(dir + "/claims.txt", table);
	std::printf("\n%s: %s\n\nthe thesis' claims: relative difference of algo vs the other (negative: lower)\n\n%s\n"
		    "results: %s/ (suite.json claims.json claims.csv claims.txt, one directory per experiment)\n",
		    suite.name.c_str(), suite.description.c_str(), table.c_str(), dir.c_str());
	std::fflush(stdout);
	return dir;
}

} // namespace lumen
