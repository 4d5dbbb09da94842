/*
 * modes.cpp - lumen-dp's modes (the table of options.h):
 *
 *   perf   a client or a server on one port: the client opens --conns
 *          connections to --peer and keeps --depth messages of --msg-size
 *          outstanding on each, --msgs times or for --time; the server
 *          answers whoever sends. Message completion times, rates and
 *          counters at the end, progress lines every second.
 *   pair   a client and a server in one process over two ports that
 *          lumen-dp creates itself, joined by rte_rings (the ring PMD),
 *          with the impairment shim of --impair on the client's frames
 *          (and the server's ACKs with "acks"): a self-test of the whole
 *          transport. Exit status 0 only when every message arrived intact
 *          and in order. With --queues N each port has N queues and the
 *          rings are crossed (make_ring_ports), so that software steering
 *          carries every frame to its queue.
 *
 * Every mode but bench runs --queues queue pairs per port, a host's
 * connections split over them (Run::add, transport/queues.h).
 *   hosts  several hosts in one process, one per port, in a traffic
 *          pattern (mode_hosts.cpp).
 *   bench  the sender's and the receiver's packet rates on one lcore into
 *          net_null, 1 and 10,000 connections (mode_bench.cpp).
 *   plan   Ethereal's split of a batch of flows over a leaf's uplinks,
 *          computed and printed without EAL (mode_plan.cpp).
 */
#include <rte_eth_ring.h>
#include <rte_lcore.h>
#include <rte_ring.h>

#include <cstdio>
#include <vector>

#include "app/run.h"

