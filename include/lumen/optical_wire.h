/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * lumen/optical_wire.h - what the kernel's gate (bpf/optical_gate.bpf.c)
 * and the emulated rotor switch (bpf/rotor_switch.bpf.c) need beyond
 * optical.h's slot arithmetic: the wire time of a GSO/TSO super-packet,
 * whether a frame's tail stays inside its slot's window, and whether
 * lumend's published state is too old to gate on. Pure C, no loops: the
 * programs call it, tests/optical_wire_test.cpp checks it.
 */
#ifndef LUMEN_OPTICAL_WIRE_H
#define LUMEN_OPTICAL_WIRE_H

#include "optical.h"

/*
 * Wire time of an skb of len bytes (Ethernet header to payload end) at
 * rate_mbps once the device has cut it into segments of at most seg_size
 * payload bytes (skb's gso_size; 0: not a GSO skb), each repeating the
 * hdr_len bytes of headers (Ethernet, IP, TCP or UDP) the skb carries once:
 * the sum of the segments' own wire times (lumen_wire_ns: preamble, FCS and
 * gap per segment), so a super-packet books exactly what its segments sent
 * one by one would. The segments leave back to back (TSO in the NIC, or
 * software GSO after the qdisc), so this is how long the burst is on the
 * wire from its first bit. A len that is not longer than hdr_len +
 * seg_size is one frame.
 */
LUMEN_INLINE __u64 lumen_burst_wire_ns(__u32 len, __u32 seg_size, __u32 hdr_len, __u32 rate_mbps)
{
	__u64 payload, segs, last;

	if (!seg_size || hdr_len >= len || len - hdr_len <= seg_size)
		return lumen_wire_ns(len, rate_mbps);
	payload = len - hdr_len;
	segs = lumen_div64(payload + seg_size - 1, seg_size);
	last = payload - (segs - 1) * seg_size;
	return (segs - 1) * lumen_wire_ns(hdr_len + seg_size, rate_mbps) +
	       lumen_wire_ns((__u32)(hdr_len + last), rate_mbps);
}

/*
 * The largest GSO skb (gso_max_size, bytes) whose burst is off the wire
 * within window_ns at rate_mbps, whatever its headers, for a device of MTU
 * mtu: a burst of len bytes has at most len / (mtu - 134) + 1 segments,
 * each adding at most 134 bytes of headers (Ethernet, IPv4 and TCP with
 * the most options), LUMEN_WIRE_OVERHEAD of framing and what its wire
 * time's rounding up to a whole ns may add (under 1 ns: rate / 8000 + 1
 * bytes), which this inverts (rounding down). 0 when not even headers fit.
 */
LUMEN_INLINE __u64 lumen_gso_cap_bytes(__u64 window_ns, __u32 rate_mbps, __u32 mtu)
{
	const __u64 hdr = 134, frame = LUMEN_WIRE_OVERHEAD + rate_mbps / 8000 + 1;
	__u64 wire = lumen_div64(window_ns * rate_mbps, 8000); /* bytes the window carries */

	if (mtu <= hdr || wire <= hdr + frame)
		return 0;
	return lumen_div64((wire - hdr - frame) * (mtu - hdr), mtu + frame);
}

/* How long each window of timing t is once shrunk by margin_ns on each
 * side (0: nothing is left, or an invalid timing): the longest burst any
 * window of that schedule carries. */
LUMEN_INLINE __u64 lumen_window_ns(const struct lumen_slot_timing *t, __u64 margin_ns)
{
	__u64 usable;

	if (lumen_slot_timing_valid(t))
		return 0;
	usable = t->slot_ns - t->guard_ns;
	return usable > 2 * margin_ns ? usable - 2 * margin_ns : 0;
}

/*
 * Whether a frame whose head is at pos (lumen_slot_at) and that takes
 * wire_ns on the wire is off the wire before its slot's usable part ends:
 * its tail (head + wire_ns) at or before the guard (guard at the end) or
 * the slot's end (guard at the start: the next slot's guard). A rotor
 * switch loses the part of a frame that arrives while its mirrors move, so
 * a frame whose tail reaches the guard is lost as surely as one whose head
 * does. pos must be usable (lumen_rotor_check said forward).
 */
LUMEN_INLINE int lumen_slot_tail_fits(const struct lumen_slot_timing *t, const struct lumen_slot_pos *pos,
				      __u64 wire_ns)
{
	__u64 end = t->guard_at_start ? t->slot_ns : t->slot_ns - t->guard_ns;

	return pos->offset_ns <= end && wire_ns <= end - pos->offset_ns;
}

/*
 * Whether lumend's slot state, last published at boundary_ns (its clock,
 * TAI), is too old at now_ns (the gate's TAI) to be followed: a lumend that
 * died without its last word (SIGKILL, a crash, a stuck slot engine) must
 * not leave its gate sending on that state for ever. stale_ns == 0: no
 * lumend to follow (the gate's own state), never stale. A state never
 * published (boundary 0) is stale. A boundary ahead of now (the clocks
 * differ a little) is not: only the absence of news counts.
 */
LUMEN_INLINE int lumen_osched_stale(__u64 now_ns, __u64 boundary_ns, __u64 stale_ns)
{
	if (!stale_ns)
		return 0;
	if (!boundary_ns)
		return 1;
	return now_ns > boundary_ns && now_ns - boundary_ns > stale_ns;
}

/*
 * The stale limit a reader of lumend's state takes when none is given (the
 * kernel gate's loader, lumen-dp's page reader): lumend publishes a
 * boundary every slot, so 4 slots without one, and never under 100 ms: a
 * slot engine late by a scheduling hiccup on a shared host is not a dead
 * lumend, while one SIGKILLed stops its readers within a tenth of a second.
 */
#define LUMEN_OSCHED_STALE_MIN_NS 100000000ull
LUMEN_INLINE __u64 lumen_osched_default_stale_ns(__u64 slot_ns)
{
	if (slot_ns > LUMEN_OSCHED_STALE_MIN_NS / 4)
		return slot_ns > ~0ull / 4 ? ~0ull : 4 * slot_ns;
	return LUMEN_OSCHED_STALE_MIN_NS;
}

#endif /* LUMEN_OPTICAL_WIRE_H */
