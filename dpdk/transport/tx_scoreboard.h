// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// dpdk/transport/tx_scoreboard.h - the sender's record of every PSN between
// una (oldest not cumulatively acked) and nxt (next to send): what it
// carried, when it was sent, and whether it is in flight, SACKed or lost.
//
// The records live in a ring indexed by psn mod its size, so at most
// `capacity` PSNs are outstanding (full()). The ring starts small (64
// entries) and doubles, up to capacity, when the PSNs outstanding would
// not fit: memory follows what is in flight, so 10,000 connections with a
// few packets in flight each stay in the cache and the TLB. PSNs are 32-bit
// and wrap; every comparison is serial (a - b as a signed 32-bit).
//
// ACK processing (on_ack): an ACK carries cum (every PSN before it arrived)
// and a 64-bit SACK (bit i: cum + 1 + i arrived). A cum outside [una, nxt]
// is refused whole (stale or forged), SACK bits at or beyond nxt are
// ignored. A PSN is counted as newly acked the first time it leaves "in
// flight" or "lost" for "sacked" or "below una", and never again: a
// duplicate or reordered ACK finds it already sacked or gone.
//
// Loss detection, after each ACK, on the PSNs still in flight:
//   dupthresh  3 PSNs after it have been SACKed (RFC 6675's DupThresh),
//              until reordering has been seen (a first transmission
//              delivered after one sent later, RFC 8985's reordering_seen):
//              a sprayed connection reorders by more than 3 packets as a
//              rule, and counting would retransmit what is only late;
//   RACK       a packet sent at least reorder_window_ns after it has been
//              delivered (RFC 8985, with the records' sent_ns as clocks).
// Only first transmissions advance the RACK clock: when a retransmitted PSN
// is acked, the ACK may be for the original, and taking the retransmission's
// send time would declare everything sent in between lost (Karn's
// ambiguity). Retransmissions themselves are judged by RACK time only (their
// PSN order says nothing about when they were sent).
//
// Both rules are monotone along the send order: if a first transmission is
// lost, so is every first transmission sent before it (it has at least as
// many SACKed PSNs after it, and an older send time). So a cursor walks the
// first transmissions from una and stops at the first one that is not lost;
// PSNs it passed are never examined again. Retransmissions go into a FIFO
// in the order they were sent, examined from its head in the same way. An
// ACK thus costs O(1) plus the PSNs it acks, SACKs or declares lost, not a
// walk over the window, which matters when a sprayed connection keeps a
// hole at una for many ACKs.
//
// Lost PSNs wait (state kLost) until the caller retransmits them:
// next_lost() gives the oldest, on_retransmit() puts it back in flight.
// on_rto() declares everything in flight lost; go_back_n() does so from a
// PSN on (single-path connections, whose receiver drops out-of-order
// packets and NACKs the PSN it expects; it sends no SACK, so neither rule
// above fires and no mode switch is needed). Neither touches SACKed PSNs,
// which the receiver holds.
//
// Allocation only when the ring grows and at the first retransmission (its
// FIFO); nothing throws after construction.
#pragma once

#include <cstdint>
#include <vector>

namespace lumen::dp
{

struct TxRecord {
	static constexpr uint8_t kInFlight = 0; // sent, no news yet
	static constexpr uint8_t kSacked = 1; // the receiver has it (above a hole)
	static constexpr uint8_t kLost = 2; // declared lost, to be retransmitted

	uint64_t sent_ns; // last (re)transmission; the caller's clock, non-decreasing
	uint32_t msg_id, msg_off, msg_len;
	uint32_t len; // bytes, for in_flight_bytes() and newly_acked_bytes
	uint16_t entropy; // UDP source port it went out with
	uint8_t tx_count; // transmissions, 1 for the first; saturates at 255
	uint8_t state; // kInFlight, kSacked, kLost: owned by the scoreboard
	bool msg_last;
};

class TxScoreboard
{
      public:
	static constexpr uint32_t kMaxCapacity = 1u << 20;
	static constexpr uint32_t kInitialRing = 64; // records allocated at first
	static constexpr uint32_t kDupThresh = 3;

	struct AckUpdate {
		uint32_t newly_acked_pkts; // PSNs acked or SACKed for the first time
		uint64_t newly_acked_bytes; // their len
		uint32_t newly_lost; // PSNs this ACK declared lost
		bool valid; // false: cum outside [una, nxt]; nothing changed
	};

	// capacity: a power of two in [1, 2^20], else std::invalid_argument.
	// The first PSN is 0 until reset() says otherwise.
	explicit TxScoreboard(uint32_t capacity);

	// Forget everything; the first PSN sent will be first_psn.
	void reset(uint32_t first_psn);

	uint32_t una() const
	{
		return una_;
	}
	uint32_t nxt() const
	{
		return nxt_;
	}
	// PSNs sent and neither acked, SACKed nor declared lost, and their bytes.
	uint32_t in_flight() const
	{
		return in_flight_;
	}
	uint64_t in_flight_bytes() const
	{
		return in_flight_bytes_;
	}
	// PSNs declared lost and not yet retransmitted.
	uint32_t lost() const
	{
		return lost_;
	}
	// PSNs SACKed (between una and nxt).
	uint32_t sacked() const
	{
		return sacked_;
	}
	// A first transmission was delivered after one sent later: dupthresh is
	// off from then on (RACK's reorder window decides alone).
	bool reordering_seen() const
	{
		return reordering_seen_;
	}
	bool full() const
	{
		return nxt_ - una_ >= capacity_;
	}
	uint32_t capacity() const
	{
		return capacity_;
	}

