// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * TIMELY as a BPF struct_ops: the eBPF shell around include/lumen/timely.h,
 * registered as bpf_timely. The algorithm, and what its TCP binding does
 * (a window to go with the rate, loss, undo, idle), are explained there;
 * this file reads the socket, calls the core and writes the results back,
 * the way powertcp.bpf.c does for PowerTCP. It needs no INT and no switch
 * support: only the RTT samples TCP takes anyway.
 *
 * Per ACK, in the order the kernel calls us (tcp_ack()):
 *
 *	pkts_acked	keeps the ACK's RTT sample (ack_sample.rtt_us) in the
 *			socket's state: cong_control reads only its first
 *			argument (one object for 6.1 ... 6.18, see
 *			powertcp.bpf.c), so not the rate sample's.
 *	cong_control	the loss state first (TCP's ca_state: entering Recovery
 *			or Loss halves the rate once per episode, leaving it
 *			closes the episode: lumen_timely_loss), then the
 *			completion events (lumen_timely_on_ack: one per
 *			seg_bytes acknowledged, or per round trip, with an
 *			RTT sample), then the
 *			outputs: sk_pacing_rate = the rate (TCP paces: we ask
 *			for it at init, sk_pacing_status), snd_cwnd =
 *			lumen_timely_cwnd_bytes() / mss.
 *
 * And besides:
 *	undo_cwnd	a spurious loss episode: lumen_timely_undo() restores
 *			the rate before its cut.
 *	cwnd_event	CA_EVENT_CWND_RESTART (idle beyond the RTO), or
 *			CA_EVENT_TX_START (sending with nothing in flight) after
 *			a silence longer than lumen_timely_idle() allows:
 *			lumen_timely_restart() forgets the RTT history (it
 *			describes another network), keeps the rate. At a low
 *			rate, TX_START comes with every paced segment (each is
 *			acknowledged before the next leaves): those gaps are
 *			the pacing, not idle, and must not wipe the gradient.
 *	ssthresh	infinite: no slow start, cong_control owns the window.
 *
 * What this shell adds, as powertcp.bpf.c does:
 *  - State: struct lumen_timely_sk (bpf_shared.h) in the sk_storage map
 *    "lumen_timely_sk"; init creates it, release deletes it.
 *  - Parameters: array "lumen_timely_params", one value under its
 *    bpf_spin_lock; `lumen cc set --algo bpf_timely` writes it whole with
 *    BPF_F_LOCK, a flow copies a new set on its next ACK (timely_refresh),
 *    so no flow ever sees half of one set. The loader refuses invalid sets
 *    (lumen_timely_params_validate); a flow checks again and keeps what it
 *    had (counted as param_retry).
 *  - No state (sk_storage allocation failed, or LUMEN_CC_FAULT_NO_STATE in
 *    "lumen_cc_faults", shared with powertcp.bpf.c): Reno through the
 *    kernel's tcp_reno_* kfuncs, counted as no_state.
 *  - Counters: per-CPU array "lumen_timely_stats" (LUMEN_TIMELY_COUNTERS),
 *    `lumen cc status`; per flow, struct lumen_timely_stats in the state,
 *    which cc_flows.bpf.c lists.
 */
#include "lumen_bpf.h"
#include "lumen/powertcp_ack.h" /* lumen_ptcp_cwnd_segs, _pacing_cap, _rtt_ns, _tcp_ns */
#include "lumen/timely.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define LUMEN_TCP_INFINITE_SSTHRESH 0x7fffffff
#define LUMEN_READ_ONCE(x) (*(volatile typeof(x) *)&(x))

/* The kernel's Reno, for sockets without state (BPF kfuncs, Linux 6.0+). */
extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern __u32 tcp_reno_ssthresh(struct sock *sk) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct lumen_timely_sk);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} lumen_timely_sk SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lumen_timely_param_val);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} lumen_timely_params SEC(".maps");

