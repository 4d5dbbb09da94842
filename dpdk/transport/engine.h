/*
 * engine.h - lumen-dp's transport: connections that carry messages reliably
 * and in order over a network that reorders, drops, duplicates and marks,
 * one packet at a time on paths the sender chooses.
 *
 * An Engine is what one lcore owns: a table of connections (up to
 * max_conns, found by peer address and connection id), a timer wheel, a
 * seeded generator for the path policy and the counters. It knows frames as
 * bytes (include/lumen/dp_wire.h), never DPDK: the shell hands it received
 * frames (rx) and buffers to fill (tx through a FrameSink), so the same
 * engine runs over DPDK ports and over the in-memory network of the tests.
 *
 * Sender, per connection. Messages are posted (post) and cut into packets of
 * at most max_payload bytes, one PSN each. A packet may leave when the
 * congestion window (cc.h) has room for it, the receiver's window (rwnd of
 * the latest ACK) has room, the scoreboard has a free record and, if the
 * congestion control paces, its departure time has come. Its UDP source
 * port is sport_base + the entropy that the path policy (path_policy.h)
 * gives it; retransmissions ask the policy again, so a lost packet does not
 * retry the path that lost it. An ACK carries the cumulative PSN, a 64-PSN
 * SACK bitmap, and echoes the timestamp, entropy and CE bit of the packet
 * that triggered it: the scoreboard takes the cumulative and selective
 * acknowledgement (tx_scoreboard.h: dupthresh and RACK loss detection), the
 * echoed timestamp gives an RTT sample for the RTO (rto.h) and the
 * congestion control, and the echoed entropy goes back to the path policy
 * as good (no CE) or ECN (CE). One RTO timer per connection, on the wheel
 * (timer_wheel.h): it fires when the oldest packet in flight has waited for
 * the RTO; then every packet in flight is taken as lost, the congestion
 * control is told, the policy hears TIMEOUT (REPS freezing reads the RTT of
 * that moment) and the RTO backs off.
 *
 * Receiver, per connection. A window of rx_window PSNs (rx_window.h) takes
 * packets in any order, drops those beyond it and counts duplicates; every
 * DATA packet is answered (every ack_every packets, and at once for CE, an
 * out-of-order arrival or a packet that asks for it; what is pending is
 * flushed at the end of each tx), so REPS gets one entropy back per packet.
 * A message is delivered when the cumulative PSN passes its last packet,
 * which is in order by construction. In Go-Back-N mode (gbn) the receiver
 * accepts only the next PSN and answers anything else with a NACK for it;
 * the sender then resends everything from there.
 *
 * Ethereal (path policy ethereal, Algorithm 3 of Addanki's dissertation):
 * a connection is one subflow on one pinned entropy, so its packets arrive
 * in order and its receiver is Go-Back-N (validate() insists on gbn). A
 * NACK echoes the entropy of the packet that triggered it, which the path
 * policy hears as NACK (REPS drops such a path, as before; Ethereal wants
 * a reroute when it is the pinned one). When the policy wants a reroute,
 * after a NACK (NAck()) or an RTO (flowTimeout()), the engine asks
 * choose_path for the new entropy (by default a uniformly random other
 * one), pins it, counts a reroute, and goes back N from the NACKed PSN (an
 * RTO resends everything in flight anyway), all on the new path. Packets
 * still on the old path draw NACKs that echo the old entropy: they go back
 * N as every NACK does, but move nothing. The receiver (receive(), with
 * ce_nack_threshold_pct) counts the CE-marked share of a connection's DATA
 * over windows of ce_window_ns; when more than the threshold of at least
 * kCeNackMinPkts packets were marked, the path is slow or overloaded for
 * the whole window (more than a congestion control's own marks), and it
 * sends a NACK for the PSN it expects (the sender reroutes and goes back
 * N), then for one window counts nothing and answers no out-of-order
 * packet (those of the old path), so one slow path costs one NACK.
 *
 * Payloads are a pattern of (connection, message, offset), written by the
 * sender and checked by the receiver when verify is on, so tests and
 * experiments check integrity end to end without keeping copies.
 *
 * Lifecycle (engine_lifecycle.cpp). A connection is established before a
 * byte moves: connect() sends a SYN naming the connection id and a random
 * initial PSN; the server answers with a SYNACK that carries a cookie
 * (conn_cookie.h) and keeps nothing; the client echoes it in a second SYN,
 * and only then does the server hold the connection (one accept()ed for
 * that peer and id, or, with open_on_handshake, a new one) and say so
 * (SYNACK REPLY). Messages posted meanwhile wait. Both sides' PSNs start
 * at the initial one, so a client run again with the same ids is another
 * incarnation: its valid SYN resets the server's old state in place (what
 * the old one held completes kReset), and the old one's stray packets fall
 * outside the new window. DATA for no connection is answered by a FIN RST
 * naming its PSN; the sender fails the connection (kReset) when that PSN
 * is one it has in flight, so a restarted or expired server is noticed
 * without trusting a forger who cannot see the PSNs. close() sends a FIN
 * once every message was acknowledged; its PSN is the end of what was
 * sent, and the peer frees the connection when it has received all of it
 * (FIN REPLY, also the answer for a connection already gone). Connections
 * the engine opened itself (open_on_handshake) are freed after
 * idle_timeout_ns without a frame. SYN and FIN are resent on the RTO timer
 * with backoff. A freed connection's counters stay in totals(); its slot
 * and memory are reused.
 *
 * Nothing a peer sends is trusted: frames the wire parser refuses, ACKs for
 * connections we do not have, cumulative ACKs outside what was sent, echoes
 * of entropies we never used, counts beyond what was received and
 * connections beyond max_conns are counted and change nothing else.
 *
 * Many connections per lcore (lumen-dp bench measures 1 and 10,000). A
 * connection costs what it uses: the scoreboard's ring grows with the
 * packets in flight, the receiver's per-PSN message ends come with the first
 * DATA, so 10,000 connections take ~4 kB (sender) or ~12 kB (receiver) each
 * instead of ~60 kB. Connections are found in an open-addressing table (one
 * cache line, no division) behind a one-entry cache of the latest. Ready
 * connections take turns in a FIFO, so tx touches only those it serves;
 * with more than a few dozen connections, tx fetches the state of the
 * connections whose turn comes next, and rx_burst that of a burst's
 * connections, ahead of use (their fields are grouped by role for it).
 */
