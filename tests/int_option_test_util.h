// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// What the INT option's unit tests share (int_option_test.cpp: version 1,
// int_option_v2_test.cpp: version 2): byte buffers, rate codes and hop
// records spelled out by hand, and the parser's two outcomes.
#ifndef LUMEN_TESTS_INT_OPTION_TEST_UTIL_H
#define LUMEN_TESTS_INT_OPTION_TEST_UTIL_H

#include "lumen/int_option.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace lumen::test
{

using Bytes = std::vector<std::uint8_t>;

/* Rate codes built by hand from the documented layout: mant << 3 | exp. */
constexpr __u16 code(unsigned mant, unsigned exp)
{
	return static_cast<__u16>((mant << 3) | exp);
}
constexpr __u16 kCode10M = code(10, 0); /* 1-byte units */
constexpr __u16 kCode1G = code(100, 1); /* 32-byte units */
constexpr __u16 kCode10G = code(100, 2); /* 0x322, 512-byte units */
constexpr __u16 kCode25G = code(25, 3); /* 203, 1 KiB units */
constexpr __u16 kCode100G = code(100, 3); /* 803, 4 KiB units */
constexpr __u16 kCodeMax = code(16, 5); /* 1.6 Tbit/s, 64 KiB units */

inline lumen_int_hop mkhop(__u16 rate, __u32 ts, __u32 tx, __u16 qlen)
{
	lumen_int_hop h;
	h.ts = ts;
	h.tx = tx;
	h.qlen = qlen;
	h.rate = rate;
	h.pad = 0;
	return h;
}

inline bool same_hop(const lumen_int_hop &a, const lumen_int_hop &b)
{
	return a.ts == b.ts && a.tx == b.tx && a.qlen == b.qlen && a.rate == b.rate;
}

/* Parse expecting failure; checks the error and that *opt is untouched. */
inline void expect_reject(const Bytes &buf, std::size_t buf_len, int err, const char *what)
{
	SCOPED_TRACE(what);
	ASSERT_LE(buf_len, buf.size());
	for (int pattern : {0x00, 0xA5}) {
		lumen_int_opt opt, before;
		std::memset(&opt, pattern, sizeof(opt));
		std::memcpy(&before, &opt, sizeof(opt));
		EXPECT_EQ(lumen_int_parse(buf.data(), static_cast<__u32>(buf_len), &opt), -err)
			<< "expected " << lumen_int_strerror(-err);
		EXPECT_EQ(std::memcmp(&opt, &before, sizeof(opt)), 0) << "output modified on error";
	}
}

inline void expect_reject(const Bytes &buf, int err, const char *what)
{
	expect_reject(buf, buf.size(), err, what);
}

/* Parse expecting success. */
inline lumen_int_opt parse_ok(const Bytes &buf)
{
	lumen_int_opt opt;
	std::memset(&opt, 0xA5, sizeof(opt));
	const int rc = lumen_int_parse(buf.data(), static_cast<__u32>(buf.size()), &opt);
	EXPECT_EQ(rc, 0) << lumen_int_strerror(rc);
	return opt;
}

} // namespace lumen::test

#endif // LUMEN_TESTS_INT_OPTION_TEST_UTIL_H
