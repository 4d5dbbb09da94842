#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""Write the seed corpus of the INT option libFuzzer target (tests/fuzz/corpus/).

The options are assembled here from the wire format description in
include/lumen/int_option.h (not with the C encoder), so the seeds are an
independent reference. Re-run after a format change:
    python3 tests/fuzz/make_corpus.py
"""
import os

KIND, EXID, VERSION, VERSION_WIDE = 253, 0x4C55, 1, 2
ECHO, OVERFLOW = 0x10, 0x08


def rate_code(mant, exp):
    return (mant << 3) | exp


def hop(rate, ts, tx, qlen):
    """56-bit record: rate 10 bits, ts 18, tx 14, qlen 14, big-endian."""
    bits = f"{rate:010b}{ts:018b}{tx:014b}{qlen:014b}"
    assert len(bits) == 56
    return bytes(int(bits[i:i + 8], 2) for i in range(0, 56, 8))


def option(flags, count, hops, empty_slots=0):
    body = b"".join(hops) + bytes(7 * empty_slots)
    length = 5 + len(body)
    assert length <= 40 and (length - 5) % 7 == 0
    return bytes([KIND, length, EXID >> 8, EXID & 0xFF, (VERSION << 5) | flags | count]) + body


def hop2(rate, ts, tx, qlen):
    """Version 2's 72-bit record: rate 10 bits, ts 24, tx 24, qlen 14, big-endian."""
    bits = f"{rate:010b}{ts:024b}{tx:024b}{qlen:014b}"
    assert len(bits) == 72
    return bytes(int(bits[i:i + 8], 2) for i in range(0, 72, 8))


def option2(flags, count, hops, empty_slots=0, first=0, path_hops=0):
    """Version 2: a 6-byte header, byte 5 = First << 4 | Hops (0 in a request)."""
    body = b"".join(hops) + bytes(9 * empty_slots)
    length = 6 + len(body)
    assert length <= 40 and (length - 6) % 9 == 0
    return bytes([KIND, length, EXID >> 8, EXID & 0xFF, (VERSION_WIDE << 5) | flags | count,
                  (first << 4) | path_hops]) + body


G10 = rate_code(100, 2)
G25 = rate_code(25, 3)
G100 = rate_code(100, 3)
M1500 = rate_code(15, 2)
T16 = rate_code(16, 5)

A = hop(G10, 0x2ABCD, 0x1234, 0x0FED)
B = hop(G25, 1, 2, 3)
A2 = hop2(G10, 0xABCDEF, 0x123456, 0x0FED)
B2 = hop2(G25, 0xFFFFFF, 0xFFFFFF, 3)  # ts and tx at their maximum
C2 = hop2(G100, 0, 0, 0x3FFF)
SEEDS = {
    "req1_empty": option(0, 0, [], 1),
    "req3_one_filled": option(0, 1, [A], 2),
    "req2_full": option(0, 2, [A, B]),
    "req2_overflow": option(OVERFLOW, 2, [A, B]),
    "req5_full": option(0, 5, [A, B, hop(G100, 7, 8, 9), hop(M1500, 0x3FFFF, 0x3FFF, 0x3FFF), hop(T16, 0, 0, 0)]),
    "echo0": option(ECHO, 0, []),
    "echo2_overflow": option(ECHO | OVERFLOW, 2, [A, B]),
    # Two records of one 10G port 2000 ticks apart: a usable delta.
    "echo2_same_port": option(ECHO, 2, [hop(G10, 0x3FC18, 0x3FE2, 10), hop(G10, 1000, 40, 20)]),
    # Followed by NOP, NOP, timestamps: the parser reads only its own bytes.
    "req1_then_ts": option(0, 0, [], 1) + bytes([1, 1, 8, 10]) + bytes(8),
    # Version 2.
    "v2_req1_empty": option2(0, 0, [], 1),
    "v2_req3_one_filled": option2(0, 1, [A2], 2),
    "v2_req3_full": option2(0, 3, [A2, B2, C2]),
    "v2_req2_overflow": option2(OVERFLOW, 2, [A2, B2]),
    "v2_echo3": option2(ECHO, 3, [A2, B2, C2], path_hops=3),
    # The bottleneck alone (record 2 of 3), as it fits next to one SACK block.
    "v2_echo_partial": option2(ECHO | OVERFLOW, 1, [C2], first=2, path_hops=3),
    # A hop of unknown rate next to known ones: what a partial echo must not pick.
    "v2_req3_unknown_rate": option2(0, 3, [hop2(G10, 5, 6, 1), hop2(0, 7, 8, 0x3FFF), hop2(G100, 9, 10, 0)]),
    # Two records of one 10G port 100 ms (6250000 ticks) apart: usable only in version 2.
    "v2_echo2_same_port": option2(ECHO, 2, [hop2(G10, 0xFFFC18, 0xFFFFE2, 10), hop2(G10, 0x5F5A28, 40, 20)],
                                  path_hops=2),
    "v2_req2_then_ts": option2(0, 0, [], 2) + bytes([1, 1, 8, 10]) + bytes(8),
}

if __name__ == "__main__":
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
    os.makedirs(out, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(out, name + ".bin"), "wb") as f:
            f.write(data)
