#!/usr/bin/env python3
"""dlio-drive against fio on the same files, same run, data in memory
(dlio-gen output on /dev/shm), zero computation time, 2 reader threads:

  - every format it reads differently (raw: a pread per sample; npz: whole
    files; tfrecord: a record stream through transfer_size; hdf5: a hyperslab
    per sample through libhdf5) at samples of 1 KiB, 64 KiB, 4 MiB and
    256 MiB: dlio-drive's MB/s vs fio's sequential psync read of the same
    files with the same threads (each job its own files) and the block size
    dlio-drive's reads have (the sample or --io-size 4 MiB, transfer_size for
    TFRecord) -- target >= 0.9x;
  - small files: 4000 npz files of ~64 KiB, one sample each: dlio-drive's
    samples/s vs the DLIO benchmark's (PyPI 2.0.0 in the venv, tensorflow
    loader, the same reader threads and batch) on the same files.

Medians over --runs, dlio-drive and fio alternating. Prints tables.
Usage: bench/bench_drive.py [--build DIR] [--threads N] [--runs N] [--only FMT,...] [--no-dlio]"""
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
IO_SIZE = 4 << 20
TRANSFER = 256 << 10
KiB, MiB = 1 << 10, 1 << 20
# (sample bytes, files, samples per file) per format family; about 64 MiB to
# 1 GiB per case.
SIZES = {
    1 * KiB: {"per_sample": (4, 16384), "whole": (4096, 1)},
    64 * KiB: {"per_sample": (8, 1024), "whole": (1024, 1)},
    4 * MiB: {"per_sample": (8, 16), "whole": (128, 1)},
    256 * MiB: {"per_sample": (4, 1), "whole": (4, 1)},
}
FORMATS = ("raw", "npz", "tfrecord", "hdf5")


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def drive(build, cfg, root, threads, batch, epochs, extra=()):
    r = run([os.path.join(build, "dlio-drive"), "--config", cfg, root, "--epochs", str(epochs),
             "--batch-size", str(batch), "--read-threads", str(threads), "--computation-time", "0",
             "--io-size", str(IO_SIZE), "--quiet", "--json", "-"] + list(extra))
    return json.loads(r.stdout[r.stdout.index("{"):])["summary"]


def mean_of(v):
    return v.get("mean", v) if isinstance(v, dict) else v


def files_of(root):
    out = []
    for d, dirs, files in os.walk(root):
        dirs.sort()
        out += [os.path.join(d, f) for f in sorted(files)]
    return out


def fio_mbs(tmp, paths, jobs, bs, loops):
    """Aggregate MB/s of `jobs` fio jobs, each reading its share of the files
    (hard links in a directory per job: fio's job file cannot list thousands
    of names). Page-aligned buffers, as dlio-drive's: fio's default buffers
    made its 1 MiB+ reads 3-4x slower on the dev VM."""
    job = os.path.join(tmp, "job.fio")
    dirs = []
    for j in range(jobs):
        d = os.path.join(os.path.dirname(paths[0]), ".fio%d" % j)
        os.makedirs(d)
        for i, p in enumerate(paths[j::jobs]):
            os.link(p, os.path.join(d, "%08d" % i))
        dirs.append(d)
    try:
        with open(job, "w") as f:
            f.write("[global]\nrw=read\nbs=%d\nioengine=psync\niomem_align=4k\n"
                    "file_service_type=sequential\ngroup_reporting=1\nloops=%d\n" % (bs, loops))
            for j, d in enumerate(dirs):
                f.write("[r%d]\nopendir=%s\n" % (j, d))
        r = run(["fio", "--output-format=json", job])
    finally:
        for d in dirs:
            shutil.rmtree(d, True)
    return json.loads(r.stdout[r.stdout.index("{"):])["jobs"][0]["read"]["bw_bytes"] / 1e6


def pow2_floor(n):
    p = 512
    while p * 2 <= n:
        p *= 2
    return p


