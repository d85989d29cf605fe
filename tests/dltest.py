"""Shared helpers for dliofs's Python tests (stdlib only).

Rules every test follows:
- In CI (CI=true) a test that cannot run because a dependency or /dev/fuse is
  missing FAILS; elsewhere it is skipped with the reason printed.
- Binaries come from the environment meson sets: DLIOFS, DLIO_GEN.
"""
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

SRC = os.environ.get("DLIOFS_SRC", os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("DLIOFS_BUILD", os.path.join(SRC, "build"))
DLIOFS = os.environ.get("DLIOFS", os.path.join(BUILD, "dliofs"))
DLIO_GEN = os.environ.get("DLIO_GEN", os.path.join(BUILD, "dlio-gen"))
VENV_PY = os.environ.get("DLIOFS_VENV_PY", "/opt/dliofs-venv/bin/python")
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require(cond, why):
    """Skip (outside CI) or fail (in CI) when a precondition is not met."""
    if cond:
        return
    if IN_CI:
        raise AssertionError("required in CI but unavailable: " + why)
    raise unittest.SkipTest(why)


def fuse_available():
    return os.path.exists("/dev/fuse") and os.access("/dev/fuse", os.R_OK | os.W_OK) \
        and shutil.which("fusermount3") is not None


def venv_python():
    """Python with tensorflow (PyPI), or None."""
    if os.path.exists(VENV_PY):
        r = subprocess.run([VENV_PY, "-c", "import tensorflow"], capture_output=True)
        if r.returncode == 0:
            return VENV_PY
    return None


def write_config(dirpath, text, name="cfg.yaml"):
    path = os.path.join(dirpath, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def gen(config, outdir):
    """Run dlio-gen CONFIG OUTDIR; raise with its stderr on failure."""
    r = subprocess.run([DLIO_GEN, config, outdir], capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError("dlio-gen failed (%d): %s" % (r.returncode, r.stderr))
    return outdir


@contextlib.contextmanager
def mounted(config, extra_args=(), mountpoint=None):
    """Mount CONFIG with `dliofs mount` (returns once the fs answers), yield
    the mountpoint, unmount with `dliofs umount` and check the daemon left."""
    require(fuse_available(), "/dev/fuse or fusermount3 not available")
    own = mountpoint is None
    mnt = mountpoint or tempfile.mkdtemp(prefix="dliofs-mnt-")
    r = subprocess.run([DLIOFS, "mount", mnt, config] + list(extra_args),
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        if own:
            os.rmdir(mnt)
        raise AssertionError("dliofs mount failed (%d): %s" % (r.returncode, r.stderr))
    try:
        yield mnt
    finally:
        u = subprocess.run([DLIOFS, "umount", mnt], capture_output=True, text=True, timeout=60)
        if u.returncode != 0:
            subprocess.run(["fusermount3", "-u", "-z", mnt], capture_output=True)
        if own:
            for _ in range(50):
                try:
                    os.rmdir(mnt)
                    break
                except OSError:
                    time.sleep(0.1)
        if u.returncode != 0:
            raise AssertionError("dliofs umount failed: %s" % u.stderr)


def walk_files(root):
    out = []
    for d, dirs, files in os.walk(root):
        dirs.sort()
        for f in sorted(files):
            out.append(os.path.relpath(os.path.join(d, f), root))
    return out


def main():
    """unittest.main that prints a 'N passed, N failed' line."""
    prog = unittest.main(exit=False, verbosity=2)
    res = prog.result
    failed = len(res.failures) + len(res.errors) + len(res.unexpectedSuccesses)
    skipped = len(res.skipped)
    passed = res.testsRun - failed - skipped
    print("%s: %d passed, %d failed, %d skipped" % (os.path.basename(sys.argv[0]), passed, failed, skipped))
    sys.exit(1 if failed or res.testsRun == 0 else 0)
