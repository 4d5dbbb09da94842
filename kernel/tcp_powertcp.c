// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * tcp_powertcp.c - PowerTCP and theta-PowerTCP as a kernel module: the
 * kernel shell around the core. The algorithm is explained in
 * include/lumen/powertcp.h, and what is done around it per ACK, on idle and
 * on loss in include/lumen/powertcp_ack.h, both shared with the eBPF
 * struct_ops (bpf/powertcp.bpf.c). Registers powertcp (PowerTCP from INT;
 * without INT the core's RTT fallback) and theta_powertcp (RTT only).
 *
 * What this shell adds, each part explained at its section below:
 *  - Hooks: cong_control in both prototypes ((sk, rs) before 6.10, (sk, ack,
 *    flag, rs) from 6.10), init, release, cwnd_event, ssthresh, undo_cwnd,
 *    get_info. A flow without state (no memory) runs Reno (no_state).
 *  - INT reception: lumen's sockops program writes the request and echo
 *    options; a netfilter hook at LOCAL_IN reads the echoes for powertcp
 *    sockets, so the per-ACK path has no BPF map and no userspace. The hook
 *    is registered only while a powertcp socket exists ("Hook
 *    registration").
 *  - Trust model: the hook runs before TCP validates a segment. It stores an
 *    echo with its segment's ack_seq and TSval, and cong_control applies it
 *    only to the ACK that TCP accepted with exactly those, once; any other
 *    ACK counts as no_int. What lying INT can do is bounded by the core
 *    (powertcp.h, "Liveness"). Details at "INT reception".
 *  - State: struct ptcp_sk, allocated by init and pointed to from
 *    icsk_ca_priv; the hook and get_info, which run without the socket lock,
 *    find it in an RCU hash table instead ("Per-socket state").
 *  - Parameters: module_param_cb under /sys/module/tcp_powertcp/parameters/,
 *    validated as a set by lumen_ptcp_params_validate(), published under a
 *    seqlock and used by running flows from their next ACK; host_bw_mbps = 0
 *    takes the output device's link speed ("Link speed").
 *  - Counters: the read-only parameter `stats` (enum ptcp_counter); ss -ti
 *    through get_info (ptcp_get_info: rate and tau); the tracepoint powertcp:powertcp_ack
 *    (powertcp_trace.h) per ACK. Loading and unloading: at "Module".
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ethtool.h>
#include <linux/hashtable.h>
#include <linux/inet_diag.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/netdevice.h>
#include <linux/netfilter.h>
#include <linux/netfilter_ipv4.h>
#include <linux/netfilter_ipv6.h>
#include <linux/percpu.h>
#include <linux/rhashtable.h>
#include <linux/seqlock.h>
#include <linux/version.h>
#include <net/inet6_hashtables.h>
#include <net/inet_hashtables.h>
#include <net/ip.h>
#include <net/ipv6.h>
#include <net/net_namespace.h>
#include <net/tcp.h>

#include "lumen/powertcp_ack.h"
#include "lumen/tcp_option.h"

#define CREATE_TRACE_POINTS
#include "powertcp_trace.h"

/* ---------------------------------------------------------------------- */
/* Counters                                                                */

enum ptcp_counter {
	PTCP_CNT_FLOWS, /* init calls */
	PTCP_CNT_NO_MEM, /* state allocation failed: Reno fallback */
	PTCP_CNT_HASH_FAIL, /* state not in the socket table: no INT, no get_info */
	PTCP_CNT_ACKS, /* ACKs the control law processed */
	PTCP_CNT_INT_UPDATES, /* window updates from INT power */
	PTCP_CNT_RTT_UPDATES, /* theta_powertcp window updates */
	PTCP_CNT_FALLBACK_UPDATES, /* powertcp updates from RTT: INT missing */
	PTCP_CNT_NO_INT, /* powertcp ACKs without a new echo */
	PTCP_CNT_NO_STATE, /* ACKs of flows without state (Reno fallback) */
	PTCP_CNT_RESTARTS, /* idle restarts */
	PTCP_CNT_BW_DETECTED, /* host_bw_mbps=0: HostBw from the link speed */
	PTCP_CNT_BW_DEFAULT, /* host_bw_mbps=0: no link speed, default used */
	PTCP_CNT_INT_ECHOES, /* echoes the hook stored */
	PTCP_CNT_INT_MALFORMED, /* options lumen_int_parse() refused */
	PTCP_CNT_HOOK_SKIPPED, /* echo on a SYN, RST or segment without ACK */
	PTCP_CNT_HOOK_OLD_ACK, /* echo on an ACK outside [snd_una, snd_nxt] */
	PTCP_CNT_HOOK_BAD_CSUM, /* echo on a segment with a bad checksum */
	PTCP_CNT_HOOK_NO_STATE, /* echo for a powertcp socket without state */
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
	PTCP_CNT_INT_PATH_CHANGES, /* of int_unusable: hop count or rate changed */
	PTCP_CNT_NO_INT_FLOWS, /* powertcp flows without one INT echo after 16 RTTs */
	PTCP_CNT_LOSS_CUTS, /* windows halved on entering loss recovery */
	PTCP_CNT_LOSS_UNDOS, /* cuts undone: the loss was spurious */
	PTCP_CNT_HOOK_REG_FAIL, /* LOCAL_IN hooks could not be registered */
	PTCP_CNT_MAX
};

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
};

struct ptcp_stats {
	u64 cnt[PTCP_CNT_MAX];
};

static DEFINE_PER_CPU(struct ptcp_stats, ptcp_stats);
static atomic_long_t ptcp_states = ATOMIC_LONG_INIT(0); /* allocated ptcp_sk */
static bool ptcp_hooks_on; /* LOCAL_IN hooks registered ("Hook registration") */

static void ptcp_count(enum ptcp_counter c)
{
	this_cpu_inc(ptcp_stats.cnt[c]);
}

/* The counters of a LUMEN_PTCP_EV mask (powertcp_ack.h): same ids. */
static void ptcp_count_events(u32 events)
{
#define PTCP_COUNT_EVENT(id)                                                                                           \
	if (events & LUMEN_PTCP_EV(id))                                                                                \
		ptcp_count(PTCP_CNT_##id);
	LUMEN_PTCP_EVENTS(PTCP_COUNT_EVENT)
#undef PTCP_COUNT_EVENT
}

static u64 ptcp_counter_sum(enum ptcp_counter c)
{
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += READ_ONCE(per_cpu_ptr(&ptcp_stats, cpu)->cnt[c]);
	return sum;
}

/* ---------------------------------------------------------------------- */
/* Parameters                                                              */

/*
 * /sys/module/tcp_powertcp/parameters/, writable at runtime by root; one set
 * for both algorithms (ranges in MODULE_PARM_DESC below and in README.md).
 * A new value is validated by lumen_ptcp_params_validate() together with the
 * current values of the others; a refused one returns -EINVAL and logs the
 * parameter and its range, and the old value stays. The set is published
 * under a seqlock and every ACK reads a consistent snapshot, so running flows
 * use a new value from their next ACK.
 */

enum ptcp_param_id {
	PTCP_PARAM_BASE_RTT_US,
	PTCP_PARAM_HOST_BW_MBPS,
	PTCP_PARAM_EXPECTED_FLOWS,
	PTCP_PARAM_BETA_BYTES,
	PTCP_PARAM_GAMMA,
};

/* What the user wrote; 0 = auto where allowed. */
struct ptcp_conf {
	u32 base_rtt_us;
	u32 host_bw_mbps;
	u32 expected_flows;
	u32 beta_bytes;
	u32 gamma_permille;
};

struct ptcp_param_desc {
	enum ptcp_param_id id;
	u32 min, max; /* besides 0 where zero_ok */
	bool zero_ok;
	const char *range; /* for the log */
};

static const struct ptcp_param_desc ptcp_desc_base_rtt = {
	.id = PTCP_PARAM_BASE_RTT_US,
	.min = 1,
	.max = LUMEN_PTCP_BASE_RTT_MAX_NS / NSEC_PER_USEC,
	.zero_ok = true,
	.range = "0 (minimum RTT) or [1, 1000000] us",
};

static const struct ptcp_param_desc ptcp_desc_host_bw = {
	.id = PTCP_PARAM_HOST_BW_MBPS,
	.min = LUMEN_PTCP_HOST_BW_MIN_MBPS,
	.max = LUMEN_PTCP_HOST_BW_MAX_MBPS,
	.zero_ok = true,
	.range = "0 (link speed) or [1, 1600000] Mbit/s",
};

static const struct ptcp_param_desc ptcp_desc_flows = {
	.id = PTCP_PARAM_EXPECTED_FLOWS,
	.min = 1,
	.max = LUMEN_PTCP_EXPECTED_FLOWS_MAX,
	.range = "[1, 1000000]",
};

static const struct ptcp_param_desc ptcp_desc_beta = {
	.id = PTCP_PARAM_BETA_BYTES,
	.min = 1,
	.max = LUMEN_PTCP_BETA_MAX_BYTES,
	.zero_ok = true,
	.range = "0 (HostBw * tau / expected_flows) or [1, 1073741824] bytes",
};

static const struct ptcp_param_desc ptcp_desc_gamma = {
	.id = PTCP_PARAM_GAMMA,
	.min = 10,
	.max = 1000,
	.range = "[10, 1000] permille",
};

/* Protects ptcp_conf and ptcp_params; readers run per ACK, in softirq too. */
static DEFINE_SEQLOCK(ptcp_params_lock);

/*
 * insmod's parameters arrive one by one, in the order the user wrote them,
 * before init runs: each is range-checked then, and the set they make is
 * validated once, by init (which fails on a bad set). Only later writes
 * are checked against the parameters in force.
 */
static bool ptcp_params_loaded;

static struct ptcp_conf ptcp_conf = {
	.base_rtt_us = 0,
	.host_bw_mbps = 0,
	.expected_flows = LUMEN_PTCP_DEFAULT_EXPECTED_FLOWS,
	.beta_bytes = 0,
	.gamma_permille = 900,
};

/* ptcp_conf in the core's units; host_bw_mbps 0 still means "link speed". */
static struct lumen_ptcp_params ptcp_params = {
	.gamma = LUMEN_PTCP_DEFAULT_GAMMA,
	.expected_flows = LUMEN_PTCP_DEFAULT_EXPECTED_FLOWS,
	.beta_bytes = 0,
	.host_bw_mbps = 0,
	.base_rtt_ns = 0,
};

static void ptcp_conf_to_params(const struct ptcp_conf *c, struct lumen_ptcp_params *p)
{
	p->gamma = (u32)div_u64((u64)c->gamma_permille * LUMEN_PTCP_ONE + 500, 1000);
	p->expected_flows = c->expected_flows;
	p->beta_bytes = c->beta_bytes;
	p->host_bw_mbps = c->host_bw_mbps;
	p->base_rtt_ns = (u64)c->base_rtt_us * NSEC_PER_USEC;
}

static u32 *ptcp_conf_field(struct ptcp_conf *c, enum ptcp_param_id id)
{
	switch (id) {
	case PTCP_PARAM_BASE_RTT_US:
		return &c->base_rtt_us;
	case PTCP_PARAM_HOST_BW_MBPS:
		return &c->host_bw_mbps;
	case PTCP_PARAM_EXPECTED_FLOWS:
		return &c->expected_flows;
	case PTCP_PARAM_BETA_BYTES:
		return &c->beta_bytes;
	case PTCP_PARAM_GAMMA:
	default:
		return &c->gamma_permille;
	}
}

/*
 * The core validates complete sets; "link speed" is validated as the
 * default speed here and re-checked per flow with the detected one.
 */
static int ptcp_params_check(const struct lumen_ptcp_params *p)
{
	struct lumen_ptcp_params q = *p;

	if (!q.host_bw_mbps)
		q.host_bw_mbps = LUMEN_PTCP_DEFAULT_HOST_BW_MBPS;
	return lumen_ptcp_params_validate(&q);
}

static int ptcp_param_set(const char *val, const struct kernel_param *kp)
{
	const struct ptcp_param_desc *d = kp->arg;
	struct lumen_ptcp_params p;
	struct ptcp_conf c;
	u32 v, old;
	int err;

	err = kstrtou32(val, 0, &v);
	if (err || (v == 0 && !d->zero_ok) || (v != 0 && (v < d->min || v > d->max))) {
		pr_warn("%s: refused '%.*s': must be %s\n", kp->name, (int)min_t(size_t, strcspn(val, "\n"), 32), val,
			d->range);
		return -EINVAL;
	}
	write_seqlock_bh(&ptcp_params_lock);
	c = ptcp_conf;
	old = *ptcp_conf_field(&c, d->id);
	*ptcp_conf_field(&c, d->id) = v;
	ptcp_conf_to_params(&c, &p);
	err = ptcp_params_loaded ? ptcp_params_check(&p) : 0;
	if (!err) {
		ptcp_conf = c;
		ptcp_params = p;
	}
	write_sequnlock_bh(&ptcp_params_lock);
	if (err) {
		pr_warn("%s: refused %u (keeping %u): %s\n", kp->name, v, old, lumen_ptcp_param_strerror(err));
		return -EINVAL;
	}
	return 0;
}

static int ptcp_param_get(char *buf, const struct kernel_param *kp)
{
	const struct ptcp_param_desc *d = kp->arg;
	struct ptcp_conf c;
	unsigned int seq;

	do {
		seq = read_seqbegin(&ptcp_params_lock);
		c = ptcp_conf;
	} while (read_seqretry(&ptcp_params_lock, seq));
	return sysfs_emit(buf, "%u\n", *ptcp_conf_field(&c, d->id));
}

static const struct kernel_param_ops ptcp_param_ops = {
	.set = ptcp_param_set,
	.get = ptcp_param_get,
};

module_param_cb(base_rtt_us, &ptcp_param_ops, (void *)&ptcp_desc_base_rtt, 0644);
MODULE_PARM_DESC(base_rtt_us, "base RTT tau in us, [1, 1000000]; 0 = the flow's minimum RTT (default 0)");
module_param_cb(host_bw_mbps, &ptcp_param_ops, (void *)&ptcp_desc_host_bw, 0644);
MODULE_PARM_DESC(host_bw_mbps,
		 "host bandwidth in Mbit/s, [1, 1600000]; 0 = link speed of the output device, else 25000 (default 0)");
module_param_cb(expected_flows, &ptcp_param_ops, (void *)&ptcp_desc_flows, 0644);
MODULE_PARM_DESC(expected_flows, "N in beta = HostBw * tau / N, [1, 1000000] (default 10)");
module_param_cb(beta_bytes, &ptcp_param_ops, (void *)&ptcp_desc_beta, 0644);
MODULE_PARM_DESC(beta_bytes, "additive increase in bytes, [1, 2^30]; 0 = HostBw * tau / expected_flows (default 0)");
module_param_cb(gamma, &ptcp_param_ops, (void *)&ptcp_desc_gamma, 0644);
MODULE_PARM_DESC(gamma, "EWMA weight gamma in permille, [10, 1000] (default 900)");

static int ptcp_stats_set(const char *val, const struct kernel_param *kp)
{
	pr_warn("%s is read only\n", kp->name);
	return -EPERM;
}

static int ptcp_stats_get(char *buf, const struct kernel_param *kp)
{
	int len = 0, i;

	for (i = 0; i < PTCP_CNT_MAX; i++)
		len += sysfs_emit_at(buf, len, "%s %llu\n", ptcp_counter_names[i],
				     ptcp_counter_sum((enum ptcp_counter)i));
	len += sysfs_emit_at(buf, len, "states %ld\n", atomic_long_read(&ptcp_states));
	len += sysfs_emit_at(buf, len, "hooks %d\n", READ_ONCE(ptcp_hooks_on));
	return len;
}

static const struct kernel_param_ops ptcp_stats_ops = {
	.set = ptcp_stats_set,
	.get = ptcp_stats_get,
};

module_param_cb(stats, &ptcp_stats_ops, NULL, 0444);
MODULE_PARM_DESC(stats, "counters (read only); states = per-socket states allocated now");

/* Consistent snapshot of the parameters, for one ACK. */
static void ptcp_params_read(struct lumen_ptcp_params *p)
{
	unsigned int seq;

	do {
		seq = read_seqbegin(&ptcp_params_lock);
		*p = ptcp_params;
	} while (read_seqretry(&ptcp_params_lock, seq));
}

/* ---------------------------------------------------------------------- */
/* Link speed cache (host_bw_mbps = 0)                                     */

/*
 * Link speed: host_bw_mbps = 0 takes HostBw from the link speed of the
 * socket's output device (its route at init). ethtool's link settings may
 * only be read under RTNL, which init cannot take, so a netdevice notifier
 * (which runs under RTNL) caches the speed of every device on NETDEV_UP and
 * NETDEV_CHANGE and forgets it on NETDEV_DOWN / UNREGISTER; init looks the
 * device up in that cache under RCU. A device without a speed (loopback,
 * tunnels, virtio-net without speed=) gives the core's default, 25000 Mbit/s
 * (bw_default); veth reports 10000. When that rate times a configured
 * base_rtt_us exceeds the core's 1 GiB window limit (10 Gbit/s x 1 s, say),
 * the flow uses the largest rate that fits, counted as bw_clamped instead of
 * bw_detected / bw_default.
 */

struct ptcp_dev_bw {
	struct hlist_node node;
	const struct net_device *dev; /* key; removed before the device is freed */
	u32 mbps;
	struct rcu_head rcu;
};

#define PTCP_BW_HASH_BITS 6
static DEFINE_HASHTABLE(ptcp_bw_table, PTCP_BW_HASH_BITS);
static DEFINE_SPINLOCK(ptcp_bw_lock); /* writers; they also hold RTNL, except at exit */

/* Caller holds RCU or ptcp_bw_lock. */
static struct ptcp_dev_bw *ptcp_bw_find(const struct net_device *dev)
{
	struct ptcp_dev_bw *e;

	hash_for_each_possible_rcu(ptcp_bw_table, e, node, (unsigned long)dev, lockdep_is_held(&ptcp_bw_lock))
		if (e->dev == dev)
			return e;
	return NULL;
}

/* Link speed of dev in Mbit/s, 0 when unknown. Caller holds RTNL. */
static u32 ptcp_link_speed(struct net_device *dev)
{
	struct ethtool_link_ksettings ks;

	if (__ethtool_get_link_ksettings(dev, &ks))
		return 0;
	if (ks.base.speed == 0 || ks.base.speed == (u32)SPEED_UNKNOWN || ks.base.speed > LUMEN_PTCP_HOST_BW_MAX_MBPS)
		return 0;
	return ks.base.speed;
}

static void ptcp_bw_forget(struct net_device *dev)
{
	struct ptcp_dev_bw *e;

	spin_lock_bh(&ptcp_bw_lock);
	e = ptcp_bw_find(dev);
	if (e)
		hash_del_rcu(&e->node);
	spin_unlock_bh(&ptcp_bw_lock);
	if (e)
		kfree_rcu(e, rcu);
}

/* Caller holds RTNL (netdevice notifier). */
static void ptcp_bw_learn(struct net_device *dev)
{
	u32 mbps = ptcp_link_speed(dev);
	struct ptcp_dev_bw *e, *fresh = NULL;

	if (!mbps) {
		ptcp_bw_forget(dev);
		return;
	}
	fresh = kmalloc(sizeof(*fresh), GFP_KERNEL);
	spin_lock_bh(&ptcp_bw_lock);
	e = ptcp_bw_find(dev);
	if (e) {
		WRITE_ONCE(e->mbps, mbps);
	} else if (fresh) {
		fresh->dev = dev;
		fresh->mbps = mbps;
		hash_add_rcu(ptcp_bw_table, &fresh->node, (unsigned long)dev);
		fresh = NULL;
	}
	spin_unlock_bh(&ptcp_bw_lock);
	kfree(fresh);
}

static int ptcp_netdev_event(struct notifier_block *nb, unsigned long event, void *ptr)
{
	struct net_device *dev = netdev_notifier_info_to_dev(ptr);

	switch (event) {
	case NETDEV_UP:
	case NETDEV_CHANGE:
		ptcp_bw_learn(dev);
		break;
	case NETDEV_DOWN:
	case NETDEV_UNREGISTER:
		ptcp_bw_forget(dev);
		break;
	}
	return NOTIFY_DONE;
}

static struct notifier_block ptcp_netdev_nb = {
	.notifier_call = ptcp_netdev_event,
};

/* Empty the cache (module exit, after the notifier is gone). */
static void ptcp_bw_flush(void)
{
	struct ptcp_dev_bw *e;
	struct hlist_node *tmp;
	int bkt;

	spin_lock_bh(&ptcp_bw_lock);
	hash_for_each_safe(ptcp_bw_table, bkt, tmp, e, node) {
		hash_del_rcu(&e->node);
		kfree_rcu(e, rcu);
	}
	spin_unlock_bh(&ptcp_bw_lock);
}

/* HostBw for a new flow in link-speed mode: its output device's, or 0. */
static u32 ptcp_detect_bw(struct sock *sk)
{
	const struct ptcp_dev_bw *e = NULL;
	const struct dst_entry *dst;
	u32 mbps = 0;

	rcu_read_lock();
	dst = __sk_dst_get(sk);
	if (dst && dst->dev)
		e = ptcp_bw_find(dst->dev);
	if (e)
		mbps = READ_ONCE(e->mbps);
	rcu_read_unlock();
	return mbps;
}

/* ---------------------------------------------------------------------- */
/* Per-socket state                                                        */

/*
 * struct lumen_ptcp (window history, the previous ACK's INT hop stack, RTT
 * estimator) does not fit icsk_ca_priv, so, as tcp_cdg.c does, init
 * allocates a struct ptcp_sk (GFP_NOWAIT: init may run in softirq) and keeps
 * the pointer in icsk_ca_priv; release frees it. The CA callbacks run under
 * the socket lock, so for them the pointer is stable. The netfilter hook and
 * get_info (inet_diag calls it under RCU only, getsockopt(TCP_CC_INFO)
 * without the socket lock) run concurrently with setsockopt(TCP_CONGESTION),
 * which releases our state and lets another algorithm overwrite icsk_ca_priv:
 * re-checking icsk_ca_ops around reading the pointer narrows that window but
 * does not close it (no barrier orders the kernel's store of the new ops
 * before the new algorithm's writes to icsk_ca_priv, and ops can change back
 * to ours in between). So neither ever reads the pointer out of
 * icsk_ca_priv: they look the state up by socket address in the rhashtable
 * ptcp_socks, under RCU. release removes the state from the table before it
 * calls kfree_rcu(), so a lookup either misses or finds memory that stays
 * valid until the reader's RCU section ends; a hook that found a state just
 * being released writes an echo nobody reads, which is harmless. The table
 * holds live states only, so the socket address is an unambiguous key even
 * though TCP sockets are SLAB_TYPESAFE_BY_RCU. If the state cannot be
 * inserted (rhashtable under memory pressure) the flow still runs, without
 * INT and get_info (hash_fail).
 *
 * If init cannot allocate the state (no_mem), the flow runs a defined
 * fallback, Reno: tcp_reno_cong_avoid() per ACK, the window cut to
 * ssthresh = cwnd / 2 at once on entering recovery or CWR (no PRR), Reno's
 * undo, no internal pacing. Its ACKs count as no_state.
 */

struct ptcp_sk {
	struct rhash_head node; /* in ptcp_socks, key sk */
	const struct sock *sk;
	struct rcu_head rcu;
	bool hashed;
	bool hooked; /* counted in ptcp_hook_users (powertcp, not theta) */

	/* INT echo: written by the netfilter hook, taken by cong_control */
	spinlock_t lock;
	u32 echo_gen;
	u32 echo_gen_seen; /* the last echo_gen cong_control consumed */
	struct lumen_int_opt echo;
	/* the segment that carried it, to match it to the ACK TCP accepts */
	u32 echo_ack; /* its ack_seq */
	u32 echo_tsval; /* its TSval, when echo_has_ts */
	bool echo_has_ts; /* it carried a timestamp TCP parses (tstamp_ok) */

	/* the rest only under the socket lock (CA callbacks) */
	u32 host_bw_mbps; /* link-speed mode: detected at init, 0 = none */
	u8 last_src; /* enum lumen_ptcp_result of the last window update */
	struct lumen_ptcp st;
};

/* icsk_ca_priv: only the pointer; NULL = no state (Reno fallback). */
struct ptcp_ca {
	struct ptcp_sk *s;
};

/* ---------------------------------------------------------------------- */
/* Hook registration                                                       */

/*
 * The LOCAL_IN hooks ("INT reception") are needed only while a powertcp
 * socket exists: registering them makes every local packet of every network
 * namespace pass through netfilter. So init counts powertcp sockets, and the
 * first one queues a work item that registers the hooks in every namespace
 * (register_pernet_subsys sleeps, and init may run in softirq); when the
 * last one is released, the same work unregisters them PTCP_HOOK_LINGER
 * later, so back-to-back connections do not register and unregister each
 * time. The work compares the count with the hooks' state whenever it runs,
 * so any interleaving of the two ends in the state the count asks for.
 * Echoes that arrive before the first registration completes (the first
 * flow's first ACKs, typically none: the work runs within microseconds) are
 * not seen: that flow runs its RTT fallback until then. Registration
 * failure (no memory) is counted in hook_reg_fail and retried by the next
 * socket.
 */
#define PTCP_HOOK_LINGER (HZ)

static atomic_t ptcp_hook_users = ATOMIC_INIT(0);
static DEFINE_MUTEX(ptcp_hooks_lock); /* writers of ptcp_hooks_on */
static struct pernet_operations ptcp_net_ops;

static void ptcp_hooks_sync(struct work_struct *work)
{
	bool want = atomic_read(&ptcp_hook_users) > 0;

	mutex_lock(&ptcp_hooks_lock);
	if (want && !ptcp_hooks_on) {
		if (register_pernet_subsys(&ptcp_net_ops))
			ptcp_count(PTCP_CNT_HOOK_REG_FAIL);
		else
			WRITE_ONCE(ptcp_hooks_on, true);
	} else if (!want && ptcp_hooks_on) {
		unregister_pernet_subsys(&ptcp_net_ops);
		WRITE_ONCE(ptcp_hooks_on, false);
	}
	mutex_unlock(&ptcp_hooks_lock);
}

static DECLARE_DELAYED_WORK(ptcp_hooks_work, ptcp_hooks_sync);

static void ptcp_hook_get(struct ptcp_sk *s)
{
	s->hooked = true;
	if (atomic_inc_return(&ptcp_hook_users) == 1 || !READ_ONCE(ptcp_hooks_on))
		mod_delayed_work(system_wq, &ptcp_hooks_work, 0);
}

static void ptcp_hook_put(struct ptcp_sk *s)
{
	if (s->hooked && atomic_dec_and_test(&ptcp_hook_users))
		queue_delayed_work(system_wq, &ptcp_hooks_work, PTCP_HOOK_LINGER);
}

static struct rhashtable ptcp_socks;

static const struct rhashtable_params ptcp_socks_params = {
	.key_len = sizeof(const struct sock *),
	.key_offset = offsetof(struct ptcp_sk, sk),
	.head_offset = offsetof(struct ptcp_sk, node),
	.automatic_shrinking = true,
};

/* The state of sk, for readers without the socket lock. Caller holds RCU. */
static struct ptcp_sk *ptcp_lookup(const struct sock *sk)
{
	return rhashtable_lookup(&ptcp_socks, &sk, ptcp_socks_params);
}

/*
 * HostBw for link-speed mode: the detected speed, or the default without one;
 * if that rate times a configured tau exceeds the 1 GiB window limit, the
 * largest rate that fits (*clamped set). Never a rate the limit refuses.
 */
static u32 ptcp_fit_bw(const struct lumen_ptcp_params *p, u32 detected, bool *clamped)
{
	u32 rate = detected ? detected : LUMEN_PTCP_DEFAULT_HOST_BW_MBPS;
	u32 fit = lumen_ptcp_fit_host_bw(p, rate);

	*clamped = fit != rate;
	return fit;
}

/* Parameters for one ACK of this flow (link speed resolved). */
static void ptcp_flow_params(const struct ptcp_sk *s, struct lumen_ptcp_params *p)
{
	bool clamped;

	ptcp_params_read(p);
	if (p->host_bw_mbps)
		return;
	p->host_bw_mbps = ptcp_fit_bw(p, s->host_bw_mbps, &clamped);
}

/* Smoothed power (Q16) the last window update used: INT or RTT. */
static u64 ptcp_update_power(const struct ptcp_sk *s)
{
	return s->last_src == LUMEN_PTCP_UPDATED_INT ? s->st.smooth_power : s->st.smooth_rtt_power;
}

/* Install a window in segments and the core's pacing rate. */
static void ptcp_apply(struct sock *sk, const struct lumen_ptcp *st, u32 cwnd_segs)
{
	struct tcp_sock *tp = tcp_sk(sk);

	tcp_snd_cwnd_set(tp, cwnd_segs);
	WRITE_ONCE(sk->sk_pacing_rate,
		   (unsigned long)lumen_ptcp_pacing_cap(st->pacing_rate, READ_ONCE(sk->sk_max_pacing_rate)));
}

static void ptcp_init(struct sock *sk, enum lumen_ptcp_mode mode)
{
	struct ptcp_ca *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	struct lumen_ptcp_params p;
	struct ptcp_sk *s;

	ptcp_count(PTCP_CNT_FLOWS);
	ca->s = NULL;
	s = kzalloc(sizeof(*s), GFP_NOWAIT | __GFP_NOWARN);
	if (!s) {
		ptcp_count(PTCP_CNT_NO_MEM);
		return; /* Reno fallback, see "Per-socket state" */
	}
	atomic_long_inc(&ptcp_states);
	s->sk = sk;
	spin_lock_init(&s->lock);
	ptcp_params_read(&p);
	if (!p.host_bw_mbps) {
		bool clamped;

		s->host_bw_mbps = ptcp_detect_bw(sk);
		ptcp_fit_bw(&p, s->host_bw_mbps, &clamped);
		if (clamped)
			ptcp_count(PTCP_CNT_BW_CLAMPED);
		else
			ptcp_count(s->host_bw_mbps ? PTCP_CNT_BW_DETECTED : PTCP_CNT_BW_DEFAULT);
	}
	ptcp_flow_params(s, &p);
	lumen_ptcp_init(&s->st, &p, mode, tp->snd_nxt, tp->mss_cache);
	s->hashed = !rhashtable_insert_fast(&ptcp_socks, &s->node, ptcp_socks_params);
	if (!s->hashed)
		ptcp_count(PTCP_CNT_HASH_FAIL);
	else if (mode == LUMEN_PTCP_MODE_INT)
		ptcp_hook_get(s); /* only a hashed state can receive echoes */
	ca->s = s;

	s->st.loss.delivered = tp->delivered;
	cmpxchg(&sk->sk_pacing_status, SK_PACING_NONE, SK_PACING_NEEDED);
	ptcp_apply(sk, &s->st, lumen_ptcp_cwnd_segs(s->st.cwnd_bytes, tp->mss_cache, tp->snd_cwnd_clamp));
}

static void ptcp_int_init(struct sock *sk)
{
	ptcp_init(sk, LUMEN_PTCP_MODE_INT);
}

static void ptcp_theta_init(struct sock *sk)
{
	ptcp_init(sk, LUMEN_PTCP_MODE_THETA);
}

static void ptcp_release(struct sock *sk)
{
	struct ptcp_ca *ca = inet_csk_ca(sk);
	struct ptcp_sk *s = ca->s;

	if (!s)
		return;
	ca->s = NULL;
	/* out of the table first: later lookups miss, earlier ones stay valid */
	if (s->hashed)
		rhashtable_remove_fast(&ptcp_socks, &s->node, ptcp_socks_params);
	ptcp_hook_put(s);
	kfree_rcu(s, rcu);
	atomic_long_dec(&ptcp_states);
}

/* ---------------------------------------------------------------------- */
/* Congestion control                                                      */

/*
 * No state: Reno. The kernel skips PRR for algorithms with cong_control,
 * so a reduction happens at once: cwnd = ssthresh (= cwnd / 2, Reno's).
 */
static void ptcp_fallback(struct sock *sk, const struct rate_sample *rs)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (tcp_in_cwnd_reduction(sk)) {
		tcp_snd_cwnd_set(tp, max(min(tcp_snd_cwnd(tp), tp->snd_ssthresh), 2U));
		return;
	}
	if (rs->acked_sacked > 0)
		tcp_reno_cong_avoid(sk, tp->snd_una, rs->acked_sacked);
}

/*
 * The stored echo, if it came on the segment that TCP is acknowledging now.
 * cong_control runs from tcp_ack() for a segment TCP accepted, after
 * snd_una moved to its ack_seq, with rx_opt holding that segment's parsed
 * options. lumen_ptcp_echo_match() (powertcp_ack.h) places the echo: this
 * ACK's is taken; one from a segment TCP is done with or dropped (bad
 * sequence, PAWS, ...) is consumed unused; one from a later segment that
 * still waits in the backlog is kept for it.
 */
static bool ptcp_take_echo(struct ptcp_sk *s, const struct tcp_sock *tp, struct lumen_int_opt *echo)
{
	bool taken = false;

	spin_lock_bh(&s->lock);
	if (s->echo_gen != s->echo_gen_seen) {
		switch (lumen_ptcp_echo_match(s->echo_ack, s->echo_has_ts, s->echo_tsval, tp->snd_una,
					      tp->rx_opt.saw_tstamp, tp->rx_opt.rcv_tsval)) {
		case LUMEN_PTCP_ECHO_THIS_ACK:
			*echo = s->echo;
			s->echo_gen_seen = s->echo_gen;
			ptcp_count(PTCP_CNT_INT_TAKEN);
			taken = true;
			break;
		case LUMEN_PTCP_ECHO_OLDER:
			s->echo_gen_seen = s->echo_gen;
			ptcp_count(PTCP_CNT_HOOK_UNMATCHED);
			break;
		case LUMEN_PTCP_ECHO_NEWER:
			ptcp_count(PTCP_CNT_HOOK_AHEAD);
			break;
		}
	}
	spin_unlock_bh(&s->lock);
	return taken;
}

/*
 * A powertcp flow that never saw INT (NO_INT_FLOWS, powertcp_ack.h) runs on
 * RTT alone: said in the kernel log, since nothing else would tell a user
 * that INT is missing on the path.
 */
static void ptcp_warn_no_int(const struct sock *sk)
{
	const struct inet_sock *inet = inet_sk(sk);

#if IS_ENABLED(CONFIG_IPV6)
	if (sk->sk_family == AF_INET6) {
		pr_warn_ratelimited("powertcp flow [%pI6c]:%u -> [%pI6c]:%u: no INT echo after %u RTTs, running on "
				    "RTT alone: INT sockops on both hosts and an INT switch on the path?\n",
				    &sk->sk_v6_rcv_saddr, ntohs(inet->inet_sport), &sk->sk_v6_daddr,
				    ntohs(inet->inet_dport), LUMEN_PTCP_NO_INT_ROUNDS);
		return;
	}
#endif
	pr_warn_ratelimited("powertcp flow %pI4:%u -> %pI4:%u: no INT echo after %u RTTs, running on RTT alone: INT "
			    "sockops on both hosts and an INT switch on the path?\n",
			    &inet->inet_saddr, ntohs(inet->inet_sport), &inet->inet_daddr, ntohs(inet->inet_dport),
			    LUMEN_PTCP_NO_INT_ROUNDS);
}

/*
 * cong_control, for an ACK TCP accepted. rs->rtt_us is the ACK's RTT sample,
 * which the kernel fills from the same value it passes to pkts_acked, in
 * every version (< 0: none). The echo is taken under s->lock with
 * spin_lock_bh: from the socket backlog this runs in process context with BH
 * enabled, and the hook writes from softirq.
 */
static void ptcp_on_ack(struct sock *sk, const struct rate_sample *rs)
{
	struct ptcp_ca *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	struct ptcp_sk *s = ca->s;
	struct lumen_int_opt echo;
	struct lumen_ptcp_params p;
	struct lumen_ptcp_ack ack;
	struct lumen_ptcp_tcp t;
	enum lumen_ptcp_result res;
	bool have_echo = false;
	long rtt_us = rs->rtt_us;
	u32 events;

	if (!s) {
		ptcp_count(PTCP_CNT_NO_STATE);
		ptcp_fallback(sk, rs);
		return;
	}
	ptcp_flow_params(s, &p);
	lumen_ptcp_ack_make(&ack, tp->tcp_mstamp, rtt_us, tp->snd_una, tp->snd_nxt, tp->mss_cache);

	lumen_ptcp_tcp_make(&t, inet_csk(sk)->icsk_ca_state, tp->packets_out, tp->sacked_out, tp->lost_out,
			    tp->retrans_out, tp->delivered, tp->data_segs_out, tcp_snd_cwnd(tp));

	if (s->st.mode == LUMEN_PTCP_MODE_INT)
		have_echo = ptcp_take_echo(s, tp, &echo);

	events = lumen_ptcp_loss_begin(&s->st, &p, &t, tp->snd_nxt, tp->mss_cache);
	events |= lumen_ptcp_ack_process(&s->st, &p, &ack, have_echo ? &echo : NULL, &res);
	ptcp_count_events(events);
	if (events & LUMEN_PTCP_EV(NO_INT_FLOWS))
		ptcp_warn_no_int(sk);
	if (res != LUMEN_PTCP_HELD)
		s->last_src = (u8)res;
	ptcp_apply(sk, &s->st, lumen_ptcp_loss_cwnd(&s->st, &p, &t, tp->mss_cache, tp->snd_cwnd_clamp));
	trace_powertcp_ack(sk, &s->st, res, rtt_us < 0 ? 0 : (u32)rtt_us, ptcp_update_power(s));
}

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 10, 0)
static void ptcp_cong_control(struct sock *sk, u32 ack, int flag, const struct rate_sample *rs)
{
	ptcp_on_ack(sk, rs);
}
#else
static void ptcp_cong_control(struct sock *sk, const struct rate_sample *rs)
{
	ptcp_on_ack(sk, rs);
}
#endif

