"""An honest storage model: no cache hides a read from it, clients are counted
as jobs, jobs share the device as configured, every answer goes through one
path (so the trace pairs opens with closes), and control writes are
transactions.

Each test here failed on the commit before this one:
- WhatIfOnExistingMount: the kernel page cache served the re-run (6 reads seen
  by the daemon for 220 MB), `cache drop` left it, `set cache.policy` changed
  nothing;
- SmallFileCache: a 110 kB file took a whole 1 MiB block of the emulated
  cache, so a cache of half the dataset held a tenth of it;
- Jobs: stats.json counted the callers' threads; the trace's tid was the
  daemon's worker;
- TracePairs: releases were never traced; the control files were;
- ControlTransactions: a write over 1 MiB was applied piece by piece, a NUL
  ended it silently, trace paths were split at blanks;
- ModelDefaults: a storage model left the page cache on, `cache: {policy: lru}`
  with no size was accepted and never hit.
"""
import json
import os
import random
import subprocess
import sys
import textwrap
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/: dltest
import dltest  # noqa: E402

MiB = 1 << 20


def stats(mnt):
    with open(os.path.join(mnt, ".dliofs", "stats.json")) as f:
        return json.load(f)


def read_whole(path, bs=MiB):
    n = 0
    fd = os.open(path, os.O_RDONLY)
    try:
        while True:
            b = os.read(fd, bs)
            if not b:
                return n
            n += len(b)
    finally:
        os.close(fd)


def dliofs(*args, check=True):
    r = subprocess.run([dltest.DLIOFS] + list(args), capture_output=True, text=True, timeout=120)
    if check and r.returncode != 0:
        raise AssertionError("dliofs %s: %s" % (" ".join(args), r.stderr))
    return r


def kill_daemon(mnt):
    """SIGKILL the daemon of mnt: the kernel then fails the requests it held."""
    for pid in dltest.daemon_pids(mnt):
        os.kill(pid, 9)


def read_tree(root):
    n = 0
    for f in dltest.walk_files(root):
        n += read_whole(os.path.join(root, f))
    return n


DLIO_TRACE = os.environ.get("DLIO_TRACE", os.path.join(dltest.BUILD, "dlio-trace"))

# Debian's interpreter: the one with numpy and torch (tests run under it).
PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


