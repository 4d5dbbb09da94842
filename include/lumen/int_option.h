/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * lumen/int_option.h - the lumen in-band network telemetry (INT) TCP option,
 * wire format version 1: layout, encoder, parser, validation and
 * wraparound-safe deltas. One definition shared by the eBPF sockops program,
 * the software INT switch, the kernel module and the C++ tools.
 *
 * Why this format
 * ---------------
 * PowerTCP needs, for every egress port a data segment crosses, the queue
 * length, a transmitted-byte counter, a timestamp and the link rate, all taken
 * when the segment is dequeued (thesis §2.2.3, HPCC-style INT). The option must
 * fit the 40-byte TCP option space next to the timestamp option, which Linux
 * always writes as NOP,NOP,TS (12 bytes); options written from BPF are padded
 * to 4 bytes, so 28 bytes are left: a 5-byte header plus three 7-byte hop
 * records (26 bytes) fit, and four hops (33 bytes) or five (40 bytes) fit when
 * timestamps are off.
 *
 * It is an RFC 6994 experimental option: kind 253 followed by a 16-bit
 * experiment identifier (ExID), then a version, so the format can evolve and a
 * parser can refuse what it does not understand.
 *
 * Header (5 bytes)
 * ----------------
 *    0                   1                   2                   3
 *    0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *   +---------------+---------------+-------------------------------+
 *   |  Kind = 253   |  Length       |        ExID = 0x4C55 ("LU")   |
 *   +-----+-+-+-----+---------------+-------------------------------+
 *   | Ver |E|O|Count|  hop record 0 ...  (7 bytes each)
 *   +-----+-+-+-----+---------------------------------------------
 *
 *   Length   5 + 7 * slots, slots = number of hop records present (1..5 in a
 *            request, 0..5 in an echo); Length <= 40.
 *   Ver      3 bits, = 1 for this layout. Any other value is refused.
 *   E        echo: 0 = request (carried by data segments; switches fill it),
 *            1 = echo (carried by ACKs; the receiver copies the filled hops of
 *            the latest request it received; switches leave it alone).
 *   O        overflow: a switch found every slot filled and could not record
 *            itself, so the telemetry does not cover the whole path.
 *   Count    number of filled hop records, in path order. Request: the next
 *            switch writes slot Count and increments Count. Echo: Count equals
 *            slots (only filled records are echoed).
 *
 * Hop record (7 bytes = 56 bits, big-endian bit order)
 * ----------------------------------------------------
 *    0                   1                   2                   3
 *    0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *   +-------------+-----+-----------------------------------+-------
 *   | rate mant 7 |exp 3|   timestamp (18 bits)             | tx ...
 *   +-------------+-----+-----------------------------------+-------
 *    3                   4                   5
 *    2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5
 *   -----------------------+---------------------------+
 *     tx bytes (14 bits)   |  queue length (14 bits)   |
 *   -----------------------+---------------------------+
 *
 *   rate     link rate of the egress port in Mbit/s, as a decimal float:
 *            rate = mant * 10^exp. Exact for every usual rate (10M, 100M, 1G,
 *            2.5G, 10G, 12.5G, 25G, 40G, 100G, 400G, 800G, ...) and below
 *            128M; any other rate is rounded to nearest at the smallest
 *            exponent whose mantissa fits 7 bits: under 0.51% error when
 *            that mantissa is >= 100, at most 3.71% in general (135M is sent
 *            as 140M; no 10-bit code covers 1..1.6e6 Mbit/s to 0.5%, that
 *            would take ~1440 log-spaced codes). Code 0 means
 *            "rate unknown" and makes the hop unusable. Rates above
 *            LUMEN_INT_RATE_MAX_MBPS and non-canonical codes (mant = 0 with
 *            exp != 0) are malformed.
 *   ts       dequeue time, units of 16 ns, modulo 2^18 (wraps every 4.19 ms).
 *   tx       bytes transmitted by the port so far, in units of 2^k bytes,
 *            modulo 2^14.
 *   qlen     egress queue length in units of 2^k bytes, saturating at
 *            2^14 - 1 (= "at least this much").
 *
 *   The byte unit 2^k depends only on the hop's rate (lumen_int_unit_shift):
 *   k is the smallest shift for which 2^14 units hold at least 2^22 ns
 *   (4.19 ms) of traffic at line rate. Both the switch and the host derive it
 *   from the rate code, so no bits are spent on it, and the precision of the
 *   byte fields scales with the link: 4 B units at 100 Mbit/s, 32 B at 1 Gbit/s,
 *   512 B at 10 Gbit/s, 4 KiB at 100 Gbit/s.
 *
 * Wraparound rules
 * ----------------
 * Only differences between two records of the same hop are meaningful (each
 * switch has its own clock and counters; no synchronisation is needed):
 *   dt  = (ts_cur - ts_prev) mod 2^18 ticks. A sample is usable only when
 *         0 < dt < 15/16 * 2^17 ticks (1.97 ms): beyond half the wrap period
 *         the difference is ambiguous, so the sample is stale (the 1/16
 *         margin absorbs rate rounding, below).
 *   dtx = (tx_cur - tx_prev) mod 2^14 units. Because the unit rule makes the
 *         counter wrap no sooner than the timestamp at line rate, a usable dt
 *         implies less than half a wrap of bytes; a dtx larger than the link
 *         could have sent in dt (rate + 1/16 for rate rounding, plus one
 *         unit of quantization per record) means the counter is not
 *         trustworthy (switch restart, path change) and the sample is
 *         refused.
 *   qlen is not a counter and never wraps.
 *   A change of the rate code between two records of a hop changes the
 *   units: the sample is refused and the caller re-baselines.
 *
 * Version 2: wide records and partial echoes
 * ------------------------------------------
 * Version 1's 18-bit timestamp limits a usable sample to echoes < 1.97 ms
 * apart: delayed-ACK, application-limited and long-RTT flows (and every
 * flow on an emulated host) never use INT. And when SACK blocks fill the
 * option space in loss recovery, no echo fits at all. Version 2 answers
 * both, at the price of one hop next to TCP timestamps (2 instead of 3):
 *
 *   +---------------+---------------+-------------------------------+
 *   |  Kind = 253   |  Length       |        ExID = 0x4C55          |
 *   +-----+-+-+-----+-------+-------+-------------------------------+
 *   | Ver |E|O|Count| First | Hops  |  hop record 0 ... (9 bytes each)
 *   +-----+-+-+-----+-------+-------+------------------------------
 *
 *   Length   6 + 9 * slots, slots 1..3 in a request, 0..3 in an echo
 *            (6 + 27 = 33 <= 40; two slots, 24 bytes, fit next to TCP
 *            timestamps, one, 15 bytes, also next to one SACK block).
 *   Ver      2. E, O and Count as in version 1.
 *   First    4 bits; echo: the path index of its first record. Request: 0.
 *   Hops     4 bits; echo: how many hops the request had recorded (Count
 *            of the request), so that a partial echo is not taken for a
 *            path change. Request: 0. An echo carries records
 *            First .. First + Count - 1 of Hops; a full echo has First 0
 *            and Count = Hops, a partial one (lumen_int_write_echo_fit)
 *            the one hop with the longest queueing delay, when the full
 *            echo does not fit.
 *
 *   Hop record (9 bytes = 72 bits): rate 10 | ts 24 | tx 24 | qlen 14, the
 *   fields as in version 1 but ts 16 ns ticks mod 2^24 (wraps every 268 ms:
 *   samples usable up to 15/16 of half of that, 126 ms) and tx mod 2^24
 *   units of the same 2^k bytes (wraps no sooner than 4.29 s at line rate,
 *   so a usable dt still implies less than half a wrap of bytes). The
 *   wraparound rules are version 1's with these widths.
 */
