// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/lumend/slot_engine.h - the loop that keeps time with the
// schedule: it publishes every slot boundary in the page as it passes, and
// measures how late it was.
//
// Per boundary B (t0 + k * slot_ns):
//
//   sleep   clock_nanosleep(CLOCK_TAI, TIMER_ABSTIME) to B - spin, in
//           pieces of at most 10 ms (a stop or a new schedule is seen
//           within one), with the thread's timer slack at 1 ns (the default
//           50 us would make every wake-up up to 50 us late);
//   spin    read the clock until it reads >= B: what the sleep's wake-up
//           latency leaves of the spin is spent here. The spin is --spin,
//           or by default sized to the machine (SpinTuner): twice the 90th
//           percentile wake-up latency of the last 256 sleeps, at least
//           20 us. A virtual machine's timers wake 30-60 us late (this
//           one's: docs/lumend.md), bare metal's a few us;
//   publish slot k and the time read (boundary_ns), under the seqlock;
//           error = that time - B goes into the histogram; an error above
//           the margin is a late boundary;
//   then    apply a new schedule if one is waiting (a committed change
//           whose instant this boundary is: before publishing it), check
//           the clock for a
//           jump (every boundary) and its error bound (every check
//           interval), and hand the statistics to the control thread
//           (every 10 ms, and never waiting for it: try_lock).
//
// When the wake-up comes after the next boundary (the thread was not
// scheduled in time), the boundaries in between are missed: counted, not
// published, and the engine publishes the latest one it is in (late) and
// goes on from there. A clock jump is no miss: the engine counts it,
// goes quiet and starts again from the boundary after now.
//
// Short slots: with spin_ns >= slot_ns the engine never sleeps and spins
// from one boundary to the next, one core at 100%. Below 10 us
// (kMinPublishNs) it publishes only every stride-th boundary (slot numbers
// that are multiples of stride, stride = ceil(10 us / slot_ns), or
// --stride): a boundary is published, measured and missed only among
// those. Senders do not need every boundary: they compute the slot from
// their own clock (lumen_slot_at); the page's slot is lumend's heartbeat,
// and its quiet word what they must obey.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bpfctl/osched_state.h"
#include "lumend/clock.h"
#include "lumend/shm_page.h"
#include "sched/schedule.h"

namespace lumen::lumend
{

constexpr uint64_t kMinPublishNs = 10'000;

// Errors in ns, log-linear: exact below 256 ns, then 32 buckets per power of
// two (each within 1/32 = 3%). Percentiles answer a bucket's upper end (at
// most the maximum seen), so they never understate.
class Histogram
{
      public:
	static constexpr unsigned kExact = 256, kSub = 32, kBuckets = kExact + (64 - 8) * kSub;
	void add(uint64_t ns);
	uint64_t count() const
	{
		return count_;
	}
	uint64_t max() const
	{
		return max_;
	}
	double mean() const
	{
		return count_ ? (double)sum_ / (double)count_ : 0.0;
	}
	// The smallest value v with at least q of the samples <= v (q in [0, 1]);
	// 0 when empty.
	uint64_t percentile(double q) const;
	static unsigned bucket_of(uint64_t ns);
	static uint64_t upper_of(unsigned bucket); // the largest value in it

      private:
	std::array<uint64_t, kBuckets> n_{};
	uint64_t count_ = 0, max_ = 0;
	unsigned __int128 sum_ = 0;
};

// Sizes the spin to the wake-up latency (see the top of this file): every
// kWindow sleeps (the first time after kFirst), spin = twice their 90th
// percentile, within [floor, max]. Not the 99th: on a loaded machine that
// is the run queue's wait (ms), which spinning does not shorten; the timer
// latency's own tail is short (a VM's here: p90 38 us, p99 60 us idle).
class SpinTuner
{
      public:
	static constexpr unsigned kWindow = 256, kFirst = 32;
	SpinTuner(uint64_t floor_ns, uint64_t max_ns) : floor_(floor_ns), max_(max_ns), spin_(floor_ns)
	{
	}
	void add(uint64_t late_ns); // how late one sleep woke
	uint64_t spin() const
	{
		return spin_;
	}
	uint64_t p50() const // of the last full window (0: none yet)
	{
		return p50_;
	}
	uint64_t p90() const
	{
		return p90_;
	}
	uint64_t p99() const
	{
		return p99_;
	}

