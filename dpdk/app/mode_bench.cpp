/*
 * mode_bench.cpp - lumen-dp's bench mode: the datapath's packet rate on one
 * lcore, on a port that costs nothing (net_null), to put next to
 * dpdk-testpmd's on the same vdev and lcore (tools/bench-dp runs both).
 *
 *   tx   The full sender. An Engine with --conns client connections, each
 *        keeping --depth messages of --msg-size bytes outstanding (closed
 *        loop: a message acknowledged is posted again), fills bursts of 32
 *        mbufs (segmentation, header, path policy, scoreboard, RTO timer)
 *        that go to port 0's TX, where net_null frees them. Nothing is
 *        received from the port (net_null's RX hands out garbage): the bench
 *        is the peer. Before a burst goes to rte_eth_tx_burst it reads the
 *        DATA frames in it and answers them as a receiver would: per
 *        connection a cumulative ACK every --ack-every packets, and one for
 *        what is left at the end of the burst (as the engine's receiver
 *        flushes at the end of its tx), with SACK 0 and the echo (timestamp,
 *        PSN, source port) of the latest packet, built with lumen_dp_build
 *        and handed to Engine::rx. So ACK parsing, the congestion control,
 *        REPS feedback, the scoreboard, the RTO timer and the message
 *        completions all run. Rate: DATA packets into the port.
 *   rx   The full receiver. Port 0's RX gives mbufs (net_null allocates
 *        them); the bench writes a valid DATA frame into each (a prebuilt
 *        template with conn_id, PSN, message id and offset and timestamp
 *        patched in: the connections take turns, --ack-every packets each,
 *        PSNs in order per connection), hands it to Engine::rx, and
 *        Engine::tx's ACKs go to port 0's TX. Rate: DATA packets received.
 *
 * Runs of --ack-every packets per connection keep the ACK ratio the same
 * for 1 and for 10,000 connections, so that the two rates differ by what
 * the number of connections costs (their state in the cache), not by the
 * number of ACKs. What the bench does in the peer's place (reading the DATA
 * frames and building ACKs; writing the DATA frames) is timed apart with
 * the TSC and reported as a share of the case's cycles.
 *
 * Each case runs --seconds (5); the first quarter of it, at most 1 s, warms
 * up (page faults, connections opened) and is not counted. Bench defaults
 * that differ from the other modes': --msg-size 32 (106-byte DATA frames,
 * 82-byte ACKs), --ack-every 4, payload patterns off (--verify turns them
 * on), --conns 1,10000, --depth max(ack-every, 64 / conns). SIGINT ends the
 * running case and skips the rest; what ran is reported.
 */
#include <malloc.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include <nlohmann/json.hpp>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "app/run.h"

