#!/usr/bin/env bash
# multiqueue_test: lumen-dp with several RX/TX queue pairs per port, each
# polled by its own lcore and owning its own connections on UDP port
# 4792 + q, on DPDK's virtual devices (none takes rte_flow rules here, so the
# ports steer in software).
#
#   options     bad --queues, --udp-port, --steer: a clear message, exit 2,
#               no runtime directory left behind; --steer flow on a port
#               without rte_flow (net_null) is refused after EAL, exit 2
#   ring        pair mode, 2 queues per ring port, on 2 lcores and on 1: the
#               rings are crossed (the client's queue q lands on the server's
#               queue q + 1), so every frame must be steered to its queue;
#               every message delivered intact, the connections split over
#               both queues at both ends, frames steered on every queue,
#               none dropped
#   af_packet   hosts mode over a veth pair, net_af_packet with qpairs=2 on
#               each end (2 lcores): the kernel's fanout hashes on the UDP
#               source port, the entropy, so it scatters each connection's
#               sprayed DATA over both queues; software steering brings them
#               back: every message delivered intact, frames steered
#   telemetry   /lumen/stats,server/q1 names its queue and steering counters
#
# Needs root (EAL; the veth pair) and 2 cores for the 2-lcore runs. Each run
# stops after 15 s, so broken steering fails rather than hangs.
source "$(dirname "$0")/../e2e/lib.sh"
DP="${LUMEN_DP_BIN:?set LUMEN_DP_BIN to the lumen-dp binary}"
[[ $EUID -eq 0 ]] || e2e_skip "needs root (DPDK EAL, a veth pair)"
e2e_require_tools python3
(($(nproc) >= 2)) || e2e_skip "needs 2 cores (two lcores busy-poll)"

tmp="$(mktemp -d)"
prefix="ldq$$"
e2e_on_exit "rm -rf '$tmp' /var/run/dpdk/$prefix*"
eal() { echo --no-huge --no-pci -m 512 -l "$2" --log-level=error --file-prefix "$prefix$1"; }
js() { e2e_json "$2" <"$tmp/$1.json"; }

# --- options -------------------------------------------------------------
e2e_check "--queues 0" e2e_fails 2 "--queues: '0' is not a whole number in 1..16" "$DP" $(eal o1 0) -- pair --queues 0
e2e_check "--queues 17" e2e_fails 2 "--queues: '17'" "$DP" $(eal o2 0) -- pair --queues 17
e2e_check "unknown steering" e2e_fails 2 "unknown steering 'rss'" "$DP" $(eal o3 0) -- pair --steer rss
e2e_check "ports past 65535" e2e_fails 2 "UDP ports 65535\.\.65536 \(one per queue\) pass 65535" \
	"$DP" $(eal o4 0) -- pair --queues 2 --udp-port 65535
e2e_check "bench is one queue" e2e_fails 2 "bench measures one queue" "$DP" $(eal o5 0) -- bench --queues 2
e2e_check "pair's rings take no rte_flow" e2e_fails 2 "ring ports take no rte_flow" \
	"$DP" $(eal o6 0) -- pair --queues 2 --steer flow
left="$(ls -d /var/run/dpdk/"$prefix"* 2>/dev/null | xargs -r -n1 ls -A 2>/dev/null | grep -v '^$' || true)"
e2e_check "refused runs leave no runtime files (${left:-none})" test -z "$left"
e2e_check "--steer flow on net_null (no rte_flow): refused after EAL" e2e_fails 2 \
	"\(net_null\) takes no rte_flow rule" "$DP" $(eal o7 0) --vdev net_null0 -- perf --server --ip 10.4.0.2 \
	--queues 2 --steer flow --time 0.2
left="$(ls -A /var/run/dpdk/"${prefix}o7" 2>/dev/null || true)"
e2e_check "... and leaves no runtime files (${left:-none})" test -z "$left"

# --- checks on a summary ---------------------------------------------------
# spread NAME CLIENT SERVER: every queue of both hosts has connections, each
# of the server's queues delivered messages, nothing refused or corrupt
spread() {
	python3 - "$tmp/$1.json" "$2" "$3" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
c, s = sys.argv[2], sys.argv[3]
h = {x["name"]: x for x in d["hosts"]}
for name in (c + "/q0", c + "/q1", s + "/q0", s + "/q1"):
    assert h[name]["conns"] > 0, (name, "no connection")
    f = h[name]["frames"]
    assert f["malformed"] == 0 and f["no_conn"] == 0, (name, f)
for name in (s + "/q0", s + "/q1"):
    assert h[name]["totals"]["msgs_delivered"] > 0, (name, "delivered nothing")
assert d["totals"]["corrupt"] == 0
print("ok")
PY
}
# steered NAME HOST...: the frames steered to the queues of these hosts (0
# unless every one of their queues got some), none dropped anywhere
steered() {
	python3 - "$tmp/$1.json" "${@:2}" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
qs = [x for x in d["hosts"] if x["name"].split("/")[0] in sys.argv[2:]]
assert len(qs) == 2 * len(sys.argv[2:]), [x["name"] for x in qs]
assert all(x["port"]["steer_drops"] == 0 for x in d["hosts"])
assert all(p["steering"] == "software" for p in d["ports"]), d["ports"]
n = [x["port"]["steered_in"] for x in qs]
print(sum(n) if min(n) > 0 else 0)
PY
}

