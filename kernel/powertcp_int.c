// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * powertcp_int.c - INT reception for tcp_powertcp.ko: a netfilter hook at
 * LOCAL_IN that stores the INT echoes of powertcp and hpcc sockets (the
 * INT-fed algorithms; "powertcp socket" below means either) for cong_control
 * (tcp_powertcp.c) to take, registered only while such sockets exist. How
 * it works and what it trusts: "INT reception" below; when it is registered:
 * "Hook registration".
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/netfilter.h>
#include <linux/netfilter_ipv4.h>
#include <linux/netfilter_ipv6.h>
#include <linux/workqueue.h>
#include <net/inet6_hashtables.h>
#include <net/inet_hashtables.h>
#include <net/ip.h>
#include <net/ipv6.h>
#include <net/net_namespace.h>

#include "powertcp_mod.h"

#include "lumen/tcp_option.h"

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
 *     TCP socket whose icsk_ca_ops is &ptcp_int_ops or &ptcp_hpcc_ops (two
 *     pointer compares; every segment of every other socket leaves the hook
 *     here). The skb holds a reference on skb->sk, so the socket cannot go
 *     away.
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
 *  - ACKs that reach the hook out of order: the echo of a segment older
 *    than the stored one's is not stored (hook_reordered, not counted in
 *    int_echoes), so the newer echo still reaches its own ACK.
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
static struct sock *ptcp_nf_lookup(struct sk_buff *skb, const struct tcphdr *th,
				   const struct nf_hook_state *state)
{
	struct net *net = state->net;

	if (state->pf == NFPROTO_IPV4) {
		const struct iphdr *iph = ip_hdr(skb);

		return __inet_lookup_established(net, net->ipv4.tcp_death_row.hashinfo, iph->saddr,
						 th->source, iph->daddr, ntohs(th->dest),
						 inet_iif(skb), inet_sdif(skb));
	}
#if IS_ENABLED(CONFIG_IPV6)
	if (state->pf == NFPROTO_IPV6) {
		const struct ipv6hdr *ip6h = ipv6_hdr(skb);

		return __inet6_lookup_established(net, net->ipv4.tcp_death_row.hashinfo,
						  &ip6h->saddr, th->source, &ip6h->daddr,
						  ntohs(th->dest), inet6_iif(skb), inet6_sdif(skb));
	}
#endif
	return NULL;
}

static bool ptcp_is_int_sock(const struct sock *sk)
{
	const struct tcp_congestion_ops *ops;

	/* type and protocol first: only then is sk an inet_connection_sock */
	if (!sk_fullsock(sk) || sk->sk_type != SOCK_STREAM || sk->sk_protocol != IPPROTO_TCP)
		return false;
	ops = READ_ONCE(inet_csk(sk)->icsk_ca_ops);
	return ops == &ptcp_int_ops || ops == &ptcp_hpcc_ops;
}

/*
 * Whether the segment (ack, has_ts, tsval) came before the one whose echo is
 * stored: ACKs reordered on the way (on a multi-queue NIC or between the
 * per-CPU backlogs a veth feeds, segments of one flow can reach LOCAL_IN out
 * of order). TCP will treat that segment as an old ACK, or as a duplicate
 * one after the newer; storing its echo would replace the newer echo, which
 * its own ACK then finds out of date (hook_unmatched), and INT would be lost
 * for a reordering TCP itself tolerates. Only a stored echo whose ack_seq is
 * still in [snd_una, snd_nxt] is compared (as is the new one): two sequence
 * numbers in one window compare soundly, one left behind long ago would not.
 * Called under s->lock.
 */
static bool ptcp_echo_reordered(const struct ptcp_sk *s, const struct tcp_sock *tp, u32 ack,
				bool has_ts, u32 tsval)
{
	if (!s->echo_gen || before(s->echo_ack, READ_ONCE(tp->snd_una)))
		return false;
	return lumen_ptcp_echo_match(ack, has_ts, tsval, s->echo_ack, s->echo_has_ts,
				     s->echo_tsval) == LUMEN_PTCP_ECHO_OLDER;
}

/*
 * Store the echo of an ACK for sk (a powertcp socket), after the checks,
 * with what identifies its segment: ack_seq, and TSval when TCP parses
 * timestamps on this connection (tstamp_ok; TCP takes a TS option of length
 * 10 only). o/optlen is the segment's option block, the echo at offset off.
 */
