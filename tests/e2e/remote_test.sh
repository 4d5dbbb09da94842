#!/usr/bin/env bash
# tests/e2e/remote_test.sh - `lumen experiment run --hosts`: an experiment
# driven over real SSH. A namespace testbed stands in for the servers: each
# of its hosts is reached by OpenSSH's client through an sshd started per
# connection inside that host's network namespace (ProxyCommand), one host
# sits in a time namespace whose CLOCK_MONOTONIC is 1000 s ahead (so the
# clock offsets must be right for the run to start and line up), and the
# switch is read over SSH with `lumen switch sample`. Checks: `lumen
# experiment hosts`, a full run with well-formed results whose flows start
# together, queue samples from the switch, a run without switches, an
# injected setup failure, Ctrl-C in the middle, and a killed runner (the remote processes end with their
# SSH sessions); nothing is left on the hosts (processes, cgroup, work
# directory, eBPF algorithms, INT). About a minute.
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

e2e_require_bpf
[[ -x /usr/sbin/sshd ]] || e2e_skip "openssh-server missing (tools/install-deps)"
command -v ssh >/dev/null || e2e_skip "openssh-client missing (tools/install-deps)"
command -v nsenter >/dev/null || e2e_skip "nsenter (util-linux) missing"
command -v gnuplot >/dev/null || e2e_skip "gnuplot missing (tools/install-deps)"
e2e_require_free cc int

out="$(mktemp -d /tmp/lumen-remote-e2e.XXXXXX)"
e2e_on_exit "rm -rf '$out'"
tb="rh$(($$ % 100000))"
lumen="$(readlink -f "$LUMEN_BIN")"

# --- the "servers": a dumbbell with the INT switch, s1..s3 -> sw1 -> sw2 -> r1
e2e_log "building testbed $tb"
"$LUMEN_BIN" testbed up --topology dumbbell --senders 3 --rate 1gbit --buffer 1m --name "$tb" --json \
	>"$out/testbed.json" 2>"$out/testbed.log" || {
	cat "$out/testbed.log"
	exit 1
}
e2e_on_exit "'$LUMEN_BIN' testbed down '$tb'"
addr() { python3 -c "import json,sys; print([h['addr'] for h in json.load(open('$out/testbed.json'))['hosts'] if h['name']=='$1'][0])"; }

# --- SSH: keys, an sshd configuration, and a ProxyCommand that starts sshd
# for one connection in the host's namespace (sw1: the machine's own, as a
# Linux router's; s2: also a time namespace 1000 s ahead)
ssh-keygen -q -t ed25519 -N '' -f "$out/hostkey"
ssh-keygen -q -t ed25519 -N '' -f "$out/userkey"
cp "$out/userkey.pub" "$out/authorized_keys"
mkdir -p /run/sshd
cat >"$out/sshd_config" <<CONF
HostKey $out/hostkey
AuthorizedKeysFile $out/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile none
LogLevel ERROR
# The sessions' shell skips this machine's ~/.bashrc (bash reads it for
# ssh only at SHLVL < 2): the servers here are stand-ins, and root's rc
# file on a developer's or CI machine (pyenv init: ~1.3 s a session, or
# 60 s each behind a rehash lock that a session killed mid-rc left, as
# the Ctrl-C and SIGKILL checks below do) is not what this test checks
SetEnv SHLVL=1
CONF
time_ns=""
if unshare --time --monotonic 1000 true 2>/dev/null; then
	time_ns="unshare --time --monotonic 1000"
else
	e2e_log "note: no time namespaces here; s2's clock is not shifted"
fi
cat >"$out/proxy" <<PROXY
#!/bin/sh
case "\$1" in
sw1 | ctl) exec /usr/sbin/sshd -i -f $out/sshd_config ;;
s2) exec nsenter --net=/run/netns/lt-$tb-s2 $time_ns /usr/sbin/sshd -i -f $out/sshd_config ;;
*) exec nsenter --net=/run/netns/lt-$tb-\$1 /usr/sbin/sshd -i -f $out/sshd_config ;;
esac
PROXY
chmod +x "$out/proxy"