/* Declared as in powertcp.bpf.c: pinned by name, one map for both objects. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} lumen_cc_faults SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LUMEN_TIMELY_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} lumen_timely_stats SEC(".maps");

static __always_inline struct tcp_sock *timely_tcp_sk(struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline __u8 timely_ca_state(struct sock *sk)
{
	struct inet_connection_sock *icsk = (struct inet_connection_sock *)sk;

	return BPF_CORE_READ_BITFIELD(icsk, icsk_ca_state);
}

static __always_inline bool timely_fault(__u32 flag)
{
	__u32 zero = 0;
	__u32 *f = bpf_map_lookup_elem(&lumen_cc_faults, &zero);

	return f && (*f & flag);
}

/*
 * The socket's copy of the parameters, brought up to the last set: the
 * generation, read without the lock, says whether there is a new one; the
 * copy is taken under the value's lock (see lumen_cc_param_val in
 * bpf_shared.h for why a lock and not a seqlock).
 */
static __always_inline void timely_refresh(struct lumen_timely_sk *ts)
{
	struct lumen_timely_param_val *v;
	struct lumen_timely_params p;
	__u32 key = 0, gen;

	v = bpf_map_lookup_elem(&lumen_timely_params, &key);
	if (!v)
		goto keep;
	if (ts->params_fresh && ts->params_gen == LUMEN_READ_ONCE(v->gen))
		return; /* nothing new: the common case */
	bpf_spin_lock(&v->lock);
	p = v->params;
	gen = v->gen;
	bpf_spin_unlock(&v->lock);
	if (lumen_timely_params_validate(&p) != 0) {
		LUMEN_COUNT(lumen_timely_stats, LUMEN_TIMELY_CNT_PARAM_RETRY);
		goto keep;
	}
	ts->params = p;
	ts->params_gen = gen;
	ts->params_fresh = 1;
	return;
keep:
	/* what the flow had; a flow that had nothing starts on the defaults */
	if (!ts->params_fresh && lumen_timely_params_validate(&ts->params) != 0)
		lumen_timely_params_default(&ts->params);
}

/* Install the core's rate and the window that goes with it. */
static __always_inline void timely_apply(struct sock *sk, struct lumen_timely_sk *ts)
{
	struct tcp_sock *tp = timely_tcp_sk(sk);

	ts->cwnd_bytes = lumen_timely_cwnd_bytes(&ts->st, &ts->params, tp->mss_cache);
	tp->snd_cwnd = lumen_ptcp_cwnd_segs(ts->cwnd_bytes, tp->mss_cache, tp->snd_cwnd_clamp);
	sk->sk_pacing_rate = lumen_ptcp_pacing_cap(ts->st.rate, sk->sk_max_pacing_rate);
}

static __always_inline void timely_init(struct sock *sk)
{
	struct tcp_sock *tp = timely_tcp_sk(sk);
	struct lumen_timely_sk *ts = NULL;

	LUMEN_COUNT(lumen_timely_stats, LUMEN_TIMELY_CNT_FLOWS);
	if (!timely_fault(LUMEN_CC_FAULT_NO_STATE))
		ts = bpf_sk_storage_get(&lumen_timely_sk, sk, NULL, BPF_SK_STORAGE_GET_F_CREATE);
	if (!ts)
		return; /* no memory: the Reno fallback (see the header) */
	ts->params_fresh = 0;
	timely_refresh(ts);
	lumen_timely_init(&ts->st, &ts->params, tp->snd_una);
	ts->rtt_us = -1;
	ts->last_ack_ns = lumen_ptcp_tcp_ns(tp->tcp_mstamp);
	if (sk->sk_pacing_status == SK_PACING_NONE)
		sk->sk_pacing_status = SK_PACING_NEEDED;
	timely_apply(sk, ts);
}

static __always_inline void timely_release(struct sock *sk)
{
	bpf_sk_storage_delete(&lumen_timely_sk, sk);
}

