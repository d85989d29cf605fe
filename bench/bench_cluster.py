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

    python3 bench/bench_cluster.py [--nodes 2,4,8] [--secs 4] [--budget 100MB/s]
"""
import argparse
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", default="2,4,8")
    ap.add_argument("--secs", type=float, default=4.0)
    ap.add_argument("--budget", default="100MB/s")
    ap.add_argument("--streams", type=int, default=2)
    ap.add_argument("--period", default="10ms")
    a = ap.parse_args()
    budget = parse_rate(a.budget)
    print("| N | aggregate MB/s (budget %.0f) | per node MB/s min..max | worst 100 ms over budget, "
          "steady | same, N-1 nodes joining |" % (budget / 1e6))
    print("|---|---|---|---|---|")
    for n in (int(x) for x in a.nodes.split(",")):
        rates, steady, join = run(n, a.secs, budget, a.streams, a.period)
        tot = sum(rates)
        print("| %d | %.1f (%+.1f%%) | %.1f..%.1f | %.2f MiB | %.2f MiB |" % (
            n, tot / 1e6, (tot / budget - 1) * 100, min(rates) / 1e6, max(rates) / 1e6,
            steady / 2**20, join / 2**20), flush=True)


if __name__ == "__main__":
    main()
