/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * lumen/tcp_option.h - the one TCP option walker of lumen, shared by the
 * kernel module's INT hook (kernel/), the software INT switch and the INT
 * sockops program (bpf/) and the userspace tests.
 *
 * TCP's rules (tcp_parse_options() in net/ipv4/tcp_input.c, RFC 9293 3.1)
 * ---------------------------------------------------------------------
 * The option block is the TCP header past its 20 fixed bytes, doff * 4 - 20
 * bytes, at most 40. It is a list of options:
 *   - kind 0 (EOL) ends the list;
 *   - kind 1 (NOP) is one byte of padding;
 *   - every other kind is followed by a length byte that counts the kind and
 *     length bytes too. A list whose last byte is a kind without its length,
 *     a length below 2, or a length that runs past the block ends the walk
 *     there: TCP ignores the rest of the block, and so does lumen.
 * So an option is "present" exactly when TCP's own walk reaches it whole.
 * An experimental option (kind 253 or 254, RFC 6994) is told apart by the
 * 16-bit ExID after its length byte, so it needs a length of at least 4.
 *
 * Why one walker: the module, the switch and the sockops path must agree on
 * what a segment carries, or a crafted option list could be INT to one of them
 * and not to TCP. tests/fuzz/tcp_option_fuzzer.c checks this walker against a
 * transcription of the kernel's loop on arbitrary blocks.
 *
 * In BPF the search is a global function (LUMEN_SUBPROG): the verifier checks
 * its loop once, against the block's fixed size, whatever calls it.
 */
#ifndef LUMEN_TCP_OPTION_H
#define LUMEN_TCP_OPTION_H

#include "types.h"

#define LUMEN_TCP_OPT_SPACE 40 /* doff 15: 60 - 20 bytes */
#define LUMEN_TCPOPT_EOL 0
#define LUMEN_TCPOPT_NOP 1
#define LUMEN_TCPOPT_EXP1 253 /* RFC 6994 experimental kinds */
#define LUMEN_TCPOPT_EXP2 254

/* An option block copied out of a segment; bytes past its length are unused. */
struct lumen_tcp_opts {
	__u8 b[LUMEN_TCP_OPT_SPACE];
};

/*
 * Offset of the first option of this kind (for kinds 253/254 also with this
 * ExID) that TCP's walk reaches whole in the first len bytes of o, or -1.
 * len above 40 is treated as 40. The option's length is o->b[offset + 1]; it
 * lies within len.
 */
LUMEN_SUBPROG int lumen_tcp_opt_find(const struct lumen_tcp_opts *o, __u32 len, __u32 kind, __u32 exid)
{
	/* 64-bit: a zero-extended 32-bit index would hide its bound from the verifier */
	__u64 i = 0, olen, exp;

	if (!o) /* LUMEN_SUBPROG: the BPF verifier cannot know */
		return -1;
	if (len > LUMEN_TCP_OPT_SPACE)
		len = LUMEN_TCP_OPT_SPACE;
	exp = kind == LUMEN_TCPOPT_EXP1 || kind == LUMEN_TCPOPT_EXP2;
	/*
	 * Every pass consumes at least one byte, so the loop ends within 39
	 * passes; a pass counter would only keep the BPF verifier from seeing
	 * that two passes reach the same state. Bytes are matched by XOR, not
	 * ==: the verifier narrows both sides of an == between unknowns, so
	 * kind and exid would enter the next pass in a new form after every
	 * option, multiplying the states it explores.
	 */
	while (i < LUMEN_TCP_OPT_SPACE - 1) {
		LUMEN_OPAQUE(i);
		/* a lone last byte is EOL, NOP or a kind without its length */
		if (i >= LUMEN_TCP_OPT_SPACE - 1 || len - i < 2)
			break;
		if (o->b[i] == LUMEN_TCPOPT_EOL)
			break;
		if (o->b[i] == LUMEN_TCPOPT_NOP) {
			i++;
			continue;
		}
		olen = o->b[i + 1];
		if (olen < 2 || olen > len - i)
			break;
		if (!(o->b[i] ^ kind)) {
			if (!exp)
				return (int)i;
			if (olen >= 4 && i < LUMEN_TCP_OPT_SPACE - 3 &&
			    !((((__u32)o->b[i + 2] << 8) | o->b[i + 3]) ^ exid))
				return (int)i;
		}
		i += olen;
	}
	return -1;
}

#endif /* LUMEN_TCP_OPTION_H */
