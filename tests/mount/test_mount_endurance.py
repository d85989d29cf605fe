"""What held under the adversarial review of main (issue #16), kept as tests
at a CI-friendly size so it cannot regress:

- durability: the daemon killed (SIGKILL) or stopped (SIGTERM) again and
  again while writers create and fsync files in a writable backing
  directory; every file whose fsync was acknowledged is in the real
  directory with its exact bytes (the review: 12 kill -9 and 3 SIGTERM
  trials, 0 of 4,181 fsynced files lost). Each trial mounts where the last
  one's daemon died, so dead mounts must not pile up either;
- 16 concurrent readers reading random ranges of every format for a while:
  0 wrong bytes against dlio-gen's copy, and the daemon's memory flat (the
  review: 150 s, 0 wrong bytes, flat RSS).

DLIOFS_ENDURANCE_SCALE (default 1) multiplies trials and durations for a
longer run by hand."""
import hashlib
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/: dltest
import dltest  # noqa: E402

SCALE = float(os.environ.get("DLIOFS_ENDURANCE_SCALE", "1"))
KILL_TRIALS = max(1, int(4 * SCALE))
TERM_TRIALS = max(1, int(1 * SCALE))
LOAD_SECONDS = 1.5          # of writing before each stop
READERS = 16
READ_SECONDS = 20 * SCALE

# Creates files named PREFIX_N with bytes computed from the name, fsyncs each
# (and, every few, the directory), and prints "synced NAME SIZE" once the
# fsync has returned; stops at the first error (the daemon went away).
WRITER = r"""
import hashlib, os, sys
d, prefix = sys.argv[1], sys.argv[2]
dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
i = 0
while True:
    name = "%s_%05d" % (prefix, i)
    size = 512 + (int(hashlib.sha256(name.encode()).hexdigest()[:6], 16) % 65536)
    block = hashlib.sha256(name.encode()).digest()
    data = (block * (size // len(block) + 1))[:size]
    try:
        fd = os.open(os.path.join(d, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, data[:size // 2])
            os.write(fd, data[size // 2:])
            os.fsync(fd)
        finally:
            os.close(fd)
        if i % 8 == 7:
            os.fsync(dfd)
    except OSError as e:
        print("error", e.errno, flush=True)
        break
    print("synced", name, size, flush=True)
    i += 1
"""


