// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * bpf/int_switch.bpf.c - a software INT switch egress port made of a veth
 * pair, a tbf qdisc and two tc programs.
 *
 * Model
 * -----
 *
 *      namespace A                          |  namespace B
 *                                           |
 *   stack -> [clsact egress: ENQUEUE] -> tbf ==veth==> [clsact ingress: DEQUEUE] -> stack
 *              DEV                   (root qdisc)  |   PEER
 *
 * DEV's root qdisc is a tbf at the port rate: that is the bottleneck and its
 * backlog is the switch queue. lumen_sw_egress runs on DEV's clsact egress
 * hook, i.e. in __dev_queue_xmit before the packet reaches the root qdisc, so
 * it sees every packet about to be enqueued; lumen_sw_ingress runs on the
 * clsact ingress hook of PEER, the other end of the veth, so it sees every
 * packet after tbf released it. The queue length is therefore exactly
 *
 *     qlen = enq_bytes - deq_bytes
 *
 * (struct lumen_switch_port_stats), with no sampling of qdisc statistics. The
 * packets sitting in PEER's per-CPU receive backlog (between veth_xmit and
 * the ingress hook) count as queue too: on a real switch they would still be
 * in the egress buffer. At low load that is a packet or so.
 *
 * Enqueue (egress of DEV), per packet of wire length len:
 *   - tail drop when the queue is not empty and qlen + len > buffer_bytes
 *     (TC_ACT_SHOT, drops and drop_bytes counted, nothing enqueued). An
 *     empty queue admits any packet: a GSO packet (below) larger than the
 *     buffer would otherwise never pass, however idle the port;
 *   - DCTCP-style ECN: an ECT(0)/ECT(1) IPv4 or IPv6 packet arriving while
 *     qlen > ecn_threshold_bytes (K) is marked CE (IPv4 header checksum fixed
 *     incrementally), counted in ecn_marks;
 *   - enq_bytes += len.
 * Dequeue (ingress of PEER):
 *   - deq_bytes += len; the queue left behind the packet is sampled into
 *     qlen_max, qlen_samples and the log2 histogram qlen_hist;
 *   - when int_enabled, an IPv4 or IPv6 TCP segment carrying a lumen INT
 *     option (include/lumen/int_option.h) in request form gets one hop record
 *     (dequeue time and dequeued bytes, taken together from the port's INT
 *     clock, struct lumen_sw_clock; qlen; the port's rate code) in its next
 *     free slot, or the overflow flag when every slot is filled (int_full);
 *     the TCP checksum is fixed incrementally. The option is found by TCP's own
 *     walk (include/lumen/tcp_option.h, the module's walker too): one that
 *     TCP would not reach whole is not INT here either. Options
 *     lumen_int_parse refuses are counted in int_malformed and forwarded
 *     unchanged; echo options (ACKs) are never touched. A lumen-dp DATA
 *     packet (include/lumen/dp_wire.h: IPv4, UDP to LUMEN_DP_UDP_PORT,
 *     version 1, INT flag) carries the same option bytes as its extension
 *     and gets its hop record the same way; the UDP checksum is fixed only
 *     when the sender set one (lumen-dp sends 0).
 *
 * Byte counts are wire lengths at L2 (Ethernet header included, as tbf counts
 * them): skb->len at both hooks (cls_bpf pushes the MAC header back before
 * running an ingress program), plus the headers of the extra segments of a
 * GSO/GRO packet (the way qdisc_pkt_len_init does), so a TSO packet that tbf
 * segments, or segments that GRO merges, are counted identically on both
 * sides.
 *
 * TCP hands GSO packets to the device even when DEV has GSO and TSO off
 * (they are segmented after the qdisc), so a packet here may be up to 64 KiB
 * of segments that are admitted, dropped or CE-marked together. Where that
 * is too coarse, `ip link set DEV gso_max_segs 1` makes TCP send one segment
 * per packet (at a CPU cost that shows at Gbit/s rates).
 *
 * Buffer and tbf limit: admission here keeps qlen <= buffer_bytes, or one
 * packet (at most 64 KiB of GSO segments) above it when that packet found the
 * queue empty; tbf's backlog is a part of qlen, so a tbf whose limit is at
 * least buffer_bytes plus one such packet with its headers never drops; the
 * loader (lumen switch attach) sets buffer_bytes + 96 KiB: every drop is a
 * counted tail drop of this program.
 *
 * What makes the count drift: a packet accounted at enqueue that never
 * reaches PEER's ingress hook (tbf limit set too low by hand, DEV or PEER
 * set down with packets queued, its receive backlog over
 * net.core.netdev_max_backlog, another tc egress filter after ours dropping
 * it) stays in qlen forever: above the ECN threshold it marks every packet,
 * above the buffer it drops every one. The loader heals it on request, when
 * the port is idle (heal_switch_port: `lumen switch heal`, the experiment
 * runner after a link failure): it asks the programs to count the drift as
 * dequeued (cfg heal_gen, heal_bytes; lumen_sw_heal). The opposite, a dequeue
 * without an enqueue, can only happen for packets already in flight when
 * the port was attached (the loader attaches the dequeue side first, then
 * the enqueue side, then replaces the root qdisc, which flushes the old
 * one), and the dequeue side heals it by accounting the missed enqueue late.
 * Attach zeroes the port's counters.
 *
 * Ports and multi-hop INT
 * -----------------------
 * A port is one loaded instance of this object, with its port id in .rodata
 * (lumen_port_id, set by the loader before load): DEV and PEER may live in
 * different network namespaces, so ifindex is no usable key. Both programs of
 * an instance index the pinned arrays lumen_sw_cfg and lumen_sw_stats
 * (LIBBPF_PIN_BY_NAME under LUMEN_PIN_ROOT, shared by every port and by the
 * loader) with it. Several ports on a path (h1 -> sw -> h2 with both links
 * switched) form a multi-hop INT path: each dequeue fills the next free slot,
 * in path order, as lumen_int_push_hop defines.
 *
 * Scope: Ethernet (veth) framing without VLAN tags. ECN marking: any IPv4 or
 * IPv6 packet. INT: TCP directly after an IPv4 header (not in a later
 * fragment) or after the fixed IPv6 header (extension headers are not
 * walked); lumen-dp over IPv4. Everything else is queued, dropped and counted like any packet,
 * and otherwise left alone.
 *
 * Counters are updated with atomic adds; qlen_max is a plain max (a rare lost
 * update between CPUs can only under-report it by one sample), and the
 * queue is read as deq then enq, so a concurrent enqueue can only make a
 * sample larger, never negative.
 */
#include "lumen_bpf.h"
#include "lumen/tcp_option.h"
#include "lumen/dp_wire.h"

#define LUMEN_SW_ETH_HLEN 14
#define LUMEN_SW_ETH_P_IP 0x0800
#define LUMEN_SW_ETH_P_IPV6 0x86DD
#define LUMEN_SW_IPPROTO_TCP 6
#define LUMEN_SW_IPPROTO_UDP 17
#define LUMEN_SW_TCP_CSUM_OFF 16
#define LUMEN_SW_UDP_CSUM_OFF 6
#define LUMEN_SW_IP_CSUM_OFF 10
/* Working copy of an option: large enough for every offset the INT helpers
 * can compute from a 3-bit hop count (5 + 7 * 7 + 7 bytes), whatever the
 * verifier knows about the slot count. */
#define LUMEN_SW_OPT_BUF 64

const volatile __u32 lumen_port_id = 0;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LUMEN_SWITCH_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct lumen_switch_port_cfg);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} lumen_sw_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LUMEN_SWITCH_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct lumen_switch_port_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} lumen_sw_stats SEC(".maps");

