#!/usr/bin/env bash
# Install everything dliofs needs to build and test on Debian 12 (run as root).
#
#   bash scripts/install-deps.sh            # Debian packages + TensorFlow venv + DLIO in it
#   bash scripts/install-deps.sh --no-venv  # Debian packages only (enough to build and mount)
#   bash scripts/install-deps.sh --no-dlio  # Debian packages + TensorFlow venv, no DLIO
#   bash scripts/install-deps.sh --no-torch # all of the above but torch in the venv (~5 GB)
#
# Idempotent: a second run checks what is there and does nothing else (a few
# seconds). Output is quiet; a failing step prints its full log to stderr.
set -euo pipefail

VENV=${DLIOFS_VENV:-/opt/dliofs-venv}
# The TensorFlow release the tests were run with (CPU-only wheel from PyPI).
TF_PIN=${DLIOFS_TF_PIN:-tensorflow-cpu==2.21.0}
# The S3 endpoint's tests (tests/tools/s3/test_s3.py) drive it with the real boto3.
BOTO3_PIN=${DLIOFS_BOTO3_PIN:-boto3==1.44.5}
# tests/tools/s3/test_s3_clients.py: the S3 clients training jobs use, pinned.
S3_CLIENT_PINS=(
  s3torchconnector==1.5.0 s3torchconnectorclient==1.5.0 minio==7.2.20 s3dlio==0.10.0
  botocore==1.44.8
)

PACKAGES=(
  meson ninja-build pkg-config gcc libc6-dev
  libfuse3-dev fuse3 libyaml-dev zlib1g-dev libdeflate-dev libhdf5-dev libpng-dev
  libjpeg62-turbo-dev libjpeg-turbo-progs
  libmicrohttpd-dev libssl-dev libexpat1-dev
  # tests/tools/s3/test_s3_clients.py mounts the S3 endpoint with s3fs-fuse
  s3fs
  python3-numpy python3-torch python3-torchvision python3-h5py python3-pil
  python3-matplotlib python3-venv python3-yaml
  fio ca-certificates
  # bench/bench_fidelity.py's network storage: sshfs to an sshd of its own in
  # a network namespace (ip); the CI calibration test needs only fio
  openssh-server openssh-client sshfs iproute2
  libopenmpi-dev openmpi-bin
  clang libclang-rt-14-dev
  # bench/bench_s3.py's reference server; dlio-drive --storage s3's HTTP client
  nginx libcurl4-openssl-dev
)

want_venv=1
want_dlio=1
want_torch=1
for arg in "$@"; do
  case "$arg" in
    --no-venv) want_venv=0 ;;
    --no-dlio) want_dlio=0 ;;
    --no-torch) want_torch=0 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install-deps.sh: unknown option '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

log=$(mktemp /tmp/dliofs-install-deps.XXXXXX)
trap 'rm -f "$log"' EXIT

# Run a step with its output in $log; on failure show that log and stop.
quiet() {
  local what=$1; shift
  if ! "$@" >"$log" 2>&1; then
    echo "install-deps.sh: $what failed: $*" >&2
    cat "$log" >&2
    exit 1
  fi
}

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
  else
    echo "install-deps.sh: must run as root (or with sudo available)" >&2
    exit 1
  fi
fi

# --- Debian packages: only touch apt when something is missing ---
missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed'; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps.sh: installing ${#missing[@]} Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  quiet "apt-get update" "${SUDO[@]}" apt-get update -q
  quiet "apt-get install" "${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# --- TensorFlow venv (PyPI): only for the TFRecord reader tests ---
venv_ok() {
  [ -x "$VENV/bin/python" ] || return 1
  local have
  have=$("$VENV/bin/python" -c \
    "import importlib.metadata as m; print('tensorflow-cpu==' + m.version('tensorflow-cpu'))" \
    2>/dev/null) || return 1
  [ "$have" = "$TF_PIN" ]
}
if [ "$want_venv" -eq 1 ] && ! venv_ok; then
  echo "install-deps.sh: setting up $VENV with $TF_PIN (PyPI)"
  if [ ! -x "$VENV/bin/pip" ]; then
    quiet "venv creation" "${SUDO[@]}" /usr/bin/python3 -m venv "$VENV"
  fi
  quiet "pip install" "${SUDO[@]}" "$VENV/bin/pip" install -q --disable-pip-version-check "$TF_PIN"
  quiet "tensorflow import check" "$VENV/bin/python" -c "import tensorflow"
fi

# --- boto3 (PyPI) in the same venv: tests/tools/s3/test_s3.py ---
boto3_ok() {
  [ -x "$VENV/bin/python" ] || return 1
  [ "$("$VENV/bin/python" -c "import importlib.metadata as m; print('boto3==' + m.version('boto3'))" \
    2>/dev/null)" = "$BOTO3_PIN" ]
}
if [ "$want_venv" -eq 1 ] && [ -x "$VENV/bin/pip" ] && ! boto3_ok; then
  echo "install-deps.sh: installing $BOTO3_PIN into $VENV (PyPI)"
  quiet "pip install (boto3)" "${SUDO[@]}" "$VENV/bin/pip" install -q --disable-pip-version-check \
    "$BOTO3_PIN"
fi

