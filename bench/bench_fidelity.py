#!/usr/bin/env python3
"""Does the mount reproduce the storage it was calibrated on?

On a real directory of this machine's disk (--dir, default
/var/tmp/dliofs-fidelity):
  1. dlio-gen writes three datasets there: raw files (for fio), an npz
     dataset and a JPEG ImageNet-like tree;
  2. `dliofs profile` measures the directory's storage (--profile-time);
  3. the same workloads run on the real files and on the mount's synthetic
     copy shaped by that profile (cache: none from the profile: every
     request goes through the model):
       fio sequential 1 MiB reads, 1 and 4 jobs (psync, O_DIRECT)
       fio random 4 KiB reads at queue depth 1 (psync) and 16 (libaio)
       dlio-drive on the npz dataset and on the JPEG dataset (--odirect)
     real and emulated alternate, --runs times; medians are reported.
Table: per workload, throughput and p50/p99 latency (fio: completion
latency; dlio-drive: step time) real vs emulated and their ratio, against
the goals (throughput and p50 within 10%, p99 within 20%).

Caches: real runs read with O_DIRECT after the kernel's caches are dropped
(echo 3 > /proc/sys/vm/drop_caches: dentries and inodes too); emulated
runs read a fresh mount with cache: none (direct_io), so neither side is
served by the page cache.

--small: a few seconds per step (CI), and the profile reads the real
files (dliofs profile --read-only) instead of a fresh probe file; --loose: check wider bounds (ratio in
[1/3, 3] for throughput and p50) and exit 1 outside them, instead of the
goals, which are reported but not enforced. p99 is not checked loosely: on
a small machine shared with other work the tail of 30 us requests is the
scheduler's, on either side, and differs between two real runs as much.
Usage: bench/bench_fidelity.py [--build DIR] [--dir DIR] [--runs N]
       [--profile-time T] [--runtime S] [--small] [--loose] [--json FILE] [--keep]"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

GOALS = {"throughput": 0.10, "p50": 0.10, "p99": 0.20}
LOOSE = {"throughput": (1 / 3, 3.0), "p50": (1 / 3, 3.0), "p99": (0, float("inf"))}


def sh(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise RuntimeError("%s failed (%d): %s%s" % (" ".join(cmd), r.returncode, r.stderr[-2000:],
                                                     r.stdout[-1000:]))
    return r.stdout


def load():
    return os.getloadavg()[0]


def drop_caches():
    subprocess.run(["sync"])
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def datasets(small):
    """The three datasets, as a dliofs config's datasets: list."""
    raw = (4, "32MiB") if small else (4, "256MiB")
    npz = (16, "4MB") if small else (64, "8MB")
    jpg = 300 if small else 2000
    return ("datasets:\n"
            "  - {name: raw, format: raw, files: %d, sample_size: %s}\n"
            "  - {name: npz, format: npz, files: %d, sample_size: %s}\n"
            "  - {name: jpeg, format: jpeg, files: %d, classes: 10, width: 224, height: 224,"
            " sample_size: {mean: 110kB, stdev: 20kB, min: 40kB, max: 200kB}}\n"
            % (raw[0], raw[1], npz[0], npz[1], jpg))


def fio(root, name, rw, bs, jobs, depth, runtime):
    """One fio run on the raw files: (bytes/s, p50 ns, p99 ns)."""
    files = sorted(os.listdir(os.path.join(root, "raw", "train")))
    args = ["fio", "--name=" + name, "--directory=" + os.path.join(root, "raw", "train"),
            "--rw=" + rw, "--bs=" + bs, "--direct=1", "--iomem_align=4096",
            "--ioengine=" + ("libaio" if depth > 1 else "psync"), "--iodepth=%d" % depth,
            "--numjobs=%d" % jobs, "--group_reporting", "--time_based",
            "--runtime=%d" % runtime, "--ramp_time=1", "--randrepeat=0",
            "--output-format=json", "--filename_format=" + files[0].replace("_0_", "_$jobnum_")]
    j = json.loads(sh(args))["jobs"][0]["read"]
    pct = j["clat_ns"]["percentile"]
    return j["bw_bytes"], pct["50.000000"], pct["99.000000"]


def drive(build, cfg, root, ds, batch, threads):
    """dlio-drive, one epoch: (bytes/s, step p50 ns, step p99 ns)."""
    out = sh([os.path.join(build, "dlio-drive"), "--config", cfg, root, "--dataset", ds,
              "--odirect", "--batch-size", str(batch), "--read-threads", str(threads),
              "--epochs", "1", "--warmup-steps", "0", "--quiet", "--json", "-"])
    e = json.loads(out[out.index("{"):])["epochs"][0]
    return e["mb_per_s"] * 1e6, e["step_time_s"]["p50"] * 1e9, e["step_time_s"]["p99"] * 1e9


