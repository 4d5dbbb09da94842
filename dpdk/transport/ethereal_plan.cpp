// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// dpdk/transport/ethereal_plan.cpp - Ethereal's selectPath (ethereal_plan.h).
#include "transport/ethereal_plan.h"

#include <algorithm>
#include <numeric>

namespace lumen::dp
{

namespace
{

// Uplinks from the least loaded, ties to the lowest index.
std::vector<uint32_t> by_load(const std::vector<uint64_t> &load)
{
	std::vector<uint32_t> order(load.size());
	std::iota(order.begin(), order.end(), 0u);
	std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return load[a] < load[b]; });
	return order;
}

struct Piece {
	uint32_t flow, part;
	uint64_t offset, bytes;
};

void emit(Plan *p, uint32_t demand, const Piece &x, int32_t uplink)
{
	if (!x.bytes)
		return;
	p->subflows.push_back({demand, x.flow, x.part, x.offset, x.bytes, uplink});
	if (uplink == kLocalUplink)
		p->local_bytes += x.bytes;
	else
		p->uplink_bytes[(size_t)uplink] += x.bytes;
}

// One round: the pieces (within a byte of each other, at most s) to
// distinct uplinks, the largest to the least loaded.
void assign_round(Plan *p, uint32_t demand, std::vector<Piece> round)
{
	std::stable_sort(round.begin(), round.end(), [](const Piece &a, const Piece &b) { return a.bytes > b.bytes; });
	std::vector<uint32_t> order = by_load(p->uplink_bytes);
	for (size_t i = 0; i < round.size(); i++)
		emit(p, demand, round[i], (int32_t)order[i]);
}

// Theorem 4's remainder: g flows per round, each in k = s/g parts of
// f / k bytes (the first f mod k parts one byte longer), s parts a round.
void plan_equal(Plan *p, uint32_t demand, uint32_t first, uint32_t r, uint64_t f, uint32_t s)
{
	const uint32_t g = std::gcd(r, s), k = s / g;
	const uint64_t q = f / k, e = f % k;

	for (uint32_t base = 0; base < r; base += g) {
		std::vector<Piece> round;
		for (uint32_t fl = first + base; fl < first + base + g; fl++)
			for (uint32_t part = 0; part < k; part++)
				round.push_back(
					{fl, part, q * part + std::min<uint64_t>(part, e), q + (part < e ? 1 : 0)});
		assign_round(p, demand, std::move(round));
	}
}

// Where share i of r*f bytes cut into s shares begins: floor(i*r*f/s), so
// shares differ by a byte at most, and where i*r/s is whole the share begins
// exactly at a flow's start (g - 1 of the s - 1 inner boundaries).
uint64_t share_start(uint64_t total, uint32_t s, uint32_t i)
{
	return total / s * i + total % s * i / s; /* total < 2^50, i <= 1024: no overflow */
}

// The wrap-around remainder: the r flows end to end, the stream cut into s
// shares, the longer shares to the least-loaded uplinks, each flow cut where
// a share ends in it.
void plan_wrap(Plan *p, uint32_t demand, uint32_t first, uint32_t r, uint64_t f, uint32_t s)
{
	const uint64_t total = (uint64_t)r * f;
	std::vector<uint32_t> shares(s), order = by_load(p->uplink_bytes), parts(r, 0);
	auto len = [&](uint32_t i) { return share_start(total, s, i + 1) - share_start(total, s, i); };

	std::iota(shares.begin(), shares.end(), 0u);
	std::stable_sort(shares.begin(), shares.end(), [&](uint32_t a, uint32_t b) { return len(a) > len(b); });
	std::vector<uint32_t> uplink_of(s);
	for (uint32_t k = 0; k < s; k++)
		uplink_of[shares[k]] = order[k];
	for (uint32_t i = 0; i < s; i++) {
		uint64_t at = share_start(total, s, i), end = share_start(total, s, i + 1);
		while (at < end) {
			uint32_t fl = (uint32_t)(at / f);
			uint64_t off = at % f, n = std::min(end - at, f - off);
			emit(p, demand, {first + fl, parts[fl]++, off, n}, (int32_t)uplink_of[i]);
			at += n;
		}
	}
}

