#!/usr/bin/env bash
# fabric_test: lumen-dp over a real ECMP fabric of Linux routers on one machine.
#
# The fabric is a leaf-spine of network namespaces (2 leaves, 4 spines, 4
# hosts per leaf), built here with ip commands (not `lumen testbed`, whose
# hosts are namespaces and whose every switch port is an INT switch port):
#
#   - routers: ip_forward, rp_filter off, ECMP on the L4 hash
#     (fib_multipath_hash_policy=1) with a fixed hash seed, IPv6 off; leaf l
#     reaches the other leaf's 10.m.0.0/16 over every spine (one multipath
#     route), spine s reaches 10.l.0.0/16 over its link to leaf l; leaf l <->
#     spine s is 10.(100+s).l.1/24 <-> .2 (lumen testbed's scheme);
#   - hosts: host i of leaf l is 10.l.i.1; its access veth has its host end in
#     the root namespace, with no address, IPv6 off and forwarding off (the
#     root's IP stack drops what net_af_packet also receives there, silently:
#     no route and no ICMP, which the test checks), and its leaf end named h<i> with
#     the gateway 10.l.i.254/24 and a permanent neighbour entry for the host
#     (no kernel answers ARP for it); the hosts use the leaf end's MAC as
#     their gateway MAC.
#
# One lumen-dp process serves all 8 hosts from one lcore (-l 1), a port per
# host through net_af_packet (FABRIC_PMD=af_xdp: net_af_xdp), in `hosts`
# mode. After its option checks, it checks:
#
#   permutation  every host sends to the host of the same index on the other
#                leaf (shift 4; one connection per pair), with ecmp, ops and
#                reps: every message delivered intact; packets per spine
#                (from the spines' interface counters): OPS and REPS spread
#                over all 4 spines (max/mean close to 1), ECMP pins each
#                connection to one spine (the spines' counts are sums of
#                whole connections; imbalance above OPS's); the root
#                namespace and the routers send no ICMP;
#   failure      the hosts of leaf 2 send to those of leaf 1 (pairs) and the
#                link leaf1-spine1 goes down 1 s into the run (in leaf 1's
#                namespace: leaf 1 routes around it, leaf 2 does not know and
#                keeps hashing a quarter of the flows' entropies into a black
#                hole at spine 1), after a healthy run for reference: with
#                ops, reps and reps-freeze every message is delivered; REPS
#                times out less than OPS, sends less into the dead link
#                (sampled every 100 ms) and has a lower p99 completion time.
#                (The ACKs go leaf 1 -> leaf 2, which avoids the dead
#                link, so what enters spine 1 from leaf 2 is DATA; the
#                spray experiment has failures on both paths.)
#
#   discovery    with --discover-paths, every host probes its destination's
#                paths (TTL 2: the probe expires at a spine) and maps 2
#                source ports to each of the 4 spines; each is checked
#                against the leaf's FIB (`ip route get` with its 5-tuple);
#                then --path ethereal pins each host's 4 connections to the 4
#                uplinks through those ports: every spine carries a quarter
#                (ECMP's hash of the same connections, for comparison).
#
# It prints what it measures: per-spine packets, imbalance, timeouts,
# retransmissions and message completion times.
source "$(dirname "$0")/../e2e/lib.sh"
DP="${LUMEN_DP_BIN:?set LUMEN_DP_BIN to the lumen-dp binary}"
[[ $EUID -eq 0 ]] || e2e_skip "needs root (DPDK EAL, namespaces, veths in the root namespace)"
e2e_require_tools ip ethtool python3
(($(nproc) >= 2)) || e2e_skip "needs 2 cores (lumen-dp busy-polls one, the routers forward on the other)"

LEAVES=2 SPINES=4 HPL=4
# how lumen-dp reaches the veths: af_packet (the default; the root's IP stack
# also sees the frames and drops them) or af_xdp (XDP takes them first)
PMD="${FABRIC_PMD:-af_packet}"
[[ $PMD == af_packet || $PMD == af_xdp ]] || e2e_skip "FABRIC_PMD=$PMD: af_packet or af_xdp"
HASH_SEED="${FABRIC_HASH_SEED:-7}"
tmp="$(mktemp -d)"
prefix="ldf$$"
e2e_on_exit "rm -rf '$tmp' /var/run/dpdk/$prefix*"
t_start=$SECONDS

