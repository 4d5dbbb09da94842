// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/experiment/experiment_collective_report.cpp - the report of a
// collective study (experiment_collective_report.h).
#include "experiment/experiment_collective_report.h"

#include "base/system.h"
#include "experiment/experiment_collective.h"
#include "testbed/testbed.h"

#include <algorithm>
#include <cstdio>
#include <functional>

namespace lumen
{

using nlohmann::json;

std::string CollRun::tag() const
{
	return case_name + "-" + coll.label() + "-" + std::to_string(bytes) + "-" + policy +
	       (randomize ? "-rnd" : "-fifo") + "-s" + std::to_string(seed);
}

std::string CollRun::cell() const
{
	return case_name + "," + coll.label() + "," + std::to_string(bytes) + "," + policy + "," +
	       (randomize ? "1" : "0");
}

namespace
{

// The numbers averaged over the seeds of a cell, in the order of the CSV.
struct CellMetric {
	const char *name;
	std::function<double(const CollRun &)> get;
};

const std::vector<CellMetric> &cell_metrics()
{
	static const std::vector<CellMetric> m = {
		{"cct_ms", [](const CollRun &r) { return r.time_us / 1e3; }},
		{"step_cct_max_ms",
		 [](const CollRun &r) {
			 return r.step_cct_us.empty()
					? 0
					: *std::max_element(r.step_cct_us.begin(), r.step_cct_us.end()) / 1e3;
		 }},
		{"algbw_mbyte_s", [](const CollRun &r) { return r.algbw * 1e3; }},
		{"busbw_mbyte_s", [](const CollRun &r) { return r.busbw * 1e3; }},
		{"uplink_max_mean", [](const CollRun &r) { return r.uplink_max_mean; }},
		{"spine_queue_p99_kb", [](const CollRun &r) { return r.spine_q.p99_kb; }},
		{"spine_queue_max_kb", [](const CollRun &r) { return r.spine_q.max_kb; }},
		{"downlink_queue_p99_kb", [](const CollRun &r) { return r.down_q.p99_kb; }},
		{"downlink_queue_max_kb", [](const CollRun &r) { return r.down_q.max_kb; }},
		{"retransmits",
		 [](const CollRun &r) { return r.counters.count("retransmits") ? r.counters.at("retransmits") : 0; }},
		{"timeouts",
		 [](const CollRun &r) { return r.counters.count("timeouts") ? r.counters.at("timeouts") : 0; }},
		{"nacks",
		 [](const CollRun &r) { return r.counters.count("nacks_rcvd") ? r.counters.at("nacks_rcvd") : 0; }},
		{"reroutes",
		 [](const CollRun &r) { return r.counters.count("reroutes") ? r.counters.at("reroutes") : 0; }},
		{"spurious_rtos",
		 [](const CollRun &r) {
			 return r.counters.count("spurious_rtos") ? r.counters.at("spurious_rtos") : 0;
		 }},
		{"reroutes_undone",
		 [](const CollRun &r) {
			 return r.counters.count("reroutes_undone") ? r.counters.at("reroutes_undone") : 0;
		 }},
		{"reorder_max",
		 [](const CollRun &r) { return r.counters.count("reorder_max") ? r.counters.at("reorder_max") : 0; }},
		{"subflows", [](const CollRun &r) { return double(r.subflows); }},
		{"busiest_link_util", [](const CollRun &r) { return r.busiest_util; }}};
	return m;
}

struct Cell {
	const CollRun *first = nullptr; // its parameters
	std::vector<const CollRun *> runs; // the seeds that completed
	std::size_t failed = 0, unfinished = 0;
	std::map<std::string, SeedSpread> stat;
};

std::vector<Cell> cells_of(const std::vector<CollRun> &runs)
{
	std::vector<Cell> cells;
	std::map<std::string, std::size_t> at;
	for (const auto &r : runs) {
		auto it = at.find(r.cell());
		if (it == at.end()) {
			it = at.emplace(r.cell(), cells.size()).first;
			cells.push_back({});
			cells.back().first = &r;
		}
		Cell &c = cells[it->second];
		if (r.unfinished)
			c.unfinished++;
		else if (r.error.empty())
			c.runs.push_back(&r);
		else
			c.failed++;
	}
	for (auto &c : cells)
		for (const auto &m : cell_metrics()) {
			std::vector<double> v;
			for (const CollRun *r : c.runs)
				v.push_back(m.get(*r));
			c.stat[m.name] = seed_spread(v);
		}
	return cells;
}

std::string size_name(std::uint64_t b)
{
	if (b % (1 << 20) == 0)
		return std::to_string(b >> 20) + "M";
	if (b % 1024 == 0)
		return std::to_string(b >> 10) + "K";
	return std::to_string(b);
}

json run_json(const CollRun &r)
{
	json j = {{"case", r.case_name},
		  {"collective", r.coll.collective},
		  {"channels", r.coll.channels},
		  {"bytes", r.bytes},
		  {"policy", r.policy},
		  {"randomize", r.randomize},
		  {"seed", r.seed},
		  {"error", r.error},
		  {"wrong_ranks", r.wrong_ranks},
		  {"unfinished", r.unfinished}};
	for (const auto &m : cell_metrics())
		j[m.name] = m.get(r);
	j["step_cct_us"] = r.step_cct_us;
	json steps = json::array();
	for (const CollStep &s : r.steps) {
		json x = {{"cct_us", s.cct_us},
			  {"uplink_max_mean", s.uplink_max_mean},
			  {"spine_queue_p99_kb", s.spine_q.p99_kb},
			  {"spine_queue_max_kb", s.spine_q.max_kb},
			  {"downlink_queue_p99_kb", s.down_q.p99_kb},
			  {"downlink_queue_max_kb", s.down_q.max_kb},
			  {"samples", s.samples}};
		if (s.start_ns && s.start_ns >= r.start_ns)
			x["start_ms"] = double(s.start_ns - r.start_ns) / 1e6;
		for (const auto &[k, v] : s.counters)
			x[k] = v;
		steps.push_back(x);
	}
	j["steps"] = steps;
	if (r.fail_ns) // after the start; beyond time_us: the collective was over before the failure
		j["failed_after_ms"] = r.fail_ns > r.start_ns ? double(r.fail_ns - r.start_ns) / 1e6 : 0.0;
	j["uplink_bytes"] = r.uplink_bytes;
	j["healed_bytes"] = r.healed_bytes;
	if (r.summary.is_object() && r.summary.contains("collective"))
		j["uplinks"] = r.summary["collective"].value("uplinks", json::object());
	return j;
}

} // namespace

void write_collective_report(const DpPlan &plan, const std::vector<CollRun> &runs, std::uint64_t base_rtt_ns,
			     double minutes)
{
	const std::vector<Cell> cells = cells_of(runs);
	json doc = {{"experiment", json::parse(experiment_to_json(plan.spec))},
		    {"topology", json::parse(topology_to_json(plan.topo))},
		    {"base_rtt_us", double(base_rtt_ns) / 1e3},
		    {"minutes", minutes},
		    {"runs", json::array()},
		    {"cells", json::array()}};
	std::string runs_csv = "case,collective,channels,bytes,policy,randomize,seed,unfinished,error",
		    csv = "case,collective,channels,bytes,"
			  "policy,randomize,seeds,failed,unfinished";
	for (const auto &m : cell_metrics()) {
		runs_csv += std::string(",") + m.name;
		csv += std::string(",") + m.name + "_mean," + m.name + "_sd";
	}
	runs_csv += "\n";
	csv += "\n";
	for (const auto &r : runs) {
		doc["runs"].push_back(run_json(r));
		std::string e = r.error.substr(0, r.error.find('\n'));
		std::replace(e.begin(), e.end(), ',', ';');
		runs_csv += r.case_name + "," + r.coll.collective + "," + std::to_string(r.coll.channels) + "," +
			    std::to_string(r.bytes) + "," + r.policy + "," + (r.randomize ? "1" : "0") + "," +
			    std::to_string(r.seed) + "," + (r.unfinished ? "1," : "0,") + e;
		for (const auto &m : cell_metrics())
			runs_csv += dp_fmt(",%.4g", m.get(r));
		runs_csv += "\n";
	}
	std::printf("\n%-8s %-13s %5s %-9s %4s %2s %15s %8s %7s %13s %13s %6s %5s %5s %5s %5s %5s %5s\n", "case",
		    "collective", "size", "policy", "rand", "n", "CCT ms (sd)", "busbwMB/s", "upl m/m", "spineQ p99/mx",
		    "downQ p99/mx", "retx", "RTOs", "NACKs", "rerte", "undo", "subfl", "util%");
	for (const auto &c : cells) {
		const CollRun &f = *c.first;
		json j = {{"case", f.case_name},	 {"collective", f.coll.collective},
			  {"channels", f.coll.channels}, {"bytes", f.bytes},
			  {"policy", f.policy},		 {"randomize", f.randomize},
			  {"seeds", c.runs.size()},	 {"failed", c.failed},
			  {"unfinished", c.unfinished}};
		csv += f.case_name + "," + f.coll.collective + "," + std::to_string(f.coll.channels) + "," +
		       std::to_string(f.bytes) + "," + f.policy + "," + (f.randomize ? "1" : "0") + "," +
		       std::to_string(c.runs.size()) + "," + std::to_string(c.failed) + "," +
		       std::to_string(c.unfinished);
		for (const auto &m : cell_metrics()) {
			const SeedSpread &s = c.stat.at(m.name);
			j[m.name] = {{"mean", s.mean}, {"sd", s.sd}, {"min", s.min}, {"max", s.max}};
			csv += dp_fmt(",%.4g", s.mean) + dp_fmt(",%.4g", s.sd);
		}
		csv += "\n";
		doc["cells"].push_back(j);
		auto mean = [&c](const char *k) { return c.stat.at(k).mean; };
		char cct[32], sq[32], dq[32];
		std::snprintf(cct, sizeof(cct), "%.1f (%.1f)", mean("cct_ms"), c.stat.at("cct_ms").sd);
		std::snprintf(sq, sizeof(sq), "%.1f/%.1f", mean("spine_queue_p99_kb"), mean("spine_queue_max_kb"));
		std::snprintf(dq, sizeof(dq), "%.1f/%.1f", mean("downlink_queue_p99_kb"),
			      mean("downlink_queue_max_kb"));
		std::printf("%-8s %-13s %5s %-9s %4s %2zu %15s %8.2f %7.2f %13s %13s %6.0f %5.0f %5.0f %5.0f %5.0f "
			    "%5.0f %5.0f%s\n",
			    f.case_name.c_str(), f.coll.label().c_str(), size_name(f.bytes).c_str(), f.policy.c_str(),
			    f.randomize ? "yes" : "no", c.runs.size(), cct, mean("busbw_mbyte_s"),
			    mean("uplink_max_mean"), sq, dq, mean("retransmits"), mean("timeouts"), mean("nacks"),
			    mean("reroutes"), mean("reroutes_undone"), mean("subflows"),
			    100 * mean("busiest_link_util"),
			    (std::string(c.unfinished ? "  " + std::to_string(c.unfinished) + " unfinished" : "") +
			     (c.failed ? "  " + std::to_string(c.failed) + " FAILED" : ""))
				    .c_str());
	}
	std::printf("(means over the seeds, n of them completed; upl m/m: the worst leaf's max/mean of the bytes its "
		    "uplinks carried during the collective; queues in KB sampled every 1 ms; undo: reroutes undone "
		    "because their RTO was spurious; util%%: the busiest "
		    "fabric port's utilisation during the collective, as built)\n");
	// did the machine keep up? The fabric set the pace when its busiest port
	// was near its rate during the large collectives and lumen-dp never
	// found a port's TX ring full
	std::vector<double> util;
	double full = 0;
	std::uint64_t big = 0;
	for (const auto &r : runs)
		big = std::max(big, r.bytes);
	for (const auto &r : runs) {
		full += r.counters.count("dp_tx_full") ? r.counters.at("dp_tx_full") : 0;
		if (r.error.empty() && r.case_name == "healthy" && r.bytes == big)
			util.push_back(r.busiest_util);
	}
	const SeedSpread u = seed_spread(util);
	const bool kept_up = u.n && u.mean >= 0.7 && full == 0;
	const std::string verdict =
		dp_fmt("busiest fabric port during the healthy %.0f KB collectives: ", double(big) / 1024) +
		dp_fmt("%.0f%%", 100 * u.mean) + dp_fmt(" of its rate on average (min %.0f%%", 100 * u.min) +
		dp_fmt(", max %.0f%%)", 100 * u.max) +
		dp_fmt("; lumen-dp found a port's TX ring full or no mbuf %.0f times: ", full) +
		(kept_up ? "the fabric set the pace (lumen-dp's lcore and the routers kept up)"
			 : "the links were not the only limit (lumen-dp's lcore or the routers fell behind)");
	doc["kept_up"] = {{"verdict", kept_up},
			  {"busiest_util_mean", u.mean},
			  {"busiest_util_min", u.min},
			  {"tx_full", full},
			  {"text", verdict}};
	std::printf("%s\nstudy: %zu runs in %.1f min\n\n", verdict.c_str(), runs.size(), minutes);
	write_file(plan.dir + "/results.json", doc.dump(2) + "\n");
	write_file(plan.dir + "/results.csv", csv);
	write_file(plan.dir + "/runs.csv", runs_csv);
}

namespace
{

const CollRun *find_run(const std::vector<CollRun> &runs, const std::function<bool(const CollRun &)> &want)
{
	for (const auto &r : runs)
		if (r.error.empty() && want(r))
			return &r;
	return nullptr;
}

// CCT per policy, randomized and not side by side, one panel per case,
// collective and size; error bars: sd over the seeds.
PlotScript cct_plot(const std::vector<Cell> &cells)
{
	std::vector<std::string> panels;
	for (const auto &c : cells) {
		const std::string p =
			c.first->case_name + " " + c.first->coll.label() + " " + size_name(c.first->bytes);
		if (std::find(panels.begin(), panels.end(), p) == panels.end())
			panels.push_back(p);
	}
	const std::size_t cols = std::min<std::size_t>(4, panels.size()), rows = (panels.size() + cols - 1) / cols;
	std::string blocks, cmds;
	for (std::size_t k = 0; k < panels.size(); k++) {
		std::vector<std::string> policies;
		std::map<std::string, std::pair<const Cell *, const Cell *>> by; // policy -> (randomized, fifo)
		for (const auto &c : cells) {
			const std::string p =
				c.first->case_name + " " + c.first->coll.label() + " " + size_name(c.first->bytes);
			if (p != panels[k])
				continue;
			if (!by.count(c.first->policy))
				policies.push_back(c.first->policy);
			(c.first->randomize ? by[c.first->policy].first : by[c.first->policy].second) = &c;
		}
		blocks += "$cct" + std::to_string(k) + " << EOD\n";
		for (const auto &pol : policies) {
			auto v = [](const Cell *c, bool sd) {
				if (!c || c->runs.empty())
					return std::string("0");
				const SeedSpread &s = c->stat.at("cct_ms");
				return dp_fmt("%.3f", sd ? s.sd : s.mean);
			};
			blocks += pol + " " + v(by[pol].first, false) + " " + v(by[pol].first, true) + " " +
				  v(by[pol].second, false) + " " + v(by[pol].second, true) + "\n";
		}
		blocks += "EOD\n";
		cmds += "set title '" + panels[k] + "'\nplot $cct" + std::to_string(k) +
			" using 2:3:xtic(1) title 'randomized', '' using 4:5 title 'FIFO (--no-randomize)'\n";
	}
	std::string s = blocks + "set terminal pngcairo size " + std::to_string(360 * cols) + "," +
			std::to_string(300 * rows) +
			" font ',9' noenhanced\nset output 'cct.png'\nset multiplot layout " + std::to_string(rows) +
			"," + std::to_string(cols) +
			"\nset style data histograms\nset style histogram errorbars gap 1 lw 1\nset style fill solid "
			"0.6 border -1\nset ylabel 'CCT (ms)'\nset yrange [0:*]\nset grid ytics\nset key top left\n" +
			cmds + "unset multiplot\n";
	return {"cct", "collective completion time per policy", s};
}

} // namespace

std::vector<PlotScript> collective_plots(const std::vector<CollRun> &runs, const TopologySpec &topo,
					 const std::vector<PortInfo> &ports)
{
	std::vector<PlotScript> plots;
	if (runs.empty())
		return plots;
	const std::vector<Cell> cells = cells_of(runs);
	plots.push_back(cct_plot(cells));

	// the repetitive incast: the queue of the first receiver's ToR downlink
	// (its port index among the samples is the layout's first downlink)
	const CollRun &first = runs.front();
	std::uint64_t big = 0;
	for (const auto &r : runs)
		big = std::max(big, r.bytes);
	std::vector<std::string> policies;
	for (const auto &r : runs)
		if (std::find(policies.begin(), policies.end(), r.policy) == policies.end())
			policies.push_back(r.policy);
	const std::string coll =
		std::any_of(runs.begin(), runs.end(), [](const CollRun &r) { return r.coll.collective == "alltoall"; })
			? "alltoall"
			: first.coll.collective;
	std::string blocks, cmds;
	std::size_t b = 0, panels = 0;
	for (const auto &pol : policies) {
		std::string plot;
		for (bool rnd : {true, false}) {
			const CollRun *r = find_run(runs, [&](const CollRun &x) {
				return x.case_name == "healthy" && x.coll.collective == coll && x.bytes == big &&
				       x.policy == pol && x.randomize == rnd;
			});
			if (!r || r->ticks.empty() || r->summary.is_null())
				continue;
			const std::size_t port = r->watched_downlink;
			const std::string name = "$q" + std::to_string(b++);
			blocks += name + " << EOD\n";
			for (const auto &t : r->ticks)
				if (port < t.ports.size() && t.t_ns >= r->start_ns)
					blocks += dp_fmt("%.3f", double(t.t_ns - r->start_ns) / 1e6) + " " +
						  dp_fmt("%.2f", double(t.ports[port].qlen_bytes) / 1e3) + "\n";
			blocks += "EOD\n";
			plot += std::string(plot.empty() ? "plot " : ", ") + name +
				" using 1:2 with lines lw 2 title '" + (rnd ? "randomized" : "FIFO (--no-randomize)") +
				"'";
		}
		if (plot.empty())
			continue;
		panels++;
		const std::size_t watched = runs.front().watched_downlink;
		cmds += "set title '" + coll + " " + size_name(big) + ", " + pol + ": queue at the ToR downlink " +
			(watched < ports.size() ? ports[watched].name : std::string("?")) + "'\n" + plot + "\n";
	}
	if (panels)
		plots.push_back({"incast", "the queue at one receiver's ToR downlink",
				 blocks + "set terminal pngcairo size 900," + std::to_string(280 * panels) +
					 " font ',9' noenhanced\nset output 'incast.png'\nset multiplot layout " +
					 std::to_string(panels) +
					 ",1\nset xlabel 'time since the collective started (ms)'\nset ylabel 'queue "
					 "(KB)'\nset grid\nset key top right\n" +
					 cmds + "unset multiplot\n"});

	// bytes per uplink, over the mean of its leaf's, per policy: healthy,
	// the largest size, randomized, the first seed
	std::vector<std::string> colls;
	for (const auto &r : runs)
		if (std::find(colls.begin(), colls.end(), r.coll.label()) == colls.end())
			colls.push_back(r.coll.label());
	std::string ublocks, ucmds;
	for (const auto &c : colls) {
		std::string plot;
		for (const auto &pol : policies) {
			const CollRun *r = find_run(runs, [&](const CollRun &x) {
				return x.case_name == "healthy" && x.coll.label() == c && x.bytes == big &&
				       x.policy == pol && x.randomize;
			});
			if (!r || r->uplink_bytes.size() != std::size_t(topo.leaves) * topo.spines)
				continue;
			const std::string name = "$u" + std::to_string(b++);
			ublocks += name + " << EOD\n";
			for (std::size_t i = 0; i < r->uplink_bytes.size(); i++) {
				const std::size_t leaf = i / topo.spines;
				double sum = 0;
				for (std::size_t k = 0; k < topo.spines; k++)
					sum += r->uplink_bytes[leaf * topo.spines + k];
				const double rel = sum > 0 ? r->uplink_bytes[i] / (sum / topo.spines) : 0;
				ublocks += std::to_string(i) + " " + dp_fmt("%.3f", rel) + " L" +
					   std::to_string(leaf + 1) + "S" + std::to_string(i % topo.spines + 1) + "\n";
			}
			ublocks += "EOD\n";
			plot += std::string(plot.empty() ? "plot " : ", ") + name +
				" using 1:2:xtic(3) with linespoints lw 2 pt 7 title '" + pol + "'";
		}
		if (!plot.empty())
			ucmds += "set title '" + c + " " + size_name(big) +
				 ": bytes per uplink over the mean of its leaf (L = leaf, S = spine)'\n" + plot + "\n";
	}
	if (!ucmds.empty())
		plots.push_back({"uplinks", "bytes per uplink",
				 ublocks + "set terminal pngcairo size 1000," + std::to_string(300 * colls.size()) +
					 " font ',9' noenhanced\nset output 'uplinks.png'\nset multiplot layout " +
					 std::to_string(colls.size()) +
					 ",1\nset ylabel 'bytes / leaf mean'\nset yrange [0:*]\nset grid\nset key top "
					 "right\n" +
					 ucmds + "unset multiplot\n"});
	return plots;
}

} // namespace lumen
