/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * lumen/optical.h - time in a periodic optical circuit schedule, as every
 * shell sees it: the rotor switch (BPF, forwards only what the current slot
 * connects), the kernel's gating (a tc program giving each packet the
 * departure time of its destination's next window), lumen-dp's gating and
 * lumend. Pure C: no I/O, no allocation, no floating point, no loops.
 *
 * Slots of slot_ns follow each other from t0_ns (CLOCK_TAI, the PTP time
 * scale); slot number k (counted from t0) is slot k mod period of the
 * schedule's period. guard_ns of each slot, at its end (the thesis'
 * convention) or at its start, is the reconfiguration: nothing may cross
 * the switch then. So the usable window of slot k is
 *
 *   guard at the end:    [t0 + k*slot,          t0 + (k+1)*slot - guard)
 *   guard at the start:  [t0 + k*slot + guard,  t0 + (k+1)*slot)
 *
 * and a sender whose clock may be off by up to margin_ns shrinks it by
 * margin_ns on each side, so that light it sends lands inside the switch's
 * window whichever way its clock errs.
 *
 * Which slots connect a source to a destination is the schedule's (a
 * matching per slot and uplink; userspace/sched). What the shells need of
 * it is a table made once per schedule:
 *   - the rotor switch: for each slot of the period, each source's
 *     destination (per uplink);
 *   - a sender: for each slot s of the period and each destination, wait =
 *     how many slots from s until one that connects it (0: s itself;
 *     LUMEN_SLOT_NEVER: no slot of the period does).
 * lumen_slot_departure() then answers in O(1), without a loop, when a frame
 * may leave: the EDT a tc program stamps on a packet, or the test lumen-dp
 * makes before it sends.
 */
#ifndef LUMEN_OPTICAL_H
#define LUMEN_OPTICAL_H

#include "types.h"

#define LUMEN_SLOT_NEVER 0xffffu /* a wait: no slot of the period connects the pair */
#define LUMEN_SLOT_MAX_PERIOD 0xfff0u /* waits fit in 16 bits, NEVER apart */
/* Ethernet's per-frame cost on the wire beyond the frame: preamble and
 * start delimiter (8), FCS (4), inter-frame gap (12) */
#define LUMEN_WIRE_OVERHEAD 24u

struct lumen_slot_timing {
	__u64 t0_ns; /* CLOCK_TAI ns of slot 0 of period 0 */
	__u64 slot_ns; /* > 0, guard included */
	__u64 guard_ns; /* < slot_ns */
	__u32 period; /* slots per period, 1..LUMEN_SLOT_MAX_PERIOD */
	__u32 guard_at_start; /* 0: the guard ends the slot; 1: it starts it */
};

/* Where a time falls. */
struct lumen_slot_pos {
	__u64 slot; /* slot number since t0 */
	__u64 offset_ns; /* into that slot */
	__u32 in_period; /* slot mod period: the matching in force */
	__u32 usable; /* 1: outside the guard */
};

/* 0 when the timing is usable by every function below, else -1. */
LUMEN_INLINE int lumen_slot_timing_valid(const struct lumen_slot_timing *t)
{
	if (!t->slot_ns || t->guard_ns >= t->slot_ns)
		return -1;
	if (!t->period || t->period > LUMEN_SLOT_MAX_PERIOD || t->guard_at_start > 1)
		return -1;
	return 0;
}

/* The slot that now_ns falls in: 0, or -1 when the schedule has not begun
 * (now_ns < t0_ns) or the timing is invalid. */
LUMEN_INLINE int lumen_slot_at(const struct lumen_slot_timing *t, __u64 now_ns, struct lumen_slot_pos *pos)
{
	__u64 since;

	if (lumen_slot_timing_valid(t) || now_ns < t->t0_ns)
		return -1;
	since = now_ns - t->t0_ns;
	pos->slot = lumen_div64(since, t->slot_ns);
	pos->offset_ns = since - pos->slot * t->slot_ns;
	pos->in_period = (__u32)(pos->slot - lumen_div64(pos->slot, t->period) * t->period);
	if (t->guard_at_start)
		pos->usable = pos->offset_ns >= t->guard_ns;
	else
		pos->usable = pos->offset_ns < t->slot_ns - t->guard_ns;
	return 0;
}

/* The usable window of slot number `slot`, shrunk by margin_ns on each
 * side: [*open, *close). 0, or -1 when the margins leave nothing (2 *
 * margin_ns >= slot_ns - guard_ns), the time is beyond 2^64 ns, or the
 * timing is invalid. */
LUMEN_INLINE int lumen_slot_window(const struct lumen_slot_timing *t, __u64 slot, __u64 margin_ns, __u64 *open,
				   __u64 *close)
{
	__u64 usable, start;

	if (lumen_slot_timing_valid(t))
		return -1;
	usable = t->slot_ns - t->guard_ns;
	if (margin_ns >= usable / 2 + (usable & 1))
		return -1;
	if (slot >= lumen_div64(~0ull - t->t0_ns, t->slot_ns))
		return -1; /* the slot's end is beyond 2^64 ns */
	start = t->t0_ns + slot * t->slot_ns + (t->guard_at_start ? t->guard_ns : 0);
	*open = start + margin_ns;
	*close = start + usable - margin_ns;
	return 0;
}

