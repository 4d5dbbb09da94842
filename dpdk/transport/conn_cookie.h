/*
 * conn_cookie.h - the secrets of a connection's establishment: the server's
 * cookie and the client's initial PSN.
 *
 * A server answers a SYN without keeping anything (dp_wire.h: SYN, SYNACK,
 * FIN): its SYNACK carries a cookie, a MAC over the client's address,
 * connection id and initial PSN under a secret of this engine's and the
 * time of day in coarse buckets. Only a client that received it, and so
 * owns the address it sends from, can echo it; the server opens the
 * connection when the echo checks, so a stream of forged frames, DATA or
 * SYN, from addresses that do not answer allocates nothing (TCP's SYN
 * cookies, RFC 4987 3.6, with the state carried in the echo instead of the
 * sequence number). The MAC is HMAC-SHA256 from OpenSSL's libcrypto, cut to
 * 32 bits: an off-path sender guesses it at 2^-32 per try. A cookie is good
 * for the bucket it was made in and the one after (64 to 128 s).
 *
 * The initial PSN is drawn per connection from the system's random source
 * (RFC 6528's aim: an incarnation's PSNs are not another's), so a client
 * that runs again with the same connection ids, against a server that
 * still holds the old ones, is told apart: its SYN names another PSN.
 */
#ifndef LUMEN_DP_CONN_COOKIE_H
#define LUMEN_DP_CONN_COOKIE_H

#include <array>
#include <cstdint>
#include <memory>

namespace lumen::dp
{

class CookieJar
{
      public:
	static constexpr unsigned kBucketShift = 36; /* 2^36 ns: 68.7 s */

	/* A new secret from the system's random source; throws std::runtime_error without one. */
	CookieJar();
	~CookieJar();
	CookieJar(const CookieJar &) = delete;
	CookieJar &operator=(const CookieJar &) = delete;

	/* The cookie of (peer, conn_id, isn) at now_ns: never 0. */
	uint32_t make(uint32_t peer_ip, uint32_t conn_id, uint32_t isn, uint64_t now_ns) const;
	/* Whether cookie is the one made at now_ns or in the bucket before. */
	bool check(uint32_t peer_ip, uint32_t conn_id, uint32_t isn, uint32_t cookie, uint64_t now_ns) const;
	/* A fresh initial PSN. */
	uint32_t initial_psn();

      private:
	uint32_t mac(uint32_t peer_ip, uint32_t conn_id, uint32_t isn, uint64_t bucket) const;

	std::array<uint8_t, 32> secret_{};
	struct Mac; /* OpenSSL's, kept out of this header */
	std::unique_ptr<Mac> mac_;
	std::array<uint32_t, 64> isn_pool_{};
	size_t isn_left_ = 0;
};

} // namespace lumen::dp

#endif