/* Idle restart (include/lumen/powertcp_ack.h, "Idle"). */
static void ptcp_cwnd_event(struct sock *sk, enum tcp_ca_event ev)
{
	struct ptcp_ca *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	struct ptcp_sk *s = ca->s;

	if (s)
		ptcp_count_events(lumen_ptcp_tx_event(&s->st, LUMEN_PTCP_TX_EVENT(ev),
						      lumen_ptcp_tcp_ns(tp->tcp_mstamp), tp->snd_nxt));
}

/* No slow start; cong_control cuts on loss (powertcp_ack.h, "Loss and recovery"). */
static u32 ptcp_ssthresh(struct sock *sk)
{
	const struct ptcp_ca *ca = inet_csk_ca(sk);

	return ca->s ? TCP_INFINITE_SSTHRESH : tcp_reno_ssthresh(sk);
}

/* A spurious loss episode: the window before the cut comes back. */
static u32 ptcp_undo_cwnd(struct sock *sk)
{
	const struct ptcp_ca *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	struct ptcp_sk *s = ca->s;
	struct lumen_ptcp_params p;
	u32 events = 0, segs;

	if (!s)
		return tcp_reno_undo_cwnd(sk);
	ptcp_flow_params(s, &p);
	segs = lumen_ptcp_undo(&s->st, &p, tp->snd_nxt, tp->mss_cache, tp->snd_cwnd_clamp, &events);
	ptcp_count_events(events);
	ptcp_apply(sk, &s->st, segs);
	return segs;
}

