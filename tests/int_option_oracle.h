/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * tests/int_option_oracle.h - what the INT option documentation (versions 1
 * and 2) says the parser, the switch-side push, the echo writers and the hop
 * delta must answer, written independently of include/lumen/int_option.h:
 * from its header comment, not its code. Records are read and written one
 * bit at a time from the documented field order and widths, not with the
 * header's shifts. Shared by the seeded fuzz test (C++) and the libFuzzer
 * target (C), which compare the header's functions against it.
 *
 * Only the types, the error numbers and the flag values come from the
 * header: they are the interface, not the behaviour under test.
 *
 * Where the documentation is silent or says two things, the choice made
 * here is said where it is made (a version 2 echo without records; which of
 * several hops of unknown rate is the bottleneck).
 */
#ifndef LUMEN_TESTS_INT_OPTION_ORACLE_H
#define LUMEN_TESTS_INT_OPTION_ORACLE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "lumen/int_option.h"

/* ---------------------------------------------------------------------- */
/* Layout per version                                                      */

/* Versions the documentation defines: 1, and 2 (wide records, partial echoes). */
static inline int lumen_doc_version_known(unsigned ver)
{
	return ver == 1 || ver == 2;
}

struct lumen_doc_layout {
	unsigned hdr; /* header bytes: 5, or 6 with version 2's First/Hops byte */
	unsigned rec; /* bytes per hop record: 7 (56 bits) or 9 (72 bits) */
	unsigned max_slots; /* records in at most 40 bytes */
	unsigned ts_bits, tx_bits; /* rate is 10 bits and qlen 14 in both */
};

static inline struct lumen_doc_layout lumen_doc_layout_of(unsigned ver)
{
	struct lumen_doc_layout l;

	if (ver == 2) {
		l.hdr = 6;
		l.rec = 9;
		l.max_slots = 3; /* 6 + 27 = 33 <= 40 < 6 + 36 */
		l.ts_bits = 24;
		l.tx_bits = 24;
	} else {
		l.hdr = 5;
		l.rec = 7;
		l.max_slots = 5; /* 5 + 35 = 40 */
		l.ts_bits = 18;
		l.tx_bits = 14;
	}
	return l;
}

/* ---------------------------------------------------------------------- */
/* Bits, big-endian: bit 0 is the most significant bit of byte 0          */

static inline uint32_t lumen_doc_get_bits(const uint8_t *p, unsigned pos, unsigned width)
{
	uint32_t v = 0;
	unsigned i;

	for (i = 0; i < width; i++) {
		const unsigned at = pos + i;

		v = (v << 1) | ((p[at / 8] >> (7 - at % 8)) & 1u);
	}
	return v;
}

/* Writes the low `width` bits of v (higher bits are not part of the field). */
static inline void lumen_doc_put_bits(uint8_t *p, unsigned pos, unsigned width, uint32_t v)
{
	unsigned i;

	for (i = 0; i < width; i++) {
		const unsigned at = pos + i;
		const uint8_t mask = (uint8_t)(0x80u >> (at % 8));

		if ((v >> (width - 1 - i)) & 1u)
			p[at / 8] |= mask;
		else
			p[at / 8] &= (uint8_t)~mask;
	}
}

/* A hop record of version ver: rate 10 | ts | tx | qlen 14, in that order. */
static inline void lumen_doc_hop_decode(const uint8_t *rec, unsigned ver, struct lumen_int_hop *h)
{
	const struct lumen_doc_layout l = lumen_doc_layout_of(ver);

	h->rate = (__u16)lumen_doc_get_bits(rec, 0, 10);
	h->ts = lumen_doc_get_bits(rec, 10, l.ts_bits);
	h->tx = lumen_doc_get_bits(rec, 10 + l.ts_bits, l.tx_bits);
	h->qlen = (__u16)lumen_doc_get_bits(rec, 10 + l.ts_bits + l.tx_bits, 14);
	h->pad = 0;
}

static inline void lumen_doc_hop_encode(const struct lumen_int_hop *h, unsigned ver, uint8_t *rec)
{
	const struct lumen_doc_layout l = lumen_doc_layout_of(ver);

	lumen_doc_put_bits(rec, 0, 10, h->rate);
	lumen_doc_put_bits(rec, 10, l.ts_bits, h->ts);
	lumen_doc_put_bits(rec, 10 + l.ts_bits, l.tx_bits, h->tx);
	lumen_doc_put_bits(rec, 10 + l.ts_bits + l.tx_bits, 14, h->qlen);
}

