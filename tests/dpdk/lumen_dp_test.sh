#!/usr/bin/env bash
# lumen_dp_test: lumen-dp end to end on DPDK's virtual devices, no NIC.
#
#   options   bad application and EAL options: a clear message, exit 2, no
#             runtime directory left behind
#   pair      client and server in one process over two ring ports: every
#             message delivered intact on a clean network, and through the
#             impairment shim (drop, duplicate, reorder, CE on data and
#             ACKs), with Go-Back-N, with blackholed paths, where REPS
#             must stop using the dead entropies and OPS cannot, and with
#             --cc hpcc and --cc timely
#   pcap      a client's first packets (SYNs) captured by net_pcap, checked field
#             by field (tests/dpdk/check_capture.py)
#   version   a frame of lumen-dp version 2 (net_pcap): a clear error, exit 3
#   telemetry a server on net_null answering /lumen/stats through
#             dpdk-telemetry.py, counting net_null's garbage as malformed,
#             naming its congestion control, and printing its final stats
#             on SIGINT
source "$(dirname "$0")/../e2e/lib.sh"
here="$(cd "$(dirname "$0")" && pwd)"
DP="${LUMEN_DP_BIN:?set LUMEN_DP_BIN to the lumen-dp binary}"
[[ $EUID -eq 0 ]] || e2e_skip "needs root (DPDK EAL)"
e2e_require_tools python3

tmp="$(mktemp -d)"
prefix="ldp$$"
e2e_on_exit "rm -rf '$tmp' /var/run/dpdk/$prefix*"
# EAL for one lcore, no hugepages, no PCI; a prefix of our own per run
eal() { echo --no-huge --no-pci -m 512 -l "${LUMEN_DP_LCORE:-0}" --log-level=error --file-prefix "$prefix$1"; }

# --- options -------------------------------------------------------------
e2e_check "no '--': usage and exit 2" e2e_fails 2 "give EAL's options" "$DP" pair
e2e_check "unknown mode" e2e_fails 2 "unknown mode 'nosuch'" "$DP" $(eal o1) -- nosuch
e2e_check "window not a power of two" e2e_fails 2 "power of two" "$DP" $(eal o2) -- pair --window 1000
e2e_check "bad impairment" e2e_fails 2 "unknown key 'lose'" "$DP" $(eal o3) -- pair --impair lose=1%
e2e_check "number out of range" e2e_fails 2 "--conns: '0'" "$DP" $(eal o4) -- pair --conns 0
e2e_check "unknown option" e2e_fails 2 "unknown option --frobnicate" "$DP" $(eal o5) -- pair --frobnicate
e2e_check "bad EAL option" e2e_fails 2 "EAL" "$DP" $(eal o6) --no-such-eal-option -- pair
e2e_check "perf without --ip" e2e_fails 2 "--ip" "$DP" $(eal o7) -- perf
e2e_check "start jitter without the randomized order" e2e_fails 2 "--no-randomize turns off" \
	"$DP" $(eal o9) -- pair --no-randomize --start-jitter-us 5
e2e_check "Go-Back-N with a spraying policy" e2e_fails 2 "single-path policy" "$DP" $(eal o10) -- pair --gbn --path reps
# one table of limits (transport/engine_limits.h): what the command line
# takes the engine takes, and both say so the same way
e2e_check "entropies past port 65535" e2e_fails 2 "at most 16384 entropies" "$DP" $(eal o11) -- pair --entropies 16385
e2e_check "entropies beyond the table" e2e_fails 2 "--entropies: '65537' is not a whole number in 1..65536" \
	"$DP" $(eal o12) -- pair --entropies 65537
e2e_check "an RTO ceiling beyond the engine's" e2e_fails 2 "--rto-max-us: '1099511628' is not a whole number in 1..1099511627" \
	"$DP" $(eal o13) -- pair --rto-max-us 1099511628
e2e_check "unknown path policy names them all" e2e_fails 2 "(ecmp, ops, reps, reps-freeze, ethereal)" \
	"$DP" $(eal o14) -- pair --path spray
e2e_check "--help per mode" bash -c "'$DP' $(eal o8) -- pair --help | grep -q -- '--impair SPEC'"
# the congestion controls by name, and their parameters: the options' ranges
# (engine_limits.h) and the cores' own checks (lumen/hpcc.h, lumen/timely.h)
e2e_check "unknown cc names them all" e2e_fails 2 "(dctcp, powertcp, theta-powertcp, hpcc, timely)" \
	"$DP" $(eal o15) -- pair --cc cubic