#ifndef LUMEN_DP_ENGINE_H
#define LUMEN_DP_ENGINE_H

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

extern "C" {
#include <lumen/dp_wire.h>
#include <lumen/int_option.h>
#include <lumen/path_policy.h>
}

#include "transport/cc.h"
#include "transport/conn_cookie.h"
#include "transport/messages.h"
#include "transport/rto.h"
#include "transport/rx_window.h"
#include "transport/timer_wheel.h"
#include "transport/tx_scoreboard.h"

namespace lumen::dp
{

using Mac = std::array<uint8_t, 6>;

/* Everything an engine is configured with; validate() says what is wrong. */
struct EngineConfig {
	uint32_t ip = 0; /* host order */
	Mac mac{};
	uint16_t udp_port = LUMEN_DP_UDP_PORT; /* destination port of every lumen-dp packet */
	uint16_t sport_base = 49152; /* DATA source port = sport_base + entropy */
	uint32_t mtu = 1500; /* IP packet size */
	lumen_path_mode path_mode = LUMEN_PATH_REPS;
	lumen_path_params path{};
	CcParams cc{};
	RtoParams rto{};
	uint32_t rx_window = 1024; /* PSNs, power of two */
	uint32_t tx_window = 1024; /* scoreboard records, power of two */
	uint32_t ack_every = 1; /* DATA packets per ACK (1: REPS gets every entropy back) */
	uint64_t reorder_window_ns = 0; /* RACK reorder allowance; 0: a quarter of the smoothed RTT */
	bool gbn = false; /* Go-Back-N: in-order receiver with NACKs (ethereal requires it) */
	/* Receiver, gbn: NACK when more than this percent of a connection's
	 * DATA in a window was CE-marked (Ethereal's receive()), 0..99, 0 =
	 * off. The seed gives no value; lumen-dp's --path ethereal uses 50: a
	 * majority of marks for a whole window is more than DCTCP keeps a
	 * queue at (about sqrt(2/W) of the packets of a window of W are
	 * marked in its steady state, ~14 % at W = 100), so it is a path
	 * whose queue stays above the marking threshold whatever the senders
	 * do: a slow link, the case the seed names. */
	uint32_t ce_nack_threshold_pct = 0;
	/* Its window ("the last RTT") and the quiet time after its NACK: 1 us..1 s.
	 * 100 us: the receiver has no RTT of its own, so a fixed value above a
	 * loaded datacenter RTT (tens of us: the sender hears the NACK and
	 * reroutes within one window, so the next window sees the new path)
	 * and below the RTO's floor (200 us: a slow path is left sooner than
	 * a dead one). */
	uint64_t ce_window_ns = 100'000;
	bool verify = true; /* write and check payload patterns */
	uint32_t int_slots = 0; /* >0: DATA asks switches for INT (hop records, 1..5) */
	uint32_t max_conns = 16384;
	/* A valid handshake (cookie echoed) for a connection this engine has
	 * not accept()ed opens it (a server's way: perf, pair, hosts). Off, it
	 * is refused (conn_refused) and the client keeps trying: for
	 * applications that accept every connection themselves before a byte
	 * may arrive, as collectives do, so no message comes before its
	 * receive buffer could be posted. */
	bool open_on_handshake = true;
	/* A connection opened by open_on_handshake is freed after this long
	 * without a frame from its peer and with nothing of its own to send
	 * (the peer vanished without a FIN); 0: never. accept()ed and
	 * connect()ed ones belong to the application and are never expired. */
	uint64_t idle_timeout_ns = 60'000'000'000ull;
	/* A connection fails (its messages complete kTimedOut) after this many
	 * RTOs in a row without the cumulative ACK moving; 0: never (it keeps
	 * trying, as the datapath's studies want). */
	uint32_t max_timeouts = 0;
	/* Randomized QP ordering (Ethereal's flowArrival): a message posted to
	 * a connection with nothing outstanding is a flow's arrival; the
	 * connection waits a uniform [0, start_jitter_ns] and takes a uniformly
	 * random place among the ready ones instead of the back. Off: FIFO. */
	bool randomize_order = true;
	uint64_t start_jitter_ns = 0;
	uint64_t tick_ns = 8192; /* timer wheel tick */
	uint32_t wheel_slots = 4096;
	uint64_t seed = 1;

