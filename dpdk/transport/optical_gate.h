/*
 * optical_gate.h - direct-hop gating in lumen-dp: the sender's side of a
 * periodic optical circuit schedule (docs/optical.md), as the kernel's gate
 * (bpf/optical_gate.bpf.c) does it for the kernel's traffic.
 *
 * A frame to a node of the schedule gets a departure: the earliest time at
 * which its wire time (preamble, FCS and gap included) fits inside a
 * window of a slot that connects this node to its destination, shrunk by
 * the clock margin on both sides (lumen_slot_departure, the arithmetic
 * every shell shares), counted from when the wire to that destination is
 * free again after the frames already booked: a per-destination wire clock
 * at the link's rate. So each window carries at most its byte budget and
 * the rest waits for the next; the shell holds each frame in a
 * per-destination order until its departure (gate_hold.h: a VOQ per
 * destination, each ordered by time).
 *
 * Frames that no window can carry (no circuit to the node in the period,
 * or longer than a window), that would wait longer than max_hold, or that
 * come while the schedule's daemon says quiet (lumend's page) are dropped
 * and counted: the transport retransmits them. Frames to addresses outside
 * the schedule pass at once. While a schedule change is under way (the
 * page's change_ns), a frame that would leave at or after its instant is
 * not booked: the shell offers it again once the new tables are in.
 *
 * The tables come from lumend's shared-memory page (struct
 * lumen_osched_page, include/lumen/optical.h); times are CLOCK_TAI ns.
 * Pure: no DPDK, no I/O; unit-tested against a slot-by-slot walk.
 */
#ifndef LUMEN_DP_OPTICAL_GATE_H
#define LUMEN_DP_OPTICAL_GATE_H

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

extern "C" {
#include <lumen/optical.h>
}

namespace lumen::dp
{

/* lumen-dp's own reasons to keep quiet, beside lumend's LUMEN_QUIET_* bits
 * (never in the page; OschedPage sets them): lumend's page stopped moving
 * (its boundary, or a change's instant, older than the stale limit: a
 * lumend that died), or the path names a file that is no page of this ABI
 * (a replaced one). Frames dropped while the first alone holds are counted
 * as stale, otherwise as quiet (lumend's word first, as the kernel's gate
 * does). */
constexpr uint32_t kQuietStale = 1u << 16;
constexpr uint32_t kQuietPage = 1u << 17;

/* What the gate needs of a schedule: lumend's page, copied. */
struct GateTables {
	lumen_slot_timing timing{};
	uint64_t version = 0;
	uint32_t self = 0, nodes = 0;
	uint64_t margin_ns = 0;
	uint32_t quiet = 0; /* LUMEN_QUIET_*: nonzero, nothing to a node is sent */
	uint64_t change_ns = 0; /* a change takes over then (0: none): nothing is booked past it */
	std::vector<uint16_t> waits; /* [in_period * nodes + dst] (lumen_osched_page) */
};

/* Whether a frame is new to the gate (kNew: counted as offered),
 * offered again after a deferral (kAgain: not counted twice), or booked
 * again after it came late (kRebook: counted as neither held nor sent
 * again; its release counts). */
enum class Offer {
	kNew,
	kAgain,
	kRebook
};

/* kDefer: the frame would leave after the instant of a schedule change
 * whose tables are not here yet; the shell offers it again later. kLate
 * (release only): the frame's window closed before the shell sent it. */
enum class GateVerdict {
	kPass,
	kSend,
	kDefer,
	kNever,
	kQuiet,
	kOverflow,
	kLate
};

/* late: held frames whose departure came when they no longer fit their
 * window (the shell polled late), booked again rather than sent into a
 * closed circuit */
struct GateStats {
	uint64_t pass = 0, sent = 0, held = 0, never = 0, quiet = 0, overflow = 0, deferred = 0, late = 0;
	uint64_t stale = 0; /* dropped while lumend's page was stale (kQuietStale) */
	uint64_t held_ns = 0, held_max_ns = 0;
};

/* Per destination node: what was offered to it (every frame, whatever
 * became of it: its demand, as the kernel gate counts it) and what left
 * for it (at its departure). Bytes are frame bytes, Ethernet header on and
 * FCS off; a frame costs LUMEN_WIRE_OVERHEAD more on the wire. */
struct GateNodeStats {
	uint64_t offered_frames = 0, offered_bytes = 0, sent_frames = 0, sent_bytes = 0;
};

class OpticalGate
{
      public:
	/* node_of: IPv4 address (host order) -> node; rate_mbps: the link's
	 * (> 0); max_hold_ns: the longest a frame may wait; slack_ns: how
	 * late the shell may send a frame after its departure (its polling
	 * jitter): bookings keep that much further from both ends of a
	 * window than the margin, so a frame sent up to slack_ns late still
	 * fits its window (release). Throws std::invalid_argument for a rate
	 * of 0. */
	OpticalGate(std::unordered_map<uint32_t, uint32_t> node_of, uint32_t rate_mbps, uint64_t max_hold_ns,
		    uint64_t slack_ns = 0);

