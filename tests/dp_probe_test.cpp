// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// dp_probe_test: the path probe and the ICMP Time Exceeded parser of
// include/lumen/dp_probe.h. A probe parses back as a lumen-dp PROBE with
// its TTL and number where the header says; a Time Exceeded built here as a
// Linux router builds it (quotes of 8 bytes up to the whole probe, odd and
// even lengths, outer IP options) parses into every field; every refusal is
// reached by one mutated field and leaves the output untouched; random and
// mutated frames (each in a block of exactly its size, for ASan) agree with
// an independent oracle written from the header comment.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <set>
#include <vector>

#include "lumen/dp_probe.h"
#include "test_rng.h"

namespace
{

using Bytes = std::vector<uint8_t>;
using lumen::test::Rng;

const uint8_t kHostMac[6] = {2, 0, 0, 0, 0, 1}, kGwMac[6] = {2, 0, 0, 0, 0, 0xfe},
	      kRouterMac[6] = {2, 0xff, 0, 0, 0, 1};
constexpr uint32_t kHost = 0x0A000001, kDst = 0x0A010203, kRouter = 0x0AFF0003;
constexpr uint16_t kSport = 49152 + 77, kDport = LUMEN_DP_UDP_PORT;
constexpr uint32_t kProbeLen = LUMEN_DP_HDR_OFF + LUMEN_DP_PROBE_HLEN; // 62

unsigned be16(const uint8_t *p)
{
	return (unsigned)p[0] << 8 | p[1];
}
uint32_t be32(const uint8_t *p)
{
	return (uint32_t)be16(p) << 16 | be16(p + 2);
}
void put16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}
void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v & 0xFFFF);
}

// The Internet checksum of len bytes, computed here: byte by byte into 64
// bits, an odd last byte as the high half of a word.
uint16_t inet_csum(const uint8_t *p, size_t len)
{
	uint64_t sum = 0;
	for (size_t i = 0; i < len; i++)
		sum += (i & 1) ? p[i] : (uint64_t)p[i] << 8;
	while (sum >> 16)
		sum = (sum & 0xFFFF) + (sum >> 16);
	return (uint16_t)~sum;
}

lumen_dp_pkt tmpl(uint16_t sport = kSport)
{
	lumen_dp_pkt p{};
	std::memcpy(p.eth_dst, kGwMac, 6);
	std::memcpy(p.eth_src, kHostMac, 6);
	p.ip_src = kHost;
	p.ip_dst = kDst;
	p.sport = sport;
	p.dport = kDport;
	return p;
}

Bytes probe(uint8_t ttl = 2, uint16_t id = 0x1234, uint64_t ts = 777, uint16_t sport = kSport)
{
	Bytes f(2048);
	lumen_dp_pkt t = tmpl(sport);
	int n = lumen_dp_build_probe(f.data(), (uint32_t)f.size(), &t, ttl, id, ts);
	EXPECT_EQ(n, (int)kProbeLen);
	f.resize(n > 0 ? (size_t)n : 0);
	return f;
}

