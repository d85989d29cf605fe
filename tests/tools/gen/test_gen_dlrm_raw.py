"""DLRM Criteo binary, raw and indexed_binary files written by dlio-gen,
read the way their real loaders read them:
- DLRM: facebookresearch/dlrm's CriteoBinDataset (--mlperf-bin-loader):
  seek(i * 160 * B), read(160 * B) (the last read shorter),
  np.frombuffer(int32).reshape(-1, 40).
- indexed_binary: DLIO's IndexedBinaryReader (index files read as 64-bit
  integers, then seek(offset) + readinto(size) per sample) and the
  mmap variant (np.memmap of the three files).
"""
import math
import os
import shutil
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))  # tests/: dltest
import dltest  # noqa: E402

CONFIG = """
seed: 99
datasets:
  - name: dlrm
    format: dlrm
    files: 2
    eval_files: 1
    samples_per_file: 10007
  - name: dlrm_small_tables
    format: dlrm
    files: 1
    samples_per_file: 3000
    cardinality: 1000
  - name: rawdist
    format: raw
    files: 5
    samples_per_file: 4
    sample_size: {mean: 10KB, stdev: 3KB, min: 100, max: 20KB}
  - name: rawfixed
    format: raw
    files: 2
    eval_files: 1
    samples_per_file: 3
    sample_size: 4096
  - name: ib
    format: indexed_binary
    files: 3
    eval_files: 1
    samples_per_file: 17
    sample_size: {mean: 5000, stdev: 2000, min: 64, max: 12000}
"""

REC = 160


def files_of(root, name, split):
    d = os.path.join(root, name, split)
    if not os.path.isdir(d):
        return []
    return [os.path.join(d, p) for p in dltest.walk_files(d)]


def criteo_bin_batches(path, batch_size):
    """CriteoBinDataset.__getitem__ over every batch index, in order."""
    bytes_per_entry = REC * batch_size
    size = os.path.getsize(path)
    num_entries = math.ceil(size / bytes_per_entry)
    out = []
    with open(path, "rb") as f:
        for idx in range(num_entries):
            f.seek(idx * bytes_per_entry)
            raw = f.read(bytes_per_entry)
            arr = np.frombuffer(raw, dtype=np.int32)
            out.append(arr.reshape(-1, 40))
    return out


