// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// Collectives as transfer schedules (dpdk/transport/collective.h): every
// collective run by the executor over random ranks, sizes (0, smaller than
// N*C elements, not dividing) and channels, its outputs compared with the
// collective's definition computed here from the inputs alone (bytes for the
// copies; int32 sums exact; float32 sums exact on small integers, byte-exact
// against the documented order of additions, within rounding of a double
// sum, and the same on a second run); the ring's shape (successor only, C
// flows within an element, step counts, no two sums into one byte); the
// permutation's derangement and seeds; the layouts; nccl-tests' factors; the
// planner's demands for the 4-channel ring and alltoall, fed to
// ethereal_plan(); and every refusal.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include "test_rng.h"
#include "transport/collective.h"
#include "transport/ethereal_plan.h"

namespace
{

using namespace lumen::dp;

const Collective kAll[] = {Collective::kAllToAll,  Collective::kAllGather,    Collective::kReduceScatter,
			   Collective::kAllReduce, Collective::kAllReduceA2A, Collective::kPermutation};

CollectiveSchedule build_ok(const CollectiveParams &p)
{
	CollectiveSchedule s;
	std::string e = build_collective(p, &s);
	EXPECT_EQ(e, "");
	return s;
}

CollectiveParams params(Collective c, uint32_t n, uint64_t bytes, uint32_t channels, uint32_t elem = 4)
{
	CollectiveParams p;
	p.collective = c;
	p.ranks = n;
	p.bytes = bytes;
	p.channels = channels;
	p.elem_size = elem;
	return p;
}

// Part i of total cut into parts, the first (total mod parts) one longer:
// the header's definition of blocks, written again.
std::pair<uint64_t, uint64_t> part(uint64_t total, uint64_t parts, uint64_t i)
{
	uint64_t q = total / parts, r = total % parts;
	return {q * i + (i < r ? i : r), q + (i < r)};
}

uint32_t u32_at(const std::vector<uint8_t> &b, uint64_t at)
{
	uint32_t v;
	std::memcpy(&v, b.data() + at, 4);
	return v;
}

float f32_at(const std::vector<uint8_t> &b, uint64_t at)
{
	float v;
	std::memcpy(&v, b.data() + at, 4);
	return v;
}

enum class Fill {
	kBytes, // random bytes
	kInt32, // random int32
	kSmallFloat, // floats holding integers in -100..100: every sum exact
	kFloat, // floats of random sign and magnitude 2^-8..2^8
};

// Buffers as the layout says, all garbage, the input region filled.
std::vector<RankBuffers> inputs(const CollectiveParams &p, lumen::test::Rng &rng, Fill fill)
{
	std::vector<RankBuffers> b(p.ranks);
	for (uint32_t r = 0; r < p.ranks; r++) {
		CollectiveLayout l = collective_layout(p, r);
		b[r].send.resize(l.send_bytes);
		b[r].recv.resize(l.recv_bytes);
		for (uint8_t &x : b[r].send)
			x = rng.byte();
		for (uint8_t &x : b[r].recv)
			x = rng.byte();
		std::vector<uint8_t> &in = l.input.buffer == Buffer::kSend ? b[r].send : b[r].recv;
		for (uint64_t at = l.input.offset; fill != Fill::kBytes && at < l.input.offset + l.input.bytes;
		     at += 4) {
			float f = fill == Fill::kSmallFloat ? (float)((int)rng.range(0, 200) - 100)
							    : std::ldexp((float)rng.range(1u << 23, (1u << 24) - 1),
									 (int)rng.range(0, 16) - 31);
			if (fill != Fill::kInt32 && rng.chance(50))
				f = -f;
			uint32_t v = fill == Fill::kInt32 ? (uint32_t)rng.next() : 0;
			if (fill != Fill::kInt32)
				std::memcpy(&v, &f, 4);
			std::memcpy(in.data() + at, &v, 4);
		}
	}
	return b;
}

// Rank `rank`'s output region as the collective's definition makes it from
// the inputs `in`; sums in the order collective.h documents (exact for
// int32, which does not depend on it).
std::vector<uint8_t> expected_output(const CollectiveParams &p, const std::vector<RankBuffers> &in,
				     const std::vector<uint32_t> &pi, uint32_t rank)
{
	const uint32_t n = p.ranks;
	const uint64_t e = p.elem_size, elems = p.bytes / e;
	std::vector<uint8_t> out;
	switch (p.collective) {
	case Collective::kAllToAll: // block (i -> rank) has len((i + rank) mod N)
		for (uint32_t i = 0; i < n; i++) {
			uint64_t at = 0;
			for (uint32_t j = 0; j < rank; j++)
				at += part(elems, n, (i + j) % n).second;
			uint64_t len = part(elems, n, (i + rank) % n).second;
			out.insert(out.end(), in[i].send.begin() + at * e, in[i].send.begin() + (at + len) * e);
		}
		return out;
	case Collective::kAllGather:
		for (uint32_t q = 0; q < n; q++) {
			auto b = part(elems, n, q);
			out.insert(out.end(), in[q].recv.begin() + b.first * e,
				   in[q].recv.begin() + (b.first + b.second) * e);
		}
		return out;
	case Collective::kPermutation:
		for (uint32_t q = 0; q < n; q++)
			if (pi[q] == rank)
				out = in[q].send;
		return out;
	default:
		break;
	}
	const bool ints = p.reduce == ReduceType::kInt32;
	for (uint32_t b = 0; b < n; b++) {
		if (p.collective == Collective::kReduceScatter && b != rank)
			continue;
		// Ring: x_{b+1} + x_{b+2} + ... + x_b; by alltoall: x_b + x_0 + x_1 + ...
		std::vector<uint32_t> order;
		const bool ring = p.collective != Collective::kAllReduceA2A;
		for (uint32_t m = 0; m < n; m++)
			order.push_back(ring ? (b + 1 + m) % n : m == 0 ? b : m - (m <= b));
		auto blk = part(elems, n, b);
		for (uint64_t x = blk.first; x < blk.first + blk.second; x++) {
			uint32_t iacc = u32_at(in[order[0]].recv, x * 4);
			float facc = f32_at(in[order[0]].recv, x * 4);
			for (uint32_t m = 1; m < n; m++) {
				iacc += u32_at(in[order[m]].recv, x * 4);
				facc = facc + f32_at(in[order[m]].recv, x * 4);
			}
			out.resize(out.size() + 4);
			std::memcpy(out.data() + out.size() - 4, ints ? (const void *)&iacc : (const void *)&facc, 4);
		}
	}
	return out;
}

std::vector<uint8_t> output_of(const CollectiveParams &p, const std::vector<RankBuffers> &b, uint32_t rank)
{
	CollectiveLayout l = collective_layout(p, rank);
	const std::vector<uint8_t> &buf = l.output.buffer == Buffer::kSend ? b[rank].send : b[rank].recv;
	return std::vector<uint8_t>(buf.begin() + l.output.offset, buf.begin() + l.output.offset + l.output.bytes);
}

// Random parameters: N 2..16, C 1..4, sizes of 0, below N*C elements, and
// (mostly) not a multiple of N*C elements; element sizes 1..8 for copies.
CollectiveParams random_params(lumen::test::Rng &rng, Collective c, int iter)
{
	const uint32_t n = (uint32_t)rng.range(2, 16), ch = (uint32_t)rng.range(1, 4);
	const uint32_t elem = collective_reduces(c) ? 4 : (uint32_t)rng.range(1, 8);
	uint64_t elems = iter % 10 == 0	  ? 0
			 : iter % 10 == 1 ? rng.range(1, n * ch)
					  : rng.range(0, 16) * n * ch + rng.range(iter % 10 == 2 ? 0 : 1, n * ch - 1);
	CollectiveParams p = params(c, n, elems * elem, ch, elem);
	p.seed = rng.next();
	return p;
}

// Every collective's outputs against its definition, for copies and sums.
TEST(Collective, OutputsMatchDefinition)
{
	lumen::test::Rng rng(0xc011ec7);
	for (Collective c : kAll)
		for (int iter = 0; iter < 40; iter++) {
			CollectiveParams p = random_params(rng, c, iter);
			const bool reduce = collective_reduces(c);
			const Fill fill = !reduce ? Fill::kBytes : iter & 1 ? Fill::kInt32 : Fill::kSmallFloat;
			p.reduce = fill == Fill::kInt32 ? ReduceType::kInt32 : ReduceType::kFloat32;
			SCOPED_TRACE(std::string(collective_name(c)) + " N=" + std::to_string(p.ranks) +
				     " C=" + std::to_string(p.channels) + " S=" + std::to_string(p.bytes) +
				     " e=" + std::to_string(p.elem_size));
			CollectiveSchedule s = build_ok(p);
			std::vector<RankBuffers> b = inputs(p, rng, fill), in = b;
			ASSERT_EQ(execute_schedule(s, &b), "");
			for (uint32_t r = 0; r < p.ranks; r++)
				ASSERT_EQ(output_of(p, b, r), expected_output(p, in, s.permutation, r)) << "rank " << r;
			// Small integers: the float sum is the exact one, in any order.
			if (fill == Fill::kSmallFloat)
				for (uint32_t r = 0; r < p.ranks; r++) {
					CollectiveLayout l = collective_layout(p, r);
					uint64_t wrong = 0;
					for (uint64_t at = l.output.offset; at < l.output.offset + l.output.bytes;
					     at += 4) {
						int64_t sum = 0;
						for (uint32_t q = 0; q < p.ranks; q++)
							sum += (int64_t)f32_at(in[q].recv, at);
						wrong += f32_at(b[r].recv, at) != (float)sum;
					}
					ASSERT_EQ(wrong, 0u) << "rank " << r;
				}
		}
}

// Arbitrary float32: the documented order of additions byte for byte (above),
// within rounding of a double sum, every allreduce rank the same, a second
// run the same.
TEST(Collective, FloatSumsAreReproducible)
{
	lumen::test::Rng rng(0xf1a7);
	for (Collective c : {Collective::kReduceScatter, Collective::kAllReduce, Collective::kAllReduceA2A})
		for (int iter = 0; iter < 20; iter++) {
			CollectiveParams p = random_params(rng, c, iter);
			SCOPED_TRACE(std::string(collective_name(c)) + " N=" + std::to_string(p.ranks) +
				     " C=" + std::to_string(p.channels) + " S=" + std::to_string(p.bytes));
			CollectiveSchedule s = build_ok(p);
			std::vector<RankBuffers> b = inputs(p, rng, Fill::kFloat), in = b, again = b;
			ASSERT_EQ(execute_schedule(s, &b), "");
			ASSERT_EQ(execute_schedule(s, &again), "");
			for (uint32_t r = 0; r < p.ranks; r++) {
				ASSERT_EQ(output_of(p, b, r), expected_output(p, in, {}, r)) << "rank " << r;
				ASSERT_EQ(output_of(p, b, r), output_of(p, again, r));
				if (c != Collective::kReduceScatter) {
					ASSERT_EQ(b[r].recv, b[0].recv);
				}
				CollectiveLayout l = collective_layout(p, r);
				uint64_t far = 0;
				for (uint64_t at = l.output.offset; at < l.output.offset + l.output.bytes; at += 4) {
					double sum = 0, mag = 0;
					for (uint32_t q = 0; q < p.ranks; q++) {
						sum += f32_at(in[q].recv, at);
						mag += std::fabs(f32_at(in[q].recv, at));
					}
					// n-1 roundings, each within 2^-24 of a partial sum <= mag
					far += std::fabs(f32_at(b[r].recv, at) - sum) > p.ranks * std::ldexp(mag, -24);
				}
				ASSERT_EQ(far, 0u) << "rank " << r << ": sums off by more than rounding";
			}
		}
}

// The ring: successor only, recv to the same place, C flows per rank and
// step within an element of each other, every chunk floor(E/(N*C)) or one
// more element, no byte of a rank written twice in a step, 2(N-1) or N-1
// steps.
TEST(Collective, RingShape)
{
	lumen::test::Rng rng(0x417);
	for (Collective c : {Collective::kAllGather, Collective::kReduceScatter, Collective::kAllReduce})
		for (int iter = 0; iter < 50; iter++) {
			CollectiveParams p = random_params(rng, c, iter);
			const uint32_t n = p.ranks, ch = p.channels, e = p.elem_size;
			const uint64_t elems = p.bytes / e, small = elems / (n * ch);
			SCOPED_TRACE(std::string(collective_name(c)) + " N=" + std::to_string(n) +
				     " C=" + std::to_string(ch) + " S=" + std::to_string(p.bytes));
			CollectiveSchedule s = build_ok(p);
			ASSERT_EQ(s.steps.size(), c == Collective::kAllReduce ? 2u * (n - 1) : n - 1u);
			ASSERT_EQ(s.steps.size(), collective_steps(c, n));
			for (size_t k = 0; k < s.steps.size(); k++) {
				const bool sums =
					c == Collective::kReduceScatter || (c == Collective::kAllReduce && k + 1 < n);
				std::vector<std::vector<uint32_t>> sizes(n);
				std::vector<std::vector<std::pair<uint64_t, uint64_t>>> written(n); // [begin, end)
				for (const Transfer &t : s.steps[k]) {
					ASSERT_EQ(t.dst, (t.src + 1) % n);
					ASSERT_LT(t.channel, ch);
					ASSERT_EQ(t.src_buffer, Buffer::kRecv);
					ASSERT_EQ(t.dst_buffer, Buffer::kRecv);
					ASSERT_EQ(t.src_offset, t.dst_offset);
					ASSERT_EQ(t.op, sums ? TransferOp::kSumFloat32 : TransferOp::kCopy);
					ASSERT_TRUE(t.bytes == small * e || t.bytes == (small + 1) * e) << t.bytes;
					sizes[t.src].push_back(t.bytes);
					written[t.dst].push_back({t.dst_offset, t.dst_offset + t.bytes});
				}
				for (uint32_t r = 0; r < n; r++) {
					std::sort(written[r].begin(), written[r].end());
					for (size_t i = 1; i < written[r].size(); i++)
						ASSERT_LE(written[r][i - 1].second, written[r][i].first)
							<< "bytes written twice";
					if (elems >= (uint64_t)n * ch) {
						ASSERT_EQ(sizes[r].size(), ch) << "step " << k << " rank " << r;
					}
					if (sizes[r].empty())
						continue;
					auto mm = std::minmax_element(sizes[r].begin(), sizes[r].end());
					ASSERT_LE(*mm.second - *mm.first, e);
				}
			}
		}
	EXPECT_EQ(collective_steps(Collective::kAllToAll, 8), 1u);
	EXPECT_EQ(collective_steps(Collective::kPermutation, 8), 1u);
	EXPECT_EQ(collective_steps(Collective::kAllReduceA2A, 8), 2u);
}

// Alltoall's blocks when N does not divide: lengths within an element, each
// pair the same both ways, every rank sends and receives exactly S.
TEST(Collective, AllToAllUnevenBlocks)
{
	CollectiveParams p = params(Collective::kAllToAll, 5, 4 * 23, 1); // 23 = 4*5 + 3
	CollectiveSchedule s = build_ok(p);
	ASSERT_EQ(s.steps.size(), 1u);
	std::vector<uint64_t> sent(5, 0), got(5, 0);
	std::vector<std::vector<uint32_t>> len(5, std::vector<uint32_t>(5, 0));
	for (const Transfer &t : s.steps[0]) {
		EXPECT_TRUE(t.bytes == 16 || t.bytes == 20);
		len[t.src][t.dst] = t.bytes;
		sent[t.src] += t.bytes;
		got[t.dst] += t.bytes;
	}
	for (uint32_t i = 0; i < 5; i++) {
		EXPECT_EQ(sent[i], p.bytes);
		EXPECT_EQ(got[i], p.bytes);
		for (uint32_t j = 0; j < 5; j++)
			EXPECT_EQ(len[i][j], len[j][i]);
	}
}

TEST(Collective, PermutationIsSeededDerangement)
{
	std::set<std::vector<uint32_t>> seen;
	for (uint64_t seed = 0; seed < 40; seed++)
		for (uint32_t n : {2u, 3u, 8u, 16u}) {
			CollectiveParams p = params(Collective::kPermutation, n, 4096, 2);
			p.seed = seed;
			CollectiveSchedule s = build_ok(p), again = build_ok(p);
			ASSERT_EQ(s.permutation.size(), n);
			EXPECT_EQ(s.permutation, again.permutation);
			std::vector<uint32_t> sorted = s.permutation;
			std::sort(sorted.begin(), sorted.end());
			for (uint32_t r = 0; r < n; r++) {
				EXPECT_EQ(sorted[r], r);
				EXPECT_NE(s.permutation[r], r) << "a fixed point";
			}
			for (const Transfer &t : s.steps[0])
				EXPECT_EQ(t.dst, s.permutation[t.src]);
			EXPECT_EQ(s.steps[0].size(), 2u * n);
			if (n == 16)
				seen.insert(s.permutation);
			if (n == 3)
				seen.insert(s.permutation); // both derangements of 3 show up
		}
	EXPECT_GE(seen.size(), 40u + 2u);
	EXPECT_TRUE(seen.count({1, 2, 0}) && seen.count({2, 0, 1}));
}

TEST(Collective, Layouts)
{
	// 10 elements on 4 ranks: blocks of 3, 3, 2, 2 at 0, 3, 6, 8.
	for (Collective c : kAll) {
		CollectiveLayout l = collective_layout(params(c, 4, 40, 1), 2);
		SCOPED_TRACE(collective_name(c));
		EXPECT_EQ(l.recv_bytes, 40u);
		const bool out_of_place = c == Collective::kAllToAll || c == Collective::kPermutation;
		EXPECT_EQ(l.in_place, !out_of_place);
		EXPECT_EQ(l.send_bytes, out_of_place ? 40u : 0u);
		EXPECT_EQ(l.input.buffer, out_of_place ? Buffer::kSend : Buffer::kRecv);
		EXPECT_EQ(l.output.buffer, Buffer::kRecv);
		const bool in_block = c == Collective::kAllGather, out_block = c == Collective::kReduceScatter;
		EXPECT_EQ(l.input.offset, in_block ? 24u : 0u);
		EXPECT_EQ(l.input.bytes, in_block ? 8u : 40u);
		EXPECT_EQ(l.output.offset, out_block ? 24u : 0u);
		EXPECT_EQ(l.output.bytes, out_block ? 8u : 40u);
	}
}

TEST(Collective, BusBandwidthFactors)
{
	EXPECT_DOUBLE_EQ(busbw_factor(Collective::kAllReduce, 8), 1.75);
	EXPECT_DOUBLE_EQ(busbw_factor(Collective::kAllReduceA2A, 8), 1.75);
	EXPECT_DOUBLE_EQ(busbw_factor(Collective::kAllReduce, 2), 1.0);
	EXPECT_DOUBLE_EQ(busbw_factor(Collective::kAllGather, 8), 0.875);
	EXPECT_DOUBLE_EQ(busbw_factor(Collective::kReduceScatter, 4), 0.75);
	EXPECT_DOUBLE_EQ(busbw_factor(Collective::kAllToAll, 16), 15.0 / 16);
	EXPECT_DOUBLE_EQ(busbw_factor(Collective::kPermutation, 16), 1.0);
	EXPECT_DOUBLE_EQ(algbw(1000000000, 0.5), 2e9);
	EXPECT_DOUBLE_EQ(algbw(1000, 0), 0);
}

TEST(Collective, Names)
{
	for (Collective c : kAll) {
		Collective back = Collective::kAllToAll;
		EXPECT_TRUE(collective_from_name(collective_name(c), &back));
		EXPECT_EQ(back, c);
	}
	Collective c;
	EXPECT_FALSE(collective_from_name("all_reduce", &c));
	ReduceType t = ReduceType::kFloat32;
	EXPECT_TRUE(reduce_type_from_name("int32", &t));
	EXPECT_EQ(t, ReduceType::kInt32);
	EXPECT_FALSE(reduce_type_from_name("float64", &t));
}

TEST(Collective, Refusals)
{
	struct Bad {
		CollectiveParams p;
		const char *what;
	};
	const uint64_t g2 = 1ull << 31;
	CollectiveParams float8 = params(Collective::kAllReduce, 4, 64, 1, 8);
	const Bad bad[] = {
		{params(Collective::kAllReduce, 1, 64, 1), "ranks: 1 is not in 2..4096"},
		{params(Collective::kAllReduce, 0, 64, 1), "ranks: 0"},
		{params(Collective::kAllToAll, 5000, 64, 1), "ranks: 5000"},
		{params(Collective::kAllReduce, 4, 64, 0), "channels: 0 is not in 1..64"},
		{params(Collective::kAllReduce, 4, 64, 65), "channels: 65"},
		{params(Collective::kAllGather, 4, 64, 1, 0), "element size 0"},
		{float8, "allreduce adds float32: the element size must be 4, not 8"},
		{params(Collective::kAllGather, 4, 66, 1, 4), "66 bytes is not a whole number of 4-byte elements"},
		{params(Collective::kPermutation, 4, g2 + 4, 1), "a transfer of 2147483652 bytes"},
		{params(Collective::kAllReduce, 2, 2 * g2 + 8, 1), "a transfer of 2147483652 bytes"},
		{params(Collective::kAllToAll, 4, 1ull << 50, 1), "more than 281474976710656"},
		{params(Collective::kAllToAll, 4096, 4096, 1), "16777216 transfers, more than 4194304"},
	};
	for (const Bad &b : bad) {
		CollectiveSchedule s;
		s.permutation = {7};
		std::string e = build_collective(b.p, &s);
		EXPECT_NE(e.find(b.what), std::string::npos) << e << " (wanted: " << b.what << ")";
		EXPECT_EQ(s.permutation, std::vector<uint32_t>{7}) << "*out touched";
	}
	// The longest message the transport takes is fine; more channels fix a long one.
	CollectiveSchedule s;
	EXPECT_EQ(build_collective(params(Collective::kPermutation, 4, g2, 1), &s), "");
	EXPECT_EQ(s.steps[0][0].bytes, g2);
	EXPECT_EQ(build_collective(params(Collective::kPermutation, 4, g2 + 4, 2), &s), "");

	// The executor: ranks and buffers must fit the schedule, and nothing changes otherwise.
	CollectiveSchedule ar = build_ok(params(Collective::kAllReduce, 3, 48, 2));
	std::vector<RankBuffers> two(2);
	EXPECT_NE(execute_schedule(ar, &two).find("2 ranks' buffers for a schedule of 3"), std::string::npos);
	std::vector<RankBuffers> b(3);
	for (RankBuffers &x : b)
		x.recv.assign(48, 1);
	b[1].recv.resize(40, 1);
	std::vector<RankBuffers> before = b;
	EXPECT_NE(execute_schedule(ar, &b).find("out of its buffer"), std::string::npos);
	for (uint32_t r = 0; r < 3; r++)
		EXPECT_EQ(b[r].recv, before[r].recv);
}

// Size 0 and sizes below N*C elements: the steps stay (barriers), empty
// chunks are not transfers.
TEST(Collective, EmptyChunksAreNotTransfers)
{
	CollectiveSchedule s = build_ok(params(Collective::kAllReduce, 4, 0, 2));
	EXPECT_EQ(s.steps.size(), 6u);
	for (const auto &step : s.steps)
		EXPECT_TRUE(step.empty());
	s = build_ok(params(Collective::kAllReduce, 4, 12, 2)); // 3 elements: block 3 empty
	for (const auto &step : s.steps) {
		EXPECT_EQ(step.size(), 3u);
		for (const Transfer &t : step)
			EXPECT_EQ(t.bytes, 4u);
	}
}

// The 4-channel ring with every successor on another leaf (16 leaves,
// 16 uplinks): one demand of 4 flows, which the planner splits 4 ways into
// 16 subflows, one per uplink.
TEST(Collective, RingDemandsForEthereal)
{
	const uint32_t n = 32, leaves = 16;
	std::vector<uint32_t> leaf(n);
	for (uint32_t r = 0; r < n; r++)
		leaf[r] = r % leaves;
	const uint64_t bytes = 1ull << 20; // chunks of 1 MiB / 128 = 8 KiB
	CollectiveSchedule s = build_ok(params(Collective::kAllReduce, n, bytes, 4));
	for (size_t k = 0; k < s.steps.size(); k++)
		for (uint32_t r = 0; r < n; r++) {
			StepDemands d;
			ASSERT_EQ(step_demands(s.steps[k], r, leaf, &d), "");
			ASSERT_EQ(d.demands.size(), 1u);
			EXPECT_EQ(d.demands[0].leaf, leaf[(r + 1) % n]);
			EXPECT_EQ(d.demands[0].flows, 4u);
			EXPECT_EQ(d.demands[0].bytes, bytes / (n * 4));
			for (uint32_t i : d.transfers[0]) {
				EXPECT_EQ(s.steps[k][i].src, r);
				EXPECT_EQ(s.steps[k][i].bytes, d.demands[0].bytes);
			}
			if (k || r)
				continue;
			PlanParams pp;
			pp.uplinks = 16;
			pp.local_leaf = leaf[r];
			Plan plan;
			ASSERT_EQ(ethereal_plan(pp, d.demands, &plan), "");
			EXPECT_EQ(plan.subflows.size(), 16u);
			EXPECT_EQ(plan.extra(), 12u);
			for (uint64_t b : plan.uplink_bytes)
				EXPECT_EQ(b, bytes / (n * 4) / 4);
		}
	// Flows an element apart are two demands to the same leaf.
	CollectiveSchedule u = build_ok(params(Collective::kAllReduce, n, bytes + 4 * 3, 4));
	StepDemands d;
	ASSERT_EQ(step_demands(u.steps[0], 1, leaf, &d), ""); // rank 1 sends block 0: 8 KiB + 4 over 4 channels
	ASSERT_EQ(d.demands.size(), 2u);
	EXPECT_EQ(d.demands[0].leaf, d.demands[1].leaf);
	EXPECT_EQ(d.demands[0].bytes, d.demands[1].bytes + 4);
	EXPECT_EQ(d.demands[0].flows + d.demands[1].flows, 4u);
}

// Alltoall over 4 leaves of 8 ranks: 8 flows to every other leaf, 7 to the
// rank's own (its local copy is no flow); 8 flows on 8 uplinks split nothing.
TEST(Collective, AllToAllDemandsForEthereal)
{
	const uint32_t n = 32, per_leaf = 8;
	std::vector<uint32_t> leaf(n);
	for (uint32_t r = 0; r < n; r++)
		leaf[r] = r / per_leaf;
	CollectiveSchedule s = build_ok(params(Collective::kAllToAll, n, 32 * 1024, 1));
	for (uint32_t r = 0; r < n; r++) {
		StepDemands d;
		ASSERT_EQ(step_demands(s.steps[0], r, leaf, &d), "");
		ASSERT_EQ(d.demands.size(), 4u);
		for (uint32_t l = 0; l < 4; l++) {
			EXPECT_EQ(d.demands[l].leaf, l);
			EXPECT_EQ(d.demands[l].flows, l == leaf[r] ? per_leaf - 1 : per_leaf);
			EXPECT_EQ(d.demands[l].bytes, 1024u);
			for (uint32_t i : d.transfers[l])
				EXPECT_EQ(leaf[s.steps[0][i].dst], l);
		}
		PlanParams pp;
		pp.uplinks = 8;
		pp.local_leaf = leaf[r];
		Plan plan;
		ASSERT_EQ(ethereal_plan(pp, d.demands, &plan), "");
		EXPECT_EQ(plan.extra(), 0u);
		EXPECT_EQ(plan.local_bytes, 7u * 1024);
		for (uint64_t b : plan.uplink_bytes)
			EXPECT_EQ(b, 3u * 1024);
	}
	StepDemands d;
	std::vector<uint32_t> short_map(leaf.begin(), leaf.begin() + 10);
	EXPECT_NE(step_demands(s.steps[0], 0, short_map, &d).find("rank 10 has no leaf (10 ranks mapped)"),
		  std::string::npos);
	EXPECT_NE(step_demands(s.steps[0], 12, short_map, &d).find("rank 12 has no leaf"), std::string::npos);
}

} // namespace
