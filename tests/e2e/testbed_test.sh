#!/usr/bin/env bash
# tests/e2e/testbed_test.sh - `lumen testbed` end to end:
#
#   - each topology (dumbbell, incast, leaf-spine) comes up: every host pair
#     pings, every port is a live switch port, status agrees; `down` leaves
#     nothing behind (namespaces, cgroup, switch ports and pins, state file,
#     sysctls of this namespace);
#   - leaf-spine ECMP: 16 TCP flows between two leaves cross both spines;
#   - teardown kills what still runs in the testbed;
#   - atomicity: an injected failure at several steps, SIGINT during `up`,
#     and SIGKILL of `up` followed by `down NAME` all leave nothing;
#   - refused descriptions, a name in use and `down` of a testbed being
#     created change nothing.
source "$(dirname "$0")/lib.sh"

e2e_require_bpf
e2e_require_tools iperf3 python3 ethtool ping sysctl
SRC="$(cd "$(dirname "$0")/../.." && pwd)"
TMPD="$(mktemp -d)"
e2e_on_exit "rm -rf '$TMPD'"
CG2="$(e2e_cgroup2_root)"
STATE_DIR=/run/lumen/testbeds
ID=$(($$ % 100000))
NAMES=()

# tb_name PREFIX -> a testbed name unique to this run, torn down at exit
tb_name() {
	local n="$1$ID"
	NAMES+=("$n")
	e2e_on_exit "'$LUMEN_BIN' testbed down '$n'"
	echo "$n"
}
# (not in $(...): the exit handler must be registered in this shell)
for p in d i l f s k r; do tb_name "$p" >/dev/null; done
DB="d$ID" IN="i$ID" LS="l$ID" FAIL="f$ID" SIGI="s$ID" KILL="k$ID" REF="r$ID"

# sysctls of this namespace a testbed must not change
host_sysctls() {
	sysctl -n net.ipv4.ip_forward net.ipv4.fib_multipath_hash_policy net.ipv4.conf.all.rp_filter \
		net.ipv6.conf.all.disable_ipv6 | tr '\n' ' '
}
SYSCTLS_BEFORE="$(host_sysctls)"

switch_json() { "$LUMEN_BIN" switch stats --json; }

# The switch pins go with the last port. Other tests may attach ports at
# the same time, so pins are only wrong when they stay without any port.
pins_gone_or_shared() {
	local i
	for ((i = 0; i < 30; i++)); do
		[[ "$(switch_json | e2e_json 'len(d["ports"])')" != 0 ]] && return 0
		compgen -G "/sys/fs/bpf/lumen/lumen_sw_*" >/dev/null || return 0
		sleep 0.1
	done
	return 1
}