/* Two records field by field (a struct compare would also compare padding). */
static inline int lumen_doc_hop_equal(const struct lumen_int_hop *a, const struct lumen_int_hop *b)
{
	return a->rate == b->rate && a->ts == b->ts && a->tx == b->tx && a->qlen == b->qlen && a->pad == b->pad;
}

/* ---------------------------------------------------------------------- */
/* Rate code and byte unit                                                 */

/* The documented rate code rule: 0, or mant != 0, fits 10 bits, <= 1.6 Tbit/s. */
static inline int lumen_doc_rate_valid(unsigned code)
{
	unsigned mant = code >> 3, exp = code & 7, e;
	uint64_t r = mant;

	if (code == 0)
		return 1;
	if (code >= 1024 || mant == 0)
		return 0;
	for (e = 0; e < exp; e++)
		r *= 10;
	return r <= 1600000;
}

/* Mbit/s of a code, mant * 10^exp; 0 for "unknown" and malformed codes. */
static inline uint64_t lumen_doc_rate_mbps(unsigned code)
{
	uint64_t r = code >> 3;
	unsigned e;

	if (code == 0 || !lumen_doc_rate_valid(code))
		return 0;
	for (e = 0; e < (code & 7); e++)
		r *= 10;
	return r;
}

/* Byte unit 2^k: the smallest k with 2^(14+k) B >= rate * 2^22 ns. */
static inline unsigned lumen_doc_shift(uint64_t rate_mbps)
{
	unsigned k = 0;

	while ((1ull << (14 + k)) * 8000 < rate_mbps * (1ull << 22))
		k++;
	return k;
}

/* Rate code of a packed hop record (either version): its first 10 bits. */
static inline unsigned lumen_doc_hop_rate(const uint8_t *h)
{
	return lumen_doc_get_bits(h, 0, 10);
}

/* ---------------------------------------------------------------------- */
/* Parser                                                                  */

/*
 * The documented parse: 0 (accepted) and the option as the parser must
 * report it in *o (slots beyond the option zero), or the positive error of
 * the first check the input fails, in the documented order: buffer >= 2,
 * kind, length >= 4, length <= buffer, ExID, length >= 5, version (before
 * any layout check: another version may be laid out differently), length =
 * header + records, records <= the version's slots, count <= records, echo
 * count == records / request with a record, version 2: a request's byte 5
 * is 0 and an echo's First + Count <= Hops <= 3, then the rate codes of the
 * filled records. *o is written only on success.
 *
 * A version 2 echo without records (length 6) is accepted: the header
 * comment's field list says "1..3 in an echo", but its parser description,
 * the checks listed above, has no such check, and an echo of a request no
 * switch filled has no record to carry (as in version 1).
 */
static inline int lumen_doc_parse(const uint8_t *p, size_t n, struct lumen_int_opt *o)
{
	struct lumen_doc_layout l;
	unsigned len, ver, slots, count, first = 0, hops, i;
	int echo;

	if (n < 2)
		return LUMEN_INT_ETRUNCATED;
	if (p[0] != 253)
		return LUMEN_INT_EKIND;
	len = p[1];
	if (len < 4)
		return LUMEN_INT_ELENGTH;
	if (len > n)
		return LUMEN_INT_ETRUNCATED;
	if ((((unsigned)p[2] << 8) | p[3]) != 0x4C55)
		return LUMEN_INT_EEXID;
	if (len < 5)
		return LUMEN_INT_ELENGTH;
	ver = p[4] >> 5;
	if (!lumen_doc_version_known(ver)) /* a version this code does not speak: stop here */
		return LUMEN_INT_EVERSION;
	l = lumen_doc_layout_of(ver);
	if (len < l.hdr || (len - l.hdr) % l.rec != 0)
		return LUMEN_INT_ELENGTH;
	slots = (len - l.hdr) / l.rec;
	if (slots > l.max_slots)
		return LUMEN_INT_EHOPS;
	count = p[4] & 7u;
	echo = (p[4] & 0x10) != 0;
	if (count > slots)
		return LUMEN_INT_ECOUNT;
	if (echo && count != slots)
		return LUMEN_INT_ECOUNT;
	if (!echo && slots == 0)
		return LUMEN_INT_ELENGTH;
	hops = count;
	if (ver == 2) {
		if (!echo && p[5] != 0)
			return LUMEN_INT_ECOUNT;
		if (echo) {
			first = p[5] >> 4;
			hops = p[5] & 15u;
			if (hops > 3 || first + count > hops)
				return LUMEN_INT_ECOUNT;
		}
	}
	for (i = 0; i < count; i++) {
		if (!lumen_doc_rate_valid(lumen_doc_hop_rate(p + l.hdr + l.rec * i)))
			return LUMEN_INT_ERATE;
	}
	memset(o, 0, sizeof(*o));
	o->version = (__u8)ver;
	o->flags = (__u8)(p[4] & 0x18);
	o->slots = (__u8)slots;
	o->count = (__u8)count;
	o->first_hop = (__u8)first;
	o->path_hops = (__u8)hops;
	for (i = 0; i < slots; i++)
		lumen_doc_hop_decode(p + l.hdr + l.rec * i, ver, &o->hops[i]);
	return 0;
}

