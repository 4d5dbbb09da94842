/* engine_ack.cpp - lumen-dp's sender side of the feedback (see engine.h):
 * what an ACK or NACK tells a connection (the scoreboard, the RTT, the path
 * policy, the congestion control, spurious retransmissions and timeouts,
 * window updates), the messages it completes, and the retransmission
 * timer. */
#include "transport/engine.h"

#include <algorithm>

namespace lumen::dp
{

constexpr uint8_t kMaxReoMult = 16;

uint64_t Engine::reorder_window(const Connection &c) const
{
	if (cfg_.reorder_window_ns)
		return cfg_.reorder_window_ns;
	/* TCP's RACK stops at srtt; a sprayed connection's packets differ by
	 * the spread of its paths' delays, up to srtt + 4 rttvar */
	uint64_t srtt = c.rto.srtt_ns(), cap = srtt + 4 * c.rto.rttvar_ns();
	return std::max<uint64_t>(std::min<uint64_t>(srtt / 4 * c.reo_mult, cap), 1000);
}

/* An ACK echoes the send time of the DATA packet it answers. If that
 * packet has been retransmitted since, and the echo is older than the
 * retransmission, an earlier copy arrived: the retransmission was needless
 * (what DSACK tells TCP), and RACK's reorder window widens. */
void Engine::check_spurious(Connection &c, const lumen_dp_pkt &p, uint64_t now_ns)
{
	uint32_t psn = p.echo_psn;

	if (psn - c.tx.una() >= c.tx.nxt() - c.tx.una())
		return; /* not outstanding */
	const TxRecord &r = c.tx.at(psn);
	if (r.tx_count < 2 || r.state == TxRecord::kSacked || p.echo_ts >= r.sent_ns)
		return;
	c.stats.spurious_retx++;
	c.reo_recoveries = 0;
	if (c.reo_mult < kMaxReoMult && now_ns - c.reo_bumped_ns >= c.rto.srtt_ns()) {
		c.reo_mult++;
		c.reo_bumped_ns = now_ns;
	}
}

void Engine::on_ack(Connection &c, const lumen_dp_pkt &p, uint64_t now_ns)
{
	uint32_t old_una = c.tx.una();
	bool nack = p.type == LUMEN_DP_NACK, ece = p.flags & LUMEN_DP_F_ECE;
	/* a window update answers no DATA: its cumulative PSN, SACK and
	 * window count, its empty echo says nothing of a path, an RTT, a
	 * spurious retransmission or timeout, or congestion */
	bool update = !nack && p.pkts == 0;

	c.stats.acks_rcvd++;
	c.stats.window_updates_rcvd += update;
	if (!nack && !update)
		check_spurious(c, p, now_ns);
	auto upd = c.tx.on_ack(p.psn, p.sack, now_ns, reorder_window(c));
	/* Sprayed ACKs arrive out of order. One overtaken by a newer ACK
	 * (cumulative PSN behind una, within the window) tells the scoreboard
	 * nothing new (the receiver's state only grows), but its echoes are
	 * its own: the entropy and CE mark of the DATA it answers, the RTT
	 * and its packet counts. Dropping it would starve REPS of recycled
	 * entropies and DCTCP of CE counts. Anything else is forged. */
	bool stale = !upd.valid && lumen_seq_after(c.tx.una(), p.psn) && c.tx.una() - p.psn <= c.tx.capacity();
	if (!upd.valid && !stale) {
		c.stats.bad_acks++;
		return;
	}
	/* Go-Back-N: after a loss, every packet still in flight behind it
	 * arrives out of order and draws a NACK for the same PSN. The first
	 * one rewinds; the others come from packets sent before that rewind
	 * (their echoed send time says so) and ask for what is already being
	 * resent: acting on each would resend the window once per packet in
	 * flight. A NACK of a packet sent after the rewind is a new loss. */
	bool old_nack = nack && !stale && p.echo_ts < c.gbn_ns;
	/* Eifel: the first ACK to move una after an RTO echoes the packet it
	 * answers. Sent before the RTO, that packet was not lost but late, and
	 * so was the timeout: undo it. Any NACK is a loss: nothing to undo. */
	if (c.undo_rto_ns && !stale && !update && (nack || (upd.valid && c.tx.una() != old_una))) {
		if (!nack && p.echo_ts < c.undo_rto_ns)
			spurious_rto(c, now_ns);
		c.undo_rto_ns = 0;
	}
	if (stale) {
		c.stats.stale_acks++;
	} else {
		if (old_nack) {
			c.stats.stale_nacks++;
		} else if (nack) {
			c.stats.nacks_rcvd++;
			c.tx.go_back_n(p.psn);
			c.gbn_ns = now_ns;
		}
		const uint32_t was_open = c.peer_rwnd;
		c.peer_rwnd = std::max<uint32_t>(p.rwnd, 1);
		/* A window reopened on a sender that could only probe it: what it
		 * sent found no buffer and was dropped, not acknowledged (the
		 * receiver sends this update only then, or when the window grew
		 * by half). Resend it now, not at the RTO. */
		if (update && was_open <= 1 && c.peer_rwnd > 1 && c.tx.una() == old_una)
			c.tx.go_back_n(c.tx.una());
	}

	uint64_t rtt = 0;
	if (!update && c.tx.rtt_sample(p.echo_ts, now_ns, &rtt)) {
		rtt = std::max<uint64_t>(rtt, 1);
		c.rto.sample(rtt);
		c.stats.rtt_last_ns = rtt;
		if (!c.stats.rtt_min_ns || rtt < c.stats.rtt_min_ns)
			c.stats.rtt_min_ns = rtt;
	}

	/* the echoed entropy's fate: a NACK's is NACK (REPS drops the path;
	 * Ethereal leaves it when it is the pinned one), an ACK's good or ECN */
	uint16_t e = entropy_of(p.echo_sport);
	if (e != UINT16_MAX && nack) {
		if (!old_nack) { /* an old NACK's path was judged by the first */
			lumen_path_feedback(&c.path, &cfg_.path, e, LUMEN_PATH_NACK, now_ns, rtt, c.rto.min_rtt_ns());
			if (lumen_path_take_reroute(&c.path))
				reroute(c); /* before tx resends from the NACKed PSN: there */
		}
	} else if (e != UINT16_MAX && !update) {
		lumen_path_feedback(&c.path, &cfg_.path, e, ece ? LUMEN_PATH_ECN : LUMEN_PATH_GOOD, now_ns, rtt,
				    c.rto.min_rtt_ns());
		(ece ? paths_[e].ecn : paths_[e].good)++;
	}
	c.stats.ecn_echoes += ece;
	c.stats.acked_pkts += upd.newly_acked_pkts;
	c.stats.acked_bytes += upd.newly_acked_bytes;
	c.bytes_acked_seq += (uint32_t)upd.newly_acked_bytes;

	lumen_int_opt echo;
	bool have_int = (p.flags & LUMEN_DP_F_INT) && lumen_int_parse(p.ext, p.ext_len, &echo) == 0;
	CcAck a{};
	a.now_ns = now_ns;
	a.acked_pkts = p.pkts;
	a.acked_bytes = upd.newly_acked_bytes;
	a.ce_pkts = std::min(p.ce_pkts, p.pkts);
	a.rtt_ns = rtt;
	a.snd_una_bytes = c.bytes_acked_seq;
	a.snd_nxt_bytes = c.bytes_sent_seq;
	a.int_echo = have_int ? &echo : nullptr;
	circuit_update(c, now_ns);
	if (!update)
		c.cc->on_ack(a);
	if (upd.newly_lost) {
		if (++c.reo_recoveries >= 16) {
			c.reo_mult = 1;
			c.reo_recoveries = 0;
		}
		c.stats.fast_losses++;
		c.cc->on_loss(now_ns, false);
	}
	ack_messages(c, old_una, now_ns);
	if (c.tx.una() != old_una)
		c.rto_streak = 0;
	if (c.tx.una() != old_una || c.tx.una() == c.tx.nxt())
		rearm_rto(c, now_ns);
	mark_ready(c);
}

/* Messages whose last packet the cumulative ACK has passed. */
void Engine::ack_messages(Connection &c, uint32_t old_una, uint64_t now_ns)
{
	uint32_t una = c.tx.una();

	if (una == old_una)
		return;
	while (c.cut > 0 && !c.msgs.empty()) {
		const Message &m = c.msgs.front();
		if (!lumen_seq_after(una, m.last_psn))
			break;
		c.stats.msgs_acked++;
		Completion d{Completion::kSend, MsgStatus::kOk, m.id,	  m.len, m.len, m.user,
			     m.posted_ns,	now_ns,		m.zc_pkts};
		c.msgs.pop_front();
		c.cut--;
		complete(c, d);
		if (c.failed)
			return; /* the completion failed it */
	}
	c.has_msgs = !c.msgs.empty(); /* on_acked may have posted more */
	if (c.closing && !c.has_msgs && c.state == ConnState::kEstablished)
		send_fin(c, now_ns);
}

/* The RTO restarts when the cumulative ACK moves; with nothing in flight
 * there is none. Moving the node on every such ACK costs less than leaving
 * it in place and moving it when it fires early (a lazy timer): with
 * 10,000 connections the node is in the cache now and not then (tx -13%
 * measured with the lazy one; no gain with one connection). */
void Engine::rearm_rto(Connection &c, uint64_t now_ns)
{
	if (c.tx.una() == c.tx.nxt() || c.failed) {
		wheel_.cancel(c.rto_timer);
		return;
	}
	wheel_.arm(c.rto_timer, now_ns + c.rto.rto_ns());
}

void Engine::on_rto(Connection &c, uint64_t now_ns)
{
	if (c.state != ConnState::kEstablished) {
		on_ctrl_timer(c, now_ns); /* a SYN or FIN unanswered */
		return;
	}
	if (c.tx.una() == c.tx.nxt() || c.failed)
		return;
	c.rto_streak++;
	if (cfg_.max_timeouts && c.rto_streak >= cfg_.max_timeouts) {
		c.stats.timeouts++;
		fail(c, MsgStatus::kTimedOut, now_ns);
		return;
	}
	uint16_t e = c.tx.at(c.tx.una()).entropy;
	/* the first RTO since una moved may be undone (spurious_rto) unless a
	 * loss was known before it: restoring would hide that one */
	if (c.rto_streak == 1 && c.tx.lost() == 0) {
		c.undo_rto_ns = now_ns;
		c.undo_entropy = UINT16_MAX;
	}
	c.tx.on_rto();
	c.gbn_ns = now_ns; /* NACKs of what was in flight are answered by this */
	c.stats.timeouts++;
	c.cc->on_loss(now_ns, true);
	lumen_path_feedback(&c.path, &cfg_.path, e, LUMEN_PATH_TIMEOUT, now_ns, c.rto.latest_ns(), c.rto.min_rtt_ns());
	if (lumen_path_take_reroute(&c.path)) {
		uint16_t left = lumen_path_wrap(c.path.next, cfg_.path.entropies);
		reroute(c); /* everything in flight is resent, on the new path */
		if (c.undo_rto_ns && c.undo_entropy == UINT16_MAX)
			c.undo_entropy = left;
	}
	if (e < paths_.size())
		paths_[e].lost++;
	c.rto.backoff();
	wheel_.arm(c.rto_timer, now_ns + c.rto.rto_ns());
	mark_ready(c);
}

/* Ethereal's "select new path" (NAck(), flowTimeout()): the shell's
 * choice when it makes a valid one, else a uniformly random entropy other
 * than the one left; pinned, so every later packet, retransmissions first,
 * takes it. */
void Engine::reroute(Connection &c)
{
	uint32_t n = cfg_.path.entropies;
	uint16_t old = lumen_path_wrap(c.path.next, n);

	if (choose_path) {
		uint16_t e = choose_path(c, old);
		if (e != kNoPathChoice && lumen_path_pin(&c.path, &cfg_.path, e) == 0) {
			c.stats.reroutes += e != old;
			return;
		}
		stats_.bad_path_choices += e != kNoPathChoice;
	}
	if (n < 2)
		return; /* nowhere else to go */
	uint32_t e = lumen_rng_below(&rng_, n - 1); /* uniform over the n - 1 others */
	e += e >= old;
	lumen_path_pin(&c.path, &cfg_.path, e);
	c.stats.reroutes++;
}

/* An ACK showed the RTOs since una last moved needless (Eifel, RFC 3522;
 * Linux undoes them the same way from its timestamps): the congestion
 * window comes back; the sender stops resending what is still on its way
 * (with the window back, a SACK sender would otherwise resend the whole
 * window at once); a Go-Back-N sender takes this as its latest rewind (the
 * copies it already resent, on another path, overtake the originals and
 * draw NACKs that ask for nothing lost); and an ethereal connection goes
 * back to the path it left, which delivered: a late path is not a bad
 * one, and the plan put it there. */
void Engine::spurious_rto(Connection &c, uint64_t now_ns)
{
	c.stats.spurious_rtos++;
	c.cc->undo_timeout();
	c.tx.undo_rto();
	if (cfg_.gbn)
		c.gbn_ns = now_ns;
	uint16_t at = lumen_path_wrap(c.path.next, cfg_.path.entropies);
	if (c.undo_entropy == UINT16_MAX || c.undo_entropy == at || !pin(c, c.undo_entropy))
		return;
	c.stats.reroutes_undone++;
	if (on_reroute_undone)
		on_reroute_undone(c, at, c.undo_entropy);
}

/* reTCP's circuit signal for c (circuit_window), asked again when the
 * answer next changes: on a network of circuits only, no ACK may come
 * while the circuit to the peer opens. Re-asked after 10 ms when there is
 * nothing to tell (no circuit to the peer in the period, lumend quiet):
 * the schedule may change. A jump may open the window: c may send. */
void Engine::circuit_update(Connection &c, uint64_t now_ns)
{
	constexpr uint64_t kRecheckNs = 10'000'000;
	constexpr uint64_t kSameNs = 2'000; /* TAI read per ms, against monotonic now */
	uint64_t tai = 0, open = 0, close = 0;

	if (!circuit_window || cfg_.cc.algorithm != CcAlgorithm::kRetcp || c.failed)
		return;
	const bool known = circuit_window(c.peer_ip, now_ns, &tai, &open, &close);
	const uint64_t until = c.cc->on_circuit(known, tai, open, close);
	c.stats.circuit_up = c.cc->counters().circuit_up;
	c.stats.circuit_down = c.cc->counters().circuit_down;
	/* Asked on every ACK, the answer mostly the same: keep the timer when
	 * it already fires at the change (within the clock's jitter), or
	 * before the recheck when there is no change to wait for. */
	const uint64_t at = now_ns + (until > tai ? until - tai : kRecheckNs);
	const TimerNode &t = c.circuit_timer;
	const bool keep = t.armed && (until > tai ? (t.expiry_ns > at ? t.expiry_ns - at : at - t.expiry_ns) <= kSameNs
						  : t.expiry_ns <= at);
	if (!keep) {
		wheel_.cancel(c.circuit_timer);
		wheel_.arm(c.circuit_timer, at);
	}
	if (c.has_msgs && c.state == ConnState::kEstablished)
		mark_ready(c);
}

void Engine::timers(uint64_t now_ns)
{
	wheel_.advance(now_ns, [&](TimerNode &n) {
		if (!conns_[n.owner]) /* never: a connection's timers go with it */
			return;
		Connection &c = *conns_[n.owner];
		if (&n == &c.circuit_timer)
			circuit_update(c, now_ns);
		else
			on_rto(c, now_ns);
	});
	if (cfg_.idle_timeout_ns && now_ns >= next_sweep_ns_)
		expire_idle(now_ns);
}

} // namespace lumen::dp
