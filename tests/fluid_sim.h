/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * tests/fluid_sim.h - a small, deterministic, time-stepped fluid simulator of
 * long flows sharing a path of FIFO hops, driven by the real PowerTCP core
 * (include/lumen/powertcp.h) and the real INT option code
 * (include/lumen/int_option.h). Used by fluid_sim_test.cpp to check the
 * thesis' Theorems 1-3 (equilibrium, convergence, fairness) end to end.
 *
 * What is modelled
 * ----------------
 * Time advances in fixed steps of h ns (Config::step_ns, 160 ns by default:
 * a multiple of the 16 ns INT tick, and 500 bytes at 25 Gbit/s). All
 * quantities are integers: bytes and ns.
 *
 *   sender i --(tau/2)--> hop 0 -> hop 1 -> ... -> hop H-1 --> receiver
 *   sender i <--------------------(tau/2)------------------------ receiver
 *
 * Senders. Each flow holds a struct lumen_ptcp and its own parameter set
 * (so flows may use different beta). It is window-limited,
 * snd_nxt - snd_una <= cwnd_bytes, and paced at min(pacing_rate, HostBw)
 * with a token bucket that banks at most one step of rate plus one MSS.
 * Each step a flow emits at most one chunk (any number of bytes, no packet
 * boundaries: fluid). The data of a PowerTCP flow carries an INT request
 * (lumen_int_write_request) with one slot per hop. Flows start at
 * FlowSpec::start_ns (lumen_ptcp_init: one host BDP, line rate, no slow
 * start) and stop sending at FlowSpec::stop_ns. Sequence numbers start near
 * 2^32 by default so the sequence space wraps during a run.
 *
 * Propagation. Forward and return propagation are tau/2 each (tau/2 must be
 * a multiple of h, so chunks reach hop 0 exactly at a step boundary). The
 * hops themselves add no propagation: the base RTT is tau plus the
 * sub-step serialisation offset (below), which is what a NIC timestamp would
 * see.
 *
 * Hops. Each hop is a work-conserving FIFO of rate r_j: per step it serves
 * r_j*h bytes (fractions carried while the hop stays busy, dropped when it
 * goes idle) from a deque of (flow, bytes, send time, INT buffer) chunks,
 * splitting a chunk when the budget ends inside it. The bytes a chunk
 * contributes depart at ts = t + (bytes served so far this step) / r_j, so
 * the hop's timestamp and its transmitted-byte counter are consistent (as
 * on a real port). Arrivals of a step are enqueued at the step start. What
 * hop j serves in a step is enqueued at hop j+1 in the same step. The hop
 * with the lowest rate is "the bottleneck"; the others are expected to be
 * faster and stay (nearly) empty, but are real queues nevertheless.
 *
 * INT. At every dequeue the hop builds its record with lumen_int_hop_make
 * from its own clock (now plus a per-hop offset: switch clocks are not
 * synchronised), its cumulative tx counter (started at a per-hop offset so
 * the 14-bit counter wraps early), the queue left behind, and its rate
 * code, and appends it with lumen_int_push_hop to the chunk's request. The
 * receiver parses the request of the latest chunk of the flow it received
 * (lumen_int_parse), writes the echo (lumen_int_write_echo), and the sender
 * parses the echo again (lumen_int_parse) before passing it to
 * lumen_ptcp_on_ack: every quantisation of the wire format is exercised.
 * Any encoder/parser error is counted in Counters and must stay 0.
 *
 * ACKs. The receiver acknowledges a flow at most once per step: as soon as
 * Config::ack_every_bytes of its data are unacknowledged (default one MSS:
 * per-segment ACKs), and at once when the flow's burst ends (no new data of
 * the flow left the last hop in the step: the end-of-burst/delayed-ACK
 * flush that keeps a window-limited flow from stalling). An ACK arrives at
 * the sender at (dequeue time at the last hop) + tau/2 and carries
 *   now_ns  = that exact arrival time (a NIC hardware timestamp; the sender
 *             handles it at the next step boundary),
 *   rtt_ns  = now_ns - send time of the latest chunk it acknowledges,
 *   snd_una = advanced by the bytes it acknowledges, snd_nxt, mss,
 * and, for PowerTCP flows, the echo of the latest chunk's INT. theta-PowerTCP
 * flows send no request and get echo == NULL.
 *
 * Why per-MSS ACKs and not one ACK per 160 ns step: between two ACKs of a
 * flow the bottleneck must move several INT byte units (1 KiB at 25 Gbit/s)
 * or the per-ACK power samples are dominated by quantisation, and the
 * core's clamp of negative arrivals (A5) then biases the power upwards
 * (with one ACK per step, about 0.5 units apart, two flows settled at 60%
 * of the theoretical queue). Real receivers ACK per segment or per two.
 *
 * Baselines. HPCC is a mode of the same core (LUMEN_PTCP_MODE_HPCC, INT
 * requests like PowerTCP). A TIMELY flow (FlowSpec::timely) runs
 * include/lumen/timely.h instead: its ACKs go to lumen_timely_on_ack, no INT
 * is requested, and the rate and window it sets (pacing = rate, window =
 * lumen_timely_cwnd_bytes) are written into the flow's struct lumen_ptcp,
 * whose cwnd_bytes and pacing_rate the sender and the measurements read for
 * every flow.
 *
 * What is not modelled: losses (buffers are unbounded), the return path's
 * hops (ACKs only see propagation delay), a queue at the sender NIC (the
 * sender never exceeds HostBw), and packetisation.
 */
