// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/base/control_auth.h - how a request to lumend's TCP control
// socket proves it comes from a holder of the daemon's token without
// sending the token: an HMAC-SHA256 (OpenSSL's libcrypto, never our own
// cryptography) over the request, a timestamp and a nonce.
//
// The wire format, one request per line:
//
//   LUMEN-HMAC1 <ts_ms> <nonce> <mac> <json>\n
//
//   ts_ms   the sender's CLOCK_REALTIME in Unix milliseconds, decimal (1 to
//           20 digits, no sign, no leading zero)
//   nonce   16 random bytes as 32 lowercase hex digits, new for each request
//   mac     HMAC-SHA256 as 64 lowercase hex digits, keyed with the token
//           (the bytes of the --control-token file's line), over
//           "LUMEN-HMAC1 <ts_ms> <nonce> <json>": the line without the mac
//           field and the space after it, and without the newline
//   json    the request object, as on the local socket
//
// The daemon checks the header (the first kHeaderMax bytes at most) before
// it looks at anything else: a malformed header or a timestamp more than
// kSkewMs from its own clock is refused as soon as those bytes arrive,
// before the rest of the line is even buffered. Then the MAC (compared in
// constant time, CRYPTO_memcmp), and only then the nonce: one it has seen
// is a replay. Nonces are remembered as long as their timestamp could
// still pass (2 x kSkewMs), at most kMaxNonces of them; when more come, the
// oldest are forgotten and every timestamp up to theirs is refused from
// then on, so a forgotten nonce cannot be replayed either. Only after all
// of that is the JSON parsed.
//
// Answers are signed too, bound to the request they answer, so that nobody
// on the way can forge an answer or hand a client an old one (a "committed"
// that never happened, a stale status):
//
//   LUMEN-HMAC1R <nonce> <mac> <json>\n
//
//   nonce   the nonce of the request this answers (its 32 hex digits)
//   mac     HMAC-SHA256 as 64 lowercase hex digits, keyed with the token,
//           over "LUMEN-HMAC1R <nonce> <json>"
//   json    the answer object, as on the local socket
//
// Why the request's nonce and no timestamp of its own: the client made the
// nonce at random for this one request, so an answer that carries it and
// verifies was made by a token holder for this request, now; an answer
// replayed from an earlier request carries that request's nonce. The magic
// differs from the requests' ("HMAC1R", and the MAC covers it), so an
// answer can never pass as a request or the other way round. lumend signs
// only answers to requests that passed authentication: a refusal (a bad
// header or MAC, a replay, a blocked address, a full budget) is sent
// unsigned, and a client takes an unsigned answer as a refusal, never as
// data. Neither requests nor answers are hidden: the MACs authenticate,
// they do not encrypt.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>

namespace lumen
{

namespace control_auth
{

constexpr std::string_view kMagic = "LUMEN-HMAC1";
constexpr std::string_view kAnswerMagic = "LUMEN-HMAC1R";
constexpr size_t kNonceHex = 32, kMacHex = 64, kMaxTsDigits = 20;
// "LUMEN-HMAC1 " + ts + " " + nonce + " " + mac + " "
constexpr size_t kHeaderMax = 11 + 1 + kMaxTsDigits + 1 + kNonceHex + 1 + kMacHex + 1;
constexpr uint64_t kSkewMs = 30'000;
constexpr size_t kMaxNonces = 100'000;

} // namespace control_auth

// HMAC-SHA256 of the concatenation of parts under key (libcrypto's EVP_MAC).
// Error when libcrypto fails (it does not, short of memory).
void hmac_sha256(std::string_view key, std::initializer_list<std::string_view> parts, unsigned char out[32]);

// The line (without its newline) that carries request_json to a lumend whose
// token is key, stamped now_ms with a fresh random nonce (RAND_bytes).
std::string sign_control_request(std::string_view key, std::string_view request_json, uint64_t now_ms);
// The same with a given nonce (32 lowercase hex digits), for tests.
std::string sign_control_request(std::string_view key, std::string_view request_json, uint64_t now_ms,
				 std::string_view nonce);

// A fresh nonce: 16 random bytes (RAND_bytes) as 32 lowercase hex digits.
std::string new_control_nonce();

// lumend's answer to an authenticated request whose nonce was request_nonce:
// the line (without its newline) "LUMEN-HMAC1R NONCE MAC JSON".
std::string sign_control_answer(std::string_view key, std::string_view request_nonce, std::string_view answer_json);

// The client's side: an answer line (no newline) to the request it signed
// with request_nonce. kOk with *json the answer; kUnsigned for a line that
// is not a signed answer (lumend's refusals are unsigned, and anyone on the
// way can write one), kOtherRequest for a signed answer to another request
// (a replay), kBadMac for one signed with another key or changed on the way.
// *why says which, for people.
enum class AnswerVerdict {
	kOk,
	kUnsigned,
	kOtherRequest,
	kBadMac,
};
AnswerVerdict verify_control_answer(std::string_view key, std::string_view request_nonce, std::string_view line,
				    std::string_view *json, std::string *why);

// lumend's side: checks lines against its token and remembers nonces.
class ControlAuth
{
      public:
	explicit ControlAuth(std::string key) : key_(std::move(key))
	{
	}
	enum Verdict {
		kOk,
		kIncomplete, // check_header: too few bytes yet to judge
		kMalformed,
		kStale,
		kBadMac,
		kReplay,
	};
	// The start of a line still arriving (any length; only the first
	// kHeaderMax bytes are looked at): kIncomplete, kOk when its header is
	// well formed and its timestamp within kSkewMs of now_ms, else kMalformed
	// or kStale with *why.
	Verdict check_header(std::string_view start, uint64_t now_ms, std::string *why) const;
	// A whole line (no newline): kOk with *json the request, the nonce
	// remembered; else the verdict with *why. Nothing is remembered for a
	// line that fails.
	// *nonce (when given): the request's nonce, for its signed answer.
	Verdict verify(std::string_view line, uint64_t now_ms, std::string_view *json, std::string *why,
		       std::string_view *nonce = nullptr);
	// The answer to a request that verify() accepted with this nonce, signed.
	std::string sign_answer(std::string_view nonce, std::string_view answer_json) const
	{
		return sign_control_answer(key_, nonce, answer_json);
	}
	size_t nonces() const
	{
		return seen_.size();
	}
	uint64_t floor_ms() const
	{
		return floor_ms_;
	}

      private:
	struct Header {
		uint64_t ts_ms = 0;
		std::string_view ts, nonce, mac;
		size_t body = 0; // where the JSON starts
	};
	Verdict parse(std::string_view line, bool whole, uint64_t now_ms, Header *h, std::string *why) const;
	std::string key_;
	std::unordered_set<std::string> seen_;
	std::deque<std::pair<uint64_t, std::string>> order_; // (ts_ms, nonce), oldest first
	uint64_t floor_ms_ = 0; // timestamps up to this one are refused (forgotten nonces)
};

} // namespace lumen