/*
 * ss -ti: ss prints only the diag structures it knows (vegas, dctcp, bbr),
 * so get_info answers with struct tcp_bbr_info, filled only with what its
 * fields mean for any rate-and-window algorithm:
 *	bbr:(bw:R,mrtt:T,pacing_gain:1,cwnd_gain:1)
 *	  R  the rate the core paces at: cwnd / tau (ss prints bits/s)
 *	  T  tau in use, ms: base_rtt_us, or the flow's windowed minimum RTT
 *	  gains 1: paced at exactly cwnd / tau, a window of rate x tau
 * A flow without state (the Reno fallback) answers nothing. The power,
 * INT hops and the reasons INT was not used are per-ACK state: the
 * tracepoint powertcp:powertcp_ack.
 */
static size_t ptcp_get_info(struct sock *sk, u32 ext, int *attr, union tcp_cc_info *info)
{
	struct lumen_ptcp_params p;
	const struct ptcp_sk *s;
	size_t len = 0;

	if (!(ext & (1 << (INET_DIAG_BBRINFO - 1))) && !(ext & (1 << (INET_DIAG_VEGASINFO - 1))))
		return 0;
	ptcp_params_read(&p);
	rcu_read_lock();
	s = ptcp_lookup(sk);
	if (s) {
		/* a snapshot; fields may be one ACK apart */
		u64 rate = data_race(s->st.pacing_rate), tau = data_race(lumen_ptcp_tau(&s->st, &p));

		memset(&info->bbr, 0, sizeof(info->bbr));
		info->bbr.bbr_bw_lo = (u32)rate;
		info->bbr.bbr_bw_hi = (u32)(rate >> 32);
		info->bbr.bbr_min_rtt = (u32)min_t(u64, div_u64(tau, NSEC_PER_USEC), U32_MAX);
		info->bbr.bbr_pacing_gain = 256; /* BBR_UNIT: 1.0 */
		info->bbr.bbr_cwnd_gain = 256;
		*attr = INET_DIAG_BBRINFO;
		len = sizeof(info->bbr);
	}
	rcu_read_unlock();
	return len;
}

