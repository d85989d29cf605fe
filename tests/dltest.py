"""Shared helpers for dliofs's Python tests (stdlib only).

Rules every test follows:
- In CI (CI=true) a test that cannot run because a dependency or /dev/fuse is
  missing FAILS; elsewhere it is skipped with the reason printed.
- Binaries come from the environment meson sets: DLIOFS, DLIO_GEN.
"""
import contextlib
import errno
import os
import pty
import shutil
import signal
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


# Seconds a daemon may take to exit after its unmount (a sanitizer build
# checks for leaks on the way out).
DAEMON_EXIT_TIMEOUT = 60


@contextlib.contextmanager
def mounted(config, extra_args=(), mountpoint=None):
    """Mount CONFIG with `dliofs mount` (returns once the fs answers), yield
    the mountpoint, unmount with `dliofs umount` and check the daemon left:
    it exits, and its log (a temporary one unless EXTRA_ARGS names --log)
    reports no crash, sanitizer error or leak."""
    require(fuse_available(), "/dev/fuse or fusermount3 not available")
    own = mountpoint is None
    mnt = mountpoint or tempfile.mkdtemp(prefix="dliofs-mnt-")
    extra_args = list(extra_args)
    own_log = None
    if "--log" not in extra_args:
        fd, own_log = tempfile.mkstemp(prefix="dliofs-daemon-", suffix=".log")
        os.close(fd)
        extra_args += ["--log", own_log]
    log = extra_args[extra_args.index("--log") + 1]
    try:
        r = subprocess.run([DLIOFS, "mount", mnt, config] + extra_args,
                           capture_output=True, text=True, timeout=60)
    except BaseException:
        if own_log:
            os.unlink(own_log)
        raise
    if r.returncode != 0:
        # A failed mount must not leave anything behind; clean up whatever
        # it left so the report below shows dliofs's own error.
        leftover = is_mounted(mnt)
        if leftover:
            subprocess.run(["fusermount3", "-u", "-z", mnt], capture_output=True)
        if own:
            try:
                os.rmdir(mnt)
            except OSError:
                pass
        if own_log:
            os.unlink(own_log)
        raise AssertionError("dliofs mount failed (%d)%s: %s" % (
            r.returncode, " and left the mountpoint mounted" if leftover else "", r.stderr))
    pids = daemon_pids(mnt)
    try:
        yield mnt
    finally:
        u = subprocess.run([DLIOFS, "umount", mnt], capture_output=True, text=True, timeout=60)
        if u.returncode != 0:
            subprocess.run(["fusermount3", "-u", "-z", mnt], capture_output=True)
        gone = wait_for(lambda: not any(_pid_alive(p) for p in pids), DAEMON_EXIT_TIMEOUT, 0.05)
        if own:
            for _ in range(50):
                try:
                    os.rmdir(mnt)
                    break
                except OSError:
                    time.sleep(0.1)
        try:
            if u.returncode != 0:
                raise AssertionError("dliofs umount failed: %s" % u.stderr)
            if not gone:
                raise AssertionError("the daemon (pid %s) did not exit within %d s of its "
                                     "unmount" % (pids, DAEMON_EXIT_TIMEOUT))
            check_daemon_log(log)
        finally:
            if own_log:
                os.unlink(own_log)


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

    # subTest failures are reported per subtest: count each test method once.
    def test_id(t):
        return getattr(t, "test_case", t).id()
    failed_ids = {test_id(t) for t, _ in res.failures + res.errors}
    failed_ids |= {test_id(t) for t in res.unexpectedSuccesses}
    failed = len(failed_ids)
    skipped = len({test_id(t) for t, _ in res.skipped} - failed_ids)
    passed = max(res.testsRun - failed - skipped, 0)
    print("%s: %d passed, %d failed, %d skipped" % (os.path.basename(sys.argv[0]), passed, failed, skipped))
    sys.exit(1 if failed or res.testsRun == 0 else 0)


# --- Mount helpers (added for the mount suites) ---------------------------

def proc_mounts():
    """Mountpoints listed in /proc/mounts, with the kernel's octal escapes decoded."""
    out = []
    with open("/proc/mounts") as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 2:
                out.append(fields[1].encode().decode("unicode_escape"))
    return out


def is_mounted(path):
    return os.path.realpath(path) in proc_mounts()


