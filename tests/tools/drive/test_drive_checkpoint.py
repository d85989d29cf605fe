"""dlio-drive --checkpoint-workload: a DLIO workload file's checkpoint section
run on its own, sized as DLIO 2.0.0 sizes it (base_checkpointing.py), written
and read back, with GB/s and duration per rank and overall.

- The files and their sizes are DLIO's: model-E-S-R.pt (model_size bytes),
  optimizer-E-S-R.pt (each optimization group twice plus their sum),
  layer-L-E-S-R.pt for L < num_layers + tensor_parallelism (when above 1),
  sum(layer_parameters) each, written by ranks R % pipeline_parallelism == 0;
  rank_zero: rank 0 alone, all_ranks: every rank (2 MPI ranks when
  dlio-drive has MPI and Open MPI's mpirun is there).
- The report's figures agree with the files: bytes per rank and overall, the
  bytes read back equal to those written, the job's time its slowest rank's.
- Through a sink (nothing kept on disk) with a storage model, the write and
  read-back rates are the model's (generous bounds: a loaded machine is only
  ever slower).
- A workload without a checkpoint section, or a bad value in it, is refused
  with the file and the key."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import sys  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))  # tests/: dltest
import dltest  # noqa: E402
from test_dlio_drive import DRIVE, drive_has_mpi

LLM = """model: llm_small
framework: pytorch
workflow:
  generate_data: False
  train: False
  checkpoint: True
checkpoint:
  checkpoint_folder: checkpoints/llm
  model_size: %(model)d
  type: %(type)s
  optimization_groups: [1000000, 2000000, 5000]
  num_layers: 4
  layer_parameters: [600000, 200000]
  tensor_parallelism: 2
  pipeline_parallelism: 2