	EngineConfig();
	std::string validate() const;
	uint32_t max_payload() const; /* payload bytes per DATA packet */
};

/* Counters of one connection; the engine also sums them over connections.
 * The sender's first, then the receiver's (a connection is one or the other:
 * each touches its own cache lines). */
struct ConnStats {
	uint64_t data_sent = 0, bytes_sent = 0, retransmits = 0;
	uint64_t acks_rcvd = 0, acked_pkts = 0, acked_bytes = 0, ecn_echoes = 0, nacks_rcvd = 0;
	uint64_t timeouts = 0, fast_losses = 0, bad_acks = 0, stale_acks = 0;
	uint64_t stale_nacks = 0; /* Go-Back-N: NACKs of packets sent before the latest rewind (ignored) */
	uint64_t spurious_retx = 0; /* retransmissions an echo showed needless (the first copy arrived) */
	uint64_t reroutes = 0; /* ethereal: moves of the connection to another entropy */
	uint64_t spurious_rtos = 0; /* RTO episodes an ACK showed needless (Eifel), undone */
	uint64_t reroutes_undone = 0; /* ethereal: moves back to the entropy a spurious RTO left */
	uint64_t msgs_sent = 0, msgs_acked = 0;
	uint64_t zero_copy_pkts = 0; /* DATA whose payload went out without a copy (messages.h) */
	uint64_t rtt_min_ns = 0, rtt_last_ns = 0;
	uint64_t data_rcvd = 0, dup_rcvd = 0, beyond_window = 0, ce_rcvd = 0, corrupt = 0;
	uint64_t acks_sent = 0, nacks_sent = 0, msgs_delivered = 0, bytes_delivered = 0;
	uint64_t ce_nacks_sent = 0; /* NACKs for a window mostly CE-marked (also in nacks_sent) */
	uint64_t ooo_ignored = 0; /* out-of-order DATA not NACKed in the window after one of those */
	uint64_t rnr_drops = 0; /* DATA of a message no receive buffer was posted for (not taken) */
	/* ACKs that only reopen the window (pkts 0, dp_wire.h): sent when a
	 * posted buffer opens a window the last ACK had closed; received */
	uint64_t window_updates_sent = 0, window_updates_rcvd = 0;
	uint64_t handshake_retries = 0; /* SYNs and FINs resent on the timer */
	uint64_t circuit_up = 0, circuit_down = 0; /* reTCP: the window's jumps with the circuit */
	uint32_t reorder_max = 0;

