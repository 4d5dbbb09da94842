// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/dp_test_net.h - two lumen-dp engines, a and b, over an in-memory
// network with the impairment shim between them, on a virtual clock (one
// step a microsecond), and what the engine tests build on it: the hosts'
// addresses and configurations, impairment specs, posting messages and
// checking that they all arrived.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "transport/engine.h"
#include "transport/impair.h"

#include "dp_test_frames.h"

namespace lumen::dp::test
{

inline const Mac kMacA{2, 0, 0, 0, 0, 1}, kMacB{2, 0, 0, 0, 0, 2};
constexpr uint32_t kIpA = 0x0A000001, kIpB = 0x0A000002;

inline EngineConfig config(uint32_t ip, const Mac &mac, lumen_path_mode mode = LUMEN_PATH_REPS)
{
	EngineConfig c;
	c.ip = ip;
	c.mac = mac;
	c.path_mode = mode;
	c.cc.mss = c.max_payload();
	c.seed = ip;
	return c;
}

// f through an impairment onto a link that delivers it at `at` (plus the
// impairment's delay): dropped, marked, duplicated as it judges.
inline void impair_onto(Impairment &imp, Frame &f, DelayLine<Frame> &line, uint64_t at)
{
	Verdict v = imp.judge(f.data(), (uint32_t)f.size());
	if (v.drop)
		return;
	if (v.ce)
		Impairment::mark_ce(f.data(), (uint32_t)f.size());
	if (v.dup)
		line.push(f, at + v.delay_ns);
	line.push(f, at + v.delay_ns);
}

// Two engines joined by one-way links with a fixed latency; each direction
// has its own impairment.
struct Net {
	Engine a, b;
	Impairment to_b, to_a;
	DelayLine<Frame> ab, ba;
	uint64_t now = 0, latency_ns = 5000;
	uint64_t frames_ab = 0;
	bool burst = false; // hand arrivals to rx_burst (with bits of junk between them), not rx
	uint32_t gather_region = 0; // sends of this region go out without a copy (VecSink)
	std::vector<uint16_t> sports_ab; // source ports of the DATA frames a sent, in order
	std::vector<std::pair<uint16_t, uint16_t>> acks_ba; // (source port, echoed port) of b's ACKs
	std::function<void(Frame &, uint64_t now)> on_wire_ab; // a switch on the way from a to b

	Net(const EngineConfig &ca, const EngineConfig &cb, const ImpairParams &ia = {}, const ImpairParams &ib = {})
	    : a(ca), b(cb), to_b(ia, ca.udp_port), to_a(ib, cb.udp_port)
	{
	}

	void carry(Engine &from, Impairment &imp, DelayLine<Frame> &line, bool record)
	{
		VecSink sink(from.config().mtu + 14);
		sink.gather_region = gather_region;
		from.tx(sink, now, 32);
		for (Frame &f : sink.frames) {
			if (record) {
				frames_ab++;
				if (f.size() > 42 && f[43] == LUMEN_DP_DATA)
					sports_ab.push_back((uint16_t)(f[34] << 8 | f[35]));
			}
			lumen_dp_pkt p{};
			if (!record && lumen_dp_parse(f.data(), (uint32_t)f.size(), LUMEN_DP_UDP_PORT, &p) == 0 &&
			    (p.type == LUMEN_DP_ACK || p.type == LUMEN_DP_NACK))
				acks_ba.emplace_back(p.sport, p.echo_sport);
			if (record && on_wire_ab)
				on_wire_ab(f, now);
			impair_onto(imp, f, line, now + latency_ns);
		}
	}

	void step(uint64_t dt = 1000)
	{
		now += dt;
		carry(a, to_b, ab, true);
		carry(b, to_a, ba, false);
		if (burst) {
			deliver_burst(ab, b);
			deliver_burst(ba, a);
		} else {
			Frame f;
			while (ab.pop(now, &f))
				b.rx(f.data(), (uint32_t)f.size(), now);
			while (ba.pop(now, &f))
				a.rx(f.data(), (uint32_t)f.size(), now);
		}
		a.timers(now);
		b.timers(now);
	}

	// Whatever arrived, as one burst, with frames too short to carry a key
	// and a runt of every type byte between them.
	void deliver_burst(DelayLine<Frame> &line, Engine &to)
	{
		std::vector<Frame> got;
		Frame f;
		while (line.pop(now, &f)) {
			got.push_back(f);
			if (got.size() % 7 == 0)
				got.push_back(Frame(got.size() % 3 ? 20 : 47, 0xFF));
		}
		std::vector<const uint8_t *> frames;
		std::vector<uint32_t> lens;
		for (const Frame &g : got) {
			frames.push_back(g.data());
			lens.push_back((uint32_t)g.size());
		}
		to.rx_burst(frames.data(), lens.data(), (uint32_t)frames.size(), now);
	}

	// Run until a has nothing unacknowledged, at most max_ns of virtual time.
	bool run(uint64_t max_ns)
	{
		uint64_t end = now + max_ns;
		while (now < end) {
			step();
			if (a.idle() && ab.empty() && ba.empty())
				return true;
		}
		return false;
	}
};

inline ImpairParams impair(const std::string &spec)
{
	ImpairParams p;
	EXPECT_EQ(p.parse(spec), "");
	return p;
}

// Open n connections from a to b and post msgs messages of len bytes on each.
inline void post(Net &net, uint32_t conns, uint32_t msgs, uint32_t len)
{
	for (uint32_t i = 0; i < conns; i++) {
		Connection *c = net.a.connect(kIpB, kMacB, i + 1, net.now);
		ASSERT_NE(c, nullptr);
		for (uint32_t k = 0; k < msgs; k++)
			net.a.post(*c, len, net.now);
	}
}

// Every message arrived once, intact, in order, and was acknowledged.
inline void expect_delivered(Net &net, uint32_t conns, uint32_t msgs, uint32_t len)
{
	ConnStats ta = net.a.totals(), tb = net.b.totals();
	EXPECT_EQ(ta.msgs_acked, (uint64_t)conns * msgs);
	EXPECT_EQ(tb.msgs_delivered, (uint64_t)conns * msgs);
	EXPECT_EQ(tb.bytes_delivered, (uint64_t)conns * msgs * len);
	EXPECT_EQ(tb.corrupt, 0u);
	EXPECT_EQ(net.b.connections().size(), conns);
}

} // namespace lumen::dp::test