std::string check(const PlanParams &p, const std::vector<PlanDemand> &demands)
{
	if (p.uplinks < 1 || p.uplinks > kPlanMaxUplinks)
		return "uplinks: " + std::to_string(p.uplinks) + " is not in 1.." + std::to_string(kPlanMaxUplinks);
	if (p.rule != SplitRule::kEqual && p.rule != SplitRule::kWrap)
		return "unknown split rule";
	if (demands.size() > kPlanMaxDemands)
		return std::to_string(demands.size()) + " demands, more than " + std::to_string(kPlanMaxDemands);
	uint64_t subflows = 0, wrap = 0, bytes = 0;
	for (size_t i = 0; i < demands.size(); i++) {
		const PlanDemand &d = demands[i];
		const std::string at = "demand " + std::to_string(i) + " (leaf " + std::to_string(d.leaf) + "): ";
		if (d.flows > kPlanMaxFlows)
			return at + std::to_string(d.flows) + " flows, more than " + std::to_string(kPlanMaxFlows);
		if (d.flows && (d.bytes < 1 || d.bytes > kPlanMaxBytes))
			return at + "a flow of " + std::to_string(d.bytes) + " bytes (1.." +
			       std::to_string(kPlanMaxBytes) + ")";
		bytes += d.flows * d.bytes; /* each term below 2^60 */
		if (bytes > kPlanMaxTotalBytes)
			return at + "the batch's bytes pass " + std::to_string(kPlanMaxTotalBytes);
		bool local = d.leaf == p.local_leaf;
		subflows += local ? d.flows : ethereal_subflows(d.flows, d.bytes, p.uplinks, p.rule);
		wrap += local ? d.flows : ethereal_subflows(d.flows, d.bytes, p.uplinks, SplitRule::kWrap);
	}
	if (subflows > p.max_subflows) {
		std::string e = "the plan needs " + std::to_string(subflows) + " subflows, more than the NIC's " +
				std::to_string(p.max_subflows);
		if (p.rule != SplitRule::kWrap && wrap < subflows)
			e += " (the wrap rule needs " + std::to_string(wrap) + ")";
		return e;
	}
	return "";
}

} // namespace

const char *split_rule_name(SplitRule r)
{
	return r == SplitRule::kWrap ? "wrap" : "equal";
}

bool split_rule_from_name(const std::string &name, SplitRule *out)
{
	for (SplitRule r : {SplitRule::kEqual, SplitRule::kWrap})
		if (name == split_rule_name(r)) {
			*out = r;
			return true;
		}
	return false;
}

uint64_t ethereal_subflows(uint64_t n, uint64_t f, uint32_t s, SplitRule rule)
{
	if (!n || !f || !s)
		return 0;
	const uint64_t r = n % s, whole = n - r;
	if (!r)
		return n;
	const uint64_t g = std::gcd(r, (uint64_t)s);
	if (rule == SplitRule::kEqual)
		return whole + r * std::min<uint64_t>(s / g, f);
	/* wrap: r pieces, plus one for every share boundary inside a flow */
	const uint64_t total = r * f;
	uint64_t pieces = r;
	for (uint32_t i = 1; i < s; i++) {
		uint64_t b = share_start(total, s, i);
		if (b > 0 && b < total && b % f && b != share_start(total, s, i - 1))
			pieces++;
	}
	return whole + pieces;
}

std::string ethereal_plan(const PlanParams &p, const std::vector<PlanDemand> &demands, Plan *out)
{
	if (std::string e = check(p, demands); !e.empty())
		return e;
	Plan plan;
	const uint32_t s = p.uplinks;
	plan.uplink_bytes.assign(s, 0);
	for (uint32_t di = 0; di < demands.size(); di++) {
		const PlanDemand &d = demands[di];
		plan.flows += d.flows;
		if (d.leaf == p.local_leaf) {
			for (uint32_t fl = 0; fl < d.flows; fl++)
				emit(&plan, di, {fl, 0, 0, d.bytes}, kLocalUplink);
			continue;
		}
		const uint32_t r = d.flows % s;
		for (uint32_t base = 0; base + s <= d.flows; base += s) {
			std::vector<Piece> round;
			for (uint32_t fl = base; fl < base + s; fl++)
				round.push_back({fl, 0, 0, d.bytes});
			assign_round(&plan, di, std::move(round));
		}
		if (r && p.rule == SplitRule::kEqual)
			plan_equal(&plan, di, d.flows - r, r, d.bytes, s);
		else if (r)
			plan_wrap(&plan, di, d.flows - r, r, d.bytes, s);
	}
	std::stable_sort(plan.subflows.begin(), plan.subflows.end(), [](const PlanSubflow &a, const PlanSubflow &b) {
		return a.demand != b.demand ? a.demand < b.demand
		       : a.flow != b.flow   ? a.flow < b.flow
					    : a.offset < b.offset;
	});
	*out = std::move(plan);
	return "";
}

} // namespace lumen::dp
