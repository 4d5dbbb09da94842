#!/usr/bin/env bash
# tests/e2e/rotor_test.sh - the emulated optical circuit switch
# (bpf/rotor_switch.bpf.c) in a rotor testbed, end to end:
#
#   - refused descriptions change nothing;
#   - 4 hosts on a round-robin schedule (period 3 slots of 20 ms, guards of
#     2 ms): h1 sends to h2 whatever the schedule, and the rotor forwards
#     exactly the datagrams inside h1 -> h2's slot (30 % of the time),
#     drops those in guards (10 %) and in other slots (60 %), counts each,
#     and h2 receives exactly what was forwarded;
#   - a sender that follows the schedule on CLOCK_TAI (rotor_traffic.py
#     gated) commits no violation and loses nothing;
#   - with the links' rate set (lumen rotor rate), a frame whose tail
#     reaches the guard is dropped as guard, though its head left inside
#     the window;
#   - frames stamped with their departure (SO_TXTIME) are told apart:
#     released late, booked into a wrong slot, forwarded;
#   - `lumen rotor load` refuses a schedule of another shape; `testbed down`
#     removes the rotor's pins.
source "$(dirname "$0")/lib.sh"

e2e_require_bpf
e2e_require_tools python3
TRAFFIC="$(cd "$(dirname "$0")" && pwd)/rotor_traffic.py"
TMPD="$(mktemp -d)"
e2e_on_exit "rm -rf '$TMPD'"
TB="ro$(($$ % 100000))"
e2e_on_exit "'$LUMEN_BIN' testbed down '$TB'"

stat_of() { # stat_of PORT COUNTER: a counter of `lumen rotor stats --json` (PORT: total or a node)
	if [[ $1 == total ]]; then
		"$LUMEN_BIN" rotor stats --json | e2e_json "d['total']['$2']"
	else
		"$LUMEN_BIN" rotor stats --json | e2e_json "d['ports'][$1]['$2']"
	fi
}
# within X LO HI: LO <= X <= HI (floats)
within() { python3 -c 'import sys; x, lo, hi = map(float, sys.argv[1:]); sys.exit(not lo <= x <= hi)' "$@"; }
# rx_start NS OUT: a receiver in NS counting datagrams into OUT (RX: its
# pid), returning once it listens: its python3 may take longer to start
# than any fixed sleep, and it waits for the sender's first datagram
rx_start() {
	rm -f "$TMPD/ready"
	ip netns exec "$1" python3 "$TRAFFIC" recv 1.5 "$TMPD/ready" 60 >"$2" &
	RX=$!
	e2e_wait_until 600 0.1 test -e "$TMPD/ready"
}

e2e_log "refused descriptions"
e2e_check "--nodes 1 refused" e2e_fails 2 "nodes: 1 is outside" \
	"$LUMEN_BIN" testbed up --topology rotor --name "$TB" --nodes 1
e2e_check "a guard as long as the slot refused" e2e_fails 2 "guard.*shorter than the slot" \
	"$LUMEN_BIN" testbed up --topology rotor --name "$TB" --slot 1ms --guard 1ms
e2e_check "--senders refused for a rotor" e2e_fails 2 "does not apply to a rotor" \
	"$LUMEN_BIN" testbed up --topology rotor --name "$TB" --senders 3
"$LUMEN_BIN" sched generate round-robin --nodes 3 --out "$TMPD/three.json" >/dev/null
e2e_check "a schedule of 3 nodes refused for 4" e2e_fails 2 "3 nodes for a rotor testbed of 4" \
	"$LUMEN_BIN" testbed up --topology rotor --name "$TB" --schedule "$TMPD/three.json"
e2e_check "nothing left by the refusals" bash -c "! ip netns list | grep -q 'lt-$TB-' && ! '$LUMEN_BIN' rotor stats 2>/dev/null"

