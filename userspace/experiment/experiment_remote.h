// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/experiment/experiment_remote.h - `lumen experiment run --hosts
// FILE`: the same experiment on real hosts, driven over SSH (remote.h)
// from an inventory (inventory.h), instead of a namespace testbed.
//
// What the runner does on the hosts:
//   1. `lumen host info` on every host and switch: reachable, the same lumen
//      version as the runner, cgroup v2; hosts with the same boot id share
//      a kernel (namespaces of one machine) and are set up once;
//   2. clock offsets (`lumen host clock`, the fastest of 16 round trips): a
//      host's start time is the run's start in its own clock, and its
//      timestamps are moved into the runner's before they are merged;
//   3. per kernel: a cgroup for every process of the experiment (`lumen
//      host cgroup-create`), a private work directory for the generators'
//      CSVs (`mktemp -d`: mode 0700, a fresh random name),
//      `lumen cc load --allow` for bpf_* algorithms, tcp_powertcp's
//      parameters for the module's, `lumen int enable --cgroup` for INT;
//   4. per run: `lumen traffic server|client` wrapped in `lumen host run`
//      (they stop when the SSH session ends), CSVs copied back over SSH;
//      switches with `lumen switch sample` stream their queues all along;
//   5. teardown in reverse, also on errors and Ctrl-C: INT off, the cgroup
//      killed and removed, work directories deleted, parameters restored,
//      algorithms unloaded.
// Nothing needs root on the runner's machine; the hosts need root.
#pragma once

#include "experiment/experiment.h"
#include "experiment/experiment_fabric.h"
#include "experiment/inventory.h"

#include <memory>
#include <string>

namespace lumen
{

using ProgressFn = void (*)(const std::string &line);

// Checks the hosts and sets them up for the experiment (steps 1-3 but the
// algorithms, which Fabric::load_algorithms loads); the fabric's
// destructor undoes everything. `run_id` names the cgroup and the work
// directory; the switch samplers' streams go to `raw_dir` here. Throws
// Error after undoing what it did.
std::unique_ptr<Fabric> connect_hosts(const Inventory &inv, const ExperimentSpec &spec, const std::string &run_id,
				      const std::string &raw_dir, ProgressFn progress);

// `lumen experiment hosts FILE`: steps 1 and 2 only, changing nothing; a
// table of what each host is and whether it can run experiments.
// `problem` gets "<host>: <why>" for the first one that cannot, else "".
std::string check_hosts(const Inventory &inv, std::string &problem);

// The directory `mktemp -d -p DIR RUN_ID.XXXXXXXX` printed (its output,
// possibly after a login script's lines): `prefix` (DIR/RUN_ID.) then 8
// letters or digits, nothing else; "" if the output is anything else.
std::string private_workdir_path(const std::string &mktemp_output, const std::string &prefix);

} // namespace lumen