/* Wire time of a frame of len bytes (Ethernet header to payload end, as a
 * NIC counts it) at rate_mbps: its bits, the preamble, FCS and gap, rounded
 * up. 0 for a rate of 0. */
LUMEN_INLINE __u64 lumen_wire_ns(__u32 len, __u32 rate_mbps)
{
	__u64 bits = ((__u64)len + LUMEN_WIRE_OVERHEAD) * 8;

	if (!rate_mbps)
		return 0;
	return lumen_div64(bits * 1000 + rate_mbps - 1, rate_mbps);
}

/*
 * When a frame that takes wire_ns on the wire may leave for a destination:
 * the earliest time >= now_ns from which it is inside one usable window
 * (shrunk by margin_ns) of a slot connecting the pair, start to end.
 * wait_now is the destination's wait at now's slot (pos->in_period) and
 * wait_next its wait at the slot after it ((in_period + 1) mod period):
 * the caller's two table lookups. Returns now_ns when the frame may go at
 * once, and 0 when it never may: a wait of LUMEN_SLOT_NEVER (or one not
 * below the period), a frame longer than a window, a time before t0 or
 * beyond 2^64 ns, an invalid timing.
 */
LUMEN_INLINE __u64 lumen_slot_departure(const struct lumen_slot_timing *t, __u64 now_ns, __u64 margin_ns, __u64 wire_ns,
					__u32 wait_now, __u32 wait_next)
{
	struct lumen_slot_pos pos;
	__u64 open, close, slot;

	if (lumen_slot_at(t, now_ns, &pos))
		return 0;
	if (wait_now >= t->period || wait_next >= t->period)
		return 0;
	/* the first slot connecting the pair, from now's */
	slot = pos.slot + wait_now;
	if (lumen_slot_window(t, slot, margin_ns, &open, &close) || wire_ns > close - open)
		return 0;
	if (now_ns < open)
		return open;
	if (now_ns <= close - wire_ns)
		return now_ns;
	/* now is in (or past) that window and the frame no longer fits: the
	 * next connecting slot after it. A window is never the one after
	 * itself, and wait_now == 0 here (a later slot's window has not
	 * opened), so the next is slot + 1 + wait_next. */
	if (lumen_slot_window(t, pos.slot + 1 + wait_next, margin_ns, &open, &close))
		return 0;
	return open;
}

/* What the rotor switch does with a frame from src to dst at now_ns. */
enum lumen_rotor_verdict {
	LUMEN_ROTOR_FORWARD = 0, /* the current slot connects them, outside the guard */
	LUMEN_ROTOR_GUARD = 1, /* in the guard: the switch is reconfiguring */
	LUMEN_ROTOR_WRONG_SLOT = 2, /* the current slot does not connect them */
	LUMEN_ROTOR_NOT_STARTED = 3, /* before t0, or an invalid timing */
};

/* dst_now: where the current slot's matching sends src (on the uplink the
 * frame arrived on): the caller's lookup at pos->in_period, done after
 * lumen_slot_at. dst == src is never forwarded (an idle uplink). */
LUMEN_INLINE enum lumen_rotor_verdict lumen_rotor_check(const struct lumen_slot_pos *pos, __u32 src, __u32 dst,
							__u32 dst_now)
{
	if (!pos->usable)
		return LUMEN_ROTOR_GUARD;
	if (dst_now != dst || dst == src)
		return LUMEN_ROTOR_WRONG_SLOT;
	return LUMEN_ROTOR_FORWARD;
}

/* ---------------------------------------------------------------------- */
/* A schedule change, in two phases, at one instant everywhere             */

/*
 * Every party that follows a schedule (the rotor switch, each host's gate,
 * lumend) holds two banks: the schedule in force and the next one. A change
 * is announced first (the next bank written, state STAGED, with the instant
 * switch_ns at which it takes over: a period boundary of the schedule in
 * force, the new schedule's t0) and acknowledged; once every party has it,
 * it is committed (state COMMITTED). At switch_ns every party that holds
 * the commit changes banks, on its own clock, with no message in flight.
 *
 * A party that has the announcement but not the commit does not know at
 * switch_ns which schedule the others follow: it keeps quiet from then on
 * (sends nothing; the switch forwards nothing) until it learns the outcome,
 * rather than collide. A party that missed the announcement never
 * acknowledged it, so the change is aborted everywhere.
 */
enum lumen_change_state {
	LUMEN_CHANGE_NONE = 0, /* one schedule: bank */
	LUMEN_CHANGE_STAGED = 1, /* bank ^ 1 announced for switch_ns, not committed */
	LUMEN_CHANGE_COMMITTED = 2, /* bank ^ 1 takes over at switch_ns */
};

