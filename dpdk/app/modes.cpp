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
 *          and in order.
 *   hosts  several hosts in one process, one per port, in a traffic
 *          pattern (mode_hosts.cpp).
 *   bench  the sender's and the receiver's packet rates on one lcore into
 *          net_null, 1 and 10,000 connections (mode_bench.cpp).
 */
#include <rte_eth_ring.h>
#include <rte_ring.h>

#include <cstdio>

#include "app/run.h"

namespace lumen::dp
{

namespace
{

int fail(const char *mode, const std::string &why)
{
	std::fprintf(stderr, "lumen-dp %s: %s\n", mode, why.c_str());
	return 2;
}

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

	rte_mempool *pool = make_pool("lumen_dp_pool", 16384, &err);
	if (!pool)
		return fail("perf", err);
	if (std::string e = port_setup(o.port, 1, pool, &info); !e.empty())
		return fail("perf", e);
	std::fprintf(stderr, "lumen-dp perf: %s %s on port %u (%s, %s)\n", o.server ? "server" : "client",
		     ip_str(o.local_ip).c_str(), o.port, info.driver.c_str(), mac_str(info.mac).c_str());
	int rc;
	{
		Run run(o);
		Host &h = run.add(o.server ? "server" : "client", o.port, 0, pool,
				  host_cfg(o, o.local_ip, info.mac, o.server ? 2 : 1), &o.impair);
		if (!o.server)
			if (std::string e = run.start_client(h, o.peer_ip, o.peer_mac); !e.empty())
				return fail("perf", e);
		rc = run.loop();
		rc = std::max(rc, run.report("perf"));
	}
	port_stop(o.port);
	rte_mempool_free(pool);
	return rc;
}

std::string check_pair(Options &o)
{
	if (o.server || o.local_ip || o.peer_ip || o.have_peer_mac)
		return "pair mode makes its own two hosts: --server, --ip, --peer and --peer-mac belong to perf";
	if (!o.msgs && !o.seconds)
		o.msgs = 100;
	return "";
}

int run_pair(Options &o)
{
	std::string err;
	PortInfo ia, ib;
	const uint32_t ip_a = 0x0A000001, ip_b = 0x0A000002; /* 10.0.0.1, 10.0.0.2 */
	rte_ring *ab = rte_ring_create("lumen_dp_ab", 4096, (int)rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
	rte_ring *ba = rte_ring_create("lumen_dp_ba", 4096, (int)rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (!ab || !ba)
		return fail("pair", "cannot create the rings between the two ports");
	int pa = rte_eth_from_rings("lumen_dp_a", &ba, 1, &ab, 1, rte_socket_id());
	int pb = rte_eth_from_rings("lumen_dp_b", &ab, 1, &ba, 1, rte_socket_id());
	if (pa < 0 || pb < 0)
		return fail("pair", "cannot create the ring ports");
	rte_mempool *pool = make_pool("lumen_dp_pool", 16384, &err);
	if (!pool)
		return fail("pair", err);
	if (std::string e = port_setup((uint16_t)pa, 1, pool, &ia); !e.empty())
		return fail("pair", e);
	if (std::string e = port_setup((uint16_t)pb, 1, pool, &ib); !e.empty())
		return fail("pair", e);
	int rc;
	{
		Run run(o);
		Host &a = run.add("client", (uint16_t)pa, 0, pool, host_cfg(o, ip_a, ia.mac, 1), &o.impair);
		Host &b = run.add("server", (uint16_t)pb, 0, pool, host_cfg(o, ip_b, ib.mac, 2), &o.impair);
		if (std::string e = run.start_client(a, ip_b, ib.mac); !e.empty())
			return fail("pair", e);
		rc = run.loop();
		run.report("pair");
		ConnStats ta = a.ep->engine().totals(), tb = b.ep->engine().totals();
		if (rc == 0 && (ta.msgs_acked != a.msgs_total || tb.msgs_delivered < ta.msgs_acked || tb.corrupt ||
				tb.bytes_delivered != (uint64_t)ta.msgs_acked * o.msg_size)) {
			std::fprintf(stderr,
				     "lumen-dp pair: FAILED: %llu of %llu messages acknowledged, %llu delivered, %llu "
				     "bytes delivered, %llu corrupt\n",
				     (unsigned long long)ta.msgs_acked, (unsigned long long)a.msgs_total,
				     (unsigned long long)tb.msgs_delivered, (unsigned long long)tb.bytes_delivered,
				     (unsigned long long)tb.corrupt);
			rc = 1;
		} else if (rc) {
			std::fprintf(stderr, "lumen-dp pair: stopped before every message was delivered\n");
		}
	}
	port_stop((uint16_t)pa);
	port_stop((uint16_t)pb);
	rte_mempool_free(pool);
	rte_ring_free(ab);
	rte_ring_free(ba);
	return rc;
}

} // namespace

/* mode_hosts.cpp */
std::string check_hosts(Options &o);
int run_hosts(Options &o);
/* mode_bench.cpp */
std::string check_bench(Options &o);
int run_bench(Options &o);

const Mode kModes[] = {
	{"perf", "a client or server: messages over connections, like iperf",
	 "perf options:\n"
	 "  --server            answer clients (default: be the client)\n"
	 "  --port N            DPDK port (0)\n"
	 "  --ip A.B.C.D        this host's address (required)\n"
	 "  --peer A.B.C.D      client: the server's address\n"
	 "  --peer-mac MAC      client: the next hop's MAC (the server's, or the router's)\n",
	 check_perf, run_perf},
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
	 check_bench, run_bench},
	{"pair", "client and server in one process over two ring ports, with --impair: a self-test",
	 "pair options:\n"
	 "  --impair SPEC       drop=1%,dup=0.1%,ce=5%,reorder=2%,delay=20us,reorder-delay=50us,\n"
	 "                      blackhole=PORT:PORT,acks (impair ACKs too),seed=N\n",
	 check_pair, run_pair},
	{"hosts", "several hosts in one process, one per port, in a traffic pattern: a fabric's hosts",
	 "hosts options:\n"
	 "  --host PORT,IP,MAC  a host on DPDK port PORT with address IP, MAC its gateway's (repeat:\n"
	 "                      2..64 hosts, one port each)\n"
	 "  --pattern P         permutation: host i sends to host (i + shift) mod n, every host\n"
	 "                      a client and a server; pairs: host 2k sends to host 2k+1\n"
	 "                      (permutation)\n"
	 "  --shift N           permutation: the shift, 1..n-1 (drawn from --seed)\n"
	 "  (--conns, --msgs, --msg-size and --depth are per client, 100 messages by default)\n",
	 check_hosts, run_hosts},
	{nullptr, nullptr, nullptr, nullptr, nullptr},
};

} // namespace lumen::dp
