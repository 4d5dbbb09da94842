// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/lumend/clock.h - the clock lumend keeps slots by, how far it
// may be off, and when to stop trusting it.
//
// Slots are counted on the PTP time scale: CLOCK_TAI, or a PTP hardware
// clock (PHC, /dev/ptpN) that ptp4l keeps on the grandmaster's time. Every
// sender shrinks its windows by a margin (optical.h); that only helps while
// its clock is within the margin of the switch's. So lumend asks, every
// check interval, for the clock's error bound, and keeps senders quiet
// (LUMEN_QUIET_CLOCK) while the bound exceeds the margin or the clock has
// just jumped:
//
//   CLOCK_TAI  the kernel's word, adjtimex(2): STA_UNSYNC set means nobody
//              disciplines the clock (no ptp4l/phc2sys, chrony or ntpd);
//              maxerror is the discipline's worst-case error in us, which
//              the kernel grows by 500 ppm every second between updates.
//              phc2sys resets it to 0 and clears STA_UNSYNC at each update
//              (once a second by default), so right after an update it
//              says 0 and just before the next ~500 us: right for "is it
//              disciplined at all", far too coarse for a us margin. chrony
//              sets it to its root distance (ms with NTP servers, us with a
//              PHC refclock). So --clock-error NS states the bound instead
//              (what phc2sys -m reports as its offset, with room to spare);
//              a shared clock (namespaces on one machine) is off by 0.
//   PHC        no kernel word at all: --phc-error NS states the bound (the
//              offsets ptp4l -m logs);
//   ptp4l      or, for either clock, --ptp4l PATH asks ptp4l itself, on its
//              management socket, for its offsets (ptp4l.h): the bound is
//              the largest |master_offset| of the last readings, and a host
//              that follows no grandmaster is not trusted.
//
// A jump (a step by ptp4l, phc2sys, chrony, date) is caught between checks
// by reading the clock next to CLOCK_MONOTONIC: both run at the rate the
// discipline sets (for CLOCK_TAI) and differ only by steps, so an advance
// that differs from the monotonic one by more than the margin (plus a
// drift allowance for a PHC, which runs on its own oscillator) is a jump,
// and so is a read going backwards.
//
// Senders (the kernel gate, lumen-dp) count slots on CLOCK_TAI, whatever
// lumend counts on. So two more checks, each time the bound is read:
//
//   CLOCK_TAI against the PHC (phc2sys's hop): with --phc (lumend counts on
//              the PHC, the senders on CLOCK_TAI), and with --ptp4l on
//              CLOCK_TAI when --tai-phc DEV names the PHC phc2sys keeps
//              CLOCK_TAI on (ptp4l's offsets are the PHC's to the master,
//              and say nothing of the system clock). CLOCK_TAI is read on
//              both sides of the PHC a few times; the narrowest pair bounds
//              the read delay. The bound senders see is the PHC's bound plus
//              |CLOCK_TAI - PHC| plus half that pair's width: quiet when it
//              exceeds the margin. Without a known PHC, status says it was
//              not checked.
//   the kernel's TAI offset (adjtimex's tai), with --ptp4l on CLOCK_TAI: 0
//              means nobody set it, CLOCK_TAI reads UTC, 37 s behind the
//              PTP time scale the switches keep: quiet, saying so, unless
//              --tai-offset-0-ok says every party counts on this same clock
//              (namespaces on one machine).
#pragma once

#include <cstdint>
#include <string>

#include <memory>

#include "base/fd.h"
#include "lumend/ptp4l.h"

