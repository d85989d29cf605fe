#!/usr/bin/env python3
"""Pacer accuracy: configured vs observed, through the mount, with fio's own
view beside the daemon's (stats.json), in one run. Prints a table.

  bench/bench_pacer.py [--build DIR] [--small] [--check]

--small shortens every case (CI); --check exits non-zero when a figure is
outside the tolerance given on its row (the issue's targets; with --small on a
busy 2-core machine use the figures from a quiet full run for the README)."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


class Mount:
    def __init__(self, build, pacer_yaml, tmp):
        self.build = build
        self.mnt = os.path.join(tmp, "mnt")
        os.makedirs(self.mnt, exist_ok=True)
        self.cfg = os.path.join(tmp, "cfg.yaml")
        with open(self.cfg, "w") as f:
            f.write("seed: 3\n" + pacer_yaml + """
datasets:
  - {name: big, format: raw, files: 16, samples_per_file: 256, sample_size: 1MiB}
""")

    def __enter__(self):
        sh([os.path.join(self.build, "dliofs"), "mount", self.mnt, self.cfg])
        return self

    def __exit__(self, *a):
        subprocess.run([os.path.join(self.build, "dliofs"), "umount", self.mnt])

    def stats(self):
        with open(os.path.join(self.mnt, ".dliofs", "stats.json")) as f:
            return json.load(f)


def fio(mnt, jobs, bs, runtime, rw="read"):
    out = sh(["fio", "--name=acc", "--opendir=" + os.path.join(mnt, "big", "train"),
              "--rw=" + rw, "--bs=" + bs, "--ioengine=psync", "--direct=1",
              "--numjobs=%d" % jobs, "--time_based", "--runtime=%g" % runtime,
              "--group_reporting", "--output-format=json", "--file_service_type=random",
              "--randrepeat=0"])
    j = json.loads(out.stdout[out.stdout.index("{"):])
    r = j["jobs"][0]["read"]
    pct = r["clat_ns"].get("percentile", {})
    return {"bw": r["bw_bytes"], "iops": r["iops"],
            "p50": pct.get("50.000000", 0) / 1e3, "p99": pct.get("99.000000", 0) / 1e3}


def daemon_read(stats):
    rd = stats["classes"]["read"] if "classes" in stats else stats["read"]
    return rd


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--loose", action="store_true",
                    help="with --small in CI: fail only beyond 4x each tolerance (gross errors); "
                         "p99 tails are printed, not checked")
    a = ap.parse_args()
    if not shutil.which("fio"):
        sys.exit("fio is needed")
    rt = 1.5 if a.small else 5.0
    scale = 4.0 if a.loose else 1.0
    rows, bad = [], 0
    tmp = tempfile.mkdtemp(prefix="dliofs-pacer-")
    try:
        # Bandwidth: sequential-ish 1 MiB reads, emulated cache off (direct_io).
        for bw in ("10MB/s", "100MB/s", "1GB/s"):
            want = {"10MB/s": 10e6, "100MB/s": 100e6, "1GB/s": 1e9}[bw]
            for jobs in (1, 4, 16):
                y = "pacer: {read: {bandwidth: %s, burst: 1MiB}}\ncache: {policy: none}\n" % bw
                with Mount(a.build, y, tmp) as m:
                    f = fio(m.mnt, jobs, "1M", rt if want >= 1e8 else rt * 2)
                err = f["bw"] / want - 1
                ceiling = ""
                if err * 100 < -3.0:
                    # Short of the cap: the machine may not reach it at all
                    # (a busy 2-core machine through FUSE). The unshaped
                    # mount with the same readers, in the same run, says.
                    with Mount(a.build, "cache: {policy: none}\n", tmp) as m:
                        top = fio(m.mnt, jobs, "1M", rt)["bw"]
                    if top < want * 1.1:
                        ceiling = " (unshaped: %.3g MB/s, below the cap: not a pacer figure)" % (
                            top / 1e6)
                rows.append(("bandwidth %s, %2d readers" % (bw, jobs), "%.3g MB/s" % (want / 1e6),
                             "%.3g MB/s" % (f["bw"] / 1e6) + ceiling, "-",
                             "%+.1f%%" % (100 * err), 3.0))
                bad += abs(err) * 100 > 3.0 * scale and not ceiling
        # Latency: one reader, 4 KiB reads, so the transfer time is negligible.
        for name, lat, p50, p99 in (("constant 200us", "200us", 200, 200),
                                    ("constant 1ms", "1ms", 1000, 1000),
                                    ("lognormal(1ms, p99 10ms)", "lognormal(1ms,10ms)", 1000, 10000)):
            y = "pacer: {read: {latency: \"%s\"}}\ncache: {policy: none}\n" % lat
            with Mount(a.build, y, tmp) as m:
                f = fio(m.mnt, 1, "4k", rt * 2)
                st = daemon_read(m.stats())
            ours50 = st["latency_us"]["p50"]
            ours99 = st["latency_us"]["p99"]
            late = st.get("lateness_us", {})
            e50, e99 = f["p50"] / p50 - 1, f["p99"] / p99 - 1
            rows.append(("latency %s p50" % name, "%d us" % p50, "%.0f us" % f["p50"],
                         "%.0f us" % ours50, "%+.1f%%" % (100 * e50), 5.0))
            rows.append(("latency %s p99" % name, "%d us" % p99, "%.0f us" % f["p99"],
                         "%.0f us" % ours99, "%+.1f%%" % (100 * e99), 10.0))
            bad += abs(e50) * 100 > 5.0 * scale
            # A tail percentile on a busy 2-core CI machine measures the
            # machine's scheduler, not the pacer: the loose check leaves p99
            # out (it is still printed); the strict run checks fio's view.
            if not a.loose:
                bad += abs(e99) * 100 > 10.0
            if late:
                # Timer precision under this load: reply time minus due time.
                rows.append(("  timer lateness %s p50 / p99" % name, "<= 20 us p50", "-",
                             "%.1f / %.1f us" % (late.get("p50", 0), late.get("p99", 0)), "-", 0.0))
        # IOPS caps with 4 KiB reads, 4 readers.
        for iops in (1000, 20000):
            y = "pacer: {read: {iops: %d}}\ncache: {policy: none}\n" % iops
            with Mount(a.build, y, tmp) as m:
                f = fio(m.mnt, 4, "4k", rt)
            err = f["iops"] / iops - 1
            ceiling = ""
            if err * 100 < -3.0:
                # Short of the cap: as for bandwidth, the unshaped mount with
                # the same readers, in the same run, says whether this
                # machine reaches the cap through FUSE at all just now.
                with Mount(a.build, "cache: {policy: none}\n", tmp) as m:
                    top = fio(m.mnt, 4, "4k", rt)["iops"]
                if top < iops * 1.1:
                    ceiling = " (unshaped: %.0f, below the cap: not a pacer figure)" % top
            rows.append(("iops cap %d, 4 KiB, 4 readers" % iops, "%d" % iops,
                         "%.0f" % f["iops"] + ceiling, "-", "%+.1f%%" % (100 * err), 3.0))
            bad += abs(err) * 100 > 3.0 * scale and not ceiling
    finally:
        shutil.rmtree(tmp, True)
    print("%-42s %12s %14s %12s %9s %6s" % ("case", "configured", "observed(fio)", "daemon", "error", "tol%"))
    for r in rows:
        print("%-42s %12s %14s %12s %9s %6.0f" % r)
    print("%d of %d figures outside tolerance" % (bad, len(rows)))
    if (a.check or a.loose) and bad:
        sys.exit(1)


if __name__ == "__main__":
    main()