e2e_check "--help lists hpcc, timely and their options" bash -c \
	"'$DP' $(eal o16) -- pair --help | grep -- '--cc dctcp|powertcp|theta-powertcp|hpcc|timely' >/dev/null &&
	 '$DP' $(eal o16) -- pair --help | grep -- '--hpcc-eta F' >/dev/null &&
	 '$DP' $(eal o16) -- pair --help | grep -- '--timely-t-low-us N' >/dev/null"
e2e_check "hpcc: eta out of range" e2e_fails 2 "--hpcc-eta: '0.3' is not a fraction in 0.5..1" \
	"$DP" $(eal o17) -- pair --cc hpcc --hpcc-eta 0.3
e2e_check "timely: T_low above T_high, in the core's words" e2e_fails 2 "timely T_high must be above T_low" \
	"$DP" $(eal o18) -- pair --cc timely --timely-t-low-us 600
e2e_check "timely's options without --cc timely" e2e_fails 2 "--timely-alpha tunes --cc timely" \
	"$DP" $(eal o19) -- pair --cc hpcc --timely-alpha 0.5
e2e_check "host-bw-mbps out of range" e2e_fails 2 "--host-bw-mbps: '0'" \
	"$DP" $(eal o20) -- pair --cc hpcc --host-bw-mbps 0
e2e_check "base-rtt-us out of range" e2e_fails 2 "--base-rtt-us: '2000000'" \
	"$DP" $(eal o21) -- pair --cc powertcp --base-rtt-us 2000000
left="$(ls -d /var/run/dpdk/"$prefix"* 2>/dev/null | xargs -r -n1 ls -A 2>/dev/null | grep -v '^$' || true)"
e2e_check "refused runs leave no runtime files (${left:-none})" test -z "$left"

# --- pair ------------------------------------------------------------------
# pair NAME ARGS...: a pair run with a JSON summary in $tmp/NAME.json
pair() {
	local name="$1"
	shift
	"$DP" $(eal "$name") -- pair --quiet --json "$tmp/$name.json" "$@" >"$tmp/$name.out" 2>&1 ||
		{ cat "$tmp/$name.out"; return 1; }
}
js() { e2e_json "$2" <"$tmp/$1.json"; }

e2e_check "clean: 4 connections x 40 messages of 100 kB" pair clean --conns 4 --msgs 40 --msg-size 100000
e2e_check "clean: all delivered ($(js clean "d['totals']['msgs_delivered']"))" \
	test "$(js clean "d['totals']['msgs_delivered']")" -eq 160
e2e_check "clean: no retransmission" test "$(js clean "d['totals']['retransmits']")" -eq 0
e2e_check "clean: REPS state is $(js clean "d['config']['path_state_bytes']") bytes (< 32)" \
	test "$(js clean "d['config']['path_state_bytes']")" -lt 32

# HPCC (INT requested; nobody on a ring stamps hops, so it runs on its RTT
# fallback) and TIMELY, with parameters of their own: a short transfer each
e2e_check "hpcc: 2 connections x 20 messages of 100 kB" \
	pair hpcc --cc hpcc --int-slots 2 --hpcc-eta 0.9 --hpcc-max-stage 3 --host-bw-mbps 10000 --base-rtt-us 50 \
	--conns 2 --msgs 20 --msg-size 100000 --time 30
e2e_check "hpcc: the path's rate and tau in the summary" \
	test "$(js hpcc "(d['config']['host_bw_bps'], d['config']['base_rtt_ns'])")" = "(10000000000, 50000)"
e2e_check "timely: 2 connections x 20 messages of 100 kB" \
	pair timely --cc timely --timely-t-low-us 40 --timely-alpha 0.5 --conns 2 --msgs 20 --msg-size 100000 --time 30
for cc in hpcc timely; do
	e2e_check "$cc: all delivered, intact, named in the summary and per connection" \
		test "$(js $cc "(d['totals']['msgs_delivered'], d['totals']['corrupt'], d['config']['cc'], sorted({c['cc'] for h in d['hosts'] for c in h['connections']}))")" = "(40, 0, '$cc', ['$cc'])"
done

# jumbo frames: the pool's mbufs and the ports are sized for --mtu (2 KB
# mbufs once left every DATA unbuilt and the run hung)
e2e_check "jumbo: --mtu 4000" pair jumbo --mtu 4000 --msgs 20 --msg-size 100000 --time 30
e2e_check "jumbo: all delivered, in 4000-byte packets" python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))["totals"]
assert t["msgs_delivered"] == 20 and t["corrupt"] == 0, t
assert t["bytes_sent"] / t["data_sent"] > 3500, t' "$tmp/jumbo.json"

