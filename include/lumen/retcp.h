/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * lumen/retcp.h - reTCP's circuit-aware window jumps, in integer arithmetic,
 * for every shell that knows when a host's optical circuit is up (eBPF
 * struct_ops, lumen-dp, simulators). reTCP is the baseline the PowerTCP
 * thesis compares against on a reconfigurable datacenter network (RDCN).
 *
 * M. K. Mukerjee, C. Canel, W. Wang, et al.: "Adapting TCP for
 * Reconfigurable Datacenter Networks", NSDI 2020.
 *
 * The problem
 * -----------
 * A ToR of an RDCN reaches another ToR over a slow, always-on packet network,
 * and, for one "day" of each rotation of the optical circuit switch, over a
 * circuit several times faster. A window sized for the packet network leaves
 * most of the circuit idle; one sized for the circuit floods the packet
 * network's queues the rest of the time. Loss- and delay-based TCP needs
 * many RTTs to grow into the circuit, and a day is only about ten of them.
 *
 * The algorithm
 * -------------
 * reTCP is Reno plus two jumps driven by an explicit circuit signal:
 *
 *     circuit comes up:  cwnd = cwnd * jump     (ssthresh likewise)
 *     circuit goes down: cwnd = cwnd / jump     (ssthresh likewise)
 *
 * with jump the ratio of the circuit's rate to the packet network's, so the
 * window follows the bandwidth-delay product it has. Between the jumps Reno
 * runs as always (the ssthresh scaled with the window keeps it in congestion
 * avoidance instead of slow start after a jump). The ToR's per-destination
 * queue (VOQ) absorbs what a jump sends before the circuit takes it.
 *
 * Prebuffering: the jump up comes prebuffer_ns before the circuit does, so
 * the VOQ holds a circuit's worth of data when it opens and the circuit runs
 * full from its first microsecond, at the cost of that much queueing. The
 * thesis runs reTCP with 1800 us (the paper's) and 600 us of prebuffering.
 *
 * The signal
 * ----------
 * The original switch signalled circuit start and end with ECE, which needed
 * a kernel patch. Here the signal is the schedule itself: lumend (--pin)
 * publishes, for every destination, the next window in which the circuit to
 * it is up (struct lumen_osched_window, lumen/bpf_shared.h, TAI
 * nanoseconds). lumen_retcp_phase() turns one such window and the time into
 * the phase the window should be in now and the time it next changes; the
 * jump happens on the first ACK that sees a new phase. A destination with no
 * window in the period (0, 0), or a window already past (lumend publishes
 * the next one at the next slot boundary), is on the packet network.
 *
 * Units: windows in packets (TCP's), times in ns. jump is a whole number:
 * the thesis' circuit is 4x its packet network.
 */
#ifndef LUMEN_RETCP_H
#define LUMEN_RETCP_H

#include "types.h"

#define LUMEN_RETCP_DEFAULT_JUMP 4 /* the thesis' RDCN: 100 vs 25 Gbit/s */
#define LUMEN_RETCP_JUMP_MAX 64u
#define LUMEN_RETCP_PREBUFFER_MAX_NS 100000000ull /* 100 ms */

struct lumen_retcp_params {
	__u32 jump; /* circuit rate / packet network rate, [1, 64] */
	__u32 pad;
	__u64 prebuffer_ns; /* jump up this long before the circuit opens, [0, 100 ms] */
};

enum lumen_retcp_param_error {
	LUMEN_RETCP_PARAM_OK = 0,
	LUMEN_RETCP_PARAM_EJUMP = 1,
	LUMEN_RETCP_PARAM_EPREBUFFER = 2,
};

enum lumen_retcp_phase {
	LUMEN_RETCP_PACKET = 0, /* the packet network's window */
	LUMEN_RETCP_CIRCUIT = 1, /* the circuit's (from prebuffer_ns before it opens) */
};

/* A flow's reTCP state: the phase its window is in. */
struct lumen_retcp {
	__u32 phase; /* enum lumen_retcp_phase */
	__u32 pad;
	__u64 jumps_up;
	__u64 jumps_down;
};

LUMEN_INLINE void lumen_retcp_params_default(struct lumen_retcp_params *p)
{
	p->jump = LUMEN_RETCP_DEFAULT_JUMP;
	p->pad = 0;
	p->prebuffer_ns = 0;
}

LUMEN_INLINE int lumen_retcp_params_validate(const struct lumen_retcp_params *p)
{
	if (p->jump < 1 || p->jump > LUMEN_RETCP_JUMP_MAX)
		return -LUMEN_RETCP_PARAM_EJUMP;
	if (p->prebuffer_ns > LUMEN_RETCP_PREBUFFER_MAX_NS)
		return -LUMEN_RETCP_PARAM_EPREBUFFER;
	return 0;
}

LUMEN_INLINE const char *lumen_retcp_param_strerror(int err)
{
	switch (err < 0 ? -err : err) {
	case LUMEN_RETCP_PARAM_OK:
		return "ok";
	case LUMEN_RETCP_PARAM_EJUMP:
		return "retcp jump (circuit rate / packet rate) must be within [1, 64]";
	case LUMEN_RETCP_PARAM_EPREBUFFER:
		return "retcp prebuffer must be within [0, 100 ms]";
	default:
		return "unknown retcp parameter error";
	}
}

LUMEN_INLINE void lumen_retcp_init(struct lumen_retcp *r)
{
	r->phase = LUMEN_RETCP_PACKET;
	r->pad = 0;
	r->jumps_up = 0;
	r->jumps_down = 0;
}

/*
 * The phase at now for the circuit window [open_ns, close_ns) and a
 * prebuffer, and in *until_ns when it next changes (0: not before lumend
 * publishes another window). The circuit phase starts prebuffer_ns before
 * open_ns (compared as now + prebuffer, which cannot wrap for TAI times
 * below 2^63 and a prebuffer of at most 100 ms). A window that is empty,
 * inverted or past is the packet network's.
 */
LUMEN_INLINE __u32 lumen_retcp_phase(__u64 open_ns, __u64 close_ns, __u64 prebuffer_ns, __u64 now_ns, __u64 *until_ns)
{
	*until_ns = 0;
	if (open_ns >= close_ns || now_ns >= close_ns)
		return LUMEN_RETCP_PACKET;
	if (now_ns + prebuffer_ns >= open_ns) {
		*until_ns = close_ns;
		return LUMEN_RETCP_CIRCUIT;
	}
	*until_ns = open_ns - prebuffer_ns;
	return LUMEN_RETCP_PACKET;
}

/*
 * One value scaled for a change of phase: times jump going up, divided
 * going down, kept within [lo, hi]. v and hi < 2^32, jump <= 64: no overflow.
 */
LUMEN_INLINE __u32 lumen_retcp_scale(__u32 v, __u32 jump, int up, __u32 lo, __u32 hi)
{
	__u64 s = up ? (__u64)v * jump : (__u64)v / (jump ? jump : 1);

	if (s < lo)
		s = lo;
	if (s > hi)
		s = hi;
	return (__u32)s;
}

/*
 * The window, and *ssthresh, for an ACK that sees phase: unchanged within a
 * phase, jumped on a change (counted). cwnd stays within [min_cwnd,
 * cwnd_clamp]; an ssthresh at or above infinite_ssthresh (TCP's "not set
 * yet") is left alone, as slow start has not ended. Returns the new window.
 */
LUMEN_INLINE __u32 lumen_retcp_on_phase(struct lumen_retcp *r, const struct lumen_retcp_params *p, __u32 phase,
					__u32 cwnd, __u32 *ssthresh, __u32 min_cwnd, __u32 cwnd_clamp,
					__u32 infinite_ssthresh)
{
	int up;

	if (phase == r->phase || (phase != LUMEN_RETCP_PACKET && phase != LUMEN_RETCP_CIRCUIT))
		return cwnd;
	up = phase == LUMEN_RETCP_CIRCUIT;
	r->phase = phase;
	if (up)
		r->jumps_up++;
	else
		r->jumps_down++;
	if (min_cwnd < 1)
		min_cwnd = 1;
	if (cwnd_clamp < min_cwnd)
		cwnd_clamp = min_cwnd;
	if (*ssthresh < infinite_ssthresh)
		*ssthresh = lumen_retcp_scale(*ssthresh, p->jump, up, min_cwnd, infinite_ssthresh - 1);
	return lumen_retcp_scale(cwnd, p->jump, up, min_cwnd, cwnd_clamp);
}

#endif /* LUMEN_RETCP_H */
