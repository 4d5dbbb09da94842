// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/dp_fake_fabric.h - a host's PortMap (dpdk/transport/port_map.h) on a
// fake two-tier fabric with a virtual clock: the leaf picks a spine per
// probe with a seeded hash of (src, dst, sport, dport) that PortMap does not
// know; the spine where the TTL runs out answers with an ICMP Time Exceeded
// built as Linux builds it, some time later. Shared by the port map's and
// the uplink pinner's tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <vector>

#include "transport/port_map.h"

#include "dp_test_frames.h"

namespace lumen::dp::test
{

constexpr uint64_t kUs = 1000, kMs = 1000 * kUs;
const Mac kHostMac{2, 0, 0, 0, 0, 1}, kGw{2, 0, 0, 0, 0, 0xfe};
constexpr uint32_t kHost = 0x0A000001, kOther = 0x0A000009;
constexpr uint32_t kDsts[3] = {0x0A010001, 0x0A020002, 0x0A030003};

inline uint32_t spine_ip(uint32_t s) // 10.255.0.1, .2, ...
{
	return 0x0AFF0001 + s;
}
// The Internet checksum (dp_probe.h's sum, tested in dp_probe_test).
inline uint16_t csum(const uint8_t *p, size_t len)
{
	return (uint16_t)~lumen_dp_sum(p, (uint32_t)len);
}
// A spine's ICMP Time Exceeded for a probe as the host sent it (the leaf
// took one off its TTL, updating the checksum), as Linux sends it: outer
// IPv4 (TOS 0xc0, TTL 64, protocol 1) to the probe's source, type 11 code
// 0, 4 unused bytes, the checksum over the message, and the quote: the IP
// header as the spine got it and quote_after bytes of what follows.
inline Frame time_exceeded(const Frame &probe, uint32_t router, uint32_t quote_after = 28, uint8_t type = 11)
{
	Frame in(probe.begin() + LUMEN_DP_IP_OFF, probe.end());
	uint16_t old = lumen_dp_get16(&in[8]);
	in[8]--;
	lumen_dp_put16(&in[10], lumen_dp_csum_replace16(lumen_dp_get16(&in[10]), old, lumen_dp_get16(&in[8])));
	size_t quote = std::min<size_t>(LUMEN_DP_IP_HLEN + quote_after, in.size());
	Frame f(LUMEN_DP_ETH_HLEN + LUMEN_DP_IP_HLEN + LUMEN_DP_ICMP_HLEN + quote, 0);
	std::memcpy(&f[0], &probe[6], 6);
	std::memcpy(&f[6], &probe[0], 6);
	lumen_dp_put16(&f[12], LUMEN_DP_ETHERTYPE_IPV4);
	uint8_t *ip = &f[LUMEN_DP_IP_OFF];
	ip[0] = 0x45;
	ip[1] = 0xc0;
	lumen_dp_put16(ip + 2, (unsigned)(f.size() - LUMEN_DP_ETH_HLEN));
	lumen_dp_put16(ip + 4, 0x1111);
	ip[8] = 64;
	ip[9] = LUMEN_DP_IP_PROTO_ICMP;
	lumen_dp_put32(ip + 12, router);
	lumen_dp_put32(ip + 16, lumen_dp_get32(&in[12]));
	lumen_dp_put16(ip + 10, csum(ip, LUMEN_DP_IP_HLEN));
	uint8_t *icmp = ip + LUMEN_DP_IP_HLEN;
	icmp[0] = type;
	std::memcpy(icmp + LUMEN_DP_ICMP_HLEN, in.data(), quote);
	lumen_dp_put16(icmp + 2, csum(icmp, LUMEN_DP_ICMP_HLEN + quote));
	return f;
}
inline void fix_icmp(Frame &f)
{
	uint8_t *icmp = &f[LUMEN_DP_UDP_OFF];
	lumen_dp_put16(icmp + 2, 0);
	lumen_dp_put16(icmp + 2, csum(icmp, f.size() - LUMEN_DP_UDP_OFF));
}

inline EngineConfig host(uint32_t entropies = 256)
{
	EngineConfig c;
	c.ip = kHost;
	c.mac = kHostMac;
	c.path.entropies = entropies;
	return c;
}
inline PortMapParams params(uint32_t uplinks = 4)
{
	PortMapParams p;
	p.uplinks = uplinks;
	return p;
}

// The leaf's ECMP hash, with its own seed: PortMap does not know it.
inline uint32_t leaf_pick(uint64_t seed, uint32_t spines, uint32_t src, uint32_t dst, uint16_t sport, uint16_t dport)
{
	uint64_t h = seed;
	for (uint64_t v : {(uint64_t)src, (uint64_t)dst, (uint64_t)sport << 16 | dport}) {
		h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
		h = (h ^ (h >> 31)) * 0xBF58476D1CE4E5B9ull;
	}
	return (uint32_t)((h ^ (h >> 29)) % spines);
}

struct Sent {
	uint64_t t;
	uint32_t dst, spine;
	uint16_t entropy, id;
	bool answered;
};

// The host's PortMap, the fabric and the spines' answers.
struct Sim {
	EngineConfig cfg;
	PortMap map;
	uint64_t fab_seed = 0x5eed;
	uint32_t spines = 4;
	uint64_t now = 0, step_ns = 10 * kUs, delay_ns = 30 * kUs;
	std::function<bool(const Sent &)> answers = [](const Sent &) { return true; };
	std::vector<Sent> sent;
	std::multimap<uint64_t, Frame> flight; // replies on their way, by arrival
	std::vector<uint32_t> routers_seen; // the source of each reply delivered
	std::function<void()> each_step = [] {}; // checks after every step

