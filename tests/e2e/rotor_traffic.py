#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""tests/e2e/rotor_traffic.py - UDP traffic for rotor_test.sh.

  send DST N GAP_S                 N datagrams to DST:9999, one every GAP_S,
                                   whatever the schedule (violations expected)
  gated SCHEDULE SELF DST N MARGIN_S [SIZE]
                                   N datagrams to DST, each sent only inside a
                                   usable window of a slot whose matching
                                   connects node SELF to DST's node (DST =
                                   10.0.0.<node+1>), MARGIN_S from its edges:
                                   a sender that follows the schedule on
                                   CLOCK_TAI, as lumend's gating will; SIZE
                                   bytes of payload each (64)
  stamped SCHEDULE SELF DST        five datagrams to DST carrying departure
                                   stamps, for the rotor's late and wrong-slot
                                   verdicts (see stamped() below); prints what
                                   the rotor should count, as JSON
  recv SECONDS [READY FIRST_S]     count datagrams on :9999 until SECONDS pass
                                   without one; prints the count. With READY,
                                   creates that file once it listens (the
                                   sender may start) and waits up to FIRST_S
                                   for the first datagram (a sender's python3
                                   may take longer to start than SECONDS).
                                   A datagram "end" (the test's own, sent
                                   on loopback once what it waits for must
                                   have come) stops it at once, uncounted
  mesh SELF ADDRS RATE_BPS SIZE WARM SECONDS [DRAIN [READY_DIR]]
                                   send SIZE-byte datagrams to every other
                                   address of the comma-separated ADDRS at
                                   RATE_BPS each (payload bits; or a comma-
                                   separated rate per node, 0: none) for WARM
                                   + SECONDS, and count the payload bytes
                                   received from each source; then, with
                                   DRAIN, go on receiving until DRAIN seconds
                                   pass without a datagram (what the others'
                                   gates still hold). Prints JSON {"window":
                                   {source: bytes received in the SECONDS
                                   after WARM}, "received": {source: bytes
                                   received in all}, "sent": {destination:
                                   bytes the socket took}}. With READY_DIR,
                                   a barrier: the receiver listens, then
                                   creates READY_DIR/SELF, and sending begins
                                   once every address of ADDRS has its file
                                   there, so that no host sends before every
                                   receiver is up

