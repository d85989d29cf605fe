"""Malformed configs through `dliofs check`: every one is refused with exit
code 2 and a file:line:column message, nothing crashes or hangs, and valid
configs still pass. Stdlib only.

The corpus: hand-written broken configs (one per error class), every
truncation of a valid config, and seeded random mutations of it.
"""
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/: dltest
import dltest  # noqa: E402

CASE_TIMEOUT = 30          # seconds per `dliofs check` run (sanitizer builds are slow)
MUTATIONS = 200
SEED = int(os.environ.get("DLIOFS_FUZZ_SEED", "20240611"))
CRASH_MARKERS = ("Segmentation", "AddressSanitizer", "LeakSanitizer", "runtime error",
                 "Aborted", "core dumped", "stack-overflow")

# Valid, and `format:` is the last key of every dataset: a prefix of this
# text is a valid config only when it ends right after a dataset's format.
VALID = """\
# dliofs fuzz base config
seed: 7
io: cache
datasets:
  - name: unet3d
    files: 4
    eval_files: 1
    samples_per_file: 2
    sample_size: {mean: 4KiB, stdev: 512, min: 1KiB, max: 8KiB}
    subfolders: 2
    format: npz
  - name: bert
    files: 3
    samples_per_file: 5
    sample_size: 1KB
    file_prefix: part
    format: tfrecord
  - name: criteo
    files: 2
    samples_per_file: 100
    cardinality: 1000
    format: dlrm
  - name: arr.v1
    shape: [8, 8, 3]
    dtype: float32
    format: npy
  - name: blob
    sample_size: 1.5KiB
    format: raw
  - name: cosmo
    files: 2
    samples_per_file: 4
    sample_size: {mean: 64KiB, stdev: 4KiB}
    hdf5: {layout: dlio, datasets: 2, chunks: [1, 64, 64]}
    compression: gzip
    compression_level: 6
    format: hdf5
  - name: imagenet
    files: 20
    eval_files: 10
    classes: 10
    sample_size: {mean: 20kB, stdev: 5kB, min: 2kB}
    width: {mean: 120, stdev: 20}
    height: 100
    color: RGB420
    format: jpeg
  - name: pngs
    width: 32
    color: L
    format: png
  - name: tfz
    sample_size: 100
    compression: gzip
    format: tfrecord
"""

HEAD = "datasets:\n  - name: a\n    format: raw\n"   # sample_size values start at 4:18
IMG = "datasets:\n  - name: a\n    format: jpeg\n"

DLIO_QUIET = """\
dataset:
  data_folder: ./data/unet3d/
  format: npz
  num_files_train: 4
  num_files_eval: 1
  num_samples_per_file: 1
  record_length_bytes: 4096
  record_length_bytes_stdev: 512
  num_subfolders_train: 2
  file_prefix: vol
train:
  seed: 7
"""

# A DLIO workload as shipped: valid, with keys dliofs ignores (one stderr line).
DLIO = """\
model:
  name: unet3d
  type: cnn
framework: pytorch
workflow:
  generate_data: False
  train: True
dataset:
  data_folder: data/unet3d/
  format: npz
  num_files_train: 8
  num_samples_per_file: 1
  record_length_bytes: 146600
  record_length_bytes_stdev: 6834
  record_length_bytes_resize: 2097
  record_element_type: uint8
reader:
  data_loader: pytorch
  batch_size: 7
train:
  epochs: 5
  computation_time: 0.636
  seed: 11
metric:
  au: 0.90
"""

