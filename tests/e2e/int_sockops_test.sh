#!/usr/bin/env bash
# tests/e2e/int_sockops_test.sh - `lumen int` end to end: the INT sockops
# program on a cgroup, iperf3 over a veth between two namespaces (IPv4 and
# IPv6), counters on both ends, the option on the wire (AF_PACKET capture in
# python3), malformed echoes injected on the wire, family and port filters,
# and a clean disable. python3 is a dependency (tools/install-deps): without
# it the test fails rather than leaving the wire checks out.
# There is no INT switch on the path, so echoes carry 0 filled hops.
source "$(dirname "$0")/lib.sh"

e2e_require_bpf
command -v iperf3 >/dev/null || e2e_skip "iperf3 missing"
command -v bpftool >/dev/null || e2e_skip "bpftool missing"
if ! command -v python3 >/dev/null; then
	e2e_log "FAIL: python3 missing: the wire checks and the malformed-INT injection need it (tools/install-deps)"
	exit 1
fi
L="$LUMEN_BIN"
PIN=/sys/fs/bpf/lumen
PORT=5201
SLOTS_DEFAULT=3

if [[ -e $PIN/int_sockops_link || -e $PIN/int_sockops_prog ]]; then
	e2e_skip "INT sockops is already enabled on this host (another test or user); not touching it"
fi
e2e_on_exit "'$L' int disable"

# --- helpers -----------------------------------------------------------

# expect_fail STATUS PATTERN command...: fails with STATUS, stderr matches
expect_fail() { e2e_fails "$@"; }

# json_get JSON NAME -> the number after "NAME": in lumen's --json output
json_get() {
	grep -oE "\"$2\": [0-9]+" <<<"$1" | head -n1 | awk '{print $2}'
}

snap() { "$L" int status --json; }

# delta BEFORE AFTER NAME
delta() {
	echo $(($(json_get "$2" "$3") - $(json_get "$1" "$3")))
}

int_pins() { # pins of this part still present
	local p
	for p in int_sockops_link int_sockops_prog lumen_int_cfg lumen_int_stats; do
		[[ -e $PIN/$p ]] && echo "$p"
	done
	return 0
}

cc_loaded() {
	compgen -G "$PIN/cc_*" >/dev/null || compgen -G "$PIN/lumen_cc_*" >/dev/null
}

cgroup_has_sockops() {
	bpftool cgroup show "$CG" 2>/dev/null | grep -qE 'sock_ops|sockops'
}

wait_listen() { # wait_listen NS PORT
	local i
	for ((i = 0; i < 50; i++)); do
		[[ -n "$(ip netns exec "$1" ss -Hltn "sport = :$2" 2>/dev/null)" ]] && return 0
		sleep 0.1
	done
	e2e_log "iperf3 server did not start"
	return 1
}

# run_iperf ADDR [CAPTURE_OUT [INJECT_OUT]]: one 2 s iperf3 run from the
# client to the server namespace, both inside the cgroup; optionally captures
# the server side's packets meanwhile, and replays one of the server's echo
# ACKs with a corrupted option towards the client.
run_iperf() {
	local addr="$1" cap_out="${2:-}" inj_out="${3:-}" cap_pid="" inj_pid=""
	e2e_in "$CG" "$NS_S" iperf3 -s -p "$PORT" -1 >/dev/null 2>&1 &
	local srv=$!
	wait_listen "$NS_S" "$PORT" || return 1
	if [[ -n $cap_out ]]; then
		ip netns exec "$NS_S" python3 "$WIRE" capture vs "$PORT" 4 3000 >"$cap_out" 2>&1 &
		cap_pid=$!
	fi
	if [[ -n $inj_out ]]; then
		ip netns exec "$NS_S" python3 "$WIRE" replay-bad-version vs "$PORT" 4 5 >"$inj_out" 2>&1 &
		inj_pid=$!
	fi
	[[ -n $cap_pid$inj_pid ]] && sleep 0.3
	if ! e2e_in "$CG" "$NS_C" iperf3 -c "$addr" -p "$PORT" -t 2 >"$TMP/iperf.log" 2>&1; then
		e2e_log "iperf3 client failed: $(tail -n 3 "$TMP/iperf.log")"
		kill "$srv" 2>/dev/null
		return 1
	fi
	wait "$srv" 2>/dev/null || true
	[[ -n $cap_pid ]] && wait "$cap_pid"
	[[ -n $inj_pid ]] && wait "$inj_pid"
	return 0
}

