// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#include "base/system.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

namespace lumen
{

void require_root()
{
	if (geteuid() != 0)
		throw Error("must run as root");
}

bool path_exists(const std::string &path)
{
	struct stat st;
	return ::stat(path.c_str(), &st) == 0;
}

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

} // namespace lumen