#ifndef LUMEN_INT_OPTION_H
#define LUMEN_INT_OPTION_H

#include "types.h"

#define LUMEN_INT_KIND 253 /* RFC 4727 experimental, with RFC 6994 ExID */
#define LUMEN_INT_EXID 0x4C55 /* "LU" */
#define LUMEN_INT_VERSION 1 /* the default: three hops next to TCP timestamps */
#define LUMEN_INT_VERSION_WIDE 2 /* wide records, partial echoes (above) */

#define LUMEN_INT_HDR_LEN 5
#define LUMEN_INT_HOP_LEN 7
#define LUMEN_INT_MAX_HOPS 5
#define LUMEN_INT_MAX_LEN (LUMEN_INT_HDR_LEN + LUMEN_INT_MAX_HOPS * LUMEN_INT_HOP_LEN)
#define LUMEN_INT_OPT_LEN(slots) (LUMEN_INT_HDR_LEN + (slots)*LUMEN_INT_HOP_LEN)
/* Version 2 (wide) layout. */
#define LUMEN_INT_V2_HDR_LEN 6
#define LUMEN_INT_V2_HOP_LEN 9
#define LUMEN_INT_V2_MAX_HOPS 3
#define LUMEN_INT_V2_OPT_LEN(slots) (LUMEN_INT_V2_HDR_LEN + (slots)*LUMEN_INT_V2_HOP_LEN)
/*
 * A buffer an option is parsed from or written to in BPF: 40 bytes hold any
 * option, but the verifier bounds a record's offset by the loop index and
 * the larger version's record, not by the length checks (6 + 4 * 9 + 9).
 */
#define LUMEN_INT_BPF_BUF 64

/* Byte 4 of the header. */
#define LUMEN_INT_VER_SHIFT 5
#define LUMEN_INT_FLAG_ECHO 0x10
#define LUMEN_INT_FLAG_OVERFLOW 0x08
#define LUMEN_INT_COUNT_MASK 0x07

/* Hop record field widths. */
#define LUMEN_INT_RATE_BITS 10
#define LUMEN_INT_TS_BITS 18
#define LUMEN_INT_TX_BITS 14
#define LUMEN_INT_QLEN_BITS 14
#define LUMEN_INT_TS_MASK ((1u << LUMEN_INT_TS_BITS) - 1)
#define LUMEN_INT_TX_MASK ((1u << LUMEN_INT_TX_BITS) - 1)
#define LUMEN_INT_V2_TS_BITS 24
#define LUMEN_INT_V2_TX_BITS 24
#define LUMEN_INT_V2_TS_MASK ((1u << LUMEN_INT_V2_TS_BITS) - 1)
#define LUMEN_INT_V2_TX_MASK ((1u << LUMEN_INT_V2_TX_BITS) - 1)
#define LUMEN_INT_QLEN_MAX ((1u << LUMEN_INT_QLEN_BITS) - 1)
#define LUMEN_INT_TS_UNIT_SHIFT 4 /* 16 ns per tick */
#define LUMEN_INT_TS_UNIT_NS (1u << LUMEN_INT_TS_UNIT_SHIFT)
/* Period covered by 2^14 byte units at line rate and by 2^18 ts ticks. */
#define LUMEN_INT_WRAP_NS (1ull << (LUMEN_INT_TS_BITS + LUMEN_INT_TS_UNIT_SHIFT))
/*
 * Largest usable dt, exclusive: 15/16 of half the wrap (1.97 ms). The margin
 * keeps the byte counter below half a wrap even when the true link rate is
 * up to 6.6% above the encoded one (rounding costs at most 3.71%).
 */
