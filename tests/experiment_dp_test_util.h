// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/experiment_dp_test_util.h - what the datapath experiments' tests
// (experiment_dp_test, experiment_collective_test) share: a built-in
// description read from the source tree, the parser's error for a
// description, and a sample of the switch ports.
#pragma once

#include "base/error.h"
#include "base/system.h"
#include "experiment/experiment.h"
#include "experiment/report.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace lumen::test
{

// experiments/NAME.json
inline nlohmann::json builtin_experiment(const std::string &name)
{
	return nlohmann::json::parse(read_file(std::string(LUMEN_SOURCE_DIR) + "/experiments/" + name + ".json"));
}

// The UsageError parse_experiment throws for doc (as if from `source`), "" when it parses.
inline std::string parse_error(const nlohmann::json &doc, const std::string &source)
{
	try {
		parse_experiment(doc.dump(), source);
	} catch (const UsageError &e) {
		return e.what();
	}
	return "";
}

// A sample at t: each port's dequeued bytes and queue.
inline QueueTick tick(std::uint64_t t, std::vector<std::uint64_t> deq, std::vector<std::uint64_t> qlen = {})
{
	QueueTick q;
	q.t_ns = t;
	for (std::size_t i = 0; i < deq.size(); i++) {
		PortCounters c;
		c.deq_bytes = deq[i];
		c.qlen_bytes = i < qlen.size() ? qlen[i] : 0;
		q.ports.push_back(c);
	}
	return q;
}

} // namespace lumen::test