inventory() { # inventory FILE [R1_LUMEN] [SWITCH_PORT]
	cat >"$1" <<INV
{
  "name": "e2e",
  "path_rate": "1gbit",
  "lumen": "$lumen",
  "workdir": "$out/work",
  "ssh_options": ["-i", "$out/userkey", "-o", "UserKnownHostsFile=/dev/null",
                  "-o", "StrictHostKeyChecking=no", "-o", "ProxyCommand=$out/proxy %h"],
  "hosts": [
    {"name": "s1", "role": "sender", "ssh": "root@s1", "addr": "$(addr s1)"},
    {"name": "s2", "role": "sender", "ssh": "root@s2", "addr": "$(addr s2)"},
    {"name": "s3", "role": "sender", "ssh": "root@s3", "addr": "$(addr s3)"},
    {"name": "r1", "role": "receiver", "ssh": "root@r1", "addr": "$(addr r1)", "lumen": "${2:-$lumen}"}
  ],
  "switches": [{"name": "sw1", "ssh": "root@sw1", "ports": ["${3:-sw2}"], "bottleneck": ["${3:-sw2}"]}]
}
INV
}
mkdir -p "$out/work"
inventory "$out/hosts.json"

cat >"$out/exp.json" <<'EXP'
{
  "name": "remote",
  "description": "two long flows and incast bursts on hosts driven over SSH",
  "topology": { "topology": "dumbbell", "senders": 3, "bottleneck": { "rate": "1gbit" } },
  "algorithms": ["bpf_powertcp", "cubic"],
  "duration": "4s",
  "warmup": "1s",
  "phases": [
    { "name": "long", "kind": "long", "from": ["s1", "s2"], "to": "r1", "start": "0s", "duration": "4s" },
    { "name": "incast", "kind": "incast", "from": "s3", "to": "r1", "start": "1s", "size": "256k",
      "bursts": 2, "period": "2s" }
  ]
}
EXP

cgroot="$(e2e_cgroup2_root)"
# what a run must not leave on the hosts (all on this kernel here)
leftovers() {
	pgrep -af "$lumen (host run|traffic|switch sample)" | sed 's/^/process /' || true
	ls -d "$cgroot"/lumen-x-* 2>/dev/null | sed 's/^/cgroup /' || true
	ls "$out/work" | sed 's/^/workdir /'
	"$LUMEN_BIN" cc status 2>&1 | grep -q "not loaded" || echo "cc loaded"
	"$LUMEN_BIN" int status 2>&1 | grep -q "not enabled" || echo "int enabled"
}
nothing_left() {
	local l
	l="$(leftovers)"
	[[ -z "$l" ]] || { e2e_log "left behind: $l"; return 1; }
}

# --- lumen experiment hosts
rc=0
"$LUMEN_BIN" experiment hosts "$out/hosts.json" >"$out/hosts.log" 2>&1 || rc=$?
e2e_check "experiment hosts: exit 0" test "$rc" -eq 0
e2e_check "experiment hosts: lists every host" bash -c "grep -c '^s[123] \|^r1 \|^sw1 ' '$out/hosts.log' | grep -qx 5"
e2e_check "experiment hosts: sees one kernel" grep -q "shares the kernel of" "$out/hosts.log"
((rc == 0)) || cat "$out/hosts.log"

# --- the run
e2e_log "running the experiment over SSH"
rc=0
"$LUMEN_BIN" experiment run "$out/exp.json" --hosts "$out/hosts.json" --out "$out/res" >"$out/run.log" 2>&1 || rc=$?
e2e_check "run: exit 0" test "$rc" -eq 0
((rc == 0)) || tail -30 "$out/run.log"
e2e_check "run: summary table printed" grep -q "goodput Mb/s" "$out/run.log"
e2e_check "run: JSON, CSV and PNG results are well-formed" \
	python3 "$(dirname "$0")/experiment_results.py" "$out/res" 2 incast.png
e2e_check "run: nothing left on the hosts" nothing_left