/* The two algorithms differ only in their init (the mode) and name. */
#define PTCP_OPS(init_fn, algo_name)                                                                                   \
	{                                                                                                              \
		.init = init_fn, .release = ptcp_release, .ssthresh = ptcp_ssthresh, .undo_cwnd = ptcp_undo_cwnd,      \
		.cwnd_event = ptcp_cwnd_event, .cong_control = ptcp_cong_control, .get_info = ptcp_get_info,           \
		.owner = THIS_MODULE, .name = algo_name,                                                               \
	}

static struct tcp_congestion_ops ptcp_int_ops __read_mostly = PTCP_OPS(ptcp_int_init, "powertcp");
static struct tcp_congestion_ops ptcp_theta_ops __read_mostly = PTCP_OPS(ptcp_theta_init, "theta_powertcp");

/* ---------------------------------------------------------------------- */
/* INT reception: netfilter hook at LOCAL_IN                               */

/*
 * The sender's request option and the receiver's echo are written by lumen's
 * eBPF sockops program (bpf/int_sockops.bpf.c, `lumen int enable`): the kernel
 * offers custom TCP options to BPF only, and a module that wrote options
 * itself would have to patch tcp_output. The module reads the echoes itself.
 * Congestion-control hooks never see the skb, so a netfilter hook at
 * NF_INET_LOCAL_IN (IPv4 and IPv6, registered in every network namespace via
 * pernet_operations while a powertcp socket exists, priority last but one:
 * after filtering, so dropped segments are not used) looks at incoming TCP
 * segments:
 *
 *  1. skb->sk, set by early demux for established sockets, must be a full
 *     TCP socket whose icsk_ca_ops is &ptcp_int_ops (one pointer compare;
 *     every segment of every other socket leaves the hook here). The skb
 *     holds a reference on skb->sk, so the socket cannot go away.
 *  2. The TCP header and options are copied with skb_header_pointer() (no
 *     assumption about linear data; the skb is not modified) and walked
 *     with TCP's own rules: bounded by the header length, an option whose
 *     length is < 2 or runs past the header ends the walk. Segments without
 *     our option (kind 253, ExID 0x4C55), or carrying a request (data
 *     towards a receiver that also runs powertcp), leave here.
 *  3. Without skb->sk (early demux off: net.ipv4.ip_early_demux or
 *     tcp_early_demux = 0; loopback, whose skbs keep their route so early
 *     demux does not run) the hook looks the established socket up itself,
 *     as tcp_v4_rcv / tcp_v6_rcv will (__inet{,6}_lookup_established, a
 *     reference dropped at the end), and applies step 1 to it; counted as
 *     hook_lookup. Only echo-carrying segments pay for this lookup.
 *     IPv4 fragments are reassembled before LOCAL_IN, so the hook sees the
 *     whole segment (looked up: early demux skips fragments); IPv6 reassembles
 *     after LOCAL_IN, and the hook leaves IPv6 fragments alone: an echo that
 *     crossed the network in fragments is lost (no_int), never misread.
 *  4. The echo is parsed by lumen_int_parse(), which checks every length and
 *     field (refused: int_malformed). It is used only on an ACK that is
 *     neither SYN nor RST, whose ack_seq lies in [snd_una, snd_nxt] (old
 *     ACKs, which tcp_ack() ignores, are dropped here too; a blind attacker
 *     must hit the window, as for TCP itself) and whose TCP checksum is right
 *     (nf_checksum, as conntrack does; TCP then reuses the result).
 *  5. The socket's state is looked up in ptcp_socks ("Per-socket state");
 *     the echo is copied into it, with the segment's ack_seq and, when the
 *     connection uses timestamps, its TSval, and its generation counter
 *     (echo_gen) bumped, under a per-socket spinlock.
 *
 * cong_control, which runs later for the same ACK (tcp_v4_rcv -> tcp_ack),
 * takes the echo when echo_gen differs from the generation it consumed last
 * and the echo came on the very segment TCP is processing (ptcp_take_echo).
 * Otherwise the ACK carried no INT (no_int; an echo from a segment TCP is
 * done with also counts hook_unmatched and is dropped, one from a later
 * segment hook_ahead and is kept for it).
 *
 * Trust model, in detail:
 *  - The hook runs before TCP validates a segment (sequence window, PAWS,
 *    MD5, socket filters). A segment TCP drops never reaches cong_control,
 *    and its stored echo does not match the next ACK TCP accepts (another
 *    ack_seq or TSval): it is never applied. An off-path attacker must guess
 *    the exact next ack_seq and TSval of the peer, on top of the checks in 4;
 *    without timestamps, the exact next ack_seq. A forged segment that TCP
 *    accepts is TCP's problem as much as ours.
 *  - An on-path attacker or a lying receiver controls INT. The core bounds
 *    what that can do (include/lumen/powertcp.h, "Liveness"): INT that
 *    cannot be used counts as none, and INT hiding a persistent queue is
 *    overridden by the RTT; the window stays within [2 MSS, BDP + beta].
 *  - ACKs that wait in the socket backlog while the application holds the
 *    socket lock were all seen by the hook on arrival, so only the newest
 *    echo is stored (the ones it replaced count int_superseded), and it
 *    matches only the newest of them: the earlier ones find it ahead of
 *    them and leave it (hook_ahead, no_int), the newest takes it. INT
 *    counters are cumulative, so skipping intermediate echoes loses no
 *    information: the next power sample spans the gap. No echo is ever
 *    applied twice, or to another segment than its own.
 *  - While the hooks are registered (only while a powertcp socket exists,
 *    "Hook registration") every namespace's local input passes through
 *    netfilter; for segments of other algorithms that costs the hook call
 *    and one pointer compare.
 * The eBPF sockops program parses the same echoes into its own map for the
 * struct_ops version; the two do not interact.
 */

