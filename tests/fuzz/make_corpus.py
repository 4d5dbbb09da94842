#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""Write the seed corpus of the INT option libFuzzer target (tests/fuzz/corpus/).

The options are assembled here from the wire format description in
include/lumen/int_option.h (not with the C encoder), so the seeds are an
independent reference. Re-run after a format change:
    python3 tests/fuzz/make_corpus.py
"""
import os

KIND, EXID, VERSION = 253, 0x4C55, 1
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


G10 = rate_code(100, 2)
G25 = rate_code(25, 3)
G100 = rate_code(100, 3)
M1500 = rate_code(15, 2)
T16 = rate_code(16, 5)

A = hop(G10, 0x2ABCD, 0x1234, 0x0FED)
B = hop(G25, 1, 2, 3)
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
}

if __name__ == "__main__":
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
    os.makedirs(out, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(out, name + ".bin"), "wb") as f:
            f.write(data)
