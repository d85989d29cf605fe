"""The rough edges a new user hit (issue 15), each shown fixed:

- `dlio-gen --help` answers with its usage and exit 0 (a wrong option: usage
  on stderr, exit 2);
- dlio-gen shows a progress line (files, bytes, rate) on a terminal and ends
  with a summary; with no terminal there is no progress line, only the summary;
- `dliofs check` shows the storage model the mount will use: pacer, cache,
  backing directories and sinks, trace;
- misspelled pacer and cache keys get a "did you mean", as dataset keys do;
- a config of backing directories alone (no synthetic dataset) is accepted,
  checked and mounted;
- the mount is read-write at the VFS level for its control files (live
  settings) even when no dataset takes writes; `-o ro` mounts it read-only:
  /proc/mounts says ro, data reads work, control writes get EROFS and the
  daemon stays up;
- DLRM's files where MLPerf's binary loader looks: with mlperf_bin, a dlrm
  dataset's train file is also <file_prefix>_<train|test|val>.bin at the
  mount root (and in dlio-gen's output, as hard links), so
  --processed-data-file=<mount>/day.npz finds day_train.bin and day_test.bin
  side by side; DLIO's names stay where they were."""
import errno
import os
import shutil
import subprocess
import tempfile
import unittest

import sys  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/: dltest
import dltest  # noqa: E402

SMALL = ("seed: 3\n"
         "datasets:\n"
         "  - name: a\n"
         "    format: npy\n"
         "    files: 24\n"
         "    samples_per_file: 2\n"
         "    sample_size: 64KiB\n")


def mount_options(mnt):
    """The options /proc/mounts lists for mnt."""
    mnt = os.path.realpath(mnt)
    with open("/proc/mounts") as f:
        for line in f:
            fields = line.split()
            if fields[1].encode().decode("unicode_escape") == mnt:
                return fields[3].split(",")
    raise AssertionError("%s is not in /proc/mounts" % mnt)


