// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/experiment/experiment_collective.h - collective studies: a
// datapath experiment whose "datapath" lists collectives (experiment.h,
// experiments/ethereal.json). On the namespace leaf-spine of DPDK hosts of
// experiment_dp.h, one `lumen-dp collective` run per case (healthy; one
// leaf-spine link's rate cut; one leaf-spine link down before the run) x
// collective x size x path policy x QP-order randomization x seed, every
// rank checked against the reference by lumen-dp (a wrong rank fails the
// study). The switch ports are sampled every millisecond while lumen-dp
// runs; per run the report has the collective's time and per-step CCT,
// algbw/busbw, the bytes each uplink of a leaf carried during the
// collective (max/mean, the worst leaf), the queues of the spine ports and
// of the ToR downlinks (leaf -> host), lumen-dp's retransmissions,
// timeouts, NACKs, reroutes and subflows; per cell (everything but the
// seed) their mean and spread over the seeds.
//
// The analysis is pure (below) and unit-tested; run_collective_experiment
// is the shell.
#pragma once

#include "experiment/experiment.h"
#include "experiment/experiment_run.h"
#include "experiment/report.h"

#include <cstdint>
#include <string>
#include <vector>

namespace lumen
{

// Mean and spread of one number over the seeds of a cell (sd: the sample
// standard deviation, 0 for fewer than two values).
struct SeedSpread {
	std::size_t n = 0;
	double mean = 0, sd = 0, min = 0, max = 0;
};
SeedSpread seed_spread(const std::vector<double> &values);

// The bytes each of `ports` dequeued from the last sample at or before
// from_ns to the first at or after to_ns (the whole run however short it
// is next to the sampling period); zeros without two such samples.
std::vector<double> port_bytes(const std::vector<QueueTick> &ticks, const std::vector<std::size_t> &ports,
			       std::uint64_t from_ns, std::uint64_t to_ns);

// max/mean of the values; 0 when they sum to 0.
double max_over_mean(const std::vector<double> &values);

// The samples taken within [from_ns, to_ns].
std::vector<QueueTick> ticks_within(const std::vector<QueueTick> &ticks, std::uint64_t from_ns, std::uint64_t to_ns);

// What the analysis and the plots keep of a run's samples: those within
// margin_ns of [from_ns, to_ns] and the nearest one beyond on each side,
// however far, so that port_bytes() still brackets the run's ends.
std::vector<QueueTick> ticks_around(const std::vector<QueueTick> &ticks, std::uint64_t from_ns, std::uint64_t to_ns,
				    std::uint64_t margin_ns);

// The busiest of `ports`: bytes / (rate x time) over [from_ns, to_ns];
// rates in Mbit/s, one per port.
double busiest_utilisation(const std::vector<QueueTick> &ticks, const std::vector<std::size_t> &ports,
			   const std::vector<std::uint32_t> &rates_mbps, std::uint64_t from_ns, std::uint64_t to_ns);

// Runs it (see the header comment); returns the result directory.
std::string run_collective_experiment(const ExperimentSpec &spec, const RunOptions &opts);

} // namespace lumen
