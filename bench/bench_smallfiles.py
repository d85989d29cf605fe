#!/usr/bin/env python3
"""Small files, cold: an ImageNet-like tree read file by file (open, read to
the end, close), by 1 and by 4 reader processes, three ways in the same run:

  mount   dliofs serving a flat raw dataset of N files of SIZE bytes (the
          round trips of a small file, without a format's own work) and the
          same count as an ImageNet-style JPEG class tree (classes: 100)
  no-op   bench/noopfs.c: a no-op low-level FUSE fs, a flat directory of the
          same count and size, read() filling from the same generator: the
          FUSE ceiling for this sequence on this machine
  tmpfs   dlio-gen's copy of the raw dataset in /dev/shm (no FUSE at all)
  before  (with --before DIR) another build's dliofs, e.g. the commit before
          a change, on the same raw files in the same run

Every FUSE pass is cold: a fresh mount (no dentries, no attributes, no pages).
Two access patterns: `open` (paths known, as a shuffled DLIO/PyTorch file
list: one lookup per file) and `list+open` (os.scandir of each directory
first, as torchvision's ImageFolder does, then the files). Prints files/s
(median of RUNS) and the ratios mount/no-op and mount/tmpfs. Asserts nothing.

  bench/bench_smallfiles.py [--build DIR] [--before DIR] [--files N] [--size BYTES] [--runs R]
"""
import argparse
import multiprocessing as mp
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read_files(paths):
    buf = bytearray(1 << 20)
    mv = memoryview(buf)
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        while os.readv(fd, [mv]) > 0:
            pass
        os.close(fd)


def list_dirs(dirs):
    out = []
    for d in dirs:
        with os.scandir(d) as it:
            for e in it:
                if e.is_file():
                    out.append(e.path)
    return out


def run_pass(root, readers, pattern, files_of):
    """files/s for one pass over root with `readers` processes."""
    t0 = time.perf_counter()
    if pattern == "list+open":
        dirs = sorted({os.path.dirname(p) for p in files_of(root)})
        paths = list_dirs(dirs)
    else:
        paths = files_of(root)
    chunks = [paths[i::readers] for i in range(readers)]
    if readers == 1:
        read_files(chunks[0])
    else:
        procs = [mp.Process(target=read_files, args=(c,)) for c in chunks]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
    return len(paths) / (time.perf_counter() - t0)


def wait_mounted(mnt, timeout=20):
    end = time.time() + timeout
    while time.time() < end:
        if os.path.ismount(mnt):
            return
        time.sleep(0.02)
    raise RuntimeError("not mounted: " + mnt)


def umount(mnt):
    subprocess.run(["fusermount3", "-u", mnt], capture_output=True)
    end = time.time() + 20
    while os.path.ismount(mnt) and time.time() < end:
        time.sleep(0.02)


