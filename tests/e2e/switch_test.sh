#!/usr/bin/env bash
# tests/e2e/switch_test.sh - the software INT switch (bpf/int_switch.bpf.c,
# `lumen switch`) end to end:
#
#   h1 [a0] ==== [a1] sw [b1] ==== [b0] h2
#        port A: a0 -> a1        port B: b1 -> b0
#
# Port B (100 Mbit/s) is the bottleneck of h1 -> h2: throughput, exact queue
# accounting, tail drops with a small buffer, ECN marks with a threshold, and
# detach, and the count healed after the link went down with packets
# queued. Then both ports carry INT: raw TCP probes with INT requests
# (tests/e2e/int_probe.py, an independent encoder/decoder) must arrive with
# one hop per port, valid TCP checksums, overflow flagged when the request is
# too short, malformed options and echoes untouched, over IPv4 and IPv6 and
# under load.
source "$(dirname "$0")/lib.sh"

e2e_require_bpf
e2e_require_tools tc iperf3 python3 ethtool ss
PROBE="$(cd "$(dirname "$0")" && pwd)/int_probe.py"
TMPD="$(mktemp -d)"
e2e_on_exit "rm -rf '$TMPD'"

e2e_ns_pair h1 H1 a0 sw SW a1
e2e_ns h2 H2
e2e_link "$SW" b1 "$H2" b0
ip -n "$H1" addr add 10.88.1.1/24 dev a0
ip -n "$SW" addr add 10.88.1.254/24 dev a1
ip -n "$SW" addr add 10.88.2.254/24 dev b1
ip -n "$H2" addr add 10.88.2.1/24 dev b0
ip -n "$H1" route add default via 10.88.1.254
ip -n "$H2" route add default via 10.88.2.254
ip -n "$H1" addr add fd88:1::1/64 dev a0 nodad
ip -n "$SW" addr add fd88:1::fe/64 dev a1 nodad
ip -n "$SW" addr add fd88:2::fe/64 dev b1 nodad
ip -n "$H2" addr add fd88:2::1/64 dev b0 nodad
ip -n "$H1" -6 route add default via fd88:1::fe
ip -n "$H2" -6 route add default via fd88:2::fe
ip netns exec "$SW" sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
e2e_on_exit "'$LUMEN_BIN' switch detach b1 --netns '$SW'"
e2e_on_exit "'$LUMEN_BIN' switch detach a0 --netns '$H1'"

# ---------------------------------------------------------------------------
# helpers

# expect_fail RC REGEX command...: the command exits with RC and says REGEX
expect_fail() { e2e_fails "$@"; }

# port_field DEV NETNS FIELD: a field of `lumen switch stats --json` ("none" if no such port)
port_field() {
	"$LUMEN_BIN" switch stats --json | python3 -c '
import json, sys
for p in json.load(sys.stdin)["ports"]:
    if p["dev"] == sys.argv[1] and p["dev_netns"] == sys.argv[2]:
        print(p[sys.argv[3]])
        break
else:
    print("none")' "$1" "$2" "$3"
}

# untouched NS DEV: no tbf, no clsact, no filter left on DEV
untouched() {
	! tc -n "$1" qdisc show dev "$2" | grep -qE 'tbf|clsact'
}

# py EXPR [ARGS]: evaluate a Python condition, argv available as a
py() {
	python3 -c "import json, sys; a = sys.argv[1:]; sys.exit(0 if ($1) else 1)" "${@:2}"
}
py_print() { # py_print EXPR ARGS...: prints EXPR over a = ARGS
	python3 -c "import sys; a = sys.argv[1:]; print($1)" "${@:2}"
}

iperf_run() { # iperf_run OUT SECONDS [DST]: iperf3 (cubic) h1 -> h2, JSON into OUT
	ip netns exec "$H2" iperf3 -s -1 -D -p 5201
	local i
	for ((i = 0; i < 50; i++)); do
		ip netns exec "$H2" ss -ltn | grep -q ':5201 ' && break
		sleep 0.1
	done
	ip netns exec "$H1" iperf3 -c "${3:-10.88.2.1}" -p 5201 -C cubic -t "$2" -J >"$1"
}

iperf_field() { # iperf_field OUT sent_bytes|rx_bytes|rx_mbps
	python3 -c '
import json, sys
e = json.load(open(sys.argv[1]))["end"]
f = {"sent_bytes": lambda: e["sum_sent"]["bytes"], "rx_bytes": lambda: e["sum_received"]["bytes"],
     "rx_mbps": lambda: "%.1f" % (e["sum_received"]["bits_per_second"] / 1e6)}
print(f[sys.argv[2]]())' "$1" "$2"
}

# Port B's rate in the data-path phases (chosen below, once the path is up):
# 100 Mbit/s, or LUMEN_E2E_PORT_MBPS.
rate="${LUMEN_E2E_PORT_MBPS:-100}"
[[ $rate =~ ^[0-9]+$ ]] && ((rate >= 10 && rate <= 1000)) || {
	e2e_log "LUMEN_E2E_PORT_MBPS=$rate: expected 10..1000"
	exit 1
}

