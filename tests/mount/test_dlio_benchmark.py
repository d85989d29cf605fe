"""The DLIO benchmark itself (dlio-benchmark 2.0.0 from PyPI, installed in the
TensorFlow venv by scripts/install-deps.sh) trains on a dliofs mount with no
data generation (workflow.generate_data False).

Each test writes a scaled-down DLIO workload (unet3d-like npz, resnet-like
tfrecord, cosmoflow-like hdf5; framework and data loader tensorflow, and
unet3d with framework and data loader pytorch as MLPerf Storage runs it, torch
from the venv), mounts a dliofs config that lays out exactly DLIO's files
(the DLIO workload file itself, or a native config with the same counts and
d x d samples), runs `dlio_benchmark --config-dir=D workload=NAME
++hydra.run.dir=OUT` and requires that:
- DLIO exits 0 and logs, for every epoch, exactly the steps of a full pass
  (files x samples_per_file / batch / ranks), each step a full batch;
- its summary.json carries the metrics of every epoch (AU, samples/s, MB/s);
- the daemon served at least every byte of every file, less a page per file
  (npz's y.npy, hdf5's labels are never read): /proc/PID/io wchar counts the
  bytes the daemon wrote to /dev/fuse, so DLIO really read every sample
  through the mount and did not, say, stop at a listing.

DLIO runs with DFTRACER_ENABLE=0: 2.0.0 needs pydftracer importable but the
tracer, on by default, is not what is measured here."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import sys  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/: dltest
import dltest  # noqa: E402

VENV_BIN = os.path.dirname(dltest.VENV_PY)
DLIO = os.environ.get("DLIO_BENCHMARK", os.path.join(VENV_BIN, "dlio_benchmark"))
MPIRUN = os.path.join(VENV_BIN, "mpirun")
DLIO_VERSION = "2.0.0"
RUN_TIMEOUT = 300
PAGE = 4096


def dlio_available():
    """'' when DLIO and TensorFlow run from the venv, else why not."""
    if not os.access(DLIO, os.X_OK):
        return "%s not found (scripts/install-deps.sh installs it)" % DLIO
    r = subprocess.run([dltest.VENV_PY, "-c",
                        "import importlib.metadata as m, tensorflow, hydra, mpi4py.MPI, dftracer\n"
                        "print(m.version('dlio-benchmark'))"],
                       capture_output=True, text=True, env=dict(os.environ, DFTRACER_ENABLE="0"))
    if r.returncode != 0:
        return "DLIO's dependencies do not import in the venv: " + r.stderr.strip()[-400:]
    if r.stdout.strip() != DLIO_VERSION:
        return "dlio-benchmark %s in the venv, the tests expect %s" % (r.stdout.strip(), DLIO_VERSION)
    return ""


def torch_missing():
    """'' when torch imports in the venv (DLIO's framework: pytorch), else why not."""
    r = subprocess.run([dltest.VENV_PY, "-c", "import torch.utils.data"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return "torch does not import in the venv (scripts/install-deps.sh installs it): " + \
            r.stderr.strip()[-300:]
    return ""


def dlio_names(n, nsub, prefix, ext):
    """DLIO 2.0.0's file names (data_generator.py): index padded to len(str(n)),
    subfolder i mod nsub padded to len(str(nsub)), only when nsub > 1."""
    out = []
    for i in range(n):
        base = "%s_%s_of_%d.%s" % (prefix, str(i).zfill(len(str(n))), n, ext)
        if nsub > 1:
            base = os.path.join(str(i % nsub).zfill(len(str(nsub))), base)
        out.append(base)
    return out


def yaml_block(d, indent=0):
    """A small YAML emitter for the workload (scalars and nested mappings)."""
    lines = []
    for k, v in d.items():
        if isinstance(v, dict):
            lines.append("%s%s:" % (" " * indent, k))
            lines.append(yaml_block(v, indent + 2))
        else:
            if isinstance(v, bool):
                v = "True" if v else "False"
            lines.append("%s%s: %s" % (" " * indent, k, v))
    return "\n".join(lines)


def served_bytes(pid):
    """Bytes the daemon has written so far (its replies on /dev/fuse)."""
    with open("/proc/%d/io" % pid) as f:
        for line in f:
            if line.startswith("wchar:"):
                return int(line.split()[1])
    raise AssertionError("no wchar in /proc/%d/io" % pid)


class DlioOnMount(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.why_not = dlio_available()

    def setUp(self):
        dltest.require(dltest.fuse_available(), "/dev/fuse or fusermount3 not available")
        dltest.require(not self.why_not, self.why_not)
        self.tmp = tempfile.mkdtemp(prefix="dliofs-dlio-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.mnt = os.path.join(self.tmp, "mnt")
        os.mkdir(self.mnt)
        self.confdir = os.path.join(self.tmp, "conf")
        os.makedirs(os.path.join(self.confdir, "workload"))

    # --- pieces -----------------------------------------------------------

    def workload(self, name, dataset, reader, train, framework="tensorflow"):
        """Write <confdir>/workload/<name>.yaml: train only, data under the mount."""
        doc = {
            "model": name,
            "framework": framework,
            "workflow": {"generate_data": False, "train": True, "checkpoint": False},
            "dataset": dict({"data_folder": os.path.join(self.mnt, name)}, **dataset),
            "reader": reader,
            "train": train,
            "checkpoint": {"checkpoint_folder": os.path.join(self.tmp, "ckpt")},
        }
        path = os.path.join(self.confdir, "workload", name + ".yaml")
        with open(path, "w") as f:
            f.write(yaml_block(doc) + "\n")
        return path

    def run_dlio(self, name, ranks=1):
        out = os.path.join(self.tmp, "out-" + name)
        cmd = [DLIO, "--config-dir=" + self.confdir, "workload=" + name,
               "++hydra.run.dir=" + out]
        if ranks > 1:
            cmd = [MPIRUN, "-np", str(ranks)] + cmd
        env = dict(os.environ, DFTRACER_ENABLE="0", TF_CPP_MIN_LOG_LEVEL="3")
        try:
            r = subprocess.run(cmd, cwd=self.tmp, env=env, capture_output=True, text=True,
                               timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired as e:
            raise AssertionError("DLIO ran past %d s: %s\n%s" % (
                RUN_TIMEOUT, " ".join(cmd), (e.stdout or b"")[-4000:]))
        log = r.stdout + r.stderr
        self.assertEqual(r.returncode, 0, "DLIO failed: %s\n%s" % (" ".join(cmd), log[-6000:]))
        return out, log

    def check_listing(self, name, names):
        """The train/ tree is exactly DLIO's names; returns their sizes."""
        files, _ = dltest.tree(os.path.join(self.mnt, name, "train"))
        self.assertEqual(sorted(files), sorted(names))
        return files

    def check_metrics(self, out, log, files, spf, batch, epochs, ranks=1):
        """DLIO trained every epoch fully and reported its metrics."""
        steps = files * spf // batch // ranks
        self.assertGreater(steps, 1, "workload too small for DLIO's '- 2' in throughput")
        ended = {int(e): int(s) for e, s in
                 re.findall(r"Ending epoch (\d+) - (\d+) steps completed", log)}
        self.assertEqual(ended, {e: steps for e in range(1, epochs + 1)},
                         "steps per epoch (expected %d):\n%s" % (steps, log[-4000:]))
        # Rank 0 logs each step with its sample count: epochs x steps full batches.
        done = [int(n) for n in re.findall(r"Rank 0 step \d+ processed (\d+) samples", log)]
        self.assertEqual(done, [batch] * (steps * epochs))
        self.assertIn("[METRIC] Training Accelerator Utilization [AU] (%)", log)
        self.assertIn("[METRIC] Training Throughput (samples/second)", log)

        with open(os.path.join(out, "summary.json")) as f:
            summary = json.load(f)
        self.assertEqual(summary["num_accelerators"], ranks)
        self.assertEqual(summary["num_files_train"], files)
        self.assertEqual(summary["num_samples_per_file"], spf)
        self.assertEqual(summary["epochs"], epochs)
        m = summary["metric"]
        self.assertEqual(len(m["train_au_percentage"]), epochs)
        for au in m["train_au_percentage"]:
            self.assertTrue(0 < au <= 100, m)
        self.assertEqual(len(m["train_throughput_samples_per_second"]), epochs)
        for t in m["train_throughput_samples_per_second"]:
            self.assertGreater(t, 0, m)
        self.assertGreater(m["train_throughput_mean_samples_per_second"], 0)
        self.assertGreater(m["train_io_mean_MB_per_second"], 0)
        self.assertIn(m["train_au_meet_expectation"], ("success", "fail"))
        with open(os.path.join(out, "per_epoch_stats.json")) as f:
            per_epoch = json.load(f)
        self.assertEqual(sorted(per_epoch), [str(e) for e in range(1, epochs + 1)])

    def train_on_mount(self, config, name, names, spf, batch, epochs, ranks=1):
        """Mount CONFIG at self.mnt, check the listing, run DLIO, check its
        report and that the daemon served every file's bytes."""
        log = os.path.join(self.tmp, "daemon.log")
        with dltest.mounted(config, ("--log", log), mountpoint=self.mnt):
            sizes = self.check_listing(name, names)
            pid = dltest.daemon_pid(self.mnt)
            before = served_bytes(pid)
            out, text = self.run_dlio(name, ranks)
            served = served_bytes(pid) - before
        dltest.check_daemon_log(log)
        self.check_metrics(out, text, len(names), spf, batch, epochs, ranks)
        least = sum(sizes.values()) - PAGE * len(sizes)
        self.assertGreaterEqual(served, least, "daemon served %d bytes, the files hold %d" % (
            served, sum(sizes.values())))
        return sizes, out, text

    # --- workloads ----------------------------------------------------------

    def test_npz_unet3d_like_workload_file(self):
        """unet3d's shape scaled down (one variable-size sample per file, subfolders,
        seeded shuffles), mounted from the DLIO workload file itself."""
        name, files, nsub = "unet3d_s", 12, 3
        cfg = self.workload(name, {
            "format": "npz", "num_files_train": files, "num_samples_per_file": 1,
            "num_subfolders_train": nsub,
            "record_length": 262144, "record_length_stdev": 65536, "record_length_resize": 65536,
        }, {"data_loader": "tensorflow", "batch_size": 2, "read_threads": 2,
            "file_shuffle": "seed", "sample_shuffle": "seed"},
            {"epochs": 2, "computation_time": 0.002})
        sizes, _, _ = self.train_on_mount(cfg, name, dlio_names(files, nsub, "img", "npz"),
                                          spf=1, batch=2, epochs=2)
        self.assertGreater(len(set(sizes.values())), 1, "stdev should vary the file sizes")

    def pytorch_unet3d(self, name, ranks):
        """unet3d as MLPerf Storage runs it: framework and data loader pytorch
        (torch's DataLoader with 2 worker processes per rank, DLIO's
        NPZReader in each), scaled down, 2 epochs, mounted from the workload
        file. The mount's trace shows who read: torch's worker processes
        (at least 2 per rank), where tf.data reads from threads of the one
        process of each rank."""
        dltest.require(not torch_missing(), torch_missing())
        files, nsub = 16, 2
        cfg = self.workload(name, {
            "format": "npz", "num_files_train": files, "num_samples_per_file": 1,
            "num_subfolders_train": nsub,
            "record_length": 131072, "record_length_stdev": 32768, "record_length_resize": 65536,
        }, {"data_loader": "pytorch", "batch_size": 2, "read_threads": 2,
            "file_shuffle": "seed", "sample_shuffle": "seed"},
            {"epochs": 2, "computation_time": 0.002}, framework="pytorch")
        trace = os.path.join(self.tmp, "job.trace")
        with open(cfg, "a") as f:
            f.write("trace:\n  file: %s\n  ops: [read]\n" % trace)
        self.train_on_mount(cfg, name, dlio_names(files, nsub, "img", "npz"),
                            spf=1, batch=2, epochs=2, ranks=ranks)
        r = subprocess.run([os.path.join(dltest.BUILD, "dlio-trace"), "export", "--csv", trace],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = r.stdout.splitlines()
        cols = rows[0].split(",")
        pid, fname = cols.index("pid"), cols.index("file")
        readers = {int(x.split(",")[pid]) for x in rows[1:] if ".npz" in x.split(",")[fname]}
        self.assertGreaterEqual(len(readers), 2 * ranks,
                                "npz read by processes %s: not torch's workers" % sorted(readers))

    def test_npz_unet3d_pytorch(self):
        self.pytorch_unet3d("unet3d_pt", ranks=1)

    def test_npz_unet3d_pytorch_two_ranks(self):
        dltest.require(os.access(MPIRUN, os.X_OK), MPIRUN + " not found")
        self.pytorch_unet3d("unet3d_pt2", ranks=2)

    def test_npz_native_config_multi_sample(self):
        """A native dliofs config with DLIO's counts: 4 samples per file, d x d
        uint8 with d = int(sqrt(record_length)), samples on the last axis."""
        name, files, spf, rec = "npz_multi", 8, 4, 40000
        d = int(rec ** 0.5)
        self.workload(name, {
            "format": "npz", "num_files_train": files, "num_samples_per_file": spf,
            "record_length": rec,
        }, {"data_loader": "tensorflow", "batch_size": 4, "read_threads": 1},
            {"epochs": 2, "computation_time": 0.001})
        cfg = dltest.write_config(self.tmp, (
            "seed: 5\n"
            "datasets:\n"
            "  - name: %s\n"
            "    format: npz\n"
            "    files: %d\n"
            "    samples_per_file: %d\n"
            "    shape: [%d, %d]\n") % (name, files, spf, d, d), name="native.yaml")
        self.train_on_mount(cfg, name, dlio_names(files, 0, "img", "npz"),
                            spf=spf, batch=4, epochs=2)
        # DLIO slices x[..., k]: check that the axis it slices is the sample axis.
        with dltest.mounted(cfg, mountpoint=self.mnt):
            r = subprocess.run([dltest.VENV_PY, "-c",
                                "import numpy as np, sys; print(np.load(sys.argv[1])['x'].shape)",
                                os.path.join(self.mnt, name, "train", "img_0_of_8.npz")],
                               capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), str((d, d, spf)))

    def test_tfrecord_resnet_like_workload_file(self):
        """resnet50's shape scaled down: many records per file, tf.data's
        TFRecordDataset with parallel reads (it checks every record's CRCs)."""
        name, files, spf = "resnet_s", 8, 32
        cfg = self.workload(name, {
            "format": "tfrecord", "num_files_train": files, "num_samples_per_file": spf,
            "record_length": 16384, "record_length_resize": 4096,
        }, {"data_loader": "tensorflow", "batch_size": 16, "read_threads": 2,
            "computation_threads": 2, "transfer_size": 65536},
            {"epochs": 2, "computation_time": 0.001})
        self.train_on_mount(cfg, name, dlio_names(files, 0, "img", "tfrecord"),
                            spf=spf, batch=16, epochs=2)

    def test_tfrecord_two_ranks(self):
        """Two MPI ranks (the venv's mpirun): DLIO shards the files by rank."""
        name, files, spf = "resnet_2r", 8, 16
        dltest.require(os.access(MPIRUN, os.X_OK), MPIRUN + " not found")
        cfg = self.workload(name, {
            "format": "tfrecord", "num_files_train": files, "num_samples_per_file": spf,
            "record_length": 8192,
        }, {"data_loader": "tensorflow", "batch_size": 8, "read_threads": 1},
            {"epochs": 1, "computation_time": 0.001})
        self.train_on_mount(cfg, name, dlio_names(files, 0, "img", "tfrecord"),
                            spf=spf, batch=8, epochs=1, ranks=2)

    def test_hdf5_cosmoflow_like(self):
        """cosmoflow's hdf5 variant scaled down: DLIO 2.0.0 opens each file with
        h5py and reads f['records'][k] per sample (DLIO's main branch reads
        records_0..k-1; dliofs serves records_0 under both names)."""
        name, files, spf, rec = "cosmo_s", 8, 8, 65536
        cfg = self.workload(name, {
            "format": "hdf5", "num_files_train": files, "num_samples_per_file": spf,
            "record_length": rec,
        }, {"data_loader": "tensorflow", "batch_size": 4, "read_threads": 1},
            {"epochs": 2, "computation_time": 0.001})
        names = dlio_names(files, 0, "img", "hdf5")
        with dltest.mounted(cfg, mountpoint=self.mnt):
            r = subprocess.run([dltest.VENV_PY, "-c",
                                "import h5py, sys; print(' '.join(sorted(h5py.File(sys.argv[1], 'r'))))",
                                os.path.join(self.mnt, name, "train", names[0])],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            # DLIO 2.0.0 reads 'records', DLIO main 'records_0': both are served.
            self.assertIn("records", r.stdout.split())
            self.assertIn("records_0", r.stdout.split())
        self.train_on_mount(cfg, name, names, spf=spf, batch=4, epochs=2)

if __name__ == "__main__":
    dltest.main()
