// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/traffic/traffic_server.cpp - `lumen traffic server`: accepts
// connections (multishot accept on the ring), reads each flow's header,
// discards its payload and answers with the completion (traffic_wire.h).
// Every connection has at most one operation in flight, so a completion
// alone decides its next step.
#include "base/error.h"
#include "base/interrupt.h"
#include "base/system.h"
#include "traffic/traffic.h"
#include "traffic/traffic_ring.h"
#include "traffic/traffic_wire.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <unordered_map>
#include <vector>

namespace lumen
{

void raise_open_file_limit()
{
	rlimit lim;
	if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
		lim.rlim_cur = lim.rlim_max;
		setrlimit(RLIMIT_NOFILE, &lim);
	}
}

namespace
{

constexpr std::size_t kRecvChunk = 256 * 1024;
constexpr std::uint64_t kTickNs = 100'000'000; // re-checks the stop flag
constexpr unsigned kRingEntries = 1024;

enum ServerOp : std::uint8_t {
	kOpAccept = 1,
	kOpRecv,
	kOpSend,
	kOpTick,
};

enum class ConnState {
	Header, // reading the 16-byte header
	Payload, // reading and discarding payload
	Completing, // sending the completion
	Draining, // sized flow done: waiting for the client to close
};

struct Conn {
	int fd = -1;
	ConnState state = ConnState::Header;
	std::uint8_t header[kTrafficHeaderSize];
	std::size_t header_got = 0;
	std::uint64_t size = 0; // 0 = until the client half-closes
	std::uint64_t received = 0;
	std::uint8_t completion[kTrafficCompletionSize];
	std::size_t completion_sent = 0;
};

class Server
{
      public:
	explicit Server(const TrafficServerOptions &opts) : opts_(opts), discard_(kRecvChunk), ring_(kRingEntries)
	{
	}
	~Server();
	int run();

      private:
	void listen_socket();
	void announce_ready();
	void arm_accept();
	void on_completion(std::uint64_t ud, int res, unsigned flags);
	void on_accept(int res, unsigned flags);
	void on_recv(std::uint64_t id, Conn &c, int res);
	void on_send(std::uint64_t id, Conn &c, int res);
	void on_header(std::uint64_t id, Conn &c);
	void post_recv(std::uint64_t id, Conn &c);
	void post_completion(std::uint64_t id, Conn &c);
	void close_conn(std::uint64_t id, const char *why);

	TrafficServerOptions opts_;
	std::vector<std::uint8_t> discard_; // payload lands here, shared
	int listen_fd_ = -1;
	bool accept_armed_ = false;
	std::uint64_t next_id_ = 1;
	std::unordered_map<std::uint64_t, std::unique_ptr<Conn>> conns_;
	std::uint64_t served_ = 0, errors_ = 0, bytes_ = 0;
	// last: destroyed (cancelling what is in flight) before the buffers
	// and connections the kernel may still write to
	Ring ring_;
};

Server::~Server()
{
	for (auto &[id, c] : conns_)
		::close(c->fd);
	if (listen_fd_ >= 0)
		::close(listen_fd_);
}

void Server::listen_socket()
{
	Endpoint ep;
	if (opts_.bind) {
		parse_endpoint(*opts_.bind, opts_.port, &ep);
	} else {
		parse_endpoint("::", opts_.port, &ep);
	}
	int fd = ::socket(ep.addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 && !opts_.bind && errno == EAFNOSUPPORT) {
		// IPv6 disabled in this namespace: IPv4 only
		parse_endpoint("0.0.0.0", opts_.port, &ep);
		fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	}
	if (fd < 0)
		throw Error(std::string("socket: ") + std::strerror(errno));
	listen_fd_ = fd;
	int one = 1, zero = 0;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ep.addr.ss_family == AF_INET6 && !opts_.bind)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)); // IPv4 too
	if (::bind(fd, reinterpret_cast<sockaddr *>(&ep.addr), ep.len) != 0)
		throw Error("cannot bind " + (opts_.bind ? *opts_.bind : std::string("*")) + " port " +
			    std::to_string(opts_.port) + ": " + std::strerror(errno));
	if (::listen(fd, 4096) != 0)
		throw Error(std::string("listen: ") + std::strerror(errno));
}

void Server::announce_ready()
{
	if (!opts_.ready_file) {
		std::fputs("ready\n", stdout);
		std::fflush(stdout);
		return;
	}
	// written whole under a temporary name: a reader never sees a partial file
	std::string tmp = *opts_.ready_file + ".tmp";
	{
		std::ofstream out(tmp);
		out << "ready\n";
		if (!out.flush())
			throw Error("cannot write " + tmp);
	}
	if (std::rename(tmp.c_str(), opts_.ready_file->c_str()) != 0)
		throw Error("cannot create " + *opts_.ready_file + ": " + std::strerror(errno));
}

void Server::arm_accept()
{
	io_uring_prep_multishot_accept(ring_.prepare(make_user_data(0, kOpAccept)), listen_fd_, nullptr, nullptr,
				       SOCK_CLOEXEC);
	accept_armed_ = true;
}

