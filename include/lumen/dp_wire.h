/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * lumen/dp_wire.h - the lumen-dp wire format, version 1: frame layout,
 * builder, parser and the in-place ECN helpers a switch needs. One definition
 * shared by the DPDK datapath (dpdk/), the software switch, BPF programs and
 * the tests.
 *
 * Why this format
 * ---------------
 * lumen-dp is a message transport over UDP/IPv4. The network sprays its
 * packets over paths by hashing the 5-tuple, so the UDP source port is the
 * path selector ("entropy", path_policy.h): it changes per packet, and an ACK
 * echoes the entropy, CE bit and timestamp of the DATA packet that triggered
 * it, which is what REPS needs to recycle good paths. The UDP checksum is 0
 * (allowed for IPv4, as RoCEv2 does): per-packet source ports would otherwise
 * cost a checksum update per packet; the Ethernet FCS covers the link. The
 * IPv4 header checksum is computed and verified: switches rewrite ECN in it.
 *
 * Frame (all multi-byte fields big-endian; byte offsets from the frame start)
 * -----
 *    0  Ethernet  dst MAC (6), src MAC (6), ethertype 0x0800 (2); no VLAN tag
 *   14  IPv4      ver 4 / IHL 5 (no options), TOS = DSCP 0 | ECN (DATA goes
 *                 out ECT(0)), total length, id 0, DF set, no fragments,
 *                 TTL 64, protocol 17, header checksum, src, dst
 *   34  UDP       src port = entropy, dst port (default 4792), length =
 *                 IP total length - 20, checksum 0
 *   42  lumen     12 B common part + 20 B (DATA) or 28 B (ACK, NACK)
 *       ext       ext_words * 4 bytes: the INT option, zero-padded
 *       payload   DATA only, at least 1 byte
 *
 * lumen header (offsets from its first byte)
 * ------------
 *    0  1  version     LUMEN_DP_VERSION (1)
 *    1  1  type        DATA 1, ACK 2, NACK 3, PROBE 4 (dp_probe.h),
 *                      SYN 5, SYNACK 6, FIN 7 (a connection's lifecycle)
 *    2  1  flags       DATA: RETX 0x01, ACK_NOW 0x02, MSG_LAST 0x04, INT 0x08
 *                      ACK/NACK: INT 0x08, ECE 0x10 (trigger carried CE)
 *                      SYN: COOKIE 0x20; SYNACK: REPLY 0x40;
 *                      FIN: REPLY 0x40, RST 0x80
 *    3  1  ext_words   0..10
 *    4  4  conn_id     chosen by the client; both directions carry it
 *    8  4  psn         DATA: this packet's PSN; ACK/NACK: next PSN expected
 *   DATA
 *   12  8  ts_ns       sender's clock at send time (echoed by the ACK)
 *   20  4  msg_id
 *   24  4  msg_off     byte offset of the payload in its message
 *   28  4  msg_len     message length: msg_off + payload_len <= msg_len
 *   PROBE (a path probe with a small TTL: conn_id 0, psn the probe's number)
 *   12  8  ts_ns       sender's clock at send time
 *   SYN / SYNACK / FIN (psn: SYN, SYNACK the client's initial PSN; FIN the
 *   PSN after the last one its sender sent; FIN RST the PSN of the DATA
 *   that found no connection)
 *   12  8  ts_ns       sender's clock at send time (SYNACK: the SYN's, echoed)
 *   20  4  cookie      SYNACK: the server's cookie; SYN with COOKIE: echoed
 *   ACK / NACK (NACK: psn is missing, Go-Back-N resends from it)
 *   12  8  echo_ts     ts_ns of the triggering DATA packet
 *   20  8  sack        bit i: PSN psn + 1 + i was received
 *   28  4  echo_psn    PSN of the triggering DATA packet
 *   32  2  echo_sport  its UDP source port (entropy)
 *   34  2  pkts        DATA packets newly received since the previous ACK
 *   36  2  ce_pkts     of those, how many carried CE
 *   38  2  rwnd        PSNs beyond psn the receiver can still take
 *   An ACK with pkts 0 is a window update: it answers no DATA (echo_ts,
 *   echo_psn and echo_sport are 0) and tells the sender that a window the
 *   previous ACK closed is open again (rwnd).
 *
 * The INT extension is exactly the TCP INT option of int_option.h (kind 253,
 * length, ExID, ver/flags/count, hop records): a request on DATA (switches
 * stamp it with lumen_int_push_hop in place), an echo on ACK/NACK. One format
 * for TCP and lumen-dp, so one switch stamps both. The padding after it is
 * zero and shorter than a word, so every packet has one encoding.
 *
 * Parsing
 * -------
 * lumen_dp_parse trusts no length: each is checked against the frame length
 * and against the IP and UDP length fields. Bytes after the IP packet are
 * ignored (NICs pad frames to 60 bytes; Linux trims the same way). The UDP
 * checksum is not verified (lumen-dp sends 0). The checks, in this order, the
 * first failing one reported: frame >= 14, ethertype IPv4, frame >= 34, IP
 * version 4, IHL 5, header checksum, 28 <= total length <= frame - 14, no
 * MF / fragment offset, protocol UDP, UDP dst port, UDP length = total length
 * - 20, lumen header present (version first, so a peer of another version is
 * told apart from garbage), version, type, flags, ext_words, extension length,
 * INT flag <=> extension, INT option, request/echo per type, padding, then
 * DATA payload >= 1, msg_len >= 1, msg_off + payload_len <= msg_len, or
 * ACK/NACK without payload.
 */
#ifndef LUMEN_DP_WIRE_H
#define LUMEN_DP_WIRE_H

#include "types.h"
#include "int_option.h"

#define LUMEN_DP_VERSION 1
#define LUMEN_DP_UDP_PORT 4792 /* default destination port */

#define LUMEN_DP_ETH_HLEN 14
#define LUMEN_DP_IP_HLEN 20
#define LUMEN_DP_UDP_HLEN 8
#define LUMEN_DP_IP_OFF LUMEN_DP_ETH_HLEN /* 14 */
#define LUMEN_DP_UDP_OFF (LUMEN_DP_IP_OFF + LUMEN_DP_IP_HLEN) /* 34 */
#define LUMEN_DP_HDR_OFF (LUMEN_DP_UDP_OFF + LUMEN_DP_UDP_HLEN) /* 42: the lumen header */
/* Where the fields that dispatch, steering and coalescing peek at lie in a
 * frame, before (or instead of) lumen_dp_parse: each a frame offset. */
#define LUMEN_DP_IP_TOS_AT (LUMEN_DP_IP_OFF + 1)
#define LUMEN_DP_IP_PROTO_AT (LUMEN_DP_IP_OFF + 9)
#define LUMEN_DP_IP_SRC_AT (LUMEN_DP_IP_OFF + 12)
#define LUMEN_DP_IP_DST_AT (LUMEN_DP_IP_OFF + 16)
#define LUMEN_DP_UDP_DPORT_AT (LUMEN_DP_UDP_OFF + 2)
#define LUMEN_DP_TYPE_AT (LUMEN_DP_HDR_OFF + 1)
#define LUMEN_DP_CONN_AT (LUMEN_DP_HDR_OFF + 4)
#define LUMEN_DP_PSN_AT (LUMEN_DP_HDR_OFF + 8)
#define LUMEN_DP_COMMON_HLEN 12
#define LUMEN_DP_DATA_HLEN 32 /* common + DATA part */
#define LUMEN_DP_ACK_HLEN 40 /* common + ACK/NACK part */
#define LUMEN_DP_PROBE_HLEN 20 /* common + PROBE part */
#define LUMEN_DP_CTRL_HLEN 24 /* common + SYN/SYNACK/FIN part */
#define LUMEN_DP_EXT_WORDS_MAX 10
#define LUMEN_DP_EXT_MAX (4 * LUMEN_DP_EXT_WORDS_MAX) /* 40 B, >= LUMEN_INT_MAX_LEN */
#define LUMEN_DP_IP_LEN_MAX 0xFFFFu

#define LUMEN_DP_ETHERTYPE_IPV4 0x0800
#define LUMEN_DP_IP_DF 0x4000
#define LUMEN_DP_IP_FRAG_MASK 0x3FFF /* MF and the fragment offset */
#define LUMEN_DP_IP_TTL 64
#define LUMEN_DP_IP_PROTO_UDP 17

enum lumen_dp_type {
	LUMEN_DP_DATA = 1,
	LUMEN_DP_ACK = 2,
	LUMEN_DP_NACK = 3,
	LUMEN_DP_PROBE = 4,
	LUMEN_DP_SYN = 5, /* client: open (again, with COOKIE) connection conn_id at PSN psn */
	LUMEN_DP_SYNACK = 6, /* server: a cookie to echo, or (REPLY) the connection is open */
	LUMEN_DP_FIN = 7, /* close; REPLY: closed; RST: no such connection */
};

#define LUMEN_DP_F_RETX 0x01 /* DATA: a retransmission */
#define LUMEN_DP_F_ACK_NOW 0x02 /* DATA: answer at once */
#define LUMEN_DP_F_MSG_LAST 0x04 /* DATA: last packet of its message */
#define LUMEN_DP_F_INT 0x08 /* the extension holds an INT request (DATA) / echo (ACK, NACK) */
#define LUMEN_DP_F_ECE 0x10 /* ACK/NACK: the triggering packet carried CE */
#define LUMEN_DP_F_COOKIE 0x20 /* SYN: echoes the server's cookie */
#define LUMEN_DP_F_REPLY 0x40 /* SYNACK: the server holds the connection; FIN: it is closed */
#define LUMEN_DP_F_RST 0x80 /* FIN: the receiver has no such connection */
#define LUMEN_DP_DATA_FLAGS (LUMEN_DP_F_RETX | LUMEN_DP_F_ACK_NOW | LUMEN_DP_F_MSG_LAST | LUMEN_DP_F_INT)
#define LUMEN_DP_ACK_FLAGS (LUMEN_DP_F_INT | LUMEN_DP_F_ECE)
#define LUMEN_DP_SYN_FLAGS LUMEN_DP_F_COOKIE
#define LUMEN_DP_SYNACK_FLAGS LUMEN_DP_F_REPLY
#define LUMEN_DP_FIN_FLAGS (LUMEN_DP_F_REPLY | LUMEN_DP_F_RST)

/* The ECN field, the low 2 bits of the IPv4 TOS byte (RFC 3168). */
#define LUMEN_DP_ECN_NOT_ECT 0
#define LUMEN_DP_ECN_ECT1 1
#define LUMEN_DP_ECN_ECT0 2
#define LUMEN_DP_ECN_CE 3
#define LUMEN_DP_ECN_MASK 3

enum lumen_dp_error {
	LUMEN_DP_OK = 0,
	LUMEN_DP_ESHORT_ETH = 1, /* frame shorter than an Ethernet header */
	LUMEN_DP_EETHERTYPE = 2, /* not IPv4 (IPv6, ARP, a VLAN tag) */
	LUMEN_DP_ESHORT_IP = 3, /* frame shorter than Ethernet + IPv4 headers */
	LUMEN_DP_EIP_VERSION = 4, /* IP version != 4 */
	LUMEN_DP_EIP_IHL = 5, /* IP options (IHL != 5) */
	LUMEN_DP_EIP_CSUM = 6, /* IPv4 header checksum wrong */
	LUMEN_DP_EIP_LEN = 7, /* IP total length below IPv4 + UDP headers */
	LUMEN_DP_EIP_TRUNC = 8, /* IP total length beyond the frame */
	LUMEN_DP_EIP_FRAG = 9, /* a fragment (MF or offset) */
	LUMEN_DP_EIP_PROTO = 10, /* not UDP */
	LUMEN_DP_EUDP_PORT = 11, /* another UDP destination port */
	LUMEN_DP_EUDP_LEN = 12, /* UDP length != IP payload length */
	LUMEN_DP_ESHORT_HDR = 13, /* UDP payload shorter than the lumen header */
	LUMEN_DP_EVERSION = 14, /* the peer speaks another lumen-dp version */
	LUMEN_DP_ETYPE = 15, /* unknown packet type */
	LUMEN_DP_EFLAGS = 16, /* flags not defined for the type */
	LUMEN_DP_EEXT_WORDS = 17, /* ext_words > 10 */
	LUMEN_DP_EEXT_LEN = 18, /* extension longer than the UDP payload left */
	LUMEN_DP_EEXT = 19, /* extension without the INT flag */
	LUMEN_DP_EINT = 20, /* INT flag without an INT option lumen_int_parse accepts */
	LUMEN_DP_EINT_DIR = 21, /* INT echo on DATA, or request on ACK/NACK */
	LUMEN_DP_EINT_PAD = 22, /* padding after the INT option not zero or >= 4 bytes */
	LUMEN_DP_EEMPTY = 23, /* DATA without payload */
	LUMEN_DP_EMSG_LEN = 24, /* DATA with msg_len 0 */
	LUMEN_DP_EMSG_RANGE = 25, /* DATA payload ends beyond msg_len */
	LUMEN_DP_EPAYLOAD = 26, /* ACK, NACK or PROBE with payload */
	LUMEN_DP_ENOSPACE = 27, /* builder: buffer too small */
	LUMEN_DP_EINVAL = 28, /* builder/helpers: bad argument (ECN > 3, IP packet > 64 KiB) */
	LUMEN_DP_E_COUNT
};

/*
 * A packet in host order: what lumen_dp_parse fills and lumen_dp_build
 * writes. The fields of the other type are 0 after parsing. ext and payload
 * point into the parsed frame (builder: into the caller's bytes).
 */
struct lumen_dp_pkt {
	__u8 eth_dst[6];
	__u8 eth_src[6];
	__u32 ip_src; /* host order: 10.0.0.1 is 0x0A000001 */
	__u32 ip_dst;
	__u16 sport; /* entropy */
	__u16 dport;
	__u8 ecn; /* LUMEN_DP_ECN_* */
	__u8 type; /* enum lumen_dp_type */
	__u8 flags; /* LUMEN_DP_F_* */
	__u8 ext_words; /* parsed; the builder derives it from ext */
	__u32 conn_id;
	__u32 psn;
	/* DATA */
	__u32 msg_id;
	__u64 ts_ns;
	__u32 msg_off;
	__u32 msg_len;
	/* ACK / NACK */
	__u64 echo_ts;
	__u64 sack;
	__u32 echo_psn;
	__u16 echo_sport;
	__u16 pkts;
	__u16 ce_pkts;
	__u16 rwnd;
	/* SYN / SYNACK / FIN (ts_ns too) */
	__u32 cookie;
	/*
	 * INT extension. Parsed: ext_len = ext_words * 4, padding included.
	 * Builder: ext holds an INT option and at least ext_len >= its length
	 * bytes are readable there; the option's own length is copied.
	 */
	__u32 ext_len;
	const __u8 *ext;
	/*
	 * Builder: payload NULL leaves the payload bytes of the buffer as they
	 * are (the caller writes them, before or after); BPF must do that.
	 */
	const __u8 *payload;
	__u32 payload_len;
};

/* ---------------------------------------------------------------------- */
/* Big-endian loads and stores, byte by byte: any alignment, no libc       */

LUMEN_INLINE __u16 lumen_dp_get16(const __u8 *p)
{
	return (__u16)((__u32)p[0] << 8 | p[1]);
}

LUMEN_INLINE __u32 lumen_dp_get32(const __u8 *p)
{
	return (__u32)p[0] << 24 | (__u32)p[1] << 16 | (__u32)p[2] << 8 | p[3];
}

LUMEN_INLINE __u64 lumen_dp_get64(const __u8 *p)
{
	return (__u64)lumen_dp_get32(p) << 32 | lumen_dp_get32(p + 4);
}

LUMEN_INLINE void lumen_dp_put16(__u8 *p, __u16 v)
{
	p[0] = (__u8)(v >> 8);
	p[1] = (__u8)v;
}

LUMEN_INLINE void lumen_dp_put32(__u8 *p, __u32 v)
{
	p[0] = (__u8)(v >> 24);
	p[1] = (__u8)(v >> 16);
	p[2] = (__u8)(v >> 8);
	p[3] = (__u8)v;
}

LUMEN_INLINE void lumen_dp_put64(__u8 *p, __u64 v)
{
	lumen_dp_put32(p, (__u32)(v >> 32));
	lumen_dp_put32(p + 4, (__u32)v);
}

/* ---------------------------------------------------------------------- */
/* Sizes and the IPv4 header checksum                                      */

/*
 * What a type defines: with want_flags 0, its lumen header length without
 * extension; with want_flags 1, its flags. 0 for an unknown type.
 */
LUMEN_INLINE __u32 lumen_dp_type_info(__u32 type, int want_flags)
{
	if (type == LUMEN_DP_DATA)
		return want_flags ? LUMEN_DP_DATA_FLAGS : LUMEN_DP_DATA_HLEN;
	if (type == LUMEN_DP_ACK || type == LUMEN_DP_NACK)
		return want_flags ? LUMEN_DP_ACK_FLAGS : LUMEN_DP_ACK_HLEN;
	if (type == LUMEN_DP_PROBE)
		return want_flags ? 0 : LUMEN_DP_PROBE_HLEN;
	if (type == LUMEN_DP_SYN)
		return want_flags ? LUMEN_DP_SYN_FLAGS : LUMEN_DP_CTRL_HLEN;
	if (type == LUMEN_DP_SYNACK)
		return want_flags ? LUMEN_DP_SYNACK_FLAGS : LUMEN_DP_CTRL_HLEN;
	if (type == LUMEN_DP_FIN)
		return want_flags ? LUMEN_DP_FIN_FLAGS : LUMEN_DP_CTRL_HLEN;
	return 0;
}

/* lumen header length of a type without extension; 0 for an unknown type. */
LUMEN_INLINE __u32 lumen_dp_type_hlen(__u32 type)
{
	return lumen_dp_type_info(type, 0);
}

/* Flags defined for a type; 0 for an unknown type. */
LUMEN_INLINE __u32 lumen_dp_type_flags(__u32 type)
{
	return lumen_dp_type_info(type, 1);
}

/*
 * Every header byte from Ethernet to the end of the extension, i.e. the
 * payload's offset in the frame (frame length = this + payload_len); 0 for an
 * unknown type or ext_words > 10.
 */
LUMEN_INLINE __u32 lumen_dp_hdr_len(__u32 type, __u32 ext_words)
{
	__u32 t = lumen_dp_type_hlen(type);

	if (t == 0 || ext_words > LUMEN_DP_EXT_WORDS_MAX)
		return 0;
	return LUMEN_DP_HDR_OFF + t + 4 * ext_words;
}

/*
 * RFC 1071 sum of the 20-byte IPv4 header, folded to 16 bits. A header is
 * valid when this is 0xFFFF; it is never 0 (the first word is nonzero).
 */
LUMEN_INLINE __u16 lumen_dp_ip_sum(const __u8 *ip)
{
	__u32 sum = 0, i;

	for (i = 0; i < LUMEN_DP_IP_HLEN; i += 2)
		sum += lumen_dp_get16(ip + i);
	sum = (sum & 0xFFFF) + (sum >> 16);
	sum = (sum & 0xFFFF) + (sum >> 16);
	return (__u16)sum;
}

/*
 * The header checksum of the IPv4 header lumen_dp_build writes (ECN, total
 * length, addresses; the rest is fixed), from the values rather than from the
 * bytes just stored, which a CPU cannot forward to wider loads.
 */
LUMEN_INLINE __u16 lumen_dp_ip_csum(__u32 ecn, __u32 ip_len, __u32 src, __u32 dst)
{
	__u32 sum = (0x4000u | (LUMEN_DP_IP_HLEN / 4) << 8 | ecn) + ip_len + LUMEN_DP_IP_DF +
		    (LUMEN_DP_IP_TTL << 8 | LUMEN_DP_IP_PROTO_UDP) + (src >> 16) + (src & 0xFFFF) + (dst >> 16) +
		    (dst & 0xFFFF);

	sum = (sum & 0xFFFF) + (sum >> 16);
	sum = (sum & 0xFFFF) + (sum >> 16);
	return (__u16)~sum;
}

/* RFC 1624 eqn. 3: the checksum after a 16-bit word changed from old to new. */
LUMEN_INLINE __u16 lumen_dp_csum_replace16(__u16 check, __u16 old, __u16 new_word)
{
	__u32 sum = (__u32)(__u16)~check + (__u16)~old + new_word;

	sum = (sum & 0xFFFF) + (sum >> 16);
	sum = (sum & 0xFFFF) + (sum >> 16);
	return (__u16)~sum;
}

/*
 * Checks the parser and the builder share, so that every frame built parses.
 * An INT option at ext (len readable bytes) for a packet of `type`: DATA
 * carries a request (switches stamp it), ACK/NACK an echo.
 */
LUMEN_INLINE int lumen_dp_int_check(const __u8 *ext, __u32 len, __u32 type)
{
	struct lumen_int_opt opt;

	if (!ext || len == 0 || lumen_int_parse(ext, len, &opt) != 0)
		return -LUMEN_DP_EINT;
	if ((type == LUMEN_DP_DATA) == ((opt.flags & LUMEN_INT_FLAG_ECHO) != 0))
		return -LUMEN_DP_EINT_DIR;
	return 0;
}

/* DATA: 1 <= payload, inside a message of >= 1 byte; ACK/NACK: no payload. */
LUMEN_INLINE int lumen_dp_payload_check(__u32 type, __u32 payload_len, __u32 msg_off, __u32 msg_len)
{
	if (type != LUMEN_DP_DATA)
		return payload_len ? -LUMEN_DP_EPAYLOAD : 0;
	if (payload_len == 0)
		return -LUMEN_DP_EEMPTY;
	if (msg_len == 0)
		return -LUMEN_DP_EMSG_LEN;
	if ((__u64)msg_off + payload_len > msg_len)
		return -LUMEN_DP_EMSG_RANGE;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Parser                                                                  */

/* Whether a frame holds an IPv4 header (parse, and in-place changes): 0 or a negative lumen_dp_error. */
LUMEN_INLINE int lumen_dp_ip_check(const __u8 *frame, __u32 len)
{
	if (len < LUMEN_DP_ETH_HLEN)
		return -LUMEN_DP_ESHORT_ETH;
	if (lumen_dp_get16(frame + 12) != LUMEN_DP_ETHERTYPE_IPV4)
		return -LUMEN_DP_EETHERTYPE;
	if (len < LUMEN_DP_UDP_OFF)
		return -LUMEN_DP_ESHORT_IP;
	if (frame[LUMEN_DP_IP_OFF] >> 4 != 4)
		return -LUMEN_DP_EIP_VERSION;
	return 0;
}

/*
 * Parse and validate a frame of len bytes addressed to UDP port udp_dport.
 * Returns 0 and fills *out, or a negative lumen_dp_error (the first failing
 * check in the order of the header comment) and leaves *out untouched.
 */
LUMEN_INLINE int lumen_dp_parse(const __u8 *frame, __u32 len, __u16 udp_dport, struct lumen_dp_pkt *out)
{
	const __u8 *ip, *udp, *h;
	__u32 ip_len, udp_len, left, hlen, ext_len, optlen, payload_len, i;
	int rc;

	rc = lumen_dp_ip_check(frame, len);
	if (rc)
		return rc;
	ip = frame + LUMEN_DP_IP_OFF;
	if ((ip[0] & 0x0F) != LUMEN_DP_IP_HLEN / 4)
		return -LUMEN_DP_EIP_IHL;
	if (lumen_dp_ip_sum(ip) != 0xFFFF)
		return -LUMEN_DP_EIP_CSUM;
	ip_len = lumen_dp_get16(ip + 2);
	if (ip_len < LUMEN_DP_IP_HLEN + LUMEN_DP_UDP_HLEN)
		return -LUMEN_DP_EIP_LEN;
	if (ip_len > len - LUMEN_DP_ETH_HLEN)
		return -LUMEN_DP_EIP_TRUNC;
	if (lumen_dp_get16(ip + 6) & LUMEN_DP_IP_FRAG_MASK)
		return -LUMEN_DP_EIP_FRAG;
	if (ip[9] != LUMEN_DP_IP_PROTO_UDP)
		return -LUMEN_DP_EIP_PROTO;
	/* the whole UDP header is inside ip_len, so inside the frame */
	udp = frame + LUMEN_DP_UDP_OFF;
	if (lumen_dp_get16(udp + 2) != udp_dport)
		return -LUMEN_DP_EUDP_PORT;
	udp_len = lumen_dp_get16(udp + 4);
	if (udp_len != ip_len - LUMEN_DP_IP_HLEN)
		return -LUMEN_DP_EUDP_LEN;

	/* from here on, `left` bytes at h are inside the frame */
	left = udp_len - LUMEN_DP_UDP_HLEN;
	h = frame + LUMEN_DP_HDR_OFF;
	if (left < 1)
		return -LUMEN_DP_ESHORT_HDR;
	if (h[0] != LUMEN_DP_VERSION)
		return -LUMEN_DP_EVERSION;
	if (left < LUMEN_DP_COMMON_HLEN)
		return -LUMEN_DP_ESHORT_HDR;
	hlen = lumen_dp_type_hlen(h[1]);
	if (hlen == 0)
		return -LUMEN_DP_ETYPE;
	if (left < hlen)
		return -LUMEN_DP_ESHORT_HDR;
	if (h[2] & ~lumen_dp_type_flags(h[1]))
		return -LUMEN_DP_EFLAGS;
	if (h[3] > LUMEN_DP_EXT_WORDS_MAX)
		return -LUMEN_DP_EEXT_WORDS;
	ext_len = 4u * h[3];
	if (ext_len > left - hlen)
		return -LUMEN_DP_EEXT_LEN;
	if (h[2] & LUMEN_DP_F_INT) {
		rc = lumen_dp_int_check(h + hlen, ext_len, h[1]);
		if (rc)
			return rc;
		/* one encoding per packet: zero padding, shorter than a word */
		optlen = h[hlen + 1]; /* <= ext_len: lumen_int_parse checked it */
		if (ext_len - optlen >= 4)
			return -LUMEN_DP_EINT_PAD;
		for (i = 0; i < 3; i++) {
			if (optlen + i < ext_len && h[hlen + optlen + i] != 0)
				return -LUMEN_DP_EINT_PAD;
		}
	} else if (ext_len) {
		return -LUMEN_DP_EEXT;
	}
	payload_len = left - hlen - ext_len;
	if (h[1] == LUMEN_DP_DATA)
		rc = lumen_dp_payload_check(h[1], payload_len, lumen_dp_get32(h + 24), lumen_dp_get32(h + 28));
	else
		rc = lumen_dp_payload_check(h[1], payload_len, 0, 0);
	if (rc)
		return rc;

	/* Every check passed: fill *out in place (a copy of a struct built
	 * field by field on the stack stalls store forwarding). */
	for (i = 0; i < 6; i++) {
		out->eth_dst[i] = frame[i];
		out->eth_src[i] = frame[6 + i];
	}
	out->ip_src = lumen_dp_get32(ip + 12);
	out->ip_dst = lumen_dp_get32(ip + 16);
	out->ecn = ip[1] & LUMEN_DP_ECN_MASK;
	out->sport = lumen_dp_get16(udp);
	out->dport = udp_dport;
	out->type = h[1];
	out->flags = h[2];
	out->ext_words = h[3];
	out->conn_id = lumen_dp_get32(h + 4);
	out->psn = lumen_dp_get32(h + 8);
	out->ext_len = ext_len;
	out->ext = ext_len ? h + hlen : 0;
	out->payload_len = payload_len;
	out->payload = payload_len ? h + hlen + ext_len : 0;
	out->cookie = 0;
	if (h[1] >= LUMEN_DP_SYN) { /* SYN, SYNACK, FIN: lumen_dp_type_hlen knew the type */
		out->ts_ns = lumen_dp_get64(h + 12);
		out->cookie = lumen_dp_get32(h + 20);
		out->msg_id = out->msg_off = out->msg_len = 0;
		out->echo_ts = out->sack = 0;
		out->echo_psn = 0;
		out->echo_sport = out->pkts = out->ce_pkts = out->rwnd = 0;
	} else if (h[1] == LUMEN_DP_DATA || h[1] == LUMEN_DP_PROBE) {
		out->ts_ns = lumen_dp_get64(h + 12);
		out->msg_id = h[1] == LUMEN_DP_DATA ? lumen_dp_get32(h + 20) : 0;
		out->msg_off = h[1] == LUMEN_DP_DATA ? lumen_dp_get32(h + 24) : 0;
		out->msg_len = h[1] == LUMEN_DP_DATA ? lumen_dp_get32(h + 28) : 0;
		out->echo_ts = out->sack = 0;
		out->echo_psn = 0;
		out->echo_sport = out->pkts = out->ce_pkts = out->rwnd = 0;
	} else {
		out->echo_ts = lumen_dp_get64(h + 12);
		out->sack = lumen_dp_get64(h + 20);
		out->echo_psn = lumen_dp_get32(h + 28);
		out->echo_sport = lumen_dp_get16(h + 32);
		out->pkts = lumen_dp_get16(h + 34);
		out->ce_pkts = lumen_dp_get16(h + 36);
		out->rwnd = lumen_dp_get16(h + 38);
		out->ts_ns = 0;
		out->msg_id = out->msg_off = out->msg_len = 0;
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Builder                                                                 */

/*
 * Write the frame of *p into buf (room bytes). Returns the frame length or a
 * negative lumen_dp_error, having written nothing. It refuses
 * what the parser would refuse (so every frame it writes parses back to *p),
 * and sets what the format fixes: ethertype, IHL 5, id 0, DF, TTL 64, UDP,
 * lengths, IPv4 checksum, UDP checksum 0. Used for every type (a PROBE's TTL
 * and id are then set by lumen_dp_build_probe, dp_probe.h).
 */
LUMEN_INLINE int lumen_dp_build(__u8 *buf, __u32 room, const struct lumen_dp_pkt *p)
{
	__u32 t = p->type, hlen = lumen_dp_type_hlen(t), optlen = 0, ext_len = 0, ip_len, flen, i;
	__u8 *ip, *h, *dst;
	int rc;

	if (hlen == 0)
		return -LUMEN_DP_ETYPE;
	if (p->flags & ~lumen_dp_type_flags(t))
		return -LUMEN_DP_EFLAGS;
	if (p->ecn > LUMEN_DP_ECN_MASK)
		return -LUMEN_DP_EINVAL;
	if (p->flags & LUMEN_DP_F_INT) {
		rc = lumen_dp_int_check(p->ext, p->ext_len, t);
		if (rc)
			return rc;
		optlen = p->ext[1];
		ext_len = (optlen + 3) & ~3u;
	} else if (p->ext_len) {
		return -LUMEN_DP_EEXT;
	}
	rc = lumen_dp_payload_check(t, p->payload_len, p->msg_off, p->msg_len);
	if (rc)
		return rc;
	if (p->payload_len > LUMEN_DP_IP_LEN_MAX)
		return -LUMEN_DP_EINVAL;
	ip_len = LUMEN_DP_IP_HLEN + LUMEN_DP_UDP_HLEN + hlen + ext_len + p->payload_len;
	if (ip_len > LUMEN_DP_IP_LEN_MAX)
		return -LUMEN_DP_EINVAL;
	flen = LUMEN_DP_ETH_HLEN + ip_len;
	if (flen > room)
		return -LUMEN_DP_ENOSPACE;
	dst = buf + LUMEN_DP_HDR_OFF + hlen + ext_len;
#if defined(__bpf__)
	if (p->payload && p->payload != dst)
		return -LUMEN_DP_EINVAL; /* a run-time length: bpf_skb_store_bytes it */
#endif

	for (i = 0; i < 6; i++) {
		buf[i] = p->eth_dst[i];
		buf[6 + i] = p->eth_src[i];
	}
	lumen_dp_put16(buf + 12, LUMEN_DP_ETHERTYPE_IPV4);

	ip = buf + LUMEN_DP_IP_OFF;
	ip[0] = 0x40 | LUMEN_DP_IP_HLEN / 4;
	ip[1] = p->ecn; /* DSCP 0 */
	lumen_dp_put16(ip + 2, (__u16)ip_len);
	lumen_dp_put16(ip + 4, 0); /* id: DF datagrams are never reassembled (RFC 6864) */
	lumen_dp_put16(ip + 6, LUMEN_DP_IP_DF);
	ip[8] = LUMEN_DP_IP_TTL;
	ip[9] = LUMEN_DP_IP_PROTO_UDP;
	lumen_dp_put16(ip + 10, lumen_dp_ip_csum(p->ecn, ip_len, p->ip_src, p->ip_dst));
	lumen_dp_put32(ip + 12, p->ip_src);
	lumen_dp_put32(ip + 16, p->ip_dst);

	lumen_dp_put16(buf + LUMEN_DP_UDP_OFF, p->sport);
	lumen_dp_put16(buf + LUMEN_DP_UDP_OFF + 2, p->dport);
	lumen_dp_put16(buf + LUMEN_DP_UDP_OFF + 4, (__u16)(ip_len - LUMEN_DP_IP_HLEN));
	lumen_dp_put16(buf + LUMEN_DP_UDP_OFF + 6, 0);

	h = buf + LUMEN_DP_HDR_OFF;
	h[0] = LUMEN_DP_VERSION;
	h[1] = (__u8)t;
	h[2] = p->flags;
	h[3] = (__u8)(ext_len / 4);
	lumen_dp_put32(h + 4, p->conn_id);
	lumen_dp_put32(h + 8, p->psn);
	if (t == LUMEN_DP_DATA) {
		lumen_dp_put64(h + 12, p->ts_ns);
		lumen_dp_put32(h + 20, p->msg_id);
		lumen_dp_put32(h + 24, p->msg_off);
		lumen_dp_put32(h + 28, p->msg_len);
	} else if (t == LUMEN_DP_PROBE) {
		lumen_dp_put64(h + 12, p->ts_ns);
	} else if (t >= LUMEN_DP_SYN) {
		lumen_dp_put64(h + 12, p->ts_ns);
		lumen_dp_put32(h + 20, p->cookie);
	} else {
		lumen_dp_put64(h + 12, p->echo_ts);
		lumen_dp_put64(h + 20, p->sack);
		lumen_dp_put32(h + 28, p->echo_psn);
		lumen_dp_put16(h + 32, p->echo_sport);
		lumen_dp_put16(h + 34, p->pkts);
		lumen_dp_put16(h + 36, p->ce_pkts);
		lumen_dp_put16(h + 38, p->rwnd);
	}
	/*
	 * The option, then zeros to the word. BPF can call no memcpy: a
	 * constant bound, unrolled. Elsewhere the builtins (a 40-step loop per
	 * frame costs a datapath more than the rest of the header).
	 */
#if defined(__bpf__)
#pragma clang loop unroll(full)
	for (i = 0; i < LUMEN_DP_EXT_MAX; i++) {
		if (i < optlen)
			h[hlen + i] = p->ext[i];
		else if (i < ext_len)
			h[hlen + i] = 0;
	}
#else
	if (ext_len) {
		__builtin_memcpy(h + hlen, p->ext, optlen);
		__builtin_memset(h + hlen + optlen, 0, ext_len - optlen);
	}
#endif
#if !defined(__bpf__)
	if (p->payload && p->payload != dst)
		__builtin_memmove(dst, p->payload, p->payload_len);
#endif
	return (int)flen;
}

/* ---------------------------------------------------------------------- */
/* ECN in place (switches, tests)                                          */

/*
 * Set the ECN field of an IPv4 frame to ecn, updating the header checksum
 * incrementally (a valid checksum stays valid). 0 or a negative
 * lumen_dp_error.
 */
LUMEN_INLINE int lumen_dp_set_ecn(__u8 *frame, __u32 len, __u32 ecn)
{
	__u16 old_word, new_word;
	int rc = lumen_dp_ip_check(frame, len);
	__u8 *ip;

	if (rc)
		return rc;
	if (ecn > LUMEN_DP_ECN_MASK)
		return -LUMEN_DP_EINVAL;
	ip = frame + LUMEN_DP_IP_OFF;
	old_word = lumen_dp_get16(ip); /* version/IHL and TOS: one checksum word */
	new_word = (__u16)((old_word & ~(__u32)LUMEN_DP_ECN_MASK) | ecn);
	ip[1] = (__u8)new_word;
	lumen_dp_put16(ip + 10, lumen_dp_csum_replace16(lumen_dp_get16(ip + 10), old_word, new_word));
	return 0;
}

/*
 * A switch's congestion mark (RFC 3168): CE on an ECN-capable frame.
 * Returns 1 when the frame now carries CE (it may have already), 0 when it
 * is Not-ECT (the switch drops it instead), or a negative lumen_dp_error.
 */
LUMEN_INLINE int lumen_dp_mark_ce(__u8 *frame, __u32 len)
{
	int rc = lumen_dp_ip_check(frame, len);

	if (rc)
		return rc;
	if ((frame[LUMEN_DP_IP_OFF + 1] & LUMEN_DP_ECN_MASK) == LUMEN_DP_ECN_NOT_ECT)
		return 0;
	rc = lumen_dp_set_ecn(frame, len, LUMEN_DP_ECN_CE);
	return rc ? rc : 1;
}

LUMEN_INLINE const char *lumen_dp_strerror(int err)
{
	/* Negate in unsigned arithmetic: -INT_MIN would overflow. */
	switch (err < 0 ? 0u - (__u32)err : (__u32)err) {
	case LUMEN_DP_OK:
		return "ok";
	case LUMEN_DP_ESHORT_ETH:
		return "frame shorter than an Ethernet header";
	case LUMEN_DP_EETHERTYPE:
		return "not an IPv4 frame";
	case LUMEN_DP_ESHORT_IP:
		return "frame shorter than an IPv4 header";
	case LUMEN_DP_EIP_VERSION:
		return "IP version not 4";
	case LUMEN_DP_EIP_IHL:
		return "IPv4 options present";
	case LUMEN_DP_EIP_CSUM:
		return "bad IPv4 header checksum";
	case LUMEN_DP_EIP_LEN:
		return "IP total length too small for UDP";
	case LUMEN_DP_EIP_TRUNC:
		return "IP total length beyond the frame";
	case LUMEN_DP_EIP_FRAG:
		return "IPv4 fragment";
	case LUMEN_DP_EIP_PROTO:
		return "not UDP";
	case LUMEN_DP_EUDP_PORT:
		return "other UDP destination port";
	case LUMEN_DP_EUDP_LEN:
		return "UDP length does not match the IP length";
	case LUMEN_DP_ESHORT_HDR:
		return "lumen-dp header truncated";
	case LUMEN_DP_EVERSION:
		return "peer speaks another lumen-dp version";
	case LUMEN_DP_ETYPE:
		return "unknown lumen-dp packet type";
	case LUMEN_DP_EFLAGS:
		return "flags not defined for the packet type";
	case LUMEN_DP_EEXT_WORDS:
		return "extension longer than 10 words";
	case LUMEN_DP_EEXT_LEN:
		return "extension beyond the packet";
	case LUMEN_DP_EEXT:
		return "extension without the INT flag";
	case LUMEN_DP_EINT:
		return "INT flag without a valid INT option";
	case LUMEN_DP_EINT_DIR:
		return "INT echo on DATA or INT request on ACK";
	case LUMEN_DP_EINT_PAD:
		return "bad padding after the INT option";
	case LUMEN_DP_EEMPTY:
		return "DATA without payload";
	case LUMEN_DP_EMSG_LEN:
		return "DATA with message length 0";
	case LUMEN_DP_EMSG_RANGE:
		return "DATA payload beyond the message length";
	case LUMEN_DP_EPAYLOAD:
		return "ACK or NACK with payload";
	case LUMEN_DP_ENOSPACE:
		return "no room for the frame";
	case LUMEN_DP_EINVAL:
		return "invalid argument";
	default:
		return "unknown error";
	}
}

#endif /* LUMEN_DP_WIRE_H */
