// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#include "traffic/traffic_options.h"

#include "base/args.h"
#include "base/error.h"
#include "base/units.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace lumen
{

bool parse_endpoint(const std::string &addr, std::uint16_t port, Endpoint *out)
{
	Endpoint e;
	e.text = addr;
	auto *v4 = reinterpret_cast<sockaddr_in *>(&e.addr);
	auto *v6 = reinterpret_cast<sockaddr_in6 *>(&e.addr);
	if (inet_pton(AF_INET, addr.c_str(), &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons(port);
		e.len = sizeof(*v4);
	} else if (inet_pton(AF_INET6, addr.c_str(), &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons(port);
		e.len = sizeof(*v6);
	} else {
		return false;
	}
	*out = e;
	return true;
}

namespace
{

constexpr std::uint64_t kSecond = 1'000'000'000;
constexpr std::uint64_t kMaxDuration = 7 * 24 * 3600 * kSecond;
constexpr std::uint64_t kMaxFlowSize = 1ull << 40; // 1 TiB
constexpr std::uint32_t kMaxLongFlows = 10000;
constexpr std::uint32_t kMaxBursts = 1'000'000;
constexpr std::size_t kMaxDestinations = 4096;

std::uint16_t parse_port(const Args &a)
{
	auto v = a.get("--port");
	return v ? static_cast<std::uint16_t>(parse_uint(*v, "--port", 1, 65535)) : kDefaultTrafficPort;
}

std::string need(const Args &a, const std::string &opt, const std::string &why)
{
	auto v = a.get(opt);
	if (!v)
		throw UsageError(why + " needs " + opt);
	return *v;
}

// A non-empty name of [A-Za-z0-9_.-] (safe in CSV fields and file names).
std::string parse_name(const std::string &text, const std::string &what, std::size_t max_len)
{
	if (text.empty() || text.size() > max_len)
		throw UsageError(what + ": '" + text + "' must be 1.." + std::to_string(max_len) + " characters");
	for (char c : text)
		if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'))
			throw UsageError(what + ": '" + text + "' may only contain letters, digits, '_', '-', '.'");
	return text;
}

double parse_load(const std::string &text)
{
	char *end = nullptr;
	double v = std::strtod(text.c_str(), &end);
	if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v) || std::isspace(text[0]))
		throw UsageError("--load: '" + text + "' is not a number (e.g. 0.5)");
	if (!(v > 0) || v > 1)
		throw UsageError("--load: " + text + " is outside (0, 1] (a fraction of --link-rate)");
	return v;
}

std::vector<Endpoint> parse_destinations(const std::string &list, std::uint16_t port)
{
	std::vector<Endpoint> out;
	std::size_t pos = 0;
	while (true) {
		auto comma = list.find(',', pos);
		std::string one = list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
		Endpoint e;
		if (!parse_endpoint(one, port, &e))
			throw UsageError("--to: '" + one + "' is not a numeric IPv4 or IPv6 address");
		out.push_back(e);
		if (out.size() > kMaxDestinations)
			throw UsageError("--to: more than " + std::to_string(kMaxDestinations) + " addresses");
		if (comma == std::string::npos)
			break;
		pos = comma + 1;
	}
	return out;
}

// Options that belong to one workload only: naming them with another is a
// mistake worth reporting rather than ignoring.
void refuse_foreign(const Args &a, const std::vector<std::string> &opts, const std::string &workload)
{
	for (const auto &o : opts)
		if (a.has(o))
			throw UsageError(o + " does not apply to " + workload);
}

TrafficWorkload pick_workload(const Args &a)
{
	int n = a.has("--long") + a.has("--poisson") + a.has("--incast");
	if (n != 1)
		throw UsageError("give exactly one workload: --long N, --poisson WORKLOAD or --incast SIZE");
	if (a.has("--long"))
		return TrafficWorkload::Long;
	return a.has("--poisson") ? TrafficWorkload::Poisson : TrafficWorkload::Incast;
}

void parse_workload(const Args &a, TrafficClientOptions *o)
{
	o->workload = pick_workload(a);
	switch (o->workload) {
	case TrafficWorkload::Long:
		refuse_foreign(a, {"--load", "--max-flows", "--bursts", "--period"}, "--long");
		o->long_flows = static_cast<std::uint32_t>(parse_uint(*a.get("--long"), "--long", 1, kMaxLongFlows));
		o->duration_ns = parse_duration_ns(need(a, "--duration", "--long"), "--duration", kMaxDuration);
		break;
	case TrafficWorkload::Poisson:
		refuse_foreign(a, {"--bursts", "--period"}, "--poisson");
		o->poisson_workload = *a.get("--poisson");
		if (o->poisson_workload.empty())
			throw UsageError("--poisson needs a workload name or CSV path");
		o->load = parse_load(need(a, "--load", "--poisson"));
		o->duration_ns = parse_duration_ns(need(a, "--duration", "--poisson"), "--duration", kMaxDuration);
		if (auto m = a.get("--max-flows"))
			o->max_flows = parse_uint(*m, "--max-flows", 1, 100'000'000);
		break;
	case TrafficWorkload::Incast:
		refuse_foreign(a, {"--load", "--max-flows", "--duration"}, "--incast");
		o->incast_size = parse_bytes(*a.get("--incast"), "--incast", kMaxFlowSize);
		if (o->incast_size == 0)
			throw UsageError("--incast: the flow size must be at least 1 byte");
		o->bursts = static_cast<std::uint32_t>(
			parse_uint(need(a, "--bursts", "--incast"), "--bursts", 1, kMaxBursts));
		o->period_ns = parse_duration_ns(need(a, "--period", "--incast"), "--period", 3600 * kSecond);
		if (o->period_ns < 1000)
			throw UsageError("--period: must be at least 1us");
		break;
	}
	if (o->duration_ns > 0 && o->duration_ns < 1'000'000)
		throw UsageError("--duration: must be at least 1ms");
}

void parse_measurement(const Args &a, TrafficClientOptions *o)
{
	if (auto v = a.get("--sample")) {
		o->sample_ns = parse_duration_ns(*v, "--sample", 60 * kSecond);
		if (o->sample_ns < 100'000)
			throw UsageError("--sample: must be at least 100us");
	}
	if (auto v = a.get("--link-rate"))
		o->link_rate_bps = std::uint64_t{parse_rate_mbps(*v, "--link-rate")} * 1'000'000;
	if (auto v = a.get("--base-rtt"))
		o->base_rtt_ns = parse_duration_ns(*v, "--base-rtt", 10 * kSecond);
	if (auto v = a.get("--drain-timeout")) {
		o->drain_timeout_ns = parse_duration_ns(*v, "--drain-timeout", 24 * 3600 * kSecond);
		if (o->drain_timeout_ns == 0)
			throw UsageError("--drain-timeout: must be above 0");
	}
	if (auto v = a.get("--start-at"))
		o->start_at_ns = parse_uint(*v, "--start-at (CLOCK_MONOTONIC ns)", 1, INT64_MAX);
	o->start_from_input = a.has("--start-from-input");
	if (o->start_from_input && o->start_at_ns)
		throw UsageError("--start-at and --start-from-input exclude each other");
}

std::string parse_path(const Args &a, const std::string &opt)
{
	std::string p = *a.get(opt);
	if (p.empty())
		throw UsageError(opt + " needs a file name");
	return p;
}

} // namespace

TrafficServerOptions parse_traffic_server_options(const std::vector<std::string> &args)
{
	Args a = Args::parse(args, {"--quiet"});
	a.allow_only({"--port", "--bind", "--ready-file", "--quiet"});
	if (!a.positional.empty())
		throw UsageError("unexpected argument '" + a.positional[0] + "'");
	TrafficServerOptions o;
	o.port = parse_port(a);
	if (auto b = a.get("--bind")) {
		Endpoint e;
		if (!parse_endpoint(*b, o.port, &e))
			throw UsageError("--bind: '" + *b + "' is not a numeric IPv4 or IPv6 address");
		o.bind = *b;
	}
	if (a.has("--ready-file"))
		o.ready_file = parse_path(a, "--ready-file");
	o.quiet = a.has("--quiet");
	return o;
}

TrafficClientOptions parse_traffic_client_options(const std::vector<std::string> &args)
{
	Args a = Args::parse(args, {"--json", "--quiet", "--start-from-input", "--new-files"});
	a.allow_only({"--start-from-input",
		      "--to",
		      "--port",
		      "--cc",
		      "--label",
		      "--seed",
		      "--sample",
		      "--link-rate",
		      "--base-rtt",
		      "--flows-csv",
		      "--samples-csv",
		      "--new-files",
		      "--json",
		      "--quiet",
		      "--long",
		      "--duration",
		      "--poisson",
		      "--load",
		      "--max-flows",
		      "--incast",
		      "--bursts",
		      "--period",
		      "--start-at",
		      "--drain-timeout"});
	if (!a.positional.empty())
		throw UsageError("unexpected argument '" + a.positional[0] + "'");
	TrafficClientOptions o;
	o.port = parse_port(a);
	o.to = parse_destinations(need(a, "--to", "lumen traffic client"), o.port);
	if (auto v = a.get("--cc"))
		o.cc = parse_name(*v, "--cc", 15); // TCP_CA_NAME_MAX - 1
	if (auto v = a.get("--label"))
		o.label = parse_name(*v, "--label", 64);
	if (auto v = a.get("--seed"))
		o.seed = parse_uint(*v, "--seed", 0, UINT64_MAX);
	parse_measurement(a, &o);
	parse_workload(a, &o);
	if (a.has("--flows-csv"))
		o.flows_csv = parse_path(a, "--flows-csv");
	if (a.has("--samples-csv"))
		o.samples_csv = parse_path(a, "--samples-csv");
	o.new_files = a.has("--new-files");
	o.json = a.has("--json");
	o.quiet = a.has("--quiet");
	return o;
}

std::uint64_t parse_start_line(const std::string &line, const std::string &source)
{
	const std::string key = "start-at ";
	if (line.compare(0, key.size(), key) != 0)
		throw UsageError(source + ": expected 'start-at MONO_NS', got '" + line.substr(0, 64) + "'");
	return parse_uint(line.substr(key.size()), source + ": start-at (CLOCK_MONOTONIC ns)", 1, INT64_MAX);
}

const char *traffic_workload_name(TrafficWorkload w)
{
	switch (w) {
	case TrafficWorkload::Long:
		return "long";
	case TrafficWorkload::Poisson:
		return "poisson";
	case TrafficWorkload::Incast:
		return "incast";
	}
	return "?";
}

} // namespace lumen
