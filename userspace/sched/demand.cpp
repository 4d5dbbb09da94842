// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/sched/demand.cpp - demand matrices from files and of the
// shapes the guarantees are checked on (demand.h).
#include "sched/demand.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <sstream>

#include "base/error.h"
#include "base/random.h"
#include "base/system.h"
#include "sched/schedule.h"

namespace lumen::sched
{

std::vector<double> parse_demand(const std::string &text, const std::string &source, uint32_t *nodes)
{
	std::vector<double> m;
	size_t cols = 0, rows = 0, lineno = 0;
	std::istringstream in(text);
	std::string line;

	while (std::getline(in, line)) {
		lineno++;
		size_t start = line.find_first_not_of(" \t\r");
		if (start == std::string::npos || line[start] == '#')
			continue;
		std::replace(line.begin(), line.end(), ',', ' ');
		std::istringstream words(line);
		std::string w;
		size_t n = 0;
		while (words >> w) {
			char *end = nullptr;
			double x = std::strtod(w.c_str(), &end);
			if (end == w.c_str() || *end || !std::isfinite(x) || x < 0)
				throw UsageError(source + ":" + std::to_string(lineno) + ": '" + w +
						 "' is not a number >= 0");
			m.push_back(x);
			n++;
		}
		if (rows == 0)
			cols = n;
		else if (n != cols)
			throw UsageError(source + ":" + std::to_string(lineno) + ": " + std::to_string(n) +
					 " entries, the first row has " + std::to_string(cols));
		rows++;
	}
	if (rows != cols || rows < 2 || rows > kMaxNodes)
		throw UsageError(source +
				 ": a demand matrix is N rows of N numbers, 2 <= N <= " + std::to_string(kMaxNodes) +
				 " (got " + std::to_string(rows) + " x " + std::to_string(cols) + ")");
	*nodes = (uint32_t)rows;
	return m;
}

std::vector<double> load_demand(const std::string &path, uint32_t *nodes)
{
	std::string text;
	try {
		text = read_file(path);
	} catch (const Error &e) {
		throw UsageError(e.what());
	}
	return parse_demand(text, path, nodes);
}

namespace
{

struct ShapeName {
	DemandShape shape;
	const char *name;
};
constexpr ShapeName kShapes[] = {{DemandShape::kRandom, "random"},
				 {DemandShape::kSkewed, "skewed"},
				 {DemandShape::kPermutation, "permutation"},
				 {DemandShape::kRing, "ring"},
				 {DemandShape::kHotRow, "hot-row"}};

} // namespace

DemandShape parse_demand_shape(const std::string &name)
{
	std::string all;
	for (const ShapeName &s : kShapes) {
		if (name == s.name)
			return s.shape;
		all += (all.empty() ? "" : ", ") + std::string(s.name);
	}
	throw UsageError("unknown demand shape '" + name + "' (" + all + ")");
}

const char *demand_shape_name(DemandShape shape)
{
	for (const ShapeName &s : kShapes)
		if (s.shape == shape)
			return s.name;
	return "?";
}

std::vector<double> make_demand(DemandShape shape, uint32_t n, uint64_t seed)
{
	lumen_rng rng;
	lumen_rng_seed(&rng, seed);
	std::vector<double> m((size_t)n * n, 0);
	auto at = [&](uint32_t u, uint32_t v) -> double & { return m[(size_t)u * n + v]; };

	switch (shape) {
	case DemandShape::kRandom:
		for (uint32_t u = 0; u < n; u++)
			for (uint32_t v = 0; v < n; v++)
				if (u != v)
					at(u, v) = rng_unit(rng);
		break;
	case DemandShape::kSkewed: {
		std::vector<uint32_t> rank((size_t)n * n);
		std::iota(rank.begin(), rank.end(), 1u);
		rng_shuffle(rank, rng);
		for (uint32_t u = 0; u < n; u++)
			for (uint32_t v = 0; v < n; v++)
				if (u != v)
					at(u, v) = 1.0 / rank[(size_t)u * n + v];
		break;
	}
	case DemandShape::kPermutation: {
		/* a random cyclic order: every node sends to its successor */
		std::vector<uint32_t> order(n);
		std::iota(order.begin(), order.end(), 0u);
		rng_shuffle(order, rng);
		for (uint32_t i = 0; i < n; i++)
			at(order[i], order[(i + 1) % n]) = 1;
		break;
	}
	case DemandShape::kRing:
		for (uint32_t u = 0; u < n; u++)
			at(u, (u + 1) % n) = 1;
		break;
	case DemandShape::kHotRow:
		for (uint32_t u = 0; u < n; u++)
			for (uint32_t v = 0; v < n; v++)
				if (u != v)
					at(u, v) = u == 0 ? 1.0 : 0.01 * rng_unit(rng);
		break;
	}
	return m;
}

} // namespace lumen::sched
