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
ip netns exec "lt-$TB-h2" python3 "$TRAFFIC" recv 1.5 >"$TMPD/rx1" &
RX=$!
sleep 0.3
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
ip netns exec "lt-$TB-h1" python3 "$TRAFFIC" recv 1.5 >"$TMPD/rx2" &
RX=$!
sleep 0.3
ip netns exec "lt-$TB-h3" python3 "$TRAFFIC" gated "$SCHED" 2 10.0.0.1 400 0.001
wait $RX
e2e_check "no violation by a sender that follows the schedule" \
	test "$(stat_of 2 guard)" -eq 0 -a "$(stat_of 2 wrong_slot)" -eq 0
e2e_check "all 400 forwarded and received" test "$(stat_of 2 forwarded)" -eq 400 -a "$(cat "$TMPD/rx2")" -eq 400

e2e_log "rotor load"
"$LUMEN_BIN" sched generate round-robin --nodes 5 --out "$TMPD/five.json" >/dev/null
e2e_check "a schedule of another shape refused" e2e_fails 2 "5 nodes.*the rotor 4" \
	"$LUMEN_BIN" rotor load "$TMPD/five.json"
"$LUMEN_BIN" sched generate round-robin --nodes 4 --slot 20ms --guard 2ms --version 2 --t0 0 --out "$TMPD/v2.json" >/dev/null
e2e_check "a schedule of the same shape loaded" "$LUMEN_BIN" rotor load "$TMPD/v2.json"
e2e_check "its version in force" test "$("$LUMEN_BIN" rotor stats --json | e2e_json "d['version']")" -eq 2

e2e_log "schedule changes at an instant (two phases)"
# the first period boundary of the schedule in force at least $1 s from now
boundary() {
	"$LUMEN_BIN" rotor stats --json | python3 -c "
import json, sys, time
d = json.load(sys.stdin); p = d['period'] * d['slot_ns']
t = time.clock_gettime_ns(time.CLOCK_TAI) + int(float('$1') * 1e9)
print(d['t0_ns'] + max(0, -(-(t - d['t0_ns']) // p)) * p)"
}
wait_until() { python3 -c "import time; time.sleep(max(0, ($1 - time.clock_gettime_ns(time.CLOCK_TAI)) / 1e9 + 0.05))"; }
rotor_json() { "$LUMEN_BIN" rotor stats --json | e2e_json "$1"; }
for v in 5 6 7; do
	"$LUMEN_BIN" sched generate round-robin --nodes 4 --slot 30ms --guard 3ms --version "$v" --t0 0 \
		--out "$TMPD/v$v.json" >/dev/null
done
AT="$(boundary 0.5)"
e2e_check "commit with nothing staged refused" e2e_fails 2 "no change is staged" "$LUMEN_BIN" rotor commit 5
e2e_check "an instant in the past refused" e2e_fails 2 "not in the future" \
	"$LUMEN_BIN" rotor stage "$TMPD/v5.json" --at 1
e2e_check "an instant off the period's boundaries refused" e2e_fails 2 "not a period boundary" \
	"$LUMEN_BIN" rotor stage "$TMPD/v5.json" --at $((AT + 1))
e2e_check "a version not above the one in force refused" e2e_fails 2 "version 2 is not above" \
	"$LUMEN_BIN" rotor stage "$TMPD/v2.json" --at "$AT"
e2e_check "nothing staged by the refusals" test "$(rotor_json "d['change']")" = None

# leads of 1 s: the checks before an instant start a few python3s (~0.2 s
# each behind a pyenv shim)
OUT="$("$LUMEN_BIN" sched change "$TMPD/v5.json" --testbed "$TB" --lead 1s --json)"
AT="$(echo "$OUT" | e2e_json "d['switch_ns']")"
e2e_log "  sched change: version $(echo "$OUT" | e2e_json "d['from_version']") -> 5 at $AT," \
	"committed $(( (AT - $(echo "$OUT" | e2e_json "d['committed_ns']")) / 1000000 )) ms before"
e2e_check "committed, the old schedule still in force before the instant" \
	test "$(rotor_json "d['change']['state'], d['version']")" = "('committed', 2)"
wait_until "$AT"
e2e_check "the new schedule in force from the instant on" \
	test "$(rotor_json "d['version'], d['slot_ns'], d['t0_ns'], d['change']")" = "(5, 30000000, $AT, None)"
e2e_check "the testbed's schedule file is the new one, from the instant" \
	test "$(e2e_json "d['version'], d['t0_ns']" <"$SCHED")" = "(5, $AT)"
before="$(stat_of 2 forwarded)"
ip netns exec "lt-$TB-h1" python3 "$TRAFFIC" recv 1.5 >"$TMPD/rx3" &
RX=$!
sleep 0.3
ip netns exec "lt-$TB-h3" python3 "$TRAFFIC" gated "$SCHED" 2 10.0.0.1 200 0.001
wait $RX
e2e_check "a sender following the new schedule: no violation, all 200 received" \
	test "$(stat_of 2 guard)" -eq 0 -a "$(stat_of 2 wrong_slot)" -eq 0 -a "$(cat "$TMPD/rx3")" -eq 200 \
	-a "$(stat_of 2 forwarded)" -eq $((before + 200))

AT="$(boundary 1)"
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
AT="$(boundary 1)"
"$LUMEN_BIN" rotor stage "$TMPD/v7.json" --at "$AT" >/dev/null
e2e_check "abort" "$LUMEN_BIN" rotor abort 7
e2e_check "after the abort the schedule in force stays" test "$(rotor_json "d['version'], d['change']")" = "(6, None)"
e2e_check "commit after the abort refused" e2e_fails 2 "no change is staged" "$LUMEN_BIN" rotor commit 7

e2e_log "down"
"$LUMEN_BIN" testbed down "$TB" >/dev/null 2>&1
e2e_check "no rotor left" e2e_fails 1 "no rotor switch is attached" "$LUMEN_BIN" rotor stats
e2e_check "no pins left" test ! -e /sys/fs/bpf/lumen/rotor
e2e_finish
