#!/usr/bin/env bash
# optical_test: lumen-dp gated by lumend's schedule, through the rotor
# switch, on the host (no VM: the gating is lumen-dp's own, not fq's).
#
# A rotor testbed of 4 nodes (round robin, 20 ms slots, 2 ms guards); the
# host ends of h1's and h2's links are moved to the root namespace (renamed
# rh1, rh2; no address, forwarding off) and handed to one lumen-dp process
# through net_af_packet, in hosts mode, pairs: h1 sends 40 messages of
# 64 KiB to h2, whose ACKs come back through the rotor too (h2 -> h1 is
# another slot). A lumend per host (--clock-error 0: the namespaces share
# the clock) publishes the schedule in its page; lumen-dp's gate reads it
# (--optical-pages) and holds each frame to a node until its window.
#
#   - refusals: gating without its pages, addresses or rate, or with two
#     queues;
#   - every message delivered and acknowledged, the gate held frames, and
#     the rotor counted no frame of h1 or h2 in a guard or a wrong slot;
#   - a schedule change during a second transfer (`lumen sched change` for
#     the rotor and both lumends): every message delivered, no violation;
#   - the control: the same hosts without the gate commit violations.
source "$(dirname "$0")/../e2e/lib.sh"
DP="${LUMEN_DP_BIN:?set LUMEN_DP_BIN to the lumen-dp binary}"
LUMEND="$(dirname "$LUMEN_BIN")/lumend"
[[ $EUID -eq 0 ]] || e2e_skip "needs root (DPDK EAL, namespaces, the rotor's BPF)"
e2e_require_bpf
e2e_require_tools ip ethtool python3
(($(nproc) >= 2)) || e2e_skip "needs 2 cores (lumen-dp busy-polls one)"

tmp="$(mktemp -d)"
e2e_on_exit "rm -rf '$tmp'"
TB="op$(($$ % 100000))"
M=ff:ff:ff:ff:ff:ff
ADDRS=10.0.0.1,10.0.0.2,10.0.0.3,10.0.0.4

e2e_log "refusals"
e2e_check "gating without its rate" e2e_fails 2 "gating needs" \
	"$DP" -- hosts --pattern pairs --host 0,10.0.0.1,$M --host 1,10.0.0.2,$M --optical-pages a,b --optical-addrs "$ADDRS"
e2e_check "gating without a page per host" e2e_fails 2 "gating needs" \
	"$DP" -- hosts --pattern pairs --host 0,10.0.0.1,$M --host 1,10.0.0.2,$M --optical-pages a \
	--optical-addrs "$ADDRS" --optical-rate 1000
e2e_check "gating with two queues" e2e_fails 2 "one queue per port" \
	"$DP" -- hosts --pattern pairs --host 0,10.0.0.1,$M --host 1,10.0.0.2,$M --optical-pages a,b \
	--optical-addrs "$ADDRS" --optical-rate 1000 --queues 2
e2e_check "a bad node address" e2e_fails 2 "'10.0.0.x' is not an IPv4 address" \
	"$DP" -- hosts --optical-addrs 10.0.0.1,10.0.0.x

e2e_on_exit "'$LUMEN_BIN' testbed down '$TB' >/dev/null 2>&1"
"$LUMEN_BIN" testbed up --topology rotor --name "$TB" --nodes 4 --slot 20ms --guard 2ms >"$tmp/up.out" 2>&1 ||
	{ cat "$tmp/up.out"; exit 1; }
SCHED="$("$LUMEN_BIN" testbed status "$TB" --json | e2e_json "d['schedule']")"
VDEVS=()
for i in 1 2; do
	ns="lt-$TB-h$i" dev="rh$i$(($$ % 1000))"
	ip -n "$ns" link set eth0 down
	ip -n "$ns" link set eth0 name "$dev"
	ip -n "$ns" link set "$dev" netns 1
	sysctl -qw "net.ipv6.conf.$dev.disable_ipv6=1" "net.ipv4.conf.$dev.forwarding=0"
	ethtool -K "$dev" tso off gso off gro off tx off rx off >/dev/null 2>&1 || true
	ip link set "$dev" up
	e2e_on_exit "ip link del '$dev' 2>/dev/null"
	VDEVS+=(--vdev "net_af_packet$((i - 1)),iface=$dev,framecnt=2048,qdisc_bypass=1")
	"$LUMEND" --schedule "$SCHED" --node $((i - 1)) --clock-error 0 --shm "$tmp/page$i" --control "$tmp/sock$i" \
		2>"$tmp/lumend$i.log" &
	e2e_on_exit "kill $! 2>/dev/null"
done
e2e_check "both lumends gate" e2e_wait_until 100 0.1 bash -c "grep -q gating: '$tmp/lumend1.log' && grep -q gating: '$tmp/lumend2.log'"

