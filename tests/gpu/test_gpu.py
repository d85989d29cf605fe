#!/usr/bin/env python3
"""The CUDA parts on a real GPU (meson suite `gpu`, never run by CI: CI has
no GPU, and a test that cannot run fails there). Run it on a machine with an
NVIDIA GPU and its driver:

    meson test -C build --suite gpu --print-errorlogs
    # or, with binaries built elsewhere (scripts/gpu-check.sh does this):
    DLIOFS=... DLIO_DRIVE=... DLIO_STALL=... DLIO_CUPTI_LIB=... python3 tests/gpu/test_gpu.py

What it shows:
- `dlio-drive --accelerator cuda` on a mounted dataset: the driver API loads,
  a real device is named, one kernel per step runs for the computation time
  (CUDA events), the host-to-device copies carry the batch's bytes, and the
  GPU's idle share follows the storage: large on a slow mount, small on a
  fast one (the same job, only `read.bandwidth` differs);
- `dlio-stall run` of an unmodified PyTorch CUDA training loop over the
  mount with the CUPTI injection library: kernel and memcpy activity is
  recorded, and on a slow mount most of the GPU's idle time lies inside the
  job's data waits.
Each figure is printed, so the log of a run is its record.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/: dltest
import dltest  # noqa: E402

BUILD = dltest.BUILD
DRIVE = os.environ.get("DLIO_DRIVE", os.path.join(BUILD, "dlio-drive"))
STALL = os.environ.get("DLIO_STALL", os.path.join(BUILD, "dlio-stall"))
CUPTI = os.environ.get("DLIO_CUPTI_LIB", os.path.join(BUILD, "libdlio_cupti.so"))
JOB = os.path.join(dltest.SRC, "tests", "jobs", "train_torch_npz.py")
# The Python that has torch with CUDA (on the GPU image: python3 on PATH).
GPU_PY = os.environ.get("DLIOFS_GPU_PY") or shutil.which("python3") or sys.executable
# A folder to keep the JSON reports in (scripts/gpu-check.sh brings them back).
KEEP = os.environ.get("DLIOFS_GPU_KEEP")


def keep(path):
    if KEEP:
        shutil.copy(path, os.path.join(KEEP, os.path.basename(path)))

DATA = """\
datasets:
  - name: npz
    format: npz
    files: 64
    samples_per_file: 1
    sample_size: 1MiB
pacer:
  read: {bandwidth: %s}