/*
 * The port's INT clock: the time and byte count a hop record carries, taken
 * together under one lock. Packets of one port reach the dequeue hook on
 * both CPUs at once; with a time and a count read separately, a record
 * could carry a later time but fewer bytes than another one, and the
 * receiver would see a negative interval or an impossible rate between two
 * records of the same hop and refuse the sample. Under the lock the time
 * never goes back and the count grows with it.
 *
 * The clock is also the wire's: a packet's time is no earlier than the
 * previous record's plus its own serialisation at the port rate, as on a
 * real port, whose egress timestamps are at least a packet's transmission
 * apart. The dequeue hook sees packets later and more bunched than the link
 * sent them: tbf releases up to its bucket at once after an idle moment, and
 * PEER's receive backlog is drained in batches by softirq. Stamped with the
 * hook's own time, such a batch claims several times the port rate between
 * two records; receivers refuse those samples as impossible
 * (LUMEN_INT_DELTA_ECOUNTER), which on a busy 1 Gbit/s port was 40 % of
 * HPCC's echoes, the rounds without one falling back to the RTT. The lead
 * over the host clock that this spreading builds is bounded by tbf's bucket
 * and one batch; it is capped at LUMEN_SW_CLOCK_LEAD_NS so that a port
 * really sending faster than its configured rate shows as such instead of
 * running the clock away. Not pinned: one per loaded instance, i.e. per
 * port, living as long as its programs.
 */
