/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * lumen/powertcp.h - the PowerTCP and theta-PowerTCP control laws, in integer
 * arithmetic, shared unchanged by the kernel module (kernel/), the eBPF
 * struct_ops programs (bpf/) and userspace (tests, simulators). How the two
 * kernel shells drive it from TCP's congestion-control hooks (RTT samples,
 * idle, loss, segments, counters) is lumen/powertcp_ack.h.
 *
 * V. Addanki, O. Michel, S. Schmid: "PowerTCP: Pushing the Performance
 * Limits of Datacenter Networks", NSDI 2022; V. Addanki, PhD thesis, 2025.
 *
 * The algorithm (thesis ch. 2)
 * ----------------------------
 * PowerTCP reacts to "power" at the bottleneck: voltage times current,
 *
 *     Gamma = (q + b*tau) * (dq/dt + mu)         [bytes * bytes/s]
 *
 * with q the queue, b the link rate, tau the base RTT and mu the dequeue rate.
 * Normalised by its equilibrium value e = b^2 * tau it is dimensionless:
 *
 *     Gamma_norm = (lambda / b) * (1 + q / (b*tau)),  lambda = dq/dt + mu,
 *
 * which is 1 when the link is exactly busy and its queue is empty, above 1
 * when a queue builds or grows, below 1 when the link is underused. The
 * queue length, transmitted bytes, timestamp and link rate of every hop come
 * from in-band network telemetry (INT, lumen/int_option.h) that switches
 * stamp into data segments and the receiver echoes in ACKs. Per ACK,
 * PowerTCP computes Gamma_norm for every hop of the INT stack echoed in the
 * ACK (from the difference to the previous ACK's stack), takes the largest,
 * smooths it with weight dt/tau, and moves the window towards
 *
 *     cwnd = gamma * (cwnd_old / Gamma_smooth + beta) + (1 - gamma) * cwnd,
 *
 * where cwnd_old is the window the ACKed data was sent with and beta the
 * additive increase, HostBw * tau / N unless configured (one gamma step per
 * window of ACKs, see C2 below). The sender paces at cwnd / tau. A new flow
 * starts with one host BDP (HostBw * tau) and no slow start. At equilibrium a
 * bottleneck shared by flows with additive increases beta_i holds a queue of
 * sum(beta_i) and each flow gets a share proportional to beta_i (thesis
 * theorems 1-3).
 *
 * theta-PowerTCP needs no switch support: with mu taken as b, the normalised
 * power becomes (dRTT/dt + 1) * RTT / tau, computed from RTT samples, and the
 * window is updated once per RTT.
 *
 * HPCC (lumen/hpcc.h, LUMEN_PTCP_MODE_HPCC) is the third mode: the same INT
 * history, EWMA, clamps, fallback and liveness rules, with HPCC's per-hop
 * metric (inflight bytes over BDP) in place of power and its reference-
 * window law in place of the update above.
 *
 * Units and fixed point
 * ---------------------
 *   time            ns (__u64)
 *   windows, queue  bytes (__u64); the kernel converts to packets
 *   bandwidth       Mbit/s (__u32); 1 Mbit/s = 125000 bytes/s, so
 *                   bytes = Mbit/s * ns / 8000
 *   pacing rate     bytes/s (__u64), as sk_pacing_rate
 *   power, gamma    Q16 fixed point: LUMEN_PTCP_ONE (65536) = 1.0
 *
 * Every intermediate product is bounded in a comment next to it; the bounds
 * follow from the validated parameter ranges and from the clamps applied to
 * each quantity (power, voltage, current, cwnd). There is no division by a
 * value that can be zero: divisors are link rate * dt (both >= 1 after
 * validation), tau (>= 1 us) and power (>= LUMEN_PTCP_POWER_MIN).
 *
 * Defects of the printed pseudocode and how this code resolves them
 * ------------------------------------------------------------------
 * (labels A1.. are ours; line numbers are those of Algorithm 1 in the
 * PowerTCP paper, NSDI 2022)
 *   A1 Alg. 1 line 20 compares raw power against the normalised maximum. The
 *      text (and both reference implementations) take the maximum of the
 *      *normalised* power, which is what lumen_ptcp_int_power() does.
 *   A2 updateWindow(power, ack) is called as updateWindow(normPower,
 *      cwnd_old); lumen_ptcp_update_window() takes the power and cwnd_old.
 *   A3 Gamma_smooth has no initial value: the first valid sample seeds it
 *      (smooth_power == 0 means "no sample yet"). The smoothing weight needs
 *      dt <= tau, or (tau - dt) goes negative: dt is clamped to tau.
 *   A4 dt may be zero or wrap: INT deltas use lumen_int_hop_delta(), which
 *      refuses dt == 0 and anything beyond half the wrap period; the power
 *      used as a divisor is floored at LUMEN_PTCP_POWER_MIN (0.01).
 *   A5 lambda = dq/dt + mu can come out negative through measurement noise;
 *      the arrivals in dt (dq + tx bytes) are clamped at zero before dividing.
 *   A6 No usable hop (first ACK, no INT, path change): the window is left
 *      alone for that ACK and the history is re-baselined. An RTT round in
 *      which no ACK gave a usable INT sample, whatever the echoes looked
 *      like (none, zero hops, a rate code of 0, changing hops or rates,
 *      stale or implausible counters, duplicates), ends with one update by
 *      the theta-PowerTCP rule from RTT samples (fallback_updates). An echo
 *      that cannot be used is "no INT" (see "Liveness" below).
 *   B1 Alg. 2 uses Delta-t without defining it: it is the dt between the two
 *      RTT samples, clamped to tau like A3.
 *   B2 Alg. 2 takes the RTT gradient between consecutive ACKs (noisy) and
 *      updates the window once per RTT. Both are kept as printed: the
 *      EWMA with weight dt/tau telescopes the per-ACK gradients into the
 *      gradient over the last tau, which filters the noise. (Advancing the
 *      RTT history only once per RTT instead makes dt >= tau, so the EWMA
 *      never smooths, and the fluid simulation showed theta-PowerTCP then
 *      diverges at gamma = 0.9 with N = 10.) The RTT estimator has its own
 *      EWMA (smooth_rtt_power) and runs in both modes, so a PowerTCP flow
 *      that loses INT falls back with a warm estimate.
 *   B3 dRTT/dt < -1 would make the power negative: (1 + dRTT/dt) is clamped
 *      at zero (and the power floored as in A4).
 *   C1 GETCWND(ack.seq) must return the window in force when the ACKed
 *      data was sent (Eq. 2.16's w(t - theta)); the thesis approximates it
 *      by remembering the window once per RTT. Here a history of 8
 *      (sequence, window) records, one per 1/8 window of sent data, gives it
 *      to within 1/8 RTT (lumen_ptcp_cwnd_at).
 *   C2 Per-ACK gain. Alg. 1 applies the full blend (weight gamma) on every
 *      ACK. With tens of ACKs per RTT the blend completes within a few ACKs,
 *      so the loop gain per RTT is far above the gamma per update interval
 *      that Theorems 1-2 analyse, and the fluid simulation showed limit
 *      cycles (2 flows, N = 10: queue 1.9x sum(beta), CV 0.86) and long
 *      ringing. Each ACK therefore moves the window gamma * acked/cwnd of
 *      the way to cwnd_old / power + beta (lumen_ptcp_step_toward): one
 *      window of ACKs makes one gamma step, the analysed law (Eq. 2.23 with
 *      delta_t = RTT), while every ACK still reacts to the latest power.
 *      Measured: every equilibrium within 1% of theory, queue CV <= 0.03,
 *      99% of a perturbation gone within 2x of 5 RTT/gamma.
 *
 * Liveness: the network cannot switch congestion control off
 * ---------------------------------------------------------------
 * INT comes from the network, so a broken or hostile path must not be able
 * to hold the window. Two rules guarantee that whenever the RTT stays far
 * above tau the window falls, whatever the INT stream looks like:
 *   - an unusable echo is no INT (A6): an RTT round without one usable INT
 *     sample falls back to the RTT rule (counted in int_unusable and
 *     fallback_updates);
 *   - the RTT guard: while the RTT floor, the smallest RTT sample of the
 *     last window of one RTT, is at least LUMEN_PTCP_RTT_GUARD base RTTs (8:
 *     seven BDPs of queueing that persisted for a whole RTT), INT claiming
 *     less power than RTT floor / tau is overridden by that ratio
 *     (rtt_guard). A truthful INT path shows that queue itself; a bottleneck
 *     without INT, or a lying echo, does not. The floor, not the smoothed
 *     RTT power, decides: one delayed ACK must not override truthful INT.
 * Records of a hop more than its version's usable dt apart in host time
 * (LUMEN_PTCP_INT_GAP_MAX_NS, 1.97 ms, for version 1; 126 ms for version 2)
 * re-baseline (int_gap): the 18-bit INT timestamp of version 1 wraps every
 * 4.19 ms, version 2's 24-bit one every 268 ms, so a gap of a whole wrap
 * would otherwise alias to a small, plausible dt.
 * With INT that is valid and claims an idle path while the RTT is below the
 * guard, a flow's window is still bounded by host BDP + beta (below).
 *
 * Further decisions the thesis leaves open:
 *   - ECN marks are not signals: the queue that causes them already shows
 *     as power > 1 and shrinks the window. Loss is, for TCP: a path without
 *     INT (a policer, a shallow buffer) may drop without a queue the power
 *     could see, so the TCP binding halves the window once per loss episode
 *     and conserves packets during recovery (lumen/powertcp_ack.h, "Loss
 *     and recovery"). The cut goes through lumen_ptcp_set_cwnd(), so the
 *     next update starts from it, not from the window that caused the loss.
 *   - cwnd is capped at host BDP + beta, the largest window a flow holds in
 *     the fluid equilibrium (w_i = beta_i * (1 + b*tau / sum(beta)) <=
 *     beta_i + HostBw*tau); larger windows only queue at the sender's NIC.
 *     It is floored at LUMEN_PTCP_MIN_CWND_SEGS segments.
 *   - A missing INT echo on one ACK does not discard the history: the
 *     counters are cumulative, so the next delta spans the gap; the wrap
 *     rules catch gaps that are too long. An idle restart (lumen_ptcp_restart;
 *     when, see lumen/powertcp_ack.h) does discard it, since a gap of whole
 *     wrap periods is undetectable.
 *   - A change in the number of INT hops is a path change: the INT history
 *     is re-baselined (counted in int_path_changes).
 *   - A change of a hop's rate is information, not a path change: on a
 *     reconfigurable network the rate of the port that carries a
 *     destination's traffic steps up when a circuit to it comes up and back
 *     down when it goes (thesis 2.4), and the point of INT there is that the
 *     sender sees the new rate in the next hop record. The byte fields'
 *     unit depends on the rate (lumen/int_option.h), so the one record
 *     that carries a new rate cannot be differenced with the one before:
 *     that ACK gives no sample (counted in int_rate_changes), and the next
 *     one is normalised by the new rate. Nothing else is discarded: the
 *     smoothed power, the window and the other hops' records stay, so the
 *     window moves to the new BDP at the speed of the control law (a few
 *     RTTs: 4 to 0.9 of a 4x faster link's BDP in
 *     tests/rate_step_fluid_test.cpp, with the per-ACK damping of C2).
 *     A stale or implausible delta on any hop discards the whole sample (the
 *     maximum over the remaining hops could miss the bottleneck).
 *   - base_rtt_ns == 0 selects the thesis' fallback for an unknown tau: the
 *     minimum RTT observed by the flow, clamped to [1 us, lumen_ptcp_tau_max]
 *     (LUMEN_PTCP_DEFAULT_BASE_RTT_NS is used for the initial window until
 *     the first sample). The minimum is windowed, as BBR's min_rtt: over
 *     the last LUMEN_PTCP_TAU_WINDOW_NS (10 s), kept as the minima of two
 *     halves (lumen_ptcp_track_tau). A lifetime minimum would never
 *     forget a path that is gone: after a route change that lengthens the
 *     RTT past LUMEN_PTCP_RTT_GUARD of the old tau, the RTT guard would
 *     hold the window near beta for the rest of the flow. With the window,
 *     the new path's RTT becomes tau within 10 s; a shorter one at once.
 */
#ifndef LUMEN_POWERTCP_H
#define LUMEN_POWERTCP_H

#include "types.h"
#include "int_option.h"
#include "hpcc.h"

/* ---------------------------------------------------------------------- */
/* Fixed point and limits                                                  */

#define LUMEN_PTCP_SHIFT 16
#define LUMEN_PTCP_ONE (1ull << LUMEN_PTCP_SHIFT)
/* Floor of the power used as a divisor: 0.01 (thesis code uses the same). */
#define LUMEN_PTCP_POWER_MIN (LUMEN_PTCP_ONE / 100)
/* Ceiling of any power sample: 65536x the equilibrium. */
#define LUMEN_PTCP_POWER_MAX (LUMEN_PTCP_ONE << 16)
/* Ceilings of the two factors of the per-hop power. */
#define LUMEN_PTCP_CURRENT_MAX (LUMEN_PTCP_ONE << 10)
#define LUMEN_PTCP_VOLTAGE_MAX (LUMEN_PTCP_ONE << 14)
/* Largest window the core will hold: 1 GiB. */
#define LUMEN_PTCP_MAX_CWND_BYTES (1ull << 30)
#define LUMEN_PTCP_MIN_CWND_SEGS 2
/* RTT floor, in base RTTs, above which INT claiming less is overridden. */
#define LUMEN_PTCP_RTT_GUARD 8
/* window of the tracked tau's minimum (base_rtt_ns == 0), as BBR's min_rtt */
#define LUMEN_PTCP_TAU_WINDOW_NS 10000000000ull
/*
 * Host time between two records of a hop beyond which their INT delta is
 * not used: version 1's (lumen_int_dt_max_ns gives each version's).
 */
#define LUMEN_PTCP_INT_GAP_MAX_NS ((__u64)LUMEN_INT_DT_MAX_TICKS << LUMEN_INT_TS_UNIT_SHIFT)

/* ---------------------------------------------------------------------- */
/* Parameters                                                              */

#define LUMEN_PTCP_DEFAULT_GAMMA 58982 /* 0.9 in Q16, thesis [L630] */
#define LUMEN_PTCP_DEFAULT_EXPECTED_FLOWS 10 /* thesis gives no number */
#define LUMEN_PTCP_DEFAULT_HOST_BW_MBPS 25000 /* 25 Gbit/s, thesis eval */
#define LUMEN_PTCP_DEFAULT_BASE_RTT_NS 20000ull /* 20 us, thesis Fig. 2.3 */

#define LUMEN_PTCP_GAMMA_MIN (LUMEN_PTCP_ONE / 100) /* 0.01 */
#define LUMEN_PTCP_GAMMA_MAX LUMEN_PTCP_ONE /* 1.0 */
#define LUMEN_PTCP_HOST_BW_MIN_MBPS 1u
#define LUMEN_PTCP_HOST_BW_MAX_MBPS LUMEN_INT_RATE_MAX_MBPS
#define LUMEN_PTCP_BASE_RTT_MIN_NS 1000ull /* 1 us */
#define LUMEN_PTCP_BASE_RTT_MAX_NS 1000000000ull /* 1 s */
#define LUMEN_PTCP_EXPECTED_FLOWS_MAX 1000000u
#define LUMEN_PTCP_BETA_MAX_BYTES LUMEN_PTCP_MAX_CWND_BYTES

struct lumen_ptcp_params {
	__u32 gamma; /* EWMA weight, Q16, [0.01, 1] */
	__u32 expected_flows; /* N in beta = HostBw*tau/N, [1, 1e6] */
	__u32 beta_bytes; /* additive increase; 0 = derive from N */
	__u32 host_bw_mbps; /* HostBw, [1, 1.6e6] Mbit/s */
	__u64 base_rtt_ns; /* tau, [1 us, 1 s]; 0 = minimum observed RTT */
	struct lumen_hpcc_params hpcc; /* LUMEN_PTCP_MODE_HPCC's law (hpcc.h) */
};

enum lumen_ptcp_param_error {
	LUMEN_PTCP_PARAM_OK = 0,
	LUMEN_PTCP_PARAM_EGAMMA = 1,
	LUMEN_PTCP_PARAM_EFLOWS = 2,
	LUMEN_PTCP_PARAM_EBETA = 3,
	LUMEN_PTCP_PARAM_EHOSTBW = 4,
	LUMEN_PTCP_PARAM_ERTT = 5,
	LUMEN_PTCP_PARAM_EBDP = 6,
	LUMEN_PTCP_PARAM_EHPCC_ETA = 7,
	LUMEN_PTCP_PARAM_EHPCC_STAGE = 8,
	LUMEN_PTCP_PARAM_EHPCC_WAI = 9,
};

LUMEN_INLINE void lumen_ptcp_params_default(struct lumen_ptcp_params *p)
{
	p->gamma = LUMEN_PTCP_DEFAULT_GAMMA;
	p->expected_flows = LUMEN_PTCP_DEFAULT_EXPECTED_FLOWS;
	p->beta_bytes = 0;
	p->host_bw_mbps = LUMEN_PTCP_DEFAULT_HOST_BW_MBPS;
	p->base_rtt_ns = LUMEN_PTCP_DEFAULT_BASE_RTT_NS;
	lumen_hpcc_params_default(&p->hpcc);
}

/* Bytes a link of rate_mbps carries in ns; exact bounds: 1.6e6 * 1e9 < 2^51. */
LUMEN_INLINE __u64 lumen_ptcp_bytes_in(__u32 rate_mbps, __u64 ns)
{
	return lumen_div64((__u64)rate_mbps * ns, 8000);
}

/*
 * Validate a parameter set. Every front end (module parameters, BPF loader,
 * command-line tools) calls this before installing new parameters and keeps
 * the old ones on error. Returns 0 or a negative lumen_ptcp_param_error.
 */
/*
 * Largest tau a flow may use: 1 s, or less when host BDP would exceed the
 * 1 GiB window limit. Bounds the tracked minimum RTT when base_rtt_ns == 0.
 */
LUMEN_INLINE __u64 lumen_ptcp_tau_max(const struct lumen_ptcp_params *p)
{
	__u64 bw = p->host_bw_mbps ? p->host_bw_mbps : 1;

	return lumen_min_u64(LUMEN_PTCP_BASE_RTT_MAX_NS, lumen_div64(LUMEN_PTCP_MAX_CWND_BYTES * 8000, bw));
}

/*
 * HostBw for a rate found at run time (a link speed): rate_mbps if it fits,
 * with p's base RTT, the 1 GiB window limit, else the largest rate that
 * does (at least LUMEN_PTCP_HOST_BW_MIN_MBPS). A tracked tau (base_rtt_ns
 * == 0) is clamped to lumen_ptcp_tau_max() instead, so any rate fits.
 * rate_mbps 0 is taken as LUMEN_PTCP_HOST_BW_MIN_MBPS.
 */
LUMEN_INLINE __u32 lumen_ptcp_fit_host_bw(const struct lumen_ptcp_params *p, __u32 rate_mbps)
{
	__u64 fit;

	rate_mbps = (__u32)lumen_clamp_u64(rate_mbps, LUMEN_PTCP_HOST_BW_MIN_MBPS, LUMEN_PTCP_HOST_BW_MAX_MBPS);
	if (!p->base_rtt_ns)
		return rate_mbps;
	/* bytes = Mbit/s * ns / 8000 <= 2^30: rate <= 2^30 * 8000 / tau */
	fit = lumen_div64(LUMEN_PTCP_MAX_CWND_BYTES * 8000, p->base_rtt_ns);
	return (__u32)lumen_clamp_u64(fit, LUMEN_PTCP_HOST_BW_MIN_MBPS, rate_mbps);
}

/*
 * Validate a parameter set. Every front end (module parameters, BPF loader,
 * command-line tools) calls this before installing new parameters and keeps
 * the old ones on error. Returns 0 or a negative lumen_ptcp_param_error.
 */
LUMEN_INLINE int lumen_ptcp_params_validate(const struct lumen_ptcp_params *p)
{
	if (p->gamma < LUMEN_PTCP_GAMMA_MIN || p->gamma > LUMEN_PTCP_GAMMA_MAX)
		return -LUMEN_PTCP_PARAM_EGAMMA;
	if (p->expected_flows < 1 || p->expected_flows > LUMEN_PTCP_EXPECTED_FLOWS_MAX)
		return -LUMEN_PTCP_PARAM_EFLOWS;
	if (p->beta_bytes > LUMEN_PTCP_BETA_MAX_BYTES)
		return -LUMEN_PTCP_PARAM_EBETA;
	if (p->host_bw_mbps < LUMEN_PTCP_HOST_BW_MIN_MBPS || p->host_bw_mbps > LUMEN_PTCP_HOST_BW_MAX_MBPS)
		return -LUMEN_PTCP_PARAM_EHOSTBW;
	if (p->base_rtt_ns &&
	    (p->base_rtt_ns < LUMEN_PTCP_BASE_RTT_MIN_NS || p->base_rtt_ns > LUMEN_PTCP_BASE_RTT_MAX_NS))
		return -LUMEN_PTCP_PARAM_ERTT;
	/*
	 * The host BDP is the initial window and bounds every window; it must
	 * fit the 1 GiB window limit. A tracked tau (base_rtt_ns == 0) is
	 * clamped to lumen_ptcp_tau_max() instead.
	 */
	if (p->base_rtt_ns && p->base_rtt_ns > lumen_ptcp_tau_max(p))
		return -LUMEN_PTCP_PARAM_EBDP;
	switch (lumen_hpcc_params_validate(&p->hpcc)) {
	case -LUMEN_HPCC_PARAM_EETA:
		return -LUMEN_PTCP_PARAM_EHPCC_ETA;
	case -LUMEN_HPCC_PARAM_ESTAGE:
		return -LUMEN_PTCP_PARAM_EHPCC_STAGE;
	case -LUMEN_HPCC_PARAM_EWAI:
		return -LUMEN_PTCP_PARAM_EHPCC_WAI;
	default:
		return 0;
	}
}

LUMEN_INLINE const char *lumen_ptcp_param_strerror(int err)
{
	switch (err < 0 ? -err : err) {
	case LUMEN_PTCP_PARAM_OK:
		return "ok";
	case LUMEN_PTCP_PARAM_EGAMMA:
		return "gamma must be within [0.01, 1] (Q16: [655, 65536])";
	case LUMEN_PTCP_PARAM_EFLOWS:
		return "expected_flows must be within [1, 1000000]";
	case LUMEN_PTCP_PARAM_EBETA:
		return "beta must be at most 1 GiB";
	case LUMEN_PTCP_PARAM_EHOSTBW:
		return "host bandwidth must be within [1, 1600000] Mbit/s";
	case LUMEN_PTCP_PARAM_ERTT:
		return "base RTT must be 0 (auto) or within [1 us, 1 s]";
	case LUMEN_PTCP_PARAM_EBDP:
		return "host bandwidth x base RTT exceeds the 1 GiB window limit";
	case LUMEN_PTCP_PARAM_EHPCC_ETA:
		return lumen_hpcc_param_strerror(LUMEN_HPCC_PARAM_EETA);
	case LUMEN_PTCP_PARAM_EHPCC_STAGE:
		return lumen_hpcc_param_strerror(LUMEN_HPCC_PARAM_ESTAGE);
	case LUMEN_PTCP_PARAM_EHPCC_WAI:
		return lumen_hpcc_param_strerror(LUMEN_HPCC_PARAM_EWAI);
	default:
		return "unknown parameter error";
	}
}

/* ---------------------------------------------------------------------- */
/* Per-flow state                                                          */

enum lumen_ptcp_mode {
	LUMEN_PTCP_MODE_INT = 0, /* PowerTCP: INT-fed, per-ACK updates (C2) */
	LUMEN_PTCP_MODE_THETA = 1, /* theta-PowerTCP: RTT-fed, per-RTT updates */
	LUMEN_PTCP_MODE_HPCC = 2, /* HPCC (hpcc.h): INT-fed, the same machinery */
};
#define LUMEN_PTCP_MODES 3

/* The modes that read INT: PowerTCP and HPCC. */
LUMEN_INLINE int lumen_ptcp_mode_int_fed(__u32 mode)
{
	return mode == LUMEN_PTCP_MODE_INT || mode == LUMEN_PTCP_MODE_HPCC;
}

/* What lumen_ptcp_on_ack() did with one ACK. */
enum lumen_ptcp_result {
	LUMEN_PTCP_HELD = 0, /* window unchanged */
	LUMEN_PTCP_UPDATED_INT = 1, /* updated from INT power */
	LUMEN_PTCP_UPDATED_RTT = 2, /* updated from RTT power */
};

struct lumen_ptcp_stats {
	__u32 acks;
	__u32 int_updates; /* window updates from INT */
	__u32 rtt_updates; /* window updates from RTT (theta mode) */
	__u32 fallback_updates; /* INT mode, updated from RTT: no INT */
	__u32 int_missing; /* INT mode, ACK without INT hops */
	__u32 int_unusable; /* INT mode, an echo that gave no sample: no INT */
	__u32 rtt_guard; /* INT power overridden by a far higher RTT power */
	__u32 int_path_changes; /* hop count or option version changed, or a rate code of 0: re-baselined */
	__u32 int_stale; /* a hop delta was stale or implausible */
	__u32 int_duplicate; /* same INT as the previous ACK (dt == 0) */
	__u32 int_overflow; /* echo flagged more hops than slots */
	__u32 int_gap; /* echoes further apart than LUMEN_PTCP_INT_GAP_MAX_NS */
	__u32 loss_cuts; /* windows halved on entering loss recovery (TCP binding) */
	__u32 loss_undos; /* cuts undone: the loss was spurious (TCP binding) */
	__u32 int_rate_changes; /* a hop's rate changed (a circuit came or went): one ACK without a sample */
};

/*
 * The per-flow counts every shell exports for one flow (the module's
 * /proc/net/powertcp_flows, 'lumen cc status'), in their order there:
 * X(field of struct lumen_ptcp_stats, exported name).
 */
#define LUMEN_PTCP_FLOW_COUNTS(X)                                                                                      \
	X(acks, "acks")                                                                                                \
	X(int_updates, "int_updates")                                                                                  \
	X(rtt_updates, "rtt_updates")                                                                                  \
	X(fallback_updates, "fallback_updates")                                                                        \
	X(int_missing, "no_int")                                                                                       \
	X(int_unusable, "int_unusable")                                                                                \
	X(int_gap, "int_gap")                                                                                          \
	X(int_stale, "int_stale")                                                                                      \
	X(int_duplicate, "int_duplicate")                                                                              \
	X(int_path_changes, "int_path_changes")                                                                        \
	X(rtt_guard, "rtt_guard")                                                                                      \
	X(loss_cuts, "loss_cuts")                                                                                      \
	X(loss_undos, "loss_undos")

/*
 * GETCWND history: (sequence, window) records. Record k says that data from
 * seq onwards was sent while the window was cwnd; a new record is taken
 * whenever snd_nxt has advanced by 1/LUMEN_PTCP_CWND_HIST of a window, so the
 * history spans about one RTT of transmissions.
 */
#define LUMEN_PTCP_CWND_HIST 8

struct lumen_ptcp_cwnd_rec {
	__u32 seq;
	__u32 cwnd; /* bytes, < 2^30 */
};

/* Loss response of the TCP binding (lumen/powertcp_ack.h, "Loss and recovery"). */
struct lumen_ptcp_loss {
	__u64 ceiling_bytes; /* window ceiling left by the last cut; 0 = none */
	__u64 ceiling_limit_bytes; /* where the ceiling goes: host BDP + beta at the cut */
	__u64 ceiling_beta_bytes; /* the ceiling's largest step: beta at the cut */
	__u64 undo_cwnd_bytes; /* the window before the last cut; 0 = no undo */
	__u32 delivered; /* tcp_sock.delivered at the previous ACK */
	__u32 prr_delivered0; /* tcp_sock.delivered when the episode began */
	__u32 prr_out0; /* tcp_sock.data_segs_out when the episode began */
	__u32 prr_recover_fs; /* PRR's RecoverFS: packets out then, >= 1 */
	__u8 phase; /* enum lumen_ptcp_loss_phase */
};

struct lumen_ptcp {
	__u64 cwnd_bytes;
	__u64 pacing_rate; /* bytes/s */
	__u64 smooth_power; /* INT power EWMA, Q16; 0 = no sample yet */
	__u64 smooth_rtt_power; /* RTT power EWMA, Q16; 0 = no sample yet */
	__u64 last_power; /* Q16, last unsmoothed sample (diagnostics) */
	__u64 old_cwnd_bytes; /* cwnd_old of the last update (diagnostics) */
	__u64 tau_ns; /* base RTT in use; 0 = auto and no sample yet */
	/* tracked tau (base_rtt_ns == 0): RTT minima of two half windows */
	__u64 tau_cur_ns; /* of the half that began at tau_half_ns */
	__u64 tau_prev_ns; /* of the half before it */
	__u64 tau_half_ns; /* host time the current half began */

	/* theta: previous RTT sample (every ACK) and update rounds (per RTT) */
	__u64 prev_rtt_ns;
	__u64 prev_rtt_time_ns;
	__u32 rtt_round_end; /* no RTT-driven update before snd_una passes this */
	/* RTT floor (liveness guard): minimum RTT per window of one RTT */
	__u64 rtt_win_start_ns; /* 0 = no window open */
	__u64 rtt_win_min_ns; /* minimum of the open window */
	__u64 rtt_floor_ns; /* minimum of the last complete window; 0 = none */
	__u32 last_snd_una; /* snd_una of the previous ACK */

	__u32 hist_head; /* index of the newest record */
	struct lumen_ptcp_cwnd_rec hist[LUMEN_PTCP_CWND_HIST];

	/* INT history: each hop's last record and the host time it came */
	struct lumen_int_hop prev_hops[LUMEN_INT_MAX_HOPS];
	__u64 prev_hop_time_ns[LUMEN_INT_MAX_HOPS];
	__u8 prev_hop_valid; /* bit i: prev_hops[i] holds a record */
	__u8 prev_version; /* the option version of those records */
	__u8 prev_hop_count; /* hops on the path; 0 = none */
	__u8 int_in_round; /* a usable INT sample since the RTT round began */
	__u8 have_rtt; /* prev_rtt_* valid */
	__u8 mode; /* enum lumen_ptcp_mode */
	__u8 max_hop; /* index of the hop that gave the last INT power */

	struct lumen_ptcp_loss loss; /* the TCP binding's (lumen/powertcp_ack.h) */
	struct lumen_hpcc hpcc; /* HPCC mode: reference window and stage */

	struct lumen_ptcp_stats stats;
};

/* One ACK, as the front end sees it after the kernel processed it. */
struct lumen_ptcp_ack {
	__u64 now_ns; /* ACK arrival time, host clock */
	__u64 rtt_ns; /* RTT sample carried by this ACK; 0 = none */
	__u32 snd_una; /* after this ACK */
	__u32 snd_nxt;
	__u32 mss; /* bytes; 0 is treated as 1 */
};

/* tau the flow uses now: configured, tracked minimum, or the default. */
LUMEN_INLINE __u64 lumen_ptcp_tau(const struct lumen_ptcp *st, const struct lumen_ptcp_params *p)
{
	if (p->base_rtt_ns)
		return p->base_rtt_ns;
	return st->tau_ns ? st->tau_ns : LUMEN_PTCP_DEFAULT_BASE_RTT_NS;
}

LUMEN_INLINE __u64 lumen_ptcp_host_bdp(const struct lumen_ptcp_params *p, __u64 tau_ns)
{
	return lumen_ptcp_bytes_in(p->host_bw_mbps, tau_ns); /* < 2^30, validated */
}

/* beta = HostBw * tau / N unless configured; at least one byte. */
LUMEN_INLINE __u64 lumen_ptcp_beta(const struct lumen_ptcp_params *p, __u64 tau_ns)
{
	__u64 flows = p->expected_flows ? p->expected_flows : 1;

	if (p->beta_bytes)
		return p->beta_bytes;
	return lumen_max_u64(lumen_div64(lumen_ptcp_host_bdp(p, tau_ns), flows), 1);
}

LUMEN_INLINE __u64 lumen_ptcp_clamp_cwnd(const struct lumen_ptcp_params *p, __u64 tau_ns, __u32 mss, __u64 cwnd)
{
	__u64 hi = lumen_ptcp_host_bdp(p, tau_ns) + lumen_ptcp_beta(p, tau_ns);
	__u64 lo = (__u64)(mss ? mss : 1) * LUMEN_PTCP_MIN_CWND_SEGS;

	hi = lumen_min_u64(hi, LUMEN_PTCP_MAX_CWND_BYTES);
	return lumen_max_u64(lumen_min_u64(cwnd, hi), lo);
}

/* rate = cwnd / tau in bytes/s; cwnd < 2^30, 1e9 < 2^30: no overflow. */
LUMEN_INLINE __u64 lumen_ptcp_pacing_rate(__u64 cwnd_bytes, __u64 tau_ns)
{
	return lumen_div64(cwnd_bytes * 1000000000ull, tau_ns);
}

/* Forget the window history: everything from snd_nxt on is sent with cwnd. */
LUMEN_INLINE void lumen_ptcp_reset_history(struct lumen_ptcp *st, __u32 snd_nxt)
{
	__u32 i;

	for (i = 0; i < LUMEN_PTCP_CWND_HIST; i++) {
		st->hist[i].seq = snd_nxt;
		st->hist[i].cwnd = (__u32)st->cwnd_bytes;
	}
	st->hist_head = 0;
	st->old_cwnd_bytes = st->cwnd_bytes;
}

/*
 * GETCWND(ack.seq): the window in force when the last acknowledged byte
 * (snd_una - 1) was sent: the newest record taken before it; the oldest
 * record when the history does not reach back that far.
 */
LUMEN_INLINE __u64 lumen_ptcp_cwnd_at(const struct lumen_ptcp *st, __u32 snd_una)
{
	__u32 i, idx = st->hist_head;

	for (i = 0; i < LUMEN_PTCP_CWND_HIST; i++) {
		idx = (st->hist_head + LUMEN_PTCP_CWND_HIST - i) % LUMEN_PTCP_CWND_HIST;
		if (lumen_seq_after(snd_una, st->hist[idx].seq))
			break;
	}
	return st->hist[idx].cwnd;
}

/* UPDATEOLD: record the window every 1/8 window of sent data. */
LUMEN_INLINE void lumen_ptcp_remember(struct lumen_ptcp *st, __u32 snd_nxt)
{
	__u32 head = st->hist_head % LUMEN_PTCP_CWND_HIST;
	__u32 step = (__u32)(st->cwnd_bytes / LUMEN_PTCP_CWND_HIST);

	if (!lumen_seq_after(snd_nxt, st->hist[head].seq + step))
		return;
	head = (head + 1) % LUMEN_PTCP_CWND_HIST;
	st->hist[head].seq = snd_nxt;
	st->hist[head].cwnd = (__u32)st->cwnd_bytes;
	st->hist_head = head;
}

/*
 * After idle (CA_EVENT_CWND_RESTART / TX_START): the history no longer
 * describes the network. Keep the window, forget power, INT, RTT and window
 * history, and start a new round at snd_nxt.
 */
LUMEN_INLINE void lumen_ptcp_restart(struct lumen_ptcp *st, __u32 snd_nxt)
{
	st->smooth_power = 0;
	st->smooth_rtt_power = 0;
	st->prev_hop_count = 0;
	st->prev_hop_valid = 0;
	st->int_in_round = 0;
	st->have_rtt = 0;
	st->rtt_win_start_ns = 0;
	st->rtt_win_min_ns = 0;
	st->rtt_floor_ns = 0;
	st->rtt_round_end = snd_nxt;
	lumen_ptcp_reset_history(st, snd_nxt);
}

/*
 * Start a flow: one host BDP, no power sample, no history (a restart from
 * that window, plus what a restart keeps: INT baselines and counters).
 * snd_nxt is the first sequence number the flow will send.
 */
LUMEN_INLINE void lumen_ptcp_init(struct lumen_ptcp *st, const struct lumen_ptcp_params *p, enum lumen_ptcp_mode mode,
				  __u32 snd_nxt, __u32 mss)
{
	__u64 tau;
	__u32 i;

	st->tau_ns = 0;
	st->tau_cur_ns = 0;
	st->tau_prev_ns = 0;
	st->tau_half_ns = 0;
	st->mode = (__u8)mode;
	tau = lumen_ptcp_tau(st, p);
	st->cwnd_bytes = lumen_ptcp_clamp_cwnd(p, tau, mss, lumen_ptcp_host_bdp(p, tau));
	st->pacing_rate = lumen_ptcp_pacing_rate(st->cwnd_bytes, tau);
	lumen_hpcc_reset(&st->hpcc, st->cwnd_bytes); /* HPCC: W_init, line rate */
	lumen_ptcp_restart(st, snd_nxt);
	st->last_power = 0;
	st->prev_rtt_ns = 0;
	st->prev_rtt_time_ns = 0;
	st->last_snd_una = snd_nxt;
	for (i = 0; i < LUMEN_INT_MAX_HOPS; i++) {
		st->prev_hops[i].ts = 0;
		st->prev_hops[i].tx = 0;
		st->prev_hops[i].qlen = 0;
		st->prev_hops[i].rate = 0;
		st->prev_hops[i].pad = 0;
		st->prev_hop_time_ns[i] = 0;
	}
	st->prev_hop_valid = 0;
	st->prev_version = 0;
	st->max_hop = 0;
	/* constant sizes: clang stores them inline for BPF, which has no memset */
	__builtin_memset(&st->loss, 0, sizeof(st->loss));
	st->loss.prr_recover_fs = 1;
	__builtin_memset(&st->stats, 0, sizeof(st->stats));
}

/*
 * Impose a window from outside the control law (loss recovery, undo, a
 * test's perturbation): it becomes the window of everything sent from
 * snd_nxt on. Clamped like any other window.
 */
LUMEN_INLINE void lumen_ptcp_set_cwnd(struct lumen_ptcp *st, const struct lumen_ptcp_params *p, __u64 cwnd_bytes,
				      __u32 snd_nxt, __u32 mss)
{
	__u64 tau = lumen_ptcp_tau(st, p);

	st->cwnd_bytes = lumen_ptcp_clamp_cwnd(p, tau, mss, cwnd_bytes);
	st->pacing_rate = lumen_ptcp_pacing_rate(st->cwnd_bytes, tau);
	/* HPCC: the next ACK computes W from Wc, which would undo the cut */
	lumen_hpcc_reset(&st->hpcc, st->cwnd_bytes);
	lumen_ptcp_reset_history(st, snd_nxt);
}

/* ---------------------------------------------------------------------- */
/* Power                                                                   */

/*
 * Normalised power of one hop from the difference of two of its records
 * (Alg. 1 lines 11-19, in the unit-free form):
 *   current = lambda / b = (dq + tx) / (b * dt)
 *   voltage = nu / (b*tau) = 1 + q / (b * tau)
 *   power   = current * voltage
 */
LUMEN_INLINE __u64 lumen_ptcp_hop_power(const struct lumen_int_delta *d, __u64 tau_ns)
{
	__u64 arrived, curr, voltage, q, power, link; /* not "current": a kernel macro */

	/* bytes that arrived at the queue during dt; negative is noise (A5) */
	if (d->tx_bytes + d->qlen_bytes > d->qlen_prev_bytes)
		arrived = d->tx_bytes + d->qlen_bytes - d->qlen_prev_bytes;
	else
		arrived = 0;
	arrived = lumen_min_u64(arrived, 1ull << 32);

	q = lumen_min_u64(d->qlen_bytes, 1ull << 31);
	/* (2^31 * 8000) << 16 < 2^60; rate * tau in [1000, 2^21 * 2^30] */
	voltage = LUMEN_PTCP_ONE + lumen_div64((q * 8000) << LUMEN_PTCP_SHIFT, (__u64)d->rate_mbps * tau_ns);
	voltage = lumen_min_u64(voltage, LUMEN_PTCP_VOLTAGE_MAX);

	/* link capacity over dt, in bytes * 8000: rate * dt in [16, 2^21 * 2^22] */
	link = (__u64)d->rate_mbps * d->dt_ns;
	curr = lumen_div64((arrived * 8000) << LUMEN_PTCP_SHIFT, link); /* < 2^61 */
	if (curr > LUMEN_PTCP_CURRENT_MAX)
		return lumen_min_u64((LUMEN_PTCP_CURRENT_MAX * voltage) >> LUMEN_PTCP_SHIFT, LUMEN_PTCP_POWER_MAX);
	if (arrived * 8000 < (1ull << 32)) {
		/*
		 * Common case (arrivals < 512 KiB): arrived * 8000 * voltage < 2^62,
		 * so divide once and keep the full precision of small currents.
		 */
		power = lumen_div64(arrived * 8000 * voltage, link);
	} else {
		/*
		 * Large arrivals: split arrived * 8000 / link into its integer part
		 * (<= 1024, checked above) and a Q20 fraction; the remainder is
		 * < link < 2^43, so remainder << 20 < 2^63 and fraction * voltage
		 * < 2^50. Relative error 2^-20 / current.
		 */
		__u64 whole = lumen_div64(arrived * 8000, link);
		__u64 rem = arrived * 8000 - whole * link;
		__u64 frac = lumen_div64(rem << 20, link);

		power = whole * voltage + ((frac * voltage) >> 20);
	}
	return lumen_min_u64(power, LUMEN_PTCP_POWER_MAX);
}

/*
 * Gamma_smooth = (Gamma_smooth * (tau - dt) + sample * dt) / tau, dt <= tau,
 * seeded by the first sample (A3). Products: 2^32 * 2^30 = 2^62.
 */
LUMEN_INLINE void lumen_ptcp_ewma(__u64 *avg, __u64 sample, __u64 dt_ns, __u64 tau_ns)
{
	__u64 dt = lumen_min_u64(dt_ns, tau_ns);

	if (*avg == 0) {
		*avg = lumen_max_u64(sample, 1);
		return;
	}
	*avg = lumen_div64(*avg * (tau_ns - dt) + sample * dt, tau_ns);
	*avg = lumen_max_u64(*avg, 1);
}

/*
 * A path index the caller checked to be below LUMEN_INT_MAX_HOPS, as a value
 * the BPF verifier sees bounded where it indexes: the compiler may compute
 * an array address from a copy of first + i that the check did not bound,
 * which older verifiers (6.1) refuse. Masked to the next power of two (a
 * no-op for a checked index; the state's arrays are followed by more of the
 * state, so even 7 stays inside it for the verifier), opaque so the mask
 * cannot be dropped.
 */
LUMEN_INLINE __u32 lumen_ptcp_hop_index(__u32 h)
{
	LUMEN_OPAQUE(h);
	return h & 7;
}

/*
 * What the mask relies on: the per-hop arrays it indexes have
 * LUMEN_INT_MAX_HOPS (5) entries, but all the BPF verifier knows of an index
 * from lumen_ptcp_hop_index() is that it is at most 7. It accepts the access
 * only because the 8 entries such an index could reach from the start of
 * each array all lie inside struct lumen_ptcp (the arrays are followed by
 * more of the state). A change to the struct that moves either array
 * closer to its end fails to compile here, instead of having the programs
 * refused at load time.
 */
LUMEN_STATIC_ASSERT(__builtin_offsetof(struct lumen_ptcp, prev_hops) + 8 * sizeof(struct lumen_int_hop) <=
			    sizeof(struct lumen_ptcp),
		    "lumen_ptcp_hop_index(): prev_hops[7] must lie inside struct lumen_ptcp");
LUMEN_STATIC_ASSERT(__builtin_offsetof(struct lumen_ptcp, prev_hop_time_ns) + 8 * sizeof(__u64) <=
			    sizeof(struct lumen_ptcp),
		    "lumen_ptcp_hop_index(): prev_hop_time_ns[7] must lie inside struct lumen_ptcp");

/* A hop sample's result (lumen_ptcp_hop_sample). */
struct lumen_ptcp_hop_out {
	__u64 power; /* normalised power, or HPCC's U: Q16 */
	__u64 dt_ns; /* time between the two records */
	__u32 mode; /* in: enum lumen_ptcp_mode, which metric to compute */
	__u32 pad;
};

/* lumen_ptcp_hop_sample: both records are valid, with different rates */
#define LUMEN_PTCP_HOP_NEW_RATE 16

/*
 * One hop of one ACK: the wraparound-safe delta to the hop's previous record
 * (both of option version ver) and its normalised power. Returns 0, or the
 * lumen_int_delta_error that makes the sample unusable, or
 * LUMEN_PTCP_HOP_NEW_RATE when the hop's rate changed (a record of another
 * byte unit: no delta, see "A change of a hop's rate" above). A BPF subprogram
 * (LUMEN_SUBPROG): inlined five times into the hop loop, it alone took
 * cong_control past the 6.12 verifier's budget of one million instructions
 * (and so has at most five arguments: the results come back in *out).
 */
LUMEN_SUBPROG int lumen_ptcp_hop_sample(const struct lumen_int_hop *prev, const struct lumen_int_hop *cur, __u32 ver,
					__u64 tau_ns, struct lumen_ptcp_hop_out *out)
{
	struct lumen_int_delta d;
	int err;

	if (!prev || !cur || !out) /* LUMEN_SUBPROG: the BPF verifier cannot know */
		return LUMEN_INT_DELTA_ERATE;
	out->power = 0;
	out->dt_ns = 0;
	if (prev->rate != cur->rate && lumen_int_rate_mbps(prev->rate) && lumen_int_rate_mbps(cur->rate))
		return LUMEN_PTCP_HOP_NEW_RATE;
	err = lumen_int_hop_delta_v(prev, cur, ver, &d);
	if (err)
		return err;
	if (out->mode == LUMEN_PTCP_MODE_HPCC)
		out->power = lumen_hpcc_hop_util(&d, tau_ns);
	else
		out->power = lumen_ptcp_hop_power(&d, tau_ns);
	out->dt_ns = d.dt_ns;
	return 0;
}

/*
 * INT power of one ACK: the maximum normalised power over the hops it
 * carries (A1), smoothed. Returns 1 when the window may be updated, 0 when
 * the ACK only re-baselined the history (counted in stats). now_ns is the
 * ACK's host time: a hop whose last record came longer ago than its
 * version's usable dt (lumen_int_dt_max_ns: 1.97 ms in version 1, 126 ms in
 * version 2), or out of order, re-baselines, since the timestamp delta may
 * have wrapped. A partial echo (version 2, in loss recovery: the bottleneck
 * hop alone) samples and updates only the hop it carries; the others keep
 * their records for the next full echo.
 */
LUMEN_INLINE int lumen_ptcp_int_power(struct lumen_ptcp *st, const struct lumen_int_opt *echo, __u64 tau_ns,
				      __u64 now_ns)
{
	/* version 1 (or an option a shell built by hand): the whole path, in order */
	__u32 ver = echo->version == LUMEN_INT_VERSION_WIDE ? LUMEN_INT_VERSION_WIDE : LUMEN_INT_VERSION;
	__u32 count = echo->count, first = 0, hops = echo->count, i;
	__u64 max_power = 0, max_dt = 0, gap_max = lumen_int_dt_max_ns(ver);
	int usable = 1, duplicate = 0, hop_err = 0;

	if (ver == LUMEN_INT_VERSION_WIDE) {
		first = echo->first_hop;
		hops = echo->path_hops;
	}

	if (echo->flags & LUMEN_INT_FLAG_OVERFLOW)
		st->stats.int_overflow++;
	if (hops > LUMEN_INT_MAX_HOPS) {
		hops = LUMEN_INT_MAX_HOPS;
		count = 0; /* a path longer than any option: nothing usable (the parser refuses it) */
	}
	if (first > hops || count > hops - first)
		count = 0; /* records outside the path: nothing usable (the parser refuses these) */

	if (st->prev_hop_count != hops || st->prev_version != ver) {
		if (st->prev_hop_count)
			st->stats.int_path_changes++;
		st->prev_hop_valid = 0;
		usable = 0;
	}
	for (i = 0; i < LUMEN_INT_MAX_HOPS && usable; i++) {
		struct lumen_ptcp_hop_out hs = {0, 0, st->mode, 0};
		__u32 h = first + i;
		int err;

		if (i >= count || h >= LUMEN_INT_MAX_HOPS)
			break;
		h = lumen_ptcp_hop_index(h);
		if (!(st->prev_hop_valid & (1u << h))) {
			usable = 0; /* this hop's first record since the path changed */
			break;
		}
		if (now_ns < st->prev_hop_time_ns[h] || now_ns - st->prev_hop_time_ns[h] >= gap_max) {
			st->stats.int_gap++;
			usable = 0;
			break;
		}
		err = lumen_ptcp_hop_sample(&st->prev_hops[h], &echo->hops[i], ver, tau_ns, &hs);
		if (err == LUMEN_INT_DELTA_ETIME && echo->hops[i].ts == st->prev_hops[h].ts) {
			duplicate = 1;
			break;
		}
		if (err) {
			/* counted after the loop: one branch per error kind, not per hop */
			hop_err = err;
			usable = 0;
			break;
		}
		/*
		 * The first usable hop always sets max_dt (dt > 0): a power
		 * of 0 (idle link, quantised tx) is a real sample and must
		 * pull the EWMA down with weight dt/tau, not weight 0.
		 */
		if (hs.power > max_power || max_dt == 0) {
			max_power = hs.power;
			max_dt = hs.dt_ns;
			st->max_hop = (__u8)h;
		}
	}
	if (hop_err == LUMEN_PTCP_HOP_NEW_RATE)
		st->stats.int_rate_changes++; /* the next record samples against this one */
	else if (hop_err == LUMEN_INT_DELTA_ERATE)
		st->stats.int_path_changes++;
	else if (hop_err)
		st->stats.int_stale++;
	if (duplicate) {
		/* the same dequeue echoed again (delayed/duplicate ACK): no news */
		st->stats.int_duplicate++;
		return 0;
	}
	for (i = 0; i < LUMEN_INT_MAX_HOPS; i++) {
		__u32 h = first + i;

		if (i >= count || h >= LUMEN_INT_MAX_HOPS)
			break;
		h = lumen_ptcp_hop_index(h);
		st->prev_hops[h] = echo->hops[i];
		st->prev_hop_time_ns[h] = now_ns;
		st->prev_hop_valid |= (__u8)(1u << h);
	}
	st->prev_hop_count = (__u8)hops;
	st->prev_version = (__u8)ver;
	if (!usable || count == 0)
		return 0;
	st->last_power = max_power;
	lumen_ptcp_ewma(&st->smooth_power, max_power, max_dt, tau_ns);
	return 1;
}

/*
 * theta-PowerTCP power (Alg. 2 lines 11-14), on every ACK with an RTT
 * sample: (1 + dRTT/dt) * RTT / tau between consecutive samples, smoothed
 * into smooth_rtt_power with weight dt/tau. The per-ACK gradient is noisy,
 * but its weighted sum telescopes to (RTT_now - RTT_then) / tau, so the
 * EWMA sees the gradient over the last tau (B2). Returns 1 when a sample
 * was taken. The caller has checked that ack->rtt_ns != 0.
 */
LUMEN_INLINE int lumen_ptcp_rtt_sample(struct lumen_ptcp *st, const struct lumen_ptcp_ack *ack, __u64 tau_ns)
{
	__u64 rtt = lumen_min_u64(ack->rtt_ns, 1ull << 32); /* 4.3 s */
	__u64 dt, grad, slope, power;

	if (!st->have_rtt) {
		st->prev_rtt_ns = rtt;
		st->prev_rtt_time_ns = ack->now_ns;
		st->have_rtt = 1;
		return 0;
	}
	if (ack->now_ns <= st->prev_rtt_time_ns)
		return 0; /* no time passed (same batch, clock step back): no gradient */
	dt = lumen_min_u64(ack->now_ns - st->prev_rtt_time_ns, 1ull << 40);
	/* gradient 1 + dRTT/dt in Q16, without signed division (B3) */
	if (rtt >= st->prev_rtt_ns) {
		slope = lumen_div64((rtt - st->prev_rtt_ns) << LUMEN_PTCP_SHIFT, dt); /* < 2^48 */
		grad = LUMEN_PTCP_ONE + lumen_min_u64(slope, LUMEN_PTCP_CURRENT_MAX);
	} else {
		slope = lumen_div64((st->prev_rtt_ns - rtt) << LUMEN_PTCP_SHIFT, dt);
		grad = slope >= LUMEN_PTCP_ONE ? 0 : LUMEN_PTCP_ONE - slope;
	}
	grad = lumen_min_u64(grad, LUMEN_PTCP_CURRENT_MAX);
	/* grad * rtt < 2^26 * 2^32 = 2^58 */
	power = lumen_min_u64(lumen_div64(grad * rtt, tau_ns), LUMEN_PTCP_POWER_MAX);
	lumen_ptcp_ewma(&st->smooth_rtt_power, power, dt, tau_ns);
	if (st->mode == LUMEN_PTCP_MODE_THETA)
		st->last_power = power;
	st->prev_rtt_ns = rtt;
	st->prev_rtt_time_ns = ack->now_ns;
	return 1;
}

/*
 * Tracked tau: the minimum RTT over the last LUMEN_PTCP_TAU_WINDOW_NS, from
 * the minima of the current and the previous half window. A sample below
 * tau takes effect at once; a minimum is forgotten one to two halves after
 * its half ended. A gap without samples longer than a whole window (an
 * idle flow) forgets both halves. now_ns is host time, monotonic.
 */
LUMEN_INLINE void lumen_ptcp_track_tau(struct lumen_ptcp *st, __u64 rtt_ns, __u64 now_ns)
{
	__u64 half = LUMEN_PTCP_TAU_WINDOW_NS / 2, since = now_ns - st->tau_half_ns;

	if (!st->tau_ns || since >= 2 * half) {
		st->tau_prev_ns = rtt_ns;
		st->tau_cur_ns = rtt_ns;
		st->tau_half_ns = now_ns;
	} else if (since >= half) {
		st->tau_prev_ns = st->tau_cur_ns;
		st->tau_cur_ns = rtt_ns;
		st->tau_half_ns = now_ns;
	} else if (rtt_ns < st->tau_cur_ns) {
		st->tau_cur_ns = rtt_ns;
	}
	st->tau_ns = lumen_min_u64(st->tau_prev_ns, st->tau_cur_ns);
}

/*
 * RTT floor for the liveness guard: the minimum RTT sample over a window as
 * long as that minimum, so a floor means "no sample of the last RTT was
 * lower". A clock step back restarts the window.
 */
LUMEN_INLINE void lumen_ptcp_rtt_floor(struct lumen_ptcp *st, const struct lumen_ptcp_ack *ack)
{
	__u64 rtt = lumen_min_u64(ack->rtt_ns, 1ull << 32);

	if (st->rtt_win_min_ns == 0 || rtt < st->rtt_win_min_ns)
		st->rtt_win_min_ns = rtt;
	if (st->rtt_win_start_ns == 0 || ack->now_ns < st->rtt_win_start_ns) {
		st->rtt_win_start_ns = ack->now_ns ? ack->now_ns : 1;
		return;
	}
	if (ack->now_ns - st->rtt_win_start_ns >= st->rtt_win_min_ns) {
		st->rtt_floor_ns = st->rtt_win_min_ns;
		st->rtt_win_min_ns = 0;
		st->rtt_win_start_ns = ack->now_ns;
	}
}

/* Alg. 2 lines 17-19, 23: RTT-driven window updates happen once per RTT. */
LUMEN_INLINE int lumen_ptcp_rtt_round_done(struct lumen_ptcp *st, const struct lumen_ptcp_ack *ack)
{
	if (lumen_seq_after(st->rtt_round_end, ack->snd_una))
		return 0;
	st->rtt_round_end = ack->snd_nxt;
	return 1;
}

/* ---------------------------------------------------------------------- */
/* Window                                                                  */

/*
 * The control law's target, cwnd_old / power + beta (Alg. 1 line 27, with A2
 * resolved). cwnd_old < 2^30, so cwnd_old << 16 < 2^46 and the quotient is
 * < 2^46 / 655 < 2^37.
 */
LUMEN_INLINE __u64 lumen_ptcp_target(const struct lumen_ptcp_params *p, __u64 tau_ns, __u64 power, __u64 cwnd_old)
{
	power = lumen_max_u64(power, LUMEN_PTCP_POWER_MIN);
	return lumen_div64(cwnd_old << LUMEN_PTCP_SHIFT, power) + lumen_ptcp_beta(p, tau_ns);
}

/* cwnd = gain * target + (1 - gain) * cwnd; gain <= 2^16: < 2^54. */
LUMEN_INLINE __u64 lumen_ptcp_blend(__u64 gain, __u64 target, __u64 cwnd)
{
	return (gain * target + (LUMEN_PTCP_ONE - gain) * cwnd + LUMEN_PTCP_ONE / 2) >> LUMEN_PTCP_SHIFT;
}

/*
 * cwnd = gamma * (cwnd_old / power + beta) + (1 - gamma) * cwnd, clamped:
 * one full step of the control law (Eq. 2.20), as theta-PowerTCP takes once
 * per RTT.
 */
LUMEN_INLINE __u64 lumen_ptcp_update_window(const struct lumen_ptcp_params *p, __u64 tau_ns, __u32 mss, __u64 power,
					    __u64 cwnd_old, __u64 cwnd)
{
	__u64 target = lumen_ptcp_target(p, tau_ns, power, cwnd_old);

	return lumen_ptcp_clamp_cwnd(p, tau_ns, mss, lumen_ptcp_blend(p->gamma, target, cwnd));
}

/*
 * PowerTCP's per-ACK step: move cwnd gamma * acked/cwnd of the way to
 * target, so that the ACKs of one window (one RTT) together make one gamma
 * step (see "per-ACK gain" in the header comment). The fraction acked/cwnd
 * is kept in Q24 so small ACKs on large windows keep their weight; target is
 * capped at the 1 GiB window limit. Bounds: (2^30 << 24) = 2^54 before the
 * division, 2^30 * 2^24 = 2^54 and 2^30 * 2^16 = 2^46 in the step.
 */
LUMEN_INLINE __u64 lumen_ptcp_step_toward(__u64 gamma, __u64 acked, __u64 cwnd, __u64 target)
{
	__u64 frac, diff, step;

	cwnd = lumen_clamp_u64(cwnd, 1, LUMEN_PTCP_MAX_CWND_BYTES);
	target = lumen_min_u64(target, LUMEN_PTCP_MAX_CWND_BYTES);
	frac = lumen_div64(lumen_min_u64(acked, cwnd) << 24, cwnd);
	diff = target >= cwnd ? target - cwnd : cwnd - target;
	step = (diff * frac + (1ull << 23)) >> 24;
	step = (step * gamma + LUMEN_PTCP_ONE / 2) >> LUMEN_PTCP_SHIFT;
	return target >= cwnd ? cwnd + step : cwnd - step;
}

/*
 * INT mode: whether this ACK's echo gives a usable INT sample; counts the
 * echoes that do not (no echo or no hops: int_missing; an echo that gave no
 * sample: int_unusable).
 */
LUMEN_INLINE int lumen_ptcp_take_int(struct lumen_ptcp *st, const struct lumen_ptcp_ack *ack,
				     const struct lumen_int_opt *echo, __u64 tau)
{
	if (!echo || !echo->count) {
		st->stats.int_missing++;
		return 0;
	}
	if (lumen_ptcp_int_power(st, echo, tau, ack->now_ns))
		return 1;
	st->stats.int_unusable++;
	return 0;
}

/*
 * The power an INT update uses: the INT power, unless the RTT guard (see
 * "Liveness" in the header comment) overrides it with RTT floor / tau.
 * rtt_floor < 2^33, so rtt_floor << 16 < 2^49.
 */
LUMEN_INLINE __u64 lumen_ptcp_guarded_power(struct lumen_ptcp *st, __u64 tau_ns)
{
	__u64 floor_power;

	if (st->rtt_floor_ns < LUMEN_PTCP_RTT_GUARD * tau_ns)
		return st->smooth_power;
	floor_power = lumen_min_u64(lumen_div64(st->rtt_floor_ns << LUMEN_PTCP_SHIFT, tau_ns), LUMEN_PTCP_POWER_MAX);
	if (floor_power <= st->smooth_power)
		return st->smooth_power;
	st->stats.rtt_guard++;
	return floor_power;
}

/*
 * HPCC's window for one ACK (lumen/hpcc.h, NewAck): W from the reference
 * window and U (INT, guarded, or the RTT fallback's estimate), clamped like
 * every window; on the first ACK of a new round the reference moves to it.
 */
LUMEN_INLINE __u64 lumen_ptcp_hpcc_window(struct lumen_ptcp *st, const struct lumen_ptcp_params *p, __u64 tau,
					  __u32 mss, __u64 u, int new_round)
{
	__u64 wai = lumen_hpcc_wai(&p->hpcc, lumen_ptcp_host_bdp(p, tau), p->expected_flows);
	int multiplicative = 0;
	__u64 w;

	st->hpcc.wc_bytes = lumen_ptcp_clamp_cwnd(p, tau, mss, st->hpcc.wc_bytes);
	w = lumen_hpcc_compute_wind(&st->hpcc, &p->hpcc, u, wai, &multiplicative);
	w = lumen_ptcp_clamp_cwnd(p, tau, mss, w);
	if (new_round)
		lumen_hpcc_commit(&st->hpcc, w, multiplicative);
	return w;
}

/*
 * Process one ACK (Alg. 1 / Alg. 2 newAck). echo is the INT echo the ACK
 * carried, or NULL. The new window and pacing rate are left in st.
 */
LUMEN_INLINE enum lumen_ptcp_result lumen_ptcp_on_ack(struct lumen_ptcp *st, const struct lumen_ptcp_params *p,
						      const struct lumen_ptcp_ack *ack,
						      const struct lumen_int_opt *echo)
{
	enum lumen_ptcp_result result = LUMEN_PTCP_HELD;
	__u64 tau, power = 0, acked = 0;
	int int_ok = 0, new_round = 0;

	st->stats.acks++;
	if (lumen_seq_after(ack->snd_una, st->last_snd_una)) {
		acked = ack->snd_una - st->last_snd_una;
		st->last_snd_una = ack->snd_una;
	}
	/* tau fallback: the minimum RTT observed (thesis [L616]), windowed */
	if (!p->base_rtt_ns && ack->rtt_ns)
		lumen_ptcp_track_tau(st,
				     lumen_clamp_u64(ack->rtt_ns, LUMEN_PTCP_BASE_RTT_MIN_NS, lumen_ptcp_tau_max(p)),
				     ack->now_ns);
	tau = lumen_ptcp_tau(st, p);

	/* the RTT estimator runs in both modes, so a fallback starts warm */
	if (ack->rtt_ns) {
		lumen_ptcp_rtt_sample(st, ack, tau);
		lumen_ptcp_rtt_floor(st, ack);
	}

	if (lumen_ptcp_mode_int_fed(st->mode))
		int_ok = lumen_ptcp_take_int(st, ack, echo, tau);
	if (int_ok) {
		power = lumen_ptcp_guarded_power(st, tau);
		result = LUMEN_PTCP_UPDATED_INT;
		/* keep the rounds aligned; a new round has had no INT yet */
		new_round = lumen_ptcp_rtt_round_done(st, ack);
		st->int_in_round = !new_round;
	} else if (st->smooth_rtt_power && lumen_ptcp_rtt_round_done(st, ack)) {
		/* theta-PowerTCP; or an INT mode after a round without usable INT */
		if (!st->int_in_round) {
			power = st->smooth_rtt_power;
			result = LUMEN_PTCP_UPDATED_RTT;
			new_round = 1;
		}
		st->int_in_round = 0;
	}

	if (result != LUMEN_PTCP_HELD) {
		/* GETCWND: the window in force when the acked data was sent */
		st->old_cwnd_bytes = lumen_ptcp_cwnd_at(st, ack->snd_una);
		if (st->mode == LUMEN_PTCP_MODE_HPCC) {
			st->cwnd_bytes = lumen_ptcp_hpcc_window(st, p, tau, ack->mss, power, new_round);
		} else if (result == LUMEN_PTCP_UPDATED_INT) {
			__u64 target = lumen_ptcp_target(p, tau, power, st->old_cwnd_bytes);

			st->cwnd_bytes = lumen_ptcp_clamp_cwnd(
				p, tau, ack->mss, lumen_ptcp_step_toward(p->gamma, acked, st->cwnd_bytes, target));
		} else {
			st->cwnd_bytes =
				lumen_ptcp_update_window(p, tau, ack->mss, power, st->old_cwnd_bytes, st->cwnd_bytes);
		}
		if (result == LUMEN_PTCP_UPDATED_INT)
			st->stats.int_updates++;
		else if (lumen_ptcp_mode_int_fed(st->mode))
			st->stats.fallback_updates++;
		else
			st->stats.rtt_updates++;
	} else {
		/* parameters may have changed at runtime: keep within bounds */
		st->cwnd_bytes = lumen_ptcp_clamp_cwnd(p, tau, ack->mss, st->cwnd_bytes);
	}
	st->pacing_rate = lumen_ptcp_pacing_rate(st->cwnd_bytes, tau);
	lumen_ptcp_remember(st, ack->snd_nxt);
	return result;
}

#endif /* LUMEN_POWERTCP_H */