struct lumen_sched_change {
	__u64 switch_ns; /* CLOCK_TAI: when bank ^ 1 takes over */
	__u32 state; /* enum lumen_change_state */
	__u32 bank; /* 0 or 1: the bank in force before switch_ns */
};

/* One of a party's two schedules: what the slot arithmetic needs of it. */
struct lumen_sched_bank {
	struct lumen_slot_timing timing;
	__u64 version; /* the schedule's */
};

/* The bank in force at t: 0 or 1, or -1 when t is at or after the instant
 * of a change not (yet) committed: keep quiet. */
LUMEN_INLINE int lumen_change_bank(const struct lumen_sched_change *c, __u64 t)
{
	__u32 bank = c->bank & 1u;

	if (c->state == LUMEN_CHANGE_NONE || t < c->switch_ns)
		return (int)bank;
	if (c->state == LUMEN_CHANGE_COMMITTED)
		return (int)(bank ^ 1u);
	return -1;
}

/* ---------------------------------------------------------------------- */
/* The slot state lumend publishes to senders in userspace (lumen-dp): a   */
/* shared-memory file, one header then its tables                          */

#define LUMEN_OSCHED_MAGIC 0x4353474cu /* "LGSC" little-endian */
#define LUMEN_OSCHED_ABI 2u
#define LUMEN_OSCHED_SHM "/dev/shm/lumen-osched" /* lumend's default */

/* Why senders must keep quiet (bits of lumen_osched_page.quiet); 0: they
 * may send inside their destinations' windows. */
#define LUMEN_QUIET_NO_SCHEDULE 0x1u /* none loaded yet */
#define LUMEN_QUIET_CLOCK 0x2u /* the clock's error bound exceeds the margin */
#define LUMEN_QUIET_STOPPED 0x4u /* lumend stopped (its last word) */
#define LUMEN_QUIET_VERSION 0x8u /* this host missed a schedule change */

/*
 * The header. Writers (lumend only) bump seq to odd, write, bump it to even;
 * readers retry while seq is odd or changed (lumen_osched_read_*). The
 * tables follow the header at the given offsets, for the schedule version
 * `version`:
 *   waits[in_period * nodes + dst]   __u16: slots from in_period until one
 *                                    in which this node (self) reaches dst
 *                                    (0: that slot; LUMEN_SLOT_NEVER)
 *   dsts[in_period * uplinks + p]    __u16: where self's uplink p leads
 *                                    (self: idle)
 */
struct lumen_osched_page {
	__u32 magic; /* LUMEN_OSCHED_MAGIC */
	__u32 abi; /* LUMEN_OSCHED_ABI */
	__u32 seq; /* seqlock: odd while lumend writes */
	__u32 quiet; /* LUMEN_QUIET_* */
	__u64 version; /* the schedule in force */
	struct lumen_slot_timing timing;
	__u32 self; /* this host's node */
	__u32 nodes;
	__u32 uplinks;
	__u32 rate_mbps; /* one uplink's rate (0: unknown) */
	__u64 margin_ns; /* clock error margin: senders shrink windows by it */
	__u64 slot; /* the last slot boundary the slot engine published */
	__u64 boundary_ns; /* when it did (CLOCK_TAI) */
	__u64 late; /* boundaries published late (after the slot began + margin) */
	__u64 missed; /* boundaries not published at all (the engine slept through) */
	__u32 waits_off; /* byte offsets from the page start */
	__u32 dsts_off;
	__u64 size; /* bytes of the whole file */
	/* A schedule change is under way (staged or committed, optical.h): the
	 * tables above are replaced at this instant (CLOCK_TAI ns; 0: none).
	 * Until they are, a sender books nothing that would leave at or after
	 * it: it does not know that schedule yet. */
	__u64 change_ns;
	__u64 reserved[7]; /* 0: the header is three cache lines */
};

#ifdef LUMEN_USERSPACE
/* Seqlock for userspace readers of the page (lumen-dp). */
LUMEN_INLINE __u32 lumen_osched_read_begin(const struct lumen_osched_page *pg)
{
	__u32 s;

	while ((s = __atomic_load_n(&pg->seq, __ATOMIC_ACQUIRE)) & 1u)
		;
	return s;
}

/* 1 when what was read since lumen_osched_read_begin() returned s may be torn. */
LUMEN_INLINE int lumen_osched_read_retry(const struct lumen_osched_page *pg, __u32 s)
{
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return __atomic_load_n(&pg->seq, __ATOMIC_RELAXED) != s;
}

LUMEN_INLINE void lumen_osched_write_begin(struct lumen_osched_page *pg)
{
	__atomic_store_n(&pg->seq, pg->seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

LUMEN_INLINE void lumen_osched_write_end(struct lumen_osched_page *pg)
{
	__atomic_store_n(&pg->seq, pg->seq + 1, __ATOMIC_RELEASE);
}
#endif

#endif /* LUMEN_OPTICAL_H */
