#!/usr/bin/env python3
"""What the daemon's bookkeeping costs: the same fio reads through
  - an unshaped mount (--no-pacer: no storage model, no statistics),
  - the default mount (pacer present with no limits: statistics only),
  - the default mount with tracing on,
at 1 MiB and 4 KiB reads, direct_io so every read reaches the daemon. Each
configuration is mounted fresh and measured ROUNDS times, interleaved, and the
median is kept. Prints a table with ratios to the unshaped mount.

  bench/bench_overhead.py [--build DIR] [--rounds N] [--runtime S]"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CFG = """seed: 4
io: direct
datasets:
  - {name: big, format: raw, files: 4, samples_per_file: 512, sample_size: 1MiB}
"""


def fio(path, bs, runtime):
    r = subprocess.run(["fio", "--name=o", "--opendir=" + path, "--rw=randread" if bs == "4k" else "--rw=read",
                        "--bs=" + bs, "--ioengine=psync", "--direct=1", "--time_based",
                        "--runtime=%g" % runtime, "--output-format=json", "--randrepeat=0"],
                       check=True, capture_output=True, text=True)
    j = json.loads(r.stdout[r.stdout.index("{"):])
    return j["jobs"][0]["read"]["bw_bytes"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runtime", type=float, default=3.0)
    a = ap.parse_args()
    if not shutil.which("fio"):
        sys.exit("fio is needed")
    dliofs = os.path.join(a.build, "dliofs")
    tmp = tempfile.mkdtemp(prefix="dliofs-ovh-")
    mnt = os.path.join(tmp, "mnt")
    os.makedirs(mnt)
    cfg = os.path.join(tmp, "cfg.yaml")
    with open(cfg, "w") as f:
        f.write(CFG)
    modes = [("unshaped (--no-pacer)", ["--no-pacer"], False),
             ("pacer on, no limits (stats)", [], False),
             ("pacer on + tracing all ops", [], True)]
    res = {}
    try:
        for bs in ("1M", "4k"):
            for _ in range(a.rounds):
                for name, args, trace in modes:
                    subprocess.run([dliofs, "mount", mnt, cfg] + args, check=True)
                    try:
                        if trace:
                            subprocess.run([dliofs, "trace", "start", mnt, os.path.join(tmp, "t.trc")],
                                           check=True)
                        bw = fio(os.path.join(mnt, "big", "train"), bs, a.runtime)
                        if trace:
                            subprocess.run([dliofs, "trace", "stop", mnt], check=True)
                            st = subprocess.run([os.path.join(a.build, "dlio-trace"), "summary", "--json",
                                                 os.path.join(tmp, "t.trc")], capture_output=True, text=True)
                            try:
                                dropped = json.loads(st.stdout).get("dropped", 0)
                            except ValueError:
                                dropped = "?"
                            res.setdefault(("dropped", bs), []).append(dropped)
                    finally:
                        subprocess.run([dliofs, "umount", mnt])
                    res.setdefault((name, bs), []).append(bw)
    finally:
        shutil.rmtree(tmp, True)
    print("%-32s %6s %12s %9s" % ("mount", "reads", "MB/s (median)", "vs unshaped"))
    for bs in ("1M", "4k"):
        base = statistics.median(res[(modes[0][0], bs)])
        for name, _, _ in modes:
            v = statistics.median(res[(name, bs)])
            print("%-32s %6s %12.1f %9.3f" % (name, bs, v / 1e6, v / base))
        print("%-32s %6s %12s" % ("  trace records dropped", bs, res.get(("dropped", bs))))


if __name__ == "__main__":
    main()
