// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/lumend/ptp4l.h - the clock's error bound from ptp4l (linuxptp):
// lumend asks ptp4l's management socket (a Unix datagram socket, its
// uds_address, /var/run/ptp4l by default) for TIME_STATUS_NP, as `pmc -u
// -b 0 'GET TIME_STATUS_NP'` does, and takes the largest |master_offset| of
// the last readings as the bound, instead of a bound stated by hand.
//
// The messages are IEEE 1588 management messages (a 34-byte header, the
// target port, the action, then one MANAGEMENT TLV), big-endian;
// TIME_STATUS_NP (0xC000) is linuxptp's own: master_offset and
// ingress_time (ns, the last sync), cumulativeScaledRateOffset,
// scaledLastGmPhaseChange, gmTimeBaseIndicator, lastGmPhaseChange (12
// bytes), gmPresent and gmIdentity.
//
// The verdict: trusted while this host follows a grandmaster (gmPresent)
// and the bound is within the margin; not trusted when ptp4l does not
// answer, follows no grandmaster, or its last sync has not moved for 4 s (4
// of ptp4l's default sync intervals). A ptp4l that names itself the
// grandmaster is not trusted either: one that has not found its master yet
// says the same. The grandmaster's own host is the time scale: lumend there
// runs with --clock-error 0.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <sys/socket.h>
#include <sys/un.h>

#include "base/fd.h"

namespace lumen::lumend
{

constexpr uint16_t kTimeStatusNp = 0xC000;

// A GET of TIME_STATUS_NP with sequence number seq.
std::vector<uint8_t> time_status_request(uint16_t seq);

struct TimeStatus {
	int64_t master_offset_ns = 0;
	int64_t ingress_ns = 0; // when the last sync came in (ptp4l's clock)
	bool gm_present = false;
	bool is_gm = false; // gmIdentity is the responder's own clock (the grandmaster, or none found yet)
};

// A RESPONSE to that GET: the status, or nullopt with *why (too short, not
// a management response, another TLV, an error status TLV).
std::optional<TimeStatus> parse_time_status(const uint8_t *msg, size_t len, std::string *why);

// Whether a datagram came from ptp4l: its sender's address (recvfrom's) is
// ptp4l_path. Our own socket's path is known to every local user, who
// could otherwise feed lumend a clock bound of their choosing.
bool from_ptp4l(const sockaddr_un &from, socklen_t len, const std::string &ptp4l_path);

// ptp4l's management socket, from a socket of lumend's own (bound at
// local_path, removed at the end). Error when it cannot be made.
class Ptp4lClient
{
      public:
	Ptp4lClient(std::string ptp4l_path, std::string local_path);
	~Ptp4lClient();
	Ptp4lClient(const Ptp4lClient &) = delete;
	Ptp4lClient &operator=(const Ptp4lClient &) = delete;
	// One query, waiting up to timeout_ms: the status, or nullopt with *why.
	std::optional<TimeStatus> query(int timeout_ms, std::string *why);
	const std::string &path() const
	{
		return path_;
	}
	uint64_t rejected() const // datagrams dropped: not from ptp4l's socket
	{
		return rejected_;
	}

      private:
	std::string path_, local_;
	Fd fd_;
	uint16_t seq_ = 0;
	uint64_t rejected_ = 0;
};

// The bound from ptp4l's readings, shared by the control thread (which
// queries) and the slot engine (which judges, at its checks).
class Ptp4lBound
{
      public:
	static constexpr size_t kWindow = 8; // readings the bound is the largest of
	static constexpr uint64_t kStaleNs = 4'000'000'000; // no new sync for this long: stale (4 sync intervals)

	// One query's outcome at now_ns (CLOCK_MONOTONIC; nullopt: ptp4l did
	// not answer, why says so).
	void feed(const std::optional<TimeStatus> &st, const std::string &why, uint64_t now_ns);
	struct Reading {
		bool ok = false; // known, and the host follows a grandmaster (or is one)
		uint64_t bound_ns = UINT64_MAX;
		int64_t last_offset_ns = 0;
		bool gm_present = false, is_gm = false;
		uint64_t queries = 0, failures = 0;
		std::string why; // why not ok
	};
	Reading reading() const;

      private:
	mutable std::mutex mu_;
	std::deque<uint64_t> offsets_;
	Reading r_;
	int64_t last_ingress_ = 0;
	uint64_t ingress_seen_ns_ = 0; // when last_ingress_ was first seen
};

} // namespace lumen::lumend
