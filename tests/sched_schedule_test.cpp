// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/sched_schedule_test.cpp - the schedule file (userspace/sched):
// validation and its messages, JSON in and out, round robin's structure,
// and the capacity computed from the matchings.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

#include "base/error.h"
#include "base/system.h"
#include "sched/demand.h"
#include "sched/report.h"
#include "sched/schedule.h"
#include "test_refusal.h"

namespace
{

using lumen::UsageError;
using namespace lumen::sched;

Timing timing(uint64_t slot = 100'000, uint64_t guard = 10'000)
{
	Timing t;
	t.slot_ns = slot;
	t.guard_ns = guard;
	t.t0_ns = 1'700'000'000'000'000'000ull;
	t.version = 7;
	t.link_gbps = 25;
	return t;
}

using lumen::test::refusal;

std::vector<double> ring(uint32_t n)
{
	std::vector<double> d((size_t)n * n, 0);
	for (uint32_t u = 0; u < n; u++)
		d[(size_t)u * n + (u + 1) % n] = 1;
	return d;
}

std::vector<double> uniform(uint32_t n)
{
	std::vector<double> d((size_t)n * n, 1);
	for (uint32_t u = 0; u < n; u++)
		d[(size_t)u * n + u] = 0;
	return d;
}

TEST(SchedRoundRobin, EveryPairOncePerPeriodOnDistinctUplinks)
{
	for (uint32_t n = 2; n <= 20; n++)
		for (uint32_t d = 1; d <= 4; d++)
			for (bool loops : {false, true}) {
				SCOPED_TRACE("n=" + std::to_string(n) + " d=" + std::to_string(d) +
					     (loops ? " self-loops" : ""));
				Schedule s = round_robin(n, d, loops, timing());
				EXPECT_NO_THROW(validate(s));
				uint32_t shifts = loops ? n : n - 1;
				EXPECT_EQ(s.period, (shifts + d - 1) / d);
				std::vector<uint32_t> c = circuits(s);
				for (uint32_t u = 0; u < n; u++)
					for (uint32_t v = 0; v < n; v++) {
						if (u != v) {
							EXPECT_EQ(c[(size_t)u * n + v], 1u) << u << "->" << v;
						}
					}
				/* idle positions: the padding and the self-loop shift */
				uint32_t idle = d * s.period - (n - 1);
				for (uint32_t u = 0; u < n; u++)
					EXPECT_EQ(c[(size_t)u * n + u], idle);
				std::vector<uint32_t> g = max_gaps(s);
				EXPECT_EQ(g[1], s.period); /* 0 -> 1, once per period */
			}
	Schedule t = round_robin(8, 2, true, timing());
	EXPECT_EQ(t.period, 4u); /* N / d, the thesis' convention */
	EXPECT_EQ(t.to(0, 0, 3), 3u); /* shift 0: idle */
	EXPECT_EQ(t.to(1, 0, 3), 4u);
	EXPECT_EQ(t.to(0, 1, 3), 5u);
}

TEST(SchedRoundRobin, RefusesBadShapes)
{
	EXPECT_NE(refusal([] { round_robin(1, 1, false, timing()); }).find("nodes 1"), std::string::npos);
	EXPECT_NE(refusal([] { round_robin(8, 0, false, timing()); }).find("uplinks 0"), std::string::npos);
	EXPECT_NE(refusal([] { round_robin(8, 65, false, timing()); }).find("uplinks 65"), std::string::npos);
	EXPECT_NE(refusal([] { round_robin(8, 1, false, timing(1000, 1000)); }).find("guard_ns"), std::string::npos);
}

TEST(SchedCapacity, RoundRobinThroughputIsExact)
{
	const double duty = 0.9;
	for (uint32_t n : {5u, 9u, 17u})
		for (uint32_t d : {1u, 2u, 4u}) { /* d divides n - 1 */
			Schedule s = round_robin(n, d, false, timing());
			/* all-to-all fits exactly, at the duty cycle */
			EXPECT_NEAR(single_hop_throughput(s, uniform(n)), duty, 1e-12);
			/* a ring has one circuit per period for a whole hose */
			EXPECT_NEAR(single_hop_throughput(s, ring(n)), duty / (n - 1), 1e-12);
			/* two hops: the oblivious bound, about 1/2 */
			EXPECT_NEAR(vlb_throughput(s, ring(n)), duty * n / (2.0 * (n - 1)), 1e-12);
		}
	Schedule s = round_robin(64, 1, false, timing());
	EXPECT_NEAR(vlb_throughput(s, ring(64)), 0.9 * 0.5, 0.01);
}

TEST(SchedCapacity, RefusesBadDemand)
{
	Schedule s = round_robin(4, 1, false, timing());
	std::vector<double> d = ring(4);
	EXPECT_NE(refusal([&] { single_hop_throughput(s, ring(5)); }).find("25 entries, not 4 x 4"), std::string::npos);
	d[1] = -1;
	EXPECT_NE(refusal([&] { single_hop_throughput(s, d); }).find("demand[0][1]"), std::string::npos);
	d[1] = NAN;
	EXPECT_NE(refusal([&] { vlb_throughput(s, d); }).find("demand[0][1]"), std::string::npos);
	std::vector<double> diag(16, 0);
	diag[5] = 3; /* only the diagonal */
	EXPECT_NE(refusal([&] { single_hop_throughput(s, diag); }).find("no demand"), std::string::npos);
}

TEST(SchedCapacity, WaitTable)
{
	/* node 0 reaches 1 in slots 1 and 2 of 5, on either uplink; 2 never */
	Schedule s = Schedule::idle(3, 2, 5);
	s.slot_ns = 1000;
	s.parallel = true;
	for (auto [p, t] : {std::pair{0u, 1u}, std::pair{1u, 2u}}) {
		s.to(p, t, 0) = 1;
		s.to(p, t, 1) = 0;
	}
	std::vector<uint16_t> w = wait_table(s, 0);
	const uint16_t want[5] = {1, 0, 0, 3, 2};
	for (uint32_t t = 0; t < 5; t++) {
		EXPECT_EQ(w[t * 3 + 1], want[t]) << "slot " << t;
		EXPECT_EQ(w[t * 3 + 0], 0xffff); /* itself */
		EXPECT_EQ(w[t * 3 + 2], 0xffff); /* never connected */
	}
	EXPECT_NE(refusal([&] { wait_table(s, 3); }).find("node 3 is not in the schedule"), std::string::npos);
	/* round robin: from slot t, the shift to dst comes (dst - self - 1 - t) mod (N - 1) slots later */
	Schedule rr = round_robin(6, 1, false, timing());
	for (uint32_t self = 0; self < 6; self++) {
		std::vector<uint16_t> r = wait_table(rr, self);
		for (uint32_t t = 0; t < rr.period; t++)
			for (uint32_t dst = 0; dst < 6; dst++) {
				if (dst == self)
					continue;
				uint32_t shift_slot = (dst + 6 - self) % 6 - 1;
				EXPECT_EQ(r[t * 6 + dst], (shift_slot + rr.period - t) % rr.period);
			}
	}
}

TEST(SchedCapacity, MaxGapIsCyclic)
{
	Schedule s = Schedule::idle(2, 1, 10);
	s.slot_ns = 1000;
	for (uint32_t t : {1u, 2u, 6u}) {
		s.to(0, t, 0) = 1;
		s.to(0, t, 1) = 0;
	}
	std::vector<uint32_t> g = max_gaps(s);
	EXPECT_EQ(g[1], 5u); /* 6 -> 1 + 10 */
	EXPECT_EQ(g[2], 5u);
	EXPECT_EQ(g[0], 3u); /* idle in slots 0, 3, 4, 5, 7, 8, 9 */
}

TEST(SchedFile, JsonRoundTrip)
{
	Schedule s = round_robin(6, 2, false, timing());
	Schedule back = from_json(to_json(s), "mem");
	EXPECT_EQ(back.dst, s.dst);
	EXPECT_EQ(back.t0_ns, s.t0_ns);
	EXPECT_EQ(back.version, 7u);
	EXPECT_EQ(back.generator, "round-robin");
	EXPECT_EQ(back.link_gbps, 25);

	std::string path = "/tmp/lumen-sched-test-" + std::to_string(getpid()) + ".json";
	save(s, path);
	Schedule loaded = load(path);
	EXPECT_EQ(loaded.dst, s.dst);
	EXPECT_EQ(loaded.period, s.period);
	/* one slot's matching per line */
	std::string text = lumen::read_file(path);
	EXPECT_NE(text.find("      [1,2,3,4,5,0],\n"), std::string::npos) << text;
	std::remove(path.c_str());
	EXPECT_NE(refusal([&] { load(path); }).find(path), std::string::npos);
}

// A file with one field changed: refused, with a message that says where.
std::string refusal_of(void (*edit)(nlohmann::json &))
{
	nlohmann::json j = to_json(round_robin(4, 2, false, timing()));
	edit(j);
	return refusal([&] { from_json(j, "f.json"); });
}

TEST(SchedFile, RefusesMistakesSayingWhere)
{
	struct Case {
		void (*edit)(nlohmann::json &);
		const char *says;
	} cases[] = {
		{[](nlohmann::json &j) { j["colour"] = 1; }, "f.json: colour: unknown key"},
		{[](nlohmann::json &j) { j["format"] = "x"; }, "format: expected \"lumen-schedule\""},
		{[](nlohmann::json &j) { j["format_version"] = 2; }, "version 2 is not known"},
		{[](nlohmann::json &j) { j.erase("slot_ns"); }, "missing key \"slot_ns\""},
		{[](nlohmann::json &j) { j["slot_ns"] = -5; }, "slot_ns: expected a whole number >= 0"},
		{[](nlohmann::json &j) { j["slot_ns"] = 0; }, "slot_ns must be > 0"},
		{[](nlohmann::json &j) { j["guard_ns"] = 100'000; }, "leaves nothing of slot_ns"},
		{[](nlohmann::json &j) { j["guard_at"] = "middle"; }, "neither \"end\" nor \"start\""},
		{[](nlohmann::json &j) { j["nodes"] = 1; }, "nodes 1 is not in 2..4096"},
		{[](nlohmann::json &j) { j["uplinks"] = 0; }, "uplinks 0 is not in 1..64"},
		{[](nlohmann::json &j) { j["period"] = 3; }, "matchings[0]: expected 3 slots (period), got 2"},
		{[](nlohmann::json &j) { j["nodes"] = 5; }, "matchings[0][0]: expected 5 destinations"},
		{[](nlohmann::json &j) { j["matchings"].erase(1); }, "matchings: expected 2 uplinks, got 1"},
		{[](nlohmann::json &j) { j["matchings"][0][1][2] = 9; },
		 "uplink 0, slot 1: node 2 leads to 9, not a node"},
		{[](nlohmann::json &j) { j["matchings"][0][1][2] = "x"; },
		 "matchings[0][1][2]: expected a whole number"},
		{[](nlohmann::json &j) { j["matchings"][1][0][0] = 3; }, "uplink 1, slot 0: node 3 is reached twice"},
		{[](nlohmann::json &j) { j["link_gbps"] = -1; }, "link_gbps: expected a number >= 0"},
		{[](nlohmann::json &j) { j["parallel"] = 1; }, "parallel: expected true or false"},
		{[](nlohmann::json &j) { j["period"] = 1u << 30; }, "over 16777216"},
	};
	for (const Case &c : cases) {
		std::string why = refusal_of(c.edit);
		EXPECT_NE(why.find(c.says), std::string::npos) << "expected '" << c.says << "', got '" << why << "'";
	}
}

TEST(SchedFile, ParallelCircuitsOnlyWhenDeclared)
{
	/* node 0 reaches node 1 on both uplinks in slot 0 */
	Schedule s = Schedule::idle(2, 2, 1);
	s.slot_ns = 1000;
	for (uint32_t p = 0; p < 2; p++) {
		s.to(p, 0, 0) = 1;
		s.to(p, 0, 1) = 0;
	}
	EXPECT_NE(refusal([&] { validate(s, "x"); }).find("slot 0: node 0 reaches node 1 on two uplinks"),
		  std::string::npos);
	s.parallel = true;
	EXPECT_NO_THROW(validate(s));
	EXPECT_EQ(circuits(s)[1], 2u);
}

TEST(SchedFile, RefusesWhatIsNotJson)
{
	std::string path = "/tmp/lumen-sched-bad-" + std::to_string(getpid()) + ".json";
	lumen::write_file(path, "{ nodes: 4");
	EXPECT_NE(refusal([&] { load(path); }).find("not valid JSON"), std::string::npos);
	std::remove(path.c_str());
}

TEST(SchedReport, DemandFiles)
{
	uint32_t n = 0;
	std::vector<double> d = parse_demand("# bytes\n\n0, 2.5, 1e3\n1 0 0\n  0\t7 0\n", "d.csv", &n);
	EXPECT_EQ(n, 3u);
	EXPECT_EQ(d, (std::vector<double>{0, 2.5, 1000, 1, 0, 0, 0, 7, 0}));
	struct Case {
		const char *text, *says;
	} cases[] = {
		{"0 1\n1 0 1\n", "d.csv:2: 3 entries, the first row has 2"},
		{"0 -1\n1 0\n", "d.csv:1: '-1' is not a number >= 0"},
		{"0 x\n1 0\n", "'x' is not a number"},
		{"0 1e999\n1 0\n", "'1e999' is not a number"},
		{"0 nan\n1 0\n", "'nan' is not a number"},
		{"0 1 2\n1 0 2\n", "N rows of N numbers"},
		{"0\n", "N rows of N numbers"},
		{"", "N rows of N numbers"},
	};
	for (const Case &c : cases) {
		std::string why = refusal([&] { parse_demand(c.text, "d.csv", &n); });
		EXPECT_NE(why.find(c.says), std::string::npos) << "expected '" << c.says << "', got '" << why << "'";
	}
}

TEST(SchedReport, SummaryTableAndPicture)
{
	Schedule s = round_robin(4, 1, false, timing());
	std::vector<double> d = ring(4);
	nlohmann::json j = summary(s, &d);
	EXPECT_EQ(j["period"], 3);
	EXPECT_EQ(j["circuits_min"], 1);
	EXPECT_EQ(j["circuits_max"], 1);
	EXPECT_EQ(j["unconnected_pairs"], 0);
	EXPECT_EQ(j["max_gap_slots"], 3);
	EXPECT_EQ(j["max_wait_ns"], 300'000);
	EXPECT_NEAR(j["single_hop_throughput"].get<double>(), 0.3, 1e-12);
	EXPECT_NE(summary_text(s, &d).find("single-hop throughput 0.3000"), std::string::npos);
	EXPECT_EQ(slot_table(s, 2), "uplink 0 (the first 2 of 3 slots)\n"
				    "  node | 0 1\n"
				    "     0 | 1 2\n"
				    "     1 | 2 3\n"
				    "     2 | 3 0\n"
				    "     3 | 0 1\n");
	/* a pair never connected is reported */
	Schedule idle = Schedule::idle(3, 1, 2);
	idle.slot_ns = 1000;
	EXPECT_EQ(summary(idle, nullptr)["unconnected_pairs"], 6);
	std::string gp = plot_script(s, "m.png");
	EXPECT_NE(gp.find("set output 'm.png'"), std::string::npos);
	EXPECT_NE(gp.find("plot $uplink0 using 1:2:3 with image"), std::string::npos);
	EXPECT_NE(gp.find("0 3 0\n"), std::string::npos); /* slot 0, node 3 -> 0 */
}

} // namespace