int Server::run()
{
	raise_open_file_limit();
	listen_socket();
	arm_accept();
	ring_.arm_timer_at(monotonic_ns() + kTickNs, make_user_data(0, kOpTick));
	announce_ready();
	while (!interrupted()) {
		if (!ring_.submit_and_wait())
			continue;
		ring_.drain([this](std::uint64_t ud, int res, unsigned flags) { on_completion(ud, res, flags); });
	}
	if (!opts_.quiet)
		std::fprintf(stderr, "lumen traffic server: %llu flows served, %llu errors, %llu payload bytes\n",
			     static_cast<unsigned long long>(served_), static_cast<unsigned long long>(errors_),
			     static_cast<unsigned long long>(bytes_));
	return 0;
}

void Server::on_completion(std::uint64_t ud, int res, unsigned flags)
{
	std::uint64_t id = user_data_id(ud);
	switch (user_data_op(ud)) {
	case kOpAccept:
		on_accept(res, flags);
		return;
	case kOpTick:
		// an accept stopped by an error (EMFILE) is retried here, not
		// at once, so a persistent error cannot spin
		if (!accept_armed_)
			arm_accept();
		ring_.arm_timer_at(monotonic_ns() + kTickNs, make_user_data(0, kOpTick));
		return;
	default:
		break;
	}
	auto it = conns_.find(id);
	if (it == conns_.end())
		return;
	Conn &c = *it->second;
	if (user_data_op(ud) == kOpRecv)
		on_recv(id, c, res);
	else
		on_send(id, c, res);
}

void Server::on_accept(int res, unsigned flags)
{
	if (!(flags & IORING_CQE_F_MORE))
		accept_armed_ = false;
	if (res < 0) {
		if (!opts_.quiet)
			std::fprintf(stderr, "lumen traffic server: accept: %s\n", std::strerror(-res));
		return;
	}
	if (!accept_armed_ && res >= 0)
		arm_accept();
	auto c = std::make_unique<Conn>();
	c->fd = res;
	std::uint64_t id = next_id_++;
	Conn &ref = *c;
	conns_.emplace(id, std::move(c));
	post_recv(id, ref);
}

void Server::post_recv(std::uint64_t id, Conn &c)
{
	io_uring_sqe *sqe = ring_.prepare(make_user_data(id, kOpRecv));
	if (c.state == ConnState::Header) {
		io_uring_prep_recv(sqe, c.fd, c.header + c.header_got, kTrafficHeaderSize - c.header_got, 0);
		return;
	}
	std::size_t want = kRecvChunk;
	// a sized flow is read exactly to its end, so extra bytes show up
	// as a protocol error in Draining
	if (c.state == ConnState::Payload && c.size > 0)
		want = static_cast<std::size_t>(std::min<std::uint64_t>(want, c.size - c.received));
	io_uring_prep_recv(sqe, c.fd, discard_.data(), want, 0);
}

void Server::post_completion(std::uint64_t id, Conn &c)
{
	if (c.completion_sent == 0)
		encode_completion(c.received, c.completion);
	c.state = ConnState::Completing;
	io_uring_prep_send(ring_.prepare(make_user_data(id, kOpSend)), c.fd, c.completion + c.completion_sent,
			   kTrafficCompletionSize - c.completion_sent, MSG_NOSIGNAL);
}

void Server::on_header(std::uint64_t id, Conn &c)
{
	TrafficHeader h;
	std::string why;
	if (!decode_header(c.header, &h, &why)) {
		close_conn(id, why.c_str());
		return;
	}
	c.size = h.size;
	c.state = ConnState::Payload;
	post_recv(id, c);
}

void Server::on_recv(std::uint64_t id, Conn &c, int res)
{
	if (res < 0) {
		close_conn(id, std::strerror(-res));
		return;
	}
	if (res == 0) {
		// end of stream: the normal end of a size-0 flow (answer with
		// what arrived) and of a completed sized one; early otherwise
		if (c.state == ConnState::Payload && c.size == 0)
			post_completion(id, c);
		else if (c.state == ConnState::Draining)
			close_conn(id, nullptr);
		else
			close_conn(id, "connection closed before the flow ended");
		return;
	}
	auto n = static_cast<std::uint64_t>(res);
	switch (c.state) {
	case ConnState::Header:
		c.header_got += n;
		if (c.header_got == kTrafficHeaderSize)
			on_header(id, c);
		else
			post_recv(id, c);
		return;
	case ConnState::Payload:
		c.received += n;
		bytes_ += n;
		if (c.size > 0 && c.received == c.size)
			post_completion(id, c);
		else
			post_recv(id, c);
		return;
	default:
		close_conn(id, "bytes beyond the announced flow size");
		return;
	}
}

void Server::on_send(std::uint64_t id, Conn &c, int res)
{
	if (res < 0) {
		close_conn(id, std::strerror(-res));
		return;
	}
	c.completion_sent += static_cast<std::size_t>(res);
	if (c.completion_sent < kTrafficCompletionSize) {
		post_completion(id, c);
		return;
	}
	served_++;
	if (c.size == 0) {
		close_conn(id, nullptr); // the client half-closed already
		return;
	}
	c.state = ConnState::Draining;
	post_recv(id, c);
}

void Server::close_conn(std::uint64_t id, const char *why)
{
	auto it = conns_.find(id);
	if (it == conns_.end())
		return;
	if (why) {
		errors_++;
		if (!opts_.quiet)
			std::fprintf(stderr, "lumen traffic server: flow dropped: %s\n", why);
	}
	::close(it->second->fd);
	conns_.erase(it);
}

} // namespace

int run_traffic_server(const TrafficServerOptions &opts)
{
	install_interrupt_handlers();
	Server server(opts);
	return server.run();
}

} // namespace lumen
