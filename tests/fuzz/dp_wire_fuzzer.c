// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * libFuzzer target for the lumen-dp wire format (include/lumen/dp_wire.h).
 * The input is a frame; libFuzzer hands it over in a heap block of exactly
 * `size` bytes, so ASan sees any read past its end. Each input is parsed
 * twice: as it is (port 4792), and as a copy with the IPv4 checksum made
 * right and the port taken from the frame, so that mutations get past the
 * IP checks into the lumen header. Invariants (abort on violation):
 *   - a refusal is one of the parser's errors and leaves the output alone;
 *   - an accepted frame obeys the documented layout: ext and payload point
 *     inside the IP packet, lengths add up, flags and sizes per type;
 *   - the parsed packet builds again into a buffer of exactly its size, and
 *     one byte less is refused without a write; the new frame equals the
 *     input except for the fields the parser does not judge (DSCP, id, DF,
 *     TTL, IP and UDP checksums), parses to the same packet, and its own
 *     rebuild is byte-identical;
 *   - a PROBE carries no payload, message or ACK fields;
 *   - an ICMP Time Exceeded (dp_probe.h), as it is and with its ICMP
 *     checksum made right: a refusal leaves the output alone, an acceptance
 *     reports the router and the quoted addresses, ports, id and TTL;
 *   - lumen_dp_mark_ce marks exactly the ECN-capable frames, and the marked
 *     frame parses to the same packet with ECN CE;
 *   - an accepted ACK folds into a copy of itself (dp_ack_coalesce.h) unless
 *     its counts would overflow, to the same packet with the counts doubled;
 *     the raw input folded into the rebuilt frame either leaves it alone or
 *     makes a frame that parses as an ACK of the same connection;
 *   - refusals, on every accepted ACK, with frames of its length derived
 *     from it (the fields changed by a key hashed from the input): the ACK
 *     with another UDP source port (the entropy) and fresher echoes folds;
 *     the same ACK with another conn_id, IP source or destination, or
 *     Ethernet destination or source (another connection) is refused with
 *     ECONN, as a NACK or as a DATA frame of the same connection with
 *     ETYPE, for another UDP destination port with EPARSE, with its PSN
 *     behind with EBEHIND - each way round where both are ACKs, type and
 *     port either way - and the older frame stays byte-identical.
 * Built by clang with -fsanitize=fuzzer,address,undefined
 * (tests/CMakeLists.txt, ctest dp_wire_libfuzzer); hand-made seeds in
 * corpus/dp/ (make_dp_corpus.py), the kept corpus in corpus/dp_wire_fuzzer/
 * (README.md).
 */
#include "lumen/dp_wire.h"
#include "lumen/dp_ack_coalesce.h"
#include "lumen/dp_probe.h"
#include "fuzz_check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_same(const struct lumen_dp_pkt *a, const struct lumen_dp_pkt *b, int same_ecn)
{
	CHECK(memcmp(a->eth_dst, b->eth_dst, 6) == 0 && memcmp(a->eth_src, b->eth_src, 6) == 0);
	CHECK(a->ip_src == b->ip_src && a->ip_dst == b->ip_dst);
	CHECK(a->sport == b->sport && a->dport == b->dport);
	CHECK(!same_ecn || a->ecn == b->ecn);
	CHECK(a->type == b->type && a->flags == b->flags && a->ext_words == b->ext_words);
	CHECK(a->conn_id == b->conn_id && a->psn == b->psn);
	CHECK(a->ts_ns == b->ts_ns && a->msg_id == b->msg_id && a->msg_off == b->msg_off && a->msg_len == b->msg_len);
	CHECK(a->echo_ts == b->echo_ts && a->sack == b->sack && a->echo_psn == b->echo_psn);
	CHECK(a->echo_sport == b->echo_sport && a->pkts == b->pkts && a->ce_pkts == b->ce_pkts && a->rwnd == b->rwnd);
	CHECK(a->cookie == b->cookie);
	CHECK(a->ext_len == b->ext_len && a->payload_len == b->payload_len);
	CHECK(a->ext_len == 0 || memcmp(a->ext, b->ext, a->ext_len) == 0);
	CHECK(a->payload_len == 0 || memcmp(a->payload, b->payload, a->payload_len) == 0);
}

