/* run.cpp - lcore loops, workload, progress, telemetry, summary (run.h). */
#include "app/run.h"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <fstream>

#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_telemetry.h>

namespace lumen::dp
{

namespace
{

std::atomic<bool> g_signal{false};
/* What DPDK's telemetry thread may read: the hosts of the current Run,
 * each added whole (its endpoint and name set) and all removed before the
 * Run that owns them goes, under g_tel_mu, which a callback holds for its
 * whole answer. The lcores never take it; a callback reads a host's
 * counters from its snapshot, under the host's own snap_mu. */
std::mutex g_tel_mu;
std::vector<Host *> g_tel_hosts;

void on_signal(int)
{
	g_signal.store(true, std::memory_order_relaxed);
}

constexpr uint64_t kSnapshotNs = 100'000'000ull;
constexpr size_t kConnsInJson = 1024; /* per host; totals cover them all */

struct Share {
	Run *run;
	unsigned index, count;
};

nlohmann::json conn_json(const ConnStats &s)
{
	return {{"data_sent", s.data_sent},
		{"bytes_sent", s.bytes_sent},
		{"retransmits", s.retransmits},
		{"acks_rcvd", s.acks_rcvd},
		{"acked_pkts", s.acked_pkts},
		{"ecn_echoes", s.ecn_echoes},
		{"nacks_rcvd", s.nacks_rcvd},
		{"stale_nacks", s.stale_nacks},
		{"spurious_rtos", s.spurious_rtos},
		{"reroutes_undone", s.reroutes_undone},
		{"timeouts", s.timeouts},
		{"fast_losses", s.fast_losses},
		{"bad_acks", s.bad_acks},
		{"stale_acks", s.stale_acks},
		{"spurious_retx", s.spurious_retx},
		{"data_rcvd", s.data_rcvd},
		{"dup_rcvd", s.dup_rcvd},
		{"beyond_window", s.beyond_window},
		{"ce_rcvd", s.ce_rcvd},
		{"corrupt", s.corrupt},
		{"acks_sent", s.acks_sent},
		{"nacks_sent", s.nacks_sent},
		{"ce_nacks_sent", s.ce_nacks_sent},
		{"ooo_ignored", s.ooo_ignored},
		{"reroutes", s.reroutes},
		{"zero_copy_pkts", s.zero_copy_pkts},
		{"rnr_drops", s.rnr_drops},
		{"window_updates_sent", s.window_updates_sent},
		{"window_updates_rcvd", s.window_updates_rcvd},
		{"handshake_retries", s.handshake_retries},
		{"circuit_up", s.circuit_up},
		{"circuit_down", s.circuit_down},
		{"msgs_sent", s.msgs_sent},
		{"msgs_acked", s.msgs_acked},
		{"msgs_delivered", s.msgs_delivered},
		{"bytes_delivered", s.bytes_delivered},
		{"reorder_max", s.reorder_max},
		{"rtt_min_ns", s.rtt_min_ns},
		{"rtt_last_ns", s.rtt_last_ns}};
}

/* An endpoint's port and queue, and what its queue received, sent and steered. */
nlohmann::json endpoint_json(const Endpoint &ep)
{
	const EndpointStats &s = ep.stats();

	return {{"id", ep.port()},
		{"queue", ep.queue()},
		{"udp_port", ep.udp_port()},
		{"rx", s.rx_pkts},
		{"tx", s.tx_pkts},
		{"tx_full", s.tx_full},
		{"no_mbuf", s.no_mbuf},
		{"steered_in", s.steered_in},
		{"steered_out", s.steered_out},
		{"steer_drops", s.steer_drops}};
}

void tel_add(rte_tel_data *d, const nlohmann::json &j)
{
	for (auto it = j.begin(); it != j.end(); ++it)
		if (it->is_number_unsigned())
			rte_tel_data_add_dict_u64(d, it.key().c_str(), it->get<uint64_t>());
}

/* /lumen/stats[,HOST]: one host's totals (default: the first) */
int tel_stats(const char *, const char *params, rte_tel_data *d)
{
	std::lock_guard<std::mutex> hosts(g_tel_mu);
	if (g_tel_hosts.empty())
		return -1;
	size_t i = 0;
	if (params && *params) {
		i = g_tel_hosts.size();
		for (size_t k = 0; k < g_tel_hosts.size(); k++)
			if (g_tel_hosts[k]->ep->name() == params)
				i = k;
		if (i == g_tel_hosts.size())
			return -1;
	}
	Host &h = *g_tel_hosts[i];
	std::lock_guard<std::mutex> lock(h.snap_mu);
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_string(d, "host", h.ep->name().c_str());
	rte_tel_data_add_dict_string(d, "cc", cc_algorithm_name(h.ep->engine().config().cc.algorithm));
	rte_tel_data_add_dict_u64(d, "conns", h.snap.conns);
	tel_add(d, conn_json(h.snap.totals));
	rte_tel_data_add_dict_u64(d, "rx_frames", h.snap.engine.rx_frames);
	rte_tel_data_add_dict_u64(d, "malformed", h.snap.engine.malformed);
	rte_tel_data_add_dict_u64(d, "bad_version", h.snap.engine.bad_version);
	rte_tel_data_add_dict_u64(d, "tx_full", h.snap.port.tx_full);
	rte_tel_data_add_dict_u64(d, "queue", h.ep->queue());
	rte_tel_data_add_dict_u64(d, "queue_rx", h.snap.port.rx_pkts);
	rte_tel_data_add_dict_u64(d, "steered_in", h.snap.port.steered_in);
	rte_tel_data_add_dict_u64(d, "steered_out", h.snap.port.steered_out);
	rte_tel_data_add_dict_u64(d, "steer_drops", h.snap.port.steer_drops);
	/* the port's own losses (all of them: /ethdev/xstats,PORT) */
	rte_eth_stats ps{};
	if (rte_eth_stats_get(h.ep->port(), &ps) == 0) {
		rte_tel_data_add_dict_u64(d, "port_imissed", ps.imissed);
		rte_tel_data_add_dict_u64(d, "port_ierrors", ps.ierrors);
		rte_tel_data_add_dict_u64(d, "port_rx_nombuf", ps.rx_nombuf);
		rte_tel_data_add_dict_u64(d, "port_oerrors", ps.oerrors);
	}
	return 0;
}

/* /lumen/gate,HOST: a gated host's optical gate (mode hosts with
 * --optical-pages): its counters and, by schedule node, the frames and
 * bytes offered (demand) and sent, as of at_tai_ns (CLOCK_TAI) */
int tel_gate(const char *, const char *params, rte_tel_data *d)
{
	Host *h = nullptr;
	if (!params)
		return -1;
	std::lock_guard<std::mutex> hosts(g_tel_mu);
	for (Host *x : g_tel_hosts)
		if (x->ep->name() == params && x->ep->gate())
			h = x;
	if (!h)
		return -1;
	std::lock_guard<std::mutex> lock(h->snap_mu);
	const Host::Snapshot &s = h->snap;
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_string(d, "host", h->ep->name().c_str());
	rte_tel_data_add_dict_u64(d, "at_tai_ns", s.at_tai_ns);
	rte_tel_data_add_dict_u64(d, "version", s.gate_version);
	rte_tel_data_add_dict_u64(d, "node", s.gate_self);
	const GateStats &g = s.gate;
	const std::pair<const char *, uint64_t> totals[] = {{"sent", g.sent},
							    {"held", g.held},
							    {"never", g.never},
							    {"quiet", g.quiet},
							    {"stale", g.stale},
							    {"overflow", g.overflow},
							    {"late", g.late},
							    {"passed", g.pass},
							    {"deferred", g.deferred},
							    {"held_max_ns", g.held_max_ns},
							    {"acks_coalesced", s.port.acks_coalesced}};
	for (const auto &t : totals)
		rte_tel_data_add_dict_u64(d, t.first, t.second);
	const std::pair<const char *, uint64_t GateNodeStats::*> per_node[] = {
		{"offered_frames", &GateNodeStats::offered_frames},
		{"offered_bytes", &GateNodeStats::offered_bytes},
		{"sent_frames", &GateNodeStats::sent_frames},
		{"sent_bytes", &GateNodeStats::sent_bytes}};
	for (const auto &p : per_node) {
		rte_tel_data *a = rte_tel_data_alloc();
		if (!a)
			return -1;
		rte_tel_data_start_array(a, RTE_TEL_U64_VAL);
		for (const GateNodeStats &x : s.gate_nodes)
			rte_tel_data_add_array_u64(a, x.*p.second);
		rte_tel_data_add_dict_container(d, p.first, a, 0);
	}
	return 0;
}

/* /lumen/hosts: the host names, for /lumen/stats,NAME */
int tel_hosts(const char *, const char *, rte_tel_data *d)
{
	std::lock_guard<std::mutex> hosts(g_tel_mu);
	rte_tel_data_start_array(d, RTE_TEL_STRING_VAL);
	for (const Host *h : g_tel_hosts)
		rte_tel_data_add_array_string(d, h->ep->name().c_str());
	return 0;
}

} // namespace

ConnStats totals_of(const std::vector<Host *> &host)
{
	ConnStats t;

	for (const Host *h : host)
		t.add(h->ep->engine().totals());
	return t;
}

uint64_t msgs_total_of(const std::vector<Host *> &host)
{
	uint64_t n = 0;

	for (const Host *h : host)
		n += h->msgs_total;
	return n;
}

nlohmann::json fct_json(const LatencyHistogram &h)
{
	return {{"count", h.count()},
		{"mean", h.mean() / 1e3},
		{"p50", (double)h.quantile(0.5) / 1e3},
		{"p99", (double)h.quantile(0.99) / 1e3},
		{"p999", (double)h.quantile(0.999) / 1e3},
		{"max", (double)h.max() / 1e3}};
}

nlohmann::json fct_json(const std::vector<Host *> &host)
{
	LatencyHistogram all;

	for (const Host *h : host)
		all.merge(h->fct);
	return fct_json(all);
}

int mode_fail(const char *mode, const std::string &why)
{
	std::fprintf(stderr, "lumen-dp %s: %s\n", mode, why.c_str());
	return 2;
}

static nlohmann::json port_health_json(const PortHealth &h)
{
	nlohmann::json losses = nlohmann::json::object();
	for (const auto &[name, value] : h.losses)
		losses[name] = value;
	return {{"id", h.port},
		{"stats_read", h.ok},
		{"ipackets", h.basic.ipackets},
		{"opackets", h.basic.opackets},
		{"imissed", h.basic.imissed},
		{"ierrors", h.basic.ierrors},
		{"oerrors", h.basic.oerrors},
		{"rx_nombuf", h.basic.rx_nombuf},
		{"xstats_losses", losses}};
}

nlohmann::json port_json(uint16_t port, const PortInfo &info)
{
	return {{"id", port},
		{"driver", info.driver},
		{"queues", info.queues},
		{"udp_ports", {info.udp_base, queue_udp_port(info.udp_base, (uint16_t)(info.queues - 1))}},
		{"steering", info.steering},
		{"rss", info.rss_hf != 0}};
}

double percentile(std::vector<uint64_t> v, double q)
{
	if (v.empty())
		return 0;
	std::sort(v.begin(), v.end());
	size_t i = (size_t)(q * (double)(v.size() - 1) + 0.5);
	return (double)v[std::min(i, v.size() - 1)];
}

bool signalled()
{
	return g_signal.load(std::memory_order_relaxed);
}

void install_signals()
{
	struct sigaction sa {
	};
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, nullptr);
	sigaction(SIGTERM, &sa, nullptr);
}

