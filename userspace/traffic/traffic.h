// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/traffic/traffic.h - `lumen traffic server` and `client`: run one
// side until done (client) or until SIGINT/SIGTERM (server). Both return the
// process exit status.
#pragma once

#include "traffic/traffic_options.h"

namespace lumen
{

int run_traffic_server(const TrafficServerOptions &opts);
int run_traffic_client(const TrafficClientOptions &opts);

// Raises the soft open-file limit to the hard one: hundreds of concurrent
// flows need more than the usual 1024 descriptors.
void raise_open_file_limit();

} // namespace lumen
