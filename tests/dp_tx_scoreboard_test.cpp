// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// lumen-dp's send scoreboard (dpdk/transport/tx_scoreboard.h): ACK and SACK
// counting (each PSN exactly once), refusal of forged or stale ACKs, loss
// detection by dupthresh and RACK time, retransmission bookkeeping,
// Go-Back-N and RTO, across the 2^32 wrap. The randomized suite runs a
// lossy, reordering network with duplicate, stale and forged ACKs against a
// reference model that applies the same rules naively, over every
// outstanding PSN after every ACK, with PSNs unwrapped to 64 bits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <stdexcept>
#include <vector>

#include "test_rng.h"
#include "transport/tx_scoreboard.h"

namespace
{

using lumen::dp::TxRecord;
using lumen::dp::TxScoreboard;
using lumen::test::Rng;
using AckUpdate = TxScoreboard::AckUpdate;

constexpr uint64_t kNoRack = UINT64_MAX;

TxRecord rec(uint64_t sent_ns, uint32_t len = 1000)
{
	TxRecord r{};
	r.sent_ns = sent_ns;
	r.len = len;
	r.tx_count = 77; // push() overrides
	r.state = TxRecord::kLost; // push() overrides
	return r;
}

// Push n records sent at t0, t0 + step, ...
void push_n(TxScoreboard &sb, uint32_t n, uint64_t t0 = 0, uint64_t step = 1000, uint32_t len = 1000)
{
	for (uint32_t i = 0; i < n; i++) {
		uint32_t want = sb.nxt();
		ASSERT_EQ(sb.push(rec(t0 + i * step, len)), want);
	}
}

uint64_t bits(std::initializer_list<uint32_t> idx)
{
	uint64_t v = 0;
	for (uint32_t i : idx)
		v |= 1ull << i;
	return v;
}

// Everything observable, to check that a refused operation changed nothing.
std::vector<uint64_t> snapshot(const TxScoreboard &sb)
{
	std::vector<uint64_t> v{sb.una(), sb.nxt(), sb.in_flight(), sb.lost(), sb.sacked(), sb.in_flight_bytes()};
	for (uint32_t p = sb.una(); p != sb.nxt(); p++)
		v.push_back(sb.at(p).state);
	return v;
}

TEST(DpTxScoreboard, RefusesBadCapacities)
{
	for (uint32_t bad : {0u, 3u, 100u, (1u << 20) + 1, 1u << 21, 0x80000000u})
		EXPECT_THROW(TxScoreboard{bad}, std::invalid_argument) << bad;
	for (uint32_t good : {1u, 2u, 64u, 4096u}) {
		TxScoreboard sb(good);
		EXPECT_EQ(sb.capacity(), good);
		EXPECT_FALSE(sb.full());
	}
}

TEST(DpTxScoreboard, PushAndCumulativeAck)
{
	TxScoreboard sb(64);
	sb.reset(100);
	push_n(sb, 10, 0, 1000, 1500);
	EXPECT_EQ(sb.una(), 100u);
	EXPECT_EQ(sb.nxt(), 110u);
	EXPECT_EQ(sb.in_flight(), 10u);
	EXPECT_EQ(sb.in_flight_bytes(), 15000u);
	EXPECT_EQ(sb.at(103).tx_count, 1);
	EXPECT_EQ(sb.at(103).state, TxRecord::kInFlight);
	EXPECT_EQ(sb.at(103).sent_ns, 3000u);

	AckUpdate u = sb.on_ack(105, 0, 10000, kNoRack);
	EXPECT_TRUE(u.valid);
	EXPECT_EQ(u.newly_acked_pkts, 5u);
	EXPECT_EQ(u.newly_acked_bytes, 7500u);
	EXPECT_EQ(u.newly_lost, 0u);
	EXPECT_EQ(sb.una(), 105u);
	EXPECT_EQ(sb.in_flight(), 5u);
	EXPECT_EQ(sb.in_flight_bytes(), 7500u);

	u = sb.on_ack(105, 0, 10000, kNoRack); // a duplicate ACK
	EXPECT_TRUE(u.valid);
	EXPECT_EQ(u.newly_acked_pkts, 0u);
	u = sb.on_ack(110, 0, 10000, kNoRack); // cum == nxt: all acked
	EXPECT_TRUE(u.valid);
	EXPECT_EQ(u.newly_acked_pkts, 5u);
	EXPECT_EQ(sb.in_flight(), 0u);
	EXPECT_EQ(sb.in_flight_bytes(), 0u);
}

TEST(DpTxScoreboard, SackCountsOnce)
{
	TxScoreboard sb(64);
	sb.reset(0);
	push_n(sb, 10);
	AckUpdate u = sb.on_ack(0, bits({0, 1, 4}), 0, kNoRack); // PSNs 1, 2, 5
	EXPECT_EQ(u.newly_acked_pkts, 3u);
	EXPECT_EQ(u.newly_acked_bytes, 3000u);
	EXPECT_EQ(sb.sacked(), 3u);
	EXPECT_EQ(sb.lost(), 1u); // 0, with three SACKed above it
	EXPECT_EQ(sb.in_flight(), 6u);
	EXPECT_EQ(sb.at(2).state, TxRecord::kSacked);
	u = sb.on_ack(0, bits({0, 1, 4}), 0, kNoRack); // again
	EXPECT_EQ(u.newly_acked_pkts, 0u);
	u = sb.on_ack(3, bits({1}), 0, kNoRack); // 0 (lost) acked, 1 and 2 already, 5 again
	EXPECT_EQ(u.newly_acked_pkts, 1u);
	EXPECT_EQ(sb.sacked(), 1u);
	u = sb.on_ack(6, 0, 0, kNoRack); // 3, 4 new; 5 already counted
	EXPECT_EQ(u.newly_acked_pkts, 2u);
	EXPECT_EQ(sb.sacked(), 0u);
	EXPECT_EQ(sb.in_flight(), 4u);
}

TEST(DpTxScoreboard, RefusesForgedAndStaleAcks)
{
	TxScoreboard sb(64);
	sb.reset(0xFFFFFFF0u);
	push_n(sb, 20); // PSNs 2^32 - 16 .. 3
	ASSERT_TRUE(sb.on_ack(0xFFFFFFF5u, bits({2}), 0, kNoRack).valid);
	auto before = snapshot(sb);
	const uint32_t una = sb.una(), nxt = sb.nxt();
	for (uint32_t cum : {nxt + 1, nxt + 1000, una - 1, una - 64, una - 65, una + 0x80000000u, una - 0x7FFFFFFFu}) {
		AckUpdate u = sb.on_ack(cum, ~0ull, 0, 0);
		EXPECT_FALSE(u.valid) << cum;
		EXPECT_EQ(u.newly_acked_pkts, 0u);
		EXPECT_EQ(u.newly_lost, 0u);
		EXPECT_EQ(snapshot(sb), before) << cum;
	}
	// a SACK with every bit set names PSNs beyond nxt: only up to nxt counts
	AckUpdate u = sb.on_ack(una, ~0ull, 0, kNoRack);
	EXPECT_TRUE(u.valid);
	EXPECT_EQ(u.newly_acked_pkts, nxt - una - 1 - 1); // all after una but the one SACKed before
	EXPECT_EQ(sb.sacked(), nxt - una - 1);
	// una itself, with 14 SACKed above it, is not declared lost by counting:
	// PSNs sent before the one SACKed first arrived after it (reordering
	// seen), so only RACK time (off here) could declare it lost
	EXPECT_TRUE(sb.reordering_seen());
	EXPECT_EQ(sb.in_flight(), 1u);
	EXPECT_EQ(sb.lost(), 0u);
	// and cum == nxt with every bit set: nothing beyond nxt exists
	u = sb.on_ack(nxt, ~0ull, 0, kNoRack);
	EXPECT_TRUE(u.valid);
	EXPECT_EQ(u.newly_acked_pkts, 1u);
	EXPECT_EQ(sb.sacked(), 0u);
	EXPECT_EQ(sb.una(), 4u);
}

TEST(DpTxScoreboard, DupThreshDeclaresLoss)
{
	TxScoreboard sb(64);
	sb.reset(0);
	push_n(sb, 10, 0, 0);
	AckUpdate u = sb.on_ack(0, bits({0, 1}), 0, kNoRack); // 1, 2 SACKed
	EXPECT_EQ(u.newly_lost, 0u);
	uint32_t psn = 99;
	EXPECT_FALSE(sb.next_lost(&psn));
	u = sb.on_ack(0, bits({0, 1, 4}), 0, kNoRack); // 5 too: three above 0
	EXPECT_EQ(u.newly_lost, 1u);
	EXPECT_EQ(sb.lost(), 1u);
	EXPECT_EQ(sb.in_flight(), 10u - 3 - 1);
	ASSERT_TRUE(sb.next_lost(&psn));
	EXPECT_EQ(psn, 0u);
	EXPECT_TRUE(sb.next_lost(&psn)); // a peek: still there until resent
	EXPECT_EQ(psn, 0u);
	sb.on_retransmit(0, 5000, 42);
	EXPECT_EQ(sb.at(0).tx_count, 2);
	EXPECT_EQ(sb.at(0).entropy, 42);
	EXPECT_EQ(sb.at(0).sent_ns, 5000u);
	EXPECT_EQ(sb.at(0).state, TxRecord::kInFlight);
	EXPECT_FALSE(sb.next_lost(&psn));
	EXPECT_EQ(sb.in_flight(), 10u - 3);
	// 3 and 4 have only one SACKed PSN (5) above them
	EXPECT_EQ(sb.at(3).state, TxRecord::kInFlight);
	u = sb.on_ack(0, bits({0, 1, 4, 5, 6}), 0, kNoRack); // 6 and 7: now 3 and 4 have 3 above
	EXPECT_EQ(u.newly_lost, 2u);
	EXPECT_EQ(u.newly_acked_pkts, 2u);
	ASSERT_TRUE(sb.next_lost(&psn));
	EXPECT_EQ(psn, 3u);
	// the retransmission of 0 arrives: counted once, never again
	u = sb.on_ack(3, bits({1, 2, 3}), 0, kNoRack);
	EXPECT_EQ(u.newly_acked_pkts, 1u);
	EXPECT_EQ(u.newly_acked_bytes, 1000u);
	u = sb.on_ack(3, bits({1, 2, 3}), 0, kNoRack);
	EXPECT_EQ(u.newly_acked_pkts, 0u);
}

// Sprayed packets overtake each other by more than 3 as a rule: once a
// first transmission arrives after one sent later, counting SACKs no longer
// declares anything lost (RACK time does, with its reorder window).
TEST(DpTxScoreboard, ReorderingTurnsDupThreshOff)
{
	TxScoreboard sb(64);
	sb.reset(0);
	push_n(sb, 10, 0, 0);
	sb.on_ack(0, bits({4}), 0, kNoRack); // 5 first
	EXPECT_FALSE(sb.reordering_seen());
	sb.on_ack(0, bits({0, 4}), 0, kNoRack); // then 1, sent before it
	EXPECT_TRUE(sb.reordering_seen());
	AckUpdate u = sb.on_ack(0, bits({0, 4, 5, 6, 7}), 0, kNoRack); // 5 SACKed above 0
	EXPECT_EQ(u.newly_lost, 0u);
	EXPECT_EQ(sb.lost(), 0u);
	// RACK still works: 8 (sent at 80 us) arrives, a window of 50 us
	// declares 0, 2 and 3 (sent by 30 us) lost
	sb.reset(0);
	push_n(sb, 10, 0, 10000);
	sb.on_ack(0, bits({4}), 0, 1000000);
	sb.on_ack(0, bits({0, 4}), 0, 1000000);
	ASSERT_TRUE(sb.reordering_seen());
	u = sb.on_ack(0, bits({0, 4, 7}), 0, 50000);
	EXPECT_EQ(u.newly_lost, 3u);
	sb.reset(5);
	EXPECT_FALSE(sb.reordering_seen());
}

TEST(DpTxScoreboard, RackTimeDeclaresLoss)
{
	TxScoreboard sb(64);
	sb.reset(0);
	push_n(sb, 10, 0, 1000); // PSN i sent at i us
	AckUpdate u = sb.on_ack(0, bits({4}), 0, 2500); // 5 (sent 5000) delivered
	EXPECT_EQ(u.newly_lost, 3u); // 0, 1, 2: sent >= 2500 ns before 5
	EXPECT_EQ(sb.at(2).state, TxRecord::kLost);
	EXPECT_EQ(sb.at(3).state, TxRecord::kInFlight); // 2000 ns: within the window
	EXPECT_EQ(sb.at(4).state, TxRecord::kInFlight);
	u = sb.on_ack(0, bits({5}), 0, 2500); // 6 (sent 6000): 3 joins
	EXPECT_EQ(u.newly_lost, 1u);
	EXPECT_EQ(sb.at(3).state, TxRecord::kLost);
	EXPECT_EQ(sb.at(4).state, TxRecord::kInFlight);
	u = sb.on_ack(0, bits({5}), 0, 0); // window 0: 4 was sent before 6
	EXPECT_EQ(u.newly_lost, 1u);
	EXPECT_EQ(sb.at(7).state, TxRecord::kInFlight); // sent after 6: never by RACK
	uint32_t psn = 0;
	for (uint32_t want : {0u, 1u, 2u, 3u, 4u}) {
		ASSERT_TRUE(sb.next_lost(&psn));
		EXPECT_EQ(psn, want);
		sb.on_retransmit(psn, 20000 + want, 7);
	}
	EXPECT_FALSE(sb.next_lost(&psn));
	EXPECT_EQ(sb.in_flight(), 8u);
}

TEST(DpTxScoreboard, LostRetransmissionFoundByRack)
{
	TxScoreboard sb(64);
	sb.reset(0);
	push_n(sb, 5, 0, 1000); // 0..4 at 0..4 us
	sb.on_ack(0, bits({0, 1, 2}), 5000, 0); // 1, 2, 3: 0 is lost
	uint32_t psn = 0;
	ASSERT_TRUE(sb.next_lost(&psn));
	ASSERT_EQ(psn, 0u);
	sb.on_retransmit(0, 10000, 1); // resent at 10 us
	push_n(sb, 5, 11000, 1000); // 5..9 at 11..15 us
	// 4 and 6 (sent at 12 us) delivered: 12 - 10 us < 3 us, the
	// retransmission of 0 may still come; 5 (11 us) has 1 us
	AckUpdate u = sb.on_ack(0, bits({0, 1, 2, 3, 5}), 16000, 3000);
	EXPECT_EQ(u.newly_lost, 0u);
	// 8 (sent at 14 us): 14 - 10 >= 3, the retransmission is lost too, and
	// so is 5 (14 - 11 >= 3); 7 (13 us) is not
	u = sb.on_ack(0, bits({0, 1, 2, 3, 5, 7}), 17000, 3000);
	EXPECT_EQ(u.newly_lost, 2u);
	EXPECT_EQ(sb.at(0).state, TxRecord::kLost);
	EXPECT_EQ(sb.at(5).state, TxRecord::kLost);
	EXPECT_EQ(sb.at(7).state, TxRecord::kInFlight);
	ASSERT_TRUE(sb.next_lost(&psn));
	EXPECT_EQ(psn, 0u);
}

TEST(DpTxScoreboard, RetransmissionsDoNotMoveTheRackClock)
{
	// Karn: the ACK of a retransmitted PSN may be the original's, so its
	// (late) send time must not declare the packets sent in between lost.
	TxScoreboard sb(64);
	sb.reset(0);
	push_n(sb, 6, 0, 1000); // 0..5 at 0..5 us
	EXPECT_EQ(sb.go_back_n(1), 5u); // 1..5 lost
	uint32_t psn = 0;
	while (sb.next_lost(&psn))
		sb.on_retransmit(psn, 100000 + psn, 1); // resent at 100 us
	AckUpdate u = sb.on_ack(0, bits({4}), 101000, 1000); // 5 (resent) SACKed
	EXPECT_EQ(u.newly_acked_pkts, 1u);
	EXPECT_EQ(u.newly_lost, 0u); // 0 (first sent, at 0) stays in flight
	EXPECT_EQ(sb.at(0).state, TxRecord::kInFlight);
	// a first transmission sent later does move it
	push_n(sb, 1, 102000);
	u = sb.on_ack(0, bits({5}), 103000, 1000); // 6 SACKed
	EXPECT_EQ(u.newly_lost, 5u); // 0, and the retransmissions of 1..4 (at 100 us)
	EXPECT_EQ(sb.at(5).state, TxRecord::kSacked);
}

TEST(DpTxScoreboard, AcrossTheWrap)
{
	TxScoreboard sb(32);
	sb.reset(0xFFFFFFF8u);
	push_n(sb, 20, 0, 1000); // 2^32 - 8 .. 11
	EXPECT_EQ(sb.nxt(), 12u);
	EXPECT_EQ(sb.at(0xFFFFFFFFu).sent_ns, 7000u);
	EXPECT_EQ(sb.at(2).sent_ns, 10000u);
	// cum at 2^32 - 2; SACK 2^32 - 1 .. 2 (bits 0..3) and 5
	AckUpdate u = sb.on_ack(0xFFFFFFFEu, bits({0, 1, 2, 3, 6}), 0, kNoRack);
	EXPECT_TRUE(u.valid);
	EXPECT_EQ(u.newly_acked_pkts, 6u + 5);
	EXPECT_EQ(sb.una(), 0xFFFFFFFEu);
	EXPECT_EQ(sb.at(5).state, TxRecord::kSacked);
	EXPECT_EQ(u.newly_lost, 1u); // 2^32 - 2 has 5 SACKed above
	uint32_t psn = 0;
	ASSERT_TRUE(sb.next_lost(&psn));
	EXPECT_EQ(psn, 0xFFFFFFFEu);
	u = sb.on_ack(3, 0, 0, kNoRack);
	EXPECT_EQ(u.newly_acked_pkts, 1u); // 2^32 - 2 (lost, now acked)
	EXPECT_EQ(sb.lost(), 0u);
	EXPECT_FALSE(sb.next_lost(&psn));
	EXPECT_FALSE(sb.on_ack(0xFFFFFFFFu, 0, 0, kNoRack).valid); // now stale
	EXPECT_EQ(sb.go_back_n(0xFFFFFFFEu), 8u); // clamped to una = 3; 3..11 but 5
	ASSERT_TRUE(sb.next_lost(&psn));
	EXPECT_EQ(psn, 3u);
}

// The ring starts small and doubles as PSNs pile up (here across the wrap
// of the 32-bit PSN and with una moved on between doublings): every
// outstanding record keeps what it carried and its state.
TEST(DpTxScoreboard, RingGrowsKeepingRecords)
{
	TxScoreboard sb(1024);
	sb.reset(0xFFFFFF00u);
	push_n(sb, 100, 0, 10); // 2^32 - 256 .. 2^32 - 157: one doubling
	ASSERT_TRUE(sb.on_ack(0xFFFFFF00u + 30, bits({0, 5}), 0, kNoRack).valid);
	push_n(sb, 900, 1000, 10); // across the wrap, doubling to 1024
	EXPECT_EQ(sb.nxt() - sb.una(), 970u);
	EXPECT_TRUE(sb.full() == false);
	for (uint32_t psn = sb.una(); psn != sb.nxt(); psn++) {
		uint32_t i = psn - 0xFFFFFF00u;
		uint64_t want = i < 100 ? i * 10ull : 1000 + (i - 100) * 10ull;
		ASSERT_EQ(sb.at(psn).sent_ns, want) << "psn " << psn;
		bool sacked = psn == 0xFFFFFF00u + 31 || psn == 0xFFFFFF00u + 36;
		ASSERT_EQ(sb.at(psn).state, sacked ? TxRecord::kSacked : TxRecord::kInFlight) << "psn " << psn;
	}
	EXPECT_EQ(sb.in_flight(), 968u);
	push_n(sb, 54, 20000, 10);
	EXPECT_TRUE(sb.full());
	AckUpdate u = sb.on_ack(sb.nxt(), 0, 0, kNoRack);
	EXPECT_EQ(u.newly_acked_pkts, 1022u);
	EXPECT_EQ(sb.in_flight(), 0u);
}

TEST(DpTxScoreboard, GoBackNResendsInOrder)
{
	TxScoreboard sb(64);
	sb.reset(1000);
	push_n(sb, 10);
	sb.on_ack(1003, 0, 0, kNoRack);
	EXPECT_EQ(sb.go_back_n(1010), 0u); // at nxt: nothing
	EXPECT_EQ(sb.go_back_n(1003 - 65), 0u); // ancient
	EXPECT_EQ(sb.go_back_n(1003 + 0x80000000u), 0u); // nonsense
	EXPECT_EQ(sb.go_back_n(1005), 5u); // 1005..1009
	EXPECT_EQ(sb.in_flight(), 2u);
	EXPECT_EQ(sb.go_back_n(1001), 2u); // before una: from una, 1003 and 1004
	EXPECT_EQ(sb.go_back_n(1003), 0u); // all lost already
	uint32_t psn = 0, want = 1003;
	while (sb.next_lost(&psn)) {
		EXPECT_EQ(psn, want++);
		sb.on_retransmit(psn, 1, 0);
	}
	EXPECT_EQ(want, 1010u);
	EXPECT_EQ(sb.in_flight(), 7u);
	EXPECT_EQ(sb.go_back_n(1007), 3u); // resent ones can be lost again
	AckUpdate u = sb.on_ack(1010, 0, 0, kNoRack);
	EXPECT_EQ(u.newly_acked_pkts, 7u);
	EXPECT_EQ(sb.lost(), 0u);
	EXPECT_EQ(sb.in_flight(), 0u);
}

// A spurious RTO undone: what was declared lost and not yet resent is in
// flight again (counts and bytes), the resent one stays resent, SACKed ones
// stay SACKed, and nothing is left to resend.
TEST(DpTxScoreboard, UndoRtoPutsTheUnsentLostBackInFlight)
{
	TxScoreboard sb(64);
	sb.reset(0);
	push_n(sb, 8, 0, 0, 100);
	sb.on_ack(2, bits({1}), 0, kNoRack); // 4 SACKed
	ASSERT_EQ(sb.on_rto(), 5u); // 2, 3, 5, 6, 7
	uint32_t psn = 0;
	ASSERT_TRUE(sb.next_lost(&psn));
	ASSERT_EQ(psn, 2u);
	sb.on_retransmit(psn, 50, 3);
	EXPECT_EQ(sb.undo_rto(), 4u); // 3, 5, 6, 7
	EXPECT_EQ(sb.lost(), 0u);
	EXPECT_EQ(sb.in_flight(), 5u);
	EXPECT_EQ(sb.in_flight_bytes(), 500u);
	EXPECT_EQ(sb.at(4).state, TxRecord::kSacked);
	EXPECT_EQ(sb.at(2).tx_count, 2u);
	EXPECT_EQ(sb.at(3).tx_count, 1u);
	EXPECT_FALSE(sb.next_lost(&psn));
	EXPECT_EQ(sb.undo_rto(), 0u);
	// the loss rules judge the restored PSNs again: 3 is still missing when
	// 5, 6 and 7 are SACKed (with 4: dupthresh)
	AckUpdate l = sb.on_ack(3, bits({1, 2, 3}), 0, kNoRack); // cum 3: 2 acked; 4 (bit 0) already
	EXPECT_EQ(l.newly_lost, 1u);
	ASSERT_TRUE(sb.next_lost(&psn));
	EXPECT_EQ(psn, 3u);
	sb.on_retransmit(psn, 60, 3);
	AckUpdate u = sb.on_ack(8, 0, 0, kNoRack);
	EXPECT_EQ(u.newly_acked_pkts, 1u); // 3; the rest were SACKed
	EXPECT_EQ(sb.in_flight(), 0u);
}

TEST(DpTxScoreboard, RtoSparesSackedPsns)
{
	TxScoreboard sb(64);
	sb.reset(0);
	push_n(sb, 8, 0, 0, 100);
	sb.on_ack(2, bits({1, 3}), 0, kNoRack); // 4 and 6 SACKed
	EXPECT_EQ(sb.on_rto(), 4u); // 2, 3, 5, 7
	EXPECT_EQ(sb.in_flight(), 0u);
	EXPECT_EQ(sb.in_flight_bytes(), 0u);
	EXPECT_EQ(sb.lost(), 4u);
	EXPECT_EQ(sb.at(4).state, TxRecord::kSacked);
	EXPECT_EQ(sb.on_rto(), 0u);
	uint32_t psn = 0;
	std::vector<uint32_t> order;
	while (sb.next_lost(&psn)) {
		order.push_back(psn);
		sb.on_retransmit(psn, 50, 3);
	}
	EXPECT_EQ(order, (std::vector<uint32_t>{2, 3, 5, 7}));
	EXPECT_EQ(sb.in_flight_bytes(), 400u);
	AckUpdate u = sb.on_ack(8, 0, 100, kNoRack);
	EXPECT_EQ(u.newly_acked_pkts, 4u); // 4 and 6 were counted by their SACK
	EXPECT_EQ(u.newly_acked_bytes, 400u);
}

TEST(DpTxScoreboard, RetransmitIgnoresWhatIsNotOutstanding)
{
	TxScoreboard sb(16);
	sb.reset(0);
	push_n(sb, 4);
	sb.on_ack(1, bits({1}), 0, kNoRack); // 0 acked, 3 SACKed
	auto before = snapshot(sb);
	sb.on_retransmit(0, 9, 9); // acked
	sb.on_retransmit(3, 9, 9); // SACKed
	sb.on_retransmit(4, 9, 9); // not sent
	sb.on_retransmit(0x80000000u, 9, 9);
	EXPECT_EQ(snapshot(sb), before);
	EXPECT_EQ(sb.at(3).tx_count, 1);
	sb.on_retransmit(2, 9, 9); // in flight: a probe
	EXPECT_EQ(sb.at(2).tx_count, 2);
	EXPECT_EQ(sb.at(2).sent_ns, 9u);
	EXPECT_EQ(sb.in_flight(), 2u);
}

TEST(DpTxScoreboard, FullRefusesPush)
{
	TxScoreboard sb(16);
	sb.reset(0xFFFFFFFAu);
	push_n(sb, 16);
	EXPECT_TRUE(sb.full());
	uint32_t nxt = sb.nxt();
	EXPECT_EQ(sb.push(rec(0)), nxt);
	EXPECT_EQ(sb.nxt(), nxt);
	EXPECT_EQ(sb.in_flight(), 16u);
	sb.on_ack(0xFFFFFFFBu, 0, 0, kNoRack);
	EXPECT_FALSE(sb.full());
	EXPECT_EQ(sb.push(rec(0)), nxt);
	EXPECT_TRUE(sb.full());
}

TEST(DpTxScoreboard, RttSampleFromEcho)
{
	TxScoreboard sb(16);
	sb.reset(0);
	uint64_t rtt = 0;
	EXPECT_FALSE(sb.rtt_sample(100, 200, &rtt)); // nothing sent yet
	sb.push(rec(1000));
	sb.push(rec(2000));
	EXPECT_TRUE(sb.rtt_sample(2000, 2500, &rtt));
	EXPECT_EQ(rtt, 500u);
	EXPECT_TRUE(sb.rtt_sample(1000, 2500, &rtt));
	EXPECT_EQ(rtt, 1500u);
	EXPECT_FALSE(sb.rtt_sample(999, 2500, &rtt)); // before anything we sent
	EXPECT_FALSE(sb.rtt_sample(2001, 2500, &rtt)); // after the latest we sent
	EXPECT_FALSE(sb.rtt_sample(2000, 1999, &rtt)); // from the future
	sb.on_ack(1, 0, 0, kNoRack);
	sb.on_rto();
	sb.on_retransmit(1, 3000, 0);
	EXPECT_TRUE(sb.rtt_sample(3000, 3100, &rtt)); // the retransmission's own stamp
	EXPECT_EQ(rtt, 100u);
}

TEST(DpTxScoreboard, ManyProbesOfOnePsnKeepTheFifoBounded)
{
	// Every probe of an in-flight PSN queues a RACK entry and makes the
	// previous one stale; the ring must compact rather than lose live ones.
	TxScoreboard sb(4);
	sb.reset(0);
	push_n(sb, 3, 0, 10);
	for (uint64_t i = 0; i < 200; i++)
		sb.on_retransmit(static_cast<uint32_t>(i % 3), 1000 + i, 0);
	EXPECT_EQ(sb.at(0).tx_count, 1 + 67);
	push_n(sb, 1, 1198); // 3, sent between the last probes of 0 (1198) and 1 (1199)
	AckUpdate u = sb.on_ack(0, bits({2}), 2000, 0); // 3 SACKed
	EXPECT_EQ(u.newly_lost, 1u); // 2 (probed at 1197); 0 was sent in the same ns
	EXPECT_EQ(sb.at(2).state, TxRecord::kLost);
	EXPECT_EQ(sb.in_flight(), 2u);
	sb.on_retransmit(2, 3000, 0);
	u = sb.on_ack(1, bits({1}), 4000, 0); // 0 acked (a retransmission: the clock stays), 3 again
	EXPECT_EQ(u.newly_acked_pkts, 1u);
	EXPECT_EQ(u.newly_lost, 0u);
	u = sb.on_ack(4, 0, 4000, 0);
	EXPECT_EQ(u.newly_acked_pkts, 2u); // 1 and 2; 3 was counted by its SACK
	EXPECT_EQ(sb.in_flight(), 0u);
}

TEST(DpTxScoreboard, RackFifoKeepsAnOldLiveRetransmission)
{
	// One early retransmission, then enough probes of another PSN to fill
	// the RACK ring with stale entries: compaction must keep the early one.
	TxScoreboard sb(8);
	sb.reset(0);
	push_n(sb, 3, 0, 10); // 0, 1, 2 at 0, 10, 20
	sb.on_retransmit(0, 100, 0);
	for (uint64_t i = 0; i < 20; i++)
		sb.on_retransmit(1, 200 + i, 0);
	push_n(sb, 1, 500); // 3
	AckUpdate u = sb.on_ack(0, bits({2}), 600, 50); // 3 delivered: sent at 500
	EXPECT_EQ(u.newly_lost, 3u);
	EXPECT_EQ(sb.at(0).state, TxRecord::kLost); // resent at 100
	EXPECT_EQ(sb.at(1).state, TxRecord::kLost); // last probed at 219
	EXPECT_EQ(sb.at(2).state, TxRecord::kLost); // first sent at 20
}

// ---------------------------------------------------------------------------
// The reference model: the rules of tx_scoreboard.h applied naively.

struct MRec {
	uint64_t sent;
	uint32_t len;
	uint8_t tx;
	uint8_t state;
};

struct Model {
	uint32_t base;
	uint64_t una = 0, nxt = 0;
	std::map<uint64_t, MRec> out; // [una, nxt)
	bool rack_valid = false;
	uint64_t rack_psn = 0, rack_sent = 0;
	uint64_t delivered = 0; // PSNs counted as acked, ever
	bool reordering_seen = false; // a first transmission delivered after a later one