/* The ACK's RTT sample for cong_control; without state, Reno's increase. */
static __always_inline void timely_pkts_acked(struct sock *sk, const struct ack_sample *sample)
{
	struct lumen_timely_sk *ts = bpf_sk_storage_get(&lumen_timely_sk, sk, NULL, 0);
	__u8 state;

	if (!ts) {
		state = timely_ca_state(sk);
		if (sample->pkts_acked > 0 && state != LUMEN_TCP_CA_CWR && state != LUMEN_TCP_CA_RECOVERY)
			tcp_reno_cong_avoid(sk, 0, sample->pkts_acked);
		return;
	}
	ts->rtt_us = sample->rtt_us;
}

/* Bump the host-wide counter of each kind of event the ACK ran. */
static __always_inline void timely_count(const struct lumen_timely_stats *a, const struct lumen_timely_stats *b)
{
	if (a->events != b->events)
		LUMEN_COUNT(lumen_timely_stats, LUMEN_TIMELY_CNT_EVENTS);
	if (a->low != b->low)
		LUMEN_COUNT(lumen_timely_stats, LUMEN_TIMELY_CNT_LOW);
	if (a->high != b->high)
		LUMEN_COUNT(lumen_timely_stats, LUMEN_TIMELY_CNT_HIGH);
	if (a->increases != b->increases)
		LUMEN_COUNT(lumen_timely_stats, LUMEN_TIMELY_CNT_INCREASES);
	if (a->hai != b->hai)
		LUMEN_COUNT(lumen_timely_stats, LUMEN_TIMELY_CNT_HAI);
	if (a->decreases != b->decreases)
		LUMEN_COUNT(lumen_timely_stats, LUMEN_TIMELY_CNT_DECREASES);
	if (a->loss_cuts != b->loss_cuts)
		LUMEN_COUNT(lumen_timely_stats, LUMEN_TIMELY_CNT_LOSS_CUTS);
}

static __always_inline void timely_cong_control(struct sock *sk)
{
	struct tcp_sock *tp = timely_tcp_sk(sk);
	struct lumen_timely_stats before;
	struct lumen_timely_sk *ts;
	__u8 state;

	ts = bpf_sk_storage_get(&lumen_timely_sk, sk, NULL, 0);
	state = timely_ca_state(sk);
	if (!ts) {
		/* Reno: the cut to ssthresh at once (no PRR with cong_control) */
		LUMEN_COUNT(lumen_timely_stats, LUMEN_TIMELY_CNT_NO_STATE);
		if (state == LUMEN_TCP_CA_CWR || state == LUMEN_TCP_CA_RECOVERY)
			tp->snd_cwnd = (__u32)lumen_max_u64(lumen_min_u64(tp->snd_cwnd, tp->snd_ssthresh), 2);
		return;
	}
	timely_refresh(ts);
	LUMEN_COUNT(lumen_timely_stats, LUMEN_TIMELY_CNT_ACKS);
	before = ts->st.stats;

	/* a loss episode: Recovery (fast retransmit) or Loss (RTO) */
	lumen_timely_loss(&ts->st, &ts->params, state == LUMEN_TCP_CA_RECOVERY || state == LUMEN_TCP_CA_LOSS);
	lumen_timely_on_ack(&ts->st, &ts->params, tp->snd_una, tp->snd_nxt, lumen_ptcp_rtt_ns(ts->rtt_us));
	ts->rtt_us = -1;
	ts->last_ack_ns = lumen_ptcp_tcp_ns(tp->tcp_mstamp);

	timely_count(&before, &ts->st.stats);
	timely_apply(sk, ts);
}

