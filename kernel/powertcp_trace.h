/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * powertcp_trace.h - tracepoint of tcp_powertcp.ko: the control state after
 * every ACK that cong_control processed.
 *
 *   echo 1 > /sys/kernel/tracing/events/powertcp/powertcp_ack/enable
 *   cat /sys/kernel/tracing/trace_pipe
 *
 * Fields: socket address and ports, algorithm (int = powertcp, theta =
 * theta_powertcp, hpcc = hpcc), what the ACK did (held, int = window from INT
 * power, rtt = window from RTT power; for hpcc, power is HPCC's normalised
 * inflight U, in the same Q16), INT hops of the last echo, the ACK's RTT sample
 * (0 = none), tau in use, window and window of the acknowledged data
 * (cwnd_old) in bytes, pacing rate in bytes/s, smoothed and last power in Q16
 * (65536 = 1.0); and the flow's counts of why INT was not used so far
 * (struct lumen_ptcp_stats): ACKs without INT hops (no_int), echoes that
 * gave no sample (unusable), of which: too long after the previous one
 * (gap), a stale or implausible hop (stale), the previous echo again
 * (duplicate), and re-baselines after a path change (path_changes).
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM powertcp

#if !defined(LUMEN_POWERTCP_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define LUMEN_POWERTCP_TRACE_H

#include <linux/tracepoint.h>
#include <net/inet_sock.h>

#include "lumen/powertcp.h"

/* clang-format off */
TRACE_EVENT(powertcp_ack,

	TP_PROTO(const struct sock *sk, const struct lumen_ptcp *st, int result,
		 u32 rtt_us, u64 power),

	TP_ARGS(sk, st, result, rtt_us, power),

	TP_STRUCT__entry(
		__field(const void *, skaddr)
		__field(u16, sport)
		__field(u16, dport)
		__field(u8, mode)
		__field(u8, result)
		__field(u8, hops)
		__field(u32, rtt_us)
		__field(u64, tau_ns)
		__field(u64, cwnd)
		__field(u64, cwnd_old)
		__field(u64, rate)
		__field(u64, power)
		__field(u64, last_power)
		__field(u32, int_missing)
		__field(u32, int_unusable)
		__field(u32, int_gap)
		__field(u32, int_stale)
		__field(u32, int_duplicate)
		__field(u32, int_path_changes)
	),

	TP_fast_assign(
		__entry->skaddr = sk;
		__entry->sport = ntohs(inet_sk(sk)->inet_sport);
		__entry->dport = ntohs(inet_sk(sk)->inet_dport);
		__entry->mode = st->mode;
		__entry->result = (u8)result;
		__entry->hops = st->prev_hop_count;
		__entry->rtt_us = rtt_us;
		__entry->tau_ns = st->tau_ns;
		__entry->cwnd = st->cwnd_bytes;
		__entry->cwnd_old = st->old_cwnd_bytes;
		__entry->rate = st->pacing_rate;
		__entry->power = power;
		__entry->last_power = st->last_power;
		__entry->int_missing = st->stats.int_missing;
		__entry->int_unusable = st->stats.int_unusable;
		__entry->int_gap = st->stats.int_gap;
		__entry->int_stale = st->stats.int_stale;
		__entry->int_duplicate = st->stats.int_duplicate;
		__entry->int_path_changes = st->stats.int_path_changes;
	),

	TP_printk("sk=%p sport=%u dport=%u mode=%s result=%s hops=%u rtt_us=%u tau_ns=%llu cwnd=%llu cwnd_old=%llu rate=%llu power=%llu last_power=%llu no_int=%u unusable=%u gap=%u stale=%u duplicate=%u path_changes=%u",
		  __entry->skaddr, __entry->sport, __entry->dport,
		  __print_symbolic(__entry->mode,
				   { LUMEN_PTCP_MODE_INT, "int" },
				   { LUMEN_PTCP_MODE_THETA, "theta" },
				   { LUMEN_PTCP_MODE_HPCC, "hpcc" }),
		  __print_symbolic(__entry->result,
				   { LUMEN_PTCP_HELD, "held" },
				   { LUMEN_PTCP_UPDATED_INT, "int" },
				   { LUMEN_PTCP_UPDATED_RTT, "rtt" }),
		  __entry->hops, __entry->rtt_us, __entry->tau_ns, __entry->cwnd,
		  __entry->cwnd_old, __entry->rate, __entry->power, __entry->last_power,
		  __entry->int_missing, __entry->int_unusable, __entry->int_gap,
		  __entry->int_stale, __entry->int_duplicate, __entry->int_path_changes)
);
/* clang-format on */

#endif /* LUMEN_POWERTCP_TRACE_H */

/* out of tree: the including file's directory is on the include path (Kbuild) */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE powertcp_trace
#include <trace/define_trace.h>