// An ICMP Time Exceeded as a Linux router sends it for `pkt` (a frame as the
// host sent it), `hops_before` routers before it (each decrementing the TTL
// and updating the checksum, RFC 1624): outer IPv4 from the router to the
// packet's source (TOS 0xc0, TTL 64, protocol 1, outer_ihl words, options
// of NOPs), ICMP type/code, 4 unused bytes, checksum over the whole message,
// then the packet's IP header as the router got it and quote_after bytes of
// what follows (at most what there is; Linux quotes at most 576 - 28 bytes).
Bytes time_exceeded(const Bytes &pkt, uint32_t router, uint32_t quote_after, unsigned outer_ihl = 5,
		    uint8_t type = LUMEN_DP_ICMP_TIME_EXCEEDED, uint8_t code = 0, unsigned hops_before = 1)
{
	Bytes in(pkt.begin() + LUMEN_DP_IP_OFF, pkt.end()); // the IP packet at the router
	for (unsigned h = 0; h < hops_before; h++) {
		unsigned old = be16(&in[8]);
		in[8]--;
		put16(&in[10], lumen_dp_csum_replace16((uint16_t)be16(&in[10]), (uint16_t)old, (uint16_t)be16(&in[8])));
	}
	size_t quote = std::min<size_t>({LUMEN_DP_IP_HLEN + (size_t)quote_after, be16(&in[2]), 576 - 28});
	size_t ihl = 4 * outer_ihl, ip_len = ihl + LUMEN_DP_ICMP_HLEN + quote;
	Bytes f(LUMEN_DP_ETH_HLEN + ip_len, 0);
	std::memcpy(&f[0], &pkt[6], 6); // to the host's MAC
	std::memcpy(&f[6], kRouterMac, 6);
	put16(&f[12], LUMEN_DP_ETHERTYPE_IPV4);
	uint8_t *ip = &f[LUMEN_DP_IP_OFF];
	ip[0] = (uint8_t)(0x40 | outer_ihl);
	ip[1] = 0xc0; // Linux: IPTOS_PREC_INTERNETCONTROL
	put16(ip + 2, (unsigned)ip_len);
	put16(ip + 4, 0x5ac3);
	ip[8] = 64;
	ip[9] = LUMEN_DP_IP_PROTO_ICMP;
	put32(ip + 12, router);
	put32(ip + 16, be32(&in[12]));
	for (size_t i = LUMEN_DP_IP_HLEN; i < ihl; i++)
		ip[i] = 1; // NOP options
	put16(ip + 10, inet_csum(ip, ihl));
	uint8_t *icmp = ip + ihl;
	icmp[0] = type;
	icmp[1] = code;
	std::memcpy(icmp + LUMEN_DP_ICMP_HLEN, in.data(), quote);
	put16(icmp + 2, inet_csum(icmp, LUMEN_DP_ICMP_HLEN + quote));
	return f;
}

size_t outer_ihl(const Bytes &f)
{
	return 4u * (f[LUMEN_DP_IP_OFF] & 0x0F);
}
void fix_ip(Bytes &f)
{
	if (f.size() < LUMEN_DP_IP_OFF + outer_ihl(f))
		return;
	uint8_t *ip = &f[LUMEN_DP_IP_OFF];
	put16(ip + 10, 0);
	put16(ip + 10, inet_csum(ip, outer_ihl(f)));
}
void fix_icmp(Bytes &f)
{
	uint8_t *ip = &f[LUMEN_DP_IP_OFF], *icmp = ip + outer_ihl(f);
	size_t icmp_len = be16(ip + 2) - outer_ihl(f);
	put16(icmp + 2, 0);
	put16(icmp + 2, inet_csum(icmp, icmp_len));
}
uint8_t *icmp_of(Bytes &f)
{
	return &f[LUMEN_DP_IP_OFF + outer_ihl(f)];
}

// Parse a copy of exactly f's size (an over-read is ASan's), into an output
// filled with a sentinel; *untouched says whether the sentinel survived.
int parse(const Bytes &f, lumen_dp_time_exceeded *out, bool *untouched = nullptr)
{
	std::unique_ptr<uint8_t[]> copy(new uint8_t[f.size()]);
	if (!f.empty())
		std::memcpy(copy.get(), f.data(), f.size());
	uint8_t sentinel[sizeof *out];
	std::memset(sentinel, 0xA5, sizeof sentinel);
	std::memset((void *)out, 0xA5, sizeof *out);
	int rc = lumen_dp_parse_time_exceeded(copy.get(), (uint32_t)f.size(), out);
	if (untouched)
		*untouched = std::memcmp(out, sentinel, sizeof sentinel) == 0;
	return rc;
}

// ---------------------------------------------------------------- probes

