/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * bpf/int_sockops.bpf.c - INT plumbing for lumen: one cgroup sockops program
 * that puts the INT option (include/lumen/int_option.h) on a flow's segments
 * and hands the telemetry that comes back to the congestion control.
 *
 * Who carries what
 * ----------------
 *   sender data segment   request: LUMEN_INT_OPT_LEN(slots) bytes, all hop
 *                         slots empty; every INT switch on the path fills
 *                         the next slot when the segment leaves its queue.
 *   receiver pure ACK     echo of the latest request received: its filled
 *                         hops and overflow flag (5 + 7 * count bytes in
 *                         version 1, 6 + 9 * count in version 2). In
 *                         version 2, when SACK blocks leave no room for
 *                         all of them, the bottleneck hop alone
 *                         (lumen_int_write_echo_fit: 15 bytes, which fit
 *                         next to timestamps and one SACK block).
 *                         The version is the request's, which the sender's
 *                         configuration chose (lumen int enable --wide).
 *   sender pure ACK       nothing unless it has itself received requests (a
 *                         bidirectional flow): then it echoes them too.
 *
 * "Data segment" means a segment with payload. Every established segment
 * has ACK set, so a data segment that also acknowledges data from the other
 * side carries the request only: both options together (26 + 26 bytes at
 * three slots) never fit in the 40 bytes of TCP option space, and the
 * request is what the data direction needs. Echoes therefore ride on pure
 * ACKs; in a bidirectional flow they become rarer, and the congestion
 * control falls back to its RTT rule in between (that is its business).
 *
 * Why every ACK echoes the latest request: ACKs get lost, coalesced (delayed
 * ACKs acknowledge two segments) and reordered, and PowerTCP only needs the
 * freshest path state per ACK. Echoing the latest request on every ACK keeps
 * the receiver stateless beyond one option (no "already echoed" bookkeeping),
 * and repeats are harmless: the sender computes deltas between records of
 * the same hop, and a repeated record gives dt = 0, which lumen_int_hop_delta
 * refuses. Each echo still bumps echo_gen, so the consumer sees every ACK.
 *
 * Option space
 * ------------
 * TCP has 40 option bytes. Linux writes NOP,NOP,TS (12 bytes) on every
 * segment when timestamps are on, and SACK blocks (4 + 8 per block, up to
 * 36 bytes with timestamps) on ACKs during loss recovery; the kernel takes
 * its space first. Options written from BPF are padded to 4 bytes, so with
 * timestamps 28 bytes remain: a request with up to 3 slots (26 bytes), or
 * with 4-5 slots only when timestamps are off. When the room is not there
 * (SACK blocks, too many slots) the option is skipped for that segment and
 * LUMEN_INT_CNT_NO_ROOM counts it; the segment itself is never affected.
 *
 * Room is reserved through the kernel's callbacks only:
 *   BPF_SOCK_OPS_HDR_OPT_LEN_CB   bpf_reserve_hdr_opt(). The kernel also calls
 *                                 it without a packet (args[0] ==
 *                                 BPF_WRITE_HDR_TCP_CURRENT_MSS) to size the
 *                                 MSS; we reserve a request there, so data
 *                                 segments carrying one stay within the MTU.
 *   BPF_SOCK_OPS_WRITE_HDR_OPT_CB bpf_store_hdr_opt() into that room; whatever
 *                                 is not written is padded with NOPs by the
 *                                 kernel.
 *   BPF_SOCK_OPS_PARSE_HDR_OPT_CB kind 253 is unknown to the kernel, so
 *                                 BPF_SOCK_OPS_PARSE_UNKNOWN_HDR_OPT_CB_FLAG
 *                                 calls us for segments carrying it (and only
 *                                 those: PARSE_ALL would cost a call for
 *                                 every segment). The shared option
 *                                 walker (include/lumen/tcp_option.h, TCP's
 *                                 own rules) finds it by kind 253 + ExID
 *                                 0x4C55.
 * The kernel runs the parse callback from tcp_validate_incoming(), before
 * tcp_ack() and the congestion control see the same ACK, so an echo stored
 * here is visible to the PowerTCP struct_ops for that very ACK.
 *
 * State
 * -----
 *   lumen_int_sk    sk_storage (struct lumen_int_sk), created when a flow
 *                   passes the filters at ESTABLISHED. rx_req/rx_req_gen on
 *                   the receiver, echo/echo_gen on the sender. Shared with
 *                   the PowerTCP struct_ops object (pinned by name).
 *   lumen_int_cfg   struct lumen_int_config, written by `lumen int enable`.
 *   lumen_int_stats per-CPU counters, enum lumen_int_counter.
 * All three are pinned by name under LUMEN_PIN_ROOT.
 *
 * Counting: the write callbacks run once per transmitted skb. TCP hands the
 * stack GSO bursts of up to 64 KB that are split into MSS-sized segments
 * after the option is written, each segment carrying a copy, so
 * LUMEN_INT_CNT_REQ_WRITTEN is smaller than LUMEN_INT_CNT_REQ_PARSED on the
 * other end. The receive side may merge back-to-back ACKs with identical
 * options (tcp_add_backlog), so ECHO_PARSED can be below ECHO_WRITTEN.
 *
 * Nothing from the packet is trusted: the option is copied to the stack by
 * the kernel and validated by lumen_int_parse(); a refused option counts as
 * LUMEN_INT_CNT_MALFORMED and changes no state.
 *
 * Only connections established after the program is attached get INT (the
 * callbacks are enabled per socket at ESTABLISHED).
 */
