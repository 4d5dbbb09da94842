// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/dp_test_frames.h - what the lumen-dp engine tests send frames into:
// a FrameSink that keeps every frame an engine builds, in order.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "transport/engine.h"

namespace lumen::dp::test
{

using Frame = std::vector<uint8_t>;

class VecSink : public FrameSink
{
      public:
	explicit VecSink(uint32_t room = 2048) : room_(room)
	{
	}
	uint8_t *next(uint32_t *room) override
	{
		buf_.assign(room_, 0);
		*room = room_;
		return buf_.data();
	}
	void done(uint32_t len) override
	{
		buf_.resize(len);
		frames.push_back(buf_);
	}
	// A NIC that gathers: frames of region gather_region are the headers
	// and the payload read where it lies (0: no zero copy).
	bool attach(uint32_t hdr_len, const uint8_t *payload, uint32_t len, uint32_t region) override
	{
		if (!gather_region || region != gather_region)
			return false;
		buf_.resize(hdr_len);
		buf_.insert(buf_.end(), payload, payload + len);
		frames.push_back(buf_);
		gathered++;
		return true;
	}
	std::vector<Frame> frames;
	uint32_t gather_region = 0;
	uint64_t gathered = 0;

      private:
	uint32_t room_;
	Frame buf_;
};

// A connection of e to peer_ip, established as if the peer had answered its
// handshake (e's SYN taken off first): for the tests of one engine, whose
// PSNs then start at c->isn.
inline Connection *connect_open(Engine &e, uint32_t peer_ip, const Mac &peer_mac, uint32_t id, uint64_t now)
{
	Connection *c = e.connect(peer_ip, peer_mac, id, now);
	if (!c)
		return nullptr;
	VecSink syn(e.config().mtu + 14);
	e.tx(syn, now, 64);
	lumen_dp_pkt p{};
	std::memcpy(p.eth_src, peer_mac.data(), 6);
	std::memcpy(p.eth_dst, e.config().mac.data(), 6);
	p.ip_src = peer_ip;
	p.ip_dst = e.config().ip;
	p.sport = 49151;
	p.dport = e.config().udp_port;
	p.type = LUMEN_DP_SYNACK;
	p.flags = LUMEN_DP_F_REPLY;
	p.conn_id = id;
	p.psn = c->isn;
	Frame f(128);
	int n = lumen_dp_build(f.data(), (uint32_t)f.size(), &p);
	if (n > 0)
		e.rx(f.data(), (uint32_t)n, now);
	return c->state == ConnState::kEstablished ? c : nullptr;
}

// The server's side of connection id from peer_ip, opened by a handshake
// written by hand (a SYN, the cookie of e's SYNACK echoed), its PSNs from
// isn: for the tests that hand one engine DATA frames of their own making.
inline Connection *accept_open(Engine &e, uint32_t peer_ip, const Mac &peer_mac, uint32_t id, uint32_t isn,
			       uint64_t now)
{
	lumen_dp_pkt p{};
	std::memcpy(p.eth_src, peer_mac.data(), 6);
	std::memcpy(p.eth_dst, e.config().mac.data(), 6);
	p.ip_src = peer_ip;
	p.ip_dst = e.config().ip;
	p.sport = 49152;
	p.dport = e.config().udp_port;
	p.type = LUMEN_DP_SYN;
	p.conn_id = id;
	p.psn = isn;
	p.ts_ns = now;
	for (int step = 0; step < 2; step++) {
		Frame f(128);
		int n = lumen_dp_build(f.data(), (uint32_t)f.size(), &p);
		if (n <= 0)
			return nullptr;
		e.rx(f.data(), (uint32_t)n, now);
		VecSink answers(e.config().mtu + 14);
		e.tx(answers, now, 64);
		for (const Frame &a : answers.frames) {
			lumen_dp_pkt q;
			if (lumen_dp_parse(a.data(), (uint32_t)a.size(), e.config().udp_port, &q) == 0 &&
			    q.type == LUMEN_DP_SYNACK && q.conn_id == id && q.cookie) {
				p.flags = LUMEN_DP_F_COOKIE;
				p.cookie = q.cookie;
			}
		}
	}
	Connection *c = e.find(peer_ip, id);
	return c && c->state == ConnState::kEstablished ? c : nullptr;
}

} // namespace lumen::dp::test