	void add(const ConnStats &o);
};

/* Per path (entropy) counters of the engine. */
struct PathStats {
	uint64_t sent = 0, good = 0, ecn = 0, lost = 0;
};

/* Frames that parsing or dispatch refused, by reason. */
struct EngineStats {
	uint64_t rx_frames = 0, tx_frames = 0;
	uint64_t arrivals = 0; /* messages posted to idle connections (flow arrivals) */
	uint64_t probes_rcvd = 0; /* path probes (dp_probe.h) that reached us: ignored */
	uint64_t malformed = 0, bad_version = 0, no_conn = 0, conn_refused = 0, conns_opened = 0, acks_dropped = 0;
	uint64_t unknown_data = 0; /* DATA for no established connection: dropped (and a FIN RST sent back) */
	uint64_t syns_rcvd = 0, cookies_sent = 0, bad_cookies = 0; /* handshakes (lifecycle) */
	uint64_t conns_closed = 0, conns_expired = 0, reincarnations = 0; /* freed; idle; reset by a new SYN */
	uint64_t resets_sent = 0, resets_rcvd = 0; /* FIN RST: DATA for no connection; ours in flight */
	uint64_t ctrl_dropped = 0; /* SYN/SYNACK/FIN replies beyond the queue's bound */
	uint64_t stale_ctrl = 0; /* answers to a SYN or FIN already answered (ignored) */
	uint64_t bad_path_choices = 0; /* choose_path answers outside the entropies (the default chose) */
	std::array<uint64_t, LUMEN_DP_E_COUNT> refused{}; /* by lumen_dp_error */
	uint8_t peer_version = 0; /* the version of the latest frame refused for it */
	uint32_t peer_version_ip = 0; /* and who sent it */
};

/* A message of a sender, from post until its last byte is acknowledged. */
struct Message {
	uint32_t id;
	uint32_t len;
	uint32_t next_off; /* bytes already cut into packets */
	uint32_t last_psn; /* valid once next_off == len */
	uint64_t posted_ns;
	const uint8_t *data; /* the application's bytes; nullptr: the pattern */
	uint64_t user;
	uint32_t region; /* SendWr::region */
	uint32_t zc_pkts; /* packets sent without a copy */
};

/* A receive buffer posted to a connection, until its message completes. */
struct RecvSlot {
	RecvWr wr;
	uint64_t posted_ns;
};

/* A sender's messages, oldest first: a ring of a power of two that doubles
 * when full and never shrinks (a connection keeps about as many messages
 * outstanding all along). Every message is one push and one pop, and
 * sending indexes it: a std::deque's chunked indexing and its allocation of
 * a chunk every few messages cost more than the rest of a post. */
class MessageRing
{
      public:
	bool empty() const
	{
		return count_ == 0;
	}
	size_t size() const
	{
		return count_;
	}
	/* 0 <= i < size(): the i-th oldest */
	Message &operator[](size_t i)
	{
		return ring_[(head_ + i) & mask_];
	}
	const Message &operator[](size_t i) const
	{
		return ring_[(head_ + i) & mask_];
	}
	Message &front()
	{
		return ring_[head_];
	}
	const Message &front() const
	{
		return ring_[head_];
	}
	void push_back(const Message &m)
	{
		if (count_ == ring_.size())
			grow();
		ring_[(head_ + count_++) & mask_] = m;
	}
	/* not empty() */
	void pop_front()
	{
		head_ = (head_ + 1) & mask_;
		count_--;
	}

      private:
	void grow();

	std::vector<Message> ring_;
	size_t head_ = 0, count_ = 0, mask_ = 0;
};

/* An ACK the receiver owes: the echo of one DATA packet (or a NACK). */
struct AckDue {
	uint32_t conn;
	uint32_t echo_psn;
	uint16_t echo_sport;
	bool ce, nack;
	uint64_t echo_ts;
	uint16_t pkts, ce_pkts;
	uint8_t int_len;
	std::array<uint8_t, LUMEN_DP_EXT_MAX> int_echo;
};

/* Where a connection is in its lifecycle (engine.h's header). Ordered: DATA
 * and ACKs are taken from kEstablished on. */
enum class ConnState : uint8_t {
	kListen, /* accept()ed: waiting for the client's handshake */
	kSynSent, /* connect()ed: SYN sent (cookie 0) or echoed (cookie set) */
	kEstablished,
	kFinSent, /* close()d: FIN sent, waiting for its REPLY */
};

/* A SYN, SYNACK or FIN to send: answers need no connection. */
struct CtrlDue {
	uint32_t peer_ip;
	Mac peer_mac;
	uint32_t conn_id, psn, cookie;
	uint16_t sport;
	uint8_t type, flags;
	uint64_t ts_ns;
};

/* One connection. The fields are grouped by who touches them per packet
 * (the engine fetches a connection's lines ahead of use, by role): what
 * both roles read, the sender's state and counters, the receiver's. */
struct alignas(64) Connection {
	uint32_t index;
	uint32_t conn_id;
	uint32_t peer_ip;
	Mac peer_mac;
	bool client;
	bool ready = false; /* in the engine's ready list */
	bool has_msgs = false; /* sender: !msgs.empty() */
	bool failed = false; /* fail(): nothing is sent or posted any more */
	ConnState state = ConnState::kEstablished;
	bool engine_owned = false; /* opened by open_on_handshake: the engine frees it */
	bool closing = false; /* close(): a FIN once every message is acknowledged */
	/* free_conn is under way: the completions and on_closed it calls may
	 * close() the connection again, which must do nothing (it would free
	 * it twice) */
	bool freeing = false;
	uint8_t ctrl_tries = 0; /* SYNs or FINs sent for the current step */
	uint32_t isn = 0; /* the incarnation's initial PSN */
	uint32_t cookie = 0; /* client: the server's cookie to echo; 0: none yet */
	uint64_t last_rx_ns = 0; /* the latest frame of the peer (idle expiry) */
	uint32_t unacked = 0; /* receiver: DATA packets not yet answered */

