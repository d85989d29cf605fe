#!/usr/bin/env bash
# Time to a ready dataset: DLIO's own data generation (dlio_benchmark with
# workflow.generate_data True, train False) into a directory, vs `dliofs mount`
# of the SAME workload file until the mount answers, plus a first `ls -lR`.
# Also shown: dlio-gen (our generator, same bytes as the mount) into a
# directory, and one cold `cat` of the whole mounted dataset, so the price of
# reading through FUSE is on the table too. Generation times include `sync`.
# Scaled workloads, a few hundred MB each: unet3d-like npz, resnet50-like
# tfrecord, cosmoflow-like hdf5. Prints every command line and a table whose
# last column (DLIO gen / mount) is the headline figure; asserts nothing.
#
# Usage: bench/bench_dlio_gen.sh [BUILD_DIR] [WORK_DIR]
#   BUILD_DIR  holds dliofs and dlio-gen (default: build)
#   WORK_DIR   where DLIO and dlio-gen write (default: a new dir under /var/tmp,
#              a disk; removed at the end unless KEEP=1)
# Environment: DLIOFS_VENV (default /opt/dliofs-venv, where scripts/install-deps.sh
# puts dlio-benchmark 2.0.0), DLIO_RANKS (MPI ranks for DLIO's generation,
# default 1; DLIO splits files across ranks), SCALE (multiplies file counts, default 1),
# DLIO_GEN_BUFFER (dataset.generation_buffer_size: "file" (default) = one file's
# samples; "default" leaves DLIO's 2 GiB, with which 2.0.0's hdf5 generator draws
# 2 GiB of random samples per file however few it writes: ~100x slower here).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
venv=${DLIOFS_VENV:-/opt/dliofs-venv}
ranks=${DLIO_RANKS:-1}
scale=${SCALE:-1}
gen_buffer=${DLIO_GEN_BUFFER:-file}
py=$venv/bin/python
for f in "$build/dliofs" "$build/dlio-gen" "$venv/bin/dlio_benchmark"; do
  [ -x "$f" ] || { echo "bench_dlio_gen.sh: $f not found (build, or bash scripts/install-deps.sh)" >&2; exit 1; }
done
if [ -n "${2:-}" ]; then
  mkdir -p "$2"; work=$(cd "$2" && pwd)
else
  work=$(mktemp -d /var/tmp/dliofs-bench-dlio.XXXXXX)
fi
mnt=$work/mnt
mkdir -p "$mnt" "$work/conf/workload" "$work/bin"
cleanup() {
  "$build/dliofs" umount "$mnt" 2>/dev/null || true
  if [ "${KEEP:-0}" != 1 ]; then rm -rf "$work"; fi
}
trap cleanup EXIT

# DLIO 2.0.0's tfrecord generator shells out to DALI's tfrecord2idx for each
# file (DALI, a CUDA package, is not installed). Where it is missing, this
# equivalent writes the same index, one "offset length" line per record, by
# reading the file once the way DALI's script does.
if ! command -v tfrecord2idx >/dev/null; then
  cat > "$work/bin/tfrecord2idx" <<EOP
#!$py
import struct, sys
with open(sys.argv[1], "rb") as f, open(sys.argv[2], "w") as idx:
    off = 0
    while True:
        head = f.read(12)
        if len(head) < 12:
            break
        n = struct.unpack("<Q", head[:8])[0]
        f.seek(n + 4, 1)
        idx.write("%d %d\n" % (off, 12 + n + 4))
        off += 12 + n + 4
EOP
  chmod +x "$work/bin/tfrecord2idx"
  export PATH=$work/bin:$PATH
  tfidx="tfrecord2idx: equivalent script (DALI absent)"
else
  tfidx="tfrecord2idx: $(command -v tfrecord2idx)"
fi

# name format files samples record_length stdev  (DLIO 2.0.0 keys)
workloads=(
  "unet3d_gen npz $((16 * scale)) 1 16777216 4194304"
  "resnet50_gen tfrecord $((16 * scale)) 128 114660 0"
  "cosmoflow_gen hdf5 $((32 * scale)) 4 2097152 0"
)

now() { date +%s.%N; }
secs() { "$py" -c "import sys; print('%.3f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$1" "$2"; }
show() { echo "+ $*"; }

declare -A R
for w in "${workloads[@]}"; do
  read -r name fmt files spf rec stdev <<<"$w"
  cfg=$work/conf/workload/$name.yaml
  # data_folder's last component is the dataset name; dliofs mounts the same
  # file with the mount root standing for data_folder's parent.
  cat > "$cfg" <<EOC
model: $name
framework: tensorflow
workflow:
  generate_data: True
  train: False
dataset:
  data_folder: $work/dlio/$name
  format: $fmt
  num_files_train: $files
  num_samples_per_file: $spf
  record_length: $rec
  record_length_stdev: $stdev
$([ "$gen_buffer" = default ] || echo "  generation_buffer_size: $((spf * rec))")
reader:
  data_loader: tensorflow
checkpoint:
  checkpoint_folder: $work/ckpt
