// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// dpdk/transport/collective.cpp - collectives as transfer schedules, their
// reference executor, bandwidths and planner demands (collective.h).
#include "transport/collective.h"

#include <algorithm>
#include <cstring>
#include <numeric>

extern "C" {
#include <lumen/rng.h>
}

namespace lumen::dp
{

namespace
{

// Part i of `total` units cut into `parts`, the first (total mod parts) one
// unit longer: the cut of elements into blocks and of blocks into slices.
struct Span {
	uint64_t first, count;
};

Span split_even(uint64_t total, uint64_t parts, uint64_t i)
{
	const uint64_t q = total / parts, longer = total % parts;
	return {q * i + std::min(i, longer), q + (i < longer ? 1 : 0)};
}

// A uniform derangement: Fisher-Yates shuffles until one has no fixed point
// (a fraction of about 1/e do, so e tries on average), drawn from lumen's
// generator (include/lumen/rng.h), so a seed's permutation is the same
// everywhere (std::uniform_int_distribution is not). Drawing by modulo
// biases an index by less than N/2^64: negligible.
std::vector<uint32_t> derangement(uint32_t n, uint64_t seed)
{
	lumen_rng rng;
	lumen_rng_seed(&rng, seed);
	std::vector<uint32_t> pi(n);
	for (;;) {
		std::iota(pi.begin(), pi.end(), 0u);
		for (uint32_t i = n - 1; i > 0; i--)
			std::swap(pi[i], pi[(size_t)(lumen_rng_next(&rng) % (i + 1))]);
		bool fixed = false;
		for (uint32_t i = 0; i < n && !fixed; i++)
			fixed = pi[i] == i;
		if (!fixed)
			return pi;
	}
}

// Transfers before empty chunks are dropped: the size of the schedule.
uint64_t transfer_bound(const CollectiveParams &p)
{
	const uint64_t n = p.ranks, c = p.channels;
	switch (p.collective) {
	case Collective::kAllToAll:
		return n * n * c;
	case Collective::kAllGather:
	case Collective::kReduceScatter:
		return (n - 1) * n * c;
	case Collective::kAllReduce:
	case Collective::kAllReduceA2A:
		return 2 * (n - 1) * n * c;
	case Collective::kPermutation:
		return n * c;
	}
	return 0;
}

std::string check(const CollectiveParams &p)
{
	if (p.collective > Collective::kPermutation)
		return "unknown collective";
	if (p.reduce != ReduceType::kFloat32 && p.reduce != ReduceType::kInt32)
		return "unknown reduce type";
	if (p.ranks < 2 || p.ranks > kCollectiveMaxRanks)
		return "ranks: " + std::to_string(p.ranks) + " is not in 2.." + std::to_string(kCollectiveMaxRanks);
	if (p.channels < 1 || p.channels > kCollectiveMaxChannels)
		return "channels: " + std::to_string(p.channels) + " is not in 1.." +
		       std::to_string(kCollectiveMaxChannels);
	if (p.elem_size < 1)
		return "element size 0";
	if (collective_reduces(p.collective) && p.elem_size != 4)
		return std::string(collective_name(p.collective)) + " adds " + reduce_type_name(p.reduce) +
		       ": the element size must be 4, not " + std::to_string(p.elem_size);
	if (p.bytes > kCollectiveMaxBytes)
		return "size: " + std::to_string(p.bytes) + " bytes, more than " + std::to_string(kCollectiveMaxBytes);
	if (p.bytes % p.elem_size)
		return "size: " + std::to_string(p.bytes) + " bytes is not a whole number of " +
		       std::to_string(p.elem_size) + "-byte elements";
	// The longest chunk: ceil(E / (N*C)), or ceil(E / C) for the permutation.
	const uint64_t elems = p.bytes / p.elem_size;
	const uint64_t cuts = (p.collective == Collective::kPermutation ? 1ull : p.ranks) * p.channels;
	const uint64_t longest = (elems + cuts - 1) / cuts * p.elem_size;
	if (longest > kTransferMaxBytes)
		return "a transfer of " + std::to_string(longest) + " bytes, more than the transport's " +
		       std::to_string(kTransferMaxBytes) + "-byte messages (use more channels)";
	if (uint64_t n = transfer_bound(p); n > kCollectiveMaxTransfers)
		return std::to_string(n) + " transfers, more than " + std::to_string(kCollectiveMaxTransfers);
	return "";
}

// Appends the transfers that carry `count` elements from src's
// [src_elem, +count) to dst's [dst_elem, +count): one per channel, each a
// slice of the region, empty slices dropped.
struct StepWriter {
	const CollectiveParams &p;
	std::vector<Transfer> *step;

