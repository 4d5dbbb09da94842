/* engine.cpp - lumen-dp connections (see engine.h). */
#include "transport/engine.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <stdexcept>

namespace lumen::dp
{

namespace
{

constexpr uint32_t kQuantum = 16; /* packets a connection sends before the next one's turn */
constexpr size_t kFewConns = 64; /* up to this many connections stay in the cache: no prefetching */
constexpr size_t kMaxAcksDue = 4096; /* ACKs waiting for a transmit buffer */

uint64_t key_of(uint32_t peer_ip, uint32_t conn_id)
{
	return ConnIndex::key(peer_ip, conn_id);
}

uint64_t pattern_word(uint32_t conn_id, uint32_t msg, uint32_t word)
{
	return lumen_mix64((uint64_t)conn_id << 40 ^ (uint64_t)msg << 20 ^ word ^ 0x6C756D656E6470ull);
}

/* Calls fn(pattern bytes, position in the span, count) over [off, off + len). */
template <class Fn> bool pattern_walk(uint32_t conn_id, uint32_t msg, uint32_t off, uint32_t len, Fn &&fn)
{
	uint32_t i = 0;

	while (i < len) {
		uint32_t pos = off + i, in = pos & 7;
		uint64_t w = pattern_word(conn_id, msg, pos >> 3);
		uint8_t bytes[8];

		std::memcpy(bytes, &w, sizeof(bytes));
		uint32_t n = std::min<uint32_t>(8 - in, len - i);
		if (!fn(bytes + in, i, n))
			return false;
		i += n;
	}
	return true;
}

void pattern_write(uint32_t conn_id, uint32_t msg, uint32_t off, uint8_t *buf, uint32_t len)
{
	pattern_walk(conn_id, msg, off, len, [buf](const uint8_t *b, uint32_t i, uint32_t n) {
		std::memcpy(buf + i, b, n);
		return true;
	});
}

bool pattern_check(uint32_t conn_id, uint32_t msg, uint32_t off, const uint8_t *buf, uint32_t len)
{
	return pattern_walk(conn_id, msg, off, len, [buf](const uint8_t *b, uint32_t i, uint32_t n) {
		return std::memcmp(buf + i, b, n) == 0;
	});
}

/* A big-endian store of v at p, as one store. The byte-wise lumen_dp_put*
 * on consecutive fields let the compiler assemble them on the stack and
 * move them with one 16-byte load, which waits for the narrow stores before
 * it (a store-forwarding stall: half of build_data's time). */
template <class T> void store_be(uint8_t *p, T v)
{
	static_assert(sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8, "16, 32 or 64 bits");
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if constexpr (sizeof(T) == 2)
		v = __builtin_bswap16(v);
	else if constexpr (sizeof(T) == 4)
		v = __builtin_bswap32(v);
	else
		v = __builtin_bswap64(v);
#endif
	std::memcpy(p, &v, sizeof(v));
}

/* e = {msg_id, msg_len} as one 8-byte store of a value built in registers.
 * Written as two fields, the compiler loaded both from the parsed packet
 * with 8-byte loads, each over two 4-byte fields the parser had just
 * stored: a store-forwarding stall, two fifths of on_data's time. */
void set_ends(Connection::Ends &e, uint32_t msg_id, uint32_t msg_len)
{
	static_assert(sizeof(Connection::Ends) == 8 && offsetof(Connection::Ends, msg_len) == 4, "two 32-bit fields");
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	uint64_t v = (uint64_t)msg_len << 32 | msg_id;
#else
	uint64_t v = (uint64_t)msg_id << 32 | msg_len;
#endif
	std::memcpy(&e, &v, sizeof(v));
}

/* The cache lines of c a sender (DATA out, ACKs in) or a receiver (DATA in,
 * ACKs out) touches per packet: the common head, then its own part. */
void prefetch_role(const Connection *c, bool sender)
{
	const char *p = reinterpret_cast<const char *>(c);
	/* the sender's part ends, the receiver's begins, at the receiver's counters */
	size_t split = (size_t)(reinterpret_cast<const char *>(&c->stats.data_rcvd) - p);
	size_t from = sender ? 64 : split & ~(size_t)63, to = sender ? split : sizeof(Connection);

	__builtin_prefetch(p);
	for (size_t off = from; off < to; off += 64)
		__builtin_prefetch(p + off);
}

/* A congestion control's state: an ACK or a turn reads most of it, and
 * DCTCP's is four lines (232 bytes). A prefetch beyond the object is
 * harmless. */
void prefetch_cc(const CongestionControl *cc)
{
	const char *p = reinterpret_cast<const char *>(cc);

	for (size_t off = 0; off < 256; off += 64)
		__builtin_prefetch(p + off);
}

} // namespace

uint8_t Engine::pattern(uint32_t conn_id, uint32_t msg, uint32_t off)
{
	uint8_t b;

	pattern_write(conn_id, msg, off, &b, 1);
	return b;
}

Connection *Engine::find(uint32_t peer_ip, uint32_t conn_id)
{
	uint64_t key = key_of(peer_ip, conn_id);

	/* frames come in runs of one connection: the last one found first */
	if (last_conn_ && key == last_key_)
		return last_conn_;
	Connection *c = by_key_.find(key);
	if (c) {
		last_key_ = key;
		last_conn_ = c;
	}
	return c;
}

Connection *Engine::open(uint32_t peer_ip, const Mac &mac, uint32_t conn_id, bool client, uint64_t now_ns)
{
	if (live_connections() >= cfg_.max_conns || find(peer_ip, conn_id)) {
		stats_.conn_refused++;
		return nullptr;
	}
	uint32_t idx = (uint32_t)conns_.size();
	if (!free_slots_.empty()) {
		idx = free_slots_.back();
		free_slots_.pop_back();
	} else {
		conns_.emplace_back();
	}
	auto c = std::make_unique<Connection>(cfg_, idx);
	c->conn_id = conn_id;
	c->peer_ip = peer_ip;
	c->peer_mac = mac;
	c->client = client;
	c->last_rx_ns = now_ns;
	lumen_path_init(&c->path, &cfg_.path, cfg_.path_mode, &rng_);
	c->next_tx_ns = now_ns;
	by_key_.insert(key_of(peer_ip, conn_id), c.get());
	conns_[idx] = std::move(c);
	stats_.conns_opened++;
	return conns_[idx].get();
}

Connection *Engine::connect(uint32_t peer_ip, const Mac &peer_mac, uint32_t conn_id, uint64_t now_ns)
{
	Connection *c = open(peer_ip, peer_mac, conn_id, true, now_ns);
	if (!c)
		return nullptr;
	c->state = ConnState::kSynSent;
	c->isn = cookies_.initial_psn(); /* both directions' PSNs start there */
	c->tx.reset(c->isn);
	c->rx.reset(c->isn);
	send_syn(*c, now_ns);
	return c;
}

void Engine::mark_ready(Connection &c)
{
	if (!c.ready) {
		c.ready = true;
		ready_.push_back(c.index);
	}
}

/* A flow's arrival (Ethereal's flowArrival): NCCL-style collectives post
 * to their connections in the same rank order on every host, so every host
 * sends to rank 0 first, then to rank 1, a repetitive incast. A uniform
 * start delay and a uniform place in the ready list break the lockstep:
 * an element appended and swapped with a uniform position of the list is
 * one step of the inside-out Fisher-Yates shuffle, so a batch posted
 * together ends up in a uniformly random order, at O(1) per arrival. */
void Engine::arrive(Connection &c, uint64_t now_ns)
{
	stats_.arrivals++;
	c.start_ns = now_ns + (cfg_.start_jitter_ns ? lumen_rng_below(&order_rng_, cfg_.start_jitter_ns + 1) : 0);
	if (c.ready)
		return;
	c.ready = true;
	ready_.push_back(c.index);
	size_t at = ready_head_ + lumen_rng_below(&order_rng_, ready_.size() - ready_head_);
	std::swap(ready_[at], ready_.back());
}

Connection *Engine::accept(uint32_t peer_ip, const Mac &peer_mac, uint32_t conn_id, uint64_t now_ns)
{
	Connection *c = open(peer_ip, peer_mac, conn_id, false, now_ns);
	if (c)
		c->state = ConnState::kListen;
	return c;
}

PostError Engine::post_send(Connection &c, const SendWr &wr, uint64_t now_ns, uint32_t *msg_id)
{
	if (c.failed)
		return PostError::kFailed;
	if (wr.len == 0 || wr.len > (1u << 31))
		return PostError::kBadLength;
	uint32_t id = c.next_msg_id++;
	bool arrival = !c.has_msgs;

	c.msgs.push_back(Message{id, wr.len, 0, 0, now_ns, wr.data, wr.user, wr.data ? wr.region : 0, 0});
	c.has_msgs = true;
	c.stats.msgs_sent++;
	if (arrival && cfg_.randomize_order)
		arrive(c, now_ns);
	else
		mark_ready(c);
	if (msg_id)
		*msg_id = id;
	return PostError::kOk;
}

PostError Engine::post_recv(Connection &c, const RecvWr &wr, uint64_t now_ns)
{
	if (c.failed)
		return PostError::kFailed;
	if (!wr.data)
		return PostError::kNoBuffer;
	if (wr.cap == 0 || wr.cap > (1u << 31))
		return PostError::kBadLength;
	c.rx_wrs.push_back(RecvSlot{wr, now_ns});
	c.rx_app = true;
	c.rx_room = (uint32_t)std::min<uint64_t>((uint64_t)c.rx_room + psns_of(wr.cap), UINT32_MAX);
	window_update(c);
	return PostError::kOk;
}

/* A window update (TCP's, RFC 9293 3.8.6.2.2, in PSNs): the latest ACK
 * offered a window of 0, so the sender has at most one packet out, a
 * probe that finds no buffer and is dropped; without a word from us it
 * learns of the new buffer only when its RTO resends that probe. So an
 * ACK that only reopens the window (pkts 0: it answers no DATA, its echo
 * fields are empty) goes out as soon as a buffer opens a closed window,
 * or grows a small one by half the PSN window (a sender held to a few
 * packets a round trip would otherwise wait for their ACKs). Not before
 * the peer's first DATA: until an ACK, a sender assumes the whole window. */
void Engine::window_update(Connection &c)
{
	const uint32_t was = c.rwnd_sent, now = rwnd_of(c);
	if (c.state != ConnState::kEstablished || was == UINT32_MAX || now <= was)
		return;
	if (was != 0 && now - was < cfg_.rx_window / 2)
		return;
	if (acks_.size() >= kMaxAcksDue) {
		stats_.acks_dropped++;
		return;
	}
	AckDue &a = acks_.emplace_back();
	a.conn = c.index;
	a.echo_sport = c.rx_sport; /* the path: the latest DATA's entropy */
	c.rwnd_sent = now; /* one update per opening, even before it is sent */
	mark_ready(c);
}

/* Every message completes once: those still held complete now, with
 * status. The scoreboard keeps its records (ACKs still in flight find
 * them), but nothing is sent again: has_msgs stays false and the RTO is
 * off. */
void Engine::fail(Connection &c, MsgStatus status, uint64_t now_ns)
{
	if (c.failed)
		return;
	c.failed = true;
	c.has_msgs = false;
	wheel_.cancel(c.rto_timer);
	wheel_.cancel(c.circuit_timer);
	while (!c.msgs.empty()) {
		Message m = c.msgs.front();
		c.msgs.pop_front();
		complete(c,
			 Completion{Completion::kSend, status, m.id, 0, m.len, m.user, m.posted_ns, now_ns, m.zc_pkts});
	}
	c.cut = 0;
	uint32_t id = c.rx_next_msg;
	c.rx_room = 0;
	while (!c.rx_wrs.empty()) {
		RecvSlot r = c.rx_wrs.front();
		c.rx_wrs.pop_front();
		complete(c, Completion{Completion::kRecv, status, id++, 0, 0, r.wr.user, r.posted_ns, now_ns, 0});
	}
}

uint16_t Engine::entropy_of(uint16_t sport) const
{
	uint32_t e = (uint32_t)sport - cfg_.sport_base;

	return sport >= cfg_.sport_base && e < cfg_.path.entropies ? (uint16_t)e : UINT16_MAX;
}

/* ---------------------------------------------------------------------- */
/* Receive                                                                  */

void Engine::rx(const uint8_t *frame, uint32_t len, uint64_t now_ns)
{
	lumen_dp_pkt p;
	int err;

	stats_.rx_frames++;
	last_rx_ns_ = now_ns;
	err = lumen_dp_parse(frame, len, cfg_.udp_port, &p);
	if (err) {
		stats_.refused[std::min<size_t>((size_t)-err, stats_.refused.size() - 1)]++;
		if (err == -LUMEN_DP_EVERSION) {
			/* the parser got past IPv4, UDP and the common header's length */
			stats_.bad_version++;
			stats_.peer_version = frame[LUMEN_DP_HDR_OFF];
			stats_.peer_version_ip = lumen_dp_get32(frame + LUMEN_DP_IP_SRC_AT);
		} else
			stats_.malformed++;
		return;
	}
	if (p.ip_dst != cfg_.ip) {
		stats_.no_conn++;
		return;
	}
	if (p.type == LUMEN_DP_PROBE) {
		stats_.probes_rcvd++; /* a probe whose TTL outlasted the fabric: not a connection's */
		return;
	}
	Connection *c = find(p.ip_src, p.conn_id);
	if (p.type >= LUMEN_DP_SYN) {
		on_ctrl(c, p, now_ns);
		return;
	}
	if (!c || c->state < ConnState::kEstablished) {
		/* nothing opens on DATA (a handshake does): a forged stream
		 * allocates nothing; a sender that lost its peer's state hears so */
		if (p.type == LUMEN_DP_DATA) {
			stats_.unknown_data++;
			if (!c) {
				stats_.resets_sent++;
				queue_ctrl(p.ip_src, p.eth_src, p.conn_id, LUMEN_DP_FIN, LUMEN_DP_F_RST, p.psn, now_ns,
					   0, p.sport);
			}
		} else {
			stats_.no_conn++;
		}
		return;
	}
	c->last_rx_ns = now_ns;
	if (p.type == LUMEN_DP_DATA)
		on_data(*c, p, now_ns);
	else
		on_ack(*c, p, now_ns);
}

void Engine::rx_burst(const uint8_t *const *frames, const uint32_t *lens, uint32_t n, uint64_t now_ns)
{
	constexpr uint32_t kAhead = 2; /* frames ahead whose state beyond the connection is fetched */
	constexpr uint32_t kKeyEnd = LUMEN_DP_CONN_AT + 4; /* the connection id's last byte + 1 */
	uint64_t keys[kMaxBurst];

	if (conns_.size() <= kFewConns) { /* their state stays in the cache */
		for (uint32_t i = 0; i < n; i++)
			rx(frames[i], lens[i], now_ns);
		return;
	}
	while (n > kMaxBurst) {
		rx_burst(frames, lens, kMaxBurst, now_ns);
		frames += kMaxBurst;
		lens += kMaxBurst;
		n -= kMaxBurst;
	}
	/* Three passes, so that the misses of a burst overlap: where each
	 * frame's connection is indexed (a frame too short for the key has
	 * none: rx refuses it anyway); the connections, and their lines for
	 * the frame's role; then the frames, each with what its handling reads
	 * beyond the connection (found by then) fetched a few frames ahead. */
	const Connection *conns[kMaxBurst];
	for (uint32_t i = 0; i < n; i++) {
		keys[i] = lens[i] >= kKeyEnd ? key_of(lumen_dp_get32(frames[i] + LUMEN_DP_IP_SRC_AT),
						      lumen_dp_get32(frames[i] + LUMEN_DP_CONN_AT))
					     : 0;
		__builtin_prefetch(by_key_.home(keys[i]));
	}
	for (uint32_t i = 0; i < n; i++) {
		conns[i] = lens[i] >= kKeyEnd ? by_key_.find(keys[i]) : nullptr;
		if (conns[i] && (i == 0 || conns[i] != conns[i - 1]))
			prefetch_role(conns[i], frames[i][LUMEN_DP_TYPE_AT] != LUMEN_DP_DATA);
	}
	/* a frame handled may free a connection (a FIN, a reset): from then
	 * on the pointers found above may dangle, and only rx() looks */
	const uint64_t frees = frees_;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t k = i + kAhead;
		if (frees_ == frees && k < n && conns[k] && lens[k] >= LUMEN_DP_HDR_OFF + LUMEN_DP_COMMON_HLEN) {
			const Connection &c = *conns[k];
			uint32_t psn = lumen_dp_get32(frames[k] + LUMEN_DP_PSN_AT);
			if (frames[k][LUMEN_DP_TYPE_AT] == LUMEN_DP_DATA) {
				c.rx.prefetch(psn);
				if (!c.rx_ends.empty())
					__builtin_prefetch(&c.rx_ends[psn & (cfg_.rx_window - 1)]);
			} else {
				prefetch_cc(c.cc.get());
				__builtin_prefetch(&c.tx.at(c.tx.una()));
				if (!c.msgs.empty())
					__builtin_prefetch(&c.msgs.front());
			}
		}
		rx(frames[i], lens[i], now_ns);
	}
}

