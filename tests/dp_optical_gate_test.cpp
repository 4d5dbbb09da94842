// dp_optical_gate_test: direct-hop gating in lumen-dp (dpdk/transport/
// optical_gate.h). Every departure is checked against a slot-by-slot walk:
// the earliest time from when the wire to the destination is free at which
// the frame's wire time fits a usable window (shrunk by the margin) of a
// slot that connects the pair; frames to one destination never overlap and
// a window carries its byte budget; and the drops: quiet, no circuit, a
// wait over max_hold; addresses outside the schedule pass; nothing is booked
// past a change's instant before its tables are in. A held frame released
// late does not leave outside its window, bookings keep the slack for that,
// and the per-node counters; the VOQ that holds the frames (voq.h).
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <vector>

#include "transport/optical_gate.h"
#include "transport/voq.h"

using namespace lumen::dp;

namespace
{

constexpr uint32_t kBase = 0x0a000001; // 10.0.0.1: node 0

std::unordered_map<uint32_t, uint32_t> addrs(uint32_t nodes)
{
	std::unordered_map<uint32_t, uint32_t> m;
	for (uint32_t i = 0; i < nodes; i++)
		m[kBase + i] = i;
	return m;
}

// Tables for self = 0 whose slot s connects 0 to the destinations in open[s].
GateTables tables(const std::vector<std::set<uint32_t>> &open, uint32_t nodes, uint64_t slot, uint64_t guard,
		  uint64_t margin, bool guard_at_start)
{
	GateTables t;
	t.timing.t0_ns = 1'000'000'000;
	t.timing.slot_ns = slot;
	t.timing.guard_ns = guard;
	t.timing.period = (uint32_t)open.size();
	t.timing.guard_at_start = guard_at_start;
	t.nodes = nodes;
	t.margin_ns = margin;
	t.version = 1;
	uint32_t p = t.timing.period;
	t.waits.assign((size_t)p * nodes, LUMEN_SLOT_NEVER);
	for (uint32_t s = 0; s < p; s++)
		for (uint32_t d = 1; d < nodes; d++)
			for (uint32_t k = 0; k < p; k++)
				if (open[(s + k) % p].count(d)) {
					t.waits[(size_t)s * nodes + d] = (uint16_t)k;
					break;
				}
	return t;
}

// The slot-by-slot walk: the earliest departure >= base.
uint64_t walk(const GateTables &t, const std::vector<std::set<uint32_t>> &open, uint32_t dst, uint64_t base,
	      uint64_t wire)
{
	const lumen_slot_timing &tm = t.timing;
	uint64_t k = (base - tm.t0_ns) / tm.slot_ns;
	for (uint64_t j = k; j < k + 3 * tm.period; j++) {
		if (!open[j % tm.period].count(dst))
			continue;
		uint64_t start = tm.t0_ns + j * tm.slot_ns;
		uint64_t lo = start + (tm.guard_at_start ? tm.guard_ns : 0) + t.margin_ns;
		uint64_t hi = start + tm.slot_ns - (tm.guard_at_start ? 0 : tm.guard_ns) - t.margin_ns;
		uint64_t dep = base > lo ? base : lo;
		if (dep + wire <= hi)
			return dep;
	}
	return 0;
}

// A random schedule for self = 0: 2..7 nodes, a period of 1..7 slots of
// 20..100 us, each pair connected in about a third of them.
struct RandomSchedule {
	uint32_t nodes, period;
	std::vector<std::set<uint32_t>> open;
	uint64_t slot, guard, margin;
	bool at_start;
	GateTables t;
};

RandomSchedule random_schedule(std::mt19937_64 &rng)
{
	RandomSchedule r;
	r.nodes = 2 + (uint32_t)(rng() % 6);
	r.period = 1 + (uint32_t)(rng() % 7);
	r.open.resize(r.period);
	for (auto &s : r.open)
		for (uint32_t d = 1; d < r.nodes; d++)
			if (rng() % 3 == 0)
				s.insert(d);
	r.slot = 20'000 + rng() % 80'000;
	r.guard = rng() % (r.slot / 4);
	r.margin = rng() % (r.slot / 8);
	r.at_start = rng() % 2;
	r.t = tables(r.open, r.nodes, r.slot, r.guard, r.margin, r.at_start);
	return r;
}

TEST(DpOpticalGate, DeparturesMatchASlotBySlotWalk)
{
	std::mt19937_64 rng(7);
	uint64_t sent = 0, never = 0;
	for (int round = 0; round < 60; round++) {
		const RandomSchedule r = random_schedule(rng);
		const uint32_t nodes = r.nodes, period = r.period;
		const auto &open = r.open;
		const uint64_t slot = r.slot;
		const GateTables &t = r.t;
		uint32_t rate = 1000 + (uint32_t)(rng() % 24000);
		OpticalGate g(addrs(nodes), rate, 1'000'000'000);
		g.set_tables(t);
		std::vector<uint64_t> free(nodes, 0);
		uint64_t now = t.timing.t0_ns + rng() % (slot * period);
		for (int f = 0; f < 300; f++) {
			now += rng() % (slot / 3);
			uint32_t dst = (uint32_t)(rng() % nodes), len = 64 + (uint32_t)(rng() % 1437);
			uint64_t dep = 0, wire = lumen_wire_ns(len, rate);
			GateVerdict v = g.book(kBase + dst, len, now, &dep);
			if (dst == 0) { // itself: not gated
				EXPECT_EQ(v, GateVerdict::kPass);
				continue;
			}
			uint64_t base = now > free[dst] ? now : free[dst];
			uint64_t want = walk(t, open, dst, base, wire);
			if (!want) {
				EXPECT_EQ(v, GateVerdict::kNever) << "round " << round << " frame " << f;
				never++;
				continue;
			}
			ASSERT_EQ(v, GateVerdict::kSend) << "round " << round << " frame " << f;
			EXPECT_EQ(dep, want) << "round " << round << " frame " << f;
			EXPECT_GE(dep, free[dst]); // no overlap with the frames before it
			free[dst] = dep + wire;
			sent++;
		}
	}
	EXPECT_GT(sent, 5000u);
	EXPECT_GT(never, 0u); // some pairs have no circuit: those are covered too
}

// The circuit signal (circuit_window): at any time, the first window of a
// connecting slot that has not closed, as a walk over the slots finds it.
TEST(DpOpticalGate, CircuitWindowIsTheFirstUnclosedWindowOfAConnectingSlot)
{
	std::mt19937_64 rng(11);
	uint64_t up = 0, ahead = 0, none = 0;
	for (int round = 0; round < 60; round++) {
		RandomSchedule r = random_schedule(rng);
		const uint32_t nodes = r.nodes, period = r.period;
		const auto &open = r.open;
		const uint64_t slot = r.slot, guard = r.guard, margin = r.margin;
		const bool at_start = r.at_start;
		GateTables &t = r.t;
		OpticalGate g(addrs(nodes), 10000, 1'000'000'000);
		g.set_tables(t);
		for (int q = 0; q < 200; q++) {
			uint64_t now = t.timing.t0_ns + rng() % (3 * slot * period);
			uint32_t dst = 1 + (uint32_t)(rng() % (nodes - 1));
			uint64_t lo = 0, hi = 0, want_lo = 0, want_hi = 0;
			const uint64_t first = (now - t.timing.t0_ns) / slot;
			for (uint64_t j = first; j < first + 2 * period + 1; j++) {
				if (!open[j % period].count(dst))
					continue;
				uint64_t start = t.timing.t0_ns + j * slot + (at_start ? guard : 0);
				if (now < start + (slot - guard) - margin) {
					want_lo = start + margin;
					want_hi = start + (slot - guard) - margin;
					break;
				}
			}
			bool got = g.circuit_window(kBase + dst, now, &lo, &hi);
			ASSERT_EQ(got, want_hi != 0) << "round " << round << " query " << q;
			if (!got) {
				none++;
				continue;
			}
			EXPECT_EQ(lo, want_lo) << "round " << round << " query " << q;
			EXPECT_EQ(hi, want_hi) << "round " << round << " query " << q;
			(now >= lo ? up : ahead)++;
		}
		uint64_t lo = 0, hi = 0;
		EXPECT_FALSE(g.circuit_window(kBase, t.timing.t0_ns, &lo, &hi)); // itself
		EXPECT_FALSE(g.circuit_window(kBase + nodes, t.timing.t0_ns, &lo, &hi)); // not a node
		EXPECT_FALSE(g.circuit_window(kBase + 1, t.timing.t0_ns - 1, &lo, &hi)); // before t0
		t.quiet = LUMEN_QUIET_CLOCK;
		g.set_tables(t);
		EXPECT_FALSE(g.circuit_window(kBase + 1, t.timing.t0_ns, &lo, &hi)); // lumend is quiet
	}
	EXPECT_GT(up, 500u);
	EXPECT_GT(ahead, 500u);
	EXPECT_GT(none, 0u);
}

// A window that ends past a pending change's instant is not told: the
// tables after it are not here yet.
TEST(DpOpticalGate, CircuitWindowStopsAtAPendingChange)
{
	GateTables t = tables({{1}, {}}, 2, 100'000, 10'000, 0, false);
	OpticalGate g(addrs(2), 10000, 1'000'000'000);
	g.set_tables(t);
	uint64_t lo = 0, hi = 0, t0 = t.timing.t0_ns;
	ASSERT_TRUE(g.circuit_window(kBase + 1, t0 + 95'000, &lo, &hi)); // slot 0's guard: slot 2's window
	EXPECT_EQ(lo, t0 + 200'000);
	EXPECT_EQ(hi, t0 + 290'000);
	t.change_ns = t0 + 200'000;
	g.set_tables(t);
	EXPECT_FALSE(g.circuit_window(kBase + 1, t0 + 95'000, &lo, &hi));
	ASSERT_TRUE(g.circuit_window(kBase + 1, t0 + 5'000, &lo, &hi)); // slot 0's own, before the change
	EXPECT_EQ(hi, t0 + 90'000);
}

TEST(DpOpticalGate, AWindowCarriesItsByteBudget)
{
	// one destination, connected in slot 0 of 2; 100 us slots, 10 us
	// guard, 5 us margins: 80 us usable; 1000-byte frames at 1 Gbit/s take
	// 8.192 us on the wire: 9 fit, the 10th waits for the next period
	GateTables t = tables({{1}, {}}, 2, 100'000, 10'000, 5'000, false);
	OpticalGate g(addrs(2), 1000, 1'000'000'000);
	g.set_tables(t);
	uint64_t now = t.timing.t0_ns, dep = 0;
	std::vector<uint64_t> deps;
	for (int i = 0; i < 10; i++) {
		ASSERT_EQ(g.book(kBase + 1, 1000, now, &dep), GateVerdict::kSend);
		deps.push_back(dep);
	}
	EXPECT_EQ(deps[0], now + 5'000);
	EXPECT_EQ(deps[8], now + 5'000 + 8 * 8'192);
	EXPECT_EQ(deps[9], now + 200'000 + 5'000); // the next period's window
	EXPECT_EQ(g.stats().held, 10u);
}

TEST(DpOpticalGate, DropsAndPasses)
{
	GateTables t = tables({{1}, {2}, {}}, 4, 100'000, 10'000, 0, false);
	OpticalGate g(addrs(4), 10000, 150'000);
	g.set_tables(t);
	uint64_t now = t.timing.t0_ns, dep = 0;
	EXPECT_EQ(g.book(0x0b000001, 100, now, &dep), GateVerdict::kPass); // not a node
	EXPECT_EQ(dep, now);
	EXPECT_EQ(g.book(kBase + 3, 100, now, &dep), GateVerdict::kNever); // no circuit to node 3
	EXPECT_EQ(g.book(kBase + 2, 100, now, &dep), GateVerdict::kSend); // slot 1: 100 us on
	EXPECT_EQ(dep, now + 100'000);
	EXPECT_EQ(g.book(kBase + 1, 100, now + 95'000, &dep), GateVerdict::kOverflow); // 205 us > 150 us
	EXPECT_EQ(g.book(kBase + 1, 200'000, now, &dep), GateVerdict::kNever); // 160 us: longer than a window
	t.quiet = LUMEN_QUIET_CLOCK;
	g.set_tables(t);
	EXPECT_EQ(g.book(kBase + 1, 100, now, &dep), GateVerdict::kQuiet);
	EXPECT_EQ(g.book(0x0b000001, 100, now, &dep), GateVerdict::kPass); // quiet is about the schedule's nodes
	GateStats s = g.stats();
	EXPECT_EQ(s.pass + s.never + s.sent + s.held + s.overflow + s.quiet, 7u);
	EXPECT_EQ(s.quiet, 1u);
	EXPECT_EQ(s.overflow, 1u);
	EXPECT_EQ(s.never, 2u);
	EXPECT_THROW(OpticalGate(addrs(2), 0, 1), std::invalid_argument);
}

TEST(DpOpticalGate, NothingIsBookedPastAChangeUntilItsTablesAreIn)
{
	// node 1 in slot 0 of 2 (100 us slots): a change at the second period
	GateTables t = tables({{1}, {}}, 2, 100'000, 10'000, 0, false);
	t.change_ns = t.timing.t0_ns + 200'000;
	OpticalGate g(addrs(2), 1000, 1'000'000'000);
	g.set_tables(t);
	uint64_t now = t.timing.t0_ns, dep = 0;
	EXPECT_EQ(g.book(kBase + 1, 1000, now, &dep), GateVerdict::kSend); // in this period's window
	EXPECT_EQ(g.book(kBase + 1, 1000, now + 95'000, &dep), GateVerdict::kDefer); // its window is the next period's
	EXPECT_EQ(g.book(kBase + 1, 1000, now + 250'000, &dep), GateVerdict::kDefer); // the instant passed, no tables
	EXPECT_EQ(g.stats().deferred, 2u);
	// the new schedule (node 1 in both slots), from the instant on
	GateTables n = tables({{1}, {1}}, 2, 100'000, 10'000, 0, false);
	n.timing.t0_ns = t.change_ns;
	n.version = 2;
	g.set_tables(n);
	EXPECT_EQ(g.book(kBase + 1, 1000, now + 250'000, &dep), GateVerdict::kSend);
	EXPECT_EQ(dep, now + 250'000);
}

TEST(DpOpticalGate, ALateReleaseIsBookedAgainNeverSentIntoAGuard)
{
	// node 1 in slot 0 of 2; 100 us slots, 10 us guard at the end, 5 us
	// margins, 2 us slack: bookings in [7 us, 83 us], a frame released
	// late still fits in [5 us, 85 us]
	GateTables t = tables({{1}, {}}, 2, 100'000, 10'000, 5'000, false);
	OpticalGate g(addrs(2), 1000, 1'000'000'000, 2'000);
	g.set_tables(t);
	const uint64_t t0 = t.timing.t0_ns, wire = lumen_wire_ns(1000, 1000);
	uint64_t dep = 0;
	ASSERT_EQ(g.book(kBase + 1, 1000, t0, &dep), GateVerdict::kSend);
	EXPECT_EQ(dep, t0 + 7'000); // margin and slack
	g.restart(1);
	ASSERT_EQ(g.book(kBase + 1, 1000, t0 + 83'000 - wire, &dep), GateVerdict::kSend);
	EXPECT_EQ(dep, t0 + 83'000 - wire); // the last that fits, sent at once
	g.restart(1);
	EXPECT_EQ(g.book(kBase + 1, 1000, t0 + 83'000 - wire + 1, &dep), GateVerdict::kSend);
	EXPECT_EQ(dep, t0 + 200'000 + 7'000); // past the booking edge: the next period
	// released up to the slack late: still inside the margin, sent
	EXPECT_EQ(g.release(kBase + 1, 1000, t0 + 85'000 - wire), GateVerdict::kPass);
	// a nanosecond later it would cross into the margin: late
	EXPECT_EQ(g.release(kBase + 1, 1000, t0 + 85'000 - wire + 1), GateVerdict::kLate);
	EXPECT_EQ(g.release(kBase + 1, 1000, t0 + 150'000), GateVerdict::kLate); // in the dark slot
	EXPECT_EQ(g.stats().late, 2u);
	// booked again from scratch (restart): the next window, not behind the
	// wire clock of the frames it was booked with
	g.restart(1);
	ASSERT_EQ(g.book(kBase + 1, 1000, t0 + 150'000, &dep, Offer::kRebook), GateVerdict::kSend);
	EXPECT_EQ(dep, t0 + 200'000 + 7'000);
	EXPECT_EQ(g.stats().held, 2u); // a rebooking is not held twice
	// not to a node: passes; quiet meanwhile: dropped
	EXPECT_EQ(g.release(0x0b000001, 1000, t0 + 150'000), GateVerdict::kPass);
	t.quiet = LUMEN_QUIET_CLOCK;
	g.set_tables(t);
	EXPECT_EQ(g.release(kBase + 1, 1000, t0 + 207'000), GateVerdict::kQuiet);
}

TEST(DpOpticalGate, PerNodeCountersGiveDemandAndWhatLeft)
{
	GateTables t = tables({{1}, {2}, {}}, 4, 100'000, 10'000, 0, false);
	OpticalGate g(addrs(4), 10000, 1'000'000'000);
	g.set_tables(t);
	const uint64_t t0 = t.timing.t0_ns;
	uint64_t dep = 0;
	EXPECT_EQ(g.book(kBase + 1, 500, t0, &dep), GateVerdict::kSend); // sent at once
	EXPECT_EQ(g.book(kBase + 2, 600, t0, &dep), GateVerdict::kSend); // held to slot 1
	EXPECT_EQ(g.book(kBase + 3, 700, t0, &dep), GateVerdict::kNever); // demand all the same
	ASSERT_EQ(g.node_stats().size(), 4u);
	const GateNodeStats &a = g.node_stats()[1], &b = g.node_stats()[2], &c = g.node_stats()[3];
	EXPECT_EQ(a.offered_bytes, 500u);
	EXPECT_EQ(a.sent_bytes, 500u);
	EXPECT_EQ(b.offered_frames, 1u);
	EXPECT_EQ(b.sent_frames, 0u); // not yet left
	EXPECT_EQ(g.release(kBase + 2, 600, dep), GateVerdict::kPass);
	EXPECT_EQ(g.node_stats()[2].sent_bytes, 600u);
	EXPECT_EQ(c.offered_bytes, 700u);
	EXPECT_EQ(c.sent_bytes, 0u);
	EXPECT_EQ(g.node_stats()[0].offered_frames, 0u); // itself: passes, not a destination
}

TEST(DpVoq, ReleasesHeadsEarliestFirstAndTakesAQueueInOrder)
{
	Voq<int> q;
	EXPECT_TRUE(q.empty());
	q.push(2, 20, 200);
	q.push(2, 21, 210);
	q.push(0, 1, 150);
	q.push(5, 50, 300);
	EXPECT_EQ(q.size(), 4u);
	uint32_t node = 99;
	int v = 0;
	EXPECT_FALSE(q.pop(149, &node, &v));
	ASSERT_TRUE(q.pop(1000, &node, &v));
	EXPECT_EQ(node, 0u);
	EXPECT_EQ(v, 1);
	ASSERT_TRUE(q.pop(200, &node, &v));
	EXPECT_EQ(v, 20);
	EXPECT_FALSE(q.pop(209, &node, &v));
	auto rest = q.take(2);
	ASSERT_EQ(rest.size(), 1u);
	EXPECT_EQ(rest[0].item, 21);
	EXPECT_EQ(q.size(), 1u);
	EXPECT_FALSE(q.pop(299, &node, &v));
	ASSERT_TRUE(q.pop(300, &node, &v));
	EXPECT_EQ(node, 5u);
	EXPECT_TRUE(q.empty());
	EXPECT_FALSE(q.pop(UINT64_MAX, &node, &v));
	EXPECT_TRUE(q.take(7).empty()); // a node it never had
	// a FIFO per node: a head not yet due holds back a later item behind it
	q.push(1, 10, 500);
	q.push(1, 11, 400);
	EXPECT_FALSE(q.pop(450, &node, &v));
	EXPECT_EQ(q.nodes(), 6u);
}

TEST(DpOpticalGate, NodeAddresses)
{
	std::unordered_map<uint32_t, uint32_t> m;
	EXPECT_EQ(parse_node_addrs("10.0.0.1,10.0.0.2,10.0.0.3", &m), "");
	EXPECT_EQ(m.size(), 3u);
	EXPECT_EQ(m[0x0a000003], 2u);
	EXPECT_EQ(parse_node_addrs("10.0.0.1,nope", &m), "'nope' is not an IPv4 address");
	EXPECT_EQ(parse_node_addrs("10.0.0.1,10.0.0.1", &m), "10.0.0.1 is given twice");
	EXPECT_EQ(parse_node_addrs("", &m), "'' is not an IPv4 address");
}

} // namespace
