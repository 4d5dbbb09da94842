#!/usr/bin/env bash
# tests/e2e/retcp_test.sh - bpf_retcp (bpf/retcp.bpf.c, `lumen retcp`)
# following a lumend's pinned slot state, on this host:
#
#   - refusals (no lumend by that name, addresses not one per node, a jump
#     or prebuffer out of range) change nothing;
#   - loaded after a lumend (--pin) of node 0 on a 3-node round robin of
#     20 ms slots, a TCP flow from node 0 to node 1 jumps its window up
#     with each circuit to node 1 and back down after it (as many downs as
#     ups, one per circuit the flow saw, give or take the one in progress);
#     a flow to an address that is no node gets plain Reno (off_schedule,
#     no jump);
#   - once lumend has stopped (its last word: quiet), flows stay on the
#     packet network's window;
#   - unload unregisters it, takes it out of the allowed list and removes
#     its pins.
source "$(dirname "$0")/lib.sh"

e2e_require_bpf
e2e_require_tools iperf3 python3
LUMEND="$(dirname "$LUMEN_BIN")/lumend"
TMPD="$(mktemp -d)"
e2e_on_exit "rm -rf '$TMPD'"
PIN="rt$(($$ % 100000))"
ADDRS=10.97.0.1,10.97.0.2,10.97.0.3
e2e_on_exit "'$LUMEN_BIN' retcp unload"
e2e_on_exit "rm -rf '/sys/fs/bpf/lumen/osched/$PIN'"

counter() { "$LUMEN_BIN" retcp status --json | e2e_json "d['counters']['$1']"; }
pins_gone() { [[ ! -e /sys/fs/bpf/lumen/retcp ]]; }
# flow DST SECONDS: one iperf3 flow with bpf_retcp from a to DST (whole
# seconds: iperf3 reads -t 0.5 as 0, for ever). iperf3 asks its server for
# the same algorithm: the server's socket, to node 0 (itself), runs off the
# schedule.
flow() {
	ip netns exec "$NB" iperf3 -s -1 -p 5399 -D
	sleep 0.3
	timeout 30 ip netns exec "$NA" iperf3 -c "$1" -p 5399 -t "$2" -C bpf_retcp -J >"$TMPD/flow.json" 2>&1
}

"$LUMEN_BIN" sched generate round-robin --nodes 3 --slot 20ms --guard 2ms --t0 0 --out "$TMPD/rr.json" >/dev/null

e2e_log "refusals"
e2e_check "no lumend under that name" e2e_fails 1 "no lumend publishes" \
	"$LUMEN_BIN" retcp load --lumend "$PIN" --schedule "$TMPD/rr.json" --addrs "$ADDRS"
"$LUMEND" --schedule "$TMPD/rr.json" --node 0 --clock-error 0 --margin 1ms --shm "$TMPD/page" \
	--control "$TMPD/sock" --pin "$PIN" 2>"$TMPD/lumend.log" &
LUMEND_PID=$!
e2e_on_exit "kill $LUMEND_PID"
e2e_check "lumend gates" e2e_wait_until 100 0.1 grep -q "gating:" "$TMPD/lumend.log"
e2e_check "two addresses for three nodes" e2e_fails 2 "2 addresses for 3 nodes" \
	"$LUMEN_BIN" retcp load --lumend "$PIN" --schedule "$TMPD/rr.json" --addrs 10.97.0.1,10.97.0.2
e2e_check "a jump of 0" e2e_fails 2 "--jump" \
	"$LUMEN_BIN" retcp load --lumend "$PIN" --schedule "$TMPD/rr.json" --addrs "$ADDRS" --jump 0
e2e_check "a prebuffer of 200 ms" e2e_fails 2 "--prebuffer" \
	"$LUMEN_BIN" retcp load --lumend "$PIN" --schedule "$TMPD/rr.json" --addrs "$ADDRS" --prebuffer 200ms
e2e_check "... and nothing registered or pinned" bash -c \
	"! grep -qw bpf_retcp /proc/sys/net/ipv4/tcp_available_congestion_control && [[ ! -e /sys/fs/bpf/lumen/retcp ]]"

e2e_log "bpf_retcp after lumend (node 0 of 3, 20 ms slots)"
e2e_check "loaded" "$LUMEN_BIN" retcp load --lumend "$PIN" --schedule "$TMPD/rr.json" --addrs "$ADDRS" --allow
e2e_check "registered and allowed" bash -c "grep -qw bpf_retcp /proc/sys/net/ipv4/tcp_available_congestion_control &&
	grep -qw bpf_retcp /proc/sys/net/ipv4/tcp_allowed_congestion_control"
e2e_check "loading twice is refused" e2e_fails 1 "loaded already" \
	"$LUMEN_BIN" retcp load --lumend "$PIN" --schedule "$TMPD/rr.json" --addrs "$ADDRS"
e2e_ns_pair rta NA a0 rtb NB b0
ip -n "$NA" addr add 10.97.0.1/24 dev a0
ip -n "$NB" addr add 10.97.0.2/24 dev b0
ip -n "$NB" addr add 10.97.0.9/24 dev b0
e2e_check "a 2 s flow to node 1" flow 10.97.0.2 2
up="$(counter jumps_up)" down="$(counter jumps_down)"
# node 0 reaches node 1 in one slot of the period: 2 s hold 2 / (3 x 20 ms)
# = 33 of its circuits (the period of 3 nodes' round robin is 2 or 3 slots)
e2e_check "the window jumped up with each circuit ($up) and down after it ($down)" \
	python3 -c "import sys; sys.exit(not (20 <= $up <= 60 and abs($up - $down) <= 1))"
off="$(counter off_schedule)" up="$(counter jumps_up)"
e2e_check "a flow to an address that is no node" flow 10.97.0.9 1
e2e_check "... plain Reno: off the schedule, no jump" test "$(counter off_schedule),$(counter jumps_up)" = "$((off + 2)),$up"

e2e_log "lumend stopped: its last word is quiet"
kill "$LUMEND_PID"
wait "$LUMEND_PID" 2>/dev/null
e2e_check "status shows lumend quiet" python3 -c "import sys; sys.exit(not $("$LUMEN_BIN" retcp status --json |
	e2e_json "d['lumend_quiet']") != 0)"
up="$(counter jumps_up)"
e2e_check "a 1 s flow to node 1" flow 10.97.0.2 1
e2e_check "... no jump up while lumend is quiet" test "$(counter jumps_up)" -eq "$up"
e2e_check "... its ACKs counted as quiet" test "$(counter quiet)" -gt 0

e2e_log "unload"
e2e_check "unloaded" "$LUMEN_BIN" retcp unload
e2e_check "unregistered, disallowed, pins gone" bash -c \
	"! grep -qw bpf_retcp /proc/sys/net/ipv4/tcp_available_congestion_control &&
	! grep -qw bpf_retcp /proc/sys/net/ipv4/tcp_allowed_congestion_control && [[ ! -e /sys/fs/bpf/lumen/retcp ]]"
e2e_check "unloading again: nothing to do" "$LUMEN_BIN" retcp unload
e2e_finish