/* Frame bytes the builder sets its own way and the parser does not judge. */
static int free_byte(size_t i)
{
	return i == 18 || i == 19 || i == 20 || i == 22 || i == 24 || i == 25 || i == 40 || i == 41;
}

/* The ACK p (frame buf, end bytes) folded into a copy of itself, then the
 * raw input f folded into another copy. */
static void check_fold(const uint8_t *f, size_t size, const uint8_t *buf, uint32_t end, uint16_t port,
		       const struct lumen_dp_pkt *p)
{
	uint8_t *older = malloc(end);
	struct lumen_dp_pkt q;
	int rc;

	CHECK(older != NULL);
	memcpy(older, buf, end);
	rc = lumen_dp_ack_fold(older, end, buf, end, port);
	if ((uint32_t)p->pkts * 2 > 0xFFFF || (uint32_t)p->ce_pkts * 2 > 0xFFFF) {
		CHECK(rc == LUMEN_DP_FOLD_ECOUNT);
		CHECK(memcmp(older, buf, end) == 0);
	} else {
		CHECK(rc == LUMEN_DP_FOLDED);
		CHECK(lumen_dp_parse(older, end, port, &q) == 0);
		CHECK(q.pkts == 2 * p->pkts && q.ce_pkts == 2 * p->ce_pkts);
		q.pkts = p->pkts;
		q.ce_pkts = p->ce_pkts;
		check_same(p, &q, 1);
	}
	memcpy(older, buf, end);
	rc = lumen_dp_ack_fold(older, end, f, (uint32_t)size, port);
	CHECK(rc >= LUMEN_DP_FOLDED && rc <= LUMEN_DP_FOLD_ECOUNT);
	if (rc != LUMEN_DP_FOLDED) {
		CHECK(memcmp(older, buf, end) == 0);
	} else {
		CHECK(lumen_dp_parse(older, end, port, &q) == 0);
		CHECK(q.type == LUMEN_DP_ACK && q.conn_id == p->conn_id && q.ip_dst == p->ip_dst);
	}
	free(older);
}

/* older (len bytes) must refuse newer (len bytes) with want and stay as it was. */
static void refused(uint8_t *older, const uint8_t *newer, uint32_t len, uint16_t port, int want)
{
	uint8_t *before = malloc(len);

	CHECK(before != NULL);
	memcpy(before, older, len);
	CHECK(lumen_dp_ack_fold(older, len, newer, len, port) == want);
	CHECK(memcmp(older, before, len) == 0);
	free(before);
}

/* *q built into out (exactly len bytes); q must make a frame of that length. */
static void build_exact(uint8_t *out, uint32_t len, const struct lumen_dp_pkt *q)
{
	CHECK(lumen_dp_build(out, len, q) == (int)len);
}

/* older refuses newer with want, and newer older: each way round. */
static void refused_both(uint8_t *older, uint8_t *newer, uint32_t len, uint16_t port, int want)
{
	refused(older, newer, len, port, want);
	refused(newer, older, len, port, want);
}

/*
 * The refusals around the accepted ACK p (rebuilt frame buf, end bytes): the
 * frames of its length that must not fold into it, or it into them, each
 * derived from p by the key x (nonzero, hashed from the input). A control
 * first: p with another source port (the entropy), fresher echoes and no
 * counts of its own folds, so each refusal below comes from the one field it
 * changes.
 */
