#!/usr/bin/env bash
# tests/e2e/vm_run_retry_test.sh - tools/vm-run boots again when the guest
# kernel crashes before the command starts (under software emulation such
# crashes are QEMU's races, not the command's), says so, gives up after
# three boots, and never boots again after the command started.
# The crash is real and made on purpose: rdinit=/nonexistent (the kernel
# panics, finding no init) before the command; a sysrq crash inside it.
# CTest: vm_run_retry (label vm). Exit 0 pass, 1 fail, 77 skipped.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
[[ $EUID -eq 0 ]] || {
	echo "[vm_run_retry] SKIP: needs root (tools/vm-run)"
	exit 77
}
command -v qemu-system-x86_64 >/dev/null || {
	echo "[vm_run_retry] SKIP: qemu-system-x86_64 missing (tools/install-deps)"
	exit 77
}
failed=0 passed=0
check() { # check WHAT CONDITION...
	local what="$1"
	shift
	if "$@"; then
		echo "[vm_run_retry] ok: $what"
		passed=$((passed + 1))
	else
		echo "[vm_run_retry] FAIL: $what"
		failed=$((failed + 1))
	fi
}
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# a crash while booting: three boots, each retry announced, then vm-run's
# own failure (125), never the command's status
rc=0
"$root/tools/vm-run" --kernel 6.12 --timeout 300 --append "rdinit=/nonexistent" -- true >"$tmp/boot.out" 2>&1 || rc=$?
sed 's/^/    /' "$tmp/boot.out" | grep -E "vm-run|panic" | head -20
check "a crash while booting: vm-run fails (125), not the command (got $rc)" test "$rc" -eq 125
check "... booted three times" test "$(grep -c 'vm-run: booting' "$tmp/boot.out")" -eq 3
check "... each retry said so" grep -q "booting again (attempt 3 of 3)" "$tmp/boot.out"

# a crash after the command started: reported, not booted again
rc=0
"$root/tools/vm-run" --kernel 6.12 --timeout 300 -- sh -c 'echo 1 >/proc/sys/kernel/sysrq; echo c >/proc/sysrq-trigger' \
	>"$tmp/cmd.out" 2>&1 || rc=$?
check "a crash inside the command: vm-run fails (125; got $rc)" test "$rc" -eq 125
check "... booted once" test "$(grep -c 'vm-run: booting' "$tmp/cmd.out")" -eq 1
check "... and said that the VM stopped" grep -q "without reporting the command's exit status" "$tmp/cmd.out"

echo "$passed passed, $failed failed"
((failed == 0))
