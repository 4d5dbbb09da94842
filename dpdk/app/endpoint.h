/*
 * endpoint.h - one lumen-dp host on one RX/TX queue pair: an Engine
 * (transport/engine.h) and the DPDK around it. poll() is one turn of the
 * lcore loop: a burst in, the engine's timers, a burst out (through the
 * optional impairment shim of pair mode). One lcore may poll several
 * endpoints (several hosts of a fabric on a 2-core machine); an endpoint is
 * only ever polled by one lcore. With software steering (port.h), poll
 * first hands the frames of its burst that belong to other queues to their
 * rings, then takes what the other queues handed it.
 */
#ifndef LUMEN_DP_ENDPOINT_H
#define LUMEN_DP_ENDPOINT_H

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <algorithm>
#include <cstring>

#include <rte_mbuf.h>
#include <rte_prefetch.h>

#include "app/port.h"
#include "transport/engine.h"
#include "transport/gate_hold.h"
#include "transport/impair.h"
#include "transport/optical_gate.h"
#include "transport/osched_page.h"
#include "transport/port_map.h"

namespace lumen::dp
{

/* Nanoseconds from the TSC, as cycles times a 24.40 fixed-point ns per
 * cycle: a multiplication, where cycles * 1e9 / hz took three 64-bit
 * divisions (the loops read the clock once or twice per burst). */
class Clock
{
      public:
	Clock();
	uint64_t now_ns() const;
	/* now_ns() on CLOCK_MONOTONIC, to line up with what other processes
	 * time on this machine (not on a hot path): scaled by how far
	 * CLOCK_MONOTONIC and now_ns() have gone since construction, so that
	 * what is left of the TSC rate's error (measured over 10 ms at
	 * construction) does not add up over a run. */
	uint64_t mono_ns(uint64_t now_ns) const;

      private:
	static constexpr unsigned kShift = 40;
	uint64_t mult_; /* (1e9 << kShift) / hz */
	uint64_t start_;
	uint64_t mono_start_;
};

/* Application memory registered with an endpoint (transport/messages.h):
 * frames refer to it instead of copying it when zero_copy. The shared info
 * counts the frames that refer to it, plus one: the region's own. */
struct MemRegion {
	const uint8_t *addr = nullptr;
	size_t len = 0;
	bool zero_copy = false;
	std::string why_copy; /* when not zero_copy */
	rte_mbuf_ext_shared_info shinfo{};
};

/* Bursts of mbufs for Engine::tx; what a burst did not use stays for the next. */
class BurstSink : public FrameSink
{
      public:
	/* regions: the endpoint's, for zero copy (attach) */
	explicit BurstSink(rte_mempool *pool, const std::vector<std::unique_ptr<MemRegion>> *regions = nullptr)
	    : pool_(pool), regions_(regions)
	{
	}
	~BurstSink() override
	{
		if (n_ > used_)
			rte_pktmbuf_free_bulk(m_ + used_, n_ - used_);
	}
	BurstSink(const BurstSink &) = delete;
	BurstSink &operator=(const BurstSink &) = delete;

	/* Top up to `want` (at most a burst) unused mbufs, their data
	 * prefetched; false when none is unused (the pool is empty). */
	bool refill(uint16_t want = kBurst)
	{
		uint16_t to = (uint16_t)std::min<uint32_t>(kBurst, (uint32_t)used_ + want);

		if (n_ < to && rte_pktmbuf_alloc_bulk(pool_, m_ + n_, to - n_) == 0) {
			for (uint16_t i = n_; i < to; i++)
				rte_prefetch0(rte_pktmbuf_mtod(m_[i], void *));
			n_ = to;
		}
		return n_ > used_;
	}
	uint8_t *next(uint32_t *room) override
	{
		if (used_ >= n_)
			return nullptr;
		*room = rte_pktmbuf_tailroom(m_[used_]);
		return rte_pktmbuf_mtod(m_[used_], uint8_t *);
	}
	void done(uint32_t len) override
	{
		rte_mbuf *m = m_[used_++];
		m->data_len = (uint16_t)len;
		m->pkt_len = len;
	}
	/* The headers in the mbuf next() gave, chained to a second mbuf
	 * that holds the payload where it lies (an external buffer). */
	bool attach(uint32_t hdr_len, const uint8_t *payload, uint32_t len, uint32_t region) override;
	rte_mbuf **frames()
	{
		return m_;
	}
	uint16_t used() const
	{
		return used_;
	}
	/* The first `taken` frames are gone (to the port or freed). */
	void consumed(uint16_t taken)
	{
		std::memmove(m_, m_ + taken, (n_ - taken) * sizeof(m_[0]));
		n_ = (uint16_t)(n_ - taken);
		used_ = (uint16_t)(used_ - taken);
	}

