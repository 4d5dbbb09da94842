// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#include "traffic/traffic_wire.h"

#include <cstdio>

namespace lumen
{

namespace
{

void put_be(std::uint64_t v, std::uint8_t *out, std::size_t bytes)
{
	for (std::size_t i = 0; i < bytes; i++)
		out[i] = static_cast<std::uint8_t>(v >> (8 * (bytes - 1 - i)));
}

std::uint64_t get_be(const std::uint8_t *in, std::size_t bytes)
{
	std::uint64_t v = 0;
	for (std::size_t i = 0; i < bytes; i++)
		v = (v << 8) | in[i];
	return v;
}

} // namespace

void encode_header(const TrafficHeader &h, std::uint8_t out[kTrafficHeaderSize])
{
	put_be(kTrafficMagic, out, 4);
	put_be(kTrafficVersion, out + 4, 2);
	put_be(h.flags, out + 6, 2);
	put_be(h.size, out + 8, 8);
}

bool decode_header(const std::uint8_t in[kTrafficHeaderSize], TrafficHeader *h, std::string *why)
{
	auto magic = static_cast<std::uint32_t>(get_be(in, 4));
	auto version = static_cast<std::uint16_t>(get_be(in + 4, 2));
	auto flags = static_cast<std::uint16_t>(get_be(in + 6, 2));
	char buf[96];
	if (magic != kTrafficMagic) {
		std::snprintf(buf, sizeof(buf), "bad magic 0x%08x (want 0x%08x)", magic, kTrafficMagic);
		*why = buf;
		return false;
	}
	if (version != kTrafficVersion) {
		std::snprintf(buf, sizeof(buf), "unsupported version %u (want %u)", version, kTrafficVersion);
		*why = buf;
		return false;
	}
	if (flags != 0) {
		std::snprintf(buf, sizeof(buf), "unknown flags 0x%04x", flags);
		*why = buf;
		return false;
	}
	h->flags = flags;
	h->size = get_be(in + 8, 8);
	return true;
}

void encode_completion(std::uint64_t received, std::uint8_t out[kTrafficCompletionSize])
{
	put_be(received, out, 8);
}

std::uint64_t decode_completion(const std::uint8_t in[kTrafficCompletionSize])
{
	return get_be(in, 8);
}

} // namespace lumen