e2e_log "h1 -> h2, 40 messages of 64 KiB, gated by lumend's schedule"
rc=0
timeout 120 "$DP" --no-huge --no-pci -m 512 -l 1 --log-level=error --file-prefix "lumen-op$$" "${VDEVS[@]}" -- hosts \
	--pattern pairs --host "0,10.0.0.1,$M" --host "1,10.0.0.2,$M" --msgs 40 --msg-size 65536 --depth 4 \
	--optical-pages "$tmp/page1,$tmp/page2" --optical-addrs "$ADDRS" --optical-rate 1000 --quiet \
	>"$tmp/dp.out" 2>&1 || rc=$?
sed 's/^/  /' "$tmp/dp.out" | grep -v "^  *$" | tail -n 8
"$LUMEN_BIN" rotor stats | sed 's/^/  /'
e2e_check "lumen-dp: every message delivered and acknowledged (exit $rc)" test "$rc" -eq 0
e2e_check "h1's gate held frames for their windows" \
	python3 -c "import re, sys; m = re.search(r'gate: sent (\d+), held (\d+)', open('$tmp/dp.out').read()); sys.exit(not (m and int(m.group(2)) > 0))"
v() { "$LUMEN_BIN" rotor stats --json | e2e_json "d['ports'][$1]['guard'] + d['ports'][$1]['wrong_slot']"; }
f() { "$LUMEN_BIN" rotor stats --json | e2e_json "d['ports'][$1]['forwarded']"; }
e2e_check "the rotor forwarded h1's and h2's frames ($(f 0), $(f 1))" test "$(f 0)" -gt 40 -a "$(f 1)" -gt 0
e2e_check "no frame of h1 or h2 in a guard or a wrong slot" test "$(v 0)" -eq 0 -a "$(v 1)" -eq 0

# A schedule change while h1 sends: to 30 ms slots, at one instant for the
# rotor switch and both lumends ('lumen sched change --lumend'). Until the
# new tables are in lumend's page, lumen-dp books nothing past the instant
# (its frames wait, deferred); lumen-dp's own bookings reach at most
# --optical-max-hold-us ahead, below the change's lead.
e2e_log "a schedule change during a transfer (h1 -> h2, 100 messages)"
"$LUMEN_BIN" sched generate round-robin --nodes 4 --slot 30ms --guard 3ms --t0 0 --out "$tmp/v2.json" >/dev/null
before="$(v 0)+$(v 1)"
rc=0
timeout 150 "$DP" --no-huge --no-pci -m 512 -l 1 --log-level=error --file-prefix "lumen-op$$" "${VDEVS[@]}" -- hosts \
	--pattern pairs --host "0,10.0.0.1,$M" --host "1,10.0.0.2,$M" --msgs 100 --msg-size 65536 --depth 4 \
	--optical-pages "$tmp/page1,$tmp/page2" --optical-addrs "$ADDRS" --optical-rate 1000 --optical-max-hold-us 300000 \
	--quiet >"$tmp/dp2.out" 2>&1 &
dp=$!
sleep 1.5
e2e_check "sched change: the rotor and both lumends" bash -c "'$LUMEN_BIN' sched change '$tmp/v2.json' --testbed '$TB' \
	--lumend '$tmp/sock1,$tmp/sock2' --lead 800ms --dir '$tmp/changes' --json >'$tmp/change.json'"
wait $dp || rc=$?
sed 's/^/  /' "$tmp/dp2.out" | grep -E "gate:|delivered" | head -n 4
end="$(python3 -c "import time; print(time.clock_gettime_ns(time.CLOCK_TAI))")"
e2e_check "the transfer ran across the instant" test "$end" -gt "$(e2e_json "d['switch_ns']" <"$tmp/change.json")"
e2e_check "lumen-dp: every message delivered and acknowledged across the change (exit $rc)" test "$rc" -eq 0
e2e_check "both lumends and the rotor on version 2" test "$("$LUMEN_BIN" sched status --control "$tmp/sock1" --json |
	e2e_json "d['version']"),$("$LUMEN_BIN" sched status --control "$tmp/sock2" --json | e2e_json "d['version']"),$(
	"$LUMEN_BIN" rotor stats --json | e2e_json "d['version']")" = 2,2,2
e2e_check "no frame of h1 or h2 in a guard or a wrong slot across the change" test "$(v 0)+$(v 1)" = "$before"

e2e_log "the control: the same without the gate, for 1 s"
timeout 30 "$DP" --no-huge --no-pci -m 512 -l 1 --log-level=error --file-prefix "lumen-op$$" "${VDEVS[@]}" -- hosts \
	--pattern pairs --host "0,10.0.0.1,$M" --host "1,10.0.0.2,$M" --time 1 --msg-size 65536 --depth 4 --quiet \
	>"$tmp/dp0.out" 2>&1 || true
e2e_check "ungated, h1 commits violations ($(v 0))" test "$(v 0)" -gt 0
e2e_finish
