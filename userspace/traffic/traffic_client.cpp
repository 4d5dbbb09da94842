// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/traffic/traffic_client.cpp - `lumen traffic client`: starts flows
// as the workload says (long, Poisson, incast), drives each through
// connect -> header + payload -> (half-close) -> completion on one io_uring,
// samples TCP_INFO on a timer and writes the records.
//
// Each flow has at most one operation in flight, so its completion alone
// decides the next step. Timers are io_uring absolute timeouts on
// CLOCK_MONOTONIC; all time-driven work (flow starts, samples, the end of
// long flows, progress) runs after every batch of completions, the timers
// only make sure the loop wakes up in time.
#include "base/error.h"
#include "base/interrupt.h"
#include "base/system.h"
#include "traffic/traffic.h"
#include "traffic/traffic_records.h"
#include "traffic/traffic_ring.h"
#include "traffic/traffic_wire.h"
#include "traffic/workload.h"

#include <linux/tcp.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <set>
#include <vector>

namespace lumen
{
namespace
{

constexpr std::size_t kSendChunk = 256 * 1024;
constexpr unsigned kRingEntries = 1024;
constexpr std::uint64_t kSecondNs = 1'000'000'000;
constexpr std::uint64_t kAbortGraceNs = 2 * kSecondNs; // in-flight ops after an abort
constexpr std::uint64_t kMaxStartDelayNs = 3600 * kSecondNs;

enum ClientOp : std::uint8_t {
	kOpConnect = 1,
	kOpSend,
	kOpShutdown,
	kOpRecv,
	kOpCancel,
	kOpTimer,
};

enum class FlowState {
	Connecting,
	Sending,
	HalfClosing, // long flow: shutdown(SHUT_WR) in flight
	AwaitingCompletion,
	Done,
};

struct Flow {
	ClientFlowRecord rec;
	std::size_t dst = 0;
	std::uint64_t size = 0; // payload; 0 = long flow
	int fd = -1;
	FlowState state = FlowState::Connecting;
	bool op_in_flight = false;
	std::uint8_t op = 0; // the ClientOp in flight
	bool stop = false; // long flow: finish after the current send
	std::optional<std::string> abort_status; // set when aborted
	std::uint64_t stream_sent = 0; // header + payload bytes sent
	std::uint8_t header[kTrafficHeaderSize];
	std::uint8_t completion[kTrafficCompletionSize];
	std::size_t completion_got = 0;
	iovec iov[2];
	msghdr msg;

	std::uint64_t payload_sent() const
	{
		return stream_sent > kTrafficHeaderSize ? stream_sent - kTrafficHeaderSize : 0;
	}
};

// One flow to start: when, where, how big.
struct Arrival {
	std::uint64_t at_ns;
	std::size_t dst;
	std::uint64_t size; // 0 = long flow
};

// The workload's flow starts, generated lazily in time order.
class ArrivalSchedule
{
      public:
	ArrivalSchedule(const TrafficClientOptions &o, std::uint64_t start_ns, const FlowSizeCdf *cdf)
	    : o_(o), start_ns_(start_ns), cdf_(cdf), rng_(o.seed)
	{
		if (o.workload == TrafficWorkload::Poisson) {
			rate_ = poisson_rate_per_s(o.load, static_cast<double>(o.link_rate_bps), cdf->mean_bytes());
			next_poisson_ns_ = start_ns_ + interval_ns();
		}
	}
	bool done() const
	{
		switch (o_.workload) {
		case TrafficWorkload::Long:
			return issued_ >= o_.long_flows;
		case TrafficWorkload::Poisson:
			return next_poisson_ns_ >= start_ns_ + o_.duration_ns ||
			       (o_.max_flows > 0 && issued_ >= o_.max_flows);
		case TrafficWorkload::Incast:
			return issued_ >= std::uint64_t{o_.bursts} * o_.to.size();
		}
		return true;
	}
	std::uint64_t next_ns() const
	{
		switch (o_.workload) {
		case TrafficWorkload::Long:
			return start_ns_;
		case TrafficWorkload::Poisson:
			return next_poisson_ns_;
		case TrafficWorkload::Incast:
			return start_ns_ + (issued_ / o_.to.size()) * o_.period_ns;
		}
		return start_ns_;
	}
	Arrival pop()
	{
		Arrival a{next_ns(), 0, 0};
		switch (o_.workload) {
		case TrafficWorkload::Long:
			a.dst = issued_ % o_.to.size();
			break;
		case TrafficWorkload::Poisson:
			// fixed draw order (size, destination, next gap): a seed
			// always gives the same flows
			a.size = cdf_->sample_bytes(rng_.uniform());
			a.dst = o_.to.size() == 1 ? 0 : rng_.below(o_.to.size());
			next_poisson_ns_ += interval_ns();
			break;
		case TrafficWorkload::Incast:
			a.dst = issued_ % o_.to.size();
			a.size = o_.incast_size;
			break;
		}
		issued_++;
		return a;
	}
	double rate_per_s() const
	{
		return rate_;
	}

