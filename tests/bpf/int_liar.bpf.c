// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * tests/bpf/int_liar.bpf.c - a lying INT receiver, for the adversarial test
 * (tests/e2e/adversarial_test.sh). Attached with tc on the receiver's egress,
 * it rewrites the hop records of every lumen INT echo the receiver sends:
 *
 *   tc/zero_queue  every hop claims an empty queue (qlen = 0) while its
 *                  timestamps and byte counters stay true: the path looks
 *                  busy but never queued, so INT alone would let the window
 *                  grow to its cap (PowerTCP's RTT guard must stop it);
 *   tc/frozen      every hop's timestamp and byte counter are zeroed: each
 *                  echo repeats the last, dt = 0, so none is usable (the
 *                  flow must fall back to its RTT rule).
 *
 * The option is found with the shared walker (include/lumen/tcp_option.h);
 * the hop layout is the wire format's (include/lumen/int_option.h: rate 10
 * bits, timestamp 18, tx bytes 14, qlen 14, big-endian). The TCP checksum is
 * patched one 16-bit word at a time. A test tool, not part of lumen.
 */
#include "lumen_bpf.h"
#include "lumen/tcp_option.h"

#define LIAR_ETH_HLEN 14
#define LIAR_ETH_P_IP 0x0800
#define LIAR_ETH_P_IPV6 0x86DD
#define LIAR_TCP_CSUM 16

enum liar_mode {
	LIAR_ZERO_QUEUE,
	LIAR_FROZEN
};

/* Offset of the TCP header of an unfragmented IPv4/IPv6 TCP packet, or 0. */
static __always_inline __u32 liar_tcp_off(struct __sk_buff *skb)
{
	__u8 b[2];

	if (skb->protocol == bpf_htons(LIAR_ETH_P_IP)) {
		if (bpf_skb_load_bytes(skb, LIAR_ETH_HLEN, b, 1) || (b[0] >> 4) != 4)
			return 0;
		__u32 ihl = (b[0] & 0xf) * 4;
		__u8 proto;
		__u16 frag;

		if (ihl < 20 || bpf_skb_load_bytes(skb, LIAR_ETH_HLEN + 9, &proto, 1) ||
		    bpf_skb_load_bytes(skb, LIAR_ETH_HLEN + 6, &frag, 2))
			return 0;
		if (proto != 6 || (bpf_ntohs(frag) & 0x3fff))
			return 0;
		return LIAR_ETH_HLEN + ihl;
	}
	if (skb->protocol == bpf_htons(LIAR_ETH_P_IPV6)) {
		__u8 nh;

		if (bpf_skb_load_bytes(skb, LIAR_ETH_HLEN + 6, &nh, 1) || nh != 6)
			return 0;
		return LIAR_ETH_HLEN + 40;
	}
	return 0;
}

/*
 * Keep only the bits of keep in the byte at TCP offset t: the 16-bit word
 * holding it is read, changed, written back and its checksum delta applied.
 * Only constant stack offsets: older verifiers refuse variable ones.
 */
static __always_inline int liar_mask(struct __sk_buff *skb, __u32 toff, __u64 t, __u8 keep)
{
	__u8 w[2], was[2];
	__u32 at = toff + (__u32)(t & ~1ULL);

	if (bpf_skb_load_bytes(skb, at, w, 2))
		return -1;
	was[0] = w[0];
	was[1] = w[1];
	if (t & 1)
		w[1] &= keep;
	else
		w[0] &= keep;
	if (w[0] == was[0] && w[1] == was[1])
		return 0;
	if (bpf_skb_store_bytes(skb, at, w, 2, 0))
		return -1;
	return bpf_l4_csum_replace(skb, toff + LIAR_TCP_CSUM, *(__u16 *)was, *(__u16 *)w, 2);
}

static __always_inline int liar(struct __sk_buff *skb, enum liar_mode mode)
{
	struct lumen_tcp_opts o;
	__u64 optlen, at, hops, h, r;
	__u32 toff = liar_tcp_off(skb);
	__u8 doff, flags;
	int ret, err = 0;

	if (!toff || bpf_skb_load_bytes(skb, toff + 12, &doff, 1))
		return TC_ACT_OK;
	optlen = (__u64)(doff >> 4) * 4;
	if (optlen <= 20)
		return TC_ACT_OK;
	optlen -= 20;
	barrier_var(optlen);
	if (optlen > LUMEN_TCP_OPT_SPACE || optlen < 1)
		return TC_ACT_OK;
	__builtin_memset(&o, 0, sizeof(o));
	if (bpf_skb_load_bytes(skb, toff + 20, o.b, optlen))
		return TC_ACT_OK;
	ret = lumen_tcp_opt_find(&o, (__u32)optlen, LUMEN_INT_KIND, LUMEN_INT_EXID);
	barrier_var(ret);
	if (ret < 0 || ret > LUMEN_TCP_OPT_SPACE - LUMEN_INT_HDR_LEN)
		return TC_ACT_OK;
	at = (__u64)ret;
	if (bpf_skb_load_bytes(skb, toff + 20 + (__u32)at + 4, &flags, 1) || !(flags & LUMEN_INT_FLAG_ECHO))
		return TC_ACT_OK;
	hops = flags & 7;
	for (h = 0; h < LUMEN_INT_MAX_HOPS; h++) {
		if (h >= hops)
			break;
		r = at + LUMEN_INT_HDR_LEN + h * LUMEN_INT_HOP_LEN;
		if (r + LUMEN_INT_HOP_LEN > optlen)
			break;
		r += 20; /* TCP offset of the record */
		if (mode == LIAR_ZERO_QUEUE) {
			err |= liar_mask(skb, toff, r + 5, 0xc0);
			err |= liar_mask(skb, toff, r + 6, 0);
		} else {
			err |= liar_mask(skb, toff, r + 1, 0xc0);
			err |= liar_mask(skb, toff, r + 2, 0);
			err |= liar_mask(skb, toff, r + 3, 0);
			err |= liar_mask(skb, toff, r + 4, 0);
			err |= liar_mask(skb, toff, r + 5, 0x3f);
		}
	}
	return err ? TC_ACT_SHOT : TC_ACT_OK;
}

SEC("tc/zero_queue")
int int_liar_zero_queue(struct __sk_buff *skb)
{
	return liar(skb, LIAR_ZERO_QUEUE);
}

SEC("tc/frozen")
int int_liar_frozen(struct __sk_buff *skb)
{
	return liar(skb, LIAR_FROZEN);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
