// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/lumend/slot_engine.cpp - sleeping, spinning and publishing
// at slot boundaries, and measuring how late (slot_engine.h).
#include "lumend/slot_engine.h"

#include <sched.h>
#include <sys/prctl.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/error.h"
#include "base/system.h"

namespace lumen::lumend
{

namespace
{

constexpr uint64_t kSleepPieceNs = 10'000'000; // the longest sleep without looking at stop and offers
constexpr uint64_t kShareEveryNs = 10'000'000;

// t0 + k * slot_ns; false beyond 2^64 ns
bool boundary_of(const lumen_slot_timing &t, uint64_t k, uint64_t *ns)
{
	if (k > (UINT64_MAX - t.t0_ns) / t.slot_ns)
		return false;
	*ns = t.t0_ns + k * t.slot_ns;
	return true;
}

inline void cpu_relax()
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	asm volatile("yield");
#endif
}

std::string signed_ns_text(int64_t ns)
{
	// appended, not "+" + ...: GCC 12 at -O3 warns (-Wrestrict) about its
	// own inlined operator+ for a literal on the left
	std::string out(1, ns < 0 ? '-' : '+');
	return out.append(ns_text(ns < 0 ? (uint64_t)-ns : (uint64_t)ns));
}

} // namespace

// ---------------------------------------------------------------------------
// Histogram

unsigned Histogram::bucket_of(uint64_t ns)
{
	if (ns < kExact)
		return (unsigned)ns;
	unsigned e = 63u - (unsigned)__builtin_clzll(ns); // 2^e <= ns, e >= 8
	unsigned sub = (unsigned)(ns >> (e - 5)) & (kSub - 1);
	return kExact + (e - 8) * kSub + sub;
}

uint64_t Histogram::upper_of(unsigned bucket)
{
	if (bucket < kExact)
		return bucket;
	unsigned e = 8 + (bucket - kExact) / kSub, sub = (bucket - kExact) % kSub;
	uint64_t width = 1ull << (e - 5);
	uint64_t lower = (1ull << e) + sub * width;
	return lower + (width - 1);
}

void Histogram::add(uint64_t ns)
{
	n_[bucket_of(ns)]++;
	count_++;
	max_ = std::max(max_, ns);
	sum_ += ns;
}

uint64_t Histogram::percentile(double q) const
{
	if (!count_)
		return 0;
	q = std::clamp(q, 0.0, 1.0);
	uint64_t rank = std::max<uint64_t>(1, (uint64_t)std::ceil(q * (double)count_));
	uint64_t seen = 0;
	for (unsigned b = 0; b < kBuckets; b++) {
		seen += n_[b];
		if (seen >= rank)
			return std::min(upper_of(b), max_);
	}
	return max_;
}

// ---------------------------------------------------------------------------
// SpinTuner

void SpinTuner::add(uint64_t late_ns)
{
	w_[n_++] = late_ns;
	// a first guess after kFirst sleeps, then one per full window
	if (n_ < (warm_ ? kWindow : kFirst))
		return;
	auto rank = [&](unsigned r) {
		std::nth_element(w_.begin(), w_.begin() + r, w_.begin() + n_);
		return w_[r];
	};
	p99_ = rank(n_ * 99 / 100);
	p90_ = rank(n_ * 9 / 10);
	p50_ = rank(n_ / 2);
	spin_ = std::clamp(2 * p90_, floor_, std::max(floor_, max_));
	n_ = 0;
	warm_ = true;
}

// ---------------------------------------------------------------------------
// Pure slot arithmetic

uint64_t first_slot_after(const lumen_slot_timing &t, uint64_t now_ns, uint32_t stride)
{
	if (now_ns <= t.t0_ns)
		return 0;
	uint64_t since = now_ns - t.t0_ns;
	uint64_t k = since / t.slot_ns + (since % t.slot_ns != 0);
	return (k + stride - 1) / stride * stride;
}

CatchUp catch_up(const lumen_slot_timing &t, uint64_t want, uint64_t now_ns, uint32_t stride)
{
	uint64_t next;
	if (!boundary_of(t, want + stride, &next) || now_ns < next)
		return {want, 0};
	uint64_t in = (now_ns - t.t0_ns) / t.slot_ns;
	uint64_t k = in / stride * stride;
	return {k, (k - want) / stride};
}

uint32_t auto_stride(uint64_t slot_ns)
{
	if (!slot_ns || slot_ns >= kMinPublishNs)
		return 1;
	return (uint32_t)((kMinPublishNs + slot_ns - 1) / slot_ns);
}

// ---------------------------------------------------------------------------
// The engine

