/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * lumen/path_policy.h - which path a packet takes: the entropy (the UDP
 * source port of lumen-dp's packets, an index into a space of
 * `entropies` values) that ECMP switches hash on. Pure C, no DPDK: the
 * datapath asks for the next entropy of a packet and reports what became of
 * packets (ACKed clean, ECN-marked, NACKed, timed out); the policy keeps a
 * few bytes per connection.
 *
 *   ecmp   one entropy per connection, drawn at random when it starts: the
 *          network hashes it to one path (flows may collide).
 *   ops    oblivious packet spraying: a fresh random entropy per packet.
 *   reps   REPS (Bonato et al., "REPS: Recycling Entropies for Packet
 *          Spraying to Adaptively Explore Paths and Mitigate Failures",
 *          Algorithm 1). For the first BDP of packets (at most one per
 *          entropy) the sender explores, entropies in round-robin order. The
 *          receiver echoes each data packet's entropy and CE bit in its ACK;
 *          an ACK without CE puts the entropy in a FIFO ring of 8, and each
 *          later packet takes (consumes) the oldest entry, so a path is
 *          reused once per good ACK it earned. ECN-marked, NACKed and lost
 *          packets return nothing: their paths are dropped. An empty ring
 *          falls back to the round robin. A path that has failed never
 *          produces a good ACK, so it leaves the ring by itself.
 *   reps-freeze  REPS with freezing (the full REPS paper's artifact): a
 *          timeout while the RTT is low is the signature of a failure, not
 *          of congestion. Then, for freeze_ns, the sender replays the ring's
 *          entropies in order without consuming them (only known-good paths,
 *          no exploration); after that it forgets the ring and explores
 *          again.
 *   ethereal  Ethereal's single path (Addanki, Algorithm 3): a connection
 *          (one subflow of Ethereal's plan) keeps one entropy, pinned, so
 *          its packets take one path, in order, and its receiver can be
 *          Go-Back-N. The entropy starts random, as ECMP's; the caller may
 *          pin another (the shell pins the uplink Ethereal's planner chose).
 *          The path moves only when it fails: a NACK (NAck(): a loss, or a
 *          receiver that sees most packets CE-marked) or a timeout
 *          (flowTimeout()) about the pinned entropy marks the connection
 *          "reroute wanted"; the caller takes that flag
 *          (lumen_path_take_reroute), chooses the new path (its business:
 *          the least-loaded good uplink other than the one left) and pins
 *          it. News about an entropy the connection has already left (the
 *          NACKs of its packets still on the old path) changes nothing, so
 *          one failure moves the connection once. GOOD and ECN change
 *          nothing: marks are the congestion control's, and only a
 *          receiver's judgement over a whole window (its NACK) moves it.
 *
 * Every random choice comes from a caller's lumen_rng (seeded per host), so
 * runs reproduce. The state is struct lumen_path: 24 bytes for REPS (the
 * paper: "less than 25 bytes"), plus 4 for the freeze deadline; ECMP and
 * Ethereal use `next` (the entropy) and Ethereal one bit of `freeze`.
 */
#ifndef LUMEN_PATH_POLICY_H
#define LUMEN_PATH_POLICY_H

#include "rng.h"
#include "types.h"

/* ---------------------------------------------------------------------- */
/* Parameters                                                               */

enum lumen_path_mode {
	LUMEN_PATH_ECMP = 0,
	LUMEN_PATH_OPS = 1,
	LUMEN_PATH_REPS = 2,
	LUMEN_PATH_REPS_FREEZE = 3,
	LUMEN_PATH_ETHEREAL = 4,
	LUMEN_PATH_MODES
};

/* A mode's name on command lines and in reports; "?" for no mode. */
LUMEN_INLINE const char *lumen_path_mode_name(__u32 mode)
{
	switch (mode) {
	case LUMEN_PATH_ECMP:
		return "ecmp";
	case LUMEN_PATH_OPS:
		return "ops";
	case LUMEN_PATH_REPS:
		return "reps";
	case LUMEN_PATH_REPS_FREEZE:
		return "reps-freeze";
	case LUMEN_PATH_ETHEREAL:
		return "ethereal";
	default:
		return "?";
	}
}

/* The mode a command line names (lumen_path_mode_name's word), or -1. */
LUMEN_INLINE int lumen_path_mode_from_name(const char *s)
{
	__u32 m, i;

	for (m = 0; m < LUMEN_PATH_MODES; m++) {
		const char *n = lumen_path_mode_name(m);

		for (i = 0; n[i] && n[i] == s[i]; i++)
			;
		if (!n[i] && !s[i])
			return (int)m;
	}
	return -1;
}

/* What became of a packet sent with some entropy. */
enum lumen_path_signal {
	LUMEN_PATH_GOOD = 0, /* ACKed without CE */
	LUMEN_PATH_ECN = 1, /* ACKed, CE set on the way */
	LUMEN_PATH_NACK = 2, /* the receiver reported it missing or trimmed */
	LUMEN_PATH_TIMEOUT = 3, /* retransmission timeout */
};

#define LUMEN_REPS_RING 8 /* the seed's cached_buffer_size */
#define LUMEN_PATH_ENTROPIES_MAX 65536u /* a UDP source port range */
#define LUMEN_PATH_FREEZE_NS_MAX 1000000000ull /* 1 s: the deadline is 32-bit us */

struct lumen_path_params {
	__u32 entropies; /* 1..65536 (seed: 256) */
	__u32 explore_pkts; /* REPS: packets that explore first, one BDP; 0..65535 */
	__u64 freeze_ns; /* reps-freeze: how long a freeze lasts, 1 us..1 s (artifact: 10 ms) */
	__u32 freeze_rtt_q8; /* freeze on a timeout only when rtt < base_rtt * q8 / 256 (artifact: 1.65) */
};

LUMEN_INLINE void lumen_path_params_default(struct lumen_path_params *p)
{
	p->entropies = 256;
	p->explore_pkts = 256;
	p->freeze_ns = 10000000ull;
	p->freeze_rtt_q8 = 422; /* 1.65 * 256 */
}

/* 0, or the negative index of the first invalid field (1-based). */
LUMEN_INLINE int lumen_path_params_validate(const struct lumen_path_params *p)
{
	if (p->entropies < 1 || p->entropies > LUMEN_PATH_ENTROPIES_MAX)
		return -1;
	if (p->explore_pkts > 0xFFFF)
		return -2;
	if (p->freeze_ns < 1000 || p->freeze_ns > LUMEN_PATH_FREEZE_NS_MAX)
		return -3;
	if (p->freeze_rtt_q8 < 256 || p->freeze_rtt_q8 > 16 * 256)
		return -4;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Per-connection state                                                     */

struct lumen_path {
	__u16 ring[LUMEN_REPS_RING]; /* recycled entropies; the oldest at head */
	__u8 head; /* index of the oldest entry */
	__u8 count; /* entries in the ring, 0..8 */
	__u8 mode; /* enum lumen_path_mode */
	__u8 freeze; /* reps-freeze: LUMEN_PATH_FROZEN | next entry replayed, from head;
			ethereal: LUMEN_PATH_REROUTE */
	__u16 next; /* ecmp, ethereal: the entropy; reps: the next to explore */
	__u16 explore_left; /* reps: packets still exploring */
	__u32 frozen_until_us; /* reps-freeze: deadline, us mod 2^32 (after the 24 B of REPS) */
};

LUMEN_STATIC_ASSERT(sizeof(struct lumen_path) == 28, "struct lumen_path: REPS's 24 bytes and a 4-byte deadline");

#define LUMEN_PATH_FROZEN 0x80u
#define LUMEN_PATH_REROUTE 0x40u /* ethereal: a NACK or timeout on the pinned entropy */
#define LUMEN_PATH_REPLAY_MASK 0x07u

LUMEN_INLINE __u32 lumen_path_us(__u64 now_ns)
{
	return (__u32)lumen_div64(now_ns, 1000);
}

/* Entropy e in a space of n: e < n always (n >= 1 after validation). The
 * state only ever holds entropies below n, so the division (tens of cycles,
 * twice per explored packet) is kept for what is out of range. */
LUMEN_INLINE __u16 lumen_path_wrap(__u32 e, __u32 n)
{
	return (__u16)(e < n ? e : e % n);
}

LUMEN_INLINE void lumen_path_init(struct lumen_path *st, const struct lumen_path_params *p, enum lumen_path_mode mode,
				  struct lumen_rng *rng)
{
	__u32 i;

	for (i = 0; i < LUMEN_REPS_RING; i++)
		st->ring[i] = 0;
	st->head = 0;
	st->count = 0;
	st->mode = (__u8)mode;
	st->freeze = 0;
	st->frozen_until_us = 0;
	/* a random first entropy: connections that start together do not all
	 * explore the same paths in the same order (the seed starts at 0) */
	st->next = (__u16)lumen_rng_below(rng, p->entropies);
	st->explore_left = (__u16)(p->explore_pkts < p->entropies ? p->explore_pkts : p->entropies);
}

/* The next entropy of the round robin. */
LUMEN_INLINE __u16 lumen_path_explore(struct lumen_path *st, const struct lumen_path_params *p)
{
	__u16 e = lumen_path_wrap(st->next, p->entropies);

	st->next = lumen_path_wrap((__u32)e + 1, p->entropies);
	return e;
}

/* The oldest recycled entropy, consumed; the round robin when there is none. */
LUMEN_INLINE __u16 lumen_path_recycle(struct lumen_path *st, const struct lumen_path_params *p)
{
	__u16 e;

	if (st->count == 0)
		return lumen_path_explore(st, p);
	e = st->ring[st->head % LUMEN_REPS_RING];
	st->head = (__u8)((st->head + 1) % LUMEN_REPS_RING);
	st->count--;
	return lumen_path_wrap(e, p->entropies);
}

/* A freeze that has run out: forget the ring, explore again. */
LUMEN_INLINE void lumen_path_thaw(struct lumen_path *st, const struct lumen_path_params *p)
{
	st->freeze = 0;
	st->count = 0;
	st->head = 0;
	st->explore_left = (__u16)(p->explore_pkts < p->entropies ? p->explore_pkts : p->entropies);
}

/* reps-freeze while frozen: replay known-good paths without consuming them. */
LUMEN_INLINE __u16 lumen_path_replay(struct lumen_path *st, const struct lumen_path_params *p, struct lumen_rng *rng)
{
	__u32 pos, i;

	if (st->count == 0)
		return (__u16)lumen_rng_below(rng, p->entropies);
	pos = (st->freeze & LUMEN_PATH_REPLAY_MASK) % st->count;
	i = ((__u32)st->head + pos) % LUMEN_REPS_RING;
	st->freeze = (__u8)(LUMEN_PATH_FROZEN | ((pos + 1) % st->count));
	return lumen_path_wrap(st->ring[i], p->entropies);
}

/* The entropy of the next packet sent at now_ns. */
LUMEN_INLINE __u16 lumen_path_next(struct lumen_path *st, const struct lumen_path_params *p, struct lumen_rng *rng,
				   __u64 now_ns)
{
	if (st->mode == LUMEN_PATH_ECMP || st->mode == LUMEN_PATH_ETHEREAL)
		return lumen_path_wrap(st->next, p->entropies);
	if (st->mode == LUMEN_PATH_OPS)
		return (__u16)lumen_rng_below(rng, p->entropies);
	if (st->freeze & LUMEN_PATH_FROZEN) {
		if ((__s32)(lumen_path_us(now_ns) - st->frozen_until_us) < 0)
			return lumen_path_replay(st, p, rng);
		lumen_path_thaw(st, p);
	}
	if (st->explore_left > 0) {
		st->explore_left--;
		return lumen_path_explore(st, p);
	}
	return lumen_path_recycle(st, p);
}

/* A clean ACK: its entropy joins the ring, replacing the oldest when full. */
LUMEN_INLINE void lumen_path_cache(struct lumen_path *st, const struct lumen_path_params *p, __u32 entropy)
{
	if (entropy >= p->entropies) /* not one we sent: a hostile or broken echo */
		return;
	if (st->count == LUMEN_REPS_RING) {
		st->ring[st->head % LUMEN_REPS_RING] = (__u16)entropy;
		st->head = (__u8)((st->head + 1) % LUMEN_REPS_RING);
		return;
	}
	st->ring[(st->head + st->count) % LUMEN_REPS_RING] = (__u16)entropy;
	st->count++;
}

/*
 * Pin `entropy` (ecmp, ethereal): every later packet takes it, and a
 * reroute that was wanted is done. 0; -1, changing nothing, for an entropy
 * outside the space (a chooser's mistake is not a path) or another mode.
 */
LUMEN_INLINE int lumen_path_pin(struct lumen_path *st, const struct lumen_path_params *p, __u32 entropy)
{
	if (entropy >= p->entropies || (st->mode != LUMEN_PATH_ECMP && st->mode != LUMEN_PATH_ETHEREAL))
		return -1;
	st->next = (__u16)entropy;
	st->freeze &= (__u8)~LUMEN_PATH_REROUTE;
	return 0;
}

/* ethereal: whether a NACK or a timeout asked for another path. */
LUMEN_INLINE int lumen_path_reroute_wanted(const struct lumen_path *st)
{
	return st->mode == LUMEN_PATH_ETHEREAL && (st->freeze & LUMEN_PATH_REROUTE);
}

/* ethereal: lumen_path_reroute_wanted, and the wish cleared (the caller
 * now chooses and pins the new path). */
LUMEN_INLINE int lumen_path_take_reroute(struct lumen_path *st)
{
	if (!lumen_path_reroute_wanted(st))
		return 0;
	st->freeze &= (__u8)~LUMEN_PATH_REROUTE;
	return 1;
}

/*
 * What became of a packet sent with `entropy`. For a timeout, rtt_ns is the
 * connection's latest RTT sample and base_rtt_ns its base RTT: a timeout
 * at a low RTT freezes reps-freeze (not while exploring, nor when frozen).
 * ethereal: a NACK or a timeout about the pinned entropy wants a reroute;
 * anything else (another entropy: a path already left, or a forged echo)
 * changes nothing.
 */
LUMEN_INLINE void lumen_path_feedback(struct lumen_path *st, const struct lumen_path_params *p, __u32 entropy,
				      enum lumen_path_signal signal, __u64 now_ns, __u64 rtt_ns, __u64 base_rtt_ns)
{
	if (st->mode == LUMEN_PATH_ETHEREAL) {
		if ((signal == LUMEN_PATH_NACK || signal == LUMEN_PATH_TIMEOUT) &&
		    entropy == lumen_path_wrap(st->next, p->entropies))
			st->freeze |= LUMEN_PATH_REROUTE;
		return;
	}
	if (st->mode != LUMEN_PATH_REPS && st->mode != LUMEN_PATH_REPS_FREEZE)
		return;
	if (signal == LUMEN_PATH_GOOD) {
		lumen_path_cache(st, p, entropy);
		return;
	}
	if (signal != LUMEN_PATH_TIMEOUT || st->mode != LUMEN_PATH_REPS_FREEZE || (st->freeze & LUMEN_PATH_FROZEN) ||
	    st->explore_left)
		return;
	/* rtt < base * q8 / 256, as rtt * 256 < base * q8 (both < 2^54 here) */
	if (rtt_ns > (1ull << 40) || base_rtt_ns > (1ull << 40) || rtt_ns * 256 >= base_rtt_ns * p->freeze_rtt_q8)
		return;
	st->freeze = LUMEN_PATH_FROZEN;
	st->frozen_until_us = lumen_path_us(now_ns) + (__u32)lumen_div64(p->freeze_ns, 1000);
}

#endif /* LUMEN_PATH_POLICY_H */
