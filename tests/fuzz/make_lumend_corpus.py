#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# tests/fuzz/make_lumend_corpus.py - hand-made seeds for lumend's three
# libFuzzer targets, written from docs/lumend.md's formats (Python's own
# hmac, IEEE 1588's management message), not by the code under test, so
# that CI's short runs start past the first refusals:
#
#   corpus/lumend_request_fuzzer/  every command on the Unix socket and over
#       TCP, requests signed with the harness's key and time (they pass the
#       MAC and reach the handlers), each refusal of the header, a signed
#       answer for the client's check
#   corpus/sched_json_fuzzer/      schedules: guard at the start, idle
#       slots, parallel uplinks, a link rate, one slot, and the refusals
#       (not a permutation, short matchings, wrong types, a version 0)
#   corpus/ptp4l_codec_fuzzer/     TIME_STATUS_NP answers: a follower, a
#       grandmaster, no grandmaster, an error status, another TLV, a GET,
#       short data; ptp4l's own address for the sender check
#
# Run it from anywhere; it rewrites only the files it names (the kept
# corpora's other files stay).
import hashlib
import hmac
import json
import os
import struct

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
KEY = b"fuzz-token-0123456789"  # lumend_request_fuzzer.cpp's kKey
NOW = 1790000000000  # its kNow
NONCE = "0123456789abcdef0123456789abcdef"  # its kNonce


