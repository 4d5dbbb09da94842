/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * tests/int_option_oracle.h - what the INT option v1 documentation says the
 * parser must answer, written independently of include/lumen/int_option.h
 * (from its header comment, not its code). Shared by the seeded fuzz test
 * (C++) and the libFuzzer target (C), which compare the parser against it.
 */
#ifndef LUMEN_TESTS_INT_OPTION_ORACLE_H
#define LUMEN_TESTS_INT_OPTION_ORACLE_H

#include <stddef.h>
#include <stdint.h>

#include "lumen/int_option.h"

/* The documented rate code rule: 0, or mant != 0, fits 10 bits, <= 1.6 Tbit/s. */
static inline int lumen_doc_rate_valid(unsigned code)
{
	unsigned mant = code >> 3, exp = code & 7, e;
	uint64_t r = mant;

	if (code == 0)
		return 1;
	if (code >= 1024 || mant == 0)
		return 0;
	for (e = 0; e < exp; e++)
		r *= 10;
	return r <= 1600000;
}

/* Rate code of a packed hop record: its first 10 bits. */
static inline unsigned lumen_doc_hop_rate(const uint8_t *h)
{
	return ((unsigned)h[0] << 2) | (h[1] >> 6);
}

/*
 * The documented parse outcome: 0 (accepted) or the positive error of the
 * first check the input fails, in the documented order.
 */
static inline int lumen_doc_parse_outcome(const uint8_t *p, size_t n)
{
	unsigned len, slots, count, i;
	int echo;

	if (n < 2)
		return LUMEN_INT_ETRUNCATED;
	if (p[0] != 253)
		return LUMEN_INT_EKIND;
	len = p[1];
	if (len < 4)
		return LUMEN_INT_ELENGTH;
	if (len > n)
		return LUMEN_INT_ETRUNCATED;
	if ((((unsigned)p[2] << 8) | p[3]) != 0x4C55)
		return LUMEN_INT_EEXID;
	if (len < 5)
		return LUMEN_INT_ELENGTH;
	if ((p[4] >> 5) != 1) /* a version this code does not speak: stop here */
		return LUMEN_INT_EVERSION;
	if ((len - 5) % 7 != 0)
		return LUMEN_INT_ELENGTH;
	slots = (len - 5) / 7;
	if (slots > 5)
		return LUMEN_INT_EHOPS;
	count = p[4] & 7u;
	echo = (p[4] & 0x10) != 0;
	if (count > slots)
		return LUMEN_INT_ECOUNT;
	if (echo && count != slots)
		return LUMEN_INT_ECOUNT;
	if (!echo && slots == 0)
		return LUMEN_INT_ELENGTH;
	for (i = 0; i < count; i++) {
		if (!lumen_doc_rate_valid(lumen_doc_hop_rate(p + 5 + 7 * i)))
			return LUMEN_INT_ERATE;
	}
	return 0;
}

#endif /* LUMEN_TESTS_INT_OPTION_ORACLE_H */
