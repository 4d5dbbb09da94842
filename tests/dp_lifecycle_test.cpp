// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/dp_lifecycle_test.cpp - a lumen-dp connection's lifecycle
// (engine.h's "Lifecycle", engine_lifecycle.cpp): forged DATA and SYNs
// allocate nothing, a handshake opens it at a random initial PSN, a client
// run again against a server that still holds its old connections is a new
// incarnation, DATA for a connection gone resets its sender (and a forged
// reset does not), close frees both ends and their slots, idle connections
// expire, and the connection table erases without losing anyone.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "dp_test_frames.h"
#include "transport/engine.h"

namespace lumen::dp::test
{
namespace
{

const Mac kMacA{2, 0, 0, 0, 0, 1}, kMacB{2, 0, 0, 0, 0, 2};
constexpr uint32_t kIpA = 0x0A000001, kIpB = 0x0A000002;

EngineConfig cfg_of(uint32_t ip, const Mac &mac)
{
	EngineConfig c;
	c.ip = ip;
	c.mac = mac;
	c.cc.mss = c.max_payload();
	c.seed = ip;
	return c;
}

// Two engines on a lossless wire without delay, a's replaceable (a client
// process that runs again): each step moves what each one sends.
struct Wire {
	std::unique_ptr<Engine> a;
	Engine b;
	uint64_t now = 1000;
	std::vector<Frame> to_a; // what b sent, for the tests that look
	explicit Wire(const EngineConfig &cb = cfg_of(kIpB, kMacB))
	    : a(std::make_unique<Engine>(cfg_of(kIpA, kMacA))), b(cb)
	{
	}
	static std::vector<Frame> out(Engine &e, uint64_t now)
	{
		VecSink s(e.config().mtu + 14);
		e.tx(s, now, 256);
		return s.frames;
	}
	void step(uint64_t dt = 1000)
	{
		now += dt;
		for (Frame &f : out(*a, now))
			b.rx(f.data(), (uint32_t)f.size(), now);
		to_a = out(b, now);
		for (Frame &f : to_a)
			a->rx(f.data(), (uint32_t)f.size(), now);
		a->timers(now);
		b.timers(now);
	}
	bool run_until(const std::function<bool()> &done, int steps = 100000)
	{
		for (int i = 0; i < steps && !done(); i++)
			step();
		return done();
	}
};

// A frame from src (a's MAC) to b of type, the fields set by fill.
Frame frame_to_b(uint32_t src, uint8_t type, uint32_t conn, uint32_t psn,
		 const std::function<void(lumen_dp_pkt &)> &fill = nullptr)
{
	lumen_dp_pkt p{};
	std::memcpy(p.eth_src, kMacA.data(), 6);
	std::memcpy(p.eth_dst, kMacB.data(), 6);
	p.ip_src = src;
	p.ip_dst = kIpB;
	p.sport = 49152;
	p.dport = LUMEN_DP_UDP_PORT;
	p.type = type;
	p.conn_id = conn;
	p.psn = psn;
	uint8_t payload[100] = {};
	if (type == LUMEN_DP_DATA) {
		p.msg_len = sizeof payload;
		p.payload = payload;
		p.payload_len = sizeof payload;
	}
	if (fill)
		fill(p);
	Frame f(256);
	int n = lumen_dp_build(f.data(), (uint32_t)f.size(), &p);
	f.resize(n > 0 ? (size_t)n : 0);
	return f;
}

Frame data_frame(uint32_t src, uint32_t conn, uint32_t psn)
{
	return frame_to_b(src, LUMEN_DP_DATA, conn, psn);
}

Frame ctrl_frame(uint32_t src, uint8_t type, uint8_t flags, uint32_t conn, uint32_t psn, uint32_t cookie)
{
	return frame_to_b(src, type, conn, psn, [&](lumen_dp_pkt &p) {
		p.flags = flags;
		p.cookie = cookie;
	});
}

TEST(DpLifecycle, ForgedDataAndSynsAllocateNothing)
{
	Engine b(cfg_of(kIpB, kMacB));
	std::mt19937 rng(3);
	for (int i = 0; i < 20000; i++) {
		Frame f = data_frame(0x0A000000 | (rng() & 0xFFFF), rng(), rng());
		b.rx(f.data(), (uint32_t)f.size(), 1000);
	}
	EXPECT_EQ(b.live_connections(), 0u);
	EXPECT_EQ(b.stats().conns_opened, 0u);
	EXPECT_EQ(b.stats().unknown_data, 20000u);
	// answered with resets, at most a bounded queue of them
	EXPECT_EQ(b.stats().resets_sent, 20000u);
	EXPECT_GT(b.stats().ctrl_dropped, 0u);
	EXPECT_LE(Wire::out(b, 1000).size(), Engine::kMaxCtrlDue);
	// SYNs: each answered with a cookie, nothing kept; echoes of a wrong
	// cookie (or of none) open nothing
	for (uint32_t i = 0; i < 500; i++) {
		Frame syn = ctrl_frame(kIpA, LUMEN_DP_SYN, 0, i, i * 7, 0);
		b.rx(syn.data(), (uint32_t)syn.size(), 2000);
		Frame echo = ctrl_frame(kIpA, LUMEN_DP_SYN, LUMEN_DP_F_COOKIE, i, i * 7, 0x1234 + i);
		b.rx(echo.data(), (uint32_t)echo.size(), 2000);
	}
	EXPECT_EQ(b.stats().cookies_sent, 500u);
	EXPECT_GE(b.stats().bad_cookies, 499u); // one in 2^32 might guess
	EXPECT_LE(b.live_connections(), 1u);
}

TEST(DpLifecycle, AHandshakeOpensAtARandomInitialPsn)
{
	Wire w;
	Connection *c = w.a->connect(kIpB, kMacB, 1, w.now);
	ASSERT_NE(c, nullptr);
	EXPECT_EQ(c->state, ConnState::kSynSent);
	for (int i = 0; i < 5; i++)
		w.a->post(*c, 10'000, w.now);
	ASSERT_TRUE(w.run_until([&] { return w.a->idle(); }));
	EXPECT_EQ(c->state, ConnState::kEstablished);
	Connection *s = w.b.find(kIpA, 1);
	ASSERT_NE(s, nullptr);
	EXPECT_EQ(s->isn, c->isn);
	EXPECT_EQ(s->stats.msgs_delivered, 5u);
	EXPECT_EQ(s->rx.cum(), c->tx.nxt()); // both count from the same initial PSN
	EXPECT_EQ(w.b.stats().cookies_sent, 1u);
	EXPECT_EQ(w.b.stats().bad_cookies, 0u);
	EXPECT_EQ(c->stats.handshake_retries, 0u);
	// initial PSNs differ per connection (2^-32 each to be equal)
	Connection *d = w.a->connect(kIpB, kMacB, 2, w.now);
	ASSERT_NE(d, nullptr);
	EXPECT_NE(d->isn, c->isn);
}

// A client process ends without closing and runs again with the same
// connection ids; the server still holds the old ones. Before the
// lifecycle, the new client's PSNs started at 0 again and the server's
// ACKs for the old stream stalled it ("bad ACK").
TEST(DpLifecycle, AClientRunAgainIsANewIncarnation)
{
	Wire w;
	for (int run = 0; run < 3; run++) {
		w.a = std::make_unique<Engine>(cfg_of(kIpA, kMacA)); // a new process
		std::vector<Connection *> cs;
		for (uint32_t id = 1; id <= 4; id++) {
			cs.push_back(w.a->connect(kIpB, kMacB, id, w.now));
			ASSERT_NE(cs.back(), nullptr);
			for (int k = 0; k < 3; k++)
				w.a->post(*cs.back(), 5000, w.now);
		}
		ASSERT_TRUE(w.run_until([&] { return w.a->idle(); })) << "run " << run;
		EXPECT_EQ(w.a->totals().msgs_acked, 12u) << "run " << run;
		EXPECT_EQ(w.a->totals().bad_acks, 0u) << "run " << run;
	}
	EXPECT_EQ(w.b.live_connections(), 4u); // the same four, each reset in place twice
	EXPECT_EQ(w.b.stats().reincarnations, 8u);
	EXPECT_EQ(w.b.totals().msgs_delivered, 36u); // the old incarnations' counters kept
}

TEST(DpLifecycle, CloseFreesBothEndsAndTheirSlots)
{
	Wire w;
	std::vector<uint32_t> closed;
	w.a->on_closed = [&](Connection &c) { closed.push_back(c.conn_id); };
	std::vector<MsgStatus> done;
	w.a->on_complete = [&](Connection &, const Completion &d) { done.push_back(d.status); };
	Connection *c = w.a->connect(kIpB, kMacB, 9, w.now);
	ASSERT_NE(c, nullptr);
	for (int k = 0; k < 4; k++)
		w.a->post(*c, 20'000, w.now);
	w.a->close(*c, w.now); // after its messages
	ASSERT_TRUE(w.run_until([&] { return w.a->live_connections() == 0; }));
	EXPECT_EQ(closed, std::vector<uint32_t>{9});
	EXPECT_EQ(done, std::vector<MsgStatus>(4, MsgStatus::kOk));
	EXPECT_EQ(w.b.live_connections(), 0u);
	EXPECT_EQ(w.b.stats().conns_closed, 1u);
	EXPECT_EQ(w.b.totals().msgs_delivered, 4u); // counted after the free
	EXPECT_EQ(w.a->totals().msgs_acked, 4u);
	EXPECT_EQ(w.b.find(kIpA, 9), nullptr);
	// the slots are taken again, the table finds the new ones
	Connection *again = w.a->connect(kIpB, kMacB, 9, w.now);
	ASSERT_NE(again, nullptr);
	EXPECT_EQ(again->index, 0u);
	EXPECT_EQ(w.a->connections().size(), 1u);
	w.a->post(*again, 1000, w.now);
	ASSERT_TRUE(w.run_until([&] { return w.a->idle(); }));
	EXPECT_EQ(w.b.live_connections(), 1u);
	// a FIN for a connection already gone is answered (its REPLY was lost)
	Frame fin = ctrl_frame(kIpA, LUMEN_DP_FIN, 0, 77, 5, 0);
	w.b.rx(fin.data(), (uint32_t)fin.size(), w.now);
	std::vector<Frame> ans = Wire::out(w.b, w.now);
	ASSERT_EQ(ans.size(), 1u);
	lumen_dp_pkt p;
	ASSERT_EQ(lumen_dp_parse(ans[0].data(), (uint32_t)ans[0].size(), LUMEN_DP_UDP_PORT, &p), 0);
	EXPECT_EQ(p.type, LUMEN_DP_FIN);
	EXPECT_EQ(p.flags, LUMEN_DP_F_REPLY);
}

// The server forgets an idle connection (its peer vanished); the client,
// sending again, hears a FIN RST for the PSN it sent and fails the
// connection. A reset naming a PSN it does not have in flight (a forger's
// guess) changes nothing.
TEST(DpLifecycle, IdleExpiryAndResets)
{
	EngineConfig cb = cfg_of(kIpB, kMacB);
	cb.idle_timeout_ns = 5'000'000;
	Wire w(cb);
	std::vector<MsgStatus> done;
	w.a->on_complete = [&](Connection &, const Completion &d) { done.push_back(d.status); };
	Connection *c = w.a->connect(kIpB, kMacB, 3, w.now);
	ASSERT_NE(c, nullptr);
	w.a->post(*c, 1000, w.now);
	ASSERT_TRUE(w.run_until([&] { return w.a->idle(); }));
	ASSERT_EQ(w.b.live_connections(), 1u);
	for (int ms = 0; ms < 20 && w.b.live_connections(); ms++)
		w.step(1'000'000);
	ASSERT_EQ(w.b.live_connections(), 0u);
	EXPECT_EQ(w.b.stats().conns_expired, 1u);
	// a forged reset: PSNs not in flight
	w.a->post(*c, 3000, w.now);
	Frame rst = frame_to_b(kIpB, LUMEN_DP_FIN, 3, c->tx.nxt() + 100, [](lumen_dp_pkt &p) {
		std::memcpy(p.eth_src, kMacB.data(), 6); // from b to a
		std::memcpy(p.eth_dst, kMacA.data(), 6);
		p.ip_dst = kIpA;
		p.flags = LUMEN_DP_F_RST;
	});
	ASSERT_FALSE(rst.empty());
	w.a->rx(rst.data(), (uint32_t)rst.size(), w.now);
	EXPECT_FALSE(c->failed);
	EXPECT_EQ(w.a->stats().resets_rcvd, 0u);
	// the real one: the DATA finds no connection
	ASSERT_TRUE(w.run_until([&] { return c->failed; }, 50));
	EXPECT_EQ(w.a->stats().resets_rcvd, 1u);
	EXPECT_GE(w.b.stats().resets_sent, 1u); // one per DATA packet that found nothing
	ASSERT_EQ(done.size(), 2u);
	EXPECT_EQ(done[0], MsgStatus::kOk);
	EXPECT_EQ(done[1], MsgStatus::kReset);
	EXPECT_EQ(w.b.live_connections(), 0u); // DATA opened nothing
}

// A burst in which a FIN frees a connection that later frames of the same
// burst name: rx_burst fetches connections ahead, and must not touch the
// freed one (the sanitized build's AddressSanitizer would see it).
TEST(DpLifecycle, ABurstThatFreesAConnectionDoesNotTouchItAgain)
{
	Engine b(cfg_of(kIpB, kMacB));
	for (uint32_t id = 1; id <= 100; id++) // beyond the few connections rx_burst does not fetch ahead
		ASSERT_NE(accept_open(b, kIpA, kMacA, id, 0, 1000), nullptr);
	std::vector<Frame> burst = {ctrl_frame(kIpA, LUMEN_DP_FIN, 0, 5, 0, 0), data_frame(kIpA, 7, 0),
				    data_frame(kIpA, 8, 0), data_frame(kIpA, 5, 0), data_frame(kIpA, 5, 1)};
	std::vector<const uint8_t *> frames;
	std::vector<uint32_t> lens;
	for (const Frame &f : burst) {
		frames.push_back(f.data());
		lens.push_back((uint32_t)f.size());
	}
	b.rx_burst(frames.data(), lens.data(), (uint32_t)frames.size(), 2000);
	EXPECT_EQ(b.find(kIpA, 5), nullptr);
	EXPECT_EQ(b.stats().conns_closed, 1u);
	EXPECT_EQ(b.stats().unknown_data, 2u); // conn 5's DATA, after its FIN
	EXPECT_NE(b.find(kIpA, 7), nullptr); // the others untouched
}

// An application that closes a connection from its completions, as one
// does on an error: the completions free_conn calls (kReset) and on_closed
// must not free the connection a second time.
TEST(DpLifecycle, ACompletionThatClosesItsConnectionWhileItIsFreedDoesNothing)
{
	Engine b(cfg_of(kIpB, kMacB));
	Connection *c = accept_open(b, kIpA, kMacA, 5, 0, 1000);
	ASSERT_NE(c, nullptr);
	std::vector<uint8_t> buf(1000);
	ASSERT_EQ(b.post_recv(*c, RecvWr{buf.data(), 1000, 1}, 1000), PostError::kOk);
	ASSERT_EQ(b.post_recv(*c, RecvWr{buf.data(), 1000, 2}, 1000), PostError::kOk);
	int completions = 0, closed = 0;
	b.on_complete = [&](Connection &conn, const Completion &d) {
		completions++;
		EXPECT_EQ(d.status, MsgStatus::kReset);
		b.close(conn, 3000);
	};
	b.on_closed = [&](Connection &conn) {
		closed++;
		b.close(conn, 3000);
	};
	Frame fin = ctrl_frame(kIpA, LUMEN_DP_FIN, 0, 5, 0, 0);
	b.rx(fin.data(), (uint32_t)fin.size(), 2000);
	EXPECT_EQ(completions, 2);
	EXPECT_EQ(closed, 1);
	EXPECT_EQ(b.stats().conns_closed, 1u);
	EXPECT_EQ(b.live_connections(), 0u);
	// its slot is free once: two new connections take two slots
	Connection *x = accept_open(b, kIpA, kMacA, 6, 0, 4000);
	Connection *y = accept_open(b, kIpA, kMacA, 7, 0, 4000);
	ASSERT_NE(x, nullptr);
	ASSERT_NE(y, nullptr);
	EXPECT_NE(x->index, y->index);
}

// A server that is not there yet: the SYN is resent with backoff, each try
// on the next entropy, and the connection opens when the server comes.
TEST(DpLifecycle, SynsAreResentUntilTheServerComes)
{
	Engine a(cfg_of(kIpA, kMacA));
	Connection *c = a.connect(kIpB, kMacB, 1, 0);
	ASSERT_NE(c, nullptr);
	std::vector<uint16_t> sports;
	std::vector<uint64_t> at;
	for (uint64_t now = 0; now < 50'000'000; now += 10'000) {
		a.timers(now);
		for (const Frame &f : Wire::out(a, now)) {
			sports.push_back(lumen_dp_get16(f.data() + LUMEN_DP_UDP_OFF));
			at.push_back(now);
		}
	}
	ASSERT_GE(sports.size(), 4u);
	for (size_t i = 1; i < sports.size(); i++) {
		EXPECT_NE(sports[i], sports[i - 1]) << i;
		if (i >= 2) {
			EXPECT_GE(at[i] - at[i - 1], at[i - 1] - at[i - 2]) << "backoff " << i;
		}
	}
	EXPECT_EQ(c->stats.handshake_retries, sports.size() - 1);
	EXPECT_EQ(c->state, ConnState::kSynSent);
}

// ConnIndex with erasures, against a map: every key still present is
// found, every erased one is not (the backward shift keeps the probe runs
// whole), whatever the order.
TEST(DpLifecycle, TheConnectionTableErasesWithoutLosingAnyone)
{
	ConnIndex idx(42);
	std::map<uint64_t, Connection *> model;
	std::mt19937_64 rng(5);
	std::vector<std::unique_ptr<Connection>> store;
	EngineConfig cfg = cfg_of(kIpA, kMacA);
	for (int i = 0; i < 3000; i++)
		store.push_back(std::make_unique<Connection>(cfg, (uint32_t)i));
	for (int round = 0; round < 20000; round++) {
		uint64_t key = ConnIndex::key(0x0A000000 | (uint32_t)(rng() % 64), (uint32_t)(rng() % 64));
		if (model.count(key)) {
			idx.erase(key);
			model.erase(key);
		} else if (model.size() < store.size()) {
			Connection *c = store[model.size()].get();
			idx.insert(key, c);
			model[key] = c;
		}
		if (round % 1000 == 0)
			for (uint32_t ip = 0; ip < 64; ip++)
				for (uint32_t id = 0; id < 64; id++) {
					uint64_t k = ConnIndex::key(0x0A000000 | ip, id);
					auto it = model.find(k);
					ASSERT_EQ(idx.find(k), it == model.end() ? nullptr : it->second) << round;
				}
	}
	idx.erase(ConnIndex::key(1, 1)); // absent: nothing
}

} // namespace
} // namespace lumen::dp::test
