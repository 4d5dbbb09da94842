// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * bpf/optical_gate.bpf.c - direct-hop gating for the kernel's traffic on a
 * host of a reconfigurable (optical circuit) network.
 *
 * A host may send to another only while the circuit switch connects them,
 * outside the guard (include/lumen/optical.h). On the tc egress hook of the
 * host's device towards the switch, this program gives every IPv4 packet
 * to a node of the schedule its departure time, the Earliest Departure Time
 * model: skb->tstamp, which the fq qdisc above the device honours by
 * holding the packet until then. So packets wait for their circuit; none is
 * dropped for want of one (unless no slot of the period ever connects the
 * pair, or the packet is longer than a window).
 *
 * The departure is lumen_slot_departure(): the earliest time, from a base,
 * at which the packet's wire time fits inside a window of a slot that
 * connects this host to the destination, shrunk by the clock margin on both
 * sides. The base is the later of now and the destination's wire clock:
 * when the wire to that destination is free again after the packets
 * already given departures. So a window carries at most what fits in it at
 * the link's rate (its byte budget, preamble and gap included), and the
 * rest waits for the next window. The wire clock is advanced by
 * compare-and-exchange, so two CPUs never book one departure (below).
 *
 * A GSO/TSO skb leaves the device as gso_segs frames back to back, each
 * with its headers and framing: it is booked as that burst
 * (lumen_burst_wire_ns, include/lumen/optical_wire.h), whole in one window.
 * An skb cannot be split here, and the part of a burst that reached the
 * guard would be lost, so a burst that does not fit the rest of a window
 * departs at the start of the next window of the pair; one longer than any
 * window is dropped (counted as too_long). The loader lowers the device's
 * gso_max_size to what a window carries (lumen_gso_cap_bytes), so TCP
 * makes no such burst. Both clocks are CLOCK_TAI (the
 * schedule's); skb->tstamp is CLOCK_MONOTONIC, converted with the
 * difference of the two read now. A packet that already carries a later
 * departure (TCP's pacing) keeps it as its base. Every packet the gate lets
 * go leaves stamped with its departure, now or later: the rotor switch of a
 * testbed reads it to tell a late release from a wrong booking.
 *
 * While the host's lumend says quiet (its clock is not trusted, a change
 * was missed, it stopped: the gate attached with --lumend reads lumend's
 * pinned slot state), or the configuration does, every packet to a node is
 * dropped (counted as quiet): nothing goes into a circuit that may be closed.
 * A lumend that died without its last word (SIGKILL) leaves a state that
 * says "gating" for ever, but its slot boundaries stop: once the last is
 * older than the loader's stale limit (cfg->stale_ns, lumen_osched_stale),
 * every packet to a node is dropped too (counted as stale).
 *
 * A packet that would wait longer than max_hold_ns is dropped (counted as
 * overflow) and books nothing: the destination's queue is bounded in time,
 * as a VOQ is in bytes.
 *
 * The gate holds two schedules (banks) for a change at an instant
 * (include/lumen/optical.h). A departure is computed in the bank in force
 * at its base; one that would run past the instant of a committed change is
 * recomputed in the new bank from that instant on. A packet that would leave
 * after the instant of a change not committed here is dropped as quiet:
 * this host does not know which schedule the switch follows then. That
 * decision is optical.h's (lumen_change_lookup, lumen_change_departure,
 * tested against a slot-by-slot walk in tests/optical_change_test.cpp);
 * this program only looks up the waits it asks for.
 *
 * Packets that are not IPv4 or not to a node of the schedule pass
 * untouched (counted as other): the switch drops them anyway, and gating
 * them would stall ARP-less control traffic for nothing.
 */
#include "lumen_bpf.h"
#include "lumen/optical_wire.h"

#define TC_ACT_OK 0
#define TC_ACT_SHOT 2
#define ETH_P_IP_BE 0x0008
#define GATE_ETH_HLEN 14
#define SKB_TSTAMP_MONO 1 /* BPF_SKB_TSTAMP_DELIVERY_MONO (BPF_SKB_CLOCK_MONOTONIC since 6.11) */
#define GATE_MIN_HDRS (GATE_ETH_HLEN + 20 + 20) /* Ethernet, IPv4 and TCP without options */
#define GATE_CAS_TRIES 4 /* bookings of one packet that other CPUs may overtake */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lumen_gate_cfg);
} gate_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* the loader sets 2 * table_period * nodes */
	__type(key, __u32);
	__type(value, __u32);
} gate_waits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, LUMEN_GATE_MAX_NODES);
	__type(key, __u32);
	__type(value, __u32);
} gate_hosts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* the loader sets nodes */
	__type(key, __u32);
	__type(value, struct lumen_gate_clock);
} gate_clock SEC(".maps");

