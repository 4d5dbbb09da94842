// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Unit tests of the INT TCP option, wire format version 1
 * (include/lumen/int_option.h; version 2: int_option_v2_test.cpp): byte
 * layout against hand-written bytes, encode/decode round trips, rejection of
 * malformed options, the option size budget, the link rate code, the byte
 * unit rule, hop record construction and the wraparound-safe hop deltas.
 *
 * Every expected value here is derived from the header comment (the wire
 * format documentation), not from the implementation.
 */
#include "int_option_test_util.h"
#include "lumen/int_option.h"
#include "test_rng.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace
{

using namespace lumen::test;

Bytes pack(const lumen_int_hop &h)
{
	Bytes out(LUMEN_INT_HOP_LEN, 0xEE);
	lumen_int_hop_pack(&h, out.data());
	return out;
}

/* A hand-written valid request: 3 slots, hop 0 filled with a 10G record. */
Bytes base_request()
{
	const std::uint8_t filled[] = {0xFD, 0x1A, 0x4C, 0x55, 0x21, /* hop 0: */ 0xC8,
				       0xAA, 0xBC, 0xD4, 0x8D, 0x0F, 0xED};
	Bytes b(26, 0x00); /* hops 1 and 2: empty */
	std::copy(std::begin(filled), std::end(filled), b.begin());
	return b;
}

/* ---------------------------------------------------------------------- */
/* Byte-exact layout                                                       */

TEST(IntOptionLayout, Constants)
{
	EXPECT_EQ(LUMEN_INT_KIND, 253);
	EXPECT_EQ(LUMEN_INT_EXID, 0x4C55);
	EXPECT_EQ(LUMEN_INT_MAX_LEN, 40);
	EXPECT_EQ(LUMEN_INT_OPT_LEN(0), 5);
	EXPECT_EQ(LUMEN_INT_OPT_LEN(3), 26);
	EXPECT_EQ(LUMEN_INT_WRAP_NS, 4194304ull);
}

TEST(IntOptionLayout, RequestHeaderBytes)
{
	for (unsigned slots = 1; slots <= 5; slots++) {
		SCOPED_TRACE(slots);
		Bytes buf(64, 0xEE);
		ASSERT_EQ(lumen_int_write_request(buf.data(), 40, slots), static_cast<int>(5 + 7 * slots));
		Bytes expect(5 + 7 * slots, 0x00);
		expect[0] = 0xFD; /* kind 253 */
		expect[1] = static_cast<std::uint8_t>(5 + 7 * slots);
		expect[2] = 0x4C; /* 'L' */
		expect[3] = 0x55; /* 'U' */
		expect[4] = 0x20; /* ver 1 (001), E 0, O 0, count 0 */
		EXPECT_EQ(Bytes(buf.begin(), buf.begin() + static_cast<long>(expect.size())), expect);
		/* Nothing written past the option. */
		for (std::size_t i = expect.size(); i < buf.size(); i++)
			ASSERT_EQ(buf[i], 0xEE) << "byte " << i;
	}
	Bytes three(64, 0xEE);
	ASSERT_EQ(lumen_int_write_request(three.data(), 26, 3), 26);
	EXPECT_EQ(Bytes(three.begin(), three.begin() + 26),
		  (Bytes{0xFD, 0x1A, 0x4C, 0x55, 0x20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(IntOptionLayout, HopFieldBitPositions)
{
	/* One field at a time, all ones: rate bits 0-9, ts 10-27, tx 28-41, qlen 42-55. */
	EXPECT_EQ(pack(mkhop(0x3FF, 0, 0, 0)), (Bytes{0xFF, 0xC0, 0x00, 0x00, 0x00, 0x00, 0x00}));
	EXPECT_EQ(pack(mkhop(0, 0x3FFFF, 0, 0)), (Bytes{0x00, 0x3F, 0xFF, 0xF0, 0x00, 0x00, 0x00}));
	EXPECT_EQ(pack(mkhop(0, 0, 0x3FFF, 0)), (Bytes{0x00, 0x00, 0x00, 0x0F, 0xFF, 0xC0, 0x00}));
	EXPECT_EQ(pack(mkhop(0, 0, 0, 0x3FFF)), (Bytes{0x00, 0x00, 0x00, 0x00, 0x00, 0x3F, 0xFF}));
	/* Least significant bit of every field (big-endian: last bit of each). */
	EXPECT_EQ(pack(mkhop(1, 1, 1, 1)), (Bytes{0x00, 0x40, 0x00, 0x10, 0x00, 0x40, 0x01}));
	/* Most significant bit of every field. */
	EXPECT_EQ(pack(mkhop(0x200, 0x20000, 0x2000, 0x2000)), (Bytes{0x80, 0x20, 0x00, 0x08, 0x00, 0x20, 0x00}));
	/* Rate code: 7-bit mantissa then 3-bit exponent; 10G = 100 * 10^2. */
	EXPECT_EQ(kCode10G, 0x322);
	EXPECT_EQ(pack(mkhop(kCode10G, 0x2ABCD, 0x1234, 0x0FED)), (Bytes{0xC8, 0xAA, 0xBC, 0xD4, 0x8D, 0x0F, 0xED}));
	EXPECT_EQ(pack(mkhop(kCode25G, 1, 2, 3)), (Bytes{0x32, 0xC0, 0x00, 0x10, 0x00, 0x80, 0x03}));
	/* Out-of-range field bits are dropped, not smeared into neighbours. */
	EXPECT_EQ(pack(mkhop(0xFC00, 0xFFFC0000u, 0xC000, 0xC000)), (Bytes{0, 0, 0, 0, 0, 0, 0}));
}

TEST(IntOptionLayout, HopUnpackIsInverseOfHandBytes)
{
	const std::array<std::uint8_t, 7> raw{0xC8, 0xAA, 0xBC, 0xD4, 0x8D, 0x0F, 0xED};
	lumen_int_hop h;
	std::memset(&h, 0xFF, sizeof(h));
	lumen_int_hop_unpack(raw.data(), &h);
	EXPECT_EQ(h.rate, 0x322);
	EXPECT_EQ(h.ts, 0x2ABCDu);
	EXPECT_EQ(h.tx, 0x1234);
	EXPECT_EQ(h.qlen, 0x0FED);
	EXPECT_EQ(h.pad, 0);
}

TEST(IntOptionLayout, PushedRequestAndEchoBytes)
{
	Bytes buf(19, 0xEE);
	ASSERT_EQ(lumen_int_write_request(buf.data(), 19, 2), 19);
	lumen_int_hop a = mkhop(kCode10G, 0x2ABCD, 0x1234, 0x0FED);
	lumen_int_hop b = mkhop(kCode25G, 1, 2, 3);
	EXPECT_EQ(lumen_int_push_hop(buf.data(), 19, &a), 0);
	EXPECT_EQ(buf,
		  (Bytes{0xFD, 0x13, 0x4C, 0x55, 0x21, 0xC8, 0xAA, 0xBC, 0xD4, 0x8D, 0x0F, 0xED, 0, 0, 0, 0, 0, 0, 0}));
	EXPECT_EQ(lumen_int_push_hop(buf.data(), 19, &b), 1);
	const Bytes full{0xFD, 0x13, 0x4C, 0x55, 0x22, 0xC8, 0xAA, 0xBC, 0xD4, 0x8D,
			 0x0F, 0xED, 0x32, 0xC0, 0x00, 0x10, 0x00, 0x80, 0x03};
	EXPECT_EQ(buf, full);

	/* Echo of the filled request: E set, count == slots == 2. */
	lumen_int_opt req = parse_ok(buf);
	Bytes echo(40, 0xEE);
	ASSERT_EQ(lumen_int_write_echo(echo.data(), 40, &req), 19);
	Bytes expect = full;
	expect[4] = 0x32; /* ver 1, E, count 2 */
	EXPECT_EQ(Bytes(echo.begin(), echo.begin() + 19), expect);
	EXPECT_EQ(echo[19], 0xEE);

	/* A third push overflows: O (0x08) set, nothing else changes. */
	lumen_int_hop c = mkhop(kCode10M, 7, 7, 7);
	EXPECT_EQ(lumen_int_push_hop(buf.data(), 19, &c), -LUMEN_INT_EFULL);
	expect = full;
	expect[4] = 0x2A;
	EXPECT_EQ(buf, expect);
	req = parse_ok(buf);
	ASSERT_EQ(lumen_int_write_echo(echo.data(), 40, &req), 19);
	expect[4] = 0x3A; /* ver 1, E, O, count 2 */
	EXPECT_EQ(Bytes(echo.begin(), echo.begin() + 19), expect);
}

TEST(IntOptionLayout, EmptyEcho)
{
	/* An echo of a request nobody filled is just the header. */
	Bytes buf(12, 0);
	ASSERT_EQ(lumen_int_write_request(buf.data(), 12, 1), 12);
	lumen_int_opt req = parse_ok(buf);
	EXPECT_EQ(req.count, 0);
	Bytes echo(8, 0xEE);
	ASSERT_EQ(lumen_int_write_echo(echo.data(), 8, &req), 5);
	EXPECT_EQ(echo, (Bytes{0xFD, 0x05, 0x4C, 0x55, 0x30, 0xEE, 0xEE, 0xEE}));
	lumen_int_opt e = parse_ok(Bytes(echo.begin(), echo.begin() + 5));
	EXPECT_EQ(e.slots, 0);
	EXPECT_EQ(e.count, 0);
	EXPECT_EQ(e.flags, LUMEN_INT_FLAG_ECHO);
}

TEST(IntOptionLayout, ParseHandWrittenRequest)
{
	lumen_int_opt o = parse_ok(base_request());
	EXPECT_EQ(o.version, 1);
	EXPECT_EQ(o.flags, 0);
	EXPECT_EQ(o.slots, 3);
	EXPECT_EQ(o.count, 1);
	EXPECT_TRUE(same_hop(o.hops[0], mkhop(kCode10G, 0x2ABCD, 0x1234, 0x0FED)));
	/* Slots beyond the option are cleared. */
	for (int i = 3; i < LUMEN_INT_MAX_HOPS; i++)
		EXPECT_TRUE(same_hop(o.hops[i], mkhop(0, 0, 0, 0))) << i;
}

/* ---------------------------------------------------------------------- */
/* Round trips                                                             */

lumen_int_hop sample_hop(Rng &rng)
{
	static const std::uint32_t rates[] = {10, 100, 1000, 10000, 25000, 40000, 100000, 400000, 800000, 1500};
	lumen_int_hop h;
	__u16 rc = lumen_int_rate_encode(rates[rng.range(0, 9)]);
	lumen_int_hop_make(&h, rng.next(), rng.next(), rng.range(0, 1ull << 28), rc);
	return h;
}

TEST(IntOptionRoundTrip, RequestPushParseEcho)
{
	Rng rng(1);
	for (unsigned slots = 1; slots <= LUMEN_INT_MAX_HOPS; slots++) {
		SCOPED_TRACE(testing::Message() << "slots " << slots);
		const unsigned len = 5 + 7 * slots;
		Bytes buf(len);
		ASSERT_EQ(lumen_int_write_request(buf.data(), len, slots), static_cast<int>(len));
		std::vector<lumen_int_hop> pushed;
		for (unsigned k = 0; k <= slots; k++) {
			SCOPED_TRACE(testing::Message() << "filled " << k);
			lumen_int_opt req = parse_ok(buf);
			EXPECT_EQ(req.version, 1);
			EXPECT_EQ(req.flags, 0);
			EXPECT_EQ(req.slots, slots);
			EXPECT_EQ(req.count, k);
			for (unsigned i = 0; i < k; i++)
				EXPECT_TRUE(same_hop(req.hops[i], pushed[i])) << i;
			for (unsigned i = k; i < slots; i++)
				EXPECT_TRUE(same_hop(req.hops[i], mkhop(0, 0, 0, 0))) << i;

			Bytes echo(40, 0xEE);
			ASSERT_EQ(lumen_int_write_echo(echo.data(), 40, &req), static_cast<int>(5 + 7 * k));
			echo.resize(5 + 7 * k);
			lumen_int_opt e = parse_ok(echo);
			EXPECT_EQ(e.flags, LUMEN_INT_FLAG_ECHO);
			EXPECT_EQ(e.slots, k);
			EXPECT_EQ(e.count, k);
			for (unsigned i = 0; i < k; i++)
				EXPECT_TRUE(same_hop(e.hops[i], pushed[i])) << i;
			/* The echoed hop bytes are the request's hop bytes. */
			EXPECT_EQ(0, std::memcmp(echo.data() + 5, buf.data() + 5, 7 * k));

			if (k < slots) {
				lumen_int_hop h = sample_hop(rng);
				ASSERT_EQ(lumen_int_push_hop(buf.data(), len, &h), static_cast<int>(k));
				pushed.push_back(h);
			}
		}
		/* Full: one more push flags overflow and changes nothing else. */
		Bytes before = buf;
		lumen_int_hop extra = sample_hop(rng);
		EXPECT_EQ(lumen_int_push_hop(buf.data(), len, &extra), -LUMEN_INT_EFULL);
		before[4] |= 0x08;
		EXPECT_EQ(buf, before);
		lumen_int_opt req = parse_ok(buf);
		EXPECT_EQ(req.flags, LUMEN_INT_FLAG_OVERFLOW);
		EXPECT_EQ(req.count, slots);
		Bytes echo(40);
		ASSERT_EQ(lumen_int_write_echo(echo.data(), 40, &req), static_cast<int>(len));
		echo.resize(len);
		lumen_int_opt e = parse_ok(echo);
		EXPECT_EQ(e.flags, LUMEN_INT_FLAG_ECHO | LUMEN_INT_FLAG_OVERFLOW);
		EXPECT_EQ(e.count, slots);
		/* Overflow is sticky and idempotent. */
		EXPECT_EQ(lumen_int_push_hop(buf.data(), len, &extra), -LUMEN_INT_EFULL);
		EXPECT_EQ(buf, before);
	}
}

TEST(IntOptionRoundTrip, PackUnpackAllFieldValues)
{
	Rng rng(2);
	for (int i = 0; i < 100000; i++) {
		lumen_int_hop h =
			mkhop(static_cast<__u16>(rng.range(0, 1023)), static_cast<__u32>(rng.range(0, 0x3FFFF)),
			      static_cast<__u16>(rng.range(0, 0x3FFF)), static_cast<__u16>(rng.range(0, 0x3FFF)));
		std::uint8_t raw[7];
		lumen_int_hop_pack(&h, raw);
		lumen_int_hop back;
		lumen_int_hop_unpack(raw, &back);
		ASSERT_TRUE(same_hop(h, back)) << i;
	}
}

TEST(IntOptionRoundTrip, EncoderErrors)
{
	Bytes buf(64, 0xEE);
	EXPECT_EQ(lumen_int_write_request(buf.data(), 64, 0), -LUMEN_INT_EINVAL);
	EXPECT_EQ(lumen_int_write_request(buf.data(), 64, 6), -LUMEN_INT_EINVAL);
	EXPECT_EQ(lumen_int_write_request(buf.data(), 25, 3), -LUMEN_INT_ENOSPACE);
	EXPECT_EQ(lumen_int_write_request(buf.data(), 0, 1), -LUMEN_INT_ENOSPACE);
	EXPECT_EQ(buf, Bytes(64, 0xEE));

	lumen_int_opt req = parse_ok(base_request());
	EXPECT_EQ(lumen_int_write_echo(buf.data(), 11, &req), -LUMEN_INT_ENOSPACE);
	EXPECT_EQ(lumen_int_write_echo(buf.data(), 12, &req), 12);
	buf.assign(64, 0xEE);
	req.count = 4; /* beyond slots = 3 */
	EXPECT_EQ(lumen_int_write_echo(buf.data(), 64, &req), -LUMEN_INT_EINVAL);
	req.count = 6;
	req.slots = 6;
	EXPECT_EQ(lumen_int_write_echo(buf.data(), 64, &req), -LUMEN_INT_EINVAL);
	EXPECT_EQ(buf, Bytes(64, 0xEE));
}

TEST(IntOptionRoundTrip, PushHopRefusesNonRequests)
{
	lumen_int_hop h = mkhop(kCode10G, 1, 1, 1);
	Bytes req = base_request();

	Bytes b = req;
	b[4] |= 0x10; /* an echo */
	b[4] = static_cast<std::uint8_t>((b[4] & ~0x07) | 3);
	Bytes before = b;
	EXPECT_EQ(lumen_int_push_hop(b.data(), 26, &h), -LUMEN_INT_EINVAL);
	EXPECT_EQ(b, before);

	b = req;
	b[0] = 30;
	before = b;
	EXPECT_EQ(lumen_int_push_hop(b.data(), 26, &h), -LUMEN_INT_EINVAL);
	EXPECT_EQ(b, before);

	b = req;
	before = b;
	EXPECT_EQ(lumen_int_push_hop(b.data(), 25, &h), -LUMEN_INT_EINVAL); /* buffer shorter than length */
	EXPECT_EQ(lumen_int_push_hop(b.data(), 4, &h), -LUMEN_INT_EINVAL);
	b[1] = 27; /* not 5 + 7n */
	before = b;
	EXPECT_EQ(lumen_int_push_hop(b.data(), 26, &h), -LUMEN_INT_EINVAL);
	EXPECT_EQ(b, before);
}

/* ---------------------------------------------------------------------- */
/* Malformed input                                                         */

TEST(IntOptionMalformed, Truncated)
{
	Bytes b = base_request();
	expect_reject(b, 0, LUMEN_INT_ETRUNCATED, "empty buffer");
	expect_reject(b, 1, LUMEN_INT_ETRUNCATED, "kind only");
	expect_reject(b, 4, LUMEN_INT_ETRUNCATED, "header cut");
	expect_reject(b, 5, LUMEN_INT_ETRUNCATED, "header only");
	expect_reject(b, 25, LUMEN_INT_ETRUNCATED, "one byte short");
	Bytes e{0xFD, 0x05, 0x4C, 0x55, 0x30};
	expect_reject(e, 4, LUMEN_INT_ETRUNCATED, "empty echo cut");
	/* A longer buffer (more options follow) is fine. */
	b.push_back(0x01);
	b.push_back(0x01);
	EXPECT_EQ(parse_ok(b).slots, 3);
}

TEST(IntOptionMalformed, WrongKind)
{
	for (int kind : {0, 1, 8, 30, 252, 254, 255}) {
		Bytes b = base_request();
		b[0] = static_cast<std::uint8_t>(kind);
		expect_reject(b, LUMEN_INT_EKIND, "kind");
	}
}

TEST(IntOptionMalformed, BadLength)
{
	for (int len : {0, 1, 2, 3, 4, 6, 7, 11, 13, 18, 25, 27, 32, 34, 39}) {
		SCOPED_TRACE(len);
		// zero-padded to 64 bytes; not resize(), on which GCC 12's
		// -Warray-bounds misfires at -O1
		Bytes req = base_request(), b(64, 0);
		std::copy(req.begin(), req.end(), b.begin());
		b[1] = static_cast<std::uint8_t>(len);
		expect_reject(b, LUMEN_INT_ELENGTH, "not 5 + 7n or below 5");
	}
	/*
	 * Above 40: a length that is not 5 + 7n is still ELENGTH; the 5 + 7n
	 * values (47, 54, ..., 250: 6 to 35 slots) are EHOPS (TooManyHops).
	 */
	int elength = 0, ehops = 0;
	for (int len = 41; len <= 255; len++) {
		SCOPED_TRACE(len);
		Bytes b = base_request();
		b.resize(255, 0);
		b[1] = static_cast<std::uint8_t>(len);
		if ((len - 5) % 7) {
			expect_reject(b, LUMEN_INT_ELENGTH, "above 40, not 5 + 7n");
			elength++;
		} else {
			expect_reject(b, LUMEN_INT_EHOPS, "above 40, 5 + 7n");
			ehops++;
		}
	}
	EXPECT_EQ(ehops, 30); /* 6..35 slots */
	EXPECT_EQ(elength, 215 - 30);
	for (int len : {41, 46, 48, 53, 55, 64, 128, 255}) {
		Bytes b = base_request();
		b.resize(255, 0);
		b[1] = static_cast<std::uint8_t>(len);
		expect_reject(b, LUMEN_INT_ELENGTH, "spelled out: above 40, not 5 + 7n");
	}
	/* A request needs at least one slot; an echo may have none. */
	Bytes r{0xFD, 0x05, 0x4C, 0x55, 0x20};
	expect_reject(r, LUMEN_INT_ELENGTH, "request with 0 slots");
	r[4] = 0x28; /* with O: still a request */
	expect_reject(r, LUMEN_INT_ELENGTH, "overflowed request with 0 slots");
}

/* An option of `slots` hop records, all filled with a valid 10G record. */
Bytes long_option(unsigned slots, std::uint8_t hdr)
{
	Bytes b(5 + 7 * slots, 0);
	b[0] = 0xFD;
	b[1] = static_cast<std::uint8_t>(5 + 7 * slots);
	b[2] = 0x4C;
	b[3] = 0x55;
	b[4] = hdr;
	const Bytes hop = pack(mkhop(kCode10G, 0x2ABCD, 0x1234, 0x0FED));
	for (unsigned i = 0; i < slots; i++)
		std::copy(hop.begin(), hop.end(), b.begin() + 5 + 7 * i);
	return b;
}

TEST(IntOptionMalformed, TooManyHops)
{
	/*
	 * Six or more hop records (length 47, 54, ... with a valid version):
	 * EHOPS, whatever the flags, the count and the hop contents, since the
	 * slot limit is checked before count, echo and rate checks.
	 */
	for (unsigned slots = 6; slots <= 7; slots++) {
		SCOPED_TRACE(testing::Message() << "slots " << slots);
		const std::uint8_t echo_full = static_cast<std::uint8_t>(0x30 | (slots & 7));
		/* A well-formed echo of `slots` filled hops, as a 6/7-hop format would send it. */
		expect_reject(long_option(slots, echo_full), LUMEN_INT_EHOPS, "echo, count = slots");
		expect_reject(long_option(slots, echo_full | 0x08), LUMEN_INT_EHOPS, "echo with O");
		for (unsigned count = 0; count <= 7; count++) {
			SCOPED_TRACE(count);
			expect_reject(long_option(slots, static_cast<std::uint8_t>(0x20 | count)), LUMEN_INT_EHOPS,
				      "request");
			expect_reject(long_option(slots, static_cast<std::uint8_t>(0x30 | count)), LUMEN_INT_EHOPS,
				      "echo (count may differ from slots: EHOPS comes first)");
		}
		/* Malformed rate codes in every slot: still EHOPS (before ERATE). */
		Bytes bad = long_option(slots, echo_full);
		for (std::size_t i = 5; i < bad.size(); i++)
			bad[i] = 0xFF;
		expect_reject(bad, LUMEN_INT_EHOPS, "bad rates");
		/* More bytes after the option (other options follow): still EHOPS. */
		Bytes longer = long_option(slots, 0x20);
		longer.insert(longer.end(), {0x01, 0x01, 0x08, 0x0A});
		expect_reject(longer, LUMEN_INT_EHOPS, "trailing options");
		/* Earlier checks win: buffer one byte short, foreign ExID, other version. */
		const Bytes ok = long_option(slots, echo_full);
		expect_reject(ok, ok.size() - 1, LUMEN_INT_ETRUNCATED, "one byte short");
		Bytes exid = ok;
		exid[3] = 0x56;
		expect_reject(exid, LUMEN_INT_EEXID, "foreign ExID");
		for (unsigned ver : {0u, 3u, 7u}) { /* versions no code speaks (2 is known) */
			Bytes v = ok;
			v[4] = static_cast<std::uint8_t>((ver << 5) | (v[4] & 0x1F));
			expect_reject(v, LUMEN_INT_EVERSION, "other version");
		}
	}
	/* Every 5 + 7n above 40, up to the largest length byte (35 slots). */
	for (unsigned slots = 8; slots <= 35; slots++) {
		SCOPED_TRACE(slots);
		expect_reject(long_option(slots, 0x20), LUMEN_INT_EHOPS, "request");
		expect_reject(long_option(slots, static_cast<std::uint8_t>(0x30 | (slots & 7))), LUMEN_INT_EHOPS,
			      "echo");
	}
	/* The boundary: five slots (length 40) are fine. */
	EXPECT_EQ(parse_ok(long_option(5, 0x35)).count, 5);
	EXPECT_EQ(parse_ok(long_option(5, 0x23)).slots, 5);
}

TEST(IntOptionMalformed, UnknownExid)
{
	for (unsigned exid : {0x0000u, 0xFFFFu, 0x4C54u, 0x4C56u, 0x554Cu, 0x0D55u, 0xCC55u}) {
		Bytes b = base_request();
		b[2] = static_cast<std::uint8_t>(exid >> 8);
		b[3] = static_cast<std::uint8_t>(exid);
		expect_reject(b, LUMEN_INT_EEXID, "exid");
	}
}

TEST(IntOptionMalformed, UnknownVersion)
{
	/* Every 3-bit version but 1 and 2 (tests/int_option_v2_test.cpp has version 2). */
	for (unsigned ver : {0u, 3u, 4u, 5u, 6u, 7u}) {
		SCOPED_TRACE(ver);
		Bytes b = base_request();
		b[4] = static_cast<std::uint8_t>((ver << 5) | 0x01);
		expect_reject(b, LUMEN_INT_EVERSION, "request version");
		Bytes e{0xFD, 0x05, 0x4C, 0x55, static_cast<std::uint8_t>((ver << 5) | 0x10)};
		expect_reject(e, LUMEN_INT_EVERSION, "echo version");
	}
}

TEST(IntOptionMalformed, VersionBeforeLayout)
{
	/*
	 * Once the 5-byte header is present (and the buffer, kind and ExID are
	 * fine), an unknown version is refused before any layout check: a
	 * later version may lay out the option differently, so its length,
	 * slots, count and hops mean nothing here. Every version but 1 and 2.
	 */
	for (unsigned ver : {0u, 3u, 4u, 5u, 6u, 7u}) {
		SCOPED_TRACE(testing::Message() << "version " << ver);
		for (unsigned low : {0x00u, 0x01u, 0x07u, 0x10u, 0x13u, 0x18u, 0x1Fu}) {
			SCOPED_TRACE(low);
			for (int len = 5; len <= 255; len++) {
				SCOPED_TRACE(len);
				Bytes b(255, 0xFF); /* hop bytes: rate code 1023, malformed */
				b[0] = 0xFD;
				b[1] = static_cast<std::uint8_t>(len);
				b[2] = 0x4C;
				b[3] = 0x55;
				b[4] = static_cast<std::uint8_t>((ver << 5) | low);
				expect_reject(b, LUMEN_INT_EVERSION, "any length from 5 up");
				/* The buffer is checked first. */
				expect_reject(b, static_cast<std::size_t>(len) - 1, LUMEN_INT_ETRUNCATED, "truncated");
			}
			/* Below the header the version byte is not part of the option. */
			for (int len = 0; len <= 4; len++) {
				Bytes b{0xFD, static_cast<std::uint8_t>(len), 0x4C, 0x55,
					static_cast<std::uint8_t>((ver << 5) | low)};
				expect_reject(b, LUMEN_INT_ELENGTH, "length below the header");
			}
		}
		/* Spelled out, one layout error each. */
		const std::uint8_t v = static_cast<std::uint8_t>(ver << 5);
		expect_reject(Bytes{0xFD, 0x06, 0x4C, 0x55, v, 0}, LUMEN_INT_EVERSION, "length 6");
		expect_reject(Bytes{0xFD, 0x05, 0x4C, 0x55, v}, LUMEN_INT_EVERSION, "request without slots");
		expect_reject(Bytes{0xFD, 0x05, 0x4C, 0x55, static_cast<std::uint8_t>(v | 0x11)}, LUMEN_INT_EVERSION,
			      "echo with count beyond slots");
		expect_reject(long_option(6, static_cast<std::uint8_t>(v | 0x16)), LUMEN_INT_EVERSION, "6 hops");
		expect_reject(long_option(7, static_cast<std::uint8_t>(v | 0x17)), LUMEN_INT_EVERSION, "7 hops");
		Bytes b = base_request();
		b[4] = static_cast<std::uint8_t>(v | 0x05);
		expect_reject(b, LUMEN_INT_EVERSION, "count beyond slots");
		b = base_request();
		b[4] = static_cast<std::uint8_t>(v | 0x01);
		b[5] = 0xFF; /* hop 0: rate code 1023 */
		expect_reject(b, LUMEN_INT_EVERSION, "malformed rate");
		b = base_request();
		b[1] = 47;
		b.resize(47, 0);
		b[4] = static_cast<std::uint8_t>(v | 0x01);
		expect_reject(b, LUMEN_INT_EVERSION, "length 47");
		b[1] = 54;
		b.resize(54, 0);
		expect_reject(b, LUMEN_INT_EVERSION, "length 54");
		b[1] = 41;
		expect_reject(b, LUMEN_INT_EVERSION, "length 41");
	}
}

TEST(IntOptionMalformed, CheckOrder)
{
	/*
	 * Inputs where two error conditions hold; the earlier check in the
	 * documented order wins: buffer < 2, kind, length < 4, length > buffer,
	 * ExID, length < 5, version, length not 5 + 7n, slots > 5, count >
	 * slots, echo count != slots / request without slots, rate codes.
	 */
	const std::uint8_t v1 = 0x20;
	expect_reject(Bytes{0x00}, LUMEN_INT_ETRUNCATED, "buffer < 2 before kind");
	expect_reject(Bytes{0x00, 0x02}, LUMEN_INT_EKIND, "kind before length < 4");
	expect_reject(Bytes{0x00, 0x1A, 0x4C}, LUMEN_INT_EKIND, "kind before truncation");
	expect_reject(Bytes{0xFD, 0x03}, LUMEN_INT_ELENGTH, "length < 4 before length > buffer");
	expect_reject(Bytes{0xFD, 0x00, 0x00, 0x00}, LUMEN_INT_ELENGTH, "length < 4 before ExID");
	expect_reject(Bytes{0xFD, 0x1A, 0x00, 0x00, v1}, LUMEN_INT_ETRUNCATED, "truncation before ExID");
	expect_reject(Bytes{0xFD, 0x05, 0x4C, 0x55}, LUMEN_INT_ETRUNCATED, "truncation before version");
	expect_reject(Bytes{0xFD, 0x04, 0x00, 0x00, 0x00}, LUMEN_INT_EEXID, "ExID before length 4");
	expect_reject(Bytes{0xFD, 0x05, 0x12, 0x34, 0x00}, LUMEN_INT_EEXID, "ExID before version");
	expect_reject(Bytes{0xFD, 0x2F, 0x4C, 0x54, v1}, 5, LUMEN_INT_ETRUNCATED, "truncation before ExID (47)");
	/* 0x60: version 3, which no code speaks */
	expect_reject(Bytes{0xFD, 0x04, 0x4C, 0x55, 0x60}, LUMEN_INT_ELENGTH, "length 4 before version");
	expect_reject(Bytes{0xFD, 0x04, 0x4C, 0x55}, LUMEN_INT_ELENGTH, "length 4, nothing more");
	expect_reject(Bytes{0xFD, 0x06, 0x4C, 0x55, 0x60, 0}, LUMEN_INT_EVERSION, "version before length 5 + 7n");
	expect_reject(long_option(6, 0x76), LUMEN_INT_EVERSION, "version before slots > 5");
	expect_reject(Bytes{0xFD, 0x06, 0x4C, 0x55, 0x27, 0}, LUMEN_INT_ELENGTH, "length 5 + 7n before count");
	expect_reject(long_option(6, 0x27), LUMEN_INT_EHOPS, "slots > 5 before count > slots");
	expect_reject(long_option(6, 0x31), LUMEN_INT_EHOPS, "slots > 5 before echo count != slots");
	expect_reject(Bytes{0xFD, 0x05, 0x4C, 0x55, 0x21}, LUMEN_INT_ECOUNT, "count > slots before request 0 slots");
	Bytes b = base_request(); /* 3 slots */
	b[4] = 0x24;
	b[5] = 0xFF; /* hop 0: rate code 1023 */
	expect_reject(b, LUMEN_INT_ECOUNT, "count > slots before rate");
	b[4] = 0x31;
	expect_reject(b, LUMEN_INT_ECOUNT, "echo count != slots before rate");
	b[4] = 0x21;
	expect_reject(b, LUMEN_INT_ERATE, "then the rate");
}

TEST(IntOptionMalformed, CountBeyondSlots)
{
	for (unsigned count = 4; count <= 7; count++) {
		Bytes b = base_request(); /* 3 slots */
		b[4] = static_cast<std::uint8_t>(0x20 | count);
		expect_reject(b, LUMEN_INT_ECOUNT, "request count > slots");
	}
	/* A full 5-slot request is fine; count 6 and 7 are not. */
	Bytes five(40, 0);
	ASSERT_EQ(lumen_int_write_request(five.data(), 40, 5), 40);
	for (unsigned i = 0; i < 5; i++)
		five[5 + 7 * i] = 0xC8;
	five[4] = 0x25;
	EXPECT_EQ(parse_ok(five).count, 5);
	five[4] = 0x26;
	expect_reject(five, LUMEN_INT_ECOUNT, "count 6");
	five[4] = 0x27;
	expect_reject(five, LUMEN_INT_ECOUNT, "count 7");
}

TEST(IntOptionMalformed, EchoWithEmptySlots)
{
	Bytes b = base_request(); /* 3 slots, hop 0 filled */
	for (unsigned count : {0u, 1u, 2u, 4u, 7u}) {
		b[4] = static_cast<std::uint8_t>(0x30 | count);
		expect_reject(b, LUMEN_INT_ECOUNT, "echo count != slots");
	}
	Bytes e{0xFD, 0x05, 0x4C, 0x55, 0x31};
	expect_reject(e, LUMEN_INT_ECOUNT, "empty echo with count 1");
	/* With valid rates in every slot and count == slots it is accepted. */
	b[12] = 0xC8;
	b[19] = 0xC8;
	b[4] = 0x33;
	EXPECT_EQ(parse_ok(b).count, 3);
}

TEST(IntOptionMalformed, BadRateInFilledHop)
{
	/* Codes from the documented rule: mant = 0 with exp != 0, or > 1.6 Tbit/s. */
	std::vector<__u16> bad;
	for (unsigned exp = 1; exp <= 7; exp++)
		bad.push_back(code(0, exp));
	bad.push_back(code(17, 5)); /* 1.7 Tbit/s */
	bad.push_back(code(127, 5));
	bad.push_back(code(2, 6)); /* 2 Tbit/s */
	bad.push_back(code(1, 7));
	bad.push_back(code(127, 7));
	for (__u16 c : bad) {
		SCOPED_TRACE(c);
		/* In hop 0 and in the last filled hop of a request. */
		Bytes b = base_request();
		b[4] = 0x22; /* count 2 */
		b[12] = 0xC8; /* hop 1: 10G */
		const lumen_int_hop bad_hop = mkhop(c, 5, 6, 7);
		Bytes h0 = b;
		lumen_int_hop_pack(&bad_hop, h0.data() + 5);
		expect_reject(h0, LUMEN_INT_ERATE, "hop 0");
		Bytes h1 = b;
		lumen_int_hop_pack(&bad_hop, h1.data() + 12);
		expect_reject(h1, LUMEN_INT_ERATE, "hop 1");
		/* In an unfilled slot it is not looked at. */
		Bytes h2 = b;
		lumen_int_hop_pack(&bad_hop, h2.data() + 19);
		lumen_int_opt o = parse_ok(h2);
		EXPECT_EQ(o.count, 2);
		EXPECT_EQ(o.hops[2].rate, c); /* present on the wire, reported raw */
		/* In an echo every slot is filled, so it is refused. */
		h2[4] = 0x33;
		expect_reject(h2, LUMEN_INT_ERATE, "echo hop 2");
	}
	/* The boundary and the "unknown" code are valid in a filled hop. */
	for (__u16 c : {__u16{0}, kCodeMax, code(127, 4), code(1, 0)}) {
		Bytes b = base_request();
		lumen_int_hop h = mkhop(c, 1, 2, 3);
		lumen_int_hop_pack(&h, b.data() + 5);
		lumen_int_opt o = parse_ok(b);
		EXPECT_EQ(o.hops[0].rate, c);
	}
}

TEST(IntOptionMalformed, UnfilledSlotsNotValidated)
{
	Bytes b = base_request();
	for (std::size_t i = 12; i < b.size(); i++)
		b[i] = 0xFF; /* rate code 1023 in slots 1 and 2 */
	lumen_int_opt o = parse_ok(b);
	EXPECT_EQ(o.count, 1);
	EXPECT_EQ(o.hops[1].rate, 1023);
	EXPECT_EQ(o.hops[2].ts, 0x3FFFFu);
}

/* ---------------------------------------------------------------------- */
/* Option space budget                                                     */

constexpr unsigned round4(unsigned n)
{
	return (n + 3) & ~3u;
}

TEST(IntOptionBudget, FitsTcpOptionSpace)
{
	const unsigned tcp_opt_space = 40;
	const unsigned timestamps = 12; /* NOP, NOP, TS(10) */
	/* Three hops next to timestamps: 26 bytes, padded to 28. */
	EXPECT_EQ(LUMEN_INT_OPT_LEN(3), 26);
	EXPECT_LE(round4(LUMEN_INT_OPT_LEN(3)), tcp_opt_space - timestamps);
	/* Four hops do not fit next to timestamps, but do alone. */
	EXPECT_EQ(LUMEN_INT_OPT_LEN(4), 33);
	EXPECT_GT(round4(LUMEN_INT_OPT_LEN(4)), tcp_opt_space - timestamps);
	EXPECT_LE(round4(LUMEN_INT_OPT_LEN(4)), tcp_opt_space);
	/* Five hops use the whole option space exactly. */
	EXPECT_EQ(LUMEN_INT_OPT_LEN(5), 40);
	EXPECT_EQ(LUMEN_INT_OPT_LEN(LUMEN_INT_MAX_HOPS), static_cast<int>(tcp_opt_space));
	Bytes buf(40);
	EXPECT_EQ(lumen_int_write_request(buf.data(), 28, 3), 26);
	EXPECT_EQ(lumen_int_write_request(buf.data(), 28, 4), -LUMEN_INT_ENOSPACE);
	EXPECT_EQ(lumen_int_write_request(buf.data(), 40, 5), 40);
}

/* ---------------------------------------------------------------------- */
/* Rate code                                                               */

TEST(IntRateCode, UsualRatesExact)
{
	/* The usual rates, odd testbed rates, the range ends. */
	std::vector<std::uint32_t> rates = {10, 100, 1000, 2500, 10000, 12500, 25000, 40000, 50000, 100000, 200000};
	for (std::uint32_t r : {400000, 800000, 150, 300, 1500, 560, 5000, 20000, 56000, 120000, 125000, 1200000})
		rates.push_back(r);
	for (std::uint32_t r : {1, 127, 1600000})
		rates.push_back(r);
	for (std::uint32_t r : rates) {
		__u16 c = lumen_int_rate_encode(r);
		EXPECT_NE(c, 0) << r;
		EXPECT_LT(c, 1024) << r;
		EXPECT_EQ(lumen_int_rate_mbps(c), r) << r;
		EXPECT_TRUE(lumen_int_rate_code_valid(c)) << r;
	}
	/* Codes spelled out: smallest exponent with a 7-bit mantissa. */
	EXPECT_EQ(lumen_int_rate_encode(10), code(10, 0));
	EXPECT_EQ(lumen_int_rate_encode(127), code(127, 0));
	EXPECT_EQ(lumen_int_rate_encode(1000), code(100, 1));
	EXPECT_EQ(lumen_int_rate_encode(2500), code(25, 2));
	EXPECT_EQ(lumen_int_rate_encode(10000), code(100, 2));
	EXPECT_EQ(lumen_int_rate_encode(12500), code(125, 2));
	EXPECT_EQ(lumen_int_rate_encode(100000), code(100, 3));
	EXPECT_EQ(lumen_int_rate_encode(800000), code(80, 4));
	EXPECT_EQ(lumen_int_rate_encode(1600000), code(16, 5));
}

TEST(IntRateCode, OutOfRangeEncodesUnknown)
{
	EXPECT_EQ(lumen_int_rate_encode(0), 0);
	EXPECT_EQ(lumen_int_rate_encode(1600001), 0);
	EXPECT_EQ(lumen_int_rate_encode(2000000), 0);
	EXPECT_EQ(lumen_int_rate_encode(UINT32_MAX), 0);
	EXPECT_EQ(lumen_int_rate_mbps(0), 0u);
}

/* Independent decoder from the documented formula. */
std::uint64_t doc_rate(unsigned c)
{
	std::uint64_t r = c >> 3;
	for (unsigned e = 0; e < (c & 7); e++)
		r *= 10;
	return r;
}

TEST(IntRateCode, ErrorBoundOverWholeRange)
{
	/*
	 * Every rate 1..1.6e6 (exhaustive: cheap). The header promised 0.5%
	 * for any rate, which a 7-bit-mantissa decimal code cannot deliver
	 * (128 lies between 127 and 130); the documented bounds are: exact
	 * below 128, rounding to nearest at the smallest exponent whose
	 * mantissa fits, < 0.51% when that mantissa is >= 100, <= 3.71%
	 * always, worst at 135 -> 140.
	 */
	double worst = 0;
	std::uint32_t worst_rate = 0;
	for (std::uint32_t r = 1; r <= LUMEN_INT_RATE_MAX_MBPS; r++) {
		__u16 c = lumen_int_rate_encode(r);
		unsigned mant = c >> 3, exp = c & 7;
		std::uint64_t scale = 1;
		for (unsigned e = 0; e < exp; e++)
			scale *= 10;
		std::uint64_t dec = lumen_int_rate_mbps(c);
		ASSERT_EQ(dec, doc_rate(c)) << r;
		ASSERT_GE(mant, 1u) << r;
		ASSERT_LE(mant, 127u) << r;
		/* Round to nearest (ties up) at this exponent ... */
		ASSERT_LE(2 * (dec > r ? dec - r : r - dec), scale) << r;
		/* ... and the exponent is the smallest whose mantissa fits. */
		if (exp > 0) {
			ASSERT_GT((r + scale / 20) / (scale / 10), 127u) << r;
		}
		double err = (dec > r ? double(dec - r) : double(r - dec)) / r;
		if (r < 128) {
			ASSERT_EQ(dec, r);
		}
		if (mant >= 100) {
			ASSERT_LT(err, 0.0051) << r;
		}
		ASSERT_LE(err, 0.0371) << r;
		if (err > worst) {
			worst = err;
			worst_rate = r;
		}
	}
	EXPECT_EQ(worst_rate, 135u);
	EXPECT_EQ(lumen_int_rate_mbps(lumen_int_rate_encode(135)), 140u);
	EXPECT_EQ(lumen_int_rate_mbps(lumen_int_rate_encode(128)), 130u);
	EXPECT_EQ(lumen_int_rate_mbps(lumen_int_rate_encode(995)), 1000u);
	EXPECT_EQ(lumen_int_rate_mbps(lumen_int_rate_encode(994)), 990u);
}

TEST(IntRateCode, RandomSamplesAndStride)
{
	Rng rng(3);
	for (int i = 0; i < 200000; i++) {
		std::uint32_t r = static_cast<std::uint32_t>(rng.range(1, LUMEN_INT_RATE_MAX_MBPS));
		std::uint64_t dec = lumen_int_rate_mbps(lumen_int_rate_encode(r));
		std::uint64_t diff = dec > r ? dec - r : r - dec;
		ASSERT_LE(10000 * diff, 371ull * r) << r; /* within 3.71% */
	}
	/* Strided: multiples of a representable step stay exact. */
	for (std::uint32_t r = 1000; r <= 127000; r += 1000)
		ASSERT_EQ(lumen_int_rate_mbps(lumen_int_rate_encode(r)), r);
	for (std::uint32_t r = 10; r <= 1270; r += 10)
		ASSERT_EQ(lumen_int_rate_mbps(lumen_int_rate_encode(r)), r);
}

TEST(IntRateCode, CodeValidityMatchesDocumentedRule)
{
	int valid = 0;
	for (unsigned c = 0; c < 1024; c++) {
		unsigned mant = c >> 3;
		bool expect;
		if (c == 0)
			expect = true; /* unknown */
		else if (mant == 0)
			expect = false; /* non-canonical zero */
		else
			expect = doc_rate(c) <= 1600000;
		ASSERT_EQ(lumen_int_rate_code_valid(static_cast<__u16>(c)) != 0, expect) << c;
		if (expect) {
			valid++;
			if (c != 0) {
				ASSERT_EQ(lumen_int_rate_mbps(static_cast<__u16>(c)), doc_rate(c)) << c;
				/* Every representable rate encodes exactly (maybe as another code). */
				ASSERT_EQ(lumen_int_rate_mbps(
						  lumen_int_rate_encode(lumen_int_rate_mbps(static_cast<__u16>(c)))),
					  doc_rate(c))
					<< c;
			}
		} else {
			ASSERT_EQ(lumen_int_rate_mbps(static_cast<__u16>(c)), 0u) << c;
		}
	}
	/* 0, mantissas 1..127 at exp 0..4, 1..16 at exp 5, 1 at exp 6 (1e6). */
	EXPECT_EQ(valid, 1 + 127 * 5 + 16 + 1);
	/* Codes wider than 10 bits are never valid. */
	for (unsigned c : {1024u, 1024u | code(100, 2), 0x8000u, 0xFFFFu})
		EXPECT_FALSE(lumen_int_rate_code_valid(static_cast<__u16>(c))) << c;
}

/* ---------------------------------------------------------------------- */
/* Byte unit rule                                                          */

/* Does 2^(14+k) bytes hold 2^22 ns at rate Mbit/s? bytes = rate * 2^22 / 8000. */
bool unit_holds(std::uint64_t rate, unsigned k)
{
	return (std::uint64_t{1} << (14 + k)) * 8000 >= rate * (std::uint64_t{1} << 22);
}

void check_shift(std::uint32_t rate)
{
	unsigned k = lumen_int_unit_shift(rate);
	ASSERT_TRUE(unit_holds(rate, k)) << rate;
	if (k > 0) {
		ASSERT_FALSE(unit_holds(rate, k - 1)) << rate;
	}
}

TEST(IntUnitShift, DocumentedExamples)
{
	EXPECT_EQ(lumen_int_unit_shift(100), 2u); /* 4 B */
	EXPECT_EQ(lumen_int_unit_shift(1000), 5u); /* 32 B */
	EXPECT_EQ(lumen_int_unit_shift(10000), 9u); /* 512 B */
	EXPECT_EQ(lumen_int_unit_shift(100000), 12u); /* 4 KiB */
	EXPECT_EQ(lumen_int_unit_shift(10), 0u);
	EXPECT_EQ(lumen_int_unit_shift(31), 0u); /* 31 * 2^22 / 8000 = 16252 B <= 16384 */
	EXPECT_EQ(lumen_int_unit_shift(32), 1u); /* 16777 B > 16384 */
	EXPECT_EQ(lumen_int_unit_shift(1600000), 16u);
}

TEST(IntUnitShift, MinimalShiftForEveryRate)
{
	for (unsigned c = 1; c < 1024; c++)
		if (lumen_int_rate_code_valid(static_cast<__u16>(c)))
			check_shift(lumen_int_rate_mbps(static_cast<__u16>(c)));
	for (std::uint32_t r = 1; r <= LUMEN_INT_RATE_MAX_MBPS; r += 97)
		check_shift(r);
	/* Exact boundaries: k steps where 125 * 2^k crosses 4 * rate. */
	for (unsigned k = 0; k <= 16; k++) {
		std::uint32_t edge = static_cast<std::uint32_t>((125ull << k) / 4); /* last rate for k */
		if (edge == 0 || edge > LUMEN_INT_RATE_MAX_MBPS)
			continue;
		check_shift(edge);
		check_shift(edge + 1);
	}
}

/* The documented rate code rule: 0 (unknown), or 10 bits, mant != 0, <= 1.6 Tbit/s. */
bool doc_code_valid(unsigned c)
{
	if (c == 0)
		return true;
	return c < 1024 && (c >> 3) != 0 && doc_rate(c) <= 1600000;
}

/* The documented byte unit: the smallest k for which 2^14 units hold 2^22 ns. */
unsigned doc_shift(std::uint64_t rate)
{
	unsigned k = 0;
	while (!unit_holds(rate, k))
		k++;
	return k;
}

/* Usable dt, exclusive: 15/16 of half the 2^18-tick wrap. */
constexpr std::uint32_t kDtEnd = (1u << 17) / 16 * 15;

/* ---------------------------------------------------------------------- */
/* Hop records                                                             */

TEST(IntHopMake, MasksAndWraps)
{
	lumen_int_hop h;
	auto make = [&](std::uint64_t now, std::uint64_t tx, std::uint64_t q, __u16 rc) {
		std::memset(&h, 0xFF, sizeof(h));
		lumen_int_hop_make(&h, now, tx, q, rc);
	};
	/* 10G: 512-byte units. */
	make(0, 0, 0, kCode10G);
	EXPECT_TRUE(same_hop(h, mkhop(kCode10G, 0, 0, 0)));
	EXPECT_EQ(h.pad, 0);
	make(15, 511, 511, kCode10G);
	EXPECT_TRUE(same_hop(h, mkhop(kCode10G, 0, 0, 0)));
	make(16, 512, 512, kCode10G);
	EXPECT_TRUE(same_hop(h, mkhop(kCode10G, 1, 1, 1)));
	make((1ull << 22) - 16, (1ull << 23) - 512, 16382ull * 512 + 511, kCode10G);
	EXPECT_TRUE(same_hop(h, mkhop(kCode10G, 0x3FFFF, 0x3FFF, 16382)));
	/* ts wraps every 2^22 ns, tx every 2^14 units = 2^23 B. */
	make(1ull << 22, 1ull << 23, 16383ull * 512, kCode10G);
	EXPECT_TRUE(same_hop(h, mkhop(kCode10G, 0, 0, 16383)));
	make((5ull << 40) + (1ull << 22) + 16 * 5 + 7, (1ull << 40) + 3 * 512 + 100, 16384ull * 512, kCode10G);
	EXPECT_TRUE(same_hop(h, mkhop(kCode10G, 5, 3, 16383)));
	make(UINT64_MAX, UINT64_MAX, UINT64_MAX, kCode10G);
	EXPECT_TRUE(same_hop(h, mkhop(kCode10G, 0x3FFFF, 0x3FFF, 16383)));
	/* 100G: 4 KiB units. */
	make(0, 4096 * 7 + 4095, 4096 * 9, code(100, 3));
	EXPECT_TRUE(same_hop(h, mkhop(code(100, 3), 0, 7, 9)));
	/* Unknown rate: unit 1 byte; qlen still saturates. */
	make(160, 5, 20000, 0);
	EXPECT_TRUE(same_hop(h, mkhop(0, 10, 5, 16383)));
	EXPECT_EQ(h.pad, 0);
}

TEST(IntHopMake, InvalidRateCodeSentAsUnknown)
{
	/*
	 * A code lumen_int_rate_code_valid refuses (wider than 10 bits, mant 0
	 * with exp != 0, above 1.6 Tbit/s) is stored as 0, "unknown", and the
	 * byte unit follows the stored code: 1 byte. Every 16-bit code.
	 */
	const std::uint64_t now = 0x0123456789ABCDEFull, tx = 0xFEDCBA9876543210ull;
	int valid = 0;
	for (unsigned c = 0; c <= 0xFFFF; c++) {
		const bool ok = doc_code_valid(c);
		ASSERT_EQ(lumen_int_rate_code_valid(static_cast<__u16>(c)) != 0, ok) << c;
		const unsigned k = doc_shift(ok ? doc_rate(c) : 0);
		for (std::uint64_t q : {0ull, 5000ull, 3000000ull, ~0ull}) {
			lumen_int_hop h;
			std::memset(&h, 0xFF, sizeof(h));
			lumen_int_hop_make(&h, now, tx, q, static_cast<__u16>(c));
			ASSERT_EQ(h.rate, ok ? c : 0u) << c;
			ASSERT_EQ(h.ts, (now >> 4) & 0x3FFFF) << c;
			ASSERT_EQ(h.tx, (tx >> k) & 0x3FFF) << c;
			ASSERT_EQ(h.qlen, std::min<std::uint64_t>(q >> k, 16383)) << c << " q " << q;
			ASSERT_EQ(h.pad, 0) << c;
		}
		valid += ok;
	}
	EXPECT_EQ(valid, 653);

	/* Spelled out: 1-byte units, as for code 0. */
	const __u16 bad[] = {code(17, 5),
			     code(127, 7),
			     code(0, 1),
			     code(0, 3),
			     static_cast<__u16>(1024 | kCode10G),
			     static_cast<__u16>(code(200, 0)),
			     0xFFFF};
	for (__u16 c : bad) {
		SCOPED_TRACE(c);
		lumen_int_hop h;
		std::memset(&h, 0xEE, sizeof(h));
		lumen_int_hop_make(&h, 160, 5, 20000, c);
		EXPECT_TRUE(same_hop(h, mkhop(0, 10, 5, 16383)));
		EXPECT_EQ(h.pad, 0);
		lumen_int_hop_make(&h, 16 * 7, 512 * 3 + 7, 512 * 4, c);
		EXPECT_TRUE(same_hop(h, mkhop(0, 7, 512 * 3 + 7, 512 * 4)));
		/* On the wire: rate field 0, which a parser accepts as unknown. */
		EXPECT_EQ(pack(h)[0], 0);
		EXPECT_EQ(pack(h)[1] & 0xC0, 0);
		Bytes b = base_request();
		lumen_int_hop_pack(&h, b.data() + 5);
		lumen_int_opt o = parse_ok(b);
		EXPECT_EQ(o.hops[0].rate, 0);
		/* And a delta over such records is refused (rate unknown). */
		lumen_int_hop later;
		lumen_int_hop_make(&later, 16 * 8, 512 * 3 + 8, 0, c);
		lumen_int_delta d;
		EXPECT_EQ(lumen_int_hop_delta(&h, &later, &d), LUMEN_INT_DELTA_ERATE);
	}
	/* 1024 | 10G used to keep its low 10 bits on the wire: 10G, 512 B units. */
	lumen_int_hop h;
	lumen_int_hop_make(&h, 0, 512 * 3, 0, static_cast<__u16>(1024 | kCode10G));
	EXPECT_EQ(h.rate, 0);
	EXPECT_EQ(h.tx, 512 * 3);
	/* Valid codes are kept, with their own unit; the boundary is included. */
	lumen_int_hop_make(&h, 0, 3ull << 16, 5ull << 16, kCodeMax);
	EXPECT_TRUE(same_hop(h, mkhop(kCodeMax, 0, 3, 5)));
	lumen_int_hop_make(&h, 0, 7, 9, code(1, 0));
	EXPECT_TRUE(same_hop(h, mkhop(code(1, 0), 0, 7, 9)));
}

/* ---------------------------------------------------------------------- */
/* Hop deltas                                                              */

int delta(const lumen_int_hop &a, const lumen_int_hop &b, lumen_int_delta *d)
{
	return lumen_int_hop_delta(&a, &b, d);
}

// Every field of a delta the core computed against what it should be.
struct DeltaWant {
	__u64 dt_ns, tx_bytes, qlen_prev_bytes, qlen_bytes, rate_mbps, saturated;
};
void expect_delta(const lumen_int_delta &d, const DeltaWant &w)
{
	EXPECT_EQ(d.dt_ns, w.dt_ns);
	EXPECT_EQ(d.tx_bytes, w.tx_bytes);
	EXPECT_EQ(d.qlen_prev_bytes, w.qlen_prev_bytes);
	EXPECT_EQ(d.qlen_bytes, w.qlen_bytes);
	EXPECT_EQ(d.rate_mbps, w.rate_mbps);
	EXPECT_EQ(d.saturated, w.saturated);
}

TEST(IntHopDelta, AcrossWraps)
{
	lumen_int_delta d;
	/* ts 2^18 - 1000 -> 1000: 2000 ticks; tx 2^14 - 30 -> 40: 70 units. */
	ASSERT_EQ(delta(mkhop(kCode10G, (1u << 18) - 1000, (1u << 14) - 30, 10), mkhop(kCode10G, 1000, 40, 20), &d),
		  LUMEN_INT_DELTA_OK);
	expect_delta(d, {32000, 70u * 512, 10u * 512, 20u * 512, 10000, 0});
	/* No wrap at all. */
	ASSERT_EQ(delta(mkhop(kCode10G, 100, 200, 0), mkhop(kCode10G, 2100, 270, 0), &d), LUMEN_INT_DELTA_OK);
	EXPECT_EQ(d.dt_ns, 32000u);
	EXPECT_EQ(d.tx_bytes, 70u * 512);
	/* Only tx wraps. */
	ASSERT_EQ(delta(mkhop(kCode10G, 100, 0x3FFF, 0), mkhop(kCode10G, 2100, 0, 0), &d), LUMEN_INT_DELTA_OK);
	EXPECT_EQ(d.tx_bytes, 512u);
	/* One tick across the ts wrap, no bytes. */
	ASSERT_EQ(delta(mkhop(kCode10G, 0x3FFFF, 9, 0), mkhop(kCode10G, 0, 9, 0), &d), LUMEN_INT_DELTA_OK);
	EXPECT_EQ(d.dt_ns, 16u);
	EXPECT_EQ(d.tx_bytes, 0u);
}

TEST(IntHopDelta, TimeWindow)
{
	lumen_int_delta d;
	/* Usable: 0 < dt < 15/16 * 2^17 = 122880 ticks (1966080 ns, 1.97 ms). */
	EXPECT_EQ(kDtEnd, 122880u);
	EXPECT_EQ(LUMEN_INT_DT_MAX_TICKS, kDtEnd);
	EXPECT_EQ(delta(mkhop(kCode10G, 77, 0, 0), mkhop(kCode10G, 77, 0, 0), &d), LUMEN_INT_DELTA_ETIME);
	/* The last usable tick, and the first stale one. */
	ASSERT_EQ(delta(mkhop(kCode10G, 5, 0, 0), mkhop(kCode10G, 5 + kDtEnd - 1, 0, 0), &d), LUMEN_INT_DELTA_OK);
	EXPECT_EQ(d.dt_ns, 1966064u);
	EXPECT_EQ(delta(mkhop(kCode10G, 5, 0, 0), mkhop(kCode10G, 5 + kDtEnd, 0, 0), &d), LUMEN_INT_DELTA_ETIME);
	EXPECT_EQ(delta(mkhop(kCode10G, 5, 0, 0), mkhop(kCode10G, 5 + kDtEnd + 1, 0, 0), &d), LUMEN_INT_DELTA_ETIME);
	/* Between the new end and half the wrap (the old end), and beyond. */
	for (std::uint32_t dt : {kDtEnd + 4096, (1u << 17) - 1, 1u << 17, (1u << 17) + 1, (1u << 18) - 1}) {
		EXPECT_EQ(delta(mkhop(kCode10G, 5, 0, 0), mkhop(kCode10G, 5 + dt, 0, 0), &d), LUMEN_INT_DELTA_ETIME)
			<< dt;
	}
	/* Going backwards by one tick looks like 2^18 - 1 ticks: stale. */
	EXPECT_EQ(delta(mkhop(kCode10G, 100, 0, 0), mkhop(kCode10G, 99, 0, 0), &d), LUMEN_INT_DELTA_ETIME);
	/* Same boundary across the wrap. */
	EXPECT_EQ(delta(mkhop(kCode10G, (1u << 18) - 10, 0, 0), mkhop(kCode10G, kDtEnd - 10, 0, 0), &d),
		  LUMEN_INT_DELTA_ETIME);
	ASSERT_EQ(delta(mkhop(kCode10G, (1u << 18) - 10, 0, 0), mkhop(kCode10G, kDtEnd - 11, 0, 0), &d),
		  LUMEN_INT_DELTA_OK);
	EXPECT_EQ(d.dt_ns, (kDtEnd - 1) * 16ull);
	ASSERT_EQ(delta(mkhop(kCode10G, 5, 0, 0), mkhop(kCode10G, 6, 0, 0), &d), LUMEN_INT_DELTA_OK);
	EXPECT_EQ(d.dt_ns, 16u);
	/* Time is checked before the counter: stale and implausible is ETIME. */
	EXPECT_EQ(delta(mkhop(kCode10G, 5, 0, 0), mkhop(kCode10G, 5 + kDtEnd, 9000, 0), &d), LUMEN_INT_DELTA_ETIME);
	EXPECT_EQ(delta(mkhop(kCode10G, 5, 0, 0), mkhop(kCode10G, 5, 9000, 0), &d), LUMEN_INT_DELTA_ETIME);
	/* Every dt, from two origins (one crossing the wrap), at 1.6 Tbit/s. */
	for (std::uint32_t t0 : {0u, (1u << 18) - 3000}) {
		for (std::uint32_t dt = 0; dt < (1u << 18); dt++) {
			const int rc = delta(mkhop(kCodeMax, t0, 0, 0), mkhop(kCodeMax, (t0 + dt) & 0x3FFFF, 0, 0), &d);
			ASSERT_EQ(rc, (dt > 0 && dt < kDtEnd) ? LUMEN_INT_DELTA_OK : LUMEN_INT_DELTA_ETIME) << dt;
			if (rc == LUMEN_INT_DELTA_OK) {
				ASSERT_EQ(d.dt_ns, 16ull * dt);
			}
		}
	}
}

TEST(IntHopDelta, RateChecks)
{
	lumen_int_delta d;
	EXPECT_EQ(delta(mkhop(kCode10G, 0, 0, 0), mkhop(kCode25G, 100, 0, 0), &d), LUMEN_INT_DELTA_ERATE);
	EXPECT_EQ(delta(mkhop(kCode25G, 0, 0, 0), mkhop(kCode10G, 100, 0, 0), &d), LUMEN_INT_DELTA_ERATE);
	/* 10G written as 100 * 10^2 and as 10 * 10^3: same rate, other code. */
	EXPECT_EQ(delta(mkhop(code(100, 2), 0, 0, 0), mkhop(code(10, 3), 100, 0, 0), &d), LUMEN_INT_DELTA_ERATE);
	EXPECT_EQ(delta(mkhop(0, 0, 0, 0), mkhop(0, 100, 0, 0), &d), LUMEN_INT_DELTA_ERATE);
	EXPECT_EQ(delta(mkhop(code(0, 3), 0, 0, 0), mkhop(code(0, 3), 100, 0, 0), &d), LUMEN_INT_DELTA_ERATE);
	EXPECT_EQ(delta(mkhop(code(17, 5), 0, 0, 0), mkhop(code(17, 5), 100, 0, 0), &d), LUMEN_INT_DELTA_ERATE);
	EXPECT_EQ(delta(mkhop(1023, 0, 0, 0), mkhop(1023, 100, 0, 0), &d), LUMEN_INT_DELTA_ERATE);
	/* A rate problem is reported as such even when dt is also unusable. */
	EXPECT_EQ(delta(mkhop(kCode10G, 0, 0, 0), mkhop(kCode25G, 0, 0, 0), &d), LUMEN_INT_DELTA_ERATE);
	EXPECT_EQ(delta(mkhop(0, 0, 0, 0), mkhop(0, 0, 0, 0), &d), LUMEN_INT_DELTA_ERATE);
}

TEST(IntHopDelta, CounterPlausibilityBoundaries)
{
	lumen_int_delta d;
	/*
	 * limit = floor(rate * (dt_ns + 16) / 8000); limit += floor(limit / 16)
	 * + 2 units. 10G (512 B units), dt = 2000 ticks = 32000 ns:
	 * 10000 * 32016 / 8000 = 40020; + 2501 + 1024 = 43545 B: 85 units =
	 * 43520 B fit, 86 = 44032 B do not (without the 1/16 slack the limit
	 * was 41044 B, 80 units).
	 */
	ASSERT_EQ(delta(mkhop(kCode10G, 0, 16384 - 44, 0), mkhop(kCode10G, 2000, 41, 0), &d), LUMEN_INT_DELTA_OK);
	EXPECT_EQ(d.tx_bytes, 43520u);
	EXPECT_EQ(d.dt_ns, 32000u);
	EXPECT_EQ(delta(mkhop(kCode10G, 0, 16384 - 45, 0), mkhop(kCode10G, 2000, 41, 0), &d), LUMEN_INT_DELTA_ECOUNTER);
	EXPECT_EQ(delta(mkhop(kCode10G, 0, 0, 0), mkhop(kCode10G, 2000, 81, 0), &d), LUMEN_INT_DELTA_OK);
	/* 10G, one tick: 10000 * 32 / 8000 = 40; + 2 + 1024 = 1066 B: 2 units ok, 3 not. */
	EXPECT_EQ(delta(mkhop(kCode10G, 7, 0, 0), mkhop(kCode10G, 8, 2, 0), &d), LUMEN_INT_DELTA_OK);
	EXPECT_EQ(delta(mkhop(kCode10G, 7, 0, 0), mkhop(kCode10G, 8, 3, 0), &d), LUMEN_INT_DELTA_ECOUNTER);
	/*
	 * 10M (1 B units): both divisions round down, and the slack is taken
	 * from the rounded limit.
	 *   100 ticks:    10 * 1616 / 8000 = 2.02 -> 2;          + 0 + 2 = 4 B
	 *   798 ticks:    10 * 12784 / 8000 = 15.98 -> 15;       + 0 + 2 = 17 B
	 *   799 ticks:    10 * 12800 / 8000 = 16;                + 1 + 2 = 19 B
	 *   100100 ticks: 10 * 1601616 / 8000 = 2002.02 -> 2002; + 125 + 2 = 2129 B
	 */
	struct {
		std::uint32_t ticks, limit;
	} const m10[] = {{100, 4}, {798, 17}, {799, 19}, {100100, 2129}};
	for (const auto &c : m10) {
		SCOPED_TRACE(c.ticks);
		ASSERT_EQ(delta(mkhop(kCode10M, 0, 1000, 0),
				mkhop(kCode10M, c.ticks, static_cast<__u16>(1000 + c.limit), 0), &d),
			  LUMEN_INT_DELTA_OK);
		EXPECT_EQ(d.tx_bytes, c.limit);
		EXPECT_EQ(d.dt_ns, 16ull * c.ticks);
		EXPECT_EQ(delta(mkhop(kCode10M, 0, 1000, 0),
				mkhop(kCode10M, c.ticks, static_cast<__u16>(1000 + c.limit + 1), 0), &d),
			  LUMEN_INT_DELTA_ECOUNTER);
	}
	/*
	 * 1.6T (64 KiB units) at the last usable dt, 122879 ticks:
	 * 1.6e6 * 1966080 / 8000 = 393216000; + 24576000 + 131072 = 417923072 B
	 * = 6377 units exactly: equality is accepted, one unit more is not.
	 */
	ASSERT_EQ(delta(mkhop(kCodeMax, 0, 10000, 0), mkhop(kCodeMax, kDtEnd - 1, (10000 + 6377) & 0x3FFF, 0), &d),
		  LUMEN_INT_DELTA_OK);
	EXPECT_EQ(d.tx_bytes, 6377ull << 16);
	EXPECT_EQ(d.tx_bytes, 417923072u);
	EXPECT_EQ(d.rate_mbps, 1600000u);
	EXPECT_EQ(delta(mkhop(kCodeMax, 0, 10000, 0), mkhop(kCodeMax, kDtEnd - 1, (10000 + 6378) & 0x3FFF, 0), &d),
		  LUMEN_INT_DELTA_ECOUNTER);
	/* Same limit one tick earlier: 6376 units (417919672 B rounded down). */
	EXPECT_EQ(delta(mkhop(kCodeMax, 0, 0, 0), mkhop(kCodeMax, kDtEnd - 2, 6376, 0), &d), LUMEN_INT_DELTA_OK);
	EXPECT_EQ(delta(mkhop(kCodeMax, 0, 0, 0), mkhop(kCodeMax, kDtEnd - 2, 6377, 0), &d), LUMEN_INT_DELTA_ECOUNTER);
	/* A counter that went backwards is a huge forward delta: refused. */
	EXPECT_EQ(delta(mkhop(kCode10G, 0, 500, 0), mkhop(kCode10G, 2000, 499, 0), &d), LUMEN_INT_DELTA_ECOUNTER);
}

/* The documented limit in bytes for `ticks` at a rate, unit 2^k. */
std::uint64_t doc_limit(std::uint64_t rate, unsigned k, std::uint64_t ticks)
{
	std::uint64_t l = rate * (16 * ticks + 16) / 8000;
	return l + l / 16 + (std::uint64_t{2} << k);
}

TEST(IntHopDelta, CounterLimitForEveryRateCode)
{
	/*
	 * For every valid rate code and many dt (the ends, every 61st tick):
	 * the largest dtx within the documented limit is accepted and reports
	 * exactly its bytes; one unit more is refused. At any usable dt the
	 * limit stays below half the counter wrap (8192 units), so a counter
	 * that went backwards is always refused.
	 */
	std::vector<std::uint32_t> ticks = {1, 2, 3, 15, 16, 17, 798, 799, 2000, 65535, 100100, kDtEnd - 2, kDtEnd - 1};
	for (std::uint32_t t = 5; t < kDtEnd; t += 61)
		ticks.push_back(t);
	Rng rng(6);
	std::uint64_t checked = 0, exact = 0;
	for (unsigned c = 1; c < 1024; c++) {
		if (!doc_code_valid(c))
			continue;
		const std::uint64_t rate = doc_rate(c);
		const unsigned k = doc_shift(rate);
		for (std::uint32_t t : ticks) {
			const std::uint64_t lim = doc_limit(rate, k, t);
			const std::uint64_t units = lim >> k;
			ASSERT_LT(units, 8192u) << "code " << c << " ticks " << t;
			exact += (units << k) == lim;
			const __u32 ts0 = static_cast<__u32>(rng.range(0, 0x3FFFF));
			const __u16 tx0 = static_cast<__u16>(rng.range(0, 0x3FFF));
			const lumen_int_hop a = mkhop(static_cast<__u16>(c), ts0, tx0, 0);
			const lumen_int_hop at = mkhop(static_cast<__u16>(c), (ts0 + t) & 0x3FFFF,
						       static_cast<__u16>((tx0 + units) & 0x3FFF), 0);
			const lumen_int_hop over = mkhop(static_cast<__u16>(c), (ts0 + t) & 0x3FFFF,
							 static_cast<__u16>((tx0 + units + 1) & 0x3FFF), 0);
			lumen_int_delta d;
			ASSERT_EQ(delta(a, at, &d), LUMEN_INT_DELTA_OK) << "code " << c << " ticks " << t;
			ASSERT_EQ(d.tx_bytes, units << k);
			ASSERT_EQ(d.dt_ns, 16ull * t);
			ASSERT_EQ(delta(a, over, &d), LUMEN_INT_DELTA_ECOUNTER) << "code " << c << " ticks " << t;
			const lumen_int_hop back = mkhop(static_cast<__u16>(c), (ts0 + t) & 0x3FFFF,
							 static_cast<__u16>((tx0 + 8192) & 0x3FFF), 0);
			ASSERT_EQ(delta(a, back, &d), LUMEN_INT_DELTA_ECOUNTER) << "code " << c << " ticks " << t;
			checked++;
		}
	}
	EXPECT_EQ(checked, 652u * ticks.size());
	EXPECT_GT(exact, 1000u); /* the limit itself is a whole number of units often enough */
}

TEST(IntHopDelta, NoWriteOnError)
{
	/* Each error kind; *d keeps its previous contents, byte for byte. */
	struct Case {
		const char *what;
		lumen_int_hop prev, cur;
		int rc;
	};
	const Case cases[] = {
		{"rate changed", mkhop(kCode10G, 0, 0, 5), mkhop(kCode25G, 100, 1, 5), LUMEN_INT_DELTA_ERATE},
		{"same rate, other code", mkhop(code(100, 2), 0, 0, 5), mkhop(code(10, 3), 100, 1, 5),
		 LUMEN_INT_DELTA_ERATE},
		{"rate unknown", mkhop(0, 0, 0, 5), mkhop(0, 100, 1, 5), LUMEN_INT_DELTA_ERATE},
		{"rate non-canonical", mkhop(code(0, 3), 0, 0, 5), mkhop(code(0, 3), 100, 1, 5), LUMEN_INT_DELTA_ERATE},
		{"rate above 1.6T", mkhop(code(17, 5), 0, 0, 5), mkhop(code(17, 5), 100, 1, 5), LUMEN_INT_DELTA_ERATE},
		{"dt zero", mkhop(kCode10G, 100, 0, 5), mkhop(kCode10G, 100, 0, 5), LUMEN_INT_DELTA_ETIME},
		{"dt at the end", mkhop(kCode10G, 100, 0, 5), mkhop(kCode10G, 100 + kDtEnd, 1, 5),
		 LUMEN_INT_DELTA_ETIME},
		{"dt backwards", mkhop(kCode10G, 100, 0, 5), mkhop(kCode10G, 99, 0, 5), LUMEN_INT_DELTA_ETIME},
		{"one unit over the limit", mkhop(kCode10G, 0, 0, 5), mkhop(kCode10G, 2000, 86, 5),
		 LUMEN_INT_DELTA_ECOUNTER},
		{"counter backwards", mkhop(kCode10G, 0, 500, 5), mkhop(kCode10G, 2000, 499, 5),
		 LUMEN_INT_DELTA_ECOUNTER},
		{"1.6T, one unit over", mkhop(kCodeMax, 0, 0, 5), mkhop(kCodeMax, kDtEnd - 1, 6378, 5),
		 LUMEN_INT_DELTA_ECOUNTER},
	};
	for (const Case &c : cases) {
		SCOPED_TRACE(c.what);
		for (int pattern : {0x00, 0xA5, 0xFF}) {
			lumen_int_delta d, before;
			std::memset(&d, pattern, sizeof(d));
			std::memcpy(&before, &d, sizeof(d));
			EXPECT_EQ(delta(c.prev, c.cur, &d), c.rc);
			EXPECT_EQ(std::memcmp(&d, &before, sizeof(d)), 0) << "output modified, pattern " << pattern;
		}
	}
	/* Control: success overwrites every field. */
	lumen_int_delta d;
	std::memset(&d, 0xA5, sizeof(d));
	ASSERT_EQ(delta(mkhop(kCode10G, 0, 0, 16383), mkhop(kCode10G, 2000, 85, 7), &d), LUMEN_INT_DELTA_OK);
	expect_delta(d, {32000, 85u * 512, 16383u * 512, 7u * 512, 10000, 1});
}

TEST(IntHopDelta, QueueAndSaturation)
{
	lumen_int_delta d;
	ASSERT_EQ(delta(mkhop(kCode10G, 0, 0, 16383), mkhop(kCode10G, 10, 0, 3), &d), LUMEN_INT_DELTA_OK);
	EXPECT_EQ(d.qlen_prev_bytes, 16383ull * 512);
	EXPECT_EQ(d.qlen_bytes, 3ull * 512);
	EXPECT_EQ(d.saturated, 1u);
	ASSERT_EQ(delta(mkhop(kCode10G, 0, 0, 0), mkhop(kCode10G, 10, 0, 16383), &d), LUMEN_INT_DELTA_OK);
	EXPECT_EQ(d.saturated, 1u);
	ASSERT_EQ(delta(mkhop(kCode10G, 0, 0, 16382), mkhop(kCode10G, 10, 0, 16382), &d), LUMEN_INT_DELTA_OK);
	EXPECT_EQ(d.saturated, 0u);
	EXPECT_EQ(d.qlen_bytes, 16382ull * 512);
}

/*
 * Property: a switch at a (coded) rate with arbitrary clock and counter origins
 * sends B <= rate * dt bytes in dt, dt anywhere in the usable window; the delta
 * of its two records recovers dt within one 16 ns tick and B within one byte
 * unit.
 */
TEST(IntHopDelta, PropertyRecoversTrafficWithinQuantization)
{
	Rng rng(4);
	static const std::uint32_t usual[] = {10, 100, 1000, 2500, 10000, 25000, 40000, 100000, 400000, 1600000};
	/* The largest dt whose tick difference stays below the end, from any origin. */
	const std::uint64_t dt_max = (kDtEnd - 1) * 16ull;
	int ok = 0;
	for (int i = 0; i < 300000; i++) {
		std::uint32_t want = (i % 3 == 0) ? usual[rng.range(0, 9)]
						  : static_cast<std::uint32_t>(rng.range(1, LUMEN_INT_RATE_MAX_MBPS));
		__u16 rc = lumen_int_rate_encode(want);
		std::uint64_t rate = lumen_int_rate_mbps(rc);
		unsigned k = lumen_int_unit_shift(static_cast<__u32>(rate));
		std::uint64_t t0 = rng.next() >> rng.range(0, 63);
		std::uint64_t b0 = rng.next() >> rng.range(0, 63);
		/* dt in [16, dt_max], log-uniform-ish to cover small dt; the end often. */
		std::uint64_t dt = (i % 11 == 0) ? dt_max : 16 + (rng.next() >> rng.range(0, 63)) % (dt_max - 15);
		std::uint64_t bmax = rate * dt / 8000;
		std::uint64_t bytes = (i % 7 == 0) ? bmax : rng.range(0, bmax);
		std::uint64_t q0 = rng.range(0, 1ull << (15 + k)), q1 = rng.range(0, 1ull << (15 + k));
		if (t0 + dt < t0 || b0 + bytes < b0)
			continue; /* 2^64 overflow would not be a real counter */
		lumen_int_hop a, b;
		lumen_int_hop_make(&a, t0, b0, q0, rc);
		lumen_int_hop_make(&b, t0 + dt, b0 + bytes, q1, rc);
		lumen_int_delta d;
		int rcd = lumen_int_hop_delta(&a, &b, &d);
		ASSERT_EQ(rcd, LUMEN_INT_DELTA_OK) << "rate " << rate << " dt " << dt << " bytes " << bytes;
		ASSERT_LT(d.dt_ns > dt ? d.dt_ns - dt : dt - d.dt_ns, 16u) << dt;
		ASSERT_LT(d.tx_bytes > bytes ? d.tx_bytes - bytes : bytes - d.tx_bytes, 1ull << k)
			<< "rate " << rate << " bytes " << bytes;
		ASSERT_EQ(d.rate_mbps, rate);
		ASSERT_EQ(d.qlen_prev_bytes, std::min<std::uint64_t>(q0 >> k, 16383) << k);
		ASSERT_EQ(d.qlen_bytes, std::min<std::uint64_t>(q1 >> k, 16383) << k);
		ASSERT_EQ(d.saturated, ((q0 >> k) >= 16383 || (q1 >> k) >= 16383) ? 1u : 0u);
		ok++;
	}
	EXPECT_GT(ok, 299000);
}

/*
 * Property: the 1/16 slack covers rate rounding. A port whose true rate R is
 * any value the code rounds (encode(R) may be up to 3.71% below R) and that
 * sends at most R * dt bytes is always accepted.
 */
TEST(IntHopDelta, PropertyAcceptsTrueRateAboveEncodedRate)
{
	Rng rng(7);
	const std::uint64_t dt_max = (kDtEnd - 1) * 16ull;
	int ok = 0, above = 0;
	for (int i = 0; i < 300000; i++) {
		/* Mostly the worst spots: just below a round-half-up boundary. */
		std::uint32_t r;
		if (i % 2 == 0) {
			std::uint64_t scale = 1;
			for (std::uint64_t e = rng.range(1, 4); e > 0; e--)
				scale *= 10;
			const std::uint64_t mant = rng.range(13, 127);
			r = static_cast<std::uint32_t>(mant * scale + scale / 2 - 1);
			if (r > LUMEN_INT_RATE_MAX_MBPS)
				r = LUMEN_INT_RATE_MAX_MBPS;
		} else {
			r = static_cast<std::uint32_t>(rng.range(1, LUMEN_INT_RATE_MAX_MBPS));
		}
		const __u16 rc = lumen_int_rate_encode(r);
		const std::uint64_t coded = lumen_int_rate_mbps(rc);
		above += r > coded;
		const std::uint64_t t0 = rng.next() >> 8, b0 = rng.next() >> 8;
		const std::uint64_t dt = (i % 5 == 0) ? dt_max : rng.range(16, dt_max);
		const std::uint64_t bmax = std::uint64_t{r} * dt / 8000;
		const std::uint64_t bytes = (i % 3 == 0) ? bmax : rng.range(0, bmax);
		lumen_int_hop a, b;
		lumen_int_hop_make(&a, t0, b0, 0, rc);
		lumen_int_hop_make(&b, t0 + dt, b0 + bytes, 0, rc);
		lumen_int_delta d;
		ASSERT_EQ(lumen_int_hop_delta(&a, &b, &d), LUMEN_INT_DELTA_OK)
			<< "true rate " << r << " coded " << coded << " dt " << dt << " bytes " << bytes;
		ok++;
	}
	EXPECT_EQ(ok, 300000);
	EXPECT_GT(above, 100000);
	/* The worst case spelled out: 134 Mbit/s sent as 130 (8 B units), 1.97 ms. */
	lumen_int_hop a, b;
	lumen_int_hop_make(&a, 0, 0, 0, lumen_int_rate_encode(134));
	EXPECT_EQ(a.rate, code(13, 1));
	lumen_int_hop_make(&b, dt_max, 134 * dt_max / 8000, 0, lumen_int_rate_encode(134));
	lumen_int_delta d;
	EXPECT_EQ(lumen_int_hop_delta(&a, &b, &d), LUMEN_INT_DELTA_OK);
}

/*
 * Property: more bytes than rate * dt plus the documented slack (1/16 of the
 * rate, 3 units and 2 ticks of quantization), but less than half a counter
 * wrap, is always refused.
 */
TEST(IntHopDelta, PropertyRefusesImplausibleCounters)
{
	Rng rng(5);
	int checked = 0;
	for (int i = 0; i < 200000; i++) {
		__u16 rc = lumen_int_rate_encode(static_cast<std::uint32_t>(rng.range(1, LUMEN_INT_RATE_MAX_MBPS)));
		std::uint64_t rate = lumen_int_rate_mbps(rc);
		unsigned k = lumen_int_unit_shift(static_cast<__u32>(rate));
		std::uint64_t t0 = rng.next() >> 4, b0 = rng.next() >> 4;
		std::uint64_t dt = rng.range(16, (kDtEnd - 1) * 16ull);
		std::uint64_t lo = rate * (dt + 32) * 17 / (8000 * 16) + (3ull << k) + 1;
		std::uint64_t hi = (1ull << (13 + k)) - 1;
		if (lo > hi)
			continue;
		std::uint64_t bytes = (i % 5 == 0) ? lo : rng.range(lo, hi);
		lumen_int_hop a, b;
		lumen_int_hop_make(&a, t0, b0, 0, rc);
		lumen_int_hop_make(&b, t0 + dt, b0 + bytes, 0, rc);
		lumen_int_delta d, before;
		std::memset(&d, 0x5A, sizeof(d));
		before = d;
		ASSERT_EQ(lumen_int_hop_delta(&a, &b, &d), LUMEN_INT_DELTA_ECOUNTER)
			<< "rate " << rate << " dt " << dt << " bytes " << bytes;
		ASSERT_EQ(std::memcmp(&d, &before, sizeof(d)), 0);
		checked++;
	}
	EXPECT_GT(checked, 100000);
}

/*
 * That lumen_int_hop_delta matches the documented rule on arbitrary records
 * is IntOptionV2Delta.PropertyMatchesDocumentedRule (int_option_v2_test.cpp),
 * for both versions.
 */

/* ---------------------------------------------------------------------- */
/* Error strings                                                           */

TEST(IntStrerror, DistinctPerCode)
{
	std::set<std::string> seen;
	const std::string unknown = lumen_int_strerror(LUMEN_INT_ERROR_COUNT);
	for (int e = 0; e < LUMEN_INT_ERROR_COUNT; e++) {
		const char *s = lumen_int_strerror(e);
		ASSERT_NE(s, nullptr);
		EXPECT_GT(std::strlen(s), 1u);
		EXPECT_NE(unknown, s) << e;
		EXPECT_TRUE(seen.insert(s).second) << "duplicate message for " << e << ": " << s;
		/* Functions return negative codes; both spellings work. */
		EXPECT_STREQ(lumen_int_strerror(-e), s);
	}
	EXPECT_EQ(seen.size(), 12u);
	EXPECT_EQ(LUMEN_INT_ERROR_COUNT, 12);
	EXPECT_STREQ(lumen_int_strerror(-100), unknown.c_str());
	EXPECT_STREQ(lumen_int_strerror(INT32_MAX), unknown.c_str());
	EXPECT_STREQ(lumen_int_strerror(INT32_MIN), unknown.c_str()); /* no overflow negating it */
}

} // namespace
