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
 *                 snd_cwnd = lumen_ptcp_cwnd_segs() and sk_pacing_rate =
 *                 lumen_ptcp_pacing_cap().
 *   cwnd_event    lumen_ptcp_tx_event() for CA_EVENT_TX_START and
 *                 CA_EVENT_CWND_RESTART (idle, below).
 *   ssthresh      TCP_INFINITE_SSTHRESH; undo_cwnd keeps snd_cwnd (below).
 *
 * Loss and recovery
 * -----------------
 * The control law does not take loss or ECN as signals (powertcp.h), so
 * ssthresh returns TCP_INFINITE_SSTHRESH and entering recovery lowers
 * nothing. Because cong_control is set, the kernel skips PRR
 * (tcp_cwnd_reduction) and the end-of-recovery window reset: the control law
 * keeps cwnd throughout recovery, lost segments are retransmitted within its
 * window, and the queue that caused the loss shows up as power > 1 and
 * shrinks the window. After an RTO the kernel sets cwnd to the packets in
 * flight + 1; the next ACK restores the control law's window, paced, so not
 * as a burst. undo_cwnd keeps the current window: nothing was reduced.
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
 * to a plausible dt.
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
 *   INT_PATH_CHANGES  ... the hop count or a hop's rate changed,
 *                     re-baselined
 *   NO_INT_FLOWS      a powertcp flow reached LUMEN_PTCP_NO_INT_ROUNDS
 *                     RTT-driven updates without one echo with INT hops:
 *                     the INT plumbing is missing on its path (no INT
 *                     sockops on a host, no INT switch), and it runs
 *                     theta-PowerTCP's RTT rule. Once per flow; the module
 *                     also says so in the kernel log.
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
	X(NO_INT_FLOWS)

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
	const struct lumen_ptcp_stats was = st->stats;
	__u32 events = LUMEN_PTCP_EV(ACKS);
	enum lumen_ptcp_result res;

	if (st->mode == LUMEN_PTCP_MODE_INT && !echo)
		events |= LUMEN_PTCP_EV(NO_INT);
	res = lumen_ptcp_on_ack(st, p, ack, echo);
	if (st->stats.int_unusable != was.int_unusable)
		events |= LUMEN_PTCP_EV(INT_UNUSABLE);
	if (st->stats.int_gap != was.int_gap)
		events |= LUMEN_PTCP_EV(INT_GAP);
	if (st->stats.int_stale != was.int_stale)
		events |= LUMEN_PTCP_EV(INT_STALE);
	if (st->stats.int_duplicate != was.int_duplicate)
		events |= LUMEN_PTCP_EV(INT_DUPLICATE);
	if (st->stats.int_path_changes != was.int_path_changes)
		events |= LUMEN_PTCP_EV(INT_PATH_CHANGES);
	if (st->stats.rtt_guard != was.rtt_guard)
		events |= LUMEN_PTCP_EV(RTT_GUARD);
	if (res == LUMEN_PTCP_UPDATED_INT)
		events |= LUMEN_PTCP_EV(INT_UPDATES);
	else if (res == LUMEN_PTCP_UPDATED_RTT && st->mode == LUMEN_PTCP_MODE_INT) {
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

/* TX_START restarts only after this long without an RTT sample (1.05 ms). */
#define LUMEN_PTCP_IDLE_NS (LUMEN_INT_WRAP_NS / 4)

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
	return now_ns - st->prev_rtt_time_ns >= LUMEN_PTCP_IDLE_NS;
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

#endif /* LUMEN_POWERTCP_ACK_H */