class DlrmRawGen(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="dliofs-dlrm-")
        cfg = dltest.write_config(cls.tmp, CONFIG)
        cls.out = os.path.join(cls.tmp, "out")
        dltest.gen(cfg, cls.out)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def check_dlrm(self, name, ntrain, nvalid, samples, card):
        train = files_of(self.out, name, "train")
        valid = files_of(self.out, name, "valid")
        self.assertEqual(len(train), ntrain)
        self.assertEqual(len(valid), nvalid)
        contents = []
        for p in train + valid:
            self.assertTrue(p.endswith(".bin"), p)
            size = os.path.getsize(p)
            self.assertEqual(size % REC, 0, p)
            self.assertEqual(size, REC * samples, p)
            for B in (128, 2048):
                batches = criteo_bin_batches(p, B)
                self.assertEqual(len(batches), math.ceil(samples / B))
                self.assertTrue(all(b.shape == (B, 40) for b in batches[:-1]))
                self.assertEqual(batches[-1].shape[0], samples - B * (len(batches) - 1))
                rows = np.concatenate(batches)
                self.assertEqual(rows.shape, (samples, 40))
                label, dense, cat = rows[:, 0], rows[:, 1:14], rows[:, 14:]
                self.assertTrue(np.isin(label, (0, 1)).all(), p)
                self.assertTrue(0.4 < label.mean() < 0.6, (p, label.mean()))
                self.assertGreaterEqual(int(dense.min()), 0, p)
                self.assertLess(int(dense.max()), 1 << 16, p)
                # The loader's transform must be finite.
                self.assertTrue(np.isfinite(np.log(dense.astype(np.float32) + 1)).all())
                # Skewed: many small counts, some large.
                self.assertGreater((dense < 16).mean(), 0.25)
                self.assertGreater((dense >= 4096).mean(), 0.05)
                self.assertGreaterEqual(int(cat.min()), 0, p)
                self.assertLess(int(cat.max()), card, p)
                # Uniform over the table: the top 1% of ids is hit.
                self.assertGreater(int(cat.max()), card * 0.99, p)
                # Every categorical column varies.
                self.assertTrue((cat.std(axis=0) > 0).all())
            contents.append(rows.tobytes())
        self.assertEqual(len(set(contents)), len(contents), "files must differ")

    def test_dlrm_default_cardinality(self):
        self.check_dlrm("dlrm", 2, 1, 10007, 10_000_000)

    def test_dlrm_cardinality(self):
        self.check_dlrm("dlrm_small_tables", 1, 0, 3000, 1000)

    def test_raw(self):
        sizes = set()
        for name, ntrain, nvalid, samples in (("rawdist", 5, 0, 4), ("rawfixed", 2, 1, 3)):
            train = files_of(self.out, name, "train")
            valid = files_of(self.out, name, "valid")
            self.assertEqual((len(train), len(valid)), (ntrain, nvalid))
            for p in train + valid:
                self.assertTrue(p.endswith(".raw"), p)
                size = os.path.getsize(p)
                self.assertEqual(size % samples, 0, p)
                S = size // samples
                if name == "rawfixed":
                    self.assertEqual(S, 4096)
                else:
                    self.assertTrue(100 <= S <= 20000, (p, S))
                    sizes.add(S)
                data = np.fromfile(p, dtype=np.uint8)
                self.assertEqual(data.size, size)
                # PRNG bytes: mean near 127.5 (6 sigma), every value occurs.
                self.assertLess(abs(float(data.mean()) - 127.5), 6 * 73.9 / math.sqrt(size), p)
                if size >= 8192:
                    self.assertEqual(np.unique(data).size, 256, p)
        self.assertGreater(len(sizes), 2, "raw sample sizes should vary per file")

    def test_indexed_binary(self):
        samples = 17
        train = files_of(self.out, "ib", "train")
        valid = files_of(self.out, "ib", "valid")
        data_files = [p for p in train + valid if p.endswith(".indexed_binary")]
        self.assertEqual(len(data_files), 4)
        self.assertEqual(len(train) + len(valid), 12, "data file + two index files each")
        for p in data_files:
            off_path, sz_path = p + ".off.idx", p + ".sz.idx"
            self.assertTrue(os.path.exists(off_path) and os.path.exists(sz_path), p)
            self.assertEqual(os.path.getsize(off_path), 8 * samples)
            self.assertEqual(os.path.getsize(sz_path), 8 * samples)
            # IndexedBinaryReader.read_longs: int64 readinto.
            with open(off_path, "rb") as f:
                offsets = np.empty(samples, dtype=np.int64)
                f.readinto(offsets)
            with open(sz_path, "rb") as f:
                sizes = np.empty(samples, dtype=np.int64)
                f.readinto(sizes)
            S = int(sizes[0])
            self.assertTrue(64 <= S <= 12000, S)
            self.assertTrue((sizes == S).all(), p)
            self.assertTrue((offsets == np.arange(samples, dtype=np.int64) * S).all(), p)
            self.assertEqual(os.path.getsize(p), int(sizes.sum()))
            samples_read = []
            with open(p, "rb") as f:
                for i in range(samples):
                    f.seek(int(offsets[i]))
                    image = np.empty(int(sizes[i]), dtype=np.uint8)
                    n = f.readinto(image)
                    self.assertEqual(n, sizes[i])
                    samples_read.append(image.tobytes())
            self.assertEqual(len(set(samples_read)), samples, "samples differ")
            # The mmap reader: np.memmap of the data and both indexes as uint64.
            mo = np.memmap(off_path, dtype=np.uint64, mode="r")
            ms = np.memmap(sz_path, dtype=np.uint64, mode="r")
            md = np.memmap(p, dtype=np.uint8, mode="r")
            for i in (0, samples // 2, samples - 1):
                chunk = md[int(mo[i]):int(mo[i]) + int(ms[i])]
                self.assertEqual(chunk.tobytes(), samples_read[i])
            del mo, ms, md


if __name__ == "__main__":
    dltest.main()