VALID_EXTRA = {
    "minimal": HEAD + "    sample_size: 1\n",
    "json": '{"seed": "12", "datasets": [{"name": "j", "format": "npy", '
            '"sample_size": "64", "files": "2"}]}\n',
    "crlf": VALID.replace("\n", "\r\n"),
    "anchors": "datasets:\n  - &d {name: x, format: raw, sample_size: &s 2KiB}\n"
               "  - {name: y, format: raw, sample_size: *s}\n",
    "comments": "# c\nseed: 3 # c\ndatasets: # c\n  # c\n  - name: c # c\n    format: raw\n"
                "    sample_size: 10 # c\n",
    "indexed": "datasets:\n  - {name: ib, format: indexed_binary, files: 0, eval_files: 2, "
               "sample_size: 100, samples_per_file: 3}\n",
    "npz-zip": "datasets:\n  - {name: z, format: npz, sample_size: 1KiB, compression: zip}\n",
    "hdf5-plain": "datasets:\n  - {name: h, format: hdf5, shape: [4, 4], dtype: float32, "
                  "hdf5: {layout: plain}}\n",
    "jpeg-size-only": "datasets:\n  - {name: j, format: jpeg, sample_size: 110kB}\n",
    # A DLIO workload whose every key dliofs uses: nothing on stderr.
    "dlio-quiet": DLIO_QUIET,
    "dlio-hdf5": "dataset:\n  format: hdf5\n  num_files_train: 2\n  record_dims: [4, 8]\n"
                 "  hdf5: {num_dset_per_record: 2, chunk_dims: [1, 2, 8]}\n",
}


def b(s):
    return s.encode("utf-8") if isinstance(s, str) else s


