// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// dpdk/transport/collective_barrier.cpp - the network barrier between a
// collective's steps (collective_barrier.h).
#include "transport/collective_barrier.h"

#include <algorithm>
#include <cstring>

extern "C" {
#include <lumen/dp_wire.h>
}

namespace lumen::dp
{

namespace
{

// A control message's user word: the peer and the phase.
constexpr uint64_t user_of(uint32_t peer, uint32_t phase)
{
	return (uint64_t)peer << 32 | phase;
}

std::string phase_name(uint32_t phase)
{
	return phase ? "step " + std::to_string(phase - 1) + " done" : "ready";
}

} // namespace

NetworkBarrier::NetworkBarrier(Engine &engine, uint32_t rank, std::vector<uint32_t> ips, const Mac &gateway,
			       size_t steps, uint32_t first_id)
    : engine_(engine), rank_(rank), ranks_((uint32_t)ips.size()), phases_((uint32_t)steps + 1), first_id_(first_id),
      ips_(std::move(ips)), gateway_(gateway), out_(ranks_, nullptr), in_(ranks_, nullptr),
      rx_((size_t)ranks_ * phases_ * kMsgBytes), tx_(phases_), heard_(ranks_, 0)
{
}

std::array<uint8_t, NetworkBarrier::kMsgBytes> NetworkBarrier::message(uint32_t rank, uint32_t phase, uint32_t ranks)
{
	std::array<uint8_t, kMsgBytes> m{};
	lumen_dp_put32(m.data(), kMagic);
	lumen_dp_put32(m.data() + 4, rank);
	lumen_dp_put32(m.data() + 8, phase);
	lumen_dp_put32(m.data() + 12, ranks);
	return m;
}

void NetworkBarrier::fail(const std::string &why)
{
	if (error_.empty())
		error_ = "barrier: " + why;
}

std::string NetworkBarrier::open(uint64_t now_ns)
{
	if ((uint64_t)first_id_ + (uint64_t)ranks_ * ranks_ >= (1u << 31))
		return "barrier: too many ranks for control connection ids";
	for (uint32_t j = 0; j < ranks_; j++) {
		if (j == rank_)
			continue;
		out_[j] = engine_.connect(ips_[j], gateway_, control_conn_id(first_id_, ranks_, rank_, j), now_ns);
		in_[j] = engine_.accept(ips_[j], gateway_, control_conn_id(first_id_, ranks_, j, rank_), now_ns);
		if (!out_[j] || !in_[j])
			return "barrier: no control connection with rank " + std::to_string(j) +
			       " (max_conns, or its handshake came before this rank was set up and the engine "
			       "opened the connection itself: EngineConfig::open_on_handshake must be off)";
		for (uint32_t k = 0; k < phases_; k++) {
			uint8_t *at = rx_.data() + ((size_t)j * phases_ + k) * kMsgBytes;
			PostError e = engine_.post_recv(*in_[j], RecvWr{at, kMsgBytes, user_of(j, k)}, now_ns);
			if (e != PostError::kOk)
				return std::string("barrier: post_recv: ") + post_error_name(e);
		}
	}
	heard_[rank_] = UINT32_MAX; /* min_heard_ is over the others */
	min_heard_ = ranks_ > 1 ? 0 : phases_;
	say(0, now_ns);
	return error_;
}

/* The phase to every other rank, from tx_ (it stays put until acknowledged). */
void NetworkBarrier::say(uint32_t phase, uint64_t now_ns)
{
	tx_[phase] = message(rank_, phase, ranks_);
	said_ = phase + 1;
	for (uint32_t j = 0; j < ranks_; j++) {
		if (j == rank_)
			continue;
		PostError e =
			engine_.post_send(*out_[j], SendWr{tx_[phase].data(), kMsgBytes, user_of(j, phase), 0}, now_ns);
		if (e != PostError::kOk) {
			fail("to rank " + std::to_string(j) + ": post_send: " + post_error_name(e));
			return;
		}
		stats_.sent++;
	}
	if (said_ == phases_ && heard_all(phases_ - 1))
		last_ns_ = now_ns;
}

bool NetworkBarrier::ready() const
{
	return said_ > 0 && heard_all(0);
}

void NetworkBarrier::finish(size_t step, uint64_t now_ns)
{
	if (step + 1 != said_ || step + 1 >= phases_) {
		fail("step " + std::to_string(step) + " finished out of order");
		return;
	}
	say((uint32_t)step + 1, now_ns);
}

bool NetworkBarrier::passed(size_t step) const
{
	return said_ > step + 1 && heard_all((uint32_t)step + 1);
}

bool NetworkBarrier::released(uint64_t now_ns) const
{
	if (said_ < phases_ || !heard_all(phases_ - 1))
		return false;
	return stats_.acked == stats_.sent || now_ns >= last_ns_ + kLingerNs;
}

bool NetworkBarrier::on_complete(Connection &c, const Completion &d)
{
	if (c.conn_id < first_id_ || c.conn_id - first_id_ >= ranks_ * ranks_)
		return false;
	const uint32_t peer = (uint32_t)(d.user >> 32), phase = (uint32_t)d.user;
	const std::string who = (d.kind == Completion::kSend ? "to rank " : "from rank ") + std::to_string(peer);
	if (d.status == MsgStatus::kTruncated) {
		fail("rank " + std::to_string(peer) + " sent a control message of " + std::to_string(d.msg_len) +
		     " bytes (" + std::to_string(kMsgBytes) + " expected)");
		return true;
	}
	if (d.status != MsgStatus::kOk) {
		fail("the control message (" + phase_name(phase) + ") " + who + " " + msg_status_name(d.status));
		return true;
	}
	if (d.kind == Completion::kSend) {
		stats_.acked++;
		return true;
	}
	const uint8_t *m = rx_.data() + ((size_t)peer * phases_ + phase) * kMsgBytes;
	const uint32_t magic = lumen_dp_get32(m), rank = lumen_dp_get32(m + 4), said = lumen_dp_get32(m + 8),
		       ranks = lumen_dp_get32(m + 12);
	if (d.len != kMsgBytes || magic != kMagic || rank != peer || said != phase || ranks != ranks_) {
		fail("rank " + std::to_string(peer) + "'s control message " + std::to_string(phase) + " should say '" +
		     phase_name(phase) + "' (" + std::to_string(kMsgBytes) + " bytes: magic, rank " +
		     std::to_string(peer) + ", phase " + std::to_string(phase) + ", " + std::to_string(ranks_) +
		     " ranks) but has " + std::to_string(d.len) + " bytes: magic " +
		     (magic == kMagic ? "ok" : "wrong") + ", rank " + std::to_string(rank) + ", phase " +
		     std::to_string(said) + ", " + std::to_string(ranks) + " ranks");
		return true;
	}
	stats_.received++;
	heard_[peer]++;
	min_heard_ = *std::min_element(heard_.begin(), heard_.end());
	if (said_ == phases_ && heard_all(phases_ - 1))
		last_ns_ = d.done_ns;
	return true;
}

std::string NetworkBarrier::waiting() const
{
	if (!error_.empty() || !said_)
		return "";
	/* the phase the rank needs next from everyone */
	const uint32_t need = said_ - 1;
	std::string who;
	for (uint32_t j = 0; j < ranks_; j++)
		if (j != rank_ && heard_[j] <= need)
			who += (who.empty() ? "" : ", ") + std::to_string(j);
	if (who.empty())
		return "";
	return "waiting for rank(s) " + who + " to say '" + phase_name(need) + "'" +
	       (need == 0 ? " (did their process start?)" : "");
}

} // namespace lumen::dp
