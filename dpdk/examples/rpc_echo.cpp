/*
 * rpc_echo.cpp - lumen-dp's application interface (transport/messages.h)
 * in one program: a client sends requests from its own memory, a server
 * receives each into a buffer it posted and sends it back from there, and
 * the client checks every echoed byte.
 *
 *   lumen-dp-rpc-echo [EAL options] -- [--messages N] [--size B]
 *                     [--window W] [--copy] [--impair SPEC] [--seconds S]
 *
 * Both hosts run in this process on one lcore, joined by a pair of
 * rte_rings (net_ring), like `lumen-dp -- pair`. Their buffers come from
 * rte_malloc and are registered with the endpoints, so sends go out without
 * a copy (the headers in a packet buffer chained to the payload where it
 * lies) unless --copy. --impair drops, reorders, duplicates and marks on the
 * way (the pair mode's syntax), which the transport repairs.
 *
 * What an application does, in order: connect (client) and accept (server)
 * one connection; post receive buffers before the messages that fill them
 * can arrive; post sends; poll the endpoints; act on completions (the
 * engine's on_complete), which report each message once with its status.
 * The program exits 0 when every echo came back intact, 1 otherwise, 2 on
 * bad arguments.
 */
#include <getopt.h>

#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_malloc.h>
#include <rte_ring.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "app/endpoint.h"
#include "app/port.h"

using namespace lumen::dp;

namespace
{

struct Args {
	uint32_t messages = 1000, size = 64 * 1024, window = 16, seconds = 30;
	bool copy = false;
	ImpairParams impair;
};

int usage(const char *why)
{
	std::fprintf(stderr,
		     "lumen-dp-rpc-echo: %s\nusage: lumen-dp-rpc-echo [EAL options] -- [--messages N] [--size B] "
		     "[--window W] [--copy] [--impair SPEC] [--seconds S]\n",
		     why);
	return 2;
}

bool parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
	char *end = nullptr;
	unsigned long v = std::strtoul(s, &end, 10);
	if (!*s || *end || v < lo || v > hi)
		return false;
	*out = (uint32_t)v;
	return true;
}

int parse(int argc, char **argv, Args *a)
{
	static const option opts[] = {{"messages", required_argument, nullptr, 'm'},
				      {"size", required_argument, nullptr, 's'},
				      {"window", required_argument, nullptr, 'w'},
				      {"copy", no_argument, nullptr, 'c'},
				      {"impair", required_argument, nullptr, 'i'},
				      {"seconds", required_argument, nullptr, 't'},
				      {nullptr, 0, nullptr, 0}};
	int c, at = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, &at)) != -1) {
		bool ok = true;
		switch (c) {
		case 'm':
			ok = parse_u32(optarg, 1, 1u << 24, &a->messages);
			break;
		case 's':
			ok = parse_u32(optarg, 1, 1u << 26, &a->size);
			break;
		case 'w':
			ok = parse_u32(optarg, 1, 1024, &a->window);
			break;
		case 'c':
			a->copy = true;
			break;
		case 'i':
			if (std::string e = a->impair.parse(optarg); !e.empty())
				return usage(e.c_str());
			break;
		case 't':
			ok = parse_u32(optarg, 1, 3600, &a->seconds);
			break;
		default:
			return usage("unknown option");
		}
		if (!ok)
			return usage((std::string("bad value for --") + opts[at].name + ": " + optarg).c_str());
	}
	if (optind != argc)
		return usage("unexpected argument");
	return 0;
}

EngineConfig host(uint32_t ip, const Mac &mac)
{
	EngineConfig c;
	c.ip = ip;
	c.mac = mac;
	c.cc.mss = c.max_payload();
	c.seed = ip;
	return c;
}

/* A buffer of DPDK's memory (so zero copy works with any port), freed with the program. */
struct DpdkBuffer {
	uint8_t *p;
	explicit DpdkBuffer(size_t n) : p(static_cast<uint8_t *>(rte_malloc("rpc_echo", n, 64)))
	{
	}
	~DpdkBuffer()
	{
		rte_free(p);
	}
};

