// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// dpdk/transport/tx_scoreboard.cpp - the sender's per-PSN records, ACK/SACK
// processing and loss detection (see tx_scoreboard.h).
#include "transport/tx_scoreboard.h"
#include "transport/psn.h"

#include <algorithm>
#include <stdexcept>

namespace lumen::dp
{

TxScoreboard::TxScoreboard(uint32_t capacity)
{
	if (capacity == 0 || capacity > kMaxCapacity || (capacity & (capacity - 1)) != 0)
		throw std::invalid_argument("TxScoreboard: capacity must be a power of two in [1, 2^20]");
	capacity_ = capacity;
	mask_ = capacity - 1;
	ring_.assign(std::min<uint32_t>(capacity, kInitialRing), TxRecord{});
	ring_mask_ = static_cast<uint32_t>(ring_.size()) - 1;
}

// Double the ring: each outstanding record moves to its slot in the new one.
void TxScoreboard::grow()
{
	std::vector<TxRecord> bigger(ring_.size() * 2, TxRecord{});
	uint32_t mask = static_cast<uint32_t>(bigger.size()) - 1;

	for (uint32_t psn = una_; psn != nxt_; psn++)
		bigger[psn & mask] = ring_[psn & ring_mask_];
	ring_.swap(bigger);
	ring_mask_ = mask;
}

void TxScoreboard::reset(uint32_t first_psn)
{
	una_ = nxt_ = cursor_ = lost_hint_ = first_psn;
	in_flight_ = lost_ = sacked_ = sacked_below_ = 0;
	in_flight_bytes_ = 0;
	rack_valid_ = false;
	reordering_seen_ = false;
	rack_psn_ = 0;
	rack_sent_ns_ = 0;
	sent_any_ = false;
	first_sent_ns_ = last_sent_ns_ = 0;
	retx_head_ = retx_count_ = 0;
}

// psn reached the receiver (cum passed it, or a SACK bit names it) and had
// not been counted: it leaves in-flight or lost, and a first transmission
// moves the RACK clock.
void TxScoreboard::deliver(TxRecord &rec, uint32_t psn, AckUpdate *u)
{
	if (rec.state == TxRecord::kInFlight) {
		in_flight_--;
		in_flight_bytes_ -= rec.len;
	} else if (rec.state == TxRecord::kLost) {
		lost_--;
	}
	u->newly_acked_pkts++;
	u->newly_acked_bytes += rec.len;
	if (rec.tx_count != 1)
		return; // Karn: the ACK may be for an earlier transmission
	if (rack_valid_ && psn_before(psn, rack_psn_))
		reordering_seen_ = true; // PSNs go out in order: it overtook none, one overtook it
	if (!rack_valid_ || psn_before(rack_psn_, psn))
		rack_psn_ = psn;
	if (!rack_valid_ || rec.sent_ns > rack_sent_ns_)
		rack_sent_ns_ = rec.sent_ns;
	rack_valid_ = true;
}

// An in-flight PSN is declared lost; next_lost() will find it.
void TxScoreboard::mark_lost(TxRecord &rec, uint32_t psn)
{
	in_flight_--;
	in_flight_bytes_ -= rec.len;
	rec.state = TxRecord::kLost;
	if (lost_ == 0 || psn_before(psn, lost_hint_))
		lost_hint_ = psn;
	lost_++;
}

// RACK: a packet sent at sent_ns is lost when one sent reorder_window_ns or
// more after it has been delivered.
bool TxScoreboard::rack_expired(uint64_t sent_ns, uint64_t reorder_window_ns) const
{
	if (!rack_valid_ || reorder_window_ns == UINT64_MAX || rack_sent_ns_ < sent_ns)
		return false;
	return rack_sent_ns_ - sent_ns >= reorder_window_ns;
}

TxScoreboard::AckUpdate TxScoreboard::on_ack(uint32_t cum, uint64_t sack, uint64_t /*now_ns*/,
					     uint64_t reorder_window_ns)
{
	AckUpdate u{0, 0, 0, false};

	if (cum - una_ > nxt_ - una_)
		return u; // before una (stale or forged) or beyond nxt (forged)
	u.valid = true;

	// Cumulative part: everything before cum. SACKed PSNs were counted
	// when their bit arrived.
	for (; una_ != cum; una_++) {
		TxRecord &rec = at(una_);

		if (rec.state == TxRecord::kSacked) {
			sacked_--;
			if (psn_before(una_, cursor_))
				sacked_below_--;
		} else {
			deliver(rec, una_, &u);
		}
	}
	if (psn_before(cursor_, una_)) {
		cursor_ = una_;
		sacked_below_ = 0; // every SACKed PSN before the old cursor is gone
	}
	// Keep the RACK PSN within 2^31 of una for the serial compares; any
	// PSN still outstanding is after it either way.
	if (rack_valid_ && psn_before(rack_psn_, una_))
		rack_psn_ = una_ - 1;

	// Selective part: only PSNs in (cum, nxt) can have been received.
	uint32_t room = nxt_ - cum;

	if (room <= 1)
		sack = 0;
	else if (room - 1 < 64)
		sack &= (1ull << (room - 1)) - 1;
	while (sack != 0) {
		uint32_t psn = cum + 1 + static_cast<uint32_t>(__builtin_ctzll(sack));
		TxRecord &rec = at(psn);

		sack &= sack - 1;
		if (rec.state == TxRecord::kSacked)
			continue;
		deliver(rec, psn, &u);
		rec.state = TxRecord::kSacked;
		sacked_++;
		if (psn_before(psn, cursor_))
			sacked_below_++;
	}

	u.newly_lost = detect_losses(reorder_window_ns);
	return u;
}

// The two loss walks of the header comment. Returns how many PSNs were
// declared lost.
uint32_t TxScoreboard::detect_losses(uint64_t reorder_window_ns)
{
	uint32_t n = 0;

	// First transmissions in send order. The cursor passes SACKed, lost and
	// retransmitted PSNs, and stops at the first first-transmission that
	// neither rule declares lost: all later ones are not lost either.
	for (; cursor_ != nxt_; cursor_++) {
		TxRecord &rec = at(cursor_);

		if (rec.state == TxRecord::kSacked) {
			sacked_below_++;
			continue;
		}
		if (rec.state != TxRecord::kInFlight || rec.tx_count != 1)
			continue;
		bool dup = !reordering_seen_ && sacked_ - sacked_below_ >= kDupThresh; // SACKed after cursor
		bool rack = psn_before(cursor_, rack_psn_) && rack_expired(rec.sent_ns, reorder_window_ns);

		if (!dup && !rack)
			break;
		mark_lost(rec, cursor_);
		n++;
	}

	// Retransmissions in the order they were sent, by RACK time. A packet
	// sent in the same ns as the delivered one is not "sent before" it.
	while (retx_count_ != 0) {
		const RetxEntry &e = retx_[retx_head_];

		if (retx_live(e)) {
			if (!rack_expired(e.sent_ns, reorder_window_ns) || rack_sent_ns_ == e.sent_ns)
				break;
			mark_lost(at(e.psn), e.psn);
			n++;
		}
		retx_head_ = (retx_head_ + 1) & mask_;
		retx_count_--;
	}
	return n;
}

// An entry still describes the PSN's current transmission, in flight.
bool TxScoreboard::retx_live(const RetxEntry &e) const
{
	if (!outstanding(e.psn))
		return false;
	const TxRecord &rec = at(e.psn);

	return rec.state == TxRecord::kInFlight && rec.tx_count == e.tx_count && rec.sent_ns == e.sent_ns;
}

// Drop the stale entries, keeping the order. At most one entry per
// outstanding PSN is live, and the PSN being pushed has none, so this
// always makes room.
void TxScoreboard::retx_compact()
{
	uint32_t kept = 0;

	for (uint32_t i = 0; i < retx_count_; i++) {
		RetxEntry e = retx_[(retx_head_ + i) & mask_];

		if (retx_live(e))
			retx_[(retx_head_ + kept++) & mask_] = e;
	}
	retx_count_ = kept;
}

void TxScoreboard::retx_push(uint32_t psn, const TxRecord &rec)
{
	if (retx_.empty())
		retx_.assign(capacity_, RetxEntry{});
	if (retx_count_ == capacity_)
		retx_compact();
	if (retx_count_ == capacity_) { // only with tx_count saturated at 255; the RTO covers it
		retx_head_ = (retx_head_ + 1) & mask_;
		retx_count_--;
	}
	retx_[(retx_head_ + retx_count_) & mask_] = RetxEntry{rec.sent_ns, psn, rec.tx_count};
	retx_count_++;
}

bool TxScoreboard::next_lost(uint32_t *psn)
{
	if (lost_ == 0)
		return false;
	uint32_t p = psn_before(lost_hint_, una_) ? una_ : lost_hint_;

	for (; p != nxt_; p++) {
		if (at(p).state == TxRecord::kLost) {
			lost_hint_ = p;
			*psn = p;
			return true;
		}
	}
	return false; // not reached while the counters hold
}

void TxScoreboard::on_retransmit(uint32_t psn, uint64_t now_ns, uint16_t entropy)
{
	if (!outstanding(psn))
		return;
	TxRecord &rec = at(psn);

	if (rec.state == TxRecord::kSacked)
		return;
	if (rec.state == TxRecord::kLost) {
		lost_--;
		in_flight_++;
		in_flight_bytes_ += rec.len;
		rec.state = TxRecord::kInFlight;
	}
	rec.sent_ns = now_ns;
	rec.entropy = entropy;
	if (rec.tx_count < UINT8_MAX)
		rec.tx_count++;
	if (now_ns > last_sent_ns_)
		last_sent_ns_ = now_ns;
	retx_push(psn, rec);
}

uint32_t TxScoreboard::on_rto()
{
	uint32_t n = 0;

	for (uint32_t p = una_; p != nxt_; p++) {
		TxRecord &rec = at(p);

		if (rec.state == TxRecord::kInFlight) {
			mark_lost(rec, p);
			n++;
		}
	}
	retx_head_ = retx_count_ = 0; // nothing is in flight: every entry is stale
	return n;
}

uint32_t TxScoreboard::undo_rto()
{
	uint32_t n = 0;

	cursor_ = una_;
	sacked_below_ = 0;
	for (uint32_t p = una_; lost_ && p != nxt_; p++) {
		TxRecord &rec = at(p);

		if (rec.state == TxRecord::kLost) {
			rec.state = TxRecord::kInFlight;
			lost_--;
			in_flight_++;
			in_flight_bytes_ += rec.len;
			n++;
		}
	}
	return n;
}

uint32_t TxScoreboard::go_back_n(uint32_t from_psn)
{
	if (psn_before(from_psn, una_)) {
		if (una_ - from_psn > capacity_)
			return 0; // ancient: not a PSN of this window
		from_psn = una_;
	}
	if (!psn_before(from_psn, nxt_))
		return 0;
	uint32_t n = 0;

	for (uint32_t p = from_psn; p != nxt_; p++) {
		TxRecord &rec = at(p);

		if (rec.state == TxRecord::kInFlight) {
			mark_lost(rec, p);
			n++;
		}
	}
	return n;
}

bool TxScoreboard::rtt_sample(uint64_t echo_ts_ns, uint64_t now_ns, uint64_t *rtt_ns) const
{
	if (!sent_any_ || echo_ts_ns > now_ns || echo_ts_ns < first_sent_ns_ || echo_ts_ns > last_sent_ns_)
		return false;
	*rtt_ns = now_ns - echo_ts_ns;
	return true;
}

} // namespace lumen::dp
