"""Scale: 10,000,000 files (over 1 PB) mount in under a second with exact
sizes, a 1,000,000-file directory lists completely, and the daemon's memory
stays bounded (RSS < 64 MB) throughout."""
import os
import random
import re
import subprocess
import time

import sys  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/: dltest
import dltest  # noqa: E402

BIG_FILES = 10_000_000
BIG_SIZE = 100 * 1024 * 1024          # 100 MiB per file: 1.05 PB in all
WIDE_FILES = 1_000_000
RSS_LIMIT = 64_000_000                # bytes

CONFIG = """\
seed: 5
datasets:
  - name: big
    format: raw
    files: %d
    samples_per_file: 1
    sample_size: %d
  - name: wide
    format: npz
    files: %d
    samples_per_file: 1
    sample_size: 4096
""" % (BIG_FILES, BIG_SIZE, WIDE_FILES)


def big_name(i):
    return "img_%0*d_of_%d.raw" % (len(str(BIG_FILES)), i, BIG_FILES)


class MountScale(dltest.MountedTestCase):
    CONFIG = CONFIG
    GEN = False
    MOUNT = False     # each test times its own mount

    def mount(self):
        t0 = time.monotonic()
        cm = dltest.mounted(self.config)
        mnt = cm.__enter__()
        elapsed = time.monotonic() - t0
        self.addCleanup(cm.__exit__, None, None, None)
        return mnt, elapsed

    def assertRss(self, pid, when):
        rss = dltest.rss_bytes(pid)
        print("daemon RSS %s: %.1f MB" % (when, rss / 1e6))
        self.assertLess(rss, RSS_LIMIT, "daemon RSS %s: %d bytes" % (when, rss))

    def test_petabyte_mount_and_stat(self):
        self.assertGreaterEqual(BIG_FILES * BIG_SIZE, 10 ** 15)
        mnt, elapsed = self.mount()
        print("mount of %d files (%.2f PB): %.3f s" % (BIG_FILES + WIDE_FILES,
                                                      BIG_FILES * BIG_SIZE / 1e15, elapsed))
        self.assertLess(elapsed, 1.0, "dliofs mount took %.3f s" % elapsed)
        pid = dltest.daemon_pid(mnt)
        self.assertRss(pid, "after mount")

        train = os.path.join(mnt, "big", "train")
        rng = random.Random(17)
        idx = [0, 1, BIG_FILES // 2, BIG_FILES - 2, BIG_FILES - 1] + \
            [rng.randrange(BIG_FILES) for _ in range(200)]
        t0 = time.monotonic()
        for i in idx:
            self.assertEqual(os.stat(os.path.join(train, big_name(i))).st_size, BIG_SIZE, i)
        print("stat of %d files: %.3f s" % (len(idx), time.monotonic() - t0))
        with self.assertRaises(FileNotFoundError):
            os.stat(os.path.join(train, big_name(BIG_FILES)))

        # The data path works at the far end of the namespace and of a file.
        last = os.path.join(train, big_name(BIG_FILES - 1))
        fd = os.open(last, os.O_RDONLY)
        try:
            tail = os.pread(fd, 4096, BIG_SIZE - 100)
            self.assertEqual(len(tail), 100)
            self.assertEqual(os.pread(fd, 10, BIG_SIZE), b"")
            self.assertEqual(len(os.pread(fd, 1 << 20, BIG_SIZE // 2)), 1 << 20)
        finally:
            os.close(fd)
        wide_last = os.path.join(mnt, "wide", "train",
                                 "img_%0*d_of_%d.npz" % (len(str(WIDE_FILES)), WIDE_FILES - 1, WIDE_FILES))
        with open(wide_last, "rb") as f:
            f.seek(-22, os.SEEK_END)
            self.assertEqual(f.read(4), b"PK\x05\x06", "npz ends in a ZIP end record")
        self.assertRss(pid, "after stats and reads")

    def test_million_file_listing(self):
        mnt, elapsed = self.mount()
        self.assertLess(elapsed, 1.0, "dliofs mount took %.3f s" % elapsed)
        pid = dltest.daemon_pid(mnt)
        d = os.path.join(mnt, "wide", "train")
        t0 = time.monotonic()
        r = subprocess.run("ls -f %s | wc -l" % d, shell=True, capture_output=True, text=True,
                           timeout=600)
        took = time.monotonic() - t0
        self.assertEqual(r.returncode, 0, r.stderr)
        print("ls -f | wc -l of %d files: %.2f s" % (WIDE_FILES, took))
        self.assertEqual(int(r.stdout.strip()), WIDE_FILES + 2)
        self.assertRss(pid, "after ls -f")

        # A second listing through Python: every name is DLIO's and unique.
        t0 = time.monotonic()
        names = os.listdir(d)
        print("os.listdir of %d files: %.2f s" % (len(names), time.monotonic() - t0))
        self.assertEqual(len(names), WIDE_FILES)
        self.assertEqual(len(set(names)), WIDE_FILES)
        pat = re.compile(r"img_(\d{7})_of_1000000\.npz\Z")
        idx = sorted(int(pat.match(n).group(1)) for n in names)
        self.assertEqual(idx[0], 0)
        self.assertEqual(idx[-1], WIDE_FILES - 1)
        self.assertEqual(idx, list(range(WIDE_FILES)))
        del names, idx
        self.assertRss(pid, "after two listings")


if __name__ == "__main__":
    dltest.main()
