#!/usr/bin/env python3
"""The control plane under misuse (issue 22, items 4, 5 and 7): trace targets
that are not storage, control writes that must stay all-or-nothing however a
writer splits or retries them, and control transactions that name files on
the mount itself while the daemon has one FUSE worker."""
import mmap
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
import unittest

import sys  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/: dltest
import dltest  # noqa: E402

MiB = 1 << 20
DLIOFS = dltest.DLIOFS


def dliofs(*args, check=True, timeout=30):
    r = subprocess.run([DLIOFS] + list(args), capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError("dliofs %s failed (%d): %s" % (" ".join(args), r.returncode, r.stderr))
    return r


def call_within(fn, seconds):
    """fn() in a thread: (True, result or exception) if it ended within
    SECONDS, (False, None) if it is still blocked (it is left to the mount's
    cleanup, which aborts the connection)."""
    out = {}

    def run():
        try:
            out["v"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed back to the test
            out["v"] = e
    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    return (not t.is_alive()), out.get("v")


def aligned(data):
    """DATA in page-aligned memory (a memoryview of an anonymous map): the
    kernel then cuts a write of it into pieces of exactly 1 MiB."""
    m = mmap.mmap(-1, len(data))
    m.write(data)
    return memoryview(m)


def write_ctl(path, text):
    """Write TEXT to a control file and close it: None, or the OSError."""
    try:
        with open(path, "w") as f:
            f.write(text)
    except OSError as e:
        return e
    return None


def read_text(path):
    with open(path) as f:
        return f.read()


def kill_daemons(mnt):
    """Kill the daemons of MNT: the FUSE connection is aborted, so every
    request still waiting on it (a deadlocked daemon's) fails at once. Found
    by their command line only: a stat of a mount whose daemon never serves
    would block (dltest.daemon_pids resolves the path)."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % name, "rb") as f:
                argv = [a.decode(errors="replace") for a in f.read().split(b"\0")]
        except OSError:
            continue
        if len(argv) > 2 and os.path.basename(argv[0]).startswith("dliofs") and \
                argv[1] == "mount" and mnt in argv:
            try:
                os.kill(int(name), signal.SIGKILL)
            except OSError:
                pass


def kill_daemon_if_stuck(test, mnt):
    """A daemon that deadlocked (the old code) would outlive the test and
    keep its mount: kill it and unmount, so the suite goes on."""
    def cleanup():
        kill_daemons(mnt)
        subprocess.run(["fusermount3", "-u", "-z", mnt], capture_output=True)
    test.addCleanup(cleanup)


def answers_within(test, mnt, fn, seconds, what):
    """fn()'s result if it ends within SECONDS; else kill the daemon (so
    nothing else blocks on the mount: a fork closing an inherited control
    file would) and fail."""
    ok, v = call_within(fn, seconds)
    if not ok:
        kill_daemons(mnt)
        test.fail("%s did not answer within %d s" % (what, seconds))
    return v


class TraceTargets(dltest.MountedTestCase):
    """`trace start` writes only a regular file on storage: never a FIFO, a
    device, a file of /proc or /sys, nor one inside the mount; a refusal
    leaves the target untouched and the control plane answering."""
    GEN = False
    CONFIG = """\
seed: 5
datasets:
  - {name: d, format: raw, files: 4, sample_size: 64KiB}
"""

    def trace_ctl(self):
        return os.path.join(self.mnt, ".dliofs", "trace")

    def refused(self, target, why):
        """`dliofs trace start` to TARGET answers within seconds, refused
        with WHY, and stats.json stays readable."""
        r = answers_within(self, self.mnt, lambda: dliofs(
            "trace", "start", self.mnt, target, check=False), 10, "trace start %s" % target)
        self.assertNotIsInstance(r, BaseException, r)
        if r.returncode == 0:
            dliofs("trace", "stop", self.mnt, check=False)
        self.assertNotEqual(r.returncode, 0, "trace start %s accepted" % target)
        self.assertIn(why, r.stderr)
        s = answers_within(self, self.mnt, lambda: read_text(
            os.path.join(self.mnt, ".dliofs", "stats.json")), 5,
            "stats.json after trace start %s" % target)
        self.assertIn('"active": false', s)
        self.assertTrue(read_text(self.trace_ctl()).startswith("off"))

    def test_fifo_is_refused_and_nothing_hangs(self):
        fifo = os.path.join(self.tmp, "t.fifo")
        os.mkfifo(fifo)
        self.refused(fifo, "not a regular file (a FIFO)")
        # With a reader waiting on it, an open would succeed: still refused,
        # and the reader sees no byte.
        fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        try:
            self.refused(fifo, "not a regular file (a FIFO)")
            try:
                got = os.read(fd, 100)
            except BlockingIOError:
                got = b""
            self.assertEqual(got, b"", "the daemon wrote into the FIFO")
        finally:
            os.close(fd)

    def test_char_device_and_symlink_to_it_are_refused(self):
        # /dev/null: an open for writing succeeds, so the old code started a
        # "trace" into it.
        self.refused("/dev/null", "not a regular file (a character device)")
        link = os.path.join(self.tmp, "null.link")
        os.symlink("/dev/null", link)
        self.refused(link, "not a regular file (a character device)")
        self.assertTrue(os.path.islink(link))

    def test_proc_and_sys_files_are_refused(self):
        # Regular files of /proc: a header written there changes the
        # kernel's state (the core_pattern). /proc/self/comm here
        # (the daemon's own name: harmless if a build gets it wrong); the
        # unit test (test_trace.c) has core_pattern.
        self.refused("/proc/self/comm", "a file of /proc")
        pid = dltest.daemon_pid(self.mnt)
        self.assertNotIn("DLIO", read_text("/proc/%d/comm" % pid))
        sysf = "/sys/kernel/mm/transparent_hugepage/enabled"
        if os.path.exists(sysf):
            before = read_text(sysf)
            self.refused(sysf, "a file of /sys")
            self.assertEqual(read_text(sysf), before)

    def test_path_inside_the_mount_is_refused(self):
        self.refused(os.path.join(self.mnt, "x.trace"), "inside the mount itself")
        self.refused(os.path.join(self.mnt, ".dliofs", "stats.json"), "inside the mount itself")
        # Through a link to the mount, too.
        link = os.path.join(self.tmp, "mnt.link")
        os.symlink(self.mnt, link)
        self.refused(os.path.join(link, "d", "y.trace"), "inside the mount itself")

    def test_existing_regular_file_is_replaced_and_traced(self):
        target = os.path.join(self.tmp, "old.trace")
        with open(target, "w") as f:
            f.write("x" * 100000)
        dliofs("trace", "start", self.mnt, target)
        dltest.read_file(os.path.join(self.mnt, "d", "train", "img_1_of_4.raw"))
        dliofs("trace", "stop", self.mnt)
        with open(target, "rb") as f:
            data = f.read()
        self.assertEqual(data[:8], b"DLIOTRC1")
        self.assertEqual(data[-8:], b"DLIOTRC1", "no footer")
        self.assertNotIn(b"xxxxxxxx", data, "the old content was not replaced")


class TraceTargetAtMount(unittest.TestCase):
    """`trace: {file: FIFO}` in a config: `dliofs mount` fails at once,
    saying why, and nothing stays mounted."""

    def setUp(self):
        dltest.require(dltest.fuse_available(), "/dev/fuse or fusermount3 not available")
        self.tmp = tempfile.mkdtemp(prefix="dliofs-ctl-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.mnt = os.path.join(self.tmp, "mnt")
        os.mkdir(self.mnt)
        kill_daemon_if_stuck(self, self.mnt)

    def mount_fails(self, target, why):
        cfg = dltest.write_config(self.tmp, "datasets:\n  - {name: d, format: raw, files: 2, "
                                  "sample_size: 4KiB}\ntrace: {file: %s}\n" % target)
        try:
            r = subprocess.run([DLIOFS, "mount", self.mnt, cfg], capture_output=True, text=True,
                               timeout=20)
        except subprocess.TimeoutExpired:
            self.fail("dliofs mount with trace.file %s did not return within 20 s" % target)
        self.assertNotEqual(r.returncode, 0, "mounted with trace.file %s" % target)
        self.assertIn(why, r.stderr)
        self.assertIn("trace.file", r.stderr)
        self.assertFalse(dltest.is_mounted(self.mnt), "a refused mount left the mount up")
        self.assertTrue(dltest.wait_for(lambda: not dltest.daemon_pids(self.mnt), 10),
                        "a refused mount left its daemon")

    def test_fifo(self):
        fifo = os.path.join(self.tmp, "t.fifo")
        os.mkfifo(fifo)
        self.mount_fails(fifo, "not a regular file (a FIFO)")
        self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode))

    def test_device_and_inside_the_mount(self):
        self.mount_fails("/dev/null", "a character device")
        self.mount_fails(os.path.join(self.mnt, "t.trace"), "inside the mount itself")
        self.assertEqual(os.listdir(self.mnt), [], "a file was made under the mountpoint")

    def test_a_regular_file_still_traces(self):
        target = os.path.join(self.tmp, "ok.trace")
        cfg = dltest.write_config(self.tmp, "datasets:\n  - {name: d, format: raw, files: 2, "
                                  "sample_size: 4KiB}\ntrace: {file: %s}\n" % target)
        with dltest.mounted(cfg, mountpoint=self.mnt) as mnt:
            self.assertTrue(read_text(os.path.join(mnt, ".dliofs", "trace")).startswith("on "))
        with open(target, "rb") as f:
            self.assertEqual(f.read(8), b"DLIOTRC1")


class ControlWrites(dltest.MountedTestCase):
    """A control write is applied whole at fsync or close, or not at all:
    a refusal is never a short count that a retrying writer turns into a
    second transaction, and every later write of that open file is refused."""
    GEN = False
    CONFIG = """\
seed: 7
datasets:
  - {name: d, format: raw, files: 4, sample_size: 64KiB}
"""

    def ctl(self):
        return os.path.join(self.mnt, ".dliofs", "pacer")

    def pacer(self):
        return read_text(self.ctl())

    def test_python_write_over_1mib_with_a_bad_setting(self):
        """Python's write retries what a short count left: the tail (valid
        settings) must not be applied on its own. Page-aligned 16-byte lines,
        so the kernel's 1 MiB pieces end on a line."""
        before = self.pacer()
        data = aligned(b"read.bandwdth=1\n" + b"read.iops=42424\n" * (3 * MiB // 2 // 16 - 1))
        with self.assertRaises(OSError) as cm:
            with open(self.ctl(), "wb") as f:
                f.write(data)
        self.assertEqual(cm.exception.errno, 22)
        self.assertEqual(self.pacer(), before, "part of a refused write was applied")

    def test_write_then_fsync_reports_and_poisons_the_handle(self):
        before = self.pacer()
        fd = os.open(self.ctl(), os.O_RDWR)
        try:
            data = ("read.iops=9\n" * (MiB // 12) + "read.bandwdith=1GB/s\n").encode()
            self.assertEqual(os.write(fd, data), len(data), "a short count")
            with self.assertRaises(OSError) as cm:
                os.fsync(fd)
            self.assertEqual(cm.exception.errno, 22)
            self.assertIn("read.bandwdith", os.pread(fd, 4096, 0).decode())
            # A writer retrying, or going on: refused until the file is closed.
            with self.assertRaises(OSError) as cm:
                os.write(fd, b"read.iops=4243\n")
            self.assertEqual(cm.exception.errno, 22)
            with self.assertRaises(OSError):
                os.fsync(fd)
        finally:
            try:
                os.close(fd)
            except OSError:
                pass
        self.assertEqual(self.pacer(), before)

    def test_shell_echo_of_a_bad_setting_fails(self):
        """A shell ignores close's answer: a bad setting in a write's first
        piece is refused by that write, so `echo` itself says so; a good one
        is applied at close."""
        before = self.pacer()
        for bad in ("read.bandwdth=1", "read.bandwidth=abc", "no equals sign"):
            r = subprocess.run(["bash", "-c", 'echo "$1" > "$2"', "sh", bad, self.ctl()],
                               capture_output=True, text=True, timeout=30)
            self.assertNotEqual(r.returncode, 0, bad)
            self.assertIn("Invalid argument", r.stderr, bad)
            self.assertEqual(self.pacer(), before, bad)
        r = subprocess.run(["bash", "-c", 'echo read.iops=4321 > "$1"', "sh", self.ctl()],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("iops: 4321", self.pacer())
        dliofs("set", self.mnt, "read.iops=unlimited")

    def test_writev_of_601_pieces_whose_last_is_bad(self):
        before = self.pacer()
        pieces = [("read.iops=%d\n" % (500 + i)).encode() for i in range(600)]
        pieces.append(b"read.bandwdith=1GB/s\n")
        fd = os.open(self.ctl(), os.O_WRONLY)
        err = None
        try:
            try:
                n = os.writev(fd, pieces)
                self.assertEqual(n, sum(len(p) for p in pieces), "a short count")
                os.fsync(fd)
            except OSError as e:
                err = e
        finally:
            try:
                os.close(fd)
            except OSError as e:
                err = err or e
        self.assertIsNotNone(err, "the refused writev reported success")
        self.assertEqual(err.errno, 22)
        self.assertEqual(self.pacer(), before, "settings of a refused writev were applied")
        # The same 600 good pieces alone: one transaction, the last one wins.
        fd = os.open(self.ctl(), os.O_WRONLY)
        try:
            os.writev(fd, pieces[:-1])
            os.fsync(fd)
        finally:
            os.close(fd)
        self.assertIn("iops: 1099", self.pacer())
        dliofs("set", self.mnt, "read.iops=unlimited")

    def test_over_64mib_is_refused_and_the_retried_tail_too(self):
        before = self.pacer()
        data = aligned(b"read.iops=11111\n" * ((64 * MiB + MiB) // 16))
        fd = os.open(self.ctl(), os.O_RDWR)
        try:
            try:
                n = os.write(fd, data)
            except OSError as e:
                self.assertEqual(e.errno, 27)
                n = 0
            self.assertLess(n, len(data), "a write over 64 MiB was taken whole")
            # The kernel reports the pieces taken before the refusal as a
            # short count: the retried tail must be refused, not applied.
            with self.assertRaises(OSError) as cm:
                os.write(fd, data[n:])
            self.assertEqual(cm.exception.errno, 27)
            with self.assertRaises(OSError) as cm:
                os.fsync(fd)
            self.assertEqual(cm.exception.errno, 27)
            self.assertIn("more than", os.pread(fd, 4096, 0).decode())
        finally:
            try:
                os.close(fd)
            except OSError:
                pass
        self.assertEqual(self.pacer(), before, "part of a write over 64 MiB was applied")


class OneWorker(unittest.TestCase):
    """With one FUSE worker, a setting naming a file on the mount itself is
    answered (it used to deadlock the daemon: the transaction opened the
    file inside the only worker), and the mount keeps answering."""

    def test_empirical_file_on_the_mount_with_threads_1(self):
        dltest.require(dltest.fuse_available(), "/dev/fuse or fusermount3 not available")
        tmp = tempfile.mkdtemp(prefix="dliofs-ctl-")
        self.addCleanup(shutil.rmtree, tmp, True)
        real = os.path.join(tmp, "real")
        os.mkdir(real)
        with open(os.path.join(real, "lat.txt"), "w") as f:
            f.write("100us\n200us 3\n")
        cfg = dltest.write_config(tmp, "datasets:\n  - {name: d, format: raw, files: 2, "
                                  "sample_size: 4KiB}\nbacking:\n  - {path: %s, at: real}\n" % real)
        mnt = os.path.join(tmp, "mnt")
        os.mkdir(mnt)
        kill_daemon_if_stuck(self, mnt)
        with dltest.mounted(cfg, ("--threads", "1"), mountpoint=mnt):
            for target, accepted in ((os.path.join(mnt, "real", "lat.txt"), True),
                                     (os.path.join(mnt, "d", "train", "img_1_of_2.raw"), False)):
                # Straight to the control file: `dliofs set` checks the
                # table itself first and would not send a bad one.
                r = answers_within(self, mnt, lambda: write_ctl(
                    os.path.join(mnt, ".dliofs", "pacer"),
                    "read.latency=empirical(%s)\n" % target), 10,
                    "a write of read.latency=empirical(%s) (--threads 1)" % target)
                if accepted:
                    self.assertIsNone(r)
                    self.assertIn("empirical(%s)" % target,
                                  read_text(os.path.join(mnt, ".dliofs", "pacer")))
                    dliofs("set", mnt, "read.latency=none")
                    r = answers_within(self, mnt, lambda: dliofs(
                        "set", mnt, "read.latency=empirical(%s)" % target, check=False), 10,
                        "dliofs set read.latency=empirical(...) (--threads 1)")
                    self.assertEqual(r.returncode, 0, r.stderr)
                else:
                    self.assertIsInstance(r, OSError)
                    self.assertEqual(r.errno, 22)
                s = answers_within(self, mnt, lambda: read_text(
                    os.path.join(mnt, ".dliofs", "stats.json")), 5, "stats.json")
                self.assertIn('"classes"', s)
                n = answers_within(self, mnt, lambda: len(dltest.read_file(
                    os.path.join(mnt, "d", "train", "img_1_of_2.raw"))), 5, "a read")
                self.assertEqual(n, 4096)
            dliofs("set", mnt, "read.latency=none")
            # A trace target named through the mount is refused, not a hang.
            r = answers_within(self, mnt, lambda: dliofs(
                "trace", "start", mnt, os.path.join(mnt, "real", "t.trace"), check=False), 10,
                "trace start into the mount (--threads 1)")
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("inside the mount itself", r.stderr)
            self.assertFalse(os.path.exists(os.path.join(real, "t.trace")))


if __name__ == "__main__":
    dltest.main()