namespace lumen::lumend
{

// What adjtimex(2) says about the system clock (read-only: modes 0).
struct Timex {
	bool read = false; // false: adjtimex failed (then the rest is 0)
	bool unsync = true; // STA_UNSYNC
	int64_t maxerror_us = 0;
	int64_t esterror_us = 0;
	int32_t tai_offset_s = 0; // TAI - UTC; 0: never set (CLOCK_TAI == CLOCK_REALTIME)
};
Timex read_timex();

// One check of the clock's error bound.
struct ClockReading {
	bool ok = false; // the bound is known and within the margin
	uint64_t bound_ns = UINT64_MAX; // the bound judged (UINT64_MAX: unknown)
	bool stated = false; // the bound is --clock-error's or --phc-error's
	Timex timex; // the kernel's view (CLOCK_TAI only)
	std::string why; // why not ok, for status and the log ("" when ok)
	// CLOCK_TAI against the PHC (see the top of this file)
	bool tai_phc_checked = false; // measured (else tai_phc_note says why not)
	int64_t tai_phc_offset_ns = 0; // PHC - CLOCK_TAI
	uint64_t tai_phc_uncertainty_ns = 0; // half the narrowest TAI-PHC-TAI bracket
	uint64_t phc_bound_ns = UINT64_MAX; // the PHC's own bound, before the hop was added
	std::string tai_phc_note; // "" or why it was not checked
};

// What a check reads, behind an interface so that tests can make it up (a
// PHC that is 37 s ahead, a kernel that never got its TAI offset).
class ClockSource
{
      public:
	virtual ~ClockSource() = default;
	virtual Timex timex() const = 0;
	virtual bool tai(uint64_t *ns) const = 0; // CLOCK_TAI
	virtual bool phc(uint64_t *ns) const = 0; // the PHC compared with it (false: none, or unreadable)
};

// CLOCK_TAI against the PHC as phc2sys measures it: reads CLOCK_TAI, the
// PHC, CLOCK_TAI, `reads` times, and keeps the narrowest bracket (the one
// least delayed by a preemption or a slow PHC read).
struct TaiPhc {
	bool ok = false; // read
	int64_t offset_ns = 0; // PHC - CLOCK_TAI at the bracket's middle
	uint64_t uncertainty_ns = 0; // half the bracket's width
};
constexpr int kTaiPhcReads = 5;
TaiPhc measure_tai_phc(const ClockSource &src, int reads = kTaiPhcReads);

// The verdict with the hop from the PHC to CLOCK_TAI added (pure): r is
// the PHC's own verdict; bound_ns becomes r's plus |offset| plus the
// uncertainty, not ok when that exceeds the margin (or the PHC could not be
// read). r.timex (the kernel's view) says why when CLOCK_TAI is 37 s off.
ClockReading judge_tai_phc(ClockReading r, const TaiPhc &m, const std::string &phc_name, uint64_t margin_ns);
// The kernel's TAI offset judged (pure): 0 is not ok, with why.
ClockReading judge_tai_offset(ClockReading r, const Timex &tx);

// How a clock is checked, for check_clock.
struct CheckPlan {
	bool phc = false; // slots counted on a PHC (else CLOCK_TAI)
	int64_t stated_ns = -1; // --clock-error / --phc-error (-1: none)
	const Ptp4lBound *ptp4l = nullptr; // --ptp4l's readings (null: none)
	bool compare_phc = false; // the source has a PHC to compare CLOCK_TAI with
	std::string phc_name; // its device, for people
	bool tai_offset_0_ok = false; // --tai-offset-0-ok
};
// One check, from what src reads: what Clock::check does, testable with a
// made-up source.
ClockReading check_clock(const ClockSource &src, const CheckPlan &plan, uint64_t margin_ns);

// The verdict on a bound: pure, so tests need no clock. stated_ns < 0: the
// bound is the kernel's (maxerror, or unknown while STA_UNSYNC).
ClockReading judge_bound(const Timex &tx, int64_t stated_ns, uint64_t margin_ns);

// The verdict on ptp4l's readings (pure, as judge_bound).
ClockReading judge_ptp4l(const Ptp4lBound::Reading &p, uint64_t margin_ns);
// "16 s", "2.5 us", "800 ns": a duration for people.
std::string ns_text(uint64_t ns);

class Clock
{
      public:
	// CLOCK_TAI; stated_error_ns < 0: its bound is the kernel's.
	static Clock tai(int64_t stated_error_ns);
	// A PTP hardware clock: Error naming the device when it cannot be
	// opened or read.
	static Clock phc(const std::string &device, uint64_t error_ns);