"""


def expected(rank, ranks_writing, model, k=1):
    """{name: bytes} rank writes for checkpoint k (epoch 1, step k)."""
    if rank not in ranks_writing:
        return {}
    out = {"model-1-%d-%d.pt" % (k, rank): model,
           "optimizer-1-%d-%d.pt" % (k, rank): 3 * (1000000 + 2000000 + 5000)}
    if rank % 2 == 0:  # pipeline_parallelism 2
        for layer in range(4 + 2):  # num_layers + tensor_parallelism
            out["layer-%d-1-%d-%d.pt" % (layer, k, rank)] = 600000 + 200000
    return out


class CheckpointWorkload(unittest.TestCase):
    def setUp(self):
        dltest.require(os.access(DRIVE, os.X_OK), "no dlio-drive binary at " + DRIVE)
        self.tmp = tempfile.mkdtemp(prefix="dlio-drive-ckpt-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def workload(self, typ="all_ranks", model=3000000, name="llm.yaml"):
        return dltest.write_config(self.tmp, LLM % {"model": model, "type": typ}, name=name)

    def run_drive(self, wl, out, ranks=1, extra=()):
        cmd = [DRIVE, "--config", wl, "--checkpoint-workload", out, "--json", "-", "-q"]
        cmd += list(extra)
        env = None
        if ranks > 1:
            mpirun = dltest.mpirun()
            dltest.require(mpirun and drive_has_mpi(), "no Open MPI mpirun or MPI in dlio-drive")
            env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                       OMPI_MCA_rmaps_base_oversubscribe="1")
            pre = [mpirun, "--oversubscribe", "-np", str(ranks)]
            if os.geteuid() == 0:
                pre.append("--allow-run-as-root")
            cmd = pre + cmd
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return json.loads(r.stdout)

    def check(self, j, out, ranks, writing, model, n=1):
        want = {}
        for k in range(1, n + 1):
            for q in range(ranks):
                want.update(expected(q, writing, model, k))
        have = {f: os.path.getsize(os.path.join(out, f)) for f in os.listdir(out)}
        self.assertEqual(have, want)
        self.assertEqual(j["ranks"], ranks)
        self.assertEqual(j["checkpoints"], n)
        self.assertEqual([p["rank"] for p in j["per_rank"]], list(range(ranks)))
        for p in j["per_rank"]:
            mine = {f: b for f, b in want.items() if f.endswith("-%d.pt" % p["rank"])}
            self.assertEqual(p["files"], len(mine))
            self.assertEqual(p["bytes"], sum(mine.values()))
            self.assertEqual(p["read_bytes"], p["bytes"])
        o = j["overall"]
        self.assertEqual(o["bytes"], sum(want.values()))
        self.assertEqual(o["files"], len(want))
        self.assertEqual(o["read_bytes"], o["bytes"])
        self.assertEqual(o["write_s"], max(p["write_s"] for p in j["per_rank"]))
        self.assertAlmostEqual(o["write_gb_per_s"], o["bytes"] / o["write_s"] / 1e9, places=4)
        self.assertAlmostEqual(o["read_gb_per_s"], o["bytes"] / o["read_s"] / 1e9, places=4)

    def test_sizes_one_rank(self):
        out = os.path.join(self.tmp, "ck")
        j = self.run_drive(self.workload(), out, extra=("--checkpoints", "2"))
        self.check(j, out, 1, {0}, 3000000, n=2)

    def test_sizes_two_ranks_all_ranks(self):
        out = os.path.join(self.tmp, "ck")
        j = self.run_drive(self.workload(), out, ranks=2)
        # Rank 1 is not a pipeline stage's first: no layer files.
        self.check(j, out, 2, {0, 1}, 3000000)

    def test_sizes_two_ranks_rank_zero(self):
        out = os.path.join(self.tmp, "ck")
        j = self.run_drive(self.workload("rank_zero"), out, ranks=2)
        self.check(j, out, 2, {0}, 3000000)
        self.assertEqual(j["per_rank"][1]["bytes"], 0)

    def test_through_a_sink_at_the_models_rates(self):
        dltest.require(dltest.fuse_available(), "/dev/fuse or fusermount3 not available")
        cfg = dltest.write_config(self.tmp, (
            "backing:\n  - {at: ckpt, sink: true}\n"
            "pacer:\n  write: {bandwidth: 100MB/s}\n  read: {bandwidth: 200MB/s}\n"),
            name="sink.yaml")
        mnt = os.path.join(self.tmp, "mnt")
        os.mkdir(mnt)
        with dltest.mounted(cfg, mountpoint=mnt):
            out = os.path.join(mnt, "ckpt", "llm")
            j = self.run_drive(self.workload(model=30000000), out)
            self.check(j, out, 1, {0}, 30000000)
            with open(os.path.join(mnt, ".dliofs", "stats.json")) as f:
                sink = json.load(f)["backing"]["ckpt"]
        o = j["overall"]
        self.assertEqual(sink["discarded_bytes"], o["bytes"])
        self.assertEqual(sink["read_back_bytes"], o["bytes"])
        w, r = o["write_gb_per_s"] * 1e3, o["read_gb_per_s"] * 1e3
        self.assertTrue(75 <= w <= 110, "write %.1f MB/s for 100MB/s" % w)
        self.assertTrue(150 <= r <= 220, "read %.1f MB/s for 200MB/s" % r)

    def test_refusals(self):
        out = os.path.join(self.tmp, "ck")
        none = dltest.write_config(self.tmp, "model: x\nworkflow: {checkpoint: True}\n",
                                   name="none.yaml")
        r = subprocess.run([DRIVE, "--config", none, "--checkpoint-workload", out],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn(none + ": no checkpoint section", r.stderr)
        bad = self.workload("everyone", name="bad.yaml")
        r = subprocess.run([DRIVE, "--config", bad, "--checkpoint-workload", out],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn(bad + ":10:9: checkpoint.type: expected rank_zero or all_ranks", r.stderr)
        odd = dltest.write_config(self.tmp, (LLM % {"model": 1, "type": "all_ranks"}).replace(
            "num_layers: 4", "num_layers: 3"), name="odd.yaml")
        r = subprocess.run([DRIVE, "--config", odd, "--checkpoint-workload", out],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn("checkpoint.num_layers (3) must be a multiple of tensor_parallelism (2)",
                      r.stderr)


TRAIN = """model: tiny
framework: pytorch
workflow: {generate_data: False, train: True, checkpoint: True}
dataset: {data_folder: data/tiny/, format: npz, num_files_train: 4, num_samples_per_file: 1,
          record_length: 4096}
reader: {data_loader: pytorch, batch_size: 2, read_threads: 1}
train: {epochs: 2, computation_time: 0.001}
checkpoint:
  checkpoint_folder: checkpoints/tiny
  checkpoint_after_epoch: 1
  epochs_between_checkpoints: 1
