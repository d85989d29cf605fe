"""The overlay (`overlay: {path: DIR}`, issue #25): synthetic directories
take new names, kept in a real (shared) directory at the same relative path,
so MLPerf Storage's multi-host probe (mlpstorage's CAP-02: rank 0 creates a
sentinel in --data-dir, a barrier, every rank stats it and must see the same
inode number, later versions read its 64 bytes back) passes in a dataset
directory and at the mount root, not only in a backing directory.

- two mounts (two nodes) over one overlay directory: a file created in the
  root, a dataset and a split directory through one has the real file's
  inode number on both (stat and readdir's d_ino), the same bytes, and is
  gone on the other after its removal, within the stated timeout; the
  synthetic names are still listed once, and the overlay names after them;
- numpy's np.save through one mount, np.load through the other;
- refusals: creating, making a directory or linking over a synthetic name,
  renaming or removing a synthetic name, renaming a file onto one, opening
  a synthetic file for writing; the synthetic bytes unchanged and nothing
  left in the overlay directory by the refusals;
- without the key the synthetic tree stays read-only (EROFS);
- under a real `mpirun` cluster (4 mounts): our CAP-02 equivalent
  (test_cluster_hosts.PROBE) in a dataset directory and at the mount root."""
import errno
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/: dltest
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # test_cluster_hosts
import dltest  # noqa: E402
import test_cluster_hosts as hosts  # noqa: E402

CONFIG = """\
datasets:
  - {name: vol, format: npz, files: 8, sample_size: 8KiB}
  - {name: img, format: jpeg, files: 6, classes: 2, width: 32, height: 32}
overlay: {path: '%(upper)s'}
"""

