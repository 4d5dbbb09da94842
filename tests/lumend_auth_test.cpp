// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/lumend_auth_test.cpp - the HMAC that signs requests to lumend's TCP
// control socket (userspace/base/control_auth.h): libcrypto's HMAC-SHA256
// against RFC 4231's vectors, a signed line verified, and each way a line
// fails: malformed, stale, another key, changed on the way, replayed; the
// header judged on its first bytes; forgotten nonces still refused; the
// answers signed for their request: unsigned, replayed, forged or changed
// answers refused, and no answer passing as a request.
#include <gtest/gtest.h>

#include <string>

#include "base/control_auth.h"

namespace
{

using namespace lumen;

constexpr uint64_t kNow = 1'790'000'000'000; // Unix ms, 2026
const std::string kKey = "0123456789abcdef-secret";
const std::string kNonce = "00112233445566778899aabbccddeeff";

std::string hex(const unsigned char *p, size_t n)
{
	static const char d[] = "0123456789abcdef";
	std::string s;
	for (size_t i = 0; i < n; i++)
		s += std::string{d[p[i] >> 4], d[p[i] & 15]};
	return s;
}

TEST(LumendAuth, HmacSha256MatchesRfc4231)
{
	unsigned char mac[32];
	// RFC 4231 test case 2
	hmac_sha256("Jefe", {"what do ya want ", "for nothing?"}, mac);
	EXPECT_EQ(hex(mac, 32), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
	// test case 1: key 0x0b x 20, "Hi There"
	hmac_sha256(std::string(20, '\x0b'), {"Hi There"}, mac);
	EXPECT_EQ(hex(mac, 32), "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
}

TEST(LumendAuth, SignedLineVerifies)
{
	const std::string req = R"({"cmd":"status"})";
	std::string line = sign_control_request(kKey, req, kNow, kNonce);
	EXPECT_EQ(line.rfind("LUMEN-HMAC1 1790000000000 " + kNonce + " ", 0), 0u) << line;
	EXPECT_EQ(line.size(), 11 + 1 + 13 + 1 + 32 + 1 + 64 + 1 + req.size());
	EXPECT_EQ(line.find(kKey), std::string::npos); // the token never travels
	ControlAuth auth(kKey);
	std::string_view json;
	std::string why;
	EXPECT_EQ(auth.verify(line, kNow + 29'000, &json, &why), ControlAuth::kOk) << why;
	EXPECT_EQ(json, req);
	// a replay of the same line
	EXPECT_EQ(auth.verify(line, kNow + 1000, &json, &why), ControlAuth::kReplay);
	EXPECT_NE(why.find("replay"), std::string::npos);
	// random nonces differ
	EXPECT_NE(sign_control_request(kKey, req, kNow), sign_control_request(kKey, req, kNow));
	EXPECT_EQ(auth.verify(sign_control_request(kKey, req, kNow), kNow, &json, &why), ControlAuth::kOk) << why;
}

TEST(LumendAuth, Refusals)
{
	ControlAuth auth(kKey);
	std::string_view json;
	std::string why;
	const std::string req = R"({"cmd":"status"})";
	// another key
	EXPECT_EQ(auth.verify(sign_control_request(kKey + "x", req, kNow, kNonce), kNow, &json, &why),
		  ControlAuth::kBadMac);
	EXPECT_NE(why.find("MAC does not match"), std::string::npos);
	// changed on the way: the request, the timestamp, the nonce
	std::string line = sign_control_request(kKey, req, kNow, kNonce);
	std::string changed = line;
	changed.replace(changed.find("status"), 6, "stage!");
	EXPECT_EQ(auth.verify(changed, kNow, &json, &why), ControlAuth::kBadMac);
	changed = line;
	changed[24] = '1'; // the timestamp's last digit
	EXPECT_EQ(auth.verify(changed, kNow, &json, &why), ControlAuth::kBadMac);
	changed = line;
	changed[26] = 'f'; // the nonce's first
	EXPECT_EQ(auth.verify(changed, kNow, &json, &why), ControlAuth::kBadMac);
	// stale either way
	EXPECT_EQ(auth.verify(line, kNow + 30'001, &json, &why), ControlAuth::kStale);
	EXPECT_NE(why.find("30 s"), std::string::npos) << why;
	EXPECT_EQ(auth.verify(line, kNow - 30'001, &json, &why), ControlAuth::kStale);
	// none of the failures was remembered: the genuine line still passes
	EXPECT_EQ(auth.verify(line, kNow, &json, &why), ControlAuth::kOk) << why;
	EXPECT_EQ(auth.nonces(), 1u);
	// malformed
	for (const std::string &bad :
	     {std::string(req), "LUMEN-HMAC2 " + line.substr(12), "LUMEN-HMAC1  " + line.substr(12),
	      "LUMEN-HMAC1 01790000000000 " + line.substr(26), "LUMEN-HMAC1 -1 " + line.substr(26),
	      "LUMEN-HMAC1 99999999999999999999 " + line.substr(26), line.substr(0, 26) + "XY" + line.substr(28),
	      line.substr(0, 26) + "0011" + line.substr(59), line.substr(0, 91) + "A" + line.substr(92),
	      line.substr(0, line.size() - req.size() - 1), std::string("")})
		EXPECT_EQ(auth.verify(bad, kNow, &json, &why), ControlAuth::kMalformed) << bad;
}

TEST(LumendAuth, HeaderJudgedOnItsFirstBytes)
{
	ControlAuth auth(kKey);
	std::string why;
	const std::string line = sign_control_request(kKey, R"({"cmd":"status"})", kNow, kNonce);
	// every start of a good line is "wait for more" until the header is whole
	const size_t header = line.find('{');
	ASSERT_LE(header, control_auth::kHeaderMax);
	for (size_t n = 0; n < header; n++)
		EXPECT_EQ(auth.check_header(line.substr(0, n), kNow, &why), ControlAuth::kIncomplete) << n;
	EXPECT_EQ(auth.check_header(line.substr(0, header), kNow, &why), ControlAuth::kOk);
	// garbage, a plain JSON request (the old token in clear), a huge
	// timestamp field, a stale one: refused at once
	EXPECT_EQ(auth.check_header("{\"cmd\":\"stage\",\"token\":", kNow, &why), ControlAuth::kMalformed);
	EXPECT_EQ(auth.check_header("LUMEN", kNow, &why), ControlAuth::kIncomplete);
	EXPECT_EQ(auth.check_header("LUMEX", kNow, &why), ControlAuth::kMalformed);
	EXPECT_EQ(auth.check_header("LUMEN-HMAC1 " + std::string(21, '1'), kNow, &why), ControlAuth::kMalformed);
	EXPECT_EQ(auth.check_header("LUMEN-HMAC1 1000 ", kNow, &why), ControlAuth::kStale);
	// only the first kHeaderMax bytes are looked at
	EXPECT_EQ(auth.check_header(line + std::string(1 << 20, 'x'), kNow, &why), ControlAuth::kOk);
}

TEST(LumendAuth, ForgottenNoncesStayRefused)
{
	ControlAuth auth(kKey);
	std::string_view json;
	std::string why;
	const std::string first = sign_control_request(kKey, "{}", kNow, kNonce);
	ASSERT_EQ(auth.verify(first, kNow, &json, &why), ControlAuth::kOk);
	// fill the remembered set past its bound within one timestamp window
	for (size_t i = 0; i < control_auth::kMaxNonces; i++)
		ASSERT_EQ(auth.verify(sign_control_request(kKey, "{}", kNow + 1 + i / 10'000), kNow, &json, &why),
			  ControlAuth::kOk)
			<< i << why;
	EXPECT_EQ(auth.nonces(), control_auth::kMaxNonces);
	EXPECT_GE(auth.floor_ms(), kNow);
	// the first nonce is forgotten, and its timestamp is refused for that
	EXPECT_EQ(auth.verify(first, kNow, &json, &why), ControlAuth::kReplay);
	// later ones pass
	EXPECT_EQ(auth.verify(sign_control_request(kKey, "{}", kNow + 20), kNow, &json, &why), ControlAuth::kOk) << why;
	// and all is forgotten once the timestamps could not pass anyway
	EXPECT_EQ(auth.verify(sign_control_request(kKey, "{}", kNow + 61'000), kNow + 61'000, &json, &why),
		  ControlAuth::kOk)
		<< why;
	EXPECT_EQ(auth.nonces(), 1u);
}

// Answers over TCP are signed for the request they answer (control_auth.h):
// before, lumend's answers were plain JSON that anyone on the way could
// forge ("committed") or replay from an earlier request.
TEST(LumendAuth, AnswerSignedForItsRequest)
{
	const std::string answer = R"({"committed":2})";
	const std::string line = sign_control_answer(kKey, kNonce, answer);
	EXPECT_EQ(line.rfind("LUMEN-HMAC1R " + kNonce + " ", 0), 0u) << line;
	EXPECT_EQ(line.size(), 12 + 1 + 32 + 1 + 64 + 1 + answer.size());
	EXPECT_EQ(line.find(kKey), std::string::npos);
	// the MAC is the documented one: over "LUMEN-HMAC1R NONCE JSON"
	unsigned char mac[32];
	hmac_sha256(kKey, {"LUMEN-HMAC1R " + kNonce + " " + answer}, mac);
	EXPECT_EQ(line.substr(46, 64), hex(mac, 32));
	std::string_view json;
	std::string why;
	EXPECT_EQ(verify_control_answer(kKey, kNonce, line, &json, &why), AnswerVerdict::kOk) << why;
	EXPECT_EQ(json, answer);
	// ControlAuth signs the same way for the nonce verify() hands out
	ControlAuth auth(kKey);
	std::string_view nonce; /* into the request line: it must outlive the view */
	const std::string request = sign_control_request(kKey, "{}", kNow, kNonce);
	ASSERT_EQ(auth.verify(request, kNow, &json, &why, &nonce), ControlAuth::kOk);
	EXPECT_EQ(nonce, kNonce);
	EXPECT_EQ(auth.sign_answer(nonce, answer), line);
}

TEST(LumendAuth, BadAnswersRefused)
{
	const std::string answer = R"({"committed":2})";
	const std::string line = sign_control_answer(kKey, kNonce, answer);
	std::string_view json;
	std::string why;
	// unsigned: plain JSON (what lumend sent before; a refusal), a request line
	EXPECT_EQ(verify_control_answer(kKey, kNonce, answer, &json, &why), AnswerVerdict::kUnsigned);
	EXPECT_NE(why.find("not signed"), std::string::npos) << why;
	EXPECT_EQ(verify_control_answer(kKey, kNonce, sign_control_request(kKey, answer, kNow, kNonce), &json, &why),
		  AnswerVerdict::kUnsigned);
	EXPECT_EQ(verify_control_answer(kKey, kNonce, line.substr(0, 110), &json, &why), AnswerVerdict::kUnsigned);
	EXPECT_EQ(verify_control_answer(kKey, kNonce, "", &json, &why), AnswerVerdict::kUnsigned);
	// replayed: a genuine answer to another request
	const std::string other = "ffeeddccbbaa99887766554433221100";
	EXPECT_EQ(verify_control_answer(kKey, other, line, &json, &why), AnswerVerdict::kOtherRequest);
	EXPECT_NE(why.find("replayed"), std::string::npos) << why;
	// forged: another key, a changed body, a changed MAC
	EXPECT_EQ(verify_control_answer(kKey, kNonce, sign_control_answer(kKey + "x", kNonce, answer), &json, &why),
		  AnswerVerdict::kBadMac);
	std::string changed = line;
	changed.replace(changed.size() - 2, 1, "3");
	EXPECT_EQ(verify_control_answer(kKey, kNonce, changed, &json, &why), AnswerVerdict::kBadMac);
	changed = line;
	changed[46] = changed[46] == '0' ? '1' : '0';
	EXPECT_EQ(verify_control_answer(kKey, kNonce, changed, &json, &why), AnswerVerdict::kBadMac);
	// the nonce re-signed under another request's nonce field does not pass
	changed = line;
	changed.replace(13, 32, other);
	EXPECT_EQ(verify_control_answer(kKey, other, changed, &json, &why), AnswerVerdict::kBadMac);
	// and an answer never passes as a request
	ControlAuth auth(kKey);
	EXPECT_EQ(auth.verify(line, kNow, &json, &why), ControlAuth::kMalformed);
}

} // namespace