#define LUMEN_INT_DT_MAX_TICKS ((1u << (LUMEN_INT_TS_BITS - 1)) - (1u << (LUMEN_INT_TS_BITS - 5)))
#define LUMEN_INT_V2_DT_MAX_TICKS ((1u << (LUMEN_INT_V2_TS_BITS - 1)) - (1u << (LUMEN_INT_V2_TS_BITS - 5)))

#define LUMEN_INT_RATE_EXP_BITS 3
#define LUMEN_INT_RATE_MANT_MAX 127
#define LUMEN_INT_RATE_MAX_MBPS 1600000u /* 1.6 Tbit/s */

enum lumen_int_error {
	LUMEN_INT_OK = 0,
	LUMEN_INT_ETRUNCATED = 1, /* buffer shorter than the option */
	LUMEN_INT_EKIND = 2, /* not kind 253 */
	LUMEN_INT_ELENGTH = 3, /* length not 5 + 7n */
	LUMEN_INT_EEXID = 4, /* another experiment's option */
	LUMEN_INT_EVERSION = 5, /* a version this code does not speak */
	LUMEN_INT_EHOPS = 6, /* more than 5 hop slots (length above 40) */
	LUMEN_INT_ECOUNT = 7, /* count beyond slots; echo with empty slots */
	LUMEN_INT_ERATE = 8, /* a filled hop has a malformed rate code */
	LUMEN_INT_ENOSPACE = 9, /* encoder: destination too small */
	LUMEN_INT_EFULL = 10, /* switch: no free slot (overflow flagged) */
	LUMEN_INT_EINVAL = 11, /* encoder: bad argument */
	LUMEN_INT_ERROR_COUNT
};

/* One hop record, fields as on the wire (already masked to their widths). */
struct lumen_int_hop {
	__u32 ts; /* 16 ns ticks mod 2^18 (version 2: 2^24) */
	__u32 tx; /* 2^k byte units mod 2^14 (version 2: 2^24) */
	__u16 qlen; /* 2^k byte units, saturating */
	__u16 rate; /* rate code, 0 = unknown */
	__u16 pad;
};

/* A parsed option. */
struct lumen_int_opt {
	__u8 version;
	__u8 flags; /* LUMEN_INT_FLAG_ECHO | LUMEN_INT_FLAG_OVERFLOW */
	__u8 slots; /* hop records present on the wire */
	__u8 count; /* hop records filled, <= slots */
	__u8 first_hop; /* echo: path index of hops[0] (version 2; else 0) */
	__u8 path_hops; /* echo: hops the request recorded (version 1: count) */
	__u8 pad[2];
	struct lumen_int_hop hops[LUMEN_INT_MAX_HOPS];
};

/* Difference between two records of one hop, in natural units. */
struct lumen_int_delta {
	__u64 dt_ns; /* time between the two dequeues, > 0 */
	__u64 tx_bytes; /* bytes the port sent in between */
	__u64 qlen_prev_bytes; /* queue at the earlier record */
	__u64 qlen_bytes; /* queue at the later record */
	__u32 rate_mbps; /* link rate, > 0 */
	__u32 saturated; /* qlen field hit its maximum in either record */
};

enum lumen_int_delta_error {
	LUMEN_INT_DELTA_OK = 0,
	LUMEN_INT_DELTA_ERATE = 1, /* rate unknown, or changed between records */
	LUMEN_INT_DELTA_ETIME = 2, /* dt == 0 or dt >= LUMEN_INT_DT_MAX_TICKS */
	LUMEN_INT_DELTA_ECOUNTER = 3, /* more bytes than the link could send */
};

/* ---------------------------------------------------------------------- */
/* Link rate code                                                          */

/* Rate in Mbit/s of a code; 0 for "unknown" and for anything malformed. */
LUMEN_INLINE __u32 lumen_int_rate_mbps(__u16 code)
{
	__u32 mant = code >> LUMEN_INT_RATE_EXP_BITS;
	__u32 exp = code & ((1u << LUMEN_INT_RATE_EXP_BITS) - 1);
	__u64 rate = mant;
	__u32 i;

	if (code >> LUMEN_INT_RATE_BITS)
		return 0; /* wider than the wire field */

	/* exp <= 7 and mant <= 127: at most 1.27e9, no overflow in u64. */
	for (i = 0; i < (1u << LUMEN_INT_RATE_EXP_BITS); i++) {
		if (i >= exp)
			break;
		rate *= 10;
	}
	if (rate > LUMEN_INT_RATE_MAX_MBPS)
		return 0;
	return (__u32)rate;
}

/* A rate code is valid when it is 0 (unknown) or canonical and in range. */
LUMEN_INLINE int lumen_int_rate_code_valid(__u16 code)
{
	if (code == 0)
		return 1;
	if (code >> LUMEN_INT_RATE_BITS)
		return 0;
	if ((code >> LUMEN_INT_RATE_EXP_BITS) == 0)
		return 0;
	return lumen_int_rate_mbps(code) != 0;
}

/*
 * Encode a rate in Mbit/s; rounds to nearest with the smallest exponent that
 * keeps the mantissa within 7 bits. Returns 0 for rates of 0 or above the
 * maximum (0 is "unknown" on the wire, so callers must check).
 */