      private:
	std::uint64_t interval_ns()
	{
		double s = exponential_interval_s(rate_, rng_.uniform());
		return static_cast<std::uint64_t>(s * 1e9);
	}

	const TrafficClientOptions &o_;
	std::uint64_t start_ns_;
	const FlowSizeCdf *cdf_;
	Rng rng_;
	double rate_ = 0;
	std::uint64_t next_poisson_ns_ = 0;
	std::uint64_t issued_ = 0;
};

std::string why_errno(const char *what, int err)
{
	return std::string(what) + ": " + std::strerror(err);
}

// Reads TCP_INFO; false when the socket has none (closed, not TCP).
bool read_tcp_info(int fd, tcp_info *info)
{
	std::memset(info, 0, sizeof(*info));
	socklen_t len = sizeof(*info);
	return getsockopt(fd, IPPROTO_TCP, TCP_INFO, info, &len) == 0;
}

std::uint64_t bytes_per_s_to_bps(std::uint64_t v)
{
	// ~0 = "no pacing rate"; also guards the multiplication
	return v >= UINT64_MAX / 8 ? 0 : v * 8;
}

std::string socket_cc(int fd)
{
	char name[16] = {}; // TCP_CA_NAME_MAX (kernel-internal)
	socklen_t len = sizeof(name);
	if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &len) != 0)
		return "unknown";
	return std::string(name, strnlen(name, sizeof(name)));
}

// Sets --cc on a scratch socket before any flow starts, so a refused
// algorithm is one clear error instead of a run of failed flows.
void probe_congestion_control(const std::string &cc, int family)
{
	int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		throw Error(std::string("socket: ") + std::strerror(errno));
	int rc = setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc.data(), static_cast<socklen_t>(cc.size()));
	int err = errno;
	::close(fd);
	if (rc == 0)
		return;
	std::string hint;
	try {
		hint = " (available: " + read_sysctl("net.ipv4.tcp_available_congestion_control") +
		       "; allowed without CAP_NET_ADMIN: " + read_sysctl("net.ipv4.tcp_allowed_congestion_control") +
		       ")";
	} catch (const Error &) {
	}
	throw Error("congestion control '" + cc + "' refused by the kernel: " + std::strerror(err) + hint);
}

class Client
{
      public:
	explicit Client(const TrafficClientOptions &o);
	~Client();
	// Runs the workload from `start_at` (CLOCK_MONOTONIC; none: now).
	int run(std::optional<std::uint64_t> start_at);

      private:
	// time-driven work
	void run_due_work(std::uint64_t now);
	void start_due_flows(std::uint64_t now);
	void sample_open_flows(std::uint64_t now);
	void stop_long_flows();
	void print_progress(std::uint64_t now);
	void abort_open_flows(const std::string &status);
	void arm_timer(std::uint64_t now);
	std::uint64_t next_deadline() const;
	bool finished() const;

