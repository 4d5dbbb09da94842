// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// Ethereal's planner (dpdk/transport/ethereal_plan.h): the worked table of
// the spec (all-to-all and 4-channel ring on 16 uplinks, and three more
// rows), properties over random batches checked against the plan's own
// subflows (every byte once, per-uplink loads f*n/s, the extra flows of
// Theorem 4 and of the wrap rule, the distinct uplinks of a flow's parts,
// the total balance across demands), the wrap rule's lower bound by
// exhaustive search on small cases, and every refusal.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <vector>

#include "test_rng.h"
#include "transport/ethereal_plan.h"

namespace
{

using namespace lumen::dp;

Plan plan_ok(const PlanParams &p, const std::vector<PlanDemand> &d)
{
	Plan out;
	std::string e = ethereal_plan(p, d, &out);
	EXPECT_EQ(e, "");
	return out;
}

PlanParams params(uint32_t s, SplitRule rule = SplitRule::kEqual)
{
	PlanParams p;
	p.uplinks = s;
	p.local_leaf = 0;
	p.rule = rule;
	p.max_subflows = 1u << 24;
	return p;
}

// Bytes each uplink carries for one demand, from the plan's subflows.
std::vector<uint64_t> demand_load(const Plan &plan, uint32_t demand, uint32_t s)
{
	std::vector<uint64_t> load(s, 0);
	for (const PlanSubflow &x : plan.subflows)
		if (x.demand == demand && x.uplink != kLocalUplink)
			load[(size_t)x.uplink] += x.bytes;
	return load;
}

// Every flow of every demand covered exactly once, in part order, its parts
// on distinct uplinks; the plan's totals agree with its subflows.
void check_cover(const Plan &plan, const std::vector<PlanDemand> &demands, uint32_t s, uint32_t local)
{
	std::map<std::pair<uint32_t, uint32_t>, std::vector<PlanSubflow>> by_flow;
	std::vector<uint64_t> up(s, 0);
	uint64_t loc = 0;
	for (const PlanSubflow &x : plan.subflows) {
		ASSERT_LT(x.demand, demands.size());
		ASSERT_LT(x.flow, demands[x.demand].flows);
		ASSERT_GT(x.bytes, 0u);
		by_flow[{x.demand, x.flow}].push_back(x);
		if (x.uplink == kLocalUplink) {
			ASSERT_EQ(demands[x.demand].leaf, local);
			loc += x.bytes;
		} else {
			ASSERT_GE(x.uplink, 0);
			ASSERT_LT((uint32_t)x.uplink, s);
			ASSERT_NE(demands[x.demand].leaf, local);
			up[(size_t)x.uplink] += x.bytes;
		}
	}
	EXPECT_EQ(up, plan.uplink_bytes);
	EXPECT_EQ(loc, plan.local_bytes);
	uint64_t flows = 0;
	for (uint32_t d = 0; d < demands.size(); d++) {
		flows += demands[d].flows;
		for (uint32_t f = 0; f < demands[d].flows; f++) {
			const auto &parts = by_flow[{d, f}];
			ASSERT_FALSE(parts.empty()) << "demand " << d << " flow " << f;
			uint64_t at = 0;
			std::set<int32_t> ups;
			for (uint32_t i = 0; i < parts.size(); i++) {
				EXPECT_EQ(parts[i].part, i);
				EXPECT_EQ(parts[i].offset, at);
				at += parts[i].bytes;
				EXPECT_TRUE(ups.insert(parts[i].uplink).second) << "two parts of a flow on one uplink";
			}
			EXPECT_EQ(at, demands[d].bytes);
		}
	}
	EXPECT_EQ(plan.flows, flows);
	EXPECT_EQ(plan.extra(), plan.subflows.size() - flows);
}

struct Row {
	uint32_t s, n;
	uint64_t f;
	uint32_t split; // subflows per remainder flow
	uint64_t per_uplink;
	uint32_t extra;
};

// The spec's table (ethereal_reps.md §1.5); f = 1 MiB divides every split.
TEST(EtherealPlan, WorkedTable)
{
	const uint64_t f = 1 << 20;
	const Row rows[] = {
		{16, 16, f, 1, f, 0}, // all-to-all, 256 servers in 16 leaves: no split
		{16, 4, f, 4, f / 4, 12}, // 4-channel ring: x4, 16 subflows at the NIC
		{8, 3, f, 8, 3 * f / 8, 21}, {8, 12, f, 2, 3 * f / 2, 4}, {16, 6, f, 8, 3 * f / 8, 42},
	};
	for (const Row &row : rows) {
		SCOPED_TRACE("s=" + std::to_string(row.s) + " n=" + std::to_string(row.n));
		std::vector<PlanDemand> d = {{1, row.n, row.f}};
		Plan plan = plan_ok(params(row.s), d);
		check_cover(plan, d, row.s, 0);
		EXPECT_EQ(plan.extra(), row.extra);
		EXPECT_EQ(plan.subflows.size(), row.n + row.extra);
		for (uint64_t b : plan.uplink_bytes)
			EXPECT_EQ(b, row.per_uplink);
		uint32_t r = row.n % row.s;
		for (const PlanSubflow &x : plan.subflows) {
			EXPECT_EQ(x.bytes, x.flow >= row.n - r ? row.f / row.split : row.f);
		}
		EXPECT_EQ(ethereal_subflows(row.n, row.f, row.s, SplitRule::kEqual), row.n + row.extra);
	}
}

// The ring's four flows on 16 uplinks take 16 distinct uplinks; the
// all-to-all's sixteen take one each.
TEST(EtherealPlan, SeedCasesUseEveryUplinkOnce)
{
	for (uint32_t n : {4u, 16u}) {
		Plan plan = plan_ok(params(16), {{3, n, 16384}});
		std::set<int32_t> ups;
		for (const PlanSubflow &x : plan.subflows)
			ups.insert(x.uplink);
		EXPECT_EQ(ups.size(), 16u);
		EXPECT_EQ(plan.subflows.size(), 16u);
	}
}

// The wrap rule: s - g extra flows where the equal rule needs r(s-g)/g.
TEST(EtherealPlan, WrapRuleTable)
{
	const uint64_t f = 1 << 20;
	const struct {
		uint32_t s, n, extra;
	} rows[] = {{16, 16, 0}, {16, 4, 12}, {8, 3, 7}, {8, 12, 4}, {16, 6, 14}, {16, 17, 15}};
	for (const auto &row : rows) {
		SCOPED_TRACE("s=" + std::to_string(row.s) + " n=" + std::to_string(row.n));
		std::vector<PlanDemand> d = {{1, row.n, f}};
		Plan plan = plan_ok(params(row.s, SplitRule::kWrap), d);
		check_cover(plan, d, row.s, 0);
		EXPECT_EQ(plan.extra(), row.extra);
		for (uint64_t b : plan.uplink_bytes)
			EXPECT_EQ(b, f * row.n / row.s);
	}
}

TEST(EtherealPlan, IntraLeafUsesNoUplink)
{
	std::vector<PlanDemand> d = {{2, 3, 1000}, {5, 7, 1000}};
	PlanParams p = params(4);
	p.local_leaf = 2;
	Plan plan = plan_ok(p, d);
	check_cover(plan, d, 4, 2);
	EXPECT_EQ(plan.local_bytes, 3000u);
	for (const PlanSubflow &x : plan.subflows)
		EXPECT_EQ(x.uplink == kLocalUplink, x.demand == 0);
	EXPECT_EQ(std::accumulate(plan.uplink_bytes.begin(), plan.uplink_bytes.end(), 0ull), 7000u);
}

// Random batches: every property the header states, both rules.
TEST(EtherealPlan, RandomBatchProperties)
{
	lumen::test::Rng rng(0xe7e2ea1);
	for (int iter = 0; iter < 3000; iter++) {
		const uint32_t s = (uint32_t)rng.range(1, iter % 10 ? 16 : 64);
		const SplitRule rule = iter & 1 ? SplitRule::kWrap : SplitRule::kEqual;
		std::vector<PlanDemand> d;
		for (int k = (int)rng.range(1, 4); k > 0; k--)
			d.push_back({(uint32_t)rng.range(0, 5), (uint32_t)rng.range(0, 3 * s + 2),
				     rng.chance(20) ? rng.range(1, 40) : rng.range(1, 3u << 20)});
		SCOPED_TRACE("iter " + std::to_string(iter) + " s=" + std::to_string(s) + " " + split_rule_name(rule));
		PlanParams p = params(s, rule);
		p.local_leaf = 0;
		Plan plan = plan_ok(p, d);
		check_cover(plan, d, s, 0);
		uint64_t expect_subflows = 0;
		for (uint32_t i = 0; i < d.size(); i++) {
			const uint64_t n = d[i].flows, f = d[i].bytes;
			if (d[i].leaf == 0) {
				expect_subflows += n;
				continue;
			}
			const uint64_t r = n % s, g = std::gcd(r, (uint64_t)s);
			const uint64_t subs = ethereal_subflows(n, f, s, rule);
			expect_subflows += subs;
			/* the extra flows: Theorem 4's where every part has a byte, the
			 * wrap rule's s - g where the shares are whole, never more
			 * than the equal rule */
			if (rule == SplitRule::kEqual && r && f >= s / g) {
				EXPECT_EQ(subs - n, r * (s - g) / g);
			}
			if (rule == SplitRule::kWrap && r && (r * f) % s == 0) {
				EXPECT_EQ(subs - n, s - g);
			}
			if (rule == SplitRule::kWrap && r) {
				EXPECT_LE(subs - n, s - g);
			}
			EXPECT_LE(ethereal_subflows(n, f, s, SplitRule::kWrap),
				  ethereal_subflows(n, f, s, SplitRule::kEqual));
			if (!r) {
				EXPECT_EQ(subs, n);
			}
			/* a demand's load per uplink: f*n/s, within r/g bytes (equal)
			 * or one byte (wrap), so well within one MTU */
			const std::vector<uint64_t> load = demand_load(plan, i, s);
			const uint64_t slack = rule == SplitRule::kEqual ? (r ? r / g : 0) : 1;
			for (uint64_t b : load) {
				EXPECT_LE(b, (n * f + s - 1) / s + slack);
				EXPECT_GE(b + slack, n * f / s);
				EXPECT_LE(slack, 1500u);
			}
		}
		EXPECT_EQ(plan.subflows.size(), expect_subflows);
		/* across demands the uplinks never differ by more than a byte */
		auto [lo, hi] = std::minmax_element(plan.uplink_bytes.begin(), plan.uplink_bytes.end());
		EXPECT_LE(*hi - *lo, 1u);
		/* deterministic */
		Plan again = plan_ok(p, d);
		ASSERT_EQ(again.subflows.size(), plan.subflows.size());
		for (size_t k = 0; k < plan.subflows.size(); k++)
			EXPECT_EQ(again.subflows[k].uplink, plan.subflows[k].uplink);
	}
}

// Theorem 4's minimality among equal splits: a split factor gamma balances
// r flows on s uplinks only if r*gamma/s parts land on each, a whole
// number; s/g is the least gamma for which it is.
TEST(EtherealPlan, EqualSplitFactorIsTheLeast)
{
	for (uint32_t s = 1; s <= 64; s++)
		for (uint32_t r = 1; r < s; r++) {
			const uint32_t g = std::gcd(r, s);
			for (uint32_t gamma = 1; gamma < s / g; gamma++)
				EXPECT_NE((r * gamma) % s, 0u) << "s=" << s << " r=" << r << " gamma=" << gamma;
			EXPECT_EQ((r * (s / g)) % s, 0u);
			Plan plan = plan_ok(params(s), {{1, r, 5040ull * s}});
			EXPECT_EQ(plan.subflows.size(), (uint64_t)r * s / g);
		}
}

// The wrap rule's lower bound, r + s - g pieces for a balanced plan, by
// exhaustive search on small cases. Flows of f = s units and uplinks of r
// units (every cut the wrap rule makes is on a unit): fill an r x s matrix
// of units per (flow, uplink), rows summing to s and columns to r, cell by
// cell, and find the fewest cells that are not zero.
uint32_t fewest_pieces(uint32_t r, uint32_t s)
{
	std::vector<uint32_t> row_left(r, s), col_left(s, r);
	uint32_t best = UINT32_MAX;
	std::function<void(uint32_t, uint32_t)> go = [&](uint32_t cell, uint32_t pieces) {
		const uint32_t fl = cell / s, u = cell % s;
		/* every flow not yet begun needs a piece at least */
		const uint32_t need = fl < r ? r - fl - (row_left[fl] < s ? 1 : 0) : 0;
		if (pieces + need >= best)
			return;
		if (cell == r * s) {
			best = std::min(best, pieces);
			return;
		}
		const uint32_t most = std::min(row_left[fl], col_left[u]);
		/* the row's last cell takes what the row has left */
		const uint32_t least = u == s - 1 ? row_left[fl] : 0;
		for (uint32_t k = most + 1; k-- > least;) {
			row_left[fl] -= k;
			col_left[u] -= k;
			go(cell + 1, pieces + (k ? 1 : 0));
			row_left[fl] += k;
			col_left[u] += k;
		}
	};
	go(0, 0);
	return best;
}

TEST(EtherealPlan, WrapRuleIsTheFewestPieces)
{
	for (uint32_t s = 2; s <= 6; s++)
		for (uint32_t r = 1; r < s; r++) {
			const uint32_t g = std::gcd(r, s);
			EXPECT_EQ(fewest_pieces(r, s), r + s - g) << "s=" << s << " r=" << r;
			EXPECT_EQ(ethereal_subflows(r, s, s, SplitRule::kWrap), r + s - g);
		}
}

TEST(EtherealPlan, Refusals)
{
	Plan out;
	out.local_bytes = 77;
	const std::vector<PlanDemand> ok = {{1, 4, 1000}};
	PlanParams p = params(16);
	const struct {
		uint32_t uplinks;
		std::vector<PlanDemand> d;
		const char *what;
	} bad[] = {
		{0, ok, "uplinks: 0"},
		{kPlanMaxUplinks + 1, ok, "uplinks: 1025"},
		{16, {{1, kPlanMaxFlows + 1, 10}}, "flows, more than"},
		{16, {{1, 3, 0}}, "a flow of 0 bytes"},
		{16, {{1, 3, kPlanMaxBytes + 1}}, "a flow of"},
		{16, std::vector<PlanDemand>(5, PlanDemand{1, kPlanMaxFlows, kPlanMaxBytes}), "the batch's bytes"},
	};
	for (const auto &b : bad) {
		p.uplinks = b.uplinks;
		std::string e = ethereal_plan(p, b.d, &out);
		EXPECT_NE(e.find(b.what), std::string::npos) << e;
		EXPECT_EQ(out.local_bytes, 77u);
		EXPECT_TRUE(out.subflows.empty());
	}
	/* the NIC's cap, with the wrap rule's count when it would fit */
	p.uplinks = 16;
	p.max_subflows = 40;
	std::string e = ethereal_plan(p, {{1, 6, 1 << 20}}, &out);
	EXPECT_NE(e.find("needs 48 subflows, more than the NIC's 40 (the wrap rule needs 20)"), std::string::npos) << e;
	p.rule = SplitRule::kWrap;
	EXPECT_EQ(ethereal_plan(p, {{1, 6, 1 << 20}}, &out), "");
	EXPECT_EQ(out.subflows.size(), 20u);
	/* zero flows is an empty demand, not an error */
	EXPECT_EQ(ethereal_plan(p, {{1, 0, 0}}, &out), "");
	EXPECT_TRUE(out.subflows.empty());
}

TEST(EtherealPlan, RuleNames)
{
	SplitRule r;
	EXPECT_TRUE(split_rule_from_name("wrap", &r));
	EXPECT_EQ(r, SplitRule::kWrap);
	EXPECT_TRUE(split_rule_from_name("equal", &r));
	EXPECT_EQ(r, SplitRule::kEqual);
	EXPECT_FALSE(split_rule_from_name("Equal", &r));
	EXPECT_FALSE(split_rule_from_name("", &r));
}

} // namespace
