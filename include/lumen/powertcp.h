/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * lumen/powertcp.h - the PowerTCP and theta-PowerTCP control laws, in integer
 * arithmetic, shared unchanged by the kernel module (kernel/), the eBPF
 * struct_ops programs (bpf/) and userspace (tests, simulators).
 *
 * The algorithm (Addanki, PhD thesis 2025, ch. 2; NSDI'22)
 * ---------------------------------------------------------
 * PowerTCP reacts to "power" at the bottleneck: voltage times current,
 *
 *     Gamma = (q + b*tau) * (dq/dt + mu)         [bytes * bytes/s]
 *
 * with q the queue, b the link rate, tau the base RTT and mu the dequeue rate.
 * Normalised by its equilibrium value e = b^2 * tau it is dimensionless:
 *
 *     Gamma_norm = (lambda / b) * (1 + q / (b*tau)),  lambda = dq/dt + mu,
 *
 * which is 1 when the link is exactly busy and its queue is empty. Per ACK,
 * PowerTCP computes Gamma_norm for every hop of the INT stack echoed in the
 * ACK (from the difference to the previous ACK's stack), takes the largest,
 * smooths it with weight dt/tau, and sets
 *
 *     cwnd = gamma * (cwnd_old / Gamma_smooth + beta) + (1 - gamma) * cwnd,
 *
 * where cwnd_old is the window one RTT ago (remembered once per RTT) and beta
 * the additive increase. The sender paces at cwnd / tau. A new flow starts
 * with one host BDP (HostBw * tau) and no slow start. At equilibrium a
 * bottleneck shared by flows with additive increases beta_i holds a queue of
 * sum(beta_i) and each flow gets a share proportional to beta_i (thesis
 * theorems 1-3).
 *
 * theta-PowerTCP needs no switch support: with mu taken as b, the normalised
 * power becomes (dRTT/dt + 1) * RTT / tau, computed from RTT samples, and the
 * window is updated once per RTT.
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
 * (numbering from shared/research/powertcp.md §2.5 and §3.3)
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
 *      alone for that ACK and the history is re-baselined; a PowerTCP flow
 *      whose ACKs carry no INT falls back to the theta-PowerTCP rule (once
 *      per RTT, from RTT samples), and this is counted (fallback_updates).
 *   B1 Alg. 2 uses Delta-t without defining it: it is the dt between the two
 *      RTT samples, clamped to tau like A3.
 *   B2 Alg. 2 updates prevRTT on every ACK but the window once per RTT; here
 *      the RTT history advances once per RTT too, so the gradient spans one
 *      RTT instead of one noisy ACK interval.
 *   B3 dRTT/dt < -1 would make the power negative: (1 + dRTT/dt) is clamped
 *      at zero (and the power floored as in A4).
 * Further decisions the thesis leaves open:
 *   - cwnd is capped at host BDP + beta, the largest window a flow holds in
 *     the fluid equilibrium (w_i = beta_i * (1 + b*tau / sum(beta)) <=
 *     beta_i + HostBw*tau); larger windows only queue at the sender's NIC.
 *     It is floored at LUMEN_PTCP_MIN_CWND_SEGS segments.
 *   - A missing INT echo on one ACK does not discard the history: the
 *     counters are cumulative, so the next delta spans the gap; the wrap
 *     rules catch gaps that are too long. An idle restart (lumen_ptcp_restart)
 *     does discard it, since a gap of whole wrap periods is undetectable.
 *   - A change in the number of INT hops, or of a hop's rate, is a path
 *     change: the INT history is re-baselined (counted in int_path_changes).
 *     A stale or implausible delta on any hop discards the whole sample (the
 *     maximum over the remaining hops could miss the bottleneck).
 *   - base_rtt_ns == 0 selects the thesis' fallback for an unknown tau: the
 *     minimum RTT observed by the flow (LUMEN_PTCP_DEFAULT_BASE_RTT_NS is
 *     used for the initial window until the first sample).
 */
#ifndef LUMEN_POWERTCP_H
#define LUMEN_POWERTCP_H

#include "types.h"
#include "int_option.h"

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
};

enum lumen_ptcp_param_error {
	LUMEN_PTCP_PARAM_OK = 0,
	LUMEN_PTCP_PARAM_EGAMMA = 1,
	LUMEN_PTCP_PARAM_EFLOWS = 2,
	LUMEN_PTCP_PARAM_EBETA = 3,
	LUMEN_PTCP_PARAM_EHOSTBW = 4,
	LUMEN_PTCP_PARAM_ERTT = 5,
	LUMEN_PTCP_PARAM_EBDP = 6,
};

LUMEN_INLINE void lumen_ptcp_params_default(struct lumen_ptcp_params *p)
{
	p->gamma = LUMEN_PTCP_DEFAULT_GAMMA;
	p->expected_flows = LUMEN_PTCP_DEFAULT_EXPECTED_FLOWS;
	p->beta_bytes = 0;
	p->host_bw_mbps = LUMEN_PTCP_DEFAULT_HOST_BW_MBPS;
	p->base_rtt_ns = LUMEN_PTCP_DEFAULT_BASE_RTT_NS;
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
LUMEN_INLINE int lumen_ptcp_params_validate(const struct lumen_ptcp_params *p)
{
	__u64 rtt = p->base_rtt_ns ? p->base_rtt_ns : LUMEN_PTCP_BASE_RTT_MAX_NS;

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
	 * fit the 1 GiB window limit for the largest tau the flow may use (the
	 * configured one, or 1 s when tau is tracked from RTT samples).
	 */
	if (lumen_ptcp_bytes_in(p->host_bw_mbps, rtt) > LUMEN_PTCP_MAX_CWND_BYTES)
		return -LUMEN_PTCP_PARAM_EBDP;
	return 0;
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
	default:
		return "unknown parameter error";
	}
}

/* ---------------------------------------------------------------------- */
/* Per-flow state                                                          */

enum lumen_ptcp_mode {
	LUMEN_PTCP_MODE_INT = 0, /* PowerTCP, INT-fed, per-ACK updates */
	LUMEN_PTCP_MODE_THETA = 1, /* theta-PowerTCP, RTT-fed, per-RTT updates */
};

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
	__u32 int_path_changes; /* hop count or rate changed: re-baselined */
	__u32 int_stale; /* a hop delta was stale or implausible */
	__u32 int_duplicate; /* same INT as the previous ACK (dt == 0) */
	__u32 int_overflow; /* echo flagged more hops than slots */
};

