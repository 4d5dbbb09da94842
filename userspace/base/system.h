// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/base/system.h - the machine lumen runs on: privilege, files,
// the monotonic clock, the cgroup v2 mount, sysctl, and word lists.
#pragma once

#include "base/error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace lumen
{

void require_root(); // Error "must run as root" otherwise
bool path_exists(const std::string &path);
std::string read_file(const std::string &path); // Error naming the path
void write_file(const std::string &path, const std::string &text); // creates or truncates
// Writes all of `text` to fd (retrying short writes); Error "cannot write <what>".
void write_all(int fd, const std::string &text, const std::string &what);
// The names in a directory, sorted, without . and ..; none when it cannot be read.
std::vector<std::string> list_dir(const std::string &path);
void make_dirs(const std::string &path); // mkdir -p, mode 0755
// This process's executable (/proc/self/exe resolved), to run lumen again.
std::string self_exe();
std::uint64_t monotonic_ns(); // CLOCK_MONOTONIC in ns
std::uint64_t tai_ns(); // CLOCK_TAI in ns (the schedules' clock); Error when unreadable
// The current UTC time in strftime `format`: "%Y-%m-%dT%H:%M:%SZ".
std::string utc_timestamp(const char *format);
std::string kernel_release(); // uname -r; "unknown" when uname fails
// This build's version (the project version CMake was given), which the
// runner records and compares with the hosts'.
const char *lumen_version();

// sysctl by its dotted name ("net.ipv4.tcp_congestion_control"); read
// values are trimmed.
std::string read_sysctl(const std::string &name);
void write_sysctl(const std::string &name, const std::string &value);
// Adds or removes one algorithm from net.ipv4.tcp_allowed_congestion_control
// (a space-separated list); returns whether the list changed.
bool allow_congestion_control(const std::string &algo, bool allow);

std::vector<std::string> split_words(const std::string &text);
bool starts_with(const std::string &s, const std::string &prefix);
// `s` without leading and trailing spaces, tabs, carriage returns and newlines.
std::string trim(const std::string &s);
// The words joined by `sep`: {"a", "b"}, ", " -> "a, b".
std::string join_words(const std::vector<std::string> &words, const char *sep);

} // namespace lumen
