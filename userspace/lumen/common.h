// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/lumen/common.h - what every `lumen` subcommand shares: errors,
// validated argument parsing, privilege and kernel checks, the bpffs pin
// directory, sysctl access, and per-CPU counter sums.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace lumen
{

// A failure to report as "lumen: <what>" with exit status 1.
struct Error : std::runtime_error {
	using std::runtime_error::runtime_error;
};

// A command-line mistake: reported with a usage hint, exit status 2.
struct UsageError : std::runtime_error {
	using std::runtime_error::runtime_error;
};

// ---------------------------------------------------------------------
// Arguments

// Positional words and --key value / --key=value / --flag options.
struct Args {
	std::vector<std::string> positional;
	std::map<std::string, std::string> options; // "--rate" -> "1gbit"; flags map to ""

	// Splits argv; `flags` are the options that take no value.
	static Args parse(const std::vector<std::string> &argv, const std::vector<std::string> &flags = {});
	bool has(const std::string &opt) const;
	std::optional<std::string> get(const std::string &opt) const;
	// Refuses options not in `known` (UsageError naming the first one).
	void allow_only(const std::vector<std::string> &known) const;
};

// Each parser refuses malformed text and out-of-range values with a
// UsageError that names `what` and the accepted range.
std::uint64_t parse_uint(std::string_view text, std::string_view what, std::uint64_t min, std::uint64_t max);
// "1gbit", "100mbit", "2.5gbit", "25G", "800M", "10000" (Mbit/s) -> Mbit/s
std::uint32_t parse_rate_mbps(std::string_view text, std::string_view what);
// "1500", "64k", "1m", "2MiB" -> bytes (k/m/g = 1024 multiples, like tc)
std::uint64_t parse_bytes(std::string_view text, std::string_view what, std::uint64_t max);
// "20us", "1ms", "500ns", "0.1s" -> ns
std::uint64_t parse_duration_ns(std::string_view text, std::string_view what, std::uint64_t max);
// "0.9" -> Q16 (65536 = 1.0), within [min, max]
std::uint32_t parse_q16(std::string_view text, std::string_view what, double min, double max);

// ---------------------------------------------------------------------
// Environment

void require_root(); // Error "must run as root" otherwise
void require_btf(); // Error when /sys/kernel/btf/vmlinux is missing
// Makes sure LUMEN_PIN_ROOT exists on a mounted bpffs (mounts one at
// /sys/fs/bpf if nothing is there). Returns the directory.
std::string ensure_pin_root();
std::string pin_path(std::string_view name); // LUMEN_PIN_ROOT "/" name
bool path_exists(const std::string &path);
std::uint64_t monotonic_ns(); // CLOCK_MONOTONIC in ns
// Where the cgroup v2 hierarchy is mounted (first cgroup2 in
// /proc/mounts); Error when there is none.
std::string cgroup2_root();
// strerror of an errno value, or of a negative one as libbpf returns them
std::string errno_text(int err);

// libbpf's messages are collected, not printed; on failure the last lines
// go into the error text (verifier logs, missing kernel features).
void capture_libbpf_log();
std::string libbpf_log_tail(std::size_t lines = 20);
void clear_libbpf_log();

// ---------------------------------------------------------------------
// sysctl (net.ipv4.tcp_*_congestion_control)

std::string read_sysctl(const std::string &name); // "net.ipv4.tcp_..."; trimmed
void write_sysctl(const std::string &name, const std::string &value);
// Adds or removes one algorithm from net.ipv4.tcp_allowed_congestion_control
// (a space-separated list); returns whether the list changed.
bool allow_congestion_control(const std::string &algo, bool allow);
std::vector<std::string> split_words(const std::string &text);

// ---------------------------------------------------------------------
// Maps

// Sums a per-CPU array of u64 counters (map fd), entries [0, n).
std::vector<std::uint64_t> sum_percpu_counters(int map_fd, std::uint32_t n);

// ---------------------------------------------------------------------
// Interruption (Ctrl-C): long-running commands install the handlers, poll
// interrupted() in their loops and throw Interrupted, so destructors undo
// what was set up (testbeds, loaded programs) before the process exits.

struct Interrupted : Error {
	Interrupted() : Error("interrupted")
	{
	}
};
void install_interrupt_handlers(); // SIGINT, SIGTERM, SIGHUP set the flag
bool interrupted();
void throw_if_interrupted();
// Sleeps up to `ns`, waking early (and throwing Interrupted) on a signal.
void sleep_interruptible_ns(std::uint64_t ns);

// ---------------------------------------------------------------------
// Output

// Minimal JSON object writer for --json output (numbers and strings).
class Json
{
      public:
	Json &num(const std::string &key, std::uint64_t v);
	Json &num(const std::string &key, double v);
	Json &str(const std::string &key, const std::string &v);
	Json &raw(const std::string &key, const std::string &json); // nested value
	std::string dump() const;

      private:
	std::vector<std::pair<std::string, std::string>> fields_;
};
std::string json_escape(const std::string &s);
// The words joined by `sep`: {"a", "b"}, ", " -> "a, b".
std::string join_words(const std::vector<std::string> &words, const char *sep);

} // namespace lumen