std::vector<lumen_osched_window> next_windows(const Tables &t, uint64_t margin_ns, uint64_t slot)
{
	std::vector<lumen_osched_window> w(t.nodes, lumen_osched_window{0, 0});
	if (!t.timing.period)
		return w;
	uint32_t in_period = (uint32_t)(slot % t.timing.period);
	for (uint32_t dst = 0; dst < t.nodes; dst++) {
		uint16_t wait = t.waits[(size_t)in_period * t.nodes + dst];
		__u64 open, close;
		if (wait != LUMEN_SLOT_NEVER &&
		    lumen_slot_window(&t.timing, slot + wait, margin_ns, &open, &close) == 0)
			w[dst] = lumen_osched_window{open, close};
	}
	return w;
}

SlotEngine::SlotEngine(const Clock &clock, ShmPage &page, std::shared_ptr<const Plan> plan, const EngineOptions &o,
		       OschedPin *pin)
    : clock_(clock), page_(page), pin_(pin), o_(o), plan_(std::move(plan)), timing_(plan_->tables.timing),
      stride_(o.stride ? o.stride : auto_stride(timing_.slot_ns)), spin_(o.spin_ns, o.spin_max_ns),
      jumps_(plan_->margin_ns, clock.drift_ppm()), gate_(o.resume_after)
{
	st_.version = plan_->tables.version;
	st_.margin_ns = plan_->margin_ns;
	st_.stride = stride_;
	st_.spin_ns = o.spin_ns;
	st_.quiet = page_.page()->quiet;
	st_.why = gate_.why();
	shared_ = st_;
	shared_plan_ = plan_;
}

void SlotEngine::log(const std::string &line) const
{
	if (o_.log_fn)
		o_.log_fn(line, o_.log_arg);
	else if (!o_.quiet_log)
		std::fprintf(stderr, "lumend: %s\n", line.c_str());
}

void SlotEngine::set_quiet(uint32_t mask, uint32_t bits)
{
	uint32_t q = (st_.quiet & ~mask) | (bits & mask);
	if (q == st_.quiet)
		return;
	page_.set_quiet(q);
	st_.quiet = q;
	if (pin_) {
		try {
			pin_->set_quiet(q);
		} catch (const std::exception &e) {
			pin_failed(e);
		}
	}
}

void SlotEngine::pin_failed(const std::exception &e)
{
	if (!st_.pin_errors++)
		log(std::string(e.what()) + " (counted as pin_errors; said once)");
}

// After the page: a system call or two, in what is left of the slot.
void SlotEngine::publish_pin(uint64_t slot, uint64_t boundary_ns)
{
	if (!pin_)
		return;
	lumen_osched_state s{};
	s.quiet = st_.quiet;
	s.self = plan_->tables.self;
	s.version = plan_->tables.version;
	s.slot = slot;
	s.boundary_ns = boundary_ns;
	s.period = timing_.period;
	s.in_period = timing_.period ? (uint32_t)(slot % timing_.period) : 0;
	try {
		pin_->publish(s, next_windows(plan_->tables, plan_->margin_ns, slot));
	} catch (const std::exception &e) {
		pin_failed(e);
	}
}

void SlotEngine::apply(std::shared_ptr<const Plan> plan)
{
	page_.write_tables(plan->tables, plan->margin_ns);
	plan_ = std::move(plan);
	timing_ = plan_->tables.timing;
	stride_ = o_.stride ? o_.stride : auto_stride(timing_.slot_ns);
	jumps_.set_tolerance(plan_->margin_ns);
	st_.version = plan_->tables.version;
	st_.margin_ns = plan_->margin_ns;
	st_.stride = stride_;
	st_.applied++;
	log("schedule version " + std::to_string(st_.version) + " from " + plan_->path +
	    " in force: " + std::to_string(timing_.period) + " slots of " + ns_text(timing_.slot_ns) + ", margin " +
	    ns_text(plan_->margin_ns));
	share(true);
}

bool SlotEngine::sample_jump()
{
	uint64_t m1 = monotonic_ns(), c = clock_.now(), m2 = monotonic_ns();
	int64_t j = jumps_.feed(m1, c, m2);
	if (!j)
		return false;
	st_.clock_jumps++;
	st_.last_jump_ns = j;
	gate_.jump(clock_.name() + " jumped by " + signed_ns_text(j) + " against CLOCK_MONOTONIC");
	st_.why = gate_.why();
	st_.quiet_events = gate_.quiet_events();
	log(gate_.why() + ": quiet until " + std::to_string(o_.resume_after) + " good checks in a row");
	set_quiet(LUMEN_QUIET_CLOCK, LUMEN_QUIET_CLOCK);
	return true;
}

