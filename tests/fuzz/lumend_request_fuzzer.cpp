// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/fuzz/lumend_request_fuzzer.cpp - lumend's control requests
// (userspace/lumend/control.h, base/control_auth.h): a line to its answer,
// as the Unix socket takes it, as TCP takes it (the HMAC header judged on
// its first bytes and whole), and signed with the right key so that the
// fuzzer's JSON gets past the MAC to the parser and the handlers. Every
// answer must be one line of JSON holding an object.
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
		break;
	}
	case 2: { // signed with the key: the JSON reaches the parser
		ControlAuth auth(kKey);
		std::string why;
		std::string_view body;
		const std::string signed_line =
			sign_control_request(kKey, line, kNow + (data[0] >> 2), "0123456789abcdef0123456789abcdef");
		if (line.find('\n') != std::string_view::npos)
			break; // never one line on the wire
		if (auth.verify(signed_line, kNow, &body, &why) != ControlAuth::kOk || body != line)
			abort(); // a signed line must verify, and yield the request
		if (auth.verify(signed_line, kNow, &body, &why) != ControlAuth::kReplay)
			abort();
		check_answer(answer_line(body, handlers(), &ok, true));
		break;
	}
	}
	return 0;
}
