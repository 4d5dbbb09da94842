// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * libFuzzer target for the INT option (include/lumen/int_option.h), versions
 * 1 and 2: the parser, the echo writers (whole, a range, what fits a
 * buffer), lumen_int_push_hop, lumen_int_hop_make_v and lumen_int_hop_delta_v
 * on whatever libFuzzer generates, against the independent oracle written
 * from the documentation (tests/int_option_oracle.h):
 *   - the parser's result is exactly the error of the first documented check
 *     the input fails (output untouched), or success with every field as the
 *     oracle decodes it, and re-encoding reproduces the accepted bytes;
 *   - every echo of an accepted option (whole; every range of its records,
 *     into the exact room and one byte less; what fits in 0..40 bytes, the
 *     bottleneck record alone in version 2) is the oracle's bytes or error,
 *     writes nothing past its length (nothing at all when refused), and
 *     parses back to the records it carries;
 *   - push_hop does what the oracle says and writes only inside the option;
 *   - hop deltas of raw records of either version follow the documented
 *     rule exactly and leave their output untouched on error; hop_make_v
 *     masks and saturates as documented.
 * Each input is also tried with its version field swapped between 1 and 2,
 * so that every input reaches both layouts. Built by clang with
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

/* Room for any echo (40 bytes) and a guard after it. */
#define ECHO_AREA (LUMEN_INT_MAX_LEN + 8)

/* lumen_int_hop_delta_v against the documented rule; *d untouched on error. */
static void check_delta(const struct lumen_int_hop *a, const struct lumen_int_hop *b, unsigned ver)
{
	struct lumen_int_delta got, want, before;
	int rc, exp;

	memset(&got, 0xA5, sizeof(got));
	before = got;
	want = got;
	rc = ver == 1 ? lumen_int_hop_delta(a, b, &got) : lumen_int_hop_delta_v(a, b, ver, &got);
	exp = lumen_doc_delta(a, b, ver, &want);
	CHECK(rc == exp);
	if (rc == LUMEN_INT_DELTA_OK) {
		CHECK(got.dt_ns == want.dt_ns && got.tx_bytes == want.tx_bytes);
		CHECK(got.qlen_prev_bytes == want.qlen_prev_bytes && got.qlen_bytes == want.qlen_bytes);
		CHECK(got.rate_mbps == want.rate_mbps && got.saturated == want.saturated);
		CHECK(got.dt_ns >= 16 && got.dt_ns < 16ull * lumen_doc_dt_end(ver));
	} else {
		CHECK(memcmp(&got, &before, sizeof(got)) == 0);
	}
}

/*
 * Raw records of version ver from the input bytes (fields at wire widths),
 * paired as they are and with the second's rate made equal to the first's
 * (so time and counter checks are reached), then with a usable dt more often.
 */
static void check_raw_deltas(const uint8_t *data, size_t size, unsigned ver)
{
	const struct lumen_doc_layout l = lumen_doc_layout_of(ver);
	const uint32_t ts_mask = (uint32_t)((1ull << l.ts_bits) - 1), tx_mask = (uint32_t)((1ull << l.tx_bits) - 1);
	struct lumen_int_hop a, b;
	size_t off;

	for (off = 0; off + 2 * l.rec <= size && off < 64; off += l.rec) {
		lumen_int_hop_unpack_v(data + off, ver, &a);
		lumen_int_hop_unpack_v(data + off + l.rec, ver, &b);
		check_delta(&a, &b, ver);
		b.rate = a.rate;
		check_delta(&a, &b, ver);
		b.ts = (a.ts + (b.ts & (ts_mask >> 1))) & ts_mask;
		b.tx = (a.tx + (b.tx & (tx_mask >> 1))) & tx_mask;
		check_delta(&a, &b, ver);
	}
}

/* lumen_int_hop_make_v with an arbitrary 16-bit rate code from the input. */
static void check_hop_make(const uint8_t *data, size_t size)
{
	struct lumen_int_hop h;
	unsigned code, k, ver;
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
	/* A code the format cannot carry is sent as 0, in 1-byte units. */
	k = lumen_doc_rate_valid(code) ? lumen_doc_shift(lumen_doc_rate_mbps(code)) : 0;
	for (ver = 1; ver <= 2; ver++) {
		const struct lumen_doc_layout l = lumen_doc_layout_of(ver);

		memset(&h, 0xFF, sizeof(h));
		if (ver == 1)
			lumen_int_hop_make(&h, now, tx, q, (__u16)code);
		else
			lumen_int_hop_make_v(&h, ver, now, tx, q, (__u16)code);
		CHECK(h.rate == (lumen_doc_rate_valid(code) ? code : 0));
		CHECK(h.ts == ((now >> 4) & ((1ull << l.ts_bits) - 1)));
		CHECK(h.tx == ((tx >> k) & ((1ull << l.tx_bits) - 1)));
		CHECK(h.qlen == ((q >> k) < 16383 ? (q >> k) : 16383));
		CHECK(h.pad == 0);
	}
}

