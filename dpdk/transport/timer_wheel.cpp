// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// dpdk/transport/timer_wheel.cpp - the hashed timer wheel's linking (see
// timer_wheel.h; advance() is a template there).
#include "transport/timer_wheel.h"

#include <stdexcept>

namespace lumen::dp
{

TimerWheel::TimerWheel(uint64_t tick_ns, uint32_t slots, uint64_t now_ns)
{
	if (tick_ns == 0)
		throw std::invalid_argument("TimerWheel: tick_ns must be > 0");
	if (slots == 0 || slots > kMaxSlots || (slots & (slots - 1)) != 0)
		throw std::invalid_argument("TimerWheel: slots must be a power of two in [1, 2^24]");
	tick_ns_ = tick_ns;
	mask_ = slots - 1;
	now_ = now_ns;
	cur_tick_ = now_ns / tick_ns;
	init_head(near_);
	wheel_.resize(slots);
	for (auto &head : wheel_)
		init_head(head);
}

// Disarm every node still linked, so none keeps pointers into freed heads.
TimerWheel::~TimerWheel()
{
	auto drain = [](TimerNode &head) {
		while (head.next != &head) {
			TimerNode &node = *head.next;

			unlink(node);
			node.armed = false;
		}
	};
	drain(near_);
	for (auto &head : wheel_)
		drain(head);
}

void TimerWheel::splice(TimerNode &from, TimerNode &to)
{
	if (from.next == &from)
		return;
	to.next = from.next;
	to.prev = from.prev;
	to.next->prev = &to;
	to.prev->next = &to;
	init_head(from);
}

void TimerWheel::arm(TimerNode &node, uint64_t expiry_ns)
{
	if (node.armed)
		unlink(node);
	else
		size_++;
	node.armed = true;
	node.expiry_ns = expiry_ns;
	link_tail(home(expiry_ns), node);
}

void TimerWheel::cancel(TimerNode &node)
{
	if (!node.armed)
		return;
	unlink(node);
	node.armed = false;
	size_--;
}

} // namespace lumen::dp
