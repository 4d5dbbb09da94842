#!/usr/bin/env bash
# tests/e2e/traffic_test.sh - `lumen traffic` end to end on two namespaces
# joined by a veth pair (offloads off, tbf 1gbit on the sender side):
#
#   cli [tx0] ==== tbf 1gbit ==== [rx0] srv      10.77.0.1 -> 10.77.0.2
#
# long flows, a Poisson web-search run at 0.3 load (every flow completes,
# flows.csv / samples.csv well-formed), a 3:1 incast from three client
# processes sharing --start-at, the start barrier (--start-from-input under
# `lumen host run --input`, as the SSH runner uses it), per-flow congestion control (reno vs cubic
# seen by ss and in the records, a refused algorithm named), hundreds of
# concurrent flows, SIGINT still writing the CSVs, and a server that
# survives a malformed header.
source "$(dirname "$0")/lib.sh"

[[ $EUID -eq 0 ]] || e2e_skip "needs root"
e2e_require_tools ip tc ethtool ss python3
grep -qw reno /proc/sys/net/ipv4/tcp_available_congestion_control || e2e_skip "reno not available"
grep -qw cubic /proc/sys/net/ipv4/tcp_available_congestion_control || modprobe tcp_cubic 2>/dev/null ||
	e2e_skip "cubic not available"

TMPD="$(mktemp -d)"
e2e_on_exit "rm -rf '$TMPD'"
CHECK="$TMPD/check.py"

e2e_ns_pair cli CLI tx0 srv SRV rx0
ip -n "$CLI" addr add 10.77.0.1/24 dev tx0
ip -n "$SRV" addr add 10.77.0.2/24 dev rx0
tc -n "$CLI" qdisc add dev tx0 root tbf rate 1gbit burst 64k latency 20ms
DST=10.77.0.2

ip netns exec "$SRV" "$LUMEN_BIN" traffic server --ready-file "$TMPD/ready" 2>"$TMPD/server.log" &
SERVER_PID=$!
e2e_on_exit "kill -INT $SERVER_PID; wait $SERVER_PID"
for _ in $(seq 50); do [[ -f "$TMPD/ready" ]] && break; sleep 0.1; done
[[ "$(cat "$TMPD/ready" 2>/dev/null)" == ready ]] || {
	cat "$TMPD/server.log"
	e2e_log "FAIL: server not ready"
	exit 1
}

client() { ip netns exec "$CLI" "$LUMEN_BIN" traffic client --to "$DST" --link-rate 1gbit --quiet "$@"; }
mono_ns() { python3 -c 'import time; print(time.monotonic_ns())'; }

# check.py MODE FILE...: validates lumen traffic CSVs and prints what it
# finds wrong (exit 1) - the header exactly, the column count of every row,
# numbers where numbers belong, fct = end - start, time order
cat >"$CHECK" <<'EOF'
import csv, sys
FLOWS = "label,flow_id,dst,cc,kind,size_bytes,start_ns,end_ns,fct_ns,bytes,retrans,ideal_fct_ns,slowdown,status"
SAMPLES = "label,flow_id,t_ns,bytes_acked,cwnd,srtt_us,retrans,pacing_rate_bps,delivery_rate_bps"

def rows(path, header):
    with open(path) as f:
        lines = f.read().splitlines()
    assert lines and lines[0] == header, f"{path}: header {lines[:1]}"
    out = []
    for n, line in enumerate(lines[1:], 2):
        cols = line.split(",")
        assert len(cols) == len(header.split(",")), f"{path}:{n}: {len(cols)} columns"
        out.append(dict(zip(header.split(","), cols)))
    return out

