#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""int_probe.py - raw TCP segments carrying lumen INT options, for the switch
end-to-end test (tests/e2e/switch_test.sh). Independent of the C parser on
purpose: it is the oracle the BPF switch is checked against.

  int_probe.py send --src A --dst B --dport P PROBE...
      sends one TCP segment per PROBE = ID:TYPE:SLOTS:LAYOUT, where
        TYPE    req (request, empty slots) | req2 (a version 2 request: 6-byte
                header, 9-byte records) | badver (version 7: malformed)
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
  int_probe.py send|recv --dp ...
      the same for lumen-dp datagrams (include/lumen/dp_wire.h, IPv4, UDP
      port 4792), the option as the extension of a DATA header; TYPE also
      dpecho (an ACK carrying an echo: never touched) and dpbadver (lumen-dp
      version 2: not ours), LAYOUT zero (UDP checksum 0, as lumen-dp sends)
      or csum (a real UDP checksum, which the switch must keep valid).
Addresses may be IPv4 or IPv6 (both ends of one run use the same family).
"""
import argparse
import ctypes
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


HOP_LEN_V2 = 9


def unpack_hop_v2(b):
    # 72 bits: rate 10 | ts 24 | tx 24 | qlen 14
    v = int.from_bytes(b, "big")
    return {"rate": (v >> 62) & 0x3FF, "ts": (v >> 38) & 0xFFFFFF, "tx": (v >> 14) & 0xFFFFFF, "qlen": v & 0x3FFF}


def int_option(kind, slots):
    if kind == "req":
        return bytes([KIND, 5 + HOP_LEN * slots, EXID >> 8, EXID & 0xFF, 1 << 5]) + bytes(HOP_LEN * slots)
    if kind == "req2":
        return bytes([KIND, 6 + HOP_LEN_V2 * slots, EXID >> 8, EXID & 0xFF, 2 << 5, 0]) + bytes(HOP_LEN_V2 * slots)
    if kind == "badver":
        return bytes([KIND, 5 + HOP_LEN * slots, EXID >> 8, EXID & 0xFF, 7 << 5]) + bytes(HOP_LEN * slots)
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


DP_PORT = 4792


def dp_datagram(src, dst, sport, kind, slots, layout, meta):
    """A lumen-dp DATA (or, for dpecho, ACK) datagram with an INT extension."""
    version, typ, flags = 1, 1, 0x08
    opt = int_option({"dpecho": "echo", "dpfull": "full"}.get(kind, "req"), slots)
    if kind == "dpbadver":
        version = 2
    ext = opt + bytes((4 - len(opt) % 4) % 4)
    payload = json.dumps(dict(meta, opt=opt.hex())).encode()
    common = struct.pack("!BBBBII", version, 2 if kind == "dpecho" else typ, flags, len(ext) // 4, 7, 3)
    if kind == "dpecho":
        # an ACK has no payload: the probe's number rides in echo_psn
        payload = b""
        body = struct.pack("!QQIHHHH", 5, 0, meta["n"], 49152, 1, 0, 1024)
    else:
        body = struct.pack("!QIII", 5, 0, 0, len(payload))
    data = common + body + ext + payload
    udp = struct.pack("!HHHH", sport, DP_PORT, 8 + len(data), 0) + data
    if layout == "csum":
        c = (~csum16(pseudo_header(src, dst, len(udp), False, 17) + udp)) & 0xFFFF
        udp = udp[:6] + struct.pack("!H", c or 0xFFFF) + udp[8:]
    return udp, opt


def parse_dp(udp, src, dst):
    """A received lumen-dp datagram as a probe result, or None."""
    if len(udp) < 8 + 12:
        return None
    csum = struct.unpack("!H", udp[6:8])[0]
    version, typ, flags, words = udp[8], udp[9], udp[10], udp[11]
    hlen = 32 if typ == 1 else 40
    ext = udp[8 + hlen:8 + hlen + 4 * words]
    if typ == 1:
        try:
            meta = json.loads(udp[8 + hlen + 4 * words:].decode())
        except (UnicodeDecodeError, ValueError):
            return None
        pid, sent = meta["id"], meta["opt"]
    else:
        pid, sent = "ack%d" % struct.unpack("!I", udp[8 + 28:8 + 32])[0], None
    r = {"id": pid, "dp_version": version, "csum_zero": csum == 0,
         "csum_ok": csum == 0 or csum16(pseudo_header(src, dst, len(udp), False, 17) + udp) == 0xFFFF}
    r.update(option_result(ext[:ext[1]] if len(ext) >= 2 else b"", sent))
    return r


def option_result(opt, sent):
    """An arrived INT option as a probe result; sent: its hex as sent (None: not known)."""
    r = {"unchanged": sent is None or opt.hex() == sent, "ext": opt.hex()}
    if len(opt) >= 5:
        r["version"] = opt[4] >> 5
        r["flags"] = opt[4] & 0x18
        r["count"] = opt[4] & 7
        hdr, hop_len, unpack = (6, HOP_LEN_V2, unpack_hop_v2) if r["version"] == 2 else (5, HOP_LEN, unpack_hop)
        r["slots"] = (len(opt) - hdr) // hop_len
        r["hops"] = [unpack(opt[hdr + hop_len * i:hdr + hop_len * (i + 1)]) for i in range(r["slots"])]
    return r


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


def cmd_send_dp(a):
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP)
    s.bind((a.src, 0))
    for n, spec in enumerate(a.probes):
        pid, kind, slots, layout = spec.split(":")
        udp, _ = dp_datagram(a.src, a.dst, 49152 + n, kind, int(slots), layout, {"id": pid, "n": n})
        s.sendto(udp, (a.dst, 0))
        if a.gap:
            time.sleep(a.gap)


def cmd_send(a):
    if a.dp:
        return cmd_send_dp(a)
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
    r.update(option_result(opts[at:at + opts[at + 1]], meta["opt"]))
    return r


SO_ATTACH_FILTER = 26


def keep_only_port(s, v6, port):
    """A classic BPF filter that queues only segments to `port` on the raw
    socket: a bulk flow to the same host (the load test) would otherwise fill
    the receive buffer faster than python drains it (a VM under software
    emulation) and crowd the probes out. An IPv4 raw socket sees the IP
    header first, an IPv6 one the transport header."""
    ret_all, ret_none = (0x06, 0, 0, 0xFFFFFFFF), (0x06, 0, 0, 0)
    if v6:
        load = [(0x28, 0, 0, 2)]  # A = half word at 2 (destination port)
    else:
        load = [(0xB1, 0, 0, 0),  # X = 4 * (IP header byte 0 & 0xf)
                (0x48, 0, 0, 2)]  # A = half word at X + 2
    prog = load + [(0x15, 0, 1, port), ret_all, ret_none]  # A == port ?
    code = b"".join(struct.pack("HBBI", *i) for i in prog)
    buf = ctypes.create_string_buffer(code)
    fprog = struct.pack("HL", len(prog), ctypes.addressof(buf))
    s.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, fprog)


def cmd_recv(a):
    v6 = ":" in a.dst
    fam = socket.AF_INET6 if v6 else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_RAW, socket.IPPROTO_UDP if a.dp else socket.IPPROTO_TCP)
    keep_only_port(s, v6, DP_PORT if a.dp else a.dport)
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
        if len(seg) < 4 or struct.unpack("!H", seg[2:4])[0] != (DP_PORT if a.dp else a.dport):
            continue
        res = parse_dp(seg, src, dst) if a.dp else parse_segment(seg, src, dst, v6)
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
    ps.add_argument("--dp", action="store_true", help="lumen-dp datagrams instead of TCP segments")
    ps.add_argument("probes", nargs="+")
    pr = sub.add_parser("recv")
    pr.add_argument("--dst", required=True)
    pr.add_argument("--dport", type=int, default=40002)
    pr.add_argument("--count", type=int, required=True)
    pr.add_argument("--timeout", type=float, default=5.0)
    pr.add_argument("--out", required=True)
    pr.add_argument("--ready", help="file created once the socket is open")
    pr.add_argument("--dp", action="store_true", help="lumen-dp datagrams instead of TCP segments")
    a = p.parse_args()
    if a.cmd == "send":
        cmd_send(a)
    else:
        cmd_recv(a)


if __name__ == "__main__":
    sys.exit(main())
