/* engine_setup.cpp - lumen-dp's engine: its configuration, counters and
 * tables (connections, their index, a sender's messages) and the frame
 * template of its DATA packets, apart from the per-packet paths of
 * engine.cpp (see engine.h). */
#include "transport/engine.h"
#include "transport/engine_limits.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace lumen::dp
{

namespace
{

bool power_of_two(uint32_t v)
{
	return v && !(v & (v - 1));
}

} // namespace

EngineConfig::EngineConfig()
{
	lumen_path_params_default(&path);
}

uint32_t EngineConfig::max_payload() const
{
	/* lumen_dp_hdr_len counts from the Ethernet header, the MTU from IP */
	uint32_t hdr = lumen_dp_hdr_len(LUMEN_DP_DATA, int_slots ? LUMEN_DP_EXT_WORDS_MAX : 0) - LUMEN_DP_ETH_HLEN;

	return mtu > hdr ? mtu - hdr : 0;
}

std::string EngineConfig::validate() const
{
	namespace L = limits;
	if (!L::kMtu.holds(mtu))
		return L::kMtu.refusal() + " bytes";
	if (!L::kIntSlots.holds(int_slots))
		return L::kIntSlots.refusal();
	if (!power_of_two(rx_window) || !L::kWindow.holds(rx_window))
		return "rx " + L::kWindow.refusal() + " packets, a power of two";
	if (!power_of_two(tx_window) || !L::kWindow.holds(tx_window))
		return "tx " + L::kWindow.refusal() + " packets, a power of two";
	if (!L::kAckEvery.holds(ack_every))
		return L::kAckEvery.refusal();
	if (path_mode >= LUMEN_PATH_MODES)
		return "unknown path policy";
	if (!L::kEntropies.holds(path.entropies))
		return L::kEntropies.refusal();
	if (!L::kExplore.holds(path.explore_pkts))
		return L::kExplore.refusal() + " packets";
	if (!L::kFreezeUs.holds(path.freeze_ns))
		return L::kFreezeUs.refusal() + " us";
	if (lumen_path_params_validate(&path) != 0) /* what the table does not name: freeze_rtt_q8 */
		return "path policy parameters out of range (freeze_rtt_q8 256..4096)";
	if ((uint32_t)sport_base + path.entropies > 65536)
		return "sport base " + std::to_string(sport_base) + " + " + std::to_string(path.entropies) +
		       " entropies would pass port 65535: at most " + std::to_string(65536u - sport_base) +
		       " entropies";
	if (path_mode == LUMEN_PATH_ETHEREAL && !gbn)
		return "path policy ethereal needs Go-Back-N (gbn): its single path delivers in order, and its "
		       "receiver's NACKs are what reroute it";
	/* a sprayed connection's packets arrive out of order by design, and a
	 * Go-Back-N receiver NACKs (and drops) every one of them: each NACK
	 * rewinds the sender, which sprays the window again */
	if (gbn && (path_mode == LUMEN_PATH_OPS || path_mode == LUMEN_PATH_REPS || path_mode == LUMEN_PATH_REPS_FREEZE))
		return "Go-Back-N (gbn) needs a single-path policy (ecmp, ethereal): a spraying one (ops, reps, "
		       "reps-freeze) reorders, and its receiver would NACK every reordered packet";
	if (!L::kCeNackThreshold.holds(ce_nack_threshold_pct))
		return L::kCeNackThreshold.refusal() + " percent (0: off)";
	if (ce_nack_threshold_pct && !gbn)
		return "ce-nack-threshold needs Go-Back-N (gbn): its NACK makes the sender go back N";
	if (!L::kCeWindowUs.holds(ce_window_ns))
		return L::kCeWindowUs.refusal();
	if (!L::kMaxConns.holds(max_conns))
		return L::kMaxConns.refusal();
	if (!L::kStartJitterUs.holds(start_jitter_ns))
		return L::kStartJitterUs.refusal();
	if (!L::kRtoMinUs.holds(rto.min_ns))
		return L::kRtoMinUs.refusal();
	if (!L::kRtoMaxUs.holds(rto.max_ns))
		return L::kRtoMaxUs.refusal();
	if (!power_of_two(wheel_slots) || tick_ns < 1000 || tick_ns > 1'000'000)
		return "timer wheel: slots a power of two, tick 1..1000 us";
	if (std::string e = cc.validate(); !e.empty())
		return e;
	if (cc.mss != max_payload())
		return "cc mss must equal the payload per packet (" + std::to_string(max_payload()) + ")";
	const char *e = rto.validate();
	return e ? e : "";
}

void ConnStats::add(const ConnStats &o)
{
	data_sent += o.data_sent;
	bytes_sent += o.bytes_sent;
	retransmits += o.retransmits;
	acks_rcvd += o.acks_rcvd;
	acked_pkts += o.acked_pkts;
	acked_bytes += o.acked_bytes;
	ecn_echoes += o.ecn_echoes;
	nacks_rcvd += o.nacks_rcvd;
	timeouts += o.timeouts;
	fast_losses += o.fast_losses;
	bad_acks += o.bad_acks;
	stale_acks += o.stale_acks;
	spurious_retx += o.spurious_retx;
	stale_nacks += o.stale_nacks;
	spurious_rtos += o.spurious_rtos;
	reroutes_undone += o.reroutes_undone;
	reroutes += o.reroutes;
	data_rcvd += o.data_rcvd;
	dup_rcvd += o.dup_rcvd;
	beyond_window += o.beyond_window;
	ce_rcvd += o.ce_rcvd;
	corrupt += o.corrupt;
	acks_sent += o.acks_sent;
	nacks_sent += o.nacks_sent;
	ce_nacks_sent += o.ce_nacks_sent;
	ooo_ignored += o.ooo_ignored;
	circuit_up += o.circuit_up;
	circuit_down += o.circuit_down;
	rnr_drops += o.rnr_drops;
	window_updates_sent += o.window_updates_sent;
	window_updates_rcvd += o.window_updates_rcvd;
	handshake_retries += o.handshake_retries;
	zero_copy_pkts += o.zero_copy_pkts;
	msgs_sent += o.msgs_sent;
	msgs_acked += o.msgs_acked;
	msgs_delivered += o.msgs_delivered;
	bytes_delivered += o.bytes_delivered;
	reorder_max = std::max(reorder_max, o.reorder_max);
	if (o.rtt_min_ns && (!rtt_min_ns || o.rtt_min_ns < rtt_min_ns))
		rtt_min_ns = o.rtt_min_ns;
	rtt_last_ns = std::max(rtt_last_ns, o.rtt_last_ns);
}

Connection::Connection(const EngineConfig &cfg, uint32_t idx)
    : index(idx), conn_id(0), peer_ip(0), peer_mac{}, client(false), tx(cfg.tx_window), cc(make_cc(cfg.cc)),
      rto(cfg.rto), peer_rwnd(cfg.rx_window), rx(cfg.rx_window)
{
	rto_timer.owner = idx;
	circuit_timer.owner = idx;
}

/* Twice the room (8 at first), the messages in order from slot 0. */
void MessageRing::grow()
{
	std::vector<Message> bigger(std::max<size_t>(8, 2 * ring_.size()));

	for (size_t i = 0; i < count_; i++)
		bigger[i] = (*this)[i];
	ring_.swap(bigger);
	head_ = 0;
	mask_ = ring_.size() - 1;
}

ConnIndex::ConnIndex(uint64_t salt)
    : slots_(64, Slot{0, nullptr}), mask_(63), salt_(lumen_mix64(salt ^ 0x636F6E6E73ull))
{
}

size_t ConnIndex::slot_of(uint64_t key) const
{
	return (size_t)lumen_mix64(key ^ salt_) & mask_;
}

void ConnIndex::insert(uint64_t key, Connection *conn)
{
	if (2 * (size_ + 1) > slots_.size()) {
		std::vector<Slot> old(slots_.size() * 2, Slot{0, nullptr});
		old.swap(slots_);
		mask_ = slots_.size() - 1;
		size_ = 0;
		for (const Slot &s : old)
			if (s.conn)
				insert(s.key, s.conn);
	}
	size_t i = slot_of(key);
	while (slots_[i].conn)
		i = (i + 1) & mask_;
	slots_[i] = Slot{key, conn};
	size_++;
}

void ConnIndex::erase(uint64_t key)
{
	size_t i = slot_of(key);
	while (slots_[i].conn && slots_[i].key != key)
		i = (i + 1) & mask_;
	if (!slots_[i].conn)
		return;
	/* backward shift: an entry after the hole moves into it unless its
	 * home lies cyclically in (hole, its slot], where a lookup that
	 * starts at its home reaches it without passing the hole */
	for (size_t j = (i + 1) & mask_; slots_[j].conn; j = (j + 1) & mask_) {
		size_t home = slot_of(slots_[j].key);
		bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
		if (!stays) {
			slots_[i] = slots_[j];
			i = j;
		}
	}
	slots_[i] = Slot{0, nullptr};
	size_--;
}

bool Engine::idle() const
{
	for (const auto &c : conns_)
		if (c && !c->msgs.empty())
			return false;
	return true;
}

ConnStats Engine::totals() const
{
	ConnStats t = closed_;

	for (const auto &c : conns_)
		if (c)
			t.add(c->stats);
	return t;
}

/* cfg, once validate() found nothing wrong (members are built from it) */
static const EngineConfig &checked(const EngineConfig &cfg)
{
	if (std::string e = cfg.validate(); !e.empty())
		throw std::invalid_argument(e);
	return cfg;
}

Engine::Engine(const EngineConfig &cfg)
    : cfg_(checked(cfg)), max_payload_(cfg_.max_payload()), by_key_(cfg.seed), wheel_(cfg.tick_ns, cfg.wheel_slots)
{
	lumen_rng_seed(&rng_, cfg_.seed);
	lumen_rng_seed(&order_rng_, cfg_.seed ^ 0x6f7264657273ull); /* "orders" */
	paths_.resize(cfg_.path.entropies);
	if (cfg_.int_slots) {
		int n = lumen_int_write_request(int_request_.data(), (uint32_t)int_request_.size(), cfg_.int_slots);
		if (n < 0)
			throw std::invalid_argument("int request: " + std::string(lumen_int_strerror(n)));
		int_request_len_ = (uint32_t)n;
	}
	/* what every frame we send shares; the rest is filled per frame */
	for (lumen_dp_pkt *p : {&data_pkt_, &ack_pkt_}) {
		*p = lumen_dp_pkt{};
		std::memcpy(p->eth_src, cfg_.mac.data(), 6);
		p->ip_src = cfg_.ip;
		p->dport = cfg_.udp_port;
	}
	data_pkt_.type = LUMEN_DP_DATA;
	data_pkt_.ecn = LUMEN_DP_ECN_ECT0;
	data_pkt_.payload = nullptr; /* written in place */
	if (int_request_len_) {
		data_flags_ = LUMEN_DP_F_INT;
		data_pkt_.ext = int_request_.data();
		data_pkt_.ext_len = int_request_len_;
	}
	data_template();
}

/* What every DATA frame without INT shares, written by the builder itself:
 * a one-byte packet of a one-byte message to no one, whose per-packet
 * fields build_data overwrites. */
void Engine::data_template()
{
	lumen_dp_pkt t = data_pkt_;
	uint8_t frame[kDataHdrLen + 1];

	t.ext = nullptr;
	t.ext_len = 0;
	t.flags = 0;
	t.payload_len = 1;
	t.msg_len = 1;
	if (lumen_dp_build(frame, sizeof(frame), &t) != (int)sizeof(frame))
		throw std::logic_error("the DATA template does not build");
	std::memcpy(data_tmpl_.data(), frame, kDataHdrLen);
}

/* build_data with an INT request: the builder writes the option. */
__attribute__((noinline)) int Engine::build_data_int(uint8_t *buf, uint32_t room, const Connection &c,
						     const TxRecord &r, uint32_t psn, uint16_t sport, uint8_t flags,
						     uint64_t now_ns)
{
	lumen_dp_pkt &p = data_pkt_;

	fill_addresses(p, c);
	p.sport = sport;
	p.flags = flags;
	p.psn = psn;
	p.ts_ns = now_ns;
	p.msg_id = r.msg_id;
	p.msg_off = r.msg_off;
	p.msg_len = r.msg_len;
	p.payload_len = r.len;
	return lumen_dp_build(buf, room, &p);
}

} // namespace lumen::dp
