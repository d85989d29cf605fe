#!/usr/bin/env bash
# Sequential read throughput through the mount vs the same bytes on tmpfs, same run.
# fio, 1 MiB reads (fio's buffers are page aligned), 1 and 2 readers; the mount is
# fresh for every run so its page cache starts cold. Prints a table; asserts nothing.
# Usage: bench/bench_read.sh [BUILD_DIR] [TOTAL_MIB]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}
total_mib=${2:-2048}
command -v fio >/dev/null || { echo "fio is needed (apt-get install fio)"; exit 1; }
work=$(mktemp -d /tmp/dliofs-bench.XXXXXX)
shm=$(mktemp -d /dev/shm/dliofs-bench.XXXXXX)
mnt=$work/mnt
mkdir -p "$mnt"
cleanup() { "$build/dliofs" umount "$mnt" 2>/dev/null || true; rm -rf "$work" "$shm"; }
trap cleanup EXIT

nfiles=$(( total_mib / 256 ))
mkcfg() { # io mode
  cat > "$work/cfg-$1.yaml" <<EOC
seed: 7
io: $1
datasets:
  - name: raw
    format: raw
    files: $nfiles
    samples_per_file: 256
    sample_size: 1MiB
EOC
}
mkcfg cache; mkcfg direct

fio_bw() { # dir numjobs -> MB/s (aggregate)
  fio --name=seq --opendir="$1" --rw=read --bs=1M --ioengine=psync --numjobs="$2" --file_service_type=sequential \
      --group_reporting --output-format=json --output="$work/fio.json" >/dev/null
  /usr/bin/python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print("%.0f" % (j["jobs"][0]["read"]["bw_bytes"]/1e6))' "$work/fio.json"
}

# The mount runs first: with the tmpfs copy resident, page-cache mode was seen
# to lose about half its speed (page allocation), which would flatter nobody.
declare -A bw
for jobs in 1 2; do
  for mode in cache direct; do
    "$build/dliofs" mount "$mnt" "$work/cfg-$mode.yaml"
    bw[$mode$jobs]=$(fio_bw "$mnt/raw/train" "$jobs")
    "$build/dliofs" umount "$mnt"
  done
done
"$build/dlio-gen" -q "$work/cfg-cache.yaml" "$shm" >/dev/null
printf '%-36s %10s %10s %8s\n' "case (1 MiB sequential reads)" "readers" "MB/s" "vs tmpfs"
for jobs in 1 2; do
  base=$(fio_bw "$shm/raw/train" "$jobs")
  printf '%-36s %10s %10s %8s\n' "tmpfs (dlio-gen output)" "$jobs" "$base" "1.00"
  for mode in cache direct; do
    printf '%-36s %10s %10s %8.2f\n' "dliofs io=$mode, cold" "$jobs" "${bw[$mode$jobs]}" \
      "$(/usr/bin/python3 -c "print(${bw[$mode$jobs]}/$base)")"
  done
done
echo "files: $nfiles x 256 MiB raw; fio $(fio --version); kernel $(uname -r); $(nproc) cores"