def corpus():
    """(name, bytes, expected (line, col) of some message or None, text it must contain)."""
    rnd = random.Random(SEED)
    c = []

    def add(name, data, at=None, has=None):
        c.append((name, b(data), at, has))

    add("empty", "", (1, 1), "empty config")
    add("only-comment", "# nothing here\n", (1, 1), "empty config")
    add("only-blank", "\n\n   \n", (1, 1), "empty config")
    add("doc-marker-only", "---\n", None, "expected a mapping")
    add("list-top", "- a\n- b\n", (1, 1), "got a list")
    add("scalar-top", "just words\n", (1, 1), "expected a mapping")
    add("two-documents", VALID + "---\n" + VALID, (VALID.count("\n") + 1, 1), "second YAML document")
    add("truncated-flow", HEAD + "    sample_size: {mean: 4KiB, stdev", None, "YAML syntax error")
    add("unclosed-quote", HEAD + '    sample_size: "4KiB\n', None, "YAML syntax error")
    add("tab-indent", HEAD + "\tsample_size: 1\n", (4, 1), "tab")
    add("bad-indent", HEAD + "   sample_size: 1\n", (4, 4), "YAML syntax error")
    add("non-utf8-value", b(HEAD + "    sample_size: 1") + b"\xff\xfe\n", (4, 19), "UTF-8")
    add("non-utf8-key", b(HEAD) + b"    \xc3\x28: 1\n", (4, 5), "UTF-8")
    add("latin1-name", b"datasets:\n  - name: caf\xe9\n    format: raw\n", (2, 14), "UTF-8")
    add("nul-byte", b(HEAD) + b"    sample_size: 1\x00\n", (4, 19), None)
    add("control-char", b(HEAD) + b"    sample_size: \x01\n", (4, 18), None)
    add("binary-garbage", bytes(rnd.randrange(256) for _ in range(4096)))
    add("binary-garbage-2", bytes(rnd.randrange(256) for _ in range(100)))
    add("deep-flow-nesting", "datasets: " + "[" * 100000 + "]" * 100000 + "\n", (1, 74), "nested")
    add("deep-block-nesting", "".join("  " * i + "k:\n" for i in range(2000)), None, "nested")
    add("long-name", "datasets:\n  - name: " + "n" * 1000000 + "\n    format: raw\n"
        "    sample_size: 1\n", (2, 11), "too long")
    add("long-key", HEAD + "    sample_size: 1\n    " + "k" * 100000 + ": 1\n", None,
        "simple key at line 5, column 5")
    add("long-value", HEAD + "    sample_size: " + "9" * 200000 + "\n", (4, 18), "too large")
    add("files-list", HEAD + "    sample_size: 1\n    files: [1, 2]\n", (5, 12), "got a list")
    add("datasets-mapping", "datasets: {name: a}\n", (1, 11), "expected a list")
    add("datasets-scalar", "datasets: 3\n", (1, 11), "expected a list")
    add("dataset-scalar", "datasets:\n  - 3\n", (2, 5), "expected a mapping")
    add("negative-size", HEAD + "    sample_size: -5MB\n", (4, 18), "negative")
    add("zero-size", HEAD + "    sample_size: 0\n", (4, 18), "at least 1 byte")
    add("zero-files", HEAD + "    sample_size: 1\n    files: 0\n", (5, 12), "at least one file")
    add("2^70-bytes", HEAD + "    sample_size: 1180591620717411303424\n", (4, 18), "too large")
    add("1024EiB", HEAD + "    sample_size: 1024EiB\n", (4, 18), "too large")
    add("file-overflow", HEAD + "    sample_size: 1TiB\n    samples_per_file: 1G\n", (4, 18), "2^62")
    add("too-many-files", HEAD + "    sample_size: 1\n    files: 17592186044417\n", (5, 12), "too many")
    add("duplicate-names", HEAD + "    sample_size: 1\n  - name: a\n    format: npz\n"
        "    sample_size: 1\n", (5, 11), "duplicate dataset name")
    add("duplicate-keys", HEAD + "    sample_size: 1\n    sample_size: 2\n", (5, 5), "duplicate key")
    add("unknown-key", HEAD + "    sample_size: 1\n    sampel_size: 2\n", (5, 5), "did you mean")
    add("backing-not-a-list", "backing: {x: 1}\n" + HEAD + "    sample_size: 1\n", (1, 10),
        "backing: expected a list of directories")
    for key, what in (("pacer", 'unknown pacer key "x"'), ("cache", 'unknown pacer key "cache.x"'),
                      ("trace", "unknown key (expected enabled, file, ops)")):
        add("unknown-in-" + key, key + ": {x: 1}\n" + HEAD + "    sample_size: 1\n", (1, 9), what)
    add("bad-rate", "pacer: {read: {bandwidth: 5 furlongs}}\n" + HEAD + "    sample_size: 1\n",
        (1, 16), "expected a rate")
    add("bad-latency", "pacer: {meta: {latency: lognormal(1ms)}}\n" + HEAD + "    sample_size: 1\n",
        (1, 16), "takes 2 arguments")
    add("no-profile", "pacer: {profile: nosuch}\n" + HEAD + "    sample_size: 1\n",
        (1, 18), "no storage profile 'nosuch'")
    for bad in ("../x", ".", "a/b", ".hidden", "'a b'"):
        add("bad-name-" + bad, "datasets:\n  - name: %s\n    format: raw\n    sample_size: 1\n" % bad,
            (2, 11), None)
    add("shape-empty", HEAD + "    shape: []\n", (4, 12), "dimensions")
    add("shape-9-dims", HEAD + "    shape: [1, 1, 1, 1, 1, 1, 1, 1, 1]\n", (4, 12), "dimensions")
    add("shape-zero-dim", HEAD + "    shape: [3, 0]\n", (4, 16), "at least 1")
    add("shape-and-size", HEAD + "    shape: [3]\n    sample_size: 3\n", (5, 18), "together with shape")
    add("min-over-max", HEAD + "    sample_size: {mean: 10MB, stdev: 1MB, min: 20MB, max: 5MB}\n",
        (4, 48), "greater than max")
    add("bad-format", "datasets:\n  - name: a\n    format: npzz\n    sample_size: 1\n", (3, 13),
        "did you mean")
    add("bad-dtype", HEAD + "    sample_size: 1\n    dtype: float128\n", (5, 12), "expected one of")
    add("undefined-alias", "datasets: *nope\n", (1, 11), None)
    add("alias-cycle", "datasets: &a [*a]\n", (1, 11), "expected a mapping")
    add("too-many-datasets", "datasets:\n" + "  - {name: d, format: raw, sample_size: 1}\n" * 5000,
        (2, 3), "too many")
    add("bad-seed", "seed: -1\n" + HEAD + "    sample_size: 1\n", (1, 7), "negative")
    add("bad-io", "io: fast\n" + HEAD + "    sample_size: 1\n", (1, 5), "expected one of")
    add("crlf-error", (HEAD + "    sample_size: abc\n").replace("\n", "\r\n"), (4, 18), "expected a size")
    add("empty-key", HEAD + "    sample_size: 1\n    : 3\n", None, None)
    add("complex-key", HEAD + "    sample_size: 1\n    ? [a]\n    : 3\n", (5, 7), "key name")
    add("merge-key", "base: &b {format: raw}\ndatasets:\n  - <<: *b\n    name: m\n    sample_size: 1\n",
        (1, 1), "unknown key")
    add("binary-tag", HEAD + "    sample_size: 1\n    files: !!binary AAAA\n", (5, 12), "expected a count")
    add("yaml-directive", "%YAML 2.0\n---\n" + HEAD, None, "YAML syntax error")
    add("commas", "[" + "," * 1000 + "]\n", None, None)
    add("missing-everything", "datasets:\n  - {}\n", (2, 5), "missing")
    # Formats II
    add("hdf5-on-npz", HEAD.replace("raw", "npz") + "    sample_size: 1\n    hdf5: {datasets: 2}\n",
        (5, 11), "only used by format hdf5")
    add("gzip-npz", HEAD.replace("raw", "npz") + "    sample_size: 1\n    compression: gzip\n",
        (5, 18), "npz, which takes zip")
    add("zip-tfrecord", HEAD.replace("raw", "tfrecord") + "    sample_size: 1\n    compression: zip\n",
        (5, 18), "zip is for format npz")
    add("gzip-hdf5-no-chunks", HEAD.replace("raw", "hdf5") + "    sample_size: 1\n"
        "    compression: gzip\n", (5, 18), "gzip needs hdf5.chunks")
    add("level-without-compression", HEAD + "    sample_size: 1\n    compression_level: 5\n",
        (5, 24), "only used with compression")
    add("level-10", HEAD.replace("raw", "npz") + "    sample_size: 1\n    compression: zip\n"
        "    compression_level: 10\n", (6, 24), "expected 1 to 9")
    add("chunks-rank", HEAD.replace("raw", "hdf5") + "    sample_size: 4KiB\n"
        "    hdf5: {chunks: [1, 64]}\n", (5, 20), "expected 3 dimensions")
    add("chunks-too-many", HEAD.replace("raw", "hdf5") + "    sample_size: 1GiB\n"
        "    hdf5: {chunks: [1, 1, 1]}\n", (5, 20), "chunks")
    add("plain-datasets", HEAD.replace("raw", "hdf5") + "    sample_size: 1\n"
        "    hdf5: {layout: plain, datasets: 3}\n", (5, 37), "layout plain")
    add("h5-layout", HEAD.replace("raw", "hdf5") + "    sample_size: 1\n    hdf5: {layout: x}\n",
        (5, 20), "expected one of dlio, plain")
    add("jpeg-no-dims", IMG, (2, 5), "needs width and height")
    add("jpeg-tiny", IMG + "    sample_size: 10\n", (4, 18), "below the smallest jpeg file")
    add("jpeg-huge-side", IMG + "    width: 100000\n", (4, 12), "JPEG's limit")
    add("jpeg-samples", IMG + "    width: 8\n    samples_per_file: 3\n", (5, 23), "one image per file")
    add("jpeg-dtype", IMG + "    width: 8\n    dtype: int16\n", (5, 12), "must be uint8")
    add("jpeg-shape", IMG + "    width: 8\n    shape: [8, 8]\n", (5, 12), "give width and height")
    add("png-width-dist", IMG.replace("jpeg", "png") + "    width: {mean: 9, stdev: 1, min: 10}\n",
        (4, 19), "outside [min, max]")
    add("color", IMG + "    width: 8\n    color: rgb\n", (5, 12), "did you mean")
    add("classes-subfolders", IMG + "    width: 8\n    files: 10\n    classes: 2\n"
        "    subfolders: 2\n", (7, 17), "cannot be combined with classes")
    add("classes-few-files", IMG + "    width: 8\n    files: 3\n    classes: 4\n", (6, 14),
        "4 classes but only 3 train files")
    add("width-on-raw", HEAD + "    sample_size: 1\n    width: 5\n", (5, 12), "only used by formats")
    # DLIO workloads
    dl = DLIO.splitlines(keepends=True)
    fmt_line = next(i for i, l in enumerate(dl) if l.startswith("  format:")) + 1
    for fmt in ("synthetic", "parquet"):
        add("dlio-" + fmt, DLIO.replace("format: npz", "format: " + fmt), (fmt_line, 11),
            "is not served by dliofs")
    add("dlio-no-dataset", "framework: pytorch\nworkflow: {train: true}\n", (1, 1),
        "nothing to serve")
    add("dlio-dataset-list", "framework: pytorch\ndataset: [1]\n", (2, 10), "expected a mapping")
    add("dlio-native-key", "dataset:\n  files: 3\n", (2, 3), "DLIO calls it num_files_train")
    add("dlio-data-folder", "dataset:\n  data_folder: /\n", (2, 16), "no last path component")
    add("dlio-negative-files", "dataset:\n  num_files_train: -1\n", (2, 20), "negative")
    add("dlio-bad-record", "dataset:\n  record_length_bytes: 1e99\n", (2, 24), "too large")
    add("dlio-bad-dtype", "dataset:\n  record_element_type: object\n", (2, 24), "not a dtype")
    add("dlio-dims-stdev", "dataset:\n  record_dims: [3, 3]\n  record_length_bytes_stdev: 1\n",
        (3, 30), "cannot be combined with record_dims")
    add("dlio-h5-split", "dataset:\n  format: hdf5\n  record_dims: [3, 3]\n"
        "  hdf5: {num_dset_per_record: 2}\n", (3, 16), "divisible")
    add("dlio-lzf", "dataset:\n  format: hdf5\n  compression: lzf\n", (3, 16), "lzf")
    add("dlio-seed", "dataset: {}\ntrain: {seed: x}\n", (2, 15), "train.seed")
    add("dlio-wrapped", "workload:\n  dataset:\n    format: parquet\n", (3, 13),
        "workload.dataset.format")
    add("dlio-dup", "dataset:\n  format: npz\n  format: npy\n", (3, 3), "duplicate key")
    add("dlio-alias-cycle", "dataset: &d\n  hdf5: *d\n  format: hdf5\n  chunk_size: *d\n"
        "  enable_chunking: true\n", (1, 10), "chunk_size")
    return c


