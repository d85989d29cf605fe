#!/usr/bin/env bash
# The one test command (README and CI):   bash scripts/test.sh
#
# 1. installs the dependencies (scripts/install-deps.sh, a no-op when present),
# 2. clean build in build-test/, runs the suites unit, cli, readers, then mount
#    (mount tests one at a time),
# 3. clean sanitizer build (address + undefined) in build-test-san/, runs unit
#    and cli there, then the mount-san suite (mount tests whose daemon runs
#    sanitized and is leak-checked when it exits),
# 4. builds the libFuzzer harnesses with clang (address + undefined) in
#    build-test-fuzz/ and runs each for 60 s, two at a time, from the seed
#    corpora (tests/fuzz): any crash, leak, timeout or memory blow-up fails,
# 5. closes with `tests: N passed, N failed, N skipped` counted from the
#    builds' meson test logs, and exits non-zero on any failure.
#
# With CI=true a test that cannot run (no /dev/fuse, no TensorFlow, no
# clang) fails instead of skipping. Developer shortcuts (CI uses none):
#   --no-deps  do not run install-deps.sh      --no-san  skip the sanitizer build
#   --no-fuzz  skip the fuzzers
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1

run_deps=1
run_san=1
run_fuzz=1
for arg in "$@"; do
  case "$arg" in
    --no-deps) run_deps=0 ;;
    --no-san) run_san=0 ;;
    --no-fuzz) run_fuzz=0 ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test.sh: unknown option '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

MAIN=build-test
SAN=build-test-san
FUZZ=build-test-fuzz
FUZZ_TARGETS=(tests/fuzz/fuzz_config tests/fuzz/fuzz_dlio tests/fuzz/fuzz_pacer_set tests/fuzz/fuzz_trace tests/fuzz/fuzz_s3)
PY=/usr/bin/python3
start=$(date +%s)
stage_failures=()   # "what" for each step that failed outside meson test

elapsed() { echo $(( $(date +%s) - start )); }

# Configure a clean build dir and build it; the log is shown only on failure.
build() {
  local dir=$1; shift
  local log
  rm -rf "$dir"
  mkdir -p "$dir"
  log="$dir/build-steps.log"
  if ! meson setup "$dir" "$@" >"$log" 2>&1; then
    echo "test.sh: meson setup $dir failed:" >&2
    cat "$log" >&2
    stage_failures+=("$dir: meson setup")
    return 1
  fi
  if ! ninja -C "$dir" >>"$log" 2>&1; then
    echo "test.sh: build in $dir failed:" >&2
    grep -v '^\[[0-9]*/[0-9]*\] ' "$log" | tail -n 200 >&2
    stage_failures+=("$dir: ninja")
    return 1
  fi
  echo "== $dir: configured and built ($(elapsed) s so far)"
}

# meson test with its own log base, so several runs in one dir keep their logs.
mtest() {
  local dir=$1 logbase=$2; shift 2
  echo "== $dir: meson test $* ($(elapsed) s so far)"
  meson test -C "$dir" --print-errorlogs --logbase "$logbase" "$@"
  # A non-zero exit is counted from the log; a run that left no log is a failure.
  if [ ! -s "$dir/meson-logs/$logbase.json" ]; then
    stage_failures+=("$dir: meson test $* left no log")
  fi
}

if [ "$run_deps" -eq 1 ]; then
  if ! bash scripts/install-deps.sh; then
    stage_failures+=("install-deps.sh")
  fi
fi

if build "$MAIN"; then
  mtest "$MAIN" testlog-main --suite unit --suite cli --suite readers
  mtest "$MAIN" testlog-mount --suite mount --suite tools --num-processes 1
fi

if [ "$run_san" -eq 1 ]; then
  # UBSan and ASan abort on the first report (meson's default *SAN_OPTIONS).
  if build "$SAN" -Db_sanitize=address,undefined; then
    mtest "$SAN" testlog-san --suite unit --suite cli --timeout-multiplier 3
    mtest "$SAN" testlog-san-mount --suite mount-san --num-processes 1 --timeout-multiplier 3
  fi
fi

if [ "$run_fuzz" -eq 1 ]; then
  if command -v clang >/dev/null 2>&1; then
    # Only the harnesses and what they link are built with clang.
    rm -rf "$FUZZ"
    log="$FUZZ.build-steps.log"
    if CC=clang meson setup "$FUZZ" -Dfuzz=enabled -Db_sanitize=address,undefined \
         -Dtests=disabled >"$log" 2>&1 && ninja -C "$FUZZ" "${FUZZ_TARGETS[@]}" >>"$log" 2>&1; then
      echo "== $FUZZ: configured and built ($(elapsed) s so far)"
      mtest "$FUZZ" testlog-fuzz --suite fuzz --no-rebuild --num-processes 2
    else
      echo "test.sh: the fuzz build in $FUZZ failed:" >&2
      grep -v '^\[[0-9]*/[0-9]*\] ' "$log" | tail -n 100 >&2
      stage_failures+=("$FUZZ: build")
    fi
    rm -f "$log"
  else
    case "${CI:-}" in
      1|true|yes) stage_failures+=("fuzz: clang is not installed (scripts/install-deps.sh installs it)") ;;
      *) echo "== fuzz: skipped, no clang (scripts/install-deps.sh installs it)" ;;
    esac
  fi
fi

echo "== done in $(elapsed) s"
logs=()
for f in "$MAIN"/meson-logs/testlog-*.json "$SAN"/meson-logs/testlog-*.json \
         "$FUZZ"/meson-logs/testlog-*.json; do
  [ -f "$f" ] && logs+=("$f")
done

# Count per meson test. A Python test file whose cases were all skipped exits
# 0 (meson says OK); its own closing line tells, so count it as skipped.
"$PY" - "${#stage_failures[@]}" "${stage_failures[@]}" -- "${logs[@]}" <<'EOF'
import json, re, sys

args = sys.argv[1:]
nstage = int(args[0])
stages = args[1:1 + nstage]
logs = args[args.index("--") + 1:]
line_re = re.compile(r"^\S+: (\d+) passed, (\d+) failed, (\d+) skipped$", re.M)
passed = failed = skipped = 0
bad = []
for path in logs:
    build = path.split("/")[0]
    with open(path) as f:
        for raw in f:
            raw = raw.strip()
            if not raw:
                continue
            t = json.loads(raw)
            res = t.get("result", "ERROR")
            name = "%s %s" % (build, t.get("name", "?"))
            if res in ("OK", "EXPECTEDFAIL"):
                m = line_re.findall(t.get("stdout") or "")
                if m and all(int(p) == 0 and int(fl) == 0 and int(s) > 0 for p, fl, s in m):
                    skipped += 1
                    bad.append("SKIP  " + name)
                else:
                    passed += 1
            elif res == "SKIP":
                skipped += 1
                bad.append("SKIP  " + name)
            else:
                failed += 1
                bad.append("%-5s %s" % (res, name))
for s in stages:
    failed += 1
    bad.append("FAIL  " + s)
for b in bad:
    print(b)
if passed == 0 and failed == 0:
    failed = 1
    print("FAIL  no test ran")
print("tests: %d passed, %d failed, %d skipped" % (passed, failed, skipped))
sys.exit(1 if failed else 0)
EOF
