#!/usr/bin/env bash
# tests/e2e/gate_tcp_test.sh - TCP through the kernel gate
# (bpf/optical_gate.bpf.c) and the rotor switch, end to end: what gate_test
# checks with UDP datagrams, with a TCP connection whose data and ACKs each
# wait for their own circuit, and whose segments leave as TSO/GSO bursts.
# Needs sch_fq: it runs in the VM suites of both kernels (6.1 and 6.12,
# tests/e2e/run_in_vm.sh) and skips elsewhere, saying so.
#
#   - 4 hosts on a round-robin schedule (period 3 slots of 100 ms, guards of
#     10 ms); every host gated at 4 Mbit/s with 10 ms margins, the rotor's
#     links at 4 Mbit/s too, so it judges each frame's tail (a TSO burst as
#     its segments back to back): a window carries 35 KB;
#   - the gate lowered the device's gso_max_size below 64 KB, to what a
#     window carries: a TSO burst never outlasts a window;
#   - h1 sends 256 KB to h2 over one TCP connection (~3 s of traffic): h2
#     reads every byte to the end of the stream; h1's gate held segments for their windows, dropped none as
#     too long, never or contended; no frame reached a guard or a wrong slot
#     at the rotor, head or tail (a few released late by an emulated guest
#     are allowed, lib.sh);
#   - `gate stats` shows what attach configured: no stale limit (no
#     --lumend), the max hold, the device's gso_max_size and the cap;
#   - a change staged to a schedule of shorter windows (40 ms slots: 10 ms
#     once the margins are off, 5 KB) lowers gso_max_size again, to what
#     the shorter carries (issue 25, §4: it stayed at the first cap).
source "$(dirname "$0")/lib.sh"

e2e_require_bpf
e2e_require_tools python3 tc ip
TMPD="$(mktemp -d)"
e2e_on_exit "rm -rf '$TMPD'"
TB="gt$(($$ % 100000))"

e2e_require_fq

e2e_on_exit "'$LUMEN_BIN' testbed down '$TB'"
"$LUMEN_BIN" testbed up --topology rotor --name "$TB" --nodes 4 --slot 100ms --guard 10ms >"$TMPD/up.out" 2>&1 ||
	{ cat "$TMPD/up.out"; exit 1; }
H1="lt-$TB-h1"
H2="lt-$TB-h2"
gate_json() { "$LUMEN_BIN" gate stats --testbed "$TB" --host "$1" --json | e2e_json "$2"; }

e2e_log "every host gated at 4 Mbit/s (10 ms margins), the rotor's links at 4 Mbit/s"
"$LUMEN_BIN" rotor rate 4mbit >/dev/null
for h in h1 h2 h3 h4; do
	"$LUMEN_BIN" gate attach --testbed "$TB" --host "$h" --rate 4mbit --margin 10ms >/dev/null
	e2e_on_exit "'$LUMEN_BIN' gate detach --testbed '$TB' --host '$h'"
done
# 70 ms at 4 Mbit/s: 35,000 bytes, of which lumen_gso_cap_bytes keeps
# what any segmentation of a burst fits in
GSO="$(ip -n "$H1" -d -o link show dev eth0 | sed -n 's/.* gso_max_size \([0-9]*\) .*/\1/p')"
e2e_check "h1's gso_max_size lowered to what a window carries ($GSO bytes)" \
	test -n "$GSO" -a "${GSO:-0}" -le 35000 -a "${GSO:-0}" -ge 1500

# A transfer that completes: the receiver reads to the end of the stream
# and answers with the bytes it got; the sender sends, half-closes and
# waits for that answer (iperf3 -n stops once the bytes are written, not
# delivered).
RECV='
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 5301)); s.listen(1); open(sys.argv[1], "w").close()
c, _ = s.accept(); n = 0
while True:
    b = c.recv(1 << 16)
    if not b:
        break
    n += len(b)
