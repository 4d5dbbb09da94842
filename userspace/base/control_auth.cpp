// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/base/control_auth.cpp - HMAC-signed control requests
// (control_auth.h), on OpenSSL's libcrypto.
#include "base/control_auth.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <memory>

#include "base/error.h"

namespace lumen
{

using namespace control_auth;

namespace
{

constexpr char kHex[] = "0123456789abcdef";

std::string hex(const unsigned char *p, size_t n)
{
	std::string s(2 * n, '0');
	for (size_t i = 0; i < n; i++) {
		s[2 * i] = kHex[p[i] >> 4];
		s[2 * i + 1] = kHex[p[i] & 15];
	}
	return s;
}

bool lower_hex(std::string_view s)
{
	for (char c : s)
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return false;
	return true;
}

int nibble(char c)
{
	return c <= '9' ? c - '0' : c - 'a' + 10;
}

uint64_t distance(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

} // namespace

void hmac_sha256(std::string_view key, std::initializer_list<std::string_view> parts, unsigned char out[32])
{
	// one fetch per process: EVP_MAC_fetch looks the algorithm up by name
	static EVP_MAC *mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
	if (!mac)
		throw Error("libcrypto has no HMAC");
	std::unique_ptr<EVP_MAC_CTX, decltype(&EVP_MAC_CTX_free)> ctx(EVP_MAC_CTX_new(mac), EVP_MAC_CTX_free);
	char digest[] = "SHA256";
	OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
			       OSSL_PARAM_construct_end()};
	// an empty key is legal HMAC; libcrypto wants a non-null pointer for it
	static const unsigned char none = 0;
	const unsigned char *k = key.empty() ? &none : (const unsigned char *)key.data();
	if (!ctx || EVP_MAC_init(ctx.get(), k, key.size(), params) != 1)
		throw Error("libcrypto cannot start an HMAC-SHA256");
	for (std::string_view p : parts)
		if (!p.empty() && EVP_MAC_update(ctx.get(), (const unsigned char *)p.data(), p.size()) != 1)
			throw Error("libcrypto cannot compute an HMAC-SHA256");
	size_t len = 0;
	if (EVP_MAC_final(ctx.get(), out, &len, 32) != 1 || len != 32)
		throw Error("libcrypto cannot finish an HMAC-SHA256");
}

std::string sign_control_request(std::string_view key, std::string_view request_json, uint64_t now_ms,
				 std::string_view nonce)
{
	const std::string ts = std::to_string(now_ms);
	std::string head = std::string(kMagic) + " " + ts + " " + std::string(nonce) + " ";
	unsigned char mac[32];
	hmac_sha256(key, {head, request_json}, mac);
	return head + hex(mac, sizeof(mac)) + " " + std::string(request_json);
}

std::string new_control_nonce()
{
	unsigned char nonce[kNonceHex / 2];
	if (RAND_bytes(nonce, sizeof(nonce)) != 1)
		throw Error("libcrypto's random generator failed (RAND_bytes) making a nonce");
	return hex(nonce, sizeof(nonce));
}

std::string sign_control_request(std::string_view key, std::string_view request_json, uint64_t now_ms)
{
	return sign_control_request(key, request_json, now_ms, new_control_nonce());
}

std::string sign_control_answer(std::string_view key, std::string_view request_nonce, std::string_view answer_json)
{
	std::string head = std::string(kAnswerMagic) + " " + std::string(request_nonce) + " ";
	unsigned char mac[32];
	hmac_sha256(key, {head, answer_json}, mac);
	return head + hex(mac, sizeof(mac)) + " " + std::string(answer_json);
}

AnswerVerdict verify_control_answer(std::string_view key, std::string_view request_nonce, std::string_view line,
				    std::string_view *json, std::string *why)
{
	// "LUMEN-HMAC1R " NONCE " " MAC " " JSON, every field of fixed length
	const size_t magic = kAnswerMagic.size() + 1, nonce_at = magic, mac_at = nonce_at + kNonceHex + 1,
		     body_at = mac_at + kMacHex + 1;
	if (line.size() < body_at || line.substr(0, magic - 1) != kAnswerMagic || line[magic - 1] != ' ' ||
	    line[mac_at - 1] != ' ' || line[body_at - 1] != ' ' || !lower_hex(line.substr(nonce_at, kNonceHex)) ||
	    !lower_hex(line.substr(mac_at, kMacHex))) {
		*why = "the answer is not signed (over TCP lumend signs every answer to a signed request: \"" +
		       std::string(kAnswerMagic) +
		       " NONCE MAC JSON\"; an unsigned line is a refusal, or was written by someone on the way)";
		return AnswerVerdict::kUnsigned;
	}
	if (line.substr(nonce_at, kNonceHex) != request_nonce) {
		*why = "the answer is signed for another request (not this request's nonce): a replayed answer";
		return AnswerVerdict::kOtherRequest;
	}
	unsigned char want[32], got[32];
	hmac_sha256(key, {line.substr(0, mac_at), line.substr(body_at)}, want);
	for (size_t i = 0; i < sizeof(got); i++)
		got[i] = (unsigned char)(nibble(line[mac_at + 2 * i]) << 4 | nibble(line[mac_at + 2 * i + 1]));
	if (CRYPTO_memcmp(want, got, sizeof(want)) != 0) {
		*why = "the answer's MAC does not match (signed with another token than ours, or changed on the way)";
		return AnswerVerdict::kBadMac;
	}
	*json = line.substr(body_at);
	return AnswerVerdict::kOk;
}

// Splits "LUMEN-HMAC1 ts nonce mac json" field by field, each bounded; whole:
// line is the entire line, else only its start has arrived.
ControlAuth::Verdict ControlAuth::parse(std::string_view line, bool whole, uint64_t now_ms, Header *h,
					std::string *why) const
{
	const std::string_view start = line.substr(0, kHeaderMax);
	auto malformed = [&](const std::string &what) {
		*why = "over TCP a request line is \"" + std::string(kMagic) +
		       " TS_MS NONCE MAC JSON\" (docs/lumend.md): " + what;
		return kMalformed;
	};
	size_t pos = 0;
	// each field: the bytes up to the next space, at most max of them
	auto field = [&](size_t max, std::string_view *out) -> int {
		size_t sp = start.find(' ', pos);
		if (sp == std::string_view::npos) {
			if (start.size() - pos > max || whole)
				return -1;
			return 0; // more may come
		}
		if (sp - pos > max)
			return -1;
		*out = start.substr(pos, sp - pos);
		pos = sp + 1;
		return 1;
	};
	std::string_view magic;
	int r = field(kMagic.size(), &magic);
	if (r == 0)
		return kMagic.substr(0, start.size()) == start ? kIncomplete : malformed("no " + std::string(kMagic));
	if (r < 0 || magic != kMagic)
		return malformed("no " + std::string(kMagic));
	r = field(kMaxTsDigits, &h->ts);
	if (r == 0)
		return kIncomplete;
	if (r < 0 || h->ts.empty() || h->ts.find_first_not_of("0123456789") != std::string_view::npos ||
	    (h->ts.size() > 1 && h->ts[0] == '0'))
		return malformed("the timestamp is not Unix milliseconds");
	h->ts_ms = 0;
	for (char c : h->ts) {
		if (h->ts_ms > (UINT64_MAX - 9) / 10)
			return malformed("the timestamp is out of range");
		h->ts_ms = h->ts_ms * 10 + (uint64_t)(c - '0');
	}
	if (distance(h->ts_ms, now_ms) > kSkewMs) {
		*why = "the request's timestamp is " + std::to_string(distance(h->ts_ms, now_ms) / 1000) + " s from " +
		       "lumend's clock (more than " + std::to_string(kSkewMs / 1000) +
		       " s: a replay, or a clock to fix)";
		return kStale;
	}
	r = field(kNonceHex, &h->nonce);
	if (r == 0)
		return kIncomplete;
	if (r < 0 || h->nonce.size() != kNonceHex || !lower_hex(h->nonce))
		return malformed("the nonce is not 32 lowercase hex digits");
	r = field(kMacHex, &h->mac);
	if (r == 0)
		return kIncomplete;
	if (r < 0 || h->mac.size() != kMacHex || !lower_hex(h->mac))
		return malformed("the MAC is not 64 lowercase hex digits");
	h->body = pos;
	return kOk;
}

ControlAuth::Verdict ControlAuth::check_header(std::string_view start, uint64_t now_ms, std::string *why) const
{
	Header h;
	return parse(start, false, now_ms, &h, why);
}

ControlAuth::Verdict ControlAuth::verify(std::string_view line, uint64_t now_ms, std::string_view *json,
					 std::string *why, std::string_view *nonce)
{
	Header h;
	Verdict v = parse(line, true, now_ms, &h, why);
	if (v != kOk)
		return v;
	const std::string_view signed_head = line.substr(0, h.body - kMacHex - 1), body = line.substr(h.body);
	unsigned char want[32], got[32];
	hmac_sha256(key_, {signed_head, body}, want);
	for (size_t i = 0; i < sizeof(got); i++)
		got[i] = (unsigned char)(nibble(h.mac[2 * i]) << 4 | nibble(h.mac[2 * i + 1]));
	if (CRYPTO_memcmp(want, got, sizeof(want)) != 0) {
		*why = "the request's MAC does not match (signed with another token than this lumend's "
		       "--control-token, or changed on the way)";
		return kBadMac;
	}
	// forget what could no longer pass the timestamp check anyway
	while (!order_.empty() && order_.front().first + 2 * kSkewMs < now_ms) {
		seen_.erase(order_.front().second);
		order_.pop_front();
	}
	if (h.ts_ms <= floor_ms_ || seen_.count(std::string(h.nonce))) {
		*why = "the request was seen before (its nonce is not new): a replay";
		return kReplay;
	}
	while (order_.size() >= kMaxNonces) {
		floor_ms_ = std::max(floor_ms_, order_.front().first);
		seen_.erase(order_.front().second);
		order_.pop_front();
	}
	seen_.insert(std::string(h.nonce));
	order_.emplace_back(h.ts_ms, std::string(h.nonce));
	*json = body;
	if (nonce)
		*nonce = h.nonce;
	return kOk;
}

} // namespace lumen
