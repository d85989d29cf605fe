"""dliofs profile: a profile of a real directory that the config loader
takes (pacer: {profile: ./x.yaml}, its latency tables beside it), nothing
of the user's touched, the probe removed (also when interrupted), bounded
time, clear refusals; and the mount running on what it wrote."""
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))  # tests/: dltest
import dltest  # noqa: E402

DLIOFS = dltest.DLIOFS
BYPASS = ("direct", "fadvise", "drop_caches", "large_files", "none")


def profile(*args, timeout=120):
    return subprocess.run([DLIOFS, "profile"] + list(args), capture_output=True, text=True,
                          timeout=timeout)


def snapshot(d):
    """Every name under d with its size, mtime and content hash."""
    out = {}
    for root, dirs, files in os.walk(d):
        for n in dirs + files:
            p = os.path.join(root, n)
            st = os.lstat(p)
            data = b""
            if os.path.isfile(p):
                with open(p, "rb") as f:
                    data = f.read()
            out[os.path.relpath(p, d)] = (st.st_size, st.st_mtime_ns, hash(data))
    return out


def max_sectors_kb(path):
    """queue/max_sectors_kb of the disk path is on (a partition's disk), 0: none."""
    st = os.stat(path)
    if not os.major(st.st_dev):
        return 0
    d = os.path.realpath("/sys/dev/block/%d:%d" % (os.major(st.st_dev), os.minor(st.st_dev)))
    if os.path.exists(os.path.join(d, "partition")):
        d = os.path.dirname(d)
    try:
        with open(os.path.join(d, "queue", "max_sectors_kb")) as f:
            return int(f.read())
    except OSError:
        return 0


