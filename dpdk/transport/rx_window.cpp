// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// dpdk/transport/rx_window.cpp - the receiver's PSN bitmap (see rx_window.h).
#include "transport/rx_window.h"
#include "transport/psn.h"

#include <stdexcept>

namespace lumen::dp
{

namespace
{

// The n low bits set, for 1 <= n <= 64.
uint64_t low_bits(uint32_t n)
{
	return n >= 64 ? ~0ull : (1ull << n) - 1;
}

} // namespace

RxWindow::RxWindow(uint32_t capacity)
{
	if (capacity < kMinCapacity || capacity > kMaxCapacity || (capacity & (capacity - 1)) != 0)
		throw std::invalid_argument("RxWindow: capacity must be a power of two in [64, 65536]");
	capacity_ = capacity;
	mask_ = capacity - 1;
	bits_.assign(capacity / 64, 0);
}

void RxWindow::reset(uint32_t first_psn)
{
	for (auto &w : bits_)
		w = 0;
	cum_ = first_psn;
	high_ = first_psn;
}

// cum_ has just arrived: run it over the contiguous received PSNs, one word
// at a time. Each step takes the ones from cum's bit upwards in its word;
// a step that ends inside the word has met a hole, one that reaches the
// word's end goes on in the next word (the ring wraps at the last word).
// The bit of cum + capacity is cum's own bit, cleared by the run, so the
// loop ends after at most capacity/64 + 1 steps.
void RxWindow::advance()
{
	while (cum_ != high_) {
		uint32_t pos = cum_ & mask_;
		uint32_t w = pos >> 6, b = pos & 63;
		uint64_t ones = bits_[w] >> b; // bit 0 is cum
		uint32_t run = ~ones == 0 ? 64 : static_cast<uint32_t>(__builtin_ctzll(~ones));

		if (run == 0)
			break;
		if (run > 64 - b) // the shift brought in zeros, never ones; defensive
			run = 64 - b;
		uint64_t m = low_bits(run) << b;

		bits_[w] &= ~m;
		cum_ += run;
		if (b + run < 64)
			break;
	}
	// Nothing set survives before cum; high is never behind it.
	if (psn_before(high_, cum_))
		high_ = cum_;
}

// Every other arrival (on_data took the PSN expected with nothing beyond).
RxWindow::Arrival RxWindow::on_data_slow(uint32_t psn)
{
	uint32_t d = psn - cum_;

	if (psn_before(psn, cum_))
		return Arrival::kDuplicate;
	if (d >= capacity_)
		return Arrival::kBeyond;
	uint32_t pos = psn & mask_;
	uint64_t bit = 1ull << (pos & 63);
	uint64_t &word = bits_[pos >> 6];

	if (word & bit)
		return Arrival::kDuplicate;
	word |= bit;
	if (d >= high_ - cum_)
		high_ = psn + 1;
	if (d == 0)
		advance();
	return Arrival::kNew;
}

// 64 bits of the ring starting at cum + 1: the tail of one word and the
// head of the next (the same word again when the ring is one word long:
// its low bits are then the PSNs past the wrap, still inside the window).
uint64_t RxWindow::sack() const
{
	if (high_ - cum_ <= 1)
		return 0;
	uint32_t pos = (cum_ + 1) & mask_;
	uint32_t w = pos >> 6, b = pos & 63;
	uint64_t v = bits_[w] >> b;

	if (b != 0)
		v |= bits_[(w + 1) % bits_.size()] << (64 - b);
	return v;
}

uint32_t RxWindow::reorder_depth(uint32_t psn) const
{
	return psn_before(psn, cum_) ? 0 : psn - cum_;
}

bool RxWindow::received(uint32_t psn) const
{
	if (psn_before(psn, cum_))
		return true;
	if (psn - cum_ >= capacity_)
		return false;
	return test(psn);
}

} // namespace lumen::dp
