#!/usr/bin/env python3
"""dlio-drive's overhead, same run, data in memory (dlio-gen output on /dev/shm),
zero computation time:
  - small files: 4000 npz files of ~64 KiB, one sample each: dlio-drive's
    samples/s vs the DLIO benchmark's (PyPI 2.0.0 in the venv, framework
    tensorflow, the same reader threads and batch) -- target >= 5x;
  - large files: 8 x 256 MiB npz files read whole: dlio-drive's MB/s vs fio's
    sequential read with the same threads and block size -- target >= 0.9x.
Prints a table. Usage: bench/bench_drive.py [--build DIR] [--threads N]"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV = os.environ.get("DLIOFS_VENV", "/opt/dliofs-venv")


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def drive(build, cfg, root, threads, batch, epochs, extra=()):
    r = run([os.path.join(build, "dlio-drive"), "--config", cfg, root, "--epochs", str(epochs),
             "--batch-size", str(batch), "--read-threads", str(threads), "--computation-time", "0",
             "--quiet", "--json", "-"] + list(extra))
    return json.loads(r.stdout[r.stdout.index("{"):])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    shm = tempfile.mkdtemp(prefix="dliofs-drive-", dir="/dev/shm")
    tmp = tempfile.mkdtemp(prefix="dliofs-drive-")
    rows = []
    try:
        # --- small files: DLIO vs dlio-drive ---
        small = os.path.join(tmp, "small.yaml")
        with open(small, "w") as f:
            f.write("seed: 1\ndatasets:\n  - {name: small, format: npz, files: 4000, "
                    "samples_per_file: 1, sample_size: 65536}\n")
        run([os.path.join(a.build, "dlio-gen"), "-q", small, shm])
        d = drive(a.build, small, shm, a.threads, 16, 3)
        drive_sps = d.get("summary", d).get("samples_per_s", {})
        drive_sps = drive_sps.get("mean", drive_sps) if isinstance(drive_sps, dict) else drive_sps
        dlio_sps = None
        dlio = os.path.join(VENV, "bin", "dlio_benchmark")
        if os.path.exists(dlio):
            conf = os.path.join(tmp, "conf", "workload")
            os.makedirs(conf)
            with open(os.path.join(conf, "small.yaml"), "w") as f:
                f.write("model: small\nframework: tensorflow\n"
                        "workflow: {generate_data: False, train: True, checkpoint: False}\n"
                        "dataset: {data_folder: %s, format: npz, num_files_train: 4000, "
                        "num_samples_per_file: 1, record_length: 65536}\n"
                        "reader: {data_loader: tensorflow, batch_size: 16, read_threads: %d}\n"
                        "train: {epochs: 3, computation_time: 0}\n" % (os.path.join(shm, "small"),
                                                                       a.threads))
            out = os.path.join(tmp, "dlio-out")
            r = subprocess.run([dlio, "--config-dir=" + os.path.join(tmp, "conf"), "workload=small",
                                "++hydra.run.dir=" + out], cwd=tmp, capture_output=True, text=True,
                               env=dict(os.environ, DFTRACER_ENABLE="0", TF_CPP_MIN_LOG_LEVEL="3"),
                               timeout=1200)
            try:
                with open(os.path.join(out, "summary.json")) as f:
                    m = json.load(f)["metric"]
                dlio_sps = m["train_throughput_mean_samples_per_second"]
            except (OSError, KeyError, ValueError):
                print("DLIO did not report:", (r.stdout + r.stderr)[-2000:], file=sys.stderr)
        rows.append(("small files: dlio-drive samples/s", "%.0f" % drive_sps))
        if dlio_sps:
            rows.append(("small files: DLIO 2.0.0 samples/s (tensorflow loader)", "%.0f" % dlio_sps))
            rows.append(("  ratio dlio-drive / DLIO (target >= 5)", "%.1f" % (drive_sps / dlio_sps)))
        else:
            rows.append(("small files: DLIO", "not installed (scripts/install-deps.sh)"))
        shutil.rmtree(os.path.join(shm, "small"), True)
        # --- large files: fio vs dlio-drive ---
        big = os.path.join(tmp, "big.yaml")
        with open(big, "w") as f:
            f.write("seed: 1\ndatasets:\n  - {name: big, format: npz, files: 8, "
                    "samples_per_file: 1, sample_size: 256MiB}\n")
        run([os.path.join(a.build, "dlio-gen"), "-q", big, shm])
        d = drive(a.build, big, shm, a.threads, 1, 3, ["--io-size", "4MiB"])
        mbs = d.get("summary", d).get("MB_per_s", d.get("summary", d).get("mb_per_s", {}))
        mbs = mbs.get("mean", mbs) if isinstance(mbs, dict) else mbs
        r = run(["fio", "--name=seq", "--opendir=" + os.path.join(shm, "big", "train"), "--rw=read",
                 "--bs=4M", "--ioengine=psync", "--numjobs=%d" % a.threads, "--group_reporting",
                 "--file_service_type=sequential", "--output-format=json", "--loops=3"])
        fio_mbs = json.loads(r.stdout[r.stdout.index("{"):])["jobs"][0]["read"]["bw_bytes"] / 1e6
        rows.append(("large files: dlio-drive MB/s", "%.0f" % mbs))
        rows.append(("large files: fio psync MB/s (%d jobs, 4 MiB)" % a.threads, "%.0f" % fio_mbs))
        rows.append(("  ratio dlio-drive / fio (target >= 0.9)", "%.2f" % (mbs / fio_mbs)))
    finally:
        shutil.rmtree(shm, True)
        shutil.rmtree(tmp, True)
    for k, v in rows:
        print("%-56s %s" % (k, v))


if __name__ == "__main__":
    main()