attach_b() { # attach_b ARGS...: port B, sw:b1 -> h2:b0
	"$LUMEN_BIN" switch attach b1 --netns "$SW" --peer b0 --peer-netns "$H2" "$@"
}

attach_a() {
	"$LUMEN_BIN" switch attach a0 --netns "$H1" --peer a1 --peer-netns "$SW" "$@"
}

# probes FAMILY OUT COUNT TIMEOUT PROBE...: send probes h1 -> h2 and collect them in h2
probes() {
	local fam="$1" out="$2" count="$3" timeout="$4" src dst dp=()
	shift 4
	if [[ $fam == 6 ]]; then src=fd88:1::1 dst=fd88:2::1; else src=10.88.1.1 dst=10.88.2.1; fi
	[[ $fam == dp ]] && dp=(--dp)
	rm -f "$TMPD/ready"
	ip netns exec "$H2" python3 "$PROBE" recv "${dp[@]}" --dst "$dst" --count "$count" --timeout "$timeout" \
		--out "$out" --ready "$TMPD/ready" &
	local rx=$! i=0
	while [[ ! -e $TMPD/ready ]] && ((i++ < 100)); do sleep 0.05; done
	ip netns exec "$H1" python3 "$PROBE" send "${dp[@]}" --src "$src" --dst "$dst" "$@"
	wait "$rx"
}

# probe_ok OUT EXPR: EXPR over r = {id: result} holds
probe_ok() {
	python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
ok = eval(sys.argv[2])
if not ok:
    print(json.dumps(r, sort_keys=True))
sys.exit(0 if ok else 1)' "$1" "$2"
}

# ---------------------------------------------------------------------------
e2e_log "argument validation: nothing may be left half-attached"

e2e_check "attach without --peer is a usage error" \
	expect_fail 2 "needs --peer" "$LUMEN_BIN" switch attach b1 --netns "$SW" --rate 100mbit
e2e_check "attach without --rate is a usage error" \
	expect_fail 2 "needs --rate" attach_b
e2e_check "malformed rate refused" expect_fail 2 "not a rate" attach_b --rate fast
e2e_check "rate unit refused" expect_fail 2 "unknown rate unit" attach_b --rate 10furlongs
e2e_check "buffer 0 refused" expect_fail 2 "buffer" attach_b --rate 100mbit --buffer 0
e2e_check "buffer above 1g refused" expect_fail 2 "buffer" attach_b --rate 100mbit --buffer 2g
e2e_check "buffer below one frame refused" expect_fail 2 "smaller than one full frame" \
	attach_b --rate 100mbit --buffer 1000
e2e_check "ECN threshold >= buffer refused" expect_fail 2 "below --buffer" \
	attach_b --rate 100mbit --buffer 20k --ecn-threshold 20k
e2e_check "port id out of range refused" expect_fail 2 "outside" attach_b --rate 100mbit --port-id 64
e2e_check "unknown option refused" expect_fail 2 "unknown option" attach_b --rate 100mbit --bogus 1
e2e_check "unknown device refused" expect_fail 1 "unknown device 'nosuch0'" \
	"$LUMEN_BIN" switch attach nosuch0 --netns "$SW" --peer b0 --peer-netns "$H2" --rate 100mbit
e2e_check "unknown netns refused" expect_fail 1 "unknown network namespace" \
	"$LUMEN_BIN" switch attach b1 --netns "$E2E_TAG-nosuch" --peer b0 --peer-netns "$H2" --rate 100mbit
e2e_check "a device that is not the veth peer refused" expect_fail 1 "not the veth peer" \
	"$LUMEN_BIN" switch attach b1 --netns "$SW" --peer a0 --peer-netns "$H1" --rate 100mbit
e2e_check "loopback (not veth) refused" expect_fail 1 "not a veth" \
	"$LUMEN_BIN" switch attach lo --netns "$SW" --peer b0 --peer-netns "$H2" --rate 100mbit
e2e_check "detach of a device that is no port fails" expect_fail 1 "not a switch port|no switch port" \
	"$LUMEN_BIN" switch detach b1 --netns "$SW"
e2e_check "switch --help documents attach, detach, stats" \
	bash -c "'$LUMEN_BIN' switch --help | grep -q 'lumen switch attach DEV' && '$LUMEN_BIN' switch --help | grep -q -- '--ecn-threshold'"
e2e_check "no qdisc or filter left on any device" \
	bash -c "$(declare -f untouched); untouched '$H1' a0 && untouched '$SW' a1 && untouched '$SW' b1 && untouched '$H2' b0"

