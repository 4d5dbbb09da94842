/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * tests/ptcp_stream.h - drives the PowerTCP core with a stream of ACKs whose
 * RTT stays constant while their INT echoes are whatever a test or a fuzzer
 * makes them, and states the liveness bound the core must meet (see
 * "Liveness" in include/lumen/powertcp.h). Shared by powertcp_liveness_test
 * (GoogleTest) and fuzz/powertcp_stream_fuzzer.c (libFuzzer), so both check
 * one property.
 *
 * The property: with the RTT at R >= 16 tau, the RTT power is P = R / tau,
 * and the control law's fixed point for power P is w* = beta * P / (P - 1)
 * (from w = w / P + beta). Whatever the echoes say (nothing, garbage, lies,
 * or the truth), after enough acknowledged data the window is at most
 * max(w*, 2 MSS) plus 10 % and one MSS: INT may only ever make it smaller.
 * HPCC (LUMEN_PTCP_MODE_HPCC) shares the machinery with its own law,
 * W = Wc * eta / U + W_AI, whose fixed point for U = P is
 * w* = W_AI * P / (P - eta): the same bound with that w*.
 */
#ifndef LUMEN_TESTS_PTCP_STREAM_H
#define LUMEN_TESTS_PTCP_STREAM_H

#include "lumen/powertcp.h"

struct ptcp_stream {
	struct lumen_ptcp st;
	struct lumen_ptcp_params p;
	__u64 now_ns;
	__u64 rtt_ns;
	__u32 una;
	__u32 mss;
};

static inline void ptcp_stream_init_mode(struct ptcp_stream *s, const struct lumen_ptcp_params *p, __u64 rtt_ns,
					 __u32 mss, __u32 isn, enum lumen_ptcp_mode mode)
{
	s->p = *p;
	s->now_ns = 1000000000ull;
	s->rtt_ns = rtt_ns;
	s->una = isn;
	s->mss = mss;
	lumen_ptcp_init(&s->st, &s->p, mode, isn, mss);
}

static inline void ptcp_stream_init(struct ptcp_stream *s, const struct lumen_ptcp_params *p, __u64 rtt_ns, __u32 mss,
				    __u32 isn)
{
	ptcp_stream_init_mode(s, p, rtt_ns, mss, isn, LUMEN_PTCP_MODE_INT);
}

/*
 * Self-clocking: a sender with window cwnd gets one RTT's worth of ACKs per
 * RTT, so an ACK of acked bytes comes at least rtt * acked / cwnd after the
 * previous one. Drivers add their own jitter on top.
 */
static inline __u64 ptcp_stream_spacing(const struct ptcp_stream *s, __u32 acked)
{
	return lumen_div64(s->rtt_ns * acked, s->st.cwnd_bytes ? s->st.cwnd_bytes : 1);
}

/* One ACK, dt_ns after the previous one, acknowledging acked bytes. */
static inline enum lumen_ptcp_result ptcp_stream_ack(struct ptcp_stream *s, const struct lumen_int_opt *echo,
						     __u64 dt_ns, __u32 acked)
{
	struct lumen_ptcp_ack a;

	s->now_ns += dt_ns;
	s->una += acked;
	a.now_ns = s->now_ns;
	a.rtt_ns = s->rtt_ns;
	a.snd_una = s->una;
	a.snd_nxt = s->una + (__u32)s->st.cwnd_bytes;
	a.mss = s->mss;
	return lumen_ptcp_on_ack(&s->st, &s->p, &a, echo);
}

/* Largest window the liveness property allows once the stream has settled. */
static inline __u64 ptcp_stream_bound(const struct ptcp_stream *s)
{
	__u64 tau = lumen_ptcp_tau(&s->st, &s->p);
	__u64 beta = lumen_ptcp_beta(&s->p, tau);
	__u64 fixed = s->rtt_ns > tau ? lumen_div64(beta * s->rtt_ns, s->rtt_ns - tau) : ~0ull;
	__u64 floor = 2ull * s->mss;

	if (s->st.mode == LUMEN_PTCP_MODE_HPCC) {
		/* W_AI * R / (R - eta * tau); eta * tau < 2^46 */
		__u64 wai = lumen_hpcc_wai(&s->p.hpcc, lumen_ptcp_host_bdp(&s->p, tau), s->p.expected_flows);
		__u64 eta_tau = (s->p.hpcc.eta * tau) >> LUMEN_HPCC_SHIFT;

		fixed = s->rtt_ns > eta_tau ? lumen_div64(wai * s->rtt_ns, s->rtt_ns - eta_tau) : ~0ull;
	}

	if (fixed < floor)
		fixed = floor;
	return fixed + fixed / 10 + s->mss;
}

#endif /* LUMEN_TESTS_PTCP_STREAM_H */