e2e_log "up: 4 hosts, round robin, 20 ms slots, 2 ms guards"
"$LUMEN_BIN" testbed up --topology rotor --name "$TB" --nodes 4 --slot 20ms --guard 2ms >"$TMPD/up.out" 2>&1 ||
	{ cat "$TMPD/up.out"; exit 1; }
SCHED="$("$LUMEN_BIN" testbed status "$TB" --json | e2e_json "d['schedule']")"
e2e_check "the schedule is kept and valid" bash -c "'$LUMEN_BIN' sched validate '$SCHED' >/dev/null"

e2e_log "h1 sends 5000 datagrams to h2 over 1 s, ignoring the schedule"
rx_start "lt-$TB-h2" "$TMPD/rx1"
ip netns exec "lt-$TB-h1" python3 "$TRAFFIC" send 10.0.0.2 5000 0.0002
wait $RX
FWD=$(stat_of 0 forwarded) GUARD=$(stat_of 0 guard) WRONG=$(stat_of 0 wrong_slot)
e2e_log "  forwarded $FWD, guard $GUARD, wrong slot $WRONG, received $(cat "$TMPD/rx1")"
e2e_check "every datagram counted once" test $((FWD + GUARD + WRONG)) -eq 5000
e2e_check "forwarded ~30 % (h1 -> h2: 18 of 60 ms)" within "$FWD" 1300 1700
e2e_check "guard ~10 % (2 of every 20 ms)" within "$GUARD" 350 650
e2e_check "wrong slot ~60 %" within "$WRONG" 2700 3300
e2e_check "h2 received exactly what was forwarded" test "$(cat "$TMPD/rx1")" -eq "$FWD"
e2e_check "nothing else counted" test "$(stat_of total not_ipv4)" -eq 0 -a "$(stat_of total unknown_dst)" -eq 0

e2e_log "h3 sends 400 datagrams to h1 only inside its windows (1 ms margin)"
rx_start "lt-$TB-h1" "$TMPD/rx2"
ip netns exec "lt-$TB-h3" python3 "$TRAFFIC" gated "$SCHED" 2 10.0.0.1 400 0.001
wait $RX
e2e_check "no violation by a sender that follows the schedule" \
	test "$(stat_of 2 guard)" -eq 0 -a "$(stat_of 2 wrong_slot)" -eq 0
e2e_check "all 400 forwarded and received" test "$(stat_of 2 forwarded)" -eq 400 -a "$(cat "$TMPD/rx2")" -eq 400

# The frame's tail: at 1 Mbit/s a 1400-byte datagram (1466 bytes on the
# wire) takes 11.7 ms, so one whose head leaves in the last 11.7 ms of
# h4 -> h1's window (heads in [1, 17) ms of the 18 ms) reaches the guard
# with its tail: a real switch loses it, the rotor counts it as guard:
# 2/3 of a window's datagrams, but 200 of them span three windows, the
# first and last partly (148 measured): a bound of 1/4 to 9/10 and some
# forwarded. Without a rate (before the rotor judged tails) none. From h4:
# h3's port is checked for no guard drop at all further on.
e2e_log "h4 sends 200 datagrams of 1400 bytes inside its windows, the rotor's links at 1 Mbit/s"
e2e_check "lumen rotor rate 1mbit" "$LUMEN_BIN" rotor rate 1mbit
e2e_check "... shown by stats" test "$("$LUMEN_BIN" rotor stats --json | e2e_json "d['rate_mbps']")" -eq 1
e2e_rotor_snap "$TMPD/snap-tail"
rx_start "lt-$TB-h1" "$TMPD/rx-tail"
ip netns exec "lt-$TB-h4" python3 "$TRAFFIC" gated "$SCHED" 3 10.0.0.1 200 0.001 1400
wait $RX
read -r fwd guard wrong late <<<"$(e2e_rotor_since "$TMPD/snap-tail" 3)"
e2e_log "  forwarded $fwd, guard (tail in the guard) $guard, wrong slot $wrong; h1 received $(cat "$TMPD/rx-tail")"
e2e_check "every datagram counted once, none in a wrong slot" test $((fwd + guard)) -eq 200 -a "$wrong" -eq 0
e2e_check "tails reaching the guard dropped as guard: ~2/3 ($guard of 200)" within "$guard" 50 180
e2e_check "heads early enough forwarded ($fwd)" test "$fwd" -gt 0
e2e_check "h1 received exactly what was forwarded" test "$(cat "$TMPD/rx-tail")" -eq "$fwd"
e2e_check "lumen rotor rate 0: heads only again" "$LUMEN_BIN" rotor rate 0

