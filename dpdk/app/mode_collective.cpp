/*
 * mode_collective.cpp - lumen-dp's collective mode: the hosts of a fabric
 * (--host, as hosts mode takes them, rank = its place in --host) run one
 * collective (transport/collective.h) on real buffers through the
 * application interface (transport/messages.h), each rank a
 * transport/collective_runner.h on its endpoint, steps separated by a
 * barrier. Every rank's input is random (small integers for float sums, so
 * that any order of addition is exact), the result of every rank is
 * compared byte for byte with the in-memory reference (execute_schedule):
 * a wrong byte fails the run (exit 1).
 *
 * With --path ethereal and --discover-paths S, the flows of each step are
 * planned (Ethereal's Theorem 4, transport/ethereal_plan.h) over the S
 * uplinks of the rank's leaf (hosts with the same gateway are a leaf), and
 * every subflow is pinned to its uplink through the probed port map
 * (transport/uplink_pinner.h), which also picks where a NACK or a timeout
 * moves it.
 *
 * The report, per step and in total, follows nccl-tests: the time of the
 * collective (from the first rank's start to the last rank's end), algbw
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
	if (o.leaves && o.hosts.size() % o.leaves)
		return "--leaves " + std::to_string(o.leaves) + " does not divide the " +
		       std::to_string(o.hosts.size()) + " hosts into equal leaves";
	if (!o.optical_pages.empty())
		return "collective mode does not gate (--optical-*)";
	if (std::string e = check_hosts(o); !e.empty())
		return e;
	CollectiveParams p;
	p.collective = c;
	p.ranks = (uint32_t)o.hosts.size();
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

} // namespace

/* The body of collective mode inside run_hosts (mode_hosts.cpp), once the
 * ports, the hosts and the port maps are there. */
