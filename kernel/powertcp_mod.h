/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What the files of tcp_powertcp.ko share:
 * tcp_powertcp.c (the congestion-control hooks, parameters, link speed,
 * loading) and powertcp_int.c (INT reception: the netfilter hook that stores
 * echoes, and its registration while powertcp sockets exist). The per-socket
 * state is explained at "Per-socket state" in tcp_powertcp.c, INT reception
 * and its trust model at the top of powertcp_int.c.
 */
#ifndef LUMEN_POWERTCP_MOD_H
#define LUMEN_POWERTCP_MOD_H

/*
 * The shared headers force inlining for the BPF verifier's sake
 * (lumen/types.h); here, as everywhere in the kernel, the compiler decides.
 * Before any lumen header: every file of the module includes this one first.
 */
#define LUMEN_INLINE static inline

#include <linux/percpu.h>
#include <linux/rhashtable.h>
#include <linux/spinlock.h>
#include <net/netns/generic.h>
#include <net/tcp.h>

#include "lumen/powertcp_ack.h"

/* Counters per namespace and CPU; read in /proc/net/powertcp (powertcp_stats.c). */
enum ptcp_counter {
	PTCP_CNT_FLOWS, /* init calls */
	PTCP_CNT_NO_MEM, /* state allocation failed: Reno fallback */
	PTCP_CNT_HASH_FAIL, /* state not in the socket table: no INT, no get_info */
	PTCP_CNT_ACKS, /* ACKs the control law processed */
	PTCP_CNT_INT_UPDATES, /* window updates from INT power */
	PTCP_CNT_RTT_UPDATES, /* theta_powertcp window updates */
	PTCP_CNT_FALLBACK_UPDATES, /* powertcp / hpcc updates from RTT: INT missing */
	PTCP_CNT_NO_INT, /* powertcp / hpcc ACKs without a new echo */
	PTCP_CNT_NO_STATE, /* ACKs of flows without state (Reno fallback) */
	PTCP_CNT_RESTARTS, /* idle restarts */
	PTCP_CNT_BW_DETECTED, /* host_bw_mbps=0: HostBw from the link speed */
	PTCP_CNT_BW_DEFAULT, /* host_bw_mbps=0: no link speed, default used */
	PTCP_CNT_INT_ECHOES, /* echoes the hook stored */
	PTCP_CNT_INT_MALFORMED, /* options lumen_int_parse() refused */
	PTCP_CNT_HOOK_SKIPPED, /* echo on a SYN, RST or segment without ACK */
	PTCP_CNT_HOOK_OLD_ACK, /* echo on an ACK outside [snd_una, snd_nxt] */
	PTCP_CNT_HOOK_BAD_CSUM, /* echo on a segment with a bad checksum */
	PTCP_CNT_HOOK_NO_STATE, /* echo for a powertcp / hpcc socket without state */
	PTCP_CNT_HOOK_LOOKUP, /* echo without skb->sk (no early demux): socket looked up */
	PTCP_CNT_INT_UNUSABLE, /* echoes the core could not use: no INT for the fallback */
	PTCP_CNT_RTT_GUARD, /* INT power overridden by the RTT floor (core, "Liveness") */
	PTCP_CNT_BW_CLAMPED, /* link speed x tau over the window limit: largest rate that fits */
	PTCP_CNT_HOOK_UNMATCHED, /* stored echo not from the ACK TCP accepted: not applied */
	PTCP_CNT_INT_TAKEN, /* echoes cong_control took for the ACK that carried them */
	PTCP_CNT_INT_SUPERSEDED, /* echo replaced by a newer one before any ACK took it */
	PTCP_CNT_HOOK_AHEAD, /* ACK found the echo of a later segment, kept for it (backlog) */
	PTCP_CNT_INT_GAP, /* of int_unusable: too long after the previous echo */
	PTCP_CNT_INT_STALE, /* of int_unusable: a stale or implausible hop */
	PTCP_CNT_INT_DUPLICATE, /* of int_unusable: the previous echo again */
	PTCP_CNT_INT_PATH_CHANGES, /* of int_unusable: hop count changed */
	PTCP_CNT_NO_INT_FLOWS, /* powertcp / hpcc flows without one INT echo after 16 RTTs */
	PTCP_CNT_LOSS_CUTS, /* windows halved on entering loss recovery */
	PTCP_CNT_LOSS_UNDOS, /* cuts undone: the loss was spurious */
	PTCP_CNT_HOOK_REG_FAIL, /* LOCAL_IN hooks could not be registered */
	PTCP_CNT_HOOK_REORDERED, /* echo from a segment older than the stored one's: not stored */
	PTCP_CNT_INT_RATE_CHANGES, /* of int_unusable: a hop's rate changed (a circuit came or went) */
	PTCP_CNT_MAX
};

