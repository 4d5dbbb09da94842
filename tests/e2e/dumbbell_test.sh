#!/usr/bin/env bash
# dumbbell_test: eBPF PowerTCP end to end on a namespace dumbbell.
#
# Two senders and a receiver in one cgroup with the INT sockops program, a
# switch namespace whose egress towards the receiver is a 1 Gbit/s tbf
# bottleneck with the software INT switch, and bpf_powertcp /
# bpf_theta_ptcp as struct_ops. Checks that flows complete with both
# algorithms, that every INT stage happened (requests written, hops filled
# at the switch, requests parsed, echoes written and parsed, INT window
# updates), that a namespace can select the algorithm by sysctl, and that
# unloading leaves nothing behind.
source "$(dirname "$0")/lib.sh"
e2e_require_bpf
command -v iperf3 >/dev/null || e2e_skip "iperf3 missing"
command -v python3 >/dev/null || e2e_skip "python3 missing"
[[ -e /sys/fs/bpf/lumen ]] && [[ -n "$(ls -A /sys/fs/bpf/lumen)" ]] && e2e_skip "lumen is already loaded on this host"
grep -qw bpf_powertcp /proc/sys/net/ipv4/tcp_available_congestion_control && e2e_skip "bpf_powertcp already registered"

allowed_before="$(cat /proc/sys/net/ipv4/tcp_allowed_congestion_control)"
e2e_on_exit "echo '$allowed_before' > /proc/sys/net/ipv4/tcp_allowed_congestion_control"

"$LUMEN_BIN" cc load --allow
e2e_on_exit "'$LUMEN_BIN' cc unload"
cg="$(e2e_cgroup flows)"
"$LUMEN_BIN" int enable --cgroup "$cg"
e2e_on_exit "'$LUMEN_BIN' int disable"
e2e_dumbbell 2 1gbit 1m

rtt_us="$(e2e_base_rtt_us)"
# tau is the largest base RTT of the path (thesis): on veth the idle ping RTT
# understates what the stack adds under load, so use at least 200 us
rtt_us=$((rtt_us < 200 ? 200 : rtt_us))
e2e_log "base RTT ${rtt_us} us"
"$LUMEN_BIN" cc set host-bw=1gbit base-rtt="${rtt_us}us"

tmp="$(mktemp -d)"
e2e_on_exit "rm -rf '$tmp'"

# run_flows ALGO SECONDS: one iperf3 flow per sender, concurrently
run_flows() {
	e2e_start_flows "$cg" "$1" "$2" "$tmp"
	e2e_wait_flows
}

# total_mbps ALGO: the flows' summed goodput of the last run_flows ALGO
total_mbps() {
	local i mbps total=0
	for i in "${!DB_SENDERS[@]}"; do
		mbps="$(e2e_iperf_mbps "$tmp/$1-$i.json" 2>/dev/null || echo 0)"
		e2e_log "$1 flow $i: $mbps Mbit/s" >&2
		total=$((total + mbps))
	done
	echo "$total"
}

# log_run ALGO: per-second goodput of each flow of the last run_flows ALGO and
# the cc counters that explain a slow run (restarts, updates by source), so a
# failure in CI can be read from its log alone
log_run() {
	local i
	for i in "${!DB_SENDERS[@]}"; do
		e2e_log "$1 flow $i per second: $(e2e_json \
			"' '.join(str(int(x['sum']['bits_per_second'] / 1e6)) for x in d['intervals'])" \
			<"$tmp/$1-$i.json" 2>/dev/null)"
	done
	e2e_log "cc counters so far: $("$LUMEN_BIN" cc status --json | e2e_json \
		"' '.join(f'{k}={v}' for k, v in d['counters'].items() if v)")"
}

# What this machine can push through the testbed: cubic, same flows. On the
# host that is the full 1 Gbit/s; in a VM under software emulation the
# senders' CPUs bind first (100-450 Mbit/s), so PowerTCP must reach 70 % of
# the link or 2/3 of cubic's total, whichever is lower (at least 100). When
# the CPUs bind (cubic below 700), a 3 s run's goodput varies by +-20 % from
# one run to the next (theta-PowerTCP measured 58-74 % of cubic in the 6.1
# VM), so the bar there is half of cubic: still far above a stalled flow.
e2e_check "cubic baseline: both flows complete" run_flows cubic 3
cubic_total="$(total_mbps cubic)"
if ((cubic_total < 700)); then
	need=$((cubic_total / 2))
else
	need=$((cubic_total * 2 / 3 < 700 ? cubic_total * 2 / 3 : 700))
