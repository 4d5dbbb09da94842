// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * libFuzzer target for the liveness of the PowerTCP core
 * (include/lumen/powertcp.h, "Liveness"): the input is an arbitrary stream of
 * ACKs and INT echoes; the RTT stays constant at 16..1024 tau. Whatever the
 * echoes are, the window must stay within its clamps on every ACK and end at
 * or below the control law's fixed point for the RTT's power
 * (tests/ptcp_stream.h, shared with powertcp_liveness_test). Built by clang
 * with -fsanitize=fuzzer,address,undefined (ctest powertcp_stream_libfuzzer),
 * so any overflow or division by zero aborts too.
 *
 * HPCC (LUMEN_PTCP_MODE_HPCC) runs on the same machinery and is held to its
 * own fixed point.
 *
 * Input: byte 0 picks gamma, byte 1 the expected flows (bit 7: HPCC instead
 * of PowerTCP), byte 2 the RTT; the
 * rest is a list of records, replayed cyclically for 6000 ACKs:
 *   ctl    bits 0-2: echo kind (none, raw hop bytes, the previous echo again,
 *          zero hops, hops synthesised from fields); bits 3-5: hop count
 *          (above 5 sets the overflow flag); bits 6-7: acked 1..4 MSS
 *   dt     2 bytes: jitter of dt * 64 ns (up to 4.2 ms) on top of self-clocked
 *          spacing (rtt * acked / cwnd: a window of ACKs per RTT at most)
 *   hops   count * 7 bytes: packed hop records (raw), or per hop ts offset,
 *          tx increment (2 bytes), qlen, rate code (2 bytes), pad (synthesised)
 */
#include "../ptcp_stream.h"
#include "fuzz_check.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ACKS 6000
#define MSS 1448u
#define HDR 3

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct cursor {
	const uint8_t *data;
	size_t size, pos;
};

/* The next input byte; the record list wraps around. */
static uint8_t next(struct cursor *c)
{
	uint8_t b = c->data[HDR + c->pos];

	c->pos = (c->pos + 1) % (c->size - HDR);
	return b;
}

static void make_echo(struct cursor *c, uint8_t kind, uint8_t count, uint64_t now, uint64_t *tx,
		      struct lumen_int_opt *e)
{
	uint8_t raw[LUMEN_INT_HOP_LEN];
	uint8_t n = count > LUMEN_INT_MAX_HOPS ? LUMEN_INT_MAX_HOPS : count;
	uint8_t i, j;

	memset(e, 0, sizeof(*e));
	e->version = LUMEN_INT_VERSION;
	e->flags = LUMEN_INT_FLAG_ECHO | (count > LUMEN_INT_MAX_HOPS ? LUMEN_INT_FLAG_OVERFLOW : 0);
	e->slots = e->count = kind == 3 ? 0 : n;
	for (i = 0; i < e->count; i++) {
		if (kind == 1) {
			for (j = 0; j < LUMEN_INT_HOP_LEN; j++)
				raw[j] = next(c);
			lumen_int_hop_unpack(raw, &e->hops[i]);
		} else {
			uint64_t off = (uint64_t)next(c) << 4;
			uint16_t code;

			tx[i] += (uint64_t)next(c) << 8 | next(c);
			tx[i] <<= next(c) & 1; /* now and then a huge jump */
			code = (uint16_t)(next(c) << 8 | next(c));
			lumen_int_hop_make(&e->hops[i], now + off, tx[i], (uint64_t)next(c) << 9, code);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t gammas[] = {LUMEN_PTCP_DEFAULT_GAMMA, LUMEN_PTCP_ONE / 2, LUMEN_PTCP_ONE / 4};
	static const uint32_t flows[] = {1, 10, 64};
	struct lumen_int_opt echo, prev;
	struct lumen_ptcp_params p;
	struct ptcp_stream s;
	struct cursor c = {data, size, 0};
	uint64_t tx[LUMEN_INT_MAX_HOPS] = {0}, hi, bound;
	int i, have_prev = 0;

	if (size <= HDR)
		return 0;
	lumen_ptcp_params_default(&p);
	p.host_bw_mbps = 10000;
	p.base_rtt_ns = 20000;
	p.gamma = gammas[data[0] % 3];
	p.expected_flows = flows[data[1] % 3];
	CHECK(lumen_ptcp_params_validate(&p) == 0);
	/* PowerTCP or HPCC: the same machinery, two laws, one property */
	ptcp_stream_init_mode(&s, &p, p.base_rtt_ns * (16 + (uint64_t)(data[2] % 64) * 16), MSS, 0xfffff000u,
			      data[1] & 0x80 ? LUMEN_PTCP_MODE_HPCC : LUMEN_PTCP_MODE_INT);
	hi = lumen_ptcp_host_bdp(&p, p.base_rtt_ns) + lumen_ptcp_beta(&p, p.base_rtt_ns);

	for (i = 0; i < ACKS; i++) {
		uint8_t ctl = next(&c);
		uint8_t kind = ctl & 7, count = (ctl >> 3) & 7;
		uint32_t acked = MSS * (1u + (ctl >> 6));
		uint64_t dt = ptcp_stream_spacing(&s, acked) + (((uint64_t)next(&c) << 8 | next(&c)) << 6);
		const struct lumen_int_opt *e = NULL;

		if (kind == 1 || kind == 3 || kind == 4) {
			make_echo(&c, kind, count, s.now_ns + dt, tx, &echo);
			prev = echo;
			have_prev = 1;
			e = &echo;
		} else if (kind == 2 && have_prev) {
			e = &prev;
		}
		ptcp_stream_ack(&s, e, dt, acked);
		CHECK(s.st.cwnd_bytes >= 2ull * MSS);
		CHECK(s.st.cwnd_bytes <= hi);
	}
	bound = ptcp_stream_bound(&s);
	if (s.st.cwnd_bytes > bound) {
		fprintf(stderr, "window %llu above the liveness bound %llu (rtt %llu ns, fallback %u, guard %u)\n",
			(unsigned long long)s.st.cwnd_bytes, (unsigned long long)bound, (unsigned long long)s.rtt_ns,
			s.st.stats.fallback_updates, s.st.stats.rtt_guard);
		abort();
	}
	return 0;
}