	// the flow state machine
	void start_flow(const Arrival &a);
	void on_completion(std::uint64_t ud, int res);
	void on_connect(Flow &f, int res);
	void on_send(Flow &f, int res);
	void on_shutdown(Flow &f, int res);
	void on_recv(Flow &f, int res);
	io_uring_sqe *submit_op(Flow &f, ClientOp op);
	void send_next(Flow &f);
	void post_recv_completion(Flow &f);
	void finish(Flow &f, const std::string &status);
	void write_sample(const Flow &f, std::uint64_t now);

	void write_records();
	TrafficSummary summary() const;

	const TrafficClientOptions &o_;
	std::optional<FlowSizeCdf> cdf_;
	std::optional<ArrivalSchedule> schedule_;
	std::vector<std::uint8_t> payload_; // what every flow sends, shared
	std::deque<Flow> flows_; // index = flow id; stable addresses
	std::vector<std::size_t> open_; // flows not Done (compacted lazily)
	std::size_t open_count_ = 0;
	std::unique_ptr<CsvWriter> samples_;
	std::set<std::uint64_t> armed_timers_;
	std::uint64_t start_ns_ = 0;
	std::uint64_t stop_ns_ = 0; // long flows end here
	std::uint64_t next_sample_ns_ = 0;
	std::uint64_t next_progress_ns_ = 0;
	std::uint64_t drain_deadline_ns_ = 0; // set once the last flow started
	std::uint64_t abort_deadline_ns_ = 0; // set by an abort
	bool stopping_ = false; // long flows told to stop
	std::uint64_t bytes_sent_ = 0, bytes_at_last_progress_ = 0;
	std::uint64_t completed_ = 0, errors_ = 0;
	// last: destroyed (cancelling what is in flight) before the flows
	// and buffers the kernel may still read or write
	Ring ring_;
};

Client::Client(const TrafficClientOptions &o) : o_(o), payload_(kSendChunk, 0), ring_(kRingEntries)
{
	// a recognisable, non-zero pattern helps when looking at captures
	for (std::size_t i = 0; i < payload_.size(); i++)
		payload_[i] = static_cast<std::uint8_t>('a' + i % 26);
	if (o.workload == TrafficWorkload::Poisson)
		cdf_ = load_cdf_file(resolve_workload_path(o.poisson_workload));
	if (o.cc)
		probe_congestion_control(*o.cc, o.to.front().addr.ss_family);
	if (o.samples_csv)
		samples_ = std::make_unique<CsvWriter>(*o.samples_csv, kSamplesCsvHeader, o.new_files);
}

Client::~Client()
{
	for (auto &f : flows_)
		if (f.fd >= 0)
			::close(f.fd);
}

// ---------------------------------------------------------------------
// Main loop

int Client::run(std::optional<std::uint64_t> start_at)
{
	std::uint64_t now = monotonic_ns();
	start_ns_ = start_at.value_or(now);
	if (start_ns_ > now + kMaxStartDelayNs)
		throw Error("--start-at is more than an hour ahead of CLOCK_MONOTONIC (now " + std::to_string(now) +
			    ")");
	if (start_ns_ + kSecondNs < now && !o_.quiet)
		std::fprintf(stderr, "lumen traffic: --start-at is %.1f s in the past, starting now\n",
			     static_cast<double>(now - start_ns_) / 1e9);
	start_ns_ = std::max(start_ns_, now);
	stop_ns_ = start_ns_ + o_.duration_ns;
	next_sample_ns_ = start_ns_;
	next_progress_ns_ = start_ns_ + kSecondNs;
	schedule_.emplace(o_, start_ns_, cdf_ ? &*cdf_ : nullptr);
	if (!o_.quiet && o_.workload == TrafficWorkload::Poisson)
		std::fprintf(stderr, "lumen traffic: %s, mean %.0f bytes, %.1f flows/s for load %.2f of %.0f Mbit/s\n",
			     o_.poisson_workload.c_str(), cdf_->mean_bytes(), schedule_->rate_per_s(), o_.load,
			     static_cast<double>(o_.link_rate_bps) / 1e6);

	while (!finished()) {
		now = monotonic_ns();
		if (interrupted() && !abort_deadline_ns_)
			abort_open_flows(error_status("interrupted"));
		if (abort_deadline_ns_ && now >= abort_deadline_ns_)
			break; // in-flight operations did not end: the ring's teardown cancels them
		run_due_work(now);
		if (finished())
			break;
		arm_timer(now);
		if (ring_.submit_and_wait())
			ring_.drain([this](std::uint64_t ud, int res, unsigned) { on_completion(ud, res); });
	}
	for (auto &f : flows_)
		if (f.state != FlowState::Done)
			finish(f, f.abort_status.value_or(error_status("interrupted")));
	write_records();
	TrafficSummary s = summary();
	if (o_.json)
		std::printf("%s\n", summary_json(s).c_str());
	else
		std::printf("%s", summary_text(s).c_str());
	std::fflush(stdout);
	return s.errors == 0 && s.flows > 0 && !interrupted() ? 0 : 1;
}

