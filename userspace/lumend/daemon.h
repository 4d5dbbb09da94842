// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/lumend/daemon.h - lumend put together: its options, the start
// (schedule, clock, page, socket, in that order, each undone if a later one
// fails), the two threads, reload and shutdown, and what it answers.
//
//   main thread     the slot engine (slot_engine.h): sleeps, spins,
//                   publishes; at the end says LUMEN_QUIET_STOPPED
//   control thread  the socket, the signals and the stats log line
//                   (control.h); SIGHUP loads the schedule file again and
//                   offers it to the engine, SIGINT/SIGTERM stop it; the
//                   steps of a schedule change at an instant (stage,
//                   commit, abort: sched/change.h) are checked here and
//                   handed to the engine
//
// Exit status: 0 after SIGINT/SIGTERM or a --measure run, 1 on a failure
// (a PHC that cannot be read, a page or socket that cannot be made, another
// lumend on the same paths), 2 on a bad option or schedule file. Whatever
// failed, the page and the socket it made are removed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lumend/control.h"
#include "lumend/demand.h"
#include "lumend/ptp4l.h"
#include "lumend/slot_engine.h"

namespace lumen::lumend
{

extern const char kUsage[];

struct Options {
	std::string schedule; // --schedule FILE
	uint32_t node = 0; // --node I
	std::string phc; // --phc DEV ("": CLOCK_TAI)
	int64_t phc_error_ns = -1; // --phc-error NS
	int64_t clock_error_ns = -1; // --clock-error NS (CLOCK_TAI; -1: the kernel's)
	std::string ptp4l; // --ptp4l PATH: the bound from ptp4l's management socket ("": not)
	std::string tai_phc; // --tai-phc DEV: with --ptp4l on CLOCK_TAI, the PHC CLOCK_TAI is compared with
	bool tai_offset_0_ok = false; // --tai-offset-0-ok: a kernel TAI offset of 0 is no reason for quiet
	int64_t margin_ns = -1; // --margin NS (-1: guard_ns / 4)
	std::string shm = LUMEN_OSCHED_SHM;
	bool shm_given = false;
	std::string pin; // --pin NAME: the slot state for the kernel, LUMEN_PIN_ROOT/osched/NAME ("": none)
	std::string control = "/run/lumen/lumend.sock";
	bool control_given = false;
	std::string control_tcp; // --control-tcp ADDR:PORT ("": no TCP control)
	std::string control_token; // --control-token FILE's token (with control_tcp)
	ControlLimits control_limits; // --control-max-local N and the rest of kControlLimitOptions
	DemandSources demand; // --gate, --gate-netns, --dp-telemetry: the `demand` request's
	uint64_t stats_interval_s = 0; // --stats-interval S (0: no stats log lines)
	uint64_t measure_ns = 0; // --measure SECONDS (0: run as a daemon)
	bool json = false;
	EngineOptions engine;
};

// UsageError for anything wrong; --help is the caller's.
Options parse_options(const std::vector<std::string> &argv);

// A schedule file, read as lumend reads any file it is named: a regular file
// (not a FIFO, a device, /dev/zero) of at most kMaxScheduleFile bytes, read
// no further than that. UsageError naming the file otherwise.
constexpr uint64_t kMaxScheduleFile = 64ull << 20;
sched::Schedule load_schedule_file(const std::string &path);

// A schedule file made ready for the engine: loaded, validated, node and
// margin checked, tables built. UsageError naming the file otherwise.
// t0_ns > 0: the schedule's t0 becomes it (a change's instant).
std::shared_ptr<const Plan> make_plan(const Options &o, const std::string &path, uint64_t t0_ns = 0);
// The same for a schedule already parsed (a change's, sent inline); path
// names where it came from.
std::shared_ptr<const Plan> make_plan(const Options &o, sched::Schedule schedule, const std::string &path,
				      uint64_t t0_ns = 0);

// What status and stats answer (pure: tests build them from made-up stats).
struct Info {
	int pid = 0;
	std::string clock, shm, control, control_tcp, pin;
	std::shared_ptr<const Ptp4lBound> ptp4l; // --ptp4l's readings (null: none)
	std::string ptp4l_path;
	bool spin_auto = true;
	uint64_t check_interval_ns = 0;
	uint32_t resume_after = 0;
	uint64_t reloads = 0, reloads_refused = 0; // SIGHUPs taken and refused
	uint64_t requests = 0, bad_requests = 0;
	// control connections closed at once (a budget, a blocked address), closed
	// for a timeout, and requests that failed authentication
	uint64_t control_refused = 0, control_timed_out = 0, control_auth_failed = 0;
	uint64_t now_ns = 0; // the clock's, for uptime
};
// change: the change under way (sched::change_json), or null.
nlohmann::json status_json(const Info &info, const EngineStats &st, const Plan &plan,
			   const nlohmann::json &change = nullptr);
nlohmann::json stats_json(const Info &info, const EngineStats &st);
// The boundary error distribution: count, mean, p50, p90, p99, p999, max.
nlohmann::json error_json(const Histogram &h);

// The whole daemon (or --measure run); returns the exit status.
int run(const Options &o);

} // namespace lumen::lumend