static void ptcp_nf_echo(struct sock *sk, struct sk_buff *skb, unsigned int thoff,
			 const struct tcphdr *th, const struct lumen_tcp_opts *o,
			 unsigned int optlen, int off, const struct nf_hook_state *state)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct lumen_int_opt echo;
	struct ptcp_sk *s;
	u32 ack, tsval = 0;
	bool has_ts = false;
	int ts;

	if (lumen_int_parse(o->b + off, optlen - (unsigned int)off, &echo) ||
	    !(echo.flags & LUMEN_INT_FLAG_ECHO)) {
		ptcp_count(state->net, PTCP_CNT_INT_MALFORMED);
		return;
	}
	if (th->syn || th->rst || !th->ack) {
		ptcp_count(state->net, PTCP_CNT_HOOK_SKIPPED);
		return;
	}
	ack = ntohl(th->ack_seq);
	if (before(ack, READ_ONCE(tp->snd_una)) || after(ack, READ_ONCE(tp->snd_nxt))) {
		ptcp_count(state->net, PTCP_CNT_HOOK_OLD_ACK);
		return;
	}
	s = ptcp_lookup(sk);
	if (!s) {
		ptcp_count(state->net, PTCP_CNT_HOOK_NO_STATE);
		return;
	}
	if (nf_checksum(skb, state->hook, thoff, IPPROTO_TCP, state->pf)) {
		ptcp_count(state->net, PTCP_CNT_HOOK_BAD_CSUM);
		return;
	}
	ts = lumen_tcp_opt_find(o, optlen, TCPOPT_TIMESTAMP, 0);
	if (ts >= 0 && o->b[ts + 1] == TCPOLEN_TIMESTAMP && tp->rx_opt.tstamp_ok) {
		tsval = (u32)o->b[ts + 2] << 24 | (u32)o->b[ts + 3] << 16 | (u32)o->b[ts + 4] << 8 |
			o->b[ts + 5];
		has_ts = true;
	}
	spin_lock(&s->lock);
	if (ptcp_echo_reordered(s, tp, ack, has_ts, tsval)) {
		spin_unlock(&s->lock);
		ptcp_count(state->net, PTCP_CNT_HOOK_REORDERED);
		return;
	}
	if (s->echo_gen != s->echo_gen_seen) {
		s->superseded++;
		ptcp_count(state->net, PTCP_CNT_INT_SUPERSEDED);
	}
	s->echo = echo;
	s->echo_ack = ack;
	s->echo_tsval = tsval;
	s->echo_has_ts = has_ts;
	s->echo_gen++;
	spin_unlock(&s->lock);
	ptcp_count(state->net, PTCP_CNT_INT_ECHOES);
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
	if (off < 0 || (unsigned int)off + LUMEN_INT_HDR_LEN > optlen ||
	    !(opts[off + 4] & LUMEN_INT_FLAG_ECHO))
		return;
	if (sk) {
		ptcp_nf_echo(sk, skb, thoff, th, &optbuf, optlen, off, state);
		return;
	}
	ref = ptcp_nf_lookup(skb, th, state);
	if (!ref)
		return;
	if (ptcp_is_int_sock(ref)) {
		ptcp_count(state->net, PTCP_CNT_HOOK_LOOKUP);
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

	/*
	 * fragments (any with an offset or more to come) are reassembled only
	 * after LOCAL_IN: a fragment's TCP header cannot be checked, so leave it
	 */
	thoff = ipv6_skip_exthdr(skb, skb_network_offset(skb) + sizeof(struct ipv6hdr), &nexthdr,
				 &frag_off);
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
static bool ptcp_hooks_on;

static void ptcp_hooks_sync(struct work_struct *work)
{
	bool want = atomic_read(&ptcp_hook_users) > 0;

	mutex_lock(&ptcp_hooks_lock);
	if (want && !ptcp_hooks_on) {
		if (register_pernet_subsys(&ptcp_net_ops))
			ptcp_count(&init_net, PTCP_CNT_HOOK_REG_FAIL);
		else
			WRITE_ONCE(ptcp_hooks_on, true);
	} else if (!want && ptcp_hooks_on) {
		unregister_pernet_subsys(&ptcp_net_ops);
		WRITE_ONCE(ptcp_hooks_on, false);
	}
	mutex_unlock(&ptcp_hooks_lock);
}

static DECLARE_DELAYED_WORK(ptcp_hooks_work, ptcp_hooks_sync);

void ptcp_hook_get(struct ptcp_sk *s)
{
	s->hooked = true;
	if (atomic_inc_return(&ptcp_hook_users) == 1 || !READ_ONCE(ptcp_hooks_on))
		mod_delayed_work(system_wq, &ptcp_hooks_work, 0);
}

void ptcp_hook_put(struct ptcp_sk *s)
{
	if (s->hooked && atomic_dec_and_test(&ptcp_hook_users))
		queue_delayed_work(system_wq, &ptcp_hooks_work, PTCP_HOOK_LINGER);
}

bool ptcp_hooks_registered(void)
{
	return READ_ONCE(ptcp_hooks_on);
}

void ptcp_hooks_exit(void)
{
	cancel_delayed_work_sync(&ptcp_hooks_work);
	if (ptcp_hooks_on)
		unregister_pernet_subsys(&ptcp_net_ops);
}
