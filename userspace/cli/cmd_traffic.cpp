// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/cli/cmd_traffic.cpp - `lumen traffic`: the iperf-style
// traffic generator (server and client) with workload replay, per-flow
// congestion control, FCT and TCP_INFO records. See docs/traffic.md.
#include "base/error.h"
#include "cli/commands.h"
#include "traffic/traffic.h"

#include <string>
#include <vector>

namespace lumen
{
namespace
{

const char kUsage[] =
	R"(usage: lumen traffic server [--port 5500] [--bind ADDR] [--ready-file PATH] [--quiet]
       lumen traffic client --to ADDR[,ADDR...] [--port 5500] [--cc ALGO] [--label NAME]
                            [--seed N] [--sample 10ms] [--link-rate 1gbit] [--base-rtt 100us]
                            [--flows-csv FILE] [--samples-csv FILE] [--new-files] [--json] [--quiet]
                            [--start-at MONO_NS | --start-from-input]
                            [--drain-timeout 60s]
                            (--long N --duration D
                             | --poisson WORKLOAD --load L --duration D [--max-flows N]
                             | --incast SIZE --bursts K --period P)

Every flow is one TCP connection on which the client sends a 16-byte header
(magic, version, flags, payload size) and the payload; the server answers
with an 8-byte completion (payload bytes received). FCT = connect() start to
completion received. All timestamps are CLOCK_MONOTONIC ns (system-wide, so
records of processes in different namespaces line up). io_uring, one thread.

server
  Accepts flows until SIGINT/SIGTERM and discards their payload.
  --port N             TCP port (default 5500)
  --bind ADDR          listen on this numeric address only (default: all,
                       IPv6 and IPv4)
  --ready-file PATH    write "ready" there once listening (default: stdout)
  --quiet              no messages on stderr

client
  --to ADDR[,ADDR...]  numeric IPv4/IPv6 server addresses (required)
  --port N             server port (default 5500)
  --cc ALGO            TCP_CONGESTION of every flow, set before connect; an
                       algorithm the kernel refuses is an error (default:
                       the namespace's net.ipv4.tcp_congestion_control)
  --label NAME         first column of the CSVs (default: client)
  --seed N             random seed of --poisson (default 1)
  --sample D           TCP_INFO sampling period of open flows (default 10ms;
                       >= 100us); every flow also gets a sample when it ends
  --link-rate R        the sender's link rate: the load reference and the
                       serialization term of the ideal FCT (default 1gbit)
  --base-rtt D         propagation RTT for the ideal FCT (default 100us)
  --flows-csv FILE     one row per flow:
                       label,flow_id,dst,cc,kind,size_bytes,start_ns,end_ns,
                       fct_ns,bytes,retrans,ideal_fct_ns,slowdown,status
  --samples-csv FILE   TCP_INFO samples: label,flow_id,t_ns,bytes_acked,cwnd,
                       srtt_us,retrans,pacing_rate_bps,delivery_rate_bps
  --new-files          refuse to write a CSV file that exists already (O_EXCL);
                       the experiment runner writes into a fresh directory
  --json               print the summary as JSON (default: text)
  --quiet              no progress lines on stderr
  --start-at MONO_NS   start the workload at this CLOCK_MONOTONIC time (ns),
                       e.g. the same value in many processes
  --start-from-input   once set up, print "ready" on stderr, then read the
                       start time from a line "start-at MONO_NS" on standard
                       input (a start barrier: 'lumen experiment' sends one
                       line to every generator once all are ready)
  --drain-timeout D    flows still open this long after the workload ended
                       fail with error:timeout (default 60s)

  exactly one workload:
  --long N --duration D
                       N long-lived flows (round-robin over --to) sending
                       for D, then half-closing
  --poisson WORKLOAD --load L --duration D [--max-flows N]
                       flow sizes from WORKLOAD (websearch, datamining or a
                       CSV path; named ones from $LUMEN_DATA_DIR/workloads),
                       Poisson arrivals for D with rate
                       L x link-rate / (8 x mean size): L (0 < L <= 1) is the
                       offered load on the sender's link; destinations
                       uniformly from --to
  --incast SIZE --bursts K --period P
                       at start + k x P (k < K) one flow of SIZE bytes to
                       every --to address

Exit status 0 when every flow completed, 1 otherwise (the CSVs are written
in every case, also after SIGINT/SIGTERM), 2 for usage errors.
)";

int run(const std::vector<std::string> &args)
{
	using Words = std::vector<std::string>;
	const Words rest(args.empty() ? args.end() : args.begin() + 1, args.end());
	return run_subcommand<Words>(
		args.empty() ? nullptr : &args[0],
		{{"server", [](const Words &w) { return run_traffic_server(parse_traffic_server_options(w)); }},
		 {"client", [](const Words &w) { return run_traffic_client(parse_traffic_client_options(w)); }}},
		rest);
}

} // namespace

const Command kTrafficCommand = {"traffic", "traffic generator: long flows, workload replay, incast; FCT records",
				 kUsage, run};

} // namespace lumen
