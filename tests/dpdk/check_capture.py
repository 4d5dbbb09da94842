#!/usr/bin/env python3
"""check_capture.py: a lumen-dp client's first packets, captured by net_pcap,
checked field by field against the wire format of include/lumen/dp_wire.h.

The client sends one message of --msg-size bytes to a peer that never
answers, so the capture holds the message's packets once, in PSN order, and
then retransmissions after each RTO. The parser here is written from the
format's description, not from the C code, so the two check each other.
"""
import argparse
import ipaddress
import struct
import sys

ETH, IP, UDP, HDR = 14, 20, 8, 32
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
    ap.add_argument("--msg-size", type=int, required=True)
    ap.add_argument("--dport", type=int, default=4792)
    ap.add_argument("--sport-base", type=int, default=49152)
    ap.add_argument("--entropies", type=int, default=256)
    a = ap.parse_args()

    src, dst = int(ipaddress.IPv4Address(a.src)), int(ipaddress.IPv4Address(a.dst))
    max_payload = MTU - IP - UDP - HDR
    npkts = -(-a.msg_size // max_payload)
    frames = list(packets(a.pcap))
    assert len(frames) >= npkts, f"{len(frames)} frames, the message needs {npkts}"
    seen = {}
    for i, f in enumerate(frames):
        where = f"frame {i}"
        ethertype = struct.unpack_from("!H", f, 12)[0]
        assert ethertype == 0x0800, f"{where}: ethertype {ethertype:#x}"
        assert f[0:6] == bytes.fromhex("020000000002"), f"{where}: destination MAC {f[0:6].hex()}"
        ver_ihl, tos, tot_len, _, frag, ttl, proto, _, isrc, idst = struct.unpack_from("!BBHHHBBHII", f, ETH)
        assert ver_ihl == 0x45, f"{where}: version/IHL {ver_ihl:#x}"
        assert tos & 3 == 2, f"{where}: DATA must be ECT(0), ECN field {tos & 3}"
        assert tot_len == len(f) - ETH, f"{where}: IP length {tot_len}, frame {len(f)}"
        assert frag == 0x4000, f"{where}: flags/fragment {frag:#x} (DF, no fragment)"
        assert ttl == 64 and proto == 17, f"{where}: ttl {ttl} proto {proto}"
        assert (isrc, idst) == (src, dst), f"{where}: addresses"
        assert ip_checksum(f[ETH:ETH + IP]), f"{where}: IPv4 header checksum"
        sport, dport, ulen, ucsum = struct.unpack_from("!HHHH", f, ETH + IP)
        assert dport == a.dport, f"{where}: destination port {dport}"
        assert a.sport_base <= sport < a.sport_base + a.entropies, f"{where}: source port {sport} not an entropy"
        assert ulen == tot_len - IP and ucsum == 0, f"{where}: UDP length {ulen} checksum {ucsum:#x}"
        o = ETH + IP + UDP
        ver, typ, flags, ext, conn, psn, ts, msg_id, msg_off, msg_len = struct.unpack_from("!BBBBIIQIII", f, o)
        payload = len(f) - o - HDR
        assert (ver, typ, ext, conn, msg_id) == (1, 1, 0, 1, 0), \
            f"{where}: version {ver} type {typ} ext {ext} conn {conn} msg {msg_id}"
        assert msg_len == a.msg_size, f"{where}: msg_len {msg_len}"
        assert psn < npkts, f"{where}: PSN {psn} beyond the message's {npkts} packets"
        assert msg_off == psn * max_payload, f"{where}: PSN {psn} at offset {msg_off}"
        assert payload == min(max_payload, a.msg_size - msg_off), f"{where}: payload {payload}"
        last = psn == npkts - 1
        assert bool(flags & 0x04) == last, f"{where}: MSG_LAST flag {flags:#x} on PSN {psn}"
        retx = psn in seen
        assert bool(flags & 0x01) == retx, f"{where}: RETX flag {flags:#x}, PSN {psn} sent before: {retx}"
        assert flags & ~0x07 == 0, f"{where}: unexpected flags {flags:#x}"
        if i < npkts:
            assert psn == i, f"{where}: first transmissions must be in PSN order, got {psn}"
        if retx:
            assert ts > seen[psn], f"{where}: a retransmission carries a fresh timestamp"
        seen[psn] = ts
    retx = len(frames) - npkts
    assert retx >= 1, "a peer that never answers must cause retransmissions (RTO)"
    print(f"check_capture: {len(frames)} frames ok: {npkts} first transmissions, {retx} retransmissions")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"check_capture: {e}", file=sys.stderr)
        sys.exit(1)