# --- ring: pair mode, crossed rings ----------------------------------------
for lc in 0,1 0; do
	n="ring${lc/,/}"
	rc=0
	"$DP" $(eal "$n" "$lc") -- pair --queues 2 --quiet --json "$tmp/$n.json" --conns 4 --msgs 20 --time 15 \
		--msg-size 100000 >"$tmp/$n.out" 2>&1 || rc=$?
	e2e_check "ring, lcores $lc: pair with 2 queues per port (exit $rc)" test "$rc" -eq 0 ||
		cat "$tmp/$n.out"
	e2e_check "ring, lcores $lc: all 80 messages delivered" test "$(js "$n" "d['totals']['msgs_delivered']")" -eq 80
	e2e_check "ring, lcores $lc: connections on both queues at both ends" test "$(spread "$n" client server)" = ok
	v="$(steered "$n" client server)"
	e2e_check "ring, lcores $lc: every queue had frames steered to it, none dropped ($v)" test "$v" -gt 0
	e2e_check "ring, lcores $lc: setup names the steering" \
		grep -q "2 queues on UDP ports 4792..4793, steered by software" "$tmp/$n.out"
done

# --- af_packet: the kernel's fanout scatters, software steering gathers -------
va="ldq${$}a" vb="ldq${$}b"
if ! command -v ip >/dev/null || ! ip link add "$va" type veth peer name "$vb" 2>/dev/null; then
	e2e_skip_part af_packet "no veth pair here (ip link add failed)"
else
	e2e_on_exit "ip link del '$va' 2>/dev/null || true"
	ip link set "$va" address 02:00:00:00:d1:01
	ip link set "$vb" address 02:00:00:00:d1:02
	for d in "$va" "$vb"; do
		sysctl -qw "net.ipv6.conf.$d.disable_ipv6=1"
		ip link set "$d" up
	done
	rc=0
	"$DP" $(eal af 0,1) --vdev "net_af_packet0,iface=$va,qpairs=2,framecnt=2048,qdisc_bypass=1" \
		--vdev "net_af_packet1,iface=$vb,qpairs=2,framecnt=2048,qdisc_bypass=1" -- hosts --pattern pairs \
		--host 0,10.9.0.1,02:00:00:00:d1:02 --host 1,10.9.0.2,02:00:00:00:d1:01 --queues 2 --conns 4 \
		--msgs 20 --msg-size 100000 --time 15 --quiet --json "$tmp/af.json" >"$tmp/af.out" 2>&1 || rc=$?
	e2e_check "af_packet: hosts with 2 queues per veth end (exit $rc)" test "$rc" -eq 0
	((rc == 0)) || cat "$tmp/af.out"
	e2e_check "af_packet: all 80 messages delivered" test "$(js af "d['totals']['msgs_delivered']")" -eq 80
	e2e_check "af_packet: connections on both queues at both ends" test "$(spread af 10.9.0.1 10.9.0.2)" = ok
	# the receiver's queues get the sprayed DATA: fanout puts about half on the wrong one
	v="$(steered af 10.9.0.2)"
	e2e_check "af_packet: the receiver steered sprayed DATA to both queues, none dropped ($v)" test "$v" -gt 0
fi

# --- telemetry ---------------------------------------------------------------
"$DP" $(eal t 0) --vdev net_null0 -- perf --server --quiet --ip 10.2.0.2 --queues 2 >"$tmp/t.out" 2>&1 &
pid=$!
e2e_on_exit "kill -9 $pid 2>/dev/null || true"
tel=""
e2e_wait_until 50 0.2 test -S "/var/run/dpdk/${prefix}t/dpdk_telemetry.v2" || true
for _ in $(seq 1 50); do
	tel="$(echo /lumen/stats,server/q1 | dpdk-telemetry.py -f "${prefix}t" 2>/dev/null | grep '^{' || true)"
	grep -q steered_in <<<"$tel" && break
	sleep 0.2
done
v="$(e2e_json "d['/lumen/stats']['host'] + ' queue ' + str(d['/lumen/stats']['queue']) + \
	' steered_out ' + str(d['/lumen/stats']['steered_out'])" <<<"$tel" 2>/dev/null || echo none)"
e2e_check "telemetry: /lumen/stats,server/q1 ($v)" grep -q "^server/q1 queue 1 steered_out [0-9]" <<<"$v"
kill -INT "$pid"
rc=0
wait "$pid" || rc=$?
e2e_check "telemetry: SIGINT, clean exit ($rc)" test "$rc" -eq 0

e2e_finish
