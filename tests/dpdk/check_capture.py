#!/usr/bin/env python3
"""check_capture.py: a lumen-dp client's first packets, captured by net_pcap,
checked field by field against the wire format of include/lumen/dp_wire.h.

The client opens a connection to a peer that never answers, so the capture
holds its SYNs: one per try, resent after each timeout (with backoff), each
on the next entropy, all naming the same connection and initial PSN, and
nothing else (no DATA goes before the handshake). The parser here is written
from the format's description, not from the C code, so the two check each
other.
"""
import argparse
import ipaddress
import struct
import sys

ETH, IP, UDP, HDR = 14, 20, 8, 24  # the SYN's lumen header: common 12 + ts 8 + cookie 4
SYN = 5
MTU = 1500


def packets(path):
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack_from("<I", data)[0]
    assert magic in (0xA1B2C3D4, 0xA1B23C4D), f"not a little-endian pcap: {magic:#x}"
    off = 24
    while off + 16 <= len(data):
        _, _, incl, orig = struct.unpack_from("<IIII", data, off)
        off += 16
        assert incl == orig, "truncated capture"
        yield data[off:off + incl]
        off += incl


def ip_checksum(hdr):
    s = sum(struct.unpack("!10H", hdr))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s == 0xFFFF


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pcap")
    ap.add_argument("--src", required=True)
    ap.add_argument("--dst", required=True)
    ap.add_argument("--dport", type=int, default=4792)
    ap.add_argument("--sport-base", type=int, default=49152)
    ap.add_argument("--entropies", type=int, default=256)
    a = ap.parse_args()

    src, dst = int(ipaddress.IPv4Address(a.src)), int(ipaddress.IPv4Address(a.dst))
    frames = list(packets(a.pcap))
    assert len(frames) >= 2, f"{len(frames)} frames: a peer that never answers must cause SYNs to be resent"
    isn, last_ts, last_sport = None, -1, None
    for i, f in enumerate(frames):
        where = f"frame {i}"
        ethertype = struct.unpack_from("!H", f, 12)[0]
        assert ethertype == 0x0800, f"{where}: ethertype {ethertype:#x}"
        assert f[0:6] == bytes.fromhex("020000000002"), f"{where}: destination MAC {f[0:6].hex()}"
        ver_ihl, tos, tot_len, _, frag, ttl, proto, _, isrc, idst = struct.unpack_from("!BBHHHBBHII", f, ETH)
        assert ver_ihl == 0x45, f"{where}: version/IHL {ver_ihl:#x}"
        assert tos == 0, f"{where}: a SYN is not ECN-capable: TOS {tos}"
        assert tot_len == len(f) - ETH == IP + UDP + HDR, f"{where}: IP length {tot_len}, frame {len(f)}"
        assert frag == 0x4000, f"{where}: flags/fragment {frag:#x} (DF, no fragment)"
        assert ttl == 64 and proto == 17, f"{where}: ttl {ttl} proto {proto}"
        assert (isrc, idst) == (src, dst), f"{where}: addresses"
        assert ip_checksum(f[ETH:ETH + IP]), f"{where}: IPv4 header checksum"
        sport, dport, ulen, ucsum = struct.unpack_from("!HHHH", f, ETH + IP)
        assert dport == a.dport, f"{where}: destination port {dport}"
        assert a.sport_base <= sport < a.sport_base + a.entropies, f"{where}: source port {sport} not an entropy"
        assert ulen == tot_len - IP and ucsum == 0, f"{where}: UDP length {ulen} checksum {ucsum:#x}"
        ver, typ, flags, ext, conn, psn, ts, cookie = struct.unpack_from("!BBBBIIQI", f, ETH + IP + UDP)
        assert (ver, typ, flags, ext, conn) == (1, SYN, 0, 0, 1), \
            f"{where}: version {ver} type {typ} flags {flags:#x} ext {ext} conn {conn}: a first SYN"
        assert cookie == 0, f"{where}: a first SYN echoes no cookie ({cookie:#x})"
        isn = psn if isn is None else isn
        assert psn == isn, f"{where}: PSN {psn:#x}: every try names the initial PSN {isn:#x}"
        assert ts > last_ts, f"{where}: each try carries its own send time"
        if last_sport is not None and a.entropies > 1:
            assert sport != last_sport, f"{where}: a resent SYN takes the next entropy, not {sport} again"
        last_ts, last_sport = ts, sport
    print(f"check_capture: {len(frames)} SYNs ok: connection 1, initial PSN {isn:#x}, each try on a new entropy")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"check_capture: {e}", file=sys.stderr)
        sys.exit(1)
