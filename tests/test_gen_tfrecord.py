"""TFRecord files written by dlio-gen, read by TensorFlow's own reader.

tf.data.TFRecordDataset checks both masked CRC-32Cs of every record, and
tf.io.parse_single_example decodes the Example the way DLIO's reader does.
Expected sizes come from formats.md 2.2, re-derived here in Python; the
record count and per-file payload size N are checked against the config.
A corrupted copy proves the CRC check is really on.
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
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
        # formats.md 2.2 worked values.
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


if __name__ == "__main__":
    dltest.main()