# cap_get FILE KEY -> value of KEY=... in the capture summary
cap_get() {
	tr ' ' '\n' <"$1" | awk -F= -v k="$2" '$1 == k { print $2 }'
}

# check_wire FILE SLOTS: the option is on the wire, as designed
check_wire() {
	local f="$1" slots="$2" data data_req req echo ack_echo
	e2e_log "  capture: $(cat "$f")"
	data=$(cap_get "$f" data) data_req=$(cap_get "$f" data_req) req=$(cap_get "$f" req)
	echo=$(cap_get "$f" echo) ack_echo=$(cap_get "$f" ack_echo)
	[[ -n $data && $data -gt 100 ]] || return 1
	# every data segment carries a request (no SACK pressure on this path)
	((data_req * 100 >= data * 99)) || return 1
	# requests ride on data segments only, echoes on pure ACKs only
	[[ $req -eq $data_req && $echo -gt 0 && $echo -eq $ack_echo ]] || return 1
	# request length 5 + 7 * slots; echo with 0 filled hops = 5 bytes
	[[ $(cap_get "$f" req_len) == "$((5 + 7 * slots))" && $(cap_get "$f" echo_len) == 5 ]] || return 1
	[[ $(cap_get "$f" bad) -eq 0 ]] || return 1
	# MSS accounts for the option: no IP packet above the 1500-byte MTU
	[[ $(cap_get "$f" max_ip_len) -le 1500 ]]
}

# --- setup --------------------------------------------------------------

TMP="$(mktemp -d)"
e2e_on_exit "rm -rf '$TMP'"
e2e_ns_pair cli NS_C vc srv NS_S vs
ip -n "$NS_C" addr add 10.201.0.1/24 dev vc
ip -n "$NS_S" addr add 10.201.0.2/24 dev vs
ip -n "$NS_C" addr add fd00:201::1/64 dev vc nodad
ip -n "$NS_S" addr add fd00:201::2/64 dev vs nodad
e2e_cgroup int >/dev/null
CG="$(e2e_cgroup2_root)/$E2E_TAG-int"

# the wire as int_sockops sees it: capture, and replay with a bad version
WIRE="$(cd "$(dirname "$0")" && pwd)/int_wire.py"

# --- command-line validation: clear errors, nothing left behind ----------

e2e_check "enable without --cgroup is a usage error" expect_fail 2 "--cgroup" "$L" int enable
e2e_check "missing cgroup is refused" expect_fail 1 "does not exist" "$L" int enable --cgroup "$CG-missing"
e2e_check "a non-cgroup2 directory is refused" expect_fail 1 "not a cgroup v2" "$L" int enable --cgroup "$TMP"
e2e_check "--slots 0 is refused" expect_fail 2 "slots" "$L" int enable --cgroup "$CG" --slots 0
e2e_check "--slots 6 is refused" expect_fail 2 "slots" "$L" int enable --cgroup "$CG" --slots 6
e2e_check "more than 8 ports are refused" expect_fail 2 "too many ports" \
	"$L" int enable --cgroup "$CG" --port 1 --port 2 --port 3 --port 4 --port 5 --port 6,7,8,9
e2e_check "port 0 is refused" expect_fail 2 "port" "$L" int enable --cgroup "$CG" --port 0
e2e_check "port 70000 is refused" expect_fail 2 "port" "$L" int enable --cgroup "$CG" --port 70000
e2e_check "--ipv4 with --ipv6 is refused" expect_fail 2 "exclude" "$L" int enable --cgroup "$CG" --ipv4 --ipv6
e2e_check "unknown options are refused" expect_fail 2 "unknown option" "$L" int enable --cgroup "$CG" --bogus 1
e2e_check "unknown subcommand is refused" expect_fail 2 "unknown subcommand" "$L" int frobnicate
e2e_check "failed enables leave nothing pinned" test -z "$(int_pins)"
e2e_check "failed enables attach nothing" bash -c "! bpftool cgroup show '$CG' | grep -qE 'sock_?ops'"
e2e_check "int --help documents the subcommands" bash -c \
	"'$L' int --help | grep -q 'enable --cgroup' && '$L' int --help | grep -q 'disable' && '$L' int --help | grep -q 'status'"

# --- enable, IPv4 and IPv6 traffic --------------------------------------