bool Client::finished() const
{
	bool no_more = schedule_->done() || abort_deadline_ns_ != 0;
	return no_more && open_count_ == 0;
}

void Client::run_due_work(std::uint64_t now)
{
	if (!abort_deadline_ns_)
		start_due_flows(now);
	if (o_.workload == TrafficWorkload::Long && !stopping_ && now >= stop_ns_)
		stop_long_flows();
	if (schedule_->done() && !drain_deadline_ns_) {
		// long flows run until stop_ns_; the others drain from now on
		std::uint64_t base = o_.workload == TrafficWorkload::Long ? std::max(now, stop_ns_) : now;
		drain_deadline_ns_ = base + o_.drain_timeout_ns;
	}
	if (drain_deadline_ns_ && now >= drain_deadline_ns_ && !abort_deadline_ns_ && open_count_ > 0)
		abort_open_flows(error_status("timeout: still open " + std::to_string(o_.drain_timeout_ns / 1'000'000) +
					      " ms after the workload ended (--drain-timeout)"));
	if (samples_ && now >= next_sample_ns_) {
		sample_open_flows(now);
		// skip missed ticks rather than bursting to catch up
		next_sample_ns_ += o_.sample_ns * (1 + (now - next_sample_ns_) / o_.sample_ns);
	}
	if (now >= next_progress_ns_) {
		print_progress(now);
		next_progress_ns_ += kSecondNs * (1 + (now - next_progress_ns_) / kSecondNs);
	}
}

std::uint64_t Client::next_deadline() const
{
	std::uint64_t d = next_progress_ns_;
	if (!schedule_->done() && !abort_deadline_ns_)
		d = std::min(d, schedule_->next_ns());
	if (samples_)
		d = std::min(d, next_sample_ns_);
	if (o_.workload == TrafficWorkload::Long && !stopping_)
		d = std::min(d, stop_ns_);
	if (drain_deadline_ns_ && !abort_deadline_ns_) // once passed, it has aborted
		d = std::min(d, drain_deadline_ns_);
	if (abort_deadline_ns_)
		d = std::min(d, abort_deadline_ns_);
	return d;
}

void Client::arm_timer(std::uint64_t now)
{
	std::uint64_t d = std::max(next_deadline(), now);
	// one timer at or before the next deadline is enough; later ones
	// still armed fire harmlessly
	if (!armed_timers_.empty() && *armed_timers_.begin() <= d)
		return;
	armed_timers_.insert(d);
	ring_.arm_timer_at(d, make_user_data(0, kOpTimer));
}

void Client::start_due_flows(std::uint64_t now)
{
	while (!schedule_->done() && schedule_->next_ns() <= now) {
		start_flow(schedule_->pop());
		if (interrupted())
			return;
	}
}

void Client::stop_long_flows()
{
	stopping_ = true;
	for (auto &f : flows_) {
		if (f.state == FlowState::Done)
			continue;
		f.stop = true;
		// a flow between operations cannot exist: each Sending flow has
		// its send in flight and checks `stop` when it completes
	}
}

