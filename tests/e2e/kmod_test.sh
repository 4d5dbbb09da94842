#!/usr/bin/env bash
# kmod_test: the kernel module tcp_powertcp.ko end to end, on a kernel that
# can load modules (CTest runs it inside the VM runner: vm_kmod_6.1,
# vm_kmod_6.12; on a host without module support it skips).
#
#   LUMEN_BIN=build/userspace/lumen LUMEN_KMOD=build/kmod-6.1/tcp_powertcp.ko \
#       bash tests/e2e/kmod_test.sh
#
# LUMEN_KMOD defaults to build/kmod-<major.minor of uname -r>/tcp_powertcp.ko
# (tools/kmod-build). Checks, in order:
#   - autoloading by algorithm name through the module aliases: sysctl in a
#     namespace loads it for powertcp, setsockopt(TCP_CONGESTION) for
#     theta_powertcp (request_module goes through a modprobe wrapper that
#     also searches a private module tree, so nothing is installed);
#   - a name already taken (a BPF struct_ops algorithm holds it; needs clang
#     and bpftool): all or nothing, so powertcp taken fails insmod and leaves
#     nothing registered, and hpcc taken (the last one registered) does too,
#     unregistering powertcp and theta_powertcp again;
#   - insmod refuses a bad parameter, accepts good ones; all three names
#     (powertcp, theta_powertcp, hpcc) are in tcp_available_congestion_control;
#   - runtime parameters (hpcc_* too): every out-of-range value is refused
#     with EINVAL and the old value stays; a good value is taken; counters are
#     no parameter;
#   - a namespace selects powertcp by sysctl;
#   - iperf3 flows with powertcp and theta_powertcp over the namespace
#     dumbbell with the software INT switch (lumen int enable for request and
#     echo) complete; ss -ti shows the module's rate and tau; the
#     tracepoint fires;
#     INT reached the module (int_echoes, int_updates); an IPv6 flow reaches
#     the IPv6 hook (on loopback, so through the hook's own socket lookup);
#     with early demux off the hook still delivers INT (hook_lookup);
#     host_bw_mbps=0 takes the link speed (bw_detected);
#   - the LOCAL_IN hooks are registered only while a powertcp socket exists
#     (hooks 0 / 1);
#   - counters per namespace in /proc/net/powertcp, the flows of a namespace
#     and why INT was not used for them in /proc/net/powertcp_flows;
#   - the loss response: a shallow buffer without INT (a router namespace
#     with a 4-packet tbf) makes powertcp cut its window (loss_cuts) and
#     keeps its retransmissions bounded;
#   - an hpcc flow (iperf3 -C hpcc) beside the last powertcp one moves data,
#     is listed as hpcc in /proc/net/powertcp_flows with INT updates, shows
#     its rate and tau in ss -ti and mode=hpcc in the tracepoint;
#   - rmmod fails while a flow uses the module and succeeds after; every
#     per-socket state was freed; the kernel logged no warning.
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

e2e_require_kmod
rel="$(uname -r)"
ko="$E2E_KO"
e2e_require_bpf
e2e_require_tools iperf3 python3 ss modprobe insmod rmmod depmod jq

params=/sys/module/tcp_powertcp/parameters
tmp="$(mktemp -d)"
e2e_on_exit "rm -rf '$tmp'"
e2e_on_exit "rmmod tcp_powertcp"
dmesg_mark="kmod_test-$$-start"
echo "$dmesg_mark" >/dev/kmsg

loaded() { grep -q '^tcp_powertcp ' /proc/modules; }
available() { grep -qw "$1" /proc/sys/net/ipv4/tcp_available_congestion_control; }
available_all() { available powertcp && available theta_powertcp && available hpcc; }
# counters over every namespace (/proc/net/powertcp is per namespace)
stat_of() { e2e_kmod_stats | awk -v k="$1" '$1 == k { print $2 }'; }
# unload, waiting for sockets that still hold the module (FIN/TIME_WAIT)
unload() { e2e_rmmod; }
# py_cc NAME: a new socket, setsockopt(TCP_CONGESTION, NAME); prints the
# algorithm the socket ended up with, or "error ERRNO"
cat >"$tmp/cc.py" <<'PY'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
try:
    if len(sys.argv) > 1:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, sys.argv[1].encode())
except OSError as e:
    print(f"error {e.errno}")
    sys.exit(0)
print(s.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b"\0").decode())
PY
py_cc() { python3 "$tmp/cc.py" "$@"; }

