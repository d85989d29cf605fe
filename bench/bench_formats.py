#!/usr/bin/env python3
"""Per format, same run: sequential 1 MiB reads of every file (Python,
os.readv into one buffer; bench/pyread.py) through a fresh dliofs mount, in
page-cache (io: cache) and direct (io: direct) modes, 1 and 2 readers, beside
three baselines measured in the same run: the raw format through the same
mount (the goal: every format >= 0.9x raw), dl-noopfs serving files of the
same count and size (the FUSE ceiling: keep_cache / direct_io as the mode),
and dlio-gen's copy on tmpfs. Every pass is cold (fresh mount, page cache
dropped). Medians over --runs. Then the time to first byte of a cold file,
and images: files/s served to a PyTorch DataLoader with PIL decode
(ImageFolder), ours vs tmpfs. Prints tables.

  bench/bench_formats.py [--build DIR] [--runs N] [--workers N] [--only a,b]"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pyread  # noqa: E402

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CFG = """seed: 9
io: {io}
datasets:
  - {{name: raw, format: raw, files: 24, samples_per_file: 16, sample_size: 1MB}}
  - {{name: npz, format: npz, files: 24, sample_size: 16MB}}
  - {{name: npz_zip, format: npz, files: 24, sample_size: 16MB, compression: zip}}
  - {{name: npy, format: npy, files: 24, samples_per_file: 4, shape: [512, 512, 4], dtype: float32}}
  - {{name: tfrecord, format: tfrecord, files: 8, samples_per_file: 400, sample_size: 114244}}
  - {{name: tfrecord_gz, format: tfrecord, files: 8, samples_per_file: 400, sample_size: 114244, compression: gzip}}
  - {{name: hdf5, format: hdf5, files: 12, samples_per_file: 64, shape: [256, 256], dtype: float32}}
  - {{name: hdf5_gz, format: hdf5, files: 12, samples_per_file: 64, shape: [256, 256], dtype: uint8, compression: gzip, hdf5: {{chunks: [8, 256, 256]}}}}
  - {{name: dlrm, format: dlrm, files: 4, samples_per_file: 500000}}
  - {{name: png_large, format: png, files: 24, width: 4096, height: 1365, color: RGB}}
  - {{name: jpeg, format: jpeg, files: 2000, width: 500, height: 375, color: RGB420, sample_size: 110kB}}
  - {{name: png, format: png, files: 400, width: 256, height: 256, color: RGB}}
  - {{name: imagenet, format: jpeg, files: 2000, classes: 10, width: 256, height: 256, color: RGB420, sample_size: 40kB}}