TEST(DpProbe, ProbeParsesAsAProbeWithTtlAndIdInPlace)
{
	Rng rng(11);
	for (uint8_t ttl : {1, 2, 3, 64, 255}) {
		for (uint32_t id : {0u, 1u, 0x1234u, 0x8000u, 0xFFFFu, (uint32_t)rng.below(65536)}) {
			SCOPED_TRACE(testing::Message() << "ttl " << (int)ttl << " id " << id);
			uint64_t ts = rng.next();
			Bytes f(256, 0xEE);
			lumen_dp_pkt t = tmpl();
			ASSERT_EQ(lumen_dp_build_probe(f.data(), (uint32_t)f.size(), &t, ttl, (uint16_t)id, ts),
				  (int)kProbeLen);
			for (size_t i = kProbeLen; i < f.size(); i++)
				ASSERT_EQ(f[i], 0xEE) << "written beyond the frame at " << i;
			lumen_dp_pkt p;
			ASSERT_EQ(lumen_dp_parse(f.data(), kProbeLen, kDport, &p), 0);
			EXPECT_EQ(p.type, LUMEN_DP_PROBE);
			EXPECT_EQ(p.psn, id);
			EXPECT_EQ(p.ts_ns, ts);
			EXPECT_EQ(p.conn_id, 0u);
			EXPECT_EQ(p.flags, 0);
			EXPECT_EQ(p.ext_words, 0);
			EXPECT_EQ(p.ext_len, 0u);
			EXPECT_EQ(p.ext, nullptr);
			EXPECT_EQ(p.payload_len, 0u);
			EXPECT_EQ(p.payload, nullptr);
			EXPECT_EQ(p.msg_id | p.msg_off | p.msg_len | p.echo_psn, 0u);
			EXPECT_EQ(p.echo_ts | p.sack, 0u);
			// the 5-tuple and the MACs of the template
			EXPECT_EQ(p.ip_src, kHost);
			EXPECT_EQ(p.ip_dst, kDst);
			EXPECT_EQ(p.sport, kSport);
			EXPECT_EQ(p.dport, kDport);
			EXPECT_EQ(f[LUMEN_DP_IP_OFF + 9], LUMEN_DP_IP_PROTO_UDP);
			EXPECT_EQ(std::memcmp(p.eth_dst, kGwMac, 6), 0);
			EXPECT_EQ(std::memcmp(p.eth_src, kHostMac, 6), 0);
			// IPv4: checksum valid, id at 18, TTL at 22, DF, lengths
			EXPECT_EQ(lumen_dp_ip_sum(&f[LUMEN_DP_IP_OFF]), 0xFFFF);
			EXPECT_EQ(inet_csum(&f[LUMEN_DP_IP_OFF], LUMEN_DP_IP_HLEN), 0);
			EXPECT_EQ(be16(&f[18]), id);
			EXPECT_EQ(f[22], ttl);
			EXPECT_EQ(be16(&f[20]), (unsigned)LUMEN_DP_IP_DF);
			EXPECT_EQ(be16(&f[16]), kProbeLen - LUMEN_DP_ETH_HLEN);
			EXPECT_EQ(be16(&f[38]), kProbeLen - LUMEN_DP_UDP_OFF);
			EXPECT_EQ(f[LUMEN_DP_HDR_OFF + 1], LUMEN_DP_PROBE);
		}
	}
}

TEST(DpProbe, TemplateLeftoversDoNotLeakIntoTheProbe)
{
	static const uint8_t payload[16] = {1, 2, 3};
	lumen_dp_pkt t = tmpl();
	t.type = LUMEN_DP_DATA;
	t.flags = LUMEN_DP_F_RETX | LUMEN_DP_F_MSG_LAST;
	t.conn_id = 99;
	t.psn = 12345;
	t.payload = payload;
	t.payload_len = sizeof payload;
	t.msg_len = 100;
	Bytes f(256);
	ASSERT_EQ(lumen_dp_build_probe(f.data(), 256, &t, 2, 7, 5), (int)kProbeLen);
	lumen_dp_pkt p;
	ASSERT_EQ(lumen_dp_parse(f.data(), kProbeLen, kDport, &p), 0);
	EXPECT_EQ(p.type, LUMEN_DP_PROBE);
	EXPECT_EQ(p.conn_id, 0u);
	EXPECT_EQ(p.psn, 7u);
	EXPECT_EQ(p.flags, 0);
	EXPECT_EQ(p.payload_len, 0u);
}

TEST(DpProbe, RefusalsWriteNothing)
{
	lumen_dp_pkt t = tmpl();
	Bytes f(256, 0x5A);
	EXPECT_EQ(lumen_dp_build_probe(f.data(), 256, &t, 0, 1, 1), -LUMEN_DP_EINVAL);
	for (uint32_t room : {0u, 1u, 34u, 42u, kProbeLen - 1})
		EXPECT_EQ(lumen_dp_build_probe(f.data(), room, &t, 2, 1, 1), -LUMEN_DP_ENOSPACE) << room;
	t.ecn = 4;
	EXPECT_EQ(lumen_dp_build_probe(f.data(), 256, &t, 2, 1, 1), -LUMEN_DP_EINVAL);
	EXPECT_EQ(f, Bytes(256, 0x5A));
	t.ecn = 0;
	EXPECT_EQ(lumen_dp_build_probe(f.data(), kProbeLen, &t, 2, 1, 1), (int)kProbeLen);
}

