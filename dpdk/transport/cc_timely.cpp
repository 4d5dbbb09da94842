// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// dpdk/transport/cc_timely.cpp - TIMELY for lumen-dp: a shell of
// include/lumen/timely.h, as bpf/timely.bpf.c is for TCP. The rate law, the
// completion events, the window that goes with the rate and the loss cut and
// its undo are the core's (lumen_timely_on_ack, _cwnd_bytes, _loss, _undo,
// _restart); this file decides when they are called (cc.h, "TIMELY"):
//   - clocks and RTT samples are ns already, the rate becomes bit/s;
//   - the first sequence number is learned from the first ACK, as PowerTcp
//     does (the engine makes its CC before the sequence space is known);
//   - a loss episode begins with on_loss while none is open and ends when
//     snd_una passes the snd_nxt of its beginning (DCTCP's CWR rule);
//   - undo_timeout undoes a cut only when an RTO made it.
#include "transport/cc.h"

#include <stdexcept>

namespace lumen::dp
{

Timely::Timely(const CcParams &params) : CongestionControl("timely")
{
	if (params.algorithm != CcAlgorithm::kTimely)
		throw std::invalid_argument("Timely needs algorithm = timely");
	std::string err = params.validate();
	if (!err.empty())
		throw std::invalid_argument(err);
	p_ = params.timely_params();
	mss_ = params.mss;
	lumen_timely_init(&st_, &p_, 0); // at line rate; the sequence space comes with the first ACK
	publish();
}

// The core's outputs: the rate (bytes/s, < 2^38) in bit/s and its window.
void Timely::publish()
{
	pacing_bps_ = st_.rate * 8;
	cwnd_bytes_ = lumen_timely_cwnd_bytes(&st_, &p_, mss_);
}

void Timely::on_ack(const CcAck &ack)
{
	counters_.acks++;
	if (!started_) {
		// the data this ACK acknowledges began acked_bytes before snd_una
		// (as PowerTcp::on_ack); nothing before it counted bytes
		uint32_t first =
			ack.snd_una_bytes - uint32_t(lumen_min_u64(ack.acked_bytes, LUMEN_TIMELY_MAX_CWND_BYTES));
		// initialise again from there; a loss before this ACK (an RTO)
		// has taken its cut already, and that stays
		lumen_timely kept = st_;

		lumen_timely_init(&st_, &p_, first);
		st_.rate = kept.rate;
		st_.undo_rate = kept.undo_rate;
		st_.in_loss = kept.in_loss;
		st_.stats = kept.stats;
		snd_una_ = first;
		started_ = true;
		if (episode_end_pending_)
			episode_end_ = ack.snd_nxt_bytes;
		episode_end_pending_ = false;
	}
	if (lumen_seq_after(ack.snd_una_bytes, snd_una_)) {
		snd_una_ = ack.snd_una_bytes;
		rto_cut_ = false; // snd_una moved: undo_timeout's chance is over
	}
	snd_nxt_ = ack.snd_nxt_bytes;
	// the episode is over once the data sent before its cut is acknowledged
	if (st_.in_loss && lumen_seq_after(ack.snd_una_bytes, episode_end_))
		lumen_timely_loss(&st_, &p_, 0);
	if (lumen_timely_on_ack(&st_, &p_, ack.snd_una_bytes, ack.snd_nxt_bytes, ack.rtt_ns))
		counters_.updates++;
	publish();
}

// The rate halves once per loss episode, fast loss or RTO alike.
void Timely::on_loss(uint64_t now_ns, bool timeout)
{
	(void)now_ns;
	if (timeout)
		counters_.timeouts++;
	else
		counters_.losses++;
	if (st_.in_loss)
		return; // this episode's cut is taken
	lumen_timely_loss(&st_, &p_, 1);
	counters_.loss_cuts++;
	rto_cut_ = timeout;
	if (started_)
		episode_end_ = snd_nxt_;
	else
		episode_end_pending_ = true; // before any ACK: the first one's snd_nxt
	publish();
}

// The RTOs were spurious: the rate from before the cut the first of them
// made, and the episode closed, so the next real loss cuts again. A cut a
// fast loss made stays: that loss was real.
void Timely::undo_timeout()
{
	if (!rto_cut_)
		return;
	rto_cut_ = false;
	lumen_timely_undo(&st_, &p_);
	lumen_timely_loss(&st_, &p_, 0);
	episode_end_pending_ = false;
	counters_.undone_timeouts++;
	publish();
}

// After idle the RTT history describes another network: forgotten, the rate
// kept (lumen_timely_restart).
void Timely::on_idle_restart(uint64_t now_ns)
{
	(void)now_ns;
	lumen_timely_restart(&st_);
	counters_.idle_restarts++;
	publish();
}

} // namespace lumen::dp
