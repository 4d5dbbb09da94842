// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * PowerTCP, theta-PowerTCP and HPCC as BPF struct_ops: the eBPF shell around
 * the core. The algorithm is explained in include/lumen/powertcp.h (HPCC's
 * control law in include/lumen/hpcc.h, run by the same core), and what is
 * done around it per ACK, on idle and on loss in include/lumen/powertcp_ack.h,
 * both shared with the kernel module; this file reads the socket, calls them
 * and writes the results back. It registers
 *
 *	bpf_powertcp	PowerTCP from the INT echoes that lumen's sockops program
 *			(int_sockops.bpf.c) parses into the sk_storage map
 *			"lumen_int_sk"; without them, the core's RTT fallback.
 *	bpf_theta_ptcp	theta-PowerTCP, RTT only.
 *	bpf_hpcc	HPCC (LUMEN_PTCP_MODE_HPCC): the same INT echoes as
 *			bpf_powertcp, read the same way, and the same RTT
 *			fallback without them; HPCC's window law.
 *
 * What this shell adds:
 *  - State: struct lumen_ptcp does not fit icsk_ca_priv, so each socket has a
 *    struct lumen_cc_sk in the sk_storage map "lumen_cc_sk" (init creates it,
 *    release deletes it).
 *  - Parameters: per algorithm in the array map "lumen_cc_params", each
 *    under its bpf_spin_lock (bpf_shared.h); a flow copies a new set on its
 *    next ACK (cc_refresh_params).
 *  - INT: an echo is this ACK's when lumen_int_sk's echo_gen moved since the
 *    last ACK and it came on a segment with this ACK's ack_seq; the sockops
 *    program parses header options (after TCP's checks) before tcp_ack(),
 *    so it is already stored.
 *  - RTT: pkts_acked hands the ACK's sample to cong_control of the same ACK
 *    in lumen_cc_sk.rtt_us. The clock is tp->tcp_mstamp, the samples' own.
 *  - One object for Linux 6.1 ... 6.18: cong_control reads only argument 0
 *    (sk), the same type in either prototype (more arguments from 6.10);
 *    tcp_sock fields are CO-RE relocated; snd_cwnd and sk_pacing_rate are
 *    writable from BPF since 6.0.
 *  - No state (sk_storage allocation failed): Reno through the kernel's
 *    tcp_reno_* kfuncs, cut to ssthresh at once in recovery (no PRR with
 *    cong_control), counted as no_state. LUMEN_CC_FAULT_NO_STATE in
 *    "lumen_cc_faults" forces this path for tests.
 *  - Counters: per-CPU array "lumen_cc_stats" (LUMEN_CC_COUNTERS), `lumen cc
 *    status`.
 */
#include "lumen_bpf.h"
#include "lumen/powertcp_ack.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define LUMEN_TCP_INFINITE_SSTHRESH 0x7fffffff

#define LUMEN_READ_ONCE(x) (*(volatile typeof(x) *)&(x))

/* The kernel's Reno, for sockets without state (BPF kfuncs, Linux 6.0+). */
extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern __u32 tcp_reno_ssthresh(struct sock *sk) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

/* Per-socket control state. */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct lumen_cc_sk);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} lumen_cc_sk SEC(".maps");

/*
 * INT echoes, written by int_sockops.bpf.c. Declared identically there; with
 * pinning by name under LUMEN_PIN_ROOT, whichever object loads first creates
 * it and the other reuses it.
 */
LUMEN_DEFINE_INT_SK_MAP();

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LUMEN_CC_PARAM_ENTRIES);
	__type(key, __u32);
	__type(value, struct lumen_cc_param_val);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} lumen_cc_params SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} lumen_cc_faults SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LUMEN_CC_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} lumen_cc_stats SEC(".maps");