static int same_opt(const struct lumen_int_opt *a, const struct lumen_int_opt *b)
{
	unsigned i;

	if (a->version != b->version || a->flags != b->flags || a->slots != b->slots || a->count != b->count ||
	    a->first_hop != b->first_hop || a->path_hops != b->path_hops || a->pad[0] != b->pad[0] ||
	    a->pad[1] != b->pad[1])
		return 0;
	for (i = 0; i < LUMEN_INT_MAX_HOPS; i++)
		if (!lumen_doc_hop_equal(&a->hops[i], &b->hops[i]))
			return 0;
	return 1;
}

/*
 * An echo writer's result rc and the bytes it left in got (ECHO_AREA, 0xEE
 * before the call) against the oracle's want and expect; a successful echo
 * parses back to records first .. first + count - 1 of req.
 */
static void check_echo_written(int rc, int want, const uint8_t *got, const uint8_t *expect,
			       const struct lumen_int_opt *req, unsigned first)
{
	const size_t written = rc > 0 ? (size_t)rc : 0;
	struct lumen_int_opt back;
	unsigned i, count;

	CHECK(rc == want);
	CHECK(rc <= 0 || memcmp(got, expect, written) == 0);
	for (i = (unsigned)written; i < ECHO_AREA; i++)
		CHECK(got[i] == 0xEE);
	if (rc <= 0)
		return;
	count = got[4] & 7u;
	CHECK(lumen_int_parse(got, (__u32)rc, &back) == 0);
	CHECK(back.version == req->version && back.slots == count && back.count == count);
	CHECK(back.flags == (LUMEN_INT_FLAG_ECHO | (req->flags & LUMEN_INT_FLAG_OVERFLOW)));
	CHECK(back.first_hop == (req->version == 2 ? first : 0));
	CHECK(back.path_hops == (req->version == 2 ? req->count : count));
	for (i = 0; i < count; i++)
		CHECK(lumen_doc_hop_equal(&back.hops[i], &req->hops[first + i]));
}

/* Every echo of an accepted option. */
static void check_echoes(const struct lumen_int_opt *opt)
{
	uint8_t got[ECHO_AREA], expect[LUMEN_INT_MAX_LEN];
	unsigned first, count, room, allowed;
	int rc, want;

	/* Whole. */
	memset(got, 0xEE, sizeof(got));
	want = lumen_doc_echo_range(opt, 0, opt->count, LUMEN_INT_MAX_LEN, expect);
	rc = lumen_int_write_echo(got, LUMEN_INT_MAX_LEN, opt);
	check_echo_written(rc, want, got, expect, opt, 0);

	/* Every range, the invalid ones next to the valid, into its room and one byte less. */
	for (first = 0; first <= opt->count + 1u; first++) {
		for (count = 0; count <= opt->count + 1u; count++) {
			const struct lumen_doc_layout l = lumen_doc_layout_of(opt->version);
			const unsigned len = l.hdr + l.rec * count;

			for (room = len - 1; room <= len && room <= LUMEN_INT_MAX_LEN; room++) {
				memset(got, 0xEE, sizeof(got));
				want = lumen_doc_echo_range(opt, first, count, room, expect);
				rc = lumen_int_write_echo_range(got, room, opt, first, count);
				check_echo_written(rc, want, got, expect, opt, first);
			}
		}
	}

	/* What fits in every room from nothing to the whole option space. */
	for (room = 0; room <= LUMEN_INT_MAX_LEN; room++) {
		memset(got, 0xEE, sizeof(got));
		want = lumen_doc_echo_fit(opt, room, expect, &allowed);
		rc = lumen_int_write_echo_fit(got, room, opt);
		first = 0;
		if (want > 0 && allowed != 0 && rc == want) {
			/* a partial echo: a bottleneck record, its index in First */
			first = got[5] >> 4;
			CHECK(first < LUMEN_INT_MAX_HOPS && (allowed & (1u << first)));
			want = lumen_doc_echo_range(opt, first, 1, room, expect);
		}
		check_echo_written(rc, want, got, expect, opt, first);
	}
}

