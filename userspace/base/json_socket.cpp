// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/base/json_socket.cpp - a JSON-lines request (json_socket.h).
#include "base/json_socket.h"

#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>

#include "base/error.h"
#include "base/fd.h"
#include "base/system.h"

namespace lumen
{

nlohmann::json json_request(const std::string &path, const nlohmann::json &request, const std::string &who)
{
	sockaddr_un sa = {};
	sa.sun_family = AF_UNIX;
	if (path.empty() || path.size() >= sizeof(sa.sun_path))
		throw UsageError("'" + path + "' is no Unix socket path");
	std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
	Fd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
	if (!fd.valid() || connect(fd.get(), (sockaddr *)&sa, sizeof(sa)) != 0)
		throw Error("cannot reach " + who + " at " + path + ": " + std::strerror(errno) + " (is it running?)");
	timeval tv = {5, 0};
	setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	write_all(fd.get(), request.dump() + "\n", "to " + who + " at " + path);
	std::string line;
	char buf[4096];
	while (line.find('\n') == std::string::npos) {
		ssize_t n = recv(fd.get(), buf, sizeof(buf), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			throw Error(who + " at " + path + " did not answer" +
				    (n < 0 ? std::string(": ") + std::strerror(errno) : ""));
		line.append(buf, (size_t)n);
	}
	nlohmann::json j = nlohmann::json::parse(line.substr(0, line.find('\n')), nullptr, false);
	if (j.is_discarded() || !j.is_object())
		throw Error(who + " at " + path + " answered no JSON object");
	if (j.contains("error"))
		throw Error(who + ": " + (j["error"].is_string() ? j["error"].get<std::string>() : j["error"].dump()));
	return j;
}

} // namespace lumen