void Host::publish(uint64_t now_ns)
{
	std::unique_lock<std::mutex> lock(snap_mu, std::try_to_lock);
	if (!lock)
		return; /* a reader holds it: next time */
	snap.totals = ep->engine().totals();
	snap.engine = ep->engine().stats();
	snap.port = ep->stats();
	snap.conns = (uint32_t)ep->engine().live_connections();
	snap.at_ns = now_ns;
	if (const OpticalGate *g = ep->gate()) {
		timespec ts{};
		clock_gettime(CLOCK_TAI, &ts);
		snap.at_tai_ns = (uint64_t)ts.tv_sec * 1'000'000'000ull + (uint64_t)ts.tv_nsec;
		snap.gate = g->stats();
		snap.gate_nodes = g->node_stats();
		snap.gate_version = g->tables().version;
		snap.gate_self = g->tables().self;
	}
}

Run::Run(Options &o) : o_(o)
{
	register_telemetry();
}

Run::~Run()
{
	/* before hosts_ goes: a callback under way finishes first */
	std::lock_guard<std::mutex> lock(g_tel_mu);
	g_tel_hosts.clear();
}

void Run::register_telemetry()
{
	static bool done = false;
	if (done)
		return;
	done = true;
	rte_telemetry_register_cmd("/lumen/stats", tel_stats, "lumen-dp totals of a host. Parameters: host name");
	rte_telemetry_register_cmd("/lumen/hosts", tel_hosts, "lumen-dp hosts (endpoints) of this process");
	rte_telemetry_register_cmd("/lumen/gate", tel_gate,
				   "lumen-dp optical gate of a host: counters, per node demand and sent. Parameters: "
				   "host name");
}

