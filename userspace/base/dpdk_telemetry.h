// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/base/dpdk_telemetry.h - a client of DPDK's telemetry socket
// (rte_telemetry, protocol v2): the process greets with a JSON object on a
// Unix seqpacket socket, then answers each command ("/ethdev/list",
// "/lumen/gate,10.0.0.1") with one JSON object {"CMD": value}. This is how
// lumen reads a running lumen-dp (its /lumen/ commands, dpdk/app/run.cpp)
// without parsing its output.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/fd.h"

namespace lumen
{

class DpdkTelemetry
{
      public:
	// where: a DPDK process's --file-prefix (its socket is
	// /var/run/dpdk/PREFIX/dpdk_telemetry.v2, root's runtime directory)
	// or the socket's path (containing a '/'). Error when it cannot be
	// reached or does not greet; UsageError for an impossible path.
	explicit DpdkTelemetry(const std::string &where);

	// The command's value: null when the process refused it (an unknown
	// command, or parameters the command rejects). Error when the socket
	// fails or the answer is no JSON.
	nlohmann::json query(const std::string &command);

	const std::string &path() const
	{
		return path_;
	}

      private:
	std::string path_;
	Fd fd_;
};

// lumen-dp's optical gates: for every host /lumen/hosts lists that has a
// gate, its name and /lumen/gate,NAME (counters, its node, offered_bytes
// per node). Error when the process lists no lumen-dp hosts.
std::vector<std::pair<std::string, nlohmann::json>> lumen_dp_gates(DpdkTelemetry &tel);

} // namespace lumen