/* The documented parse outcome alone: 0 or the positive error. */
static inline int lumen_doc_parse_outcome(const uint8_t *p, size_t n)
{
	struct lumen_int_opt o;

	return lumen_doc_parse(p, n, &o);
}

/* ---------------------------------------------------------------------- */
/* Switch side                                                             */

/*
 * What lumen_int_push_hop must do to the n arbitrary bytes at p: its result,
 * and the n bytes after it in out. A request is kind 253, a version this code
 * speaks, length = that version's header + records, at most 40 and inside
 * the buffer, E clear (push_hop trusts the caller to have parsed it: the
 * ExID, the rate codes and version 2's byte 5 are not looked at). Anything
 * else is refused, untouched. A full request gets O and -EFULL; otherwise
 * the record goes into slot Count, in the request's own layout, and Count
 * grows by one (version, E and O kept).
 */
static inline int lumen_doc_push(const uint8_t *p, size_t n, const struct lumen_int_hop *hop, uint8_t *out)
{
	struct lumen_doc_layout l;
	unsigned len, ver, slots, count;

	if (n)
		memcpy(out, p, n);
	if (n < 5 || p[0] != 253)
		return -LUMEN_INT_EINVAL;
	ver = p[4] >> 5;
	if (!lumen_doc_version_known(ver))
		return -LUMEN_INT_EINVAL;
	l = lumen_doc_layout_of(ver);
	len = p[1];
	if (len < l.hdr || len > 40 || len > n || (len - l.hdr) % l.rec != 0 || (p[4] & 0x10))
		return -LUMEN_INT_EINVAL;
	slots = (len - l.hdr) / l.rec;
	count = p[4] & 7u;
	if (count >= slots) {
		out[4] |= 0x08;
		return -LUMEN_INT_EFULL;
	}
	lumen_doc_hop_encode(hop, ver, out + l.hdr + l.rec * count);
	out[4] = (uint8_t)((p[4] & 0xF8) | (count + 1));
	return (int)count;
}

/* ---------------------------------------------------------------------- */
/* Echoes                                                                  */

/*
 * The documented echo of records first .. first + count - 1 of req, in
 * req's version, into a buffer of buf_len bytes: its length and bytes (in
 * out, which has room for 40), or a negative error. -EINVAL for a version
 * this code does not speak, a request inconsistent with itself (count beyond
 * its slots or its version's), a range outside its filled records or longer
 * than an option holds, and in version 1 anything but the whole (it has no
 * field to say which records an echo carries); then -ENOSPACE when the echo
 * is longer than buf_len. The echo carries E, the request's O, Count =
 * records carried and, in version 2, First and Hops = the request's Count.
 */
static inline int lumen_doc_echo_range(const struct lumen_int_opt *req, unsigned first, unsigned count, size_t buf_len,
				       uint8_t *out)
{
	struct lumen_doc_layout l;
	unsigned ver = req->version, len, i;

	if (!lumen_doc_version_known(ver))
		return -LUMEN_INT_EINVAL;
	l = lumen_doc_layout_of(ver);
	if (req->count > req->slots || req->count > l.max_slots || first > req->count || count > req->count - first)
		return -LUMEN_INT_EINVAL;
	if (ver == 1 && (first != 0 || count != req->count))
		return -LUMEN_INT_EINVAL;
	len = l.hdr + l.rec * count;
	if (len > buf_len)
		return -LUMEN_INT_ENOSPACE;
	memset(out, 0, len);
	out[0] = 253;
	out[1] = (uint8_t)len;
	out[2] = 0x4C;
	out[3] = 0x55;
	out[4] = (uint8_t)((ver << 5) | 0x10 | (req->flags & 0x08) | count);
	if (ver == 2)
		out[5] = (uint8_t)((first << 4) | req->count);
	for (i = 0; i < count; i++)
		lumen_doc_hop_encode(&req->hops[first + i], ver, out + l.hdr + l.rec * i);
	return (int)len;
}

/*
 * The filled records of req that may be its bottleneck: a bit mask, 0 when
 * none is filled. The bottleneck has the longest queueing delay, qlen bytes
 * (qlen << k) over the link rate; ties go to the slower link, then to the
 * later hop: one record. A hop of unknown rate has no known delay and is
 * never preferred over a hop of known rate; when every filled hop's rate is
 * unknown the documentation does not say which wins, and any may.
 */
