// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// dpdk/transport/cc_powertcp.cpp - PowerTCP, theta-PowerTCP and HPCC (the
// core's LUMEN_PTCP_MODE_HPCC, lumen/hpcc.h) for lumen-dp: the third shell of
// include/lumen/powertcp.h. Like kernel/tcp_powertcp.c and
// bpf/powertcp.bpf.c it calls lumen_ptcp_init once, lumen_ptcp_ack_process
// per ACK (with the INT echo of that very ACK in INT mode), and
// lumen_ptcp_tx_event for idle, and installs the core's window and pacing
// rate; every decision in between is the shared one. Where lumen-dp differs
// from TCP, the conversion happens at this boundary:
//   - clocks and RTT samples are ns already (lumen_ptcp_ack_make converts
//     TCP's microseconds), see on_ack;
//   - the first sequence number is learned from the first ACK, see on_ack;
//   - the window stays in bytes (no lumen_ptcp_cwnd_segs: the engine counts
//     bytes), the rate becomes bit/s;
//   - there is no ssthresh or undo to neutralise: on_loss leaves the window
//     alone, which is what the kernel shells achieve with
//     TCP_INFINITE_SSTHRESH and cong_control (powertcp_ack.h, "Loss and
//     recovery").
#include "transport/cc.h"

#include <stdexcept>

namespace lumen::dp
{

PowerTcp::PowerTcp(const CcParams &params) : CongestionControl(cc_algorithm_name(params.algorithm))
{
	if (params.algorithm != CcAlgorithm::kPowerTcp && params.algorithm != CcAlgorithm::kThetaPowerTcp &&
	    params.algorithm != CcAlgorithm::kHpcc)
		throw std::invalid_argument("PowerTcp needs algorithm = powertcp, theta_powertcp or hpcc");
	std::string err = params.validate();
	if (!err.empty())
		throw std::invalid_argument(err);
	p_ = params.ptcp_params();
	switch (params.algorithm) {
	case CcAlgorithm::kPowerTcp:
		mode_ = LUMEN_PTCP_MODE_INT;
		break;
	case CcAlgorithm::kHpcc:
		mode_ = LUMEN_PTCP_MODE_HPCC;
		break;
	default:
		mode_ = LUMEN_PTCP_MODE_THETA;
		break;
	}
	mss_ = params.mss;
	// the initial window (one host BDP) and rate, before the sequence
	// space is known; on_ack initialises again at the first ACK
	lumen_ptcp_init(&st_, &p_, mode_, 0, mss_);
	publish();
}

void PowerTcp::count_events(uint32_t mask)
{
	for (uint32_t bit = 0; bit < LUMEN_PTCP_EVBIT_COUNT; bit++) {
		if (mask & (1u << bit))
			events_[bit]++;
	}
}

// The core's outputs, as the kernel shells' ptcp_apply / cc_apply install
// them: the window as the core clamped it, the rate in bit/s.
void PowerTcp::publish()
{
	cwnd_bytes_ = st_.cwnd_bytes;
	pacing_bps_ = st_.pacing_rate * 8; // < 2^30 B * 1e9 / 1 us * 8 < 2^53
}

void PowerTcp::on_ack(const CcAck &ack)
{
	lumen_ptcp_ack core_ack;
	lumen_ptcp_result res = LUMEN_PTCP_HELD;

	counters_.acks++;
	if (!started_) {
		// lumen_ptcp_init wants the first sequence number the flow sends
		// (the kernel shells pass snd_nxt at init). The engine makes its
		// CC before that is known to us, so the first ACK gives it: the
		// data it acknowledges began acked_bytes before snd_una. Until
		// now nothing could change the window (only ACKs do), so this
		// init leaves the state the shells would have at this ACK.
		uint32_t first =
			ack.snd_una_bytes - uint32_t(lumen_min_u64(ack.acked_bytes, LUMEN_PTCP_MAX_CWND_BYTES));

		lumen_ptcp_init(&st_, &p_, mode_, first, mss_);
		started_ = true;
	}
	snd_nxt_ = ack.snd_nxt_bytes;
	// What lumen_ptcp_ack_make does for the kernel shells, in ns:
	// lumen-dp's clock and RTT samples are the core's units already, and
	// rtt_ns == 0 already means "no sample". Going through ack_make's
	// microseconds would round every RTT to whole us (5% of 20 us).
	core_ack.now_ns = ack.now_ns;
	core_ack.rtt_ns = ack.rtt_ns;
	core_ack.snd_una = ack.snd_una_bytes;
	core_ack.snd_nxt = ack.snd_nxt_bytes;
	core_ack.mss = mss_;
	// theta mode takes no INT, as the kernel shells fetch none for it
	const lumen_int_opt *echo = lumen_ptcp_mode_int_fed(mode_) ? ack.int_echo : nullptr;
	count_events(lumen_ptcp_ack_process(&st_, &p_, &core_ack, echo, &res));
	last_result_ = res;
	if (res != LUMEN_PTCP_HELD)
		counters_.updates++;
	publish();
}

// Loss is not a PowerTCP (or HPCC) signal (powertcp.h, powertcp_ack.h):
// counted only.
void PowerTcp::on_loss(uint64_t now_ns, bool timeout)
{
	(void)now_ns;
	if (timeout)
		counters_.timeouts++;
	else
		counters_.losses++;
}

// Idle longer than an RTO: CA_EVENT_CWND_RESTART for the kernel shells, which
// always restarts (histories discarded, window kept). Before the first ACK
// there is no history to discard.
void PowerTcp::on_idle_restart(uint64_t now_ns)
{
	if (!started_)
		return;
	uint32_t ev = lumen_ptcp_tx_event(&st_, LUMEN_PTCP_CWND_RESTART, now_ns, snd_nxt_);
	count_events(ev);
	if (ev & LUMEN_PTCP_EV(RESTARTS))
		counters_.idle_restarts++;
	publish();
}

} // namespace lumen::dp
