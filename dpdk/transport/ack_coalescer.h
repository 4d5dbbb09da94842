/*
 * ack_coalescer.h - which ACK of each connection is waiting in the optical
 * gate's VOQs, so that the next ACK of that connection folds into it
 * (include/lumen/dp_ack_coalesce.h) instead of taking a place of its own in
 * the circuit. The shell tells it what it queued and what left; it keeps a
 * pointer to the queued frame's bytes per (destination address, connection
 * id), and forgets it when that frame leaves. Bytes only: no DPDK here.
 */
#ifndef LUMEN_DP_ACK_COALESCER_H
#define LUMEN_DP_ACK_COALESCER_H

#include <cstddef>
#include <cstdint>
#include <unordered_map>

namespace lumen::dp
{

class AckCoalescer
{
      public:
	/* The frame f (len bytes, about to be queued): true when it was folded
	 * into the queued ACK of its connection, which now says what f says
	 * (the caller drops f); false: queue it. */
	bool fold(const uint8_t *f, uint32_t len);
	/* f was queued: an ACK becomes its connection's fold target; a NACK
	 * ends that (the ACKs after it must not overtake it). */
	void queued(uint8_t *f, uint32_t len);
	/* f left the queue: sent, dropped, or taken out to be booked again. */
	void left(const uint8_t *f, uint32_t len);

	/* ACKs that may be folded into (for tests) */
	size_t targets() const
	{
		return q_.size();
	}

      private:
	struct Queued {
		uint8_t *frame;
		uint32_t len;
	};
	std::unordered_map<uint64_t, Queued> q_;
};

} // namespace lumen::dp

#endif
