// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * libFuzzer target for the INT option (include/lumen/int_option.h): the
 * parser, the echo writer, lumen_int_push_hop, lumen_int_hop_make and
 * lumen_int_hop_delta on whatever libFuzzer generates. The parser's result
 * must be exactly the error of the first documented check the input fails
 * (or success); lumen_int_hop_delta's exactly the documented rule, leaving
 * its output untouched on error. Built by clang with
 * -fsanitize=fuzzer,address,undefined (tests/CMakeLists.txt, ctest
 * int_option_libfuzzer); any violated invariant calls abort().
 *
 * The input is the option buffer itself (libFuzzer hands it over in a heap
 * block of exactly `size` bytes, so ASan sees any over-read).
 */
#include "lumen/int_option.h"
#include "fuzz_check.h"
#include "../int_option_oracle.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int oracle(const uint8_t *p, size_t n)
{
	return lumen_doc_parse_outcome(p, n);
}

/* Decimal value of a (valid) rate code. */
static uint64_t doc_rate(unsigned code)
{
	uint64_t r = code >> 3;
	unsigned e;

	for (e = 0; e < (code & 7); e++)
		r *= 10;
	return r;
}

/* Byte unit 2^k: the smallest k with 2^(14+k) B >= rate * 2^22 ns. */
static unsigned doc_shift(uint64_t rate)
{
	unsigned k = 0;

	while ((1ull << (14 + k)) * 8000 < rate * (1ull << 22))
		k++;
	return k;
}

/*
 * The documented delta: ERATE unless both records carry the same valid,
 * known rate; ETIME unless 0 < dt < 15/16 * 2^17 ticks; ECOUNTER when the
 * bytes exceed limit = floor(rate * (dt_ns + 16) / 8000), plus floor(limit /
 * 16), plus 2 units. Fills *d only on success.
 */
