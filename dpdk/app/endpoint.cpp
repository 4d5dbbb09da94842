/* endpoint.cpp - one lumen-dp host on one queue pair (endpoint.h). */
#include "app/endpoint.h"

#include <rte_cycles.h>
#include <rte_ethdev.h>

namespace lumen::dp
{

__extension__ typedef unsigned __int128 u128;

/* The multiplier, 1e9 * 2^40 / hz, fits 64 bits for a TSC of 64 Hz or more;
 * its rounding is a relative error of a few 1e-12 at GHz rates (a few ns an
 * hour). The product of 128 bits does not overflow for centuries. */
Clock::Clock()
    : mult_((uint64_t)(((u128)1'000'000'000ull << kShift) / std::max<uint64_t>(rte_get_tsc_hz(), 64))),
      start_(rte_get_tsc_cycles())
{
}

uint64_t Clock::now_ns() const
{
	uint64_t c = rte_get_tsc_cycles() - start_;

	return (uint64_t)(((u128)c * mult_) >> kShift);
}

Endpoint::Endpoint(std::string name, uint16_t port, uint16_t queue, rte_mempool *pool, const EngineConfig &cfg,
		   const ImpairParams *impair)
    : name_(std::move(name)), port_(port), queue_(queue), pool_(pool), engine_(cfg), sink_(pool)
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
}

void Endpoint::poll(uint64_t now_ns)
{
	rte_mbuf *rx[kBurst];
	const uint8_t *frames[kBurst];
	uint32_t lens[kBurst], k = 0;
	uint16_t n = rte_eth_rx_burst(port_, queue_, rx, kBurst);

	for (uint16_t i = 0; i < n; i++) {
		if (rx[i]->nb_segs != 1) {
			stats_.rx_multiseg++; /* lumen-dp frames fit one segment */
			continue;
		}
		frames[k] = rte_pktmbuf_mtod(rx[i], const uint8_t *);
		lens[k++] = rte_pktmbuf_data_len(rx[i]);
	}
	engine_.rx_burst(frames, lens, k, now_ns);
	if (n)
		rte_pktmbuf_free_bulk(rx, n);
	stats_.rx_pkts += n;
	engine_.timers(now_ns);

	/* what the port did not take last time goes first */
	uint16_t room = pending_.size() >= kBurst ? 0 : (uint16_t)(kBurst - pending_.size());
	if (room && !sink_.refill(room))
		stats_.no_mbuf++;
	engine_.tx(sink_, now_ns, room);
	uint16_t used = sink_.used();
	send(sink_.frames(), used, now_ns);
	sink_.consumed(used);
}

void Endpoint::send(rte_mbuf **pkts, uint16_t n, uint64_t now_ns)
{
	for (uint16_t i = 0; i < n; i++) {
		rte_mbuf *m = pkts[i];
		if (!impair_) {
			pending_.push_back(m);
			continue;
		}
		Verdict v = impair_->judge(rte_pktmbuf_mtod(m, const uint8_t *), rte_pktmbuf_data_len(m));
		if (v.drop) {
			rte_pktmbuf_free(m);
			continue;
		}
		if (v.ce)
			Impairment::mark_ce(rte_pktmbuf_mtod(m, uint8_t *), rte_pktmbuf_data_len(m));
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

} // namespace lumen::dp