def wait_for(pred, timeout=10.0, interval=0.02):
    """Poll pred() until it is true or timeout seconds pass; return its last value."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() >= deadline:
            return v
        time.sleep(interval)


def _pid_alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def daemon_pids(mnt):
    """Live dliofs processes whose command line names the mountpoint MNT."""
    want = {mnt, os.path.realpath(mnt)}
    exe_want = os.path.realpath(DLIOFS)
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
            exe = os.readlink("/proc/%d/exe" % pid)
        except OSError:
            continue
        if exe.endswith(" (deleted)"):
            exe = exe[:-len(" (deleted)")]
        if exe != exe_want and not os.path.basename(exe).startswith("dliofs"):
            continue
        if want.intersection(argv) and _pid_alive(pid):
            pids.append(pid)
    return pids


def pids_naming(text):
    """Live processes (zombies excluded) with TEXT in an argument."""
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % name, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if any(text.encode() in a for a in argv) and _pid_alive(int(name)):
            pids.append(int(name))
    return pids


def stop_midway(test, cmd, marker, sig, env, timeout=60):
    """Start CMD, wait until a process naming MARKER (its job) runs, send it
    SIG, and check that it stopped cleanly: it exits 128 + SIG within 15 s,
    with no process naming MARKER or env's TMPDIR (the job, a dliofs daemon
    of a mount under it) left, no mount under TMPDIR and TMPDIR empty.
    Whatever it left is cleaned up. Returns its stderr."""
    tmpdir = env["TMPDIR"]
    with tempfile.TemporaryFile("w+") as errf:
        p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=errf, text=True)
        exited, took = False, None
        try:
            started = wait_for(lambda: pids_naming(marker) or p.poll() is not None,
                               timeout, 0.05)
            running = started and p.poll() is None
            if running:
                time.sleep(0.3)
                t0 = time.monotonic()
                p.send_signal(sig)
                try:
                    p.wait(timeout=15)
                    exited, took = True, time.monotonic() - t0
                except subprocess.TimeoutExpired:
                    pass
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            # What it should have stopped is gone by the time it exits.
            left = pids_naming(marker) + pids_naming(tmpdir)
            mounts = [m for m in proc_mounts() if m.startswith(tmpdir)]
            files = os.listdir(tmpdir)
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            for m in mounts:
                subprocess.run(["fusermount3", "-u", "-z", m], capture_output=True)
            errf.seek(0)
            err = errf.read()
    test.assertTrue(running, "the job never started: %s" % err[-2000:])
    test.assertTrue(exited, "still running 15 s after signal %d" % sig)
    test.assertEqual(p.returncode, 128 + sig, "exit status after signal %d: %s" % (sig, err[-2000:]))
    test.assertEqual(left, [], "processes left after signal %d: %r" % (sig, left))
    test.assertEqual(mounts, [], "mounts left after signal %d" % sig)
    test.assertEqual(files, [], "temporary files left in %s after signal %d" % (tmpdir, sig))
    return err


def daemon_pid(mnt):
    """The one daemon serving MNT (AssertionError if none or several)."""
    pids = daemon_pids(mnt)
    if len(pids) != 1:
        raise AssertionError("expected one dliofs daemon for %s, found %r" % (mnt, pids))
    return pids[0]


def pid_alive(pid):
    """True while PID runs (a zombie waiting for its parent counts as gone)."""
    return _pid_alive(pid)


def rss_bytes(pid):
    """Resident set size of PID from /proc/PID/status (VmRSS)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS for pid %d" % pid)


def tree(root):
    """(files, dirs) under ROOT: files maps relative path -> st_size, dirs is the
    set of relative directory paths. Top-level names starting with '.' (the
    mount's control directory) are left out: dataset names never start with '.'."""
    files, dirs = {}, set()
    for d, subdirs, names in os.walk(root):
        rel = os.path.relpath(d, root)
        if rel == ".":
            subdirs[:] = [s for s in subdirs if not s.startswith(".")]
            names = [n for n in names if not n.startswith(".")]
        else:
            dirs.add(rel)
        subdirs.sort()
        for n in names:
            p = os.path.join(d, n)
            files[os.path.relpath(p, root)] = os.stat(p).st_size
    return files, dirs


def read_file(path):
    with open(path, "rb") as f:
        return f.read()


def sha256_file(path, chunk=1 << 20):
    import hashlib
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(chunk)
            if not b:
                break
            h.update(b)
    return h.hexdigest()


# Daemon messages that mean a bug whatever else the log says.
DAEMON_LOG_BAD = ("Sanitizer", "runtime error:", "Assertion", "Segmentation fault", "double free")


def check_daemon_log(path):
    """Fail if the daemon's --log file holds a crash or sanitizer report."""
    try:
        with open(path, errors="replace") as f:
            text = f.read()
    except FileNotFoundError:
        return
    bad = [ln for ln in text.splitlines() if any(b in ln for b in DAEMON_LOG_BAD)]
    if bad:
        raise AssertionError("daemon log %s reports:\n%s" % (path, "\n".join(bad[:20])))


