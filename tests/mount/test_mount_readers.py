"""Real, unmodified readers on the mount: numpy (npz/npy, DLRM batches,
DLIO's indexed_binary reader), TensorFlow's TFRecordDataset (venv python),
and a PyTorch DataLoader with worker processes. Every value is compared with
the same reader on dlio-gen's copy."""
import json
import os
import random
import subprocess
import textwrap

import warnings

import numpy as np

import sys  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/: dltest
import dltest  # noqa: E402

CONFIG = """\
seed: 11
datasets:
  - name: unet
    format: npz
    files: 4
    eval_files: 1
    samples_per_file: 3
    sample_size: {mean: 100000, stdev: 40000, min: 4096}
  - name: pt
    format: npz
    files: 6
    samples_per_file: 4
    sample_size: 1024
  - name: arr
    format: npy
    files: 3
    samples_per_file: 2
    shape: [20, 30]
    dtype: float32
  - name: arr16
    format: npy
    files: 2
    eval_files: 1
    samples_per_file: 5
    shape: [7, 9, 3]
    dtype: int16
  - name: bert
    format: tfrecord
    files: 3
    eval_files: 1
    samples_per_file: 10
    sample_size: {mean: 5000, stdev: 2000, min: 100}
  - name: ctr
    format: dlrm
    files: 2
    samples_per_file: 1000
    cardinality: 1000
  - name: ib
    format: indexed_binary
    files: 2
    samples_per_file: 6
    sample_size: 3000
"""

SAMPLES = {"unet": 3, "pt": 4, "arr": 2, "arr16": 5, "bert": 10, "ctr": 1000, "ib": 6}

TF_SCRIPT = textwrap.dedent("""\
    import json, sys
    import tensorflow as tf
    feats = {"image": tf.io.FixedLenFeature([], tf.string),
             "size": tf.io.FixedLenFeature([], tf.int64)}
    out = {}
    for path in sys.argv[1:]:
        recs = []
        # buffer_size as DLIO passes its transfer size
        for raw in tf.data.TFRecordDataset(path, buffer_size=262144):
            ex = tf.io.parse_single_example(raw, feats)
            img = ex["image"].numpy()
            recs.append([len(img), int(ex["size"].numpy()), img.hex()])
        out[path] = recs
    json.dump(out, sys.stdout)
""")


class TorchSamples:
    """What DLIO's npz reader does per sample: np.load(path)['x'][..., i]."""

    def __init__(self, items):
        self.items = items

    def __len__(self):
        return len(self.items)

    def __getitem__(self, k):
        import torch
        path, i = self.items[k]
        with np.load(path) as z:
            x = z["x"][..., i]
        return k, os.getpid(), torch.from_numpy(np.ascontiguousarray(x))


def keep_list(batch):
    return batch