def size_name(b):
    for unit, n in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b % n == 0:
            return "%d%s" % (b // n, unit)
    return "%dB" % b


class Profile(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="dliofs-profile-test-", dir="/var/tmp")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, True)
        # The user's directory, with a file of their own in it.
        cls.data = os.path.join(cls.tmp, "data")
        os.makedirs(os.path.join(cls.data, "sub"))
        with open(os.path.join(cls.data, "sub", "mine.bin"), "wb") as f:
            f.write(os.urandom(8 << 20))
        cls.before = snapshot(cls.data)
        cls.out = os.path.join(cls.tmp, "out", "mystorage.yaml")
        os.makedirs(os.path.dirname(cls.out))
        t = time.monotonic()
        cls.r = profile(cls.data, "-o", cls.out, "--time", "5s", "--probe-size", "64MiB")
        cls.took = time.monotonic() - t

    def test_runs_and_summarizes(self):
        self.assertEqual(self.r.returncode, 0, self.r.stderr)
        out = self.r.stdout
        self.assertIn("MB/s", out)
        self.assertIn("p99", out)
        for what in ("read  4KiB    1", "read  1MiB    4", "write 4KiB    1", "stat", "stat, cached",
                     "open+close", "readdir", "fsync"):
            self.assertIn(what, out)
        self.assertIn("wrote %s" % self.out, out)
        # No progress line: stderr is not a terminal here.
        self.assertNotIn("dliofs profile: [", self.r.stderr)

    def test_progress_on_a_terminal(self):
        # stderr a terminal: one line rewritten in place (\r) per step.
        out = os.path.join(self.tmp, "tty.yaml")
        rc, _, text = dltest.run_on_pty([DLIOFS, "profile", self.data, "-o", out, "--time", "2s",
                                         "--probe-size", "16MiB", "--keep-caches"],
                                        stdout=subprocess.DEVNULL)
        self.assertEqual(rc, 0, text[-2000:])
        self.assertRegex(text, r"\rdliofs profile: \[ *\d+\.\ds/2s\] read 4KiB x1 random")
        self.assertIn("done", text)
        for name in os.listdir(os.path.dirname(out)):
            if name.startswith("tty."):
                os.unlink(os.path.join(os.path.dirname(out), name))

    def test_bounded_time(self):
        # 5 s asked; metadata passes and cleanup may run over a little.
        self.assertLess(self.took, 5 * 1.5 + 10, self.r.stderr)

    def test_user_files_untouched_probe_removed(self):
        self.assertEqual(snapshot(self.data), self.before)
        self.assertFalse([n for n in os.listdir(self.data) if n.startswith(".dliofs-profile")])

    def test_profile_content(self):
        with open(self.out) as f:
            text = f.read()
        for key in ("measured:", "directory: \"%s\"" % os.path.realpath(self.data),
                    "filesystem:", "date:", "cache_bypass:", "cache_bypass_how:", "requests:",
                    "pacer:", "cache: {policy: none}"):
            self.assertIn(key, text)
        m = re.search(r"cache_bypass: (\w+)", text)
        self.assertIn(m.group(1), BYPASS)
        # A new profile is a device model, not latency tables.
        self.assertNotIn("latency_by_size", text)
        self.assertNotIn("bandwidth_by_concurrency", text)
        pacer = text[text.index("\npacer:"):]
        for cls in ("read", "write"):
            sec = pacer[pacer.index("  %s:" % cls):]
            for key in ("latency: ", "transfer: ", "queue_depth: ", "bandwidth: ", "iops: "):
                self.assertRegex(sec, r"\n    %s\S" % key, (cls, key, sec[:800]))
            self.assertRegex(sec, r"transfer: [\d.]+MB/s")
        # Goodness of fit said out loud: every point measured carries what
        # the fitted model gives for the same pattern.
        reqs = re.findall(r"^    - \{op: (\w+), .*\}$", text, re.M)
        self.assertGreaterEqual(len(reqs), 6 + 4, text)
        for ln in re.findall(r"^    - \{op: .*\}$", text, re.M):
            # A failed point, or one a cache served (faster than the
            # device can be), has no model figures.
            if "error:" in ln or "left_out: too_fast" in ln:
                continue
            self.assertRegex(ln, r"time: [\d.]+s, requests: \d+, MBps: [\d.]+, ")
            self.assertRegex(ln, r", model: \{MBps: [\d.]+, iops: \d+, p50: [\d.]+[mu]?s, "
                                 r"p99: [\d.]+[mu]?s\}\}$")
        # Metadata: a first touch (caches dropped) and a touch of an inode
        # the client has (the same names again).
        self.assertRegex(text, r'meta: \{latency: "empirical\([^)]*meta-stat\.lat\)", '
                               r'cached_latency: "empirical\([^)]*meta-stat-cached\.lat\)"'
                               r'(, device_ios: [\d.]+)?(, readdir_ios: [\d.]+)?\}')
        # The device reads a first touch cost (inode and directory blocks),
        # counted on the block device while the cold passes ran: measured
        # where the caches are dropped (root) and there is a block device.
        m = re.search(r"device_ios: ([\d.]+)[,}]", text)
        if os.geteuid() == 0 and max_sectors_kb(self.data):
            self.assertIsNotNone(m, text)
            self.assertTrue(0 <= float(m.group(1)) <= 64, m.group(1))
            self.assertIn("# meta.device_ios, readdir_ios: ", text)
            m = re.search(r"readdir_ios: ([\d.]+)\}", text)
            self.assertIsNotNone(m, text)
            self.assertTrue(0 <= float(m.group(1)) <= 64, m.group(1))
            self.assertRegex(self.r.stdout, r"device reads per cold stat or open: [\d.]+")
        self.assertRegex(text, r"stat_cached: \{n: \d+")
        # The block size its files report (what buffered readers size reads by).
        self.assertRegex(text, r"\n  blksize: %d\n" % os.stat(self.data).st_blksize)
        # The largest request of the block device below (sysfs), which the
        # pieces of a read merge up to on the mount; none on a network or
        # FUSE file system.
        kb = max_sectors_kb(self.data)
        for cls in ("read", "write"):
            sec = pacer[pacer.index("  %s:" % cls):]
            if kb:
                self.assertRegex(sec, r"\n    max_request: %s " % size_name(kb * 1024), sec[:900])
            else:
                self.assertIn("# max_request: not measured", sec)
        tables = re.findall(r'"empirical\(([^)]+)\)"', text)
        self.assertEqual(len(tables), 2, text)  # the metadata's stat tables
        for t in tables:
            path = os.path.join(os.path.dirname(self.out), t)
            self.assertTrue(os.path.exists(path), path)
            with open(path) as f:
                lines = [ln for ln in f if not ln.startswith("#")]
            self.assertGreater(len(lines), 0, path)
            for ln in lines:
                self.assertRegex(ln, r"^\d+ns \d+$")

    def test_summary_says_the_fit(self):
        out = self.r.stdout
        self.assertIn("model: MB/s", out)
        self.assertRegex(out, r"read model: service [\d.]+[mu]s \+ [\d.]+us serial \+ size / [\d.]+ MB/s on ")
        self.assertIn("worst misfits (model / measured", out)
        self.assertRegex(out, r"\n    (read|write) +\d+[KM]iB +x\d+ +MB/s [\d.]+  p50 [\d.]+  p99 [\d.]+")

    def test_config_takes_it(self):
        # A config beside another directory names the profile by a relative
        # path; its tables resolve beside the profile, wherever we run from.
        cfgdir = os.path.join(self.tmp, "cfg")
        os.makedirs(cfgdir, exist_ok=True)
        cfg = dltest.write_config(cfgdir, "datasets: [{name: d, format: raw, files: 2, sample_size: 1MB}]\n"
                                  "pacer: {profile: ../out/mystorage.yaml, meta: {latency: 7us}}\n")
        r = subprocess.run([DLIOFS, "check", cfg], capture_output=True, text=True, cwd="/")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('profile: "mystorage"', r.stdout)
        # The device model, in the terms a what-if changes.
        self.assertIn("# a device model: a request leaves the throttle", r.stdout)
        self.assertRegex(r.stdout, r"its bytes at [\d.]+ MB/s \(read.transfer\)")
        self.assertIn("latency: 7us", r.stdout)  # the config's keys override the profile
        self.assertIn("policy: none", r.stdout)

    def test_check_replays_the_points(self):
        r = profile("--check", self.out)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(self.out) as f:
            npts = len(re.findall(r"^    - \{op: \w+, .*model: ", f.read(), re.M))
        rows = re.findall(r"^  (read|write) +\d+[KM]iB +\d+ +\| +[\d.]+ .*\| +[\d.]+ .*\| +"
                          r"([\d.]+) +([\d.]+) +([\d.]+)", r.stdout, re.M)
        self.assertEqual(len(rows), npts, r.stdout)
        m = re.search(r"(\d+) of (\d+) points within the goals", r.stdout)
        self.assertEqual(int(m.group(2)), npts, r.stdout)
        # The replay is the model the profile's model: figures came from
        # (the keys as written, rounded): the same MB/s, point by point.
        with open(self.out) as f:
            written = [float(x) for x in re.findall(r", model: \{MBps: ([\d.]+),", f.read())]
        replayed = [float(x) for x in re.findall(r"^  (?:read|write) .*?\| +[\d.]+ .*?\| +([\d.]+) ",
                                                  r.stdout, re.M)]
        self.assertEqual(len(written), len(replayed), r.stdout)
        for a, b in zip(written, replayed):
            self.assertLess(abs(b / a - 1) if a else b, 0.05, (written, replayed))
        # A file that is no profile is said so.
        bad = os.path.join(self.tmp, "notaprofile.yaml")
        with open(bad, "w") as f:
            f.write("pacer: {read: {bandwidth: 1MB/s}}\n")
        r = profile("--check", bad)
        self.assertEqual(r.returncode, 1)
        self.assertIn("no measured point", r.stderr)

    def test_refit(self):
        # A profile whose fit chose the wrong model: the points one 30 s
        # `dliofs profile --read-only` measured of this machine kind's disk
        # behind a 4000 IO/s blkio throttle (bench_fidelity's `iops`), with
        # the model the fit of that day gave them (a continuous IO bucket,
        # unlimited channels: every 4 KiB read waits 1/IOPS, p50 258 us for
        # 50). --refit fits the points again without measuring: the slice
        # refill, the IO bucket, the medians; nothing measured changes.
        pts = [  # size, clients, MB/s, IOPS, p50, p99 (as written)
            ("4KiB", 1, "15.840", 3867, "49.6us", "88.7us"), ("16KiB", 1, "63.468", 3874, "57.1us", "85.8us"),
            ("64KiB", 1, "253.932", 3875, "90.8us", "153.5us"),
            ("256KiB", 1, "1047.179", 3995, "223.3us", "319.4us"),
            ("1MiB", 1, "1299.209", 1239, "778.6us", "1.04ms"), ("4MiB", 1, "1243.907", 297, "3.30ms", "4.19ms"),
            ("4KiB", 2, "15.852", 3870, "60.2us", "134.3us"), ("4KiB", 4, "15.860", 3872, "77.9us", "704.5us"),
            ("4KiB", 8, "15.862", 3873, "92.7us", "94.2ms"), ("4KiB", 16, "15.861", 3872, "178.5us", "94.8ms"),
            ("4KiB", 32, "15.856", 3871, "307.9us", "96.0ms"), ("1MiB", 2, "1391.371", 1327, "1.48ms", "1.89ms"),
            ("1MiB", 4, "1259.688", 1201, "3.26ms", "4.13ms"), ("1MiB", 8, "1195.755", 1140, "6.92ms", "9.52ms"),
            ("1MiB", 16, "1044.342", 996, "15.9ms", "19.5ms"), ("1MiB", 32, "1070.668", 1021, "30.7ms", "52.0ms")]
        lines = ["    - {op: read, size: %s, clients: %d, pattern: %s, time: 1.249s, requests: 4800, "
                 "MBps: %s, iops: %d, p50: %s, p99: %s, model: {MBps: 15.872, iops: 3875, p50: 258.1us, "
                 "p99: 258.1us}}" % (sz, c, "random" if sz in ("4KiB", "16KiB") else "sequential", mb,
                                     io, p50, p99) for sz, c, mb, io, p50, p99 in pts]
        old_model = ("  read:\n    # throttle: bytes IOs, refilled continuously\n    latency: 45.5us\n"
                     "    transfer: 1395.278MB/s\n    queue_depth: unlimited\n    max_request: 4MiB"
                     "       # a device request's bytes at most (vda's max_sectors_kb): pieces of a read "
                     "merge up to it\n    bandwidth: 1203.536MB/s\n    iops: 3875\n")
        with open(self.out) as f:
            text = f.read()
        head, rest = text.split("  requests:\n", 1)
        rest = rest[rest.index("\n  meta:") + 1:] if "\n  meta:" in rest else rest[rest.index("pacer:"):]
        pacer = rest.index("pacer:\n")
        after = rest[pacer + 7:]
        # the class blocks of this profile out, the old one in
        kept = [ln for ln in after.split("\n")
                if not (ln.startswith("  read:") or ln.startswith("  write:") or ln.startswith("    "))]
        old = head + "  requests:\n" + "\n".join(lines) + "\n" + rest[:pacer + 7] + old_model + \
            "\n".join(kept)
        d = os.path.dirname(self.out)
        src, dst = os.path.join(d, "old.yaml"), os.path.join(d, "refit.yaml")
        for x in (src, dst):
            self.addCleanup(lambda x=x: os.path.exists(x) and os.unlink(x))
        with open(src, "w") as f:
            f.write(old)
        before = profile("--check", src)
        self.assertEqual(before.returncode, 0, before.stderr + old)
        r = profile("--refit", src, "-o", dst)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("read model: throttle: IOs, refilled in periods", r.stdout)
        with open(dst) as f:
            new = f.read()
        self.assertIn("# Refitted by dliofs profile --refit", new)
        self.assertIn("    refill: 100.0ms", new)
        iops = int(re.search(r"^    iops: (\d+) ", new, re.M).group(1))
        self.assertLess(abs(iops / 4000 - 1), 0.03, new)
        self.assertIn("vda's max_sectors_kb", new)  # kept, not fitted
        # What was measured is as it was, point by point; the rest too.
        strip = lambda t: [re.sub(r", model: \{.*\}\}$", "}", ln) for ln in t.split("\n")
                           if ln.startswith("    - {")]
        self.assertEqual(strip(old), strip(new))
        self.assertEqual(re.findall(r"^  meta: .*$", old, re.M), re.findall(r"^  meta: .*$", new, re.M))
        # The 4 KiB medians at 1-8 clients, the old model's 5-22x, now within 30%.
        model_p50 = re.findall(r"size: 4KiB, clients: (\d+), .*model: \{.*p50: ([\d.]+)us", new)
        for c, p50 in model_p50:
            meas = dict((str(c2), float(p[:-2])) for sz, c2, _, _, p, _ in pts if sz == "4KiB")[c]
            if int(c) <= 8:
                self.assertLess(abs(float(p50) / meas - 1), 0.30, (c, p50, meas))
        # --check's medians (model / measured), before and after.
        p50s = lambda out: [float(m) for m in re.findall(
            r"^  read .*\| +[\d.]+ +([\d.]+) +[\d.]+", out, re.M)]
        old_r, new_r = p50s(before.stdout), p50s(r.stdout)
        self.assertEqual(len(old_r), len(pts), before.stdout)
        self.assertEqual(len(new_r), len(pts), r.stdout)
        within = lambda v: sum(abs(x - 1) <= 0.20 for x in v)
        self.assertGreater(within(new_r), within(old_r), (old_r, new_r))
        miss = lambda v: sum(abs(math.log(x)) for x in v)
        self.assertLess(miss(new_r) * 3, miss(old_r), (old_r, new_r))
        # The refitted profile is one a mount takes.
        cfg = os.path.join(d, "refit-mount.yaml")
        self.addCleanup(os.unlink, cfg)
        with open(cfg, "w") as f:
            f.write("datasets: [{name: d, format: raw, files: 1, sample_size: 1MiB}]\n"
                    "pacer: {profile: ./refit.yaml}\n")
        c = subprocess.run([DLIOFS, "check", cfg], capture_output=True, text=True, timeout=60)
        self.assertEqual(c.returncode, 0, c.stderr + c.stdout)
        # In place, too.
        r = profile("--refit", dst, "-o", dst)
        self.assertEqual(r.returncode, 0, r.stderr)
        # Refusals: -o elsewhere (the tables are named relative to the
        # profile), no -o, a DIR with it, no points.
        other = tempfile.mkdtemp(prefix="dliofs-refit-", dir="/var/tmp")
        self.addCleanup(shutil.rmtree, other, True)
        r = profile("--refit", src, "-o", os.path.join(other, "x.yaml"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("must be in the directory of the profile", r.stderr)
        self.assertFalse(os.listdir(other))
        r = profile("--refit", src)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--refit PROFILE takes -o OUT.yaml", r.stderr)
        r = profile("--refit", src, "-o", dst, self.data)
        self.assertEqual(r.returncode, 2)
        bad = os.path.join(d, "nopoints.yaml")
        self.addCleanup(os.unlink, bad)
        with open(bad, "w") as f:
            f.write("pacer: {read: {bandwidth: 1MB/s}}\n")
        r = profile("--refit", bad, "-o", os.path.join(d, "never.yaml"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("no measured point", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(d, "never.yaml")))

    def test_check_leaves_out_a_cache_point(self):
        # A point the profile marked as a cache's (one client faster than
        # more clients got) is said and not counted by --check.
        with open(self.out) as f:
            text = f.read()
        # A point the profile did not leave out itself (this VM's host cache
        # may have made the 1 MiB one too fast already).
        lines = [ln for ln in re.findall(r"^    - \{op: read, size: 1MiB, clients: 1, .*$", text,
                                         re.M) if "left_out" not in ln]
        if not lines:
            lines = [ln for ln in re.findall(r"^    - \{op: read, size: 64KiB, clients: 1, .*$",
                                             text, re.M) if "left_out" not in ln]
        self.assertEqual(len(lines), 1, text)
        size = re.search(r"size: (\w+),", lines[0]).group(1)
        cut = re.sub(r", model: \{.*\}\}$", "}", lines[0]).replace("}", ", left_out: too_fast}")
        edited = os.path.join(os.path.dirname(self.out), "edited.yaml")
        with open(edited, "w") as f:
            f.write(text.replace(lines[0], cut))
        self.addCleanup(os.unlink, edited)
        a, b = profile("--check", self.out), profile("--check", edited)
        self.assertEqual(b.returncode, 0, b.stderr)
        self.assertRegex(b.stdout, r"read  %s +1 +\| +[\d.]+ MB/s: left out \(faster than the "
                                   r"device: a cache's\)" % size)
        n = [int(re.search(r"of (\d+) points within the goals", r.stdout).group(1)) for r in (a, b)]
        self.assertEqual(n[1], n[0] - 1, b.stdout)

    def test_points_read_on(self):
        # Each sequential point starts where the one before stopped, and a
        # point that read bytes read before in the run says so: the first
        # one never (nothing was read before it), and once the points have
        # read the 64 MiB probe twice over, some point must.
        with open(self.out) as f:
            text = f.read()
        self.assertIn("each point on from where the one before stopped", text)
        seq = re.findall(r"^    - \{op: read, size: (\w+), clients: (\d+), pattern: sequential, "
                         r"time: ([\d.]+)s, requests: \d+, MBps: ([\d.]+),(.*)$", text, re.M)
        self.assertGreaterEqual(len(seq), 4, text)
        self.assertNotIn("reread: earlier", seq[0][4], seq[0])
        read = sum(float(t) * float(mb) for _, _, t, mb, _ in seq)
        if read > 2 * 67.1:
            self.assertTrue(any("reread: " in x[4] for x in seq), (read, seq))

    def test_whatif_changes_one_part(self):
        # read.bandwidth on a fitted device is its byte bucket: the
        # service time (latency, transfer) stays as fitted.
        cfgdir = os.path.join(self.tmp, "cfg")
        os.makedirs(cfgdir, exist_ok=True)
        base = dltest.write_config(cfgdir, "datasets: [{name: d, format: raw, files: 2, sample_size: 1MB}]\n"
                                   "pacer: {profile: ../out/mystorage.yaml}\n", name="base.yaml")
        wif = dltest.write_config(cfgdir, "datasets: [{name: d, format: raw, files: 2, sample_size: 1MB}]\n"
                                  "pacer: {profile: ../out/mystorage.yaml, read: {bandwidth: 123MB/s}}\n",
                                  name="whatif.yaml")
        a = subprocess.run([DLIOFS, "check", base], capture_output=True, text=True)
        b = subprocess.run([DLIOFS, "check", wif], capture_output=True, text=True)
        self.assertEqual((a.returncode, b.returncode), (0, 0), a.stderr + b.stderr)
        self.assertIn("a byte bucket of 123.0 MB/s (read.bandwidth)", b.stdout)

        def part(text, key):
            sec = text[text.index("  read:"):text.index("  write:")]
            return re.search(r"\n    %s: (\S+)" % key, sec).group(1)
        for key in ("transfer", "latency", "queue_depth", "iops", "refill"):
            if key == "refill" and "refill:" not in a.stdout:
                continue
            self.assertEqual(part(a.stdout, key), part(b.stdout, key), key)

    def test_mount_runs_on_it(self):
        dltest.require(dltest.fuse_available(), "/dev/fuse not available")
        cfg = dltest.write_config(os.path.dirname(self.out),
                                  "datasets: [{name: d, format: raw, files: 2, sample_size: 4MiB}]\n"
                                  "pacer: {profile: ./mystorage.yaml}\n", name="mount.yaml")
        with dltest.mounted(cfg) as mnt:
            path = os.path.join(mnt, "d", "train")
            name = sorted(os.listdir(path))[0]
            with open(os.path.join(path, name), "rb") as f:
                self.assertEqual(len(f.read()), 4 << 20)
            st = subprocess.run([DLIOFS, "stat", mnt, "--json"], capture_output=True, text=True)
            self.assertIn('"mystorage"', st.stdout)


class Refusals(unittest.TestCase):
    def test_help(self):
        r = profile("--help")
        self.assertEqual(r.returncode, 0)
        for what in ("--read-only", "--time", "O_DIRECT", "probe", "pacer: {profile: ./OUT.yaml}"):
            self.assertIn(what, r.stdout)
        r = subprocess.run([DLIOFS, "--help"], capture_output=True, text=True)
        self.assertIn("dliofs profile DIR -o OUT.yaml", r.stdout)

    def test_bad_arguments(self):
        tmp = tempfile.mkdtemp(prefix="dliofs-profile-args-")
        self.addCleanup(shutil.rmtree, tmp, True)
        cases = [((tmp,), "-o OUT.yaml is required"),
                 ((tmp, "-o", "x.yaml", "--time", "0.5s"), "--time"),
                 ((tmp, "-o", "x.yaml", "--max-clients", "0"), "--max-clients"),
                 ((os.path.join(tmp, "nope"), "-o", "x.yaml"), "nope"),
                 ((tmp, tmp, "-o", "x.yaml"), "one DIR")]
        for args, msg in cases:
            r = profile(*args)
            self.assertEqual(r.returncode, 2, args)
            self.assertIn(msg, r.stderr, args)
        self.assertEqual(os.listdir(tmp), [])

    def test_unwritable_needs_read_only(self):
        # /proc takes no new directory, even from root.
        out = os.path.join(tempfile.mkdtemp(prefix="dliofs-profile-ro-"), "p.yaml")
        self.addCleanup(shutil.rmtree, os.path.dirname(out), True)
        r = profile("/proc/self", "-o", out, "--time", "2s")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("cannot write in", r.stderr)
        self.assertIn("--read-only", r.stderr)
        self.assertFalse(os.path.exists(out))

    def test_read_only(self):
        tmp = tempfile.mkdtemp(prefix="dliofs-profile-ro-", dir="/var/tmp")
        self.addCleanup(shutil.rmtree, tmp, True)
        data = os.path.join(tmp, "data")
        os.makedirs(os.path.join(data, "a"))
        for i in range(20):
            with open(os.path.join(data, "a", "f%02d" % i), "wb") as f:
                f.write(os.urandom((1 << 20) + 4096 * i))
        before = snapshot(data)
        out = os.path.join(tmp, "ro.yaml")
        r = profile(data, "-o", out, "--read-only", "--time", "3s", "--keep-caches")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(snapshot(data), before)
        with open(out) as f:
            text = f.read()
        self.assertIn("the files already in the directory (read-only)", text)
        self.assertIn("  read:", text)
        self.assertNotIn("  write:", text)
        self.assertNotIn("op: write", text)
        self.assertIn("caches: kept", text)
        # 4 MiB reads need a file of 4 MiB: there is none, so that point
        # says why and is left out of the model.
        self.assertIn("size: 4MiB, clients: 1", text)
        self.assertNotIn("4MiB: \"empirical", text)

    def test_interrupted(self):
        tmp = tempfile.mkdtemp(prefix="dliofs-profile-int-", dir="/var/tmp")
        self.addCleanup(shutil.rmtree, tmp, True)
        out = os.path.join(tmp, "p.yaml")
        data = os.path.join(tmp, "data")
        os.makedirs(data)
        p = subprocess.Popen([DLIOFS, "profile", data, "-o", out, "--time", "60s"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(2)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 130, err)
        self.assertIn("interrupted", err)
        self.assertEqual(os.listdir(data), [])
        self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    dltest.main()
