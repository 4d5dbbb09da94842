// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#include "lumen/common.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <mutex>
#include <sstream>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <linux/magic.h>

extern "C" {
#include "lumen/bpf_shared.h"
}

namespace lumen
{

// ---------------------------------------------------------------------
// Arguments

Args Args::parse(const std::vector<std::string> &argv, const std::vector<std::string> &flags)
{
	Args a;
	for (std::size_t i = 0; i < argv.size(); i++) {
		const std::string &w = argv[i];
		if (w.rfind("--", 0) != 0 || w == "--") {
			a.positional.push_back(w);
			continue;
		}
		auto eq = w.find('=');
		if (eq != std::string::npos) {
			a.options[w.substr(0, eq)] = w.substr(eq + 1);
			continue;
		}
		bool is_flag = false;
		for (const auto &f : flags)
			is_flag |= (f == w);
		if (is_flag) {
			a.options[w] = "";
		} else {
			if (i + 1 >= argv.size())
				throw UsageError("option " + w + " needs a value");
			a.options[w] = argv[++i];
		}
	}
	return a;
}

bool Args::has(const std::string &opt) const
{
	return options.count(opt) != 0;
}

std::optional<std::string> Args::get(const std::string &opt) const
{
	auto it = options.find(opt);
	if (it == options.end())
		return std::nullopt;
	return it->second;
}

void Args::allow_only(const std::vector<std::string> &known) const
{
	for (const auto &[k, v] : options) {
		bool ok = false;
		for (const auto &n : known)
			ok |= (n == k);
		if (!ok)
			throw UsageError("unknown option " + k);
	}
}

static std::string range_text(std::uint64_t min, std::uint64_t max)
{
	return "[" + std::to_string(min) + ", " + std::to_string(max) + "]";
}

std::uint64_t parse_uint(std::string_view text, std::string_view what, std::uint64_t min, std::uint64_t max)
{
	std::string s(text);
	if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos)
		throw UsageError(std::string(what) + ": '" + s + "' is not a non-negative integer");
	errno = 0;
	unsigned long long v = std::strtoull(s.c_str(), nullptr, 10);
	if (errno == ERANGE || v < min || v > max)
		throw UsageError(std::string(what) + ": " + s + " is outside " + range_text(min, max));
	return v;
}

// Number with an optional unit suffix; returns false when the number part
// is malformed. The suffix is lower-cased.
static bool split_number(std::string_view text, double *value, std::string *suffix)
{
	std::string s(text);
	std::size_t i = 0;
	while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.'))
		i++;
	if (i == 0)
		return false;
	std::string num = s.substr(0, i);
	if (std::count(num.begin(), num.end(), '.') > 1 || num == ".")
		return false;
	*value = std::strtod(num.c_str(), nullptr);
	*suffix = s.substr(i);
	for (auto &c : *suffix)
		c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
	return std::isfinite(*value);
}

std::uint32_t parse_rate_mbps(std::string_view text, std::string_view what)
{
	double v;
	std::string unit;
	if (!split_number(text, &v, &unit))
		throw UsageError(std::string(what) + ": '" + std::string(text) +
				 "' is not a rate (e.g. 1gbit, 100mbit)");
	double mult;
	if (unit.empty() || unit == "mbit" || unit == "m" || unit == "mbps")
		mult = 1;
	else if (unit == "gbit" || unit == "g" || unit == "gbps")
		mult = 1000;
	else if (unit == "tbit" || unit == "t")
		mult = 1e6;
	else if (unit == "kbit" || unit == "k")
		mult = 1e-3;
	else
		throw UsageError(std::string(what) + ": unknown rate unit '" + unit + "' (kbit, mbit, gbit, tbit)");
	double mbps = v * mult;
	if (mbps < 1 || mbps > LUMEN_INT_RATE_MAX_MBPS || std::fabs(mbps - std::round(mbps)) > 1e-6)
		throw UsageError(std::string(what) + ": " + std::string(text) +
				 " must be a whole number of Mbit/s within [1 Mbit/s, 1.6 Tbit/s]");
	return static_cast<std::uint32_t>(std::llround(mbps));
}

std::uint64_t parse_bytes(std::string_view text, std::string_view what, std::uint64_t max)
{
	double v;
	std::string unit;
	if (!split_number(text, &v, &unit))
		throw UsageError(std::string(what) + ": '" + std::string(text) +
				 "' is not a size (e.g. 1500, 64k, 1m)");
	double mult;
	if (unit.empty() || unit == "b")
		mult = 1;
	else if (unit == "k" || unit == "kb" || unit == "kib")
		mult = 1024;
	else if (unit == "m" || unit == "mb" || unit == "mib")
		mult = 1024.0 * 1024;
	else if (unit == "g" || unit == "gb" || unit == "gib")
		mult = 1024.0 * 1024 * 1024;
	else
		throw UsageError(std::string(what) + ": unknown size unit '" + unit + "' (k, m, g)");
	double bytes = v * mult;
	if (bytes > double(max) || std::fabs(bytes - std::round(bytes)) > 1e-6)
		throw UsageError(std::string(what) + ": " + std::string(text) +
				 " must be a whole number of bytes <= " + std::to_string(max));
	return static_cast<std::uint64_t>(std::llround(bytes));
}

