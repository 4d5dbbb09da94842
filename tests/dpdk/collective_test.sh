#!/usr/bin/env bash
# lumen_dp_collective_test: `lumen-dp -- collective` as a user runs it, on
# two ranks joined by a pair of memif ports in one process (no namespaces):
# bad options refused with exit 2 and a message; the ring allreduce (float32,
# 2 channels), the allreduce by all-to-all (int32), the all-to-all and the
# permutation through drops, reordering, duplicates and CE marks (--impair),
# every rank equal to the reference (the mode's own check: exit 1 and
# "#wrong" otherwise), the sends leaving the ranks' buffers without a copy,
# no message arriving before its receive buffer. The fabric of routers runs
# collectives in fabric_test.sh.
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
e2e_finish