	/* sender */
	TxScoreboard tx;
	std::unique_ptr<CongestionControl> cc;
	RtoEstimator rto;
	lumen_path path{};
	TimerNode rto_timer{};
	TimerNode circuit_timer{}; /* reTCP: the next change of the circuit to the peer */
	MessageRing msgs; /* posted, not yet fully acknowledged, by id */
	size_t cut = 0; /* index in msgs of the first message not fully cut */
	uint32_t next_msg_id = 0;
	uint64_t gbn_ns = 0; /* Go-Back-N: when the sender last went back (a NACK or the RTO) */
	uint64_t next_tx_ns = 0; /* pacing */
	uint64_t start_ns = 0; /* a flow's first packet not before this (start jitter) */
	uint64_t last_tx_ns = 0; /* latest DATA sent (idle restart) */
	uint32_t rto_streak = 0; /* RTOs since the cumulative ACK last moved (max_timeouts) */
	/* Eifel (spurious_rto): the first RTO since una last moved, while it
	 * can still be undone (0: none), and the entropy its reroute left
	 * (UINT16_MAX: none) */
	uint64_t undo_rto_ns = 0;
	uint16_t undo_entropy = UINT16_MAX;
	uint32_t bytes_sent_seq = 0, bytes_acked_seq = 0; /* byte sequence for the congestion control */
	uint32_t peer_rwnd;
	/* RACK's reorder window is srtt/4 times reo_mult (1..16), at most
	 * srtt + 4 rttvar: one more for each needless retransmission (at most
	 * one per RTT), back to 1 after 16 loss recoveries without one (RFC
	 * 8985 7.2, with the echoed send time instead of DSACK) */
	uint8_t reo_mult = 1;
	uint8_t reo_recoveries = 0;
	uint64_t reo_bumped_ns = 0;

	ConnStats stats; /* the sender's counters, then the receiver's */

	/* receiver */
	RxWindow rx;
	struct Ends {
		uint32_t msg_id, msg_len; /* msg_len 0: the PSN ends no message */
	};
	std::vector<Ends> rx_ends; /* per PSN slot, from the first DATA on */
	uint32_t rx_next_msg = 0;
	/* Receive buffers (messages.h), the one of message rx_next_msg first;
	 * rx_app once one was posted: payloads are placed, not checked. */
	std::deque<RecvSlot> rx_wrs;
	bool rx_app = false;
	/* The PSNs the posted buffers can take, at most: each buffer of cap
	 * bytes holds a message of at most ceil(cap / max_payload) packets.
	 * With rx_app, the ACK's rwnd says no more than this (and no more than
	 * the PSN window): a sender does not send what would only be dropped
	 * for want of a buffer. */
	uint32_t rx_room = 0;
	/* The window the latest ACK offered (UINT32_MAX: none sent yet, the
	 * sender assumes the whole PSN window), and the entropy of the latest
	 * DATA (a window update goes back on it) */
	uint32_t rwnd_sent = UINT32_MAX;
	uint16_t rx_sport = 0;
	AckDue ack{}; /* the latest packet's echo while ACKs are coalesced */
	/* CE NACKs (ce_nack_threshold_pct): the window counted since
	 * ce_win_start_ns, and the end of the quiet window after a NACK */
	uint64_t ce_win_start_ns = 0, ce_quiet_until_ns = 0;
	uint32_t ce_win_pkts = 0, ce_win_marked = 0;

	Connection(const EngineConfig &cfg, uint32_t index);
};

/* Connections by (peer address, connection id): an open-addressing table
 * (linear probing, at most half full, keys mixed with a salt), so a lookup
 * is one cache line and no division. */
class ConnIndex
{
      public:
	explicit ConnIndex(uint64_t salt);
	/* a connection's key: its peer and id */
	static uint64_t key(uint32_t peer_ip, uint32_t conn_id)
	{
		return (uint64_t)peer_ip << 32 | conn_id;
	}
	Connection *find(uint64_t key) const
	{
		for (size_t i = slot_of(key);; i = (i + 1) & mask_) {
			const Slot &s = slots_[i];
			if (!s.conn || s.key == key)
				return s.conn;
		}
	}
	/* key must not be there yet */
	void insert(uint64_t key, Connection *conn);
	/* key's entry gone (backward shift: no tombstones); nothing when absent */
	void erase(uint64_t key);
	/* where find(key) looks first, for a prefetch */
	const void *home(uint64_t key) const
	{
		return &slots_[slot_of(key)];
	}

