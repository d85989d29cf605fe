"""Real S3 clients, unmodified, against `dliofs s3 serve`: the minio Python
SDK, s3torchconnector (its map and iterable datasets and its checkpoint
writer), s3dlio, s3fs-fuse (Debian's s3fs) and a PyTorch training script
reading npz through s3torchconnector. Every object read is compared with
dlio-gen's file of the same config, every write with the backing
directory's file.

The clients live in the project's venv (scripts/install-deps.sh) and s3fs
comes from Debian: this file runs itself in the venv when the system python
lacks them; a missing client is a skip outside CI and a failure in CI.

DLIO's own S3 storage type is not here: dlio-benchmark 2.0.0 (the release
installed) names it (storage_type: s3) but its readers open local paths and
its namespace calls go to TensorFlow's gfile, which has no s3:// without
tensorflow-io: it cannot reach an endpoint (README, S3 endpoint)."""
import hashlib
import importlib.util
import io
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))  # tests/: dltest
import dltest  # noqa: E402

CLIENTS = ("minio", "s3torchconnector", "s3dlio", "boto3")
if any(importlib.util.find_spec(m) is None for m in CLIENTS) and \
        os.path.exists(dltest.VENV_PY) and not os.environ.get("DLIOFS_S3_REEXEC") and \
        subprocess.run([dltest.VENV_PY, "-c", "import " + ", ".join(CLIENTS)],
                       capture_output=True).returncode == 0:
    os.environ["DLIOFS_S3_REEXEC"] = "1"
    os.execv(dltest.VENV_PY, [dltest.VENV_PY] + sys.argv)

from test_s3 import start_server, stop_server, gen_keys  # noqa: E402

ACCESS, SECRET = "AKIDCLIENTS", "clients-secret-key"
REGION = "us-east-1"
DATASETS = """
datasets:
  - name: npzset
    format: npz
    files: 24
    eval_files: 4
    samples_per_file: 2
    sample_size: 4000
  - name: imgset
    format: jpeg
    files: 12
    classes: 3
    width: 32
    height: 24
    color: RGB
"""

# The training script: tests/jobs/train_s3_npz.py (also run by the other S3 test).
TRAIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "jobs",
                     "train_s3_npz.py")


def have(mod):
    return importlib.util.find_spec(mod) is not None


