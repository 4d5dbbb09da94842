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

#endif /* LUMEN_BPF_H */