#include "lumen_bpf.h"

#include "lumen/int_option.h"
#include "lumen/tcp_option.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define LUMEN_AF_INET 2
#define LUMEN_AF_INET6 10

/* TCP header flag bits (include/net/tcp.h; not in vmlinux.h). */
#define LUMEN_TCPHDR_SYN 0x02
#define LUMEN_TCPHDR_RST 0x04

LUMEN_DEFINE_INT_SK_MAP();

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lumen_int_config);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} lumen_int_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LUMEN_INT_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} lumen_int_stats SEC(".maps");

static __always_inline const struct lumen_int_config *int_config(void)
{
	__u32 zero = 0;
	const struct lumen_int_config *cfg = bpf_map_lookup_elem(&lumen_int_cfg, &zero);

	if (!cfg || !cfg->enabled)
		return 0;
	return cfg;
}

/* The option version of requests (0 in a configuration from before it existed: 1). */
static __always_inline __u32 int_version(const struct lumen_int_config *cfg)
{
	return cfg->version == LUMEN_INT_VERSION_WIDE ? LUMEN_INT_VERSION_WIDE : LUMEN_INT_VERSION;
}

/* Slots per request, clamped to what the version allows. */
static __always_inline __u32 int_slots(const struct lumen_int_config *cfg)
{
	__u32 slots = cfg->slots, max = lumen_int_max_slots(int_version(cfg));

	if (slots < 1)
		return 1;
	if (slots > max)
		return max;
	return slots;
}

/*
 * lumen_int_write_request_v() with a compile-time slot count: with a
 * variable one, clang turns its zero-fill loop into a memset() call, which
 * BPF lacks.
 */
static __always_inline int write_request(__u8 *buf, __u32 ver, __u32 slots)
{
	switch (slots) {
	case 1:
		return lumen_int_write_request_v(buf, LUMEN_INT_MAX_LEN, ver, 1);
	case 2:
		return lumen_int_write_request_v(buf, LUMEN_INT_MAX_LEN, ver, 2);
	case 3:
		return lumen_int_write_request_v(buf, LUMEN_INT_MAX_LEN, ver, 3);
	case 4:
		return lumen_int_write_request_v(buf, LUMEN_INT_MAX_LEN, ver, 4);
	case 5:
		return lumen_int_write_request_v(buf, LUMEN_INT_MAX_LEN, ver, 5);
	default:
		return -LUMEN_INT_EINVAL;
	}
}

