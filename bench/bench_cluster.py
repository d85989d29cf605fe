#!/usr/bin/env python3
"""A cluster of mounts on one machine (README "Cluster"): for each N, one
mpirun starts N dliofs daemons as one storage system with a shared read
budget, and a reader per mount (STREAMS threads reading 1 MiB at a time)
runs for SECS. Prints, per N: the aggregate against the budget, each
node's share (min and max), and the overshoot: the most bytes any 100 ms
window moved beyond the budget's, in the steady state and when N-1 nodes
join one that had the whole budget. The figures are the daemons' own, from
their traces (each node traces, trace.file with {rank}; replies on one
monotonic clock; rates over the run less its first 0.5 s), not the
readers', whose view a loaded machine bunches up.

A second table (--modes drive) runs a dlio-drive rank per mount under one
mpirun instead (`--data-dir m{rank}`: rank r reads node r's mount, its
DLIO shard of one epoch of 4 MiB npz files, no computation time), with the
same budget: the aggregate and per-node rates from the daemons' traces
(while every node reads) beside dlio-drive's own report (the job's MB/s,
summed over ranks, and each rank's). The fair case (--modes fair) runs two
dlio-drive jobs on a cluster of 4 under `share: {policy: fair}`: job A of
3 ranks on nodes 0-2 and job B of 1 rank on node 3, the same bytes each;
each should get half (fcfs would give B a quarter).

    python3 bench/bench_cluster.py [--nodes 2,4,8] [--secs 4] [--budget 100MB/s]
                                   [--modes readers,drive,fair]
"""
import argparse
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.environ.get("DLIOFS_BUILD", os.path.join(os.path.dirname(HERE), "build"))
DLIOFS = os.environ.get("DLIOFS", os.path.join(BUILD, "dliofs"))
DRIVE = os.environ.get("DLIO_DRIVE", os.path.join(BUILD, "dlio-drive"))

# Read from start until start + secs; print one line per read: the time
# it completed and its bytes.
CLIENT = r"""
import os, sys, threading, time
root, first, start, secs, streams = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
end = start + secs
log = []
def read(k):
    buf = bytearray(1 << 20)
    files = sorted(os.listdir(root))
    i = first + k
    while time.time() < end:
        fd = os.open(os.path.join(root, files[i % len(files)]), os.O_RDONLY)
        while time.time() < end:
            n = os.readv(fd, [buf])
            log.append((time.time(), n))
            if n < len(buf):
                break
        os.close(fd)
        i += streams
while time.time() < start:
    time.sleep(0.001)
ts = [threading.Thread(target=read, args=(k,)) for k in range(streams)]
for t in ts: t.start()
for t in ts: t.join()
sys.stdout.write("".join("%.6f %d\n" % e for e in log))
"""


def parse_rate(s):
    units = {"GB/s": 1e9, "MB/s": 1e6, "kB/s": 1e3}
    for u, f in units.items():
        if s.endswith(u):
            return float(s[:-len(u)]) * f
    return float(s)


def clients(jobs, secs, streams, lead=1.5):
    """jobs: (root, first, delay); per client its (time, bytes) reads."""
    start = time.time() + lead
    procs = [subprocess.Popen([sys.executable, "-c", CLIENT, root, str(first),
                               repr(start + delay), str(secs - delay), str(streams)],
                              stdout=subprocess.PIPE, text=True)
             for root, first, delay in jobs]
    out = []
    for p in procs:
        o, _ = p.communicate()
        out.append([(float(a), int(b)) for a, b in (ln.split() for ln in o.splitlines())])
    return start, out


def trace_replies(path):
    """(wall time of the reply, bytes) of each read a node's trace holds."""
    with open(path, "rb") as f:
        data = f.read()
    magic, version, rec_size, epoch, mono0, ops, node = struct.unpack_from("<8sIIQQII", data, 0)
    nrec = struct.unpack_from("<Q", data, len(data) - 48)[0]
    out = []
    for i in range(nrec):
        start, dlo, dhi, op, flags, q, pid, tid, res = struct.unpack_from(
            "<QIHBBIIIi", data, 296 + i * rec_size)
        if op == 4 and res > 0:  # DL_TOP_READ
            done = start + (dlo | dhi << 32)
            out.append(((epoch + done - mono0) / 1e9, res))
    return out