def put(target, name, data):
    d = os.path.join(HERE, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def signed(body, ts=NOW, nonce=NONCE, key=KEY):
    head = "LUMEN-HMAC1 %d %s " % (ts, nonce)
    mac = hmac.new(key, (head + body).encode(), hashlib.sha256).hexdigest()
    return head + mac + " " + body


def answer(body, nonce=NONCE, key=KEY):
    mac = hmac.new(key, ("LUMEN-HMAC1R %s %s" % (nonce, body)).encode(), hashlib.sha256).hexdigest()
    return "LUMEN-HMAC1R %s %s %s" % (nonce, mac, body)


# --- lumend_request_fuzzer: the first byte picks the path (byte % 3: 0 the
# Unix socket, remote with bit 4; 1 TCP's header and MAC checks; 2 signed by
# the harness) ---
R = "lumend_request_fuzzer"
stage_inline = json.dumps({"cmd": "stage", "schedule": {"nodes": 4}, "at": 5}, separators=(",", ":"))
for name, first, body in [
    ("local-stage-file", 0, '{"cmd":"stage","file":"/s.json","at":5}'),
    ("local-stage-inline", 0, stage_inline),
    ("local-fails", 0, '{"cmd":"fails"}'),
    ("local-unknown-cmd", 0, '{"cmd":"frobnicate"}'),
    ("local-unknown-key", 0, '{"cmd":"status","x":1}'),
    ("local-no-cmd", 0, '{"at":1}'),
    ("local-not-object", 0, "[1,2]"),
    ("local-not-json", 0, "{\"cmd\":"),
    ("local-not-utf8", 0, b'{"cmd":"\xff\xfe"}'),
    ("remote-stage-inline", 6, stage_inline),
    ("remote-stage-at-string", 6, '{"cmd":"stage","file":"/x","at":"soon"}'),
]:
    put(R, name, bytes([first]) + (body if isinstance(body, bytes) else body.encode()))
for name, line in [
    ("tcp-signed-stage-inline", signed(stage_inline)),
    ("tcp-signed-stage-file", signed('{"cmd":"stage","file":"/x","at":5}')),
    ("tcp-signed-unknown", signed('{"cmd":"commit","version":2}')),
    ("tcp-bad-mac", signed('{"cmd":"status"}', key=b"another-token-0123")),
    ("tcp-stale", signed('{"cmd":"status"}', ts=NOW - 31000)),
    ("tcp-ts-leading-zero", "LUMEN-HMAC1 0%d %s " % (NOW, NONCE)),
    ("tcp-header-only", "LUMEN-HMAC1 %d %s" % (NOW, NONCE)),
    ("tcp-nonce-upper", "LUMEN-HMAC1 %d %s %s {}" % (NOW, NONCE.upper(), "0" * 64)),
    ("tcp-clear-token", '{"cmd":"stage","token":"secret"}'),
    ("answer-signed", answer('{"node":1}')),
    ("answer-other-nonce", answer('{"node":1}', nonce="f" * 32)),
]:
    put(R, name, b"\x01" + line.encode())
put(R, "signed-stage-inline", b"\x02" + stage_inline.encode())
put(R, "signed-later-fails", b"\x12" + b'{"cmd":"fails"}')

# --- sched_json_fuzzer ---
S = "sched_json_fuzzer"


def schedule(**kw):
    s = {"format": "lumen-schedule", "format_version": 1, "generator": "seed", "guard_at": "end",
         "guard_ns": 10000, "link_gbps": 0.0, "nodes": 4, "parallel": False, "period": 3,
         "slot_ns": 100000, "t0_ns": 1795878013249000000, "uplinks": 1, "version": 1,
         "matchings": [[[1, 2, 3, 0], [2, 3, 0, 1], [3, 0, 1, 2]]]}  # [uplink][slot][node]
    s.update(kw)
    return json.dumps(s, separators=(",", ":"))


put(S, "guard-at-start.json", schedule(guard_at="start"))
put(S, "idle-slots.json", schedule(matchings=[[[1, 0, 2, 3], [0, 1, 3, 2], [0, 1, 2, 3]]]))
put(S, "parallel-2-uplinks.json",
    schedule(parallel=True, uplinks=2, period=1, link_gbps=100.0, matchings=[[[1, 2, 3, 0]], [[3, 0, 1, 2]]]))
put(S, "one-slot-2-nodes.json", schedule(nodes=2, period=1, version=9, matchings=[[[1, 0]]]))
put(S, "not-permutation.json", schedule(matchings=[[[1, 1, 3, 0], [2, 3, 0, 1], [3, 0, 1, 2]]]))
put(S, "short-matchings.json", schedule(matchings=[[[1, 2, 3, 0]], [[2, 3, 0, 1]]]))
put(S, "nodes-string.json", schedule(nodes="4"))
put(S, "guard-over-slot.json", schedule(guard_ns=200000))
put(S, "version-0.json", schedule(version=0))
put(S, "other-format.json", schedule(format="other", format_version=2))

# --- ptp4l_codec_fuzzer: a management message (34-byte header, target port
# identity, hop counts, action), then one TLV ---
P = "ptp4l_codec_fuzzer"
CLOCK = bytes.fromhex("001122fffe334455")  # the responder's clockIdentity (header bytes 20..27)


def mgmt(action, tlv_type, mgmt_id, data, clock=CLOCK):
    tlv = struct.pack(">HHH", tlv_type, 2 + len(data), mgmt_id) + data
    body = b"\xff" * 10 + b"\x01\x01" + bytes([action, 0]) + tlv
    length = 34 + len(body)
    hdr = bytes([0x0D, 0x02]) + struct.pack(">H", length) + b"\x00" * 16 + clock + b"\x00\x01" + \
        struct.pack(">H", 7) + b"\x04\x7f"
    return hdr + body


def time_status(offset, gm_present, gm_identity):
    return struct.pack(">qq", offset, 1795878013249000000) + struct.pack(">i", 0) + struct.pack(">i", 0) + \
        struct.pack(">i", 0) + b"\x00" * 12 + struct.pack(">i", 1 if gm_present else 0) + gm_identity


put(P, "follower-negative-offset", mgmt(2, 1, 0xC000, time_status(-2500, True, bytes.fromhex("aabbccfffeddeeff"))))
put(P, "grandmaster-itself", mgmt(2, 1, 0xC000, time_status(0, True, CLOCK)))
put(P, "no-grandmaster", mgmt(2, 1, 0xC000, time_status(0, False, b"\x00" * 8)))
put(P, "error-status-no-such-id", mgmt(2, 2, 0x0002, b"\x00\x00\x00\x00"))
put(P, "other-tlv-id", mgmt(2, 1, 0xC004, b"\x00" * 50))
put(P, "get-not-response", mgmt(0, 1, 0xC000, b""))
put(P, "short-data", mgmt(2, 1, 0xC000, b"\x00" * 20))
put(P, "ptp4l-address", b"\x01\x00/var/run/ptp4l\x00")
