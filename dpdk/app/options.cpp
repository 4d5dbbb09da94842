/* options.cpp - lumen-dp's application options and mode table (options.h). */
#include "app/options.h"

#include <unordered_map>

#include "base/error.h"
#include "base/list.h"
#include "transport/engine_limits.h"
#include "transport/optical_gate.h"

#include <arpa/inet.h>
#include <getopt.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace lumen::dp
{

namespace
{

enum Opt {
	kServer = 256,
	kPort,
	kIp,
	kPeer,
	kPeerMac,
	kConns,
	kMsgSize,
	kMsgs,
	kDepth,
	kTime,
	kCc,
	kPath,
	kEntropies,
	kExplore,
	kFreeze,
	kMtu,
	kWindow,
	kAckEvery,
	kGbn,
	kNoVerify,
	kIntSlots,
	kSeed,
	kImpair,
	kJson,
	kFctCsv,
	kStartAt,
	kQuiet,
	kHost,
	kPattern,
	kShift,
	kCase,
	kSeconds,
	kVerify,
	kQueues,
	kUdpPort,
	kSteer,
	kOpticalPages,
	kOpticalAddrs,
	kOpticalRate,
	kOpticalMaxHold,
	kOpticalSlack,
	kOpticalCoalesce,
	kOpticalStale,
	kDemand,
	kInitCwnd,
	kHostBw,
	kBaseRtt,
	kRtoMin,
	kRtoMax,
	kNoRandomize,
	kStartJitter,
	kDiscoverPaths,
	kProbeTtl,
	kProbeGap,
	kProbeAge,
	kCeNackThreshold,
	kCeWindow,
	kHpccEta,
	kHpccMaxStage,
	kHpccWai,
	kTimelyTLow,
	kTimelyTHigh,
	kTimelyMinRtt,
	kTimelyDelta,
	kTimelyAlpha,
	kTimelyBeta,
	kTimelyHai,
	kTimelySegment,
	kRetcpJump,
	kRetcpPrebuffer,
	kCollective,
	kSize,
	kChannels,
	kReduce,
	kLeaves,
	kRankIps,
	kHelp,
};

const option kLong[] = {
	{"server", no_argument, nullptr, kServer},
	{"port", required_argument, nullptr, kPort},
	{"ip", required_argument, nullptr, kIp},
	{"peer", required_argument, nullptr, kPeer},
	{"peer-mac", required_argument, nullptr, kPeerMac},
	{"conns", required_argument, nullptr, kConns},
	{"msg-size", required_argument, nullptr, kMsgSize},
	{"msgs", required_argument, nullptr, kMsgs},
	{"depth", required_argument, nullptr, kDepth},
	{"time", required_argument, nullptr, kTime},
	{"cc", required_argument, nullptr, kCc},
	{"path", required_argument, nullptr, kPath},
	{"entropies", required_argument, nullptr, kEntropies},
	{"explore", required_argument, nullptr, kExplore},
	{"freeze-us", required_argument, nullptr, kFreeze},
	{"mtu", required_argument, nullptr, kMtu},
	{"window", required_argument, nullptr, kWindow},
	{"ack-every", required_argument, nullptr, kAckEvery},
	{"gbn", no_argument, nullptr, kGbn},
	{"no-verify", no_argument, nullptr, kNoVerify},
	{"int-slots", required_argument, nullptr, kIntSlots},
	{"seed", required_argument, nullptr, kSeed},
	{"impair", required_argument, nullptr, kImpair},
	{"json", required_argument, nullptr, kJson},
	{"fct-csv", required_argument, nullptr, kFctCsv},
	{"start-at", required_argument, nullptr, kStartAt},
	{"quiet", no_argument, nullptr, kQuiet},
	{"host", required_argument, nullptr, kHost},
	{"pattern", required_argument, nullptr, kPattern},
	{"shift", required_argument, nullptr, kShift},
	{"case", required_argument, nullptr, kCase},
	{"seconds", required_argument, nullptr, kSeconds},
	{"verify", no_argument, nullptr, kVerify},
	{"queues", required_argument, nullptr, kQueues},
	{"udp-port", required_argument, nullptr, kUdpPort},
	{"steer", required_argument, nullptr, kSteer},
	{"optical-pages", required_argument, nullptr, kOpticalPages},
	{"optical-addrs", required_argument, nullptr, kOpticalAddrs},
	{"optical-rate", required_argument, nullptr, kOpticalRate},
	{"optical-max-hold-us", required_argument, nullptr, kOpticalMaxHold},
	{"optical-slack-us", required_argument, nullptr, kOpticalSlack},
	{"optical-coalesce", required_argument, nullptr, kOpticalCoalesce},
	{"optical-stale-us", required_argument, nullptr, kOpticalStale},
	{"demand", required_argument, nullptr, kDemand},
	{"init-cwnd", required_argument, nullptr, kInitCwnd},
	{"host-bw-mbps", required_argument, nullptr, kHostBw},
	{"base-rtt-us", required_argument, nullptr, kBaseRtt},
	{"rto-min-us", required_argument, nullptr, kRtoMin},
	{"rto-max-us", required_argument, nullptr, kRtoMax},
	{"no-randomize", no_argument, nullptr, kNoRandomize},
	{"start-jitter-us", required_argument, nullptr, kStartJitter},
	{"discover-paths", required_argument, nullptr, kDiscoverPaths},
	{"collective", required_argument, nullptr, kCollective},
	{"size", required_argument, nullptr, kSize},
	{"channels", required_argument, nullptr, kChannels},
	{"reduce", required_argument, nullptr, kReduce},
	{"leaves", required_argument, nullptr, kLeaves},
	{"rank-ips", required_argument, nullptr, kRankIps},
	{"probe-ttl", required_argument, nullptr, kProbeTtl},
	{"probe-gap-us", required_argument, nullptr, kProbeGap},
	{"probe-age-ms", required_argument, nullptr, kProbeAge},
	{"ce-nack-threshold", required_argument, nullptr, kCeNackThreshold},
	{"ce-window-us", required_argument, nullptr, kCeWindow},
	{"hpcc-eta", required_argument, nullptr, kHpccEta},
	{"hpcc-max-stage", required_argument, nullptr, kHpccMaxStage},
	{"hpcc-wai", required_argument, nullptr, kHpccWai},
	{"timely-t-low-us", required_argument, nullptr, kTimelyTLow},
	{"timely-t-high-us", required_argument, nullptr, kTimelyTHigh},
	{"timely-min-rtt-us", required_argument, nullptr, kTimelyMinRtt},
	{"timely-delta-mbps", required_argument, nullptr, kTimelyDelta},
	{"timely-alpha", required_argument, nullptr, kTimelyAlpha},
	{"timely-beta", required_argument, nullptr, kTimelyBeta},
	{"timely-hai", required_argument, nullptr, kTimelyHai},
	{"timely-segment", required_argument, nullptr, kTimelySegment},
	{"retcp-jump", required_argument, nullptr, kRetcpJump},
	{"retcp-prebuffer-us", required_argument, nullptr, kRetcpPrebuffer},
	{"help", no_argument, nullptr, kHelp},
	{nullptr, 0, nullptr, 0},
};

const char kCommonUsage[] = "transport:\n"
			    "  --cc dctcp|powertcp|theta-powertcp|hpcc|timely|retcp   congestion control\n"
			    "                      (dctcp); powertcp and hpcc read INT (give --int-slots);\n"
			    "                      retcp: dctcp whose window jumps with the circuit to the\n"
			    "                      peer (--optical: the gate's schedule)\n"
			    "  --path ecmp|ops|reps|reps-freeze|ethereal\n"
			    "                      path policy (reps). ethereal: one pinned entropy per\n"
			    "                      connection, moved only by a NACK or a timeout on it\n"
			    "                      (Ethereal's single path); implies --gbn and\n"
			    "                      --ce-nack-threshold 50; give it to both ends\n"
			    "  --entropies N       UDP source ports to spread over, from 49152 (256; 1..16384)\n"
			    "  --explore N         REPS: packets that explore first, one BDP (256)\n"
			    "  --freeze-us N       reps-freeze: how long a freeze lasts (10000)\n"
			    "  --mtu N             IP packet size (1500)\n"
			    "  --window N          send and receive window, packets, power of two (1024)\n"
			    "  --ack-every N       DATA packets per ACK (1)\n"
			    "  --init-cwnd N       DCTCP's initial window, packets (10); on a reconfigurable\n"
			    "                      network the RTT is a period: start near its BDP\n"
			    "  --host-bw-mbps N    the host's link rate, Mbit/s: HostBw of powertcp, hpcc and\n"
			    "                      timely (their host BDP, beta and W_AI), dctcp's pacing cap\n"
			    "                      (25000); give the NIC's rate\n"
			    "  --base-rtt-us N     tau, the path's base RTT: powertcp's and hpcc's T, dctcp's\n"
			    "                      pacing before an RTT sample; 0 = the smallest RTT seen (20)\n"
			    "  --rto-min-us N      retransmission timeout's floor (200); on a reconfigurable\n"
			    "                      network, above the longest a frame and its ACK wait for\n"
			    "                      their circuits (two periods and the gate's hold)\n"
			    "  --rto-max-us N      retransmission timeout's ceiling (100000)\n"
			    "  --gbn               Go-Back-N (in-order receiver, NACKs) instead of SACK;\n"
			    "                      single-path policies only (ecmp, ethereal)\n"
			    "  --ce-nack-threshold PCT  receiver, with --gbn: when more than PCT % of a\n"
			    "                      connection's DATA in a window was CE-marked, NACK (the\n"
			    "                      sender goes back N; ethereal's moves to another path),\n"
			    "                      then NACK no out-of-order packet for a window; 0..99,\n"
			    "                      0 = off (0; 50 with --path ethereal)\n"
			    "  --ce-window-us N    that window, ~ a loaded RTT, below the RTO (100)\n"
			    "  --hpcc-eta F        hpcc: target utilisation, 0.5..1 (0.95)\n"
			    "  --hpcc-max-stage N  hpcc: additive rounds before a multiplicative one, 0..100 (5)\n"
			    "  --hpcc-wai BYTES    hpcc: additive increase W_AI, 0 = host BDP x (1 - eta) / 10 (0)\n"
			    "  --timely-t-low-us N   timely: below this RTT, always increase (50)\n"
			    "  --timely-t-high-us N  timely: above this RTT, always decrease; > T_low (500)\n"
			    "  --timely-min-rtt-us N timely: the gradient's normaliser, 0 = smallest RTT seen (0)\n"
			    "  --timely-delta-mbps N timely: additive step, 0 = host bandwidth / 1000 (0)\n"
			    "  --timely-alpha F    timely: EWMA weight of a new RTT difference, (0, 1] (0.875)\n"
			    "  --timely-beta F     timely: multiplicative decrease, (0, 1] (0.8)\n"
			    "  --timely-hai N      timely: increase events before hyperactive increase, 1..1000 (5)\n"
			    "  --timely-segment BYTES  timely: bytes acknowledged per rate update, 1024..16777216\n"
			    "                      (16384)\n"
			    "  --retcp-jump N      retcp: the window's factor while the circuit is up: its\n"
			    "                      rate over the packet network's, 1..64 (4)\n"
			    "  --retcp-prebuffer-us N  retcp: jump this long before the circuit opens,\n"
			    "                      0..100000 (0; the thesis runs 600 and 1800)\n"
			    "  --no-verify         do not write and check payload patterns\n"
			    "  --int-slots N       ask switches for N INT hop records (0)\n"
			    "  --seed N            seed of the host's random choices (1)\n"
			    "  --start-jitter-us N a message posted to an idle connection (a flow's arrival)\n"
			    "                      waits a uniform 0..N us, and the connection takes a random\n"
			    "                      place among the ready ones: Ethereal's randomized QP\n"
			    "                      ordering, against collectives' repetitive incasts (0)\n"
			    "  --no-randomize      arrivals join the back of the ready list (FIFO), no jitter\n"
			    "queues (every mode but bench; both ends need the same --queues and --udp-port):\n"
			    "  --queues N          RX/TX queue pairs per port, 1..16, each with its own\n"
			    "                      connections, polled by one lcore; lcores (EAL -l) poll the\n"
			    "                      queues round robin: fewer lcores than queues poll several\n"
			    "                      each, more leave the rest idle (1)\n"
			    "  --udp-port N        UDP destination port of queue 0; queue q uses N + q (4792)\n"
			    "  --steer auto|flow|software   how a frame reaches the queue of its destination\n"
			    "                      port: an rte_flow rule per queue, or the lcore that received\n"
			    "                      it hands it over; auto: rte_flow where the port takes it\n"
			    "workload (client):\n"
			    "  --conns N           connections (1)\n"
			    "  --msg-size BYTES    message size (1048576)\n"
			    "  --msgs N            messages per connection (0: until --time)\n"
			    "  --depth N           messages outstanding per connection (1)\n"
			    "  --time SECONDS      run at most this long (0: until done / SIGINT)\n"
			    "  --start-at NS       post the first messages at this CLOCK_MONOTONIC time (ns), to\n"
			    "                      start several processes together (0: at once)\n"
			    "output:\n"
			    "  --json FILE         JSON summary (- for stdout)\n"
			    "  --fct-csv FILE      every message a client posted: host, conn, msg, bytes, posted_ns,\n"
			    "                      done_ns (CLOCK_MONOTONIC; empty: unfinished at the end)\n"
			    "  --quiet             no progress lines\n";

bool parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end = nullptr;

	if (!s || !*s || *s == '-')
		return false;
	errno = 0;
	unsigned long long v = std::strtoull(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

bool parse_ip(const char *s, uint32_t *ip)
{
	in_addr a{};

	if (inet_pton(AF_INET, s, &a) != 1)
		return false;
	*ip = ntohl(a.s_addr);
	return true;
}

/* --host PORT,IP,GATEWAY_MAC */
std::string parse_host(const char *s, HostSpec *h)
{
	std::string v = s;
	size_t a = v.find(','), b = a == std::string::npos ? a : v.find(',', a + 1);
	uint64_t port;

	if (b == std::string::npos || !parse_u64(v.substr(0, a).c_str(), 0, 65535, &port) ||
	    !parse_ip(v.substr(a + 1, b - a - 1).c_str(), &h->ip) || !parse_mac(v.substr(b + 1), &h->gateway))
		return std::string("--host: '") + s + "' is not PORT,IP,GATEWAY_MAC (0,10.1.1.1,aa:bb:cc:dd:ee:ff)";
	h->port = (uint16_t)port;
	return "";
}

/* lumen's one comma-list splitter (base/list.h) throws; lumen-dp's option
 * parsers answer with the message instead */
std::string split_items(const char *s, const char *opt, const char *item, Duplicates duplicates,
			std::vector<std::string> *out)
{
	try {
		*out = split_list(s, opt, item, duplicates);
	} catch (const UsageError &e) {
		return e.what();
	}
	return "";
}

std::string range_error(const char *opt, const char *v, uint64_t lo, uint64_t hi)
{
	return std::string("--") + opt + ": '" + v + "' is not a whole number in " + std::to_string(lo) + ".." +
	       std::to_string(hi);
}

/* a fraction typed as a decimal ("0.95") into Q16, within r (in Q16) */
std::string parse_fraction(const char *s, const ParamRange &r, uint32_t *out)
{
	char *end = nullptr;
	double x = -1;

	if (s && *s) {
		errno = 0;
		x = std::strtod(s, &end);
		if (errno || *end)
			x = -1;
	}
	if (!(x >= 0 && x <= 1) || !r.holds((uint64_t)std::llround(x * 65536.0)))
		return std::string("--") + r.name + ": '" + (s ? s : "") + "' is not a fraction in " +
		       limits::fraction_text(r);
	*out = (uint32_t)std::llround(x * 65536.0);
	return "";
}

/* --conns N, or N,M,... (bench runs each) */
std::string parse_conns(const char *s, Options *o)
{
	std::vector<std::string> items;
	uint64_t n;

	o->conns_list.clear();
	/* a count given twice would only be run twice */
	if (std::string e = split_items(s, "--conns", "count", Duplicates::kRefuse, &items); !e.empty())
		return e;
	for (const std::string &one : items) {
		if (!parse_u64(one.c_str(), 1, 1 << 20, &n))
			return range_error("conns", one.c_str(), 1, 1 << 20);
		if (std::find(o->conns_list.begin(), o->conns_list.end(), (uint32_t)n) != o->conns_list.end())
			return "--conns: count " + std::to_string(n) + " is listed twice";
		o->conns_list.push_back((uint32_t)n);
	}
	if (o->conns_list.size() > 1 && o->mode != "bench")
		return std::string("--conns: a list (") + s + ") is for bench; give one number";
	o->conns = o->conns_list.front();
	return "";
}

/* --steer auto|flow|software */
std::string parse_steer(const char *s, Steer *out)
{
	static const struct {
		const char *name;
		Steer steer;
	} kSteers[] = {{"auto", Steer::kAuto}, {"flow", Steer::kFlow}, {"software", Steer::kSoftware}};

	for (const auto &k : kSteers)
		if (!std::strcmp(s, k.name)) {
			*out = k.steer;
			return "";
		}
	return std::string("--steer: unknown steering '") + s + "' (auto, flow, software)";
}

} // namespace

std::string ip_str(uint32_t ip)
{
	char s[INET_ADDRSTRLEN];
	in_addr a{htonl(ip)};

	inet_ntop(AF_INET, &a, s, sizeof(s));
	return s;
}

std::string getopt_error(int c, char **argv)
{
	if (c == ':')
		return std::string("option ") + argv[optind - 1] + " needs a value";
	return std::string("unknown option ") + argv[optind - 1];
}

std::string leftover_argument(int argc, char **argv)
{
	return optind < argc ? std::string("unexpected argument '") + argv[optind] + "'" : "";
}

std::string parse_options(int argc, char **argv, Options *o, bool *help)
{
	uint64_t v;
	int c, at = -1;

	*help = false;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", kLong, &at)) != -1) {
		const char *a = optarg;
		if (at >= 0)
			o->given.insert(kLong[at].name);
		at = -1;
#define NUM(name, lo, hi)                                                                                              \
	do {                                                                                                           \
		if (!parse_u64(a, lo, hi, &v))                                                                         \
			return range_error(name, a, lo, hi);                                                           \
	} while (0)
/* an engine parameter: its range and unit from transport/engine_limits.h */
#define LIMIT(r)                                                                                                       \
	do {                                                                                                           \
		if (!parse_u64(a, (r).lo, (r).hi, &v))                                                                 \
			return range_error((r).name, a, (r).lo, (r).hi);                                               \
		v *= (r).scale;                                                                                        \
	} while (0)
		switch (c) {
		case kServer:
			o->server = true;
			break;
		case kPort:
			NUM("port", 0, 65535);
			o->port = (uint16_t)v;
			break;
		case kIp:
			if (!parse_ip(a, &o->local_ip))
				return std::string("--ip: '") + a + "' is not an IPv4 address";
			break;
		case kPeer:
			if (!parse_ip(a, &o->peer_ip))
				return std::string("--peer: '") + a + "' is not an IPv4 address";
			break;
		case kPeerMac:
			if (!parse_mac(a, &o->peer_mac))
				return std::string("--peer-mac: '") + a + "' is not a MAC address (aa:bb:cc:dd:ee:ff)";
			o->have_peer_mac = true;
			break;
		case kConns:
			if (std::string e = parse_conns(a, o); !e.empty())
				return e;
			break;
		case kMsgSize:
			NUM("msg-size", 1, 1u << 31);
			o->msg_size = (uint32_t)v;
			break;
		case kMsgs:
			NUM("msgs", 0, 1u << 31);
			o->msgs = (uint32_t)v;
			break;
		case kDepth:
			NUM("depth", 1, 1024);
			o->depth = (uint32_t)v;
			break;
		case kTime:
		case kSeconds: {
			char *end = nullptr;
			o->seconds = std::strtod(a, &end);
			if (end == a || *end || !(o->seconds >= 0 && o->seconds <= 86400))
				return std::string(c == kTime ? "--time: '" : "--seconds: '") + a +
				       "' is not a number of seconds in 0..86400";
			break;
		}
		case kCc: {
			std::string name = a;
			std::replace(name.begin(), name.end(), '-', '_');
			bool found = false;
			for (CcAlgorithm x : {CcAlgorithm::kDctcp, CcAlgorithm::kPowerTcp, CcAlgorithm::kThetaPowerTcp,
					      CcAlgorithm::kHpcc, CcAlgorithm::kTimely, CcAlgorithm::kRetcp})
				if (name == cc_algorithm_name(x)) {
					o->engine.cc.algorithm = x;
					found = true;
				}
			if (!found)
				return std::string("--cc: unknown algorithm '") + a +
				       "' (dctcp, powertcp, theta-powertcp, hpcc, timely, retcp)";
			break;
		}
		case kHpccEta:
			if (std::string e = parse_fraction(a, limits::kHpccEta, &o->engine.cc.hpcc_eta); !e.empty())
				return e;
			break;
		case kHpccMaxStage:
			LIMIT(limits::kHpccMaxStage);
			o->engine.cc.hpcc_max_stage = (uint32_t)v;
			break;
		case kHpccWai:
			LIMIT(limits::kHpccWai);
			o->engine.cc.hpcc_wai_bytes = (uint32_t)v;
			break;
		case kTimelyTLow:
			LIMIT(limits::kTimelyTLowUs);
			o->engine.cc.timely_t_low_ns = v;
			break;
		case kTimelyTHigh:
			LIMIT(limits::kTimelyTHighUs);
			o->engine.cc.timely_t_high_ns = v;
			break;
		case kTimelyMinRtt:
			LIMIT(limits::kTimelyMinRttUs);
			o->engine.cc.timely_min_rtt_ns = v;
			break;
		case kTimelyDelta:
			LIMIT(limits::kTimelyDeltaMbps);
			o->engine.cc.timely_delta_mbps = (uint32_t)v;
			break;
		case kTimelyAlpha:
			if (std::string e = parse_fraction(a, limits::kTimelyAlpha, &o->engine.cc.timely_alpha);
			    !e.empty())
				return e;
			break;
		case kTimelyBeta:
			if (std::string e = parse_fraction(a, limits::kTimelyBeta, &o->engine.cc.timely_beta);
			    !e.empty())
				return e;
			break;
		case kTimelyHai:
			LIMIT(limits::kTimelyHai);
			o->engine.cc.timely_hai_events = (uint32_t)v;
			break;
		case kTimelySegment:
			LIMIT(limits::kTimelySegment);
			o->engine.cc.timely_seg_bytes = (uint32_t)v;
			break;
		case kRetcpJump:
			LIMIT(limits::kRetcpJump);
			o->engine.cc.retcp_jump = (uint32_t)v;
			break;
		case kRetcpPrebuffer:
			LIMIT(limits::kRetcpPrebufferUs);
			o->engine.cc.retcp_prebuffer_ns = v;
			break;
		case kPath: {
			int m = lumen_path_mode_from_name(a);
			if (m < 0) {
				std::string names;
				for (uint32_t i = 0; i < LUMEN_PATH_MODES; i++)
					names += std::string(i ? ", " : "") + lumen_path_mode_name(i);
				return std::string("--path: unknown policy '") + a + "' (" + names + ")";
			}
			o->engine.path_mode = (lumen_path_mode)m;
			break;
		}
		case kEntropies:
			LIMIT(limits::kEntropies);
			o->engine.path.entropies = (uint32_t)v;
			break;
		case kExplore:
			LIMIT(limits::kExplore);
			o->engine.path.explore_pkts = (uint32_t)v;
			break;
		case kFreeze:
			LIMIT(limits::kFreezeUs);
			o->engine.path.freeze_ns = v;
			break;
		case kMtu:
			LIMIT(limits::kMtu);
			o->engine.mtu = (uint32_t)v;
			break;
		case kWindow:
			LIMIT(limits::kWindow);
			o->engine.rx_window = o->engine.tx_window = (uint32_t)v;
			break;
		case kRtoMin:
			LIMIT(limits::kRtoMinUs);
			o->engine.rto.min_ns = v;
			break;
		case kRtoMax:
			LIMIT(limits::kRtoMaxUs);
			o->engine.rto.max_ns = v;
			break;
		case kAckEvery:
			LIMIT(limits::kAckEvery);
			o->engine.ack_every = (uint32_t)v;
			break;
		case kGbn:
			o->engine.gbn = true;
			break;
		case kNoRandomize:
			o->engine.randomize_order = false;
			break;
		case kDiscoverPaths:
			NUM("discover-paths", 1, 1024);
			o->port_map.uplinks = (uint32_t)v;
			break;
		case kProbeTtl:
			NUM("probe-ttl", 1, 255);
			o->port_map.ttl = (uint8_t)v;
			break;
		case kProbeGap:
			NUM("probe-gap-us", 0, 1'000'000);
			o->port_map.gap_ns = v * 1000;
			break;
		case kProbeAge:
			NUM("probe-age-ms", 20, 3'600'000);
			o->port_map.max_age_ns = v * 1'000'000;
			break;
		case kStartJitter:
			LIMIT(limits::kStartJitterUs);
			o->engine.start_jitter_ns = v;
			break;
		case kCeNackThreshold:
			LIMIT(limits::kCeNackThreshold);
			o->engine.ce_nack_threshold_pct = (uint32_t)v;
			break;
		case kCeWindow:
			LIMIT(limits::kCeWindowUs);
			o->engine.ce_window_ns = v;
			break;
		case kCollective:
			o->collective = a; /* checked by check_collective */
			break;
		case kSize:
			NUM("size", 0, 1ull << 32);
			o->coll_bytes = v;
			break;
		case kChannels:
			NUM("channels", 1, 64);
			o->channels = (uint32_t)v;
			break;
		case kReduce:
			o->reduce = a;
			break;
		case kLeaves:
			NUM("leaves", 1, 64);
			o->leaves = (uint32_t)v;
			break;
		case kRankIps: {
			/* every rank's address in rank order (checked by check_collective) */
			std::vector<std::string> items;
			o->rank_ips.clear();
			/* repeats: check_rank_ips names the two ranks */
			if (std::string e = split_items(a, "--rank-ips", "address", Duplicates::kAllow, &items);
			    !e.empty())
				return e;
			for (const std::string &one : items) {
				uint32_t ip;
				if (!parse_ip(one.c_str(), &ip))
					return "--rank-ips: '" + one +
					       "' is not an IPv4 address (give IP,IP,... in rank order)";
				o->rank_ips.push_back(ip);
			}
			break;
		}
		case kNoVerify:
			o->engine.verify = false;
			break;
		case kIntSlots:
			LIMIT(limits::kIntSlots);
			o->engine.int_slots = (uint32_t)v;
			break;
		case kSeed:
			NUM("seed", 0, UINT64_MAX);
			o->engine.seed = v;
			o->impair.seed = v ^ 0x5eed;
			break;
		case kImpair:
			if (std::string e = o->impair.parse(a); !e.empty())
				return e;
			break;
		case kJson:
			o->json = a;
			break;
		case kFctCsv:
			o->fct_csv = a;
			break;
		case kStartAt:
			NUM("start-at", 1, UINT64_MAX / 2);
			o->start_at_ns = v;
			break;
		case kQuiet:
			o->progress = false;
			break;
		case kHost: {
			HostSpec h;
			if (std::string e = parse_host(a, &h); !e.empty())
				return e;
			o->hosts.push_back(h);
			break;
		}
		case kOpticalPages: {
			/* one page per --host, in order: two hosts reading one page
			 * would both claim its node */
			if (std::string e =
				    split_items(a, "--optical-pages", "path", Duplicates::kRefuse, &o->optical_pages);
			    !e.empty())
				return e;
			break;
		}
		case kOpticalAddrs: {
			std::unordered_map<uint32_t, uint32_t> m;
			if (std::string e = parse_node_addrs(a, &m); !e.empty())
				return "--optical-addrs: " + e;
			o->optical_addrs = a;
			break;
		}
		case kOpticalRate:
			NUM("optical-rate", 1, 10'000'000);
			o->optical_rate_mbps = (uint32_t)v;
			break;
		case kOpticalMaxHold:
			NUM("optical-max-hold-us", 1, 3'600'000'000ull);
			o->optical_max_hold_ns = v * 1000;
			break;
		case kInitCwnd:
			LIMIT(limits::kInitCwnd);
			o->engine.cc.init_cwnd_pkts = (uint32_t)v;
			break;
		case kHostBw:
			LIMIT(limits::kHostBwMbps);
			o->engine.cc.host_bw_bps = v;
			break;
		case kBaseRtt:
			LIMIT(limits::kBaseRttUs);
			o->engine.cc.base_rtt_ns = v;
			break;
		case kDemand:
			o->demand_file = a;
			break;
		case kOpticalSlack:
			NUM("optical-slack-us", 0, 1'000'000);
			o->optical_slack_ns = v * 1000;
			break;
		case kOpticalStale:
			NUM("optical-stale-us", 0, 3'600'000'000ull);
			o->optical_stale_ns = v * 1000;
			break;
		case kOpticalCoalesce:
			if (std::strcmp(a, "on") && std::strcmp(a, "off"))
				return std::string("--optical-coalesce: '") + a + "' is neither on nor off";
			o->optical_coalesce = !std::strcmp(a, "on");
			break;
		case kPattern:
			if (std::strcmp(a, "permutation") && std::strcmp(a, "pairs") && std::strcmp(a, "all-to-all"))
				return std::string("--pattern: unknown pattern '") + a +
				       "' (permutation, pairs, all-to-all)";
			o->pattern = a;
			break;
		case kShift:
			NUM("shift", 1, 65535);
			o->shift = (uint32_t)v;
			break;
		case kCase:
			if (std::strcmp(a, "tx") && std::strcmp(a, "rx") && std::strcmp(a, "all"))
				return std::string("--case: unknown case '") + a + "' (tx, rx, all)";
			o->bench_case = a;
			break;
		case kVerify:
			o->engine.verify = true;
			break;
		case kQueues:
			NUM("queues", 1, kMaxQueues);
			o->queues.queues = (uint16_t)v;
			break;
		case kUdpPort:
			NUM("udp-port", 1, 65535);
			o->engine.udp_port = o->queues.udp_base = (uint16_t)v;
			break;
		case kSteer:
			if (std::string e = parse_steer(a, &o->queues.steer); !e.empty())
				return e;
			break;
		case 'h':
		case kHelp:
			*help = true;
			return "";
		default:
			return getopt_error(c, argv);
		}
#undef NUM
#undef LIMIT
	}
	if (std::string e = leftover_argument(argc, argv); !e.empty())
		return e;
	if (std::string e = queues_validate(o->queues.udp_base, o->queues.queues); !e.empty())
		return "--queues " + std::to_string(o->queues.queues) + " --udp-port " +
		       std::to_string(o->queues.udp_base) + ": " + e;
	/* Ethereal's single path delivers in order: Go-Back-N, with its
	 * receiver's CE NACKs unless the user set the threshold (0: off) */
	if (o->engine.path_mode == LUMEN_PATH_ETHEREAL) {
		o->engine.gbn = true;
		if (!o->given.count("ce-nack-threshold"))
			o->engine.ce_nack_threshold_pct = 50;
	}
	o->engine.cc.mss = o->engine.max_payload();
	/* the first RTO sits inside the bounds the user moved */
	RtoParams &r = o->engine.rto;
	if (r.max_ns < r.min_ns)
		return "--rto-max-us (" + std::to_string(r.max_ns / 1000) + ") is below --rto-min-us (" +
		       std::to_string(r.min_ns / 1000) + ")";
	r.initial_ns = std::clamp(r.initial_ns, r.min_ns, std::max(r.min_ns, r.max_ns));
	if (o->port_map.uplinks) {
		if (o->mode != "hosts" && o->mode != "collective")
			return "--discover-paths is for hosts and collective modes";
		if (o->queues.queues != 1)
			return "--discover-paths probes with queue 0's ports: give --queues 1";
		if (std::string e = o->port_map.validate(); !e.empty())
			return e;
	} else if (o->given.count("probe-ttl") || o->given.count("probe-gap-us") || o->given.count("probe-age-ms")) {
		return "--probe-ttl, --probe-gap-us and --probe-age-ms tune --discover-paths";
	}
	if (o->mode != "collective")
		for (const char *k : {"collective", "size", "channels", "reduce", "leaves", "rank-ips"})
			if (o->given.count(k))
				return std::string("--") + k + " is collective mode's";
	if (!o->engine.randomize_order && o->engine.start_jitter_ns)
		return "--start-jitter-us is part of the randomized order that --no-randomize turns off";
	/* an algorithm's parameters without the algorithm would do nothing */
	for (const char *k : {"hpcc-eta", "hpcc-max-stage", "hpcc-wai"})
		if (o->given.count(k) && o->engine.cc.algorithm != CcAlgorithm::kHpcc)
			return std::string("--") + k + " tunes --cc hpcc";
	for (const char *k : {"timely-t-low-us", "timely-t-high-us", "timely-min-rtt-us", "timely-delta-mbps",
			      "timely-alpha", "timely-beta", "timely-hai", "timely-segment"})
		if (o->given.count(k) && o->engine.cc.algorithm != CcAlgorithm::kTimely)
			return std::string("--") + k + " tunes --cc timely";
	for (const char *k : {"retcp-jump", "retcp-prebuffer-us"})
		if (o->given.count(k) && o->engine.cc.algorithm != CcAlgorithm::kRetcp)
			return std::string("--") + k + " tunes --cc retcp";
	/* without a schedule reTCP would be DCTCP under another name */
	if (o->engine.cc.algorithm == CcAlgorithm::kRetcp && o->optical_pages.empty())
		return "--cc retcp needs a circuit schedule to follow: --optical-pages (hosts mode)";
	return o->engine.validate();
}

void print_usage(const char *prog, const Mode *m)
{
	if (!m) {
		std::printf("usage: %s [EAL options] -- MODE [options]\n\nmodes:\n", prog);
		for (const Mode *x = kModes; x->name; x++)
			std::printf("  %-8s %s\n", x->name, x->summary);
		std::printf("\n%s -- MODE --help shows a mode's options; EAL's are in %s --help.\n", prog, prog);
		return;
	}
	std::printf("usage: %s [EAL options] -- %s [options]\n%s\n\n%s\n%s", prog, m->name, m->summary, m->usage,
		    kCommonUsage);
}

const Mode *find_mode(const std::string &name)
{
	for (const Mode *m = kModes; m->name; m++)
		if (name == m->name)
			return m;
	return nullptr;
}

} // namespace lumen::dp
