#!/usr/bin/env python3
"""Per format, same run: sequential 1 MiB reads of every file through a fresh
mount vs the same files written by dlio-gen to tmpfs (MB/s, ratio), and the
time to first byte of a cold file (open + 1-byte read of a file never touched
since the mount). Then images: files/s served to a PyTorch DataLoader with PIL
decode (ImageFolder), ours vs dlio-gen's copy on tmpfs. Prints tables.

  bench/bench_formats.py [--build DIR] [--workers N]"""
import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CFG = """seed: 9
datasets:
  - {name: npz, format: npz, files: 24, sample_size: 16MB}
  - {name: npy, format: npy, files: 24, samples_per_file: 4, shape: [512, 512, 4], dtype: float32}
  - {name: tfrecord, format: tfrecord, files: 8, samples_per_file: 400, sample_size: 114244}
  - {name: tfrecord_gz, format: tfrecord, files: 8, samples_per_file: 400, sample_size: 114244, compression: gzip}
  - {name: hdf5, format: hdf5, files: 12, samples_per_file: 64, shape: [256, 256], dtype: float32}
  - {name: dlrm, format: dlrm, files: 4, samples_per_file: 500000}
  - {name: jpeg, format: jpeg, files: 2000, width: 500, height: 375, color: RGB420, sample_size: 110kB}
  - {name: png, format: png, files: 400, width: 256, height: 256, color: RGB}
  - {name: imagenet, format: jpeg, files: 2000, classes: 10, width: 256, height: 256, color: RGB420, sample_size: 40kB}
"""


def read_tree(root):
    n = 0
    t0 = time.monotonic()
    for d, dirs, files in os.walk(root):
        dirs.sort()
        for f in sorted(files):
            with open(os.path.join(d, f), "rb", buffering=0) as fh:
                while True:
                    b = fh.read(1 << 20)
                    if not b:
                        break
                    n += len(b)
    return n, time.monotonic() - t0


def first_files(root, k=5):
    out = []
    for d, dirs, files in os.walk(root):
        dirs.sort()
        out += [os.path.join(d, f) for f in sorted(files)]
    return out[-k:]


def ttfb(paths):
    ts = []
    for p in paths:
        t0 = time.monotonic()
        with open(p, "rb", buffering=0) as f:
            f.read(1)
        ts.append(time.monotonic() - t0)
    return statistics.median(ts)


def loader_files_per_s(root, workers):
    import torch
    from torch.utils.data import DataLoader
    from torchvision import datasets, transforms
    tf = transforms.Compose([transforms.RandomResizedCrop(224), transforms.ToTensor()])
    ds = datasets.ImageFolder(root, transform=tf)
    t0 = time.monotonic()
    n = 0
    for x, y in DataLoader(ds, batch_size=32, num_workers=workers, shuffle=True):
        n += x.shape[0]
    return n / (time.monotonic() - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    dliofs = os.path.join(a.build, "dliofs")
    tmp = tempfile.mkdtemp(prefix="dliofs-fmt-")
    shm = tempfile.mkdtemp(prefix="dliofs-fmt-", dir="/dev/shm")
    mnt = os.path.join(tmp, "mnt")
    os.makedirs(mnt)
    cfg = os.path.join(tmp, "cfg.yaml")
    with open(cfg, "w") as f:
        f.write(CFG)
    names = [l.split("name: ")[1].split(",")[0] for l in CFG.splitlines() if "name: " in l]
    res = {}
    try:
        # The mount first (fresh per format, cold), then tmpfs: see bench_read.sh.
        for n in names:
            subprocess.run([dliofs, "mount", mnt, cfg], check=True)
            try:
                t = ttfb(first_files(os.path.join(mnt, n)))
                b, dt = read_tree(os.path.join(mnt, n))
                res[n] = {"mnt": b / dt, "ttfb": t, "bytes": b}
            finally:
                subprocess.run([dliofs, "umount", mnt], check=True)
        subprocess.run([dliofs, "mount", mnt, cfg], check=True)
        try:
            ours = loader_files_per_s(os.path.join(mnt, "imagenet", "train"), a.workers)
        finally:
            subprocess.run([dliofs, "umount", mnt], check=True)
        subprocess.run([os.path.join(a.build, "dlio-gen"), "-q", cfg, shm], check=True)
        for n in names:
            res[n]["ttfb_tmpfs"] = ttfb(first_files(os.path.join(shm, n)))
            b, dt = read_tree(os.path.join(shm, n))
            res[n]["tmpfs"] = b / dt
        theirs = loader_files_per_s(os.path.join(shm, "imagenet", "train"), a.workers)
    finally:
        subprocess.run([dliofs, "umount", mnt], capture_output=True)
        shutil.rmtree(tmp, True)
        shutil.rmtree(shm, True)
    print("%-12s %9s %11s %11s %7s %12s %12s" % ("format", "MB", "mount MB/s", "tmpfs MB/s",
                                                 "ratio", "TTFB mount", "TTFB tmpfs"))
    for n in names:
        r = res[n]
        print("%-12s %9.0f %11.0f %11.0f %7.2f %10.0f us %10.0f us" % (
            n, r["bytes"] / 1e6, r["mnt"] / 1e6, r["tmpfs"] / 1e6, r["mnt"] / r["tmpfs"],
            r["ttfb"] * 1e6, r["ttfb_tmpfs"] * 1e6))
    print("ImageFolder + DataLoader(%d workers) + PIL decode + RandomResizedCrop(224): "
          "mount %.0f files/s, tmpfs %.0f files/s, ratio %.2f" % (a.workers, ours, theirs, ours / theirs))
    print("(python reads with unbuffered 1 MiB f.read; io: cache, default --readahead)")


if __name__ == "__main__":
    main()