%s
"""


class TrainingCheckpoints(unittest.TestCase):
    """A DLIO workload file's training checkpoints are DLIO 2.0.0's: the model
    of checkpoint.model_size bytes (DLIO 2.0.0's key, utils/config.py), the
    layer files of its defaults or the file's layer_parameters, by rank 0."""

    def setUp(self):
        dltest.require(os.access(DRIVE, os.X_OK), "no dlio-drive binary at " + DRIVE)
        self.tmp = tempfile.mkdtemp(prefix="dlio-drive-trainck-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def train(self, extra_ck, args=()):
        wl = dltest.write_config(self.tmp, TRAIN % extra_ck, name="tiny.yaml")
        root = os.path.join(self.tmp, "data")
        if not os.path.isdir(root):
            dltest.gen(wl, root)
        ck = os.path.join(self.tmp, "ck")
        shutil.rmtree(ck, True)
        os.mkdir(ck)
        out = os.path.join(self.tmp, "r.json")
        r = subprocess.run([DRIVE, "--config", wl, root, "--checkpoint-dir", ck, "--quiet",
                            "--json", out] + list(args), capture_output=True, text=True,
                           timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            j = json.load(f)
        return j, {f: os.path.getsize(os.path.join(ck, f)) for f in os.listdir(ck)}

    def test_model_size_and_layers(self):
        j, have = self.train("  model_size: 200000\n  layer_parameters: [1000, 2000]")
        self.assertEqual(j["config"]["checkpoint_model_bytes"], 200000)
        steps = [k["step"] for k in j["checkpoints"]]
        self.assertEqual([k["epoch"] for k in j["checkpoints"]], [1, 2])
        want = {}
        for e, s in zip((1, 2), steps):
            want["model-%d-%d-0.pt" % (e, s)] = 200000
            want["layer-0-%d-%d-0.pt" % (e, s)] = 3000
        self.assertEqual(have, want)
        self.assertEqual([k["bytes"] for k in j["checkpoints"]], [203000, 203000])

    def test_dlio_defaults(self):
        """No model_size: DLIO's 10,240 bytes, and its default layer file
        (layer_parameters [17371, 24740228], one layer)."""
        j, have = self.train("  epochs_between_checkpoints: 2", ("--epochs", "1"))
        self.assertEqual(j["config"]["checkpoint_model_bytes"], 10240)
        s = j["checkpoints"][0]["step"]
        self.assertEqual(have, {"model-1-%d-0.pt" % s: 10240,
                                "layer-0-1-%d-0.pt" % s: 17371 + 24740228})

    def test_command_line_wins(self):
        j, have = self.train("  model_size: 200000\n  layer_parameters: [1000]",
                             ("--checkpoint-size", "5000", "--epochs", "1"))
        self.assertEqual(sorted(have.values()), [1000, 5000])

    def test_shipped_unet3d(self):
        """DLIO's own unet3d_a100.yaml: 499,153,191 model bytes (only the
        size is checked: its first checkpoint is after epoch 5)."""
        shipped = os.path.join(os.path.dirname(dltest.VENV_PY), "..", "lib")
        found = [os.path.join(d, "unet3d_a100.yaml") for d, _, fs in os.walk(shipped)
                 if "unet3d_a100.yaml" in fs and d.endswith(os.path.join("configs", "workload"))]
        dltest.require(found, "DLIO's shipped workloads not in the venv")
        with open(found[0]) as f:
            text = f.read()
        self.assertIn("model_size: 499153191", text)
        for a, b in (("num_files_train: 168", "num_files_train: 14"),
                     ("record_length: 146600628", "record_length: 4096"),
                     ("record_length_stdev: 68341808", "record_length_stdev: 0")):
            self.assertIn(a, text)
            text = text.replace(a, b)
        wl = dltest.write_config(self.tmp, text, name="unet3d_a100.yaml")
        root = dltest.gen(wl, os.path.join(self.tmp, "u"))
        ck = os.path.join(self.tmp, "ck")
        os.mkdir(ck)
        out = os.path.join(self.tmp, "u.json")
        r = subprocess.run([DRIVE, "--config", wl, root, "--checkpoint-dir", ck, "--quiet",
                            "--json", out, "--epochs", "1", "--computation-time", "1ms"],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            self.assertEqual(json.load(f)["config"]["checkpoint_model_bytes"], 499153191)
        self.assertEqual(os.listdir(ck), [], "no checkpoint before epoch 5")


if __name__ == "__main__":
    dltest.main()