# --- autoload by name ------------------------------------------------------
# request_module("tcp_<name>") runs kernel.modprobe: a wrapper that looks in
# a private tree holding only our module first, then in the system's.
modroot="$tmp/modroot"
mkdir -p "$modroot/lib/modules/$rel/extra"
cp "$ko" "$modroot/lib/modules/$rel/extra/"
depmod -b "$modroot" "$rel" 2>/dev/null
modprobe_before="$(cat /proc/sys/kernel/modprobe)"
cat >"$tmp/modprobe" <<EOF
#!/bin/sh
$modprobe_before -d '$modroot' "\$@" 2>/dev/null || exec $modprobe_before "\$@"
EOF
chmod 755 "$tmp/modprobe"
echo "$tmp/modprobe" >/proc/sys/kernel/modprobe
e2e_on_exit "echo '$modprobe_before' > /proc/sys/kernel/modprobe"

# The default of the initial namespace: other namespaces may only pick
# algorithms listed in tcp_allowed_congestion_control, which a module that
# is not loaded yet cannot be in.
cc_before="$(sysctl -n net.ipv4.tcp_congestion_control)"
e2e_on_exit "sysctl -qw net.ipv4.tcp_congestion_control='$cc_before'"
e2e_check "sysctl net.ipv4.tcp_congestion_control=powertcp autoloads the module" \
	sysctl -qw net.ipv4.tcp_congestion_control=powertcp
e2e_check "module loaded by the alias" loaded
e2e_check "default is powertcp" test "$(sysctl -n net.ipv4.tcp_congestion_control)" = powertcp
sysctl -qw net.ipv4.tcp_congestion_control="$cc_before"
e2e_check "rmmod after the default let go" unload
e2e_ns auto ns_auto
e2e_check "setsockopt(TCP_CONGESTION, theta_powertcp) autoloads the module" \
	test "$(ip netns exec "$ns_auto" python3 "$tmp/cc.py" theta_powertcp)" = theta_powertcp
e2e_check "module loaded by the theta alias" loaded
e2e_check "rmmod after the socket closed" unload
echo "$modprobe_before" >/proc/sys/kernel/modprobe

# --- names already taken -----------------------------------------------------
# A BPF struct_ops algorithm that takes a name first: insmod fails with
# nothing left registered, whether the name is the first the module registers
# (powertcp) or the last (hpcc: powertcp and theta_powertcp, registered
# before it, are unregistered again; see the module's "Module" comment).
# Needs clang and bpftool.
if command -v clang >/dev/null && command -v bpftool >/dev/null; then
	bpftool btf dump file /sys/kernel/btf/vmlinux format c >"$tmp/vmlinux.h"
	cat >"$tmp/dup.bpf.c" <<'BPF'
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
char LICENSE[] SEC("license") = "GPL";
SEC("struct_ops/dup_ssthresh")
__u32 BPF_PROG(dup_ssthresh, struct sock *sk) { return 2; }
SEC("struct_ops/dup_undo_cwnd")
__u32 BPF_PROG(dup_undo_cwnd, struct sock *sk) { return 2; }
SEC("struct_ops/dup_cong_avoid")
void BPF_PROG(dup_cong_avoid, struct sock *sk, __u32 ack, __u32 acked) { }
SEC(".struct_ops")
struct tcp_congestion_ops dup = {
	.ssthresh = (void *)dup_ssthresh,
	.undo_cwnd = (void *)dup_undo_cwnd,
	.cong_avoid = (void *)dup_cong_avoid,
	.name = DUP_NAME,
};
BPF
	# one clang run for both names (clang starts slowly in an emulated guest)
	for name in powertcp hpcc; do
		printf '#define DUP_NAME "%s"\n#include "dup.bpf.c"\n' "$name" >"$tmp/dup-$name.bpf.c"
	done
	(cd "$tmp" && clang -O2 -g -target bpf -I"$tmp" -c dup-powertcp.bpf.c dup-hpcc.bpf.c) || true
	# take NAME: a BPF algorithm registered under NAME (struct_ops map "dup")
	take() { [[ -f $tmp/dup-$1.bpf.o ]] && bpftool struct_ops register "$tmp/dup-$1.bpf.o" >/dev/null 2>&1; }
	release() { bpftool struct_ops unregister name dup >/dev/null 2>&1; }
	if take powertcp; then
		e2e_on_exit "bpftool struct_ops unregister name dup"
		e2e_check "a BPF algorithm holds the name powertcp" available powertcp
		e2e_check "insmod fails when powertcp is taken" bash -c "! insmod '$ko' 2>/dev/null"
		e2e_check "... registering nothing" bash -c '! grep -qw theta_powertcp /proc/sys/net/ipv4/tcp_available_congestion_control'
		e2e_check "module not loaded after the failed init" bash -c '! grep -q "^tcp_powertcp " /proc/modules'
		release
		e2e_check "the BPF algorithm is gone" bash -c '! grep -qw powertcp /proc/sys/net/ipv4/tcp_available_congestion_control'
	else
		e2e_skip_part "name-taken checks" "could not build or register a BPF struct_ops"
	fi
	if take hpcc; then
		e2e_check "insmod fails when hpcc (registered last) is taken" bash -c "! insmod '$ko' 2>/dev/null"
		e2e_check "... unregistering powertcp and theta_powertcp again" \
			bash -c '! grep -Eqw "powertcp|theta_powertcp" /proc/sys/net/ipv4/tcp_available_congestion_control'
		e2e_check "... module not loaded after the failed init" bash -c '! grep -q "^tcp_powertcp " /proc/modules'
		e2e_check "... and the log says why" bash -c "dmesg | grep -q 'cannot register hpcc .*registering none of'"
		e2e_check "... the BPF hpcc untouched" available hpcc
		release
		e2e_check "insmod after the name is free again" insmod "$ko"
		e2e_check "... all three registered" available_all
		e2e_check "rmmod" unload
	fi