void Engine::on_data(Connection &c, const lumen_dp_pkt &p, uint64_t now_ns)
{
	bool ce = p.ecn == LUMEN_DP_ECN_CE, now = false;
	uint32_t cum = c.rx.cum();

	if (c.rx_app) {
		/* a message without a buffer yet is not taken (the sender
		 * resends it); a copy of one already taken is answered */
		if (p.msg_id - c.rx_next_msg >= c.rx_wrs.size() && !c.rx.received(p.psn)) {
			c.stats.rnr_drops++;
			return;
		}
	} else if (cfg_.verify && !pattern_check(c.conn_id, p.msg_id, p.msg_off, p.payload, p.payload_len)) {
		c.stats.corrupt++; /* not acknowledged: the sender will resend it */
		return;
	}
	c.stats.data_rcvd++;
	c.stats.ce_rcvd += ce;
	c.rx_sport = p.sport;
	if (c.rx_ends.empty()) /* the first DATA: a client never needs them */
		c.rx_ends.assign(cfg_.rx_window, Connection::Ends{0, 0});
	/* Ethereal's receive(): a window mostly marked asks for another path */
	bool ce_nack = cfg_.ce_nack_threshold_pct && ce_nack_due(c, ce, now_ns);
	if (cfg_.gbn && p.psn != cum) {
		/* Go-Back-N takes only the next PSN; a later one means a loss */
		if (lumen_seq_after(p.psn, cum)) {
			if (!ce_nack && now_ns < c.ce_quiet_until_ns) {
				/* after a CE NACK: the sender is already going
				 * back, this is the old path's tail */
				c.stats.ooo_ignored++;
				return;
			}
			c.ack = AckDue{c.index, p.psn, p.sport, ce, true, p.ts_ns, 1, ce, 0, {}};
			ack_due(c, true);
		} else {
			c.stats.dup_rcvd++;
			c.ack = AckDue{c.index, p.psn, p.sport, ce, ce_nack, p.ts_ns, 1, ce, 0, {}};
			ack_due(c, ce_nack);
		}
		return;
	}
	uint32_t depth = p.psn - cum;
	auto arrival = c.rx.on_data(p.psn);
	if (arrival == RxWindow::Arrival::kBeyond) {
		c.stats.beyond_window++;
		now = true;
	} else if (arrival == RxWindow::Arrival::kDuplicate) {
		c.stats.dup_rcvd++;
		now = true;
	} else {
		c.stats.reorder_max = std::max(c.stats.reorder_max, depth);
		reorder_peak_ = std::max(reorder_peak_, depth);
		now = depth != 0;
		if (p.flags & LUMEN_DP_F_MSG_LAST)
			set_ends(c.rx_ends[p.psn & (cfg_.rx_window - 1)], p.msg_id, p.msg_len);
		if (c.rx_app)
			place(c, p);
		deliver(c, cum, c.rx.cum());
	}
	/* The echo of this packet, counting every packet since the last ACK.
	 * An ACK due now is written where it waits, in acks_, not into c.ack
	 * and copied from there by ack_due: that copy read the fields just
	 * stored with wide loads, a store-forwarding stall (90% of ack_due). */
	c.unacked++;
	bool due = now || ce || ce_nack || (p.flags & LUMEN_DP_F_ACK_NOW) || c.unacked >= cfg_.ack_every;
	bool queued = due && acks_.size() < kMaxAcksDue;
	AckDue &a = queued ? acks_.emplace_back() : c.ack;
	a.conn = c.index;
	a.echo_psn = p.psn;
	a.echo_sport = p.sport;
	a.echo_ts = p.ts_ns;
	a.ce = ce;
	a.nack = ce_nack; /* for the PSN expected next, as every NACK */
	a.pkts = (uint16_t)std::min<uint32_t>(c.ack.pkts + 1u, UINT16_MAX);
	a.ce_pkts = (uint16_t)std::min<uint32_t>(c.ack.ce_pkts + ce, UINT16_MAX);
	a.int_len = 0;
	if (p.flags & LUMEN_DP_F_INT) {
		lumen_int_opt req;
		if (lumen_int_parse(p.ext, p.ext_len, &req) == 0) {
			int n = lumen_int_write_echo(a.int_echo.data(), (uint32_t)a.int_echo.size(), &req);
			if (n > 0)
				a.int_len = (uint8_t)n;
		}
	}
	if (!due) {
		mark_ready(c); /* flushed by the next tx */
		return;
	}
	if (!queued)
		stats_.acks_dropped++; /* as ack_due: the next ACK is cumulative */
	c.ack.pkts = 0;
	c.ack.ce_pkts = 0;
	c.unacked = 0;
}