void SlotEngine::check_clock()
{
	ClockReading r = clock_.check(plan_->margin_ns);
	st_.clock = r;
	st_.clock_checks++;
	st_.clock_bad_checks += !r.ok;
	ClockGate::Change c = gate_.check(r.ok, r.why);
	st_.why = gate_.why();
	st_.quiet_events = gate_.quiet_events();
	if (c == ClockGate::Change::kQuiet)
		log("quiet: " + r.why);
	else if (c == ClockGate::Change::kResumed)
		log("gating: " + clock_.name() + " error bound " + ns_text(r.bound_ns) + " within the margin " +
		    ns_text(plan_->margin_ns));
	set_quiet(LUMEN_QUIET_CLOCK, gate_.quiet() ? LUMEN_QUIET_CLOCK : 0);
}

void SlotEngine::share(bool force)
{
	uint64_t mono = monotonic_ns();
	if (!force && mono < next_share_mono_)
		return;
	if (force)
		share_mu_.lock();
	else if (!share_mu_.try_lock())
		return;
	shared_ = st_;
	shared_plan_ = plan_;
	share_mu_.unlock();
	next_share_mono_ = mono + kShareEveryNs;
}

void SlotEngine::offer(std::shared_ptr<const Plan> plan)
{
	std::lock_guard<std::mutex> g(offer_mu_);
	offered_ = std::move(plan);
	has_offer_.store(true, std::memory_order_release);
}

bool SlotEngine::take_offer()
{
	if (!has_offer_.load(std::memory_order_acquire))
		return false;
	std::unique_lock<std::mutex> g(offer_mu_);
	std::shared_ptr<const Plan> p = std::move(offered_);
	has_offer_.store(false, std::memory_order_relaxed);
	g.unlock();
	if (!p)
		return false;
	apply(std::move(p));
	return true;
}

void SlotEngine::stage(std::shared_ptr<const Plan> plan, uint64_t at_ns)
{
	std::lock_guard<std::mutex> g(offer_mu_);
	staged_ = std::move(plan);
	staged_at_ = at_ns;
	committed_ = false;
	has_change_.store(true, std::memory_order_release);
}

void SlotEngine::commit()
{
	std::lock_guard<std::mutex> g(offer_mu_);
	committed_ = true;
}

void SlotEngine::abort()
{
	std::lock_guard<std::mutex> g(offer_mu_);
	staged_.reset();
	committed_ = false;
	has_change_.store(false, std::memory_order_release);
}

bool SlotEngine::follow_change(uint64_t boundary_ns)
{
	if (!has_change_.load(std::memory_order_acquire)) {
		set_quiet(LUMEN_QUIET_VERSION, 0); // an abort ends the quiet
		page_.set_change(0);
		overdue_said_ = false;
		return false;
	}
	std::unique_lock<std::mutex> g(offer_mu_);
	if (!staged_)
		return false;
	page_.set_change(staged_at_); // senders stop booking past the instant
	if (boundary_ns < staged_at_)
		return false;
	if (!committed_) {
		const uint64_t version = staged_->tables.version, at = staged_at_;
		g.unlock();
		if (!(st_.quiet & LUMEN_QUIET_VERSION))
			log("the change to version " + std::to_string(version) +
			    " is due and not committed: quiet until it is, or is aborted");
		set_quiet(LUMEN_QUIET_VERSION, LUMEN_QUIET_VERSION);
		/* Never aborted here, however long it waits: the coordinator
		 * may have committed the others, who switched at the instant
		 * (include/lumen/optical.h). Said once, for an operator. */
		lumen_sched_change c{};
		c.switch_ns = at;
		c.state = LUMEN_CHANGE_STAGED;
		const uint64_t limit =
			o_.overdue_ns ? o_.overdue_ns : std::max<uint64_t>(4 * timing_.slot_ns, 100'000'000ull);
		if (!overdue_said_ && lumen_change_overdue(&c, boundary_ns, limit)) {
			overdue_said_ = true;
			st_.changes_overdue++;
			log("the change to version " + std::to_string(version) +
			    " is overdue: " + std::to_string((boundary_ns - at) / 1'000'000) +
			    " ms past its instant with no commit or abort (its coordinator died, or its word was "
			    "lost); quiet until it comes: lumen sched change's coordinator, or by hand `commit` "
			    "if the others switched, `abort` if none did");
		}
		return false;
	}
	std::shared_ptr<const Plan> p = std::move(staged_);
	has_change_.store(false, std::memory_order_relaxed);
	g.unlock();
	apply(std::move(p));
	overdue_said_ = false;
	st_.changes++;
	set_quiet(LUMEN_QUIET_VERSION, 0);
	return true;
}