# --- hosts mode's options (checked before EAL starts) -----------------------------
M=02:00:00:00:00:01
e2e_check "--host without a MAC" e2e_fails 2 "not PORT,IP,GATEWAY_MAC" "$DP" -- hosts --host 0,10.1.1.1
e2e_check "one host" e2e_fails 2 "give 2..64 hosts" "$DP" -- hosts --host 0,10.1.1.1,$M
e2e_check "two hosts on a port" e2e_fails 2 "one host per port" "$DP" -- hosts --host 0,10.1.1.1,$M --host 0,10.1.1.2,$M
e2e_check "two hosts with one address" e2e_fails 2 "two hosts have the address 10.1.1.1" \
	"$DP" -- hosts --host 0,10.1.1.1,$M --host 1,10.1.1.1,$M
e2e_check "pairs of an odd number" e2e_fails 2 "even number of hosts" \
	"$DP" -- hosts --pattern pairs --host 0,10.1.1.1,$M --host 1,10.1.1.2,$M --host 2,10.1.1.3,$M
e2e_check "shift out of range" e2e_fails 2 "permutation's, 1..1" \
	"$DP" -- hosts --shift 2 --host 0,10.1.1.1,$M --host 1,10.1.1.2,$M
e2e_check "unknown pattern" e2e_fails 2 "unknown pattern 'ring'" "$DP" -- hosts --pattern ring

# --- the fabric ----------------------------------------------------------------
router_sysctls=(net.ipv4.ip_forward=1 net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0
	net.ipv4.fib_multipath_hash_policy=1 "net.ipv4.fib_multipath_hash_seed=$HASH_SEED"
	net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1)
declare -A NS
router() { # router NAME: a namespace (e2e_ns) with the router sysctls
	local ns
	e2e_ns "$1" ns
	NS[$1]="$ns"
	ip netns exec "$ns" sysctl -qw "${router_sysctls[@]}"
}
offloads_off() { ethtool -K "$1" tso off gso off gro off tx off rx off >/dev/null 2>&1 || true; }

build_fabric() {
	local l s m i nh
	for ((l = 1; l <= LEAVES; l++)); do router "leaf$l"; done
	for ((s = 1; s <= SPINES; s++)); do router "spine$s"; done
	for ((l = 1; l <= LEAVES; l++)); do
		for ((s = 1; s <= SPINES; s++)); do
			e2e_link "${NS[leaf$l]}" "spine$s" "${NS[spine$s]}" "leaf$l"
			ip -n "${NS[leaf$l]}" addr add "10.$((100 + s)).$l.1/24" dev "spine$s"
			ip -n "${NS[spine$s]}" addr add "10.$((100 + s)).$l.2/24" dev "leaf$l"
		done
	done
	for ((l = 1; l <= LEAVES; l++)); do
		for ((m = 1; m <= LEAVES; m++)); do
			((m != l)) || continue
			nh=()
			for ((s = 1; s <= SPINES; s++)); do nh+=(nexthop via "10.$((100 + s)).$l.2" dev "spine$s"); done
			ip -n "${NS[leaf$l]}" route add "10.$m.0.0/16" "${nh[@]}"
		done
		for ((s = 1; s <= SPINES; s++)); do
			ip -n "${NS[spine$s]}" route add "10.$l.0.0/16" via "10.$((100 + s)).$l.1" dev "leaf$l"
		done
	done
	HOST_ARGS=() VDEVS=() HOST_DEVS=() HOST_IPS=()
	local dev ns mac gw port=0
	for ((l = 1; l <= LEAVES; l++)); do
		ns="${NS[leaf$l]}"
		for ((i = 1; i <= HPL; i++)); do
			dev="${E2E_TAG}h$l$i"
			ip link add "$dev" type veth peer name "h$i" netns "$ns"
			e2e_on_exit "ip link del '$dev'"
			sysctl -qw "net.ipv6.conf.$dev.disable_ipv6=1" "net.ipv4.conf.$dev.forwarding=0"
			offloads_off "$dev"
			ip netns exec "$ns" bash -c "$(declare -f offloads_off); offloads_off h$i"
			ip link set "$dev" up
			ip -n "$ns" link set "h$i" up
			ip -n "$ns" addr add "10.$l.$i.254/24" dev "h$i"
			mac="$(cat "/sys/class/net/$dev/address")"
			ip -n "$ns" neigh replace "10.$l.$i.1" lladdr "$mac" dev "h$i" nud permanent
			gw="$(ip netns exec "$ns" cat "/sys/class/net/h$i/address")"
			HOST_ARGS+=(--host "$port,10.$l.$i.1,$gw")
			if [[ $PMD == af_xdp ]]; then
				VDEVS+=(--vdev "net_af_xdp$port,iface=$dev")
			else
				VDEVS+=(--vdev "net_af_packet$port,iface=$dev,framecnt=2048,qdisc_bypass=1")
			fi
			HOST_DEVS+=("$dev")
			HOST_IPS+=("10.$l.$i.1")
			port=$((port + 1))
		done
	done
}