	void region(uint32_t src, Buffer sb, uint64_t src_elem, uint32_t dst, Buffer db, uint64_t dst_elem,
		    uint64_t count, TransferOp op)
	{
		for (uint32_t c = 0; c < p.channels; c++) {
			Span slice = split_even(count, p.channels, c);
			if (!slice.count)
				continue;
			Transfer t;
			t.src = src;
			t.dst = dst;
			t.channel = c;
			t.src_buffer = sb;
			t.dst_buffer = db;
			t.src_offset = (src_elem + slice.first) * p.elem_size;
			t.dst_offset = (dst_elem + slice.first) * p.elem_size;
			t.bytes = (uint32_t)(slice.count * p.elem_size); /* check() bounds it by 2^31 */
			t.op = op;
			step->push_back(t);
		}
	}
};

TransferOp sum_op(ReduceType t)
{
	return t == ReduceType::kInt32 ? TransferOp::kSumInt32 : TransferOp::kSumFloat32;
}

// One ring step: rank r sends block block_of(r) of its recv buffer to r+1's
// same block.
template <typename BlockOf>
std::vector<Transfer> ring_step(const CollectiveParams &p, uint64_t elems, TransferOp op, BlockOf block_of)
{
	std::vector<Transfer> step;
	StepWriter w{p, &step};
	for (uint32_t r = 0; r < p.ranks; r++) {
		Span b = split_even(elems, p.ranks, block_of(r));
		w.region(r, Buffer::kRecv, b.first, (r + 1) % p.ranks, Buffer::kRecv, b.first, b.count, op);
	}
	return step;
}

void build_ring(const CollectiveParams &p, uint64_t elems, bool reduce, bool gather, CollectiveSchedule *s)
{
	const uint32_t n = p.ranks;
	if (reduce) // step k: r sends block r-k-1, its partial sum from step k-1
		for (uint32_t k = 0; k + 1 < n; k++)
			s->steps.push_back(ring_step(p, elems, sum_op(p.reduce),
						     [&](uint32_t r) { return (r + 2 * n - k - 1) % n; }));
	if (gather) // step k: r sends block r-k, its own first, then what it got
		for (uint32_t k = 0; k + 1 < n; k++)
			s->steps.push_back(
				ring_step(p, elems, TransferOp::kCopy, [&](uint32_t r) { return (r + n - k) % n; }));
}

// Rank i's j-th send block goes to rank j's i-th recv block, both of
// len((i+j) mod N) elements (collective.h: alltoall).
void build_alltoall(const CollectiveParams &p, uint64_t elems, CollectiveSchedule *s)
{
	const uint32_t n = p.ranks;
	std::vector<Transfer> step;
	StepWriter w{p, &step};
	std::vector<uint64_t> recv_at(n, 0); // where rank j's block from the next source starts
	for (uint32_t i = 0; i < n; i++) {
		uint64_t send_at = 0;
		for (uint32_t j = 0; j < n; j++) {
			const uint64_t len = split_even(elems, n, (i + j) % n).count;
			w.region(i, Buffer::kSend, send_at, j, Buffer::kRecv, recv_at[j], len, TransferOp::kCopy);
			send_at += len;
			recv_at[j] += len;
		}
	}
	s->steps.push_back(std::move(step));
}

// Block j of every rank summed into rank j's block j, then sent back out.
void build_allreduce_a2a(const CollectiveParams &p, uint64_t elems, CollectiveSchedule *s)
{
	const uint32_t n = p.ranks;
	for (bool gather : {false, true}) {
		std::vector<Transfer> step;
		StepWriter w{p, &step};
		for (uint32_t i = 0; i < n; i++)
			for (uint32_t j = 0; j < n; j++) {
				if (i == j)
					continue;
				Span b = split_even(elems, n, gather ? i : j);
				w.region(i, Buffer::kRecv, b.first, j, Buffer::kRecv, b.first, b.count,
					 gather ? TransferOp::kCopy : sum_op(p.reduce));
			}
		s->steps.push_back(std::move(step));
	}
}

void build_permutation(const CollectiveParams &p, uint64_t elems, CollectiveSchedule *s)
{
	s->permutation = derangement(p.ranks, p.seed);
	std::vector<Transfer> step;
	StepWriter w{p, &step};
	for (uint32_t r = 0; r < p.ranks; r++)
		w.region(r, Buffer::kSend, 0, s->permutation[r], Buffer::kRecv, 0, elems, TransferOp::kCopy);
	s->steps.push_back(std::move(step));
}

// Where [offset, +bytes) lies inside a buffer of `size` bytes.
bool fits(uint64_t offset, uint64_t bytes, size_t size)
{
	return offset <= size && bytes <= size - offset;
}

const std::vector<uint8_t> &buffer_of(const RankBuffers &b, Buffer which)
{
	return which == Buffer::kSend ? b.send : b.recv;
}

// Why the executor cannot run t on buffers b, or nullptr.
const char *transfer_fault(const Transfer &t, const std::vector<RankBuffers> &b)
{
	if (t.src >= b.size() || t.dst >= b.size())
		return "no such rank";
	if (!fits(t.src_offset, t.bytes, buffer_of(b[t.src], t.src_buffer).size()))
		return "source out of its buffer";
	if (!fits(t.dst_offset, t.bytes, buffer_of(b[t.dst], t.dst_buffer).size()))
		return "destination out of its buffer";
	if (t.op != TransferOp::kCopy && t.bytes % 4)
		return "a sum of part of a 4-byte element";
	return nullptr;
}

} // namespace

// dst[i] = dst[i] + src[i] over 4-byte elements; memcpy because neither
// buffer need be aligned. int32 adds as uint32: wraps, no overflow UB.
void add_elements(uint8_t *dst, const uint8_t *src, uint32_t bytes, TransferOp op)
{
	for (uint32_t at = 0; at + 4 <= bytes; at += 4) {
		if (op == TransferOp::kSumFloat32) {
			float a, b;
			std::memcpy(&a, dst + at, 4);
			std::memcpy(&b, src + at, 4);
			a = a + b;
			std::memcpy(dst + at, &a, 4);
		} else {
			uint32_t a, b;
			std::memcpy(&a, dst + at, 4);
			std::memcpy(&b, src + at, 4);
			a += b;
			std::memcpy(dst + at, &a, 4);
		}
	}
}

const char *collective_name(Collective c)
{
	switch (c) {
	case Collective::kAllToAll:
		return "alltoall";
	case Collective::kAllGather:
		return "allgather";
	case Collective::kReduceScatter:
		return "reducescatter";
	case Collective::kAllReduce:
		return "allreduce";
	case Collective::kAllReduceA2A:
		return "allreduce-a2a";
	case Collective::kPermutation:
		return "permutation";
	}
	return "?";
}

bool collective_from_name(const std::string &name, Collective *out)
{
	for (Collective c : {Collective::kAllToAll, Collective::kAllGather, Collective::kReduceScatter,
			     Collective::kAllReduce, Collective::kAllReduceA2A, Collective::kPermutation})
		if (name == collective_name(c)) {
			*out = c;
			return true;
		}
	return false;
}

bool collective_reduces(Collective c)
{
	return c == Collective::kReduceScatter || c == Collective::kAllReduce || c == Collective::kAllReduceA2A;
}

const char *reduce_type_name(ReduceType t)
{
	return t == ReduceType::kInt32 ? "int32" : "float32";
}

bool reduce_type_from_name(const std::string &name, ReduceType *out)
{
	for (ReduceType t : {ReduceType::kFloat32, ReduceType::kInt32})
		if (name == reduce_type_name(t)) {
			*out = t;
			return true;
		}
	return false;
}

uint32_t collective_steps(Collective c, uint32_t ranks)
{
	const uint32_t hops = ranks > 0 ? ranks - 1 : 0;
	switch (c) {
	case Collective::kAllGather:
	case Collective::kReduceScatter:
		return hops;
	case Collective::kAllReduce:
		return 2 * hops;
	case Collective::kAllReduceA2A:
		return 2;
	case Collective::kAllToAll:
	case Collective::kPermutation:
		return 1;
	}
	return 0;
}

std::string build_collective(const CollectiveParams &p, CollectiveSchedule *out)
{
	if (std::string e = check(p); !e.empty())
		return e;
	CollectiveSchedule s;
	s.params = p;
	const uint64_t elems = p.bytes / p.elem_size;
	switch (p.collective) {
	case Collective::kAllToAll:
		build_alltoall(p, elems, &s);
		break;
	case Collective::kAllGather:
		build_ring(p, elems, false, true, &s);
		break;
	case Collective::kReduceScatter:
		build_ring(p, elems, true, false, &s);
		break;
	case Collective::kAllReduce:
		build_ring(p, elems, true, true, &s);
		break;
	case Collective::kAllReduceA2A:
		build_allreduce_a2a(p, elems, &s);
		break;
	case Collective::kPermutation:
		build_permutation(p, elems, &s);
		break;
	}
	*out = std::move(s);
	return "";
}

CollectiveLayout collective_layout(const CollectiveParams &p, uint32_t rank)
{
	CollectiveLayout l;
	if (p.ranks < 1 || p.elem_size < 1 || rank >= p.ranks)
		return l;
	const Span block = split_even(p.bytes / p.elem_size, p.ranks, rank);
	const BufferRegion whole_recv{Buffer::kRecv, 0, p.bytes};
	const BufferRegion own_block{Buffer::kRecv, block.first * p.elem_size, block.count * p.elem_size};
	l.recv_bytes = p.bytes;
	switch (p.collective) {
	case Collective::kAllToAll:
	case Collective::kPermutation:
		l.send_bytes = p.bytes;
		l.input = {Buffer::kSend, 0, p.bytes};
		l.output = whole_recv;
		break;
	case Collective::kAllGather:
		l.in_place = true;
		l.input = own_block;
		l.output = whole_recv;
		break;
	case Collective::kReduceScatter:
		l.in_place = true;
		l.input = whole_recv;
		l.output = own_block;
		break;
	case Collective::kAllReduce:
	case Collective::kAllReduceA2A:
		l.in_place = true;
		l.input = l.output = whole_recv;
		break;
	}
	return l;
}

std::string execute_schedule(const CollectiveSchedule &s, std::vector<RankBuffers> *buffers)
{
	std::vector<RankBuffers> &b = *buffers;
	if (b.size() != s.params.ranks)
		return std::to_string(b.size()) + " ranks' buffers for a schedule of " +
		       std::to_string(s.params.ranks) + " ranks";
	size_t most = 0; // the largest step's bytes, to stage
	for (size_t k = 0; k < s.steps.size(); k++) {
		size_t bytes = 0;
		for (const Transfer &t : s.steps[k]) {
			const char *wrong = transfer_fault(t, b);
			if (wrong)
				return "step " + std::to_string(k) + ", transfer " + std::to_string(t.src) + "->" +
				       std::to_string(t.dst) + " of " + std::to_string(t.bytes) + " bytes: " + wrong;
			bytes += t.bytes;
		}
		most = std::max(most, bytes);
	}
	// Stage every source as the step begins, then apply in schedule order.
	std::vector<uint8_t> staged;
	staged.reserve(most);
	for (const std::vector<Transfer> &step : s.steps) {
		staged.clear();
		for (const Transfer &t : step) {
			const uint8_t *from = buffer_of(b[t.src], t.src_buffer).data() + t.src_offset;
			staged.insert(staged.end(), from, from + t.bytes);
		}
		size_t at = 0;
		for (const Transfer &t : step) {
			std::vector<uint8_t> &dst = t.dst_buffer == Buffer::kSend ? b[t.dst].send : b[t.dst].recv;
			if (t.op == TransferOp::kCopy && t.bytes)
				std::memcpy(dst.data() + t.dst_offset, staged.data() + at, t.bytes);
			else if (t.bytes)
				add_elements(dst.data() + t.dst_offset, staged.data() + at, t.bytes, t.op);
			at += t.bytes;
		}
	}
	return "";
}

double busbw_factor(Collective c, uint32_t ranks)
{
	if (ranks < 1)
		return 0;
	const double n = ranks;
	switch (c) {
	case Collective::kAllReduce:
	case Collective::kAllReduceA2A:
		return 2 * (n - 1) / n;
	case Collective::kAllGather:
	case Collective::kReduceScatter:
	case Collective::kAllToAll:
		return (n - 1) / n;
	case Collective::kPermutation:
		return 1;
	}
	return 0;
}

double algbw(uint64_t bytes, double seconds)
{
	return seconds > 0 ? (double)bytes / seconds : 0;
}

std::string step_demands(const std::vector<Transfer> &step, uint32_t rank, const std::vector<uint32_t> &leaf_of_rank,
			 StepDemands *out)
{
	if (rank >= leaf_of_rank.size())
		return "rank " + std::to_string(rank) + " has no leaf (" + std::to_string(leaf_of_rank.size()) +
		       " ranks mapped)";
	struct Flow {
		uint32_t leaf;
		uint64_t bytes;
		uint32_t index;
	};
	std::vector<Flow> flows;
	for (uint32_t i = 0; i < step.size(); i++) {
		const Transfer &t = step[i];
		if (t.src != rank || t.dst == rank) // not ours, or a local copy
			continue;
		if (t.dst >= leaf_of_rank.size())
			return "rank " + std::to_string(t.dst) + " has no leaf (" +
			       std::to_string(leaf_of_rank.size()) + " ranks mapped)";
		flows.push_back({leaf_of_rank[t.dst], t.bytes, i});
	}
	std::stable_sort(flows.begin(), flows.end(), [](const Flow &a, const Flow &b) {
		return a.leaf != b.leaf ? a.leaf < b.leaf : a.bytes > b.bytes;
	});
	StepDemands d;
	for (size_t i = 0; i < flows.size(); i++) {
		if (i == 0 || flows[i].leaf != flows[i - 1].leaf || flows[i].bytes != flows[i - 1].bytes) {
			d.demands.push_back({flows[i].leaf, 0, flows[i].bytes});
			d.transfers.emplace_back();
		}
		d.demands.back().flows++;
		d.transfers.back().push_back(flows[i].index);
	}
	*out = std::move(d);
	return "";
}

} // namespace lumen::dp
