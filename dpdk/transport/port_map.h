// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// dpdk/transport/port_map.h - which entropies (UDP source ports) lead to
// which spine, per destination, discovered with TTL-limited probes
// (include/lumen/dp_probe.h) as a host on a real ECMP fabric must: the
// leaf's hash and its seed are unknown, and the hash covers the destination
// address, so the map is per destination host.
//
// Discovery of a destination (want): candidate entropies in a random order
// (seeded), each sent once as a probe with the DATA packets' 5-tuple and a
// TTL that expires at the spine (2 from a host behind a leaf). An ICMP Time
// Exceeded quoting a probe we have outstanding (addresses, ports and the id
// all match) maps that entropy to the router that sent it. Routers limit
// the ICMP errors they send (Linux: a token bucket per destination,
// icmp_ratelimit), so probes are paced (gap_ns apart over all
// destinations) with at most `window` outstanding, and one without an
// answer after timeout_ns counts as lost (its entropy is tried again
// later). A destination is complete when `uplinks` routers have each been
// seen on per_uplink entropies, or when max_probes probes went out (a
// fabric with a failed spine: what was found is what there is).
//
// Routers are uplinks. With `spines` given (their addresses, in uplink
// order), a router's uplink is its place there and others are refused; if
// not, routers take uplink numbers in the order they are first seen. A
// spine's ICMP errors leave through the interface towards this host's leaf,
// so its source address is the same whatever the destination.
//
// A map is refreshed after max_age_ns, or at once when the caller says a
// path failed (invalidate). Pure code: frames through a FrameSink and raw
// bytes, no DPDK, no clock of its own.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

extern "C" {
#include <lumen/dp_probe.h>
#include <lumen/path_policy.h>
}

#include "transport/engine.h"

namespace lumen::dp
{

struct PortMapParams {
	uint32_t uplinks = 0; // spines to find (required, 1..1024)
	uint32_t per_uplink = 2; // entropies to find per uplink before a destination is complete
	uint32_t max_probes = 256; // per destination per discovery
	uint32_t window = 8; // probes outstanding at once (all destinations)
	uint8_t ttl = 2; // expires at the spine: host -> leaf -> spine
	uint64_t gap_ns = 100'000; // between probes (routers rate-limit ICMP errors)
	uint64_t timeout_ns = 20'000'000; // a probe unanswered this long is lost
	uint64_t max_age_ns = 60'000'000'000ull; // a complete map is probed again after this
	std::vector<uint32_t> spines; // optional: the spines' addresses, uplink order

	std::string validate() const;
};

struct PortMapStats {
	uint64_t probes = 0, replies = 0, lost = 0, unmatched = 0, unknown_router = 0, malformed = 0;
	uint64_t discoveries = 0; // destinations (re)probed
};

class PortMap
{
      public:
	// entropies: the engine's entropy space; sport_base: its first port.
	PortMap(const PortMapParams &p, const EngineConfig &cfg, uint64_t seed);

	// Discover (or refresh) the map of dst, reached through gateway.
	void want(uint32_t dst, const Mac &gateway, uint64_t now_ns);
	// A path to dst failed: forget its entropy (and, when probing finds it
	// gone, its router) and probe again.
	void invalidate(uint32_t dst, uint16_t entropy, uint64_t now_ns);

	// Probes due now into sink, at most budget; the number built.
	uint32_t tx(FrameSink &sink, uint64_t now_ns, uint32_t budget);
	// A received frame: true when it was an ICMP Time Exceeded (ours or
	// not: it is no lumen-dp frame either way).
	bool rx(const uint8_t *frame, uint32_t len, uint64_t now_ns);

	// The uplink an entropy of dst leads to; -1 when not known.
	int uplink_of(uint32_t dst, uint16_t entropy) const;
	// The entropies of dst known to lead to uplink (empty: none).
	const std::vector<uint16_t> &entropies_of(uint32_t dst, uint32_t uplink) const;
	// Whether discovery of dst is over (complete or out of probes).
	bool settled(uint32_t dst) const;
	// Uplinks with at least one known entropy to dst.
	uint32_t uplinks_found(uint32_t dst) const;
	// The router address of an uplink; 0 when none yet.
	uint32_t router_of(uint32_t uplink) const;

	const PortMapStats &stats() const
	{
		return stats_;
	}
	const PortMapParams &params() const
	{
		return p_;
	}

      private:
	struct Dest {
		Mac gateway{};
		std::vector<uint16_t> order; // candidates still to probe, next at the back
		std::vector<std::vector<uint16_t>> by_uplink; // found entropies per uplink
		std::unordered_map<uint16_t, uint32_t> uplink; // entropy -> uplink
		uint32_t probes_left = 0;
		uint64_t settled_ns = 0; // when discovery ended; 0 while probing
		bool probing = false;
	};
	struct Outstanding {
		uint32_t dst;
		uint16_t entropy;
		uint64_t sent_ns;
	};

	void start(Dest &d, uint64_t now_ns);
	bool complete(const Dest &d) const;
	void settle(Dest &d, uint64_t now_ns);
	int router_uplink(uint32_t router);
	void expire(uint64_t now_ns);

	PortMapParams p_;
	uint32_t entropies_;
	uint16_t sport_base_, dport_;
	uint32_t ip_;
	Mac mac_;
	lumen_rng rng_{};
	std::unordered_map<uint32_t, Dest> dests_;
	std::unordered_map<uint16_t, Outstanding> out_; // by probe id
	std::vector<uint32_t> routers_; // uplink -> router address
	uint16_t next_id_ = 1;
	uint64_t next_tx_ns_ = 0;
	uint64_t idle_until_ns_ = 0; /* every map settled, none due before this (start() clears it) */
	PortMapStats stats_;
	static const std::vector<uint16_t> kNone;
};

} // namespace lumen::dp