#define LUMEN_SW_CLOCK_LEAD_NS 1000000ull
struct lumen_sw_clock {
	struct bpf_spin_lock lock;
	__u32 pad;
	__u64 deq_bytes; /* bytes dequeued, in the order of ts */
	__u64 ts; /* the last record's time */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lumen_sw_clock);
} lumen_sw_clock SEC(".maps");

/* Where the headers of a packet are; offsets from the Ethernet header. */
struct lumen_sw_pkt {
	__u32 l3_off; /* 0: neither IPv4 nor IPv6 */
	__u32 l4_off; /* 0: no transport header reachable */
	__u32 hdr_len; /* all headers, up to the L4 payload; 0: unknown */
	__u16 family; /* LUMEN_SW_ETH_P_IP / _IPV6, host order */
	__u8 l4_proto;
	__u8 tcp_hlen; /* TCP header length in bytes, options included */
};

static __always_inline void lumen_sw_parse(struct __sk_buff *skb, struct lumen_sw_pkt *p)
{
	__u16 h_proto;
	__u8 b[2];

	__builtin_memset(p, 0, sizeof(*p));
	if (bpf_skb_load_bytes(skb, 12, &h_proto, sizeof(h_proto)))
		return;
	if (h_proto == bpf_htons(LUMEN_SW_ETH_P_IP)) {
		__u8 iph[20];
		__u32 ihl;

		if (bpf_skb_load_bytes(skb, LUMEN_SW_ETH_HLEN, iph, sizeof(iph)) || (iph[0] >> 4) != 4)
			return;
		p->l3_off = LUMEN_SW_ETH_HLEN;
		p->family = LUMEN_SW_ETH_P_IP;
		ihl = (__u32)(iph[0] & 0xf) * 4;
		/* later fragments carry no transport header */
		if (ihl < 20 || (((__u32)iph[6] << 8 | iph[7]) & 0x1fff))
			return;
		p->l4_proto = iph[9];
		p->l4_off = LUMEN_SW_ETH_HLEN + ihl;
	} else if (h_proto == bpf_htons(LUMEN_SW_ETH_P_IPV6)) {
		__u8 ip6[8];

		if (bpf_skb_load_bytes(skb, LUMEN_SW_ETH_HLEN, ip6, sizeof(ip6)) || (ip6[0] >> 4) != 6)
			return;
		p->l3_off = LUMEN_SW_ETH_HLEN;
		p->family = LUMEN_SW_ETH_P_IPV6;
		p->l4_proto = ip6[6];
		p->l4_off = LUMEN_SW_ETH_HLEN + 40;
	} else {
		return;
	}

	if (p->l4_proto == LUMEN_SW_IPPROTO_TCP) {
		__u32 hlen;

		if (bpf_skb_load_bytes(skb, p->l4_off + 12, b, 1))
			return;
		hlen = (__u32)(b[0] >> 4) * 4;
		if (hlen < 20)
			return; /* not a TCP header we can trust */
		p->tcp_hlen = (__u8)hlen;
		p->hdr_len = p->l4_off + hlen;
	} else if (p->l4_proto == LUMEN_SW_IPPROTO_UDP) {
		p->hdr_len = p->l4_off + 8;
	}
}