std::uint64_t parse_duration_ns(std::string_view text, std::string_view what, std::uint64_t max)
{
	double v;
	std::string unit;
	if (!split_number(text, &v, &unit) || unit.empty())
		throw UsageError(std::string(what) + ": '" + std::string(text) +
				 "' is not a duration (e.g. 20us, 1ms)");
	double mult;
	if (unit == "ns")
		mult = 1;
	else if (unit == "us")
		mult = 1e3;
	else if (unit == "ms")
		mult = 1e6;
	else if (unit == "s")
		mult = 1e9;
	else
		throw UsageError(std::string(what) + ": unknown time unit '" + unit + "' (ns, us, ms, s)");
	double ns = v * mult;
	if (ns > double(max) || std::fabs(ns - std::round(ns)) > 1e-6)
		throw UsageError(std::string(what) + ": " + std::string(text) +
				 " must be a whole number of ns <= " + std::to_string(max) + " ns");
	return static_cast<std::uint64_t>(std::llround(ns));
}

std::uint32_t parse_q16(std::string_view text, std::string_view what, double min, double max)
{
	double v;
	std::string unit;
	if (!split_number(text, &v, &unit) || !unit.empty())
		throw UsageError(std::string(what) + ": '" + std::string(text) + "' is not a number");
	if (v < min || v > max)
		throw UsageError(std::string(what) + ": " + std::string(text) + " is outside [" + std::to_string(min) +
				 ", " + std::to_string(max) + "]");
	return static_cast<std::uint32_t>(std::llround(v * 65536.0));
}

// ---------------------------------------------------------------------
// Environment

void require_root()
{
	if (geteuid() != 0)
		throw Error("must run as root (loading BPF programs and pinning under " LUMEN_PIN_ROOT ")");
}

void require_btf()
{
	if (!path_exists("/sys/kernel/btf/vmlinux"))
		throw Error("kernel has no BTF (/sys/kernel/btf/vmlinux missing): CONFIG_DEBUG_INFO_BTF=y is required");
}

bool path_exists(const std::string &path)
{
	struct stat st;
	return ::stat(path.c_str(), &st) == 0;
}

std::string ensure_pin_root()
{
	struct statfs fs;
	if (::statfs("/sys/fs/bpf", &fs) != 0 || fs.f_type != BPF_FS_MAGIC) {
		::mkdir("/sys/fs/bpf", 0700);
		if (::mount("bpf", "/sys/fs/bpf", "bpf", 0, nullptr) != 0)
			throw Error(std::string("cannot mount bpffs on /sys/fs/bpf: ") + std::strerror(errno));
	}
	if (::mkdir(LUMEN_PIN_ROOT, 0700) != 0 && errno != EEXIST)
		throw Error(std::string("cannot create " LUMEN_PIN_ROOT ": ") + std::strerror(errno));
	return LUMEN_PIN_ROOT;
}

std::string pin_path(std::string_view name)
{
	return std::string(LUMEN_PIN_ROOT) + "/" + std::string(name);
}

static std::mutex log_mutex;
static std::deque<std::string> log_lines;

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	// verifier logs come as one long message: size the buffer to fit
	va_list copy;
	va_copy(copy, ap);
	int need = std::vsnprintf(nullptr, 0, fmt, copy);
	va_end(copy);
	if (need < 0)
		return 0;
	std::string buf(static_cast<std::size_t>(need) + 1, '\0');
	std::vsnprintf(buf.data(), buf.size(), fmt, ap);
	buf.resize(static_cast<std::size_t>(need));
	std::lock_guard<std::mutex> lock(log_mutex);
	std::istringstream in(buf);
	std::string line;
	while (std::getline(in, line))
		if (!line.empty())
			log_lines.push_back(line);
	while (log_lines.size() > 400)
		log_lines.pop_front();
	return 0;
}

void capture_libbpf_log()
{
	libbpf_set_print(libbpf_print);
}

std::string libbpf_log_tail(std::size_t lines)
{
	std::lock_guard<std::mutex> lock(log_mutex);
	std::string out;
	std::size_t start = log_lines.size() > lines ? log_lines.size() - lines : 0;
	for (std::size_t i = start; i < log_lines.size(); i++)
		out += "\n  libbpf: " + log_lines[i];
	return out;
}

void clear_libbpf_log()
{
	std::lock_guard<std::mutex> lock(log_mutex);
	log_lines.clear();
}

// ---------------------------------------------------------------------
// sysctl

static std::string sysctl_path(const std::string &name)
{
	std::string p = "/proc/sys/" + name;
	for (std::size_t i = std::string("/proc/sys/").size(); i < p.size(); i++)
		if (p[i] == '.')
			p[i] = '/';
	return p;
}

std::string read_sysctl(const std::string &name)
{
	std::ifstream in(sysctl_path(name));
	if (!in)
		throw Error("cannot read sysctl " + name);
	std::string v;
	std::getline(in, v);
	while (!v.empty() && (v.back() == '\n' || v.back() == ' '))
		v.pop_back();
	return v;
}

