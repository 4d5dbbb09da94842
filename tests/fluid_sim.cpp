// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
// tests/fluid_sim.cpp - the fluid simulator described in fluid_sim.h.
#include "fluid_sim.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace lumen::fluid
{

namespace
{

constexpr std::uint64_t kNsPerSec = 1000000000ull;

void require(bool ok, const char *what)
{
	if (!ok)
		throw std::invalid_argument(std::string("fluid_sim: ") + what);
}

} // namespace

Simulator::Simulator(Config cfg) : cfg_(std::move(cfg))
{
	require(cfg_.step_ns > 0 && cfg_.step_ns % LUMEN_INT_TS_UNIT_NS == 0,
		"step_ns must be a positive multiple of the 16 ns INT tick");
	require(cfg_.base_rtt_ns % (2 * cfg_.step_ns) == 0 && cfg_.base_rtt_ns > 0,
		"base_rtt_ns / 2 must be a positive multiple of step_ns");
	require(!cfg_.hop_rates_mbps.empty() && cfg_.hop_rates_mbps.size() <= LUMEN_INT_MAX_HOPS,
		"the path needs 1..5 hops");
	require(cfg_.host_bw_mbps > 0 && cfg_.mss > 0, "host_bw_mbps and mss must be positive");
	require(!cfg_.flows.empty(), "no flows");

	for (std::size_t j = 0; j < cfg_.hop_rates_mbps.size(); j++) {
		Hop h{};
		h.rate_mbps = cfg_.hop_rates_mbps[j];
		h.rate_code = lumen_int_rate_encode(h.rate_mbps);
		require(h.rate_code != 0 && lumen_int_rate_mbps(h.rate_code) == h.rate_mbps,
			"hop rates must be exactly representable in the INT rate code");
		/*
		 * Each switch has its own clock and counter: arbitrary offsets,
		 * chosen so the 18-bit timestamp and the 14-bit tx counter wrap
		 * within the first milliseconds of a run.
		 */
		h.clock_offset_ns = 3000017ull * (j + 1);
		h.tx = (1ull << 40) - 1000003ull * (j + 1);
		hops_.push_back(std::move(h));
		if (cfg_.hop_rates_mbps[j] < cfg_.hop_rates_mbps[bottleneck_])
			bottleneck_ = j;
	}
	for (const FlowSpec &spec : cfg_.flows) {
		require(lumen_ptcp_params_validate(&spec.params) == 0, "invalid PowerTCP parameters");
		require(!spec.timely || lumen_timely_params_validate(&spec.timely_params) == 0,
			"invalid TIMELY parameters");
		Flow f{};
		f.spec = spec;
		flows_.push_back(f);
	}
}

std::uint64_t Simulator::now_ns() const
{
	return now_;
}

std::uint64_t Simulator::tau_ns() const
{
	return cfg_.base_rtt_ns;
}

std::size_t Simulator::flow_count() const
{
	return flows_.size();
}

std::size_t Simulator::hop_count() const
{
	return hops_.size();
}

std::size_t Simulator::bottleneck() const
{
	return bottleneck_;
}

std::uint32_t Simulator::bottleneck_mbps() const
{
	return hops_[bottleneck_].rate_mbps;
}

std::uint64_t Simulator::bdp_bytes() const
{
	return lumen_ptcp_bytes_in(bottleneck_mbps(), cfg_.base_rtt_ns);
}

void Simulator::set_hop_rate(std::size_t hop, std::uint32_t mbps)
{
	require(hop < hops_.size(), "set_hop_rate: no such hop");
	const std::uint16_t code = lumen_int_rate_encode(mbps);
	require(code != 0 && lumen_int_rate_mbps(code) == mbps,
		"hop rates must be exactly representable in the INT rate code");
	hops_[hop].rate_mbps = mbps;
	hops_[hop].rate_code = code;
	bottleneck_ = 0;
	for (std::size_t j = 1; j < hops_.size(); j++)
		if (hops_[j].rate_mbps < hops_[bottleneck_].rate_mbps)
			bottleneck_ = j;
}

bool Simulator::active(std::size_t flow) const
{
	return flows_[flow].started && !flows_[flow].stopped;
}

const lumen_ptcp &Simulator::ptcp(std::size_t flow) const
{
	return flows_[flow].st;
}

lumen_ptcp &Simulator::ptcp_mut(std::size_t flow)
{
	return flows_[flow].st;
}

const lumen_timely &Simulator::timely(std::size_t flow) const
{
	return flows_[flow].tl;
}

std::uint32_t Simulator::snd_nxt(std::size_t flow) const
{
	return flows_.at(flow).snd_nxt;
}

const lumen_ptcp_params &Simulator::params(std::size_t flow) const
{
	return flows_[flow].spec.params;
}

std::uint64_t Simulator::inflight(std::size_t flow) const
{
	return (std::uint32_t)(flows_[flow].snd_nxt - flows_[flow].snd_una);
}

std::uint64_t Simulator::queue_bytes(std::size_t hop) const
{
	return hops_[hop].queue;
}

std::uint64_t Simulator::aggregate_cwnd() const
{
	std::uint64_t sum = 0;

	for (std::size_t i = 0; i < flows_.size(); i++) {
		if (active(i))
			sum += flows_[i].st.cwnd_bytes;
	}
	return sum;
}

const std::vector<Sample> &Simulator::trace() const
{
	return trace_;
}

const Counters &Simulator::counters() const
{
	return counters_;
}

void Simulator::run_until(std::uint64_t t_ns)
{
	while (now_ < t_ns)
		step();
}

void Simulator::run_for(std::uint64_t ns)
{
	run_until(now_ + ns);
}

/* ACKs whose (exact) arrival time has passed reach their sender. */
void Simulator::deliver_acks()
{
	while (!acks_.empty() && acks_.front().arrive_ns <= now_) {
		const Ack &a = acks_.front();
		Flow &f = flows_[a.flow];
		lumen_int_opt opt;
		const lumen_int_opt *echo = nullptr;
		lumen_ptcp_ack ack{};

		f.snd_una += a.bytes;
		ack.now_ns = a.arrive_ns;
		ack.rtt_ns = a.arrive_ns - a.send_ns;
		ack.snd_una = f.snd_una;
		ack.snd_nxt = f.snd_nxt;
		ack.mss = cfg_.mss;
		if (a.echo_len) {
			if (lumen_int_parse(a.echo.data(), a.echo_len, &opt) == 0 &&
			    (opt.flags & LUMEN_INT_FLAG_ECHO)) {
				echo = &opt;
				counters_.acks_with_int++;
			} else {
				counters_.int_parse_errors++;
			}
		}
		counters_.acks++;
		if (f.spec.timely) {
			lumen_timely_on_ack(&f.tl, &f.spec.timely_params, ack.snd_una, ack.snd_nxt, ack.rtt_ns);
			f.st.cwnd_bytes = lumen_timely_cwnd_bytes(&f.tl, &f.spec.timely_params, cfg_.mss);
			f.st.pacing_rate = f.tl.rate;
		} else if (lumen_ptcp_on_ack(&f.st, &f.spec.params, &ack, echo) == LUMEN_PTCP_UPDATED_INT)
			counters_.int_max_hop[f.st.max_hop % LUMEN_INT_MAX_HOPS]++;
		acks_.pop_front();
	}
}

/* Start, stop and pace the senders; each emits at most one chunk per step. */
void Simulator::send()
{
	const std::size_t n = flows_.size();
	const std::uint64_t host_rate = (std::uint64_t)cfg_.host_bw_mbps * 125000ull; /* bytes/s */

	for (std::size_t k = 0; k < n; k++) {
		/* rotate who goes first so no flow is always at the FIFO head */
		const std::size_t i = (k + step_index_) % n;
		Flow &f = flows_[i];

		if (!f.started && now_ >= f.spec.start_ns) {
			lumen_ptcp_init(&f.st, &f.spec.params, f.spec.mode, f.spec.isn, cfg_.mss);
			if (f.spec.timely) {
				lumen_timely_init(&f.tl, &f.spec.timely_params, f.spec.isn);
				f.st.cwnd_bytes = lumen_timely_cwnd_bytes(&f.tl, &f.spec.timely_params, cfg_.mss);
				f.st.pacing_rate = f.tl.rate;
			}
			f.started = true;
			f.snd_una = f.spec.isn;
			f.snd_nxt = f.spec.isn;
			f.credit = 0;
		}
		if (f.started && !f.stopped && now_ >= f.spec.stop_ns)
			f.stopped = true;
		if (!f.started || f.stopped)
			continue;

		/* token bucket: one step of rate, plus at most one MSS banked */
		const std::uint64_t rate = std::min<std::uint64_t>(f.st.pacing_rate, host_rate);
		const std::uint64_t per_step = rate * cfg_.step_ns;
		f.credit = std::min(f.credit + per_step, per_step + (std::uint64_t)cfg_.mss * kNsPerSec);

		const std::uint64_t inflight = (std::uint32_t)(f.snd_nxt - f.snd_una);
		const std::uint64_t room = f.st.cwnd_bytes > inflight ? f.st.cwnd_bytes - inflight : 0;
		const std::uint64_t bytes = std::min(f.credit / kNsPerSec, room);
		if (bytes == 0)
			continue;

		Chunk c{};
		c.flow = (std::uint32_t)i;
		c.bytes = (std::uint32_t)bytes;
		c.send_ns = now_;
		c.event_ns = now_ + cfg_.base_rtt_ns / 2;
		if (!f.spec.timely && lumen_ptcp_mode_int_fed(f.spec.mode)) {
			int len = lumen_int_write_request(c.opt.data(), (__u32)c.opt.size(), (__u32)hops_.size());
			if (len > 0)
				c.opt_len = (std::uint8_t)len;
			else
				counters_.int_encode_errors++;
		}
		forward_.push_back(c);
		f.credit -= bytes * kNsPerSec;
		f.snd_nxt += (std::uint32_t)bytes;
	}
}

/*
 * One step of hop j: serve rate*h bytes FIFO from what is queued; every
 * (part of a) chunk that leaves gets the hop's INT record at its dequeue.
 */
void Simulator::serve(std::size_t j, std::vector<Chunk> &out)
{
	Hop &hp = hops_[j];
	const std::uint64_t q0 = hp.queue;
	const std::uint64_t budget_x = hp.carry + (std::uint64_t)hp.rate_mbps * cfg_.step_ns;
	std::uint64_t budget = budget_x / 8000, served = 0;

	out.clear();
	while (budget > 0 && !hp.fifo.empty()) {
		Chunk &c = hp.fifo.front();
		const std::uint64_t take = std::min<std::uint64_t>(c.bytes, budget);

		served += take;
		budget -= take;
		hp.tx += take;
		hp.queue -= take;

		Chunk part = c;
		part.bytes = (std::uint32_t)take;
		part.event_ns = now_ + served * 8000 / hp.rate_mbps;
		if (part.opt_len) {
			lumen_int_hop rec;

			lumen_int_hop_make(&rec, part.event_ns + hp.clock_offset_ns, hp.tx, hp.queue, hp.rate_code);
			if (lumen_int_push_hop(part.opt.data(), part.opt_len, &rec) < 0)
				counters_.int_encode_errors++;
		}
		if (j == bottleneck_)
			flows_[part.flow].bottleneck_bytes_acc += take;
		out.push_back(part);
		if (take == c.bytes)
			hp.fifo.pop_front();
		else
			c.bytes -= (std::uint32_t)take;
	}
	/* an idle link cannot bank capacity; a busy one keeps the fraction */
	hp.carry = hp.fifo.empty() ? 0 : budget_x % 8000;

	/* time average of the queue over the step: linear drain while busy */
	const double h = (double)cfg_.step_ns;
	const double busy = std::min(h, (double)served * 8000.0 / hp.rate_mbps);
	const double q_end = (double)hp.queue;
	hp.queue_acc += ((double)q0 * busy - (double)served * busy / 2 + q_end * (h - busy)) / h;
	hp.queue_max = std::max(hp.queue_max, q0);
	hp.served_acc += served;
}

/*
 * The receiver: at most one ACK per flow per step (once ack_every_bytes are
 * pending), echoing the INT of the latest chunk received.
 */
void Simulator::receive(const std::vector<Chunk> &departed)
{
	for (Flow &f : flows_)
		f.arrived_now = false;
	for (const Chunk &c : departed) {
		Flow &f = flows_[c.flow];

		f.got = true;
		f.arrived_now = true;
		f.got_bytes += c.bytes;
		f.last = c;
	}
	scratch_acks_.clear();
	for (std::size_t i = 0; i < flows_.size(); i++) {
		Flow &f = flows_[i];

		/* ACK every ack_every_bytes, and at once when the burst ends */
		if (!f.got || (f.got_bytes < cfg_.ack_every_bytes && f.arrived_now))
			continue;
		Ack a{};
		a.arrive_ns = f.last.event_ns + cfg_.base_rtt_ns / 2;
		a.flow = (std::uint32_t)i;
		a.bytes = f.got_bytes;
		a.send_ns = f.last.send_ns;
		if (f.last.opt_len) {
			lumen_int_opt req;
			int len = -1;

			if (lumen_int_parse(f.last.opt.data(), f.last.opt_len, &req) == 0 &&
			    !(req.flags & LUMEN_INT_FLAG_ECHO))
				len = lumen_int_write_echo(a.echo.data(), (__u32)a.echo.size(), &req);
			else
				counters_.int_parse_errors++;
			if (len > 0)
				a.echo_len = (std::uint8_t)len;
			else
				counters_.int_encode_errors++;
		}
		scratch_acks_.push_back(a);
		f.got = false;
		f.got_bytes = 0;
	}
	/* keep the return pipe sorted by arrival time */
	std::stable_sort(scratch_acks_.begin(), scratch_acks_.end(),
			 [](const Ack &x, const Ack &y) { return x.arrive_ns < y.arrive_ns; });
	for (const Ack &a : scratch_acks_)
		acks_.push_back(a);
}

void Simulator::account()
{
	std::uint64_t agg = 0, inflight_sum = 0;

	meas_steps_++;
	for (std::size_t i = 0; i < flows_.size(); i++) {
		Flow &f = flows_[i];

		if (active(i)) {
			agg += f.st.cwnd_bytes;
			f.cwnd_acc += (double)f.st.cwnd_bytes;
		}
		if (f.started)
			inflight_sum += inflight(i);
	}
	agg_cwnd_acc_ += (double)agg;
	inflight_acc_ += (double)inflight_sum;

	if (cfg_.trace_every_steps && step_index_ % cfg_.trace_every_steps == 0) {
		Sample s;

		s.t_ns = now_ + cfg_.step_ns;
		s.aggregate_cwnd = agg;
		s.queue = hops_[bottleneck_].queue;
		trace_.push_back(s);
	}
}

void Simulator::step()
{
	deliver_acks();
	send();
	while (!forward_.empty() && forward_.front().event_ns <= now_) {
		hops_[0].queue += forward_.front().bytes;
		hops_[0].fifo.push_back(forward_.front());
		forward_.pop_front();
	}
	for (std::size_t j = 0; j < hops_.size(); j++) {
		serve(j, scratch_out_);
		if (j + 1 < hops_.size()) {
			for (const Chunk &c : scratch_out_) {
				hops_[j + 1].queue += c.bytes;
				hops_[j + 1].fifo.push_back(c);
			}
		} else {
			receive(scratch_out_);
		}
	}
	account();
	now_ += cfg_.step_ns;
	step_index_++;
}

void Simulator::begin_measure()
{
	meas_start_ns_ = now_;
	meas_steps_ = 0;
	agg_cwnd_acc_ = 0;
	inflight_acc_ = 0;
	for (Hop &h : hops_) {
		h.served_acc = 0;
		h.queue_acc = 0;
		h.queue_max = 0;
	}
	for (Flow &f : flows_) {
		f.bottleneck_bytes_acc = 0;
		f.cwnd_acc = 0;
	}
}

Measurement Simulator::end_measure() const
{
	Measurement m;
	const double steps = meas_steps_ ? (double)meas_steps_ : 1.0;

	m.duration_ns = now_ - meas_start_ns_;
	m.steps = meas_steps_;
	for (const Hop &h : hops_)
		m.avg_hop_queue.push_back(h.queue_acc / steps);
	m.avg_queue = m.avg_hop_queue[bottleneck_];
	m.max_queue = hops_[bottleneck_].queue_max;
	m.avg_aggregate_cwnd = agg_cwnd_acc_ / steps;
	m.avg_inflight = inflight_acc_ / steps;
	const double capacity = (double)bottleneck_mbps() * (double)m.duration_ns / 8000.0;
	m.utilization = capacity > 0 ? (double)hops_[bottleneck_].served_acc / capacity : 0;
	for (const Flow &f : flows_) {
		m.avg_cwnd.push_back(f.cwnd_acc / steps);
		m.bytes.push_back(f.bottleneck_bytes_acc);
		m.throughput_gbps.push_back(m.duration_ns ? (double)f.bottleneck_bytes_acc * 8.0 / (double)m.duration_ns
							  : 0.0);
	}
	return m;
}

} // namespace lumen::fluid