/* Bytes the packet occupies on the wire at L2, GSO segments' headers included. */
static __always_inline __u64 lumen_sw_wire_len(struct __sk_buff *skb, const struct lumen_sw_pkt *p)
{
	__u32 segs = skb->gso_segs;
	__u64 len = skb->len;

	if (segs > 1 && p->hdr_len)
		len += (__u64)(segs - 1) * p->hdr_len;
	return len;
}

/* Queue in bytes. deq is read first: enq can then only be newer (larger). */
static __always_inline __u64 lumen_sw_qlen(struct lumen_switch_port_stats *st)
{
	__u64 deq = *(volatile __u64 *)&st->deq_bytes;
	__u64 enq = *(volatile __u64 *)&st->enq_bytes;

	return enq > deq ? enq - deq : 0;
}

/* The loader's heal request (cfg heal_gen/heal_bytes), applied once by
 * whichever packet sees it first: the compare-and-exchange on heal_gen_done
 * lets one CPU win. Too many bytes heal themselves: the dequeue side then
 * finds deq > enq and accounts the difference as a late enqueue. */
static __always_inline void lumen_sw_heal(const struct lumen_switch_port_cfg *cfg, struct lumen_switch_port_stats *st)
{
	__u64 want = cfg->heal_gen;
	__u64 done = *(volatile __u64 *)&st->heal_gen_done;

	if (want == done || __sync_val_compare_and_swap(&st->heal_gen_done, done, want) != done)
		return;
	__sync_fetch_and_add(&st->deq_bytes, cfg->heal_bytes);
	__sync_fetch_and_add(&st->healed_bytes, cfg->heal_bytes);
}

/* Log2 bucket: 0 for 0, else the bit length of v, capped at the last bucket. */
static __always_inline __u32 lumen_sw_bucket(__u64 v)
{
	__u32 b = 0;

	if (v >> 32) {
		v >>= 32;
		b += 32;
	}
	if (v >> 16) {
		v >>= 16;
		b += 16;
	}
	if (v >> 8) {
		v >>= 8;
		b += 8;
	}
	if (v >> 4) {
		v >>= 4;
		b += 4;
	}
	if (v >> 2) {
		v >>= 2;
		b += 2;
	}
	if (v >> 1) {
		v >>= 1;
		b += 1;
	}
	b += (__u32)v; /* v is 0 or 1 here */
	return b < LUMEN_SWITCH_QHIST_BUCKETS ? b : LUMEN_SWITCH_QHIST_BUCKETS - 1;
}

