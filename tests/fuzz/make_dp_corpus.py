#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""Write the seed corpus of the lumen-dp frame libFuzzer target (tests/fuzz/corpus/dp/).

The frames are assembled here from the wire format description in
include/lumen/dp_wire.h (not with the C builder), so the seeds are an
independent reference; INT extensions come from make_corpus.py's option
writer. They live in a folder of their own: the INT option target reads
corpus/*.bin. Re-run after a format change:
    python3 tests/fuzz/make_dp_corpus.py
"""
import os
import struct
import sys

sys.dont_write_bytecode = True  # no __pycache__ next to the sources
from make_corpus import ECHO, G10, G25, hop, option

DATA, ACK, NACK, PROBE, SYN, SYNACK, FIN = 1, 2, 3, 4, 5, 6, 7
RETX, ACK_NOW, MSG_LAST, INT, ECE = 0x01, 0x02, 0x04, 0x08, 0x10
COOKIE, REPLY, RST = 0x20, 0x40, 0x80
ECT0, CE = 2, 3
PORT = 4792


def ip_checksum(hdr):
    total = sum(struct.unpack("!10H", hdr))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def frame(lumen, sport, ecn=ECT0, src=0x0A000001, dst=0x0A000002, trailer=b""):
    """Ethernet / IPv4 (IHL 5, DF, TTL 64) / UDP (checksum 0) / lumen bytes."""
    eth = bytes.fromhex("020000000002" "020000000001") + struct.pack("!H", 0x0800)
    ip = struct.pack("!BBHHHBBHII", 0x45, ecn, 20 + 8 + len(lumen), 0, 0x4000, 64, 17, 0, src, dst)
    ip = ip[:10] + struct.pack("!H", ip_checksum(ip)) + ip[12:]
    udp = struct.pack("!HHHH", sport, PORT, 8 + len(lumen), 0)
    return eth + ip + udp + lumen + trailer


def ext(opt):
    """The INT option padded with zeros to whole words, and its word count."""
    padded = opt + bytes(-len(opt) % 4)
    return padded, len(padded) // 4


def data(flags, conn, psn, ts, msg_id, msg_off, msg_len, payload, int_opt=b""):
    e, words = ext(int_opt)
    hdr = struct.pack("!BBBBII", 1, DATA, flags, words, conn, psn) + struct.pack("!QIII", ts, msg_id, msg_off, msg_len)
    return hdr + e + payload


def ack(kind, flags, conn, cum, echo_ts, sack, echo_psn, echo_sport, pkts, ce_pkts, rwnd, int_opt=b""):
    e, words = ext(int_opt)
    hdr = struct.pack("!BBBBII", 1, kind, flags, words, conn, cum)
    hdr += struct.pack("!QQIHHHH", echo_ts, sack, echo_psn, echo_sport, pkts, ce_pkts, rwnd)
    return hdr + e


def probe(probe_id, ts):
    """A path probe (dp_probe.h): conn_id 0, the probe's number as PSN."""
    return struct.pack("!BBBBII", 1, PROBE, 0, 0, 0, probe_id) + struct.pack("!Q", ts)


def ctrl(kind, flags, conn, psn, ts, cookie):
    """A connection's SYN, SYNACK or FIN."""
    return struct.pack("!BBBBII", 1, kind, flags, 0, conn, psn) + struct.pack("!QI", ts, cookie)


def icmp_sum(b):
    b += bytes(len(b) % 2)
    total = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def time_exceeded(quoted, router=0x0A650102, to=0x0A000001, quote_len=28):
    """The ICMP Time Exceeded a router sends for the frame `quoted` (its IP
    header as the router saw it, TTL 1, and quote_len - 20 bytes after it)."""
    q = bytearray(quoted[14:14 + quote_len])
    q[8] = 1
    q[10:12] = b"\0\0"
    q[10:12] = struct.pack("!H", ip_checksum(bytes(q[:20])))
    icmp = struct.pack("!BBHI", 11, 0, 0, 0) + bytes(q)
    icmp = icmp[:2] + struct.pack("!H", icmp_sum(icmp)) + icmp[4:]
    eth = bytes.fromhex("020000000001" "020000000002") + struct.pack("!H", 0x0800)
    ip = struct.pack("!BBHHHBBHII", 0x45, 0xC0, 20 + len(icmp), 0, 0, 64, 1, 0, router, to)
    ip = ip[:10] + struct.pack("!H", ip_checksum(ip)) + ip[12:]
    return eth + ip + icmp


A = hop(G10, 0x2ABCD, 0x1234, 0x0FED)
B = hop(G25, 1, 2, 3)
SEEDS = {
    "data_first": frame(data(ACK_NOW, 7, 0, 1000, 0, 0, 4096, bytes(range(32))), 49152),
    "data_last_retx": frame(data(MSG_LAST | RETX, 7, 41, 2000, 3, 4000, 4001, b"\x5a"), 49999, CE),
    "data_int_req2": frame(data(INT, 9, 5, 3000, 1, 0, 64, b"hello", option(0, 1, [A], 1)), 50000),
    "ack_sack": frame(ack(ACK, ECE, 7, 3, 1000, 0b1011, 4, 49152, 2, 1, 1024), 49151, 0),
    "ack_int_echo2": frame(ack(ACK, INT, 9, 6, 3000, 0, 5, 50000, 1, 0, 512, option(ECHO, 2, [A, B])), 49151, 0),
    "nack": frame(ack(NACK, 0, 7, 3, 1000, 0, 9, 49153, 1, 0, 1023), 49151, 0),
    # a NIC's trailer after the IP packet: ignored
    "nack_trailer": frame(ack(NACK, ECE, 1, 0, 0, 0, 0, 0, 0, 0, 0), 49151, 0, trailer=bytes(6)),
    "probe": frame(probe(17, 5000), 49160, 0),
    # a connection's handshake and close
    "syn": frame(ctrl(SYN, 0, 7, 0x9E3779B9, 1000, 0), 49152, 0),
    "syn_cookie": frame(ctrl(SYN, COOKIE, 7, 0x9E3779B9, 1500, 0xC0FFEE11), 49152, 0),
    "synack_reply": frame(ctrl(SYNACK, REPLY, 7, 0x9E3779B9, 1500, 0), 49151, 0),
    "fin_rst": frame(ctrl(FIN, RST, 7, 41, 2500, 0), 49151, 0),
    # the Time Exceeded a spine sends for it: RFC 792's 8 bytes, and the whole probe
    "time_exceeded_8": time_exceeded(frame(probe(17, 5000), 49160, 0)),
    "time_exceeded_full": time_exceeded(frame(probe(18, 6000), 49161, 0), quote_len=48),
}

if __name__ == "__main__":
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "dp")
    os.makedirs(out, exist_ok=True)
    for name, frame_bytes in SEEDS.items():
        assert len(frame_bytes) <= 256  # the target's max_len
        with open(os.path.join(out, name + ".bin"), "wb") as f:
            f.write(frame_bytes)
