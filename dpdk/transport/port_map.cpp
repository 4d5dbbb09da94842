// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// dpdk/transport/port_map.cpp - entropies to spines by TTL-limited probes
// (port_map.h).
#include "transport/port_map.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <stdexcept>

namespace lumen::dp
{

const std::vector<uint16_t> PortMap::kNone;

/* In Dest::uplink: an entry from an earlier discovery that this one has not
 * confirmed yet. It stays usable while probing, counts for nothing towards
 * completion, and is dropped when the discovery ends without confirming it
 * (a refresh must not settle on what it has not seen again, and a router
 * probing finds gone must leave the map). */
static constexpr uint32_t kStale = 1u << 31;

std::string PortMapParams::validate() const
{
	if (uplinks < 1 || uplinks > 1024)
		return "port map: uplinks must be 1..1024";
	if (per_uplink < 1 || per_uplink > 64)
		return "port map: entropies per uplink must be 1..64";
	if (max_probes < 1 || max_probes > 65536)
		return "port map: probes per destination must be 1..65536";
	if (window < 1 || window > 1024)
		return "port map: probes outstanding must be 1..1024";
	if (ttl < 1)
		return "port map: the probes' TTL must be 1..255";
	if (timeout_ns < 1000 || timeout_ns > 10'000'000'000ull)
		return "port map: a probe's timeout must be 1 us..10 s";
	if (gap_ns > 1'000'000'000)
		return "port map: the gap between probes must be at most 1 s";
	if (max_age_ns < timeout_ns)
		return "port map: a map's age limit must be at least a probe's timeout";
	if (!spines.empty() && spines.size() != uplinks)
		return "port map: " + std::to_string(spines.size()) + " spine addresses for " +
		       std::to_string(uplinks) + " uplinks";
	return "";
}

PortMap::PortMap(const PortMapParams &p, const EngineConfig &cfg, uint64_t seed)
    : p_(p), entropies_(cfg.path.entropies), sport_base_(cfg.sport_base), dport_(cfg.udp_port), ip_(cfg.ip),
      mac_(cfg.mac)
{
	if (std::string e = p.validate(); !e.empty())
		throw std::invalid_argument(e);
	lumen_rng_seed(&rng_, seed ^ 0x706f72746d6170ull); /* "portmap" */
	if (!p_.spines.empty())
		routers_ = p_.spines;
}

void PortMap::start(Dest &d, uint64_t now_ns)
{
	/* max_probes distinct candidates in a uniformly random order: a
	 * partial Fisher-Yates shuffle, the next candidate at the back */
	std::vector<uint16_t> all(entropies_);
	std::iota(all.begin(), all.end(), (uint16_t)0);
	uint32_t n = std::min(p_.max_probes, entropies_);
	for (uint32_t i = 0; i < n; i++)
		std::swap(all[i], all[i + lumen_rng_below(&rng_, entropies_ - i)]);
	all.resize(n);
	std::reverse(all.begin(), all.end());
	d.order = std::move(all);
	idle_until_ns_ = 0; /* tx has work again */
	for (auto &e : d.uplink)
		e.second |= kStale;
	d.probes_left = p_.max_probes;
	d.by_uplink.resize(p_.uplinks);
	d.probing = true;
	d.settled_ns = 0;
	stats_.discoveries++;
	(void)now_ns;
}

void PortMap::want(uint32_t dst, const Mac &gateway, uint64_t now_ns)
{
	auto [it, fresh] = dests_.try_emplace(dst);
	Dest &d = it->second;
	d.gateway = gateway;
	if (fresh || (!d.probing && now_ns - d.settled_ns >= p_.max_age_ns))
		start(d, now_ns);
}

void PortMap::invalidate(uint32_t dst, uint16_t entropy, uint64_t now_ns)
{
	auto it = dests_.find(dst);
	if (it == dests_.end())
		return;
	Dest &d = it->second;
	if (auto u = d.uplink.find(entropy); u != d.uplink.end()) {
		auto &v = d.by_uplink[u->second & ~kStale];
		v.erase(std::remove(v.begin(), v.end(), entropy), v.end());
		d.uplink.erase(u);
	}
	if (!d.probing)
		start(d, now_ns);
}

bool PortMap::complete(const Dest &d) const
{
	for (uint32_t u = 0; u < p_.uplinks; u++) {
		const auto &v = d.by_uplink[u];
		auto seen = std::count_if(v.begin(), v.end(), [&](uint16_t e) { return !(d.uplink.at(e) & kStale); });
		if ((uint32_t)seen < p_.per_uplink)
			return false;
	}
	return true;
}

void PortMap::settle(Dest &d, uint64_t now_ns)
{
	d.probing = false;
	d.order.clear();
	auto stale = [&](uint16_t e) { return (d.uplink.at(e) & kStale) != 0; };
	for (auto &v : d.by_uplink)
		v.erase(std::remove_if(v.begin(), v.end(), stale), v.end());
	for (auto it = d.uplink.begin(); it != d.uplink.end();)
		it = it->second & kStale ? d.uplink.erase(it) : std::next(it);
	d.settled_ns = now_ns ? now_ns : 1;
}

int PortMap::router_uplink(uint32_t router)
{
	for (size_t u = 0; u < routers_.size(); u++)
		if (routers_[u] == router)
			return (int)u;
	if (!p_.spines.empty() || routers_.size() >= p_.uplinks)
		return -1;
	routers_.push_back(router);
	return (int)routers_.size() - 1;
}

void PortMap::expire(uint64_t now_ns)
{
	for (auto it = out_.begin(); it != out_.end();) {
		if (now_ns - it->second.sent_ns < p_.timeout_ns) {
			++it;
			continue;
		}
		stats_.lost++;
		auto d = dests_.find(it->second.dst);
		if (d != dests_.end() && d->second.probing && d->second.probes_left > 0)
			d->second.order.insert(d->second.order.begin(), it->second.entropy); /* again, last */
		it = out_.erase(it);
	}
}

uint32_t PortMap::tx(FrameSink &sink, uint64_t now_ns, uint32_t budget)
{
	if (dests_.empty() || now_ns < next_tx_ns_ || now_ns < idle_until_ns_)
		return 0;
	expire(now_ns);
	uint32_t sent = 0;
	/* with every map settled and no probe out, nothing happens before the
	 * first one ages: a poll then skips the walk over the destinations */
	uint64_t wake = UINT64_MAX;
	bool busy = !out_.empty();
	for (auto &entry : dests_) {
		const uint32_t dst = entry.first; /* not a structured binding: C++17 lambdas cannot capture those */
		Dest &d = entry.second;
		if (!d.probing && now_ns - d.settled_ns >= p_.max_age_ns)
			start(d, now_ns);
		if (!d.probing) {
			wake = std::min(wake, d.settled_ns + p_.max_age_ns);
			continue;
		}
		busy = true;
		bool mine = std::any_of(out_.begin(), out_.end(), [&](const auto &o) { return o.second.dst == dst; });
		if ((d.order.empty() || d.probes_left == 0) && !mine) {
			settle(d, now_ns); /* out of candidates: what was found is what there is */
			continue;
		}
		if (sent == budget || out_.size() >= p_.window || now_ns < next_tx_ns_ || d.order.empty() ||
		    d.probes_left == 0)
			continue;
		while (out_.count(next_id_) || next_id_ == 0)
			next_id_++;
		uint32_t room = 0;
		uint8_t *buf = sink.next(&room);
		if (!buf)
			break;
		lumen_dp_pkt tmpl{};
		std::memcpy(tmpl.eth_dst, d.gateway.data(), 6);
		std::memcpy(tmpl.eth_src, mac_.data(), 6);
		tmpl.ip_src = ip_;
		tmpl.ip_dst = dst;
		const uint16_t e = d.order.back();
		tmpl.sport = (uint16_t)(sport_base_ + e);
		tmpl.dport = dport_;
		int n = lumen_dp_build_probe(buf, room, &tmpl, p_.ttl, next_id_, now_ns);
		if (n < 0)
			break; /* a buffer smaller than a probe: the shell's bug */
		sink.done((uint32_t)n);
		d.order.pop_back();
		d.probes_left--;
		out_[next_id_++] = Outstanding{dst, e, now_ns};
		next_tx_ns_ = now_ns + p_.gap_ns;
		stats_.probes++;
		sent++;
	}
	if (!busy)
		idle_until_ns_ = wake;
	return sent;
}

bool PortMap::rx(const uint8_t *frame, uint32_t len, uint64_t now_ns)
{
	if (len < LUMEN_DP_UDP_OFF || lumen_dp_get16(frame + 12) != LUMEN_DP_ETHERTYPE_IPV4 ||
	    frame[LUMEN_DP_IP_PROTO_AT] != LUMEN_DP_IP_PROTO_ICMP)
		return false;
	lumen_dp_time_exceeded te{};
	int rc = lumen_dp_parse_time_exceeded(frame, len, &te);
	const uint32_t type_at = LUMEN_DP_IP_OFF + 4u * (frame[LUMEN_DP_IP_OFF] & 0x0F);
	if (rc == -LUMEN_DP_ICMP_ETYPE || (type_at < len && frame[type_at] != LUMEN_DP_ICMP_TIME_EXCEEDED))
		return true; /* another ICMP message (an echo of any size): not ours to judge */
	if (rc) {
		stats_.malformed++;
		return true;
	}
	auto o = out_.find(te.id);
	if (o == out_.end() || te.src != ip_ || te.dst != o->second.dst || te.dport != dport_ ||
	    te.sport != (uint16_t)(sport_base_ + o->second.entropy)) {
		stats_.unmatched++;
		return true;
	}
	const Outstanding got = o->second;
	out_.erase(o);
	auto it = dests_.find(got.dst);
	if (it == dests_.end())
		return true;
	int u = router_uplink(te.router);
	if (u < 0) {
		stats_.unknown_router++;
		return true;
	}
	stats_.replies++;
	Dest &d = it->second;
	if (auto old = d.uplink.find(got.entropy); old != d.uplink.end() && (old->second & ~kStale) != (uint32_t)u) {
		auto &v = d.by_uplink[old->second & ~kStale]; /* the fabric moved it */
		v.erase(std::remove(v.begin(), v.end(), got.entropy), v.end());
	}
	d.uplink[got.entropy] = (uint32_t)u;
	auto &v = d.by_uplink[(size_t)u];
	if (std::find(v.begin(), v.end(), got.entropy) == v.end())
		v.push_back(got.entropy);
	if (d.probing && complete(d))
		settle(d, now_ns);
	return true;
}

int PortMap::uplink_of(uint32_t dst, uint16_t entropy) const
{
	auto it = dests_.find(dst);
	if (it == dests_.end())
		return -1;
	auto u = it->second.uplink.find(entropy);
	return u == it->second.uplink.end() ? -1 : (int)(u->second & ~kStale);
}

const std::vector<uint16_t> &PortMap::entropies_of(uint32_t dst, uint32_t uplink) const
{
	auto it = dests_.find(dst);
	if (it == dests_.end() || uplink >= it->second.by_uplink.size())
		return kNone;
	return it->second.by_uplink[uplink];
}

bool PortMap::settled(uint32_t dst) const
{
	auto it = dests_.find(dst);
	return it != dests_.end() && !it->second.probing;
}

uint32_t PortMap::uplinks_found(uint32_t dst) const
{
	auto it = dests_.find(dst);
	if (it == dests_.end())
		return 0;
	uint32_t n = 0;
	for (const auto &v : it->second.by_uplink)
		n += !v.empty();
	return n;
}

uint32_t PortMap::router_of(uint32_t uplink) const
{
	return uplink < routers_.size() ? routers_[uplink] : 0;
}

} // namespace lumen::dp
