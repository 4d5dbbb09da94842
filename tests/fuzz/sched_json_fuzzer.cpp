// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/fuzz/sched_json_fuzzer.cpp - a schedule from JSON, the path a
// schedule staged inline over lumend's control socket takes
// (sched::from_json, then lumend's tables, userspace/lumend/shm_page.h):
// either a clean refusal (lumen::UsageError) or a schedule that survives
// its own round trip and builds tables for each of its nodes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "base/error.h"
#include "lumend/shm_page.h"
#include "sched/schedule.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, false);
	if (j.is_discarded())
		return 0;
	lumen::sched::Schedule s;
	try {
		s = lumen::sched::from_json(j, "fuzz");
	} catch (const lumen::UsageError &) {
		return 0; // refused, and said why
	}
	nlohmann::json again = lumen::sched::to_json(s);
	if (lumen::sched::to_json(lumen::sched::from_json(again, "round trip")) != again)
		abort();
	// lumend builds its tables for its own node: try the first and the last
	for (uint32_t self : {0u, s.nodes ? s.nodes - 1 : 0u})
		if (self < s.nodes)
			lumen::lumend::build_tables(s, self);
	return 0;
}
