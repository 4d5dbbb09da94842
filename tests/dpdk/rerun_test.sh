#!/usr/bin/env bash
# lumen_dp_rerun_test: a client run again against a server that keeps
# running, as a user benchmarks: `perf --server` in one process, `perf` in
# another, joined by a memif pair, the client run three times with the same
# connection ids. Every run completes (before connections had a lifecycle,
# the second stalled on "bad ACK"s: its PSNs started at 0 again against the
# old connections' state); the server resets each old connection in place
# (reincarnations) instead of keeping more, and counts the old ones'
# messages in its totals.
# Then the other way round: the server killed and started again under a
# running client (over a veth pair: a memif client does not reconnect to a
# new server). The new server answers the old connections' DATA with FIN
# RST; the client opens each again (a new incarnation) and posts again the
# messages the reset failed, instead of failing the connection.
source "$(dirname "$0")/../e2e/lib.sh"
DP="${LUMEN_DP_BIN:?set LUMEN_DP_BIN to the lumen-dp binary}"
[[ $EUID -eq 0 ]] || e2e_skip "needs root (DPDK EAL)"
(($(nproc) >= 2)) || e2e_skip "needs 2 cores (the server busy-polls one, each client the other)"
e2e_require_tools python3
tmp="$(mktemp -d)"
prefix="ldr$$"
MS=02:00:00:00:0e:02 MC=02:00:00:00:0e:01
server=""
e2e_on_exit "[[ -n \$server ]] && kill -9 \$server 2>/dev/null; ip link del ${prefix}a 2>/dev/null; ip netns del ${prefix}n 2>/dev/null; rm -rf '$tmp' /var/run/dpdk/$prefix*"

timeout 120 "$DP" --no-huge --no-pci -m 512 -l 1 --log-level=error --file-prefix "${prefix}s" \
	--vdev "net_memif0,role=server,socket=$tmp/m.sock,mac=$MS" -- perf --server --ip 10.9.0.2 --quiet \
	--json "$tmp/server.json" >"$tmp/server.out" 2>&1 &
server=$!
for ((i = 0; i < 200; i++)); do
	grep -qF "@$tmp/m.sock" /proc/net/unix && break
	sleep 0.05
done
for run in 1 2 3; do
	rc=0
	timeout 60 "$DP" --no-huge --no-pci -m 512 -l 0 --log-level=error --file-prefix "${prefix}c$run" \
		--vdev "net_memif0,role=client,socket=$tmp/m.sock,mac=$MC" -- perf --ip 10.9.0.1 --peer 10.9.0.2 \
		--peer-mac "$MS" --conns 2 --msgs 40 --msg-size 20000 --time 20 --quiet --json "$tmp/c$run.json" \
		>"$tmp/c$run.out" 2>&1 || rc=$?
	e2e_check "run $run: the client finished (exit $rc)" test "$rc" -eq 0
	((rc == 0)) || tail -5 "$tmp/c$run.out"
	e2e_check "run $run: 80 messages acknowledged, no bad ACK" python3 - "$tmp/c$run.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["totals"]
assert t["msgs_acked"] == 80 and t["bad_acks"] == 0, t
PY
done
kill -INT "$server"
rc=0
wait "$server" || rc=$?
server=""
e2e_check "the server stopped cleanly on SIGINT (exit $rc)" test "$rc" -eq 0
e2e_check "the server: 2 connections, each reset in place twice, 240 messages in its totals" \
	python3 - "$tmp/server.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
h = d["hosts"][0]
assert h["conns"] == 2 and h["reincarnations"] == 4, {k: h[k] for k in ("conns", "reincarnations", "conns_opened")}
assert h["conns_opened"] == 2, h["conns_opened"]
assert h["frames"]["bad_cookies"] == 0 and h["frames"]["syns"] >= 12, h["frames"]
assert d["totals"]["msgs_delivered"] == 240, d["totals"]
PY

# --- a server that restarts under a running client --------------------------
# The b end lives in a namespace of its own: DPDK's af_packet joins each
# port's sockets to the fanout group (pid ^ ifindex) & 0xffff, groups are
# per namespace, and a client and a server started one after the other on
# the two ends of one veth can compute the same id (consecutive pids,
# consecutive ifindexes), when the second one's probe fails with EINVAL.
ip netns add "${prefix}n"
ip link add "${prefix}a" type veth peer name "${prefix}b" netns "${prefix}n"
ip link set "${prefix}a" up
ip -n "${prefix}n" link set "${prefix}b" up
mac_b="$(ip -n "${prefix}n" -br link show "${prefix}b" | awk '{print $3}')"
serve() { # serve N: a server on the veth's b end, its pid in $server (ip netns exec execs it)
	ip netns exec "${prefix}n" "$DP" --no-huge --no-pci -m 512 -l 1 --log-level=error --file-prefix "${prefix}r$1" \
		--vdev "net_af_packet0,iface=${prefix}b" -- perf --server --ip 10.9.0.2 --quiet \
		--json "$tmp/restart$1.json" >"$tmp/restart$1.out" 2>&1 &
	server=$!
}
serve 1
sleep 1
timeout 60 "$DP" --no-huge --no-pci -m 512 -l 0 --log-level=error --file-prefix "${prefix}rc" \
	--vdev "net_af_packet0,iface=${prefix}a" -- perf --ip 10.9.0.1 --peer 10.9.0.2 --peer-mac "$mac_b" \
	--conns 2 --msgs 0 --msg-size 20000 --time 6 --quiet --json "$tmp/rc.json" >"$tmp/rc.out" 2>&1 &
client=$!
sleep 3 # EAL's start, then a second or two of traffic
kill -9 "$server"
wait "$server" 2>/dev/null || true
serve 2
rc=0
wait "$client" || rc=$?
e2e_check "restart: the client ran to its end (exit $rc)" test "$rc" -eq 0
((rc == 0)) || tail -n 5 "$tmp/rc.out" "$tmp/restart1.out" "$tmp/restart2.out"
kill -INT "$server"
for ((i = 0; i < 100; i++)); do # 10 s for a clean stop, then no more
	kill -0 "$server" 2>/dev/null || break
	sleep 0.1
done
e2e_check "restart: the new server stopped on SIGINT" bash -c "! kill -0 $server 2>/dev/null"
kill -9 "$server" 2>/dev/null || true
wait "$server" || true
server=""
e2e_check "restart: each connection opened again once, the new server took both and their messages" \
	python3 - "$tmp/rc.json" "$tmp/restart2.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
s = json.load(open(sys.argv[2]))
h, sh = c["hosts"][0], s["hosts"][0]
assert h["redials"] == 2 and h["msgs_failed"] >= 2, {k: h[k] for k in ("redials", "msgs_failed", "conns")}
assert sh["conns_opened"] == 2 and sh["frames"]["resets_sent"] >= 2, sh
assert s["totals"]["msgs_delivered"] > 100, s["totals"]
assert c["totals"]["bad_acks"] == 0, c["totals"]
PY
e2e_finish
