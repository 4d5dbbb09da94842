#!/usr/bin/env bash
# tests/vm_run_paths_test.sh - which host directories tools/vm-run makes
# visible in the guest (vm-run --dry-run: no root, kernel or QEMU needed).
# The guest mounts empty tmpfs on /tmp, /var/tmp, /run and /dev/shm, so a
# checkout or build tree there (a clone under /tmp) is seen only when vm-run
# shares it: its current directory, --module directories and --visible ones.
# CTest: vm_run_paths. Exit 0 pass, 1 fail.
set -euo pipefail
vm_run="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/tools/vm-run"
failed=0
fail() {
	echo "FAIL: $*"
	failed=1
}
# expect_plan "WANTED PLAN" VM-RUN-ARGS...: run from $cwd, compare the plan
expect_plan() {
	local want="$1" got rc=0
	shift
	got="$(cd "$cwd" && "$vm_run" --dry-run "$@" -- true 2>&1)" || rc=$?
	((rc == 0)) || fail "vm-run --dry-run $* (in $cwd) exited $rc: $got"
	[[ $got == "$want" ]] || fail "vm-run --dry-run $* (in $cwd): plan
$got
instead of
$want"
}

tmp="$(mktemp -d /tmp/lumen-vm-paths.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
clone="$tmp/clone"
mkdir -p "$clone/tools" "$clone/build/kmod" "$clone/build/out" "$tmp/elsewhere"
: >"$clone/build/kmod/m.ko"
ln -s "$clone" "$tmp/link"

# a clone under /tmp, run from its root: the checkout itself
cwd="$clone" expect_plan "visible $clone"
# from a symlink to it: the real path, where the guest mounts it
cwd="$tmp/link" expect_plan "visible $clone"
# its build tree, module and results share: inside the checkout, one share
# for the checkout, the results read-write on top of it
cwd="$clone" expect_plan "visible $clone
share $clone/build/out" --visible "$clone/build" --module "$clone/build/kmod/m.ko" --share "$clone/build/out"
# started elsewhere: the module's directory and a --visible one, each once
cwd=/ expect_plan "visible $clone/build/kmod
visible $tmp/elsewhere" --module "$clone/build/kmod/m.ko" --visible "$tmp/elsewhere" --visible "$tmp/elsewhere/"
# a share covers what is below it
cwd="$clone/build/out" expect_plan "share $clone/build" --share "$clone/build"
# directories the root share shows already need nothing
cwd=/ expect_plan "" --visible /usr/bin --visible /
cwd=/usr expect_plan ""

# what cannot be shown fails before booting, saying why
mkdir -p "$tmp/with space"
rc=0
msg="$(cd "$tmp/with space" && "$vm_run" --dry-run -- true 2>&1)" || rc=$?
((rc == 125)) || fail "a current directory with white space below /tmp: exit $rc, not 125"
[[ $msg == *"white space"*"move it elsewhere"* ]] || fail "no clear message for a path with white space: $msg"
rc=0
msg="$(cd / && "$vm_run" --dry-run --visible "$tmp/missing" -- true 2>&1)" || rc=$?
((rc == 125)) && [[ $msg == *"$tmp/missing: no such directory"* ]] || fail "--visible of a missing directory: $rc $msg"

((failed == 0)) && echo "vm_run_paths: all checks passed"
exit "$failed"
