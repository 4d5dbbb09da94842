#!/usr/bin/env bash
# spray_test: the built-in datapath experiment `spray` (lumen experiment run
# spray --smoke), end to end: lumen-dp on a namespace leaf-spine of DPDK
# hosts (host_stack dpdk), ECMP / OPS / REPS / REPS-freezing, healthy and
# with the link leaf1-spine1 failing mid-run. It checks the experiment's
# errors for bad input, then that the run completes and its report holds
# together: every run delivered intact messages, the failure runs counted
# packets into the dead link, REPS sent fewer into it than OPS (REPS keeps
# exploring, a quarter of it into the dead link, whenever ECN marks, losses
# and window growth leave its ring of 8 entropies empty: fewer, not
# none, and how many fewer depends on the load), the plots
# and tables exist, and nothing of the testbed is left behind. The numbers
# themselves are printed, not judged: a 3 s smoke run on a 2-core machine.
source "$(dirname "$0")/../e2e/lib.sh"
DP="${LUMEN_DP_BIN:?set LUMEN_DP_BIN to the lumen-dp binary}"
[[ $EUID -eq 0 ]] || e2e_skip "needs root (DPDK EAL, namespaces)"
e2e_require_tools ip python3 gnuplot
(($(nproc) >= 2)) || e2e_skip "needs 2 cores (lumen-dp busy-polls one, the routers forward on the other)"
export LUMEN_DP_BIN="$DP"
tmp="$(mktemp -d)"
e2e_on_exit "rm -rf '$tmp'"
t_start=$SECONDS

# --- bad input: clear errors, nothing created ---------------------------------
e2e_check "unknown path policy" e2e_fails 2 "unknown path policy 'spray'" \
	"$LUMEN_BIN" experiment run spray --algos ops,spray --out "$tmp/x1"
e2e_check "a datapath experiment in a VM" e2e_fails 2 "not with --hosts or --vm" \
	"$LUMEN_BIN" experiment run spray --vm 6.1 --out "$tmp/x2"
spec="$(dirname "$0")/../../experiments/spray.json"
python3 -c "
import json, sys
d = json.load(open('$spec'))
d['datapath']['failure']['link'] = 'leaf3-spine1'
json.dump(d, open('$tmp/bad-link.json', 'w'))
d = json.load(open('$spec'))
d['topology']['host_stack'] = 'kernel'
json.dump(d, open('$tmp/bad-stack.json', 'w'))
"
e2e_check "a failure on a link the topology lacks" e2e_fails 2 "not a link leaf<1..2>-spine<1..4>" \
	"$LUMEN_BIN" experiment run "$tmp/bad-link.json" --out "$tmp/x3"
e2e_check "kernel hosts" e2e_fails 2 'host_stack.: .dpdk' "$LUMEN_BIN" experiment run "$tmp/bad-stack.json" --out "$tmp/x4"
e2e_check "nothing was created" test -z "$(ip netns list | grep '^lt-spray-' || true)"

# --- the smoke run ----------------------------------------------------------------
out="$tmp/spray"
e2e_check "lumen experiment run spray --smoke" "$LUMEN_BIN" experiment run spray --smoke --out "$out"
cat "$out/results.csv" | sed 's/^/    /'
e2e_check "the testbed is gone" test -z "$(ip netns list | grep '^lt-spray-' || true)"
for f in results.json results.csv fct.csv fct_cdf.png dead_link.png; do
	e2e_check "report: $f" test -s "$out/$f"
done
e2e_check "8 runs, each delivering intact messages; the failure runs count the dead link" python3 - "$out/results.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
runs = {(r["case"], r["policy"]): r for r in d["runs"]}
assert len(runs) == 8, runs.keys()
for (case, policy), r in runs.items():
    assert r["messages"] > 0 and r["corrupt"] == 0, (case, policy, r)
    assert ("dead_link" in r) == (case == "failure"), (case, policy)
PY
e2e_check "failure: REPS sends less into the dead link than OPS" python3 - "$out/results.json" <<'PY'
import json, sys
runs = {(r["case"], r["policy"]): r for r in json.load(open(sys.argv[1]))["runs"]}
ops, reps = runs["failure", "ops"]["dead_link"]["packets"], runs["failure", "reps"]["dead_link"]["packets"]
print(f"dead link: ops {ops}, reps {reps}")
assert ops > 0 and reps < ops, (ops, reps)
PY
e2e_log "took $((SECONDS - t_start)) s"
e2e_finish