static void check_accepted(const uint8_t *data, const struct lumen_int_opt *opt, const struct lumen_int_opt *doc)
{
	unsigned len = data[1], i, hdr, rec;
	/* room for 5 records of either size: the compiler cannot tell that slots fit the version */
	uint8_t re[LUMEN_INT_V2_OPT_LEN(LUMEN_INT_MAX_HOPS) + 1];
	uint8_t byte5;

	CHECK(same_opt(opt, doc));

	/* Re-encoding reproduces the accepted bytes, and no more. */
	hdr = lumen_int_hdr_len(opt->version);
	rec = lumen_int_hop_len(opt->version);
	byte5 = (opt->flags & LUMEN_INT_FLAG_ECHO) ? (uint8_t)(opt->first_hop << 4 | opt->path_hops) : 0;
	memset(re, 0xEE, sizeof(re));
	lumen_int_write_hdr_v(re, opt->version, opt->slots, opt->flags, opt->count, byte5);
	for (i = 0; i < opt->slots && i < LUMEN_INT_MAX_HOPS; i++)
		lumen_int_hop_pack_v(&opt->hops[i], opt->version, re + hdr + rec * i);
	CHECK(memcmp(re, data, len) == 0 && re[len] == 0xEE);

	check_echoes(opt);

	/* Deltas between any two filled records: exactly the documented rule. */
	for (i = 0; i < opt->count; i++) {
		unsigned j;

		for (j = 0; j < opt->count; j++)
			check_delta(&opt->hops[i], &opt->hops[j], opt->version);
	}
}

static void check_parse(const uint8_t *data, size_t size)
{
	struct lumen_int_opt opt, before, doc;
	int want, rc;

	want = lumen_doc_parse(data, size, &doc);
	memset(&opt, 0x5A, sizeof(opt));
	memcpy(&before, &opt, sizeof(opt));
	rc = lumen_int_parse(data, (__u32)size, &opt);
	CHECK(rc == -want);
	if (rc != 0)
		CHECK(memcmp(&opt, &before, sizeof(opt)) == 0);
	else
		check_accepted(data, &opt, &doc);
	CHECK(lumen_int_strerror(rc) != NULL);
}

static void check_push(const uint8_t *data, size_t size)
{
	enum {
		GUARD = 32
	};
	uint8_t *area = malloc(size + 2 * GUARD);
	uint8_t *buf, *expect;
	struct lumen_int_hop hop;
	unsigned i, ver;
	int rc, want;

	CHECK(area != NULL);
	expect = malloc(size + 1);
	CHECK(expect != NULL);
	memset(area, 0xC3, size + 2 * GUARD);
	buf = area + GUARD;
	if (size)
		memcpy(buf, data, size);
	/* a record made for the layout the bytes claim */
	ver = size >= 5 && (data[4] >> 5) == 2 ? 2 : 1;
	lumen_int_hop_make_v(&hop, ver, (__u64)size * 977, (__u64)size * 7919, size * 31, lumen_int_rate_encode(10000));

	rc = lumen_int_push_hop(buf, (__u32)size, &hop);
	for (i = 0; i < GUARD; i++)
		CHECK(area[i] == 0xC3 && area[GUARD + size + i] == 0xC3);
	want = lumen_doc_push(data, size, &hop, expect);
	CHECK(rc == want);
	CHECK(size == 0 || memcmp(buf, expect, size) == 0);
	/* What a switch left is one more option to parse. */
	if (rc >= 0 || rc == -LUMEN_INT_EFULL)
		check_parse(buf, size);
	free(expect);
	free(area);
}

static void check_all(const uint8_t *data, size_t size)
{
	check_parse(data, size);
	check_push(data, size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 1024)
		return 0;
	check_all(data, size);
	/* The same bytes under the other known version (1 <-> 2), in a block of exactly their size. */
	if (size >= 5 && ((data[4] >> 5) == 1 || (data[4] >> 5) == 2)) {
		uint8_t *other = malloc(size);

		CHECK(other != NULL);
		memcpy(other, data, size);
		other[4] ^= 0x60; /* 001 <-> 010 */
		check_all(other, size);
		free(other);
	}
	check_raw_deltas(data, size, 1);
	check_raw_deltas(data, size, 2);
	check_hop_make(data, size);
	return 0;
}