static __always_inline struct tcp_sock *cc_tcp_sk(struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

/*
 * Bring the socket's copy of its algorithm's parameters up to the last set
 * (see bpf_shared.h): the generation, read without the lock, says whether
 * there is one; the copy is taken under the value's lock, which a writer's
 * BPF_F_LOCK update also takes, so it is never half of one set and half of
 * another, whatever the CPU's memory ordering.
 */
static __always_inline void cc_refresh_params(struct lumen_cc_sk *cs, enum lumen_ptcp_mode mode)
{
	struct lumen_cc_param_val *v;
	struct lumen_ptcp_params p;
	__u32 key = mode, gen;

	v = bpf_map_lookup_elem(&lumen_cc_params, &key);
	if (!v)
		goto keep;
	if (cs->params_fresh && cs->params_gen == LUMEN_READ_ONCE(v->gen))
		return; /* nothing new: the common case */
	bpf_spin_lock(&v->lock);
	p = v->params;
	gen = v->gen;
	bpf_spin_unlock(&v->lock);
	if (lumen_ptcp_params_validate(&p) != 0) {
		LUMEN_COUNT(lumen_cc_stats, LUMEN_CC_CNT_PARAM_RETRY);
		goto keep;
	}
	cs->params = p;
	cs->params_gen = gen;
	cs->params_fresh = 1;
	return;
keep:
	/* what the flow had; a flow that had nothing starts on the defaults */
	if (!cs->params_fresh && lumen_ptcp_params_validate(&cs->params) != 0)
		lumen_ptcp_params_default(&cs->params);
}

static __always_inline bool cc_in_cwnd_reduction(struct sock *sk)
{
	struct inet_connection_sock *icsk = (struct inet_connection_sock *)sk;
	__u8 state = BPF_CORE_READ_BITFIELD(icsk, icsk_ca_state);

	return state == LUMEN_TCP_CA_CWR || state == LUMEN_TCP_CA_RECOVERY;
}

static __always_inline bool cc_fault(__u32 flag)
{
	__u32 zero = 0;
	__u32 *f = bpf_map_lookup_elem(&lumen_cc_faults, &zero);

	return f && (*f & flag);
}

/* Install a window in segments and the core's pacing rate. */
static __always_inline void cc_apply(struct sock *sk, const struct lumen_ptcp *st, __u32 cwnd_segs)
{
	struct tcp_sock *tp = cc_tcp_sk(sk);

	tp->snd_cwnd = cwnd_segs;
	sk->sk_pacing_rate = lumen_ptcp_pacing_cap(st->pacing_rate, sk->sk_max_pacing_rate);
}

/*
 * Bump the host-wide counters of a LUMEN_PTCP_EV mask. A global function
 * (LUMEN_SUBPROG), which the verifier checks once on its own: inlined, its
 * sixteen branches at the end of cong_control, under every state the core
 * leaves there, took that program past the verifier's budget of one million
 * instructions.
 */
LUMEN_SUBPROG int cc_count_events(__u32 events)
{
#define CC_COUNT_EVENT(id)                                                                                             \
	if (events & LUMEN_PTCP_EV(id))                                                                                \
		LUMEN_COUNT(lumen_cc_stats, LUMEN_CC_CNT_##id);
	LUMEN_PTCP_EVENTS(CC_COUNT_EVENT)
#undef CC_COUNT_EVENT
	return 0;
}

static __always_inline void cc_init(struct sock *sk, enum lumen_ptcp_mode mode)
{
	struct tcp_sock *tp = cc_tcp_sk(sk);
	struct lumen_int_sk *isk;
	struct lumen_cc_sk *cs = NULL;

	LUMEN_COUNT(lumen_cc_stats, LUMEN_CC_CNT_FLOWS);
	if (!cc_fault(LUMEN_CC_FAULT_NO_STATE))
		cs = bpf_sk_storage_get(&lumen_cc_sk, sk, NULL, BPF_SK_STORAGE_GET_F_CREATE);
	if (!cs)
		return; /* no memory: the Reno fallback (see the header) */
	cs->params_fresh = 0;
	cc_refresh_params(cs, mode);
	lumen_ptcp_init(&cs->ptcp, &cs->params, mode, tp->snd_nxt, tp->mss_cache);
	/* only echoes that arrive from now on are news */
	isk = bpf_sk_storage_get(&lumen_int_sk, sk, NULL, 0);
	cs->echo_gen_seen = isk ? isk->echo_gen : 0;
	cs->rtt_us = -1;
	cs->ptcp.loss.delivered = tp->delivered;
	if (sk->sk_pacing_status == SK_PACING_NONE)
		sk->sk_pacing_status = SK_PACING_NEEDED;
	cc_apply(sk, &cs->ptcp, lumen_ptcp_cwnd_segs(cs->ptcp.cwnd_bytes, tp->mss_cache, tp->snd_cwnd_clamp));
}

static __always_inline void cc_release(struct sock *sk)
{
	bpf_sk_storage_delete(&lumen_cc_sk, sk);
}

/*
 * The ACK's RTT sample (< 0: none), kept as the kernel gives it for
 * cong_control of the same ACK, which reads only its first argument (see the
 * header), so not rs->rtt_us.
 * Without state: Reno's increase for the segments this ACK acknowledges
 * (the kernel calls cong_avoid only for algorithms without cong_control).
 */
static __always_inline void cc_pkts_acked(struct sock *sk, const struct ack_sample *sample)
{
	struct lumen_cc_sk *cs = bpf_sk_storage_get(&lumen_cc_sk, sk, NULL, 0);

	if (!cs) {
		if (sample->pkts_acked > 0 && !cc_in_cwnd_reduction(sk))
			tcp_reno_cong_avoid(sk, 0, sample->pkts_acked);
		return;
	}
	cs->rtt_us = sample->rtt_us;
}

/* TCP's loss state after tcp_ack(), for the loss response (powertcp_ack.h). */
static __always_inline void cc_tcp_state(struct sock *sk, struct lumen_ptcp_tcp *t)
{
	struct inet_connection_sock *icsk = (struct inet_connection_sock *)sk;
	struct tcp_sock *tp = cc_tcp_sk(sk);

	lumen_ptcp_tcp_make(t, BPF_CORE_READ_BITFIELD(icsk, icsk_ca_state), tp->packets_out, tp->sacked_out,
			    tp->lost_out, tp->retrans_out, tp->delivered, tp->data_segs_out, tp->snd_cwnd);
}

static __always_inline void cc_cong_control(struct sock *sk, enum lumen_ptcp_mode mode)
{
	struct tcp_sock *tp = cc_tcp_sk(sk);
	const struct lumen_int_opt *echo = NULL;
	struct lumen_ptcp_ack ack;
	struct lumen_ptcp_tcp t;
	struct lumen_cc_sk *cs;
	__u32 events;

	cs = bpf_sk_storage_get(&lumen_cc_sk, sk, NULL, 0);
	if (!cs) {
		/* Reno: the cut to ssthresh at once (no PRR with cong_control) */
		LUMEN_COUNT(lumen_cc_stats, LUMEN_CC_CNT_NO_STATE);
		if (cc_in_cwnd_reduction(sk))
			tp->snd_cwnd = (__u32)lumen_max_u64(lumen_min_u64(tp->snd_cwnd, tp->snd_ssthresh), 2);
		return;
	}
	cc_refresh_params(cs, mode);

	lumen_ptcp_ack_make(&ack, tp->tcp_mstamp, cs->rtt_us, tp->snd_una, tp->snd_nxt, tp->mss_cache);
	cs->rtt_us = -1;

	/*
	 * The echo is this ACK's when the sockops program stored a new one from
	 * a segment with this ack_seq. It parses each segment just before
	 * tcp_ack() processes it (PARSE_HDR_OPT_CB, tcp_validate_incoming()),
	 * so a new echo is at most one segment old: one that tcp_ack() then
	 * refused (an ACK below snd_una) is another ack_seq's and is dropped.
	 * The module's hook, which parses on arrival, needs the TSval too
	 * (lumen_ptcp_echo_match(), powertcp_ack.h); here ack_seq suffices.
	 */
	if (lumen_ptcp_mode_int_fed(mode)) {
		struct lumen_int_sk *isk = bpf_sk_storage_get(&lumen_int_sk, sk, NULL, 0);

		if (isk && isk->echo_gen != cs->echo_gen_seen) {
			enum lumen_ptcp_echo_match m = lumen_ptcp_echo_match(isk->echo_ack, 0, 0, tp->snd_una, 0, 0);

			if (m != LUMEN_PTCP_ECHO_NEWER)
				cs->echo_gen_seen = isk->echo_gen;
			if (m == LUMEN_PTCP_ECHO_THIS_ACK)
				echo = &isk->echo;
			else if (m == LUMEN_PTCP_ECHO_OLDER)
				LUMEN_COUNT(lumen_cc_stats, LUMEN_CC_CNT_INT_UNMATCHED);
		}
	}

	cc_tcp_state(sk, &t);
	events = lumen_ptcp_loss_begin(&cs->ptcp, &cs->params, &t, tp->snd_nxt, tp->mss_cache);
	events |= lumen_ptcp_ack_process(&cs->ptcp, &cs->params, &ack, echo, NULL);
	cc_count_events(events);
	cc_apply(sk, &cs->ptcp, lumen_ptcp_loss_cwnd(&cs->ptcp, &cs->params, &t, tp->mss_cache, tp->snd_cwnd_clamp));
}

/* Idle restart (include/lumen/powertcp_ack.h, "Idle"). */
static __always_inline void cc_cwnd_event(struct sock *sk, enum tcp_ca_event ev)
{
	struct tcp_sock *tp = cc_tcp_sk(sk);
	enum lumen_ptcp_tx_event tx = LUMEN_PTCP_TX_EVENT(ev);
	struct lumen_cc_sk *cs;

	if (tx == LUMEN_PTCP_TX_OTHER) /* most events: no storage lookup */
		return;
	cs = bpf_sk_storage_get(&lumen_cc_sk, sk, NULL, 0);
	if (!cs)
		return;
	cc_count_events(lumen_ptcp_tx_event(&cs->ptcp, tx, lumen_ptcp_tcp_ns(tp->tcp_mstamp), tp->snd_nxt));
}

/* No slow start; cong_control cuts on loss (powertcp_ack.h, "Loss and recovery"). */
static __always_inline __u32 cc_ssthresh(struct sock *sk)
{
	if (!bpf_sk_storage_get(&lumen_cc_sk, sk, NULL, 0))
		return tcp_reno_ssthresh(sk);
	return LUMEN_TCP_INFINITE_SSTHRESH;
}

/* A spurious loss episode: the window before the cut comes back. */
static __always_inline __u32 cc_undo_cwnd(struct sock *sk)
{
	struct lumen_cc_sk *cs = bpf_sk_storage_get(&lumen_cc_sk, sk, NULL, 0);
	struct tcp_sock *tp = cc_tcp_sk(sk);
	__u32 events = 0, segs;

	if (!cs)
		return tcp_reno_undo_cwnd(sk);
	segs = lumen_ptcp_undo(&cs->ptcp, &cs->params, tp->snd_nxt, tp->mss_cache, tp->snd_cwnd_clamp, &events);
	cc_count_events(events);
	cc_apply(sk, &cs->ptcp, segs);
	return segs;
}

/*
 * One set of struct_ops programs per algorithm: each knows its mode at
 * compile time, and no program is shared between the struct_ops maps.
 * cong_control declares only its first argument (see the header).
 */
#define LUMEN_CC_OPS(prefix, mode, ca_name)                                                                            \
	SEC("struct_ops/" #prefix "_init")                                                                             \
	void BPF_PROG(prefix##_init, struct sock *sk)                                                                  \
	{                                                                                                              \
		cc_init(sk, mode);                                                                                     \
	}                                                                                                              \
	SEC("struct_ops/" #prefix "_release")                                                                          \
	void BPF_PROG(prefix##_release, struct sock *sk)                                                               \
	{                                                                                                              \
		cc_release(sk);                                                                                        \
	}                                                                                                              \
	SEC("struct_ops/" #prefix "_ssthresh")                                                                         \
	__u32 BPF_PROG(prefix##_ssthresh, struct sock *sk)                                                             \
	{                                                                                                              \
		return cc_ssthresh(sk);                                                                                \
	}                                                                                                              \
	SEC("struct_ops/" #prefix "_undo_cwnd")                                                                        \
	__u32 BPF_PROG(prefix##_undo_cwnd, struct sock *sk)                                                            \
	{                                                                                                              \
		return cc_undo_cwnd(sk);                                                                               \
	}                                                                                                              \
	SEC("struct_ops/" #prefix "_cwnd_event")                                                                       \
	void BPF_PROG(prefix##_cwnd_event, struct sock *sk, enum tcp_ca_event ev)                                      \
	{                                                                                                              \
		cc_cwnd_event(sk, ev);                                                                                 \
	}                                                                                                              \
	SEC("struct_ops/" #prefix "_pkts_acked")                                                                       \
	void BPF_PROG(prefix##_pkts_acked, struct sock *sk, const struct ack_sample *sample)                           \
	{                                                                                                              \
		cc_pkts_acked(sk, sample);                                                                             \
	}                                                                                                              \
	SEC("struct_ops/" #prefix "_cong_control")                                                                     \
	void BPF_PROG(prefix##_cong_control, struct sock *sk)                                                          \
	{                                                                                                              \
		cc_cong_control(sk, mode);                                                                             \
	}                                                                                                              \
	SEC(".struct_ops")                                                                                             \
	struct tcp_congestion_ops prefix = {                                                                           \
		.init = (void *)prefix##_init,                                                                         \
		.release = (void *)prefix##_release,                                                                   \
		.ssthresh = (void *)prefix##_ssthresh,                                                                 \
		.undo_cwnd = (void *)prefix##_undo_cwnd,                                                               \
		.cwnd_event = (void *)prefix##_cwnd_event,                                                             \
		.pkts_acked = (void *)prefix##_pkts_acked,                                                             \
		.cong_control = (void *)prefix##_cong_control,                                                         \
		.name = ca_name,                                                                                       \
	}

/* struct_ops map names (<= 15 characters): ptcp_ops_int, ptcp_ops_theta, ptcp_ops_hpcc */
LUMEN_CC_OPS(ptcp_ops_int, LUMEN_PTCP_MODE_INT, LUMEN_CC_NAME_INT);
LUMEN_CC_OPS(ptcp_ops_theta, LUMEN_PTCP_MODE_THETA, LUMEN_CC_NAME_THETA);
LUMEN_CC_OPS(ptcp_ops_hpcc, LUMEN_PTCP_MODE_HPCC, LUMEN_CC_NAME_HPCC);
