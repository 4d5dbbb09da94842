/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * lumen/hpcc.h - the HPCC control law, in integer arithmetic, for every shell
 * that runs lumen's INT-fed congestion control (kernel module, eBPF
 * struct_ops, lumen-dp, simulators). HPCC is the baseline the PowerTCP
 * thesis measures most of its numbers against.
 *
 * Y. Li, R. Miao, H. H. Liu, et al.: "HPCC: High Precision Congestion
 * Control", SIGCOMM 2019 (Algorithm 1).
 *
 * The algorithm
 * -------------
 * HPCC reads the same INT hop records as PowerTCP (queue length qlen,
 * timestamp ts, transmitted bytes txBytes, link rate B) and estimates the
 * *inflight bytes* of each link, normalised by its BDP:
 *
 *     U_j = min(qlen, qlen_prev) / (B * T)  +  txRate / B,
 *     txRate = (txBytes - txBytes_prev) / (ts - ts_prev),
 *
 * with T the base RTT. U_j = 1 is a link exactly busy with an empty queue;
 * the min() of two consecutive queue samples filters a single packet's
 * burst. The most utilised hop decides (MeasureInflight, lines 2-7), and the
 * estimate is smoothed over one base RTT with the sample's own dt:
 *
 *     U = (1 - tau/T) * U + tau/T * u,   tau = min(ts - ts_prev, T)   (l. 8-9)
 *
 * The window follows a *reference window* Wc that changes only once per RTT
 * (when an ACK passes the snd_nxt recorded at the last change), while every
 * ACK recomputes the window from it (ComputeWind, lines 11-20):
 *
 *     if U >= eta or incStage >= maxStage:   W = Wc / (U / eta) + W_AI
 *                                           (multiplicative: toward U = eta)
 *     else:                                 W = Wc + W_AI
 *                                           (additive: a few RTTs of probing)
 *     once per RTT: Wc = W, and incStage = 0 after a multiplicative step,
 *                   incStage + 1 after an additive one.
 *
 * Per ACK the reaction is immediate (each ACK's U gives its own W), but the
 * reference moves once per RTT, so one RTT of ACKs that all saw the same
 * congestion does not compound it. The sender paces at W / T (line 27).
 * Parameters as the paper's evaluation: eta = 95 % (the headroom that keeps
 * the queue near zero), maxStage = 5, and W_AI = W_init * (1 - eta) / N,
 * W_init = HostBw * T (a new flow starts at line rate), N the expected
 * number of flows sharing a link: N flows' additive steps together stay
 * within the 5 % headroom.
 *
 * What lumen adds, and where it lives
 * -----------------------------------
 * Everything that is not the control law is shared with PowerTCP and lives
 * in lumen/powertcp.h, which runs HPCC as LUMEN_PTCP_MODE_HPCC: the INT
 * history per hop (wraparound-safe deltas, path changes, stale or
 * duplicate records), the EWMA (the same form as PowerTCP's power EWMA, here
 * over U), base-RTT tracking, window clamps, and the liveness rules: an RTT
 * round without one usable INT sample updates from the RTT instead (U taken
 * from theta-PowerTCP's RTT estimate, (1 + dRTT/dt) * RTT / T, which at a
 * single bottleneck in steady state is the inflight its queue implies,
 * 1 + q / (B*T)), and the RTT
 * guard overrides INT that claims far less than the RTT shows. In the TCP
 * binding (lumen/powertcp_ack.h) loss halves the window once per episode, as
 * for PowerTCP: the paper's networks are lossless (PFC), TCP's are not. A
 * window imposed from outside (a loss cut, an undo) resets Wc to it, or the
 * next ACK's W, computed from the old Wc, would undo the cut.
 *
 * Units: U and eta are Q16 (LUMEN_HPCC_ONE = 1.0, the same scale as
 * PowerTCP's power), windows bytes, rates Mbit/s, time ns.
 */
#ifndef LUMEN_HPCC_H
#define LUMEN_HPCC_H

#include "types.h"
#include "int_option.h"

#define LUMEN_HPCC_SHIFT 16
#define LUMEN_HPCC_ONE (1ull << LUMEN_HPCC_SHIFT)
/* Ceiling of a hop's U: 65536 times a full link (as PowerTCP's power). */
#define LUMEN_HPCC_U_MAX (LUMEN_HPCC_ONE << 16)
/* Floor of U as a divisor: 0.01 of a link. */
#define LUMEN_HPCC_U_MIN (LUMEN_HPCC_ONE / 100)

#define LUMEN_HPCC_DEFAULT_ETA 62259 /* 0.95 in Q16, the paper's */
#define LUMEN_HPCC_DEFAULT_MAX_STAGE 5 /* the paper's */
#define LUMEN_HPCC_ETA_MIN (LUMEN_HPCC_ONE / 2) /* 0.5 */
#define LUMEN_HPCC_ETA_MAX LUMEN_HPCC_ONE /* 1.0: no headroom */
#define LUMEN_HPCC_MAX_STAGE_MAX 100u
#define LUMEN_HPCC_WAI_MAX_BYTES (1u << 30)

struct lumen_hpcc_params {
	__u32 eta; /* target utilisation, Q16, [0.5, 1] */
	__u32 max_stage; /* additive steps before a multiplicative one, [0, 100] */
	__u32 wai_bytes; /* W_AI; 0 = W_init * (1 - eta) / N */
};

enum lumen_hpcc_param_error {
	LUMEN_HPCC_PARAM_OK = 0,
	LUMEN_HPCC_PARAM_EETA = 1,
	LUMEN_HPCC_PARAM_ESTAGE = 2,
	LUMEN_HPCC_PARAM_EWAI = 3,
};

LUMEN_INLINE void lumen_hpcc_params_default(struct lumen_hpcc_params *p)
{
	p->eta = LUMEN_HPCC_DEFAULT_ETA;
	p->max_stage = LUMEN_HPCC_DEFAULT_MAX_STAGE;
	p->wai_bytes = 0;
}

LUMEN_INLINE int lumen_hpcc_params_validate(const struct lumen_hpcc_params *p)
{
	if (p->eta < LUMEN_HPCC_ETA_MIN || p->eta > LUMEN_HPCC_ETA_MAX)
		return -LUMEN_HPCC_PARAM_EETA;
	if (p->max_stage > LUMEN_HPCC_MAX_STAGE_MAX)
		return -LUMEN_HPCC_PARAM_ESTAGE;
	if (p->wai_bytes > LUMEN_HPCC_WAI_MAX_BYTES)
		return -LUMEN_HPCC_PARAM_EWAI;
	return 0;
}

LUMEN_INLINE const char *lumen_hpcc_param_strerror(int err)
{
	switch (err < 0 ? -err : err) {
	case LUMEN_HPCC_PARAM_OK:
		return "ok";
	case LUMEN_HPCC_PARAM_EETA:
		return "hpcc eta must be within [0.5, 1] (Q16: [32768, 65536])";
	case LUMEN_HPCC_PARAM_ESTAGE:
		return "hpcc max_stage must be within [0, 100]";
	case LUMEN_HPCC_PARAM_EWAI:
		return "hpcc W_AI must be at most 1 GiB";
	default:
		return "unknown hpcc parameter error";
	}
}

/*
 * W_AI: configured, or W_init * (1 - eta) / N with W_init the host BDP;
 * at least one byte. host_bdp < 2^30, (1 - eta) <= 2^15: < 2^45.
 */
LUMEN_INLINE __u64 lumen_hpcc_wai(const struct lumen_hpcc_params *p, __u64 host_bdp, __u32 expected_flows)
{
	__u64 headroom = p->eta < LUMEN_HPCC_ONE ? LUMEN_HPCC_ONE - p->eta : 0;

	if (p->wai_bytes)
		return p->wai_bytes;
	return lumen_max_u64(
		lumen_div64((host_bdp * headroom) >> LUMEN_HPCC_SHIFT, expected_flows ? expected_flows : 1), 1);
}

/*
 * One hop's U from the delta between two of its records (lines 4-5):
 * min(q, q_prev) / (B*T) + tx / (B*dt), in Q16. The divisors are rate * T
 * (>= 1000) and rate * dt (>= 16, lumen_int_hop_delta refuses dt == 0).
 * tx < 2^32 and q < 2^31 after the clamps: (2^32 * 8000) << 16 < 2^61.
 */
LUMEN_INLINE __u64 lumen_hpcc_hop_util(const struct lumen_int_delta *d, __u64 tau_ns)
{
	__u64 q = lumen_min_u64(lumen_min_u64(d->qlen_bytes, d->qlen_prev_bytes), 1ull << 31);
	__u64 tx = lumen_min_u64(d->tx_bytes, 1ull << 32);
	__u64 u_queue = lumen_div64((q * 8000) << LUMEN_HPCC_SHIFT, (__u64)d->rate_mbps * tau_ns);
	__u64 u_rate = lumen_div64((tx * 8000) << LUMEN_HPCC_SHIFT, (__u64)d->rate_mbps * d->dt_ns);

	return lumen_min_u64(u_queue + u_rate, LUMEN_HPCC_U_MAX);
}

/* The reference window and stage of one flow. */
struct lumen_hpcc {
	__u64 wc_bytes; /* Wc, the reference window */
	__u32 inc_stage; /* additive updates of Wc since the last multiplicative */
	__u32 pad;
};

LUMEN_INLINE void lumen_hpcc_reset(struct lumen_hpcc *h, __u64 wc_bytes)
{
	h->wc_bytes = wc_bytes;
	h->inc_stage = 0;
	h->pad = 0;
}

/*
 * ComputeWind (lines 11-20): the window for this ACK from U (Q16), and with
 * update_wc the new reference. wc < 2^30 (the caller clamps it), eta <=
 * 2^16: wc * eta < 2^46; U floored at 0.01. The result is not clamped: the
 * caller clamps it and, with update_wc, stores the clamped value in Wc
 * (lumen_hpcc_commit) so the reference never leaves the window's bounds.
 */
LUMEN_INLINE __u64 lumen_hpcc_compute_wind(const struct lumen_hpcc *h, const struct lumen_hpcc_params *p, __u64 u,
					   __u64 wai, int *multiplicative)
{
	if (u >= p->eta || h->inc_stage >= p->max_stage) {
		*multiplicative = 1;
		u = lumen_max_u64(u, LUMEN_HPCC_U_MIN);
		return lumen_div64(h->wc_bytes * p->eta, u) + wai;
	}
	*multiplicative = 0;
	return h->wc_bytes + wai;
}

/* Lines 14-15 / 18-19: the once-per-RTT move of the reference. */
LUMEN_INLINE void lumen_hpcc_commit(struct lumen_hpcc *h, __u64 w_bytes, int multiplicative)
{
	h->wc_bytes = w_bytes;
	if (multiplicative)
		h->inc_stage = 0;
	else if (h->inc_stage < LUMEN_HPCC_MAX_STAGE_MAX)
		h->inc_stage++;
}

#endif /* LUMEN_HPCC_H */
