// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/experiment/inventory.h - a host inventory: the real servers (and
// optionally Linux routers running the software INT switch) that `lumen
// experiment run --hosts FILE` drives over SSH instead of building a
// namespace testbed (experiment_remote.h). A file:
//   {
//     "name": "lab",
//     "path_rate": "10gbit",         the slowest link of the traffic's paths
//     "base_rtt": "25us",            optional; else measured with ping
//     "ssh_options": ["-i", "/root/.ssh/lab"],   optional, for every host
//     "lumen": "/usr/local/bin/lumen",          optional, lumen on the hosts
//     "workdir": "/tmp",             optional, where hosts write their CSVs
//     "hosts": [
//       {"name": "s1", "role": "sender", "ssh": "root@10.0.0.1",
//        "addr": "192.168.1.1", "ssh_options": [...], "lumen": "..."},
//       {"name": "r1", "role": "receiver", "ssh": "root@10.0.0.2", "addr": "192.168.1.2"}
//     ],
//     "switches": [                  optional: queues sampled every 10 ms
//       {"name": "sw1", "ssh": "root@10.0.0.9", "ports": ["eth2"],
//        "bottleneck": ["eth2"]}
//     ]
//   }
// Host names and roles are what an experiment's host selectors name
// ("s1", "s2..s6", "senders"), so the built-in experiments run on an
// inventory with the hosts they name.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lumen
{

struct InventoryHost {
	std::string name; // [a-z0-9_-]{1,24}
	std::string role; // sender | receiver | host
	std::string ssh; // SSH destination, [user@]host
	std::string addr; // IPv4 address the traffic goes to
	std::vector<std::string> ssh_options; // the inventory's, then the host's own
	std::string lumen; // lumen on this host
};

struct InventorySwitch {
	std::string name;
	std::string ssh;
	std::vector<std::string> ssh_options;
	std::string lumen;
	std::vector<std::string> ports; // devices to sample; empty = every switch port
	std::vector<std::string> bottleneck; // of those, the bottleneck (utilisation)
};

struct Inventory {
	std::string name;
	std::string source; // the file, for messages
	std::uint32_t path_rate_mbps = 0;
	std::uint64_t base_rtt_ns = 0; // 0 = measure
	std::string workdir = "/tmp";
	std::vector<InventoryHost> hosts;
	std::vector<InventorySwitch> switches;

	const InventoryHost &host(const std::string &name) const; // Error if none
};

// Parses and validates; UsageError "<source>: <json path>: <what>" on the
// first mistake. Unknown keys are refused.
Inventory parse_inventory(const std::string &json_text, const std::string &source);
Inventory load_inventory(const std::string &path);
// The inventory as JSON (for config.json).
std::string inventory_to_json(const Inventory &inv);

} // namespace lumen