build_fabric
e2e_log "fabric: $LEAVES leaves, $SPINES spines, $((LEAVES * HPL)) hosts, built in $((SECONDS - t_start)) s"
if [[ -n "${FABRIC_KEEP:-}" ]]; then # debugging: keep the fabric, write lumen-dp's arguments to a file
	echo "${VDEVS[*]} -- hosts ${HOST_ARGS[*]}" >"$FABRIC_KEEP"
	e2e_log "fabric kept until this script is stopped; lumen-dp arguments in $FABRIC_KEEP"
	sleep infinity &
	e2e_on_exit "kill $!"
	wait $!
fi

# --- measuring -------------------------------------------------------------------
# Spine interface counters and lumen-dp's JSON summaries. A DATA frame of a
# message whose size is a multiple of 1440 B (the payload per packet at MTU
# 1500) is 1514 B, an ACK 82 B: from the packets P and bytes B that entered a
# spine, its DATA packets are (B - 82 P) / 1432. ACKs travel on the entropy of
# the DATA they answer, but on the reverse path's hash: the spread is
# measured on DATA packets.
cat >"$tmp/fabric.py" <<'PY'
import itertools, json, subprocess, sys

DATA, ACK = 1514, 82

def snap(out, namespaces):
    d = {}
    for ns in namespaces:
        links = json.loads(subprocess.check_output(["ip", "-n", ns, "-s", "-j", "link", "show"]))
        d[ns] = {l["ifname"]: l["stats64"]["rx"] for l in links if l["ifname"] != "lo"}
    json.dump(d, open(out, "w"))

def delta(before, after):
    b, a = json.load(open(before)), json.load(open(after))
    out = []
    for ns in a:
        p = sum(a[ns][i]["packets"] - b[ns][i]["packets"] for i in a[ns])
        by = sum(a[ns][i]["bytes"] - b[ns][i]["bytes"] for i in a[ns])
        out.append((p, round((by - ACK * p) / (DATA - ACK))))
    return out