static int doc_delta(const struct lumen_int_hop *a, const struct lumen_int_hop *b, struct lumen_int_delta *d)
{
	uint64_t rate, lim, tx;
	unsigned k, dts, dtx;

	if (a->rate != b->rate || a->rate == 0 || !lumen_doc_rate_valid(a->rate))
		return LUMEN_INT_DELTA_ERATE;
	rate = doc_rate(a->rate);
	k = doc_shift(rate);
	dts = (b->ts - a->ts) & 0x3FFFFu;
	if (dts == 0 || dts >= 122880)
		return LUMEN_INT_DELTA_ETIME;
	dtx = ((unsigned)b->tx - a->tx) & 0x3FFFu;
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

/* lumen_int_hop_delta against the documented rule; *d untouched on error. */
static void check_delta(const struct lumen_int_hop *a, const struct lumen_int_hop *b)
{
	struct lumen_int_delta got, want, before;
	int rc, exp;

	memset(&got, 0xA5, sizeof(got));
	before = got;
	want = got;
	rc = lumen_int_hop_delta(a, b, &got);
	exp = doc_delta(a, b, &want);
	CHECK(rc == exp);
	if (rc == LUMEN_INT_DELTA_OK) {
		CHECK(got.dt_ns == want.dt_ns && got.tx_bytes == want.tx_bytes);
		CHECK(got.qlen_prev_bytes == want.qlen_prev_bytes && got.qlen_bytes == want.qlen_bytes);
		CHECK(got.rate_mbps == want.rate_mbps && got.saturated == want.saturated);
		CHECK(got.dt_ns >= 16 && got.dt_ns < 122880ull * 16);
	} else {
		CHECK(memcmp(&got, &before, sizeof(got)) == 0);
	}
}

/*
 * Raw records from the input bytes (rate, ts, tx and qlen at wire widths),
 * paired as they are and with the second's rate made equal to the first's
 * (so time and counter checks are reached).
 */
static void check_raw_deltas(const uint8_t *data, size_t size)
{
	struct lumen_int_hop a, b;
	size_t off;

	for (off = 0; off + 14 <= size && off < 64; off += 7) {
		lumen_int_hop_unpack(data + off, &a);
		lumen_int_hop_unpack(data + off + 7, &b);
		check_delta(&a, &b);
		b.rate = a.rate;
		check_delta(&a, &b);
		b.ts = (a.ts + (b.ts & 0x1FFFF)) & 0x3FFFFu; /* usable dt more often */
		b.tx = (__u16)((a.tx + (b.tx & 0x1FFF)) & 0x3FFF);
		check_delta(&a, &b);
	}
}

/* lumen_int_hop_make with an arbitrary 16-bit rate code from the input. */
static void check_hop_make(const uint8_t *data, size_t size)
{
	struct lumen_int_hop h;
	unsigned code, k;
	uint64_t now = 0, tx = 0, q = 0;
	size_t i;

	if (size < 2)
		return;
	code = ((unsigned)data[0] << 8) | data[1];
	for (i = 2; i < size && i < 10; i++)
		now = now << 8 | data[i];
	for (; i < size && i < 18; i++)
		tx = tx << 8 | data[i];
	for (; i < size && i < 26; i++)
		q = q << 8 | data[i];
	memset(&h, 0xFF, sizeof(h));
	lumen_int_hop_make(&h, now, tx, q, (__u16)code);
	/* A code the format cannot carry is sent as 0, in 1-byte units. */
	k = lumen_doc_rate_valid(code) ? doc_shift(doc_rate(code)) : 0;
	CHECK(h.rate == (lumen_doc_rate_valid(code) ? code : 0));
	CHECK(h.ts == ((now >> 4) & 0x3FFFF));
	CHECK(h.tx == ((tx >> k) & 0x3FFF));
	CHECK(h.qlen == ((q >> k) < 16383 ? (q >> k) : 16383));
	CHECK(h.pad == 0);
}

static void check_accepted(const uint8_t *data, const struct lumen_int_opt *opt)
{
	unsigned len = data[1], slots = (len - 5) / 7, i, filled;
	uint8_t re[LUMEN_INT_MAX_LEN], echo[LUMEN_INT_MAX_LEN + 1];
	struct lumen_int_opt back;
	int elen, is_echo = (opt->flags & LUMEN_INT_FLAG_ECHO) != 0;

	CHECK(opt->version == 1);
	CHECK(opt->slots == slots && slots <= LUMEN_INT_MAX_HOPS);
	CHECK(opt->count <= opt->slots);
	CHECK(!is_echo || opt->count == opt->slots);
	CHECK(is_echo || opt->slots >= 1);
	CHECK(opt->flags == (data[4] & 0x18) && opt->count == (data[4] & 7));
	for (i = 0; i < LUMEN_INT_MAX_HOPS; i++) {
		const struct lumen_int_hop *h = &opt->hops[i];

		CHECK(h->ts <= LUMEN_INT_TS_MASK && h->tx <= LUMEN_INT_TX_MASK && h->qlen <= LUMEN_INT_QLEN_MAX);
		CHECK(h->rate < 1024 && h->pad == 0);
		if (i < opt->count)
			CHECK(lumen_int_rate_code_valid(h->rate));
		if (i >= slots)
			CHECK(h->ts == 0 && h->tx == 0 && h->qlen == 0 && h->rate == 0);
	}

	/* Re-encoding reproduces the accepted bytes. */
	lumen_int_write_hdr(re, opt->slots, opt->flags, opt->count);
	for (i = 0; i < opt->slots; i++)
		lumen_int_hop_pack(&opt->hops[i], re + LUMEN_INT_HDR_LEN + LUMEN_INT_HOP_LEN * i);
	CHECK(memcmp(re, data, len) == 0);

	/* Its echo carries exactly the filled hops and O, and parses back. */
	filled = LUMEN_INT_HDR_LEN + LUMEN_INT_HOP_LEN * opt->count;
	echo[LUMEN_INT_MAX_LEN] = 0xEE;
	elen = lumen_int_write_echo(echo, LUMEN_INT_MAX_LEN, opt);
	CHECK(elen == (int)filled);
	CHECK(echo[LUMEN_INT_MAX_LEN] == 0xEE);
	CHECK(echo[0] == 253 && echo[1] == filled && echo[2] == 0x4C && echo[3] == 0x55);
	CHECK(echo[4] == (0x30 | (opt->flags & LUMEN_INT_FLAG_OVERFLOW) | opt->count));
	CHECK(memcmp(echo + 5, data + 5, filled - 5) == 0);
	CHECK(lumen_int_parse(echo, (__u32)elen, &back) == 0);
	CHECK(back.count == opt->count && back.slots == opt->count);
	CHECK(back.flags == (LUMEN_INT_FLAG_ECHO | (opt->flags & LUMEN_INT_FLAG_OVERFLOW)));
	for (i = 0; i < opt->count; i++)
		CHECK(memcmp(&back.hops[i], &opt->hops[i], sizeof(back.hops[i])) == 0);

	/* Deltas between any two filled records: exactly the documented rule. */
	for (i = 0; i < opt->count; i++) {
		unsigned j;

		for (j = 0; j < opt->count; j++)
			check_delta(&opt->hops[i], &opt->hops[j]);
	}
}

static void check_push(const uint8_t *data, size_t size)
{
	enum {
		GUARD = 32
	};
	uint8_t *area = malloc(size + 2 * GUARD);
	uint8_t *buf, *expect;
	struct lumen_int_hop hop;
	unsigned slots, count, i;
	int rc, request;

	CHECK(area != NULL);
	expect = malloc(size + 1);
	CHECK(expect != NULL);
	memset(area, 0xC3, size + 2 * GUARD);
	buf = area + GUARD;
	if (size)
		memcpy(buf, data, size);
	if (size)
		memcpy(expect, data, size);
	lumen_int_hop_make(&hop, (__u64)size * 977, (__u64)size * 7919, size * 31, lumen_int_rate_encode(10000));

	rc = lumen_int_push_hop(buf, (__u32)size, &hop);
	for (i = 0; i < GUARD; i++)
		CHECK(area[i] == 0xC3 && area[GUARD + size + i] == 0xC3);

	request = size >= 5 && data[0] == 253 && data[1] >= 5 && data[1] <= 40 && data[1] <= size &&
		  (data[1] - 5) % 7 == 0 && !(data[4] & 0x10);
	if (!request) {
		CHECK(rc == -LUMEN_INT_EINVAL);
	} else {
		slots = (data[1] - 5u) / 7;
		count = data[4] & 7u;
		if (count >= slots) {
			CHECK(rc == -LUMEN_INT_EFULL);
			expect[4] |= 0x08;
		} else {
			CHECK(rc == (int)count);
			CHECK((buf[4] & 0x1F) == ((data[4] & 0x18) | (count + 1)));
			CHECK((buf[4] >> 5) == 1 || (buf[4] >> 5) == (data[4] >> 5));
			lumen_int_hop_pack(&hop, expect + 5 + 7 * count);
			expect[4] = buf[4];
		}
	}
	CHECK(size == 0 || memcmp(buf, expect, size) == 0);
	free(expect);
	free(area);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct lumen_int_opt opt, before;
	int want, rc;

	if (size > 1024)
		return 0;
	want = oracle(data, size);
	memset(&opt, 0x5A, sizeof(opt));
	memcpy(&before, &opt, sizeof(opt));
	rc = lumen_int_parse(data, (__u32)size, &opt);
	CHECK(rc == -want);
	if (rc != 0)
		CHECK(memcmp(&opt, &before, sizeof(opt)) == 0);
	else
		check_accepted(data, &opt);
	check_push(data, size);
	check_raw_deltas(data, size);
	check_hop_make(data, size);
	CHECK(lumen_int_strerror(rc) != NULL);
	return 0;
}