# The profile's own point for a fio row: (size, requests in flight).
PROFILE_POINT = {"fio seq 1MiB, 1 job": ("1MiB", 1), "fio seq 1MiB, 4 jobs": ("1MiB", 4),
                 "fio rand 4KiB, QD1": ("4KiB", 1), "fio rand 4KiB, QD16": ("4KiB", 16)}


def parse_time(v):
    for unit, mul in (("us", 1e3), ("ms", 1e6), ("ns", 1), ("s", 1e9)):
        if v.endswith(unit):
            return float(v[:-len(unit)]) * mul
    return float(v)


def profile_points(path):
    """What dliofs profile measured per read point: {(size, clients): (B/s, p50, p99)}."""
    pts = {}
    with open(path) as f:
        for ln in f:
            ln = ln.strip()
            if not ln.startswith("- {op: read,"):
                continue
            kv = dict(x.split(": ", 1) for x in ln[3:-1].split(", ") if ": " in x)
            if "MBps" in kv:
                pts[(kv["size"], int(kv["clients"]))] = (float(kv["MBps"]) * 1e6,
                                                         parse_time(kv["p50"]),
                                                         parse_time(kv["p99"]))
    return pts


def workloads(args, build):
    rt = args.runtime
    return [
        ("fio seq 1MiB, 1 job", lambda cfg, root: fio(root, "seq1", "read", "1M", 1, 1, rt)),
        ("fio seq 1MiB, 4 jobs", lambda cfg, root: fio(root, "seq4", "read", "1M", 4, 1, rt)),
        ("fio rand 4KiB, QD1", lambda cfg, root: fio(root, "r1", "randread", "4k", 1, 1, rt)),
        ("fio rand 4KiB, QD16", lambda cfg, root: fio(root, "r16", "randread", "4k", 1, 16, rt)),
        ("dlio-drive npz", lambda cfg, root: drive(build, cfg, root, "npz", 4, 4)),
        ("dlio-drive jpeg", lambda cfg, root: drive(build, cfg, root, "jpeg", 32, 4)),
    ]


class Mount:
    def __init__(self, build, cfg, mnt, extra=()):
        self.build, self.cfg, self.mnt, self.extra = build, cfg, mnt, list(extra)

    def __enter__(self):
        sh([os.path.join(self.build, "dliofs"), "mount", self.mnt, self.cfg] + self.extra)
        return self.mnt

    def __exit__(self, *exc):
        subprocess.run([os.path.join(self.build, "dliofs"), "umount", self.mnt],
                       capture_output=True)


def ratio_ok(kind, r, loose):
    if loose:
        lo, hi = LOOSE[kind]
        return lo <= r <= hi
    return abs(r - 1) <= GOALS[kind]


def fmt_tp(v):
    return "%.1f MB/s" % (v / 1e6)


def fmt_ns(v):
    return "%.0f us" % (v / 1e3) if v < 1e7 else "%.1f ms" % (v / 1e6)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--dir", default="/var/tmp/dliofs-fidelity")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--profile-time", default="60s")
    ap.add_argument("--runtime", type=int, default=8, help="seconds per fio run")
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--loose", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--keep", action="store_true", help="keep the datasets and the profile")
    args = ap.parse_args()
    if args.small:
        args.runtime = min(args.runtime, 3)
        if args.profile_time == "60s":
            args.profile_time = "8s"
    build = os.path.abspath(args.build)
    if os.geteuid() != 0:
        print("bench_fidelity: needs root (drops the kernel's caches, mounts)", file=sys.stderr)
        return 2
    top = os.path.abspath(args.dir)
    real = os.path.join(top, "real")
    prof = os.path.join(top, "profile")
    mnt = tempfile.mkdtemp(prefix="dliofs-fid-mnt-")
    shutil.rmtree(top, ignore_errors=True)
    os.makedirs(real)
    os.makedirs(prof)
    loads = [load()]
    try:
        return run(args, build, top, real, prof, mnt, loads)
    finally:
        os.rmdir(mnt)
        if not args.keep:
            shutil.rmtree(top, ignore_errors=True)