else
	e2e_skip_part "name-taken checks" "clang or bpftool missing"
fi

# --- insmod and parameters -------------------------------------------------
e2e_check "insmod refuses gamma=5 (range [10, 1000])" bash -c "! insmod '$ko' gamma=5 2>/dev/null"
e2e_check "not loaded after the refused insmod" bash -c '! grep -q "^tcp_powertcp " /proc/modules'
# parameters that fit only as a set: insmod checks the set, not each one
# against the defaults in the order given (base_rtt_us=1000000 with the
# default 25 Gbit/s would pass the 1 GiB window limit)
e2e_check "insmod checks its parameters as a set" insmod "$ko" base_rtt_us=1000000 host_bw_mbps=1000
e2e_check "... both in force" bash -c "[[ \$(cat '$params/base_rtt_us') == 1000000 && \$(cat '$params/host_bw_mbps') == 1000 ]]"
unload
e2e_check "insmod refuses a set past the window limit" \
	bash -c "! insmod '$ko' host_bw_mbps=1600000 base_rtt_us=1000000 2>/dev/null"
e2e_check "... saying why" bash -c "dmesg | grep -q 'parameters refused as a set'"
e2e_check "not loaded after the refused set" bash -c '! grep -q "^tcp_powertcp " /proc/modules'
e2e_check "insmod with parameters" insmod "$ko" host_bw_mbps=1000 gamma=900 expected_flows=10 hpcc_eta=950 hpcc_max_stage=5
e2e_check "powertcp available" available powertcp
e2e_check "theta_powertcp available" available theta_powertcp
e2e_check "hpcc available" available hpcc
e2e_check "the module answers to tcp_hpcc (autoload alias)" bash -c "modinfo -F alias '$ko' | grep -qx tcp_hpcc"
e2e_check "host_bw_mbps reads 1000" test "$(cat $params/host_bw_mbps)" = 1000
e2e_check "no powertcp socket: no LOCAL_IN hooks (hooks $(stat_of hooks))" test "$(stat_of hooks)" = 0

# param_refused NAME VALUE: the write fails and the value stays
param_refused() {
	local name="$1" value="$2" before after
	before="$(cat "$params/$name")"
	if echo "$value" >"$params/$name" 2>/dev/null; then
		e2e_log "$name=$value was accepted"
		return 1
	fi
	after="$(cat "$params/$name")"
	[[ $after == "$before" ]] || {
		e2e_log "$name changed from $before to $after"
		return 1
	}
}
for bad in gamma=0 gamma=9 gamma=1001 gamma=abc gamma=-1 expected_flows=0 expected_flows=1000001 \
	base_rtt_us=1000001 host_bw_mbps=1600001 beta_bytes=1073741825 hpcc_eta=499 hpcc_eta=1001 \
	hpcc_max_stage=101 hpcc_wai_bytes=1073741825; do
	e2e_check "parameter $bad refused, old value kept" param_refused "${bad%%=*}" "${bad#*=}"
done
# a combination: 1.6 Tbit/s x 1 s exceeds the 1 GiB window limit
echo 1600000 >"$params/host_bw_mbps"
e2e_check "base_rtt_us=1000000 with host_bw_mbps=1600000 refused" param_refused base_rtt_us 1000000
echo 1000 >"$params/host_bw_mbps"
e2e_check "refusals are logged with the range" bash -c "dmesg | grep -q 'gamma: refused .1001.: must be \[10, 1000\] permille'"
e2e_check "hpcc's refusals with the core's text" \
	bash -c "dmesg | grep -q 'hpcc_max_stage: refused 101 (keeping 5): hpcc max_stage must be within \[0, 100\]'"