void write_sysctl(const std::string &name, const std::string &value)
{
	std::ofstream out(sysctl_path(name));
	out << value << "\n";
	out.flush();
	if (!out)
		throw Error("cannot write sysctl " + name + " = " + value);
}

std::vector<std::string> split_words(const std::string &text)
{
	std::vector<std::string> words;
	std::istringstream in(text);
	std::string w;
	while (in >> w)
		words.push_back(w);
	return words;
}

bool allow_congestion_control(const std::string &algo, bool allow)
{
	const std::string key = "net.ipv4.tcp_allowed_congestion_control";
	auto words = split_words(read_sysctl(key));
	auto it = std::find(words.begin(), words.end(), algo);
	if ((it != words.end()) == allow)
		return false;
	if (allow)
		words.push_back(algo);
	else
		words.erase(it);
	std::string joined;
	for (const auto &w : words)
		joined += (joined.empty() ? "" : " ") + w;
	write_sysctl(key, joined);
	return true;
}

// ---------------------------------------------------------------------
// Maps

std::vector<std::uint64_t> sum_percpu_counters(int map_fd, std::uint32_t n)
{
	int ncpu = libbpf_num_possible_cpus();
	if (ncpu <= 0)
		throw Error("cannot count possible CPUs");
	std::vector<std::uint64_t> per_cpu(static_cast<std::size_t>(ncpu));
	std::vector<std::uint64_t> sums(n, 0);
	for (std::uint32_t k = 0; k < n; k++) {
		if (bpf_map_lookup_elem(map_fd, &k, per_cpu.data()) != 0)
			throw Error("cannot read counter " + std::to_string(k) + ": " + std::strerror(errno));
		for (auto v : per_cpu)
			sums[k] += v;
	}
	return sums;
}

std::uint64_t monotonic_ns()
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

std::string join_words(const std::vector<std::string> &words, const char *sep)
{
	std::string out;
	for (const auto &w : words)
		out += (out.empty() ? "" : sep) + w;
	return out;
}

std::string cgroup2_root()
{
	std::ifstream f("/proc/mounts");
	std::string dev, dir, type, rest;
	while (f >> dev >> dir >> type && std::getline(f, rest))
		if (type == "cgroup2")
			return dir;
	throw Error("no cgroup v2 hierarchy is mounted (mount -t cgroup2 none /sys/fs/cgroup)");
}

std::string errno_text(int err)
{
	return std::strerror(err < 0 ? -err : err);
}

// ---------------------------------------------------------------------
// Interruption

namespace
{
volatile std::sig_atomic_t interrupt_flag = 0;

void on_interrupt(int)
{
	interrupt_flag = 1;
}
} // namespace

void install_interrupt_handlers()
{
	struct sigaction sa = {};
	sa.sa_handler = on_interrupt;
	sigemptyset(&sa.sa_mask);
	// no SA_RESTART: a blocking wait returns EINTR and its loop re-checks
	for (int sig : {SIGINT, SIGTERM, SIGHUP})
		sigaction(sig, &sa, nullptr);
}

bool interrupted()
{
	return interrupt_flag != 0;
}

void throw_if_interrupted()
{
	if (interrupted())
		throw Interrupted();
}

void sleep_interruptible_ns(std::uint64_t ns)
{
	struct timespec left = {static_cast<time_t>(ns / 1000000000ull), static_cast<long>(ns % 1000000000ull)};
	while (!interrupted() && nanosleep(&left, &left) != 0 && errno == EINTR) {
	}
	throw_if_interrupted();
}

// ---------------------------------------------------------------------
// Output

std::string json_escape(const std::string &s)
{
	std::string out = "\"";
	for (char c : s) {
		switch (c) {
		case '"':
			out += "\\\"";
			break;
		case '\\':
			out += "\\\\";
			break;
		case '\n':
			out += "\\n";
			break;
		default:
			if (static_cast<unsigned char>(c) < 0x20) {
				char buf[8];
				std::snprintf(buf, sizeof(buf), "\\u%04x", c);
				out += buf;
			} else {
				out += c;
			}
		}
	}
	return out + "\"";
}

Json &Json::num(const std::string &key, std::uint64_t v)
{
	fields_.emplace_back(key, std::to_string(v));
	return *this;
}

Json &Json::num(const std::string &key, double v)
{
	char buf[64];
	std::snprintf(buf, sizeof(buf), "%.6g", std::isfinite(v) ? v : 0.0);
	fields_.emplace_back(key, buf);
	return *this;
}

Json &Json::str(const std::string &key, const std::string &v)
{
	fields_.emplace_back(key, json_escape(v));
	return *this;
}

Json &Json::raw(const std::string &key, const std::string &json)
{
	fields_.emplace_back(key, json);
	return *this;
}

std::string Json::dump() const
{
	std::string out = "{";
	for (std::size_t i = 0; i < fields_.size(); i++)
		out += (i ? ", " : "") + json_escape(fields_[i].first) + ": " + fields_[i].second;
	return out + "}";
}

} // namespace lumen
