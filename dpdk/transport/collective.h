// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// dpdk/transport/collective.h - NCCL-style collectives as schedules of
// point-to-point transfers: what every rank sends to whom, from which bytes
// of which buffer into which, in which step; an in-memory executor that is
// the byte-for-byte reference for a networked run; nccl-tests' bandwidths;
// and one step's flows grouped for Ethereal's planner (ethereal_plan.h).
//
// Size. S (`bytes`) follows nccl-tests: the full buffer of one rank. For
// allreduce the array every rank reduces; for allgather the gathered output
// (each rank contributes about S/N); for reducescatter the input (each rank
// keeps about S/N, reduced); for alltoall the send buffer (about S/N to each
// peer, itself included); for the permutation the buffer sent whole. So
// algbw = S / t for all of them, and busbw = algbw * factor (nccl-tests'
// doc/PERFORMANCE.md): allreduce 2(N-1)/N, allgather, reducescatter and
// alltoall (N-1)/N, sendrecv (our permutation) 1.
//
// Blocks and channels. The S/e elements (e = `elem_size`) are cut into N
// blocks, block b of every rank at the same place; where N does not divide,
// the first (elements mod N) blocks hold one element more. Each block is cut
// the same way into C slices, one per channel: C parallel flows each with
// about 1/C of what one flow would carry (the thesis' "4-channel ring"). Cuts
// fall on elements, and every chunk of a schedule holds floor(E/(N*C)) or
// one element more (floor(floor(x/a)/b) = floor(x/(a*b))). Empty chunks are
// not transfers (the transport's messages are 1..2^31 bytes), so when a
// block has fewer elements than C, fewer than C flows carry it.
//
// Buffers. Every rank has a send and a recv buffer (collective_layout() says
// their sizes, where the input starts and where the output ends up):
//
//   collective        in place  send  recv  input         output
//   alltoall          no        S     S     send          recv
//   allgather         yes       0     S     recv block r  recv
//   reducescatter     yes       0     S     recv          recv block r
//   allreduce (both)  yes       0     S     recv          recv
//   permutation       no        S     S     send          recv
//
// In place is NCCL's: allreduce's input is its output; allgather's input
// sits where its block goes (NCCL's sendbuff = recvbuff + r * count);
// reducescatter's result stays in the input buffer at block r.
//
// The algorithms (ranks 0..N-1, "r+1" meaning (r+1) mod N):
//
// - alltoall, 1 step: rank i's j-th block goes to rank j's i-th block, i = j
//   included (a local copy). N blocks of a buffer must pair with N blocks of
//   every other buffer, so when N does not divide the elements, the pair
//   (i, j) exchanges len((i+j) mod N) elements both ways (len(b) = block b's
//   length): every row and column of the N x N table uses each length once,
//   so every send and recv buffer is exactly S, and blocks stay in rank order.
// - ring reducescatter, N-1 steps: in step k rank r sends block r-k-1 to r+1,
//   which adds it into its own block r-k-1. Block b starts at rank b+1 and
//   ends, summed over every rank, at rank b after N-1 hops.
// - ring allgather, N-1 steps: in step k rank r sends block r-k (its own in
//   step 0, after that the one it got in step k-1) to r+1, a copy.
// - ring allreduce, 2(N-1) steps: reducescatter, then allgather from the
//   reduced blocks. Every channel uses the same ring (NCCL's default).
// - allreduce by alltoall, 2 steps: every rank sends block j to rank j, which
//   adds the N-1 of them into its block j; then every rank sends its reduced
//   block to all others (copy).
// - permutation, 1 step: rank r sends its whole buffer to pi(r), a uniformly
//   random derangement (no fixed point) drawn from `seed` by a generator of
//   our own (SplitMix64), so a seed gives the same pi on every machine.
//
// A step. For each step every rank posts its sends (read from its buffers
// as they are when the step starts) and receives; a received transfer is a
// copy or an elementwise sum (dst = dst + src) as float32 or int32 (int32
// wraps). Steps are separated by a barrier. execute_schedule() stages every
// source of a step before applying any, then applies them in schedule order
// (by source rank, destination rank, channel).
//
// Sum order, for a byte-exact float32 comparison. Float addition is
// commutative but not associative, so a result depends on the order of its
// additions. The ring never sums two transfers into the same bytes in one
// step: block b of an allreduce is ((x_{b+1} + x_{b+2}) + ...) + x_b, the
// same on every run, whatever the order of completion. Allreduce by
// alltoall sums N-1 transfers into block j in one step: x_j + x_0 + x_1 + ...
// in source order; a networked run that applies on completion must keep
// that order (hold a sum until those before it at that receiver are
// applied) to match the reference byte for byte. int32 sums need no order.
//
// Ethereal. step_demands() turns the transfers one rank sends in one step
// into the planner's demands: PlanDemand is n flows of *equal* size to one
// leaf, so flows are grouped by (destination leaf, size): a leaf whose flows
// differ by an element gets two demands. Local copies (src = dst) are not
// flows. The 4-channel ring to a successor in another leaf is one demand of
// 4 flows (split 4 ways on 16 uplinks); alltoall over L leaves of N/L ranks
// is N/L flows to every leaf (N/L - 1 to the rank's own).
//
// Pure code: no DPDK, no I/O, deterministic. Errors are returned as a
// message ("" when fine), with *out untouched, as in ethereal_plan.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "transport/ethereal_plan.h"

