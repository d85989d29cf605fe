"""Read a few files of a mounted DLIO workload with DLIO's own reader classes
(run with the venv's Python, where dlio-benchmark is installed):

    python dlio_read_files.py WORKLOAD.yaml DATA_FOLDER FILE...

DLIO's configuration is built from the workload file as DLIO builds it
(LoadConfig, derive_configurations, reconfigure), with data_folder pointing
at the mount and the file lists cut to FILE..., then the reader DLIO's
ReaderFactory picks for the workload's format opens each file and takes its
samples (the index-based readers: open + get_sample, as DLIO's data loaders
call them; TFRecord's tf.data reader: batches from next()). Very large files
are sampled: with more than 100,000 samples in the lists only the first 4 of
each file are taken (DLIO's sample maps are Python dicts).

What the reader found is checked against the workload with numpy where the
format allows (indexed_binary offsets and sizes, npz/npy sample axes, hdf5
records, csv rows), and the bytes this process read (/proc/self/io) must be
more than nothing. Prints one JSON line: format, reader, files, samples,
bytes_read. Exit 0 on success; any exception fails."""
import json
import math
import os
import sys

os.environ.setdefault("DFTRACER_ENABLE", "0")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import yaml  # noqa: E402
from dlio_benchmark.utils.utility import DLIOMPI  # noqa: E402

DLIOMPI.get_instance().initialize()
from dlio_benchmark.common.enumerations import DatasetType, FormatType  # noqa: E402
from dlio_benchmark.reader.reader_factory import ReaderFactory  # noqa: E402
from dlio_benchmark.utils.config import ConfigArguments, LoadConfig  # noqa: E402

MAP_CAP = 100000
SAMPLE_CAP = 4


def rchar():
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith("rchar:"):
                return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


def check_layout(args, fmt, path, spf):
    """What numpy sees of one file agrees with the workload."""
    d = int(math.sqrt(args.record_length))
    if fmt in (FormatType.INDEXED_BINARY, FormatType.MMAP_INDEXED_BINARY):
        n = min(spf, SAMPLE_CAP)
        off = np.fromfile(path + ".off.idx", dtype="<u8", count=n)
        sz = np.fromfile(path + ".sz.idx", dtype="<u8", count=n)
        assert list(sz) == [sz[0]] * n and sz[0] > 0, (path, sz)
        assert list(off) == [k * int(sz[0]) for k in range(n)], (path, off)
        assert os.path.getsize(path) == spf * int(sz[0]), path
        assert os.path.getsize(path + ".off.idx") == 8 * spf, path
        if not args.record_length_stdev:
            assert sz[0] == d * d, (path, sz[0], d)
    elif fmt in (FormatType.NPZ, FormatType.NPY):
        x = np.load(path)
        x = x["x"] if fmt == FormatType.NPZ else x
        assert x.shape[-1] == spf, (path, x.shape)
    elif fmt == FormatType.HDF5:
        import h5py
        with h5py.File(path, "r") as h:
            assert h["records"].shape[0] == spf, (path, h["records"].shape)
    elif fmt == FormatType.CSV:
        import pandas as pd
        a = pd.read_csv(path).to_numpy()
        assert a.shape[0] == spf and (a[:, 0] == np.arange(spf)).all(), (path, a.shape)
        assert a[:, 1:].min() >= 0 and a[:, 1:].max() <= 254, path


def main():
    wl, data, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    with open(wl) as f:
        cfg = yaml.safe_load(f)
    cfg = cfg.get("workload", cfg)
    cfg["dataset"]["data_folder"] = data
    args = ConfigArguments.get_instance()
    LoadConfig(args, cfg)
    spf = args.num_samples_per_file
    train = [f for f in files if "/train/" in f]
    valid = [f for f in files if "/valid/" in f]
    sampled = spf * len(files) > MAP_CAP
    if sampled and args.format != FormatType.TFRECORD:
        args.num_samples_per_file = SAMPLE_CAP
    # One reader thread: the cut lists can hold fewer samples than the
    # workload's threads (cosmoflow: 3 one-sample files, 4 threads), where
    # DLIO's sample map divides by samples // threads.
    args.read_threads = 1
    before = rchar()
    args.derive_configurations(train, valid)
    args.reconfigure(1)
    samples = 0
    name = None
    for split, lst in ((DatasetType.TRAIN, train), (DatasetType.VALID, valid)):
        if not lst:
            continue
        reader = ReaderFactory.get_reader(args.format, split, 0, 1)
        name = type(reader).__name__
        if args.format == FormatType.TFRECORD:
            # tf.data over the listed files: two batches are enough to have
            # opened, framed and CRC-checked records of the files.
            for k, _ in enumerate(reader.next()):
                samples += reader.batch_size
                if k == 1:
                    break
            continue
        for path in lst:
            reader.open_file_map[path] = reader.open(path)
            for k in range(args.num_samples_per_file):
                reader.get_sample(path, k)
                samples += 1
            reader.close(path)
            reader.open_file_map[path] = None
    for path in files:
        check_layout(args, args.format, path, spf)
    read = rchar() - before
    assert samples > 0, "the reader took no sample"
    assert read > 0, "nothing was read"
    print(json.dumps({"format": str(args.format), "reader": name, "files": len(files),
                      "samples": samples, "bytes_read": read, "sampled": sampled}))


if __name__ == "__main__":
    main()
