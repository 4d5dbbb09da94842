#!/usr/bin/env python3
"""tests/e2e/kmod_hostile.py - hostile segments against tcp_powertcp's INT hook.

Run by kmod_hostile_test.sh (inside a VM with the module loaded):
    kmod_hostile.py NS_CLIENT NS_SERVER SERVER_DEV V4_SERVER V6_SERVER

A powertcp connection (IPv4, then IPv6) runs from NS_CLIENT to NS_SERVER and
is left idle. For every case one crafted segment, built with scapy and a
hand-assembled TCP header, is sent from NS_SERVER's device as if the server
had sent it. Each case states which of the module's counters it must move
(and by how much); every other hook counter must stay put, the socket must
stay ESTABLISHED with its window unchanged, and a data exchange afterwards must
apply no injected echo: a stored echo is then counted hook_unmatched, never
used (int_updates and int_unusable stay 0, since the real ACKs carry none).
"""
import os
import socket
import struct
import sys
import time

from netutil import enter_netns as enter, pack_hop, read_in_netns, tcp_checksum

# counters are per network namespace: the client's, where the hook and the
# powertcp sockets see the hostile segments
STATS_NS = None
# the counters that hostile segments could move; the others follow traffic
HOOK = ["int_echoes", "int_malformed", "hook_skipped", "hook_old_ack", "hook_bad_csum",
        "hook_no_state", "hook_lookup", "hook_unmatched", "hook_reordered", "hook_ahead", "int_taken", "int_superseded",
        "int_updates", "int_unusable",
        "rtt_guard", "no_mem", "hash_fail", "no_state"]
TCP_INFO_FMT = "B" * 8 + "I" * 24  # struct tcp_info up to tcpi_rcv_space
failed = 0
passed = 0


def log(msg):
    print("[kmod_hostile_test] " + msg, flush=True)


def check(what, cond, detail=""):
    global failed, passed
    if cond:
        passed += 1
        log("ok: " + what)
    else:
        failed += 1
        log("FAIL: " + what + (" (" + detail + ")" if detail else ""))


def counters():
    out = {}
    text = read_in_netns(STATS_NS, "/proc/thread-self/net/powertcp")
    for line in text.splitlines():
        k, v = line.split()
        out[k] = int(v)
    return out


def tcp_info(sk):
    raw = sk.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, struct.calcsize(TCP_INFO_FMT))
    v = struct.unpack(TCP_INFO_FMT, raw[:struct.calcsize(TCP_INFO_FMT)])
    # tcpi_state is byte 0; tcpi_snd_ssthresh, tcpi_snd_cwnd are u32 #17, #18
    return {"state": v[0], "ssthresh": v[8 + 17], "cwnd": v[8 + 18]}


def echo_opt(version=1, hops=1):
    """A lumen INT echo (include/lumen/int_option.h): kind 253, ExID 0x4C55,
    Ver|E|O|Count, then 7-byte hop records (100 Mbit/s, some counters)."""
    body = bytes([(version << 5) | 0x10 | hops])
    for i in range(hops):
        body += pack_hop((100 << 3) | 0, 1000 + i, 500, 3)  # 100 * 10^0 Mbit/s
    return bytes([253, 4 + len(body), 0x4C, 0x55]) + body