# randomized QP ordering with a start jitter: every connection's first
# message is an arrival, and everything still arrives
e2e_check "jitter: 8 connections x 10 messages, arrivals jittered by up to 300 us" \
	pair jitter --conns 8 --msgs 10 --msg-size 20000 --start-jitter-us 300
e2e_check "jitter: all delivered, order randomized, jitter in the config" \
	test "$(js jitter "(d['totals']['msgs_delivered'], d['config']['randomize_order'], d['config']['start_jitter_ns'], d['hosts'][0]['arrivals'] >= 8)")" = "(80, True, 300000, True)"

# --start-at lines the clients up on CLOCK_MONOTONIC; --fct-csv lists every message
t0=$(($(python3 -c 'import time; print(time.clock_gettime_ns(time.CLOCK_MONOTONIC))') + 1500000000))
e2e_check "start-at and fct-csv: 2 connections x 10 messages" \
	pair timed --conns 2 --msgs 10 --msg-size 50000 --start-at $t0 --fct-csv "$tmp/timed.csv"
e2e_check "start-at: clients started at $(js timed "d['clients_start_mono_ns']") >= $t0" \
	test "$(js timed "d['clients_start_mono_ns']")" -ge $t0
e2e_check "fct-csv: 20 messages, posted after the start, each done after posted" python3 - "$tmp/timed.csv" $t0 <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
t0 = int(sys.argv[2])
assert len(rows) == 20 and all(r["done_ns"] for r in rows), rows
assert all(int(r["posted_ns"]) >= t0 and int(r["done_ns"]) > int(r["posted_ns"]) for r in rows), rows
assert sorted((int(r["conn"]), int(r["msg"])) for r in rows) == [(c, m) for c in (1, 2) for m in range(10)], rows
PY

if (($(nproc) >= 2)); then
	rc=0
	"$DP" --no-huge --no-pci -m 512 -l 0,1 --log-level=error --file-prefix "${prefix}two" -- pair --quiet \
		--json "$tmp/two.json" --conns 4 --msgs 20 --msg-size 100000 --impair drop=1%,reorder=2% \
		>"$tmp/two.out" 2>&1 || rc=$?
	e2e_check "two lcores (client on one, server on the other): exit $rc" test "$rc" -eq 0
	e2e_check "two lcores: all delivered" test "$(js two "d['totals']['msgs_delivered']")" -eq 80
fi

e2e_check "impaired: drop, dup, reorder, CE on data; drop on ACKs" \
	pair impaired --conns 3 --msgs 20 --msg-size 150001 --impair drop=2%,dup=1%,reorder=5%,ce=3%,acks,seed=11
for k in retransmits ecn_echoes dup_rcvd reorder_max; do
	v="$(js impaired "d['totals']['$k']")"
	e2e_check "impaired: $k > 0 ($v)" test "$v" -gt 0
done
e2e_check "impaired: nothing corrupt" test "$(js impaired "d['totals']['corrupt']")" -eq 0

e2e_check "go-back-n with 1% loss" pair gbn --gbn --path ecmp --msgs 20 --msg-size 50000 --impair drop=1%,seed=3
v="$(js gbn "d['totals']['nacks_rcvd']")"
e2e_check "go-back-n: NACKs drove the resends ($v)" test "$v" -gt 0

# two of 8 paths blackholed: OPS keeps spraying into them, REPS recycles
# only entropies that came back
holes="blackhole=49154:49157"
for p in ops reps reps-freeze; do
	e2e_check "$p through 2 dead paths of 8" \
		pair "$p" --path $p --entropies 8 --explore 8 --conns 2 --msgs 30 --msg-size 60000 --impair $holes
done
share() { js "$1" "round(sum(r[0] for i, r in enumerate(d['hosts'][0]['paths']['rows']) if i in (2, 5)) / max(1, sum(r[0] for r in d['hosts'][0]['paths']['rows'])), 3)"; }
ops="$(share ops)" reps="$(share reps)" freeze="$(share reps-freeze)"
e2e_log "share of packets sent into the dead paths: ops $ops, reps $reps, reps-freeze $freeze"
e2e_check "ops sprays into the dead paths ($ops >= 0.15)" python3 -c "assert $ops >= 0.15"
e2e_check "reps avoids them ($reps <= $ops / 2)" python3 -c "assert $reps <= $ops / 2"
e2e_check "reps-freeze avoids them ($freeze <= $ops / 2)" python3 -c "assert $freeze <= $ops / 2"
t_ops="$(js ops "d['totals']['timeouts']")" t_reps="$(js reps "d['totals']['timeouts']")"
e2e_check "reps times out less than ops ($t_reps < $t_ops)" test "$t_reps" -lt "$t_ops"

