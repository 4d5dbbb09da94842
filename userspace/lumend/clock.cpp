// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/lumend/clock.cpp - reading the clock, its error bound and
// its jumps, and the quiet/resume state machine (clock.h).
#include "lumend/clock.h"

#include <fcntl.h>
#include <sys/timex.h>
#include <time.h>

#include <cerrno>
#include <cstdio>

#include "base/error.h"

namespace lumen::lumend
{

namespace
{

// A dynamic POSIX clock's id from its descriptor (linux/posix-timers.h:
// CLOCKFD = 3), as clock_gettime(2) takes it.
clockid_t fd_to_clockid(int fd)
{
	return (clockid_t)((~(unsigned)fd << 3) | 3u);
}

bool read_clock(clockid_t id, uint64_t *ns)
{
	timespec ts;
	if (clock_gettime(id, &ts) != 0)
		return false;
	*ns = (uint64_t)ts.tv_sec * 1'000'000'000ull + (uint64_t)ts.tv_nsec;
	return true;
}

uint64_t tai_now()
{
	uint64_t ns = 0;
	read_clock(CLOCK_TAI, &ns);
	return ns;
}

// Sleeps on CLOCK_TAI until at_ns; EINTR (a signal for another thread's
// handler) just sleeps again.
void sleep_tai(uint64_t at_ns)
{
	timespec ts = {(time_t)(at_ns / 1'000'000'000ull), (long)(at_ns % 1'000'000'000ull)};
	while (clock_nanosleep(CLOCK_TAI, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
	}
}

} // namespace

Timex read_timex()
{
	Timex t;
	struct timex tx = {};
	if (adjtimex(&tx) < 0)
		return t;
	t.read = true;
	t.unsync = tx.status & STA_UNSYNC;
	t.maxerror_us = tx.maxerror;
	t.esterror_us = tx.esterror;
	t.tai_offset_s = tx.tai;
	return t;
}

std::string ns_text(uint64_t ns)
{
	char buf[48];
	if (ns == UINT64_MAX)
		return "unknown";
	if (ns < 1000)
		std::snprintf(buf, sizeof(buf), "%llu ns", (unsigned long long)ns);
	else if (ns < 1'000'000)
		std::snprintf(buf, sizeof(buf), "%.3g us", (double)ns / 1e3);
	else if (ns < 1'000'000'000)
		std::snprintf(buf, sizeof(buf), "%.3g ms", (double)ns / 1e6);
	else
		std::snprintf(buf, sizeof(buf), "%.3g s", (double)ns / 1e9);
	return buf;
}

ClockReading judge_bound(const Timex &tx, int64_t stated_ns, uint64_t margin_ns)
{
	ClockReading r;
	r.timex = tx;
	if (stated_ns >= 0) {
		r.stated = true;
		r.bound_ns = (uint64_t)stated_ns;
	} else if (!tx.read) {
		r.why = "adjtimex failed: the clock's error bound is unknown";
		return r;
	} else if (tx.unsync) {
		r.why = "the kernel says the clock is not synchronized (STA_UNSYNC): no ptp4l/phc2sys or chrony "
			"disciplines it (or state its error with --clock-error NS)";
		return r;
	} else {
		r.bound_ns = tx.maxerror_us < 0 ? UINT64_MAX : (uint64_t)tx.maxerror_us * 1000;
	}
	if (r.bound_ns > margin_ns) {
		r.why = "the clock's error bound " + ns_text(r.bound_ns) +
			(r.stated ? " (stated)" : " (kernel maxerror)") + " exceeds the margin " + ns_text(margin_ns);
		return r;
	}
	r.ok = true;
	return r;
}

Clock Clock::tai(int64_t stated_error_ns)
{
	Clock c;
	c.id_ = CLOCK_TAI;
	c.stated_ns_ = stated_error_ns;
	uint64_t ns;
	if (!read_clock(CLOCK_TAI, &ns))
		throw Error("CLOCK_TAI cannot be read: " + errno_text(errno));
	return c;
}

Clock Clock::phc(const std::string &device, uint64_t error_ns)
{
	Clock c;
	// read-only is enough: only setting and adjusting a PHC need write access
	c.fd_.reset(open(device.c_str(), O_RDONLY | O_CLOEXEC));
	if (!c.fd_.valid()) {
		int err = errno;
		throw Error("cannot open the PTP hardware clock " + device + ": " + errno_text(err) +
			    (err == ENOENT ? " (ls /sys/class/ptp; ethtool -T IFACE names an interface's)" : ""));
	}
	c.id_ = fd_to_clockid(c.fd_.get());
	c.device_ = device;
	c.stated_ns_ = (int64_t)error_ns;
	uint64_t ns;
	if (!read_clock(c.id_, &ns))
		throw Error(device + " is not a readable PTP hardware clock: " + errno_text(errno));
	return c;
}

uint64_t Clock::now() const
{
	uint64_t ns = 0;
	read_clock(id_, &ns);
	return ns;
}

void Clock::sleep_until(uint64_t at_ns) const
{
	if (!is_phc()) {
		sleep_tai(at_ns);
		return;
	}
	// the offset PHC - TAI, TAI read on both sides of the PHC
	uint64_t t1 = tai_now(), p = now(), t2 = tai_now();
	uint64_t tai_mid = t1 + (t2 - t1) / 2;
	if (p >= at_ns)
		return;
	int64_t offset = (int64_t)(p - tai_mid);
	sleep_tai((uint64_t)((int64_t)at_ns - offset));
}

ClockReading judge_ptp4l(const Ptp4lBound::Reading &p, uint64_t margin_ns)
{
	ClockReading r;
	r.bound_ns = p.queries && (p.ok || p.gm_present) ? p.bound_ns : UINT64_MAX;
	if (!p.queries)
		r.why = "ptp4l not asked yet";
	else if (!p.ok)
		r.why = p.why;
	else if (p.bound_ns > margin_ns)
		r.why = "ptp4l's offsets reach " + ns_text(p.bound_ns) + ", over the margin " + ns_text(margin_ns);
	else
		r.ok = true;
	return r;
}

namespace
{

// The system's clocks: CLOCK_TAI, adjtimex, and a PHC by its clock id (0: none).
class SystemSource : public ClockSource
{
      public:
	explicit SystemSource(int phc_id) : phc_id_(phc_id)
	{
	}
	Timex timex() const override
	{
		return read_timex();
	}
	bool tai(uint64_t *ns) const override
	{
		return read_clock(CLOCK_TAI, ns);
	}
	bool phc(uint64_t *ns) const override
	{
		return phc_id_ && read_clock(phc_id_, ns);
	}

      private:
	int phc_id_;
};

uint64_t magnitude(int64_t v)
{
	return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
}

std::string signed_text(int64_t v)
{
	return (v < 0 ? "-" : "+") + ns_text(magnitude(v));
}

} // namespace

TaiPhc measure_tai_phc(const ClockSource &src, int reads)
{
	TaiPhc best;
	uint64_t best_width = UINT64_MAX;
	for (int i = 0; i < reads; i++) {
		uint64_t t1, p, t2;
		if (!src.tai(&t1) || !src.phc(&p) || !src.tai(&t2) || t2 < t1)
			continue;
		const uint64_t width = t2 - t1;
		if (width >= best_width)
			continue;
		best_width = width;
		best.ok = true;
		best.offset_ns = (int64_t)(p - (t1 + width / 2));
		best.uncertainty_ns = (width + 1) / 2;
	}
	return best;
}

ClockReading judge_tai_phc(ClockReading r, const TaiPhc &m, const std::string &phc_name, uint64_t margin_ns)
{
	r.phc_bound_ns = r.bound_ns;
	if (!m.ok) {
		r.tai_phc_note = phc_name + " could not be read beside CLOCK_TAI";
		if (r.ok || r.why.empty())
			r.why = "CLOCK_TAI, which senders count slots on, cannot be compared with " + phc_name +
				" (no read of it succeeded)";
		r.ok = false;
		r.bound_ns = UINT64_MAX;
		return r;
	}
	r.tai_phc_checked = true;
	r.tai_phc_offset_ns = m.offset_ns;
	r.tai_phc_uncertainty_ns = m.uncertainty_ns;
	const uint64_t hop = magnitude(m.offset_ns) + m.uncertainty_ns;
	if (r.bound_ns == UINT64_MAX)
		return r; // the PHC's own bound is unknown: its why stands
	r.bound_ns = hop > UINT64_MAX - 1 - r.bound_ns ? UINT64_MAX - 1 : r.bound_ns + hop;
	if (r.bound_ns <= margin_ns)
		return r;
	// the PHC itself may be fine: what fails is the hop to CLOCK_TAI
	std::string why = "CLOCK_TAI, which senders count slots on, is " + signed_text(-m.offset_ns) + " from " +
			  phc_name + " (read within " + ns_text(m.uncertainty_ns) + "): with the PHC's bound " +
			  ns_text(r.phc_bound_ns) + " that is " + ns_text(r.bound_ns) + ", over the margin " +
			  ns_text(margin_ns);
	if (magnitude(m.offset_ns) > 30 * 1'000'000'000ull && r.timex.read && r.timex.tai_offset_s == 0)
		why += " (the kernel's TAI offset is 0: CLOCK_TAI reads UTC; run phc2sys -w, which sets it)";
	else
		why += " (is phc2sys keeping the system clock on " + phc_name + "?)";
	if (r.ok)
		r.why = why;
	else
		r.why += "; and " + why;
	r.ok = false;
	return r;
}

ClockReading judge_tai_offset(ClockReading r, const Timex &tx)
{
	if (!tx.read || tx.tai_offset_s != 0)
		return r;
	const std::string why = "the kernel's TAI offset is 0 (adjtimex): CLOCK_TAI reads UTC, 37 s behind the "
				"PTP time scale the switches keep, so senders would be 37 s off. phc2sys -w (or chrony "
				"with leapsectz right/UTC) sets it; --tai-offset-0-ok when every party counts on "
				"this same clock";
	if (r.ok || r.why.empty())
		r.why = why;
	else
		r.why += "; and " + why;
	r.ok = false;
	return r;
}

ClockReading check_clock(const ClockSource &src, const CheckPlan &plan, uint64_t margin_ns)
{
	const Timex tx = src.timex();
	ClockReading r;
	if (plan.ptp4l) {
		r = judge_ptp4l(plan.ptp4l->reading(), margin_ns);
		r.timex = tx;
	} else {
		r = judge_bound(plan.phc ? Timex{} : tx, plan.stated_ns, margin_ns);
		r.timex = tx;
	}
	if (plan.compare_phc)
		return judge_tai_phc(r, measure_tai_phc(src), plan.phc_name, margin_ns);
	if (!plan.phc && plan.ptp4l) {
		// ptp4l's offsets are the PHC's (or, with software time stamps, the
		// system clock's own): without the PHC, the hop to CLOCK_TAI is
		// left to the margin, and status says so
		r.tai_phc_note = "not checked: no PHC known (--tai-phc DEV names the one phc2sys keeps CLOCK_TAI on)";
		if (!plan.tai_offset_0_ok)
			r = judge_tai_offset(r, tx);
	}
	return r;
}

void Clock::compare_with_phc(const std::string &device)
{
	ref_fd_.reset(open(device.c_str(), O_RDONLY | O_CLOEXEC));
	if (!ref_fd_.valid()) {
		int err = errno;
		throw Error("--tai-phc: cannot open the PTP hardware clock " + device + ": " + errno_text(err) +
			    (err == ENOENT ? " (ls /sys/class/ptp; ethtool -T IFACE names an interface's)" : ""));
	}
	ref_id_ = fd_to_clockid(ref_fd_.get());
	ref_device_ = device;
	uint64_t ns;
	if (!read_clock(ref_id_, &ns))
		throw Error("--tai-phc: " + device + " is not a readable PTP hardware clock: " + errno_text(errno));
}

ClockReading Clock::check(uint64_t margin_ns) const
{
	CheckPlan plan;
	plan.phc = is_phc();
	plan.stated_ns = ptp4l_ ? -1 : stated_ns_;
	plan.ptp4l = ptp4l_.get();
	plan.tai_offset_0_ok = tai_offset_0_ok_;
	// senders count on CLOCK_TAI: with --phc it is compared with the PHC
	// lumend counts on, with --tai-phc with the one phc2sys follows
	const int phc_id = is_phc() ? id_ : ref_id_;
	plan.compare_phc = phc_id != 0;
	plan.phc_name = is_phc() ? device_ : ref_device_;
	return check_clock(SystemSource(phc_id), plan, margin_ns);
}

uint32_t Clock::drift_ppm() const
{
	// the PHC and CLOCK_MONOTONIC each up to ~500 ppm off their nominal rate
	return is_phc() ? 1000 : 0;
}

std::string Clock::name() const
{
	return is_phc() ? device_ : "CLOCK_TAI";
}

int64_t JumpDetector::feed(uint64_t mono_before, uint64_t clock_ns, uint64_t mono_after)
{
	uint64_t width = mono_after - mono_before, mono = mono_before + width / 2;
	if (!have_) {
		have_ = true;
		mono_ = mono;
		clock_ = clock_ns;
		width_ = width;
		return 0;
	}
	bool backwards = clock_ns < clock_;
	int64_t jump = (int64_t)(clock_ns - clock_) - (int64_t)(mono - mono_);
	uint64_t allow = tolerance_ns_ + (width + width_) / 2 + (mono - mono_) * drift_ppm_ / 1'000'000;
	mono_ = mono;
	clock_ = clock_ns;
	width_ = width;
	uint64_t size = jump < 0 ? (uint64_t)-jump : (uint64_t)jump;
	if (!backwards && size <= allow)
		return 0;
	jumps_++;
	return jump ? jump : -1;
}

ClockGate::Change ClockGate::go_quiet(const std::string &why)
{
	streak_ = 0;
	why_ = why;
	if (quiet_)
		return Change::kNone;
	quiet_ = true;
	quiet_events_++;
	return Change::kQuiet;
}

ClockGate::Change ClockGate::check(bool ok, const std::string &why)
{
	if (!ok)
		return go_quiet(why);
	if (!quiet_)
		return Change::kNone;
	if (++streak_ < resume_after_) {
		why_ = "the clock is good again: " + std::to_string(streak_) + " of " + std::to_string(resume_after_) +
		       " checks in a row before gating resumes";
		return Change::kNone;
	}
	quiet_ = false;
	streak_ = 0;
	why_.clear();
	return Change::kResumed;
}

ClockGate::Change ClockGate::jump(const std::string &why)
{
	return go_quiet(why);
}

} // namespace lumen::lumend
