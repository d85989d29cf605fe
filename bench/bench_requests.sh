#!/usr/bin/env bash
# What request sizes does the daemon actually receive? Mounts in the foreground
# with FUSE debug output, runs typical Python readers, and prints a histogram of
# READ sizes per reader and io mode. Used to choose the mount's defaults.
# Usage: bench/bench_requests.sh [BUILD_DIR]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}
work=$(mktemp -d /tmp/dliofs-req.XXXXXX)
mnt=$work/mnt
mkdir -p "$mnt"
cleanup() { fusermount3 -u "$mnt" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

readers=(
  "f.read(1MiB)|f=open(P+'/raw/train/img_0_of_1.raw','rb',buffering=0); [f.read(1<<20) for _ in range(16)]"
  "readinto(np 1MiB)|import numpy as np; b=np.empty(1<<20,np.uint8); f=open(P+'/raw/train/img_0_of_1.raw','rb',buffering=0); [f.readinto(b) for _ in range(16)]"
  "buffered read(64KiB)|f=open(P+'/raw/train/img_0_of_1.raw','rb'); [f.read(1<<16) for _ in range(256)]"
  "np.load(npz)['x']|import numpy as np; np.load(P+'/npz/train/img_0_of_1.npz')['x']"
)
for mode in cache direct; do
  cat > "$work/cfg.yaml" <<EOC
io: $mode
datasets:
  - {name: raw, format: raw, files: 1, samples_per_file: 64, sample_size: 1MiB}
  - {name: npz, format: npz, files: 1, sample_size: 16MiB}
EOC
  for r in "${readers[@]}"; do
    name=${r%%|*}; code=${r#*|}
    "$build/dliofs" mount "$mnt" "$work/cfg.yaml" -d >"$work/log" 2>&1 &
    for _ in $(seq 100); do mountpoint -q "$mnt" && break; sleep 0.05; done
    P=$mnt /usr/bin/python3 -c "import os; P=os.environ['P']; $code"
    fusermount3 -u "$mnt"; wait || true
    hist=$(awk '/opcode: READ/ {u[$2]=1} /success, outsize/ {id=$2; if (id in u) {print $NF-16; delete u[id]}}' "$work/log" |
           sort -n | uniq -c | sort -rn | head -4 | awk '{printf "%s x %s B; ", $1, $2}')
    printf 'io=%-6s %-22s %s\n' "$mode" "$name" "$hist"
  done
done
