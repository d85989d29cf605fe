"""How long things live on a mount (issue 22): a parked request has an upper
bound, follows a live change of the model, and its client can be killed; a
sink's files outlive the daemon; trace start/stop cycles give their memory
back; no mount on top of a live dliofs mount."""
import hashlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import sys  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/: dltest
import dltest  # noqa: E402

RAW = """\
seed: 3
datasets:
  - {name: raw, format: raw, files: 4, samples_per_file: 1, sample_size: 1MiB}
"""


def set_(mnt, *kv):
    return subprocess.run([dltest.DLIOFS, "set", mnt] + list(kv), capture_output=True,
                          text=True, timeout=60)


def dd(path):
    """dd of one 1 MiB block, its own process (killable by the test)."""
    return subprocess.Popen(["dd", "if=" + path, "of=/dev/null", "bs=1M", "count=1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def proc_state(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return None


class ParkedRequests(dltest.MountedTestCase):
    """read.bandwidth 20kB/s: one 1 MiB read is due in 52 s."""
    GEN = False
    CONFIG = "pacer: {read: {bandwidth: 20kB/s}}\ncache: {policy: none}\n" + RAW

    def path(self, i):
        return os.path.join(self.mnt, "raw", "train", "img_%d_of_4.raw" % i)

    def parked(self, i):
        """A dd whose read is parked (still running half a second in)."""
        p = dd(self.path(i))
        time.sleep(0.5)
        self.assertIsNone(p.poll(), "dd finished at once: not parked")
        return p

    def test_unbounded_settings_refused(self):
        for kv, has in (("read.bandwidth=1B/s", "at least 17477B/s"),
                        ("write.bandwidth=10kB/s", "at least"),
                        ("read.latency=100000s", "above 60s"),
                        ("read.latency=exponential(1min)", "99th percentile"),
                        ("cache.hit_bandwidth=1kB/s", "at least")):
            with self.subTest(kv=kv):
                r = set_(self.mnt, kv)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(kv.split("=")[0], r.stderr)
                self.assertIn(has, r.stderr)
        with open(os.path.join(self.mnt, ".dliofs", "pacer")) as f:
            self.assertIn("bandwidth: 20kB/s", f.read())
        # The same bound in a config: refused at mount, naming the key.
        bad = dltest.write_config(self.tmp, "pacer: {read: {latency: 100000s}}\n" + RAW,
                                  "bad.yaml")
        r = subprocess.run([dltest.DLIOFS, "check", bad], capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("read.latency", r.stderr)
        self.assertIn("above 60s", r.stderr)

    def test_live_set_frees_parked(self):
        p = self.parked(0)
        try:
            t0 = time.monotonic()
            r = set_(self.mnt, "read.bandwidth=unlimited")
            self.assertEqual(r.returncode, 0, r.stderr)
            rc = p.wait(timeout=30)
            took = time.monotonic() - t0
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            set_(self.mnt, "read.bandwidth=20kB/s")
        self.assertEqual(rc, 0)
        self.assertLess(took, 1.0, "dd took %.2f s after the set to unlimited" % took)

    def test_live_set_faster_retimes(self):
        # 20kB/s -> 10MB/s: due in about 0.1 s instead of 52 s.
        p = self.parked(1)
        try:
            t0 = time.monotonic()
            r = set_(self.mnt, "read.bandwidth=10MB/s")
            self.assertEqual(r.returncode, 0, r.stderr)
            rc = p.wait(timeout=30)
            took = time.monotonic() - t0
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            set_(self.mnt, "read.bandwidth=20kB/s")
        self.assertEqual(rc, 0)
        self.assertLess(took, 1.0, "dd took %.2f s after the set to 10MB/s" % took)

    def test_killed_client_goes(self):
        p = self.parked(2)
        p.send_signal(signal.SIGKILL)
        try:
            p.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            state = proc_state(p.pid)
            self.fail("dd still there 1 s after SIGKILL (state %s)" % state)
        self.assertEqual(p.returncode, -signal.SIGKILL)
        # The daemon is fine and answers at once.
        with open(os.path.join(self.mnt, ".dliofs", "stats.json")) as f:
            self.assertIn("read", f.read())


class NoMountInside(dltest.MountedTestCase):
    """A dliofs mount on a directory of a live dliofs mount is refused."""
    GEN = False
    CONFIG = RAW

    def test_refused(self):
        inner = os.path.join(self.mnt, "raw", "train")
        self.assertTrue(os.path.isdir(inner))
        r = subprocess.run([dltest.DLIOFS, "mount", inner, self.config], capture_output=True,
                           text=True, timeout=60)
        if r.returncode == 0:
            subprocess.run(["fusermount3", "-u", "-z", inner], capture_output=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("inside the dliofs mount %s" % self.mnt, r.stderr)
        self.assertFalse(any(m.startswith(self.mnt + "/") for m in dltest.proc_mounts()))


class KilledClientUnmounts(unittest.TestCase):
    """A parked client killed, then the mount goes: umount succeeds (no
    EBUSY) and the daemon exits (dltest.mounted checks both)."""

    def test_kill_then_umount(self):
        tmp = tempfile.mkdtemp(prefix="dliofs-test-")
        self.addCleanup(shutil.rmtree, tmp, True)
        cfg = dltest.write_config(
            tmp, "pacer: {read: {bandwidth: 20kB/s}}\ncache: {policy: none}\n" + RAW)
        with dltest.mounted(cfg) as mnt:
            p = dd(os.path.join(mnt, "raw", "train", "img_3_of_4.raw"))
            time.sleep(0.5)
            self.assertIsNone(p.poll(), "dd finished at once: not parked")
            p.kill()
            try:
                p.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                self.fail("dd still there 1 s after SIGKILL (state %s)" % proc_state(p.pid))
            t0 = time.monotonic()
        self.assertLess(time.monotonic() - t0, 30)


def sha(path, lo=0, hi=None):
    with open(path, "rb") as f:
        f.seek(lo)
        return hashlib.sha256(f.read() if hi is None else f.read(hi - lo)).hexdigest()


class SinkJournal(unittest.TestCase):
    """A sink with `journal:` keeps its table across daemons: fsynced, closed,
    renamed and removed files as they were, after kill -9 and after a clean
    unmount; the same bytes read back (but for the headers a sink keeps in
    memory, fs/sink_keep.c, which a remount forgets: compared past the
    first 4 KiB, up to the second write)."""

    def setUp(self):
        dltest.require(dltest.fuse_available(), "/dev/fuse or fusermount3 not available")
        self.tmp = tempfile.mkdtemp(prefix="dliofs-test-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.mnt = os.path.join(self.tmp, "mnt")
        os.mkdir(self.mnt)
        self.journal = os.path.join(self.tmp, "state", "ckpt.journal")
        os.mkdir(os.path.dirname(self.journal))
        self.cfg = dltest.write_config(self.tmp, RAW + "backing:\n  - {at: ckpt, sink: true, "
                                       "journal: %s}\n" % self.journal)
        self.log = os.path.join(self.tmp, "daemon.log")

    def mount(self):
        r = subprocess.run([dltest.DLIOFS, "mount", self.mnt, self.cfg, "--log", self.log],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.addCleanup(subprocess.run, ["fusermount3", "-u", "-z", self.mnt],
                        capture_output=True)
        return dltest.daemon_pid(self.mnt)

    def write(self, rel, size, sync):
        p = os.path.join(self.mnt, "ckpt", rel)
        with open(p, "wb") as f:
            for _ in range(size >> 20):
                f.write(b"\1" * (1 << 20))
            f.write(b"\2" * (size & ((1 << 20) - 1)))
            if sync:
                f.flush()
                os.fsync(f.fileno())
        return p

    def test_kill9_then_remount(self):
        pid = self.mount()
        ck = os.path.join(self.mnt, "ckpt")
        os.makedirs(os.path.join(ck, "step 1", "model"))
        a = self.write("step 1/model/shard 0.pt", 3 * (1 << 20) + 5, True)
        self.write("step 1/model/tmp.pt", 12345, True)
        os.rename(os.path.join(ck, "step 1/model/tmp.pt"), os.path.join(ck, "step 1/model/b.pt"))
        self.write("step 1/closed.pt", 777, False)
        self.write("step 1/gone.pt", 10, True)
        os.unlink(os.path.join(ck, "step 1/gone.pt"))
        fd = os.open(os.path.join(ck, "step 1"), os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
        want = {"step 1/model/shard 0.pt": 3 * (1 << 20) + 5, "step 1/model/b.pt": 12345,
                "step 1/closed.pt": 777}
        before = sha(a, 4096, 1 << 20)
        os.kill(pid, signal.SIGKILL)
        self.assertTrue(dltest.wait_for(lambda: not dltest.pid_alive(pid), 10))
        subprocess.run(["fusermount3", "-u", "-z", self.mnt], capture_output=True)
        for round_ in ("after kill -9", "after a clean unmount"):
            with self.subTest(round_=round_):
                self.mount()
                got = {os.path.relpath(os.path.join(d, f), ck): os.stat(os.path.join(d, f)).st_size
                       for d, _, fs in os.walk(ck) for f in fs}
                self.assertEqual(got, want)
                self.assertEqual(sha(a, 4096, 1 << 20), before, "the same bytes read back")
                r = subprocess.run([dltest.DLIOFS, "umount", self.mnt], capture_output=True,
                                   text=True, timeout=60)
                self.assertEqual(r.returncode, 0, r.stderr)
        # Bounded: rewritten as one line an entry at each mount (2
        # directories, 3 files).
        with open(self.journal) as f:
            text = f.read()
        self.assertEqual(len(text.splitlines()), 5, text)
        dltest.check_daemon_log(self.log)

    def test_journal_inside_the_mount_refused(self):
        cfg = dltest.write_config(self.tmp, RAW + "backing:\n  - {at: ckpt, sink: true, "
                                  "journal: %s/ckpt/j}\n" % self.mnt, "in.yaml")
        r = subprocess.run([dltest.DLIOFS, "mount", self.mnt, cfg, "--log", self.log],
                           capture_output=True, text=True, timeout=60)
        if r.returncode == 0:
            subprocess.run(["fusermount3", "-u", "-z", self.mnt], capture_output=True)
        self.assertNotEqual(r.returncode, 0)


class TraceCycles(dltest.MountedTestCase):
    """50 trace start/stop cycles with reads in between: the daemon's
    resident memory stays within 16 MiB of where it was after the first
    (each start maps 9 MiB of rings and buffer; a stop gives them back)."""
    GEN = False
    CONFIG = RAW

    def cycle(self, trace):
        ctl = os.path.join(self.mnt, ".dliofs", "trace")
        with open(ctl, "w") as f:
            f.write("start %s\n" % trace)
        with open(os.path.join(self.mnt, "raw", "train", "img_0_of_4.raw"), "rb") as f:
            f.read()
        with open(ctl, "w") as f:
            f.write("stop\n")

    def test_rss_bounded(self):
        pid = dltest.daemon_pid(self.mnt)
        trace = os.path.join(self.tmp, "t.trace")
        self.cycle(trace)
        start = dltest.rss_bytes(pid)
        for _ in range(50):
            self.cycle(trace)
        grown = dltest.rss_bytes(pid) - start
        self.assertLess(grown, 16 << 20, "VmRSS grew %.1f MiB over 50 trace cycles (from %.1f MiB)"
                        % (grown / 2**20, start / 2**20))


if __name__ == "__main__":
    dltest.main()