# --- DLIO benchmark (PyPI) in the same venv: tests/mount/test_dlio_benchmark.py, bench/bench_dlio_gen.sh ---
# Installed with --no-deps: its declared dependencies include torch, torchvision,
# torchaudio and nvidia-dali-cuda110 (gigabytes of CUDA wheels) that a run with
# framework tensorflow never imports. What such a run does import, pinned to the
# versions it was tested with: hydra-core + omegaconf (configs), mpi4py with the
# mpich wheel (MPI from PyPI, no apt; a lone process runs as an MPI singleton,
# the venv's mpirun starts several), pandas + psutil (statistics), pydftracer
# (2.0.0 cannot start without it: its stand-in for a missing tracer raises
# TypeError at import; pydftracer traces unless DFTRACER_ENABLE=0, so run DLIO
# with that), Pillow (jpeg/png), h5py (hdf5, already there for TensorFlow).
DLIO_PIN=${DLIOFS_DLIO_PIN:-dlio-benchmark==2.0.0}
DLIO_DEPS=(
  hydra-core==1.3.8 omegaconf==2.3.1 mpi4py==4.1.2 mpich==5.0.2 pandas==3.1.1
  psutil==7.2.2 pydftracer==1.0.2 PyYAML==6.0.3 pillow==13.0.0 h5py
)
dlio_ok() {
  [ -x "$VENV/bin/dlio_benchmark" ] || return 1
  "$VENV/bin/python" - "$DLIO_PIN" "${DLIO_DEPS[@]}" >/dev/null 2>&1 <<'PY'
import sys, importlib.metadata as m
for spec in sys.argv[1:]:
    name, _, want = spec.partition("==")
    have = m.version(name)          # raises when not installed
    if want and have != want:
        sys.exit(1)
from mpi4py import MPI              # finds the MPI library
PY
}
if [ "$want_venv" -eq 1 ] && [ "$want_dlio" -eq 1 ] && ! dlio_ok; then
  echo "install-deps.sh: installing $DLIO_PIN into $VENV (PyPI, without its torch/CUDA dependencies)"
  quiet "pip install (DLIO's dependencies)" "${SUDO[@]}" "$VENV/bin/pip" install -q \
    --disable-pip-version-check "${DLIO_DEPS[@]}"
  # pip notes the declared dependencies left out; that note is expected.
  quiet "pip install (DLIO)" "${SUDO[@]}" "$VENV/bin/pip" install -q --disable-pip-version-check \
    --no-deps "$DLIO_PIN"
  quiet "DLIO import check" env DFTRACER_ENABLE=0 "$VENV/bin/python" -c "import dlio_benchmark.main"
fi

# --- torch (PyPI) in the same venv: DLIO with framework: pytorch (MLPerf Storage's
# unet3d), tests/mount/test_dlio_benchmark.py's PyTorch runs ---
# PyPI's wheel, with its CUDA libraries (about 5 GB, about 2 minutes here): it
# imports and runs on CPU without a GPU, and shares numpy 2.x with
# tensorflow-cpu. PyTorch's CPU-only index is not PyPI and not used.
TORCH_PIN=${DLIOFS_TORCH_PIN:-torch==2.15.0}
torch_ok() {
  "$VENV/bin/python" - "$TORCH_PIN" >/dev/null 2>&1 <<'PY'
import sys, importlib.metadata as m
name, _, want = sys.argv[1].partition("==")
if want and m.version(name) != want:
    sys.exit(1)
import torch.utils.data             # what DLIO's TorchDataLoader imports
PY
}
if [ "$want_venv" -eq 1 ] && [ "$want_dlio" -eq 1 ] && [ "$want_torch" -eq 1 ] && ! torch_ok; then
  echo "install-deps.sh: installing $TORCH_PIN into $VENV (PyPI, about 5 GB with its CUDA libraries)"
  quiet "pip install (torch)" "${SUDO[@]}" "$VENV/bin/pip" install -q --disable-pip-version-check \
    "$TORCH_PIN"
  quiet "torch import check" "$VENV/bin/python" -c "import torch.utils.data, tensorflow"
fi

# --- S3 clients (PyPI) in the same venv: tests/tools/s3/test_s3_clients.py (after torch:
# s3torchconnector needs it) ---
s3_clients_ok() {
  "$VENV/bin/python" - "${S3_CLIENT_PINS[@]}" >/dev/null 2>&1 <<'PY'
import sys, importlib.metadata as m
for spec in sys.argv[1:]:
    name, _, want = spec.partition("==")
    if m.version(name) != want:
        sys.exit(1)
PY
}
if [ "$want_venv" -eq 1 ] && [ -x "$VENV/bin/pip" ] && ! s3_clients_ok; then
  echo "install-deps.sh: installing ${S3_CLIENT_PINS[*]} into $VENV (PyPI)"
  quiet "pip install (S3 clients)" "${SUDO[@]}" "$VENV/bin/pip" install -q \
    --disable-pip-version-check "${S3_CLIENT_PINS[@]}"
fi

if [ ! -e /dev/fuse ]; then
  echo "install-deps.sh: note: /dev/fuse is missing; mount tests need it (container: --device /dev/fuse --cap-add SYS_ADMIN)" >&2
fi
exit 0
