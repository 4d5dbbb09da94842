/*
 * options.h - lumen-dp's application options (after EAL's, past "--"):
 * the ones every mode shares (transport, path policy, workload, output)
 * and the table of modes. Parsing happens before EAL starts, so a bad
 * option costs nothing and leaves nothing behind.
 */
#ifndef LUMEN_DP_OPTIONS_H
#define LUMEN_DP_OPTIONS_H

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "transport/engine.h"
#include "app/port.h"
#include "transport/impair.h"
#include "transport/port_map.h"

namespace lumen::dp
{

/* hosts mode: one host on a DPDK port, with its address and its gateway's MAC. */
struct HostSpec {
	uint16_t port = 0;
	uint32_t ip = 0;
	Mac gateway{};
};

struct Options {
	std::string mode;
	EngineConfig engine;
	ImpairParams impair;
	bool server = false;
	uint16_t port = 0;
	QueueSetup queues; /* --queues, --udp-port (also engine.udp_port), --steer: per port */
	uint32_t local_ip = 0, peer_ip = 0;
	Mac peer_mac{};
	bool have_peer_mac = false;
	std::vector<HostSpec> hosts; /* hosts: --host PORT,IP,GATEWAY_MAC, in order */
	std::string pattern = "permutation"; /* hosts: permutation or pairs */
	/* hosts on a reconfigurable network (transport/optical_gate.h): lumend's
	 * page per host (--optical-pages, in --host order), the schedule's
	 * node addresses (--optical-addrs, node order), the link's rate and
	 * the longest a frame may wait */
	std::vector<std::string> optical_pages;
	std::string optical_addrs;
	uint32_t optical_rate_mbps = 0;
	uint64_t optical_max_hold_ns = 1'000'000'000;
	uint64_t optical_slack_ns = 50'000; /* how late a poll may send a frame (OpticalGate) */
	uint64_t optical_stale_ns = 0; /* lumend's page older than this is stale (0: OschedPage's default) */
	bool optical_coalesce = true; /* fold ACKs waiting in a VOQ (transport/ack_coalescer.h) */
	/* hosts: --discover-paths S finds, before the clients start, which
	 * source ports lead to which of S spines for each destination
	 * (transport/port_map.h); --probe-ttl, --probe-gap-us tune it */
	PortMapParams port_map;
	uint32_t shift = 0; /* hosts, permutation: i sends to (i + shift) mod n; 0 = drawn from --seed */
	/* hosts: --demand FILE, an n x n matrix of payload rates in Mbit/s
	 * (sched/demand.h's format, row = source): every pair with a rate has
	 * an open-loop client that posts messages at it (check_hosts reads it) */
	std::string demand_file;
	std::vector<double> demand_mbps;
	/* collective mode (mode_collective.cpp): the hosts are ranks in --host
	 * order; --collective, --size (nccl-tests' S), --channels, --reduce */
	std::string collective;
	uint64_t coll_bytes = 1 << 20;
	uint32_t channels = 1;
	std::string reduce = "float32";
	uint32_t leaves = 0; /* --leaves L: L equal groups of consecutive ranks; 0: one per gateway MAC */
	/* --rank-ips: every rank's address in rank order, when the ranks are
	 * spread over processes; this process's are the --host ones */
	std::vector<uint32_t> rank_ips;
	uint32_t conns = 1, msg_size = 1 << 20, msgs = 0 /* per connection; 0 = until --time */, depth = 1;
	double seconds = 0; /* 0: until the messages are done (client) or SIGINT (server) */
	std::string json; /* summary file, "-" for stdout */
	std::string fct_csv; /* client: one line per message, "" = none */
	uint64_t start_at_ns = 0; /* client: first messages at this CLOCK_MONOTONIC time; 0 = at once */
	bool progress = true;
	std::string bench_case = "all"; /* bench: tx, rx or all */
	std::vector<uint32_t> conns_list; /* --conns 1,10000 (a list: bench only); conns is its first */
	std::set<std::string> given; /* the long options on the command line: a mode's own defaults */
};

/* A mode: its name, what it does, its own options' help, what it requires
 * of the options (checked before EAL starts: "" or the error) and its body.
 * A mode that only computes (plan) has `offline` instead: it takes its own
 * arguments (after the mode's name), and EAL never starts. */
struct Mode {
	const char *name;
	const char *summary;
	const char *usage;
	std::string (*check)(Options &o);
	int (*run)(Options &o);
	int (*offline)(int argc, char **argv);
};

extern const Mode kModes[];
const Mode *find_mode(const std::string &name);

/* Parse argv (argv[0] is the mode) into o; "" or the error. --help: *help set. */
std::string parse_options(int argc, char **argv, Options *o, bool *help);
void print_usage(const char *prog, const Mode *m);
/* getopt_long's answer c outside a mode's options (':' a missing value,
 * anything else unknown) as the error, argv as getopt left it. */
std::string getopt_error(int c, char **argv);
/* What getopt left unparsed: "" when nothing, else the error. */
std::string leftover_argument(int argc, char **argv);

std::string ip_str(uint32_t ip);
/* The largest frame the engine builds: --mtu and the Ethernet header. */
inline uint32_t frame_bytes(const Options &o)
{
	return o.engine.mtu + 14;
}

} // namespace lumen::dp

#endif