/* Ethereal's receive() for one DATA packet (ce: it was marked): whether the
 * window counted so far, at least kCeNackMinPkts packets, is now more than
 * the threshold marked. Windows of ce_window_ns follow each other from the
 * first packet; after a NACK the next one starts a window later, and the
 * packets in between (the old path's tail, marked as well) count for
 * nothing. O(1), no allocation. */
bool Engine::ce_nack_due(Connection &c, bool ce, uint64_t now_ns)
{
	if (now_ns < c.ce_quiet_until_ns)
		return false;
	if (now_ns - c.ce_win_start_ns >= cfg_.ce_window_ns) {
		c.ce_win_start_ns = now_ns;
		c.ce_win_pkts = c.ce_win_marked = 0;
	}
	c.ce_win_pkts++;
	c.ce_win_marked += ce;
	/* marked / pkts > pct / 100, without a division */
	if (c.ce_win_pkts < kCeNackMinPkts ||
	    (uint64_t)c.ce_win_marked * 100 <= (uint64_t)cfg_.ce_nack_threshold_pct * c.ce_win_pkts)
		return false;
	c.stats.ce_nacks_sent++;
	c.ce_quiet_until_ns = now_ns + cfg_.ce_window_ns;
	c.ce_win_start_ns = c.ce_quiet_until_ns;
	c.ce_win_pkts = c.ce_win_marked = 0;
	return true;
}