LUMEN_INLINE __u16 lumen_int_rate_encode(__u32 mbps)
{
	__u64 scale = 1;
	__u32 exp;

	if (mbps == 0 || mbps > LUMEN_INT_RATE_MAX_MBPS)
		return 0;
	for (exp = 0; exp < (1u << LUMEN_INT_RATE_EXP_BITS); exp++) {
		__u64 mant = lumen_div64((__u64)mbps + scale / 2, scale);

		if (mant <= LUMEN_INT_RATE_MANT_MAX)
			return (__u16)((mant << LUMEN_INT_RATE_EXP_BITS) | exp);
		scale *= 10;
	}
	return 0; /* unreachable for mbps <= LUMEN_INT_RATE_MAX_MBPS */
}

/*
 * Shift k of the byte unit 2^k for a link of rate_mbps: the smallest k with
 * 2^(14+k) bytes >= rate * 2^22 ns, i.e. 125 * 2^k >= 4 * rate_mbps.
 */
LUMEN_INLINE __u32 lumen_int_unit_shift(__u32 rate_mbps)
{
	__u64 need = (__u64)rate_mbps * 4;
	__u32 k;

	for (k = 0; k < 32; k++) {
		if ((125ull << k) >= need)
			break;
	}
	return k;
}

/* ---------------------------------------------------------------------- */
/* Versions                                                                */

/* Whether this code speaks version ver. */
LUMEN_INLINE int lumen_int_version_known(__u32 ver)
{
	return ver == LUMEN_INT_VERSION || ver == LUMEN_INT_VERSION_WIDE;
}

LUMEN_INLINE __u32 lumen_int_hdr_len(__u32 ver)
{
	return ver == LUMEN_INT_VERSION_WIDE ? LUMEN_INT_V2_HDR_LEN : LUMEN_INT_HDR_LEN;
}

LUMEN_INLINE __u32 lumen_int_hop_len(__u32 ver)
{
	return ver == LUMEN_INT_VERSION_WIDE ? LUMEN_INT_V2_HOP_LEN : LUMEN_INT_HOP_LEN;
}

/* Most hop slots an option of version ver can have (40 bytes). */
LUMEN_INLINE __u32 lumen_int_max_slots(__u32 ver)
{
	return ver == LUMEN_INT_VERSION_WIDE ? LUMEN_INT_V2_MAX_HOPS : LUMEN_INT_MAX_HOPS;
}

LUMEN_INLINE __u32 lumen_int_opt_len(__u32 ver, __u32 slots)
{
	return lumen_int_hdr_len(ver) + slots * lumen_int_hop_len(ver);
}

LUMEN_INLINE __u32 lumen_int_ts_mask(__u32 ver)
{
	return ver == LUMEN_INT_VERSION_WIDE ? LUMEN_INT_V2_TS_MASK : LUMEN_INT_TS_MASK;
}

LUMEN_INLINE __u32 lumen_int_tx_mask(__u32 ver)
{
	return ver == LUMEN_INT_VERSION_WIDE ? LUMEN_INT_V2_TX_MASK : LUMEN_INT_TX_MASK;
}

/* Largest usable dt between two records of a hop, exclusive, in ticks and ns. */
LUMEN_INLINE __u32 lumen_int_dt_max_ticks(__u32 ver)
{
	return ver == LUMEN_INT_VERSION_WIDE ? LUMEN_INT_V2_DT_MAX_TICKS : LUMEN_INT_DT_MAX_TICKS;
}

LUMEN_INLINE __u64 lumen_int_dt_max_ns(__u32 ver)
{
	return (__u64)lumen_int_dt_max_ticks(ver) << LUMEN_INT_TS_UNIT_SHIFT;
}

/* ---------------------------------------------------------------------- */
/* Hop records                                                             */

/*
 * Build a hop record from natural units: a switch's clock in ns, its total
 * transmitted bytes (any width; only the low bits are kept), its queue in
 * bytes and its rate code. Queue lengths beyond the field saturate.
 */
LUMEN_INLINE void lumen_int_hop_make_v(struct lumen_int_hop *hop, __u32 ver, __u64 now_ns, __u64 tx_bytes,
				       __u64 qlen_bytes, __u16 rate_code)
{
	/* a code this format cannot carry is sent as "rate unknown" */
	__u16 code = lumen_int_rate_code_valid(rate_code) ? rate_code : 0;
	__u32 shift = lumen_int_unit_shift(lumen_int_rate_mbps(code));
	__u64 qlen_units = qlen_bytes >> shift;

	hop->ts = (__u32)(now_ns >> LUMEN_INT_TS_UNIT_SHIFT) & lumen_int_ts_mask(ver);
	hop->tx = (__u32)(tx_bytes >> shift) & lumen_int_tx_mask(ver);
	hop->qlen = (__u16)lumen_min_u64(qlen_units, LUMEN_INT_QLEN_MAX);
	hop->rate = code;
	hop->pad = 0;
}

/* A version 1 record (the default format). */
LUMEN_INLINE void lumen_int_hop_make(struct lumen_int_hop *hop, __u64 now_ns, __u64 tx_bytes, __u64 qlen_bytes,
				     __u16 rate_code)
{
	lumen_int_hop_make_v(hop, LUMEN_INT_VERSION, now_ns, tx_bytes, qlen_bytes, rate_code);
}

