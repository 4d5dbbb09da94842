#!/usr/bin/env bash
# tests/e2e/delay_test.sh - link delay of `lumen testbed` (the delay line,
# `lumen delayline`) end to end:
#
#   - a dumbbell with "delay": "1ms" on the bottleneck: the base RTT grows
#     by 2 ms (one delay each way) within 25% of the same testbed without
#     delay; status shows the delay line running with its counters;
#   - an iperf3 flow through it reaches >= 70% of what one reaches through
#     the same bottleneck without delay, measured in the same run (1 MiB
#     buffer, more than the 50 KB bandwidth-delay product). On 2 cores the
#     delay line's process also does the next hops' receive work (~0.9 of a
#     core at 170 Mbit/s), which makes the tbf's timers late: measured 0.78-0.84
#     of the undelayed path (145-158 against 169-187 Mbit/s), 122 under load;
#     the delay line drops nothing;
#   - teardown stops the delay line (no process left) and leaves nothing;
#   - an injected failure after the delay line started leaves nothing.
source "$(dirname "$0")/lib.sh"

e2e_require_bpf
e2e_require_tools iperf3 python3 ethtool ping
TMPD="$(mktemp -d)"
e2e_on_exit "rm -rf '$TMPD'"
CG2="$(e2e_cgroup2_root)"
STATE_DIR=/run/lumen/testbeds
ID=$(($$ % 100000))
PLAIN="p$ID" DELAYED="q$ID" FAIL="x$ID"
for n in "$PLAIN" "$DELAYED" "$FAIL"; do
	e2e_on_exit "'$LUMEN_BIN' testbed down '$n' 2>/dev/null"
done

describe() { # describe NAME DELAY
	echo '{"topology": "dumbbell", "name": "'"$1"'", "senders": 1, "receivers": 1,
	       "bottleneck": {"rate": "200mbit", "buffer": "1m", "delay": "'"$2"'"}}'
}
describe "$PLAIN" 0 >"$TMPD/plain.json"
describe "$DELAYED" 1ms >"$TMPD/delayed.json"
describe "$FAIL" 1ms >"$TMPD/fail.json"

# min RTT (us) of 20 pings s1 -> r1
min_rtt_us() {
	ip netns exec "lt-$1-s1" ping -n -q -c 20 -i 0.02 -W 2 10.2.1.1 |
		awk -F' = ' '/^rtt/ { split($2, a, "/"); printf "%d\n", a[1] * 1000 }'
}

# Mbit/s of a 5 s iperf3 flow s1 -> r1 of testbed NAME
iperf_mbps() {
	ip netns exec "lt-$1-r1" iperf3 -s -1 -p 5401 -D
	sleep 0.5
	ip netns exec "lt-$1-s1" iperf3 -c 10.2.1.1 -p 5401 -t 5 -J >"$TMPD/iperf-$1.json" 2>&1
	e2e_iperf_mbps "$TMPD/iperf-$1.json" 2>/dev/null || echo 0
}

delay_pids() { # pids of the delay lines of testbed NAME
	pgrep -f "lumen delayline .*--stats-file $STATE_DIR/$1.d/" || true
}

# live_pid PID: the process runs (a zombie its reaper has not collected yet
# has exited)
live_pid() {
	[[ -r /proc/$1/stat ]] && ! awk '{ exit !($3 == "Z") }' "/proc/$1/stat" 2>/dev/null
}

process_gone() { ! live_pid "$1"; }

