// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// dpdk/transport/collective_runner.h - one rank of a collective
// (collective.h) on lumen-dp's engine, moving and reducing the rank's own
// bytes through the application interface (messages.h).
//
// Connections. Every flow of the schedule, from rank i to rank j on channel
// c, is a connection of its own (NCCL's queue pair per channel), and so is
// every part of a flow that Ethereal's planner split (ethereal_plan.h): part
// k of the flow (i, j, c) is connection 1 + ((i*N + j)*C + c)*kMaxParts + k.
// open() connects the rank's outgoing ones and accepts its incoming ones
// before anything is sent, so that receive buffers can be posted to them.
// A connection carries at most one message per step, so its k-th message is
// its k-th receive buffer's.
//
// A step. When the rank has finished step s (its sends acknowledged, its
// receptions applied) it posts the receive buffers of step s+1 at once, then
// says so to the barrier; it posts its sends of step s+1 when every rank has
// finished step s (the barrier). So every buffer is posted before a byte
// for it can arrive, and no send of a step reads what the step before is
// still writing. A copy is received where it belongs (the destination
// buffer, at its offset: no copy beyond the transport's placement); a sum is
// received into a staging area and added into the destination when every
// part of it is in, in the schedule's order (collective.h: the float sums of
// allreduce by alltoall are then the reference's, byte for byte).
//
// Parts. Without a planner a flow is one message. With one (set_planner),
// the rank's flows of each step are grouped per destination leaf
// (step_demands) and planned; each subflow is a message on its part's
// connection, pinned to the planner's uplink through pin(), the shell's
// mapping from (peer, uplink) to an entropy found by probing.
//
// The barrier (collective_barrier.h) is in memory when every rank is in
// one process (the only state the ranks share: atomics, as they may be
// polled by different lcores), or messages on control connections (ids from
// control_conn_base) when some ranks are elsewhere.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "transport/collective.h"
#include "transport/collective_barrier.h"
#include "transport/engine.h"

namespace lumen::dp
{

// When a rank's step began (its sends posted) and ended (its last
// completion), and when each of its incoming flows was complete.
struct RankStepStats {
	uint64_t start_ns = 0, end_ns = 0;
	std::vector<uint64_t> flow_done_ns; // incoming flows (whole transfers), completion time
	uint64_t bytes_sent = 0, bytes_received = 0;
	uint32_t messages_sent = 0, subflows = 0; // subflows: messages of planned parts
	// the rank's engine during the step (its connections' counters, the
	// barrier's included): what the transport did for it
	uint64_t retransmits = 0, nacks = 0, timeouts = 0, reroutes = 0;
	uint32_t reorder_max = 0; // the deepest reordering a packet of the step arrived with (PSNs)
	ConnStats at_start; // the engine's totals when the step began
};

class CollectiveRank
{
      public:
	static constexpr uint32_t kMaxParts = 16; // parts of one flow (Ethereal's split)

	// schedule and barrier outlive the rank; ips[r] is rank r's address,
	// gateway the MAC every frame of this rank goes to. The barrier may be
	// shared (CollectiveBarrier) or the rank's own (NetworkBarrier on the
	// same engine: the rank hands it the completions of its connections).
	CollectiveRank(const CollectiveSchedule &schedule, uint32_t rank, Engine &engine, std::vector<uint32_t> ips,
		       const Mac &gateway, StepBarrier &barrier);

	// Ethereal: plan each step's flows over `uplinks` uplinks (leaf_of_rank
	// says where every rank is); pin(connection, peer rank, uplink) pins a
	// part's connection to the uplink (false: no path known: refused).
	using PinFn = std::function<bool(Connection &, uint32_t peer, uint32_t uplink)>;
	void set_planner(std::vector<uint32_t> leaf_of_rank, uint32_t uplinks, uint32_t max_subflows, PinFn pin);

	// Zero copy (messages.h): the endpoint's regions holding the send and
	// the recv buffer (0: none). The buffers never move after construction.
	void set_regions(uint32_t send_region, uint32_t recv_region)
	{
		send_region_ = send_region;
		recv_region_ = recv_region;
	}

	// The connections, and the first step's receive buffers; "" or why not.
	std::string open(uint64_t now_ns);
	// Start the next step when the barrier allows; call every poll.
	void tick(uint64_t now_ns);
	bool done() const
	{
		return step_ >= schedule_.steps.size() && finished_;
	}
	// Done, and the barrier lets the rank go (its peers need nothing more of it).
	bool released(uint64_t now_ns) const
	{
		return done() && barrier_.released(now_ns);
	}
	// What the rank waits for when it is not done (for a report).
	std::string waiting() const;
	// A message that failed (its status), or "" when none did.
	const std::string &error() const
	{
		return error_;
	}

	RankBuffers &buffers()
	{
		return buf_;
	}
	const std::vector<RankStepStats> &step_stats() const
	{
		return stats_;
	}
	uint32_t rank() const
	{
		return rank_;
	}
	static uint32_t conn_id(uint32_t ranks, uint32_t channels, uint32_t src, uint32_t dst, uint32_t channel,
				uint32_t part);
	// The first connection id above every data connection's (the network barrier's).
	static uint32_t control_conn_base(uint32_t ranks, uint32_t channels)
	{
		return conn_id(ranks, channels, ranks - 1, ranks - 1, channels - 1, kMaxParts - 1) + 1;
	}

      private:
	struct Part {
		uint32_t transfer; // index in the step
		uint32_t part; // 0.. its connection's part number
		uint64_t offset; // from the transfer's first byte
		uint32_t bytes;
		uint32_t uplink; // kLocalUplink: not pinned
	};
	struct Incoming {
		uint32_t transfer;
		uint32_t parts_left;
		uint64_t staging; // offset in staging_ (sums)
		bool applied;
	};

	std::string plan_step(size_t step, uint32_t sender, std::vector<Part> *out) const;
	Connection *conn(const Transfer &t, uint32_t part);
	std::string post_receives(size_t step, uint64_t now_ns);
	void post_sends(size_t step, uint64_t now_ns);
	void on_complete(Connection &c, const Completion &d);
	void apply_ready();
	void maybe_finish(uint64_t now_ns);
	uint8_t *bytes_of(Buffer b, uint64_t off);

	const CollectiveSchedule &schedule_;
	uint32_t rank_, ranks_, channels_;
	Engine &engine_;
	std::vector<uint32_t> ips_;
	Mac gateway_;
	StepBarrier &barrier_;
	RankBuffers buf_;
	std::vector<uint8_t> staging_;
	std::vector<uint32_t> leaf_of_rank_;
	uint32_t uplinks_ = 0, max_subflows_ = 0;
	uint32_t send_region_ = 0, recv_region_ = 0;
	PinFn pin_;

	size_t step_ = 0; // the step whose receptions are posted
	bool sending_ = false; // its sends are posted
	bool finished_ = false; // ... and all done (barrier told)
	uint32_t sends_left_ = 0;
	std::vector<Incoming> incoming_; // the step's, in schedule order
	size_t next_apply_ = 0;
	std::vector<RankStepStats> stats_;
	std::string error_;
	std::unordered_map<uint32_t, Connection *> out_, in_; // by connection id
};

} // namespace lumen::dp
