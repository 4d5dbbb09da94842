// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#include "base/system.h"

#include <algorithm>
#include <cerrno>
#include <sys/utsname.h>
#include <ctime>
#include <dirent.h>
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
		throw Error("must run as root (eBPF programs, pinned maps, qdiscs and namespaces need it): try sudo");
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

std::uint64_t tai_ns()
{
	struct timespec ts;
	if (clock_gettime(CLOCK_TAI, &ts) != 0)
		throw Error("CLOCK_TAI is not readable");
	return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

std::string join_words(const std::vector<std::string> &words, const char *sep)
{
	std::string out;
	for (const auto &w : words)
		out += (out.empty() ? "" : sep) + w;
	return out;
}

std::string read_file(const std::string &path)
{
	std::ifstream f(path);
	if (!f)
		throw Error("cannot read " + path + ": " + errno_text(errno));
	std::stringstream ss;
	ss << f.rdbuf();
	if (f.bad())
		throw Error("cannot read " + path + ": " + errno_text(errno));
	return ss.str();
}

void write_all(int fd, const std::string &text, const std::string &what)
{
	std::size_t done = 0;
	while (done < text.size()) {
		ssize_t n = ::write(fd, text.data() + done, text.size() - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			throw Error("cannot write " + what + ": " + errno_text(errno));
		done += static_cast<std::size_t>(n);
	}
}

std::vector<std::string> list_dir(const std::string &path)
{
	std::vector<std::string> names;
	DIR *d = ::opendir(path.c_str());
	if (!d)
		return names;
	while (dirent *e = ::readdir(d)) {
		std::string n = e->d_name;
		if (n != "." && n != "..")
			names.push_back(n);
	}
	::closedir(d);
	std::sort(names.begin(), names.end());
	return names;
}

void make_dirs(const std::string &path)
{
	std::string partial;
	std::size_t pos = 0;
	while (pos != std::string::npos) {
		pos = path.find('/', pos + 1);
		partial = path.substr(0, pos);
		if (!partial.empty() && ::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST)
			throw Error("cannot create directory " + partial + ": " + errno_text(errno));
	}
}

std::string self_exe()
{
	char buf[4096];
	ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
	if (n <= 0)
		throw Error("cannot find the lumen executable (/proc/self/exe): " + errno_text(errno));
	return std::string(buf, static_cast<std::size_t>(n));
}

bool starts_with(const std::string &s, const std::string &prefix)
{
	return s.compare(0, prefix.size(), prefix) == 0;
}

std::string trim(const std::string &s)
{
	const char *space = " \t\r\n";
	auto b = s.find_first_not_of(space);
	if (b == std::string::npos)
		return "";
	return s.substr(b, s.find_last_not_of(space) - b + 1);
}

std::string errno_text(int err)
{
	return std::strerror(err < 0 ? -err : err);
}

void write_file(const std::string &path, const std::string &text)
{
	std::ofstream f(path);
	f << text;
	if (!f)
		throw Error("cannot write " + path);
}

std::string utc_timestamp(const char *format)
{
	std::time_t t = std::time(nullptr);
	struct tm tm;
	gmtime_r(&t, &tm);
	char buf[64];
	std::strftime(buf, sizeof(buf), format, &tm);
	return buf;
}

std::string kernel_release()
{
	struct utsname u;
	return ::uname(&u) == 0 ? u.release : "unknown";
}

const char *lumen_version()
{
	return LUMEN_VERSION;
}

} // namespace lumen
