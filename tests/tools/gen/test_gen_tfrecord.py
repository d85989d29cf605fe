"""TFRecord files written by dlio-gen, read by TensorFlow's own reader.

tf.data.TFRecordDataset checks both masked CRC-32Cs of every record, and
tf.io.parse_single_example decodes the Example the way DLIO's reader does.
Expected sizes come from docs/formats.md 2.2, re-derived here in Python; the
record count and per-file payload size N are checked against the config.
A corrupted copy proves the CRC check is really on.

`compression: gzip`: the same datasets generated with and without it; the
gzip file must decompress (Python's gzip and zlib, TensorFlow's GZIP reader
with its record CRC checks) to exactly the uncompressed variant, with the
header TensorFlow's own GZIP writer puts there and exact sizes.
"""
import gzip
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))  # tests/: dltest
import dltest  # noqa: E402

CONFIG = """
seed: 1234
datasets:
  - name: dist
    format: tfrecord
    files: 5
    eval_files: 2
    samples_per_file: 6
    sample_size: {mean: 40KB, stdev: 15KB, min: 1KB, max: 100KB}
  - name: resnet
    format: tfrecord
    files: 2
    samples_per_file: 9
    shape: [338, 338]
  - name: cosmo
    format: tfrecord
    files: 2
    samples_per_file: 3
    sample_size: 2825761
  - name: tiny
    format: tfrecord
    files: 3
    subfolders: 2
    samples_per_file: 25
    sample_size: 1
"""

# name -> (train files, valid files, records per file, fixed N or (min, max))
EXPECT = {
    "dist": (5, 2, 6, (1000, 100000)),
    "resnet": (2, 0, 9, 114244),
    "cosmo": (2, 0, 3, 2825761),
    "tiny": (3, 0, 25, 1),
}


def vl(n):
    k = 1
    while n >= 0x80:
        n >>= 7
        k += 1
    return k


def ld(n):
    return 1 + vl(n) + n


def geometry(N):
    """(record length, payload offset in record) for payload N, size value N."""
    B = ld(N)
    V1 = ld(B)
    E1 = ld(5) + ld(V1)
    I = ld(vl(N))
    V2 = ld(I)
    E2 = ld(4) + ld(V2)
    F = ld(E1) + ld(E2)
    n = ld(F)
    pay = 12 + (1 + vl(F)) + (1 + vl(E1)) + 7 + (1 + vl(V1)) + (1 + vl(B)) + (1 + vl(N))
    return n + 16, pay


def n_from_record_length(R):
    """The payload size whose record is R bytes long (overhead is 32..70 bytes)."""
    for N in range(max(0, R - 80), R):
        if geometry(N)[0] == R:
            return N
    raise AssertionError("no payload size gives a %d-byte record" % R)


def crc32c_fun():
    try:
        import crcmod.predefined
        return crcmod.predefined.mkCrcFun("crc-32c")
    except ImportError:
        table = []
        for b in range(256):
            c = b
            for _ in range(8):
                c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
            table.append(c)

        def crc(data):
            c = 0xFFFFFFFF
            for x in data:
                c = (c >> 8) ^ table[(c ^ x) & 0xFF]
            return c ^ 0xFFFFFFFF
        return crc


def mask(c):
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


# Runs under the TensorFlow venv: reads every file with TF and compares each
# image with the bytes at its expected offset in the file.
TF_SCRIPT = r"""
import json, sys
import tensorflow as tf
spec = json.load(open(sys.argv[1]))
feat = {"image": tf.io.FixedLenFeature([], tf.string),
        "size": tf.io.FixedLenFeature([], tf.int64)}
out = {}
for path, (N, R, pay) in spec["files"].items():
    raw = open(path, "rb").read()
    n = 0
    for rec in tf.data.TFRecordDataset([path]):
        ex = tf.io.parse_single_example(rec, feat)
        img = ex["image"].numpy()
        size = int(ex["size"].numpy())
        if len(img) != N or size != N:
            sys.exit("%s record %d: image %d bytes, size %d, want %d" % (path, n, len(img), size, N))
        if img != raw[n * R + pay: n * R + pay + N]:
            sys.exit("%s record %d: image bytes differ from the file at %d" % (path, n, n * R + pay))
        n += 1
    out[path] = n
bad = {}
for path in spec["corrupt"]:
    try:
        for rec in tf.data.TFRecordDataset([path]):
            pass
        bad[path] = "read without error"
    except tf.errors.DataLossError as e:
        bad[path] = "DataLossError"
print("RESULT " + json.dumps({"records": out, "corrupt": bad}))
"""


