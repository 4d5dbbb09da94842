// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * bpf/rotor_switch.bpf.c - an emulated optical circuit switch (a rotor
 * switch: RotorNet, Sirius) for lumen's namespace testbeds.
 *
 * The switch is one network namespace with a port (a veth end) per node and
 * uplink. A real rotor switch has no buffers and no lookups: in each slot
 * its mirrors connect each input to one output, and light that arrives for
 * any other output, or while the mirrors move (the guard), is lost. This
 * program, on the tc ingress hook of every port, does the same to a frame:
 *
 *   1. which port it came in on (rotor_ports: ifindex -> node, uplink);
 *   2. where it goes: its IPv4 destination's node (rotor_hosts); a frame
 *      that is not IPv4 is dropped (the hosts hold static neighbour
 *      entries: there is no ARP through a circuit switch);
 *   3. when it is: the slot of bpf_ktime_get_tai_ns() in the schedule
 *      (include/lumen/optical.h, the same function the hosts' gating and
 *      lumend use, on the same clock), and the node the current slot's
 *      matching connects the source to on that uplink (rotor_match);
 *   4. forwarded (bpf_redirect out of the destination's port on the same
 *      uplink) only if that node is its destination and the slot is outside
 *      its guard, from the frame's head to its tail; dropped otherwise.
 *
 * A veth has no rate: a frame arrives whole at the instant its head would
 * reach a real switch. With the links' rate set (lumen rotor rate), the
 * switch puts its tail where the link would, its wire time later
 * (preamble, FCS and gap included; a TSO burst as its segments back to
 * back, lumen_burst_wire_ns), and a frame whose tail would reach the guard
 * is dropped and counted as guard: a real switch loses that light too, and
 * a gate books head and tail inside the window, so a gated sender commits
 * none. Without a rate (0), only the head is judged.
 *
 * Every frame is counted in rotor_stats under its source port by verdict
 * (forwarded, guard, wrong slot, before t0, unknown destination, not IPv4,
 * no port, changing), so a test sees every violation a sender commits. The
 * schedule's tables are written by the loader (userspace/bpfctl/rotor.cpp)
 * before the filters are attached.
 *
 * The switch holds two schedules (banks) for a change at an instant
 * (include/lumen/optical.h): step 3 uses the bank in force at the frame's
 * time; after the instant of a change it was told of but not committed, it
 * forwards nothing (counted as changing).
 *
 * What a real switch cannot tell, this one can: why a frame missed its
 * circuit. A gated host (optical_gate.bpf.c) stamps each frame with its
 * departure (skb->tstamp, a CLOCK_MONOTONIC delivery time, which survives
 * the veth into this namespace). A frame dropped in a guard or a wrong slot
 * whose departure fell inside a window of its pair was booked right and
 * released late by its host (the fq qdisc's timer, a stalled CPU): it is
 * counted as late, apart from the senders' own errors. The port's stats
 * also keep how many frames were stamped and the longest delay from
 * departure to the switch.
 */
#include "lumen_bpf.h"
#include "lumen/optical_wire.h"

#define TC_ACT_SHOT 2
#define ETH_P_IP_BE 0x0008 /* htons(0x0800) on a little-endian host */
#define ROTOR_ETH_HLEN 14
#define SKB_TSTAMP_MONO 1 /* BPF_SKB_TSTAMP_DELIVERY_MONO (BPF_SKB_CLOCK_MONOTONIC since 6.11) */
#define ROTOR_MIN_HDRS (ROTOR_ETH_HLEN + 20 + 20) /* Ethernet, IPv4 and TCP without options */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lumen_rotor_cfg);
} rotor_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* the loader sets 2 * uplinks * table_period * nodes */
	__type(key, __u32);
	__type(value, __u32);
} rotor_match SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, LUMEN_ROTOR_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct lumen_rotor_port);
} rotor_ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LUMEN_ROTOR_MAX_PORTS);
	__type(key, __u32);
	__type(value, __u32);
} rotor_out SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, LUMEN_ROTOR_MAX_PORTS);
	__type(key, __u32);
	__type(value, __u32);
} rotor_hosts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LUMEN_ROTOR_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct lumen_rotor_stats);
} rotor_stats SEC(".maps");