/* lumend's slot state (--lumend: its pinned map, reused), or the gate's
 * own, all zero: never quiet */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lumen_osched_state);
} gate_osched SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1); /* the loader sets nodes */
	__type(key, __u32);
	__type(value, struct lumen_gate_stats);
} gate_stats SEC(".maps");

/* Every packet to a node is demand, whatever became of it: the bytes a
 * traffic-aware schedule is computed from (lumen sched adapt). */
static __always_inline void count(struct lumen_gate_stats *st, __u32 c, __u32 len, __u64 held)
{
	if (!st || c >= LUMEN_GATE_NCOUNTERS)
		return;
	st->packets[c]++;
	if (c != LUMEN_GATE_CNT_OTHER)
		st->bytes += len;
	st->held_ns += held;
	if (held > st->held_max_ns)
		st->held_max_ns = held;
}

static __always_inline __u32 wait_at(const struct lumen_gate_cfg *cfg, __u32 bank, __u32 in_period, __u32 dst)
{
	__u32 key = (bank * cfg->table_period + in_period) * cfg->nodes + dst, *w;

	if (in_period >= cfg->table_period)
		return LUMEN_SLOT_NEVER;
	w = bpf_map_lookup_elem(&gate_waits, &key);
	return w ? *w : LUMEN_SLOT_NEVER;
}

/* dst's waits for part i of a departure, where lumen_change_lookup() says */
static __always_inline void look_up(const struct lumen_gate_cfg *cfg, struct lumen_change_query *q, __u32 i, __u32 dst)
{
	if (!q->need[i])
		return;
	q->wait_now[i] = wait_at(cfg, q->bank[i], q->now[i], dst);
	q->wait_next[i] = wait_at(cfg, q->bank[i], q->next[i], dst);
}

/* Bytes each segment of a GSO skb repeats: Ethernet, the IPv4 header
 * (with options) and TCP's (with options) or UDP's. An L4 the gate does
 * not parse, or headers it cannot read, count as the smallest TCP/IPv4
 * headers: a segment has at least those when TCP is segmented. */
static __always_inline __u32 gso_hdr_len(struct __sk_buff *skb)
{
	__u8 vihl, l4, doff;
	__u32 ihl;

	if (bpf_skb_load_bytes(skb, GATE_ETH_HLEN, &vihl, 1) || bpf_skb_load_bytes(skb, GATE_ETH_HLEN + 9, &l4, 1))
		return GATE_MIN_HDRS;
	ihl = (__u32)(vihl & 0xf) * 4;
	if (ihl < 20)
		return GATE_MIN_HDRS;
	if (l4 == IPPROTO_UDP)
		return GATE_ETH_HLEN + ihl + 8;
	if (l4 != IPPROTO_TCP || bpf_skb_load_bytes(skb, GATE_ETH_HLEN + ihl + 12, &doff, 1) || (doff >> 4) < 5)
		return GATE_MIN_HDRS;
	return GATE_ETH_HLEN + ihl + (__u32)(doff >> 4) * 4;
}

