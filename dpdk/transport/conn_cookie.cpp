#include "transport/conn_cookie.h"

#include <cstring>
#include <stdexcept>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

extern "C" {
#include <lumen/dp_wire.h>
}

namespace lumen::dp
{

/* The HMAC fetched once, with the key set: each cookie duplicates it. */
struct CookieJar::Mac {
	EVP_MAC *mac = nullptr;
	EVP_MAC_CTX *keyed = nullptr;
	~Mac()
	{
		EVP_MAC_CTX_free(keyed);
		EVP_MAC_free(mac);
	}
};

CookieJar::CookieJar() : mac_(std::make_unique<Mac>())
{
	if (RAND_bytes(secret_.data(), (int)secret_.size()) != 1)
		throw std::runtime_error("no random bytes for the connection cookies' secret");
	char digest[] = "SHA256";
	OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
			       OSSL_PARAM_construct_end()};
	mac_->mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
	mac_->keyed = mac_->mac ? EVP_MAC_CTX_new(mac_->mac) : nullptr;
	if (!mac_->keyed || EVP_MAC_init(mac_->keyed, secret_.data(), secret_.size(), params) != 1)
		throw std::runtime_error("OpenSSL has no HMAC-SHA256 for the connection cookies");
}

CookieJar::~CookieJar() = default;

uint32_t CookieJar::mac(uint32_t peer_ip, uint32_t conn_id, uint32_t isn, uint64_t bucket) const
{
	uint8_t in[20], out[EVP_MAX_MD_SIZE];
	size_t out_len = 0;
	lumen_dp_put32(in, peer_ip);
	lumen_dp_put32(in + 4, conn_id);
	lumen_dp_put32(in + 8, isn);
	lumen_dp_put64(in + 12, bucket);
	EVP_MAC_CTX *ctx = EVP_MAC_CTX_dup(mac_->keyed);
	bool ok = ctx && EVP_MAC_update(ctx, in, sizeof in) == 1 &&
		  EVP_MAC_final(ctx, out, &out_len, sizeof out) == 1 && out_len >= 4;
	EVP_MAC_CTX_free(ctx);
	if (!ok)
		return 0; /* never a cookie: check() refuses, and the client retries */
	uint32_t v = lumen_dp_get32(out);
	return v ? v : 1;
}

uint32_t CookieJar::make(uint32_t peer_ip, uint32_t conn_id, uint32_t isn, uint64_t now_ns) const
{
	return mac(peer_ip, conn_id, isn, now_ns >> kBucketShift);
}

bool CookieJar::check(uint32_t peer_ip, uint32_t conn_id, uint32_t isn, uint32_t cookie, uint64_t now_ns) const
{
	uint64_t bucket = now_ns >> kBucketShift;
	if (cookie == 0)
		return false;
	if (mac(peer_ip, conn_id, isn, bucket) == cookie)
		return true;
	return bucket > 0 && mac(peer_ip, conn_id, isn, bucket - 1) == cookie;
}

uint32_t CookieJar::initial_psn()
{
	if (isn_left_ == 0) {
		if (RAND_bytes((unsigned char *)isn_pool_.data(), (int)sizeof isn_pool_) != 1)
			throw std::runtime_error("no random bytes for an initial PSN");
		isn_left_ = isn_pool_.size();
	}
	return isn_pool_[--isn_left_];
}

} // namespace lumen::dp
