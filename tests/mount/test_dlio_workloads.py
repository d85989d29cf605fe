"""Every workload file the installed dlio-benchmark package ships, as it is:
the files are found in the package (dlio_benchmark/configs/workload/*.yaml),
so a new DLIO release is checked the day it is installed.

For each workload with a dataset section:
- `dliofs check WORKLOAD` exits 0 and names the dataset, its format and total;
- the workload mounts as it is, and the mount lists exactly DLIO's file names
  (data_generator.py's: <prefix>_<i>_of_<N>.<format>, subfolders i mod n,
  and indexed formats' .off.idx / .sz.idx);
- DLIO's own reader class for the format (tests/dlio_read_files.py, in the
  venv) reads the first, a middle and the last train file and the first
  valid file through the mount, and what numpy sees of them agrees with the
  workload; the daemon served bytes for it.

A workload with no dataset (a checkpoint-only one: workflow.train false,
workflow.checkpoint true) has nothing to mount: `dliofs check` must say so
clearly.

DLIO_WORKLOADS=a.yaml,b.yaml runs only those (by hand; CI runs them all)."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import sys  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/: dltest
import dltest  # noqa: E402
from test_dlio_benchmark import dlio_available, dlio_names, served_bytes

HERE = os.path.dirname(os.path.abspath(__file__))
READER = os.path.join(HERE, "..", "dlio_read_files.py")
# DLIO's companions of the indexed formats (indexed_binary_generator.py).
INDEX_SUFFIXES = (".off.idx", ".sz.idx")


def package_workloads():
    """(dir, [yaml files]) of the installed package, or (None, why)."""
    r = subprocess.run([dltest.VENV_PY, "-c",
                        "import os, dlio_benchmark as d\n"
                        "print(os.path.join(os.path.dirname(d.__file__), 'configs', 'workload'))"],
                       capture_output=True, text=True, env=dict(os.environ, DFTRACER_ENABLE="0"))
    if r.returncode != 0:
        return None, "dlio_benchmark does not import: " + r.stderr[-300:]
    d = r.stdout.strip()
    files = sorted(f for f in os.listdir(d) if f.endswith(".yaml"))
    # DLIO_WORKLOADS=a.yaml,b.yaml: only those (to look at one by hand).
    only = [w for w in os.environ.get("DLIO_WORKLOADS", "").split(",") if w]
    return d, [f for f in files if not only or f in only]


def load_yaml(path):
    """The workload as DLIO reads it (PyYAML in the venv: the tests' Python
    may have none)."""
    r = subprocess.run([dltest.VENV_PY, "-c",
                        "import json, sys, yaml\n"
                        "d = yaml.safe_load(open(sys.argv[1]))\n"
                        "print(json.dumps(d.get('workload', d)))", path],
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def expected_names(ds, split):
    """DLIO 2.0.0's names for one split of the dataset section."""
    fmt = ds.get("format", "tfrecord")
    n = int(ds.get("num_files_train" if split == "train" else "num_files_eval",
                   8 if split == "train" else 0))
    nsub = int(ds.get("num_subfolders_train" if split == "train" else "num_subfolders_eval", 0))
    names = dlio_names(n, nsub, ds.get("file_prefix", "img"), fmt)
    if fmt in ("indexed_binary", "mmap_indexed_binary"):
        names += [p + s for p in names for s in INDEX_SUFFIXES]
    return names


def pick(names):
    """The first, a middle and the last data file (no index companions)."""
    data = [n for n in names if not n.endswith(INDEX_SUFFIXES)]
    return sorted({data[0], data[len(data) // 2], data[-1]}, key=data.index) if data else []


class ShippedWorkloads(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.why_not = dlio_available()
        cls.dir, cls.files = (None, []) if cls.why_not else package_workloads()
        if cls.dir is None and not cls.why_not:
            cls.why_not = cls.files

    def setUp(self):
        dltest.require(dltest.fuse_available(), "/dev/fuse or fusermount3 not available")
        dltest.require(not self.why_not, self.why_not)
        self.tmp = tempfile.mkdtemp(prefix="dliofs-wl-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def test_package_has_workloads(self):
        # DLIO 2.0.0 ships 14; a release with none would make the rest vacuous.
        if not os.environ.get("DLIO_WORKLOADS"):
            self.assertGreaterEqual(len(self.files), 10, self.files)

    def test_every_workload(self):
        for name in self.files:
            with self.subTest(workload=name):
                path = os.path.join(self.dir, name)
                wl = load_yaml(path)
                if "dataset" in wl:
                    self.data_workload(path, wl)
                else:
                    self.checkpoint_workload(path, wl)

    def test_checkpoint_only_workload(self):
        """The branch above for a release that ships one (this one, written
        as MLPerf Storage's checkpointing workloads are)."""
        path = os.path.join(self.tmp, "llama_ckpt.yaml")
        with open(path, "w") as f:
            f.write("model:\n  name: llama_7b\n  model_size: 1024\nframework: pytorch\n"
                    "workflow:\n  generate_data: False\n  train: False\n  checkpoint: True\n"
                    "checkpoint:\n  checkpoint_folder: checkpoints/llama\n")
        self.checkpoint_workload(path, load_yaml(path))

    def data_workload(self, path, wl):
        ds = wl["dataset"]
        folder = ds.get("data_folder", "./data/").rstrip("/")
        dname = os.path.basename(folder) or "data"
        r = subprocess.run([dltest.DLIOFS, "check", path], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("  %s: %s," % (dname, ds.get("format", "tfrecord")), r.stdout)
        self.assertIn("total: ", r.stdout)
        mnt = os.path.join(self.tmp, "mnt")
        os.makedirs(mnt, exist_ok=True)
        with dltest.mounted(path, mountpoint=mnt):
            root = os.path.join(mnt, dname)
            chosen = []
            for split in ("train", "valid"):
                want = expected_names(ds, split)
                have = dltest.walk_files(os.path.join(root, split))
                self.assertEqual(sorted(have), sorted(want), split)
                picked = pick(want)
                chosen += [os.path.join(root, split, p)
                           for p in (picked if split == "train" else picked[:1])]
            pid = dltest.daemon_pid(mnt)
            before = served_bytes(pid)
            r = subprocess.run([dltest.VENV_PY, READER, path, root] + chosen,
                               capture_output=True, text=True, timeout=600,
                               env=dict(os.environ, DFTRACER_ENABLE="0",
                                        TF_CPP_MIN_LOG_LEVEL="3"))
            served = served_bytes(pid) - before
        self.assertEqual(r.returncode, 0, "DLIO's reader on %s:\n%s" % (
            path, (r.stdout + r.stderr)[-3000:]))
        rep = json.loads(r.stdout.strip().splitlines()[-1])
        self.assertEqual(rep["files"], len(chosen))
        self.assertGreater(rep["samples"], 0)
        self.assertGreater(served, 0, "the daemon served nothing")

    def checkpoint_workload(self, path, wl):
        """No dataset (DLIO 2.0.0 ships none such; later releases add
        checkpoint-only workloads): nothing to mount, and `dliofs check`
        must say so, naming the file, not fail in some other way."""
        flow = wl.get("workflow", {})
        self.assertTrue(flow.get("checkpoint") and not flow.get("train", True),
                        "%s has no dataset and is not a checkpoint-only workload" % path)
        r = subprocess.run([dltest.DLIOFS, "check", path], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn(path + ":1:1: dataset: missing", r.stderr)
        self.assertIn("checkpoint-only", r.stderr)

if __name__ == "__main__":
    dltest.main()
