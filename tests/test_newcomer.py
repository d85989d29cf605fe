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
  daemon stays up."""
import errno
import os
import pty
import shutil
import subprocess
import tempfile
import unittest

import dltest

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


def run_on_pty(cmd):
    """Run cmd with stderr on a pseudo-terminal: (rc, stdout, terminal text)."""
    master, slave = pty.openpty()
    try:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=slave)
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
    out = p.stdout.read().decode()
    p.stdout.close()
    return p.wait(timeout=120), out, b"".join(chunks).decode(errors="replace")


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
        rc, out, term = run_on_pty([dltest.DLIO_GEN, "-j", "2", cfg,
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
        rc, out, term = run_on_pty([dltest.DLIO_GEN, "-q", cfg, os.path.join(self.tmp, "q")])
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
