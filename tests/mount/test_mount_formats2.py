"""Formats II on the mount with real readers: h5py on HDF5 (contiguous, chunked,
gzip), PIL and torchvision on JPEG/PNG, torchvision's ImageFolder through a
DataLoader with worker processes and standard transforms, and Keras's
image_dataset_from_directory (venv python) on the ImageNet-style tree. Every
file is also compared byte for byte with dlio-gen's copy."""
import os
import subprocess
import textwrap

import numpy as np

import sys  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/: dltest
import dltest  # noqa: E402

CONFIG = """\
seed: 5
datasets:
  - name: cosmo
    format: hdf5
    files: 3
    eval_files: 1
    samples_per_file: 6
    shape: [16, 16, 4]
    dtype: float32
  - name: chunked
    format: hdf5
    files: 2
    samples_per_file: 8
    sample_size: 4096
    hdf5: {layout: plain, chunks: [2, 64, 64]}
    compression: gzip
  - name: imagenet
    format: jpeg
    files: 40
    eval_files: 8
    classes: 4
    width: {mean: 96, stdev: 20, min: 48, max: 160}
    height: {mean: 80, stdev: 20, min: 48, max: 160}
    color: RGB420
    sample_size: {mean: 9kB, stdev: 2kB, min: 3kB, max: 20kB}
  - name: gray
    format: jpeg
    files: 6
    width: 64
    height: 48
    color: L
  - name: pngs
    format: png
    files: 5
    width: 40
    height: 30
    color: RGB
    sample_size: 5000
"""

KERAS = textwrap.dedent("""\
    import sys
    import tensorflow as tf
    ds = tf.keras.utils.image_dataset_from_directory(sys.argv[1], image_size=(32, 32),
                                                     batch_size=8, shuffle=True, seed=1)
    n = sum(int(x.shape[0]) for x, y in ds)
    print(len(ds.class_names), n)
""")


class Formats2OnMount(dltest.MountedTestCase):
    CONFIG = CONFIG

    def test_bytes_equal_reference(self):
        ref = dltest.walk_files(self.ref)
        self.assertEqual(ref, dltest.walk_files(self.mnt))
        for rel in ref:
            with self.subTest(rel=rel):
                self.assertEqual(dltest.sha256_file(os.path.join(self.mnt, rel)),
                                 dltest.sha256_file(os.path.join(self.ref, rel)))

    def test_h5py(self):
        import h5py
        for name, dset in (("cosmo", "records_0"), ("chunked", "x")):
            root = os.path.join(self.mnt, name, "train")
            for f in sorted(os.listdir(root)):
                with self.subTest(file=f):
                    with h5py.File(os.path.join(root, f), "r") as m, \
                            h5py.File(os.path.join(self.ref, name, "train", f), "r") as r:
                        self.assertEqual(set(m.keys()), set(r.keys()))
                        a = m[dset][()]
                        self.assertEqual(a.shape[0], 8 if name == "chunked" else 6)
                        np.testing.assert_array_equal(a, r[dset][()])
                        # random single-sample reads as DLIO's reader does
                        for i in (0, a.shape[0] - 1, a.shape[0] // 2):
                            np.testing.assert_array_equal(m[dset][i], a[i])
                        if name == "chunked":
                            self.assertEqual(m[dset].compression, "gzip")

    def test_pil_and_torchvision(self):
        from PIL import Image
        import torch
        from torchvision.io import read_image
        for name, mode in (("gray", "L"), ("pngs", "RGB"), ("imagenet", "RGB")):
            for d, _, files in os.walk(os.path.join(self.mnt, name)):
                for f in files:
                    p = os.path.join(d, f)
                    with self.subTest(path=p):
                        with Image.open(p) as im:
                            im.load()
                            self.assertEqual(im.mode, mode)
                            w, h = im.size
                        t = read_image(p)
                        self.assertEqual(tuple(t.shape[1:]), (h, w))
                        self.assertEqual(t.dtype, torch.uint8)

    def test_exact_sizes(self):
        for f in os.listdir(os.path.join(self.mnt, "pngs", "train")):
            self.assertEqual(os.path.getsize(os.path.join(self.mnt, "pngs", "train", f)), 5000)

    def test_imagefolder_dataloader(self):
        import torch
        from torch.utils.data import DataLoader
        from torchvision import datasets, transforms
        tf = transforms.Compose([transforms.RandomResizedCrop(32), transforms.RandomHorizontalFlip(),
                                 transforms.ToTensor(),
                                 transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
        ds = datasets.ImageFolder(os.path.join(self.mnt, "imagenet", "train"), transform=tf)
        self.assertEqual(len(ds.classes), 4)
        self.assertEqual(len(ds), 40)
        self.assertTrue(all(c.startswith("n") for c in ds.classes))
        seen = 0
        labels = []
        for x, y in DataLoader(ds, batch_size=8, shuffle=True, num_workers=2):
            self.assertEqual(tuple(x.shape[1:]), (3, 32, 32))
            self.assertTrue(torch.isfinite(x).all())
            seen += x.shape[0]
            labels += y.tolist()
        self.assertEqual(seen, 40)
        self.assertEqual(sorted(set(labels)), [0, 1, 2, 3])
        val = datasets.ImageFolder(os.path.join(self.mnt, "imagenet", "valid"))
        self.assertEqual(len(val), 8)

    def test_keras_image_dataset_from_directory(self):
        py = dltest.venv_python()
        dltest.require(py is not None, "TensorFlow venv (/opt/dliofs-venv) not available")
        r = subprocess.run([py, "-c", KERAS, os.path.join(self.mnt, "imagenet", "train")],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        self.assertEqual(r.stdout.split()[-2:], ["4", "40"])


if __name__ == "__main__":
    dltest.main()