# nothing_left NAME: no trace of testbed NAME anywhere
nothing_left() {
	local name="$1" why=()
	ip netns list | awk '{print $1}' | grep -q "^lt-$name-" && why+=("namespaces")
	[[ -e "$CG2/lt-$name" ]] && why+=("cgroup")
	[[ -e "$STATE_DIR/$name.json" ]] && why+=("state file")
	[[ "$(switch_json | e2e_json "sum(p['dev_netns'].startswith('lt-$name-') for p in d['ports'])")" == 0 ]] ||
		why+=("switch ports")
	pins_gone_or_shared || why+=("switch pins")
	[[ "$(host_sysctls)" == "$SYSCTLS_BEFORE" ]] || why+=("sysctls")
	if ((${#why[@]})); then
		e2e_log "left behind by $name: ${why[*]}"
		return 1
	fi
}

now_ms() { date +%s%3N; }

# all_pairs_ping UP_JSON [MAX_PAIRS]: every (or the first MAX) host pair
all_pairs_ping() {
	local json="$1" max="${2:-1000}" n=0 from to ns addr
	while read -r from ns; do
		while read -r to addr; do
			[[ "$from" == "$to" ]] && continue
			((n++ < max)) || return 0
			if ! ip netns exec "$ns" ping -c 1 -W 2 -q "$addr" >/dev/null; then
				e2e_log "no ping $from -> $to ($addr)"
				return 1
			fi
		done < <(e2e_json '"\n".join(h["name"] + " " + h["addr"] for h in d["hosts"])' <"$json")
	done < <(e2e_json '"\n".join(h["name"] + " " + h["netns"] for h in d["hosts"])' <"$json")
}

# ports_live UP_JSON: every port of the testbed is a switch port, state ok
ports_live() {
	local json="$1"
	switch_json >"$TMPD/stats.json"
	python3 - "$json" "$TMPD/stats.json" <<'EOF'
import json, sys
tb = json.load(open(sys.argv[1]))
sw = {p["port_id"]: p for p in json.load(open(sys.argv[2]))["ports"]}
bad = [p["name"] for p in tb["ports"]
       if p["port_id"] not in sw or sw[p["port_id"]]["dev"] != p["dev"]
       or sw[p["port_id"]]["dev_netns"] != p["netns"] or sw[p["port_id"]]["state"] != "ok"]
if bad or not tb["ports"]:
    print("ports not live:", bad)
    sys.exit(1)
EOF
}

# topology NAME EXPECTED_HOSTS EXPECTED_PORTS MAX_PAIRS up-arguments...
topology() {
	local name="$1" hosts="$2" ports="$3" pairs="$4"
	shift 4
	local t0 t1 json="$TMPD/$name.json"
	t0=$(now_ms)
	"$LUMEN_BIN" testbed up "$@" --name "$name" --json >"$json" 2>"$TMPD/$name.err" && rc=0 || rc=$?
	t1=$(now_ms)
	e2e_check "$name: up" test "$rc" -eq 0
	if [[ $rc -ne 0 ]]; then
		cat "$TMPD/$name.err"
		return 0
	fi
	e2e_check "$name: $hosts hosts, $ports ports" \
		test "$(e2e_json 'str(len(d["hosts"])) + " " + str(len(d["ports"]))' <"$json")" == "$hosts $ports"
	e2e_check "$name: base RTT measured" test "$(e2e_json 'd["base_rtt_ns"]' <"$json")" -gt 0
	e2e_check "$name: host pairs ping" all_pairs_ping "$json" "$pairs"
	e2e_check "$name: ports are live switch ports" ports_live "$json"
	e2e_check "$name: status says up" test "$("$LUMEN_BIN" testbed status "$name" --json | e2e_json 'd["state"]')" == up
	TB_UP_MS=$((t1 - t0))
	TB_RTT_US=$(e2e_json 'd["base_rtt_ns"] // 1000' <"$json")
}

down_clean() { # down_clean NAME
	local t0 t1
	t0=$(now_ms)
	e2e_check "$1: down" "$LUMEN_BIN" testbed down "$1"
	t1=$(now_ms)
	e2e_check "$1: nothing left" nothing_left "$1"
	e2e_log "timing: $1 up ${TB_UP_MS} ms, down $((t1 - t0)) ms, base RTT ${TB_RTT_US} us"
}

# --- each topology -----------------------------------------------------------

topology "$DB" 3 5 1000 --topology dumbbell --senders 2 --rate 1gbit --ecn-threshold 100k
# something still running in the testbed: teardown must kill it (if it
# does not, timeout ends the sleeps with 124 after a minute)
ip netns exec "lt-$DB-r1" timeout 60 sleep 600 &
IN_NETNS=$!
e2e_in "$CG2/lt-$DB" "lt-$DB-s1" timeout 60 sleep 600 &
IN_CGROUP=$!
sleep 0.2
down_clean "$DB"
wait "$IN_NETNS" && rc=0 || rc=$?
e2e_check "$DB: a process in a namespace was killed" test "$rc" -eq 137
wait "$IN_CGROUP" && rc=0 || rc=$?
e2e_check "$DB: a process in the cgroup was killed" test "$rc" -eq 137

topology "$IN" 4 4 1000 --topology incast --senders 3 --rate 500mbit --host-rate 1gbit
# exec (Testbed::spawn): in the host's namespace and the testbed's cgroup
out="$("$LUMEN_BIN" testbed exec "$IN" s2 -- sh -c 'grep "^0::" /proc/self/cgroup; ip -4 -o addr show eth0')"
e2e_check "$IN: exec runs in the testbed's cgroup" grep -q "^0::/lt-$IN\$" <<<"$out"
e2e_check "$IN: exec runs in the host's namespace" grep -q "inet 10.1.2.1/24" <<<"$out"
"$LUMEN_BIN" testbed exec "$IN" r1 sh -c 'exit 7' && rc=0 || rc=$?
e2e_check "$IN: exec returns the command's status" test "$rc" -eq 7
"$LUMEN_BIN" testbed exec "$IN" nohost true 2>/dev/null && rc=0 || rc=$?
e2e_check "$IN: exec in an unknown host is refused" test "$rc" -eq 2
e2e_check "$IN: the bottleneck is sw->r1 at 500 Mbit/s" test \
	"$(e2e_json '[(p["name"], p["rate_mbps"]) for p in d["ports"] if p["bottleneck"]]' <"$TMPD/$IN.json")" == \
	"[('sw->r1', 500)]"
# RPS on every veth end: a flow's packets arrive in order (without it a
# veth hands each packet to the backlog of the CPU that sent it). 4 x 100
# Mbit/s through the 500 Mbit/s port: no queue drops, so any segment the
# receiver queues out of order came out of order
rps_set() { # rps_set NODE DEV: its receive queue spreads over every CPU
	test "$(ip netns exec "lt-$IN-$1" cat "/sys/class/net/$2/queues/rx-0/rps_cpus" | tr -d ',0')" != ""
}
e2e_check "$IN: RPS on r1's eth0" rps_set r1 eth0
e2e_check "$IN: RPS on the switch's port to r1" rps_set sw r1
ip netns exec "lt-$IN-r1" iperf3 -s -D -p 5202 >/dev/null
sleep 0.5
export NSTAT_HISTORY="$TMPD/nstat.r1" # nstat's own, not the user's shared one
ip netns exec "lt-$IN-r1" nstat -n
ip netns exec "lt-$IN-s1" iperf3 -c 10.2.1.1 -p 5202 -P 4 -b 100M -t 2 >"$TMPD/iperf-in.txt" 2>&1 || true
ofo="$(ip netns exec "lt-$IN-r1" nstat TcpExtTCPOFOQueue | awk '$1 == "TcpExtTCPOFOQueue" {print $2}')"
e2e_log "$IN: 4 flows s1 -> r1: ${ofo:-0} segments queued out of order at r1"
e2e_check "$IN: 4 flows through the switch arrive in order" test "${ofo:-0}" -eq 0
down_clean "$IN"

topology "$LS" 4 12 1000 "$SRC/testbeds/leafspine.json"
# ECMP: 16 flows h1_1 -> h2_1 (distinct source ports) must use both spines
ip netns exec "lt-$LS-h2_1" iperf3 -s -D -p 5201 >/dev/null
sleep 0.5
ip netns exec "lt-$LS-h1_1" iperf3 -c 10.2.1.1 -p 5201 -P 16 -t 2 -b 20M >"$TMPD/iperf.txt" 2>&1
e2e_check "$LS: iperf3 flows between leaves" grep -q "receiver" "$TMPD/iperf.txt"
spine_bytes() { # spine_bytes N: bytes leaf1 sent towards spine N
	switch_json | e2e_json "sum(p['deq_bytes'] for p in d['ports'] if p['dev'] == 'spine$1' and p['dev_netns'] == 'lt-$LS-leaf1')"
}
S1=$(spine_bytes 1)
S2=$(spine_bytes 2)
e2e_log "leaf1 -> spine1 $S1 bytes, leaf1 -> spine2 $S2 bytes"
e2e_check "$LS: ECMP uses spine1" test "$S1" -gt 1000000
e2e_check "$LS: ECMP uses spine2" test "$S2" -gt 1000000
down_clean "$LS"
e2e_check "$LS: the iperf3 server died with the testbed" bash -c "! pgrep -x iperf3 -a | grep -q 'p 5201'"

# --- atomicity ---------------------------------------------------------------

# dumbbell with 2 senders: 1 cgroup, 5 namespaces, 5 sysctls, 4 links,
# 5 address batches, 5 ports, 1 ping = 26 steps
for step in 1 4 9 14 18 22 26; do
	out="$(LUMEN_TESTBED_FAIL_AT=$step "$LUMEN_BIN" testbed up --topology dumbbell --name "$FAIL" 2>&1)" && rc=0 || rc=$?
	e2e_check "failure injected at step $step: up fails" test "$rc" -eq 1
	e2e_check "failure injected at step $step: reported" grep -q "injected failure after step $step" <<<"$out"
	e2e_check "failure injected at step $step: nothing left" nothing_left "$FAIL"
done

# wait_for_journal NAME KIND: until the state file records an object of KIND
wait_for_journal() {
	e2e_wait_until 300 0.05 grep -q "\"kind\": \"$2\"" "$STATE_DIR/$1.json"
}

"$LUMEN_BIN" testbed up --topology dumbbell --name "$SIGI" >/dev/null 2>"$TMPD/sigint.err" &
UP=$!
e2e_check "SIGINT: up reaches the switch ports" wait_for_journal "$SIGI" port
out="$("$LUMEN_BIN" testbed down "$SIGI" 2>&1)" && rc=0 || rc=$?
e2e_check "down of a testbed being created is refused" test "$rc" -eq 1
e2e_check "down of a testbed being created names the creator" grep -q "being created by process $UP" <<<"$out"
kill -INT "$UP"
wait "$UP" && rc=0 || rc=$?
e2e_check "SIGINT: up fails" test "$rc" -eq 1
e2e_check "SIGINT: reported as interrupted" grep -q "interrupted" "$TMPD/sigint.err"
e2e_check "SIGINT: nothing left" nothing_left "$SIGI"

"$LUMEN_BIN" testbed up --topology dumbbell --name "$KILL" >/dev/null 2>&1 &
UP=$!
e2e_check "SIGKILL: up reaches the switch ports" wait_for_journal "$KILL" port
sleep 0.3
kill -KILL "$UP"
wait "$UP" 2>/dev/null || true
e2e_check "SIGKILL: status says incomplete" bash -c \
	"'$LUMEN_BIN' testbed status '$KILL' --json | grep -q 'incomplete'"
e2e_check "SIGKILL: down NAME" "$LUMEN_BIN" testbed down "$KILL"
e2e_check "SIGKILL: nothing left" nothing_left "$KILL"

# --- refusals change nothing -------------------------------------------------

refused() { # refused WHAT EXIT_CODE EXPECTED_TEXT up-arguments...
	local what="$1" code="$2" text="$3" out rc
	shift 3
	out="$("$LUMEN_BIN" testbed up "$@" 2>&1)" && rc=0 || rc=$?
	e2e_check "refused ($what): exit $code" test "$rc" -eq "$code"
	e2e_check "refused ($what): says '$text'" grep -qF -- "$text" <<<"$out"
	e2e_check "refused ($what): nothing created" nothing_left "$REF"
}
echo '{"topology": "dumbbell", "name": "'"$REF"'", "senders": 2, "bottleneck": {"rate": "1gbit", "bufer": "1m"}}' \
	>"$TMPD/typo.json"
echo '{"topology": "dumbbell", "name": "'"$REF"'", "bottleneck": {"delay": "2s"}}' >"$TMPD/delay.json"
echo '{"topology": "leafspine", "name": "'"$REF"'", ' >"$TMPD/broken.json"
refused "unknown key" 2 '$.bottleneck.bufer: unknown key' "$TMPD/typo.json"
refused "delay" 2 '$.bottleneck.delay: 2s must be' "$TMPD/delay.json"
refused "not JSON" 2 'not valid JSON' "$TMPD/broken.json"
refused "too many ports" 2 'needs 192 INT switch ports' --topology leafspine --leaves 8 --spines 4 \
	--hosts-per-leaf 16 --name "$REF"
refused "rate" 2 '--rate' --topology incast --rate 200gbit --name "$REF"
refused "flag of another kind" 2 '--leaves does not apply' --topology dumbbell --leaves 3 --name "$REF"

# a name in use: the second `up` is refused and the first testbed stays intact
"$LUMEN_BIN" testbed up --topology incast --senders 1 --name "$REF" >/dev/null 2>&1
out="$("$LUMEN_BIN" testbed up --topology dumbbell --name "$REF" 2>&1)" && rc=0 || rc=$?
e2e_check "name in use: refused" test "$rc" -eq 1
e2e_check "name in use: says so" grep -q "testbed $REF exists" <<<"$out"
e2e_check "name in use: the first testbed still works" \
	ip netns exec "lt-$REF-s1" ping -c 1 -W 2 -q 10.2.1.1
e2e_check "name in use: still 2 ports" test "$("$LUMEN_BIN" testbed status "$REF" --json | e2e_json 'len(d["ports"])')" == 2
# --all only when no testbed but ours exists (others' tests may have some)
if [[ "$("$LUMEN_BIN" testbed status --json | e2e_json '[t["name"] for t in d["testbeds"]]')" == "['$REF']" ]]; then
	e2e_check "down --all removes it" "$LUMEN_BIN" testbed down --all
else
	e2e_log "other testbeds exist: 'down $REF' instead of 'down --all'"
	e2e_check "down removes it" "$LUMEN_BIN" testbed down "$REF"
fi
e2e_check "down: nothing left" nothing_left "$REF"
out="$("$LUMEN_BIN" testbed down "$REF" 2>&1)" && rc=0 || rc=$?
e2e_check "down of an unknown testbed fails" test "$rc" -eq 1

e2e_finish
