// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// dpdk/transport/messages.h - lumen-dp's application interface: messages
// from and into the application's own memory, and one completion for each.
//
// The model is two-sided messaging, as RDMA's SEND/RECV and NCCL's
// send/recv: a connection (Engine::connect on one side, Engine::accept or a
// first DATA frame on the other) carries a stream of messages in order.
//
// Sending. Engine::post_send(c, SendWr) queues a message of len bytes at
// data; the engine reads them when it cuts packets (and again for a
// retransmission), so the application leaves them alone until the message's
// completion: Completion{kSend, kOk} when the receiver has acknowledged its
// last byte. With a memory region registered with the endpoint
// (SendWr::region, app/endpoint.h), packets are not copied: each frame is the
// headers in a packet buffer chained to the payload where it lies
// (DPDK's rte_pktmbuf_attach_extbuf), when the port takes multi-segment
// frames; otherwise the payload is copied into the frame, which is what the
// completion counts (Completion::zero_copy_pkts).
// A completion does not wait for the NIC to let go of every frame that
// referenced the message: a retransmission that turned out needless may
// still sit in a TX ring. Reusing the buffer then is safe (what such a
// frame carries is a duplicate the receiver never places); freeing it is
// not: the endpoint's region cannot be unregistered while frames refer to
// it. data == nullptr sends the synthetic pattern of (connection, message,
// offset) that perf, pair and hosts use and a receiver checks.
//
// Receiving. Engine::post_recv(c, RecvWr) gives the connection a buffer for
// its next message; the k-th buffer posted takes the k-th message not yet
// taken. Packets are placed at their offset on arrival (in any order, once),
// and the message completes as Completion{kRecv} when it is whole and every
// message before it has completed. A message longer than its buffer fills
// it and completes kTruncated (the rest is dropped, the sender's completion
// says kOk: the bytes were delivered as far as the receiver asked). A
// packet of a message for which no buffer was posted yet is not taken (not
// acknowledged; counted as rnr_drops): the sender resends it, as an RDMA
// receiver-not-ready. A connection on which no buffer was ever posted takes
// every message and checks the pattern (EngineConfig::verify).
//
// Completions. Engine::on_complete is called once per message posted, on
// the lcore that polls the engine, from inside rx, tx or timers (it may post
// more). A connection fails (Engine::fail, or max_timeouts RTOs in a row
// without progress): every message it holds completes kTimedOut or kAborted,
// sends first, and later posts are refused (PostError::kFailed).
#pragma once

#include <cstdint>

namespace lumen::dp
{

// What became of a message.
enum class MsgStatus : uint8_t {
	kOk = 0,
	kTruncated, // receive: the message was longer than the buffer (filled)
	kTimedOut, // the connection saw max_timeouts RTOs in a row without progress
	kAborted, // Engine::fail() (the application's choice)
	kReset, // the connection ended under it: the peer has it no more (FIN RST), a new
		// incarnation replaced it, it was closed by the peer or expired idle
};

// Why a post was refused (nothing was queued).
enum class PostError : uint8_t {
	kOk = 0,
	kBadLength, // send: len 0 or above 2^31; receive: cap 0 or above 2^31
	kNoBuffer, // data == nullptr for a receive
	kFailed, // the connection has failed
};

const char *msg_status_name(MsgStatus s);
const char *post_error_name(PostError e);

// A message to send.
struct SendWr {
	const uint8_t *data = nullptr; // nullptr: the synthetic pattern
	uint32_t len = 0; // 1..2^31 bytes
	uint64_t user = 0; // handed back in the completion
	uint32_t region = 0; // the endpoint's registered region holding data (zero copy); 0: none
};

// A buffer for the next message a connection receives.
struct RecvWr {
	uint8_t *data = nullptr;
	uint32_t cap = 0; // 1..2^31 bytes
	uint64_t user = 0;
};

struct Completion {
	enum Kind : uint8_t {
		kSend,
		kRecv
	};
	Kind kind;
	MsgStatus status;
	uint32_t msg_id; // the connection's message number (from 0, in order)
	uint32_t len; // bytes sent, or placed in the buffer (at most its cap)
	uint32_t msg_len; // the message's length (receive: as the sender said)
	uint64_t user;
	uint64_t posted_ns; // when it was posted (receive: when its buffer was)
	uint64_t done_ns;
	uint32_t zero_copy_pkts; // send: packets sent without copying the payload
};

} // namespace lumen::dp
