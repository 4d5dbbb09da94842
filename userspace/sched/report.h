// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/sched/report.h - a schedule for people and for other tools: the
// summary `lumen sched validate` prints, the
// per-slot table and the gnuplot picture of `lumen sched show`.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sched/schedule.h"

namespace lumen::sched
{

// What the schedule gives its pairs: shape, timing, circuits per pair
// (min/max over pairs u != v), pairs never connected, the longest wait for
// a circuit; with a demand, its single-hop and two-hop (Valiant)
// throughput. For `validate --json` and `show --json`.
nlohmann::json summary(const Schedule &s, const std::vector<double> *demand);
// The same, as lines of text.
std::string summary_text(const Schedule &s, const std::vector<double> *demand);

// One table per uplink: a row per node, a column per slot (the first
// max_slots), each cell the destination ('.' when idle).
std::string slot_table(const Schedule &s, uint32_t max_slots);

// A gnuplot script (pngcairo) drawing every uplink's matchings as a grid:
// x the slot, y the source node, colour the destination. Writes png_name
// in gnuplot's working directory.
std::string plot_script(const Schedule &s, const std::string &png_name);

} // namespace lumen::sched
