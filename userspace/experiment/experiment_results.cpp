// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/experiment/experiment_results.cpp - see experiment_results.h.
#include "experiment/experiment_results.h"

#include "base/error.h"
#include "base/system.h"
#include "experiment/report_plot.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace lumen
{

using nlohmann::json;

namespace
{

std::string env_or_empty(const char *name)
{
	const char *v = std::getenv(name);
	return v ? v : "";
}

template <typename Writer> void write_csv(const std::string &path, const std::vector<RunData> &runs, Writer w)
{
	std::ofstream f(path);
	w(f, runs);
	if (!f)
		throw Error("cannot write " + path);
}

// "kmod powertcp/run: int_updates 1234, ..." per run of a module
// algorithm: the counters that say whether INT drove the window.
std::string kmod_counters_text(const std::vector<RunData> &runs, const std::vector<KmodRunCounters> &counters)
{
	static const char *const shown[] = {"flows",	   "int_echoes", "int_updates",	 "fallback_updates",
					    "rtt_updates", "no_state",	 "int_unusable", "rtt_guard"};
	std::string out;
	for (std::size_t i = 0; i < runs.size(); i++) {
		if (!counters[i])
			continue;
		out += "tcp_powertcp " + runs[i].algo + "/" + runs[i].case_name + ":";
		for (const char *name : shown) {
			auto it = counters[i]->find(name);
			if (it != counters[i]->end())
				out += std::string(" ") + name + " " + std::to_string(it->second);
		}
		out += "\n";
	}
	return out;
}

} // namespace

json config_json(const Plan &plan, const RunOptions &opts, Fabric &fab, const std::vector<RunData> &runs)
{
	json c;
	c["experiment"] = json::parse(experiment_to_json(plan.spec));
	c["options"] = {
		{"smoke", opts.smoke},
		{"duration_override_s", opts.duration_ns ? json(double(*opts.duration_ns) / 1e9) : json(nullptr)},
		{"algorithms_override", opts.algorithms},
		{"rate_override_mbps", opts.rate_mbps ? json(*opts.rate_mbps) : json(nullptr)},
		{"delay_override_us", opts.delay_ns ? json(double(*opts.delay_ns) / 1e3) : json(nullptr)}};
	c["lumen_version"] = lumen_version();
	c["kernel_release"] = kernel_release();
	c["started_utc"] = utc_timestamp("%Y-%m-%dT%H:%M:%SZ");
	// "testbed" (namespace testbed) or "hosts" (an inventory over SSH)
	json where = json::parse(fab.describe_json());
	for (const auto &[key, value] : where.items())
		c[key] = value;
	c["base_rtt_ns"] = plan.base_rtt_ns;
	c["path_rate_mbps"] = plan.path_rate_mbps;
	c["powertcp"] = {{"loaded", uses(plan.spec, is_bpf_algorithm)},
			 {"host_bw_mbps", plan.path_rate_mbps},
			 {"base_rtt_us", double(plan.tau_ns) / 1e3},
			 {"params", plan.spec.cc_params}};
	c["timely"] = plan.timely_t_low_ns ? json{{"t_low_us", double(plan.timely_t_low_ns) / 1e3},
						  {"t_high_us", double(plan.timely_t_high_ns) / 1e3},
						  {"t_low_per_tau", kTimelyTLowPerTau},
						  {"t_high_per_tau", kTimelyTHighPerTau}}
					   : json(nullptr);
	c["seeds"] = plan.spec.seeds;
	c["cc_impl"] = json::object();
	for (const auto &a : plan.spec.algorithms)
		c["cc_impl"][a] = cc_impl(a);
	json kmod = {{"used", uses(plan.spec, is_kmod_algorithm)}};
	if (uses(plan.spec, is_kmod_algorithm))
		kmod["params"] = plan.kmod_params;
	c["kmod"] = kmod;
	std::string vm_kernel = env_or_empty("LUMEN_EXPERIMENT_VM");
	c["vm"] = vm_kernel.empty() ? json(nullptr)
				    : json{{"kernel", vm_kernel}, {"kmod", env_or_empty("LUMEN_EXPERIMENT_KMOD")}};
	c["queue_sample_interval_ms"] = kQueueSampleNs / 1000000;
	c["throughput_bin_ms"] = kThroughputBinNs / 1000000;
	c["runs"] = json::array();
	for (const auto &r : runs)
		c["runs"].push_back({{"algo", r.algo},
				     {"cc_impl", cc_impl(r.algo)},
				     {"case", r.case_name},
				     {"seed", r.seed},
				     {"load", r.load},
				     {"t0_monotonic_ns", r.t0_ns},
				     {"length_s", double(r.length_ns) / 1e9}});
	return c;
}

std::vector<RunSummary> write_results(const Plan &plan, const std::vector<RunData> &runs,
				      const std::vector<KmodRunCounters> &counters)
{
	std::vector<RunSummary> sums;
	for (const auto &r : runs)
		sums.push_back(summarise_run(r));
	json summary;
	summary["experiment"] = plan.spec.name;
	summary["kernel_release"] = kernel_release();
	summary["seeds"] = plan.spec.seeds;
	summary["runs"] = json::array();
	for (std::size_t i = 0; i < sums.size(); i++) {
		json j = summary_to_json(sums[i]);
		j["cc_impl"] = cc_impl(sums[i].algo);
		// the module's counters over this run (null: not a module algorithm)
		j["kmod_stats"] = counters[i] ? json(*counters[i]) : json(nullptr);
		summary["runs"].push_back(j);
	}
	write_file(plan.dir + "/summary.json", summary.dump(2) + "\n");
	json agg = aggregate_to_json(aggregate_over_seeds(sums));
	agg["experiment"] = plan.spec.name;
	agg["seeds"] = plan.spec.seeds;
	write_file(plan.dir + "/aggregate.json", agg.dump(2) + "\n");
	write_csv(plan.dir + "/flows.csv", runs, write_flows_csv);
	write_csv(plan.dir + "/samples.csv", runs, write_samples_csv);
	write_csv(plan.dir + "/queue.csv", runs, write_queue_csv);
	write_csv(plan.dir + "/throughput.csv", runs, write_throughput_csv);
	progress("[" + plan.spec.name + "] plotting");
	// the plots show one seed's runs (the first); the tables all of them
	std::vector<RunData> plotted;
	std::vector<RunSummary> plotted_sums;
	for (std::size_t i = 0; i < runs.size(); i++)
		if (runs[i].seed == plan.spec.seeds.front()) {
			plotted.push_back(runs[i]);
			plotted_sums.push_back(sums[i]);
		}
	auto pngs = render_plots(plot_scripts(plotted, plotted_sums), plan.dir);

	std::string table = summary_table(sums) + kmod_counters_text(runs, counters);
	write_file(plan.dir + "/summary.txt", table);
	std::printf("\n%s: %s\nbottleneck %u Mbit/s, base RTT %.0f us (PowerTCP tau %.0f us)\n\n%s\n",
		    plan.spec.name.c_str(), plan.spec.description.c_str(), plan.path_rate_mbps,
		    double(plan.base_rtt_ns) / 1e3, double(plan.tau_ns) / 1e3, table.c_str());
	std::printf("results: %s/ (config.json summary.json aggregate.json flows.csv samples.csv queue.csv "
		    "throughput.csv",
		    plan.dir.c_str());
	for (const auto &p : pngs)
		std::printf(" %s", p.substr(p.rfind('/') + 1).c_str());
	std::printf(")\n");
	std::fflush(stdout);
	return sums;
}

} // namespace lumen
