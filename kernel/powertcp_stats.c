// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * powertcp_stats.c - what tcp_powertcp.ko tells a user, per network
 * namespace, in /proc/net (the files follow the reader's namespace, as
 * /proc/net/netstat does):
 *
 *   /proc/net/powertcp        one "name value" line per counter (enum
 *                             ptcp_counter) of this namespace's flows and
 *                             INT hooks; "states" = per-socket states
 *                             allocated now in this namespace, "hooks" = 1
 *                             while the LOCAL_IN hooks are registered
 *                             (host-wide, powertcp_int.c).
 *   /proc/net/powertcp_flows  one line per powertcp, theta_powertcp or hpcc
 *                             flow of this namespace: its algorithm, window,
 *                             tau in use (0: no RTT sample yet), rate and
 *                             why INT was not used for its ACKs (the
 *                             per-flow counts of struct lumen_ptcp_stats,
 *                             and echoes superseded before any ACK).
 *
 * Counters are per CPU and per namespace. A namespace's counters live from
 * its creation until every module subsystem has left it: the pointer is
 * cleared and an RCU grace period passes before the memory goes, so a
 * kernel socket that still acknowledges data in a dying namespace counts
 * into nothing instead of into freed memory.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>

#include "powertcp_mod.h"

static const char *const ptcp_counter_names[PTCP_CNT_MAX] = {
	[PTCP_CNT_FLOWS] = "flows",
	[PTCP_CNT_NO_MEM] = "no_mem",
	[PTCP_CNT_HASH_FAIL] = "hash_fail",
	[PTCP_CNT_ACKS] = "acks",
	[PTCP_CNT_INT_UPDATES] = "int_updates",
	[PTCP_CNT_RTT_UPDATES] = "rtt_updates",
	[PTCP_CNT_FALLBACK_UPDATES] = "fallback_updates",
	[PTCP_CNT_NO_INT] = "no_int",
	[PTCP_CNT_NO_STATE] = "no_state",
	[PTCP_CNT_RESTARTS] = "restarts",
	[PTCP_CNT_BW_DETECTED] = "bw_detected",
	[PTCP_CNT_BW_DEFAULT] = "bw_default",
	[PTCP_CNT_INT_ECHOES] = "int_echoes",
	[PTCP_CNT_INT_MALFORMED] = "int_malformed",
	[PTCP_CNT_HOOK_SKIPPED] = "hook_skipped",
	[PTCP_CNT_HOOK_OLD_ACK] = "hook_old_ack",
	[PTCP_CNT_HOOK_BAD_CSUM] = "hook_bad_csum",
	[PTCP_CNT_HOOK_NO_STATE] = "hook_no_state",
	[PTCP_CNT_HOOK_LOOKUP] = "hook_lookup",
	[PTCP_CNT_INT_UNUSABLE] = "int_unusable",
	[PTCP_CNT_RTT_GUARD] = "rtt_guard",
	[PTCP_CNT_BW_CLAMPED] = "bw_clamped",
	[PTCP_CNT_HOOK_UNMATCHED] = "hook_unmatched",
	[PTCP_CNT_HOOK_REORDERED] = "hook_reordered",
	[PTCP_CNT_INT_TAKEN] = "int_taken",
	[PTCP_CNT_INT_SUPERSEDED] = "int_superseded",
	[PTCP_CNT_HOOK_AHEAD] = "hook_ahead",
	[PTCP_CNT_INT_GAP] = "int_gap",
	[PTCP_CNT_INT_STALE] = "int_stale",
	[PTCP_CNT_INT_DUPLICATE] = "int_duplicate",
	[PTCP_CNT_INT_PATH_CHANGES] = "int_path_changes",
	[PTCP_CNT_NO_INT_FLOWS] = "no_int_flows",
	[PTCP_CNT_LOSS_CUTS] = "loss_cuts",
	[PTCP_CNT_LOSS_UNDOS] = "loss_undos",
	[PTCP_CNT_HOOK_REG_FAIL] = "hook_reg_fail",
	[PTCP_CNT_INT_RATE_CHANGES] = "int_rate_changes",
};

unsigned int ptcp_net_id __read_mostly;

static u64 ptcp_counter_sum(struct ptcp_stats __percpu *stats, enum ptcp_counter c)
{
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += READ_ONCE(per_cpu_ptr(stats, cpu)->cnt[c]);
	return sum;
}

static int ptcp_proc_counters(struct seq_file *seq, void *v)
{
	struct ptcp_net *pn = net_generic(seq_file_single_net(seq), ptcp_net_id);
	struct ptcp_stats __percpu *stats = READ_ONCE(pn->stats);
	int i;

	for (i = 0; i < PTCP_CNT_MAX; i++)
		seq_printf(seq, "%s %llu\n", ptcp_counter_names[i],
			   stats ? ptcp_counter_sum(stats, (enum ptcp_counter)i) : 0);
	seq_printf(seq, "states %ld\n", atomic_long_read(&pn->states));
	seq_printf(seq, "hooks %d\n", ptcp_hooks_registered());
	return 0;
}

/* A socket's two ends, as ss prints them. */
static void ptcp_proc_ends(struct seq_file *seq, const struct sock *sk)
{
	const struct inet_sock *inet = inet_sk(sk);

#if IS_ENABLED(CONFIG_IPV6)
	if (sk->sk_family == AF_INET6) {
		seq_printf(seq, "[%pI6c]:%u [%pI6c]:%u", &sk->sk_v6_rcv_saddr,
			   ntohs(inet->inet_sport), &sk->sk_v6_daddr, ntohs(inet->inet_dport));
		return;
	}
#endif
	seq_printf(seq, "%pI4:%u %pI4:%u", &inet->inet_saddr, ntohs(inet->inet_sport),
		   &inet->inet_daddr, ntohs(inet->inet_dport));
}

