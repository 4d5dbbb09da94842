/*
 * engine_lifecycle.cpp - a connection's establishment, close, reset and
 * expiry (engine.h's header: "Lifecycle"; the frames: dp_wire.h's SYN,
 * SYNACK and FIN; the cookie: conn_cookie.h).
 *
 *   client                                   server
 *   connect: kSynSent, SYN(isn) ----------->  no state: SYNACK(cookie)
 *            SYN COOKIE(isn, cookie) ------>  cookie checks: accept()ed
 *                                             one, a new one (open_on_
 *                                             handshake) or the old
 *                                             incarnation reset in place:
 *   kEstablished <------------ SYNACK REPLY   kEstablished
 *   close: FIN(end PSN) ------------------->  all received: freed
 *   freed <--------------------- FIN REPLY    (also: no such connection)
 *   DATA -------------------------------->    no connection: FIN RST(psn)
 *   psn in flight: fail(kReset) <----------
 *
 * Every answer that needs no connection (SYNACK, FIN REPLY, FIN RST) waits
 * in ctrl_, at most kMaxCtrlDue of them: a flood of SYNs or stray DATA
 * costs a MAC or a queue slot each and allocates nothing.
 */
#include <algorithm>
#include <cstring>

#include "transport/engine.h"

namespace lumen::dp
{

namespace
{

/* The RTO of a SYN or FIN sent for the tries-th time: the connection's,
 * doubled per try, at most the RTO's ceiling. */
uint64_t ctrl_rto_of(const Connection &c, const RtoParams &p)
{
	uint64_t rto = c.rto.rto_ns();
	for (uint8_t i = 1; i < c.ctrl_tries && rto < p.max_ns; i++)
		rto *= 2;
	return std::min(rto, p.max_ns);
}

} // namespace

void Engine::queue_ctrl(uint32_t peer_ip, const uint8_t *peer_mac, uint32_t conn_id, uint8_t type, uint8_t flags,
			uint32_t psn, uint64_t ts_ns, uint32_t cookie, uint16_t sport)
{
	if (ctrl_.size() >= kMaxCtrlDue) {
		stats_.ctrl_dropped++;
		return;
	}
	CtrlDue d{};
	d.peer_ip = peer_ip;
	std::memcpy(d.peer_mac.data(), peer_mac, d.peer_mac.size());
	d.conn_id = conn_id;
	d.psn = psn;
	d.cookie = cookie;
	d.type = type;
	d.flags = flags;
	d.ts_ns = ts_ns;
	d.sport = sport;
	ctrl_.push_back(d);
}

bool Engine::send_ctrl(const CtrlDue &d, FrameSink &sink)
{
	uint32_t room = 0;
	uint8_t *buf = sink.next(&room);
	if (!buf)
		return false;
	lumen_dp_pkt p{};
	std::memcpy(p.eth_dst, d.peer_mac.data(), 6);
	std::memcpy(p.eth_src, cfg_.mac.data(), 6);
	p.ip_src = cfg_.ip;
	p.ip_dst = d.peer_ip;
	p.sport = d.sport;
	p.dport = cfg_.udp_port;
	p.type = d.type;
	p.flags = d.flags;
	p.conn_id = d.conn_id;
	p.psn = d.psn;
	p.ts_ns = d.ts_ns;
	p.cookie = d.cookie;
	int n = lumen_dp_build(buf, room, &p);
	if (n < 0)
		return true; /* cannot happen: 66 bytes; skip, do not stall */
	sink.done((uint32_t)n);
	stats_.tx_frames++;
	return true;
}

/* A SYN or FIN of c goes on the connection's path, and each one resent on
 * the next entropy, so one dead path cannot keep a connection from opening
 * or closing; the answers echo the port they answer, as ACKs do. */
uint16_t Engine::ctrl_sport(const Connection &c) const
{
	uint32_t tries = c.ctrl_tries ? c.ctrl_tries - 1u : 0u;
	return (uint16_t)(cfg_.sport_base + (c.path.next + tries) % cfg_.path.entropies);
}

void Engine::send_syn(Connection &c, uint64_t now_ns)
{
	if (c.ctrl_tries < UINT8_MAX) /* a server not there yet is tried for ever (max_timeouts 0) */
		c.ctrl_tries++;
	queue_ctrl(c.peer_ip, c.peer_mac.data(), c.conn_id, LUMEN_DP_SYN, c.cookie ? LUMEN_DP_F_COOKIE : 0, c.isn,
		   now_ns, c.cookie, ctrl_sport(c));
	wheel_.arm(c.rto_timer, now_ns + ctrl_rto_of(c, cfg_.rto));
}

void Engine::send_fin(Connection &c, uint64_t now_ns)
{
	if (c.state != ConnState::kFinSent) {
		c.state = ConnState::kFinSent;
		c.ctrl_tries = 0;
	}
	c.ctrl_tries++;
	queue_ctrl(c.peer_ip, c.peer_mac.data(), c.conn_id, LUMEN_DP_FIN, 0, c.tx.nxt(), now_ns, 0, ctrl_sport(c));
	wheel_.arm(c.rto_timer, now_ns + ctrl_rto_of(c, cfg_.rto));
}

void Engine::on_ctrl_timer(Connection &c, uint64_t now_ns)
{
	if (c.state == ConnState::kSynSent) {
		if (cfg_.max_timeouts && c.ctrl_tries >= cfg_.max_timeouts) {
			c.stats.timeouts++;
			fail(c, MsgStatus::kTimedOut, now_ns);
			return;
		}
		c.stats.handshake_retries++;
		send_syn(c, now_ns);
	} else if (c.state == ConnState::kFinSent) {
		if (c.ctrl_tries >= kMaxFinTries) {
			free_conn(c, now_ns); /* the peer is gone: so is the connection */
			return;
		}
		c.stats.handshake_retries++;
		send_fin(c, now_ns);
	}
}

/* The handshake is done: what was posted meanwhile may go. */
void Engine::established(Connection &c, uint64_t now_ns)
{
	c.state = ConnState::kEstablished;
	c.ctrl_tries = 0;
	wheel_.cancel(c.rto_timer);
	c.next_tx_ns = std::max(c.next_tx_ns, now_ns);
	circuit_update(c, now_ns);
	if (c.has_msgs)
		mark_ready(c);
	else if (c.closing)
		send_fin(c, now_ns);
}

/* A new incarnation of a connection we hold (its peer ran again): what the
 * old one held completes kReset, its counters go to the totals, and the
 * Connection starts over in place (the application's pointer to an
 * accept()ed one stays good). */
void Engine::reincarnate(Connection &c, uint32_t isn, uint64_t now_ns)
{
	stats_.reincarnations++;
	fail(c, MsgStatus::kReset, now_ns);
	if (c.ready)
		ready_.erase(std::remove(ready_.begin() + (ptrdiff_t)ready_head_, ready_.end(), c.index), ready_.end());
	acks_.erase(std::remove_if(acks_.begin(), acks_.end(), [&](const AckDue &a) { return a.conn == c.index; }),
		    acks_.end());
	closed_.add(c.stats);
	Connection fresh(cfg_, c.index);
	fresh.conn_id = c.conn_id;
	fresh.peer_ip = c.peer_ip;
	fresh.peer_mac = c.peer_mac;
	fresh.client = false;
	fresh.engine_owned = c.engine_owned;
	lumen_path_init(&fresh.path, &cfg_.path, cfg_.path_mode, &rng_);
	c = std::move(fresh);
	c.isn = isn;
	c.rx.reset(isn);
	c.tx.reset(isn);
	c.last_rx_ns = now_ns;
	c.next_tx_ns = now_ns;
	c.state = ConnState::kEstablished;
}

Connection *Engine::open_established(uint32_t peer_ip, const Mac &peer_mac, uint32_t conn_id, bool client, uint32_t isn,
				     uint64_t now_ns)
{
	Connection *c = open(peer_ip, peer_mac, conn_id, client, now_ns);
	if (!c)
		return nullptr;
	c->isn = isn;
	c->tx.reset(isn);
	c->rx.reset(isn);
	c->state = ConnState::kEstablished;
	return c;
}

void Engine::free_conn(Connection &c, uint64_t now_ns)
{
	const uint32_t idx = c.index;
	if (c.freeing)
		return;
	c.freeing = true;
	wheel_.cancel(c.rto_timer);
	fail(c, MsgStatus::kReset, now_ns); /* whatever it still held */
	if (on_closed)
		on_closed(c);
	if (c.ready)
		ready_.erase(std::remove(ready_.begin() + (ptrdiff_t)ready_head_, ready_.end(), idx), ready_.end());
	acks_.erase(std::remove_if(acks_.begin(), acks_.end(), [&](const AckDue &a) { return a.conn == idx; }),
		    acks_.end());
	closed_.add(c.stats);
	by_key_.erase(ConnIndex::key(c.peer_ip, c.conn_id));
	if (last_conn_ == &c)
		last_conn_ = nullptr;
	conns_[idx].reset();
	frees_++;
	free_slots_.push_back(idx);
	stats_.conns_closed++;
}

void Engine::close(Connection &c, uint64_t now_ns)
{
	if (c.freeing)
		return; /* called back from free_conn: it is being freed */
	if (c.failed || c.state == ConnState::kListen || (c.state == ConnState::kSynSent && !c.has_msgs)) {
		free_conn(c, now_ns); /* nothing to finish */
		return;
	}
	if (c.state == ConnState::kFinSent)
		return;
	c.closing = true; /* its messages first: established() or ack_messages() sends the FIN */
	if (c.state == ConnState::kEstablished && !c.has_msgs)
		send_fin(c, now_ns);
}

/* Every so often (a quarter of the timeout), the connections the engine
 * opened whose peer went quiet with nothing in flight either way. */
void Engine::expire_idle(uint64_t now_ns)
{
	next_sweep_ns_ = now_ns + std::max<uint64_t>(cfg_.idle_timeout_ns / 4, 1);
	for (size_t i = 0; i < conns_.size(); i++) {
		Connection *c = conns_[i].get();
		if (c && c->engine_owned && c->state == ConnState::kEstablished && !c->has_msgs && !c->unacked &&
		    now_ns - c->last_rx_ns > cfg_.idle_timeout_ns) {
			stats_.conns_expired++;
			free_conn(*c, now_ns);
		}
	}
}

void Engine::on_ctrl(Connection *c, const lumen_dp_pkt &p, uint64_t now_ns)
{
	if (c)
		c->last_rx_ns = now_ns;
	if (p.type == LUMEN_DP_SYN)
		on_syn(c, p, now_ns);
	else if (p.type == LUMEN_DP_SYNACK)
		on_synack(c, p, now_ns);
	else
		on_fin(c, p, now_ns);
}

void Engine::on_syn(Connection *c, const lumen_dp_pkt &p, uint64_t now_ns)
{
	stats_.syns_rcvd++;
	if (!(p.flags & LUMEN_DP_F_COOKIE)) { /* keep nothing: answer with a cookie */
		stats_.cookies_sent++;
		queue_ctrl(p.ip_src, p.eth_src, p.conn_id, LUMEN_DP_SYNACK, 0, p.psn, p.ts_ns,
			   cookies_.make(p.ip_src, p.conn_id, p.psn, now_ns), p.sport);
		return;
	}
	if (!cookies_.check(p.ip_src, p.conn_id, p.psn, p.cookie, now_ns)) {
		stats_.bad_cookies++;
		return;
	}
	if (c && c->client) { /* our own connection to that peer has that id */
		stats_.conn_refused++;
		return;
	}
	if (c && c->state == ConnState::kListen) {
		c->isn = p.psn;
		c->rx.reset(p.psn);
		c->tx.reset(p.psn);
		established(*c, now_ns);
	} else if (c && c->isn != p.psn) {
		reincarnate(*c, p.psn, now_ns);
	} else if (!c) {
		if (!cfg_.open_on_handshake) {
			stats_.conn_refused++; /* the application accepts first; the client retries */
			return;
		}
		Mac mac;
		std::memcpy(mac.data(), p.eth_src, mac.size());
		c = open(p.ip_src, mac, p.conn_id, false, now_ns);
		if (!c)
			return;
		c->engine_owned = true;
		c->isn = p.psn;
		c->rx.reset(p.psn);
		c->tx.reset(p.psn);
		established(*c, now_ns);
	} /* else a repeat of the SYN that opened it: answered again */
	queue_ctrl(p.ip_src, p.eth_src, p.conn_id, LUMEN_DP_SYNACK, LUMEN_DP_F_REPLY, p.psn, p.ts_ns, 0, p.sport);
}

void Engine::on_synack(Connection *c, const lumen_dp_pkt &p, uint64_t now_ns)
{
	if (c && c->client && p.psn == c->isn && c->state != ConnState::kSynSent) {
		stats_.stale_ctrl++; /* a repeat: our SYN was resent and both were answered */
		return;
	}
	if (!c || !c->client || c->state != ConnState::kSynSent || p.psn != c->isn) {
		stats_.no_conn++; /* forged, or for an incarnation gone */
		return;
	}
	/* the echoed send time of our SYN: the first RTT sample, if it is one */
	if (p.ts_ns && p.ts_ns <= now_ns && now_ns - p.ts_ns <= cfg_.rto.max_ns)
		c->rto.sample(std::max<uint64_t>(now_ns - p.ts_ns, 1));
	if (p.flags & LUMEN_DP_F_REPLY) {
		established(*c, now_ns);
		return;
	}
	if (p.cookie == 0)
		return;
	c->cookie = p.cookie;
	c->ctrl_tries = 0;
	send_syn(*c, now_ns);
}

void Engine::on_fin(Connection *c, const lumen_dp_pkt &p, uint64_t now_ns)
{
	if (p.flags & LUMEN_DP_F_RST) {
		/* our DATA p.psn found no connection: believed only for a PSN in
		 * flight, which an off-path forger does not know */
		if (c && c->state >= ConnState::kEstablished && !c->failed && c->tx.una() != c->tx.nxt() &&
		    !lumen_seq_after(c->tx.una(), p.psn) && lumen_seq_after(c->tx.nxt(), p.psn)) {
			stats_.resets_rcvd++;
			fail(*c, MsgStatus::kReset, now_ns);
		} else {
			stats_.no_conn++;
		}
		return;
	}
	if (p.flags & LUMEN_DP_F_REPLY) { /* our FIN answered */
		if (c && c->state == ConnState::kFinSent && p.psn == c->tx.nxt())
			free_conn(*c, now_ns);
		else
			stats_.stale_ctrl++; /* a repeat, for a connection already freed */
		return;
	}
	if (c && c->state < ConnState::kEstablished)
		return; /* not open yet: nothing to close */
	/* the peer closes once we have all it sent (else it sends the FIN again) */
	if (c && p.psn != c->rx.cum())
		return;
	queue_ctrl(p.ip_src, p.eth_src, p.conn_id, LUMEN_DP_FIN, LUMEN_DP_F_REPLY, p.psn, p.ts_ns, 0, p.sport);
	if (c)
		free_conn(*c, now_ns);
}

} // namespace lumen::dp
