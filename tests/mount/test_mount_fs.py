"""Filesystem semantics of the mount: read-only errors, modes, links, sizes,
timestamps, DLIO's names, lookups that must fail, mmap, O_DIRECT, flock, and
the `dliofs` command line: failures, signals, unmount."""
import errno
import fcntl
import mmap
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import time
import unittest

import sys  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/: dltest
import dltest  # noqa: E402

CONFIG = """\
seed: 3
datasets:
  - name: flat
    format: npz
    files: 12
    eval_files: 3
    samples_per_file: 2
    sample_size: 4096
  - name: deep
    format: npy
    files: 30
    subfolders: 12
    eval_files: 10
    eval_subfolders: 2
    samples_per_file: 2
    shape: [8, 6]
    dtype: int16
    file_prefix: arr
  - name: one
    format: raw
    files: 1
    samples_per_file: 4
    sample_size: 1000
  - name: ctr
    format: dlrm
    files: 3
    samples_per_file: 100
  - name: ib
    format: indexed_binary
    files: 2
    eval_files: 1
    samples_per_file: 5
    sample_size: 300
  - name: rec
    format: tfrecord
    files: 2
    samples_per_file: 3
    sample_size: 100
"""

# name: (format extension, prefix, train files, train subfolders, eval files, eval subfolders)
LAYOUT = {
    "flat": ("npz", "img", 12, 0, 3, 0),
    "deep": ("npy", "arr", 30, 12, 10, 2),
    "one": ("raw", "img", 1, 0, 0, 0),
    "ctr": ("bin", "img", 3, 0, 0, 0),
    "ib": ("indexed_binary", "img", 2, 0, 1, 0),
    "rec": ("tfrecord", "img", 2, 0, 0, 0),
}


def dlio_names(prefix, n, nsub, ext):
    """DLIO's relative paths for N files over NSUB subfolders."""
    w, sw = len(str(n)), len(str(nsub))
    out = []
    for i in range(n):
        name = "%s_%0*d_of_%d.%s" % (prefix, w, i, n, ext)
        if nsub > 1:
            name = "%0*d/%s" % (sw, i % nsub, name)
        out.append(name)
    return out


def expected_files(ds):
    """{relative path under the dataset: expected size or None (format-specific)}."""
    ext, prefix, n, nsub, ne, nesub = LAYOUT[ds]
    out = {}
    for part, count, sub in (("train", n, nsub), ("valid", ne, nesub)):
        for rel in dlio_names(prefix, count, sub, ext):
            out[part + "/" + rel] = None
    sizes = {
        "deep": 128 + 8 * 6 * 2 * 2,   # npy v1 header + (8, 6, 2) int16
        "one": 4 * 1000,
        "ctr": 100 * 160,              # 40 int32 per sample
        "ib": 5 * 300,
        "rec": 3 * 149,                # records of a 100-byte image (docs/formats.md 2.2)
    }
    for rel in list(out):
        out[rel] = sizes.get(ds)
        if ds == "ib":
            out[rel + ".off.idx"] = 5 * 8
            out[rel + ".sz.idx"] = 5 * 8
    return out


def read_all(path):
    with open(path, "rb") as f:
        return f.read()


