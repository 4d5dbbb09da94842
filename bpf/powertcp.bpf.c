// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* PowerTCP and theta-PowerTCP congestion control, as BPF struct_ops.
 *
 * V. Addanki, O. Michel, S. Schmid: "PowerTCP: Pushing the Performance
 * Limits of Datacenter Networks", NSDI 2022; V. Addanki, PhD thesis, 2025.
 *
 * PowerTCP reacts to the "power" of the bottleneck, the product of its
 * queue-induced delay (voltage, q + b*tau) and of its arrival rate (current,
 * dq/dt + mu). Normalised by the power of a link that is exactly busy with an
 * empty queue, power is 1 at the ideal operating point, above 1 when a queue
 * builds or grows, below 1 when the link is underused. On every ACK the
 * sender moves its window towards
 *
 *	cwnd = gamma * (cwnd_old / power + beta) + (1 - gamma) * cwnd
 *
 * where cwnd_old is the window the acknowledged data was sent with and beta
 * an additive increase (HostBw * tau / N unless configured), and paces at
 * cwnd / tau. A flow starts with one host bandwidth-delay product and has no
 * slow start. The per-hop queue length, transmitted bytes, timestamp and link
 * rate come from in-band network telemetry (INT) that the switches stamp into
 * data segments and the receiver echoes back in ACKs.
 *
 * theta-PowerTCP needs no switch support: taking mu as b, the normalised power
 * becomes (1 + dRTT/dt) * RTT / tau, computed from RTT samples, and the window
 * is updated once per RTT.
 *
 * This file registers two algorithms:
 *
 *	bpf_powertcp	PowerTCP, fed by the INT echoes that lumen's sockops
 *			program (int_sockops.bpf.c) parses into the sk_storage
 *			map "lumen_int_sk". Without INT (no sockops loaded, no
 *			INT switch on the path, a flow the filters exclude) it
 *			falls back to the theta-PowerTCP rule; those updates are
 *			counted as fallback_updates, the ACKs as no_int.
 *	bpf_theta_ptcp	theta-PowerTCP, RTT only.
 *
 * Design
 * ------
 * The control law is not here: it is include/lumen/powertcp.h, the integer-only
 * core shared with the kernel module and the userspace tests and simulators,
 * called per ACK through lumen_ptcp_on_ack(). This file only translates
 * between the kernel and the core:
 *
 *  - State. struct lumen_ptcp (window history, the previous ACK's INT hop
 *    stack, RTT estimator) does not fit icsk_ca_priv (104 bytes), so every
 *    socket has a struct lumen_cc_sk in the sk_storage map "lumen_cc_sk",
 *    created by init and deleted by release.
 *  - Parameters. The array map "lumen_cc_params" holds a struct
 *    lumen_ptcp_params per algorithm (index = enum lumen_ptcp_mode), double
 *    buffered under a generation ("lumen_cc_param_gen", see bpf_shared.h).
 *    Every ACK compares the generation with the one its socket copied at,
 *    so `lumen cc set` acts on running flows from their next ACK without
 *    re-registration, and the common case reads one shared word. A copy that
 *    the generation shows was rewritten while it was taken, or that does not
 *    validate, is dropped (param_retry): the flow keeps what it had (the
 *    defaults if it had nothing yet) and copies again on the next ACK.
 *  - INT. On each ACK, cong_control looks up lumen_int_sk (never creating
 *    it); when its echo_gen differs from the one last consumed, the echo is
 *    new and is handed to the core, otherwise the core is told that this ACK
 *    carried no INT. The sockops program parses header options before
 *    tcp_ack() runs, so the echo of this very ACK is already stored.
 *  - RTT samples. pkts_acked receives the ACK's RTT sample (the same value
 *    6.10+ passes to cong_control in rate_sample.rtt_us) and leaves it in
 *    lumen_cc_sk.rtt_us; cong_control, which runs later for the same ACK,
 *    consumes it. An ACK without a sample passes rtt 0 ("none") to the core.
 *    The ACK time is tp->tcp_mstamp, the clock of the RTT samples.
 *  - Kernel interface. cong_control replaces the kernel's window logic
 *    entirely: the core's window (bytes) becomes tp->snd_cwnd in segments,
 *    clamped to [2, snd_cwnd_clamp], and its rate sk->sk_pacing_rate, capped
 *    at sk_max_pacing_rate (SO_MAX_PACING_RATE). init asks TCP to pace
 *    (sk_pacing_status = SK_PACING_NEEDED, unless fq already paces). Both
 *    fields are writable from BPF since Linux 6.0, which is the minimum.
 *  - One object for 6.1 ... 6.18. The cong_control prototype grew arguments
 *    in 6.10 (ack, flag, rate_sample); the program reads only argument 0
 *    (sk), which has the same type in every version, so the verifier accepts
 *    it against either prototype. Fields of struct tcp_sock are CO-RE
 *    relocated.
 *
 * Loss, recovery and idle
 * -----------------------
 * PowerTCP has no slow start and does not react to loss: ssthresh returns
 * TCP_INFINITE_SSTHRESH, so entering fast recovery or loss recovery does not
 * lower the window target. Because cong_control is set, the kernel skips PRR
 * (tcp_cwnd_reduction) and the end-of-recovery window reset, so PowerTCP keeps
 * control of cwnd throughout recovery: lost segments are retransmitted within
 * the window the control law computes, and queue build-up that caused the
 * loss shows up as power > 1 and shrinks the window. After an RTO the kernel
 * sets cwnd to the packets in flight + 1; the next ACK restores the control
 * law's window (paced, so not as a burst). undo_cwnd keeps the current window,
 * since nothing was reduced that needs undoing. After idle
 * (CA_EVENT_CWND_RESTART, or CA_EVENT_TX_START after at least 1 ms without
 * an ACK, see cc_cwnd_event) the power, INT and RTT histories no longer
 * describe the network and are discarded (lumen_ptcp_restart); the window
 * itself is kept. (With net.ipv4.tcp_slow_start_after_idle the kernel lowers
 * snd_cwnd after an idle RTO; the first ACK restores the control law's
 * window.)
 *
 * No state
 * --------
 * A socket whose sk_storage could not be created (memory) runs a defined
 * fallback, Reno, as the kernel module does: the kernel's tcp_reno_*
 * functions (BPF kfuncs) for slow start / additive increase per ACK
 * (pkts_acked, for the segments it acknowledges), ssthresh (half the window
 * on loss) and undo; cong_control cuts the window to ssthresh at once while
 * in recovery or CWR (it replaces PRR). Its ACKs count as no_state. The
 * test hook LUMEN_CC_FAULT_NO_STATE ("lumen_cc_faults") makes init skip the
 * state so that this path is exercised.
 *
 * Counters (per-CPU array "lumen_cc_stats", enum lumen_cc_counter) record
 * flows, ACKs, updates by source, missing INT, missing state, restarts and
 * dropped parameter copies.
 */