/* The INT state of an established flow that passed the filters, or NULL. */
static __always_inline struct lumen_int_sk *int_flow(struct bpf_sock_ops *skops)
{
	struct bpf_sock *sk = skops->sk;
	struct lumen_int_sk *st;

	if (!sk)
		return 0;
	st = bpf_sk_storage_get(&lumen_int_sk, sk, 0, 0);
	if (!st || !(st->flags & LUMEN_INT_SK_ENABLED))
		return 0;
	return st;
}

/* An AF_INET6 socket talking to an IPv4 peer (::ffff:a.b.c.d) is IPv4. */
static __always_inline int is_v4mapped(const struct bpf_sock_ops *skops)
{
	return skops->remote_ip6[0] == 0 && skops->remote_ip6[1] == 0 && skops->remote_ip6[2] == bpf_htonl(0x0000ffff);
}

static __always_inline int flow_selected(const struct lumen_int_config *cfg, struct bpf_sock_ops *skops)
{
	__u32 family = skops->family, bit, nports, lport, rport, i;

	if (family == LUMEN_AF_INET)
		bit = LUMEN_INT_FAMILY_IPV4;
	else if (family == LUMEN_AF_INET6)
		bit = is_v4mapped(skops) ? LUMEN_INT_FAMILY_IPV4 : LUMEN_INT_FAMILY_IPV6;
	else
		return 0;
	if (cfg->families && !(cfg->families & bit))
		return 0;

	nports = cfg->nports;
	if (nports == 0)
		return 1;
	lport = skops->local_port; /* host byte order */
	rport = bpf_ntohl(skops->remote_port); /* network order, upper half */
	for (i = 0; i < LUMEN_INT_MAX_PORTS; i++) {
		__u32 p;

		if (i >= nports)
			break;
		p = cfg->ports[i];
		if (p != 0 && (p == lport || p == rport))
			return 1;
	}
	return 0;
}

/*
 * PARSE_HDR_OPT_CB (and the segment that completes the handshake): store a
 * request or an echo of ours, if the segment carries one. The kernel lays
 * the TCP header out at skb_data .. skb_data_end in these callbacks; its
 * option block is copied byte by byte (each checked against
 * skb_data_end) and searched with the walker of the module and the switch
 * (include/lumen/tcp_option.h, which follows tcp_parse_options()), so
 * that all three agree on what a segment carries.
 */