	explicit Model(uint32_t first) : base(first)
	{
	}
	uint32_t psn32(uint64_t p) const
	{
		return base + static_cast<uint32_t>(p);
	}
	void push(uint64_t sent, uint32_t len)
	{
		out[nxt++] = MRec{sent, len, 1, TxRecord::kInFlight};
	}
	uint32_t count(uint8_t state) const
	{
		uint32_t n = 0;
		for (const auto &[p, r] : out)
			n += r.state == state;
		return n;
	}
	uint64_t in_flight_bytes() const
	{
		uint64_t b = 0;
		for (const auto &[p, r] : out)
			if (r.state == TxRecord::kInFlight)
				b += r.len;
		return b;
	}
	void deliver(uint64_t p, MRec &r, AckUpdate &u)
	{
		u.newly_acked_pkts++;
		u.newly_acked_bytes += r.len;
		delivered++;
		if (r.tx == 1) {
			if (rack_valid && p < rack_psn)
				reordering_seen = true;
			rack_psn = rack_valid ? std::max(rack_psn, p) : p;
			rack_sent = rack_valid ? std::max(rack_sent, r.sent) : r.sent;
			rack_valid = true;
		}
	}
	bool rack(uint64_t sent, uint64_t w) const
	{
		return rack_valid && w != kNoRack && rack_sent >= sent && rack_sent - sent >= w;
	}
	AckUpdate on_ack(uint32_t cum32, uint64_t sack, uint64_t w)
	{
		AckUpdate u{0, 0, 0, false};
		uint32_t d = cum32 - psn32(una);
		if (d > nxt - una)
			return u;
		u.valid = true;
		uint64_t cum = una + d;
		for (; una < cum; una++) {
			MRec &r = out.at(una);
			if (r.state != TxRecord::kSacked)
				deliver(una, r, u);
			out.erase(una);
		}
		for (uint32_t i = 0; i < 64; i++) {
			uint64_t p = cum + 1 + i;
			if (!((sack >> i) & 1) || p >= nxt)
				continue;
			MRec &r = out.at(p);
			if (r.state != TxRecord::kSacked) {
				deliver(p, r, u);
				r.state = TxRecord::kSacked;
			}
		}
		for (auto &[p, r] : out) {
			if (r.state != TxRecord::kInFlight)
				continue;
			bool lost;
			if (r.tx == 1) {
				uint32_t above = 0;
				for (auto it = out.upper_bound(p); it != out.end(); ++it)
					above += it->second.state == TxRecord::kSacked;
				lost = (!reordering_seen && above >= 3) || (p < rack_psn && rack(r.sent, w));
			} else {
				lost = rack(r.sent, w) && rack_sent > r.sent;
			}
			if (lost) {
				r.state = TxRecord::kLost;
				u.newly_lost++;
			}
		}
		return u;
	}
	bool next_lost(uint64_t *p) const
	{
		for (const auto &[q, r] : out)
			if (r.state == TxRecord::kLost) {
				*p = q;
				return true;
			}
		return false;
	}
	void retransmit(uint64_t p, uint64_t now)
	{
		auto it = out.find(p);
		if (it == out.end() || it->second.state == TxRecord::kSacked)
			return;
		it->second.state = TxRecord::kInFlight;
		it->second.sent = now;
		it->second.tx = static_cast<uint8_t>(std::min(255, it->second.tx + 1));
	}
	uint32_t mark_from(uint64_t from)
	{
		uint32_t n = 0;
		for (auto it = out.lower_bound(from); it != out.end(); ++it)
			if (it->second.state == TxRecord::kInFlight) {
				it->second.state = TxRecord::kLost;
				n++;
			}
		return n;
	}
};

void expect_same(const TxScoreboard &sb, const Model &m)
{
	ASSERT_EQ(sb.una(), m.psn32(m.una));
	ASSERT_EQ(sb.nxt(), m.psn32(m.nxt));
	ASSERT_EQ(sb.in_flight(), m.count(TxRecord::kInFlight));
	ASSERT_EQ(sb.lost(), m.count(TxRecord::kLost));
	ASSERT_EQ(sb.sacked(), m.count(TxRecord::kSacked));
	ASSERT_EQ(sb.in_flight_bytes(), m.in_flight_bytes());
	for (const auto &[p, r] : m.out) {
		const TxRecord &x = sb.at(m.psn32(p));
		ASSERT_EQ(x.state, r.state) << "psn " << p;
		ASSERT_EQ(x.tx_count, r.tx) << "psn " << p;
		ASSERT_EQ(x.sent_ns, r.sent) << "psn " << p;
	}
}

struct Net {
	unsigned drop_pct; // data packets lost
	uint64_t jitter_ns; // data delay spread: reordering
	unsigned ack_drop_pct;
	uint64_t ack_jitter_ns; // ACK delay spread: stale ACKs
	unsigned forged_pct; // forged ACKs per step
	uint64_t reorder_window_ns;
	bool go_back_n; // receiver drops out-of-order data, NACKs
};

// A sender, a lossy reordering network and a receiver (a std::set); the
// scoreboard and the model see every event and must agree after each.
void simulate(const Net &net, uint32_t cap, uint32_t first, uint64_t seed, int steps)
{
	Rng rng(seed);
	TxScoreboard sb(cap);
	Model m(first);
	sb.reset(first);

	struct Pkt {
		uint64_t at;
		uint64_t psn;
	};
	struct Ack {
		uint64_t at;
		uint32_t cum;
		uint64_t sack;
		bool nack;
	};
	std::vector<Pkt> data;
	std::vector<Ack> acks;
	uint64_t rcv_cum = 0;
	std::set<uint64_t> rcv; // received above rcv_cum
	uint64_t now = 1000, last_progress = now, acked_total = 0;

	auto send = [&](uint64_t psn) {
		if (!rng.chance(net.drop_pct))
			data.push_back({now + 5000 + rng.below(net.jitter_ns + 1), psn});
	};
	auto make_ack = [&](bool nack) {
		uint64_t sack = 0;
		for (uint32_t i = 0; i < 64; i++)
			if (rcv.count(rcv_cum + 1 + i))
				sack |= 1ull << i;
		if (!rng.chance(net.ack_drop_pct))
			acks.push_back({now + 5000 + rng.below(net.ack_jitter_ns + 1), m.psn32(rcv_cum), sack, nack});
		if (rng.chance(3)) // a duplicate ACK
			acks.push_back({now + 5000 + rng.below(net.ack_jitter_ns + 1), m.psn32(rcv_cum), sack, nack});
	};
	auto check_ack = [&](uint32_t cum, uint64_t sack) {
		AckUpdate u = sb.on_ack(cum, sack, now, net.reorder_window_ns);
		AckUpdate want = m.on_ack(cum, sack, net.reorder_window_ns);
		ASSERT_EQ(u.valid, want.valid);
		ASSERT_EQ(u.newly_acked_pkts, want.newly_acked_pkts);
		ASSERT_EQ(u.newly_acked_bytes, want.newly_acked_bytes);
		ASSERT_EQ(u.newly_lost, want.newly_lost);
		acked_total += u.newly_acked_pkts;
		if (u.newly_acked_pkts)
			last_progress = now;
	};

	for (int step = 0; step < steps; step++) {
		now += 100 + rng.below(400);
		// the sender: new data while the window allows
		if (!sb.full() && rng.chance(60)) {
			uint32_t len = 64 + static_cast<uint32_t>(rng.below(1437));
			uint32_t want = sb.nxt();
			ASSERT_EQ(sb.push(rec(now, len)), want);
			m.push(now, len);
			send(m.nxt - 1);
		}
		// retransmissions, oldest lost first
		uint32_t psn = 0;
		uint64_t mp = 0;
		for (int k = 0; k < 2 && rng.chance(70); k++) {
			bool has = sb.next_lost(&psn);
			ASSERT_EQ(has, m.next_lost(&mp));
			if (!has)
				break;
			ASSERT_EQ(psn, m.psn32(mp));
			sb.on_retransmit(psn, now, 0);
			m.retransmit(mp, now);
			send(mp);
		}
		if (rng.chance(1) && m.nxt > m.una) { // a probe of something outstanding
			uint64_t p = m.una + rng.below(m.nxt - m.una);
			sb.on_retransmit(m.psn32(p), now, 0);
			m.retransmit(p, now);
			send(p);
		}
		// deliveries
		for (size_t i = 0; i < data.size();) {
			if (data[i].at > now) {
				i++;
				continue;
			}
			uint64_t p = data[i].psn;
			data[i] = data.back();
			data.pop_back();
			if (net.go_back_n) {
				if (p == rcv_cum) {
					rcv_cum++;
					make_ack(false);
				} else if (p > rcv_cum) {
					make_ack(true);
				}
				continue;
			}
			if (p >= rcv_cum)
				rcv.insert(p);
			while (rcv.count(rcv_cum))
				rcv.erase(rcv_cum++);
			make_ack(false);
		}
		for (size_t i = 0; i < acks.size();) {
			if (acks[i].at > now) {
				i++;
				continue;
			}
			Ack a = acks[i];
			acks[i] = acks.back();
			acks.pop_back();
			check_ack(a.cum, a.sack);
			if (::testing::Test::HasFatalFailure())
				return;
			if (a.nack) {
				// from a.cum, or from una when a.cum is at most
				// a window behind it (the NACK overtook an ACK)
				int64_t d = static_cast<int32_t>(a.cum - m.psn32(m.una));
				uint32_t want = d < -static_cast<int64_t>(cap)
							? 0
							: m.mark_from(m.una + std::max<int64_t>(d, 0));
				ASSERT_EQ(sb.go_back_n(a.cum), want);
			}
		}
		// forged ACKs: anything at all
		if (rng.chance(net.forged_pct)) {
			uint32_t cum;
			switch (rng.below(5)) {
			case 0:
				cum = static_cast<uint32_t>(rng.next());
				break;
			case 1:
				cum = sb.nxt() + 1 + static_cast<uint32_t>(rng.below(100));
				break;
			case 2:
				cum = sb.una() - 1 - static_cast<uint32_t>(rng.below(100));
				break;
			default:
				cum = sb.una() + static_cast<uint32_t>(rng.below(sb.nxt() - sb.una() + 1));
				break;
			}
			uint64_t sack = rng.chance(50) ? ~0ull : rng.next();
			// a forged ACK that is accepted changes what the receiver
			// "has": keep the network's receiver in step so the run
			// goes on (the sender believes it and never resends)
			check_ack(cum, sack);
			if (::testing::Test::HasFatalFailure())
				return;
			if (m.una > rcv_cum) {
				rcv_cum = m.una;
				rcv.erase(rcv.begin(), rcv.lower_bound(rcv_cum));
			}
			for (const auto &[p, r] : m.out)
				if (r.state == TxRecord::kSacked && p > rcv_cum)
					rcv.insert(p);
		}
		// the retransmission timer
		if (m.nxt > m.una && now - last_progress > 200000) {
			uint32_t n = sb.on_rto();
			ASSERT_EQ(n, m.mark_from(m.una));
			last_progress = now;
		}
		expect_same(sb, m);
		if (::testing::Test::HasFatalFailure())
			return;
	}
	// every PSN counted once: what was reported is what the model delivered
	EXPECT_EQ(acked_total, m.delivered);
	EXPECT_EQ(m.delivered, (m.una) + m.count(TxRecord::kSacked));
	EXPECT_GT(m.una, static_cast<uint64_t>(steps) / 20) << "the connection made progress";
}

TEST(DpTxScoreboard, RandomNetworkMatchesModel)
{
	const Net nets[] = {
		{0, 0, 0, 0, 0, 20000, false}, // clean
		{2, 3000, 1, 0, 0, 20000, false}, // drops, a little reordering
		{2, 40000, 2, 2000, 0, 10000, false}, // heavy reordering: spurious losses
		{5, 20000, 5, 20000, 0, 5000, false}, // stale ACKs
		{3, 20000, 2, 5000, 2, 8000, false}, // forged ACKs
		{1, 30000, 1, 1000, 0, kNoRack, false}, // dupthresh only
		{2, 10000, 2, 1000, 0, 0, false}, // RACK with no reordering allowance
		{2, 3000, 1, 1000, 0, 20000, true}, // Go-Back-N
	};
	uint64_t seed = 1;
	for (const Net &net : nets) {
		for (uint32_t cap : {16u, 64u, 256u}) {
			for (uint32_t first : {0u, 0xFFFFFFFFu - 300}) {
				SCOPED_TRACE(::testing::Message() << "net " << (&net - nets) << " cap " << cap
								  << " first " << first << " seed " << seed);
				simulate(net, cap, first, seed++, 6000);
				if (HasFatalFailure())
					return;
			}
		}
	}
}

} // namespace
