// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * tcp_powertcp.c - PowerTCP, theta-PowerTCP and HPCC as a kernel module:
 * the kernel shell around the core. The algorithm is explained in
 * include/lumen/powertcp.h (HPCC's law in include/lumen/hpcc.h), and what is
 * done around it per ACK, on idle and on loss in include/lumen/powertcp_ack.h,
 * all shared with the eBPF struct_ops (bpf/powertcp.bpf.c). Registers
 * powertcp (PowerTCP from INT; without INT the core's RTT fallback),
 * theta_powertcp (RTT only) and hpcc (HPCC from the same INT echoes, the
 * core's LUMEN_PTCP_MODE_HPCC; without INT the same RTT fallback).
 *
 * What this shell adds, each part explained at its section below:
 *  - Hooks: cong_control in both prototypes ((sk, rs) before 6.10, (sk, ack,
 *    flag, rs) from 6.10), init, release, cwnd_event, ssthresh, undo_cwnd,
 *    get_info. A flow without state (no memory) runs Reno (no_state).
 *  - INT reception (powertcp_int.c): lumen's sockops program writes the
 *    request and echo options; a netfilter hook at LOCAL_IN reads the echoes
 *    for powertcp and hpcc sockets (the INT-fed ones), so the per-ACK path
 *    has no BPF map and no userspace. The hook is registered only while such
 *    a socket exists.
 *  - Trust model: the hook runs before TCP validates a segment. It stores an
 *    echo with its segment's ack_seq and TSval, and cong_control applies it
 *    only to the ACK that TCP accepted with exactly those, once; any other
 *    ACK counts as no_int. What lying INT can do is bounded by the core
 *    (powertcp.h, "Liveness"). Details in powertcp_int.c.
 *  - State: struct ptcp_sk, allocated by init and pointed to from
 *    icsk_ca_priv; the hook and get_info, which run without the socket lock,
 *    find it in an RCU hash table instead ("Per-socket state").
 *  - Parameters: module_param_cb under /sys/module/tcp_powertcp/parameters/,
 *    validated as a set by lumen_ptcp_params_validate(), published under a
 *    seqlock and used by running flows from their next ACK; host_bw_mbps = 0
 *    takes the output device's link speed ("Link speed").
 *  - Counters: /proc/net/powertcp and per flow /proc/net/powertcp_flows, per
 *    network namespace (powertcp_stats.c, enum ptcp_counter in
 *    powertcp_mod.h); ss -ti through get_info (ptcp_get_info: rate and tau);
 *    the tracepoint powertcp:powertcp_ack (powertcp_trace.h) per ACK.
 *    Loading and unloading: at "Module".
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ethtool.h>
#include <linux/hashtable.h>
#include <linux/inet_diag.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/netdevice.h>
#include <linux/seqlock.h>
#include <linux/version.h>

#include "powertcp_mod.h"

#define CREATE_TRACE_POINTS
#include "powertcp_trace.h"

/* ---------------------------------------------------------------------- */
/* Counters                                                                */

/* The counter of each LUMEN_PTCP_EV bit (powertcp_ack.h): same ids. */
#define PTCP_EVENT_COUNTER(id) PTCP_CNT_##id, /* index: LUMEN_PTCP_EVBIT_##id, same order */
static const u8 ptcp_event_counter[LUMEN_PTCP_EVBIT_COUNT] = {
	LUMEN_PTCP_EVENTS(PTCP_EVENT_COUNTER)};
#undef PTCP_EVENT_COUNTER

/*
 * The counters of a LUMEN_PTCP_EV mask. Every ACK sets a few: the
 * namespace's counters are looked up once for all of them.
 */
static void ptcp_count_events(const struct sock *sk, u32 events)
{
	struct ptcp_stats __percpu *stats;

	events &= (1u << LUMEN_PTCP_EVBIT_COUNT) - 1;
	rcu_read_lock();
	stats = READ_ONCE(ptcp_net(sock_net(sk))->stats);
	for (; stats && events; events &= events - 1)
		this_cpu_inc(stats->cnt[ptcp_event_counter[__ffs(events)]]);
	rcu_read_unlock();
}

/* ---------------------------------------------------------------------- */
/* Parameters                                                              */

/*
 * /sys/module/tcp_powertcp/parameters/, writable at runtime by root; one set
 * for all three algorithms (ranges in MODULE_PARM_DESC below and in
 * README.md); hpcc_* are HPCC's own (lumen/hpcc.h), the others shared (HPCC
 * uses expected_flows for its W_AI, host_bw_mbps and base_rtt_us as all do).
 * hpcc_* have no range of their own here: the core's validation refuses a
 * bad value, with its text.
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
	PTCP_PARAM_HPCC_ETA,
	PTCP_PARAM_HPCC_MAX_STAGE,
	PTCP_PARAM_HPCC_WAI_BYTES,
};

/* What the user wrote; 0 = auto where allowed. */
struct ptcp_conf {
	u32 base_rtt_us;
	u32 host_bw_mbps;
	u32 expected_flows;
	u32 beta_bytes;
	u32 gamma_permille;
	u32 hpcc_eta_permille;
	u32 hpcc_max_stage;
	u32 hpcc_wai_bytes;
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

/* HPCC's: any number here, the core's validation decides (ptcp_param_set) */
static const struct ptcp_param_desc ptcp_desc_hpcc_eta = {
	.id = PTCP_PARAM_HPCC_ETA,
	.max = U32_MAX,
	.zero_ok = true,
	.range = "[500, 1000] permille",
};

static const struct ptcp_param_desc ptcp_desc_hpcc_max_stage = {
	.id = PTCP_PARAM_HPCC_MAX_STAGE,
	.max = U32_MAX,
	.zero_ok = true,
	.range = "[0, 100]",
};

static const struct ptcp_param_desc ptcp_desc_hpcc_wai = {
	.id = PTCP_PARAM_HPCC_WAI_BYTES,
	.max = U32_MAX,
	.zero_ok = true,
	.range = "0 (HostBw * tau * (1 - eta) / expected_flows) or [1, 1073741824] bytes",
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
	.hpcc_eta_permille = 950,
	.hpcc_max_stage = LUMEN_HPCC_DEFAULT_MAX_STAGE,
	.hpcc_wai_bytes = 0,
};

/* ptcp_conf in the core's units; host_bw_mbps 0 still means "link speed". */
static struct lumen_ptcp_params ptcp_params = {
	.gamma = LUMEN_PTCP_DEFAULT_GAMMA,
	.expected_flows = LUMEN_PTCP_DEFAULT_EXPECTED_FLOWS,
	.beta_bytes = 0,
	.host_bw_mbps = 0,
	.base_rtt_ns = 0,
	.hpcc = {.eta = LUMEN_HPCC_DEFAULT_ETA, .max_stage = LUMEN_HPCC_DEFAULT_MAX_STAGE},
};

/* permille to Q16, rounded; past U32_MAX stays out of every range */
static u32 ptcp_permille_q16(u32 permille)
{
	return (u32)min_t(u64, div_u64((u64)permille * LUMEN_PTCP_ONE + 500, 1000), U32_MAX);
}

static void ptcp_conf_to_params(const struct ptcp_conf *c, struct lumen_ptcp_params *p)
{
	p->gamma = ptcp_permille_q16(c->gamma_permille);
	p->expected_flows = c->expected_flows;
	p->beta_bytes = c->beta_bytes;
	p->host_bw_mbps = c->host_bw_mbps;
	p->base_rtt_ns = (u64)c->base_rtt_us * NSEC_PER_USEC;
	p->hpcc.eta = ptcp_permille_q16(c->hpcc_eta_permille);
	p->hpcc.max_stage = c->hpcc_max_stage;
	p->hpcc.wai_bytes = c->hpcc_wai_bytes;
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
	case PTCP_PARAM_HPCC_ETA:
		return &c->hpcc_eta_permille;
	case PTCP_PARAM_HPCC_MAX_STAGE:
		return &c->hpcc_max_stage;
	case PTCP_PARAM_HPCC_WAI_BYTES:
		return &c->hpcc_wai_bytes;
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
		pr_warn("%s: refused '%.*s': must be %s\n", kp->name,
			(int)min_t(size_t, strcspn(val, "\n"), 32), val, d->range);
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
		pr_warn("%s: refused %u (keeping %u): %s\n", kp->name, v, old,
			lumen_ptcp_param_strerror(err));
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

/* one description per line, never split (greppable) */
/* clang-format off */
module_param_cb(base_rtt_us, &ptcp_param_ops, (void *)&ptcp_desc_base_rtt, 0644);
MODULE_PARM_DESC(base_rtt_us, "base RTT tau in us, [1, 1000000]; 0 = the flow's minimum RTT (default 0)");
module_param_cb(host_bw_mbps, &ptcp_param_ops, (void *)&ptcp_desc_host_bw, 0644);
MODULE_PARM_DESC(host_bw_mbps, "host bandwidth in Mbit/s, [1, 1600000]; 0 = link speed of the output device, else 25000 (default 0)");
module_param_cb(expected_flows, &ptcp_param_ops, (void *)&ptcp_desc_flows, 0644);
MODULE_PARM_DESC(expected_flows, "N in beta = HostBw * tau / N, [1, 1000000] (default 10)");
module_param_cb(beta_bytes, &ptcp_param_ops, (void *)&ptcp_desc_beta, 0644);
MODULE_PARM_DESC(beta_bytes, "additive increase in bytes, [1, 2^30]; 0 = HostBw * tau / expected_flows (default 0)");
module_param_cb(gamma, &ptcp_param_ops, (void *)&ptcp_desc_gamma, 0644);
MODULE_PARM_DESC(gamma, "EWMA weight gamma in permille, [10, 1000] (default 900)");
module_param_cb(hpcc_eta, &ptcp_param_ops, (void *)&ptcp_desc_hpcc_eta, 0644);
MODULE_PARM_DESC(hpcc_eta, "hpcc: target utilisation eta in permille, [500, 1000] (default 950)");
module_param_cb(hpcc_max_stage, &ptcp_param_ops, (void *)&ptcp_desc_hpcc_max_stage, 0644);
MODULE_PARM_DESC(hpcc_max_stage, "hpcc: additive steps before a multiplicative one, [0, 100] (default 5)");
module_param_cb(hpcc_wai_bytes, &ptcp_param_ops, (void *)&ptcp_desc_hpcc_wai, 0644);
MODULE_PARM_DESC(hpcc_wai_bytes, "hpcc: additive increase W_AI in bytes, [1, 2^30]; 0 = HostBw * tau * (1 - eta) / expected_flows (default 0)");
/* clang-format on */

/* Consistent snapshot of the parameters, for one ACK. */
void ptcp_params_read(struct lumen_ptcp_params *p)
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

	hash_for_each_possible_rcu(ptcp_bw_table, e, node, (unsigned long)dev,
				   lockdep_is_held(&ptcp_bw_lock))
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
	if (ks.base.speed == 0 || ks.base.speed == (u32)SPEED_UNKNOWN ||
	    ks.base.speed > LUMEN_PTCP_HOST_BW_MAX_MBPS)
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

/* icsk_ca_priv: only the pointer; NULL = no state (Reno fallback). */
struct ptcp_ca {
	struct ptcp_sk *s;
};

struct rhashtable ptcp_socks;

static const struct rhashtable_params ptcp_socks_params = {
	.key_len = sizeof(const struct sock *),
	.key_offset = offsetof(struct ptcp_sk, sk),
	.head_offset = offsetof(struct ptcp_sk, node),
	.automatic_shrinking = true,
};

/* The state of sk, for readers without the socket lock. Caller holds RCU. */
struct ptcp_sk *ptcp_lookup(const struct sock *sk)
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
	u64 rate = lumen_ptcp_pacing_cap(st->pacing_rate, READ_ONCE(sk->sk_max_pacing_rate));

	tcp_snd_cwnd_set(tcp_sk(sk), cwnd_segs);
	WRITE_ONCE(sk->sk_pacing_rate, (unsigned long)rate);
}

static void ptcp_init(struct sock *sk, enum lumen_ptcp_mode mode)
{
	struct ptcp_ca *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	struct lumen_ptcp_params p;
	struct ptcp_sk *s;

	ptcp_count(sock_net(sk), PTCP_CNT_FLOWS);
	ca->s = NULL;
	s = kzalloc(sizeof(*s), GFP_NOWAIT | __GFP_NOWARN);
	if (!s) {
		ptcp_count(sock_net(sk), PTCP_CNT_NO_MEM);
		return; /* Reno fallback, see "Per-socket state" */
	}
	atomic_long_inc(&ptcp_net(sock_net(sk))->states);
	s->sk = sk;
	spin_lock_init(&s->lock);
	ptcp_params_read(&p);
	if (!p.host_bw_mbps) {
		bool clamped;

		s->host_bw_mbps = ptcp_detect_bw(sk);
		ptcp_fit_bw(&p, s->host_bw_mbps, &clamped);
		if (clamped)
			ptcp_count(sock_net(sk), PTCP_CNT_BW_CLAMPED);
		else
			ptcp_count(sock_net(sk),
				   s->host_bw_mbps ? PTCP_CNT_BW_DETECTED : PTCP_CNT_BW_DEFAULT);
	}
	ptcp_flow_params(s, &p);
	lumen_ptcp_init(&s->st, &p, mode, tp->snd_nxt, tp->mss_cache);
	s->hashed = !rhashtable_insert_fast(&ptcp_socks, &s->node, ptcp_socks_params);
	if (!s->hashed)
		ptcp_count(sock_net(sk), PTCP_CNT_HASH_FAIL);
	else if (lumen_ptcp_mode_int_fed(mode))
		ptcp_hook_get(s); /* only a hashed state can receive echoes */
	ca->s = s;

	s->st.loss.delivered = tp->delivered;
	cmpxchg(&sk->sk_pacing_status, SK_PACING_NONE, SK_PACING_NEEDED);
	ptcp_apply(sk, &s->st,
		   lumen_ptcp_cwnd_segs(s->st.cwnd_bytes, tp->mss_cache, tp->snd_cwnd_clamp));
}

static void ptcp_int_init(struct sock *sk)
{
	ptcp_init(sk, LUMEN_PTCP_MODE_INT);
}

static void ptcp_theta_init(struct sock *sk)
{
	ptcp_init(sk, LUMEN_PTCP_MODE_THETA);
}

static void ptcp_hpcc_init(struct sock *sk)
{
	ptcp_init(sk, LUMEN_PTCP_MODE_HPCC);
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
	atomic_long_dec(&ptcp_net(sock_net(sk))->states);
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
static bool ptcp_take_echo(struct ptcp_sk *s, const struct sock *sk, struct lumen_int_opt *echo)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	bool taken = false;

	spin_lock_bh(&s->lock);
	if (s->echo_gen != s->echo_gen_seen) {
		switch (lumen_ptcp_echo_match(s->echo_ack, s->echo_has_ts, s->echo_tsval,
					      tp->snd_una, tp->rx_opt.saw_tstamp,
					      tp->rx_opt.rcv_tsval)) {
		case LUMEN_PTCP_ECHO_THIS_ACK:
			*echo = s->echo;
			s->echo_gen_seen = s->echo_gen;
			ptcp_count(sock_net(sk), PTCP_CNT_INT_TAKEN);
			taken = true;
			break;
		case LUMEN_PTCP_ECHO_OLDER:
			s->echo_gen_seen = s->echo_gen;
			ptcp_count(sock_net(sk), PTCP_CNT_HOOK_UNMATCHED);
			break;
		case LUMEN_PTCP_ECHO_NEWER:
			ptcp_count(sock_net(sk), PTCP_CNT_HOOK_AHEAD);
			break;
		}
	}
	spin_unlock_bh(&s->lock);
	return taken;
}

/*
 * A powertcp or hpcc flow that never saw INT (NO_INT_FLOWS, powertcp_ack.h)
 * runs on RTT alone: said in the kernel log, since nothing else would tell a
 * user that INT is missing on the path.
 */
static void ptcp_warn_no_int(const struct sock *sk, const char *algo)
{
	const struct inet_sock *inet = inet_sk(sk);

#define PTCP_NO_INT_MSG                                                                            \
	"no INT echo after %u RTTs, on RTT alone (INT sockops at both ends, INT switch?)\n"
#if IS_ENABLED(CONFIG_IPV6)
	if (sk->sk_family == AF_INET6) {
		pr_warn_ratelimited("%s flow [%pI6c]:%u -> [%pI6c]:%u: " PTCP_NO_INT_MSG, algo,
				    &sk->sk_v6_rcv_saddr, ntohs(inet->inet_sport), &sk->sk_v6_daddr,
				    ntohs(inet->inet_dport), LUMEN_PTCP_NO_INT_ROUNDS);
		return;
	}
#endif
	pr_warn_ratelimited("%s flow %pI4:%u -> %pI4:%u: " PTCP_NO_INT_MSG, algo, &inet->inet_saddr,
			    ntohs(inet->inet_sport), &inet->inet_daddr, ntohs(inet->inet_dport),
			    LUMEN_PTCP_NO_INT_ROUNDS);
#undef PTCP_NO_INT_MSG
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
		ptcp_count(sock_net(sk), PTCP_CNT_NO_STATE);
		ptcp_fallback(sk, rs);
		return;
	}
	ptcp_flow_params(s, &p);
	lumen_ptcp_ack_make(&ack, tp->tcp_mstamp, rtt_us, tp->snd_una, tp->snd_nxt, tp->mss_cache);

	lumen_ptcp_tcp_make(&t, inet_csk(sk)->icsk_ca_state, tp->packets_out, tp->sacked_out,
			    tp->lost_out, tp->retrans_out, tp->delivered, tp->data_segs_out,
			    tcp_snd_cwnd(tp));

	if (lumen_ptcp_mode_int_fed(s->st.mode))
		have_echo = ptcp_take_echo(s, sk, &echo);

	events = lumen_ptcp_loss_begin(&s->st, &p, &t, tp->snd_nxt, tp->mss_cache);
	events |= lumen_ptcp_ack_process(&s->st, &p, &ack, have_echo ? &echo : NULL, &res);
	ptcp_count_events(sk, events);
	if (events & LUMEN_PTCP_EV(NO_INT_FLOWS))
		ptcp_warn_no_int(sk, ptcp_mode_name(s->st.mode));
	if (res != LUMEN_PTCP_HELD)
		s->last_src = (u8)res;
	ptcp_apply(sk, &s->st,
		   lumen_ptcp_loss_cwnd(&s->st, &p, &t, tp->mss_cache, tp->snd_cwnd_clamp));
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
		ptcp_count_events(sk, lumen_ptcp_tx_event(&s->st, LUMEN_PTCP_TX_EVENT(ev),
							  lumen_ptcp_tcp_ns(tp->tcp_mstamp),
							  tp->snd_nxt));
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
	ptcp_count_events(sk, events);
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
		/* without the socket lock, while ACKs may update the flow: */
		u64 rate = data_race(s->st.pacing_rate); /* a snapshot, */
		u64 tau = data_race(lumen_ptcp_tau(&s->st, &p)); /* maybe one ACK apart */

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

/* The three algorithms differ only in their init (the mode) and name. */
#define PTCP_OPS(init_fn, algo_name)                                                               \
	{                                                                                          \
		.init = init_fn, .release = ptcp_release, .ssthresh = ptcp_ssthresh,               \
		.undo_cwnd = ptcp_undo_cwnd, .cwnd_event = ptcp_cwnd_event,                        \
		.cong_control = ptcp_cong_control, .get_info = ptcp_get_info,                      \
		.owner = THIS_MODULE, .name = algo_name,                                           \
	}

struct tcp_congestion_ops ptcp_int_ops __read_mostly = PTCP_OPS(ptcp_int_init, "powertcp");
static struct tcp_congestion_ops ptcp_theta_ops __read_mostly =
	PTCP_OPS(ptcp_theta_init, "theta_powertcp");
struct tcp_congestion_ops ptcp_hpcc_ops __read_mostly = PTCP_OPS(ptcp_hpcc_init, "hpcc");

/* Registered in this order, unregistered in the reverse. */
static struct tcp_congestion_ops *const ptcp_algos[] = {
	&ptcp_int_ops,
	&ptcp_theta_ops,
	&ptcp_hpcc_ops,
};

/* ---------------------------------------------------------------------- */
/* Module                                                                  */

/*
 * Loading and unloading. init registers, in order: the socket table, the
 * per-namespace counters and /proc/net files, the netdevice notifier, then
 * the algorithms powertcp, theta_powertcp, hpcc (ptcp_algos); any failure
 * unwinds what was registered before it, and the netfilter hooks come later,
 * with the first INT-fed socket (powertcp_int.c, "Hook registration").
 *
 * The algorithms are all or nothing: if one name is taken (another module,
 * or a BPF struct_ops of that name; logged with EEXIST; the kernel exports no
 * lookup by name, so names cannot be checked before registering), the ones
 * registered before it are unregistered and init fails. That is safe only if
 * no socket selected one of them in between: from its registration a name is
 * selectable, and the socket's reference on this module (try_module_get
 * succeeds while init runs) would not stop a failed init from freeing the
 * module under it. tcp_unregister_congestion_control() waits for RCU, and
 * every lookup by name takes its reference inside an RCU section or under
 * the list's lock, so once the names are gone the module's reference count
 * says whether anyone holds one: 1, the loader's own reference during init,
 * means nobody, and init fails cleanly. More (a socket selected a name in
 * those microseconds) and init cannot fail: it succeeds with no algorithm
 * registered, says so in the log, and the module stays until that socket
 * lets go and rmmod removes it. Either way no name is left registered.
 *
 * Sockets using any algorithm hold a reference on the module (taken by the
 * TCP core), so rmmod fails with EBUSY while any exists, and every state has
 * been released when exit runs. exit unregisters the algorithms (the TCP
 * core waits for RCU readers such as inet_diag), cancels the hook work and
 * unregisters the hooks if the last socket's linger had not yet
 * (nf_unregister_net_hooks waits for running ones), then the notifier, the
 * counters and /proc files, and calls rcu_barrier() before it destroys the
 * tables. (kfree_rcu runs no module code, so pending frees need not be
 * waited for; the barrier is for anything that does.) The "states" counter
 * in /proc/net/powertcp shows per-socket states allocated and not yet
 * released, so a leak would be visible from a shell.
 */

/* The algorithms are registered (all of them; none after the rare case above). */
static bool ptcp_algos_registered;

/* States left in the table at exit: impossible while sockets hold the module. */
static void ptcp_leaked(void *ptr, void *arg)
{
	struct ptcp_sk *s = ptr;

	WARN_ONCE(1, "socket state leaked");
	kfree(s);
}

/* Whether anyone but the loader holds the module (during init). */
static bool ptcp_module_held(void)
{
#ifdef CONFIG_MODULE_UNLOAD
	return module_refcount(THIS_MODULE) > 1;
#else
	return true; /* not counted: assume the worst */
#endif
}

/*
 * All the algorithms, or none ("Loading and unloading"). 0 with
 * ptcp_algos_registered false: init must succeed without them.
 */
static int __init ptcp_register_algos(void)
{
	unsigned int i, n;
	int ret = 0;

	for (n = 0; n < ARRAY_SIZE(ptcp_algos); n++) {
		ret = tcp_register_congestion_control(ptcp_algos[n]);
		if (ret)
			break;
	}
	if (!ret) {
		ptcp_algos_registered = true;
		return 0;
	}
	pr_err("cannot register %s (%d): the name is taken; registering none of powertcp, theta_powertcp, hpcc\n",
	       ptcp_algos[n]->name, ret);
	for (i = n; i-- > 0;)
		tcp_unregister_congestion_control(ptcp_algos[i]);
	if (n && ptcp_module_held()) {
		pr_err("a socket selected an algorithm while init failed: loaded with none registered; rmmod once it is closed\n");
		return 0;
	}
	return ret;
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
	ret = ptcp_stats_init();
	if (ret)
		goto err_socks;
	ret = register_netdevice_notifier(&ptcp_netdev_nb);
	if (ret)
		goto err_stats;
	ret = ptcp_register_algos();
	if (ret)
		goto err_notifier;
	return 0;

err_notifier:
	unregister_netdevice_notifier(&ptcp_netdev_nb);
	ptcp_bw_flush();
err_stats:
	ptcp_stats_exit();
err_socks:
	rcu_barrier();
	rhashtable_free_and_destroy(&ptcp_socks, ptcp_leaked, NULL);
	return ret;
}

static void __exit ptcp_unregister(void)
{
	unsigned int i;

	for (i = ARRAY_SIZE(ptcp_algos); ptcp_algos_registered && i-- > 0;)
		tcp_unregister_congestion_control(ptcp_algos[i]);
	ptcp_hooks_exit();
	unregister_netdevice_notifier(&ptcp_netdev_nb);
	ptcp_bw_flush();
	ptcp_stats_exit();
	rcu_barrier();
	rhashtable_free_and_destroy(&ptcp_socks, ptcp_leaked, NULL);
}

module_init(ptcp_register);
module_exit(ptcp_unregister);

MODULE_AUTHOR("lumen");
MODULE_LICENSE("Dual BSD/GPL");
MODULE_DESCRIPTION("PowerTCP (INT), theta-PowerTCP (RTT) and HPCC (INT) congestion control");
MODULE_ALIAS("tcp_powertcp");
MODULE_ALIAS("tcp_theta_powertcp");
MODULE_ALIAS("tcp_hpcc");