fi
need=$((need < 100 ? 100 : need)) # a broken baseline must not lower the bar to nothing
e2e_log "cubic moves $cubic_total Mbit/s: PowerTCP needs $need"
for algo in bpf_powertcp bpf_theta_ptcp; do
	e2e_check "$algo: both flows complete" run_flows "$algo" 3
	for i in "${!DB_SENDERS[@]}"; do
		mbps="$(e2e_iperf_mbps "$tmp/$algo-$i.json" 2>/dev/null || echo 0)"
		e2e_check "$algo flow $i moves data (>= 50 Mbit/s): $mbps" test "$mbps" -ge 50
	done
	total="$(total_mbps "$algo")"
	e2e_check "$algo fills the bottleneck (total $total >= $need Mbit/s)" test "$total" -ge "$need"
	log_run "$algo"
done

int_json="$("$LUMEN_BIN" int status --json)"
sw_json="$("$LUMEN_BIN" switch stats --json)"
cc_json="$("$LUMEN_BIN" cc status --json)"
for c in req_written req_parsed echo_written echo_parsed; do
	v="$(e2e_json "d['counters']['$c']" <<<"$int_json")"
	e2e_check "INT sockops $c > 0 ($v)" test "$v" -gt 0
done
v="$(e2e_json "d['counters']['malformed']" <<<"$int_json")"
e2e_check "no malformed INT options ($v)" test "$v" -eq 0
v="$(e2e_json "sum(p['int_filled'] for p in d['ports'])" <<<"$sw_json")"
e2e_check "switch filled hop records ($v)" test "$v" -gt 0
v="$(e2e_json "d['counters']['int_updates']" <<<"$cc_json")"
e2e_check "bpf_powertcp updated its window from INT ($v)" test "$v" -gt 0
# The switch's INT clock is the wire's (bpf/int_switch.bpf.c): records of a
# batch the dequeue hook sees at once are spread at the port rate, so the
# senders find almost every echo usable. Stamped with the hook's own time,
# 40-60 % of them claimed more than the port could send and were refused;
# now 1-2 % on the host, 5.5 % in a 6.12 guest under emulation (the bar
# leaves a guest's slower, burstier timers room and still catches the old
# clock by a factor of 3).
v="$(e2e_json "d['counters']['int_stale']" <<<"$cc_json")"
n="$(e2e_json "d['counters']['int_updates'] + d['counters']['int_unusable']" <<<"$cc_json")"
e2e_check "INT samples are usable: stale or implausible hops $v of $n (<= 15 %)" test $((v * 100)) -le $((n * 15))
v="$(e2e_json "d['counters']['rtt_updates']" <<<"$cc_json")"
e2e_check "bpf_theta_ptcp updated its window from RTT ($v)" test "$v" -gt 0

# sysctl selection inside a namespace (non-init namespaces may pick only
# allowed algorithms: cc load --allow added them)
flows_before="$(e2e_json "d['counters']['flows']" <<<"$cc_json")"
default_before="$(ip netns exec "${DB_SENDERS[0]}" sysctl -n net.ipv4.tcp_congestion_control)"
for s in "${DB_SENDERS[@]}"; do
	ip netns exec "$s" sysctl -qw net.ipv4.tcp_congestion_control=bpf_powertcp
done
e2e_check "default-algorithm flows complete" run_flows "" 1
flows_after="$("$LUMEN_BIN" cc status --json | e2e_json "d['counters']['flows']")"
e2e_check "sysctl-selected bpf_powertcp ran ($flows_before -> $flows_after flows)" \
	test "$flows_after" -ge $((flows_before + ${#DB_SENDERS[@]}))
for s in "${DB_SENDERS[@]}"; do
	ip netns exec "$s" sysctl -qw net.ipv4.tcp_congestion_control="$default_before"
done

# teardown leaves nothing behind
"$LUMEN_BIN" switch detach swr --netns "$DB_SW"
"$LUMEN_BIN" int disable
"$LUMEN_BIN" cc unload
left="$(ls -A /sys/fs/bpf/lumen 2>/dev/null || true)"
e2e_check "no pinned objects left (${left:-none})" test -z "$left"
e2e_check "bpf_powertcp unregistered" bash -c '! grep -qw bpf_powertcp /proc/sys/net/ipv4/tcp_available_congestion_control'
e2e_check "allowed list restored" test "$(cat /proc/sys/net/ipv4/tcp_allowed_congestion_control)" = "$allowed_before"
e2e_check "no tc filters left on the bottleneck" \
	bash -c "! ip netns exec '$DB_SW' tc filter show dev swr egress | grep -q bpf"
e2e_finish
