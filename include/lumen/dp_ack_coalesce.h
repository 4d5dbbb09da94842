/*
 * dp_ack_coalesce.h - folding a newer lumen-dp ACK into an older one of the
 * same connection that is still waiting to leave.
 *
 * On a reconfigurable network a host holds its frames for a node until the
 * schedule connects the two (the optical gate's VOQ). The ACKs for a heavy
 * flow then pile up in the VOQ of its reverse direction, which the schedule
 * sized for that direction's own demand: a receiver ACKs every few DATA
 * packets, so thousands of ACKs a second wait for a circuit that carries a
 * few hundred frames per slot, and crowd out that pair's data. Yet an ACK
 * that has not left says nothing its successor does not say better: the
 * cumulative PSN and the SACK bitmap only grow, and the echoes (timestamp,
 * entropy, INT) are the newest. Only the per-ACK counts (DATA packets and
 * CE-marked ones since the previous ACK) are deltas, and they add up.
 *
 * So a newer ACK of the same connection, of the same length (a booking is
 * for a frame size: the older frame's departure and window stay valid),
 * overwrites the older frame in place with its own bytes (padding after
 * the IP packet aside), except:
 *   pkts, ce_pkts  the sums of both (refused when a sum does not fit 16 bits)
 *   sack           the newer bitmap OR the older one moved to the newer PSN
 *                  (the receiver's state only grows; this keeps what a
 *                  bitmap truncated at 64 PSNs may have dropped)
 * The newer ACK's cumulative PSN must not be behind the older one's (ACKs
 * are built in order; anything else is not what this host built). NACKs
 * are never folded: Go-Back-N acts on each.
 */
#ifndef LUMEN_DP_ACK_COALESCE_H
#define LUMEN_DP_ACK_COALESCE_H

#include "dp_wire.h"

/* the longest ACK frame: headers and the largest extension (122 B) */
#define LUMEN_DP_ACK_MAX (LUMEN_DP_HDR_OFF + LUMEN_DP_ACK_HLEN + LUMEN_DP_EXT_MAX)

enum lumen_dp_fold_result {
	LUMEN_DP_FOLDED = 0,
	LUMEN_DP_FOLD_EPARSE = 1, /* one of the frames does not parse */
	LUMEN_DP_FOLD_ETYPE = 2, /* one of them is not an ACK */
	LUMEN_DP_FOLD_ECONN = 3, /* another connection, addresses or ports */
	LUMEN_DP_FOLD_ELEN = 4, /* the frames differ in length */
	LUMEN_DP_FOLD_EBEHIND = 5, /* the newer one's PSN is behind the older one's */
	LUMEN_DP_FOLD_ECOUNT = 6, /* pkts or ce_pkts would not fit 16 bits */
};

/*
 * Fold the ACK newer (newer_len bytes) into older (older_len bytes) in
 * place. Both must parse as lumen-dp for udp_dport. Returns LUMEN_DP_FOLDED,
 * or why not, older unchanged.
 */
LUMEN_INLINE int lumen_dp_ack_fold(__u8 *older, __u32 older_len, const __u8 *newer, __u32 newer_len, __u16 udp_dport)
{
	struct lumen_dp_pkt o, n;
	__u32 ahead, pkts, ce, i, end;
	__u64 sack;

	if (lumen_dp_parse(older, older_len, udp_dport, &o) || lumen_dp_parse(newer, newer_len, udp_dport, &n))
		return LUMEN_DP_FOLD_EPARSE;
	if (o.type != LUMEN_DP_ACK || n.type != LUMEN_DP_ACK)
		return LUMEN_DP_FOLD_ETYPE;
	if (o.conn_id != n.conn_id || o.ip_src != n.ip_src || o.ip_dst != n.ip_dst)
		return LUMEN_DP_FOLD_ECONN;
	for (i = 0; i < 6; i++)
		if (o.eth_dst[i] != n.eth_dst[i] || o.eth_src[i] != n.eth_src[i])
			return LUMEN_DP_FOLD_ECONN;
	end = LUMEN_DP_HDR_OFF + LUMEN_DP_ACK_HLEN + n.ext_len; /* the whole frame but padding */
	if (older_len != newer_len || o.ext_len != n.ext_len)
		return LUMEN_DP_FOLD_ELEN;
	ahead = n.psn - o.psn; /* serial arithmetic: PSNs wrap */
	if (ahead & 0x80000000u)
		return LUMEN_DP_FOLD_EBEHIND;
	pkts = (__u32)o.pkts + n.pkts;
	ce = (__u32)o.ce_pkts + n.ce_pkts;
	if (pkts > 0xffff || ce > 0xffff)
		return LUMEN_DP_FOLD_ECOUNT;
	/* older bit i is PSN o.psn + 1 + i, newer bit j PSN n.psn + 1 + j:
	 * j = i - ahead; bits below ahead are at or behind n.psn */
	sack = n.sack | (ahead < 64 ? o.sack >> ahead : 0);

	/* a constant bound, unrolled: BPF has no memcpy for a run-time length */
#ifdef __clang__
#pragma clang loop unroll(full)
#endif
	for (i = 0; i < LUMEN_DP_ACK_MAX; i++) {
		if (i < end)
			older[i] = newer[i];
	}
	lumen_dp_put64(older + LUMEN_DP_HDR_OFF + 20, sack);
	lumen_dp_put16(older + LUMEN_DP_HDR_OFF + 34, (__u16)pkts);
	lumen_dp_put16(older + LUMEN_DP_HDR_OFF + 36, (__u16)ce);
	return LUMEN_DP_FOLDED;
}

#endif
