/*
 * impair.h - a network that misbehaves on purpose, between two lumen-dp
 * endpoints in one process (the pair mode, the tests): each frame may be
 * dropped, duplicated, CE-marked, delayed, or held back so that later
 * frames overtake it, with seeded probabilities so a run reproduces; and
 * any set of entropies (UDP source ports) can be blackholed, as a failed
 * link blackholes the paths that cross it, or be the only ones the random
 * impairments hit (ports=), as a lossy or slow link is one path's.
 *
 * The shim decides (judge) and marks (CE in place); holding frames is the
 * caller's, through DelayLine, which releases them in time order and so
 * works for byte vectors in the tests and mbufs in the shell alike.
 */
#ifndef LUMEN_DP_IMPAIR_H
#define LUMEN_DP_IMPAIR_H

#include <cstdint>
#include <queue>
#include <string>
#include <vector>

extern "C" {
#include <lumen/path_policy.h>
}

namespace lumen::dp
{

struct ImpairParams {
	uint32_t drop_ppm = 0, dup_ppm = 0, ce_ppm = 0, reorder_ppm = 0; /* per million frames */
	uint64_t delay_ns = 0; /* added to every frame */
	uint64_t reorder_ns = 50'000; /* how long a reordered frame is held back */
	bool data_only = true; /* ACKs pass untouched (a lossy forward path) */
	std::vector<uint16_t> blackhole; /* UDP source ports that never arrive */
	std::vector<uint16_t> ports; /* non-empty: drop, dup, ce and reorder hit only these source ports */
	uint64_t seed = 7;

	/* "drop=1%,dup=0.1%,ce=5%,reorder=2%,delay=20us,reorder-delay=50us,blackhole=49152:49153,
	 * ports=49154:49155,acks,seed=N";
	 * returns an error message, or "" after setting the fields. */
	std::string parse(const std::string &spec);
	bool active() const;
};

struct Verdict {
	bool drop = false, dup = false, ce = false;
	uint64_t delay_ns = 0;
};

struct ImpairStats {
	uint64_t frames = 0, dropped = 0, duplicated = 0, marked = 0, reordered = 0, blackholed = 0;
};

class Impairment
{
      public:
	/* udp_port: the lumen-dp destination port, to tell lumen-dp frames apart */
	Impairment(const ImpairParams &p, uint16_t udp_port);
	/* The fate of one frame (a lumen-dp frame or anything else). */
	Verdict judge(const uint8_t *frame, uint32_t len);
	/* Set CE on an ECN-capable IPv4 frame in place (checksum kept valid). */
	static void mark_ce(uint8_t *frame, uint32_t len);
	const ImpairStats &stats() const
	{
		return stats_;
	}

      private:
	bool chance(uint32_t ppm);
	ImpairParams p_;
	uint16_t udp_port_;
	lumen_rng rng_{};
	ImpairStats stats_;
};

/* Frames held until a release time, released in time order (FIFO among equals). */
template <class T> class DelayLine
{
      public:
	void push(T item, uint64_t release_ns)
	{
		q_.push(Entry{release_ns, seq_++, item});
	}
	/* The next item due at now_ns, if any. */
	bool pop(uint64_t now_ns, T *out)
	{
		if (q_.empty() || q_.top().release_ns > now_ns)
			return false;
		*out = q_.top().item;
		q_.pop();
		return true;
	}
	bool empty() const
	{
		return q_.empty();
	}
	size_t size() const
	{
		return q_.size();
	}

      private:
	struct Entry {
		uint64_t release_ns, seq;
		T item;
		bool operator<(const Entry &o) const
		{
			return release_ns != o.release_ns ? release_ns > o.release_ns : seq > o.seq;
		}
	};
	std::priority_queue<Entry> q_;
	uint64_t seq_ = 0;
};

} // namespace lumen::dp

#endif
