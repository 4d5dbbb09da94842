// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#include "bpfctl/bpf_util.h"

#include "base/system.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <sstream>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <linux/magic.h>

extern "C" {
#include "lumen/bpf_shared.h"
}

namespace lumen
{

void require_btf()
{
	if (!path_exists("/sys/kernel/btf/vmlinux"))
		throw Error("kernel has no BTF (/sys/kernel/btf/vmlinux missing): CONFIG_DEBUG_INFO_BTF=y is required");
}

bpf_object_open_opts pin_root_open_opts()
{
	bpf_object_open_opts opts{};
	opts.sz = sizeof(opts);
	opts.pin_root_path = LUMEN_PIN_ROOT;
	return opts;
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

bool pinned(std::string_view name)
{
	return path_exists(pin_path(name));
}

Fd open_pin(std::string_view name)
{
	std::string path = pin_path(name);
	Fd fd(bpf_obj_get(path.c_str()));
	if (!fd.valid())
		throw Error("cannot open " + path + ": " + errno_text(errno));
	return fd;
}

bool remove_pin(std::string_view name)
{
	std::string path = pin_path(name);
	if (::unlink(path.c_str()) == 0)
		return true;
	if (errno != ENOENT)
		throw Error("cannot remove " + path + ": " + errno_text(errno));
	return false;
}

PinRootLock::PinRootLock()
{
	std::string dir = ensure_pin_root();
	fd_ = Fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	if (!fd_.valid() || ::flock(fd_.get(), LOCK_EX) != 0)
		throw Error("cannot lock " + dir + ": " + errno_text(errno));
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

} // namespace lumen
