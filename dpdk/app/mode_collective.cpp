/*
 * mode_collective.cpp - lumen-dp's collective mode: the hosts of a fabric
 * (--host, as hosts mode takes them, rank = its place in --host) run one
 * collective (transport/collective.h) on real buffers through the
 * application interface (transport/messages.h), each rank a
 * transport/collective_runner.h on its endpoint, steps separated by a
 * barrier (transport/collective_barrier.h). Every rank's input is random
 * (small integers for float sums, so that any order of addition is exact)
 * and a function of --seed and the rank, so every process computes the
 * in-memory reference of all ranks (execute_schedule) and compares its own
 * ranks' results with it byte for byte: a wrong byte fails the run (exit 1).
 *
 * The ranks of a fabric may run in one process (the default: the barrier is
 * in memory) or in several: --rank-ips gives every rank's address in rank
 * order, and a process runs the ranks whose address is one of its --host
 * entries. The steps are then separated by messages between the ranks (a
 * control connection between every two ranks: "ready", then "step s done"),
 * and a process ends when its ranks are done and have heard every other
 * rank finish the last step (its peers need nothing more of it). A peer
 * that never comes leaves the ranks waiting: --time ends the run, which
 * fails and says whom its ranks waited for. The times and bandwidths a
 * process reports are over its own ranks ("ranks_local").
 *
 * With --path ethereal and --discover-paths S, the flows of each step are
 * planned (Ethereal's Theorem 4, transport/ethereal_plan.h) over the S
 * uplinks of the rank's leaf (hosts with the same gateway are a leaf, or
 * --leaves equal groups), and every subflow is pinned to its uplink through
 * the probed port map (transport/uplink_pinner.h), which also picks where a
 * NACK or a timeout moves it. The gateways of other processes' ranks are
 * not known here: with --rank-ips, planning takes --leaves, and the paths
 * to those ranks are probed once the local ones are.
 *
 * The report, per step and in total, follows nccl-tests: the time of the
 * collective (from the first local rank's start to the last one's end), algbw
 * = S / time and busbw = algbw * factor; per step the collective
 * completion time (CCT: its slowest flow), the flows' completion times
 * (p50, p99, max, from the step's start) and the subflows of split flows.
 */
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <numeric>
#include <cstring>
#include <random>

#include "app/run.h"
#include "transport/collective_runner.h"
#include "transport/uplink_pinner.h"

namespace lumen::dp
{

std::string check_hosts(Options &o);
void reroute_by_uplinks(Endpoint &ep, UplinkPinner *pinner); /* mode_hosts.cpp */
bool probe_paths(const Options &o, const std::vector<std::vector<Host *>> &hs,
		 const std::vector<std::pair<size_t, uint32_t>> &want, double *ms); /* mode_hosts.cpp */

/* --rank-ips: every rank's address once, this process's ranks among them. */
static std::string check_rank_ips(Options &o)
{
	const size_t n = o.rank_ips.size();
	if (n < 2 || n > 64)
		return "--rank-ips: give 2..64 ranks' addresses (" + std::to_string(n) + " given)";
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < i; j++)
			if (o.rank_ips[i] == o.rank_ips[j])
				return "--rank-ips: ranks " + std::to_string(j) + " and " + std::to_string(i) +
				       " have the same address " + ip_str(o.rank_ips[i]);
	if (o.hosts.empty())
		return "--rank-ips: give this process's ranks with --host PORT,IP,GATEWAY_MAC (IP among --rank-ips)";
	for (const HostSpec &h : o.hosts)
		if (std::find(o.rank_ips.begin(), o.rank_ips.end(), h.ip) == o.rank_ips.end())
			return "--host " + ip_str(h.ip) +
			       " is not among --rank-ips (every rank's address, in rank order)";
	const bool remote = o.hosts.size() < n;
	if (remote && o.port_map.uplinks && o.engine.path_mode == LUMEN_PATH_ETHEREAL && !o.leaves)
		return "--rank-ips with --path ethereal --discover-paths needs --leaves: the leaves of other "
		       "processes' "
		       "ranks cannot be told from their gateway MACs, which this process does not know";
	return check_hosts(o);
}