class Conn:
    """An idle powertcp connection and what the wire said about it last."""

    def __init__(self, family, ns_c, ns_s, dev, server, port, sniff):
        self.family, self.dev, self.server, self.sniff = family, dev, server, sniff
        enter(ns_s)
        lst = socket.socket(family, socket.SOCK_STREAM)
        lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        lst.bind((server, port))
        lst.listen(1)
        enter(ns_c)
        self.cli = socket.socket(family, socket.SOCK_STREAM)
        self.cli.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"powertcp")
        self.cli.connect((server, port))
        enter(ns_s)
        self.srv, _ = lst.accept()
        lst.close()
        self.port = port
        self.cport = self.cli.getsockname()[1]
        self.client = self.cli.getsockname()[0]

    def exchange(self, n=1000):
        """Data both ways, verified; then learn seq/ack/TS from the wire."""
        while True:  # drop what was captured before
            try:
                self.sniff.recv(65535, socket.MSG_DONTWAIT)
            except BlockingIOError:
                break
        data = os.urandom(n)
        self.cli.sendall(data)
        got = b""
        while len(got) < n:
            got += self.srv.recv(n - len(got))
        self.srv.sendall(got[::-1])
        back = b""
        while len(back) < n:
            back += self.cli.recv(n - len(back))
        time.sleep(0.3)  # delayed ACKs
        self.learn()
        return back == data[::-1]

    def learn(self):
        from scapy.layers.l2 import Ether
        from scapy.layers.inet import TCP
        last_sc = last_cs = None
        while True:
            try:
                frame = self.sniff.recv(65535, socket.MSG_DONTWAIT)
            except BlockingIOError:
                break
            p = Ether(frame)
            if TCP not in p:
                continue
            t = p[TCP]
            if t.sport == self.port and t.dport == self.cport:
                last_sc = p
            elif t.sport == self.cport and t.dport == self.port:
                last_cs = p
        assert last_sc is not None and last_cs is not None, "no segments captured"
        t = last_sc[TCP]
        self.seq = (t.seq + len(bytes(t.payload))) & 0xFFFFFFFF  # the client's rcv_nxt
        self.ack = t.ack  # the client's snd_una = snd_nxt (everything acked)
        self.win = t.window
        self.tsval = dict(t.options).get("Timestamp", (0, 0))[0]
        self.tsecr = dict(last_cs[TCP].options).get("Timestamp", (0, 0))[0]
        self.mac_s, self.mac_c = last_sc.src, last_sc.dst

    def segment(self, opts, flags="A", seq=0, ack=0, doff=None, bad_csum=False):
        """TCP header bytes with this option block, as from the server."""
        fl = {"F": 1, "S": 2, "R": 4, "P": 8, "A": 16}
        bits = sum(fl[c] for c in flags)
        if doff is None:
            opts += b"\x01" * (-len(opts) % 4)
            doff = 5 + len(opts) // 4
        hdr = struct.pack("!HHIIBBHHH", self.port, self.cport, (self.seq + seq) & 0xFFFFFFFF,
                          (self.ack + ack) & 0xFFFFFFFF, doff << 4, bits, self.win, 0, 0) + opts
        c = tcp_checksum(self.server, self.client, hdr, self.family == socket.AF_INET6) ^ (0x5555 if bad_csum else 0)
        return hdr[:16] + struct.pack("!H", c) + hdr[18:]

    def ts(self, tsval_delta=0):
        return b"\x01\x01\x08\x0a" + struct.pack("!II", (self.tsval + tsval_delta) & 0xFFFFFFFF, self.tsecr)

    def send(self, tcp, ext=None, frag=False):
        from scapy.layers.l2 import Ether
        from scapy.layers.inet import IP, fragment
        from scapy.layers.inet6 import IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrFragment, fragment6
        from scapy.packet import Raw
        from scapy.sendrecv import sendp
        if self.family == socket.AF_INET:
            pkt = IP(src=self.server, dst=self.client, proto=6) / Raw(tcp)
            pkts = fragment(pkt, fragsize=16) if frag else [pkt]
        else:
            ip = IPv6(src=self.server, dst=self.client)
            if ext == "dstopt":
                pkt = ip / IPv6ExtHdrDestOpt(nh=6) / Raw(tcp)
            else:
                ip.nh = 6
                pkt = ip / Raw(tcp)
            if frag:
                pkt = ip / IPv6ExtHdrFragment(nh=6) / Raw(tcp)
                pkts = fragment6(pkt, 80)
            else:
                pkts = [pkt]
        sendp([Ether(src=self.mac_s, dst=self.mac_c) / p for p in pkts], iface=self.dev, verbose=False)