static __always_inline void int_parse(struct bpf_sock_ops *skops, struct lumen_int_sk *st)
{
	__u8 *th = (__u8 *)(long)skops->skb_data, *end = (__u8 *)(long)skops->skb_data_end;
	__u8 buf[LUMEN_INT_BPF_BUF];
	struct lumen_tcp_opts o;
	struct lumen_int_opt opt;
	__u64 optlen, n, k, at, olen;
	__u32 ack_seq;
	int ret;

	if (th + 20 > end)
		return;
	/* read here: a packet pointer kept live across the parser would
	 * multiply the verifier's states past its limit */
	ack_seq = (__u32)th[8] << 24 | (__u32)th[9] << 16 | (__u32)th[10] << 8 | th[11];
	optlen = (__u64)(th[12] >> 4) * 4;
	if (optlen <= 20)
		return;
	optlen -= 20;
	__builtin_memset(&o, 0, sizeof(o));
	for (n = 0; n < LUMEN_TCP_OPT_SPACE; n++) {
		__u8 *p = th + 20 + n;

		if (n >= optlen || p + 1 > end)
			break;
		o.b[n] = *p;
	}
	ret = lumen_tcp_opt_find(&o, (__u32)n, LUMEN_INT_KIND, LUMEN_INT_EXID);
	/* opaque: clang would drop the test below as implied by the walker */
	barrier_var(ret);
	if (ret < 0 || ret > LUMEN_TCP_OPT_SPACE - 4)
		return; /* not ours: another option the kernel does not know */
	at = (__u64)ret;
	olen = o.b[at + 1]; /* the walker found it whole: 4 <= olen <= n - at */
	__builtin_memset(buf, 0, sizeof(buf));
	for (k = 0; k < LUMEN_INT_MAX_LEN; k++) {
		if (k >= olen || at + k >= LUMEN_TCP_OPT_SPACE)
			break;
		buf[k] = o.b[at + k];
	}
	if (lumen_int_parse(buf, (__u32)olen, &opt) != 0) {
		LUMEN_COUNT(lumen_int_stats, LUMEN_INT_CNT_MALFORMED);
		return;
	}
	if (opt.flags & LUMEN_INT_FLAG_ECHO) {
		st->echo = opt;
		/* its segment, which the consumer matches to the ACK (powertcp.bpf.c) */
		st->echo_ack = ack_seq;
		st->echo_gen++;
		LUMEN_COUNT(lumen_int_stats, LUMEN_INT_CNT_ECHO_PARSED);
	} else {
		st->rx_req = opt;
		st->rx_req_gen++;
		LUMEN_COUNT(lumen_int_stats, LUMEN_INT_CNT_REQ_PARSED);
	}
}

static __always_inline void on_established(struct bpf_sock_ops *skops)
{
	const struct lumen_int_config *cfg = int_config();
	struct bpf_sock *sk = skops->sk;
	struct lumen_int_sk *st;
	long err;

	if (!cfg || !sk)
		return;
	if (!flow_selected(cfg, skops)) {
		LUMEN_COUNT(lumen_int_stats, LUMEN_INT_CNT_FILTERED);
		return;
	}
	st = bpf_sk_storage_get(&lumen_int_sk, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!st) {
		LUMEN_COUNT(lumen_int_stats, LUMEN_INT_CNT_NO_STORAGE);
		return;
	}
	err = bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags | BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG |
						       BPF_SOCK_OPS_PARSE_UNKNOWN_HDR_OPT_CB_FLAG);
	if (err) {
		st->flags &= ~LUMEN_INT_SK_ENABLED;
		return;
	}
	st->flags |= LUMEN_INT_SK_ENABLED;
	LUMEN_COUNT(lumen_int_stats, LUMEN_INT_CNT_FLOWS);
	/* the segment that completed the handshake may already carry data */
	int_parse(skops, st);
}

/* HDR_OPT_LEN_CB: reserve room for a request (data) or an echo (pure ACK). */
static __always_inline void on_hdr_opt_len(struct bpf_sock_ops *skops)
{
	const struct lumen_int_config *cfg = int_config();
	struct lumen_int_sk *st;
	int mss_only, data;
	__u32 len, count;

	if (!cfg)
		return;
	mss_only = skops->args[0] == BPF_WRITE_HDR_TCP_CURRENT_MSS;
	if (!mss_only && (skops->skb_tcp_flags & (LUMEN_TCPHDR_SYN | LUMEN_TCPHDR_RST)))
		return;
	st = int_flow(skops);
	if (!st)
		return;
	/* no packet yet: size the MSS for a data segment with its request */
	data = mss_only || skops->skb_len > 0; /* header not pushed yet: payload */
	if (data) {
		len = lumen_int_opt_len(int_version(cfg), int_slots(cfg));
	} else {
		if (st->rx_req_gen == 0)
			return; /* nothing to echo yet */
		count = st->rx_req.count;
		if (count > LUMEN_INT_MAX_HOPS)
			return;
		len = lumen_int_opt_len(st->rx_req.version, count);
		st->flags &= ~LUMEN_INT_SK_ECHO_PART;
		/*
		 * version 2, when SACK blocks leave too little room: the
		 * bottleneck hop alone. The write callback, which follows for
		 * the same segment, learns which from the flag (it cannot read
		 * the room reserved).
		 */
		if (bpf_reserve_hdr_opt(skops, len, 0) == 0)
			return;
		if (st->rx_req.version != LUMEN_INT_VERSION_WIDE || count < 2) {
			LUMEN_COUNT(lumen_int_stats, LUMEN_INT_CNT_NO_ROOM);
			return;
		}
		st->flags |= LUMEN_INT_SK_ECHO_PART;
		len = LUMEN_INT_V2_OPT_LEN(1);
	}
	if (bpf_reserve_hdr_opt(skops, len, 0) != 0 && !mss_only)
		LUMEN_COUNT(lumen_int_stats, LUMEN_INT_CNT_NO_ROOM);
}

