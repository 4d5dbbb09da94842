/*
 * gate_hold.h - what lumen-dp's shell does with the frames the optical gate
 * (optical_gate.h) books: holds each in its destination's queue until its
 * departure, defers the ones a schedule change's new tables must book, and
 * books again, in order, the ones the shell released too late. The gating
 * of lumen-dp's endpoint (app/endpoint.cpp), without DPDK: the frame type
 * and the clocks are the caller's.
 *
 * A frame to a node of the schedule is booked (OpticalGate::book) and
 * waits in its destination's FIFO (voq.h) until its departure; one that
 * would leave after the instant of a change whose tables are not in yet
 * waits, in order, with the other deferred ones, and is offered again at
 * each poll; an ACK folds into the older one of its connection still
 * waiting (ack_coalescer.h). At each poll the heads whose departure has
 * come leave if they still fit their window; one that does not (the shell
 * polled late) is booked again from now, and so is every frame behind it
 * to that node, in order.
 *
 * Order: a flow's frames all go to one destination and must leave in the
 * order the transport made them (it would take reordering for loss). So a
 * late frame's rebooking takes along everything behind it to its node: the
 * rest of its queue and the frames deferred to that node; and once a frame
 * to a node is deferred, every frame behind it to that node is deferred
 * too, unbooked: a shorter one might fit what is left of a window before
 * the instant where the deferred one did not.
 *
 * Two clocks: the shell's, now_ns, that the queues' due times are on (the
 * TSC in lumen-dp), and the schedule's, CLOCK_TAI, that the gate books on:
 * a functor, called only when a frame to a node needs it (a system call in
 * lumen-dp) and then returning the same time for the whole poll. Frames are
 * the shell's: Frames::bytes(T) and Frames::len(T) give a frame's bytes
 * (Ethernet header on); what leaves goes to out.send(T), what the gate
 * drops to out.drop(T) and an ACK folded into an older one to out.folded(T)
 * (the shell frees those). No allocation per frame: the queues and lists
 * keep their room. Tested with a fake clock in tests/dp_gate_hold_test.cpp.
 */
#ifndef LUMEN_DP_GATE_HOLD_H
#define LUMEN_DP_GATE_HOLD_H

#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "transport/ack_coalescer.h"
#include "transport/optical_gate.h"
#include "transport/voq.h"

