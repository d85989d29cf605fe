#!/usr/bin/env python3
"""Checkpoint write and read-back with dlio-drive --checkpoint-workload
(DLIO 2.0.0's sizing), same run, medians over --runs:

  1. an LLM-like checkpoint scaled to 1.78 GB per rank (the sizes of
     the workload below), written and read back
     - on /dev/shm (tmpfs: the page cache itself; the baseline),
     - through a dliofs sink with no storage model (the FUSE ceiling: no
       data kept, reads served from the remembered sizes),
     - through a sink shaped by configs/storage/nfs-10g.yaml (1 GB/s
       writes, 1.1 GB/s reads: what the model predicts);
  2. DLIO's own megatron_deepspeed.yaml checkpoint section (as the installed
     dlio-benchmark ships it: about 12.3 GB per rank), through the unshaped
     sink only: no disk and no memory is used for it.

Prints a table: GB/s (10^9 B/s) and seconds for the write and the read
back, the cache that served the read (page cache on tmpfs; none through the
sink: direct_io, every read reaches the daemon).
Usage: bench/bench_checkpoint.py [--build DIR] [--runs N] [--ranks N] [--no-megatron]"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV = os.environ.get("DLIOFS_VENV", "/opt/dliofs-venv")

LLM = """model: llm_bench
framework: pytorch
workflow: {generate_data: False, train: False, checkpoint: True}
checkpoint:
  checkpoint_folder: checkpoints/llm
  model_size: 100000000
  type: all_ranks
  optimization_groups: [200000000, 150000000, 50000000]
  num_layers: 8
  layer_parameters: [40000000, 20000000]
  tensor_parallelism: 1
  pipeline_parallelism: 1
"""


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit("failed: %s\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))
    return r


def drive(build, wl, out, ranks):
    cmd = [os.path.join(build, "dlio-drive"), "--config", wl, "--checkpoint-workload", out,
           "--json", "-", "-q"]
    env = None
    if ranks > 1:
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        cmd = ["mpirun", "--oversubscribe", "--allow-run-as-root", "-np", str(ranks)] + cmd
    j = json.loads(run(cmd, env=env, timeout=1800).stdout)
    shutil.rmtree(out, ignore_errors=True)
    return j["overall"]


def megatron_yaml():
    r = subprocess.run([os.path.join(VENV, "bin", "python"), "-c",
                        "import os, dlio_benchmark as d; print(os.path.join(os.path.dirname("
                        "d.__file__), 'configs', 'workload', 'megatron_deepspeed.yaml'))"],
                       capture_output=True, text=True, env=dict(os.environ, DFTRACER_ENABLE="0"))
    path = r.stdout.strip()
    return path if r.returncode == 0 and os.path.exists(path) else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--ranks", type=int, default=1)
    ap.add_argument("--no-megatron", action="store_true")
    a = ap.parse_args()
    dliofs = os.path.join(a.build, "dliofs")
    tmp = tempfile.mkdtemp(prefix="bench-ckpt-")
    shm = tempfile.mkdtemp(prefix="bench-ckpt-", dir="/dev/shm")
    mounts = []
    try:
        wl = os.path.join(tmp, "llm.yaml")
        with open(wl, "w") as f:
            f.write(LLM)
        cases = [("tmpfs (/dev/shm)", None, "page cache")]
        for name, pacer in (("sink, no model", ""),
                            ("sink, nfs-10g", "pacer: {profile: nfs-10g}\n")):
            mnt = os.path.join(tmp, "mnt%d" % len(mounts))
            os.mkdir(mnt)
            cfg = os.path.join(tmp, "sink%d.yaml" % len(mounts))
            with open(cfg, "w") as f:
                f.write("backing:\n  - {at: ckpt, sink: true}\n" + pacer)
            run([dliofs, "mount", mnt, cfg])
            mounts.append(mnt)
            cases.append((name, mnt, "none (direct_io)"))
        res = {c[0]: [] for c in cases}
        for _ in range(a.runs):
            for name, mnt, _ in cases:
                out = os.path.join(mnt, "ckpt", "run") if mnt else os.path.join(shm, "run")
                res[name].append(drive(a.build, wl, out, a.ranks))
        print("checkpoint write + read back, dlio-drive --checkpoint-workload, %d rank%s, "
              "median of %d runs" % (a.ranks, "" if a.ranks == 1 else "s", a.runs))
        print("%-22s %12s %10s %9s %10s %9s  %s" % ("where", "bytes", "write s", "write GB/s",
                                                    "read s", "read GB/s", "read served by"))
        for name, _, cache in cases:
            rs = res[name]
            med = {k: statistics.median(x[k] for x in rs)
                   for k in ("write_s", "write_gb_per_s", "read_s", "read_gb_per_s")}
            print("%-22s %12d %10.3f %9.3f %10.3f %9.3f  %s" % (
                name, rs[0]["bytes"], med["write_s"], med["write_gb_per_s"], med["read_s"],
                med["read_gb_per_s"], cache))
        mg = None if a.no_megatron else megatron_yaml()
        if mg:
            o = drive(a.build, mg, os.path.join(mounts[0], "ckpt", "megatron"), a.ranks)
            print("%-22s %12d %10.3f %9.3f %10.3f %9.3f  %s  (megatron_deepspeed.yaml, one run)"
                  % ("sink, no model", o["bytes"], o["write_s"], o["write_gb_per_s"],
                     o["read_s"], o["read_gb_per_s"], "none (direct_io)"))
    finally:
        for m in mounts:
            subprocess.run([dliofs, "umount", m], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(shm, ignore_errors=True)


if __name__ == "__main__":
    main()
