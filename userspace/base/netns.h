// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/base/netns.h - network namespaces and the devices in them:
// opening a namespace by name (as `ip netns` names them), finding one again
// by inode after its name may have gone, entering one for a scope, and what
// a device is (ifindex, MTU, driver, veth peer).
#pragma once

#include "base/fd.h"

#include <cstdint>
#include <optional>
#include <string>

namespace lumen
{

constexpr std::size_t kNetnsNameMax = 63;

struct Netns {
	std::string name; // "" = the caller's namespace
	Fd fd;
	std::uint64_t ino = 0;
	std::string label() const; // "netns NAME" or "current netns"
};

// UsageError "<what>: ..." unless `name` can name a namespace (no '/', not
// "." or "..", at most kNetnsNameMax characters).
void check_netns_name(const std::string &name, const std::string &what);
// UsageError unless `name` can name a network device.
void check_ifname(const std::string &name, const std::string &what);

// The namespace /run/netns/NAME ("" = the caller's); Error when unknown.
Netns open_netns(const std::string &name);
// The namespace a record names: by name when it still has the recorded
// inode, else the caller's, else any /run/netns entry with that inode.
std::optional<Netns> find_netns(const std::string &name, std::uint64_t ino);
bool netns_exists(const std::string &name); // /run/netns/NAME exists

// Enters a namespace for the lifetime of the guard (this thread only).
class NetnsGuard
{
      public:
	explicit NetnsGuard(const Netns &target);
	NetnsGuard(const NetnsGuard &) = delete;
	NetnsGuard &operator=(const NetnsGuard &) = delete;
	~NetnsGuard(); // aborts if it cannot return: acting in the wrong namespace is worse

      private:
	Fd home_;
	bool entered_ = false;
};

struct DevInfo {
	unsigned ifindex = 0;
	unsigned mtu = 0;
	std::string driver;
	unsigned peer_ifindex = 0; // veth only: the peer's ifindex in its own namespace
};

// Device `name` in the current namespace (`ns` only names it in errors).
DevInfo dev_info(const std::string &name, const Netns &ns);

} // namespace lumen
