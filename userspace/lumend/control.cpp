// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/lumend/control.cpp - the control socket on io_uring, served
// by a second thread so the slot engine never waits (control.h).
#include "lumend/control.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "base/error.h"
#include "base/json_socket.h"
#include "base/system.h"
#include "base/units.h"

namespace lumen::lumend
{

namespace
{

// user_data: (connection id << 8) | operation
enum Op : uint8_t {
	kAccept = 1,
	kSignal,
	kWake,
	kTick,
	kRecv,
	kSend,
	kSweep,
};
constexpr uint64_t kDrainMs = 1000; // how long a refused client's remaining bytes are read and dropped

uint64_t tag(Op op, uint32_t id = 0)
{
	return ((uint64_t)id << 8) | op;
}

// {"error": what} as one line (what's bytes that are not UTF-8 replaced:
// dump() would throw on them)
std::string error_json(const std::string &what)
{
	return nlohmann::json{{"error", what}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

uint64_t clock_ms(clockid_t id)
{
	timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1'000'000;
}

// An address without its port: what the per-address limits count.
std::string peer_address(int fd)
{
	sockaddr_storage ss = {};
	socklen_t len = sizeof(ss);
	char host[NI_MAXHOST] = "?";
	if (getpeername(fd, (sockaddr *)&ss, &len) == 0)
		getnameinfo((sockaddr *)&ss, len, host, sizeof(host), nullptr, 0, NI_NUMERICHOST);
	return host;
}

bool wildcard(const sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ((const sockaddr_in *)sa)->sin_addr.s_addr == htonl(INADDR_ANY);
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(&((const sockaddr_in6 *)sa)->sin6_addr);
	return false;
}

// A refusal a client can read before the close (best effort: never waits).
void tell(int fd, const std::string &why)
{
	const std::string line = error_json(why) + "\n";
	if (send(fd, line.data(), line.size(), MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		// the client is gone or its buffer full: the close says enough
	}
}

sockaddr_un unix_addr(const std::string &path)
{
	sockaddr_un sa = {};
	sa.sun_family = AF_UNIX;
	if (path.size() >= sizeof(sa.sun_path))
		throw UsageError("--control: " + path + " is longer than a Unix socket path may be (" +
				 std::to_string(sizeof(sa.sun_path) - 1) + " bytes)");
	std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
	return sa;
}

} // namespace

// Ranges: at least 1 of everything (0 connections would lock the owner out,
// a 0 s timeout would close every connection at its first sweep); budgets up
// to 1024 connections (each holds a 16 KiB buffer and a recv on the ring);
// timeouts from 1 s (the sweep looks every 500 ms) to a day; answers from 4
// KiB (one status) to 4 GiB.
const std::vector<ControlLimitOption> kControlLimitOptions = {
	{"--control-max-local", "N"},		{"--control-max-tcp", "N"},
	{"--control-max-per-peer", "N"},	{"--control-idle", "DURATION"},
	{"--control-read-timeout", "DURATION"}, {"--control-out-pause", "BYTES"},
	{"--control-max-out", "BYTES"},		{"--control-auth-failures", "N"},
	{"--control-auth-backoff", "DURATION"},
};

void set_control_limit(ControlLimits *l, const std::string &name, const std::string &value)
{
	constexpr uint64_t kMaxConns = 1024, kDay = 86'400'000; // ms
	auto count = [&](uint32_t max) { return (uint32_t)parse_uint(value, name, 1, max); };
	auto ms = [&] {
		const uint64_t ns = parse_duration_ns(value, name, kDay * 1'000'000);
		if (ns < 1'000'000'000)
			throw UsageError(name + ": " + value + " is under 1s (timeouts are looked at every " +
					 std::to_string(ControlLimits{}.sweep_ms) + " ms)");
		return ns / 1'000'000;
	};
	auto bytes = [&] {
		const uint64_t b = parse_bytes(value, name, 4ull << 30);
		if (b < 4096)
			throw UsageError(name + ": " + value + " is under 4k (one status answer)");
		return (size_t)b;
	};
	if (name == "--control-max-local")
		l->max_local = count(kMaxConns);
	else if (name == "--control-max-tcp")
		l->max_tcp = count(kMaxConns);
	else if (name == "--control-max-per-peer")
		l->max_per_peer = count(kMaxConns);
	else if (name == "--control-idle")
		l->idle_ms = ms();
	else if (name == "--control-read-timeout")
		l->read_ms = ms();
	else if (name == "--control-out-pause")
		l->out_pause = bytes();
	else if (name == "--control-max-out")
		l->max_out = bytes();
	else if (name == "--control-auth-failures")
		l->auth_failures = count(1'000'000);
	else if (name == "--control-auth-backoff")
		l->auth_window_ms = ms();
	else
		throw UsageError("no control limit " + name);
}

void check_control_limits(const ControlLimits &l)
{
	if (l.max_per_peer > l.max_tcp)
		throw UsageError("--control-max-per-peer " + std::to_string(l.max_per_peer) +
				 " is above --control-max-tcp " + std::to_string(l.max_tcp) +
				 ": one address would have every TCP connection");
	if (l.out_pause > l.max_out)
		throw UsageError("--control-out-pause " + std::to_string(l.out_pause) + " is above --control-max-out " +
				 std::to_string(l.max_out) + ": a client would be closed before it is paused");
}

ControlLoop::ControlLoop(const std::string &path, int signal_fd, const std::string &tcp, const std::string &token,
			 const ControlLimits &limits)
    : path_(path), limits_(limits), signal_fd_(signal_fd)
{
	if (!tcp.empty() && token.empty())
		throw UsageError("a TCP control socket needs a token");
	if (!tcp.empty())
		auth_ = std::make_unique<ControlAuth>(token);
	wake_.reset(eventfd(0, EFD_CLOEXEC));
	if (!wake_.valid())
		throw Error("eventfd: " + errno_text(errno));
	int rc = io_uring_queue_init(64, &ring_, 0);
	if (rc < 0)
		throw Error("cannot create an io_uring: " + errno_text(rc) +
			    (rc == -EPERM ? " (io_uring disabled? see sysctl kernel.io_uring_disabled)" : ""));
	have_ring_ = true;
	if (!tcp.empty())
		listen_tcp(tcp);
	if (path.empty())
		return;

	sockaddr_un sa = unix_addr(path);
	size_t slash = path.rfind('/');
	if (slash != std::string::npos && slash > 0)
		make_dirs(path.substr(0, slash));
	struct stat st;
	if (lstat(path.c_str(), &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			throw Error("--control: " + path + " exists and is no socket");
		Fd probe(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
		if (probe.valid() && connect(probe.get(), (sockaddr *)&sa, sizeof(sa)) == 0)
			throw Error("a lumend already answers at " + path + " (give this one another --control PATH)");
		unlink(path.c_str()); // a stale socket: nobody listens
	}
	listen_.reset(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
	if (!listen_.valid())
		throw Error("socket: " + errno_text(errno));
	if (bind(listen_.get(), (sockaddr *)&sa, sizeof(sa)) != 0)
		throw Error("cannot bind the control socket " + path + ": " + errno_text(errno));
	if (fstatat(AT_FDCWD, path.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
		ino_ = st.st_ino;
		dev_ = st.st_dev;
	}
	if (chmod(path.c_str(), 0660) != 0 || listen(listen_.get(), 16) != 0) {
		int err = errno;
		unlink(path.c_str());
		throw Error("cannot listen on " + path + ": " + errno_text(err));
	}
}

void ControlLoop::listen_tcp(const std::string &tcp)
{
	std::string host;
	unsigned port = 0;
	split_host_port(tcp, "--control-tcp", &host, &port);
	addrinfo hints = {};
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV;
	addrinfo *res = nullptr;
	int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
	if (rc != 0)
		throw UsageError("--control-tcp: '" + host + "' is no IP address (" + gai_strerror(rc) + ")");
	std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> hold(res, freeaddrinfo);
	listen_tcp_.reset(socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
	if (!listen_tcp_.valid())
		throw Error("socket: " + errno_text(errno));
	int one = 1;
	setsockopt(listen_tcp_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(listen_tcp_.get(), res->ai_addr, res->ai_addrlen) != 0)
		throw Error("cannot bind the TCP control socket to " + tcp + ": " + errno_text(errno));
	if (wildcard(res->ai_addr))
		std::fprintf(stderr,
			     "lumend: warning: --control-tcp %s listens on every address of this host; give the "
			     "address of the interface the coordinator uses\n",
			     tcp.c_str());
	if (listen(listen_tcp_.get(), 16) != 0)
		throw Error("cannot listen on " + tcp + ": " + errno_text(errno));
}

ControlLoop::~ControlLoop()
{
	// the ring first: its requests may still point into the connections' buffers
	if (have_ring_)
		io_uring_queue_exit(&ring_);
	conns_.clear();
	if (listen_.valid()) {
		struct stat st;
		if (lstat(path_.c_str(), &st) == 0 && st.st_ino == ino_ && st.st_dev == dev_)
			unlink(path_.c_str());
	}
}

io_uring_sqe *ControlLoop::sqe(uint64_t user_data)
{
	io_uring_sqe *s = io_uring_get_sqe(&ring_);
	if (!s) {
		io_uring_submit(&ring_);
		s = io_uring_get_sqe(&ring_);
		if (!s)
			throw Error("io_uring submission queue stays full");
	}
	io_uring_sqe_set_data64(s, user_data);
	return s;
}

void ControlLoop::arm_accept(bool tcp)
{
	io_uring_prep_accept(sqe(tag(kAccept, tcp)), (tcp ? listen_tcp_ : listen_).get(), nullptr, nullptr,
			     SOCK_CLOEXEC);
}

void ControlLoop::arm_signal()
{
	io_uring_prep_read(sqe(tag(kSignal)), signal_fd_, sig_buf_, sizeof(signalfd_siginfo), 0);
}

void ControlLoop::arm_wake()
{
	io_uring_prep_read(sqe(tag(kWake)), wake_.get(), &wake_buf_, sizeof(wake_buf_), 0);
}

void ControlLoop::arm_tick(uint64_t ns)
{
	tick_ts_.tv_sec = (long long)(ns / 1'000'000'000ull);
	tick_ts_.tv_nsec = (long long)(ns % 1'000'000'000ull);
	io_uring_prep_timeout(sqe(tag(kTick)), &tick_ts_, 0, 0);
	io_uring_submit(&ring_); // the kernel reads tick_ts_ now
}

void ControlLoop::arm_recv(uint32_t id)
{
	Conn &c = *conns_[id];
	io_uring_prep_recv(sqe(tag(kRecv, id)), c.fd.get(), c.buf, sizeof(c.buf), 0);
}

void ControlLoop::arm_send(uint32_t id)
{
	Conn &c = *conns_[id];
	io_uring_prep_send(sqe(tag(kSend, id)), c.fd.get(), c.out.data(), c.out.size(), MSG_NOSIGNAL);
}

void ControlLoop::arm_sweep()
{
	sweep_ts_.tv_sec = (long long)(limits_.sweep_ms / 1000);
	sweep_ts_.tv_nsec = (long long)(limits_.sweep_ms % 1000) * 1'000'000;
	io_uring_prep_timeout(sqe(tag(kSweep)), &sweep_ts_, 0, 0);
	io_uring_submit(&ring_); // the kernel reads sweep_ts_ now
}

void ControlLoop::close_conn(uint32_t id)
{
	Conn &c = *conns_[id];
	if (c.tcp) {
		tcp_conns_--;
		auto it = peers_.find(c.peer);
		if (it != peers_.end() && it->second.conns)
			it->second.conns--;
	} else {
		local_conns_--;
	}
	conns_[id].reset();
}

// Shuts a connection down: its recv or send in flight ends (the kernel
// must not be left writing into a buffer we free), and that completion
// closes it.
void ControlLoop::kill(Conn &c)
{
	c.dead = true;
	shutdown(c.fd.get(), SHUT_RDWR);
}

// Whether a new connection may stay: within its budget, its address's, and
// not from an address that failed to authenticate too often.
bool ControlLoop::admit(int fd, bool tcp, std::string *peer)
{
	if (!tcp) {
		if (local_conns_ < limits_.max_local)
			return true;
		tell(fd, "lumend has " + std::to_string(local_conns_) +
				 " local control connections open, its most: try again when one closes");
		return false;
	}
	*peer = peer_address(fd);
	const uint64_t now = clock_ms(CLOCK_MONOTONIC);
	auto it = peers_.find(*peer);
	if (it != peers_.end() && it->second.blocked_until_ms > now) {
		tell(fd, "too many failed authentications from " + *peer + ": refused for " +
				 std::to_string((it->second.blocked_until_ms - now + 999) / 1000) + " s");
		return false;
	}
	if (tcp_conns_ >= limits_.max_tcp) {
		tell(fd, "lumend has " + std::to_string(tcp_conns_) + " TCP control connections open, its most");
		return false;
	}
	if (it == peers_.end()) {
		if (peers_.size() >= limits_.max_peers) {
			tell(fd, "lumend serves too many addresses at once");
			return false;
		}
		it = peers_.emplace(*peer, Peer{}).first;
	}
	if (it->second.conns >= limits_.max_per_peer) {
		tell(fd, "lumend has " + std::to_string(it->second.conns) + " control connections from " + *peer +
				 " open, the most one address may have");
		return false;
	}
	it->second.conns++;
	return true;
}

void ControlLoop::on_accept(int res, bool tcp)
{
	arm_accept(tcp);
	if (res < 0)
		return; // EINTR, ECONNABORTED, EMFILE: the next accept may do better
	accepted_++;
	Fd fd(res);
	std::string peer;
	if (!admit(fd.get(), tcp, &peer)) {
		refused_++;
		return; // closed at once
	}
	uint32_t id = 0;
	while (id < conns_.size() && conns_[id])
		id++;
	if (id == conns_.size())
		conns_.emplace_back();
	conns_[id] = std::make_unique<Conn>();
	Conn &c = *conns_[id];
	c.fd = std::move(fd);
	c.tcp = tcp;
	c.peer = std::move(peer);
	c.last_ms = clock_ms(CLOCK_MONOTONIC);
	(tcp ? tcp_conns_ : local_conns_)++;
	arm_recv(id);
}

void ControlLoop::auth_failure(Conn &c, const std::string &why)
{
	auth_failed_++;
	const uint64_t now = clock_ms(CLOCK_MONOTONIC);
	auto it = peers_.find(c.peer);
	if (it != peers_.end()) {
		Peer &p = it->second;
		if (!p.failures || now - p.first_failure_ms > limits_.auth_window_ms) {
			p.failures = 0;
			p.first_failure_ms = now;
		}
		if (++p.failures >= limits_.auth_failures)
			p.blocked_until_ms = now + limits_.auth_window_ms;
	}
	c.out += error_json("authentication failed: " + why) + "\n";
	c.closing = c.linger = true;
}

// One line to its answer: over TCP, authenticated first, parsed only then.
std::string ControlLoop::answer(Conn &c, std::string_view line, const Handlers &h)
{
	bool ok = false;
	std::string out;
	if (c.tcp) {
		std::string_view body, nonce;
		std::string why;
		if (auth_->verify(line, clock_ms(CLOCK_REALTIME), &body, &why, &nonce) != ControlAuth::kOk) {
			bad_requests_++;
			auth_failure(c, why); // unsigned: nothing authenticated to bind it to
			return "";
		}
		// signed and bound to this request's nonce, so that nobody on the
		// way can forge an answer or replay an old one (control_auth.h)
		out = auth_->sign_answer(nonce, answer_line(body, h, &ok, true));
	} else {
		out = answer_line(line, h, &ok, false);
	}
	bad_requests_ += !ok;
	return out + "\n";
}

// Answers the whole lines received, as long as their answers do not pile
// up, then sends or reads on.
void ControlLoop::serve(uint32_t id, const Handlers &h)
{
	Conn &c = *conns_[id];
	size_t start = 0, nl;
	bool finished_one = false;
	while (!c.closing && c.out.size() < limits_.out_pause &&
	       (nl = c.in.find('\n', std::max(start, c.scanned))) != std::string::npos) {
		std::string_view line(c.in.data() + start, nl - start);
		start = nl + 1;
		finished_one = true;
		if (!line.empty() && line.back() == '\r')
			line.remove_suffix(1);
		if (line.find_first_not_of(" \t") == std::string_view::npos)
			continue;
		requests_++;
		c.out += answer(c, line, h);
		if (c.out.size() > limits_.max_out) {
			close_conn(id); // its answers pile up unread (nothing is in flight here)
			return;
		}
	}
	c.in.erase(0, start);
	c.scanned = start ? 0 : c.scanned;
	const bool whole_line_left = c.in.find('\n', c.scanned) != std::string::npos;
	if (!whole_line_left)
		c.scanned = c.in.size();
	const uint64_t now = clock_ms(CLOCK_MONOTONIC);
	if (c.in.empty() || whole_line_left)
		c.line_ms = 0;
	else if (!c.line_ms || finished_one)
		c.line_ms = now; // what is left began in this read
	if (!c.closing && !whole_line_left && !c.in.empty()) {
		const size_t max = kMaxRequest + (c.tcp ? control_auth::kHeaderMax : 0);
		std::string why;
		const ControlAuth::Verdict v =
			c.tcp ? auth_->check_header(c.in, clock_ms(CLOCK_REALTIME), &why) : ControlAuth::kOk;
		if (v != ControlAuth::kOk && v != ControlAuth::kIncomplete) {
			// refused on its first bytes: the rest is not waited for
			requests_++;
			bad_requests_++;
			auth_failure(c, why);
		} else if (c.in.size() > max) {
			c.out += error_json("a request is one line of at most " + std::to_string(kMaxRequest) +
					    " bytes") +
				 "\n";
			requests_++;
			bad_requests_++;
			c.closing = true;
		}
	}
	if (!c.out.empty())
		arm_send(id);
	else if (c.closing)
		close_conn(id);
	else
		arm_recv(id);
}

void ControlLoop::on_recv(uint32_t id, int res, const Handlers &h)
{
	Conn &c = *conns_[id];
	if (c.dead || res < 0 || (c.draining && (res == 0 || (c.drained += (uint64_t)res) > kMaxRequest))) {
		close_conn(id);
		return;
	}
	if (c.draining) {
		arm_recv(id);
		return;
	}
	if (res == 0) { // the client is done: answer what it sent, then close
		c.closing = true;
		c.in.clear();
		if (c.out.empty())
			close_conn(id);
		else
			arm_send(id);
		return;
	}
	c.last_ms = clock_ms(CLOCK_MONOTONIC);
	c.in.append(c.buf, (size_t)res);
	serve(id, h);
}

void ControlLoop::on_send(uint32_t id, int res, const Handlers &h)
{
	Conn &c = *conns_[id];
	if (c.dead || res < 0) {
		close_conn(id);
		return;
	}
	c.last_ms = clock_ms(CLOCK_MONOTONIC);
	c.out.erase(0, (size_t)res);
	if (!c.out.empty()) {
		arm_send(id);
	} else if (c.closing && c.linger) {
		// a refusal: closing now, with the client's request still unread,
		// would reset the connection and might destroy the refusal before
		// the client reads it. Our end is shut instead, and what the client
		// still sends is dropped until it closes too (or kDrainMs pass).
		shutdown(c.fd.get(), SHUT_WR);
		c.draining = true;
		c.drain_ms = clock_ms(CLOCK_MONOTONIC);
		c.line_ms = 0;
		arm_recv(id);
	} else if (c.closing) {
		close_conn(id);
	} else {
		serve(id, h); // the requests it read ahead, if any, or the next read
	}
}

// Closes connections that have stalled, and forgets addresses that have
// nothing open and no recent failures.
void ControlLoop::sweep()
{
	const uint64_t now = clock_ms(CLOCK_MONOTONIC);
	for (auto &c : conns_) {
		if (!c || c->dead)
			continue;
		if (now - c->last_ms > limits_.idle_ms || (c->line_ms && now - c->line_ms > limits_.read_ms) ||
		    (c->draining && now - c->drain_ms > kDrainMs)) {
			timed_out_++;
			kill(*c);
		}
	}
	for (auto it = peers_.begin(); it != peers_.end();) {
		const Peer &p = it->second;
		if (!p.conns && p.blocked_until_ms <= now && now - p.first_failure_ms > limits_.auth_window_ms)
			it = peers_.erase(it);
		else
			++it;
	}
}

void ControlLoop::run(const ControlHooks &hooks)
{
	if (listen_.valid())
		arm_accept(false);
	if (listen_tcp_.valid())
		arm_accept(true);
	if (signal_fd_ >= 0)
		arm_signal();
	arm_wake();
	if (hooks.tick_ns)
		arm_tick(hooks.tick_ns);
	arm_sweep();
	for (;;) {
		int rc = io_uring_submit_and_wait(&ring_, 1);
		if (rc < 0 && rc != -EINTR)
			throw Error("io_uring wait: " + errno_text(rc));
		io_uring_cqe *cqe;
		unsigned head, seen = 0;
		bool done = false;
		// completions are copied out first: handling one prepares new
		// submissions, which must not run into the ones being read
		std::vector<std::pair<uint64_t, int>> got;
		io_uring_for_each_cqe(&ring_, head, cqe)
		{
			got.emplace_back(cqe->user_data, cqe->res);
			seen++;
		}
		io_uring_cq_advance(&ring_, seen);
		for (auto [ud, res] : got) {
			uint32_t id = (uint32_t)(ud >> 8);
			switch ((Op)(ud & 0xff)) {
			case kAccept:
				on_accept(res, id != 0);
				break;
			case kSignal:
				if (res == (int)sizeof(signalfd_siginfo) && hooks.on_signal) {
					signalfd_siginfo si;
					std::memcpy(&si, sig_buf_, sizeof(si));
					hooks.on_signal((int)si.ssi_signo);
				}
				arm_signal();
				break;
			case kWake:
				done = true;
				break;
			case kTick:
				if (hooks.on_tick)
					hooks.on_tick();
				arm_tick(hooks.tick_ns);
				break;
			case kRecv:
				on_recv(id, res, hooks.handlers);
				break;
			case kSend:
				on_send(id, res, hooks.handlers);
				break;
			case kSweep:
				sweep();
				arm_sweep();
				break;
			}
		}
		if (done)
			return;
	}
}

void ControlLoop::stop()
{
	uint64_t one = 1;
	if (write(wake_.get(), &one, sizeof(one)) != (ssize_t)sizeof(one)) {
		// an eventfd write fails only when its counter would overflow:
		// a wake-up is pending anyway
	}
}

} // namespace lumen::lumend