for good in hpcc_eta=500 hpcc_max_stage=0 hpcc_wai_bytes=1073741824; do
	echo "${good#*=}" >"$params/${good%%=*}" 2>/dev/null || true
	e2e_check "$good accepted at runtime" test "$(cat "$params/${good%%=*}")" = "${good#*=}"
done
echo 950 >"$params/hpcc_eta"
echo 5 >"$params/hpcc_max_stage"
echo 0 >"$params/hpcc_wai_bytes"
echo 800 >"$params/gamma"
e2e_check "gamma=800 accepted at runtime" test "$(cat $params/gamma)" = 800
echo 900 >"$params/gamma"
e2e_check "counters are not a module parameter" test ! -e "$params/stats"

# namespaces other than the initial one may select allowed algorithms only
allowed_before="$(cat /proc/sys/net/ipv4/tcp_allowed_congestion_control)"
e2e_on_exit "echo '$allowed_before' > /proc/sys/net/ipv4/tcp_allowed_congestion_control"
echo "$allowed_before powertcp theta_powertcp hpcc" >/proc/sys/net/ipv4/tcp_allowed_congestion_control
e2e_ns sel ns_sel
ip netns exec "$ns_sel" sysctl -qw net.ipv4.tcp_congestion_control=powertcp
e2e_check "a namespace selects powertcp by sysctl (new sockets use it)" \
	test "$(ip netns exec "$ns_sel" python3 "$tmp/cc.py")" = powertcp
e2e_check "setsockopt selects theta_powertcp" test "$(py_cc theta_powertcp)" = theta_powertcp
ip netns exec "$ns_sel" sysctl -qw net.ipv4.tcp_congestion_control=cubic

# --- flows over the INT dumbbell --------------------------------------------
cg="$(e2e_cgroup flows)"
"$LUMEN_BIN" int enable --cgroup "$cg"
e2e_on_exit "'$LUMEN_BIN' int disable"
rate="${LUMEN_KMOD_RATE:-100mbit}"
e2e_dumbbell 2 "$rate" 1m
rate_mbps="$("$LUMEN_BIN" switch stats --json | e2e_json "int(d['ports'][0]['rate_mbps'])")"
# tau: under load the stack adds far more than an idle ping shows, above all
# in an emulated VM; a tau below the real RTT caps the window (host BDP + beta)
ping_us="$(e2e_base_rtt_us)"
rtt_us="${LUMEN_KMOD_BASE_RTT_US:-$((ping_us * 4 < 1000 ? 1000 : ping_us * 4))}"
echo "$rate_mbps" >"$params/host_bw_mbps"
echo "$rtt_us" >"$params/base_rtt_us"
e2e_log "bottleneck $rate, ping RTT $ping_us us, tau $rtt_us us"

trace=/sys/kernel/tracing
[[ -d $trace/events ]] || trace=/sys/kernel/debug/tracing
if [[ -e $trace/events/powertcp/powertcp_ack/enable ]]; then
	echo >"$trace/trace"
	echo 1 >"$trace/events/powertcp/powertcp_ack/enable"
	e2e_on_exit "echo 0 > '$trace/events/powertcp/powertcp_ack/enable'"
fi

# run_flows ALGO SECONDS: one iperf3 flow per sender, concurrently; ss -tin
# of sender 0 is sampled in the middle into $tmp/ALGO.ss
run_flows() {
	local algo="$1" secs="$2"
	e2e_start_flows "$cg" "$algo" "$secs" "$tmp"
	# ss -ti of sender 0, sampled in the background while the flows run (an
	# emulated VM may take seconds for one ss call); $tmp/ALGO.ss is the last
	# sample that shows the module's info, else the last one that shows the
	# algorithm
	(
		for ((k = 0; ; k++)); do
			ip netns exec "${DB_SENDERS[0]}" ss -tin "dst $DB_RX_ADDR" >"$tmp/ss.$algo.$k" 2>&1 || true
			sleep 0.2
		done
	) &
	local sampler=$! rc=0 k f strong="" weak=""
	e2e_wait_flows || rc=1
	kill "$sampler" 2>/dev/null || true
	wait "$sampler" 2>/dev/null || true
	for ((k = 0; ; k++)); do
		f="$tmp/ss.$algo.$k"
		[[ -f $f ]] || break
		grep -q "$algo" "$f" && weak="$f"
		grep -q "$algo.*bbr:(bw:[1-9]" "$f" && strong="$f"
	done
	f="${strong:-$weak}"
	if [[ -n $f ]]; then cp "$f" "$tmp/$algo.ss"; else : >"$tmp/$algo.ss"; fi
	return $rc
}

