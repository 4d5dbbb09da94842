// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Compile-only check that the shared headers are valid strict C, as the
 * kernel module and the eBPF programs need them. Built twice: by the host C
 * compiler with -Wpedantic -Wconversion, and by clang -target bpf (ctest
 * header_bpf_compile), which fails on anything BPF cannot express (floating
 * point, signed division, 128-bit arithmetic).
 */
#include "lumen/dp_ack_coalesce.h"
#include "lumen/dp_wire.h"
#include "lumen/optical.h"
#include "lumen/optical_wire.h"
#include "lumen/path_policy.h"
#include "lumen/powertcp_ack.h"
#include "lumen/retcp.h"
#include "lumen/rng.h"
#include "lumen/tcp_option.h"
#include "lumen/timely.h"

int lumen_check_on_ack(struct lumen_ptcp *st, const struct lumen_ptcp_params *p, const struct lumen_ptcp_ack *ack,
		       const struct lumen_int_opt *echo);
__u32 lumen_check_ack_process(struct lumen_ptcp *st, const struct lumen_ptcp_params *p,
			      const struct lumen_ptcp_ack *ack, const struct lumen_int_opt *echo);
void lumen_check_ack_make(struct lumen_ptcp_ack *ack, __u64 mstamp_us, __s64 rtt_us, const __u32 *una_nxt_mss);
__u32 lumen_check_tx_event(struct lumen_ptcp *st, __u32 cwnd_restart, __u64 now_ns, __u32 snd_nxt);
__u32 lumen_check_cwnd_segs(__u64 cwnd_bytes, __u32 mss, __u32 cwnd_clamp);
__u64 lumen_check_pacing_cap(__u64 rate, __u64 max_rate);
int lumen_check_parse(const __u8 *buf, __u32 len, struct lumen_int_opt *opt);
int lumen_check_tcp_opt(const struct lumen_tcp_opts *o, __u32 len);
__u16 lumen_check_path_next(struct lumen_path *st, const struct lumen_path_params *p, struct lumen_rng *rng,
			    __u64 now_ns);
void lumen_check_path_feedback(struct lumen_path *st, const struct lumen_path_params *p, __u32 entropy, __u32 signal,
			       __u64 now_ns);
int lumen_check_dp_parse(const __u8 *frame, __u32 len, __u16 dport, struct lumen_dp_pkt *out);
int lumen_check_dp_build(__u8 *buf, __u32 room, const struct lumen_dp_pkt *p);
int lumen_check_dp_mark_ce(__u8 *frame, __u32 len);
int lumen_check_dp_ack_fold(__u8 *older, __u32 older_len, const __u8 *newer, __u32 newer_len, __u16 dport);
__u32 lumen_check_dp_hdr_len(__u32 type, __u32 ext_words);
struct lumen_check_port {
	__u64 now, tx, qlen;
	__u32 rate_mbps;
};

__u64 lumen_check_departure(const struct lumen_slot_timing *t, __u64 now_ns, __u64 margin_ns, __u64 wire_ns,
			    __u32 waits);
int lumen_check_rotor(const struct lumen_slot_timing *t, __u64 now_ns, __u32 src, __u32 dst, __u32 dst_now);
int lumen_check_change_departure(const struct lumen_sched_change *c, const struct lumen_sched_bank *banks, __u64 base,
				 __u64 wire_ns, __u64 *dep);
__u64 lumen_check_wire_ns(__u32 len, __u32 rate_mbps);
int lumen_check_switch(__u8 *buf, __u32 len, const struct lumen_check_port *port);
int lumen_check_echo(__u8 *buf, __u32 len, const struct lumen_int_opt *req);
int lumen_check_request(__u8 *buf, __u32 len, __u32 slots);
int lumen_check_timely(struct lumen_timely *st, const struct lumen_timely_params *p, __u32 snd_una, __u64 rtt_ns,
		       __u32 mss);

int lumen_check_on_ack(struct lumen_ptcp *st, const struct lumen_ptcp_params *p, const struct lumen_ptcp_ack *ack,
		       const struct lumen_int_opt *echo)
{
	if (lumen_ptcp_params_validate(p))
		return -1;
	return (int)lumen_ptcp_on_ack(st, p, ack, echo);
}

/* TIMELY's per-ACK path and the binding's window; HPCC runs inside lumen_ptcp_on_ack. */
int lumen_check_timely(struct lumen_timely *st, const struct lumen_timely_params *p, __u32 snd_una, __u64 rtt_ns,
		       __u32 mss)
{
	if (lumen_timely_params_validate(p))
		return -1;
	lumen_timely_loss(st, p, rtt_ns > p->t_high_ns);
	if (!lumen_timely_on_ack(st, p, snd_una, snd_una + mss, rtt_ns))
		lumen_timely_undo(st, p);
	return (int)lumen_timely_cwnd_bytes(st, p, mss);
}

/* The shells' per-ACK policy (powertcp_ack.h); BPF calls take <= 5 arguments. */
__u32 lumen_check_ack_process(struct lumen_ptcp *st, const struct lumen_ptcp_params *p,
			      const struct lumen_ptcp_ack *ack, const struct lumen_int_opt *echo)
{
	enum lumen_ptcp_result res;
	__u32 events = lumen_ptcp_ack_process(st, p, ack, echo, &res);

	return events | ((__u32)res << 16);
}

void lumen_check_ack_make(struct lumen_ptcp_ack *ack, __u64 mstamp_us, __s64 rtt_us, const __u32 *una_nxt_mss)
{
	lumen_ptcp_ack_make(ack, mstamp_us, rtt_us, una_nxt_mss[0], una_nxt_mss[1], una_nxt_mss[2]);
}

