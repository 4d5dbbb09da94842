// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/base/json_socket.h - one request to a daemon that speaks JSON
// lines on a Unix stream socket (lumend's control socket): the request as
// one line, its answer as one line.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace lumen
{

// Sends request, returns the answer object. Error when the socket cannot
// be reached, nothing or no JSON object comes back within 5 s, or the
// answer is {"error": ...} (its text, after `who`). UsageError for a path
// that cannot be a Unix socket's.
nlohmann::json json_request(const std::string &path, const nlohmann::json &request, const std::string &who);

} // namespace lumen
