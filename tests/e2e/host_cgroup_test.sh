#!/usr/bin/env bash
# tests/e2e/host_cgroup_test.sh - `lumen host cgroup-create|cgroup-remove`,
# which the SSH runner uses on every host, only ever remove lumen's groups:
#
#   - cgroup-create marks its group (extended attribute user.lumen);
#   - cgroup-remove kills what runs in such a group and removes it;
#   - a group lumen did not create is refused (exit 1, a clear message), and
#     it and the process in it are left alone.
source "$(dirname "$0")/lib.sh"

[[ $EUID -eq 0 ]] || e2e_skip "needs root"
CG2="$(e2e_cgroup2_root)" || e2e_skip "no cgroup v2 hierarchy mounted"
L="$LUMEN_BIN"
OURS="$E2E_TAG-ours" THEIRS="$E2E_TAG-theirs"
e2e_on_exit "rmdir '$CG2/$OURS' '$CG2/$THEIRS' 2>/dev/null || true"

refused() { # refused CODE PATTERN CMD...: CMD exits with CODE, stderr matches PATTERN
	local code="$1" pattern="$2" rc=0 err
	shift 2
	err="$("$@" 2>&1 >/dev/null)" || rc=$?
	[[ $rc -eq $code ]] || { e2e_log "  exit $rc, expected $code: $err"; return 1; }
	grep -qE -- "$pattern" <<<"$err" || { e2e_log "  message does not match /$pattern/: $err"; return 1; }
}

e2e_check "cgroup-create prints the group's path" bash -c "[[ \"\$('$L' host cgroup-create $OURS)\" == '$CG2/$OURS' ]]"
e2e_check "the group carries lumen's mark" python3 -c \
	"import os, sys; sys.exit(os.getxattr('$CG2/$OURS', 'user.lumen') != b'1')"
sleep 60 &
pid=$!
disown "$pid" # its death by cgroup.kill is the point, not news
echo "$pid" >"$CG2/$OURS/cgroup.procs"
e2e_check "cgroup-remove removes lumen's group" "$L" host cgroup-remove "$OURS"
e2e_check "and kills what ran in it" bash -c "! kill -0 $pid 2>/dev/null"

mkdir "$CG2/$THEIRS"
sleep 60 &
pid=$!
disown "$pid"
e2e_on_exit "kill $pid 2>/dev/null || true"
echo "$pid" >"$CG2/$THEIRS/cgroup.procs"
e2e_check "a group lumen did not create is refused" refused 1 "not created by lumen" \
	"$L" host cgroup-remove "$THEIRS"
e2e_check "it still exists" test -d "$CG2/$THEIRS"
e2e_check "its process still runs" kill -0 "$pid"
kill "$pid"
e2e_check "cgroup-create refuses an existing group" refused 1 "cannot create cgroup" \
	"$L" host cgroup-create "$THEIRS"
e2e_finish
