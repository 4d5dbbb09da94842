// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/traffic/traffic_wire.h - the traffic generator's wire format.
// Each flow is one TCP connection. The client first sends a 16-byte header,
// all fields in network byte order:
//
//   0       4       6       8                               16
//   | magic | vers. | flags | payload size (0 = until close) |
//
// magic "LMTF" (0x4c4d5446), version 1, flags 0 (no flag is defined; a
// set bit is refused so a future meaning cannot be silently ignored). Then
// the payload bytes. The server answers with an 8-byte completion, the
// number of payload bytes it received (network byte order): for a sized
// flow once it has received them all, for a size-0 flow once the client
// has half-closed (so the count is what actually arrived).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace lumen
{

constexpr std::uint32_t kTrafficMagic = 0x4c4d5446; // "LMTF"
constexpr std::uint16_t kTrafficVersion = 1;
constexpr std::size_t kTrafficHeaderSize = 16;
constexpr std::size_t kTrafficCompletionSize = 8;

struct TrafficHeader {
	std::uint16_t flags = 0;
	std::uint64_t size = 0; // payload bytes; 0 = until the client closes
};

void encode_header(const TrafficHeader &h, std::uint8_t out[kTrafficHeaderSize]);
// Decodes and validates; on failure returns false with `why` set.
bool decode_header(const std::uint8_t in[kTrafficHeaderSize], TrafficHeader *h, std::string *why);

void encode_completion(std::uint64_t received, std::uint8_t out[kTrafficCompletionSize]);
std::uint64_t decode_completion(const std::uint8_t in[kTrafficCompletionSize]);

} // namespace lumen
