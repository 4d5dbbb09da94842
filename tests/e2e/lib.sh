# shellcheck shell=bash
# tests/e2e/lib.sh - shared helpers for lumen's root-only end-to-end tests.
#
# Each test is tests/e2e/<name>_test.sh, run by CTest with LUMEN_BIN set to
# the built `lumen` binary. Exit 77 = skipped (reason printed), 0 = passed.
# Everything a test creates (namespaces, cgroups, pinned BPF state, sysctl
# changes) is registered here and removed on exit, also on failure.
set -euo pipefail

LUMEN_BIN="${LUMEN_BIN:?set LUMEN_BIN to the lumen binary}"
E2E_TAG="lm$$"
E2E_NETNS=()
E2E_CGROUPS=()
E2E_CLEANUP=() # extra commands, run last-in first-out
E2E_PASSED=0
E2E_FAILED=0

e2e_log() { printf '[%s] %s\n' "$(basename "$0" .sh)" "$*"; }
# A command outside a check that fails ends the suite (set -e) before its
# count is printed: say where, so the log shows more than a bare exit 1.
trap 'e2e_log "FAIL: stopped at line $LINENO: $BASH_COMMAND (exit $?)"' ERR

# Skips. A suite that cannot run here says why in one line "SKIP: REASON"
# and exits 77 (e2e_skip); a part of a suite that cannot run says "SKIP:
# PART: REASON" and the suite goes on (e2e_skip_part). tools/test collects
# every such line from every test's output and, run as root (CI), fails
# unless the skip is on tests/allowed-skips, the list of skips the CI
# machine cannot avoid; in a VM suite (run_in_vm.sh, kmod_vm.sh) a skipped
# suite is a failure.
e2e_skip() {
	e2e_log "SKIP: $*"
	exit 77
}

e2e_skip_part() { # e2e_skip_part PART REASON
	e2e_log "SKIP: $1: $2"
}

# e2e_host_part PART: whether this run checks PART of its suite. Always on
# the host; not in the VM suites (run_in_vm.sh sets LUMEN_E2E_HOST_PARTS=0),
# for parts that check only lumen's userspace (argument checks, its own
# locks) or BPF logic whose outcome no kernel version changes: the same
# suite's run on the host checks them, and under emulation each step costs
# ~30 times as much. Says what it leaves out (not a SKIP: nothing is
# untested). LUMEN_E2E_HOST_PARTS=1 runs everything in a guest too.
e2e_host_part() {
	[[ ${LUMEN_E2E_HOST_PARTS:-1} == 0 ]] || return 0
	e2e_log "not in this guest: $1 (the host's run of this suite checks it)"
	return 1
}

# e2e_require_tools TOOL...: skip, naming the first missing tool, unless every
# one is on PATH (tools/install-deps installs them all).
e2e_require_tools() {
	local tool
	for tool in "$@"; do
		command -v "$tool" >/dev/null || e2e_skip "$tool missing (tools/install-deps)"
	done
}

# Root, bpffs, cgroup2 and BTF are needed by every BPF test.
e2e_require_bpf() {
	[[ $EUID -eq 0 ]] || e2e_skip "needs root"
	[[ -r /sys/kernel/btf/vmlinux ]] || e2e_skip "kernel has no BTF"
	e2e_cgroup2_root >/dev/null || e2e_skip "no cgroup v2 hierarchy mounted"
	command -v ip >/dev/null || e2e_skip "iproute2 missing"
}

# e2e_require_fq: skips unless this kernel has sch_fq (the optical gate's
# EDT qdisc; Debian's kernels in the VMs have it, the host may not)
e2e_require_fq() {
	local ns="fqprobe$$" ok=0
	ip netns add "$ns"
	ip -n "$ns" link add fq0 type veth peer name fq1
	ip netns exec "$ns" tc qdisc add dev fq0 root fq 2>/dev/null && ok=1
	ip netns del "$ns"
	((ok)) || e2e_skip "this kernel has no sch_fq (the optical gate's EDT qdisc): run in the VM suites (tests/e2e/run_in_vm.sh)"
}

