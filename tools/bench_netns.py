# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""tools/bench_netns.py - what tools/bench-int and tools/bench-traffic share:
network namespaces joined by veth pairs (made, configured, emptied and
removed again), commands run inside them, and the checks both do before
they touch the host.

Not a tool of its own: the benchmarks import it from their own directory
(as the e2e tests' Python tools import tests/e2e/netutil.py).
"""
import os
import shutil
import signal
import subprocess
import sys


def run(*cmd):
    """cmd, which must succeed; its standard output discarded."""
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def add_netns(*names):
    """Fresh network namespaces, each with its loopback up."""
    for ns in names:
        run("ip", "netns", "add", ns)
        run("ip", "-n", ns, "link", "set", "lo", "up")


def add_veth(ns_a, dev_a, ns_b, dev_b):
    """A veth pair, dev_a in ns_a and its peer dev_b in ns_b (both still down)."""
    run("ip", "link", "add", dev_a, "netns", ns_a, "type", "veth", "peer", "name", dev_b, "netns", ns_b)


def set_offloads(ns, dev, features, check=True):
    """ethtool -K dev in ns: features maps ethtool feature names to on (True) or off."""
    args = [x for k, v in features.items() for x in (k, "on" if v else "off")]
    subprocess.run(["ip", "netns", "exec", ns, "ethtool", "-K", dev] + args, check=check,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def addr_up(ns, dev, addr):
    """dev in ns gets addr/24 and is brought up."""
    run("ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
    run("ip", "-n", ns, "link", "set", dev, "up")


def kill_netns(ns):
    """SIGKILL to every process in ns (a namespace that is gone has none)."""
    pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
    for pid in pids:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except ProcessLookupError:
            pass


def del_netns(ns):
    """Removes ns, and with it its veth ends; quiet when it is gone already."""
    subprocess.run(["ip", "netns", "del", ns], stderr=subprocess.DEVNULL)


def popen_in(ns, argv, stdout, stderr, preexec_fn=None):
    """argv in namespace ns (`ip netns exec` execs it: the pid is argv's own)."""
    return subprocess.Popen(["ip", "netns", "exec", ns] + argv, stdout=stdout, stderr=stderr,
                            preexec_fn=preexec_fn)


def check_host(name, why_root, lumen, duration, rounds):
    """The checks before a run: root, ip/ethtool/iperf3, a lumen binary, --duration and
    --rounds in range. Exits with "name: ..." on the first that fails."""
    if os.geteuid() != 0:
        sys.exit(f"{name}: needs root ({why_root})")
    for tool in ("ip", "ethtool", "iperf3"):
        if not shutil.which(tool):
            sys.exit(f"{name}: {tool} missing")
    if not os.access(lumen, os.X_OK):
        sys.exit(f"{name}: no lumen binary at {lumen} (build first or pass --lumen)")
    if not 1 <= duration <= 600 or not 1 <= rounds <= 20:
        sys.exit(f"{name}: --duration must be 1..600 s and --rounds 1..20")
