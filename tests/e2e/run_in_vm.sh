#!/usr/bin/env bash
# tests/e2e/run_in_vm.sh KERNEL - lumen's BPF end-to-end suites on another
# kernel: boots Debian's KERNEL (6.1, 6.12 or an exact release, see
# tools/vm-run) once in QEMU and runs, inside, each of
#
#   cc_test.sh  int_sockops_test.sh  switch_test.sh  dumbbell_test.sh
#   gate_test.sh  vermilion_test.sh (sch_fq, which the host kernel lacks)
#
# one after the other with LUMEN_BIN (the built lumen binary) as given here
# and Debian's default PATH.
# Prints each suite's output, a line per suite (status, checks, seconds) and
# the summary "N passed, M failed" over suites. Exit 0 when every suite
# passed, 77 (skip) without root or QEMU on the host, 1 otherwise: also when
# a suite skipped inside the guest (the guest is where it must run: the
# gate's suites skip on a host without sch_fq, so a skip in the guest would
# leave them untested behind a green line) or the VM itself failed.
#
#   LUMEN_VM_SUITES="cc_test switch_test"   run only these suites
#   LUMEN_VM_SUITE_TIMEOUT=600              per-suite limit in the VM (s)
#   LUMEN_VM_TIMEOUT=1500                   limit for the whole VM (s)
#   LUMEN_E2E_HOST_PARTS=1                  also the parts only the host runs
#                                           (lib.sh e2e_host_part)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
read -r -a suites <<<"${LUMEN_VM_SUITES:-cc_test int_sockops_test switch_test dumbbell_test gate_test vermilion_test}"

# --- inside the VM -------------------------------------------------------------
if [[ ${1:-} == --inside ]]; then
	# Debian's PATH, not the caller's: the suites should use the packages
	# tools/install-deps installs, not shims (pyenv: ~20 s per python3 under
	# emulation) that happen to come first on a developer's PATH
	export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
	per_suite="${LUMEN_VM_SUITE_TIMEOUT:-600}"
	# one TCP flow in a software-emulated guest moves ~30-200 Mbit/s: the
	# cc suite's runtime cap (host-bw) binds at 40 Mbit/s here, not 1 Gbit/s
	# (the switch suite measures the path and picks its port rate itself)
	export LUMEN_E2E_CAP_MBPS="${LUMEN_E2E_CAP_MBPS:-40}"
	# the suites here run on the host too: the guest checks what differs
	# between kernels, not lumen's argument checks again (e2e_host_part)
	export LUMEN_E2E_HOST_PARTS="${LUMEN_E2E_HOST_PARTS:-0}"
	passed=0 failed=0 lines=()
	echo "== kernel $(uname -r)"
	# Warm the guest's page cache: the first start of python3 and its
	# modules reads them over 9p (seconds under emulation), longer than the
	# suites' fixed waits for a capture to start
	t0="$(date +%s)"
	python3 -c 'import argparse, json, select, socket, struct, sys, time' || true
	for t in iperf3 jq bpftool tc ip ss ethtool ping; do "$t" -V >/dev/null 2>&1 || true; done
	"$LUMEN_BIN" --help >/dev/null 2>&1 || true
	echo "== page cache warmed in $(($(date +%s) - t0)) s"
	for s in "${suites[@]}"; do
		echo "== $s"
		t0="$(date +%s)"
		rc=0
		timeout -k 10 "$per_suite" bash "$here/$s.sh" 2>&1 | tee "/tmp/$s.log" || rc=$?
		secs=$(($(date +%s) - t0))
		checks="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "/tmp/$s.log" | tail -n 1 || true)"
		case $rc in
		0) passed=$((passed + 1)) st=passed ;;
		77) failed=$((failed + 1)) st="FAILED (skipped in the guest)" ;;
		124 | 137) failed=$((failed + 1)) st="FAILED (timeout after ${per_suite} s)" ;;
		*) failed=$((failed + 1)) st="FAILED (exit $rc)" ;;
		esac
		lines+=("$(printf '%-18s %-28s %-22s %5d s' "$s" "$st" "${checks:-no checks}" "$secs")")
	done
	echo "== results on $(uname -r)"
	printf '  %s\n' "${lines[@]}"
	for s in "${suites[@]}"; do
		grep -hE '^\[[a-z_]*\] (FAIL|SKIP): ' "/tmp/$s.log" 2>/dev/null | sed 's/^/  /' || true
	done
	echo "$passed passed, $failed failed"
	((failed == 0 && passed > 0)) && exit 0
	exit 1
fi

# --- on the host ---------------------------------------------------------------
kernel="${1:?usage: run_in_vm.sh KERNEL (6.1, 6.12 or a release)}"
: "${LUMEN_BIN:?set LUMEN_BIN to the lumen binary}"
((EUID == 0)) || {
	echo "SKIP: needs root (tools/vm-run)"
	exit 77
}
command -v qemu-system-x86_64 >/dev/null || {
	echo "SKIP: qemu-system-x86_64 missing (tools/install-deps)"
	exit 77
}
LUMEN_BIN="$(realpath "$LUMEN_BIN")"
export LUMEN_BIN
rc=0
# the checkout and the binary's build tree, wherever they are (vm-run shares
# them when the guest's /tmp, /run ... would hide them); idempotent (the
# guest's writes vanish with it): a run an emulation fault crashed may rerun
"$root/tools/vm-run" --kernel "$kernel" --timeout "${LUMEN_VM_TIMEOUT:-1500}" --rerun-emulation-faults 1 \
	--visible "$root" --visible "$(dirname "$LUMEN_BIN")" -- bash "$here/run_in_vm.sh" --inside || rc=$?
case $rc in
0 | 1 | 77) exit "$rc" ;;
124) echo "vm_e2e $kernel: FAILED, the VM timed out" ;;
125) echo "vm_e2e $kernel: FAILED, the VM could not run (see vm-run's message above)" ;;
*) echo "vm_e2e $kernel: FAILED, exit status $rc" ;;
esac
exit 1
