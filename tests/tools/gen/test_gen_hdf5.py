"""hdf5 files from dlio-gen, read by h5py 3.7 (libhdf5 1.10.8).

Checks, per file: dataset names, shapes, dtypes, chunking and compression as
configured; whole-dataset and random per-sample reads (DLIO reads
f['records_i'][sample]); labels zeros; values in DLIO's ranges; data read by
h5py equals the raw file bytes at the offsets h5py reports (contiguous:
get_offset; chunked: get_chunk_info, gzip chunks inflated with zlib).

Independent properties, since dlio-gen is our own writer:
- h5py re-creating each file from the arrays it loaded, with the same creation
  properties (low-level API: no time tracking, fill never, contiguous data
  allocated early, chunks written with write_direct_chunk), gives our file
  byte for byte;
- h5py's high-level calls exactly as DLIO's generator makes them give a file of
  the same size with the data at the same offsets (contiguous DLIO layout).
"""
import math
import os
import random
import sys
import tempfile
import unittest
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))  # tests/: dltest
import dltest  # noqa: E402

try:
    import numpy as np
    import h5py
except ImportError:  # pragma: no cover
    np = h5py = None

Y_CLASSES = 1000  # plain layout's y: class ids in [0, 1000)

# name -> spec. layout dlio|plain, k datasets, dtype, files, eval files,
# samples, sample_size (or None), shape (or None), chunks (or None), gzip level
# (or None).
SPECS = {
    "dlio_u8": dict(layout=None, k=None, dtype="uint8", files=3, eval=1, samples=4,
                    size="4096", shape=None, chunks=None, gzip=None),
    "dlio_k3_f32": dict(layout="dlio", k=3, dtype="float32", files=2, eval=0, samples=5,
                        size=None, shape=[8, 16, 3], chunks=None, gzip=None),
    "plain_i64": dict(layout="plain", k=None, dtype="int64", files=2, eval=1, samples=6,
                      size=None, shape=[100], chunks=None, gzip=None),
    "chunk_u16": dict(layout="dlio", k=1, dtype="uint16", files=2, eval=0, samples=7,
                      size="2048", shape=None, chunks=[2, 32, 32], gzip=None),
    "gzip_f16": dict(layout="dlio", k=2, dtype="float16", files=2, eval=0, samples=7,
                     size=None, shape=[200, 300], chunks=[3, 100, 300], gzip=4),
    "gzip_u8": dict(layout="dlio", k=1, dtype="uint8", files=3, eval=0, samples=5,
                    size="4096", shape=None, chunks=[1, 64, 64], gzip=6),
    "gzip_edge_i32": dict(layout="dlio", k=1, dtype="int32", files=1, eval=1, samples=5,
                          size=None, shape=[33, 17], chunks=[2, 8, 9], gzip=1),
    "gzip_plain_f64": dict(layout="plain", k=None, dtype="float64", files=2, eval=0, samples=4,
                           size=None, shape=[10, 20, 3], chunks=[4, 10, 20, 3], gzip=4),
    "sized": dict(layout=None, k=None, dtype="uint8", files=6, eval=0, samples=3,
                  size="{mean: 20000, stdev: 8000, min: 1000, max: 60000}", shape=None,
                  chunks=None, gzip=None),
    "big_u8": dict(layout="dlio", k=1, dtype="uint8", files=1, eval=0, samples=64,
                   size=None, shape=[256, 256], chunks=None, gzip=None),
}


def config_text():
    lines = ["seed: 4242", "datasets:"]
    for name, s in SPECS.items():
        lines += ["  - name: %s" % name, "    format: hdf5", "    dtype: %s" % s["dtype"],
                  "    files: %d" % s["files"], "    eval_files: %d" % s["eval"],
                  "    samples_per_file: %d" % s["samples"]]
        if s["size"] is not None:
            lines.append("    sample_size: %s" % s["size"])
        if s["shape"] is not None:
            lines.append("    shape: [%s]" % ", ".join(map(str, s["shape"])))
        h5 = []
        if s["layout"] is not None:
            h5.append("layout: %s" % s["layout"])
        if s["k"] is not None:
            h5.append("datasets: %d" % s["k"])
        if s["chunks"] is not None:
            h5.append("chunks: [%s]" % ", ".join(map(str, s["chunks"])))
        if h5:
            lines.append("    hdf5: {%s}" % ", ".join(h5))
        if s["gzip"] is not None:
            lines += ["    compression: gzip", "    compression_level: %d" % s["gzip"]]
    return "\n".join(lines) + "\n"


