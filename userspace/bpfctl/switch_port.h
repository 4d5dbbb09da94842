// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/bpfctl/switch_port.h - the control plane of the software INT
// switch (bpf/int_switch.bpf.c): turn a veth link into an egress port,
// detach it, list the ports with their configuration and counters, and
// sample their counters. `lumen switch`, the testbeds and the experiment
// runner all go through this API.
//
// One attach = one loaded instance of int_switch with its port id in
// .rodata; the programs stay alive through their tc filters after the
// attaching process exits. State shared by every process lives under
// LUMEN_PIN_ROOT:
//   lumen_sw_cfg    the contract's per-port configuration (in_use, rate, ...)
//   lumen_sw_stats  the contract's per-port counters
//   lumen_sw_ports  this library's record of each port: device names,
//                   netns names and inodes, ifindexes, tc filter handles and
//                   program ids, and what the attach created, so detach and
//                   stats work from any process. Only switch_port.cpp reads it.
// Every change holds an exclusive flock on LUMEN_PIN_ROOT.
#pragma once

#include "base/fd.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

extern "C" {
#include "lumen/bpf_shared.h"
}

namespace lumen
{

constexpr std::uint64_t kSwitchMaxBuffer = 1ull << 30; // 1 GiB: the histogram's last bucket
constexpr std::uint64_t kSwitchDefaultBuffer = 1ull << 20;

struct SwitchPortRequest {
	std::string dev, dev_netns; // the egress side ("" = the caller's namespace)
	std::string peer, peer_netns; // its veth peer, where dequeues are seen
	std::uint32_t rate_mbps = 0;
	std::uint64_t buffer_bytes = kSwitchDefaultBuffer;
	std::uint64_t ecn_threshold_bytes = 0; // 0 = no ECN marking
	bool int_enabled = true;
	std::optional<std::uint32_t> port_id; // none: the lowest free id
};

struct SwitchPortAttached {
	std::uint32_t id = 0;
	std::uint64_t burst_bytes = 0, limit_bytes = 0; // the tbf qdisc's
	std::uint32_t egress_prog_id = 0, ingress_prog_id = 0;
	std::uint16_t rate_code = 0; // what INT hop records carry
};

// UsageError when the request's own values are wrong (names, rate, buffer
// vs ECN threshold, port id); needs no root.
void check_switch_port_request(const SwitchPortRequest &req);
// Attaches one port, all or nothing: on any error, and on Ctrl-C (checked
// before the commit; the caller installs the handlers), everything it set
// up is undone before the exception leaves.
SwitchPortAttached attach_switch_port(const SwitchPortRequest &req);

struct SwitchPort {
	std::uint32_t id = 0;
	bool recorded = false; // false: configured but no record (an attach killed half-way)
	std::string dev, dev_netns, peer, peer_netns;
	std::string
		state; // "ok", "<dev> gone", "netns of <dev> gone", "... program detached ...", "no record", "attaching ..."
	lumen_switch_port_cfg cfg{};
	lumen_switch_port_stats stats{};
};

// The attached ports, by id (empty when none). `with_state` checks each
// port's namespaces, devices and filters (slower; enters namespaces).
std::vector<SwitchPort> list_switch_ports(bool with_state = true);

// Which ports a detach removes.
struct SwitchPortSelector {
	bool all = false;
	std::optional<std::uint32_t> id;
	std::optional<std::string> dev; // with dev_netns: the port on that device
	std::string dev_netns;
};

struct SwitchPortDetached {
	SwitchPort port; // as it was (stats not read)
	std::vector<std::string> warnings; // the port is gone either way
};

// Detaches the selected ports and unpins the maps when none is left.
// Error when a single port was asked for and none matched.
std::vector<SwitchPortDetached> detach_switch_ports(const SwitchPortSelector &sel);

// The queue count of the selected ports healed (bpf/int_switch.bpf.c, "What
// makes the count drift"): what was counted in and never seen leaving
// (enq_bytes - deq_bytes now) is counted as having left, by the next packet
// through the port. Call it when the ports are idle (nothing queued: after
// a link that went down with packets queued is up again, before traffic),
// else what is queued now is forgotten too. Returns each port with the
// bytes asked to heal (0: nothing drifted). Error as detach for a selector
// that matches no port.
struct SwitchPortHealed {
	SwitchPort port;
	std::uint64_t bytes = 0;
};
std::vector<SwitchPortHealed> heal_switch_ports(const SwitchPortSelector &sel);
// Queue length at quantile q (0..1) from a port's log2 histogram.
std::uint64_t switch_queue_quantile(const lumen_switch_port_stats &st, double q);

// Reads ports' counters from the pinned statistics map, for samplers.
class SwitchCounters
{
      public:
	SwitchCounters(); // Error when no port is attached (no pinned map)
	lumen_switch_port_stats read(std::uint32_t id) const;

      private:
	Fd fd_;
};

} // namespace lumen