e2e_check "enable" "$L" int enable --cgroup "$CG"
e2e_check "a second enable says already enabled" expect_fail 1 "already enabled" "$L" int enable --cgroup "$CG"
e2e_check "the cgroup has the sockops program" cgroup_has_sockops
S0="$(snap)"
e2e_check "status reports attached to the cgroup" bash -c \
	"grep -q '\"attached\": true' <<<'$S0' && grep -qF '\"cgroup\": \"$CG\"' <<<'$S0'"
e2e_check "status shows the default config" bash -c "grep -q '\"slots\": $SLOTS_DEFAULT' <<<'$S0'"

# family_round FAMILY ADDR: one iperf3 run over FAMILY, checked by counters
# (deltas since the last round) and on the wire
family_round() {
	local fam="$1" addr="$2" before="$S" cap="$TMP/cap-$1"
	run_iperf "$addr" "$cap" || true
	S="$(snap)"
	e2e_log "$fam counters: $S"
	e2e_check "$fam: flows enabled on both ends (2 connections x 2)" test "$(delta "$before" "$S" flows)" -eq 4
	local c
	for c in "req_written requests written (sender)" "req_parsed requests parsed (receiver)" \
		"echo_written echoes written (receiver)" "echo_parsed echoes parsed (sender)"; do
		e2e_check "$fam: ${c#* }" test "$(delta "$before" "$S" "${c%% *}")" -gt 0
	done
	e2e_check "$fam: nothing malformed" test "$(json_get "$S" malformed)" -eq 0
	e2e_check "$fam: nothing filtered, no storage failures" \
		test "$(($(json_get "$S" filtered) + $(json_get "$S" no_storage)))" -eq 0
	e2e_check "$fam: requests on data, echoes on ACKs, on the wire" check_wire "$cap" "$SLOTS_DEFAULT"
}
S="$S0"
family_round IPv4 10.201.0.2
family_round IPv6 fd00:201::2

e2e_check "disable" "$L" int disable
e2e_check "disable detaches from the cgroup" bash -c "! bpftool cgroup show '$CG' | grep -qE 'sock_?ops'"

# A failure half-way (here: a map pinned with another layout makes the load
# fail after lumen_int_sk may have been created) leaves nothing behind.
e2e_check "bogus lumen_int_cfg pinned" bpftool map create "$PIN/lumen_int_cfg" type array key 4 value 8 \
	entries 1 name lumen_int_cfg
e2e_check "enable over an incompatible pinned map fails" expect_fail 1 "cannot load" "$L" int enable --cgroup "$CG"
e2e_check "the failed enable left no pin of its own" \
	test ! -e "$PIN/int_sockops_link" -a ! -e "$PIN/int_sockops_prog" -a ! -e "$PIN/lumen_int_stats"
cc_loaded || e2e_check "the failed enable did not leave lumen_int_sk" test ! -e "$PIN/lumen_int_sk"
e2e_check "the failed enable attached nothing" bash -c "! bpftool cgroup show '$CG' | grep -qE 'sock_?ops'"
rm -f "$PIN/lumen_int_cfg"

# --- filters ------------------------------------------------------------

# (the filters and the slot count are the sockops program's own logic, the
# same on every kernel: three program loads, ~25 s in an emulated guest)
if e2e_host_part "the family and port filters, one hop slot"; then
	# IPv6 only: IPv4 flows are filtered, also on the server, whose dual-stack
	# listener accepts them as IPv4-mapped AF_INET6 sockets.
	e2e_check "enable --ipv6" "$L" int enable --cgroup "$CG" --ipv6
	run_iperf 10.201.0.2 || true
	S="$(snap)"
	e2e_log "--ipv6 with IPv4 traffic: $S"
	e2e_check "--ipv6: IPv4 flows filtered on both ends" test "$(json_get "$S" filtered)" -eq 4
	e2e_check "--ipv6: no IPv4 flow enabled, no request" \
		test "$(($(json_get "$S" flows) + $(json_get "$S" req_written) + $(json_get "$S" req_parsed)))" -eq 0
	"$L" int disable >/dev/null

	# A port list without the test port: no INT at all, flows counted filtered.
	e2e_check "enable --port 9 --port 7" "$L" int enable --cgroup "$CG" --port 9 --port 7
	run_iperf 10.201.0.2 || true
	S="$(snap)"
	e2e_log "port filter excluding $PORT: $S"
	e2e_check "port filter: flows filtered" test "$(json_get "$S" filtered)" -eq 4
	e2e_check "port filter: no request written or parsed" \
		test "$(($(json_get "$S" req_written) + $(json_get "$S" req_parsed) + $(json_get "$S" echo_written)))" -eq 0
	"$L" int disable >/dev/null

	# A port list with the test port: both ends match (the server by its local
	# port, the client by its remote port); one hop slot this time.
	e2e_check "enable --port 9,$PORT --slots 1" "$L" int enable --cgroup "$CG" --port "9,$PORT" --slots 1
	run_iperf fd00:201::2 "$TMP/cap1" || true
	S="$(snap)"
	e2e_log "port filter including $PORT: $S"
	e2e_check "port filter: both ends of both connections enabled" test "$(json_get "$S" flows)" -eq 4
	e2e_check "port filter: nothing filtered" test "$(json_get "$S" filtered)" -eq 0
	e2e_check "port filter: requests and echoes parsed" \
		test "$(json_get "$S" req_parsed)" -gt 0 -a "$(json_get "$S" echo_parsed)" -gt 0
	e2e_check "--slots 1: nothing malformed" test "$(json_get "$S" malformed)" -eq 0
	e2e_check "--slots 1: 12-byte requests on the wire" check_wire "$TMP/cap1" 1

	"$L" int disable >/dev/null