int run_collective(Options &o, Run &run, const std::vector<std::vector<Host *>> &hs,
		   const std::function<void()> &after_loop)
{
	const uint32_t n = (uint32_t)hs.size();
	CollectiveParams p;
	collective_from_name(o.collective, &p.collective);
	reduce_type_from_name(o.reduce, &p.reduce);
	p.ranks = n;
	p.bytes = o.coll_bytes;
	p.channels = o.channels;
	p.seed = o.engine.seed;
	CollectiveSchedule s;
	build_collective(p, &s);

	/* leaves: --leaves equal groups in --host order, or the hosts behind one gateway MAC */
	std::vector<uint32_t> ips, leaf;
	std::vector<Mac> gateways;
	uint32_t leaves = o.leaves;
	for (const HostSpec &h : o.hosts) {
		ips.push_back(h.ip);
		auto at = std::find(gateways.begin(), gateways.end(), h.gateway);
		leaf.push_back(o.leaves ? (uint32_t)(ips.size() - 1) / (n / o.leaves)
					: (uint32_t)(at - gateways.begin()));
		if (at == gateways.end())
			gateways.push_back(h.gateway);
	}
	if (!leaves)
		leaves = (uint32_t)gateways.size();
	std::vector<RankBuffers> want(n);
	CollectiveBarrier barrier(n, s.steps.size());
	std::vector<std::unique_ptr<CollectiveRank>> ranks;
	std::vector<std::unique_ptr<UplinkPinner>> pinners;
	const bool plan = o.port_map.uplinks && o.engine.path_mode == LUMEN_PATH_ETHEREAL;
	for (uint32_t r = 0; r < n; r++) {
		Endpoint &ep = *hs[r][0]->ep;
		ranks.push_back(std::make_unique<CollectiveRank>(s, r, ep.engine(), ips, o.hosts[r].gateway, barrier));
		fill_input(p, r, o.engine.seed, &ranks[r]->buffers());
		want[r] = ranks[r]->buffers();
		/* sends leave from the rank's buffers without a copy where the port allows */
		RankBuffers &b = ranks[r]->buffers();
		ranks[r]->set_regions(ep.register_region(b.send.data(), b.send.size()),
				      ep.register_region(b.recv.data(), b.recv.size()));
		if (plan) {
			pinners.push_back(std::make_unique<UplinkPinner>(*ep.port_map(), o.port_map.uplinks));
			UplinkPinner *pp = pinners.back().get();
			Engine *e = &ep.engine();
			ranks[r]->set_planner(leaf, o.port_map.uplinks, o.engine.max_conns,
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
	for (uint32_t r = 0; r < n; r++) {
		if (std::string e = ranks[r]->open(0); !e.empty()) {
			std::fprintf(stderr, "lumen-dp collective: rank %u: %s\n", r, e.c_str());
			return 1;
		}
		Host *h = hs[r][0];
		CollectiveRank *rank = ranks[r].get();
		h->msgs_total = 1;
		h->tick = [h, rank, failed](uint64_t now) {
			rank->tick(now);
			if (!rank->error().empty())
				failed->store(true, std::memory_order_relaxed);
			if (rank->done() || failed->load(std::memory_order_relaxed))
				h->msgs_done.store(1, std::memory_order_relaxed);
		};
	}
	std::fprintf(stderr,
		     "lumen-dp collective: %s of %llu bytes over %u ranks (%u leaves), %u channel(s), %zu steps%s\n",
		     collective_name(p.collective), (unsigned long long)p.bytes, n, leaves, p.channels, s.steps.size(),
		     plan ? ", flows planned over the uplinks (Ethereal)" : "");
	int rc = run.loop();
	after_loop();

	/* per step: the CCT (first start to last end over the ranks) and the flows */
	nlohmann::json steps = nlohmann::json::array();
	uint64_t t0 = UINT64_MAX, t1 = 0;
	std::printf("  %4s %10s %10s %10s %10s %9s\n", "step", "CCT us", "flow p50", "flow p99", "flow max",
		    "subflows");
	for (size_t k = 0; k < s.steps.size(); k++) {
		uint64_t start = UINT64_MAX, end = 0, subflows = 0, bytes = 0;
		std::vector<uint64_t> flows;
		for (const auto &rk : ranks) {
			const RankStepStats &st = rk->step_stats()[k];
			start = std::min(start, st.start_ns);
			end = std::max(end, st.end_ns);
			subflows += st.subflows;
			bytes += st.bytes_sent;
		}
		for (const auto &rk : ranks)
			for (uint64_t d : rk->step_stats()[k].flow_done_ns)
				flows.push_back(d > start ? d - start : 0);
		t0 = std::min(t0, start);
		t1 = std::max(t1, end);
		double cct = end > start ? (double)(end - start) / 1e3 : 0;
		std::printf("  %4zu %10.1f %10.1f %10.1f %10.1f %9llu\n", k, cct, pct(flows, 0.5), pct(flows, 0.99),
			    pct(flows, 1.0), (unsigned long long)subflows);
		steps.push_back({{"cct_us", cct},
				 {"flows", flows.size()},
				 {"flow_p50_us", pct(flows, 0.5)},
				 {"flow_p99_us", pct(flows, 0.99)},
				 {"flow_max_us", pct(flows, 1.0)},
				 {"bytes", bytes},
				 {"subflows", subflows}});
	}
	double secs = t1 > t0 ? (double)(t1 - t0) / 1e9 : 0;
	double alg = algbw(p.bytes, secs) / 1e9, bus = alg * busbw_factor(p.collective, n);
	uint32_t wrong = 0;
	std::string why;
	for (uint32_t r = 0; r < n; r++) {
		bool ok = ranks[r]->done() && ranks[r]->buffers().recv == want[r].recv &&
			  ranks[r]->buffers().send == want[r].send;
		wrong += !ok;
		if (!ranks[r]->error().empty() && why.empty())
			why = "rank " + std::to_string(r) + ": " + ranks[r]->error();
	}
	/* nccl-tests' line: size, type, redop, time, algbw, busbw, #wrong */
	std::printf("  %12s %8s %6s %10s %9s %9s %7s\n", "size", "type", "redop", "time us", "algbw", "busbw",
		    "#wrong");
	std::printf("  %12llu %8s %6s %10.1f %9.3f %9.3f %7u   (GB/s)\n", (unsigned long long)p.bytes,
		    reduce_type_name(p.reduce), collective_reduces(p.collective) ? "sum" : "none", secs * 1e6, alg, bus,
		    wrong);
	nlohmann::json uplinks = nlohmann::json::object();
	for (uint32_t r = 0; r < pinners.size(); r++)
		uplinks[ip_str(ips[r])] = {{"subflows_per_uplink", pinners[r]->load()},
					   {"rerouted", pinners[r]->rerouted()}};
	run.note("collective", {{"name", collective_name(p.collective)},
				{"ranks", n},
				{"leaves", leaves},
				{"bytes", p.bytes},
				{"channels", p.channels},
				{"type", reduce_type_name(p.reduce)},
				{"planned", plan},
				{"time_us", secs * 1e6},
				{"algbw_gbps", alg},
				{"busbw_gbps", bus},
				{"wrong_ranks", wrong},
				{"steps", steps},
				{"uplinks", uplinks}});
	int rep = run.report("collective");
	if (wrong) {
		std::fprintf(stderr, "lumen-dp collective: FAILED: %u of %u ranks differ from the reference%s%s\n",
			     wrong, n, why.empty() ? "" : "; ", why.c_str());
		rc = 1;
	}
	return std::max(rc, rep);
}

} // namespace lumen::dp