def analyze(name, tmp):
    d = json.load(open(f"{tmp}/{name}.json"))
    t = d["totals"]
    spines = delta(f"{tmp}/{name}.before", f"{tmp}/{name}.after")
    data = [s[1] for s in spines]
    mean = sum(data) / len(data)
    # ECMP: whether the connections' DATA packets (retransmissions
    # included) can be dealt to the spines so that each carries exactly
    # what it counted, every connection on one spine
    conns = [c["stats"]["data_sent"] for h in d["hosts"] for c in h["connections"] if c["client"]]
    # (an exhaustive deal: only for the few connections of the ECMP run
    # that checks it, 4^8 deals; 32 connections would take forever)
    whole = d["config"]["path"] == "ecmp" and len(conns) <= 10 and any(
        all(sum(n for n, s in zip(conns, deal) if s == k) == x for k, x in enumerate(data))
        for deal in itertools.product(range(len(data)), repeat=len(conns)))
    v = {
        "msgs": t["msgs_delivered"], "corrupt": t["corrupt"], "sent": t["data_sent"],
        "retx": t["retransmits"], "timeouts": t["timeouts"],
        "p50": round(d["fct_us"]["p50"]), "p99": round(d["fct_us"]["p99"]), "max": round(d["fct_us"]["max"]),
        "secs": round(d["seconds"], 2), "gbps": round(d["goodput_gbps"], 3),
        "spine_pkts": ",".join(str(s[0]) for s in spines), "spine_data": ",".join(str(x) for x in data),
        "spine_sum": sum(data), "idle": sum(1 for x in data if x < 0.01 * mean),
        "imbalance": round(max(data) / mean, 3) if mean else 0, "whole": int(whole),
    }
    for k, x in v.items():
        print(f"{k}={x}")

if sys.argv[1] == "snap":
    snap(sys.argv[2], sys.argv[3:])
elif sys.argv[1] == "analyze":
    analyze(sys.argv[2], sys.argv[3])
elif sys.argv[1] == "hole":
    # samples "seconds packets" from the failure on: the total, when the
    # last one arrived, and the packets of each 100 ms
    rows = [tuple(map(float, l.split())) for l in open(sys.argv[2]) if len(l.split()) == 2]
    total = int(rows[-1][1] - rows[0][1]) if rows else 0
    last = max((r[0] - rows[0][0] for i, r in enumerate(rows[1:], 1) if r[1] > rows[i - 1][1]), default=0)
    steps = ",".join(str(int(r[1] - rows[i - 1][1])) for i, r in enumerate(rows[1:], 1))
    print(f"hole={total}\nhole_last_ms={round(last * 1000)}\nhole_steps={steps}")
PY
SPINE_NS=()
for ((s = 1; s <= SPINES; s++)); do SPINE_NS+=("${NS[spine$s]}"); done
snap() { python3 "$tmp/fabric.py" snap "$1" "${SPINE_NS[@]}"; }
# analyze NAME: the run's numbers as shell variables NAME_<key>
analyze() {
	local k v
	while IFS='=' read -r k v; do printf -v "${1//-/_}_$k" '%s' "$v"; done < <(python3 "$tmp/fabric.py" analyze "$1" "$tmp")
}
get() { local n="${1//-/_}_$2"; echo "${!n:-}"; }
# ICMP messages sent: by the root namespace, or with NS by the routers too
icmp_out() {
	local ns t=0
	for ns in "" "$@"; do
		t=$((t + $(${ns:+ip netns exec "$ns"} awk '/^Icmp:/ { n++ } /^Icmp:/ && n == 2 { print $16 }' /proc/net/snmp)))
	done
	echo $t
}
ip_addr_errors() { awk '/^Ip:/ { n++ } /^Ip:/ && n == 2 { print $6 }' /proc/net/snmp; }

# run NAME ARGS...: one lumen-dp process for all hosts on one lcore, spine
# counters before and after; ARGS are the hosts mode's
MSG=144000 # 100 packets
DP_PID=
run() {
	local name="$1" rc=0
	shift
	snap "$tmp/$name.before"
	local mode=(hosts --msg-size "$MSG")
	[[ -z "${COLLECTIVE:-}" ]] || mode=(collective --collective "$COLLECTIVE")
	"$DP" --no-huge --no-pci -m 1024 -l 1 --log-level=error --file-prefix "$prefix$name" "${VDEVS[@]}" -- \
		"${mode[@]}" --json "$tmp/$name.json" "$@" >"$tmp/$name.out" 2>&1 &
	DP_PID=$!
	[[ -z "${ON_START:-}" ]] || "$ON_START" "$name"
	wait "$DP_PID" || rc=$?
	DP_PID=
	snap "$tmp/$name.after"
	[[ $rc -eq 0 ]] || { e2e_log "lumen-dp $name: exit $rc"; tail -20 "$tmp/$name.out"; }
	[[ -s "$tmp/$name.json" ]] && analyze "$name"
	return $rc
}
e2e_on_exit '[[ -z "$DP_PID" ]] || kill -9 "$DP_PID"'
report() { # report NAME: the numbers of a run, in the log
	local n="$1"
	e2e_log "$n: $(get "$n" msgs) messages, $(get "$n" secs) s ($(get "$n" gbps) Gbit/s), FCT p50 $(get "$n" p50) us p99 $(get "$n" p99) us max $(get "$n" max) us, $(get "$n" retx) retransmitted, $(get "$n" timeouts) timeouts"
	e2e_log "$n: DATA packets per spine $(get "$n" spine_data) (sum $(get "$n" spine_sum) of $(get "$n" sent) sent), imbalance max/mean $(get "$n" imbalance); all packets per spine $(get "$n" spine_pkts)"
	grep -- ' -> ' "$tmp/$n.out" | sed "s/^/[$(basename "$0" .sh)]   $n /" || true
}