EngineStats SlotEngine::snapshot() const
{
	std::lock_guard<std::mutex> g(share_mu_);
	return shared_;
}

std::shared_ptr<const Plan> SlotEngine::plan() const
{
	std::lock_guard<std::mutex> g(share_mu_);
	return shared_plan_;
}

void SlotEngine::say_stopped()
{
	set_quiet(LUMEN_QUIET_STOPPED, LUMEN_QUIET_STOPPED);
	share(true);
}

void SlotEngine::run(const std::atomic<bool> &stop, uint64_t until_ns)
{
	// wake-ups as asked: the default 50 us of timer slack would eat the spin
	prctl(PR_SET_TIMERSLACK, 1ul, 0ul, 0ul, 0ul);
	if (o_.cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(o_.cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set) != 0)
			log("cannot pin the slot engine to CPU " + std::to_string(o_.cpu) + ": " + errno_text(errno));
	}
	if (o_.fifo > 0) {
		// this thread only: the control thread stays an ordinary one
		sched_param sp = {};
		sp.sched_priority = o_.fifo;
		if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0)
			log("cannot run the slot engine at SCHED_FIFO " + std::to_string(o_.fifo) + ": " +
			    errno_text(errno));
	}
	uint64_t now = clock_.now();
	st_.started_ns = now;
	sample_jump();
	check_clock();
	if (gate_.quiet())
		log("not gating yet: " + gate_.why());
	next_check_ns_ = monotonic_ns() + o_.check_interval_ns;
	uint64_t k = first_slot_after(timing_, now, stride_);

	while (!stop.load(std::memory_order_relaxed)) {
		uint64_t boundary;
		if (!boundary_of(timing_, k, &boundary)) {
			log("the schedule's slots run beyond 2^64 ns");
			break;
		}
		if (until_ns && boundary > until_ns)
			break;
		uint64_t spin = spin_.spin();
		uint64_t wake = boundary > spin ? boundary - spin : 0;
		now = clock_.now();
		if (now < wake) {
			bool last = wake <= now + kSleepPieceNs;
			clock_.sleep_until(last ? wake : now + kSleepPieceNs);
			if (last && o_.spin_auto) {
				uint64_t woke = clock_.now();
				spin_.add(woke > wake ? woke - wake : 0);
				st_.spin_ns = spin_.spin();
				st_.wake_p50_ns = spin_.p50();
				st_.wake_p90_ns = spin_.p90();
				st_.wake_p99_ns = spin_.p99();
			}
			bool restart = sample_jump();
			restart |= take_offer();
			if (monotonic_ns() >= next_check_ns_) {
				check_clock();
				next_check_ns_ = monotonic_ns() + o_.check_interval_ns;
			}
			if (restart)
				k = first_slot_after(timing_, clock_.now(), stride_);
			continue;
		}
		// (a clock stepped back mid-spin would keep it spinning: back to
		// the sleep, whose jump check sees the step)
		while ((now = clock_.now()) < boundary && boundary - now <= spin + kSleepPieceNs)
			cpu_relax();
		if (now < boundary)
			continue;

		// the publish itself: nothing between the spin's end and this
		CatchUp c = catch_up(timing_, k, now, stride_);
		if (c.missed && sample_jump()) {
			k = first_slot_after(timing_, clock_.now(), stride_);
			continue;
		}
		uint64_t at = now;
		boundary_of(timing_, c.slot, &at);
		if (follow_change(at)) {
			/* the new schedule's slots, from its t0 (the instant) on */
			uint64_t since = at - timing_.t0_ns, want = since / timing_.slot_ns / stride_ * stride_;
			c = catch_up(timing_, want, now, stride_);
			boundary_of(timing_, c.slot, &at);
		}
		uint64_t err = now - at;
		st_.missed += c.missed;
		st_.late += err > plan_->margin_ns;
		page_.publish(c.slot, now, st_.late, st_.missed);
		st_.published++;
		st_.slot = c.slot;
		st_.boundary_ns = now;
		st_.last_error_ns = (int64_t)err;
		st_.errors.add(err);
		k = c.slot + stride_;

		// housekeeping, in what is left of the slot
		publish_pin(c.slot, now);
		bool restart = take_offer();
		restart |= sample_jump();
		if (restart)
			k = first_slot_after(timing_, clock_.now(), stride_);
		if (monotonic_ns() >= next_check_ns_) {
			check_clock();
			next_check_ns_ = monotonic_ns() + o_.check_interval_ns;
		}
		share(false);
	}
	share(true);
}

} // namespace lumen::lumend