void Client::abort_open_flows(const std::string &status)
{
	abort_deadline_ns_ = monotonic_ns() + kAbortGraceNs;
	for (auto &f : flows_) {
		if (f.state == FlowState::Done)
			continue;
		f.abort_status = status;
		if (!f.op_in_flight) {
			finish(f, status);
			continue;
		}
		// ends the operation in flight (connect, send, recv) promptly:
		// the shutdown wakes a blocked socket, the cancel the ring
		::shutdown(f.fd, SHUT_RDWR);
		io_uring_prep_cancel64(ring_.prepare(make_user_data(f.rec.flow_id, kOpCancel)),
				       make_user_data(f.rec.flow_id, f.op), 0);
	}
}

void Client::print_progress(std::uint64_t now)
{
	if (o_.quiet)
		return;
	double mbps = static_cast<double>(bytes_sent_ - bytes_at_last_progress_) * 8 / 1e6;
	bytes_at_last_progress_ = bytes_sent_;
	std::fprintf(stderr, "lumen traffic: %5.1f s  started %zu  done %llu  errors %llu  open %zu  %.1f Mbit/s\n",
		     static_cast<double>(now - start_ns_) / 1e9, flows_.size(),
		     static_cast<unsigned long long>(completed_), static_cast<unsigned long long>(errors_), open_count_,
		     mbps);
}

void Client::sample_open_flows(std::uint64_t now)
{
	std::size_t kept = 0;
	for (std::size_t idx : open_) {
		Flow &f = flows_[idx];
		if (f.state == FlowState::Done)
			continue;
		open_[kept++] = idx;
		if (f.state != FlowState::Connecting)
			write_sample(f, now);
	}
	open_.resize(kept);
}

void Client::write_sample(const Flow &f, std::uint64_t now)
{
	tcp_info info;
	if (!samples_ || !read_tcp_info(f.fd, &info))
		return;
	TcpSample s;
	s.flow_id = f.rec.flow_id;
	s.t_ns = now;
	s.bytes_acked = info.tcpi_bytes_acked;
	s.cwnd = info.tcpi_snd_cwnd;
	s.srtt_us = info.tcpi_rtt;
	s.retrans = info.tcpi_total_retrans;
	s.pacing_rate_bps = bytes_per_s_to_bps(info.tcpi_pacing_rate);
	s.delivery_rate_bps = bytes_per_s_to_bps(info.tcpi_delivery_rate);
	samples_->row(sample_csv_row(o_.label, s));
}

// ---------------------------------------------------------------------
// Flow state machine