std::string check_collective(Options &o)
{
	Collective c;
	ReduceType t;

	if (o.collective.empty())
		return "give --collective (alltoall, allgather, reducescatter, allreduce, allreduce-a2a, permutation)";
	if (!collective_from_name(o.collective, &c))
		return "--collective: unknown collective '" + o.collective +
		       "' (alltoall, allgather, reducescatter, allreduce, allreduce-a2a, permutation)";
	if (!reduce_type_from_name(o.reduce, &t))
		return "--reduce: unknown type '" + o.reduce + "' (float32, int32)";
	for (const char *k : {"pattern", "shift", "demand", "msgs", "msg-size", "depth", "conns"})
		if (o.given.count(k))
			return std::string("--") + k + " is hosts mode's: a collective's flows are its schedule's";
	if (o.queues.queues != 1)
		return "collective mode runs one queue per port (--queues 1)";
	const size_t ranks = o.rank_ips.empty() ? o.hosts.size() : o.rank_ips.size();
	if (o.leaves && ranks % o.leaves)
		return "--leaves " + std::to_string(o.leaves) + " does not divide the " + std::to_string(ranks) +
		       " ranks into equal leaves";
	if (!o.optical_pages.empty())
		return "collective mode does not gate (--optical-*)";
	if (std::string e = o.rank_ips.empty() ? check_hosts(o) : check_rank_ips(o); !e.empty())
		return e;
	CollectiveParams p;
	p.collective = c;
	p.ranks = (uint32_t)ranks;
	p.bytes = o.coll_bytes;
	p.channels = o.channels;
	p.reduce = t;
	CollectiveSchedule s;
	if (std::string e = build_collective(p, &s); !e.empty())
		return "--collective " + o.collective + ": " + e;
	if ((uint64_t)p.ranks * p.bytes * 4 > (8ull << 30))
		return "--size: the ranks' buffers and their reference take more than 8 GiB";
	uint64_t conns = (uint64_t)p.ranks * p.ranks * p.channels * CollectiveRank::kMaxParts;
	if (conns >= (1u << 31))
		return "too many ranks and channels";
	/* the ranks open every connection (accept) before a byte may come: a
	 * DATA for another one came early (a peer process that started
	 * sooner) and is dropped for its sender to resend, not taken without
	 * its receive buffer */
	o.engine.open_on_handshake = false;
	return "";
}

namespace
{

/* microseconds */
double pct(const std::vector<uint64_t> &v, double q)
{
	return percentile(v, q) / 1e3;
}

/* Rank r's input: random, the same for a seed; float sums use small
 * integers (exact in any order). */
void fill_input(const CollectiveParams &p, uint32_t r, uint64_t seed, RankBuffers *b)
{
	CollectiveLayout l = collective_layout(p, r);
	auto &v = l.input.buffer == Buffer::kSend ? b->send : b->recv;
	std::mt19937_64 g(seed * 1000003 + r);
	for (uint64_t i = 0; i + 4 <= l.input.bytes; i += 4) {
		uint32_t w = (uint32_t)g();
		if (p.reduce == ReduceType::kFloat32 && collective_reduces(p.collective)) {
			float f = (float)(w % 2001) - 1000.0f;
			std::memcpy(&w, &f, 4);
		}
		std::memcpy(v.data() + l.input.offset + i, &w, 4);
	}
}

/* A subflow on its planned uplink, or, when the map knows no path there
 * (the uplink or the spine behind it failed), on the least-loaded uplink
 * that has one (ties: the lowest): a plan is a balance to aim for, a dead
 * uplink is not a place to send. */
bool pin_planned(UplinkPinner &pinner, Engine &e, Connection &c, uint32_t dst, uint32_t uplink)
{
	uint16_t entropy;
	if (pinner.pin(dst, uplink, &entropy))
		return e.pin(c, entropy);
	std::vector<uint32_t> order(pinner.load().size());
	std::iota(order.begin(), order.end(), 0u);
	std::stable_sort(order.begin(), order.end(),
			 [&](uint32_t a, uint32_t b) { return pinner.load()[a] < pinner.load()[b]; });
	for (uint32_t u : order)
		if (u != uplink && pinner.pin(dst, u, &entropy))
			return e.pin(c, entropy);
	return false;
}

/* --rank-ips with --discover-paths: the paths from every local rank to the
 * other processes' ranks, probed as run_hosts probed those between the
 * local ones (at most 5 s; the lcores do not poll yet, so this thread may). */
nlohmann::json discover_remote(const Options &o, const std::vector<std::vector<Host *>> &hs,
			       const std::vector<uint32_t> &ips, const std::vector<bool> &local)
{
	std::vector<std::pair<size_t, uint32_t>> want;
	for (size_t i = 0; i < hs.size(); i++)
		for (uint32_t r = 0; r < ips.size(); r++)
			if (!local[r])
				want.emplace_back(i, ips[r]);
	double ms = 0;
	const bool settled = probe_paths(o, hs, want, &ms);
	/* the probes' counters: since the start of the process (the local paths' too) */
	nlohmann::json hosts = nlohmann::json::array();
	uint64_t replies = 0;
	for (size_t i = 0; i < hs.size(); i++) {
		const PortMapStats &st = hs[i][0]->ep->port_map()->stats();
		replies += st.replies;
		hosts.push_back({{"host", ip_str(o.hosts[i].ip)},
				 {"probes", st.probes},
				 {"replies", st.replies},
				 {"lost", st.lost}});
	}
	std::fprintf(stderr, "lumen-dp collective: paths to the other processes' ranks %s in %.1f ms (%llu replies)\n",
		     settled ? "discovered" : "NOT all discovered", ms, (unsigned long long)replies);
	return {{"settled", settled}, {"ms", ms}, {"hosts", hosts}};
}

} // namespace

