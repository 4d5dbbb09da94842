// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/experiment/report.cpp - run summaries, merged CSVs, summary.json and
// the terminal table (report.h).
#include "experiment/report.h"

#include "base/error.h"
#include "base/stats.h"
#include "experiment/experiment_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

namespace lumen
{

const char kFlowsHeader[] = "algo,case,seed,start_s,label,flow_id,dst,cc,kind,size_bytes,start_ns,end_ns,fct_ns,bytes,"
			    "retrans,ideal_fct_ns,slowdown,status";
const char kSamplesHeader[] = "algo,case,seed,t_s,label,flow_id,t_ns,bytes_acked,cwnd,srtt_us,retrans,pacing_rate_bps,"
			      "delivery_rate_bps";
const char kQueueHeader[] = "algo,case,seed,t_s,port,bottleneck,qlen_bytes,enq_bytes,deq_bytes,drops,ecn_marks";
const char kThroughputHeader[] = "algo,case,seed,label,flow_id,kind,t_s,mbps";

namespace
{

constexpr std::uint64_t kMaxBaselineNs = 500'000'000;
constexpr std::uint64_t kPeakSlackNs = 20'000'000;

// ---------------------------------------------------------------------
// CSV input

struct CsvLines {
	std::vector<std::string> lines;
};

CsvLines split_lines(const std::string &text)
{
	CsvLines out;
	std::istringstream in(text);
	std::string line;
	while (std::getline(in, line)) {
		if (!line.empty() && line.back() == '\r')
			line.pop_back();
		out.lines.push_back(line);
	}
	return out;
}

// Splits into exactly n fields; the last one keeps any further commas (a
// status text may contain them). Fewer fields -> empty vector.
std::vector<std::string> split_fields(const std::string &line, std::size_t n)
{
	std::vector<std::string> f;
	std::size_t pos = 0;
	while (f.size() + 1 < n) {
		std::size_t comma = line.find(',', pos);
		if (comma == std::string::npos)
			return {};
		f.push_back(line.substr(pos, comma - pos));
		pos = comma + 1;
	}
	f.push_back(line.substr(pos));
	return f;
}

std::size_t count_fields(const char *header)
{
	return std::count(header, header + std::char_traits<char>::length(header), ',') + 1;
}

struct FieldReader {
	const std::vector<std::string> &fields;
	const std::string &where;
	std::size_t i = 0;