#include "lumen_bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define LUMEN_TCP_INFINITE_SSTHRESH 0x7fffffff
#define LUMEN_TCPF_CA_CWR (1 << 2) /* TCPF_CA_CWR, TCPF_CA_Recovery (enum values, */
#define LUMEN_TCPF_CA_RECOVERY (1 << 3) /* not in vmlinux.h as macros) */

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
	__uint(max_entries, LUMEN_CC_PARAM_SLOTS);
	__type(key, __u32);
	__type(value, struct lumen_ptcp_params);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} lumen_cc_params SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LUMEN_CC_PARAM_ENTRIES);
	__type(key, __u32);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} lumen_cc_param_gen SEC(".maps");

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
 * Bring the socket's copy of its algorithm's parameters up to the published
 * generation (see bpf_shared.h). Loads are not reordered with loads on x86
 * (TSO), and the compiler barriers keep the two generation reads around the
 * copy; the writer publishes with a system call after its slot write.
 */
static __always_inline void cc_refresh_params(struct lumen_cc_sk *cs, enum lumen_ptcp_mode mode)
{
	const struct lumen_ptcp_params *v;
	struct lumen_ptcp_params p;
	__u32 key = mode, slot, gen;
	__u32 *g;

	g = bpf_map_lookup_elem(&lumen_cc_param_gen, &key);
	if (!g)
		goto keep;
	gen = LUMEN_READ_ONCE(*g);
	if (cs->params_fresh && cs->params_gen == gen)
		return; /* nothing new: the common case */
	slot = lumen_cc_param_slot(mode, gen);
	v = bpf_map_lookup_elem(&lumen_cc_params, &slot);
	if (!v)
		goto keep;
	asm volatile("" ::: "memory");
	p = *v;
	asm volatile("" ::: "memory");
	if (LUMEN_READ_ONCE(*g) != gen || lumen_ptcp_params_validate(&p) != 0) {
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

	return (1 << state) & (LUMEN_TCPF_CA_CWR | LUMEN_TCPF_CA_RECOVERY);
}

static __always_inline bool cc_fault(__u32 flag)
{
	__u32 zero = 0;
	__u32 *f = bpf_map_lookup_elem(&lumen_cc_faults, &zero);

	return f && (*f & flag);
}

/* Install the core's window and pacing rate. */
static __always_inline void cc_apply(struct sock *sk, const struct lumen_ptcp *st)
{
	struct tcp_sock *tp = cc_tcp_sk(sk);
	__u32 mss = tp->mss_cache ? tp->mss_cache : 1;
	__u64 segs = st->cwnd_bytes / mss;
	__u64 clamp = tp->snd_cwnd_clamp;
	__u64 rate = st->pacing_rate;
	__u64 max_rate = sk->sk_max_pacing_rate;

	segs = lumen_max_u64(segs, LUMEN_PTCP_MIN_CWND_SEGS);
	segs = lumen_min_u64(segs, clamp);
	tp->snd_cwnd = segs ? (__u32)segs : 1;
	sk->sk_pacing_rate = lumen_min_u64(rate, max_rate);
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
	cs->rtt_us = 0;
	if (sk->sk_pacing_status == SK_PACING_NONE)
		sk->sk_pacing_status = SK_PACING_NEEDED;
	cc_apply(sk, &cs->ptcp);
}

static __always_inline void cc_release(struct sock *sk)
{
	bpf_sk_storage_delete(&lumen_cc_sk, sk);
}

/*
 * The ACK's RTT sample (-1: none), consumed by cong_control of the same ACK.
 * Without state: Reno's increase for the segments this ACK acknowledges
 * (the kernel calls cong_avoid only for algorithms without cong_control).
 */
static __always_inline void cc_pkts_acked(struct sock *sk, const struct ack_sample *sample)
{
	struct lumen_cc_sk *cs = bpf_sk_storage_get(&lumen_cc_sk, sk, NULL, 0);
	__s32 rtt_us = sample->rtt_us;

	if (!cs) {
		if (sample->pkts_acked > 0 && !cc_in_cwnd_reduction(sk))
			tcp_reno_cong_avoid(sk, 0, sample->pkts_acked);
		return;
	}
	/* 0 means "no sample" to the core: a sub-microsecond RTT counts as 1 us */
	cs->rtt_us = rtt_us < 0 ? 0 : (rtt_us == 0 ? 1 : (__u32)rtt_us);
}

static __always_inline void cc_cong_control(struct sock *sk, enum lumen_ptcp_mode mode)
{
	struct tcp_sock *tp = cc_tcp_sk(sk);
	const struct lumen_int_opt *echo = NULL;
	struct lumen_ptcp_ack ack;
	enum lumen_ptcp_result res;
	__u32 unusable, guard;
	struct lumen_cc_sk *cs;

	cs = bpf_sk_storage_get(&lumen_cc_sk, sk, NULL, 0);
	if (!cs) {
		/* Reno: the cut to ssthresh at once (no PRR with cong_control) */
		LUMEN_COUNT(lumen_cc_stats, LUMEN_CC_CNT_NO_STATE);
		if (cc_in_cwnd_reduction(sk))
			tp->snd_cwnd = (__u32)lumen_max_u64(lumen_min_u64(tp->snd_cwnd, tp->snd_ssthresh), 2);
		return;
	}
	LUMEN_COUNT(lumen_cc_stats, LUMEN_CC_CNT_ACKS);
	cc_refresh_params(cs, mode);

	ack.now_ns = tp->tcp_mstamp * 1000;
	ack.rtt_ns = (__u64)cs->rtt_us * 1000;
	cs->rtt_us = 0;
	ack.snd_una = tp->snd_una;
	ack.snd_nxt = tp->snd_nxt;
	ack.mss = tp->mss_cache;

	if (mode == LUMEN_PTCP_MODE_INT) {
		struct lumen_int_sk *isk = bpf_sk_storage_get(&lumen_int_sk, sk, NULL, 0);

		if (isk && isk->echo_gen != cs->echo_gen_seen) {
			cs->echo_gen_seen = isk->echo_gen;
			echo = &isk->echo;
		} else {
			LUMEN_COUNT(lumen_cc_stats, LUMEN_CC_CNT_NO_INT);
		}
	}

	unusable = cs->ptcp.stats.int_unusable;
	guard = cs->ptcp.stats.rtt_guard;
	res = lumen_ptcp_on_ack(&cs->ptcp, &cs->params, &ack, echo);
	if (cs->ptcp.stats.int_unusable != unusable)
		LUMEN_COUNT(lumen_cc_stats, LUMEN_CC_CNT_INT_UNUSABLE);
	if (cs->ptcp.stats.rtt_guard != guard)
		LUMEN_COUNT(lumen_cc_stats, LUMEN_CC_CNT_RTT_GUARD);
	if (res == LUMEN_PTCP_UPDATED_INT)
		LUMEN_COUNT(lumen_cc_stats, LUMEN_CC_CNT_INT_UPDATES);
	else if (res == LUMEN_PTCP_UPDATED_RTT && mode == LUMEN_PTCP_MODE_INT)
		LUMEN_COUNT(lumen_cc_stats, LUMEN_CC_CNT_FALLBACK_UPDATES);
	else if (res == LUMEN_PTCP_UPDATED_RTT)
		LUMEN_COUNT(lumen_cc_stats, LUMEN_CC_CNT_RTT_UPDATES);
	cc_apply(sk, &cs->ptcp);
}

/*
 * Idle restart. CA_EVENT_CWND_RESTART comes after an idle period longer than
 * the RTO (tcp_slow_start_after_idle). CA_EVENT_TX_START comes whenever data
 * is sent with nothing in flight, which a request/response flow does on every
 * request, idle or not; forgetting the INT history each time would leave such
 * flows with no INT power sample at all. So TX_START restarts only after at
 * least LUMEN_CC_IDLE_NS without an RTT sample (i.e. without an ACK for new
 * data): a quarter of the INT timestamp wrap, well inside the 4.19 ms beyond
 * which a gap between two echoes of a hop could alias to a plausible dt.
 */
#define LUMEN_CC_IDLE_NS (LUMEN_INT_WRAP_NS / 4)

static __always_inline void cc_cwnd_event(struct sock *sk, enum tcp_ca_event ev)
{
	struct tcp_sock *tp = cc_tcp_sk(sk);
	struct lumen_cc_sk *cs;
	__u64 now_ns;

	if (ev != CA_EVENT_TX_START && ev != CA_EVENT_CWND_RESTART)
		return;
	cs = bpf_sk_storage_get(&lumen_cc_sk, sk, NULL, 0);
	if (!cs)
		return;
	now_ns = tp->tcp_mstamp * 1000;
	if (ev == CA_EVENT_TX_START && cs->ptcp.have_rtt && now_ns >= cs->ptcp.prev_rtt_time_ns &&
	    now_ns - cs->ptcp.prev_rtt_time_ns < LUMEN_CC_IDLE_NS)
		return;
	lumen_ptcp_restart(&cs->ptcp, tp->snd_nxt);
	LUMEN_COUNT(lumen_cc_stats, LUMEN_CC_CNT_RESTARTS);
}

/* No slow start, and loss does not lower the target (see the header). */
static __always_inline __u32 cc_ssthresh(struct sock *sk)
{
	if (!bpf_sk_storage_get(&lumen_cc_sk, sk, NULL, 0))
		return tcp_reno_ssthresh(sk);
	return LUMEN_TCP_INFINITE_SSTHRESH;
}

static __always_inline __u32 cc_undo_cwnd(struct sock *sk)
{
	if (!bpf_sk_storage_get(&lumen_cc_sk, sk, NULL, 0))
		return tcp_reno_undo_cwnd(sk);
	return cc_tcp_sk(sk)->snd_cwnd;
}

/*
 * One set of struct_ops programs per algorithm: each knows its mode at
 * compile time, and no program is shared between the two struct_ops maps.
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

/* struct_ops map names (<= 15 characters): ptcp_ops_int, ptcp_ops_theta */
LUMEN_CC_OPS(ptcp_ops_int, LUMEN_PTCP_MODE_INT, LUMEN_CC_NAME_INT);
LUMEN_CC_OPS(ptcp_ops_theta, LUMEN_PTCP_MODE_THETA, LUMEN_CC_NAME_THETA);