/* A new packet of an application's message into its receive buffer (the
 * one of message p.msg_id, which on_data found): the bytes that fit. */
bool Engine::place(Connection &c, const lumen_dp_pkt &p)
{
	uint32_t k = p.msg_id - c.rx_next_msg;

	if (k >= c.rx_wrs.size())
		return false; /* a forged message id on a new PSN */
	const RecvWr &wr = c.rx_wrs[k].wr;
	if (p.msg_off >= wr.cap)
		return true; /* beyond the buffer: truncated */
	std::memcpy(wr.data + p.msg_off, p.payload, std::min<uint32_t>(p.payload_len, wr.cap - p.msg_off));
	return true;
}

/* Messages whose last PSN lies in [from, to) are complete, in order. */
void Engine::deliver(Connection &c, uint32_t from, uint32_t to)
{
	for (uint32_t psn = from; psn != to; psn++) {
		Connection::Ends &e = c.rx_ends[psn & (cfg_.rx_window - 1)];
		if (!e.msg_len)
			continue;
		if (e.msg_id != c.rx_next_msg)
			c.stats.corrupt++; /* a sender that skipped or repeated a message id */
		Connection::Ends done = e;
		e = Connection::Ends{0, 0};
		c.rx_next_msg = done.msg_id + 1;
		c.stats.msgs_delivered++;
		c.stats.bytes_delivered += done.msg_len;
		Completion d{Completion::kRecv, MsgStatus::kOk, done.msg_id, done.msg_len, done.msg_len, 0, 0, 0, 0};
		if (c.rx_app && !c.rx_wrs.empty()) {
			RecvSlot r = c.rx_wrs.front();
			c.rx_wrs.pop_front();
			c.rx_room -= std::min(c.rx_room, psns_of(r.wr.cap));
			d.user = r.wr.user;
			d.posted_ns = r.posted_ns;
			if (done.msg_len > r.wr.cap) {
				d.len = r.wr.cap;
				d.status = MsgStatus::kTruncated;
			}
		}
		if (on_complete) {
			d.done_ns = last_rx_ns_;
			on_complete(c, d);
		}
	}
}

