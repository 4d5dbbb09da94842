/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * bpf/lumen_bpf.h - common prelude of lumen's eBPF programs: kernel types
 * (vmlinux.h, CO-RE), libbpf helpers, the shared headers, and a per-CPU
 * counter helper. Include it first in every .bpf.c.
 */
#ifndef LUMEN_BPF_H
#define LUMEN_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>

#include "lumen/bpf_shared.h"

/* Add to slot idx of a per-CPU u64 array map. */
#define LUMEN_COUNT(map, idx)                                                                                          \
	do {                                                                                                           \
		__u32 __k = (idx);                                                                                     \
		__u64 *__v = bpf_map_lookup_elem(&(map), &__k);                                                        \
		if (__v)                                                                                               \
			*__v += 1;                                                                                     \
	} while (0)

/*
 * The per-socket INT map (struct lumen_int_sk) that int_sockops.bpf.c writes
 * and powertcp.bpf.c reads. Both objects declare it with this one
 * definition; pinned by name under LUMEN_PIN_ROOT, whichever loads first
 * creates it and the other reuses it (libbpf checks the definitions match).
 */
#define LUMEN_DEFINE_INT_SK_MAP()                                                                                      \
	struct {                                                                                                       \
		__uint(type, BPF_MAP_TYPE_SK_STORAGE);                                                                 \
		__uint(map_flags, BPF_F_NO_PREALLOC);                                                                  \
		__type(key, int);                                                                                      \
		__type(value, struct lumen_int_sk);                                                                    \
		__uint(pinning, LIBBPF_PIN_BY_NAME);                                                                   \
	} lumen_int_sk SEC(".maps")

/* tc verdicts (uapi pkt_cls.h macros, which vmlinux.h does not carry) */
#ifndef TC_ACT_OK
#define TC_ACT_OK 0
#endif
#ifndef TC_ACT_SHOT
#define TC_ACT_SHOT 2
#endif

#endif /* LUMEN_BPF_H */