namespace lumen::dp
{

namespace
{

constexpr uint32_t kBenchLocalIp = 0x0A000001, kBenchPeerIp = 0x0A000002; /* 10.0.0.1, 10.0.0.2 */
constexpr Mac kBenchPeerMac{0x02, 0x00, 0x00, 0x00, 0x00, 0x02};
constexpr uint32_t kFirstConn = 1; /* connection ids are kFirstConn.. */
constexpr uint32_t kFrameRoom = 128; /* scratch bytes per ACK frame (82 without INT) */

/* What one case measured. */
struct Result {
	std::string name; /* "tx" or "rx" */
	uint32_t conns = 0, depth = 0;
	double seconds = 0, warmup_s = 0; /* measured time, after the warm-up */
	uint64_t pkts = 0; /* DATA packets sent (tx) or received (rx) while measured */
	uint64_t other = 0; /* ACKs received (tx) or sent (rx) while measured */
	double mpps = 0;
	double peer_share = 0; /* the bench's part in the peer's place, of the measured cycles */
	double heap_per_conn = 0; /* bytes the engine allocated per connection */
	bool interrupted = false;
	ConnStats totals;
	EngineStats engine;
	uint64_t tx_refused = 0; /* frames the port did not take */
};

/* Send what the sink filled; the port frees what it takes, the rest is freed here. */
uint16_t flush(uint16_t port, BurstSink &sink, uint64_t *refused)
{
	uint16_t n = sink.used();
	if (!n)
		return 0;
	uint16_t sent = rte_eth_tx_burst(port, 0, sink.frames(), n);
	if (sent < n) {
		rte_pktmbuf_free_bulk(sink.frames() + sent, n - sent);
		*refused += n - sent;
	}
	sink.consumed(n);
	return sent;
}

size_t heap_in_use()
{
	return mallinfo2().uordblks;
}

/* Times a case: warm-up, then the measured part; progress lines; SIGINT. */
class Meter
{
      public:
	Meter(const Options &o, const Clock &clock, const char *name, uint32_t conns)
	    : clock_(clock), name_(name), conns_(conns), progress_(o.progress)
	{
		start_ = clock_.now_ns();
		uint64_t total = (uint64_t)(o.seconds * 1e9);
		warm_ = std::min<uint64_t>(total / 4, 1'000'000'000ull);
		end_ = start_ + total;
		next_progress_ = start_ + 1'000'000'000ull;
		last_ns_ = start_;
	}

	/* After each burst, with the packets, ACKs and peer cycles counted so
	 * far: false when the case is over. */
	bool tick(uint64_t now, uint64_t pkts, uint64_t acks, uint64_t peer_cycles)
	{
		if (!measuring_ && now >= start_ + warm_) {
			measuring_ = true;
			m_start_ns_ = now;
			m_start_tsc_ = rte_rdtsc();
			m_pkts_ = pkts;
			m_acks_ = acks;
			m_peer_ = peer_cycles;
		}
		if (now >= next_progress_) {
			if (progress_)
				std::fprintf(stderr, "lumen-dp bench %s, %u conn%s: %6.1f s  %8.3f Mpps\n", name_,
					     conns_, conns_ == 1 ? "" : "s", (double)(now - start_) / 1e9,
					     (double)(pkts - last_pkts_) * 1e3 / (double)(now - last_ns_));
			last_pkts_ = pkts;
			last_ns_ = now;
			next_progress_ += 1'000'000'000ull;
		}
		if (signalled()) {
			interrupted_ = true;
			return false;
		}
		return now < end_;
	}

	void finish(uint64_t pkts, uint64_t acks, uint64_t peer_cycles, Result *r)
	{
		uint64_t now = clock_.now_ns(), tsc = rte_rdtsc();
		if (!measuring_) { /* stopped during the warm-up: count it all */
			m_start_ns_ = start_;
			m_start_tsc_ = start_tsc_;
			m_pkts_ = m_acks_ = m_peer_ = 0;
		}
		r->seconds = (double)(now - m_start_ns_) / 1e9;
		r->warmup_s = (double)(m_start_ns_ - start_) / 1e9;
		r->pkts = pkts - m_pkts_;
		r->other = acks - m_acks_;
		r->mpps = r->seconds > 0 ? (double)r->pkts / r->seconds / 1e6 : 0;
		r->peer_share = tsc > m_start_tsc_ ? (double)(peer_cycles - m_peer_) / (double)(tsc - m_start_tsc_) : 0;
		r->interrupted = interrupted_;
	}

      private:
	const Clock &clock_;
	const char *name_;
	uint32_t conns_;
	bool progress_;
	uint64_t start_ = 0, warm_ = 0, end_ = 0, next_progress_ = 0;
	uint64_t start_tsc_ = rte_rdtsc();
	bool measuring_ = false, interrupted_ = false;
	uint64_t m_start_ns_ = 0, m_start_tsc_ = 0, m_pkts_ = 0, m_acks_ = 0, m_peer_ = 0;
	uint64_t last_pkts_ = 0, last_ns_ = 0;
};

/* The fields every frame of the peer (10.0.0.2) to us (10.0.0.1) shares. */
lumen_dp_pkt peer_frame(const EngineConfig &cfg, uint8_t type)
{
	lumen_dp_pkt p{};

	std::memcpy(p.eth_dst, cfg.mac.data(), 6);
	std::memcpy(p.eth_src, kBenchPeerMac.data(), 6);
	p.ip_src = kBenchPeerIp;
	p.ip_dst = cfg.ip;
	p.dport = cfg.udp_port;
	p.type = type;
	return p;
}

/* ---------------------------------------------------------------------- */
/* tx: the sender, with the bench as its receiver                          */

class TxBench
{
      public:
	TxBench(const EngineConfig &cfg, uint32_t conns)
	    : engine_(cfg), peers_(conns), k_(cfg.ack_every), ack_(peer_frame(cfg, LUMEN_DP_ACK))
	{
		ack_.rwnd = (uint16_t)std::min<uint32_t>(cfg.rx_window, UINT16_MAX);
		touched_.reserve(kBurst);
	}

