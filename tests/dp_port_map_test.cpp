// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// dp_port_map_test: PortMap (dpdk/transport/port_map.h) against a fake
// two-tier fabric on a virtual clock. The leaf picks a spine per probe with
// a seeded hash of (src, dst, sport, dport) that PortMap does not know; the
// spine where the TTL runs out answers with an ICMP Time Exceeded built as
// Linux builds it, some time later. Discovery, uplink numbering (first sight
// or given spines), pacing and the window, lost probes and rate-limited
// routers, a dead spine, hostile and unmatched replies, invalidation, the
// age limit, parameter validation and determinism.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <vector>

#include "transport/port_map.h"

#include "dp_fake_fabric.h"
#include "dp_test_frames.h"
#include "test_rng.h"

using namespace lumen::dp;

namespace
{

using lumen::test::Rng;
using test::Frame;
using test::VecSink;
using namespace lumen::dp::test;

TEST(DpPortMap, DiscoversEveryUplinkOfEachDestination)
{
	Sim s(params());
	for (uint32_t d : kDsts)
		s.map.want(d, kGw, s.now);
	EXPECT_FALSE(s.map.settled(kDsts[0]));
	ASSERT_TRUE(s.run([&] { return s.settled_all(); }, 1000 * kMs));
	const size_t n = s.sent.size();
	s.idle(100 * kMs); // probes stop once settled; the last replies land
	EXPECT_EQ(s.sent.size(), n);
	for (uint32_t d : kDsts) {
		SCOPED_TRACE(d);
		s.expect_complete(d);
		EXPECT_EQ(s.map.entropies_of(d, 4).size(), 0u);
		// each probe of d was a distinct entropy, and each answer is in the map
		std::set<uint16_t> tried;
		for (const Sent &x : s.sent) {
			if (x.dst == d) {
				EXPECT_TRUE(tried.insert(x.entropy).second) << "entropy probed twice: " << x.entropy;
			}
		}
		size_t held = 0;
		for (uint32_t u = 0; u < 4; u++)
			held += s.map.entropies_of(d, u).size();
		EXPECT_EQ(held, tried.size());
	}
	// uplinks numbered by first sight, one router each
	std::vector<uint32_t> first;
	for (uint32_t r : s.routers_seen)
		if (std::find(first.begin(), first.end(), r) == first.end())
			first.push_back(r);
	ASSERT_EQ(first.size(), 4u);
	for (uint32_t u = 0; u < 4; u++)
		EXPECT_EQ(s.map.router_of(u), first[u]);
	EXPECT_EQ(s.map.router_of(4), 0u);
	const PortMapStats &st = s.map.stats();
	EXPECT_EQ(st.probes, n);
	EXPECT_EQ(st.replies, n);
	EXPECT_EQ(st.lost + st.unmatched + st.unknown_router + st.malformed, 0u);
	EXPECT_EQ(st.discoveries, 3u);
	EXPECT_LT(n, 3u * 64); // settling stops discovery well before max_probes
	// a destination never wanted
	EXPECT_FALSE(s.map.settled(0x0A090909));
	EXPECT_EQ(s.map.uplinks_found(0x0A090909), 0u);
	EXPECT_EQ(s.map.uplink_of(0x0A090909, 0), -1);
	EXPECT_TRUE(s.map.entropies_of(0x0A090909, 0).empty());
}

TEST(DpPortMap, GivenSpinesFixTheUplinkOrderAndRefuseOthers)
{
	PortMapParams p = params();
	p.spines = {spine_ip(2), spine_ip(0), spine_ip(3), spine_ip(1)};
	Sim s(p);
	for (uint32_t u = 0; u < 4; u++)
		EXPECT_EQ(s.map.router_of(u), p.spines[u]);
	s.map.want(kDsts[0], kGw, 0);
	VecSink sink;
	ASSERT_EQ(s.map.tx(sink, 0, 64), 1u);
	Frame rogue = time_exceeded(sink.frames[0], 0x0AFF0063); // 10.255.0.99: not a spine
	EXPECT_TRUE(s.map.rx(rogue.data(), (uint32_t)rogue.size(), 1000));
	EXPECT_EQ(s.map.stats().unknown_router, 1u);
	EXPECT_EQ(s.map.stats().replies, 0u);
	EXPECT_EQ(s.map.uplinks_found(kDsts[0]), 0u);
	for (uint32_t u = 0; u < 4; u++)
		EXPECT_EQ(s.map.router_of(u), p.spines[u]);
	ASSERT_TRUE(s.run([&] { return s.map.settled(kDsts[0]); }, 1000 * kMs));
	s.expect_complete(kDsts[0]); // router_of(u) is still spines[u]: each entropy's uplink follows it
	EXPECT_EQ(s.map.stats().unknown_router, 1u);
	// without spines, routers beyond `uplinks` are refused too
	Sim t(params(2)); // the fabric has 4 spines, the map wants 2
	t.map.want(kDsts[1], kGw, 0);
	ASSERT_TRUE(t.run([&] { return t.map.settled(kDsts[1]); }, 1000 * kMs));
	t.expect_complete(kDsts[1]);
	EXPECT_GT(t.map.stats().unknown_router, 0u);
	EXPECT_EQ(t.map.router_of(2), 0u);
}

TEST(DpPortMap, ProbesArePacedAndWindowed)
{
	PortMapParams p = params();
	p.gap_ns = 100 * kUs;
	Sim s(p);
	s.step_ns = 7 * kUs; // not a divisor of the gap
	for (uint32_t d : kDsts)
		s.map.want(d, kGw, 0);
	ASSERT_TRUE(s.run([&] { return s.settled_all(); }, 1000 * kMs));
	for (size_t i = 1; i < s.sent.size(); i++)
		EXPECT_GE(s.sent[i].t - s.sent[i - 1].t, p.gap_ns) << i;

	PortMapParams q = params();
	q.gap_ns = 0;
	q.window = 3;
	Sim w(q);
	w.delay_ns = 500 * kUs; // slow answers: the window is the limit
	for (uint32_t d : kDsts)
		w.map.want(d, kGw, 0);
	uint64_t most = 0;
	w.each_step = [&] {
		const PortMapStats &st = w.map.stats();
		EXPECT_LE(st.probes - st.replies - st.lost, q.window) << "at " << w.now;
		most = std::max(most, st.probes - st.replies - st.lost);
	};
	ASSERT_TRUE(w.run([&] { return w.settled_all(); }, 1000 * kMs));
	EXPECT_EQ(most, q.window);
	for (uint32_t d : kDsts)
		w.expect_complete(d);

	// the budget, and buffers too small for a probe
	PortMap m(q, host(), 1);
	for (uint32_t d : kDsts)
		m.want(d, kGw, 0);
	VecSink small(LUMEN_DP_HDR_OFF + LUMEN_DP_PROBE_HLEN - 1), sink;
	EXPECT_EQ(m.tx(small, 0, 64), 0u);
	EXPECT_TRUE(small.frames.empty());
	EXPECT_EQ(m.tx(sink, 0, 0), 0u);
	EXPECT_EQ(m.tx(sink, 0, 2), 2u);
	EXPECT_EQ(m.stats().probes, 2u);
}

TEST(DpPortMap, LostProbesCountAfterTheTimeoutAndAreRetried)
{
	PortMapParams p = params(2);
	p.timeout_ns = 1 * kMs;
	Sim s(p, 1, host(32));
	s.spines = 2;
	uint32_t on[2] = {};
	for (uint16_t e = 0; e < 32; e++)
		on[s.spine_of(kDsts[0], e)]++;
	ASSERT_GE(std::min(on[0], on[1]), 2u) << "the fake hash must reach both spines";
	std::set<uint16_t> tried; // spine 1 drops every entropy's first probe
	s.answers = [&](const Sent &x) { return tried.insert(x.entropy).second ? x.spine != 1 : true; };
	s.map.want(kDsts[0], kGw, 0);
	s.each_step = [&] { // lost once its timeout is up, and not long after
		size_t due = 0, overdue = 0; // past the timeout; past it by more than a gap and a step
		for (const Sent &x : s.sent) {
			due += !x.answered && x.t + p.timeout_ns <= s.now;
			overdue += !x.answered && x.t + p.timeout_ns + p.gap_ns + s.step_ns <= s.now;
		}
		EXPECT_LE(s.map.stats().lost, due) << "at " << s.now;
		EXPECT_GE(s.map.stats().lost, overdue) << "at " << s.now;
	};
	ASSERT_TRUE(s.run([&] { return s.map.settled(kDsts[0]); }, 1000 * kMs));
	s.expect_complete(kDsts[0]);
	int u1 = s.map.router_of(0) == spine_ip(1) ? 0 : 1;
	for (uint16_t e : s.map.entropies_of(kDsts[0], (uint32_t)u1)) { // found by a retry
		auto n = std::count_if(s.sent.begin(), s.sent.end(), [&](const Sent &x) { return x.entropy == e; });
		EXPECT_GE(n, 2) << e;
	}
	s.idle(5 * kMs);
	s.expect_all_judged();
}

TEST(DpPortMap, RateLimitedOrLossyRoutersStillComplete)
{
	for (int mode = 0; mode < 2; mode++) {
		SCOPED_TRACE(mode ? "40 % lost" : "each spine answers every 3rd probe");
		PortMapParams p = params();
		p.timeout_ns = 2 * kMs;
		Sim s(p, 7);
		uint32_t seen[4] = {};
		Rng rng(99);
		if (mode == 0)
			s.answers = [&](const Sent &x) { return seen[x.spine]++ % 3 == 0; };
		else
			s.answers = [&](const Sent &) { return !rng.chance(40); };
		for (uint32_t d : kDsts)
			s.map.want(d, kGw, 0);
		ASSERT_TRUE(s.run([&] { return s.settled_all(); }, 2000 * kMs));
		for (uint32_t d : kDsts)
			s.expect_complete(d);
		s.idle(5 * kMs);
		s.expect_all_judged();
	}
}

TEST(DpPortMap, ADeadSpineSettlesAfterMaxProbes)
{
	for (bool given : {false, true}) {
		SCOPED_TRACE(given ? "spines given" : "first sight");
		PortMapParams p = params();
		p.max_probes = 48;
		p.timeout_ns = 1 * kMs;
		if (given)
			p.spines = {spine_ip(0), spine_ip(1), spine_ip(2), spine_ip(3)};
		Sim s(p, 3);
		s.answers = [](const Sent &x) { return x.spine != 3; };
		s.map.want(kDsts[2], kGw, 0);
		s.each_step = [&] { EXPECT_TRUE(!s.map.settled(kDsts[2]) || s.sent.size() == p.max_probes); };
		ASSERT_TRUE(s.run([&] { return s.map.settled(kDsts[2]); }, 2000 * kMs));
		const uint64_t settled_at = s.now;
		EXPECT_EQ(s.sent.size(), p.max_probes);
		EXPECT_EQ(s.map.stats().probes, p.max_probes);
		EXPECT_EQ(s.map.uplinks_found(kDsts[2]), 3u);
		for (const Sent &x : s.sent) // nothing judged before its timeout
			EXPECT_TRUE(x.answered || settled_at >= x.t + p.timeout_ns);
		for (uint32_t u = 0; u < 4; u++) {
			if (s.map.router_of(u) == spine_ip(3) || s.map.router_of(u) == 0) {
				EXPECT_TRUE(s.map.entropies_of(kDsts[2], u).empty()) << u;
			}
		}
		EXPECT_EQ(s.map.router_of(3), given ? spine_ip(3) : 0u);
		s.expect_agrees(kDsts[2]);
		s.idle(50 * kMs);
		EXPECT_EQ(s.sent.size(), p.max_probes);
	}
}

TEST(DpPortMap, HostileAndUnmatchedRepliesChangeNothing)
{
	Sim s(params());
	const uint32_t d = kDsts[0];
	s.map.want(d, kGw, 0);
	VecSink sink;
	ASSERT_EQ(s.map.tx(sink, 0, 64), 1u);
	const Frame probe = sink.frames[0];
	const uint16_t id = (uint16_t)lumen_dp_get16(&probe[18]), e = (uint16_t)(lumen_dp_get16(&probe[34]) - 49152);
	const Frame good = time_exceeded(probe, spine_ip(1));
	auto rx = [&](const Frame &f) { return s.map.rx(f.data(), (uint32_t)f.size(), 5 * kUs); };
	auto unchanged = [&] {
		EXPECT_EQ(s.map.stats().replies, 0u);
		EXPECT_EQ(s.map.uplinks_found(d), 0u);
		EXPECT_EQ(s.map.uplink_of(d, e), -1);
		EXPECT_EQ(s.map.router_of(0), 0u);
		EXPECT_FALSE(s.map.settled(d));
	};
	struct Forge {
		const char *what;
		size_t off; // in the quoted IP header
		uint32_t value, bytes;
	};
	const Forge forged[] = {
		{"wrong id", 4, (uint16_t)(id + 1), 2},	 {"wrong source port", 20, lumen_dp_get16(&probe[34]) + 1u, 2},
		{"wrong destination port", 22, 4791, 2}, {"wrong destination", 16, kDsts[1], 4},
		{"not our address", 12, kOther, 4},
	};
	uint64_t unmatched = 0;
	for (const Forge &fg : forged) {
		Frame f = good;
		if (fg.bytes == 2)
			lumen_dp_put16(&f[LUMEN_DP_UDP_OFF + LUMEN_DP_ICMP_HLEN + fg.off], fg.value);
		else
			lumen_dp_put32(&f[LUMEN_DP_UDP_OFF + LUMEN_DP_ICMP_HLEN + fg.off], fg.value);
		fix_icmp(f);
		EXPECT_TRUE(rx(f)) << fg.what;
		EXPECT_EQ(s.map.stats().unmatched, ++unmatched) << fg.what;
		unchanged();
	}
	Frame bad = good;
	bad[LUMEN_DP_UDP_OFF + 2] ^= 0x40; // ICMP checksum
	EXPECT_TRUE(rx(bad));
	bad = good;
	bad[LUMEN_DP_IP_OFF + 10] ^= 1; // IP checksum
	EXPECT_TRUE(rx(bad));
	EXPECT_EQ(s.map.stats().malformed, 2u);
	for (uint8_t type : {0, 3}) { // an echo reply, a destination unreachable
		Frame f = time_exceeded(probe, spine_ip(1), 28, type);
		EXPECT_TRUE(rx(f)) << (int)type;
	}
	EXPECT_EQ(s.map.stats().malformed, 2u);
	EXPECT_EQ(s.map.stats().unmatched, unmatched);
	unchanged();
	// not ICMP: no business of the map
	Frame arp(42, 0);
	lumen_dp_put16(&arp[12], 0x0806);
	arp[23] = 1;
	EXPECT_FALSE(rx(probe));
	EXPECT_FALSE(rx(arp));
	EXPECT_FALSE(rx(Frame(20, 0xFF)));
	EXPECT_FALSE(s.map.rx(nullptr, 0, 0));
	unchanged();
	// the probe is still outstanding: the real answer counts, once
	EXPECT_TRUE(rx(good));
	EXPECT_EQ(s.map.stats().replies, 1u);
	EXPECT_EQ(s.map.uplink_of(d, e), 0);
	EXPECT_EQ(s.map.router_of(0), spine_ip(1));
	EXPECT_TRUE(rx(good));
	EXPECT_EQ(s.map.stats().replies, 1u);
	EXPECT_EQ(s.map.stats().unmatched, unmatched + 1);
	EXPECT_EQ(s.map.entropies_of(d, 0), std::vector<uint16_t>{e});
	EXPECT_EQ(s.map.stats().lost + s.map.stats().unknown_router, 0u);
}

TEST(DpPortMap, InvalidateForgetsAndProbesAgain)
{
	PortMapParams p = params();
	p.timeout_ns = 1 * kMs;
	Sim s(p);
	const uint32_t d = kDsts[1];
	s.map.invalidate(d, 3, 0); // unknown destination: nothing to do
	VecSink sink;
	EXPECT_EQ(s.map.tx(sink, 0, 64), 0u);
	s.map.want(d, kGw, 0);
	s.map.invalidate(d, 3, 0); // while probing: no new discovery
	EXPECT_EQ(s.map.stats().discoveries, 1u);
	ASSERT_TRUE(s.run([&] { return s.map.settled(d); }, 1000 * kMs));
	s.idle(10 * kMs);
	ASSERT_FALSE(s.map.entropies_of(d, 2).empty());
	const uint16_t e = s.map.entropies_of(d, 2).front();
	const size_t had = s.map.entropies_of(d, 2).size();
	const size_t probed = s.sent.size();
	s.map.invalidate(d, e, s.now);
	EXPECT_EQ(s.map.stats().discoveries, 2u);
	EXPECT_FALSE(s.map.settled(d));
	EXPECT_EQ(s.map.uplink_of(d, e), -1);
	EXPECT_FALSE(has(s.map.entropies_of(d, 2), e));
	EXPECT_EQ(s.map.entropies_of(d, 2).size(), had - 1);
	s.each_step = [&] { // back only once a probe found it again
		auto found = [&](const Sent &x) { return x.entropy == e && x.answered && x.t + s.delay_ns <= s.now; };
		EXPECT_TRUE(!has(s.map.entropies_of(d, 2), e) ||
			    std::any_of(s.sent.begin() + (long)probed, s.sent.end(), found))
			<< s.now;
	};
	ASSERT_TRUE(s.run([&] { return s.map.settled(d); }, 1000 * kMs));
	EXPECT_GT(s.sent.size(), probed);
	s.expect_complete(d);
}

// A spine dies; the caller invalidates a path through it: probing finds
// the spine gone, and the map forgets it (port_map.h: invalidate).
TEST(DpPortMap, ASpineFoundGoneIsForgotten)
{
	PortMapParams p = params();
	p.timeout_ns = 1 * kMs;
	p.max_probes = 64;
	Sim s(p);
	const uint32_t d = kDsts[0];
	s.map.want(d, kGw, 0);
	ASSERT_TRUE(s.run([&] { return s.map.settled(d); }, 1000 * kMs));
	s.idle(10 * kMs);
	ASSERT_FALSE(s.map.entropies_of(d, 3).empty());
	const uint32_t dead = s.map.router_of(3);
	s.answers = [&](const Sent &x) { return spine_ip(x.spine) != dead; };
	s.map.invalidate(d, s.map.entropies_of(d, 3).front(), s.now);
	ASSERT_TRUE(s.run([&] { return s.map.settled(d); }, 2000 * kMs));
	EXPECT_TRUE(s.map.entropies_of(d, 3).empty());
	EXPECT_EQ(s.map.uplinks_found(d), 3u);
	s.expect_agrees(d);
}

TEST(DpPortMap, AgeLimitProbesASettledMapAgainAfterItAndNotBefore)
{
	PortMapParams p = params();
	p.timeout_ns = 1 * kMs;
	p.max_age_ns = 50 * kMs;
	for (bool by_want : {false, true}) {
		SCOPED_TRACE(by_want ? "want()" : "tx()");
		Sim s(p);
		const uint32_t d = kDsts[by_want];
		s.map.want(d, kGw, 0);
		ASSERT_TRUE(s.run([&] { return s.map.settled(d); }, 1000 * kMs));
		const uint64_t settled_at = s.now, due = settled_at + p.max_age_ns;
		const size_t probed = s.sent.size();
		// up to the step before the age is up: nothing
		s.run([&] { return s.now + s.step_ns >= due; }, 1000 * kMs);
		ASSERT_LT(s.now, due);
		s.map.want(d, kGw, s.now);
		EXPECT_EQ(s.sent.size(), probed);
		EXPECT_TRUE(s.map.settled(d));
		EXPECT_EQ(s.map.stats().discoveries, 1u);
		if (by_want) {
			s.map.want(d, kGw, due);
			EXPECT_FALSE(s.map.settled(d));
			EXPECT_EQ(s.map.stats().discoveries, 2u);
		} else {
			ASSERT_TRUE(s.run([&] { return s.sent.size() > probed; }, 1000 * kMs));
			EXPECT_GE(s.sent[probed].t, due);
			EXPECT_LT(s.sent[probed].t, due + p.gap_ns + s.step_ns);
			EXPECT_EQ(s.map.stats().discoveries, 2u);
		}
		ASSERT_TRUE(s.run([&] { return s.map.settled(d); }, 1000 * kMs));
		EXPECT_GT(s.sent.size(), probed);
		s.idle(5 * kMs);
		s.expect_complete(d);
	}
}

// The fabric re-hashes (a leaf rebooted with another seed): the refresh
// after max_age_ns must leave a map that matches the new fabric.
TEST(DpPortMap, RefreshFollowsARehashedFabric)
{
	PortMapParams p = params();
	p.timeout_ns = 1 * kMs;
	p.max_age_ns = 20 * kMs;
	Sim s(p);
	for (uint32_t d : kDsts)
		s.map.want(d, kGw, 0);
	ASSERT_TRUE(s.run([&] { return s.settled_all(); }, 1000 * kMs));
	s.fab_seed ^= 0xabcdef;
	ASSERT_TRUE(s.run([&] { return !s.map.settled(kDsts[0]); }, 1000 * kMs));
	ASSERT_TRUE(s.run([&] { return s.settled_all(); }, 1000 * kMs));
	s.idle(5 * kMs);
	for (uint32_t d : kDsts)
		s.expect_complete(d);
}

TEST(DpPortMap, ValidateNamesEachBadFieldAndTheConstructorThrows)
{
	struct Case {
		std::function<void(PortMapParams &)> set;
		const char *names;
	};
	const Case bad[] = {
		{[](PortMapParams &p) { p.uplinks = 0; }, "uplinks"},
		{[](PortMapParams &p) { p.uplinks = 1025; }, "uplinks"},
		{[](PortMapParams &p) { p.per_uplink = 0; }, "per uplink"},
		{[](PortMapParams &p) { p.per_uplink = 65; }, "per uplink"},
		{[](PortMapParams &p) { p.max_probes = 0; }, "probes per destination"},
		{[](PortMapParams &p) { p.max_probes = 65537; }, "probes per destination"},
		{[](PortMapParams &p) { p.window = 0; }, "outstanding"},
		{[](PortMapParams &p) { p.window = 1025; }, "outstanding"},
		{[](PortMapParams &p) { p.ttl = 0; }, "TTL"},
		{[](PortMapParams &p) { p.timeout_ns = 999; }, "timeout"},
		{[](PortMapParams &p) { p.timeout_ns = 10'000'000'001ull; }, "timeout"},
		{[](PortMapParams &p) { p.gap_ns = 1'000'000'001; }, "gap"},
		{[](PortMapParams &p) { p.max_age_ns = p.timeout_ns - 1; }, "age"},
		{[](PortMapParams &p) { p.spines.assign(3, 1); }, "spine"},
		{[](PortMapParams &p) { p.spines.assign(5, 1); }, "spine"},
	};
	for (const Case &c : bad) {
		PortMapParams p = params();
		c.set(p);
		std::string msg = p.validate();
		EXPECT_NE(msg.find(c.names), std::string::npos) << "'" << msg << "' should name " << c.names;
		EXPECT_THROW(PortMap(p, host(), 1), std::invalid_argument) << c.names;
	}
	PortMapParams lo = params(1), hi = params(1024); // every bound, accepted
	lo.per_uplink = lo.max_probes = lo.window = lo.ttl = 1;
	lo.timeout_ns = lo.max_age_ns = 1000;
	lo.gap_ns = 0;
	hi.spines.assign(1024, 7);
	hi.per_uplink = 64;
	hi.max_probes = 65536;
	hi.window = 1024;
	hi.ttl = 255;
	hi.timeout_ns = 10'000'000'000ull;
	hi.gap_ns = 1'000'000'000;
	for (const PortMapParams &p : {lo, hi}) {
		EXPECT_EQ(p.validate(), "");
		EXPECT_NO_THROW(PortMap(p, host(), 1));
	}
}

std::vector<std::pair<uint32_t, uint16_t>> probe_order(uint64_t seed)
{
	Sim s(params(), seed);
	for (uint32_t d : kDsts)
		s.map.want(d, kGw, 0);
	EXPECT_TRUE(s.run([&] { return s.settled_all(); }, 1000 * kMs));
	std::vector<std::pair<uint32_t, uint16_t>> order;
	for (const Sent &x : s.sent)
		order.emplace_back(x.dst, x.entropy);
	return order;
}

TEST(DpPortMap, SameSeedSameProbeOrder)
{
	EXPECT_EQ(probe_order(5), probe_order(5));
	EXPECT_NE(probe_order(5), probe_order(6));
	EXPECT_NE(probe_order(6), probe_order(7));
}

} // namespace