LUMEN_INLINE void lumen_int_hop_pack(const struct lumen_int_hop *hop, __u8 *out)
{
	__u64 v = ((__u64)(hop->rate & ((1u << LUMEN_INT_RATE_BITS) - 1)) << 46) |
		  ((__u64)(hop->ts & LUMEN_INT_TS_MASK) << 28) | ((__u64)(hop->tx & LUMEN_INT_TX_MASK) << 14) |
		  (__u64)(hop->qlen & LUMEN_INT_QLEN_MAX);
	__u32 i;

	for (i = 0; i < LUMEN_INT_HOP_LEN; i++)
		out[i] = (__u8)(v >> (8 * (LUMEN_INT_HOP_LEN - 1 - i)));
}

LUMEN_INLINE void lumen_int_hop_unpack(const __u8 *in, struct lumen_int_hop *hop)
{
	__u64 v = 0;
	__u32 i;

	for (i = 0; i < LUMEN_INT_HOP_LEN; i++)
		v = (v << 8) | in[i];
	hop->rate = (__u16)(v >> 46) & ((1u << LUMEN_INT_RATE_BITS) - 1);
	hop->ts = (__u32)(v >> 28) & LUMEN_INT_TS_MASK;
	hop->tx = (__u16)((v >> 14) & LUMEN_INT_TX_MASK);
	hop->qlen = (__u16)(v & LUMEN_INT_QLEN_MAX);
	hop->pad = 0;
}

/* Version 2: 72 bits, rate 10 | ts 24 | tx 24 | qlen 14, big-endian. */
LUMEN_INLINE void lumen_int_hop_pack_wide(const struct lumen_int_hop *hop, __u8 *out)
{
	/* the top 64 bits in v, the last 8 in the ninth byte */
	__u64 v = ((__u64)(hop->rate & ((1u << LUMEN_INT_RATE_BITS) - 1)) << 54) |
		  ((__u64)(hop->ts & LUMEN_INT_V2_TS_MASK) << 30) | ((__u64)(hop->tx & LUMEN_INT_V2_TX_MASK) << 6) |
		  (__u64)((hop->qlen & LUMEN_INT_QLEN_MAX) >> 8);
	__u32 i;

	for (i = 0; i < 8; i++)
		out[i] = (__u8)(v >> (8 * (7 - i)));
	out[8] = (__u8)(hop->qlen & 0xff);
}

LUMEN_INLINE void lumen_int_hop_unpack_wide(const __u8 *in, struct lumen_int_hop *hop)
{
	__u64 v = 0;
	__u32 i;

	for (i = 0; i < 8; i++)
		v = (v << 8) | in[i];
	hop->rate = (__u16)(v >> 54) & ((1u << LUMEN_INT_RATE_BITS) - 1);
	hop->ts = (__u32)(v >> 30) & LUMEN_INT_V2_TS_MASK;
	hop->tx = (__u32)(v >> 6) & LUMEN_INT_V2_TX_MASK;
	hop->qlen = (__u16)((((__u32)v & 0x3f) << 8) | in[8]);
	hop->pad = 0;
}

LUMEN_INLINE void lumen_int_hop_pack_v(const struct lumen_int_hop *hop, __u32 ver, __u8 *out)
{
	if (ver == LUMEN_INT_VERSION_WIDE)
		lumen_int_hop_pack_wide(hop, out);
	else
		lumen_int_hop_pack(hop, out);
}

LUMEN_INLINE void lumen_int_hop_unpack_v(const __u8 *in, __u32 ver, struct lumen_int_hop *hop)
{
	if (ver == LUMEN_INT_VERSION_WIDE)
		lumen_int_hop_unpack_wide(in, hop);
	else
		lumen_int_hop_unpack(in, hop);
}

/*
 * Wraparound-safe difference between two records of the same hop.
 * Returns LUMEN_INT_DELTA_OK and fills *d, or a lumen_int_delta_error and
 * leaves *d untouched.
 */
LUMEN_INLINE int lumen_int_hop_delta_v(const struct lumen_int_hop *prev, const struct lumen_int_hop *cur, __u32 ver,
				       struct lumen_int_delta *d)
{
	__u32 rate, shift, dts, dtx;
	__u64 dt_ns, tx_bytes, max_bytes;

	if (cur->rate != prev->rate)
		return LUMEN_INT_DELTA_ERATE;
	rate = lumen_int_rate_mbps(cur->rate);
	if (rate == 0)
		return LUMEN_INT_DELTA_ERATE;
	shift = lumen_int_unit_shift(rate);

	dts = (cur->ts - prev->ts) & lumen_int_ts_mask(ver);
	if (dts == 0 || dts >= lumen_int_dt_max_ticks(ver))
		return LUMEN_INT_DELTA_ETIME;
	dtx = (cur->tx - prev->tx) & lumen_int_tx_mask(ver);

	dt_ns = (__u64)dts << LUMEN_INT_TS_UNIT_SHIFT;
	tx_bytes = (__u64)dtx << shift;
	/*
	 * Plausibility: a port cannot send more than rate * dt. The encoded
	 * rate may be up to 3.71% below the true one (rounding), so allow
	 * rate * (1 + 1/16), plus one tick of timestamp rounding and one unit
	 * of quantization on each record.
	 */
	max_bytes = lumen_div64((__u64)rate * (dt_ns + LUMEN_INT_TS_UNIT_NS), 8000);
	max_bytes += (max_bytes >> 4) + (2ull << shift);
	if (tx_bytes > max_bytes)
		return LUMEN_INT_DELTA_ECOUNTER;
	d->dt_ns = dt_ns;
	d->tx_bytes = tx_bytes;
	d->qlen_prev_bytes = (__u64)prev->qlen << shift;
	d->qlen_bytes = (__u64)cur->qlen << shift;
	d->rate_mbps = rate;
	d->saturated = prev->qlen == LUMEN_INT_QLEN_MAX || cur->qlen == LUMEN_INT_QLEN_MAX;
	return LUMEN_INT_DELTA_OK;
}

