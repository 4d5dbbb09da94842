/* port.cpp - packet pool and port setup for lumen-dp (port.h). */
#include "app/port.h"

#include <algorithm>
#include <cstdio>

#include <rte_errno.h>
#include <rte_byteorder.h>
#include <rte_mbuf.h>

namespace lumen::dp
{

rte_mempool *make_pool(const char *name, unsigned mbufs, uint32_t frame_bytes, std::string *err)
{
	const uint32_t room = std::max<uint32_t>(RTE_MBUF_DEFAULT_BUF_SIZE, RTE_PKTMBUF_HEADROOM + frame_bytes);
	rte_mempool *mp = nullptr;

	if (room <= UINT16_MAX)
		mp = rte_pktmbuf_pool_create(name, mbufs, 256, 0, (uint16_t)room, (int)rte_socket_id());
	if (!mp)
		*err = std::string("cannot create the packet pool (") + std::to_string(mbufs) + " mbufs of " +
		       std::to_string(room) + " bytes): " + rte_strerror(rte_errno) +
		       "; give EAL more memory (-m) or hugepages";
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

/* The rule that sends UDP destination port dport to queue q, validated
 * (create false) or created: "" or why the PMD refused it. */
static std::string flow_to_queue(uint16_t port, uint16_t dport, uint16_t q, bool create, rte_flow **made)
{
	rte_flow_attr attr{};
	rte_flow_item_udp spec{}, mask{};
	rte_flow_action_queue queue{};
	rte_flow_error e{};

	attr.ingress = 1;
	spec.hdr.dst_port = rte_cpu_to_be_16(dport);
	mask.hdr.dst_port = RTE_BE16(0xFFFF);
	queue.index = q;
	const rte_flow_item pattern[] = {
		{RTE_FLOW_ITEM_TYPE_ETH, nullptr, nullptr, nullptr},
		{RTE_FLOW_ITEM_TYPE_IPV4, nullptr, nullptr, nullptr},
		{RTE_FLOW_ITEM_TYPE_UDP, &spec, nullptr, &mask},
		{RTE_FLOW_ITEM_TYPE_END, nullptr, nullptr, nullptr},
	};
	const rte_flow_action actions[] = {
		{RTE_FLOW_ACTION_TYPE_QUEUE, &queue},
		{RTE_FLOW_ACTION_TYPE_END, nullptr},
	};
	bool ok;
	if (create)
		ok = (*made = rte_flow_create(port, &attr, pattern, actions, &e)) != nullptr;
	else
		ok = rte_flow_validate(port, &attr, pattern, actions, &e) == 0;
	if (ok)
		return "";
	return e.message ? e.message : rte_strerror(rte_errno);
}

/* One rule per queue, every rule validated before any is created; "" or
 * why the PMD refused (then no rule is left). */
static std::string install_flows(uint16_t port, PortInfo *info)
{
	for (uint16_t q = 0; q < info->queues; q++)
		if (std::string e = flow_to_queue(port, queue_udp_port(info->udp_base, q), q, false, nullptr);
		    !e.empty())
			return e;
	for (uint16_t q = 0; q < info->queues; q++) {
		rte_flow *f = nullptr;
		if (std::string e = flow_to_queue(port, queue_udp_port(info->udp_base, q), q, true, &f); !e.empty()) {
			rte_flow_error ignored{};
			for (rte_flow *g : info->flows)
				rte_flow_destroy(port, g, &ignored);
			info->flows.clear();
			return e;
		}
		info->flows.push_back(f);
	}
	return "";
}

/* A ring per queue for the frames other queues hand it. */
static std::string make_rings(uint16_t port, PortInfo *info)
{
	auto soft = std::make_unique<SoftSteer>();

	soft->queues = info->queues;
	soft->udp_base = info->udp_base;
	for (uint16_t q = 0; q < info->queues; q++) {
		std::string name = "ldp_steer_" + std::to_string(port) + "_" + std::to_string(q);
		rte_ring *r = rte_ring_create(name.c_str(), kSteerRing, rte_eth_dev_socket_id(port), RING_F_SC_DEQ);
		if (!r) {
			info->soft = std::move(soft); /* port_stop frees those made */
			return "port " + std::to_string(port) + ": steering ring " + std::to_string(q) + ": " +
			       rte_strerror(rte_errno);
		}
		soft->rings.push_back(r);
	}
	info->soft = std::move(soft);
	return "";
}

/* After start: rte_flow rules, or software steering (qs.steer says which may do). */
static std::string steer(uint16_t port, const QueueSetup &qs, PortInfo *info)
{
	if (info->queues == 1)
		return "";
	if (qs.steer != Steer::kSoftware) {
		std::string why = install_flows(port, info);
		if (why.empty()) {
			info->steering = "rte_flow";
			return "";
		}
		if (qs.steer == Steer::kFlow)
			return "port " + std::to_string(port) + " (" + info->driver +
			       ") takes no rte_flow rule steering a UDP destination port to a queue (" + why +
			       "): --steer software or auto";
	}
	info->steering = "software";
	return make_rings(port, info);
}

/* The device's configuration for qs: RSS on what keeps a connection on one
 * queue where the port has it (it only spreads the steering work). */
static std::string configure(uint16_t port, const rte_eth_dev_info &dev, const QueueSetup &qs, uint32_t mtu,
			     PortInfo *info)
{
	rte_eth_conf conf{};
	int rc;

	/* the port carries the MTU or says why not (ethdev checks it against
	 * the driver's min/max MTU and largest frame) */
	conf.rxmode.mtu = mtu;
	if (qs.queues > dev.max_rx_queues || qs.queues > dev.max_tx_queues)
		return "port " + std::to_string(port) + " (" + info->driver + ") has at most " +
		       std::to_string(std::min(dev.max_rx_queues, dev.max_tx_queues)) + " queues (--queues " +
		       std::to_string(qs.queues) + ")";
	/* zero-copy sends (messages.h) chain the payload to the headers */
	conf.txmode.offloads = dev.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	if (qs.queues > 1 && (info->rss_hf = rss_without_sport(dev)) != 0) {
		conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		conf.rx_adv_conf.rss_conf.rss_hf = info->rss_hf;
	}
	if ((rc = rte_eth_dev_configure(port, qs.queues, qs.queues, &conf)) != 0)
		return "port " + std::to_string(port) + " (" + info->driver + "): configure" +
		       (mtu != RTE_ETHER_MTU ? " with MTU " + std::to_string(mtu) + " (the port's largest: " +
						       std::to_string(std::min<uint32_t>(
							       dev.max_mtu, dev.max_rx_pktlen - RTE_ETHER_HDR_LEN -
										    RTE_ETHER_CRC_LEN)) +
						       ")"
					     : std::string()) +
		       ": " + rte_strerror(-rc);
	return "";
}

std::string port_setup(uint16_t port, const QueueSetup &qs, rte_mempool *pool, uint32_t mtu, PortInfo *info)
{
	rte_eth_dev_info dev{};
	rte_ether_addr addr{};
	int rc;

	if (!rte_eth_dev_is_valid_port(port))
		return "port " + std::to_string(port) + " does not exist (" +
		       std::to_string(rte_eth_dev_count_avail()) + " ports; give EAL a device or --vdev)";
	if ((rc = rte_eth_dev_info_get(port, &dev)) != 0)
		return "port " + std::to_string(port) + ": " + rte_strerror(-rc);
	info->driver = dev.driver_name ? dev.driver_name : "?";
	info->queues = qs.queues;
	info->udp_base = qs.udp_base;
	/* a frame the mbufs cannot hold would be built nowhere: the DATA of a
	 * connection would never go out */
	const uint32_t room = rte_pktmbuf_data_room_size(pool) - RTE_PKTMBUF_HEADROOM;
	if (mtu + RTE_ETHER_HDR_LEN > room)
		return "--mtu " + std::to_string(mtu) + ": frames of " + std::to_string(mtu + RTE_ETHER_HDR_LEN) +
		       " bytes do not fit the pool's mbufs (" + std::to_string(room) + " bytes)";
	if (std::string e = configure(port, dev, qs, mtu, info); !e.empty())
		return e;
	uint16_t rxd = kRxDesc, txd = kTxDesc;
	rte_eth_dev_adjust_nb_rx_tx_desc(port, &rxd, &txd);
	for (uint16_t q = 0; q < qs.queues; q++) {
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
	return steer(port, qs, info);
}

void port_stop(uint16_t port, PortInfo *info)
{
	rte_flow_error e{};

	for (rte_flow *f : info->flows)
		rte_flow_destroy(port, f, &e);
	info->flows.clear();
	if (rte_eth_dev_is_valid_port(port)) {
		rte_eth_dev_stop(port);
		rte_eth_dev_close(port);
	}
	if (!info->soft)
		return;
	for (rte_ring *r : info->soft->rings) {
		void *m;
		while (rte_ring_dequeue(r, &m) == 0)
			rte_pktmbuf_free(static_cast<rte_mbuf *>(m));
		rte_ring_free(r);
	}
	info->soft.reset();
}

std::string queues_str(const PortInfo &info)
{
	if (info.queues == 1)
		return "1 queue on UDP port " + std::to_string(info.udp_base);
	std::string s = std::to_string(info.queues) + " queues on UDP ports " + std::to_string(info.udp_base) + ".." +
			std::to_string(queue_udp_port(info.udp_base, (uint16_t)(info.queues - 1))) + ", steered by " +
			info.steering;
	if (info.rss_hf)
		s += info.rss_hf & RTE_ETH_RSS_L4_DST_ONLY ? " (RSS on addresses and UDP destination port)"
							   : " (RSS on addresses)";
	return s;
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

PortHealth port_health(uint16_t port)
{
	PortHealth h;
	h.port = port;
	h.ok = rte_eth_stats_get(port, &h.basic) == 0;
	int n = rte_eth_xstats_get(port, nullptr, 0);
	if (n <= 0)
		return h;
	std::vector<rte_eth_xstat> values((size_t)n);
	std::vector<rte_eth_xstat_name> names((size_t)n);
	if (rte_eth_xstats_get(port, values.data(), (unsigned)n) != n ||
	    rte_eth_xstats_get_names(port, names.data(), (unsigned)n) != n)
		return h;
	for (const rte_eth_xstat &x : values) {
		if (!x.value || x.id >= (uint64_t)n)
			continue;
		std::string name = names[x.id].name;
		for (const char *word : {"error", "drop", "miss", "nombuf", "discard", "fail"})
			if (name.find(word) != std::string::npos) {
				h.losses.emplace_back(name, x.value);
				break;
			}
	}
	return h;
}

} // namespace lumen::dp
