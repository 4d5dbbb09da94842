#!/usr/bin/env bash
# lumen_dp_rpc_echo_test: the example program of lumen-dp's application
# interface (dpdk/examples/rpc_echo.cpp) as a user runs it: every echo
# intact with zero copy (every DATA packet sent without a copy) on a clean
# and on an impaired wire, with copies (--copy: none without), the
# registered regions released at the end, bad arguments refused with exit 2.
source "$(dirname "$0")/../e2e/lib.sh"
EX="${LUMEN_DP_RPC_ECHO_BIN:?set LUMEN_DP_RPC_ECHO_BIN to lumen-dp-rpc-echo}"
[[ $EUID -eq 0 ]] || e2e_skip "needs root (DPDK EAL)"
prefix="rpc$$"
e2e_on_exit "rm -rf /var/run/dpdk/$prefix*"
eal() { echo --no-huge --no-pci -m 512 -l "${LUMEN_DP_LCORE:-0}" --log-level=error --file-prefix "$prefix$1"; }

# run NAME ARGS...: the summary line, or nothing when the run failed
run() {
	local name="$1"
	shift
	"$EX" $(eal "$name") -- "$@" 2>&1 | tee /dev/stderr | grep '^rpc-echo:' || true
}
# the numbers of "sent N packets, M without a copy"
counts() { sed -nE 's/.*sent ([0-9]+) packets, ([0-9]+) without.*/\1 \2/p' <<<"$1"; }

out="$(run zc --messages 300 --size 100000)"
read -r sent zc <<<"$(counts "$out")"
e2e_check "zero copy: 300 echoes intact, every packet without a copy, regions released" \
	bash -c "[[ '$out' == *'300 messages'*'regions released: yes'* && '$sent' -ge 21000 && '$zc' == '$sent' ]]"

out="$(run lossy --messages 200 --size 30001 --window 8 --impair drop=2%,reorder=10%,reorder-delay=30us,dup=2%,ce=5%,acks)"
read -r sent zc <<<"$(counts "$out")"
e2e_check "zero copy over drops, reordering, duplicates and marks: intact, retransmissions uncopied too" \
	bash -c "[[ '$out' == *'200 messages'*'regions released: yes'* && '$sent' -gt 4200 && '$zc' == '$sent' ]]"

out="$(run copy --messages 100 --size 5000 --copy)"
e2e_check "--copy: intact, no packet without a copy" \
	bash -c "[[ '$out' == *'100 messages'*'copied'*', 0 without a copy'* ]]"

e2e_check "bad --size: exit 2 and a message" e2e_fails 2 "bad value for --size: 0" "$EX" $(eal bad) -- --size 0
e2e_check "bad --impair: exit 2" e2e_fails 2 "impair" "$EX" $(eal bad2) -- --impair drop=200%
e2e_finish
