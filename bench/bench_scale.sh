#!/usr/bin/env bash
# Scale figures: mount time and daemon RSS for a 10-million-file, >= 1 PB dataset,
# and `ls -f | wc -l` on a 1-million-file directory. Prints figures; asserts nothing.
# Usage: bench/bench_scale.sh [BUILD_DIR]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}
work=$(mktemp -d /tmp/dliofs-scale.XXXXXX)
mnt=$work/mnt
mkdir -p "$mnt"
cleanup() { "$build/dliofs" umount "$mnt" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
cat > "$work/cfg.yaml" <<EOC
seed: 1
datasets:
  - name: huge
    format: npz
    files: 10M
    samples_per_file: 1
    sample_size: {mean: 100MB, stdev: 20MB, min: 10MB, max: 200MB}
  - name: flat
    format: raw
    files: 1M
    sample_size: 4KiB
EOC
ms() { echo $(( ($2 - $1) / 1000000 )); }
t0=$(date +%s%N); "$build/dliofs" mount "$mnt" "$work/cfg.yaml"; t1=$(date +%s%N)
pid=$(pgrep -n -f "dliofs mount $mnt" || true)
rss() { awk '/VmRSS/ {print $2" kB"}' "/proc/$pid/status"; }
echo "mount of 10,000,000 npz files (~1 PB) + 1,000,000 raw files: $(ms "$t0" "$t1") ms (until the fs answers)"
echo "daemon RSS after mount: $(rss)"
t0=$(date +%s%N); stat -c '%s' "$mnt/huge/train/img_09999999_of_10000000.npz" >/dev/null; t1=$(date +%s%N)
echo "stat of the last file: $(ms "$t0" "$t1") ms"
t0=$(date +%s%N); n=$(ls -f "$mnt/flat/train" | wc -l); t1=$(date +%s%N)
echo "ls -f | wc -l on 1,000,000 files: $n entries in $(ms "$t0" "$t1") ms"
t0=$(date +%s%N); n=$(ls -f "$mnt/flat/train" | wc -l); t1=$(date +%s%N)
echo "again (kernel readdir cache): $n entries in $(ms "$t0" "$t1") ms"
echo "daemon RSS after listing: $(rss)"
"$build/dliofs" check "$work/cfg.yaml" | tail -1
