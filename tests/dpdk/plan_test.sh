#!/usr/bin/env bash
# lumen_dp_plan_test: `lumen-dp -- plan` as a user runs it (no EAL, no root):
# the seed's worked cases as a table and as JSON, the JSON's subflows
# covering every byte once with the uplinks balanced, the wrap rule, and
# bad input refused with exit 2 and a message.
source "$(dirname "$0")/../e2e/lib.sh"
DP="${LUMEN_DP_BIN:?set LUMEN_DP_BIN to the lumen-dp binary}"
e2e_require_tools python3
tmp="$(mktemp -d)"
e2e_on_exit "rm -rf '$tmp'"
plan() { "$DP" -- plan "$@"; }

e2e_check "4-channel ring on 16 uplinks: 16 subflows, 12 extra" \
	bash -c "'$DP' -- plan --uplinks 16 --to 1:4:1M | grep -qE '^ +1 +4 +1048576 +0 +4 +4 +16 +12 +262144$'"
e2e_check "all-to-all on 16 uplinks: no split" \
	bash -c "'$DP' -- plan --uplinks 16 --to 1:16:16K | grep -q '16 flows -> 16 subflows (0 extra)'"
e2e_check "--help" bash -c "'$DP' -- plan --help | grep -q -- '--split equal|wrap'"

e2e_check "JSON plan (leaf 2 of 3, 5 flows and 7 flows of odd sizes on 4 uplinks)" \
	bash -c "'$DP' -- plan --uplinks 4 --leaf 2 --to 0:5:3001,1:7:1M,2:3:100 --json '$tmp/p.json'"
e2e_check "JSON: every byte once, parts in order on distinct uplinks, loads within a byte" \
	python3 - "$tmp/p.json" <<'PY'
import collections, json, sys
p = json.load(open(sys.argv[1]))
sizes = {0: 3001, 1: 1 << 20, 2: 100}
flows = collections.defaultdict(list)
load = [0] * 4
for x in p["plan"]:
    flows[(x["demand"], x["flow"])].append(x)
    if x["uplink"] is None:
        assert x["leaf"] == 2, x
    else:
        load[x["uplink"]] += x["bytes"]
assert len(flows) == 15, len(flows)
for (d, f), parts in flows.items():
    at = 0
    for i, x in enumerate(parts):
        assert x["part"] == i and x["offset"] == at, parts
        at += x["bytes"]
    assert at == sizes[d], (d, f, at)
    assert len({x["uplink"] for x in parts}) == len(parts), parts
assert load == p["uplink_bytes"] and max(load) - min(load) <= 1, load
assert p["local_bytes"] == 300 and p["flows"] == 15 and p["subflows"] == len(p["plan"]), p
# 5 flows on 4 uplinks: r = 1, g = 1: one flow in 4; 7: r = 3, g = 1: three in 4
assert [d["extra"] for d in p["demands"]] == [3, 9, 0], p["demands"]
PY
e2e_check "wrap rule: 6 flows on 16 uplinks make 20 subflows, not 48" \
	bash -c "'$DP' -- plan --uplinks 16 --to 1:6:1M --split wrap --json - | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d[\"subflows\"] == 20 and max(d[\"uplink_bytes\"]) == min(d[\"uplink_bytes\"]), d[\"uplink_bytes\"]'"

e2e_check "no --uplinks" e2e_fails 2 "--uplinks .* is required" plan --to 1:2:3
e2e_check "no --to" e2e_fails 2 "--to LEAF:FLOWS:BYTES is required" plan --uplinks 4
e2e_check "uplinks out of range" e2e_fails 2 "--uplinks: '1025'" plan --uplinks 1025 --to 1:2:3
e2e_check "zero bytes" e2e_fails 2 "--to: '1:2:0'" plan --uplinks 4 --to 1:2:0
e2e_check "bad size suffix" e2e_fails 2 "--to: '1:2:3T'" plan --uplinks 4 --to 1:2:3T
e2e_check "unknown rule" e2e_fails 2 "unknown rule 'even'" plan --uplinks 4 --to 1:2:3 --split even
e2e_check "over the NIC's cap, naming the wrap rule's count" \
	e2e_fails 2 "needs 48 subflows, more than the NIC's 40 \(the wrap rule needs 20\)" \
	plan --uplinks 16 --to 1:6:1M --max-subflows 40
e2e_check "unwritable JSON file" e2e_fails 1 "cannot write" plan --uplinks 4 --to 1:2:3 --json /nonexistent/p.json

e2e_finish
