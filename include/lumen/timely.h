/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * lumen/timely.h - the TIMELY rate controller, in integer arithmetic, shared
 * by the eBPF struct_ops (bpf/timely.bpf.c), lumen-dp (dpdk/transport) and
 * userspace tests and simulators. TIMELY is one of the baselines the
 * PowerTCP thesis compares against: a congestion control that needs no
 * switch support, only precise RTTs.
 *
 * R. Mittal, V. T. Lam, N. Dukkipati, et al.: "TIMELY: RTT-based Congestion
 * Control for the Datacenter", SIGCOMM 2015 (Algorithm 1).
 *
 * The algorithm
 * -------------
 * TIMELY sets a sending *rate* from RTT samples taken once per completion
 * event (a segment of 16-64 KB acknowledged). It reacts to the RTT's
 * gradient rather than its level, except at the extremes:
 *
 *     new_rtt_diff = new_rtt - prev_rtt;  prev_rtt = new_rtt
 *     rtt_diff = (1 - alpha) * rtt_diff + alpha * new_rtt_diff
 *     gradient = rtt_diff / minRTT
 *     if new_rtt < T_low:   rate += delta                 (no queue to speak of)
 *     elif new_rtt > T_high: rate *= 1 - beta * (1 - T_high / new_rtt)
 *                                                         (a queue too long)
 *     elif gradient <= 0:   rate += N * delta             (queue not growing)
 *                           N = 5 after 5 such events in a row (hyperactive
 *                           increase, HAI), else 1
 *     else:                 rate *= 1 - beta * gradient   (queue growing)
 *
 * The defaults are the paper's and its ns-3 port's (used by the HPCC and
 * PowerTCP evaluations): alpha = 0.875, beta = 0.8, T_low = 50 us, T_high =
 * 500 us, HAI after 5 events. delta, 10 Mbit/s at 10 Gbit/s in the paper, is
 * derived as HostBw / 1000 unless configured; minRTT is the smallest RTT the
 * flow has seen unless configured. A flow starts at line rate (HostBw).
 *
 * Decisions the paper leaves open
 * -------------------------------
 *   - The rate stays within [max(delta, 1 Mbit/s), HostBw]: a decrease never
 *     stops a flow (the paper's factor 1 - beta * gradient can reach zero or
 *     below), and no increase passes the host's link.
 *   - rtt_diff is signed; kept in ns, |new_rtt_diff| clamped at 2^32 ns.
 *   - A completion event is seg_bytes acknowledged (16 KB by default, the
 *     paper's smallest segment) or one round trip of data (snd_una passing
 *     the snd_nxt of the previous event), whichever comes first, and carries
 *     the RTT sample of the ACK that completed it; an event without an RTT
 *     sample waits for the next one. Segments alone would starve a slow
 *     flow of events (at 25 Mbit/s a 16 KB segment takes 5 ms), and its
 *     rate, which grows only per event, would take seconds to recover from
 *     a burst; the round trip bound is the per-window update of the TIMELY
 *     port in the HPCC authors' ns-3 simulator.
 *   - The first event only seeds prev_rtt (no gradient yet): the rate holds.
 *
 * The TCP binding (struct_ops; lumen-dp has its own, dpdk/transport/cc.h)
 * -----------------------------------------------------------------------
 * TCP needs a window as well as a rate: the rate goes to sk_pacing_rate and
 * the window is twice the rate times the latest RTT (at least 4 segments),
 * so pacing, not the window, sets the pace while ACKs flow, and the window
 * bounds what one rate can put in flight when they stop. TIMELY runs over
 * lossless fabrics; TCP does not, so loss halves the rate once per episode
 * (entering recovery or loss), a spurious episode undone restores it (as
 * lumen/powertcp_ack.h does for PowerTCP's window). After idle the RTT
 * history is forgotten and the rate kept.
 *
 * Units: time ns, rate bytes/s (as sk_pacing_rate), parameters Mbit/s and
 * Q16 fractions (LUMEN_TIMELY_ONE = 1.0).
 */
#ifndef LUMEN_TIMELY_H
#define LUMEN_TIMELY_H

#include "types.h"

#define LUMEN_TIMELY_SHIFT 16
#define LUMEN_TIMELY_ONE (1ull << LUMEN_TIMELY_SHIFT)

#define LUMEN_TIMELY_DEFAULT_T_LOW_NS 50000ull /* 50 us */
#define LUMEN_TIMELY_DEFAULT_T_HIGH_NS 500000ull /* 500 us */
#define LUMEN_TIMELY_DEFAULT_ALPHA 57344 /* 0.875 in Q16 */
#define LUMEN_TIMELY_DEFAULT_BETA 52429 /* 0.8 in Q16 */
#define LUMEN_TIMELY_DEFAULT_HAI_EVENTS 5
#define LUMEN_TIMELY_DEFAULT_SEG_BYTES 16384
#define LUMEN_TIMELY_DEFAULT_HOST_BW_MBPS 10000 /* the paper's 10 Gbit/s */
#define LUMEN_TIMELY_HAI_FACTOR 5 /* N in hyperactive increase */

#define LUMEN_TIMELY_RTT_MIN_NS 1000ull /* 1 us */
#define LUMEN_TIMELY_RTT_MAX_NS 1000000000ull /* 1 s */
#define LUMEN_TIMELY_HOST_BW_MAX_MBPS 1600000u /* 1.6 Tbit/s */
#define LUMEN_TIMELY_SEG_MIN_BYTES 1024u
#define LUMEN_TIMELY_SEG_MAX_BYTES (1u << 24)
#define LUMEN_TIMELY_HAI_MAX 1000u
#define LUMEN_TIMELY_MIN_CWND_SEGS 4
#define LUMEN_TIMELY_MAX_CWND_BYTES (1ull << 30)
#define LUMEN_TIMELY_DIFF_MAX_NS (1ll << 32)

struct lumen_timely_params {
	__u64 t_low_ns; /* [1 us, 1 s] */
	__u64 t_high_ns; /* (t_low, 1 s] */
	__u64 min_rtt_ns; /* gradient's normaliser; 0 = smallest RTT seen, else [1 us, 1 s] */
	__u32 host_bw_mbps; /* line rate: start and ceiling, [1, 1.6e6] */
	__u32 delta_mbps; /* additive step; 0 = host_bw / 1000, else [1, host_bw] */
	__u32 alpha; /* weight of a new RTT difference, Q16, (0, 1] */
	__u32 beta; /* multiplicative decrease, Q16, (0, 1] */
	__u32 hai_events; /* gradient <= 0 events before HAI, [1, 1000] */
	__u32 seg_bytes; /* bytes acknowledged per completion event, [1 KiB, 16 MiB] */
};

enum lumen_timely_param_error {
	LUMEN_TIMELY_PARAM_OK = 0,
	LUMEN_TIMELY_PARAM_ETLOW = 1,
	LUMEN_TIMELY_PARAM_ETHIGH = 2,
	LUMEN_TIMELY_PARAM_EMINRTT = 3,
	LUMEN_TIMELY_PARAM_EHOSTBW = 4,
	LUMEN_TIMELY_PARAM_EDELTA = 5,
	LUMEN_TIMELY_PARAM_EALPHA = 6,
	LUMEN_TIMELY_PARAM_EBETA = 7,
	LUMEN_TIMELY_PARAM_EHAI = 8,
	LUMEN_TIMELY_PARAM_ESEG = 9,
};

LUMEN_INLINE void lumen_timely_params_default(struct lumen_timely_params *p)
{
	p->t_low_ns = LUMEN_TIMELY_DEFAULT_T_LOW_NS;
	p->t_high_ns = LUMEN_TIMELY_DEFAULT_T_HIGH_NS;
	p->min_rtt_ns = 0;
	p->host_bw_mbps = LUMEN_TIMELY_DEFAULT_HOST_BW_MBPS;
	p->delta_mbps = 0;
	p->alpha = LUMEN_TIMELY_DEFAULT_ALPHA;
	p->beta = LUMEN_TIMELY_DEFAULT_BETA;
	p->hai_events = LUMEN_TIMELY_DEFAULT_HAI_EVENTS;
	p->seg_bytes = LUMEN_TIMELY_DEFAULT_SEG_BYTES;
}

LUMEN_INLINE int lumen_timely_params_validate(const struct lumen_timely_params *p)
{
	if (p->t_low_ns < LUMEN_TIMELY_RTT_MIN_NS || p->t_low_ns > LUMEN_TIMELY_RTT_MAX_NS)
		return -LUMEN_TIMELY_PARAM_ETLOW;
	if (p->t_high_ns <= p->t_low_ns || p->t_high_ns > LUMEN_TIMELY_RTT_MAX_NS)
		return -LUMEN_TIMELY_PARAM_ETHIGH;
	if (p->min_rtt_ns && (p->min_rtt_ns < LUMEN_TIMELY_RTT_MIN_NS || p->min_rtt_ns > LUMEN_TIMELY_RTT_MAX_NS))
		return -LUMEN_TIMELY_PARAM_EMINRTT;
	if (p->host_bw_mbps < 1 || p->host_bw_mbps > LUMEN_TIMELY_HOST_BW_MAX_MBPS)
		return -LUMEN_TIMELY_PARAM_EHOSTBW;
	if (p->delta_mbps > p->host_bw_mbps)
		return -LUMEN_TIMELY_PARAM_EDELTA;
	if (p->alpha < 1 || p->alpha > LUMEN_TIMELY_ONE)
		return -LUMEN_TIMELY_PARAM_EALPHA;
	if (p->beta < 1 || p->beta > LUMEN_TIMELY_ONE)
		return -LUMEN_TIMELY_PARAM_EBETA;
	if (p->hai_events < 1 || p->hai_events > LUMEN_TIMELY_HAI_MAX)
		return -LUMEN_TIMELY_PARAM_EHAI;
	if (p->seg_bytes < LUMEN_TIMELY_SEG_MIN_BYTES || p->seg_bytes > LUMEN_TIMELY_SEG_MAX_BYTES)
		return -LUMEN_TIMELY_PARAM_ESEG;
	return 0;
}

LUMEN_INLINE const char *lumen_timely_param_strerror(int err)
{
	switch (err < 0 ? -err : err) {
	case LUMEN_TIMELY_PARAM_OK:
		return "ok";
	case LUMEN_TIMELY_PARAM_ETLOW:
		return "timely T_low must be within [1 us, 1 s]";
	case LUMEN_TIMELY_PARAM_ETHIGH:
		return "timely T_high must be above T_low and at most 1 s";
	case LUMEN_TIMELY_PARAM_EMINRTT:
		return "timely min_rtt must be 0 (the smallest RTT seen) or within [1 us, 1 s]";
	case LUMEN_TIMELY_PARAM_EHOSTBW:
		return "timely host bandwidth must be within [1, 1600000] Mbit/s";
	case LUMEN_TIMELY_PARAM_EDELTA:
		return "timely delta must be 0 (host bandwidth / 1000) or at most the host bandwidth";
	case LUMEN_TIMELY_PARAM_EALPHA:
		return "timely alpha must be within (0, 1] (Q16: [1, 65536])";
	case LUMEN_TIMELY_PARAM_EBETA:
		return "timely beta must be within (0, 1] (Q16: [1, 65536])";
	case LUMEN_TIMELY_PARAM_EHAI:
		return "timely HAI events must be within [1, 1000]";
	case LUMEN_TIMELY_PARAM_ESEG:
		return "timely segment must be within [1 KiB, 16 MiB]";
	default:
		return "unknown timely parameter error";
	}
}

/* Mbit/s to bytes/s: 1.6e6 * 125000 = 2e11 < 2^38. */
LUMEN_INLINE __u64 lumen_timely_bytes_per_s(__u64 mbps)
{
	return mbps * 125000ull;
}

/* The additive step in bytes/s: configured, or HostBw / 1000; >= 1 Mbit/s. */
LUMEN_INLINE __u64 lumen_timely_delta(const struct lumen_timely_params *p)
{
	__u64 mbps = p->delta_mbps ? p->delta_mbps : lumen_div64(p->host_bw_mbps, 1000);

	return lumen_timely_bytes_per_s(lumen_max_u64(mbps, 1));
}

/* The rate's floor (delta, at least 1 Mbit/s) and ceiling (HostBw). */
LUMEN_INLINE __u64 lumen_timely_clamp_rate(const struct lumen_timely_params *p, __u64 rate)
{
	__u64 hi = lumen_timely_bytes_per_s(p->host_bw_mbps ? p->host_bw_mbps : 1);

	return lumen_clamp_u64(rate, lumen_min_u64(lumen_timely_delta(p), hi), hi);
}

/* What one completion event did to the rate. */
enum lumen_timely_action {
	LUMEN_TIMELY_SEEDED = 0, /* first sample: prev_rtt only */
	LUMEN_TIMELY_LOW = 1, /* rtt < T_low: + delta */
	LUMEN_TIMELY_HIGH = 2, /* rtt > T_high: x (1 - beta (1 - T_high / rtt)) */
	LUMEN_TIMELY_INCREASE = 3, /* gradient <= 0: + delta */
	LUMEN_TIMELY_HAI = 4, /* gradient <= 0, HAI: + 5 delta */
	LUMEN_TIMELY_DECREASE = 5, /* gradient > 0: x (1 - beta gradient) */
};

struct lumen_timely_stats {
	__u32 events; /* completion events with an RTT sample */
	__u32 low; /* rtt < T_low */
	__u32 high; /* rtt > T_high */
	__u32 increases; /* gradient <= 0, additive */
	__u32 hai; /* gradient <= 0, hyperactive */
	__u32 decreases; /* gradient > 0 */
	__u32 loss_cuts; /* rate halved on a loss episode (TCP binding) */
	__u32 loss_undos; /* cuts undone: the loss was spurious */
};

struct lumen_timely {
	__u64 rate; /* bytes/s */
	__u64 prev_rtt_ns; /* 0 = no sample yet */
	__s64 rtt_diff_ns; /* EWMA of RTT differences */
	__u64 min_rtt_ns; /* smallest RTT seen; 0 = none */
	__u64 last_rtt_ns; /* latest sample, for the TCP window */
	__u64 last_gradient; /* Q16, |rtt_diff| / minRTT of the last event (diagnostics) */
	__u64 undo_rate; /* rate before the last loss cut; 0 = no undo */
	__u32 neg_events; /* consecutive gradient <= 0 events (HAI) */
	__u32 acked; /* bytes acknowledged since the last event */
	__u32 last_snd_una;
	__u32 round_end; /* snd_nxt at the last event: an event when snd_una passes it */
	__u8 in_loss; /* a loss episode is open (TCP binding) */
	__u8 pad[3];
	struct lumen_timely_stats stats;
};

LUMEN_INLINE void lumen_timely_init(struct lumen_timely *st, const struct lumen_timely_params *p, __u32 snd_una)
{
	__builtin_memset(st, 0, sizeof(*st));
	st->rate = lumen_timely_clamp_rate(p, lumen_timely_bytes_per_s(p->host_bw_mbps));
	st->last_snd_una = snd_una;
	st->round_end = snd_una;
}

/* After idle: the RTT history describes another network; the rate stays. */
LUMEN_INLINE void lumen_timely_restart(struct lumen_timely *st)
{
	st->prev_rtt_ns = 0;
	st->rtt_diff_ns = 0;
	st->neg_events = 0;
	st->acked = 0;
}

/* rate * (1 - f), f in Q16 (f >= 1: the floor). rate < 2^38: < 2^54. */
LUMEN_INLINE __u64 lumen_timely_cut(__u64 rate, __u64 f)
{
	if (f >= LUMEN_TIMELY_ONE)
		return 0;
	return (rate * (LUMEN_TIMELY_ONE - f)) >> LUMEN_TIMELY_SHIFT;
}

/*
 * One completion event with RTT sample rtt_ns (Algorithm 1). Returns what it
 * did; the new rate is in st->rate.
 */
LUMEN_INLINE enum lumen_timely_action lumen_timely_update(struct lumen_timely *st, const struct lumen_timely_params *p,
							  __u64 rtt_ns)
{
	__s64 new_diff, mixed;
	__u64 min_rtt, delta = lumen_timely_delta(p), f;
	enum lumen_timely_action act;

	rtt_ns = lumen_clamp_u64(rtt_ns, 1, LUMEN_TIMELY_RTT_MAX_NS);
	st->stats.events++;
	st->last_rtt_ns = rtt_ns;
	if (!st->min_rtt_ns || rtt_ns < st->min_rtt_ns)
		st->min_rtt_ns = rtt_ns;
	if (!st->prev_rtt_ns) {
		st->prev_rtt_ns = rtt_ns;
		return LUMEN_TIMELY_SEEDED;
	}
	/* both below 1 s: the difference fits easily; clamped all the same */
	new_diff = (__s64)rtt_ns - (__s64)st->prev_rtt_ns;
	if (new_diff > LUMEN_TIMELY_DIFF_MAX_NS)
		new_diff = LUMEN_TIMELY_DIFF_MAX_NS;
	if (new_diff < -LUMEN_TIMELY_DIFF_MAX_NS)
		new_diff = -LUMEN_TIMELY_DIFF_MAX_NS;
	st->prev_rtt_ns = rtt_ns;
	/* |terms| < 2^32 * 2^16: no overflow; >> of a negative is arithmetic in gcc, clang and BPF */
	mixed = st->rtt_diff_ns * (__s64)(LUMEN_TIMELY_ONE - p->alpha) + new_diff * (__s64)p->alpha;
	st->rtt_diff_ns = mixed >> LUMEN_TIMELY_SHIFT;

	min_rtt = p->min_rtt_ns ? p->min_rtt_ns : st->min_rtt_ns;
	min_rtt = lumen_max_u64(min_rtt, 1);
	st->last_gradient = st->rtt_diff_ns > 0 ? lumen_div64((__u64)st->rtt_diff_ns << LUMEN_TIMELY_SHIFT, min_rtt)
						: lumen_div64((__u64)(-st->rtt_diff_ns) << LUMEN_TIMELY_SHIFT, min_rtt);

	if (rtt_ns < p->t_low_ns) {
		st->rate += delta;
		act = LUMEN_TIMELY_LOW;
		st->stats.low++;
	} else if (rtt_ns > p->t_high_ns) {
		/* 1 - T_high / rtt in Q16, < 1 as rtt > T_high; times beta */
		f = LUMEN_TIMELY_ONE - lumen_div64(p->t_high_ns << LUMEN_TIMELY_SHIFT, rtt_ns);
		st->rate = lumen_timely_cut(st->rate, (f * p->beta) >> LUMEN_TIMELY_SHIFT);
		st->neg_events = 0;
		act = LUMEN_TIMELY_HIGH;
		st->stats.high++;
	} else if (st->rtt_diff_ns <= 0) {
		if (st->neg_events < LUMEN_TIMELY_HAI_MAX)
			st->neg_events++;
		if (st->neg_events >= p->hai_events) {
			st->rate += LUMEN_TIMELY_HAI_FACTOR * delta;
			act = LUMEN_TIMELY_HAI;
			st->stats.hai++;
		} else {
			st->rate += delta;
			act = LUMEN_TIMELY_INCREASE;
			st->stats.increases++;
		}
	} else {
		/* gradient < 2^48 / 1 at worst: capped at 1.0 before the product */
		f = lumen_min_u64(st->last_gradient, LUMEN_TIMELY_ONE);
		st->rate = lumen_timely_cut(st->rate, (f * p->beta) >> LUMEN_TIMELY_SHIFT);
		st->neg_events = 0;
		act = LUMEN_TIMELY_DECREASE;
		st->stats.decreases++;
	}
	st->rate = lumen_timely_clamp_rate(p, st->rate);
	return act;
}

/* ---------------------------------------------------------------------- */
/* Per ACK: completion events                                              */

/*
 * One ACK, with snd_una and snd_nxt after it: counts what it acknowledged
 * and, once seg_bytes are complete or snd_una has passed the snd_nxt of the
 * last event, and the ACK carries an RTT sample (rtt_ns != 0), runs one
 * event. Returns 1 when an event ran. Also clamps the rate to the
 * parameters, which may have changed at run time.
 */
LUMEN_INLINE int lumen_timely_on_ack(struct lumen_timely *st, const struct lumen_timely_params *p, __u32 snd_una,
				     __u32 snd_nxt, __u64 rtt_ns)
{
	int moved = lumen_seq_after(snd_una, st->last_snd_una);

	if (moved) {
		__u32 acked = snd_una - st->last_snd_una;

		st->acked = (__u32)lumen_min_u64((__u64)st->acked + acked, LUMEN_TIMELY_SEG_MAX_BYTES);
		st->last_snd_una = snd_una;
	}
	st->rate = lumen_timely_clamp_rate(p, st->rate);
	if (!rtt_ns || !st->acked)
		return 0;
	if (st->acked < p->seg_bytes && lumen_seq_after(st->round_end, snd_una))
		return 0;
	st->acked = 0;
	st->round_end = snd_nxt;
	lumen_timely_update(st, p, rtt_ns);
	return 1;
}

/*
 * The window that goes with the rate: twice the rate times the latest RTT
 * (minRTT before the first, T_low before any), within [4 MSS, 1 GiB].
 * rate < 2^38, RTT < 2^30: the product is split to stay below 2^64.
 */
LUMEN_INLINE __u64 lumen_timely_cwnd_bytes(const struct lumen_timely *st, const struct lumen_timely_params *p,
					   __u32 mss)
{
	__u64 rtt = st->last_rtt_ns ? st->last_rtt_ns : (st->min_rtt_ns ? st->min_rtt_ns : p->t_low_ns);
	__u64 bytes = lumen_div64(st->rate, 1000) * lumen_min_u64(rtt, LUMEN_TIMELY_RTT_MAX_NS);

	bytes = lumen_div64(bytes, 1000000) * 2; /* rate/1e3 * ns / 1e6 = rate * s */
	return lumen_clamp_u64(bytes, (__u64)(mss ? mss : 1) * LUMEN_TIMELY_MIN_CWND_SEGS, LUMEN_TIMELY_MAX_CWND_BYTES);
}

/*
 * Idle, for TCP's CA_EVENT_TX_START (sending with nothing in flight): only a
 * silence of at least twice the time the rate takes to send the window, and
 * at least LUMEN_TIMELY_IDLE_MIN_NS, since the last ACK. At a low rate every
 * paced segment is acknowledged before the next leaves, so TX_START comes
 * with each: those gaps are the pacing, and restarting on them wiped the
 * gradient on every event (measured: 428 restarts in 442 events, the flow
 * stuck at the floor). A clock that went back says nothing: idle.
 * cwnd < 2^30, 2e9 < 2^31: < 2^61.
 */
#define LUMEN_TIMELY_IDLE_MIN_NS 1000000ull /* 1 ms, as PowerTCP's TCP binding */

LUMEN_INLINE int lumen_timely_idle(const struct lumen_timely *st, __u64 cwnd_bytes, __u64 last_ack_ns, __u64 now_ns)
{
	__u64 window_ns = lumen_div64(lumen_min_u64(cwnd_bytes, LUMEN_TIMELY_MAX_CWND_BYTES) * 2000000000ull,
				      st->rate ? st->rate : 1);

	if (now_ns < last_ack_ns)
		return 1;
	return now_ns - last_ack_ns >= lumen_max_u64(window_ns, LUMEN_TIMELY_IDLE_MIN_NS);
}

/* Loss: half the rate, once per episode (the caller says when one begins). */
LUMEN_INLINE void lumen_timely_loss(struct lumen_timely *st, const struct lumen_timely_params *p, int in_loss)
{
	if (in_loss && !st->in_loss) {
		st->undo_rate = st->rate;
		st->rate = lumen_timely_clamp_rate(p, st->rate / 2);
		st->stats.loss_cuts++;
	}
	st->in_loss = in_loss ? 1 : 0;
}

/* A spurious loss episode: the rate before its cut comes back. */
LUMEN_INLINE void lumen_timely_undo(struct lumen_timely *st, const struct lumen_timely_params *p)
{
	if (!st->undo_rate)
		return;
	st->rate = lumen_timely_clamp_rate(p, st->undo_rate);
	st->undo_rate = 0;
	st->stats.loss_undos++;
}

#endif /* LUMEN_TIMELY_H */
