// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// dpdk/transport/rx_window.h - the receiver's PSN window: which of the next
// `capacity` PSNs have arrived, the cumulative ack and the SACK bitmap an ACK
// carries. (Which bytes make which message is the engine's: messages.h
// places each packet at its offset in the message it names.)
//
// Sprayed packets (REPS, OPS) arrive out of order, so the receiver keeps one
// bit per PSN for the PSNs [cum, cum + capacity): `cum` is the next PSN
// expected, every PSN before it has arrived. The bits live in a ring of
// capacity/64 words indexed by psn mod capacity, so the window slides without
// moving memory: when cum passes a PSN its bit is cleared, and the same bit
// then stands for psn + capacity.
//
//   on_data(psn)   d = psn - cum (serial, 32-bit wrap):
//                  d < 0            kDuplicate  (delivered long ago)
//                  d >= capacity    kBeyond     (no room: drop it; the
//                                                sender's SACK/RTO recovers,
//                                                research §5.12)
//                  bit already set  kDuplicate
//                  otherwise        set the bit; when d == 0, cum runs over
//                                   the contiguous set bits, clearing them.
//
// The run is taken a word at a time (count-trailing-ones, popcount), so an
// arrival costs O(capacity/64) at worst, and an in-order arrival with
// nothing buffered behind it costs O(1): there is no set bit after cum.
//
// Invariants, whatever a peer sends: the bit of cum is clear; only PSNs in
// [cum, high) have bits set, where high (one past the highest PSN received,
// never before cum) is at most cum + capacity. A hostile PSN can only be refused (kBeyond,
// kDuplicate) or fill a hole; it cannot move cum backwards or past a hole.
//
// No allocation after construction; nothing throws after construction.
#pragma once

#include <cstdint>
#include <vector>

namespace lumen::dp
{

class RxWindow
{
      public:
	static constexpr uint32_t kMinCapacity = 64;
	static constexpr uint32_t kMaxCapacity = 65536;

	enum class Arrival {
		kNew, // first arrival of a PSN inside the window
		kDuplicate, // already received, or before cum
		kBeyond, // psn >= cum + capacity: no room, drop it
	};

	// capacity: a power of two in [64, 65536] PSNs, else std::invalid_argument.
	// The window starts at PSN 0 (call reset() with the connection's first PSN).
	explicit RxWindow(uint32_t capacity);

	// Forget everything; the next PSN expected is first_psn.
	void reset(uint32_t first_psn);

	// Record the arrival of psn. Inline for the common case, the PSN
	// expected with nothing received beyond it: no bit is set (cum would
	// clear it at once), cum moves on.
	Arrival on_data(uint32_t psn)
	{
		if (psn == cum_ && high_ == cum_) {
			cum_++;
			high_ = cum_;
			return Arrival::kNew;
		}
		return on_data_slow(psn);
	}

	// Next PSN expected: every PSN before it has arrived.
	uint32_t cum() const
	{
		return cum_;
	}
	// Bit i: PSN cum() + 1 + i has arrived (cum() itself never has).
	uint64_t sack() const;
	// PSNs beyond cum() the window can still take: capacity - (high - cum),
	// where high is one past the highest PSN received (cum when none is).
	uint32_t rwnd() const
	{
		return capacity_ - (high_ - cum_);
	}
	// How far ahead of cum() psn is (call it before on_data(psn)): 0 for the
	// PSN expected, psn - cum() after it, 0 for a PSN before cum().
	uint32_t reorder_depth(uint32_t psn) const;
	// Whether psn has arrived (every PSN before cum() has).
	bool received(uint32_t psn) const;
	// Ask the CPU for the bitmap word of psn ahead of on_data(psn).
	void prefetch(uint32_t psn) const
	{
		__builtin_prefetch(&bits_[(psn & mask_) >> 6]);
	}
	uint32_t capacity() const
	{
		return capacity_;
	}

      private:
	bool test(uint32_t psn) const
	{
		uint32_t pos = psn & mask_;

		return (bits_[pos >> 6] >> (pos & 63)) & 1;
	}
	Arrival on_data_slow(uint32_t psn);
	void advance();

	uint32_t capacity_;
	uint32_t mask_; // capacity - 1
	uint32_t cum_ = 0;
	uint32_t high_ = 0; // one past the highest PSN received; cum_ when none
	std::vector<uint64_t> bits_; // received, bit (psn mod capacity)
};

} // namespace lumen::dp
