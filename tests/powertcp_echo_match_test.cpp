// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// Which ACK an INT echo belongs to (lumen_ptcp_echo_match, powertcp_ack.h),
// and the module's store-then-consume protocol around it, against a model of
// what TCP does: the hook stores each echo when its segment arrives, TCP
// processes segments later, in batches when they waited in the socket
// backlog, and drops some (PAWS, out of window) after the hook saw them.
// Properties: an echo is applied only to the ACK that carried it; the
// newest echo of a backlogged batch is applied to its own ACK (the defect
// this replaced: the batch's first ACK consumed it, nobody applied it);
// nothing is applied twice.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <random>
#include <vector>

extern "C" {
#include "lumen/powertcp_ack.h"
}

namespace
{

constexpr auto kThis = LUMEN_PTCP_ECHO_THIS_ACK;
constexpr auto kOlder = LUMEN_PTCP_ECHO_OLDER;
constexpr auto kNewer = LUMEN_PTCP_ECHO_NEWER;

TEST(EchoMatch, AckSeqDecidesFirst)
{
	EXPECT_EQ(lumen_ptcp_echo_match(1000, 1, 50, 1000, 1, 50), kThis);
	EXPECT_EQ(lumen_ptcp_echo_match(999, 1, 50, 1000, 1, 50), kOlder);
	EXPECT_EQ(lumen_ptcp_echo_match(1001, 1, 49, 1000, 1, 50), kNewer); // TSval does not matter then
	EXPECT_EQ(lumen_ptcp_echo_match(1000, 0, 0, 1000, 0, 0), kThis); // no timestamps: ack_seq alone
	EXPECT_EQ(lumen_ptcp_echo_match(1001, 0, 0, 1000, 0, 0), kNewer);
}

TEST(EchoMatch, SameAckSeqTsvalDecides)
{
	EXPECT_EQ(lumen_ptcp_echo_match(1000, 1, 51, 1000, 1, 50), kNewer); // a later duplicate ACK
	EXPECT_EQ(lumen_ptcp_echo_match(1000, 1, 49, 1000, 1, 50), kOlder); // PAWS-dropped, or earlier
	// timestamps on one segment only: another segment's
	EXPECT_EQ(lumen_ptcp_echo_match(1000, 1, 50, 1000, 0, 0), kOlder);
	EXPECT_EQ(lumen_ptcp_echo_match(1000, 0, 0, 1000, 1, 50), kOlder);
}

TEST(EchoMatch, SerialArithmeticAcrossTheWrap)
{
	EXPECT_EQ(lumen_ptcp_echo_match(5, 1, 7, 0xFFFFFFF0u, 1, 7), kNewer);
	EXPECT_EQ(lumen_ptcp_echo_match(0xFFFFFFF0u, 1, 7, 5, 1, 7), kOlder);
	EXPECT_EQ(lumen_ptcp_echo_match(5, 1, 3, 5, 1, 0xFFFFFFFEu), kNewer);
	EXPECT_EQ(lumen_ptcp_echo_match(5, 1, 0xFFFFFFFEu, 5, 1, 3), kOlder);
}

// One segment the peer sent: its ack_seq and TSval, whether it carries an
// echo, and whether TCP will drop it after the hook stored its echo.
struct Segment {
	uint32_t ack, tsval;
	bool echo, dropped;
};

// The module's per-socket protocol (kernel/tcp_powertcp.c: ptcp_nf_echo,
// ptcp_take_echo), over the segments' indexes.
struct Module {
	bool ts;
	uint32_t gen = 0, seen = 0;
	int stored = -1; // index of the segment whose echo is stored
	uint32_t superseded = 0, unmatched = 0;

