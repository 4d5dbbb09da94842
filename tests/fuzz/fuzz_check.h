/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * tests/fuzz/fuzz_check.h - the invariant check of lumen's libFuzzer targets:
 * a violated invariant prints where and aborts, which libFuzzer reports as a
 * crash with the input that caused it.
 */
#ifndef LUMEN_FUZZ_CHECK_H
#define LUMEN_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                                                                    \
	do {                                                                                                           \
		if (!(cond)) {                                                                                         \
			fprintf(stderr, "%s:%d: invariant violated: %s\n", __FILE__, __LINE__, #cond);                 \
			abort();                                                                                       \
		}                                                                                                      \
	} while (0)

#endif /* LUMEN_FUZZ_CHECK_H */