# e2e_require_kmod: skips unless this kernel can load tcp_powertcp and the
# module built for exactly it exists (LUMEN_KMOD, or build/kmod-X.Y); sets
# E2E_KO to its path
e2e_require_kmod() {
	local root rel
	root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
	rel="$(uname -r)"
	[[ $EUID -eq 0 ]] || e2e_skip "needs root"
	[[ -e /proc/modules ]] || e2e_skip "kernel $rel cannot load modules (/proc/modules missing)"
	[[ "$(cat /proc/sys/kernel/modules_disabled 2>/dev/null || echo 0)" == 0 ]] ||
		e2e_skip "module loading is disabled (kernel.modules_disabled=1)"
	E2E_KO="${LUMEN_KMOD:-$root/build/kmod-$(echo "$rel" | cut -d. -f1,2)/tcp_powertcp.ko}"
	[[ -f $E2E_KO ]] || e2e_skip "no module at $E2E_KO (build it: tools/kmod-build --kernel $(echo "$rel" | cut -d. -f1,2))"
	local vermagic
	vermagic="$(modinfo -F vermagic "$E2E_KO" | awk '{ print $1 }')"
	[[ $vermagic == "$rel" ]] || e2e_skip "$E2E_KO is built for $vermagic, this kernel is $rel"
	grep -q '^tcp_powertcp ' /proc/modules && e2e_skip "tcp_powertcp is already loaded"
	return 0
}

# e2e_require_free cc|int: skip when the eBPF PowerTCP (cc) or INT sockops
# (int) is already in use by somebody else: the test loads its own.
e2e_require_free() {
	local what status
	for what in "$@"; do
		status="$("$LUMEN_BIN" "$what" status 2>&1 || true)"
		case "$what" in
		cc) [[ "$status" == *"not loaded"* ]] ||
			e2e_skip "the PowerTCP struct_ops is loaded by someone else (lumen cc status)" ;;
		int) [[ "$status" == *"not enabled"* ]] ||
			e2e_skip "INT sockops is enabled by someone else (lumen int status)" ;;
		esac
	done
}

# e2e_fails STATUS PATTERN command...: command exits with STATUS (any: not
# 0) and its stderr matches the extended regex PATTERN (case-insensitive).
e2e_fails() {
	local want="$1" pattern="$2" rc=0 err
	shift 2
	err="$("$@" 2>&1 >/dev/null)" || rc=$?
	if [[ $want == any && $rc -eq 0 ]] || [[ $want != any && $rc -ne $want ]]; then
		e2e_log "  exit status $rc, wanted $want: $*: $err"
		return 1
	fi
	if ! grep -qiE -- "$pattern" <<<"$err"; then
		e2e_log "  message does not match /$pattern/: $err"
		return 1
	fi
}

# e2e_wait_until TRIES SECONDS command...: runs command every SECONDS until
# it succeeds (0) or TRIES attempts failed (1).
e2e_wait_until() {
	local tries="$1" pause="$2" i
	shift 2
	for ((i = 0; i < tries; i++)); do
		"$@" 2>/dev/null && return 0
		sleep "$pause"
	done
	return 1
}

# e2e_software_emulated: true in a guest of a CPU emulator (QEMU's TCG, as
# tools/vm-run boots without KVM), where packet processing costs tens of
# times more than on hardware and timers fire late: such a guest's CPU,
# not a 100 Mbit/s link, can be the bottleneck.
e2e_software_emulated() { [[ "$(systemd-detect-virt --vm 2>/dev/null)" == qemu ]]; }