	// Record a first transmission: it gets PSN nxt(), which is returned,
	// state kInFlight and tx_count 1. When full(), nothing is recorded and
	// nxt() is returned unchanged: check full() first. Inline: a record
	// built field by field goes to the ring without a round trip through
	// memory.
	uint32_t push(const TxRecord &rec)
	{
		if (full())
			return nxt_;
		if (nxt_ - una_ > ring_mask_)
			grow();
		TxRecord &r = at(nxt_);

		/* field by field: a record the caller built on its stack is
		 * copied from registers, not re-read with wide loads that
		 * stall on the narrow stores that wrote it */
		r.sent_ns = rec.sent_ns;
		r.msg_id = rec.msg_id;
		r.msg_off = rec.msg_off;
		r.msg_len = rec.msg_len;
		r.len = rec.len;
		r.entropy = rec.entropy;
		r.msg_last = rec.msg_last;
		r.state = TxRecord::kInFlight;
		r.tx_count = 1;
		in_flight_++;
		in_flight_bytes_ += r.len;
		if (!sent_any_) {
			sent_any_ = true;
			first_sent_ns_ = r.sent_ns;
		}
		if (r.sent_ns > last_sent_ns_)
			last_sent_ns_ = r.sent_ns;
		return nxt_++;
	}

	// The record of psn, for una() <= psn < nxt() (other PSNs: some slot of
	// the ring). The caller may change msg_*, entropy, msg_last; sent_ns,
	// len, tx_count and state belong to the scoreboard.
	TxRecord &at(uint32_t psn)
	{
		return ring_[psn & ring_mask_];
	}
	const TxRecord &at(uint32_t psn) const
	{
		return ring_[psn & ring_mask_];
	}
	// una() <= psn < nxt()
	bool outstanding(uint32_t psn) const
	{
		return psn - una_ < nxt_ - una_;
	}

	// Apply an ACK (see the header comment), then detect losses.
	// reorder_window_ns: RACK's reordering allowance (UINT64_MAX turns
	// RACK off, leaving dupthresh).
	AckUpdate on_ack(uint32_t cum, uint64_t sack, uint64_t now_ns, uint64_t reorder_window_ns);

	// The oldest PSN declared lost and not yet retransmitted; false if none.
	bool next_lost(uint32_t *psn);
	// psn has been sent again: lost (or in flight: a probe) -> in flight,
	// sent_ns = now_ns, tx_count + 1. Ignored for a PSN not outstanding or
	// SACKed.
	void on_retransmit(uint32_t psn, uint64_t now_ns, uint16_t entropy);
	// Retransmission timeout: every PSN in flight (not SACKed) is lost.
	// Returns how many were newly declared lost.
	uint32_t on_rto();
	// The RTOs were spurious (an ACK showed a packet sent before them
	// arrived): every PSN still waiting to be resent is in flight again,
	// its first copy on its way, and the loss cursor goes back to una so
	// that dupthresh and RACK judge them again (a Go-Back-N connection's
	// NACKs do). Returns how many were restored.
	uint32_t undo_rto();
	// Go-Back-N: every PSN in flight from from_psn on (from una() if
	// from_psn is up to capacity before it) is lost, to be resent in order
	// through next_lost(). A from_psn at or after nxt(), or further back,
	// changes nothing. Returns how many were newly declared lost.
	uint32_t go_back_n(uint32_t from_psn);

	// An RTT sample from an ACK's echoed timestamp (the ts_ns of the DATA
	// packet that triggered it, which a retransmission carries afresh, so
	// it is never ambiguous). False, and no sample, when the echo cannot be
	// one of ours: after now_ns, before the first PSN sent since reset(),
	// or after the latest (re)transmission.
	bool rtt_sample(uint64_t echo_ts_ns, uint64_t now_ns, uint64_t *rtt_ns) const;

      private:
	struct RetxEntry {
		uint64_t sent_ns;
		uint32_t psn;
		uint8_t tx_count;
	};

	void grow();
	void deliver(TxRecord &rec, uint32_t psn, AckUpdate *u);
	void mark_lost(TxRecord &rec, uint32_t psn);
	uint32_t detect_losses(uint64_t reorder_window_ns);
	bool rack_expired(uint64_t sent_ns, uint64_t reorder_window_ns) const;
	bool retx_live(const RetxEntry &e) const;
	void retx_push(uint32_t psn, const TxRecord &rec);
	void retx_compact();

	uint32_t capacity_;
	uint32_t mask_; // capacity - 1: the retransmission FIFO's
	uint32_t ring_mask_; // ring_.size() - 1
	uint32_t una_ = 0, nxt_ = 0;
	uint32_t in_flight_ = 0;
	uint64_t in_flight_bytes_ = 0;
	uint32_t lost_ = 0, sacked_ = 0;
	uint32_t lost_hint_ = 0; // no kLost PSN before it (when lost_ > 0)
	// Loss cursor: every first transmission in flight is at or after it;
	// sacked_below_ counts the SACKed PSNs in [una, cursor).
	uint32_t cursor_ = 0, sacked_below_ = 0;
	// RACK: the latest-sent first transmission delivered so far.
	bool rack_valid_ = false;
	bool reordering_seen_ = false;
	uint32_t rack_psn_ = 0;
	uint64_t rack_sent_ns_ = 0;
	// Send times since reset(), for rtt_sample().
	bool sent_any_ = false;
	uint64_t first_sent_ns_ = 0, last_sent_ns_ = 0;
	std::vector<TxRecord> ring_;
	// Retransmissions in the order they were sent (a ring of capacity
	// entries, allocated at the first one; stale ones are skipped and
	// compacted away when it fills).
	std::vector<RetxEntry> retx_;
	uint32_t retx_head_ = 0, retx_count_ = 0;
};

} // namespace lumen::dp