def expected_bytes(name, size):
    block = hashlib.sha256(name.encode()).digest()
    return (block * (size // len(block) + 1))[:size]


class Durability(unittest.TestCase):
    def setUp(self):
        dltest.require(dltest.fuse_available(), "/dev/fuse or fusermount3 not available")
        self.tmp = tempfile.mkdtemp(prefix="dliofs-endure-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.real = os.path.join(self.tmp, "real")
        self.mnt = os.path.join(self.tmp, "mnt")
        os.makedirs(self.real)
        os.makedirs(self.mnt)
        # Shaped writes and metadata, so requests are parked in the pacer
        # when the daemon goes.
        self.config = dltest.write_config(self.tmp, (
            "pacer: {write: {bandwidth: 200MB/s}, meta: {latency: 200us}}\n"
            "datasets:\n  - {name: syn, format: npz, files: 8, sample_size: 256KiB}\n"
            "backing:\n  - {path: %s, at: rw, writable: true}\n" % self.real))
        self.addCleanup(self.unmount)

    def unmount(self):
        for _ in range(10):
            if not dltest.is_mounted(self.mnt):
                break
            subprocess.run(["fusermount3", "-u", "-z", self.mnt], capture_output=True)
        self.assertFalse(dltest.is_mounted(self.mnt))

    def answering(self):
        """The new mount serves: a dead one says ENOTCONN to statfs (its
        cached entries may still look fine), the directory underneath has no rw."""
        try:
            os.statvfs(self.mnt)
        except OSError:
            return False
        return os.path.isdir(os.path.join(self.mnt, "rw"))

    def trial(self, n, sig):
        """One mount, two writers and a reader, then sig to the daemon.
        Returns {name: size} of the files whose fsync was acknowledged."""
        log = open(os.path.join(self.tmp, "daemon-%d.log" % n), "w")
        self.addCleanup(dltest.check_daemon_log, log.name)
        daemon = subprocess.Popen([dltest.DLIOFS, "mount", self.mnt, self.config, "-f"],
                                  stdout=log, stderr=subprocess.STDOUT)
        log.close()
        try:
            up = dltest.wait_for(lambda: daemon.poll() is not None or self.answering(), 20)
            self.assertTrue(up and daemon.poll() is None, "trial %d: the daemon did not mount" % n)
            d = os.path.join(self.mnt, "rw", "t%02d" % n)
            os.mkdir(d)
            writers = [subprocess.Popen([sys.executable, "-c", WRITER, d, "w%d" % k],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                       for k in range(2)]
            reader = subprocess.Popen(
                [sys.executable, "-c",
                 "import os,sys\nwhile True:\n"
                 "  for n in sorted(os.listdir(sys.argv[1])):\n"
                 "    open(os.path.join(sys.argv[1], n), 'rb').read()\n",
                 os.path.join(self.mnt, "syn", "train")],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(LOAD_SECONDS)
            daemon.send_signal(sig)
            rc = daemon.wait(timeout=30)
            if sig == signal.SIGTERM:
                self.assertEqual(rc, 0, "trial %d: SIGTERM exit status" % n)
            synced = {}
            for w in writers:
                out, err = w.communicate(timeout=30)
                for line in out.splitlines():
                    if line.startswith("synced"):
                        _, name, size = line.split()
                        synced[name] = int(size)
                self.assertIn("error", out, "trial %d: a writer did not see the daemon go: %s"
                              % (n, err[-500:]))
            reader.kill()
            reader.wait()
        finally:
            if daemon.poll() is None:
                daemon.kill()
                daemon.wait()
        return "t%02d" % n, synced

    def test_repeated_kill_and_term_lose_no_fsynced_file(self):
        total = 0
        plan = [signal.SIGKILL] * KILL_TRIALS + [signal.SIGTERM] * TERM_TRIALS
        for n, sig in enumerate(plan):
            sub, synced = self.trial(n, sig)
            self.assertGreater(len(synced), 5, "trial %d: almost nothing was written" % n)
            lost = []
            for name, size in synced.items():
                p = os.path.join(self.real, sub, name)
                try:
                    ok = dltest.read_file(p) == expected_bytes(name, size)
                except OSError:
                    ok = False
                if not ok:
                    lost.append(name)
            self.assertEqual(lost, [], "trial %d (%s): %d of %d fsynced files lost or wrong"
                             % (n, signal.Signals(sig).name, len(lost), len(synced)))
            total += len(synced)
            # A killed daemon leaves a dead mount; the next trial mounts over
            # it. It must be cleaned, not stacked.
            self.assertLessEqual(dltest.proc_mounts().count(os.path.realpath(self.mnt)), 1)
        print("durability: %d trials (%d SIGKILL, %d SIGTERM), %d fsynced files, 0 lost"
              % (len(plan), KILL_TRIALS, TERM_TRIALS, total))


class ManyReaders(dltest.MountedTestCase):
    """16 readers, random files and ranges of every format, byte-exact, for
    READ_SECONDS; the daemon's RSS must not grow while they read."""
    CONFIG = (
        "seed: 16\n"
        "datasets:\n"
        "  - {name: npz, format: npz, files: 24, sample_size: {mean: 512KiB, stdev: 128KiB}}\n"
        "  - {name: tfr, format: tfrecord, files: 8, samples_per_file: 64, sample_size: 16KiB}\n"
        "  - {name: h5, format: hdf5, files: 8, samples_per_file: 4, sample_size: 128KiB, "
        "hdf5: {chunks: [1, 64, 64]}, compression: gzip}\n"
        "  - {name: jpg, format: jpeg, files: 64, width: 96, height: 64, color: RGB}\n"
        "  - {name: raw, format: raw, files: 4, sample_size: 4MiB}\n")

    def test_16_readers_byte_exact_with_flat_rss(self):
        files = dltest.walk_files(self.ref)
        self.assertGreater(len(files), 100)
        sizes = {f: os.path.getsize(os.path.join(self.ref, f)) for f in files}
        pid = dltest.daemon_pid(self.mnt)
        stop = time.monotonic() + READ_SECONDS
        errors, counts = [], [0] * READERS
        lock = threading.Lock()

        def reader(k):
            rnd = random.Random(1000 + k)
            while time.monotonic() < stop and not errors:
                f = rnd.choice(files)
                size = sizes[f]
                off = rnd.randrange(size) if size and rnd.random() < 0.7 else 0
                n = rnd.choice((1, 511, 4096, 65536, 1 << 20, size))
                with open(os.path.join(self.mnt, f), "rb", buffering=0) as a, \
                        open(os.path.join(self.ref, f), "rb") as b:
                    a.seek(off)
                    b.seek(off)
                    got, want = a.read(n), b.read(n)
                if got != want:
                    with lock:
                        errors.append("%s at %d+%d: %d bytes differ or missing"
                                      % (f, off, n, sum(x != y for x, y in zip(got, want))
                                         + abs(len(got) - len(want))))
                counts[k] += len(got)

        def nthreads():
            with open("/proc/%d/status" % pid) as f:
                return int([ln for ln in f if ln.startswith("Threads:")][0].split()[1])

        rss, nth = [], []
        threads = [threading.Thread(target=reader, args=(k,)) for k in range(READERS)]
        for t in threads:
            t.start()
        while any(t.is_alive() for t in threads):
            rss.append(dltest.rss_bytes(pid))
            nth.append(nthreads())
            time.sleep(0.25)
        for t in threads:
            t.join()
        self.assertEqual(errors, [], "\n".join(errors[:10]))
        self.assertTrue(all(counts), "a reader read nothing: %r" % counts)
        # Flat: after the first quarter (caches and buffer pools fill), the
        # resident size stays within 16 MiB of what it was then, plus what
        # FUSE worker threads started later hold (a loaded machine starts
        # them later): libfuse's 1 MiB request buffer and our 1 MiB reply
        # buffer each, 3 MiB allowed. A leak per request (the readers make
        # hundreds of thousands) would be far above.
        q = max(1, len(rss) // 4)
        warm, late = max(rss[:q]), max(rss[q:] or rss)
        more = max(0, max(nth[q:] or nth) - max(nth[:q]))
        self.assertLess(late - warm, (16 << 20) + more * (3 << 20),
                        "daemon RSS grew from %d to %d bytes (%d more threads)"
                        % (warm, late, more))
        print("readers: %d x %.0f s, %.1f MB read, 0 wrong bytes, RSS %.1f -> %.1f MB"
              % (READERS, READ_SECONDS, sum(counts) / 1e6, warm / 1e6, late / 1e6))


if __name__ == "__main__":
    dltest.main()
