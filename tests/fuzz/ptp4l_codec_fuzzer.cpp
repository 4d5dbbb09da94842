// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/fuzz/ptp4l_codec_fuzzer.cpp - ptp4l's management answers
// (userspace/lumend/ptp4l.h): any datagram is a TIME_STATUS_NP or a reason
// why not, never a read past its end; and the sender check on any address.
#include <sys/socket.h>
#include <sys/un.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "lumend/ptp4l.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	std::string why;
	// a copy of exactly size bytes: ASan catches any read past it
	uint8_t *m = (uint8_t *)malloc(size ? size : 1);
	if (size)
		std::memcpy(m, data, size);
	auto st = lumen::lumend::parse_time_status(m, size, &why);
	if (!st && why.empty())
		abort(); // a refusal says why
	free(m);
	// the first bytes as a sender's address
	sockaddr_un from = {};
	size_t n = size < sizeof(from) ? size : sizeof(from);
	std::memcpy(&from, data, n);
	lumen::lumend::from_ptp4l(from, (socklen_t)n, "/var/run/ptp4l");
	return 0;
}