void Client::start_flow(const Arrival &a)
{
	Flow &f = flows_.emplace_back();
	f.rec.flow_id = flows_.size() - 1;
	f.rec.dst = o_.to[a.dst].text;
	f.rec.kind = traffic_workload_name(o_.workload);
	f.rec.size_bytes = a.size;
	f.rec.start_ns = monotonic_ns(); // not `now`: many flows may start in one pass
	f.dst = a.dst;
	f.size = a.size;
	open_.push_back(f.rec.flow_id);
	open_count_++;
	encode_header(TrafficHeader{0, a.size}, f.header);

	const Endpoint &ep = o_.to[a.dst];
	f.fd = ::socket(ep.addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (f.fd < 0) {
		finish(f, error_status(why_errno("socket", errno)));
		return;
	}
	if (o_.cc &&
	    setsockopt(f.fd, IPPROTO_TCP, TCP_CONGESTION, o_.cc->data(), static_cast<socklen_t>(o_.cc->size())) != 0) {
		finish(f, error_status(why_errno(("TCP_CONGESTION " + *o_.cc).c_str(), errno)));
		return;
	}
	f.rec.cc = socket_cc(f.fd);
	// the flow's last partial segment must not wait for an ACK (Nagle):
	// that would add up to an RTT to short flows' FCT
	int one = 1;
	setsockopt(f.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	io_uring_prep_connect(submit_op(f, kOpConnect), f.fd, reinterpret_cast<const sockaddr *>(&ep.addr), ep.len);
}

io_uring_sqe *Client::submit_op(Flow &f, ClientOp op)
{
	f.op_in_flight = true;
	f.op = op;
	return ring_.prepare(make_user_data(f.rec.flow_id, op));
}

void Client::on_completion(std::uint64_t ud, int res)
{
	std::uint8_t op = user_data_op(ud);
	if (op == kOpTimer) {
		if (!armed_timers_.empty())
			armed_timers_.erase(armed_timers_.begin());
		return;
	}
	if (op == kOpCancel)
		return;
	std::uint64_t id = user_data_id(ud);
	if (id >= flows_.size())
		return;
	Flow &f = flows_[id];
	f.op_in_flight = false;
	if (f.state == FlowState::Done) {
		// finished while this operation was in flight: now the
		// descriptor can go
		if (f.fd >= 0)
			::close(f.fd);
		f.fd = -1;
		return;
	}
	if (f.abort_status) {
		finish(f, *f.abort_status);
		return;
	}
	switch (op) {
	case kOpConnect:
		on_connect(f, res);
		break;
	case kOpSend:
		on_send(f, res);
		break;
	case kOpShutdown:
		on_shutdown(f, res);
		break;
	case kOpRecv:
		on_recv(f, res);
		break;
	default:
		break;
	}
}

void Client::on_connect(Flow &f, int res)
{
	if (res < 0) {
		finish(f, error_status(why_errno("connect", -res)));
		return;
	}
	f.state = FlowState::Sending;
	send_next(f);
}

void Client::send_next(Flow &f)
{
	bool header_done = f.stream_sent >= kTrafficHeaderSize;
	if (f.size == 0 && f.stop && header_done) {
		// long flow over: half-close so the server sees the end and
		// answers with what it received
		f.state = FlowState::HalfClosing;
		io_uring_prep_shutdown(submit_op(f, kOpShutdown), f.fd, SHUT_WR);
		return;
	}
	if (f.size > 0 && f.payload_sent() == f.size) {
		post_recv_completion(f);
		return;
	}
	std::uint64_t payload_left = f.size == 0 ? kSendChunk : f.size - f.payload_sent();
	std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(kSendChunk, payload_left));
	io_uring_sqe *sqe = submit_op(f, kOpSend);
	if (!header_done) {
		// header and first payload bytes in one send: no tiny segment
		f.iov[0] = {f.header + f.stream_sent, kTrafficHeaderSize - f.stream_sent};
		f.iov[1] = {payload_.data(), (f.size == 0 && f.stop) ? 0 : chunk};
		f.msg = {};
		f.msg.msg_iov = f.iov;
		f.msg.msg_iovlen = 2;
		io_uring_prep_sendmsg(sqe, f.fd, &f.msg, MSG_NOSIGNAL);
	} else {
		io_uring_prep_send(sqe, f.fd, payload_.data(), chunk, MSG_NOSIGNAL);
	}
}

void Client::on_send(Flow &f, int res)
{
	if (res < 0) {
		finish(f, error_status(why_errno("send", -res)));
		return;
	}
	std::uint64_t before = f.payload_sent();
	f.stream_sent += static_cast<std::uint64_t>(res);
	bytes_sent_ += f.payload_sent() - before;
	send_next(f);
}

void Client::on_shutdown(Flow &f, int res)
{
	if (res < 0) {
		finish(f, error_status(why_errno("shutdown", -res)));
		return;
	}
	post_recv_completion(f);
}

void Client::post_recv_completion(Flow &f)
{
	f.state = FlowState::AwaitingCompletion;
	io_uring_prep_recv(submit_op(f, kOpRecv), f.fd, f.completion + f.completion_got,
			   kTrafficCompletionSize - f.completion_got, 0);
}

void Client::on_recv(Flow &f, int res)
{
	if (res < 0) {
		finish(f, error_status(why_errno("recv", -res)));
		return;
	}
	if (res == 0) {
		finish(f, error_status("server closed the connection before the completion"));
		return;
	}
	f.completion_got += static_cast<std::size_t>(res);
	if (f.completion_got < kTrafficCompletionSize) {
		post_recv_completion(f);
		return;
	}
	std::uint64_t received = decode_completion(f.completion);
	f.rec.bytes = received;
	if (received != f.payload_sent()) {
		finish(f, error_status("server received " + std::to_string(received) + " of " +
				       std::to_string(f.payload_sent()) + " bytes"));
		return;
	}
	completed_++;
	finish(f, "ok");
}

void Client::finish(Flow &f, const std::string &status)
{
	if (f.state == FlowState::Done)
		return;
	std::uint64_t now = monotonic_ns();
	f.rec.end_ns = now;
	f.rec.status = status;
	if (f.size == 0)
		f.rec.size_bytes = f.payload_sent();
	if (status != "ok")
		errors_++;
	if (f.fd >= 0) {
		tcp_info info;
		if (read_tcp_info(f.fd, &info))
			f.rec.retrans = info.tcpi_total_retrans;
		// a last sample: flows shorter than --sample get one too
		if (f.state != FlowState::Connecting)
			write_sample(f, now);
		if (!f.op_in_flight) {
			::close(f.fd);
			f.fd = -1;
		}
	}
	f.state = FlowState::Done;
	open_count_--;
}

// ---------------------------------------------------------------------
// Records

void Client::write_records()
{
	if (samples_)
		samples_->close();
	if (!o_.flows_csv)
		return;
	CsvWriter out(*o_.flows_csv, kFlowsCsvHeader, o_.new_files);
	for (const auto &f : flows_)
		out.row(flow_csv_row(o_.label, f.rec, o_.link_rate_bps, o_.base_rtt_ns));
	out.close();
}

TrafficSummary Client::summary() const
{
	std::vector<ClientFlowRecord> recs;
	recs.reserve(flows_.size());
	for (const auto &f : flows_)
		recs.push_back(f.rec);
	TrafficSummary s = summarize(recs, o_.link_rate_bps, o_.base_rtt_ns);
	rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) == 0) {
		s.cpu_user_s = static_cast<double>(ru.ru_utime.tv_sec) + static_cast<double>(ru.ru_utime.tv_usec) / 1e6;
		s.cpu_sys_s = static_cast<double>(ru.ru_stime.tv_sec) + static_cast<double>(ru.ru_stime.tv_usec) / 1e6;
	}
	return s;
}