	/* New tables (lumend published a version, or its quiet word changed):
	 * the wire clocks stay, so bookings already made are respected. */
	void set_tables(const GateTables &t);
	const GateTables &tables() const
	{
		return t_;
	}

	/* A frame of len bytes (Ethernet header on, FCS off) to dst_ip at
	 * now_tai: kSend with *depart_tai (now or later: the shell holds it
	 * until then), kPass (not to a node: send now), kDefer, or a drop.
	 * A frame the shell sends at once (*depart_tai == now_tai) is
	 * counted as sent here; a held one at its release. */
	GateVerdict book(uint32_t dst_ip, uint32_t len, uint64_t now_tai, uint64_t *depart_tai,
			 Offer offer = Offer::kNew);

	/* A held frame whose departure has come, at now_tai: kPass when it
	 * still fits an open window, shrunk by the margin alone (send it:
	 * counted as sent), kQuiet when the daemon went quiet meanwhile (drop
	 * it), kLate (counted) when it no longer fits: the shell then books it
	 * and every frame behind it to that node again, in order, after
	 * restart(node). */
	GateVerdict release(uint32_t dst_ip, uint32_t len, uint64_t now_tai);
	/* A frame to dst_ip that the shell defers without booking it: one to
	 * its node is deferred already, and it must not overtake that one.
	 * Counted as book() counts a deferral; kDefer (kPass: not to a node). */
	GateVerdict defer(uint32_t dst_ip, uint32_t len, Offer offer = Offer::kNew);
	/* Forget node's wire clock: its frames are booked again from now. */
	void restart(uint32_t node)
	{
		if (node < wire_free_.size())
			wire_free_[node] = 0;
	}
	/* The node of dst_ip, or -1: not a node of the tables, or this one. */
	int64_t node_of(uint32_t dst_ip) const;
	/* Is the circuit to dst_ip up, and until when: the window (shrunk by
	 * the margin) of the first slot from now_tai's on that connects this
	 * node to dst_ip's and has not closed yet, in [*open, *close) (open >
	 * now_tai: not up yet). false when there is none to tell: not a node,
	 * no slot of the period connects them, the daemon is quiet, the
	 * schedule has not begun, or the window lies past a pending change's
	 * instant (the next tables are not known). A congestion control's
	 * circuit signal (reTCP, lumen/retcp.h); counts nothing. */
	bool circuit_window(uint32_t dst_ip, uint64_t now_tai, uint64_t *open, uint64_t *close) const;

	const GateStats &stats() const
	{
		return st_;
	}
	/* By node; nodes the tables have not named yet have none. */
	const std::vector<GateNodeStats> &node_stats() const
	{
		return nodes_;
	}

      private:
	std::unordered_map<uint32_t, uint32_t> node_of_;
	uint32_t rate_mbps_;
	uint64_t max_hold_ns_, slack_ns_;
	GateTables t_;
	std::vector<uint64_t> wire_free_; /* by node: when the wire to it is free again */
	bool quiet_now(); /* quiet: counted as quiet or stale */

	GateStats st_;
	std::vector<GateNodeStats> nodes_;
};

/* "10.0.0.1,10.0.0.2,...": node i's address, host order. Empty string on
 * success, else what is wrong (a bad address, one given twice). */
std::string parse_node_addrs(const std::string &text, std::unordered_map<uint32_t, uint32_t> *out);

} // namespace lumen::dp

#endif