def ideal_ns(payload, rtt_ns, rate_bps=1e9):
    # independent of the C++: 16-byte header, MSS 1448, 66 bytes per segment
    stream = payload + 16
    wire = stream + -(-stream // 1448) * 66
    return 2 * rtt_ns + round(wire * 8 * 1e9 / rate_bps)

def flows(path, kind, n=None, ok=True, cc=None, rtt_ns=100_000):
    r = rows(path, FLOWS)
    assert n is None or len(r) == n, f"{len(r)} flows, want {n}"
    assert r, "no flows"
    for x in r:
        for k in ("flow_id", "size_bytes", "start_ns", "end_ns", "fct_ns", "bytes", "retrans", "ideal_fct_ns"):
            assert x[k].isdigit(), f"flow {x['flow_id']}: {k}={x[k]}"
        float(x["slowdown"])
        assert x["kind"] == kind, x
        assert int(x["end_ns"]) >= int(x["start_ns"]) > 0, x
        assert int(x["fct_ns"]) == int(x["end_ns"]) - int(x["start_ns"]), x
        if ok:
            assert x["status"] == "ok", x
            assert int(x["bytes"]) == int(x["size_bytes"]) > 0, x
        assert int(x["ideal_fct_ns"]) == ideal_ns(int(x["size_bytes"]), rtt_ns), x
        want = int(x["fct_ns"]) / int(x["ideal_fct_ns"])
        assert abs(float(x["slowdown"]) - want) < 1e-4 + 1e-4 * want, x
        if cc:
            assert x["cc"] == cc, x
    return r

def samples(path, min_rows=1):
    r = rows(path, SAMPLES)
    assert len(r) >= min_rows, f"{len(r)} samples"
    last = {}
    for x in r:
        assert all(x[k].isdigit() for k in list(x)[1:]), x
        fid, t = x["flow_id"], int(x["t_ns"])
        assert t >= last.get(fid, 0), f"flow {fid}: time goes back"
        last[fid] = t
    return r

mode, args = sys.argv[1], sys.argv[2:]
try:
    if mode == "long":
        r = flows(args[0], "long", n=int(args[1]))
        samples(args[2], 10)
    elif mode == "poisson":
        r = flows(args[0], "poisson", rtt_ns=50_000)
        s = samples(args[1])
        ids = {x["flow_id"] for x in r}
        assert {x["flow_id"] for x in s} == ids, "every flow has a sample"
        assert len({x["size_bytes"] for x in r}) > len(r) // 2, "sizes vary"
        print(len(r))
    elif mode == "incast":
        start, period, bursts, files = int(args[0]), int(args[1]), int(args[2]), args[3:]
        for f in files:
            r = flows(f, "incast", n=bursts)
            for k, x in enumerate(sorted(r, key=lambda x: int(x["start_ns"]))):
                late = int(x["start_ns"]) - (start + k * period)
                assert 0 <= late < 20_000_000, f"{f}: burst {k} starts {late} ns late"
    elif mode == "cc":
        flows(args[0], "long", n=1, cc=args[1])
    elif mode == "interrupted":
        r = flows(args[0], "long", ok=False)
        assert all(x["status"] == "error:interrupted" for x in r), [x["status"] for x in r]
        assert all(int(x["size_bytes"]) > 0 for x in r)
        samples(args[1])
    elif mode == "many":
        flows(args[0], "long", n=int(args[1]))
except AssertionError as e:
    print("check:", e)
    sys.exit(1)
EOF
check() { python3 "$CHECK" "$@"; }

# ---------------------------------------------------------------------------
e2e_log "long flows: 2 flows for 3 s"
long_run() {
	client --long 2 --duration 3s --flows-csv "$TMPD/long.flows.csv" --samples-csv "$TMPD/long.samples.csv" \
		--json >"$TMPD/long.json" &&
		check long "$TMPD/long.flows.csv" 2 "$TMPD/long.samples.csv" &&
		mbps="$(e2e_json 'd["goodput_mbps"]' <"$TMPD/long.json")" &&
		e2e_log "  goodput $mbps Mbit/s" &&
		python3 -c 'import sys; sys.exit(not 100 < float(sys.argv[1]) <= 1000)' "$mbps"
}
e2e_check "2 long flows complete with goodput in (100, 1000] Mbit/s" long_run

e2e_log "poisson websearch at 0.3 load for 3 s"
poisson_run() {
	client --poisson websearch --load 0.3 --duration 3s --seed 5 --base-rtt 50us --flows-csv "$TMPD/ws.flows.csv" \
		--samples-csv "$TMPD/ws.samples.csv" --json >"$TMPD/ws.json" || return 1
	local n
	n="$(check poisson "$TMPD/ws.flows.csv" "$TMPD/ws.samples.csv")" || return 1
	e2e_log "  $n flows, $(cat "$TMPD/ws.json")"
	# 0.3 x 1 Gbit/s / (8 x 1 711 250 B) = 21.9 flows/s: ~66 in 3 s
	[[ $n -ge 30 && $n -le 110 ]]
}
e2e_check "poisson: all flows complete, CSVs well-formed, arrival count plausible" poisson_run

e2e_log "incast: 3 client processes, same --start-at, 3 bursts of 100 KB"
incast_run() {
	local start pids=() i rc=0
	start=$(($(mono_ns) + 1000000000))
	for i in 1 2 3; do
		client --incast 100k --bursts 3 --period 200ms --start-at "$start" --label "s$i" \
			--flows-csv "$TMPD/incast$i.csv" >/dev/null &
		pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i" || rc=1; done
	[[ $rc -eq 0 ]] && check incast "$start" 200000000 3 "$TMPD"/incast{1,2,3}.csv
}
e2e_check "incast: 3 x 3 flows complete, each burst starts at start-at + k x period" incast_run

# The experiment runner's start barrier, as over SSH: the client runs under
# `lumen host run --input`, says "ready" once set up and starts at the time
# it is then sent on its standard input
e2e_log "start barrier: --start-from-input through lumen host run --input"
barrier_run() {
	local start rc=0 pid w fifo="$TMPD/start.fifo"
	mkfifo "$fifo"
	"$LUMEN_BIN" host run --input -- ip netns exec "$CLI" "$LUMEN_BIN" traffic client --to "$DST" \
		--link-rate 1gbit --quiet --incast 100k --bursts 2 --period 200ms --start-from-input \
		--flows-csv "$TMPD/barrier.csv" <"$fifo" >/dev/null 2>"$TMPD/barrier.log" &
	pid=$!
	exec {w}>"$fifo"
	for _ in $(seq 100); do
		grep -qx ready "$TMPD/barrier.log" && break
		sleep 0.1
	done
	# waiting for its start time: no flow yet, however long it waits
	sleep 0.5
	[[ ! -s "$TMPD/barrier.csv" ]] && kill -0 "$pid" 2>/dev/null || rc=1
	start=$(($(mono_ns) + 300000000))
	((rc != 0)) || echo "start-at $start" >&"$w"
	wait "$pid" || rc=1
	exec {w}>&-
	[[ $rc -eq 0 ]] || cat "$TMPD/barrier.log"
	[[ $rc -eq 0 ]] && check incast "$start" 200000000 2 "$TMPD/barrier.csv"
}
e2e_check "start barrier: ready, then both bursts at the start time sent on stdin" barrier_run
barrier_refused() { # barrier_refused CODE PATTERN INPUT: the client's exit and message
	local out rc=0
	out="$(printf '%s' "$3" | client --long 1 --duration 1s --start-from-input 2>&1)" || rc=$?
	[[ $rc -eq $1 ]] && grep -q -- "$2" <<<"$out"
}
e2e_check "start barrier: input ends before a start time: exit 1, says so" \
	barrier_refused 1 "standard input ended before a start time" ""
e2e_check "start barrier: a malformed start line: exit 2, says what it got" \
	barrier_refused 2 "expected 'start-at MONO_NS', got 'go'" $'go\n'

e2e_log "per-flow congestion control"
cc_run() { # cc_run ALGO: ss shows it while the flow runs, and the record has it
	local algo="$1" pid rc=0
	client --long 1 --duration 2s --cc "$algo" --flows-csv "$TMPD/cc-$algo.csv" >/dev/null &
	pid=$!
	sleep 1
	ip netns exec "$CLI" ss -tin dst "$DST" >"$TMPD/ss-$algo.txt"
	wait "$pid" || rc=1
	grep -qw "$algo" "$TMPD/ss-$algo.txt" || {
		e2e_log "  ss shows: $(tr '\n' ' ' <"$TMPD/ss-$algo.txt")"
		rc=1
	}
	[[ $rc -eq 0 ]] && check cc "$TMPD/cc-$algo.csv" "$algo"
}
e2e_check "--cc reno: ss and flows.csv show reno" cc_run reno
e2e_check "--cc cubic: ss and flows.csv show cubic" cc_run cubic
refused_cc() {
	local out rc=0
	out="$(client --long 1 --duration 1s --cc nosuchcc 2>&1)" || rc=$?
	[[ $rc -eq 1 ]] && grep -q "congestion control 'nosuchcc' refused" <<<"$out"
}
e2e_check "--cc nosuchcc: exit 1 naming the algorithm" refused_cc

e2e_log "many concurrent flows"
many_run() {
	client --long 300 --duration 2s --flows-csv "$TMPD/many.csv" >/dev/null &&
		check many "$TMPD/many.csv" 300
}
e2e_check "300 concurrent long flows all complete" many_run
many_incast() {
	client --to "$DST,$DST,$DST,$DST" --incast 20k --bursts 2 --period 300ms --flows-csv "$TMPD/mi.csv" \
		>/dev/null || return 1
	[[ "$(($(wc -l <"$TMPD/mi.csv") - 1))" -eq 8 ]]
}
e2e_check "incast to 4 destinations x 2 bursts: 8 flows" many_incast

e2e_log "SIGINT"
sigint_run() {
	local pid rc=0 t0
	# not through client(): $! must be lumen itself (ip netns exec execs),
	# not a subshell, which would ignore SIGINT in the background
	ip netns exec "$CLI" "$LUMEN_BIN" traffic client --to "$DST" --quiet --long 2 --duration 60s \
		--flows-csv "$TMPD/int.flows.csv" --samples-csv "$TMPD/int.samples.csv" >/dev/null &
	pid=$!
	sleep 1.5
	t0=$(date +%s%N)
	kill -INT "$pid"
	wait "$pid" || rc=$?
	local ms=$((($(date +%s%N) - t0) / 1000000))
	e2e_log "  exit $rc after $ms ms"
	[[ $rc -eq 1 && $ms -lt 3000 ]] && check interrupted "$TMPD/int.flows.csv" "$TMPD/int.samples.csv"
}
e2e_check "SIGINT stops within 3 s, exit 1, CSVs written with error:interrupted" sigint_run

e2e_log "server robustness"
bad_header() {
	ip netns exec "$CLI" python3 -c '
import socket, sys
s = socket.create_connection((sys.argv[1], 5500))
s.sendall(b"GARBAGE-HEADER!!" + b"x" * 100)
s.settimeout(5)
try:
    sys.exit(0 if s.recv(16) == b"" else 1)
except ConnectionResetError:  # closed with our bytes unread
    sys.exit(0)' "$DST" &&
		client --incast 10k --bursts 1 --period 1ms >/dev/null &&
		grep -q "bad magic" "$TMPD/server.log"
}
e2e_check "a malformed header is dropped (logged) and the server keeps serving" bad_header
no_server() {
	local out rc=0
	out="$(client --port 5999 --incast 1k --bursts 1 --period 1ms --flows-csv "$TMPD/ns.csv" 2>&1)" || rc=$?
	[[ $rc -eq 1 ]] && grep -q "error:connect: Connection refused" "$TMPD/ns.csv"
}
e2e_check "no server: exit 1, flow recorded as error:connect" no_server

kill -INT "$SERVER_PID"
wait "$SERVER_PID"
e2e_check "server exits 0 on SIGINT" test $? -eq 0
e2e_finish
