/* endpoint.cpp - one lumen-dp host on one queue pair (endpoint.h). */
#include "app/endpoint.h"

#include <cstring>
#include <ctime>

#include <rte_cycles.h>
#include <rte_bus.h>
#include <rte_dev.h>
#include <rte_ethdev.h>
#include <rte_memory.h>

namespace lumen::dp
{

__extension__ typedef unsigned __int128 u128;

/* The TSC's rate, measured against CLOCK_MONOTONIC_RAW over 10 ms: EAL
 * rounds its estimate to 10 MHz (2.45 GHz for a TSC of 2.4454 GHz here, 0.2 %
 * off), which puts a frame held for a second by the optical gate 2 ms off
 * its window. EAL's figure stands when the measurement is off by more than
 * 5 % from it (a preempted measurement). */
static uint64_t measured_tsc_hz()
{
	const uint64_t eal = std::max<uint64_t>(rte_get_tsc_hz(), 64);
	auto raw_ns = [] {
		timespec ts{};
		clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
		return (uint64_t)ts.tv_sec * 1'000'000'000ull + (uint64_t)ts.tv_nsec;
	};
	uint64_t t0 = raw_ns(), c0 = rte_get_tsc_cycles(), t1 = t0, c1 = c0;
	while (t1 - t0 < 10'000'000) {
		t1 = raw_ns();
		c1 = rte_get_tsc_cycles();
	}
	uint64_t hz = (uint64_t)((u128)(c1 - c0) * 1'000'000'000ull / (t1 - t0));
	return hz > eal - eal / 20 && hz < eal + eal / 20 ? hz : eal;
}

/* The multiplier, 1e9 * 2^40 / hz, fits 64 bits for a TSC of 64 Hz or more;
 * its rounding is a relative error of a few 1e-12 at GHz rates (a few ns an
 * hour). The product of 128 bits does not overflow for centuries. */
Clock::Clock()
    : mult_((uint64_t)(((u128)1'000'000'000ull << kShift) / measured_tsc_hz())), start_(rte_get_tsc_cycles()),
      mono_start_(0)
{
	timespec ts{};
	clock_gettime(CLOCK_MONOTONIC, &ts);
	mono_start_ = (uint64_t)ts.tv_sec * 1'000'000'000ull + (uint64_t)ts.tv_nsec;
}

uint64_t Clock::mono_ns(uint64_t now_ns) const
{
	timespec ts{};
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t mono = (uint64_t)ts.tv_sec * 1'000'000'000ull + (uint64_t)ts.tv_nsec - mono_start_;
	uint64_t tsc = this->now_ns();
	if (!tsc)
		return mono_start_ + now_ns;
	return mono_start_ + (uint64_t)((u128)now_ns * mono / tsc);
}

uint64_t Clock::now_ns() const
{
	uint64_t c = rte_get_tsc_cycles() - start_;

	return (uint64_t)(((u128)c * mult_) >> kShift);
}

Endpoint::Endpoint(std::string name, uint16_t port, uint16_t queue, rte_mempool *pool, const EngineConfig &cfg,
		   const ImpairParams *impair, const SoftSteer *steer)
    : name_(std::move(name)), port_(port), queue_(queue), pool_(pool), steer_(steer), engine_(cfg),
      sink_(pool, &regions_)
{
	if (impair && impair->active())
		impair_ = std::make_unique<Impairment>(*impair, cfg.udp_port);
	pending_.reserve(4 * kBurst);
}

Endpoint::~Endpoint()
{
	rte_mbuf *m;

	for (rte_mbuf *p : pending_)
		rte_pktmbuf_free(p);
	while (held_.pop(UINT64_MAX, &m))
		rte_pktmbuf_free(m);
	if (hold_)
		hold_->drain([](rte_mbuf *f) { rte_pktmbuf_free(f); });
}

/*
 * Software steering of the burst rx[0..n): frames for another queue's UDP
 * port go to its ring (a burst per queue), then up to a burst that the
 * other queues handed to this one is appended. Frames of no queue (not
 * lumen-dp, or a port past the last queue) stay: the engine counts them.
 * Returns the frames now in rx, at most 2 * kBurst.
 */
uint16_t Endpoint::steer(rte_mbuf **rx, uint16_t n)
{
	rte_mbuf *out[kMaxQueues][kBurst];
	uint16_t outn[kMaxQueues] = {}, kept = 0;

	for (uint16_t i = 0; i < n; i++) {
		int dport = frame_udp_dport(rte_pktmbuf_mtod(rx[i], const uint8_t *), rte_pktmbuf_data_len(rx[i]));
		int q = dport < 0 ? -1 : queue_of_udp_port((uint16_t)dport, steer_->udp_base, steer_->queues);
		if (q < 0 || q == queue_)
			rx[kept++] = rx[i];
		else
			out[q][outn[q]++] = rx[i];
	}
	for (uint16_t q = 0; q < steer_->queues; q++) {
		if (!outn[q])
			continue;
		unsigned sent = rte_ring_mp_enqueue_burst(steer_->rings[q], (void **)out[q], outn[q], nullptr);
		stats_.steered_out += sent;
		if (sent < outn[q]) {
			rte_pktmbuf_free_bulk(out[q] + sent, outn[q] - sent);
			stats_.steer_drops += outn[q] - sent;
		}
	}
	unsigned in = rte_ring_sc_dequeue_burst(steer_->rings[queue_], (void **)(rx + kept), kBurst, nullptr);
	stats_.steered_in += in;
	return (uint16_t)(kept + in);
}

void Endpoint::poll(uint64_t now_ns)
{
	rte_mbuf *rx[2 * kBurst];
	const uint8_t *frames[2 * kBurst];
	uint32_t lens[2 * kBurst], k = 0;
	uint16_t n = rte_eth_rx_burst(port_, queue_, rx, kBurst);

	stats_.rx_pkts += n;
	if (steer_)
		n = steer(rx, n);
	const uint32_t slot = engine_.config().mtu + 14;
	for (uint16_t i = 0; i < n; i++) {
		if (rx[i]->nb_segs != 1) {
			/* a zero-copy sender's frame (net_ring, memif pass chains) */
			if (rx[i]->pkt_len > slot) {
				stats_.rx_too_long++;
				continue;
			}
			if (scratch_.size() < (size_t)2 * kBurst * slot)
				scratch_.resize((size_t)2 * kBurst * slot);
			frames[k] = (const uint8_t *)rte_pktmbuf_read(rx[i], 0, rx[i]->pkt_len,
								      scratch_.data() + (size_t)k * slot);
			stats_.rx_multiseg++;
		} else {
			frames[k] = rte_pktmbuf_mtod(rx[i], const uint8_t *);
		}
		lens[k] = rte_pktmbuf_pkt_len(rx[i]);
		if (map_ && map_->rx(frames[k], lens[k], now_ns))
			continue; /* ICMP: the port map's, never a lumen-dp frame */
		k++;
	}
	engine_.rx_burst(frames, lens, k, now_ns);
	if (n)
		rte_pktmbuf_free_bulk(rx, n);
	engine_.timers(now_ns);
	/* poll(): staleness and a restarted lumend's new page, every 10 ms */
	if (page_ && page_->poll(&gate_tables_, now_ns))
		hold_->gate().set_tables(gate_tables_);

	/* what the port did not take last time goes first */
	uint16_t room = pending_.size() >= kBurst ? 0 : (uint16_t)(kBurst - pending_.size());
	if (room && !sink_.refill(room))
		stats_.no_mbuf++;
	if (map_ && room)
		room = (uint16_t)(room - map_->tx(sink_, now_ns, room));
	engine_.tx(sink_, now_ns, room);
	uint16_t used = sink_.used();
	send(sink_.frames(), used, now_ns);
	sink_.consumed(used);
}

void Endpoint::set_gate(std::unique_ptr<OpticalGate> gate, std::unique_ptr<OschedPage> page, bool coalesce)
{
	if (hold_)
		hold_->drain([](rte_mbuf *f) { rte_pktmbuf_free(f); });
	hold_.reset();
	if (gate)
		hold_.emplace(std::move(gate), coalesce);
	page_ = hold_ ? std::move(page) : nullptr; /* the page is the gate's */
	gate_tables_ = GateTables{};
	gate_tables_.quiet = LUMEN_QUIET_NO_SCHEDULE; /* until the page is read */
	if (page_ && page_->refresh(&gate_tables_))
		hold_->gate().set_tables(gate_tables_);
	engine_.circuit_window = nullptr;
	if (hold_)
		engine_.circuit_window = [this](uint32_t peer_ip, uint64_t now_ns, uint64_t *tai, uint64_t *open,
						uint64_t *close) {
			*tai = tai_at(now_ns);
			return hold_->gate().circuit_window(peer_ip, *tai, open, close);
		};
}

uint64_t Endpoint::tai_at(uint64_t now_ns)
{
	if (!tai_ref_ || now_ns < tai_ref_now_ || now_ns - tai_ref_now_ > 1'000'000) {
		timespec ts{};
		clock_gettime(CLOCK_TAI, &ts);
		tai_ref_ = (uint64_t)ts.tv_sec * 1'000'000'000ull + (uint64_t)ts.tv_nsec;
		tai_ref_now_ = now_ns;
	}
	return tai_ref_ + (now_ns - tai_ref_now_);
}

/* CLOCK_TAI (the schedule's), read at most once per poll and only when
 * the gate needs it: a system call. */
class TaiOnce
{
      public:
	uint64_t operator()()
	{
		if (!ns_) {
			timespec ts;
			clock_gettime(CLOCK_TAI, &ts);
			ns_ = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
		}
		return ns_;
	}

      private:
	uint64_t ns_ = 0;
};

/* Where the gate's hold puts frames: to the port, or freed (the gate
 * counted them; an ACK folded into an older one is counted here). */
struct Endpoint::GateOut {
	Endpoint *ep;
	void send(rte_mbuf *m)
	{
		ep->pending_.push_back(m);
	}
	void drop(rte_mbuf *m)
	{
		rte_pktmbuf_free(m); /* the transport retransmits */
	}
	void folded(rte_mbuf *m)
	{
		ep->stats_.acks_coalesced++;
		rte_pktmbuf_free(m);
	}
};

void Endpoint::send(rte_mbuf **pkts, uint16_t n, uint64_t now_ns)
{
	TaiOnce tai;
	GateOut out{this};
	/* in order: what was booked before (a frame released late is booked
	 * again with what is behind it), what was deferred to a change, what
	 * is new */
	if (hold_)
		hold_->release(now_ns, tai, out);
	for (uint16_t i = 0; i < n; i++) {
		rte_mbuf *m = pkts[i];
		if (hold_ && hold_->offer(m, now_ns, tai, out))
			continue;
		if (!impair_) {
			pending_.push_back(m);
			continue;
		}
		/* a zero-copy frame is read whole; its headers (all that
		 * marking touches) are in the first segment */
		if (scratch_.size() < m->pkt_len)
			scratch_.resize(m->pkt_len);
		const uint8_t *bytes = (const uint8_t *)rte_pktmbuf_read(m, 0, m->pkt_len, scratch_.data());
		Verdict v = impair_->judge(bytes, rte_pktmbuf_pkt_len(m));
		if (v.drop) {
			rte_pktmbuf_free(m);
			continue;
		}
		if (v.ce)
			Impairment::mark_ce(rte_pktmbuf_mtod(m, uint8_t *), rte_pktmbuf_pkt_len(m));
		if (v.dup) {
			if (rte_mbuf *copy = rte_pktmbuf_copy(m, pool_, 0, UINT32_MAX))
				held_.push(copy, now_ns + v.delay_ns);
		}
		held_.push(m, now_ns + v.delay_ns);
	}
	/* pkts is the sink's array: the sink must not free what was taken */
	for (uint16_t i = 0; i < n; i++)
		pkts[i] = nullptr;
	rte_mbuf *m;
	while (held_.pop(now_ns, &m))
		pending_.push_back(m);
	if (pending_.empty())
		return;
	uint16_t k = (uint16_t)std::min<size_t>(pending_.size(), UINT16_MAX);
	uint16_t sent = rte_eth_tx_burst(port_, queue_, pending_.data(), k);
	stats_.tx_pkts += sent;
	if (sent < k)
		stats_.tx_full++;
	pending_.erase(pending_.begin(), pending_.begin() + sent);
}

/* ---------------------------------------------------------------------- */
/* Zero copy                                                                */

static void region_unused(void *, void *)
{
	/* the region's own reference is only dropped by unregister_region,
	 * which first checks that no frame holds another */
}

bool BurstSink::attach(uint32_t hdr_len, const uint8_t *payload, uint32_t len, uint32_t region)
{
	if (!regions_ || region == 0 || region > regions_->size() || used_ >= n_)
		return false;
	MemRegion *r = (*regions_)[region - 1].get();
	if (!r || !r->zero_copy || payload < r->addr || len > UINT16_MAX || (size_t)(payload - r->addr) + len > r->len)
		return false;
	rte_mbuf *seg = rte_pktmbuf_alloc(pool_);
	if (!seg)
		return false;
	rte_mbuf_ext_refcnt_update(&r->shinfo, 1);
	/* IOVA as VA (register_region checked): the payload's address is its IOVA */
	rte_pktmbuf_attach_extbuf(seg, const_cast<uint8_t *>(payload), (rte_iova_t)(uintptr_t)payload, (uint16_t)len,
				  &r->shinfo);
	seg->data_len = (uint16_t)len;
	seg->pkt_len = len;
	rte_mbuf *m = m_[used_++];
	m->data_len = (uint16_t)hdr_len;
	m->pkt_len = hdr_len + len;
	m->next = seg;
	m->nb_segs = 2;
	return true;
}

/* Whether frames may refer to [addr, addr + len) on this port, or why not. */
static std::string zero_copy_refusal(uint16_t port, const void *addr)
{
	rte_eth_dev_info dev{};

	/* port_setup enables multi-segment frames where the port has them */
	if (rte_eth_dev_info_get(port, &dev) != 0)
		return "no such port";
	if (!(dev.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS))
		return std::string("the port (") + dev.driver_name + ") does not send multi-segment frames";
	if (rte_eal_iova_mode() != RTE_IOVA_VA)
		return "EAL runs with physical IOVAs (--iova-mode=va for zero copy)";
	bool dpdk_memory = rte_mem_virt2memseg_list(addr) != nullptr;
	bool vdev = dev.device && std::strcmp(rte_bus_name(rte_dev_bus(dev.device)), "vdev") == 0;
	if (!dpdk_memory && !vdev)
		return "the memory is not DPDK's and the port's device may DMA (allocate it with rte_malloc)";
	return "";
}

uint32_t Endpoint::register_region(const void *addr, size_t len)
{
	if (!addr || !len)
		return 0;
	auto r = std::make_unique<MemRegion>();
	r->addr = static_cast<const uint8_t *>(addr);
	r->len = len;
	r->why_copy = zero_copy_refusal(port_, addr);
	r->zero_copy = r->why_copy.empty();
	r->shinfo.free_cb = region_unused;
	rte_mbuf_ext_refcnt_set(&r->shinfo, 1);
	regions_.push_back(std::move(r));
	return (uint32_t)regions_.size();
}

bool Endpoint::unregister_region(uint32_t id)
{
	if (!region(id))
		return true;
	if (rte_mbuf_ext_refcnt_read(&regions_[id - 1]->shinfo) != 1)
		return false; /* a frame in a queue, a ring or the NIC still refers to it */
	regions_[id - 1].reset();
	return true;
}

} // namespace lumen::dp