class Newcomer(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="dliofs-newcomer-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def check(self, text, name="cfg.yaml"):
        cfg = dltest.write_config(self.tmp, text, name=name)
        return subprocess.run([dltest.DLIOFS, "check", cfg], capture_output=True, text=True), cfg

    # --- dlio-gen ---------------------------------------------------------------

    def test_gen_help(self):
        for flag in ("--help", "-h"):
            r = subprocess.run([dltest.DLIO_GEN, flag], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("usage: dlio-gen", r.stdout)
            self.assertIn("--threads", r.stdout)
            self.assertEqual(r.stderr, "")
        r = subprocess.run([dltest.DLIO_GEN, "--frobnicate"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("usage: dlio-gen", r.stderr)

    def test_gen_progress_on_terminal_only(self):
        cfg = dltest.write_config(self.tmp, SMALL)
        rc, out, term = dltest.run_on_pty([dltest.DLIO_GEN, "-j", "2", cfg,
                                    os.path.join(self.tmp, "tty")])
        self.assertEqual(rc, 0, term)
        # The progress line, redrawn in place, reaches every file at the end.
        self.assertIn("\r\033[Kdlio-gen: 24/24 files, ", term)
        self.assertIn("MB/s", term)
        self.assertRegex(out, r"^dlio-gen: 24 files, .* in [0-9.]+ s \([0-9.]+ MB/s, 2 threads\)\n$")
        # Not on a terminal: the summary alone, nothing on stderr.
        r = subprocess.run([dltest.DLIO_GEN, "-j", "2", cfg, os.path.join(self.tmp, "pipe")],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")
        self.assertRegex(r.stdout, r"^dlio-gen: 24 files, [^\r]*\n$")
        # -q: nothing at all, even on a terminal.
        rc, out, term = dltest.run_on_pty([dltest.DLIO_GEN, "-q", cfg, os.path.join(self.tmp, "q")])
        self.assertEqual((rc, out, term), (0, "", ""))

    # --- dliofs check -------------------------------------------------------------

    def test_check_shows_storage_model(self):
        real = os.path.join(self.tmp, "real")
        os.mkdir(real)
        trace = os.path.join(self.tmp, "job.trace")
        r, cfg = self.check(SMALL +
                            "pacer:\n  read: {bandwidth: 500MB/s, iops: 20k}\n"
                            "cache: {policy: lru, size: 1GiB}\n"
                            "trace: {file: %s}\n"
                            "backing:\n  - {path: %s, at: real}\n  - {at: ckpt, sink: true}\n"
                            % (trace, real))
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout
        self.assertIn("storage model (pacer):\n", out)
        self.assertIn("    bandwidth: 500MB/s\n", out)
        self.assertIn("    iops: 20k\n", out)
        self.assertIn("  cache:\n", out)
        self.assertIn("    policy: lru\n", out)
        self.assertIn("  real: backing directory %s (read-only)\n" % real, out)
        self.assertIn("  ckpt: sink", out)
        self.assertIn("trace: %s from mount time on\n" % trace, out)

    def test_pacer_and_cache_keys_did_you_mean(self):
        for text, want in (
                ("pacer:\n  read:\n    bandwith: 1GB/s\n",
                 'read.bandwith: unknown pacer key "read.bandwith" (did you mean '
                 '"read.bandwidth"?)'),
                ("pacer:\n  cach:\n    policy: lru\n",
                 '(did you mean "cache.policy"?)'),
                ("cache:\n  polcy: lru\n",
                 'cache.polcy: unknown pacer key "cache.polcy" (did you mean "cache.policy"?)'),
                ("pacer:\n  write:\n    queue_dept: 4\n",
                 '(did you mean "write.queue_depth"?)')):
            with self.subTest(text=text):
                r, cfg = self.check(SMALL + text)
                self.assertEqual(r.returncode, 2, r.stdout)
                self.assertIn(cfg + ":", r.stderr)
                self.assertIn(want, r.stderr)

    def test_backing_only_config(self):
        real = os.path.join(self.tmp, "real")
        os.mkdir(real)
        with open(os.path.join(real, "x.bin"), "wb") as f:
            f.write(b"\x01" * 5000)
        r, cfg = self.check("backing:\n  - {path: %s, at: real}\n" % real)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("0 datasets", r.stdout)
        self.assertIn("  real: backing directory %s (read-only)" % real, r.stdout)
        dltest.require(dltest.fuse_available(), "/dev/fuse or fusermount3 not available")
        mnt = os.path.join(self.tmp, "mnt")
        os.mkdir(mnt)
        with dltest.mounted(cfg, mountpoint=mnt):
            self.assertEqual(sorted(os.listdir(mnt)), ["real"])
            with open(os.path.join(mnt, "real", "x.bin"), "rb") as f:
                self.assertEqual(f.read(), b"\x01" * 5000)
            with open(os.path.join(mnt, ".dliofs", "config.yaml")) as f:
                self.assertIn("datasets: []\n", f.read())

    # --- DLRM's names for MLPerf's loader ---------------------------------------

    DLRM = ("seed: 8\n"
            "datasets:\n"
            "  - {name: criteo_train, format: dlrm, mlperf_bin: train, files: 1,\n"
            "     samples_per_file: 3000, file_prefix: day, cardinality: 1000}\n"
            "  - {name: criteo_test, format: dlrm, mlperf_bin: test, files: 1,\n"
            "     samples_per_file: 700, file_prefix: day, cardinality: 1000}\n")

    def loader_reads(self, root, samples):
        """facebookresearch/dlrm --mlperf-bin-loader: d_path from
        --processed-data-file=<root>/day.npz, then CriteoBinDataset's reads
        (seek(i * 160 * B), read(160 * B), int32 rows of 40) of both files."""
        try:
            import numpy as np
        except ImportError:
            dltest.require(False, "numpy not importable by " + os.sys.executable)
        lstr = os.path.join(root, "day.npz").split("/")
        d_path = "/".join(lstr[0:-1]) + "/" + lstr[-1].split(".")[0]
        batch = 256
        for split, n in (("train", samples[0]), ("test", samples[1])):
            path = d_path + "_%s.bin" % split
            self.assertEqual(os.path.getsize(path), 160 * n, path)
            rows = []
            with open(path, "rb") as f:
                for i in range(-(-n // batch)):
                    f.seek(i * 160 * batch)
                    rows.append(np.frombuffer(f.read(160 * batch), dtype=np.int32).reshape(-1, 40))
            rows = np.concatenate(rows)
            self.assertEqual(rows.shape, (n, 40))
            self.assertTrue(np.isin(rows[:, 0], (0, 1)).all())
            self.assertTrue((rows[:, 14:] >= 0).all() and (rows[:, 14:] < 1000).all())

    def test_dlrm_mlperf_bin_names(self):
        r, cfg = self.check(self.DLRM)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("criteo_train/train's file is also day_train.bin at the mount root", r.stdout)
        self.assertIn("criteo_test/train's file is also day_test.bin at the mount root", r.stdout)
        gen = dltest.gen(cfg, os.path.join(self.tmp, "gen"))
        self.loader_reads(gen, (3000, 700))
        # Hard links to DLIO's names, not copies.
        self.assertEqual(os.stat(os.path.join(gen, "day_train.bin")).st_ino,
                         os.stat(os.path.join(gen, "criteo_train/train/day_0_of_1.bin")).st_ino)
        dltest.require(dltest.fuse_available(), "/dev/fuse or fusermount3 not available")
        mnt = os.path.join(self.tmp, "mnt")
        os.mkdir(mnt)
        with dltest.mounted(cfg, mountpoint=mnt):
            self.assertEqual(sorted(os.listdir(mnt)),
                             ["criteo_test", "criteo_train", "day_test.bin", "day_train.bin"])
            self.loader_reads(mnt, (3000, 700))
            for name, ds in (("day_train.bin", "criteo_train"), ("day_test.bin", "criteo_test")):
                alias = os.path.join(mnt, name)
                dlio = os.path.join(mnt, ds, "train", "day_0_of_1.bin")
                self.assertEqual(os.stat(alias).st_ino, os.stat(dlio).st_ino)
                self.assertEqual(os.stat(alias).st_nlink, 2)
                self.assertEqual(dltest.sha256_file(alias), dltest.sha256_file(dlio))
                self.assertEqual(dltest.sha256_file(alias),
                                 dltest.sha256_file(os.path.join(gen, name)))

    def test_dlrm_mlperf_bin_errors(self):
        r, cfg = self.check(self.DLRM.replace("mlperf_bin: test", "mlperf_bin: train"))
        self.assertEqual(r.returncode, 2, r.stdout)
        self.assertIn(cfg + ':5:51: datasets[1].mlperf_bin: its train file is also '
                      '"day_train.bin" at the mount root, which is already another '
                      "dataset's file at the root", r.stderr)
        r, cfg = self.check(self.DLRM.replace("files: 1,\n     samples_per_file: 700",
                                              "files: 2,\n     samples_per_file: 700"))
        self.assertEqual(r.returncode, 2, r.stdout)
        self.assertIn("datasets[1].mlperf_bin: names the dataset's one train file", r.stderr)
        self.assertIn("but files is 2", r.stderr)
        r, cfg = self.check(self.DLRM.replace("mlperf_bin: test", "mlperf_bin: eval"))
        self.assertEqual(r.returncode, 2, r.stdout)
        self.assertIn("datasets[1].mlperf_bin: expected one of none, train, test, val", r.stderr)

    # --- the mount's mode ---------------------------------------------------------

    def test_read_only_mount(self):
        dltest.require(dltest.fuse_available(), "/dev/fuse or fusermount3 not available")
        cfg = dltest.write_config(self.tmp, SMALL)
        mnt = os.path.join(self.tmp, "mnt")
        os.mkdir(mnt)
        with dltest.mounted(cfg, mountpoint=mnt):
            # Without -o ro: rw for the control files' sake, datasets refuse writes.
            self.assertIn("rw", mount_options(mnt))
            with self.assertRaises(OSError) as cm:
                open(os.path.join(mnt, "a", "train", "img_00_of_24.npy"), "r+b")
            self.assertIn(cm.exception.errno, (errno.EROFS, errno.EACCES))
        with dltest.mounted(cfg, ("-o", "ro"), mountpoint=mnt):
            self.assertIn("ro", mount_options(mnt))
            with open(os.path.join(mnt, "a", "train", "img_00_of_24.npy"), "rb") as f:
                self.assertEqual(f.read(6), b"\x93NUMPY")
            with self.assertRaises(OSError) as cm:
                with open(os.path.join(mnt, ".dliofs", "pacer"), "w") as f:
                    f.write("read.bandwidth=1GB/s\n")
            self.assertEqual(cm.exception.errno, errno.EROFS)
            with open(os.path.join(mnt, ".dliofs", "stats.json")) as f:
                self.assertIn('"enabled"', f.read())


if __name__ == "__main__":
    dltest.main()
