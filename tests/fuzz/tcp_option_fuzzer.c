// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * libFuzzer target for lumen's TCP option walker (include/lumen/tcp_option.h),
 * checked against the kernel's own rules: kernel_walk() below follows the
 * loop of tcp_parse_options() (net/ipv4/tcp_input.c) step by step - a length
 * that counts down, EOL returns, NOP takes one byte, a kind without its length
 * byte, a length below 2 ("silly options") or one past the rest of the block
 * returns - and records where each whole option starts. For every kind and
 * for the experimental kinds with the input's ExID, lumen_tcp_opt_find() must
 * return the first option of that kind the kernel reaches whole (and, for
 * 253/254, whose ExID matches and whose length is at least 4), or -1.
 *
 * Input: byte 0 is the block length (taken modulo 41), bytes 1-2 an ExID,
 * the rest the option block (zero-padded). Built by clang with
 * -fsanitize=fuzzer,address,undefined (ctest tcp_option_libfuzzer).
 */
#include "lumen/tcp_option.h"
#include "fuzz_check.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Start offsets of the options the kernel's walk reaches whole; returns how many. */
static int kernel_walk(const uint8_t *block, int length, int starts[LUMEN_TCP_OPT_SPACE])
{
	const uint8_t *ptr = block;
	int n = 0;

	while (length > 0) {
		int opcode = *ptr++;
		int opsize;

		switch (opcode) {
		case LUMEN_TCPOPT_EOL:
			return n;
		case LUMEN_TCPOPT_NOP:
			length--;
			continue;
		default:
			if (length < 2)
				return n;
			opsize = *ptr++;
			if (opsize < 2)
				return n;
			if (opsize > length)
				return n;
			starts[n++] = (int)(ptr - 2 - block);
			ptr += opsize - 2;
			length -= opsize;
		}
	}
	return n;
}

static int expected(const uint8_t *block, const int *starts, int n, unsigned kind, unsigned exid)
{
	int i;

	for (i = 0; i < n; i++) {
		const uint8_t *o = block + starts[i];

		if (o[0] != kind)
			continue;
		if (kind != LUMEN_TCPOPT_EXP1 && kind != LUMEN_TCPOPT_EXP2)
			return starts[i];
		if (o[1] >= 4 && (((unsigned)o[2] << 8) | o[3]) == exid)
			return starts[i];
	}
	return -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct lumen_tcp_opts o;
	int starts[LUMEN_TCP_OPT_SPACE];
	unsigned len, exid, kind;
	size_t body;
	int n;

	if (size < 3)
		return 0;
	len = data[0] % (LUMEN_TCP_OPT_SPACE + 1);
	exid = (unsigned)data[1] << 8 | data[2];
	body = size - 3 < LUMEN_TCP_OPT_SPACE ? size - 3 : LUMEN_TCP_OPT_SPACE;
	memset(&o, 0, sizeof(o));
	memcpy(o.b, data + 3, body);

	n = kernel_walk(o.b, (int)len, starts);
	for (kind = 0; kind < 256; kind++) {
		int got = lumen_tcp_opt_find(&o, len, kind, exid);

		CHECK(got == expected(o.b, starts, n, kind, exid));
		if (got >= 0)
			CHECK((unsigned)got + o.b[got + 1] <= len);
	}
	/* the INT option, by its own ExID; and lengths above 40 act as 40 */
	CHECK(lumen_tcp_opt_find(&o, len, LUMEN_TCPOPT_EXP1, 0x4C55) == expected(o.b, starts, n, 253, 0x4C55));
	n = kernel_walk(o.b, LUMEN_TCP_OPT_SPACE, starts);
	CHECK(lumen_tcp_opt_find(&o, 1000, 8, 0) == expected(o.b, starts, n, 8, 0));
	return 0;
}
