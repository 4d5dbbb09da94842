// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/traffic/traffic_ring.h - the traffic generator's io_uring: one
// ring per process, one thread. Every submission carries user_data =
// (object id << 8) | operation, so a completion finds its flow or
// connection and knows what finished.
#pragma once

#include <liburing.h>

#include <cstdint>

namespace lumen
{

constexpr std::uint64_t make_user_data(std::uint64_t id, std::uint8_t op)
{
	return (id << 8) | op;
}
constexpr std::uint64_t user_data_id(std::uint64_t ud)
{
	return ud >> 8;
}
constexpr std::uint8_t user_data_op(std::uint64_t ud)
{
	return static_cast<std::uint8_t>(ud & 0xff);
}

class Ring
{
      public:
	explicit Ring(unsigned entries);
	~Ring();
	Ring(const Ring &) = delete;
	Ring &operator=(const Ring &) = delete;

	// A free submission slot with user_data set; when the queue is full
	// the pending ones are submitted first. Error when none can be had.
	io_uring_sqe *prepare(std::uint64_t user_data);
	// Arms a one-shot timer firing at CLOCK_MONOTONIC `at_ns` (submitted
	// at once: the kernel reads the timespec at submission).
	void arm_timer_at(std::uint64_t at_ns, std::uint64_t user_data);
	// Submits what is pending and waits for one completion; false when a
	// signal interrupted the wait.
	bool submit_and_wait();
	// Calls f(user_data, res, flags) for every available completion.
	template <typename F> void drain(F f)
	{
		io_uring_cqe *cqe;
		unsigned head, seen = 0;
		io_uring_for_each_cqe(&ring_, head, cqe)
		{
			f(cqe->user_data, cqe->res, cqe->flags);
			seen++;
		}
		io_uring_cq_advance(&ring_, seen);
	}

      private:
	io_uring ring_;
};

} // namespace lumen
