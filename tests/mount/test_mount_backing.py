"""Backing store through the mount: real directories passed through under
the mount (read-only and writable), path safety (nothing outside a backing
directory is reachable, escaping symlinks refused), shaping of backing
traffic by the pacer, sinks (writes counted and discarded), durability when
the daemon is killed or stopped mid-write, and config errors."""
import errno
import hashlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/: dltest
import dltest  # noqa: E402


def stats(mnt):
    with open(os.path.join(mnt, ".dliofs", "stats.json")) as f:
        return json.load(f)


def dset(mnt, *kv):
    r = subprocess.run([dltest.DLIOFS, "set", mnt] + list(kv), capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError("dliofs set %s: %s" % (" ".join(kv), r.stderr))


def listing(root):
    """{relative path: ('f', bytes) | ('d', None) | ('l', None)} under root."""
    out = {}
    for d, dirs, files in os.walk(root):
        dirs.sort()
        for name in dirs + files:
            p = os.path.join(d, name)
            rel = os.path.relpath(p, root)
            if os.path.islink(p):
                out[rel] = ("l", None)
            elif os.path.isdir(p):
                out[rel] = ("d", None)
            else:
                out[rel] = ("f", dltest.read_file(p))
    return out


def fd_count(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


class Backing(dltest.MountedTestCase):
    """One mount: a synthetic dataset, a read-only and a writable real
    directory, a sink. Directories are made before the mount."""
    GEN = False

    @classmethod
    def setUpClass(cls):
        cls.base = tempfile.mkdtemp(prefix="dliofs-back-")
        cls.addClassCleanup(shutil.rmtree, cls.base, True)
        b = cls.base
        cls.ro = os.path.join(b, "ro")
        cls.rw = os.path.join(b, "rw")
        cls.outside = os.path.join(b, "outside")
        for d in (cls.ro, cls.rw, cls.outside, os.path.join(cls.ro, "sub", "deeper")):
            os.makedirs(d, exist_ok=True)
        with open(os.path.join(cls.outside, "secret"), "w") as f:
            f.write("outside\n")
        with open(os.path.join(cls.ro, "hello.txt"), "w") as f:
            f.write("hello\n")
        with open(os.path.join(cls.ro, "sub", "blob.bin"), "wb") as f:
            f.write(os.urandom(3 << 20))
        with open(os.path.join(cls.ro, "sub", "deeper", "x"), "wb") as f:
            f.write(b"x" * 5000)
        # Symlinks: inside (fine), absolute, climbing out, pointing at /etc.
        os.symlink("sub/blob.bin", os.path.join(cls.ro, "inside_link"))
        os.symlink("../hello.txt", os.path.join(cls.ro, "sub", "up_link"))
        os.symlink("/etc/passwd", os.path.join(cls.ro, "abs_link"))
        os.symlink("/etc", os.path.join(cls.ro, "etc_dir"))
        os.symlink("../../outside/secret", os.path.join(cls.ro, "sub", "esc_link"))
        os.symlink("../outside", os.path.join(cls.rw, "out_dir"))
        os.symlink(os.path.join(cls.outside, "secret"), os.path.join(cls.rw, "out_file"))
        # Many entries: readdir must stream across calls with stable offsets.
        cls.many = os.path.join(cls.ro, "many")
        os.makedirs(cls.many)
        for i in range(1500):
            open(os.path.join(cls.many, "entry_with_a_longish_name_%05d" % i), "w").close()
        for i in range(12):
            open(os.path.join(cls.ro, "meta_%02d" % i), "w").close()
        cls.CONFIG = (
            "seed: 3\n"
            "datasets:\n"
            "  - {name: syn, format: raw, files: 4, sample_size: 64KiB}\n"
            "backing:\n"
            "  - {path: %s, at: ro}\n"
            "  - {path: %s, at: rw, writable: true}\n"
            "  - {at: ckpt, sink: true}\n"
            "  - {at: tiny, sink: true, max_entries: 5}\n" % (cls.ro, cls.rw))
        super().setUpClass()
        cls.log = os.path.join(cls.tmp, "daemon.log")  # where the base class mounts with --log
        cls.pid = dltest.daemon_pid(cls.mnt) if cls.mnt else None

    def m(self, *p):
        return os.path.join(self.mnt, *p)

    def log_text(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def assertErrno(self, code, fn, *args):
        with self.assertRaises(OSError) as cm:
            fn(*args)
        self.assertEqual(cm.exception.errno, code, "%s%r: %s" % (fn.__name__, args, cm.exception))

    # ---- read-only passthrough ----

    def test_root_listing(self):
        self.assertEqual(os.listdir(self.mnt), ["syn", "ro", "rw", "ckpt", "tiny"])
        self.assertEqual(sorted(os.listdir(self.m("syn", "train"))),
                         ["img_%d_of_4.raw" % i for i in range(4)])
        for name in ("ro", "rw", "ckpt"):
            self.assertTrue(os.path.isdir(self.m(name)))
        with open(self.m(".dliofs", "config.yaml")) as f:
            dump = f.read()
        self.assertIn('- {at: "ro", path: "%s", writable: false}' % self.ro, dump)
        self.assertIn('- {at: "rw", path: "%s", writable: true}' % self.rw, dump)
        self.assertIn('- {at: "tiny", sink: true, max_entries: 5}', dump)

    def test_readonly_bytes_and_listing(self):
        real = {k: v for k, v in listing(self.ro).items()
                if not k.startswith("many/") and v[0] != "l"}
        seen = {}
        for rel in real:
            p = self.m("ro", rel)
            seen[rel] = ("d", None) if os.path.isdir(p) else ("f", dltest.read_file(p))
        self.assertEqual(seen, real)
        self.assertEqual(sorted(os.listdir(self.m("ro"))), sorted(os.listdir(self.ro)))
        st, rst = os.stat(self.m("ro", "sub", "blob.bin")), os.stat(os.path.join(self.ro, "sub", "blob.bin"))
        self.assertEqual((st.st_size, st.st_mode, int(st.st_mtime)),
                         (rst.st_size, rst.st_mode, int(rst.st_mtime)))
        # Reads at offsets, through the pacer's read class.
        before = stats(self.mnt)["backing"]["ro"]["read_bytes"]
        with open(self.m("ro", "sub", "blob.bin"), "rb", buffering=0) as f:
            f.seek(1000001)
            chunk = f.read(77777)
        with open(os.path.join(self.ro, "sub", "blob.bin"), "rb") as f:
            f.seek(1000001)
            self.assertEqual(chunk, f.read(77777))
        self.assertGreater(stats(self.mnt)["backing"]["ro"]["read_bytes"], before)

    def test_readdir_streams(self):
        names = os.listdir(self.m("ro", "many"))
        self.assertEqual(len(names), 1500)
        self.assertEqual(sorted(names), sorted(os.listdir(self.many)))
        # Offsets are stable: a listing resumed from telldir gives the rest.
        with os.scandir(self.m("ro", "many")) as it:
            first = [next(it).name for _ in range(700)]
            rest = [e.name for e in it]
        self.assertEqual(len(first) + len(rest), 1500)
        self.assertEqual(set(first) | set(rest), set(names))

    def test_readonly_refuses_writes(self):
        ro = self.m("ro")
        mode = os.stat(os.path.join(self.ro, "hello.txt")).st_mode
        self.assertErrno(errno.EROFS, open, os.path.join(ro, "hello.txt"), "r+")
        self.assertErrno(errno.EROFS, open, os.path.join(ro, "hello.txt"), "w")
        self.assertErrno(errno.EROFS, open, os.path.join(ro, "new.txt"), "w")
        self.assertErrno(errno.EROFS, os.mkdir, os.path.join(ro, "newdir"))
        self.assertErrno(errno.EROFS, os.unlink, os.path.join(ro, "hello.txt"))
        self.assertErrno(errno.EROFS, os.rmdir, os.path.join(ro, "sub", "deeper"))
        self.assertErrno(errno.EROFS, os.rename, os.path.join(ro, "hello.txt"),
                         os.path.join(ro, "moved.txt"))
        self.assertErrno(errno.EROFS, os.chmod, os.path.join(ro, "hello.txt"), 0o600)
        self.assertErrno(errno.EROFS, os.truncate, os.path.join(ro, "hello.txt"), 0)
        self.assertErrno(errno.EROFS, os.utime, os.path.join(ro, "hello.txt"), (1, 1))
        self.assertErrno(errno.EROFS, os.symlink, "hello.txt", os.path.join(ro, "l"))
        self.assertEqual(dltest.read_file(os.path.join(self.ro, "hello.txt")), b"hello\n")
        self.assertFalse(os.path.exists(os.path.join(self.ro, "new.txt")))
        self.assertEqual(os.stat(os.path.join(self.ro, "hello.txt")).st_mode, mode)

    # ---- writable passthrough ----

    def test_writable_ops_reach_the_real_directory(self):
        rw, real = self.m("rw"), self.rw
        data = os.urandom(3 * (1 << 20) + 12345)
        with open(os.path.join(rw, "a.bin"), "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        self.assertEqual(dltest.read_file(os.path.join(real, "a.bin")), data)
        self.assertEqual(dltest.read_file(os.path.join(rw, "a.bin")), data)
        # Overwrite in the middle, append, truncate.
        with open(os.path.join(rw, "a.bin"), "r+b") as f:
            f.seek(100)
            f.write(b"MIDDLE")
        with open(os.path.join(rw, "a.bin"), "ab") as f:
            f.write(b"TAIL")
        want = data[:100] + b"MIDDLE" + data[106:] + b"TAIL"
        self.assertEqual(dltest.read_file(os.path.join(real, "a.bin")), want)
        os.truncate(os.path.join(rw, "a.bin"), 1000)
        self.assertEqual(os.path.getsize(os.path.join(real, "a.bin")), 1000)
        self.assertEqual(os.path.getsize(os.path.join(rw, "a.bin")), 1000)
        with open(os.path.join(rw, "a.bin"), "r+b") as f:
            f.truncate(10)
        self.assertEqual(dltest.read_file(os.path.join(real, "a.bin")), want[:10])
        # O_CREAT|O_EXCL is honoured.
        self.assertErrno(errno.EEXIST, os.open, os.path.join(rw, "a.bin"),
                         os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        fd = os.open(os.path.join(rw, "excl.bin"), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        os.close(fd)
        self.assertEqual(os.stat(os.path.join(real, "excl.bin")).st_mode & 0o777, 0o600)
        # Directories, rename, unlink, rmdir, chmod, utime.
        os.mkdir(os.path.join(rw, "d1"))
        os.makedirs(os.path.join(rw, "d1", "d2"))
        os.rename(os.path.join(rw, "a.bin"), os.path.join(rw, "d1", "d2", "b.bin"))
        self.assertFalse(os.path.exists(os.path.join(real, "a.bin")))
        self.assertEqual(dltest.read_file(os.path.join(real, "d1", "d2", "b.bin")), want[:10])
        os.chmod(os.path.join(rw, "d1", "d2", "b.bin"), 0o640)
        self.assertEqual(os.stat(os.path.join(real, "d1", "d2", "b.bin")).st_mode & 0o777, 0o640)
        os.utime(os.path.join(rw, "d1", "d2", "b.bin"), (1000000, 2000000))
        self.assertEqual(int(os.stat(os.path.join(real, "d1", "d2", "b.bin")).st_mtime), 2000000)
        self.assertErrno(errno.ENOTEMPTY, os.rmdir, os.path.join(rw, "d1"))
        os.unlink(os.path.join(rw, "d1", "d2", "b.bin"))
        os.rmdir(os.path.join(rw, "d1", "d2"))
        os.rmdir(os.path.join(rw, "d1"))
        os.unlink(os.path.join(rw, "excl.bin"))
        self.assertEqual(sorted(os.listdir(real)), ["out_dir", "out_file"])
        self.assertEqual(sorted(os.listdir(rw)), ["out_dir", "out_file"])
        # Inside symlinks can be made and are real symlinks.
        os.mkdir(os.path.join(rw, "t"))
        with open(os.path.join(rw, "t", "target"), "w") as f:
            f.write("T")
        os.symlink("t/../t/target", os.path.join(rw, "good_link"))
        self.assertEqual(os.readlink(os.path.join(real, "good_link")), "t/../t/target")
        self.assertEqual(dltest.read_file(os.path.join(rw, "good_link")), b"T")
        os.unlink(os.path.join(rw, "good_link"))
        shutil.rmtree(os.path.join(rw, "t"))
        self.assertFalse(os.path.exists(os.path.join(real, "t")))

    def test_rename_stays_inside_one_backing_dir(self):
        with open(self.m("rw", "x.txt"), "w") as f:
            f.write("x")
        try:
            self.assertErrno(errno.EXDEV, os.rename, self.m("rw", "x.txt"), self.m("ckpt", "x.txt"))
            self.assertErrno(errno.EXDEV, os.rename, self.m("rw", "x.txt"), self.m("ro", "x.txt"))
            self.assertErrno(errno.EXDEV, os.rename, self.m("ro", "hello.txt"), self.m("rw", "h"))
            self.assertErrno(errno.EXDEV, os.link, self.m("rw", "x.txt"), self.m("ckpt", "x"))
            os.link(self.m("rw", "x.txt"), self.m("rw", "hard.txt"))
            self.assertEqual(os.stat(os.path.join(self.rw, "x.txt")).st_nlink, 2)
            os.unlink(self.m("rw", "hard.txt"))
        finally:
            os.unlink(self.m("rw", "x.txt"))

    # ---- path safety ----

    def test_dotdot_stays_in_the_mount(self):
        # ".." of a backing directory is the mount root, never the real parent.
        self.assertEqual(os.listdir(self.m("ro", "..")), os.listdir(self.mnt))
        self.assertEqual(os.stat(self.m("ro", "..")).st_ino, 1)
        self.assertEqual(os.stat(self.m("ro", "sub", "..", "..")).st_ino, 1)
        self.assertNotIn("outside", os.listdir(self.m("rw", "..")))
        self.assertFalse(os.path.exists(self.m("ro", "..", "outside")))
        self.assertFalse(os.path.exists(self.m("ro", "sub", "..", "..", "rw", "..", "outside", "secret")))

    def test_escaping_symlinks_are_refused(self):
        ro, rw = self.m("ro"), self.m("rw")
        # Inside: followed by the kernel, within the backing directory.
        self.assertEqual(os.readlink(os.path.join(ro, "inside_link")), "sub/blob.bin")
        self.assertEqual(dltest.read_file(os.path.join(ro, "inside_link")),
                         dltest.read_file(os.path.join(self.ro, "sub", "blob.bin")))
        self.assertEqual(dltest.read_file(os.path.join(ro, "sub", "up_link")), b"hello\n")
        # Absolute, to /etc, climbing out: unreadable, not followed.
        for rel in ("abs_link", "etc_dir", os.path.join("sub", "esc_link")):
            p = os.path.join(ro, rel)
            with self.subTest(link=rel):
                self.assertTrue(os.path.islink(p))  # lstat works
                self.assertErrno(errno.EACCES, os.readlink, p)
                self.assertErrno(errno.EACCES, os.stat, p)
                self.assertErrno(errno.EACCES, open, p, "rb")
        self.assertErrno(errno.EACCES, os.listdir, os.path.join(ro, "etc_dir"))
        self.assertErrno(errno.EACCES, open, os.path.join(rw, "out_dir", "planted"), "w")
        self.assertErrno(errno.EACCES, open, os.path.join(rw, "out_file"), "w")
        self.assertEqual(sorted(os.listdir(self.outside)), ["secret"])
        self.assertEqual(dltest.read_file(os.path.join(self.outside, "secret")), b"outside\n")
        log = self.log_text()
        self.assertIn("ro/abs_link: symlink to '/etc/passwd' leads out", log)
        self.assertIn("ro/sub/esc_link: symlink to '../../outside/secret' leads out", log)
        # Creating escaping symlinks is refused; nothing appears in the real dir.
        for target in ("/etc/passwd", "../outside/secret", "a/../../x", "..", "/"):
            with self.subTest(target=target):
                self.assertErrno(errno.EACCES, os.symlink, target, os.path.join(rw, "bad"))
                self.assertFalse(os.path.lexists(os.path.join(self.rw, "bad")))
        os.mkdir(os.path.join(rw, "lvl"))
        try:
            os.symlink("../out_file", os.path.join(rw, "lvl", "ok"))  # stays inside
            self.assertEqual(os.readlink(os.path.join(self.rw, "lvl", "ok")), "../out_file")
            self.assertErrno(errno.EACCES, os.symlink, "../../x", os.path.join(rw, "lvl", "bad"))
        finally:
            shutil.rmtree(os.path.join(self.rw, "lvl"))

    def test_forget_releases_handles(self):
        dltest.require(os.geteuid() == 0, "needs root to drop the kernel's inode cache")
        base = fd_count(self.pid)
        for name in os.listdir(self.m("ro", "many")):
            os.stat(self.m("ro", "many", name))
        grown = fd_count(self.pid)
        self.assertGreaterEqual(grown - base, 1400)

        def dropped():
            with open("/proc/sys/vm/drop_caches", "w") as f:
                f.write("2\n")
            return fd_count(self.pid) < base + 100
        self.assertTrue(dltest.wait_for(dropped, timeout=15, interval=0.5),
                        "handles not released after forget: %d -> %d -> %d" %
                        (base, grown, fd_count(self.pid)))
        # And the names still resolve afterwards.
        self.assertEqual(os.path.getsize(self.m("ro", "many", "entry_with_a_longish_name_00007")), 0)

    # ---- shaping ----

    def test_write_bandwidth_applies(self):
        dset(self.mnt, "write.bandwidth=20MB/s")
        try:
            buf = os.urandom(1 << 20)
            n = 40
            t0 = time.monotonic()
            with open(self.m("rw", "shaped.bin"), "wb", buffering=0) as f:
                for _ in range(n):
                    f.write(buf)
            rate = n * len(buf) / (time.monotonic() - t0)
        finally:
            dset(self.mnt, "write.bandwidth=unlimited")
        self.assertLess(abs(rate / 20e6 - 1), 0.10, "observed %.1f MB/s for 20MB/s" % (rate / 1e6))
        self.assertEqual(os.path.getsize(os.path.join(self.rw, "shaped.bin")), n << 20)
        os.unlink(self.m("rw", "shaped.bin"))

    def test_meta_latency_applies_to_lookups(self):
        before = stats(self.mnt)["classes"]["meta"]["ops"]
        dset(self.mnt, "meta.latency=20ms")
        try:
            times = []
            for i in range(6):  # names never looked up before: each one a lookup
                t0 = time.monotonic()
                os.stat(self.m("ro", "meta_%02d" % i))
                times.append(time.monotonic() - t0)
        finally:
            dset(self.mnt, "meta.latency=none")
        self.assertGreater(min(times), 0.018, times)
        self.assertGreaterEqual(stats(self.mnt)["classes"]["meta"]["ops"] - before, 6)
        fast = []
        for i in range(6, 12):
            t0 = time.monotonic()
            os.stat(self.m("ro", "meta_%02d" % i))
            fast.append(time.monotonic() - t0)
        self.assertLess(min(fast), 0.010, fast)

    # ---- sink ----

    def test_sink_discards_and_counts(self):
        s0 = stats(self.mnt)
        vfs0 = os.statvfs(self.base)
        size = 200 << 20
        buf = b"\xab" * (1 << 20)
        os.makedirs(self.m("ckpt", "step_1"))
        with open(self.m("ckpt", "step_1", "model.pt"), "wb") as f:
            for _ in range(size >> 20):
                f.write(buf)
            f.flush()
            os.fsync(f.fileno())
        vfs1 = os.statvfs(self.base)
        s1 = stats(self.mnt)
        self.assertEqual(os.path.getsize(self.m("ckpt", "step_1", "model.pt")), size)
        self.assertEqual(os.stat(self.m("ckpt", "step_1", "model.pt")).st_blocks, 0)
        self.assertEqual(s1["backing"]["ckpt"]["write_bytes"] - s0["backing"]["ckpt"]["write_bytes"], size)
        self.assertEqual(s1["backing"]["ckpt"]["discarded_bytes"] - s0["backing"]["ckpt"]["discarded_bytes"], size)
        self.assertGreaterEqual(s1["classes"]["write"]["bytes"] - s0["classes"]["write"]["bytes"], size)
        # No disk was used (other processes may write a little meanwhile).
        used = (vfs0.f_bavail - vfs1.f_bavail) * vfs0.f_frsize
        self.assertLess(used, 100 << 20, "free space dropped by %d bytes" % used)
        # Read back: the size written, deterministic bytes (not the data,
        # which was not kept), counted as reads of the sink.
        path = self.m("ckpt", "step_1", "model.pt")
        h = hashlib.sha256()
        n = 0
        with open(path, "rb") as f:
            while True:
                b = f.read(4 << 20)
                if not b:
                    break
                n += len(b)
                h.update(b)
            f.seek(size - 100)
            tail = f.read(1000)
            f.seek(12345)
            mid = f.read(777)
        self.assertEqual(n, size)
        self.assertEqual(len(tail), 100)
        self.assertNotEqual(mid, buf[:777])
        self.assertGreater(len(set(mid)), 200, "not generator bytes")
        with open(path, "rb") as f:   # the same bytes, whole or in pieces
            self.assertEqual(hashlib.sha256(f.read()).hexdigest(), h.hexdigest())
            f.seek(12345)
            self.assertEqual(f.read(777), mid)
        s2 = stats(self.mnt)
        self.assertGreaterEqual(s2["backing"]["ckpt"]["read_back_bytes"]
                                - s1["backing"]["ckpt"]["read_back_bytes"], 2 * size)
        self.assertGreaterEqual(s2["classes"]["read"]["bytes"] - s1["classes"]["read"]["bytes"],
                                2 * size)
        # dliofs stat's table has a row per backing directory, the sink's
        # discarded and read-back bytes on it.
        r = subprocess.run([dltest.DLIOFS, "stat", self.mnt], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        row = [ln for ln in r.stdout.splitlines() if ln.startswith("ckpt ")]
        self.assertEqual(len(row), 1, r.stdout)
        self.assertRegex(row[0], r"^ckpt +sink .* MB discarded, [0-9.]+ MB read back$")
        self.assertTrue(any(ln.startswith("ro ") and " read-only " in ln
                            for ln in r.stdout.splitlines()), r.stdout)
        # Another file reads other bytes.
        other = self.m("ckpt", "step_1", "optim.pt")
        with open(other, "wb"):
            pass
        os.truncate(other, 1 << 20)
        with open(path, "rb") as f, open(other, "rb") as g:
            self.assertNotEqual(f.read(1 << 20), g.read())

    def test_sink_checkpoint_write_drop_read_back(self):
        """A checkpoint's two halves through a sink: written at the write
        model's speed, the caches dropped, read back at the read model's
        speed (the bytes are the generator's, the size the one written)."""
        n, mib = 30, 1 << 20
        path = self.m("ckpt", "ck_rb", "model.pt")
        os.makedirs(os.path.dirname(path))
        dset(self.mnt, "write.bandwidth=40MB/s", "read.bandwidth=20MB/s")
        try:
            t0 = time.monotonic()
            with open(path, "wb", buffering=0) as f:
                for _ in range(n):
                    f.write(b"\0" * mib)
                os.fsync(f.fileno())
            wrate = n * mib / (time.monotonic() - t0)
            r = subprocess.run([dltest.DLIOFS, "cache", "drop", self.mnt], capture_output=True,
                               text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            t0 = time.monotonic()
            got = 0
            with open(path, "rb", buffering=0) as f:
                while True:
                    b = f.read(mib)
                    if not b:
                        break
                    got += len(b)
            rrate = got / (time.monotonic() - t0)
        finally:
            dset(self.mnt, "write.bandwidth=unlimited", "read.bandwidth=unlimited")
        self.assertEqual(got, n * mib)
        self.assertLess(abs(wrate / 40e6 - 1), 0.15, "write %.1f MB/s for 40MB/s" % (wrate / 1e6))
        self.assertLess(abs(rrate / 20e6 - 1), 0.15, "read %.1f MB/s for 20MB/s" % (rrate / 1e6))
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)

    def test_sink_namespace(self):
        c = self.m("ckpt")
        os.mkdir(os.path.join(c, "a"))
        with open(os.path.join(c, "a", "f1"), "wb") as f:
            f.write(b"12345")
        self.assertErrno(errno.EEXIST, os.open, os.path.join(c, "a", "f1"),
                         os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        self.assertErrno(errno.EEXIST, os.mkdir, os.path.join(c, "a"))
        os.truncate(os.path.join(c, "a", "f1"), 3)
        self.assertEqual(os.path.getsize(os.path.join(c, "a", "f1")), 3)
        os.truncate(os.path.join(c, "a", "f1"), 1 << 40)  # a 1 TB file costs nothing
        self.assertEqual(os.path.getsize(os.path.join(c, "a", "f1")), 1 << 40)
        os.rename(os.path.join(c, "a", "f1"), os.path.join(c, "a", "f2"))
        self.assertEqual(os.listdir(os.path.join(c, "a")), ["f2"])
        os.chmod(os.path.join(c, "a", "f2"), 0o600)
        self.assertEqual(os.stat(os.path.join(c, "a", "f2")).st_mode & 0o777, 0o600)
        os.mkdir(os.path.join(c, "b"))
        os.rename(os.path.join(c, "a", "f2"), os.path.join(c, "b", "f3"))
        self.assertErrno(errno.ENOTEMPTY, os.rmdir, os.path.join(c, "b"))
        self.assertErrno(errno.EISDIR, os.unlink, os.path.join(c, "b"))
        names = ["n%04d" % i for i in range(600)]
        for n in names:
            open(os.path.join(c, "b", n), "w").close()
        self.assertEqual(sorted(os.listdir(os.path.join(c, "b"))), sorted(names + ["f3"]))
        shutil.rmtree(os.path.join(c, "b"))
        os.rmdir(os.path.join(c, "a"))
        self.assertFalse(os.path.exists(os.path.join(c, "a")))
        self.assertNotIn("b", os.listdir(c))
        self.assertErrno(errno.EPERM, os.symlink, "x", os.path.join(c, "l"))
        self.assertGreater(os.statvfs(c).f_bavail * os.statvfs(c).f_frsize, 1 << 40)

    def test_sink_entries_are_bounded(self):
        t = self.m("tiny")
        os.mkdir(os.path.join(t, "d"))
        for i in range(4):
            open(os.path.join(t, "d", "f%d" % i), "w").close()
        self.assertEqual(os.statvfs(t).f_ffree, 0)
        self.assertErrno(errno.ENOSPC, open, os.path.join(t, "d", "one_more"), "w")
        self.assertErrno(errno.ENOSPC, os.mkdir, os.path.join(t, "e"))
        self.assertEqual(stats(self.mnt)["backing"]["tiny"]["entries"], 5)
        # Removing gives the room back (once the kernel lets go of the inode).
        os.unlink(os.path.join(t, "d", "f0"))

        def create():
            try:
                open(os.path.join(t, "d", "again"), "w").close()
                return True
            except OSError as e:
                self.assertEqual(e.errno, errno.ENOSPC)
                return False
        self.assertTrue(dltest.wait_for(create, timeout=5, interval=0.05))
        self.assertEqual(sorted(os.listdir(os.path.join(t, "d"))), ["again", "f1", "f2", "f3"])


WRITER = r"""
import os, sys, time
path, block, per_sync = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
i = 0
while True:
    data = bytes([i % 251]) * block
    try:
        n = os.write(fd, data)
    except OSError as e:
        print("error", e.errno, flush=True)
        break
    assert n == block
    i += 1
    print("acked", i * block, flush=True)
    if per_sync and i % per_sync == 0:
        t0 = time.monotonic()
        try:
            os.fsync(fd)
        except OSError as e:
            print("error", e.errno, flush=True)
            break
        print("synced", i * block, time.monotonic() - t0, flush=True)
"""


class LimitedDaemon(unittest.TestCase):
    """A backing directory of FILES small files, mounted by a daemon whose
    descriptor limit is NOFILE."""
    FILES = 0
    NOFILE = 0

    def setUp(self):
        dltest.require(dltest.fuse_available(), "/dev/fuse or fusermount3 not available")
        self.tmp = tempfile.mkdtemp(prefix="dliofs-many-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.real, self.mnt = os.path.join(self.tmp, "real"), os.path.join(self.tmp, "mnt")
        os.makedirs(self.real)
        self.prepare_real()
        os.makedirs(os.path.join(self.real, "d"))
        os.makedirs(self.mnt)
        for i in range(self.FILES):
            with open(os.path.join(self.real, "d", "f%05d" % i), "w") as f:
                f.write("%d\n" % i)
        self.config = dltest.write_config(self.tmp, (
            "datasets: []\nbacking:\n  - {path: %s, at: data}\n" % self.real))
        self.log = log = os.path.join(self.tmp, "daemon.log")
        self.addCleanup(dltest.check_daemon_log, log)
        # The daemon inherits the lowered limit, soft and hard (it cannot
        # raise it back), as from `ulimit -n 2048` before `dliofs mount`.
        lim = (self.NOFILE, self.NOFILE)
        r = subprocess.run([dltest.DLIOFS, "mount", self.mnt, self.config, "--log", log],
                           capture_output=True, text=True, timeout=60,
                           preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, lim))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.addCleanup(self.unmount)
        self.pid = dltest.daemon_pid(self.mnt)

    def prepare_real(self):
        """What the backing directory is, before its files are made."""

    def unmount(self):
        u = subprocess.run([dltest.DLIOFS, "umount", self.mnt], capture_output=True, text=True,
                           timeout=60)
        if u.returncode != 0:
            subprocess.run(["fusermount3", "-u", "-z", self.mnt], capture_output=True)
        self.assertTrue(dltest.wait_for(lambda: not dltest.pid_alive(self.pid), 60),
                        "the daemon did not exit")
        self.assertEqual(u.returncode, 0, u.stderr)


class ManyFiles(LimitedDaemon):
    """Issue #22 item 3: each looked-up inode kept a descriptor until the
    kernel forgot it, so a backing directory of more files than the
    descriptor limit failed with EMFILE (and nothing was logged). The daemon
    now keeps at most min(4096, RLIMIT_NOFILE / 2) of them open (README,
    Security) and finds the others again by file handle."""
    FILES = 30000
    NOFILE = 2048

    def test_more_files_than_descriptors(self):
        bound = min(4096, self.NOFILE // 2) + 64  # the cache, and the daemon's own
        top = os.path.join(self.mnt, "data", "d")
        most = 0
        names = os.listdir(top)
        self.assertEqual(len(names), self.FILES)
        names.sort()
        # All looked up and kept so by the kernel, then all read.
        for k, name in enumerate(names):
            self.assertEqual(os.stat(os.path.join(top, name)).st_size, len("%d\n" % k))
            if k % 1000 == 0:
                most = max(most, fd_count(self.pid))
        for k, name in enumerate(names):
            with open(os.path.join(top, name)) as f:
                self.assertEqual(f.read(), "%d\n" % k)
            if k % 1000 == 0:
                most = max(most, fd_count(self.pid))
        most = max(most, fd_count(self.pid))
        print("many files: %d files, the daemon held at most %d descriptors (bound %d)"
              % (self.FILES, most, bound))
        self.assertLessEqual(most, bound)


class OutOfDescriptors(LimitedDaemon):
    """Clients holding more files open than the daemon may have descriptors:
    the next open fails with EMFILE, said once in the log for the burst, and
    opens work again once files are closed."""
    FILES = 300
    NOFILE = 64

    def test_emfile_is_answered_and_logged_once(self):
        top = os.path.join(self.mnt, "data", "d")
        held, failures = [], []
        for k in range(self.FILES):
            try:
                held.append(open(os.path.join(top, "f%05d" % k)))
            except OSError as e:
                failures.append(e.errno)
        try:
            self.assertTrue(held, "no open worked")
            self.assertTrue(failures, "%d files open under a limit of %d" % (len(held),
                                                                             self.NOFILE))
            self.assertEqual(set(failures), {errno.EMFILE}, failures[:10])
        finally:
            for f in held:
                f.close()
        with open(os.path.join(top, "f00007")) as f:
            self.assertEqual(f.read(), "7\n")
        with open(self.log) as f:
            said = [l for l in f if "out of file descriptors" in l]
        print("out of descriptors: %d open, %d refused, %d log line(s): %s"
              % (len(held), len(failures), len(said), said[:1]))
        self.assertEqual(len(said), 1, said[:5])
        self.assertIn("EMFILE", said[0])


class NoFileHandles(LimitedDaemon):
    """On a file system without file handles (ramfs), an evicted inode is
    found again by its path below the backing directory, and must still be
    the same inode; the descriptors stay bounded the same way."""
    FILES = 400
    NOFILE = 64

    def prepare_real(self):
        r = subprocess.run(["mount", "-t", "ramfs", "none", self.real], capture_output=True,
                           text=True)
        dltest.require(r.returncode == 0, "cannot mount ramfs here: %s" % r.stderr.strip())
        # After the daemon's unmount (cleanups run last in, first out).
        self.addCleanup(subprocess.run, ["umount", "-l", self.real], capture_output=True)

    def test_reopened_by_path(self):
        top = os.path.join(self.mnt, "data", "d")
        most = 0
        names = sorted(os.listdir(top))
        self.assertEqual(len(names), self.FILES)
        for k, name in enumerate(names):
            self.assertEqual(os.stat(os.path.join(top, name)).st_size, len("%d\n" % k))
        for k, name in enumerate(names):
            with open(os.path.join(top, name)) as f:
                self.assertEqual(f.read(), "%d\n" % k)
            most = max(most, fd_count(self.pid))
        # Renamed on the host: the old name is gone, the new one is found
        # (and is the same file); another file put at the old name is not
        # taken for the first.
        os.rename(os.path.join(self.real, "d", names[0]), os.path.join(self.real, "d", "moved"))
        with open(os.path.join(self.real, "d", names[0]), "w") as f:
            f.write("impostor\n")
        time.sleep(1.2)  # entry and attribute timeouts (1 s)
        with open(os.path.join(top, "moved")) as f:
            self.assertEqual(f.read(), "0\n")
        with open(os.path.join(top, names[0])) as f:
            self.assertEqual(f.read(), "impostor\n")
        bound = self.NOFILE // 2 + 64
        print("no file handles: %d files, at most %d descriptors (bound %d)"
              % (self.FILES, most, bound))
        self.assertLessEqual(most, bound)


class Durability(unittest.TestCase):
    """`dliofs mount -f` on a writable backing directory, shaped writes, the
    daemon killed (SIGKILL) or stopped (SIGTERM) while a write is in flight."""

    def setUp(self):
        dltest.require(dltest.fuse_available(), "/dev/fuse or fusermount3 not available")
        self.tmp = tempfile.mkdtemp(prefix="dliofs-dur-")
        if not os.environ.get("KEEP_TMP"):
            self.addCleanup(shutil.rmtree, self.tmp, True)
        self.real = os.path.join(self.tmp, "real")
        self.mnt = os.path.join(self.tmp, "mnt")
        os.makedirs(self.real)
        os.makedirs(self.mnt)
        self.config = dltest.write_config(self.tmp, (
            "pacer: {write: {bandwidth: 10MB/s}, meta: {latency: 30ms}}\n"
            "datasets:\n  - {name: syn, format: raw, files: 1, sample_size: 4KiB}\n"
            "backing:\n  - {path: %s, at: rw, writable: true}\n" % self.real))
        self.log = open(os.path.join(self.tmp, "daemon.log"), "w")
        self.addCleanup(dltest.check_daemon_log, self.log.name)
        self.addCleanup(self.log.close)
        self.daemon = subprocess.Popen([dltest.DLIOFS, "mount", self.mnt, self.config, "-f"],
                                       stdout=self.log, stderr=subprocess.STDOUT)
        self.addCleanup(self.cleanup)
        ok = dltest.wait_for(lambda: dltest.is_mounted(self.mnt) or self.daemon.poll() is not None,
                             timeout=20)
        self.assertTrue(ok and self.daemon.poll() is None, "the daemon did not mount")
        dltest.wait_for(lambda: os.path.isdir(os.path.join(self.mnt, "rw")), timeout=10)

    def cleanup(self):
        if self.daemon.poll() is None:
            self.daemon.kill()
            self.daemon.wait()
        if dltest.is_mounted(self.mnt):
            subprocess.run(["fusermount3", "-u", "-z", self.mnt], capture_output=True)
        self.assertFalse(dltest.is_mounted(self.mnt))

    def start_writer(self, block, per_sync):
        return subprocess.Popen([sys.executable, "-c", WRITER, os.path.join(self.mnt, "rw", "f.bin"),
                                 str(block), str(per_sync)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def check_prefix(self, nbytes, block):
        """The real file holds the pattern for at least nbytes."""
        with open(os.path.join(self.real, "f.bin"), "rb") as f:
            got = f.read()
        self.assertGreaterEqual(len(got), nbytes)
        for i in range(nbytes // block):
            if got[i * block:(i + 1) * block] != bytes([i % 251]) * block:
                self.fail("block %d of the backing file is not what was written" % i)

    def test_kill9_keeps_fsynced_bytes(self):
        block = 1 << 20
        w = self.start_writer(block, 2)
        synced = 0
        # Wait for four write+fsync cycles, then kill during a later write
        # (each 1 MiB write takes ~100 ms at 10MB/s).
        for line in w.stdout:
            if line.startswith("synced"):
                synced = int(line.split()[1])
                # Each fsync reached the daemon (and its metadata latency),
                # not a kernel shortcut.
                self.assertGreater(float(line.split()[2]), 0.025, line)
                if synced >= 8 * block:
                    break
        if synced != 8 * block:
            w.kill()
            self.fail("writer output ended early: %s" % w.stderr.read())
        time.sleep(0.05)
        self.daemon.send_signal(signal.SIGKILL)
        self.daemon.wait(timeout=10)
        out, _ = w.communicate(timeout=30)
        self.assertIn("error", out)  # the writer saw the daemon go
        r = subprocess.run(["fusermount3", "-u", "-z", self.mnt], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse(dltest.is_mounted(self.mnt))
        self.check_prefix(synced, block)

    def test_sigterm_loses_no_acknowledged_write(self):
        block = 256 << 10
        w = self.start_writer(block, 0)
        acked = 0
        for line in w.stdout:
            if line.startswith("acked"):
                acked = int(line.split()[1])
                if acked >= 3 << 20:
                    break
        self.daemon.send_signal(signal.SIGTERM)
        self.assertEqual(self.daemon.wait(timeout=20), 0)
        out, _ = w.communicate(timeout=30)
        for line in out.splitlines():
            if line.startswith("acked"):
                acked = int(line.split()[1])
        self.assertIn("error", out)
        self.assertFalse(dltest.is_mounted(self.mnt), "SIGTERM left the mount behind")
        self.check_prefix(acked, block)


class ConfigErrors(unittest.TestCase):
    def test_mountpoint_inside_a_backing_dir_is_refused(self):
        d = tempfile.mkdtemp(prefix="dliofs-cfgdir-")
        self.addCleanup(shutil.rmtree, d, True)
        mnt = os.path.join(d, "mnt")
        os.mkdir(mnt)
        cfg = dltest.write_config(d, self.HEAD + "  - {path: %s, at: x}\n" % d)
        r = subprocess.run([dltest.DLIOFS, "mount", mnt, cfg], capture_output=True, text=True,
                           timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("contains the mountpoint", r.stderr)
        self.assertFalse(dltest.is_mounted(mnt))

    def check(self, text):
        tmp = tempfile.mkdtemp(prefix="dliofs-cfg-")
        self.addCleanup(shutil.rmtree, tmp, True)
        path = dltest.write_config(tmp, text, "c.yaml")
        r = subprocess.run([dltest.DLIOFS, "check", path], capture_output=True, text=True)
        return r.returncode, r.stderr.replace(path, "c.yaml"), r.stdout

    HEAD = "datasets:\n  - {name: syn, format: raw, files: 1, sample_size: 1KiB}\nbacking:\n"

    def test_errors_point_at_the_value(self):
        d = tempfile.mkdtemp(prefix="dliofs-cfgdir-")
        self.addCleanup(shutil.rmtree, d, True)
        f = os.path.join(d, "file")
        open(f, "w").close()
        cases = [
            ("  - {path: /no/such/dir, at: x}\n", "c.yaml:4:12: backing[0].path: \"/no/such/dir\": No such file or directory"),
            ("  - {path: relative/dir, at: x}\n", "c.yaml:4:12: backing[0].path: \"relative/dir\": expected an absolute path"),
            ("  - {path: %s, at: x}\n" % f, "c.yaml:4:12: backing[0].path: \"%s\" is not a directory" % f),
            ("  - {path: %s, at: syn}\n" % d, "c.yaml:4:%d: backing[0].at: \"syn\" is already the name of datasets[0]" % (18 + len(d))),
            ("  - {path: %s, at: .dliofs}\n" % d, "backing[0].at: \".dliofs\" must not start with '.'"),
            ("  - {path: %s, at: a/b}\n" % d, "backing[0].at: \"a/b\" must be a single path component"),
            ("  - {at: c, sink: true, path: %s}\n" % d, "c.yaml:4:31: backing[0].path: a sink has no directory"),
            ("  - {at: c, sink: true}\n  - {at: c, sink: true}\n", "c.yaml:5:10: backing[1].at: duplicate name \"c\""),
            ("  - {at: c, sink: maybe}\n", "c.yaml:4:19: backing[0].sink: expected true or false"),
            ("  - {at: c, sinc: true}\n", "c.yaml:4:13: backing[0].sinc: unknown key (did you mean \"sink\"?)"),
            ("  - {at: c}\n", "c.yaml:4:5: backing[0].path: missing"),
            ("  /x\n", "c.yaml:4:3: backing: expected a list"),
            ("  - {at: c, sink: true, max_entries: 0}\n", "c.yaml:4:38: backing[0].max_entries: expected a count"),
            ("  - {at: c, path: %s, max_entries: 5}\n" % d, "backing[0].max_entries: only a sink"),
        ]
        for text, want in cases:
            with self.subTest(text=text):
                rc, err, _ = self.check(self.HEAD + text)
                self.assertEqual(rc, 2, err)
                self.assertIn(want, err)

    def test_valid_config_is_listed_and_dumped(self):
        d = tempfile.mkdtemp(prefix="dliofs-cfgdir-")
        self.addCleanup(shutil.rmtree, d, True)
        rc, err, out = self.check(self.HEAD + "  - {path: %s, at: data}\n  - {at: ck, sink: true}\n"
                                  "  - {path: %s, at: w, writable: true}\n" % (d, d))
        self.assertEqual(rc, 0, err)
        self.assertIn("data: backing directory %s (read-only)" % d, out)
        self.assertIn("ck: sink", out)
        self.assertIn("w: backing directory %s (writable)" % d, out)


if __name__ == "__main__":
    dltest.main()
