#!/usr/bin/env python3
"""The Python reader of the read benchmarks: every file read sequentially with
os.readv of 1 MiB into one reused buffer (what a training job's loader does
with an unbuffered file object), the files split across N reader processes.
Prints the aggregate MB/s (10^6 bytes per second of wall time).

The buffer is page-aligned (anonymous mmap), as fio's are with iomem_align=4k:
on the 2-core dev VM a bytearray (malloc'd, 16 bytes past a page boundary)
made every copy into it 3-4x slower for tmpfs and FUSE alike, which hides the
differences the benchmarks are after. --unaligned keeps the bytearray.

  bench/pyread.py [--jobs N] [--unaligned] FILE..."""
import argparse
import mmap
import multiprocessing as mp
import os
import time

CHUNK = 1 << 20


def read_files(paths, unaligned=False):
    buf = bytearray(CHUNK) if unaligned else mmap.mmap(-1, CHUNK)
    n = 0
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            while True:
                k = os.readv(fd, [buf])
                if k <= 0:
                    break
                n += k
        finally:
            os.close(fd)
    return n


def _worker(paths, unaligned, start, q):
    start.wait()
    q.put(read_files(paths, unaligned))


def read_parallel(paths, jobs=1, unaligned=False):
    """(bytes, seconds): the files dealt round-robin to `jobs` processes that
    start together."""
    if jobs <= 1:
        t0 = time.monotonic()
        n = read_files(paths, unaligned)
        return n, time.monotonic() - t0
    start, q = mp.Event(), mp.Queue()
    procs = [mp.Process(target=_worker, args=(paths[j::jobs], unaligned, start, q))
             for j in range(jobs)]
    for p in procs:
        p.start()
    time.sleep(0.2)  # all forked and waiting
    t0 = time.monotonic()
    start.set()
    n = sum(q.get() for _ in procs)
    dt = time.monotonic() - t0
    for p in procs:
        p.join()
    return n, dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--unaligned", action="store_true")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    n, dt = read_parallel(a.files, a.jobs, a.unaligned)
    print("%.0f" % (n / dt / 1e6))


if __name__ == "__main__":
    main()