	Engine &engine()
	{
		return engine_;
	}

	/* Read the DATA frames of a burst and build the peer's ACKs into acks_. */
	void answer(rte_mbuf **m, uint16_t n)
	{
		n_acks_ = 0;
		for (uint16_t i = 0; i < n; i++) {
			const uint8_t *f = rte_pktmbuf_mtod(m[i], const uint8_t *);
			const uint8_t *h = f + LUMEN_DP_HDR_OFF;
			if (rte_pktmbuf_data_len(m[i]) < LUMEN_DP_HDR_OFF + LUMEN_DP_DATA_HLEN || h[1] != LUMEN_DP_DATA)
				continue;
			uint32_t idx = lumen_dp_get32(h + 4) - kFirstConn;
			if (idx >= peers_.size())
				continue;
			Peer &p = peers_[idx];
			uint32_t psn = lumen_dp_get32(h + 8);
			if (psn == p.rcv_nxt) /* in order (nothing is lost here); anything else is only echoed */
				p.rcv_nxt++;
			p.echo_psn = psn;
			p.echo_ts = lumen_dp_get64(h + 12);
			p.echo_sport = lumen_dp_get16(f + LUMEN_DP_UDP_OFF);
			if (p.pending++ == 0)
				touched_.push_back(idx);
			if (p.pending >= k_)
				build(idx);
		}
		for (uint32_t idx : touched_)
			if (peers_[idx].pending)
				build(idx);
		touched_.clear();
	}

	void deliver(uint64_t now)
	{
		const uint8_t *frames[kBurst];
		for (uint32_t i = 0; i < n_acks_; i++)
			frames[i] = acks_[i];
		engine_.rx_burst(frames, ack_len_, n_acks_, now);
	}
	uint32_t acks() const
	{
		return n_acks_;
	}

      private:
	struct Peer {
		uint32_t rcv_nxt = 0, echo_psn = 0;
		uint64_t echo_ts = 0;
		uint16_t echo_sport = 0, pending = 0;
	};

	void build(uint32_t idx)
	{
		Peer &p = peers_[idx];
		ack_.conn_id = kFirstConn + idx;
		ack_.psn = p.rcv_nxt;
		ack_.echo_ts = p.echo_ts;
		ack_.echo_psn = p.echo_psn;
		ack_.echo_sport = p.echo_sport;
		ack_.sport = p.echo_sport; /* as the engine's ACKs do */
		ack_.pkts = p.pending;
		p.pending = 0;
		int len = lumen_dp_build(acks_[n_acks_], kFrameRoom, &ack_);
		if (len > 0)
			ack_len_[n_acks_++] = (uint32_t)len;
	}