class TFRecordGen(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="dliofs-tfr-")
        cfg = dltest.write_config(cls.tmp, CONFIG)
        cls.out = os.path.join(cls.tmp, "out")
        dltest.gen(cfg, cls.out)
        # path -> (N, record length, payload offset, records)
        cls.files = {}
        cls.nfiles = {}
        for name, (ntrain, nvalid, recs, _) in EXPECT.items():
            for split, count in (("train", ntrain), ("valid", nvalid)):
                d = os.path.join(cls.out, name, split)
                found = [os.path.join(d, p) for p in dltest.walk_files(d)] if os.path.isdir(d) else []
                cls.nfiles[(name, split)] = found
                for p in found:
                    size = os.path.getsize(p)
                    R = size // recs if size % recs == 0 else -1
                    N = n_from_record_length(R) if R > 0 else -1
                    cls.files[p] = (name, N, R, geometry(N)[1] if N >= 0 else -1, size)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_layout_and_sizes(self):
        for name, (ntrain, nvalid, recs, want) in EXPECT.items():
            self.assertEqual(len(self.nfiles[(name, "train")]), ntrain, name)
            self.assertEqual(len(self.nfiles[(name, "valid")]), nvalid, name)
            Ns = set()
            for p in self.nfiles[(name, "train")] + self.nfiles[(name, "valid")]:
                self.assertTrue(p.endswith(".tfrecord"), p)
                _, N, R, _, size = self.files[p]
                self.assertEqual(size % recs, 0, p)
                self.assertGreaterEqual(N, 0, p)
                self.assertEqual(size, recs * geometry(N)[0], p)
                if isinstance(want, tuple):
                    self.assertTrue(want[0] <= N <= want[1], (p, N))
                else:
                    self.assertEqual(N, want, p)
                Ns.add(N)
            if isinstance(want, tuple):
                self.assertGreater(len(Ns), 2, "sizes should vary per file: %s" % Ns)
        # docs/formats.md 2.2 worked values.
        self.assertEqual(geometry(114244), (114304, 39))
        self.assertEqual(geometry(2825761), (2825827, 44))

    def test_framing_and_crcs(self):
        """Independent CRC-32C (crcmod when installed) over every record."""
        crc = crc32c_fun()
        for p, (name, N, R, pay, size) in sorted(self.files.items()):
            with open(p, "rb") as f:
                raw = f.read()
            pos = r = 0
            while pos < len(raw):
                (n,) = struct.unpack_from("<Q", raw, pos)
                self.assertEqual(n + 16, R, (p, r))
                (lc,) = struct.unpack_from("<I", raw, pos + 8)
                self.assertEqual(lc, mask(crc(raw[pos:pos + 8])), (p, r))
                (dc,) = struct.unpack_from("<I", raw, pos + 12 + n)
                self.assertEqual(dc, mask(crc(raw[pos + 12:pos + 12 + n])), (p, r))
                pos += n + 16
                r += 1
            self.assertEqual(pos, len(raw))

    def test_tensorflow_reads(self):
        py = dltest.venv_python()
        dltest.require(py is not None, "TensorFlow venv (%s) not available" % dltest.VENV_PY)
        corrupt = []
        # One flipped payload byte and one flipped length byte: TF must refuse both.
        src = sorted(p for p in self.files if self.files[p][0] == "resnet")[0]
        for what, where in (("payload", self.files[src][2] * 4 + 1000), ("length", 2)):
            dst = os.path.join(self.tmp, "corrupt-%s.tfrecord" % what)
            with open(src, "rb") as f:
                data = bytearray(f.read())
            data[where] ^= 0x01
            with open(dst, "wb") as f:
                f.write(data)
            corrupt.append(dst)
        spec = {"files": {p: [v[1], v[2], v[3]] for p, v in self.files.items()},
                "corrupt": corrupt}
        spec_path = os.path.join(self.tmp, "spec.json")
        with open(spec_path, "w") as f:
            json.dump(spec, f)
        script = os.path.join(self.tmp, "tfread.py")
        with open(script, "w") as f:
            f.write(TF_SCRIPT)
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
        r = subprocess.run([py, script, spec_path], capture_output=True, text=True, env=env,
                           timeout=500)
        self.assertEqual(r.returncode, 0, r.stdout[-2000:] + r.stderr[-4000:])
        line = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
        self.assertEqual(len(line), 1, r.stdout[-2000:])
        res = json.loads(line[0][len("RESULT "):])
        for p, (name, N, R, pay, size) in self.files.items():
            self.assertEqual(res["records"].get(p), EXPECT[name][2], p)
        for p in corrupt:
            self.assertEqual(res["corrupt"][p], "DataLossError", p)