# --- pcap ------------------------------------------------------------------
python3 -c "import struct, sys; sys.stdout.buffer.write(struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))" \
	>"$tmp/empty.pcap"
rc=0
"$DP" $(eal p) --vdev "net_pcap0,rx_pcap=$tmp/empty.pcap,tx_pcap=$tmp/out.pcap" -- perf --quiet --ip 10.1.0.1 \
	--peer 10.1.0.2 --peer-mac 02:00:00:00:00:02 --msgs 1 --msg-size 3000 --time 0.3 --seed 5 \
	>"$tmp/pcap.out" 2>&1 || rc=$?
e2e_check "pcap client ran (exit $rc: no server, so unfinished = 1)" test "$rc" -eq 1
e2e_check "capture: the SYNs of a handshake nobody answers, field by field" \
	python3 "$here/check_capture.py" "$tmp/out.pcap" --src 10.1.0.1 --dst 10.1.0.2

# --- a peer that speaks another version --------------------------------------
python3 - "$tmp/v2.pcap" <<'PY'
import struct, sys
lumen = struct.pack("!BBBBIIQIII", 2, 1, 0, 0, 1, 0, 0, 0, 0, 4) + b"abcd"  # version 2 DATA
udp = struct.pack("!HHHH", 49152, 4792, 8 + len(lumen), 0) + lumen
ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 2, 20 + len(udp), 0, 0x4000, 64, 17, 0,
                           bytes([10, 3, 0, 1]), bytes([10, 3, 0, 2])))
s = sum(struct.unpack("!10H", ip))
s = (s & 0xFFFF) + (s >> 16)
ip[10:12] = struct.pack("!H", ~s & 0xFFFF)
frame = bytes(6) + bytes([2, 0, 0, 0, 0, 1]) + b"\x08\x00" + bytes(ip) + udp
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    f.write(struct.pack("<IIII", 0, 0, len(frame), len(frame)) + frame)
PY
rc=0
"$DP" $(eal v) --vdev "net_pcap0,rx_pcap=$tmp/v2.pcap,tx_pcap=$tmp/v2out.pcap" -- perf --server --quiet \
	--ip 10.3.0.2 --time 0.5 >"$tmp/v2.out" 2>&1 || rc=$?
e2e_check "a peer of another version: exit 3 ($rc)" test "$rc" -eq 3
e2e_check "... and says who and which version" \
	grep -q "10.3.0.1 speaks lumen-dp version 2, this is version 1" "$tmp/v2.out"

# --- telemetry and SIGINT ----------------------------------------------------
"$DP" $(eal t) --vdev net_null0 -- perf --server --quiet --ip 10.2.0.2 --cc timely --json "$tmp/server.json" \
	>"$tmp/server.out" 2>&1 &
pid=$!
e2e_on_exit "kill -9 $pid 2>/dev/null || true"
tel=""
e2e_wait_until 50 0.2 test -S "/var/run/dpdk/${prefix}t/dpdk_telemetry.v2" || true
for _ in $(seq 1 50); do
	tel="$(echo /lumen/stats | dpdk-telemetry.py -f "${prefix}t" 2>/dev/null | grep '^{' || true)"
	grep -q malformed <<<"$tel" && break
	sleep 0.2
done
v="$(e2e_json "d['/lumen/stats']['malformed']" <<<"$tel" 2>/dev/null || echo none)"
e2e_check "telemetry /lumen/stats answers, net_null's garbage counted as malformed ($v)" \
	python3 -c "assert '$v'.isdigit() and int('$v') > 0"
v="$(e2e_json "d['/lumen/stats']['cc']" <<<"$tel" 2>/dev/null || echo none)"
e2e_check "telemetry names the congestion control ($v)" test "$v" = timely
kill -INT "$pid"
rc=0
wait "$pid" || rc=$?
e2e_check "SIGINT: clean exit ($rc)" test "$rc" -eq 0
e2e_check "SIGINT: final stats printed" grep -q "lumen-dp perf:" "$tmp/server.out"
e2e_check "SIGINT: JSON summary written" test -s "$tmp/server.json"

e2e_finish
