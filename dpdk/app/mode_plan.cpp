/*
 * mode_plan.cpp - lumen-dp's plan mode: Ethereal's split of one batch of
 * flows over a leaf's uplinks (transport/ethereal_plan.h), printed as a
 * table or JSON. It computes only: no EAL, no port, no root.
 *
 *   lumen-dp -- plan --uplinks 16 --to 1:4:1M            (a 4-channel ring)
 *   lumen-dp -- plan --uplinks 16 --leaf 0 --to 1:16:16K,2:16:16K --json -
 */
#include <getopt.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/options.h"
#include "transport/ethereal_plan.h"

namespace lumen::dp
{

namespace
{

const char kUsage[] = "usage: lumen-dp -- plan --uplinks S --to LEAF:FLOWS:BYTES[,...] [options]\n"
		      "Ethereal's plan for one batch of flows from this host: which flows split into\n"
		      "subflows, their byte ranges, and the uplink (spine) each takes.\n\n"
		      "  --uplinks S         uplinks of this host's leaf, one per spine (1..1024)\n"
		      "  --to LEAF:N:BYTES   N flows of BYTES each to hosts of leaf LEAF (repeat, or a\n"
		      "                      comma list); BYTES may end in K, M or G (powers of 1024)\n"
		      "  --leaf I            this host's leaf: flows to it use no uplink (0)\n"
		      "  --split equal|wrap  equal: Theorem 4, the n mod s leftover flows into s/g equal\n"
		      "                      subflows; wrap: leftover flows cut at the uplinks' shares,\n"
		      "                      the fewest subflows (s - g extra per leaf) (equal)\n"
		      "  --max-subflows N    the NIC's connection state: refuse a larger plan (16384)\n"
		      "  --list              print every subflow\n"
		      "  --json FILE         the plan as JSON (- for stdout, instead of the table)\n";

struct PlanArgs {
	PlanParams params;
	std::vector<PlanDemand> demands;
	bool list = false;
	std::string json;
};

bool parse_num(const std::string &s, uint64_t hi, uint64_t *out, bool suffix)
{
	if (s.empty() || !std::isdigit((unsigned char)s[0]))
		return false;
	char *end = nullptr;
	errno = 0;
	unsigned long long v = std::strtoull(s.c_str(), &end, 10);
	uint64_t mult = 1;
	if (suffix && *end && !end[1]) {
		const char *units = "KMG";
		const char *u = std::strchr(units, *end);
		if (u)
			mult = 1ull << (10 * (1 + (u - units))), end++;
	}
	if (errno || *end || v > hi / mult)
		return false;
	*out = v * mult;
	return true;
}

/* LEAF:N:BYTES[,LEAF:N:BYTES...] */
std::string parse_to(const std::string &arg, std::vector<PlanDemand> *out)
{
	for (size_t at = 0; at <= arg.size();) {
		size_t comma = std::min(arg.find(',', at), arg.size());
		std::string one = arg.substr(at, comma - at);
		size_t a = one.find(':'), b = a == std::string::npos ? a : one.find(':', a + 1);
		uint64_t leaf, n, bytes;
		if (b == std::string::npos || !parse_num(one.substr(0, a), UINT32_MAX, &leaf, false) ||
		    !parse_num(one.substr(a + 1, b - a - 1), kPlanMaxFlows, &n, false) ||
		    !parse_num(one.substr(b + 1), kPlanMaxBytes, &bytes, true) || !bytes)
			return "--to: '" + one + "' is not LEAF:FLOWS:BYTES (1:4:1M; at most " +
			       std::to_string(kPlanMaxFlows) + " flows of 1.." + std::to_string(kPlanMaxBytes) +
			       " bytes)";
		out->push_back({(uint32_t)leaf, (uint32_t)n, bytes});
		at = comma + 1;
	}
	return "";
}

std::string parse(int argc, char **argv, PlanArgs *a, bool *help)
{
	enum {
		kUplinks = 256,
		kTo,
		kLeaf,
		kSplit,
		kMax,
		kList,
		kJson,
		kHelp
	};
	static const option kOpts[] = {
		{"uplinks", required_argument, nullptr, kUplinks},
		{"to", required_argument, nullptr, kTo},
		{"leaf", required_argument, nullptr, kLeaf},
		{"split", required_argument, nullptr, kSplit},
		{"max-subflows", required_argument, nullptr, kMax},
		{"list", no_argument, nullptr, kList},
		{"json", required_argument, nullptr, kJson},
		{"help", no_argument, nullptr, kHelp},
		{nullptr, 0, nullptr, 0},
	};
	bool have_uplinks = false;
	uint64_t v;
	int c;

	*help = false;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", kOpts, nullptr)) != -1) {
		const std::string arg = optarg ? optarg : "";
		switch (c) {
		case kUplinks:
			if (!parse_num(arg, kPlanMaxUplinks, &v, false) || !v)
				return "--uplinks: '" + arg + "' is not a whole number in 1.." +
				       std::to_string(kPlanMaxUplinks);
			a->params.uplinks = (uint32_t)v;
			have_uplinks = true;
			break;
		case kTo:
			if (std::string e = parse_to(arg, &a->demands); !e.empty())
				return e;
			break;
		case kLeaf:
			if (!parse_num(arg, UINT32_MAX, &v, false))
				return "--leaf: '" + arg + "' is not a leaf number";
			a->params.local_leaf = (uint32_t)v;
			break;
		case kSplit:
			if (!split_rule_from_name(arg, &a->params.rule))
				return "--split: unknown rule '" + arg + "' (equal, wrap)";
			break;
		case kMax:
			if (!parse_num(arg, 1u << 24, &v, false) || !v)
				return "--max-subflows: '" + arg + "' is not a whole number in 1.." +
				       std::to_string(1u << 24);
			a->params.max_subflows = (uint32_t)v;
			break;
		case kList:
			a->list = true;
			break;
		case kJson:
			a->json = arg;
			break;
		case 'h':
		case kHelp:
			*help = true;
			return "";
		default:
			return getopt_error(c, argv);
		}
	}
	if (std::string e = leftover_argument(argc, argv); !e.empty())
		return e;
	if (!have_uplinks)
		return "--uplinks (the leaf's uplinks, one per spine) is required";
	if (a->demands.empty())
		return "--to LEAF:FLOWS:BYTES is required (the batch to plan)";
	return "";
}

/* What each demand becomes: the quantities of Theorem 4 (§1.5's table). */
struct DemandRow {
	const PlanDemand *d;
	bool local;
	uint32_t whole, r, g, subflows;
	uint64_t min_up, max_up; /* this demand's bytes on its least and most loaded uplink */
};

std::vector<DemandRow> rows_of(const PlanArgs &a, const Plan &plan)
{
	const uint32_t s = a.params.uplinks;
	std::vector<DemandRow> rows;
	std::vector<std::vector<uint64_t>> load(a.demands.size(), std::vector<uint64_t>(s, 0));
	std::vector<uint32_t> subs(a.demands.size(), 0);
	for (const PlanSubflow &x : plan.subflows) {
		subs[x.demand]++;
		if (x.uplink != kLocalUplink)
			load[x.demand][(size_t)x.uplink] += x.bytes;
	}
	for (size_t i = 0; i < a.demands.size(); i++) {
		const PlanDemand &d = a.demands[i];
		DemandRow row{&d, d.leaf == a.params.local_leaf, d.flows / s, d.flows % s, 0, subs[i], 0, 0};
		row.g = std::gcd(row.r, s);
		auto [lo, hi] = std::minmax_element(load[i].begin(), load[i].end());
		row.min_up = *lo, row.max_up = *hi;
		rows.push_back(row);
	}
	return rows;
}

double max_over_mean(const std::vector<uint64_t> &v)
{
	uint64_t sum = std::accumulate(v.begin(), v.end(), 0ull);
	return sum ? (double)*std::max_element(v.begin(), v.end()) * (double)v.size() / (double)sum : 0.0;
}

nlohmann::json plan_json(const PlanArgs &a, const Plan &plan)
{
	nlohmann::json demands = nlohmann::json::array(), subflows = nlohmann::json::array();
	for (const DemandRow &r : rows_of(a, plan))
		demands.push_back({{"leaf", r.d->leaf},
				   {"flows", r.d->flows},
				   {"bytes", r.d->bytes},
				   {"local", r.local},
				   {"whole_per_uplink", r.local ? 0 : r.whole},
				   {"remainder", r.local ? 0 : r.r},
				   {"gcd", r.local ? 0 : r.g},
				   {"subflows", r.subflows},
				   {"extra", r.subflows - r.d->flows},
				   {"uplink_bytes_min", r.min_up},
				   {"uplink_bytes_max", r.max_up}});
	for (const PlanSubflow &x : plan.subflows)
		subflows.push_back(
			{{"demand", x.demand},
			 {"leaf", a.demands[x.demand].leaf},
			 {"flow", x.flow},
			 {"part", x.part},
			 {"offset", x.offset},
			 {"bytes", x.bytes},
			 {"uplink", x.uplink == kLocalUplink ? nlohmann::json(nullptr) : nlohmann::json(x.uplink)}});
	return {{"uplinks", a.params.uplinks},
		{"leaf", a.params.local_leaf},
		{"split", split_rule_name(a.params.rule)},
		{"flows", plan.flows},
		{"subflows", plan.subflows.size()},
		{"extra", plan.extra()},
		{"uplink_bytes", plan.uplink_bytes},
		{"uplink_max_over_mean", max_over_mean(plan.uplink_bytes)},
		{"local_bytes", plan.local_bytes},
		{"demands", demands},
		{"plan", subflows}};
}

void print_table(const PlanArgs &a, const Plan &plan)
{
	const uint32_t s = a.params.uplinks;
	std::printf("Ethereal plan: %u uplinks, leaf %u, split %s\n\n", s, a.params.local_leaf,
		    split_rule_name(a.params.rule));
	std::printf("%6s %7s %12s %7s %5s %5s %9s %6s %14s\n", "leaf", "flows", "bytes", "whole/u", "r", "g",
		    "subflows", "extra", "bytes/uplink");
	for (const DemandRow &r : rows_of(a, plan)) {
		if (r.local) {
			std::printf("%6u %7u %12llu %7s %5s %5s %9u %6u %14s\n", r.d->leaf, r.d->flows,
				    (unsigned long long)r.d->bytes, "-", "-", "-", r.subflows, 0u, "(own leaf)");
			continue;
		}
		std::string per = std::to_string(r.min_up);
		if (r.max_up != r.min_up)
			per += ".." + std::to_string(r.max_up);
		std::printf("%6u %7u %12llu %7u %5u %5u %9u %6u %14s\n", r.d->leaf, r.d->flows,
			    (unsigned long long)r.d->bytes, r.whole, r.r, r.g, r.subflows, r.subflows - r.d->flows,
			    per.c_str());
	}
	auto [lo, hi] = std::minmax_element(plan.uplink_bytes.begin(), plan.uplink_bytes.end());
	std::printf("\n%llu flows -> %zu subflows (%llu extra); uplink bytes %llu..%llu, max/mean %.4f",
		    (unsigned long long)plan.flows, plan.subflows.size(), (unsigned long long)plan.extra(),
		    (unsigned long long)*lo, (unsigned long long)*hi, max_over_mean(plan.uplink_bytes));
	if (plan.local_bytes)
		std::printf("; own leaf %llu bytes", (unsigned long long)plan.local_bytes);
	std::printf("\n");
	if (!a.list)
		return;
	std::printf("\n%6s %6s %6s %5s %12s %12s %7s\n", "demand", "leaf", "flow", "part", "offset", "bytes", "uplink");
	for (const PlanSubflow &x : plan.subflows)
		std::printf("%6u %6u %6u %5u %12llu %12llu %7s\n", x.demand, a.demands[x.demand].leaf, x.flow, x.part,
			    (unsigned long long)x.offset, (unsigned long long)x.bytes,
			    x.uplink == kLocalUplink ? "-" : std::to_string(x.uplink).c_str());
}

} // namespace

int run_plan(int argc, char **argv)
{
	PlanArgs a;
	bool help = false;
	if (std::string e = parse(argc, argv, &a, &help); !e.empty()) {
		std::fprintf(stderr, "lumen-dp plan: %s\n", e.c_str());
		return 2;
	}
	if (help) {
		std::printf("%s", kUsage);
		return 0;
	}
	Plan plan;
	if (std::string e = ethereal_plan(a.params, a.demands, &plan); !e.empty()) {
		std::fprintf(stderr, "lumen-dp plan: %s\n", e.c_str());
		return 2;
	}
	if (a.json.empty()) {
		print_table(a, plan);
		return 0;
	}
	std::string text = plan_json(a, plan).dump(1) + "\n";
	if (a.json == "-") {
		std::fputs(text.c_str(), stdout);
		return 0;
	}
	std::ofstream f(a.json);
	if (!(f << text) || !(f.close(), f)) {
		std::fprintf(stderr, "lumen-dp plan: cannot write %s: %s\n", a.json.c_str(), std::strerror(errno));
		return 1;
	}
	return 0;
}

} // namespace lumen::dp