def paths(name, s):
    out = []
    for split, n in (("train", s["files"]), ("valid", s["eval"])):
        for i in range(n):
            out.append(os.path.join(name, split, "img_%s_of_%d.hdf5" % (str(i).zfill(len(str(n))), n)))
    return out


def data_names(s):
    if s["layout"] == "plain":
        return ["x"]
    return ["records_%d" % i for i in range((s["k"] or 1))]


def all_names(s):
    # DLIO's layout also names records_0 "records" (a hard link) for DLIO 2.0.0.
    return data_names(s) + ([] if s["layout"] == "plain" else ["records"])


def label_name(s):
    return "y" if s["layout"] == "plain" else "labels"


class GenHdf5Test(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        dltest.require(h5py is not None, "h5py/numpy not importable")
        dltest.require(os.path.exists(dltest.DLIO_GEN), "dlio-gen not built: " + dltest.DLIO_GEN)
        cls.tmp = tempfile.TemporaryDirectory(prefix="dliofs-h5-")
        cls.addClassCleanup(cls.tmp.cleanup)
        cls.cfg = dltest.write_config(cls.tmp.name, config_text())
        cls.out = dltest.gen(cls.cfg, os.path.join(cls.tmp.name, "out"))

    def each(self, only=None):
        for name, s in SPECS.items():
            if only is None or only(s):
                for rel in paths(name, s):
                    yield name, s, os.path.join(self.out, rel)

    def check_values(self, a, name):
        if a.dtype.kind == "f":
            self.assertTrue(np.isfinite(a).all(), name)
            self.assertGreaterEqual(float(a.min()), 0.0, name)
            self.assertLess(float(a.max()), 1.0, name)
            if a.size >= 1000:
                self.assertAlmostEqual(float(a.astype(np.float64).mean()), 0.5, delta=0.05)
        elif a.size >= 2000:
            low = a.view(np.uint8).reshape(-1)[:: a.itemsize]
            self.assertGreater(len(np.unique(low)), 200, name)

    def test_file_set(self):
        want = set()
        for name, s in SPECS.items():
            want |= set(paths(name, s))
        self.assertEqual(set(dltest.walk_files(self.out)), want)

    def test_structure_and_values(self):
        n = 0
        for name, s, p in self.each():
            with self.subTest(file=p), h5py.File(p, "r") as f:
                self.assertEqual(sorted(f.keys()), sorted(all_names(s) + [label_name(s)]))
                if s["layout"] != "plain":
                    self.assertEqual(f["records"].id.get_offset(), f["records_0"].id.get_offset())
                with open(p, "rb") as fp:
                    sb = fp.read(9)
                self.assertEqual(sb[:8], b"\x89HDF\r\n\x1a\n")
                self.assertEqual(sb[8], 3, "superblock v3: libver='latest', as h5py/DLIO")
                for dn in data_names(s):
                    d = f[dn]
                    self.assertEqual(d.dtype, np.dtype(s["dtype"]))
                    self.assertEqual(d.shape[0], s["samples"], "sample axis first")
                    if s["shape"] is not None:
                        self.assertEqual(list(d.shape[1:]), s["shape"])
                    else:
                        self.assertEqual(d.ndim, 3)
                        self.assertEqual(d.shape[1], d.shape[2])
                        if s["size"].isdigit():
                            isz = np.dtype(s["dtype"]).itemsize
                            self.assertEqual(d.shape[1], max(1, math.isqrt(int(s["size"]) // isz)))
                        else:
                            self.assertTrue(math.isqrt(1000) <= d.shape[1] <= math.isqrt(60000))
                    if s["chunks"] is None:
                        self.assertIsNone(d.chunks)
                        self.assertIsNone(d.compression)
                    else:
                        self.assertEqual(list(d.chunks),
                                         [min(c, n_) for c, n_ in zip(s["chunks"], d.shape)])
                        if s["gzip"] is None:
                            self.assertIsNone(d.compression)
                        else:
                            self.assertEqual(d.compression, "gzip")
                            self.assertEqual(d.compression_opts, s["gzip"])
                    a = d[()]
                    self.check_values(a, dn)
                lab = f[label_name(s)]
                self.assertEqual(lab.dtype, np.dtype("int64"))
                self.assertEqual(lab.shape, (s["samples"],))
                self.assertIsNone(lab.chunks)
                y = lab[()]
                if s["layout"] == "plain":
                    self.assertTrue(((y >= 0) & (y < Y_CLASSES)).all())
                    if len(y) >= 4:
                        self.assertGreater(len(set(y.tolist())), 1)
                else:
                    self.assertFalse(y.any(), "DLIO's labels are zeros")
                n += 1
        self.assertGreater(n, 20)

    def test_random_samples(self):
        rnd = random.Random(7)
        for name, s, p in self.each():
            with self.subTest(file=p), h5py.File(p, "r") as f:
                for dn in data_names(s):
                    d = f[dn]
                    full = d[()]
                    for _ in range(5):
                        i = rnd.randrange(s["samples"])
                        self.assertTrue(np.array_equal(d[i], full[i]))  # DLIO's read
                        j = rnd.randrange(i, s["samples"]) + 1
                        sl = tuple([slice(i, j)] + [slice(rnd.randrange(m), m) for m in d.shape[1:]])
                        self.assertTrue(np.array_equal(d[sl], full[sl]))

    def test_data_is_raw_bytes_at_offsets(self):
        nchunks = 0
        for name, s, p in self.each():
            raw = dltest.read_file(p)
            with self.subTest(file=p), h5py.File(p, "r") as f:
                for dn in data_names(s) + [label_name(s)]:
                    d = f[dn]
                    a = d[()]
                    if d.chunks is None:
                        off = d.id.get_offset()
                        self.assertIsNotNone(off)
                        self.assertEqual(raw[off:off + a.nbytes], a.tobytes())
                        continue
                    craw = int(np.prod(d.chunks)) * a.itemsize
                    n = d.id.get_num_chunks()
                    self.assertEqual(n, math.prod(-(-m // c) for m, c in zip(d.shape, d.chunks)))
                    for i in range(n):
                        info = d.id.get_chunk_info(i)
                        self.assertEqual(info.filter_mask, 0)
                        stored = raw[info.byte_offset:info.byte_offset + info.size]
                        mask, direct = d.id.read_direct_chunk(info.chunk_offset)
                        self.assertEqual(direct, stored)
                        if s["gzip"] is not None:
                            # A zlib stream of stored blocks: exact size, h5py's
                            # filter and zlib agree on its contents and Adler-32.
                            nb = -(-craw // 65535)
                            self.assertEqual(info.size, 2 + craw + 5 * nb + 4)
                            self.assertEqual(stored[:2], b"\x78\x01")
                            body = zlib.decompress(stored)
                        else:
                            self.assertEqual(info.size, craw)
                            body = stored
                        chunk = np.frombuffer(body, dtype=a.dtype).reshape(d.chunks)
                        sl = tuple(slice(o, o + c) for o, c in zip(info.chunk_offset, d.chunks))
                        part = a[sl]
                        self.assertTrue(np.array_equal(
                            chunk[tuple(slice(0, m) for m in part.shape)], part))
                        nchunks += 1
        self.assertGreater(nchunks, 100)

    def test_bad_adler_is_caught(self):
        # The Adler-32 really is checked on the way through h5py's gzip filter.
        p = next(p for n, s, p in self.each(lambda s: s["gzip"] is not None))
        raw = bytearray(dltest.read_file(p))
        with h5py.File(p, "r") as f:
            info = f["records_0"].id.get_chunk_info(0)
        raw[info.byte_offset + info.size - 1] ^= 1
        bad = os.path.join(self.tmp.name, "bad.hdf5")
        with open(bad, "wb") as fp:
            fp.write(raw)
        with h5py.File(bad, "r") as f:
            with self.assertRaises(OSError):
                f["records_0"][0]

    def rewrite_same_properties(self, src, path):
        """h5py, low-level API, same creation properties as our template; data
        from src: contiguous via write, chunks via write_direct_chunk."""
        fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
        fapl.set_libver_bounds(h5py.h5f.LIBVER_LATEST, h5py.h5f.LIBVER_LATEST)
        fcpl = h5py.h5p.create(h5py.h5p.FILE_CREATE)
        fcpl.set_obj_track_times(False)
        fid = h5py.h5f.create(path.encode(), h5py.h5f.ACC_TRUNC, fapl=fapl, fcpl=fcpl)
        names = [n for n in src.keys() if n not in ("labels", "y", "records")]
        names = sorted(names, key=lambda n: (len(n), n)) + [n for n in ("labels", "y") if n in src]
        for n in names:
            d = src[n]
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_obj_track_times(False)
            dcpl.set_fill_time(h5py.h5d.FILL_TIME_NEVER)
            if d.chunks is not None:
                dcpl.set_chunk(d.chunks)
                if d.compression == "gzip":
                    dcpl.set_deflate(d.compression_opts)
            else:
                dcpl.set_layout(h5py.h5d.CONTIGUOUS)
                dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
            space = h5py.h5s.create_simple(d.shape)
            out = h5py.h5d.create(fid, n.encode(), d.id.get_type(), space, dcpl=dcpl)
            if n == "records_0":
                # DLIO 2.0.0's name for the same dataset: a hard link.
                root = h5py.h5g.open(fid, b"/")
                root.links.create_hard(b"records", root, b"records_0")
                root.close()
            if d.chunks is None:
                out.write(h5py.h5s.ALL, h5py.h5s.ALL, np.ascontiguousarray(d[()]))
            else:
                for i in range(d.id.get_num_chunks()):
                    off = d.id.get_chunk_info(i).chunk_offset
                    mask, data = d.id.read_direct_chunk(off)
                    out.write_direct_chunk(off, data, mask)
            out.close()
        fid.close()

    def test_h5py_rewrite_is_identical(self):
        n = 0
        for name, s, p in self.each():
            with self.subTest(file=p):
                ref = os.path.join(self.tmp.name, "ref.hdf5")
                with h5py.File(p, "r") as src:
                    self.rewrite_same_properties(src, ref)
                ours = dltest.read_file(p)
                theirs = dltest.read_file(ref)
                self.assertEqual(len(theirs), len(ours))
                self.assertTrue(theirs == ours, "h5py's rewrite differs from our bytes")
                n += 1
        self.assertGreater(n, 20)

    def test_dlio_calls_same_layout(self):
        # DLIO's generator: h5py.File(path, 'w', libver='latest'), create each
        # records_i with its data, then labels from a list of Python ints.
        n = 0
        for name, s, p in self.each(lambda s: s["layout"] != "plain" and s["chunks"] is None):
            with self.subTest(file=p), h5py.File(p, "r") as src:
                ref = os.path.join(self.tmp.name, "dlio.hdf5")
                with h5py.File(ref, "w", libver="latest") as f:
                    for dn in data_names(s):
                        f.create_dataset(dn, data=src[dn][()])
                        if dn == "records_0":
                            f["records"] = f["records_0"]  # hard link, as ours
                    f.create_dataset("labels", data=[0] * s["samples"])
                self.assertEqual(os.path.getsize(ref), os.path.getsize(p))
                with h5py.File(ref, "r") as f:
                    for dn in data_names(s) + ["labels"]:
                        self.assertEqual(f[dn].id.get_offset(), src[dn].id.get_offset(), dn)
                        self.assertEqual(f[dn].dtype, src[dn].dtype)
                        self.assertTrue(np.array_equal(f[dn][()], src[dn][()]))
                n += 1
        self.assertGreater(n, 5)

    def test_files_differ_metadata_shared(self):
        seen = {}
        for name, s, p in self.each():
            data = dltest.read_file(p)
            self.assertNotIn(data, seen, "%s has the same bytes as %s" % (p, seen.get(data)))
            seen[data] = p
        # Two files of one shape: same size, same bytes outside the data.
        a, b = [p for _n, _s, p in self.each(lambda s: s is SPECS["dlio_k3_f32"])][:2]
        ra, rb = dltest.read_file(a), dltest.read_file(b)
        self.assertEqual(len(ra), len(rb))
        with h5py.File(a, "r") as f:
            mask = np.ones(len(ra), dtype=bool)
            for dn in f:
                off = f[dn].id.get_offset()
                mask[off:off + f[dn].id.get_storage_size()] = False
        va, vb = np.frombuffer(ra, np.uint8), np.frombuffer(rb, np.uint8)
        self.assertTrue(np.array_equal(va[mask], vb[mask]))
        self.assertFalse(np.array_equal(va[~mask], vb[~mask]))
        sizes = {os.path.getsize(p) for _n, _s, p in self.each(lambda s: s is SPECS["sized"])}
        self.assertGreater(len(sizes), 2, "size distribution gives per-file shapes")


if __name__ == "__main__":
    dltest.main()