struct lumen_ptcp {
	__u64 cwnd_bytes;
	__u64 pacing_rate; /* bytes/s */
	__u64 smooth_power; /* Q16; 0 = no sample yet */
	__u64 last_power; /* Q16, last unsmoothed sample (for diagnostics) */
	__u64 tau_ns; /* base RTT in use; 0 = auto and no sample yet */

	/* GETCWND / UPDATEOLD: the window at the start of the current RTT. */
	__u64 old_cwnd_bytes;
	__u32 old_snd_nxt;

	/* theta history, advanced once per RTT */
	__u32 rtt_round_end; /* snd_nxt when the current round started */
	__u64 prev_rtt_ns;
	__u64 prev_rtt_time_ns;

	/* INT history: the previous ACK's hop stack */
	struct lumen_int_hop prev_hops[LUMEN_INT_MAX_HOPS];
	__u8 prev_hop_count; /* 0 = none */
	__u8 have_rtt; /* prev_rtt_* valid */
	__u8 mode; /* enum lumen_ptcp_mode */
	__u8 max_hop; /* index of the hop that gave the last INT power */

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

/*
 * Start a flow: one host BDP, no power sample, no history.
 * snd_nxt is the first sequence number the flow will send.
 */
LUMEN_INLINE void lumen_ptcp_init(struct lumen_ptcp *st, const struct lumen_ptcp_params *p, enum lumen_ptcp_mode mode,
				  __u32 snd_nxt, __u32 mss)
{
	__u64 tau;
	__u32 i;

	st->tau_ns = 0;
	st->mode = (__u8)mode;
	tau = lumen_ptcp_tau(st, p);
	st->cwnd_bytes = lumen_ptcp_clamp_cwnd(p, tau, mss, lumen_ptcp_host_bdp(p, tau));
	st->pacing_rate = lumen_ptcp_pacing_rate(st->cwnd_bytes, tau);
	st->smooth_power = 0;
	st->last_power = 0;
	st->old_cwnd_bytes = st->cwnd_bytes;
	st->old_snd_nxt = snd_nxt;
	st->rtt_round_end = snd_nxt;
	st->prev_rtt_ns = 0;
	st->prev_rtt_time_ns = 0;
	for (i = 0; i < LUMEN_INT_MAX_HOPS; i++) {
		st->prev_hops[i].ts = 0;
		st->prev_hops[i].tx = 0;
		st->prev_hops[i].qlen = 0;
		st->prev_hops[i].rate = 0;
		st->prev_hops[i].pad = 0;
	}
	st->prev_hop_count = 0;
	st->have_rtt = 0;
	st->max_hop = 0;
	st->stats.acks = 0;
	st->stats.int_updates = 0;
	st->stats.rtt_updates = 0;
	st->stats.fallback_updates = 0;
	st->stats.int_missing = 0;
	st->stats.int_path_changes = 0;
	st->stats.int_stale = 0;
	st->stats.int_duplicate = 0;
	st->stats.int_overflow = 0;
}

/*
 * After idle (CA_EVENT_CWND_RESTART / TX_START): the history no longer
 * describes the network. Keep the window, forget power, INT and RTT history,
 * and start a new RTT round at snd_nxt.
 */
LUMEN_INLINE void lumen_ptcp_restart(struct lumen_ptcp *st, __u32 snd_nxt)
{
	st->smooth_power = 0;
	st->prev_hop_count = 0;
	st->have_rtt = 0;
	st->old_cwnd_bytes = st->cwnd_bytes;
	st->old_snd_nxt = snd_nxt;
	st->rtt_round_end = snd_nxt;
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
	__u64 arrived, current, voltage, q, power;

	/* bytes that arrived at the queue during dt; negative is noise (A5) */
	if (d->tx_bytes + d->qlen_bytes > d->qlen_prev_bytes)
		arrived = d->tx_bytes + d->qlen_bytes - d->qlen_prev_bytes;
	else
		arrived = 0;
	arrived = lumen_min_u64(arrived, 1ull << 32);
	/* (2^32 * 8000) << 16 < 2^61; rate * dt in [16, 2^21 * 2^22] */
	current = lumen_div64((arrived * 8000) << LUMEN_PTCP_SHIFT, (__u64)d->rate_mbps * d->dt_ns);
	current = lumen_min_u64(current, LUMEN_PTCP_CURRENT_MAX);

	q = lumen_min_u64(d->qlen_bytes, 1ull << 31);
	/* (2^31 * 8000) << 16 < 2^60; rate * tau in [1000, 2^21 * 2^30] */
	voltage = LUMEN_PTCP_ONE + lumen_div64((q * 8000) << LUMEN_PTCP_SHIFT, (__u64)d->rate_mbps * tau_ns);
	voltage = lumen_min_u64(voltage, LUMEN_PTCP_VOLTAGE_MAX);

	/* 2^26 * 2^30 = 2^56 */
	power = (current * voltage) >> LUMEN_PTCP_SHIFT;
	return lumen_min_u64(power, LUMEN_PTCP_POWER_MAX);
}

/*
 * Gamma_smooth = (Gamma_smooth * (tau - dt) + sample * dt) / tau, dt <= tau,
 * seeded by the first sample (A3). Products: 2^32 * 2^30 = 2^62.
 */
LUMEN_INLINE void lumen_ptcp_smooth(struct lumen_ptcp *st, __u64 sample, __u64 dt_ns, __u64 tau_ns)
{
	__u64 dt = lumen_min_u64(dt_ns, tau_ns);

	st->last_power = sample;
	if (st->smooth_power == 0) {
		st->smooth_power = lumen_max_u64(sample, 1);
		return;
	}
	st->smooth_power = lumen_div64(st->smooth_power * (tau_ns - dt) + sample * dt, tau_ns);
	st->smooth_power = lumen_max_u64(st->smooth_power, 1);
}

/*
 * INT power of one ACK: the maximum normalised power over the hops (A1),
 * smoothed. Returns 1 when the window may be updated, 0 when the ACK only
 * re-baselined the history (counted in stats).
 */
LUMEN_INLINE int lumen_ptcp_int_power(struct lumen_ptcp *st, const struct lumen_int_opt *echo, __u64 tau_ns)
{
	__u64 max_power = 0, max_dt = 0;
	__u32 count = echo->count, i;
	int usable = 1, duplicate = 0;

	if (echo->flags & LUMEN_INT_FLAG_OVERFLOW)
		st->stats.int_overflow++;
	if (count > LUMEN_INT_MAX_HOPS)
		count = LUMEN_INT_MAX_HOPS;

	if (st->prev_hop_count != count) {
		if (st->prev_hop_count)
			st->stats.int_path_changes++;
		usable = 0;
	} else {
		for (i = 0; i < LUMEN_INT_MAX_HOPS; i++) {
			struct lumen_int_delta d;
			__u64 power;
			int err;

			if (i >= count)
				break;
			err = lumen_int_hop_delta(&st->prev_hops[i], &echo->hops[i], &d);
			if (err == LUMEN_INT_DELTA_ETIME && echo->hops[i].ts == st->prev_hops[i].ts) {
				duplicate = 1;
				break;
			}
			if (err) {
				if (err == LUMEN_INT_DELTA_ERATE)
					st->stats.int_path_changes++;
				else
					st->stats.int_stale++;
				usable = 0;
				break;
			}
			power = lumen_ptcp_hop_power(&d, tau_ns);
			if (power > max_power) {
				max_power = power;
				max_dt = d.dt_ns;
				st->max_hop = (__u8)i;
			}
		}
	}
	if (duplicate) {
		/* the same dequeue echoed again (delayed/duplicate ACK): no news */
		st->stats.int_duplicate++;
		return 0;
	}
	for (i = 0; i < LUMEN_INT_MAX_HOPS; i++) {
		if (i >= count)
			break;
		st->prev_hops[i] = echo->hops[i];
	}
	st->prev_hop_count = (__u8)count;
	if (!usable || count == 0)
		return 0;
	lumen_ptcp_smooth(st, max_power, max_dt, tau_ns);
	return 1;
}

/*
 * theta-PowerTCP power sample (Alg. 2 lines 11-13): (1 + dRTT/dt) * RTT / tau,
 * taken once per RTT round; the RTT history advances with it (B2). Returns 1
 * and sets *power and *dt_ns when a sample is ready. The caller has checked
 * that ack->rtt_ns != 0.
 */
LUMEN_INLINE int lumen_ptcp_rtt_sample(struct lumen_ptcp *st, const struct lumen_ptcp_ack *ack, __u64 tau_ns,
				       __u64 *power, __u64 *dt_ns)
{
	__u64 rtt = lumen_min_u64(ack->rtt_ns, 1ull << 32); /* 4.3 s */
	__u64 dt, grad, slope;

	if (!st->have_rtt || ack->now_ns <= st->prev_rtt_time_ns) {
		st->prev_rtt_ns = rtt;
		st->prev_rtt_time_ns = ack->now_ns;
		st->rtt_round_end = ack->snd_nxt;
		st->have_rtt = 1;
		return 0;
	}
	if (lumen_seq_after(st->rtt_round_end, ack->snd_una))
		return 0; /* once per RTT */
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
	*power = lumen_min_u64(lumen_div64(grad * rtt, tau_ns), LUMEN_PTCP_POWER_MAX);
	*dt_ns = dt;

	st->prev_rtt_ns = rtt;
	st->prev_rtt_time_ns = ack->now_ns;
	st->rtt_round_end = ack->snd_nxt;
	return 1;
}

/* ---------------------------------------------------------------------- */
/* Window                                                                  */

/*
 * cwnd = gamma * (cwnd_old / power + beta) + (1 - gamma) * cwnd (Alg. 1 line
 * 27, with A2 resolved). cwnd_old < 2^30, so cwnd_old << 16 < 2^46 and the
 * quotient is < 2^46 / 655 < 2^37; gamma * (2^37 + 2^30) < 2^54.
 */
LUMEN_INLINE __u64 lumen_ptcp_update_window(const struct lumen_ptcp_params *p, __u64 tau_ns, __u32 mss, __u64 power,
					    __u64 cwnd_old, __u64 cwnd)
{
	__u64 target, blended, gamma = p->gamma;

	power = lumen_max_u64(power, LUMEN_PTCP_POWER_MIN);
	target = lumen_div64(cwnd_old << LUMEN_PTCP_SHIFT, power) + lumen_ptcp_beta(p, tau_ns);
	blended = (gamma * target + (LUMEN_PTCP_ONE - gamma) * cwnd + LUMEN_PTCP_ONE / 2) >> LUMEN_PTCP_SHIFT;
	return lumen_ptcp_clamp_cwnd(p, tau_ns, mss, blended);
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
	__u64 tau, cwnd_old = st->old_cwnd_bytes, rtt_power = 0, rtt_dt = 0;
	int ready = 0;

	st->stats.acks++;
	/* tau fallback: the minimum RTT observed (thesis [L616]) */
	if (!p->base_rtt_ns && ack->rtt_ns) {
		__u64 rtt = lumen_clamp_u64(ack->rtt_ns, LUMEN_PTCP_BASE_RTT_MIN_NS, LUMEN_PTCP_BASE_RTT_MAX_NS);

		if (st->tau_ns == 0 || rtt < st->tau_ns)
			st->tau_ns = rtt;
	}
	tau = lumen_ptcp_tau(st, p);

	if (st->mode == LUMEN_PTCP_MODE_INT && echo && echo->count) {
		ready = lumen_ptcp_int_power(st, echo, tau);
		if (ready)
			result = LUMEN_PTCP_UPDATED_INT;
		/* advance the RTT history too, ready for a later fallback */
		if (ack->rtt_ns)
			lumen_ptcp_rtt_sample(st, ack, tau, &rtt_power, &rtt_dt);
	} else {
		if (st->mode == LUMEN_PTCP_MODE_INT)
			st->stats.int_missing++;
		if (ack->rtt_ns && lumen_ptcp_rtt_sample(st, ack, tau, &rtt_power, &rtt_dt)) {
			lumen_ptcp_smooth(st, rtt_power, rtt_dt, tau);
			ready = 1;
			result = LUMEN_PTCP_UPDATED_RTT;
		}
	}

	if (ready) {
		st->cwnd_bytes = lumen_ptcp_update_window(p, tau, ack->mss, st->smooth_power, cwnd_old, st->cwnd_bytes);
		if (result == LUMEN_PTCP_UPDATED_INT)
			st->stats.int_updates++;
		else if (st->mode == LUMEN_PTCP_MODE_INT)
			st->stats.fallback_updates++;
		else
			st->stats.rtt_updates++;
	} else {
		/* parameters may have changed at runtime: keep within bounds */
		st->cwnd_bytes = lumen_ptcp_clamp_cwnd(p, tau, ack->mss, st->cwnd_bytes);
	}
	st->pacing_rate = lumen_ptcp_pacing_rate(st->cwnd_bytes, tau);

	/* UPDATEOLD: remember the window once per RTT */
	if (!lumen_seq_after(st->old_snd_nxt, ack->snd_una)) {
		st->old_cwnd_bytes = st->cwnd_bytes;
		st->old_snd_nxt = ack->snd_nxt;
	}
	return result;
}

#endif /* LUMEN_POWERTCP_H */