void Engine::ack_due(Connection &c, bool nack)
{
	c.ack.nack = nack;
	/* a port that takes nothing for long must not make us hoard ACKs: the
	 * next one is cumulative and the sender's RTO covers the rest */
	if (acks_.size() >= kMaxAcksDue)
		stats_.acks_dropped++;
	else
		acks_.push_back(c.ack);
	c.ack.pkts = 0;
	c.ack.ce_pkts = 0;
	c.unacked = 0;
}

/* ---------------------------------------------------------------------- */
/* Transmit                                                                 */

void Engine::fill_addresses(lumen_dp_pkt &p, const Connection &c) const
{
	std::memcpy(p.eth_dst, c.peer_mac.data(), 6);
	p.ip_dst = c.peer_ip;
	p.conn_id = c.conn_id;
}

/* The DATA frame of psn (record r) into buf; its length, or < 0 when it does
 * not fit. Without INT the headers are the template's with the packet's
 * fields written over them, byte for byte what lumen_dp_build writes
 * (dp_engine_test checks) without its checks, which every packet the engine
 * cuts passes (payload 1..max_payload inside its message), and without
 * storing again what every DATA frame shares. The caller writes the payload.
 * Inlined into its one caller (the call cost a tenth of it); the builder's
 * path for INT stays out of line. */