class MountSemantics(dltest.MountedTestCase):
    CONFIG = CONFIG

    def assertErrno(self, code, fn, *args):
        with self.assertRaises(OSError, msg="%s%r should fail" % (fn.__name__, args)) as cm:
            fn(*args)
        self.assertEqual(cm.exception.errno, code,
                         "%s%r: %s, expected %s" % (fn.__name__, args, cm.exception,
                                                    errno.errorcode[code]))

    def path(self, *parts):
        return os.path.join(self.mnt, *parts)

    def test_read_only(self):
        f = self.path("flat", "train", "img_00_of_12.npz")
        d = self.path("flat", "train")
        size = os.stat(f).st_size
        EROFS = errno.EROFS
        self.assertErrno(EROFS, os.open, f, os.O_WRONLY)
        self.assertErrno(EROFS, os.open, f, os.O_RDWR)
        self.assertErrno(EROFS, os.open, f, os.O_WRONLY | os.O_TRUNC)
        self.assertErrno(EROFS, os.open, f, os.O_WRONLY | os.O_APPEND)
        self.assertErrno(EROFS, os.open, os.path.join(d, "new.npz"), os.O_WRONLY | os.O_CREAT, 0o644)
        self.assertErrno(EROFS, os.open, self.path("newfile"), os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        self.assertErrno(EROFS, os.mkdir, os.path.join(d, "newdir"))
        self.assertErrno(EROFS, os.mkdir, self.path("newdataset"))
        self.assertErrno(EROFS, os.unlink, f)
        self.assertErrno(EROFS, os.rmdir, self.path("flat", "valid"))
        self.assertErrno(EROFS, os.rename, f, os.path.join(d, "renamed.npz"))
        self.assertErrno(EROFS, os.rename, self.path("flat"), self.path("flat2"))
        self.assertErrno(EROFS, os.truncate, f, 0)
        self.assertErrno(EROFS, os.truncate, f, size + 1)
        self.assertErrno(EROFS, os.chmod, f, 0o644)
        self.assertErrno(EROFS, os.chmod, d, 0o755)
        self.assertErrno(EROFS, os.chown, f, 1, 1)
        self.assertErrno(EROFS, os.utime, f, (0, 0))
        self.assertErrno(EROFS, os.symlink, "img_00_of_12.npz", os.path.join(d, "link"))
        self.assertErrno(EROFS, os.link, f, os.path.join(d, "hard"))
        # Nothing changed.
        self.assertEqual(os.stat(f).st_size, size)
        self.assertEqual(stat.S_IMODE(os.stat(f).st_mode), 0o444)
        self.assertEqual(sorted(os.listdir(d)), dlio_names("img", 12, 0, "npz"))

    def test_modes_links_sizes(self):
        seen_dirs = seen_files = 0
        for d, subdirs, files in os.walk(self.mnt):
            if d == self.mnt:
                subdirs[:] = [s for s in subdirs if not s.startswith(".")]
            st = os.stat(d)
            self.assertEqual(st.st_mode, stat.S_IFDIR | 0o555, d)
            # readdir of the real directory, hidden entries included
            nsub = sum(1 for e in os.scandir(d) if e.is_dir(follow_symlinks=False))
            self.assertEqual(st.st_nlink, 2 + nsub, d)
            seen_dirs += 1
            for n in files:
                if d == self.mnt and n.startswith("."):
                    continue
                st = os.stat(os.path.join(d, n))
                self.assertEqual(st.st_mode, stat.S_IFREG | 0o444, n)
                self.assertEqual(st.st_nlink, 1, n)
                seen_files += 1
        # root, 6 datasets, train/valid, 12 + 2 subfolders of deep
        self.assertGreaterEqual(seen_dirs, 1 + 6 + 6 + 3 + 14)
        self.assertEqual(seen_files, sum(len(expected_files(ds)) for ds in LAYOUT))
        self.assertEqual(os.stat(self.path("deep", "train")).st_nlink, 2 + 12)
        self.assertEqual(os.stat(self.path("deep", "valid")).st_nlink, 2 + 2)
        self.assertEqual(os.stat(self.path("flat", "train")).st_nlink, 2)

        ref_files, _ = dltest.tree(self.ref)
        for ds in LAYOUT:
            for rel, size in expected_files(ds).items():
                p = self.path(ds, rel)
                st = os.stat(p)
                if size is not None:
                    self.assertEqual(st.st_size, size, p)
                self.assertEqual(st.st_size, ref_files[ds + "/" + rel], p)
                # st_size is what read() delivers
                self.assertEqual(len(read_all(p)), st.st_size, p)

    def test_timestamps_fixed(self):
        def collect():
            seen = set()
            for d, subdirs, files in os.walk(self.mnt):
                if d == self.mnt:   # not the control directory's live files
                    subdirs[:] = [s for s in subdirs if not s.startswith(".")]
                    files = [f for f in files if not f.startswith(".")]
                for n in [d] + [os.path.join(d, f) for f in files]:
                    st = os.stat(n)
                    seen.add((st.st_atime_ns, st.st_mtime_ns, st.st_ctime_ns))
            return seen

        first = collect()
        self.assertEqual(len(first), 1, "timestamps differ between entries: %r" % sorted(first)[:5])
        _, mtime, _ = next(iter(first))
        self.assertLessEqual(mtime, time.time_ns() + 10 ** 9, "mtime in the future")
        time.sleep(1.1)
        read_all(self.path("one", "train", "img_0_of_1.raw"))
        os.listdir(self.path("deep", "train", "07"))
        self.assertEqual(collect(), first)

    def test_readdir_names(self):
        root = sorted(n for n in os.listdir(self.mnt) if not n.startswith("."))
        self.assertEqual(root, sorted(LAYOUT))
        for ds, (ext, prefix, n, nsub, ne, nesub) in LAYOUT.items():
            top = sorted(os.listdir(self.path(ds)))
            if ne:
                self.assertEqual(top, ["train", "valid"], ds)
            else:
                self.assertIn("train", top, ds)
                self.assertTrue(set(top) <= {"train", "valid"}, top)
            for part, count, sub in (("train", n, nsub), ("valid", ne, nesub)):
                if count == 0:
                    continue
                names = dlio_names(prefix, count, sub, ext)
                if ds == "ib":
                    names = [x + s for x in names for s in ("", ".off.idx", ".sz.idx")]
                if sub > 1:
                    subs = sorted({x.split("/")[0] for x in names})
                    self.assertEqual(sorted(os.listdir(self.path(ds, part))), subs)
                    got = sorted(s + "/" + x for s in subs for x in os.listdir(self.path(ds, part, s)))
                else:
                    got = sorted(os.listdir(self.path(ds, part)))
                self.assertEqual(got, sorted(names), "%s/%s" % (ds, part))
        # Spot-check the padding rules themselves, not only our own helper.
        self.assertTrue(os.path.isfile(self.path("flat", "train", "img_07_of_12.npz")))
        self.assertTrue(os.path.isfile(self.path("flat", "valid", "img_2_of_3.npz")))
        self.assertTrue(os.path.isfile(self.path("deep", "train", "05", "arr_29_of_30.npy")))
        self.assertTrue(os.path.isfile(self.path("deep", "valid", "1", "arr_09_of_10.npy")))
        self.assertTrue(os.path.isfile(self.path("ib", "train", "img_1_of_2.indexed_binary.off.idx")))
        self.assertTrue(os.path.isfile(self.path("ctr", "train", "img_2_of_3.bin")))

    def test_lookup_enoent(self):
        bad = [
            "nosuch", "nosuch/train", "flat/test", "flat/train/nosuch",
            "flat/train/img_3_of_12.npz",        # wrong padding
            "flat/train/img_003_of_12.npz",
            "flat/train/img_12_of_12.npz",       # index >= N
            "flat/train/img_99_of_12.npz",
            "flat/train/img_99999999999999999999999999_of_12.npz",
            "flat/train/img_03_of_13.npz",       # wrong N
            "flat/train/img_03_of_012.npz",
            "flat/train/img_03_of_12.npy",       # wrong extension
            "flat/train/img_03_of_12.npz.off.idx",
            "flat/train/img_03_of_12",
            "flat/train/img_03_of_12.npzx",
            "flat/train/arr_03_of_12.npz",       # wrong prefix
            "flat/train/img_-3_of_12.npz",
            "flat/train/img_+3_of_12.npz",
            "flat/train/img_ 3_of_12.npz",
            "flat/train/img_0x_of_12.npz",
            "flat/train/IMG_03_of_12.npz",
            "flat/valid/img_3_of_3.npz",
            "flat/valid/img_00_of_3.npz",
            "flat/img_03_of_12.npz",             # file at the dataset root
            "one/valid/img_0_of_1.raw",
            "one/train/img_1_of_1.raw",
            "deep/train/arr_05_of_30.npy",       # belongs in a subfolder
            "deep/train/05/arr_06_of_30.npy",    # wrong subfolder
            "deep/train/5/arr_05_of_30.npy",     # subfolder padding
            "deep/train/12",                     # subfolder >= nsub
            "deep/train/00/arr_30_of_30.npy",
            "deep/valid/01/arr_09_of_10.npy",    # subfolder padding
            "deep/valid/1/arr_9_of_10.npy",      # file padding
            "ib/train/img_0_of_2.indexed_binary.idx",
            "ib/train/img_2_of_2.indexed_binary.off.idx",
            "ib/valid/img_0_of_1.indexed_binary.sz.idx.sz.idx",
        ]
        for rel in bad:
            p = self.path(*rel.split("/"))
            self.assertErrno(errno.ENOENT, os.stat, p)
            self.assertErrno(errno.ENOENT, os.open, p, os.O_RDONLY)
        # and the right names next to them do exist
        for rel in ("flat/train/img_03_of_12.npz", "deep/train/05/arr_05_of_30.npy",
                    "deep/valid/1/arr_09_of_10.npy", "one/train/img_0_of_1.raw"):
            self.assertTrue(os.path.isfile(self.path(*rel.split("/"))), rel)

    def test_mmap(self):
        import numpy as np
        n = 0
        for rel in sorted(expected_files("deep")):
            a = np.load(self.path("deep", rel), mmap_mode="r")
            b = np.load(os.path.join(self.ref, "deep", rel))
            self.assertIsInstance(a, np.memmap)
            self.assertEqual(a.dtype, np.dtype("int16"))
            self.assertEqual(a.shape, b.shape)
            self.assertTrue(np.array_equal(np.asarray(a), b), rel)
            n += 1
        self.assertEqual(n, 40)
        # plain shared read-only mmap of a whole file
        for rel in ("flat/train/img_05_of_12.npz", "ib/valid/img_0_of_1.indexed_binary"):
            p = self.path(*rel.split("/"))
            with open(p, "rb") as f, mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as m:
                self.assertEqual(m[:], read_all(os.path.join(self.ref, rel)), rel)

    def test_o_direct(self):
        for rel in ("flat/train/img_05_of_12.npz", "one/train/img_0_of_1.raw", "ctr/train/img_1_of_3.bin"):
            want = read_all(os.path.join(self.ref, rel))
            fd = os.open(self.path(*rel.split("/")), os.O_RDONLY | os.O_DIRECT)
            buf = mmap.mmap(-1, 64 * 1024)     # page-aligned, as O_DIRECT wants
            try:
                for off in (0, 4096, (len(want) // 4096) * 4096):
                    n = os.preadv(fd, [buf], off)
                    self.assertEqual(n, min(len(buf), max(0, len(want) - off)), (rel, off))
                    self.assertEqual(buf[:n], want[off:off + n], (rel, off))
            finally:
                buf.close()
                os.close(fd)

    def test_flock(self):
        p = self.path("flat", "train", "img_01_of_12.npz")
        with open(p, "rb") as f, open(p, "rb") as g:
            fcntl.flock(f, fcntl.LOCK_SH)
            fcntl.flock(g, fcntl.LOCK_SH | fcntl.LOCK_NB)
            fcntl.flock(g, fcntl.LOCK_UN)
            fcntl.flock(f, fcntl.LOCK_UN)
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            with self.assertRaises(BlockingIOError):
                fcntl.flock(g, fcntl.LOCK_SH | fcntl.LOCK_NB)
            fcntl.flock(f, fcntl.LOCK_UN)
            fcntl.lockf(f, fcntl.LOCK_SH)      # POSIX read lock, as libhdf5 may take
            fcntl.lockf(f, fcntl.LOCK_UN)
            self.assertEqual(len(f.read()), os.fstat(f.fileno()).st_size)


BAD_TEXT = ("AddressSanitizer", "runtime error", "Segmentation fault", "Traceback", "core dumped")


class CommandLine(unittest.TestCase):
    """`dliofs` failures and help; none of this needs a working FUSE."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="dliofs-cli-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.good = dltest.write_config(self.tmp, CONFIG)

    def run_cli(self, *args):
        return subprocess.run([dltest.DLIOFS] + list(args), capture_output=True, text=True,
                              timeout=60, stdin=subprocess.DEVNULL)

    def assertClean(self, r):
        self.assertGreater(r.returncode, 0, "dliofs killed by signal %d" % -r.returncode)
        for t in BAD_TEXT:
            self.assertNotIn(t, r.stdout + r.stderr)

    def assertNoMount(self, mnt):
        self.assertFalse(dltest.is_mounted(mnt), "%s left mounted" % mnt)
        self.assertTrue(dltest.wait_for(lambda: not dltest.daemon_pids(mnt), 5),
                        "daemon left running for %s" % mnt)

    def test_help_version(self):
        r = self.run_cli("--help")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("mount", r.stdout)
        self.assertIn("umount", r.stdout)
        r = self.run_cli("--version")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"\d+\.\d+")

    def test_missing_mountpoint(self):
        mnt = os.path.join(self.tmp, "does", "not", "exist")
        t0 = time.monotonic()
        r = self.run_cli("mount", mnt, self.good)
        self.assertNotEqual(r.returncode, 0)
        self.assertLess(time.monotonic() - t0, 30)
        self.assertIn(mnt, r.stderr, "error should name the mountpoint")
        self.assertClean(r)
        self.assertNoMount(mnt)
        self.assertFalse(os.path.exists(mnt))

    def test_invalid_configs(self):
        mnt = os.path.join(self.tmp, "mnt")
        os.mkdir(mnt)
        cases = {
            "syntax.yaml": "datasets:\n  - name: a\n    format: [npz\n",
            "format.yaml": "datasets:\n  - name: a\n    format: parquet\n    files: 2\n    sample_size: 100\n",
            "empty.yaml": "seed: 1\n",
            "size.yaml": "datasets:\n  - name: a\n    format: npz\n    files: 2\n    sample_size: lots\n",
            "dup.yaml": "datasets:\n  - {name: a, format: raw, sample_size: 10}\n"
                        "  - {name: a, format: raw, sample_size: 10}\n",
        }
        for name, text in cases.items():
            cfg = dltest.write_config(self.tmp, text, name)
            r = self.run_cli("mount", mnt, cfg)
            self.assertNotEqual(r.returncode, 0, name)
            self.assertIn(name, r.stderr, "error should name the config file: %r" % r.stderr)
            self.assertClean(r)
            self.assertNoMount(mnt)
            self.assertEqual(os.listdir(mnt), [])
        r = self.run_cli("mount", mnt, os.path.join(self.tmp, "absent.yaml"))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("absent.yaml", r.stderr)
        self.assertClean(r)
        self.assertNoMount(mnt)


class Signals(dltest.MountedTestCase):
    """The daemon unmounts cleanly on SIGTERM, SIGINT and `dliofs umount`."""
    CONFIG = CONFIG
    GEN = False
    MOUNT = False

    def fresh_mountpoint(self):
        mnt = tempfile.mkdtemp(prefix="dliofs-sig-")

        def cleanup():
            if dltest.is_mounted(mnt):
                subprocess.run(["fusermount3", "-u", "-z", mnt], capture_output=True)
            for pid in dltest.daemon_pids(mnt):
                os.kill(pid, signal.SIGKILL)
            dltest.wait_for(lambda: not dltest.is_mounted(mnt), 5)
            try:
                os.rmdir(mnt)
            except OSError:
                pass
        self.addCleanup(cleanup)
        return mnt

    def check_serving(self, mnt):
        self.assertEqual(len(read_all(os.path.join(mnt, "one", "train", "img_0_of_1.raw"))), 4000)

    def foreground(self, sig):
        mnt = self.fresh_mountpoint()
        err = tempfile.TemporaryFile(mode="w+")
        self.addCleanup(err.close)
        p = subprocess.Popen([dltest.DLIOFS, "mount", mnt, self.config, "-f"],
                             stdin=subprocess.DEVNULL, stdout=err, stderr=err)
        try:
            ok = dltest.wait_for(lambda: dltest.is_mounted(mnt) or p.poll() is not None, 20)
            self.assertTrue(ok and p.poll() is None, "foreground daemon did not mount")
            self.check_serving(mnt)
            p.send_signal(sig)
            rc = p.wait(timeout=20)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        err.seek(0)
        log = err.read()
        self.assertEqual(rc, 0, "daemon exit status after %s; stderr: %s" % (sig.name, log))
        self.assertTrue(dltest.wait_for(lambda: not dltest.is_mounted(mnt), 2),
                        "still mounted after %s" % sig.name)
        for t in BAD_TEXT:
            self.assertNotIn(t, log)
        self.assertEqual(os.listdir(mnt), [])

    def test_sigterm_foreground(self):
        self.foreground(signal.SIGTERM)

    def test_sigint_foreground(self):
        self.foreground(signal.SIGINT)

    def background(self, stop):
        mnt = self.fresh_mountpoint()
        r = subprocess.run([dltest.DLIOFS, "mount", mnt, self.config], capture_output=True,
                           text=True, timeout=60, stdin=subprocess.DEVNULL)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(dltest.is_mounted(mnt), "mount returned before the fs answered")
        self.check_serving(mnt)
        pid = dltest.daemon_pid(mnt)
        stop(mnt, pid)
        self.assertTrue(dltest.wait_for(lambda: not dltest.pid_alive(pid), 20),
                        "daemon %d still running" % pid)
        self.assertTrue(dltest.wait_for(lambda: not dltest.is_mounted(mnt), 2), "still mounted")
        self.assertEqual(os.listdir(mnt), [])

    def test_sigterm_daemon(self):
        self.background(lambda mnt, pid: os.kill(pid, signal.SIGTERM))

    def test_sigint_daemon(self):
        self.background(lambda mnt, pid: os.kill(pid, signal.SIGINT))

    def test_umount_command(self):
        def umount(mnt, pid):
            r = subprocess.run([dltest.DLIOFS, "umount", mnt], capture_output=True, text=True,
                               timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertFalse(dltest.is_mounted(mnt), "umount returned while still mounted")
        self.background(umount)


if __name__ == "__main__":
    dltest.main()
