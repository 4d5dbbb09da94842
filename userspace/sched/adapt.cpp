// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/sched/adapt.cpp - demand estimate and the change decision
// (adapt.h).
#include "sched/adapt.h"

#include <cmath>
#include <cstdio>

#include "base/error.h"

namespace lumen::sched
{

DemandEstimate::DemandEstimate(uint32_t nodes, double alpha) : nodes_(nodes), alpha_(alpha)
{
	if (!nodes)
		throw UsageError("a demand estimate needs nodes");
	if (!(alpha > 0 && alpha <= 1))
		throw UsageError("the EWMA's weight must be in (0, 1]");
	rates_.assign((size_t)nodes * nodes, 0.0);
}

bool DemandEstimate::add(const std::vector<uint64_t> &bytes, uint64_t now_ns)
{
	if (bytes.size() != (size_t)nodes_ * nodes_)
		throw UsageError("demand counters: " + std::to_string(bytes.size()) + " for " + std::to_string(nodes_) +
				 " x " + std::to_string(nodes_) + " pairs");
	bool counted = false;
	if (have_last_ && now_ns > last_ns_) {
		bool went_back = false;
		for (size_t i = 0; i < bytes.size(); i++)
			went_back |= bytes[i] < last_[i];
		if (!went_back) {
			double dt = (double)(now_ns - last_ns_) / 1e9;
			double a = intervals_ ? alpha_ : 1.0;
			for (size_t i = 0; i < bytes.size(); i++)
				rates_[i] = a * ((double)(bytes[i] - last_[i]) / dt) + (1 - a) * rates_[i];
			intervals_++;
			counted = true;
		}
	}
	last_ = bytes;
	last_ns_ = now_ns;
	have_last_ = true;
	return counted;
}

AdaptDecision decide(const Schedule &current, const std::vector<double> &demand, VermilionParams params,
		     double min_gain)
{
	AdaptDecision d;
	double total = 0;
	for (uint32_t i = 0; i < current.nodes; i++)
		for (uint32_t j = 0; j < current.nodes; j++)
			if (i != j)
				total += demand.at((size_t)i * current.nodes + j);
	if (!(total > 0)) {
		d.why = "no demand measured";
		return d;
	}
	params.timing.slot_ns = current.slot_ns;
	params.timing.guard_ns = current.guard_ns;
	params.timing.guard_at = current.guard_at;
	params.timing.link_gbps = current.link_gbps;
	params.timing.t0_ns = current.t0_ns;
	params.timing.version = current.version + 1;
	d.next = vermilion(demand, current.nodes, params);
	d.theta_now = single_hop_throughput(current, demand);
	d.theta_next = single_hop_throughput(d.next, demand);
	char buf[160];
	d.change = d.theta_next >= d.theta_now + min_gain;
	std::snprintf(buf, sizeof(buf), "single-hop throughput %.3f now, %.3f with Vermilion (k %u, l %u): %s",
		      d.theta_now, d.theta_next, params.k, params.l, d.change ? "change" : "not worth a change");
	d.why = buf;
	return d;
}

} // namespace lumen::sched
