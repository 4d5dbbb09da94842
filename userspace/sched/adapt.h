// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/sched/adapt.h - traffic-aware operation (Vermilion, thesis §7):
// the demand estimated from per-destination byte counters (the gates', a
// sender's), smoothed by an EWMA, and the decision whether a Vermilion
// schedule for it is worth a change. Pure: the caller reads the counters
// and makes the change (testbed/adapt.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sched/schedule.h"
#include "sched/vermilion.h"

namespace lumen::sched
{

// Rates in bytes per second, row = source, from cumulative counters read
// from time to time. The first reading is the baseline; each later one
// gives the interval's rates, folded in as rate = alpha * new + (1 -
// alpha) * rate (the first interval taken whole). A counter that went
// back (a gate attached again) starts a new baseline: that interval is
// skipped.
class DemandEstimate
{
      public:
	// UsageError for no nodes or alpha outside (0, 1].
	DemandEstimate(uint32_t nodes, double alpha);
	// bytes: nodes * nodes counters (row = source); now_ns: when read.
	// true when the interval counted. UsageError for a wrong size.
	bool add(const std::vector<uint64_t> &bytes, uint64_t now_ns);
	bool ready() const
	{
		return intervals_ > 0;
	}
	const std::vector<double> &rates() const
	{
		return rates_;
	}
	uint64_t intervals() const
	{
		return intervals_;
	}

      private:
	uint32_t nodes_;
	double alpha_;
	std::vector<uint64_t> last_;
	uint64_t last_ns_ = 0;
	bool have_last_ = false;
	uint64_t intervals_ = 0;
	std::vector<double> rates_;
};

struct AdaptDecision {
	Schedule next; // Vermilion for the demand, with the timing of the current one
	double theta_now = 0, theta_next = 0; // single-hop throughput of each on the demand
	bool change = false;
	std::string why; // in words, for the log
};

// Vermilion for demand (with current's slot, guard, link and version + 1;
// params' k, l, uplinks and seed), and whether to change to it: when the
// demand is not empty and its single-hop throughput on the demand exceeds
// the current schedule's by at least min_gain (absolute: 0.05 = five
// points of the demand served).
AdaptDecision decide(const Schedule &current, const std::vector<double> &demand, VermilionParams params,
		     double min_gain);

} // namespace lumen::sched