      private:
	struct Slot {
		uint64_t key;
		Connection *conn; /* nullptr: empty */
	};
	size_t slot_of(uint64_t key) const;

	std::vector<Slot> slots_;
	size_t mask_, size_ = 0;
	uint64_t salt_;
};

/* Where tx writes frames: next() gives a buffer (nullptr: no more room
 * this time), done() says how long the frame written into it is. */
class FrameSink
{
      public:
	virtual ~FrameSink() = default;
	virtual uint8_t *next(uint32_t *room) = 0;
	virtual void done(uint32_t len) = 0;
	/* Zero copy (messages.h): the frame's first hdr_len bytes are in the
	 * buffer next() gave, its payload is len bytes at payload, inside the
	 * registered region `region`; the frame is done when this returns
	 * true. false: nothing changed, the engine copies the payload. */
	virtual bool attach(uint32_t hdr_len, const uint8_t *payload, uint32_t len, uint32_t region)
	{
		(void)hdr_len, (void)payload, (void)len, (void)region;
		return false;
	}
};

class Engine
{
      public:
	/* Throws std::invalid_argument with validate()'s message. */
	explicit Engine(const EngineConfig &cfg);

	/* A client connection to peer (conn_id unique per peer); nullptr when full or taken. */
	Connection *connect(uint32_t peer_ip, const Mac &peer_mac, uint32_t conn_id, uint64_t now_ns);
	/* The server's side of peer's connect, before its first DATA (so that
	 * receive buffers can be posted); nullptr when full or taken. */
	Connection *accept(uint32_t peer_ip, const Mac &peer_mac, uint32_t conn_id, uint64_t now_ns);
	/* A connection both ends set up out of band, as RDMA's queue pairs
	 * exchange their PSNs: established at once, PSNs from isn, no
	 * handshake (lumen-dp bench, whose peer is itself). */
	Connection *open_established(uint32_t peer_ip, const Mac &peer_mac, uint32_t conn_id, bool client, uint32_t isn,
				     uint64_t now_ns);

	/* The application interface (messages.h). A message to send; its id
	 * (the connection's count of messages posted) in *msg_id. */
	PostError post_send(Connection &c, const SendWr &wr, uint64_t now_ns, uint32_t *msg_id = nullptr);
	/* A buffer for the connection's next message not yet given one. */
	PostError post_recv(Connection &c, const RecvWr &wr, uint64_t now_ns);
	/* The connection fails: every message it holds completes with status
	 * (sends first, then receives), later posts are refused. */
	void fail(Connection &c, MsgStatus status, uint64_t now_ns);
	/* Close: once every message posted was acknowledged, a FIN; the
	 * connection is freed when the peer answers (or after the retries),
	 * on_closed first. One not yet established is freed now. The
	 * Connection must not be used after on_closed. */
	void close(Connection &c, uint64_t now_ns);
	std::function<void(Connection &)> on_closed;
	/* A message of len bytes (1..2^31) of the pattern; returns its id. */
	uint32_t post(Connection &c, uint32_t len, uint64_t now_ns)
	{
		uint32_t id = 0;

		post_send(c, SendWr{nullptr, len, 0, 0}, now_ns, &id);
		return id;
	}

	/* One received frame. */
	void rx(const uint8_t *frame, uint32_t len, uint64_t now_ns);
	/* n received frames, as n calls of rx; the connections of the next
	 * ones are fetched from memory while one is handled. */
	void rx_burst(const uint8_t *const *frames, const uint32_t *lens, uint32_t n, uint64_t now_ns);
	static constexpr uint32_t kMaxBurst = 64; /* rx_burst takes longer bursts in pieces of this */
	/* Fill up to budget frames (ACKs first, then retransmissions and new data). */
	uint32_t tx(FrameSink &sink, uint64_t now_ns, uint32_t budget);
	/* Fire due timers. */
	void timers(uint64_t now_ns);

