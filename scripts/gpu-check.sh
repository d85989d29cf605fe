#!/usr/bin/env bash
# The CUDA parts on a real GPU, in one bounded run (issue: dlio-drive
# --accelerator cuda and dlio-stall's CUPTI library had never run on one).
#
#   bash scripts/gpu-check.sh [BUILD] [OUTDIR]
#
# BUILD: a build directory of this tree configured with -Dcuda=enabled
# (default build-gpu). A machine lent for a few minutes has no Debian -dev
# packages to build the whole project with, so BUILD may come from elsewhere
# (scripts/gpu-bundle.sh makes one that carries its shared libraries and
# fusermount3 in BUILD/rlibs, found through an $ORIGIN rpath). What this
# script builds on the GPU machine itself, with that machine's CUDA toolkit,
# is the CUPTI injection library (the one part compiled against the
# toolkit; dlio-drive's CUDA path loads the driver at run time and embeds
# PTX). It then runs the gpu meson suite's test (tests/gpu/test_gpu.py) with
# the tools of BUILD and the library built here, and writes under OUTDIR
# (default $OUT, else ./gpu-out): env.txt, build.txt, test.txt and the
# JSON reports. Each step has its own timeout; the script never waits
# longer than about 6 minutes in all.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
SRC=$PWD
BUILD=$(cd "${1:-build-gpu}" && pwd) || { echo "gpu-check: no build dir ${1:-build-gpu}" >&2; exit 2; }
OUTDIR=${2:-${OUT:-$SRC/gpu-out}}
mkdir -p "$OUTDIR"
CUDA=${CUDA_HOME:-/usr/local/cuda}
[ -d "$BUILD/rlibs" ] && export PATH="$BUILD/rlibs:$PATH"   # fusermount3 carried along

# --- the machine ---
{
  date -u
  uname -a
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv 2>&1
  "$CUDA/bin/nvcc" --version 2>&1 | tail -n 2
  ls -l /dev/fuse /dev/nvidia0 2>&1
  command -v fusermount3 python3 meson pkg-config 2>&1
  timeout 120 python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, \
torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')" 2>&1
  nproc; free -g | head -n 2
} >"$OUTDIR/env.txt" 2>&1
cat "$OUTDIR/env.txt"

# --- the CUPTI library, compiled here against this machine's toolkit ---
CUPTI_LIB="$BUILD/libdlio_cupti.so"
{
  echo "== cc + $CUDA/include/cupti.h -> libdlio_cupti.so"
  mkdir -p "$OUTDIR/.cupti"
  # util's clock as an archive, so that (as in meson.build) it is linked in
  # but not exported into the job's process.
  if timeout 60 cc -std=c11 -O2 -Wall -Wextra -Werror -D_GNU_SOURCE -fPIC -I"$SRC/include" \
      -c "$SRC/util/clock.c" -o "$OUTDIR/.cupti/clock.o" &&
    ar rcs "$OUTDIR/.cupti/libclock.a" "$OUTDIR/.cupti/clock.o" &&
    timeout 120 cc -std=c11 -O2 -Wall -Wextra -Werror -D_GNU_SOURCE -fPIC -shared \
      -I"$SRC/include" -I"$SRC/util" -isystem "$CUDA/include" \
      "$SRC/tools/stall/cupti_inject.c" "$OUTDIR/.cupti/libclock.a" -Wl,--exclude-libs,ALL \
      -L"$CUDA/lib64" -L"$CUDA/extras/CUPTI/lib64" -Wl,-rpath,"$CUDA/lib64" -lcupti -lpthread \
      -o "$OUTDIR/.cupti/libdlio_cupti.so"; then
    CUPTI_LIB="$OUTDIR/.cupti/libdlio_cupti.so"
    echo "built against this machine's toolkit: $CUPTI_LIB"
    ldd "$CUPTI_LIB" | grep -i cupti
  else
    echo "build failed: using the carried $CUPTI_LIB"
  fi
} >"$OUTDIR/build.txt" 2>&1
cat "$OUTDIR/build.txt"

# --- the gpu suite's test ---
export DLIOFS_SRC=$SRC DLIOFS_BUILD=$BUILD DLIOFS=$BUILD/dliofs DLIO_GEN=$BUILD/dlio-gen \
  DLIO_DRIVE=$BUILD/dlio-drive DLIO_STALL=$BUILD/dlio-stall DLIO_CUPTI_LIB=$CUPTI_LIB \
  DLIOFS_GPU_KEEP=$OUTDIR PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
export DLIOFS_GPU_PY=${DLIOFS_GPU_PY:-$(command -v python3)}
timeout 360 python3 "$SRC/tests/gpu/test_gpu.py" -v >"$OUTDIR/test.txt" 2>&1
rc=$?
cat "$OUTDIR/test.txt"

# --- no FUSE on this machine: the same CUDA paths over a generated directory ---
if ! [ -e /dev/fuse ] || grep -q "fusermount3 not available" "$OUTDIR/test.txt"; then
  echo "== no FUSE here: dlio-drive and dlio-stall over a dlio-gen directory instead of a mount"
  work=$(mktemp -d)
  printf 'datasets:\n  - name: npz\n    format: npz\n    files: 64\n    samples_per_file: 1\n    sample_size: 1MiB\n' >"$work/cfg.yaml"
  timeout 120 "$BUILD/dlio-gen" "$work/cfg.yaml" "$work/data" >/dev/null
  timeout 120 "$BUILD/dlio-drive" --config "$work/cfg.yaml" "$work/data" --dataset npz --batch-size 4 \
    --epochs 1 --read-threads 2 --accelerator cuda --computation-time 20ms \
    --json "$OUTDIR/drive-nofuse.json" 2>&1 | tee -a "$OUTDIR/test.txt"
  timeout 240 "$BUILD/dlio-stall" run --cupti "$CUPTI_LIB" --json "$OUTDIR/stall-nofuse.json" -- \
    "$DLIOFS_GPU_PY" "$SRC/tests/jobs/train_torch_npz.py" "$work/data/npz" --batch 4 --workers 2 \
    --device cuda 2>&1 | tee -a "$OUTDIR/test.txt"
  rm -rf "$work"
fi
rm -rf "$OUTDIR/.cupti"
echo "gpu-check: test exit $rc"
exit $rc