def run(args, build, top, real, prof, mnt, loads):
    gen_cfg = os.path.join(top, "gen.yaml")
    with open(gen_cfg, "w") as f:
        f.write(datasets(args.small))
    t = time.time()
    sh([os.path.join(build, "dlio-gen"), gen_cfg, real])
    print("datasets written to %s in %.1f s" % (real, time.time() - t), flush=True)
    # The profile is measured in the directory the real files are in.
    # --small reads the datasets' own files (--read-only): a probe file
    # written seconds before can still sit in the cache of the host below
    # this VM's disk, which no O_DIRECT in the guest bypasses (measured: a
    # 1 MiB profile of 3.8 GB/s against 1.1 GB/s for the real files).
    out = sh([os.path.join(build, "dliofs"), "profile", real, "-o",
              os.path.join(prof, "storage.yaml"), "--time", args.profile_time, "--quiet"]
             + (["--read-only"] if args.small else []))
    print(out, flush=True)
    bypass = "?"
    with open(os.path.join(prof, "storage.yaml")) as f:
        for ln in f:
            if ln.strip().startswith("cache_bypass:"):
                bypass = ln.split(":", 1)[1].strip()
    print("served by: real runs: the disk (fio --direct=1 / dlio-drive --odirect, kernel caches "
          "dropped before each); emulated runs: the model, cache: none (direct_io), profile "
          "measured with cache_bypass: %s" % bypass, flush=True)
    args.cache_bypass = bypass
    args.points = profile_points(os.path.join(prof, "storage.yaml"))
    cfg = os.path.join(top, "mount.yaml")
    with open(cfg, "w") as f:
        f.write(datasets(args.small) + "pacer: {profile: ./profile/storage.yaml}\n")
    # The mount's own round trip on this machine (no model: replies at
    # once): delayed replies leave that much early, so that a job sees the
    # model's latency, not the model's plus the mount's.
    floors = []
    with Mount(build, cfg, mnt, ["--no-pacer"]):
        for _ in range(3):
            floors.append(fio(mnt, "floor", "randread", "4k", 1, 1, 2)[1])
    overhead = ["--fuse-overhead", "%dns" % statistics.median(floors)]
    print("the mount's round trip for 4 KiB (no model), p50: %.1f us" % (
        statistics.median(floors) / 1e3), flush=True)
    loads.append(load())
    res = {}
    for run_i in range(args.runs):
        for name, fn in workloads(args, build):
            drop_caches()
            r = fn(cfg, real)
            with Mount(build, cfg, mnt, overhead):
                e = fn(cfg, mnt)
            res.setdefault(name, []).append((r, e))
            print("run %d %-22s real %s p50 %s p99 %s | emulated %s p50 %s p99 %s (load %.2f)"
                  % (run_i + 1, name, fmt_tp(r[0]), fmt_ns(r[1]), fmt_ns(r[2]), fmt_tp(e[0]),
                     fmt_ns(e[1]), fmt_ns(e[2]), load()), flush=True)
        loads.append(load())
    return report(args, res, loads)


def report(args, res, loads):
    """The table. `profile`: what dliofs profile measured at the fio row's
    size and depth (the model's input); `real spread`: (max - min) / median
    of the real runs, the storage's own variation during this run."""
    rows, bad = [], 0
    print("\n| workload | metric | profile | real | real spread | emulated | emulated / real "
          "| emulated / profile | goal |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, runs in res.items():
        pt = args.points.get(PROFILE_POINT.get(name))
        for k, kind in enumerate(("throughput", "p50", "p99")):
            reals = [r[k] for r, _ in runs]
            rv = statistics.median(reals)
            ev = statistics.median(e[k] for _, e in runs)
            spread = (max(reals) - min(reals)) / rv if rv else 0
            ratio = ev / rv if rv else float("inf")
            pv = pt[k] if pt else None
            ok = ratio_ok(kind, ratio, False)
            loose_ok = ratio_ok(kind, ratio, True)
            bad += not (loose_ok if args.loose else True)
            fmt = fmt_tp if kind == "throughput" else fmt_ns
            print("| %s | %s | %s | %s | %.0f%% | %s | %s%.2f%s | %s | %s |"
                  % (name, kind, fmt(pv) if pv else "-", fmt(rv), spread * 100, fmt(ev),
                     "**" if not ok else "", ratio, "**" if not ok else "",
                     "%.2f" % (ev / pv) if pv else "-",
                     ("within %d%%" % (GOALS[kind] * 100)) + ("" if ok else ": missed")))
            rows.append({"workload": name, "metric": kind, "real": rv, "emulated": ev,
                         "profile": pv, "real_spread": spread,
                         "ratio": ratio, "goal_met": ok, "loose_ok": loose_ok,
                         "runs": [[r[k], e[k]] for r, e in runs]})
    met = sum(r["goal_met"] for r in rows)
    print("\n%d of %d figures within the goals (medians of %d runs); load average %s"
          % (met, len(rows), args.runs, " / ".join("%.2f" % v for v in loads)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "load": loads, "small": args.small, "runs": args.runs,
                       "cache_bypass": args.cache_bypass}, f, indent=1)
    if args.loose and bad:
        print("%d figures outside the loose bounds" % bad, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