	Engine engine_;
	std::vector<Peer> peers_;
	std::vector<uint32_t> touched_;
	uint32_t k_;
	lumen_dp_pkt ack_;
	uint8_t acks_[kBurst][kFrameRoom];
	uint32_t ack_len_[kBurst];
	uint32_t n_acks_ = 0;
};

Result run_tx(const Options &o, const EngineConfig &cfg, rte_mempool *pool, uint32_t conns, uint32_t depth)
{
	Result r;
	Clock clock;
	auto b = std::make_unique<TxBench>(cfg, conns);
	Engine &e = b->engine();
	size_t heap0 = heap_in_use(); /* the engine's own tables are not the connections' */
	uint32_t msg_size = o.msg_size;

	r.name = "tx";
	r.conns = conns;
	r.depth = depth;
	e.on_complete = [&e, msg_size](Connection &c, const Completion &d) {
		if (d.kind == Completion::kSend)
			e.post(c, msg_size, d.done_ns);
	};
	uint64_t now = clock.now_ns();
	for (uint32_t i = 0; i < conns; i++) {
		/* set up out of band: the bench is the peer, its PSNs from 0 */
		Connection *c = e.open_established(kBenchPeerIp, kBenchPeerMac, kFirstConn + i, true, 0, now);
		for (uint32_t k = 0; c && k < depth; k++)
			e.post(*c, msg_size, now);
	}
	r.heap_per_conn = (double)(heap_in_use() - heap0) / conns;

	BurstSink sink(pool);
	Meter meter(o, clock, "tx", conns);
	uint64_t pkts = 0, peer_cycles = 0, acks = 0;
	do {
		now = clock.now_ns();
		e.timers(now);
		if (!sink.refill())
			continue;
		/* a connection sends at most 16 packets per turn: a lone one takes two */
		for (int turn = 0; turn < 2 && sink.used() < kBurst; turn++)
			if (!e.tx(sink, now, kBurst - sink.used()))
				break;
		uint64_t t0 = rte_rdtsc();
		b->answer(sink.frames(), sink.used());
		peer_cycles += rte_rdtsc() - t0;
		pkts += flush(o.port, sink, &r.tx_refused);
		b->deliver(clock.now_ns());
		acks += b->acks();
	} while (meter.tick(now, pkts, acks, peer_cycles));
	meter.finish(pkts, acks, peer_cycles, &r);
	r.totals = e.totals();
	r.engine = e.stats();
	return r;
}

/* ---------------------------------------------------------------------- */
/* rx: the receiver, with the bench writing its DATA frames                 */

class RxBench
{
      public:
	RxBench(const Options &o, const EngineConfig &cfg, uint32_t conns)
	    : engine_(cfg), gens_(conns), k_(cfg.ack_every), msg_size_(o.msg_size),
	      seg_(std::min(cfg.max_payload(), o.msg_size)), verify_(cfg.verify)
	{
		/* the frame of a full segment and of a message's last one (the same when a message is one packet) */
		for (int last = 0; last < 2; last++) {
			lumen_dp_pkt p = peer_frame(cfg, LUMEN_DP_DATA);
			p.sport = cfg.sport_base;
			p.ecn = LUMEN_DP_ECN_ECT0;
			p.flags = last ? LUMEN_DP_F_MSG_LAST : 0;
			p.msg_len = msg_size_;
			p.payload_len = last && msg_size_ % seg_ ? msg_size_ % seg_ : seg_;
			std::vector<uint8_t> f(LUMEN_DP_HDR_OFF + LUMEN_DP_DATA_HLEN + p.payload_len, 0);
			int n = lumen_dp_build(f.data(), (uint32_t)f.size(), &p);
			if (n != (int)f.size())
				throw std::runtime_error("cannot build the DATA frame template");
			tmpl_[last] = std::move(f);
		}
	}

	Engine &engine()
	{
		return engine_;
	}