/* Mark an ECT packet CE. Returns 1 when the packet was marked. */
static __always_inline int lumen_sw_mark_ce(struct __sk_buff *skb, const struct lumen_sw_pkt *p)
{
	__u8 hdr[2];

	if (!p->l3_off || bpf_skb_load_bytes(skb, p->l3_off, hdr, sizeof(hdr)))
		return 0;
	if (p->family == LUMEN_SW_ETH_P_IP) {
		__u8 ecn = hdr[1] & 0x3;
		__u16 old_word, new_word;

		if (ecn != 1 && ecn != 2)
			return 0; /* Not-ECT, or CE already */
		__builtin_memcpy(&old_word, hdr, sizeof(old_word));
		hdr[1] |= 0x3;
		__builtin_memcpy(&new_word, hdr, sizeof(new_word));
		if (bpf_skb_store_bytes(skb, p->l3_off + 1, &hdr[1], 1, 0))
			return 0;
		/* both words as they sit in the header: the checksum is byte-order independent */
		if (bpf_l3_csum_replace(skb, p->l3_off + LUMEN_SW_IP_CSUM_OFF, old_word, new_word, sizeof(old_word)))
			return 0;
		return 1;
	}
	if (p->family == LUMEN_SW_ETH_P_IPV6) {
		/* traffic class = low nibble of byte 0, high nibble of byte 1; ECN = its 2 low bits */
		__u8 ecn = (hdr[1] >> 4) & 0x3;

		if (ecn != 1 && ecn != 2)
			return 0;
		hdr[1] |= 0x30;
		if (bpf_skb_store_bytes(skb, p->l3_off + 1, &hdr[1], 1, 0))
			return 0;
		return 1;
	}
	return 0;
}

SEC("tc")
int lumen_sw_egress(struct __sk_buff *skb)
{
	__u32 key = lumen_port_id;
	struct lumen_switch_port_cfg *cfg = bpf_map_lookup_elem(&lumen_sw_cfg, &key);
	struct lumen_switch_port_stats *st = bpf_map_lookup_elem(&lumen_sw_stats, &key);
	struct lumen_sw_pkt p;
	__u64 len, q;

	if (!cfg || !st || !cfg->in_use)
		return TC_ACT_OK;
	lumen_sw_heal(cfg, st);
	lumen_sw_parse(skb, &p);
	len = lumen_sw_wire_len(skb, &p);
	q = lumen_sw_qlen(st);

	if (cfg->buffer_bytes && q && q + len > cfg->buffer_bytes) {
		__sync_fetch_and_add(&st->drops, 1);
		__sync_fetch_and_add(&st->drop_bytes, len);
		return TC_ACT_SHOT;
	}
	if (cfg->ecn_threshold_bytes && q > cfg->ecn_threshold_bytes && lumen_sw_mark_ce(skb, &p))
		__sync_fetch_and_add(&st->ecn_marks, 1);

	__sync_fetch_and_add(&st->enq_bytes, len);
	__sync_fetch_and_add(&st->enq_packets, 1);
	return TC_ACT_OK;
}

/*
 * Bound a size v to 1..max (inclusive) for the verifier, as lumen_sw_int
 * explains for area_len: tested as one unsigned range on v - 1, opaque to
 * the compiler before and after. Returns from the caller when out of range.
 */
#define LUMEN_SW_BOUND_SIZE(v, max)                                                                                    \
	do {                                                                                                           \
		(v) -= 1;                                                                                              \
		barrier_var(v);                                                                                        \
		if ((v) >= (max))                                                                                      \
			return;                                                                                        \
		(v) += 1;                                                                                              \
		barrier_var(v);                                                                                        \
	} while (0)

/* lumen_sw_int_fill's "leave the packet alone" (no hop written, nothing to store) */
#define LUMEN_SW_NO_HOP (-1000)

/*
 * The hop record of this dequeue into the INT option opt (avail bytes read
 * from the packet; old receives a copy of them first). Returns the slot
 * filled, -LUMEN_INT_EFULL when the overflow flag was set now (store opt),
 * or LUMEN_SW_NO_HOP: a malformed option (counted), an echo, or a full one
 * flagged earlier. *wlen: the option's length, what to store.
 */
