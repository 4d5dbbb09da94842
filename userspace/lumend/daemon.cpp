// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/lumend/daemon.cpp - lumend put together: options, start-up in
// order with undo, the engine and control threads, signals (daemon.h).
#include "lumend/daemon.h"

#include <pthread.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <thread>

#include "base/args.h"
#include "base/error.h"
#include "base/fd.h"
#include "base/json_fields.h"
#include "base/json_socket.h"
#include "base/system.h"
#include "base/units.h"
#include "lumend/control.h"
#include "lumend/demand.h"
#include "sched/change.h"

namespace lumen::lumend
{

const char kUsage[] =
	R"(usage: lumend --schedule FILE --node I [--phc DEV [--phc-error NS]] [--clock-error NS | --ptp4l PATH]
              [--tai-phc DEV] [--tai-offset-0-ok]
              [--margin NS] [--spin NS|auto] [--stride N] [--cpu C] [--fifo P] [--shm PATH]
              [--control PATH] [--control-tcp ADDR:PORT --control-token FILE] [--pin NAME]
              [--control-max-local N] [--control-max-tcp N] [--control-max-per-peer N]
              [--control-idle DURATION] [--control-read-timeout DURATION]
              [--control-out-pause BYTES] [--control-max-out BYTES]
              [--control-auth-failures N] [--control-auth-backoff DURATION]
              [--gate DEV [--gate-netns NS]] [--dp-telemetry PREFIX,...]
              [--stats-interval S] [--check-interval NS] [--resume-after N]
       lumend --schedule FILE --node I --measure SECONDS [--json] [...]

Follows a periodic optical circuit schedule (docs/optical.md) on this host,
node I: publishes every slot boundary, the schedule's tables for this node
and whether senders may trust the clock in a shared-memory page (struct
lumen_osched_page, include/lumen/optical.h) that lumen-dp reads, and answers
`lumen sched status` on its control socket. docs/lumend.md has the details.