std::vector<Host *> Run::add(const std::string &name, uint16_t port, const PortInfo &info, rte_mempool *pool,
			     const EngineConfig &cfg, const ImpairParams *impair)
{
	std::vector<Host *> queues;

	for (uint16_t q = 0; q < info.queues; q++) {
		EngineConfig c = cfg;
		c.udp_port = queue_udp_port(info.udp_base, q);
		c.seed = cfg.seed + q * 0x9E3779B97F4A7C15ull; /* queues draw apart */
		auto h = std::make_unique<Host>();
		h->ep = std::make_unique<Endpoint>(info.queues == 1 ? name : name + "/q" + std::to_string(q), port, q,
						   pool, c, impair, info.soft.get());
		hosts_.push_back(std::move(h));
		queues.push_back(hosts_.back().get());
		std::lock_guard<std::mutex> lock(g_tel_mu);
		g_tel_hosts.push_back(queues.back());
	}
	return queues;
}

std::string Run::start_client(const std::vector<Host *> &host, uint32_t peer_ip, const Mac &peer_mac,
			      uint32_t first_conn_id)
{
	for (size_t q = 0; q < host.size(); q++) {
		ConnShare s = conn_share(o_.conns, (uint16_t)host.size(), (uint16_t)q, first_conn_id);
		if (std::string e = start_queue(*host[q], peer_ip, peer_mac, s.first_id, s.count); !e.empty())
			return e;
	}
	return "";
}