inline __attribute__((always_inline)) int Engine::build_data(uint8_t *buf, uint32_t room, const Connection &c,
							     const TxRecord &r, uint32_t psn, uint16_t sport,
							     uint8_t flags, uint64_t now_ns)
{
	if (int_request_len_)
		return build_data_int(buf, room, c, r, psn, sport, flags, now_ns);
	uint32_t ip_len = kDataHdrLen - LUMEN_DP_IP_OFF + r.len;
	if (room < LUMEN_DP_IP_OFF + ip_len)
		return -LUMEN_DP_ENOSPACE;
	uint8_t *ip = buf + LUMEN_DP_IP_OFF, *udp = buf + LUMEN_DP_UDP_OFF, *h = buf + LUMEN_DP_HDR_OFF;

	std::memcpy(buf, data_tmpl_.data(), kDataHdrLen);
	std::memcpy(buf, c.peer_mac.data(), 6);
	store_be<uint16_t>(ip + 2, (uint16_t)ip_len);
	store_be<uint16_t>(ip + 10, lumen_dp_ip_csum(data_pkt_.ecn, ip_len, cfg_.ip, c.peer_ip));
	store_be<uint32_t>(ip + 16, c.peer_ip);
	store_be<uint16_t>(udp, sport);
	store_be<uint16_t>(udp + 4, (uint16_t)(ip_len - LUMEN_DP_IP_HLEN));
	h[2] = flags;
	store_be<uint32_t>(h + 4, c.conn_id);
	store_be<uint32_t>(h + 8, psn);
	store_be<uint64_t>(h + 12, now_ns);
	store_be<uint32_t>(h + 20, r.msg_id);
	store_be<uint32_t>(h + 24, r.msg_off);
	store_be<uint32_t>(h + 28, r.msg_len);
	return (int)(LUMEN_DP_IP_OFF + ip_len);
}

/* The window an ACK offers: the PSNs beyond the cumulative one that the
 * receiver will take. The PSN window's whole capacity (a PSN before cum +
 * capacity is never refused for room), and with receive buffers no more
 * than they can hold. */
uint16_t Engine::rwnd_of(const Connection &c) const
{
	uint32_t w = cfg_.rx_window;
	if (c.rx_app)
		w = std::min(w, c.rx_room);
	return (uint16_t)std::min<uint32_t>(w, UINT16_MAX);
}