/*
 * The established socket of a segment that early demux did not assign
 * (early demux off, or loopback, whose skbs keep their route): the lookup
 * tcp_v4_rcv / tcp_v6_rcv will do. Returns a reference (sock_gen_put) or NULL.
 */
static struct sock *ptcp_nf_lookup(struct sk_buff *skb, const struct tcphdr *th, const struct nf_hook_state *state)
{
	struct net *net = state->net;

	if (state->pf == NFPROTO_IPV4) {
		const struct iphdr *iph = ip_hdr(skb);

		return __inet_lookup_established(net, net->ipv4.tcp_death_row.hashinfo, iph->saddr, th->source,
						 iph->daddr, ntohs(th->dest), inet_iif(skb), inet_sdif(skb));
	}
#if IS_ENABLED(CONFIG_IPV6)
	if (state->pf == NFPROTO_IPV6) {
		const struct ipv6hdr *ip6h = ipv6_hdr(skb);

		return __inet6_lookup_established(net, net->ipv4.tcp_death_row.hashinfo, &ip6h->saddr, th->source,
						  &ip6h->daddr, ntohs(th->dest), inet6_iif(skb), inet6_sdif(skb));
	}
#endif
	return NULL;
}

static bool ptcp_is_int_sock(const struct sock *sk)
{
	/* type and protocol first: only then is sk an inet_connection_sock */
	return sk_fullsock(sk) && sk->sk_type == SOCK_STREAM && sk->sk_protocol == IPPROTO_TCP &&
	       READ_ONCE(inet_csk(sk)->icsk_ca_ops) == &ptcp_int_ops;
}