check_run() {
	python3 - "$out/res" "$time_ns" <<'PY'
import csv, json, sys
d, shifted = sys.argv[1], sys.argv[2] != ""
ok = True
def fail(m):
    global ok
    ok = False
    print("  " + m)
cfg = json.load(open(d + "/config.json"))
nodes = {n["name"]: n for n in cfg["hosts"]["nodes"]}
if set(nodes) != {"s1", "s2", "s3", "r1", "sw1"}:
    fail(f"nodes {sorted(nodes)}")
if cfg["hosts"]["kernels"] != 1:
    fail(f"kernels {cfg['hosts']['kernels']} (all share this one)")
off = nodes["s2"]["clock_offset_ns"]
if shifted and abs(off - 1000e9) > 5e6:
    fail(f"s2 clock offset {off} ns, expected 1000 s")
for n in ("s1", "s3", "r1", "sw1"):
    if abs(nodes[n]["clock_offset_ns"]) > 5e6:
        fail(f"{n} clock offset {nodes[n]['clock_offset_ns']} ns, expected ~0")
if not 0 < cfg["base_rtt_ns"] < 5e6:
    fail(f"base RTT {cfg['base_rtt_ns']}")
rows = list(csv.DictReader(open(d + "/flows.csv")))
for algo in ("bpf_powertcp", "cubic"):
    mine = [r for r in rows if r["algo"] == algo]
    longs = [r for r in mine if r["label"].startswith("long.")]
    if sorted(r["label"] for r in longs) != ["long.s1", "long.s2"]:
        fail(f"{algo}: long flows {[r['label'] for r in longs]}")
    for r in longs:  # both start at the common start, whatever their clock
        if abs(float(r["start_s"])) > 0.1 or r["status"] != "ok":
            fail(f"{algo} {r['label']}: start {r['start_s']} s, status {r['status']}")
    bursts = sorted(float(r["start_s"]) for r in mine if r["label"] == "incast.s3")
    if len(bursts) != 2 or abs(bursts[0] - 1) > 0.1 or abs(bursts[1] - 3) > 0.1:
        fail(f"{algo}: incast starts {bursts}")
q = list(csv.DictReader(open(d + "/queue.csv")))
if {r["port"] for r in q} != {"sw1:sw2"}:
    fail(f"queue ports {sorted({r['port'] for r in q})}")
cubic_max = max((int(r["qlen_bytes"]) for r in q if r["algo"] == "cubic"), default=0)
if cubic_max < 20000:
    fail(f"cubic's queue peaked at {cubic_max} bytes: the switch samples are not the run's")
summary = json.load(open(d + "/summary.json"))
for r in summary["runs"]:
    if not r["utilisation"] or r["utilisation"] < 0.5:
        fail(f"{r['algo']}: utilisation {r['utilisation']}")
sys.exit(0 if ok else 1)
PY
}
if [[ -f "$out/res/config.json" ]]; then
	e2e_check "run: clock offsets, common start, switch queue and utilisation" check_run
fi

# --- no switch in the inventory (plain servers): flows and cwnd, no queue.
# ctl is the machine itself: a machine's kernel-wide settings (allowed
# congestion control) are written from its initial network namespace
python3 - "$out/hosts.json" "$out/no-switch.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
del d["switches"]
d["hosts"].append({"name": "ctl", "role": "host", "ssh": "root@ctl", "addr": "127.0.0.2"})
json.dump(d, open(sys.argv[2], "w"))
PY
# one algorithm is enough to show a run without a switch (the full run
# above covers both)
rc=0
"$LUMEN_BIN" experiment run "$out/exp.json" --hosts "$out/no-switch.json" --algos cubic --out "$out/nosw" \
	>"$out/nosw.log" 2>&1 || rc=$?
e2e_check "no switch: exit 0" test "$rc" -eq 0
((rc == 0)) || tail -20 "$out/nosw.log"
no_switch_results() {
	python3 - "$out/nosw" <<'PY'
import csv, json, os, sys
d = sys.argv[1]
flows = list(csv.DictReader(open(d + "/flows.csv")))
ok = len(flows) == 4 and all(f["status"] == "ok" for f in flows)
runs = json.load(open(d + "/summary.json"))["runs"]
ok &= all(r["utilisation"] is None and r["queue_bytes"]["count"] == 0 and not r["incast"] for r in runs)
ok &= os.path.getsize(d + "/throughput.png") > 5000 and not os.path.exists(d + "/queue.png")
sys.exit(0 if ok else 1)
PY
}
e2e_check "no switch: flows and plots, no queue metrics" no_switch_results
e2e_check "no switch: nothing left on the hosts" nothing_left

