/*
 * voq.h - virtual output queues: one FIFO per destination node, each item
 * with the time it is due to leave. The optical gate books departures per
 * destination on a wire clock, so a node's departures only grow and its
 * FIFO is also its time order; the queues release their heads as they fall
 * due, earliest first. A node's whole queue can be taken out in order, to
 * book it again from scratch (a frame that can no longer leave in its
 * window must not be overtaken by the frames behind it: the transport would
 * see reordering and take it for loss).
 *
 * The earliest head is found by a scan of the heads, cached until a push or
 * a pop changes it: the number of nodes is a schedule's (ToRs, tens to a
 * few hundred), and most polls find nothing due without a scan.
 */
#ifndef LUMEN_DP_VOQ_H
#define LUMEN_DP_VOQ_H

#include <cstdint>
#include <deque>
#include <vector>

namespace lumen::dp
{

template <class T> class Voq
{
      public:
	struct Entry {
		T item;
		uint64_t due_ns;
	};

	/* Append to node's queue (nodes beyond the current count are added). */
	void push(uint32_t node, T item, uint64_t due_ns)
	{
		if (node >= q_.size())
			q_.resize(node + 1);
		q_[node].push_back(Entry{item, due_ns});
		size_++;
		if (q_[node].size() == 1 && due_ns < next_due_)
			next_due_ = due_ns;
	}

	/* The earliest head due at now_ns, if any, and its node. */
	bool pop(uint64_t now_ns, uint32_t *node, T *out)
	{
		if (!size_ || now_ns < next_due_)
			return false;
		uint32_t best = 0;
		uint64_t due = UINT64_MAX;
		for (uint32_t n = 0; n < q_.size(); n++)
			if (!q_[n].empty() && q_[n].front().due_ns < due) {
				due = q_[n].front().due_ns;
				best = n;
			}
		if (due > now_ns) {
			next_due_ = due;
			return false;
		}
		*node = best;
		*out = q_[best].front().item;
		q_[best].pop_front();
		size_--;
		next_due_ = size_ ? 0 : UINT64_MAX; /* 0: unknown, the next pop scans */
		return true;
	}

	/* Everything queued for node, in order; its queue is left empty. */
	std::deque<Entry> take(uint32_t node)
	{
		std::deque<Entry> out;
		if (node < q_.size()) {
			out.swap(q_[node]);
			size_ -= out.size();
			next_due_ = size_ ? 0 : UINT64_MAX;
		}
		return out;
	}

	size_t size() const
	{
		return size_;
	}
	/* Nodes that have had a queue (take(0..nodes()-1) empties all). */
	uint32_t nodes() const
	{
		return (uint32_t)q_.size();
	}
	bool empty() const
	{
		return size_ == 0;
	}

      private:
	std::vector<std::deque<Entry>> q_;
	size_t size_ = 0;
	uint64_t next_due_ = UINT64_MAX; /* no head is due before this (0: unknown) */
};

} // namespace lumen::dp

#endif
