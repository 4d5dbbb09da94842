/*
 * mode_hosts.cpp - lumen-dp's hosts mode: several hosts in one process, one
 * per DPDK port (--host PORT,IP,GATEWAY_MAC, repeated), polled by the lcores
 * EAL gave (one lcore may serve them all), exchanging messages in a traffic
 * pattern:
 *
 *   permutation  host i sends to host (i + shift) mod n, the shift 1..n-1
 *                given by --shift or drawn from --seed: every host is a
 *                client and a server
 *   pairs        host 2k sends to host 2k+1, in the order of --host
 *   all-to-all   every host sends to every other host (on a reconfigurable
 *                network: every circuit of the schedule carries traffic)
 *   --demand     a matrix of rates (Mbit/s of payload): each pair with a
 *                rate has a client that posts messages at it, open loop,
 *                whatever the network carries (Run::start_paced). The
 *                summary's "pairs" give each pair's demand, what its
 *                client posted and what its server received: a schedule's
 *                throughput on that demand, measured
 *
 * A client opens --conns connections to its destination through its own
 * gateway (the MAC of the router its port is cabled to) and keeps --depth
 * messages of --msg-size outstanding on each, --msgs times (100 unless
 * --time is given). Servers answer whoever sends, through the router the
 * frames came from. Client i numbers its connections from i * conns + 1
 * (all-to-all: those to host j from (i * n + j) * conns + 1), so two hosts
 * that send to each other keep them apart.
 *
 * This is how lumen-dp runs over a fabric of real routers on one machine:
 * the hosts' veths are handed to DPDK with net_af_packet (see
 * tests/dpdk/fabric_test.sh). The summary gives each host's counters and
 * message completion times, and the pattern. Exit status 0 only when every
 * message was acknowledged and delivered intact to its destination.
 */
#include <algorithm>
#include <cstdio>
#include <set>

#include <unordered_map>

#include <rte_lcore.h>

#include "app/run.h"
#include "sched/demand.h"
#include "transport/optical_gate.h"
#include "transport/osched_page.h"
#include "transport/uplink_pinner.h"