      private:
	rte_mempool *pool_;
	const std::vector<std::unique_ptr<MemRegion>> *regions_;
	rte_mbuf *m_[kBurst];
	uint16_t n_ = 0, used_ = 0;
};

/* An mbuf's bytes, as the gate's hold (transport/gate_hold.h) reads them:
 * lumen-dp's frames fit one segment. */
struct MbufFrames {
	static uint8_t *bytes(rte_mbuf *m)
	{
		return rte_pktmbuf_mtod(m, uint8_t *);
	}
	static uint32_t len(rte_mbuf *m)
	{
		return rte_pktmbuf_data_len(m);
	}
};

struct EndpointStats {
	uint64_t rx_pkts = 0, tx_pkts = 0, tx_full = 0, no_mbuf = 0;
	/* frames of several segments (zero-copy senders), copied whole for
	 * the engine, and those too long for that (dropped) */
	uint64_t rx_multiseg = 0, rx_too_long = 0;
	/* software steering: frames handed to other queues, taken from them,
	 * and dropped because the other queue's ring was full */
	uint64_t steered_out = 0, steered_in = 0, steer_drops = 0;
	/* optical gate: ACKs folded into an older one of their connection
	 * still in the VOQ (transport/ack_coalescer.h) */
	uint64_t acks_coalesced = 0;
};

class Endpoint
{
      public:
	/* steer: the port's software steering, or nullptr */
	Endpoint(std::string name, uint16_t port, uint16_t queue, rte_mempool *pool, const EngineConfig &cfg,
		 const ImpairParams *impair, const SoftSteer *steer = nullptr);
	~Endpoint();
	Endpoint(const Endpoint &) = delete;
	Endpoint &operator=(const Endpoint &) = delete;

	void poll(uint64_t now_ns);

	const std::string &name() const
	{
		return name_;
	}
	uint16_t port() const
	{
		return port_;
	}
	uint16_t queue() const
	{
		return queue_;
	}
	uint16_t udp_port() const
	{
		return engine_.config().udp_port;
	}
	Engine &engine()
	{
		return engine_;
	}
	const Engine &engine() const
	{
		return engine_;
	}
	const EndpointStats &stats() const
	{
		return stats_;
	}
	const Impairment *impairment() const
	{
		return impair_.get();
	}
	/* Direct-hop gating on a reconfigurable network: frames to a node of
	 * lumend's schedule wait for their window (transport/optical_gate.h,
	 * held as transport/gate_hold.h says), the tables read from lumend's
	 * page at every poll. */
	/* coalesce: fold an ACK into the older one of its connection that
	 * waits in the VOQ (transport/ack_coalescer.h). The gate is also the
	 * engine's circuit signal (Engine::circuit_window, for reTCP). */
	void set_gate(std::unique_ptr<OpticalGate> gate, std::unique_ptr<OschedPage> page, bool coalesce = true);
	const OpticalGate *gate() const
	{
		return hold_ ? &hold_->gate() : nullptr;
	}
	/* lumend's page the gate reads (its stale spells, reopenings) */
	const OschedPage *page() const
	{
		return page_.get();
	}
	/* Register application memory for zero-copy sends (SendWr::region):
	 * its id, from 1, or 0 when addr/len are empty. Zero copy needs a
	 * port configured for multi-segment frames and IOVA as VA, and memory
	 * DPDK allocated (rte_malloc) or a port that does no DMA (a vdev);
	 * otherwise sends from it are copied (region(id)->why_copy says why). */
	uint32_t register_region(const void *addr, size_t len);
	/* false, and nothing changed, while frames still refer to it */
	bool unregister_region(uint32_t id);
	const MemRegion *region(uint32_t id) const
	{
		return id && id <= regions_.size() ? regions_[id - 1].get() : nullptr;
	}
	/* Path discovery (transport/port_map.h): ICMP errors go to the map
	 * instead of the engine, its probes leave before the engine's frames. */
	void set_port_map(std::unique_ptr<PortMap> map)
	{
		map_ = std::move(map);
	}
	PortMap *port_map()
	{
		return map_.get();
	}
	const PortMap *port_map() const
	{
		return map_.get();
	}

      private:
	struct GateOut;

	uint16_t steer(rte_mbuf **rx, uint16_t n);
	void send(rte_mbuf **pkts, uint16_t n, uint64_t now_ns);

	std::string name_;
	uint16_t port_, queue_;
	rte_mempool *pool_;
	const SoftSteer *steer_;
	Engine engine_;
	std::unique_ptr<Impairment> impair_;
	/* the gate and the frames it holds: by destination node until their
	 * departure, deferred to a change's new tables */
	std::optional<GateHold<rte_mbuf *, MbufFrames>> hold_;
	std::unique_ptr<OschedPage> page_;
	std::unique_ptr<PortMap> map_;
	std::vector<std::unique_ptr<MemRegion>> regions_; /* id - 1; unregistered: nullptr */
	std::vector<uint8_t> scratch_; /* multi-segment frames of a burst, made contiguous */
	GateTables gate_tables_;
	/* The schedule's time (CLOCK_TAI) for an engine time, for reTCP's
	 * circuit signal: one clock_gettime per millisecond, not per ACK. */
	uint64_t tai_at(uint64_t now_ns);
	uint64_t tai_ref_now_ = 0, tai_ref_ = 0;
	BurstSink sink_; /* mbufs for the engine's frames; unused ones wait for the next poll */
	DelayLine<rte_mbuf *> held_; /* the impairment shim's delays */
	std::vector<rte_mbuf *> pending_; /* built, not yet taken by the port */
	EndpointStats stats_;
};

} // namespace lumen::dp

#endif