	const std::string &text()
	{
		return fields[i++];
	}
	std::uint64_t u64()
	{
		const std::string &t = fields[i];
		std::size_t used = 0;
		std::uint64_t v = 0;
		try {
			v = std::stoull(t, &used);
		} catch (const std::exception &) {
			used = 0;
		}
		if (t.empty() || used != t.size() || t[0] == '-')
			throw UsageError(where + ": field " + std::to_string(i + 1) + " '" + t +
					 "' is not a whole number");
		i++;
		return v;
	}
	double real()
	{
		const std::string &t = fields[i];
		std::size_t used = 0;
		double v = 0;
		try {
			v = std::stod(t, &used);
		} catch (const std::exception &) {
			used = 0;
		}
		if (t.empty() || used != t.size())
			throw UsageError(where + ": field " + std::to_string(i + 1) + " '" + t + "' is not a number");
		i++;
		return v;
	}
	void read(std::string &out)
	{
		out = text();
	}
	void read(std::uint64_t &out)
	{
		out = u64();
	}
	void read(double &out)
	{
		out = real();
	}
	// The next fields, in order, each parsed as its destination's type.
	template <typename... T> void operator()(T &...out)
	{
		(read(out), ...);
	}
};

// Calls row(fields, where) for every data line after checking the header.
template <typename Row> void read_csv(const std::string &text, const std::string &source, const char *header, Row row)
{
	CsvLines csv = split_lines(text);
	if (csv.lines.empty() || csv.lines[0] != header)
		throw UsageError(source + ": line 1: expected the header '" + header + "', got '" +
				 (csv.lines.empty() ? std::string("(empty file)") : csv.lines[0]) + "'");
	std::size_t n = count_fields(header);
	for (std::size_t l = 1; l < csv.lines.size(); l++) {
		if (csv.lines[l].empty())
			continue;
		std::string where = source + ": line " + std::to_string(l + 1);
		std::vector<std::string> f = split_fields(csv.lines[l], n);
		if (f.empty())
			throw UsageError(where + ": expected " + std::to_string(n) + " fields");
		FieldReader r{f, where};
		row(r);
	}
}

// ---------------------------------------------------------------------
// Formatting

std::string fmt(const char *format, double v)
{
	if (std::isnan(v))
		return "-";
	char buf[64];
	std::snprintf(buf, sizeof(buf), format, v);
	return buf;
}

std::string csv_num(double v)
{
	if (std::isnan(v))
		return "";
	char buf[64];
	std::snprintf(buf, sizeof(buf), "%.6g", v);
	return buf;
}

std::string rel_seconds(std::uint64_t t_ns, std::uint64_t t0_ns)
{
	char buf[32];
	std::snprintf(buf, sizeof(buf), "%.3f", (double(t_ns) - double(t0_ns)) / 1e9);
	return buf;
}

nlohmann::json num_or_null(double v)
{
	return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v);
}

std::string flow_key(const std::string &label, std::uint64_t flow_id)
{
	return label + "#" + std::to_string(flow_id);
}

// ---------------------------------------------------------------------
// Summary pieces

Percentiles percentiles_of(const std::vector<double> &v)
{
	Percentiles p;
	p.count = v.size();
	p.p50 = percentile(v, 0.5);
	p.p99 = percentile(v, 0.99);
	p.p999 = percentile(v, 0.999);
	p.max = v.empty() ? kNaN : *std::max_element(v.begin(), v.end());
	return p;
}

std::vector<CounterPoint> dequeued_counter(const RunData &run, int port)
{
	std::vector<CounterPoint> pts;
	for (const auto &t : run.queue)
		pts.push_back({t.t_ns, t.ports[port].deq_bytes});
	return pts;
}

std::vector<QueueSample> observed_samples(const RunData &run)
{
	std::vector<std::uint64_t> q = observed_queue(run);
	std::vector<QueueSample> out;
	for (std::size_t i = 0; i < q.size(); i++)
		out.push_back({run.queue[i].t_ns, q[i]});
	return out;
}

std::uint64_t window_start(const RunData &run)
{
	return run.t0_ns + run.warmup_ns;
}

std::uint64_t window_end(const RunData &run)
{
	return run.t0_ns + (run.traffic_end_ns ? run.traffic_end_ns : run.length_ns);
}

// Cumulative bytes of one flow: 0 at its start, its samples, its final
// byte count at its end.
std::vector<CounterPoint> flow_counter(const FlowRecord &f, const std::vector<const FlowSample *> &samples)
{
	std::vector<CounterPoint> pts;
	pts.push_back({f.start_ns, 0});
	for (const FlowSample *s : samples)
		if (s->t_ns >= f.start_ns)
			pts.push_back({s->t_ns, s->bytes_acked});
	if (f.end_ns > f.start_ns)
		pts.push_back({f.end_ns, std::max(f.bytes, pts.back().bytes)});
	std::stable_sort(pts.begin(), pts.end(),
			 [](const CounterPoint &a, const CounterPoint &b) { return a.t_ns < b.t_ns; });
	for (std::size_t i = 1; i < pts.size(); i++) // a counter never goes back
		pts[i].bytes = std::max(pts[i].bytes, pts[i - 1].bytes);
	return pts;
}

std::map<std::string, std::vector<const FlowSample *>> samples_by_flow(const RunData &run)
{
	std::map<std::string, std::vector<const FlowSample *>> by;
	for (const auto &s : run.samples)
		by[flow_key(s.label, s.flow_id)].push_back(&s);
	return by;
}

std::size_t bin_count(const RunData &run)
{
	return static_cast<std::size_t>((run.length_ns + kThroughputBinNs - 1) / kThroughputBinNs);
}

double long_flow_jain(const RunData &run)
{
	auto by = samples_by_flow(run);
	std::vector<FlowBins> bins;
	for (const auto &f : run.flows) {
		if (f.kind != "long")
			continue;
		FlowBins b;
		b.start_ns = f.start_ns;
		b.end_ns = f.end_ns ? f.end_ns : run.t0_ns + run.length_ns;
		b.mbps = bin_rates_mbps(flow_counter(f, by[flow_key(f.label, f.flow_id)]), run.t0_ns, kThroughputBinNs,
					bin_count(run));
		bins.push_back(std::move(b));
	}
	std::size_t first = static_cast<std::size_t>((run.warmup_ns + kThroughputBinNs - 1) / kThroughputBinNs);
	std::size_t last = static_cast<std::size_t>((window_end(run) - run.t0_ns) / kThroughputBinNs);
	return mean_bin_jain(bins, run.t0_ns, kThroughputBinNs, first, last);
}

IncastSummary summarise_incast(const RunData &run, const IncastInfo &inc, const std::vector<QueueSample> &queue,
			       int bottleneck)
{
	IncastSummary s;
	s.phase = inc.phase;
	s.fan_in = inc.fan_in;
	s.bursts = inc.bursts;
	s.size_bytes = inc.size_bytes;
	std::vector<double> peaks, drains, kept;
	std::uint64_t baseline = std::min(inc.period_ns / 2, kMaxBaselineNs);
	std::uint64_t run_end = run.t0_ns + run.length_ns;
	// the burst's own peak comes within twice its time on the wire (plus
	// 20 ms for connection setup and sampling), not later
	std::uint64_t peak_within = kMaxBaselineNs;
	if (bottleneck >= 0 && run.ports[bottleneck].rate_mbps > 0) {
		double wire_ns = double(inc.fan_in) * double(inc.size_bytes) * 8e3 / run.ports[bottleneck].rate_mbps;
		peak_within = static_cast<std::uint64_t>(2 * wire_ns) + kPeakSlackNs;
	}
	for (std::uint32_t k = 0; k < inc.bursts; k++) {
		std::uint64_t tb = inc.start_ns + k * inc.period_ns;
		std::uint64_t until = std::min(tb + inc.period_ns, run_end);
		if (until <= tb)
			continue;
		BurstStats b = analyse_burst(queue, tb, until, baseline, peak_within);
		peaks.push_back(double(b.peak_bytes));
		if (b.drain_ns)
			drains.push_back(double(*b.drain_ns) / 1e6);
		else
			s.undrained++;
		if (bottleneck >= 0) {
			double rate = counter_rate_mbps(dequeued_counter(run, bottleneck), tb, until);
			kept.push_back(rate / run.ports[bottleneck].rate_mbps);
		}
	}
	s.peak_queue_max_bytes = peaks.empty() ? kNaN : *std::max_element(peaks.begin(), peaks.end());
	double sum = 0;
	for (double p : peaks)
		sum += p;
	s.peak_queue_mean_bytes = peaks.empty() ? kNaN : sum / double(peaks.size());
	s.drain_ms_median = percentile(drains, 0.5);
	s.drain_ms_max = drains.empty() ? kNaN : *std::max_element(drains.begin(), drains.end());
	double ksum = 0;
	for (double v : kept)
		ksum += v;
	s.util_kept = kept.empty() ? kNaN : ksum / double(kept.size());
	return s;
}

std::map<std::string, Percentiles> slowdown_by_bucket(const RunData &run)
{
	std::map<std::string, std::vector<double>> v;
	bool any = false;
	for (const auto &f : run.flows) {
		if (f.kind != "poisson")
			continue;
		any = true;
		if (!f.ok())
			continue;
		v["all"].push_back(f.slowdown);
		std::string b = size_bucket(f.size_bytes);
		if (!b.empty())
			v[b].push_back(f.slowdown);
	}
	std::map<std::string, Percentiles> out;
	if (!any)
		return out;
	for (const auto &b : size_bucket_names())
		out[b] = percentiles_of(v[b]);
	out["all"] = percentiles_of(v["all"]);
	return out;
}

nlohmann::json percentiles_json(const Percentiles &p)
{
	return {{"count", p.count},
		{"p50", num_or_null(p.p50)},
		{"p99", num_or_null(p.p99)},
		{"p999", num_or_null(p.p999)},
		{"max", num_or_null(p.max)}};
}

// ---------------------------------------------------------------------
// Table

struct Table {
	std::vector<std::string> header;
	std::vector<std::vector<std::string>> rows;

