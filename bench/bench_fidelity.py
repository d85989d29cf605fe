#!/usr/bin/env python3
"""Does a profiled mount behave like the real device, and stay right when
one of its settings changes?

Real devices with known behaviour are built on this machine (root):
  bytes   this machine's disk behind a cgroup-v1 blkio throttle of 300 MB/s
  iops    the disk behind 4000 IOs/s
  both    300 MB/s and 4000 IOs/s
  low     50 MB/s (a low limit: the throttle's burst matters)
  disk    the disk, unthrottled
  sshfs   sshfs over a veth pair to an sshd in a network namespace of its
          own (key auth, its own config and port; traffic stays on this
          machine), the server reading this machine's disk
  ci      50 MB/s and 1000 IOs/s (--quick, the CI test)
The throttle is the token bucket of cloud block storage: the reading
process joins /sys/fs/cgroup/blkio/<grp> (for sshfs, the sshd does).

For each shape: dlio-gen writes the datasets on the device, `dliofs profile
--read-only` measures it (--profile-time, run inside the throttle), then
each job runs on the real device (kernel caches dropped before each run,
fio and dlio-drive with O_DIRECT) and on a fresh mount of a synthetic
dataset of the same file sizes with `pacer: {profile: that.yaml}`:
  fio seq 1MiB QD1 / QD8, fio rand 4KiB QD1 / QD8 (QD8 = 8 fio jobs of
      psync, each with one read in flight; each job goes through all the
      raw files, from a file of its own on, so that nothing is read again
      at once: a VM host's cache would serve it): MB/s, IOPS, p50, p99
  (the profiled mounts take --fuse-overhead of this machine's FUSE round
      trip, measured first on a --no-pacer mount; --fuse-overhead sets it)
  dlio-drive: 40 npz files of 8 MB, batch 4, 0.2 s compute, 2 reader
      threads: MB/s and AU
  an unmodified PyTorch ImageFolder DataLoader (ToTensor, batch 32,
      2 workers) over 1500 JPEG files of 110 kB (32x32 pictures): items/s;
      and its ceiling here: the same on the same mount with --no-pacer
      (printed with the table, not a goal)
  what-if points (--whatif): the dlio-drive job with the real throttle's
      read_bps at each value against `dliofs set read.bandwidth=` on the
      profiled mount: MB/s and AU
  the knee: the least read_bps for AU >= 90% of the dlio-drive job,
      bisection on the real throttle against `dlio-whatif search
      --vary read.bandwidth` on the profiled mount (5% resolution)
real and emulated alternate, --runs times; the knee is searched --knee-runs times
each side (3 by default, 0 with --quick), and its spread printed.

Table: median [min..max] of each side, emulated / real, and the goals:
throughput, IOPS and items/s within 10%, p50/p99 within 20%, AU within 10%,
the knee within 10%, the emulated spread ((max - min) / median) no larger
than the real one. --check LO,HI: exit 1 when a throughput, IOPS, items/s
or what-if ratio is outside [LO, HI] (the CI test's loose bounds).

Usage: bench/bench_fidelity.py [--shapes bytes,iops,both,low,disk,sshfs]
  [--runs 3] [--knee-runs N] [--quick] [--json FILE] [--build DIR]
  [--dir DIR] [--profile-time T] [--runtime S] [--jobs LIST] [--whatif LIST]
  [--check LO,HI] [--keep] [--fuse-overhead TIME|default]
--quick (CI): shape `ci` (50 MB/s + 1000 IO/s), jobs fio-seq-qd1, loader (600 JPEGs) and the
what-if points 100, 200, 400 MB/s; profile 12 s; fio 3 s."""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CG = "/sys/fs/cgroup/blkio"
PY = "/usr/bin/python3"

SHAPES = {
    "bytes": {"bps": 300e6, "iops": None, "what": "disk, blkio 300 MB/s"},
    "iops": {"bps": None, "iops": 4000, "what": "disk, blkio 4000 IO/s"},
    "both": {"bps": 300e6, "iops": 4000, "what": "disk, blkio 300 MB/s + 4000 IO/s"},
    "low": {"bps": 50e6, "iops": None, "what": "disk, blkio 50 MB/s"},
    "disk": {"bps": None, "iops": None, "what": "disk, unthrottled"},
    "sshfs": {"bps": None, "iops": None, "what": "sshfs over a veth to a local sshd",
              "sshfs": True},
    # CI (--quick): low enough that the small-file loader waits for the
    # device, not for its JPEG decoding on a small machine.
    "ci": {"bps": 50e6, "iops": 1000, "what": "disk, blkio 50 MB/s + 1000 IO/s"},
}
JOBS = ("fio-seq-qd1", "fio-seq-qd8", "fio-rand-qd1", "fio-rand-qd8", "drive", "loader")
# Relative goal per metric (ratio within 1 +- goal).
GOALS = {"MB/s": 0.10, "IOPS": 0.10, "items/s": 0.10, "AU": 0.10, "p50": 0.20, "p99": 0.20,
         "knee": 0.10}
