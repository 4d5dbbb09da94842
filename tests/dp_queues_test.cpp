// dp_queues_test: how lumen-dp shares a port among queues (dpdk/transport/queues.h):
// the port of each queue and back, the limits, reading the destination port
// of a frame (and refusing what has none), the split of connections over the
// queues; and two hosts of two queues each, an engine per queue, whose
// frames are delivered to the queue their destination port names: every
// connection stays on one queue at both ends, ACKs included, whatever its
// sprayed source ports.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "transport/engine.h"
#include "transport/queues.h"

#include "dp_test_frames.h"

using namespace lumen::dp;

namespace
{

using test::Frame;
using test::VecSink;

TEST(DpQueues, PortOfQueueAndBack)
{
	for (uint16_t n = 1; n <= kMaxQueues; n++)
		for (uint16_t q = 0; q < n; q++)
			EXPECT_EQ(queue_of_udp_port(queue_udp_port(4792, q), 4792, n), q);
	EXPECT_EQ(queue_of_udp_port(4791, 4792, 4), -1); // below the base
	EXPECT_EQ(queue_of_udp_port(4796, 4792, 4), -1); // one past the last queue
	EXPECT_EQ(queue_of_udp_port(0, 1, 1), -1);
	EXPECT_EQ(queue_of_udp_port(65535, 65535, 1), 0);
	EXPECT_EQ(queue_of_udp_port(4792, 4792, 1), 0); // one queue: the default port, as before
}

TEST(DpQueues, Validate)
{
	EXPECT_EQ(queues_validate(4792, 1), "");
	EXPECT_EQ(queues_validate(4792, kMaxQueues), "");
	EXPECT_EQ(queues_validate(65520, kMaxQueues), ""); // 65520..65535
	EXPECT_NE(queues_validate(65521, kMaxQueues), "");
	EXPECT_NE(queues_validate(65535, 2).find("pass 65535"), std::string::npos);
	EXPECT_NE(queues_validate(4792, 0), "");
	EXPECT_NE(queues_validate(4792, kMaxQueues + 1), "");
	EXPECT_NE(queues_validate(0, 1), "");
}

// A UDP/IPv4 frame to dport, as lumen_dp_build writes it.
Frame udp_frame(uint16_t dport)
{
	static const uint8_t payload[4] = {1, 2, 3, 4};
	lumen_dp_pkt p;
	std::memset(&p, 0, sizeof(p));
	p.ip_src = 0x0A000001;
	p.ip_dst = 0x0A000002;
	p.sport = 49153;
	p.dport = dport;
	p.type = LUMEN_DP_DATA;
	p.msg_len = 4;
	p.payload = payload;
	p.payload_len = 4;
	Frame f(128);
	int n = lumen_dp_build(f.data(), (uint32_t)f.size(), &p);
	EXPECT_GT(n, 0);
	f.resize((size_t)n);
	return f;
}

TEST(DpQueues, FrameDport)
{
	Frame f = udp_frame(4793);
	EXPECT_EQ(frame_udp_dport(f.data(), (uint32_t)f.size()), 4793);
	// the UDP header is all it needs
	EXPECT_EQ(frame_udp_dport(f.data(), LUMEN_DP_HDR_OFF), 4793);
	EXPECT_EQ(frame_udp_dport(f.data(), LUMEN_DP_HDR_OFF - 1), -1);
	EXPECT_EQ(frame_udp_dport(f.data(), 10), -1);

	Frame g = f; // IPv4 options: the UDP header is further on
	g[LUMEN_DP_IP_OFF] = 0x46;
	g.insert(g.begin() + LUMEN_DP_UDP_OFF, 4, 0);
	EXPECT_EQ(frame_udp_dport(g.data(), (uint32_t)g.size()), 4793);
	g[LUMEN_DP_IP_OFF] = 0x44; // IHL below 5
	EXPECT_EQ(frame_udp_dport(g.data(), (uint32_t)g.size()), -1);

	Frame h = f;
	h[LUMEN_DP_IP_OFF + 9] = 6; // TCP
	EXPECT_EQ(frame_udp_dport(h.data(), (uint32_t)h.size()), -1);
	h = f;
	h[12] = 0x86; // IPv6 ethertype
	h[13] = 0xDD;
	EXPECT_EQ(frame_udp_dport(h.data(), (uint32_t)h.size()), -1);
	h = f;
	h[LUMEN_DP_IP_OFF + 7] = 0x10; // fragment offset 16: no UDP header here
	EXPECT_EQ(frame_udp_dport(h.data(), (uint32_t)h.size()), -1);
	h = f;
	h[LUMEN_DP_IP_OFF + 6] = 0x20; // MF on the first fragment: it has the header
	EXPECT_EQ(frame_udp_dport(h.data(), (uint32_t)h.size()), 4793);
}

TEST(DpQueues, ConnShareCoversEveryConnectionOnce)
{
	for (uint16_t n = 1; n <= kMaxQueues; n++)
		for (uint32_t conns : {1u, 2u, 3u, 7u, 16u, 17u, 1000u}) {
			uint32_t next = 101, min = UINT32_MAX, max = 0;
			for (uint16_t q = 0; q < n; q++) {
				ConnShare s = conn_share(conns, n, q, 101);
				EXPECT_EQ(s.first_id, next) << n << " queues, " << conns << " conns, queue " << q;
				next += s.count;
				min = std::min(min, s.count);
				max = std::max(max, s.count);
			}
			EXPECT_EQ(next, 101 + conns);
			EXPECT_LE(max - min, 1u); // as even as it gets
		}
	EXPECT_EQ(conn_share(5, 2, 0, 1).count, 3u);
	EXPECT_EQ(conn_share(5, 2, 1, 1).first_id, 4u);
}

// A host of two queues: an engine per queue on ports base and base + 1.
struct QueuedHost {
	std::vector<std::unique_ptr<Engine>> q;
	QueuedHost(uint32_t ip, uint8_t mac_last, uint16_t base, uint16_t queues)
	{
		q.reserve(queues);
		for (uint16_t i = 0; i < queues; i++) {
			EngineConfig c;
			c.ip = ip;
			c.mac = Mac{2, 0, 0, 0, 0, mac_last};
			c.udp_port = queue_udp_port(base, i);
			c.cc.mss = c.max_payload();
			c.seed = ip * 31 + i;
			q.push_back(std::make_unique<Engine>(c));
		}
	}
};

// Frames from one host to the other, each to the queue its destination port
// names, as rte_flow or software steering deliver them; returns how many.
size_t deliver(QueuedHost &from, QueuedHost &to, uint16_t base, uint64_t now, std::vector<uint64_t> *per_queue)
{
	size_t n = 0;
	for (auto &e : from.q) {
		VecSink sink;
		e->tx(sink, now, 64);
		for (const Frame &f : sink.frames) {
			int q = queue_of_udp_port((uint16_t)frame_udp_dport(f.data(), (uint32_t)f.size()), base,
						  (uint16_t)to.q.size());
			EXPECT_GE(q, 0);
			if (q < 0)
				continue;
			(*per_queue)[(size_t)q]++;
			to.q[(size_t)q]->rx(f.data(), (uint32_t)f.size(), now);
			n++;
		}
	}
	return n;
}

TEST(DpQueues, ConnectionsStayOnTheirQueueAtBothEnds)
{
	const uint16_t base = 5000, queues = 2;
	const uint32_t ip_a = 0x0A000001, ip_b = 0x0A000002, conns = 6, msg = 20000;
	QueuedHost a(ip_a, 1, base, queues), b(ip_b, 2, base, queues);
	uint64_t acked = 0;
	for (uint16_t q = 0; q < queues; q++) {
		Engine &e = *a.q[q];
		e.on_complete = [&](Connection &, const Completion &d) { acked += d.kind == Completion::kSend; };
		ConnShare s = conn_share(conns, queues, q, 1);
		for (uint32_t i = 0; i < s.count; i++) {
			Connection *c = e.connect(ip_b, Mac{2, 0, 0, 0, 0, 2}, s.first_id + i, 0);
			ASSERT_NE(c, nullptr);
			e.post(*c, msg, 0);
		}
	}
	std::vector<uint64_t> to_b(queues), to_a(queues);
	uint64_t now = 0;
	for (int round = 0; round < 10000 && acked < conns; round++) {
		now += 10000;
		deliver(a, b, base, now, &to_b);
		deliver(b, a, base, now, &to_a);
		for (auto *h : {&a, &b})
			for (auto &e : h->q)
				e->timers(now);
	}
	ASSERT_EQ(acked, conns);
	for (uint16_t q = 0; q < queues; q++) {
		// each queue's connections at both ends, and only those
		ConnShare s = conn_share(conns, queues, q, 1);
		ASSERT_EQ(b.q[q]->connections().size(), s.count) << "queue " << q;
		for (const auto &c : b.q[q]->connections()) {
			EXPECT_GE(c->conn_id, s.first_id);
			EXPECT_LT(c->conn_id, s.first_id + s.count);
			EXPECT_EQ(c->stats.msgs_delivered, 1u);
			EXPECT_EQ(c->stats.bytes_delivered, msg);
		}
		EXPECT_GT(to_b[q], 0u);
		EXPECT_GT(to_a[q], 0u); // the ACKs came back to the queue that sent
		EXPECT_EQ(a.q[q]->stats().malformed + b.q[q]->stats().malformed, 0u);
		EXPECT_EQ(a.q[q]->stats().no_conn + b.q[q]->stats().no_conn, 0u);
	}
}

TEST(DpQueues, AnEngineRefusesAnotherQueuesPort)
{
	QueuedHost b(0x0A000002, 2, 4792, 2);
	Frame f = udp_frame(4793);
	b.q[0]->rx(f.data(), (uint32_t)f.size(), 0);
	EXPECT_EQ(b.q[0]->stats().refused[LUMEN_DP_EUDP_PORT], 1u);
	EXPECT_TRUE(b.q[0]->connections().empty());
}

} // namespace