static __always_inline int lumen_sw_int_fill(__u8 *opt, __u8 *old, __u64 avail, const struct lumen_switch_port_cfg *cfg,
					     struct lumen_switch_port_stats *st, __u64 ts, __u64 deq_total, __u64 qlen,
					     __u64 *wlen)
{
	struct lumen_int_opt parsed;
	struct lumen_int_hop hop;
	int ret;

	ret = lumen_int_parse(opt, (__u32)avail, &parsed);
	if (ret < 0) {
		__sync_fetch_and_add(&st->int_malformed, 1);
		return LUMEN_SW_NO_HOP;
	}
	if (parsed.flags & LUMEN_INT_FLAG_ECHO)
		return LUMEN_SW_NO_HOP; /* echoes belong to the endpoints */

	__builtin_memcpy(old, opt, LUMEN_SW_OPT_BUF);
	lumen_int_hop_make_v(&hop, parsed.version, ts, deq_total, qlen, cfg->rate_code);
	ret = lumen_int_push_hop(opt, (__u32)avail, &hop);
	if (ret == -LUMEN_INT_EFULL) {
		__sync_fetch_and_add(&st->int_full, 1);
		if (opt[4] == old[4])
			return LUMEN_SW_NO_HOP; /* overflow flagged by an earlier hop already */
	} else if (ret < 0) {
		return LUMEN_SW_NO_HOP; /* cannot happen after a successful parse */
	}
	*wlen = opt[1] & 0x3f; /* parse guarantees 12..40 */
	if (*wlen < LUMEN_INT_HDR_LEN || *wlen > LUMEN_INT_MAX_LEN)
		return LUMEN_SW_NO_HOP;
	return ret;
}

/*
 * Fill the INT request of a TCP segment, if it carries one. ts and
 * deq_total are the port's INT clock and dequeued bytes with this packet
 * (struct lumen_sw_clock), qlen the queue it left behind.
 */
static __always_inline void lumen_sw_int(struct __sk_buff *skb, const struct lumen_sw_pkt *p,
					 const struct lumen_switch_port_cfg *cfg, struct lumen_switch_port_stats *st,
					 __u64 ts, __u64 deq_total, __u64 qlen)
{
	struct lumen_tcp_opts area;
	__u8 opt[LUMEN_SW_OPT_BUF], old[LUMEN_SW_OPT_BUF];
	/* 64-bit indices: zero-extending 32-bit ones would hide their bounds from the verifier */
	__u64 area_len, opt_off, at, olen, avail, wlen = 0, csum_len;
	__s64 diff;
	int ret;

	if (p->l4_proto != LUMEN_SW_IPPROTO_TCP || p->tcp_hlen <= 20 || !p->l4_off)
		return;
	/*
	 * Sizes passed to bpf_skb_load_bytes must be provably >= 1. The 6.1
	 * verifier learns no lower bound from a "!= 0" test (newer ones do), nor
	 * does a check reach a copy spilled to the stack before it. So 1..max is
	 * tested as one unsigned range on size - 1, kept opaque to the compiler
	 * (which would otherwise rewrite the test on another register), and the
	 * size is made opaque again after it, so that what the helper gets, and
	 * any spill of it, derives from the checked register.
	 */
	area_len = (__u64)p->tcp_hlen - 21; /* tcp_hlen > 20: size - 1 */
	barrier_var(area_len);
	if (area_len >= LUMEN_TCP_OPT_SPACE)
		return;
	area_len += 1;
	barrier_var(area_len);
	opt_off = p->l4_off + 20;
	__builtin_memset(&area, 0, sizeof(area));
	if (bpf_skb_load_bytes(skb, opt_off, area.b, area_len))
		return;

	/*
	 * TCP's own walk (include/lumen/tcp_option.h, shared with the module):
	 * an INT option that TCP would not reach whole is not ours to touch.
	 * The walker's result is re-bounded for the verifier, which does not
	 * carry what a global function proved back to its caller; opaque, or
	 * clang drops the test as implied by the walker's code.
	 */
	ret = lumen_tcp_opt_find(&area, (__u32)area_len, LUMEN_INT_KIND, LUMEN_INT_EXID);
	barrier_var(ret);
	if (ret < 0 || ret >= LUMEN_TCP_OPT_SPACE - 1)
		return;
	at = (__u64)ret;
	olen = area.b[at + 1];
	if (olen > area_len - at)
		return;
	avail = olen - 1; /* the walker found olen >= 4: size - 1, as above */
	barrier_var(avail);
	if (avail >= LUMEN_INT_MAX_LEN)
		return;
	avail += 1;
	barrier_var(avail);
	__builtin_memset(opt, 0, sizeof(opt));
	if (bpf_skb_load_bytes(skb, opt_off + at, opt, avail))
		return;
	ret = lumen_sw_int_fill(opt, old, avail, cfg, st, ts, deq_total, qlen, &wlen);
	if (ret == LUMEN_SW_NO_HOP)
		return;
	LUMEN_SW_BOUND_SIZE(wlen, LUMEN_INT_MAX_LEN); /* what the fill proved does not reach here */
	/*
	 * Checksum delta of the option bytes, computed as if the option sat on
	 * a 16-bit boundary of the TCP header; both copies are identical past
	 * wlen, so rounding the length up to the 4 bytes bpf_csum_diff wants
	 * adds nothing. An option at an odd offset has its bytes in the other
	 * halves of the checksum words: rotate the sum by 8 bits.
	 */
	csum_len = (wlen + 3) & 0x3c;
	diff = bpf_csum_diff((__be32 *)old, csum_len, (__be32 *)opt, csum_len, 0);
	if (diff < 0)
		return;
	if (at & 1) {
		__u32 d = (__u32)diff;

		diff = (__s64)((d >> 8) | (d << 24));
	}
	if (bpf_skb_store_bytes(skb, opt_off + at, opt, wlen, 0))
		return;
	/* the segment's one's-complement sum is unchanged, so skb->csum (COMPLETE) needs no update */
	if (bpf_l4_csum_replace(skb, p->l4_off + LUMEN_SW_TCP_CSUM_OFF, 0, (__u64)(__u32)diff, 0))
		return;
	if (ret >= 0)
		__sync_fetch_and_add(&st->int_filled, 1);
}

