// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/base/json_socket.cpp - a JSON-lines request (json_socket.h).
#include "base/json_socket.h"

#include <netdb.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <fcntl.h>

#include <ctime>
#include <cerrno>
#include <cstring>

#include "base/control_auth.h"
#include "base/error.h"
#include "base/fd.h"
#include "base/system.h"

namespace lumen
{

bool is_tcp_endpoint(const std::string &endpoint)
{
	return !endpoint.empty() && endpoint.find('/') == std::string::npos && endpoint.find(':') != std::string::npos;
}

void split_host_port(const std::string &endpoint, const std::string &what, std::string *host, unsigned *port)
{
	const std::string bad = what + ": '" + endpoint + "' is not HOST:PORT";
	size_t colon = endpoint.rfind(':');
	if (colon == std::string::npos || colon == 0)
		throw UsageError(bad);
	std::string h = endpoint.substr(0, colon), p = endpoint.substr(colon + 1);
	if (h.front() == '[') {
		if (h.size() < 3 || h.back() != ']')
			throw UsageError(bad);
		h = h.substr(1, h.size() - 2);
	} else if (h.find(':') != std::string::npos) {
		throw UsageError(bad + " (write an IPv6 address as [ADDR]:PORT)");
	}
	if (p.empty() || p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos || std::stoul(p) == 0 ||
	    std::stoul(p) > 65535)
		throw UsageError(what + ": '" + p + "' is no TCP port (1..65535)");
	*host = h;
	*port = (unsigned)std::stoul(p);
}

std::string read_token_file(const std::string &path, const std::string &what)
{
	Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
	if (!fd.valid())
		throw UsageError(what + ": cannot open " + path + ": " + std::strerror(errno));
	struct stat st;
	if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
		throw UsageError(what + ": " + path + " is no regular file");
	if (st.st_mode & 077)
		throw UsageError(what + ": " + path +
				 " may be read or written by others than its owner (chmod 600 it)");
	char buf[300];
	ssize_t n = read(fd.get(), buf, sizeof(buf));
	if (n < 0)
		throw UsageError(what + ": cannot read " + path + ": " + std::strerror(errno));
	std::string t(buf, (size_t)n);
	while (!t.empty() && (t.back() == '\n' || t.back() == '\r'))
		t.pop_back();
	if (t.size() < 16 || t.size() > 256)
		throw UsageError(what + ": the token in " + path + " must be one line of 16 to 256 characters");
	for (unsigned char c : t)
		if (c <= ' ' || c >= 127)
			throw UsageError(what + ": the token in " + path +
					 " has a space or a character that is not printable");
	return t;
}

bool tokens_equal(const std::string &a, const std::string &b)
{
	unsigned char diff = a.size() == b.size() ? 0 : 1;
	for (size_t i = 0; i < a.size(); i++)
		diff |= (unsigned char)(a[i] ^ (i < b.size() ? b[i] : 0));
	return diff == 0;
}

namespace
{

uint64_t realtime_ms()
{
	timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1'000'000;
}

Fd connect_unix(const std::string &path, const std::string &who)
{
	sockaddr_un sa = {};
	sa.sun_family = AF_UNIX;
	if (path.empty() || path.size() >= sizeof(sa.sun_path))
		throw UsageError("'" + path + "' is no Unix socket path");
	std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
	Fd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
	if (!fd.valid() || connect(fd.get(), (sockaddr *)&sa, sizeof(sa)) != 0)
		throw Error("cannot reach " + who + " at " + path + ": " + std::strerror(errno) + " (is it running?)");
	return fd;
}

Fd connect_tcp(const std::string &endpoint, const std::string &who)
{
	std::string host;
	unsigned port = 0;
	split_host_port(endpoint, who, &host, &port);
	addrinfo hints = {};
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	addrinfo *res = nullptr;
	int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
	if (rc != 0)
		throw Error("cannot resolve " + host + " (" + who + "): " + gai_strerror(rc));
	std::string why = "no address";
	for (addrinfo *ai = res; ai; ai = ai->ai_next) {
		Fd fd(socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol));
		if (!fd.valid())
			continue;
		// a connect that hangs (a filtered port) ends with the 5 s send timeout
		timeval tv = {5, 0};
		setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		if (connect(fd.get(), ai->ai_addr, ai->ai_addrlen) == 0) {
			freeaddrinfo(res);
			return fd;
		}
		why = std::strerror(errno);
	}
	freeaddrinfo(res);
	throw Error("cannot reach " + who + " at " + endpoint + ": " + why + " (is it running, with --control-tcp?)");
}

} // namespace