e2e_log "h1 sends h2 frames stamped with their departure (SO_TXTIME)"
# One stamped inside h1 -> h2's last window but sent later (late), one
# stamped now, one a period ahead and one unstamped, all outside the
# window (wrong slot), then one stamped now inside it (forwarded): the
# rotor must tell a late release from a frame booked wrong.
e2e_rotor_snap "$TMPD/snap-stamped"
rx_start "lt-$TB-h2" "$TMPD/rx-stamped"
want="$(ip netns exec "lt-$TB-h1" python3 "$TRAFFIC" stamped "$SCHED" 0 10.0.0.2)"
wait $RX
read -r fwd guard wrong late <<<"$(e2e_rotor_since "$TMPD/snap-stamped" 0)"
stamped=$(($("$LUMEN_BIN" rotor stats --json | e2e_json "d['ports'][0]['stamped']") -
	$(e2e_json "d['ports'][0]['stamped']" <"$TMPD/snap-stamped")))
e2e_log "  forwarded $fwd, guard $guard, wrong slot $wrong, late $late, stamped $stamped; expected $want"
e2e_check "late, booked wrong and forwarded told apart" \
	test "$(e2e_json "d['forwarded'], d['late'], d['violations'], d['stamped']" <<<"$want")" \
	== "($fwd, $late, $((guard + wrong)), $stamped)"
e2e_check "h2 received the forwarded one" test "$(cat "$TMPD/rx-stamped")" -eq "$fwd"

e2e_log "rotor load"
"$LUMEN_BIN" sched generate round-robin --nodes 5 --out "$TMPD/five.json" >/dev/null
e2e_check "a schedule of another shape refused" e2e_fails 2 "5 nodes.*the rotor 4" \
	"$LUMEN_BIN" rotor load "$TMPD/five.json"
"$LUMEN_BIN" sched generate round-robin --nodes 4 --slot 20ms --guard 2ms --version 2 --t0 0 --out "$TMPD/v2.json" >/dev/null
e2e_check "a schedule of the same shape loaded" "$LUMEN_BIN" rotor load "$TMPD/v2.json"
e2e_check "its version in force" test "$("$LUMEN_BIN" rotor stats --json | e2e_json "d['version']")" -eq 2