	/* Write the next DATA frame into m. */
	void write(rte_mbuf *m, uint64_t now)
	{
		Gen &g = gens_[cur_];
		uint32_t len = std::min(seg_, msg_size_ - g.off);
		bool last = g.off + len == msg_size_;
		const std::vector<uint8_t> &t = tmpl_[last];
		uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
		uint8_t *h = f + LUMEN_DP_HDR_OFF;

		std::memcpy(f, t.data(), t.size());
		lumen_dp_put32(h + 4, kFirstConn + cur_);
		lumen_dp_put32(h + 8, g.psn);
		lumen_dp_put64(h + 12, now);
		lumen_dp_put32(h + 20, g.msg_id);
		lumen_dp_put32(h + 24, g.off);
		if (verify_)
			for (uint32_t i = 0; i < len; i++)
				h[LUMEN_DP_DATA_HLEN + i] = Engine::pattern(kFirstConn + cur_, g.msg_id, g.off + i);
		m->data_len = (uint16_t)t.size();
		m->pkt_len = (uint32_t)t.size();
		g.psn++;
		g.off += len;
		if (last) {
			g.msg_id++;
			g.off = 0;
		}
		if (++run_ >= k_) {
			run_ = 0;
			cur_ = cur_ + 1 == gens_.size() ? 0 : cur_ + 1;
		}
	}
	uint32_t frame_len() const
	{
		return (uint32_t)tmpl_[1].size();
	}

      private:
	struct Gen {
		uint32_t psn = 0, msg_id = 0, off = 0;
	};

