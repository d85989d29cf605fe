#!/usr/bin/env bash
# Sequential 1 MiB read throughput of raw files, same run, three ways: through
# a dliofs mount, through dl-noopfs (bench/noopfs.c: a no-op FUSE fs serving
# the same generator's bytes, i.e. the FUSE ceiling of this machine) and from
# tmpfs (dlio-gen's copy of the same bytes). Page-cache mode (dliofs io=cache,
# dl-noopfs keep_cache) and direct mode (io=direct, direct_io), 1 and 2
# readers, fio (psync, page-aligned buffers, each job its own files) and
# Python (os.readv of 1 MiB into one page-aligned buffer, bench/pyread.py).
# Every pass is cold: a fresh mount and the page cache dropped before it. Prints medians over RUNS runs and the ratios
# mount / no-op and mount / tmpfs. Asserts nothing.
# Usage: bench/bench_read.sh [BUILD_DIR] [TOTAL_MIB] [RUNS]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}
total_mib=${2:-2048}
runs=${3:-3}
command -v fio >/dev/null || { echo "fio is needed (apt-get install fio)"; exit 1; }
work=$(mktemp -d /tmp/dliofs-bench.XXXXXX)
shm=$(mktemp -d /dev/shm/dliofs-bench.XXXXXX)
mnt=$work/mnt
noop_pid=
mkdir -p "$mnt"
cleanup() {
  "$build/dliofs" umount "$mnt" 2>/dev/null || true
  fusermount3 -u "$mnt" 2>/dev/null || true
  [ -n "$noop_pid" ] && wait "$noop_pid" 2>/dev/null || true
  rm -rf "$work" "$shm"
}
trap cleanup EXIT

nfiles=$(( total_mib / 256 ))
fsize=$(( 256 << 20 ))
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

drop() { sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true; }

# fio with each job on its own files (files dealt round-robin), aggregate MB/s.
fio_bw() { # jobs file...
  local jobs=$1; shift
  local files=("$@") j i list
  {
    printf '[global]\nrw=read\nbs=1M\nioengine=psync\niomem_align=4k\nfile_service_type=sequential\ngroup_reporting=1\n'
    for ((j = 0; j < jobs; j++)); do
      list=
      for ((i = j; i < ${#files[@]}; i += jobs)); do list+="${list:+:}${files[$i]//:/\\:}"; done
      printf '[r%d]\nfilename=%s\n' "$j" "$list"
    done
  } > "$work/job.fio"
  fio --output-format=json --output="$work/fio.json" "$work/job.fio" >/dev/null
  /usr/bin/python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print("%.0f" % (j["jobs"][0]["read"]["bw_bytes"]/1e6))' "$work/fio.json"
}

py_bw() { # jobs file...
  local jobs=$1; shift
  /usr/bin/python3 "$src/bench/pyread.py" --jobs "$jobs" "$@"
}

measure() { # tool jobs dir -> MB/s
  local files
  mapfile -t files < <(find "$3" -type f | sort)
  if [ "$1" = fio ]; then fio_bw "$2" "${files[@]}"; else py_bw "$2" "${files[@]}"; fi
}

noop_mount() { # cache|direct
  local extra=()
  [ "$1" = direct ] && extra=(--direct)
  "$build/dl-noopfs" "$mnt" --files "$nfiles" --size "$fsize" "${extra[@]}" &
  noop_pid=$!
  for _ in $(seq 100); do
    [ "$(stat -c %i "$mnt" 2>/dev/null)" = 1 ] && return 0
    sleep 0.05
  done
  echo "dl-noopfs did not come up" >&2; exit 1
}
noop_umount() { fusermount3 -u "$mnt"; wait "$noop_pid" || true; noop_pid=; }

# Results: res[system/mode/tool/jobs] = space-separated MB/s of each run.
declare -A res
"$build/dlio-gen" -q "$work/cfg-cache.yaml" "$shm" >/dev/null
for ((r = 1; r <= runs; r++)); do
  for mode in cache direct; do
    for tool in fio python; do
      for jobs in 1 2; do
        drop
        "$build/dliofs" mount "$mnt" "$work/cfg-$mode.yaml"
        res[dliofs/$mode/$tool/$jobs]+="$(measure "$tool" "$jobs" "$mnt/raw/train") "
        "$build/dliofs" umount "$mnt"
        drop
        noop_mount "$mode"
        res[noop/$mode/$tool/$jobs]+="$(measure "$tool" "$jobs" "$mnt") "
        noop_umount
      done
    done
  done
  for tool in fio python; do
    for jobs in 1 2; do
      res[tmpfs/$tool/$jobs]+="$(measure "$tool" "$jobs" "$shm/raw/train") "
    done
  done
done

med() { printf '%s\n' $1 | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }

printf '%-8s %-7s %7s | %9s %9s %9s | %9s %9s %9s\n' mode reader readers "dliofs" "no-op" "tmpfs" \
  "/no-op" "/tmpfs" "no-op/tmpfs"
for mode in cache direct; do
  for tool in fio python; do
    for jobs in 1 2; do
      d=$(med "${res[dliofs/$mode/$tool/$jobs]}")
      n=$(med "${res[noop/$mode/$tool/$jobs]}")
      t=$(med "${res[tmpfs/$tool/$jobs]}")
      printf '%-8s %-7s %7s | %9s %9s %9s | %9s %9s %9s\n' "$mode" "$tool" "$jobs" "$d" "$n" "$t" \
        "$(ratio "$d" "$n")" "$(ratio "$d" "$t")" "$(ratio "$n" "$t")"
    done
  done
done
echo "MB/s, medians of $runs runs; $nfiles x 256 MiB raw files; 1 MiB sequential reads, cold" \
  "(fresh mount, page cache dropped); per-run figures:"
for k in $(printf '%s\n' "${!res[@]}" | sort); do echo "  $k: ${res[$k]}"; done
echo "fio $(fio --version); kernel $(uname -r); $(nproc) cores; generator path $("$build/dl-bench-gen" 0.01 | sed -n 's/generator path: //p')"