	std::string render() const
	{
		std::vector<std::size_t> width(header.size(), 0);
		for (std::size_t c = 0; c < header.size(); c++) {
			width[c] = header[c].size();
			for (const auto &r : rows)
				width[c] = std::max(width[c], r[c].size());
		}
		std::string out;
		auto line = [&](const std::vector<std::string> &cells) {
			for (std::size_t c = 0; c < cells.size(); c++) {
				std::string pad(width[c] - cells[c].size(), ' ');
				// first column left-aligned (names), the rest right (numbers)
				out += c == 0 ? cells[c] + pad : pad + cells[c];
				out += c + 1 < cells.size() ? "  " : "\n";
			}
		};
		line(header);
		std::size_t total = 0;
		for (auto w : width)
			total += w + 2;
		out += std::string(total - 2, '-') + "\n";
		for (const auto &r : rows)
			line(r);
		return out;
	}
};

std::string kb(double bytes)
{
	return fmt("%.1f", bytes / 1024.0);
}

// set by summary_table: whether the runs have more than one seed
thread_local bool g_name_seeds = false;

std::string run_name(const RunSummary &s)
{
	std::string n = s.case_name == "run" ? s.algo : s.case_name + " " + s.algo;
	return g_name_seeds ? n + " s" + std::to_string(s.seed) : n;
}

std::string overview_table(const std::vector<RunSummary> &summaries)
{
	Table t;
	t.header = {"run",	    "flows",  "errors", "goodput Mb/s", "util %",
		    "queue p50 KB", "p99 KB", "max KB", "Jain",		"retrans"};
	for (const auto &s : summaries)
		t.rows.push_back({run_name(s), std::to_string(s.flows), std::to_string(s.errors),
				  fmt("%.0f", s.goodput_mbps),
				  s.utilisation ? fmt("%.1f", *s.utilisation * 100) : std::string("-"),
				  kb(s.queue_bytes.p50), kb(s.queue_bytes.p99), kb(s.queue_bytes.max),
				  fmt("%.3f", s.jain), std::to_string(s.retransmits)});
	return t.render();
}

std::string incast_table(const std::vector<RunSummary> &summaries)
{
	Table t;
	t.header = {"incast",	    "run",	    "fan-in",	    "size KB",	 "peak max KB",
		    "peak mean KB", "drain p50 ms", "drain max ms", "undrained", "util kept %"};
	for (const auto &s : summaries)
		for (const auto &i : s.incasts)
			t.rows.push_back({i.phase, run_name(s), std::to_string(i.fan_in) + ":1",
					  kb(double(i.size_bytes)), kb(i.peak_queue_max_bytes),
					  kb(i.peak_queue_mean_bytes), fmt("%.1f", i.drain_ms_median),
					  fmt("%.1f", i.drain_ms_max),
					  std::to_string(i.undrained) + "/" + std::to_string(i.bursts),
					  fmt("%.1f", i.util_kept * 100)});
	std::stable_sort(t.rows.begin(), t.rows.end(),
			 [](const auto &a, const auto &b) { return a[0] < b[0]; }); // group by phase
	return t.rows.empty() ? "" : t.render();
}

std::string slowdown_table(const std::vector<RunSummary> &summaries)
{
	Table t;
	t.header = {"FCT slowdown", "load %"};
	for (const auto &b : size_bucket_names()) {
		t.header.push_back(b + " n");
		t.header.push_back(b + " p50");
		t.header.push_back(b + " p99");
	}
	t.header.push_back("all p50");
	t.header.push_back("all p99");
	for (const auto &s : summaries) {
		if (s.slowdown.empty())
			continue;
		std::vector<std::string> row = {g_name_seeds ? s.algo + " s" + std::to_string(s.seed) : s.algo,
						s.load > 0 ? fmt("%.0f", s.load * 100) : std::string("-")};
		for (const auto &b : size_bucket_names()) {
			const Percentiles &p = s.slowdown.at(b);
			row.push_back(std::to_string(p.count));
			row.push_back(fmt("%.2f", p.p50));
			row.push_back(fmt("%.2f", p.p99));
		}
		row.push_back(fmt("%.2f", s.slowdown.at("all").p50));
		row.push_back(fmt("%.2f", s.slowdown.at("all").p99));
		t.rows.push_back(row);
	}
	return t.rows.empty() ? "" : t.render();
}

} // namespace