# --- a failure during setup (the switch has no such port) undoes it all
inventory "$out/bad-port.json" "$lumen" nosuchdev
rc=0
"$LUMEN_BIN" experiment run "$out/exp.json" --hosts "$out/bad-port.json" --out "$out/bad1" >"$out/bad1.log" 2>&1 || rc=$?
e2e_check "bad switch port: refused" test "$rc" -ne 0
e2e_check "bad switch port: says which" grep -q "sw1 has no switch port nosuchdev" "$out/bad1.log"
e2e_check "bad switch port: nothing left on the hosts" nothing_left

# --- a host without lumen: refused before anything changes
inventory "$out/no-lumen.json" /nonexistent/lumen
rc=0
"$LUMEN_BIN" experiment run "$out/exp.json" --hosts "$out/no-lumen.json" --out "$out/bad2" >"$out/bad2.log" 2>&1 || rc=$?
e2e_check "no lumen on r1: refused" test "$rc" -ne 0
e2e_check "no lumen on r1: says so" grep -q "no lumen on r1" "$out/bad2.log"
e2e_check "no lumen on r1: nothing left on the hosts" nothing_left

# --- Ctrl-C in the middle of a run
wait_for_traffic() { # wait_for_traffic LOG: until the first progress line of a run
	e2e_wait_until 300 0.1 grep -q "generators running" "$1"
}
"$LUMEN_BIN" experiment run "$out/exp.json" --hosts "$out/hosts.json" --out "$out/int" >"$out/int.log" 2>&1 &
runner=$!
e2e_check "Ctrl-C: traffic started" wait_for_traffic "$out/int.log"
private_workdir() { # the generators write into a directory only root can enter
	local d
	d="$(ls -d "$out/work"/lumen-x-*.* 2>/dev/null)"
	[[ $(wc -l <<<"$d") -eq 1 && "$(stat -c '%a %U' "$d")" == "700 root" ]] ||
		{ e2e_log "  work directory: $d $(stat -c '%a %U' "$d" 2>&1)"; return 1; }
	[[ $(basename "$d") =~ ^lumen-x-.+\.[A-Za-z0-9]{8}$ ]]
}
e2e_check "work directory: private (0700) under a random name" private_workdir
sleep 1
kill -INT "$runner"
rc=0
wait "$runner" || rc=$?
e2e_check "Ctrl-C: runner exits non-zero" test "$rc" -ne 0
e2e_check "Ctrl-C: nothing left on the hosts" nothing_left

# --- a killed runner: the remote commands end with their SSH sessions
"$LUMEN_BIN" experiment run "$out/exp.json" --hosts "$out/hosts.json" --out "$out/kill" >"$out/kill.log" 2>&1 &
runner=$!
e2e_check "SIGKILL: traffic started" wait_for_traffic "$out/kill.log"
kill -KILL "$runner"
wait "$runner" 2>/dev/null || true
gone() {
	local i
	for ((i = 0; i < 100; i++)); do
		pgrep -f "$lumen (host run|traffic|switch sample)" >/dev/null || return 0
		sleep 0.1
	done
	pgrep -af "$lumen (host run|traffic|switch sample)"
	return 1
}
e2e_check "SIGKILL: remote processes end with their sessions" gone
# what only a live runner undoes: removed here by hand, as a user would
for cg in "$cgroot"/lumen-x-*; do
	[[ -d "$cg" ]] && "$LUMEN_BIN" host cgroup-remove "$(basename "$cg")" >/dev/null
done
"$LUMEN_BIN" int disable >/dev/null 2>&1 || true
"$LUMEN_BIN" cc unload >/dev/null 2>&1 || true
rm -rf "${out:?}/work/"*

e2e_finish