	void hook(const std::vector<Segment> &segs, int i)
	{
		if (!segs[i].echo)
			return;
		if (gen != seen)
			superseded++;
		stored = i;
		gen++;
	}
	// cong_control for segment i: the echo applied, if any
	std::optional<int> ack(const std::vector<Segment> &segs, int i)
	{
		if (gen == seen)
			return std::nullopt;
		const Segment &e = segs[stored], &a = segs[i];
		switch (lumen_ptcp_echo_match(e.ack, ts, e.tsval, a.ack, ts, a.tsval)) {
		case LUMEN_PTCP_ECHO_THIS_ACK:
			seen = gen;
			return stored;
		case LUMEN_PTCP_ECHO_OLDER:
			seen = gen;
			unmatched++;
			return std::nullopt;
		case LUMEN_PTCP_ECHO_NEWER:
			return std::nullopt;
		}
		return std::nullopt;
	}
};

// A random ACK stream: cumulative ACKs with duplicates, TSvals that tick
// every few segments, both across the 32-bit wrap; some segments dropped by
// TCP after the hook (PAWS: an old TSval; the others: never processed).
std::vector<Segment> ack_stream(std::mt19937 &rng, size_t n, bool ts)
{
	std::vector<Segment> segs;
	uint32_t ack = 0xFFFF0000u + rng() % 0x10000, tsval = 0xFFFFFF00u + rng() % 0x100;
	std::uniform_int_distribution<int> pct(0, 99);
	for (size_t i = 0; i < n; i++) {
		if (pct(rng) < 70)
			ack += 1448 * (1 + rng() % 4); // else a duplicate ACK
		if (pct(rng) < 40)
			tsval += 1;
		Segment s{ack, tsval, pct(rng) < 90, pct(rng) < 5};
		if (s.dropped && ts)
			s.tsval -= 1000; // PAWS would drop it
		segs.push_back(s);
	}
	return segs;
}

// Every ACK TCP processes gets at most its own echo; the last segment of each
// backlogged batch that TCP processes and that carries an echo gets it.
void run_batches(bool ts, uint32_t seed)
{
	std::mt19937 rng(seed);
	std::vector<Segment> segs = ack_stream(rng, 4000, ts);
	Module m{ts};
	std::vector<int> applied_to(segs.size(), -1);
	size_t i = 0, batches = 0, newest_applied = 0, newest_eligible = 0;
	while (i < segs.size()) {
		size_t n = 1 + rng() % 12, end = std::min(segs.size(), i + n);
		for (size_t k = i; k < end; k++) // all arrive while the socket is owned
			m.hook(segs, (int)k);
		for (size_t k = i; k < end; k++) { // then the backlog is processed
			if (segs[k].dropped)
				continue;
			std::optional<int> e = m.ack(segs, (int)k);
			if (!e)
				continue;
			ASSERT_EQ(applied_to[*e], -1) << "echo " << *e << " applied twice";
			applied_to[*e] = (int)k;
			// its own segment, or one TCP cannot tell from it (same ack_seq
			// and TSval, or the same ack_seq without timestamps)
			EXPECT_EQ(segs[*e].ack, segs[k].ack);
			if (ts) {
				EXPECT_EQ(segs[*e].tsval, segs[k].tsval);
			}
		}
		// the newest echo of the batch, if its segment was processed
		int last = -1;
		for (size_t k = i; k < end; k++)
			if (segs[k].echo)
				last = (int)k;
		if (last >= 0 && !segs[last].dropped) {
			newest_eligible++;
			if (applied_to[last] >= 0)
				newest_applied++;
		}
		batches++;
		i = end;
	}
	// without timestamps a duplicate ACK earlier in the batch may take the
	// newest echo (same ack_seq): it is applied, to an indistinguishable ACK
	EXPECT_EQ(newest_applied, newest_eligible) << batches << " batches";
	EXPECT_GT(m.superseded, 0u);
}

TEST(EchoMatch, BackloggedBatchesApplyTheNewestEchoWithTimestamps)
{
	for (uint32_t seed = 1; seed <= 20; seed++)
		run_batches(true, seed);
}

TEST(EchoMatch, BackloggedBatchesApplyTheNewestEchoWithoutTimestamps)
{
	for (uint32_t seed = 1; seed <= 20; seed++)
		run_batches(false, seed);
}

} // namespace