static inline unsigned lumen_doc_bottleneck_mask(const struct lumen_int_opt *req)
{
	uint64_t best_q = 0, best_r = 0;
	unsigned i, n = req->count < 5 ? req->count : 5, unknown = 0;
	int best = -1;

	for (i = 0; i < n; i++) {
		const uint64_t r = lumen_doc_rate_mbps(req->hops[i].rate);
		uint64_t q;

		if (r == 0) {
			unknown |= 1u << i;
			continue;
		}
		q = (uint64_t)req->hops[i].qlen << lumen_doc_shift(r);
		/* q / r against best_q / best_r: q < 2^30, r < 2^21, so no overflow */
		if (best < 0 || q * best_r > best_q * r || (q * best_r == best_q * r && r <= best_r)) {
			best = (int)i;
			best_q = q;
			best_r = r;
		}
	}
	return best >= 0 ? 1u << best : unknown;
}

/*
 * The documented lumen_int_write_echo_fit: the whole echo when it fits in
 * buf_len; otherwise, in version 2, one record, a bottleneck (allowed in
 * *mask, which is 0 for a whole echo), when 6 + 9 bytes fit; otherwise
 * -ENOSPACE. Returns the expected length or error; a whole echo's bytes are
 * in out.
 */
static inline int lumen_doc_echo_fit(const struct lumen_int_opt *req, size_t buf_len, uint8_t *out, unsigned *mask)
{
	int whole;

	*mask = 0;
	whole = lumen_doc_echo_range(req, 0, req->count, 40, out);
	if (whole < 0 || (size_t)whole <= buf_len)
		return whole;
	if (req->version != 2)
		return -LUMEN_INT_ENOSPACE;
	*mask = lumen_doc_bottleneck_mask(req);
	if (*mask == 0 || buf_len < 6 + 9)
		return -LUMEN_INT_ENOSPACE;
	return 6 + 9;
}

/* ---------------------------------------------------------------------- */
/* Hop deltas                                                              */

/* Largest usable dt of version ver, exclusive: 15/16 of half the ts wrap. */
static inline uint32_t lumen_doc_dt_end(unsigned ver)
{
	return (1u << (lumen_doc_layout_of(ver).ts_bits - 1)) / 16 * 15;
}

/*
 * The documented delta between two records of one hop in version ver:
 * ERATE unless both carry the same valid, known rate code; ETIME unless 0 <
 * dt < lumen_doc_dt_end(ver), dt = ts difference mod 2^ts_bits; ECOUNTER
 * when dtx (mod 2^tx_bits) units exceed limit = floor(rate * (dt_ns + 16) /
 * 8000), plus floor(limit / 16), plus 2 units. Fills *d only on success.
 */
static inline int lumen_doc_delta(const struct lumen_int_hop *a, const struct lumen_int_hop *b, unsigned ver,
				  struct lumen_int_delta *d)
{
	const struct lumen_doc_layout l = lumen_doc_layout_of(ver);
	const uint32_t ts_mask = (uint32_t)((1ull << l.ts_bits) - 1), tx_mask = (uint32_t)((1ull << l.tx_bits) - 1);
	uint64_t rate, lim, tx;
	uint32_t dts, dtx;
	unsigned k;

	if (a->rate != b->rate || a->rate == 0 || !lumen_doc_rate_valid(a->rate))
		return LUMEN_INT_DELTA_ERATE;
	rate = lumen_doc_rate_mbps(a->rate);
	k = lumen_doc_shift(rate);
	dts = (b->ts - a->ts) & ts_mask;
	if (dts == 0 || dts >= lumen_doc_dt_end(ver))
		return LUMEN_INT_DELTA_ETIME;
	dtx = (b->tx - a->tx) & tx_mask;
	tx = (uint64_t)dtx << k;
	lim = rate * (16ull * dts + 16) / 8000;
	lim += lim / 16 + (2ull << k);
	if (tx > lim)
		return LUMEN_INT_DELTA_ECOUNTER;
	d->dt_ns = 16ull * dts;
	d->tx_bytes = tx;
	d->qlen_prev_bytes = (uint64_t)a->qlen << k;
	d->qlen_bytes = (uint64_t)b->qlen << k;
	d->rate_mbps = (__u32)rate;
	d->saturated = a->qlen == 16383 || b->qlen == 16383;
	return LUMEN_INT_DELTA_OK;
}

#endif /* LUMEN_TESTS_INT_OPTION_ORACLE_H */
