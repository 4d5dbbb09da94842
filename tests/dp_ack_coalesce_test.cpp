// dp_ack_coalesce_test: folding a newer lumen-dp ACK into an older one still
// waiting for its circuit (include/lumen/dp_ack_coalesce.h) and the shell's
// bookkeeping of which ACK waits (transport/ack_coalescer.h): the fields of
// the folded frame, every refusal (older frame unchanged), the SACK bitmap
// moved to the newer PSN, PSN wrap, NACKs as barriers; then two engines whose
// ACKs wait in a queue released once per "slot": the transfer completes with
// a fraction of the ACK frames, and the sender sees every DATA packet and CE
// mark counted, as without folding.
#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <vector>

#include <lumen/dp_ack_coalesce.h>

#include "transport/ack_coalescer.h"
#include "transport/engine.h"
#include "transport/impair.h"

#include "dp_test_frames.h"

using namespace lumen::dp;
using test::Frame;

namespace
{

const Mac kMacA{2, 0, 0, 0, 0, 1}, kMacB{2, 0, 0, 0, 0, 2};
constexpr uint32_t kIpA = 0x0A000001, kIpB = 0x0A000002;

lumen_dp_pkt ack(uint32_t conn, uint32_t psn, uint64_t sack, uint16_t pkts, uint16_t ce)
{
	lumen_dp_pkt p{};
	std::memcpy(p.eth_src, kMacB.data(), 6);
	std::memcpy(p.eth_dst, kMacA.data(), 6);
	p.ip_src = kIpB;
	p.ip_dst = kIpA;
	p.sport = 49152 + (uint16_t)psn;
	p.dport = LUMEN_DP_UDP_PORT;
	p.type = LUMEN_DP_ACK;
	p.conn_id = conn;
	p.psn = psn;
	p.sack = sack;
	p.pkts = pkts;
	p.ce_pkts = ce;
	p.echo_ts = 1000 + psn;
	p.echo_psn = psn - 1;
	p.echo_sport = (uint16_t)(50000 + psn);
	p.rwnd = (uint16_t)(4000 - psn);
	return p;
}

Frame build(const lumen_dp_pkt &p)
{
	Frame f(256);
	int n = lumen_dp_build(f.data(), (uint32_t)f.size(), &p);
	EXPECT_GT(n, 0);
	f.resize(n > 0 ? (size_t)n : 0);
	return f;
}

lumen_dp_pkt parse(const Frame &f)
{
	lumen_dp_pkt p{};
	EXPECT_EQ(lumen_dp_parse(f.data(), (uint32_t)f.size(), LUMEN_DP_UDP_PORT, &p), 0);
	return p;
}

int fold(Frame &older, const Frame &newer)
{
	return lumen_dp_ack_fold(older.data(), (uint32_t)older.size(), newer.data(), (uint32_t)newer.size(),
				 LUMEN_DP_UDP_PORT);
}

TEST(DpAckFold, NewerFieldsSummedCountsMergedSack)
{
	// older: next expected 100, 102 and 104 received; newer: 103 expected, 104 and 106
	Frame older = build(ack(7, 100, 0b1010, 3, 1)), newer = build(ack(7, 103, 0b1010, 4, 2));
	ASSERT_EQ(fold(older, newer), LUMEN_DP_FOLDED);
	lumen_dp_pkt p = parse(older), n = parse(newer);
	EXPECT_EQ(p.psn, 103u);
	EXPECT_EQ(p.pkts, 7u);
	EXPECT_EQ(p.ce_pkts, 3u);
	// older's 104 (bit 3) is newer's bit 0; older's 102 is behind 103
	EXPECT_EQ(p.sack, 0b1011u);
	EXPECT_EQ(p.echo_ts, n.echo_ts);
	EXPECT_EQ(p.echo_psn, n.echo_psn);
	EXPECT_EQ(p.echo_sport, n.echo_sport);
	EXPECT_EQ(p.rwnd, n.rwnd);
	EXPECT_EQ(p.sport, n.sport);
	EXPECT_EQ(older.size(), newer.size());
}

TEST(DpAckFold, SamePsnAndFarAhead)
{
	Frame older = build(ack(7, 100, 0b100, 1, 0)), newer = build(ack(7, 100, 0b110, 1, 1));
	ASSERT_EQ(fold(older, newer), LUMEN_DP_FOLDED);
	EXPECT_EQ(parse(older).sack, 0b110u);
	EXPECT_EQ(parse(older).pkts, 2u);
	// 64 and more ahead: nothing of the older bitmap is still above the newer PSN
	older = build(ack(7, 100, ~0ull, 1, 0));
	newer = build(ack(7, 165, 0, 1, 0));
	ASSERT_EQ(fold(older, newer), LUMEN_DP_FOLDED);
	EXPECT_EQ(parse(older).sack, 0u);
	older = build(ack(7, 100, ~0ull, 1, 0));
	newer = build(ack(7, 164, 0, 1, 0));
	ASSERT_EQ(fold(older, newer), LUMEN_DP_FOLDED);
	EXPECT_EQ(parse(older).sack, 0u); // bit 63 was PSN 164, now expected
	older = build(ack(7, 100, ~0ull, 1, 0));
	newer = build(ack(7, 163, 0, 1, 0));
	ASSERT_EQ(fold(older, newer), LUMEN_DP_FOLDED);
	EXPECT_EQ(parse(older).sack, 1u); // PSN 164
}

TEST(DpAckFold, PsnWraps)
{
	Frame older = build(ack(7, 0xFFFFFFFEu, 0b1000, 1, 0)), newer = build(ack(7, 1, 0, 1, 0));
	ASSERT_EQ(fold(older, newer), LUMEN_DP_FOLDED);
	// older bit 3 is PSN 0xFFFFFFFE + 4 = 2, newer's bit 0
	EXPECT_EQ(parse(older).sack, 1u);
	EXPECT_EQ(parse(older).psn, 1u);
}

TEST(DpAckFold, RefusalsLeaveTheOlderFrameAlone)
{
	const Frame base = build(ack(7, 100, 0, 3, 1));
	auto refused = [&](const Frame &newer, int why) {
		Frame older = base;
		EXPECT_EQ(fold(older, newer), why);
		EXPECT_EQ(older, base);
	};
	refused(build(ack(8, 101, 0, 1, 0)), LUMEN_DP_FOLD_ECONN);
	lumen_dp_pkt p = ack(7, 101, 0, 1, 0);
	p.ip_dst = kIpB + 1;
	refused(build(p), LUMEN_DP_FOLD_ECONN);
	p = ack(7, 101, 0, 1, 0);
	p.ip_src = kIpA + 5;
	refused(build(p), LUMEN_DP_FOLD_ECONN);
	p = ack(7, 101, 0, 1, 0);
	p.eth_dst[5] = 9;
	refused(build(p), LUMEN_DP_FOLD_ECONN);
	p = ack(7, 101, 0, 1, 0);
	p.type = LUMEN_DP_NACK;
	refused(build(p), LUMEN_DP_FOLD_ETYPE);
	refused(build(ack(7, 99, 0, 1, 0)), LUMEN_DP_FOLD_EBEHIND);
	refused(build(ack(7, 100 + 0x80000000u, 0, 1, 0)), LUMEN_DP_FOLD_EBEHIND);
	refused(build(ack(7, 101, 0, 0xFFFF, 0)), LUMEN_DP_FOLD_ECOUNT);
	refused(build(ack(7, 101, 0, 2, 0xFFFF)), LUMEN_DP_FOLD_ECOUNT);
	// an INT echo makes it longer: its booking was for the shorter frame (an
	// echo of either INT version)
	for (unsigned version : {LUMEN_INT_VERSION, LUMEN_INT_VERSION_WIDE}) {
		SCOPED_TRACE(testing::Message() << "INT version " << version);
		p = ack(7, 101, 0, 1, 0);
		uint8_t opt[LUMEN_INT_MAX_LEN] = {};
		lumen_int_opt req{};
		req.version = (uint8_t)version;
		req.slots = req.count = 1;
		lumen_int_hop_make_v(&req.hops[0], version, 5000, 1500, 3000, lumen_int_rate_encode(25000));
		int olen = lumen_int_write_echo(opt, sizeof(opt), &req);
		ASSERT_EQ(olen, (int)lumen_int_opt_len(version, 1));
		p.flags = LUMEN_DP_F_INT;
		p.ext = opt;
		p.ext_len = (uint32_t)olen;
		refused(build(p), LUMEN_DP_FOLD_ELEN);
	}
	// bytes that do not parse, either way round
	Frame junk = base;
	junk[24] ^= 0xFF; // the IPv4 header checksum
	refused(junk, LUMEN_DP_FOLD_EPARSE);
	Frame older = junk;
	EXPECT_EQ(fold(older, build(ack(7, 101, 0, 1, 0))), LUMEN_DP_FOLD_EPARSE);
	EXPECT_EQ(older, junk);
	refused(Frame(base.begin(), base.end() - 1), LUMEN_DP_FOLD_EPARSE);
	// a DATA frame is not an ACK
	p = ack(7, 101, 0, 1, 0);
	p.type = LUMEN_DP_DATA;
	p.msg_len = 1;
	uint8_t payload = 1;
	p.payload = &payload;
	p.payload_len = 1;
	refused(build(p), LUMEN_DP_FOLD_ETYPE);
}

TEST(AckCoalescer, FoldsIntoTheQueuedAckUntilItLeaves)
{
	AckCoalescer c;
	Frame q1 = build(ack(7, 100, 0, 1, 0)), q2 = build(ack(9, 10, 0, 1, 0));
	Frame n1 = build(ack(7, 101, 0, 1, 0));
	EXPECT_FALSE(c.fold(n1.data(), (uint32_t)n1.size())) << "nothing queued yet";
	c.queued(q1.data(), (uint32_t)q1.size());
	c.queued(q2.data(), (uint32_t)q2.size());
	EXPECT_EQ(c.targets(), 2u);
	EXPECT_TRUE(c.fold(n1.data(), (uint32_t)n1.size()));
	EXPECT_EQ(parse(q1).psn, 101u);
	EXPECT_EQ(parse(q1).pkts, 2u);
	EXPECT_EQ(parse(q2).psn, 10u) << "another connection's ACK untouched";
	// a frame of the same connection that is not the target leaving changes nothing
	Frame other = q1;
	c.left(other.data(), (uint32_t)other.size());
	EXPECT_EQ(c.targets(), 2u);
	c.left(q1.data(), (uint32_t)q1.size());
	EXPECT_EQ(c.targets(), 1u);
	Frame n2 = build(ack(7, 102, 0, 1, 0));
	EXPECT_FALSE(c.fold(n2.data(), (uint32_t)n2.size())) << "the target left";
	EXPECT_EQ(parse(q1).psn, 101u);
}

TEST(AckCoalescer, NacksAreBarriersAndOthersIgnored)
{
	AckCoalescer c;
	Frame q = build(ack(7, 100, 0, 1, 0));
	c.queued(q.data(), (uint32_t)q.size());
	lumen_dp_pkt p = ack(7, 100, 0, 0, 0);
	p.type = LUMEN_DP_NACK;
	Frame nack = build(p);
	EXPECT_FALSE(c.fold(nack.data(), (uint32_t)nack.size())) << "a NACK is never folded";
	c.queued(nack.data(), (uint32_t)nack.size());
	Frame n = build(ack(7, 101, 0, 1, 0));
	EXPECT_FALSE(c.fold(n.data(), (uint32_t)n.size())) << "an ACK after a queued NACK stays behind it";
	EXPECT_EQ(parse(q).psn, 100u);
	// a refused fold: the newer one is queued and becomes the target
	Frame longer = build(ack(7, 99, 0, 1, 0));
	EXPECT_FALSE(c.fold(longer.data(), (uint32_t)longer.size()));
	c.queued(n.data(), (uint32_t)n.size());
	Frame n2 = build(ack(7, 102, 0, 1, 0));
	EXPECT_TRUE(c.fold(n2.data(), (uint32_t)n2.size()));
	EXPECT_EQ(parse(n).psn, 102u);
	// runts, non-IPv4 and non-UDP frames are not keys
	Frame runt(30, 0), arp = q, tcp = q;
	arp[13] = 0x06;
	tcp[23] = 6;
	for (Frame *f : {&runt, &arp, &tcp}) {
		EXPECT_FALSE(c.fold(f->data(), (uint32_t)f->size()));
		c.queued(f->data(), (uint32_t)f->size());
		c.left(f->data(), (uint32_t)f->size());
	}
	EXPECT_EQ(c.targets(), 1u);
}

// b's ACKs to a wait in a queue that a "circuit" empties every slot_ns;
// with folding, each connection's ACKs in the queue are one frame.
struct CircuitNet {
	Engine a, b;
	Impairment marks; // CE marks on a's DATA
	AckCoalescer coalescer;
	bool fold = true;
	std::deque<Frame> voq; // b -> a, until the circuit comes
	uint64_t now = 0, slot_ns = 200'000;
	uint64_t acks_built = 0, acks_sent = 0, pkts_built = 0, ce_built = 0, pkts_sent = 0, ce_sent = 0;

