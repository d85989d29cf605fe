#!/usr/bin/env bash
# The libFuzzer harnesses (tests/fuzz) for longer than CI runs them.
#
#   bash scripts/fuzz.sh [--fresh] [--jobs N] [SECONDS] [NAME ...]
#
# NAME: config, dlio, pacer_set, trace (default: all four). SECONDS per
# harness (default 600). Builds build-fuzz/ with clang, -Dfuzz=enabled and
# the address and undefined sanitizers when it is missing, then runs N
# harnesses at a time (default: half the cores, at least 1). The corpus of
# each is kept in build-fuzz/tests/fuzz/work/NAME/corpus and grows from run
# to run (--fresh starts again from the seeds). Prints one line per harness:
# executions, crashes, corpus size, peak RSS; exits 1 if any found a crash,
# leak, timeout or memory blow-up (the input is in .../NAME/artifacts/).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1

DIR=build-fuzz
secs=600
fresh=0
jobs=$(( $(nproc) / 2 ))
[ "$jobs" -ge 1 ] || jobs=1
names=()
while [ $# -gt 0 ]; do
  case "$1" in
    --fresh) fresh=1 ;;
    --jobs) shift; jobs=$1 ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    config|dlio|pacer_set|trace) names+=("$1") ;;
    *[!0-9]*|'') echo "fuzz.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
    *) secs=$1 ;;
  esac
  shift
done
[ ${#names[@]} -gt 0 ] || names=(config dlio pacer_set trace)

if ! command -v clang >/dev/null 2>&1; then
  echo "fuzz.sh: clang is needed (bash scripts/install-deps.sh installs it)" >&2
  exit 2
fi
if [ ! -f "$DIR/build.ninja" ]; then
  CC=clang meson setup "$DIR" -Dfuzz=enabled -Db_sanitize=address,undefined -Dtests=disabled \
    >/dev/null || exit 1
fi
targets=()
for n in "${names[@]}"; do targets+=("tests/fuzz/fuzz_$n"); done
ninja -C "$DIR" "${targets[@]}" >/dev/null || { ninja -C "$DIR" "${targets[@]}"; exit 1; }

work=$DIR/tests/fuzz/work
keep=--keep
[ "$fresh" -eq 1 ] && keep=
start=$(date +%s)
pids=()
for n in "${names[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do sleep 1; done
  python3 tests/fuzz/run_fuzzer.py "$DIR/tests/fuzz/fuzz_$n" "$n" "$secs" "$work" $keep \
    > "$work-$n.out" 2>&1 &
  pids+=($!)
done
fail=0
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || fail=1
  tail -n 1 "$work-${names[$i]}.out"
done
echo "fuzz.sh: ${#names[@]} harnesses, ${secs} s each, $jobs at a time, $(( $(date +%s) - start )) s in all"
[ "$fail" -eq 0 ] || echo "fuzz.sh: findings: see $work-*.out and $work/*/artifacts/" >&2
exit "$fail"
