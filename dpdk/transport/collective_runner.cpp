// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// dpdk/transport/collective_runner.cpp - one rank of a collective on the
// engine (collective_runner.h).
#include "transport/collective_runner.h"

#include <algorithm>
#include <cstring>

namespace lumen::dp
{

namespace
{

// The user word of a message: step, transfer index in the step, part.
constexpr uint64_t user_of(size_t step, uint32_t transfer, uint32_t part)
{
	return (uint64_t)step << 40 | (uint64_t)transfer << 8 | part;
}

} // namespace

uint32_t CollectiveRank::conn_id(uint32_t ranks, uint32_t channels, uint32_t src, uint32_t dst, uint32_t channel,
				 uint32_t part)
{
	return 1 + (((src * ranks + dst) * channels + channel) * kMaxParts + part);
}

CollectiveRank::CollectiveRank(const CollectiveSchedule &schedule, uint32_t rank, Engine &engine,
			       std::vector<uint32_t> ips, const Mac &gateway, StepBarrier &barrier)
    : schedule_(schedule), rank_(rank), ranks_(schedule.params.ranks), channels_(schedule.params.channels),
      engine_(engine), ips_(std::move(ips)), gateway_(gateway), barrier_(barrier), stats_(schedule.steps.size())
{
	CollectiveLayout l = collective_layout(schedule.params, rank);
	buf_.send.assign(l.send_bytes, 0);
	buf_.recv.assign(l.recv_bytes, 0);
	engine_.on_complete = [this](Connection &c, const Completion &d) { on_complete(c, d); };
}

void CollectiveRank::set_planner(std::vector<uint32_t> leaf_of_rank, uint32_t uplinks, uint32_t max_subflows, PinFn pin)
{
	leaf_of_rank_ = std::move(leaf_of_rank);
	uplinks_ = uplinks;
	max_subflows_ = max_subflows;
	pin_ = std::move(pin);
}

/* The outgoing parts of `sender` in a step: whole flows, or the planner's
 * subflows (by their flow's transfer). */
std::string CollectiveRank::plan_step(size_t step, uint32_t sender, std::vector<Part> *out) const
{
	const std::vector<Transfer> &ts = schedule_.steps[step];

	out->clear();
	if (!uplinks_) {
		for (uint32_t i = 0; i < ts.size(); i++)
			if (ts[i].src == sender && ts[i].dst != sender)
				out->push_back(Part{i, 0, 0, ts[i].bytes, (uint32_t)kLocalUplink});
		return "";
	}
	StepDemands sd;
	if (std::string e = step_demands(ts, sender, leaf_of_rank_, &sd); !e.empty())
		return e;
	PlanParams pp;
	pp.uplinks = uplinks_;
	pp.local_leaf = leaf_of_rank_[sender];
	pp.max_subflows = max_subflows_;
	Plan plan;
	if (std::string e = ethereal_plan(pp, sd.demands, &plan); !e.empty())
		return e;
	for (const PlanSubflow &s : plan.subflows) {
		if (s.part >= kMaxParts)
			return "a flow split into more than " + std::to_string(kMaxParts) + " parts";
		out->push_back(
			Part{sd.transfers[s.demand][s.flow], s.part, s.offset, (uint32_t)s.bytes, (uint32_t)s.uplink});
	}
	return "";
}

/* The connection of a part of t: ours to its destination (we send t) or
 * the one we accepted from its source; opened on first use. */
Connection *CollectiveRank::conn(const Transfer &t, uint32_t part)
{
	uint32_t id = conn_id(ranks_, channels_, t.src, t.dst, t.channel, part);
	bool out = t.src == rank_;
	Connection *&c = (out ? out_ : in_)[id];
	if (!c)
		c = out ? engine_.connect(ips_[t.dst], gateway_, id, 0) : engine_.accept(ips_[t.src], gateway_, id, 0);
	return c;
}

uint8_t *CollectiveRank::bytes_of(Buffer b, uint64_t off)
{
	return (b == Buffer::kSend ? buf_.send.data() : buf_.recv.data()) + off;
}

std::string CollectiveRank::open(uint64_t now_ns)
{
	/* the data connections' ids and the network barrier's above them */
	if ((uint64_t)ranks_ * ranks_ * (channels_ * kMaxParts + 1) >= (1u << 31))
		return "too many ranks and channels for connection ids";
	if (schedule_.steps.empty())
		finished_ = true;
	else if (std::string e = post_receives(0, now_ns); !e.empty())
		return e;
	/* the step's buffers are posted: the barrier may say so */
	return barrier_.open(now_ns);
}

/* Step s's receive buffers: every part of every flow to this rank, where
 * it goes (copies) or into staging (sums). The sender's parts are its plan;
 * the receiver computes the same plan from the sender's side (the planner
 * is deterministic), so both agree on every part's bytes. */
std::string CollectiveRank::post_receives(size_t step, uint64_t now_ns)
{
	const std::vector<Transfer> &ts = schedule_.steps[step];
	uint64_t staging = 0;

	incoming_.clear();
	next_apply_ = 0;
	stats_[step].flow_done_ns.clear();
	std::vector<uint32_t> index_of(ts.size(), UINT32_MAX);
	for (uint32_t i = 0; i < ts.size(); i++) {
		const Transfer &t = ts[i];
		if (t.dst != rank_ || t.src == rank_)
			continue;
		index_of[i] = (uint32_t)incoming_.size();
		incoming_.push_back(Incoming{i, 0, staging, false});
		if (t.op != TransferOp::kCopy)
			staging += t.bytes;
	}
	if (staging_.size() < staging)
		staging_.resize(staging);
	/* the senders' plans, for the parts of the flows to us */
	std::vector<uint32_t> senders;
	for (const Incoming &in : incoming_)
		senders.push_back(ts[in.transfer].src);
	std::sort(senders.begin(), senders.end());
	senders.erase(std::unique(senders.begin(), senders.end()), senders.end());
	for (uint32_t src : senders) {
		std::vector<Part> parts;
		if (std::string e = plan_step(step, src, &parts); !e.empty())
			return e;
		for (const Part &p : parts) {
			const Transfer &t = ts[p.transfer];
			if (t.dst != rank_)
				continue;
			Incoming &in = incoming_[index_of[p.transfer]];
			Connection *c = conn(t, p.part);
			if (!c)
				return "cannot accept a connection (max_conns?)";
			uint8_t *at = t.op == TransferOp::kCopy ? bytes_of(t.dst_buffer, t.dst_offset + p.offset)
								: staging_.data() + in.staging + p.offset;
			PostError e =
				engine_.post_recv(*c, RecvWr{at, p.bytes, user_of(step, p.transfer, p.part)}, now_ns);
			if (e != PostError::kOk)
				return std::string("post_recv: ") + post_error_name(e);
			in.parts_left++;
		}
	}
	step_ = step;
	sending_ = false;
	finished_ = false;
	return "";
}

void CollectiveRank::post_sends(size_t step, uint64_t now_ns)
{
	const std::vector<Transfer> &ts = schedule_.steps[step];
	std::vector<Part> parts;
	RankStepStats &st = stats_[step];

	st.start_ns = now_ns;
	st.at_start = engine_.totals();
	engine_.take_reorder_peak(); /* from here: this step's */
	sending_ = true;
	sends_left_ = 0;
	/* local copies: the source is as the step found it */
	for (const Transfer &t : ts)
		if (t.src == rank_ && t.dst == rank_)
			std::memmove(bytes_of(t.dst_buffer, t.dst_offset), bytes_of(t.src_buffer, t.src_offset),
				     t.bytes);
	if (std::string e = plan_step(step, rank_, &parts); !e.empty()) {
		error_ = e;
		return;
	}
	for (const Part &p : parts) {
		const Transfer &t = ts[p.transfer];
		Connection *c = conn(t, p.part);
		if (!c) {
			error_ = "cannot open a connection (max_conns?)";
			return;
		}
		if (p.uplink != (uint32_t)kLocalUplink && pin_ && !pin_(*c, t.dst, p.uplink)) {
			error_ = "no path known to rank " + std::to_string(t.dst) + " on uplink " +
				 std::to_string(p.uplink);
			return;
		}
		SendWr wr{bytes_of(t.src_buffer, t.src_offset + p.offset), p.bytes, user_of(step, p.transfer, p.part),
			  t.src_buffer == Buffer::kSend ? send_region_ : recv_region_};
		PostError e = engine_.post_send(*c, wr, now_ns);
		if (e != PostError::kOk) {
			error_ = std::string("post_send: ") + post_error_name(e);
			return;
		}
		sends_left_++;
		st.bytes_sent += p.bytes;
		st.messages_sent++;
		st.subflows += p.bytes < t.bytes; /* a part of a split flow */
	}
	maybe_finish(now_ns);
}

/* Completed incoming transfers, applied in the schedule's order (sums in
 * the reference's order; copies are in place already). */
void CollectiveRank::apply_ready()
{
	const std::vector<Transfer> &ts = schedule_.steps[step_];

	while (next_apply_ < incoming_.size() && incoming_[next_apply_].parts_left == 0) {
		Incoming &in = incoming_[next_apply_++];
		const Transfer &t = ts[in.transfer];
		if (t.op != TransferOp::kCopy)
			add_elements(bytes_of(t.dst_buffer, t.dst_offset), staging_.data() + in.staging, t.bytes, t.op);
		in.applied = true;
	}
}

void CollectiveRank::on_complete(Connection &c, const Completion &d)
{
	if (barrier_.on_complete(c, d))
		return;
	if (d.status != MsgStatus::kOk) {
		if (error_.empty())
			error_ = std::string("a message ") + msg_status_name(d.status);
		return;
	}
	size_t step = (size_t)(d.user >> 40);
	uint32_t transfer = (uint32_t)(d.user >> 8 & 0xFFFFFFFF), part = (uint32_t)(d.user & 0xFF);
	(void)part;
	if (step != step_)
		return; /* cannot happen: a step ends when all its messages did */
	if (d.kind == Completion::kSend) {
		sends_left_--;
	} else {
		for (Incoming &in : incoming_)
			if (in.transfer == transfer && in.parts_left) {
				if (--in.parts_left == 0)
					stats_[step].flow_done_ns.push_back(d.done_ns);
				stats_[step].bytes_received += d.len;
				break;
			}
		apply_ready();
	}
	maybe_finish(d.done_ns);
}

void CollectiveRank::maybe_finish(uint64_t now_ns)
{
	if (!sending_ || finished_ || sends_left_ || next_apply_ < incoming_.size())
		return;
	const size_t step = step_;
	RankStepStats &st = stats_[step];
	const ConnStats t = engine_.totals();
	st.end_ns = now_ns;
	st.retransmits = t.retransmits - st.at_start.retransmits;
	st.nacks = t.nacks_rcvd - st.at_start.nacks_rcvd;
	st.timeouts = t.timeouts - st.at_start.timeouts;
	st.reroutes = t.reroutes - st.at_start.reroutes;
	st.reorder_max = engine_.take_reorder_peak();
	finished_ = true;
	/* the next step's buffers first: the barrier's word lets the others send into them */
	if (step + 1 < schedule_.steps.size()) {
		if (std::string e = post_receives(step + 1, now_ns); !e.empty()) {
			error_ = e;
			return;
		}
	} else {
		step_ = schedule_.steps.size();
	}
	barrier_.finish(step, now_ns);
}

void CollectiveRank::tick(uint64_t now_ns)
{
	if (error_.empty())
		error_ = barrier_.error();
	if (step_ >= schedule_.steps.size() || sending_ || !error_.empty())
		return;
	if (step_ == 0 ? barrier_.ready() : barrier_.passed(step_ - 1))
		post_sends(step_, now_ns);
}

std::string CollectiveRank::waiting() const
{
	if (!error_.empty())
		return error_;
	const size_t n = schedule_.steps.size();
	std::string at =
		step_ >= n ? "after the last step" : "at step " + std::to_string(step_) + " of " + std::to_string(n);
	std::string b = barrier_.waiting();
	if (!b.empty())
		return at + ": " + b;
	if (step_ >= n)
		return done() ? "" : at;
	if (!sending_)
		return at + ": waiting for the barrier";
	return at + ": " + std::to_string(sends_left_) + " send(s) unacknowledged, " +
	       std::to_string(incoming_.size() - next_apply_) + " incoming flow(s) incomplete";
}

} // namespace lumen::dp