nlohmann::json json_request(const std::string &endpoint, const nlohmann::json &request, const std::string &who,
			    const std::string &token)
{
	Fd fd = is_tcp_endpoint(endpoint) ? connect_tcp(endpoint, who) : connect_unix(endpoint, who);
	timeval tv = {5, 0};
	setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	// over TCP the token signs the request and never travels (control_auth.h);
	// a Unix socket takes plain JSON (a coordinator's list may mix both)
	const bool tcp = !token.empty() && is_tcp_endpoint(endpoint);
	const std::string nonce = tcp ? new_control_nonce() : "";
	const std::string out =
		(tcp ? sign_control_request(token, request.dump(), realtime_ms(), nonce) : request.dump()) + "\n";
	// send, not write: a daemon that closes early must not kill us by SIGPIPE
	for (size_t done = 0; done < out.size();) {
		ssize_t n = send(fd.get(), out.data() + done, out.size() - done, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			// a daemon that refused the connection (over a budget) said why
			// before closing: show that rather than EPIPE
			const int err = errno;
			char said[512];
			ssize_t got = recv(fd.get(), said, sizeof(said) - 1, MSG_DONTWAIT);
			nlohmann::json e =
				got > 0 ? nlohmann::json::parse(
						  std::string(said, (size_t)got)
							  .substr(0, std::string(said, (size_t)got).find('\n')),
						  nullptr, false)
					: nlohmann::json();
			if (e.is_object() && e.contains("error") && e["error"].is_string())
				throw Error(who + " at " + endpoint +
					    " refused the connection: " + e["error"].get<std::string>());
			throw Error("cannot write to " + who + " at " + endpoint + ": " + std::strerror(err));
		}
		done += (size_t)n;
	}
	std::string line;
	char buf[4096];
	while (line.find('\n') == std::string::npos) {
		ssize_t n = recv(fd.get(), buf, sizeof(buf), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			throw Error(who + " at " + endpoint + " did not answer" +
				    (n < 0 ? std::string(": ") + std::strerror(errno) : ""));
		line.append(buf, (size_t)n);
	}
	line.resize(line.find('\n'));
	std::string_view body = line;
	if (tcp) {
		// the answer must be signed for this request (control_auth.h):
		// anyone on the way could write an unsigned one, or hand back an
		// answer to an earlier request. An unsigned refusal (a wrong token,
		// a full budget) is shown, but only as what it is.
		std::string why;
		if (verify_control_answer(token, nonce, line, &body, &why) != AnswerVerdict::kOk) {
			nlohmann::json e = nlohmann::json::parse(line, nullptr, false);
			const bool refusal = e.is_object() && e.contains("error") && e["error"].is_string();
			throw Error(who + " at " + endpoint + ": " + why +
				    (refusal ? "; it says: " + e["error"].get<std::string>() : ""));
		}
	}
	nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
	if (j.is_discarded() || !j.is_object())
		throw Error(who + " at " + endpoint + " answered no JSON object");
	if (j.contains("error"))
		throw Error(who + ": " + (j["error"].is_string() ? j["error"].get<std::string>() : j["error"].dump()));
	return j;
}

} // namespace lumen
