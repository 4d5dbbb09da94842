// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/lumend/control.cpp - the control socket on io_uring, served
// by a second thread so the slot engine never waits (control.h).
#include "lumend/control.h"

#include <netdb.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <cerrno>
#include <cstring>

#include "base/error.h"
#include "base/json_socket.h"
#include "base/system.h"

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
};
constexpr uint32_t kMaxConns = 32;

uint64_t tag(Op op, uint32_t id = 0)
{
	return ((uint64_t)id << 8) | op;
}

nlohmann::json error_json(const std::string &what)
{
	return nlohmann::json{{"error", what}};
}

std::string names(const Handlers &h)
{
	std::string out;
	for (const auto &[name, f] : h)
		out += (out.empty() ? "" : ", ") + name;
	return out;
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

std::string answer_line(std::string_view line, const Handlers &handlers, bool *ok, const std::string &token)
{
	if (ok)
		*ok = false;
	nlohmann::json req;
	try {
		req = nlohmann::json::parse(line);
	} catch (const nlohmann::json::exception &e) {
		return error_json(std::string("not JSON: ") + e.what()).dump();
	}
	if (!token.empty()) {
		// before anything else is looked at: without the token, nothing
		if (!req.is_object() || !req.contains("token") || !req["token"].is_string() ||
		    !tokens_equal(req["token"].get<std::string>(), token))
			return error_json("over TCP a request needs this lumend's token (\"token\", the line of "
					  "its --control-token file)")
				.dump();
		req.erase("token");
	}
	if (!req.is_object() || !req.contains("cmd") || !req["cmd"].is_string())
		return error_json("a request is a JSON object with a string \"cmd\" (" + names(handlers) + ")").dump();
	std::string cmd = req["cmd"].get<std::string>();
	auto it = handlers.find(cmd);
	if (it == handlers.end())
		return error_json("unknown command '" + cmd + "' (" + names(handlers) + ")").dump();
	const std::vector<std::string> &keys = it->second.keys;
	for (const auto &[key, value] : req.items())
		if (key != "cmd" && std::find(keys.begin(), keys.end(), key) == keys.end())
			return error_json("unknown key '" + key + "' in the request").dump();
	if (ok)
		*ok = true;
	try {
		return it->second.run(req).dump();
	} catch (const std::exception &e) {
		return error_json(cmd + ": " + e.what()).dump();
	}
}

ControlLoop::ControlLoop(const std::string &path, int signal_fd, const std::string &tcp, const std::string &token)
    : path_(path), token_(token), signal_fd_(signal_fd)
{
	if (!tcp.empty() && token.empty())
		throw UsageError("a TCP control socket needs a token");
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

void ControlLoop::close_conn(uint32_t id)
{
	conns_[id].reset();
}

void ControlLoop::on_accept(int res, bool tcp)
{
	arm_accept(tcp);
	if (res < 0)
		return; // EINTR, ECONNABORTED, EMFILE: the next accept may do better
	accepted_++;
	Fd fd(res);
	uint32_t id = 0;
	while (id < conns_.size() && conns_[id])
		id++;
	if (id >= kMaxConns)
		return; // too many at once: closed at once
	if (id == conns_.size())
		conns_.emplace_back();
	conns_[id] = std::make_unique<Conn>();
	conns_[id]->fd = std::move(fd);
	conns_[id]->tcp = tcp;
	arm_recv(id);
}

void ControlLoop::on_recv(uint32_t id, int res, const Handlers &h)
{
	Conn &c = *conns_[id];
	if (res <= 0) { // the client is done (0) or gone
		if (res < 0 || c.out.empty()) {
			close_conn(id);
			return;
		}
		c.closing = true;
		arm_send(id);
		return;
	}
	c.in.append(c.buf, (size_t)res);
	size_t start = 0, nl;
	while ((nl = c.in.find('\n', start ? start : c.scanned)) != std::string::npos) {
		std::string_view line(c.in.data() + start, nl - start);
		start = nl + 1;
		if (!line.empty() && line.back() == '\r')
			line.remove_suffix(1);
		if (line.find_first_not_of(" \t") == std::string_view::npos)
			continue;
		bool ok = false;
		c.out += answer_line(line, h, &ok, c.tcp ? token_ : std::string()) + "\n";
		requests_++;
		bad_requests_ += !ok;
	}
	c.in.erase(0, start);
	c.scanned = c.in.size();
	if (c.in.size() > kMaxRequest) {
		c.out += error_json("a request is one line of at most " + std::to_string(kMaxRequest) + " bytes")
				 .dump() +
			 "\n";
		requests_++;
		bad_requests_++;
		c.closing = true;
	}
	if (c.out.empty())
		arm_recv(id);
	else
		arm_send(id);
}

void ControlLoop::on_send(uint32_t id, int res)
{
	Conn &c = *conns_[id];
	if (res < 0) {
		close_conn(id);
		return;
	}
	c.out.erase(0, (size_t)res);
	if (!c.out.empty())
		arm_send(id);
	else if (c.closing)
		close_conn(id);
	else
		arm_recv(id);
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
				on_send(id, res);
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
