"""DLIO's csv files written by dlio-gen, read with pandas (the venv's, the
library DLIO's CSVGenerator and CSVReader use):
- pd.read_csv(path) finds a header of the columns 0..N-1 and one row per
  sample, the first column the row index 0..samples-1;
- every row repeats the file's one record (DLIO writes [record] * samples),
  N = the file's sample size, values in 0..254 (DLIO's randint(255));
- DataFrame(rows).to_csv() writes the file again byte for byte (the layout
  is pandas' own, not one that merely parses);
- the mount serves the same bytes as dlio-gen's files (when FUSE is there)."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import sys  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))  # tests/: dltest
import dltest  # noqa: E402

CONFIG = """
seed: 17
datasets:
  - name: csvd
    format: csv
    files: 3
    eval_files: 1
    samples_per_file: 12
    sample_size: {mean: 900, stdev: 400, min: 1, max: 2000}
  - name: csvbig
    format: csv
    files: 1
    samples_per_file: 1001
    sample_size: 300
"""

# Run in the venv: prints one JSON line per file checked.
PANDAS_CHECK = r"""
import io, json, sys
import numpy as np, pandas as pd
for path in sys.argv[1:]:
    raw = open(path, "rb").read()
    df = pd.read_csv(path)
    a = df.to_numpy()
    n = a.shape[1] - 1
    assert list(df.columns[1:]) == [str(k) for k in range(n)], (path, list(df.columns[:4]))
    assert (a[:, 0] == np.arange(a.shape[0])).all(), path
    rec = a[0, 1:]
    assert (a[:, 1:] == rec).all(), "rows differ: " + path
    assert rec.min() >= 0 and rec.max() <= 254, path
    # DLIO's own writer on what was read: the same bytes.
    out = io.StringIO()
    pd.DataFrame([rec.astype(np.uint8).tolist()] * a.shape[0]).to_csv(out)
    assert out.getvalue().encode() == raw, "to_csv differs: " + path
    print(json.dumps({"path": path, "rows": int(a.shape[0]), "n": int(n),
                      "distinct": int(len(np.unique(rec)))}))
"""


class CsvWithPandas(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        r = subprocess.run([dltest.VENV_PY, "-c", "import pandas"], capture_output=True,
                           text=True)
        cls.why_not = "" if r.returncode == 0 else (
            "pandas does not import in the venv (scripts/install-deps.sh installs it): " +
            r.stderr.strip()[-200:])

    def setUp(self):
        dltest.require(not self.why_not, self.why_not)
        self.tmp = tempfile.mkdtemp(prefix="dliofs-csv-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.cfg = dltest.write_config(self.tmp, CONFIG)
        self.out = dltest.gen(self.cfg, os.path.join(self.tmp, "gen"))

    def pandas_check(self, paths):
        r = subprocess.run([dltest.VENV_PY, "-c", PANDAS_CHECK] + paths, capture_output=True,
                           text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        return [json.loads(x) for x in r.stdout.splitlines()]

    def test_pandas_reads_and_rewrites(self):
        paths = [os.path.join(self.out, p) for p in dltest.walk_files(self.out)]
        self.assertEqual(len(paths), 5)
        rep = {os.path.relpath(x["path"], self.out): x for x in self.pandas_check(paths)}
        self.assertEqual(len(rep), 5)
        sizes = set()
        for name, x in rep.items():
            self.assertEqual(x["rows"], 1001 if name.startswith("csvbig/") else 12, name)
            sizes.add(x["n"])
        # Sizes drawn from the distribution; 300 values cover all of 0..254
        # only as blocks of permutations do (uniform draws would miss some).
        self.assertGreater(len(sizes), 2, rep)
        self.assertEqual(rep["csvbig/train/img_0_of_1.csv"]["n"], 300)
        self.assertEqual(rep["csvbig/train/img_0_of_1.csv"]["distinct"], 255)

    def test_mount_serves_the_same_bytes(self):
        dltest.require(dltest.fuse_available(), "/dev/fuse or fusermount3 not available")
        mnt = os.path.join(self.tmp, "mnt")
        os.mkdir(mnt)
        with dltest.mounted(self.cfg, mountpoint=mnt):
            names = dltest.walk_files(mnt)
            self.assertEqual(names, dltest.walk_files(self.out))
            for n in names:
                self.assertEqual(dltest.sha256_file(os.path.join(mnt, n)),
                                 dltest.sha256_file(os.path.join(self.out, n)), n)


if __name__ == "__main__":
    dltest.main()