#ifndef LUMEN_TESTS_FLUID_SIM_H
#define LUMEN_TESTS_FLUID_SIM_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <vector>

#include "lumen/powertcp.h"
#include "lumen/timely.h"

namespace lumen::fluid
{

inline constexpr std::uint64_t kNever = std::numeric_limits<std::uint64_t>::max();

struct FlowSpec {
	lumen_ptcp_params params{};
	lumen_ptcp_mode mode = LUMEN_PTCP_MODE_INT;
	bool timely = false; /* TIMELY instead of the lumen_ptcp core */
	lumen_timely_params timely_params{};
	std::uint64_t start_ns = 0;
	std::uint64_t stop_ns = kNever;
	std::uint32_t isn = 0xfff00000u; /* wraps after 1 MiB */
};

struct Config {
	std::uint64_t step_ns = 160;
	std::uint64_t base_rtt_ns = 40000; /* tau: forward + return propagation */
	std::uint32_t host_bw_mbps = 25000;
	std::vector<std::uint32_t> hop_rates_mbps{25000}; /* path, in order */
	std::uint32_t mss = 1500;
	/*
	 * The receiver acknowledges a flow once at least this many of its
	 * bytes are unacknowledged (checked once per step); 0 = every step in
	 * which any arrived. Default: one ACK per MSS, like per-packet ACKs.
	 */
	std::uint32_t ack_every_bytes = 1500;
	std::uint32_t trace_every_steps = 0; /* 0: no trace */
	std::vector<FlowSpec> flows;
};

/* One point of the optional trace, taken at the end of a step. */
struct Sample {
	std::uint64_t t_ns;
	std::uint64_t aggregate_cwnd; /* over active flows */
	std::uint64_t queue; /* bottleneck, end of step */
};

/* Averages over a measurement window (begin_measure() .. end_measure()). */
struct Measurement {
	std::uint64_t duration_ns = 0;
	std::uint64_t steps = 0;
	double avg_queue = 0; /* bottleneck, time average, bytes */
	std::uint64_t max_queue = 0;
	std::vector<double> avg_hop_queue; /* every hop */
	double avg_aggregate_cwnd = 0; /* bytes, over active flows */
	double avg_inflight = 0; /* bytes, all flows */
	double utilization = 0; /* bottleneck bytes served / capacity */
	std::vector<double> avg_cwnd; /* per flow, bytes */
	std::vector<std::uint64_t> bytes; /* per flow, served at the bottleneck */
	std::vector<double> throughput_gbps; /* per flow */
};

/* Simulator-side counters: anything non-zero in the *_errors is a bug. */
struct Counters {
	std::uint64_t int_encode_errors = 0; /* write_request / push_hop / write_echo */
	std::uint64_t int_parse_errors = 0; /* lumen_int_parse failed */
	std::uint64_t acks = 0;
	std::uint64_t acks_with_int = 0;
	/* INT window updates by the hop that gave the maximum power */
	std::array<std::uint64_t, LUMEN_INT_MAX_HOPS> int_max_hop{};
};

class Simulator
{
      public:
	explicit Simulator(Config cfg);