bool Engine::send_ack(const AckDue &a, FrameSink &sink)
{
	Connection &c = *conns_[a.conn];
	uint32_t room = 0;
	uint8_t *buf = sink.next(&room);

	if (!buf)
		return false;
	lumen_dp_pkt &p = ack_pkt_;
	fill_addresses(p, c);
	p.type = a.nack ? LUMEN_DP_NACK : LUMEN_DP_ACK;
	p.flags = a.ce ? LUMEN_DP_F_ECE : 0;
	p.psn = c.rx.cum();
	p.sack = cfg_.gbn ? 0 : c.rx.sack();
	/* a window update (pkts 0) echoes nothing: it answers no DATA */
	const bool update = a.pkts == 0 && !a.nack;
	p.echo_ts = update ? 0 : a.echo_ts;
	p.echo_psn = update ? 0 : a.echo_psn;
	p.echo_sport = update ? 0 : a.echo_sport;
	/* the ACK goes back on the entropy of the DATA it answers: a path
	 * policy that avoids a failed path for its DATA then also moves the
	 * ACKs off whatever reverse path that entropy hashes to, and an ACK
	 * lost on a dead reverse path withholds that entropy's recycling, so
	 * REPS steers by round trips that work. (One fixed ACK port would put
	 * every ACK of the connection into the same hole.) */
	p.sport = a.echo_sport;
	p.pkts = a.pkts;
	p.ce_pkts = a.ce_pkts;
	p.rwnd = rwnd_of(c);
	c.rwnd_sent = p.rwnd;
	p.ext = a.int_len ? a.int_echo.data() : nullptr;
	p.ext_len = a.int_len;
	if (a.int_len)
		p.flags |= LUMEN_DP_F_INT;
	int n = lumen_dp_build(buf, room, &p);
	if (n < 0)
		return true; /* cannot happen with a buffer of mtu + 14; skip, do not stall */
	sink.done((uint32_t)n);
	(a.nack ? c.stats.nacks_sent : c.stats.acks_sent)++;
	c.stats.window_updates_sent += update;
	stats_.tx_frames++;
	return true;
}

bool Engine::can_send(Connection &c, uint32_t len, uint64_t now_ns) const
{
	uint32_t lost;

	if (c.tx.nxt() - c.tx.una() >= c.peer_rwnd && !c.tx.next_lost(&lost))
		return false;
	if (c.tx.in_flight() > 0 && c.tx.in_flight_bytes() + len > c.cc->cwnd_bytes())
		return false;
	if (now_ns < c.start_ns)
		return false;
	return c.cc->pacing_bps() == 0 || now_ns >= c.next_tx_ns;
}

Engine::Send Engine::send_record(Connection &c, uint32_t psn, bool retx, FrameSink &sink, uint64_t now_ns)
{
	uint32_t room = 0;
	uint8_t *buf = sink.next(&room);

	if (!buf)
		return Send::kNoBuffer;
	uint16_t e = lumen_path_next(&c.path, &cfg_.path, &rng_, now_ns);
	if (retx) {
		c.tx.on_retransmit(psn, now_ns, e);
		c.stats.retransmits++;
	}
	TxRecord &r = c.tx.at(psn);
	r.entropy = e;
	r.sent_ns = now_ns;

	uint8_t flags = data_flags_ | (retx ? LUMEN_DP_F_RETX : 0) | (r.msg_last ? LUMEN_DP_F_MSG_LAST : 0);
	int n = build_data(buf, room, c, r, psn, (uint16_t)(cfg_.sport_base + e), flags, now_ns);
	if (n < 0)
		return Send::kNoBuffer; /* a buffer smaller than the MTU: the shell's bug */
	/* the record's message is still held (it is not acknowledged) */
	Message &m = c.msgs[r.msg_id - c.msgs.front().id];
	if (!m.data) {
		if (cfg_.verify)
			pattern_write(c.conn_id, r.msg_id, r.msg_off, buf + n - r.len, r.len);
		sink.done((uint32_t)n);
	} else if (m.region && sink.attach((uint32_t)n - r.len, m.data + r.msg_off, r.len, m.region)) {
		m.zc_pkts++;
		c.stats.zero_copy_pkts++;
	} else {
		std::memcpy(buf + n - r.len, m.data + r.msg_off, r.len);
		sink.done((uint32_t)n);
	}

	uint32_t wire = (uint32_t)n + 24; /* preamble, FCS, gap */
	if (uint64_t rate = c.cc->pacing_bps())
		c.next_tx_ns = std::max(c.next_tx_ns, now_ns) + (uint64_t)wire * 8'000'000'000ull / rate;
	c.last_tx_ns = now_ns;
	c.stats.data_sent++;
	c.stats.bytes_sent += r.len;
	paths_[e].sent++;
	stats_.tx_frames++;
	if (!c.rto_timer.armed)
		wheel_.arm(c.rto_timer, now_ns + c.rto.rto_ns());
	return Send::kSent;
}