namespace lumen::dp
{

/* mode_collective.cpp: collective mode's part of run_hosts */
int run_collective(Options &o, Run &run, const std::vector<std::vector<Host *>> &hs,
		   const std::function<void()> &after_loop);

/* Ethereal's reroute through the uplinks (transport/uplink_pinner.h): to
 * the least-loaded other uplink; the path left is probed again, as it
 * failed or is slow (the leaf may hash it elsewhere now). */
void reroute_by_uplinks(Endpoint &ep, UplinkPinner *pinner)
{
	PortMap *map = ep.port_map();
	auto clock = std::make_shared<Clock>();
	ep.engine().choose_path = [pinner, map, clock](Connection &c, uint16_t old) {
		const uint64_t now = clock->now_ns();
		uint16_t e = pinner->choose(c.peer_ip, old, now);
		map->invalidate(c.peer_ip, old, now);
		return e;
	};
	ep.engine().on_reroute_undone = [pinner](Connection &c, uint16_t from, uint16_t to) {
		pinner->undo(c.peer_ip, from, to);
	};
}

namespace
{

constexpr size_t kMaxHosts = 64;

/* The permutation's shift: --shift, or one drawn from --seed. */
uint32_t shift_of(const Options &o)
{
	uint32_t n = (uint32_t)o.hosts.size();
	lumen_rng rng;

	lumen_rng_seed(&rng, o.engine.seed);
	return o.shift ? o.shift : 1 + (uint32_t)(lumen_rng_next(&rng) % (n - 1));
}

/* Whom each host sends to (none: a server only). */
std::vector<std::vector<size_t>> destinations(const Options &o)
{
	size_t n = o.hosts.size();
	std::vector<std::vector<size_t>> dst(n);

	if (!o.demand_mbps.empty()) {
		for (size_t i = 0; i < n; i++)
			for (size_t j = 0; j < n; j++)
				if (j != i && o.demand_mbps[i * n + j] > 0)
					dst[i].push_back(j);
	} else if (o.pattern == "pairs") {
		for (size_t i = 0; i + 1 < n; i += 2)
			dst[i] = {i + 1};
	} else if (o.pattern == "all-to-all" || o.mode == "collective") {
		/* a collective's ranks may send to any other (paths to discover) */
		for (size_t i = 0; i < n; i++)
			for (size_t j = 0; j < n; j++)
				if (j != i)
					dst[i].push_back(j);
	} else {
		uint32_t s = shift_of(o);
		for (size_t i = 0; i < n; i++)
			dst[i] = {(i + s) % n};
	}
	return dst;
}

/* The first connection id of client i's connections to host j. */
uint32_t first_conn_id(const Options &o, size_t i, size_t j)
{
	size_t n = o.hosts.size();
	bool many = o.pattern == "all-to-all" || !o.demand_mbps.empty();
	return (uint32_t)((many ? i * n + j : i) * o.conns + 1);
}

/* Where each host's frames went, by schedule node: the gate's counters. */
nlohmann::json gate_json(const OpticalGate &g, const EndpointStats &e, const OschedPage *page)
{
	const GateStats &s = g.stats();
	nlohmann::json nodes = nlohmann::json::array();
	for (const GateNodeStats &x : g.node_stats())
		nodes.push_back({{"offered_frames", x.offered_frames},
				 {"offered_bytes", x.offered_bytes},
				 {"sent_frames", x.sent_frames},
				 {"sent_bytes", x.sent_bytes}});
	return {{"version", g.tables().version},
		{"sent", s.sent},
		{"held", s.held},
		{"held_max_ns", s.held_max_ns},
		{"never", s.never},
		{"quiet", s.quiet},
		{"stale", s.stale},
		{"overflow", s.overflow},
		{"late", s.late},
		{"passed", s.pass},
		{"deferred", s.deferred},
		{"acks_coalesced", e.acks_coalesced},
		/* lumend's page: spells of staleness, a restarted lumend's file
		 * mapped again, files that were no page */
		{"page",
		 {{"stale_spells", page ? page->stats().stale : 0},
		  {"reopened", page ? page->stats().reopened : 0},
		  {"bad", page ? page->stats().bad : 0}}},
		{"nodes", nodes}};
}

EngineConfig host_cfg(const Options &o, const HostSpec &h, const Mac &mac, uint64_t seed_salt)
{
	EngineConfig c = o.engine;
	c.ip = h.ip;
	c.mac = mac;
	c.seed = o.engine.seed * 0x9E3779B97F4A7C15ull + seed_salt;
	return c;
}

} // namespace

std::string check_hosts(Options &o)
{
	size_t n = o.hosts.size();

	if (o.server || o.local_ip || o.peer_ip || o.have_peer_mac)
		return "hosts mode takes its hosts from --host: --server, --ip, --peer and --peer-mac belong to perf";
	if (o.impair.active() && o.mode != "collective")
		return "--impair belongs to pair and collective modes";
	/* a process of a collective spread over processes may run one rank */
	const size_t least = o.mode == "collective" && !o.rank_ips.empty() ? 1 : 2;
	if (n < least || n > kMaxHosts)
		return "give " + std::to_string(least) + ".." + std::to_string(kMaxHosts) +
		       " hosts with --host PORT,IP,GATEWAY_MAC (" + std::to_string(n) + " given)";
	std::set<uint16_t> ports;
	std::set<uint32_t> ips;
	for (const HostSpec &h : o.hosts) {
		if (!ports.insert(h.port).second)
			return "port " + std::to_string(h.port) + " has two hosts: one host per port";
		if (!ips.insert(h.ip).second)
			return "two hosts have the address " + ip_str(h.ip);
	}
	if (o.pattern == "all-to-all" && (uint64_t)n * n * o.conns >= UINT32_MAX)
		return "--conns: too many connections for " + std::to_string(n) + " hosts all-to-all";
	if (o.pattern == "pairs" && n % 2)
		return "--pattern pairs needs an even number of hosts (" + std::to_string(n) + " given)";
	if (o.shift && (o.pattern != "permutation" || o.shift >= n))
		return "--shift is the permutation's, 1.." + std::to_string(n - 1);
	if (!o.optical_pages.empty() || !o.optical_addrs.empty() || o.optical_rate_mbps) {
		if (o.optical_pages.size() != n || o.optical_addrs.empty() || !o.optical_rate_mbps)
			return "gating needs --optical-pages (one per host), --optical-addrs and --optical-rate";
		if (o.queues.queues != 1)
			return "gating needs one queue per port (--queues 1): one wire clock per destination";
	}
	if (!o.demand_file.empty()) {
		if (o.given.count("pattern") || o.given.count("msgs") || !o.seconds)
			return "--demand is the pattern: it takes --time, and no --pattern or --msgs";
		uint32_t m = 0;
		try {
			o.demand_mbps = sched::load_demand(o.demand_file, &m);
		} catch (const std::exception &e) {
			return std::string("--demand: ") + e.what();
		}
		if (m != n)
			return "--demand: a " + std::to_string(m) + " x " + std::to_string(m) + " matrix for " +
			       std::to_string(n) + " hosts";
		double any = 0;
		for (size_t i = 0; i < n; i++)
			for (size_t j = 0; j < n; j++)
				any += i != j ? o.demand_mbps[i * n + j] : 0;
		if (any <= 0)
			return "--demand: no pair has a rate";
		if ((uint64_t)n * n * o.conns >= UINT32_MAX)
			return "--conns: too many connections for " + std::to_string(n) + " hosts";
	}
	if (!o.msgs && !o.seconds)
		o.msgs = 100;
	return "";
}

namespace
{

/* --demand: per pair, the demand, what its client posted and what its
 * server received (delivered in order), in bytes. */
nlohmann::json pairs_json(const Options &o, const std::vector<std::vector<Host *>> &hs,
			  const std::vector<std::vector<size_t>> &dst)
{
	const size_t n = o.hosts.size();
	nlohmann::json out = nlohmann::json::array();
	for (size_t i = 0; i < n; i++)
		for (size_t j : dst[i]) {
			uint64_t posted = 0, received = 0;
			for (const Host *h : hs[i])
				for (const auto &c : h->ep->engine().connections())
					if (c && c->client && c->peer_ip == o.hosts[j].ip)
						posted += c->stats.msgs_sent * o.msg_size;
			for (const Host *h : hs[j])
				for (const auto &c : h->ep->engine().connections())
					if (c && !c->client && c->peer_ip == o.hosts[i].ip)
						received += c->stats.bytes_delivered;
			out.push_back({{"src", ip_str(o.hosts[i].ip)},
				       {"dst", ip_str(o.hosts[j].ip)},
				       {"demand_mbps", o.demand_mbps[i * n + j]},
				       {"posted_bytes", posted},
				       {"received_bytes", received}});
		}
	return out;
}

/* Every host's map of the paths to its destinations, and its probing's
 * counters (say: and a line each on stderr). */
nlohmann::json paths_json(const Options &o, const std::vector<std::vector<Host *>> &hs,
			  const std::vector<std::vector<size_t>> &dst, bool say)
{
	const size_t n = o.hosts.size();
	nlohmann::json maps = nlohmann::json::array();
	for (size_t i = 0; i < n; i++) {
		const PortMap &pm = *hs[i][0]->ep->port_map();
		nlohmann::json dests = nlohmann::json::array();
		for (size_t j : dst[i]) {
			nlohmann::json ups = nlohmann::json::array();
			for (uint32_t u = 0; u < o.port_map.uplinks; u++)
				ups.push_back({{"router", pm.router_of(u) ? ip_str(pm.router_of(u)) : ""},
					       {"entropies", pm.entropies_of(o.hosts[j].ip, u)}});
			dests.push_back({{"dst", ip_str(o.hosts[j].ip)},
					 {"settled", pm.settled(o.hosts[j].ip)},
					 {"uplinks_found", pm.uplinks_found(o.hosts[j].ip)},
					 {"uplinks", ups}});
		}
		const PortMapStats &st = pm.stats();
		maps.push_back({{"host", ip_str(o.hosts[i].ip)},
				{"dests", dests},
				{"probes", st.probes},
				{"replies", st.replies},
				{"lost", st.lost},
				{"unmatched", st.unmatched},
				{"unknown_router", st.unknown_router},
				{"malformed", st.malformed},
				{"discoveries", st.discoveries}});
		if (say)
			std::fprintf(stderr, "  %-15s paths: %llu probes, %llu replies, %llu lost\n",
				     ip_str(o.hosts[i].ip).c_str(), (unsigned long long)st.probes,
				     (unsigned long long)st.replies, (unsigned long long)st.lost);
	}
	return maps;
}

} // namespace

/* Probe until the maps of hosts i have settled on their destinations ip
 * ((i, ip) in want), for at most 5 s: the lcores do not poll yet, so this
 * thread may. Whether all settled; *ms, how long it took. */
bool probe_paths(const Options &o, const std::vector<std::vector<Host *>> &hs,
		 const std::vector<std::pair<size_t, uint32_t>> &want, double *ms)
{
	Clock clock;
	const uint64_t t0 = clock.now_ns(), deadline = t0 + 5'000'000'000ull;
	for (const auto &[i, ip] : want)
		hs[i][0]->ep->port_map()->want(ip, o.hosts[i].gateway, t0);
	auto settled = [&] {
		for (const auto &[i, ip] : want)
			if (!hs[i][0]->ep->port_map()->settled(ip))
				return false;
		return true;
	};
	uint64_t now = t0;
	while (!settled() && (now = clock.now_ns()) < deadline && !signalled())
		for (const auto &q : hs)
			for (Host *h : q)
				h->ep->poll(now);
	*ms = (double)(now - t0) / 1e6;
	return settled();
}

namespace
{

/* --discover-paths: every host probes the paths to its destinations before
 * the clients start (the lcores do not poll yet, so this thread may), for
 * at most 5 s; the maps, and what each entropy found leads to, in the
 * summary. */
nlohmann::json discover_paths(const Options &o, const std::vector<std::vector<Host *>> &hs,
			      const std::vector<std::vector<size_t>> &dst)
{
	std::vector<std::pair<size_t, uint32_t>> want;
	for (size_t i = 0; i < o.hosts.size(); i++) {
		Endpoint &ep = *hs[i][0]->ep;
		ep.set_port_map(std::make_unique<PortMap>(o.port_map, ep.engine().config(), o.engine.seed + i));
		for (size_t j : dst[i])
			want.emplace_back(i, o.hosts[j].ip);
	}
	double ms = 0;
	const bool settled = probe_paths(o, hs, want, &ms);
	nlohmann::json maps = paths_json(o, hs, dst, true);
	std::fprintf(stderr, "lumen-dp hosts: paths %s in %.1f ms\n", settled ? "discovered" : "NOT all discovered",
		     ms);
	return {{"settled", settled}, {"ms", ms}, {"hosts", maps}};
}

/* --path ethereal with --discover-paths: each host's connections to a
 * destination are pinned to the uplinks in turn, k-th connection to uplink
 * (k + host) mod S, through ports the probes found; a NACK or a timeout
 * moves one to the least-loaded other uplink (transport/uplink_pinner.h).
 * The pinners live as long as the run. */
std::string pin_uplinks(const Options &o, const std::vector<std::vector<Host *>> &hs,
			const std::vector<std::vector<size_t>> &dst,
			std::vector<std::unique_ptr<UplinkPinner>> *pinners)
{
	const uint32_t s = o.port_map.uplinks;
	for (size_t i = 0; i < hs.size(); i++) {
		Endpoint &ep = *hs[i][0]->ep;
		auto pinner = std::make_unique<UplinkPinner>(*ep.port_map(), s);
		for (size_t j : dst[i]) {
			uint32_t k = 0;
			for (const auto &c : ep.engine().connections()) {
				if (!c || !c->client || c->peer_ip != o.hosts[j].ip)
					continue;
				uint16_t e;
				uint32_t u = (uint32_t)((k++ + i) % s);
				if (!pinner->pin(o.hosts[j].ip, u, &e) || !ep.engine().pin(*c, e))
					return "ethereal: no port known for " + ip_str(o.hosts[i].ip) + " -> " +
					       ip_str(o.hosts[j].ip) + " on uplink " + std::to_string(u) +
					       " (the paths were not all discovered)";
			}
		}
		reroute_by_uplinks(ep, pinner.get());
		pinners->push_back(std::move(pinner));
	}
	return "";
}

} // namespace

int run_hosts(Options &o)
{
	const size_t n = o.hosts.size();
	std::string err;
	const size_t queues = o.queues.queues;
	rte_mempool *pool = make_pool("lumen_dp_pool", (unsigned)std::max<size_t>(16384, 4096 * n * queues + 8192),
				      frame_bytes(o), &err);
	if (!pool)
		return mode_fail("hosts", err);
	std::vector<PortInfo> info(n);
	size_t started = 0; /* ports set up, even partly */
	auto release = [&] {
		for (size_t i = 0; i < started; i++)
			port_stop(o.hosts[i].port, &info[i]);
		rte_mempool_free(pool);
	};
	for (size_t i = 0; i < n; i++) {
		started++;
		if (std::string e = port_setup(o.hosts[i].port, o.queues, pool, o.engine.mtu, &info[i]); !e.empty()) {
			release();
			return mode_fail("hosts", e);
		}
	}
	const std::vector<std::vector<size_t>> dst = destinations(o);
	const uint32_t shift = o.pattern == "permutation" && o.mode != "collective" ? shift_of(o) : 0;
	std::fprintf(stderr, "lumen-dp %s: %zu hosts, %s", o.mode.c_str(), n,
		     o.mode == "collective" ? o.collective.c_str() : o.pattern.c_str());
	if (shift)
		std::fprintf(stderr, " (shift %u)", shift);
	std::fprintf(stderr, ", %zu queue(s) per port, %u lcore(s)\n", queues, rte_lcore_count());
	auto to_str = [&](size_t i) {
		std::string t;
		for (size_t j : dst[i])
			t += (t.empty() ? ", sends to " : ", ") + ip_str(o.hosts[j].ip);
		if (o.mode != "collective")
			return t;
		/* its place in --rank-ips when the ranks are spread over processes */
		auto at = std::find(o.rank_ips.begin(), o.rank_ips.end(), o.hosts[i].ip);
		return ", rank " + std::to_string(o.rank_ips.empty() ? i : (size_t)(at - o.rank_ips.begin()));
	};
	for (size_t i = 0; i < n; i++)
		std::fprintf(stderr, "  %-15s port %u (%s, %s), %s, gateway %s%s\n", ip_str(o.hosts[i].ip).c_str(),
			     o.hosts[i].port, info[i].driver.c_str(), mac_str(info[i].mac).c_str(),
			     queues_str(info[i]).c_str(), mac_str(o.hosts[i].gateway).c_str(), to_str(i).c_str());

	/* the run (and its endpoints, which may hold mbufs) ends before the ports and the pool */
	auto body = [&]() -> int {
		Run run(o);
		std::vector<std::vector<Host *>> hs; /* per host, its queues */
		nlohmann::json ports = nlohmann::json::array();
		for (size_t i = 0; i < n; i++) {
			hs.push_back(run.add(ip_str(o.hosts[i].ip), o.hosts[i].port, info[i], pool,
					     host_cfg(o, o.hosts[i], info[i].mac, i + 1),
					     o.mode == "collective" ? &o.impair : nullptr));
			ports.push_back(port_json(o.hosts[i].port, info[i]));
		}
		run.note("ports", ports);
		for (size_t i = 0; i < n && !o.optical_pages.empty(); i++) {
			std::unordered_map<uint32_t, uint32_t> nodes;
			parse_node_addrs(o.optical_addrs, &nodes);
			auto page = std::make_unique<OschedPage>();
			if (std::string e = page->open(o.optical_pages[i], o.optical_stale_ns); !e.empty())
				return mode_fail("hosts", e);
			hs[i][0]->ep->set_gate(std::make_unique<OpticalGate>(nodes, o.optical_rate_mbps,
									     o.optical_max_hold_ns, o.optical_slack_ns),
					       std::move(page), o.optical_coalesce);
		}
		if (o.port_map.uplinks) {
			nlohmann::json paths = discover_paths(o, hs, dst);
			bool ok = paths["settled"].get<bool>();
			run.note("paths", std::move(paths));
			if (!ok && signalled())
				return 1;
		}
		if (o.mode == "collective")
			return run_collective(o, run, hs, [&] {
				if (o.port_map.uplinks)
					run.note("paths_after", paths_json(o, hs, dst, false));
			});
		nlohmann::json flows = nlohmann::json::array();
		for (size_t i = 0; i < n; i++)
			for (size_t j : dst[i]) {
				const HostSpec &to = o.hosts[j];
				std::string e = o.demand_mbps.empty()
							? run.start_client(hs[i], to.ip, o.hosts[i].gateway,
									   first_conn_id(o, i, j))
							: run.start_paced(hs[i], to.ip, o.hosts[i].gateway,
									  first_conn_id(o, i, j),
									  o.demand_mbps[i * n + j] * 1e6);
				if (!e.empty())
					return mode_fail("hosts", e);
				flows.push_back(
					{{"src", ip_str(o.hosts[i].ip)}, {"dst", ip_str(to.ip)}, {"conns", o.conns}});
			}
		run.note("pattern",
			 {{"name", o.demand_mbps.empty() ? o.pattern : "demand"}, {"shift", shift}, {"flows", flows}});
		std::vector<std::unique_ptr<UplinkPinner>> pinners;
		if (o.port_map.uplinks && o.engine.path_mode == LUMEN_PATH_ETHEREAL)
			if (std::string e = pin_uplinks(o, hs, dst, &pinners); !e.empty())
				return mode_fail("hosts", e);
		int rc = run.loop();
		if (o.port_map.uplinks) /* what the maps became: refreshed by age and by Ethereal's reroutes */
			run.note("paths_after", paths_json(o, hs, dst, false));
		if (!pinners.empty()) {
			nlohmann::json loads = nlohmann::json::object();
			for (size_t i = 0; i < n; i++)
				loads[ip_str(o.hosts[i].ip)] = {{"subflows_per_uplink", pinners[i]->load()},
								{"rerouted", pinners[i]->rerouted()},
								{"undone", pinners[i]->undone()}};
			run.note("uplinks", loads);
		}
		if (!o.demand_mbps.empty()) {
			run.note("pairs", pairs_json(o, hs, dst));
			uint64_t posted = 0, skipped = 0;
			for (const auto &h : run.hosts()) {
				posted += h->paced_posted;
				skipped += h->paced_skipped;
			}
			run.note("paced", {{"posted", posted}, {"skipped", skipped}});
		}
		if (!o.optical_pages.empty()) {
			nlohmann::json gates = nlohmann::json::object();
			for (size_t i = 0; i < n; i++)
				gates[ip_str(o.hosts[i].ip)] =
					gate_json(*hs[i][0]->ep->gate(), hs[i][0]->ep->stats(), hs[i][0]->ep->page());
			run.note("gates", gates);
		}
		int rep = run.report("hosts");

		/* per host: what it sent and how fast, what it received; and whether
		 * every message reached its destination intact */
		std::vector<uint64_t> expect(n, 0);
		for (size_t i = 0; i < n; i++)
			for (size_t j : dst[i])
				expect[j] += (uint64_t)o.msgs * o.conns;
		bool complete = o.msgs != 0 && rc == 0;
		uint64_t corrupt = 0;
		for (size_t i = 0; i < n; i++) {
			ConnStats t = totals_of(hs[i]);
			const uint64_t total = msgs_total_of(hs[i]);
			const nlohmann::json fct = fct_json(hs[i]);
			corrupt += t.corrupt;
			std::printf("  %-15s", ip_str(o.hosts[i].ip).c_str());
			if (!dst[i].empty())
				std::printf(" -> %-15s %llu/%llu acked, p50 %.1f us, p99 %.1f us,",
					    dst[i].size() == 1
						    ? ip_str(o.hosts[dst[i][0]].ip).c_str()
						    : ("the " + std::to_string(dst[i].size()) + " others").c_str(),
					    (unsigned long long)t.msgs_acked, (unsigned long long)total,
					    fct.value("p50", 0.0), fct.value("p99", 0.0));
			std::printf(" %llu received; sent %llu packets, %llu retransmitted, %llu timeouts\n",
				    (unsigned long long)t.msgs_delivered, (unsigned long long)t.data_sent,
				    (unsigned long long)t.retransmits, (unsigned long long)t.timeouts);
			if (const OpticalGate *g = hs[i][0]->ep->gate()) {
				const GateStats &gs = g->stats();
				std::printf(
					"  %-15s gate: sent %llu, held %llu (max %.1f us), dropped: never %llu, quiet "
					"%llu, stale %llu, overflow %llu; passed %llu; deferred to a change %llu; late "
					"%llu; ACKs coalesced %llu\n",
					"", (unsigned long long)gs.sent, (unsigned long long)gs.held,
					(double)gs.held_max_ns / 1e3, (unsigned long long)gs.never,
					(unsigned long long)gs.quiet, (unsigned long long)gs.stale,
					(unsigned long long)gs.overflow, (unsigned long long)gs.pass,
					(unsigned long long)gs.deferred, (unsigned long long)gs.late,
					(unsigned long long)hs[i][0]->ep->stats().acks_coalesced);
			}
			if (complete && (t.msgs_acked != total || t.msgs_delivered != expect[i] ||
					 t.bytes_delivered != expect[i] * o.msg_size)) {
				std::fprintf(stderr,
					     "lumen-dp hosts: FAILED: %s: %llu of %llu messages acknowledged, %llu of "
					     "%llu delivered to it (%llu bytes)\n",
					     ip_str(o.hosts[i].ip).c_str(), (unsigned long long)t.msgs_acked,
					     (unsigned long long)total, (unsigned long long)t.msgs_delivered,
					     (unsigned long long)expect[i], (unsigned long long)t.bytes_delivered);
				rc = 1;
			}
		}
		if (corrupt) {
			std::fprintf(stderr, "lumen-dp hosts: FAILED: %llu corrupt packets\n",
				     (unsigned long long)corrupt);
			rc = 1;
		}
		if (rc == 1 && !complete && o.msgs)
			std::fprintf(stderr, "lumen-dp hosts: stopped before every message was delivered\n");
		return std::max(rc, rep);
	};
	int rc = body();
	release();
	return rc;
}

} // namespace lumen::dp