// ---------------------------------------------------------------------
// Parsing the generator's CSVs

std::vector<FlowRecord> parse_flows_csv(const std::string &text, const std::string &source)
{
	std::vector<FlowRecord> out;
	read_csv(text, source, kTrafficFlowsHeader, [&out](FieldReader &r) {
		FlowRecord f;
		r(f.label, f.flow_id, f.dst, f.cc, f.kind, f.size_bytes, f.start_ns, f.end_ns, f.fct_ns, f.bytes,
		  f.retrans, f.ideal_fct_ns, f.slowdown, f.status);
		out.push_back(std::move(f));
	});
	return out;
}

std::vector<FlowSample> parse_samples_csv(const std::string &text, const std::string &source)
{
	std::vector<FlowSample> out;
	read_csv(text, source, kTrafficSamplesHeader, [&out](FieldReader &r) {
		FlowSample s;
		r(s.label, s.flow_id, s.t_ns, s.bytes_acked, s.cwnd, s.srtt_us, s.retrans, s.pacing_rate_bps,
		  s.delivery_rate_bps);
		out.push_back(std::move(s));
	});
	return out;
}

// ---------------------------------------------------------------------
// Summary

int bottleneck_port(const RunData &run)
{
	int best = -1;
	std::uint64_t best_bytes = 0;
	for (std::size_t i = 0; i < run.ports.size(); i++) {
		if (!run.ports[i].bottleneck)
			continue;
		std::uint64_t bytes = 0;
		if (run.queue.size() >= 2)
			bytes = run.queue.back().ports[i].deq_bytes - run.queue.front().ports[i].deq_bytes;
		if (best < 0 || bytes > best_bytes) {
			best = static_cast<int>(i);
			best_bytes = bytes;
		}
	}
	return best;
}