static void check_refusals(const uint8_t *buf, uint32_t end, uint16_t port, const struct lumen_dp_pkt *p, uint32_t x)
{
	uint8_t *older = malloc(end), *newer = malloc(end);
	struct lumen_dp_pkt base = *p, q, r;
	uint8_t m = (uint8_t)(x >> 8 | 1);

	CHECK(older && newer);
	base.sport ^= (uint16_t)x;
	base.echo_ts ^= x;
	base.echo_psn ^= x;
	base.echo_sport ^= (uint16_t)(x >> 16);
	base.sack ^= (uint64_t)x << 32 | x;
	base.rwnd ^= (uint16_t)(x >> 4);
	base.pkts = base.ce_pkts = 0;
	build_exact(newer, end, &base);
	memcpy(older, buf, end);
	CHECK(lumen_dp_ack_fold(older, end, newer, end, port) == LUMEN_DP_FOLDED);
	CHECK(lumen_dp_parse(older, end, port, &r) == 0);
	CHECK(r.pkts == p->pkts && r.ce_pkts == p->ce_pkts && r.sack == (base.sack | p->sack));
	q = base;
	q.pkts = p->pkts;
	q.ce_pkts = p->ce_pkts;
	q.sack = r.sack;
	check_same(&q, &r, 1);

	/* another connection: each of its fields alone */
	memcpy(older, buf, end);
	q = base;
	q.conn_id ^= x;
	build_exact(newer, end, &q);
	refused_both(older, newer, end, port, LUMEN_DP_FOLD_ECONN);
	q = base;
	q.ip_src ^= x;
	build_exact(newer, end, &q);
	refused_both(older, newer, end, port, LUMEN_DP_FOLD_ECONN);
	q = base;
	q.ip_dst ^= x;
	build_exact(newer, end, &q);
	refused_both(older, newer, end, port, LUMEN_DP_FOLD_ECONN);
	q = base;
	q.eth_dst[x % 6] ^= m;
	build_exact(newer, end, &q);
	refused_both(older, newer, end, port, LUMEN_DP_FOLD_ECONN);
	q = base;
	q.eth_src[(x >> 3) % 6] ^= m;
	build_exact(newer, end, &q);
	refused_both(older, newer, end, port, LUMEN_DP_FOLD_ECONN);

	/* its PSN behind the older one's (by 1 .. 2^31) */
	q = base;
	q.psn = p->psn - 1 - (x & 0x7FFFFFFFu);
	build_exact(newer, end, &q);
	refused(older, newer, end, port, LUMEN_DP_FOLD_EBEHIND);

	/* not a lumen-dp frame for this port */
	q = base;
	q.dport = (uint16_t)(port ^ m);
	build_exact(newer, end, &q);
	refused_both(older, newer, end, port, LUMEN_DP_FOLD_EPARSE);

	/* a NACK: never folded, either way */
	q = base;
	q.type = LUMEN_DP_NACK;
	build_exact(newer, end, &q);
	refused_both(older, newer, end, port, LUMEN_DP_FOLD_ETYPE);

	/* a DATA frame of the connection, as long: its payload, 8 bytes
	 * (the ACK part is the longer) plus the extension's, from the ACK */
	memset(&q, 0, sizeof(q));
	memcpy(q.eth_dst, p->eth_dst, 6);
	memcpy(q.eth_src, p->eth_src, 6);
	q.ip_src = p->ip_src;
	q.ip_dst = p->ip_dst;
	q.sport = base.sport;
	q.dport = p->dport;
	q.ecn = p->ecn;
	q.type = LUMEN_DP_DATA;
	q.flags = (uint8_t)(x & (LUMEN_DP_F_RETX | LUMEN_DP_F_ACK_NOW | LUMEN_DP_F_MSG_LAST));
	q.conn_id = p->conn_id;
	q.psn = p->psn;
	q.ts_ns = p->echo_ts;
	q.msg_id = x;
	q.payload_len = end - LUMEN_DP_HDR_OFF - LUMEN_DP_DATA_HLEN;
	q.payload = buf + LUMEN_DP_HDR_OFF;
	q.msg_len = q.payload_len;
	build_exact(newer, end, &q);
	refused_both(older, newer, end, port, LUMEN_DP_FOLD_ETYPE);
	CHECK(memcmp(older, buf, end) == 0);
	free(newer);
	free(older);
}

/* FNV-1a of the input, never 0: the key of check_refusals. */
static uint32_t input_key(const uint8_t *f, size_t size)
{
	uint32_t h = 2166136261u;
	size_t i;

	for (i = 0; i < size; i++)
		h = (h ^ f[i]) * 16777619u;
	return h ? h : 1;
}