TEST(DpProbe, ParserRefusesAProbeWithPayloadFlagsOrATruncatedHeader)
{
	lumen_dp_pkt p;
	for (uint32_t extra : {1u, 2u, 7u, 100u}) { // payload: lengths grown consistently
		Bytes f = probe();
		f.resize(kProbeLen + extra, 0x33);
		put16(&f[16], be16(&f[16]) + extra);
		put16(&f[38], be16(&f[38]) + extra);
		put16(&f[24], 0);
		put16(&f[24], inet_csum(&f[14], 20));
		EXPECT_EQ(lumen_dp_parse(f.data(), (uint32_t)f.size(), kDport, &p), -LUMEN_DP_EPAYLOAD) << extra;
	}
	for (int bit = 0; bit < 8; bit++) {
		Bytes f = probe();
		f[LUMEN_DP_HDR_OFF + 2] = (uint8_t)(1u << bit);
		EXPECT_EQ(lumen_dp_parse(f.data(), kProbeLen, kDport, &p), -LUMEN_DP_EFLAGS) << bit;
	}
	Bytes f = probe();
	f[LUMEN_DP_HDR_OFF + 3] = 1; // an extension word without the INT flag (and no room)
	EXPECT_EQ(lumen_dp_parse(f.data(), kProbeLen, kDport, &p), -LUMEN_DP_EEXT_LEN);
	for (uint32_t cut = 1; cut <= 8; cut++) { // a header of 12..19 bytes
		Bytes g = probe();
		put16(&g[16], be16(&g[16]) - cut);
		put16(&g[38], be16(&g[38]) - cut);
		put16(&g[24], 0);
		put16(&g[24], inet_csum(&g[14], 20));
		EXPECT_EQ(lumen_dp_parse(g.data(), (uint32_t)g.size(), kDport, &p), -LUMEN_DP_ESHORT_HDR) << cut;
	}
	// the builder refuses the same
	lumen_dp_pkt t = tmpl();
	uint8_t buf[256];
	static const uint8_t pl[4] = {};
	t.type = LUMEN_DP_PROBE;
	t.payload = pl;
	t.payload_len = 4;
	EXPECT_EQ(lumen_dp_build(buf, sizeof buf, &t), -LUMEN_DP_EPAYLOAD);
	t.payload = nullptr;
	t.payload_len = 0;
	t.flags = LUMEN_DP_F_ACK_NOW;
	EXPECT_EQ(lumen_dp_build(buf, sizeof buf, &t), -LUMEN_DP_EFLAGS);
}

// ------------------------------------------------------- Time Exceeded

void expect_fields(const lumen_dp_time_exceeded &te, uint16_t id, uint8_t quoted_ttl = 1)
{
	EXPECT_EQ(te.router, kRouter);
	EXPECT_EQ(te.src, kHost);
	EXPECT_EQ(te.dst, kDst);
	EXPECT_EQ(te.sport, kSport);
	EXPECT_EQ(te.dport, kDport);
	EXPECT_EQ(te.id, id);
	EXPECT_EQ(te.quoted_ttl, quoted_ttl);
}

