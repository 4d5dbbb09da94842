// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/sched/demand.h - demand matrices: read from a file, or made
// (the shapes the throughput guarantees are tested and benchmarked on).
// A demand matrix is N x N, row major, row = source, entries >= 0 in any
// unit (bytes, bit/s); the diagonal is ignored.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lumen::sched
{

// A demand matrix: N lines of N numbers >= 0 (row = source), separated by
// commas, spaces or tabs; blank lines and lines starting with '#' are
// skipped. *nodes gets N. UsageError "<source>:<line>: ..." for anything
// else (ragged rows, a negative or non-numeric entry, N < 2).
std::vector<double> parse_demand(const std::string &text, const std::string &source, uint32_t *nodes);
std::vector<double> load_demand(const std::string &path, uint32_t *nodes);

enum class DemandShape {
	kRandom, // every pair uniform in [0, 1)
	kSkewed, // Zipf-like: pair weights 1 / rank, ranks shuffled
	kPermutation, // a random permutation without fixed points
	kRing, // u -> u + 1
	kHotRow, // node 0 sends to all, the rest a little uniform traffic
};
// "random", "skewed", "permutation", "ring", "hot-row"; UsageError otherwise.
DemandShape parse_demand_shape(const std::string &name);
const char *demand_shape_name(DemandShape shape);
// A matrix of that shape for n >= 2 nodes, from a generator seeded with seed.
std::vector<double> make_demand(DemandShape shape, uint32_t n, uint64_t seed);

} // namespace lumen::sched