static void check_accepted(const uint8_t *f, size_t size, uint16_t port, const struct lumen_dp_pkt *p)
{
	uint32_t ip_len = (uint32_t)f[16] << 8 | f[17], end = 14 + ip_len, hlen, i;
	struct lumen_dp_pkt q, r;
	uint8_t *buf, *again, *mark;

	/* the layout */
	CHECK(end <= size);
	CHECK(p->dport == port && p->ecn == (f[15] & 3));
	hlen = lumen_dp_hdr_len(p->type, p->ext_words);
	CHECK(hlen != 0 && p->ext_len == 4u * p->ext_words);
	CHECK(hlen + p->payload_len == end);
	CHECK((p->flags & ~lumen_dp_type_flags(p->type)) == 0);
	CHECK(!(p->flags & LUMEN_DP_F_INT) == (p->ext_len == 0));
	CHECK(p->ext_len ? p->ext == f + hlen - p->ext_len : p->ext == NULL);
	CHECK(p->payload_len ? p->payload == f + hlen : p->payload == NULL);
	if (p->type == LUMEN_DP_DATA) {
		CHECK(p->payload_len >= 1 && p->msg_len >= 1);
		CHECK((uint64_t)p->msg_off + p->payload_len <= p->msg_len);
		CHECK(p->echo_ts == 0 && p->sack == 0 && p->rwnd == 0);
	} else if (p->type == LUMEN_DP_PROBE) {
		CHECK(p->payload_len == 0 && p->msg_len == 0 && p->msg_id == 0 && p->flags == 0);
		CHECK(p->echo_ts == 0 && p->sack == 0 && p->rwnd == 0 && p->echo_psn == 0);
	} else if (p->type >= LUMEN_DP_SYN) {
		CHECK(p->type <= LUMEN_DP_FIN && p->payload_len == 0 && p->ext_len == 0 && p->msg_len == 0);
		CHECK(p->echo_ts == 0 && p->sack == 0 && p->rwnd == 0 && p->echo_psn == 0);
	} else {
		CHECK(p->payload_len == 0 && p->ts_ns == 0 && p->msg_len == 0 && p->cookie == 0);
	}

	/* the rebuild, in a block of exactly its size */
	buf = malloc(end);
	again = malloc(end);
	mark = malloc(end);
	CHECK(buf && again && mark);
	memset(buf, 0xC3, end);
	CHECK(lumen_dp_build(buf, end - 1, p) == -LUMEN_DP_ENOSPACE);
	for (i = 0; i < end; i++)
		CHECK(buf[i] == 0xC3);
	CHECK(lumen_dp_build(buf, end, p) == (int)end);
	for (i = 0; i < end; i++)
		CHECK(free_byte(i) || buf[i] == (i == 15 ? (f[i] & 3) : f[i]));
	CHECK(buf[20] == 0x40 && buf[22] == 64 && buf[40] == 0 && buf[41] == 0);
	memset(&q, 0, sizeof(q));
	CHECK(lumen_dp_parse(buf, end, port, &q) == 0);
	check_same(p, &q, 1);
	CHECK(lumen_dp_build(again, end, &q) == (int)end);
	CHECK(memcmp(again, buf, end) == 0);

	/* CE in place */
	memcpy(mark, buf, end);
	if (p->ecn == LUMEN_DP_ECN_NOT_ECT) {
		CHECK(lumen_dp_mark_ce(mark, end) == 0);
		CHECK(memcmp(mark, buf, end) == 0);
	} else {
		CHECK(lumen_dp_mark_ce(mark, end) == 1);
		CHECK(lumen_dp_parse(mark, end, port, &r) == 0);
		CHECK(r.ecn == LUMEN_DP_ECN_CE);
		check_same(p, &r, 0);
	}
	if (p->type == LUMEN_DP_ACK) {
		check_fold(f, size, buf, end, port, p);
		check_refusals(buf, end, port, p, input_key(f, size));
	}
	free(mark);
	free(again);
	free(buf);
}