static __always_inline int verdict(struct lumen_rotor_stats *st, __u32 counter, int action, __u32 len)
{
	if (st && counter < LUMEN_ROTOR_NCOUNTERS) {
		st->frames[counter]++;
		if (counter == LUMEN_ROTOR_CNT_FORWARDED)
			st->forwarded_bytes += len;
	}
	return action;
}

/* Bytes each segment of a GSO skb repeats (Ethernet, IPv4, TCP or UDP),
 * parsed as the gate does (optical_gate.bpf.c): a veth carries a TSO
 * burst into the switch as one skb, which a real link would carry as
 * gso_segs frames back to back. */
static __always_inline __u32 gso_hdr_len(struct __sk_buff *skb)
{
	__u8 vihl, l4, doff;
	__u32 ihl;

	if (bpf_skb_load_bytes(skb, ROTOR_ETH_HLEN, &vihl, 1) || bpf_skb_load_bytes(skb, ROTOR_ETH_HLEN + 9, &l4, 1))
		return ROTOR_MIN_HDRS;
	ihl = (__u32)(vihl & 0xf) * 4;
	if (ihl < 20)
		return ROTOR_MIN_HDRS;
	if (l4 == IPPROTO_UDP)
		return ROTOR_ETH_HLEN + ihl + 8;
	if (l4 != IPPROTO_TCP || bpf_skb_load_bytes(skb, ROTOR_ETH_HLEN + ihl + 12, &doff, 1) || (doff >> 4) < 5)
		return ROTOR_MIN_HDRS;
	return ROTOR_ETH_HLEN + ihl + (__u32)(doff >> 4) * 4;
}

/* What the schedule says of a frame from port to dst whose head is at TAI
 * time t and that takes wire_ns on the wire: a LUMEN_ROTOR_CNT_* verdict
 * (FORWARDED when the slot connects them from head to tail). */
static __always_inline __u32 verdict_at(const struct lumen_rotor_cfg *cfg, const struct lumen_sched_change *change,
					const struct lumen_rotor_port *port, __u32 dst, __u64 t, __u64 wire_ns)
{
	struct lumen_slot_pos pos;
	__u32 key, *dst_now;
	int bank = lumen_change_bank(change, t);

	if (bank < 0)
		return LUMEN_ROTOR_CNT_CHANGING;
	if (lumen_slot_at(&cfg->banks[bank & 1].timing, t, &pos) || pos.in_period >= cfg->table_period)
		return LUMEN_ROTOR_CNT_NOT_STARTED;
	key = (((__u32)bank * cfg->uplinks + port->uplink) * cfg->table_period + pos.in_period) * cfg->nodes +
	      port->node;
	dst_now = bpf_map_lookup_elem(&rotor_match, &key);
	if (!dst_now)
		return LUMEN_ROTOR_CNT_NO_PORT;
	switch (lumen_rotor_check(&pos, port->node, dst, *dst_now)) {
	case LUMEN_ROTOR_FORWARD:
		/* the light of its tail arrives while the mirrors move: the
		 * frame is lost as if its head had (a gate books head and
		 * tail inside the window, lumen_slot_departure) */
		if (!lumen_slot_tail_fits(&cfg->banks[bank & 1].timing, &pos, wire_ns))
			return LUMEN_ROTOR_CNT_GUARD;
		return LUMEN_ROTOR_CNT_FORWARDED;
	case LUMEN_ROTOR_GUARD:
		return LUMEN_ROTOR_CNT_GUARD;
	default:
		return LUMEN_ROTOR_CNT_WRONG_SLOT;
	}
}

