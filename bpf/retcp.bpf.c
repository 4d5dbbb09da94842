// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * reTCP as a BPF struct_ops: Reno whose window jumps with the circuit to its
 * destination, registered as bpf_retcp. The algorithm (the jumps, the
 * prebuffering, the phase of a window) is include/lumen/retcp.h's; this
 * file finds the circuit and calls it.
 *
 * The signal. reTCP's switch told the sender with ECE that its circuit had
 * come or gone. Here the sender asks the schedule: a lumend (--pin NAME)
 * publishes at every slot boundary, for every destination node, the next
 * window in which this host reaches it (struct lumen_osched_window, TAI),
 * and its word on itself (struct lumen_osched_state: quiet while its clock
 * is not trusted, a change was missed, or it stopped). The loader puts
 * lumend's two maps in place of retcp_osched and retcp_windows
 * (bpf_map__reuse_fd), so the program reads what lumend writes, and fills
 * retcp_hosts (IPv4 address -> node) from the schedule's addresses.
 *
 * Per ACK that acknowledges data (pkts_acked, in every TCP state): the
 * destination's window now -> lumen_retcp_phase() -> on a change of phase,
 * lumen_retcp_on_phase() multiplies (circuit) or divides (packet network)
 * snd_cwnd and snd_ssthresh by the jump. Then Reno, the kernel's, through
 * its kfuncs (cong_avoid, ssthresh, undo_cwnd): reTCP keeps its base
 * algorithm's response to loss. In recovery the jump moves ssthresh, which
 * PRR then steers the window to.
 *
 * What the circuit is when lumend cannot say (quiet, or its last boundary
 * older than cfg->stale_ns: a lumend killed without its last word) or the
 * destination is no node: the packet network's. A flow never jumps up on a
 * circuit nobody vouches for; one in its circuit phase jumps back down on
 * its next ACK.
 *
 * ACKs drive it: the change of phase takes effect on the first ACK after
 * it. On the network reTCP was built for, a packet network is always there
 * and ACKs keep coming while a circuit is down; with prebuffering the jump
 * comes ahead of the circuit anyway. (lumen-dp's reTCP also has a timer.)
 *
 * Maps: retcp_cfg (struct lumen_retcp_cfg), retcp_hosts, retcp_osched and
 * retcp_windows (lumend's), retcp_sk (struct lumen_retcp_sk, per socket),
 * retcp_stats (per-CPU counters, LUMEN_RETCP_COUNTERS). All pinned by the
 * loader under LUMEN_PIN_ROOT/retcp/ (userspace/bpfctl/retcp.cpp).
 */
#include "lumen_bpf.h"
#include "lumen/optical_wire.h" /* lumen_osched_stale */

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define RETCP_INFINITE_SSTHRESH 0x7fffffff
#define RETCP_AF_INET 2 /* a macro, so not in vmlinux.h */

extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern __u32 tcp_reno_ssthresh(struct sock *sk) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lumen_retcp_cfg);
} retcp_cfg SEC(".maps");

/* IPv4 address (network order) -> node */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u32);
} retcp_hosts SEC(".maps");

/* lumend's (the loader reuses its pinned maps): its word, its windows */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lumen_osched_state);
} retcp_osched SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* lumend's node count, from its map */
	__type(key, __u32);
	__type(value, struct lumen_osched_window);
} retcp_windows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct lumen_retcp_sk);
} retcp_sk SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LUMEN_RETCP_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} retcp_stats SEC(".maps");

