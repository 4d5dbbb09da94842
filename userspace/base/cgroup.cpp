// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#include "base/cgroup.h"

#include "base/error.h"
#include "base/system.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sys/vfs.h>
#include <unistd.h>

#include <linux/magic.h>

namespace lumen
{

namespace
{

std::string mounted_cgroup2()
{
	std::ifstream f("/proc/mounts");
	std::string dev, dir, type, rest;
	while (f >> dev >> dir >> type && std::getline(f, rest))
		if (type == "cgroup2")
			return dir;
	return "";
}

} // namespace

std::string cgroup2_root()
{
	std::string dir = mounted_cgroup2();
	if (dir.empty())
		throw Error("no cgroup v2 hierarchy is mounted (mount -t cgroup2 none /sys/fs/cgroup)");
	return dir;
}

Fd open_cgroup_dir(const std::string &path)
{
	Fd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	if (!fd.valid()) {
		int e = errno;
		if (e == ENOENT)
			throw Error("cgroup " + path + " does not exist");
		if (e == ENOTDIR)
			throw Error("cgroup " + path + " is not a directory");
		throw Error("cannot open cgroup " + path + ": " + errno_text(e));
	}
	struct statfs fs;
	if (::fstatfs(fd.get(), &fs) != 0 || fs.f_type != CGROUP2_SUPER_MAGIC) {
		std::string m = mounted_cgroup2();
		throw Error(path + " is not a cgroup v2 directory" +
			    (m.empty() ? std::string(" (no cgroup2 hierarchy is mounted)")
				       : " (the cgroup2 hierarchy is mounted at " + m + ")"));
	}
	return fd;
}

Fd open_cgroup_procs(const std::string &path)
{
	Fd fd(::open((path + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC));
	if (!fd.valid())
		throw Error("cannot open " + path + "/cgroup.procs: " + errno_text(errno));
	return fd;
}

std::string cgroup_path_from_id(std::uint64_t id)
{
	std::string mnt = mounted_cgroup2();
	if (mnt.empty() || id == 0)
		return "";
	Fd mfd(::open(mnt.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	if (!mfd.valid())
		return "";
	alignas(struct file_handle) unsigned char hbuf[sizeof(struct file_handle) + sizeof(std::uint64_t)] = {};
	auto *fh = reinterpret_cast<struct file_handle *>(hbuf);
	fh->handle_bytes = sizeof(std::uint64_t);
	fh->handle_type = 0xfe; // FILEID_KERNFS
	std::memcpy(hbuf + sizeof(struct file_handle), &id, sizeof(id));
	Fd cfd(::open_by_handle_at(mfd.get(), fh, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	if (!cfd.valid())
		return "";
	char buf[4096];
	std::string link = "/proc/self/fd/" + std::to_string(cfd.get());
	ssize_t n = ::readlink(link.c_str(), buf, sizeof(buf) - 1);
	if (n <= 0)
		return "";
	buf[n] = '\0';
	return buf;
}

} // namespace lumen
