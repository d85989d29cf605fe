"""dlio-stall and dlio-whatif against an S3 endpoint's control socket
(`dliofs s3 serve --control SOCKET`) in place of a mountpoint: a PyTorch
training script reading npz through s3torchconnector, unmodified, under
`dlio-stall run --mount SOCKET` (its data-wait share and the bytes the
endpoint served) and under a 2-point `dlio-whatif sweep
read.bandwidth=...` (the faster storage runs clearly faster)."""
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))  # tests/: dltest
import dltest  # noqa: E402

STALL = os.environ.get("DLIO_STALL", os.path.join(dltest.BUILD, "dlio-stall"))
WHATIF = os.environ.get("DLIO_WHATIF", os.path.join(dltest.BUILD, "dlio-whatif"))
ACCESS, SECRET = "AKIDSTALL", "stall-secret-key"
# 24 training objects of ~50 KB: 1.2 MB an epoch, ~5 s at the model's
# 250 KB/s (a burst of 64 KB: no second of it free), while the 12 steps of
# the job compute in ~3 s together on a loaded 2-core machine (~230 ms a
# step, whatever the sample size: at 30 MB/s and 500 KB objects the job is
# compute-bound here, and the share says so): the job waits on its data.
DATASETS = """
datasets:
  - name: npzset
    format: npz
    files: 24
    eval_files: 4
    samples_per_file: 2
    sample_size: 25000
"""

# The training script: tests/jobs/train_s3_npz.py (also run by the other S3 test).
TRAIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "jobs",
                     "train_s3_npz.py")


def venv_has(*mods):
    if not os.path.exists(dltest.VENV_PY):
        return False
    return subprocess.run([dltest.VENV_PY, "-c", "import " + ", ".join(mods)],
                          capture_output=True).returncode == 0


class S3Stall(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="dliofs-s3stall-")
        gen_cfg = dltest.write_config(cls.tmp, "seed: 21\n" + DATASETS, "gen.yaml")
        gen = dltest.gen(gen_cfg, os.path.join(cls.tmp, "gen"))
        train = os.path.join(gen, "npzset", "train")
        cls.names = sorted(os.listdir(train))
        cls.train_bytes = sum(os.path.getsize(os.path.join(train, n)) for n in cls.names)
        cls.cfg = dltest.write_config(
            cls.tmp, "seed: 21\ns3: {access_key: %s, secret_key: %s}\n"
            "pacer: {read: {bandwidth: 250KB/s, burst: 64KB}}\n%s" % (ACCESS, SECRET, DATASETS), "s3.yaml")
        cls.sock = os.path.join(cls.tmp, "ctl.sock")
        cls.proc = subprocess.Popen([dltest.DLIOFS, "s3", "serve", cls.cfg, "--listen",
                                     "127.0.0.1:0", "--control", cls.sock],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        m = re.search(r"http://127\.0\.0\.1:(\d+)$", cls.proc.stdout.readline().strip())
        if not m:
            cls.proc.kill()
            raise AssertionError("dliofs s3 serve did not start: %s" % cls.proc.stderr.read())
        cls.endpoint = "http://127.0.0.1:%s" % m.group(1)
        cls.script = TRAIN
        cls.env = dict(os.environ, AWS_ACCESS_KEY_ID=ACCESS, AWS_SECRET_ACCESS_KEY=SECRET,
                       AWS_REGION="us-east-1", AWS_ENDPOINT_URL=cls.endpoint)

    @classmethod
    def tearDownClass(cls):
        cls.proc.send_signal(signal.SIGTERM)
        try:
            rc = cls.proc.wait(timeout=20)
        finally:
            if cls.proc.poll() is None:
                cls.proc.kill()
                cls.proc.wait()
        err = cls.proc.stderr.read()
        cls.proc.stdout.close()
        cls.proc.stderr.close()
        subprocess.run(["rm", "-rf", cls.tmp])
        assert rc == 0 and "runtime error" not in err and "Sanitizer" not in err, \
            "dliofs s3 serve exited %d on SIGTERM: %s" % (rc, err)

    def setUp(self):
        dltest.require(venv_has("torch", "s3torchconnector"),
                       "torch or s3torchconnector not importable by %s" % dltest.VENV_PY)
        # Every run starts from the model the config gives.
        r = subprocess.run([dltest.DLIOFS, "set", self.sock, "read.bandwidth=250KB/s"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)

    def job(self, tag):
        return [dltest.VENV_PY, self.script, self.endpoint, os.path.join(self.tmp, tag + ".txt")]

    def check_seen(self, tag):
        with open(os.path.join(self.tmp, tag + ".txt")) as f:
            seen = dict(line.split() for line in f.read().split("\n") if line)
        self.assertEqual(int(seen.pop("steps")), 2 * ((len(self.names) + 3) // 4))
        self.assertEqual(sorted(k.split("/")[-1] for k in seen), self.names)

    def test_stall_run_on_the_endpoint(self):
        js = os.path.join(self.tmp, "stall.json")
        r = subprocess.run([STALL, "run", "--mount", self.sock, "--interval", "100",
                            "--cold", "--json", js, "--"] + self.job("stall"),
                           env=self.env, capture_output=True, text=True, timeout=600)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr[-4000:])
        self.assertNotIn("stats.json missing", r.stderr)
        self.check_seen("stall")
        with open(js) as f:
            rep = json.load(f)
        run = rep["runs"][0]
        s, io = run["summary"], run["io"]
        self.assertEqual(s["steps"], 2 * ((len(self.names) + 3) // 4))
        # ~10 s of storage against ~3 s of compute: mostly waiting.
        self.assertGreater(s["wait_share"], 0.5, r.stdout)
        self.assertTrue(io["have_stats"])
        # The endpoint served every training object once an epoch (the
        # emulated cache is off), and nothing much beside.
        self.assertGreaterEqual(io["read_bytes"], 2 * self.train_bytes)
        self.assertLess(io["read_bytes"], 3 * self.train_bytes)
        self.assertGreater(io["read_ops"], 0)
        self.assertEqual(io["pacer_read"], "bandwidth 250kB/s")
        self.assertIn("storage reads", r.stdout)

    def test_whatif_sweep_on_the_endpoint(self):
        js = os.path.join(self.tmp, "sweep.json")
        r = subprocess.run([WHATIF, "sweep", self.cfg, "--mount", self.sock, "--set",
                            "read.bandwidth=250KB/s,50MB/s", "--json", js, "-q", "--"]
                           + self.job("sweep"),
                           env=self.env, capture_output=True, text=True, timeout=600)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr[-4000:])
        self.check_seen("sweep")
        with open(js) as f:
            doc = json.load(f)
        self.assertEqual(doc["keys"], ["read.bandwidth"])
        pts = doc["points"]
        self.assertEqual([p["values"] for p in pts], [[25e4], [50e6]])
        for p in pts:
            self.assertTrue(all(x["ok"] for x in p["runs"]), p["runs"])
        slow, fast = (p["stats"]["run_s"]["mean"] for p in pts)
        # 2.4 MB at 250 KB/s is ~10 s of storage alone; at 50 MB/s 0.05 s.
        self.assertGreater(slow, 0.9 * 2 * self.train_bytes / 25e4)
        # The job's own start (~8 s of imports on a loaded machine) is in
        # both: the difference is the storage's (~6 s measured).
        self.assertLess(fast, slow - 3, (slow, fast))
        waits = [p["stats"]["wait_share"]["mean"] for p in pts]
        self.assertGreater(waits[0], 0.7, waits)
        self.assertLess(waits[1], waits[0], waits)


if __name__ == "__main__":
    unittest.main()
