// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/testbed/delayline.h - a userspace delay line: extra one-way link
// delay without netem. `lumen delayline A B --delay D` runs in a namespace
// that sits in the middle of a link (testbed.cpp builds it): every frame
// that arrives on device A leaves on device B D later, and vice versa,
// in order. Each direction holds its frames in a DelayQueue, a bounded FIFO
// in one fixed byte ring: a frame that does not fit is dropped and counted.
//
// Frames are read with AF_PACKET sockets bound to one protocol (IPv4, ARP)
// rather than ETH_P_ALL: protocol handlers run after the tc ingress hook,
// so a frame is read after the INT switch's dequeue program on A (the
// switch port's veth peer) has counted it and filled its INT hop record.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace lumen
{

// A FIFO of frames with their release times in a ring of `capacity` bytes.
// Each frame takes a 16-byte record header plus its length rounded up to 8
// bytes, contiguous in the ring (wrapping wastes the tail end), so the
// frames it holds never take more than `capacity` bytes of memory.
class DelayQueue
{
      public:
	static constexpr std::size_t kRecordHeader = 16;
	// capacity is rounded down to a multiple of 8; at least 4 KiB
	explicit DelayQueue(std::size_t capacity_bytes);

	// Appends a frame released at release_ns; false (and counted as a
	// drop) when it does not fit. Release times must not decrease.
	bool push(std::uint64_t release_ns, std::span<const std::uint8_t> frame);
	bool empty() const;
	// Only when !empty(): the oldest frame. Its bytes stay valid after
	// pop() until the next push() (the sender pops a batch, then sends it).
	std::uint64_t front_release_ns() const;
	std::span<const std::uint8_t> front() const;
	void pop();

	std::size_t capacity() const;
	std::size_t used_bytes() const; // ring bytes in use (headers, padding, waste)
	std::uint64_t queued_frames() const;
	std::uint64_t pushed() const;
	std::uint64_t dropped() const;
	std::uint64_t dropped_bytes() const;
	std::size_t max_used_bytes() const; // high-water mark of used_bytes()

      private:
	struct Record;
	Record *record_at(std::size_t offset) const;
	bool reserve(std::size_t need, std::size_t *offset);

	std::size_t capacity_;
	std::unique_ptr<std::uint8_t[]> ring_;
	std::size_t head_ = 0, tail_ = 0; // read and write offsets
	std::size_t wrap_at_ = 0; // when wrapped_: where the reader jumps to 0
	bool wrapped_ = false; // the writer is behind the reader ([0, tail_) is new)
	std::size_t used_ = 0, max_used_ = 0;
	std::uint64_t queued_ = 0, pushed_ = 0, dropped_ = 0, dropped_bytes_ = 0;
	std::uint64_t last_release_ = 0;
};

struct DelayLineOptions {
	std::string dev_a, dev_b; // in the current network namespace
	std::uint64_t delay_ns = 0; // each direction
	std::size_t queue_bytes = 64u << 20; // each direction
	std::string stats_path; // JSON counters, rewritten every 0.5 s and at exit ("" = none)
};

// Forwards until SIGINT/SIGTERM/SIGHUP (exit 0) or until a device goes
// down or away (exit 0, said on stderr). Throws Error when it cannot start.
int run_delay_line(const DelayLineOptions &options);

} // namespace lumen
