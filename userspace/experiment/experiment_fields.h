// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/experiment/experiment_fields.h - the field readers of the
// experiment parser (experiment.cpp) that the collective study's parser
// (experiment_study.cpp) shares. Each reads one JSON value and throws
// UsageError "<source>: <json path>: <what is wrong>" (Where::fail).
#pragma once

#include "base/json_fields.h"
#include "experiment/experiment.h"
#include "testbed/testbed.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace lumen
{
namespace spec_fields
{

using json_fields::Where;
using nlohmann::json;

// "20s", "500ms" or a number of seconds, up to an hour
std::uint64_t get_duration(const json &v, const Where &w);
std::uint64_t get_uint(const json &v, const Where &w, std::uint64_t min, std::uint64_t max);
// "64k", "1m" or a number of bytes, 1..max
std::uint64_t get_bytes(const json &v, const Where &w, std::uint64_t max);
// a non-empty list of distinct strings, each passing `check`
std::vector<std::string> get_names(const json &v, const Where &w, const std::string &expected,
				   const std::function<void(const std::string &, const Where &)> &check);
std::vector<std::string> get_path_policies(const json &v, const Where &w);
// "leaf<L>-spine<S>" of the topology -> dp.fail_leaf, dp.fail_spine
void get_failed_link(const json &v, const Where &w, const TopologySpec &topo, DatapathSpec &dp);
// "cc": dctcp | powertcp | theta-powertcp
void get_dp_cc(const json &v, const Where &w, DatapathSpec &dp);

// experiment_study.cpp: a "datapath" with "collectives", and it as JSON
void parse_collective_study(const json &v, const Where &w, const TopologySpec &topo, DatapathSpec &dp);
json collective_study_json(const DatapathSpec &dp);

} // namespace spec_fields
} // namespace lumen