std::string Run::start_paced(const std::vector<Host *> &host, uint32_t peer_ip, const Mac &peer_mac,
			     uint32_t first_conn_id, double rate_bps)
{
	for (size_t q = 0; q < host.size(); q++) {
		ConnShare s = conn_share(o_.conns, (uint16_t)host.size(), (uint16_t)q, first_conn_id);
		if (!s.count)
			continue;
		if (std::string e = start_queue(*host[q], peer_ip, peer_mac, s.first_id, s.count,
						rate_bps * s.count / o_.conns);
		    !e.empty())
			return e;
	}
	return "";
}

/* Open loop: each connection's messages fall due every interval; a due
 * one is posted unless the connection already has paced_cap
 * unacknowledged (then it is skipped: the network did not keep up). After
 * a stall of more than a second the schedule restarts from now rather
 * than posting the backlog at once. */
void Host::pace(uint64_t now_ns)
{
	for (Paced &p : paced) {
		if (now_ns > p.next_ns + 1'000'000'000ull)
			p.next_ns = now_ns;
		for (int k = 0; k < 64 && now_ns >= p.next_ns; k++) {
			p.next_ns += p.interval_ns;
			if (p.c->msgs.size() >= paced_cap) {
				paced_skipped++;
				continue;
			}
			ep->engine().post(*p.c, msg_size, now_ns);
			paced_posted++;
		}
	}
}

/* Connections the server reset, opened again (the old one is freed first:
 * connect() refuses an id in use) with the messages the reset failed
 * posted again, up to the depth; the rest follow as those complete. */
void Host::redial(uint64_t now_ns)
{
	Engine &e = ep->engine();
	for (auto it = reset.begin(); it != reset.end();) {
		const uint32_t id = it->first, failed = it->second;
		Connection *old = nullptr;
		for (const auto &c : e.connections())
			if (c && c->client && c->conn_id == id)
				old = c.get();
		if (!old) {
			it = reset.erase(it);
			continue;
		}
		const uint32_t peer_ip = old->peer_ip;
		const Mac peer_mac = old->peer_mac;
		e.close(*old, now_ns); /* failed: freed at once */
		Connection *c = e.connect(peer_ip, peer_mac, id, now_ns);
		if (!c)
			return; /* no slot yet: next poll */
		redials++;
		it = reset.erase(it);
		for (Paced &p : paced)
			if (p.c == old)
				p.c = c;
		if (!paced.empty())
			continue; /* open loop: pace() posts */
		const uint32_t i = id - first_conn_id;
		if (msgs_per_conn && i < left.size())
			left[i] += failed;
		for (uint32_t k = 0; k < depth && (msgs_per_conn == 0 || (i < left.size() && left[i] > 0)); k++) {
			if (msgs_per_conn)
				left[i]--;
			e.post(*c, msg_size, now_ns);
		}
	}
}

std::string Run::start_queue(Host &h, uint32_t peer_ip, const Mac &peer_mac, uint32_t first_conn_id, uint32_t conns,
			     double rate_bps)
{
	Engine &e = h.ep->engine();
	if (!started_)
		wait_start();
	uint64_t now = clock_.now_ns();
	/* a host may be a client of several peers (all-to-all): its
	 * connection ids only grow from call to call */
	if (h.left.empty())
		h.first_conn_id = first_conn_id;
	else if (first_conn_id < h.first_conn_id + h.left.size())
		return "connection ids " + std::to_string(first_conn_id) + ".. of " + h.ep->name() +
		       " overlap its earlier ones";
	const size_t base = first_conn_id - h.first_conn_id;
	h.msgs_per_conn = o_.msgs;
	h.msg_size = o_.msg_size;
	h.msgs_total += (uint64_t)o_.msgs * conns;
	h.left.resize(base + conns, 0);
	std::fill(h.left.begin() + (ptrdiff_t)base, h.left.end(), o_.msgs);
	Host *hp = &h;
	bool record = !o_.fct_csv.empty();
	h.paced_cap = o_.depth;
	h.depth = o_.depth;
	e.on_complete = [hp, record](Connection &c, const Completion &d) {
		if (d.kind != Completion::kSend)
			return;
		if (d.status != MsgStatus::kOk) {
			/* not acknowledged: no completion time. A reset (the
			 * server has no such connection: it restarted) is
			 * answered by a new incarnation (Host::redial); a
			 * message that timed out or was aborted is counted */
			hp->msgs_failed++;
			if (d.status == MsgStatus::kReset && c.client)
				hp->reset[c.conn_id]++;
			return;
		}
		uint64_t now_ns = d.done_ns;
		hp->fct.record(now_ns - d.posted_ns);
		if (record)
			hp->done.push_back({c.conn_id, d.msg_id, d.len, d.posted_ns, now_ns});
		hp->msgs_done.fetch_add(1, std::memory_order_relaxed);
		if (!hp->paced.empty())
			return; /* open loop: Host::pace posts */
		uint32_t i = c.conn_id - hp->first_conn_id;
		if (i < hp->left.size() && (hp->msgs_per_conn == 0 || hp->left[i] > 0)) {
			if (hp->msgs_per_conn)
				hp->left[i]--;
			hp->ep->engine().post(c, hp->msg_size, now_ns);
		}
	};
	for (uint32_t i = 0; i < conns; i++) {
		Connection *c = e.connect(peer_ip, peer_mac, first_conn_id + i, now);
		if (!c)
			return "cannot open connection " + std::to_string(first_conn_id + i) +
			       " (--conns beyond the engine's limit)";
		if (rate_bps > 0) {
			double interval = (double)o_.msg_size * 8e9 / (rate_bps / conns);
			h.paced.push_back({c, (uint64_t)std::max(1.0, std::min(interval, 3.6e12)), now});
			continue;
		}
		for (uint32_t k = 0; k < o_.depth && (o_.msgs == 0 || h.left[base + i] > 0); k++) {
			if (o_.msgs)
				h.left[base + i]--;
			e.post(*c, o_.msg_size, now);
		}
	}
	return "";
}

/* --start-at: sleep until then (several lumen-dp processes, or a failure
 * an experiment injects, line up on CLOCK_MONOTONIC); too late is said and
 * the run starts at once. */
void Run::wait_start()
{
	started_ = true;
	if (o_.start_at_ns) {
		timespec ts{};
		clock_gettime(CLOCK_MONOTONIC, &ts);
		uint64_t mono = (uint64_t)ts.tv_sec * 1'000'000'000ull + (uint64_t)ts.tv_nsec;
		if (mono > o_.start_at_ns) {
			std::fprintf(stderr, "lumen-dp: --start-at passed %.3f s ago, starting now\n",
				     (double)(mono - o_.start_at_ns) / 1e9);
		} else {
			ts.tv_sec = (time_t)(o_.start_at_ns / 1'000'000'000ull);
			ts.tv_nsec = (long)(o_.start_at_ns % 1'000'000'000ull);
			while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR && !signalled()) {
			}
		}
	}
	clients_start_ns_ = clock_.now_ns();
}

/* --fct-csv: the messages acknowledged, then those still outstanding at
 * the end (done_ns empty), on CLOCK_MONOTONIC. */
bool Run::write_fct_csv() const
{
	FILE *f = std::fopen(o_.fct_csv.c_str(), "w");
	if (!f)
		return false;
	std::fprintf(f, "host,conn,msg,bytes,posted_ns,done_ns\n");
	for (const auto &h : hosts_) {
		const std::string &name = h->ep->name();
		for (const Host::Done &d : h->done)
			std::fprintf(f, "%s,%u,%u,%u,%llu,%llu\n", name.c_str(), d.conn, d.msg, d.len,
				     (unsigned long long)clock_.mono_ns(d.posted_ns),
				     (unsigned long long)clock_.mono_ns(d.done_ns));
		for (const auto &c : h->ep->engine().connections()) {
			if (!c || !c->client)
				continue;
			for (size_t i = 0; i < c->msgs.size(); i++) {
				const Message &m = c->msgs[i];
				std::fprintf(f, "%s,%u,%u,%u,%llu,\n", name.c_str(), c->conn_id, m.id, m.len,
					     (unsigned long long)clock_.mono_ns(m.posted_ns));
			}
		}
	}
	return std::fclose(f) == 0;
}

bool Run::clients_done() const
{
	bool any = false;

	for (const auto &h : hosts_) {
		if (!h->msgs_total)
			continue;
		any = true;
		if (h->msgs_done.load(std::memory_order_relaxed) < h->msgs_total)
			return false;
	}
	return any;
}

void Run::poll_share(unsigned share, unsigned shares)
{
	uint64_t next_snap = 0;

	while (!stop_.load(std::memory_order_relaxed)) {
		uint64_t now = clock_.now_ns();
		for (size_t i = share; i < hosts_.size(); i += shares) {
			if (!hosts_[i]->reset.empty())
				hosts_[i]->redial(now);
			if (!hosts_[i]->paced.empty())
				hosts_[i]->pace(now);
			if (hosts_[i]->tick)
				hosts_[i]->tick(now);
			hosts_[i]->ep->poll(now);
		}
		if (now >= next_snap) {
			for (size_t i = share; i < hosts_.size(); i += shares)
				hosts_[i]->publish(now);
			next_snap = now + kSnapshotNs;
		}
		if (share == 0)
			return; /* the main lcore also watches the clock: one turn */
	}
}

int Run::lcore_main(void *arg)
{
	auto *s = static_cast<Share *>(arg);
	s->run->poll_share(s->index, s->count);
	return 0;
}

void Run::progress(uint64_t now_ns, uint64_t *last_ns, ConnStats *last)
{
	ConnStats t;
	uint64_t done = 0, total = 0;

	for (const auto &h : hosts_) {
		std::lock_guard<std::mutex> lock(h->snap_mu);
		t.add(h->snap.totals);
		done += h->msgs_done.load(std::memory_order_relaxed);
		total += h->msgs_total;
	}
	double dt = (double)(now_ns - *last_ns) / 1e9;
	if (dt <= 0)
		return;
	std::fprintf(stderr,
		     "lumen-dp %6.1f s  tx %8.1f kpps %8.3f Gbit/s  rx %8.1f kpps  retx %llu  timeouts %llu  ecn %llu  "
		     "msgs %llu",
		     (double)now_ns / 1e9, (double)(t.data_sent - last->data_sent) / dt / 1e3,
		     (double)(t.bytes_sent - last->bytes_sent) * 8 / dt / 1e9,
		     (double)(t.data_rcvd - last->data_rcvd) / dt / 1e3, (unsigned long long)t.retransmits,
		     (unsigned long long)t.timeouts, (unsigned long long)t.ecn_echoes, (unsigned long long)done);
	if (total)
		std::fprintf(stderr, "/%llu", (unsigned long long)total);
	std::fprintf(stderr, "\n");
	*last = t;
	*last_ns = now_ns;
}

int Run::loop()
{
	std::vector<unsigned> workers;
	unsigned id;
	RTE_LCORE_FOREACH_WORKER(id)
	workers.push_back(id);
	shares_ = std::min<unsigned>((unsigned)workers.size() + 1, (unsigned)std::max<size_t>(hosts_.size(), 1));
	std::vector<Share> shares(shares_);
	for (unsigned i = 1; i < shares_; i++) {
		shares[i] = Share{this, i, shares_};
		rte_eal_remote_launch(lcore_main, &shares[i], workers[i - 1]);
	}

	uint64_t start = clock_.now_ns(), last_progress = start, deadline = 0;
	ConnStats last{};
	if (o_.seconds > 0)
		deadline = start + (uint64_t)(o_.seconds * 1e9);
	int rc = 0;
	for (;;) {
		poll_share(0, shares_);
		uint64_t now = clock_.now_ns();
		if (clients_done())
			break;
		if (signalled() || (deadline && now >= deadline)) {
			rc = clients_done() ? 0 : (hosts_.empty() || !o_.msgs ? 0 : 1);
			break;
		}
		if (o_.progress && now - last_progress >= 1'000'000'000ull)
			progress(now, &last_progress, &last);
	}
	stop_.store(true);
	rte_eal_mp_wait_lcore();
	uint64_t end = clock_.now_ns();
	for (auto &h : hosts_)
		h->publish(end);
	elapsed_s_ = (double)(end - start) / 1e9;
	return rc;
}

nlohmann::json Run::summary() const
{
	nlohmann::json hosts = nlohmann::json::array();
	LatencyHistogram all_fct;
	ConnStats total;
	std::vector<uint16_t> ports; /* each once, in the hosts' order */

	for (const auto &h : hosts_) {
		Engine &e = h->ep->engine();
		if (std::find(ports.begin(), ports.end(), h->ep->port()) == ports.end())
			ports.push_back(h->ep->port());
		ConnStats t = e.totals();
		total.add(t);
		nlohmann::json paths = nlohmann::json::array();
		for (const PathStats &p : e.path_stats())
			paths.push_back({p.sent, p.good, p.ecn, p.lost});
		nlohmann::json refused = nlohmann::json::object();
		for (size_t k = 1; k < e.stats().refused.size(); k++)
			if (e.stats().refused[k])
				refused[lumen_dp_strerror(-(int)k)] = e.stats().refused[k];
		nlohmann::json j = {{"name", h->ep->name()},
				    {"conns", e.live_connections()},
				    {"conns_opened", e.stats().conns_opened},
				    {"conns_closed", e.stats().conns_closed},
				    {"conns_expired", e.stats().conns_expired},
				    {"reincarnations", e.stats().reincarnations},
				    {"redials", h->redials},
				    {"msgs_failed", h->msgs_failed},
				    {"arrivals", e.stats().arrivals},
				    {"totals", conn_json(t)},
				    {"frames",
				     {{"rx", e.stats().rx_frames},
				      {"tx", e.stats().tx_frames},
				      {"malformed", e.stats().malformed},
				      {"bad_version", e.stats().bad_version},
				      {"no_conn", e.stats().no_conn},
				      {"unknown_data", e.stats().unknown_data},
				      {"conn_refused", e.stats().conn_refused},
				      {"probes", e.stats().probes_rcvd},
				      {"bad_path_choices", e.stats().bad_path_choices},
				      {"syns", e.stats().syns_rcvd},
				      {"cookies_sent", e.stats().cookies_sent},
				      {"bad_cookies", e.stats().bad_cookies},
				      {"resets_sent", e.stats().resets_sent},
				      {"resets_rcvd", e.stats().resets_rcvd},
				      {"stale_ctrl", e.stats().stale_ctrl},
				      {"ctrl_dropped", e.stats().ctrl_dropped},
				      {"refused", refused}}},
				    {"port", endpoint_json(*h->ep)},
				    {"paths", {{"columns", {"sent", "good", "ecn", "lost"}}, {"rows", paths}}}};
		nlohmann::json conns = nlohmann::json::array();
		for (const auto &c : e.connections()) {
			if (conns.size() == kConnsInJson)
				break;
			if (!c)
				continue;
			conns.push_back({{"conn_id", c->conn_id},
					 {"peer", ip_str(c->peer_ip)},
					 {"client", c->client},
					 {"cc", c->cc->name()},
					 {"cwnd_bytes", c->cc->cwnd_bytes()},
					 {"srtt_ns", c->rto.srtt_ns()},
					 {"rto_ns", c->rto.rto_ns()},
					 {"stats", conn_json(c->stats)}});
		}
		j["connections"] = conns;
		if (const Impairment *im = h->ep->impairment())
			j["impairment"] = {
				{"frames", im->stats().frames},		{"dropped", im->stats().dropped},
				{"duplicated", im->stats().duplicated}, {"marked", im->stats().marked},
				{"reordered", im->stats().reordered},	{"blackholed", im->stats().blackholed}};
		if (h->msgs_total || h->fct.count()) {
			j["fct_us"] = fct_json(h->fct);
			all_fct.merge(h->fct);
		}
		hosts.push_back(j);
	}
	nlohmann::json port_health = nlohmann::json::array();
	for (uint16_t p : ports)
		port_health.push_back(port_health_json(lumen::dp::port_health(p)));
	const EngineConfig &c = o_.engine;
	nlohmann::json s = {
		{"mode", o_.mode},
		{"seconds", elapsed_s_},
		{"clients_start_mono_ns", started_ ? clock_.mono_ns(clients_start_ns_) : 0},
		{"config",
		 {{"cc", cc_algorithm_name(c.cc.algorithm)},
		  {"host_bw_bps", c.cc.host_bw_bps},
		  {"base_rtt_ns", c.cc.base_rtt_ns},
		  {"path", lumen_path_mode_name(c.path_mode)},
		  {"entropies", c.path.entropies},
		  {"mtu", c.mtu},
		  {"window", c.tx_window},
		  {"ack_every", c.ack_every},
		  {"gbn", c.gbn},
		  {"ce_nack_threshold_pct", c.ce_nack_threshold_pct},
		  {"ce_window_ns", c.ce_window_ns},
		  {"randomize_order", c.randomize_order},
		  {"start_jitter_ns", c.start_jitter_ns},
		  {"verify", c.verify},
		  {"conns", o_.conns},
		  {"msg_size", o_.msg_size},
		  {"msgs", o_.msgs},
		  {"depth", o_.depth},
		  {"path_state_bytes", sizeof(lumen_path)}}},
		{"totals", conn_json(total)},
		{"goodput_gbps", elapsed_s_ > 0 ? (double)total.bytes_delivered * 8 / elapsed_s_ / 1e9 : 0.0},
		{"fct_us", fct_json(all_fct)},
		{"port_health", port_health},
		{"hosts", hosts}};
	s.update(notes_);
	return s;
}

int Run::report(const char *mode) const
{
	nlohmann::json s = summary();
	const auto &t = s["totals"];

	std::printf(
		"lumen-dp %s: %.2f s, %llu messages delivered (%.3f Gbit/s goodput), sent %llu packets, "
		"%llu retransmitted, %llu timeouts, %llu ECN echoes, %llu corrupt\n",
		mode, elapsed_s_, (unsigned long long)t["msgs_delivered"].get<uint64_t>(),
		s["goodput_gbps"].get<double>(), (unsigned long long)t["data_sent"].get<uint64_t>(),
		(unsigned long long)t["retransmits"].get<uint64_t>(), (unsigned long long)t["timeouts"].get<uint64_t>(),
		(unsigned long long)t["ecn_echoes"].get<uint64_t>(), (unsigned long long)t["corrupt"].get<uint64_t>());
	if (s["fct_us"]["count"].get<size_t>())
		std::printf("  message completion: p50 %.1f us, p99 %.1f us, p99.9 %.1f us, max %.1f us over %zu "
			    "messages\n",
			    s["fct_us"]["p50"].get<double>(), s["fct_us"]["p99"].get<double>(),
			    s["fct_us"]["p999"].get<double>(), s["fct_us"]["max"].get<double>(),
			    s["fct_us"]["count"].get<size_t>());
	for (const auto &p : s["port_health"]) {
		uint64_t lost = 0;
		for (const char *k : {"imissed", "ierrors", "oerrors", "rx_nombuf"})
			lost += p[k].get<uint64_t>();
		if (lost)
			std::fprintf(stderr,
				     "lumen-dp: port %u lost %llu frames below lumen-dp (imissed %llu, ierrors %llu, "
				     "rx_nombuf %llu, oerrors %llu): the transport's counters do not see them\n",
				     p["id"].get<unsigned>(), (unsigned long long)lost,
				     (unsigned long long)p["imissed"].get<uint64_t>(),
				     (unsigned long long)p["ierrors"].get<uint64_t>(),
				     (unsigned long long)p["rx_nombuf"].get<uint64_t>(),
				     (unsigned long long)p["oerrors"].get<uint64_t>());
	}
	int rc = 0;
	for (const auto &h : hosts_) {
		const EngineStats &e = h->ep->engine().stats();
		if (!e.bad_version)
			continue;
		std::fprintf(
			stderr,
			"lumen-dp %s: %s: %llu frames refused: %s speaks lumen-dp version %u, this is version %u\n",
			mode, h->ep->name().c_str(), (unsigned long long)e.bad_version,
			ip_str(e.peer_version_ip).c_str(), e.peer_version, LUMEN_DP_VERSION);
		rc = 3;
	}
	if (!o_.fct_csv.empty() && !write_fct_csv()) {
		std::fprintf(stderr, "lumen-dp: cannot write %s\n", o_.fct_csv.c_str());
		return 1;
	}
	if (o_.json.empty())
		return rc;
	return write_json(s, o_.json, "lumen-dp") ? rc : 1;
}

bool write_json(const nlohmann::json &s, const std::string &path, const char *who)
{
	if (path == "-") {
		std::printf("%s\n", s.dump(2).c_str());
		return true;
	}
	std::ofstream f(path);
	f << s.dump(2) << "\n";
	if (!f)
		std::fprintf(stderr, "%s: cannot write %s\n", who, path.c_str());
	return (bool)f;
}

} // namespace lumen::dp