class WhatIfOnExistingMount(dltest.MountedTestCase):
    """The README's what-if on an existing mount: read, `dliofs set`, `dliofs
    cache drop`, re-read: the re-run sees the new storage, within 5%."""
    GEN = False
    # No storage model: the kernel page cache is in use (the default).
    CONFIG = """\
seed: 3
datasets:
  - {name: d, format: raw, files: 8, samples_per_file: 4, sample_size: 512KiB}
"""
    SIZE = 8 * 4 * 512 * 1024

    def daemon_read_bytes(self):
        return stats(self.mnt)["classes"]["read"]["bytes"]

    def test_set_drop_rerun(self):
        root = os.path.join(self.mnt, "d")
        self.assertEqual(read_tree(root), self.SIZE)
        b0 = self.daemon_read_bytes()
        self.assertEqual(read_tree(root), self.SIZE)
        # The hazard: the second pass came from the page cache.
        self.assertLess(self.daemon_read_bytes() - b0, self.SIZE // 4,
                        "the page cache did not serve the second pass: nothing to fix here?")
        dliofs("set", self.mnt, "read.bandwidth=20MB/s")
        r = dliofs("cache", "drop", self.mnt)
        b1 = self.daemon_read_bytes()
        t0 = time.monotonic()
        self.assertEqual(read_tree(root), self.SIZE)
        rate = self.SIZE / (time.monotonic() - t0)
        self.assertGreaterEqual(self.daemon_read_bytes() - b1, self.SIZE,
                                "after a drop every byte reaches the daemon")
        self.assertLess(abs(rate / 20e6 - 1), 0.05, "re-run at %.2f MB/s for 20MB/s" % (rate / 1e6))
        dliofs("set", self.mnt, "read.bandwidth=unlimited")
        dliofs("cache", "drop", self.mnt)
        del r

    def test_live_policy_change(self):
        """cache.policy takes effect for the next open: with none, every pass
        reaches the daemon; back to kernel, the page cache serves again."""
        f = os.path.join(self.mnt, "d", "train", "img_3_of_8.raw")
        size = 4 * 512 * 1024
        dliofs("set", self.mnt, "cache.policy=none")
        b0 = self.daemon_read_bytes()
        for _ in range(3):
            self.assertEqual(read_whole(f), size)
        self.assertGreaterEqual(self.daemon_read_bytes() - b0, 3 * size)
        with open(os.path.join(self.mnt, ".dliofs", "cache")) as c:
            text = c.read()
        self.assertIn("policy none", text)
        self.assertIn("bypassed", text)
        dliofs("set", self.mnt, "cache.policy=kernel")
        read_whole(f)
        b1 = self.daemon_read_bytes()
        read_whole(f)
        self.assertLess(self.daemon_read_bytes() - b1, size // 4, "kernel: cached again")
        s = stats(self.mnt)
        self.assertEqual(s["cache"]["policy"], "kernel")
        self.assertIn("dliofs set", s["cache"]["origin"])

    def test_effective_config_follows_set(self):
        dliofs("set", self.mnt, "meta.latency=3ms")
        try:
            with open(os.path.join(self.mnt, ".dliofs", "config.yaml")) as f:
                text = f.read()
            self.assertIn("latency: 3ms", text)
            self.assertIn("in force now", text)
        finally:
            dliofs("set", self.mnt, "meta.latency=none")


class DeviceModel(dltest.MountedTestCase):
    """A device model (what dliofs profile fits) through the mount: a throttle
    refilled in 100 ms slices gives reads at the device's service time and
    a stall per slice, at the bucket's long-run rate, as Linux blk-throttle
    does; a what-if on the bandwidth moves the rate and keeps the service
    time (the tables model replayed the stalls as latency draws and kept
    them: 110 MB/s where the disk throttled at 150 MB/s gives 150)."""
    GEN = False
    CONFIG = """\
seed: 3
datasets:
  - {name: d, format: raw, files: 2, sample_size: 256MiB}
pacer:
  read: {transfer: 1GB/s, latency: 200us, queue_depth: 4, lanes: 1,
         bandwidth: 40MB/s, refill: 100ms}
cache: {policy: none}
"""

    def run_reads(self, secs):
        root = os.path.join(self.mnt, "d", "train")
        path = os.path.join(root, sorted(os.listdir(root))[0])
        fd = os.open(path, os.O_RDONLY)
        lat, off, t0 = [], 0, time.monotonic()
        try:
            while time.monotonic() - t0 < secs:
                a = time.monotonic()
                n = len(os.pread(fd, MiB, off))
                lat.append(time.monotonic() - a)
                off += n
        finally:
            os.close(fd)
        el = time.monotonic() - t0
        lat.sort()
        return off / el, lat[len(lat) // 2], lat[int(len(lat) * 0.99)]

    def test_slices_and_whatif(self):
        rate, p50, p99 = self.run_reads(2.5)
        self.assertLess(abs(rate / 40e6 - 1), 0.12, "%.1f MB/s under a 40 MB/s bucket" % (rate / 1e6))
        # 1 MiB at 1 GB/s plus 200 us (the kernel may split the read: a fixed
        # cost each): a few ms, not the 26 ms a continuous bucket would give.
        self.assertLess(p50, 0.008, "p50 %.2f ms: the service time, not the throttle" % (p50 * 1e3))
        self.assertGreater(p99, 0.040, "p99 %.1f ms: the wait for the next slice" % (p99 * 1e3))
        dliofs("set", self.mnt, "read.bandwidth=80MB/s")
        rate2, p50b, _ = self.run_reads(2.5)
        self.assertLess(abs(rate2 / 80e6 - 1), 0.12, "%.1f MB/s after the what-if" % (rate2 / 1e6))
        self.assertLess(abs(p50b / p50 - 1), 0.5,
                        "the service time stays: p50 %.2f ms, was %.2f" % (p50b * 1e3, p50 * 1e3))
        st = dliofs("check", self.config).stdout
        self.assertIn("a byte bucket of 40.0 MB/s (read.bandwidth)", st)
        self.assertIn("refilled in lumps every 100 ms (read.refill", st)


class SmallFileCache(dltest.MountedTestCase):
    """CoorDL's result on ImageNet-like files with the default 1 MiB block: a
    cache of half the dataset holds half of the files. MinIO hits what it
    holds, within 2 points; LRU thrashes far under 50%."""
    GEN = False
    MOUNT = False
    TEMPLATE = """\
seed: 5
datasets:
  - {name: img, format: jpeg, files: 400, classes: 8, sample_size: 110000, width: 160, height: 120}
pacer: {read: {latency: 20us}}
cache: {policy: %s, size: %d}
"""
    FILES = 400
    FSIZE = 110000
    CONFIG = "datasets: []\n"

    def epochs(self, policy, n=3):
        cfg = dltest.write_config(self.tmp, self.TEMPLATE % (policy, self.FILES * self.FSIZE // 2),
                                  name="%s.yaml" % policy)
        ratios = []
        with dltest.mounted(cfg) as mnt:
            top = os.path.join(mnt, "img", "train")
            files = sorted(os.path.join(top, f) for f in dltest.walk_files(top))
            self.assertEqual(len(files), self.FILES)
            rng = random.Random(11)
            for _ in range(n):
                rng.shuffle(files)
                c0 = stats(mnt)["classes"]["read"]["cache"]
                for f in files:
                    with open(f, "rb") as fh:
                        self.assertEqual(len(fh.read()), self.FSIZE)
                c1 = stats(mnt)["classes"]["read"]["cache"]
                hit = c1["hit_bytes"] - c0["hit_bytes"]
                miss = c1["miss_bytes"] - c0["miss_bytes"]
                ratios.append(hit / (hit + miss))
            held = stats(mnt)["cache"]["resident_blocks"] / self.FILES
        return ratios, held

    def test_coordl_result(self):
        minio, held = self.epochs("minio")
        lru, _ = self.epochs("lru")
        print("small files, cache = half: minio %s (holds %.3f), lru %s" % (
            ["%.3f" % r for r in minio], held, ["%.3f" % r for r in lru]))
        self.assertGreater(held, 0.45, "MinIO holds %.3f of the files" % held)
        for r in minio[1:]:
            self.assertLess(abs(r - held), 0.02, "MinIO hit %.3f vs held %.3f" % (r, held))
        for r in lru[1:]:
            self.assertLess(r, 0.35, "LRU %.3f is not far under 50%%" % r)


JOB_SCRIPT = textwrap.dedent("""\
    import os, sys, torch
    from torch.utils.data import Dataset, DataLoader
    root = sys.argv[1]
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs)
    class DS(Dataset):
        def __len__(self):
            return len(files)
        def __getitem__(self, i):
            with open(files[i], "rb") as f:
                return torch.tensor(len(f.read()))
    n = 0
    for b in DataLoader(DS(), batch_size=4, num_workers=2):
        n += int(b.sum())
    print(n)
""")


class Jobs(dltest.MountedTestCase):
    """A training job is one row, whatever its processes and threads; the
    trace records the client's process, thread and job."""
    GEN = False
    CONFIG = """\
seed: 7
datasets:
  - {name: d, format: raw, files: 24, samples_per_file: 2, sample_size: 64KiB}
"""

    def test_dataloader_job_is_one_row(self):
        script = os.path.join(self.tmp, "train_job.py")
        with open(script, "w") as f:
            f.write(JOB_SCRIPT)
        dliofs("stat", self.mnt, "--reset")
        trace = os.path.join(self.tmp, "job.trace")
        dliofs("trace", "start", self.mnt, trace)
        # Its own process group, as a shell gives each command line.
        r = subprocess.run([PY, script, os.path.join(self.mnt, "d")],
                           capture_output=True, text=True, timeout=300, start_new_session=True)
        dliofs("trace", "stop", self.mnt)
        self.assertEqual(r.returncode, 0, r.stderr)
        total = 24 * 2 * 64 * 1024
        self.assertEqual(int(r.stdout), total)
        s = stats(self.mnt)
        jobs = [j for j in s["jobs"] if "train_job.py" in j["name"]]
        self.assertEqual(len(jobs), 1, json.dumps(s["jobs"], indent=1))
        job = jobs[0]
        self.assertGreaterEqual(job["classes"]["read"]["bytes"], total)
        # The DataLoader's two workers read; the main process lists the tree.
        self.assertGreaterEqual(job["processes"], 3, job)
        others = sum(j["classes"]["read"]["bytes"] for j in s["jobs"] if j is not job)
        self.assertEqual(others, 0, "reads counted outside the job")
        out = dliofs("stat", self.mnt).stdout
        self.assertIn("train_job.py", out)
        # The trace: the job's id on every record, its processes and threads.
        summ = json.loads(subprocess.run([DLIO_TRACE, "summary", trace, "--json"],
                                         capture_output=True, text=True, check=True).stdout)
        tjobs = [j for j in summ["jobs"] if "train_job.py" in j["name"]]
        self.assertEqual(len(tjobs), 1, summ["jobs"])
        self.assertGreaterEqual(tjobs[0]["processes"], 3)
        self.assertEqual(tjobs[0]["read_bytes"], total)
        self.assertEqual(tjobs[0]["opens"], tjobs[0]["releases"])

    def test_dliofs_job_variable(self):
        """Processes that share DLIOFS_JOB are one job, whatever their groups."""
        dliofs("cache", "drop", self.mnt)  # earlier tests read these files
        env = dict(os.environ, DLIOFS_JOB="sweep-point-7")
        code = "import sys; open(sys.argv[1], 'rb').read()"
        for i in range(3):
            subprocess.run([PY, "-c", code,
                            os.path.join(self.mnt, "d", "train", "img_%02d_of_24.raw" % (i + 5))],
                           env=env, check=True, start_new_session=True)
        jobs = [j for j in stats(self.mnt)["jobs"] if j["name"] == "sweep-point-7"]
        self.assertEqual(len(jobs), 1)
        self.assertEqual(jobs[0]["processes"], 3)
        self.assertEqual(jobs[0]["classes"]["read"]["bytes"], 3 * 2 * 64 * 1024)

    def test_control_traffic_is_no_job(self):
        dliofs("stat", self.mnt, "--reset")
        for _ in range(5):
            dliofs("stat", self.mnt)
            dliofs("set", self.mnt, "meta.latency=none")
        s = stats(self.mnt)
        self.assertEqual(s["jobs"], [], "control traffic counted as a job")
        for c in ("read", "write", "meta"):
            self.assertEqual(s["classes"][c]["ops"] + s["classes"][c]["nodev_ops"], 0, c)


class TracePairs(dltest.MountedTestCase):
    """Every answer goes through one path: opens and releases pair up one to
    one in the trace, refusals are traced, the control files are not."""
    GEN = False
    CONFIG = """\
seed: 8
datasets:
  - {name: d, format: npy, files: 30, samples_per_file: 2, shape: [32, 32]}
"""

    def test_opens_and_releases(self):
        trace = os.path.join(self.tmp, "pairs.trace")
        dliofs("trace", "start", self.mnt, trace)
        top = os.path.join(self.mnt, "d")
        files = sorted(os.path.join(top, f) for f in dltest.walk_files(top))
        for f in files:
            read_whole(f)
        try:
            open(files[0], "r+b")
        except OSError as e:
            self.assertEqual(e.errno, 30)  # EROFS, traced as an open
        dliofs("stat", self.mnt)  # control traffic: not in the trace
        dliofs("trace", "stop", self.mnt)
        summ = json.loads(subprocess.run([DLIO_TRACE, "summary", trace, "--json",
                                          "--top", "0"],
                                         capture_output=True, text=True, check=True).stdout)
        ops = summ["ops"]
        self.assertEqual(ops["open"]["count"], len(files) + 1, ops)
        self.assertEqual(ops["open"]["errors"], 1)
        self.assertEqual(ops["release"]["count"], len(files), ops)
        names = [f["file"] for f in summ["top_files"]]
        self.assertFalse([n for n in names if ".dliofs" in n], names)
        # Each file: one open, one release, all of its bytes.
        csv = subprocess.run([DLIO_TRACE, "export", "--csv", trace], capture_output=True,
                             text=True, check=True).stdout.splitlines()
        head = csv[0].split(",")
        per = {}
        for line in csv[1:]:
            row = dict(zip(head, line.split(",")))
            if row["op"] in ("open", "release") and row["error"] == "0":
                per.setdefault(row["file"], []).append(row["op"])
        self.assertEqual(len(per), len(files))
        for f, seq in per.items():
            self.assertEqual(seq, ["open", "release"], f)


class TraceDiskFull(dltest.MountedTestCase):
    """A trace on a disk that fills: the log says so when it happens, the
    stop succeeds, the file keeps its names and footer, and the counts in
    the file, the daemon and dlio-trace agree."""
    GEN = False
    # Every read reaches the daemon (no page cache): many records quickly.
    CONFIG = """\
seed: 10
io: direct
datasets:
  - {name: d, format: raw, files: 50, sample_size: 4KiB}
"""

    def test_full_disk(self):
        dltest.require(os.geteuid() == 0, "mounting a small tmpfs needs root")
        disk = os.path.join(self.tmp, "small")
        os.mkdir(disk)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", disk], check=True)
        self.addCleanup(subprocess.run, ["umount", "-l", disk])
        trace = os.path.join(disk, "t.trace")
        dliofs("trace", "start", self.mnt, trace)
        f = os.path.join(self.mnt, "d", "train", "img_07_of_50.raw")
        fd = os.open(f, os.O_RDONLY)
        try:
            # ~56 bytes a record: 2 MB fill with well under 100k reads.
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                for _ in range(5000):
                    os.pread(fd, 512, 0)
                with open(os.path.join(self.mnt, ".dliofs", "trace")) as c:
                    if "disk full" in c.read():
                        break
        finally:
            os.close(fd)
        with open(os.path.join(self.mnt, ".dliofs", "trace")) as c:
            self.assertIn("disk full", c.read())
        r = dliofs("trace", "stop", self.mnt)
        self.assertIn("disk full", r.stderr)
        with open(os.path.join(self.tmp, "daemon.log")) as lg:
            log = lg.read()
        self.assertIn("the disk is full after", log)
        self.assertIn("(the disk was full)", log)
        summ = json.loads(subprocess.run([DLIO_TRACE, "summary", trace, "--json"],
                                         capture_output=True, text=True, check=True).stdout)
        with open(os.path.join(self.mnt, ".dliofs", "trace")) as c:
            last = [ln for ln in c.read().splitlines() if ln.startswith("last ")][0]
        written = int(last.split(": ")[1].split(" records")[0])
        self.assertEqual(summ["records"], written)
        self.assertGreater(summ["dropped"], 0)
        self.assertIn("d/train/img_07_of_50.raw", [x["file"] for x in summ["top_files"]])


class ControlTransactions(dltest.MountedTestCase):
    """A control write is all of it or none of it, with the reason."""
    GEN = False
    CONFIG = """\
seed: 9
datasets:
  - {name: d, format: raw, files: 4, sample_size: 64KiB}
"""

    def pacer(self):
        with open(os.path.join(self.mnt, ".dliofs", "pacer")) as f:
            return f.read()

    def test_large_write_is_one_transaction(self):
        before = self.pacer()
        # 1.5 MiB of valid settings, then a bad one: the kernel splits the
        # write into pieces, none of which may apply.
        good = "read.iops=7\n" * (3 * MiB // 2 // 12)
        fd = os.open(os.path.join(self.mnt, ".dliofs", "pacer"), os.O_RDWR)
        # Gathered whole (never a short count), judged at fsync.
        n = os.write(fd, (good + "read.bandwdith=1GB/s\n").encode())
        self.assertEqual(n, len(good) + 21)
        with self.assertRaises(OSError) as cm:
            os.fsync(fd)
        self.assertEqual(cm.exception.errno, 22)
        reason = os.pread(fd, 4096, 0).decode()
        with self.assertRaises(OSError) as cm:  # the refusal sticks to the open file
            os.close(fd)
        self.assertEqual(cm.exception.errno, 22)
        self.assertIn("read.bandwdith", reason)
        self.assertEqual(self.pacer(), before, "part of a refused write was applied")
        # The same through the CLI: 65,000 settings (1.2 MB), all or none.
        pairs = ["read.iops=%d" % (1000000 + i) for i in range(65000)]
        r = dliofs("set", self.mnt, *pairs)
        self.assertIn("iops: 1064999", self.pacer())
        r = dliofs("set", self.mnt, *(pairs + ["cache.policy=lru"]), check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("cache.size", r.stderr)
        self.assertIn("iops: 1064999", self.pacer())
        dliofs("set", self.mnt, "read.iops=unlimited")

    def test_empirical_file_must_be_regular(self):
        """A live write naming a FIFO or a device is refused at once, and the
        control plane goes on answering (it used to hang or grow by GBs)."""
        fifo = os.path.join(self.tmp, "lat.fifo")
        os.mkfifo(fifo)
        for path, why in ((fifo, "not a regular file"), ("/dev/zero", "not a regular file")):
            t0 = time.monotonic()
            r = dliofs("set", self.mnt, "read.latency=empirical(%s)" % path, check=False)
            self.assertLess(time.monotonic() - t0, 10)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn(why, r.stderr)
        good = os.path.join(self.tmp, "lat.txt")
        with open(good, "w") as f:
            f.write("100us\n200us 3\n")
        dliofs("set", self.mnt, "read.latency=empirical(%s)" % good)
        self.assertIn("empirical(%s)" % good, self.pacer())
        dliofs("set", self.mnt, "read.latency=none")

    def test_nul_byte_refused(self):
        before = self.pacer()
        with self.assertRaises(OSError) as cm:
            with open(os.path.join(self.mnt, ".dliofs", "pacer"), "wb") as f:
                f.write(b"read.iops=5\0read.iops=9\n")
        self.assertEqual(cm.exception.errno, 22)
        self.assertEqual(self.pacer(), before)

    def test_trace_commands(self):
        ctl = os.path.join(self.mnt, ".dliofs", "trace")
        a = os.path.join(self.tmp, "a.trace")
        b = os.path.join(self.tmp, "b.trace")
        with self.assertRaises(OSError) as cm:
            with open(ctl, "w") as f:
                f.write("start %s\nstart %s\n" % (a, b))
        self.assertEqual(cm.exception.errno, 22)
        with open(ctl) as f:
            self.assertTrue(f.read().startswith("off"), "half of a refused write applied")
        self.assertFalse(os.path.exists(a))
        spaced = os.path.join(self.tmp, "x open")
        dliofs("trace", "start", self.mnt, spaced)
        read_whole(os.path.join(self.mnt, "d", "train", "img_1_of_4.raw"))
        dliofs("trace", "stop", self.mnt)
        self.assertTrue(os.path.exists(spaced))
        summ = json.loads(subprocess.run([DLIO_TRACE, "summary", spaced, "--json"],
                                         capture_output=True, text=True, check=True).stdout)
        self.assertGreater(summ["ops"]["read"]["count"], 0, "ops were taken from the path")
        r = dliofs("trace", "stop", self.mnt, check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("no trace is running", r.stderr)


class ModelDefaults(dltest.MountedTestCase):
    """With a storage model the page cache is off unless the storage's client
    cache is stated; an emulated cache needs its size; warm needs a cache."""
    GEN = False
    MOUNT = False
    CONFIG = "datasets: []\n"

    def check(self, text):
        cfg = dltest.write_config(self.tmp, text, name="c%d.yaml" % random.randrange(1 << 30))
        return subprocess.run([dltest.DLIOFS, "check", cfg], capture_output=True, text=True), cfg

    def test_defaults_and_refusals(self):
        ds = "datasets:\n  - {name: d, format: raw, files: 2, sample_size: 64KiB}\n"
        r, _ = self.check("pacer: {read: {bandwidth: 100MB/s}}\n" + ds)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("policy: none", r.stdout)
        self.assertIn("default with a storage model", r.stdout)
        r, _ = self.check("pacer: {profile: nfs-10g}\n" + ds)
        self.assertIn("policy: lru", r.stdout)
        self.assertIn("size: 64GiB", r.stdout)
        self.assertIn("profile nfs-10g", r.stdout)
        r, _ = self.check("pacer: {profile: nfs-10g}\ncache: none\n" + ds)
        self.assertIn("policy: none", r.stdout)
        r, _ = self.check(ds)
        self.assertIn("policy: kernel", r.stdout)
        r, cfg = self.check("cache: {policy: lru}\n" + ds)
        self.assertEqual(r.returncode, 2)
        self.assertIn(cfg + ":1:8: ", r.stderr)
        self.assertIn("cache.size", r.stderr)
        r, _ = self.check("cache: {size: 8MiB}\n" + ds)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("policy: lru", r.stdout)

    def test_warm_needs_a_cache(self):
        cfg = dltest.write_config(self.tmp, "pacer: {read: {latency: 1ms}}\ndatasets:\n"
                                  "  - {name: d, format: raw, files: 2, sample_size: 64KiB}\n",
                                  name="warm.yaml")
        with dltest.mounted(cfg) as mnt:
            r = dliofs("cache", "warm", mnt, "d/train", check=False)
            self.assertEqual(r.returncode, 1)
            self.assertIn("cache policy is none", r.stderr)
            dliofs("set", mnt, "cache.policy=minio", "cache.size=1MiB")
            dliofs("cache", "warm", mnt, "d/train")


class FairShare(dltest.MountedTestCase):
    """Two jobs of different demand on one device: fcfs gives the job with
    more requests in flight more; fair halves it."""
    GEN = False
    MOUNT = False
    TEMPLATE = """\
seed: 4
datasets:
  - {name: d, format: raw, files: 16, samples_per_file: 64, sample_size: 1MiB}
pacer: {read: {bandwidth: 40MB/s}, share: {policy: %s}}
"""
    CONFIG = "datasets: []\n"

    def race(self, policy):
        cfg = dltest.write_config(self.tmp, self.TEMPLATE % policy, name="%s.yaml" % policy)
        code = textwrap.dedent("""\
            import os, sys, threading, time
            files, nthreads, secs = sys.argv[1:-2], int(sys.argv[-2]), float(sys.argv[-1])
            got = [0] * nthreads
            end = time.monotonic() + secs
            def run(k):
                fd = os.open(files[k], os.O_RDONLY)
                off = 0
                while time.monotonic() < end:
                    b = os.pread(fd, 1 << 20, off)
                    off = (off + len(b)) % (64 << 20)
                    got[k] += len(b)
            ts = [threading.Thread(target=run, args=(k,)) for k in range(nthreads)]
            [t.start() for t in ts]
            [t.join() for t in ts]
            print(sum(got) / secs)
        """)
        with dltest.mounted(cfg) as mnt:
            tr = os.path.join(mnt, "d", "train")
            procs = []
            for name, k0, n in (("heavy", 0, 6), ("light", 8, 1)):
                files = [os.path.join(tr, "img_%02d_of_16.raw" % (k0 + i)) for i in range(n)]
                env = dict(os.environ, DLIOFS_JOB=name)
                procs.append(subprocess.Popen([PY, "-c", code] + files + [str(n), "4"],
                                              env=env, stdout=subprocess.PIPE, text=True))
            rates = [float(p.communicate(timeout=120)[0]) for p in procs]
        print("%s: heavy %.1f MB/s, light %.1f MB/s" % (policy, rates[0] / 1e6, rates[1] / 1e6))
        return rates

    def test_fcfs_and_fair(self):
        heavy, light = self.race("fcfs")
        self.assertGreater(heavy, 2.5 * light, "fcfs: the job with more in flight gets more")
        self.assertLess(abs((heavy + light) / 40e6 - 1), 0.10)
        heavy, light = self.race("fair")
        self.assertLess(abs(heavy / light - 1), 0.25, "fair: %.1f vs %.1f MB/s" % (heavy / 1e6,
                                                                                 light / 1e6))
        self.assertLess(abs((heavy + light) / 40e6 - 1), 0.10)


class FairPause(dltest.MountedTestCase):
    """Issue #22: under fair sharing, a job that reads a small file, pauses
    150 ms and reads again while another job reads without a pause had its
    second read timed at 1 B/s (30 hours) and hung."""
    GEN = False
    CONFIG = """\
seed: 5
datasets:
  - {name: big, format: raw, files: 4, samples_per_file: 64, sample_size: 1MiB}
  - {name: small, format: raw, files: 40, samples_per_file: 1, sample_size: 110000}
pacer: {read: {bandwidth: 40MB/s}, share: {policy: fair}}
"""
    HEAVY = textwrap.dedent("""\
        import os, sys, threading, time
        files, end = sys.argv[1:-1], time.monotonic() + float(sys.argv[-1])
        def run(path):
            fd = os.open(path, os.O_RDONLY)
            off = 0
            while time.monotonic() < end:
                off = (off + len(os.pread(fd, 1 << 20, off))) % (64 << 20)
        ts = [threading.Thread(target=run, args=(f,)) for f in files]
        [t.start() for t in ts]
        [t.join() for t in ts]
    """)
    LIGHT = textwrap.dedent("""\
        import os, sys, time
        worst = 0
        for k, path in enumerate(sys.argv[1:]):
            t = time.monotonic()
            with open(path, "rb") as f:
                n = len(f.read())
            assert n == 110000, n
            worst = max(worst, time.monotonic() - t)
            print("read %d: %.3f s" % (k, time.monotonic() - t), flush=True)
            # The pause that let its reads roll out of the window, at a
            # different phase of the half windows each time.
            time.sleep(0.150 + 0.007 * k)
        print("worst %.3f" % worst)
    """)

    def test_second_read_answered(self):
        big = os.path.join(self.mnt, "big", "train")
        small = os.path.join(self.mnt, "small", "train")
        heavy = subprocess.Popen(
            [PY, "-c", self.HEAVY] + [os.path.join(big, "img_%d_of_4.raw" % i) for i in range(4)]
            + ["12"], env=dict(os.environ, DLIOFS_JOB="heavy"), start_new_session=True)
        try:
            time.sleep(0.5)
            files = [os.path.join(small, "img_%02d_of_40.raw" % i) for i in range(12)]
            light = subprocess.Popen([PY, "-c", self.LIGHT] + files, stdout=subprocess.PIPE,
                                     text=True, env=dict(os.environ, DLIOFS_JOB="light"),
                                     start_new_session=True)
            try:
                out = light.communicate(timeout=60)[0]
            except subprocess.TimeoutExpired:
                # Its read never returns: only the daemon's end frees it.
                kill_daemon(self.mnt)
                light.kill()
                out = light.communicate(timeout=30)[0]
                self.fail("the light job's reads were not answered in 60 s:\n" + out)
        finally:
            heavy.kill()
            heavy.wait(timeout=30)
        self.assertEqual(light.returncode, 0, out)
        worst = float(out.split("worst ")[1])
        print("fair pause: the slowest read of the light job %.3f s" % worst)
        # At its share (20 MB/s) a read takes 6 ms: 2 s is room for a
        # loaded machine, and far from the hang.
        self.assertLess(worst, 2.0, out)


if __name__ == "__main__":
    dltest.main()
