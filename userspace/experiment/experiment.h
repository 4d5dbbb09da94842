// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/experiment/experiment.h - experiment descriptions for `lumen
// experiment`: what a JSON file says (testbed, algorithms, traffic phases),
// its validation, and the pieces of planning that need no testbed: time
// scaling (--duration, --smoke), cases (a load or sender sweep), host
// selectors.
//
// A description (docs/experiments.md has the reference):
//   {
//     "name": "quick", "description": "...",
//     "topology": { a testbed description, see testbed.h / testbeds/*.json },
//     "algorithms": ["bpf_powertcp", "cubic"],
//     "duration": "20s", "smoke_duration": "5s", "warmup": "2s",
//     "loads": [0.2, 0.5],                 optional sweep of every poisson phase
//     "sender_counts": [2, 4],             or of the senders of every long phase
//     "load_scale": 0.25,                  optional: generators run at load x this
//     "seeds": [1, 2, 3],                  optional: every case x algorithm once per seed
//     "cc_params": {"gamma": "0.9"},       optional `lumen cc set` parameters
//     "phases": [
//       {"name": "long", "kind": "long", "from": ["s1", "s2"], "to": ["r1"],
//        "start": "0s", "duration": "20s", "flows": 1},
//       {"name": "burst", "kind": "incast", "from": ["s3..s12"], "to": ["r1"],
//        "start": "5s", "size": "64k", "bursts": 3, "period": "2s"},
//       {"name": "web", "kind": "poisson", "from": ["hosts"], "to": ["hosts"],
//        "start": "0s", "duration": "10s", "workload": "websearch", "load": 0.5}
//     ]
//   }
// Times are strings with a unit ("20s", "500ms") or numbers of seconds.
//
// A suite (experiments/thesis.json) lists member experiments run one after
// the other into one result directory, and the claims its report checks:
//     {"name": "thesis", "description": "...",
//      "suite": ["thesis/websearch", "thesis/incast"],  relative to the file
//      "algorithms": [...], "seeds": [1, 2, 3],          replace the members'
//      "smoke": {"members": [...], "algorithms": [...], "loads": [0.6]},
//      "claims": [{"id": "...", "text": "...", "source": "L882",
//                  "member": "thesis-websearch", "cases": ["load60"],
//                  "metric": "fct.short.p999", "algo": "bpf_powertcp",
//                  "vs": "bpf_hpcc", "thesis": -0.33, "expect": "lower"}]}
//
// A datapath experiment runs lumen-dp (dpdk/) instead of TCP: its
// "algorithms" are path policies (ecmp, ops, reps, reps-freeze), its
// topology a leafspine with "host_stack": "dpdk", and instead of phases it
// has
//     "datapath": {"pattern": "permutation", "message_size": "1m",
//                  "cc": "dctcp", "seed": 1,
//                  "failure": {"link": "leaf1-spine1", "at": "4s"}}
// every host sending messages back to back to the host of the same index
// on the next leaf for the whole duration; with a failure, each policy
// runs twice (cases "healthy" and "failure"), the link going down `at`
// into the failure run (in the leaf's namespace: the leaf routes around
// it, the other leaves keep hashing into it).
// With "collectives" instead of "pattern", it is a collective study
// (experiment_collective.h, experiments/ethereal.json):
//     "datapath": {"collectives": [{"collective": "alltoall"},
//                                  {"collective": "allreduce", "channels": 4}],
//                  "sizes": ["16k", "1m"], "randomize": [true, false],
//                  "seeds": [1, 2, 3], "cases": ["healthy", "slow", "failure"],
//                  "slow_link": {"link": "leaf1-spine1", "rate_fraction": 0.25},
//                  "failure": {"link": "leaf2-spine2"}, "rto_min": "5ms",
//                  "smoke": {"algorithms": [...], "cases": ["healthy"], ...}}
// where the failed link is down before each run and "duration" bounds a run.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "traffic/traffic_options.h"