/*
 * Fill the INT request of a lumen-dp DATA packet, if it carries one: the
 * same option bytes, as the extension after the 32-byte DATA header.
 * ACKs carry echoes, which are the endpoints' business.
 */
static __always_inline void lumen_sw_int_dp(struct __sk_buff *skb, const struct lumen_sw_pkt *p,
					    const struct lumen_switch_port_cfg *cfg, struct lumen_switch_port_stats *st,
					    __u64 ts, __u64 deq_total, __u64 qlen)
{
	__u8 opt[LUMEN_SW_OPT_BUF], old[LUMEN_SW_OPT_BUF], hdr[4];
	__u64 ext_off, avail, wlen = 0, csum_len;
	__u16 dport, csum;
	__s64 diff;
	int ret;

	if (p->family != LUMEN_SW_ETH_P_IP || p->l4_proto != LUMEN_SW_IPPROTO_UDP || !p->l4_off)
		return;
	if (bpf_skb_load_bytes(skb, p->l4_off + 2, &dport, sizeof(dport)) || dport != bpf_htons(LUMEN_DP_UDP_PORT))
		return;
	if (bpf_skb_load_bytes(skb, p->l4_off + LUMEN_DP_UDP_HLEN, hdr, sizeof(hdr)))
		return;
	if (hdr[0] != LUMEN_DP_VERSION || hdr[1] != LUMEN_DP_DATA || !(hdr[2] & LUMEN_DP_F_INT))
		return;
	avail = (__u64)hdr[3] * 4; /* ext_words * 4 bytes, 1..LUMEN_INT_MAX_LEN read */
	LUMEN_SW_BOUND_SIZE(avail, LUMEN_INT_MAX_LEN);
	ext_off = p->l4_off + LUMEN_DP_UDP_HLEN + LUMEN_DP_DATA_HLEN;
	__builtin_memset(opt, 0, sizeof(opt));
	if (bpf_skb_load_bytes(skb, ext_off, opt, avail))
		return;
	ret = lumen_sw_int_fill(opt, old, avail, cfg, st, ts, deq_total, qlen, &wlen);
	if (ret == LUMEN_SW_NO_HOP)
		return;
	LUMEN_SW_BOUND_SIZE(wlen, LUMEN_INT_MAX_LEN);
	if (bpf_skb_load_bytes(skb, p->l4_off + LUMEN_SW_UDP_CSUM_OFF, &csum, sizeof(csum)))
		return;
	/* the extension starts at an even offset of the datagram: no rotation */
	csum_len = (wlen + 3) & 0x3c;
	diff = bpf_csum_diff((__be32 *)old, csum_len, (__be32 *)opt, csum_len, 0);
	if (diff < 0)
		return;
	if (bpf_skb_store_bytes(skb, ext_off, opt, wlen, 0))
		return;
	if (csum &&
	    bpf_l4_csum_replace(skb, p->l4_off + LUMEN_SW_UDP_CSUM_OFF, 0, (__u64)(__u32)diff, BPF_F_MARK_MANGLED_0))
		return;
	if (ret >= 0)
		__sync_fetch_and_add(&st->int_filled, 1);
}