TEST(DpProbe, TimeExceededAsLinuxSendsItParses)
{
	// 8 (RFC 792's minimum) to the whole probe (28 after its IP header), odd and even
	for (uint32_t q : {8u, 9u, 10u, 15u, 20u, 27u, 28u, 1000u}) {
		for (unsigned ihl : {5u, 6u, 15u}) { // outer options must not matter
			SCOPED_TRACE(testing::Message() << "quote " << q << " outer ihl " << ihl);
			Bytes pr = probe(2, 0xBEEF);
			Bytes f = time_exceeded(pr, kRouter, q, ihl);
			EXPECT_EQ(f.size(), LUMEN_DP_ETH_HLEN + 4 * ihl + 8 + 20 + std::min(q, 28u));
			lumen_dp_time_exceeded te;
			ASSERT_EQ(parse(f, &te), 0);
			expect_fields(te, 0xBEEF);
			f.resize(f.size() + 4, 0xCC); // bytes after the IP packet: padding, ignored
			ASSERT_EQ(parse(f, &te), 0);
			expect_fields(te, 0xBEEF);
		}
	}
	// TTL 1 expiring at the first router: it quotes TTL 1 unchanged; a DATA
	// packet of 1400 bytes is quoted up to Linux's 548
	Bytes big(14 + 1400, 0x77);
	const Bytes head = probe();
	std::copy(head.begin(), head.begin() + 42, big.begin());
	put16(&big[16], 1400);
	put16(&big[24], 0);
	put16(&big[24], inet_csum(&big[14], 20));
	lumen_dp_time_exceeded te;
	Bytes f = time_exceeded(big, kRouter, 2000, 5, 11, 0, 0);
	EXPECT_EQ(f.size(), 14u + 20 + 8 + 548);
	ASSERT_EQ(parse(f, &te), 0);
	expect_fields(te, 0x1234, 2);
	Bytes g = time_exceeded(probe(1, 3), kRouter, 8, 5, 11, 0, 0);
	ASSERT_EQ(parse(g, &te), 0);
	expect_fields(te, 3, 1);
}

// One refusal: the code, and *out untouched.
void expect_refused(const Bytes &f, int code, const char *what)
{
	lumen_dp_time_exceeded te;
	bool untouched = false;
	EXPECT_EQ(parse(f, &te, &untouched), -code) << what << ": " << lumen_dp_icmp_strerror(parse(f, &te));
	EXPECT_TRUE(untouched) << what;
}