      private:
	std::array<uint64_t, kWindow> w_{};
	unsigned n_ = 0;
	bool warm_ = false;
	uint64_t floor_, max_, spin_, p50_ = 0, p90_ = 0, p99_ = 0;
};

// The boundary to publish after waking at now_ns when slot `want` was due:
// want itself when now is before the boundary after it, else the latest
// multiple of stride that has begun, the ones skipped being missed.
struct CatchUp {
	uint64_t slot = 0;
	uint64_t missed = 0; // boundaries to publish that were skipped
};
CatchUp catch_up(const lumen_slot_timing &t, uint64_t want, uint64_t now_ns, uint32_t stride);
// The first multiple of stride whose boundary is at or after now_ns.
uint64_t first_slot_after(const lumen_slot_timing &t, uint64_t now_ns, uint32_t stride);
// stride for a slot length: 1 from kMinPublishNs up, else enough to publish
// at most every kMinPublishNs.
uint32_t auto_stride(uint64_t slot_ns);

// This node's next window to each destination from slot `slot` on (the
// slot's own, if it connects them), shrunk by margin_ns: what lumend
// publishes for the kernel (lumen_osched_window; 0, 0: none).
std::vector<lumen_osched_window> next_windows(const Tables &t, uint64_t margin_ns, uint64_t slot);

// A schedule the engine is to follow, made by the control thread.
struct Plan {
	sched::Schedule schedule;
	Tables tables;
	uint64_t margin_ns = 0;
	std::string path; // the file it came from
};

struct EngineOptions {
	uint64_t spin_ns = 20'000; // the spin (spin_auto: its floor)
	bool spin_auto = true; // SpinTuner
	uint64_t spin_max_ns = 5'000'000; // SpinTuner's ceiling
	uint32_t stride = 0; // 0: auto_stride
	uint64_t check_interval_ns = 100'000'000;
	uint32_t resume_after = 3; // good checks before gating resumes
	int cpu = -1; // pin the engine's thread to this CPU (-1: no)
	int fifo = 0; // SCHED_FIFO priority of the engine's thread (0: stay SCHED_OTHER)
	bool quiet_log = false; // no log lines (--measure --json)
	// A change staged and not committed this long after its instant is
	// overdue (lumen_change_overdue): said once, and counted; lumend stays
	// quiet all the same (include/lumen/optical.h). 0: 4 slots of the
	// schedule in force, at least 100 ms (the readers' stale limit).
	uint64_t overdue_ns = 0;
	// Each log line, when set (tests); stderr otherwise.
	void (*log_fn)(const std::string &line, void *arg) = nullptr;
	void *log_arg = nullptr;
};

// What the engine has done, copied to the control thread.
struct EngineStats {
	uint64_t started_ns = 0; // the clock's, when run() began
	uint64_t published = 0, late = 0, missed = 0;
	uint64_t slot = 0, boundary_ns = 0; // the last published
	int64_t last_error_ns = 0;
	uint32_t quiet = 0, stride = 1;
	uint64_t spin_ns = 0; // the spin now
	uint64_t wake_p50_ns = 0, wake_p90_ns = 0, wake_p99_ns = 0; // sleeps' lateness, the last 256
	uint64_t version = 0, margin_ns = 0;
	uint64_t applied = 0; // schedules applied after the first
	uint64_t changes = 0; // of them, changes at an instant
	uint64_t changes_overdue = 0; // changes left staged past their instant + overdue_ns
	uint64_t pin_errors = 0; // failed writes of the pinned slot state
	uint64_t clock_checks = 0, clock_bad_checks = 0, clock_jumps = 0, quiet_events = 0;
	int64_t last_jump_ns = 0;
	ClockReading clock; // the last check
	std::string why; // why quiet ("" when not)
	Histogram errors;
};

class SlotEngine
{
      public:
	// pin: lumend's slot state for the kernel, also published (or null).
	SlotEngine(const Clock &clock, ShmPage &page, std::shared_ptr<const Plan> plan, const EngineOptions &o,
		   OschedPin *pin = nullptr);
	// Runs until stop is set, or (until_ns > 0) the clock passes until_ns;
	// then says STOPPED in the page when stopping for good (stopped).
	void run(const std::atomic<bool> &stop, uint64_t until_ns);
	void say_stopped();
	// From the control thread: apply this schedule after the next boundary.
	void offer(std::shared_ptr<const Plan> plan);
	// From the control thread: a schedule change at an instant
	// (sched/change.h; the control thread checks the steps). plan's timing
	// starts at at_ns, a period boundary of the schedule in force. Once
	// committed, it is applied at the first boundary published at or after
	// at_ns; a boundary at or after at_ns reached uncommitted makes the
	// page say LUMEN_QUIET_VERSION until commit or abort.
	void stage(std::shared_ptr<const Plan> plan, uint64_t at_ns);
	void commit();
	void abort();
	// From the control thread: the statistics as of at most ~10 ms ago.
	EngineStats snapshot() const;
	std::shared_ptr<const Plan> plan() const; // in force (control thread)

      private:
	void log(const std::string &line) const;
	void apply(std::shared_ptr<const Plan> plan);
	bool take_offer(); // applies an offered schedule; true when it did
	bool sample_jump(); // true when the clock jumped (quiet, restart)
	void check_clock();
	bool follow_change(uint64_t boundary_ns); // applies a committed change due; true when it did
	void set_quiet(uint32_t mask, uint32_t bits); // the LUMEN_QUIET_* bits of mask become those of bits
	void share(bool force);

	void publish_pin(uint64_t slot, uint64_t boundary_ns);
	void pin_failed(const std::exception &e);

	const Clock &clock_;
	ShmPage &page_;
	OschedPin *pin_;
	EngineOptions o_;
	std::shared_ptr<const Plan> plan_;
	lumen_slot_timing timing_;
	uint32_t stride_ = 1;
	SpinTuner spin_;
	JumpDetector jumps_;
	ClockGate gate_;
	EngineStats st_; // the engine's own, shared by share()
	uint64_t next_check_ns_ = 0, next_share_mono_ = 0;

	mutable std::mutex share_mu_;
	EngineStats shared_;
	std::shared_ptr<const Plan> shared_plan_;
	std::mutex offer_mu_;
	std::shared_ptr<const Plan> offered_;
	std::atomic<bool> has_offer_{false};
	// the change, under offer_mu_
	std::shared_ptr<const Plan> staged_;
	uint64_t staged_at_ = 0;
	bool committed_ = false;
	bool overdue_said_ = false; // the staged change was said overdue (engine thread)
	std::atomic<bool> has_change_{false};
};

} // namespace lumen::lumend
