#!/usr/bin/env bash
# tests/e2e/kmod_lifetime_test.sh - the module's per-socket state lives and
# dies with its sockets, in a VM that can load it (tests/e2e/kmod_vm.sh).
# A storm of short connections (powertcp, theta_powertcp, cubic), some
# switching TCP_CONGESTION mid-flow, a third closed with an RST, and long
# flows switching algorithm every 50 ms (kmod_lifetime.py), while `ss -tin`
# reads every socket's info in a loop; then every per-socket state must be
# freed (the module's "states" counter), rmmod must succeed, the kernel log
# must stay clean, and kmemleak, where the kernel has it, must find nothing.
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

e2e_require_kmod
ko="$E2E_KO"
e2e_require_tools python3 ss insmod rmmod
CONNS="${LUMEN_LIFETIME_CONNS:-400}"
SECS="${LUMEN_LIFETIME_SECONDS:-4}"
stat_of() { e2e_kmod_stats | awk -v k="$1" '$1 == k { print $2 }'; }
tmp="$(mktemp -d)"
e2e_on_exit "rm -rf '$tmp'"
e2e_on_exit "rmmod tcp_powertcp"
mark="kmod_lifetime_test-$$-start"
echo "$mark" >/dev/kmsg
leak=/sys/kernel/debug/kmemleak
[[ -e $leak ]] || mount -t debugfs none /sys/kernel/debug 2>/dev/null || true
if [[ -w $leak ]]; then
	echo clear >"$leak"
fi

insmod "$ko" host_bw_mbps=1000
e2e_ns_pair c NC lc0 s NS ls0
ip -n "$NC" addr add 10.78.0.1/24 dev lc0
ip -n "$NS" addr add 10.78.0.2/24 dev ls0
flows0="$(stat_of flows)"

# ss -tin in a loop: every pass calls the module's get_info on its sockets
(
	n=0
	while [[ ! -e $tmp/stop ]]; do
		ip netns exec "$NC" ss -tin >"$tmp/ss.last" 2>&1 || true
		n=$((n + 1))
		echo "$n" >"$tmp/ss.count"
	done
) &
ss_pid=$!
e2e_on_exit "touch '$tmp/stop'; kill $ss_pid"

rc=0
python3 "$(dirname "$0")/kmod_lifetime.py" "$NC" "$NS" 10.78.0.2 7200 "$CONNS" "$SECS" >"$tmp/storm.json" || rc=$?
touch "$tmp/stop"
wait "$ss_pid" || true
e2e_log "storm: $(cat "$tmp/storm.json"); ss passes $(cat "$tmp/ss.count" 2>/dev/null || echo 0)"
e2e_check "the storm ran (exit 0)" test "$rc" -eq 0
e2e_check "all $CONNS short connections made, no socket error" \
	python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); sys.exit(not (s["connections"] == int(sys.argv[2]) and not s["errors"]))' \
	"$tmp/storm.json" "$CONNS"
e2e_check "algorithms switched mid-flow and RSTs sent" \
	python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); sys.exit(not (s["switches"] > 0 and s["resets"] > 0 and s["long_flow_switches"] >= 10))' \
	"$tmp/storm.json"
e2e_check "ss -tin ran alongside (at least 5 passes)" test "$(cat "$tmp/ss.count" 2>/dev/null || echo 0)" -ge 5
e2e_check "the module saw the flows (flows $flows0 -> $(stat_of flows))" \
	test "$(($(stat_of flows) - flows0))" -ge "$((CONNS / 2))"
e2e_check "no state allocation failed (no_mem $(stat_of no_mem), hash_fail $(stat_of hash_fail))" \
	test "$(stat_of no_mem)" -eq 0 -a "$(stat_of hash_fail)" -eq 0

# sockets still closing (FIN_WAIT, orphans) hold their state briefly
states_zero() {
	local i
	for ((i = 0; i < 100; i++)); do
		[[ "$(stat_of states)" == 0 ]] && return 0
		sleep 0.2
	done
	e2e_log "states still $(stat_of states); sockets: $(ip netns exec "$NC" ss -tan | tail -n +2 | awk '{ print $1 }' | sort | uniq -c | xargs)"
	return 1
}
e2e_check "every per-socket state freed" states_zero
e2e_check "rmmod" e2e_rmmod
if [[ -w $leak ]]; then
	echo scan >"$leak"
	sleep 1
	echo scan >"$leak"
	e2e_check "kmemleak finds nothing of tcp_powertcp" bash -c "! grep -q tcp_powertcp '$leak'"
else
	e2e_log "kmemleak: not in kernel $(uname -r) (CONFIG_DEBUG_KMEMLEAK off); the states counter stands in"
fi
e2e_kernel_log_since "$mark" "$tmp/dmesg"
e2e_check "no kernel warnings during the storm" bash -c "! grep -Eq 'WARNING|BUG|Oops|refcount|leak' '$tmp/dmesg'"
e2e_finish
