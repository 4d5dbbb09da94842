#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Runs one libFuzzer target for ctest, or refreshes its kept corpus
# (tests/CMakeLists.txt, lumen_add_libfuzzer; tests/fuzz/README.md).
#
#   run_libfuzzer.sh run|refresh NAME BIN WORK KEPT SECONDS MAX_LEN [SEED_FILE...]
#
# NAME the target (dp_wire_fuzzer), BIN its binary, WORK a directory of the
# build tree, KEPT its corpus in the source tree (tests/fuzz/corpus/NAME/),
# SEED_FILEs the hand-made seeds (tests/fuzz/corpus/*.bin, dp/*.bin).
#
# run      ctest's run: SECONDS of fuzzing with a seed of its own, chosen at
#          random (LUMEN_FUZZ_SEED=N chooses it), printed with the command
#          that repeats the run. libFuzzer starts from KEPT and the seeds and
#          writes what it finds into WORK/NAME-corpus, its first corpus
#          directory, emptied first (so that a seed repeats the run); KEPT
#          is only read. A crash input lands in WORK/NAME-crash-<sha1> (or
#          leak-, timeout-, oom-) and its path is printed.
# refresh  a developer's: fuzz LUMEN_FUZZ_REFRESH_SECONDS (default 600; 0:
#          none) from KEPT, the seeds and WORK/NAME-corpus (what earlier runs
#          found) into WORK/NAME-corpus, then minimise with -merge=1 into a
#          new KEPT: the inputs that add coverage to the hand-made seeds.
set -euo pipefail

if (($# < 7)) || [[ "$1" != run && "$1" != refresh ]]; then
	echo "usage: $0 run|refresh NAME BIN WORK KEPT SECONDS MAX_LEN [SEED_FILE...]" >&2
	exit 2
fi
mode="$1" name="$2" bin="$3" work="$4" kept="$5" seconds="$6" max_len="$7"
shift 7
seeds=("$@")
test="${name%_fuzzer}_libfuzzer"
corpus="$work/$name-corpus"

if [[ -n "${LUMEN_FUZZ_SEED:-}" ]]; then
	seed="$LUMEN_FUZZ_SEED"
	if ! [[ "$seed" =~ ^[0-9]+$ ]] || ((seed < 1 || seed > 4294967295)); then
		echo "$test: LUMEN_FUZZ_SEED=$seed is not a seed (1 .. 4294967295)" >&2
		exit 2
	fi
	how="from LUMEN_FUZZ_SEED"
else
	# 1 .. 2^31 - 1: libFuzzer takes 0 for "choose one"
	seed=$(($(od -An -N4 -tu4 /dev/urandom) % 2147483647 + 1))
	how="chosen at random"
fi
args=(-seed="$seed" -max_len="$max_len" -print_final_stats=1)
if ((${#seeds[@]})); then
	seed_list="$(IFS=,; echo "${seeds[*]}")"
	args+=(-seed_inputs="$seed_list")
fi

if [[ "$mode" == refresh ]]; then
	refresh="${LUMEN_FUZZ_REFRESH_SECONDS:-600}"
	mkdir -p "$corpus" "$kept"
	if ((refresh > 0)); then
		echo "== $name: fuzzing ${refresh} s, seed $seed, into $corpus"
		"$bin" "${args[@]}" -max_total_time="$refresh" -artifact_prefix="$work/$name-" "$corpus" "$kept"
	fi
	merged="$(mktemp -d "$work/$name-merge.XXXXXX")"
	trap 'rm -rf "$merged"' EXIT
	# the seeds first: the merge keeps what adds coverage to them, then they go
	if ((${#seeds[@]})); then
		cp -- "${seeds[@]}" "$merged/"
	fi
	"$bin" -merge=1 -max_len="$max_len" "$merged" "$kept" "$corpus"
	for s in "${seeds[@]}"; do
		rm -f -- "$merged/$(basename -- "$s")"
	done
	find "$kept" -maxdepth 1 -type f -delete
	cp -- "$merged"/* "$kept/" 2>/dev/null || true
	echo "== $name: $(find "$kept" -type f | wc -l) inputs, $(du -sb "$kept" | cut -f1) bytes in $kept"
	exit 0
fi

rm -rf "$corpus"
mkdir -p "$corpus"
args+=(-max_total_time="$seconds" -artifact_prefix="$work/$name-" "$corpus")
if [[ -d "$kept" ]]; then
	args+=("$kept")
	from="kept corpus $kept (read only)"
else
	from="no kept corpus ($kept: tests/fuzz/README.md)"
fi
stamp="$work/$name.started"
: >"$stamp"
echo "== $test: seed $seed ($how), ${seconds} s, from the $from and ${#seeds[@]} hand-made seeds"
echo "== repeat this run: LUMEN_FUZZ_SEED=$seed ctest --test-dir $work -R '^$test\$' -V"
echo "==   which runs: $bin ${args[*]}"
rc=0
"$bin" "${args[@]}" || rc=$?
if ((rc != 0)); then
	echo "== $test FAILED (exit $rc) with seed $seed; repeat: LUMEN_FUZZ_SEED=$seed ctest --test-dir $work -R '^$test\$' -V"
	while IFS= read -r unit; do
		echo "== failing input: $unit"
		echo "==   replay it: $bin $unit"
	done < <(find "$work" -maxdepth 1 -type f -newer "$stamp" -name "$name-*" \
		\( -name "*-crash-*" -o -name "*-leak-*" -o -name "*-timeout-*" -o -name "*-oom-*" \))
fi
rm -f "$stamp"
# not libFuzzer's own code: its crashes exit 77, which CTest takes for a skip
# where a test sets SKIP_RETURN_CODE 77
((rc == 0)) || exit 1