class S3ClientsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="dliofs-s3c-")
        cls.back = os.path.join(cls.tmp, "back")
        os.makedirs(cls.back)
        gen_cfg = dltest.write_config(cls.tmp, "seed: 21\n" + DATASETS, "gen.yaml")
        cls.gen = dltest.gen(gen_cfg, os.path.join(cls.tmp, "gen"))
        cfg = dltest.write_config(cls.tmp, "seed: 21\ns3: {access_key: %s, secret_key: %s}\n%s"
                                  "backing:\n  - {path: %s, at: ckpt, writable: true}\n"
                                  % (ACCESS, SECRET, DATASETS, cls.back), "s3.yaml")
        cls.proc, cls.port = start_server(cfg)
        cls.endpoint = "http://127.0.0.1:%d" % cls.port
        cls.env = dict(os.environ, AWS_ACCESS_KEY_ID=ACCESS, AWS_SECRET_ACCESS_KEY=SECRET,
                       AWS_REGION=REGION, AWS_ENDPOINT_URL=cls.endpoint)
        os.environ.update(AWS_ACCESS_KEY_ID=ACCESS, AWS_SECRET_ACCESS_KEY=SECRET,
                          AWS_REGION=REGION)

    @classmethod
    def tearDownClass(cls):
        rc, err = stop_server(cls.proc)
        subprocess.run(["rm", "-rf", cls.tmp])
        assert rc == 0 and "runtime error" not in err and "Sanitizer" not in err, \
            "dliofs s3 serve exited %d on SIGTERM: %s" % (rc, err)

    def gen_bytes(self, bucket, key):
        with open(os.path.join(self.gen, bucket, key), "rb") as f:
            return f.read()

    def back_bytes(self, key):
        with open(os.path.join(self.back, key), "rb") as f:
            return f.read()

    def test_minio(self):
        dltest.require(have("minio"), "minio not installed in %s" % dltest.VENV_PY)
        from minio import Minio
        from minio.deleteobjects import DeleteObject
        m = Minio("127.0.0.1:%d" % self.port, access_key=ACCESS, secret_key=SECRET,
                  secure=False, region=REGION)
        self.assertEqual([b.name for b in m.list_buckets()], ["npzset", "imgset", "ckpt"])
        self.assertTrue(m.bucket_exists("imgset"))
        self.assertFalse(m.bucket_exists("nothere"))
        for bucket in ("npzset", "imgset"):
            keys = [o.object_name for o in m.list_objects(bucket, recursive=True)]
            self.assertEqual(keys, gen_keys(os.path.join(self.gen, bucket)))
            for k in keys[::5]:
                self.assertEqual(m.get_object(bucket, k).read(), self.gen_bytes(bucket, k))
        top = [o.object_name for o in m.list_objects("imgset", prefix="train/")]
        self.assertEqual(top, ["train/n%08d/" % i for i in range(3)])
        k = gen_keys(os.path.join(self.gen, "npzset"))[0]
        self.assertEqual(m.get_object("npzset", k, offset=100, length=50).read(),
                         self.gen_bytes("npzset", k)[100:150])
        # Writes: minio signs the payload's SHA-256 over HTTP (checked), and
        # sends a multipart upload for a large object.
        small, big = os.urandom(3000), os.urandom(12 << 20)
        m.put_object("ckpt", "minio/small.bin", io.BytesIO(small), len(small))
        m.put_object("ckpt", "minio/big.bin", io.BytesIO(big), len(big), part_size=5 << 20)
        self.assertEqual(self.back_bytes("minio/small.bin"), small)
        self.assertEqual(self.back_bytes("minio/big.bin"), big)
        self.assertEqual(m.stat_object("ckpt", "minio/big.bin").size, len(big))
        self.assertEqual(m.stat_object("ckpt", "minio/small.bin").etag,
                         hashlib.md5(small).hexdigest())
        path = os.path.join(self.tmp, "fget.bin")
        m.fget_object("ckpt", "minio/big.bin", path)
        with open(path, "rb") as f:
            self.assertEqual(f.read(), big)
        m.remove_object("ckpt", "minio/small.bin")
        errs = list(m.remove_objects("ckpt", [DeleteObject("minio/big.bin")]))
        self.assertEqual(errs, [])
        self.assertEqual(list(m.list_objects("ckpt", prefix="minio/", recursive=True)), [])

    def test_s3torchconnector(self):
        dltest.require(have("s3torchconnector"), "s3torchconnector not installed in %s"
                       % dltest.VENV_PY)
        import torch
        from s3torchconnector import (S3MapDataset, S3IterableDataset, S3Checkpoint,
                                      S3ClientConfig)
        cfg = S3ClientConfig(force_path_style=True)
        want = gen_keys(os.path.join(self.gen, "imgset"))
        ds = S3MapDataset.from_prefix("s3://imgset/", region=REGION, endpoint=self.endpoint,
                                      s3client_config=cfg)
        self.assertEqual(len(ds), len(want))
        for i in range(len(ds)):
            self.assertEqual(ds[i].key, want[i])
            self.assertEqual(ds[i].read(), self.gen_bytes("imgset", want[i]))
        it = S3IterableDataset.from_prefix("s3://npzset/valid/", region=REGION,
                                           endpoint=self.endpoint, s3client_config=cfg)
        got = {o.key: o.read() for o in it}
        self.assertEqual(sorted(got), [k for k in gen_keys(os.path.join(self.gen, "npzset"))
                                       if k.startswith("valid/")])
        for k, v in got.items():
            self.assertEqual(v, self.gen_bytes("npzset", k))
        # The checkpoint writer (a multipart upload past its part size) and reader.
        ck = S3Checkpoint(region=REGION, endpoint=self.endpoint, s3client_config=cfg)
        state = {"w": torch.arange(4_000_000, dtype=torch.float32), "step": 7}
        with ck.writer("s3://ckpt/run/epoch1.ckpt") as w:
            torch.save(state, w)
        with ck.reader("s3://ckpt/run/epoch1.ckpt") as r:
            back = torch.load(r)
        self.assertTrue(torch.equal(back["w"], state["w"]))
        self.assertEqual(back["step"], 7)
        self.assertEqual(torch.load(os.path.join(self.back, "run", "epoch1.ckpt"))["step"], 7)

    def test_s3dlio(self):
        dltest.require(have("s3dlio"), "s3dlio not installed in %s" % dltest.VENV_PY)
        code = r'''
import os, sys, hashlib, s3dlio
keys = s3dlio.list("s3://npzset/train/")
print("LIST", " ".join(k.split("/", 3)[3] for k in keys))
for k in keys[:3]:
    print("GET", k.split("/", 3)[3], hashlib.sha256(bytes(s3dlio.get(k))).hexdigest())
data = bytes(range(256)) * 4000
s3dlio.put_bytes("s3://ckpt/s3dlio/obj.bin", data)
print("STAT", s3dlio.stat("s3://ckpt/s3dlio/obj.bin")["size"])
print("BACK", hashlib.sha256(bytes(s3dlio.get("s3://ckpt/s3dlio/obj.bin"))).hexdigest())
s3dlio.delete("s3://ckpt/s3dlio/obj.bin")
print("AFTER", len(s3dlio.list("s3://ckpt/s3dlio/")))
'''
        # s3dlio reads its endpoint from the environment once, at import: its own process.
        r = subprocess.run([sys.executable, "-c", code], env=self.env, capture_output=True,
                           text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = dict(line.split(" ", 1) for line in r.stdout.splitlines())
        want = [k for k in gen_keys(os.path.join(self.gen, "npzset")) if k.startswith("train/")]
        self.assertEqual(lines["LIST"].split(), want)
        for line in r.stdout.splitlines():
            if line.startswith("GET "):
                _, k, h = line.split()
                self.assertEqual(h, hashlib.sha256(self.gen_bytes("npzset", k)).hexdigest())
        data = bytes(range(256)) * 4000
        self.assertEqual(int(lines["STAT"]), len(data))
        self.assertEqual(lines["BACK"], hashlib.sha256(data).hexdigest())
        self.assertEqual(lines["AFTER"], "0")
        self.assertFalse(os.path.exists(os.path.join(self.back, "s3dlio")))

    def s3fs_mount(self, bucket, mnt, ro=False):
        pw = os.path.join(self.tmp, "passwd")
        with open(pw, "w") as f:
            f.write("%s:%s\n" % (ACCESS, SECRET))
        os.chmod(pw, 0o600)
        os.makedirs(mnt, exist_ok=True)
        cmd = ["s3fs", bucket, mnt, "-o", "url=" + self.endpoint, "-o", "use_path_request_style",
               "-o", "passwd_file=" + pw, "-o", "endpoint=" + REGION, "-o", "stat_cache_expire=1"]
        if ro:
            cmd += ["-o", "ro"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(dltest.wait_for(lambda: dltest.is_mounted(mnt), timeout=20))

    def s3fs_umount(self, mnt):
        if dltest.is_mounted(mnt):
            if subprocess.run(["fusermount", "-u", mnt], capture_output=True).returncode:
                subprocess.run(["umount", "-l", mnt], capture_output=True)

    def test_s3fs(self):
        dltest.require(shutil.which("s3fs") is not None and os.path.exists("/dev/fuse"),
                       "s3fs (Debian package s3fs) or /dev/fuse missing")
        mnt = os.path.join(self.tmp, "mnt-ro")
        self.s3fs_mount("imgset", mnt, ro=True)
        try:
            got = sorted(os.path.relpath(os.path.join(d, f), mnt)
                         for d, _, files in os.walk(mnt) for f in files)
            self.assertEqual(got, sorted(gen_keys(os.path.join(self.gen, "imgset"))))
            for k in got:
                with open(os.path.join(mnt, k), "rb") as f:
                    self.assertEqual(f.read(), self.gen_bytes("imgset", k))
        finally:
            self.s3fs_umount(mnt)
        mnt = os.path.join(self.tmp, "mnt-rw")
        self.s3fs_mount("ckpt", mnt)
        try:
            data = os.urandom(300000)
            os.makedirs(os.path.join(mnt, "fs", "sub"))
            with open(os.path.join(mnt, "fs", "sub", "f.bin"), "wb") as f:
                f.write(data)
            with open(os.path.join(mnt, "fs", "note.txt"), "w") as f:
                f.write("hello s3fs\n")
            self.assertEqual(self.back_bytes("fs/sub/f.bin"), data)
            self.assertEqual(self.back_bytes("fs/note.txt"), b"hello s3fs\n")
            self.assertEqual(sorted(os.listdir(os.path.join(mnt, "fs"))), ["note.txt", "sub"])
            # A rename is CopyObject and DeleteObject to s3fs; touch a copy onto itself.
            os.rename(os.path.join(mnt, "fs", "note.txt"), os.path.join(mnt, "fs", "renamed.txt"))
            os.utime(os.path.join(mnt, "fs", "renamed.txt"))
            self.assertEqual(self.back_bytes("fs/renamed.txt"), b"hello s3fs\n")
            self.assertFalse(os.path.exists(os.path.join(self.back, "fs", "note.txt")))
            os.rename(os.path.join(mnt, "fs", "renamed.txt"), os.path.join(mnt, "fs", "note.txt"))
            with open(os.path.join(mnt, "fs", "sub", "f.bin"), "rb") as f:
                self.assertEqual(f.read(), data)
            os.unlink(os.path.join(mnt, "fs", "note.txt"))
            os.unlink(os.path.join(mnt, "fs", "sub", "f.bin"))
            os.rmdir(os.path.join(mnt, "fs", "sub"))
            os.rmdir(os.path.join(mnt, "fs"))
            self.assertFalse(os.path.exists(os.path.join(self.back, "fs")))
        finally:
            self.s3fs_umount(mnt)

    def test_pytorch_training_reads_npz(self):
        dltest.require(have("s3torchconnector") and have("torch"),
                       "s3torchconnector or torch not installed in %s" % dltest.VENV_PY)
        import numpy as np
        script = TRAIN
        out = os.path.join(self.tmp, "seen.txt")
        env = dict(self.env)
        t0 = time.time()
        r = subprocess.run([sys.executable, script, self.endpoint, out], env=env,
                           capture_output=True, text=True, timeout=600)
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        with open(out) as f:
            lines = f.read().split("\n")
        seen = dict(line.split() for line in lines if line)
        steps = int(seen.pop("steps"))
        want = [k for k in gen_keys(os.path.join(self.gen, "npzset")) if k.startswith("train/")]
        self.assertEqual(sorted(seen), want)
        self.assertEqual(steps, 2 * ((len(want) + 3) // 4))
        # What the loader decoded is what dlio-gen wrote.
        for k in want:
            z = np.load(os.path.join(self.gen, "npzset", k))
            self.assertAlmostEqual(float(seen[k]), float(z["x"].astype(np.float32).sum()),
                                   delta=abs(float(z["x"].astype(np.float32).sum())) * 1e-5 + 1e-3)
        self.assertLess(time.time() - t0, 600)


if __name__ == "__main__":
    unittest.main()
