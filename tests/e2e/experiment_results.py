#!/usr/bin/env python3
# tests/e2e/experiment_results.py DIR RUNS [PNG...] - checks the result
# directory of `lumen experiment run`: config.json and summary.json parse and
# have RUNS runs with flows, queue samples and their seed, aggregate.json
# has every (case, algorithm) over its seeds, the merged CSVs have their
# exact headers and column counts, every PNG is a real plot, and
# throughput.png, queue.png and the named PNGs exist. Exit 1 with the
# problems listed. Used by experiment_test.sh, experiment_vm.sh and
# remote_test.sh.
import csv, json, os, sys
d, runs = sys.argv[1], int(sys.argv[2])
ok = True
def fail(msg):
    global ok
    ok = False
    print("  " + msg)
cfg = json.load(open(os.path.join(d, "config.json")))
for key in ("experiment", "kernel_release", "lumen_version", "runs", "base_rtt_ns", "path_rate_mbps"):
    if key not in cfg:
        fail(f"config.json lacks {key}")
if ("testbed" in cfg) == ("hosts" in cfg):  # a namespace testbed, or hosts (--hosts)
    fail("config.json must have exactly one of testbed and hosts")
if len(cfg.get("runs", [])) != runs:
    fail(f"config.json has {len(cfg.get('runs', []))} runs, expected {runs}")
summary = json.load(open(os.path.join(d, "summary.json")))
if len(summary["runs"]) != runs:
    fail(f"summary.json has {len(summary['runs'])} runs, expected {runs}")
for r in summary["runs"]:
    if r["flows"] == 0:
        fail(f"run {r['algo']}/{r['case']} has no flows")
    if r["queue_bytes"]["count"] == 0:
        fail(f"run {r['algo']}/{r['case']} has no queue samples")
    if not isinstance(r.get("seed"), int) or r["seed"] not in summary.get("seeds", []):
        fail(f"run {r['algo']}/{r['case']} has no seed of the experiment's")
agg = json.load(open(os.path.join(d, "aggregate.json")))
cells = {(c["case"], c["algo"]) for c in agg["cells"]}
if cells != {(r["case"], r["algo"]) for r in summary["runs"]}:
    fail(f"aggregate.json cells {sorted(cells)} are not the runs' (case, algo)")
for c in agg["cells"]:
    g = c["metrics"].get("goodput_mbps", {})
    if set(g) != {"n", "mean", "sd", "min", "max"} or g["n"] != len(c["seeds"]):
        fail(f"aggregate.json {c['case']}/{c['algo']}: goodput_mbps {g}")
headers = {
    "flows.csv": "algo,case,seed,start_s,label,flow_id,dst,cc,kind,size_bytes,start_ns,end_ns,fct_ns,bytes,retrans,ideal_fct_ns,slowdown,status",
    "samples.csv": "algo,case,seed,t_s,label,flow_id,t_ns,bytes_acked,cwnd,srtt_us,retrans,pacing_rate_bps,delivery_rate_bps",
    "queue.csv": "algo,case,seed,t_s,port,bottleneck,qlen_bytes,enq_bytes,deq_bytes,drops,ecn_marks",
    "throughput.csv": "algo,case,seed,label,flow_id,kind,t_s,mbps",
}
for name, header in headers.items():
    lines = open(os.path.join(d, name)).read().splitlines()
    if not lines or lines[0] != header:
        fail(f"{name}: header {lines[0] if lines else '(empty)'!r}")
        continue
    if len(lines) < 2:
        fail(f"{name}: no rows")
    n = header.count(",") + 1
    for i, row in enumerate(csv.reader(lines[1:]), start=2):
        # flows.csv's last field (status) may itself contain commas
        if len(row) != n and not (name == "flows.csv" and len(row) > n):
            fail(f"{name}: line {i} has {len(row)} fields, expected {n}")
            break
pngs = ["throughput.png", "queue.png"] + sys.argv[3:]
for p in [f for f in os.listdir(d) if f.endswith(".png")]:
    data = open(os.path.join(d, p), "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n" or len(data) < 10000:
        fail(f"{p}: not a PNG of a real plot ({len(data)} bytes)")
for p in pngs:
    if not os.path.exists(os.path.join(d, p)):
        fail(f"{p} missing")
sys.exit(0 if ok else 1)
