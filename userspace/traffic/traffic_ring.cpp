// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#include "traffic/traffic_ring.h"

#include "base/error.h"
#include "base/system.h"

#include <cerrno>
#include <cstring>
#include <ctime>

namespace lumen
{

Ring::Ring(unsigned entries)
{
	io_uring_params params = {};
	// completions of hundreds of flows can outpace one drain: a larger
	// completion queue (the kernel also buffers overflow, IORING_FEAT_NODROP)
	params.flags = IORING_SETUP_CQSIZE;
	params.cq_entries = entries * 4;
	int rc = io_uring_queue_init_params(entries, &ring_, &params);
	if (rc < 0)
		throw Error(std::string("cannot create an io_uring: ") + std::strerror(-rc) +
			    (rc == -EPERM ? " (io_uring disabled? see sysctl kernel.io_uring_disabled)" : ""));
}

Ring::~Ring()
{
	io_uring_queue_exit(&ring_);
}

io_uring_sqe *Ring::prepare(std::uint64_t user_data)
{
	io_uring_sqe *sqe = io_uring_get_sqe(&ring_);
	if (!sqe) {
		int rc = io_uring_submit(&ring_);
		if (rc < 0)
			throw Error(std::string("io_uring submit: ") + std::strerror(-rc));
		sqe = io_uring_get_sqe(&ring_);
		if (!sqe)
			throw Error("io_uring submission queue stays full");
	}
	io_uring_sqe_set_data64(sqe, user_data);
	return sqe;
}

void Ring::arm_timer_at(std::uint64_t at_ns, std::uint64_t user_data)
{
	// relative, not IORING_TIMEOUT_ABS: io_uring takes an absolute time in
	// the host's CLOCK_MONOTONIC, which is not ours in a time namespace
	// (a container's, or a host of `lumen experiment --hosts` there)
	std::uint64_t now_ns = monotonic_ns();
	std::uint64_t wait_ns = at_ns > now_ns ? at_ns - now_ns : 0;
	__kernel_timespec ts;
	ts.tv_sec = static_cast<long long>(wait_ns / 1'000'000'000ull);
	ts.tv_nsec = static_cast<long long>(wait_ns % 1'000'000'000ull);
	io_uring_sqe *sqe = prepare(user_data);
	io_uring_prep_timeout(sqe, &ts, 0, 0);
	int rc = io_uring_submit(&ring_);
	if (rc < 0)
		throw Error(std::string("io_uring submit: ") + std::strerror(-rc));
}

bool Ring::submit_and_wait()
{
	int rc = io_uring_submit_and_wait(&ring_, 1);
	if (rc == -EINTR)
		return false;
	if (rc < 0)
		throw Error(std::string("io_uring wait: ") + std::strerror(-rc));
	return true;
}

} // namespace lumen