secs="${LUMEN_KMOD_SECONDS:-4}"
tau_ms="$(awk -v u="$rtt_us" 'BEGIN { printf "%g", u / 1000 }')"
ip netns exec "${DB_SENDERS[0]}" ss -tin >/dev/null # load it once (9p, emulation)
for algo in powertcp theta_powertcp; do
	e2e_check "$algo: both flows complete" run_flows "$algo" "$secs"
	total=0
	for i in "${!DB_SENDERS[@]}"; do
		mbps="$(e2e_iperf_mbps "$tmp/$algo-$i.json" 2>/dev/null || echo 0)"
		e2e_log "$algo flow $i: $mbps Mbit/s"
		e2e_check "$algo flow $i moves data" test "$mbps" -ge 1
		total=$((total + mbps))
	done
	e2e_log "$algo total $total Mbit/s of $rate_mbps"
	sed 's/^/    /' "$tmp/$algo.ss"
	e2e_check "ss -ti names $algo" grep -q "$algo" "$tmp/$algo.ss"
	# rate and tau, with the meanings of ss's bbr fields (the module's get_info)
	e2e_check "ss -ti shows $algo's rate and tau (bbr:(bw:...,mrtt:$tau_ms,pacing_gain:1,cwnd_gain:1))" \
		grep -Eq "bbr:\(bw:[0-9.]+[kMG]?bps,mrtt:$tau_ms,pacing_gain:1,cwnd_gain:1" "$tmp/$algo.ss"
done

e2e_kmod_stats | sed 's/^/    /'
for c in flows acks int_echoes int_updates rtt_updates; do
	v="$(stat_of "$c")"
	e2e_check "counter $c > 0 ($v)" test "$v" -gt 0
done
for c in int_malformed no_state no_mem hash_fail hook_bad_csum bw_clamped; do
	v="$(stat_of "$c")"
	e2e_check "counter $c == 0 ($v)" test "$v" -eq 0
done
# the core's liveness counters are exported (their values depend on the run)
for c in int_unusable rtt_guard hook_unmatched hook_reordered hook_ahead int_superseded; do
	e2e_check "counter $c is exported ($(stat_of "$c"))" test -n "$(stat_of "$c")"
done
# Bulk senders (iperf3 inside sendmsg) leave ACKs in the socket backlog:
# the hook stores their echoes on arrival, so only the newest is kept (the
# others int_superseded), and it must reach its own ACK (int_taken), not be
# consumed by the first ACK of the batch (hook_unmatched): every echo is
# taken, superseded or unmatched, bar one pending per flow (an echo of a
# segment that arrived after a newer one, reordered between the guest's two
# CPUs' backlogs, is not stored: hook_reordered)
echo_accounting() { # echo_accounting TAG: the counters since the last call add up
	local e t u s pend
	e="$(stat_of int_echoes)" t="$(stat_of int_taken)" u="$(stat_of hook_unmatched)" s="$(stat_of int_superseded)"
	pend=$((e - t - u - s))
	e2e_log "$1: int_echoes $e: int_taken $t, int_superseded $s, hook_unmatched $u, pending $pend;" \
		"hook_ahead $(stat_of hook_ahead), hook_reordered $(stat_of hook_reordered)"
	((pend >= 0 && pend <= 8)) || return 1
	# unmatched: stored echoes that no ACK took as its own (from a segment
	# TCP dropped after the hook stored it: a full backlog, a failed check;
	# or left by a reordered or duplicated ACK): few, but not always 0 (CI
	# on 6.12 has seen 1-2), hence a bound of 1% of the echoes, not 0
	((u * 100 <= e)) || return 1
	((t > 0))
}
e2e_check "echoes of backlogged ACKs reach their own ACK" echo_accounting "bulk senders"
# int_flow NAME PORT SECONDS: a one-shot server on the receiver and a powertcp
# flow from sender 0, both in the INT cgroup; JSON in $tmp/NAME.json
int_flow() {
	e2e_in "$cg" "$DB_RX" iperf3 -s -1 -p "$2" -D
	sleep 0.5
	e2e_in "$cg" "${DB_SENDERS[0]}" iperf3 -c "$DB_RX_ADDR" -p "$2" -t "$3" -C powertcp -J >"$tmp/$1.json" 2>&1
}
# without TCP timestamps an echo is matched by its ack_seq alone
taken_before="$(stat_of int_taken)" gap_before="$(stat_of int_gap)"
ip netns exec "${DB_SENDERS[0]}" sysctl -qw net.ipv4.tcp_timestamps=0
e2e_check "powertcp flow without TCP timestamps completes" int_flow nots 5313 2
ip netns exec "${DB_SENDERS[0]}" sysctl -qw net.ipv4.tcp_timestamps=1
e2e_check "without timestamps: the echoes still add up" echo_accounting "no timestamps"
e2e_check "without timestamps: echoes taken ($taken_before -> $(stat_of int_taken))" \
	test "$(stat_of int_taken)" -gt "$taken_before"