def plausible_locs(path, data, stderr):
    """All (line, col) of `path:L:C:` in stderr; fail on implausible ones."""
    locs = [(int(l), int(c)) for l, c in
            re.findall(re.escape(path) + r":(\d+):(\d+): ", stderr)]
    max_line = (data.count(b"\n") + data.count(b"\r") + data.count(b"\x85")
                + data.count(b"\xe2\x80\xa8") + data.count(b"\xe2\x80\xa9") + 1)
    for line, col in locs:
        if not (1 <= line <= max_line and 1 <= col <= len(data) + 1):
            raise AssertionError("implausible location %d:%d (file has %d lines, %d bytes)"
                                 % (line, col, max_line, len(data)))
    return locs


class ConfigFuzz(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="dliofs-cfgfuzz-")
        cls.n = 0

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def setUp(self):
        dltest.require(os.access(dltest.DLIOFS, os.X_OK), "dliofs binary not built: " + dltest.DLIOFS)

    def check(self, name, data):
        """Run `dliofs check` on data; return (path, returncode, stderr)."""
        ConfigFuzz.n += 1
        path = os.path.join(self.dir, "c%04d.yaml" % ConfigFuzz.n)
        with open(path, "wb") as f:
            f.write(data)
        try:
            r = subprocess.run([dltest.DLIOFS, "check", path], capture_output=True,
                               timeout=CASE_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.fail("%s: dliofs check did not finish in %ds" % (name, CASE_TIMEOUT))
        err = r.stderr.decode("utf-8", "replace")
        self.assertGreaterEqual(r.returncode, 0, "%s: killed by signal %d\n%s"
                                % (name, -r.returncode, err[-2000:]))
        for m in CRASH_MARKERS:
            self.assertNotIn(m, err, "%s: %s in stderr\n%s" % (name, m, err[-2000:]))
        return path, r.returncode, err

    def expect_invalid(self, name, data, at=None, has=None):
        path, rc, err = self.check(name, data)
        self.assertEqual(rc, 2, "%s: exit %d, want 2\nstderr: %s" % (name, rc, err[-2000:]))
        locs = plausible_locs(path, data, err)
        self.assertTrue(locs, "%s: no %s:LINE:COL: in stderr:\n%s" % (name, path, err[-2000:]))
        if at is not None:
            self.assertIn(at, locs, "%s: no message at %d:%d\n%s" % (name, at[0], at[1], err[-2000:]))
        if has is not None:
            self.assertIn(has, err, "%s: %r not in stderr\n%s" % (name, has, err[-2000:]))

    def expect_valid(self, name, data):
        path, rc, err = self.check(name, data)
        self.assertEqual(rc, 0, "%s: exit %d, want 0\nstderr: %s" % (name, rc, err[-2000:]))
        self.assertEqual(err.strip(), "", "%s: stderr on a valid config: %s" % (name, err))

    def test_valid_configs_pass(self):
        self.expect_valid("base", b(VALID))
        for name, text in VALID_EXTRA.items():
            with self.subTest(name):
                self.expect_valid(name, b(text))

    def test_corpus(self):
        cases = corpus()
        self.assertGreaterEqual(len(cases), 40)
        for name, data, at, has in cases:
            with self.subTest(name):
                self.expect_invalid(name, data, at, has)

    def test_missing_file(self):
        path = os.path.join(self.dir, "does-not-exist.yaml")
        r = subprocess.run([dltest.DLIOFS, "check", path], capture_output=True, text=True,
                           timeout=CASE_TIMEOUT)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(path + ": cannot open: No such file or directory", r.stderr)

    def test_truncations(self):
        """Every prefix of VALID is refused, except those ending right after a
        dataset's last key (format), which are smaller valid configs."""
        text = b(VALID)
        ends = [m.end() for m in re.finditer(rb"    format: \w+", text)]
        valid_cut = set()
        for e in ends:
            k = e
            while k <= len(text):
                valid_cut.add(k)
                if k < len(text) and text[k:k + 1] in b" \n":
                    k += 1
                else:
                    break
        nvalid = 0
        for k in range(len(text) + 1):
            with self.subTest(cut=k):
                if k in valid_cut:
                    self.expect_valid("cut at %d" % k, text[:k])
                    nvalid += 1
                else:
                    self.expect_invalid("cut at %d: %r" % (k, text[max(0, k - 20):k]), text[:k])
        self.assertGreaterEqual(nvalid, 5)

    def test_dlio_workload(self):
        """A DLIO workload as shipped is valid and names its unused keys on one line."""
        path, rc, err = self.check("dlio", b(DLIO))
        self.assertEqual(rc, 0, err)
        self.assertEqual(err, path + ": ignored DLIO keys: model.name, model.type, framework, "
                         "workflow.generate_data, workflow.train, dataset.record_length_bytes_resize, "
                         "reader.data_loader, reader.batch_size, train.epochs, "
                         "train.computation_time, metric.au\n")

    def test_random_mutations(self):
        self.mutate(VALID, dlio=False)

    def test_random_mutations_dlio(self):
        self.mutate(DLIO, dlio=True)

    def mutate(self, base, dlio):
        """Seeded mutations: either still valid (exit 0, nothing on stderr but,
        for a DLIO workload, the one line of ignored keys) or refused with exit
        2 and a plausible location, never a crash or exit 1."""
        rnd = random.Random(SEED + dlio)
        text = b(base)
        lines = text.split(b"\n")
        values = [b"-1", b"0", b"1180591620717411303424", b"[]", b"{}", b"abc", b"1.5", b"~",
                  b"''", b"1024EiB", b"17592186044417", b"[0]", b"*x", b"&x", b"!!str", b"5M",
                  b"\xff", b"{a: [b, {c: d}]}", b"- x", b"18446744073709551615", b"1e9"]
        noise = b":-[]{},'\"#&*!|>%@`\t\n \x00\xff\xc3?"
        outcomes = {0: 0, 2: 0}
        for i in range(MUTATIONS):
            kind = rnd.randrange(7)
            if kind == 0:     # delete a byte range
                a = rnd.randrange(len(text))
                data = text[:a] + text[a + rnd.randrange(1, 40):]
            elif kind == 1:   # insert noise
                a = rnd.randrange(len(text) + 1)
                data = text[:a] + bytes(rnd.choice(noise) for _ in range(rnd.randrange(1, 6))) + text[a:]
            elif kind == 2:   # replace a value
                ls = list(lines)
                j = rnd.randrange(len(ls))
                if b": " in ls[j]:
                    ls[j] = ls[j].split(b": ", 1)[0] + b": " + rnd.choice(values)
                data = b"\n".join(ls)
            elif kind == 3:   # duplicate a line
                ls = list(lines)
                j = rnd.randrange(len(ls))
                ls.insert(j, ls[j])
                data = b"\n".join(ls)
            elif kind == 4:   # swap two lines
                ls = list(lines)
                j, k = rnd.randrange(len(ls)), rnd.randrange(len(ls))
                ls[j], ls[k] = ls[k], ls[j]
                data = b"\n".join(ls)
            elif kind == 5:   # re-indent a line
                ls = list(lines)
                j = rnd.randrange(len(ls))
                ls[j] = b" " * rnd.randrange(0, 9) + ls[j].lstrip(b" ")
                data = b"\n".join(ls)
            else:             # flip bytes
                ba = bytearray(text)
                for _ in range(rnd.randrange(1, 4)):
                    ba[rnd.randrange(len(ba))] = rnd.randrange(256)
                data = bytes(ba)
            with self.subTest(mutation=i, kind=kind):
                path, rc, err = self.check("mutation %d" % i, data)
                self.assertIn(rc, (0, 2), "mutation %d: exit %d\n%r\n%s" % (i, rc, data, err[-2000:]))
                outcomes[rc] += 1
                if rc == 2:
                    locs = plausible_locs(path, data, err)
                    self.assertTrue(locs, "mutation %d: no location in:\n%s\n%r" % (i, err, data))
                else:
                    said = err.splitlines()
                    ok = not said or (dlio and len(said) == 1 and
                                      said[0].startswith(path + ": ignored DLIO keys: "))
                    self.assertTrue(ok, "mutation %d: stderr but exit 0: %s" % (i, err))
        # Most mutations break the config; a fuzzer that never does tests nothing.
        self.assertGreater(outcomes[2], MUTATIONS // 3, outcomes)


if __name__ == "__main__":
    dltest.main()
