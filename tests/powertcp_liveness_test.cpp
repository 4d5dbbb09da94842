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
// Also the shells' side (powertcp_ack.h): the host-wide counters report the
// fallback and the guard, and idle restarts come before the INT timestamp
// wraps, but not on every request of a busy request/response flow.
#include <gtest/gtest.h>

#include <cstring>

#include <functional>
#include <limits>
#include <random>
#include <string>

extern "C" {
#include "lumen/powertcp_ack.h"
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
	      uint64_t seed = 1, lumen_ptcp_mode mode = LUMEN_PTCP_MODE_INT)
{
	std::mt19937_64 rng(seed);
	ptcp_stream s;
	ptcp_stream_init_mode(&s, &p, rtt_ns, kMss, 1000, mode);
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

// HPCC runs on the same machinery: the same streams cannot switch it off.
TEST(Liveness, HpccEveryHostileStreamLetsTheWindowFallWithTheRtt)
{
	for (const auto &c : hostile_streams()) {
		SCOPED_TRACE(c.name);
		Outcome o = drive(c.stream, kFar, params(), 4000, 1, LUMEN_PTCP_MODE_HPCC);
		EXPECT_LE(o.cwnd, o.bound) << c.name;
		EXPECT_LT(o.cwnd, 25000u / 4) << c.name;
		EXPECT_GT(o.stats.fallback_updates + o.stats.rtt_guard, 0u) << c.name;
	}
}

TEST(Liveness, HpccHoldsAcrossEtaStagesAndRtts)
{
	const uint32_t etas[] = {LUMEN_HPCC_DEFAULT_ETA, LUMEN_HPCC_ONE, LUMEN_HPCC_ETA_MIN};
	const uint32_t stages[] = {0, LUMEN_HPCC_DEFAULT_MAX_STAGE, LUMEN_HPCC_MAX_STAGE_MAX};
	const uint64_t rtts[] = {320000, 5000000, 100000000}; // 16 tau .. 5000 tau
	auto cases = hostile_streams();
	for (uint32_t eta : etas)
		for (uint32_t stage : stages)
			for (uint64_t rtt : rtts)
				for (const auto &c : cases) {
					SCOPED_TRACE(std::string(c.name) + " eta " + std::to_string(eta) + " stage " +
						     std::to_string(stage) + " rtt " + std::to_string(rtt));
					lumen_ptcp_params p = params();
					p.hpcc.eta = eta;
					p.hpcc.max_stage = stage;
					ASSERT_EQ(lumen_ptcp_params_validate(&p), 0);
					Outcome o = drive(c.stream, rtt, p, 3000, 1, LUMEN_PTCP_MODE_HPCC);
					EXPECT_LE(o.cwnd, o.bound);
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

// ------------------------------------------------------------------------
// The shells' side (powertcp_ack.h): counters and idle restarts

// One ACK of s as a shell runs it (lumen_ptcp_ack_process); its events.
uint32_t shell_ack(ptcp_stream &s, const lumen_int_opt *echo, uint64_t dt_ns)
{
	s.now_ns += dt_ns;
	s.una += s.mss;
	lumen_ptcp_ack a{s.now_ns, s.rtt_ns, s.una, s.una + uint32_t(s.st.cwnd_bytes), s.mss};
	return lumen_ptcp_ack_process(&s.st, &s.p, &a, echo, nullptr);
}

TEST(ShellCounters, UnusableEchoesAndTheFallbackAreReported)
{
	std::mt19937_64 rng(1);
	const Stream rate0 = hostile_streams()[2].stream;
	lumen_ptcp_params p = params();
	ptcp_stream s;
	ptcp_stream_init(&s, &p, kFar, kMss, 1000);
	uint32_t unusable = 0, fallback = 0;
	for (int i = 0; i < 2000; i++) {
		uint64_t dt = ptcp_stream_spacing(&s, kMss) + 1;
		uint32_t ev = shell_ack(s, rate0(i, s.now_ns + dt, rng), dt);
		EXPECT_FALSE(ev & (LUMEN_PTCP_EV(NO_INT) | LUMEN_PTCP_EV(INT_UPDATES))) << i; // echoes came
		unusable += !!(ev & LUMEN_PTCP_EV(INT_UNUSABLE));
		fallback += !!(ev & LUMEN_PTCP_EV(FALLBACK_UPDATES));
	}
	EXPECT_EQ(unusable, 2000u);
	EXPECT_GT(fallback, 10u);
	EXPECT_EQ(fallback, s.st.stats.fallback_updates);
}

TEST(ShellCounters, RttGuardIsReportedWithTheIntUpdateItOverrode)
{
	// INT claims an idle path while the RTT stays at 50 tau
	ValidPath vp;
	lumen_ptcp_params p = params();
	ptcp_stream s;
	ptcp_stream_init(&s, &p, 1000000, kMss, 1000);
	uint32_t guarded = 0;
	for (int i = 0; i < 2000; i++) {
		uint64_t dt = ptcp_stream_spacing(&s, kMss) + 1;
		uint32_t ev = shell_ack(s, vp.at(s.now_ns + dt, 0.0, 0), dt);
		if (ev & LUMEN_PTCP_EV(RTT_GUARD)) {
			EXPECT_TRUE(ev & LUMEN_PTCP_EV(INT_UPDATES)) << i;
			guarded++;
		}
	}
	EXPECT_GT(guarded, 1900u);
	EXPECT_EQ(guarded, s.st.stats.rtt_guard);
}

TEST(ShellCounters, EventsAddUpToTheCoresStatsOverAMixedStream)
{
	// each event is the host-wide twin of a per-flow stat, so over any
	// stream the sums agree (NO_INT: the ACKs of an INT flow without echo)
	auto hostile = hostile_streams();
	for (lumen_ptcp_mode mode : {LUMEN_PTCP_MODE_INT, LUMEN_PTCP_MODE_THETA}) {
		std::mt19937_64 rng(7);
		ValidPath vp;
		lumen_ptcp_params p = params();
		ptcp_stream s;
		ptcp_stream_init(&s, &p, 24000, kMss, 1000);
		lumen_ptcp_init(&s.st, &s.p, mode, s.una, kMss);
		uint32_t sum[LUMEN_PTCP_EVBIT_COUNT] = {}, no_echo = 0;
		for (int i = 0; i < 5000; i++) {
			s.rtt_ns = rng() % 5 ? 20000 + rng() % 2000000 : 0; // 0: the ACK has no sample
			uint64_t dt = ptcp_stream_spacing(&s, kMss) + 1 + rng() % 3000;
			const lumen_int_opt *e =
				rng() % 3 ? vp.at(s.now_ns + dt, double(rng() % 100) / 80, rng() % 100000)
					  : hostile[rng() % hostile.size()].stream(i, s.now_ns + dt, rng);
			no_echo += !e;
			uint32_t ev = shell_ack(s, e, dt);
			for (int b = 0; b < LUMEN_PTCP_EVBIT_COUNT; b++)
				sum[b] += (ev >> b) & 1;
		}
		const lumen_ptcp_stats &st = s.st.stats;
		EXPECT_EQ(sum[LUMEN_PTCP_EVBIT_ACKS], st.acks);
		EXPECT_EQ(sum[LUMEN_PTCP_EVBIT_INT_UPDATES], st.int_updates);
		EXPECT_EQ(sum[LUMEN_PTCP_EVBIT_RTT_UPDATES], st.rtt_updates);
		EXPECT_EQ(sum[LUMEN_PTCP_EVBIT_FALLBACK_UPDATES], st.fallback_updates);
		EXPECT_EQ(sum[LUMEN_PTCP_EVBIT_INT_UNUSABLE], st.int_unusable);
		EXPECT_EQ(sum[LUMEN_PTCP_EVBIT_RTT_GUARD], st.rtt_guard);
		EXPECT_EQ(sum[LUMEN_PTCP_EVBIT_NO_INT], mode == LUMEN_PTCP_MODE_INT ? no_echo : 0u);
		EXPECT_EQ(sum[LUMEN_PTCP_EVBIT_RESTARTS], 0u); // only cwnd_event restarts
		if (mode == LUMEN_PTCP_MODE_INT) {
			EXPECT_GT(no_echo, 0u);
			EXPECT_GT(st.int_updates, 0u);
			EXPECT_GT(st.int_unusable, 0u);
			EXPECT_GT(st.fallback_updates + st.rtt_guard, 0u);
		} else {
			EXPECT_GT(st.rtt_updates, 0u);
		}
	}
}

// A flow with INT and RTT history; returns the time of its last RTT sample.
uint64_t warm_flow(ptcp_stream &s, const lumen_ptcp_params &p, ValidPath &vp)
{
	ptcp_stream_init(&s, &p, 24000, kMss, 1000);
	for (int i = 0; i < 20; i++) {
		uint64_t dt = ptcp_stream_spacing(&s, kMss) + 1;
		ptcp_stream_ack(&s, vp.at(s.now_ns + dt, 1.0, 0), dt, kMss);
	}
	EXPECT_EQ(s.st.have_rtt, 1);
	EXPECT_EQ(s.st.prev_rtt_time_ns, s.now_ns);
	EXPECT_GT(s.st.smooth_power, 0u);
	return s.now_ns;
}

TEST(Idle, TxStartRestartsOnlyAfterAQuarterWrapWithoutAnRttSample)
{
	EXPECT_EQ(LUMEN_PTCP_IDLE_NS, LUMEN_INT_WRAP_NS / 4); // 1.05 ms of the 4.19 ms
	ValidPath vp;
	lumen_ptcp_params p = params();
	ptcp_stream s;
	const uint64_t last = warm_flow(s, p, vp);
	const uint64_t cwnd = s.st.cwnd_bytes;
	const uint32_t nxt = s.una + uint32_t(cwnd);
	EXPECT_FALSE(lumen_ptcp_idle(&s.st, last));
	EXPECT_FALSE(lumen_ptcp_idle(&s.st, last + LUMEN_PTCP_IDLE_NS - 1));
	EXPECT_TRUE(lumen_ptcp_idle(&s.st, last + LUMEN_PTCP_IDLE_NS));
	EXPECT_TRUE(lumen_ptcp_idle(&s.st, std::numeric_limits<uint64_t>::max()));
	EXPECT_TRUE(lumen_ptcp_idle(&s.st, last - 1)); // a clock step back: idle for how long?
	lumen_ptcp top = s.st; // and one from the top of the range is not 1 ns of idle
	top.prev_rtt_time_ns = std::numeric_limits<uint64_t>::max();
	EXPECT_TRUE(lumen_ptcp_idle(&top, 0));

	// the next request of a busy request/response flow keeps the INT history
	EXPECT_EQ(lumen_ptcp_tx_event(&s.st, LUMEN_PTCP_TX_START, last + LUMEN_PTCP_IDLE_NS - 1, nxt), 0u);
	EXPECT_GT(s.st.smooth_power, 0u);
	EXPECT_EQ(s.st.prev_hop_count, 1);
	// one a quarter wrap later is a restart: histories go, the window stays
	EXPECT_EQ(lumen_ptcp_tx_event(&s.st, LUMEN_PTCP_TX_START, last + LUMEN_PTCP_IDLE_NS, nxt),
		  LUMEN_PTCP_EV(RESTARTS));
	EXPECT_EQ(s.st.smooth_power, 0u);
	EXPECT_EQ(s.st.smooth_rtt_power, 0u);
	EXPECT_EQ(s.st.prev_hop_count, 0);
	EXPECT_EQ(s.st.have_rtt, 0);
	EXPECT_EQ(s.st.rtt_round_end, nxt);
	EXPECT_EQ(s.st.cwnd_bytes, cwnd);
	// without an RTT sample since, the flow is still idle at any time
	EXPECT_TRUE(lumen_ptcp_idle(&s.st, last));
	EXPECT_EQ(lumen_ptcp_tx_event(&s.st, LUMEN_PTCP_TX_START, last, nxt), LUMEN_PTCP_EV(RESTARTS));
}

TEST(Idle, CwndRestartAlwaysRestarts)
{
	// the kernel sends it after idle beyond the RTO: no clock to check
	ValidPath vp;
	lumen_ptcp_params p = params();
	ptcp_stream s;
	const uint64_t last = warm_flow(s, p, vp);
	const uint64_t cwnd = s.st.cwnd_bytes;
	EXPECT_EQ(lumen_ptcp_tx_event(&s.st, LUMEN_PTCP_CWND_RESTART, last, s.una), LUMEN_PTCP_EV(RESTARTS));
	EXPECT_EQ(s.st.smooth_power, 0u);
	EXPECT_EQ(s.st.have_rtt, 0);
	EXPECT_EQ(s.st.cwnd_bytes, cwnd);
	// and the next echo only re-baselines: no stale delta across the idle time
	uint64_t dt = 2 * LUMEN_INT_WRAP_NS + 5000; // aliases to 5 us of INT time
	EXPECT_EQ(shell_ack(s, vp.at(s.now_ns + dt, 1.0, 0), dt), LUMEN_PTCP_EV(ACKS) | LUMEN_PTCP_EV(INT_UNUSABLE));
}

TEST(Idle, OtherEventsChangeNothing)
{
	// the kernel's events in the core's terms (CA_EVENT_* as the kernel numbers them)
	enum {
		CA_EVENT_TX_START,
		CA_EVENT_CWND_RESTART,
		CA_EVENT_COMPLETE_CWR,
		CA_EVENT_LOSS
	};
	EXPECT_EQ(LUMEN_PTCP_TX_EVENT(CA_EVENT_TX_START), LUMEN_PTCP_TX_START);
	EXPECT_EQ(LUMEN_PTCP_TX_EVENT(CA_EVENT_CWND_RESTART), LUMEN_PTCP_CWND_RESTART);
	EXPECT_EQ(LUMEN_PTCP_TX_EVENT(CA_EVENT_COMPLETE_CWR), LUMEN_PTCP_TX_OTHER);
	EXPECT_EQ(LUMEN_PTCP_TX_EVENT(CA_EVENT_LOSS), LUMEN_PTCP_TX_OTHER);
	ValidPath vp;
	lumen_ptcp_params p = params();
	ptcp_stream s;
	const uint64_t last = warm_flow(s, p, vp);
	const lumen_ptcp before = s.st;
	// however long the flow was idle
	EXPECT_EQ(lumen_ptcp_tx_event(&s.st, LUMEN_PTCP_TX_OTHER, last + 100 * LUMEN_PTCP_IDLE_NS, s.una), 0u);
	EXPECT_EQ(std::memcmp(&before, &s.st, sizeof(before)), 0);
}

} // namespace
