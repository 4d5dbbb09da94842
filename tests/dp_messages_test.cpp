// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/dp_messages_test.cpp - lumen-dp's application interface
// (dpdk/transport/messages.h): messages from and into the application's
// memory over a network that drops, reorders, duplicates and marks, one
// completion per message with its status, receive buffers that are too
// short or missing, connections that time out or are failed, and zero copy
// through a sink that gathers.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "dp_test_net.h"
#include "transport/messages.h"

namespace lumen::dp::test
{
namespace
{

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed)
{
	std::mt19937 g(seed);
	std::vector<uint8_t> v(n);
	for (auto &b : v)
		b = (uint8_t)g();
	return v;
}

// What each side's completions said, in order.
struct Log {
	std::vector<Completion> send, recv;
	void attach(Engine &e)
	{
		e.on_complete = [this](Connection &, const Completion &d) {
			(d.kind == Completion::kSend ? send : recv).push_back(d);
		};
	}
};

// lens[k] bytes as message k from a to b on one connection, b's buffers
// posted first (cap[k] each, the message's length if 0).
struct Transfer {
	std::vector<std::vector<uint8_t>> out, in;
	Log la, lb;
	Connection *ca = nullptr, *cb = nullptr;

	void start(Net &net, const std::vector<uint32_t> &lens, std::vector<uint32_t> caps = {}, uint32_t region = 0)
	{
		la.attach(net.a);
		lb.attach(net.b);
		ca = net.a.connect(kIpB, kMacB, 7, net.now);
		cb = net.b.accept(kIpA, kMacA, 7, net.now);
		ASSERT_NE(ca, nullptr);
		ASSERT_NE(cb, nullptr);
		caps.resize(lens.size(), 0);
		for (size_t k = 0; k < lens.size(); k++) {
			out.push_back(random_bytes(lens[k], 100 + (uint32_t)k));
			in.emplace_back((caps[k] ? caps[k] : lens[k]) + 16, 0xEE); // 16 guard bytes
			ASSERT_EQ(net.b.post_recv(*cb, RecvWr{in[k].data(), caps[k] ? caps[k] : lens[k], 1000 + k},
						  net.now),
				  PostError::kOk);
		}
		for (size_t k = 0; k < lens.size(); k++)
			ASSERT_EQ(net.a.post_send(*ca, SendWr{out[k].data(), lens[k], 2000 + k, region}, net.now),
				  PostError::kOk);
	}
};

void expect_intact(const Transfer &t, const std::vector<uint32_t> &lens)
{
	ASSERT_EQ(t.la.send.size(), lens.size());
	ASSERT_EQ(t.lb.recv.size(), lens.size());
	for (size_t k = 0; k < lens.size(); k++) {
		const Completion &s = t.la.send[k], &r = t.lb.recv[k];
		EXPECT_EQ(s.status, MsgStatus::kOk);
		EXPECT_EQ(s.msg_id, k);
		EXPECT_EQ(s.user, 2000 + k);
		EXPECT_EQ(s.len, lens[k]);
		EXPECT_EQ(r.status, MsgStatus::kOk);
		EXPECT_EQ(r.msg_id, k);
		EXPECT_EQ(r.user, 1000 + k);
		EXPECT_EQ(r.len, lens[k]);
		EXPECT_EQ(std::memcmp(t.in[k].data(), t.out[k].data(), lens[k]), 0) << "message " << k;
		for (size_t i = lens[k]; i < t.in[k].size(); i++)
			ASSERT_EQ(t.in[k][i], 0xEE) << "message " << k << " wrote past its buffer";
	}
}

const std::vector<uint32_t> kLens{1, 1439, 1440, 1441, 64 * 1024, 200 * 1000 + 7, 3, 30000};

TEST(DpMessages, ApplicationBytesArriveIntactOverEveryImpairment)
{
	for (const char *spec : {"", "drop=2%,reorder=20%,reorder-delay=30us,dup=2%,ce=5%,acks"}) {
		for (bool gbn : {false, true}) {
			EngineConfig ca = config(kIpA, kMacA, gbn ? LUMEN_PATH_ETHEREAL : LUMEN_PATH_REPS);
			EngineConfig cb = config(kIpB, kMacB, gbn ? LUMEN_PATH_ETHEREAL : LUMEN_PATH_REPS);
			ca.gbn = cb.gbn = gbn;
			Net net(ca, cb, impair(spec), impair(spec));
			Transfer t;
			t.start(net, kLens);
			ASSERT_TRUE(net.run(5'000'000'000ull)) << spec << " gbn " << gbn;
			SCOPED_TRACE(std::string(spec) + (gbn ? " gbn" : " sack"));
			expect_intact(t, kLens);
			EXPECT_EQ(t.cb->stats.corrupt, 0u);
			EXPECT_EQ(t.cb->stats.rnr_drops, 0u);
			EXPECT_TRUE(t.cb->rx_wrs.empty());
		}
	}
}

TEST(DpMessages, ZeroCopySendsReadTheApplicationsMemory)
{
	Net net(config(kIpA, kMacA), config(kIpB, kMacB), impair("drop=1%"), {});
	net.gather_region = 3;
	Transfer t;
	t.start(net, kLens, {}, 3);
	ASSERT_TRUE(net.run(5'000'000'000ull));
	expect_intact(t, kLens);
	uint64_t pkts = 0;
	for (const Completion &s : t.la.send)
		pkts += s.zero_copy_pkts;
	EXPECT_EQ(pkts, t.ca->stats.data_sent); // every packet, retransmissions too
	EXPECT_EQ(t.ca->stats.zero_copy_pkts, t.ca->stats.data_sent);

	// another region than the sink gathers: copied, the same bytes
	Net copy(config(kIpA, kMacA), config(kIpB, kMacB));
	copy.gather_region = 3;
	Transfer u;
	u.start(copy, kLens, {}, 4);
	ASSERT_TRUE(copy.run(5'000'000'000ull));
	expect_intact(u, kLens);
	EXPECT_EQ(u.ca->stats.zero_copy_pkts, 0u);
}

TEST(DpMessages, ShortBuffersTruncateAndTheNextMessageStillLandsInItsOwn)
{
	Net net(config(kIpA, kMacA), config(kIpB, kMacB), impair("reorder=30%,reorder-delay=20us"), {});
	Transfer t;
	const std::vector<uint32_t> lens{10000, 5000, 10000};
	t.start(net, lens, {4000, 5000, 1});
	ASSERT_TRUE(net.run(2'000'000'000ull));
	ASSERT_EQ(t.lb.recv.size(), 3u);
	EXPECT_EQ(t.lb.recv[0].status, MsgStatus::kTruncated);
	EXPECT_EQ(t.lb.recv[0].len, 4000u);
	EXPECT_EQ(t.lb.recv[0].msg_len, 10000u);
	EXPECT_EQ(t.lb.recv[1].status, MsgStatus::kOk);
	EXPECT_EQ(t.lb.recv[2].status, MsgStatus::kTruncated);
	EXPECT_EQ(t.lb.recv[2].len, 1u);
	EXPECT_EQ(std::memcmp(t.in[0].data(), t.out[0].data(), 4000), 0);
	EXPECT_EQ(std::memcmp(t.in[1].data(), t.out[1].data(), 5000), 0);
	EXPECT_EQ(t.in[2][0], t.out[2][0]);
	for (size_t k = 0; k < 3; k++)
		for (size_t i = t.lb.recv[k].len; i < t.in[k].size(); i++)
			ASSERT_EQ(t.in[k][i], 0xEE) << k;
	for (const Completion &s : t.la.send) // the sender's bytes were delivered
		EXPECT_EQ(s.status, MsgStatus::kOk);
}

TEST(DpMessages, AMessageWithoutABufferWaitsForOne)
{
	Net net(config(kIpA, kMacA), config(kIpB, kMacB));
	Log la, lb;
	la.attach(net.a);
	lb.attach(net.b);
	Connection *ca = net.a.connect(kIpB, kMacB, 1, net.now);
	Connection *cb = net.b.accept(kIpA, kMacA, 1, net.now);
	auto msg = random_bytes(50000, 1);
	std::vector<uint8_t> first(100), second(50000);
	ASSERT_EQ(net.b.post_recv(*cb, RecvWr{first.data(), 100, 1}, net.now), PostError::kOk);
	ASSERT_EQ(net.a.post_send(*ca, SendWr{msg.data(), 100, 0, 0}, net.now), PostError::kOk);
	for (int i = 0; i < 100 && la.send.empty(); i++)
		net.step();
	ASSERT_EQ(la.send.size(), 1u);
	// the ACK offered the window of the buffers posted: none, the first
	// was filled (0, which the sender takes as 1: a probe)
	EXPECT_EQ(ca->peer_rwnd, 1u);
	const uint64_t sent_before = ca->stats.data_sent;
	ASSERT_EQ(net.a.post_send(*ca, SendWr{msg.data(), 50000, 0, 0}, net.now), PostError::kOk);
	for (int i = 0; i < 2000; i++) // 2 ms: the second message finds no buffer
		net.step();
	EXPECT_EQ(lb.recv.size(), 1u);
	EXPECT_EQ(la.send.size(), 1u);
	EXPECT_GT(cb->stats.rnr_drops, 0u);
	// one new packet went out, resent at each RTO, instead of a whole
	// congestion window of the message's 35 packets to be dropped
	EXPECT_EQ(ca->stats.data_sent - ca->stats.retransmits - sent_before, 1u);
	EXPECT_EQ(cb->stats.msgs_delivered, 1u);
	// the buffer reopens the closed window: an ACK that says so goes out at
	// once (a window update), and the message follows it without waiting
	// for the sender's RTO to resend its probe
	const uint64_t timeouts = ca->stats.timeouts, posted = net.now;
	ASSERT_EQ(net.b.post_recv(*cb, RecvWr{second.data(), 50000, 2}, net.now), PostError::kOk);
	ASSERT_TRUE(net.run(5'000'000'000ull));
	ASSERT_EQ(lb.recv.size(), 2u);
	EXPECT_EQ(lb.recv[1].user, 2u);
	EXPECT_EQ(second, msg);
	EXPECT_EQ(cb->stats.window_updates_sent, 1u);
	EXPECT_EQ(ca->stats.window_updates_rcvd, 1u);
	EXPECT_EQ(ca->stats.timeouts, timeouts) << "the message waited for an RTO";
	EXPECT_LT(lb.recv[1].done_ns - posted, ca->rto.rto_ns()) << "slower than the RTO";
	EXPECT_EQ(ca->stats.bad_acks, 0u);
}

// A window update echoes nothing, so a sender takes no RTT, path verdict,
// spurious-retransmission or congestion signal from it; a hostile one can
// only say what any ACK can (cumulative PSN, SACK, window).
TEST(DpMessages, AWindowUpdateIsNoSignalButTheWindow)
{
	Net net(config(kIpA, kMacA), config(kIpB, kMacB));
	Connection *ca = net.a.connect(kIpB, kMacB, 1, net.now);
	Connection *cb = net.b.accept(kIpA, kMacA, 1, net.now);
	auto msg = random_bytes(3000, 4);
	std::vector<uint8_t> buf(3000);
	ASSERT_EQ(net.b.post_recv(*cb, RecvWr{buf.data(), 3000, 1}, net.now), PostError::kOk);
	ASSERT_EQ(net.a.post_send(*ca, SendWr{msg.data(), 3000, 0, 0}, net.now), PostError::kOk);
	ASSERT_TRUE(net.run(1'000'000'000ull));
	const ConnStats before = ca->stats;
	const uint32_t una = ca->tx.una();
	lumen_dp_pkt p{};
	std::memcpy(p.eth_src, kMacB.data(), 6);
	std::memcpy(p.eth_dst, kMacA.data(), 6);
	p.ip_src = kIpB;
	p.ip_dst = kIpA;
	p.type = LUMEN_DP_ACK;
	p.conn_id = ca->conn_id;
	p.psn = una;
	p.rwnd = 77;
	p.sport = cb->rx_sport;
	p.dport = LUMEN_DP_UDP_PORT;
	uint8_t f[256];
	int n = lumen_dp_build(f, sizeof(f), &p);
	ASSERT_GT(n, 0);
	net.a.rx(f, (uint32_t)n, net.now + 1000);
	EXPECT_EQ(ca->stats.window_updates_rcvd, before.window_updates_rcvd + 1);
	EXPECT_EQ(ca->peer_rwnd, 77u);
	EXPECT_EQ(ca->stats.rtt_last_ns, before.rtt_last_ns);
	EXPECT_EQ(ca->stats.spurious_retx, before.spurious_retx);
	EXPECT_EQ(ca->stats.bad_acks, before.bad_acks);
	EXPECT_EQ(ca->tx.una(), una);
}

TEST(DpMessages, OneConnectionCarriesBothWays)
{
	Net net(config(kIpA, kMacA), config(kIpB, kMacB), impair("drop=1%,reorder=10%,reorder-delay=10us,acks"),
		impair("drop=1%,reorder=10%,reorder-delay=10us,acks"));
	Log la, lb;
	la.attach(net.a);
	lb.attach(net.b);
	Connection *ca = net.a.connect(kIpB, kMacB, 9, net.now);
	Connection *cb = net.b.accept(kIpA, kMacA, 9, net.now);
	auto ab = random_bytes(100000, 2), ba = random_bytes(70000, 3);
	std::vector<uint8_t> at_b(ab.size()), at_a(ba.size());
	ASSERT_EQ(net.b.post_recv(*cb, RecvWr{at_b.data(), (uint32_t)at_b.size(), 0}, net.now), PostError::kOk);
	ASSERT_EQ(net.a.post_recv(*ca, RecvWr{at_a.data(), (uint32_t)at_a.size(), 0}, net.now), PostError::kOk);
	net.a.post_send(*ca, SendWr{ab.data(), (uint32_t)ab.size(), 0, 0}, net.now);
	net.b.post_send(*cb, SendWr{ba.data(), (uint32_t)ba.size(), 0, 0}, net.now);
	for (int i = 0; i < 2'000'000 && (la.recv.empty() || lb.recv.empty() || !net.a.idle() || !net.b.idle()); i++)
		net.step();
	ASSERT_EQ(la.recv.size(), 1u);
	ASSERT_EQ(lb.recv.size(), 1u);
	EXPECT_EQ(at_b, ab);
	EXPECT_EQ(at_a, ba);
	EXPECT_EQ(la.send.size(), 1u);
	EXPECT_EQ(lb.send.size(), 1u);
}

TEST(DpMessages, AConnectionThatCannotReachItsPeerTimesOut)
{
	EngineConfig ca = config(kIpA, kMacA);
	ca.max_timeouts = 3;
	Net net(ca, config(kIpB, kMacB), impair("drop=100%"), {});
	Log la;
	la.attach(net.a);
	Connection *c = net.a.connect(kIpB, kMacB, 1, net.now);
	auto m = random_bytes(10000, 4);
	for (int k = 0; k < 3; k++)
		ASSERT_EQ(net.a.post_send(*c, SendWr{m.data(), 10000, (uint64_t)k, 0}, net.now), PostError::kOk);
	for (int i = 0; i < 1'000'000 && la.send.size() < 3; i++)
		net.step();
	ASSERT_EQ(la.send.size(), 3u);
	for (int k = 0; k < 3; k++) {
		EXPECT_EQ(la.send[k].status, MsgStatus::kTimedOut);
		EXPECT_EQ(la.send[k].user, (uint64_t)k);
	}
	EXPECT_EQ(c->stats.timeouts, 3u);
	EXPECT_TRUE(c->failed);
	EXPECT_EQ(net.a.post_send(*c, SendWr{m.data(), 10, 0, 0}, net.now), PostError::kFailed);
	uint64_t sent = c->stats.data_sent;
	for (int i = 0; i < 100000; i++)
		net.step();
	EXPECT_EQ(c->stats.data_sent, sent); // silent once failed
	EXPECT_TRUE(net.a.idle());
}

TEST(DpMessages, FailCompletesEverythingHeldAndRefusesMore)
{
	Net net(config(kIpA, kMacA), config(kIpB, kMacB), impair("drop=100%"), {});
	Log la;
	la.attach(net.a);
	Connection *c = net.a.connect(kIpB, kMacB, 1, net.now);
	std::vector<uint8_t> buf(100);
	auto m = random_bytes(5000, 5);
	net.a.post_recv(*c, RecvWr{buf.data(), 100, 7}, net.now);
	net.a.post_recv(*c, RecvWr{buf.data(), 100, 8}, net.now);
	net.a.post_send(*c, SendWr{m.data(), 5000, 1, 0}, net.now);
	net.a.post_send(*c, SendWr{m.data(), 5000, 2, 0}, net.now);
	for (int i = 0; i < 100; i++)
		net.step();
	net.a.fail(*c, MsgStatus::kAborted, net.now);
	ASSERT_EQ(la.send.size(), 2u);
	ASSERT_EQ(la.recv.size(), 2u);
	EXPECT_EQ(la.send[0].user, 1u);
	EXPECT_EQ(la.send[1].user, 2u);
	EXPECT_EQ(la.recv[0].user, 7u);
	EXPECT_EQ(la.recv[1].msg_id, 1u);
	for (const auto *v : {&la.send, &la.recv})
		for (const Completion &d : *v)
			EXPECT_EQ(d.status, MsgStatus::kAborted);
	EXPECT_EQ(net.a.post_recv(*c, RecvWr{buf.data(), 100, 0}, net.now), PostError::kFailed);
	net.a.fail(*c, MsgStatus::kAborted, net.now); // once
	EXPECT_EQ(la.send.size(), 2u);
	EXPECT_STREQ(msg_status_name(MsgStatus::kAborted), "aborted");
	EXPECT_STREQ(post_error_name(PostError::kFailed), "the connection has failed");
}

TEST(DpMessages, PostsOutOfRangeAreRefusedAndChangeNothing)
{
	Engine e(config(kIpA, kMacA));
	Connection *c = e.connect(kIpB, kMacB, 1, 0);
	uint8_t b[4];
	EXPECT_EQ(e.post_send(*c, SendWr{b, 0, 0, 0}, 0), PostError::kBadLength);
	EXPECT_EQ(e.post_send(*c, SendWr{b, (1u << 31) + 1, 0, 0}, 0), PostError::kBadLength);
	EXPECT_EQ(e.post_recv(*c, RecvWr{nullptr, 4, 0}, 0), PostError::kNoBuffer);
	EXPECT_EQ(e.post_recv(*c, RecvWr{b, 0, 0}, 0), PostError::kBadLength);
	EXPECT_TRUE(c->msgs.empty());
	EXPECT_TRUE(c->rx_wrs.empty());
	EXPECT_FALSE(c->rx_app);
	EXPECT_EQ(c->next_msg_id, 0u);
	EXPECT_TRUE(e.idle());
}

// Forged DATA: message ids far ahead or behind, offsets beyond the buffer,
// lengths that disagree. The receive buffer is never written outside it.
TEST(DpMessages, ForgedPacketsNeverWriteOutsideTheBuffer)
{
	Engine b(config(kIpB, kMacB));
	Connection *cb = b.accept(kIpA, kMacA, 1, 0);
	std::vector<uint8_t> buf(1000 + 64, 0xEE);
	ASSERT_EQ(b.post_recv(*cb, RecvWr{buf.data(), 1000, 0}, 0), PostError::kOk);
	std::mt19937 g(6);
	uint8_t payload[1400];
	std::memset(payload, 0xAB, sizeof(payload));
	for (int i = 0; i < 5000; i++) {
		lumen_dp_pkt p{};
		std::memcpy(p.eth_dst, kMacB.data(), 6);
		std::memcpy(p.eth_src, kMacA.data(), 6);
		p.ip_src = kIpA;
		p.ip_dst = kIpB;
		p.sport = 49152;
		p.dport = LUMEN_DP_UDP_PORT;
		p.type = LUMEN_DP_DATA;
		p.conn_id = 1;
		p.psn = g() % 4 ? g() % 64 : g();
		p.msg_id = g() % 3 ? g() % 3 : g();
		p.msg_off = g() % 2 ? g() % 2000 : g();
		p.payload_len = 1 + g() % 1400;
		p.msg_len = g() % 2 ? g() % 3000 + 1 : g();
		if (p.msg_off > p.msg_len || p.msg_len - p.msg_off < p.payload_len)
			p.msg_len = p.msg_off + p.payload_len; // the builder refuses what does not fit
		if (p.msg_len < p.payload_len || p.msg_len - p.payload_len < p.msg_off)
			continue;
		p.flags = g() % 2 ? LUMEN_DP_F_MSG_LAST : 0;
		p.payload = payload;
		uint8_t frame[1600];
		int n = lumen_dp_build(frame, sizeof(frame), &p);
		if (n > 0)
			b.rx(frame, (uint32_t)n, (uint64_t)i);
	}
	for (size_t i = 1000; i < buf.size(); i++)
		ASSERT_EQ(buf[i], 0xEE) << i;
}

} // namespace
} // namespace lumen::dp::test