/* One packet of c: a retransmission, else new data. */
Engine::Send Engine::send_data(Connection &c, FrameSink &sink, uint64_t now_ns)
{
	uint32_t psn;

	if (c.state != ConnState::kEstablished)
		return Send::kBlocked; /* established() makes it ready */
	if (c.tx.next_lost(&psn)) {
		if (!can_send(c, c.tx.at(psn).len, now_ns))
			return Send::kBlocked;
		return send_record(c, psn, true, sink, now_ns);
	}
	if (c.cut >= c.msgs.size() || c.tx.full())
		return Send::kBlocked;
	Message &m = c.msgs[c.cut];
	uint32_t len = std::min(max_payload_, m.len - m.next_off);
	if (!can_send(c, len, now_ns))
		return Send::kBlocked;
	/* sending again after more than an RTO with nothing in flight: the
	 * congestion control's picture of the network is stale */
	if (c.tx.una() == c.tx.nxt() && c.last_tx_ns && now_ns - c.last_tx_ns > c.rto.rto_ns())
		c.cc->on_idle_restart(now_ns);
	TxRecord r{};
	r.sent_ns = now_ns;
	r.msg_id = m.id;
	r.msg_off = m.next_off;
	r.msg_len = m.len;
	r.len = len;
	r.tx_count = 1;
	r.msg_last = m.next_off + len == m.len;
	psn = c.tx.push(r);
	m.next_off += len;
	c.bytes_sent_seq += len;
	if (r.msg_last) {
		m.last_psn = psn;
		c.cut++;
	}
	return send_record(c, psn, false, sink, now_ns);
}

/* With thousands of connections, the state of the one whose turn comes is
 * in memory, not in the cache: ask for it a few turns ahead, in steps that
 * each read only what the previous one fetched. Six turns ahead its first
 * line (its role); three, the lines of that role; one, what a sender's
 * lines point to (its congestion control, the scoreboard record it fills
 * next, the message it cuts next). */
void Engine::prefetch_turn(size_t head) const
{
	constexpr size_t kFar = 6, kMid = 3, kNear = 1;

	if (head + kFar < ready_.size())
		__builtin_prefetch(conns_[ready_[head + kFar]].get());
	if (head + kMid < ready_.size()) {
		const Connection *c = conns_[ready_[head + kMid]].get();
		if (c->has_msgs)
			prefetch_role(c, true);
		if (c->unacked)
			prefetch_role(c, false);
	}
	if (head + kNear < ready_.size()) {
		const Connection &c = *conns_[ready_[head + kNear]];
		if (c.has_msgs) {
			prefetch_cc(c.cc.get());
			/* a turn sends a few packets: their records and messages
			 * span the next line too */
			__builtin_prefetch(&c.tx.at(c.tx.nxt()));
			__builtin_prefetch(&c.tx.at(c.tx.nxt() + 3));
			if (c.cut < c.msgs.size())
				__builtin_prefetch(&c.msgs[c.cut]);
			if (c.cut + 3 < c.msgs.size())
				__builtin_prefetch(&c.msgs[c.cut + 3]);
		}
	}
}

uint32_t Engine::tx(FrameSink &sink, uint64_t now_ns, uint32_t budget)
{
	uint32_t sent = 0;
	size_t i = 0;

	/* ACKs first: they are small and each one frees a sender somewhere */
	for (; i < acks_.size() && sent < budget; i++, sent++)
		if (!send_ack(acks_[i], sink))
			break;
	acks_.erase(acks_.begin(), acks_.begin() + (ptrdiff_t)i);
	/* then the handshakes' and closes' frames, as small */
	for (i = 0; i < ctrl_.size() && sent < budget; i++, sent++)
		if (!send_ctrl(ctrl_[i], sink))
			break;
	ctrl_.erase(ctrl_.begin(), ctrl_.begin() + (ptrdiff_t)i);

	/* Connections take turns in a FIFO: one served goes to the back while
	 * it has more to send, those not reached keep their place at the
	 * front. Only the ones served are touched, however many are ready. */
	bool prefetch = conns_.size() > kFewConns;
	for (size_t turns = ready_.size() - ready_head_; turns > 0 && sent < budget; turns--) {
		if (prefetch)
			prefetch_turn(ready_head_);
		Connection &c = *conns_[ready_[ready_head_++]];
		if (c.unacked) {
			c.ack.conn = c.index;
			ack_due(c, false);
			if (send_ack(acks_.back(), sink)) {
				acks_.pop_back();
				sent++;
			}
		}
		Send r = c.has_msgs ? Send::kSent : Send::kBlocked; /* a receiver flushing its ACK */
		for (uint32_t q = 0; q < kQuantum && sent < budget && r == Send::kSent; q++) {
			r = send_data(c, sink, now_ns);
			if (r == Send::kSent)
				sent++;
		}
		/* blocked by a window: an ACK or the RTO makes it ready again;
		 * paced, not yet started, out of budget or of buffers: it stays ready */
		if (r != Send::kBlocked ||
		    (c.has_msgs && ((c.cc->pacing_bps() && now_ns < c.next_tx_ns) || now_ns < c.start_ns)))
			ready_.push_back(c.index);
		else
			c.ready = false;
	}
	if (ready_head_ == ready_.size()) {
		ready_.clear();
		ready_head_ = 0;
	} else if (ready_head_ >= 1024 && ready_head_ * 2 >= ready_.size()) {
		/* the served prefix is dead weight: drop it (amortised O(1) per turn) */
		ready_.erase(ready_.begin(), ready_.begin() + (ptrdiff_t)ready_head_);
		ready_head_ = 0;
	}
	return sent;
}

} // namespace lumen::dp
