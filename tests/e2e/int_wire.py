"""tests/e2e/int_wire.py - what int_sockops_test sees of lumen's INT options
on the wire, from an AF_PACKET socket in the namespace it runs in.

  int_wire.py capture IFACE PORT SECONDS MAX_SEGMENTS
      counts TCP segments to/from PORT and the lumen INT options in them
      (kind 253, ExID 0x4C55; echo flag 0x10) and prints key=value pairs.
  int_wire.py replay-bad-version IFACE PORT SECONDS COPIES
      replays one of the server's (source PORT) pure IPv4 ACKs carrying an
      echo COPIES times, with the option's version set to 7 (refused by
      lumen_int_parse) and the TCP checksum fixed. Run without TCP
      timestamps, or PAWS drops the replays before the option is parsed.
      The ACK replayed is the 50th echo ACK of one connection, so that it
      belongs to the bulk data connection (iperf3's control connection
      carries a handful), whose server never sends data: its sequence
      number stays in the window (a control-connection ACK may be overtaken
      by the server's next message, and the replays dropped as old before
      the parse callback runs). Counted per connection, not in total: in
      an emulated guest the whole transfer may bring fewer than 200."""
import socket
import struct
import sys
import time

from netutil import csum16

INT_KIND, INT_EXID, ECHO_FLAG = 253, b"\x4c\x55", 0x10


def packet_socket(iface):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))  # ETH_P_ALL
    s.bind((iface, 0))
    s.settimeout(0.2)
    return s


def tcp_options(opts):
    """(offset, kind, length) of each option; ValueError for a malformed list."""
    i = 0
    while i < len(opts):
        kind = opts[i]
        if kind == 0:
            return
        if kind == 1:
            i += 1
            continue
        if i + 1 >= len(opts) or opts[i + 1] < 2:
            raise ValueError("malformed TCP option list")
        yield i, kind, opts[i + 1]
        i += opts[i + 1]


def is_lumen_int(opts, off, kind, length):
    return kind == INT_KIND and length >= 5 and opts[off + 2:off + 4] == INT_EXID


def tcp_segment(pkt):
    """(IP length, TCP bytes) of an Ethernet frame, or None if not TCP."""
    ethertype = struct.unpack("!H", pkt[12:14])[0]
    if ethertype == 0x0800 and pkt[23] == 6:
        ihl = (pkt[14] & 15) * 4
        iplen = struct.unpack("!H", pkt[16:18])[0]
        return iplen, pkt[14 + ihl:14 + iplen]
    if ethertype == 0x86DD and pkt[20] == 6:
        iplen = 40 + struct.unpack("!H", pkt[18:20])[0]
        return iplen, pkt[54:14 + iplen]
    return None


def capture(iface, port, secs, maxp):
    s = packet_socket(iface)
    end = time.time() + secs
    st = dict(tcp=0, data=0, pure_ack=0, req=0, echo=0, data_req=0, ack_echo=0,
              max_ip_len=0, bad=0, req_len=set(), echo_len=set())
    while time.time() < end and st["tcp"] < maxp:
        try:
            seg = tcp_segment(s.recv(65535))
        except socket.timeout:
            continue
        if seg is None:
            continue
        iplen, tcp = seg
        if len(tcp) < 20 or port not in struct.unpack("!HH", tcp[0:4]):
            continue
        st["tcp"] += 1
        st["max_ip_len"] = max(st["max_ip_len"], iplen)
        doff = (tcp[12] >> 4) * 4
        if tcp[13] & 0x02:
            continue  # SYN, SYN-ACK
        data = len(tcp) > doff
        st["data" if data else "pure_ack"] += 1
        opts = tcp[20:doff]
        try:
            for off, kind, length in tcp_options(opts):
                if not is_lumen_int(opts, off, kind, length):
                    continue
                hdr = opts[off + 4]
                if hdr >> 5 != 1:
                    st["bad"] += 1
                elif hdr & ECHO_FLAG:
                    st["echo"] += 1
                    st["echo_len"].add(length)
                    st["ack_echo"] += not data
                else:
                    st["req"] += 1
                    st["req_len"].add(length)
                    st["data_req"] += data
        except ValueError:
            st["bad"] += 1
    print(" ".join("%s=%s" % (k, ",".join(map(str, sorted(v))) or "-" if isinstance(v, set) else v)
                   for k, v in st.items()))


def replay_bad_version(iface, port, secs, copies):
    s = packet_socket(iface)
    end, sent, seen = time.time() + secs, 0, {}
    while time.time() < end and not sent:
        try:
            pkt, addr = s.recvfrom(65535)
        except socket.timeout:
            continue
        if addr[2] != socket.PACKET_OUTGOING or struct.unpack("!H", pkt[12:14])[0] != 0x0800 or pkt[23] != 6:
            continue
        t0 = 14 + (pkt[14] & 15) * 4
        tcp = bytearray(pkt[t0:14 + struct.unpack("!H", pkt[16:18])[0]])
        doff = (tcp[12] >> 4) * 4
        if struct.unpack("!H", tcp[0:2])[0] != port or len(tcp) != doff:
            continue  # the server's pure ACKs only
        opts = bytes(tcp[20:doff])
        try:
            echo = [off for off, kind, length in tcp_options(opts)
                    if is_lumen_int(opts, off, kind, length) and opts[off + 4] & ECHO_FLAG]
        except ValueError:
            continue
        if not echo:
            continue
        client = struct.unpack("!H", tcp[2:4])[0]
        seen[client] = seen.get(client, 0) + 1
        if seen[client] < 50:
            continue
        hdr = 20 + echo[0] + 4
        tcp[hdr] = (7 << 5) | (tcp[hdr] & 0x1F)
        tcp[16:18] = b"\0\0"
        pseudo = pkt[26:34] + struct.pack("!BBH", 0, 6, len(tcp))
        tcp[16:18] = struct.pack("!H", ~csum16(bytes(pseudo) + bytes(tcp)) & 0xFFFF)
        for _ in range(copies):
            s.send(pkt[:t0] + bytes(tcp))
            sent += 1
    print("injected=%d" % sent)


if __name__ == "__main__":
    cmd, iface, port, secs, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
    {"capture": capture, "replay-bad-version": replay_bad_version}[cmd](iface, port, secs, n)