"""
MODES = ("cache", "direct")
READERS = (1, 2)


def files_of(root):
    out = []
    for d, dirs, files in os.walk(root):
        dirs.sort()
        out += [os.path.join(d, f) for f in sorted(files)]
    return out


def drop_caches():
    subprocess.run(["sync"])
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError:
        pass


def rate(paths, jobs):
    n, dt = pyread.read_parallel(paths, jobs)
    return n / dt / 1e6


class Noop:
    """dl-noopfs with `files` files of `size` bytes, mounted while in a with."""

    def __init__(self, build, mnt, files, size, direct):
        self.args = [os.path.join(build, "dl-noopfs"), mnt, "--files", str(files),
                     "--size", str(size)] + (["--direct"] if direct else [])
        self.mnt = mnt

    def __enter__(self):
        self.p = subprocess.Popen(self.args)
        for _ in range(200):
            try:
                if os.stat(self.mnt).st_ino == 1:
                    return self
            except OSError:
                pass
            time.sleep(0.02)
        raise RuntimeError("dl-noopfs did not come up")

    def __exit__(self, *exc):
        subprocess.run(["fusermount3", "-u", self.mnt], check=False)
        self.p.wait()


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
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--only", help="comma-separated dataset names (raw is always measured)")
    ap.add_argument("--no-loader", action="store_true", help="skip the DataLoader comparison")
    a = ap.parse_args()
    dliofs = os.path.join(a.build, "dliofs")
    tmp = tempfile.mkdtemp(prefix="dliofs-fmt-")
    shm = tempfile.mkdtemp(prefix="dliofs-fmt-", dir="/dev/shm")
    mnt = os.path.join(tmp, "mnt")
    os.makedirs(mnt)
    cfg = {}
    for io in MODES:
        cfg[io] = os.path.join(tmp, "cfg-%s.yaml" % io)
        with open(cfg[io], "w") as f:
            f.write(CFG.format(io=io))
    names = [l.split("name: ")[1].split(",")[0] for l in CFG.splitlines() if "name: " in l]
    names.remove("imagenet")
    if a.only:
        keep = set(a.only.split(",")) | {"raw"}
        names = [n for n in names if n in keep]
    runs = {}  # (name, system, mode, readers) -> [MB/s]
    info = {}

    def put(key, v):
        runs.setdefault(key, []).append(v)

    try:
        subprocess.run([os.path.join(a.build, "dlio-gen"), "-q", cfg["cache"], shm], check=True)
        for n in names:
            paths = files_of(os.path.join(shm, n))
            sizes = [os.path.getsize(p) for p in paths]
            info[n] = {"files": len(paths), "bytes": sum(sizes),
                       "size": round(sum(sizes) / len(paths))}
        for r in range(a.runs):
            for n in names:
                for io in MODES:
                    for jobs in READERS:
                        drop_caches()
                        subprocess.run([dliofs, "mount", mnt, cfg[io]], check=True)
                        try:
                            put((n, "mount", io, jobs), rate(files_of(os.path.join(mnt, n)), jobs))
                        finally:
                            subprocess.run([dliofs, "umount", mnt], check=True)
                        drop_caches()
                        with Noop(a.build, mnt, info[n]["files"], info[n]["size"], io == "direct"):
                            put((n, "noop", io, jobs), rate(files_of(mnt), jobs))
                for jobs in READERS:
                    put((n, "tmpfs", "-", jobs), rate(files_of(os.path.join(shm, n)), jobs))
        subprocess.run([dliofs, "mount", mnt, cfg["cache"]], check=True)
        try:
            for n in names:
                info[n]["ttfb"] = ttfb(first_files(os.path.join(mnt, n)))
        finally:
            subprocess.run([dliofs, "umount", mnt], check=True)
        for n in names:
            info[n]["ttfb_tmpfs"] = ttfb(first_files(os.path.join(shm, n)))
        report(a, names, runs, info)
        if not a.no_loader:
            try:
                import torch  # noqa: F401
            except ImportError:
                print("DataLoader comparison skipped: no torch in %s (try /usr/bin/python3)"
                      % sys.executable)
                return
            subprocess.run([dliofs, "mount", mnt, cfg["cache"]], check=True)
            try:
                ours = loader_files_per_s(os.path.join(mnt, "imagenet", "train"), a.workers)
            finally:
                subprocess.run([dliofs, "umount", mnt], check=True)
            theirs = loader_files_per_s(os.path.join(shm, "imagenet", "train"), a.workers)
            print("ImageFolder + DataLoader(%d workers) + PIL decode + RandomResizedCrop(224): "
                  "mount %.0f files/s, tmpfs %.0f files/s, ratio %.2f" % (a.workers, ours, theirs,
                                                                         ours / theirs))
    finally:
        subprocess.run([dliofs, "umount", mnt], capture_output=True)
        subprocess.run(["fusermount3", "-u", mnt], capture_output=True)
        shutil.rmtree(tmp, True)
        shutil.rmtree(shm, True)


def report(a, names, runs, info):
    med = {k: statistics.median(v) for k, v in runs.items()}
    print("MB/s through the mount (medians of %d runs), and ratios to raw through the same mount,"
          " to dl-noopfs (same files, same mode) and to tmpfs" % a.runs)
    print("%-12s %-6s %2s | %7s %7s %7s %7s | %6s %6s %6s" % (
        "format", "mode", "rd", "mount", "raw", "no-op", "tmpfs", "/raw", "/no-op", "/tmpfs"))
    for n in names:
        for io in MODES:
            for jobs in READERS:
                m = med[(n, "mount", io, jobs)]
                raw = med[("raw", "mount", io, jobs)]
                nop = med[(n, "noop", io, jobs)]
                tfs = med[(n, "tmpfs", "-", jobs)]
                print("%-12s %-6s %2d | %7.0f %7.0f %7.0f %7.0f | %6.2f %6.2f %6.2f" % (
                    n, io, jobs, m, raw, nop, tfs, m / raw, m / nop, m / tfs))
    print()
    print("%-12s %6s %9s %12s %12s" % ("format", "files", "MB", "TTFB mount", "TTFB tmpfs"))
    for n in names:
        i = info[n]
        print("%-12s %6d %9.0f %10.0f us %10.0f us" % (n, i["files"], i["bytes"] / 1e6,
                                                      i["ttfb"] * 1e6, i["ttfb_tmpfs"] * 1e6))
    print("per-run MB/s:")
    for k in sorted(runs):
        print("  %s: %s" % ("/".join(map(str, k)), " ".join("%.0f" % v for v in runs[k])))


if __name__ == "__main__":
    main()
