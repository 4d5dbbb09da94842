// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/base/dpdk_telemetry.cpp - DPDK telemetry client (dpdk_telemetry.h).
#include "base/dpdk_telemetry.h"

#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "base/error.h"

namespace lumen
{

namespace
{

// One seqpacket message: a whole JSON object (rte_telemetry writes each
// answer in one send, at most its max_output_len, 16 KiB by default).
nlohmann::json receive(int fd, const std::string &path)
{
	std::vector<char> buf(1 << 20);
	ssize_t n;
	do
		n = recv(fd, buf.data(), buf.size(), 0);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		throw Error("DPDK telemetry at " + path + " did not answer" +
			    (n < 0 ? std::string(": ") + std::strerror(errno) : ""));
	nlohmann::json j = nlohmann::json::parse(buf.data(), buf.data() + n, nullptr, false);
	if (j.is_discarded() || !j.is_object())
		throw Error("DPDK telemetry at " + path + " answered no JSON object");
	return j;
}

} // namespace

DpdkTelemetry::DpdkTelemetry(const std::string &where)
    : path_(where.find('/') == std::string::npos ? "/var/run/dpdk/" + where + "/dpdk_telemetry.v2" : where)
{
	sockaddr_un sa = {};
	sa.sun_family = AF_UNIX;
	if (where.empty() || path_.size() >= sizeof(sa.sun_path))
		throw UsageError("'" + where + "' is no DPDK file prefix or telemetry socket path");
	std::memcpy(sa.sun_path, path_.c_str(), path_.size() + 1);
	fd_ = Fd(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
	if (!fd_.valid() || connect(fd_.get(), (sockaddr *)&sa, sizeof(sa)) != 0)
		throw Error("cannot reach DPDK telemetry at " + path_ + ": " + std::strerror(errno) +
			    " (is the DPDK process running, with telemetry?)");
	timeval tv = {5, 0};
	setsockopt(fd_.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd_.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	receive(fd_.get(), path_); // the greeting: version, pid, max_output_len
}

nlohmann::json DpdkTelemetry::query(const std::string &command)
{
	if (command.empty() || command[0] != '/')
		throw UsageError("'" + command + "' is no DPDK telemetry command (they start with /)");
	if (send(fd_.get(), command.data(), command.size(), MSG_NOSIGNAL) != (ssize_t)command.size())
		throw Error("cannot ask DPDK telemetry at " + path_ + ": " + std::strerror(errno));
	nlohmann::json j = receive(fd_.get(), path_);
	std::string key = command.substr(0, command.find(','));
	return j.contains(key) ? j[key] : nlohmann::json();
}

std::vector<std::pair<std::string, nlohmann::json>> lumen_dp_gates(DpdkTelemetry &tel)
{
	nlohmann::json names = tel.query("/lumen/hosts");
	if (!names.is_array())
		throw Error("DPDK telemetry at " + tel.path() +
			    " lists no lumen-dp hosts (/lumen/hosts): is it lumen-dp, and has its run begun?");
	std::vector<std::pair<std::string, nlohmann::json>> gates;
	for (const nlohmann::json &name : names) {
		if (!name.is_string())
			continue;
		nlohmann::json g = tel.query("/lumen/gate," + name.get<std::string>());
		if (!g.is_null()) /* null: not gated */
			gates.emplace_back(name.get<std::string>(), std::move(g));
	}
	return gates;
}

} // namespace lumen