cache: {policy: none}
"""


def gpu_present():
    return os.path.exists("/dev/nvidia0") or os.path.exists("/dev/nvidiactl")


def torch_cuda():
    r = subprocess.run([GPU_PY, "-c", "import torch; print(torch.cuda.is_available())"],
                       capture_output=True, text=True, timeout=300)
    return r.returncode == 0 and r.stdout.strip() == "True"


class GpuCase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # This suite exists to run on a GPU: no GPU is a failure, not a skip.
        if not gpu_present():
            raise AssertionError("no NVIDIA GPU on this machine (/dev/nvidia0): "
                                 "the gpu suite only runs where there is one")
        cls.tmp = tempfile.mkdtemp(prefix="dliofs-gpu-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, True)

    def config(self, bandwidth, name):
        return dltest.write_config(self.tmp, DATA % bandwidth, name)


class DriveCuda(GpuCase):
    def run_drive(self, cfg, mnt, tag, comp="20ms"):
        out = os.path.join(self.tmp, "drive-" + tag + ".json")
        r = subprocess.run([DRIVE, "--config", cfg, mnt, "--dataset", "npz", "--batch-size", "4", "--epochs", "1",
                            "--read-threads", "2", "--accelerator", "cuda",
                            "--computation-time", comp, "--json", out],
                           capture_output=True, text=True, timeout=300)
        print(r.stdout, r.stderr, sep="\n", flush=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        keep(out)
        with open(out) as f:
            return json.load(f)

    def test_drive_on_a_gpu(self):
        runs = {}
        for bw, tag in (("8GB/s", "fast"), ("40MB/s", "slow")):
            cfg = self.config(bw, tag + ".yaml")
            with dltest.mounted(cfg) as mnt:
                runs[tag] = self.run_drive(cfg, mnt, tag)
        for tag, j in runs.items():
            dev = (j.get("cuda") or {}).get("device", "")
            self.assertTrue(dev and "stand-in" not in dev, j.get("cuda"))
            e = j["epochs"][0]
            g = e["gpu"]
            print("GPU %s, %s mount: steps %d, kernels %d, kernel %.3f s, idle %.3f s, "
                  "GPU stall share %.3f, H2D %d bytes, AU %.3f, wall %.3f s" % (
                      dev, tag, e["steps"], g["kernels"], g["kernel_s"], g["idle_s"],
                      g["gpu_stall_share"], g["h2d_bytes"], e["au"], e["wall_s"]), flush=True)
            self.assertEqual(g["kernels"], e["steps"])
            # The kernel spins on %globaltimer for the computation time: the
            # GPU's own clock must show it, and not much more.
            self.assertGreaterEqual(g["kernel_s"], 0.95 * 0.020 * e["steps"])
            self.assertLess(g["kernel_s"], 0.020 * e["steps"] * 1.5 + 0.05)
            # Each step copies its batch: 4 samples of about 1 MiB.
            per_step = g["h2d_bytes"] / e["steps"]
            self.assertTrue(4 * (1 << 20) <= per_step <= 4 * ((1 << 20) + 4096), per_step)
            self.assertAlmostEqual(g["gpu_stall_share"],
                                   g["idle_s"] / (g["idle_s"] + g["kernel_s"]), places=6)
        # 4 MiB per 20 ms step needs 210 MB/s: at 40 MB/s the GPU mostly
        # waits, at 8 GB/s it mostly computes.
        self.assertGreater(runs["slow"]["epochs"][0]["gpu"]["gpu_stall_share"], 0.6)
        self.assertLess(runs["fast"]["epochs"][0]["gpu"]["gpu_stall_share"], 0.35)
        self.assertGreater(runs["fast"]["epochs"][0]["au"], runs["slow"]["epochs"][0]["au"] + 0.3)


class StallCupti(GpuCase):
    def test_torch_cuda_job_under_dlio_stall(self):
        self.assertTrue(torch_cuda(), "%s has no torch with CUDA" % GPU_PY)
        with dltest.mounted(self.config("30MB/s", "stall.yaml")) as mnt:
            out = os.path.join(self.tmp, "stall.json")
            r = subprocess.run([STALL, "run", "--mount", mnt, "--cupti", CUPTI, "--json", out,
                                "--", GPU_PY, JOB, os.path.join(mnt, "npz"), "--batch", "4",
                                "--workers", "2", "--epochs", "1", "--device", "cuda"],
                               capture_output=True, text=True, timeout=600)
            print(r.stdout, r.stderr, sep="\n", flush=True)
            self.assertEqual(r.returncode, 0, r.stderr)
        keep(out)
        with open(out) as f:
            rep = json.load(f)
        self.assertTrue(rep["gpu_present"])
        run = rep["runs"][0]
        g = run["gpu"]
        print("CUPTI: status %s, kernels %d, memcpys %d, memsets %d, dropped %d; window %.3f s, "
              "busy %.3f s, idle %.3f s, idle in data waits %.3f s (%.0f%% of idle), gaps %d; "
              "data-wait share %.3f" % (
                  g["status"], g["kernels"], g["memcpys"], g["memsets"], g["dropped"],
                  g["window_s"], g["busy_s"], g["idle_s"], g["idle_input_s"],
                  100 * g["input_share_of_idle"], g["gaps"],
                  run["summary"]["wait_share"]), flush=True)
        self.assertEqual(g["status"], "ok", g)
        self.assertFalse(g["failures"], g)
        self.assertGreater(g["kernels"], 0)
        self.assertGreater(g["memcpys"], 0)
        self.assertGreater(g["busy_s"], 0)
        # 64 MiB at 30 MB/s against a tiny model: the job is data-bound, the
        # GPU idles, and most of that idleness is inside the data waits.
        self.assertGreater(run["summary"]["wait_share"], 0.5)
        self.assertGreater(g["idle_share"], 0.5)
        self.assertGreater(g["input_share_of_idle"], 0.6)


if __name__ == "__main__":
    dltest.main()
