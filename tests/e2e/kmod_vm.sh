#!/usr/bin/env bash
# kmod_vm.sh KVER: run the module's suites (tests/e2e/kmod_test.sh,
# kmod_hostile_test.sh, kmod_lifetime_test.sh, adversarial_test.sh with
# LUMEN_KMOD set; LUMEN_VM_SUITES="kmod_test ..."
# picks some) in one VM that boots Debian's kernel KVER (6.1 or 6.12) through
# tools/vm-run, with the module that tools/kmod-build built for exactly that
# kernel release (the release of the newest
# /usr/src/linux-headers-KVER.*-amd64). CTest: vm_kmod_6.1, vm_kmod_6.12, with
# LUMEN_BIN and LUMEN_KMOD set.
# Exit: 0 when every suite passed; 1 when one failed or skipped inside the
# guest (the guest, a kernel that loads modules, is where they must run: a
# skip there would leave the module untested behind a green line); 77
# (skipped) when this machine cannot run the VM or the module was not built.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
kver="${1:?usage: kmod_vm.sh 6.1|6.12}"
skip() {
	echo "[kmod_vm] SKIP: $*"
	exit 77
}
[[ $EUID -eq 0 ]] || skip "needs root (tools/vm-run)"
[[ -x $root/tools/vm-run ]] || skip "tools/vm-run missing"
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 missing (tools/install-deps)"
: "${LUMEN_BIN:?set LUMEN_BIN to the lumen binary}"
rc=0
release="$("$root/tools/kmod-build" --kernel "$kver" --print-release)" || rc=$?
((rc == 0)) || skip "no kernel headers for $kver"
export LUMEN_KMOD="${LUMEN_KMOD:-$root/build/kmod-$kver/tcp_powertcp.ko}"
[[ -f $LUMEN_KMOD ]] || skip "$LUMEN_KMOD not built (tools/kmod-build --kernel $kver --out $(dirname "$LUMEN_KMOD"))"
LUMEN_BIN="$(realpath "$LUMEN_BIN")" LUMEN_KMOD="$(realpath "$LUMEN_KMOD")"
export LUMEN_BIN LUMEN_KMOD
cd "$root"
rc=0
# Debian's PATH inside, not the caller's (shims such as pyenv's are slow
# under emulation); the checkout, the binary and the module visible wherever
# they are (vm-run shares them when the guest's /tmp, /run ... would hide them)
# (idempotent: the guest's writes vanish with it, so a run that an emulation
# fault crashed may run again, see vm-run's --rerun-emulation-faults)
"$root/tools/vm-run" --kernel "$release" --timeout "${LUMEN_VM_TIMEOUT:-1700}" --rerun-emulation-faults 1 --visible "$root" \
	--visible "$(dirname "$LUMEN_BIN")" --visible "$(dirname "$LUMEN_KMOD")" -- \
	env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin bash -c '
		rc=0
		for suite in "$@"; do
			src=0
			bash "tests/e2e/$suite.sh" || src=$?
			case $src in
			0) ;;
			77) echo "[kmod_vm] FAIL: $suite skipped in the guest"; rc=1 ;;
			*) echo "[kmod_vm] FAIL: $suite: exit status $src"; rc=1 ;;
			esac
		done
		exit $rc' kmod_suites ${LUMEN_VM_SUITES:-kmod_test kmod_hostile_test kmod_lifetime_test adversarial_test} || rc=$?
case $rc in
0 | 1 | 77) exit "$rc" ;;
124) echo "[kmod_vm] FAIL: the VM timed out ($release)" ;;
125) echo "[kmod_vm] FAIL: the VM could not run $release (see vm-run's message above)" ;;
*) echo "[kmod_vm] FAIL: exit status $rc ($release)" ;;
esac
exit 1
