// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/base/json_socket.h - one request to a daemon that speaks JSON
// lines (lumend's control socket): the request as one line, its answer as
// one line, over a Unix stream socket on this host or TCP from another.
//
// An endpoint is a Unix socket's path (it has a '/') or HOST:PORT for TCP
// (a name, an IPv4 address, or [IPv6]:PORT). Over TCP a daemon answers only
// requests signed with its token: a secret shared through a file that only
// its owner may read (read_token_file), which keys an HMAC over each request,
// a timestamp and a nonce (control_auth.h) and is never sent itself.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace lumen
{

// True for HOST:PORT, false for a Unix socket's path.
bool is_tcp_endpoint(const std::string &endpoint);

// Splits HOST:PORT ([IPv6]:PORT too). UsageError, naming `what`, for
// anything else (no port, a port outside 1..65535, an empty host).
void split_host_port(const std::string &endpoint, const std::string &what, std::string *host, unsigned *port);

// A control token from its file: one line of 16 to 256 printable
// characters (no spaces), in a regular file that neither its group nor
// others may read or write. UsageError naming `what` otherwise.
std::string read_token_file(const std::string &path, const std::string &what);

// The same comparison time whatever the first differing byte (a token is
// a secret).
bool tokens_equal(const std::string &a, const std::string &b);

// Sends request (signed with token when token is not empty and the endpoint
// is HOST:PORT: control_auth.h), returns the answer object. Error when the
// endpoint cannot be reached, nothing or no JSON object comes back within 5
// s, the answer is {"error": ...} (its text, after `who`), or, over TCP with
// a token, the answer is not signed for this request with that token
// (unsigned, a replayed answer to another request, or forged: the error says
// which, with an unsigned refusal's own text). UsageError for an endpoint that is neither a Unix
// socket's path nor HOST:PORT.
nlohmann::json json_request(const std::string &endpoint, const nlohmann::json &request, const std::string &who,
			    const std::string &token = "");

} // namespace lumen
