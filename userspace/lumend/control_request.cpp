// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/lumend/control_request.cpp - one control request to its answer
// (control.h: answer_line), apart from the socket so that a fuzzer can
// build it alone (tests/fuzz/lumend_request_fuzzer.cpp).
#include <algorithm>

#include "lumend/control.h"

namespace lumen::lumend
{

namespace
{

nlohmann::json request_error(const std::string &what)
{
	return nlohmann::json{{"error", what}};
}

// An answer as one line. Bytes that are not UTF-8 (a parser's message quotes
// the bad input; a handler may name a file) become U+FFFD: dump() would
// throw on them otherwise, and an exception here would end the control
// thread, found by tests/fuzz/lumend_request_fuzzer.cpp.
std::string line_of(const nlohmann::json &j)
{
	return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string command_names(const Handlers &h)
{
	std::string out;
	for (const auto &[name, f] : h)
		out += (out.empty() ? "" : ", ") + name;
	return out;
}

} // namespace

std::string answer_line(std::string_view line, const Handlers &handlers, bool *ok, bool remote)
{
	if (ok)
		*ok = false;
	nlohmann::json req;
	try {
		req = nlohmann::json::parse(line);
	} catch (const nlohmann::json::exception &e) {
		return line_of(request_error(std::string("not JSON: ") + e.what()));
	}
	if (!req.is_object() || !req.contains("cmd") || !req["cmd"].is_string())
		return line_of(request_error("a request is a JSON object with a string \"cmd\" (" +
					     command_names(handlers) + ")"));
	std::string cmd = req["cmd"].get<std::string>();
	auto it = handlers.find(cmd);
	if (it == handlers.end())
		return line_of(request_error("unknown command '" + cmd + "' (" + command_names(handlers) + ")"));
	const Handler &handler = it->second;
	for (const auto &[key, value] : req.items()) {
		if (key == "cmd")
			continue;
		if (std::find(handler.keys.begin(), handler.keys.end(), key) == handler.keys.end())
			return line_of(request_error("unknown key '" + key + "' in the request"));
		if (remote &&
		    std::find(handler.local_keys.begin(), handler.local_keys.end(), key) != handler.local_keys.end())
			return line_of(
				request_error(cmd + ": \"" + key +
					      "\" names a file on lumend's host and is refused over TCP: send the "
					      "content inline (\"schedule\" for stage)"));
	}
	if (ok)
		*ok = true;
	try {
		return line_of(handler.run(req));
	} catch (const std::exception &e) {
		return line_of(request_error(cmd + ": " + e.what()));
	}
}

} // namespace lumen::lumend