std::vector<std::uint64_t> observed_queue(const RunData &run)
{
	int b = bottleneck_port(run);
	std::vector<std::uint64_t> q;
	for (const auto &t : run.queue) {
		if (b >= 0) {
			q.push_back(t.ports[b].qlen_bytes);
			continue;
		}
		std::uint64_t m = 0;
		for (const auto &p : t.ports)
			m = std::max(m, p.qlen_bytes);
		q.push_back(m);
	}
	return q;
}

std::map<std::string, std::vector<double>> flow_throughput_bins(const RunData &run)
{
	auto by = samples_by_flow(run);
	std::map<std::string, std::vector<double>> out;
	for (const auto &f : run.flows) {
		std::string key = flow_key(f.label, f.flow_id);
		out[key] = bin_rates_mbps(flow_counter(f, by[key]), run.t0_ns, kThroughputBinNs, bin_count(run));
	}
	return out;
}

RunSummary summarise_run(const RunData &run)
{
	RunSummary s;
	s.algo = run.algo;
	s.case_name = run.case_name;
	s.seed = run.seed;
	s.load = run.load;
	s.healed_bytes = run.healed_bytes;
	std::uint64_t bytes = 0;
	for (const auto &f : run.flows) {
		s.flows++;
		s.completed += f.ok();
		s.errors += !f.ok();
		s.retransmits += f.retrans;
		bytes += f.bytes;
	}
	std::uint64_t traffic_ns = run.traffic_end_ns ? run.traffic_end_ns : run.length_ns;
	s.goodput_mbps = traffic_ns ? double(bytes) * 8e3 / double(traffic_ns) : 0;

	std::uint64_t from = window_start(run), to = window_end(run);
	int b = bottleneck_port(run);
	if (b >= 0 && run.ports[b].rate_mbps > 0)
		s.utilisation = counter_rate_mbps(dequeued_counter(run, b), from, to) / run.ports[b].rate_mbps;
	std::vector<double> q;
	for (const auto &smp : observed_samples(run))
		if (smp.t_ns >= from && smp.t_ns <= to)
			q.push_back(double(smp.qlen_bytes));
	s.queue_bytes = percentiles_of(q);
	s.jain = long_flow_jain(run);
	// an incast is measured on the queue: none watched (real hosts without
	// a switch), nothing to say about it
	std::vector<QueueSample> queue = observed_samples(run);
	if (!queue.empty())
		for (const auto &inc : run.incasts)
			s.incasts.push_back(summarise_incast(run, inc, queue, b));
	s.slowdown = slowdown_by_bucket(run);
	return s;
}