// One line from `fd` (up to `max` bytes, without its newline), read a byte
// at a time so nothing after it is consumed; none at end of input. Throws
// Interrupted on SIGINT/SIGTERM.
std::optional<std::string> read_line(int fd, std::size_t max)
{
	std::string line;
	for (;;) {
		throw_if_interrupted();
		struct pollfd p = {fd, POLLIN, 0};
		int n = ::poll(&p, 1, 100); // a signal between the check and poll waits 100 ms at most
		if (n < 0 && errno != EINTR)
			throw Error(why_errno("poll", errno));
		if (n <= 0)
			continue;
		char c;
		ssize_t got = ::read(fd, &c, 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			throw Error(why_errno("read", errno));
		if (got == 0)
			return std::nullopt;
		if (c == '\n')
			return line;
		if (line.size() >= max)
			throw Error("line longer than " + std::to_string(max) + " bytes");
		line += c;
	}
}

} // namespace

int run_traffic_client(const TrafficClientOptions &opts)
{
	install_interrupt_handlers();
	raise_open_file_limit();
	Client client(opts); // all set up: workload file, congestion control, files
	std::optional<std::uint64_t> start = opts.start_at_ns;
	if (opts.start_from_input) {
		// the start barrier: "ready" goes to the log the runner watches
		std::fprintf(stderr, "ready\n");
		std::fflush(stderr);
		auto line = read_line(STDIN_FILENO, 64);
		if (!line)
			throw Error("--start-from-input: standard input ended before a start time");
		start = parse_start_line(*line, "--start-from-input");
	}
	return client.run(start);
}

} // namespace lumen