# version 2 of the option (lumen int enable --wide): its 24-bit timestamp
# gives samples from echoes up to 126 ms apart, where version 1 re-baselines
# after 1.97 ms (int_gap), as an emulated guest's ACKs often are
gap_v1=$(($(stat_of int_gap) - gap_before)) taken_v1=$(($(stat_of int_taken) - taken_before))
"$LUMEN_BIN" int disable >/dev/null
"$LUMEN_BIN" int enable --cgroup "$cg" --wide >/dev/null
gap0="$(stat_of int_gap)" taken0="$(stat_of int_taken)" upd0="$(stat_of int_updates)"
e2e_check "powertcp flow with version 2 INT completes" int_flow wide 5314 2
gap_v2=$(($(stat_of int_gap) - gap0)) taken_v2=$(($(stat_of int_taken) - taken0))
upd_v2=$(($(stat_of int_updates) - upd0))
"$LUMEN_BIN" int disable >/dev/null
"$LUMEN_BIN" int enable --cgroup "$cg" >/dev/null
e2e_log "echoes lost to gaps: version 1 $gap_v1 of $taken_v1 taken, version 2 $gap_v2 of $taken_v2"
e2e_check "version 2: the module updated windows from its INT ($upd_v2)" test "$upd_v2" -gt 0
if ((gap_v1 * 20 >= taken_v1 && taken_v2 > 0)); then
	e2e_check "version 2: a smaller share of echoes lost to gaps than version 1" \
		test $((gap_v2 * taken_v1)) -lt $((gap_v1 * taken_v2))
else
	e2e_log "version 1 lost under 5 % of its echoes to gaps here: no gap share to compare"
fi
if [[ -e $trace/events/powertcp/powertcp_ack/enable ]]; then
	e2e_check "tracepoint powertcp_ack recorded INT updates" grep -q 'powertcp_ack:.*mode=int result=int hops=1' "$trace/trace"
	echo 0 >"$trace/events/powertcp/powertcp_ack/enable"
fi

# host_bw_mbps=0: HostBw from the output device's link speed (veth: 10000)
det_before="$(stat_of bw_detected)"
echo 0 >"$params/host_bw_mbps"
e2e_check "powertcp flow with host_bw_mbps=0 completes" int_flow autobw 5312 1
e2e_check "host bandwidth taken from the link speed ($det_before -> $(stat_of bw_detected))" \
	test "$(stat_of bw_detected)" -gt "$det_before"
# (link speed x tau over the window limit needs a link above 25 Gbit/s, the
# rate a configured tau is validated against: the rule is unit-tested,
# PowerTcpFitHostBw in powertcp_edge_test; veth's 10000 never clamps)
e2e_check "veth's speed fits: nothing counted as bw_clamped" test "$(stat_of bw_clamped)" -eq 0
echo "$rate_mbps" >"$params/host_bw_mbps"

# IPv6 reaches the IPv6 hook: loopback in a namespace of the INT cgroup
# (no switch, so the echoes carry no hops, but the hook stores them)
e2e_ns v6 ns6
echoes_before="$(stat_of int_echoes)" noint_before="$(stat_of no_int_flows)"
e2e_in "$cg" "$ns6" iperf3 -s -1 -p 5400 -D
sleep 0.5
v6_flow() { e2e_in "$cg" "$ns6" iperf3 -6 -c ::1 -p 5400 -t 1 -C powertcp -b 50M -J >"$tmp/v6.json" 2>&1; }
e2e_check "IPv6 flow with powertcp completes" v6_flow
e2e_check "IPv6 echoes reach the module (int_echoes $echoes_before -> $(stat_of int_echoes))" \
	test "$(stat_of int_echoes)" -gt "$echoes_before"
# ... without a hop (no switch): a flow without INT, which the module reports
e2e_check "a flow that never saw INT is counted (no_int_flows $noint_before -> $(stat_of no_int_flows))" \
	test "$(stat_of no_int_flows)" -gt "$noint_before"
e2e_check "... and named in the kernel log" bash -c "dmesg | grep -q 'powertcp flow .*: no INT echo after 16 RTTs'"

# early demux off: no skb->sk at LOCAL_IN, the hook looks the socket up
lookup_before="$(stat_of hook_lookup)"
echoes_before="$(stat_of int_echoes)"
ip netns exec "${DB_SENDERS[0]}" sysctl -qw net.ipv4.tcp_early_demux=0
e2e_check "powertcp flow with early demux off completes" int_flow nodemux 5310 2
ip netns exec "${DB_SENDERS[0]}" sysctl -qw net.ipv4.tcp_early_demux=1
e2e_check "early demux off: the hook looked the sockets up ($lookup_before -> $(stat_of hook_lookup))" \
	test "$(stat_of hook_lookup)" -gt "$lookup_before"