class MountedTestCase(unittest.TestCase):
    """Base class: writes CONFIG (YAML text) to a temp dir, runs dlio-gen into
    cls.ref when GEN is true, and mounts the config once for the class at cls.mnt
    (with MOUNT_ARGS). Each test needs FUSE: skipped without it, failed in CI."""
    CONFIG = None
    GEN = True
    MOUNT = True
    MOUNT_ARGS = ()

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="dliofs-test-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, True)
        cls.config = write_config(cls.tmp, cls.CONFIG)
        cls.ref = None
        if cls.GEN:
            cls.ref = gen(cls.config, os.path.join(cls.tmp, "ref"))
        cls.mnt = None
        if cls.MOUNT and fuse_available():
            log = os.path.join(cls.tmp, "daemon.log")
            # Cleanups run last-in first-out: the log is checked after unmount.
            cls.addClassCleanup(check_daemon_log, log)
            cm = mounted(cls.config, tuple(cls.MOUNT_ARGS) + ("--log", log))
            cls.mnt = cm.__enter__()
            cls.addClassCleanup(cm.__exit__, None, None, None)

    def setUp(self):
        require(fuse_available(), "/dev/fuse or fusermount3 not available")
        if self.MOUNT:
            self.assertIsNotNone(self.mnt, "class mount missing")


def run_on_pty(cmd, timeout=120, stdout=subprocess.PIPE):
    """Run cmd with stderr on a pseudo-terminal (a progress line's place):
    (exit status, stdout text or "" when not piped, what the terminal got)."""
    master, slave = pty.openpty()
    try:
        p = subprocess.Popen(cmd, stdout=stdout, stderr=slave)
    finally:
        os.close(slave)
    chunks = []
    while True:
        try:
            b = os.read(master, 65536)
        except OSError as e:  # EIO: the child closed its side
            if e.errno != errno.EIO:
                raise
            break
        if not b:
            break
        chunks.append(b)
    os.close(master)
    out = ""
    if p.stdout is not None:
        out = p.stdout.read().decode()
        p.stdout.close()
    return p.wait(timeout=timeout), out, b"".join(chunks).decode(errors="replace")


def mpirun():
    """Open MPI's mpirun (the MPI dliofs and dlio-drive are built with on
    Debian: MPICH's would start singletons), or None."""
    for cand in (os.environ.get("DLIO_MPIRUN"), "/usr/bin/mpirun", shutil.which("mpirun")):
        if cand and os.access(cand, os.X_OK):
            r = subprocess.run([cand, "--version"], capture_output=True, text=True)
            if "Open MPI" in r.stdout + r.stderr:
                return cand
    return None


def mpirun_cmd(n):
    """mpirun -np n as the cluster tests run it: more ranks than cores, not
    bound to one (the daemons and readers share 2 cores), and as root."""
    cmd = [mpirun(), "-np", str(n), "--oversubscribe", "--bind-to", "none"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    return cmd


class Cluster:
    """n dliofs mounts started by one mpirun as one cluster: the mountpoint
    `pattern` with {rank} (each made here), the config, mpirun's log.
    stop() unmounts every node and checks that the daemons exited cleanly
    and logged no crash or sanitizer report."""

    def __init__(self, config, pattern, n, log, env=None):
        self.mnts = [pattern.replace("{rank}", str(r)) for r in range(n)]
        for m in self.mnts:
            os.makedirs(m, exist_ok=True)
        self.log = log
        self._logf = open(log, "w")
        self.proc = subprocess.Popen(mpirun_cmd(n) + [DLIOFS, "mount", "-f", pattern, config],
                                     stdout=self._logf, stderr=subprocess.STDOUT,
                                     start_new_session=True, env=env)
        up = wait_for(lambda: all(is_mounted(m) for m in self.mnts)
                      or self.proc.poll() is not None, 60, 0.05)
        if not up or self.proc.poll() is not None:
            self.stop(check=False)
            with open(log) as f:
                raise AssertionError("the cluster did not mount: %s" % f.read())

    def stop(self, check=True):
        for m in self.mnts:
            if is_mounted(m):
                subprocess.run([DLIOFS, "umount", m], capture_output=True, timeout=60)
        try:
            rc = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            for m in self.mnts:
                subprocess.run(["fusermount3", "-u", "-z", m], capture_output=True)
            raise AssertionError("the cluster's daemons did not exit after their unmounts")
        finally:
            self._logf.close()
        if not check:
            return rc
        check_daemon_log(self.log)
        if rc != 0:
            with open(self.log) as f:
                raise AssertionError("mpirun (the mounts) exited %d: %s" % (rc, f.read()))
        return rc