def drop_caches():
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError:
        pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--files", type=int, default=4000)
    ap.add_argument("--size", type=int, default=110 * 1000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--before", help="another build directory whose dliofs is measured too")
    a = ap.parse_args()
    dliofs = os.path.join(a.build, "dliofs")
    noop = os.path.join(a.build, "dl-noopfs")
    gen = os.path.join(a.build, "dlio-gen")
    work = tempfile.mkdtemp(prefix="dliofs-small-")
    shm = tempfile.mkdtemp(prefix="dliofs-small-", dir="/dev/shm")
    mnt = os.path.join(work, "mnt")
    os.mkdir(mnt)
    cfg = os.path.join(work, "cfg.yaml")
    with open(cfg, "w") as f:
        f.write("seed: 7\ndatasets:\n"
                "  - {name: raw, format: raw, files: %d, sample_size: %d}\n"
                "  - {name: jpeg, format: jpeg, files: %d, classes: 100, sample_size: %d}\n"
                % (a.files, a.size, a.files, a.size))
    names = ["f%06d" % i for i in range(a.files)]
    try:
        subprocess.run([gen, cfg, shm], check=True, capture_output=True)
        shutil.rmtree(os.path.join(shm, "jpeg"))

        def walk(root):
            out = []
            for d, _, fs in os.walk(root):
                out += [os.path.join(d, n) for n in fs]
            return sorted(out)

        tmpfs_files = walk(os.path.join(shm, "raw"))
        raw_names = [os.path.relpath(p, shm) for p in tmpfs_files]
        results = {}

        def record(key, v):
            results.setdefault(key, []).append(v)

        for run in range(a.runs):
            for readers in (1, 4):
                for pattern in ("open", "list+open"):
                    # dliofs, flat raw files and the JPEG class tree
                    kinds = ["raw", "jpeg"] + (["before"] if a.before else [])
                    for ds in kinds:
                        binary = os.path.join(a.before, "dliofs") if ds == "before" else dliofs
                        drop_caches()
                        subprocess.run([binary, "mount", mnt, cfg], check=True)
                        try:
                            if ds in ("raw", "before"):
                                lister = lambda r: [os.path.join(r, n) for n in raw_names]
                            else:
                                jroot = os.path.join(mnt, "jpeg")
                                jfiles = walk(jroot)  # listing warms; remount below
                                subprocess.run([dliofs, "umount", mnt], check=True)
                                drop_caches()
                                subprocess.run([dliofs, "mount", mnt, cfg], check=True)
                                rel = [os.path.relpath(p, mnt) for p in jfiles]
                                lister = lambda r, rel=rel: [os.path.join(r, x) for x in rel]
                            v = run_pass(mnt, readers, pattern, lister)
                        finally:
                            subprocess.run([binary, "umount", mnt], capture_output=True)
                            umount(mnt)
                        record(("mount-" + ds, readers, pattern), v)
                    # the no-op FUSE fs
                    drop_caches()
                    p = subprocess.Popen([noop, mnt, "--files", str(a.files), "--size",
                                          str(a.size)])
                    try:
                        wait_mounted(mnt)
                        v = run_pass(mnt, readers, pattern,
                                     lambda r: [os.path.join(r, n) for n in names])
                    finally:
                        umount(mnt)
                        p.wait()
                    record(("noop", readers, pattern), v)
                    # tmpfs
                    v = run_pass(shm, readers, pattern, lambda r: list(tmpfs_files))
                    record(("tmpfs", readers, pattern), v)
        print("small files, cold, %d files of %d bytes, median of %d runs (files/s)"
              % (a.files, a.size, a.runs))
        print("%-8s %-10s %10s %10s %10s %10s %8s %8s %8s" % (
            "readers", "pattern", "mount-raw", "mount-jpeg", "no-op", "tmpfs",
            "raw/noop", "jpg/noop", "raw/tmpfs"))
        for readers in (1, 4):
            for pattern in ("open", "list+open"):
                m = {k: statistics.median(results[(k, readers, pattern)])
                     for k in ("mount-raw", "mount-jpeg", "noop", "tmpfs")}
                print("%-8d %-10s %10.0f %10.0f %10.0f %10.0f %8.2f %8.2f %8.2f" % (
                    readers, pattern, m["mount-raw"], m["mount-jpeg"], m["noop"], m["tmpfs"],
                    m["mount-raw"] / m["noop"], m["mount-jpeg"] / m["noop"],
                    m["mount-raw"] / m["tmpfs"]))
        if a.before:
            print("before = %s (mount-raw's files with that build's dliofs)" % a.before)
            print("%-8s %-10s %10s %10s" % ("readers", "pattern", "before", "raw/before"))
            for readers in (1, 4):
                for pattern in ("open", "list+open"):
                    b = statistics.median(results[("mount-before", readers, pattern)])
                    r = statistics.median(results[("mount-raw", readers, pattern)])
                    print("%-8d %-10s %10.0f %10.2f" % (readers, pattern, b, r / b))
        print("(command: %s)" % " ".join([os.path.relpath(sys.argv[0], SRC)] + sys.argv[1:]))
    finally:
        umount(mnt)
        shutil.rmtree(work, True)
        shutil.rmtree(shm, True)


if __name__ == "__main__":
    main()