nlohmann::json summary_to_json(const RunSummary &s)
{
	nlohmann::json j;
	j["algo"] = s.algo;
	j["case"] = s.case_name;
	j["seed"] = s.seed;
	if (s.load > 0)
		j["load"] = s.load;
	j["flows"] = s.flows;
	j["completed"] = s.completed;
	j["errors"] = s.errors;
	j["retransmits"] = s.retransmits;
	j["healed_bytes"] = s.healed_bytes;
	j["goodput_mbps"] = s.goodput_mbps;
	j["utilisation"] = s.utilisation ? num_or_null(*s.utilisation) : nlohmann::json(nullptr);
	j["queue_bytes"] = percentiles_json(s.queue_bytes);
	j["jain_100ms"] = num_or_null(s.jain);
	j["incast"] = nlohmann::json::array();
	for (const auto &i : s.incasts)
		j["incast"].push_back({{"phase", i.phase},
				       {"fan_in", i.fan_in},
				       {"bursts", i.bursts},
				       {"size_bytes", i.size_bytes},
				       {"peak_queue_max_bytes", num_or_null(i.peak_queue_max_bytes)},
				       {"peak_queue_mean_bytes", num_or_null(i.peak_queue_mean_bytes)},
				       {"drain_ms_median", num_or_null(i.drain_ms_median)},
				       {"drain_ms_max", num_or_null(i.drain_ms_max)},
				       {"undrained_bursts", i.undrained},
				       {"utilisation_kept", num_or_null(i.util_kept)}});
	j["fct_slowdown"] = nlohmann::json::object();
	for (const auto &[bucket, p] : s.slowdown)
		j["fct_slowdown"][bucket] = percentiles_json(p);
	return j;
}

// ---------------------------------------------------------------------
// Merged CSVs

void write_flows_csv(std::ostream &out, const std::vector<RunData> &runs)
{
	out << kFlowsHeader << "\n";
	for (const auto &r : runs)
		for (const auto &f : r.flows)
			out << r.algo << ',' << r.case_name << ',' << r.seed << ',' << rel_seconds(f.start_ns, r.t0_ns)
			    << ',' << f.label << ',' << f.flow_id << ',' << f.dst << ',' << f.cc << ',' << f.kind << ','
			    << f.size_bytes << ',' << f.start_ns << ',' << f.end_ns << ',' << f.fct_ns << ',' << f.bytes
			    << ',' << f.retrans << ',' << f.ideal_fct_ns << ',' << csv_num(f.slowdown) << ','
			    << f.status << "\n";
}

void write_samples_csv(std::ostream &out, const std::vector<RunData> &runs)
{
	out << kSamplesHeader << "\n";
	for (const auto &r : runs)
		for (const auto &s : r.samples)
			out << r.algo << ',' << r.case_name << ',' << r.seed << ',' << rel_seconds(s.t_ns, r.t0_ns)
			    << ',' << s.label << ',' << s.flow_id << ',' << s.t_ns << ',' << s.bytes_acked << ','
			    << s.cwnd << ',' << s.srtt_us << ',' << s.retrans << ',' << s.pacing_rate_bps << ','
			    << s.delivery_rate_bps << "\n";
}

