/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * lumen/bpf_shared.h - the contract between lumen's eBPF programs (bpf/) and
 * the `lumen` command-line loader (userspace/): map value layouts, counter
 * indices, pin paths and names. Included by the .bpf.c files (after vmlinux.h)
 * and by C++ (after <linux/types.h>), so every layout is defined once.
 *
 * Objects and what they share (all maps pinned by name under LUMEN_PIN_ROOT,
 * so separately loaded objects find each other's maps):
 *
 *   int_sockops.bpf.c  cgroup sockops: writes INT requests on data segments,
 *                      echoes the latest request in ACKs, parses echoes into
 *                      lumen_int_sk (map "lumen_int_sk").
 *   powertcp.bpf.c     struct_ops bpf_powertcp / bpf_theta_ptcp / bpf_hpcc:
 *                      reads lumen_int_sk on every ACK, runs
 *                      lumen_ptcp_on_ack().
 *   timely.bpf.c       struct_ops bpf_timely: RTT only, lumen/timely.h.
 *   retcp.bpf.c        struct_ops bpf_retcp: Reno whose window jumps with
 *                      the circuit to the destination (lumen/retcp.h), read
 *                      from a lumend's pinned slot state (osched/<name>/).
 *   int_switch.bpf.c   tc programs turning a link into an INT switch port:
 *                      egress (enqueue) and the peer's ingress (dequeue).
 *   rotor_switch.bpf.c tc ingress of every port of an emulated optical
 *                      circuit switch: forwards a frame only while the
 *                      schedule connects its source and destination.
 */
#ifndef LUMEN_BPF_SHARED_H
#define LUMEN_BPF_SHARED_H

#include "optical.h"
#include "powertcp.h"
#include "retcp.h"
#include "timely.h"

#ifdef LUMEN_USERSPACE
#include <linux/bpf.h> /* struct bpf_spin_lock */
#endif

#define LUMEN_PIN_ROOT "/sys/fs/bpf/lumen"

/*
 * What is pinned under LUMEN_PIN_ROOT, by file name. A map's pin name is its
 * name in the .bpf.c file (libbpf pins by name), which tests/bpf_names_test
 * checks against the skeletons.
 */
#define LUMEN_PIN_INT_SK "lumen_int_sk" /* shared by int_sockops and powertcp */
#define LUMEN_PIN_INT_CFG "lumen_int_cfg"
#define LUMEN_PIN_INT_STATS "lumen_int_stats"
#define LUMEN_PIN_INT_LINK "int_sockops_link" /* the cgroup link */
#define LUMEN_PIN_INT_PROG "int_sockops_prog"
#define LUMEN_PIN_CC_PARAMS "lumen_cc_params"
#define LUMEN_PIN_CC_FAULTS "lumen_cc_faults"
#define LUMEN_PIN_CC_STATS "lumen_cc_stats"
#define LUMEN_PIN_CC_SK "lumen_cc_sk"
#define LUMEN_PIN_CC_OPS_INT "cc_ops_int" /* struct_ops maps */
#define LUMEN_PIN_CC_OPS_THETA "cc_ops_theta"
#define LUMEN_PIN_CC_OPS_HPCC "cc_ops_hpcc"
#define LUMEN_PIN_CC_OPS_TIMELY "cc_ops_timely"
#define LUMEN_PIN_TIMELY_PARAMS "lumen_timely_params" /* timely.bpf.c's maps */
#define LUMEN_PIN_TIMELY_STATS "lumen_timely_stats"
#define LUMEN_PIN_TIMELY_SK "lumen_timely_sk"
#define LUMEN_PIN_SW_PORTS "lumen_sw_ports" /* the control plane's port records */
#define LUMEN_PIN_SW_CFG "lumen_sw_cfg"
#define LUMEN_PIN_SW_STATS "lumen_sw_stats"
#define LUMEN_PIN_ROTOR_DIR "rotor" /* the rotor switch's maps, in this directory */
#define LUMEN_PIN_GATE_DIR "gate" /* the gates' maps: gate/<netns>@<dev>/{cfg,stats,waits,clock,osched} */
#define LUMEN_PIN_OSCHED_DIR "osched" /* lumend's slot state: osched/<name>/{state,windows} */
#define LUMEN_PIN_RETCP_DIR "retcp" /* bpf_retcp's maps: retcp/{ops,cfg,hosts,stats,osched,windows} */

/* ---------------------------------------------------------------------- */
/* INT sockops                                                             */

/* Per-socket INT state (BPF_MAP_TYPE_SK_STORAGE "lumen_int_sk"). */
struct lumen_int_sk {
	struct lumen_int_opt rx_req; /* receiver: latest request carried by data */
	struct lumen_int_opt echo; /* sender: latest echo carried by an ACK */
	__u32 rx_req_gen; /* bumped each time rx_req is replaced */
	__u32 echo_gen; /* bumped each time echo is replaced */
	__u32 flags; /* LUMEN_INT_SK_* */
	__u32 echo_ack; /* ack_seq of the segment that carried echo */
};

#define LUMEN_INT_SK_ENABLED 0x1 /* this flow passed the filters */
/* room for a one-hop echo only was reserved for the segment being written */
#define LUMEN_INT_SK_ECHO_PART 0x2

/* INT sockops configuration (array "lumen_int_cfg", one entry). */
#define LUMEN_INT_MAX_PORTS 8
struct lumen_int_config {
	__u32 enabled; /* 0: programs attached but inactive */
	__u32 slots; /* hop slots per request, 1..lumen_int_max_slots(version) */
	__u32 families; /* LUMEN_INT_FAMILY_* bits; 0 = both */
	__u32 nports; /* 0 = every port */
	__u16 ports[LUMEN_INT_MAX_PORTS]; /* local or remote port matches */
	__u32 version; /* option version of requests: LUMEN_INT_VERSION or _WIDE (0 = 1) */
};

#define LUMEN_INT_FAMILY_IPV4 0x1
#define LUMEN_INT_FAMILY_IPV6 0x2

/*
 * Per-CPU counters (array "lumen_int_stats"), summed by the loader. Each
 * counter once: its index, the name `lumen int status` prints, what it
 * counts (X-macro: a new counter is one line here).
 */
#define LUMEN_INT_COUNTERS(X)                                                                                          \
	X(FLOWS, "flows", "connections that enabled INT (each end counts once)")                                       \
	X(FILTERED, "filtered", "connections the port/family filters excluded")                                        \
	X(REQ_WRITTEN, "req_written", "requests written on data segments (a GSO burst counts once)")                   \
	X(ECHO_WRITTEN, "echo_written", "echoes written on pure ACKs")                                                 \
	X(REQ_PARSED, "req_parsed", "requests parsed (receiver)")                                                      \
	X(ECHO_PARSED, "echo_parsed", "echoes parsed (sender)")                                                        \
	X(MALFORMED, "malformed", "INT options the parser refused (state left unchanged)")                             \
	X(NO_ROOM, "no_room", "segments where the option did not fit (SACK blocks, slots): skipped")                   \
	X(ECHO_PARTIAL, "echo_partial", "echoes cut to the bottleneck hop for lack of room (version 2)")               \
	X(NO_STORAGE, "no_storage", "connections whose per-socket state could not be created")

#define LUMEN_INT_COUNTER_ENUM(id, name, help) LUMEN_INT_CNT_##id,
enum lumen_int_counter {
	LUMEN_INT_COUNTERS(LUMEN_INT_COUNTER_ENUM) LUMEN_INT_CNT_MAX
};
#undef LUMEN_INT_COUNTER_ENUM

/* ---------------------------------------------------------------------- */
/* struct_ops PowerTCP, theta-PowerTCP and HPCC                           */

#define LUMEN_CC_NAME_INT "bpf_powertcp" /* <= 15 characters */
#define LUMEN_CC_NAME_THETA "bpf_theta_ptcp"
#define LUMEN_CC_NAME_HPCC "bpf_hpcc" /* the core in LUMEN_PTCP_MODE_HPCC */

/*
 * Parameters, one struct lumen_cc_param_val per algorithm (index = enum
 * lumen_ptcp_mode) in array "lumen_cc_params". No reader may see half of a
 * `lumen cc set`, on any architecture: a writer (serialised by flock on
 * LUMEN_PIN_ROOT) updates the whole value with BPF_F_LOCK, which takes the
 * value's bpf_spin_lock in the kernel, and a reader copies it under
 * bpf_spin_lock(). The lock orders the accesses, where a generation read
 * around a plain copy (a seqlock without barriers) would be correct only on
 * x86, whose loads are not reordered with loads. gen counts the sets: a flow
 * compares it, read without the lock, with the generation of its own copy
 * on every ACK and takes the lock only when they differ (an old value read
 * there means one more ACK with the previous set, never a torn one).
 */
#define LUMEN_CC_PARAM_ENTRIES 3 /* algorithms: LUMEN_PTCP_MODES */
LUMEN_STATIC_ASSERT(LUMEN_CC_PARAM_ENTRIES == LUMEN_PTCP_MODES, "one parameter set per mode of the core");

struct lumen_cc_param_val {
	struct bpf_spin_lock lock;
	__u32 gen; /* sets so far, for the readers' fast path */
	struct lumen_ptcp_params params;
};

/*
 * Fault injection for tests (array "lumen_cc_faults", one __u32 of flags,
 * 0 in normal operation; set with bpftool). Shared by powertcp.bpf.c and
 * timely.bpf.c (pinned by name: one map, one set of flags for both).
 * NO_STATE: init creates no per-socket state for new flows, as when the
 * sk_storage allocation fails, so the Reno fallback runs.
 */
#define LUMEN_CC_FAULT_NO_STATE 0x1u

/* Per-socket CC state (sk_storage "lumen_cc_sk"). */
struct lumen_cc_sk {
	struct lumen_ptcp ptcp;
	struct lumen_ptcp_params params; /* this flow's copy of its algorithm's */
	__u32 params_gen; /* the generation params was copied at */
	__u32 params_fresh; /* params is that generation's (not the defaults) */
	__u32 echo_gen_seen; /* last lumen_int_sk.echo_gen consumed */
	__s32 rtt_us; /* RTT sample of the ACK in progress (pkts_acked); < 0 = none, as the kernel's */
};

/*
 * One flow of lumen_cc_sk, as the iterator of cc_flows.bpf.c writes it for
 * `lumen cc status`. Addresses in network order (IPv4: the first 4 bytes).
 */
struct lumen_cc_flow {
	__u8 saddr[16];
	__u8 daddr[16];
	__u16 sport; /* host order */
	__u16 dport; /* host order */
	__u8 family; /* AF_INET or AF_INET6 */
	__u8 mode; /* enum lumen_ptcp_mode */
	__u16 pad;
	__u32 netns_ino; /* the socket's network namespace (ls -L /proc/PID/ns/net) */
	__u32 pad2;
	__u64 cwnd_bytes;
	__u64 tau_ns; /* tau in use; 0 = no RTT sample yet */
	__u64 pacing_rate; /* bytes/s */
	struct lumen_ptcp_stats stats;
};

/* Per-CPU counters (array "lumen_cc_stats"), as LUMEN_INT_COUNTERS. */
#define LUMEN_CC_COUNTERS(X)                                                                                           \
	X(FLOWS, "flows", "connections initialised")                                                                   \
	X(ACKS, "acks", "ACKs processed")                                                                              \
	X(INT_UPDATES, "int_updates", "window updates from INT (PowerTCP's power, HPCC's inflight)")                   \
	X(RTT_UPDATES, "rtt_updates", LUMEN_CC_NAME_THETA " window updates")                                           \
	X(FALLBACK_UPDATES, "fallback_updates",                                                                        \
	  LUMEN_CC_NAME_INT " and " LUMEN_CC_NAME_HPCC " updates from RTT, for lack of INT")                           \
	X(NO_INT, "no_int", LUMEN_CC_NAME_INT " and " LUMEN_CC_NAME_HPCC " ACKs without a new INT echo")               \
	X(NO_STATE, "no_state", "ACKs or connections without socket state (Reno fallback)")                            \
	X(RESTARTS, "restarts", "idle restarts (history discarded)")                                                   \
	X(INT_UNUSABLE, "int_unusable", "echoes that gave no INT sample (counted as no INT)")                          \
	X(RTT_GUARD, "rtt_guard", "INT updates overridden by an RTT floor of >= 8 base RTTs")                          \
	X(INT_GAP, "int_gap", "... unusable: too long after the previous echo (re-baselined)")                         \
	X(INT_STALE, "int_stale", "... unusable: a stale or implausible hop")                                          \
	X(INT_DUPLICATE, "int_duplicate", "... unusable: the previous echo again")                                     \
	X(INT_PATH_CHANGES, "int_path_changes", "... unusable: hop count changed (re-baselined)")                      \
	X(INT_RATE_CHANGES, "int_rate_changes", "... unusable: a hop's rate changed (the next echo uses it)")          \
	X(PARAM_RETRY, "param_retry", "parameter copies dropped: invalid")                                             \
	X(INT_UNMATCHED, "int_unmatched", "echoes from a segment tcp_ack() refused: not applied")                      \
	X(NO_INT_FLOWS, "no_int_flows",                                                                                \
	  LUMEN_CC_NAME_INT " and " LUMEN_CC_NAME_HPCC " flows without a single INT echo after 16 RTTs")               \
	X(LOSS_CUTS, "loss_cuts", "windows halved on entering loss recovery")                                          \
	X(LOSS_UNDOS, "loss_undos", "cuts undone: TCP found the loss spurious")

#define LUMEN_CC_COUNTER_ENUM(id, name, help) LUMEN_CC_CNT_##id,
enum lumen_cc_counter {
	LUMEN_CC_COUNTERS(LUMEN_CC_COUNTER_ENUM) LUMEN_CC_CNT_MAX
};
#undef LUMEN_CC_COUNTER_ENUM

/* ---------------------------------------------------------------------- */
/* struct_ops TIMELY (timely.bpf.c)                                        */

#define LUMEN_CC_NAME_TIMELY "bpf_timely"

/*
 * Parameters (array "lumen_timely_params", one entry), written and copied
 * under the value's lock as lumen_cc_param_val is.
 */
struct lumen_timely_param_val {
	struct bpf_spin_lock lock;
	__u32 gen; /* sets so far */
	struct lumen_timely_params params;
};

/* Per-socket state (sk_storage "lumen_timely_sk"). */
struct lumen_timely_sk {
	struct lumen_timely st;
	struct lumen_timely_params params; /* this flow's copy */
	__u64 cwnd_bytes; /* the window last installed (for `lumen cc status`) */
	__u64 last_ack_ns; /* tcp_mstamp of the last ACK the core saw, ns (idle) */
	__u32 params_gen;
	__u32 params_fresh;
	__s32 rtt_us; /* RTT sample of the ACK in progress (pkts_acked); < 0 = none */
	__u32 pad;
};

/* One flow of lumen_timely_sk, as cc_flows.bpf.c's second iterator writes it. */
struct lumen_timely_flow {
	__u8 saddr[16];
	__u8 daddr[16];
	__u16 sport; /* host order */
	__u16 dport; /* host order */
	__u8 family;
	__u8 in_loss;
	__u16 pad;
	__u32 netns_ino;
	__u32 pad2;
	__u64 rate; /* bytes/s */
	__u64 cwnd_bytes;
	__u64 last_rtt_ns;
	__u64 min_rtt_ns;
	__s64 rtt_diff_ns;
	struct lumen_timely_stats stats;
};

/* Per-CPU counters (array "lumen_timely_stats"), as LUMEN_CC_COUNTERS. */
#define LUMEN_TIMELY_COUNTERS(X)                                                                                       \
	X(FLOWS, "flows", "connections initialised")                                                                   \
	X(ACKS, "acks", "ACKs processed")                                                                              \
	X(EVENTS, "events", "completion events (a segment acknowledged, with an RTT sample)")                          \
	X(LOW, "low", "... RTT below T_low: rate + delta")                                                             \
	X(HIGH, "high", "... RTT above T_high: rate cut toward T_high")                                                \
	X(INCREASES, "increases", "... gradient <= 0: rate + delta")                                                   \
	X(HAI, "hai", "... gradient <= 0, hyperactive: rate + 5 delta")                                                \
	X(DECREASES, "decreases", "... gradient > 0: rate x (1 - beta gradient)")                                      \
	X(LOSS_CUTS, "loss_cuts", "rates halved on entering loss recovery")                                            \
	X(LOSS_UNDOS, "loss_undos", "cuts undone: TCP found the loss spurious")                                        \
	X(RESTARTS, "restarts", "idle restarts (RTT history discarded, rate kept)")                                    \
	X(NO_STATE, "no_state", "ACKs or connections without socket state (Reno fallback)")                            \
	X(PARAM_RETRY, "param_retry", "parameter copies dropped: invalid")

#define LUMEN_TIMELY_COUNTER_ENUM(id, name, help) LUMEN_TIMELY_CNT_##id,
enum lumen_timely_counter {
	LUMEN_TIMELY_COUNTERS(LUMEN_TIMELY_COUNTER_ENUM) LUMEN_TIMELY_CNT_MAX
};
#undef LUMEN_TIMELY_COUNTER_ENUM

/* ---------------------------------------------------------------------- */
/* struct_ops reTCP (retcp.bpf.c)                                          */

#define LUMEN_CC_NAME_RETCP "bpf_retcp"

/*
 * Configuration (array "retcp_cfg", one entry), written once by the loader
 * before the algorithm is registered. The circuit to a destination is
 * lumend's window for its node (retcp_windows, lumend's own map), trusted
 * only while lumend's state (retcp_osched, lumend's too) is not quiet and
 * its last boundary is younger than stale_ns (lumen_osched_stale).
 */
struct lumen_retcp_cfg {
	struct lumen_retcp_params params;
	__u64 stale_ns;
	__u32 nodes;
	__u32 self;
};

/* Per-socket state (sk_storage "retcp_sk"). */
struct lumen_retcp_sk {
	struct lumen_retcp r;
	__u64 until_ns; /* TAI: when the phase next changes (0: at lumend's next word) */
	__u32 node; /* the destination's node, or LUMEN_RETCP_NO_NODE */
	__u32 pad;
};

#define LUMEN_RETCP_NO_NODE 0xffffffffu

/* Per-CPU counters (array "retcp_stats"), as LUMEN_CC_COUNTERS. */
#define LUMEN_RETCP_COUNTERS(X)                                                                                        \
	X(FLOWS, "flows", "connections initialised")                                                                   \
	X(OFF_SCHEDULE, "off_schedule", "... to an address no node has: plain Reno")                                   \
	X(ACKS, "acks", "ACKs processed")                                                                              \
	X(JUMPS_UP, "jumps_up", "windows multiplied by jump: the circuit (or its prebuffering) began")                 \
	X(JUMPS_DOWN, "jumps_down", "windows divided by jump: the circuit ended")                                      \
	X(QUIET, "quiet", "ACKs while lumend said quiet: the packet network's window")                                 \
	X(STALE, "stale", "ACKs while lumend's last boundary was too old: the packet network's window")                \
	X(NO_STATE, "no_state", "ACKs or connections without socket state (Reno alone)")

#define LUMEN_RETCP_COUNTER_ENUM(id, name, help) LUMEN_RETCP_CNT_##id,
enum lumen_retcp_counter {
	LUMEN_RETCP_COUNTERS(LUMEN_RETCP_COUNTER_ENUM) LUMEN_RETCP_CNT_MAX
};
#undef LUMEN_RETCP_COUNTER_ENUM

/* ---------------------------------------------------------------------- */
/* Software INT switch                                                     */

#define LUMEN_SWITCH_MAX_PORTS 64
#define LUMEN_SWITCH_QHIST_BUCKETS 32 /* log2 buckets of queue bytes */

/* Per-port configuration (array "lumen_sw_cfg", index = port id). */
struct lumen_switch_port_cfg {
	__u32 in_use;
	__u32 rate_mbps; /* the bottleneck rate, also stamped into INT */
	__u16 rate_code; /* lumen_int_rate_encode(rate_mbps) */
	__u16 pad;
	__u32 buffer_bytes; /* tail drop above this queue; 0 = no limit */
	__u32 ecn_threshold_bytes; /* CE-mark ECT packets above; 0 = off */
	__u32 int_enabled; /* fill INT requests at dequeue */
	/* The loader's request to heal the queue count (heal_switch_port):
	 * when heal_gen differs from the stats' heal_gen_done, the next packet
	 * through either hook adds heal_bytes to deq_bytes, once. They are
	 * bytes counted at enqueue that will never be seen leaving (the link
	 * went down with packets queued: the kernel dropped them). */
	__u32 heal_gen;
	__u32 pad2;
	__u64 heal_bytes;
};

/* Per-port statistics (array "lumen_sw_stats", index = port id). */
struct lumen_switch_port_stats {
	__u64 enq_bytes; /* accepted into the queue (egress hook) */
	__u64 deq_bytes; /* left the queue (peer's ingress hook) */
	__u64 enq_packets;
	__u64 deq_packets;
	__u64 drops; /* tail drops */
	__u64 drop_bytes;
	__u64 ecn_marks;
	__u64 int_filled; /* hop records written */
	__u64 int_full; /* request had no free slot: overflow flagged */
	__u64 int_malformed; /* an INT request lumen_int_parse refused */
	__u64 qlen_max; /* bytes */
	__u64 qlen_samples; /* one per dequeue */
	__u64 qlen_hist[LUMEN_SWITCH_QHIST_BUCKETS]; /* bucket b: [2^(b-1), 2^b) bytes, b=0: 0 */
	__u64 heal_gen_done; /* the cfg's heal_gen last applied */
	__u64 healed_bytes; /* heal_bytes added to deq_bytes, in all */
};

/* ---------------------------------------------------------------------- */
/* The rotor switch (rotor_switch.bpf.c)                                   */

/*
 * Maps (created by the loader with the schedule's sizes, pinned under
 * LUMEN_PIN_ROOT/LUMEN_PIN_ROTOR_DIR):
 *   rotor_cfg    array[1]: struct lumen_rotor_cfg
 *   rotor_match  array[2 * uplinks * table_period * nodes]: __u32
 *                destination of source `node` on `uplink` in slot
 *                `in_period` of bank b, at
 *                ((b * uplinks + uplink) * table_period + in_period) * nodes
 *                + node (itself: idle)
 *   rotor_ports  hash ifindex -> struct lumen_rotor_port: who is behind a port
 *   rotor_out    array[uplinks * nodes]: the ifindex of node's port on uplink
 *                (uplink * nodes + node)
 *   rotor_hosts  hash IPv4 address (network order) -> __u32 node
 *   rotor_stats  per-CPU array[uplinks * nodes]: struct lumen_rotor_stats of
 *                the frames that came in on a port
 */
#define LUMEN_ROTOR_MAX_PORTS 1024 /* nodes * uplinks */

/* Written whole, with BPF_F_LOCK; the programs read `change` under the lock
 * and the bank it names without (a bank is written only while no change
 * refers to it, and a write leaves a bank in use with the same bytes). */
struct lumen_rotor_cfg {
	struct bpf_spin_lock lock;
	__u32 nodes;
	__u32 uplinks;
	__u32 table_period; /* rotor_match's room per bank: the longest period it takes */
	/* The links' rate: a frame occupies [arrival, arrival + its wire time
	 * at this rate) and is forwarded only if all of it is in the window
	 * (its tail too). 0: unknown, the head alone is judged. */
	__u32 rate_mbps;
	__u32 pad;
	struct lumen_sched_change change;
	struct lumen_sched_bank banks[2];
};

struct lumen_rotor_port {
	__u32 node;
	__u32 uplink;
};

/* What became of the frames that came in on a port (X-macro: index, name,
 * help). */
#define LUMEN_ROTOR_COUNTERS(X)                                                                                        \
	X(FORWARDED, "forwarded", "frames the current slot connected: sent on to their destination")                   \
	X(GUARD, "guard", "frames in the guard band, head or tail (the switch reconfigures): dropped")                 \
	X(WRONG_SLOT, "wrong_slot", "frames whose destination the current slot does not connect: dropped")             \
	X(NOT_STARTED, "not_started", "frames before the schedule's t0: dropped")                                      \
	X(UNKNOWN_DST, "unknown_dst", "IPv4 frames to an address no port has: dropped")                                \
	X(NOT_IPV4, "not_ipv4", "frames that are not IPv4 (ARP, IPv6): dropped; hosts use static neighbours")          \
	X(NO_PORT, "no_port", "frames on a device the rotor does not know, or with no way out: dropped")               \
	X(CHANGING, "changing", "frames after the instant of a schedule change not committed here: dropped")           \
	X(LATE, "late", "frames a gate stamped with a departure in their window, arriving after it: dropped")

#define LUMEN_ROTOR_COUNTER_ENUM(id, name, help) LUMEN_ROTOR_CNT_##id,
enum lumen_rotor_counter {
	LUMEN_ROTOR_COUNTERS(LUMEN_ROTOR_COUNTER_ENUM) LUMEN_ROTOR_NCOUNTERS
};
#undef LUMEN_ROTOR_COUNTER_ENUM

/* A frame that carries its departure time (a gate's EDT, skb->tstamp as a
 * delivery time on CLOCK_MONOTONIC) is stamped: the switch knows how long
 * after its departure it arrived, and whether the schedule connected the
 * pair at the departure. A guard or wrong-slot frame that left inside its
 * window is counted as late, not as guard or wrong slot: the sender booked
 * it right and its host released it late (timers, a stalled CPU). */
struct lumen_rotor_stats {
	__u64 frames[LUMEN_ROTOR_NCOUNTERS];
	__u64 forwarded_bytes;
	__u64 stamped; /* frames that carried a departure time, whatever their verdict */
	__u64 delay_max_ns; /* the most a stamped frame arrived after its departure */
};

/* ---------------------------------------------------------------------- */
/* lumend's slot state, for the kernel                                     */

/*
 * What lumend (--pin NAME) publishes at every slot boundary it publishes,
 * pinned under LUMEN_PIN_ROOT/LUMEN_PIN_OSCHED_DIR/NAME/:
 *   state    array[1]: struct lumen_osched_state
 *   windows  array[nodes]: struct lumen_osched_window, by destination: the
 *            next window (from the boundary on) in which this node reaches
 *            it, shrunk by the margin; 0, 0: none in the period
 * A gate attached with --lumend NAME drops everything while quiet != 0:
 * lumend's word on its clock and on schedule changes reaches the kernel.
 */
struct lumen_osched_state {
	__u32 quiet; /* LUMEN_QUIET_* */
	__u32 self;
	__u64 version; /* the schedule in force */
	__u64 slot; /* the last boundary published */
	__u64 boundary_ns; /* when (lumend's clock, TAI) */
	__u32 in_period;
	__u32 period;
};

struct lumen_osched_window {
	__u64 open_ns;
	__u64 close_ns;
};

/* ---------------------------------------------------------------------- */
/* Direct-hop gating in the kernel (optical_gate.bpf.c)                    */

/*
 * On a host's device towards a rotor switch, tc egress: each IPv4 packet to
 * a node of the schedule gets the departure time (EDT, skb->tstamp, honoured
 * by the fq qdisc above the device) of the next window in which this host
 * reaches its destination and the packet fits, after the packets already
 * given that window (a per-destination wire clock at the link's rate).
 * Maps (sized by the loader):
 *   gate_cfg    array[1]: struct lumen_gate_cfg
 *   gate_waits  array[2 * table_period * nodes]: __u32 slots until self
 *               reaches dst in bank b, at (b * table_period + in_period) *
 *               nodes + dst (LUMEN_SLOT_NEVER)
 *   gate_hosts  hash IPv4 address (network order) -> __u32 node
 *   gate_clock  array[nodes]: struct lumen_gate_clock, the wire clocks
 *   gate_stats  per-CPU array[nodes]: struct lumen_gate_stats, by destination
 *   gate_osched array[1]: struct lumen_osched_state, a lumend's (--lumend)
 *               or the gate's own (never quiet)
 */
#define LUMEN_GATE_MAX_NODES 4096

/* Written whole with BPF_F_LOCK, read as lumen_rotor_cfg is. */
struct lumen_gate_cfg {
	struct bpf_spin_lock lock;
	__u32 quiet; /* nonzero: hold everything (LUMEN_QUIET_*): dropped and counted */
	__u64 margin_ns; /* windows shrink by this on each side */
	__u32 self; /* this host's node */
	__u32 nodes;
	__u32 rate_mbps; /* the link's rate, for wire times (> 0) */
	__u32 table_period; /* gate_waits' room per bank */
	__u64 max_hold_ns; /* a packet that would wait longer is dropped: the VOQ's bound in time */
	/* --lumend: gate_osched is lumend's, and a boundary_ns older than this
	 * (TAI) means lumend stopped without its last word: dropped as stale
	 * (lumen_osched_stale). 0: no lumend, never stale. */
	__u64 stale_ns;
	struct lumen_sched_change change;
	struct lumen_sched_bank banks[2];
};

/* Updated by compare-and-exchange on free_tai_ns (no lock): a CPU books
 * from the value it read and publishes its booking only if no other CPU
 * booked in between, else it books again from the newer value. */
struct lumen_gate_clock {
	__u64 free_tai_ns; /* when the wire to this destination is free again */
	__u64 pad;
};

#define LUMEN_GATE_COUNTERS(X)                                                                                         \
	X(NOW, "now", "packets sent at once: their window was open and had room")                                      \
	X(HELD, "held", "packets given a later departure (a later window, or later in this one)")                      \
	X(NEVER, "never",                                                                                              \
	  "packets no window can carry (no circuit to the node, or a frame longer than a window): dropped")            \
	X(QUIET, "quiet",                                                                                              \
	  "packets while the gate is quiet (clock or schedule not trusted, a change not committed): dropped")          \
	X(OVERFLOW, "overflow", "packets that would wait longer than max_hold (a full VOQ): dropped")                  \
	X(OTHER, "other", "packets not to a node of the schedule (not IPv4, another address): passed untouched")       \
	X(TOO_LONG, "too_long",                                                                                        \
	  "GSO/TSO bursts longer than any window of their pair: dropped (the gate cannot split)")                      \
	X(STALE, "stale", "packets while lumend's state is older than its stale limit (lumend died): dropped")         \
	X(CONTENDED, "contended", "packets whose booking lost the wire clock to other CPUs too often: dropped")

#define LUMEN_GATE_COUNTER_ENUM(id, name, help) LUMEN_GATE_CNT_##id,
enum lumen_gate_counter {
	LUMEN_GATE_COUNTERS(LUMEN_GATE_COUNTER_ENUM) LUMEN_GATE_NCOUNTERS
};
#undef LUMEN_GATE_COUNTER_ENUM

struct lumen_gate_stats {
	__u64 packets[LUMEN_GATE_NCOUNTERS];
	__u64 held_ns; /* total time packets were held */
	__u64 held_max_ns;
	__u64 bytes; /* of every packet to the destination (not other): its demand */
};

#endif /* LUMEN_BPF_SHARED_H */
