// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// dp_ethereal_reroute_test: Ethereal's single path in lumen-dp's engine
// (Algorithm 3's NAck(), flowTimeout() and receive()), over the in-memory
// network of tests/dp_test_net.h. An ethereal connection sends every packet
// on its one pinned entropy; a NACK about that entropy (a loss on it, or a
// receiver that saw most of a window CE-marked) or a timeout moves it, once,
// to the entropy the shell's choose_path gives (or a random other one), and
// Go-Back-N resends there; everything arrives, in order. The receiver's CE
// NACK is checked packet by packet; the configuration refuses what cannot
// work.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "transport/engine.h"
#include "transport/impair.h"

#include "dp_test_frames.h"
#include "dp_test_net.h"

using namespace lumen::dp;
using namespace lumen::dp::test;

namespace
{

constexpr uint32_t kEntropies = 8;

EngineConfig ethereal(uint32_t ip, const Mac &mac)
{
	EngineConfig c = config(ip, mac, LUMEN_PATH_ETHEREAL);
	c.gbn = true;
	c.path.entropies = kEntropies;
	return c;
}

// The DATA source ports a sent, as runs of one port: [(port, packets)].
std::vector<std::pair<uint16_t, size_t>> runs(const std::vector<uint16_t> &sports)
{
	std::vector<std::pair<uint16_t, size_t>> out;
	for (uint16_t s : sports) {
		if (out.empty() || out.back().first != s)
			out.emplace_back(s, 0);
		out.back().second++;
	}
	return out;
}

// Messages delivered by b in order, per connection.
struct Order {
	std::map<uint32_t, uint32_t> next;
	uint64_t wrong = 0;
	void watch(Engine &b)
	{
		b.on_complete = [this](Connection &c, const Completion &d) { wrong += d.msg_id != next[c.conn_id]++; };
	}
};

// Connection 1 of a to b with msgs messages of len bytes, the impairment
// on the way to b set for its pinned entropy's port (spec with PORT in it
// replaced), then run. Returns the connection.
Connection *run_one(Net &net, const std::string &spec, uint32_t msgs, uint32_t len, uint16_t *pinned_port,
		    uint64_t max_ns = 20'000'000'000ull)
{
	Connection *c = net.a.connect(kIpB, kMacB, 1, net.now);
	EXPECT_NE(c, nullptr);
	if (!c)
		return nullptr;
	*pinned_port = (uint16_t)(net.a.config().sport_base + c->path.next);
	std::string s = spec;
	for (size_t at; (at = s.find("PORT")) != std::string::npos;)
		s.replace(at, 4, std::to_string(*pinned_port));
	net.to_b = Impairment(impair(s), net.a.config().udp_port);
	for (uint32_t k = 0; k < msgs; k++)
		net.a.post(*c, len, net.now);
	EXPECT_TRUE(net.run(max_ns)) << spec;
	return c;
}

// After one reroute: the pinned port first, then another one, never back.
void expect_moved_once(const Net &net, uint16_t from)
{
	auto r = runs(net.sports_ab);
	ASSERT_EQ(r.size(), 2u) << "runs of DATA source ports";
	EXPECT_EQ(r[0].first, from);
	EXPECT_NE(r[1].first, from);
	EXPECT_GE(r[1].first, net.a.config().sport_base);
	EXPECT_LT(r[1].first, net.a.config().sport_base + kEntropies);
	EXPECT_EQ(net.a.connections()[0]->path.next + net.a.config().sport_base, r[1].first);
}

// (a) Every packet of a connection, retransmissions included, on its one
// entropy; connections spread over the entropies.
TEST(DpEthereal, EveryPacketTakesTheConnectionsPinnedEntropy)
{
	EngineConfig ca = ethereal(kIpA, kMacA), cb = ethereal(kIpB, kMacB);
	ca.path.entropies = cb.path.entropies = 256;
	Net net(ca, cb);
	std::map<uint32_t, std::set<uint16_t>> ports; // per connection
	net.on_wire_ab = [&](Frame &f, uint64_t) {
		lumen_dp_pkt p;
		if (lumen_dp_parse(f.data(), (uint32_t)f.size(), LUMEN_DP_UDP_PORT, &p) == 0 && p.type == LUMEN_DP_DATA)
			ports[p.conn_id].insert(p.sport);
	};
	Order order;
	order.watch(net.b);
	post(net, 16, 10, 64 * 1024);
	ASSERT_TRUE(net.run(5'000'000'000ull));
	expect_delivered(net, 16, 10, 64 * 1024);
	EXPECT_EQ(order.wrong, 0u);
	std::set<uint16_t> used;
	for (const auto &c : net.a.connections()) {
		ASSERT_EQ(ports[c->conn_id].size(), 1u) << "connection " << c->conn_id;
		EXPECT_EQ(*ports[c->conn_id].begin(), ca.sport_base + c->path.next);
		used.insert(c->path.next);
	}
	EXPECT_GT(used.size(), 10u); // drawn at random, as ECMP's
	ConnStats ta = net.a.totals();
	EXPECT_EQ(ta.reroutes, 0u);
	EXPECT_EQ(ta.retransmits, 0u);
	EXPECT_EQ(net.b.totals().ce_nacks_sent, 0u);
}

// (b) NAck(): a lossy pinned path. Its first loss makes the next packet
// arrive out of order, the receiver NACKs with that packet's entropy (the
// pinned one), the sender moves to another and goes back N there. The NACKs
// of the packets still on the lossy path echo the old entropy and move
// nothing: one reroute.
TEST(DpEthereal, ANackOnThePinnedPathMovesTheConnectionOnce)
{
	Net net(ethereal(kIpA, kMacA), ethereal(kIpB, kMacB));
	Order order;
	order.watch(net.b);
	uint16_t port = 0;
	run_one(net, "drop=5%,ports=PORT,seed=3", 20, 64 * 1024, &port);
	expect_delivered(net, 1, 20, 64 * 1024);
	EXPECT_EQ(order.wrong, 0u);
	ConnStats ta = net.a.totals();
	std::printf("lossy path: %llu sent, %llu retransmitted, %llu NACKs, %llu timeouts, %llu reroutes\n",
		    (unsigned long long)ta.data_sent, (unsigned long long)ta.retransmits,
		    (unsigned long long)ta.nacks_rcvd, (unsigned long long)ta.timeouts,
		    (unsigned long long)ta.reroutes);
	EXPECT_GT(net.to_b.stats().dropped, 0u);
	EXPECT_GT(ta.nacks_rcvd, 0u);
	EXPECT_EQ(ta.timeouts, 0u);
	EXPECT_EQ(ta.reroutes, 1u);
	expect_moved_once(net, port);
	EXPECT_GT(runs(net.sports_ab)[1].second, net.sports_ab.size() / 2); // most of the run on the new path
}

// (c) flowTimeout(): a pinned path blackholed from the start. Nothing
// reaches the receiver, so no NACK can come; the RTO moves the connection.
TEST(DpEthereal, ADeadPinnedPathIsLeftOnTimeout)
{
	Net net(ethereal(kIpA, kMacA), ethereal(kIpB, kMacB));
	Order order;
	order.watch(net.b);
	uint16_t port = 0;
	run_one(net, "blackhole=PORT", 20, 64 * 1024, &port);
	expect_delivered(net, 1, 20, 64 * 1024);
	EXPECT_EQ(order.wrong, 0u);
	ConnStats ta = net.a.totals();
	EXPECT_EQ(ta.nacks_rcvd, 0u);
	EXPECT_EQ(ta.timeouts, 1u);
	EXPECT_EQ(ta.reroutes, 1u);
	EXPECT_EQ(ta.spurious_rtos, 0u); /* nothing sent before it arrived */
	EXPECT_EQ(ta.reroutes_undone, 0u);
	EXPECT_GT(net.to_b.stats().blackholed, 0u);
	expect_moved_once(net, port);
}

// A late path is not a dead one (Eifel). With 3 ms of latency each way and
// an initial RTO of 4 ms, the first RTO fires while the first window is on
// its way: the connection moves and resends. The first ACK to move una
// answers a packet sent before that RTO, so it was spurious: the
// connection goes back to its pinned path (the shell hears of it), stops
// resending what is still on its way, and its window comes back; later RTOs
// see the real RTT and do not fire.
TEST(DpEthereal, ASpuriousTimeoutsMoveIsUndone)
{
	Net net(ethereal(kIpA, kMacA), ethereal(kIpB, kMacB));
	Order order;
	order.watch(net.b);
	std::vector<std::pair<uint16_t, uint16_t>> undone;
	net.a.on_reroute_undone = [&](Connection &, uint16_t from, uint16_t to) { undone.emplace_back(from, to); };
	// the handshake's RTT (1 ms) sets the RTO; then the path slows to 6 ms
	net.latency_ns = 500'000;
	Connection *c = net.a.connect(kIpB, kMacB, 1, net.now);
	ASSERT_NE(c, nullptr);
	uint16_t port = (uint16_t)(net.a.config().sport_base + c->path.next);
	for (uint32_t k = 0; k < 20; k++)
		net.a.post(*c, 64 * 1024, net.now);
	while (c->state != ConnState::kEstablished)
		net.step();
	net.latency_ns = 3'000'000;
	ASSERT_TRUE(net.run(20'000'000'000ull));
	expect_delivered(net, 1, 20, 64 * 1024);
	EXPECT_EQ(order.wrong, 0u);
	ConnStats ta = net.a.totals();
	EXPECT_EQ(ta.timeouts, 1u);
	EXPECT_EQ(ta.spurious_rtos, 1u);
	EXPECT_EQ(ta.reroutes, 1u);
	EXPECT_EQ(ta.reroutes_undone, 1u);
	EXPECT_EQ(ta.nacks_rcvd, 0u);
	EXPECT_LE(ta.retransmits, 2u) << "resent what was still on its way";
	EXPECT_EQ(c->cc->counters().undone_timeouts, 1u);
	const uint16_t pinned = (uint16_t)(port - net.a.config().sport_base);
	EXPECT_EQ(c->path.next, pinned);
	ASSERT_EQ(undone.size(), 1u);
	EXPECT_NE(undone[0].first, pinned);
	EXPECT_EQ(undone[0].second, pinned);
	auto r = runs(net.sports_ab);
	ASSERT_EQ(r.size(), 3u) << "pinned, moved, back";
	EXPECT_EQ(r[0].first, port);
	EXPECT_EQ(r[2].first, port);
}

// A link that fails mid-flow: what was on the way arrives, then nothing;
// the RTO moves the connection and the blackholed port is not used again.
TEST(DpEthereal, APathThatFailsMidFlowIsLeftAndNotUsedAgain)
{
	Net net(ethereal(kIpA, kMacA), ethereal(kIpB, kMacB));
	Order order;
	order.watch(net.b);
	Connection *c = net.a.connect(kIpB, kMacB, 1, net.now);
	ASSERT_NE(c, nullptr);
	uint16_t port = (uint16_t)(net.a.config().sport_base + c->path.next);
	for (int k = 0; k < 20; k++)
		net.a.post(*c, 64 * 1024, net.now);
	while (net.b.totals().data_rcvd < 100)
		net.step();
	ASSERT_FALSE(net.a.idle());
	net.to_b = Impairment(impair("blackhole=" + std::to_string(port)), net.a.config().udp_port);
	ASSERT_TRUE(net.run(20'000'000'000ull));
	expect_delivered(net, 1, 20, 64 * 1024);
	EXPECT_EQ(order.wrong, 0u);
	EXPECT_EQ(net.a.totals().reroutes, 1u);
	EXPECT_GE(net.a.totals().timeouts, 1u);
	EXPECT_GT(net.to_b.stats().blackholed, 0u);
	expect_moved_once(net, port);
}

// (d) The shell's choice: choose_path hears the entropy left and its
// answer is pinned.
TEST(DpEthereal, ChoosePathIsAskedWithTheOldEntropyAndItsAnswerUsed)
{
	Net net(ethereal(kIpA, kMacA), ethereal(kIpB, kMacB));
	std::vector<std::pair<uint32_t, uint16_t>> calls; // (connection, old entropy)
	net.a.choose_path = [&](Connection &c, uint16_t old) {
		calls.emplace_back(c.conn_id, old);
		return (uint16_t)((old + 3) % kEntropies);
	};
	uint16_t port = 0;
	run_one(net, "blackhole=PORT", 10, 64 * 1024, &port);
	expect_delivered(net, 1, 10, 64 * 1024);
	uint16_t old = (uint16_t)(port - net.a.config().sport_base);
	ASSERT_EQ(calls.size(), 1u);
	EXPECT_EQ(calls[0], std::make_pair(1u, old));
	expect_moved_once(net, port);
	EXPECT_EQ(net.a.connections()[0]->path.next, (old + 3) % kEntropies);
	EXPECT_EQ(net.a.totals().reroutes, 1u);
	EXPECT_EQ(net.a.stats().bad_path_choices, 0u);
}

// A hostile (or broken) chooser: an answer outside the entropies is not a
// path. It is refused and counted, and the default (a random other
// entropy) chooses; the connection still moves, once. Engine::kNoPathChoice
// (the shell knows no path) leaves the choice to the default as well, and
// is not counted as a bad answer.
TEST(DpEthereal, AChoiceOutsideTheEntropiesIsRefusedAndTheDefaultChooses)
{
	for (uint16_t bad : {(uint16_t)kEntropies, (uint16_t)60000, (uint16_t)65534, Engine::kNoPathChoice}) {
		Net net(ethereal(kIpA, kMacA), ethereal(kIpB, kMacB));
		int calls = 0;
		net.a.choose_path = [&](Connection &, uint16_t) {
			calls++;
			return bad;
		};
		uint16_t port = 0;
		run_one(net, "blackhole=PORT", 10, 64 * 1024, &port);
		expect_delivered(net, 1, 10, 64 * 1024);
		EXPECT_EQ(calls, 1) << bad;
		EXPECT_EQ(net.a.stats().bad_path_choices, bad == Engine::kNoPathChoice ? 0u : 1u);
		EXPECT_EQ(net.a.totals().reroutes, 1u);
		expect_moved_once(net, port);
	}
}

// The default chooser: uniform over the other entropies, never the old one.
TEST(DpEthereal, TheDefaultChoiceIsAnyOtherEntropy)
{
	std::map<int, int> moved_by; // (new - old) mod entropies
	for (uint64_t seed = 1; seed <= 70; seed++) {
		EngineConfig ca = ethereal(kIpA, kMacA);
		ca.seed = seed;
		Net net(ca, ethereal(kIpB, kMacB));
		uint16_t port = 0;
		run_one(net, "blackhole=PORT", 1, 10 * 1000, &port);
		ASSERT_EQ(net.a.totals().reroutes, 1u) << "seed " << seed;
		uint32_t old = port - ca.sport_base, now = net.a.connections()[0]->path.next;
		moved_by[(int)((now + kEntropies - old) % kEntropies)]++;
	}
	EXPECT_EQ(moved_by.count(0), 0u);
	EXPECT_EQ(moved_by.size(), (size_t)kEntropies - 1); // every other one, in 70 draws
	// one entropy: nowhere to go, it stays (and retries there)
	EngineConfig one = ethereal(kIpA, kMacA);
	one.path.entropies = 1;
	Net net(one, ethereal(kIpB, kMacB));
	uint16_t port = 0;
	run_one(net, "drop=30%,ports=PORT,seed=2", 5, 10 * 1000, &port);
	expect_delivered(net, 1, 5, 10 * 1000);
	EXPECT_EQ(net.a.totals().reroutes, 0u);
	EXPECT_EQ(runs(net.sports_ab).size(), 1u);
}

// (e) receive(): every packet on the pinned path CE-marked (a slow link).
// The receiver counts a marked majority of a window and NACKs; the sender
// moves, goes back N, and stays on the new path, where the marks stop.
// With the threshold off, marks move nothing.
TEST(DpEthereal, AMarkedPathDrawsACeNackAndTheConnectionMovesOnce)
{
	for (uint32_t threshold : {50u, 0u}) {
		EngineConfig ca = ethereal(kIpA, kMacA), cb = ethereal(kIpB, kMacB);
		cb.ce_nack_threshold_pct = threshold;
		Net net(ca, cb);
		Order order;
		order.watch(net.b);
		uint16_t port = 0;
		run_one(net, "ce=100%,ports=PORT", 20, 64 * 1024, &port);
		expect_delivered(net, 1, 20, 64 * 1024);
		EXPECT_EQ(order.wrong, 0u);
		ConnStats ta = net.a.totals(), tb = net.b.totals();
		std::printf("threshold %u%%: %llu CE of %llu received, %llu CE NACKs, %llu reroutes, %llu "
			    "retransmitted, %llu ignored out of order\n",
			    threshold, (unsigned long long)tb.ce_rcvd, (unsigned long long)tb.data_rcvd,
			    (unsigned long long)tb.ce_nacks_sent, (unsigned long long)ta.reroutes,
			    (unsigned long long)ta.retransmits, (unsigned long long)tb.ooo_ignored);
		EXPECT_EQ(ta.timeouts, 0u);
		EXPECT_EQ(net.to_b.stats().dropped, 0u);
		if (threshold) {
			EXPECT_EQ(tb.ce_nacks_sent, 1u);
			EXPECT_GE(tb.nacks_sent, 1u);
			EXPECT_EQ(ta.reroutes, 1u);
			expect_moved_once(net, port);
			// the marks stopped with the old path
			EXPECT_LE(tb.ce_rcvd, runs(net.sports_ab)[0].second);
			EXPECT_LT(tb.ce_rcvd * 10, tb.data_rcvd);
		} else {
			EXPECT_EQ(tb.ce_nacks_sent, 0u);
			EXPECT_EQ(tb.nacks_sent, 0u);
			EXPECT_EQ(ta.reroutes, 0u);
			EXPECT_EQ(runs(net.sports_ab).size(), 1u);
			EXPECT_EQ(tb.ce_rcvd, tb.data_rcvd);
		}
	}
}

// Another policy (and Go-Back-N with losses) never asks choose_path: a
// NACK is NACK feedback (REPS drops the path, as it always did), no more.
TEST(DpEthereal, OtherPoliciesNeverReroute)
{
	for (lumen_path_mode m : {LUMEN_PATH_ECMP, LUMEN_PATH_OPS, LUMEN_PATH_REPS, LUMEN_PATH_REPS_FREEZE}) {
		EngineConfig ca = config(kIpA, kMacA, m), cb = config(kIpB, kMacB, m);
		/* NACKs with ECMP's single path; the spraying ones recover with
		 * SACK (Go-Back-N is refused for them) and see losses and timeouts */
		ca.gbn = cb.gbn = m == LUMEN_PATH_ECMP;
		Net net(ca, cb, impair("drop=2%,seed=5"));
		int calls = 0;
		net.a.choose_path = [&](Connection &, uint16_t old) {
			calls++;
			return old;
		};
		post(net, 2, 5, 64 * 1024);
		ASSERT_TRUE(net.run(20'000'000'000ull)) << lumen_path_mode_name(m);
		expect_delivered(net, 2, 5, 64 * 1024);
		EXPECT_GT(m == LUMEN_PATH_ECMP ? net.a.totals().nacks_rcvd : net.a.totals().retransmits, 0u);
		EXPECT_EQ(calls, 0) << lumen_path_mode_name(m);
		EXPECT_EQ(net.a.totals().reroutes, 0u);
	}
}

// ---------------------------------------------------------------------------
// The receiver's CE NACK, packet by packet: DATA frames written by hand
// into a receiver, its answers read back.

struct Receiver {
	Engine b;
	uint64_t now = 1000;
	uint16_t sport = 49155;

	explicit Receiver(uint32_t threshold, uint64_t window_ns = 100'000) : b(make(threshold, window_ns))
	{
		EXPECT_NE(accept_open(b, kIpA, kMacA, 1, 0, now), nullptr); // PSNs from 0
	}
	static EngineConfig make(uint32_t threshold, uint64_t window_ns)
	{
		EngineConfig c = ethereal(kIpB, kMacB);
		c.verify = false;
		c.ce_nack_threshold_pct = threshold;
		c.ce_window_ns = window_ns;
		return c;
	}
	// DATA psn (100 bytes of one long message) arrives; b's answers
	std::vector<lumen_dp_pkt> data(uint32_t psn, bool ce)
	{
		lumen_dp_pkt p{};
		std::memcpy(p.eth_src, kMacA.data(), 6);
		std::memcpy(p.eth_dst, kMacB.data(), 6);
		p.ip_src = kIpA;
		p.ip_dst = kIpB;
		p.sport = sport;
		p.dport = LUMEN_DP_UDP_PORT;
		p.ecn = ce ? LUMEN_DP_ECN_CE : LUMEN_DP_ECN_ECT0;
		p.type = LUMEN_DP_DATA;
		p.conn_id = 1;
		p.psn = psn;
		p.ts_ns = now;
		p.msg_id = 0;
		p.msg_off = psn * 100;
		p.msg_len = 1 << 20;
		uint8_t payload[100] = {};
		p.payload = payload;
		p.payload_len = sizeof(payload);
		Frame f(1600);
		int n = lumen_dp_build(f.data(), (uint32_t)f.size(), &p);
		EXPECT_GT(n, 0);
		b.rx(f.data(), (uint32_t)n, now);
		VecSink sink;
		b.tx(sink, now, 64);
		std::vector<lumen_dp_pkt> out;
		for (Frame &g : sink.frames) {
			lumen_dp_pkt a;
			EXPECT_EQ(lumen_dp_parse(g.data(), (uint32_t)g.size(), LUMEN_DP_UDP_PORT, &a), 0);
			out.push_back(a);
		}
		now += 1000;
		return out;
	}
	// one answer, an ACK (or a NACK) for the PSN expected next
	void expect(const std::vector<lumen_dp_pkt> &got, bool nack, uint32_t cum)
	{
		ASSERT_EQ(got.size(), 1u);
		EXPECT_EQ(got[0].type, nack ? LUMEN_DP_NACK : LUMEN_DP_ACK);
		EXPECT_EQ(got[0].psn, cum);
		EXPECT_EQ(got[0].echo_sport, sport);
	}
	const ConnStats &stats()
	{
		return b.connections().at(0)->stats;
	}
};

TEST(DpEthereal, ReceiverNacksAMarkedMajorityThenIgnoresTheOldPathsTail)
{
	Receiver r(50);
	for (uint32_t psn = 0; psn < 7; psn++) // fewer than kCeNackMinPkts: no judgement yet
		r.expect(r.data(psn, true), false, psn + 1);
	auto got = r.data(7, true);
	r.expect(got, true, 8); // 8 of 8 marked: NACK for the PSN expected
	EXPECT_TRUE(got[0].flags & LUMEN_DP_F_ECE);
	EXPECT_EQ(r.stats().ce_nacks_sent, 1u);
	EXPECT_EQ(r.stats().nacks_sent, 1u);
	// for a window: out-of-order packets (the old path's tail) get nothing,
	// in-order ones are taken and ACKed, marks are not counted
	EXPECT_TRUE(r.data(12, true).empty());
	EXPECT_TRUE(r.data(13, true).empty());
	EXPECT_EQ(r.stats().ooo_ignored, 2u);
	for (uint32_t psn = 8; psn < 20; psn++)
		r.expect(r.data(psn, true), false, psn + 1);
	EXPECT_EQ(r.stats().ce_nacks_sent, 1u);
	EXPECT_EQ(r.stats().dup_rcvd, 0u);
	// a window later Go-Back-N NACKs a gap again, and marks count again
	r.now += 100'000;
	r.expect(r.data(25, false), true, 20);
	EXPECT_EQ(r.stats().ce_nacks_sent, 1u);
	EXPECT_EQ(r.stats().ooo_ignored, 2u);
	for (uint32_t psn = 20; psn < 26; psn++)
		r.expect(r.data(psn, true), false, psn + 1);
	r.expect(r.data(26, true), true, 27); // 8 counted (the first 25 too), 7 marked
	EXPECT_EQ(r.stats().ce_nacks_sent, 2u);
}

TEST(DpEthereal, ReceiverNacksOnlyAboveTheThresholdAndWithinAWindow)
{
	// exactly half marked is not more than 50 %
	Receiver half(50);
	for (uint32_t psn = 0; psn < 8; psn++)
		half.expect(half.data(psn, psn % 2), false, psn + 1);
	half.expect(half.data(8, true), true, 9); // 5 of 9
	// 25 %: 3 of 8 marked is more
	Receiver quarter(25);
	for (uint32_t psn = 0; psn < 7; psn++)
		quarter.expect(quarter.data(psn, psn < 2), false, psn + 1);
	quarter.expect(quarter.data(7, true), true, 8);
	// marks spread over windows: each window judged on its own
	Receiver spread(50, 10'000);
	for (uint32_t psn = 0; psn < 40; psn++) {
		if (psn % 5 == 0)
			spread.now += 10'000; // a new window every 5 packets
		spread.expect(spread.data(psn, true), false, psn + 1);
	}
	EXPECT_EQ(spread.stats().ce_nacks_sent, 0u);
	// off: never
	Receiver off(0);
	for (uint32_t psn = 0; psn < 100; psn++)
		off.expect(off.data(psn, true), false, psn + 1);
	EXPECT_EQ(off.stats().ce_nacks_sent, 0u);
	// duplicates count too (they crossed the path) and are NACKed when they tip it
	Receiver dup(50);
	for (uint32_t psn = 0; psn < 4; psn++)
		dup.expect(dup.data(psn, true), false, psn + 1);
	for (int i = 0; i < 3; i++)
		dup.expect(dup.data(0, true), false, 4);
	dup.expect(dup.data(1, true), true, 4);
	EXPECT_EQ(dup.stats().dup_rcvd, 4u);
}

// (f) What cannot work is refused, with a message that says why.
TEST(DpEthereal, ConfigRefusesEtherealWithoutGoBackNAndBadThresholds)
{
	EngineConfig c = ethereal(kIpA, kMacA);
	EXPECT_EQ(c.validate(), "");
	c.gbn = false;
	EXPECT_NE(c.validate().find("gbn"), std::string::npos) << c.validate();
	EXPECT_NE(c.validate().find("ethereal"), std::string::npos) << c.validate();
	EXPECT_THROW(Engine e(c), std::invalid_argument);

	auto refused = [](auto change, const char *what) {
		EngineConfig d = ethereal(kIpA, kMacA);
		change(d);
		std::string e = d.validate();
		EXPECT_NE(e.find(what), std::string::npos) << "'" << e << "' should mention " << what;
	};
	refused([](EngineConfig &d) { d.ce_nack_threshold_pct = 100; }, "ce-nack");
	refused([](EngineConfig &d) { d.ce_nack_threshold_pct = 0xFFFFFFFFu; }, "ce-nack");
	refused(
		[](EngineConfig &d) {
			d.path_mode = LUMEN_PATH_REPS;
			d.gbn = false;
			d.ce_nack_threshold_pct = 50;
		},
		"gbn");
	refused([](EngineConfig &d) { d.ce_window_ns = 999; }, "ce-window");
	refused([](EngineConfig &d) { d.ce_window_ns = 1'000'000'001; }, "ce-window");
	refused([](EngineConfig &d) { d.ce_window_ns = 0; }, "ce-window");

	EngineConfig ok = ethereal(kIpA, kMacA);
	ok.ce_nack_threshold_pct = 99;
	ok.ce_window_ns = 1000;
	EXPECT_EQ(ok.validate(), "");
	ok.ce_window_ns = 1'000'000'000;
	EXPECT_EQ(ok.validate(), "");
	// the defaults: off, a 100 us window; other policies need no gbn
	EngineConfig d;
	EXPECT_EQ(d.ce_nack_threshold_pct, 0u);
	EXPECT_EQ(d.ce_window_ns, 100'000u);
	EXPECT_FALSE(d.gbn);
}

} // namespace