EOC
  echo "== $name: $fmt, $files files x $spf samples, record_length $rec (stdev $stdev)"

  # 1. DLIO generates into a directory (a disk), then sync.
  cmd=("$venv/bin/dlio_benchmark" "--config-dir=$work/conf" "workload=$name" "++hydra.run.dir=$work/out-$name")
  [ "$ranks" -gt 1 ] && cmd=("$venv/bin/mpirun" -np "$ranks" "${cmd[@]}")
  show "DFTRACER_ENABLE=0 ${cmd[*]}"
  sync
  t0=$(now)
  (cd "$work" && DFTRACER_ENABLE=0 TF_CPP_MIN_LOG_LEVEL=3 "${cmd[@]}") > "$work/dlio-$name.log" 2>&1 || {
    echo "DLIO generation failed:" >&2; tail -n 40 "$work/dlio-$name.log" >&2; exit 1; }
  t1=$(now); sync; t2=$(now)
  # DLIO's own span: "Starting data generation" .. "Generation done" in its log.
  phase=$("$py" - "$work/out-$name/dlio.log" <<'EOP'
import re, sys
from datetime import datetime
t = {}
for line in open(sys.argv[1]):
    m = re.search(r"(\d{4}-\d\d-\d\dT[\d:.]+) (Starting data generation|Generation done)", line)
    if m:
        t[m.group(2)] = datetime.fromisoformat(m.group(1))
print("%.3f" % (t["Generation done"] - t["Starting data generation"]).total_seconds())
EOP
)
  dlio_bytes=$(du -sb --apparent-size "$work/dlio/$name/train" | cut -f1)
  R[$name.dlio]=$(secs "$t0" "$t2"); R[$name.phase]=$phase; R[$name.dlio_b]=$dlio_bytes
  rm -rf "$work/dlio/$name"

  # 2. dliofs mounts the same workload file; ready once mount returns and ls ran.
  show "$build/dliofs mount $mnt $cfg && ls -lR $mnt/$name"
  t0=$(now)
  # (stderr names the DLIO keys dliofs ignores; shown only on failure)
  "$build/dliofs" mount "$mnt" "$cfg" 2> "$work/mount-$name.log" || {
    echo "dliofs mount failed:" >&2; cat "$work/mount-$name.log" >&2; exit 1; }
  ls -lR "$mnt/$name" > /dev/null
  t1=$(now)
  R[$name.mount]=$(secs "$t0" "$t1")
  R[$name.mnt_b]=$(du -sb --apparent-size "$mnt/$name/train" | cut -f1)
  # One cold pass over every byte through FUSE (page cache of a fresh mount).
  show "find $mnt/$name -type f -exec cat {} + > /dev/null"
  t0=$(now)
  find "$mnt/$name" -type f -exec cat {} + > /dev/null
  t1=$(now)
  R[$name.cat]=$(secs "$t0" "$t1")
  show "$build/dliofs umount $mnt"
  "$build/dliofs" umount "$mnt"

  # 3. dlio-gen writes the mount's bytes into a directory, then sync.
  show "$build/dlio-gen -j $(nproc) $cfg $work/gen"
  sync
  t0=$(now)
  "$build/dlio-gen" -j "$(nproc)" "$cfg" "$work/gen" > /dev/null 2>&1
  sync
  t1=$(now)
  R[$name.gen]=$(secs "$t0" "$t1")
  rm -rf "$work/gen"
done

echo
printf '%-14s %9s %10s %10s %10s %10s %10s %10s %9s %9s\n' workload "MB" "DLIO gen" "(phase)" \
  "dlio-gen" "mount+ls" "cat all" "DLIO MB" "DLIO/mnt" "phase/mnt"
for w in "${workloads[@]}"; do
  read -r name _ <<<"$w"
  printf '%-14s %9.1f %9ss %9ss %9ss %9ss %9ss %10.1f %8.0fx %8.0fx\n' "$name" \
    "$("$py" -c "print(${R[$name.mnt_b]}/1e6)")" "${R[$name.dlio]}" "${R[$name.phase]}" \
    "${R[$name.gen]}" "${R[$name.mount]}" "${R[$name.cat]}" \
    "$("$py" -c "print(${R[$name.dlio_b]}/1e6)")" \
    "$("$py" -c "print(${R[$name.dlio]}/max(${R[$name.mount]}, 1e-6))")" \
    "$("$py" -c "print(${R[$name.phase]}/max(${R[$name.mount]}, 1e-6))")"
done
echo "DLIO gen: whole dlio_benchmark process + sync ($ranks rank(s), generation_buffer_size $gen_buffer); (phase): DLIO's own"
echo "'Starting data generation'..'Generation done' span; dlio-gen: -j $(nproc) + sync;"
echo "mount+ls: dliofs mount until it answers + ls -lR; cat all: one cold read of every byte"
echo "through the mount. MB: the mount's bytes; DLIO MB: DLIO's (its own size draws)."
versions=$("$py" -c "import importlib.metadata as m
print('dlio-benchmark %s, tensorflow %s' % (m.version('dlio-benchmark'), m.version('tensorflow-cpu')))")
echo "$versions; $tfidx;"
echo "work dir $work ($(df -T "$work" | awk 'NR==2 {print $2}')); kernel $(uname -r); $(nproc) cores"