	Engine engine_;
	std::vector<Gen> gens_;
	uint32_t k_, msg_size_, seg_;
	bool verify_;
	std::vector<uint8_t> tmpl_[2];
	uint32_t cur_ = 0, run_ = 0;
};

Result run_rx(const Options &o, const EngineConfig &cfg, rte_mempool *pool, uint32_t conns)
{
	Result r;
	Clock clock;
	auto b = std::make_unique<RxBench>(o, cfg, conns);
	Engine &e = b->engine();
	size_t heap0 = heap_in_use();

	r.name = "rx";
	r.conns = conns;
	/* the bench writes the peer's DATA, its PSNs from 0: set up out of band */
	for (uint32_t i = 0; i < conns; i++)
		if (!e.open_established(kBenchPeerIp, kBenchPeerMac, kFirstConn + i, false, 0, clock.now_ns()))
			throw std::runtime_error("cannot open the bench's connection " + std::to_string(i));
	BurstSink sink(pool);
	Meter meter(o, clock, "rx", conns);
	rte_mbuf *rx[kBurst];
	const uint8_t *frames[kBurst];
	uint32_t lens[kBurst];
	uint64_t pkts = 0, peer_cycles = 0, acks = 0, now;
	do {
		now = clock.now_ns();
		uint16_t n = rte_eth_rx_burst(o.port, 0, rx, kBurst);
		uint64_t t0 = rte_rdtsc();
		for (uint16_t i = 0; i < n; i++)
			b->write(rx[i], now);
		peer_cycles += rte_rdtsc() - t0;
		for (uint16_t i = 0; i < n; i++) {
			frames[i] = rte_pktmbuf_mtod(rx[i], const uint8_t *);
			lens[i] = rte_pktmbuf_data_len(rx[i]);
		}
		e.rx_burst(frames, lens, n, now);
		if (n)
			rte_pktmbuf_free_bulk(rx, n);
		pkts += n;
		e.timers(now);
		if (sink.refill()) {
			e.tx(sink, now, kBurst);
			acks += flush(o.port, sink, &r.tx_refused);
		}
	} while (meter.tick(now, pkts, acks, peer_cycles));
	meter.finish(pkts, acks, peer_cycles, &r);
	r.heap_per_conn = (double)(heap_in_use() - heap0) / conns;
	r.totals = e.totals();
	r.engine = e.stats();
	return r;
}

/* ---------------------------------------------------------------------- */
/* The mode                                                                 */

std::vector<uint32_t> conns_of(const Options &o)
{
	if (!o.given.count("conns"))
		return {1, 10000};
	return o.conns_list.empty() ? std::vector<uint32_t>{o.conns} : o.conns_list;
}

uint32_t depth_of(const Options &o, uint32_t conns)
{
	if (o.given.count("depth"))
		return o.depth;
	return std::max<uint32_t>(o.engine.ack_every, (2 * kBurst + conns - 1) / conns);
}

nlohmann::json result_json(const Result &r, double mpps_one)
{
	nlohmann::json j = {{"case", r.name},
			    {"conns", r.conns},
			    {"seconds", r.seconds},
			    {"warmup_s", r.warmup_s},
			    {"packets", r.pkts},
			    {"mpps", r.mpps},
			    {r.name == "tx" ? "acks_rcvd" : "acks_sent", r.other},
			    {r.name == "tx" ? "ack_generation_share" : "frame_writing_share", r.peer_share},
			    {"heap_bytes_per_conn", r.heap_per_conn},
			    {"interrupted", r.interrupted},
			    {"port_refused", r.tx_refused},
			    {"msgs_acked", r.totals.msgs_acked},
			    {"msgs_delivered", r.totals.msgs_delivered},
			    {"retransmits", r.totals.retransmits},
			    {"timeouts", r.totals.timeouts},
			    {"bad_acks", r.totals.bad_acks},
			    {"corrupt", r.totals.corrupt},
			    {"malformed", r.engine.malformed},
			    {"acks_dropped", r.engine.acks_dropped}};
	if (r.name == "tx")
		j["depth"] = r.depth;
	if (mpps_one > 0 && r.conns != 1)
		j["vs_1_conn"] = r.mpps / mpps_one - 1;
	return j;
}

} // namespace

std::string check_bench(Options &o)
{
	if (o.server || o.local_ip || o.peer_ip || o.have_peer_mac || o.impair.active() || !o.hosts.empty())
		return "bench makes its own connections: --server, --ip, --peer, --peer-mac, --impair and --host "
		       "belong to other modes";
	if (o.msgs)
		return "--msgs: bench runs each case for --seconds";
	if (o.queues.queues != 1 || o.given.count("steer"))
		return "bench measures one queue on one lcore: --queues and --steer belong to other modes";
	if (!o.seconds)
		o.seconds = 5;
	if (!o.given.count("ack-every"))
		o.engine.ack_every = 4;
	if (!o.given.count("msg-size"))
		o.msg_size = 32;
	if (!o.given.count("verify"))
		o.engine.verify = false;
	return "";
}

int run_bench(Options &o)
{
	std::string err;
	PortInfo info;

	rte_mempool *pool = make_pool("lumen_dp_bench", 8191, frame_bytes(o), &err);
	if (!pool)
		return mode_fail("bench", err);
	if (std::string e = port_setup(o.port, o.queues, pool, o.engine.mtu, &info); !e.empty()) {
		port_stop(o.port, &info);
		rte_mempool_free(pool);
		return mode_fail("bench", e);
	}
	if (o.progress)
		std::fprintf(stderr, "lumen-dp bench: port %u (%s), lcore %u\n", o.port, info.driver.c_str(),
			     rte_lcore_id());

	EngineConfig cfg = o.engine;
	cfg.ip = kBenchLocalIp;
	cfg.mac = info.mac;
	std::vector<uint32_t> conns = conns_of(o);
	cfg.max_conns = std::max(cfg.max_conns, *std::max_element(conns.begin(), conns.end()));
	std::vector<Result> results;
	int rc = 0;
	try {
		for (const char *which : {"tx", "rx"}) {
			if (o.bench_case != "all" && o.bench_case != which)
				continue;
			for (uint32_t n : conns) {
				if (signalled())
					break;
				Result r = which[0] == 't' ? run_tx(o, cfg, pool, n, depth_of(o, n))
							   : run_rx(o, cfg, pool, n);
				if (!r.pkts && !r.interrupted) {
					std::fprintf(stderr, "lumen-dp bench: %s with %u connections moved no packet\n",
						     which, n);
					rc = 1;
				}
				results.push_back(std::move(r));
			}
		}
	} catch (const std::exception &x) {
		port_stop(o.port, &info);
		rte_mempool_free(pool);
		return mode_fail("bench", x.what());
	}
	port_stop(o.port, &info);
	rte_mempool_free(pool);

	/* the table */
	uint32_t data_len = LUMEN_DP_HDR_OFF + LUMEN_DP_DATA_HLEN + std::min(cfg.max_payload(), o.msg_size);
	uint32_t ack_len = LUMEN_DP_HDR_OFF + LUMEN_DP_ACK_HLEN;
	std::printf("lumen-dp bench: port %u (%s), one lcore, DATA frames %u B, ACK frames %u B, an ACK per %u "
		    "packets, %s\n",
		    o.port, info.driver.c_str(), data_len, ack_len, cfg.ack_every,
		    cfg.verify ? "payload patterns on" : "payload patterns off");
	std::printf("  per connection: sizeof(lumen_path) %zu B (the path policy's state: %zu B of REPS and the "
		    "freeze deadline), sizeof(Connection) %zu B\n",
		    sizeof(lumen_path), offsetof(lumen_path, frozen_until_us), sizeof(Connection));
	std::printf("  %-4s %7s %8s %9s %10s %12s %14s\n", "case", "conns", "seconds", "Mpps", "vs 1 conn",
		    "peer cycles", "heap per conn");
	nlohmann::json cases = nlohmann::json::array();
	for (const Result &r : results) {
		double one = 0;
		for (const Result &x : results)
			if (x.name == r.name && x.conns == 1)
				one = x.mpps;
		char vs[32] = "-";
		if (one > 0 && r.conns != 1)
			std::snprintf(vs, sizeof(vs), "%+.1f%%", (r.mpps / one - 1) * 100);
		std::printf("  %-4s %7u %8.2f %9.3f %10s %11.1f%% %11.1f kB%s\n", r.name.c_str(), r.conns, r.seconds,
			    r.mpps, vs, r.peer_share * 100, r.heap_per_conn / 1e3,
			    r.interrupted ? "  (interrupted)" : "");
		cases.push_back(result_json(r, one));
	}
	std::printf("  peer cycles: tx, the bench building the peer's ACKs; rx, the bench writing the DATA frames\n");

	if (o.json.empty())
		return rc;
	nlohmann::json s = {{"mode", "bench"},
			    {"port", {{"id", o.port}, {"driver", info.driver}}},
			    {"lcore", rte_lcore_id()},
			    {"config",
			     {{"cc", cc_algorithm_name(cfg.cc.algorithm)},
			      {"path", lumen_path_mode_name(cfg.path_mode)},
			      {"entropies", cfg.path.entropies},
			      {"window", cfg.tx_window},
			      {"ack_every", cfg.ack_every},
			      {"gbn", cfg.gbn},
			      {"verify", cfg.verify},
			      {"msg_size", o.msg_size},
			      {"data_frame_bytes", data_len},
			      {"ack_frame_bytes", ack_len},
			      {"burst", kBurst},
			      {"seconds_per_case", o.seconds}}},
			    {"sizes",
			     {{"lumen_path", sizeof(lumen_path)},
			      {"lumen_path_reps", offsetof(lumen_path, frozen_until_us)},
			      {"connection", sizeof(Connection)},
			      {"tx_record", sizeof(TxRecord)}}},
			    {"interrupted", signalled()},
			    {"cases", cases}};
	return write_json(s, o.json, "lumen-dp bench") ? rc : 1;
}

} // namespace lumen::dp
