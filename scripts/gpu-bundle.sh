#!/usr/bin/env bash
# Build a self-contained build directory for scripts/gpu-check.sh on a GPU
# machine that has no Debian -dev packages (a machine lent for minutes):
#
#   bash scripts/gpu-bundle.sh [BUILD]       # default build-gpu
#
# Configures BUILD with CUDA enabled, MPI off, and an $ORIGIN/rlibs rpath
# (DT_RPATH, so it also covers the libraries' own dependencies), then copies
# into BUILD/rlibs every shared library the tools need apart from the C
# library, CUPTI and the CUDA driver (those come from the GPU machine), and
# fusermount3. The binaries then run on any x86-64 Linux with glibc >= this
# machine's.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD=${1:-build-gpu}
if [ ! -f "$BUILD/build.ninja" ]; then
  meson setup "$BUILD" -Dcuda=enabled -Dmpi=disabled -Dtests=disabled --buildtype=release \
    '-Dc_link_args=-Wl,--disable-new-dtags,-rpath,$ORIGIN/rlibs' >/dev/null
fi
ninja -C "$BUILD" >/dev/null
mkdir -p "$BUILD/rlibs"
for b in dliofs dlio-drive dlio-gen dlio-stall dlio-trace libdlio_cupti.so; do
  ldd "$BUILD/$b"
done | awk '/=>/ {print $3}' | sort -u |
  grep -v -E '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so|libcupti|libcuda' |
  while read -r lib; do cp -L "$lib" "$BUILD/rlibs/"; done
cp "$(command -v fusermount3)" "$BUILD/rlibs/"
echo "gpu-bundle: $BUILD ($(du -sh "$BUILD" | cut -f1)), $(ls "$BUILD/rlibs" | wc -l) files in rlibs"
