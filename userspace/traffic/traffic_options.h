// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/traffic/traffic_options.h - `lumen traffic` command lines, parsed
// and validated into plain structures (unit-testable, no I/O beyond
// address parsing).
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lumen
{

constexpr std::uint16_t kDefaultTrafficPort = 5500;

// A numeric IPv4 or IPv6 address (no name resolution: testbeds have none).
struct Endpoint {
	std::string text; // as given, for records
	sockaddr_storage addr{};
	socklen_t len = 0;
};
// Parses ADDR with `port`; false when ADDR is not a numeric address.
bool parse_endpoint(const std::string &addr, std::uint16_t port, Endpoint *out);

struct TrafficServerOptions {
	std::uint16_t port = kDefaultTrafficPort;
	std::optional<std::string> bind; // none = every address (IPv6 + IPv4)
	std::optional<std::string> ready_file; // none = stdout
	bool quiet = false;
};

// What a client runs; the experiment runner's phases are the same kinds.
enum class TrafficWorkload {
	Long,
	Poisson,
	Incast
};
const char *traffic_workload_name(TrafficWorkload w); // "long", "poisson", "incast"

struct TrafficClientOptions {
	std::vector<Endpoint> to;
	std::uint16_t port = kDefaultTrafficPort;
	std::optional<std::string> cc; // none = the namespace's default
	std::string label = "client";
	std::uint64_t seed = 1;
	std::uint64_t sample_ns = 10'000'000;
	std::uint64_t link_rate_bps = 1'000'000'000;
	std::uint64_t base_rtt_ns = 100'000;
	std::optional<std::string> flows_csv;
	std::optional<std::string> samples_csv;
	bool new_files = false; // --new-files: the CSVs must not exist yet (O_EXCL)
	bool json = false;
	bool quiet = false;

	TrafficWorkload workload = TrafficWorkload::Long;
	std::uint32_t long_flows = 0; // --long N
	std::uint64_t duration_ns = 0; // --long / --poisson
	std::string poisson_workload; // websearch | datamining | CSV path
	double load = 0; // (0, 1]
	std::uint64_t max_flows = 0; // 0 = unlimited
	std::uint64_t incast_size = 0;
	std::uint32_t bursts = 0;
	std::uint64_t period_ns = 0;
	std::optional<std::uint64_t> start_at_ns; // CLOCK_MONOTONIC
	// --start-from-input: once set up, print "ready" on stderr and take the
	// start time from a line "start-at MONO_NS" on standard input (a start
	// barrier across hosts whose processes start up at different speeds)
	bool start_from_input = false;
	// after the last flow starts, flows still open this long later fail
	// with error:timeout (so a dead server cannot hang a run)
	std::uint64_t drain_timeout_ns = 60'000'000'000;
};

// `args` are the words after "server" / "client". UsageError on any
// malformed, out-of-range, missing or conflicting option.
TrafficServerOptions parse_traffic_server_options(const std::vector<std::string> &args);
TrafficClientOptions parse_traffic_client_options(const std::vector<std::string> &args);
// The start time in a --start-from-input line ("start-at MONO_NS", without
// the newline); UsageError naming `source` otherwise.
std::uint64_t parse_start_line(const std::string &line, const std::string &source);

} // namespace lumen