fi

# Five slots (40 bytes) do not fit next to TCP timestamps: every request is
# skipped and counted, the flow itself is unaffected.
e2e_check "enable --slots 5" "$L" int enable --cgroup "$CG" --slots 5
run_iperf 10.201.0.2 || true
S="$(snap)"
e2e_log "5 slots with timestamps: $S"
e2e_check "5 slots + timestamps: no room counted" test "$(json_get "$S" no_room)" -gt 0
e2e_check "5 slots + timestamps: no request written, the transfer ran" \
	test "$(json_get "$S" req_written)" -eq 0 -a "$(json_get "$S" flows)" -eq 4
# Without timestamps (per namespace) they fit: a full 40-byte option space.
ip netns exec "$NS_C" sysctl -qw net.ipv4.tcp_timestamps=0
ip netns exec "$NS_S" sysctl -qw net.ipv4.tcp_timestamps=0
run_iperf 10.201.0.2 "$TMP/cap5" || true
S2="$(snap)"
e2e_log "5 slots without timestamps: $S2"
e2e_check "5 slots, no timestamps: requests written and parsed" \
	test "$(delta "$S" "$S2" req_written)" -gt 0 -a "$(delta "$S" "$S2" req_parsed)" -gt 0
e2e_check "5 slots, no timestamps: echoes parsed, nothing malformed" \
	test "$(delta "$S" "$S2" echo_parsed)" -gt 0 -a "$(json_get "$S2" malformed)" -eq 0
e2e_check "5 slots, no timestamps: 40-byte requests within the MTU" check_wire "$TMP/cap5" 5

# Malformed options are counted and change nothing: replay echo ACKs with
# a version-2 option to the sender (still without timestamps).
run_iperf 10.201.0.2 "" "$TMP/inj" || true
S3="$(snap)"
e2e_log "malformed echoes: $(cat "$TMP/inj"); $S3"
e2e_check "malformed: the replays were sent" grep -q "injected=5" "$TMP/inj"
m=$(delta "$S2" "$S3" malformed)
e2e_check "malformed: counted (1..5 of 5 replays; identical ACKs may merge)" test "$m" -ge 1 -a "$m" -le 5
e2e_check "malformed: the flow's echoes still parsed" test "$(delta "$S2" "$S3" echo_parsed)" -gt 0

# --- disable: nothing of this part remains --------------------------------

e2e_check "disable" "$L" int disable
e2e_check "disable leaves none of int's pins" test -z "$(int_pins)"
if cc_loaded; then
	e2e_check "disable keeps lumen_int_sk while lumen cc is loaded" test -e "$PIN/lumen_int_sk"
else
	e2e_check "disable removes lumen_int_sk (lumen cc not loaded)" test ! -e "$PIN/lumen_int_sk"
fi
e2e_check "the cgroup has no sockops program" bash -c "! bpftool cgroup show '$CG' | grep -qE 'sock_?ops'"
e2e_check "status says not enabled" bash -c "'$L' int status | grep -q 'not enabled'"
e2e_check "disable again is a no-op" bash -c "'$L' int disable | grep -q 'nothing to do'"

e2e_finish
