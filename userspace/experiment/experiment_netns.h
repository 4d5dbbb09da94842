// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/experiment/experiment_netns.h - the experiment fabric on this
// machine: a namespace testbed (testbed/), the eBPF congestion control and
// INT sockops loaded through bpfctl/ for the run and removed after it, and
// the switch ports' queues sampled from their counters.
#pragma once

#include "experiment/experiment.h"
#include "experiment/experiment_fabric.h"
#include "testbed/testbed.h"

#include <cstdint>
#include <memory>
#include <string>

namespace lumen
{

// What every run needs on this machine (gnuplot for the plots).
void preflight_common();
// A namespace testbed here: root, and every algorithm of the spec in this
// kernel (modprobing kernel ones, the module loaded, BTF for eBPF ones).
void preflight_testbed(const ExperimentSpec &spec);

// The switch ports' queues and counters, sampled at each poll().
std::unique_ptr<QueueSource> make_port_sampler(const std::vector<TestbedPort> &ports);

// Builds the testbed of `topo`; `exe` is the lumen binary its hosts run.
std::unique_ptr<Fabric> make_netns_fabric(const TopologySpec &topo, const std::string &exe,
					  std::uint32_t path_rate_mbps);

} // namespace lumen