  --schedule FILE     the schedule file (lumen sched generate); SIGHUP reads
                      it again: refused (and counted) unless valid with the
                      same node count, the old one staying in force
  --node I            this host's node in it
  --phc DEV           keep time by a PTP hardware clock (/dev/ptpN) instead
                      of CLOCK_TAI; --phc-error NS is then its error bound
                      (what ptp4l reports; lumend cannot ask it)
  --clock-error NS    CLOCK_TAI's error bound, instead of the kernel's word
                      (adjtimex: STA_UNSYNC, maxerror); 0 for hosts sharing
                      one clock (namespaces on one machine)
  --ptp4l PATH        ask ptp4l (its uds_address, e.g. /var/run/ptp4l) every
                      check interval for its offset from the grandmaster
                      (TIME_STATUS_NP): the bound is the largest |offset| of
                      the last 8; quiet while it follows no grandmaster or
                      does not answer. For CLOCK_TAI (phc2sys keeping it on
                      the PHC) or the PHC (--phc, no --phc-error needed).
                      On CLOCK_TAI it is quiet while the kernel's TAI offset
                      (adjtimex) is 0: CLOCK_TAI would read UTC, 37 s off
  --tai-phc DEV       with --ptp4l on CLOCK_TAI: the PHC phc2sys keeps the
                      system clock on (ethtool -T IFACE); CLOCK_TAI is
                      compared with it at every check and its offset added
                      to ptp4l's bound (without it, that hop is unchecked).
                      With --phc, CLOCK_TAI (what senders count on) is
                      always compared with that PHC
  --tai-offset-0-ok   a kernel TAI offset of 0 is fine: every party counts
                      on this same clock (namespaces on one machine)
  --margin NS         the clock error senders allow for on each side of a
                      window (guard/4); quiet while the bound exceeds it
  --spin NS|auto      wake this long before a boundary and spin; auto:
                      twice the sleeps' 90th percentile wake-up latency,
                      at least 20us (auto)
  --stride N          publish every Nth boundary (1; below 10us slots, as
                      many as make 10us)
  --cpu C             pin the slot engine to CPU C
  --fifo P            run the slot engine at SCHED_FIFO priority P (1-99):
                      its wake-ups then preempt ordinary tasks at once;
                      with a spin as long as the slot it spins all the
                      time and the kernel's RT throttle stops it 50 ms
                      in every second (sched_rt_runtime_us)
  --shm PATH          the page (/dev/shm/lumen-osched)
  --control PATH      the control socket (/run/lumen/lumend.sock)
  --control-tcp ADDR:PORT
                      also answer on TCP (a management address; [IPv6]:PORT;
                      a PORT alone: 127.0.0.1; 0.0.0.0 or [::] is warned
                      about), for a coordinator on another host ('lumen sched
                      change --lumend ADDR:PORT'): only requests signed with
                      the token of --control-token FILE (one line of 16-256
                      printable characters, a file only its owner may read;
                      an HMAC, the token itself never travels), schedules
                      inline only
  --control-max-local N, --control-max-tcp N
                      connections at once on the Unix socket and on TCP,
                      each its own budget (16, 16; 1-1024): one over it is
                      told so and closed, so the network cannot lock the
                      owner out of the Unix socket
  --control-max-per-peer N
                      TCP connections from one address at once (4; at most
                      --control-max-tcp)
  --control-idle DURATION
                      close a connection that moves nothing this long (60s)
  --control-read-timeout DURATION
                      close one that leaves a line unfinished this long
                      (10s); both from 1s to 24h
  --control-out-pause BYTES, --control-max-out BYTES
                      a client that does not read its answers: no further
                      request of it is read while this much waits (256k),
                      and it is closed past this (64m); 4k-4g, the pause at
                      most the cap
  --control-auth-failures N, --control-auth-backoff DURATION
                      an address that fails authentication N times (5)
                      within DURATION (60s) is refused for DURATION
  --gate DEV          answer 'demand' (what this host offered to each node,
                      for 'lumen sched adapt --lumend' on another host) from
                      the kernel gate on DEV ('lumen gate'; --gate-netns NS:
                      DEV in that network namespace)
  --dp-telemetry PREFIX,...
                      ... and from these lumen-dp processes (their
                      --file-prefix or telemetry socket): the demand of
                      their gated hosts that are this node
  --pin NAME          also publish the slot state for the kernel in pinned
                      BPF maps, /sys/fs/bpf/lumen/osched/NAME/{state,windows}
                      (struct lumen_osched_state, include/lumen/bpf_shared.h):
                      the quiet word, the slot, per destination the next
                      window; 'lumen gate attach --lumend NAME' obeys it
  --stats-interval S  log a stats line every S seconds (0: never; 0)
  --check-interval NS how often the clock's error bound is read (100ms)
  --resume-after N    good checks in a row before gating resumes (3)
  --measure SECONDS   run the engine this long from the schedule's start,
                      print the boundary error distribution and exit; no
                      page file or socket unless --shm or --control is given
  --json              --measure's result as JSON

NS: a number of ns or a duration (2500, 2.5us, 1ms).
Exit status: 0 stopped by SIGINT/SIGTERM (or --measure done), 1 failure,
2 a bad option or schedule file.
)";

namespace
{

void log(const std::string &line)
{
	std::fprintf(stderr, "lumend: %s\n", line.c_str());
}

// A number of ns, or a duration with its unit.
uint64_t parse_ns(const std::string &text, const std::string &what, uint64_t max)
{
	if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos)
		return parse_uint(text, what, 0, max);
	return parse_duration_ns(text, what, max);
}

// systemd's readiness protocol (sd_notify(3)) without libsystemd: one
// datagram to $NOTIFY_SOCKET ('@': the abstract namespace)
void notify(const std::string &state)
{
	const char *path = std::getenv("NOTIFY_SOCKET");
	if (!path || !*path)
		return;
	sockaddr_un sa = {};
	sa.sun_family = AF_UNIX;
	size_t len = std::strlen(path);
	if (len >= sizeof(sa.sun_path))
		return;
	std::memcpy(sa.sun_path, path, len);
	if (path[0] == '@')
		sa.sun_path[0] = 0;
	Fd fd(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
	if (fd.valid())
		sendto(fd.get(), state.data(), state.size(), MSG_NOSIGNAL, (sockaddr *)&sa,
		       (socklen_t)(offsetof(sockaddr_un, sun_path) + len));
}

std::string guard_at_name(const lumen_slot_timing &t)
{
	return t.guard_at_start ? "start" : "end";
}

} // namespace

Options parse_options(const std::vector<std::string> &argv)
{
	Args a = Args::parse(argv, {"--json", "--tai-offset-0-ok"});
	std::vector<std::string> known = {"--schedule",
					  "--node",
					  "--phc",
					  "--phc-error",
					  "--clock-error",
					  "--margin",
					  "--spin",
					  "--stride",
					  "--cpu",
					  "--fifo",
					  "--shm",
					  "--control",
					  "--control-tcp",
					  "--control-token",
					  "--pin",
					  "--ptp4l",
					  "--tai-phc",
					  "--tai-offset-0-ok",
					  "--stats-interval",
					  "--gate",
					  "--gate-netns",
					  "--dp-telemetry",
					  "--check-interval",
					  "--resume-after",
					  "--measure",
					  "--json"};
	for (const ControlLimitOption &l : kControlLimitOptions)
		known.push_back(l.name);
	a.allow_only(known);
	if (!a.positional.empty())
		throw UsageError("unexpected argument '" + a.positional[0] + "'");
	Options o;
	if (!a.has("--schedule") || a.get("--schedule")->empty())
		throw UsageError("give the schedule file: --schedule FILE");
	o.schedule = *a.get("--schedule");
	if (!a.has("--node"))
		throw UsageError("give this host's node in the schedule: --node I");
	o.node = (uint32_t)parse_uint(*a.get("--node"), "--node", 0, sched::kMaxNodes - 1);
	if (a.has("--phc")) {
		o.phc = *a.get("--phc");
		if (o.phc.empty())
			throw UsageError("--phc: give a device, e.g. /dev/ptp0");
		if (!a.has("--phc-error") && !a.has("--ptp4l"))
			throw UsageError(
				"--phc needs its error bound: --ptp4l PATH (ptp4l's offsets) or --phc-error NS");
		if (a.has("--clock-error"))
			throw UsageError("--clock-error is CLOCK_TAI's bound; with --phc give --phc-error or --ptp4l");
		if (a.has("--phc-error"))
			o.phc_error_ns = (int64_t)parse_ns(*a.get("--phc-error"), "--phc-error", 10 * kSec);
	} else if (a.has("--phc-error")) {
		throw UsageError("--phc-error needs --phc DEV");
	}
	if (a.has("--clock-error"))
		o.clock_error_ns = (int64_t)parse_ns(*a.get("--clock-error"), "--clock-error", 10 * kSec);
	if (a.has("--ptp4l")) {
		if (a.has("--clock-error") || a.has("--phc-error"))
			throw UsageError("--ptp4l is the bound: no --clock-error or --phc-error with it");
		o.ptp4l = *a.get("--ptp4l");
		if (o.ptp4l.empty())
			throw UsageError("--ptp4l: give ptp4l's socket, e.g. /var/run/ptp4l");
	}
	// CLOCK_TAI's hop from the PHC and its TAI offset (clock.h): checked
	// with --ptp4l on CLOCK_TAI; with --phc the PHC is compared anyway
	if (a.has("--tai-phc")) {
		if (o.ptp4l.empty() || !o.phc.empty())
			throw UsageError("--tai-phc goes with --ptp4l on CLOCK_TAI (with --phc DEV, CLOCK_TAI is "
					 "compared with DEV already)");
		o.tai_phc = *a.get("--tai-phc");
		if (o.tai_phc.empty())
			throw UsageError("--tai-phc: give a device, e.g. /dev/ptp0");
	}
	o.tai_offset_0_ok = a.has("--tai-offset-0-ok");
	if (o.tai_offset_0_ok && (o.ptp4l.empty() || !o.phc.empty()))
		throw UsageError(
			"--tai-offset-0-ok goes with --ptp4l on CLOCK_TAI (only then is the TAI offset judged)");
	if (a.has("--margin"))
		o.margin_ns = (int64_t)parse_ns(*a.get("--margin"), "--margin", 10 * kSec);
	if (a.has("--spin") && *a.get("--spin") != "auto") {
		o.engine.spin_ns = parse_ns(*a.get("--spin"), "--spin", 100 * kMs);
		o.engine.spin_auto = false;
	}
	if (a.has("--stride"))
		o.engine.stride = (uint32_t)parse_uint(*a.get("--stride"), "--stride", 1, 1'000'000);
	if (a.has("--cpu"))
		o.engine.cpu = (int)parse_uint(*a.get("--cpu"), "--cpu", 0, CPU_SETSIZE - 1);
	if (a.has("--fifo"))
		o.engine.fifo = (int)parse_uint(*a.get("--fifo"), "--fifo", 1, 99);
	if (a.has("--shm")) {
		o.shm = *a.get("--shm");
		o.shm_given = true;
		if (o.shm.empty())
			throw UsageError("--shm: give a path");
	}
	if (a.has("--control")) {
		o.control = *a.get("--control");
		o.control_given = true;
		if (o.control.empty())
			throw UsageError("--control: give a path");
	}
	if (a.has("--control-tcp")) {
		o.control_tcp = *a.get("--control-tcp");
		// a port alone: loopback (a coordinator on this host, or an ssh
		// tunnel); another host's must be named
		if (!o.control_tcp.empty() && o.control_tcp.size() <= 5 &&
		    o.control_tcp.find_first_not_of("0123456789") == std::string::npos)
			o.control_tcp = "127.0.0.1:" + o.control_tcp;
		std::string host;
		unsigned port = 0;
		split_host_port(o.control_tcp, "--control-tcp", &host, &port);
		if (!a.has("--control-token"))
			throw UsageError("--control-tcp needs --control-token FILE: over TCP lumend answers only "
					 "requests with its token");
		o.control_token = read_token_file(*a.get("--control-token"), "--control-token");
	} else if (a.has("--control-token")) {
		throw UsageError("--control-token goes with --control-tcp ADDR:PORT");
	}
	if (a.has("--gate")) {
		o.demand.gate_dev = *a.get("--gate");
		if (o.demand.gate_dev.empty())
			throw UsageError("--gate: give the device whose gate counts the demand, e.g. eth0");
		o.demand.gate_netns = a.get("--gate-netns").value_or("");
	} else if (a.has("--gate-netns")) {
		throw UsageError("--gate-netns goes with --gate DEV");
	}
	o.demand.dp_telemetry = a.list("--dp-telemetry", "prefix");
	if (a.has("--pin")) {
		o.pin = *a.get("--pin");
		osched_dir(o.pin); // a name that can be a pin's
	}
	if (a.has("--stats-interval"))
		o.stats_interval_s = parse_uint(*a.get("--stats-interval"), "--stats-interval", 0, 86400);
	// the control socket's limits (control.h), checked together once all are read
	for (const ControlLimitOption &l : kControlLimitOptions)
		if (a.has(l.name))
			set_control_limit(&o.control_limits, l.name, *a.get(l.name));
	check_control_limits(o.control_limits);
	if (a.has("--check-interval"))
		o.engine.check_interval_ns = parse_ns(*a.get("--check-interval"), "--check-interval", 60 * kSec);
	if (o.engine.check_interval_ns < 1'000'000)
		throw UsageError("--check-interval must be at least 1ms");
	if (a.has("--resume-after"))
		o.engine.resume_after = (uint32_t)parse_uint(*a.get("--resume-after"), "--resume-after", 1, 1000);
	if (a.has("--measure")) {
		std::string m = *a.get("--measure");
		char *end = nullptr;
		double s = std::strtod(m.c_str(), &end);
		if (m.empty() || *end || !std::isfinite(s) || s <= 0 || s > 3600)
			throw UsageError("--measure: '" + m + "' is not a number of seconds in (0, 3600]");
		o.measure_ns = (uint64_t)std::llround(s * 1e9);
	}
	o.json = a.has("--json");
	if (o.json && !o.measure_ns)
		throw UsageError("--json goes with --measure (the daemon answers JSON on its socket)");
	o.engine.quiet_log = o.json;
	return o;
}

sched::Schedule load_schedule_file(const std::string &path)
{
	// O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below)
	Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
	if (!fd.valid())
		throw UsageError("cannot open " + path + ": " + errno_text(errno));
	struct stat st;
	if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
		throw UsageError(path + " is no regular file (a schedule is read from one)");
	if ((uint64_t)st.st_size > kMaxScheduleFile)
		throw UsageError(path + " has " + std::to_string(st.st_size) + " bytes; a schedule file has at most " +
				 std::to_string(kMaxScheduleFile));
	std::string text((size_t)st.st_size + 1, '\0');
	size_t got = 0;
	while (got < text.size()) { // one byte more than its size: a file that grows is noticed
		ssize_t n = read(fd.get(), &text[got], text.size() - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			throw UsageError("cannot read " + path + ": " + errno_text(errno));
		if (n == 0)
			break;
		got += (size_t)n;
	}
	if (got > (size_t)st.st_size)
		throw UsageError(path + " grew while it was read");
	text.resize(got);
	return sched::from_json(json_fields::parse_document(text, path), path);
}

std::shared_ptr<const Plan> make_plan(const Options &o, const std::string &path, uint64_t t0_ns)
{
	return make_plan(o, load_schedule_file(path), path, t0_ns);
}

std::shared_ptr<const Plan> make_plan(const Options &o, sched::Schedule schedule, const std::string &path,
				      uint64_t t0_ns)
{
	auto plan = std::make_shared<Plan>();
	plan->path = path;
	plan->schedule = std::move(schedule);
	if (t0_ns)
		plan->schedule.t0_ns = t0_ns;
	const sched::Schedule &s = plan->schedule;
	if (o.node >= s.nodes)
		throw UsageError(path + ": --node " + std::to_string(o.node) + " is not in the schedule (nodes 0.." +
				 std::to_string(s.nodes - 1) + ")");
	plan->tables = build_tables(s, o.node);
	plan->margin_ns = o.margin_ns >= 0 ? (uint64_t)o.margin_ns : s.guard_ns / 4;
	__u64 open, close;
	if (lumen_slot_window(&plan->tables.timing, 0, plan->margin_ns, &open, &close) != 0)
		throw UsageError(path + ": a margin of " + ns_text(plan->margin_ns) + " leaves nothing of the usable " +
				 ns_text(s.slot_ns - s.guard_ns) + " of a slot (it must be below half of it)");
	return plan;
}

nlohmann::json error_json(const Histogram &h)
{
	return {{"count", h.count()},
		{"mean", std::round(h.mean() * 10) / 10},
		{"p50", h.percentile(0.5)},
		{"p90", h.percentile(0.9)},
		{"p99", h.percentile(0.99)},
		{"p999", h.percentile(0.999)},
		{"max", h.max()}};
}

static nlohmann::json clock_json(const Info &info, const EngineStats &st)
{
	const ClockReading &r = st.clock;
	nlohmann::json c = {
		{"source", info.clock},
		{"error_bound_ns", r.bound_ns == UINT64_MAX ? nlohmann::json() : nlohmann::json(r.bound_ns)},
		{"stated", r.stated},
		{"ok", r.ok},
		{"checks", st.clock_checks},
		{"jumps", st.clock_jumps}};
	if (info.ptp4l) {
		Ptp4lBound::Reading p = info.ptp4l->reading();
		c["ptp4l"] = {{"path", info.ptp4l_path},    {"last_offset_ns", p.last_offset_ns},
			      {"gm_present", p.gm_present}, {"grandmaster", p.is_gm},
			      {"queries", p.queries},	    {"failures", p.failures}};
	}
	if (r.tai_phc_checked || !r.tai_phc_note.empty())
		c["tai_vs_phc"] = {
			{"checked", r.tai_phc_checked},
			{"offset_ns", r.tai_phc_checked ? nlohmann::json(r.tai_phc_offset_ns) : nlohmann::json()},
			{"uncertainty_ns",
			 r.tai_phc_checked ? nlohmann::json(r.tai_phc_uncertainty_ns) : nlohmann::json()},
			{"phc_bound_ns",
			 r.phc_bound_ns == UINT64_MAX ? nlohmann::json() : nlohmann::json(r.phc_bound_ns)},
			{"note", r.tai_phc_note}};
	if (r.timex.read)
		c["kernel"] = {{"synced", !r.timex.unsync},
			       {"maxerror_us", r.timex.maxerror_us},
			       {"esterror_us", r.timex.esterror_us},
			       {"tai_offset_s", r.timex.tai_offset_s}};
	return c;
}

nlohmann::json status_json(const Info &info, const EngineStats &st, const Plan &plan, const nlohmann::json &change)
{
	const Tables &t = plan.tables;
	return {{"pid", info.pid},
		{"node", t.self},
		{"nodes", t.nodes},
		{"uplinks", t.uplinks},
		{"version", st.version},
		{"change", change},
		{"schedule_file", plan.path},
		{"timing",
		 {{"t0_ns", t.timing.t0_ns},
		  {"slot_ns", t.timing.slot_ns},
		  {"guard_ns", t.timing.guard_ns},
		  {"guard_at", guard_at_name(t.timing)},
		  {"period", t.timing.period}}},
		{"margin_ns", st.margin_ns},
		{"stride", st.stride},
		{"shm", info.shm},
		{"control", info.control},
		{"control_tcp", info.control_tcp.empty() ? nlohmann::json() : nlohmann::json(info.control_tcp)},
		{"pin", info.pin.empty() ? nlohmann::json() : nlohmann::json(info.pin)},
		{"clock", clock_json(info, st)},
		{"quiet", st.quiet},
		{"quiet_reasons", sched::quiet_names(st.quiet)},
		{"gating", st.quiet == 0},
		{"why", st.why},
		{"slot", st.slot},
		{"boundary_ns", st.boundary_ns},
		{"last_error_ns", st.last_error_ns},
		{"published", st.published},
		{"late", st.late},
		{"missed", st.missed},
		{"boundary_error_ns", error_json(st.errors)},
		{"uptime_s", info.now_ns > st.started_ns ? (double)(info.now_ns - st.started_ns) / 1e9 : 0.0}};
}

nlohmann::json stats_json(const Info &info, const EngineStats &st)
{
	return {{"published", st.published},
		{"late", st.late},
		{"missed", st.missed},
		{"boundary_error_ns", error_json(st.errors)},
		{"clock_checks", st.clock_checks},
		{"clock_bad_checks", st.clock_bad_checks},
		{"clock_jumps", st.clock_jumps},
		{"last_jump_ns", st.last_jump_ns},
		{"quiet_events", st.quiet_events},
		{"reloads", info.reloads},
		{"reloads_refused", info.reloads_refused},
		{"reloads_applied", st.applied},
		{"changes", st.changes},
		{"changes_overdue", st.changes_overdue},
		{"pin_errors", st.pin_errors},
		{"requests", info.requests},
		{"bad_requests", info.bad_requests},
		{"control_refused", info.control_refused},
		{"control_timed_out", info.control_timed_out},
		{"control_auth_failed", info.control_auth_failed},
		{"spin", info.spin_auto ? "auto" : "fixed"},
		{"spin_ns", st.spin_ns},
		{"wake_latency_ns", {{"p50", st.wake_p50_ns}, {"p90", st.wake_p90_ns}, {"p99", st.wake_p99_ns}}},
		{"check_interval_ns", info.check_interval_ns},
		{"resume_after", info.resume_after},
		{"uptime_s", info.now_ns > st.started_ns ? (double)(info.now_ns - st.started_ns) / 1e9 : 0.0}};
}

namespace
{

void print_measure(const Options &o, const Clock &clock, const EngineStats &st, const Plan &plan)
{
	const lumen_slot_timing &t = plan.tables.timing;
	double late_pct = st.published ? 100.0 * (double)st.late / (double)st.published : 0.0;
	if (o.json) {
		nlohmann::json j = {{"slot_ns", t.slot_ns},
				    {"guard_ns", t.guard_ns},
				    {"margin_ns", st.margin_ns},
				    {"spin", o.engine.spin_auto ? "auto" : "fixed"},
				    {"spin_ns", st.spin_ns},
				    {"wake_latency_ns",
				     {{"p50", st.wake_p50_ns}, {"p90", st.wake_p90_ns}, {"p99", st.wake_p99_ns}}},
				    {"stride", st.stride},
				    {"fifo", o.engine.fifo},
				    {"seconds", (double)o.measure_ns / 1e9},
				    {"clock", clock.name()},
				    {"published", st.published},
				    {"late", st.late},
				    {"late_pct", late_pct},
				    {"missed", st.missed},
				    {"clock_jumps", st.clock_jumps},
				    {"boundary_error_ns", error_json(st.errors)}};
		std::printf("%s\n", j.dump(2).c_str());
		return;
	}
	const Histogram &h = st.errors;
	std::printf("lumend --measure: %.3g s of %s slots on %s (spin %s%s, stride %u)\n", (double)o.measure_ns / 1e9,
		    ns_text(t.slot_ns).c_str(), clock.name().c_str(), ns_text(st.spin_ns).c_str(),
		    o.engine.spin_auto ? " auto" : "", st.stride);
	if (o.engine.spin_auto)
		std::printf("sleeps woke late by p50 %s, p90 %s, p99 %s (the last 256)\n",
			    ns_text(st.wake_p50_ns).c_str(), ns_text(st.wake_p90_ns).c_str(),
			    ns_text(st.wake_p99_ns).c_str());
	std::printf("published %llu boundaries; late %llu (%.3f%%, error > margin %s); missed %llu\n",
		    (unsigned long long)st.published, (unsigned long long)st.late, late_pct,
		    ns_text(st.margin_ns).c_str(), (unsigned long long)st.missed);
	std::printf("boundary error: p50 %s, p90 %s, p99 %s, p99.9 %s, max %s\n", ns_text(h.percentile(0.5)).c_str(),
		    ns_text(h.percentile(0.9)).c_str(), ns_text(h.percentile(0.99)).c_str(),
		    ns_text(h.percentile(0.999)).c_str(), ns_text(h.max()).c_str());
}

// Joins the control thread however the engine ends.
struct Joiner {
	ControlLoop &loop;
	std::thread &thread;
	~Joiner()
	{
		if (thread.joinable()) {
			loop.stop();
			thread.join();
		}
	}
};

} // namespace

int run(const Options &o)
{
	// Signals go to the control thread's signalfd: blocked here, before any
	// thread starts, so every thread inherits the mask.
	sigset_t sigs;
	sigemptyset(&sigs);
	for (int s : {SIGINT, SIGTERM, SIGHUP})
		sigaddset(&sigs, s);
	pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
	signal(SIGPIPE, SIG_IGN);
	Fd sfd(signalfd(-1, &sigs, SFD_CLOEXEC));
	if (!sfd.valid())
		throw Error("signalfd: " + errno_text(errno));

	std::shared_ptr<const Plan> plan = make_plan(o, o.schedule);
	Clock clock = o.phc.empty() ? Clock::tai(o.clock_error_ns) : Clock::phc(o.phc, (uint64_t)o.phc_error_ns);
	std::shared_ptr<Ptp4lBound> ptp4l_bound;
	std::unique_ptr<Ptp4lClient> ptp4l;
	if (!o.ptp4l.empty()) {
		/* our end of the conversation, beside the control socket (or in /tmp) */
		std::string dir =
			o.control.substr(0, o.control.rfind('/') == std::string::npos ? 0 : o.control.rfind('/'));
		if (dir.empty() || (o.measure_ns && !o.control_given))
			dir = "/tmp";
		make_dirs(dir);
		ptp4l = std::make_unique<Ptp4lClient>(o.ptp4l, dir + "/lumend." + std::to_string(getpid()) + ".ptp4l");
		ptp4l_bound = std::make_shared<Ptp4lBound>();
		std::string why;
		auto st = ptp4l->query(200, &why);
		ptp4l_bound->feed(st, why, monotonic_ns());
		if (!st)
			log(why + ": quiet until it answers");
		clock.use_ptp4l(ptp4l_bound);
		if (!o.tai_phc.empty())
			clock.compare_with_phc(o.tai_phc);
		else if (o.phc.empty())
			log("CLOCK_TAI is not compared with a PHC (no --tai-phc DEV): ptp4l's offsets are the PHC's, "
			    "phc2sys's hop to the system clock is left to the margin");
		if (o.tai_offset_0_ok)
			clock.allow_tai_offset_0();
	}
	bool measure = o.measure_ns > 0;
	// quiet until the engine has checked the clock
	ShmPage page = measure && !o.shm_given
			       ? ShmPage::anonymous(plan->tables, plan->margin_ns, LUMEN_QUIET_CLOCK)
			       : ShmPage::create(o.shm, plan->tables, plan->margin_ns, LUMEN_QUIET_CLOCK);
	page.remove_on_close();
	std::string control = measure && !o.control_given ? "" : o.control;
	ControlLoop loop(control, sfd.get(), o.control_tcp, o.control_token, o.control_limits);
	std::unique_ptr<OschedPin> pin;
	if (!o.pin.empty())
		pin = std::make_unique<OschedPin>(o.pin, plan->tables.self, plan->tables.nodes);
	SlotEngine engine(clock, page, plan, o.engine, pin.get());

	std::atomic<bool> stop{false};
	Info info;
	info.pid = getpid();
	info.clock = clock.name();
	info.shm = page.path();
	info.control = control;
	info.control_tcp = o.control_tcp;
	info.pin = pin ? pin->dir() : "";
	info.ptp4l = ptp4l_bound;
	info.ptp4l_path = o.ptp4l;
	info.spin_auto = o.engine.spin_auto;
	info.check_interval_ns = o.engine.check_interval_ns;
	info.resume_after = o.engine.resume_after;
	auto fresh_info = [&] {
		Info i = info;
		i.requests = loop.requests();
		i.bad_requests = loop.bad_requests();
		i.control_refused = loop.refused();
		i.control_timed_out = loop.timed_out();
		i.control_auth_failed = loop.auth_failed();
		i.now_ns = clock.now();
		return i;
	};

	// The schedule change's steps, checked against this record of them (the
	// control thread's: it alone takes them) and handed to the engine.
	sched::Banks banks;
	banks.bank[0] = sched::bank_of(plan->schedule, plan->schedule.t0_ns);
	auto settled = [&] { return sched::settle(banks, clock.now()); };
	auto change_now = [&] { return sched::change_json(sched::view(banks, clock.now())); };

	ControlHooks hooks;
	hooks.handlers["status"] = [&] {
		std::shared_ptr<const Plan> p = engine.plan();
		return status_json(fresh_info(), engine.snapshot(), *p, change_now());
	};
	// "file" is a path on this host: the local socket's alone (over TCP a
	// schedule comes inline)
	hooks.handlers["stage"] = Handler(
		{"file", "schedule", "at"},
		[&](const nlohmann::json &req) {
			const bool file = req.contains("file") && req["file"].is_string();
			const bool inline_schedule = req.contains("schedule") && req["schedule"].is_object();
			if (file == inline_schedule || !req.contains("at") || !req["at"].is_number_unsigned())
				throw UsageError("stage takes \"file\" (a schedule file's path) or \"schedule\" (the "
						 "schedule itself, as its file has it), and \"at\" (CLOCK_TAI ns)");
			uint64_t at = req["at"].get<uint64_t>();
			std::shared_ptr<const Plan> next =
				file ? make_plan(o, req["file"].get<std::string>(), at)
				     : make_plan(o, sched::from_json(req["schedule"], "the staged schedule"),
						 "the request", at);
			if (next->schedule.nodes != engine.plan()->schedule.nodes)
				throw UsageError("a schedule of " + std::to_string(next->schedule.nodes) + " nodes; " +
						 std::to_string(engine.plan()->schedule.nodes) + " are in force");
			banks = sched::stage(settled(), next->schedule, at, clock.now());
			engine.stage(next, at);
			log("version " + std::to_string(next->schedule.version) + " from " + next->path +
			    " staged for " + std::to_string(at) + " ns");
			return nlohmann::json{{"staged", next->schedule.version}, {"at", at}};
		},
		{"file"});
	auto version_of = [](const nlohmann::json &req, const char *cmd) {
		if (!req.contains("version") || !req["version"].is_number_unsigned())
			throw UsageError(std::string(cmd) + " takes \"version\", the change's");
		return req["version"].get<uint64_t>();
	};
	hooks.handlers["commit"] = Handler({"version"}, [&](const nlohmann::json &req) {
		uint64_t v = version_of(req, "commit");
		banks = sched::commit(banks, v);
		engine.commit();
		log("the change to version " + std::to_string(v) + " is committed");
		return nlohmann::json{{"committed", v}};
	});
	hooks.handlers["abort"] = Handler({"version"}, [&](const nlohmann::json &req) {
		uint64_t v = version_of(req, "abort");
		banks = sched::abort(banks, v);
		engine.abort();
		log("the change to version " + std::to_string(v) + " is aborted");
		return nlohmann::json{{"aborted", v}};
	});
	hooks.handlers["stats"] = [&] { return stats_json(fresh_info(), engine.snapshot()); };
	hooks.handlers["demand"] = [&] {
		const uint32_t nodes = engine.plan()->schedule.nodes;
		DemandReading d = read_demand(o.demand, o.node, nodes);
		return nlohmann::json{{"node", o.node},
				      {"nodes", nodes},
				      {"at_ns", clock.now()},
				      {"bytes", d.bytes},
				      {"sources", d.sources}};
	};
	hooks.handlers["schedule"] = [&] { return sched::to_json(engine.plan()->schedule); };
	hooks.on_signal = [&](int sig) {
		if (sig != SIGHUP) {
			log(std::string("stopping on ") + (sig == SIGINT ? "SIGINT" : "SIGTERM"));
			stop.store(true);
			return;
		}
		std::shared_ptr<const Plan> now = engine.plan();
		try {
			std::shared_ptr<const Plan> next = make_plan(o, o.schedule);
			if (next->schedule.nodes != now->schedule.nodes)
				throw UsageError(o.schedule + ": " + std::to_string(next->schedule.nodes) +
						 " nodes, the schedule in force has " +
						 std::to_string(now->schedule.nodes));
			banks = sched::replace(settled(), next->schedule, clock.now()); // not during a change
			info.reloads++;
			log("SIGHUP: " + o.schedule + " version " + std::to_string(next->schedule.version) +
			    " read; in force after the next boundary");
			engine.offer(std::move(next));
		} catch (const std::exception &e) {
			info.reloads_refused++;
			log(std::string("SIGHUP: refused: ") + e.what() + "; version " +
			    std::to_string(now->schedule.version) + " stays in force");
		}
	};
	uint64_t next_stats_ns = o.stats_interval_s ? monotonic_ns() + o.stats_interval_s * kSec : UINT64_MAX;
	if (o.stats_interval_s || ptp4l) {
		/* ptp4l is asked every check interval, here (its answer takes a
		 * system call and may take a while: never on the engine's thread) */
		hooks.tick_ns = ptp4l ? o.engine.check_interval_ns : o.stats_interval_s * kSec;
		hooks.on_tick = [&] {
			if (ptp4l) {
				std::string why;
				auto st = ptp4l->query(50, &why);
				ptp4l_bound->feed(st, why, monotonic_ns());
			}
			if (monotonic_ns() < next_stats_ns)
				return;
			next_stats_ns = monotonic_ns() + o.stats_interval_s * kSec;
			EngineStats st = engine.snapshot();
			const Histogram &h = st.errors;
			log("slot " + std::to_string(st.slot) + ": published " + std::to_string(st.published) +
			    ", late " + std::to_string(st.late) + ", missed " + std::to_string(st.missed) +
			    "; error p50 " + ns_text(h.percentile(0.5)) + ", p99 " + ns_text(h.percentile(0.99)) +
			    ", max " + ns_text(h.max()) + (st.quiet ? "; quiet: " + st.why : "; gating"));
		};
	}

	std::exception_ptr control_failed;
	std::thread thread([&] {
		try {
			loop.run(hooks);
		} catch (...) {
			control_failed = std::current_exception();
			stop.store(true);
		}
	});
	{
		Joiner joiner{loop, thread};
		uint64_t until = 0;
		if (measure)
			until = std::max<uint64_t>(clock.now(), plan->tables.timing.t0_ns) + o.measure_ns;
		else {
			log("node " + std::to_string(o.node) + " of " + o.schedule + " (version " +
			    std::to_string(plan->schedule.version) + "), " + clock.name() + ", page " + page.path() +
			    ", control " + control);
			notify("READY=1\nSTATUS=following schedule version " + std::to_string(plan->schedule.version));
		}
		engine.run(stop, until);
		engine.say_stopped();
		if (!measure)
			notify("STOPPING=1");
	}
	if (control_failed)
		std::rethrow_exception(control_failed);
	if (measure)
		print_measure(o, clock, engine.snapshot(), *engine.plan());
	return 0;
}

} // namespace lumen::lumend
