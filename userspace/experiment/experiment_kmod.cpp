// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/experiment/experiment_kmod.cpp - tcp_powertcp parameters and
// counters for `lumen experiment` (see experiment_kmod.h).
#include "experiment/experiment_kmod.h"

#include "base/error.h"
#include "base/system.h"
#include "base/units.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

namespace lumen
{

namespace
{

// The module's own ranges (kernel/tcp_powertcp.c): refused here with the
// parameter's name rather than as a bare EINVAL from sysfs.
constexpr std::uint64_t kBaseRttMaxUs = 1'000'000;
constexpr std::uint64_t kExpectedFlowsMax = 1'000'000;
constexpr std::uint64_t kBetaMaxBytes = 1ull << 30;

std::string params_dir()
{
	return kmod_sysfs_dir() + "/parameters";
}

std::string read_param(const std::string &name)
{
	std::string path = params_dir() + "/" + name;
	std::ifstream f(path);
	std::stringstream ss;
	ss << f.rdbuf();
	if (!f)
		throw Error("cannot read " + path + " (is tcp_powertcp loaded?)");
	std::string v = ss.str();
	while (!v.empty() && (v.back() == '\n' || v.back() == ' '))
		v.pop_back();
	return v;
}

// sysfs reports the module's refusal (EINVAL) on write or at the latest on
// close: both are checked.
void write_param(const std::string &name, const std::string &value)
{
	std::string path = params_dir() + "/" + name;
	FILE *f = std::fopen(path.c_str(), "w");
	if (!f)
		throw Error("cannot open " + path + ": " + std::strerror(errno));
	bool ok = std::fputs(value.c_str(), f) >= 0;
	ok = (std::fclose(f) == 0) && ok;
	if (!ok)
		throw Error("tcp_powertcp refused " + name + "=" + value + " (" + std::strerror(errno) +
			    "; dmesg has the range)");
}

std::uint64_t us_rounded(std::uint64_t ns)
{
	return (ns + 500) / 1000;
}

std::string base_rtt_us_value(std::uint64_t ns, const std::string &what)
{
	std::uint64_t us = us_rounded(ns);
	if (us < 1 || us > kBaseRttMaxUs)
		throw UsageError(what + ": the module takes 1 us to 1 s");
	return std::to_string(us);
}

// One `lumen cc set` parameter as the module's (name, value).
std::pair<std::string, std::string> translate_cc_param(const std::string &key, const std::string &val)
{
	std::string what = "cc_params: " + key;
	if (key == "gamma") {
		// Q16 in `lumen cc`, permille in the module
		std::uint32_t q16 = parse_q16(val, what, 0.01, 1.0);
		return {"gamma", std::to_string((std::uint64_t{q16} * 1000 + 32768) / 65536)};
	}
	if (key == "flows")
		return {"expected_flows", std::to_string(parse_uint(val, what, 1, kExpectedFlowsMax))};
	if (key == "beta")
		return {"beta_bytes", val == "auto" ? "0" : std::to_string(parse_bytes(val, what, kBetaMaxBytes))};
	if (key == "host-bw")
		return {"host_bw_mbps", std::to_string(parse_rate_mbps(val, what))};
	if (key == "base-rtt") {
		if (val == "auto" || val == "0")
			return {"base_rtt_us", "0"};
		return {"base_rtt_us", base_rtt_us_value(parse_duration_ns(val, what, kBaseRttMaxUs * 1000), what)};
	}
	// HPCC's (the module's hpcc): the module checks the ranges, as `lumen cc` does
	if (key == "eta") {
		std::uint32_t q16 = parse_q16(val, what, 0.5, 1.0);
		return {"hpcc_eta", std::to_string((std::uint64_t{q16} * 1000 + 32768) / 65536)};
	}
	if (key == "max-stage")
		return {"hpcc_max_stage", std::to_string(parse_uint(val, what, 0, 100))};
	if (key == "wai")
		return {"hpcc_wai_bytes", val == "auto" ? "0" : std::to_string(parse_bytes(val, what, 1ull << 30))};
	throw UsageError("cc_params: unknown parameter '" + key +
			 "' (gamma, flows, beta, host-bw, base-rtt; HPCC: eta, max-stage, wai)");
}

void set_or_append(KmodParamList &list, const std::pair<std::string, std::string> &p)
{
	for (auto &entry : list)
		if (entry.first == p.first) {
			entry.second = p.second;
			return;
		}
	list.push_back(p);
}

} // namespace

bool is_kmod_algorithm(const std::string &name)
{
	return name == "powertcp" || name == "theta_powertcp" || name == "hpcc";
}

const char *cc_impl(const std::string &algo)
{
	if (is_kmod_algorithm(algo))
		return "kmod";
	if (algo.rfind("bpf_", 0) == 0)
		return "bpf";
	return "kernel";
}

std::string kmod_sysfs_dir()
{
	const char *env = std::getenv("LUMEN_KMOD_SYSFS");
	return env && *env ? env : "/sys/module/tcp_powertcp";
}

bool kmod_loaded()
{
	struct stat st;
	return ::stat(params_dir().c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

KmodCounters parse_kmod_stats(const std::string &text, const std::string &what)
{
	KmodCounters out;
	std::istringstream in(text);
	std::string line;
	while (std::getline(in, line)) {
		if (line.empty())
			continue;
		std::istringstream words(line);
		std::string name, value, extra;
		words >> name >> value;
		if (name.empty() || value.empty() || (words >> extra) ||
		    value.find_first_not_of("0123456789") != std::string::npos || value.size() > 19)
			throw Error(what + ": line '" + line + "' is not 'name count'");
		if (!out.emplace(name, std::stoull(value)).second)
			throw Error(what + ": counter " + name + " appears twice");
	}
	if (out.empty())
		throw Error(what + ": no counters");
	return out;
}

KmodCounters kmod_counters_delta(const KmodCounters &before, const KmodCounters &after)
{
	KmodCounters out;
	for (const auto &[name, v] : after) {
		auto it = before.find(name);
		std::uint64_t old = it == before.end() ? 0 : it->second;
		out[name] = (name == "states" || name == "hooks" || v < old) ? v : v - old;
	}
	return out;
}

std::string kmod_proc_path()
{
	const char *env = std::getenv("LUMEN_KMOD_PROC");
	return env && *env ? env : "/proc/thread-self/net/powertcp";
}

KmodCounters read_kmod_stats()
{
	std::string path = kmod_proc_path();
	if (!kmod_loaded())
		throw Error("reading " + path + ": tcp_powertcp is not loaded");
	return parse_kmod_stats(read_file(path), path);
}

KmodCounters read_kmod_stats(const Netns &ns)
{
	NetnsGuard in(ns); // /proc/thread-self/net follows this thread's namespace
	return read_kmod_stats();
}

void kmod_counters_add(KmodCounters &sum, const KmodCounters &one)
{
	for (const auto &[name, v] : one)
		sum[name] = name == "hooks" ? std::max(sum[name], v) : sum[name] + v;
}

KmodParamList kmod_param_values(std::uint32_t host_bw_mbps, std::uint64_t tau_ns,
				const std::map<std::string, std::string> &cc_params)
{
	if (host_bw_mbps == 0)
		throw UsageError("host_bw_mbps: the path has no rate");
	KmodParamList list = {{"host_bw_mbps", std::to_string(host_bw_mbps)},
			      {"base_rtt_us", base_rtt_us_value(tau_ns, "base_rtt_us")}};
	for (const auto &[k, v] : cc_params)
		set_or_append(list, translate_cc_param(k, v));
	return list;
}

KmodParamsSet::KmodParamsSet(const KmodParamList &values)
{
	try {
		for (const auto &[name, value] : values) {
			std::string old = read_param(name);
			write_param(name, value);
			saved_.emplace_back(name, old);
		}
	} catch (...) {
		restore(); // what was written before the failure
		throw;
	}
}

KmodParamsSet::~KmodParamsSet()
{
	restore();
}

void KmodParamsSet::restore()
{
	for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
		try {
			write_param(it->first, it->second);
		} catch (const std::exception &e) {
			std::fprintf(stderr, "lumen experiment: warning: restoring %s: %s\n", it->first.c_str(),
				     e.what());
		}
	}
	saved_.clear();
}

} // namespace lumen
