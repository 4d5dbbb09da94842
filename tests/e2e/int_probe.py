#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""int_probe.py - raw TCP segments carrying lumen INT options, for the switch
end-to-end test (tests/e2e/switch_test.sh). Independent of the C parser on
purpose: it is the oracle the BPF switch is checked against.

  int_probe.py send --src A --dst B --dport P PROBE...
      sends one TCP segment per PROBE = ID:TYPE:SLOTS:LAYOUT, where
        TYPE    req (request, empty slots) | badver (version 2: malformed)
                | echo (an echo with SLOTS filled hops) | full (request with
                every slot already filled)
        LAYOUT  plain (INT option first) | ts (NOP NOP TS first: offset 12)
                | odd (one NOP first: odd offset)
      The payload carries the probe id and the option bytes as sent.
  int_probe.py recv --dst B --dport P --count N --timeout S --out FILE
      collects segments to port P (raw socket, after tc ingress) until N
      distinct probes arrived or S seconds passed; writes a JSON object
      {id: {"csum_ok", "unchanged", "version", "flags", "count", "slots",
      "hops": [{"rate", "ts", "tx", "qlen"}], "offset", "arrivals"}}.
Addresses may be IPv4 or IPv6 (both ends of one run use the same family).
"""
import argparse
import json
import select
import socket
import struct
import sys
import time

from netutil import HOP_LEN, csum16, pack_hop, pseudo_header

KIND = 253
EXID = 0x4C55


def unpack_hop(b):
    v = int.from_bytes(b, "big")
    return {"rate": (v >> 46) & 0x3FF, "ts": (v >> 28) & 0x3FFFF, "tx": (v >> 14) & 0x3FFF, "qlen": v & 0x3FFF}


def int_option(kind, slots):
    if kind == "req":
        return bytes([KIND, 5 + HOP_LEN * slots, EXID >> 8, EXID & 0xFF, 1 << 5]) + bytes(HOP_LEN * slots)
    if kind == "badver":
        return bytes([KIND, 5 + HOP_LEN * slots, EXID >> 8, EXID & 0xFF, 2 << 5]) + bytes(HOP_LEN * slots)
    hops = b"".join(pack_hop(800, 1000 + i, 7 * i, 3 * i) for i in range(slots))
    if kind == "echo":
        return bytes([KIND, 5 + HOP_LEN * slots, EXID >> 8, EXID & 0xFF, (1 << 5) | 0x10 | slots]) + hops
    if kind == "full":
        return bytes([KIND, 5 + HOP_LEN * slots, EXID >> 8, EXID & 0xFF, (1 << 5) | slots]) + hops
    raise SystemExit("unknown probe type " + kind)


def options_for(layout, opt):
    if layout == "plain":
        pre = b""
    elif layout == "ts":
        pre = b"\x01\x01\x08\x0a" + struct.pack("!II", 123456, 654321)
    elif layout == "odd":
        pre = b"\x01"
    else:
        raise SystemExit("unknown layout " + layout)
    opts = pre + opt
    opts += b"\0" * ((4 - len(opts) % 4) % 4)  # EOL padding
    if len(opts) > 40:
        raise SystemExit("options longer than 40 bytes")
    return opts


def tcp_segment(src, dst, sport, dport, seq, opts, payload, v6):
    doff = (20 + len(opts)) // 4
    hdr = struct.pack("!HHIIBBHHH", sport, dport, seq, 1, doff << 4, 0x18, 65535, 0, 0) + opts
    seg = hdr + payload
    c = (~csum16(pseudo_header(src, dst, len(seg), v6) + seg)) & 0xFFFF
    return seg[:16] + struct.pack("!H", c) + seg[18:]


def find_int(opts):
    """Offset of the first kind-253 option with our ExID, walking the list like a switch."""
    i = 0
    while i < len(opts):
        k = opts[i]
        if k == 0:
            return None
        if k == 1:
            i += 1
            continue
        if k == KIND and i + 4 <= len(opts) and (opts[i + 2] << 8 | opts[i + 3]) == EXID:
            return i
        if i + 1 >= len(opts) or opts[i + 1] < 2:
            return None
        i += opts[i + 1]
    return None


def cmd_send(a):
    v6 = ":" in a.dst
    fam = socket.AF_INET6 if v6 else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_RAW, socket.IPPROTO_TCP)
    s.bind((a.src, 0))
    for n, spec in enumerate(a.probes):
        pid, kind, slots, layout = spec.split(":")
        opt = int_option(kind, int(slots))
        opts = options_for(layout, opt)
        payload = json.dumps({"id": pid, "opt": opt.hex()}).encode()
        seg = tcp_segment(a.src, a.dst, a.sport, a.dport, 1000 + 100 * n, opts, payload, v6)
        s.sendto(seg, (a.dst, 0))
        if a.gap:
            time.sleep(a.gap)


def parse_segment(seg, src, dst, v6):
    if len(seg) < 20:
        return None
    doff = (seg[12] >> 4) * 4
    if doff < 20 or doff > len(seg):
        return None
    try:
        meta = json.loads(seg[doff:].decode())
    except (UnicodeDecodeError, ValueError):
        return None
    opts = seg[20:doff]
    r = {"id": meta["id"], "csum_ok": csum16(pseudo_header(src, dst, len(seg), v6) + seg) == 0xFFFF}
    at = find_int(opts)
    r["offset"] = at
    if at is None:
        return r
    opt = opts[at:at + opts[at + 1]]
    r["unchanged"] = opt.hex() == meta["opt"]
    r["version"] = opt[4] >> 5
    r["flags"] = opt[4] & 0x18
    r["count"] = opt[4] & 7
    r["slots"] = (len(opt) - 5) // HOP_LEN
    r["hops"] = [unpack_hop(opt[5 + HOP_LEN * i:5 + HOP_LEN * (i + 1)]) for i in range(r["slots"])]
    return r


def cmd_recv(a):
    v6 = ":" in a.dst
    fam = socket.AF_INET6 if v6 else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_RAW, socket.IPPROTO_TCP)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
    results = {}
    deadline = time.time() + a.timeout
    if a.ready:
        open(a.ready, "w").close()
    while len(results) < a.count and time.time() < deadline:
        r, _, _ = select.select([s], [], [], max(0.0, deadline - time.time()))
        if not r:
            break
        pkt, addr = s.recvfrom(65535)
        if v6:
            seg, src, dst = pkt, addr[0].split("%")[0], a.dst
        else:
            ihl = (pkt[0] & 0xF) * 4
            total = struct.unpack("!H", pkt[2:4])[0]
            seg = pkt[ihl:total]
            src, dst = socket.inet_ntoa(pkt[12:16]), socket.inet_ntoa(pkt[16:20])
            if dst != a.dst:
                continue
        if len(seg) < 4 or struct.unpack("!H", seg[2:4])[0] != a.dport:
            continue
        res = parse_segment(seg, src, dst, v6)
        if res is None:
            continue
        pid = res.pop("id")
        if pid in results:
            results[pid]["arrivals"] += 1
            continue
        res["arrivals"] = 1
        results[pid] = res
    with open(a.out, "w") as f:
        json.dump(results, f, indent=1, sort_keys=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    ps = sub.add_parser("send")
    ps.add_argument("--src", required=True)
    ps.add_argument("--dst", required=True)
    ps.add_argument("--sport", type=int, default=40001)
    ps.add_argument("--dport", type=int, default=40002)
    ps.add_argument("--gap", type=float, default=0.0, help="seconds between probes")
    ps.add_argument("probes", nargs="+")
    pr = sub.add_parser("recv")
    pr.add_argument("--dst", required=True)
    pr.add_argument("--dport", type=int, default=40002)
    pr.add_argument("--count", type=int, required=True)
    pr.add_argument("--timeout", type=float, default=5.0)
    pr.add_argument("--out", required=True)
    pr.add_argument("--ready", help="file created once the socket is open")
    a = p.parse_args()
    if a.cmd == "send":
        cmd_send(a)
    else:
        cmd_recv(a)


if __name__ == "__main__":
    sys.exit(main())