/* Two records of version 1. */
LUMEN_INLINE int lumen_int_hop_delta(const struct lumen_int_hop *prev, const struct lumen_int_hop *cur,
				     struct lumen_int_delta *d)
{
	return lumen_int_hop_delta_v(prev, cur, LUMEN_INT_VERSION, d);
}

/* ---------------------------------------------------------------------- */
/* Whole option                                                            */

/*
 * Parse and validate an option of either version. buf points at the kind
 * byte, buf_len is how many bytes are readable there. Returns 0 and fills
 * *opt, or a negative lumen_int_error; on error *opt is left untouched.
 * Checks, in order (the first failing one is reported): buffer >= 2 bytes,
 * kind, length >= 4, length <= buffer, ExID, length >= 5, version, length =
 * header + n records, n <= the version's slots, count <= n, echo count == n
 * / request n >= 1, version 2: a request's byte 5 is 0, an echo's first +
 * count <= hops <= 3; rate codes of filled hops.
 */
LUMEN_INLINE int lumen_int_parse(const __u8 *buf, __u32 buf_len, struct lumen_int_opt *opt)
{
	struct lumen_int_opt tmp;
	__u32 len, slots, i, hdr, hop_len;
	__u8 ver, flags, count, first = 0, hops;

	if (buf_len < 2)
		return -LUMEN_INT_ETRUNCATED;
	if (buf[0] != LUMEN_INT_KIND)
		return -LUMEN_INT_EKIND;
	len = buf[1];
	if (len < 4)
		return -LUMEN_INT_ELENGTH;
	if (len > buf_len)
		return -LUMEN_INT_ETRUNCATED;
	if (((__u32)buf[2] << 8 | buf[3]) != LUMEN_INT_EXID)
		return -LUMEN_INT_EEXID;
	if (len < LUMEN_INT_HDR_LEN)
		return -LUMEN_INT_ELENGTH;
	/* the version comes before any layout check: a later version may differ */
	ver = buf[4] >> LUMEN_INT_VER_SHIFT;
	if (!lumen_int_version_known(ver))
		return -LUMEN_INT_EVERSION;
	hdr = lumen_int_hdr_len(ver);
	hop_len = lumen_int_hop_len(ver);
	if (len < hdr || (len - hdr) % hop_len)
		return -LUMEN_INT_ELENGTH;
	slots = (len - hdr) / hop_len;
	if (slots > lumen_int_max_slots(ver)) /* i.e. longer than 40 bytes */
		return -LUMEN_INT_EHOPS;
	flags = buf[4] & (LUMEN_INT_FLAG_ECHO | LUMEN_INT_FLAG_OVERFLOW);
	count = buf[4] & LUMEN_INT_COUNT_MASK;
	hops = count;
	if (count > slots)
		return -LUMEN_INT_ECOUNT;
	if (flags & LUMEN_INT_FLAG_ECHO) {
		if (count != slots)
			return -LUMEN_INT_ECOUNT;
	} else if (slots == 0) {
		return -LUMEN_INT_ELENGTH; /* a request must leave room */
	}
	if (ver == LUMEN_INT_VERSION_WIDE) {
		first = buf[5] >> 4;
		hops = buf[5] & 0x0f;
		if (!(flags & LUMEN_INT_FLAG_ECHO)) {
			if (buf[5])
				return -LUMEN_INT_ECOUNT; /* First and Hops belong to echoes */
			hops = count;
		} else if (hops > LUMEN_INT_V2_MAX_HOPS || (__u32)first + count > hops) {
			return -LUMEN_INT_ECOUNT;
		}
	}

	tmp.version = ver;
	tmp.flags = flags;
	tmp.slots = (__u8)slots;
	tmp.count = count;
	tmp.first_hop = first;
	tmp.path_hops = hops;
	tmp.pad[0] = 0;
	tmp.pad[1] = 0;
	for (i = 0; i < LUMEN_INT_MAX_HOPS; i++) {
		struct lumen_int_hop *hop = &tmp.hops[i];

		if (i >= slots) {
			hop->ts = 0;
			hop->tx = 0;
			hop->qlen = 0;
			hop->rate = 0;
			hop->pad = 0;
			continue;
		}
		lumen_int_hop_unpack_v(buf + hdr + i * hop_len, ver, hop);
		if (i < count && !lumen_int_rate_code_valid(hop->rate))
			return -LUMEN_INT_ERATE;
	}
	*opt = tmp;
	return 0;
}

LUMEN_INLINE __u8 lumen_int_hdr_byte_v(__u32 ver, __u8 flags, __u8 count)
{
	return (__u8)((ver << LUMEN_INT_VER_SHIFT) | (flags & (LUMEN_INT_FLAG_ECHO | LUMEN_INT_FLAG_OVERFLOW)) |
		      (count & LUMEN_INT_COUNT_MASK));
}

LUMEN_INLINE __u8 lumen_int_hdr_byte(__u8 flags, __u8 count)
{
	return lumen_int_hdr_byte_v(LUMEN_INT_VERSION, flags, count);
}

/* The header of an option of version ver with `slots` records; byte 5 of a
 * version 2 header is (first << 4 | hops), 0 in a request. */