# --- permutation: ecmp, ops, reps ------------------------------------------------
NHOSTS=$((LEAVES * HPL))
PERM_MSGS=200
icmp0="$(icmp_out)" drops0="$(ip_addr_errors)" ricmp0="$(icmp_out "${NS[@]}")"
for p in ecmp ops reps; do
	e2e_check "permutation, $p: every message delivered intact (lumen-dp's own check)" \
		run "perm-$p" "${HOST_ARGS[@]}" --pattern permutation --shift "$HPL" --path "$p" --msgs $PERM_MSGS --quiet
	report "perm-$p"
	e2e_check "permutation, $p: $(get "perm-$p" msgs) = $NHOSTS x $PERM_MSGS messages, none corrupt" \
		test "$(get "perm-$p" msgs)" -eq $((NHOSTS * PERM_MSGS)) -a "$(get "perm-$p" corrupt)" -eq 0
	e2e_check "permutation, $p: every DATA packet crossed a spine ($(get "perm-$p" spine_sum) of $(get "perm-$p" sent))" \
		python3 -c "assert abs($(get "perm-$p" spine_sum) - $(get "perm-$p" sent)) <= 0.01 * $(get "perm-$p" sent)"
done
for p in ops reps; do
	e2e_check "permutation, $p: packets on all $SPINES spines, imbalance $(get "perm-$p" imbalance) <= 1.25" \
		python3 -c "assert $(get "perm-$p" idle) == 0 and $(get "perm-$p" imbalance) <= 1.25"
done
e2e_check "permutation, ecmp: each connection on one spine (the spines carry whole connections: $(get perm-ecmp spine_data))" \
	test "$(get perm-ecmp whole)" -eq 1
e2e_check "permutation, ecmp: connections collide, imbalance $(get perm-ecmp imbalance) > ops $(get perm-ops imbalance)" \
	python3 -c "assert $(get perm-ecmp imbalance) > $(get perm-ops imbalance)"
icmp1="$(icmp_out)" drops1="$(ip_addr_errors)" ricmp1="$(icmp_out "${NS[@]}")"
e2e_log "root namespace: its IP stack dropped $((drops1 - drops0)) frames of the fabric (no address, no forwarding), sent $((icmp1 - icmp0)) ICMP messages"
e2e_check "root namespace stays silent: no ICMP sent ($((icmp1 - icmp0)))" test "$((icmp1 - icmp0))" -eq 0
e2e_check "routers and root sent no ICMP ($((ricmp1 - ricmp0)))" test "$((ricmp1 - ricmp0))" -eq 0