	void step();
	void run_until(std::uint64_t t_ns);
	void run_for(std::uint64_t ns);

	std::uint64_t now_ns() const;
	std::uint64_t tau_ns() const;
	std::size_t flow_count() const;
	std::size_t hop_count() const;
	std::size_t bottleneck() const;
	std::uint32_t bottleneck_mbps() const;
	/* b * tau of the bottleneck, bytes */
	std::uint64_t bdp_bytes() const;

	/*
	 * Changes hop j's rate from the next step on, as a circuit coming up
	 * or going down does (thesis 2.4): its records carry the new rate code
	 * from then on, and bottleneck() is recomputed. The rate must be exactly
	 * representable in the INT rate code.
	 */
	void set_hop_rate(std::size_t hop, std::uint32_t mbps);

	bool active(std::size_t flow) const;
	const lumen_ptcp &ptcp(std::size_t flow) const;
	/* For perturbation experiments: the state may be edited between steps. */
	lumen_ptcp &ptcp_mut(std::size_t flow);
	const lumen_timely &timely(std::size_t flow) const;
	std::uint32_t snd_nxt(std::size_t flow) const;
	const lumen_ptcp_params &params(std::size_t flow) const;
	std::uint64_t inflight(std::size_t flow) const;
	std::uint64_t queue_bytes(std::size_t hop) const;
	std::uint64_t aggregate_cwnd() const;

	void begin_measure();
	Measurement end_measure() const;

	const std::vector<Sample> &trace() const;
	const Counters &counters() const;

      private:
	struct Chunk {
		std::uint32_t flow;
		std::uint32_t bytes;
		std::uint64_t send_ns;
		std::uint64_t event_ns; /* arrival at hop 0, or departure */
		std::uint8_t opt_len; /* 0: no INT */
		std::array<std::uint8_t, LUMEN_INT_MAX_LEN> opt;
	};
	struct Hop {
		std::uint32_t rate_mbps;
		std::uint16_t rate_code;
		std::uint64_t carry; /* budget fraction, bytes * 8000 */
		std::uint64_t queue;
		std::uint64_t tx; /* cumulative, starts at an offset */
		std::uint64_t clock_offset_ns;
		std::deque<Chunk> fifo;
		/* measurement accumulators */
		std::uint64_t served_acc;
		double queue_acc;
		std::uint64_t queue_max;
	};
	struct Ack {
		std::uint64_t arrive_ns;
		std::uint32_t flow;
		std::uint32_t bytes;
		std::uint64_t send_ns;
		std::uint8_t echo_len; /* 0: no INT */
		std::array<std::uint8_t, LUMEN_INT_MAX_LEN> echo;
	};
	struct Flow {
		FlowSpec spec;
		lumen_ptcp st;
		lumen_timely tl; /* spec.timely */
		bool started;
		bool stopped;
		std::uint32_t snd_una;
		std::uint32_t snd_nxt;
		std::uint64_t credit; /* bytes * 1e9 */
		/* receiver: bytes arrived but not acknowledged yet */
		bool got;
		bool arrived_now;
		std::uint32_t got_bytes;
		Chunk last;
		/* measurement accumulators */
		std::uint64_t bottleneck_bytes_acc;
		double cwnd_acc;
	};

	void deliver_acks();
	void send();
	void serve(std::size_t hop, std::vector<Chunk> &out);
	void receive(const std::vector<Chunk> &departed);
	void account();

	Config cfg_;
	std::uint64_t now_ = 0;
	std::uint64_t step_index_ = 0;
	std::size_t bottleneck_ = 0;
	std::vector<Flow> flows_;
	std::vector<Hop> hops_;
	std::deque<Chunk> forward_;
	std::deque<Ack> acks_;
	std::vector<Chunk> scratch_in_, scratch_out_;
	std::vector<Ack> scratch_acks_;
	Counters counters_;
	std::vector<Sample> trace_;

	/* measurement window */
	std::uint64_t meas_start_ns_ = 0;
	std::uint64_t meas_steps_ = 0;
	double agg_cwnd_acc_ = 0;
	double inflight_acc_ = 0;
};

} // namespace lumen::fluid

#endif /* LUMEN_TESTS_FLUID_SIM_H */
