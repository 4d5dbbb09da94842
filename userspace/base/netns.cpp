// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#include "base/netns.h"

#include "base/error.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include <linux/ethtool.h>
#include <linux/sockios.h>

namespace lumen
{

static std::uint64_t fd_inode(int fd)
{
	struct stat st;
	if (::fstat(fd, &st) != 0)
		throw Error(std::string("fstat: ") + std::strerror(errno));
	return st.st_ino;
}

std::string Netns::label() const
{
	return name.empty() ? std::string("current netns") : "netns " + name;
}

void check_netns_name(const std::string &name, const std::string &what)
{
	if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos)
		throw UsageError(what + ": '" + name + "' is not a network namespace name");
	if (name.size() > kNetnsNameMax)
		throw UsageError(what + ": namespace name longer than " + std::to_string(kNetnsNameMax) +
				 " characters");
}

Netns open_netns(const std::string &name)
{
	Netns ns;
	ns.name = name;
	std::string path = name.empty() ? "/proc/self/ns/net" : "/run/netns/" + name;
	ns.fd = Fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
	if (ns.fd.get() < 0) {
		if (errno == ENOENT)
			throw Error("unknown network namespace '" + name + "' (no " + path + "; see 'ip netns list')");
		throw Error("cannot open " + path + ": " + std::strerror(errno));
	}
	ns.ino = fd_inode(ns.fd.get());
	return ns;
}

bool netns_exists(const std::string &name)
{
	struct stat st;
	return !name.empty() && ::stat(("/run/netns/" + name).c_str(), &st) == 0;
}

std::optional<Netns> find_netns(const std::string &name, std::uint64_t ino)
{
	std::vector<std::string> candidates;
	if (!name.empty())
		candidates.push_back(name);
	candidates.push_back("");
	if (DIR *d = ::opendir("/run/netns")) {
		while (struct dirent *e = ::readdir(d)) {
			std::string n = e->d_name;
			if (n != "." && n != ".." && n != name)
				candidates.push_back(n);
		}
		::closedir(d);
	}
	for (const auto &c : candidates) {
		try {
			Netns ns = open_netns(c);
			if (ns.ino == ino)
				return ns;
		} catch (const Error &) {
		}
	}
	return std::nullopt;
}

NetnsGuard::NetnsGuard(const Netns &target)
{
	home_ = Fd(::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC));
	if (!home_.valid())
		throw Error(std::string("cannot open /proc/self/ns/net: ") + std::strerror(errno));
	if (fd_inode(home_.get()) == target.ino)
		return; // already there
	if (::setns(target.fd.get(), CLONE_NEWNET) != 0)
		throw Error("cannot enter " + target.label() + ": " + std::strerror(errno));
	entered_ = true;
}

NetnsGuard::~NetnsGuard()
{
	if (entered_ && ::setns(home_.get(), CLONE_NEWNET) != 0) {
		std::fprintf(stderr, "lumen: cannot return to the original network namespace: %s\n",
			     std::strerror(errno));
		std::abort(); // continuing in the wrong namespace would act on the wrong devices
	}
}

void check_ifname(const std::string &name, const std::string &what)
{
	if (name.empty() || name.size() >= IFNAMSIZ || name.find('/') != std::string::npos ||
	    name.find_first_of(" \t\n") != std::string::npos)
		throw UsageError(what + ": '" + name + "' is not a network device name");
}

DevInfo dev_info(const std::string &name, const Netns &ns)
{
	DevInfo info;
	info.ifindex = ::if_nametoindex(name.c_str());
	if (info.ifindex == 0)
		throw Error("unknown device '" + name + "' in " + ns.label());
	Fd sock(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
	if (sock.get() < 0)
		throw Error(std::string("socket: ") + std::strerror(errno));
	struct ifreq ifr;
	std::memset(&ifr, 0, sizeof(ifr));
	std::snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name.c_str());
	if (::ioctl(sock.get(), SIOCGIFMTU, &ifr) != 0)
		throw Error("cannot read the MTU of " + name + ": " + std::strerror(errno));
	info.mtu = static_cast<unsigned>(ifr.ifr_mtu);

	struct ethtool_drvinfo drv;
	std::memset(&drv, 0, sizeof(drv));
	drv.cmd = ETHTOOL_GDRVINFO;
	ifr.ifr_data = reinterpret_cast<char *>(&drv);
	if (::ioctl(sock.get(), SIOCETHTOOL, &ifr) != 0)
		return info; // no ethtool: certainly no veth
	info.driver = std::string(drv.driver, strnlen(drv.driver, sizeof(drv.driver)));
	if (info.driver != "veth" || drv.n_stats == 0 || drv.n_stats > 4096)
		return info;

	// veth's first ethtool statistic is "peer_ifindex", the peer's ifindex in its own netns
	std::vector<char> strings(sizeof(struct ethtool_gstrings) + std::size_t(drv.n_stats) * ETH_GSTRING_LEN);
	auto *gs = reinterpret_cast<struct ethtool_gstrings *>(strings.data());
	gs->cmd = ETHTOOL_GSTRINGS;
	gs->string_set = ETH_SS_STATS;
	gs->len = drv.n_stats;
	ifr.ifr_data = reinterpret_cast<char *>(gs);
	if (::ioctl(sock.get(), SIOCETHTOOL, &ifr) != 0)
		return info;
	std::vector<char> values(sizeof(struct ethtool_stats) + std::size_t(drv.n_stats) * sizeof(__u64));
	auto *es = reinterpret_cast<struct ethtool_stats *>(values.data());
	es->cmd = ETHTOOL_GSTATS;
	es->n_stats = drv.n_stats;
	ifr.ifr_data = reinterpret_cast<char *>(es);
	if (::ioctl(sock.get(), SIOCETHTOOL, &ifr) != 0)
		return info;
	for (__u32 i = 0; i < drv.n_stats && i < gs->len; i++) {
		const char *s = reinterpret_cast<const char *>(gs->data) + std::size_t(i) * ETH_GSTRING_LEN;
		if (strncmp(s, "peer_ifindex", ETH_GSTRING_LEN) == 0) {
			__u64 v;
			std::memcpy(&v, reinterpret_cast<const char *>(es->data) + i * sizeof(__u64), sizeof(v));
			info.peer_ifindex = static_cast<unsigned>(v);
			break;
		}
	}
	return info;
}

} // namespace lumen
