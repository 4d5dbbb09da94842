/*
 * optical_gate.cpp - direct-hop gating in lumen-dp (optical_gate.h).
 */
#include "transport/optical_gate.h"

#include <arpa/inet.h>

#include <stdexcept>

namespace lumen::dp
{

OpticalGate::OpticalGate(std::unordered_map<uint32_t, uint32_t> node_of, uint32_t rate_mbps, uint64_t max_hold_ns,
			 uint64_t slack_ns)
    : node_of_(std::move(node_of)), rate_mbps_(rate_mbps), max_hold_ns_(max_hold_ns), slack_ns_(slack_ns)
{
	if (!rate_mbps)
		throw std::invalid_argument("the optical gate needs the link's rate");
}

void OpticalGate::set_tables(const GateTables &t)
{
	t_ = t;
	if (wire_free_.size() < t.nodes)
		wire_free_.resize(t.nodes, 0);
	if (nodes_.size() < t.nodes)
		nodes_.resize(t.nodes);
}

int64_t OpticalGate::node_of(uint32_t dst_ip) const
{
	auto it = node_of_.find(dst_ip);
	if (it == node_of_.end() || it->second >= t_.nodes || it->second == t_.self)
		return -1;
	return it->second;
}

bool OpticalGate::quiet_now()
{
	if (!t_.quiet && t_.waits.size() >= (size_t)t_.timing.period * t_.nodes)
		return false;
	if (t_.quiet == kQuietStale)
		st_.stale++;
	else
		st_.quiet++;
	return true;
}

GateVerdict OpticalGate::book(uint32_t dst_ip, uint32_t len, uint64_t now_tai, uint64_t *depart_tai, Offer offer)
{
	const int64_t node = node_of(dst_ip);
	if (node < 0) {
		st_.pass++;
		*depart_tai = now_tai;
		return GateVerdict::kPass;
	}
	uint32_t dst = (uint32_t)node;
	if (offer == Offer::kNew) {
		nodes_[dst].offered_frames++;
		nodes_[dst].offered_bytes += len;
	}
	if (quiet_now())
		return GateVerdict::kQuiet;
	uint64_t base = now_tai > wire_free_[dst] ? now_tai : wire_free_[dst];
	uint64_t wire = lumen_wire_ns(len, rate_mbps_);
	if (t_.change_ns && base + wire > t_.change_ns) {
		st_.deferred += offer == Offer::kNew;
		return GateVerdict::kDefer;
	}
	lumen_slot_pos pos;
	if (lumen_slot_at(&t_.timing, base, &pos)) {
		st_.never++;
		return GateVerdict::kNever;
	}
	uint32_t next = pos.in_period + 1 < t_.timing.period ? pos.in_period + 1 : 0;
	uint64_t dep = lumen_slot_departure(&t_.timing, base, t_.margin_ns + slack_ns_, wire,
					    t_.waits[(size_t)pos.in_period * t_.nodes + dst],
					    t_.waits[(size_t)next * t_.nodes + dst]);
	if (!dep) {
		st_.never++;
		return GateVerdict::kNever;
	}
	if (t_.change_ns && dep + wire > t_.change_ns) {
		st_.deferred += offer == Offer::kNew;
		return GateVerdict::kDefer;
	}
	if (dep > now_tai && dep - now_tai > max_hold_ns_) {
		st_.overflow++;
		return GateVerdict::kOverflow;
	}
	wire_free_[dst] = dep + wire;
	*depart_tai = dep;
	if (dep > now_tai) {
		if (offer == Offer::kRebook)
			return GateVerdict::kSend;
		st_.held++;
		st_.held_ns += dep - now_tai;
		if (dep - now_tai > st_.held_max_ns)
			st_.held_max_ns = dep - now_tai;
	} else {
		st_.sent++;
		nodes_[dst].sent_frames++;
		nodes_[dst].sent_bytes += len;
	}
	return GateVerdict::kSend;
}

bool OpticalGate::circuit_window(uint32_t dst_ip, uint64_t now_tai, uint64_t *open, uint64_t *close) const
{
	const int64_t node = node_of(dst_ip);
	lumen_slot_pos pos;

	if (node < 0 || t_.quiet || lumen_slot_at(&t_.timing, now_tai, &pos))
		return false;
	const uint32_t dst = (uint32_t)node, period = t_.timing.period;
	const uint32_t next = pos.in_period + 1 < period ? pos.in_period + 1 : 0;
	const uint32_t wait_now = t_.waits[(size_t)pos.in_period * t_.nodes + dst];
	const uint32_t wait_next = t_.waits[(size_t)next * t_.nodes + dst];
	if (wait_now >= period || wait_next >= period)
		return false;
	__u64 lo = 0, hi = 0;
	if (lumen_slot_window(&t_.timing, pos.slot + wait_now, t_.margin_ns, &lo, &hi))
		return false;
	/* now's slot connects them but its window has closed (its guard, or
	 * the margin): the next connecting slot after it */
	if (now_tai >= hi && lumen_slot_window(&t_.timing, pos.slot + 1 + wait_next, t_.margin_ns, &lo, &hi))
		return false;
	if (t_.change_ns && hi > t_.change_ns)
		return false;
	*open = lo;
	*close = hi;
	return true;
}

GateVerdict OpticalGate::defer(uint32_t dst_ip, uint32_t len, Offer offer)
{
	const int64_t node = node_of(dst_ip);
	if (node < 0)
		return GateVerdict::kPass;
	if (offer == Offer::kNew) {
		nodes_[(size_t)node].offered_frames++;
		nodes_[(size_t)node].offered_bytes += len;
		st_.deferred++;
	}
	return GateVerdict::kDefer;
}

GateVerdict OpticalGate::release(uint32_t dst_ip, uint32_t len, uint64_t now_tai)
{
	const int64_t node = node_of(dst_ip);
	if (node < 0)
		return GateVerdict::kPass; /* the tables changed under it: not a node now */
	uint32_t dst = (uint32_t)node;
	if (quiet_now())
		return GateVerdict::kQuiet;
	/* it fits when the earliest departure from now, the wire clock aside,
	 * is now itself */
	const uint64_t wire = lumen_wire_ns(len, rate_mbps_);
	lumen_slot_pos pos;
	if (!lumen_slot_at(&t_.timing, now_tai, &pos) && (!t_.change_ns || now_tai + wire <= t_.change_ns)) {
		uint32_t next = pos.in_period + 1 < t_.timing.period ? pos.in_period + 1 : 0;
		uint64_t dep = lumen_slot_departure(&t_.timing, now_tai, t_.margin_ns, wire,
						    t_.waits[(size_t)pos.in_period * t_.nodes + dst],
						    t_.waits[(size_t)next * t_.nodes + dst]);
		if (dep == now_tai) {
			nodes_[dst].sent_frames++;
			nodes_[dst].sent_bytes += len;
			return GateVerdict::kPass;
		}
	}
	st_.late++;
	return GateVerdict::kLate;
}

std::string parse_node_addrs(const std::string &text, std::unordered_map<uint32_t, uint32_t> *out)
{
	out->clear();
	uint32_t node = 0;
	for (size_t start = 0; start <= text.size(); node++) {
		size_t comma = text.find(',', start);
		std::string one = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
		in_addr a{};
		if (inet_pton(AF_INET, one.c_str(), &a) != 1)
			return "'" + one + "' is not an IPv4 address";
		if (!out->emplace(ntohl(a.s_addr), node).second)
			return one + " is given twice";
		if (comma == std::string::npos)
			break;
		start = comma + 1;
	}
	return "";
}

} // namespace lumen::dp