class MountReaders(dltest.MountedTestCase):
    CONFIG = CONFIG

    def files(self, ds, ext=None):
        ref_files, _ = dltest.tree(self.ref)
        out = sorted(r for r in ref_files if r.startswith(ds + "/")
                     and (ext is None or r.endswith(ext)))
        self.assertTrue(out, "no %s files in dlio-gen output" % ds)
        return out

    def test_numpy_npz_npy(self):
        n = 0
        for ds in ("unet", "pt"):
            for rel in self.files(ds, ".npz"):
                with np.load(os.path.join(self.mnt, rel)) as a, \
                        np.load(os.path.join(self.ref, rel)) as b:
                    self.assertEqual(sorted(a.files), ["x", "y"], rel)
                    self.assertEqual(sorted(b.files), ["x", "y"], rel)
                    x, y = a["x"], a["y"]
                    self.assertEqual(x.dtype, np.uint8, rel)
                    self.assertEqual(x.ndim, 3, rel)
                    self.assertEqual(x.shape[-1], SAMPLES[ds], "samples on the last axis: %s" % rel)
                    self.assertEqual(y.dtype, np.int64, rel)
                    self.assertTrue(np.array_equal(y, np.zeros(SAMPLES[ds], np.int64)), rel)
                    self.assertEqual(x.shape, b["x"].shape, rel)
                    self.assertTrue(np.array_equal(x, b["x"]), rel)
                    self.assertGreater(len(np.unique(x)), 200, "payload looks random: %s" % rel)
                    n += 1
        for ds, dtype, shape in (("arr", "float32", (20, 30)), ("arr16", "int16", (7, 9, 3))):
            for rel in self.files(ds, ".npy"):
                a = np.load(os.path.join(self.mnt, rel))
                b = np.load(os.path.join(self.ref, rel))
                self.assertEqual(a.dtype, np.dtype(dtype), rel)
                self.assertEqual(a.size, SAMPLES[ds] * int(np.prod(shape)), rel)
                self.assertIn(SAMPLES[ds], a.shape, rel)
                self.assertEqual(a.shape, b.shape, rel)
                # bytes, not values: random float bits may hold NaNs
                self.assertEqual(a.tobytes(), b.tobytes(), rel)
                n += 1
        self.assertEqual(n, 5 + 6 + 3 + 3)

    def test_tensorflow_tfrecord(self):
        py = dltest.venv_python()
        dltest.require(py is not None, "TensorFlow venv %s not available" % dltest.VENV_PY)
        rels = self.files("bert", ".tfrecord")
        self.assertEqual(len(rels), 4)
        paths = [os.path.join(self.mnt, r) for r in rels] + [os.path.join(self.ref, r) for r in rels]
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
        r = subprocess.run([py, "-c", TF_SCRIPT] + paths, capture_output=True, text=True,
                           timeout=600, env=env)
        self.assertEqual(r.returncode, 0, "TensorFlow failed on the mount:\n" + r.stderr[-4000:])
        out = json.loads(r.stdout)
        for rel in rels:
            got = out[os.path.join(self.mnt, rel)]
            want = out[os.path.join(self.ref, rel)]
            self.assertEqual(len(got), SAMPLES["bert"], rel)
            for nbytes, size, _ in got:
                self.assertEqual(size, nbytes, "`size` holds the image byte count: %s" % rel)
                self.assertGreaterEqual(nbytes, 100)
            self.assertEqual(got, want, rel)

    def test_torch_dataloader(self):
        try:
            import torch
            from torch.utils.data import DataLoader
        except ImportError as e:
            dltest.require(False, "torch: %s" % e)
        rels = self.files("pt", ".npz")
        items = [(os.path.join(self.mnt, rel), i) for rel in rels for i in range(SAMPLES["pt"])]
        want = {}
        for k, (path, i) in enumerate(items):
            with np.load(os.path.join(self.ref, os.path.relpath(path, self.mnt))) as z:
                want[k] = z["x"][..., i].copy()
        warnings.filterwarnings("ignore", message="This DataLoader will create")
        g = torch.Generator()
        g.manual_seed(5)
        loader = DataLoader(TorchSamples(items), batch_size=5, shuffle=True, num_workers=4,
                            collate_fn=keep_list, generator=g, timeout=300)
        for epoch in range(2):
            seen, pids = [], set()
            for batch in loader:
                for k, pid, t in batch:
                    seen.append(k)
                    pids.add(pid)
                    self.assertIsInstance(t, torch.Tensor)
                    self.assertEqual(tuple(t.shape), want[k].shape)
                    self.assertTrue(torch.equal(t, torch.from_numpy(want[k])), "sample %d" % k)
            self.assertEqual(sorted(seen), list(range(len(items))), "epoch %d" % epoch)
            self.assertNotIn(os.getpid(), pids)
            self.assertGreater(len(pids), 1, "several workers should have read")

    def test_dlrm_batches(self):
        rels = self.files("ctr", ".bin")
        B = 128
        rng = random.Random(3)
        for rel in rels:
            size = os.stat(os.path.join(self.mnt, rel)).st_size
            self.assertEqual(size, 160 * SAMPLES["ctr"])
            nbatch = -(-size // (160 * B))
            order = list(range(nbatch))
            rng.shuffle(order)               # RandomSampler over batch indices
            rows = 0
            with open(os.path.join(self.mnt, rel), "rb") as f, \
                    open(os.path.join(self.ref, rel), "rb") as g:
                for i in order:
                    f.seek(i * 160 * B)
                    g.seek(i * 160 * B)
                    a = np.frombuffer(f.read(160 * B), dtype=np.int32).reshape(-1, 40)
                    b = np.frombuffer(g.read(160 * B), dtype=np.int32).reshape(-1, 40)
                    self.assertTrue(np.array_equal(a, b), "%s batch %d" % (rel, i))
                    rows += len(a)
                    self.assertTrue(np.isin(a[:, 0], (0, 1)).all(), "labels 0/1")
                    self.assertTrue((a[:, 1:14] >= 0).all(), "dense features >= 0")
                    self.assertTrue(((a[:, 14:] >= 0) & (a[:, 14:] < 1000)).all(),
                                    "categorical ids below the cardinality")
            self.assertEqual(rows, SAMPLES["ctr"])
            whole = np.fromfile(os.path.join(self.mnt, rel), dtype=np.int32).reshape(-1, 40)
            self.assertEqual(whole.shape, (SAMPLES["ctr"], 40))
            self.assertGreater(len(np.unique(whole[:, 14:])), 100, "ids spread over the range")

    def test_indexed_binary_reader(self):
        rels = self.files("ib", ".indexed_binary")
        self.assertEqual(len(rels), 2)
        S, n = 3000, SAMPLES["ib"]
        for rel in rels:
            path = os.path.join(self.mnt, rel)
            # DLIO's indexed_binary reader: both indexes up front, then seek + readinto.
            off = np.fromfile(path + ".off.idx", dtype=np.uint64)
            sz = np.fromfile(path + ".sz.idx", dtype=np.uint64)
            self.assertEqual(off.tolist(), [i * S for i in range(n)])
            self.assertEqual(sz.tolist(), [S] * n)
            ref = dltest.read_file(os.path.join(self.ref, rel))
            with open(path, "rb") as f:
                for i in reversed(range(n)):
                    f.seek(int(off[i]))
                    buf = bytearray(int(sz[i]))
                    self.assertEqual(f.readinto(buf), S)
                    self.assertEqual(bytes(buf), ref[i * S:(i + 1) * S], "%s sample %d" % (rel, i))
            # mmap_indexed_binary: np.memmap of data and indexes
            data = np.memmap(path, dtype=np.uint8, mode="r")
            moff = np.memmap(path + ".off.idx", dtype=np.uint64, mode="r")
            msz = np.memmap(path + ".sz.idx", dtype=np.uint64, mode="r")
            for i in range(n):
                s = data[int(moff[i]):int(moff[i]) + int(msz[i])]
                self.assertEqual(s.tobytes(), ref[i * S:(i + 1) * S])
            del data, moff, msz


if __name__ == "__main__":
    dltest.main()