def worst_window(ev, t0, t1, budget, w=0.1):
    """The most bytes any w-second window in [t0, t1] moved beyond
    budget * w (10 ms steps)."""
    ev = sorted(e for e in ev if t0 <= e[0] <= t1)
    worst, t = 0.0, t0
    while t + w <= t1:
        got = sum(n for ts, n in ev if t <= ts < t + w)
        worst = max(worst, got - budget * w)
        t += 0.01
    return worst


def run(n, secs, budget, streams, period):
    tmp = tempfile.mkdtemp(prefix="dliofs-bench-cluster-")
    cfg = os.path.join(tmp, "c.yaml")
    with open(cfg, "w") as f:
        f.write("io: direct\ndatasets:\n  - {name: d, format: raw, files: 64, sample_size: 4MiB}\n"
                "pacer:\n  read.bandwidth: %dB/s\ncluster: {period: %s}\n"
                "trace: {file: '%s', ops: [read]}\n"
                % (budget, period, os.path.join(tmp, "t{rank}.bin")))
    mnts = [os.path.join(tmp, "m%d" % i) for i in range(n)]
    for m in mnts:
        os.mkdir(m)
    cmd = ["mpirun", "-np", str(n), "--oversubscribe"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    cmd += [DLIOFS, "mount", "-f", os.path.join(tmp, "m{rank}"), cfg]
    log = open(os.path.join(tmp, "mpirun.log"), "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.time() + 60
        while not all(os.path.ismount(m) for m in mnts):
            if proc.poll() is not None or time.time() > deadline:
                raise SystemExit("cluster of %d did not mount: %s" %
                                 (n, open(log.name).read()))
            time.sleep(0.05)
        roots = [os.path.join(m, "d", "train") for m in mnts]
        # Steady state: every node reads.
        start, _ = clients([(r, 8 * i, 0) for i, r in enumerate(roots)], secs, streams)
        time.sleep(0.5)
        # Joining: node 0 alone for a second, then the others.
        jstart, _ = clients([(r, 8 * i, 0 if i == 0 else 1.0) for i, r in enumerate(roots)],
                            2.0, streams)
    finally:
        for m in mnts:
            if os.path.ismount(m):
                subprocess.run([DLIOFS, "umount", m], capture_output=True)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
    per = [trace_replies(os.path.join(tmp, "t%d.bin" % i)) for i in range(n)]
    shutil.rmtree(tmp, True)
    # Each node's rate from its own trace, over the steady part.
    t0, t1 = start + 0.5, start + secs
    rates = [sum(b for t, b in ev if t0 <= t < t1) / (t1 - t0) for ev in per]
    ev = [e for p in per for e in p]
    steady = worst_window(ev, start + 0.2, start + secs, budget)
    join = worst_window(ev, jstart + 0.8, jstart + 1.6, budget)
    return rates, steady, join


def mpirun(n):
    cmd = ["mpirun", "-np", str(n), "--oversubscribe", "--bind-to", "none"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    return cmd


def start_cluster(n, tmp, cfg_text):
    """mpirun -np n dliofs mount -f tmp/m{rank}: (mountpoints, process, log)."""
    cfg = os.path.join(tmp, "c.yaml")
    with open(cfg, "w") as f:
        f.write(cfg_text)
    mnts = [os.path.join(tmp, "m%d" % i) for i in range(n)]
    for m in mnts:
        os.mkdir(m)
    log = open(os.path.join(tmp, "mpirun.log"), "w")
    proc = subprocess.Popen(mpirun(n) + [DLIOFS, "mount", "-f", os.path.join(tmp, "m{rank}"), cfg],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.time() + 60
    while not all(os.path.ismount(m) for m in mnts):
        if proc.poll() is not None or time.time() > deadline:
            stop_cluster(mnts, proc, log)
            raise SystemExit("cluster of %d did not mount: %s" % (n, open(log.name).read()))
        time.sleep(0.05)
    return cfg, mnts, proc, log


def stop_cluster(mnts, proc, log):
    for m in mnts:
        if os.path.ismount(m):
            subprocess.run([DLIOFS, "umount", m], capture_output=True)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    log.close()


def drive(n, cfg, dataset, data_dir, out, job=None):
    """mpirun -np n dlio-drive, one epoch, reading as fast as the mount
    serves (no computation time): its Popen."""
    cmd = mpirun(n)
    if job:
        cmd += ["-x", "DLIOFS_JOB=%s" % job]
    cmd += [DRIVE, "--config", cfg, "--dataset", dataset, "--data-dir", data_dir,
            "--batch-size", "4", "--read-threads", "2", "--epochs", "1", "--quiet",
            "--json", out]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def drive_done(p, out):
    _, err = p.communicate(timeout=600)
    if p.returncode:
        raise SystemExit("dlio-drive failed (%d): %s" % (p.returncode, err))
    with open(out) as f:
        j = json.load(f)
    e = j["epochs"][0]
    return e["mb_per_s"] * 1e6, [r["epochs"][0]["mb_per_s"] * 1e6 for r in j["per_rank"]]


def busy_window(per, lead=0.5):
    """[t0, t1]: from `lead` s after the first reply until the first node
    stops (every node reads in between)."""
    t0 = min(ev[0][0] for ev in per if ev) + lead
    t1 = min(ev[-1][0] for ev in per if ev)
    return t0, t1


def node_rates(per, t0, t1):
    return [sum(b for t, b in ev if t0 <= t < t1) / (t1 - t0) for ev in per]


DRIVE_CFG = """io: direct
datasets:
  - {name: d, format: npz, files: %d, samples_per_file: 1, sample_size: 4MiB}
  - {name: a, format: npz, files: 60, samples_per_file: 1, sample_size: 4MiB}
  - {name: b, format: npz, files: 60, samples_per_file: 1, sample_size: 4MiB}
pacer:
  read.bandwidth: %dB/s
%scluster: {period: %s}
trace: {file: '%s', ops: [read]}
"""


def run_drive(n, budget, period, secs):
    """A dlio-drive rank per mount: (node rates from the traces, the job's
    MB/s and each rank's from dlio-drive's report, window seconds)."""
    tmp = tempfile.mkdtemp(prefix="dliofs-bench-cluster-drive-")
    # secs + 1 seconds of reading at the budget, at least, in whole batches
    # of 4 per rank.
    step = 4 * n
    files = -(-int(budget * (secs + 1) / (4 << 20)) // step) * step
    cfg, mnts, proc, log = start_cluster(n, tmp, DRIVE_CFG % (
        files, budget, "", period, os.path.join(tmp, "t{rank}.bin")))
    try:
        out = os.path.join(tmp, "drive.json")
        job, ranks = drive_done(drive(n, cfg, "d", os.path.join(tmp, "m{rank}"), out), out)
    finally:
        stop_cluster(mnts, proc, log)
    per = [sorted(trace_replies(os.path.join(tmp, "t%d.bin" % i))) for i in range(n)]
    shutil.rmtree(tmp, True)
    t0, t1 = busy_window(per)
    return node_rates(per, t0, t1), job, ranks, t1 - t0


def run_fair(budget, period):
    """Two dlio-drive jobs on a cluster of 4 under share.policy fair: A of 3
    ranks on nodes 0-2, B of 1 rank on node 3, 60 files of 4 MiB each."""
    tmp = tempfile.mkdtemp(prefix="dliofs-bench-cluster-fair-")
    cfg, mnts, proc, log = start_cluster(4, tmp, DRIVE_CFG % (
        4, budget, "  share: {policy: fair}\n", period, os.path.join(tmp, "t{rank}.bin")))
    try:
        oa, ob = os.path.join(tmp, "a.json"), os.path.join(tmp, "b.json")
        # Job A's ranks 0-2 read m0-m2 ({rank}); job B's one rank reads m3.
        pa = drive(3, cfg, "a", os.path.join(tmp, "m{rank}"), oa, job="A")
        pb = drive(1, cfg, "b", os.path.join(tmp, "m3"), ob, job="B")
        ja, _ = drive_done(pa, oa)
        jb, _ = drive_done(pb, ob)
    finally:
        stop_cluster(mnts, proc, log)
    per = [sorted(trace_replies(os.path.join(tmp, "t%d.bin" % i))) for i in range(4)]
    shutil.rmtree(tmp, True)
    t0, t1 = busy_window(per)
    rates = node_rates(per, t0, t1)
    return sum(rates[:3]), rates[3], ja, jb, t1 - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", default="2,4,8")
    ap.add_argument("--secs", type=float, default=4.0)
    ap.add_argument("--budget", default="100MB/s")
    ap.add_argument("--streams", type=int, default=2)
    ap.add_argument("--period", default="10ms")
    ap.add_argument("--modes", default="readers,drive,fair",
                    help="readers (Python readers), drive (a dlio-drive rank per mount), "
                         "fair (two dlio-drive jobs under share.policy fair)")
    a = ap.parse_args()
    budget = parse_rate(a.budget)
    modes = a.modes.split(",")
    nodes = [int(x) for x in a.nodes.split(",")]
    print("load average before: %.1f %.1f %.1f" % os.getloadavg(), flush=True)
    if "readers" in modes:
        print("| N | aggregate MB/s (budget %.0f) | per node MB/s min..max | worst 100 ms over "
              "budget, steady | same, N-1 nodes joining |" % (budget / 1e6))
        print("|---|---|---|---|---|")
        for n in nodes:
            rates, steady, join = run(n, a.secs, budget, a.streams, a.period)
            tot = sum(rates)
            print("| %d | %.1f (%+.1f%%) | %.1f..%.1f | %.2f MiB | %.2f MiB |" % (
                n, tot / 1e6, (tot / budget - 1) * 100, min(rates) / 1e6, max(rates) / 1e6,
                steady / 2**20, join / 2**20), flush=True)
    if "drive" in modes:
        print("\n| N ranks = mounts | aggregate MB/s, daemons' traces (budget %.0f) | per node "
              "MB/s min..max (fair share: within) | dlio-drive job MB/s (its report) | per rank "
              "MB/s min..max (report) |" % (budget / 1e6))
        print("|---|---|---|---|---|")
        for n in nodes:
            rates, job, ranks, win = run_drive(n, budget, a.period, a.secs)
            tot, fair = sum(rates), budget / n
            dev = max(abs(r / fair - 1) for r in rates)
            print("| %d | %.1f (%+.1f%%, over %.1f s) | %.1f..%.1f (%.1f%%) | %.1f | %.1f..%.1f |"
                  % (n, tot / 1e6, (tot / budget - 1) * 100, win, min(rates) / 1e6,
                     max(rates) / 1e6, dev * 100, job / 1e6, min(ranks) / 1e6,
                     max(ranks) / 1e6), flush=True)
    if "fair" in modes:
        a3, b1, ja, jb, win = run_fair(budget, a.period)
        print("\nfair, 4 mounts: job A (3 ranks, nodes 0-2) %.1f MB/s, job B (1 rank, node 3) "
              "%.1f MB/s, total %.1f (%+.1f%%) over %.1f s (daemons' traces); dlio-drive's "
              "reports (whole epoch): A %.1f, B %.1f MB/s" % (
                  a3 / 1e6, b1 / 1e6, (a3 + b1) / 1e6, ((a3 + b1) / budget - 1) * 100, win,
                  ja / 1e6, jb / 1e6), flush=True)
    print("load average after: %.1f %.1f %.1f" % os.getloadavg())


if __name__ == "__main__":
    main()