/* The body of collective mode inside run_hosts (mode_hosts.cpp), once the
 * ports, the hosts and the port maps are there. hs[i] is --host i's. */
int run_collective(Options &o, Run &run, const std::vector<std::vector<Host *>> &hs,
		   const std::function<void()> &after_loop)
{
	/* every rank's address; local[r]: rank r is this process's, host_of[r] its --host */
	std::vector<uint32_t> ips = o.rank_ips;
	if (ips.empty())
		for (const HostSpec &h : o.hosts)
			ips.push_back(h.ip);
	const uint32_t n = (uint32_t)ips.size();
	std::vector<bool> local(n, false);
	std::vector<size_t> host_of(n, SIZE_MAX), local_ranks;
	for (size_t i = 0; i < o.hosts.size(); i++) {
		uint32_t r = (uint32_t)(std::find(ips.begin(), ips.end(), o.hosts[i].ip) - ips.begin());
		local[r] = true;
		host_of[r] = i;
	}
	for (uint32_t r = 0; r < n; r++)
		if (local[r])
			local_ranks.push_back(r);
	const bool spread = local_ranks.size() < n;
	CollectiveParams p;
	collective_from_name(o.collective, &p.collective);
	reduce_type_from_name(o.reduce, &p.reduce);
	p.ranks = n;
	p.bytes = o.coll_bytes;
	p.channels = o.channels;
	p.seed = o.engine.seed;
	CollectiveSchedule s;
	build_collective(p, &s);

	/* leaves: --leaves equal groups in rank order, or the hosts behind one
	 * gateway MAC (all ranks local: check_rank_ips asks for --leaves when
	 * the plan needs the others' leaves) */
	std::vector<uint32_t> leaf(n, 0);
	std::vector<Mac> gateways;
	uint32_t leaves = o.leaves;
	for (uint32_t r = 0; r < n; r++) {
		if (o.leaves) {
			leaf[r] = r / (n / o.leaves);
			continue;
		}
		if (!local[r])
			continue;
		const Mac &g = o.hosts[host_of[r]].gateway;
		auto at = std::find(gateways.begin(), gateways.end(), g);
		leaf[r] = (uint32_t)(at - gateways.begin());
		if (at == gateways.end())
			gateways.push_back(g);
	}
	if (!leaves && !spread)
		leaves = (uint32_t)gateways.size();
	const bool plan = o.port_map.uplinks && o.engine.path_mode == LUMEN_PATH_ETHEREAL;
	if (plan && spread)
		run.note("paths_remote", discover_remote(o, hs, ips, local));

	/* the reference of every rank: the inputs are a function of --seed and the rank */
	std::vector<RankBuffers> want(n);
	for (uint32_t r = 0; r < n; r++) {
		CollectiveLayout l = collective_layout(p, r);
		want[r].send.assign(l.send_bytes, 0);
		want[r].recv.assign(l.recv_bytes, 0);
		fill_input(p, r, o.engine.seed, &want[r]);
	}
	CollectiveBarrier shared(n, s.steps.size());
	std::vector<std::unique_ptr<NetworkBarrier>> nets;
	std::vector<std::unique_ptr<CollectiveRank>> ranks; /* the local ones, in rank order */
	std::vector<std::unique_ptr<UplinkPinner>> pinners;
	for (uint32_t r : local_ranks) {
		Endpoint &ep = *hs[host_of[r]][0]->ep;
		const Mac &gateway = o.hosts[host_of[r]].gateway;
		StepBarrier *barrier = &shared;
		if (spread) {
			nets.push_back(
				std::make_unique<NetworkBarrier>(ep.engine(), r, ips, gateway, s.steps.size(),
								 CollectiveRank::control_conn_base(n, p.channels)));
			barrier = nets.back().get();
		}
		ranks.push_back(std::make_unique<CollectiveRank>(s, r, ep.engine(), ips, gateway, *barrier));
		CollectiveRank &rank = *ranks.back();
		rank.buffers() = want[r];
		/* sends leave from the rank's buffers without a copy where the port allows */
		RankBuffers &b = rank.buffers();
		rank.set_regions(ep.register_region(b.send.data(), b.send.size()),
				 ep.register_region(b.recv.data(), b.recv.size()));
		if (plan) {
			pinners.push_back(std::make_unique<UplinkPinner>(*ep.port_map(), o.port_map.uplinks));
			UplinkPinner *pp = pinners.back().get();
			Engine *e = &ep.engine();
			rank.set_planner(leaf, o.port_map.uplinks, o.engine.max_conns,
					 [pp, e, &ips](Connection &c, uint32_t peer, uint32_t uplink) {
						 return pin_planned(*pp, *e, c, ips[peer], uplink);
					 });
			reroute_by_uplinks(ep, pp);
		}
	}
	if (std::string e = execute_schedule(s, &want); !e.empty()) {
		std::fprintf(stderr, "lumen-dp collective: the reference: %s\n", e.c_str());
		return 1;
	}
	/* --start-at, and the clients' start in the summary (an experiment lines
	 * its samples up with it) */
	run.wait_start();
	/* one rank's error ends the run: the others would wait at its barrier */
	auto failed = std::make_shared<std::atomic<bool>>(false);
	for (auto &rk : ranks) {
		if (std::string e = rk->open(0); !e.empty()) {
			std::fprintf(stderr, "lumen-dp collective: rank %u: %s\n", rk->rank(), e.c_str());
			return 1;
		}
		Host *h = hs[host_of[rk->rank()]][0];
		CollectiveRank *rank = rk.get();
		h->msgs_total = 1;
		h->tick = [h, rank, failed](uint64_t now) {
			rank->tick(now);
			if (!rank->error().empty())
				failed->store(true, std::memory_order_relaxed);
			if (rank->released(now) || failed->load(std::memory_order_relaxed))
				h->msgs_done.store(1, std::memory_order_relaxed);
		};
	}
	std::string mine;
	for (uint32_t r : local_ranks)
		mine += (mine.empty() ? "" : ",") + std::to_string(r);
	std::fprintf(stderr,
		     "lumen-dp collective: %s of %llu bytes over %u ranks (here: %s; %u leaves), %u channel(s), %zu "
		     "steps%s%s\n",
		     collective_name(p.collective), (unsigned long long)p.bytes, n, mine.c_str(), leaves, p.channels,
		     s.steps.size(), plan ? ", flows planned over the uplinks (Ethereal)" : "",
		     spread ? ", a barrier of messages between the ranks" : "");
	int rc = run.loop();
	after_loop();

	/* per step: the CCT (first start to last end over the local ranks) and the flows */
	nlohmann::json steps = nlohmann::json::array();
	uint64_t t0 = UINT64_MAX, t1 = 0;
	std::printf("  %4s %10s %10s %10s %10s %9s %8s\n", "step", "CCT us", "flow p50", "flow p99", "flow max",
		    "subflows", "reorder");
	for (size_t k = 0; k < s.steps.size(); k++) {
		uint64_t start = UINT64_MAX, end = 0, subflows = 0, bytes = 0;
		uint64_t retx = 0, nacks = 0, timeouts = 0, reroutes = 0;
		uint32_t reorder = 0;
		std::vector<uint64_t> flows;
		for (const auto &rk : ranks) {
			const RankStepStats &st = rk->step_stats()[k];
			start = std::min(start, st.start_ns);
			end = std::max(end, st.end_ns);
			subflows += st.subflows;
			bytes += st.bytes_sent;
			retx += st.retransmits;
			nacks += st.nacks;
			timeouts += st.timeouts;
			reroutes += st.reroutes;
			reorder = std::max(reorder, st.reorder_max);
		}
		for (const auto &rk : ranks)
			for (uint64_t d : rk->step_stats()[k].flow_done_ns)
				flows.push_back(d > start ? d - start : 0);
		t0 = std::min(t0, start);
		t1 = std::max(t1, end);
		double cct = end > start ? (double)(end - start) / 1e3 : 0;
		std::printf("  %4zu %10.1f %10.1f %10.1f %10.1f %9llu %8u\n", k, cct, pct(flows, 0.5), pct(flows, 0.99),
			    pct(flows, 1.0), (unsigned long long)subflows, reorder);
		steps.push_back({{"cct_us", cct},
				 {"flows", flows.size()},
				 {"flow_p50_us", pct(flows, 0.5)},
				 {"flow_p99_us", pct(flows, 0.99)},
				 {"flow_max_us", pct(flows, 1.0)},
				 {"bytes", bytes},
				 {"subflows", subflows},
				 /* CLOCK_MONOTONIC: an experiment's port samples of the step */
				 {"start_ns", end > start ? run.mono_ns(start) : 0},
				 {"end_ns", end > start ? run.mono_ns(end) : 0},
				 {"retransmits", retx},
				 {"nacks_rcvd", nacks},
				 {"timeouts", timeouts},
				 {"reroutes", reroutes},
				 {"reorder_max", reorder}});
	}
	double secs = t1 > t0 ? (double)(t1 - t0) / 1e9 : 0;
	double alg = algbw(p.bytes, secs) / 1e9, bus = alg * busbw_factor(p.collective, n);
	uint32_t wrong = 0;
	std::string why;
	for (const auto &rk : ranks) {
		const uint32_t r = rk->rank();
		bool ok = rk->done() && rk->buffers().recv == want[r].recv && rk->buffers().send == want[r].send;
		wrong += !ok;
		if (!ok && why.empty())
			why = "rank " + std::to_string(r) + ": " +
			      (rk->done() ? "differs from the reference" : "not done: " + rk->waiting());
	}
	/* nccl-tests' line: size, type, redop, time, algbw, busbw, #wrong */
	std::printf("  %12s %8s %6s %10s %9s %9s %7s\n", "size", "type", "redop", "time us", "algbw", "busbw",
		    "#wrong");
	std::printf("  %12llu %8s %6s %10.1f %9.3f %9.3f %7u   (GB/s)\n", (unsigned long long)p.bytes,
		    reduce_type_name(p.reduce), collective_reduces(p.collective) ? "sum" : "none", secs * 1e6, alg, bus,
		    wrong);
	nlohmann::json uplinks = nlohmann::json::object();
	for (size_t k = 0; k < pinners.size(); k++)
		uplinks[ip_str(ips[ranks[k]->rank()])] = {{"subflows_per_uplink", pinners[k]->load()},
							  {"rerouted", pinners[k]->rerouted()},
							  {"undone", pinners[k]->undone()}};
	/* the network barrier's messages, summed over the local ranks */
	NetworkBarrier::Stats ctl;
	for (const auto &b : nets) {
		ctl.sent += b->stats().sent;
		ctl.acked += b->stats().acked;
		ctl.received += b->stats().received;
	}
	run.note("collective", {{"name", collective_name(p.collective)},
				{"ranks", n},
				{"ranks_local", local_ranks},
				{"leaves", leaves},
				{"bytes", p.bytes},
				{"channels", p.channels},
				{"type", reduce_type_name(p.reduce)},
				{"planned", plan},
				{"barrier",
				 {{"kind", spread ? "network" : "memory"},
				  {"control_sent", ctl.sent},
				  {"control_acked", ctl.acked},
				  {"control_received", ctl.received}}},
				{"time_us", secs * 1e6},
				{"algbw_gbps", alg},
				{"busbw_gbps", bus},
				{"wrong_ranks", wrong},
				{"steps", steps},
				{"uplinks", uplinks}});
	int rep = run.report("collective");
	if (wrong) {
		std::fprintf(stderr,
			     "lumen-dp collective: FAILED: %u of %zu %sranks unfinished or unlike the reference; %s\n",
			     wrong, ranks.size(), spread ? "local " : "", why.c_str());
		rc = 1;
	}
	return std::max(rc, rep);
}

} // namespace lumen::dp