LUMEN_INLINE void lumen_int_write_hdr_v(__u8 *buf, __u32 ver, __u32 slots, __u8 flags, __u8 count, __u8 byte5)
{
	buf[0] = LUMEN_INT_KIND;
	buf[1] = (__u8)lumen_int_opt_len(ver, slots);
	buf[2] = (__u8)(LUMEN_INT_EXID >> 8);
	buf[3] = (__u8)(LUMEN_INT_EXID & 0xff);
	buf[4] = lumen_int_hdr_byte_v(ver, flags, count);
	if (ver == LUMEN_INT_VERSION_WIDE)
		buf[5] = byte5;
}

LUMEN_INLINE void lumen_int_write_hdr(__u8 *buf, __u32 slots, __u8 flags, __u8 count)
{
	lumen_int_write_hdr_v(buf, LUMEN_INT_VERSION, slots, flags, count, 0);
}

/*
 * Write a request of version ver with room for `slots` hops (1 .. the
 * version's maximum), all empty. Returns the option length, or a negative
 * lumen_int_error.
 */
LUMEN_INLINE int lumen_int_write_request_v(__u8 *buf, __u32 buf_len, __u32 ver, __u32 slots)
{
	__u32 len, i;

	if (!lumen_int_version_known(ver) || slots == 0 || slots > lumen_int_max_slots(ver))
		return -LUMEN_INT_EINVAL;
	len = lumen_int_opt_len(ver, slots);
	if (buf_len < len)
		return -LUMEN_INT_ENOSPACE;
	lumen_int_write_hdr_v(buf, ver, slots, 0, 0, 0);
	/*
	 * Zero the slots. Fully unrolled for clang: a loop of byte stores with
	 * a run-time bound is otherwise turned into a memset() call, which BPF
	 * cannot make.
	 */
#ifdef __clang__
#pragma clang loop unroll(full)
#endif
	for (i = LUMEN_INT_HDR_LEN; i < LUMEN_INT_MAX_LEN; i++) {
		if (i < len && i >= lumen_int_hdr_len(ver))
			buf[i] = 0;
	}
	return (int)len;
}

/* A version 1 request. */
LUMEN_INLINE int lumen_int_write_request(__u8 *buf, __u32 buf_len, __u32 slots)
{
	return lumen_int_write_request_v(buf, buf_len, LUMEN_INT_VERSION, slots);
}

/*
 * Write the echo of records first .. first + count - 1 of a received request
 * (of either version; its own version), with its overflow flag. Returns the
 * option length, or a negative lumen_int_error. Version 1 has no room to say
 * which records an echo carries: only the whole (first 0, count = req->count).
 */
LUMEN_INLINE int lumen_int_write_echo_range(__u8 *buf, __u32 buf_len, const struct lumen_int_opt *req, __u32 first,
					    __u32 count)
{
	__u32 ver = req->version, hdr, hop_len, len, i;

	if (!lumen_int_version_known(ver) || req->count > lumen_int_max_slots(ver) || req->count > req->slots ||
	    first > req->count || count > req->count - first)
		return -LUMEN_INT_EINVAL;
	if (ver != LUMEN_INT_VERSION_WIDE && (first != 0 || count != req->count))
		return -LUMEN_INT_EINVAL;
	hdr = lumen_int_hdr_len(ver);
	hop_len = lumen_int_hop_len(ver);
	/*
	 * buf_len >= header + count records, said as a bound on count: so the
	 * compiler, too, sees that the hop loop stays inside buf (GCC 12 -O3
	 * warns about a short constant-size buffer otherwise).
	 */
	if (buf_len < hdr || count > (buf_len - hdr) / hop_len)
		return -LUMEN_INT_ENOSPACE;
	len = hdr + count * hop_len;
	lumen_int_write_hdr_v(buf, ver, count, LUMEN_INT_FLAG_ECHO | (req->flags & LUMEN_INT_FLAG_OVERFLOW),
			      (__u8)count, (__u8)(first << 4 | req->count));
	for (i = 0; i < LUMEN_INT_MAX_HOPS; i++) {
		if (i >= count || first + i >= LUMEN_INT_MAX_HOPS)
			break;
		lumen_int_hop_pack_v(&req->hops[first + i], ver, buf + hdr + i * hop_len);
	}
	return (int)len;
}

/* The echo of a whole request: its filled hops. */
LUMEN_INLINE int lumen_int_write_echo(__u8 *buf, __u32 buf_len, const struct lumen_int_opt *req)
{
	return lumen_int_write_echo_range(buf, buf_len, req, 0, req->count);
}

/*
 * The filled hop of a request with the longest queueing delay (qlen in
 * bytes over the link rate): the bottleneck a partial echo carries. Ties go
 * to the slower link, then to the later hop. A hop of unknown rate (a
 * record the sender cannot use) is chosen only when every filled hop's rate
 * is unknown (the later one). Returns its index, or -1 when no hop is filled.
 */
LUMEN_INLINE int lumen_int_bottleneck_hop(const struct lumen_int_opt *req)
{
	__u64 best_q = 0, best_rate = 0;
	int best = -1, best_unknown = 0;
	__u32 i;

	for (i = 0; i < LUMEN_INT_MAX_HOPS; i++) {
		const struct lumen_int_hop *h = &req->hops[i];
		__u64 rate, q;

		if (i >= req->count)
			break;
		rate = lumen_int_rate_mbps(h->rate);
		if (rate == 0) {
			if (best < 0 || best_unknown) {
				best = (int)i;
				best_unknown = 1;
			}
			continue;
		}
		q = (__u64)h->qlen << lumen_int_unit_shift((__u32)rate);
		/* q / rate > best_q / best_rate, without dividing (q < 2^35, rate < 2^21) */
		if (best < 0 || best_unknown || q * best_rate > best_q * rate ||
		    (q * best_rate == best_q * rate && rate <= best_rate)) {
			best = (int)i;
			best_unknown = 0;
			best_q = q;
			best_rate = rate;
		}
	}
	return best;
}

