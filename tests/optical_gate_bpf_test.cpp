// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// bpf/optical_gate.bpf.c itself, run by the kernel on packets made here
// (BPF_PROG_TEST_RUN: no device, no qdisc, so it runs on the host, which
// has no sch_fq): a GSO skb books its segments' wire time, not skb->len's,
// and two CPUs booking one destination at once never share a departure
// (the wire clock's compare-and-exchange), and a change announced and never
// committed makes the gate quiet from its instant on, however long ago, with
// nothing booked across it (include/lumen/optical.h's rule for a change
// that expires uncommitted). Root only: skipped otherwise.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <memory>
#include <thread>
#include <vector>

extern "C" {
#include "lumen/bpf_shared.h"
#include "lumen/optical_wire.h"
}

#include "optical_gate.skel.h"

namespace
{

constexpr uint32_t kRate = 1; // Mbit/s: wire times of milliseconds, far above clock noise
constexpr uint64_t kSlot = 1'000'000'000ull, kGuard = 1'000'000ull;
const uint32_t kDst = htonl(0x0a010002); // 10.1.0.2, node 1

uint64_t now_ns(clockid_t c)
{
	timespec ts{};
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1'000'000'000ull + (uint64_t)ts.tv_nsec;
}

struct Deleter {
	void operator()(optical_gate *s) const
	{
		optical_gate__destroy(s);
	}
};

// The gate for node 0 of 2 nodes connected in every slot (period 1) of
// 1 s with a 1 ms guard: a window of 999 ms from each second on.
class Gate
{
      public:
	bool load()
	{
		skel_.reset(optical_gate__open());
		if (!skel_)
			return false;
		bpf_map__set_max_entries(skel_->maps.gate_waits, 2 * 1 * 2);
		bpf_map__set_max_entries(skel_->maps.gate_clock, 2);
		bpf_map__set_max_entries(skel_->maps.gate_stats, 2);
		if (optical_gate__load(skel_.get()))
			return false;
		lumen_gate_cfg cfg{};
		cfg.nodes = 2;
		cfg.self = 0;
		cfg.rate_mbps = kRate;
		cfg.table_period = 1;
		cfg.max_hold_ns = 600'000'000'000ull;
		lumen_slot_timing &t = cfg.banks[0].timing;
		t.slot_ns = kSlot;
		t.guard_ns = kGuard;
		t.period = 1;
		t.t0_ns = now_ns(CLOCK_TAI) / kSlot * kSlot - 10 * kSlot;
		cfg.banks[1] = cfg.banks[0];
		uint32_t zero = 0;
		EXPECT_EQ(bpf_map_update_elem(bpf_map__fd(skel_->maps.gate_cfg), &zero, &cfg, BPF_ANY), 0);
		// waits at (bank * period + slot) * nodes + dst: node 1 in slot 0, node 0 never
		for (uint32_t bank = 0; bank < 2; bank++)
			for (uint32_t dst = 0; dst < 2; dst++) {
				uint32_t key = bank * 2 + dst, w = dst == 1 ? 0 : LUMEN_SLOT_NEVER;
				EXPECT_EQ(bpf_map_update_elem(bpf_map__fd(skel_->maps.gate_waits), &key, &w, BPF_ANY),
					  0);
			}
		uint32_t node = 1;
		EXPECT_EQ(bpf_map_update_elem(bpf_map__fd(skel_->maps.gate_hosts), &kDst, &node, BPF_ANY), 0);
		return true;
	}
	// Runs the program on a TCP/IPv4 frame of len bytes (20-byte IP and
	// TCP headers), as a GSO skb of gso_size when segs > 1; returns the
	// tc verdict and the departure it stamped (CLOCK_MONOTONIC).
	int run(uint32_t len, uint32_t segs, uint32_t gso_size, uint64_t *tstamp) const
	{
		std::vector<uint8_t> pkt(len, 0);
		pkt[12] = 0x08; // IPv4
		pkt[14] = 0x45;
		pkt[14 + 9] = IPPROTO_TCP;
		std::memcpy(&pkt[14 + 16], &kDst, 4);
		pkt[34 + 12] = 5 << 4;
		__sk_buff ctx{};
		ctx.gso_segs = segs;
		ctx.gso_size = gso_size;
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = pkt.data(), .data_size_in = len, .ctx_in = &ctx,
			    .ctx_out = &ctx, .ctx_size_in = sizeof(ctx), .ctx_size_out = sizeof(ctx), .repeat = 1);
		if (bpf_prog_test_run_opts(bpf_program__fd(skel_->progs.lumen_gate_egress), &o) != 0)
			return -1;
		*tstamp = ctx.tstamp;
		return (int)o.retval;
	}
	// A change from bank 0 to bank 1 (the same slots, from switch_ns on)
	void set_change(uint32_t state, uint64_t switch_ns) const
	{
		uint32_t zero = 0;
		lumen_gate_cfg cfg{};
		ASSERT_EQ(bpf_map_lookup_elem(bpf_map__fd(skel_->maps.gate_cfg), &zero, &cfg), 0);
		cfg.banks[1] = cfg.banks[0];
		cfg.banks[1].timing.t0_ns = switch_ns;
		cfg.banks[1].version = cfg.banks[0].version + 1;
		cfg.change.state = state;
		cfg.change.bank = 0;
		cfg.change.switch_ns = switch_ns;
		ASSERT_EQ(bpf_map_update_elem(bpf_map__fd(skel_->maps.gate_cfg), &zero, &cfg, BPF_ANY), 0);
	}
	void set_wire_free(uint64_t tai) const
	{
		uint32_t k = 1;
		lumen_gate_clock c{};
		c.free_tai_ns = tai;
		ASSERT_EQ(bpf_map_update_elem(bpf_map__fd(skel_->maps.gate_clock), &k, &c, BPF_ANY), 0);
	}
	uint64_t wire_free() const
	{
		uint32_t k = 1;
		lumen_gate_clock c{};
		EXPECT_EQ(bpf_map_lookup_elem(bpf_map__fd(skel_->maps.gate_clock), &k, &c), 0);
		return c.free_tai_ns;
	}
	lumen_gate_stats stats() const
	{
		int ncpu = libbpf_num_possible_cpus();
		std::vector<lumen_gate_stats> per(ncpu > 0 ? (size_t)ncpu : 1);
		uint32_t k = 1;
		EXPECT_EQ(bpf_map_lookup_elem(bpf_map__fd(skel_->maps.gate_stats), &k, per.data()), 0);
		lumen_gate_stats sum{};
		for (const lumen_gate_stats &s : per)
			for (uint32_t i = 0; i < LUMEN_GATE_NCOUNTERS; i++)
				sum.packets[i] += s.packets[i];
		return sum;
	}