TEST(DpProbe, EveryRefusalFromOneMutatedField)
{
	const Bytes good = time_exceeded(probe(), kRouter, 8);
	const size_t min_len = good.size(); // 70
	ASSERT_EQ(min_len, 70u);
	lumen_dp_time_exceeded te;
	ASSERT_EQ(parse(good, &te), 0);
	std::set<int> reached;
	auto refused = [&](const Bytes &f, int code, const char *what) {
		expect_refused(f, code, what);
		reached.insert(code);
	};
	const Bytes whole = time_exceeded(probe(), kRouter, 28);
	for (size_t l = 0; l < whole.size(); l++) { // truncated: IP length beyond the frame
		Bytes f(whole.begin(), whole.begin() + (long)l);
		refused(f, l < LUMEN_DP_UDP_OFF ? LUMEN_DP_ICMP_ESHORT : LUMEN_DP_ICMP_EIP, "truncated");
	}
	for (size_t l = LUMEN_DP_UDP_OFF; l < min_len; l++) { // consistent, but too short a quote
		Bytes f(good.begin(), good.begin() + (long)l);
		put16(&f[16], (unsigned)(l - 14));
		fix_ip(f);
		refused(f, LUMEN_DP_ICMP_ESHORT, "short IP packet");
	}
	for (unsigned et : {0x86DDu, 0x0806u, 0x8100u, 0x0000u}) {
		Bytes f = good;
		put16(&f[12], et);
		refused(f, LUMEN_DP_ICMP_EIP, "ethertype");
	}
	for (unsigned v : {0u, 5u, 6u, 15u}) {
		Bytes f = good;
		f[14] = (uint8_t)(v << 4 | 5);
		fix_ip(f);
		refused(f, LUMEN_DP_ICMP_EIP, "version");
	}
	for (unsigned ihl = 0; ihl < 5; ihl++) {
		Bytes f = good;
		f[14] = (uint8_t)(0x40 | ihl);
		refused(f, LUMEN_DP_ICMP_EIP, "IHL < 5");
	}
	for (unsigned len : {0u, 19u, 71u - 14u, 0xFFFFu}) { // below IHL, beyond the frame
		Bytes f = good;
		put16(&f[16], len);
		fix_ip(f);
		refused(f, LUMEN_DP_ICMP_EIP, "IP length");
	}
	{
		Bytes f = time_exceeded(probe(), kRouter, 8, 6); // IP length below IHL 24
		put16(&f[16], 22);
		fix_ip(f);
		refused(f, LUMEN_DP_ICMP_EIP, "IP length below IHL 6");
		Bytes g(14 + 1501, 0); // beyond LUMEN_DP_ICMP_MAX, though inside the frame
		std::copy(good.begin(), good.end(), g.begin());
		put16(&g[16], 1501);
		fix_ip(g);
		refused(g, LUMEN_DP_ICMP_EIP, "IP length > 1500");
	}
	for (unsigned i : {14u, 17u, 24u, 25u, 26u, 33u}) {
		Bytes f = good;
		f[i] ^= 0x10;
		refused(f, LUMEN_DP_ICMP_EIP, "IP checksum");
	}
	for (unsigned frag : {0x2000u, 0x0001u, 0x1FFFu, 0x6000u}) {
		Bytes f = good;
		put16(&f[20], frag);
		fix_ip(f);
		refused(f, LUMEN_DP_ICMP_EIP, "fragment");
	}
	for (uint8_t proto : {0, 6, 17, 58}) {
		Bytes f = good;
		f[23] = proto;
		fix_ip(f);
		refused(f, LUMEN_DP_ICMP_EPROTO, "protocol");
	}
	// echo reply, destination/port unreachable, fragment reassembly time exceeded, echo, redirect
	static const int kTypeCode[][2] = {{0, 0}, {3, 3}, {3, 0}, {11, 1}, {8, 0}, {5, 0}, {12, 0}};
	for (const auto &[type, code] : kTypeCode) {
		Bytes f = good;
		icmp_of(f)[0] = (uint8_t)type;
		icmp_of(f)[1] = (uint8_t)code;
		fix_icmp(f);
		refused(f, LUMEN_DP_ICMP_ETYPE, "ICMP type/code");
	}
	for (size_t i = 2; i < 36; i++) { // one flipped bit anywhere past type and code
		Bytes f = good;
		icmp_of(f)[i] ^= (uint8_t)(1u << (i % 8));
		refused(f, LUMEN_DP_ICMP_ECSUM, "ICMP checksum");
	}
	for (uint8_t q0 : {0x46, 0x4F, 0x65, 0x45 ^ 0xF0}) { // quoted IP options, version 6, 0
		Bytes f = good;
		icmp_of(f)[8] = q0;
		fix_icmp(f);
		refused(f, LUMEN_DP_ICMP_EQUOTE, "quote not IPv4 without options");
	}
	for (uint8_t proto : {1, 6, 0}) {
		Bytes f = good;
		icmp_of(f)[8 + 9] = proto;
		fix_icmp(f);
		refused(f, LUMEN_DP_ICMP_EQUOTE, "quote not UDP");
	}
	EXPECT_EQ(reached, (std::set<int>{1, 2, 3, 4, 5, 6}));
	// the outer header checked the same behind IP options
	Bytes f = time_exceeded(probe(), kRouter, 8, 6);
	ASSERT_EQ(parse(f, &te), 0);
	icmp_of(f)[0] = 3;
	fix_icmp(f);
	expect_refused(f, LUMEN_DP_ICMP_ETYPE, "IHL 6: type");
	for (int code = 0; code <= LUMEN_DP_ICMP_E_COUNT; code++)
		EXPECT_EQ(std::string(lumen_dp_icmp_strerror(-code)) == "unknown error", code == LUMEN_DP_ICMP_E_COUNT);
}

// ------------------------------------------------------------- property

// The header comment, checked here in its own way: the error code (0 or
// negative) and, on success, the fields.
int oracle(const uint8_t *f, size_t len, lumen_dp_time_exceeded *o)
{
	if (len < 34)
		return -LUMEN_DP_ICMP_ESHORT;
	const uint8_t *ip = f + 14;
	size_t ihl = 4u * (ip[0] & 15), tot = be16(ip + 2);
	if (be16(f + 12) != 0x0800 || ip[0] >> 4 != 4 || ihl < 20 || tot < ihl || 14 + tot > len || tot > 1500)
		return -LUMEN_DP_ICMP_EIP;
	if (inet_csum(ip, ihl) != 0 || (be16(ip + 6) & 0x3FFF) != 0)
		return -LUMEN_DP_ICMP_EIP;
	if (ip[9] != 1)
		return -LUMEN_DP_ICMP_EPROTO;
	const uint8_t *icmp = ip + ihl, *q = icmp + 8;
	if (tot - ihl < 8 + 20 + 8)
		return -LUMEN_DP_ICMP_ESHORT;
	if (icmp[0] != 11 || icmp[1] != 0)
		return -LUMEN_DP_ICMP_ETYPE;
	if (inet_csum(icmp, tot - ihl) != 0)
		return -LUMEN_DP_ICMP_ECSUM;
	if (q[0] != 0x45 || q[9] != 17)
		return -LUMEN_DP_ICMP_EQUOTE;
	*o = {be32(ip + 12),	      be32(q + 12),	     be32(q + 16), (uint16_t)be16(q + 20),
	      (uint16_t)be16(q + 22), (uint16_t)be16(q + 4), q[8]};
	return 0;
}

