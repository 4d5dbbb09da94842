// dp_engine_test: two lumen-dp engines over an in-memory network with the
// impairment shim between them, on a virtual clock: delivery, integrity and
// order under loss, duplication, reordering and marking; Go-Back-N; the
// path policies' behaviour on a network with blackholed paths; hostile
// frames.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <functional>
#include <set>
#include <vector>

#include "transport/engine.h"
#include "transport/impair.h"

#include "dp_test_frames.h"
#include "dp_test_net.h"

using namespace lumen::dp;
using namespace lumen::dp::test;

namespace
{

// An ACK from b to a, to fill in and build by hand.
lumen_dp_pkt ack_from_b()
{
	lumen_dp_pkt p{};
	std::memcpy(p.eth_src, kMacB.data(), 6);
	std::memcpy(p.eth_dst, kMacA.data(), 6);
	p.ip_src = kIpB;
	p.ip_dst = kIpA;
	p.sport = 49151;
	p.dport = LUMEN_DP_UDP_PORT;
	p.type = LUMEN_DP_ACK;
	return p;
}

// ConnStats::add sums every counter (a counter it forgets reads 0 in every
// summary): all 64-bit words 1, added twice, are 2, but for the RTTs (min
// and latest) and reorder_max (a maximum).
TEST(DpEngine, ConnStatsAddSumsEveryCounter)
{
	static_assert(offsetof(ConnStats, reorder_max) % 8 == 0, "the counters are 64-bit words before reorder_max");
	constexpr size_t kWords = offsetof(ConnStats, reorder_max) / 8;
	ConnStats one, sum;
	uint64_t w[kWords];
	for (auto &x : w)
		x = 1;
	std::memcpy(static_cast<void *>(&one), w, sizeof(w));
	sum.add(one);
	sum.add(one);
	std::memcpy(w, static_cast<const void *>(&sum), sizeof(w));
	for (size_t i = 0; i < kWords; i++) {
		size_t off = i * 8;
		if (off == offsetof(ConnStats, rtt_min_ns) || off == offsetof(ConnStats, rtt_last_ns))
			EXPECT_EQ(w[i], 1u) << "word " << i;
		else
			EXPECT_EQ(w[i], 2u) << "the counter at offset " << off << " is not summed";
	}
}

TEST(DpEngine, CleanNetworkDeliversEverythingOnce)
{
	Net net(config(kIpA, kMacA), config(kIpB, kMacB));
	std::vector<std::pair<uint32_t, uint32_t>> order; // (conn, msg) as delivered
	net.b.on_complete = [&](Connection &c, const Completion &d) { order.emplace_back(c.conn_id, d.msg_id); };
	post(net, 3, 20, 64 * 1024);
	ASSERT_TRUE(net.run(2'000'000'000ull));
	expect_delivered(net, 3, 20, 64 * 1024);
	EXPECT_EQ(net.a.totals().retransmits, 0u);
	EXPECT_EQ(net.b.totals().dup_rcvd, 0u);
	// in order per connection
	std::vector<uint32_t> next(4, 0);
	for (auto [conn, id] : order)
		EXPECT_EQ(id, next[conn]++) << "connection " << conn;
}

// Eifel on a sprayed (SACK) connection: an RTO shorter than the path's RTT
// fires once; the first ACK to move una answers a packet sent before it, so
// it is counted spurious, the window comes back and what was still on its
// way is not resent (with the window back it would all go again at once).
// A clean network with an RTO above the RTT has none.
TEST(DpEngine, ASpuriousRtoIsDetectedAndTheWindowRestored)
{
	Net net(config(kIpA, kMacA), config(kIpB, kMacB));
	// the handshake's RTT (1 ms) sets the RTO; then the path slows to 6 ms
	net.latency_ns = 500'000;
	post(net, 1, 20, 64 * 1024);
	while (net.a.connections()[0]->state != ConnState::kEstablished)
		net.step();
	net.latency_ns = 3'000'000;
	ASSERT_TRUE(net.run(2'000'000'000ull));
	expect_delivered(net, 1, 20, 64 * 1024);
	ConnStats ta = net.a.totals();
	EXPECT_EQ(ta.timeouts, 1u);
	EXPECT_EQ(ta.spurious_rtos, 1u);
	EXPECT_EQ(ta.reroutes_undone, 0u); /* REPS pins nothing */
	EXPECT_EQ(net.a.connections()[0]->cc->counters().undone_timeouts, 1u);
	EXPECT_LE(ta.retransmits, 2u) << "resent what was still on its way";

	Net clean(config(kIpA, kMacA), config(kIpB, kMacB));
	post(clean, 1, 20, 64 * 1024);
	ASSERT_TRUE(clean.run(2'000'000'000ull));
	EXPECT_EQ(clean.a.totals().timeouts, 0u);
	EXPECT_EQ(clean.a.totals().spurious_rtos, 0u);
}

TEST(DpEngine, SurvivesDropDuplicateReorderAndMarks)
{
	auto imp = impair("drop=2%,dup=1%,reorder=5%,reorder-delay=40us,ce=5%,seed=3");
	Net net(config(kIpA, kMacA), config(kIpB, kMacB), imp, impair("drop=1%,acks,seed=4"));
	post(net, 2, 10, 200 * 1000 + 7);
	ASSERT_TRUE(net.run(10'000'000'000ull));
	expect_delivered(net, 2, 10, 200 * 1000 + 7);
	ConnStats ta = net.a.totals(), tb = net.b.totals();
	EXPECT_GT(ta.retransmits, 0u);
	EXPECT_GT(tb.dup_rcvd, 0u);
	EXPECT_GT(tb.reorder_max, 0u);
	EXPECT_GT(ta.ecn_echoes, 0u);
	EXPECT_GT(net.to_b.stats().dropped, 0u);
}

TEST(DpEngine, GoBackNDeliversInOrderWithNacks)
{
	EngineConfig ca = config(kIpA, kMacA, LUMEN_PATH_ECMP), cb = config(kIpB, kMacB, LUMEN_PATH_ECMP);
	ca.gbn = cb.gbn = true;
	Net net(ca, cb, impair("drop=1%,seed=5"));
	post(net, 1, 10, 100 * 1000);
	ASSERT_TRUE(net.run(10'000'000'000ull));
	expect_delivered(net, 1, 10, 100 * 1000);
	EXPECT_GT(net.b.totals().nacks_sent, 0u);
	EXPECT_GT(net.a.totals().nacks_rcvd, 0u);
	EXPECT_EQ(net.b.totals().reorder_max, 0u); // GBN accepts only the next PSN
}

// Go-Back-N: one lost packet of ten in flight. Every packet behind it
// draws a NACK for it; the first rewinds, the others echo packets sent
// before that rewind and are ignored, so each of the 8 packets from the
// lost one on is resent once (acting on every NACK resent them again).
TEST(DpEngine, GoBackNRewindsOncePerLoss)
{
	EngineConfig ca = config(kIpA, kMacA, LUMEN_PATH_ECMP), cb = config(kIpB, kMacB, LUMEN_PATH_ECMP);
	ca.gbn = cb.gbn = true;
	Net net(ca, cb);
	uint32_t data = 0;
	net.on_wire_ab = [&](Frame &f, uint64_t) {
		if (f.size() > 43 && f[43] == LUMEN_DP_DATA && ++data == 3)
			f[12] = 0x86; /* not IPv4: the receiver refuses it, as if lost */
	};
	post(net, 1, 1, 10 * net.a.config().max_payload());
	ASSERT_TRUE(net.run(1'000'000'000ull));
	expect_delivered(net, 1, 1, 10 * net.a.config().max_payload());
	ConnStats t = net.a.totals();
	EXPECT_EQ(t.nacks_rcvd, 1u);
	EXPECT_EQ(t.stale_nacks, 6u); /* PSNs 3..9 each drew one; the first acted */
	EXPECT_EQ(t.retransmits, 8u); /* PSNs 2..9 */
	EXPECT_EQ(t.timeouts, 0u);
}

// Share of a's DATA packets, in the second half of the run, on blackholed
// ports: holes on the way to b (DATA), or with ack_path on the way back
// (the ACKs, which travel on the entropy of the DATA they answer).
double blackholed_share(lumen_path_mode mode, uint64_t *timeouts, bool ack_path = false)
{
	EngineConfig ca = config(kIpA, kMacA, mode), cb = config(kIpB, kMacB, mode);
	ca.path.entropies = cb.path.entropies = 8;
	ca.path.explore_pkts = cb.path.explore_pkts = 8;
	std::string holes = "blackhole=" + std::to_string(ca.sport_base + 2) + ":" + std::to_string(ca.sport_base + 5);
	Net net(ca, cb, ack_path ? ImpairParams{} : impair(holes), ack_path ? impair(holes + ",acks") : ImpairParams{});
	post(net, 1, 40, 64 * 1024);
	EXPECT_TRUE(net.run(60'000'000'000ull)) << "mode " << mode;
	expect_delivered(net, 1, 40, 64 * 1024);
	*timeouts = net.a.totals().timeouts;
	size_t half = net.sports_ab.size() / 2, bad = 0;
	for (size_t i = half; i < net.sports_ab.size(); i++)
		bad += net.sports_ab[i] == ca.sport_base + 2 || net.sports_ab[i] == ca.sport_base + 5;
	return (double)bad / (double)(net.sports_ab.size() - half);
}

TEST(DpEngine, RepsStopsUsingBlackholedPathsOpsDoesNot)
{
	uint64_t t_ops, t_reps, t_freeze;
	double ops = blackholed_share(LUMEN_PATH_OPS, &t_ops);
	double reps = blackholed_share(LUMEN_PATH_REPS, &t_reps);
	double freeze = blackholed_share(LUMEN_PATH_REPS_FREEZE, &t_freeze);
	// OPS sprays uniformly: 2 of 8 ports, a quarter of the packets
	std::printf("blackholed share: ops %.3f reps %.3f freeze %.3f; timeouts %llu %llu %llu\n", ops, reps, freeze,
		    (unsigned long long)t_ops, (unsigned long long)t_reps, (unsigned long long)t_freeze);
	EXPECT_GT(ops, 0.15);
	// REPS recycles only entropies that came back: the holes fade out
	EXPECT_LT(reps, ops / 3);
	EXPECT_LT(freeze, ops / 3);
	EXPECT_LT(t_reps, t_ops);
}

// A failed reverse path: every ACK of a DATA packet sent on entropy 2 or 5
// is lost. With the ACKs on their DATA's entropy the connection loses some
// ACKs, never all (one fixed ACK port in the hole would stall it under any
// policy), and REPS, which recycles only entropies whose ACKs came back,
// stops using the two.
TEST(DpEngine, AcksTakeTheirDataEntropyAndRepsAvoidsADeadReversePath)
{
	uint64_t t_ops, t_reps;
	double ops = blackholed_share(LUMEN_PATH_OPS, &t_ops, true);
	double reps = blackholed_share(LUMEN_PATH_REPS, &t_reps, true);
	std::printf("reverse path holes: share ops %.3f reps %.3f; timeouts %llu %llu\n", ops, reps,
		    (unsigned long long)t_ops, (unsigned long long)t_reps);
	EXPECT_GT(ops, 0.15);
	// Less sharply than with holes on the DATA path: the DATA arrives, so
	// the cumulative ACKs that do come back open the window by more packets
	// than they return entropies, and REPS explores for the difference (the
	// seed's rule: explore when the buffer is empty), a quarter of which
	// lands in the holes again.
	EXPECT_LT(reps, ops * 0.6);

	Net net(config(kIpA, kMacA, LUMEN_PATH_OPS), config(kIpB, kMacB, LUMEN_PATH_OPS));
	post(net, 1, 4, 64 * 1024);
	ASSERT_TRUE(net.run(2'000'000'000ull));
	std::set<uint16_t> sports;
	ASSERT_FALSE(net.acks_ba.empty());
	for (auto [sport, echo] : net.acks_ba) {
		EXPECT_EQ(sport, echo);
		sports.insert(sport);
	}
	EXPECT_GT(sports.size(), 16u); // sprayed like the DATA
}

// ACKs overtaken by newer ones (cumulative PSN behind the sender's una) are
// stale for the scoreboard but not for their echoes: each still feeds its
// entropy to the path policy and its CE count to DCTCP.
TEST(DpEngine, StaleAcksStillFeedPathAndCongestionControl)
{
	Net net(config(kIpA, kMacA), config(kIpB, kMacB), impair("ce=20%,seed=6"),
		impair("reorder=30%,reorder-delay=60us,acks,seed=7"));
	post(net, 1, 10, 256 * 1024);
	ASSERT_TRUE(net.run(10'000'000'000ull));
	expect_delivered(net, 1, 10, 256 * 1024);
	ConnStats ta = net.a.totals();
	uint64_t fed = 0;
	for (const PathStats &ps : net.a.path_stats())
		fed += ps.good + ps.ecn;
	std::printf("acks %llu stale %llu bad %llu, fed to the path policy %llu\n", (unsigned long long)ta.acks_rcvd,
		    (unsigned long long)ta.stale_acks, (unsigned long long)ta.bad_acks, (unsigned long long)fed);
	EXPECT_GT(ta.stale_acks, 0u);
	EXPECT_EQ(ta.bad_acks, 0u);
	EXPECT_EQ(fed, ta.acks_rcvd); // every ACK, stale or not
	EXPECT_GT(ta.ecn_echoes, 0u);
}

// A network that reorders a lot and loses nothing, as a sprayed fabric with
// uneven queues does: the sender must not keep retransmitting what is only
// late. Counting SACKs stops at the first reordering; the echoed send time
// of a needlessly retransmitted packet widens RACK's reorder window.
TEST(DpEngine, ReorderingWithoutLossCostsFewRetransmissions)
{
	Net net(config(kIpA, kMacA, LUMEN_PATH_OPS), config(kIpB, kMacB, LUMEN_PATH_OPS),
		impair("reorder=25%,reorder-delay=30us,seed=12"));
	post(net, 1, 20, 256 * 1024);
	ASSERT_TRUE(net.run(10'000'000'000ull));
	expect_delivered(net, 1, 20, 256 * 1024);
	ConnStats ta = net.a.totals(), tb = net.b.totals();
	std::printf("sent %llu, retransmitted %llu, duplicates received %llu, needless ones seen by the sender "
		    "%llu, reorder depth %u\n",
		    (unsigned long long)ta.data_sent, (unsigned long long)ta.retransmits,
		    (unsigned long long)tb.dup_rcvd, (unsigned long long)ta.spurious_retx, tb.reorder_max);
	EXPECT_GT(tb.reorder_max, 3u); // deeper than dupthresh
	EXPECT_EQ(net.to_b.stats().dropped, 0u);
	// needless retransmissions until the window has widened: 8 % of the
	// packets with a fixed srtt/4 window, and dupthresh on
	EXPECT_LT(ta.retransmits * 50, ta.data_sent); // under 2 %
	EXPECT_GT(ta.spurious_retx, 0u); // the window widened on them
	EXPECT_LE(ta.spurious_retx, tb.dup_rcvd); // an echo never invents one
}

// PowerTCP on INT: a switch on the path stamps one hop record into each DATA
// packet's INT request (as lumen switch does), the receiver echoes it, and
// the sender's PowerTCP updates its window from INT power.
TEST(DpEngine, PowerTcpRunsOnIntStampedByASwitch)
{
	EngineConfig ca = config(kIpA, kMacA), cb = config(kIpB, kMacB);
	ca.int_slots = cb.int_slots = 2;
	ca.cc.algorithm = CcAlgorithm::kPowerTcp;
	ca.cc.mss = cb.cc.mss = ca.max_payload();
	ca.cc.host_bw_bps = 10'000'000'000ull;
	ca.cc.base_rtt_ns = 20'000;
	Net net(ca, cb);
	uint64_t tx_bytes = 0, stamped = 0;
	net.on_wire_ab = [&](Frame &f, uint64_t now) {
		lumen_dp_pkt p;
		if (lumen_dp_parse(f.data(), (uint32_t)f.size(), LUMEN_DP_UDP_PORT, &p) || !(p.flags & LUMEN_DP_F_INT))
			return;
		tx_bytes += f.size();
		lumen_int_hop hop;
		lumen_int_hop_make(&hop, now, tx_bytes, 0, lumen_int_rate_encode(10000));
		uint8_t *ext = f.data() + (p.ext - f.data());
		stamped += lumen_int_push_hop(ext, p.ext_len, &hop) >= 0;
	};
	post(net, 1, 20, 100 * 1000);
	ASSERT_TRUE(net.run(5'000'000'000ull));
	expect_delivered(net, 1, 20, 100 * 1000);
	EXPECT_GT(stamped, 1000u);
	auto *ptcp = dynamic_cast<PowerTcp *>(net.a.connections()[0]->cc.get());
	ASSERT_NE(ptcp, nullptr);
	EXPECT_GT(ptcp->event_count(LUMEN_PTCP_EVBIT_INT_UPDATES), 10u);
	EXPECT_EQ(ptcp->event_count(LUMEN_PTCP_EVBIT_RTT_UPDATES), 0u);
}

TEST(DpEngine, HostileFramesChangeNothing)
{
	Net net(config(kIpA, kMacA), config(kIpB, kMacB));
	post(net, 1, 5, 30 * 1000);
	while (net.a.connections()[0]->state != ConnState::kEstablished)
		net.step();
	// a's first DATA frame, taken off the network (its loss is recovered)
	VecSink sink(1514);
	net.a.tx(sink, net.now, 1);
	ASSERT_FALSE(sink.frames.empty());
	Frame good = sink.frames[0];
	for (int i = 0; i < 50; i++)
		net.step();
	// garbage, a truncated frame and a frame of another version
	Frame junk(100, 0xAB);
	net.b.rx(junk.data(), (uint32_t)junk.size(), net.now);
	net.b.rx(good.data(), 40, net.now);
	Frame v2 = good;
	v2[42] = 2;
	net.b.rx(v2.data(), (uint32_t)v2.size(), net.now);
	EXPECT_GE(net.b.stats().malformed, 2u);
	EXPECT_EQ(net.b.stats().bad_version, 1u);
	// an ACK from a stranger, and one acknowledging what was never sent
	lumen_dp_pkt p = ack_from_b();
	p.conn_id = 77;
	p.psn = 5;
	Frame ack(256);
	int n = lumen_dp_build(ack.data(), (uint32_t)ack.size(), &p);
	ASSERT_GT(n, 0);
	net.a.rx(ack.data(), (uint32_t)n, net.now);
	EXPECT_EQ(net.a.stats().no_conn, 1u);
	p.conn_id = 1;
	p.psn = net.a.connections()[0]->isn + 0x40000000; // far beyond anything sent
	p.pkts = 60000;
	p.ce_pkts = 60000;
	n = lumen_dp_build(ack.data(), (uint32_t)ack.size(), &p);
	net.a.rx(ack.data(), (uint32_t)n, net.now);
	EXPECT_EQ(net.a.totals().bad_acks, 1u);
	ASSERT_TRUE(net.run(2'000'000'000ull));
	expect_delivered(net, 1, 5, 30 * 1000);
}

TEST(DpEngine, RefusesConnectionsBeyondItsLimit)
{
	EngineConfig cb = config(kIpB, kMacB);
	cb.max_conns = 2;
	Net net(config(kIpA, kMacA), cb);
	post(net, 3, 1, 1000);
	for (int i = 0; i < 100; i++)
		net.step();
	EXPECT_EQ(net.b.connections().size(), 2u);
	EXPECT_GT(net.b.stats().conn_refused, 0u);
}

// Hundreds of connections (beyond what the engine keeps without prefetching,
// so the burst receive and the sender's turns fetch ahead) over a network
// that drops, duplicates and reorders, frames handed over in bursts with
// junk among them: everything arrives once, intact, in order.
TEST(DpEngine, ManyConnectionsInBursts)
{
	auto imp = impair("drop=1%,dup=1%,reorder=5%,reorder-delay=30us,seed=8");
	Net net(config(kIpA, kMacA), config(kIpB, kMacB), imp, impair("drop=1%,acks,seed=9"));
	net.burst = true;
	std::vector<uint32_t> next(301, 0);
	uint64_t out_of_order = 0;
	net.b.on_complete = [&](Connection &c, const Completion &d) { out_of_order += d.msg_id != next[c.conn_id]++; };
	post(net, 300, 4, 3000);
	ASSERT_TRUE(net.run(4'000'000'000ull));
	expect_delivered(net, 300, 4, 3000);
	EXPECT_EQ(out_of_order, 0u);
	EXPECT_GT(net.a.totals().retransmits, 0u);
	EXPECT_GT(net.b.stats().malformed, 0u); // the junk, refused
}

// Connections that all have more to send than the budget of one tx take
// turns: each one served goes to the back of the queue, so with a budget of
// 4 packets (one turn) the connections come in order, round after round.
// FIFO order (--no-randomize): the turns follow the posts
// (dp_qp_order_test.cpp checks the randomized order)
TEST(DpEngine, ConnectionsTakeTurns)
{
	EngineConfig cfg = config(kIpA, kMacA);
	cfg.randomize_order = false;
	Engine e(cfg);
	constexpr uint32_t kConns = 100;
	std::vector<Connection *> conns;
	for (uint32_t i = 0; i < kConns; i++) {
		conns.push_back(connect_open(e, kIpB, kMacB, i + 1, 0));
		ASSERT_NE(conns.back(), nullptr);
	}
	for (Connection *c : conns)
		e.post(*c, 8 * e.config().max_payload(), 0);
	for (uint32_t call = 0; call < 2 * kConns; call++) {
		VecSink sink(e.config().mtu + 14);
		ASSERT_EQ(e.tx(sink, 1000, 4), 4u);
		for (const Frame &f : sink.frames) {
			uint32_t conn = lumen_dp_get32(f.data() + LUMEN_DP_HDR_OFF + 4);
			ASSERT_EQ(conn, call % kConns + 1) << "call " << call;
		}
	}
}

TEST(DpEngine, ConfigErrorsAreClear)
{
	EngineConfig c = config(kIpA, kMacA);
	c.rx_window = 1000;
	EXPECT_NE(c.validate().find("power of two"), std::string::npos);
	EXPECT_THROW(Engine e(c), std::invalid_argument);
	c = config(kIpA, kMacA);
	c.cc.mss = 100;
	EXPECT_NE(c.validate().find("mss"), std::string::npos);
	for (lumen_path_mode spray : {LUMEN_PATH_OPS, LUMEN_PATH_REPS, LUMEN_PATH_REPS_FREEZE}) {
		c = config(kIpA, kMacA, spray);
		c.gbn = true;
		EXPECT_NE(c.validate().find("single-path"), std::string::npos) << spray;
	}
	c = config(kIpA, kMacA, LUMEN_PATH_ECMP);
	c.gbn = true;
	EXPECT_EQ(c.validate(), "");
}

TEST(DpEngine, ImpairSpecParsing)
{
	ImpairParams p;
	EXPECT_EQ(p.parse("drop=1.5%,dup=0.001,ce=100%,delay=20us,blackhole=49152:49153,acks,seed=9"), "");
	EXPECT_EQ(p.drop_ppm, 15000u);
	EXPECT_EQ(p.dup_ppm, 1000u);
	EXPECT_EQ(p.ce_ppm, 1000000u);
	EXPECT_EQ(p.delay_ns, 20000u);
	EXPECT_EQ(p.blackhole.size(), 2u);
	EXPECT_TRUE(p.ports.empty());
	EXPECT_FALSE(p.data_only);
	EXPECT_EQ(p.parse("ports=49160:49161"), "");
	EXPECT_EQ(p.ports, (std::vector<uint16_t>{49160, 49161}));
	ImpairParams q;
	EXPECT_NE(q.parse("drop=150%"), "");
	EXPECT_NE(q.parse("lose=1%"), "");
	EXPECT_NE(q.parse("blackhole=0"), "");
	EXPECT_NE(q.parse("ports="), "");
	EXPECT_NE(q.parse("ports=70000"), "");
	EXPECT_NE(q.parse("delay=5parsecs"), "");
	EXPECT_FALSE(q.active()); // failed parses change nothing
}

} // namespace

// The RTO fires when the oldest packet in flight has waited an RTO since the
// cumulative ACK last moved, not before (ACKs that move it push it later),
// backs off, and does not fire once everything is acknowledged.
TEST(DpEngine, RtoRestartsWithEachAckAndFiresAtItsDeadline)
{
	Engine a(config(kIpA, kMacA));
	Connection *c = connect_open(a, kIpB, kMacB, 1, 0);
	ASSERT_NE(c, nullptr);
	for (int i = 0; i < 4; i++)
		a.post(*c, 100, 0);
	VecSink sink(1514);
	ASSERT_EQ(a.tx(sink, 0, 32), 4u);
	uint16_t sport = (uint16_t)(sink.frames[0][34] << 8 | sink.frames[0][35]);

	lumen_dp_pkt p = ack_from_b();
	p.conn_id = 1;
	p.echo_sport = sport;
	p.pkts = 1;
	p.rwnd = 1024;
	auto ack = [&](uint32_t cum, uint64_t now) {
		Frame f(256);
		p.psn = c->isn + cum;
		p.echo_psn = c->isn + cum - 1;
		p.echo_ts = 0; // every packet went at 0
		int n = lumen_dp_build(f.data(), (uint32_t)f.size(), &p);
		ASSERT_GT(n, 0);
		a.rx(f.data(), (uint32_t)n, now);
	};
	uint64_t t = 150'000;
	ack(1, t);
	uint64_t due = t + c->rto.rto_ns();
	a.timers(due - 50'000);
	t = due - 40'000; // before the first deadline: the next ACK moves it
	ack(2, t);
	due = t + c->rto.rto_ns();
	ASSERT_GT(due, t + 150'000);
	for (uint64_t now = t; now < due; now += 7'000)
		a.timers(now);
	a.timers(due - 1);
	EXPECT_EQ(a.totals().timeouts, 0u);
	a.timers(due);
	EXPECT_EQ(a.totals().timeouts, 1u);
	// backed off: twice as long, from the timeout
	uint64_t next = due + c->rto.rto_ns();
	ASSERT_EQ(c->rto.rto_ns(), 2 * (due - t));
	a.timers(next - 1);
	EXPECT_EQ(a.totals().timeouts, 1u);
	a.timers(next);
	EXPECT_EQ(a.totals().timeouts, 2u);
	// everything acknowledged (the lost packets count as sent): no more timeouts
	ack(4, next + 1000);
	a.timers(next + 1'000'000'000ull);
	EXPECT_EQ(a.totals().timeouts, 2u);
	EXPECT_TRUE(a.idle());
}

// Every DATA frame the engine writes (first segments, last ones, short ones,
// retransmissions) is byte for byte what lumen_dp_build writes for what it
// parses to, payload included.
TEST(DpEngine, DataFramesAreWhatTheBuilderWrites)
{
	Net net(config(kIpA, kMacA), config(kIpB, kMacB), impair("drop=5%,seed=9"));
	uint64_t data = 0, retx = 0;
	net.on_wire_ab = [&](Frame &f, uint64_t) {
		lumen_dp_pkt p;
		ASSERT_EQ(lumen_dp_parse(f.data(), (uint32_t)f.size(), LUMEN_DP_UDP_PORT, &p), 0);
		if (p.type != LUMEN_DP_DATA)
			return;
		data++;
		retx += (p.flags & LUMEN_DP_F_RETX) != 0;
		Frame again(f.size() + 16, 0xEE);
		ASSERT_EQ(lumen_dp_build(again.data(), (uint32_t)again.size(), &p), (int)f.size());
		again.resize(f.size());
		EXPECT_EQ(again, f);
	};
	post(net, 3, 10, 3000); // 1440, 1440 and 120 bytes
	Connection *c = net.a.find(kIpB, 2);
	ASSERT_NE(c, nullptr);
	for (uint32_t len : {1u, 1440u, 1441u})
		net.a.post(*c, len, net.now);
	ASSERT_TRUE(net.run(2'000'000'000ull));
	EXPECT_GE(data, 3u * 10 * 3 + 4);
	EXPECT_GT(retx, 0u);
	EXPECT_EQ(net.b.totals().corrupt, 0u);
}