	explicit Sim(const PortMapParams &p, uint64_t seed = 1, const EngineConfig &c = host())
	    : cfg(c), map(p, c, seed)
	{
	}
	uint32_t spine_of(uint32_t dst, uint16_t e) const
	{
		return leaf_pick(fab_seed, spines, kHost, dst, (uint16_t)(cfg.sport_base + e), cfg.udp_port);
	}
	void step()
	{
		now += step_ns;
		while (!flight.empty() && flight.begin()->first <= now) {
			Frame f = std::move(flight.begin()->second);
			flight.erase(flight.begin());
			routers_seen.push_back(lumen_dp_get32(&f[26]));
			EXPECT_TRUE(map.rx(f.data(), (uint32_t)f.size(), now));
		}
		VecSink sink;
		map.tx(sink, now, 64);
		for (const Frame &f : sink.frames)
			respond(f);
		each_step();
	}
	void respond(const Frame &f)
	{
		lumen_dp_pkt p;
		ASSERT_EQ(lumen_dp_parse(f.data(), (uint32_t)f.size(), cfg.udp_port, &p), 0);
		ASSERT_EQ(p.type, LUMEN_DP_PROBE);
		ASSERT_EQ(f[22], map.params().ttl);
		EXPECT_EQ(p.psn, lumen_dp_get16(&f[18]));
		EXPECT_EQ(p.ts_ns, now);
		EXPECT_EQ(p.ip_src, kHost);
		EXPECT_EQ(std::memcmp(p.eth_src, kHostMac.data(), 6), 0);
		EXPECT_EQ(std::memcmp(p.eth_dst, kGw.data(), 6), 0);
		ASSERT_GE(p.sport, cfg.sport_base);
		ASSERT_LT(p.sport - cfg.sport_base, (int)cfg.path.entropies);
		Sent s{now, p.ip_dst, 0, (uint16_t)(p.sport - cfg.sport_base), (uint16_t)p.psn, false};
		s.spine = spine_of(s.dst, s.entropy);
		s.answered = answers(s);
		if (s.answered)
			flight.emplace(now + delay_ns, time_exceeded(f, spine_ip(s.spine)));
		sent.push_back(s);
	}
	template <class Done> bool run(Done done, uint64_t max_ns)
	{
		for (uint64_t end = now + max_ns; now < end;) {
			step();
			if (done())
				return true;
		}
		return false;
	}
	void idle(uint64_t ns)
	{
		run([] { return false; }, ns);
	}
	bool settled_all()
	{
		return std::all_of(std::begin(kDsts), std::end(kDsts), [&](uint32_t d) { return map.settled(d); });
	}
	// Once every probe is judged: each was answered or counted lost, some lost.
	void expect_all_judged() const
	{
		auto unanswered = std::count_if(sent.begin(), sent.end(), [](const Sent &s) { return !s.answered; });
		EXPECT_GT(map.stats().lost, 0u);
		EXPECT_EQ(map.stats().lost, (uint64_t)unanswered);
		EXPECT_EQ(map.stats().probes, map.stats().replies + map.stats().lost);
	}
	// Every entropy the map holds for dst leads where the fabric sends it.
	void expect_agrees(uint32_t dst) const
	{
		for (uint32_t u = 0; u < map.params().uplinks; u++)
			for (uint16_t e : map.entropies_of(dst, u)) {
				EXPECT_EQ(map.uplink_of(dst, e), (int)u);
				EXPECT_EQ(map.router_of(u), spine_ip(spine_of(dst, e)))
					<< "entropy " << e << " uplink " << u;
			}
	}
	void expect_complete(uint32_t dst) const
	{
		EXPECT_TRUE(map.settled(dst));
		EXPECT_EQ(map.uplinks_found(dst), map.params().uplinks);
		for (uint32_t u = 0; u < map.params().uplinks; u++)
			EXPECT_GE(map.entropies_of(dst, u).size(), map.params().per_uplink) << "uplink " << u;
		expect_agrees(dst);
	}
};

inline bool has(const std::vector<uint16_t> &v, uint16_t e)
{
	return std::find(v.begin(), v.end(), e) != v.end();
}

} // namespace lumen::dp::test