def run_case(c, name, tcp, expect, stored, ext=None, frag=False):
    name = ("IPv4: " if c.family == socket.AF_INET else "IPv6: ") + name
    before, info0 = counters(), tcp_info(c.cli)
    c.send(tcp, ext=ext, frag=frag)
    time.sleep(0.2)
    after, info1 = counters(), tcp_info(c.cli)
    moved = {k: after[k] - before[k] for k in HOOK if after[k] != before[k]}
    check("%s: moves %s" % (name, expect or "no counter"), moved == expect, "moved %s" % moved)
    check("%s: connection established, window %d unchanged" % (name, info0["cwnd"]),
          info1["state"] == 1 and info1["cwnd"] == info0["cwnd"] and info1["ssthresh"] == info0["ssthresh"],
          "before %s, after %s" % (info0, info1))
    ok = c.exchange()
    done = counters()
    moved = {k: done[k] - after[k] for k in HOOK if done[k] != after[k]}
    want = {"hook_unmatched": 1} if stored else {}
    check("%s: data still flows, no injected echo applied (%s)" % (name, want or "no counter"),
          ok and moved == want, "exchange ok %s, moved %s" % (ok, moved))


def cases(c):
    E = echo_opt()
    ts = c.ts()
    v4 = c.family == socket.AF_INET
    run_case(c, "option of length 0 before INT", c.segment(ts + b"\x22\x00" + E), {}, False)
    run_case(c, "option of length 1 before INT", c.segment(ts + b"\x22\x01" + E), {}, False)
    run_case(c, "option running past doff before INT", c.segment(ts + b"\x22\x30" + E), {}, False)
    run_case(c, "INT whose length runs past doff", c.segment(ts + E[:1] + bytes([40]) + E[2:]), {}, False)
    run_case(c, "INT in the last bytes of the header", c.segment(ts + E), {"int_echoes": 1}, True)
    run_case(c, "doff 15 full of NOPs", c.segment(b"\x01" * 40, doff=15), {}, False)
    run_case(c, "doff 15: NOPs, then INT in the last 12 bytes",
             c.segment(b"\x01" * 28 + E, doff=15), {"int_echoes": 1}, True)
    run_case(c, "INT of version 7 (unknown)", c.segment(ts + echo_opt(version=7)), {"int_malformed": 1}, False)
    run_case(c, "bad TCP checksum", c.segment(ts + E, bad_csum=True), {"hook_bad_csum": 1}, False)
    run_case(c, "ack beyond snd_nxt", c.segment(ts + E, ack=100000), {"hook_old_ack": 1}, False)
    run_case(c, "ack before snd_una", c.segment(ts + E, ack=-100000), {"hook_old_ack": 1}, False)
    # TCP drops these after the hook ran: stored, never matched
    run_case(c, "sequence number out of window", c.segment(ts + E, seq=1 << 30), {"int_echoes": 1}, True)
    run_case(c, "old TSval (PAWS)", c.segment(c.ts(-(1 << 20)) + E), {"int_echoes": 1}, True)
    run_case(c, "SYN carrying an echo", c.segment(ts + E, flags="SA"), {"hook_skipped": 1}, False)
    run_case(c, "RST carrying an echo (in window, not exact)", c.segment(ts + E, flags="RA", seq=1),
             {"hook_skipped": 1}, False)
    run_case(c, "segment without ACK carrying an echo", c.segment(ts + E, flags="P"), {"hook_skipped": 1}, False)
    if v4:
        # IPv4 reassembles before LOCAL_IN; early demux skips fragments
        run_case(c, "IPv4 fragments", c.segment(ts + E), {"int_echoes": 1, "hook_lookup": 1}, True, frag=True)
    else:
        # without early demux (next header is not TCP) the hook looks the socket up
        run_case(c, "IPv6 destination-options header", c.segment(ts + E),
                 {"int_echoes": 1, "hook_lookup": 1}, True, ext="dstopt")
        # IPv6 reassembles after LOCAL_IN: the hook does not read fragments
        run_case(c, "IPv6 fragments", c.segment(ts + E), {}, False, frag=True)


def main():
    global STATS_NS
    ns_c, ns_s, dev, v4, v6 = sys.argv[1:6]
    STATS_NS = ns_c
    enter(ns_s)
    sniff = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    sniff.bind((dev, 0))
    for family, server, port in ((socket.AF_INET, v4, 7100), (socket.AF_INET6, v6, 7106)):
        c = Conn(family, ns_c, ns_s, dev, server, port, sniff)
        check("%s: powertcp connection, data verified both ways" % ("IPv4" if family == socket.AF_INET else "IPv6"),
              c.exchange())
        cases(c)
        c.cli.close()
        c.srv.close()
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