/*
 * An echo that fits in buf_len bytes (the option space left next to
 * timestamps and SACK blocks): the whole request's when it fits, else, in
 * version 2, its bottleneck hop alone (lumen_int_bottleneck_hop). Returns
 * the option length, or -LUMEN_INT_ENOSPACE when not even that fits (and
 * always for a version 1 request that does not fit whole).
 */
LUMEN_INLINE int lumen_int_write_echo_fit(__u8 *buf, __u32 buf_len, const struct lumen_int_opt *req)
{
	int b;

	if (!lumen_int_version_known(req->version))
		return -LUMEN_INT_EINVAL;
	if (req->count <= LUMEN_INT_MAX_HOPS && lumen_int_opt_len(req->version, req->count) <= buf_len)
		return lumen_int_write_echo(buf, buf_len, req);
	if (req->version != LUMEN_INT_VERSION_WIDE || req->count < 2)
		return -LUMEN_INT_ENOSPACE;
	b = lumen_int_bottleneck_hop(req);
	if (b < 0)
		return -LUMEN_INT_ENOSPACE;
	return lumen_int_write_echo_range(buf, buf_len, req, (__u32)b, 1);
}

/*
 * Switch side: record `hop` (made for the request's version,
 * lumen_int_hop_make_v) in the next free slot of the request option in buf
 * (already validated with lumen_int_parse). Returns the slot index used, or
 * -LUMEN_INT_EFULL after setting the overflow flag, or another negative error
 * when buf does not hold a request.
 */
LUMEN_INLINE int lumen_int_push_hop(__u8 *buf, __u32 buf_len, const struct lumen_int_hop *hop)
{
	__u32 len, slots, count, ver, hdr, hop_len, off;

	if (buf_len < LUMEN_INT_HDR_LEN || buf[0] != LUMEN_INT_KIND)
		return -LUMEN_INT_EINVAL;
	ver = buf[4] >> LUMEN_INT_VER_SHIFT;
	if (!lumen_int_version_known(ver))
		return -LUMEN_INT_EINVAL;
	hdr = lumen_int_hdr_len(ver);
	hop_len = lumen_int_hop_len(ver);
	len = buf[1];
	if (len < hdr || len > LUMEN_INT_MAX_LEN || len > buf_len || (len - hdr) % hop_len)
		return -LUMEN_INT_EINVAL;
	if (buf[4] & LUMEN_INT_FLAG_ECHO)
		return -LUMEN_INT_EINVAL;
	slots = (len - hdr) / hop_len;
	count = buf[4] & LUMEN_INT_COUNT_MASK;
	if (count >= slots) {
		buf[4] |= LUMEN_INT_FLAG_OVERFLOW;
		return -LUMEN_INT_EFULL;
	}
	/*
	 * The record's offset, bounded again per version for the BPF verifier
	 * (count < slots already keeps it inside the option; the compiler
	 * knows, so the bound is made opaque to it to survive)
	 */
	if (ver == LUMEN_INT_VERSION_WIDE) {
		off = count * LUMEN_INT_V2_HOP_LEN;
		LUMEN_OPAQUE(off);
		if (off > LUMEN_INT_MAX_LEN - LUMEN_INT_V2_HDR_LEN - LUMEN_INT_V2_HOP_LEN)
			return -LUMEN_INT_EINVAL;
		lumen_int_hop_pack_wide(hop, buf + LUMEN_INT_V2_HDR_LEN + off);
	} else {
		off = count * LUMEN_INT_HOP_LEN;
		LUMEN_OPAQUE(off);
		if (off > LUMEN_INT_MAX_LEN - LUMEN_INT_HDR_LEN - LUMEN_INT_HOP_LEN)
			return -LUMEN_INT_EINVAL;
		lumen_int_hop_pack(hop, buf + LUMEN_INT_HDR_LEN + off);
	}
	buf[4] = lumen_int_hdr_byte_v(ver, buf[4], (__u8)(count + 1));
	return (int)count;
}

LUMEN_INLINE const char *lumen_int_strerror(int err)
{
	/* Negate in unsigned arithmetic: -INT_MIN would overflow. */
	switch (err < 0 ? 0u - (__u32)err : (__u32)err) {
	case LUMEN_INT_OK:
		return "ok";
	case LUMEN_INT_ETRUNCATED:
		return "option truncated";
	case LUMEN_INT_EKIND:
		return "not an experimental option (kind 253)";
	case LUMEN_INT_ELENGTH:
		return "bad option length";
	case LUMEN_INT_EEXID:
		return "unknown experiment id";
	case LUMEN_INT_EVERSION:
		return "unsupported INT version";
	case LUMEN_INT_EHOPS:
		return "too many hops";
	case LUMEN_INT_ECOUNT:
		return "hop count beyond option length";
	case LUMEN_INT_ERATE:
		return "malformed link rate";
	case LUMEN_INT_ENOSPACE:
		return "no room for the option";
	case LUMEN_INT_EFULL:
		return "all hop slots filled";
	case LUMEN_INT_EINVAL:
		return "invalid argument";
	default:
		return "unknown error";
	}
}

#endif /* LUMEN_INT_OPTION_H */
