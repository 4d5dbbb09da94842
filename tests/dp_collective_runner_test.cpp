// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/dp_collective_runner_test.cpp - collectives moving and reducing real
// bytes over lumen-dp engines (dpdk/transport/collective_runner.h): N ranks
// on an in-memory switch that drops, reorders, duplicates and marks; every
// rank's result equals the in-memory reference (execute_schedule) byte for
// byte, whole flows and Ethereal's planned subflows alike, with no message
// ever arriving before its receive buffer; the same with the network
// barrier (collective_barrier.h: ranks in several processes), including a
// rank that comes late, and control messages that lie (a clean error).
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "dp_test_net.h"
#include "transport/collective_runner.h"

namespace lumen::dp::test
{
namespace
{

constexpr uint32_t kBaseIp = 0x0A000100;

// N engines behind one switch: every frame takes latency_ns (plus the
// impairment's reordering delay) to the engine its IPv4 destination names;
// frames to a host that is not up are lost (its process has not started).
struct Switch {
	std::vector<std::unique_ptr<Engine>> hosts;
	std::vector<bool> up;
	Impairment imp;
	DelayLine<Frame> line;
	uint64_t now = 0, latency_ns = 4000;

	Switch(uint32_t n, const ImpairParams &ip, lumen_path_mode mode, bool open_on_handshake = true)
	    : imp(ip, LUMEN_DP_UDP_PORT)
	{
		for (uint32_t i = 0; i < n; i++) {
			EngineConfig c = config(kBaseIp + i, Mac{2, 0, 0, 0, 1, (uint8_t)i}, mode);
			c.open_on_handshake = open_on_handshake;
			c.gbn = mode == LUMEN_PATH_ETHEREAL;
			c.path.entropies = 16;
			hosts.push_back(std::make_unique<Engine>(c));
		}
		up.assign(n, true);
	}
	void step(uint64_t dt = 1000)
	{
		now += dt;
		for (auto &h : hosts) {
			VecSink sink(h->config().mtu + 14);
			h->tx(sink, now, 64);
			for (Frame &f : sink.frames)
				impair_onto(imp, f, line, now + latency_ns);
		}
		Frame f;
		while (line.pop(now, &f)) {
			uint32_t dst = lumen_dp_get32(f.data() + LUMEN_DP_IP_OFF + 16) - kBaseIp;
			if (dst < hosts.size() && up[dst])
				hosts[dst]->rx(f.data(), (uint32_t)f.size(), now);
		}
		for (auto &h : hosts)
			h->timers(now);
	}
};

// The inputs of every rank, random (small integers for float sums when
// exact is asked), as the layout places them.
std::vector<RankBuffers> inputs(const CollectiveParams &p, uint32_t seed, bool small_ints)
{
	std::mt19937 g(seed);
	std::vector<RankBuffers> b(p.ranks);
	for (uint32_t r = 0; r < p.ranks; r++) {
		CollectiveLayout l = collective_layout(p, r);
		b[r].send.assign(l.send_bytes, 0);
		b[r].recv.assign(l.recv_bytes, 0);
		auto &v = l.input.buffer == Buffer::kSend ? b[r].send : b[r].recv;
		for (uint64_t i = 0; i + 4 <= l.input.bytes; i += 4) {
			uint32_t w = g();
			if (p.reduce == ReduceType::kFloat32 && collective_reduces(p.collective)) {
				float f = small_ints ? (float)(w % 200) - 100.0f : (float)(int32_t)w / 65536.0f;
				std::memcpy(&w, &f, 4);
			}
			std::memcpy(v.data() + l.input.offset + i, &w, 4);
		}
	}
	return b;
}

// DATA packets an engine sent on the collective's data connections (ids below base).
uint64_t data_packets(const Engine &e, uint32_t base)
{
	uint64_t n = 0;
	for (const auto &c : e.connections())
		if (c && c->client && c->conn_id < base)
			n += c->stats.data_sent;
	return n;
}

struct Outcome {
	std::vector<RankBuffers> got, want;
	uint64_t rnr = 0, retransmits = 0, subflow_msgs = 0, data_before_late = 0, refused = 0;
	std::vector<uint32_t> reorder; // per step, the deepest over the ranks
	std::string open_late; // the late rank's open()
	NetworkBarrier::Stats control;
	size_t steps = 0;
	bool done = false;
	std::string error;
};

// How the steps are separated: the shared in-memory barrier, or the
// network barrier (one per rank); late: rank 1 starts 20 ms after the
// others; early: rank 1's engine receives from the start (its process polls
// its port) but the rank opens 20 ms later, as collective mode's engines do
// (open_on_handshake off), or with engines that open connections for any handshake.
enum class Sep {
	kMemory,
	kNetwork,
	kNetworkLate,
	kNetworkEarly,
	kNetworkEarlyOpening
};

// Runs the collective on the switch; planner: 2 leaves of N/2 ranks on `uplinks` uplinks.
Outcome run(const CollectiveParams &p, const char *impairment, lumen_path_mode mode, uint32_t uplinks = 0,
	    Sep sep = Sep::kMemory)
{
	Outcome o;
	CollectiveSchedule s;
	EXPECT_EQ(build_collective(p, &s), "");
	o.steps = s.steps.size();
	Switch sw(p.ranks, impair(impairment), mode, sep == Sep::kNetworkEarlyOpening);
	CollectiveBarrier barrier(p.ranks, s.steps.size());
	std::vector<std::unique_ptr<NetworkBarrier>> nets;
	std::vector<uint32_t> ips, leaf;
	for (uint32_t r = 0; r < p.ranks; r++) {
		ips.push_back(kBaseIp + r);
		leaf.push_back(r < p.ranks / 2 ? 0 : 1);
	}
	std::vector<std::unique_ptr<CollectiveRank>> ranks;
	o.want = inputs(p, 42, false);
	const Mac gateway{2, 0, 0, 0, 0, 0xFE};
	for (uint32_t r = 0; r < p.ranks; r++) {
		StepBarrier *b = &barrier;
		if (sep != Sep::kMemory) {
			nets.push_back(std::make_unique<NetworkBarrier>(
				*sw.hosts[r], r, ips, gateway, s.steps.size(),
				CollectiveRank::control_conn_base(p.ranks, p.channels)));
			b = nets.back().get();
		}
		ranks.push_back(std::make_unique<CollectiveRank>(s, r, *sw.hosts[r], ips, gateway, *b));
		ranks[r]->buffers() = o.want[r];
		if (uplinks) {
			Engine *e = sw.hosts[r].get();
			ranks[r]->set_planner(leaf, uplinks, 16384, [e](Connection &c, uint32_t, uint32_t uplink) {
				return e->pin(c, (uint16_t)uplink); // entropy u stands for uplink u here
			});
		}
	}
	EXPECT_EQ(execute_schedule(s, &o.want), "");
	const bool late = sep != Sep::kMemory && sep != Sep::kNetwork;
	const bool early = sep == Sep::kNetworkEarly || sep == Sep::kNetworkEarlyOpening;
	const uint64_t late_ns = 20'000'000;
	bool opened1 = !late;
	sw.up[1] = !late || early;
	for (auto &r : ranks) {
		if (!late || r->rank() != 1) {
			EXPECT_EQ(r->open(sw.now), "");
		}
	}
	for (int i = 0; i < 3'000'000 && !o.done; i++) {
		if (!opened1 && sw.now >= late_ns) {
			/* the late rank starts: what the others sent so far is their word, no data */
			for (auto &h : sw.hosts)
				o.data_before_late +=
					data_packets(*h, CollectiveRank::control_conn_base(p.ranks, p.channels));
			sw.up[1] = opened1 = true;
			o.open_late = ranks[1]->open(sw.now);
			if (!o.open_late.empty())
				break;
		}
		for (auto &r : ranks)
			if (r->rank() != 1 || opened1)
				r->tick(sw.now);
		sw.step();
		o.done = true;
		for (auto &r : ranks) {
			o.done = o.done && r->released(sw.now);
			if (!r->error().empty())
				o.error = r->error();
		}
		if (!o.error.empty())
			break;
	}
	for (uint32_t r = 0; r < p.ranks; r++) {
		o.got.push_back(ranks[r]->buffers());
		ConnStats t = sw.hosts[r]->totals();
		o.rnr += t.rnr_drops;
		o.refused += sw.hosts[r]->stats().conn_refused;
		o.retransmits += t.retransmits;
		o.reorder.resize(ranks[r]->step_stats().size());
		for (size_t k = 0; k < ranks[r]->step_stats().size(); k++) {
			const RankStepStats &st = ranks[r]->step_stats()[k];
			o.subflow_msgs += st.subflows;
			o.reorder[k] = std::max(o.reorder[k], st.reorder_max);
		}
	}
	for (const auto &b : nets) {
		o.control.sent += b->stats().sent;
		o.control.acked += b->stats().acked;
		o.control.received += b->stats().received;
	}
	return o;
}

void expect_reference(const Outcome &o, const std::string &what)
{
	SCOPED_TRACE(what);
	ASSERT_EQ(o.error, "");
	ASSERT_TRUE(o.done);
	for (size_t r = 0; r < o.want.size(); r++) {
		EXPECT_TRUE(o.got[r].recv == o.want[r].recv) << "rank " << r << " differs from the reference";
		EXPECT_TRUE(o.got[r].send == o.want[r].send) << "rank " << r << " changed its send buffer";
	}
	EXPECT_EQ(o.rnr, 0u) << "a message arrived before its receive buffer";
}

CollectiveParams params(Collective c, uint32_t n, uint64_t bytes, uint32_t channels,
			ReduceType t = ReduceType::kFloat32)
{
	CollectiveParams p;
	p.collective = c;
	p.ranks = n;
	p.bytes = bytes;
	p.channels = channels;
	p.reduce = t;
	p.seed = 9;
	return p;
}

const char *kLossy = "drop=1%,reorder=10%,reorder-delay=20us,dup=1%,ce=3%,acks,seed=11";

TEST(DpCollectiveRunner, EveryCollectiveMatchesTheReferenceOverALossyNetwork)
{
	for (Collective c : {Collective::kAllReduce, Collective::kAllReduceA2A, Collective::kAllToAll,
			     Collective::kAllGather, Collective::kReduceScatter, Collective::kPermutation}) {
		Outcome o = run(params(c, 5, 60'004, 2), kLossy, LUMEN_PATH_REPS);
		expect_reference(o, collective_name(c));
		EXPECT_GT(o.retransmits, 0u) << collective_name(c) << ": the impairment did nothing";
	}
}

// Each step reports the deepest reordering its packets arrived with: none on
// a network that keeps order, some when it reorders; a step's own, not the
// run's so far (the ring's steps are alike: every one reorders).
TEST(DpCollectiveRunner, EachStepReportsItsReorderDepth)
{
	const CollectiveParams p = params(Collective::kAllReduce, 4, 400'000, 1);
	Outcome calm = run(p, "", LUMEN_PATH_ECMP);
	expect_reference(calm, "in order");
	ASSERT_EQ(calm.reorder.size(), 6u); /* 2 (n - 1) steps */
	for (size_t k = 0; k < calm.reorder.size(); k++)
		EXPECT_EQ(calm.reorder[k], 0u) << "step " << k;
	Outcome mixed = run(p, "reorder=20%,reorder-delay=20us,seed=5", LUMEN_PATH_REPS);
	expect_reference(mixed, "reordered");
	for (size_t k = 0; k < mixed.reorder.size(); k++)
		EXPECT_GT(mixed.reorder[k], 0u) << "step " << k;
}

TEST(DpCollectiveRunner, Int32AllreduceAndOddSizes)
{
	expect_reference(
		run(params(Collective::kAllReduce, 4, 4 * 1001, 3, ReduceType::kInt32), kLossy, LUMEN_PATH_OPS),
		"ring int32");
	expect_reference(run(params(Collective::kAllReduceA2A, 3, 4 * 7, 1, ReduceType::kInt32), "", LUMEN_PATH_ECMP),
			 "a2a int32, fewer elements than blocks");
	expect_reference(run(params(Collective::kAllReduce, 2, 0, 1), "", LUMEN_PATH_ECMP), "empty");
}

// Ethereal: the 2-channel ring crosses between the leaves at two ranks; on
// 4 uplinks each of those flows is split in two (r = 2, g = 2), every part
// its own connection pinned to its uplink, Go-Back-N receivers.
TEST(DpCollectiveRunner, PlannedSubflowsCarryTheirByteRanges)
{
	Outcome o = run(params(Collective::kAllReduce, 4, 4 * 4000, 2), "drop=0.5%,seed=3", LUMEN_PATH_ETHEREAL, 4);
	expect_reference(o, "ethereal ring");
	EXPECT_GT(o.subflow_msgs, 0u);
	Outcome a = run(params(Collective::kAllToAll, 6, 6 * 5000, 1), "", LUMEN_PATH_ETHEREAL, 4);
	expect_reference(a, "ethereal alltoall");
}

// The network barrier: every rank says "ready" and "step s done" to every
// other on its control connections, through the same losses; the results
// equal the reference, no message comes before its buffer, and every
// control message was sent, received and acknowledged.
TEST(DpCollectiveRunner, NetworkBarrierMatchesTheReferenceOverALossyNetwork)
{
	for (Collective c : {Collective::kAllReduce, Collective::kAllReduceA2A, Collective::kAllToAll,
			     Collective::kAllGather, Collective::kReduceScatter, Collective::kPermutation}) {
		const uint32_t n = 4;
		Outcome o = run(params(c, n, 40'000, 2), kLossy, LUMEN_PATH_REPS, 0, Sep::kNetwork);
		expect_reference(o, std::string("network barrier: ") + collective_name(c));
		const uint64_t want = (uint64_t)n * (n - 1) * (o.steps + 1);
		EXPECT_EQ(o.control.sent, want) << collective_name(c);
		EXPECT_EQ(o.control.received, want) << collective_name(c);
		EXPECT_EQ(o.control.acked, want) << collective_name(c);
	}
	Outcome e = run(params(Collective::kAllReduce, 4, 4 * 4000, 2), "drop=0.5%,seed=3", LUMEN_PATH_ETHEREAL, 4,
			Sep::kNetwork);
	expect_reference(e, "network barrier: ethereal ring");
	EXPECT_GT(e.subflow_msgs, 0u);
}

// A rank whose process starts 20 ms after the others: they wait for its
// "ready" without sending it (or anyone) a byte of data, then finish.
TEST(DpCollectiveRunner, NetworkBarrierWaitsForALateRank)
{
	Outcome o = run(params(Collective::kAllToAll, 3, 30'000, 1), kLossy, LUMEN_PATH_REPS, 0, Sep::kNetworkLate);
	expect_reference(o, "late rank");
	EXPECT_EQ(o.data_before_late, 0u) << "data sent before every rank was ready";
	EXPECT_GT(o.retransmits, 0u);
}

// Rank 1's process polls its port from the start but its rank opens 20 ms
// later (a process still discovering paths): the others' handshakes reach
// an engine without those connections. Collective mode's engines refuse
// them (conn_refused) and the others try again; an engine that opened the
// connections itself would take the messages without their buffers, and
// the late rank's open() says so.
TEST(DpCollectiveRunner, NetworkBarrierMessagesBeforeARankOpensAreResent)
{
	Outcome o = run(params(Collective::kAllToAll, 3, 30'000, 1), kLossy, LUMEN_PATH_REPS, 0, Sep::kNetworkEarly);
	EXPECT_EQ(o.open_late, "");
	expect_reference(o, "early messages");
	EXPECT_EQ(o.data_before_late, 0u);
	EXPECT_GT(o.refused, 0u) << "nothing reached the late rank's engine early";

	Outcome opening =
		run(params(Collective::kAllToAll, 3, 30'000, 1), kLossy, LUMEN_PATH_REPS, 0, Sep::kNetworkEarlyOpening);
	EXPECT_NE(opening.open_late.find("open_on_handshake"), std::string::npos) << opening.open_late;
}

// Rank 1 is a bare engine that sends rank 0 a control message of its own
// making: anything but "ready" from rank 1 in 16 bytes is an error of the
// barrier (rank 0 stops, with the reason), never a crash or a pass.
TEST(DpCollectiveRunner, NetworkBarrierRefusesLyingControlMessages)
{
	struct Lie {
		std::vector<uint8_t> bytes;
		const char *expect;
	};
	auto msg = [](uint32_t rank, uint32_t phase, uint32_t ranks) {
		auto m = NetworkBarrier::message(rank, phase, ranks);
		return std::vector<uint8_t>(m.begin(), m.end());
	};
	std::vector<uint8_t> bad_magic = msg(1, 0, 2);
	bad_magic[0] ^= 0xFF;
	std::vector<uint8_t> long_one = msg(1, 0, 2);
	long_one.resize(40, 0xAB);
	const Lie lies[] = {
		{msg(1, 3, 2), "phase 3"}, // a later step's word first
		{msg(0, 0, 2), "rank 0,"}, // another rank's word
		{msg(1, 0, 7), "7 ranks"}, // a collective of another size
		{bad_magic, "magic wrong"}, {{1, 2, 3}, "has 3 bytes"}, {long_one, "40 bytes"},
	};
	for (const Lie &lie : lies) {
		SCOPED_TRACE(lie.expect);
		CollectiveParams p = params(Collective::kAllToAll, 2, 8'000, 1);
		CollectiveSchedule s;
		ASSERT_EQ(build_collective(p, &s), "");
		Switch sw(2, impair(""), LUMEN_PATH_REPS);
		const std::vector<uint32_t> ips{kBaseIp, kBaseIp + 1};
		const Mac gateway{2, 0, 0, 0, 0, 0xFE};
		const uint32_t base = CollectiveRank::control_conn_base(2, 1);
		NetworkBarrier b(*sw.hosts[0], 0, ips, gateway, s.steps.size(), base);
		CollectiveRank r(s, 0, *sw.hosts[0], ips, gateway, b);
		ASSERT_EQ(r.open(sw.now), "");
		Engine &liar = *sw.hosts[1];
		Connection *c = liar.connect(ips[0], gateway, NetworkBarrier::control_conn_id(base, 2, 1, 0), sw.now);
		ASSERT_NE(c, nullptr);
		ASSERT_EQ(liar.post_send(*c, SendWr{lie.bytes.data(), (uint32_t)lie.bytes.size(), 0, 0}, sw.now),
			  PostError::kOk);
		for (int i = 0; i < 200'000 && r.error().empty(); i++) {
			r.tick(sw.now);
			sw.step();
		}
		EXPECT_NE(r.error().find("barrier: "), std::string::npos) << r.error();
		EXPECT_NE(r.error().find(lie.expect), std::string::npos) << r.error();
		EXPECT_FALSE(r.done());
		EXPECT_EQ(data_packets(*sw.hosts[0], base), 0u)
			<< "rank 0 sent data to a rank that never said it was ready";
	}
}

} // namespace
} // namespace lumen::dp::test
