// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/lumend/control.h - lumend's control socket and its second
// thread.
//
// The protocol: a Unix stream socket (--control, /run/lumen/lumend.sock by
// default, mode 0660), one JSON request per line, one JSON answer per line,
// as many as the client likes on one connection:
//
//   {"cmd":"status"}     where the daemon stands: schedule, clock, quiet
//   {"cmd":"stats"}      its counters and the boundary error distribution
//   {"cmd":"schedule"}   the schedule in force, as its file has it
//   {"cmd":"demand"}     what this host offered to each node (demand.h)
//   {"cmd":"stage","file":PATH,"at":NS} (or "schedule":{...} for PATH),
//   {"cmd":"commit","version":V},
//   {"cmd":"abort","version":V}
//                        lumend's part in a schedule change at an instant
//                        (sched/change.h; daemon.h)
//
// Anything else is answered {"error":"..."} (not JSON, not an object, no
// "cmd", a key its command does not take, an unknown command), the
// connection staying open; a line longer than 1 MiB (a staged schedule of
// a few hundred nodes fits) is answered so and the connection closed.
//
// With --control-tcp ADDR:PORT the same protocol is served on TCP too, for
// a coordinator on another host, and every request there must carry the
// daemon's token ("token": the line of --control-token FILE); one without
// it, or with another, is answered {"error":"..."} and does nothing.
//
// Why a second thread: the slot engine spins up to the boundaries and must
// not wait for anybody; on a 2-core machine the control thread sleeps in
// io_uring_submit_and_wait on the other core, and only wakes for a
// request, a signal (signalfd: SIGHUP reloads, SIGINT/SIGTERM stop) or the
// stats log tick. It never blocks the engine: statistics come from the
// engine's snapshot (which the engine hands over with try_lock), and a new
// schedule is loaded, validated and turned into tables here, and handed
// over whole, to be applied after the next boundary.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <liburing.h>
#include <nlohmann/json.hpp>

#include "base/fd.h"

namespace lumen::lumend
{

// A command: the keys its request may have besides "cmd", and its answer
// to the request. A command without arguments is made from a function of
// nothing.
struct Handler {
	Handler() = default;
	template <class F, class = std::enable_if_t<std::is_invocable_r_v<nlohmann::json, F>>>
	Handler(F f) : run([f](const nlohmann::json &) { return f(); })
	{
	}
	Handler(std::vector<std::string> request_keys, std::function<nlohmann::json(const nlohmann::json &)> f)
	    : keys(std::move(request_keys)), run(std::move(f))
	{
	}
	std::vector<std::string> keys;
	std::function<nlohmann::json(const nlohmann::json &)> run;
};
using Handlers = std::map<std::string, Handler>;

constexpr size_t kMaxRequest = 1 << 20;

// One request line to its answer (one line of JSON, no newline). *ok: the
// request was understood (a handler's own failure still answers an error).
// token not empty: the request must carry it as "token" (a TCP client's).
std::string answer_line(std::string_view line, const Handlers &handlers, bool *ok = nullptr,
			const std::string &token = "");

struct ControlHooks {
	Handlers handlers;
	std::function<void(int signo)> on_signal;
	std::function<void()> on_tick; // every tick_ns (0: never)
	uint64_t tick_ns = 0;
};

class ControlLoop
{
      public:
	// Listens on path ("" : no socket, signals only) and reads signal_fd
	// (a signalfd). Error when a lumend already answers at path or the
	// socket cannot be made; a stale socket file is replaced. tcp
	// (ADDR:PORT, numeric) also listens there, for requests with token.
	ControlLoop(const std::string &path, int signal_fd, const std::string &tcp = "", const std::string &token = "");
	~ControlLoop(); // closes everything; removes the socket file if still ours
	ControlLoop(const ControlLoop &) = delete;
	ControlLoop &operator=(const ControlLoop &) = delete;

	// Serves until stop() (from any thread).
	void run(const ControlHooks &hooks);
	void stop();

	uint64_t requests() const
	{
		return requests_;
	}
	uint64_t bad_requests() const
	{
		return bad_requests_;
	}
	uint64_t connections() const
	{
		return accepted_;
	}

      private:
	struct Conn {
		Fd fd;
		std::string in, out;
		size_t scanned = 0; // in[0, scanned) holds no newline
		char buf[16384];
		bool closing = false;
		bool tcp = false; // its requests need the token
	};
	void listen_tcp(const std::string &tcp);
	void arm_accept(bool tcp);
	void arm_signal();
	void arm_wake();
	void arm_tick(uint64_t ns);
	void arm_recv(uint32_t id);
	void arm_send(uint32_t id);
	void on_accept(int res, bool tcp);
	void on_recv(uint32_t id, int res, const Handlers &h);
	void on_send(uint32_t id, int res);
	void close_conn(uint32_t id);
	io_uring_sqe *sqe(uint64_t user_data);

	std::string path_, token_;
	Fd listen_, listen_tcp_, wake_;
	int signal_fd_;
	bool have_ring_ = false;
	io_uring ring_;
	uint64_t wake_buf_ = 0;
	unsigned char sig_buf_[128];
	__kernel_timespec tick_ts_ = {};
	std::vector<std::unique_ptr<Conn>> conns_; // by id; null: free
	uint64_t ino_ = 0, dev_ = 0; // the socket file's
	uint64_t requests_ = 0, bad_requests_ = 0, accepted_ = 0;
};

} // namespace lumen::lumend