	/* Once per message: acknowledged whole (kSend), delivered in order
	 * (kRecv), or failed (messages.h). */
	std::function<void(Connection &, const Completion &)> on_complete;
	/* Ethereal's "select new path": the entropy an ethereal connection
	 * moves to after a NACK or a timeout on old_entropy. The shell sets it
	 * to pick the least-loaded good uplink other than the one it left
	 * (from its port map); unset, a uniformly random entropy other than
	 * old_entropy (old_entropy itself when there is only one). An answer
	 * outside the entropies is refused (stats().bad_path_choices) and the
	 * default chooses; old_entropy is taken as the answer (the shell knows
	 * no better path), not counted as a reroute; kNoPathChoice leaves the
	 * choice to the default (the shell knows no path at all). */
	std::function<uint16_t(Connection &, uint16_t old_entropy)> choose_path;
	/* reTCP's circuit signal (CcAck::circuit_*): for an ACK from peer_ip at
	 * now_ns (the engine's clock), the schedule's time (CLOCK_TAI) in *tai
	 * and the circuit window to the peer in [*open, *close), or false when
	 * there is none to tell (the shell's gate: OpticalGate::circuit_window).
	 * Unset: ACKs tell of no circuit. Asked per ACK of a retcp connection
	 * only. */
	std::function<bool(uint32_t peer_ip, uint64_t now_ns, uint64_t *tai, uint64_t *open, uint64_t *close)>
		circuit_window;
	/* An ethereal connection went back from `from` to `to`, the entropy a
	 * spurious RTO's reroute had left (the shell's loads follow). */
	std::function<void(Connection &, uint16_t from, uint16_t to)> on_reroute_undone;
	static constexpr size_t kMaxCtrlDue = 1024; /* SYN/SYNACK/FIN waiting for tx; more are dropped */
	static constexpr uint8_t kMaxFinTries = 8; /* then a closing connection is freed anyway */
	static constexpr uint16_t kNoPathChoice = UINT16_MAX; /* never an entropy: sport_base + it > 65535 */
	/* Pin an ethereal or ECMP connection to an entropy (the shell's plan,
	 * before it sends); false, and nothing changed, for another policy or
	 * an entropy out of range. */
	bool pin(Connection &c, uint16_t entropy)
	{
		return lumen_path_pin(&c.path, &cfg_.path, entropy) == 0;
	}
	/* The fewest packets of a window that a CE NACK judges on: fewer
	 * make a share of one or two marks. */
	static constexpr uint32_t kCeNackMinPkts = 8;

	const EngineConfig &config() const
	{
		return cfg_;
	}
	const EngineStats &stats() const
	{
		return stats_;
	}
	const std::vector<PathStats> &path_stats() const
	{
		return paths_;
	}
	/* Every slot: nullptr where a connection was freed (and not reused yet). */
	const std::vector<std::unique_ptr<Connection>> &connections() const
	{
		return conns_;
	}
	/* Connections held now. */
	size_t live_connections() const
	{
		return conns_.size() - free_slots_.size();
	}
	ConnStats totals() const;
	/* The deepest reordering (PSNs a new packet arrived ahead of the
	 * cumulative one) of any connection since the previous call; resets
	 * it. ConnStats::reorder_max is a connection's whole life; this is for
	 * a phase of a run (a collective's step). */
	uint32_t take_reorder_peak()
	{
		uint32_t p = reorder_peak_;
		reorder_peak_ = 0;
		return p;
	}
	Connection *find(uint32_t peer_ip, uint32_t conn_id);
	/* Whether every posted message of every connection was acknowledged. */
	bool idle() const;

	/* The payload byte at offset off of message msg on connection conn_id. */
	static uint8_t pattern(uint32_t conn_id, uint32_t msg, uint32_t off);

      private:
	Connection *open(uint32_t peer_ip, const Mac &mac, uint32_t conn_id, bool client, uint64_t now_ns);
	void mark_ready(Connection &c);
	void circuit_update(Connection &c, uint64_t now_ns);
	void arrive(Connection &c, uint64_t now_ns);
	void prefetch_turn(size_t head) const;
	void on_data(Connection &c, const lumen_dp_pkt &p, uint64_t now_ns);
	void deliver(Connection &c, uint32_t from, uint32_t to);
	bool place(Connection &c, const lumen_dp_pkt &p);
	uint32_t psns_of(uint32_t bytes) const
	{
		return bytes / max_payload_ + (bytes % max_payload_ != 0);
	}
	uint16_t rwnd_of(const Connection &c) const;
	void window_update(Connection &c);
	void complete(Connection &c, const Completion &done)
	{
		if (on_complete)
			on_complete(c, done);
	}
	void ack_due(Connection &c, bool nack);
	bool ce_nack_due(Connection &c, bool ce, uint64_t now_ns);
	/* what ACKs, NACKs and the RTO do to a sender (engine_ack.cpp) */
	void check_spurious(Connection &c, const lumen_dp_pkt &p, uint64_t now_ns);
	void on_ack(Connection &c, const lumen_dp_pkt &p, uint64_t now_ns);
	void ack_messages(Connection &c, uint32_t old_una, uint64_t now_ns);
	void on_rto(Connection &c, uint64_t now_ns);
	void reroute(Connection &c);
	void spurious_rto(Connection &c, uint64_t now_ns);
	void rearm_rto(Connection &c, uint64_t now_ns);
	/* lifecycle (engine_lifecycle.cpp) */
	void on_ctrl(Connection *c, const lumen_dp_pkt &p, uint64_t now_ns);
	void on_syn(Connection *c, const lumen_dp_pkt &p, uint64_t now_ns);
	void on_synack(Connection *c, const lumen_dp_pkt &p, uint64_t now_ns);
	void on_fin(Connection *c, const lumen_dp_pkt &p, uint64_t now_ns);
	void on_ctrl_timer(Connection &c, uint64_t now_ns);
	void send_syn(Connection &c, uint64_t now_ns);
	void send_fin(Connection &c, uint64_t now_ns);
	void established(Connection &c, uint64_t now_ns);
	void reincarnate(Connection &c, uint32_t isn, uint64_t now_ns);
	void free_conn(Connection &c, uint64_t now_ns);
	void expire_idle(uint64_t now_ns);
	void queue_ctrl(uint32_t peer_ip, const uint8_t *peer_mac, uint32_t conn_id, uint8_t type, uint8_t flags,
			uint32_t psn, uint64_t ts_ns, uint32_t cookie, uint16_t sport);
	uint16_t ctrl_sport(const Connection &c) const;
	bool send_ctrl(const CtrlDue &d, FrameSink &sink);

