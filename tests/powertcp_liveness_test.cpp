// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// Liveness of the PowerTCP core: the network cannot switch congestion
// control off. With the RTT far above tau, every kind of INT stream - none,
// unusable (rate code 0, changing hops or rates, stale timestamps,
// implausible counters, duplicates, random bytes), wrapped, or valid but
// lying about an idle path - must leave the window at or below the control
// law's fixed point for the RTT's power (tests/ptcp_stream.h). Truthful INT
// on an uncongested path must not trip the RTT guard. The same property runs
// under libFuzzer over arbitrary streams (fuzz/powertcp_stream_fuzzer.c).
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>

extern "C" {
#include "ptcp_stream.h"
}

namespace
{

constexpr uint32_t kMss = 1448;

lumen_ptcp_params params(uint32_t gamma = LUMEN_PTCP_DEFAULT_GAMMA, uint32_t flows = 10)
{
	lumen_ptcp_params p;
	lumen_ptcp_params_default(&p);
	p.host_bw_mbps = 10000; // host BDP at 20 us: 25000 bytes
	p.base_rtt_ns = 20000;
	p.gamma = gamma;
	p.expected_flows = flows;
	EXPECT_EQ(lumen_ptcp_params_validate(&p), 0);
	return p;
}

// One hop record as a switch of rate_mbps would stamp it at time t.
lumen_int_hop hop(uint64_t t_ns, uint64_t tx, uint64_t qlen, uint32_t rate_mbps)
{
	lumen_int_hop h{};
	lumen_int_hop_make(&h, t_ns, tx, qlen, rate_mbps ? lumen_int_rate_encode(rate_mbps) : 0);
	return h;
}

lumen_int_opt echo_of(std::initializer_list<lumen_int_hop> hops)
{
	lumen_int_opt o{};
	o.version = LUMEN_INT_VERSION;
	o.flags = LUMEN_INT_FLAG_ECHO;
	for (const auto &h : hops)
		o.hops[o.count++] = h;
	o.slots = o.count;
	return o;
}

// An echo stream: the echo for ACK i at host time t (nullptr: none).
using Stream = std::function<const lumen_int_opt *(int i, uint64_t t, std::mt19937_64 &rng)>;

struct Outcome {
	uint64_t cwnd, bound;
	lumen_ptcp_stats stats;
};

// ACKs of 1 MSS, self-clocked (a window per RTT), RTT constant at rtt_ns.
Outcome drive(const Stream &stream, uint64_t rtt_ns, const lumen_ptcp_params &p = params(), int acks = 4000,
	      uint64_t seed = 1)
{
	std::mt19937_64 rng(seed);
	ptcp_stream s;
	ptcp_stream_init(&s, &p, rtt_ns, kMss, 1000);
	for (int i = 0; i < acks; i++) {
		uint64_t dt = ptcp_stream_spacing(&s, kMss) + 1;
		const lumen_int_opt *e = stream(i, s.now_ns + dt, rng);
		ptcp_stream_ack(&s, e, dt, kMss);
		EXPECT_GE(s.st.cwnd_bytes, 2u * kMss);
		EXPECT_LE(s.st.cwnd_bytes, 50000u); // host BDP + beta
	}
	return Outcome{s.st.cwnd_bytes, ptcp_stream_bound(&s), s.st.stats};
}

// A valid one-hop path at 10 Gbit/s: utilisation util, queue qlen bytes.
struct ValidPath {
	uint64_t tx = 0, last = 0;
	lumen_int_opt e{};
	const lumen_int_opt *at(uint64_t t, double util, uint64_t qlen)
	{
		if (last && t > last)
			tx += uint64_t(util * 1.25 * double(t - last));
		last = t;
		e = echo_of({hop(t, tx, qlen, 10000)});
		return &e;
	}
};

constexpr uint64_t kFar = 5000000; // 5 ms RTT against tau = 20 us: power 250

// ------------------------------------------------------------------------
// The reproducer: each unusable stream used to hold 25000 B.

struct Case {
	const char *name;
	Stream stream;
};

std::vector<Case> hostile_streams()
{
	static lumen_int_opt e;
	static ValidPath vp;
	static uint64_t tx;
	std::vector<Case> cases;
	cases.push_back({"no echo", [](int, uint64_t, std::mt19937_64 &) { return nullptr; }});
	cases.push_back({"zero hops", [](int, uint64_t, std::mt19937_64 &) {
				 e = echo_of({});
				 return &e;
			 }});
	cases.push_back({"rate code 0", [](int, uint64_t t, std::mt19937_64 &) {
				 tx += 2500;
				 e = echo_of({hop(t, tx, 0, 0)});
				 return &e;
			 }});
	cases.push_back({"hop count flaps", [](int i, uint64_t t, std::mt19937_64 &) {
				 tx += 2500;
				 if (i % 2)
					 e = echo_of({hop(t, tx, 0, 10000), hop(t, tx, 0, 10000)});
				 else
					 e = echo_of({hop(t, tx, 0, 10000)});
				 return &e;
			 }});
	cases.push_back({"rate flaps", [](int i, uint64_t t, std::mt19937_64 &) {
				 tx += 2500;
				 e = echo_of({hop(t, tx, 0, i % 2 ? 25000 : 10000)});
				 return &e;
			 }});
	cases.push_back({"timestamps beyond range", [](int i, uint64_t, std::mt19937_64 &) {
				 // each echo's switch clock is 3 ms after the last
				 e = echo_of({hop(uint64_t(i) * 3000000, 0, 0, 10000)});
				 return &e;
			 }});
	cases.push_back({"implausible counter", [](int, uint64_t t, std::mt19937_64 &) {
				 tx += 1000000; // 1 MB in 2 us at 10 Gbit/s
				 e = echo_of({hop(t, tx, 0, 10000)});
				 return &e;
			 }});
	cases.push_back({"duplicate forever", [](int i, uint64_t t, std::mt19937_64 &) {
				 if (i == 0)
					 e = echo_of({hop(t, 0, 0, 10000)});
				 return &e;
			 }});
	cases.push_back({"valid, lying: idle link", [](int i, uint64_t t, std::mt19937_64 &) {
				 if (i == 0)
					 vp = ValidPath{};
				 return vp.at(t, 0.1, 0);
			 }});
	cases.push_back({"random bytes", [](int, uint64_t, std::mt19937_64 &rng) {
				 e = lumen_int_opt{};
				 e.version = LUMEN_INT_VERSION;
				 e.flags = LUMEN_INT_FLAG_ECHO;
				 e.count = uint8_t(rng() % (LUMEN_INT_MAX_HOPS + 1));
				 e.slots = e.count;
				 for (int h = 0; h < e.count; h++) {
					 uint8_t raw[LUMEN_INT_HOP_LEN];
					 for (auto &b : raw)
						 b = uint8_t(rng());
					 lumen_int_hop_unpack(raw, &e.hops[h]);
				 }
				 return &e;
			 }});
	cases.push_back({"mixed", [](int i, uint64_t t, std::mt19937_64 &rng) -> const lumen_int_opt * {
				 if (i == 0)
					 vp = ValidPath{};
				 switch (rng() % 4) {
				 case 0:
					 return nullptr;
				 case 1:
					 return vp.at(t, 0.2, 0);
				 case 2:
					 tx += 1000000;
					 e = echo_of({hop(t, tx, 0, 10000)});
					 return &e;
				 default:
					 e = echo_of({hop(t, 0, 0, 0)});
					 return &e;
				 }
			 }});
	return cases;
}

TEST(Liveness, EveryHostileStreamLetsTheWindowFallWithTheRtt)
{
	for (const auto &c : hostile_streams()) {
		SCOPED_TRACE(c.name);
		Outcome o = drive(c.stream, kFar);
		EXPECT_LE(o.cwnd, o.bound) << c.name;
		EXPECT_LT(o.cwnd, 25000u / 4) << c.name; // from the initial 25000 B
		// and the counters say why: the RTT fallback or the RTT guard acted
		EXPECT_GT(o.stats.fallback_updates + o.stats.rtt_guard, 0u) << c.name;
	}
}

TEST(Liveness, UnusableEchoesCountAsNoIntForTheFallback)
{
	Outcome o = drive(hostile_streams()[2].stream, kFar); // rate code 0
	EXPECT_EQ(o.stats.int_updates, 0u);
	EXPECT_GT(o.stats.int_unusable, 3900u);
	EXPECT_GT(o.stats.fallback_updates, 10u);
	EXPECT_EQ(o.stats.int_missing, 0u);
}

TEST(Liveness, LyingIntIsOverriddenByTheRttGuard)
{
	// RTT 1 ms (50 tau): ACKs stay closer than the INT gap limit even at 2 MSS
	Outcome o = drive(hostile_streams()[8].stream, 1000000);
	EXPECT_GT(o.stats.int_updates, 3900u);
	EXPECT_LE(o.cwnd, o.bound);
	// from the end of the first RTT-long window on: ~20 ACKs of 25000 B
	EXPECT_GE(o.stats.rtt_guard + 40, o.stats.int_updates);
	EXPECT_EQ(o.stats.fallback_updates, 0u);
}

TEST(Liveness, ASingleDelayedAckDoesNotTripTheGuard)
{
	ValidPath vp;
	lumen_ptcp_params p = params();
	ptcp_stream s;
	ptcp_stream_init(&s, &p, 24000, kMss, 1000);
	for (int i = 0; i < 2000; i++) {
		s.rtt_ns = i % 100 == 50 ? 2000000 : 24000; // a 2 ms RTT sample now and then
		uint64_t dt = ptcp_stream_spacing(&s, kMss) + 1;
		ptcp_stream_ack(&s, vp.at(s.now_ns + dt, 1.0, 0), dt, kMss);
	}
	EXPECT_EQ(s.st.stats.rtt_guard, 0u);
	EXPECT_GT(s.st.cwnd_bytes, 20000u);
}

TEST(Liveness, HoldsAcrossGainsExpectedFlowsAndRtts)
{
	const uint32_t gammas[] = {LUMEN_PTCP_DEFAULT_GAMMA, LUMEN_PTCP_ONE / 2, LUMEN_PTCP_ONE / 4};
	const uint32_t flows[] = {1, 10, 64};
	const uint64_t rtts[] = {320000, 1000000, 5000000, 100000000}; // 16 tau .. 5000 tau
	auto cases = hostile_streams();
	for (uint32_t g : gammas)
		for (uint32_t n : flows)
			for (uint64_t rtt : rtts)
				for (const auto &c : cases) {
					SCOPED_TRACE(std::string(c.name) + " gamma " + std::to_string(g) + " N " +
						     std::to_string(n) + " rtt " + std::to_string(rtt));
					Outcome o = drive(c.stream, rtt, params(g, n), 6000);
					EXPECT_LE(o.cwnd, o.bound);
				}
}

// ------------------------------------------------------------------------
// Timestamp wrap: echoes a whole wrap (4.19 ms) apart alias to a small dt.

TEST(Liveness, EchoesFurtherApartThanTheWrapAreNeverUsed)
{
	// the switch stamps in real time; ACKs arrive 4.3 ms apart, so the 18-bit
	// timestamp advanced by one wrap plus ~100 us: an aliased, plausible dt
	ValidPath vp;
	lumen_ptcp_params p = params();
	ptcp_stream s;
	ptcp_stream_init(&s, &p, 40000, kMss, 1000);
	const uint64_t gap = LUMEN_INT_WRAP_NS + 100000;
	for (int i = 0; i < 50; i++) {
		const lumen_int_opt *e = vp.at(s.now_ns + gap, 0.0, 0);
		EXPECT_NE(ptcp_stream_ack(&s, e, gap, kMss), LUMEN_PTCP_UPDATED_INT) << i;
	}
	EXPECT_EQ(s.st.stats.int_updates, 0u);
	EXPECT_EQ(s.st.stats.int_gap, 49u);

	// and a gap just below the limit is still used
	ptcp_stream_init(&s, &p, 40000, kMss, 1000);
	const uint64_t ok = LUMEN_PTCP_INT_GAP_MAX_NS - 1000;
	ptcp_stream_ack(&s, vp.at(s.now_ns + ok, 1.0, 0), ok, kMss);
	EXPECT_EQ(ptcp_stream_ack(&s, vp.at(s.now_ns + ok, 1.0, 0), ok, kMss), LUMEN_PTCP_UPDATED_INT);
	EXPECT_EQ(s.st.stats.int_gap, 0u);
}

TEST(Liveness, HostTimeGoingBackwardsReBaselines)
{
	ValidPath vp;
	lumen_ptcp_params p = params();
	ptcp_stream s;
	ptcp_stream_init(&s, &p, 40000, kMss, 1000);
	ptcp_stream_ack(&s, vp.at(s.now_ns + 2000, 1.0, 0), 2000, kMss);
	s.now_ns -= 10000; // a clock step back between two ACKs
	EXPECT_NE(ptcp_stream_ack(&s, vp.at(s.now_ns + 2000, 1.0, 0), 2000, kMss), LUMEN_PTCP_UPDATED_INT);
	EXPECT_EQ(s.st.stats.int_gap, 1u);
}

// ------------------------------------------------------------------------
// The guard must leave an honest, uncongested or mildly congested flow alone.

TEST(Liveness, TruthfulIntNearTauNeverTripsTheGuard)
{
	ValidPath vp;
	// RTT 1.2 tau, link busy, no queue: power ~1
	Outcome o = drive([&](int, uint64_t t, std::mt19937_64 &) { return vp.at(t, 1.0, 0); }, 24000);
	EXPECT_EQ(o.stats.rtt_guard, 0u);
	EXPECT_EQ(o.stats.fallback_updates, 0u);
	EXPECT_GT(o.stats.int_updates, 3900u);
	EXPECT_GT(o.cwnd, 20000u); // near host BDP + beta / power
}

TEST(Liveness, TruthfulIntWithAQueueBelowTheGuardIsNotOverridden)
{
	ValidPath vp;
	// a queue of 2 BDP: RTT 3 tau, INT voltage 3
	Outcome o = drive([&](int, uint64_t t, std::mt19937_64 &) { return vp.at(t, 1.0, 50000); }, 60000);
	EXPECT_EQ(o.stats.rtt_guard, 0u);
	EXPECT_EQ(o.stats.fallback_updates, 0u);
}

TEST(Liveness, OccasionalUnusableEchoesInAHealthyFlowCauseNoFallback)
{
	ValidPath vp;
	lumen_int_opt dup{};
	Outcome o = drive(
		[&](int i, uint64_t t, std::mt19937_64 &) -> const lumen_int_opt * {
			if (i % 5 == 4)
				return &dup; // a delayed ACK echoing the previous dequeue
			dup = *vp.at(t, 1.0, 0);
			return &dup;
		},
		24000);
	EXPECT_GT(o.stats.int_duplicate, 700u);
	EXPECT_EQ(o.stats.fallback_updates, 0u);
	EXPECT_EQ(o.stats.rtt_guard, 0u);
}

} // namespace