/*
 * One flow. The state is read without the socket lock (the values of one line
 * may come from different ACKs: a diagnostic, not a snapshot). Under the
 * walk's RCU section the state stays allocated (kfree_rcu) and the socket's
 * memory stays a socket (TCP sockets are SLAB_TYPESAFE_BY_RCU): a flow
 * released during the walk may show the ends of the socket that reused it.
 */
/* Where each per-flow count (powertcp.h) is in struct lumen_ptcp_stats. */
#define PTCP_FLOW_COUNT_OFF(field, name)                                                           \
	(offsetof(struct lumen_ptcp_stats, field) +                                                \
	 BUILD_BUG_ON_ZERO(sizeof_field(struct lumen_ptcp_stats, field) != sizeof(u32))),
static const u16 ptcp_flow_count_off[] = {LUMEN_PTCP_FLOW_COUNTS(PTCP_FLOW_COUNT_OFF)};
#undef PTCP_FLOW_COUNT_OFF

static void ptcp_proc_flow(struct seq_file *seq, const struct ptcp_sk *s, u64 base_rtt_ns)
{
	const struct lumen_ptcp_stats *c = &s->st.stats;
	unsigned int i;
	u64 tau_ns = base_rtt_ns ? base_rtt_ns : READ_ONCE(s->st.tau_ns);

	ptcp_proc_ends(seq, s->sk);
	seq_printf(seq, " %s %llu %llu %llu", ptcp_mode_name(READ_ONCE(s->st.mode)),
		   READ_ONCE(s->st.cwnd_bytes), div_u64(tau_ns, NSEC_PER_USEC),
		   READ_ONCE(s->st.pacing_rate) * 8);
	for (i = 0; i < ARRAY_SIZE(ptcp_flow_count_off); i++) {
		const u32 *count = (const u32 *)((const u8 *)c + ptcp_flow_count_off[i]);

		seq_put_decimal_ull(seq, " ", READ_ONCE(*count));
	}
	seq_put_decimal_ull(seq, " ", READ_ONCE(s->superseded));
	seq_putc(seq, '\n');
}

/* The columns: the shared per-flow counts (powertcp.h), then the module's own. */
#define PTCP_FLOW_NAME(field, name) " " name
#define PTCP_FLOWS_HEADER                                                                          \
	"local remote algo cwnd_bytes tau_us rate_bps" LUMEN_PTCP_FLOW_COUNTS(                     \
		PTCP_FLOW_NAME) " int_superseded\n"

/*
 * The whole table in one pass (single_open): a rhashtable walk may repeat or
 * skip entries across a resize, which a diagnostic listing tolerates.
 */
static int ptcp_proc_flows(struct seq_file *seq, void *v)
{
	const struct net *net = seq_file_single_net(seq);
	struct lumen_ptcp_params p;
	struct rhashtable_iter iter;
	struct ptcp_sk *s;

	ptcp_params_read(&p);
	seq_puts(seq, PTCP_FLOWS_HEADER);
	rhashtable_walk_enter(&ptcp_socks, &iter);
	rhashtable_walk_start(&iter);
	while ((s = rhashtable_walk_next(&iter))) {
		if (IS_ERR(s))
			continue; /* -EAGAIN: a resize restarted the walk */
		if (net_eq(sock_net(s->sk), net))
			ptcp_proc_flow(seq, s, p.base_rtt_ns);
	}
	rhashtable_walk_stop(&iter);
	rhashtable_walk_exit(&iter);
	return 0;
}

static int __net_init ptcp_stats_net_init(struct net *net)
{
	struct ptcp_net *pn = net_generic(net, ptcp_net_id);

	pn->stats = alloc_percpu(struct ptcp_stats);
	if (!pn->stats)
		return -ENOMEM;
	atomic_long_set(&pn->states, 0);
	if (!proc_create_net_single("powertcp", 0444, net->proc_net, ptcp_proc_counters, NULL) ||
	    !proc_create_net_single("powertcp_flows", 0444, net->proc_net, ptcp_proc_flows, NULL)) {
		remove_proc_entry("powertcp", net->proc_net);
		free_percpu(pn->stats);
		pn->stats = NULL;
		return -ENOMEM;
	}
	return 0;
}

static void __net_exit ptcp_stats_net_exit(struct net *net)
{
	remove_proc_entry("powertcp_flows", net->proc_net);
	remove_proc_entry("powertcp", net->proc_net);
}

/* After every exit method of the batch: counters go after a grace period. */
static void __net_exit ptcp_stats_net_exit_batch(struct list_head *net_list)
{
	struct ptcp_net *pn;
	struct net *net;

	list_for_each_entry(net, net_list, exit_list) {
		pn = net_generic(net, ptcp_net_id);
		pn->gone = pn->stats;
		WRITE_ONCE(pn->stats, NULL);
	}
	synchronize_rcu();
	list_for_each_entry(net, net_list, exit_list) {
		pn = net_generic(net, ptcp_net_id);
		free_percpu(pn->gone);
	}
}

static struct pernet_operations ptcp_stats_net_ops = {
	.init = ptcp_stats_net_init,
	.exit = ptcp_stats_net_exit,
	.exit_batch = ptcp_stats_net_exit_batch,
	.id = &ptcp_net_id,
	.size = sizeof(struct ptcp_net),
};

int ptcp_stats_init(void)
{
	return register_pernet_subsys(&ptcp_stats_net_ops);
}

void ptcp_stats_exit(void)
{
	unregister_pernet_subsys(&ptcp_stats_net_ops);
}
