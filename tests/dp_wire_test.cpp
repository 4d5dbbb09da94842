// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Unit tests of the lumen-dp wire format (include/lumen/dp_wire.h): golden
 * bytes of a DATA and an ACK frame written by hand from the header comment
 * (IPv4 checksums summed by hand), round trips of every type with and without
 * an INT extension, every refusal reason of the parser and the builder,
 * truncation at every length (each copy in a block of exactly that size, so
 * ASan sees an over-read), Ethernet padding, and ECN marking in place.
 */
#include "lumen/dp_wire.h"
#include "test_rng.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace
{

using Bytes = std::vector<std::uint8_t>;
using lumen::test::Rng;

/* The IPv4 header checksum computed here, not by the header under test. */
void fix_csum(Bytes &f)
{
	std::uint32_t sum = 0;
	f[24] = f[25] = 0;
	for (int i = 14; i < 34; i += 2)
		sum += static_cast<std::uint32_t>(f[i] << 8 | f[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xFFFF) + (sum >> 16);
	f[24] = static_cast<std::uint8_t>(~sum >> 8);
	f[25] = static_cast<std::uint8_t>(~sum);
}

bool csum_ok(const Bytes &f)
{
	std::uint32_t sum = 0;
	for (int i = 14; i < 34; i += 2)
		sum += static_cast<std::uint32_t>(f[i] << 8 | f[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xFFFF) + (sum >> 16);
	return sum == 0xFFFF;
}

void put16(Bytes &f, std::size_t off, unsigned v)
{
	f[off] = static_cast<std::uint8_t>(v >> 8);
	f[off + 1] = static_cast<std::uint8_t>(v);
}

lumen_dp_pkt base_pkt(std::uint8_t type)
{
	lumen_dp_pkt p;
	std::memset(&p, 0, sizeof(p));
	const std::uint8_t a[6] = {0x02, 0, 0, 0, 0, 0x01}, b[6] = {0x02, 0, 0, 0, 0, 0x02};
	std::memcpy(p.eth_src, a, 6);
	std::memcpy(p.eth_dst, b, 6);
	p.ip_src = 0x0A000001;
	p.ip_dst = 0x0A000002;
	p.sport = 0xC001;
	p.dport = LUMEN_DP_UDP_PORT;
	p.type = type;
	p.conn_id = 0x11223344;
	p.psn = 7;
	return p;
}

const std::uint8_t kPayload[4] = {'A', 'B', 'C', 'D'};

/* The golden DATA packet (see GoldenData). */
lumen_dp_pkt golden_data()
{
	lumen_dp_pkt p = base_pkt(LUMEN_DP_DATA);
	p.ecn = LUMEN_DP_ECN_ECT0;
	p.flags = LUMEN_DP_F_MSG_LAST;
	p.ts_ns = 0x0102030405060708ull;
	p.msg_id = 5;
	p.msg_off = 0x10;
	p.msg_len = 0x14;
	p.payload = kPayload;
	p.payload_len = 4;
	return p;
}

Bytes build(const lumen_dp_pkt &p)
{
	Bytes f(2048, 0xEE);
	int n = lumen_dp_build(f.data(), static_cast<__u32>(f.size()), &p);
	EXPECT_GT(n, 0) << lumen_dp_strerror(n);
	f.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
	return f;
}

/* Parse a copy in a heap block of exactly the frame's size. */
int parse(const Bytes &f, lumen_dp_pkt *out, std::uint16_t port = LUMEN_DP_UDP_PORT)
{
	std::unique_ptr<std::uint8_t[]> copy(new std::uint8_t[f.size() ? f.size() : 1]);
	if (!f.empty())
		std::memcpy(copy.get(), f.data(), f.size());
	int rc = lumen_dp_parse(copy.get(), static_cast<__u32>(f.size()), port, out);
	/* pointers into the copy: move them onto f for the caller */
	if (rc == 0) {
		if (out->ext)
			out->ext = f.data() + (out->ext - copy.get());
		if (out->payload)
			out->payload = f.data() + (out->payload - copy.get());
	}
	return rc;
}

void expect_same(const lumen_dp_pkt &a, const lumen_dp_pkt &b)
{
	EXPECT_EQ(0, std::memcmp(a.eth_dst, b.eth_dst, 6));
	EXPECT_EQ(0, std::memcmp(a.eth_src, b.eth_src, 6));
	EXPECT_EQ(a.ip_src, b.ip_src);
	EXPECT_EQ(a.ip_dst, b.ip_dst);
	EXPECT_EQ(a.sport, b.sport);
	EXPECT_EQ(a.dport, b.dport);
	EXPECT_EQ(a.ecn, b.ecn);
	EXPECT_EQ(a.type, b.type);
	EXPECT_EQ(a.flags, b.flags);
	EXPECT_EQ(a.conn_id, b.conn_id);
	EXPECT_EQ(a.psn, b.psn);
	EXPECT_EQ(a.payload_len, b.payload_len);
	if (a.payload_len && b.payload_len && a.payload && b.payload) {
		EXPECT_EQ(0, std::memcmp(a.payload, b.payload, a.payload_len));
	}
	if (a.type == LUMEN_DP_DATA) {
		EXPECT_EQ(a.ts_ns, b.ts_ns);
		EXPECT_EQ(a.msg_id, b.msg_id);
		EXPECT_EQ(a.msg_off, b.msg_off);
		EXPECT_EQ(a.msg_len, b.msg_len);
	} else {
		EXPECT_EQ(a.echo_ts, b.echo_ts);
		EXPECT_EQ(a.sack, b.sack);
		EXPECT_EQ(a.echo_psn, b.echo_psn);
		EXPECT_EQ(a.echo_sport, b.echo_sport);
		EXPECT_EQ(a.pkts, b.pkts);
		EXPECT_EQ(a.ce_pkts, b.ce_pkts);
		EXPECT_EQ(a.rwnd, b.rwnd);
	}
}

/* An INT request with `slots` slots and `filled` hops stamped, or an echo of it. */
Bytes int_option(unsigned slots, unsigned filled, bool echo)
{
	Bytes req(LUMEN_INT_MAX_LEN, 0);
	int n = lumen_int_write_request(req.data(), LUMEN_INT_MAX_LEN, slots);
	EXPECT_GT(n, 0);
	for (unsigned i = 0; i < filled; i++) {
		lumen_int_hop hop;
		lumen_int_hop_make(&hop, 1000u * (i + 1), 77777u * (i + 3), 1500u * i, lumen_int_rate_encode(10000));
		EXPECT_EQ(lumen_int_push_hop(req.data(), static_cast<__u32>(n), &hop), static_cast<int>(i));
	}
	req.resize(static_cast<std::size_t>(n));
	if (!echo)
		return req;
	lumen_int_opt opt{};
	EXPECT_EQ(lumen_int_parse(req.data(), static_cast<__u32>(req.size()), &opt), 0);
	Bytes out(LUMEN_INT_MAX_LEN, 0);
	n = lumen_int_write_echo(out.data(), LUMEN_INT_MAX_LEN, &opt);
	EXPECT_GT(n, 0);
	out.resize(static_cast<std::size_t>(n));
	return out;
}

/* ---------------------------------------------------------------------- */
/* Layout                                                                  */

TEST(DpWireLayout, Sizes)
{
	EXPECT_EQ(LUMEN_DP_HDR_OFF, 42);
	EXPECT_EQ(lumen_dp_hdr_len(LUMEN_DP_DATA, 0), 74u);
	EXPECT_EQ(lumen_dp_hdr_len(LUMEN_DP_ACK, 0), 82u);
	EXPECT_EQ(lumen_dp_hdr_len(LUMEN_DP_NACK, 10), 122u);
	EXPECT_EQ(lumen_dp_hdr_len(LUMEN_DP_DATA, 3), 86u);
	EXPECT_EQ(lumen_dp_hdr_len(LUMEN_DP_DATA, 11), 0u);
	EXPECT_EQ(lumen_dp_hdr_len(LUMEN_DP_PROBE, 0), 62u);
	EXPECT_EQ(lumen_dp_hdr_len(0, 0), 0u);
	EXPECT_EQ(lumen_dp_hdr_len(LUMEN_DP_SYN, 0), 66u);
	EXPECT_EQ(lumen_dp_hdr_len(LUMEN_DP_SYNACK, 0), 66u);
	EXPECT_EQ(lumen_dp_hdr_len(LUMEN_DP_FIN, 0), 66u);
	EXPECT_EQ(lumen_dp_hdr_len(8, 0), 0u);
	EXPECT_GE(LUMEN_DP_EXT_MAX, LUMEN_INT_MAX_LEN);
}

TEST(DpWireLayout, BigEndianHelpersAnyAlignment)
{
	std::uint8_t b[11] = {};
	lumen_dp_put16(b + 1, 0x1234);
	EXPECT_EQ(b[1], 0x12);
	EXPECT_EQ(b[2], 0x34);
	lumen_dp_put32(b + 1, 0xA1B2C3D4);
	EXPECT_EQ(lumen_dp_get32(b + 1), 0xA1B2C3D4u);
	EXPECT_EQ(b[1], 0xA1);
	EXPECT_EQ(b[4], 0xD4);
	lumen_dp_put64(b + 3, 0x0102030405060708ull);
	for (int i = 0; i < 8; i++)
		EXPECT_EQ(b[3 + i], i + 1);
	EXPECT_EQ(lumen_dp_get64(b + 3), 0x0102030405060708ull);
	EXPECT_EQ(lumen_dp_get16(b + 3), 0x0102);
}

/*
 * DATA, MSG_LAST, ECT(0), 10.0.0.1:49153 -> 10.0.0.2:4792, payload "ABCD".
 * IP total length 20 + 8 + 32 + 4 = 64 (0x40), UDP length 44 (0x2C).
 * Checksum: 4502 + 0040 + 0000 + 4000 + 4011 + 0000 + 0a00 + 0001 + 0a00 +
 * 0002 = d956 (no carry); ~d956 = 26a9.
 */
TEST(DpWireGolden, Data)
{
	const Bytes expect{
		0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00, /* Ethernet */
		0x45, 0x02, 0x00, 0x40, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x26, 0xA9, /* IPv4 */
		0x0A, 0x00, 0x00, 0x01, 0x0A, 0x00, 0x00, 0x02, /* addresses */
		0xC0, 0x01, 0x12, 0xB8, 0x00, 0x2C, 0x00, 0x00, /* UDP */
		0x01, 0x01, 0x04, 0x00, 0x11, 0x22, 0x33, 0x44, 0x00, 0x00, 0x00, 0x07, /* common */
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, /* ts_ns */
		0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x14, /* msg id, off, len */
		'A',  'B',  'C',  'D'};
	lumen_dp_pkt p = golden_data();
	Bytes buf(expect.size() + 8, 0xEE);
	ASSERT_EQ(lumen_dp_build(buf.data(), static_cast<__u32>(expect.size()), &p), 78);
	EXPECT_EQ(Bytes(buf.begin(), buf.begin() + 78), expect);
	for (std::size_t i = 78; i < buf.size(); i++)
		EXPECT_EQ(buf[i], 0xEE) << "byte " << i;

	lumen_dp_pkt q;
	ASSERT_EQ(parse(expect, &q), 0);
	expect_same(p, q);
	EXPECT_EQ(q.ext_words, 0);
	EXPECT_EQ(q.ext_len, 0u);
	EXPECT_EQ(q.ext, nullptr);
	EXPECT_EQ(q.payload, expect.data() + 74);
	EXPECT_EQ(q.echo_ts, 0u); /* the other type's fields are zero */
	EXPECT_EQ(q.sack, 0u);
	EXPECT_EQ(q.rwnd, 0);
}

/*
 * ACK, ECE | INT, Not-ECT, 10.0.0.2:49151 -> 10.0.0.1:4792, with the echo of
 * an empty path (FD 05 4C 55 30: 5 bytes, padded to 2 words).
 * IP total length 20 + 8 + 40 + 8 = 76 (0x4C), UDP length 56 (0x38).
 * Checksum: 4500 + 004c + 0000 + 4000 + 4011 + 0000 + 0a00 + 0002 + 0a00 +
 * 0001 = d960; ~d960 = 269f.
 */
TEST(DpWireGolden, AckWithIntEcho)
{
	const Bytes expect{0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x02,
			   0x08, 0x00, /* Ethernet */
			   0x45, 0x00, 0x00, 0x4C, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x26, 0x9F, /* IPv4 */
			   0x0A, 0x00, 0x00, 0x02, 0x0A, 0x00, 0x00, 0x01, /* addresses */
			   0xBF, 0xFF, 0x12, 0xB8, 0x00, 0x38, 0x00, 0x00, /* UDP */
			   0x01, 0x02, 0x18, 0x02, 0x11, 0x22, 0x33, 0x44, 0x00, 0x00, 0x00, 0x08, /* common */
			   0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, /* echo_ts */
			   0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05, /* sack */
			   0x00, 0x00, 0x00, 0x07, 0xC0, 0x01, 0x00, 0x01, 0x00, 0x01, 0x03, 0xFF, /* echo psn..rwnd */
			   0xFD, 0x05, 0x4C, 0x55, 0x30, 0x00, 0x00, 0x00}; /* INT echo, 3 bytes padding */
	lumen_dp_pkt p = base_pkt(LUMEN_DP_ACK);
	std::swap(p.eth_src, p.eth_dst);
	std::swap(p.ip_src, p.ip_dst);
	p.sport = 0xBFFF;
	p.flags = LUMEN_DP_F_ECE | LUMEN_DP_F_INT;
	p.psn = 8;
	p.echo_ts = 0x0102030405060708ull;
	p.sack = 0x8000000000000005ull;
	p.echo_psn = 7;
	p.echo_sport = 0xC001;
	p.pkts = 1;
	p.ce_pkts = 1;
	p.rwnd = 0x3FF;
	const std::uint8_t echo[40] = {0xFD, 0x05, 0x4C, 0x55, 0x30, 0xEE, 0xEE}; /* bytes after it are not copied */
	p.ext = echo;
	p.ext_len = sizeof(echo);
	Bytes buf(200, 0xEE);
	ASSERT_EQ(lumen_dp_build(buf.data(), static_cast<__u32>(buf.size()), &p), 90);
	EXPECT_EQ(Bytes(buf.begin(), buf.begin() + 90), expect);
	EXPECT_EQ(buf[90], 0xEE);

	lumen_dp_pkt q;
	ASSERT_EQ(parse(expect, &q), 0);
	expect_same(p, q);
	EXPECT_EQ(q.ext_words, 2);
	EXPECT_EQ(q.ext_len, 8u);
	EXPECT_EQ(q.ext, expect.data() + 82);
	EXPECT_EQ(q.payload, nullptr);
	EXPECT_EQ(q.payload_len, 0u);
	EXPECT_EQ(q.ts_ns, 0u);
	EXPECT_EQ(q.msg_len, 0u);
}

/* ---------------------------------------------------------------------- */
/* Round trips                                                             */

lumen_dp_pkt random_pkt(Rng &r, std::uint8_t type, const Bytes &ext, Bytes &payload)
{
	lumen_dp_pkt p = base_pkt(type);
	for (int i = 0; i < 6; i++) {
		p.eth_src[i] = r.byte();
		p.eth_dst[i] = r.byte();
	}
	p.ip_src = static_cast<__u32>(r.next());
	p.ip_dst = static_cast<__u32>(r.next());
	p.sport = static_cast<__u16>(r.next());
	p.dport = static_cast<__u16>(r.next());
	p.ecn = static_cast<__u8>(r.below(4));
	p.flags = static_cast<__u8>(r.next() & (type == LUMEN_DP_DATA ? 0x07 : LUMEN_DP_F_ECE));
	p.conn_id = static_cast<__u32>(r.next());
	p.psn = static_cast<__u32>(r.next());
	if (!ext.empty()) {
		p.flags |= LUMEN_DP_F_INT;
		p.ext = ext.data();
		p.ext_len = static_cast<__u32>(ext.size());
	}
	if (type == LUMEN_DP_DATA) {
		payload.resize(r.range(1, 1500));
		for (auto &b : payload)
			b = r.byte();
		p.payload = payload.data();
		p.payload_len = static_cast<__u32>(payload.size());
		p.ts_ns = r.next();
		p.msg_id = static_cast<__u32>(r.next());
		p.msg_len = static_cast<__u32>(r.range(payload.size(), 0xFFFFFFFFull));
		p.msg_off = static_cast<__u32>(r.range(0, p.msg_len - payload.size()));
	} else {
		p.echo_ts = r.next();
		p.sack = r.next();
		p.echo_psn = static_cast<__u32>(r.next());
		p.echo_sport = static_cast<__u16>(r.next());
		p.pkts = static_cast<__u16>(r.next());
		p.ce_pkts = static_cast<__u16>(r.next());
		p.rwnd = static_cast<__u16>(r.next());
	}
	return p;
}

TEST(DpWireRoundTrip, EveryTypeWithAndWithoutInt)
{
	Rng r(12);
	int cases = 0;
	for (std::uint8_t type = LUMEN_DP_DATA; type <= LUMEN_DP_NACK; type++) {
		bool data = type == LUMEN_DP_DATA;
		/* ext: none, then each INT size this type carries */
		for (int slots = -1; slots <= LUMEN_INT_MAX_HOPS; slots++) {
			if (data && slots == 0)
				continue; /* a request has >= 1 slot */
			for (int rep = 0; rep < 20; rep++, cases++) {
				SCOPED_TRACE(testing::Message() << "type " << int(type) << " slots " << slots);
				Bytes ext, payload;
				if (slots >= 0)
					ext = int_option(data ? unsigned(slots) : 5,
							 unsigned(slots) - (data ? rep % 2 : 0), !data);
				lumen_dp_pkt p = random_pkt(r, type, ext, payload);
				Bytes f = build(p);
				std::size_t ext_bytes = (ext.size() + 3) / 4 * 4;
				ASSERT_EQ(f.size(), lumen_dp_hdr_len(type, unsigned(ext_bytes / 4)) + payload.size());
				EXPECT_TRUE(csum_ok(f));
				lumen_dp_pkt q;
				ASSERT_EQ(parse(f, &q, p.dport), 0);
				expect_same(p, q);
				EXPECT_EQ(q.ext_len, ext_bytes);
				if (!ext.empty()) {
					ASSERT_NE(q.ext, nullptr);
					EXPECT_EQ(0, std::memcmp(q.ext, ext.data(), ext.size()));
					for (std::size_t i = ext.size(); i < ext_bytes; i++)
						EXPECT_EQ(q.ext[i], 0);
				}
				/* the parsed packet builds the same bytes */
				EXPECT_EQ(build(q), f);
			}
		}
	}
	EXPECT_EQ(cases, 20 * (6 + 7 + 7));
}

TEST(DpWireRoundTrip, EthernetPaddingIgnored)
{
	Bytes f = build(golden_data());
	lumen_dp_pkt a, b;
	ASSERT_EQ(parse(f, &a), 0);
	f.resize(f.size() + 17, 0xAB);
	ASSERT_EQ(parse(f, &b), 0);
	expect_same(a, b);
}

TEST(DpWireRoundTrip, PayloadInPlaceOrWrittenByCaller)
{
	lumen_dp_pkt p = golden_data();
	Bytes ref = build(p);
	/* payload NULL: the bytes already there stay */
	Bytes f(ref.size(), 0);
	std::memcpy(f.data() + 74, kPayload, 4);
	p.payload = nullptr;
	ASSERT_EQ(lumen_dp_build(f.data(), static_cast<__u32>(f.size()), &p), 78);
	EXPECT_EQ(f, ref);
	/* payload already at its place in the buffer */
	Bytes g(ref.size(), 0);
	std::memcpy(g.data() + 74, kPayload, 4);
	p.payload = g.data() + 74;
	ASSERT_EQ(lumen_dp_build(g.data(), static_cast<__u32>(g.size()), &p), 78);
	EXPECT_EQ(g, ref);
	/* a parsed frame rebuilt in its own buffer (ext and payload in place) */
	Bytes req = int_option(2, 1, false);
	p = golden_data();
	p.flags |= LUMEN_DP_F_INT;
	p.ext = req.data();
	p.ext_len = static_cast<__u32>(req.size());
	Bytes h = build(p), h0 = h;
	lumen_dp_pkt q;
	ASSERT_EQ(lumen_dp_parse(h.data(), static_cast<__u32>(h.size()), LUMEN_DP_UDP_PORT, &q), 0);
	q.psn++;
	ASSERT_EQ(lumen_dp_build(h.data(), static_cast<__u32>(h.size()), &q), static_cast<int>(h.size()));
	h0[53]++; /* psn 7 -> 8, nothing else */
	EXPECT_EQ(h, h0);
}

/* What the format fixes but the parser does not judge: id, TTL, DSCP, DF, UDP checksum. */
TEST(DpWireRoundTrip, FieldsLeftToTheNetworkIgnored)
{
	Bytes f = build(golden_data());
	lumen_dp_pkt a, b;
	ASSERT_EQ(parse(f, &a), 0);
	f[15] |= 0xB8; /* DSCP 46 */
	f[18] = 0x12; /* id */
	f[20] = 0x00; /* DF cleared */
	f[22] = 1; /* TTL */
	fix_csum(f);
	f[40] = 0xAB; /* UDP checksum: not verified */
	ASSERT_EQ(parse(f, &b), 0);
	expect_same(a, b);
}

/* ---------------------------------------------------------------------- */
/* Refusals                                                                */

class DpWireRefuse : public testing::Test
{
      protected:
	std::set<int> hit_;

	void refuse(const Bytes &f, int err, const char *what, std::uint16_t port = LUMEN_DP_UDP_PORT)
	{
		SCOPED_TRACE(what);
		lumen_dp_pkt out, before;
		std::memset(&out, 0xA5, sizeof(out));
		before = out;
		EXPECT_EQ(parse(f, &out, port), -err) << "expected " << lumen_dp_strerror(-err);
		EXPECT_EQ(0, std::memcmp(&out, &before, sizeof(out))) << "output changed on error";
		hit_.insert(err);
	}

	void refuse_build(const lumen_dp_pkt &p, int err, const char *what, std::uint32_t room = 2048)
	{
		SCOPED_TRACE(what);
		Bytes f(2048, 0);
		EXPECT_EQ(lumen_dp_build(f.data(), room, &p), -err) << "expected " << lumen_dp_strerror(-err);
	}

	/* A change to the lumen header or beyond, checksum still right. */
	static Bytes with(Bytes f, std::size_t off, std::uint8_t v)
	{
		f[off] = v;
		fix_csum(f);
		return f;
	}

	/* The frame with `delta` bytes more or less in IP and UDP length. */
	static Bytes resized(Bytes f, long delta)
	{
		f.resize(static_cast<std::size_t>(static_cast<long>(f.size()) + delta), 0);
		put16(f, 16, static_cast<unsigned>(f.size() - 14));
		put16(f, 38, static_cast<unsigned>(f.size() - 34));
		fix_csum(f);
		return f;
	}
};

TEST_F(DpWireRefuse, EveryParseError)
{
	const Bytes data = build(golden_data());
	lumen_dp_pkt ap = base_pkt(LUMEN_DP_ACK);
	const Bytes ack = build(ap);
	Bytes echo = int_option(2, 2, true), req = int_option(2, 2, false);
	lumen_dp_pkt dp = golden_data();
	dp.flags |= LUMEN_DP_F_INT;
	dp.ext = req.data();
	dp.ext_len = static_cast<__u32>(req.size()); /* 19 bytes: 5 words, 1 byte padding */
	const Bytes data_int = build(dp);
	ap.flags = LUMEN_DP_F_INT;
	ap.ext = echo.data();
	ap.ext_len = static_cast<__u32>(echo.size());
	const Bytes ack_int = build(ap);
	Bytes f;

	refuse(Bytes(data.begin(), data.begin() + 13), LUMEN_DP_ESHORT_ETH, "13 bytes");
	refuse(with(data, 12, 0x86), LUMEN_DP_EETHERTYPE, "IPv6 ethertype 0x86dd");
	f = data;
	f[12] = 0x81; /* VLAN tag 0x8100 */
	refuse(f, LUMEN_DP_EETHERTYPE, "VLAN");
	refuse(Bytes(data.begin(), data.begin() + 33), LUMEN_DP_ESHORT_IP, "33 bytes");
	refuse(with(data, 14, 0x65), LUMEN_DP_EIP_VERSION, "version 6");
	refuse(with(data, 14, 0x46), LUMEN_DP_EIP_IHL, "IHL 6");
	refuse(with(data, 14, 0x44), LUMEN_DP_EIP_IHL, "IHL 4");
	f = data;
	f[22]--; /* TTL 63 without a checksum update */
	refuse(f, LUMEN_DP_EIP_CSUM, "stale checksum");
	f = data;
	f[25] ^= 1;
	refuse(f, LUMEN_DP_EIP_CSUM, "checksum bit flip");
	f = data;
	put16(f, 16, 27);
	fix_csum(f);
	refuse(f, LUMEN_DP_EIP_LEN, "total length 27");
	f = data;
	put16(f, 16, 0);
	fix_csum(f);
	refuse(f, LUMEN_DP_EIP_LEN, "total length 0");
	f = data;
	put16(f, 16, static_cast<unsigned>(f.size() - 14 + 1));
	fix_csum(f);
	refuse(f, LUMEN_DP_EIP_TRUNC, "total length one beyond the frame");
	refuse(with(data, 20, 0x60), LUMEN_DP_EIP_FRAG, "DF | MF");
	f = data;
	put16(f, 20, 0x4001); /* DF, offset 8 bytes */
	fix_csum(f);
	refuse(f, LUMEN_DP_EIP_FRAG, "fragment offset");
	refuse(with(data, 23, 6), LUMEN_DP_EIP_PROTO, "TCP");
	refuse(data, LUMEN_DP_EUDP_PORT, "another port", 4791);
	f = data;
	put16(f, 38, static_cast<unsigned>(f.size() - 34 - 1));
	refuse(f, LUMEN_DP_EUDP_LEN, "UDP length one short");
	f = data;
	put16(f, 38, static_cast<unsigned>(f.size() - 34 + 1));
	refuse(f, LUMEN_DP_EUDP_LEN, "UDP length one long");
	f = data;
	f.resize(f.size() + 4, 0);
	put16(f, 38, static_cast<unsigned>(f.size() - 34));
	refuse(f, LUMEN_DP_EUDP_LEN, "UDP length covers the Ethernet padding");

	/* the lumen header: sizes through the IP and UDP lengths */
	refuse(resized(data, -36), LUMEN_DP_ESHORT_HDR, "no lumen header");
	refuse(resized(data, -25), LUMEN_DP_ESHORT_HDR, "11 bytes of lumen header");
	refuse(resized(data, -5), LUMEN_DP_ESHORT_HDR, "DATA header 31 bytes");
	refuse(resized(ack, -1), LUMEN_DP_ESHORT_HDR, "ACK header 39 bytes");
	refuse(resized(ack, -8), LUMEN_DP_ESHORT_HDR, "an ACK the size of a DATA header");
	refuse(with(data, 42, 2), LUMEN_DP_EVERSION, "version 2");
	refuse(with(data, 42, 0), LUMEN_DP_EVERSION, "version 0");
	refuse(with(resized(data, -35), 42, 2), LUMEN_DP_EVERSION, "version 2, 1 byte header");
	refuse(with(data, 43, 0), LUMEN_DP_ETYPE, "type 0");
	refuse(with(data, 43, 8), LUMEN_DP_ETYPE, "type 8");
	refuse(with(data, 44, LUMEN_DP_F_ECE), LUMEN_DP_EFLAGS, "ECE on DATA");
	refuse(with(data, 44, 0x80), LUMEN_DP_EFLAGS, "undefined flag on DATA");
	refuse(with(ack, 44, LUMEN_DP_F_RETX), LUMEN_DP_EFLAGS, "RETX on ACK");
	refuse(with(ack, 44, LUMEN_DP_F_MSG_LAST), LUMEN_DP_EFLAGS, "MSG_LAST on ACK");
	refuse(with(with(ack, 43, LUMEN_DP_NACK), 44, LUMEN_DP_F_ACK_NOW), LUMEN_DP_EFLAGS, "ACK_NOW on NACK");
	refuse(with(ack_int, 45, 11), LUMEN_DP_EEXT_WORDS, "11 words");
	refuse(with(ack_int, 45, 255), LUMEN_DP_EEXT_WORDS, "255 words");
	refuse(with(ack, 45, 1), LUMEN_DP_EEXT_LEN, "ACK: 1 word, no bytes left");
	refuse(with(ack_int, 45, 6), LUMEN_DP_EEXT_LEN, "ACK: one word more than the frame");
	refuse(with(ack_int, 44, 0), LUMEN_DP_EEXT, "ACK: echo without INT flag");
	refuse(with(data, 44, LUMEN_DP_F_INT), LUMEN_DP_EINT, "INT flag, no extension");
	refuse(with(data, 45, 1), LUMEN_DP_EEXT, "DATA: payload taken for a word");
	refuse(with(with(data, 44, LUMEN_DP_F_INT), 45, 1), LUMEN_DP_EINT, "INT flag, payload is no INT option");
	refuse(with(data_int, 74, 254), LUMEN_DP_EINT, "INT: kind 254");
	refuse(with(data_int, 76, 0), LUMEN_DP_EINT, "INT: ExID wrong");
	refuse(with(ack_int, 82 + 1, 40), LUMEN_DP_EINT, "INT: option length beyond the extension");
	refuse(with(ack, 44, LUMEN_DP_F_INT), LUMEN_DP_EINT, "ACK: INT flag, no extension");
	/* data_int: the request at 74..92, 1 byte padding at 93, payload at 94 */
	refuse(with(data_int, 78, 0x30 | 2), LUMEN_DP_EINT_DIR, "DATA with an echo");
	refuse(with(ack_int, 86, 0x20 | 2), LUMEN_DP_EINT_DIR, "ACK with a request");
	refuse(with(data_int, 93, 1), LUMEN_DP_EINT_PAD, "padding not zero");
	{
		/* an echo of 0 hops (5 bytes) in 3 words: 7 bytes of padding */
		lumen_dp_pkt p = base_pkt(LUMEN_DP_ACK);
		Bytes e0 = int_option(1, 0, true);
		ASSERT_EQ(e0.size(), 5u);
		p.flags = LUMEN_DP_F_INT;
		p.ext = e0.data();
		p.ext_len = 5;
		Bytes g = build(p); /* 2 words */
		g.insert(g.end(), 4, 0);
		g[45] = 3;
		put16(g, 16, static_cast<unsigned>(g.size() - 14));
		put16(g, 38, static_cast<unsigned>(g.size() - 34));
		fix_csum(g);
		refuse(g, LUMEN_DP_EINT_PAD, "a word of padding too many");
	}
	refuse(resized(data, -4), LUMEN_DP_EEMPTY, "DATA without payload");
	refuse(resized(data_int, -(static_cast<long>(data_int.size()) - 94)), LUMEN_DP_EEMPTY, "DATA+INT no payload");
	f = data;
	f[73] = 0; /* msg_len 0x14 -> 0 */
	fix_csum(f);
	refuse(f, LUMEN_DP_EMSG_LEN, "msg_len 0");
	refuse(with(data, 73, 0x13), LUMEN_DP_EMSG_RANGE, "payload ends one beyond msg_len");
	refuse(resized(data, 1), LUMEN_DP_EMSG_RANGE, "one payload byte more");
	f = data;
	for (int i = 66; i < 70; i++)
		f[i] = 0xFF; /* msg_off 2^32 - 1: the sum must not wrap */
	fix_csum(f);
	refuse(f, LUMEN_DP_EMSG_RANGE, "msg_off + payload_len wraps 32 bits");
	refuse(resized(ack, 1), LUMEN_DP_EPAYLOAD, "ACK with 1 byte payload");
	refuse(resized(ack_int, 4), LUMEN_DP_EPAYLOAD, "ACK+INT with payload");
	refuse(resized(with(ack, 43, LUMEN_DP_NACK), 100), LUMEN_DP_EPAYLOAD, "NACK with payload");

	for (int e = LUMEN_DP_ESHORT_ETH; e <= LUMEN_DP_EPAYLOAD; e++)
		EXPECT_TRUE(hit_.count(e)) << "parse error not tested: " << lumen_dp_strerror(-e);
}

TEST_F(DpWireRefuse, EveryBuildError)
{
	lumen_dp_pkt p = golden_data();
	Bytes req = int_option(2, 0, false), echo = int_option(2, 2, true);
	lumen_dp_pkt q;

	q = p;
	q.type = 0;
	refuse_build(q, LUMEN_DP_ETYPE, "type 0");
	q.type = 8;
	refuse_build(q, LUMEN_DP_ETYPE, "type 8");
	q = p;
	q.flags = LUMEN_DP_F_ECE;
	refuse_build(q, LUMEN_DP_EFLAGS, "ECE on DATA");
	q = p;
	q.ecn = 4;
	refuse_build(q, LUMEN_DP_EINVAL, "ECN 4");
	q = p;
	q.flags |= LUMEN_DP_F_INT;
	refuse_build(q, LUMEN_DP_EINT, "INT without ext");
	q.ext = req.data();
	q.ext_len = 4;
	refuse_build(q, LUMEN_DP_EINT, "ext_len shorter than the option");
	q.ext = echo.data();
	q.ext_len = static_cast<__u32>(echo.size());
	refuse_build(q, LUMEN_DP_EINT_DIR, "echo on DATA");
	q = p;
	q.ext = req.data();
	q.ext_len = static_cast<__u32>(req.size());
	refuse_build(q, LUMEN_DP_EEXT, "ext without INT flag");
	q = p;
	q.payload_len = 0;
	refuse_build(q, LUMEN_DP_EEMPTY, "DATA without payload");
	q = p;
	q.msg_len = 0;
	refuse_build(q, LUMEN_DP_EMSG_LEN, "msg_len 0");
	q = p;
	q.msg_off = 0x11;
	refuse_build(q, LUMEN_DP_EMSG_RANGE, "payload beyond msg_len");
	q.msg_off = 0xFFFFFFFF;
	q.msg_len = 0xFFFFFFFF;
	refuse_build(q, LUMEN_DP_EMSG_RANGE, "wrapping msg_off");
	q = p;
	q.payload = nullptr;
	q.msg_off = 0;
	q.payload_len = 65536 - 20 - 8 - 32; /* IP total length 65536 */
	q.msg_len = q.payload_len;
	refuse_build(q, LUMEN_DP_EINVAL, "IP packet above 64 KiB");
	q.payload_len = 0xFFFFFFFF;
	q.msg_len = 0xFFFFFFFF;
	refuse_build(q, LUMEN_DP_EINVAL, "payload_len 2^32 - 1");
	refuse_build(p, LUMEN_DP_ENOSPACE, "one byte short", 77);
	refuse_build(p, LUMEN_DP_ENOSPACE, "no room", 0);
	q = base_pkt(LUMEN_DP_NACK);
	q.payload = kPayload;
	q.payload_len = 1;
	refuse_build(q, LUMEN_DP_EPAYLOAD, "NACK with payload");
	q = base_pkt(LUMEN_DP_ACK);
	q.flags = LUMEN_DP_F_INT;
	q.ext = req.data();
	q.ext_len = static_cast<__u32>(req.size());
	refuse_build(q, LUMEN_DP_EINT_DIR, "request on ACK");
	q.flags = LUMEN_DP_F_RETX;
	refuse_build(q, LUMEN_DP_EFLAGS, "RETX on ACK");

	/* the largest IP packet builds */
	q = p;
	q.payload = nullptr;
	q.msg_off = 0;
	q.payload_len = 65535 - 20 - 8 - 32;
	q.msg_len = q.payload_len;
	std::vector<std::uint8_t> big(65535 + 14);
	EXPECT_EQ(lumen_dp_build(big.data(), static_cast<__u32>(big.size()), &q), 65535 + 14);
	lumen_dp_pkt out;
	EXPECT_EQ(parse(big, &out), 0);
	EXPECT_EQ(out.payload_len, q.payload_len);
}

TEST(DpWireErrors, StrerrorDistinct)
{
	std::set<std::string> seen;
	for (int e = 0; e < LUMEN_DP_E_COUNT; e++) {
		std::string s = lumen_dp_strerror(-e);
		EXPECT_NE(s, "unknown error") << e;
		EXPECT_TRUE(seen.insert(s).second) << "duplicate message: " << s;
		EXPECT_EQ(s, lumen_dp_strerror(e));
	}
	EXPECT_STREQ(lumen_dp_strerror(-LUMEN_DP_E_COUNT), "unknown error");
	EXPECT_STREQ(lumen_dp_strerror(INT32_MIN), "unknown error");
}

/* ---------------------------------------------------------------------- */
/* Truncation                                                              */

TEST(DpWireTruncation, EveryShorterLengthRefused)
{
	Bytes req = int_option(3, 2, false), echo = int_option(5, 5, true);
	lumen_dp_pkt d = golden_data(), di = golden_data(), a = base_pkt(LUMEN_DP_ACK), n = base_pkt(LUMEN_DP_NACK);
	di.flags |= LUMEN_DP_F_INT;
	di.ext = req.data();
	di.ext_len = static_cast<__u32>(req.size());
	a.flags = LUMEN_DP_F_INT | LUMEN_DP_F_ECE;
	a.ext = echo.data();
	a.ext_len = static_cast<__u32>(echo.size());
	for (const lumen_dp_pkt *p : {&d, &di, &a, &n}) {
		Bytes f = build(*p);
		lumen_dp_pkt out;
		ASSERT_EQ(parse(f, &out), 0);
		for (std::size_t len = 0; len < f.size(); len++) {
			SCOPED_TRACE(len);
			int rc = parse(Bytes(f.begin(), f.begin() + static_cast<long>(len)), &out);
			int want = len < 14   ? -LUMEN_DP_ESHORT_ETH
				   : len < 34 ? -LUMEN_DP_ESHORT_IP
					      : -LUMEN_DP_EIP_TRUNC;
			EXPECT_EQ(rc, want) << lumen_dp_strerror(rc);
		}
	}
}

/* ---------------------------------------------------------------------- */
/* ECN in place                                                            */

TEST(DpWireEcn, MarkCeKeepsChecksumValid)
{
	Bytes f = build(golden_data()); /* ECT(0) */
	lumen_dp_pkt before, after;
	ASSERT_EQ(parse(f, &before), 0);
	ASSERT_EQ(lumen_dp_mark_ce(f.data(), static_cast<__u32>(f.size())), 1);
	EXPECT_EQ(f[15], 0x03);
	EXPECT_TRUE(csum_ok(f));
	/* 26a9 - 1 (TOS 02 -> 03 adds 1 to the sum): 26a8 */
	EXPECT_EQ(f[24], 0x26);
	EXPECT_EQ(f[25], 0xA8);
	ASSERT_EQ(parse(f, &after), 0);
	EXPECT_EQ(after.ecn, LUMEN_DP_ECN_CE);
	after.ecn = before.ecn;
	expect_same(before, after);
	/* marking again changes nothing */
	Bytes g = f;
	EXPECT_EQ(lumen_dp_mark_ce(g.data(), static_cast<__u32>(g.size())), 1);
	EXPECT_EQ(g, f);

	/* Not-ECT is not marked (the switch drops it) */
	lumen_dp_pkt p = golden_data();
	p.ecn = LUMEN_DP_ECN_NOT_ECT;
	Bytes h = build(p), h0 = h;
	EXPECT_EQ(lumen_dp_mark_ce(h.data(), static_cast<__u32>(h.size())), 0);
	EXPECT_EQ(h, h0);

	/* frames that are not IPv4 are not touched */
	EXPECT_EQ(lumen_dp_mark_ce(h.data(), 13), -LUMEN_DP_ESHORT_ETH);
	EXPECT_EQ(lumen_dp_mark_ce(h.data(), 33), -LUMEN_DP_ESHORT_IP);
	h[12] = 0x86;
	EXPECT_EQ(lumen_dp_mark_ce(h.data(), static_cast<__u32>(h.size())), -LUMEN_DP_EETHERTYPE);
	h = h0;
	h[14] = 0x65;
	EXPECT_EQ(lumen_dp_mark_ce(h.data(), static_cast<__u32>(h.size())), -LUMEN_DP_EIP_VERSION);
	EXPECT_EQ(lumen_dp_set_ecn(f.data(), static_cast<__u32>(f.size()), 4), -LUMEN_DP_EINVAL);
}

TEST(DpWireEcn, IncrementalUpdateEqualsRecomputation)
{
	Rng r(99);
	for (int i = 0; i < 20000; i++) {
		Bytes f(34);
		for (auto &b : f)
			b = r.byte();
		f[12] = 0x08;
		f[13] = 0x00;
		f[14] = static_cast<std::uint8_t>(0x40 | (f[14] & 0x0F));
		if (i % 3 == 0)
			f[15] = static_cast<std::uint8_t>(f[15] | 3); /* both directions */
		fix_csum(f);
		unsigned ecn = static_cast<unsigned>(r.below(4));
		ASSERT_EQ(lumen_dp_set_ecn(f.data(), 34, ecn), 0);
		EXPECT_EQ(f[15] & 3, ecn);
		ASSERT_TRUE(csum_ok(f)) << i;
		Bytes g = f;
		fix_csum(g);
		ASSERT_EQ(g, f) << i; /* the same value, not only an equivalent one */
	}
}

/* The builder's checksum, from the values, equals the one summed over the bytes it wrote. */
TEST(DpWireEcn, ChecksumFromValuesEqualsRecomputation)
{
	Rng r(5);
	for (int i = 0; i < 20000; i++) {
		lumen_dp_pkt p = golden_data();
		p.ecn = static_cast<__u8>(r.below(4));
		p.ip_src = static_cast<__u32>(r.below(1ull << 32));
		p.ip_dst = i % 5 ? static_cast<__u32>(r.below(1ull << 32)) : 0xFFFFFFFFu;
		p.payload = nullptr; /* left as the buffer has it */
		p.payload_len = 1 + static_cast<__u32>(r.below(1900));
		p.msg_len = p.payload_len;
		p.msg_off = 0;
		Bytes f = build(p);
		ASSERT_FALSE(f.empty()) << i;
		ASSERT_TRUE(csum_ok(f)) << i;
		Bytes g = f;
		fix_csum(g);
		ASSERT_EQ(g, f) << i; /* the same value, not only an equivalent one */
	}
}

/* A byte of a valid frame changed: refused, or a packet that builds and parses back the same. */
TEST(DpWireRobust, MutatedFramesParseOrRebuildExactly)
{
	Rng r(7);
	Bytes req = int_option(2, 1, false), echo = int_option(3, 3, true);
	for (int i = 0; i < 3000; i++) {
		std::uint8_t type = static_cast<std::uint8_t>(1 + i % 3);
		Bytes payload;
		const Bytes none;
		const Bytes &ext = i % 2 ? (type == LUMEN_DP_DATA ? req : echo) : none;
		lumen_dp_pkt p = random_pkt(r, type, ext, payload);
		Bytes f = build(p);
		std::size_t at = r.below(f.size());
		f[at] = r.byte();
		if (r.chance(70))
			fix_csum(f);
		lumen_dp_pkt q;
		if (parse(f, &q, p.dport) != 0)
			continue;
		Bytes g = build(q);
		lumen_dp_pkt q2;
		ASSERT_EQ(parse(g, &q2, p.dport), 0);
		expect_same(q, q2);
	}
}

} // namespace