/*
 * Store the echo of an ACK for sk (a powertcp socket), after the checks,
 * with what identifies its segment: ack_seq, and TSval when TCP parses
 * timestamps on this connection (tstamp_ok; TCP takes a TS option of length
 * 10 only). o/optlen is the segment's option block, the echo at offset off.
 */
static void ptcp_nf_echo(struct sock *sk, struct sk_buff *skb, unsigned int thoff, const struct tcphdr *th,
			 const struct lumen_tcp_opts *o, unsigned int optlen, int off,
			 const struct nf_hook_state *state)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct lumen_int_opt echo;
	struct ptcp_sk *s;
	u32 ack, tsval = 0;
	bool has_ts = false;
	int ts;

	if (lumen_int_parse(o->b + off, optlen - (unsigned int)off, &echo) || !(echo.flags & LUMEN_INT_FLAG_ECHO)) {
		ptcp_count(PTCP_CNT_INT_MALFORMED);
		return;
	}
	if (th->syn || th->rst || !th->ack) {
		ptcp_count(PTCP_CNT_HOOK_SKIPPED);
		return;
	}
	ack = ntohl(th->ack_seq);
	if (before(ack, READ_ONCE(tp->snd_una)) || after(ack, READ_ONCE(tp->snd_nxt))) {
		ptcp_count(PTCP_CNT_HOOK_OLD_ACK);
		return;
	}
	s = ptcp_lookup(sk);
	if (!s) {
		ptcp_count(PTCP_CNT_HOOK_NO_STATE);
		return;
	}
	if (nf_checksum(skb, state->hook, thoff, IPPROTO_TCP, state->pf)) {
		ptcp_count(PTCP_CNT_HOOK_BAD_CSUM);
		return;
	}
	ts = lumen_tcp_opt_find(o, optlen, TCPOPT_TIMESTAMP, 0);
	if (ts >= 0 && o->b[ts + 1] == TCPOLEN_TIMESTAMP && tp->rx_opt.tstamp_ok) {
		tsval = (u32)o->b[ts + 2] << 24 | (u32)o->b[ts + 3] << 16 | (u32)o->b[ts + 4] << 8 | o->b[ts + 5];
		has_ts = true;
	}
	spin_lock(&s->lock);
	if (s->echo_gen != s->echo_gen_seen)
		ptcp_count(PTCP_CNT_INT_SUPERSEDED);
	s->echo = echo;
	s->echo_ack = ack;
	s->echo_tsval = tsval;
	s->echo_has_ts = has_ts;
	s->echo_gen++;
	spin_unlock(&s->lock);
	ptcp_count(PTCP_CNT_INT_ECHOES);
}