namespace lumen
{

// A phase runs one `lumen traffic client` workload.
using PhaseKind = TrafficWorkload;
inline const char *phase_kind_name(PhaseKind kind)
{
	return traffic_workload_name(kind);
}

// One traffic generator role: a `lumen traffic client` in every `from`
// host, towards the `to` hosts, all aligned to the run's start time.
struct PhaseSpec {
	std::string name; // [a-z0-9_-]{1,24}; labels are "<name>.<host>"
	PhaseKind kind = PhaseKind::Long;
	std::vector<std::string> from, to; // host selectors (see expand_hosts)
	std::uint64_t start_ns = 0;
	std::uint64_t duration_ns = 0; // long, poisson
	std::uint32_t flows = 1; // long: flows per sender
	std::string workload; // poisson: websearch | datamining | CSV path
	double load = 0; // poisson: offered load per sender host link (0, 1]
	std::uint64_t max_flows = 0; // poisson: 0 = no limit
	std::uint64_t size_bytes = 0; // incast: bytes per sender per burst
	std::uint32_t bursts = 1; // incast
	std::uint64_t period_ns = 0; // incast: between burst starts

	std::uint64_t end_ns() const; // when its last flow is due to start/stop
};

// One collective of a collective study: lumen-dp's --collective and
// --channels; label() names it in reports ("alltoall", "allreduce-c4").
struct CollectiveRunSpec {
	std::string collective; // alltoall | allgather | reducescatter | allreduce | allreduce-a2a | permutation
	std::uint32_t channels = 1;
	std::string label() const;
};

// A collective study (a "datapath" with "collectives", experiment_collective.h):
// one lumen-dp collective run per case x collective x size x policy x
// randomize x seed.
struct CollectiveStudySpec {
	std::vector<CollectiveRunSpec> collectives;
	std::vector<std::uint64_t> sizes; // bytes per rank (--size), multiples of 4
	std::vector<bool> randomize; // true: randomized QP order (default); false: --no-randomize
	std::vector<std::uint64_t> seeds;
	std::vector<std::string> cases; // healthy | slow | failure
	std::vector<std::string> algorithms; // empty: the experiment's (only set in `smoke`)
};

// lumen-dp's workload and failure (see above); enabled = has "datapath".
struct DatapathSpec {
	bool enabled = false;
	std::string pattern = "permutation";
	std::uint64_t message_size = 1 << 20;
	std::string cc = "dctcp"; // dctcp | powertcp | theta-powertcp | hpcc | timely
	std::uint64_t seed = 1;
	std::uint32_t fail_leaf = 0, fail_spine = 0; // 0 = no failure
	std::uint64_t fail_at_ns = 0; // 0 in a collective study: down before each run
	bool collective_study = false; // "collectives" given: the fields below
	CollectiveStudySpec study, smoke; // smoke: the study with "smoke"'s keys replaced
	std::uint32_t slow_leaf = 0, slow_spine = 0; // case "slow": this link's rate cut
	double slow_fraction = 0.25; // to this fraction of the fabric rate
	std::uint64_t rto_min_ns = 0; // lumen-dp's --rto-min-us (0: its default)
	int ce_nack_threshold_pct = -1; // Ethereal runs' --ce-nack-threshold (-1: lumen-dp's default)
};

// Path policies of lumen-dp, the "algorithms" of a datapath experiment.
bool is_path_policy(const std::string &name);
/* lumen-dp's path policies, as a list for messages: include/lumen/path_policy.h's names */
std::string path_policy_list();
// "a,b" -> validated, no duplicates (path_policy_list()).
std::vector<std::string> parse_path_policy_list(const std::string &text);

// One claim of a suite's report: the relative difference of `metric`
// between algorithm `algo` and `vs` (algo / vs - 1), per seed, averaged over
// `cases` of the member experiment `member`, against the thesis' number.
struct ClaimSpec {
	std::string id; // [a-z0-9_-]{1,48}
	std::string text, source; // what the thesis says, and where (line)
	std::string member; // a member experiment's name
	std::vector<std::string> cases; // its cases ("load60"; "run" without a sweep)
	std::string metric; // a run_metrics() name (report.h): "fct.short.p999", "queue_p99_bytes"
	std::string algo, vs;
	std::optional<double> thesis; // the thesis' relative difference (-0.33); none: qualitative
	std::string expect; // lower | higher | similar (|difference| <= 10 %)
};

// What --smoke runs of a suite: some members, algorithms, loads (empty: all).
struct SuiteSmoke {
	std::vector<std::string> members, algorithms;
	std::vector<double> loads;
};

struct ExperimentSpec {
	std::string name; // [a-z0-9_-]{1,32}
	std::string description;
	std::string source; // file the description came from (messages)
	std::string topology_json; // the "topology" object, for parse_topology()
	std::vector<std::string> algorithms;
	std::uint64_t duration_ns = 0;
	std::uint64_t smoke_duration_ns = 0;
	std::uint64_t warmup_ns = 0; // excluded from utilisation, queue and Jain
	std::vector<double> loads; // sweep: one case per load
	std::vector<std::uint32_t> sender_counts; // sweep: one case per count (not with loads)
	double load_scale = 1; // the generators' load = the case's load x this (a load on oversubscribed uplinks)
	// every case x algorithm runs once per seed; the generators' seeds are
	// derived from it (traffic_seed()), the same for every algorithm
	std::vector<std::uint64_t> seeds = {1};
	std::map<std::string, std::string> cc_params;
	std::uint32_t int_version = 1; // INT option version of the run (lumen int enable --wide: 2)
	std::vector<PhaseSpec> phases; // empty for a datapath experiment
	DatapathSpec datapath;
	// a suite: its members (as listed, resolved by the runner), what
	// --smoke runs of them, the claims of its report; no topology or phases
	std::vector<std::string> suite;
	SuiteSmoke suite_smoke;
	std::vector<ClaimSpec> claims;
	bool is_suite() const
	{
		return !suite.empty();
	}
};

// Parses and validates; throws UsageError "<source>: <json path>: <what is
// wrong>" on the first problem. Unknown keys are refused.
ExperimentSpec parse_experiment(const std::string &json_text, const std::string &source);
// The description as JSON again (times in seconds), with the spec as run.
std::string experiment_to_json(const ExperimentSpec &spec);

// Stretches every time of the experiment to a total of duration_ns.
ExperimentSpec scale_to_duration(const ExperimentSpec &spec, std::uint64_t duration_ns);

// Congestion control names as the kernel takes them: [a-z0-9_]{1,15}.
void check_algorithm_name(const std::string &name, const std::string &what);
// "a,b,c" -> validated names, no duplicates.
std::vector<std::string> parse_algorithm_list(const std::string &text);
bool is_bpf_algorithm(const std::string &name); // bpf_powertcp, bpf_theta_ptcp, bpf_hpcc, bpf_timely
// The eBPF algorithms, as a list for messages.
const char *bpf_algorithm_list();
// "1,2,3" -> seeds (--seeds): whole numbers 1..1000000, none twice.
std::vector<std::uint64_t> parse_seed_list(const std::string &text);
// A traffic generator's --seed: from the run's seed, the phase's index and
// the sender's index in the phase; not from the algorithm, so every
// algorithm of one seed runs the same traffic. Seed 1 gives the seeds runs
// had before seeds existed (1000 x (phase + 1) + sender + 1).
std::uint64_t traffic_seed(std::uint64_t run_seed, std::size_t phase, std::size_t sender);

// One run of the phases per case: without a sweep a single case "run";
// with loads one case per load ("load20" = 0.2) applied to every poisson
// phase; with sender_counts one case per count ("senders4" = 4) in which
// every long phase sends from the first 4 hosts of its `from` only (the
// flow-count comparison of a benchmark, on one testbed).
struct ExperimentCase {
	std::string name;
	double load = 0; // 0 = the phases' own loads
	std::uint32_t senders = 0; // 0 = all of each long phase's `from`
};
std::vector<ExperimentCase> experiment_cases(const ExperimentSpec &spec);

// Host selectors: a host name ("s1"), a range of names that differ in a
// trailing number ("s2..s11", "h1_1..h1_4"), or every host of a role
// ("senders", "receivers", "hosts" = all hosts). Expanded against the
// testbed's hosts in order of appearance, without duplicates; UsageError
// for a name the testbed does not have.
struct HostRef {
	std::string name, role;
};
std::vector<std::string> expand_hosts(const std::vector<std::string> &selectors, const std::vector<HostRef> &hosts,
				      const std::string &what);
// The hosts a phase sends from in a case: its `from` expanded, cut to the
// case's sender count for a long phase (UsageError when it has fewer).
std::vector<std::string> phase_senders(const PhaseSpec &phase, const ExperimentCase &cs,
				       const std::vector<HostRef> &hosts, const std::string &what);

} // namespace lumen