The schedule file is read with json only (an independent reader of the
format of docs/optical.md).
"""
import json
import os
import socket
import struct
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


def gated(path, me, dst, n, margin, size=64):
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
            s.sendto(b"x" * size, (dst, 9999))
            sent += 1
            time.sleep(0.0002)
        else:
            time.sleep(0.0001)


def stamped(path, me, dst):
    """Frames that carry a departure (SO_TXTIME on CLOCK_MONOTONIC: the
    delivery time a gate's EDT leaves on a packet; with no fq below the
    socket they leave at once, whatever it says), sent when the schedule
    does not connect the pair: one stamped inside the pair's last window
    (late), one stamped now, one stamped a period ahead (it left early), one
    without a stamp (all three wrong); then one stamped now inside a window
    (forwarded). Prints what the rotor should count of them, as JSON."""
    with open(path) as f:
        sch = json.load(f)
    node = int(dst.split(".")[3]) - 1
    slot, guard, period, t0 = sch["slot_ns"], sch["guard_ns"], sch["period"], sch["t0_ns"]
    lo, hi = (guard, slot) if sch.get("guard_at", "end") == "start" else (0, slot - guard)
    connects = {t for p in range(sch["uplinks"]) for t in range(period) if sch["matchings"][p][t][me] == node}
    if not connects or len(connects) * 2 > period:
        sys.exit(f"node {me} -> node {node}: needs a schedule where two slots in a row do not connect them")
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, 61, struct.pack("iI", time.CLOCK_MONOTONIC, 0))  # SO_TXTIME

    def tai():
        return time.clock_gettime_ns(time.CLOCK_TAI)

    def send_stamped(depart_tai):
        mono = depart_tai - tai() + time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        s.sendmsg([b"s" * 64], [(socket.SOL_SOCKET, 61, struct.pack("Q", mono))], 0, (dst, 9999))  # SCM_TXTIME

    def wait_for(ok):  # until ok(slot number, offset) holds, a tenth of a slot in
        while True:
            k, off = divmod(tai() - t0, slot)
            if k >= period and ok(k, off) and lo + slot // 10 <= off < hi - slot // 10:
                return k
            time.sleep(slot / 50e9)

    # a slot that does not connect the pair, nor does the next (a delay of
    # this process up to a slot still lands in a wrong one)
    k = wait_for(lambda k, off: k % period not in connects and (k + 1) % period not in connects)
    last = max(j for j in range(k - period, k) if j % period in connects)
    send_stamped(t0 + last * slot + (lo + hi) // 2)
    send_stamped(tai())
    send_stamped(tai() + period * slot)
    s.sendto(b"u" * 64, (dst, 9999))
    wait_for(lambda k, off: k % period in connects)
    send_stamped(tai())
    print(json.dumps({"late": 1, "violations": 3, "forwarded": 1, "stamped": 4}), flush=True)


def recv(seconds, ready=None, first=None):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    # a gate releases a whole window's datagrams at once: room for them
    try:
        s.setsockopt(socket.SOL_SOCKET, 33, 32 << 20)  # SO_RCVBUFFORCE (root)
    except OSError:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 << 20)
    s.bind(("0.0.0.0", 9999))
    if ready:
        open(ready, "w").close()
    s.settimeout(first or seconds)
    n = 0
    try:
        while s.recv(100) != b"end":
            n += 1
            s.settimeout(seconds)
    except socket.timeout:
        pass
    print(n, flush=True)


def mesh(me, addrs, rates, size, warm, seconds, drain=0.0, ready_dir=None):
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
    if ready_dir:
        open(f"{ready_dir}/{me}", "w").close()
        give_up = time.monotonic() + 120
        while not all(os.path.exists(f"{ready_dir}/{i}") for i in range(len(addrs))):
            if time.monotonic() > give_up:
                sys.exit(f"mesh {me}: not every host became ready in 120 s")
            time.sleep(0.01)
    start = time.monotonic()
    nxt = {p: start for p in peers}
    got, received, sent = {}, {}, {}
    t_from, t_to = start + warm, start + warm + seconds
    idle_until = t_to

    def receive():
        nonlocal idle_until
        while True:
            try:
                data, (src, _) = rx.recvfrom(65536)
            except BlockingIOError:
                return
            now = time.monotonic()
            received[src] = received.get(src, 0) + len(data)
            if t_from <= now < t_to:
                got[src] = got.get(src, 0) + len(data)
            idle_until = max(idle_until, now + drain)

    while True:
        now = time.monotonic()
        if now >= t_to:
            break
        for p in peers:
            while nxt[p] <= now:
                try:
                    tx[p].sendto(payload, (p, 9999))
                    sent[p] = sent.get(p, 0) + size
                except BlockingIOError:
                    pass
                nxt[p] += gap[p]
        wait = max(0.0, min(min(nxt.values()), t_to) - time.monotonic())
        if select.select([rx], [], [], wait)[0]:
            receive()
    # the drain: what is queued first, every time (a process that stalled
    # past idle_until still reads what came meanwhile)
    idle_until = max(idle_until, time.monotonic() + drain)
    while drain > 0:
        receive()
        left = idle_until - time.monotonic()
        if left <= 0:
            break
        select.select([rx], [], [], left)
    print(json.dumps({"window": got, "received": received, "sent": sent}), flush=True)


def main():
    cmd = sys.argv[1]
    if cmd == "send":
        send(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
    elif cmd == "gated":
        gated(sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5]), float(sys.argv[6]),
              int(sys.argv[7]) if len(sys.argv) > 7 else 64)
    elif cmd == "mesh":
        mesh(int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5]), float(sys.argv[6]),
             float(sys.argv[7]), float(sys.argv[8]) if len(sys.argv) > 8 else 0.0,
             sys.argv[9] if len(sys.argv) > 9 else None)
    elif cmd == "stamped":
        stamped(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    elif cmd == "recv":
        ready = sys.argv[3] if len(sys.argv) > 3 else None
        first = float(sys.argv[4]) if len(sys.argv) > 4 else None
        recv(float(sys.argv[2]), ready, first)
    else:
        sys.exit("usage: rotor_traffic.py send|gated|recv|mesh ...")


if __name__ == "__main__":
    main()
