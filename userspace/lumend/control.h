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
//   {"cmd":"stage","file":PATH,"at":NS} (or "schedule":{...} for PATH;
//                        PATH on the Unix socket only, a regular file of
//                        at most 64 MiB: daemon.h, load_schedule_file),
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
// a coordinator on another host. There every line is signed with the
// daemon's token (the line of --control-token FILE), which never travels:
// "LUMEN-HMAC1 TS_MS NONCE MAC JSON", an HMAC-SHA256 over the request, a
// timestamp and a nonce (base/control_auth.h has the format; docs/lumend.md
// too). The header is checked on its first bytes, before the line is even
// whole, and the MAC before the JSON is parsed; a stale timestamp (more
// than 30 s off) or a nonce seen before is refused. A line that fails is
// answered {"error":"..."} and the connection closed; an address that
// fails auth_failures times within auth_window_ms is refused for
// auth_window_ms. Answers to authenticated requests are signed for their
// request ("LUMEN-HMAC1R NONCE MAC JSON", control_auth.h), refusals are not.
// Over TCP a schedule comes inline only: a handler's local_keys ("file": a
// path on lumend's host) are refused there.
//
// Limits (ControlLimits), so that nobody on the network can lock the owner
// out: the Unix socket and TCP have budgets of their own, and one address
// only max_per_peer of TCP's; a connection over its budget is told so and
// closed. A connection that moves nothing for idle_ms, or leaves a line
// unfinished for read_ms, is closed. A client that does not read its
// answers: lumend reads no further request of it while out_pause bytes of
// answers wait, and closes it when they pass max_out. Each is a lumend
// option (kControlLimitOptions, below).
//
// Why a second thread: the slot engine spins up to the boundaries and must
// not wait for anybody; on a 2-core machine the control thread sleeps in
// io_uring_submit_and_wait on the other core, and only wakes for a
// request, a signal (signalfd: SIGHUP reloads, SIGINT/SIGTERM stop), the
// stats log tick or the timeouts' sweep (sweep_ms). It never blocks the engine: statistics come from the
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

#include "base/control_auth.h"
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
	Handler(std::vector<std::string> request_keys, std::function<nlohmann::json(const nlohmann::json &)> f,
		std::vector<std::string> local_only = {})
	    : keys(std::move(request_keys)), local_keys(std::move(local_only)), run(std::move(f))
	{
	}
	std::vector<std::string> keys;
	std::vector<std::string> local_keys; // of keys, those refused over TCP (paths on lumend's host)
	std::function<nlohmann::json(const nlohmann::json &)> run;
};
using Handlers = std::map<std::string, Handler>;

constexpr size_t kMaxRequest = 1 << 20;

// One request (JSON, authenticated already if it came over TCP) to its
// answer (one line of JSON, no newline). *ok: the request was understood (a
// handler's own failure still answers an error). remote: it came over TCP,
// where a handler's local_keys are refused.
std::string answer_line(std::string_view line, const Handlers &handlers, bool *ok = nullptr, bool remote = false);

struct ControlLimits {
	uint32_t max_local = 16; // Unix socket connections at once
	uint32_t max_tcp = 16; // TCP connections at once
	uint32_t max_per_peer = 4; // TCP connections from one address at once
	uint64_t idle_ms = 60'000; // nothing received or sent for this long: closed
	uint64_t read_ms = 10'000; // a line begun and not finished for this long: closed
	size_t out_pause = 256 << 10; // answers waiting: read no further request
	size_t max_out = 64 << 20; // answers waiting past this: closed
	uint32_t auth_failures = 5; // this many failed authentications of an address...
	uint64_t auth_window_ms = 60'000; // ...within this long: refused for this long
	uint64_t sweep_ms = 500; // how often the timeouts are looked at
	size_t max_peers = 4096; // TCP addresses remembered (connections, failures)
};