__u32 lumen_check_tx_event(struct lumen_ptcp *st, __u32 cwnd_restart, __u64 now_ns, __u32 snd_nxt)
{
	return lumen_ptcp_tx_event(st, cwnd_restart ? LUMEN_PTCP_CWND_RESTART : LUMEN_PTCP_TX_START, now_ns, snd_nxt);
}

__u32 lumen_check_cwnd_segs(__u64 cwnd_bytes, __u32 mss, __u32 cwnd_clamp)
{
	return lumen_ptcp_cwnd_segs(cwnd_bytes, mss, cwnd_clamp);
}

__u64 lumen_check_pacing_cap(__u64 rate, __u64 max_rate)
{
	return lumen_ptcp_pacing_cap(rate, max_rate);
}

int lumen_check_parse(const __u8 *buf, __u32 len, struct lumen_int_opt *opt)
{
	return lumen_int_parse(buf, len, opt);
}

/* BPF functions take at most five arguments: the port state comes by pointer. */
int lumen_check_switch(__u8 *buf, __u32 len, const struct lumen_check_port *port)
{
	struct lumen_int_hop hop;

	lumen_int_hop_make(&hop, port->now, port->tx, port->qlen, lumen_int_rate_encode(port->rate_mbps));
	return lumen_int_push_hop(buf, len, &hop);
}

int lumen_check_echo(__u8 *buf, __u32 len, const struct lumen_int_opt *req)
{
	return lumen_int_write_echo(buf, len, req);
}

/* A slot count known only at run time (a config map) must not become memset. */
int lumen_check_request(__u8 *buf, __u32 len, __u32 slots)
{
	return lumen_int_write_request(buf, len, slots);
}

int lumen_check_tcp_opt(const struct lumen_tcp_opts *o, __u32 len)
{
	return lumen_tcp_opt_find(o, len, LUMEN_INT_KIND, LUMEN_INT_EXID);
}

__u16 lumen_check_path_next(struct lumen_path *st, const struct lumen_path_params *p, struct lumen_rng *rng,
			    __u64 now_ns)
{
	return lumen_path_next(st, p, rng, now_ns);
}

void lumen_check_path_feedback(struct lumen_path *st, const struct lumen_path_params *p, __u32 entropy, __u32 signal,
			       __u64 now_ns)
{
	lumen_path_feedback(st, p, entropy, (enum lumen_path_signal)signal, now_ns, now_ns >> 8, now_ns >> 4);
}

/* lumen-dp frames (dp_wire.h): parse, build (BPF: payload written apart), CE. */
int lumen_check_dp_parse(const __u8 *frame, __u32 len, __u16 dport, struct lumen_dp_pkt *out)
{
	return lumen_dp_parse(frame, len, dport, out);
}

int lumen_check_dp_build(__u8 *buf, __u32 room, const struct lumen_dp_pkt *p)
{
	return lumen_dp_build(buf, room, p);
}

int lumen_check_dp_mark_ce(__u8 *frame, __u32 len)
{
	return lumen_dp_mark_ce(frame, len);
}

int lumen_check_dp_ack_fold(__u8 *older, __u32 older_len, const __u8 *newer, __u32 newer_len, __u16 dport)
{
	return lumen_dp_ack_fold(older, older_len, newer, newer_len, dport);
}

__u32 lumen_check_dp_hdr_len(__u32 type, __u32 ext_words)
{
	return lumen_dp_hdr_len(type, ext_words);
}

/* optical.h: a slot schedule's departure times and the rotor switch's
 * verdict (waits: now's in the low 16 bits, the next slot's above) */
__u64 lumen_check_departure(const struct lumen_slot_timing *t, __u64 now_ns, __u64 margin_ns, __u64 wire_ns,
			    __u32 waits)
{
	return lumen_slot_departure(t, now_ns, margin_ns, wire_ns, waits & 0xffffu, waits >> 16);
}

int lumen_check_rotor(const struct lumen_slot_timing *t, __u64 now_ns, __u32 src, __u32 dst, __u32 dst_now)
{
	struct lumen_slot_pos pos;

	if (lumen_slot_at(t, now_ns, &pos))
		return LUMEN_ROTOR_NOT_STARTED;
	return (int)lumen_rotor_check(&pos, src, dst, dst_now);
}

/* a departure across a change, its lookups in a table of one wait per slot
 * of each bank (the destination's) */
int lumen_check_change_departure(const struct lumen_sched_change *c, const struct lumen_sched_bank *banks, __u64 base,
				 __u64 wire_ns, __u64 *dep)
{
	static const __u32 waits[2][4] = {{0, 1, 0, 1}, {1, 0, 0, 0}};
	struct lumen_change_query q;

	lumen_change_lookup(c, banks, base, &q);
	if (q.need[0] && q.now[0] < 4 && q.next[0] < 4) {
		q.wait_now[0] = waits[q.bank[0]][q.now[0]];
		q.wait_next[0] = waits[q.bank[0]][q.next[0]];
	}
	if (q.need[1] && q.now[1] < 4 && q.next[1] < 4) {
		q.wait_now[1] = waits[q.bank[1]][q.now[1]];
		q.wait_next[1] = waits[q.bank[1]][q.next[1]];
	}
	return (int)lumen_change_departure(banks, 0, wire_ns, &q, dep);
}

__u64 lumen_check_wire_ns(__u32 len, __u32 rate_mbps)
{
	return lumen_wire_ns(len, rate_mbps);
}