void write_queue_csv(std::ostream &out, const std::vector<RunData> &runs)
{
	out << kQueueHeader << "\n";
	for (const auto &r : runs)
		for (const auto &t : r.queue)
			for (std::size_t p = 0; p < t.ports.size() && p < r.ports.size(); p++) {
				const PortCounters &c = t.ports[p];
				out << r.algo << ',' << r.case_name << ',' << r.seed << ','
				    << rel_seconds(t.t_ns, r.t0_ns) << ',' << r.ports[p].name << ','
				    << (r.ports[p].bottleneck ? 1 : 0) << ',' << c.qlen_bytes << ',' << c.enq_bytes
				    << ',' << c.deq_bytes << ',' << c.drops << ',' << c.ecn_marks << "\n";
			}
}

void write_throughput_csv(std::ostream &out, const std::vector<RunData> &runs)
{
	out << kThroughputHeader << "\n";
	for (const auto &r : runs) {
		auto bins = flow_throughput_bins(r);
		for (const auto &f : r.flows) {
			const auto &b = bins[flow_key(f.label, f.flow_id)];
			std::uint64_t end = f.end_ns > f.start_ns ? f.end_ns : r.t0_ns + r.length_ns;
			for (std::size_t i = 0; i < b.size(); i++) {
				std::uint64_t from = r.t0_ns + i * kThroughputBinNs, to = from + kThroughputBinNs;
				if (to <= f.start_ns || from >= end)
					continue; // only the bins the flow was open in
				char t[32];
				std::snprintf(t, sizeof(t), "%.1f", double(i * kThroughputBinNs) / 1e9);
				out << r.algo << ',' << r.case_name << ',' << r.seed << ',' << f.label << ','
				    << f.flow_id << ',' << f.kind << ',' << t << ',' << csv_num(b[i]) << "\n";
			}
		}
	}
}

std::string summary_table(const std::vector<RunSummary> &summaries)
{
	g_name_seeds = std::any_of(summaries.begin(), summaries.end(),
				   [&](const RunSummary &s) { return s.seed != summaries.front().seed; });
	std::string out = overview_table(summaries);
	std::string inc = incast_table(summaries);
	if (!inc.empty())
		out += "\n" + inc;
	std::string sd = slowdown_table(summaries);
	if (!sd.empty())
		out += "\n" + sd;
	if (g_name_seeds)
		out += "\nover seeds: mean +-sd [min..max]\n" + aggregate_table(aggregate_over_seeds(summaries));
	g_name_seeds = false;
	return out;
}

// ---------------------------------------------------------------------
// Over seeds

std::map<std::string, double> run_metrics(const RunSummary &s)
{
	std::map<std::string, double> m;
	m["goodput_mbps"] = s.goodput_mbps;
	m["utilisation"] = s.utilisation ? *s.utilisation : kNaN;
	m["queue_p50_bytes"] = s.queue_bytes.count ? s.queue_bytes.p50 : kNaN;
	m["queue_p99_bytes"] = s.queue_bytes.count ? s.queue_bytes.p99 : kNaN;
	m["queue_max_bytes"] = s.queue_bytes.count ? s.queue_bytes.max : kNaN;
	m["jain"] = s.jain;
	m["retransmits"] = double(s.retransmits);
	m["errors"] = double(s.errors);
	m["completed"] = double(s.completed);
	m["flows"] = double(s.flows);
	for (const auto &[bucket, p] : s.slowdown) {
		std::string k = "fct." + bucket + ".";
		m[k + "count"] = double(p.count);
		m[k + "p50"] = p.p50;
		m[k + "p99"] = p.p99;
		m[k + "p999"] = p.p999;
	}
	for (const auto &i : s.incasts) {
		std::string k = "incast." + i.phase + ".";
		m[k + "peak_max_bytes"] = i.peak_queue_max_bytes;
		m[k + "peak_mean_bytes"] = i.peak_queue_mean_bytes;
		m[k + "drain_ms_median"] = i.drain_ms_median;
		m[k + "drain_ms_max"] = i.drain_ms_max;
		m[k + "util_kept"] = i.util_kept;
	}
	return m;
}