nothing_left() { # nothing_left NAME: no trace of testbed NAME
	local name="$1" why=()
	ip netns list | awk '{print $1}' | grep -q "^lt-$name-" && why+=("namespaces")
	[[ -e "$CG2/lt-$name" ]] && why+=("cgroup")
	[[ -e "$STATE_DIR/$name.json" ]] && why+=("state file")
	[[ -e "$STATE_DIR/$name.d" ]] && why+=("delay line directory")
	[[ -n "$(delay_pids "$name")" ]] && why+=("delay line processes")
	[[ "$("$LUMEN_BIN" switch stats --json | e2e_json "sum(p['dev_netns'].startswith('lt-$name-') for p in d['ports'])")" == 0 ]] ||
		why+=("switch ports")
	if ((${#why[@]})); then
		e2e_log "left behind by $name: ${why[*]}"
		return 1
	fi
}

# --- RTT with and without the delay ------------------------------------------

e2e_check "plain dumbbell comes up" "$LUMEN_BIN" testbed up "$TMPD/plain.json" --json
PLAIN_US="$(min_rtt_us "$PLAIN")"
PLAIN_MBPS="$(iperf_mbps "$PLAIN")"
e2e_check "plain dumbbell: down" "$LUMEN_BIN" testbed down "$PLAIN"

e2e_check "delayed dumbbell comes up" "$LUMEN_BIN" testbed up "$TMPD/delayed.json" --json
DELAYED_US="$(min_rtt_us "$DELAYED")"
sleep 0.6 # the counters are rewritten every 0.5 s
e2e_log "min RTT: ${PLAIN_US} us without delay, ${DELAYED_US} us with 1 ms each way"
e2e_check "RTT grows by 2 ms +-25% (got $((DELAYED_US - PLAIN_US)) us)" \
	test $((DELAYED_US - PLAIN_US)) -ge 1500 -a $((DELAYED_US - PLAIN_US)) -le 2500
"$LUMEN_BIN" testbed status "$DELAYED" --json >"$TMPD/status.json"
e2e_check "status: one delay line, running" test "$(e2e_json \
	'[(x["link"], x["running"]) for x in d["delay_lines"]]' <"$TMPD/status.json")" == "[('sw1-sw2', True)]"
e2e_check "status: the delay line forwarded the pings both ways" test "$(e2e_json \
	'all(x["frames_out"] >= 20 for x in d["delay_lines"][0]["directions"])' <"$TMPD/status.json")" == True
e2e_check "status: the bottleneck ports' peers are in the delay node" test "$(e2e_json \
	'sorted(p["peer_netns"] for p in d["ports"] if p["bottleneck"])' <"$TMPD/status.json")" == \
	"['lt-$DELAYED-dl-sw1-sw2', 'lt-$DELAYED-dl-sw1-sw2']"

# --- throughput ----------------------------------------------------------------

MBPS="$(iperf_mbps "$DELAYED")"
e2e_log "iperf3 through the bottleneck: $PLAIN_MBPS Mbit/s without delay, $MBPS Mbit/s with it"
e2e_check "iperf3 with the delay reaches >= 70% of the same bottleneck without it, >= 40% of 200 Mbit/s" \
	test $((MBPS * 10)) -ge $((PLAIN_MBPS * 7)) -a "$MBPS" -ge 80
sleep 0.6 # the counters are rewritten every 0.5 s
"$LUMEN_BIN" testbed status "$DELAYED" --json >"$TMPD/status.json"
e2e_check "the delay line dropped nothing" test "$(e2e_json \
	'sum(x["dropped_full"] + x["dropped_oversize"] + x["send_errors"] for x in d["delay_lines"][0]["directions"])' \
	<"$TMPD/status.json")" == 0
e2e_check "the delay line carried the flow" test "$(e2e_json \
	'd["delay_lines"][0]["directions"][0]["bytes_out"] > 50e6' <"$TMPD/status.json")" == True
"$LUMEN_BIN" testbed status "$DELAYED" | grep -A3 "DELAY LINE" || true

PIDS="$(delay_pids "$DELAYED")"
e2e_check "one delay line process runs" test "$(wc -w <<<"$PIDS")" -eq 1
e2e_check "delayed dumbbell: down" "$LUMEN_BIN" testbed down "$DELAYED"
e2e_check "down: the delay line process is gone" process_gone "$PIDS"
e2e_check "down: nothing left" nothing_left "$DELAYED"

# --- an injected failure after the delay line started ----------------------------

# steps of this dumbbell: cgroup 1, 5 namespaces (sw1, sw2, dl-sw1-sw2, s1,
# r1), 5 sysctl sets, 3 links, 5 address batches, 4 switch ports, then the
# delay line (step 24) and the base RTT
LUMEN_TESTBED_FAIL_AT=24 "$LUMEN_BIN" testbed up "$TMPD/fail.json" >/dev/null 2>"$TMPD/fail.err" && rc=0 || rc=$?
e2e_check "injected failure after the delay line: up fails" test "$rc" -eq 1
e2e_check "injected failure: it was the delay line's step" grep -q "injected failure after step 24 (delay line sw1-sw2" "$TMPD/fail.err"
e2e_check "injected failure: nothing left" nothing_left "$FAIL"

e2e_finish