# The shaped flows below must fill port B, so its rate must sit well below
# what one TCP flow moves on this machine: a VM under software emulation, or
# a busy one, moves only some hundreds of Mbit/s. Measure the unshaped path
# and use at most a twelfth of it: once attached, the switch's programs cost
# per packet too, and the shaper (tbf, a burst of 500 us or two frames)
# loses tokens whenever its timer fires more than about a frame's time late,
# as an emulated guest's timers do: a 6.1 guest under emulation measured
# 242 Mbit/s unshaped, yet moved 84 through a 100 Mbit/s port and 35 through
# a 40 Mbit/s one, each with a standing queue; a 6.12 guest, 24 through a
# 30 Mbit/s one. The shorter a frame's time, the more a late timer costs.
# Not below 20 Mbit/s: the INT probes under load need a buffer the qlen field
# can hold (14 KB at 20 Mbit/s and below), and at 10 Mbit/s the flow keeps it
# so full that half the probes were tail-dropped.
iperf_run "$TMPD/iperf0.json" 1
path_mbps="$(iperf_field "$TMPD/iperf0.json" rx_mbps)"
rate="$(py_print "max(20, min(int(a[0]), int(float(a[1]) / 12) // 10 * 10))" "$rate" "$path_mbps")"
# Even so, under software emulation the shaper keeps a standing queue and
# still delivers 85-93 % of its rate (the guest's timers), less when the
# host is busy: there the throughput floors below are 0.1 lower.
low=0
e2e_software_emulated && low=0.1
# INT byte unit at that rate (include/lumen/int_option.h: 2^14 units hold
# 2^22 ns of line rate) and a buffer whose queue the qlen field can hold
unit=1
while ((16384 * unit < 524288 * rate / 1000)); do unit=$((unit * 2)); done
probe_buffer=$((16384 * unit * 7 / 8 < 40960 ? 16384 * unit * 7 / 8 : 40960))

# ---------------------------------------------------------------------------
e2e_log "port B at $rate Mbit/s (unshaped path: $path_mbps Mbit/s), buffer 200k: throughput and exact queue accounting"

attach_b --rate "${rate}mbit" --buffer 200k >/dev/null
e2e_check "tbf root qdisc at ${rate}Mbit on b1" bash -c "tc -n '$SW' qdisc show dev b1 | grep -q 'tbf.*rate ${rate}Mbit'"
e2e_check "egress program on b1, ingress program on b0" \
	bash -c "tc -n '$SW' filter show dev b1 egress | grep -q lumen_sw_egress && tc -n '$H2' filter show dev b0 ingress | grep -q lumen_sw_ingres"
iperf_run "$TMPD/iperf1.json" 2
sleep 0.5
mbps="$(iperf_field "$TMPD/iperf1.json" rx_mbps)"
sent="$(iperf_field "$TMPD/iperf1.json" sent_bytes)"
received="$(iperf_field "$TMPD/iperf1.json" rx_bytes)"
deq="$(port_field b1 "$SW" deq_bytes)"
enq="$(port_field b1 "$SW" enq_bytes)"
e2e_log "  iperf3 ${mbps} Mbit/s, sent $sent B; switch enq $enq B deq $deq B, max queue" \
	"$(port_field b1 "$SW" qlen_max_bytes) B, p50 $(port_field b1 "$SW" qlen_p50_bytes) B," \
	"p99 $(port_field b1 "$SW" qlen_p99_bytes) B, drops $(port_field b1 "$SW" drops)"
floor="$(py_print "round(0.85 - float(a[0]), 2)" "$low")"
e2e_check "throughput close to the port rate ($floor..1.05 x $rate Mbit/s): $mbps" \
	py "float(a[2]) * int(a[1]) <= float(a[0]) <= 1.05 * int(a[1])" "$mbps" "$rate" "$floor"
# every received byte was dequeued (with headers); at most what was sent
# plus headers and retransmissions (iperf3's sent count may include bytes
# still unsent in the socket when the test ended)
e2e_check "dequeued bytes: received <= dequeued <= 1.12 x sent" \
	py "int(a[1]) <= int(a[0]) <= 1.12 * int(a[2])" "$deq" "$received" "$sent"
e2e_check "queue drained to exactly 0: enqueued == dequeued" py "a[0] == a[1]" "$enq" "$deq"
e2e_check "a standing queue was seen (max > 20k, median > 0)" \
	py "int(a[0]) > 20000 and int(a[1]) > 0" "$(port_field b1 "$SW" qlen_max_bytes)" "$(port_field b1 "$SW" qlen_p50_bytes)"
e2e_check "queue never above the buffer (204800)" py "int(a[0]) <= 204800" "$(port_field b1 "$SW" qlen_max_bytes)"
e2e_check "one queue sample per dequeued packet" \
	py "a[0] == a[1]" "$(port_field b1 "$SW" qlen_samples)" "$(port_field b1 "$SW" deq_packets)"
e2e_check "no ECN marks without a threshold" py "a[0] == '0'" "$(port_field b1 "$SW" ecn_marks)"
e2e_check "text stats name the port" bash -c "'$LUMEN_BIN' switch stats | grep -q 'b1 (netns $SW) -> b0 (netns $H2) \[ok\]'"

e2e_check "detach by device" bash -c "'$LUMEN_BIN' switch detach b1 --netns '$SW' >/dev/null"
e2e_check "detach removed tbf, clsact and filters from b1 and b0" \
	bash -c "$(declare -f untouched); untouched '$SW' b1 && untouched '$H2' b0"
e2e_check "detach removed the port entry" py "a[0] == 'none'" "$(port_field b1 "$SW" port_id)"

# ---------------------------------------------------------------------------
e2e_log "port B with a 20k buffer: tail drops"

attach_b --rate "${rate}mbit" --buffer 20k >/dev/null
iperf_run "$TMPD/iperf2.json" 2
sleep 0.3
drops="$(port_field b1 "$SW" drops)"
qmax="$(port_field b1 "$SW" qlen_max_bytes)"
e2e_log "  iperf3 $(iperf_field "$TMPD/iperf2.json" rx_mbps) Mbit/s, drops $drops, max queue $qmax B"
e2e_check "tail drops counted: $drops" py "int(a[0]) > 0 and int(a[1]) > 0" "$drops" "$(port_field b1 "$SW" drop_bytes)"
e2e_check "queue never above the 20k buffer" py "0 < int(a[0]) <= 20480" "$qmax"
e2e_check "tbf itself dropped nothing (its limit is above the buffer)" \
	bash -c "tc -n '$SW' -s qdisc show dev b1 | grep -q 'dropped 0,'"
id="$(port_field b1 "$SW" port_id)"
e2e_check "detach by --port-id" bash -c "'$LUMEN_BIN' switch detach --port-id $id >/dev/null"
e2e_check "detach left b1 and b0 clean" bash -c "$(declare -f untouched); untouched '$SW' b1 && untouched '$H2' b0"

# ---------------------------------------------------------------------------
e2e_log "port B set down with packets queued: the count drifts, heal mends it"

e2e_check "heal without a port is a usage error" expect_fail 2 "heal takes one of" "$LUMEN_BIN" switch heal
attach_b --rate "${rate}mbit" --buffer 100k --ecn-threshold 20k >/dev/null
e2e_check "heal of an idle port heals nothing" \
	bash -c "'$LUMEN_BIN' switch heal b1 --netns '$SW' | grep -q ': 0 bytes healed'"
# UDP at line rate into the 100 Mbit/s port; b1 goes down while tbf holds ~100k
ip netns exec "$H1" ping -c 2 -i 0.2 -q 10.88.2.1 >/dev/null # the neighbours resolved: the flood is not held
ip netns exec "$H1" python3 -c '
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
end = time.time() + 5
while time.time() < end:
    try:
        s.sendto(b"x" * 1400, ("10.88.2.1", 9))
    except OSError:
        pass
' &
blaster=$!
enq0="$(port_field b1 "$SW" enq_bytes)"
for _ in $(seq 100); do # until the flood is on (a python start may take a second)
	py "int(a[0]) > int(a[1]) + 300000" "$(port_field b1 "$SW" enq_bytes)" "$enq0" && break
	sleep 0.05
done
ip -n "$SW" link set b1 down
kill "$blaster" 2>/dev/null
wait "$blaster" 2>/dev/null || true # killed: 143
ip -n "$SW" link set b1 up
ip -n "$SW" addr replace fd88:2::fe/64 dev b1 nodad # IPv6 drops its addresses on link down
sleep 0.2
drift="$(port_field b1 "$SW" qlen_bytes)"
e2e_log "  left counted as queued: $drift B"
e2e_check "what tbf held when b1 went down still counts as queued, above the ECN threshold: $drift B" \
	py "int(a[0]) > 20480" "$drift"
e2e_check "heal asks for exactly that" \
	bash -c "'$LUMEN_BIN' switch heal b1 --netns '$SW' | grep -q ': $drift bytes healed'"
e2e_check "after the heal a ping crosses the port" ip netns exec "$H1" ping -c 3 -i 0.2 -W 1 -q 10.88.2.1
e2e_check "the queue is empty again and the healed bytes are counted" \
	py "a[0] == '0' and a[1] == a[2]" "$(port_field b1 "$SW" qlen_bytes)" "$(port_field b1 "$SW" healed_bytes)" "$drift"
e2e_check "heal of a device that is no port fails" expect_fail 1 "not a switch port" \
	"$LUMEN_BIN" switch heal a1 --netns "$SW"
e2e_check "detach" bash -c "'$LUMEN_BIN' switch detach b1 --netns '$SW' >/dev/null"

# ---------------------------------------------------------------------------
e2e_log "port B with a 2k buffer, idle: one GSO packet larger than the buffer passes"

# A fresh connection's initial window (10 segments, ~14 KB) leaves in a few
# GSO packets of several segments each. An empty queue must admit one
# whatever the buffer (later ones that find it busy are tail-dropped, as
# they should be): before, every such packet was dropped, however idle the
# port, and the transfer crawled on retransmission timeouts.
# At 1 Gbit/s: where the kernel forwards the burst in single segments (see
# below), a slow port would queue them behind each other and drop some.
attach_b --rate 1gbit --buffer 2k >/dev/null
burst() { # burst BYTES: one write h1 -> h2 on a new connection; prints bytes received
	ip netns exec "$H2" python3 -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.88.2.1", 5299)); s.listen(1); s.settimeout(10)
c, _ = s.accept(); c.settimeout(10); n = 0
while n < int(sys.argv[1]):
    b = c.recv(65536)
    if not b:
        break
    n += len(b)
c.close()
print(n)' "$1" >"$TMPD/burst.out" &
	local srv=$!
	sleep 0.3
	ip netns exec "$H1" python3 -c '
import socket, sys
c = socket.create_connection(("10.88.2.1", 5299), timeout=10)
c.sendall(b"x" * int(sys.argv[1]))
c.recv(1)  # the server closes first: nothing else enters the port meanwhile
c.close()' "$1"
	wait "$srv"
	cat "$TMPD/burst.out"
}
# offloads on at h1: the 14 KB leaves a0 as one TSO packet and is forwarded whole
ip netns exec "$H1" ethtool -K a0 tx on sg on tso on gso on >/dev/null
# Before, admission kept the queue <= the buffer, so a GSO packet above 2k was
# dropped even on the idle port. Some kernels (6.1's veth, in the VM) hand
# the forwarded burst over in single segments, or in small GSO packets that
# may all find a segment queued ahead (and are rightly dropped): then the
# burst is tried again on a fresh port, up to 3 times. The old admission
# fails every try (no packet above 2k ever enters, and some are dropped).
for try in 1 2 3; do
	((try == 1)) || attach_b --rate 1gbit --buffer 2k >/dev/null
	got="$(burst 14000)"
	drops="$(port_field b1 "$SW" drops)"
	qmax="$(port_field b1 "$SW" qlen_max_bytes)"
	e2e_log "  try $try: received $got B; drops $drops ($(port_field b1 "$SW" drop_bytes) B), enqueued" \
		"$(port_field b1 "$SW" enq_packets) packets, max queue $qmax B"
	[[ $got == 14000 ]] && { ((qmax > 2048)) || ((drops == 0)); } && break
	((try == 3)) || "$LUMEN_BIN" switch detach b1 --netns "$SW" >/dev/null
done
ip netns exec "$H1" ethtool -K a0 tso off gso off tx off >/dev/null 2>&1 || true
e2e_check "the burst arrived whole" test "$got" = 14000
((qmax > 2048)) || e2e_log "  no GSO packet entered the port's empty queue: checking that nothing was dropped"
e2e_check "a GSO packet larger than the 2k buffer entered the empty queue (or none came and none was dropped)" \
	py "int(a[0]) > 2048 or int(a[1]) == 0" "$qmax" "$drops"
e2e_check "detach" bash -c "'$LUMEN_BIN' switch detach b1 --netns '$SW' >/dev/null"

# ---------------------------------------------------------------------------
e2e_log "port B with ECN threshold 30k and an ECN flow: CE marks"

ip netns exec "$H1" sysctl -qw net.ipv4.tcp_ecn=1
ip netns exec "$H2" sysctl -qw net.ipv4.tcp_ecn=1
attach_b --rate "${rate}mbit" --buffer 200k --ecn-threshold 30k >/dev/null
iperf_run "$TMPD/iperf3.json" 2
sleep 0.3
marks="$(port_field b1 "$SW" ecn_marks)"
e2e_log "  iperf3 $(iperf_field "$TMPD/iperf3.json" rx_mbps) Mbit/s, ECN marks $marks," \
	"drops $(port_field b1 "$SW" drops), max queue $(port_field b1 "$SW" qlen_max_bytes) B"
e2e_check "ECN marks counted: $marks" py "int(a[0]) > 0" "$marks"
# classic ECN: cubic halves its window at every marked round trip, and a
# 30k threshold is ~2.5 ms at 100 Mbit/s, so the link is not always full;
# a 2 s run in an emulated VM measured 75 % (the tail-drop run beside it
# 82 %). 0.7 still fails a flow that marking throttles or stalls.
ecn_floor="$(py_print "round(0.7 - float(a[0]), 2)" "$low")"
e2e_check "ECN keeps the throughput (>= $ecn_floor x $rate Mbit/s)" \
	py "float(a[0]) >= float(a[2]) * int(a[1])" "$(iperf_field "$TMPD/iperf3.json" rx_mbps)" "$rate" "$ecn_floor"
iperf_run "$TMPD/iperf3v6.json" 2 fd88:2::1
sleep 0.3
marks6="$(port_field b1 "$SW" ecn_marks)"
e2e_log "  IPv6: iperf3 $(iperf_field "$TMPD/iperf3v6.json" rx_mbps) Mbit/s, ECN marks now $marks6"
e2e_check "IPv6 flow marked too (traffic class CE)" py "int(a[0]) > int(a[1])" "$marks6" "$marks"
# the same floor: an emulated 6.12 guest moved 21.2 (IPv4) and 21.0 (IPv6)
# Mbit/s through a 30 Mbit/s port with this threshold
e2e_check "IPv6 ECN flow at >= $ecn_floor x $rate Mbit/s" \
	py "float(a[0]) >= float(a[2]) * int(a[1])" "$(iperf_field "$TMPD/iperf3v6.json" rx_mbps)" "$rate" "$ecn_floor"
ip netns exec "$H1" sysctl -qw net.ipv4.tcp_ecn=2
ip netns exec "$H2" sysctl -qw net.ipv4.tcp_ecn=2
"$LUMEN_BIN" switch detach b1 --netns "$SW" >/dev/null

# ---------------------------------------------------------------------------
e2e_log "port ids, duplicates, rate code warning"

attach_b --rate 100mbit --buffer 200k >/dev/null
bid="$(port_field b1 "$SW" port_id)"
e2e_check "a port id in use is refused" expect_fail 1 "port id $bid is in use" attach_a --rate 1gbit --port-id "$bid"
e2e_check "the refused attach left a0 and a1 untouched" \
	bash -c "$(declare -f untouched); untouched '$H1' a0 && untouched '$SW' a1"
e2e_check "a device already attached is refused" expect_fail 1 "already switch port" attach_b --rate 100mbit
out="$(attach_a --rate 135mbit 2>&1)"
e2e_check "a rate the INT code cannot carry exactly is warned about" grep -q "say 140 Mbit/s" <<<"$out"
e2e_check "... and stamped as the nearest code (140 Mbit/s = code 113)" py "a[0] == '113'" "$(port_field a0 "$H1" rate_code)"
"$LUMEN_BIN" switch detach a0 --netns "$H1" >/dev/null
attach_a --rate 1gbit --buffer 1m >/dev/null

# ---------------------------------------------------------------------------
e2e_log "INT through two ports (A at 1 Gbit/s: code 801, B at 100 Mbit/s: code 800)"

probes 4 "$TMPD/p4.json" 10 4 \
	r2:req:2:plain r2ts:req:2:ts r2odd:req:2:odd r3:req:3:ts r1:req:1:plain \
	bad:badver:2:ts echo:echo:2:odd full:full:2:plain w2:req2:2:ts w1:req2:1:plain
e2e_check "all 10 IPv4 probes arrived with valid TCP checksums" \
	probe_ok "$TMPD/p4.json" "len(r) == 10 and all(v['csum_ok'] for v in r.values())"
e2e_check "2-slot request: hop 0 by port A, hop 1 by port B (all option layouts)" \
	probe_ok "$TMPD/p4.json" "all(r[k]['count'] == 2 and r[k]['flags'] == 0 and [h['rate'] for h in r[k]['hops']] == [801, 800] for k in ('r2', 'r2ts', 'r2odd'))"
e2e_check "hop records plausible on an idle path (queues empty, timestamps set)" \
	probe_ok "$TMPD/p4.json" "all(h['qlen'] == 0 and (h['ts'] or h['tx']) for h in r['r2']['hops'])"
e2e_check "3-slot request: two hops filled, third slot empty" \
	probe_ok "$TMPD/p4.json" "r['r3']['count'] == 2 and r['r3']['flags'] == 0 and r['r3']['hops'][2] == {'rate': 0, 'ts': 0, 'tx': 0, 'qlen': 0}"
e2e_check "1-slot request: port A fills it, port B flags overflow" \
	probe_ok "$TMPD/p4.json" "r['r1']['count'] == 1 and r['r1']['flags'] == 8 and r['r1']['hops'][0]['rate'] == 801"
e2e_check "full request: overflow flagged, hops unchanged" \
	probe_ok "$TMPD/p4.json" "r['full']['count'] == 2 and r['full']['flags'] == 8 and r['full']['hops'][1] == {'rate': 800, 'ts': 1001, 'tx': 7, 'qlen': 3}"
e2e_check "version 2 request (wide records): hop 0 by port A, hop 1 by port B, in 9-byte records" \
	probe_ok "$TMPD/p4.json" "r['w2']['version'] == 2 and r['w2']['count'] == 2 and r['w2']['flags'] == 0 and [h['rate'] for h in r['w2']['hops']] == [801, 800] and all(h['qlen'] == 0 and h['ts'] for h in r['w2']['hops'])"
e2e_check "... and a 1-slot one: port A fills it, port B flags overflow" \
	probe_ok "$TMPD/p4.json" "r['w1']['version'] == 2 and r['w1']['count'] == 1 and r['w1']['flags'] == 8 and r['w1']['hops'][0]['rate'] == 801"
e2e_check "malformed option (version 7) forwarded unchanged" probe_ok "$TMPD/p4.json" "r['bad']['unchanged']"
e2e_check "echo option forwarded unchanged" probe_ok "$TMPD/p4.json" "r['echo']['unchanged']"
e2e_check "port A: 7 hops filled, 1 full, 1 malformed" \
	py "a == ['7', '1', '1']" "$(port_field a0 "$H1" int_filled)" "$(port_field a0 "$H1" int_full)" "$(port_field a0 "$H1" int_malformed)"
e2e_check "port B: 5 hops filled, 3 full, 1 malformed" \
	py "a == ['5', '3', '1']" "$(port_field b1 "$SW" int_filled)" "$(port_field b1 "$SW" int_full)" "$(port_field b1 "$SW" int_malformed)"

probes 6 "$TMPD/p6.json" 2 4 v6a:req:2:ts v6b:req:2:odd
e2e_check "IPv6: 2 hops filled, checksums valid" \
	probe_ok "$TMPD/p6.json" "len(r) == 2 and all(v['csum_ok'] and v['count'] == 2 and [h['rate'] for h in v['hops']] == [801, 800] for v in r.values())"

# lumen-dp DATA packets carry the same option bytes as their extension
fa="$(port_field a0 "$H1" int_filled)" ua="$(port_field a0 "$H1" int_full)"
fb="$(port_field b1 "$SW" int_filled)" ub="$(port_field b1 "$SW" int_full)"
probes dp "$TMPD/pdp.json" 6 4 d2:dpreq:2:zero d2c:dpreq:2:csum d1:dpreq:1:zero dfull:dpfull:2:zero \
	dbad:dpbadver:2:zero decho:dpecho:2:zero
e2e_check "lumen-dp: all 6 probes arrived, UDP checksums valid" \
	probe_ok "$TMPD/pdp.json" "len(r) == 6 and all(v['csum_ok'] for v in r.values())"
e2e_check "lumen-dp: 2-slot requests filled by port A then B, with and without a UDP checksum" \
	probe_ok "$TMPD/pdp.json" "all(r[k]['count'] == 2 and r[k]['flags'] == 0 and [h['rate'] for h in r[k]['hops']] == [801, 800] for k in ('d2', 'd2c')) and r['d2']['csum_zero'] and not r['d2c']['csum_zero']"
e2e_check "lumen-dp: 1-slot request filled by A, overflow flagged by B" \
	probe_ok "$TMPD/pdp.json" "r['d1']['count'] == 1 and r['d1']['flags'] == 8 and r['d1']['hops'][0]['rate'] == 801"
e2e_check "lumen-dp: full request flagged, hops kept" \
	probe_ok "$TMPD/pdp.json" "r['dfull']['flags'] == 8 and r['dfull']['hops'][1] == {'rate': 800, 'ts': 1001, 'tx': 7, 'qlen': 3}"
e2e_check "lumen-dp: another version and an ACK's echo forwarded unchanged" \
	probe_ok "$TMPD/pdp.json" "r['dbad']['unchanged'] and r['ack5']['unchanged']"
e2e_check "lumen-dp: port A filled 3 hops, flagged 1 full; port B filled 2, 2 full" \
	py "a == ['3', '1', '2', '2']" "$(($(port_field a0 "$H1" int_filled) - fa))" "$(($(port_field a0 "$H1" int_full) - ua))" \
	"$(($(port_field b1 "$SW" int_filled) - fb))" "$(($(port_field b1 "$SW" int_full) - ub))"

e2e_log "INT under load: probes behind an iperf3 flow through port B, buffer $probe_buffer B"
# the buffer stays below what the qlen field holds (2^14 units of $unit B)
"$LUMEN_BIN" switch detach b1 --netns "$SW" >/dev/null
attach_b --rate "${rate}mbit" --buffer "$probe_buffer" >/dev/null
# the flow outlasts the probes even where python3 starts slowly (a VM under
# software emulation): the probes go out once the queue has built up
iperf_run "$TMPD/iperf4.json" 8 &
iperf_pid=$!
for ((i = 0; i < 50; i++)); do
	(($(port_field b1 "$SW" qlen_bytes) > 0)) && break
	sleep 0.1
done
load=()
for i in $(seq 1 20); do load+=("l$i:req:2:plain"); done
probes 4 "$TMPD/pl.json" 20 3 --gap 0.05 "${load[@]}"
wait "$iperf_pid"
e2e_log "  $(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
print("%d probes arrived, port B queue in hop 1 (%s B units):" % (len(r), sys.argv[2]), sorted(v["hops"][1]["qlen"] for v in r.values()))' "$TMPD/pl.json" "$unit")"
e2e_check "most probes arrived, all with 2 hops and valid checksums" \
	probe_ok "$TMPD/pl.json" "len(r) >= 10 and all(v['csum_ok'] and v['count'] == 2 for v in r.values())"
e2e_check "hop 1 reports port B's queue: non-zero, at most the $probe_buffer B buffer" \
	probe_ok "$TMPD/pl.json" "any(v['hops'][1]['qlen'] > 0 for v in r.values()) and all(v['hops'][1]['qlen'] * $unit <= $probe_buffer for v in r.values())"
# port A's "queue" includes its peer's receive backlog, which a slow
# (emulated) receiver can let grow for a moment: judge the median probe
e2e_check "hop 0 reports port A (1 Gbit/s, not a bottleneck): median queue below 16 KiB" \
	probe_ok "$TMPD/pl.json" "all(v['hops'][0]['rate'] == 801 for v in r.values()) and sorted(v['hops'][0]['qlen'] for v in r.values())[len(r) // 2] * 32 < 16384"

# ---------------------------------------------------------------------------
# Version 2 INT on a TCP flow through both ports: `lumen int enable --wide`
# on both ends (one cgroup), cubic filling port B's small buffer: drops, so
# the receiver's ACKs carry SACK blocks, and with one block next to the
# timestamps only the bottleneck hop's record fits (a partial echo)
if [[ -e /sys/fs/bpf/lumen/int_sockops_link ]]; then
	e2e_log "version 2 INT: skipped, INT sockops are enabled on this host already (not ours to touch)"
else
	e2e_log "version 2 INT: a cubic flow through ports A and B with lumen int enable --wide"
	cg="$(e2e_cgroup int2)"
	"$LUMEN_BIN" int enable --cgroup "$cg" --wide >/dev/null
	e2e_on_exit "'$LUMEN_BIN' int disable >/dev/null 2>&1"
	e2e_in "$cg" "$H2" iperf3 -s -1 -D -p 5202
	e2e_wait_until 50 0.1 bash -c "ip netns exec '$H2' ss -ltn | grep -q ':5202 '"
	e2e_in "$cg" "$H1" iperf3 -c 10.88.2.1 -p 5202 -C cubic -t 3 -J >"$TMPD/wide.json"
	int2="$("$LUMEN_BIN" int status --json)"
	"$LUMEN_BIN" int disable >/dev/null
	c2() { e2e_json "d['counters']['$1']" <<<"$int2"; }
	e2e_log "  $(e2e_json "' '.join(f'{k}={v}' for k, v in d['counters'].items() if v)" <<<"$int2")"
	e2e_check "version 2 configured ($(e2e_json "d['config']['version']" <<<"$int2"), $(e2e_json "d['config']['option_bytes']" <<<"$int2") option bytes)" \
		test "$(e2e_json "d['config']['version']" <<<"$int2")" = 2
	e2e_check "the flow completed with requests and echoes both ways ($(c2 req_parsed) requests, $(c2 echo_parsed) echoes parsed)" \
		bash -c "(($(c2 req_parsed) > 0 && $(c2 echo_parsed) > 0))"
	e2e_check "... all of them well-formed (malformed $(c2 malformed))" test "$(c2 malformed)" = 0
	e2e_check "... both ports stamped version 2 records" \
		bash -c "(($(port_field a0 "$H1" int_filled) > 0 && $(port_field b1 "$SW" int_filled) > 0))"
	e2e_check "in loss recovery, echoes cut to the bottleneck hop ($(c2 echo_partial) partial of $(c2 echo_written))" \
		test "$(c2 echo_partial)" -gt 0
fi

# ---------------------------------------------------------------------------
e2e_log "detach"
others="$("$LUMEN_BIN" switch stats --json | python3 -c '
import json, sys
print(sum(1 for p in json.load(sys.stdin)["ports"] if p["dev_netns"] not in sys.argv[1:]))' "$H1" "$SW")"
if [[ $others == 0 ]]; then
	e2e_check "detach --all" bash -c "'$LUMEN_BIN' switch detach --all >/dev/null"
	e2e_check "no port left, pinned switch maps removed" \
		bash -c "'$LUMEN_BIN' switch stats | grep -q 'no switch port attached' && ! ls /sys/fs/bpf/lumen/lumen_sw_* 2>/dev/null"
else
	e2e_log "  $others port(s) of someone else attached: detaching ours one by one"
	e2e_check "detach port A" bash -c "'$LUMEN_BIN' switch detach a0 --netns '$H1' >/dev/null"
	e2e_check "detach port B" bash -c "'$LUMEN_BIN' switch detach b1 --netns '$SW' >/dev/null"
fi
e2e_check "all four devices clean" \
	bash -c "$(declare -f untouched); untouched '$H1' a0 && untouched '$SW' a1 && untouched '$SW' b1 && untouched '$H2' b0"
e2e_check "our ports are gone from stats" py "a == ['none', 'none']" "$(port_field a0 "$H1" port_id)" "$(port_field b1 "$SW" port_id)"

e2e_finish