	enum class Send {
		kSent,
		kBlocked,
		kNoBuffer
	};
	bool can_send(Connection &c, uint32_t len, uint64_t now_ns) const;
	bool send_ack(const AckDue &a, FrameSink &sink);
	Send send_data(Connection &c, FrameSink &sink, uint64_t now_ns);
	Send send_record(Connection &c, uint32_t psn, bool retx, FrameSink &sink, uint64_t now_ns);
	void data_template();
	void fill_addresses(lumen_dp_pkt &p, const Connection &c) const;
	int build_data(uint8_t *buf, uint32_t room, const Connection &c, const TxRecord &r, uint32_t psn,
		       uint16_t sport, uint8_t flags, uint64_t now_ns);
	int build_data_int(uint8_t *buf, uint32_t room, const Connection &c, const TxRecord &r, uint32_t psn,
			   uint16_t sport, uint8_t flags, uint64_t now_ns);
	uint16_t entropy_of(uint16_t sport) const;
	uint64_t reorder_window(const Connection &c) const;

	EngineConfig cfg_;
	uint32_t max_payload_; /* cfg_.max_payload() */
	EngineStats stats_;
	lumen_rng rng_{};
	lumen_rng order_rng_{}; /* flow arrivals' places and jitter: their own stream, so
				   the ordering leaves the path policy's draws as they were */
	std::vector<std::unique_ptr<Connection>> conns_;
	uint64_t last_rx_ns_ = 0; /* the clock of the frame being received (receive completions) */
	ConnIndex by_key_;
	uint64_t last_key_ = 0; /* find()'s latest hit */
	Connection *last_conn_ = nullptr;
	/* after conns_: destroyed first, while the timer nodes it holds live */
	TimerWheel wheel_;
	std::vector<uint32_t> ready_; /* connections with something to send, a FIFO from ready_head_ */
	size_t ready_head_ = 0;
	std::vector<AckDue> acks_; /* ACKs due now, in arrival order */
	std::vector<CtrlDue> ctrl_; /* SYN, SYNACK, FIN due now */
	CookieJar cookies_;
	std::vector<uint32_t> free_slots_; /* conns_ indexes of freed connections */
	ConnStats closed_; /* the counters of freed connections (totals) */
	uint64_t next_sweep_ns_ = 0; /* idle expiry's next look */
	uint64_t frees_ = 0; /* connections freed so far (rx_burst's pointers) */
	uint32_t reorder_peak_ = 0; /* take_reorder_peak() */
	std::vector<PathStats> paths_;
	std::array<uint8_t, LUMEN_DP_EXT_MAX> int_request_{};
	uint32_t int_request_len_ = 0;
	/* The DATA and ACK being built: the fields every frame shares are set
	 * once, the others per frame. Members, not copies on the stack, so
	 * that the builder reads each field as it was written (a struct copied
	 * and patched on the stack defeats store-to-load forwarding). */
	lumen_dp_pkt data_pkt_, ack_pkt_;
	uint8_t data_flags_ = 0; /* LUMEN_DP_F_INT with --int-slots */
	/* The headers of a DATA frame without INT as lumen_dp_build writes
	 * them, per-packet fields 0: build_data copies and patches it. */
	static constexpr uint32_t kDataHdrLen = LUMEN_DP_HDR_OFF + LUMEN_DP_DATA_HLEN;
	std::array<uint8_t, kDataHdrLen> data_tmpl_{};
};

} // namespace lumen::dp

#endif
