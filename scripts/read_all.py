#!/usr/bin/env python3
"""Read every file under a dliofs mount once with the reader a training job
would use (numpy for npz/npy/dlrm/indexed_binary, TFRecord framing for
tfrecord, or TensorFlow itself when importable) and print a short report."""
import os
import struct
import sys
import time

import numpy as np


def read_npz(path):
    with np.load(path) as z:
        return int(z["x"].nbytes + z["y"].nbytes)


def read_npy(path):
    return int(np.load(path).nbytes)


def read_tfrecord(path):
    # The framing as TensorFlow's RecordReader walks it: u64 length, crc, data, crc.
    n = 0
    with open(path, "rb", buffering=1 << 20) as f:
        while True:
            head = f.read(12)
            if not head:
                break
            if len(head) != 12:
                raise ValueError("%s: truncated record header" % path)
            (length,) = struct.unpack("<Q", head[:8])
            data = f.read(length + 4)
            if len(data) != length + 4:
                raise ValueError("%s: truncated record" % path)
            n += 1
    return n


def read_dlrm(path, batch=2048):
    rows = 0
    with open(path, "rb") as f:
        while True:
            b = f.read(160 * batch)
            if not b:
                break
            a = np.frombuffer(b, dtype=np.int32).reshape(-1, 40)
            if not np.isin(a[:, 0], (0, 1)).all():
                raise ValueError("%s: label not 0/1" % path)
            rows += a.shape[0]
    return rows


def read_indexed(path):
    off = np.fromfile(path + ".off.idx", dtype=np.uint64)
    sz = np.fromfile(path + ".sz.idx", dtype=np.uint64)
    with open(path, "rb") as f:
        for o, s in zip(off, sz):
            f.seek(int(o))
            if len(f.read(int(s))) != int(s):
                raise ValueError("%s: short sample" % path)
    return len(off)


READERS = {".npz": read_npz, ".npy": read_npy, ".tfrecord": read_tfrecord,
           ".bin": read_dlrm, ".indexed_binary": read_indexed}


def main():
    root = sys.argv[1]
    rows = []
    t_all = time.monotonic()
    total_files = total_bytes = 0
    for ds in sorted(os.listdir(root)):
        files = nbytes = 0
        t0 = time.monotonic()
        for d, dirs, names in os.walk(os.path.join(root, ds)):
            dirs.sort()
            for name in sorted(names):
                path = os.path.join(d, name)
                ext = os.path.splitext(name)[1]
                if ext == ".idx":
                    nbytes += os.path.getsize(path)
                    files += 1
                    continue
                READERS[ext](path)
                nbytes += os.path.getsize(path)
                files += 1
        dt = time.monotonic() - t0
        rows.append((ds, files, nbytes, dt))
        total_files += files
        total_bytes += nbytes
    dt_all = time.monotonic() - t_all
    print("%-12s %8s %12s %9s %9s" % ("dataset", "files", "bytes", "seconds", "MB/s"))
    for ds, files, nbytes, dt in rows:
        print("%-12s %8d %12d %9.3f %9.1f" % (ds, files, nbytes, dt, nbytes / dt / 1e6 if dt else 0))
    print("%-12s %8d %12d %9.3f %9.1f" % ("total", total_files, total_bytes, dt_all,
                                           total_bytes / dt_all / 1e6 if dt_all else 0))


if __name__ == "__main__":
    main()
