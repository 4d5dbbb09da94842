#!/usr/bin/env bash
# tests/e2e/bench_int_test.sh - tools/bench-int's smoke run (1 s per arm):
# its three arms run and do what they say (INT requests and echoes only
# with INT on), leave nothing behind, and show what the benchmark is about:
# the receiver's GRO merges segments whose INT options are equal (requests
# without stamps) and none once a switch stamps each one. The CPU cost is
# the benchmark's to measure (README, "Per-packet INT and the receiver"),
# not a timed test's.
source "$(dirname "$0")/lib.sh"

e2e_require_bpf
e2e_require_tools ethtool iperf3 python3
root="$(cd "$(dirname "$0")/../.." && pwd)"
tmp="$(mktemp -d)"
e2e_on_exit "rm -rf '$tmp'"

ns_before="$(ip netns list | wc -l)"
ports() { "$LUMEN_BIN" switch stats --json | e2e_json 'len(d["ports"])'; }
ports_before="$(ports)"
e2e_check "bench-int runs its three arms" \
	bash -c "LUMEN_BIN='$LUMEN_BIN' '$root/tools/bench-int' --duration 1 --json '$tmp/r.json' >'$tmp/out' 2>&1"
sed 's/^/    /' "$tmp/out"
arm() { # arm NAME KEY: that arm's value
	python3 -c 'import json, sys
r = [x for x in json.load(open(sys.argv[1]))["runs"] if x["arm"] == sys.argv[2]][0]
v = r.get(sys.argv[3], 0)
print(round(v, 2) if isinstance(v, float) else v)' "$tmp/r.json" "$1" "$2"
}
merged() { python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) > float(sys.argv[2]) else 1)' "$@"; }
e2e_check "without INT the receiver merges segments (packets per TCP segment $(arm off merge) > 2)" \
	merged "$(arm off merge)" 2
e2e_check "... with equal INT requests too ($(arm requests merge) > 2)" merged "$(arm requests merge)" 2
e2e_check "... not once the switch stamps each segment ($(arm stamped merge) < 1.2)" merged 1.2 "$(arm stamped merge)"
e2e_check "the stamped arm carried INT both ways ($(arm stamped int_requests) requests, $(arm stamped int_echoes) echoes)" \
	test "$(arm stamped int_echoes)" -gt 0
e2e_check "a bad --duration is refused" bash -c "! '$root/tools/bench-int' --duration 0 2>/dev/null"
e2e_check "nothing left behind: namespaces" test "$(ip netns list | wc -l)" -eq "$ns_before"
e2e_check "... INT sockops" bash -c "'$LUMEN_BIN' int status --json | grep -q '\"attached\": false'"
e2e_check "... switch ports" test "$(ports)" -eq "$ports_before"
e2e_finish