# --- a link failure: leaf 2's hosts send to leaf 1's, leaf1-spine1 goes down --------
# pairs: host 2k sends to host 2k+1, so list them leaf 2 first, leaf 1 second
PAIRS=()
for ((i = 0; i < HPL; i++)); do PAIRS+=("${HOST_ARGS[@]:$((2 * (HPL + i))):2}" "${HOST_ARGS[@]:$((2 * i)):2}"); done
FAIL_MSGS=800
L1="${NS[leaf1]}" S1="${NS[spine1]}"
# at the first progress line (1 s into the run): down, then sample what
# enters spine 1 from leaf 2 (all of it lost) every 100 ms
fail_link() {
	local out="$tmp/$1.out" i
	for ((i = 0; i < 200; i++)); do
		grep -q ' s  tx ' "$out" 2>/dev/null && break
		sleep 0.05
	done
	ip -n "$L1" link set spine1 down
	: >"$tmp/$1.hole"
	while kill -0 "$DP_PID" 2>/dev/null; do
		echo "$(date +%s.%N) $(ip netns exec "$S1" cat /sys/class/net/leaf2/statistics/rx_packets)" >>"$tmp/$1.hole"
		sleep 0.1
	done
}
restore_link() {
	ip -n "$L1" link set spine1 up
	e2e_wait_until 20 0.1 ip netns exec "$L1" ping -c 1 -W 1 -q 10.101.1.2 >/dev/null
	ip netns exec "$S1" ping -c 1 -W 1 -q 10.101.1.1 >/dev/null || true
}
e2e_check "healthy, reps: leaf 2 -> leaf 1, every message delivered" \
	run healthy --pattern pairs "${PAIRS[@]}" --path reps --msgs $FAIL_MSGS --quiet