c.sendall(str(n).encode()); c.close()'
SEND='
import socket, sys, time
c = socket.create_connection(("10.0.0.2", 5301), timeout=60)
t = time.monotonic(); c.sendall(b"x" * int(sys.argv[1])); c.shutdown(socket.SHUT_WR)
got = c.recv(64).decode() or "0"
print(got, round(time.monotonic() - t, 2))'
BYTES=262144
e2e_rotor_snap "$TMPD/r0"
ip netns exec "$H2" timeout 90 python3 -c "$RECV" "$TMPD/rx.ready" &
SRV=$!
e2e_wait_until 600 0.1 test -e "$TMPD/rx.ready" || true
rc=0
ip netns exec "$H1" timeout 80 python3 -c "$SEND" "$BYTES" >"$TMPD/sent.out" 2>&1 || rc=$?
wait "$SRV" || true
read -r RCVD SECS <<<"$(cat "$TMPD/sent.out")"
"$LUMEN_BIN" rotor stats | sed 's/^/  /'
for h in h1 h2; do "$LUMEN_BIN" gate stats --testbed "$TB" --host "$h" | sed 's/^/  /'; done
e2e_log "  TCP: exit $rc, $BYTES bytes sent, h2 read ${RCVD:-?} in ${SECS:-?} s"
e2e_check "the TCP transfer completes: every byte read by h2" test "$rc" -eq 0 -a "${RCVD:-0}" = "$BYTES"
e2e_check "h1's gate held segments for h2's windows" test "$(gate_json h1 "d['destinations'][1]['held']")" -gt 0
e2e_check "h2's gate held ACKs for h1's windows" test "$(gate_json h2 "d['destinations'][0]['held']")" -gt 0
for h in h1 h2; do
	e2e_check "$h's gate dropped nothing (too long, never, contended, overflow, quiet)" \
		test "$(gate_json "$h" "sum(d['total'][k] for k in ('too_long', 'never', 'contended', 'overflow', 'quiet'))")" -eq 0
done
# no window overrun: every frame, tail included, inside its window
e2e_rotor_gated "TCP through the gates" "$TMPD/r0"

e2e_check "gate stats shows the limits attach set (no stale limit without --lumend, max hold, GSO)" \
	test "$(gate_json h1 "(d['stale_ns'], d['max_hold_ns'], d['gso']['max_size'], d['gso']['cap'] == d['gso']['max_size'])")" \
	= "(0, 10000000000, $GSO, True)"
# a change to shorter windows: 40 ms slots, 10 ms guards, 10 ms margins
"$LUMEN_BIN" sched generate round-robin --nodes 4 --slot 40ms --guard 10ms --version 2 --out "$TMPD/short.json" >/dev/null
# the instant: a period boundary of the schedule in force (the rotor's), 2 s on
AT="$("$LUMEN_BIN" rotor stats --json | python3 -c "
import json, sys, time
d = json.load(sys.stdin); p = d['period'] * d['slot_ns']
t = time.clock_gettime_ns(time.CLOCK_TAI) + 2 * 10**9
print(d['t0_ns'] + -(-(t - d['t0_ns']) // p) * p)")"
"$LUMEN_BIN" gate stage --testbed "$TB" --host h1 --schedule "$TMPD/short.json" --at "$AT" >/dev/null
GSO2="$(ip -n "$H1" -d -o link show dev eth0 | sed -n 's/.* gso_max_size \([0-9]*\) .*/\1/p')"
"$LUMEN_BIN" gate stats --testbed "$TB" --host h1 | head -3 | sed 's/^/  /'
e2e_check "staging shorter windows lowers h1's gso_max_size again ($GSO to $GSO2 bytes; 10 ms carry 5,000)" \
	test -n "$GSO2" -a "${GSO2:-0}" -le 5000 -a "${GSO2:-0}" -ge 1500
e2e_check "gate stats' cap is the shorter windows' while the change is staged" \
	test "$(gate_json h1 "d['gso']['cap']")" = "$GSO2"
"$LUMEN_BIN" gate abort --testbed "$TB" --host h1 --version 2 >/dev/null
e2e_finish