Spread spread_of(const std::vector<double> &values)
{
	std::vector<double> v;
	for (double x : values)
		if (!std::isnan(x))
			v.push_back(x);
	Spread s;
	s.n = v.size();
	if (v.empty()) {
		s.mean = s.sd = s.min = s.max = kNaN;
		return s;
	}
	double sum = 0;
	for (double x : v)
		sum += x;
	s.mean = sum / double(s.n);
	s.min = *std::min_element(v.begin(), v.end());
	s.max = *std::max_element(v.begin(), v.end());
	if (s.n > 1) {
		double sq = 0;
		for (double x : v)
			sq += (x - s.mean) * (x - s.mean);
		s.sd = std::sqrt(sq / double(s.n - 1));
	}
	return s;
}

std::vector<SeedAggregate> aggregate_over_seeds(const std::vector<RunSummary> &summaries)
{
	std::vector<SeedAggregate> cells;
	std::vector<std::map<std::string, std::vector<double>>> values;
	for (const auto &s : summaries) {
		auto it = std::find_if(cells.begin(), cells.end(), [&s](const SeedAggregate &c) {
			return c.case_name == s.case_name && c.algo == s.algo;
		});
		if (it == cells.end()) {
			cells.push_back({s.case_name, s.algo, s.load, {}, {}});
			values.emplace_back();
			it = cells.end() - 1;
		}
		auto &vals = values[std::size_t(it - cells.begin())];
		it->seeds.push_back(s.seed);
		// a metric a run lacks (no such phase) counts as missing there
		for (const auto &[name, v] : run_metrics(s)) {
			auto &col = vals[name];
			col.resize(it->seeds.size() - 1, kNaN);
			col.push_back(v);
		}
	}
	for (std::size_t i = 0; i < cells.size(); i++)
		for (auto &[name, col] : values[i])
			cells[i].metrics[name] = spread_of(col);
	return cells;
}

nlohmann::json aggregate_to_json(const std::vector<SeedAggregate> &cells)
{
	nlohmann::json j;
	j["cells"] = nlohmann::json::array();
	for (const auto &c : cells) {
		nlohmann::json m = nlohmann::json::object();
		for (const auto &[name, sp] : c.metrics)
			m[name] = {{"n", sp.n},
				   {"mean", num_or_null(sp.mean)},
				   {"sd", num_or_null(sp.sd)},
				   {"min", num_or_null(sp.min)},
				   {"max", num_or_null(sp.max)}};
		nlohmann::json cell = {{"case", c.case_name}, {"algo", c.algo}, {"seeds", c.seeds}, {"metrics", m}};
		if (c.load > 0)
			cell["load"] = c.load;
		j["cells"].push_back(cell);
	}
	return j;
}

std::string spread_text(const Spread &s, const char *format, double scale)
{
	if (s.n == 0)
		return "-";
	std::string out = fmt(format, s.mean * scale);
	if (s.n > 1)
		out += " +-" + fmt(format, s.sd * scale) + " [" + fmt(format, s.min * scale) + ".." +
		       fmt(format, s.max * scale) + "]";
	return out;
}

std::string aggregate_table(const std::vector<SeedAggregate> &cells)
{
	Table t;
	t.header = {"run", "seeds", "goodput Mb/s", "queue p99 KB", "Jain"};
	bool fct = std::any_of(cells.begin(), cells.end(),
			       [](const SeedAggregate &c) { return c.metrics.count("fct.short.p999") > 0; });
	if (fct)
		t.header.insert(t.header.end(), {"short p99.9", "short p99", "medium p99.9", "long p99.9"});
	auto get = [](const SeedAggregate &c, const std::string &k) {
		auto it = c.metrics.find(k);
		return it == c.metrics.end() ? Spread{} : it->second;
	};
	for (const auto &c : cells) {
		std::vector<std::string> row = {c.case_name == "run" ? c.algo : c.case_name + " " + c.algo,
						std::to_string(c.seeds.size()),
						spread_text(get(c, "goodput_mbps"), "%.0f"),
						spread_text(get(c, "queue_p99_bytes"), "%.1f", 1.0 / 1024),
						spread_text(get(c, "jain"), "%.3f")};
		if (fct)
			for (const char *k : {"fct.short.p999", "fct.short.p99", "fct.medium.p999", "fct.long.p999"})
				row.push_back(spread_text(get(c, k), "%.2f"));
		t.rows.push_back(row);
	}
	return t.render();
}

} // namespace lumen