# Metrics --check bounds (the rest are reported).
CHECKED = ("MB/s", "items/s", "IOPS")
DRIVE_ARGS = ["--dataset", "npz", "--batch-size", "4", "--computation-time", "0.2",
              "--read-threads", "2", "--epochs", "1", "--odirect"]
LOADER = r'''
import json, os, sys, time
import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms
torch.set_num_threads(1)
# The real side: the reads its blkio cgroup let through while the loop ran
# (imports excluded), as blk-throttle counts them.
cg = sys.argv[2] if len(sys.argv) > 2 else None
def reads():
    with open(cg) as f:
        return sum(int(w[2]) for w in (ln.split() for ln in f) if len(w) == 3 and w[1] == "Read")
r0 = reads() if cg else 0
t = time.monotonic()
ds = datasets.ImageFolder(sys.argv[1], transform=transforms.ToTensor())
n = 0
for x, y in DataLoader(ds, batch_size=32, num_workers=2):
    n += len(y)
out = {"items": n, "s": time.monotonic() - t}
if cg:
    out["ios"] = reads() - r0
print(json.dumps(out))
'''


def sh(cmd, timeout=900, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    if r.returncode != 0:
        raise RuntimeError("%s failed (%d): %s%s" % (" ".join(cmd), r.returncode, r.stderr[-2000:],
                                                     r.stdout[-1000:]))
    return r.stdout


def drop_caches():
    subprocess.run(["sync"])
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def whole_disk(path):
    """MAJ:MIN of the disk (not the partition) that path is on: the blkio
    throttle takes whole disks."""
    st = os.stat(path)
    mm = "%d:%d" % (os.major(st.st_dev), os.minor(st.st_dev))
    sysd = "/sys/dev/block/" + mm
    if os.path.exists(os.path.join(sysd, "partition")):
        with open(os.path.join(os.path.realpath(sysd), "..", "dev")) as f:
            mm = f.read().strip()
    return mm


class Throttle:
    """A blkio cgroup with read limits on one disk; commands join it."""

    def __init__(self, name, disk, bps, iops):
        self.dir = os.path.join(CG, name)
        self.disk, self.base_bps, self.iops = disk, bps, iops
        os.mkdir(self.dir)
        self.set_bps(bps)
        self.write("blkio.throttle.read_iops_device", iops)

    def write(self, knob, v):
        with open(os.path.join(self.dir, knob), "w") as f:
            f.write("%s %d\n" % (self.disk, int(v or 0)))  # 0 removes the limit

    def set_bps(self, bps):
        self.write("blkio.throttle.read_bps_device", bps)

    def wrap(self, cmd):
        return ["sh", "-c", 'echo $$ > %s/cgroup.procs && exec "$@"' % self.dir, "sh"] + cmd

    def close(self):
        for _ in range(50):
            try:
                os.rmdir(self.dir)
                return
            except OSError:
                time.sleep(0.1)


class Device:
    """The real side: `root` is where jobs read, `write_root` where the data
    is written; wrap() starts a reader inside the throttle."""

    def __init__(self, shape, top):
        self.shape, self.top = SHAPES[shape], top
        self.name = shape
        self.server = os.path.join(top, "real")
        os.makedirs(self.server)
        self.throttle = Throttle("dliofs-fid-%d-%s" % (os.getpid(), shape),
                                 whole_disk(self.server), self.shape["bps"], self.shape["iops"])
        self.root, self.write_root = self.server, self.server
        self.sshd = self.ns = None
        if self.shape.get("sshfs"):
            try:
                self.start_sshfs()
            except BaseException:
                self.close()
                raise

    @property
    def cgroup(self):
        return self.throttle.dir

    def wrap(self, cmd):
        # sshfs: the server (sshd, in the throttle) reads the disk, the client
        # is this process.
        return cmd if self.sshd else self.throttle.wrap(cmd)

    def set_bps(self, bps):
        self.throttle.set_bps(bps)

    def start_sshfs(self):
        d = os.path.join(self.top, "ssh")
        os.makedirs(d)
        for k in ("hostkey", "clientkey"):
            sh(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", os.path.join(d, k)])
        shutil.copy(os.path.join(d, "clientkey.pub"), os.path.join(d, "authorized_keys"))
        os.makedirs("/run/sshd", exist_ok=True)
        # A /30 of 10.213.0.0/16 and a port of our own, from the pid.
        n = os.getpid() % 16000
        host, srv = "10.213.%d.%d" % (n // 64, (n % 64) * 4 + 1), \
            "10.213.%d.%d" % (n // 64, (n % 64) * 4 + 2)
        port = 20000 + os.getpid() % 20000
        self.ns, self.veth = "dliofs-fid-%d" % os.getpid(), "dfid%d" % (os.getpid() % 100000)
        with open(os.path.join(d, "sshd_config"), "w") as f:
            f.write("Port %d\nListenAddress %s\nHostKey %s/hostkey\nAuthorizedKeysFile "
                    "%s/authorized_keys\nPermitRootLogin prohibit-password\n"
                    "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
                    "StrictModes no\nPidFile %s/sshd.pid\nSubsystem sftp internal-sftp\n"
                    % (port, srv, d, d, d))
        sh(["ip", "netns", "add", self.ns])
        sh(["ip", "link", "add", self.veth + "a", "type", "veth", "peer", "name", self.veth + "b"])
        sh(["ip", "link", "set", self.veth + "b", "netns", self.ns])
        sh(["ip", "addr", "add", host + "/30", "dev", self.veth + "a"])
        sh(["ip", "link", "set", self.veth + "a", "up"])
        sh(["ip", "-n", self.ns, "addr", "add", srv + "/30", "dev", self.veth + "b"])
        sh(["ip", "-n", self.ns, "link", "set", self.veth + "b", "up"])
        sh(["ip", "-n", self.ns, "link", "set", "lo", "up"])
        self.sshd = subprocess.Popen(
            # Into the cgroup first: `ip netns exec` mounts a sysfs of the
            # namespace's own, without the cgroup tree.
            self.throttle.wrap(["ip", "netns", "exec", self.ns, "/usr/sbin/sshd", "-D", "-e",
                                "-f", os.path.join(d, "sshd_config")]),
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(d, "sshd.log"), "w"))
        self.root = os.path.join(self.top, "sshfs-mnt")
        os.makedirs(self.root)
        for _ in range(50):
            r = subprocess.run(
                ["sshfs", "-o", "IdentityFile=%s/clientkey,StrictHostKeyChecking=no,"
                 "UserKnownHostsFile=/dev/null,BatchMode=yes,port=%d" % (d, port),
                 "root@%s:%s" % (srv, self.server), self.root], capture_output=True, text=True)
            if r.returncode == 0:
                return
            time.sleep(0.2)
        with open(os.path.join(d, "sshd.log")) as f:
            raise RuntimeError("sshfs did not mount: %s; sshd: %s" % (r.stderr, f.read()[-1500:]))

    def close(self):
        if self.sshd:
            if os.path.ismount(self.root):
                subprocess.run(["fusermount3", "-u", self.root], capture_output=True)
            self.sshd.send_signal(signal.SIGTERM)
            self.sshd.wait(10)
        if self.ns:
            subprocess.run(["ip", "link", "del", self.veth + "a"], capture_output=True)
            subprocess.run(["ip", "netns", "del", self.ns], capture_output=True)
        self.throttle.close()


class Mount:
    def __init__(self, build, cfg, mnt, settings=(), opts=()):
        self.build, self.cfg, self.mnt, self.settings = build, cfg, mnt, list(settings)
        self.opts = list(opts)

    def __enter__(self):
        sh([os.path.join(self.build, "dliofs"), "mount", self.mnt, self.cfg] + self.opts)
        if self.settings:
            try:
                sh([os.path.join(self.build, "dliofs"), "set", self.mnt] + self.settings)
            except Exception:
                self.__exit__()
                raise
        return self.mnt

    def __exit__(self, *exc):
        subprocess.run([os.path.join(self.build, "dliofs"), "umount", self.mnt],
                       capture_output=True)


def datasets(quick):
    """ImageNet-sized JPEG files (110 kB) of 32x32 pictures (the rest is
    padding): the loader waits for the device, not for decoding on a small
    shared machine (224x224 decoding made its items/s vary 2.6x between runs
    at a load of 6)."""
    raw = (8, "64MiB") if quick else (8, "128MiB")
    jpg = 600 if quick else 1500
    return ("datasets:\n"
            "  - {name: raw, format: raw, files: %d, sample_size: %s}\n"
            "  - {name: npz, format: npz, files: 40, sample_size: 8MB}\n"
            "  - {name: jpeg, format: jpeg, files: %d, classes: 10, width: 32, height: 32,"
            " sample_size: {mean: 110kB, stdev: 20kB, min: 40kB, max: 200kB}}\n"
            % (raw[0], raw[1], jpg))


def fio(wrap, root, rw, bs, jobs, runtime):
    """fio, psync, O_DIRECT, `jobs` jobs, each with one read in flight, each
    going through all the raw files (sequentially one after another, or at
    random), from a file of its own: no job reads again within its run what
    it or another job read a moment before (a cache below this VM, its
    host's, served such re-reads at ~1 GB/s where fresh data came at
    ~0.6 GB/s: it is not the device)."""
    files = sorted(os.listdir(os.path.join(root, "raw", "train")))
    args = ["fio", "--directory=" + os.path.join(root, "raw", "train"),
            "--rw=" + rw, "--bs=" + bs, "--direct=1", "--iomem_align=4096",
            "--ioengine=psync", "--group_reporting", "--time_based",
            "--runtime=%d" % runtime, "--ramp_time=1", "--randrepeat=0",
            "--file_service_type=" + ("random" if rw == "randread" else "sequential"),
            "--output-format=json"]
    for j in range(jobs):
        k = j % len(files)
        args += ["--name=fid%d" % j, "--filename=" + ":".join(files[k:] + files[:k])]
    j = json.loads(sh(wrap(args)))["jobs"][0]["read"]
    pct = j["clat_ns"]["percentile"]
    return {"MB/s": j["bw_bytes"] / 1e6, "IOPS": j["iops"], "p50": pct["50.000000"] / 1e3,
            "p99": pct["99.000000"] / 1e3}


def drive(build, wrap, cfg, root):
    out = sh(wrap([os.path.join(build, "dlio-drive"), "--config", cfg, root] + DRIVE_ARGS
                  + ["--quiet", "--json", "-"]))
    e = json.loads(out[out.index("{"):])["epochs"][0]
    return {"MB/s": e["mb_per_s"], "AU": e["au"]}


WARM_DIR = "/dev/shm/dliofs-fid-warm-%d" % os.getpid()


def warm_libs(script):
    """The loader once over two pictures in memory, outside any throttle,
    right before a measured run: after drop_caches the loop's lazy imports
    (PIL's image plugins, the DataLoader workers' modules) read some 150
    files from this machine's disk, which in the real run went through the
    device's throttle (0.2-0.25 of 3.4 reads an item under 1000 IO/s: 7% of
    its items/s). On a training node the libraries are on a local disk, not
    on the storage under study."""
    if not os.path.isdir(WARM_DIR):
        from PIL import Image
        os.makedirs(os.path.join(WARM_DIR, "c"))
        for i in range(2):
            Image.new("RGB", (32, 32)).save(os.path.join(WARM_DIR, "c", "%d.JPEG" % i))
    sh([PY, script, WARM_DIR])


def loader(script, wrap, root, cgroup=None, build=None):
    """items/s; on a blkio-throttled device also the reads blk-throttle
    counted per item (printed, not a figure of the table)."""
    warm_libs(script)
    cmd = [PY, script, os.path.join(root, "jpeg", "train")]
    if cgroup:
        cmd.append(os.path.join(cgroup, "blkio.throttle.io_serviced"))
    r = json.loads(sh(wrap(cmd)).strip().splitlines()[-1])
    if "ios" in r and r["items"]:
        print("  loader on the real device: %.3f reads an item as blk-throttle counted them"
              % (r["ios"] / r["items"]), flush=True)
    elif build and r["items"]:
        # The mount's count of the same: its data IOs and metadata's reads
        # (a --no-pacer mount keeps no statistics: nothing to say).
        try:
            s = json.loads(sh([os.path.join(build, "dliofs"), "stat", root, "--json"]))
            rd = s["classes"]["read"]
        except (RuntimeError, ValueError, KeyError):
            return {"items/s": r["items"] / r["s"]}
        print("  loader on the mount: %.3f reads an item (%.3f data, %.3f metadata's)"
              % ((rd["device_ops"] + rd.get("meta_reads", 0)) / r["items"],
                 rd["device_ops"] / r["items"], rd.get("meta_reads", 0) / r["items"]),
              flush=True)
    return {"items/s": r["items"] / r["s"]}


def job_fn(name, args, build, script):
    rt = args.runtime
    return {
        "fio-seq-qd1": lambda w, c, r: fio(w, r, "read", "1M", 1, rt),
        "fio-seq-qd8": lambda w, c, r: fio(w, r, "read", "1M", 8, rt),
        "fio-rand-qd1": lambda w, c, r: fio(w, r, "randread", "4k", 1, rt),
        "fio-rand-qd8": lambda w, c, r: fio(w, r, "randread", "4k", 8, rt),
        "drive": lambda w, c, r: drive(build, w, c, r),
        # The real side's wrap is its Device's: its cgroup counts the reads.
        "loader": lambda w, c, r: loader(script, w, r,
                                         getattr(getattr(w, "__self__", None), "cgroup", None),
                                         build),
    }[name]


def fuse_floor(build, top, mnt, quick, runtime):
    """This machine's FUSE round trip: the p50 of 4 KiB reads at QD1 on a
    mount without a storage model (--no-pacer: every reply at once), the
    median of 3 runs, in us. A profiled mount is started with
    --fuse-overhead of it: a reply is sent that much before its due time,
    so the job sees the device's time, not the device's plus FUSE's (the
    profile measured the device through the kernel's own path, which the
    mount's round trip replaces)."""
    cfg = os.path.join(top, "floor.yaml")
    with open(cfg, "w") as f:
        f.write(datasets(quick))
    p50 = []
    with Mount(build, cfg, mnt, opts=["--no-pacer"]):
        for _ in range(3):
            p50.append(fio(lambda c: c, mnt, "randread", "4k", 1, runtime)["p50"])
    return statistics.median(p50)


def knee_real(build, dev, cfg, lo, hi, res):
    """Bisection (log scale) on the real throttle's read_bps for AU >= 0.90:
    (answer B/s or None, probes)."""
    probes = []

    def met(bps):
        dev.set_bps(bps)
        drop_caches()
        au = drive(build, dev.wrap, cfg, dev.root)["AU"]
        probes.append((bps, au))
        return au >= 0.90

    try:
        # As dlio-whatif search: the demanding end, then halvings (the low
        # end is not run: a job far below its knee takes long and fails).
        if not met(hi):
            return None, probes
        while hi / lo > 1 + res:
            mid = (lo * hi) ** 0.5
            if met(mid):
                hi = mid
            else:
                lo = mid
        return hi, probes
    finally:
        dev.set_bps(dev.shape["bps"])


def knee_emulated(build, cfg, lo, hi, res, tmp):
    js = os.path.join(tmp, "search.json")
    sh([os.path.join(build, "dlio-whatif"), "search", cfg, "--vary",
        "read.bandwidth=%dMB/s..%dMB/s" % (lo / 1e6, hi / 1e6), "--target", "au>=0.90",
        "--resolution", "%g%%" % (res * 100), "--json", js, "-q", "--",
        os.path.join(build, "dlio-drive"), "--config", cfg, "{mount}"] + DRIVE_ARGS,
       timeout=1800)
    with open(js) as f:
        ans = json.load(f)["answers"][0]
    return (ans["value"] if ans["found"] else None), ans["probes"]


def spread(v):
    m = statistics.median(v)
    return (max(v) - min(v)) / m if m else 0.0


def record(res, shape, run_i, job, r, e):
    """Keep one run's real and emulated figures of a job, and print them."""
    for k in r:
        res.setdefault((job, k), ([], []))
        res[(job, k)][0].append(r[k])
        res[(job, k)][1].append(e[k])
    print("[%s] run %d %-13s real %s | emulated %s (load %.2f)"
          % (shape, run_i + 1, job, fmt_all(r), fmt_all(e), os.getloadavg()[0]), flush=True)


def bench_shape(args, build, shape, top, script, mnt):
    res = {}  # (job, metric) -> ([real...], [emulated...])
    dev = Device(shape, top)
    args.cgroups.append(dev.throttle.dir)
    try:
        gen = os.path.join(top, "gen.yaml")
        with open(gen, "w") as f:
            f.write(datasets(args.quick))
        t = time.time()
        sh([os.path.join(build, "dlio-gen"), gen, dev.write_root])
        sync_t = time.time() - t
        prof = os.path.join(top, "profile.yaml")
        t = time.time()
        drop_caches()
        out = sh(dev.wrap([os.path.join(build, "dliofs"), "profile", dev.root, "-o", prof,
                           "--time", args.profile_time, "--read-only", "--quiet"]))
        ptime = time.time() - t
        print("[%s] %s: data written in %.1f s; dliofs profile --read-only --time %s took "
              "%.1f s" % (shape, dev.shape["what"], sync_t, args.profile_time, ptime), flush=True)
        if args.verbose:
            print(out, flush=True)
        cfg = os.path.join(top, "mount.yaml")
        with open(cfg, "w") as f:
            f.write(datasets(args.quick) + "pacer: {profile: ./profile.yaml}\n")
        if "loader" in args.jobs:
            # The loader's ceiling on this machine: the same mount (same
            # files, blksize, cache policy) without the storage model, so
            # every reply at once. A real device whose loader runs at or
            # above it cannot be matched by any model here: the FUSE round
            # trips per file (7 or so with the cache bypassed) on the 2
            # shared cores are the floor.
            ceil = []
            for _ in range(args.runs):
                drop_caches()
                with Mount(build, cfg, mnt, opts=["--no-pacer"]):
                    ceil.append(loader(script, lambda c: c, mnt)["items/s"])
            args.ceiling[shape] = ceil
            print("[%s] loader on the same mount with --no-pacer (this machine's ceiling): "
                  "items/s %s" % (shape, ", ".join("%.0f" % x for x in ceil)), flush=True)
        for run_i in range(args.runs):
            for job in args.jobs:
                fn = job_fn(job, args, build, script)
                drop_caches()
                r = fn(dev.wrap, gen, dev.root)
                drop_caches()
                with Mount(build, cfg, mnt, opts=args.mount_opts):
                    e = fn(lambda c: c, cfg, mnt)
                record(res, shape, run_i, job, r, e)
            for bw in args.whatif:
                dev.set_bps(bw)
                drop_caches()
                try:
                    r = drive(build, dev.wrap, gen, dev.root)
                finally:
                    dev.set_bps(dev.shape["bps"])
                drop_caches()
                with Mount(build, cfg, mnt, ["read.bandwidth=%dMB/s" % (bw / 1e6)],
                           opts=args.mount_opts):
                    e = drive(build, lambda c: c, cfg, mnt)
                job = "what-if %d MB/s" % (bw / 1e6)
                record(res, shape, run_i, job, r, e)
        for run_i in range(args.knee_runs):
            t = time.time()
            kr, pr = knee_real(build, dev, gen, args.knee_lo, args.knee_hi, 0.05)
            t2 = time.time()
            ke, pe = knee_emulated(build, cfg, args.knee_lo, args.knee_hi, 0.05, top)
            print("[%s] knee %d: real %s (%d probes, %.0f s) | emulated %s (%d probes, %.0f s)"
                  % (shape, run_i + 1, fmt_knee(kr, args), len(pr), t2 - t, fmt_knee(ke, args),
                     pe, time.time() - t2), flush=True)
            res.setdefault(("knee AU>=90%", "knee"), ([], []))
            res[("knee AU>=90%", "knee")][0].append(kr / 1e6 if kr else None)
            res[("knee AU>=90%", "knee")][1].append(ke / 1e6 if ke else None)
        if args.knee_runs:
            print("[%s] knee over %d searches each side: real %s | emulated %s"
                  % (shape, args.knee_runs,
                     knee_spread(res[("knee AU>=90%", "knee")][0]),
                     knee_spread(res[("knee AU>=90%", "knee")][1])), flush=True)
    finally:
        dev.close()
    return res


def knee_spread(v):
    """The knees one side found: each, and their spread ((max - min) /
    median), or which searches found none."""
    found = [x for x in v if x is not None]
    each = " ".join("%.0f" % x if x is not None else "none" for x in v)
    if len(found) < len(v) or not found:
        return "%s MB/s (%d of %d searches found none)" % (each, len(v) - len(found), len(v))
    return "%s MB/s, median %.0f, spread %.0f%%" % (each, statistics.median(found),
                                                   spread(found) * 100)


def fmt(v, metric):
    if v is None:
        return "none"
    if metric in ("p50", "p99"):
        return "%.0f us" % v if v < 10000 else "%.1f ms" % (v / 1e3)
    if metric == "AU":
        return "%.1f%%" % (v * 100)
    if metric == "knee":
        return "%.0f MB/s" % v
    return "%.0f" % v if v >= 100 else "%.1f" % v


def fmt_all(d):
    return ", ".join("%s %s" % (k, fmt(v, k)) for k, v in d.items())


def fmt_knee(v, args):
    return "%.0f MB/s" % (v / 1e6) if v else "not within %.0f..%.0f MB/s" % (
        args.knee_lo / 1e6, args.knee_hi / 1e6)


def report(args, allres):
    rows = []
    print("\n| device | job | metric | real: median [min..max] | emulated: median [min..max] "
          "| emulated / real | goal | spread real / emulated |")
    print("|---|---|---|---|---|---|---|---|")
    for shape, res in allres.items():
        for (job, metric), (rv, ev) in res.items():
            row = {"shape": shape, "job": job, "metric": metric, "real": rv, "emulated": ev}
            if None in rv or None in ev:
                # A knee outside the searched range: no ratio.
                row.update(ratio=None, goal_met=False, spread_ok=False)
                print("| %s | %s | %s | %s | %s | - | **missed** | - |"
                      % (shape, job, metric, " ".join(fmt(x, metric) for x in rv),
                         " ".join(fmt(x, metric) for x in ev)))
                rows.append(row)
                continue
            rm, em = statistics.median(rv), statistics.median(ev)
            ratio = em / rm if rm else float("inf")
            ok = abs(ratio - 1) <= GOALS[metric]
            sr, se = spread(rv), spread(ev)
            sok = se <= sr or len(rv) < 2
            row.update(real_median=rm, emulated_median=em, ratio=ratio, goal_met=ok,
                       real_spread=sr, emulated_spread=se, spread_ok=sok)
            rows.append(row)
            print("| %s | %s | %s | %s [%s..%s] | %s [%s..%s] | %s%.2f%s | %s "
                  "| %.0f%% / %s%.0f%%%s |"
                  % (shape, job, metric, fmt(rm, metric), fmt(min(rv), metric),
                     fmt(max(rv), metric), fmt(em, metric), fmt(min(ev), metric),
                     fmt(max(ev), metric), "" if ok else "**", ratio, "" if ok else "**",
                     ("within %d%%" % (GOALS[metric] * 100)) if ok else "**missed**",
                     sr * 100, "" if sok else "**", se * 100, "" if sok else "**"))
    for shape, ceil in args.ceiling.items():
        lr = [r for r in rows if r["shape"] == shape and r["job"] == "loader"
              and r.get("real_median")]
        if not lr or not ceil:
            continue
        c = statistics.median(ceil)
        lr[0]["ceiling"] = ceil
        lr[0]["ceiling_bound"] = lr[0]["real_median"] >= 0.9 * c
        print("[%s] loader: this machine's ceiling (--no-pacer mount, same run) %.0f items/s; "
              "real %.2fx of it, emulated %.2fx%s"
              % (shape, c, lr[0]["real_median"] / c, lr[0]["emulated_median"] / c,
                 ": the real device is at or above what a mount here can serve at all, so "
                 "this row says more about this machine's FUSE path than about the model"
                 if lr[0]["ceiling_bound"] else ""))
    met = sum(r["goal_met"] for r in rows)
    smet = sum(r["spread_ok"] for r in rows)
    print("\n%d of %d figures within the goals, %d of %d with an emulated spread no larger than "
          "the real one (medians of %d runs, knee %d)" % (met, len(rows), smet, len(rows),
                                                         args.runs, args.knee_runs))
    bad = []
    if args.check:
        lo, hi = args.check
        for r in rows:
            if r["metric"] in CHECKED or r["job"].startswith("what-if"):
                if r["metric"] == "AU" and r["job"].startswith("what-if"):
                    continue
                if r["ratio"] is None or not lo <= r["ratio"] <= hi:
                    bad.append(r)
                    print("outside [%.2f, %.2f]: %s %s %s: emulated / real %s"
                          % (lo, hi, r["shape"], r["job"], r["metric"],
                             "-" if r["ratio"] is None else "%.2f" % r["ratio"]), file=sys.stderr)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "runs": args.runs, "knee_runs": args.knee_runs,
                       "quick": args.quick, "profile_time": args.profile_time,
                       "check": args.check, "outside_check": len(bad),
                       "loader_ceiling": args.ceiling,
                       "cgroups": args.cgroups}, f, indent=1)
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--dir", default="/var/tmp", help="where the real data is written (on the "
                    "disk under test)")
    ap.add_argument("--shapes", default=None)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--knee-runs", type=int, default=None)
    ap.add_argument("--knee-range", default="20,1000", help="MB/s, LOW,HIGH")
    ap.add_argument("--profile-time", default=None)
    ap.add_argument("--runtime", type=int, default=None, help="seconds per fio run")
    ap.add_argument("--jobs", default=None)
    ap.add_argument("--whatif", default=None, help="MB/s values, e.g. 100,200,400")
    ap.add_argument("--fuse-overhead", default=None, help="the profiled mounts' "
                    "--fuse-overhead (default: this machine's FUSE round trip, measured; "
                    "`default`: the mount's own default)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--check", default=None, help="LO,HI")
    ap.add_argument("--json")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--verbose", action="store_true", help="print each profile's table")
    args = ap.parse_args()
    q = args.quick
    args.shapes = (args.shapes or ("ci" if q else "bytes,iops,both,low,disk,sshfs")).split(",")
    args.jobs = (args.jobs or ("fio-seq-qd1,loader" if q else ",".join(JOBS))).split(",")
    args.jobs = [j for j in args.jobs if j]
    args.whatif = [float(x) * 1e6 for x in
                   (args.whatif if args.whatif is not None else ("100,200,400" if q else ""))
                   .split(",") if x]
    # Three searches a side: one knee is one noisy bisection, and the
    # goal compares the emulated spread with the real one.
    args.knee_runs = args.knee_runs if args.knee_runs is not None else (0 if q else 3)
    args.knee_lo, args.knee_hi = (float(x) * 1e6 for x in args.knee_range.split(","))
    args.profile_time = args.profile_time or ("12s" if q else "30s")
    args.runtime = args.runtime or (3 if q else 4)
    args.check = tuple(float(x) for x in args.check.split(",")) if args.check else None
    for s in args.shapes:
        if s not in SHAPES:
            ap.error("--shapes: unknown shape %r (one of %s)" % (s, ", ".join(SHAPES)))
    for j in args.jobs:
        if j not in JOBS:
            ap.error("--jobs: unknown job %r (one of %s)" % (j, ", ".join(JOBS)))
    build = os.path.abspath(args.build)
    if os.geteuid() != 0:
        print("bench_fidelity: needs root (blkio cgroups, drops caches, mounts)", file=sys.stderr)
        return 2
    if not os.path.isdir(CG):
        print("bench_fidelity: no cgroup-v1 blkio controller at %s" % CG, file=sys.stderr)
        return 2
    top = tempfile.mkdtemp(prefix="dliofs-fid-", dir=args.dir)
    mnt = tempfile.mkdtemp(prefix="dliofs-fid-mnt-")
    script = os.path.join(top, "loader.py")
    with open(script, "w") as f:
        f.write(LOADER)
    print("fio QD8 = 8 jobs (psync, O_DIRECT), each one read in flight, each through all the "
          "raw files from its own on; %d runs of %d s; profile --time %s; knee %d run(s) in %s MB/s at 5%%"
          % (args.runs, args.runtime, args.profile_time, args.knee_runs, args.knee_range),
          flush=True)
    allres = {}
    args.cgroups = []
    args.ceiling = {}
    t0 = time.time()
    try:
        args.mount_opts = []
        if args.fuse_overhead is None:
            floor = fuse_floor(build, top, mnt, args.quick, args.runtime)
            print("FUSE round trip (4 KiB QD1 p50 on a --no-pacer mount): %.1f us: profiled "
                  "mounts take --fuse-overhead %dus" % (floor, round(floor)), flush=True)
            args.fuse_overhead = "%dus" % round(floor)
        if args.fuse_overhead != "default":
            args.mount_opts = ["--fuse-overhead", args.fuse_overhead]
        for s in args.shapes:
            d = os.path.join(top, s)
            os.makedirs(d)
            allres[s] = bench_shape(args, build, s, d, script, mnt)
            if not args.keep:
                shutil.rmtree(d, ignore_errors=True)
    finally:
        os.rmdir(mnt)
        shutil.rmtree(WARM_DIR, ignore_errors=True)
        if not args.keep:
            shutil.rmtree(top, ignore_errors=True)
    print("\ntook %.0f s" % (time.time() - t0))
    return report(args, allres)


if __name__ == "__main__":
    sys.exit(main())