SEC("tc")
int lumen_sw_ingress(struct __sk_buff *skb)
{
	__u32 key = lumen_port_id;
	struct lumen_switch_port_cfg *cfg = bpf_map_lookup_elem(&lumen_sw_cfg, &key);
	struct lumen_switch_port_stats *st = bpf_map_lookup_elem(&lumen_sw_stats, &key);
	struct lumen_sw_pkt p;
	__u64 len, q, deq, enq;
	__u32 b;

	if (!cfg || !st || !cfg->in_use)
		return TC_ACT_OK;
	lumen_sw_heal(cfg, st);
	lumen_sw_parse(skb, &p);
	len = lumen_sw_wire_len(skb, &p);

	__sync_fetch_and_add(&st->deq_bytes, len);
	__sync_fetch_and_add(&st->deq_packets, 1);
	deq = *(volatile __u64 *)&st->deq_bytes;
	enq = *(volatile __u64 *)&st->enq_bytes;
	if (deq > enq) {
		/* queued before the port was attached: account the enqueue late */
		__sync_fetch_and_add(&st->enq_bytes, deq - enq);
		q = 0;
	} else {
		q = enq - deq;
	}

	__sync_fetch_and_add(&st->qlen_samples, 1);
	b = lumen_sw_bucket(q);
	/* test the register that indexes: clang would drop the test as implied
	 * by lumen_sw_bucket and index with a copy the 6.1 verifier cannot bound */
	barrier_var(b);
	if (b < LUMEN_SWITCH_QHIST_BUCKETS)
		__sync_fetch_and_add(&st->qlen_hist[b], 1);
	if (q > st->qlen_max)
		st->qlen_max = q;

	if (cfg->int_enabled) {
		__u64 now = bpf_ktime_get_ns(), ts, tx;
		/* the packet's time on the wire at the port rate */
		__u64 wire_ns = cfg->rate_mbps ? len * 8000 / cfg->rate_mbps : 0;
		__u32 zero = 0;
		struct lumen_sw_clock *clk = bpf_map_lookup_elem(&lumen_sw_clock, &zero);

		if (!clk)
			return TC_ACT_OK;

		bpf_spin_lock(&clk->lock);
		clk->deq_bytes += len;
		ts = clk->ts + wire_ns;
		if (ts > now + LUMEN_SW_CLOCK_LEAD_NS)
			ts = now + LUMEN_SW_CLOCK_LEAD_NS;
		if (now > ts)
			ts = now;
		if (ts > clk->ts)
			clk->ts = ts;
		tx = clk->deq_bytes;
		ts = clk->ts;
		bpf_spin_unlock(&clk->lock);
		lumen_sw_int(skb, &p, cfg, st, ts, tx, q);
		lumen_sw_int_dp(skb, &p, cfg, st, ts, tx, q);
	}
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
