// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/experiment/report_plot.cpp - gnuplot scripts for the experiment
// plots (report_plot.h).
#include "experiment/report_plot.h"

#include "base/error.h"
#include "base/system.h"
#include "experiment/experiment_proc.h"
#include "experiment/experiment_stats.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sys/stat.h>

namespace lumen
{

namespace
{

constexpr int kPanelWidth = 820, kPanelHeight = 340;

// Runs laid out as a grid: one row per algorithm, one column per case.
struct Grid {
	std::vector<std::string> algos, cases;
	std::vector<int> cell; // run index per row * cols + col, -1 = none
};

Grid run_grid(const std::vector<RunData> &runs)
{
	Grid g;
	for (const auto &r : runs) {
		if (std::find(g.algos.begin(), g.algos.end(), r.algo) == g.algos.end())
			g.algos.push_back(r.algo);
		if (std::find(g.cases.begin(), g.cases.end(), r.case_name) == g.cases.end())
			g.cases.push_back(r.case_name);
	}
	g.cell.assign(g.algos.size() * g.cases.size(), -1);
	for (std::size_t i = 0; i < runs.size(); i++) {
		auto row = std::find(g.algos.begin(), g.algos.end(), runs[i].algo) - g.algos.begin();
		auto col = std::find(g.cases.begin(), g.cases.end(), runs[i].case_name) - g.cases.begin();
		g.cell[row * g.cases.size() + col] = static_cast<int>(i);
	}
	return g;
}

std::string quote(const std::string &s)
{
	std::string out = "'";
	for (char c : s)
		out += c == '\'' ? std::string("''") : std::string(1, c);
	return out + "'";
}

std::string num(double v)
{
	if (std::isnan(v))
		return "?";
	char buf[32];
	std::snprintf(buf, sizeof(buf), "%.6g", v);
	return buf;
}

// A script under construction: datablocks first, then commands.
struct Script {
	std::string blocks, body;
	int next_block = 0;