static __always_inline struct tcp_sock *retcp_tcp_sk(struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

/* The destination's node, or LUMEN_RETCP_NO_NODE (IPv6, or no node). */
static __always_inline __u32 retcp_node_of(struct sock *sk, const struct lumen_retcp_cfg *cfg)
{
	__u32 daddr = sk->__sk_common.skc_daddr;
	__u32 *node;

	if (sk->__sk_common.skc_family != RETCP_AF_INET)
		return LUMEN_RETCP_NO_NODE;
	node = bpf_map_lookup_elem(&retcp_hosts, &daddr);
	if (!node || *node >= cfg->nodes || *node == cfg->self)
		return LUMEN_RETCP_NO_NODE;
	return *node;
}

static __always_inline void retcp_init(struct sock *sk)
{
	struct lumen_retcp_sk *rs;
	struct lumen_retcp_cfg *cfg;
	__u32 zero = 0;

	LUMEN_COUNT(retcp_stats, LUMEN_RETCP_CNT_FLOWS);
	cfg = bpf_map_lookup_elem(&retcp_cfg, &zero);
	rs = bpf_sk_storage_get(&retcp_sk, sk, NULL, BPF_SK_STORAGE_GET_F_CREATE);
	if (!rs || !cfg)
		return; /* no memory: Reno alone, counted per ACK */
	lumen_retcp_init(&rs->r);
	rs->until_ns = 0;
	rs->node = retcp_node_of(sk, cfg);
	if (rs->node == LUMEN_RETCP_NO_NODE)
		LUMEN_COUNT(retcp_stats, LUMEN_RETCP_CNT_OFF_SCHEDULE);
}

static __always_inline void retcp_release(struct sock *sk)
{
	bpf_sk_storage_delete(&retcp_sk, sk);
}

/*
 * The phase the destination's circuit puts the window in now: the
 * circuit's only while lumend vouches for its window.
 */
static __always_inline __u32 retcp_phase_now(const struct lumen_retcp_cfg *cfg, struct lumen_retcp_sk *rs)
{
	struct lumen_osched_window *w;
	struct lumen_osched_state *st;
	__u32 zero = 0, node = rs->node;
	__u64 now;

	st = bpf_map_lookup_elem(&retcp_osched, &zero);
	if (!st || st->quiet) {
		LUMEN_COUNT(retcp_stats, LUMEN_RETCP_CNT_QUIET);
		rs->until_ns = 0;
		return LUMEN_RETCP_PACKET;
	}
	now = bpf_ktime_get_tai_ns();
	if (lumen_osched_stale(now, st->boundary_ns, cfg->stale_ns)) {
		LUMEN_COUNT(retcp_stats, LUMEN_RETCP_CNT_STALE);
		rs->until_ns = 0;
		return LUMEN_RETCP_PACKET;
	}
	w = bpf_map_lookup_elem(&retcp_windows, &node);
	if (!w) {
		rs->until_ns = 0;
		return LUMEN_RETCP_PACKET;
	}
	return lumen_retcp_phase(w->open_ns, w->close_ns, cfg->params.prebuffer_ns, now, &rs->until_ns);
}

/* Every ACK that acknowledges data: jump on a change of phase. */
static __always_inline void retcp_pkts_acked(struct sock *sk)
{
	struct tcp_sock *tp = retcp_tcp_sk(sk);
	struct lumen_retcp_sk *rs;
	struct lumen_retcp_cfg *cfg;
	__u32 zero = 0, phase, ssthresh;

	rs = bpf_sk_storage_get(&retcp_sk, sk, NULL, 0);
	cfg = bpf_map_lookup_elem(&retcp_cfg, &zero);
	if (!rs || !cfg) {
		LUMEN_COUNT(retcp_stats, LUMEN_RETCP_CNT_NO_STATE);
		return;
	}
	LUMEN_COUNT(retcp_stats, LUMEN_RETCP_CNT_ACKS);
	if (rs->node == LUMEN_RETCP_NO_NODE)
		return;
	phase = retcp_phase_now(cfg, rs);
	if (phase == rs->r.phase)
		return;
	ssthresh = tp->snd_ssthresh;
	tp->snd_cwnd = lumen_retcp_on_phase(&rs->r, &cfg->params, phase, tp->snd_cwnd, &ssthresh, 2, tp->snd_cwnd_clamp,
					    RETCP_INFINITE_SSTHRESH);
	tp->snd_ssthresh = ssthresh;
	LUMEN_COUNT(retcp_stats, phase == LUMEN_RETCP_CIRCUIT ? LUMEN_RETCP_CNT_JUMPS_UP : LUMEN_RETCP_CNT_JUMPS_DOWN);
}

SEC("struct_ops/retcp_init")
void BPF_PROG(retcp_init_prog, struct sock *sk)
{
	retcp_init(sk);
}

SEC("struct_ops/retcp_release")
void BPF_PROG(retcp_release_prog, struct sock *sk)
{
	retcp_release(sk);
}

SEC("struct_ops/retcp_pkts_acked")
void BPF_PROG(retcp_pkts_acked_prog, struct sock *sk, const struct ack_sample *sample)
{
	retcp_pkts_acked(sk);
}

SEC("struct_ops/retcp_cong_avoid")
void BPF_PROG(retcp_cong_avoid_prog, struct sock *sk, __u32 ack, __u32 acked)
{
	tcp_reno_cong_avoid(sk, ack, acked);
}

SEC("struct_ops/retcp_ssthresh")
__u32 BPF_PROG(retcp_ssthresh_prog, struct sock *sk)
{
	return tcp_reno_ssthresh(sk);
}

SEC("struct_ops/retcp_undo_cwnd")
__u32 BPF_PROG(retcp_undo_cwnd_prog, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

/* struct_ops map name (<= 15 characters): retcp_ops */
SEC(".struct_ops")
struct tcp_congestion_ops retcp_ops = {
	.init = (void *)retcp_init_prog,
	.release = (void *)retcp_release_prog,
	.pkts_acked = (void *)retcp_pkts_acked_prog,
	.cong_avoid = (void *)retcp_cong_avoid_prog,
	.ssthresh = (void *)retcp_ssthresh_prog,
	.undo_cwnd = (void *)retcp_undo_cwnd_prog,
	.name = LUMEN_CC_NAME_RETCP,
};