	uint64_t now() const; // ns on this clock
	// Sleeps until this clock reads at_ns, or returns at once when it is
	// past. A PHC cannot be slept on: the sleep is on CLOCK_TAI, shifted by
	// the PHC - TAI offset measured just before (the two differ by ppm at
	// most over one sleep), and the caller spins the rest on the PHC.
	void sleep_until(uint64_t at_ns) const;
	ClockReading check(uint64_t margin_ns) const;
	// From now on the bound is ptp4l's (see the top of this file).
	void use_ptp4l(std::shared_ptr<const Ptp4lBound> bound)
	{
		ptp4l_ = std::move(bound);
	}
	// CLOCK_TAI, with --ptp4l: the PHC phc2sys keeps it on, compared at
	// every check (--tai-phc DEV). Error naming the device when it cannot
	// be opened or read.
	void compare_with_phc(const std::string &device);
	// --tai-offset-0-ok: every party counts on this same clock, so a TAI
	// offset of 0 is no reason to keep quiet.
	void allow_tai_offset_0()
	{
		tai_offset_0_ok_ = true;
	}
	// The drift a jump check must allow between this clock and
	// CLOCK_MONOTONIC, in ppm (0 for CLOCK_TAI, whose rate is theirs).
	uint32_t drift_ppm() const;
	std::string name() const; // "CLOCK_TAI", "/dev/ptp0"
	bool is_phc() const
	{
		return fd_.valid();
	}

      private:
	Clock() = default;
	int id_ = 0; // clockid_t
	Fd fd_; // the PHC's
	std::string device_;
	int64_t stated_ns_ = -1;
	std::shared_ptr<const Ptp4lBound> ptp4l_;
	Fd ref_fd_; // --tai-phc's PHC
	int ref_id_ = 0;
	std::string ref_device_;
	bool tai_offset_0_ok_ = false;
};

// Catches steps of a clock between checks (see the top of this file).
class JumpDetector
{
      public:
	JumpDetector(uint64_t tolerance_ns, uint32_t drift_ppm) : tolerance_ns_(tolerance_ns), drift_ppm_(drift_ppm)
	{
	}
	// One sample: the clock read between two CLOCK_MONOTONIC reads.
	// Returns the jump in ns (clock advance minus monotonic advance; 0:
	// none). Allowed: the tolerance, the drift over the interval, and the
	// uncertainty of the two samples (how far apart their monotonic reads
	// were: a preemption between them makes a sample vaguer, not a jump).
	// A read going backwards is a jump however small.
	int64_t feed(uint64_t mono_before, uint64_t clock_ns, uint64_t mono_after);
	void reset()
	{
		have_ = false;
	}
	void set_tolerance(uint64_t tolerance_ns)
	{
		tolerance_ns_ = tolerance_ns;
	}
	uint64_t jumps() const
	{
		return jumps_;
	}

      private:
	uint64_t tolerance_ns_;
	uint32_t drift_ppm_;
	bool have_ = false;
	uint64_t mono_ = 0, clock_ = 0, width_ = 0;
	uint64_t jumps_ = 0;
};

// Whether senders may trust the clock: quiet at once on a bad check or a
// jump, gating again after resume_after good checks in a row. It starts
// quiet: a daemon that has not checked its clock yet knows nothing.
class ClockGate
{
      public:
	enum class Change {
		kNone,
		kQuiet, // just went quiet
		kResumed, // just resumed
	};
	explicit ClockGate(uint32_t resume_after) : resume_after_(resume_after ? resume_after : 1)
	{
	}
	Change check(bool ok, const std::string &why); // a periodic check
	Change jump(const std::string &why); // a jump seen between checks
	bool quiet() const
	{
		return quiet_;
	}
	const std::string &why() const
	{
		return why_;
	}
	uint32_t streak() const
	{
		return streak_;
	}
	uint64_t quiet_events() const
	{
		return quiet_events_;
	}

      private:
	Change go_quiet(const std::string &why);
	uint32_t resume_after_;
	bool quiet_ = true;
	uint32_t streak_ = 0;
	uint64_t quiet_events_ = 0;
	std::string why_ = "starting: no clock check yet";
};

} // namespace lumen::lumend
