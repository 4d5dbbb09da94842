#!/usr/bin/env bash
# tests/e2e/interrupt_test.sh - Ctrl-C never leaves half a setup behind.
#
# `lumen cc load`, `lumen int enable` and `lumen switch attach` each create
# several things (programs, pins, struct_ops registrations, tc filters and
# qdiscs, sysctl entries). A Ctrl-C that lands in the middle must leave
# either all of it (the command got to its commit) or none of it, so that the
# next run does not fail with "already loaded". Each command is started in
# its own process group, as a shell does, and the whole group gets SIGINT
# after a delay that sweeps the command's measured run time in steps; after every
# trial the host must be in one of the two clean states, then is reset.
# At least one trial must have been interrupted (exit non-zero), or the
# sweep did not reach inside the command.
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

e2e_require_bpf
command -v tc >/dev/null || e2e_skip "tc missing"
command -v jq >/dev/null || e2e_skip "jq missing"
L="$LUMEN_BIN"
PIN=/sys/fs/bpf/lumen
e2e_require_free cc int

# interrupt DELAY_S CMD...: CMD in its own process group, SIGINT to the group
# after DELAY_S; prints CMD's exit status
interrupt() {
	local delay="$1" pid rc=0
	shift
	setsid "$@" >/dev/null 2>&1 &
	pid=$!
	sleep "$delay"
	kill -INT -- "-$pid" 2>/dev/null || true
	wait "$pid" || rc=$?
	echo "$rc"
}

# sweep NAME STATE_FN RESET_FN CMD...: one uninterrupted run measures how long
# CMD takes (T) and must end in "all"; then 16 trials at delays 0, T/14, ...
# 15T/14, so the signal lands at every stage of the setup and once after it
sweep() {
	local name="$1" state_fn="$2" reset_fn="$3" i rc st bad=0 cut=0 done_=0 t0 t_ms delay
	shift 3
	t0="$(date +%s%N)"
	"$@" >/dev/null 2>&1 || { e2e_log "  $name: an uninterrupted run failed"; return 1; }
	t_ms=$((($(date +%s%N) - t0) / 1000000))
	st="$($state_fn)"
	[[ $st == all ]] || { e2e_log "  $name: an uninterrupted run left '$st'"; return 1; }
	$reset_fn
	for ((i = 0; i < 16; i++)); do
		delay=$((i * t_ms / 14))
		rc="$(interrupt "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))" "$@")"
		st="$($state_fn)"
		case "$st" in
		all) done_=$((done_ + 1)) ;;
		none) ;;
		*)
			e2e_log "  $name: SIGINT after $delay ms (exit $rc) left half a setup: $st"
			bad=1
			;;
		esac
		if [[ $rc != 0 ]]; then
			cut=$((cut + 1))
			[[ $st == none ]] || { e2e_log "  $name: exit $rc after $delay ms but state '$st'"; bad=1; }
		fi
		$reset_fn
	done
	e2e_log "  $name: runs in $t_ms ms; 16 trials, $cut interrupted, $done_ completed"
	((bad == 0 && cut > 0))
}

# --- lumen cc load --allow ------------------------------------------------------
ORIG_ALLOWED="$(cat /proc/sys/net/ipv4/tcp_allowed_congestion_control)"
cc_state() {
	local avail allowed pins=0 reg=0 m
	avail="$(cat /proc/sys/net/ipv4/tcp_available_congestion_control)"
	allowed="$(cat /proc/sys/net/ipv4/tcp_allowed_congestion_control)"
	for m in cc_ops_int cc_ops_theta cc_ops_hpcc cc_ops_timely lumen_cc_params lumen_cc_faults \
		lumen_cc_stats lumen_cc_sk lumen_timely_params lumen_timely_stats lumen_timely_sk lumen_int_sk; do
		[[ -e $PIN/$m ]] && pins=$((pins + 1))
	done
	for m in bpf_powertcp bpf_theta_ptcp bpf_hpcc bpf_timely; do
		grep -qw "$m" <<<"$avail" && reg=$((reg + 1))
		grep -qw "$m" <<<"$allowed" && reg=$((reg + 1))
	done
	if ((pins == 12 && reg == 8)); then
		echo all
	elif ((pins == 0 && reg == 0)) && [[ $allowed == "$ORIG_ALLOWED" ]]; then
		echo none
	else
		echo "pins $pins, registered/allowed $reg, allowed '$allowed'"
	fi
}
cc_reset() { "$L" cc unload >/dev/null 2>&1 || true; }
e2e_on_exit cc_reset
e2e_check "cc load: all or nothing under Ctrl-C" sweep "cc load" cc_state cc_reset "$L" cc load --allow

# --- lumen int enable ---------------------------------------------------------------
CG="$(e2e_cgroup int)"
int_state() {
	local pins=0 m
	for m in int_sockops_link int_sockops_prog lumen_int_cfg lumen_int_stats lumen_int_sk; do
		[[ -e $PIN/$m ]] && pins=$((pins + 1))
	done
	if ((pins == 5)) && "$L" int status --json | jq -e '.enabled and .attached' >/dev/null; then
		echo all
	elif ((pins == 0)) && [[ -z "$(bpftool cgroup show "$CG" 2>/dev/null | tail -n +2)" ]]; then
		echo none
	else
		echo "pins $pins, cgroup programs: $(bpftool cgroup show "$CG" 2>&1 | tail -n +2 | xargs)"
	fi
}
int_reset() { "$L" int disable >/dev/null 2>&1 || true; }
e2e_on_exit int_reset
e2e_check "int enable: all or nothing under Ctrl-C" sweep "int enable" int_state int_reset \
	"$L" int enable --cgroup "$CG"

# --- lumen switch attach --------------------------------------------------------------
e2e_ns_pair a NA sw0 b NB sw1
sw_state() {
	local ports qd filters
	ports="$("$L" switch stats --json 2>/dev/null | jq '[.ports[]? | select(.dev == "sw0")] | length' 2>/dev/null ||
		echo 0)"
	qd="$(tc -n "$NA" qdisc show dev sw0 | grep -Ec 'tbf|clsact' || true)"
	filters="$(tc -n "$NA" filter show dev sw0 egress 2>/dev/null | grep -c direct-action || true)"
	filters=$((filters + $(tc -n "$NB" filter show dev sw1 ingress 2>/dev/null | grep -c direct-action || true)))
	if ((ports == 1 && qd == 2 && filters == 2)); then
		echo all
	elif ((ports == 0 && qd == 0 && filters == 0)); then
		echo none
	else
		echo "ports $ports, tbf/clsact qdiscs $qd, bpf filters $filters"
	fi
}
sw_reset() { "$L" switch detach --all >/dev/null 2>&1 || true; }
e2e_on_exit sw_reset
e2e_check "switch attach: all or nothing under Ctrl-C" sweep "switch attach" sw_state sw_reset \
	"$L" switch attach sw0 --netns "$NA" --peer sw1 --peer-netns "$NB" --rate 100mbit

e2e_finish