/* Idle: CWND_RESTART always, TX_START when lumen_timely_idle() says so. */
static __always_inline void timely_cwnd_event(struct sock *sk, enum tcp_ca_event ev)
{
	struct tcp_sock *tp = timely_tcp_sk(sk);
	struct lumen_timely_sk *ts;
	__u64 now;

	if (ev != CA_EVENT_TX_START && ev != CA_EVENT_CWND_RESTART) /* most events: no lookup */
		return;
	ts = bpf_sk_storage_get(&lumen_timely_sk, sk, NULL, 0);
	if (!ts)
		return;
	now = lumen_ptcp_tcp_ns(tp->tcp_mstamp);
	if (ev == CA_EVENT_TX_START && !lumen_timely_idle(&ts->st, ts->cwnd_bytes, ts->last_ack_ns, now))
		return;
	lumen_timely_restart(&ts->st);
	LUMEN_COUNT(lumen_timely_stats, LUMEN_TIMELY_CNT_RESTARTS);
}

/* No slow start; cong_control owns the window, also in recovery. */
static __always_inline __u32 timely_ssthresh(struct sock *sk)
{
	if (!bpf_sk_storage_get(&lumen_timely_sk, sk, NULL, 0))
		return tcp_reno_ssthresh(sk);
	return LUMEN_TCP_INFINITE_SSTHRESH;
}

/* A spurious loss episode: the rate before the cut comes back. */
static __always_inline __u32 timely_undo_cwnd(struct sock *sk)
{
	struct lumen_timely_sk *ts = bpf_sk_storage_get(&lumen_timely_sk, sk, NULL, 0);
	struct tcp_sock *tp = timely_tcp_sk(sk);
	__u32 undos;

	if (!ts)
		return tcp_reno_undo_cwnd(sk);
	undos = ts->st.stats.loss_undos;
	lumen_timely_undo(&ts->st, &ts->params);
	if (ts->st.stats.loss_undos != undos)
		LUMEN_COUNT(lumen_timely_stats, LUMEN_TIMELY_CNT_LOSS_UNDOS);
	timely_apply(sk, ts);
	return tp->snd_cwnd;
}

SEC("struct_ops/timely_init")
void BPF_PROG(timely_init_prog, struct sock *sk)
{
	timely_init(sk);
}

SEC("struct_ops/timely_release")
void BPF_PROG(timely_release_prog, struct sock *sk)
{
	timely_release(sk);
}

SEC("struct_ops/timely_ssthresh")
__u32 BPF_PROG(timely_ssthresh_prog, struct sock *sk)
{
	return timely_ssthresh(sk);
}

SEC("struct_ops/timely_undo_cwnd")
__u32 BPF_PROG(timely_undo_cwnd_prog, struct sock *sk)
{
	return timely_undo_cwnd(sk);
}

SEC("struct_ops/timely_cwnd_event")
void BPF_PROG(timely_cwnd_event_prog, struct sock *sk, enum tcp_ca_event ev)
{
	timely_cwnd_event(sk, ev);
}

SEC("struct_ops/timely_pkts_acked")
void BPF_PROG(timely_pkts_acked_prog, struct sock *sk, const struct ack_sample *sample)
{
	timely_pkts_acked(sk, sample);
}

/* cong_control declares only its first argument (see powertcp.bpf.c). */
SEC("struct_ops/timely_cong_control")
void BPF_PROG(timely_cong_control_prog, struct sock *sk)
{
	timely_cong_control(sk);
}

/* struct_ops map name (<= 15 characters): timely_ops */
SEC(".struct_ops")
struct tcp_congestion_ops timely_ops = {
	.init = (void *)timely_init_prog,
	.release = (void *)timely_release_prog,
	.ssthresh = (void *)timely_ssthresh_prog,
	.undo_cwnd = (void *)timely_undo_cwnd_prog,
	.cwnd_event = (void *)timely_cwnd_event_prog,
	.pkts_acked = (void *)timely_pkts_acked_prog,
	.cong_control = (void *)timely_cong_control_prog,
	.name = LUMEN_CC_NAME_TIMELY,
};
