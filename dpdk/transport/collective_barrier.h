// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// dpdk/transport/collective_barrier.h - what separates the steps of a
// collective (collective_runner.h): a rank posts its sends of step s+1
// only when every rank has finished step s, and so has posted its receive
// buffers of step s+1 (no byte arrives before its buffer, no send reads
// what a step is still writing).
//
// Two barriers, one interface (StepBarrier, one per rank or shared):
//
// CollectiveBarrier: every rank in one process. A counter per step, shared
// by the ranks (atomics: the ranks may be polled by different lcores).
//
// NetworkBarrier: the ranks spread over processes (or machines). Each rank
// has a control connection to every other rank (connection ids above the
// data connections', control_conn_id) and says on it, in a 16-byte message
// (magic, its rank, a phase, the rank count; 32 bits each in network order,
// as dp_wire.h writes its fields), when it reaches a phase:
// phase 0 once it has posted its first receive buffers (open), phase s+1
// once it has finished step s and posted step s+1's buffers. open() posts
// one receive buffer per phase on every control connection; the messages of
// a connection complete in order, so the k-th is phase k's, and one that
// says anything else (or is not 16 bytes) is the peer's error: the barrier
// fails with a message, the run ends. A rank passes step s when it has
// finished s and heard phase s+1 from every other rank. At the end a rank
// stays (released) until it has heard the last phase from everyone, so no
// peer still waits for its ACKs, and until its own last messages were
// acknowledged or kLingerNs passed (the last ACK may be lost after the
// peer left: a rank cannot know that its peer knows).
//
// A peer's handshake may arrive before this rank's open() (a process that
// polls its port earlier, as --discover-paths does): the engine must then
// refuse it (EngineConfig::open_on_handshake off, as collective mode sets),
// and the peer tries again; no message moves before the connection is
// accept()ed and its buffers posted. An engine that opened the connection
// itself would take messages without a buffer: open() fails then, saying so.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "transport/engine.h"

namespace lumen::dp
{

class StepBarrier
{
      public:
	virtual ~StepBarrier() = default;
	// The rank's first receive buffers are posted: "" or why the barrier cannot start.
	virtual std::string open(uint64_t now_ns)
	{
		(void)now_ns;
		return "";
	}
	// Every rank has posted its first receive buffers (the first sends may go).
	virtual bool ready() const
	{
		return true;
	}
	// The rank has finished step `step` and posted the next step's buffers.
	virtual void finish(size_t step, uint64_t now_ns) = 0;
	// Every rank has finished step `step`.
	virtual bool passed(size_t step) const = 0;
	// The rank, done with the last step, may stop polling its port.
	virtual bool released(uint64_t now_ns) const
	{
		(void)now_ns;
		return true;
	}
	// A completion on the rank's engine: true when it was the barrier's.
	virtual bool on_complete(Connection &c, const Completion &d)
	{
		(void)c, (void)d;
		return false;
	}
	// Why the barrier failed ("": it did not).
	virtual std::string error() const
	{
		return "";
	}
	// Whom the rank waits for, when it waits ("": nobody, or unknown).
	virtual std::string waiting() const
	{
		return "";
	}
};

// How many ranks have finished each step (every rank in one process).
class CollectiveBarrier : public StepBarrier
{
      public:
	CollectiveBarrier(uint32_t ranks, size_t steps) : ranks_(ranks), done_(steps)
	{
	}
	void finish(size_t step, uint64_t) override
	{
		done_[step].fetch_add(1, std::memory_order_acq_rel);
	}
	bool passed(size_t step) const override
	{
		return done_[step].load(std::memory_order_acquire) >= ranks_;
	}

      private:
	uint32_t ranks_;
	std::vector<std::atomic<uint32_t>> done_;
};

// Control messages between the ranks (one rank's side; see above).
class NetworkBarrier : public StepBarrier
{
      public:
	static constexpr uint32_t kMagic = 0x4C434231; // "LCB1"
	static constexpr uint32_t kMsgBytes = 16;
	// After the last phase, how long a rank waits for its last messages' ACKs.
	static constexpr uint64_t kLingerNs = 200'000'000;

	struct Stats {
		uint64_t sent = 0, acked = 0, received = 0;
	};

	// ips[r] is rank r's address; gateway the MAC every frame goes to;
	// first_id the first control connection id (CollectiveRank::control_conn_base).
	NetworkBarrier(Engine &engine, uint32_t rank, std::vector<uint32_t> ips, const Mac &gateway, size_t steps,
		       uint32_t first_id);

	// Connection id of src's control connection to dst.
	static uint32_t control_conn_id(uint32_t first_id, uint32_t ranks, uint32_t src, uint32_t dst)
	{
		return first_id + src * ranks + dst;
	}
	// A control message's bytes (phase 0: opened; s+1: step s done).
	static std::array<uint8_t, kMsgBytes> message(uint32_t rank, uint32_t phase, uint32_t ranks);

	std::string open(uint64_t now_ns) override;
	bool ready() const override;
	void finish(size_t step, uint64_t now_ns) override;
	bool passed(size_t step) const override;
	bool released(uint64_t now_ns) const override;
	bool on_complete(Connection &c, const Completion &d) override;
	std::string error() const override
	{
		return error_;
	}
	std::string waiting() const override;
	const Stats &stats() const
	{
		return stats_;
	}

      private:
	void say(uint32_t phase, uint64_t now_ns);
	void fail(const std::string &why);
	bool heard_all(uint32_t phase) const
	{
		return min_heard_ > phase;
	}

	Engine &engine_;
	uint32_t rank_, ranks_, phases_, first_id_;
	std::vector<uint32_t> ips_;
	Mac gateway_;
	std::vector<Connection *> out_, in_; // by peer rank
	std::vector<uint8_t> rx_; // per peer, per phase: its message
	std::vector<std::array<uint8_t, kMsgBytes>> tx_; // per phase (the same to every peer)
	std::vector<uint32_t> heard_; // per peer: phases heard
	uint32_t min_heard_ = 0; // phases heard from every peer
	uint32_t said_ = 0; // phases said
	uint64_t last_ns_ = 0; // when the last phase was heard from all and said
	Stats stats_;
	std::string error_;
};

} // namespace lumen::dp
