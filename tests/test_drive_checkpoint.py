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

import dltest
from test_dlio_drive import DRIVE, drive_has_mpi, mpirun_path

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
            mpirun = mpirun_path()
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


if __name__ == "__main__":
    dltest.main()
