// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/base/ping.h - the base RTT as ping(8) reports it: the minimum of
// its summary line, "rtt min/avg/max/mdev = 0.051/0.060/0.081/0.010 ms"
// (iputils) or "round-trip min/avg/max = 0.051/0.060/0.081 ms" (busybox).
#pragma once

#include <cstdint>
#include <string>

namespace lumen
{

// The minimum RTT in ns, or 0 when the output has no summary with a
// positive minimum (no reply came back).
std::uint64_t ping_min_rtt_ns(const std::string &output);

} // namespace lumen