	CircuitNet(const EngineConfig &ca, const EngineConfig &cb, const ImpairParams &ia)
	    : a(ca), b(cb), marks(ia, ca.udp_port)
	{
	}

	void step()
	{
		now += 1000;
		test::VecSink sa(a.config().mtu + 14), sb(b.config().mtu + 14);
		a.tx(sa, now, 32);
		for (Frame &f : sa.frames) {
			Verdict v = marks.judge(f.data(), (uint32_t)f.size());
			if (v.ce)
				Impairment::mark_ce(f.data(), (uint32_t)f.size());
			b.rx(f.data(), (uint32_t)f.size(), now);
		}
		b.tx(sb, now, 32);
		for (Frame &f : sb.frames) {
			lumen_dp_pkt p = parse(f);
			acks_built++;
			pkts_built += p.pkts;
			ce_built += p.ce_pkts;
			if (fold && coalescer.fold(f.data(), (uint32_t)f.size()))
				continue;
			voq.push_back(f);
			coalescer.queued(voq.back().data(), (uint32_t)voq.back().size());
		}
		if (now % slot_ns == 0) {
			while (!voq.empty()) {
				Frame &f = voq.front();
				coalescer.left(f.data(), (uint32_t)f.size());
				lumen_dp_pkt p = parse(f);
				pkts_sent += p.pkts;
				ce_sent += p.ce_pkts;
				a.rx(f.data(), (uint32_t)f.size(), now);
				acks_sent++;
				voq.pop_front();
			}
		}
		a.timers(now);
		b.timers(now);
	}
};

EngineConfig config(uint32_t ip, const Mac &mac)
{
	EngineConfig c;
	c.ip = ip;
	c.mac = mac;
	c.cc.mss = c.max_payload();
	c.seed = ip;
	c.rto.min_ns = c.rto.initial_ns = 5'000'000; // an ACK waits up to a slot
	return c;
}

TEST(AckCoalescer, EnginesCompleteWithFewerAcksAndTheSameCounts)
{
	ImpairParams ce;
	ASSERT_EQ(ce.parse("ce=10%,seed=3"), "");
	uint64_t sent[2] = {}, built[2] = {};
	for (int f = 0; f < 2; f++) {
		CircuitNet net(config(kIpA, kMacA), config(kIpB, kMacB), ce);
		net.fold = f == 1;
		for (uint32_t i = 0; i < 2; i++) {
			Connection *c = net.a.connect(kIpB, kMacB, i + 1, net.now);
			ASSERT_NE(c, nullptr);
			for (int k = 0; k < 20; k++)
				net.a.post(*c, 64 * 1024, net.now);
		}
		while (net.now < 2'000'000'000ull && !(net.a.idle() && net.voq.empty()))
			net.step();
		ASSERT_TRUE(net.a.idle()) << (f ? "folded" : "plain");
		ConnStats ta = net.a.totals(), tb = net.b.totals();
		EXPECT_EQ(ta.msgs_acked, 40u);
		EXPECT_EQ(tb.msgs_delivered, 40u);
		EXPECT_EQ(tb.bytes_delivered, 40u * 64 * 1024);
		EXPECT_EQ(ta.retransmits, 0u);
		EXPECT_EQ(ta.timeouts, 0u);
		// what the sender's congestion control counts: every DATA packet and
		// every CE mark the receiver reported, folded or not
		EXPECT_EQ(net.pkts_sent, net.pkts_built);
		EXPECT_EQ(net.ce_sent, net.ce_built);
		EXPECT_GT(net.ce_built, 0u);
		sent[f] = net.acks_sent;
		built[f] = net.acks_built;
		if (f == 1) {
			EXPECT_LE(net.acks_sent * 4, net.acks_built)
				<< "at most a quarter of the ACKs cross: one per connection per slot";
		}
	}
	EXPECT_EQ(sent[0], built[0]);
	EXPECT_LT(sent[1], sent[0]);
}

} // namespace