namespace lumen::dp
{

namespace
{

/* Engine configuration of one host. */
EngineConfig host_cfg(const Options &o, uint32_t ip, const Mac &mac, uint64_t seed_salt)
{
	EngineConfig c = o.engine;
	c.ip = ip;
	c.mac = mac;
	c.seed = o.engine.seed * 0x9E3779B97F4A7C15ull + seed_salt;
	return c;
}

std::string check_perf(Options &o)
{
	if (!o.local_ip)
		return "--ip (this host's IPv4 address) is required";
	if (!o.server && (!o.peer_ip || !o.have_peer_mac))
		return "a client needs --peer (the server's address) and --peer-mac (the next hop's MAC)";
	if (o.server && o.impair.active())
		return "--impair belongs to pair mode";
	if (!o.server && !o.msgs && !o.seconds)
		o.seconds = 10;
	return "";
}

int run_perf(Options &o)
{
	std::string err;
	PortInfo info;

	rte_mempool *pool = make_pool("lumen_dp_pool", 16384u * o.queues.queues, frame_bytes(o), &err);
	if (!pool)
		return mode_fail("perf", err);
	if (std::string e = port_setup(o.port, o.queues, pool, o.engine.mtu, &info); !e.empty()) {
		port_stop(o.port, &info);
		rte_mempool_free(pool);
		return mode_fail("perf", e);
	}
	std::fprintf(stderr, "lumen-dp perf: %s %s on port %u (%s, %s), %s\n", o.server ? "server" : "client",
		     ip_str(o.local_ip).c_str(), o.port, info.driver.c_str(), mac_str(info.mac).c_str(),
		     queues_str(info).c_str());
	int rc;
	{
		Run run(o);
		std::vector<Host *> h = run.add(o.server ? "server" : "client", o.port, info, pool,
						host_cfg(o, o.local_ip, info.mac, o.server ? 2 : 1), &o.impair);
		run.note("ports", {port_json(o.port, info)});
		if (!o.server)
			if (std::string e = run.start_client(h, o.peer_ip, o.peer_mac); !e.empty())
				return mode_fail("perf", e);
		rc = run.loop();
		rc = std::max(rc, run.report("perf"));
	}
	port_stop(o.port, &info);
	rte_mempool_free(pool);
	return rc;
}

std::string check_pair(Options &o)
{
	if (o.server || o.local_ip || o.peer_ip || o.have_peer_mac)
		return "pair mode makes its own two hosts: --server, --ip, --peer and --peer-mac belong to perf";
	if (o.queues.steer == Steer::kFlow)
		return "pair mode's ring ports take no rte_flow rule: --steer software or auto";
	if (!o.msgs && !o.seconds)
		o.msgs = 100;
	return "";
}

/* The rings between the two ports, a pair per queue, and the two ring ports
 * on them. With several queues they are crossed: what the client sends on
 * queue q arrives on the server's queue q + 1 (mod queues), and back, as
 * from a NIC whose hash ignores lumen-dp's ports, so every frame takes the
 * software steering to its queue. Returns "" or what failed. */
std::string make_ring_ports(uint16_t queues, std::vector<rte_ring *> *rings, int *pa, int *pb)
{
	std::vector<rte_ring *> ab, ba, a_rx, b_rx;

	for (uint16_t q = 0; q < queues; q++)
		for (auto *v : {&ab, &ba}) {
			std::string name = std::string(v == &ab ? "lumen_dp_ab" : "lumen_dp_ba") + std::to_string(q);
			rte_ring *r = rte_ring_create(name.c_str(), 4096, (int)rte_socket_id(),
						      RING_F_SP_ENQ | RING_F_SC_DEQ);
			if (!r)
				return "cannot create the rings between the two ports";
			v->push_back(r);
			rings->push_back(r);
		}
	for (uint16_t q = 0; q < queues; q++) {
		a_rx.push_back(ba[(q + 1) % queues]);
		b_rx.push_back(ab[(q + 1) % queues]);
	}
	*pa = rte_eth_from_rings("lumen_dp_a", a_rx.data(), queues, ab.data(), queues, rte_socket_id());
	*pb = rte_eth_from_rings("lumen_dp_b", b_rx.data(), queues, ba.data(), queues, rte_socket_id());
	if (*pa < 0 || *pb < 0)
		return "cannot create the ring ports";
	return "";
}

/* Every message acknowledged was delivered intact: 0, or 1 said on stderr. */
int pair_verdict(const Options &o, int rc, const std::vector<Host *> &a, const std::vector<Host *> &b)
{
	ConnStats ta = totals_of(a), tb = totals_of(b);
	uint64_t total = msgs_total_of(a);

	if (rc == 0 && (ta.msgs_acked != total || tb.msgs_delivered < ta.msgs_acked || tb.corrupt ||
			tb.bytes_delivered != (uint64_t)ta.msgs_acked * o.msg_size)) {
		std::fprintf(stderr,
			     "lumen-dp pair: FAILED: %llu of %llu messages acknowledged, %llu delivered, %llu "
			     "bytes delivered, %llu corrupt\n",
			     (unsigned long long)ta.msgs_acked, (unsigned long long)total,
			     (unsigned long long)tb.msgs_delivered, (unsigned long long)tb.bytes_delivered,
			     (unsigned long long)tb.corrupt);
		return 1;
	}
	if (rc)
		std::fprintf(stderr, "lumen-dp pair: stopped before every message was delivered\n");
	return rc;
}

int run_pair(Options &o)
{
	std::string err;
	PortInfo ia, ib;
	const uint32_t ip_a = 0x0A000001, ip_b = 0x0A000002; /* 10.0.0.1, 10.0.0.2 */
	std::vector<rte_ring *> rings;
	int pa = -1, pb = -1;
	rte_mempool *pool = nullptr;
	auto release = [&] {
		if (pa >= 0)
			port_stop((uint16_t)pa, &ia);
		if (pb >= 0)
			port_stop((uint16_t)pb, &ib);
		rte_mempool_free(pool);
		for (rte_ring *r : rings)
			rte_ring_free(r);
	};
	auto body = [&]() -> int {
		if (std::string e = make_ring_ports(o.queues.queues, &rings, &pa, &pb); !e.empty())
			return mode_fail("pair", e);
		if (!(pool = make_pool("lumen_dp_pool", 16384u * o.queues.queues, frame_bytes(o), &err)))
			return mode_fail("pair", err);
		if (std::string e = port_setup((uint16_t)pa, o.queues, pool, o.engine.mtu, &ia); !e.empty())
			return mode_fail("pair", e);
		if (std::string e = port_setup((uint16_t)pb, o.queues, pool, o.engine.mtu, &ib); !e.empty())
			return mode_fail("pair", e);
		if (o.queues.queues > 1)
			std::fprintf(stderr, "lumen-dp pair: %s, %u lcore(s)\n", queues_str(ia).c_str(),
				     rte_lcore_count());
		Run run(o);
		std::vector<Host *> a =
			run.add("client", (uint16_t)pa, ia, pool, host_cfg(o, ip_a, ia.mac, 1), &o.impair);
		std::vector<Host *> b =
			run.add("server", (uint16_t)pb, ib, pool, host_cfg(o, ip_b, ib.mac, 2), &o.impair);
		run.note("ports", {port_json((uint16_t)pa, ia), port_json((uint16_t)pb, ib)});
		if (std::string e = run.start_client(a, ip_b, ib.mac); !e.empty())
			return mode_fail("pair", e);
		int rc = run.loop();
		run.report("pair");
		return pair_verdict(o, rc, a, b);
	};
	int rc = body(); /* the run (its endpoints hold mbufs) ends before the ports and the pool */
	release();
	return rc;
}

} // namespace

/* mode_hosts.cpp */
std::string check_hosts(Options &o);
int run_hosts(Options &o);
/* mode_bench.cpp */
std::string check_bench(Options &o);
int run_bench(Options &o);
/* mode_plan.cpp */
int run_plan(int argc, char **argv);
/* mode_collective.cpp (run by run_hosts) */
std::string check_collective(Options &o);

const Mode kModes[] = {
	{"perf", "a client or server: messages over connections, like iperf",
	 "perf options:\n"
	 "  --server            answer clients (default: be the client)\n"
	 "  --port N            DPDK port (0)\n"
	 "  --ip A.B.C.D        this host's address (required)\n"
	 "  --peer A.B.C.D      client: the server's address\n"
	 "  --peer-mac MAC      client: the next hop's MAC (the server's, or the router's)\n",
	 check_perf, run_perf, nullptr},
	{"bench", "the datapath's packet rate on one lcore into net_null: the sender (tx), the receiver (rx)",
	 "bench options:\n"
	 "  --case tx|rx|all    tx: the full sender, the bench playing its receiver; rx: the full\n"
	 "                      receiver of frames the bench writes into net_null's mbufs (all)\n"
	 "  --seconds S         per case, the first quarter (at most 1 s) not counted (5)\n"
	 "  --conns N[,M...]    connections, one run each (1,10000)\n"
	 "  --port N            DPDK port, net_null (0)\n"
	 "  --verify            write and check payload patterns (bench: off)\n"
	 "  bench defaults: --msg-size 32 (106-byte DATA frames), --ack-every 4 (tx: the ACKs the\n"
	 "  bench sends), --depth max(ack-every, 64 / conns); tools/bench-dp compares with testpmd\n",
	 check_bench, run_bench, nullptr},
	{"pair", "client and server in one process over two ring ports, with --impair: a self-test",
	 "pair options:\n"
	 "  --impair SPEC       drop=1%,dup=0.1%,ce=5%,reorder=2%,delay=20us,reorder-delay=50us,\n"
	 "                      blackhole=PORT:PORT,acks (impair ACKs too),seed=N\n",
	 check_pair, run_pair, nullptr},
	{"hosts", "several hosts in one process, one per port, in a traffic pattern: a fabric's hosts",
	 "hosts options:\n"
	 "  --host PORT,IP,MAC  a host on DPDK port PORT with address IP, MAC its gateway's (repeat:\n"
	 "                      2..64 hosts, one port each)\n"
	 "  --pattern P         permutation: host i sends to host (i + shift) mod n, every host\n"
	 "                      a client and a server; pairs: host 2k sends to host 2k+1;\n"
	 "                      all-to-all: every host to every other (permutation)\n"
	 "  --shift N           permutation: the shift, 1..n-1 (drawn from --seed)\n"
	 "  --demand FILE       instead of a pattern: an n x n matrix of payload rates, Mbit/s\n"
	 "                      (row = source, as lumen sched takes demand); each pair with a\n"
	 "                      rate gets a client that posts --msg-size messages at that rate,\n"
	 "                      open loop, for --time; one due while --depth are unacknowledged\n"
	 "                      on its connection is not posted (counted as skipped)\n"
	 "  (--conns, --msgs, --msg-size and --depth are per client, 100 messages by default)\n"
	 "  --discover-paths S  before the clients start, every host probes which source ports\n"
	 "                      lead to which of the S spines, per destination (TTL-limited\n"
	 "                      probes, ICMP Time Exceeded; the map in the summary's paths)\n"
	 "  --probe-ttl N       the probes' TTL: expires at the spine (2)\n"
	 "  --probe-gap-us N    between probes: routers rate-limit ICMP errors (100)\n"
	 "  --probe-age-ms N    a destination's map is probed again after this, and at once\n"
	 "                      when Ethereal leaves one of its paths (60000)\n"
	 "  on a reconfigurable network (docs/optical.md), frames to a node wait for its window:\n"
	 "  --optical-pages P,...  lumend's page (--shm) of each host, in --host order\n"
	 "  --optical-addrs A,...  the schedule's node addresses, node 0 first\n"
	 "  --optical-rate MBPS    the link's rate, Mbit/s (window byte budgets)\n"
	 "  --optical-max-hold-us N  a frame that would wait longer is dropped (1000000)\n"
	 "  --optical-slack-us N   how late a poll may send a frame: bookings keep this far\n"
	 "                         inside the windows' margins; a frame later still is booked\n"
	 "                         again (late), never sent into a guard (50)\n"
	 "  --optical-coalesce on|off  an ACK folds into the older one of its connection still\n"
	 "                         waiting for the circuit (on)\n"
	 "  --optical-stale-us N   lumend's page whose last boundary is older is stale: quiet\n"
	 "                         until lumend publishes again (0: 4 slots, at least 100 ms)\n",
	 check_hosts, run_hosts, nullptr},
	{"collective", "the hosts of a fabric run a collective on real buffers, checked byte for byte",
	 "collective options (and hosts mode's --host, --discover-paths, --probe-*):\n"
	 "  --collective C      alltoall, allgather, reducescatter, allreduce (ring: reduce-scatter\n"
	 "                      then all-gather), allreduce-a2a (by all-to-all), permutation\n"
	 "  --size BYTES        nccl-tests' size: one rank's whole buffer (1048576)\n"
	 "  --channels C        parallel flows per peer, each a slice of the data (1)\n"
	 "  --reduce T          float32 or int32, what the sums add (float32)\n"
	 "  --leaves L          L equal leaves of consecutive ranks (default: one per gateway MAC)\n"
	 "  --rank-ips IP,...   every rank's address in rank order, when the ranks are spread over\n"
	 "                      processes: this one runs the ranks of its --host entries, the steps are\n"
	 "                      separated by messages between the ranks (with --discover-paths: give\n"
	 "                      --leaves, and one --start-at to every process)\n"
	 "  with --path ethereal --discover-paths S, each step's flows are split and pinned over\n"
	 "  the S uplinks of their leaf (hosts with one gateway are a leaf); the ranks are the\n"
	 "  hosts in --host order; the result of every rank is checked against a reference\n",
	 check_collective, run_hosts, nullptr},
	{"plan", "Ethereal's split of a batch of flows over a leaf's uplinks (no EAL, no port)", "", nullptr, nullptr,
	 run_plan},
	{nullptr, nullptr, nullptr, nullptr, nullptr, nullptr},
};

} // namespace lumen::dp
