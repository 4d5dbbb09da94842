// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/bpfctl/retcp.h - the loader of bpf_retcp (bpf/retcp.bpf.c):
// Reno whose window jumps with the circuit to its destination, the circuit
// read from a lumend's pinned slot state (lumend --pin NAME). `lumen retcp`
// goes through this API.
//
// One bpf_retcp per host (a congestion control name is host-wide); its maps
// are pinned under LUMEN_PIN_ROOT/LUMEN_PIN_RETCP_DIR/ (ops, cfg, hosts,
// stats, and lumend's osched and windows, which it keeps reading after
// lumend has gone: its last word is "stopped").
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

extern "C" {
#include "lumen/bpf_shared.h"
}

#include "sched/schedule.h"

namespace lumen
{

struct RetcpRequest {
	std::string lumend; // the lumend's pin name (lumend --pin NAME)
	sched::Schedule schedule; // the one lumend runs: its nodes and slot length
	std::vector<std::uint32_t> host_addrs; // IPv4, host byte order, by node
	lumen_retcp_params params{LUMEN_RETCP_DEFAULT_JUMP, 0, 0};
	std::uint64_t stale_ns = 0; // lumend's state older than this: the packet network (0: 4 slots, >= 100 ms)
	bool allow = false; // also into net.ipv4.tcp_allowed_congestion_control
};

// UsageError for a request that cannot work: parameters out of range,
// addresses not one per node of the schedule or repeated.
void check_retcp_request(const RetcpRequest &req);
// Loads, pins and registers bpf_retcp, all or nothing. Error when it is
// loaded already, when no lumend is pinned under the name, or when that
// lumend's node count is not the schedule's.
void load_retcp(const RetcpRequest &req);
// Unregisters and unpins; false when nothing was loaded. Error while it is
// the network namespace's default.
bool unload_retcp();

struct RetcpStatus {
	bool loaded = false; // the pins are there
	bool registered = false; // bpf_retcp in tcp_available_congestion_control
	lumen_retcp_cfg cfg{};
	lumen_osched_state lumend{}; // the last word of the lumend it follows
	std::uint64_t lumend_age_ns = 0; // since its last slot boundary (CLOCK_TAI now)
	bool lumend_stale = false; // older than cfg.stale_ns: flows on the packet network's window
	std::array<std::uint64_t, LUMEN_RETCP_CNT_MAX> counters{};
};
RetcpStatus retcp_status();

struct CounterName;
extern const CounterName kRetcpCounters[LUMEN_RETCP_CNT_MAX];

} // namespace lumen
