// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/lumend/ptp4l.cpp - ptp4l's TIME_STATUS_NP over its management
// socket (ptp4l.h).
#include "lumend/ptp4l.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <string_view>
#include <cstring>

#include "base/error.h"

namespace lumen::lumend
{

namespace
{

constexpr size_t kHeader = 34; // PTP common header
constexpr size_t kMgmt = 14; // targetPortIdentity, two hop counts, action, reserved
constexpr size_t kTlv = kHeader + kMgmt; // where the TLV starts
constexpr uint16_t kTlvManagement = 0x0001, kTlvManagementErrorStatus = 0x0002;
constexpr uint8_t kActionGet = 0, kActionResponse = 2;
constexpr size_t kTimeStatusLen = 50; // its data field

uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

uint64_t be64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

sockaddr_un ptp4l_addr(const std::string &path)
{
	sockaddr_un sa = {};
	sa.sun_family = AF_UNIX;
	if (path.empty() || path.size() >= sizeof(sa.sun_path))
		throw UsageError("'" + path + "' cannot be a Unix socket's path");
	std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
	return sa;
}

} // namespace

bool from_ptp4l(const sockaddr_un &from, socklen_t len, const std::string &ptp4l_path)
{
	// ptp4l sends from the socket it is bound to: its uds_address exactly
	const size_t off = offsetof(sockaddr_un, sun_path);
	if (len <= off || from.sun_family != AF_UNIX)
		return false; // an unbound (unnamed) or abstract sender is not ptp4l
	const size_t n = strnlen(from.sun_path, std::min(sizeof(from.sun_path), (size_t)len - off));
	return std::string_view(from.sun_path, n) == ptp4l_path;
}

std::vector<uint8_t> time_status_request(uint16_t seq)
{
	std::vector<uint8_t> m(kTlv + 6, 0);
	m[0] = 0x0D; // transportSpecific 0, messageType MANAGEMENT
	m[1] = 0x02; // versionPTP 2
	m[2] = (uint8_t)(m.size() >> 8);
	m[3] = (uint8_t)m.size();
	// domain 0, flags 0, correction 0, our port identity 0
	m[30] = (uint8_t)(seq >> 8);
	m[31] = (uint8_t)seq;
	m[32] = 0x04; // controlField: management
	m[33] = 0x7f; // logMessageInterval
	std::memset(&m[kHeader], 0xff, 10); // every clock and port
	m[kHeader + 12] = kActionGet;
	m[kTlv + 1] = kTlvManagement;
	m[kTlv + 3] = 2; // lengthField: the managementId alone
	m[kTlv + 4] = kTimeStatusNp >> 8;
	m[kTlv + 5] = kTimeStatusNp & 0xff;
	return m;
}

std::optional<TimeStatus> parse_time_status(const uint8_t *m, size_t len, std::string *why)
{
	if (len < kTlv + 6 || (m[0] & 0x0f) != 0x0D) {
		*why = "ptp4l answered with no management message";
		return std::nullopt;
	}
	if ((m[kHeader + 12] & 0x0f) != kActionResponse) {
		*why = "ptp4l's answer is no RESPONSE";
		return std::nullopt;
	}
	uint16_t type = be16(m + kTlv), tlv_len = be16(m + kTlv + 2), id = be16(m + kTlv + 4);
	if (type == kTlvManagementErrorStatus) {
		*why = "ptp4l refused TIME_STATUS_NP (error status " + std::to_string(id) + ")";
		return std::nullopt;
	}
	if (type != kTlvManagement || id != kTimeStatusNp || tlv_len < 2 + kTimeStatusLen ||
	    len < kTlv + 6 + kTimeStatusLen) {
		*why = "ptp4l's answer is not TIME_STATUS_NP";
		return std::nullopt;
	}
	const uint8_t *d = m + kTlv + 6;
	TimeStatus st;
	st.master_offset_ns = (int64_t)be64(d);
	st.ingress_ns = (int64_t)be64(d + 8);
	st.gm_present = be32(d + 38) != 0; // after lastGmPhaseChange
	st.is_gm = std::memcmp(d + 42, m + 20, 8) == 0; // gmIdentity vs the responder's clock
	return st;
}

Ptp4lClient::Ptp4lClient(std::string ptp4l_path, std::string local_path)
    : path_(std::move(ptp4l_path)), local_(std::move(local_path))
{
	sockaddr_un me = ptp4l_addr(local_);
	ptp4l_addr(path_);
	fd_.reset(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
	if (!fd_.valid())
		throw Error("cannot make a socket for ptp4l: " + errno_text(errno));
	::unlink(local_.c_str());
	if (bind(fd_.get(), (sockaddr *)&me, sizeof(me)) != 0)
		throw Error("cannot bind " + local_ + " (for ptp4l's answers): " + errno_text(errno));
}

Ptp4lClient::~Ptp4lClient()
{
	::unlink(local_.c_str());
}

std::optional<TimeStatus> Ptp4lClient::query(int timeout_ms, std::string *why)
{
	uint16_t seq = ++seq_;
	std::vector<uint8_t> req = time_status_request(seq);
	sockaddr_un to = ptp4l_addr(path_);
	if (sendto(fd_.get(), req.data(), req.size(), 0, (sockaddr *)&to, sizeof(to)) < 0) {
		*why = "ptp4l at " + path_ + " is not there: " + errno_text(errno);
		return std::nullopt;
	}
	uint8_t buf[1500];
	for (;;) {
		pollfd p = {fd_.get(), POLLIN, 0};
		int n = poll(&p, 1, timeout_ms);
		if (n <= 0) {
			*why = "ptp4l at " + path_ + " did not answer within " + std::to_string(timeout_ms) + " ms";
			return std::nullopt;
		}
		sockaddr_un from = {};
		socklen_t from_len = sizeof(from);
		ssize_t got = recvfrom(fd_.get(), buf, sizeof(buf), 0, (sockaddr *)&from, &from_len);
		if (got < 0) {
			*why = "reading ptp4l's answer: " + errno_text(errno);
			return std::nullopt;
		}
		if (!from_ptp4l(from, from_len, path_)) {
			rejected_++;
			continue; // anyone may send to our socket; only ptp4l's word counts
		}
		if ((size_t)got >= kHeader && be16(buf + 30) != seq)
			continue; // an answer to an earlier query that timed out
		return parse_time_status(buf, (size_t)got, why);
	}
}

void Ptp4lBound::feed(const std::optional<TimeStatus> &st, const std::string &why, uint64_t now_ns)
{
	std::lock_guard<std::mutex> g(mu_);
	r_.queries++;
	if (!st) {
		r_.failures++;
		r_.ok = false;
		r_.why = why;
		offsets_.clear();
		return;
	}
	r_.gm_present = st->gm_present;
	r_.is_gm = st->is_gm;
	r_.last_offset_ns = st->master_offset_ns;
	if (st->ingress_ns != last_ingress_ || !ingress_seen_ns_) {
		last_ingress_ = st->ingress_ns;
		ingress_seen_ns_ = now_ns;
	}
	uint64_t age = now_ns - ingress_seen_ns_;
	uint64_t a = st->master_offset_ns < 0 ? (uint64_t)0 - (uint64_t)st->master_offset_ns
					      : (uint64_t)st->master_offset_ns;
	offsets_.push_back(a);
	while (offsets_.size() > kWindow)
		offsets_.pop_front();
	r_.bound_ns = *std::max_element(offsets_.begin(), offsets_.end());
	r_.ok = st->gm_present && age < kStaleNs;
	if (!st->gm_present)
		r_.why = st->is_gm ? "ptp4l follows no grandmaster: it is its own (on the grandmaster's host, lumend "
				     "needs --clock-error 0)"
				   : "ptp4l follows no grandmaster (gmPresent false)";
	else if (age >= kStaleNs)
		r_.why = "ptp4l has had no sync for " + std::to_string(age / 1'000'000) + " ms";
	else
		r_.why.clear();
}

Ptp4lBound::Reading Ptp4lBound::reading() const
{
	std::lock_guard<std::mutex> g(mu_);
	return r_;
}

} // namespace lumen::lumend