void check_against_oracle(const Bytes &f, uint64_t *ok)
{
	lumen_dp_time_exceeded got, want{};
	bool untouched = false;
	int rc = parse(f, &got, &untouched), exp = oracle(f.data(), f.size(), &want);
	ASSERT_EQ(rc, exp) << "length " << f.size();
	if (rc == 0) {
		++*ok;
		EXPECT_EQ(got.router, want.router);
		EXPECT_EQ(got.src, want.src);
		EXPECT_EQ(got.dst, want.dst);
		EXPECT_EQ(got.sport, want.sport);
		EXPECT_EQ(got.dport, want.dport);
		EXPECT_EQ(got.id, want.id);
		EXPECT_EQ(got.quoted_ttl, want.quoted_ttl);
	} else {
		ASSERT_TRUE(untouched);
	}
}

TEST(DpProbe, RandomFramesNeverCrashAndOnlyWellFormedOnesParse)
{
	uint64_t ok = 0;
	for (uint64_t seed = 1; seed <= 200; seed++) {
		Rng rng(seed);
		for (int i = 0; i < 100; i++) {
			Bytes f(rng.range(0, 700));
			for (auto &b : f)
				b = rng.byte();
			// now and then get past the first checks
			if (f.size() >= 34 && rng.chance(50)) {
				put16(&f[12], 0x0800);
				f[14] = (uint8_t)(0x40 | rng.range(4, 7));
				put16(&f[16], (unsigned)rng.range(0, f.size() - 14 + 2));
				put16(&f[20], rng.chance(80) ? 0 : (unsigned)rng.below(65536));
				f[23] = rng.chance(80) ? 1 : rng.byte();
				if (rng.chance(80))
					fix_ip(f);
			}
			ASSERT_NO_FATAL_FAILURE(check_against_oracle(f, &ok));
		}
	}
	RecordProperty("random_ok", (int)ok);
}

TEST(DpProbe, MutatedTimeExceededAgreesWithTheOracle)
{
	uint64_t ok = 0, total = 0;
	for (uint64_t seed = 1; seed <= 300; seed++) {
		Rng rng(seed);
		Bytes pr = probe(2, (uint16_t)rng.next(), rng.next(), (uint16_t)rng.next());
		const Bytes base =
			time_exceeded(pr, (uint32_t)rng.next(), (uint32_t)rng.range(8, 28), (unsigned)rng.range(5, 7));
		for (int i = 0; i < 40; i++) {
			Bytes f = base;
			for (uint64_t m = rng.range(0, 3); m > 0; m--) {
				switch (rng.below(4)) {
				case 0:
					f[rng.below(f.size())] = rng.byte();
					break;
				case 1:
					f.resize(rng.below(f.size() + 1));
					break;
				case 2:
					f.resize(f.size() + rng.range(1, 40), rng.byte());
					break;
				default:
					f[rng.below(f.size())] ^= (uint8_t)(1u << rng.below(8));
				}
				if (f.empty())
					break;
			}
			if (f.size() >= 34 && rng.chance(50))
				fix_ip(f);
			if (f.size() >= 34 && rng.chance(50) && outer_ihl(f) >= 20 &&
			    be16(&f[16]) >= outer_ihl(f) + 4 && 14u + be16(&f[16]) <= f.size())
				fix_icmp(f);
			total++;
			ASSERT_NO_FATAL_FAILURE(check_against_oracle(f, &ok));
		}
	}
	EXPECT_GT(ok, total / 10); // the success path is exercised, not only refusals
}

} // namespace