/* WRITE_HDR_OPT_CB: write the option whose room on_hdr_opt_len reserved. */
static __always_inline void on_write_hdr_opt(struct bpf_sock_ops *skops)
{
	const struct lumen_int_config *cfg = int_config();
	__u8 buf[LUMEN_INT_BPF_BUF] = {};
	struct lumen_int_sk *st;
	__u8 *th, *end;
	__u32 hdr_len, room;
	int len, data;

	if (!cfg)
		return;
	if (skops->skb_tcp_flags & (LUMEN_TCPHDR_SYN | LUMEN_TCPHDR_RST))
		return;
	st = int_flow(skops);
	if (!st)
		return;
	/* skb_len here includes the TCP header: compare with doff */
	th = (__u8 *)(long)skops->skb_data;
	end = (__u8 *)(long)skops->skb_data_end;
	if (th + 20 > end)
		return;
	hdr_len = (__u32)(th[12] >> 4) * 4;
	data = skops->skb_len > hdr_len;
	if (data) {
		len = write_request(buf, int_version(cfg), int_slots(cfg));
	} else {
		if (st->rx_req_gen == 0)
			return;
		/* what on_hdr_opt_len reserved: the whole echo, or (version 2) one hop */
		room = st->flags & LUMEN_INT_SK_ECHO_PART ? LUMEN_INT_V2_OPT_LEN(1) : LUMEN_INT_MAX_LEN;
		len = lumen_int_write_echo_fit(buf, room, &st->rx_req);
	}
	if (len <= 0)
		return;
	if (bpf_store_hdr_opt(skops, buf, LUMEN_INT_MAX_LEN, 0) != 0) {
		/* the room reserved for this segment was not enough */
		LUMEN_COUNT(lumen_int_stats, LUMEN_INT_CNT_NO_ROOM);
		return;
	}
	LUMEN_COUNT(lumen_int_stats, data ? LUMEN_INT_CNT_REQ_WRITTEN : LUMEN_INT_CNT_ECHO_WRITTEN);
	if (!data && (buf[4] & LUMEN_INT_COUNT_MASK) < st->rx_req.count)
		LUMEN_COUNT(lumen_int_stats, LUMEN_INT_CNT_ECHO_PARTIAL);
}

static __always_inline void on_parse_hdr_opt(struct bpf_sock_ops *skops)
{
	struct lumen_int_sk *st;

	if (!int_config())
		return;
	st = int_flow(skops);
	if (st)
		int_parse(skops, st);
}

SEC("sockops")
int lumen_int_sockops(struct bpf_sock_ops *skops)
{
	switch (skops->op) {
	case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
		on_established(skops);
		break;
	case BPF_SOCK_OPS_HDR_OPT_LEN_CB:
		on_hdr_opt_len(skops);
		break;
	case BPF_SOCK_OPS_WRITE_HDR_OPT_CB:
		on_write_hdr_opt(skops);
		break;
	case BPF_SOCK_OPS_PARSE_HDR_OPT_CB:
		on_parse_hdr_opt(skops);
		break;
	default:
		break;
	}
	return 1;
}