// The limits are lumend's options (--control-max-local N and the others
// below): an operator whose coordinators run many parallel changes, or
// whose management network is slow, needs other numbers than the defaults,
// and must not rebuild lumend for them. Each option, its field, and what a
// value may be; a bad value is a UsageError (exit 2) naming the option.
struct ControlLimitOption {
	const char *name; // "--control-max-local"
	const char *arg; // "N", "DURATION", "BYTES" (--help has the words: daemon.cpp's kUsage)
};
extern const std::vector<ControlLimitOption> kControlLimitOptions;
// Sets the limit of option name (one of kControlLimitOptions) from its value.
// UsageError naming the option for anything but a number in its range (no
// zero, no overflow, no words, a duration with its unit, a size with k/m/g).
void set_control_limit(ControlLimits *l, const std::string &name, const std::string &value);
// The limits taken together: UsageError when one defeats another (a per-
// address limit above the TCP budget, a pause above the cap on answers).
void check_control_limits(const ControlLimits &l);

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
	// (ADDR:PORT, numeric) also listens there, for requests signed with
	// token; a wildcard address (0.0.0.0, ::) is warned about on stderr.
	ControlLoop(const std::string &path, int signal_fd, const std::string &tcp = "", const std::string &token = "",
		    const ControlLimits &limits = {});
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
	uint64_t refused() const // connections closed at once: over a budget, or a blocked address
	{
		return refused_;
	}
	uint64_t timed_out() const
	{
		return timed_out_;
	}
	uint64_t auth_failed() const
	{
		return auth_failed_;
	}

      private:
	struct Conn {
		Fd fd;
		std::string in, out;
		size_t scanned = 0; // in[0, scanned) holds no newline
		char buf[16384];
		bool closing = false; // close once out is sent
		bool linger = false; // ...after reading what the client still sends (see drain)
		bool draining = false; // reading and dropping until the client's end, or kDrainMs
		uint64_t drain_ms = 0, drained = 0;
		bool dead = false; // shut down: close at its next completion
		bool tcp = false; // its requests must be signed
		std::string peer; // a TCP client's address
		uint64_t last_ms = 0; // when it last moved anything (monotonic)
		uint64_t line_ms = 0; // when its unfinished line began (0: none)
	};
	struct Peer {
		uint32_t conns = 0;
		uint32_t failures = 0;
		uint64_t first_failure_ms = 0, blocked_until_ms = 0;
	};
	void listen_tcp(const std::string &tcp);
	void arm_accept(bool tcp);
	void arm_signal();
	void arm_wake();
	void arm_tick(uint64_t ns);
	void arm_recv(uint32_t id);
	void arm_send(uint32_t id);
	void arm_sweep();
	void on_accept(int res, bool tcp);
	bool admit(int fd, bool tcp, std::string *peer);
	void on_recv(uint32_t id, int res, const Handlers &h);
	void serve(uint32_t id, const Handlers &h);
	std::string answer(Conn &c, std::string_view line, const Handlers &h);
	void auth_failure(Conn &c, const std::string &why);
	void on_send(uint32_t id, int res, const Handlers &h);
	void sweep();
	void kill(Conn &c);
	void close_conn(uint32_t id);
	io_uring_sqe *sqe(uint64_t user_data);

	std::string path_;
	ControlLimits limits_;
	std::unique_ptr<ControlAuth> auth_; // with a TCP socket
	Fd listen_, listen_tcp_, wake_;
	int signal_fd_;
	bool have_ring_ = false;
	io_uring ring_;
	uint64_t wake_buf_ = 0;
	unsigned char sig_buf_[128];
	__kernel_timespec tick_ts_ = {}, sweep_ts_ = {};
	std::vector<std::unique_ptr<Conn>> conns_; // by id; null: free
	uint32_t local_conns_ = 0, tcp_conns_ = 0;
	std::map<std::string, Peer> peers_; // TCP clients by address
	uint64_t ino_ = 0, dev_ = 0; // the socket file's
	uint64_t requests_ = 0, bad_requests_ = 0, accepted_ = 0, refused_ = 0, timed_out_ = 0, auth_failed_ = 0;
};

} // namespace lumen::lumend