	// Adds rows of (x, y...) as a datablock; returns its name.
	std::string block(const std::vector<std::vector<std::string>> &rows)
	{
		std::string name = "$d" + std::to_string(next_block++);
		blocks += name + " << EOD\n";
		for (const auto &r : rows) {
			for (std::size_t i = 0; i < r.size(); i++)
				blocks += (i ? " " : "") + r[i];
			blocks += "\n";
		}
		blocks += "EOD\n";
		return name;
	}
	std::string text(const std::string &file, int cols, int rows, const std::string &title) const
	{
		char head[256];
		std::snprintf(head, sizeof(head), "set terminal pngcairo size %d,%d font ',10' noenhanced\n",
			      kPanelWidth * cols, kPanelHeight * rows + 40);
		return std::string(head) + "set output " + quote(file) + "\nset datafile missing '?'\n" + blocks +
		       "set multiplot layout " + std::to_string(rows) + "," + std::to_string(cols) + " title " +
		       quote(title) + "\nset grid\nset key outside right top\n" + body + "unset multiplot\n";
	}
};

// One plot command with its series, or an empty panel saying so.
std::string plot_command(const std::vector<std::string> &series)
{
	if (series.empty())
		return "set label 1 'no data' at graph 0.5, graph 0.5 center\nplot [0:1][0:1] NaN notitle\nunset label "
		       "1\n";
	std::string cmd = "plot ";
	for (std::size_t i = 0; i < series.size(); i++)
		cmd += (i ? ", " : "") + series[i];
	return cmd + "\n";
}

std::string panel_title(const RunData &r)
{
	return r.case_name == "run" ? r.algo : r.algo + " / " + r.case_name;
}

std::string phase_of(const std::string &label)
{
	return label.substr(0, label.find('.'));
}

// Per run: long flows one line each, every other phase as one aggregate.
std::vector<std::string> throughput_series(Script &s, const RunData &r)
{
	auto bins = flow_throughput_bins(r);
	std::vector<std::string> series;
	std::map<std::string, std::vector<double>> aggregate; // phase -> bins
	for (const auto &f : r.flows) {
		const auto &b = bins[f.label + "#" + std::to_string(f.flow_id)];
		if (f.kind != "long") {
			auto &agg = aggregate[phase_of(f.label)];
			agg.resize(b.size(), 0.0);
			for (std::size_t i = 0; i < b.size(); i++)
				agg[i] += b[i];
			continue;
		}
		std::vector<std::vector<std::string>> rows;
		std::uint64_t end = f.end_ns > f.start_ns ? f.end_ns : r.t0_ns + r.length_ns;
		for (std::size_t i = 0; i < b.size(); i++) {
			std::uint64_t from = r.t0_ns + i * kThroughputBinNs;
			if (from + kThroughputBinNs > f.start_ns && from < end)
				rows.push_back({num((double(i) + 0.5) * kThroughputBinNs / 1e9), num(b[i])});
		}
		series.push_back(s.block(rows) + " using 1:2 with lines lw 1.5 title " +
				 quote(f.label + "#" + std::to_string(f.flow_id)));
	}
	for (const auto &[phase, agg] : aggregate) {
		std::vector<std::vector<std::string>> rows;
		for (std::size_t i = 0; i < agg.size(); i++)
			rows.push_back({num((double(i) + 0.5) * kThroughputBinNs / 1e9), num(agg[i])});
		series.push_back(s.block(rows) + " using 1:2 with lines lw 1.5 dt 2 title " +
				 quote(phase + " (all flows)"));
	}
	return series;
}

// A plot of one panel per run over time: algorithms in rows, cases in
// columns, an empty panel where a run is missing.
struct RunPanelPlot {
	std::string name, description, ylabel, title; // file name.png
};
template <typename Series>
PlotScript run_panel_plot(const std::vector<RunData> &runs, const RunPanelPlot &p, Series series)
{
	Grid g = run_grid(runs);
	Script s;
	for (int idx : g.cell) {
		if (idx < 0) {
			s.body += plot_command({});
			continue;
		}
		const RunData &r = runs[idx];
		s.body += "set title " + quote(panel_title(r)) + "\nset xlabel 'time (s)'\nset ylabel " +
			  quote(p.ylabel) + "\n" + plot_command(series(s, r));
	}
	return {p.name, p.description, s.text(p.name + ".png", int(g.cases.size()), int(g.algos.size()), p.title)};
}

PlotScript throughput_plot(const std::vector<RunData> &runs)
{
	return run_panel_plot(runs,
			      {"throughput", "throughput per flow", "Mbit/s",
			       "Throughput per flow (100 ms bins; other phases summed)"},
			      throughput_series);
}

PlotScript queue_plot(const std::vector<RunData> &runs)
{
	Grid g = run_grid(runs);
	Script s;
	for (std::size_t c = 0; c < g.cases.size(); c++) {
		std::vector<std::string> series;
		for (std::size_t a = 0; a < g.algos.size(); a++) {
			int idx = g.cell[a * g.cases.size() + c];
			if (idx < 0)
				continue;
			const RunData &r = runs[idx];
			std::vector<std::uint64_t> q = observed_queue(r);
			std::vector<std::vector<std::string>> rows;
			for (std::size_t i = 0; i < q.size(); i++)
				rows.push_back({num((double(r.queue[i].t_ns) - double(r.t0_ns)) / 1e9),
						num(double(q[i]) / 1024.0)});
			series.push_back(s.block(rows) + " using 1:2 with lines title " + quote(r.algo));
		}
		s.body += "set title " + quote(g.cases[c] == "run" ? "bottleneck queue" : g.cases[c]) +
			  "\nset xlabel 'time (s)'\nset ylabel 'queue (KB)'\n" + plot_command(series);
	}
	return {"queue", "queue length over time",
		s.text("queue.png", int(g.cases.size()), 1,
		       "Switch queue (bottleneck port; leaf-spine: longest port queue)")};
}

bool has_long_flows(const std::vector<RunData> &runs)
{
	for (const auto &r : runs)
		for (const auto &f : r.flows)
			if (f.kind == "long")
				return true;
	return false;
}

// cwnd over time of each long flow of a run, in segments.
std::vector<std::string> cwnd_series(Script &s, const RunData &r)
{
	std::map<std::string, std::vector<std::vector<std::string>>> per_flow;
	std::map<std::string, bool> is_long;
	for (const auto &f : r.flows)
		is_long[f.label + "#" + std::to_string(f.flow_id)] = f.kind == "long";
	for (const auto &smp : r.samples) {
		std::string key = smp.label + "#" + std::to_string(smp.flow_id);
		if (is_long[key])
			per_flow[key].push_back(
				{num((double(smp.t_ns) - double(r.t0_ns)) / 1e9), num(double(smp.cwnd))});
	}
	std::vector<std::string> series;
	for (const auto &[key, rows] : per_flow)
		series.push_back(s.block(rows) + " using 1:2 with lines title " + quote(key));
	return series;
}

PlotScript cwnd_plot(const std::vector<RunData> &runs)
{
	return run_panel_plot(
		runs,
		{"cwnd", "congestion window of the long flows", "cwnd (segments)", "Congestion window (long flows)"},
		cwnd_series);
}

// Clustered bars: one cluster per x label, one bar per algorithm.
std::string bar_panel(Script &s, const std::vector<std::string> &xlabels, const std::vector<std::string> &algos,
		      const std::vector<std::vector<double>> &values, const std::string &title,
		      const std::string &ylabel, bool logscale)
{
	std::vector<std::vector<std::string>> rows;
	for (std::size_t x = 0; x < xlabels.size(); x++) {
		// datafiles take double-quoted strings (single quotes would split at blanks)
		std::vector<std::string> row = {"\"" + xlabels[x] + "\""};
		for (std::size_t a = 0; a < algos.size(); a++)
			row.push_back(num(values[x][a]));
		rows.push_back(row);
	}
	bool any = std::any_of(values.begin(), values.end(), [](const std::vector<double> &row) {
		return std::any_of(row.begin(), row.end(), [](double v) { return !std::isnan(v); });
	});
	if (!any) // gnuplot refuses a histogram without one valid value
		return "set title " + quote(title) + "\n" + plot_command({});
	std::string data = s.block(rows);
	std::string out = "set title " + quote(title) + "\nset xlabel ''\nset ylabel " + quote(ylabel) +
			  "\nset style data histograms\nset style histogram clustered gap 1\nset style fill solid 0.8 "
			  "border -1\nset boxwidth 0.9\n" +
			  (logscale ? "set logscale y\n" : "unset logscale y\nset yrange [0:*]\n");
	std::vector<std::string> series;
	for (std::size_t a = 0; a < algos.size(); a++)
		series.push_back(data + " using " + std::to_string(a + 2) + (a == 0 ? ":xtic(1)" : "") + " title " +
				 quote(algos[a]));
	return out + plot_command(series) + "unset logscale y\nset autoscale y\nset style data lines\n";
}

const RunSummary *find_summary(const std::vector<RunSummary> &sums, const std::string &algo, const std::string &cs)
{
	for (const auto &s : sums)
		if (s.algo == algo && s.case_name == cs)
			return &s;
	return nullptr;
}

PlotScript slowdown_plot(const std::vector<RunData> &runs, const std::vector<RunSummary> &sums)
{
	Grid g = run_grid(runs);
	std::vector<std::string> cases; // only those with poisson traffic
	for (const auto &cs : g.cases)
		if (std::any_of(sums.begin(), sums.end(),
				[&cs](const RunSummary &sum) { return sum.case_name == cs && !sum.slowdown.empty(); }))
			cases.push_back(cs);
	Script s;
	std::vector<std::string> buckets = size_bucket_names();
	buckets.push_back("all");
	for (const char *stat : {"p50", "p99"}) {
		for (const auto &cs : cases) {
			std::vector<std::vector<double>> values(buckets.size(),
								std::vector<double>(g.algos.size(), NAN));
			std::string title = std::string("FCT slowdown ") + stat;
			for (std::size_t a = 0; a < g.algos.size(); a++) {
				const RunSummary *sum = find_summary(sums, g.algos[a], cs);
				if (!sum || sum->slowdown.empty())
					continue;
				if (sum->load > 0)
					title = std::string("FCT slowdown ") + stat + ", load " + num(sum->load * 100) +
						"%";
				for (std::size_t b = 0; b < buckets.size(); b++) {
					const Percentiles &p = sum->slowdown.at(buckets[b]);
					values[b][a] = std::string(stat) == "p50" ? p.p50 : p.p99;
				}
			}
			s.body += bar_panel(s, buckets, g.algos, values, title, "slowdown (FCT / ideal)", true);
		}
	}
	return {"fct_slowdown", "FCT slowdown per size bucket",
		s.text("fct_slowdown.png", int(cases.size()), 2,
		       "FCT slowdown per size bucket (short < 10 KB, medium 100 KB-1 MB, long > 1 MB)")};
}

PlotScript incast_plot(const std::vector<RunData> &runs, const std::vector<RunSummary> &sums)
{
	Grid g = run_grid(runs);
	std::vector<std::string> xlabels;
	std::vector<std::pair<std::string, std::string>> keys; // case, phase
	for (const auto &sum : sums)
		for (const auto &i : sum.incasts) {
			auto key = std::make_pair(sum.case_name, i.phase);
			if (std::find(keys.begin(), keys.end(), key) != keys.end())
				continue;
			keys.push_back(key);
			std::string x = i.phase + " " + std::to_string(i.fan_in) + ":1";
			xlabels.push_back(sum.case_name == "run" ? x : sum.case_name + " " + x);
		}
	std::vector<std::vector<double>> peak(keys.size(), std::vector<double>(g.algos.size(), NAN));
	std::vector<std::vector<double>> drain = peak, kept = peak;
	for (std::size_t k = 0; k < keys.size(); k++)
		for (std::size_t a = 0; a < g.algos.size(); a++) {
			const RunSummary *sum = find_summary(sums, g.algos[a], keys[k].first);
			if (!sum)
				continue;
			for (const auto &i : sum->incasts)
				if (i.phase == keys[k].second) {
					peak[k][a] = i.peak_queue_max_bytes / 1024.0;
					drain[k][a] = i.drain_ms_median;
					kept[k][a] = i.util_kept * 100;
				}
		}
	Script s;
	s.body += bar_panel(s, xlabels, g.algos, peak, "queue peak (max over bursts)", "KB", false);
	s.body += bar_panel(s, xlabels, g.algos, drain, "time to drain 90% (median)", "ms", false);
	s.body += bar_panel(s, xlabels, g.algos, kept, "bottleneck utilisation after the burst", "%", false);
	return {"incast", "incast queue peak, drain time and utilisation",
		s.text("incast.png", 3, 1, "Incast bursts onto the bottleneck")};
}

bool has_slowdown(const std::vector<RunSummary> &sums)
{
	return std::any_of(sums.begin(), sums.end(), [](const RunSummary &s) { return !s.slowdown.empty(); });
}

bool has_incast(const std::vector<RunSummary> &sums)
{
	return std::any_of(sums.begin(), sums.end(), [](const RunSummary &s) { return !s.incasts.empty(); });
}

// Queue samples exist unless the run watched no switch (real hosts
// without a Linux router in the inventory).
bool has_queue(const std::vector<RunData> &runs)
{
	return std::any_of(runs.begin(), runs.end(),
			   [](const RunData &r) { return !r.ports.empty() && !r.queue.empty(); });
}

} // namespace

std::vector<PlotScript> plot_scripts(const std::vector<RunData> &runs, const std::vector<RunSummary> &summaries)
{
	std::vector<PlotScript> out;
	if (runs.empty())
		return out;
	out.push_back(throughput_plot(runs));
	bool queue = has_queue(runs);
	if (queue)
		out.push_back(queue_plot(runs));
	if (has_long_flows(runs))
		out.push_back(cwnd_plot(runs));
	if (has_slowdown(summaries))
		out.push_back(slowdown_plot(runs, summaries));
	if (queue && has_incast(summaries)) // its panels are the queue's
		out.push_back(incast_plot(runs, summaries));
	return out;
}

std::vector<std::string> render_plots(const std::vector<PlotScript> &plots, const std::string &dir)
{
	std::string gp_dir = dir + "/gnuplot";
	if (::mkdir(gp_dir.c_str(), 0755) != 0 && errno != EEXIST)
		throw Error("cannot create " + gp_dir + ": " + std::strerror(errno));
	std::vector<std::string> pngs;
	for (const auto &p : plots) {
		std::string gp = gp_dir + "/" + p.name + ".gp";
		{
			std::ofstream f(gp);
			f << p.script;
			if (!f)
				throw Error("cannot write " + gp);
		}
		ProcessOptions in_dir;
		in_dir.cwd = dir;
		ProcessResult r = run_process({"gnuplot", "gnuplot/" + p.name + ".gp"}, in_dir);
		std::string png = dir + "/" + p.name + ".png";
		if (r.status != 0 || !path_exists(png))
			throw Error("gnuplot failed on " + gp + ": " + r.output);
		pngs.push_back(png);
	}
	return pngs;
}

} // namespace lumen
