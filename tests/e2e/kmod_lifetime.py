#!/usr/bin/env python3
"""tests/e2e/kmod_lifetime.py - socket lifetime storm for tcp_powertcp.

Run by kmod_lifetime_test.sh (inside a VM with the module loaded):
    kmod_lifetime.py NS_CLIENT NS_SERVER SERVER_ADDR PORT CONNS SECONDS

In NS_SERVER a sink accepts connections and reads them to the end. From
NS_CLIENT, worker threads open CONNS short connections (powertcp,
theta_powertcp or cubic, in turn), send a little, switch TCP_CONGESTION on some
of them mid-flow and close them normally or with an RST (SO_LINGER 0); long
flows meanwhile run for SECONDS, switching algorithm every 50 ms. Prints one
JSON line: connections made, switches done, resets sent, errors.
"""
import json
import os
import socket
import struct
import sys
import threading
import time

from netutil import enter_netns as enter

ALGOS = [b"powertcp", b"theta_powertcp", b"cubic"]


def sink(lst):
    def drain(c):
        try:
            while c.recv(65536):
                pass
        except OSError:
            pass  # reset by the peer: expected
        c.close()

    while True:
        try:
            c, _ = lst.accept()
        except OSError:
            return
        threading.Thread(target=drain, args=(c,), daemon=True).start()


def main():
    ns_c, ns_s, addr, port, conns, secs = sys.argv[1:7]
    port, conns, secs = int(port), int(conns), float(secs)
    enter(ns_s)
    lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lst.bind((addr, port))
    lst.listen(512)
    threading.Thread(target=sink, args=(lst,), daemon=True).start()
    enter(ns_c)  # sockets made from here on are the client's

    st = {"connections": 0, "switches": 0, "resets": 0, "long_flow_switches": 0, "errors": []}
    lock = threading.Lock()
    payload = b"x" * 20000

    def short(worker, n):
        for i in range(n):
            k = worker * n + i
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, ALGOS[k % 3])
                s.connect((addr, port))
                s.sendall(payload)
                switched = k % 4 == 1
                if switched:
                    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, ALGOS[(k + 1) % 3])
                    s.sendall(payload)
                reset = k % 3 == 2
                if reset:
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                s.close()
                with lock:
                    st["connections"] += 1
                    st["switches"] += switched
                    st["resets"] += reset
            except OSError as e:
                with lock:
                    st["errors"].append("short %d: %s" % (k, e))
                s.close()

    def long_flow(j):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, ALGOS[j % 3])
            s.connect((addr, port))
            end, k, last = time.time() + secs, j, time.time()
            while time.time() < end:
                s.sendall(payload)
                if time.time() - last >= 0.05:
                    k += 1
                    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, ALGOS[k % 3])
                    last = time.time()
                    with lock:
                        st["long_flow_switches"] += 1
            if j % 2:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError as e:
            with lock:
                st["errors"].append("long %d: %s" % (j, e))
        s.close()

    workers = 4
    threads = [threading.Thread(target=short, args=(w, conns // workers)) for w in range(workers)]
    threads += [threading.Thread(target=long_flow, args=(j,)) for j in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lst.close()
    print(json.dumps(st), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