# e2e_kernel_log_since MARK FILE: the kernel log after the line MARK into
# FILE, less what a software emulator alone causes: a WARNING in
# exc_debug_kernel, a single-step trap in kernel mode (EFLAGS.TF set), which
# nothing in the kernel or lumen sets and QEMU's TCG has been seen to raise
# (in kmem_cache_alloc under tcp_recvmsg). Such a block is dropped, and said
# so, only in an emulated guest; every other line stays for the caller's
# check.
e2e_kernel_log_since() {
	local mark="$1" out="$2"
	dmesg | sed -n "/$mark/,\$p" >"$out"
	if e2e_software_emulated && grep -q 'WARNING: .* exc_debug_kernel' "$out"; then
		e2e_log "ignoring a single-step trap in kernel mode (an emulation artifact, not lumen's):"
		grep 'WARNING: .* exc_debug_kernel' "$out" | sed 's/^/    /'
		awk '/-+\[ cut here \]-+/ { held = $0; next }
		     held != "" && /WARNING: .* exc_debug_kernel/ { skip = 1; held = ""; next }
		     held != "" { print held; held = "" }
		     skip && /---\[ end trace/ { skip = 0; next }
		     !skip' "$out" >"$out.kept"
		mv "$out.kept" "$out"
	fi
}

# e2e_kmod_stats: tcp_powertcp's counters ("name value" lines) summed over
# the root namespace and every named one (/proc/net/powertcp is per
# namespace; one process reads them all: cheap in an emulated guest too)
e2e_kmod_stats() { "$LUMEN_BIN" host kmod-stats --all-netns; }

# e2e_rmmod: rmmod tcp_powertcp, retrying for 10 s while closing sockets
# still hold it
e2e_rmmod() {
	local i
	for ((i = 0; i < 50; i++)); do
		rmmod tcp_powertcp 2>/dev/null && return 0
		sleep 0.2
	done
	rmmod tcp_powertcp
}

e2e_cgroup2_root() {
	local m
	m="$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)"
	[[ -n "$m" ]] || return 1
	echo "$m"
}

e2e_check() { # e2e_check "description" command... (returns 0 either way: the suite goes on)
	local what="$1"
	shift
	if "$@"; then
		E2E_PASSED=$((E2E_PASSED + 1))
		e2e_log "ok: $what"
	else
		E2E_FAILED=$((E2E_FAILED + 1))
		e2e_log "FAIL: $what"
	fi
}

e2e_on_exit() { E2E_CLEANUP+=("$*"); }

e2e_cleanup() {
	local rc=$?
	set +e
	local i
	for ((i = ${#E2E_CLEANUP[@]} - 1; i >= 0; i--)); do
		eval "${E2E_CLEANUP[$i]}" >/dev/null 2>&1
	done
	# by tag, not by the arrays: e2e_cgroup usually runs in a $(...)
	# subshell, whose array updates the parent never sees
	for ns in $(ip netns list 2>/dev/null | awk -v t="$E2E_TAG-" 'index($1, t) == 1 { print $1 }'); do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done
	local cgroot
	cgroot="$(e2e_cgroup2_root)"
	for cg in "$cgroot/$E2E_TAG-"*; do
		[[ -d "$cg" ]] || continue
		while read -r pid; do kill -9 "$pid" 2>/dev/null; done <"$cg/cgroup.procs"
		sleep 0.1
		rmdir "$cg" 2>/dev/null
	done
	exit "$rc"
}
trap e2e_cleanup EXIT
trap 'exit 130' INT TERM

# e2e_ns NAME VAR: creates namespace "$E2E_TAG-NAME" with lo up, removed at
# exit, and sets VAR to its name. (Not a command substitution: its subshell
# would lose the record, and the namespace would outlive the test.)
e2e_ns() {
	local _ns="$E2E_TAG-$1"
	ip netns add "$_ns"
	E2E_NETNS+=("$_ns")
	ip -n "$_ns" link set lo up
	printf -v "$2" '%s' "$_ns"
}

# e2e_ns_pair NAME1 VAR1 DEV1 NAME2 VAR2 DEV2: two namespaces (e2e_ns)
# joined by a veth pair DEV1 - DEV2 (e2e_link).
e2e_ns_pair() {
	e2e_ns "$1" "$2"
	e2e_ns "$4" "$5"
	e2e_link "${!2}" "$3" "${!5}" "$6"
}

# e2e_link NS1 DEV1 NS2 DEV2: a veth pair, up, with offloads off so packets
# are MTU-sized and checksums are computed in software.
e2e_link() {
	local ns1="$1" dev1="$2" ns2="$3" dev2="$4"
	ip link add "$dev1" netns "$ns1" type veth peer name "$dev2" netns "$ns2"
	for side in "$ns1 $dev1" "$ns2 $dev2"; do
		set -- $side
		ip netns exec "$1" ethtool -K "$2" tso off gso off gro off tx off rx off >/dev/null 2>&1 || true
		ip -n "$1" link set "$2" up
	done
}

# e2e_shallow_path PREFIX NET RATE: namespaces PREFIX-a -> PREFIX-r -> PREFIX-b
# (e2e_ns; names in SP_A, SP_R, SP_B), A at NET.1.1, B at NET.2.1 (NET: two
# octets), R forwarding, with a tbf of RATE and a 4-packet buffer (burst 30000,
# limit 6000 bytes) on R towards B: a bottleneck that drops with almost no
# queue, as a policer or a shallow buffer does.
e2e_shallow_path() {
	local pre="$1" net="$2" rate="$3"
	e2e_ns "$pre-a" SP_A
	e2e_ns "$pre-r" SP_R
	e2e_ns "$pre-b" SP_B
	e2e_link "$SP_A" "$pre-0" "$SP_R" "$pre-1"
	e2e_link "$SP_R" "$pre-2" "$SP_B" "$pre-3"
	ip -n "$SP_A" addr add "$net.1.1/24" dev "$pre-0"
	ip -n "$SP_R" addr add "$net.1.2/24" dev "$pre-1"
	ip -n "$SP_R" addr add "$net.2.2/24" dev "$pre-2"
	ip -n "$SP_B" addr add "$net.2.1/24" dev "$pre-3"
	ip -n "$SP_A" route add default via "$net.1.2"
	ip -n "$SP_B" route add default via "$net.2.2"
	ip netns exec "$SP_R" sysctl -qw net.ipv4.ip_forward=1
	tc -n "$SP_R" qdisc add dev "$pre-2" root tbf rate "$rate" burst 30000 limit 6000
}

# e2e_cgroup NAME -> creates a cgroup v2 group; prints its path
e2e_cgroup() {
	local cg
	cg="$(e2e_cgroup2_root)/$E2E_TAG-$1"
	mkdir -p "$cg"
	E2E_CGROUPS+=("$cg")
	echo "$cg"
}

# e2e_in CGROUP NS command...: run a command inside a cgroup and a namespace
e2e_in() {
	local cg="$1" ns="$2"
	shift 2
	sh -c 'echo $$ > "$1/cgroup.procs"; shift 2; exec ip netns exec "$0" "$@"' "$ns" "$cg" _ "$@"
}

# Print the summary line CI reads, and exit accordingly.
e2e_finish() {
	echo "$E2E_PASSED passed, $E2E_FAILED failed"
	[[ $E2E_FAILED -eq 0 ]]
}

# ---------------------------------------------------------------------------
# Dumbbell: N senders -> switch namespace -> receiver, the bottleneck being the
# switch's egress towards the receiver, with the software INT switch on it.
#
#   e2e_dumbbell N RATE BUFFER [ECN_THRESHOLD]
#
# Sets DB_SENDERS (array of namespaces), DB_SW, DB_RX, DB_RX_ADDR, and
# registers cleanup (switch detach). Senders are 10.99.<i>.1, the receiver
# 10.99.200.2; sw forwards between them.
e2e_dumbbell() {
	local n="$1" rate="$2" buffer="$3" ecn="${4:-}"
	e2e_ns_pair sw DB_SW swr rx DB_RX rx0
	DB_SENDERS=()
	DB_RX_ADDR=10.99.200.2
	ip netns exec "$DB_SW" sysctl -qw net.ipv4.ip_forward=1
	ip -n "$DB_SW" addr add 10.99.200.1/24 dev swr
	ip -n "$DB_RX" addr add "$DB_RX_ADDR/24" dev rx0
	ip -n "$DB_RX" route add default via 10.99.200.1
	local i s
	for ((i = 1; i <= n; i++)); do
		e2e_ns "s$i" s
		DB_SENDERS+=("$s")
		e2e_link "$s" eth0 "$DB_SW" "sws$i"
		ip -n "$s" addr add "10.99.$i.1/24" dev eth0
		ip -n "$DB_SW" addr add "10.99.$i.254/24" dev "sws$i"
		ip -n "$s" route add default via "10.99.$i.254"
	done
	local extra=()
	[[ -n "$ecn" ]] && extra=(--ecn-threshold "$ecn")
	"$LUMEN_BIN" switch attach swr --netns "$DB_SW" --peer rx0 --peer-netns "$DB_RX" --rate "$rate" \
		--buffer "$buffer" "${extra[@]}"
	e2e_on_exit "'$LUMEN_BIN' switch detach swr --netns '$DB_SW'"
}

# Base RTT sender 1 -> receiver in microseconds (minimum of a few pings).
e2e_base_rtt_us() {
	ip netns exec "${DB_SENDERS[0]}" ping -c 5 -i 0.2 -q "$DB_RX_ADDR" |
		awk -F' = ' '/^rtt/ { split($2, a, "/"); printf "%d\n", a[1] * 1000 }'
}

# e2e_json EXPR: evaluate a Python expression over the JSON document on
# stdin, bound to `d` (e.g. `lumen int status --json | e2e_json 'd["counters"]["req_written"]'`).
e2e_json() {
	python3 -c 'import json, sys; d = json.load(sys.stdin); print(eval(sys.argv[1], {"d": d}))' "$1"
}

# The rotor switch's counters over one section of a test: a violation rate
# divides the section's violations by the section's frames, never by every
# frame since the testbed came up.
#   e2e_rotor_snap FILE               the counters now (lumen rotor stats --json)
#   e2e_rotor_since FILE [PORT...]    since that snapshot, over the given
#                                     ports (uplink * nodes + node; default
#                                     all): "forwarded guard wrong_slot late"
#   e2e_rotor_gated SECTION FILE      the checks for gated senders since
#                                     FILE: no frame booked into a guard or a
#                                     wrong slot, and at most 10 % late
#
# The kernel gate stamps every frame with its departure, and the rotor
# tells a frame that left inside its window and arrived after it (late: its
# host released it late) from one booked wrong. Late frames are the
# emulated guest's: fq's timer or the veth's softirq held past the window
# by a stalled vCPU (delays of 20-330 ms measured, against margins of 10
# ms). Measured per section on 6.1 and 6.12: 0-0.1 % of the frames when
# the guest had the host to itself and its senders were not saturated,
# 0.2-0.5 % with one other busy process on the host, 2-5 % with both host
# cores building or in the all-to-all section at saturation (every window
# full to its end, so a stall near its end makes the rest late: 4.4 % in
# CI's 6.1 guest). The bound is twice the worst measured: a gate that
# booked wrong fails on one frame, one that released late as a rule (a
# stamp the qdisc ignores, a clock off by a slot) on most of them.
e2e_rotor_snap() { "$LUMEN_BIN" rotor stats --json >"$1"; }
e2e_rotor_since() {
	local before="$1"
	shift
	"$LUMEN_BIN" rotor stats --json | python3 -c '
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(sys.stdin)
ports = [int(p) for p in sys.argv[2:]] or range(len(b["ports"]))
keys = ["forwarded", "guard", "wrong_slot", "late"]
print(" ".join(str(sum(b["ports"][p][k] - a["ports"][p][k] for p in ports)) for k in keys))' "$before" "$@"
}
e2e_rotor_gated() {
	local fwd guard wrong late
	read -r fwd guard wrong late <<<"$(e2e_rotor_since "$2")"
	e2e_log "  $1: forwarded $fwd, guard $guard, wrong slot $wrong, late $late"
	e2e_check "$1: no frame booked into a guard or a wrong slot" test $((guard + wrong)) -eq 0
	e2e_check "$1: late releases ($late) at most 10 % of the section's frames" test $((late * 10)) -le $((fwd + late))
}

# Mbit/s an iperf3 -J client result file reports as received.
e2e_iperf_mbps() {
	e2e_json 'int(d["end"]["sum_received"]["bits_per_second"] / 1e6)' <"$1"
}

# e2e_start_flows CGROUP ALGO SECONDS OUTDIR: on the dumbbell, one iperf3 flow
# per sender to the receiver (ports 5301, 5302, ...), all at once, inside
# CGROUP; ALGO empty = the namespace's default. Client results (-J) go to
# OUTDIR/ALGO-<sender index>.json; the client pids to E2E_FLOW_PIDS. Call it
# directly, not in $(...).
e2e_start_flows() {
	local cg="$1" algo="$2" secs="$3" out="$4" i cc=()
	[[ -n "$algo" ]] && cc=(-C "$algo")
	for i in "${!DB_SENDERS[@]}"; do
		e2e_in "$cg" "$DB_RX" iperf3 -s -1 -p $((5301 + i)) -D
	done
	sleep 0.5
	E2E_FLOW_PIDS=()
	for i in "${!DB_SENDERS[@]}"; do
		e2e_in "$cg" "${DB_SENDERS[$i]}" iperf3 -c "$DB_RX_ADDR" -p $((5301 + i)) -t "$secs" "${cc[@]}" -J \
			>"$out/$algo-$i.json" 2>&1 &
		E2E_FLOW_PIDS+=($!)
	done
}

# e2e_wait_flows: waits for the flows of e2e_start_flows; fails if any failed.
e2e_wait_flows() {
	local p rc=0
	for p in "${E2E_FLOW_PIDS[@]}"; do wait "$p" || rc=1; done
	return $rc
}
