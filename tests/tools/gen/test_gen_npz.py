"""npy / npz files from dlio-gen, read by numpy 1.24 and Python's zipfile.

The strongest check available from Python: numpy's writer is deterministic,
so re-saving what np.load returned (np.save / np.savez into a BytesIO) must
give our file byte for byte. Multi-GB ZIP64 archives are not written out:
the C unit test binary serves their bytes on demand (--serve) and zipfile
reads them through a file object, CRCs included.

`compression: zip` (np.savez_compressed): the same datasets generated with
and without it load to the same arrays; the archive has numpy's structure
(compared field by field with np.savez_compressed's own output of those
arrays) and each member is a raw deflate stream of stored blocks.
"""
import io
import math
import os
import subprocess
import struct
import sys
import tempfile
import unittest
import zipfile
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))  # tests/: dltest
import dltest  # noqa: E402

try:
    import numpy as np
except ImportError:  # pragma: no cover
    np = None

DTYPES = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64",
          "float16", "float32", "float64"]

# (name, format, dtype, train files, eval files, samples, sample_size or None,
#  shape or None, subfolders, eval_subfolders)
SPECIAL = [
    ("unet", "npz", "uint8", 7, 2, 1, "{mean: 40KB, stdev: 15KB, min: 1KB, max: 100KB}",
     None, 3, 0),
    ("f32img", "npz", "float32", 3, 1, 4, None, [8, 16, 3], 0, 2),
    ("bigf32", "npz", "float32", 1, 0, 4, None, [512, 512], 0, 0),
    ("labels64", "npz", "int64", 2, 0, 3, "4096", None, 0, 0),
    ("half", "npz", "float16", 2, 1, 2, None, [10, 10], 0, 0),
    ("npyu8", "npy", "uint8", 5, 2, 2, "{mean: 20000, stdev: 8000}", None, 2, 0),
    ("npyf32", "npy", "float32", 2, 0, 3, None, [32, 32], 0, 0),
    ("npyf64", "npy", "float64", 2, 1, 5, "3000", None, 0, 0),
    ("npy1d", "npy", "int16", 1, 0, 7, None, [33], 0, 0),
]
SIMPLE = [("%s_%s" % (fmt, dt), fmt, dt, 2, 1, 2, "300", None, 0, 0)
          for fmt in ("npy", "npz") for dt in DTYPES]
DATASETS = SPECIAL + SIMPLE


def config_text():
    lines = ["seed: 1234", "datasets:"]
    for (name, fmt, dt, nf, ne, ns, size, shape, sub, esub) in DATASETS:
        lines += ["  - name: %s" % name, "    format: %s" % fmt, "    dtype: %s" % dt,
                  "    files: %d" % nf, "    eval_files: %d" % ne,
                  "    samples_per_file: %d" % ns]
        if size is not None:
            lines.append("    sample_size: %s" % size)
        if shape is not None:
            lines.append("    shape: [%s]" % ", ".join(str(s) for s in shape))
        if sub:
            lines.append("    subfolders: %d" % sub)
        if esub:
            lines.append("    eval_subfolders: %d" % esub)
    return "\n".join(lines) + "\n"


def expected_paths(spec):
    """DLIO's names: <name>/<split>/[<sub>/]img_<i>_of_<N>.<ext>."""
    (name, fmt, _dt, nf, ne, _ns, _size, _shape, sub, esub) = spec
    out = set()
    for split, n, nsub in (("train", nf, sub), ("valid", ne, esub)):
        for i in range(n):
            parts = [name, split]
            if nsub > 1:
                parts.append(str(i % nsub).zfill(len(str(nsub))))
            parts.append("img_%s_of_%d.%s" % (str(i).zfill(len(str(n))), n, fmt))
            out.add(os.path.join(*parts))
    return out


def parse_size(text):
    return int(text) if text.isdigit() else None


class GenNpzTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        dltest.require(np is not None, "numpy not importable")
        dltest.require(os.path.exists(dltest.DLIO_GEN), "dlio-gen not built: " + dltest.DLIO_GEN)
        cls.tmp = tempfile.TemporaryDirectory(prefix="dliofs-npz-")
        cls.addClassCleanup(cls.tmp.cleanup)
        cls.cfg = dltest.write_config(cls.tmp.name, config_text())
        cls.out = dltest.gen(cls.cfg, os.path.join(cls.tmp.name, "out"))
        cls.files = dltest.walk_files(cls.out)

    def path(self, rel):
        return os.path.join(self.out, rel)

    def each(self, fmt=None):
        for spec in DATASETS:
            if fmt is None or spec[1] == fmt:
                for rel in sorted(expected_paths(spec)):
                    yield spec, rel

    def check_x(self, spec, x):
        """Shape, dtype and value sanity of the array DLIO generates."""
        (name, _fmt, dt, _nf, _ne, ns, size, shape, _sub, _esub) = spec
        self.assertEqual(x.dtype, np.dtype(dt))
        self.assertEqual(x.shape[-1], ns, "sample axis is last")
        if shape is not None:
            self.assertEqual(list(x.shape[:-1]), shape)
        else:
            self.assertEqual(x.ndim, 3)
            self.assertEqual(x.shape[0], x.shape[1])
            fixed = parse_size(size)
            if fixed is not None:
                self.assertEqual(x.shape[0], max(1, math.isqrt(fixed // x.itemsize)))
        if x.dtype.kind == "f":
            self.assertTrue(np.isfinite(x).all(), name)
            self.assertGreaterEqual(float(x.min()), 0.0)
            self.assertLess(float(x.max()), 1.0)
            if x.size >= 1000:
                self.assertAlmostEqual(float(x.astype(np.float64).mean()), 0.5, delta=0.05)
        elif x.size >= 1000:
            # Random bytes: the low byte takes most of its 256 values.
            low = x.view(np.uint8).reshape(-1)[:: x.itemsize]
            self.assertGreater(len(np.unique(low)), 200, name)

    def test_file_set(self):
        want = set()
        for spec in DATASETS:
            want |= expected_paths(spec)
        self.assertEqual(set(self.files), want)

    def test_npz_resave_identical(self):
        n = 0
        for spec, rel in self.each("npz"):
            with self.subTest(file=rel):
                raw = dltest.read_file(self.path(rel))
                with np.load(self.path(rel)) as z:
                    self.assertEqual(sorted(z.files), ["x", "y"])
                    x, y = z["x"], z["y"]
                self.check_x(spec, x)
                self.assertEqual(y.dtype, np.dtype("int64"))
                self.assertEqual(y.shape, (spec[5],))
                self.assertFalse(y.any(), "labels are zeros")
                buf = io.BytesIO()
                np.savez(buf, x=x, y=y)
                self.assertEqual(len(buf.getvalue()), len(raw))
                self.assertTrue(buf.getvalue() == raw, "np.savez of the loaded arrays differs")
                n += 1
        self.assertGreater(n, 20)

    def test_npz_zipfile(self):
        for _spec, rel in self.each("npz"):
            with self.subTest(file=rel):
                with zipfile.ZipFile(self.path(rel)) as zf:
                    self.assertIsNone(zf.testzip())  # every CRC checked
                    infos = zf.infolist()
                    self.assertEqual([i.filename for i in infos], ["x.npy", "y.npy"])
                    self.assertEqual([i.compress_type for i in infos], [0, 0])
                    self.assertEqual(infos[0].header_offset, 0)

    def test_npy_resave_identical(self):
        n = 0
        for spec, rel in self.each("npy"):
            with self.subTest(file=rel):
                raw = dltest.read_file(self.path(rel))
                x = np.load(self.path(rel))
                self.check_x(spec, x)
                m = np.load(self.path(rel), mmap_mode="r")
                self.assertEqual(m.shape, x.shape)
                self.assertTrue(np.array_equal(m, x, equal_nan=False))
                del m
                buf = io.BytesIO()
                np.save(buf, x)
                self.assertTrue(buf.getvalue() == raw, "np.save of the loaded array differs")
                self.assertEqual(len(raw) - x.nbytes, 128, "numpy's 128-byte header")
                n += 1
        self.assertGreater(n, 20)

    def test_files_differ_and_shapes_vary(self):
        seen = {}
        for _spec, rel in self.each():
            data = dltest.read_file(self.path(rel))
            self.assertNotIn(data, seen, "%s has the same bytes as %s" % (rel, seen.get(data)))
            seen[data] = rel
        shapes = set()
        for spec, rel in self.each("npz"):
            if spec[0] == "unet":
                with np.load(self.path(rel)) as z:
                    shapes.add(z["x"].shape)
        self.assertGreater(len(shapes), 3, "size distribution gives per-file shapes")

    def test_npz_member_is_npy(self):
        # The npz's x.npy member is itself a valid npy file of the same array.
        rel = sorted(expected_paths([s for s in DATASETS if s[0] == "npz_float32"][0]))[0]
        with zipfile.ZipFile(self.path(rel)) as zf:
            member = zf.read("x.npy")
        arr = np.load(io.BytesIO(member))
        with np.load(self.path(rel)) as z:
            self.assertTrue(np.array_equal(arr, z["x"]))

    def test_deterministic(self):
        out2 = dltest.gen(self.cfg, os.path.join(self.tmp.name, "again"))
        for rel in self.files:
            self.assertEqual(dltest.sha256_file(os.path.join(out2, rel)),
                             dltest.sha256_file(self.path(rel)), rel)


# Datasets generated twice, with and without `compression: zip`: same names,
# so the same content keys. (name, dtype, files, eval files, samples,
# sample_size or None, shape or None)
ZIP_DATASETS = [
    ("zu8", "uint8", 3, 1, 2, "{mean: 100KB, stdev: 40KB, min: 1KB, max: 300KB}", None),
    ("zf32", "float32", 2, 0, 3, None, [64, 64, 3]),
    ("zi64", "int64", 2, 0, 3, "4096", None),
    ("zf16", "float16", 1, 1, 2, None, [10, 10]),
    ("zone", "uint8", 1, 0, 1, None, [65535 - 128]),  # x.npy: exactly one full block
    ("ztwo", "uint8", 1, 0, 1, None, [65536 - 128]),  # a 1-byte second block
]


def zip_config(compress):
    lines = ["seed: 99", "datasets:"]
    for (name, dt, nf, ne, ns, size, shape) in ZIP_DATASETS:
        lines += ["  - name: %s" % name, "    format: npz", "    dtype: %s" % dt,
                  "    files: %d" % nf, "    eval_files: %d" % ne,
                  "    samples_per_file: %d" % ns]
        if size is not None:
            lines.append("    sample_size: %s" % size)
        if shape is not None:
            lines.append("    shape: [%s]" % ", ".join(str(v) for v in shape))
        if compress:
            lines.append("    compression: zip")
    return "\n".join(lines) + "\n"


def stored_len(n):
    """Raw deflate stream of stored blocks holding n bytes (docs/formats.md 1.6)."""
    return n + 5 * max(1, -(-n // 65535))


def stored_blocks(data):
    """Parse a raw deflate stream that must be stored blocks only: (content,
    block lengths). Raises AssertionError on anything else."""
    out, lens, pos = [], [], 0
    while True:
        hdr = data[pos]
        assert hdr in (0, 1), "block header %#x at %d: not a stored block" % (hdr, pos)
        ln, nln = struct.unpack_from("<HH", data, pos + 1)
        assert ln ^ nln == 0xFFFF, "NLEN at %d" % pos
        out.append(data[pos + 5:pos + 5 + ln])
        lens.append(ln)
        pos += 5 + ln
        if hdr == 1:
            break
    assert pos == len(data), "%d bytes after the final block" % (len(data) - pos)
    return b"".join(out), lens


def local_header(raw, off):
    """Fields of the local header at off: (fixed 30 bytes, name, extra)."""
    head = raw[off:off + 30]
    nlen, xlen = struct.unpack_from("<HH", head, 26)
    return head, raw[off + 30:off + 30 + nlen], raw[off + 30 + nlen:off + 30 + nlen + xlen]


class GenNpzCompressedTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        dltest.require(np is not None, "numpy not importable")
        dltest.require(os.path.exists(dltest.DLIO_GEN), "dlio-gen not built: " + dltest.DLIO_GEN)
        cls.tmp = tempfile.TemporaryDirectory(prefix="dliofs-npzc-")
        cls.addClassCleanup(cls.tmp.cleanup)
        cz = dltest.write_config(cls.tmp.name, zip_config(True), "zip.yaml")
        cs = dltest.write_config(cls.tmp.name, zip_config(False), "stored.yaml")
        cls.zout = dltest.gen(cz, os.path.join(cls.tmp.name, "zip"))
        cls.sout = dltest.gen(cs, os.path.join(cls.tmp.name, "stored"))
        cls.files = dltest.walk_files(cls.zout)

    def pairs(self):
        for rel in self.files:
            yield rel, os.path.join(self.zout, rel), os.path.join(self.sout, rel)

    def test_same_files(self):
        self.assertEqual(self.files, dltest.walk_files(self.sout))
        want = sum(nf + ne for (_n, _d, nf, ne, _s, _z, _h) in ZIP_DATASETS)
        self.assertEqual(len(self.files), want)
        self.assertTrue(all(f.endswith(".npz") for f in self.files))

    def test_arrays_equal_stored_variant(self):
        for rel, zp, sp in self.pairs():
            with self.subTest(file=rel):
                with np.load(zp) as z, np.load(sp) as s:
                    self.assertEqual(sorted(z.files), ["x", "y"])
                    for k in ("x", "y"):
                        a, b = z[k], s[k]
                        self.assertEqual((a.dtype, a.shape), (b.dtype, b.shape), k)
                        self.assertTrue(np.array_equal(a, b), k)
                    self.assertFalse(z["y"].any())

    def test_zipfile(self):
        for rel, zp, sp in self.pairs():
            with self.subTest(file=rel):
                with zipfile.ZipFile(zp) as zf, zipfile.ZipFile(sp) as sf:
                    self.assertIsNone(zf.testzip())  # inflates and checks every CRC
                    zi, si = zf.infolist(), sf.infolist()
                    self.assertEqual([i.filename for i in zi], ["x.npy", "y.npy"])
                    self.assertEqual([i.compress_type for i in zi], [8, 8])
                    self.assertEqual([i.compress_type for i in si], [0, 0])
                    self.assertEqual([i.file_size for i in zi], [i.file_size for i in si])
                    self.assertEqual([i.CRC for i in zi], [i.CRC for i in si])
                    self.assertEqual([i.compress_size for i in zi],
                                     [stored_len(i.file_size) for i in zi])
                    self.assertEqual([i.header_offset for i in zi],
                                     [0, 55 + zi[0].compress_size])
                    for name in ("x.npy", "y.npy"):
                        self.assertTrue(zf.read(name) == sf.read(name), name)
                size = os.path.getsize(zp)
                self.assertEqual(size, 234 + sum(i.compress_size for i in zi))
                self.assertEqual(size - os.path.getsize(sp),
                                 sum(i.compress_size - i.file_size for i in zi))

    def test_members_are_stored_blocks(self):
        for rel, zp, sp in self.pairs():
            with self.subTest(file=rel):
                raw = dltest.read_file(zp)
                with zipfile.ZipFile(zp) as zf, zipfile.ZipFile(sp) as sf:
                    for info in zf.infolist():
                        data_at = info.header_offset + 55
                        content, lens = stored_blocks(raw[data_at:data_at + info.compress_size])
                        self.assertTrue(content == sf.read(info.filename))
                        self.assertEqual(lens, [65535] * (len(lens) - 1) +
                                         [info.file_size - 65535 * (len(lens) - 1)])
                        self.assertEqual(len(lens), max(1, -(-info.file_size // 65535)))
                        # Python's own raw inflate, as zipfile runs it.
                        d = zlib.decompressobj(-15)
                        out = d.decompress(raw[data_at:data_at + info.compress_size])
                        self.assertTrue(d.eof and out == content and not d.unused_data)
        # The block-edge datasets hit what they aim at.
        for name, blocks in (("zone", [65535]), ("ztwo", [65535, 1])):
            rel = [r for r in self.files if r.startswith(name + "/")][0]
            raw = dltest.read_file(os.path.join(self.zout, rel))
            self.assertEqual(stored_blocks(raw[55:55 + stored_len(sum(blocks))])[1], blocks)

    def test_structure_as_numpy_writes_it(self):
        """Everything np.savez_compressed writes for the same arrays, except the
        compressed sizes and what follows from them (offsets), is ours too."""
        for rel, zp, _sp in self.pairs():
            with self.subTest(file=rel):
                ours = dltest.read_file(zp)
                with np.load(zp) as z:
                    x, y = z["x"], z["y"]
                buf = io.BytesIO()
                np.savez_compressed(buf, x=x, y=y)
                theirs = buf.getvalue()
                with zipfile.ZipFile(io.BytesIO(ours)) as a, \
                        zipfile.ZipFile(io.BytesIO(theirs)) as b:
                    ia, ib = a.infolist(), b.infolist()
                    self.assertEqual(len(ia), len(ib))
                    for p, q in zip(ia, ib):
                        for attr in ("filename", "compress_type", "flag_bits", "extract_version",
                                     "create_version", "create_system", "external_attr",
                                     "internal_attr", "date_time", "CRC", "file_size", "extra",
                                     "comment", "volume", "reserved"):
                            self.assertEqual(getattr(p, attr), getattr(q, attr), attr)
                        # Local headers: all but the compressed size (+18 and the
                        # ZIP64 extra's second value).
                        ha, na, xa = local_header(ours, p.header_offset)
                        hb, nb, xb = local_header(theirs, q.header_offset)
                        self.assertEqual(ha[:18] + ha[22:], hb[:18] + hb[22:])
                        self.assertEqual(struct.unpack_from("<I", ha, 18)[0], p.compress_size)
                        self.assertEqual((na, len(xa)), (nb, 20))
                        self.assertEqual(xa[:12], xb[:12])  # id, length, uncompressed size
                        self.assertEqual(struct.unpack_from("<Q", xa, 12)[0], p.compress_size)
                    self.assertEqual(ia[0].header_offset, ib[0].header_offset)
                # The EOCD: same counts and comment, directory of the same size.
                ea, eb = ours[-22:], theirs[-22:]
                self.assertEqual(ea[:16], eb[:16])
                self.assertEqual(ea[20:], eb[20:])


TEST_BIN = os.path.join(dltest.BUILD, "tests", "test_npy_npz")


class Served(io.RawIOBase):
    """A read-only file whose bytes come from `test_npy_npz --serve`."""

    def __init__(self, args):
        super().__init__()
        self.proc = subprocess.Popen([TEST_BIN, "--serve"] + args, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE)
        self.size = int(self.proc.stdout.readline())
        self.pos = 0

    def readable(self):
        return True

    def seekable(self):
        return True

    def tell(self):
        return self.pos

    def seek(self, off, whence=0):
        self.pos = off if whence == 0 else self.pos + off if whence == 1 else self.size + off
        return self.pos

    def pread(self, off, n):
        n = max(0, min(n, self.size - off))
        if n == 0:
            return b""
        self.proc.stdin.write(b"%d %d\n" % (off, n))
        self.proc.stdin.flush()
        parts, left = [], n
        while left:
            b = self.proc.stdout.read(left)
            if not b:
                raise IOError("server died")
            parts.append(b)
            left -= len(b)
        return b"".join(parts)

    def readinto(self, b):
        data = self.pread(self.pos, len(b))
        b[: len(data)] = data
        self.pos += len(data)
        return len(data)

    def close(self):
        if not self.closed and self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
            self.proc.stdout.close()
        super().close()


class Sink:
    """Seekable write-only file that keeps only small writes (headers, ZIP
    records) and drops bulk array data: numpy's writer without the disk."""

    def __init__(self):
        self.pos = 0
        self.size = 0
        self.small = []

    def write(self, b):
        b = bytes(b)
        if len(b) <= 4096:
            self.small.append((self.pos, b))
        self.pos += len(b)
        self.size = max(self.size, self.pos)
        return len(b)

    def tell(self):
        return self.pos

    def seek(self, off, whence=0):
        self.pos = off if whence == 0 else self.pos + off if whence == 1 else self.size + off
        return self.pos

    def flush(self):
        pass

    def read(self, n=-1):  # numpy only checks that it exists
        raise io.UnsupportedOperation("write-only")

    def image(self):
        """{offset: byte} of everything kept, later writes winning."""
        out = {}
        for pos, b in self.small:
            for i, v in enumerate(b):
                out[pos + i] = v
        return out


class Zip64Test(unittest.TestCase):
    """Archives over Python's ZIP64 limit (2^31 - 1), served, never written."""

    def setUp(self):
        dltest.require(np is not None, "numpy not importable")
        dltest.require(os.path.exists(TEST_BIN), "unit test binary not built: " + TEST_BIN)

    def check_geometry(self, dim, expect_member_zip64, expect_end_zip64):
        args = ["npz", "uint8", "1", str(dim)]
        f = Served(args)
        self.addCleanup(f.close)
        X = 128 + dim

        # numpy's own writer for the same shape (zeros: lazily allocated).
        sink = Sink()
        np.savez(sink, x=np.zeros((dim, 1), np.uint8), y=np.zeros(1, np.int64))
        self.assertEqual(f.size, sink.size, "file size as np.savez")

        with zipfile.ZipFile(f) as zf:
            infos = zf.infolist()
            self.assertEqual([i.filename for i in infos], ["x.npy", "y.npy"])
            self.assertEqual([i.file_size for i in infos], [X, 136])
            self.assertEqual([i.header_offset for i in infos], [0, 55 + X])
            y = np.load(io.BytesIO(zf.read("y.npy")))  # CRC checked at its end
            self.assertEqual((y.dtype, y.shape, int(y.any())), (np.dtype("int64"), (1,), 0))
            x_crc = infos[0].CRC
            with zf.open("x.npy") as m:
                self.assertEqual(np.lib.format.read_magic(m), (1, 0))
                shape, fortran, dt = np.lib.format.read_array_header_1_0(m)
                self.assertEqual((shape, fortran, dt), ((dim, 1), False, np.dtype("uint8")))
                # Stream the member to its end: zipfile raises on a bad CRC.
                left = dim
                while left:
                    n = len(m.read(min(left, 64 << 20)))
                    self.assertGreater(n, 0)
                    left -= n
                self.assertEqual(m.read(1), b"")

        # Every byte numpy wrote outside the array data equals ours, except
        # the CRC of x, whose content differs (zeros there, random here).
        cdo = 110 + X + 136
        skip = set(range(14, 18)) | set(range(cdo + 16, cdo + 20))
        img = sink.image()
        offs = sorted(o for o in img if o not in skip)
        diffs = []
        # Read back our bytes in the runs numpy wrote.
        run_start = offs[0]
        prev = offs[0]
        runs = []
        for o in offs[1:] + [None]:
            if o is None or o != prev + 1:
                runs.append((run_start, prev + 1))
                if o is not None:
                    run_start = o
            if o is not None:
                prev = o
        for a, b in runs:
            ours = f.pread(a, b - a)
            for i, v in enumerate(ours):
                if img[a + i] != v:
                    diffs.append(a + i)
        self.assertEqual(diffs[:10], [], "bytes differing from np.savez")
        ours_crc = int.from_bytes(f.pread(14, 4), "little")
        self.assertEqual(ours_crc, x_crc, "local and central CRC")
        tail = f.pread(cdo, f.size - cdo)
        self.assertEqual(b"PK\x06\x06" in tail, expect_end_zip64)
        local = f.pread(0, 30)
        self.assertEqual(local[18:22] == b"\xff\xff\xff\xff", expect_member_zip64)

    def test_member_over_limit(self):
        # docs/formats.md 4.2 worked example: 342 bytes of overhead.
        self.check_geometry(2300000000, True, True)

    def test_directory_over_limit(self):
        # x.npy fits, but the central directory starts past 2^31 - 1.
        self.check_geometry(2147483647 - 128 - 60, False, True)

    def test_compressed_member_over_limit(self):
        """np.savez_compressed layout whose x.npy fits in 2^31 - 1 bytes but
        whose deflate stream does not: zipfile's rules make the member ZIP64
        (sizes in the extras) and y's offset too. zipfile inflates the whole
        2 GB member through the served file and checks its CRC."""
        dim = 2147483647 - 1000 - 128
        X = 128 + dim
        C = stored_len(X)
        self.assertLessEqual(X, 2147483647)
        self.assertGreater(C, 2147483647)
        f = Served(["npz+zip", "uint8", "1", str(dim)])
        self.addCleanup(f.close)
        self.assertEqual(f.size, 110 + C + stored_len(136) + 71 + 63 + 56 + 20 + 22)
        with zipfile.ZipFile(f) as zf:
            infos = zf.infolist()
            self.assertEqual([i.filename for i in infos], ["x.npy", "y.npy"])
            self.assertEqual([i.compress_type for i in infos], [8, 8])
            self.assertEqual([i.file_size for i in infos], [X, 136])
            self.assertEqual([i.compress_size for i in infos], [C, stored_len(136)])
            self.assertEqual([i.header_offset for i in infos], [0, 55 + C])
            self.assertEqual(infos[0].extract_version, 45)
            y = np.load(io.BytesIO(zf.read("y.npy")))
            self.assertEqual((y.dtype, y.shape, int(y.any())), (np.dtype("int64"), (1,), 0))
            with zf.open("x.npy") as m:
                self.assertEqual(np.lib.format.read_magic(m), (1, 0))
                shape, fortran, dt = np.lib.format.read_array_header_1_0(m)
                self.assertEqual((shape, fortran, dt), ((dim, 1), False, np.dtype("uint8")))
                left = dim
                while left:
                    n = len(m.read(min(left, 64 << 20)))
                    self.assertGreater(n, 0)
                    left -= n
                self.assertEqual(m.read(1), b"")  # zipfile checked the CRC here
        local = f.pread(0, 55)
        # version 45, flags 0, method 8; both 32-bit sizes 0xffffffff; name, extra.
        self.assertEqual(struct.unpack_from("<HHH", local, 4), (45, 0, 8))
        self.assertEqual(struct.unpack_from("<IIHH", local, 18), (0xFFFFFFFF, 0xFFFFFFFF, 5, 20))
        self.assertEqual(struct.unpack_from("<HHQQ", local, 35), (1, 16, X, C))


if __name__ == "__main__":
    dltest.main()
