/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * lumen/powertcp_ack.h - the binding of the PowerTCP core (powertcp.h) to
 * Linux TCP's congestion-control hooks, written once for both shells: the
 * kernel module (kernel/tcp_powertcp.c) and the eBPF struct_ops
 * (bpf/powertcp.bpf.c). A shell reads its inputs from the socket, calls these
 * functions and writes their outputs back; every decision in between is
 * here, so the two cannot drift apart. powertcp.h stays free of TCP's
 * conventions (microsecond clocks, segments, ca_events), as the simulators
 * and tests drive it directly; this header adds them.
 *
 * What a shell does in each hook
 * ------------------------------
 *   init          lumen_ptcp_init() with snd_nxt and mss_cache; asks TCP to
 *                 pace (SK_PACING_NEEDED, unless sch_fq already paces) and
 *                 installs the first window as cong_control does.
 *   cong_control  per ACK, after tcp_ack() has moved snd_una:
 *                 lumen_ptcp_ack_make() from tcp_mstamp, the ACK's RTT
 *                 sample, snd_una, snd_nxt and mss_cache;
 *                 lumen_ptcp_ack_process() with the INT echo of this very
 *                 ACK (or NULL), which returns the counters to bump; then
 *                 snd_cwnd = lumen_ptcp_loss_cwnd() and sk_pacing_rate =
 *                 lumen_ptcp_pacing_cap(). Before the core,
 *                 lumen_ptcp_loss_begin() with TCP's loss state
 *                 (lumen_ptcp_tcp_make(); "Loss and recovery" below).
 *   cwnd_event    lumen_ptcp_tx_event() for CA_EVENT_TX_START and
 *                 CA_EVENT_CWND_RESTART (idle, below).
 *   ssthresh      TCP_INFINITE_SSTHRESH; undo_cwnd lumen_ptcp_undo() (below).
 *
 * Loss and recovery
 * -----------------
 * PowerTCP's control law reacts to the queue, which INT shows before it
 * overflows; the thesis has no loss response (its networks are lossless).
 * TCP paths are not: a policer, a shallow buffer or a bottleneck without INT
 * drops with no queue the power could see, and a flow that kept its window
 * through loss would lose persistently (RFC 5033 asks every congestion
 * control to reduce on loss). So the binding adds Reno's response, once per
 * loss episode, on top of the control law:
 *   - Entering recovery (TCP_CA_Recovery: fast retransmit) or loss
 *     (TCP_CA_Loss: RTO) from any other state halves the window, as RFC 5681
 *     sets ssthresh: to half of min(cwnd, FlightSize), at least 2 MSS. The cut
 *     goes through lumen_ptcp_set_cwnd(), so the window history (GETCWND)
 *     starts from the cut: the next update is target = cut / power + beta,
 *     i.e. an additive increase where the power is 1 (no INT, RTT at its
 *     base), and a return within about one RTT where INT shows the path
 *     under-used. Counted as loss_cuts.
 *   - The cut is also a ceiling. During the episode the control law may
 *     lower the window but not raise it above the ceiling. In recovery,
 *     snd_cwnd follows Proportional Rate Reduction (RFC 6937, with the
 *     slow-start reduction bound, as tcp_cwnd_reduction()): while more than
 *     the target is in flight, new segments go out in proportion target /
 *     RecoverFS to what is delivered, then the pipe is refilled to the target
 *     by at most one segment more than was delivered; the fast retransmit
 *     itself always goes out. That conserves packets (RFC 5033) without the
 *     stall a plain cut causes when the pipe is above the cut and the
 *     retransmission cannot be sent. After an RTO the window grows by what
 *     each ACK delivers (slow start) back to the ceiling. The kernel's own
 *     PRR does not run for algorithms with cong_control, so this is the only
 *     reduction.
 *   - After the episode the ceiling rises by beta per window delivered
 *     (Reno's additive increase, with PowerTCP's own step), but by no more
 *     than 1/8 of itself: where the window is near the host BDP (the
 *     control law's regime, beta = BDP / N with N >= 8) that is beta, where
 *     the path is far slower than the host believes (a 100 Mbit/s policer,
 *     host-bw 10 Gbit/s) beta would be several windows and lose every round.
 *     The ceiling goes away when it reaches the largest window the control
 *     law holds (host BDP + beta). Below it the control law decides as
 *     always. Without the
 *     ceiling, a power below 1 would return the window within one RTT: right
 *     when INT reports an under-used path, but the RTT fallback reads a
 *     drained queue, or the implausibly short RTT samples the kernel takes
 *     on some lossy paths, as just that, and a policer or shallow buffer
 *     then loses in every round (measured: a 4-packet buffer at 100 Mbit/s,
 *     host-bw 10 Gbit/s: 2-4 Mbit/s with the cut alone).
 *   - A spurious episode (DSACK, timestamps, F-RTO: tcp_try_undo_*) calls
 *     undo_cwnd: the window before the cut comes back and the ceiling goes
 *     (loss_undos).
 *   - ECN (TCP_CA_CWR) is not a loss: the power already shows the queue
 *     behind a mark.
 * ssthresh stays TCP_INFINITE_SSTHRESH: with cong_control set the kernel
 * uses it only to tell slow start from congestion avoidance, and there is no
 * slow start. A flow without state (Reno fallback, see the shells) uses
 * Reno's ssthresh and undo.
 *
 * Idle
 * ----
 * After idle the power, INT and RTT histories no longer describe the network
 * and are discarded (lumen_ptcp_restart); the window is kept.
 * CA_EVENT_CWND_RESTART comes after idle longer than the RTO
 * (net.ipv4.tcp_slow_start_after_idle; the kernel also lowers cwnd, which the
 * next ACK restores). CA_EVENT_TX_START comes whenever data is sent with
 * nothing in flight, which a request/response flow does on every request,
 * idle or not: restarting each time would leave such a flow without a single
 * INT power sample. So TX_START restarts only after LUMEN_PTCP_IDLE_NS
 * without an RTT sample (an ACK of new data), a quarter of the INT timestamp
 * wrap, well inside the 4.19 ms beyond which two echoes of a hop could alias
 * to a plausible dt. With version 2 echoes (wrap 268 ms) that is 67 ms: a
 * request/response flow with pauses below it keeps its INT history, and
 * its first echo after a pause samples the path over the pause.
 *
 * Counters
 * --------
 * lumen_ptcp_ack_process() and lumen_ptcp_tx_event() return a mask of
 * LUMEN_PTCP_EV(id) for the ids of LUMEN_PTCP_EVENTS; each shell has a
 * counter of the same id (LUMEN_CC_CNT_id in bpf_shared.h, PTCP_CNT_id in
 * the module) and bumps those whose bit is set. The core's own per-flow
 * stats (struct lumen_ptcp_stats) are finer; these are the host-wide ones.
 */
#ifndef LUMEN_POWERTCP_ACK_H
#define LUMEN_POWERTCP_ACK_H

#include "powertcp.h"

/* ---------------------------------------------------------------------- */
/* Inputs                                                                  */

/*
 * Largest RTT sample taken as it is, in us. The core clamps every RTT at
 * 2^32 ns (4.3 s), so any sample above 2^32 us acts the same; capping it here
 * only keeps rtt_us * 1000 from wrapping into a small, plausible value.
 */
#define LUMEN_PTCP_RTT_US_MAX (1ull << 32)

/*
 * TCP time (tcp_mstamp, tcp_clock_us(): us since boot) in the core's ns. The
 * product wraps after 584 years of uptime.
 */
LUMEN_INLINE __u64 lumen_ptcp_tcp_ns(__u64 mstamp_us)
{
	return mstamp_us * 1000;
}

/*
 * The core's RTT sample (ns, 0 = none) from the kernel's (rtt_us of
 * ack_sample and rate_sample: < 0, usually -1, when the ACK gave none). A
 * sub-microsecond RTT (0 us, loopback) is a sample all the same: it becomes
 * 1 us, since 0 would tell the core there was none.
 */
LUMEN_INLINE __u64 lumen_ptcp_rtt_ns(__s64 rtt_us)
{
	if (rtt_us < 0)
		return 0;
	if (rtt_us == 0)
		return 1000;
	return lumen_min_u64((__u64)rtt_us, LUMEN_PTCP_RTT_US_MAX) * 1000;
}

/* One ACK for lumen_ptcp_on_ack(), from what TCP holds after tcp_ack(). */
LUMEN_INLINE void lumen_ptcp_ack_make(struct lumen_ptcp_ack *ack, __u64 mstamp_us, __s64 rtt_us, __u32 snd_una,
				      __u32 snd_nxt, __u32 mss)
{
	ack->now_ns = lumen_ptcp_tcp_ns(mstamp_us);
	ack->rtt_ns = lumen_ptcp_rtt_ns(rtt_us);
	ack->snd_una = snd_una;
	ack->snd_nxt = snd_nxt;
	ack->mss = mss; /* 0 (not yet known) is the core's business */
}

/* ---------------------------------------------------------------------- */
/* Which ACK an echo belongs to                                            */

/*
 * A shell stores the newest echo it parsed, with what identifies the segment
 * that carried it: its ack_seq and, when the connection uses timestamps, its
 * TSval. cong_control then asks where that echo stands against the ACK TCP
 * is processing (snd_una after tcp_ack(), rx_opt's TSval):
 *
 *   THIS_ACK  the echo came on this very segment: use it, and consume it.
 *   OLDER     it came on a segment TCP is done with (acknowledged less, or
 *             as much but sent earlier), or one TCP dropped: it can match
 *             no ACK from now on. Consume it without use.
 *   NEWER     it came on a segment TCP has not processed yet: ACKs that
 *             wait in the socket backlog while the application holds the
 *             socket (a bulk sender inside sendmsg) were all parsed on
 *             arrival by the module's hook, so the stored echo is the last
 *             one's. Keep it for that ACK, which is still to come.
 *
 * Consuming on any mismatch, as a shell might, would throw the newest echo
 * away at the first backlogged ACK and leave the flow on its RTT fallback
 * whenever ACKs queue up. Sequence numbers and TSvals compare as serial
 * numbers (RFC 1982, as TCP's before()/after()). An echo whose segment had
 * a timestamp when this one has none, or the reverse, is another segment's
 * (TCP parses timestamps on all segments of a connection or none): OLDER.
 */
enum lumen_ptcp_echo_match {
	LUMEN_PTCP_ECHO_THIS_ACK = 0,
	LUMEN_PTCP_ECHO_OLDER = 1,
	LUMEN_PTCP_ECHO_NEWER = 2,
};

LUMEN_INLINE enum lumen_ptcp_echo_match lumen_ptcp_echo_match(__u32 echo_ack, int echo_has_ts, __u32 echo_tsval,
							      __u32 snd_una, int saw_ts, __u32 rcv_tsval)
{
	__s32 d_ack = (__s32)(echo_ack - snd_una), d_ts;

	if (d_ack < 0)
		return LUMEN_PTCP_ECHO_OLDER;
	if (d_ack > 0)
		return LUMEN_PTCP_ECHO_NEWER;
	if (!echo_has_ts != !saw_ts)
		return LUMEN_PTCP_ECHO_OLDER;
	if (!echo_has_ts)
		return LUMEN_PTCP_ECHO_THIS_ACK;
	d_ts = (__s32)(echo_tsval - rcv_tsval);
	if (d_ts == 0)
		return LUMEN_PTCP_ECHO_THIS_ACK;
	return d_ts > 0 ? LUMEN_PTCP_ECHO_NEWER : LUMEN_PTCP_ECHO_OLDER;
}

/* ---------------------------------------------------------------------- */
/* Counter events                                                          */

/*
 * Every host-wide counter the shared policy moves, by id:
 *   ACKS              an ACK went through the core
 *   INT_UPDATES       window updated from INT power
 *   RTT_UPDATES       window updated from RTT power, theta mode
 *   FALLBACK_UPDATES  window updated from RTT power, INT mode: a round
 *                     without usable INT
 *   NO_INT            INT mode, the ACK came without a (new, matching) echo
 *   INT_UNUSABLE      the ACK's echo gave no INT sample (no INT for the core)
 *   RTT_GUARD         INT power overridden by the RTT floor ("Liveness")
 *   RESTARTS          idle restart: histories discarded
 *   INT_GAP           why an echo gave no sample: it came too long after
 *                     the previous one (LUMEN_PTCP_INT_GAP_MAX_NS),
 *                     re-baselined
 *   INT_STALE         ... a hop's delta was stale or implausible
 *   INT_DUPLICATE     ... the previous echo again (dt == 0)
 *   INT_PATH_CHANGES  ... the hop count changed, re-baselined
 *   INT_RATE_CHANGES  ... a hop's rate changed (a circuit came or went):
 *                     the next echo samples against the new rate
 *   NO_INT_FLOWS      a powertcp flow reached LUMEN_PTCP_NO_INT_ROUNDS
 *                     RTT-driven updates without one echo with INT hops:
 *                     the INT plumbing is missing on its path (no INT
 *                     sockops on a host, no INT switch), and it runs
 *                     theta-PowerTCP's RTT rule. Once per flow; the module
 *                     also says so in the kernel log.
 *   LOSS_CUTS         window halved on entering loss recovery ("Loss and
 *                     recovery")
 *   LOSS_UNDOS        a cut undone: TCP found the loss spurious
 */
#define LUMEN_PTCP_EVENTS(X)                                                                                           \
	X(ACKS)                                                                                                        \
	X(INT_UPDATES)                                                                                                 \
	X(RTT_UPDATES)                                                                                                 \
	X(FALLBACK_UPDATES)                                                                                            \
	X(NO_INT)                                                                                                      \
	X(INT_UNUSABLE)                                                                                                \
	X(RTT_GUARD)                                                                                                   \
	X(RESTARTS)                                                                                                    \
	X(INT_GAP)                                                                                                     \
	X(INT_STALE)                                                                                                   \
	X(INT_DUPLICATE)                                                                                               \
	X(INT_PATH_CHANGES)                                                                                            \
	X(INT_RATE_CHANGES)                                                                                            \
	X(NO_INT_FLOWS)                                                                                                \
	X(LOSS_CUTS)                                                                                                   \
	X(LOSS_UNDOS)

/* RTT rounds without any INT before a flow counts in NO_INT_FLOWS */
#define LUMEN_PTCP_NO_INT_ROUNDS 16

#define LUMEN_PTCP_EVENT_BIT(id) LUMEN_PTCP_EVBIT_##id,
enum lumen_ptcp_event_bit {
	LUMEN_PTCP_EVENTS(LUMEN_PTCP_EVENT_BIT) LUMEN_PTCP_EVBIT_COUNT
};
#undef LUMEN_PTCP_EVENT_BIT

#define LUMEN_PTCP_EV(id) (1u << LUMEN_PTCP_EVBIT_##id)

/*
 * One ACK through the core: lumen_ptcp_on_ack() on st, and the events it
 * makes. echo is the INT echo that came on this very ACK, or NULL when there
 * was none (none stored, nothing new since the last ACK, or the stored one
 * belongs to another segment). *result, unless result is NULL, gets what the
 * core did with the window. The counters follow the core's own stats, so a
 * shell counts exactly what the core decided.
 */
LUMEN_INLINE __u32 lumen_ptcp_ack_process(struct lumen_ptcp *st, const struct lumen_ptcp_params *p,
					  const struct lumen_ptcp_ack *ack, const struct lumen_int_opt *echo,
					  enum lumen_ptcp_result *result)
{
	/* the counters whose moves are events; not the whole stats struct */
	const __u32 unusable = st->stats.int_unusable, gap = st->stats.int_gap, stale = st->stats.int_stale,
		    duplicate = st->stats.int_duplicate, path = st->stats.int_path_changes, guard = st->stats.rtt_guard,
		    rate = st->stats.int_rate_changes;
	__u32 events = LUMEN_PTCP_EV(ACKS);
	enum lumen_ptcp_result res;

	if (lumen_ptcp_mode_int_fed(st->mode) && !echo)
		events |= LUMEN_PTCP_EV(NO_INT);
	res = lumen_ptcp_on_ack(st, p, ack, echo);
	if (st->stats.int_unusable != unusable)
		events |= LUMEN_PTCP_EV(INT_UNUSABLE);
	if (st->stats.int_gap != gap)
		events |= LUMEN_PTCP_EV(INT_GAP);
	if (st->stats.int_stale != stale)
		events |= LUMEN_PTCP_EV(INT_STALE);
	if (st->stats.int_duplicate != duplicate)
		events |= LUMEN_PTCP_EV(INT_DUPLICATE);
	if (st->stats.int_path_changes != path)
		events |= LUMEN_PTCP_EV(INT_PATH_CHANGES);
	if (st->stats.int_rate_changes != rate)
		events |= LUMEN_PTCP_EV(INT_RATE_CHANGES);
	if (st->stats.rtt_guard != guard)
		events |= LUMEN_PTCP_EV(RTT_GUARD);
	if (res == LUMEN_PTCP_UPDATED_INT)
		events |= LUMEN_PTCP_EV(INT_UPDATES);
	else if (res == LUMEN_PTCP_UPDATED_RTT && lumen_ptcp_mode_int_fed(st->mode)) {
		events |= LUMEN_PTCP_EV(FALLBACK_UPDATES);
		/* every ACK so far without INT hops: no echo ever reached us */
		if (st->stats.fallback_updates == LUMEN_PTCP_NO_INT_ROUNDS && st->stats.int_missing == st->stats.acks)
			events |= LUMEN_PTCP_EV(NO_INT_FLOWS);
	} else if (res == LUMEN_PTCP_UPDATED_RTT)
		events |= LUMEN_PTCP_EV(RTT_UPDATES);
	if (result)
		*result = res;
	return events;
}

/* ---------------------------------------------------------------------- */
/* Idle                                                                    */

/*
 * TX_START restarts only after this long without an RTT sample: a quarter of
 * the INT timestamp wrap of the flow's option version (1.05 ms; 67 ms for a
 * flow whose echoes are version 2, lumen_ptcp_idle_ns).
 */
#define LUMEN_PTCP_IDLE_NS (LUMEN_INT_WRAP_NS / 4)
#define LUMEN_PTCP_IDLE_V2_NS ((1ull << (LUMEN_INT_V2_TS_BITS + LUMEN_INT_TS_UNIT_SHIFT)) / 4)

LUMEN_INLINE __u64 lumen_ptcp_idle_ns(const struct lumen_ptcp *st)
{
	return st->prev_version == LUMEN_INT_VERSION_WIDE ? LUMEN_PTCP_IDLE_V2_NS : LUMEN_PTCP_IDLE_NS;
}

/* The two tcp_ca_events that may mean idle, in the core's terms. */
enum lumen_ptcp_tx_event {
	LUMEN_PTCP_TX_START = 0, /* CA_EVENT_TX_START: sending, nothing in flight */
	LUMEN_PTCP_CWND_RESTART = 1, /* CA_EVENT_CWND_RESTART: idle beyond the RTO */
	LUMEN_PTCP_TX_OTHER = 2, /* any other event: nothing to do */
};

/* A tcp_ca_event in those terms (expands where the kernel's enum is known). */
#define LUMEN_PTCP_TX_EVENT(ca_event)                                                                                  \
	((ca_event) == CA_EVENT_TX_START       ? LUMEN_PTCP_TX_START                                                   \
	 : (ca_event) == CA_EVENT_CWND_RESTART ? LUMEN_PTCP_CWND_RESTART                                               \
					       : LUMEN_PTCP_TX_OTHER)

/*
 * Whether the flow has been idle at now_ns: no RTT sample for at least
 * LUMEN_PTCP_IDLE_NS, none at all since the last restart, or a clock that
 * went back (nothing then tells how long the flow was idle).
 */
LUMEN_INLINE int lumen_ptcp_idle(const struct lumen_ptcp *st, __u64 now_ns)
{
	if (!st->have_rtt || now_ns < st->prev_rtt_time_ns)
		return 1;
	return now_ns - st->prev_rtt_time_ns >= lumen_ptcp_idle_ns(st);
}

/*
 * cwnd_event: CWND_RESTART always restarts, TX_START only when idle (see
 * "Idle" above). Returns LUMEN_PTCP_EV(RESTARTS) when it restarted, else 0.
 */
LUMEN_INLINE __u32 lumen_ptcp_tx_event(struct lumen_ptcp *st, enum lumen_ptcp_tx_event ev, __u64 now_ns, __u32 snd_nxt)
{
	if (ev == LUMEN_PTCP_TX_OTHER || (ev == LUMEN_PTCP_TX_START && !lumen_ptcp_idle(st, now_ns)))
		return 0;
	lumen_ptcp_restart(st, snd_nxt);
	return LUMEN_PTCP_EV(RESTARTS);
}

/* ---------------------------------------------------------------------- */
/* Outputs                                                                 */

/*
 * snd_cwnd from the core's window: whole segments of mss (0: not yet known,
 * taken as 1 byte), at least LUMEN_PTCP_MIN_CWND_SEGS, at most the socket's
 * snd_cwnd_clamp, and never 0 (a clamp of 0 gives 1), which TCP cannot send
 * with.
 */
LUMEN_INLINE __u32 lumen_ptcp_cwnd_segs(__u64 cwnd_bytes, __u32 mss, __u32 cwnd_clamp)
{
	__u64 segs = lumen_div64(cwnd_bytes, mss ? mss : 1);

	segs = lumen_max_u64(segs, LUMEN_PTCP_MIN_CWND_SEGS);
	segs = lumen_min_u64(segs, cwnd_clamp);
	return segs ? (__u32)segs : 1;
}

/* sk_pacing_rate: the core's rate, capped by SO_MAX_PACING_RATE. */
LUMEN_INLINE __u64 lumen_ptcp_pacing_cap(__u64 rate, __u64 max_pacing_rate)
{
	return lumen_min_u64(rate, max_pacing_rate);
}

/* ---------------------------------------------------------------------- */
/* Loss and recovery                                                       */

/* TCP's congestion states (enum tcp_ca_state, tcpi_ca_state: uapi values). */
#define LUMEN_TCP_CA_CWR 2
#define LUMEN_TCP_CA_RECOVERY 3
#define LUMEN_TCP_CA_LOSS 4

enum lumen_ptcp_loss_phase {
	LUMEN_PTCP_LOSS_NONE = 0,
	LUMEN_PTCP_LOSS_RECOVERY = 1, /* fast recovery: packet conservation */
	LUMEN_PTCP_LOSS_RTO = 2, /* after an RTO: slow start back to the cut */
};

/* What a shell reads from tcp_sock for the loss response, after tcp_ack(). */
struct lumen_ptcp_tcp {
	__u32 ca_state; /* icsk_ca_state */
	__u32 packets_out; /* FlightSize, segments */
	__u32 in_flight; /* tcp_packets_in_flight() */
	__u32 delivered; /* tp->delivered: segments delivered, SACKed included */
	__u32 data_segs_out; /* tp->data_segs_out: data segments sent, retransmits included */
	__u32 snd_cwnd; /* as the kernel left it (after an RTO: in flight + 1) */
};

/*
 * tcp_packets_in_flight(): packets_out - (sacked_out + lost_out) +
 * retrans_out, computed by the shell's own reads (the kernel's is an inline
 * BPF cannot call). Never below 0, whatever the four say.
 */
LUMEN_INLINE void lumen_ptcp_tcp_make(struct lumen_ptcp_tcp *t, __u32 ca_state, __u32 packets_out, __u32 sacked_out,
				      __u32 lost_out, __u32 retrans_out, __u32 delivered, __u32 data_segs_out,
				      __u32 snd_cwnd)
{
	__u64 left = (__u64)sacked_out + lost_out;

	t->ca_state = ca_state;
	t->packets_out = packets_out;
	t->in_flight =
		(__u32)lumen_min_u64((packets_out > left ? packets_out - left : 0) + (__u64)retrans_out, 0xffffffffu);
	t->delivered = delivered;
	t->data_segs_out = data_segs_out;
	t->snd_cwnd = snd_cwnd;
}

LUMEN_INLINE enum lumen_ptcp_loss_phase lumen_ptcp_loss_phase_of(__u32 ca_state)
{
	if (ca_state == LUMEN_TCP_CA_LOSS)
		return LUMEN_PTCP_LOSS_RTO;
	if (ca_state == LUMEN_TCP_CA_RECOVERY)
		return LUMEN_PTCP_LOSS_RECOVERY;
	return LUMEN_PTCP_LOSS_NONE;
}

/*
 * Before the core sees an ACK: follow TCP into and out of loss episodes.
 * Entering one (or an RTO during recovery) cuts the window to half of
 * min(cwnd, FlightSize), at least LUMEN_PTCP_MIN_CWND_SEGS, and makes that
 * the ceiling. Returns LUMEN_PTCP_EV(LOSS_CUTS) on a cut, else 0.
 */
LUMEN_INLINE __u32 lumen_ptcp_loss_begin(struct lumen_ptcp *st, const struct lumen_ptcp_params *p,
					 const struct lumen_ptcp_tcp *t, __u32 snd_nxt, __u32 mss)
{
	enum lumen_ptcp_loss_phase phase = lumen_ptcp_loss_phase_of(t->ca_state);
	__u64 flight, cut, tau;

	if (phase == LUMEN_PTCP_LOSS_NONE || phase == st->loss.phase) {
		st->loss.phase = (__u8)phase;
		return 0;
	}
	flight = (__u64)t->packets_out * (mss ? mss : 1);
	/* PRR's episode: what was delivered and sent before this ACK */
	st->loss.prr_delivered0 = st->loss.delivered;
	st->loss.prr_out0 = t->data_segs_out;
	st->loss.prr_recover_fs = t->packets_out ? t->packets_out : 1;
	st->loss.undo_cwnd_bytes = st->cwnd_bytes;
	cut = lumen_min_u64(st->cwnd_bytes, flight) / 2;
	lumen_ptcp_set_cwnd(st, p, cut, snd_nxt, mss); /* clamps to >= 2 MSS */
	st->loss.ceiling_bytes = st->cwnd_bytes;
	/* the ceiling's bounds, fixed for the episode: no per-ACK divisions */
	tau = lumen_ptcp_tau(st, p);
	st->loss.ceiling_beta_bytes = lumen_ptcp_beta(p, tau);
	st->loss.ceiling_limit_bytes =
		lumen_min_u64(lumen_ptcp_host_bdp(p, tau) + st->loss.ceiling_beta_bytes, LUMEN_PTCP_MAX_CWND_BYTES);
	st->loss.phase = (__u8)phase;
	st->stats.loss_cuts++;
	return LUMEN_PTCP_EV(LOSS_CUTS);
}

/*
 * Proportional Rate Reduction (RFC 6937, PRR-SSRB), in segments: how many
 * may be in flight after this ACK of a recovery episode whose target is
 * `target`. prr_delivered <= 2^32 and target <= 2^32: no overflow.
 */
LUMEN_INLINE __u32 lumen_ptcp_prr(const struct lumen_ptcp *st, const struct lumen_ptcp_tcp *t, __u32 delivered,
				  __u32 target)
{
	__u64 prr_delivered = (__u32)(t->delivered - st->loss.prr_delivered0);
	__u64 prr_out = (__u32)(t->data_segs_out - st->loss.prr_out0), pipe = t->in_flight, sndcnt, allowed;

	if (pipe > target) {
		allowed = lumen_div64(prr_delivered * target + st->loss.prr_recover_fs - 1, st->loss.prr_recover_fs);
		sndcnt = allowed > prr_out ? allowed - prr_out : 0;
	} else {
		sndcnt = lumen_max_u64(prr_delivered > prr_out ? prr_delivered - prr_out : 0, delivered) + 1;
		sndcnt = lumen_min_u64(sndcnt, target - pipe);
	}
	if (!prr_out && !sndcnt)
		sndcnt = 1; /* the fast retransmit */
	return (__u32)lumen_min_u64(pipe + sndcnt, 0xffffffffu);
}

/*
 * The ceiling's increase outside an episode, per ceiling's worth of bytes
 * delivered (about one RTT): beta, but no more than ceiling / 2^3 (at least
 * one MSS); gone at host BDP + beta, the control law's own limit. Both
 * bounds were taken at the cut (lumen_ptcp_loss_begin).
 * delivered_bytes <= ceiling <= 2^30 and the step <= 2^30: no overflow.
 */
#define LUMEN_PTCP_CEILING_STEP_SHIFT 3

LUMEN_INLINE void lumen_ptcp_ceiling_grow(struct lumen_ptcp *st, __u64 delivered_bytes, __u32 mss)
{
	__u64 ceiling = lumen_max_u64(st->loss.ceiling_bytes, 1), step;

	delivered_bytes = lumen_min_u64(delivered_bytes, ceiling);
	step = lumen_min_u64(st->loss.ceiling_beta_bytes, lumen_max_u64(ceiling >> LUMEN_PTCP_CEILING_STEP_SHIFT, mss));
	ceiling += lumen_div64(step * delivered_bytes, ceiling);
	st->loss.ceiling_bytes = ceiling >= st->loss.ceiling_limit_bytes ? 0 : ceiling;
}

/*
 * After the core: snd_cwnd. The core's window under the ceiling, if one is
 * left from a loss; in recovery PRR towards it (lumen_ptcp_prr), after an
 * RTO the kernel's window plus what this ACK delivered (slow start) up to
 * it; never below LUMEN_PTCP_MIN_CWND_SEGS outside recovery. Also keeps
 * tp->delivered for the next ACK.
 */
LUMEN_INLINE __u32 lumen_ptcp_loss_cwnd(struct lumen_ptcp *st, const struct lumen_ptcp_params *p,
					const struct lumen_ptcp_tcp *t, __u32 mss, __u32 cwnd_clamp)
{
	/* a first ACK (or a lying counter) may give any delta: it only caps */
	__u32 delivered = t->delivered - st->loss.delivered, segs;
	__u64 bound;

	st->loss.delivered = t->delivered;
	if (st->loss.ceiling_bytes && st->loss.phase == LUMEN_PTCP_LOSS_NONE)
		lumen_ptcp_ceiling_grow(st, (__u64)delivered * (mss ? mss : 1), mss ? mss : 1);
	if (st->loss.ceiling_bytes && st->cwnd_bytes > st->loss.ceiling_bytes) {
		st->cwnd_bytes = st->loss.ceiling_bytes;
		st->pacing_rate = lumen_ptcp_pacing_rate(st->cwnd_bytes, lumen_ptcp_tau(st, p));
	}
	segs = lumen_ptcp_cwnd_segs(st->cwnd_bytes, mss, cwnd_clamp);
	if (st->loss.phase == LUMEN_PTCP_LOSS_NONE)
		return segs;
	if (st->loss.phase == LUMEN_PTCP_LOSS_RECOVERY)
		return lumen_ptcp_prr(st, t, delivered, segs);
	bound = (__u64)lumen_max_u64(t->snd_cwnd, t->in_flight) + delivered;
	bound = lumen_max_u64(bound, LUMEN_PTCP_MIN_CWND_SEGS);
	return bound < segs ? (__u32)bound : segs;
}

/*
 * undo_cwnd: TCP found the episode spurious. The window before the cut comes
 * back (and the cap goes); returns snd_cwnd. Without a cut to undo, the
 * current window.
 */
LUMEN_INLINE __u32 lumen_ptcp_undo(struct lumen_ptcp *st, const struct lumen_ptcp_params *p, __u32 snd_nxt, __u32 mss,
				   __u32 cwnd_clamp, __u32 *events)
{
	if (st->loss.undo_cwnd_bytes) {
		if (st->loss.undo_cwnd_bytes > st->cwnd_bytes)
			lumen_ptcp_set_cwnd(st, p, st->loss.undo_cwnd_bytes, snd_nxt, mss);
		st->loss.undo_cwnd_bytes = 0;
		st->loss.ceiling_bytes = 0;
		st->stats.loss_undos++;
		if (events)
			*events |= LUMEN_PTCP_EV(LOSS_UNDOS);
	}
	return lumen_ptcp_cwnd_segs(st->cwnd_bytes, mss, cwnd_clamp);
}

#endif /* LUMEN_POWERTCP_ACK_H */
