// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Compile-only check that the shared headers are valid strict C, as the
 * kernel module and the eBPF programs need them. Built twice: by the host C
 * compiler with -Wpedantic -Wconversion, and by clang -target bpf (ctest
 * header_bpf_compile), which fails on anything BPF cannot express (floating
 * point, signed division, 128-bit arithmetic).
 */
#include "lumen/powertcp.h"
#include "lumen/tcp_option.h"

int lumen_check_on_ack(struct lumen_ptcp *st, const struct lumen_ptcp_params *p, const struct lumen_ptcp_ack *ack,
		       const struct lumen_int_opt *echo);
int lumen_check_parse(const __u8 *buf, __u32 len, struct lumen_int_opt *opt);
int lumen_check_tcp_opt(const struct lumen_tcp_opts *o, __u32 len);
struct lumen_check_port {
	__u64 now, tx, qlen;
	__u32 rate_mbps;
};

int lumen_check_switch(__u8 *buf, __u32 len, const struct lumen_check_port *port);
int lumen_check_echo(__u8 *buf, __u32 len, const struct lumen_int_opt *req);
int lumen_check_request(__u8 *buf, __u32 len, __u32 slots);

int lumen_check_on_ack(struct lumen_ptcp *st, const struct lumen_ptcp_params *p, const struct lumen_ptcp_ack *ack,
		       const struct lumen_int_opt *echo)
{
	if (lumen_ptcp_params_validate(p))
		return -1;
	return (int)lumen_ptcp_on_ack(st, p, ack, echo);
}

int lumen_check_parse(const __u8 *buf, __u32 len, struct lumen_int_opt *opt)
{
	return lumen_int_parse(buf, len, opt);
}

/* BPF functions take at most five arguments: the port state comes by pointer. */
int lumen_check_switch(__u8 *buf, __u32 len, const struct lumen_check_port *port)
{
	struct lumen_int_hop hop;

	lumen_int_hop_make(&hop, port->now, port->tx, port->qlen, lumen_int_rate_encode(port->rate_mbps));
	return lumen_int_push_hop(buf, len, &hop);
}

int lumen_check_echo(__u8 *buf, __u32 len, const struct lumen_int_opt *req)
{
	return lumen_int_write_echo(buf, len, req);
}

/* A slot count known only at run time (a config map) must not become memset. */
int lumen_check_request(__u8 *buf, __u32 len, __u32 slots)
{
	return lumen_int_write_request(buf, len, slots);
}

int lumen_check_tcp_opt(const struct lumen_tcp_opts *o, __u32 len)
{
	return lumen_tcp_opt_find(o, len, LUMEN_INT_KIND, LUMEN_INT_EXID);
}