struct ptcp_stats {
	u64 cnt[PTCP_CNT_MAX];
};

/* A namespace's (net_generic, ptcp_net_id). */
struct ptcp_net {
	struct ptcp_stats __percpu *stats; /* NULL once the namespace is being freed */
	struct ptcp_stats __percpu *gone; /* stats, while a grace period passes */
	atomic_long_t states; /* per-socket states allocated now */
};

extern unsigned int ptcp_net_id;

static inline struct ptcp_net *ptcp_net(const struct net *net)
{
	return net_generic(net, ptcp_net_id);
}

static inline void ptcp_count(const struct net *net, enum ptcp_counter c)
{
	struct ptcp_stats __percpu *stats;

	rcu_read_lock();
	stats = READ_ONCE(ptcp_net(net)->stats);
	if (stats)
		this_cpu_inc(stats->cnt[c]);
	rcu_read_unlock();
}

int ptcp_stats_init(void); /* module init, before any algorithm is registered */
void ptcp_stats_exit(void);

/* A socket's state (tcp_powertcp.c, "Per-socket state"). */
struct ptcp_sk {
	struct rhash_head node; /* in ptcp_socks, key sk */
	const struct sock *sk;
	struct rcu_head rcu;
	bool hashed;
	bool hooked; /* counted in ptcp_hook_users (powertcp, hpcc; not theta) */

	/* INT echo: written by the netfilter hook, taken by cong_control */
	spinlock_t lock;
	u32 echo_gen;
	u32 echo_gen_seen; /* the last echo_gen cong_control consumed */
	struct lumen_int_opt echo;
	/* the segment that carried it, to match it to the ACK TCP accepts */
	u32 echo_ack; /* its ack_seq */
	u32 echo_tsval; /* its TSval, when echo_has_ts */
	bool echo_has_ts; /* it carried a timestamp TCP parses (tstamp_ok) */
	u32 superseded; /* echoes replaced before any ACK took them */

	/* the rest only under the socket lock (CA callbacks) */
	u32 host_bw_mbps; /* link-speed mode: detected at init, 0 = none */
	u8 last_src; /* enum lumen_ptcp_result of the last window update */
	struct lumen_ptcp st;
};

/* Live states by socket address (tcp_powertcp.c, "Per-socket state"). */
extern struct rhashtable ptcp_socks;

/* The state of sk, for readers without the socket lock. Caller holds RCU. */
struct ptcp_sk *ptcp_lookup(const struct sock *sk);

/* Consistent snapshot of the module parameters (tcp_powertcp.c). */
void ptcp_params_read(struct lumen_ptcp_params *p);

/* The INT-fed algorithms, powertcp and hpcc, whose sockets the hook serves. */
extern struct tcp_congestion_ops ptcp_int_ops;
extern struct tcp_congestion_ops ptcp_hpcc_ops;

/* The name a mode is registered under (enum lumen_ptcp_mode). */
static inline const char *ptcp_mode_name(u32 mode)
{
	switch (mode) {
	case LUMEN_PTCP_MODE_INT:
		return "powertcp";
	case LUMEN_PTCP_MODE_THETA:
		return "theta_powertcp";
	case LUMEN_PTCP_MODE_HPCC:
		return "hpcc";
	default:
		return "unknown";
	}
}

/* powertcp_int.c: the hooks follow the powertcp and hpcc sockets (init / release). */
void ptcp_hook_get(struct ptcp_sk *s);
void ptcp_hook_put(struct ptcp_sk *s);
bool ptcp_hooks_registered(void);
void ptcp_hooks_exit(void); /* module exit: no socket is left */

#endif /* LUMEN_POWERTCP_MOD_H */