e2e_log "schedule changes at an instant (two phases)"
# Leads from what the tools cost here, now (a sanitized lumen under the
# tests' own load: ~0.5 s; a python3 behind a pyenv shim: ~0.7 s): five
# whole lumen runs, at least 1 s. A change, once it chose the instant,
# stages and commits at the rotor and every gate (less than a lumen run);
# what must be seen before an instant is read by a process started
# beforehand that notes when it read (watch_rotor), a lumen run a read:
# several of them fit between the commit and the instant.
ms_of() { # ms_of command...: how long it took, in ms
	local t0="${EPOCHREALTIME//[!0-9]/}"
	"$@" >/dev/null
	echo $(((${EPOCHREALTIME//[!0-9]/} - t0) / 1000))
}
lumen_ms="$(ms_of "$LUMEN_BIN" rotor stats --json)" # (the first run also reads the binary from disk)
lumen_ms="$(ms_of "$LUMEN_BIN" rotor stats --json)"
lead_ms=$((lumen_ms * 5 > 1000 ? lumen_ms * 5 : 1000))
e2e_log "  a lumen rotor stats takes ${lumen_ms} ms, a python3 $(ms_of python3 -c pass) ms: leads of ${lead_ms} ms"
# the first period boundary of the schedule in force at least $1 ms from now
boundary() {
	"$LUMEN_BIN" rotor stats --json | python3 -c "
import json, sys, time
d = json.load(sys.stdin); p = d['period'] * d['slot_ns']
t = time.clock_gettime_ns(time.CLOCK_TAI) + $1 * 1_000_000
print(d['t0_ns'] + max(0, -(-(t - d['t0_ns']) // p)) * p)"
}
wait_until() { python3 -c "import time; time.sleep(max(0, ($1 - time.clock_gettime_ns(time.CLOCK_TAI)) / 1e9 + 0.05))"; }
rotor_json() { "$LUMEN_BIN" rotor stats --json | e2e_json "$1"; }
# watch_rotor OUT: in the background until the rotor's version changes (60 s
# at most), 'lumen rotor stats --json' again and again, each between two
# CLOCK_TAI reads of its own; "ready" into OUT first, then what the reads
# showed about the instant of the change they saw, a fact a line:
#   announced AT    the change's instant (0: none seen)
#   committed N     reads that ended before AT (or the new schedule's t0):
#                   committed, the old version
#   old_until_at B  no read that ended before it saw another version
#   new V SLOT T0 C version, slot_ns, t0_ns and change of the first read of
#                   another version ("none": none in 60 s)
watch_rotor() {
	python3 - "$LUMEN_BIN" >"$1" <<'EOF' &
import json, subprocess, sys, time
def tai():
    return time.clock_gettime_ns(time.CLOCK_TAI)
def stats():
    out = subprocess.run([sys.argv[1], "rotor", "stats", "--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)
first = stats()
print("ready", flush=True)
reads = [(0, 0, first)]  # (TAI before, TAI after, stats)
deadline = time.monotonic() + 60
while time.monotonic() < deadline and reads[-1][2]["version"] == first["version"]:
    tb = tai()
    d = stats()
    reads.append((tb, tai(), d))
    time.sleep(0.005)
old, last = first["version"], reads[-1][2]
announced = next((x[2]["change"]["switch_ns"] for x in reads if x[2]["change"]), 0)
# the instant as announced, or else as the new schedule's t0
at = announced or (last["t0_ns"] if last["version"] != old else 0)
before = [x[2] for x in reads if at and x[1] < at]
print("announced", announced)
print("committed", sum(d["version"] == old and (d["change"] or {}).get("state") == "committed" for d in before))
print("old_until_at", all(d["version"] == old for d in before))
print("new", *([last["version"], last["slot_ns"], last["t0_ns"], last["change"]] if last["version"] != old else ["none"]))
EOF
	watcher=$!
}
for v in 5 6 7; do
	"$LUMEN_BIN" sched generate round-robin --nodes 4 --slot 30ms --guard 3ms --version "$v" --t0 0 \
		--out "$TMPD/v$v.json" >/dev/null
done
# refusals: an instant far ahead (nothing is staged for it)
AT="$(boundary 60000)"
e2e_check "commit with nothing staged refused" e2e_fails 2 "no change is staged" "$LUMEN_BIN" rotor commit 5
e2e_check "an instant in the past refused" e2e_fails 2 "not in the future" \
	"$LUMEN_BIN" rotor stage "$TMPD/v5.json" --at 1
e2e_check "an instant off the period's boundaries refused" e2e_fails 2 "not a period boundary" \
	"$LUMEN_BIN" rotor stage "$TMPD/v5.json" --at $((AT + 1))
e2e_check "a version not above the one in force refused" e2e_fails 2 "version 2 is not above" \
	"$LUMEN_BIN" rotor stage "$TMPD/v2.json" --at "$AT"
e2e_check "nothing staged by the refusals" test "$(rotor_json "d['change']")" = None

watch_rotor "$TMPD/watch"
e2e_wait_until 600 0.1 grep -q ready "$TMPD/watch"
OUT="$("$LUMEN_BIN" sched change "$TMPD/v5.json" --testbed "$TB" --lead "${lead_ms}ms" --json)"
AT="$(echo "$OUT" | e2e_json "d['switch_ns']")"
wait "$watcher" || e2e_log "  the watcher failed: $(cat "$TMPD/watch")"
declare -A seen=()
while read -r key value; do seen[$key]="$value"; done <"$TMPD/watch"
e2e_log "  sched change: version $(echo "$OUT" | e2e_json "d['from_version']") -> 5 at $AT," \
	"committed $(((AT - $(echo "$OUT" | e2e_json "d['committed_ns']")) / 1000000)) ms before"
e2e_check "the rotor saw the change's instant" test "${seen[announced]}" = "$AT"
e2e_check "committed, the old schedule still in force before the instant (${seen[committed]} reads)" \
	test "${seen[old_until_at]}" = True -a "${seen[committed]}" -gt 0
e2e_check "the new schedule in force from the instant on" \
	test "${seen[new]}" = "5 30000000 $AT None"
wait_until "$AT"
e2e_check "the testbed's schedule file is the new one, from the instant" \
	test "$(e2e_json "d['version'], d['t0_ns']" <"$SCHED")" = "(5, $AT)"
before="$(stat_of 2 forwarded)"
rx_start "lt-$TB-h1" "$TMPD/rx3"
ip netns exec "lt-$TB-h3" python3 "$TRAFFIC" gated "$SCHED" 2 10.0.0.1 200 0.001
wait $RX
e2e_check "a sender following the new schedule: no violation, all 200 received" \
	test "$(stat_of 2 guard)" -eq 0 -a "$(stat_of 2 wrong_slot)" -eq 0 -a "$(cat "$TMPD/rx3")" -eq 200 \
	-a "$(stat_of 2 forwarded)" -eq $((before + 200))

AT="$(boundary "$lead_ms")"
"$LUMEN_BIN" rotor stage "$TMPD/v6.json" --at "$AT" >/dev/null
e2e_check "a second change while one is staged refused" e2e_fails 2 "is under way" \
	"$LUMEN_BIN" rotor stage "$TMPD/v7.json" --at "$AT"
e2e_check "commit of another version refused" e2e_fails 2 "to version 6, not 7" "$LUMEN_BIN" rotor commit 7
wait_until "$AT"
e2e_check "staged, not committed, past the instant: quiet" test "$(rotor_json "d['quiet']")" = True
ip netns exec "lt-$TB-h1" python3 "$TRAFFIC" send 10.0.0.2 200 0.001
e2e_check "quiet: every frame dropped as changing" test "$(stat_of 0 changing)" -eq 200
"$LUMEN_BIN" rotor commit 6 >/dev/null
e2e_check "a late commit puts the new schedule in force" \
	test "$(rotor_json "d['version'], d['quiet']")" = "(6, False)"
AT="$(boundary "$lead_ms")"
"$LUMEN_BIN" rotor stage "$TMPD/v7.json" --at "$AT" >/dev/null
e2e_check "abort" "$LUMEN_BIN" rotor abort 7
e2e_check "after the abort the schedule in force stays" test "$(rotor_json "d['version'], d['change']")" = "(6, None)"
e2e_check "commit after the abort refused" e2e_fails 2 "no change is staged" "$LUMEN_BIN" rotor commit 7

e2e_log "down"
"$LUMEN_BIN" testbed down "$TB" >/dev/null 2>&1
e2e_check "no rotor left" e2e_fails 1 "no rotor switch is attached" "$LUMEN_BIN" rotor stats
e2e_check "no pins left" test ! -e /sys/fs/bpf/lumen/rotor
e2e_finish
