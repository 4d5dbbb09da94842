#!/usr/bin/env bash
# bench_smoke_test: the benchmark runs, not how fast it runs.
#
#   bench-dp  tools/bench-dp --smoke (2 s per run: testpmd txonly and io,
#             lumen-dp bench tx and rx with 1 and 10,000 connections on
#             net_null): exit 0, valid JSON, a positive rate for every case
#             and both testpmd modes, the per-connection sizes. No threshold
#             on the rates: the machine is shared and noisy, goals belong to
#             the benchmark's table (docs/dpdk.md), not to a test.
#   bench     lumen-dp bench alone: a bad --case and a --conns list outside
#             bench are refused before EAL starts (exit 2); SIGINT ends a
#             case early with a clean exit and its summary.
source "$(dirname "$0")/../e2e/lib.sh"
here="$(cd "$(dirname "$0")" && pwd)"
DP="${LUMEN_DP_BIN:?set LUMEN_DP_BIN to the lumen-dp binary}"
[[ $EUID -eq 0 ]] || e2e_skip "needs root (DPDK EAL)"
e2e_require_tools python3 dpdk-testpmd
(($(nproc) >= 2)) || e2e_skip "testpmd needs two lcores (a main one and a forwarding one)"

tmp="$(mktemp -d)"
prefix="lbs$$"
e2e_on_exit "rm -rf '$tmp' /var/run/dpdk/$prefix*"
js() { e2e_json "$1" <"$tmp/bench.json"; }

# --- bench-dp --smoke --------------------------------------------------------
rc=0
"$here/../../tools/bench-dp" --smoke --lumen-dp "$DP" --json "$tmp/bench.json" >"$tmp/bench.out" 2>&1 || rc=$?
cat "$tmp/bench.out"
e2e_check "bench-dp --smoke: exit $rc" test "$rc" -eq 0
e2e_check "bench-dp: valid JSON" python3 -c "import json, sys; json.load(open(sys.argv[1]))" "$tmp/bench.json"
e2e_check "bench-dp: a row per case (tx, rx) and connection count (1, 10000)" \
	test "$(js "sorted((r['case'], r['conns']) for r in d['rows'])")" = \
	"[('rx', 1), ('rx', 10000), ('tx', 1), ('tx', 10000)]"
for r in 0 1 2 3; do
	what="$(js "'%s %s conns: %.3f Mpps' % (d['rows'][$r]['case'], d['rows'][$r]['conns'], d['rows'][$r]['lumen_mpps'])" || true)"
	e2e_check "bench-dp: lumen-dp ${what:-row $r missing} > 0" \
		test "$(js "int(d['rows'][$r]['lumen_mpps'] > 0)" || echo 0)" -eq 1
done
for m in 0 1; do
	what="$(js "'%s: %.3f Mpps' % (d['testpmd'][$m]['mode'], d['testpmd'][$m]['mpps'])" || true)"
	e2e_check "bench-dp: testpmd ${what:-run $m missing} > 0" \
		test "$(js "int(d['testpmd'][$m]['mpps'] > 0)" || echo 0)" -eq 1
done
e2e_check "bench-dp: ratios to testpmd for the 1-connection rows" \
	test "$(js "int(all(r['ratio'] > 0 for r in d['rows'] if r['conns'] == 1))" || echo 0)" -eq 1
e2e_check "bench-dp: sizes in the JSON (lumen_path $(js "d['sizes']['lumen_path']" || true) B)" \
	test "$(js "int(d['sizes']['lumen_path'] > 0 and d['sizes']['connection'] > 0)" || echo 0)" -eq 1
e2e_check "bench-dp: the table printed" grep -q "^tx, 10000 conns" "$tmp/bench.out"

# --- lumen-dp bench alone -----------------------------------------------------
eal() { echo --no-huge --no-pci -m 512 -l "${LUMEN_DP_LCORE:-1}" --log-level=error --file-prefix "$prefix$1"; }
e2e_check "bench: unknown case" e2e_fails 2 "unknown case 'both'" "$DP" $(eal o1) -- bench --case both
e2e_check "perf: a --conns list is bench's" e2e_fails 2 "is for bench" "$DP" $(eal o2) -- perf --conns 1,2

"$DP" $(eal s) --vdev net_null0 -- bench --case rx --conns 1 --seconds 30 --json "$tmp/sigint.json" \
	>"$tmp/sigint.out" 2>&1 &
pid=$!
e2e_on_exit "kill -9 $pid 2>/dev/null || true"
e2e_wait_until 50 0.2 grep -q "bench rx, 1 conn:" "$tmp/sigint.out" || true
kill -INT "$pid"
rc=0
wait "$pid" || rc=$?
e2e_check "bench: SIGINT ends the case, clean exit ($rc)" test "$rc" -eq 0
e2e_check "bench: SIGINT: the case reported as interrupted" \
	test "$(e2e_json "int(d['cases'][0]['interrupted'] and d['cases'][0]['packets'] > 0)" <"$tmp/sigint.json" ||
		echo 0)" -eq 1

e2e_finish