namespace lumen::dp
{

/* An IPv4 frame's destination address (host order); false for the rest,
 * which are not the schedule's. */
inline bool frame_ipv4_dst(const uint8_t *f, uint32_t len, uint32_t *dst)
{
	if (len < 34 || f[12] != 0x08 || f[13] != 0x00)
		return false;
	*dst = (uint32_t)f[30] << 24 | (uint32_t)f[31] << 16 | (uint32_t)f[32] << 8 | f[33];
	return true;
}

template <class T, class Frames> class GateHold
{
      public:
	/* coalesce: fold an ACK into the older one of its connection that
	 * waits in a queue */
	GateHold(std::unique_ptr<OpticalGate> gate, bool coalesce) : gate_(std::move(gate)), coalesce_(coalesce)
	{
	}

	OpticalGate &gate()
	{
		return *gate_;
	}
	const OpticalGate &gate() const
	{
		return *gate_;
	}

	/* One poll's gating before the transport's new frames, in order: the
	 * heads due at now_ns (sent, or booked again with what is behind
	 * them), then the deferred frames offered again (the new tables may
	 * be in). */
	template <class Tai, class Out> void release(uint64_t now_ns, Tai &tai, Out &out)
	{
		uint32_t node;
		T f;
		while (voq_.pop(now_ns, &node, &f)) {
			uint8_t *b = Frames::bytes(f);
			const uint32_t len = Frames::len(f);
			uint32_t dst = 0;
			left(f);
			frame_ipv4_dst(b, len, &dst); /* queued frames are IPv4 */
			switch (gate_->release(dst, len, tai())) {
			case GateVerdict::kPass:
				out.send(f);
				break;
			case GateVerdict::kLate:
				rebook(node, f, now_ns, tai(), out);
				break;
			default:
				out.drop(f); /* quiet now: counted by the gate */
			}
		}
		if (deferred_.empty())
			return;
		again_.swap(deferred_); /* deferred_ is empty, with again_'s room */
		std::fill(deferred_to_.begin(), deferred_to_.end(), 0);
		for (const Deferred &d : again_)
			if (!readmit(d.frame, now_ns, tai(), Offer::kAgain, out))
				out.send(d.frame);
		again_.clear();
	}

	/* A new frame from the transport at now_ns: true when the hold took
	 * it (queued for its departure, deferred, dropped or folded: out says
	 * which), false: send it now (not to a node of the schedule, or its
	 * window is open and has room). */
	template <class Tai, class Out> bool offer(T f, uint64_t now_ns, Tai &tai, Out &out)
	{
		uint32_t dst;
		if (!frame_ipv4_dst(Frames::bytes(f), Frames::len(f), &dst))
			return false;
		return admit(f, dst, now_ns, tai(), Offer::kNew, out);
	}

	/* Everything held or deferred, each to fn (the shell frees them). */
	template <class Fn> void drain(Fn &&fn)
	{
		for (uint32_t node = 0; node < voq_.nodes(); node++)
			for (const auto &e : voq_.take(node)) {
				left(e.item);
				fn(e.item);
			}
		for (const Deferred &d : deferred_)
			fn(d.frame);
		deferred_.clear();
		std::fill(deferred_to_.begin(), deferred_to_.end(), 0);
	}

	size_t held() const
	{
		return voq_.size();
	}
	size_t deferred() const
	{
		return deferred_.size();
	}

      private:
	struct Deferred {
		T frame;
		uint32_t node;
	};

	/* f leaves a queue: no ACK folds into it any more (nothing to forget
	 * without coalescing: no per-frame parse then) */
	void left(T f)
	{
		if (coalesce_)
			coalescer_.left(Frames::bytes(f), Frames::len(f));
	}

	/* The gate's verdict on f, to dst_ip, offered at now_ns and tai:
	 * true when the hold took it, false: send it now. */
	template <class Out> bool admit(T f, uint32_t dst, uint64_t now_ns, uint64_t tai, Offer offer, Out &out)
	{
		uint8_t *b = Frames::bytes(f);
		const uint32_t len = Frames::len(f);
		/* behind a frame deferred to its node: deferred too, unbooked
		 * (and not folded into an ACK queued before that one) */
		if (!deferred_.empty()) {
			const int64_t node = gate_->node_of(dst);
			if (node >= 0 && (size_t)node < deferred_to_.size() && deferred_to_[(size_t)node]) {
				gate_->defer(dst, len, offer);
				defer(f, (uint32_t)node);
				return true;
			}
		}
		if (coalesce_ && coalescer_.fold(b, len)) {
			out.folded(f); /* the older one's booking stands */
			return true;
		}
		uint64_t dep = tai;
		switch (gate_->book(dst, len, tai, &dep, offer)) {
		case GateVerdict::kPass:
			return false;
		case GateVerdict::kSend:
			if (dep <= tai)
				return false;
			voq_.push((uint32_t)gate_->node_of(dst), f, now_ns + (dep - tai));
			if (coalesce_)
				coalescer_.queued(b, len);
			return true;
		case GateVerdict::kDefer:
			defer(f, (uint32_t)gate_->node_of(dst));
			return true;
		default:
			out.drop(f); /* counted by the gate; the transport retransmits */
			return true;
		}
	}

	/* admit() for a frame the hold had (its destination read again) */
	template <class Out> bool readmit(T f, uint64_t now_ns, uint64_t tai, Offer offer, Out &out)
	{
		uint32_t dst;
		if (!frame_ipv4_dst(Frames::bytes(f), Frames::len(f), &dst))
			return false;
		return admit(f, dst, now_ns, tai, offer, out);
	}

	void defer(T f, uint32_t node)
	{
		if (node >= deferred_to_.size())
			deferred_to_.resize(node + 1, 0);
		deferred_to_[node]++;
		deferred_.push_back(Deferred{f, node});
	}

	/* f to node came too late for its window: it and every frame behind
	 * it to node (the rest of its queue, then the frames deferred to it)
	 * are booked again from tai, in order, from a wire clock that forgets
	 * their old bookings. The late path: a poll came late. */
	template <class Out> void rebook(uint32_t node, T f, uint64_t now_ns, uint64_t tai, Out &out)
	{
		rebook_.clear();
		rebook_.push_back(f);
		for (const auto &e : voq_.take(node)) {
			left(e.item);
			rebook_.push_back(e.item);
		}
		const size_t booked = rebook_.size(); /* the rest were deferred: offered again */
		if (node < deferred_to_.size() && deferred_to_[node]) {
			size_t kept = 0;
			for (const Deferred &d : deferred_)
				if (d.node == node)
					rebook_.push_back(d.frame);
				else
					deferred_[kept++] = d;
			deferred_.resize(kept);
			deferred_to_[node] = 0;
		}
		gate_->restart(node);
		for (size_t i = 0; i < rebook_.size(); i++)
			if (!readmit(rebook_[i], now_ns, tai, i < booked ? Offer::kRebook : Offer::kAgain, out))
				out.send(rebook_[i]);
	}

	std::unique_ptr<OpticalGate> gate_;
	bool coalesce_;
	Voq<T> voq_; /* booked frames, by destination node, until their departure */
	AckCoalescer coalescer_; /* the ACKs in voq_ that a newer one may fold into */
	std::vector<Deferred> deferred_; /* frames waiting for a change's new tables, in order */
	std::vector<Deferred> again_; /* deferred_ being offered again (its room kept) */
	std::vector<uint32_t> deferred_to_; /* by node: its frames in deferred_ */
	std::vector<T> rebook_; /* a late frame and those behind it (its room kept) */
};

} // namespace lumen::dp

#endif