/* One TCP segment; thoff is the TCP header's offset from skb->data. */
static void ptcp_nf_tcp(struct sk_buff *skb, unsigned int thoff, const struct nf_hook_state *state)
{
	struct lumen_tcp_opts optbuf;
	struct sock *sk = skb->sk, *ref;
	const struct tcphdr *th;
	struct tcphdr thbuf;
	unsigned int optlen;
	const u8 *opts;
	int off;

	/* every segment of a socket that is not powertcp leaves here */
	if (sk && !ptcp_is_int_sock(sk))
		return;
	th = skb_header_pointer(skb, thoff, sizeof(thbuf), &thbuf);
	if (!th || th->doff * 4 < sizeof(*th))
		return;
	optlen = th->doff * 4 - sizeof(*th);
	if (optlen < LUMEN_INT_HDR_LEN)
		return;
	/* optlen <= 40 = sizeof(optbuf): doff is 4 bits */
	opts = skb_header_pointer(skb, thoff + sizeof(*th), optlen, &optbuf);
	if (!opts)
		return;
	if (opts != optbuf.b)
		memcpy(optbuf.b, opts, optlen); /* the walker takes a whole block */
	opts = optbuf.b;
	/* TCP's own walk (include/lumen/tcp_option.h), shared with the switch */
	off = lumen_tcp_opt_find(&optbuf, optlen, LUMEN_INT_KIND, LUMEN_INT_EXID);
	/* no option, or a request (data towards a powertcp receiver: the peer's) */
	if (off < 0 || (unsigned int)off + LUMEN_INT_HDR_LEN > optlen || !(opts[off + 4] & LUMEN_INT_FLAG_ECHO))
		return;
	if (sk) {
		ptcp_nf_echo(sk, skb, thoff, th, &optbuf, optlen, off, state);
		return;
	}
	ref = ptcp_nf_lookup(skb, th, state);
	if (!ref)
		return;
	if (ptcp_is_int_sock(ref)) {
		ptcp_count(PTCP_CNT_HOOK_LOOKUP);
		ptcp_nf_echo(ref, skb, thoff, th, &optbuf, optlen, off, state);
	}
	sock_gen_put(ref);
}

