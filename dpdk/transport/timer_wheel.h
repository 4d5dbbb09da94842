// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// dpdk/transport/timer_wheel.h - a hashed timer wheel (Varghese and Lauck,
// scheme 6) with intrusive nodes, for per-connection timers (RTO, delayed
// ACK, pacing) on one lcore.
//
// Time is cut into ticks of tick_ns. The wheel has `slots` (a power of two)
// doubly linked lists; a timer expiring in tick t waits in slot t mod slots,
// whatever the number of rotations until then. The wheel remembers the tick
// of the last advance() (cur); advance(now) then visits only the slots of
// ticks cur+1 .. tick(now) (all slots once when that is a rotation or more)
// and fires, in each, the nodes whose expiry is <= now. A node more than one
// rotation away shares its slot with nearer ones and simply stays when its
// slot is visited: it costs one look per rotation, and nothing when its
// slot is not visited. Timers of the current tick (expiry in tick <= cur:
// later in this tick, or already past when armed) wait in a separate "near"
// list that every advance() looks at, so an expiry in the past fires on the
// next advance().
//
// The node lives inside its owner (a connection): arming and cancelling
// link and unlink it, O(1), no allocation. `owner` is the user's handle to
// get back from the node to its connection (an index), or use offsetof.
//
// Callbacks may arm, re-arm or cancel any node, the one firing included:
// advance() detaches one slot's list onto a local head and takes nodes off
// it one at a time, so whatever a callback links goes into the wheel proper
// and is looked at by a later advance(), never by this one (a callback that
// re-arms its node in the past cannot loop). A node is disarmed before its
// callback runs. advance() must not be called from a callback (it returns
// 0 then).
//
// Nodes must outlive their arming, or be cancelled first; the wheel's
// destructor disarms whatever is still armed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace lumen::dp
{

struct TimerNode {
	TimerNode *prev = nullptr;
	TimerNode *next = nullptr;
	uint64_t expiry_ns = 0; // when armed: the time it fires at (or after)
	uint32_t owner = 0; // the user's: which connection (or whatever) this is
	bool armed = false;
};

struct TimerWheelStats {
	uint64_t slots_visited = 0; // slot lists detached by advance()
	uint64_t nodes_visited = 0; // nodes looked at by advance() (near list and slots)
	uint64_t fired = 0;
};

class TimerWheel
{
      public:
	static constexpr uint32_t kMaxSlots = 1u << 24;

	// tick_ns > 0; slots a power of two in [1, 2^24]; else
	// std::invalid_argument. now_ns: the wheel's starting time.
	TimerWheel(uint64_t tick_ns, uint32_t slots, uint64_t now_ns = 0);
	~TimerWheel();
	TimerWheel(const TimerWheel &) = delete;
	TimerWheel &operator=(const TimerWheel &) = delete;

	// Arm (or move) node to fire at the first advance() with now >= expiry_ns.
	void arm(TimerNode &node, uint64_t expiry_ns);
	// Disarm; nothing if it is not armed.
	void cancel(TimerNode &node);

	// Fire every armed node whose expiry is <= now_ns, calling
	// on_expire(TimerNode &) for each (disarmed already). Time does not go
	// back: a now_ns before the last one counts as the last one. Returns
	// how many fired.
	template <class F> uint32_t advance(uint64_t now_ns, F &&on_expire);

	// Armed nodes.
	size_t size() const
	{
		return size_;
	}
	// The time of the last advance() (or the constructor's).
	uint64_t now() const
	{
		return now_;
	}
	uint64_t tick_ns() const
	{
		return tick_ns_;
	}
	uint32_t slots() const
	{
		return static_cast<uint32_t>(wheel_.size());
	}
	const TimerWheelStats &stats() const
	{
		return stats_;
	}

      private:
	static void init_head(TimerNode &head)
	{
		head.prev = head.next = &head;
	}
	static void link_tail(TimerNode &head, TimerNode &node)
	{
		node.prev = head.prev;
		node.next = &head;
		head.prev->next = &node;
		head.prev = &node;
	}
	static void unlink(TimerNode &node)
	{
		node.prev->next = node.next;
		node.next->prev = node.prev;
		node.prev = node.next = nullptr;
	}
	// Move all of from's nodes onto the (empty) head to; from becomes empty.
	static void splice(TimerNode &from, TimerNode &to);
	// Where a node expiring at expiry_ns belongs now.
	TimerNode &home(uint64_t expiry_ns)
	{
		uint64_t t = expiry_ns / tick_ns_;

		return t <= cur_tick_ ? near_ : wheel_[t & mask_];
	}
	template <class F> uint32_t run_list(TimerNode &list, F &on_expire);

	uint64_t tick_ns_;
	uint64_t mask_;
	uint64_t now_;
	uint64_t cur_tick_; // now_ / tick_ns_
	size_t size_ = 0;
	bool in_advance_ = false;
	TimerNode near_; // expiry in a tick <= cur_tick_
	std::vector<TimerNode> wheel_; // list heads, never resized
	TimerWheelStats stats_;
};

// Detach list onto a local head, then take its nodes one by one: fire the
// due ones, put the others back where they belong now (near, or the same
// slot for a later rotation). Nodes a callback arms or cancels meanwhile are
// linked into or out of the wheel proper; one a callback cancels while it
// still waits on the local head is simply unlinked from there.
template <class F> uint32_t TimerWheel::run_list(TimerNode &list, F &on_expire)
{
	TimerNode pending;
	uint32_t fired = 0;

	init_head(pending);
	splice(list, pending);
	while (pending.next != &pending) {
		TimerNode &node = *pending.next;

		/* each node lives in its own connection, rarely in the cache:
		 * ask for the next while this one is handled */
		__builtin_prefetch(node.next);
		stats_.nodes_visited++;
		unlink(node);
		if (node.expiry_ns > now_) {
			link_tail(home(node.expiry_ns), node);
			continue;
		}
		node.armed = false;
		size_--;
		fired++;
		stats_.fired++;
		on_expire(node);
	}
	return fired;
}

template <class F> uint32_t TimerWheel::advance(uint64_t now_ns, F &&on_expire)
{
	if (in_advance_)
		return 0;
	in_advance_ = true;
	if (now_ns < now_)
		now_ns = now_;
	uint64_t from = cur_tick_ + 1, to = now_ns / tick_ns_;
	uint64_t n = to - cur_tick_; // slots to visit

	if (n > wheel_.size())
		n = wheel_.size();
	// The wheel's time moves first: whatever a callback arms is placed
	// relative to now_ns, so nothing lands in a slot this call has passed.
	now_ = now_ns;
	cur_tick_ = to;
	uint32_t fired = run_list(near_, on_expire);

	for (uint64_t i = 0; i < n; i++) {
		stats_.slots_visited++;
		fired += run_list(wheel_[(from + i) & mask_], on_expire);
	}
	in_advance_ = false;
	return fired;
}

} // namespace lumen::dp