uint8_t request_byte(uint64_t k, uint32_t i)
{
	return (uint8_t)(lumen_mix64(k << 32 | i) >> 56);
}

/* The client has at most `window` requests out; request k and its echo use
 * slot k % window of its two areas, and the slot takes request k + window
 * once both of k's completions (the send's and the echo's) are in. The
 * server keeps 2 * window buffers posted where it can: each takes a
 * request, sends it back from where it landed, and is posted again when
 * that send completes. */
int run(const Args &a)
{
	const uint32_t ip_c = 0x0A000001, ip_s = 0x0A000002;
	const size_t area = (size_t)a.window * a.size;
	std::string err;

	rte_ring *ab = rte_ring_create("rpc_ab", 4096, (int)rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
	rte_ring *ba = rte_ring_create("rpc_ba", 4096, (int)rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (!ab || !ba)
		return usage("cannot create the rings");
	int pc = rte_eth_from_rings("rpc_client", &ba, 1, &ab, 1, (unsigned)rte_socket_id());
	int ps = rte_eth_from_rings("rpc_server", &ab, 1, &ba, 1, (unsigned)rte_socket_id());
	rte_mempool *pool = make_pool("rpc_pool", 16384, RTE_ETHER_MTU + RTE_ETHER_HDR_LEN, &err);
	if (pc < 0 || ps < 0 || !pool)
		return usage(err.empty() ? "cannot create the ring ports" : err.c_str());
	PortInfo ic, is;
	if (std::string e = port_setup((uint16_t)pc, QueueSetup{}, pool, RTE_ETHER_MTU, &ic); !e.empty())
		return usage(e.c_str());
	if (std::string e = port_setup((uint16_t)ps, QueueSetup{}, pool, RTE_ETHER_MTU, &is); !e.empty())
		return usage(e.c_str());

	DpdkBuffer requests(area), echoes(area), at_server(2 * area);
	if (!requests.p || !echoes.p || !at_server.p)
		return usage("rte_malloc failed: give EAL more memory (-m)");
	int bad = 0;
	{
		Endpoint client("client", (uint16_t)pc, 0, pool, host(ip_c, ic.mac), &a.impair);
		Endpoint server("server", (uint16_t)ps, 0, pool, host(ip_s, is.mac), &a.impair);
		uint32_t rc = client.register_region(requests.p, area);
		uint32_t rs = server.register_region(at_server.p, 2 * area);
		if (!client.region(rc)->zero_copy)
			std::printf("zero copy off: %s\n", client.region(rc)->why_copy.c_str());
		const uint32_t send_rc = a.copy ? 0 : rc, send_rs = a.copy ? 0 : rs;
		Clock clock;
		uint64_t now = clock.now_ns(), zero_copy = 0, rtt_sum = 0, rtt_max = 0;
		Connection *cc = client.engine().connect(ip_s, is.mac, 1, now);
		Connection *cs = server.engine().accept(ip_c, ic.mac, 1, now);
		uint32_t sent = 0, echoed = 0, next_recv = 0;
		std::vector<uint8_t> halves(a.window, 0); /* per client slot: completions in (0..2) */
		std::vector<uint32_t> free_slots;
		for (uint32_t s = 0; s < 2 * a.window; s++)
			free_slots.push_back(2 * a.window - 1 - s);

		auto post_request = [&](uint64_t t) {
			uint32_t slot = sent % a.window;
			uint8_t *req = requests.p + (size_t)slot * a.size;
			for (uint32_t i = 0; i < a.size; i++)
				req[i] = request_byte(sent, i);
			client.engine().post_recv(*cc, RecvWr{echoes.p + (size_t)slot * a.size, a.size, sent}, t);
			client.engine().post_send(*cc, SendWr{req, a.size, sent, send_rc}, t);
			sent++;
		};
		auto post_recvs = [&](uint64_t t) {
			for (; !free_slots.empty() && next_recv < a.messages; next_recv++) {
				uint32_t slot = free_slots.back();
				free_slots.pop_back();
				server.engine().post_recv(*cs,
							  RecvWr{at_server.p + (size_t)slot * a.size, a.size, slot}, t);
			}
		};
		server.engine().on_complete = [&](Connection &c, const Completion &d) {
			if (d.status != MsgStatus::kOk) {
				std::fprintf(stderr, "server: message %u: %s\n", d.msg_id, msg_status_name(d.status));
				bad++;
			} else if (d.kind == Completion::kRecv) {
				uint8_t *slot = at_server.p + (size_t)d.user * a.size;
				server.engine().post_send(c, SendWr{slot, d.len, d.user, send_rs}, d.done_ns);
				return;
			}
			if (d.kind == Completion::kSend) {
				free_slots.push_back((uint32_t)d.user);
				post_recvs(d.done_ns);
			}
		};
		client.engine().on_complete = [&](Connection &, const Completion &d) {
			uint32_t slot = (uint32_t)(d.user % a.window);
			if (d.kind == Completion::kSend) {
				zero_copy += d.zero_copy_pkts;
			} else {
				const uint8_t *p = echoes.p + (size_t)slot * a.size;
				bool same = d.status == MsgStatus::kOk && d.len == a.size;
				for (uint32_t i = 0; same && i < a.size; i++)
					same = p[i] == request_byte(d.user, i);
				if (!same) {
					std::fprintf(stderr, "client: echo %lu is wrong (%s)\n", (unsigned long)d.user,
						     msg_status_name(d.status));
					bad++;
				}
				uint64_t rtt = d.done_ns - d.posted_ns;
				rtt_sum += rtt;
				rtt_max = std::max(rtt_max, rtt);
				echoed++;
			}
			if (++halves[slot] == 2) {
				halves[slot] = 0;
				if (sent < a.messages)
					post_request(d.done_ns);
			}
		};
		post_recvs(now);
		for (uint32_t k = 0; k < std::min(a.window, a.messages); k++)
			post_request(now);

		uint64_t end = now + (uint64_t)a.seconds * 1'000'000'000ull;
		while ((echoed < a.messages || !client.engine().idle() || !server.engine().idle()) && now < end) {
			client.poll(now);
			server.poll(now);
			now = clock.now_ns();
		}
		/* what is still on the way (duplicates, late retransmissions) drains */
		for (uint64_t until = now + 20'000'000; now < until; now = clock.now_ns()) {
			client.poll(now);
			server.poll(now);
		}
		if (echoed < a.messages) {
			std::fprintf(stderr, "only %u of %u echoes in %u s\n", echoed, a.messages, a.seconds);
			bad++;
		}
		uint64_t pkts = cc->stats.data_sent;
		bool released = client.unregister_region(rc) && server.unregister_region(rs);
		std::printf("rpc-echo: %u messages of %u bytes (%s); the client sent %lu packets, %lu without a "
			    "copy; the server dropped %lu for want of a buffer; round trip mean %.1f us, max %.1f "
			    "us; regions released: %s\n",
			    echoed, a.size, a.copy ? "copied" : "zero copy", (unsigned long)pkts,
			    (unsigned long)zero_copy, (unsigned long)cs->stats.rnr_drops,
			    echoed ? (double)rtt_sum / echoed / 1e3 : 0.0, (double)rtt_max / 1e3,
			    released ? "yes" : "NO (frames still refer to them)");
		if (!released || (!a.copy && client.region(rc) == nullptr && zero_copy == 0))
			bad++;
	}
	port_stop((uint16_t)pc, &ic);
	port_stop((uint16_t)ps, &is);
	rte_mempool_free(pool);
	rte_ring_free(ab);
	rte_ring_free(ba);
	return bad ? 1 : 0;
}

} // namespace

int main(int argc, char **argv)
{
	int n = rte_eal_init(argc, argv);
	if (n < 0)
		return usage("EAL initialisation failed");
	Args a;
	if (int rc = parse(argc - n, argv + n, &a))
		return rc;
	int rc = run(a);
	rte_eal_cleanup();
	return rc;
}
