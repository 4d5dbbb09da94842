// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// The kernel gate's control plane without a kernel (bpfctl/optical_gate.h):
// the GSO cap a gate keeps its device to, for the schedule in force and,
// while a change is under way, the shorter of both schedules' windows (a
// stage used to leave the cap of the first schedule: TSO bursts too long
// for the new windows, dropped as too_long); and `lumen gate stats --json`,
// which now shows what attach configured (the stale limit, the max hold,
// the device's gso_max_size and the cap). The device side (ip link) is
// tests/e2e/gate_tcp_test.sh's, in the VMs.
#include <gtest/gtest.h>

extern "C" {
#include "lumen/optical_wire.h"
}

#include "bpfctl/optical_gate.h"
#include "sched/change.h"
#include "sched/schedule.h"

using namespace lumen;

namespace
{

constexpr uint64_t kMs = 1'000'000, kT0 = 1'800'000'000'000'000'000ull;

sched::Schedule rr(uint64_t slot_ns, uint64_t guard_ns, uint64_t version)
{
	sched::Timing tm;
	tm.slot_ns = slot_ns;
	tm.guard_ns = guard_ns;
	tm.t0_ns = kT0;
	tm.version = version;
	return sched::round_robin(4, 1, false, tm);
}

// A gate of 4 nodes on 100 ms slots with 10 ms guards, 10 ms margins, at
// 4 Mbit/s: windows of 70 ms, as tests/e2e/gate_tcp_test.sh attaches it.
lumen_gate_cfg attached()
{
	lumen_gate_cfg c{};
	c.banks[0] = sched::bank_of(rr(100 * kMs, 10 * kMs, 1), kT0);
	c.margin_ns = 10 * kMs;
	c.nodes = 4;
	c.rate_mbps = 4;
	c.table_period = 32;
	c.max_hold_ns = 10'000'000'000ull;
	return c;
}

TEST(BpfctlGate, TheGsoCapFitsTheShorterWindowsWhileAChangeIsUnderWay)
{
	lumen_gate_cfg c = attached();
	const uint64_t now = kT0 + 10 * 300 * kMs;
	const uint64_t first = lumen_gso_cap_bytes(70 * kMs, 4, 1500);
	EXPECT_EQ(gate_gso_cap(c, 1500, now), first); // attach's
	EXPECT_GT(first, 30'000u);
	// staged: 40 ms slots, 10 ms guards: 10 ms windows once the margins are off
	const uint64_t at = kT0 + 20 * 300 * kMs;
	sched::Banks b = sched::stage(sched::banks_of(c), rr(40 * kMs, 10 * kMs, 2), at, now);
	lumen_gate_cfg s = c;
	sched::set_banks(s, b);
	const uint64_t shorter = lumen_gso_cap_bytes(10 * kMs, 4, 1500);
	EXPECT_LT(shorter, 5'000u);
	EXPECT_EQ(gate_gso_cap(s, 1500, now), shorter) << "the new schedule's windows are shorter";
	// committed: the same before the instant, the new one's alone after
	sched::set_banks(s, sched::commit(b, 2));
	EXPECT_EQ(gate_gso_cap(s, 1500, now), shorter);
	EXPECT_EQ(gate_gso_cap(s, 1500, at + 1), shorter);
	// aborted: the first schedule's again (the device is never raised, though)
	sched::set_banks(s, sched::abort(b, 2));
	EXPECT_EQ(gate_gso_cap(s, 1500, now), first);
	// longer windows staged: the cap stays the shorter, the first's
	b = sched::stage(sched::banks_of(c), rr(300 * kMs, 10 * kMs, 2), at, now);
	sched::set_banks(s, b);
	EXPECT_EQ(gate_gso_cap(s, 1500, now), first);
	// never under the MTU: a window that carries less than a frame
	c.rate_mbps = 1;
	c.margin_ns = 44 * kMs;
	EXPECT_EQ(gate_gso_cap(c, 1500, now), 1500u);
}

TEST(BpfctlGate, StatsJsonShowsWhatAttachConfigured)
{
	GateStatus st;
	st.cfg = attached();
	st.cfg.stale_ns = 400 * kMs;
	st.osched.boundary_ns = kT0 + 5;
	st.dsts.assign(4, lumen_gate_stats{});
	st.total.packets[LUMEN_GATE_CNT_STALE] = 7;
	GateDevice d;
	d.mtu = 1500;
	d.gso_max_size = 20'000;
	nlohmann::json j = gate_status_json(st, d, kT0 + 1000 * kMs);
	EXPECT_EQ(j["stale_ns"], 400 * kMs);
	EXPECT_EQ(j["max_hold_ns"], 10'000'000'000ull);
	EXPECT_EQ(j["margin_ns"], 10 * kMs);
	EXPECT_EQ(j["lumend_boundary_ns"], kT0 + 5);
	EXPECT_EQ(j["gso"]["max_size"], 20'000u);
	EXPECT_EQ(j["gso"]["mtu"], 1500u);
	EXPECT_EQ(j["gso"]["cap"], lumen_gso_cap_bytes(70 * kMs, 4, 1500));
	EXPECT_EQ(j["total"]["stale"], 7u);
	EXPECT_EQ(j["destinations"].size(), 4u);
	EXPECT_EQ(j["version"], 1u);
	// no --lumend: no stale limit; a device that cannot be read: 0
	st.cfg.stale_ns = 0;
	j = gate_status_json(st, GateDevice{}, kT0);
	EXPECT_EQ(j["stale_ns"], 0u);
	EXPECT_EQ(j["gso"]["cap"], 0u);
	EXPECT_EQ(j["gso"]["max_size"], 0u);
	EXPECT_EQ(j["change_overdue"], false);
}

// A change staged and never committed: overdue once its instant is more
// than the stale limit (or 4 slots, at least 100 ms) ago; the gate stays
// quiet (include/lumen/optical.h), stats say so.
TEST(BpfctlGate, AChangeNeverCommittedIsSaidOverdue)
{
	lumen_gate_cfg c = attached();
	const uint64_t at = kT0 + 20 * 300 * kMs;
	sched::set_banks(c, sched::stage(sched::banks_of(c), rr(40 * kMs, 10 * kMs, 2), at, at - 1000 * kMs));
	EXPECT_FALSE(gate_change_overdue(c, at - kMs));
	EXPECT_FALSE(gate_change_overdue(c, at + 400 * kMs)); // 4 slots of 100 ms
	EXPECT_TRUE(gate_change_overdue(c, at + 400 * kMs + 1));
	c.stale_ns = 2000 * kMs; // with --lumend: its stale limit
	EXPECT_FALSE(gate_change_overdue(c, at + 2000 * kMs));
	EXPECT_TRUE(gate_change_overdue(c, at + 2000 * kMs + 1));
	GateStatus st;
	st.cfg = c;
	EXPECT_EQ(gate_status_json(st, GateDevice{}, at + 3000 * kMs)["change_overdue"], true);
	sched::set_banks(c, sched::commit(sched::banks_of(c), 2));
	EXPECT_FALSE(gate_change_overdue(c, at + 3000 * kMs)); // a late commit: the new schedule
}

} // namespace
