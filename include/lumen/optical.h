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
 *
 * A change that is never committed (the coordinator died between the
 * phases, a commit was lost) expires by this rule, the only safe one
 * (issue 25, §3). Two parties must never follow different schedules at
 * once; keeping quiet is always safe, sending on a schedule is not unless
 * every other party follows the same. A party holding STAGED cannot tell
 * whether the coordinator committed anyone: it commits only once every
 * party has the announcement, and it may have reached some before dying,
 * or its commit to this one be lost (no number of further messages
 * settles that: the two generals). Hence:
 *   - back to the old bank, alone, at a deadline: unsafe, since the
 *     committed parties switch at the instant whatever this one does; so
 *     no party aborts by itself, lumend included;
 *   - on to the new bank, alone: unsafe, since the coordinator aborts
 *     everywhere when a stage failed, and an abort can be lost too;
 *   - quiet: safe. So the change expires before its instant in that
 *     nothing this party does crosses it: from the announcement on it books
 *     nothing that would still be on the wire at switch_ns
 *     (lumen_change_departure: committed or not, until it is committed),
 *     and from switch_ns it is quiet (lumen_change_bank: -1) however long
 *     ago the instant was.
 * The quiet ends only with the coordinator's word, which is safe whenever
 * it comes: a late commit (the others switched: join them on the new
 * bank) or an abort (sent only while nobody was committed). It is bounded
 * by the liveness of whoever holds the state, not by a clock: readers of
 * lumend's state (the kernel gate with --lumend, lumen-dp) are stale, and
 * quiet, once lumend stops publishing; and a reader whose writer shows a
 * change still STAGED well past its instant without saying quiet for it
 * (lumen_change_overdue, the reader's stale limit) does not follow that
 * writer at all. lumend says such a change overdue once, so an operator
 * finishes it (lumen sched status; docs/optical.md).
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

/* 1 when c is a change announced and not committed whose instant is more
 * than limit_ns before t: nobody has said the outcome to this party for that
 * long. It stays quiet all the same (above); overdue is for saying so, and
 * for a reader to stop believing a writer that neither applied the change
 * nor said quiet for it. */
LUMEN_INLINE int lumen_change_overdue(const struct lumen_sched_change *c, __u64 t, __u64 limit_ns)
{
	return c->state == LUMEN_CHANGE_STAGED && t > c->switch_ns && t - c->switch_ns > limit_ns;
}

/* ---------------------------------------------------------------------- */
/* A sender's departure while a change may be under way                    */

/*
 * A gate books a frame from a base (now, or when the wire to its
 * destination is free again) in the bank in force at that base. While a
 * change is under way that is not the whole answer: a frame must be on the
 * wire under one schedule only, start to end. So a departure in the old
 * bank stands when it is before the instant and the frame is off the wire
 * by then (dep + wire <= switch_ns); when it would still be on the wire
 * then, or the old schedule has no window for it before then at all,
 *   - the change committed: the frame is booked in the new bank, from the
 *     instant on (that schedule's windows; the new schedule's t0 is the
 *     instant, and one that has not begun by then carries nothing);
 *   - the change staged, not committed: quiet. This host does not know
 *     which schedule the switch follows from the instant, so it puts nothing
 *     on the wire then.
 * A base at or after the instant is booked in the new bank (committed) or
 * is quiet (staged). Without a change, the bank in force, whatever the time.
 *
 * The tables of waits are the caller's (BPF map lookups: no function
 * pointers here), so a departure takes two calls around its lookups:
 *   lumen_change_lookup()     where the destination's waits are needed:
 *                             part 0, the bank in force at base, from base;
 *                             part 1 (a committed change, base before its
 *                             instant), the new bank from the instant;
 *   the caller                for each part i with need[i]: wait_now[i] at
 *                             slot now[i] of bank[i]'s period, wait_next[i]
 *                             at slot next[i] (the one after);
 *   lumen_change_departure()  the verdict and the departure.
 * Part 1 is looked up whether part 0's departure stands or not: two more
 * lookups, and only from the commit to the instant.
 */
enum lumen_gate_verdict {
	LUMEN_GATE_DEPART = 0, /* at *dep_ns */
	LUMEN_GATE_NEVER = 1, /* no window can carry it: no circuit to the destination, longer than a window, a
				 schedule not begun, the end of time */
	LUMEN_GATE_QUIET = 2, /* it would be on the wire at or after the instant of a change not committed */
};

struct lumen_change_query {
	/* lumen_change_lookup()'s */
	__u64 from_ns[2]; /* part i's departure is the earliest from here */
	__u64 until_ns; /* part 0's stands when the frame is off the wire by then (crosses) */
	__u32 bank[2]; /* part i's bank, 0 or 1 */
	__u32 now[2]; /* look wait_now[i] up at this slot of bank[i]'s period */
	__u32 next[2]; /* and wait_next[i] at this one */
	__u32 need[2]; /* 1: look part i up */
	__u32 crosses; /* part 0 is the old bank of a change under way: its departure stands until until_ns */
	__u32 then_new; /* 1: past until_ns, part 1 (committed); 0: quiet (staged) */
	__u32 quiet; /* base is at or after the instant of a change not committed */
	/* the caller's lookups, LUMEN_SLOT_NEVER until then */
	__u32 wait_now[2];
	__u32 wait_next[2];
};

/* Part i of q: departures in bank from from_ns, whose waits the caller
 * looks up at the slot from_ns falls in and the one after. None are needed
 * when the part is not (used 0: its slot is not worked out either, two
 * divisions saved per frame), before that bank's t0 or for an invalid
 * timing (it carries nothing). */
LUMEN_INLINE void lumen_change_part(struct lumen_change_query *q, __u32 i, const struct lumen_sched_bank *banks,
				    __u32 bank, __u64 from_ns, __u32 used)
{
	const struct lumen_slot_timing *t = &banks[bank & 1u].timing;
	struct lumen_slot_pos pos;

	q->bank[i] = bank & 1u;
	q->from_ns[i] = from_ns;
	q->wait_now[i] = LUMEN_SLOT_NEVER;
	q->wait_next[i] = LUMEN_SLOT_NEVER;
	q->now[i] = 0;
	q->next[i] = 0;
	q->need[i] = 0;
	if (!used || lumen_slot_at(t, from_ns, &pos))
		return;
	q->need[i] = 1;
	q->now[i] = pos.in_period;
	q->next[i] = pos.in_period + 1 < t->period ? pos.in_period + 1 : 0;
}

/* Where the destination's waits are needed for a frame booked from base_ns
 * under change c with the schedules banks[2] (see above). */
LUMEN_INLINE void lumen_change_lookup(const struct lumen_sched_change *c, const struct lumen_sched_bank *banks,
				      __u64 base_ns, struct lumen_change_query *q)
{
	int bank = lumen_change_bank(c, base_ns);
	__u32 old = c->bank & 1u;

	q->quiet = bank < 0 ? 1u : 0u;
	/* the old bank at a base before the instant of a change under way:
	 * what it books must be off the wire by the instant */
	q->crosses = bank >= 0 && c->state != LUMEN_CHANGE_NONE && (__u32)bank == old ? 1u : 0u;
	q->then_new = q->crosses && c->state == LUMEN_CHANGE_COMMITTED ? 1u : 0u;
	q->until_ns = c->switch_ns;
	lumen_change_part(q, 0, banks, bank < 0 ? old : (__u32)bank, base_ns, q->quiet ^ 1u);
	lumen_change_part(q, 1, banks, old ^ 1u, c->switch_ns, q->then_new);
}

/* The verdict on a frame of wire_ns (margin_ns: the clock margin windows
 * shrink by) once the caller has looked up q's waits: LUMEN_GATE_DEPART
 * with *dep_ns (>= base), LUMEN_GATE_NEVER or LUMEN_GATE_QUIET. */
LUMEN_INLINE enum lumen_gate_verdict lumen_change_departure(const struct lumen_sched_bank *banks, __u64 margin_ns,
							    __u64 wire_ns, const struct lumen_change_query *q,
							    __u64 *dep_ns)
{
	__u64 dep;

	if (q->quiet)
		return LUMEN_GATE_QUIET;
	dep = lumen_slot_departure(&banks[q->bank[0] & 1u].timing, q->from_ns[0], margin_ns, wire_ns, q->wait_now[0],
				   q->wait_next[0]);
	/* it stands when it leaves before the instant and is off the wire by
	 * then (the first test settles a frame of no length at the instant) */
	if (q->crosses && (!dep || dep >= q->until_ns || wire_ns > q->until_ns - dep)) {
		/* no window of the old schedule carries it before the instant */
		if (!q->then_new)
			return LUMEN_GATE_QUIET;
		dep = lumen_slot_departure(&banks[q->bank[1] & 1u].timing, q->from_ns[1], margin_ns, wire_ns,
					   q->wait_now[1], q->wait_next[1]);
	}
	if (!dep)
		return LUMEN_GATE_NEVER;
	*dep_ns = dep;
	return LUMEN_GATE_DEPART;
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
