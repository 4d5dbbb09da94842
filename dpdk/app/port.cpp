/* port.cpp - packet pool and port setup for lumen-dp (port.h). */
#include "app/port.h"

#include <cstdio>

#include <rte_errno.h>
#include <rte_mbuf.h>

namespace lumen::dp
{

rte_mempool *make_pool(const char *name, unsigned mbufs, std::string *err)
{
	rte_mempool *mp = rte_pktmbuf_pool_create(name, mbufs, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE, (int)rte_socket_id());

	if (!mp)
		*err = std::string("cannot create the packet pool (") + std::to_string(mbufs) +
		       " mbufs): " + rte_strerror(rte_errno) + "; give EAL more memory (-m) or hugepages";
	return mp;
}

/* The RSS hash that keeps a connection on one queue, or 0 when there is none. */
static uint64_t rss_without_sport(const rte_eth_dev_info &dev)
{
	uint64_t l4dst = RTE_ETH_RSS_NONFRAG_IPV4_UDP | RTE_ETH_RSS_L4_DST_ONLY;

	if ((dev.flow_type_rss_offloads & l4dst) == l4dst)
		return l4dst | (dev.flow_type_rss_offloads & RTE_ETH_RSS_IPV4);
	if (dev.flow_type_rss_offloads & RTE_ETH_RSS_IPV4)
		return RTE_ETH_RSS_IPV4;
	return 0;
}

std::string port_setup(uint16_t port, uint16_t queues, rte_mempool *pool, PortInfo *info)
{
	rte_eth_dev_info dev{};
	rte_eth_conf conf{};
	rte_ether_addr addr{};
	int rc;

	if (!rte_eth_dev_is_valid_port(port))
		return "port " + std::to_string(port) + " does not exist (" +
		       std::to_string(rte_eth_dev_count_avail()) + " ports; give EAL a device or --vdev)";
	if ((rc = rte_eth_dev_info_get(port, &dev)) != 0)
		return "port " + std::to_string(port) + ": " + rte_strerror(-rc);
	info->driver = dev.driver_name ? dev.driver_name : "?";
	if (queues > 1) {
		info->rss_hf = rss_without_sport(dev);
		if (!info->rss_hf)
			return "port " + std::to_string(port) + " (" + info->driver +
			       ") cannot hash without the UDP source port, which is the entropy: use one lcore per "
			       "port";
		if (queues > dev.max_rx_queues || queues > dev.max_tx_queues)
			return "port " + std::to_string(port) + " has at most " + std::to_string(dev.max_rx_queues) +
			       " queues";
		conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		conf.rx_adv_conf.rss_conf.rss_hf = info->rss_hf;
	}
	info->queues = queues;
	if ((rc = rte_eth_dev_configure(port, queues, queues, &conf)) != 0)
		return "port " + std::to_string(port) + ": configure: " + rte_strerror(-rc);
	uint16_t rxd = kRxDesc, txd = kTxDesc;
	rte_eth_dev_adjust_nb_rx_tx_desc(port, &rxd, &txd);
	for (uint16_t q = 0; q < queues; q++) {
		if ((rc = rte_eth_rx_queue_setup(port, q, rxd, rte_eth_dev_socket_id(port), nullptr, pool)) != 0)
			return "port " + std::to_string(port) + ": rx queue " + std::to_string(q) + ": " +
			       rte_strerror(-rc);
		if ((rc = rte_eth_tx_queue_setup(port, q, txd, rte_eth_dev_socket_id(port), nullptr)) != 0)
			return "port " + std::to_string(port) + ": tx queue " + std::to_string(q) + ": " +
			       rte_strerror(-rc);
	}
	if ((rc = rte_eth_dev_start(port)) != 0)
		return "port " + std::to_string(port) + ": start: " + rte_strerror(-rc);
	rte_eth_promiscuous_enable(port); /* best effort: some vdevs have no such mode */
	rte_eth_macaddr_get(port, &addr);
	std::copy(addr.addr_bytes, addr.addr_bytes + 6, info->mac.begin());
	return "";
}

void port_stop(uint16_t port)
{
	rte_eth_dev_stop(port);
	rte_eth_dev_close(port);
}

std::string mac_str(const Mac &m)
{
	char s[18];

	std::snprintf(s, sizeof(s), "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
	return s;
}

bool parse_mac(const std::string &s, Mac *m)
{
	unsigned b[6];
	char tail;

	if (std::sscanf(s.c_str(), "%x:%x:%x:%x:%x:%x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &tail) != 6)
		return false;
	for (int i = 0; i < 6; i++) {
		if (b[i] > 255)
			return false;
		(*m)[i] = (uint8_t)b[i];
	}
	return true;
}

} // namespace lumen::dp
