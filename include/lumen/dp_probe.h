/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * lumen/dp_probe.h - which spine a UDP source port leads to, found the way
 * traceroute finds a path: a probe with the 5-tuple of the DATA packets it
 * stands for and a small TTL, and the ICMP Time Exceeded the router where
 * the TTL runs out sends back.
 *
 * Why. Ethereal (dissertation ch. 3) pins each subflow to one uplink of its
 * leaf. The network picks the uplink by hashing the 5-tuple (ECMP), so the
 * sender steers only through the source port (the entropy), and which port
 * lands on which spine depends on a hash function and seed the host does
 * not know, and on the destination address. A probe answers it without
 * knowing the hash: sent with TTL 2 from a host, it passes its leaf (TTL 1)
 * and expires at the spine the leaf's hash chose; that spine's ICMP error
 * names it by its source address. Routers hash on the outer headers only, so
 * a probe with the DATA packets' addresses, protocol and ports takes their
 * path (Paris traceroute's observation: keep the flow identifier fixed).
 *
 * A probe is a lumen-dp frame of type PROBE (dp_wire.h): a receiver that
 * gets one (a TTL too large for the fabric) parses and ignores it, and it
 * never creates a connection. Its IPv4 id carries the probe's number, since
 * every ICMP error quotes the whole IP header (RFC 792) but only 8 bytes of
 * what follows it are sure to be quoted.
 *
 * lumen_dp_parse_time_exceeded trusts nothing: lengths against the frame and
 * the IP length, the IPv4 and ICMP checksums, and a quote that must be an
 * IPv4 header without options, UDP, with its 8 bytes. The caller then
 * matches the quoted addresses, ports and id against a probe it sent (an
 * error it did not ask for is not evidence).
 */
#ifndef LUMEN_DP_PROBE_H
#define LUMEN_DP_PROBE_H

#include "dp_wire.h"

#define LUMEN_DP_IP_PROTO_ICMP 1
#define LUMEN_DP_ICMP_TIME_EXCEEDED 11 /* code 0: TTL exceeded in transit */
#define LUMEN_DP_ICMP_HLEN 8 /* type, code, checksum, 4 unused */
#define LUMEN_DP_ICMP_MAX 1500 /* IP packets of ICMP errors checked up to this (RFC 1812: 576) */

enum lumen_dp_icmp_error {
	LUMEN_DP_ICMP_OK = 0,
	LUMEN_DP_ICMP_ESHORT = 1, /* shorter than Ethernet, IPv4, ICMP and a quote of 28 bytes */
	LUMEN_DP_ICMP_EIP = 2, /* not IPv4, a bad IHL, checksum or length, a fragment */
	LUMEN_DP_ICMP_EPROTO = 3, /* not ICMP */
	LUMEN_DP_ICMP_ETYPE = 4, /* ICMP, but not Time Exceeded in transit */
	LUMEN_DP_ICMP_ECSUM = 5, /* ICMP checksum wrong */
	LUMEN_DP_ICMP_EQUOTE = 6, /* the quote is not IPv4 without options carrying UDP */
	LUMEN_DP_ICMP_E_COUNT
};

/* An ICMP Time Exceeded for a UDP datagram, in host order. */
struct lumen_dp_time_exceeded {
	__u32 router; /* the ICMP error's source: where the TTL ran out */
	__u32 src, dst; /* the quoted datagram's addresses */
	__u16 sport, dport; /* and UDP ports */
	__u16 id; /* and IPv4 id (a probe's number) */
	__u8 quoted_ttl; /* its TTL when the router quoted it (0 or 1) */
};

/*
 * A probe for the DATA packets of *tmpl (addresses, MACs, ports: sport is
 * the entropy probed) with TTL ttl (1..255) and number id in the IPv4 id and
 * the PSN; its ts_ns is ts_ns. The frame length, or a negative lumen_dp_error
 * (LUMEN_DP_EINVAL for TTL 0), nothing written.
 */
LUMEN_INLINE int lumen_dp_build_probe(__u8 *buf, __u32 room, const struct lumen_dp_pkt *tmpl, __u8 ttl, __u16 id,
				      __u64 ts_ns)
{
	struct lumen_dp_pkt p = *tmpl;
	__u8 *ip = buf + LUMEN_DP_IP_OFF;
	int n;

	if (ttl == 0)
		return -LUMEN_DP_EINVAL;
	p.type = LUMEN_DP_PROBE;
	p.flags = 0;
	p.ext = 0;
	p.ext_len = 0;
	p.payload = 0;
	p.payload_len = 0;
	p.conn_id = 0;
	p.psn = id;
	p.ts_ns = ts_ns;
	n = lumen_dp_build(buf, room, &p);
	if (n < 0)
		return n;
	lumen_dp_put16(ip + 4, id);
	ip[8] = ttl;
	lumen_dp_put16(ip + 10, 0);
	lumen_dp_put16(ip + 10, (__u16)~lumen_dp_ip_sum(ip));
	return n;
}

/* RFC 1071 sum of len bytes (an odd last byte padded with zero), folded. */
LUMEN_INLINE __u16 lumen_dp_sum(const __u8 *p, __u32 len)
{
	__u32 sum = 0, i;

	for (i = 0; i + 1 < len; i += 2)
		sum += lumen_dp_get16(p + i);
	if (len & 1)
		sum += (__u32)p[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xFFFF) + (sum >> 16);
	return (__u16)sum;
}

/*
 * Parse a frame of len bytes as an ICMP Time Exceeded (in transit) that
 * quotes a UDP datagram. 0 and *out filled, or a negative
 * lumen_dp_icmp_error with *out untouched.
 */
LUMEN_INLINE int lumen_dp_parse_time_exceeded(const __u8 *frame, __u32 len, struct lumen_dp_time_exceeded *out)
{
	const __u8 *ip = frame + LUMEN_DP_IP_OFF, *icmp, *q;
	__u32 ihl, ip_len, icmp_len;

	if (len < LUMEN_DP_ETH_HLEN + LUMEN_DP_IP_HLEN)
		return -LUMEN_DP_ICMP_ESHORT;
	if (lumen_dp_get16(frame + 12) != LUMEN_DP_ETHERTYPE_IPV4 || ip[0] >> 4 != 4)
		return -LUMEN_DP_ICMP_EIP;
	ihl = 4u * (ip[0] & 0x0F);
	ip_len = lumen_dp_get16(ip + 2);
	if (ihl < LUMEN_DP_IP_HLEN || ip_len < ihl || ip_len > len - LUMEN_DP_ETH_HLEN || ip_len > LUMEN_DP_ICMP_MAX)
		return -LUMEN_DP_ICMP_EIP;
	if (lumen_dp_sum(ip, ihl) != 0xFFFF || (lumen_dp_get16(ip + 6) & LUMEN_DP_IP_FRAG_MASK))
		return -LUMEN_DP_ICMP_EIP;
	if (ip[9] != LUMEN_DP_IP_PROTO_ICMP)
		return -LUMEN_DP_ICMP_EPROTO;
	icmp = ip + ihl;
	icmp_len = ip_len - ihl;
	if (icmp_len < LUMEN_DP_ICMP_HLEN + LUMEN_DP_IP_HLEN + LUMEN_DP_UDP_HLEN)
		return -LUMEN_DP_ICMP_ESHORT;
	if (icmp[0] != LUMEN_DP_ICMP_TIME_EXCEEDED || icmp[1] != 0)
		return -LUMEN_DP_ICMP_ETYPE;
	if (lumen_dp_sum(icmp, icmp_len) != 0xFFFF)
		return -LUMEN_DP_ICMP_ECSUM;
	q = icmp + LUMEN_DP_ICMP_HLEN;
	if (q[0] != (0x40 | LUMEN_DP_IP_HLEN / 4) || q[9] != LUMEN_DP_IP_PROTO_UDP)
		return -LUMEN_DP_ICMP_EQUOTE;
	out->router = lumen_dp_get32(ip + 12);
	out->src = lumen_dp_get32(q + 12);
	out->dst = lumen_dp_get32(q + 16);
	out->id = lumen_dp_get16(q + 4);
	out->quoted_ttl = q[8];
	out->sport = lumen_dp_get16(q + LUMEN_DP_IP_HLEN);
	out->dport = lumen_dp_get16(q + LUMEN_DP_IP_HLEN + 2);
	return 0;
}

LUMEN_INLINE const char *lumen_dp_icmp_strerror(int err)
{
	switch (err < 0 ? -err : err) {
	case LUMEN_DP_ICMP_OK:
		return "ok";
	case LUMEN_DP_ICMP_ESHORT:
		return "too short for an ICMP error quoting a UDP datagram";
	case LUMEN_DP_ICMP_EIP:
		return "not a valid IPv4 packet";
	case LUMEN_DP_ICMP_EPROTO:
		return "not ICMP";
	case LUMEN_DP_ICMP_ETYPE:
		return "not an ICMP Time Exceeded in transit";
	case LUMEN_DP_ICMP_ECSUM:
		return "ICMP checksum wrong";
	case LUMEN_DP_ICMP_EQUOTE:
		return "the quote is not an IPv4 UDP datagram";
	default:
		return "unknown error";
	}
}

#endif /* LUMEN_DP_PROBE_H */
