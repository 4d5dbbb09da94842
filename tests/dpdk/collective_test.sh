#!/usr/bin/env bash
# lumen_dp_collective_test: `lumen-dp -- collective` as a user runs it, on
# two ranks joined by a pair of memif ports in one process (no namespaces):
# bad options refused with exit 2 and a message; the ring allreduce (float32,
# 2 channels), the allreduce by all-to-all (int32), the all-to-all and the
# permutation through drops, reordering, duplicates and CE marks (--impair),
# every rank equal to the reference (the mode's own check: exit 1 and
# "#wrong" otherwise), the sends leaving the ranks' buffers without a copy,
# no message arriving before its receive buffer. Then the ranks in two
# processes (--rank-ips), one memif end and one lcore each, the steps
# separated by the network barrier's messages: the ring allreduce and the
# all-to-all through the same impairment, both processes right and the
# barrier's messages counted; a process whose peer never starts fails at
# --time and says whom it waited for; bad --rank-ips refused. The fabric of
# routers runs collectives in fabric_test.sh.
source "$(dirname "$0")/../e2e/lib.sh"
DP="${LUMEN_DP_BIN:?set LUMEN_DP_BIN to the lumen-dp binary}"
[[ $EUID -eq 0 ]] || e2e_skip "needs root (DPDK EAL)"
e2e_require_tools python3
tmp="$(mktemp -d)"
prefix="ldc$$"
e2e_on_exit "rm -rf '$tmp' /var/run/dpdk/$prefix*"
M1=02:00:00:00:00:01 M2=02:00:00:00:00:02
HOSTS=(--host "0,10.0.0.1,$M2" --host "1,10.0.0.2,$M1")

e2e_check "no --collective" e2e_fails 2 "give --collective" "$DP" -- collective "${HOSTS[@]}"
e2e_check "unknown collective" e2e_fails 2 "unknown collective 'broadcast'" \
	"$DP" -- collective --collective broadcast "${HOSTS[@]}"
e2e_check "a sum of part of an element" e2e_fails 2 "--collective allreduce: .*(element|multiple)" \
	"$DP" -- collective --collective allreduce --size 1002 "${HOSTS[@]}"
e2e_check "--leaves that do not divide" e2e_fails 2 "does not divide" \
	"$DP" -- collective --collective alltoall --leaves 3 "${HOSTS[@]}"
e2e_check "hosts mode's --msgs" e2e_fails 2 "--msgs is hosts mode's" \
	"$DP" -- collective --collective alltoall --msgs 3 "${HOSTS[@]}"
e2e_check "--size in hosts mode" e2e_fails 2 "--size is collective mode's" "$DP" -- hosts --size 4 "${HOSTS[@]}"

# run NAME ARGS...: the collective on the memif pair, its summary in $tmp/NAME.json
run() {
	local name="$1"
	shift
	"$DP" --no-huge --no-pci -m 512 -l "${LUMEN_DP_LCORE:-0}" --log-level=error --file-prefix "$prefix$name" \
		--vdev "net_memif0,role=server,socket=$tmp/$name.sock" \
		--vdev "net_memif1,role=client,socket=$tmp/$name.sock" -- collective "${HOSTS[@]}" \
		--impair drop=1%,reorder=5%,reorder-delay=30us,dup=1%,ce=2%,acks --time 60 --quiet \
		--json "$tmp/$name.json" "$@" >"$tmp/$name.out" 2>&1 || {
		tail -5 "$tmp/$name.out"
		return 1
	}
	grep -A1 'size  *type' "$tmp/$name.out" | tail -1 | sed "s/^/[$(basename "$0" .sh)]   $name /"
}
# check NAME: right everywhere, the impairment did something, zero copy, no early message
check() {
	python3 - "$tmp/$1.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
c, t = d["collective"], d["totals"]
assert c["wrong_ranks"] == 0, c
assert t["retransmits"] > 0, "the impairment dropped nothing"
assert t["zero_copy_pkts"] > 0 and t["zero_copy_pkts"] == t["data_sent"], t
assert t["rnr_drops"] == 0, t
PY
}
for spec in "allreduce --reduce float32 --channels 2 --size 1000000" "allreduce-a2a --reduce int32 --size 400004" \
	"alltoall --size 1000000" "permutation --size 500000"; do
	name="${spec%% *}"
	e2e_check "$name through drops, reordering, duplicates and marks: every rank equals the reference" \
		run "$name" --collective $spec
	e2e_check "$name: retransmitted, every packet without a copy, nothing before its buffer" check "$name"
done

# Two processes, one rank each (--rank-ips): A has the memif server end on
# lcore 0, B the client end on lcore 1.
RANKS=(--rank-ips "10.0.0.1,10.0.0.2")
e2e_check "--host not among --rank-ips" e2e_fails 2 "--host 10.0.0.3 is not among --rank-ips" \
	"$DP" -- collective --collective alltoall "${RANKS[@]}" --host "0,10.0.0.3,$M2"
