/*
 * endpoint.h - one lumen-dp host on one RX/TX queue pair: an Engine
 * (transport/engine.h) and the DPDK around it. poll() is one turn of the
 * lcore loop: a burst in, the engine's timers, a burst out (through the
 * optional impairment shim of pair mode). One lcore may poll several
 * endpoints (several hosts of a fabric on a 2-core machine); an endpoint is
 * only ever polled by one lcore.
 */
#ifndef LUMEN_DP_ENDPOINT_H
#define LUMEN_DP_ENDPOINT_H

#include <memory>
#include <string>
#include <vector>

#include <rte_mbuf.h>

#include "app/port.h"
#include "transport/engine.h"
#include "transport/impair.h"

namespace lumen::dp
{

/* Nanoseconds from the TSC. */
class Clock
{
      public:
	Clock();
	uint64_t now_ns() const;

      private:
	uint64_t hz_;
	uint64_t start_;
};

struct EndpointStats {
	uint64_t rx_pkts = 0, tx_pkts = 0, rx_multiseg = 0, tx_full = 0, no_mbuf = 0;
};

class Endpoint
{
      public:
	Endpoint(std::string name, uint16_t port, uint16_t queue, rte_mempool *pool, const EngineConfig &cfg,
		 const ImpairParams *impair);
	~Endpoint();
	Endpoint(const Endpoint &) = delete;
	Endpoint &operator=(const Endpoint &) = delete;

	void poll(uint64_t now_ns);

	const std::string &name() const
	{
		return name_;
	}
	Engine &engine()
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

      private:
	void send(rte_mbuf **pkts, uint16_t n, uint64_t now_ns);

	std::string name_;
	uint16_t port_, queue_;
	rte_mempool *pool_;
	Engine engine_;
	std::unique_ptr<Impairment> impair_;
	DelayLine<rte_mbuf *> held_;
	std::vector<rte_mbuf *> pending_; /* built, not yet taken by the port */
	EndpointStats stats_;
};

} // namespace lumen::dp

#endif