e2e_check "early demux off: INT still reaches the module ($echoes_before -> $(stat_of int_echoes))" \
	test "$(stat_of int_echoes)" -gt "$echoes_before"

# --- loss response: a shallow buffer, no INT ------------------------------------
# A -> R -> B with a 50 Mbit/s tbf of 4 packets on R: drops with almost no
# queue for the RTT to show. Outside the INT cgroup: no INT.
e2e_shallow_path ls 10.233 50mbit
echo 10000 >"$params/host_bw_mbps"
echo 1000 >"$params/base_rtt_us"
cuts_before="$(stat_of loss_cuts)"
ip netns exec "$SP_B" iperf3 -s -1 -p 5320 -D
e2e_wait_until 50 0.2 bash -c "ip netns exec '$SP_B' ss -Hltn 'sport = :5320' | grep -q ."
lossy_flow() { ip netns exec "$SP_A" iperf3 -c 10.233.2.1 -p 5320 -t 2 -C powertcp -J >"$tmp/lossy.json" 2>&1; }
e2e_check "powertcp flow through a shallow buffer completes" lossy_flow
e2e_check "powertcp cut its window on loss (loss_cuts $cuts_before -> $(stat_of loss_cuts))" \
	test "$(stat_of loss_cuts)" -gt "$cuts_before"
lossy_pct="$(jq -r '.end.sum_sent | (100 * .retransmits / ((.bytes + 1) / 1448)) | floor' "$tmp/lossy.json" 2>/dev/null || echo 999)"
e2e_log "shallow buffer: $(e2e_iperf_mbps "$tmp/lossy.json" 2>/dev/null || echo ?) Mbit/s, $lossy_pct retransmits per 100 segments"
e2e_check "... and its retransmissions stay bounded ($lossy_pct per 100 segments < 75)" test "$lossy_pct" -lt 75
echo "$rate_mbps" >"$params/host_bw_mbps"
echo "$rtt_us" >"$params/base_rtt_us"

# --- unload -----------------------------------------------------------------
# beside the powertcp flow, an hpcc flow from sender 1 (iperf3 -C hpcc, INT
# on), its ACKs traced: hpcc runs through the same INT hook and shows up in
# ss -ti, /proc/net/powertcp_flows and the tracepoint under its own name
if [[ -e $trace/events/powertcp/powertcp_ack/enable ]]; then
	echo >"$trace/trace"
	echo 1 >"$trace/events/powertcp/powertcp_ack/enable"
fi
e2e_in "$cg" "$DB_RX" iperf3 -s -1 -p 5315 -D
e2e_wait_until 50 0.1 bash -c "ip netns exec '$DB_RX' ss -Hltn 'sport = :5315' | grep -q ."
e2e_in "$cg" "${DB_SENDERS[1]}" iperf3 -c "$DB_RX_ADDR" -p 5315 -t 6 -C hpcc -J >"$tmp/hpcc.json" 2>&1 &
busy_hpcc=$!
# sampled once its data connection (iperf3's second) is established
e2e_wait_until 100 0.1 bash -c "(( \$(ip netns exec '${DB_SENDERS[1]}' ss -Htn state established 'dport = :5315' | grep -c .) >= 2 ))" || true
sleep 0.5
nsenter --net="/run/netns/${DB_SENDERS[1]}" cat /proc/net/powertcp_flows >"$tmp/flows.hpcc" 2>&1
ip netns exec "${DB_SENDERS[1]}" ss -tin "dport = :5315" >"$tmp/hpcc.ss" 2>&1 || true
int_flow busy 5311 4 &
busy=$!
# until the flow is established (its server starts first)
e2e_wait_until 100 0.1 bash -c "ip netns exec '${DB_SENDERS[0]}' ss -Htn state established 'dport = :5311' | grep -q ."
sleep 0.5
e2e_check "rmmod refused while a flow uses the module" bash -c '! rmmod tcp_powertcp 2>/dev/null'
# what /proc/net says while the flow runs: its namespace's flows and the
# root's; hooks is host-wide (every namespace's file says the same)
nsenter --net="/run/netns/${DB_SENDERS[0]}" cat /proc/net/powertcp_flows >"$tmp/flows" 2>&1
cat /proc/net/powertcp_flows >"$tmp/flows.root" 2>&1
hooks_busy="$(awk '$1 == "hooks" { print $2 }' /proc/net/powertcp)"
root_int_updates="$(awk '$1 == "int_updates" { print $2 }' /proc/net/powertcp)"
e2e_check "a powertcp socket: the LOCAL_IN hooks are registered (hooks $hooks_busy)" test "$hooks_busy" = 1
# per namespace: the flow is listed where it runs, with its INT use, and only there
sed 's/^/    /' "$tmp/flows"
busy_col() { # busy_col FILE PORT ALGO COLUMN: a busy flow's value (its data connection: most ACKs)
	awk -v p=":$2\$" -v a="$3" -v c="$4" 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
		$2 ~ p && $3 == a && $col["acks"] >= best { best = $col["acks"]; v = $col[c] }
		END { print v }' "$1"
}
flow_col() { busy_col "$tmp/flows" 5311 powertcp "$1"; }
hpcc_col() { busy_col "$tmp/flows.hpcc" 5315 hpcc "$1"; }
e2e_check "/proc/net/powertcp_flows lists the flow in its namespace ($(flow_col local))" test -n "$(flow_col local)"
e2e_check "... with its INT use ($(flow_col acks) ACKs: $(flow_col no_int) without INT, $(flow_col int_updates) INT updates)" \
	test "$(flow_col no_int)" -lt "$(flow_col acks)"