SEC("tc")
int lumen_rotor_ingress(struct __sk_buff *skb)
{
	__u32 zero = 0, ifindex = skb->ingress_ifindex, daddr, key, *dst_node, *out, c;
	struct lumen_rotor_port *port = bpf_map_lookup_elem(&rotor_ports, &ifindex);
	struct lumen_rotor_cfg *cfg = bpf_map_lookup_elem(&rotor_cfg, &zero);
	struct lumen_rotor_stats *st = NULL;
	struct lumen_sched_change change;
	__u64 now, mono, stamp = 0, wire_ns;
	__u16 proto;

	if (!port || !cfg || port->node >= cfg->nodes || port->uplink >= cfg->uplinks)
		return TC_ACT_SHOT; /* not ours: nothing to count it under */
	key = port->uplink * cfg->nodes + port->node;
	st = bpf_map_lookup_elem(&rotor_stats, &key);
	if (bpf_skb_load_bytes(skb, 12, &proto, sizeof(proto)) || proto != ETH_P_IP_BE)
		return verdict(st, LUMEN_ROTOR_CNT_NOT_IPV4, TC_ACT_SHOT, skb->len);
	if (bpf_skb_load_bytes(skb, ROTOR_ETH_HLEN + 16, &daddr, sizeof(daddr)))
		return verdict(st, LUMEN_ROTOR_CNT_NOT_IPV4, TC_ACT_SHOT, skb->len);
	dst_node = bpf_map_lookup_elem(&rotor_hosts, &daddr);
	if (!dst_node || *dst_node >= cfg->nodes)
		return verdict(st, LUMEN_ROTOR_CNT_UNKNOWN_DST, TC_ACT_SHOT, skb->len);
	bpf_spin_lock(&cfg->lock);
	change = cfg->change;
	bpf_spin_unlock(&cfg->lock);
	now = bpf_ktime_get_tai_ns();
	mono = bpf_ktime_get_ns();
	/* reading tstamp_type lets the program see a delivery time at ingress
	 * (the verifier would read 0 for it otherwise) */
	if (skb->tstamp_type == SKB_TSTAMP_MONO && skb->tstamp) {
		stamp = skb->tstamp;
		if (st) {
			st->stamped++;
			if (mono > stamp && mono - stamp > st->delay_max_ns)
				st->delay_max_ns = mono - stamp;
		}
	}
	/* A veth delivers a frame at once: it arrives here when its head
	 * would reach a real switch, and its tail follows at the links' rate
	 * (0: unknown, no tail). */
	wire_ns = cfg->rate_mbps ? lumen_burst_wire_ns(skb->len, skb->gso_segs > 1 ? skb->gso_size : 0,
						       skb->gso_segs > 1 ? gso_hdr_len(skb) : 0, cfg->rate_mbps)
				 : 0;
	c = verdict_at(cfg, &change, port, *dst_node, now, wire_ns);
	if ((c == LUMEN_ROTOR_CNT_GUARD || c == LUMEN_ROTOR_CNT_WRONG_SLOT) && stamp && stamp < mono &&
	    mono - stamp <= now &&
	    verdict_at(cfg, &change, port, *dst_node, now - (mono - stamp), wire_ns) == LUMEN_ROTOR_CNT_FORWARDED)
		c = LUMEN_ROTOR_CNT_LATE;
	if (c != LUMEN_ROTOR_CNT_FORWARDED)
		return verdict(st, c, TC_ACT_SHOT, skb->len);
	key = port->uplink * cfg->nodes + *dst_node;
	out = bpf_map_lookup_elem(&rotor_out, &key);
	if (!out || !*out)
		return verdict(st, LUMEN_ROTOR_CNT_NO_PORT, TC_ACT_SHOT, skb->len);
	verdict(st, LUMEN_ROTOR_CNT_FORWARDED, 0, skb->len);
	return bpf_redirect(*out, 0);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