PLAIN = """\
datasets:
  - {name: vol, format: npz, files: 8, sample_size: 8KiB}
"""


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class Overlay(unittest.TestCase):
    """Two mounts of one config (two nodes) over one overlay directory."""

    @classmethod
    def setUpClass(cls):
        dltest.require(dltest.fuse_available(), "/dev/fuse or fusermount3 not available")
        cls.tmp = tempfile.mkdtemp(prefix="dliofs-overlay-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, True)
        cls.upper = os.path.join(cls.tmp, "upper")
        os.mkdir(cls.upper)
        cls.config = dltest.write_config(cls.tmp, CONFIG % {"upper": cls.upper})
        cls.mnt = []
        for name in ("A", "B"):
            m = os.path.join(cls.tmp, name)
            os.mkdir(m)
            ctx = dltest.mounted(cls.config, mountpoint=m)
            cls.mnt.append(ctx.__enter__())
            cls.addClassCleanup(ctx.__exit__, None, None, None)
        cls.A, cls.B = cls.mnt
        cls.train = sorted(os.listdir(os.path.join(cls.A, "vol", "train")))
        cls.synth = os.path.join("vol", "train", cls.train[0])

    def probe(self, sub):
        """CAP-02 in directory sub (relative to the mount root) of A and B."""
        name = ".dliofs-probe-%s" % (sub.replace("/", "-") or "root")
        a, b = os.path.join(self.A, sub, name), os.path.join(self.B, sub, name)
        payload = os.urandom(64)
        before = sorted(os.listdir(os.path.join(self.B, sub)))
        with open(a, "wb") as f:
            f.write(payload)
            os.fsync(f.fileno())
        real = os.stat(os.path.join(self.upper, sub, name)).st_ino
        st_a, st_b = os.stat(a), os.stat(b)
        self.assertEqual((st_a.st_ino, st_b.st_ino), (real, real), sub)
        with open(b, "rb") as f:
            self.assertEqual(f.read(), payload, sub)
        for m in self.mnt:
            dents = hosts.getdents(os.path.join(m, sub))
            names = [n for n, _ in dents]
            self.assertEqual(len(names), len(set(names)), "a name listed twice: %s" % names)
            self.assertIn((name, real), dents, "readdir of %s on %s" % (sub or ".", m))
            self.assertEqual(sorted(set(names) - {".", "..", name}),
                             [n for n in before if n != name])
        os.unlink(a)
        self.assertTrue(hosts.dltest.wait_for(lambda: not os.path.exists(b),
                                              hosts.SEEN_WITHIN, 0.005),
                        "%s still seen on B %.2f s after its removal" % (sub, hosts.SEEN_WITHIN))
        self.assertFalse(os.path.exists(os.path.join(self.upper, sub, name)))
        self.assertEqual(sorted(os.listdir(os.path.join(self.B, sub))), before)

    def test_probe_in_root_dataset_and_split(self):
        for sub in ("", "vol", "vol/train", "img/train/" + sorted(
                os.listdir(os.path.join(self.A, "img", "train")))[0]):
            with self.subTest(sub=sub):
                self.probe(sub)

    def test_numpy_save_load_across_mounts(self):
        py = dltest.VENV_PY if os.path.exists(dltest.VENV_PY) else sys.executable
        r = subprocess.run([py, "-c", "import numpy"], capture_output=True)
        dltest.require(r.returncode == 0, "numpy not importable")
        a = os.path.join(self.A, "vol", "arr.npy")
        b = os.path.join(self.B, "vol", "arr.npy")
        code = ("import numpy as np, sys\n"
                "x = np.arange(100000, dtype=np.float32).reshape(100, 1000) * 0.5\n"
                "np.save(sys.argv[1], x)\n"
                "y = np.load(sys.argv[2])\n"
                "assert y.dtype == x.dtype and y.shape == x.shape, (y.dtype, y.shape)\n"
                "assert (y == x).all()\n"
                "print('ok', y.nbytes)\n")
        r = subprocess.run([py, "-c", code, a, b], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("ok 400000", r.stdout)
        self.assertEqual(os.stat(b).st_ino, os.stat(os.path.join(self.upper, "vol",
                                                                 "arr.npy")).st_ino)
        os.unlink(b)

    def expect(self, err, fn, *args):
        with self.assertRaises(OSError) as cm:
            fn(*args)
        self.assertEqual(cm.exception.errno, err, "%s%s" % (fn.__name__, args))

    def test_synthetic_names_refused(self):
        A = self.A
        synth = os.path.join(A, self.synth)
        want = digest(os.path.join(self.B, self.synth))
        self.expect(errno.EEXIST, os.open, synth, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        self.expect(errno.EROFS, os.open, synth, os.O_WRONLY | os.O_CREAT, 0o644)
        self.expect(errno.EROFS, os.open, synth, os.O_RDWR)
        self.expect(errno.EROFS, os.truncate, synth, 0)
        self.expect(errno.EEXIST, os.mkdir, os.path.join(A, "vol"))
        self.expect(errno.EEXIST, os.mkdir, os.path.join(A, "vol", "train"))
        self.expect(errno.EEXIST, os.mkdir, os.path.join(A, ".dliofs"))
        self.expect(errno.EEXIST, os.symlink, "x", synth)
        self.expect(errno.EPERM, os.rename, synth, os.path.join(A, "vol", "train", "moved"))
        self.expect(errno.EPERM, os.rename, os.path.join(A, "vol"), os.path.join(A, "vol2"))
        self.expect(errno.EPERM, os.unlink, synth)
        self.expect(errno.EPERM, os.rmdir, os.path.join(A, "vol", "train"))
        self.expect(errno.EPERM, os.link, synth, os.path.join(A, "vol", "hard"))
        # An overlay file renamed or linked onto a synthetic name.
        mine = os.path.join(A, "vol", "train", "mine.bin")
        with open(mine, "wb") as f:
            f.write(b"m" * 10)
        self.expect(errno.EPERM, os.rename, mine, synth)
        self.expect(errno.EEXIST, os.link, mine, synth)
        # Its own name moves freely, between synthetic directories too.
        os.rename(mine, os.path.join(A, "vol", "mine.bin"))
        self.assertEqual(os.path.getsize(os.path.join(self.B, "vol", "mine.bin")), 10)
        self.assertEqual(os.listdir(os.path.join(self.upper, "vol", "train")), [])
        os.unlink(os.path.join(self.B, "vol", "mine.bin"))
        self.assertEqual(digest(synth), want)
        self.assertEqual(digest(os.path.join(self.B, self.synth)), want)
        self.assertEqual(sorted(os.listdir(os.path.join(A, "vol", "train"))), self.train)
        # Nothing of the refusals reached the overlay directory.
        left = [os.path.relpath(os.path.join(d, n), self.upper)
                for d, ds, fs in os.walk(self.upper) for n in fs]
        self.assertEqual(left, [])

    def test_overlay_directory_tree(self):
        """A directory made in a dataset holds files, lists and is removed."""
        d = os.path.join(self.A, "vol", "ckpt")
        os.makedirs(os.path.join(d, "e1"))
        with open(os.path.join(d, "e1", "w.bin"), "wb") as f:
            f.write(b"w" * 4096)
        self.assertEqual(os.path.getsize(os.path.join(self.B, "vol", "ckpt", "e1", "w.bin")),
                         4096)
        self.assertTrue(os.path.isfile(os.path.join(self.upper, "vol", "ckpt", "e1", "w.bin")))
        dents = dict(hosts.getdents(os.path.join(self.B, "vol", "ckpt")))
        self.assertEqual(dents["e1"], os.stat(os.path.join(self.B, "vol", "ckpt", "e1")).st_ino)
        # "..", as everywhere on the mount, is the number stat gives: a
        # synthetic directory's, the root's, or an overlay directory's.
        self.assertEqual(dents[".."], os.stat(os.path.join(self.B, "vol")).st_ino)
        self.assertEqual(dict(hosts.getdents(os.path.join(self.B, "vol", "ckpt", "e1")))[".."],
                         os.stat(os.path.join(self.B, "vol", "ckpt")).st_ino)
        top = os.path.join(self.A, "top-dir")
        os.mkdir(top)
        self.assertEqual(dict(hosts.getdents(os.path.join(self.B, "top-dir")))[".."],
                         os.stat(self.B).st_ino)
        os.rmdir(top)
        shutil.rmtree(os.path.join(self.B, "vol", "ckpt"))
        self.assertFalse(os.path.exists(os.path.join(self.upper, "vol", "ckpt")))


    def test_effective_config_names_the_overlay(self):
        """.dliofs/config.yaml loads again, with the overlay."""
        with open(os.path.join(self.A, ".dliofs", "config.yaml")) as f:
            text = f.read()
        self.assertIn("overlay:", text)
        cfg = dltest.write_config(self.tmp, text, name="effective.yaml")
        r = subprocess.run([dltest.DLIOFS, "check", cfg], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("overlay: names created in synthetic directories go to %s" % self.upper,
                      r.stdout)


class WithoutOverlay(unittest.TestCase):
    def test_synthetic_tree_read_only(self):
        dltest.require(dltest.fuse_available(), "/dev/fuse or fusermount3 not available")
        tmp = tempfile.mkdtemp(prefix="dliofs-overlay-plain-")
        self.addCleanup(shutil.rmtree, tmp, True)
        with dltest.mounted(dltest.write_config(tmp, PLAIN)) as m:
            for path in (os.path.join(m, "probe"), os.path.join(m, "vol", "probe")):
                self.expect_erofs(path)

    def expect_erofs(self, path):
        with self.assertRaises(OSError) as cm:
            open(path, "wb").close()
        self.assertEqual(cm.exception.errno, errno.EROFS)


class Refused(unittest.TestCase):
    def check(self, text, want):
        tmp = tempfile.mkdtemp(prefix="dliofs-overlay-cfg-")
        self.addCleanup(shutil.rmtree, tmp, True)
        cfg = dltest.write_config(tmp, PLAIN + text % {"tmp": tmp})
        r = subprocess.run([dltest.DLIOFS, "check", cfg], capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertRegex(r.stderr, r"cfg.yaml:\d+:\d+: " + want)

    def test_bad_overlays(self):
        self.check("overlay: {path: relative}\n", r"overlay.path: .*absolute")
        self.check("overlay: {path: '%(tmp)s/none'}\n", r"overlay.path: .*No such file")
        self.check("overlay: {path: '%(tmp)s', at: x}\n", r"overlay: .*path only")
        self.check("overlay: {path: '%(tmp)s', writable: false}\n", r"overlay: .*path only")
        self.check("overlay: {}\n", r"overlay.path: missing")
        self.check("overlay: /x\n", r"overlay: expected a mapping")


# The cluster case: test_cluster_hosts's mpirun cluster with the overlay on
# its shared directory, the probe run in a dataset directory and the root.
OVERLAY_PROBE = hosts.PROBE.replace('area = os.path.join(mnt, "shared")',
                                    'area = os.path.join(mnt, sys.argv[4])').replace(
    "os.path.join(real, name)", "os.path.join(real, sys.argv[4], name)")


class OverlayCluster(hosts.MpirunCluster):
    test_shared_fs_probe_under_mpi = None  # test_cluster_hosts runs them
    test_rank0_file_has_the_shared_inode = None

    @classmethod
    def setUpClass(cls):
        saved = hosts.CLUSTER_CONFIG
        hosts.CLUSTER_CONFIG = saved + "overlay: {path: '%(shared)s'}\n"
        try:
            super().setUpClass()
        finally:
            hosts.CLUSTER_CONFIG = saved

    def test_probe_in_data_dir_under_mpi(self):
        self.assertNotEqual(OVERLAY_PROBE, hosts.PROBE)
        py = hosts.mpi4py_python()
        dltest.require(py is not None and py[1] is not None, "no Python with mpi4py")
        python, mpiexec = py
        for sub in ("vol", "."):
            cmd = [mpiexec, "-n", str(hosts.NODES), python, "-c", OVERLAY_PROBE,
                   os.path.join(self.tmp, "m{rank}"), str(hosts.SEEN_WITHIN), self.shared, sub]
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                               env=dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
                                        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                                        OMPI_MCA_rmaps_base_oversubscribe="1"))
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            res = hosts.json.loads(r.stdout.strip().splitlines()[-1])
            self.assertEqual(len(res["ranks"]), hosts.NODES)
            for rank, (ino, data, err), dino in res["ranks"]:
                self.assertIsNone(err, "%s: rank %d: errno %s" % (sub, rank, err))
                self.assertEqual(ino, res["real_ino"], "%s: rank %d's inode" % (sub, rank))
                self.assertEqual(dino, res["real_ino"], "%s: rank %d's d_ino" % (sub, rank))
                self.assertEqual(data, res["payload"], "%s: rank %d's bytes" % (sub, rank))
            for rank, t in enumerate(res["gone_after"]):
                self.assertIsNotNone(t, "%s: rank %d still saw the sentinel" % (sub, rank))
            self.assertEqual(len(set(map(tuple, res["walks"]))), 1, res["walks"])
            print("CAP-02 equivalent in %s over %d mounts: inode %d on every rank" %
                  (sub, hosts.NODES, res["real_ino"]))


if __name__ == "__main__":
    dltest.main()
