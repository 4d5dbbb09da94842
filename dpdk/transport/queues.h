/*
 * queues.h - how lumen-dp shares one port among several RX/TX queue pairs,
 * each polled by one lcore and owning its own connections. Pure logic (no
 * DPDK), so that it is unit-tested alone.
 *
 * A connection lives on one queue at each end. The UDP source port cannot
 * say which: it is the entropy and changes per packet. The destination port
 * does: queue q of a host sends and receives lumen-dp on port base + q
 * (EngineConfig::udp_port of its engine). A client connection opened on
 * queue q carries base + q in both directions, its DATA and the peer's ACKs
 * (an engine replies on its own port), so it lives on queue q at both ends
 * and the peer needs at least q + 1 queues: both ends run the same --queues.
 * Nothing on the wire changes; a one-queue host uses base (4792) as before.
 *
 * The NIC steers each port to its queue (rte_flow, one rule per queue);
 * where it cannot, the lcore that received a frame for another queue hands
 * it over (software steering: SoftSteer in app/port.h, Endpoint::steer in
 * app/endpoint.cpp). Connections are split over the
 * queues in consecutive blocks of ids (conn_share).
 */
#ifndef LUMEN_DP_QUEUES_H
#define LUMEN_DP_QUEUES_H

#include <cstdint>
#include <string>

extern "C" {
#include <lumen/dp_wire.h>
}

namespace lumen::dp
{

constexpr uint16_t kMaxQueues = 16; /* per port */

/* The UDP port queue q receives lumen-dp on. */
inline uint16_t queue_udp_port(uint16_t base, uint16_t q)
{
	return (uint16_t)(base + q);
}

/* The queue of n that owns destination port dport, or -1: not one of ours. */
inline int queue_of_udp_port(uint16_t dport, uint16_t base, uint16_t n)
{
	uint32_t q = (uint32_t)dport - base;

	return dport >= base && q < n ? (int)q : -1;
}

/* "" when queues 1..kMaxQueues on ports base.. fit in 1..65535, or what is wrong. */
inline std::string queues_validate(uint16_t base, uint32_t queues)
{
	if (queues < 1 || queues > kMaxQueues)
		// not "..." + std::to_string(): GCC 12's -Warray-bounds misfires on it at -O3
		return std::string("queues must be 1..") + std::to_string(kMaxQueues);
	if (base == 0)
		return "the UDP port must be 1..65535";
	if ((uint32_t)base + queues - 1 > 65535)
		return "UDP ports " + std::to_string(base) + ".." + std::to_string((uint32_t)base + queues - 1) +
		       " (one per queue) pass 65535";
	return "";
}

/*
 * The UDP destination port of an IPv4/UDP frame, or -1 when the frame is not
 * one whose port can be read (short, not IPv4, a non-first fragment, not UDP).
 * Only what steering needs: the engine still parses the whole frame.
 */
inline int frame_udp_dport(const uint8_t *frame, uint32_t len)
{
	if (lumen_dp_ip_check(frame, len) != 0)
		return -1;
	const uint8_t *ip = frame + LUMEN_DP_IP_OFF;
	uint32_t ihl = 4u * (ip[0] & 0x0F);
	if (ihl < LUMEN_DP_IP_HLEN || ip[9] != LUMEN_DP_IP_PROTO_UDP)
		return -1;
	if (lumen_dp_get16(ip + 6) & 0x1FFF) /* a later fragment: no UDP header */
		return -1;
	if (len < LUMEN_DP_IP_OFF + ihl + LUMEN_DP_UDP_HLEN)
		return -1;
	return lumen_dp_get16(ip + ihl + 2);
}

/* The connections of queue q when a host opens `conns` with ids from first_id. */
struct ConnShare {
	uint32_t first_id, count;
};

/* Consecutive blocks, the first conns % queues queues one connection more. */
inline ConnShare conn_share(uint32_t conns, uint16_t queues, uint16_t q, uint32_t first_id)
{
	uint32_t per = conns / queues, extra = conns % queues;
	uint32_t before = q * per + (q < extra ? q : extra);

	return ConnShare{first_id + before, per + (q < extra ? 1u : 0u)};
}

} // namespace lumen::dp

#endif
