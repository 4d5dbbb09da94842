#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""tests/e2e/rotor_traffic.py - UDP traffic for rotor_test.sh.

  send DST N GAP_S                 N datagrams to DST:9999, one every GAP_S,
                                   whatever the schedule (violations expected)
  gated SCHEDULE SELF DST N MARGIN_S
                                   N datagrams to DST, each sent only inside a
                                   usable window of a slot whose matching
                                   connects node SELF to DST's node (DST =
                                   10.0.0.<node+1>), MARGIN_S from its edges:
                                   a sender that follows the schedule on
                                   CLOCK_TAI, as lumend's gating will
  recv SECONDS                     count datagrams on :9999 until SECONDS pass
                                   without one; prints the count
  mesh SELF ADDRS RATE_BPS SIZE WARM SECONDS
                                   send SIZE-byte datagrams to every other
                                   address of the comma-separated ADDRS at
                                   RATE_BPS each (payload bits; or a comma-
                                   separated rate per node, 0: none), and count the
                                   payload bytes received from each source in
                                   SECONDS after WARM; prints JSON {source
                                   address: bytes}

The schedule file is read with json only (an independent reader of the
format of docs/optical.md).
"""
import json
import socket
import sys
import time


def send(dst, n, gap):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    t = time.monotonic()
    for _ in range(n):
        s.sendto(b"x" * 64, (dst, 9999))
        t += gap
        d = t - time.monotonic()
        if d > 0:
            time.sleep(d)


def gated(path, me, dst, n, margin):
    with open(path) as f:
        sch = json.load(f)
    node = int(dst.split(".")[3]) - 1
    slot, guard, period, t0 = sch["slot_ns"], sch["guard_ns"], sch["period"], sch["t0_ns"]
    start_guard = sch.get("guard_at", "end") == "start"
    open_slots = {t for p in range(sch["uplinks"]) for t in range(period) if sch["matchings"][p][t][me] == node}
    if not open_slots:
        sys.exit(f"node {me} never reaches node {node}")
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    m = int(margin * 1e9)
    sent = 0
    while sent < n:
        now = time.clock_gettime_ns(time.CLOCK_TAI)
        k = (now - t0) // slot
        off = now - t0 - k * slot
        lo, hi = (guard, slot) if start_guard else (0, slot - guard)
        if k % period in open_slots and lo + m <= off < hi - m:
            s.sendto(b"x" * 64, (dst, 9999))
            sent += 1
            time.sleep(0.0002)
        else:
            time.sleep(0.0001)


def recv(seconds):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    # a gate releases a whole window's datagrams at once: room for them
    try:
        s.setsockopt(socket.SOL_SOCKET, 33, 32 << 20)  # SO_RCVBUFFORCE (root)
    except OSError:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 << 20)
    s.bind(("0.0.0.0", 9999))
    s.settimeout(seconds)
    n = 0
    try:
        while True:
            s.recv(100)
            n += 1
    except socket.timeout:
        pass
    print(n, flush=True)


def mesh(me, addrs, rates, size, warm, seconds):
    import select
    addrs = addrs.split(",")
    rates = [float(r) for r in rates.split(",")]
    if len(rates) == 1:
        rates = rates * len(addrs)
    peers = [a for i, a in enumerate(addrs) if i != me and rates[i] > 0]
    rate_of = {a: rates[i] for i, a in enumerate(addrs)}
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        rx.setsockopt(socket.SOL_SOCKET, 33, 32 << 20)  # SO_RCVBUFFORCE
    except OSError:
        pass
    rx.bind(("0.0.0.0", 9999))
    rx.setblocking(False)
    # a socket per destination, with room for what waits for its circuit:
    # one shared send buffer would fill with one destination's backlog and
    # starve the others when their windows open
    tx = {}
    for p in peers:
        t = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            t.setsockopt(socket.SOL_SOCKET, 32, 64 << 20)  # SO_SNDBUFFORCE
        except OSError:
            pass
        t.setblocking(False)
        tx[p] = t
    gap = {p: size * 8 / rate_of[p] for p in peers}
    payload = b"m" * size
    start = time.monotonic()
    nxt = {p: start for p in peers}
    got = {}
    t_from, t_to = start + warm, start + warm + seconds
    while True:
        now = time.monotonic()
        if now >= t_to:
            break
        for p in peers:
            while nxt[p] <= now:
                try:
                    tx[p].sendto(payload, (p, 9999))
                except BlockingIOError:
                    pass
                nxt[p] += gap[p]
        wait = max(0.0, min(min(nxt.values()), t_to) - time.monotonic())
        r, _, _ = select.select([rx], [], [], wait)
        while r:
            try:
                data, (src, _) = rx.recvfrom(65536)
            except BlockingIOError:
                break
            if t_from <= time.monotonic() < t_to:
                got[src] = got.get(src, 0) + len(data)
    print(json.dumps(got), flush=True)


def main():
    cmd = sys.argv[1]
    if cmd == "send":
        send(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
    elif cmd == "gated":
        gated(sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5]), float(sys.argv[6]))
    elif cmd == "mesh":
        mesh(int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5]), float(sys.argv[6]),
             float(sys.argv[7]))
    elif cmd == "recv":
        recv(float(sys.argv[2]))
    else:
        sys.exit("usage: rotor_traffic.py send|gated|recv|mesh ...")


if __name__ == "__main__":
    main()