report healthy
# the failure comes 1 s in: make the runs last 2.5 s or more when healthy;
# the runs with a dead link may take several times the healthy one (a
# sanitized build here: healthy 14 s, ops 38 s), so their limit scales too
FAIL_MSGS="$(python3 -c "print(max($FAIL_MSGS, int($FAIL_MSGS * 2.5 / max(0.1, float('${healthy_secs:-2.5}')))))")"
FAIL_TIME="$(python3 -c "print(max(30, int(6 * float('${healthy_secs:-2.5}'))))")"
for p in ops reps reps-freeze; do
	ON_START=fail_link
	e2e_check "failure, $p: every message delivered intact" \
		run "fail-$p" --pattern pairs "${PAIRS[@]}" --path "$p" --msgs $FAIL_MSGS --time "$FAIL_TIME"
	ON_START=
	restore_link
	report "fail-$p"
	eval "$(python3 "$tmp/fabric.py" hole "$tmp/fail-$p.hole" | sed "s/^/fail_${p//-/_}_/")"
	e2e_log "fail-$p: $(get "fail-$p" hole) packets into the dead link after the failure, the last $(get "fail-$p" hole_last_ms) ms after it; per 100 ms: $(get "fail-$p" hole_steps)"
done
e2e_check "failure: reps times out less than ops ($(get fail-reps timeouts) < $(get fail-ops timeouts))" \
	test "$(get fail-reps timeouts)" -lt "$(get fail-ops timeouts)"
e2e_check "failure: reps sends less into the dead link than ops ($(get fail-reps hole) < $(get fail-ops hole) / 4)" \
	test "$(get fail-reps hole)" -lt $(($(get fail-ops hole) / 4))
# completion times are for the log: on a shared 2-core machine they are
# measurements, not something a test can hold a run to
e2e_log "failure: message completion p99 reps $(get fail-reps p99) us, ops $(get fail-ops p99) us"

# --- path discovery: TTL-limited probes map source ports to spines ---------------
# Every host probes the path to its destination before its client starts
# (--discover-paths): a probe expires at the spine the leaf's hash chose,
# whose ICMP Time Exceeded names it. The oracle is the leaf's own FIB: `ip
# route get` with the probe's 5-tuple, entering from the host's port, names
# the nexthop that hash picks for it. Routers limit ICMP errors per
# destination (icmp_ratelimit, 1 per s after a burst of 6): the spines here
# answer every probe, as a testbed operator sets up a fabric for discovery.
for ((s = 1; s <= SPINES; s++)); do
	ip netns exec "${NS[spine$s]}" sysctl -qw net.ipv4.icmp_ratelimit=0
	ip netns exec "${NS[spine$s]}" sysctl -qw net.ipv4.icmp_msgs_per_sec=100000 2>/dev/null || true
done
e2e_check "discovery: permutation with --discover-paths $SPINES, every message delivered" \
	run discover "${HOST_ARGS[@]}" --pattern permutation --shift "$HPL" --path ecmp --msgs 20 \
	--discover-paths "$SPINES" --quiet
grep 'paths' "$tmp/discover.out" | sed "s/^/[$(basename "$0" .sh)]   discover /" || true
e2e_check "discovery: every host found 2 source ports to each of the $SPINES spines, each where the leaf's FIB sends it" \
	python3 - "$tmp/discover.json" "$SPINES" "${NS[leaf1]}" "${NS[leaf2]}" <<'PY'
import json, subprocess, sys
d = json.load(open(sys.argv[1]))
spines, leaf_ns = int(sys.argv[2]), sys.argv[3:]
p = d["paths"]
assert p["settled"], p
checked = 0
for h in p["hosts"]:
    _, leaf, idx, _ = map(int, h["host"].split("."))
    assert h["malformed"] == 0 and h["unmatched"] == 0 and h["unknown_router"] == 0, h
    for dest in h["dests"]:
        routers = sorted(u["router"] for u in dest["uplinks"])
        # a spine answers from its address on the link to this host's leaf
        assert routers == sorted(f"10.{100 + s}.{leaf}.2" for s in range(1, spines + 1)), (h["host"], routers)
        for u in dest["uplinks"]:
            assert len(u["entropies"]) >= 2, (h["host"], dest["dst"], u)
            for e in u["entropies"]:
                out = subprocess.check_output(
                    ["ip", "-n", leaf_ns[leaf - 1], "route", "get", dest["dst"], "from", h["host"], "iif",
                     f"h{idx}", "ipproto", "udp", "sport", str(49152 + e), "dport", "4792"], text=True)
                assert f"via {u['router']} " in out, (h["host"], dest["dst"], e, u["router"], out)
                checked += 1
print(f"{checked} source ports checked against the leaves' FIBs, discovery took {p['ms']:.1f} ms")
PY

# Ethereal's uplinks made real: 4 connections per host, pinned to the 4
# uplinks in turn through the ports the probes found, against ECMP's hash
# of the same 32 connections. Pinned, every spine carries a quarter.
for p in ecmp ethereal; do
	extra=()
	[[ $p == ethereal ]] && extra=(--discover-paths "$SPINES")
	e2e_check "4 connections per host, $p: every message delivered" \
		run "pin-$p" "${HOST_ARGS[@]}" --pattern permutation --shift "$HPL" --path "$p" --conns 4 --msgs 50 \
		--quiet "${extra[@]}"
	report "pin-$p"
done
e2e_check "ethereal: each host's 4 connections on the 4 uplinks, one each" python3 - "$tmp/pin-ethereal.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
loads = {h: u["subflows_per_uplink"] for h, u in d["uplinks"].items()}
assert all(l == [1, 1, 1, 1] for l in loads.values()), loads
assert all(u["rerouted"] == 0 for u in d["uplinks"].values()), d["uplinks"]
PY
e2e_check "ethereal: DATA on all $SPINES spines, imbalance $(get pin-ethereal imbalance) <= 1.05 (ecmp: $(get pin-ecmp imbalance))" \
	python3 -c "assert $(get pin-ethereal idle) == 0 and $(get pin-ethereal imbalance) <= 1.05"
# The maps follow the fabric. With --probe-age-ms 300, leaf 1's link to
# spine 1 goes down 1 s into an Ethereal run (in leaf 1: it hashes around
# the link). Leaf 1's hosts' subflows pinned to spine 1 now cross other
# spines; their maps, probed again as they age, drop spine 1, and every
# port left is where leaf 1's FIB now sends it. (Leaf 2's probes still
# expire at spine 1, which is alive: a TTL-limited probe sees the spine, not
# the link behind it. Its subflows through spine 1 time out and Ethereal
# moves them, probing again at each move.)
down_link() { # at the first progress line (1 s in)
	local i
	for ((i = 0; i < 200; i++)); do
		grep -q ' s  tx ' "$tmp/$1.out" 2>/dev/null && break
		sleep 0.05
	done
	ip -n "$L1" link set spine1 down
}
ON_START=down_link
e2e_check "refresh, ethereal: leaf1-spine1 down 1 s in, every message delivered" \
	run refresh "${HOST_ARGS[@]}" --pattern permutation --shift "$HPL" --path ethereal --conns 4 --msgs 100 \
	--time 60 --discover-paths "$SPINES" --probe-age-ms 300
ON_START=
report refresh
e2e_check "refresh: leaf 1's maps dropped spine 1, and every port left goes where leaf 1's FIB sends it" \
	python3 - "$tmp/refresh.json" "$L1" <<'PY'
import json, subprocess, sys
d = json.load(open(sys.argv[1]))
checked = 0
for h in d["paths_after"]:
    _, leaf, idx, _ = map(int, h["host"].split("."))
    if leaf != 1:
        continue
    assert h["discoveries"] > len(h["dests"]), h  # probed again
    for dest in h["dests"]:
        for u in dest["uplinks"]:
            if u["router"] == "10.101.1.2":
                assert u["entropies"] == [], (h["host"], dest["dst"], u)
                continue
            assert u["entropies"], (h["host"], dest["dst"], u)
            for e in u["entropies"]:
                out = subprocess.check_output(
                    ["ip", "-n", sys.argv[2], "route", "get", dest["dst"], "from", h["host"], "iif", f"h{idx}",
                     "ipproto", "udp", "sport", str(49152 + e), "dport", "4792"], text=True)
                assert f"via {u['router']} " in out, (h["host"], dest["dst"], e, u["router"], out)
                checked += 1
assert checked > 0
print(f"{checked} ports checked against leaf 1's FIB after the failure; reroutes {d['totals']['reroutes']}")
PY
restore_link

# --- collectives on real buffers --------------------------------------------------
# The 8 hosts are the ranks of a ring allreduce of random floats over 2
# channels (the ring crosses between the leaves at ranks 3 and 7) and of an
# alltoall: every rank's result equals the in-memory reference byte for
# byte (the mode exits 1 otherwise), sprayed by REPS and as Ethereal plans
# it. On 4 uplinks the 2 crossing flows of a step split 2 ways each (r = 2,
# g = 2: Theorem 4), every part pinned to its own uplink through the ports
# the probes found.
collective() { # collective NAME RUN-NAME ARGS...: run, in collective mode
	local c="$1"
	shift
	COLLECTIVE="$c" run "$@"
}
for p in reps ethereal; do
	extra=(--path "$p")
	[[ $p == ethereal ]] && extra+=(--discover-paths "$SPINES")
	e2e_check "allreduce, $p: every rank's sum is the reference's" \
		collective allreduce "allreduce-$p" "${HOST_ARGS[@]}" --size 262144 --channels 2 --leaves 2 --quiet \
		"${extra[@]}"
	grep -A2 'size  *type' "$tmp/allreduce-$p.out" | sed "s/^/[$(basename "$0" .sh)]   allreduce-$p /" || true
done
e2e_check "allreduce, ethereal: 2 crossing flows split in 2 parts each, 8 subflows in every step, one per uplink" \
	python3 - "$tmp/allreduce-ethereal.json" "$SPINES" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["collective"]
spines = int(sys.argv[2])
assert c["wrong_ranks"] == 0 and c["planned"], c
assert [s["subflows"] for s in c["steps"]] == [8] * 14, [s["subflows"] for s in c["steps"]]
for host in ("10.1.4.1", "10.2.4.1"):  # ranks 3 and 7
    u = c["uplinks"][host]
    assert u["rerouted"] > 0 or u["subflows_per_uplink"] == [14] * spines, (host, u)
print("busbw", c["busbw_gbps"], "GB/s")
PY
e2e_check "alltoall, ethereal: every rank's blocks are the reference's" \
	collective alltoall "alltoall-ethereal" "${HOST_ARGS[@]}" --size 262144 --leaves 2 --quiet \
	--path ethereal --discover-paths "$SPINES"
e2e_log "took $((SECONDS - t_start)) s"
e2e_finish