e2e_check "... and its window ($(flow_col cwnd_bytes) bytes)" test "$(flow_col cwnd_bytes)" -gt 0
e2e_check "... and not in another namespace's" bash -c "! grep -q ':5311 ' '$tmp/flows.root'"
e2e_check "counters are per namespace: the root namespace saw none of its ACKs ($root_int_updates)" \
	test "$root_int_updates" = 0

e2e_check "the flow survives the rmmod attempt" wait "$busy"
sed 's/^/    /' "$tmp/flows.hpcc" "$tmp/hpcc.ss"
e2e_check "/proc/net/powertcp_flows lists the hpcc flow as hpcc ($(hpcc_col local))" test -n "$(hpcc_col local)"
e2e_check "... fed with INT by the hook ($(hpcc_col acks) ACKs: $(hpcc_col no_int) without INT, $(hpcc_col int_updates) INT updates)" \
	test "$(hpcc_col int_updates)" -gt 0
e2e_check "... and its window ($(hpcc_col cwnd_bytes) bytes)" test "$(hpcc_col cwnd_bytes)" -gt 0
e2e_check "ss -ti shows hpcc's rate and tau (bbr:(bw:...,mrtt:$tau_ms,pacing_gain:1,cwnd_gain:1))" \
	grep -Eq "hpcc .*bbr:\(bw:[0-9.]+[kMG]?bps,mrtt:$tau_ms,pacing_gain:1,cwnd_gain:1" "$tmp/hpcc.ss"
e2e_check "the hpcc flow completes" wait "$busy_hpcc"
hpcc_mbps="$(e2e_iperf_mbps "$tmp/hpcc.json" 2>/dev/null || echo 0)"
e2e_check "... and moves data ($hpcc_mbps Mbit/s)" test "$hpcc_mbps" -ge 1
if [[ -e $trace/events/powertcp/powertcp_ack/enable ]]; then
	e2e_check "tracepoint powertcp_ack names hpcc's mode (mode=hpcc result=int)" \
		grep -q -m1 'powertcp_ack:.*mode=hpcc result=int' "$trace/trace"
	echo 0 >"$trace/events/powertcp/powertcp_ack/enable"
fi
for ((i = 0; i < 50; i++)); do
	[[ "$(stat_of states)" == 0 ]] && break
	sleep 0.2
done
e2e_check "every per-socket state freed (states $(stat_of states))" test "$(stat_of states)" = 0
# the last socket's hooks linger a second, then go
e2e_check "no powertcp socket left: the hooks are unregistered" \
	e2e_wait_until 50 0.2 bash -c "grep -qx 'hooks 0' /proc/net/powertcp"
e2e_check "none failed to register (hook_reg_fail $(stat_of hook_reg_fail))" test "$(stat_of hook_reg_fail)" = 0
e2e_check "rmmod" unload
e2e_check "module gone" bash -c '! grep -q "^tcp_powertcp " /proc/modules'
e2e_check "names gone" bash -c '! grep -Eqw "powertcp|theta_powertcp|hpcc" /proc/sys/net/ipv4/tcp_available_congestion_control'
e2e_kernel_log_since "$dmesg_mark" "$tmp/dmesg"
if grep -Eq 'WARNING|BUG|Oops|leak|refcount' "$tmp/dmesg"; then
	cat "$tmp/dmesg"
fi
e2e_check "no kernel warnings while testing" bash -c "! grep -Eq 'WARNING|BUG|Oops|leak|refcount' '$tmp/dmesg'"
e2e_finish
