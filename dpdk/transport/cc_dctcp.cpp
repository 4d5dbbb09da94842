// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// dpdk/transport/cc_dctcp.cpp - DCTCP with an optional REPS "wait to
// decrease" gate; the algorithm and its rules are described in cc.h.
//
// Per ACK, in this order:
//   1. a reduction whose window snd_una has now passed is over;
//   2. the ACK's packets and marks go to the alpha window, and alpha is
//      updated when snd_una reaches the window's end;
//   3. the WTD average takes the ACK's CE fraction (when enabled);
//   4. the ACK's unmarked packets' share of its bytes grows the window
//      (unless a reduction is in force); then an ACK with CE cuts (unless a
//      reduction is in force or WTD holds it).
// Every window stays within [min, max]; the pacing rate follows the window.
// As reTCP (algorithm retcp), the jumps of a change of circuit phase come
// from on_circuit, between ACKs.
#include "transport/cc.h"

#include <stdexcept>

namespace lumen::dp
{

namespace
{

__extension__ typedef unsigned __int128 u128;

// Bytes of one ACK taken into account: more is not a plausible ACK, and the
// bound keeps acked * mss below 2^48.
constexpr uint64_t kAckedMax = 1ull << 32;
// Linux's pacing gains (tcp_update_pacing_rate), in percent.
constexpr uint64_t kPacingSsPct = 200;
constexpr uint64_t kPacingCaPct = 120;
constexpr uint32_t kSrttShift = 3; // srtt EWMA weight 1/8, RFC 6298

// a comes before b in the wrapping 32-bit byte sequence
bool seq_before(uint32_t a, uint32_t b)
{
	return lumen_seq_after(b, a);
}

// avg += (sample - avg) * weight, without signed arithmetic; Q16 weight
uint32_t ewma_q16(uint32_t avg, uint32_t sample, uint32_t weight)
{
	if (sample >= avg)
		return avg + uint32_t((uint64_t(sample - avg) * weight) >> 16);
	return avg - uint32_t((uint64_t(avg - sample) * weight) >> 16);
}

} // namespace

Dctcp::Dctcp(const CcParams &p) : CongestionControl(p.algorithm == CcAlgorithm::kRetcp ? "retcp" : "dctcp")
{
	if (p.algorithm != CcAlgorithm::kDctcp && p.algorithm != CcAlgorithm::kRetcp)
		throw std::invalid_argument("Dctcp needs algorithm = dctcp or retcp");
	std::string err = p.validate();
	if (!err.empty())
		throw std::invalid_argument(err);
	mss_ = p.mss;
	g_shift_ = p.dctcp_g_shift;
	init_cwnd_ = uint64_t(p.init_cwnd_pkts) * p.mss;
	min_cwnd_ = uint64_t(p.dctcp_min_cwnd_pkts) * p.mss;
	max_cwnd_ = p.dctcp_max_cwnd_bytes;
	host_bw_bps_ = p.host_bw_bps;
	base_rtt_ns_ = p.base_rtt_ns ? p.base_rtt_ns : LUMEN_PTCP_DEFAULT_BASE_RTT_NS;
	pacing_ = p.dctcp_pacing;
	wtd_ = p.dctcp_wtd;
	wtd_weight_ = p.dctcp_wtd_weight;
	wtd_threshold_ = p.dctcp_wtd_threshold;
	retcp_on_ = p.algorithm == CcAlgorithm::kRetcp;
	retcp_params_ = p.retcp_params();
	lumen_retcp_init(&retcp_);
	ssthresh_ = UINT64_MAX; // slow start until the first reduction
	alpha_ = p.dctcp_alpha_init << (kAlphaShift - 16);
	cwnd_bytes_ = init_cwnd_;
	update_pacing();
}

uint64_t Dctcp::clamp(uint64_t cwnd) const
{
	return lumen_clamp_u64(cwnd, min_cwnd_, max_cwnd_);
}

void Dctcp::update_pacing()
{
	if (!pacing_) {
		pacing_bps_ = 0;
		return;
	}
	uint64_t rtt = srtt_ns_ ? srtt_ns_ : base_rtt_ns_;
	// cwnd <= 2^30, so cwnd * 8e9 < 2^63; rtt >= 1
	uint64_t rate = lumen_div64(cwnd_bytes_ * 8000000000ull, rtt);
	if (rate >= host_bw_bps_) {
		pacing_bps_ = host_bw_bps_;
		return;
	}
	// rate < 1.6e12 here: the gain cannot overflow
	rate = lumen_div64(rate * (in_slow_start() ? kPacingSsPct : kPacingCaPct), 100);
	pacing_bps_ = lumen_min_u64(lumen_max_u64(rate, 1), host_bw_bps_);
}

// A reduction (ECN cut, loss halving) lasts until snd_una passes the snd_nxt
// of the moment it was taken: the ACK that reaches that snd_nxt still only
// acknowledges data sent before the reduction, so its mark cannot cut again.
void Dctcp::end_guard(const CcAck &ack)
{
	if (guard_ && lumen_seq_after(ack.snd_una_bytes, guard_end_)) {
		guard_ = false;
		hold_growth_ = false;
	}
}

// Step 2: the alpha window. ce <= ack.acked_pkts.
void Dctcp::window_account(const CcAck &ack, uint32_t ce)
{
	win_pkts_ += ack.acked_pkts;
	win_ce_ += ce;
	if (seq_before(ack.snd_una_bytes, win_end_))
		return;
	if (win_pkts_) {
		uint64_t pkts = win_pkts_, marked = win_ce_;

		// keep marked << 20 within 64 bits (never for a real window)
		while (pkts >= (1ull << 40)) {
			pkts >>= 1;
			marked >>= 1;
		}
		uint32_t frac = uint32_t(lumen_div64(marked << kAlphaShift, pkts)); // <= 2^20
		// alpha += g * (F - alpha), the sign handled by a branch
		if (frac >= alpha_)
			alpha_ += (frac - alpha_) >> g_shift_;
		else
			alpha_ -= (alpha_ - frac) >> g_shift_;
		counters_.updates++;
	}
	win_pkts_ = 0;
	win_ce_ = 0;
	win_end_ = ack.snd_nxt_bytes;
}

// Step 3: whether WTD lets a mark of this ACK cut; the average takes every
// ACK that reports packets (REPS: one sample per ACK, the ACK's CE fraction).
bool Dctcp::wtd_allows_cut(const CcAck &ack, uint32_t ce)
{
	if (!wtd_)
		return true;
	if (ack.acked_pkts) {
		uint32_t sample = uint32_t(lumen_div64(uint64_t(ce) << 16, ack.acked_pkts));
		wtd_avg_ = ewma_q16(wtd_avg_, sample, wtd_weight_);
	}
	return wtd_avg_ >= wtd_threshold_;
}

void Dctcp::reduce(uint64_t new_cwnd, bool hold_growth)
{
	cwnd_bytes_ = clamp(new_cwnd);
	ssthresh_ = cwnd_bytes_;
	ai_acc_ = 0;
	guard_ = true;
	hold_growth_ = hold_growth;
	if (have_seq_)
		guard_end_ = snd_nxt_;
	else
		guard_end_pending_ = true; // before any ACK: the first one's snd_nxt
}

// Slow start below ssthresh (cwnd += acked, at most up to ssthresh), one MSS
// per window of acked bytes above it; what slow start leaves of the ACK goes
// to the additive increase.
void Dctcp::grow(uint64_t acked)
{
	uint64_t cwnd = cwnd_bytes_;

	if (cwnd < ssthresh_) {
		uint64_t ss = lumen_min_u64(acked, ssthresh_ - cwnd);

		cwnd += ss;
		acked -= ss;
	}
	if (acked && cwnd >= ssthresh_) {
		// acked <= 2^32, mss < 2^16: the remainder stays below 2^49
		ai_acc_ += acked * mss_;
		if (ai_acc_ >= cwnd) {
			uint64_t inc = lumen_div64(ai_acc_, cwnd);

			ai_acc_ -= inc * cwnd;
			cwnd += inc;
		}
	}
	cwnd_bytes_ = clamp(cwnd);
}

// reTCP only: the window of the circuit's phase now (lumen/retcp.h); no
// circuit to tell of is the packet network. Windows in bytes: cwnd <= 1
// GiB, and ssthresh either unset (UINT64_MAX: slow start) or at most a
// window.
uint64_t Dctcp::on_circuit(bool known, uint64_t tai_ns, uint64_t open_ns, uint64_t close_ns)
{
	__u64 until = 0;
	uint32_t phase = LUMEN_RETCP_PACKET;

	if (!retcp_on_)
		return 0;
	if (known)
		phase = lumen_retcp_phase(open_ns, close_ns, retcp_params_.prebuffer_ns, tai_ns, &until);
	if (phase == retcp_.phase)
		return until;
	uint32_t ss = ssthresh_ >= UINT32_MAX ? UINT32_MAX : (uint32_t)ssthresh_;
	cwnd_bytes_ = lumen_retcp_on_phase(&retcp_, &retcp_params_, phase, (uint32_t)cwnd_bytes_, &ss,
					   (uint32_t)min_cwnd_, (uint32_t)max_cwnd_, UINT32_MAX);
	ssthresh_ = ss == UINT32_MAX ? UINT64_MAX : ss;
	ai_acc_ = 0;
	counters_.circuit_up = retcp_.jumps_up;
	counters_.circuit_down = retcp_.jumps_down;
	update_pacing();
	return until;
}

void Dctcp::on_ack(const CcAck &ack)
{
	uint32_t ce = ack.ce_pkts < ack.acked_pkts ? ack.ce_pkts : ack.acked_pkts;
	uint64_t acked = lumen_min_u64(ack.acked_bytes, kAckedMax);

	counters_.acks++;
	if (ack.acked_bytes)
		rto_episode_ = false; /* snd_una moved: undo_timeout's chance is over */
	if (ack.rtt_ns) {
		uint64_t rtt = lumen_min_u64(ack.rtt_ns, 1ull << 40);

		if (!srtt_ns_)
			srtt_ns_ = rtt;
		else if (rtt >= srtt_ns_)
			srtt_ns_ += (rtt - srtt_ns_) >> kSrttShift;
		else
			srtt_ns_ -= (srtt_ns_ - rtt) >> kSrttShift;
		srtt_ns_ = lumen_max_u64(srtt_ns_, 1);
	}
	snd_nxt_ = ack.snd_nxt_bytes;
	if (!have_seq_) {
		// the first ACK (or the first after idle) opens the first window
		have_seq_ = true;
		win_end_ = ack.snd_nxt_bytes;
		if (guard_end_pending_)
			guard_end_ = ack.snd_nxt_bytes;
		guard_end_pending_ = false;
	}

	end_guard(ack);
	window_account(ack, ce);
	bool wtd_ok = wtd_allows_cut(ack, ce);
	// the window grows by the unmarked packets' share of the bytes (ce >= 1
	// makes acked_pkts >= 1; the product < 2^64 * 2^32 needs 128 bits),
	// before a cut: as if their ACKs had come first
	if (ce)
		acked = (uint64_t)((u128)acked * (ack.acked_pkts - ce) / ack.acked_pkts);
	if (!hold_growth_ && acked)
		grow(acked);
	if (ce) {
		// a marked ACK cuts once per window
		if (!guard_ && wtd_ok) {
			// cwnd < 2^30, alpha <= 2^20: the product < 2^50
			reduce(cwnd_bytes_ - ((cwnd_bytes_ * alpha_) >> (kAlphaShift + 1)), true);
			counters_.ecn_cuts++;
		} else if (!guard_) {
			counters_.wtd_held++;
		}
	}
	update_pacing();
}

void Dctcp::on_loss(uint64_t now_ns, bool timeout)
{
	(void)now_ns;
	if (!timeout) {
		counters_.losses++;
		if (guard_)
			return; // this window was reduced already
		reduce(cwnd_bytes_ / 2, true);
		counters_.loss_cuts++;
		update_pacing();
		return;
	}
	// RTO: ssthresh = cwnd / 2 unless the window was reduced for this data
	// already (a repeated RTO, or a loss in a reduction: Linux's
	// tcp_enter_loss keeps ssthresh then), cwnd to the minimum, slow start.
	counters_.timeouts++;
	if (!rto_episode_) {
		rto_episode_ = true;
		prior_cwnd_ = cwnd_bytes_;
		prior_ssthresh_ = ssthresh_;
	}
	uint64_t ssthresh = guard_ ? ssthresh_ : lumen_max_u64(cwnd_bytes_ / 2, min_cwnd_);
	reduce(min_cwnd_, false);
	ssthresh_ = ssthresh;
	update_pacing();
}

// The RTOs were spurious: the window and ssthresh from before the first
// (each the larger of now and then, as Linux's tcp_undo_cwnd_reduction),
// and no reduction in force, so the next marked window may cut again.
void Dctcp::undo_timeout()
{
	if (!rto_episode_)
		return;
	rto_episode_ = false;
	counters_.undone_timeouts++;
	cwnd_bytes_ = clamp(lumen_max_u64(cwnd_bytes_, prior_cwnd_));
	ssthresh_ = lumen_max_u64(ssthresh_, prior_ssthresh_);
	guard_ = hold_growth_ = guard_end_pending_ = false;
	update_pacing();
}

// After idle (Linux's tcp_cwnd_restart): restart from at most the initial
// window, remembering the old one in ssthresh (at least 3/4 of it), and open
// a new alpha window with the next ACK. alpha and the WTD average are kept.
void Dctcp::on_idle_restart(uint64_t now_ns)
{
	(void)now_ns;
	counters_.idle_restarts++;
	uint64_t keep = cwnd_bytes_ - cwnd_bytes_ / 4;
	if (ssthresh_ < keep)
		ssthresh_ = keep;
	cwnd_bytes_ = clamp(lumen_min_u64(cwnd_bytes_, init_cwnd_));
	ai_acc_ = 0;
	guard_ = false;
	hold_growth_ = false;
	guard_end_pending_ = false;
	have_seq_ = false;
	win_pkts_ = 0;
	win_ce_ = 0;
	update_pacing();
}

} // namespace lumen::dp
