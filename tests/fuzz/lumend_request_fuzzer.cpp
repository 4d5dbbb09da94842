// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/fuzz/lumend_request_fuzzer.cpp - lumend's control requests
// (userspace/lumend/control.h, base/control_auth.h): a line to its answer,
// as the Unix socket takes it, as TCP takes it (the HMAC header judged on
// its first bytes and whole), and signed with the right key so that the
// fuzzer's JSON gets past the MAC to the parser and the handlers. Every
// answer must be one line of JSON holding an object; the answer's signature
// (the client's check of any bytes, and lumend's signed answers verifying
// for their request only) too.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "base/control_auth.h"
#include "lumend/control.h"

namespace
{

using namespace lumen;
using namespace lumen::lumend;
using json = nlohmann::json;

constexpr uint64_t kNow = 1'790'000'000'000;
const std::string kKey = "fuzz-token-0123456789";
const std::string kNonce = "0123456789abcdef0123456789abcdef";

const Handlers &handlers()
{
	static const Handlers h = [] {
		Handlers h;
		h["status"] = [] { return json{{"node", 1}}; };
		h["fails"] = []() -> json { throw std::runtime_error("no luck"); };
		// like lumend's stage: typed keys, one of them local only
		h["stage"] = Handler({"file", "schedule", "at"},
				     [](const json &req) {
					     if (!req.contains("at") || !req["at"].is_number_unsigned())
						     throw std::runtime_error("\"at\"");
					     return json{{"staged", req.size()}, {"at", req["at"]}};
				     },
				     {"file"});
		return h;
	}();
	return h;
}

void check_answer(const std::string &a)
{
	// one line of JSON, an object
	if (a.find('\n') != std::string::npos)
		abort();
	json j = json::parse(a, nullptr, false);
	if (j.is_discarded() || !j.is_object())
		abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const std::string_view line((const char *)data + 1, size - 1);
	bool ok = false;
	switch (data[0] % 3) {
	case 0: // the Unix socket, or TCP after authentication
		check_answer(answer_line(line, handlers(), &ok, data[0] & 4));
		break;
	case 1: { // TCP, as the bytes come: the header, then the whole line
		ControlAuth auth(kKey);
		std::string why;
		std::string_view body;
		ControlAuth::Verdict h = auth.check_header(line, kNow, &why);
		ControlAuth::Verdict v = auth.verify(line, kNow, &body, &why);
		// a line the header check refused is never accepted whole
		if (h != ControlAuth::kOk && h != ControlAuth::kIncomplete && v == ControlAuth::kOk)
			abort();
		if (v == ControlAuth::kOk)
			check_answer(answer_line(body, handlers(), &ok, true));
		// the client's side: the same bytes as an answer to a request of
		// ours; one it takes is the documented line, and its body the tail
		std::string_view answer;
		if (verify_control_answer(kKey, kNonce, line, &answer, &why) == AnswerVerdict::kOk &&
		    (line.rfind(std::string(control_auth::kAnswerMagic) + " " + kNonce + " ", 0) != 0 ||
		     line.substr(line.size() - answer.size()) != answer))
			abort();
		break;
	}
	case 2: { // signed with the key: the JSON reaches the parser
		ControlAuth auth(kKey);
		std::string why;
		std::string_view body;
		const std::string signed_line = sign_control_request(kKey, line, kNow + (data[0] >> 2), kNonce);
		if (line.find('\n') != std::string_view::npos)
			break; // never one line on the wire
		if (auth.verify(signed_line, kNow, &body, &why) != ControlAuth::kOk || body != line)
			abort(); // a signed line must verify, and yield the request
		if (auth.verify(signed_line, kNow, &body, &why) != ControlAuth::kReplay)
			abort();
		const std::string answer = answer_line(body, handlers(), &ok, true);
		check_answer(answer);
		// lumend's signed answer verifies for this request, for no other
		const std::string signed_answer = sign_control_answer(kKey, kNonce, answer);
		std::string_view got;
		if (verify_control_answer(kKey, kNonce, signed_answer, &got, &why) != AnswerVerdict::kOk ||
		    got != answer ||
		    verify_control_answer(kKey, "f123456789abcdef0123456789abcdef", signed_answer, &got, &why) !=
			    AnswerVerdict::kOtherRequest ||
		    auth.verify(signed_answer, kNow, &body, &why) == ControlAuth::kOk)
			abort();
		break;
	}
	}
	return 0;
}