SEC("tc")
int lumen_gate_egress(struct __sk_buff *skb)
{
	__u32 zero = 0, daddr, dst, i, booked = 0;
	struct lumen_gate_cfg *cfg = bpf_map_lookup_elem(&gate_cfg, &zero);
	struct lumen_sched_change change;
	struct lumen_change_query q;
	struct lumen_osched_state *osched;
	struct lumen_gate_stats *st;
	struct lumen_gate_clock *wire;
	enum lumen_gate_verdict verdict = LUMEN_GATE_NEVER;
	__u64 tai, mono, base, dep = 0, wire_ns, seen, from;
	__u32 *node;
	__u16 proto;

	if (!cfg || bpf_skb_load_bytes(skb, 12, &proto, sizeof(proto)) || proto != ETH_P_IP_BE ||
	    bpf_skb_load_bytes(skb, GATE_ETH_HLEN + 16, &daddr, sizeof(daddr)))
		return TC_ACT_OK;
	node = bpf_map_lookup_elem(&gate_hosts, &daddr);
	if (!node || *node >= cfg->nodes || *node == cfg->self) {
		dst = 0;
		st = bpf_map_lookup_elem(&gate_stats, &dst);
		count(st, LUMEN_GATE_CNT_OTHER, skb->len, 0);
		return TC_ACT_OK;
	}
	dst = *node;
	st = bpf_map_lookup_elem(&gate_stats, &dst);
	osched = bpf_map_lookup_elem(&gate_osched, &zero);
	if (cfg->quiet || (osched && osched->quiet)) {
		count(st, LUMEN_GATE_CNT_QUIET, skb->len, 0);
		return TC_ACT_SHOT;
	}
	tai = bpf_ktime_get_tai_ns();
	mono = bpf_ktime_get_ns();
	/* lumend's word is only as good as it is recent: one that died
	 * without saying so (SIGKILL) stops publishing boundaries */
	if (osched && lumen_osched_stale(tai, osched->boundary_ns, cfg->stale_ns)) {
		count(st, LUMEN_GATE_CNT_STALE, skb->len, 0);
		return TC_ACT_SHOT;
	}
	bpf_spin_lock(&cfg->lock);
	change = cfg->change;
	bpf_spin_unlock(&cfg->lock);
	base = tai;
	if (skb->tstamp > mono) /* already paced later: keep that as the base */
		base = tai + (skb->tstamp - mono);
	/* a GSO/TSO skb leaves as gso_segs frames back to back, each with its
	 * headers and framing: it is booked as that burst, whole, in one
	 * window (it cannot be split here) */
	wire_ns = lumen_burst_wire_ns(skb->len, skb->gso_segs > 1 ? skb->gso_size : 0,
				      skb->gso_segs > 1 ? gso_hdr_len(skb) : 0, cfg->rate_mbps);
	wire = bpf_map_lookup_elem(&gate_clock, &dst);
	if (!wire)
		return TC_ACT_OK;
	/* Read the wire clock, book from it, and publish the booking only if
	 * no other CPU booked this destination in between (compare and
	 * exchange); otherwise book again from the newer clock. A lock around
	 * the whole computation would do too, but bpf_spin_lock forbids the
	 * map lookups it needs. Two frames booking from one clock value would
	 * share a departure and overrun the window. The retries are bounded
	 * for the verifier: a frame that loses GATE_CAS_TRIES races in a row
	 * is dropped and counted (contended) rather than sent unbooked. */
	for (i = 0; i < GATE_CAS_TRIES; i++) {
		seen = *(volatile __u64 *)&wire->free_tai_ns;
		from = seen > base ? seen : base;
		/* which bank, from when, across a change: optical.h decides,
		 * around the lookups in this host's tables */
		lumen_change_lookup(&change, cfg->banks, from, &q);
		look_up(cfg, &q, 0, dst);
		look_up(cfg, &q, 1, dst);
		verdict = lumen_change_departure(cfg->banks, cfg->margin_ns, wire_ns, &q, &dep);
		if (verdict != LUMEN_GATE_DEPART)
			break;
		/* the destination's queue, in time: a sender offering more
		 * than its circuits carry is not allowed to book windows
		 * without end */
		if (dep > tai && dep - tai > cfg->max_hold_ns) {
			count(st, LUMEN_GATE_CNT_OVERFLOW, skb->len, 0);
			return TC_ACT_SHOT;
		}
		if (__sync_val_compare_and_swap(&wire->free_tai_ns, seen, dep + wire_ns) == seen) {
			booked = 1;
			break;
		}
	}
	if (verdict != LUMEN_GATE_DEPART) {
		__u32 c = LUMEN_GATE_CNT_NEVER;

		if (verdict == LUMEN_GATE_QUIET)
			c = LUMEN_GATE_CNT_QUIET;
		else if (wire_ns > lumen_window_ns(&cfg->banks[q.bank[0] & 1].timing, cfg->margin_ns))
			c = LUMEN_GATE_CNT_TOO_LONG; /* no window is long enough: the loader caps GSO below this */
		count(st, c, skb->len, 0);
		return TC_ACT_SHOT;
	}
	if (!booked) {
		count(st, LUMEN_GATE_CNT_CONTENDED, skb->len, 0);
		return TC_ACT_SHOT;
	}
	if (dep <= tai) {
		/* stamped with its departure, now, as a held packet is: the
		 * rotor switch tells a frame its host released late from one
		 * booked wrong (rotor_switch.bpf.c) */
		bpf_skb_set_tstamp(skb, mono, SKB_TSTAMP_MONO);
		count(st, LUMEN_GATE_CNT_NOW, skb->len, 0);
		return TC_ACT_OK;
	}
	count(st, LUMEN_GATE_CNT_HELD, skb->len, dep - tai);
	bpf_skb_set_tstamp(skb, dep - tai + mono, SKB_TSTAMP_MONO);
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
