#!/usr/bin/env python3
"""tests/e2e/offpath_inject.py - a blind (off-path) INT attacker.

    offpath_inject.py SRC DST SPORT DPORT SECONDS PPS

Sends spoofed TCP ACKs from SRC:SPORT to DST:DPORT (the attacker knows the
connection's addresses and ports, not its sequence numbers) through a raw
IPv4 socket: random sequence and acknowledgment numbers, a random timestamp
option, and a lumen INT echo claiming an idle 1 Tbit/s hop (empty queue, no
bytes sent), the echo that would open the window furthest if it were used.
Prints "injected=N".
"""
import os
import random
import socket
import struct
import sys
import time

from netutil import csum16, pack_hop, tcp_checksum


def main():
    src, dst, sport, dport, secs, pps = sys.argv[1:7]
    sport, dport, secs, pps = int(sport), int(dport), float(secs), int(pps)
    rng = random.Random(int.from_bytes(os.urandom(8), "big"))
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_HDRINCL, 1)
    saddr, daddr = socket.inet_aton(src), socket.inet_aton(dst)
    code = (100 << 3) | 4  # 100 * 10^4 Mbit/s = 1 Tbit/s
    sent, end, gap = 0, time.time() + secs, 1.0 / pps
    while time.time() < end:
        ts = b"\x01\x01\x08\x0a" + struct.pack("!II", rng.getrandbits(32), rng.getrandbits(32))
        hop = pack_hop(code, rng.getrandbits(18), 0, 0)
        echo = bytes([253, 12, 0x4C, 0x55, 0x31]) + hop
        opts = ts + echo
        tcp = struct.pack("!HHIIBBHHH", sport, dport, rng.getrandbits(32), rng.getrandbits(32),
                          (5 + len(opts) // 4) << 4, 0x10, 65535, 0, 0) + opts
        tcp = tcp[:16] + struct.pack("!H", tcp_checksum(src, dst, tcp, False)) + tcp[18:]
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), rng.getrandbits(16), 0, 64, 6, 0, saddr, daddr)
        ip = ip[:10] + struct.pack("!H", ~csum16(ip) & 0xFFFF) + ip[12:]
        s.sendto(ip + tcp, (dst, 0))
        sent += 1
        time.sleep(gap)
    print("injected=%d" % sent)


if __name__ == "__main__":
    main()
