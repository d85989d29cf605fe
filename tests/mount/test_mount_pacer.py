"""The pacer through the mount: shaping that a reader can measure, live
changes (and refusals that change nothing), stats.json, the emulated cache's
known result, metadata shaping, and the accuracy benchmark at a small size."""
import json
import os
import random
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/: dltest
import dltest  # noqa: E402

BASE = """\
seed: 2
datasets:
  - {name: raw, format: raw, files: 8, samples_per_file: 16, sample_size: 1MiB}
  - {name: small, format: raw, files: 200, sample_size: 4KiB}
"""


def read_all(path, bs=1 << 20):
    n = 0
    with open(path, "rb", buffering=0) as f:
        while True:
            b = f.read(bs)
            if not b:
                return n
            n += len(b)


def stats(mnt):
    with open(os.path.join(mnt, ".dliofs", "stats.json")) as f:
        return json.load(f)


class Shaping(dltest.MountedTestCase):
    GEN = False
    CONFIG = "pacer: {read: {bandwidth: 50MB/s}}\ncache: {policy: none}\n" + BASE

    def test_bandwidth_and_live_set(self):
        p = os.path.join(self.mnt, "raw", "train", "img_0_of_8.raw")
        t0 = time.monotonic()
        n = read_all(p)
        rate = n / (time.monotonic() - t0)
        self.assertEqual(n, 16 << 20)
        self.assertLess(abs(rate / 50e6 - 1), 0.10, "observed %.1f MB/s for 50MB/s" % (rate / 1e6))
        r = subprocess.run([dltest.DLIOFS, "set", self.mnt, "read.bandwidth=200MB/s"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        t0 = time.monotonic()
        n = read_all(os.path.join(self.mnt, "raw", "train", "img_1_of_8.raw"))
        rate = n / (time.monotonic() - t0)
        self.assertLess(abs(rate / 200e6 - 1), 0.10, "observed %.1f MB/s for 200MB/s" % (rate / 1e6))
        with open(os.path.join(self.mnt, ".dliofs", "pacer")) as f:
            self.assertIn("bandwidth: 200MB/s", f.read())

    def test_bad_write_changes_nothing(self):
        ctl = os.path.join(self.mnt, ".dliofs", "pacer")
        with open(ctl) as f:
            before = f.read()
        for bad in ("read.bandwidth=fast\n", "read.bandwdith=1GB/s\n",
                    "read.iops=100\nread.latency=lognormal(5ms,1ms)\n", "nonsense\n"):
            with self.subTest(bad=bad):
                with self.assertRaises(OSError) as cm:
                    with open(ctl, "w") as f:
                        f.write(bad)
                self.assertEqual(cm.exception.errno, 22)
        with open(ctl) as f:
            self.assertEqual(f.read(), before)
        r = subprocess.run([dltest.DLIOFS, "set", self.mnt, "read.bandwidth=fast"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("read.bandwidth", r.stderr)

    def test_stats_json(self):
        before = stats(self.mnt)["classes"]["read"]["bytes"]
        n = read_all(os.path.join(self.mnt, "small", "train", "img_007_of_200.raw"))
        s = stats(self.mnt)
        self.assertEqual(s["classes"]["read"]["bytes"] - before, n)
        for cls in ("read", "write", "meta"):
            for k in ("p50", "p90", "p99", "p99.9"):
                self.assertIn(k, s["classes"][cls]["latency_us"])
        # The read is its job's (this process's group), not the threads'.
        jobs = [j for j in s["jobs"] if j["classes"]["read"]["bytes"] >= n]
        self.assertEqual(len(jobs), 1, s["jobs"])
        self.assertGreaterEqual(jobs[0]["processes"], 1)
        r = subprocess.run([dltest.DLIOFS, "stat", self.mnt], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"(?m)^class +ops +MB")
        self.assertRegex(r.stdout, r"(?m)^job +procs +thr")
        r = subprocess.run([dltest.DLIOFS, "stat", self.mnt, "--all"], capture_output=True,
                           text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("classes.read.bytes", r.stdout)
        subprocess.run([dltest.DLIOFS, "stat", self.mnt, "--reset"], check=True)
        s = stats(self.mnt)
        self.assertEqual(s["classes"]["read"]["bytes"], 0)
        self.assertEqual(s["classes"]["read"]["latency_us"]["count"], 0)


class EmulatedCache(dltest.MountedTestCase):
    """MinIO keeps the first half it sees and never evicts: from the second
    epoch on, exactly the cached fraction hits. LRU at the same size thrashes."""
    GEN = False
    POLICY = "minio"
    TEMPLATE = "cache: {policy: %s, size: 64MiB, block: 1MiB}\n" + BASE

    @classmethod
    def setUpClass(cls):
        cls.CONFIG = cls.TEMPLATE % cls.POLICY
        super().setUpClass()

    def epoch(self, rng):
        files = ["img_%d_of_8.raw" % i for i in range(8)]
        blocks = [(f, b) for f in files for b in range(16)]
        rng.shuffle(blocks)
        for f, b in blocks:
            with open(os.path.join(self.mnt, "raw", "train", f), "rb", buffering=0) as fh:
                fh.seek(b << 20)
                fh.read(1 << 20)

    def hits(self):
        c = stats(self.mnt)["classes"]["read"]["cache"]
        return c["hit_bytes"], c["miss_bytes"]

    def test_known_result(self):
        rng = random.Random(1)
        self.epoch(rng)
        h0, m0 = self.hits()
        self.epoch(rng)
        h1, m1 = self.hits()
        ratio = (h1 - h0) / ((h1 - h0) + (m1 - m0))
        if self.POLICY == "minio":
            self.assertAlmostEqual(ratio, 0.5, delta=0.01)
        else:
            self.assertLess(ratio, 0.4)
        subprocess.run([dltest.DLIOFS, "cache", "drop", self.mnt], check=True)
        h2, m2 = self.hits()
        read_all(os.path.join(self.mnt, "raw", "train", "img_0_of_8.raw"))
        h3, m3 = self.hits()
        # After a drop every block misses once; only the later pieces of a
        # block split across requests (unaligned buffers) may hit it again.
        self.assertGreaterEqual(m3 - m2, 15 << 20, "a dropped cache still hit")
        self.assertLess(h3 - h2, 1 << 20)
        subprocess.run([dltest.DLIOFS, "cache", "warm", self.mnt, "raw/train/img_5_of_8.raw"],
                       check=True)
        read_all(os.path.join(self.mnt, "raw", "train", "img_5_of_8.raw"))
        h4, m4 = self.hits()
        self.assertEqual(m4 - m3, 0, "a warmed file missed")
        self.assertEqual(h4 - h3, 16 << 20)


class EmulatedCacheLRU(EmulatedCache):
    POLICY = "lru"


class MetadataShaping(dltest.MountedTestCase):
    """Opening many small files pays the metadata latency each time."""
    GEN = False
    CONFIG = "pacer: {meta: {latency: 2ms}}\n" + BASE

    def test_small_files_pay_metadata(self):
        t0 = time.monotonic()
        for i in range(50):
            with open(os.path.join(self.mnt, "small", "train", "img_%03d_of_200.raw" % i), "rb") as f:
                f.read()
        dt = time.monotonic() - t0
        # lookup + getattr + open per file, each >= 2 ms: at least 50 x 2 x 2 ms.
        self.assertGreater(dt, 0.2)
        s = stats(self.mnt)["classes"]["meta"]
        self.assertGreaterEqual(s["latency_us"]["p50"], 1900)


class DeviceWork(dltest.MountedTestCase):
    """Device work counted as a device would: a small-file reader's EOF read
    costs nothing, a buffered reader's calls cost one IO per readahead
    window, an O_DIRECT reader's one each, files report the storage's block
    size, and metadata of an inode the client has seen takes
    meta.cached_latency until `dliofs cache drop`."""
    GEN = False
    CONFIG = ("pacer: {read: {iops: 200}, meta: {latency: 5ms, cached_latency: 50us},"
              " blksize: 4KiB}\n"
              "cache: {policy: none}\n"
              "datasets:\n"
              "  - {name: img, format: raw, files: 40, sample_size: 110kB}\n")

    def path(self, i):
        return os.path.join(self.mnt, "img", "train", "img_%02d_of_40.raw" % i)

    def delta(self, before, cls, key):
        return stats(self.mnt)["classes"][cls][key] - before["classes"][cls][key]

    def test_whole_file_reader_is_one_io(self):
        # PIL / torchvision's pil_loader: open, read() to the end, close.
        s0 = stats(self.mnt)
        for i in range(0, 4):
            with open(self.path(i), "rb") as f:
                self.assertEqual(len(f.read()), 110000)
        # The read at the end of each file reaches no device.
        self.assertEqual(self.delta(s0, "read", "nodev_ops"), 4)
        self.assertEqual(self.delta(s0, "read", "device_ops"), 4)

    def test_small_calls_merge(self):
        # A reader of 8 KiB calls (no page cache on this mount: each reaches
        # the daemon): 14 requests a file, two IOs on a device that reads
        # ahead (a 32 KiB window, then a 128 KiB one: ext4 does the same).
        s0 = stats(self.mnt)
        t0 = time.monotonic()
        for i in range(4, 12):
            n = read_all(self.path(i), 8192)
            self.assertEqual(n, 110000)
        dt = time.monotonic() - t0
        # 16 IOs at 200 IOPS, not 112 (0.56 s).
        self.assertLess(dt, 0.3, "8 files in %.3f s" % dt)
        self.assertEqual(self.delta(s0, "read", "device_ops"), 16)
        self.assertEqual(self.delta(s0, "read", "merged_ops"), 8 * 12)
        self.assertEqual(self.delta(s0, "read", "bytes"), 8 * 110000)

    def test_odirect_reader_is_one_io_per_call(self):
        import mmap
        buf = mmap.mmap(-1, 64 << 10)
        s0 = stats(self.mnt)
        fd = os.open(self.path(12), os.O_RDONLY | os.O_DIRECT)
        try:
            n = 0
            while True:
                k = os.readv(fd, [buf])
                n += k
                if k < len(buf):
                    break
        finally:
            os.close(fd)
        self.assertEqual(n, 110000)
        self.assertEqual(self.delta(s0, "read", "device_ops"), 2)
        self.assertEqual(self.delta(s0, "read", "merged_ops"), 0)

    def test_blksize(self):
        # Files report the storage's block size, which Python's open() sizes
        # its buffer by: a PIL reader then reads a JPEG in a few calls, as
        # on the storage, instead of one 1 MiB read.
        self.assertEqual(os.stat(self.path(30)).st_blksize, 4096)
        r = subprocess.run([dltest.DLIOFS, "set", self.mnt, "blksize=64KiB"], capture_output=True,
                           text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        try:
            self.assertEqual(os.stat(self.path(31)).st_blksize, 65536)
            r = subprocess.run([dltest.DLIOFS, "set", self.mnt, "blksize=3000"],
                               capture_output=True, text=True)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("blksize", r.stderr)
        finally:
            subprocess.run([dltest.DLIOFS, "set", self.mnt, "blksize=4KiB"], capture_output=True)

    def test_inode_cache(self):
        def timed(fn):
            t0 = time.monotonic()
            fn()
            return time.monotonic() - t0
        s0 = stats(self.mnt)
        p = self.path(20)
        cold = timed(lambda: os.stat(p))          # lookup: the inode's first touch
        warm = timed(lambda: os.close(os.open(p, os.O_RDONLY)))  # open: seen before
        other = timed(lambda: os.stat(self.path(21)))
        self.assertGreaterEqual(cold, 0.0049)
        self.assertGreaterEqual(other, 0.0049)
        self.assertLess(warm, 0.0025, "open of a looked-up file took %.4f s" % warm)
        self.assertGreaterEqual(self.delta(s0, "meta", "inode_cache_hits"), 1)
        r = subprocess.run([dltest.DLIOFS, "cache", "drop", self.mnt], capture_output=True,
                           text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        again = timed(lambda: os.close(os.open(p, os.O_RDONLY)))
        self.assertGreaterEqual(again, 0.0049, "after cache drop the inode is cold")


class TracingOnMount(dltest.MountedTestCase):
    GEN = False
    CONFIG = BASE

    def test_trace_start_stop(self):
        out = os.path.join(self.tmp, "t.trace")
        subprocess.run([dltest.DLIOFS, "trace", "start", self.mnt, out, "read,open"], check=True)
        read_all(os.path.join(self.mnt, "raw", "train", "img_2_of_8.raw"))
        with open(os.path.join(self.mnt, ".dliofs", "trace")) as f:
            self.assertTrue(f.read().startswith("on "))
        tr = stats(self.mnt)["trace"]
        self.assertTrue(tr["active"])
        self.assertEqual(tr["dropped"], 0)
        subprocess.run([dltest.DLIOFS, "trace", "stop", self.mnt], check=True)
        with open(out, "rb") as f:
            data = f.read()
        self.assertEqual(data[:8], b"DLIOTRC1")
        self.assertEqual(data[-8:], b"DLIOTRC1")
        import struct
        nrec, dropped = struct.unpack_from("<QQ", data, len(data) - 48)
        self.assertEqual(dropped, 0)
        self.assertGreaterEqual(nrec, 16)  # one open + 16 reads of 1 MiB at least


class AccuracyBench(dltest.MountedTestCase):
    """The accuracy benchmark at a small size: prints its table; fails only on
    gross errors (the strict figures come from a quiet full run, README)."""
    GEN = False
    MOUNT = False
    CONFIG = BASE

    def test_bench_small(self):
        import shutil
        dltest.require(shutil.which("fio") is not None, "fio not installed")
        r = subprocess.run([sys.executable, os.path.join(dltest.SRC, "bench", "bench_pacer.py"),
                            "--build", os.path.dirname(dltest.DLIOFS), "--small", "--loose"],
                           capture_output=True, text=True, timeout=600)
        print(r.stdout)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


if __name__ == "__main__":
    dltest.main()
