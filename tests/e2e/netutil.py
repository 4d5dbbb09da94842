"""tests/e2e/netutil.py - small helpers shared by the e2e tests' Python tools:
Internet checksums, the TCP pseudo header, lumen INT hop records written
independently of the C encoder (include/lumen/int_option.h), and entering a
named network namespace (Python 3.11 has no os.setns)."""
import ctypes
import os
import socket
import struct

CLONE_NEWNET = 0x40000000
HOP_LEN = 7


def csum16(data):
    """One's-complement sum of 16-bit words (not complemented)."""
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def pseudo_header(src, dst, length, v6, proto=6):
    if v6:
        return (socket.inet_pton(socket.AF_INET6, src) + socket.inet_pton(socket.AF_INET6, dst) +
                struct.pack("!I3xB", length, proto))
    return socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack("!BBH", 0, proto, length)


def tcp_checksum(src, dst, seg, v6):
    """The checksum field for TCP segment seg (whose own field is zero)."""
    return (~csum16(pseudo_header(src, dst, len(seg), v6) + seg)) & 0xFFFF


def pack_hop(rate, ts, tx, qlen):
    """A 7-byte hop record: 10-bit rate code, 18-bit ts, 14-bit tx, 14-bit qlen."""
    v = (rate << 46) | (ts << 28) | (tx << 14) | qlen
    return v.to_bytes(HOP_LEN, "big")


def enter_netns(ns):
    """Move this process into network namespace /run/netns/NS: sockets made
    afterwards belong to it, sockets made before keep theirs."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open("/run/netns/" + ns, os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns " + ns)
    finally:
        os.close(fd)


def read_in_netns(ns, path):
    """The contents of PATH as seen from network namespace /run/netns/NS
    (/proc/thread-self/net/... follows it); this thread returns to its own
    namespace afterwards."""
    libc = ctypes.CDLL(None, use_errno=True)
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        enter_netns(ns)
        try:
            with open(path) as f:
                return f.read()
        finally:
            if libc.setns(home, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns back")
    finally:
        os.close(home)