/* An ICMP Time Exceeded (dp_probe.h): a refusal leaves the output alone,
 * an acceptance reports what the frame's bytes say. */
static void check_icmp(const uint8_t *f, size_t size)
{
	struct lumen_dp_time_exceeded out, before;
	const uint8_t *q;
	int rc;

	memset(&out, 0xA5, sizeof(out));
	memcpy(&before, &out, sizeof(out));
	rc = lumen_dp_parse_time_exceeded(f, (__u32)size, &out);
	CHECK(rc <= 0 && rc > -LUMEN_DP_ICMP_E_COUNT);
	CHECK(strcmp(lumen_dp_icmp_strerror(rc), "unknown error") != 0);
	if (rc != 0) {
		CHECK(memcmp(&out, &before, sizeof(out)) == 0);
		return;
	}
	CHECK(size >= 14 + 20 + 8 + 28 && f[12] == 0x08 && f[13] == 0 && f[14] >> 4 == 4 && f[23] == 1);
	q = f + 14 + 4 * (f[14] & 15) + 8;
	CHECK(q + 28 <= f + size && q[-8] == 11 && q[-7] == 0 && q[0] == 0x45 && q[9] == 17);
	CHECK(out.router == lumen_dp_get32(f + 26) && out.src == lumen_dp_get32(q + 12) &&
	      out.dst == lumen_dp_get32(q + 16) && out.id == lumen_dp_get16(q + 4) && out.quoted_ttl == q[8] &&
	      out.sport == lumen_dp_get16(q + 20) && out.dport == lumen_dp_get16(q + 22));
}

/* The input with its ICMP checksum made right (an IPv4 header of IHL 5 and
 * a length inside the frame), so that mutations reach the quote. */
static void check_icmp_fixed(const uint8_t *f, size_t size)
{
	uint32_t ip_len, i;
	uint8_t *c;

	if (size < 14 + 20 + 8 || (f[14] & 15) != 5)
		return;
	ip_len = (uint32_t)f[16] << 8 | f[17];
	if (ip_len < 28 || ip_len > size - 14)
		return;
	c = malloc(size);
	CHECK(c != NULL);
	memcpy(c, f, size);
	c[36] = c[37] = 0;
	lumen_dp_put16(c + 36, (__u16)~lumen_dp_sum(c + 34, ip_len - 20));
	check_icmp(c, size);
	for (i = 0; i < size; i++)
		CHECK(i == 36 || i == 37 || c[i] == f[i]);
	free(c);
}

static void check_parse(const uint8_t *f, size_t size, uint16_t port)
{
	struct lumen_dp_pkt out, before;
	int rc;

	memset(&out, 0x5A, sizeof(out));
	memcpy(&before, &out, sizeof(out));
	rc = lumen_dp_parse(f, (__u32)size, port, &out);
	CHECK(rc <= 0 && rc > -LUMEN_DP_ENOSPACE);
	CHECK(strcmp(lumen_dp_strerror(rc), "unknown error") != 0);
	if (rc != 0)
		CHECK(memcmp(&out, &before, sizeof(out)) == 0);
	else
		check_accepted(f, size, port, &out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy;
	uint32_t sum = 0;
	size_t i;

	if (size > 4096)
		return 0;
	check_parse(data, size, LUMEN_DP_UDP_PORT);
	if (size < 34)
		return 0;

	copy = malloc(size);
	CHECK(copy != NULL);
	memcpy(copy, data, size);
	copy[24] = copy[25] = 0;
	for (i = 14; i < 34; i += 2)
		sum += (uint32_t)copy[i] << 8 | copy[i + 1];
	while (sum >> 16)
		sum = (sum & 0xFFFF) + (sum >> 16);
	copy[24] = (uint8_t)(~sum >> 8);
	copy[25] = (uint8_t)~sum;
	check_parse(copy, size, size >= 38 ? (uint16_t)(copy[36] << 8 | copy[37]) : LUMEN_DP_UDP_PORT);
	check_icmp(data, size);
	check_icmp_fixed(copy, size);
	free(copy);
	return 0;
}
