/*
 * run.h - what every mode does around its endpoints: the lcore loops (each
 * endpoint polled by exactly one lcore, endpoints dealt round robin over
 * the lcores EAL gave), the closed-loop message workload of clients,
 * progress lines every second, SIGINT/SIGTERM, DPDK telemetry commands
 * under /lumen/ and the JSON summary.
 */
#ifndef LUMEN_DP_RUN_H
#define LUMEN_DP_RUN_H

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/endpoint.h"
#include "app/options.h"
#include "transport/latency_histogram.h"

namespace lumen::dp
{

/* The workload and results of one endpoint (a host, or one queue of a host), touched only by its lcore
 * (snapshot excepted, which the telemetry and progress threads read). */
struct Host {
	std::unique_ptr<Endpoint> ep;
	uint32_t msgs_per_conn = 0; /* client: 0 = unlimited */
	uint32_t msg_size = 0;
	std::vector<uint32_t> left; /* client: messages still to post, per connection */
	LatencyHistogram fct; /* client: the messages' completion times, in fixed memory */
	struct Done {
		uint32_t conn, msg, len;
		uint64_t posted_ns, done_ns; /* Clock's */
	};
	std::vector<Done> done; /* client, with --fct-csv: every message acknowledged */
	uint32_t first_conn_id = 1; /* client: its connections are first_conn_id, +1, ... */
	/* client, open loop (--demand): connections that post a message every
	 * interval, whatever was acknowledged, while fewer than `cap` of
	 * theirs are unacknowledged */
	struct Paced {
		Connection *c;
		uint64_t interval_ns, next_ns;
	};
	std::vector<Paced> paced;
	uint32_t paced_cap = 0;
	uint64_t paced_posted = 0, paced_skipped = 0;
	void pace(uint64_t now_ns);
	/* called before every poll of the endpoint, on its lcore (collective mode's ranks) */
	std::function<void(uint64_t now_ns)> tick;
	/* client: a connection its server reset (the server restarted: FIN
	 * RST) is opened again, a new incarnation, and the messages the reset
	 * failed are posted again: conn_id -> those messages */
	std::map<uint32_t, uint32_t> reset;
	uint64_t redials = 0, msgs_failed = 0;
	uint32_t depth = 0;
	void redial(uint64_t now_ns);
	std::atomic<uint64_t> msgs_done{0};
	uint64_t msgs_total = 0; /* client: 0 = unlimited */

	std::mutex snap_mu;
	struct Snapshot {
		ConnStats totals;
		EngineStats engine;
		EndpointStats port;
		uint32_t conns = 0;
		uint64_t at_ns = 0;
		/* the optical gate's, when there is one; at_tai: CLOCK_TAI of the copy */
		GateStats gate;
		std::vector<GateNodeStats> gate_nodes;
		uint64_t gate_version = 0, at_tai_ns = 0;
		uint32_t gate_self = 0; /* the node this host is in the schedule */
	} snap;
	void publish(uint64_t now_ns);
};

class Run
{
      public:
	explicit Run(Options &o);
	~Run();

	/* A host on a port set up by port_setup: an endpoint per queue, queue
	 * q's engine on UDP port udp_base + q (transport/queues.h), named
	 * NAME/qQ when there are several; client hosts get connections and
	 * messages with start_client. */
	std::vector<Host *> add(const std::string &name, uint16_t port, const PortInfo &info, rte_mempool *pool,
				const EngineConfig &cfg, const ImpairParams *impair);
	/* Open o.conns connections to peer, ids from first_conn_id up, split
	 * over the host's queues (conn_share), and post the first depth
	 * messages of each. */
	std::string start_client(const std::vector<Host *> &host, uint32_t peer_ip, const Mac &peer_mac,
				 uint32_t first_conn_id = 1);
	/* Open o.conns connections to peer that together post messages at
	 * rate_bps of payload, open loop (Host::pace), until the run ends. */
	std::string start_paced(const std::vector<Host *> &host, uint32_t peer_ip, const Mac &peer_mac,
				uint32_t first_conn_id, double rate_bps);
	/* An extra top-level entry of the JSON summary (a mode's own facts). */
	void note(const std::string &key, nlohmann::json value)
	{
		notes_[key] = std::move(value);
	}

	/* Wait for --start-at (CLOCK_MONOTONIC), once; the clients' start
	 * (clients_start_mono_ns) is then. start_client and start_paced call
	 * it; a mode that starts its own work calls it first. */
	void wait_start();
	/* Poll until every client is done, --time passes or a signal comes. 0: done,
	 * 1: stopped by time or signal with clients unfinished. */
	int loop();
	nlohmann::json summary() const;
	/* Print the summary and write --json: 0, 3 when a peer spoke another
	 * lumen-dp version (said on stderr), 1 when the JSON cannot be written. */
	int report(const char *mode) const;

	double elapsed_s() const
	{
		return elapsed_s_;
	}
	/* A time of the polls (what hosts' ticks and engines see) on
	 * CLOCK_MONOTONIC, as other processes time it. */
	uint64_t mono_ns(uint64_t now_ns) const
	{
		return clock_.mono_ns(now_ns);
	}
	const std::vector<std::unique_ptr<Host>> &hosts() const
	{
		return hosts_;
	}

      private:
	std::string start_queue(Host &h, uint32_t peer_ip, const Mac &peer_mac, uint32_t first_conn_id, uint32_t conns,
				double rate_bps = 0);
	static int lcore_main(void *arg);
	void poll_share(unsigned share, unsigned shares);
	bool clients_done() const;
	void progress(uint64_t now_ns, uint64_t *last_ns, ConnStats *last);
	void register_telemetry();
	bool write_fct_csv() const;

	Options &o_;
	Clock clock_;
	std::vector<std::unique_ptr<Host>> hosts_;
	std::atomic<bool> stop_{false};
	double elapsed_s_ = 0;
	uint64_t clients_start_ns_ = 0; /* Clock's: when start_client first ran */
	bool started_ = false;
	unsigned shares_ = 1;
	nlohmann::json notes_ = nlohmann::json::object();
};

/* The counters of a host's queues added up, and its messages to send. */
ConnStats totals_of(const std::vector<Host *> &host);
uint64_t msgs_total_of(const std::vector<Host *> &host);
/* Completion times in us: count, mean, p50, p99, p99.9, max (a histogram's, to 1.6 %). */
nlohmann::json fct_json(const LatencyHistogram &h);
/* The message completion times of a host's queues, merged. */
nlohmann::json fct_json(const std::vector<Host *> &host);
/* A port's queues and steering, for the JSON summary. */
nlohmann::json port_json(uint16_t port, const PortInfo &info);

/* A mode that cannot start: "lumen-dp MODE: why" on stderr, exit status 2. */
int mode_fail(const char *mode, const std::string &why);

/* The summary to path ("-": stdout); false, said on stderr as `who`, when
 * it cannot be written. */
bool write_json(const nlohmann::json &s, const std::string &path, const char *who);

/* The q-quantile of v (0..1, nearest rank), 0 when v is empty. */
double percentile(std::vector<uint64_t> v, double q);

/* SIGINT/SIGTERM asked the run to end. */
bool signalled();
void install_signals();

} // namespace lumen::dp

#endif