def dlio_small(a, tmp, shm):
    """samples/s of DLIO 2.0.0 and dlio-drive on 4000 npz files of 64 KiB."""
    small = os.path.join(tmp, "small.yaml")
    with open(small, "w") as f:
        f.write("seed: 1\ndatasets:\n  - {name: small, format: npz, files: 4000, "
                "samples_per_file: 1, sample_size: 65536}\n")
    run([os.path.join(a.build, "dlio-gen"), "-q", small, shm])
    sps = [mean_of(drive(a.build, small, shm, a.threads, 16, 3)["samples_per_s"])
           for _ in range(a.runs)]
    dlio_sps = None
    dlio = os.path.join(VENV, "bin", "dlio_benchmark")
    if os.path.exists(dlio) and not a.no_dlio:
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
                dlio_sps = json.load(f)["metric"]["train_throughput_mean_samples_per_second"]
        except (OSError, KeyError, ValueError):
            print("DLIO did not report:", (r.stdout + r.stderr)[-2000:], file=sys.stderr)
    shutil.rmtree(os.path.join(shm, "small"), True)
    return statistics.median(sps), dlio_sps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--only", help="comma-separated formats")
    ap.add_argument("--no-dlio", action="store_true", help="skip the DLIO 2.0.0 comparison")
    a = ap.parse_args()
    fmts = a.only.split(",") if a.only else FORMATS
    shm = tempfile.mkdtemp(prefix="dliofs-drive-", dir="/dev/shm")
    tmp = tempfile.mkdtemp(prefix="dliofs-drive-")
    rows = []
    try:
        for fmt in fmts:
            for size, shapes in SIZES.items():
                files, spf = shapes["whole" if fmt == "npz" else "per_sample"]
                cfg = os.path.join(tmp, "c.yaml")
                with open(cfg, "w") as f:
                    f.write("seed: 1\ndatasets:\n  - {name: d, format: %s, files: %d, "
                            "samples_per_file: %d, sample_size: %d}\n" % (fmt, files, spf, size))
                run([os.path.join(a.build, "dlio-gen"), "-q", cfg, shm])
                paths = files_of(os.path.join(shm, "d"))
                fsize = min(os.path.getsize(p) for p in paths)
                if fmt == "tfrecord":
                    bs = TRANSFER
                elif fmt == "npz":
                    bs = pow2_floor(min(fsize, IO_SIZE))
                else:
                    bs = pow2_floor(min(size, IO_SIZE))
                # Batches of about 1 MiB (at least 4 samples): a job with 1 KiB
                # samples does not hand its accelerator 4 KiB batches.
                batch = max(4, min(1024, MiB // size))
                d, o = [], []
                for _ in range(a.runs):
                    d.append(mean_of(drive(a.build, cfg, shm, a.threads, batch,
                                           a.epochs)["mb_per_s"]))
                    o.append(fio_mbs(tmp, paths, a.threads, bs, a.epochs))
                dm, om = statistics.median(d), statistics.median(o)
                rows.append((fmt, size, len(paths), bs, batch, dm, om, dm / om, d, o))
                shutil.rmtree(os.path.join(shm, "d"), True)
                print("%-9s %9d B: dlio-drive %8.0f MB/s, fio %8.0f MB/s, ratio %.2f" % (
                    fmt, size, dm, om, dm / om), file=sys.stderr, flush=True)
        small = dlio_small(a, tmp, shm)
    finally:
        shutil.rmtree(shm, True)
        shutil.rmtree(tmp, True)
    print("dlio-drive vs fio, same files on /dev/shm, %d threads, medians of %d runs" % (
        a.threads, a.runs))
    print("%-9s %10s %6s %6s %8s | %10s %10s %6s" % ("format", "sample", "files", "batch",
                                                     "fio bs", "drive MB/s", "fio MB/s", "ratio"))
    for fmt, size, nf, bs, batch, dm, om, ratio, d, o in rows:
        print("%-9s %10s %6d %6d %8s | %10.0f %10.0f %6.2f" % (
            fmt, human(size), nf, batch, human(bs), dm, om, ratio))
    drive_sps, dlio_sps = small
    print()
    print("4000 npz files of 64 KiB, batch 16: dlio-drive %.0f samples/s" % drive_sps)
    if dlio_sps:
        print("DLIO 2.0.0 (tensorflow loader), same files: %.0f samples/s; ratio %.1fx" % (
            dlio_sps, drive_sps / dlio_sps))
    else:
        print("DLIO 2.0.0: not run (not installed, or --no-dlio)")
    print("per-run MB/s (dlio-drive | fio):")
    for fmt, size, nf, bs, batch, dm, om, ratio, d, o in rows:
        print("  %s %s: %s | %s" % (fmt, human(size), " ".join("%.0f" % v for v in d),
                                    " ".join("%.0f" % v for v in o)))


def human(n):
    for unit, k in (("MiB", MiB), ("KiB", KiB)):
        if n >= k and n % k == 0:
            return "%d %s" % (n // k, unit)
    return "%d B" % n


if __name__ == "__main__":
    main()