namespace lumen::dp
{

enum class Collective : uint8_t {
	kAllToAll, // "alltoall"
	kAllGather, // "allgather": ring
	kReduceScatter, // "reducescatter": ring
	kAllReduce, // "allreduce": ring, reducescatter then allgather
	kAllReduceA2A, // "allreduce-a2a": by alltoall, 2 steps
	kPermutation, // "permutation": send all to pi(rank)
};

const char *collective_name(Collective c);
bool collective_from_name(const std::string &name, Collective *out);
bool collective_reduces(Collective c); // reducescatter and both allreduces

// What the reductions add (their elements are 4 bytes).
enum class ReduceType : uint8_t {
	kFloat32, // "float32"
	kInt32, // "int32": two's complement, wrapping
};

const char *reduce_type_name(ReduceType t);
bool reduce_type_from_name(const std::string &name, ReduceType *out);

struct CollectiveParams {
	Collective collective = Collective::kAllReduce;
	uint32_t ranks = 0; // N: 2..kCollectiveMaxRanks
	uint64_t bytes = 0; // S, nccl-tests' size (above); 0 gives empty steps
	uint32_t elem_size = 4; // divides bytes; 4 for the reductions
	uint32_t channels = 1; // C: 1..kCollectiveMaxChannels
	ReduceType reduce = ReduceType::kFloat32; // reductions only
	uint64_t seed = 0; // permutation only
};

constexpr uint32_t kCollectiveMaxRanks = 4096;
constexpr uint32_t kCollectiveMaxChannels = 64;
constexpr uint64_t kCollectiveMaxBytes = 1ull << 48;
constexpr uint64_t kCollectiveMaxTransfers = 1ull << 22; // per schedule (about 40 bytes each)
constexpr uint64_t kTransferMaxBytes = 1ull << 31; // the transport's longest message

enum class Buffer : uint8_t {
	kSend,
	kRecv,
};

enum class TransferOp : uint8_t {
	kCopy,
	kSumFloat32,
	kSumInt32,
};

// One message: src's bytes [src_offset, +bytes) of src_buffer to dst's
// [dst_offset, +bytes) of dst_buffer, copied or added.
struct Transfer {
	uint32_t src = 0, dst = 0; // ranks; src == dst is a local copy, no network
	uint32_t channel = 0; // 0..C-1
	Buffer src_buffer = Buffer::kSend;
	Buffer dst_buffer = Buffer::kRecv;
	uint64_t src_offset = 0, dst_offset = 0;
	uint32_t bytes = 0; // 1..kTransferMaxBytes, a whole number of elements
	TransferOp op = TransferOp::kCopy;
};

struct CollectiveSchedule {
	CollectiveParams params;
	std::vector<std::vector<Transfer>> steps; // by src, dst, channel within a step
	std::vector<uint32_t> permutation; // pi, for kPermutation only
};

struct BufferRegion {
	Buffer buffer = Buffer::kRecv;
	uint64_t offset = 0, bytes = 0;
};

// One rank's buffers: their sizes, where the caller puts the input, where
// the result is (the table above).
struct CollectiveLayout {
	uint64_t send_bytes = 0, recv_bytes = 0;
	BufferRegion input, output;
	bool in_place = false;
};

// The schedule, or a message and *out untouched.
std::string build_collective(const CollectiveParams &p, CollectiveSchedule *out);

// Rank r's buffers (p as build_collective accepted it).
CollectiveLayout collective_layout(const CollectiveParams &p, uint32_t rank);

// The steps an algorithm takes: alltoall and permutation 1, allgather and
// reducescatter N-1, allreduce 2(N-1), allreduce-a2a 2.
uint32_t collective_steps(Collective c, uint32_t ranks);

struct RankBuffers {
	std::vector<uint8_t> send, recv;
};

// Runs the schedule on buffers[rank] (sizes at least the layout's): steps in
// order, each staged then applied in order. "" or a message (a transfer out
// of its buffer, wrong rank count) with nothing changed.
std::string execute_schedule(const CollectiveSchedule &s, std::vector<RankBuffers> *buffers);

// dst += src over bytes / 4 elements as op says (not kCopy): the sum every
// reduction of a schedule applies, in the executor and on the network.
void add_elements(uint8_t *dst, const uint8_t *src, uint32_t bytes, TransferOp op);

// nccl-tests' bus bandwidth factor (above): busbw = algbw * factor.
double busbw_factor(Collective c, uint32_t ranks);
// algbw in bytes per second (nccl-tests prints it / 1e9 as GB/s).
double algbw(uint64_t bytes, double seconds);

// One rank's flows in one step for ethereal_plan(): demands[d] is
// transfers[d].size() flows of demands[d].bytes to leaf demands[d].leaf,
// flow k being step[transfers[d][k]]. By leaf, then larger flows first;
// the planner's local_leaf is leaf_of_rank[rank].
struct StepDemands {
	std::vector<PlanDemand> demands;
	std::vector<std::vector<uint32_t>> transfers; // per demand, indices into the step
};

std::string step_demands(const std::vector<Transfer> &step, uint32_t rank, const std::vector<uint32_t> &leaf_of_rank,
			 StepDemands *out);

} // namespace lumen::dp
