// SPDX-License-Identifier: GPL-2.0-only
/*
 * cc_flows.bpf.c - the flows of the struct_ops algorithms (powertcp.bpf.c,
 * timely.bpf.c), for `lumen cc status`: an iterator over the sk_storage map
 * "lumen_cc_sk" that writes one struct lumen_cc_flow (bpf_shared.h) per
 * socket with state: its ends and namespace, algorithm, window, tau, rate
 * and its own counts of why INT was not used; and one over
 * "lumen_timely_sk" that writes one struct lumen_timely_flow per TIMELY
 * socket: rate, window, RTTs and its counts of each kind of event.
 *
 * The loader (userspace/bpfctl/cc_flows.cpp) gives both maps the pinned
 * maps' fds before loading, so this object never creates or pins a map; it
 * reads the state while the socket may be acknowledging data (a diagnostic,
 * not a snapshot).
 */
#include "lumen_bpf.h"

#include "lumen/bpf_shared.h"

char LICENSE[] SEC("license") = "GPL";

#define LUMEN_AF_INET 2
#define LUMEN_AF_INET6 10

/* Same definition as powertcp.bpf.c's; the loader reuses that map. */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct lumen_cc_sk);
} lumen_cc_sk SEC(".maps");

/* Same definition as timely.bpf.c's. */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct lumen_timely_sk);
} lumen_timely_sk SEC(".maps");

/* The ends and namespace of a socket, into a flow record's first fields. */
#define FLOW_ENDS(f, sk)                                                                                               \
	do {                                                                                                           \
		(f).family = (sk)->__sk_common.skc_family;                                                             \
		(f).sport = (sk)->__sk_common.skc_num;                                                                 \
		(f).dport = bpf_ntohs((sk)->__sk_common.skc_dport);                                                    \
		(f).netns_ino = BPF_CORE_READ((sk), __sk_common.skc_net.net, ns.inum);                                 \
		if ((f).family == LUMEN_AF_INET6) {                                                                    \
			BPF_CORE_READ_INTO(&(f).saddr, (sk), __sk_common.skc_v6_rcv_saddr.in6_u.u6_addr8);             \
			BPF_CORE_READ_INTO(&(f).daddr, (sk), __sk_common.skc_v6_daddr.in6_u.u6_addr8);                 \
		} else {                                                                                               \
			__builtin_memcpy((f).saddr, &(sk)->__sk_common.skc_rcv_saddr, 4);                              \
			__builtin_memcpy((f).daddr, &(sk)->__sk_common.skc_daddr, 4);                                  \
		}                                                                                                      \
	} while (0)

SEC("iter/bpf_sk_storage_map")
int lumen_cc_flows(struct bpf_iter__bpf_sk_storage_map *ctx)
{
	const struct lumen_cc_sk *cs = ctx->value;
	struct sock *sk = ctx->sk;
	struct lumen_cc_flow f = {};

	if (!sk || !cs)
		return 0;
	FLOW_ENDS(f, sk);
	f.mode = cs->ptcp.mode;
	f.cwnd_bytes = cs->ptcp.cwnd_bytes;
	f.tau_ns = cs->params.base_rtt_ns ? cs->params.base_rtt_ns : cs->ptcp.tau_ns;
	f.pacing_rate = cs->ptcp.pacing_rate;
	f.stats = cs->ptcp.stats;
	bpf_seq_write(ctx->meta->seq, &f, sizeof(f));
	return 0;
}

SEC("iter/bpf_sk_storage_map")
int lumen_timely_flows(struct bpf_iter__bpf_sk_storage_map *ctx)
{
	const struct lumen_timely_sk *ts = ctx->value;
	struct sock *sk = ctx->sk;
	struct lumen_timely_flow f = {};

	if (!sk || !ts)
		return 0;
	FLOW_ENDS(f, sk);
	f.in_loss = ts->st.in_loss;
	f.rate = ts->st.rate;
	f.cwnd_bytes = ts->cwnd_bytes;
	f.last_rtt_ns = ts->st.last_rtt_ns;
	f.min_rtt_ns = ts->st.min_rtt_ns;
	f.rtt_diff_ns = ts->st.rtt_diff_ns;
	f.stats = ts->st.stats;
	bpf_seq_write(ctx->meta->seq, &f, sizeof(f));
	return 0;
}
