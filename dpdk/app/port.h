/*
 * port.h - the DPDK ports lumen-dp runs on: a packet pool, and each port
 * configured with one RX/TX queue pair per lcore that polls it.
 *
 * With more than one queue, RSS must keep every packet of a connection on
 * one queue whatever its UDP source port, which is the entropy and changes
 * per packet: the hash is set to the IPv4 addresses and the UDP destination
 * port (RTE_ETH_RSS_L4_DST_ONLY), or to the addresses alone where the NIC
 * cannot leave the source port out. A port that can do neither gets one
 * queue, and setup says so.
 */
#ifndef LUMEN_DP_PORT_H
#define LUMEN_DP_PORT_H

#include <cstdint>
#include <string>

#include <rte_ethdev.h>
#include <rte_mempool.h>

#include "transport/engine.h"

namespace lumen::dp
{

constexpr uint16_t kBurst = 32;
constexpr uint16_t kRxDesc = 1024, kTxDesc = 1024;

/* A pool big enough for every queue's descriptors and bursts in flight. */
rte_mempool *make_pool(const char *name, unsigned mbufs, std::string *err);

struct PortInfo {
	Mac mac{};
	std::string driver;
	uint16_t queues = 1;
	uint64_t rss_hf = 0; /* what the port hashes on; 0: no RSS */
};

/* Configure and start port with `queues` queue pairs; "" or why not. */
std::string port_setup(uint16_t port, uint16_t queues, rte_mempool *pool, PortInfo *info);
void port_stop(uint16_t port);

std::string mac_str(const Mac &m);
bool parse_mac(const std::string &s, Mac *m);

} // namespace lumen::dp

#endif