      private:
	std::unique_ptr<optical_gate, Deleter> skel_;
};

bool load_or_skip(Gate &g)
{
	if (geteuid() != 0)
		return false;
	return g.load();
}

// The departure of a booking, as TAI: the stamp is CLOCK_MONOTONIC
int64_t tai_minus_mono()
{
	uint64_t m1 = now_ns(CLOCK_MONOTONIC), t = now_ns(CLOCK_TAI), m2 = now_ns(CLOCK_MONOTONIC);
	return (int64_t)t - (int64_t)(m1 + (m2 - m1) / 2);
}

TEST(OpticalGateBpf, AGsoSkbBooksItsSegmentsWireTime)
{
	Gate g;
	if (!load_or_skip(g))
		GTEST_SKIP() << "needs root and BPF (BPF_PROG_TEST_RUN of the gate)";
	// 3 segments of 1000 bytes of payload behind 54 bytes of headers:
	// skb->len 3054, on the wire 3 x (1054 + 24) bytes
	uint64_t st = 0;
	ASSERT_EQ(g.run(3054, 3, 1000, &st), 0);
	uint64_t dep = (uint64_t)((int64_t)st + tai_minus_mono());
	uint64_t want = lumen_burst_wire_ns(3054, 1000, 54, kRate);
	EXPECT_EQ(want, 3 * lumen_wire_ns(1054, kRate));
	// the wire is free again a burst after the departure (the stamp's
	// conversion to TAI is good to a few microseconds; a frame is 8.6 ms)
	int64_t booked = (int64_t)(g.wire_free() - dep);
	EXPECT_NEAR((double)booked, (double)want, 50'000.0);
	EXPECT_GT((double)booked, (double)lumen_wire_ns(3054, kRate) + 100'000.0); // not skb->len's
	// the same skb without GSO is one frame
	Gate one;
	ASSERT_TRUE(one.load());
	ASSERT_EQ(one.run(3054, 1, 0, &st), 0);
	dep = (uint64_t)((int64_t)st + tai_minus_mono());
	EXPECT_NEAR((double)(one.wire_free() - dep), (double)lumen_wire_ns(3054, kRate), 50'000.0);
}

TEST(OpticalGateBpf, TwoCpusNeverShareADeparture)
{
	Gate g;
	if (!load_or_skip(g))
		GTEST_SKIP() << "needs root and BPF (BPF_PROG_TEST_RUN of the gate)";
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	if (ncpu < 2)
		GTEST_SKIP() << "one CPU: nothing races";
	// 64-byte frames (0.7 ms each at 1 Mbit/s) from two threads on two
	// CPUs, started together, far faster than the wire: every booking
	// starts where the one before it left the wire clock, so the clock
	// ends exactly where that many frames booked one after the other
	// leave it. A booking lost to a race (two frames given one departure)
	// leaves it a frame short. (The stamps alone cannot tell: the test
	// run's program may be preempted between its two clock reads.)
	constexpr int kEach = 10000;
	const uint64_t wire = lumen_wire_ns(64, kRate);
	// 100 frames first: the clock 70 ms ahead of now before the threads
	// start, so that none of theirs books from now instead
	uint64_t st = 0;
	for (int k = 0; k < 100; k++)
		ASSERT_EQ(g.run(64, 1, 0, &st), 0);
	const uint64_t free0 = g.wire_free();
	size_t booked[2] = {0, 0}, dropped[2] = {0, 0};
	std::atomic<int> ready{0};
	auto sender = [&](int i) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(i, &set);
		pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
		ready++;
		while (ready.load() < 2)
			;
		for (int k = 0; k < kEach; k++) {
			uint64_t t = 0;
			int verdict = g.run(64, 1, 0, &t);
			if (verdict == 0)
				booked[i]++;
			else if (verdict == 2) // TC_ACT_SHOT: dropped as contended
				dropped[i]++;
		}
	};
	std::thread a(sender, 0), b(sender, 1);
	a.join();
	b.join();
	lumen_gate_stats s = g.stats();
	// every frame booked, or dropped as contended (a frame that lost the
	// clock to the other CPU 4 times in a row): nothing else
	ASSERT_EQ(booked[0] + booked[1] + dropped[0] + dropped[1], 2u * kEach);
	EXPECT_EQ(dropped[0] + dropped[1], s.packets[LUMEN_GATE_CNT_CONTENDED]);
	EXPECT_EQ(s.packets[LUMEN_GATE_CNT_NOW] + s.packets[LUMEN_GATE_CNT_HELD], booked[0] + booked[1] + 100);
	lumen_slot_timing t{};
	t.slot_ns = kSlot;
	t.guard_ns = kGuard;
	t.period = 1;
	t.t0_ns = now_ns(CLOCK_TAI) / kSlot * kSlot - 20 * kSlot;
	uint64_t free = free0;
	for (size_t k = 0; k < booked[0] + booked[1]; k++)
		free = lumen_slot_departure(&t, free, 0, wire, 0, 0) + wire;
	EXPECT_EQ(g.wire_free(), free) << "the clock is " << ((int64_t)free - (int64_t)g.wire_free()) / (int64_t)wire
				       << " frames short: bookings lost to races";
}

TEST(OpticalGateBpf, AChangeNeverCommittedIsQuietFromItsInstantOn)
{
	Gate g;
	if (!load_or_skip(g))
		GTEST_SKIP() << "needs root and BPF (BPF_PROG_TEST_RUN of the gate)";
	constexpr uint64_t kMs = 1'000'000;
	const uint64_t wire = lumen_wire_ns(64, kRate);
	uint64_t st = 0;
	// an instant 3 to 4 s ahead (every slot is a period boundary), staged
	const uint64_t at = (now_ns(CLOCK_TAI) / kSlot + 4) * kSlot;
	g.set_change(LUMEN_CHANGE_STAGED, at);
	// off the wire 9 ms before it: booked, on the old schedule
	g.set_wire_free(at - 10 * kMs);
	ASSERT_EQ(g.run(64, 1, 0, &st), 0);
	EXPECT_EQ(g.wire_free(), at - 10 * kMs + wire);
	// the old window closes 1 ms before the instant: a frame from 1.5 ms
	// before does not fit it, and its next window is after the instant:
	// not booked across it (quiet), the wire clock untouched
	g.set_wire_free(at - 1'500'000);
	ASSERT_EQ(g.run(64, 1, 0, &st), 2);
	EXPECT_EQ(g.wire_free(), at - 1'500'000);
	EXPECT_EQ(g.stats().packets[LUMEN_GATE_CNT_QUIET], 1u);
	// the instant an hour ago, still staged: quiet, neither bank followed
	const uint64_t past = (now_ns(CLOCK_TAI) / kSlot - 3600) * kSlot;
	g.set_change(LUMEN_CHANGE_STAGED, past);
	g.set_wire_free(0);
	for (int k = 0; k < 3; k++)
		ASSERT_EQ(g.run(64, 1, 0, &st), 2);
	EXPECT_EQ(g.wire_free(), 0u);
	EXPECT_EQ(g.stats().packets[LUMEN_GATE_CNT_QUIET], 4u);
	// the coordinator's late commit ends it: booked on the new schedule
	g.set_change(LUMEN_CHANGE_COMMITTED, past);
	ASSERT_EQ(g.run(64, 1, 0, &st), 0);
	EXPECT_GT(g.wire_free(), past);
	EXPECT_EQ(g.stats().packets[LUMEN_GATE_CNT_QUIET], 4u);
}

} // namespace
