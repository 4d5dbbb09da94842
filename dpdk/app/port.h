/*
 * port.h - the DPDK ports lumen-dp runs on: a packet pool, and each port
 * configured with --queues RX/TX queue pairs, each polled by one lcore.
 *
 * With more than one queue, every packet of a connection must reach the
 * queue that owns it whatever its UDP source port, which is the entropy and
 * changes per packet. Queue q owns UDP destination port base + q
 * (transport/queues.h); the port steers each of those ports to its queue
 * with one rte_flow rule per queue where the PMD takes them, and otherwise
 * in software: each queue's lcore polls its own queue and hands a frame for
 * another queue to that queue's lcore through the destination's ring
 * (SoftSteer, endpoint.cpp). Where the port has RSS, it hashes on the
 * addresses and the UDP destination port, which spreads the steering work
 * without splitting a connection over queues.
 */
#ifndef LUMEN_DP_PORT_H
#define LUMEN_DP_PORT_H

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <rte_ethdev.h>
#include <rte_flow.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "transport/engine.h"
#include "transport/queues.h"

namespace lumen::dp
{

constexpr uint16_t kBurst = 32;
constexpr uint16_t kRxDesc = 1024, kTxDesc = 1024;
constexpr unsigned kSteerRing = 4096; /* frames waiting for a queue's lcore (software steering) */

/* A pool big enough for every queue's descriptors and bursts in flight,
 * each mbuf holding a whole frame of frame_bytes (MTU + Ethernet header;
 * at least DPDK's default 2 KB). */
rte_mempool *make_pool(const char *name, unsigned mbufs, uint32_t frame_bytes, std::string *err);

/* How frames reach the queue that owns their destination port (--steer). */
enum class Steer {
	kAuto, /* rte_flow where the PMD takes the rules, else software */
	kFlow, /* rte_flow or refuse the port */
	kSoftware
};

/* The queues of a port: how many, the UDP port of queue 0, the steering asked for. */
struct QueueSetup {
	uint16_t queues = 1;
	uint16_t udp_base = LUMEN_DP_UDP_PORT;
	Steer steer = Steer::kAuto;
};

/* Software steering of a port: rings[k] takes the frames that the other
 * queues received for queue k (many producers, one consumer: k's lcore). */
struct SoftSteer {
	uint16_t queues = 0, udp_base = 0;
	std::vector<rte_ring *> rings;
};

struct PortInfo {
	Mac mac{};
	std::string driver;
	uint16_t queues = 1;
	uint16_t udp_base = LUMEN_DP_UDP_PORT;
	uint64_t rss_hf = 0; /* what the port hashes on; 0: no RSS */
	const char *steering = "none"; /* one queue: none; else rte_flow or software */
	std::vector<rte_flow *> flows;
	std::unique_ptr<SoftSteer> soft; /* set with software steering */
};

/* Configure and start port with qs.queues queue pairs and an MTU of mtu
 * (IP bytes, as --mtu) and steer them; "" or why not (a port that cannot
 * carry the MTU, a pool whose mbufs cannot hold its frames). */
std::string port_setup(uint16_t port, const QueueSetup &qs, rte_mempool *pool, uint32_t mtu, PortInfo *info);
/* Stop and close a port set up (even partly) by port_setup; the frames
 * left in its steering rings are freed. */
void port_stop(uint16_t port, PortInfo *info);
/* A port's own counters (rte_eth_stats and the extended ones), read after
 * a run: what the NIC or its driver dropped never reaches lumen-dp's
 * counters, and a run whose receiver missed frames (imissed: the RX ring
 * was full; rx_nombuf: the pool was empty) is not measuring the transport.
 * DPDK's telemetry answers the same live: /ethdev/stats,PORT and
 * /ethdev/xstats,PORT. */
struct PortHealth {
	uint16_t port = 0;
	bool ok = false; /* the driver answered */
	rte_eth_stats basic{};
	/* the extended counters that are not zero and name a loss or an error */
	std::vector<std::pair<std::string, uint64_t>> losses;
	/* frames the port or its driver lost: imissed + ierrors + rx_nombuf + oerrors */
	uint64_t lost() const
	{
		return basic.imissed + basic.ierrors + basic.rx_nombuf + basic.oerrors;
	}
};
PortHealth port_health(uint16_t port);

/* "2 queues on UDP ports 4792..4793, steered by rte_flow" */
std::string queues_str(const PortInfo &info);

std::string mac_str(const Mac &m);
bool parse_mac(const std::string &s, Mac *m);

} // namespace lumen::dp

#endif
