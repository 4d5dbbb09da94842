// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/dp_collective_runner_test.cpp - collectives moving and reducing real
// bytes over lumen-dp engines (dpdk/transport/collective_runner.h): N ranks
// on an in-memory switch that drops, reorders, duplicates and marks; every
// rank's result equals the in-memory reference (execute_schedule) byte for
// byte, whole flows and Ethereal's planned subflows alike, with no message
// ever arriving before its receive buffer.
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
// impairment's reordering delay) to the engine its IPv4 destination names.
struct Switch {
	std::vector<std::unique_ptr<Engine>> hosts;
	Impairment imp;
	DelayLine<Frame> line;
	uint64_t now = 0, latency_ns = 4000;

	Switch(uint32_t n, const ImpairParams &ip, lumen_path_mode mode) : imp(ip, LUMEN_DP_UDP_PORT)
	{
		for (uint32_t i = 0; i < n; i++) {
			EngineConfig c = config(kBaseIp + i, Mac{2, 0, 0, 0, 1, (uint8_t)i}, mode);
			c.gbn = mode == LUMEN_PATH_ETHEREAL;
			c.path.entropies = 16;
			hosts.push_back(std::make_unique<Engine>(c));
		}
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
			if (dst < hosts.size())
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

struct Outcome {
	std::vector<RankBuffers> got, want;
	uint64_t rnr = 0, retransmits = 0, subflow_msgs = 0;
	bool done = false;
	std::string error;
};

// Runs the collective on the switch; planner: 2 leaves of N/2 ranks on `uplinks` uplinks.
Outcome run(const CollectiveParams &p, const char *impairment, lumen_path_mode mode, uint32_t uplinks = 0)
{
	Outcome o;
	CollectiveSchedule s;
	EXPECT_EQ(build_collective(p, &s), "");
	Switch sw(p.ranks, impair(impairment), mode);
	CollectiveBarrier barrier(p.ranks, s.steps.size());
	std::vector<uint32_t> ips, leaf;
	for (uint32_t r = 0; r < p.ranks; r++) {
		ips.push_back(kBaseIp + r);
		leaf.push_back(r < p.ranks / 2 ? 0 : 1);
	}
	std::vector<std::unique_ptr<CollectiveRank>> ranks;
	o.want = inputs(p, 42, false);
	for (uint32_t r = 0; r < p.ranks; r++) {
		ranks.push_back(
			std::make_unique<CollectiveRank>(s, r, *sw.hosts[r], ips, Mac{2, 0, 0, 0, 0, 0xFE}, barrier));
		ranks[r]->buffers() = o.want[r];
		if (uplinks) {
			Engine *e = sw.hosts[r].get();
			ranks[r]->set_planner(leaf, uplinks, 16384, [e](Connection &c, uint32_t, uint32_t uplink) {
				return e->pin(c, (uint16_t)uplink); // entropy u stands for uplink u here
			});
		}
	}
	EXPECT_EQ(execute_schedule(s, &o.want), "");
	for (auto &r : ranks)
		EXPECT_EQ(r->open(sw.now), "");
	for (int i = 0; i < 3'000'000 && !o.done; i++) {
		for (auto &r : ranks)
			r->tick(sw.now);
		sw.step();
		o.done = true;
		for (auto &r : ranks) {
			o.done = o.done && r->done();
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
		o.retransmits += t.retransmits;
		for (const RankStepStats &st : ranks[r]->step_stats())
			o.subflow_msgs += st.subflows;
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

} // namespace
} // namespace lumen::dp::test