e2e_check "a rank address twice" e2e_fails 2 "ranks 0 and 2 have the same address" \
	"$DP" -- collective --collective alltoall --rank-ips 10.0.0.1,10.0.0.2,10.0.0.1 --host "0,10.0.0.1,$M2"
e2e_check "not an address" e2e_fails 2 "--rank-ips: '10.0.0' is not" \
	"$DP" -- collective --collective alltoall --rank-ips 10.0.0.1,10.0.0 --host "0,10.0.0.1,$M2"
e2e_check "one rank" e2e_fails 2 "--rank-ips: give 2..64 ranks" \
	"$DP" -- collective --collective permutation --rank-ips 10.0.0.1 --host "0,10.0.0.1,$M2"
e2e_check "--leaves that do not divide the ranks of all processes" e2e_fails 2 "does not divide the 3 ranks" \
	"$DP" -- collective --collective alltoall --rank-ips 10.0.0.1,10.0.0.2,10.0.0.3 --leaves 2 --host "0,10.0.0.1,$M2"
e2e_check "ethereal planning of remote ranks without --leaves" e2e_fails 2 "needs --leaves" \
	"$DP" -- collective --collective alltoall "${RANKS[@]}" --host "0,10.0.0.1,$M2" --path ethereal --discover-paths 2
# one NAME SIDE LCORE ROLE IP GATEWAY MAC ARGS...: one process of the pair
one() {
	local name="$1" side="$2" lcore="$3" role="$4" ip="$5" gw="$6" mac="$7"
	shift 7
	timeout 40 "$DP" --no-huge --no-pci -m 512 -l "$lcore" --log-level=error --file-prefix "$prefix$name$side" \
		--vdev "net_memif0,role=$role,socket=$tmp/$name.sock,mac=$mac" -- collective "${RANKS[@]}" \
		--host "0,$ip,$gw" --impair drop=1%,reorder=5%,reorder-delay=30us,dup=1%,ce=2%,acks --time 15 --quiet \
		--json "$tmp/$name$side.json" "$@" >"$tmp/$name$side.out" 2>&1
}
# run2 NAME ARGS...: both processes; each must exit 0 (A waits at the
# barrier until B comes)
run2() {
	local name="$1" rca=0 rcb=0
	shift
	one "$name" a 0 server 10.0.0.1 "$M2" "$M1" "$@" &
	local pid=$! i
	# memif's client connects once, when its port starts: after the server
	# listens (on an abstract socket: /proc/net/unix says when)
	for ((i = 0; i < 200; i++)); do
		grep -qF "@$tmp/$name.sock" /proc/net/unix && break
		sleep 0.05
	done
	one "$name" b 1 client 10.0.0.2 "$M1" "$M2" "$@" || rcb=$?
	wait "$pid" || rca=$?
	[[ $rca -eq 0 && $rcb -eq 0 ]] || {
		e2e_log "  exit status: A $rca, B $rcb"
		tail -n 4 "$tmp/${name}a.out" "$tmp/${name}b.out"
		return 1
	}
}
# check2 NAME: each process right for its own rank, the barrier's messages all there
check2() {
	python3 - "$tmp/$1a.json" "$tmp/$1b.json" <<'PY'
import json, sys
retx = 0
for rank, path in enumerate(sys.argv[1:]):
    d = json.load(open(path))
    c, t = d["collective"], d["totals"]
    assert c["wrong_ranks"] == 0 and c["ranks"] == 2 and c["ranks_local"] == [rank], c
    b = c["barrier"]
    # one peer: "ready", then one "step s done" per step, each way
    phases = len(c["steps"]) + 1
    assert b["kind"] == "network" and b["control_sent"] == phases and b["control_received"] == phases, b
    assert t["rnr_drops"] == 0, t
    retx += t["retransmits"]
assert retx > 0, "the impairment dropped nothing"
PY
}
for spec in "allreduce --reduce float32 --channels 2 --size 1000000" "alltoall --size 1000000"; do
	name="two${spec%% *}"
	e2e_check "$name: a rank in each of two processes, through drops and reordering" \
		run2 "$name" --collective $spec
	e2e_check "$name: both ranks equal the reference, the steps separated by messages" check2 "$name"
done
# the peer never starts: the run ends at --time, fails, and says whom it waited for
alone() {
	timeout 30 "$DP" --no-huge --no-pci -m 512 -l 0 --log-level=error --file-prefix "${prefix}alone" \
		--vdev "net_memif0,role=server,socket=$tmp/alone.sock" -- collective "${RANKS[@]}" \
		--host "0,10.0.0.1,$M2" --collective alltoall --size 100000 --time 2 --quiet
}
e2e_check "a peer that never starts: exit 1 at --time, waiting for its 'ready'" \
	e2e_fails 1 "rank\(s\) 1 to say 'ready'" alone
e2e_finish