static unsigned int ptcp_nf_ipv4(void *priv, struct sk_buff *skb, const struct nf_hook_state *state)
{
	const struct iphdr *iph = ip_hdr(skb);

	if (iph->protocol == IPPROTO_TCP && !ip_is_fragment(iph))
		ptcp_nf_tcp(skb, skb_network_offset(skb) + ip_hdrlen(skb), state);
	return NF_ACCEPT;
}

#if IS_ENABLED(CONFIG_IPV6)
static unsigned int ptcp_nf_ipv6(void *priv, struct sk_buff *skb, const struct nf_hook_state *state)
{
	u8 nexthdr = ipv6_hdr(skb)->nexthdr;
	__be16 frag_off;
	int thoff;

	/* fragments (any with an offset or more to come) are reassembled only
	 * after LOCAL_IN: a fragment's TCP header cannot be checked, so leave it */
	thoff = ipv6_skip_exthdr(skb, skb_network_offset(skb) + sizeof(struct ipv6hdr), &nexthdr, &frag_off);
	if (thoff >= 0 && nexthdr == IPPROTO_TCP && !(frag_off & htons(IP6_OFFSET | IP6_MF)))
		ptcp_nf_tcp(skb, (unsigned int)thoff, state);
	return NF_ACCEPT;
}
#endif

static const struct nf_hook_ops ptcp_nf_ops[] = {
	{
		.hook = ptcp_nf_ipv4,
		.pf = NFPROTO_IPV4,
		.hooknum = NF_INET_LOCAL_IN,
		.priority = NF_IP_PRI_LAST - 1,
	},
#if IS_ENABLED(CONFIG_IPV6)
	{
		.hook = ptcp_nf_ipv6,
		.pf = NFPROTO_IPV6,
		.hooknum = NF_INET_LOCAL_IN,
		.priority = NF_IP6_PRI_LAST - 1,
	},
#endif
};

static int __net_init ptcp_net_init(struct net *net)
{
	return nf_register_net_hooks(net, ptcp_nf_ops, ARRAY_SIZE(ptcp_nf_ops));
}

static void __net_exit ptcp_net_exit(struct net *net)
{
	nf_unregister_net_hooks(net, ptcp_nf_ops, ARRAY_SIZE(ptcp_nf_ops));
}

static struct pernet_operations ptcp_net_ops = {
	.init = ptcp_net_init,
	.exit = ptcp_net_exit,
};

/* ---------------------------------------------------------------------- */
/* Module                                                                  */

/*
 * Loading and unloading. init registers, in order: the socket table, the
 * netdevice notifier, powertcp, theta_powertcp; any failure unwinds what was
 * registered before it, and the netfilter hooks come later, with the first
 * powertcp socket ("Hook registration"). A name already taken (another
 * module, or a BPF struct_ops of that name) is logged with EEXIST. The
 * kernel exports no lookup by name, so the names cannot be checked before
 * registering; and once powertcp is registered a socket may select it at
 * once, taking a reference on this module that a failed init would ignore
 * (the module would be freed under the socket). So:
 *  - powertcp taken: nothing was selectable, init fails with EEXIST;
 *  - theta_powertcp taken: the module loads with powertcp alone and says so
 *    in the log (unregistering powertcp is not safe, see above).
 * init never succeeds with no algorithm registered. Sockets using either
 * algorithm hold a reference on the module (taken by the TCP core), so rmmod
 * fails with EBUSY while any exists, and every state has been released when
 * exit runs. exit unregisters the algorithms (the TCP core waits for RCU
 * readers such as inet_diag), cancels the hook work and unregisters the
 * hooks if the last socket's linger had not yet (nf_unregister_net_hooks
 * waits for running ones), then the notifier, and calls rcu_barrier() before
 * it destroys the tables. (kfree_rcu runs no module code, so pending frees
 * need not be waited for; the barrier is for anything that does.) The
 * "states" counter in stats shows per-socket states allocated and not yet
 * released, so a leak would be visible from a shell.
 */

/* theta_powertcp registered (powertcp always is once init succeeded). */
static bool ptcp_theta_registered;

/* States left in the table at exit: impossible while sockets hold the module. */
static void ptcp_leaked(void *ptr, void *arg)
{
	struct ptcp_sk *s = ptr;

	WARN_ONCE(1, "socket state leaked");
	kfree(s);
}

static int __init ptcp_register(void)
{
	int ret;

	BUILD_BUG_ON(sizeof(struct ptcp_ca) > ICSK_CA_PRIV_SIZE);

	ret = ptcp_params_check(&ptcp_params);
	if (ret) {
		pr_err("parameters refused as a set: %s\n", lumen_ptcp_param_strerror(ret));
		return -EINVAL;
	}
	ptcp_params_loaded = true;
	ret = rhashtable_init(&ptcp_socks, &ptcp_socks_params);
	if (ret)
		return ret;
	ret = register_netdevice_notifier(&ptcp_netdev_nb);
	if (ret)
		goto err_socks;
	ret = tcp_register_congestion_control(&ptcp_int_ops);
	if (ret) {
		pr_err("cannot register powertcp (%d): the name is taken\n", ret);
		goto err_notifier;
	}
	ret = tcp_register_congestion_control(&ptcp_theta_ops);
	if (ret)
		pr_err("cannot register theta_powertcp (%d): the name is taken; loaded with powertcp only\n", ret);
	ptcp_theta_registered = !ret;
	return 0;

err_notifier:
	unregister_netdevice_notifier(&ptcp_netdev_nb);
	ptcp_bw_flush();
err_socks:
	rcu_barrier();
	rhashtable_free_and_destroy(&ptcp_socks, ptcp_leaked, NULL);
	return ret;
}

static void __exit ptcp_unregister(void)
{
	if (ptcp_theta_registered)
		tcp_unregister_congestion_control(&ptcp_theta_ops);
	tcp_unregister_congestion_control(&ptcp_int_ops);
	cancel_delayed_work_sync(&ptcp_hooks_work);
	if (ptcp_hooks_on)
		unregister_pernet_subsys(&ptcp_net_ops);
	unregister_netdevice_notifier(&ptcp_netdev_nb);
	ptcp_bw_flush();
	rcu_barrier();
	rhashtable_free_and_destroy(&ptcp_socks, ptcp_leaked, NULL);
}

module_init(ptcp_register);
module_exit(ptcp_unregister);

MODULE_AUTHOR("lumen");
MODULE_LICENSE("Dual BSD/GPL");
MODULE_DESCRIPTION("PowerTCP (INT) and theta-PowerTCP (RTT) congestion control");
MODULE_ALIAS("tcp_powertcp");
MODULE_ALIAS("tcp_theta_powertcp");
