#!/usr/bin/env bash
# Quick start: install, build, mount configs/default.yaml, read every file once
# with real readers, print a report, unmount. Usage: scripts/quickstart.sh [CONFIG]
# DLIOFS_BUILD=DIR uses that build directory instead of ./build (the tests do).
set -euo pipefail
cd "$(dirname "$0")/.."
cfg=${1:-configs/default.yaml}
bash scripts/install-deps.sh --no-venv
build=${DLIOFS_BUILD:-build}
[ -d "$build" ] || meson setup "$build" >/dev/null
ninja -C "$build" >/dev/null
"$build/dliofs" check "$cfg"
mnt=$(mktemp -d /tmp/dliofs-quickstart.XXXXXX)
t0=$(date +%s%N)
"$build/dliofs" mount "$mnt" "$cfg"
t1=$(date +%s%N)
trap '"$build/dliofs" umount "$mnt" 2>/dev/null || true; rmdir "$mnt" 2>/dev/null || true' EXIT
echo "mounted $cfg on $mnt in $(( (t1 - t0) / 1000000 )) ms"
/usr/bin/python3 scripts/read_all.py "$mnt"
echo "what the mount saw (dliofs stat):"
"$build/dliofs" stat "$mnt" | sed 's/^/  /'
