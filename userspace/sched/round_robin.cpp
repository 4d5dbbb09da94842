// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/sched/round_robin.cpp - the oblivious schedule of RotorNet and
// Sirius (Shale's SRRD; thesis §7.4): in shift s every node i reaches
// (i + s) mod N, a perfect matching; the N - 1 shifts (N with the idle
// shift 0) meet every pair exactly once. Uplink p runs every d-th shift,
// so in one slot a node's uplinks run distinct shifts and reach distinct
// nodes, and the period shrinks d times.
#include <string>

#include "base/error.h"
#include "sched/schedule.h"

namespace lumen::sched
{

Schedule round_robin(uint32_t nodes, uint32_t uplinks, bool self_loops, const Timing &timing)
{
	if (nodes < 2 || nodes > kMaxNodes)
		throw UsageError("round robin: nodes " + std::to_string(nodes) + " is not in 2.." +
				 std::to_string(kMaxNodes));
	if (uplinks < 1 || uplinks > kMaxUplinks)
		throw UsageError("round robin: uplinks " + std::to_string(uplinks) + " is not in 1.." +
				 std::to_string(kMaxUplinks));
	uint32_t first = self_loops ? 0 : 1; /* the first shift */
	uint32_t shifts = nodes - first;
	uint32_t period = (shifts + uplinks - 1) / uplinks;
	if ((uint64_t)uplinks * period * nodes > kMaxEntries)
		throw UsageError("round robin: uplinks x period x nodes is over " + std::to_string(kMaxEntries));

	Schedule s = idle_schedule(nodes, uplinks, period, timing);
	s.generator = std::string("round-robin") + (self_loops ? " self-loops" : "");
	for (uint32_t p = 0; p < uplinks; p++)
		for (uint32_t t = 0; t < period; t++) {
			uint32_t shift = first + p + t * uplinks;
			if (shift >= nodes)
				continue; /* padding: the last slot has fewer shifts than uplinks */
			for (uint32_t i = 0; i < nodes; i++)
				s.to(p, t, i) = (i + shift) % nodes;
		}
	validate(s, "round robin"); /* slot and guard lengths */
	return s;
}

} // namespace lumen::sched