# Generated twice, with and without gzip: (name, yaml lines, compression_level)
GZ_DATASETS = [
    ("gres", ["files: 2", "samples_per_file: 9", "shape: [338, 338]"], None),
    ("gdist", ["files: 3", "eval_files: 1", "samples_per_file: 6",
               "sample_size: {mean: 40KB, stdev: 15KB, min: 1KB, max: 100KB}"], 9),
    ("gtiny", ["files: 2", "samples_per_file: 25", "sample_size: 1"], 1),
    ("gcosmo", ["files: 1", "samples_per_file: 2", "sample_size: 2825761"], 6),
]


def gz_config(compress):
    lines = ["seed: 4321", "datasets:"]
    for name, keys, level in GZ_DATASETS:
        lines += ["  - name: %s" % name, "    format: tfrecord"] + ["    " + k for k in keys]
        if compress:
            lines.append("    compression: gzip")
            if level is not None:
                lines.append("    compression_level: %d" % level)
    return "\n".join(lines) + "\n"


def gz_size(S):
    """10-byte header, stored deflate blocks, CRC-32 and ISIZE."""
    return 10 + S + 5 * max(1, -(-S // 65535)) + 8


# TF reads each gzip file and its uncompressed twin; every record must match.
TF_GZ_SCRIPT = r"""
import json, sys
import tensorflow as tf
spec = json.load(open(sys.argv[1]))
feat = {"image": tf.io.FixedLenFeature([], tf.string),
        "size": tf.io.FixedLenFeature([], tf.int64)}
out = {}
for path, twin in spec["pairs"].items():
    a = [r.numpy() for r in tf.data.TFRecordDataset([path], compression_type="GZIP",
                                                      buffer_size=65536)]
    b = [r.numpy() for r in tf.data.TFRecordDataset([twin])]
    if a != b:
        sys.exit("%s: %d records, twin %d, or contents differ" % (path, len(a), len(b)))
    for rec in a:
        ex = tf.io.parse_single_example(rec, feat)
        if len(ex["image"].numpy()) != int(ex["size"].numpy()):
            sys.exit("%s: image/size mismatch" % path)
    out[path] = len(a)
bad = {}
for path in spec["corrupt"]:
    try:
        for rec in tf.data.TFRecordDataset([path], compression_type="GZIP"):
            pass
        bad[path] = "read without error"
    except tf.errors.DataLossError as e:
        bad[path] = "DataLossError"
print("RESULT " + json.dumps({"records": out, "corrupt": bad}))
"""


class TFRecordGzipGen(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="dliofs-tfrgz-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, True)
        cz = dltest.write_config(cls.tmp, gz_config(True), "gz.yaml")
        cu = dltest.write_config(cls.tmp, gz_config(False), "plain.yaml")
        cls.zout = dltest.gen(cz, os.path.join(cls.tmp, "gz"))
        cls.uout = dltest.gen(cu, os.path.join(cls.tmp, "plain"))
        cls.files = dltest.walk_files(cls.zout)

    def pairs(self):
        for rel in self.files:
            yield rel, os.path.join(self.zout, rel), os.path.join(self.uout, rel)

    def level(self, rel):
        return {n: lv for n, _k, lv in GZ_DATASETS}[rel.split(os.sep)[0]]

    def test_names_and_sizes(self):
        self.assertEqual(self.files, dltest.walk_files(self.uout))
        self.assertEqual(len(self.files), 2 + 4 + 2 + 1)
        for rel, zp, up in self.pairs():
            self.assertTrue(rel.endswith(".tfrecord"), rel)  # DLIO's name, no .gz
            self.assertEqual(os.path.getsize(zp), gz_size(os.path.getsize(up)), rel)

    def test_gzip_decompresses_to_uncompressed_variant(self):
        for rel, zp, up in self.pairs():
            with self.subTest(file=rel):
                data, plain = dltest.read_file(zp), dltest.read_file(up)
                self.assertTrue(gzip.decompress(data) == plain)
                with gzip.open(zp, "rb") as g:  # streaming, in small reads
                    parts = []
                    while True:
                        b = g.read(10007)
                        if not b:
                            break
                        parts.append(b)
                self.assertTrue(b"".join(parts) == plain)
                d = zlib.decompressobj(16 + 15)
                out = b"".join(d.decompress(data[i:i + 4099]) for i in range(0, len(data), 4099))
                self.assertTrue(d.eof and not d.unused_data and out == plain)
                # Header as zlib (TF's writer) makes it: no name, mtime 0, OS 3 (Unix);
                # XFL 2 at level 9, 4 at level 1, else 0.
                lv = self.level(rel)
                xfl = 2 if lv == 9 else 4 if lv == 1 else 0
                self.assertEqual(data[:10], b"\x1f\x8b\x08\x00\x00\x00\x00\x00" + bytes([xfl, 3]))
                crc, isize = struct.unpack_from("<II", data, len(data) - 8)
                self.assertEqual((crc, isize), (zlib.crc32(plain), len(plain) & 0xFFFFFFFF))

    def test_stored_blocks(self):
        for rel, zp, up in self.pairs():
            data, n = dltest.read_file(zp), os.path.getsize(up)
            pos, blocks = 10, 0
            while True:
                hdr = data[pos]
                ln, nln = struct.unpack_from("<HH", data, pos + 1)
                self.assertIn(hdr, (0, 1), (rel, pos))
                self.assertEqual(ln ^ nln, 0xFFFF, (rel, pos))
                blocks += 1
                pos += 5 + ln
                if hdr == 1:
                    break
                self.assertEqual(ln, 65535, (rel, pos))
            self.assertEqual(pos, len(data) - 8, rel)
            self.assertEqual(blocks, max(1, -(-n // 65535)), rel)

    def test_tensorflow_reads_gzip(self):
        py = dltest.venv_python()
        dltest.require(py is not None, "TensorFlow venv (%s) not available" % dltest.VENV_PY)
        src = os.path.join(self.zout, [r for r in self.files if r.startswith("gres")][0])
        corrupt = []
        size = os.path.getsize(src)
        # trailer CRC-32; a payload byte in the second block (not a block header);
        # ISIZE; a stored-block NLEN.
        for what, where in (("crc", size - 6), ("payload", 10 + 65540 + 777),
                            ("isize", size - 2), ("nlen", 10 + 65540 + 4)):
            dst = os.path.join(self.tmp, "corrupt-%s.tfrecord" % what)
            data = bytearray(dltest.read_file(src))
            data[where] ^= 0x01
            with open(dst, "wb") as f:
                f.write(data)
            corrupt.append(dst)
        spec = {"pairs": {zp: up for _r, zp, up in self.pairs()}, "corrupt": corrupt}
        spec_path = os.path.join(self.tmp, "gzspec.json")
        with open(spec_path, "w") as f:
            json.dump(spec, f)
        script = os.path.join(self.tmp, "tfgz.py")
        with open(script, "w") as f:
            f.write(TF_GZ_SCRIPT)
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
        r = subprocess.run([py, script, spec_path], capture_output=True, text=True, env=env,
                           timeout=500)
        self.assertEqual(r.returncode, 0, r.stdout[-2000:] + r.stderr[-4000:])
        line = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
        self.assertEqual(len(line), 1, r.stdout[-2000:])
        res = json.loads(line[0][len("RESULT "):])
        want = {"gres": 9, "gdist": 6, "gtiny": 25, "gcosmo": 2}
        for rel, zp, _up in self.pairs():
            self.assertEqual(res["records"].get(zp), want[rel.split(os.sep)[0]], rel)
        for p in corrupt:
            self.assertEqual(res["corrupt"][p], "DataLossError", p)


if __name__ == "__main__":
    dltest.main()
