// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Unit tests of the INT TCP option, wire format version 2 ("wide records and
 * partial echoes", include/lumen/int_option.h): the 6-byte header and 72-bit
 * record against hand-written bytes, round trips, every refusal of the
 * parser, the version-aware writers (requests, echo ranges, the echo that
 * fits the option space left), the bottleneck a partial echo carries, the
 * switch-side push, and hop deltas with 24-bit timestamps and counters.
 *
 * Every expected value here is derived from the header comment (the wire
 * format documentation), not from the implementation; the hand-written
 * records are checked bit by bit in IntOptionV2Layout.HopFieldBitPositions.
 */
#include "int_option_oracle.h"
#include "int_option_test_util.h"
#include "lumen/int_option.h"
#include "test_rng.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <vector>

namespace
{

using namespace lumen::test;

/* Version 2's widths, spelled out from the documentation. */
constexpr std::uint32_t kMask24 = 0xFFFFFF;
constexpr std::uint32_t kDtEnd2 = (1u << 23) / 16 * 15; /* 15/16 of half the 2^24-tick wrap */

/*
 * Three records with their 72 bits written out by hand:
 *   rate 10 | ts 24 | tx 24 | qlen 14, big-endian.
 * kHopA: 10G (1100100010), ts 0xABCDEF, tx 0x123456, qlen 0x0FED
 *   1100100010 101010111100110111101111 000100100011010001010110 00111111101101
 *   = C8 AA F3 7B C4 8D 15 8F ED
 * kHopB: 25G (0011001011), ts and tx at their maximum 2^24 - 1, qlen 3
 *   0011001011 1{24} 1{24} 00000000000011 = 32 FF FF FF FF FF FF C0 03
 * kHopC: 100G (1100100011), ts 0, tx 0, qlen saturated 0x3FFF
 *   1100100011 0{24} 0{24} 11111111111111 = C8 C0 00 00 00 00 00 3F FF
 */
const lumen_int_hop kHopA = mkhop(kCode10G, 0xABCDEF, 0x123456, 0x0FED);
const lumen_int_hop kHopB = mkhop(kCode25G, 0xFFFFFF, 0xFFFFFF, 3);
const lumen_int_hop kHopC = mkhop(kCode100G, 0, 0, 0x3FFF);
const Bytes kRecA{0xC8, 0xAA, 0xF3, 0x7B, 0xC4, 0x8D, 0x15, 0x8F, 0xED};
const Bytes kRecB{0x32, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xC0, 0x03};
const Bytes kRecC{0xC8, 0xC0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x3F, 0xFF};

Bytes cat(std::initializer_list<Bytes> parts)
{
	Bytes out;
	for (const Bytes &p : parts)
		out.insert(out.end(), p.begin(), p.end());
	return out;
}

Bytes pack2(const lumen_int_hop &h)
{
	Bytes out(LUMEN_INT_V2_HOP_LEN, 0xEE);
	lumen_int_hop_pack_wide(&h, out.data());
	return out;
}

/* Kind 253, length, ExID "LU", then byte 4 and byte 5 as given. */
Bytes hdr2(unsigned len, std::uint8_t byte4, std::uint8_t byte5)
{
	return Bytes{0xFD, static_cast<std::uint8_t>(len), 0x4C, 0x55, byte4, byte5};
}

/* The first 10 bits of the record at `at`, by hand. */
void set_rate(Bytes &b, std::size_t at, unsigned c)
{
	b[at] = static_cast<std::uint8_t>(c >> 2);
	b[at + 1] = static_cast<std::uint8_t>((b[at + 1] & 0x3F) | ((c & 3) << 6));
}

/* A hand-written version 2 request: 3 slots, hop 0 filled with kHopA. */
Bytes base_request()
{
	return cat({hdr2(33, 0x41, 0x00), kRecA, Bytes(18, 0)});
}

/* A version 2 request as the parser reports it, `count` of `hops` filled. */
lumen_int_opt request(std::initializer_list<lumen_int_hop> hops, unsigned slots = 3, __u8 flags = 0)
{
	lumen_int_opt o;
	std::memset(&o, 0, sizeof(o));
	o.version = LUMEN_INT_VERSION_WIDE;
	o.flags = flags;
	o.slots = static_cast<__u8>(slots);
	o.count = static_cast<__u8>(hops.size());
	o.path_hops = o.count;
	unsigned i = 0;
	for (const lumen_int_hop &h : hops)
		o.hops[i++] = h;
	return o;
}

/* ---------------------------------------------------------------------- */
/* Byte-exact layout                                                       */

TEST(IntOptionV2Layout, Constants)
{
	EXPECT_EQ(LUMEN_INT_VERSION, 1);
	EXPECT_EQ(LUMEN_INT_VERSION_WIDE, 2);
	for (unsigned v = 0; v < 8; v++)
		EXPECT_EQ(lumen_int_version_known(v) != 0, v == 1 || v == 2) << v;
	EXPECT_FALSE(lumen_int_version_known(9)); /* 1 or 2 in a wider field is not a version */
	EXPECT_FALSE(lumen_int_version_known(0x21));
	/* Version 2: 6-byte header, 9-byte records, 1..3 of them in 40 bytes. */
	EXPECT_EQ(lumen_int_hdr_len(2), 6u);
	EXPECT_EQ(lumen_int_hop_len(2), 9u);
	EXPECT_EQ(lumen_int_max_slots(2), 3u);
	EXPECT_EQ(lumen_int_opt_len(2, 1), 15u);
	EXPECT_EQ(lumen_int_opt_len(2, 2), 24u);
	EXPECT_EQ(lumen_int_opt_len(2, 3), 33u);
	EXPECT_EQ(LUMEN_INT_V2_OPT_LEN(3), 33);
	EXPECT_EQ(lumen_int_ts_mask(2), kMask24);
	EXPECT_EQ(lumen_int_tx_mask(2), kMask24);
	/* 15/16 of half the 2^24-tick (268 ms) wrap: 7864320 ticks, 125.8 ms. */
	EXPECT_EQ(kDtEnd2, 7864320u);
	EXPECT_EQ(lumen_int_dt_max_ticks(2), kDtEnd2);
	EXPECT_EQ(lumen_int_dt_max_ns(2), 125829120ull);
	/* Version 1 unchanged. */
	EXPECT_EQ(lumen_int_hdr_len(1), 5u);
	EXPECT_EQ(lumen_int_hop_len(1), 7u);
	EXPECT_EQ(lumen_int_max_slots(1), 5u);
	EXPECT_EQ(lumen_int_opt_len(1, 5), 40u);
	EXPECT_EQ(lumen_int_ts_mask(1), 0x3FFFFu);
	EXPECT_EQ(lumen_int_tx_mask(1), 0x3FFFu);
	EXPECT_EQ(lumen_int_dt_max_ticks(1), 122880u);
	EXPECT_EQ(lumen_int_dt_max_ns(1), 1966080ull);
}

TEST(IntOptionV2Layout, FitsTheOptionSpaceItClaims)
{
	const unsigned space = 40, timestamps = 12, sack1 = 2 + 10; /* NOP, NOP, SACK with one block */
	auto round4 = [](unsigned n) { return (n + 3) & ~3u; };
	/* Two records next to timestamps (24 of 28 bytes); three only alone. */
	EXPECT_LE(round4(lumen_int_opt_len(2, 2)), space - timestamps);
	EXPECT_GT(round4(lumen_int_opt_len(2, 3)), space - timestamps);
	EXPECT_LE(round4(lumen_int_opt_len(2, 3)), space);
	EXPECT_GT(lumen_int_opt_len(2, 4), space);
	/* One record, 15 bytes, also next to timestamps and one SACK block (16 left). */
	EXPECT_EQ(space - timestamps - sack1, 16u);
	EXPECT_LE(round4(lumen_int_opt_len(2, 1)), space - timestamps - sack1);
}

TEST(IntOptionV2Layout, HopFieldBitPositions)
{
	/* One field at a time, all ones: rate bits 0-9, ts 10-33, tx 34-57, qlen 58-71. */
	EXPECT_EQ(pack2(mkhop(0x3FF, 0, 0, 0)), (Bytes{0xFF, 0xC0, 0, 0, 0, 0, 0, 0, 0}));
	EXPECT_EQ(pack2(mkhop(0, kMask24, 0, 0)), (Bytes{0x00, 0x3F, 0xFF, 0xFF, 0xC0, 0, 0, 0, 0}));
	EXPECT_EQ(pack2(mkhop(0, 0, kMask24, 0)), (Bytes{0, 0, 0, 0, 0x3F, 0xFF, 0xFF, 0xC0, 0x00}));
	EXPECT_EQ(pack2(mkhop(0, 0, 0, 0x3FFF)), (Bytes{0, 0, 0, 0, 0, 0, 0, 0x3F, 0xFF}));
	/* Least significant bit of every field: bits 9, 33, 57, 71. */
	EXPECT_EQ(pack2(mkhop(1, 1, 1, 1)), (Bytes{0x00, 0x40, 0x00, 0x00, 0x40, 0x00, 0x00, 0x40, 0x01}));
	/* Most significant bit of every field: bits 0, 10, 34, 58. */
	EXPECT_EQ(pack2(mkhop(0x200, 0x800000, 0x800000, 0x2000)),
		  (Bytes{0x80, 0x20, 0x00, 0x00, 0x20, 0x00, 0x00, 0x20, 0x00}));
	/* The field boundaries inside bytes 1, 4 and 7, from both sides. */
	EXPECT_EQ(pack2(mkhop(1, 0x800000, 0, 0)), (Bytes{0x00, 0x60, 0, 0, 0, 0, 0, 0, 0}));
	EXPECT_EQ(pack2(mkhop(0, 1, 0x800000, 0)), (Bytes{0, 0, 0, 0, 0x60, 0, 0, 0, 0}));
	EXPECT_EQ(pack2(mkhop(0, 0, 1, 0x2000)), (Bytes{0, 0, 0, 0, 0, 0, 0, 0x60, 0x00}));
	/* The hand-written records. */
	EXPECT_EQ(pack2(kHopA), kRecA);
	EXPECT_EQ(pack2(kHopB), kRecB);
	EXPECT_EQ(pack2(kHopC), kRecC);
	/* Wrap values: one past the maximum is 0 on the wire; no bit leaks into a neighbour. */
	EXPECT_EQ(pack2(mkhop(kCode10G, 0x1000000, 0x1000000, 1)), pack2(mkhop(kCode10G, 0, 0, 1)));
	EXPECT_EQ(pack2(mkhop(kCode10G, 0x1000000 | 7, 0x1000000 | 9, 1)), pack2(mkhop(kCode10G, 7, 9, 1)));
	EXPECT_EQ(pack2(mkhop(0xFC00, 0xFF000000u, 0xFF000000u, 0xC000)), Bytes(9, 0));
	/* The same record in version 1 keeps only the low 18 and 14 bits, in 7 bytes. */
	Bytes v1(7, 0xEE);
	lumen_int_hop_pack_v(&kHopA, 1, v1.data());
	Bytes low(7, 0xEE);
	const lumen_int_hop a1 = mkhop(kCode10G, 0xABCDEF & 0x3FFFF, 0x123456 & 0x3FFF, 0x0FED);
	lumen_int_hop_pack(&a1, low.data());
	EXPECT_EQ(v1, low);
	Bytes v2(9, 0xEE);
	lumen_int_hop_pack_v(&kHopA, 2, v2.data());
	EXPECT_EQ(v2, kRecA);
}

TEST(IntOptionV2Layout, HopUnpackOfHandBytes)
{
	struct {
		const Bytes &raw;
		lumen_int_hop want;
	} const cases[] = {{kRecA, kHopA}, {kRecB, kHopB}, {kRecC, kHopC}};
	for (const auto &c : cases) {
		for (int pattern : {0x00, 0xFF}) {
			lumen_int_hop h;
			std::memset(&h, pattern, sizeof(h));
			lumen_int_hop_unpack_wide(c.raw.data(), &h);
			EXPECT_TRUE(same_hop(h, c.want)) << h.rate << " " << h.ts << " " << h.tx << " " << h.qlen;
			EXPECT_EQ(h.pad, 0);
			std::memset(&h, pattern, sizeof(h));
			lumen_int_hop_unpack_v(c.raw.data(), 2, &h);
			EXPECT_TRUE(same_hop(h, c.want));
		}
	}
}

TEST(IntOptionV2Layout, RequestBytes)
{
	/* Empty requests of 1, 2 and 3 slots: ver 2 (010), E 0, O 0, count 0; byte 5 zero. */
	for (unsigned slots = 1; slots <= 3; slots++) {
		SCOPED_TRACE(slots);
		Bytes buf(48, 0xEE);
		const unsigned len = 6 + 9 * slots;
		ASSERT_EQ(lumen_int_write_request_v(buf.data(), 40, 2, slots), static_cast<int>(len));
		EXPECT_EQ(Bytes(buf.begin(), buf.begin() + len), cat({hdr2(len, 0x40, 0x00), Bytes(9 * slots, 0)}));
		for (std::size_t i = len; i < buf.size(); i++)
			ASSERT_EQ(buf[i], 0xEE) << "byte " << i;
	}
	/* Filled by switches, one record each, in order. */
	Bytes one(15, 0xEE), two(24, 0xEE), three(33, 0xEE);
	ASSERT_EQ(lumen_int_write_request_v(one.data(), 15, 2, 1), 15);
	ASSERT_EQ(lumen_int_push_hop(one.data(), 15, &kHopA), 0);
	EXPECT_EQ(one, cat({Bytes{0xFD, 0x0F, 0x4C, 0x55, 0x41, 0x00}, kRecA}));
	ASSERT_EQ(lumen_int_write_request_v(two.data(), 24, 2, 2), 24);
	ASSERT_EQ(lumen_int_push_hop(two.data(), 24, &kHopA), 0);
	ASSERT_EQ(lumen_int_push_hop(two.data(), 24, &kHopB), 1);
	EXPECT_EQ(two, cat({Bytes{0xFD, 0x18, 0x4C, 0x55, 0x42, 0x00}, kRecA, kRecB}));
	ASSERT_EQ(lumen_int_write_request_v(three.data(), 33, 2, 3), 33);
	ASSERT_EQ(lumen_int_push_hop(three.data(), 33, &kHopA), 0);
	EXPECT_EQ(three, cat({Bytes{0xFD, 0x21, 0x4C, 0x55, 0x41, 0x00}, kRecA, Bytes(18, 0)}));
	ASSERT_EQ(lumen_int_push_hop(three.data(), 33, &kHopB), 1);
	ASSERT_EQ(lumen_int_push_hop(three.data(), 33, &kHopC), 2);
	EXPECT_EQ(three, cat({Bytes{0xFD, 0x21, 0x4C, 0x55, 0x43, 0x00}, kRecA, kRecB, kRecC}));
}

TEST(IntOptionV2Layout, FullAndPartialEchoBytes)
{
	const Bytes req = cat({hdr2(33, 0x43, 0x00), kRecA, kRecB, kRecC});
	const lumen_int_opt o = parse_ok(req);
	Bytes echo(48, 0xEE);
	/* Full: ver 2, E, count 3 (0x53); First 0, Hops 3 (0x03); the records as they came. */
	ASSERT_EQ(lumen_int_write_echo(echo.data(), 40, &o), 33);
	EXPECT_EQ(Bytes(echo.begin(), echo.begin() + 33), cat({hdr2(33, 0x53, 0x03), kRecA, kRecB, kRecC}));
	EXPECT_EQ(echo[33], 0xEE);
	/* Partial, record 1 alone: count 1 (0x51); First 1, Hops 3 (0x13). */
	echo.assign(48, 0xEE);
	ASSERT_EQ(lumen_int_write_echo_range(echo.data(), 40, &o, 1, 1), 15);
	EXPECT_EQ(Bytes(echo.begin(), echo.begin() + 15), cat({hdr2(15, 0x51, 0x13), kRecB}));
	EXPECT_EQ(echo[15], 0xEE);
	/* Partial, records 1 and 2. */
	echo.assign(48, 0xEE);
	ASSERT_EQ(lumen_int_write_echo_range(echo.data(), 40, &o, 1, 2), 24);
	EXPECT_EQ(Bytes(echo.begin(), echo.begin() + 24), cat({hdr2(24, 0x52, 0x13), kRecB, kRecC}));
	/* Record 2 alone, of an overflowed request: O (0x08) carried. */
	Bytes over = req;
	over[4] = 0x4B;
	const lumen_int_opt ov = parse_ok(over);
	EXPECT_EQ(ov.flags, LUMEN_INT_FLAG_OVERFLOW);
	echo.assign(48, 0xEE);
	ASSERT_EQ(lumen_int_write_echo_range(echo.data(), 40, &ov, 2, 1), 15);
	EXPECT_EQ(Bytes(echo.begin(), echo.begin() + 15), cat({hdr2(15, 0x59, 0x23), kRecC}));
	echo.assign(48, 0xEE);
	ASSERT_EQ(lumen_int_write_echo(echo.data(), 40, &ov), 33);
	EXPECT_EQ(Bytes(echo.begin(), echo.begin() + 33), cat({hdr2(33, 0x5B, 0x03), kRecA, kRecB, kRecC}));
}

TEST(IntOptionV2Layout, ParseHandWritten)
{
	lumen_int_opt o = parse_ok(base_request());
	EXPECT_EQ(o.version, 2);
	EXPECT_EQ(o.flags, 0);
	EXPECT_EQ(o.slots, 3);
	EXPECT_EQ(o.count, 1);
	EXPECT_EQ(o.first_hop, 0);
	EXPECT_EQ(o.path_hops, 1); /* a request: the hops it has recorded */
	EXPECT_EQ(o.pad[0], 0);
	EXPECT_EQ(o.pad[1], 0);
	EXPECT_TRUE(same_hop(o.hops[0], kHopA));
	for (int i = 1; i < LUMEN_INT_MAX_HOPS; i++)
		EXPECT_TRUE(same_hop(o.hops[i], mkhop(0, 0, 0, 0))) << i;

	/* A partial echo: record 2 of 3, with O. */
	o = parse_ok(cat({hdr2(15, 0x59, 0x23), kRecC}));
	EXPECT_EQ(o.version, 2);
	EXPECT_EQ(o.flags, LUMEN_INT_FLAG_ECHO | LUMEN_INT_FLAG_OVERFLOW);
	EXPECT_EQ(o.slots, 1);
	EXPECT_EQ(o.count, 1);
	EXPECT_EQ(o.first_hop, 2);
	EXPECT_EQ(o.path_hops, 3);
	EXPECT_TRUE(same_hop(o.hops[0], kHopC));
	for (int i = 1; i < LUMEN_INT_MAX_HOPS; i++)
		EXPECT_TRUE(same_hop(o.hops[i], mkhop(0, 0, 0, 0))) << i;

	/* A full echo of two. */
	o = parse_ok(cat({hdr2(24, 0x52, 0x02), kRecB, kRecA}));
	EXPECT_EQ(o.count, 2);
	EXPECT_EQ(o.first_hop, 0);
	EXPECT_EQ(o.path_hops, 2);
	EXPECT_TRUE(same_hop(o.hops[0], kHopB));
	EXPECT_TRUE(same_hop(o.hops[1], kHopA));

	/* Version 1 reports First 0 and Hops = Count. */
	const Bytes v1{0xFD, 0x0C, 0x4C, 0x55, 0x31, 0xC8, 0xAA, 0xBC, 0xD4, 0x8D, 0x0F, 0xED};
	o = parse_ok(v1);
	EXPECT_EQ(o.version, 1);
	EXPECT_EQ(o.first_hop, 0);
	EXPECT_EQ(o.path_hops, 1);
}

/* ---------------------------------------------------------------------- */
/* Round trips                                                             */

lumen_int_hop sample_hop(Rng &rng)
{
	static const std::uint32_t rates[] = {10, 100, 1000, 10000, 25000, 40000, 100000, 400000, 800000, 1500};
	lumen_int_hop h;
	lumen_int_hop_make_v(&h, 2, rng.next(), rng.next(), rng.range(0, 1ull << 30),
			     lumen_int_rate_encode(rates[rng.range(0, 9)]));
	return h;
}

TEST(IntOptionV2RoundTrip, RequestPushParseEcho)
{
	Rng rng(21);
	for (unsigned slots = 1; slots <= 3; slots++) {
		SCOPED_TRACE(testing::Message() << "slots " << slots);
		const unsigned len = 6 + 9 * slots;
		Bytes buf(len);
		ASSERT_EQ(lumen_int_write_request_v(buf.data(), len, 2, slots), static_cast<int>(len));
		std::vector<lumen_int_hop> pushed;
		for (unsigned k = 0; k <= slots; k++) {
			SCOPED_TRACE(testing::Message() << "filled " << k);
			const lumen_int_opt req = parse_ok(buf);
			EXPECT_EQ(req.version, 2);
			EXPECT_EQ(req.flags, 0);
			EXPECT_EQ(req.slots, slots);
			EXPECT_EQ(req.count, k);
			for (unsigned i = 0; i < k; i++)
				EXPECT_TRUE(same_hop(req.hops[i], pushed[i])) << i;

			/* Every range of the filled records, the whole one included. */
			for (unsigned first = 0; first < k; first++) {
				for (unsigned count = 1; first + count <= k; count++) {
					SCOPED_TRACE(testing::Message() << "range " << first << " + " << count);
					Bytes echo(40, 0xEE);
					const int elen =
						lumen_int_write_echo_range(echo.data(), 40, &req, first, count);
					ASSERT_EQ(elen, static_cast<int>(6 + 9 * count));
					echo.resize(static_cast<std::size_t>(elen));
					const lumen_int_opt e = parse_ok(echo);
					EXPECT_EQ(e.version, 2);
					EXPECT_EQ(e.flags, LUMEN_INT_FLAG_ECHO);
					EXPECT_EQ(e.slots, count);
					EXPECT_EQ(e.count, count);
					EXPECT_EQ(e.first_hop, first);
					EXPECT_EQ(e.path_hops, k);
					for (unsigned i = 0; i < count; i++)
						EXPECT_TRUE(same_hop(e.hops[i], pushed[first + i])) << i;
					/* The echoed record bytes are the request's. */
					EXPECT_EQ(0,
						  std::memcmp(echo.data() + 6, buf.data() + 6 + 9 * first, 9 * count));
				}
			}
			if (k < slots) {
				const lumen_int_hop h = sample_hop(rng);
				ASSERT_EQ(lumen_int_push_hop(buf.data(), len, &h), static_cast<int>(k));
				pushed.push_back(h);
			}
		}
		/* Full: one more push flags overflow and changes nothing else; the echo carries O. */
		Bytes before = buf;
		const lumen_int_hop extra = sample_hop(rng);
		EXPECT_EQ(lumen_int_push_hop(buf.data(), len, &extra), -LUMEN_INT_EFULL);
		before[4] |= 0x08;
		EXPECT_EQ(buf, before);
		const lumen_int_opt req = parse_ok(buf);
		EXPECT_EQ(req.flags, LUMEN_INT_FLAG_OVERFLOW);
		Bytes echo(40);
		ASSERT_EQ(lumen_int_write_echo(echo.data(), 40, &req), static_cast<int>(len));
		echo.resize(len);
		const lumen_int_opt e = parse_ok(echo);
		EXPECT_EQ(e.flags, LUMEN_INT_FLAG_ECHO | LUMEN_INT_FLAG_OVERFLOW);
		EXPECT_EQ(e.count, slots);
		EXPECT_EQ(e.path_hops, slots);
	}
}

TEST(IntOptionV2RoundTrip, PackUnpackAllFieldValues)
{
	Rng rng(22);
	for (int i = 0; i < 100000; i++) {
		const lumen_int_hop h =
			mkhop(static_cast<__u16>(rng.range(0, 1023)), static_cast<__u32>(rng.range(0, kMask24)),
			      static_cast<__u32>(rng.range(0, kMask24)), static_cast<__u16>(rng.range(0, 0x3FFF)));
		std::uint8_t raw[9];
		lumen_int_hop_pack_v(&h, 2, raw);
		lumen_int_hop back;
		lumen_int_hop_unpack_v(raw, 2, &back);
		ASSERT_TRUE(same_hop(h, back)) << i;
		/* Against the oracle's bit-by-bit decoding. */
		lumen_int_hop doc;
		lumen_doc_hop_decode(raw, 2, &doc);
		ASSERT_TRUE(same_hop(h, doc)) << i;
	}
}

TEST(IntOptionV2RoundTrip, HopMakeWidths)
{
	lumen_int_hop h;
	auto make = [&](unsigned ver, std::uint64_t now, std::uint64_t tx, std::uint64_t q, __u16 rc) {
		std::memset(&h, 0xFF, sizeof(h));
		lumen_int_hop_make_v(&h, ver, now, tx, q, rc);
	};
	/* 10G, 512-byte units; ts wraps every 2^28 ns, tx every 2^24 units = 2^33 B. */
	make(2, (1ull << 28) - 16, (1ull << 33) - 512, 16382ull * 512 + 511, kCode10G);
	EXPECT_TRUE(same_hop(h, mkhop(kCode10G, kMask24, kMask24, 16382)));
	EXPECT_EQ(h.pad, 0);
	make(2, 1ull << 28, 1ull << 33, 16383ull * 512, kCode10G);
	EXPECT_TRUE(same_hop(h, mkhop(kCode10G, 0, 0, 16383)));
	make(2, (7ull << 40) + (1ull << 28) + 16 * 5 + 15, (3ull << 40) + 9 * 512 + 511, ~0ull, kCode10G);
	EXPECT_TRUE(same_hop(h, mkhop(kCode10G, 5, 9, 16383)));
	/* Version 1 of the same inputs: the low 18 and 14 bits; qlen alike. */
	make(1, (1ull << 28) - 16, (1ull << 33) - 512, 16382ull * 512 + 511, kCode10G);
	EXPECT_TRUE(same_hop(h, mkhop(kCode10G, 0x3FFFF, 0x3FFF, 16382)));
	/* Unknown rate: 1-byte units. */
	make(2, 160, (1ull << 24) + 5, 20000, 0);
	EXPECT_TRUE(same_hop(h, mkhop(0, 10, 5, 16383)));
	/* A code the format cannot carry is sent as unknown, in either version. */
	make(2, 160, 5, 7, code(17, 5));
	EXPECT_TRUE(same_hop(h, mkhop(0, 10, 5, 7)));
	/* Every field against the documented rule, random inputs. */
	Rng rng(23);
	for (int i = 0; i < 100000; i++) {
		const std::uint64_t now = rng.next(), tx = rng.next(), q = rng.next() >> rng.range(0, 63);
		const __u16 rc = static_cast<__u16>(rng.range(0, 1023));
		const bool ok = lumen_doc_rate_valid(rc) != 0;
		const unsigned k = lumen_doc_shift(ok ? lumen_doc_rate_mbps(rc) : 0);
		make(2, now, tx, q, rc);
		ASSERT_EQ(h.rate, ok ? rc : 0) << rc;
		ASSERT_EQ(h.ts, (now >> 4) & kMask24);
		ASSERT_EQ(h.tx, (tx >> k) & kMask24);
		ASSERT_EQ(h.qlen, std::min<std::uint64_t>(q >> k, 16383));
		ASSERT_EQ(h.pad, 0);
	}
}

/* ---------------------------------------------------------------------- */
/* Malformed input                                                         */

TEST(IntOptionV2Malformed, Truncated)
{
	const Bytes b = base_request();
	expect_reject(b, 5, LUMEN_INT_ETRUNCATED, "header only");
	expect_reject(b, 6, LUMEN_INT_ETRUNCATED, "version 2 header only");
	expect_reject(b, 32, LUMEN_INT_ETRUNCATED, "one byte short");
	const Bytes e = cat({hdr2(15, 0x51, 0x13), kRecB});
	expect_reject(e, 14, LUMEN_INT_ETRUNCATED, "partial echo one byte short");
	/* A longer buffer (more options follow) is fine. */
	Bytes longer = b;
	longer.insert(longer.end(), {0x01, 0x01, 0x08, 0x0A});
	EXPECT_EQ(parse_ok(longer).slots, 3);
}

TEST(IntOptionV2Malformed, LengthNotSixPlusNine)
{
	/* Up to 40: anything but 15, 24, 33 (6 is a request without a record). */
	for (unsigned len = 5; len <= 40; len++) {
		SCOPED_TRACE(len);
		if (len == 15 || len == 24 || len == 33)
			continue;
		Bytes b(64, 0);
		const Bytes req = base_request();
		std::copy(req.begin(), req.end(), b.begin());
		b[1] = static_cast<std::uint8_t>(len);
		b[4] = 0x40; /* count 0: no count or rate check could fail first */
		expect_reject(b, LUMEN_INT_ELENGTH, "request, not 6 + 9n");
		b[4] = 0x50; /* an echo of count 0 */
		if (len != 6)
			expect_reject(b, LUMEN_INT_ELENGTH, "echo, not 6 + 9n");
	}
	/* Length 5 is a version 1 header: too short for version 2's. */
	expect_reject(Bytes{0xFD, 0x05, 0x4C, 0x55, 0x40}, LUMEN_INT_ELENGTH, "length 5");
	expect_reject(Bytes{0xFD, 0x05, 0x4C, 0x55, 0x50}, LUMEN_INT_ELENGTH, "echo of length 5");
	/* Version 1's lengths are not version 2's. */
	for (unsigned len : {12u, 19u, 26u, 40u}) {
		Bytes b(64, 0);
		b[0] = 0xFD;
		b[1] = static_cast<std::uint8_t>(len);
		b[2] = 0x4C;
		b[3] = 0x55;
		b[4] = 0x40;
		expect_reject(b, LUMEN_INT_ELENGTH, "a version 1 length");
	}
	/* Above 40: 6 + 9n (n >= 4) is too many slots, anything else a bad length. */
	int ehops = 0, elength = 0;
	for (unsigned len = 41; len <= 255; len++) {
		SCOPED_TRACE(len);
		Bytes b(255, 0);
		b[0] = 0xFD;
		b[1] = static_cast<std::uint8_t>(len);
		b[2] = 0x4C;
		b[3] = 0x55;
		b[4] = 0x40;
		if ((len - 6) % 9 == 0) {
			expect_reject(b, LUMEN_INT_EHOPS, "above 40, 6 + 9n");
			ehops++;
		} else {
			expect_reject(b, LUMEN_INT_ELENGTH, "above 40, not 6 + 9n");
			elength++;
		}
	}
	EXPECT_EQ(ehops, 24); /* 4..27 slots: 42 .. 249 */
	EXPECT_EQ(elength, 215 - 24);
}

/* A version 2 option of `slots` records, all a valid 10G record. */
Bytes long_option(unsigned slots, std::uint8_t byte4, std::uint8_t byte5)
{
	Bytes b = hdr2(6 + 9 * slots, byte4, byte5);
	for (unsigned i = 0; i < slots; i++)
		b.insert(b.end(), kRecA.begin(), kRecA.end());
	return b;
}

TEST(IntOptionV2Malformed, MoreThanThreeSlots)
{
	/* 4 and 5 records (42 and 51 bytes): EHOPS whatever the flags, count, First/Hops and rates. */
	for (unsigned slots = 4; slots <= 5; slots++) {
		SCOPED_TRACE(testing::Message() << "slots " << slots);
		const std::uint8_t echo_full = static_cast<std::uint8_t>(0x50 | slots);
		expect_reject(long_option(slots, echo_full, static_cast<std::uint8_t>(slots)), LUMEN_INT_EHOPS,
			      "echo, count = slots = hops");
		for (unsigned count = 0; count <= 7; count++) {
			SCOPED_TRACE(count);
			expect_reject(long_option(slots, static_cast<std::uint8_t>(0x40 | count), 0), LUMEN_INT_EHOPS,
				      "request");
			expect_reject(long_option(slots, static_cast<std::uint8_t>(0x48 | count), 0xFF),
				      LUMEN_INT_EHOPS, "request with O and byte 5 set");
			expect_reject(long_option(slots, static_cast<std::uint8_t>(0x50 | count), 0x3F),
				      LUMEN_INT_EHOPS, "echo, bad First/Hops");
		}
		Bytes bad = long_option(slots, echo_full, static_cast<std::uint8_t>(slots));
		for (std::size_t i = 6; i < bad.size(); i++)
			bad[i] = 0xFF;
		expect_reject(bad, LUMEN_INT_EHOPS, "bad rates");
		/* Earlier checks win. */
		const Bytes ok = long_option(slots, echo_full, 0);
		expect_reject(ok, ok.size() - 1, LUMEN_INT_ETRUNCATED, "one byte short");
		Bytes exid = ok;
		exid[2] = 0x4D;
		expect_reject(exid, LUMEN_INT_EEXID, "foreign ExID");
		Bytes v3 = ok;
		v3[4] = static_cast<std::uint8_t>(0x60 | (v3[4] & 0x1F));
		expect_reject(v3, LUMEN_INT_EVERSION, "version 3");
	}
	/* The boundary: three records (33 bytes) are fine. */
	EXPECT_EQ(parse_ok(long_option(3, 0x53, 0x03)).count, 3);
	EXPECT_EQ(parse_ok(long_option(3, 0x42, 0x00)).slots, 3);
}

TEST(IntOptionV2Malformed, CountBeyondSlots)
{
	for (unsigned count = 2; count <= 7; count++) {
		Bytes one = cat({hdr2(15, static_cast<std::uint8_t>(0x40 | count), 0), kRecA});
		expect_reject(one, LUMEN_INT_ECOUNT, "1-slot request");
	}
	for (unsigned count = 4; count <= 7; count++) {
		Bytes b = base_request();
		b[4] = static_cast<std::uint8_t>(0x40 | count);
		expect_reject(b, LUMEN_INT_ECOUNT, "3-slot request");
		b[4] |= 0x08;
		expect_reject(b, LUMEN_INT_ECOUNT, "3-slot request with O");
	}
	EXPECT_EQ(parse_ok(long_option(3, 0x43, 0)).count, 3);
}

TEST(IntOptionV2Malformed, EchoCountNotSlots)
{
	const Bytes full = long_option(3, 0x53, 0x03);
	for (unsigned count : {0u, 1u, 2u, 4u, 5u, 7u}) {
		Bytes b = full;
		b[4] = static_cast<std::uint8_t>(0x50 | count);
		b[5] = 0x03;
		expect_reject(b, LUMEN_INT_ECOUNT, "echo count != slots");
	}
	expect_reject(cat({hdr2(15, 0x50, 0x01), kRecA}), LUMEN_INT_ECOUNT, "one record, count 0");
	expect_reject(cat({hdr2(15, 0x52, 0x02), kRecA}), LUMEN_INT_ECOUNT, "one record, count 2");
}

TEST(IntOptionV2Malformed, RequestWithNonZeroByteFive)
{
	/* First and Hops belong to echoes: a request's byte 5 is 0, or it is refused. */
	for (unsigned b5 = 1; b5 <= 255; b5++) {
		SCOPED_TRACE(b5);
		Bytes b = base_request();
		b[5] = static_cast<std::uint8_t>(b5);
		expect_reject(b, LUMEN_INT_ECOUNT, "request, count 1 of 3");
		b[4] = 0x48; /* empty, overflowed */
		expect_reject(b, LUMEN_INT_ECOUNT, "request, count 0, O");
		Bytes full = long_option(3, 0x43, static_cast<std::uint8_t>(b5));
		expect_reject(full, LUMEN_INT_ECOUNT, "full request");
	}
	EXPECT_EQ(parse_ok(base_request()).count, 1);
}

TEST(IntOptionV2Malformed, EchoFirstAndHops)
{
	/*
	 * Every byte 5 for echoes of 1, 2 and 3 records: accepted exactly when
	 * Hops <= 3 and First + Count <= Hops, reporting First and Hops.
	 */
	int accepted = 0;
	for (unsigned count = 1; count <= 3; count++) {
		for (unsigned b5 = 0; b5 <= 255; b5++) {
			SCOPED_TRACE(testing::Message() << "count " << count << " byte 5 " << b5);
			const unsigned first = b5 >> 4, hops = b5 & 15;
			const Bytes b = long_option(count, static_cast<std::uint8_t>(0x50 | count),
						    static_cast<std::uint8_t>(b5));
			if (hops <= 3 && first + count <= hops) {
				const lumen_int_opt o = parse_ok(b);
				EXPECT_EQ(o.first_hop, first);
				EXPECT_EQ(o.path_hops, hops);
				EXPECT_EQ(o.count, count);
				accepted++;
			} else {
				expect_reject(b, LUMEN_INT_ECOUNT, "First + Count > Hops, or Hops > 3");
			}
		}
	}
	/* count 1: (0,1) (0,2) (1,2) (0,3) (1,3) (2,3); count 2: 3; count 3: 1 */
	EXPECT_EQ(accepted, 6 + 3 + 1);
	/* Spelled out. */
	expect_reject(cat({hdr2(15, 0x51, 0x00), kRecA}), LUMEN_INT_ECOUNT, "Hops 0");
	expect_reject(cat({hdr2(15, 0x51, 0x33), kRecA}), LUMEN_INT_ECOUNT, "First 3 of 3");
	expect_reject(cat({hdr2(15, 0x51, 0x04), kRecA}), LUMEN_INT_ECOUNT, "Hops 4");
	expect_reject(cat({hdr2(15, 0x51, 0x3F), kRecA}), LUMEN_INT_ECOUNT, "Hops 15");
	expect_reject(cat({hdr2(24, 0x52, 0x23), kRecA, kRecA}), LUMEN_INT_ECOUNT, "records 2 and 3 of 3");
}

TEST(IntOptionV2Malformed, BadRateInFilledHop)
{
	/* Codes from the documented rule: mant = 0 with exp != 0, or above 1.6 Tbit/s. */
	std::vector<unsigned> bad;
	for (unsigned exp = 1; exp <= 7; exp++)
		bad.push_back(code(0, exp));
	for (unsigned c : {code(17, 5), code(127, 5), code(2, 6), code(1, 7), code(127, 7)})
		bad.push_back(c);
	for (unsigned c : bad) {
		SCOPED_TRACE(c);
		Bytes b = base_request();
		b[4] = 0x42; /* count 2 */
		b.resize(15);
		b.insert(b.end(), kRecB.begin(), kRecB.end());
		b.insert(b.end(), kRecC.begin(), kRecC.end());
		Bytes h0 = b;
		set_rate(h0, 6, c);
		expect_reject(h0, LUMEN_INT_ERATE, "hop 0");
		Bytes h1 = b;
		set_rate(h1, 15, c);
		expect_reject(h1, LUMEN_INT_ERATE, "hop 1");
		/* In an unfilled slot it is not looked at, and reported raw. */
		Bytes h2 = b;
		set_rate(h2, 24, c);
		const lumen_int_opt o = parse_ok(h2);
		EXPECT_EQ(o.count, 2);
		EXPECT_EQ(o.hops[2].rate, c);
		/* In an echo every record is filled. */
		h2[4] = 0x53;
		h2[5] = 0x03;
		expect_reject(h2, LUMEN_INT_ERATE, "echo record 2");
		Bytes partial = cat({hdr2(15, 0x51, 0x23), kRecC});
		set_rate(partial, 6, c);
		expect_reject(partial, LUMEN_INT_ERATE, "partial echo");
	}
	/* The boundary and "unknown" are valid in a filled record. */
	for (unsigned c : {0u, unsigned(kCodeMax), unsigned(code(127, 4)), unsigned(code(1, 0))}) {
		Bytes b = base_request();
		set_rate(b, 6, c);
		EXPECT_EQ(parse_ok(b).hops[0].rate, c);
	}
}

TEST(IntOptionV2Malformed, CheckOrder)
{
	/*
	 * Inputs where two documented checks fail; the earlier one wins: ...,
	 * ExID, length >= 5, version, length = 6 + 9n, slots <= 3, count <=
	 * slots, echo count == slots / request with a record, request byte 5
	 * = 0 / echo First + Count <= Hops <= 3, rate codes.
	 */
	expect_reject(Bytes{0xFD, 0x0F, 0x4C, 0x54, 0x40, 0xFF}, 6, LUMEN_INT_ETRUNCATED, "truncation before ExID");
	expect_reject(Bytes{0xFD, 0x06, 0x4C, 0x54, 0x40, 0xFF}, LUMEN_INT_EEXID, "ExID before byte 5");
	expect_reject(Bytes{0xFD, 0x06, 0x4C, 0x55, 0x60, 0x00}, LUMEN_INT_EVERSION, "version 3 before length");
	expect_reject(Bytes{0xFD, 0x05, 0x4C, 0x55, 0x40}, LUMEN_INT_ELENGTH, "version 2 header longer than 5");
	expect_reject(cat({hdr2(16, 0x47, 0xFF), kRecA, Bytes{0}}), LUMEN_INT_ELENGTH, "length before count");
	expect_reject(long_option(4, 0x47, 0xFF), LUMEN_INT_EHOPS, "slots > 3 before count");
	expect_reject(long_option(4, 0x51, 0xFF), LUMEN_INT_EHOPS, "slots > 3 before echo count");
	expect_reject(Bytes{0xFD, 0x06, 0x4C, 0x55, 0x40, 0xFF}, LUMEN_INT_ELENGTH, "no record before byte 5");
	expect_reject(Bytes{0xFD, 0x06, 0x4C, 0x55, 0x41, 0x00}, LUMEN_INT_ECOUNT, "count > slots before no record");
	Bytes b = base_request();
	set_rate(b, 6, 1023);
	b[5] = 0x10;
	expect_reject(b, LUMEN_INT_ECOUNT, "request byte 5 before rate");
	b[5] = 0;
	expect_reject(b, LUMEN_INT_ERATE, "then the rate");
	Bytes e = cat({hdr2(15, 0x51, 0x04), kRecA});
	set_rate(e, 6, 1023);
	expect_reject(e, LUMEN_INT_ECOUNT, "echo Hops before rate");
	e[5] = 0x01;
	expect_reject(e, LUMEN_INT_ERATE, "then the rate");
}

/* ---------------------------------------------------------------------- */
/* Writers                                                                 */

TEST(IntOptionV2Writer, WriteRequestV)
{
	/* Version 1: 1..5 slots, the same bytes as lumen_int_write_request. */
	for (unsigned slots = 1; slots <= 5; slots++) {
		Bytes a(48, 0xEE), b(48, 0xEE);
		ASSERT_EQ(lumen_int_write_request_v(a.data(), 40, 1, slots), static_cast<int>(5 + 7 * slots));
		ASSERT_EQ(lumen_int_write_request(b.data(), 40, slots), static_cast<int>(5 + 7 * slots));
		EXPECT_EQ(a, b) << slots;
		EXPECT_EQ(a[4], 0x20);
		EXPECT_EQ(a[5 + 7 * slots], 0xEE);
	}
	/* Version 2: 1..3 slots (bytes: IntOptionV2Layout.RequestBytes); the exact length suffices. */
	for (unsigned slots = 1; slots <= 3; slots++) {
		Bytes a(48, 0xEE);
		const unsigned len = 6 + 9 * slots;
		ASSERT_EQ(lumen_int_write_request_v(a.data(), len, 2, slots), static_cast<int>(len));
		EXPECT_EQ(a[len], 0xEE);
		EXPECT_EQ(parse_ok(Bytes(a.begin(), a.begin() + len)).slots, slots);
	}
	/* Refusals write nothing. */
	Bytes buf(64, 0xEE);
	const Bytes untouched(64, 0xEE);
	struct {
		unsigned ver, slots, buf_len;
		int rc;
		const char *what;
	} const cases[] = {
		{1, 0, 64, -LUMEN_INT_EINVAL, "version 1, no slot"},
		{1, 6, 64, -LUMEN_INT_EINVAL, "version 1, 6 slots"},
		{2, 0, 64, -LUMEN_INT_EINVAL, "version 2, no slot"},
		{2, 4, 64, -LUMEN_INT_EINVAL, "version 2, 4 slots"},
		{2, 5, 64, -LUMEN_INT_EINVAL, "version 2, 5 slots"},
		{0, 1, 64, -LUMEN_INT_EINVAL, "version 0"},
		{3, 1, 64, -LUMEN_INT_EINVAL, "version 3"},
		{7, 1, 64, -LUMEN_INT_EINVAL, "version 7"},
		{8, 1, 64, -LUMEN_INT_EINVAL, "version 8 (wider than the field)"},
		{0x22, 1, 64, -LUMEN_INT_EINVAL, "version 0x22"},
		{1, 3, 25, -LUMEN_INT_ENOSPACE, "version 1, one byte short"},
		{2, 1, 14, -LUMEN_INT_ENOSPACE, "version 2, 1 slot, one byte short"},
		{2, 3, 32, -LUMEN_INT_ENOSPACE, "version 2, 3 slots, one byte short"},
		{2, 3, 28, -LUMEN_INT_ENOSPACE, "version 2, 3 slots next to timestamps"},
		{2, 1, 0, -LUMEN_INT_ENOSPACE, "version 2, no room"},
	};
	for (const auto &c : cases) {
		SCOPED_TRACE(c.what);
		EXPECT_EQ(lumen_int_write_request_v(buf.data(), c.buf_len, c.ver, c.slots), c.rc);
		EXPECT_EQ(buf, untouched);
	}
	/* Two slots do fit next to timestamps. */
	EXPECT_EQ(lumen_int_write_request_v(buf.data(), 28, 2, 2), 24);
}

TEST(IntOptionV2Writer, WriteEchoRange)
{
	const lumen_int_opt req = parse_ok(cat({hdr2(33, 0x43, 0x00), kRecA, kRecB, kRecC}));
	const Bytes recs[] = {kRecA, kRecB, kRecC};
	/* Every range inside the request, bytes by hand. */
	for (unsigned first = 0; first < 3; first++) {
		for (unsigned count = 1; first + count <= 3; count++) {
			SCOPED_TRACE(testing::Message() << "range " << first << " + " << count);
			Bytes want = hdr2(6 + 9 * count, static_cast<std::uint8_t>(0x50 | count),
					  static_cast<std::uint8_t>(first << 4 | 3));
			for (unsigned i = first; i < first + count; i++)
				want.insert(want.end(), recs[i].begin(), recs[i].end());
			Bytes out(48, 0xEE);
			ASSERT_EQ(lumen_int_write_echo_range(out.data(), static_cast<__u32>(want.size()), &req, first,
							     count),
				  static_cast<int>(want.size()));
			EXPECT_EQ(Bytes(out.begin(), out.begin() + static_cast<long>(want.size())), want);
			EXPECT_EQ(out[want.size()], 0xEE);
		}
	}

	/* Refusals write nothing. */
	const Bytes untouched(48, 0xEE);
	Bytes out = untouched;
	auto refused = [&](const lumen_int_opt &r, unsigned first, unsigned count, std::uint32_t buf_len, int rc,
			   const char *what) {
		SCOPED_TRACE(what);
		out = untouched;
		EXPECT_EQ(lumen_int_write_echo_range(out.data(), buf_len, &r, first, count), rc);
		EXPECT_EQ(out, untouched);
	};
	/* Outside the request's filled records. */
	refused(req, 3, 1, 40, -LUMEN_INT_EINVAL, "record 3 of 3");
	refused(req, 2, 2, 40, -LUMEN_INT_EINVAL, "records 2 and 3 of 3");
	refused(req, 0, 4, 40, -LUMEN_INT_EINVAL, "4 records of 3");
	refused(req, 4, 0, 40, -LUMEN_INT_EINVAL, "first beyond the request");
	const lumen_int_opt two = parse_ok(cat({hdr2(33, 0x42, 0x00), kRecA, kRecB, Bytes(9, 0)}));
	refused(two, 2, 1, 40, -LUMEN_INT_EINVAL, "the unfilled slot");
	refused(two, 0, 3, 40, -LUMEN_INT_EINVAL, "filled and unfilled");
	/* A short buffer. */
	refused(req, 1, 1, 14, -LUMEN_INT_ENOSPACE, "15 bytes into 14");
	refused(req, 0, 3, 32, -LUMEN_INT_ENOSPACE, "33 bytes into 32");
	refused(req, 0, 1, 5, -LUMEN_INT_ENOSPACE, "shorter than the header");
	refused(req, 0, 1, 0, -LUMEN_INT_ENOSPACE, "no room");
	/* A request of a version this code does not speak. */
	lumen_int_opt v3 = req;
	v3.version = 3;
	refused(v3, 0, 3, 40, -LUMEN_INT_EINVAL, "version 3");
	v3.version = 0;
	refused(v3, 0, 3, 40, -LUMEN_INT_EINVAL, "version 0");

	/* Version 1 has no First/Hops: only the whole echo. */
	Bytes r1(40, 0);
	ASSERT_EQ(lumen_int_write_request(r1.data(), 40, 3), 26);
	for (const lumen_int_hop &h : {kHopA, kHopB, kHopC})
		ASSERT_GE(lumen_int_push_hop(r1.data(), 26, &h), 0);
	r1.resize(26);
	const lumen_int_opt v1 = parse_ok(r1);
	refused(v1, 1, 1, 40, -LUMEN_INT_EINVAL, "version 1, one record");
	refused(v1, 0, 1, 40, -LUMEN_INT_EINVAL, "version 1, the first record");
	refused(v1, 0, 2, 40, -LUMEN_INT_EINVAL, "version 1, two of three");
	refused(v1, 1, 2, 40, -LUMEN_INT_EINVAL, "version 1, the last two");
	refused(v1, 0, 0, 40, -LUMEN_INT_EINVAL, "version 1, none of three");
	refused(v1, 0, 3, 25, -LUMEN_INT_ENOSPACE, "version 1, whole, one byte short");
	out = untouched;
	ASSERT_EQ(lumen_int_write_echo_range(out.data(), 26, &v1, 0, 3), 26);
	Bytes want = r1;
	want[4] = 0x33; /* ver 1, E, count 3 */
	EXPECT_EQ(Bytes(out.begin(), out.begin() + 26), want);
}

/* ---------------------------------------------------------------------- */
/* Bottleneck                                                              */

int bottleneck(std::initializer_list<lumen_int_hop> hops)
{
	const lumen_int_opt o = request(hops);
	return lumen_int_bottleneck_hop(&o);
}

lumen_int_hop q(__u16 rate, __u16 qlen)
{
	return mkhop(rate, 0, 0, qlen);
}

TEST(IntOptionV2Bottleneck, LongestQueueingDelayWins)
{
	/*
	 * Delay = qlen * 2^k bytes / rate. 10G (512 B units), qlen 100: 51200 B,
	 * 40.96 us. 100G (4 KiB units), qlen 120: 491520 B, 39.32 us: a larger
	 * raw qlen, and more bytes, on a faster link, but less delay.
	 */
	EXPECT_EQ(bottleneck({q(kCode10G, 100), q(kCode100G, 120)}), 0);
	EXPECT_EQ(bottleneck({q(kCode100G, 120), q(kCode10G, 100)}), 1);
	/* 10M (1 B units), qlen 100: 80 us; 10G qlen 150: 76800 B, 61.44 us. */
	EXPECT_EQ(bottleneck({q(kCode10G, 150), q(kCode10M, 100), q(kCode10G, 149)}), 1);
	/* One unit more on the faster link tips it: 100G qlen 126 = 41.29 us > 40.96 us. */
	EXPECT_EQ(bottleneck({q(kCode10G, 100), q(kCode100G, 126)}), 1);
	/* The longest of three, anywhere. */
	EXPECT_EQ(bottleneck({q(kCode25G, 10), q(kCode25G, 11), q(kCode25G, 9)}), 1);
	EXPECT_EQ(bottleneck({q(kCode25G, 1), q(kCode10G, 0), q(kCode1G, 16383)}), 2);
	/* A single filled hop is its own bottleneck. */
	EXPECT_EQ(bottleneck({q(kCode10G, 0)}), 0);
}

TEST(IntOptionV2Bottleneck, TiesGoToTheSlowerLinkThenTheLaterHop)
{
	/* 10G qlen 4 (2048 B / 10 Gbit/s) and 25G qlen 5 (5120 B / 25 Gbit/s): both 1.6384 us. */
	EXPECT_EQ(bottleneck({q(kCode10G, 4), q(kCode25G, 5)}), 0);
	EXPECT_EQ(bottleneck({q(kCode25G, 5), q(kCode10G, 4)}), 1);
	/* 1G qlen 32 (1024 B) and 100G qlen 25 (102400 B): both 8.192 us. */
	EXPECT_EQ(bottleneck({q(kCode1G, 32), q(kCode100G, 25)}), 0);
	EXPECT_EQ(bottleneck({q(kCode100G, 25), q(kCode1G, 32)}), 1);
	/* Empty queues tie: the slowest link. */
	EXPECT_EQ(bottleneck({q(kCode100G, 0), q(kCode10G, 0), q(kCode25G, 0)}), 1);
	/* Same delay and rate: the later hop. */
	EXPECT_EQ(bottleneck({q(kCode10G, 7), q(kCode10G, 7), q(kCode10G, 7)}), 2);
	EXPECT_EQ(bottleneck({q(kCode10G, 7), q(kCode10G, 7), q(kCode10G, 3)}), 1);
	EXPECT_EQ(bottleneck({q(kCode10G, 0), q(kCode10G, 0)}), 1);
	/* The slower link wins the tie even when an equal, faster one comes later. */
	EXPECT_EQ(bottleneck({q(kCode10G, 4), q(kCode25G, 5), q(kCode25G, 5)}), 0);
	/* Same rate, two codes (10G as 100 * 10^2 and as 10 * 10^3): a tie of rates, the later hop. */
	EXPECT_EQ(bottleneck({q(code(100, 2), 7), q(code(10, 3), 7)}), 1);
}

TEST(IntOptionV2Bottleneck, NoneWithoutAFilledHop)
{
	lumen_int_opt o = request({}, 3);
	/* Slots beyond Count are not filled, whatever they hold. */
	o.hops[0] = q(kCode10G, 16383);
	o.hops[1] = q(kCode10M, 16383);
	EXPECT_EQ(lumen_int_bottleneck_hop(&o), -1);
	o.count = 1;
	o.hops[0] = q(kCode10G, 1);
	EXPECT_EQ(lumen_int_bottleneck_hop(&o), 0);
}

TEST(IntOptionV2Bottleneck, UnknownRateNeverPreferredOverAKnownQueue)
{
	/* A hop of unknown rate (code 0) has no known delay, whatever its qlen. */
	EXPECT_EQ(bottleneck({q(kCode10G, 1), q(0, 16383)}), 0);
	EXPECT_EQ(bottleneck({q(0, 16383), q(kCode10G, 1)}), 1);
	EXPECT_EQ(bottleneck({q(0, 5), q(kCode100G, 3), q(0, 5)}), 1);
	/* Nor over a known empty queue. */
	EXPECT_EQ(bottleneck({q(kCode10G, 0), q(0, 0)}), 0);
	EXPECT_EQ(bottleneck({q(0, 100), q(kCodeMax, 0)}), 1);
	/* Only unknown rates: one of them (the documentation does not say which). */
	const int b = bottleneck({q(0, 3), q(0, 9)});
	EXPECT_TRUE(b == 0 || b == 1) << b;
}

/* ---------------------------------------------------------------------- */
/* The echo that fits                                                      */

TEST(IntOptionV2EchoFit, WholeWhenItFits)
{
	const Bytes r3 = cat({hdr2(33, 0x43, 0x00), kRecA, kRecB, kRecC});
	const lumen_int_opt req = parse_ok(r3);
	for (std::uint32_t room : {33u, 34u, 40u}) {
		Bytes out(48, 0xEE);
		ASSERT_EQ(lumen_int_write_echo_fit(out.data(), room, &req), 33) << room;
		EXPECT_EQ(Bytes(out.begin(), out.begin() + 33), cat({hdr2(33, 0x53, 0x03), kRecA, kRecB, kRecC}));
		EXPECT_EQ(out[33], 0xEE);
	}
	/* Two records next to timestamps (28 bytes). */
	const lumen_int_opt two = parse_ok(cat({hdr2(24, 0x42, 0x00), kRecA, kRecB}));
	Bytes out(48, 0xEE);
	ASSERT_EQ(lumen_int_write_echo_fit(out.data(), 28, &two), 24);
	EXPECT_EQ(Bytes(out.begin(), out.begin() + 24), cat({hdr2(24, 0x52, 0x02), kRecA, kRecB}));
	/* One record into exactly 15 bytes. */
	const lumen_int_opt one = parse_ok(cat({hdr2(15, 0x41, 0x00), kRecC}));
	out.assign(48, 0xEE);
	ASSERT_EQ(lumen_int_write_echo_fit(out.data(), 15, &one), 15);
	EXPECT_EQ(Bytes(out.begin(), out.begin() + 15), cat({hdr2(15, 0x51, 0x01), kRecC}));
	/* Version 1: the whole echo too. */
	Bytes r1(40, 0);
	ASSERT_EQ(lumen_int_write_request(r1.data(), 40, 3), 26);
	for (const lumen_int_hop &h : {kHopA, kHopB, kHopC})
		ASSERT_GE(lumen_int_push_hop(r1.data(), 26, &h), 0);
	r1.resize(26);
	const lumen_int_opt v1 = parse_ok(r1);
	out.assign(48, 0xEE);
	ASSERT_EQ(lumen_int_write_echo_fit(out.data(), 28, &v1), 26);
	Bytes want = r1;
	want[4] = 0x33;
	EXPECT_EQ(Bytes(out.begin(), out.begin() + 26), want);
	EXPECT_EQ(out[26], 0xEE);
}

TEST(IntOptionV2EchoFit, BottleneckAloneNextToTimestampsAndOneSackBlock)
{
	/*
	 * 40 - 12 (NOP, NOP, timestamps) - 12 (NOP, NOP, one SACK block) = 16
	 * bytes: the bottleneck's record alone, 15 bytes. Delays: kHopA 10G
	 * qlen 4077 = 208.7 us, kHopC 100G qlen 16383 = 671 us, kHopB 25G qlen
	 * 3 = 0.12 us: record 1 (kHopC) of 3.
	 */
	const lumen_int_opt req = parse_ok(cat({hdr2(33, 0x43, 0x00), kRecA, kRecC, kRecB}));
	for (std::uint32_t room : {15u, 16u, 23u, 24u, 32u}) {
		SCOPED_TRACE(room);
		Bytes out(48, 0xEE);
		ASSERT_EQ(lumen_int_write_echo_fit(out.data(), room, &req), 15);
		EXPECT_EQ(Bytes(out.begin(), out.begin() + 15), cat({hdr2(15, 0x51, 0x13), kRecC}));
		EXPECT_EQ(out[15], 0xEE);
		/* It parses back as record 1 of a 3-hop path, not as a 1-hop path. */
		const lumen_int_opt e = parse_ok(Bytes(out.begin(), out.begin() + 15));
		EXPECT_EQ(e.first_hop, 1);
		EXPECT_EQ(e.path_hops, 3);
		EXPECT_EQ(e.count, 1);
		EXPECT_TRUE(same_hop(e.hops[0], kHopC));
	}
	/* Two records into 16 bytes, with O carried. */
	const lumen_int_opt two = parse_ok(cat({hdr2(24, 0x4A, 0x00), kRecB, kRecA}));
	Bytes out(48, 0xEE);
	ASSERT_EQ(lumen_int_write_echo_fit(out.data(), 16, &two), 15);
	EXPECT_EQ(Bytes(out.begin(), out.begin() + 16), cat({hdr2(15, 0x59, 0x12), kRecA, Bytes{0xEE}}));
}

TEST(IntOptionV2EchoFit, NoSpace)
{
	const Bytes untouched(48, 0xEE);
	Bytes out = untouched;
	/* Version 2: not even 15 bytes. */
	const lumen_int_opt req = parse_ok(cat({hdr2(33, 0x43, 0x00), kRecA, kRecC, kRecB}));
	for (std::uint32_t room : {0u, 5u, 6u, 14u}) {
		EXPECT_EQ(lumen_int_write_echo_fit(out.data(), room, &req), -LUMEN_INT_ENOSPACE) << room;
		EXPECT_EQ(out, untouched);
	}
	const lumen_int_opt one = parse_ok(cat({hdr2(15, 0x41, 0x00), kRecC}));
	EXPECT_EQ(lumen_int_write_echo_fit(out.data(), 14, &one), -LUMEN_INT_ENOSPACE);
	EXPECT_EQ(out, untouched);
	/* Version 1: no partial echo, so the whole or nothing. */
	Bytes r1(40, 0);
	ASSERT_EQ(lumen_int_write_request(r1.data(), 40, 3), 26);
	for (const lumen_int_hop &h : {kHopA, kHopB, kHopC})
		ASSERT_GE(lumen_int_push_hop(r1.data(), 26, &h), 0);
	r1.resize(26);
	const lumen_int_opt v1 = parse_ok(r1);
	for (std::uint32_t room : {0u, 12u, 14u, 15u, 16u, 25u}) {
		EXPECT_EQ(lumen_int_write_echo_fit(out.data(), room, &v1), -LUMEN_INT_ENOSPACE) << room;
		EXPECT_EQ(out, untouched);
	}
}

/* ---------------------------------------------------------------------- */
/* Switch side                                                             */

TEST(IntOptionV2PushHop, SlotsFillInOrderThenOverflow)
{
	Bytes buf(33, 0xEE);
	ASSERT_EQ(lumen_int_write_request_v(buf.data(), 33, 2, 3), 33);
	const lumen_int_hop hops[] = {kHopC, kHopA, kHopB};
	const Bytes recs[] = {kRecC, kRecA, kRecB};
	Bytes want = cat({hdr2(33, 0x40, 0x00), Bytes(27, 0)});
	for (unsigned i = 0; i < 3; i++) {
		SCOPED_TRACE(i);
		ASSERT_EQ(lumen_int_push_hop(buf.data(), 33, &hops[i]), static_cast<int>(i));
		want[4] = static_cast<std::uint8_t>(0x40 | (i + 1)); /* still version 2 */
		std::copy(recs[i].begin(), recs[i].end(), want.begin() + 6 + 9 * i);
		EXPECT_EQ(buf, want);
		const lumen_int_opt o = parse_ok(buf);
		EXPECT_EQ(o.count, i + 1);
		EXPECT_TRUE(same_hop(o.hops[i], hops[i]));
	}
	/* Full: O (0x08) set, nothing else changes; sticky. */
	for (int again = 0; again < 2; again++) {
		EXPECT_EQ(lumen_int_push_hop(buf.data(), 33, &kHopA), -LUMEN_INT_EFULL);
		want[4] = 0x4B;
		EXPECT_EQ(buf, want);
	}
	EXPECT_EQ(parse_ok(buf).flags, LUMEN_INT_FLAG_OVERFLOW);
	/* A 1-slot request overflows at the second push. */
	Bytes one(15);
	ASSERT_EQ(lumen_int_write_request_v(one.data(), 15, 2, 1), 15);
	EXPECT_EQ(lumen_int_push_hop(one.data(), 15, &kHopB), 0);
	EXPECT_EQ(lumen_int_push_hop(one.data(), 15, &kHopA), -LUMEN_INT_EFULL);
	EXPECT_EQ(one, cat({hdr2(15, 0x49, 0x00), kRecB}));
}

TEST(IntOptionV2PushHop, RefusesEchoesAndNonRequests)
{
	auto refused = [](Bytes b, std::uint32_t buf_len, const char *what) {
		SCOPED_TRACE(what);
		const Bytes before = b;
		EXPECT_EQ(lumen_int_push_hop(b.data(), buf_len, &kHopA), -LUMEN_INT_EINVAL);
		EXPECT_EQ(b, before);
	};
	const Bytes full_echo = cat({hdr2(33, 0x53, 0x03), kRecA, kRecB, kRecC});
	refused(full_echo, 33, "full echo");
	refused(cat({hdr2(15, 0x51, 0x13), kRecB}), 15, "partial echo");
	refused(cat({hdr2(33, 0x50, 0x00), Bytes(27, 0)}), 33, "an echo with E and count 0");
	refused(hdr2(6, 0x50, 0x00), 6, "echo without records");
	Bytes v3 = base_request();
	v3[4] = 0x61;
	refused(v3, 33, "version 3");
	Bytes v0 = base_request();
	v0[4] = 0x01;
	refused(v0, 33, "version 0");
	Bytes len = base_request();
	len[1] = 32; /* not 6 + 9n */
	refused(len, 33, "length 32");
	len[1] = 26; /* version 1's length */
	refused(len, 33, "length 26");
	len[1] = 5;
	refused(len, 33, "length 5");
	refused(base_request(), 32, "buffer shorter than the option");
	refused(long_option(4, 0x40, 0), 42, "4 slots (42 bytes)");
	Bytes kind = base_request();
	kind[0] = 30;
	refused(kind, 33, "not kind 253");
	/* A request without a record is full at once. */
	Bytes empty = hdr2(6, 0x40, 0x00);
	EXPECT_EQ(lumen_int_push_hop(empty.data(), 6, &kHopA), -LUMEN_INT_EFULL);
	EXPECT_EQ(empty, hdr2(6, 0x48, 0x00));
}

/* ---------------------------------------------------------------------- */
/* Hop deltas                                                              */

int delta2(const lumen_int_hop &a, const lumen_int_hop &b, lumen_int_delta *d)
{
	return lumen_int_hop_delta_v(&a, &b, 2, d);
}

TEST(IntOptionV2Delta, HundredMillisecondsUsableInVersionTwoStaleInOne)
{
	/* Two records of a 10G port 100 ms (6250000 ticks) apart, 50 MB sent in between. */
	const std::uint64_t t0 = 0x123456789ull, dt = 100000000, b0 = 0xABCDEF012345ull, bytes = 50000000;
	lumen_int_hop a, b;
	lumen_int_hop_make_v(&a, 2, t0, b0, 3000, kCode10G);
	lumen_int_hop_make_v(&b, 2, t0 + dt, b0 + bytes, 700000, kCode10G);
	lumen_int_delta d;
	ASSERT_EQ(delta2(a, b, &d), LUMEN_INT_DELTA_OK);
	EXPECT_LT(d.dt_ns > dt ? d.dt_ns - dt : dt - d.dt_ns, 16u);
	EXPECT_LT(d.tx_bytes > bytes ? d.tx_bytes - bytes : bytes - d.tx_bytes, 512u);
	EXPECT_EQ(d.rate_mbps, 10000u);
	EXPECT_EQ(d.qlen_prev_bytes, 2560u); /* 3000 B in 512 B units: 5 */
	EXPECT_EQ(d.qlen_bytes, 699904u);
	/* Version 1: 6250000 ticks mod 2^18 = 220688, beyond its 122880. */
	lumen_int_hop_make_v(&a, 1, t0, b0, 3000, kCode10G);
	lumen_int_hop_make_v(&b, 1, t0 + dt, b0 + bytes, 700000, kCode10G);
	EXPECT_EQ(lumen_int_hop_delta_v(&a, &b, 1, &d), LUMEN_INT_DELTA_ETIME);
	EXPECT_EQ(lumen_int_hop_delta(&a, &b, &d), LUMEN_INT_DELTA_ETIME);
	/* 2^18 + 5 ticks: a whole version 1 wrap and then some, plain in version 2. */
	ASSERT_EQ(delta2(mkhop(kCode10G, 10, 0, 0), mkhop(kCode10G, 10 + (1u << 18) + 5, 0, 0), &d),
		  LUMEN_INT_DELTA_OK);
	EXPECT_EQ(d.dt_ns, 16ull * ((1u << 18) + 5));
}

TEST(IntOptionV2Delta, AcrossTheTwentyFourBitWraps)
{
	lumen_int_delta d;
	/* ts 2^24 - 1000 -> 1000: 2000 ticks; tx 2^24 - 30 -> 40: 70 units. */
	ASSERT_EQ(delta2(mkhop(kCode10G, kMask24 + 1 - 1000, kMask24 + 1 - 30, 10), mkhop(kCode10G, 1000, 40, 20), &d),
		  LUMEN_INT_DELTA_OK);
	EXPECT_EQ(d.dt_ns, 32000u);
	EXPECT_EQ(d.tx_bytes, 70u * 512);
	EXPECT_EQ(d.qlen_prev_bytes, 10u * 512);
	EXPECT_EQ(d.qlen_bytes, 20u * 512);
	EXPECT_EQ(d.saturated, 0u);
	/* One tick and one unit across the wraps. */
	ASSERT_EQ(delta2(mkhop(kCode10G, kMask24, kMask24, 0), mkhop(kCode10G, 0, 0, 0), &d), LUMEN_INT_DELTA_OK);
	EXPECT_EQ(d.dt_ns, 16u);
	EXPECT_EQ(d.tx_bytes, 512u);
	/* Only tx wraps. */
	ASSERT_EQ(delta2(mkhop(kCode10G, 100, kMask24, 0), mkhop(kCode10G, 2100, 5, 0), &d), LUMEN_INT_DELTA_OK);
	EXPECT_EQ(d.tx_bytes, 6u * 512);
	/* Backwards by one tick: 2^24 - 1 ticks, stale; a counter one unit back: implausible. */
	EXPECT_EQ(delta2(mkhop(kCode10G, 100, 0, 0), mkhop(kCode10G, 99, 0, 0), &d), LUMEN_INT_DELTA_ETIME);
	EXPECT_EQ(delta2(mkhop(kCode10G, 0, 500, 0), mkhop(kCode10G, 2000, 499, 0), &d), LUMEN_INT_DELTA_ECOUNTER);
	/* Half a counter wrap, at the longest usable dt and the fastest rate: implausible. */
	EXPECT_EQ(delta2(mkhop(kCodeMax, 0, 0, 0), mkhop(kCodeMax, kDtEnd2 - 1, 1u << 23, 0), &d),
		  LUMEN_INT_DELTA_ECOUNTER);
}

TEST(IntOptionV2Delta, TimeWindowEnd)
{
	lumen_int_delta d;
	EXPECT_EQ(lumen_int_dt_max_ticks(2), 7864320u);
	ASSERT_EQ(delta2(mkhop(kCode10G, 5, 0, 0), mkhop(kCode10G, 5 + kDtEnd2 - 1, 0, 0), &d), LUMEN_INT_DELTA_OK);
	EXPECT_EQ(d.dt_ns, 125829104u);
	EXPECT_EQ(d.dt_ns, lumen_int_dt_max_ns(2) - 16);
	EXPECT_EQ(delta2(mkhop(kCode10G, 5, 0, 0), mkhop(kCode10G, 5 + kDtEnd2, 0, 0), &d), LUMEN_INT_DELTA_ETIME);
	EXPECT_EQ(delta2(mkhop(kCode10G, 5, 0, 0), mkhop(kCode10G, 5 + kDtEnd2 + 1, 0, 0), &d), LUMEN_INT_DELTA_ETIME);
	for (std::uint32_t dt : {1u << 23, (1u << 23) + 1, kMask24}) /* half the wrap and beyond */
		EXPECT_EQ(delta2(mkhop(kCode10G, 5, 0, 0), mkhop(kCode10G, (5 + dt) & kMask24, 0, 0), &d),
			  LUMEN_INT_DELTA_ETIME)
			<< dt;
	/* The same end across the wrap. */
	const std::uint32_t t0 = kMask24 + 1 - 10;
	ASSERT_EQ(delta2(mkhop(kCode10G, t0, 0, 0), mkhop(kCode10G, (t0 + kDtEnd2 - 1) & kMask24, 0, 0), &d),
		  LUMEN_INT_DELTA_OK);
	EXPECT_EQ(d.dt_ns, (kDtEnd2 - 1) * 16ull);
	EXPECT_EQ(delta2(mkhop(kCode10G, t0, 0, 0), mkhop(kCode10G, (t0 + kDtEnd2) & kMask24, 0, 0), &d),
		  LUMEN_INT_DELTA_ETIME);
	EXPECT_EQ(delta2(mkhop(kCode10G, 77, 0, 0), mkhop(kCode10G, 77, 0, 0), &d), LUMEN_INT_DELTA_ETIME);
	/* Rate checks as in version 1. */
	EXPECT_EQ(delta2(mkhop(kCode10G, 0, 0, 0), mkhop(kCode25G, 100, 0, 0), &d), LUMEN_INT_DELTA_ERATE);
	EXPECT_EQ(delta2(mkhop(0, 0, 0, 0), mkhop(0, 100, 0, 0), &d), LUMEN_INT_DELTA_ERATE);
}

TEST(IntOptionV2Delta, CounterPlausibilityBound)
{
	lumen_int_delta d;
	/*
	 * limit = floor(rate * (dt_ns + 16) / 8000) + floor(that / 16) + 2 units.
	 * 10G, 6250000 ticks (100 ms): 10000 * 100000016 / 8000 = 125000020;
	 * + 7812501 + 1024 = 132813545 B: 259401 units (132813312 B) fit,
	 * 259402 do not.
	 */
	ASSERT_EQ(delta2(mkhop(kCode10G, 0, kMask24 - 100, 0), mkhop(kCode10G, 6250000, 259401 - 101, 0), &d),
		  LUMEN_INT_DELTA_OK);
	EXPECT_EQ(d.tx_bytes, 132813312u);
	EXPECT_EQ(d.dt_ns, 100000000u);
	EXPECT_EQ(delta2(mkhop(kCode10G, 0, 0, 0), mkhop(kCode10G, 6250000, 259402, 0), &d), LUMEN_INT_DELTA_ECOUNTER);
	/*
	 * 1.6T (64 KiB units) at the last usable dt, 7864319 ticks: 1.6e6 *
	 * 125829120 / 8000 = 25165824000; + 1572864000 + 131072 = 26738819072 B
	 * = 408002 units exactly: accepted; one more refused. One tick
	 * earlier: 26738815672 B, 408001 units.
	 */
	ASSERT_EQ(delta2(mkhop(kCodeMax, 0, 10, 0), mkhop(kCodeMax, kDtEnd2 - 1, 10 + 408002, 0), &d),
		  LUMEN_INT_DELTA_OK);
	EXPECT_EQ(d.tx_bytes, 26738819072ull);
	EXPECT_EQ(delta2(mkhop(kCodeMax, 0, 10, 0), mkhop(kCodeMax, kDtEnd2 - 1, 10 + 408003, 0), &d),
		  LUMEN_INT_DELTA_ECOUNTER);
	EXPECT_EQ(delta2(mkhop(kCodeMax, 0, 0, 0), mkhop(kCodeMax, kDtEnd2 - 2, 408001, 0), &d), LUMEN_INT_DELTA_OK);
	EXPECT_EQ(delta2(mkhop(kCodeMax, 0, 0, 0), mkhop(kCodeMax, kDtEnd2 - 2, 408002, 0), &d),
		  LUMEN_INT_DELTA_ECOUNTER);
	/* 10M (1 B units), one tick: 10 * 32 / 8000 = 0; + 0 + 2 = 2 B. */
	EXPECT_EQ(delta2(mkhop(kCode10M, 7, 0, 0), mkhop(kCode10M, 8, 2, 0), &d), LUMEN_INT_DELTA_OK);
	EXPECT_EQ(delta2(mkhop(kCode10M, 7, 0, 0), mkhop(kCode10M, 8, 3, 0), &d), LUMEN_INT_DELTA_ECOUNTER);
}

TEST(IntOptionV2Delta, NoWriteOnError)
{
	struct {
		lumen_int_hop prev, cur;
		int rc;
	} const cases[] = {
		{mkhop(kCode10G, 0, 0, 5), mkhop(kCode25G, 100, 1, 5), LUMEN_INT_DELTA_ERATE},
		{mkhop(0, 0, 0, 5), mkhop(0, 100, 1, 5), LUMEN_INT_DELTA_ERATE},
		{mkhop(kCode10G, 100, 0, 5), mkhop(kCode10G, 100, 0, 5), LUMEN_INT_DELTA_ETIME},
		{mkhop(kCode10G, 100, 0, 5), mkhop(kCode10G, 100 + kDtEnd2, 1, 5), LUMEN_INT_DELTA_ETIME},
		{mkhop(kCode10G, 0, 0, 5), mkhop(kCode10G, 6250000, 259402, 5), LUMEN_INT_DELTA_ECOUNTER},
	};
	for (const auto &c : cases) {
		for (int pattern : {0x00, 0xA5, 0xFF}) {
			lumen_int_delta d, before;
			std::memset(&d, pattern, sizeof(d));
			std::memcpy(&before, &d, sizeof(d));
			EXPECT_EQ(delta2(c.prev, c.cur, &d), c.rc);
			EXPECT_EQ(std::memcmp(&d, &before, sizeof(d)), 0) << "output modified, pattern " << pattern;
		}
	}
}

/*
 * Property: on records with any field values of either version's widths,
 * concentrated around the time and counter limits, lumen_int_hop_delta_v
 * matches the documented rule exactly (tests/int_option_oracle.h); on error
 * *d is untouched. In version 1, lumen_int_hop_delta (the version 1 entry
 * point) answers the same. The one property test of the delta rule for
 * both versions (int_option_test.cpp has the version 1 edge cases).
 */
TEST(IntOptionV2Delta, PropertyMatchesDocumentedRule)
{
	Rng rng(24);
	std::vector<__u16> valid;
	for (unsigned c = 1; c < 1024; c++)
		if (lumen_doc_rate_valid(c))
			valid.push_back(static_cast<__u16>(c));
	std::uint64_t by_rc[2][4] = {};
	for (int i = 0; i < 1000000; i++) { /* 500000 per version */
		const unsigned ver = 1 + (i & 1);
		const lumen_doc_layout l = lumen_doc_layout_of(ver);
		const std::uint32_t ts_mask = static_cast<std::uint32_t>((1ull << l.ts_bits) - 1);
		const std::uint32_t tx_mask = static_cast<std::uint32_t>((1ull << l.tx_bits) - 1);
		const std::uint32_t end = lumen_doc_dt_end(ver);
		lumen_int_hop a, b;
		a.rate = rng.range(0, 9) ? valid[rng.range(0, valid.size() - 1)]
					 : static_cast<__u16>(rng.range(0, 1023));
		b.rate = rng.range(0, 49) ? a.rate : static_cast<__u16>(rng.range(0, 1023));
		a.ts = static_cast<__u32>(rng.range(0, ts_mask));
		std::uint32_t dts;
		switch (rng.range(0, 5)) {
		case 0:
			dts = static_cast<std::uint32_t>(rng.range(0, 2));
			break;
		case 1:
			dts = end - 2 + static_cast<std::uint32_t>(rng.range(0, 3));
			break;
		default:
			dts = static_cast<std::uint32_t>(rng.range(0, end + 100));
			break;
		}
		b.ts = (a.ts + dts) & ts_mask;
		a.tx = static_cast<__u32>(rng.range(0, tx_mask));
		const std::uint64_t rate = lumen_doc_rate_mbps(a.rate);
		const unsigned k = lumen_doc_shift(rate);
		std::uint64_t lim_units = 0;
		if (dts > 0 && dts < end) {
			std::uint64_t lim = rate * (16ull * dts + 16) / 8000;
			lim_units = (lim + lim / 16 + (2ull << k)) >> k;
		}
		const std::uint32_t dtx = rng.range(0, 2) ? static_cast<std::uint32_t>(lim_units - 2 + rng.range(0, 3))
							  : static_cast<std::uint32_t>(rng.range(0, tx_mask));
		b.tx = (a.tx + dtx) & tx_mask;
		a.qlen = static_cast<__u16>(rng.range(0, 9) ? rng.range(0, 0x3FFF) : 0x3FFF);
		b.qlen = static_cast<__u16>(rng.range(0, 9) ? rng.range(0, 0x3FFF) : 0x3FFF);
		a.pad = b.pad = 0;

		lumen_int_delta got, want, before;
		std::memset(&got, 0xC6, sizeof(got));
		before = got;
		want = got;
		const int rc = lumen_int_hop_delta_v(&a, &b, ver, &got);
		const int exp = lumen_doc_delta(&a, &b, ver, &want);
		ASSERT_EQ(rc, exp) << "version " << ver << " rates " << a.rate << "/" << b.rate << " dts " << dts
				   << " dtx " << dtx;
		if (rc == LUMEN_INT_DELTA_OK) {
			ASSERT_EQ(got.dt_ns, want.dt_ns);
			ASSERT_EQ(got.tx_bytes, want.tx_bytes);
			ASSERT_EQ(got.qlen_prev_bytes, want.qlen_prev_bytes);
			ASSERT_EQ(got.qlen_bytes, want.qlen_bytes);
			ASSERT_EQ(got.rate_mbps, want.rate_mbps);
			ASSERT_EQ(got.saturated, want.saturated);
		} else {
			ASSERT_EQ(std::memcmp(&got, &before, sizeof(got)), 0) << "output modified on error " << rc;
		}
		if (ver == 1) {
			lumen_int_delta got1;
			std::memset(&got1, 0xC6, sizeof(got1));
			ASSERT_EQ(lumen_int_hop_delta(&a, &b, &got1), rc)
				<< "rates " << a.rate << "/" << b.rate << " dts " << dts << " dtx " << dtx;
			ASSERT_EQ(std::memcmp(&got1, &got, sizeof(got1)), 0)
				<< "lumen_int_hop_delta differs, result " << rc;
		}
		by_rc[ver - 1][rc]++;
	}
	for (int v = 0; v < 2; v++)
		for (int r = 0; r < 4; r++)
			EXPECT_GT(by_rc[v][r], 25000u) << "version " << v + 1 << " result " << r << ": " << by_rc[v][r];
}

/*
 * Property: a port at a coded rate with arbitrary clock and counter origins
 * sends B <= rate * dt bytes in dt, anywhere in version 2's usable window
 * (up to 126 ms); the delta of its two records recovers dt within one tick
 * and B within one byte unit.
 */
TEST(IntOptionV2Delta, PropertyRecoversTrafficWithinQuantization)
{
	Rng rng(25);
	const std::uint64_t dt_max = (kDtEnd2 - 1) * 16ull;
	int ok = 0;
	for (int i = 0; i < 200000; i++) {
		const __u16 rc =
			lumen_int_rate_encode(static_cast<std::uint32_t>(rng.range(1, LUMEN_INT_RATE_MAX_MBPS)));
		const std::uint64_t rate = lumen_int_rate_mbps(rc);
		const unsigned k = lumen_int_unit_shift(static_cast<__u32>(rate));
		const std::uint64_t t0 = rng.next() >> 4, b0 = rng.next() >> 4;
		const std::uint64_t dt = (i % 11 == 0) ? dt_max : rng.range(16, dt_max);
		const std::uint64_t bmax = rate * dt / 8000;
		const std::uint64_t bytes = (i % 7 == 0) ? bmax : rng.range(0, bmax);
		lumen_int_hop a, b;
		lumen_int_hop_make_v(&a, 2, t0, b0, 0, rc);
		lumen_int_hop_make_v(&b, 2, t0 + dt, b0 + bytes, 0, rc);
		lumen_int_delta d;
		ASSERT_EQ(delta2(a, b, &d), LUMEN_INT_DELTA_OK)
			<< "rate " << rate << " dt " << dt << " bytes " << bytes;
		ASSERT_LT(d.dt_ns > dt ? d.dt_ns - dt : dt - d.dt_ns, 16u) << dt;
		ASSERT_LT(d.tx_bytes > bytes ? d.tx_bytes - bytes : bytes - d.tx_bytes, 1ull << k) << bytes;
		ok++;
	}
	EXPECT_EQ(ok, 200000);
}

} // namespace
