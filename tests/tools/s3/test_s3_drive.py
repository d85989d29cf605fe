"""dlio-drive --storage s3 against `dliofs s3 serve` (and against a mount
serving the endpoint beside it, `s3: {listen: ...}`): every object read whole
in the range GETs of the client it copies (s3torchconnector: 8 MiB parts or
--range-size, every object ranged; s3dlio: one GET below 32 MiB), each byte
checked against the generator (--s3-verify) and against dlio-gen's files,
the endpoint's own counts of requests and bytes, the pacer shaping the job
(a 50 MB/s model gives ~50 MB/s), SigV4 signing, and clear failures (no
endpoint, another seed's bytes, a wrong secret)."""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))  # tests/: dltest
import dltest  # noqa: E402

DRIVE = os.environ.get("DLIO_DRIVE", os.path.join(dltest.BUILD, "dlio-drive"))
MiB = 1 << 20
DATA = """
datasets:
  - name: objs
    format: npz
    files: 12
    eval_files: 0
    samples_per_file: 2
    sample_size: {mean: 3MB, stdev: 1MB, min: 1MB, max: 9MB}
"""


def serve(cfg):
    p = subprocess.Popen([dltest.DLIOFS, "s3", "serve", cfg, "--listen", "127.0.0.1:0"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    m = re.search(r"http://127\.0\.0\.1:(\d+)$", p.stdout.readline().strip())
    if not m:
        p.kill()
        raise AssertionError("dliofs s3 serve did not start: " + p.stderr.read())
    return p, int(m.group(1))


def stop(p):
    p.send_signal(signal.SIGTERM)
    try:
        rc = p.wait(timeout=20)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    err = p.stderr.read()
    p.stdout.close()
    p.stderr.close()
    return rc, err


def stats(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/.dliofs/stats.json" % port) as r:
        return json.load(r)


def object_sizes(tmp, cfg):
    """dlio-gen's files of cfg: key -> size."""
    out = os.path.join(tmp, "gen")
    dltest.gen(cfg, out)
    root = os.path.join(out, "objs")
    sizes = {}
    for d, _, files in os.walk(root):
        for f in files:
            sizes[os.path.relpath(os.path.join(d, f), root)] = os.path.getsize(os.path.join(d, f))
    return sizes


class S3Drive(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="dliofs-s3drive.")
        cls.cfg = dltest.write_config(cls.tmp.name, "seed: 21\n" + DATA)
        cls.sizes = object_sizes(cls.tmp.name, cls.cfg)
        cls.total = sum(cls.sizes.values())

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def drive(self, cfg, port, *extra, env=None, check=True):
        trace = os.path.join(self.tmp.name, "trace.tsv")
        cmd = [DRIVE, "--config", cfg, "--storage", "s3", "--endpoint",
               "http://127.0.0.1:%d" % port, "--batch-size", "4", "--read-threads", "2",
               "--quiet", "--json", "-", "--trace-files", trace] + list(extra)
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                           env=dict(os.environ, **(env or {})))
        if not check:
            return r
        self.assertEqual(r.returncode, 0, r.stderr)
        rep = json.loads(r.stdout[r.stdout.index("{"):])
        with open(trace) as f:
            rows = [ln.rstrip("\n").split("\t") for ln in f if not ln.startswith("#")]
        return rep, rows

    def check_objects(self, rep, rows, epochs):
        # Every object once per epoch, all of its bytes, and the bytes add up.
        for e in range(1, epochs + 1):
            got = {r[3]: int(r[6]) for r in rows if r[0] == str(e)}
            self.assertEqual(got, self.sizes, "epoch %d" % e)
        self.assertEqual(sum(ep["bytes"] for ep in rep["epochs"]), epochs * self.total)

    def test_ranges_bytes_and_counts(self):
        p, port = serve(self.cfg)
        try:
            rep, rows = self.drive(self.cfg, port, "--epochs", "2", "--s3-verify",
                                   "--range-size", "1MiB", "--s3-connections", "3")
            st = stats(port)
        finally:
            rc, err = stop(p)
        self.assertEqual(rc, 0, err)
        self.check_objects(rep, rows, 2)
        # One range GET per MiB of each object, each one a request to the pacer.
        ranges = sum((s + MiB - 1) // MiB for s in self.sizes.values())
        self.assertEqual(sum(ep["read_calls"] for ep in rep["epochs"]), 2 * ranges)
        self.assertEqual(st["classes"]["read"]["ops"], 2 * ranges)
        self.assertEqual(st["classes"]["read"]["bytes"], 2 * self.total)
        self.assertTrue(any("s3torchconnector's reads" in n for n in rep["notes"]), rep["notes"])

    def test_client_defaults(self):
        p, port = serve(self.cfg)
        try:
            # s3torchconnector: 8 MiB parts, so one ranged GET per object
            # here, two for those over 8 MiB.
            rep, rows = self.drive(self.cfg, port)
            n8 = sum((s + 8 * MiB - 1) // (8 * MiB) for s in self.sizes.values())
            self.assertEqual(rep["epochs"][0]["read_calls"], n8)
            self.check_objects(rep, rows, 1)
            before = stats(port)["classes"]["read"]["ops"]
            # s3dlio: objects under 32 MiB in one plain GET.
            rep, rows = self.drive(self.cfg, port, "--s3-client", "s3dlio", "--s3-verify")
            self.assertEqual(rep["epochs"][0]["read_calls"], len(self.sizes))
            self.assertEqual(stats(port)["classes"]["read"]["ops"] - before, len(self.sizes))
            self.check_objects(rep, rows, 1)
        finally:
            stop(p)

    def test_pacer_shapes_the_job(self):
        # A 50 MB/s device: the job reads at about 50 MB/s, not at memory speed.
        cfg = dltest.write_config(self.tmp.name, "seed: 21\npacer: {read: {bandwidth: 50MB/s}}\n"
                                  + DATA, name="paced.yaml")
        p, port = serve(cfg)
        try:
            t0 = time.monotonic()
            rep, rows = self.drive(cfg, port, "--range-size", "1MiB")
            wall = time.monotonic() - t0
            st = stats(port)
        finally:
            stop(p)
        self.check_objects(rep, rows, 1)
        mbs = rep["summary"]["mb_per_s"]["mean"]
        self.assertGreater(mbs, 40, rep["summary"])
        self.assertLess(mbs, 56, rep["summary"])
        self.assertGreater(wall, self.total / 56e6)
        self.assertEqual(st["classes"]["read"]["bytes"], self.total)

    def test_signed(self):
        cfg = dltest.write_config(self.tmp.name, "seed: 21\ns3: {access_key: AKIDRIVE, "
                                  "secret_key: drive-secret}\n" + DATA, name="signed.yaml")
        p, port = serve(cfg)
        try:
            env = {"AWS_ACCESS_KEY_ID": "AKIDRIVE", "AWS_SECRET_ACCESS_KEY": "drive-secret"}
            rep, rows = self.drive(cfg, port, "--range-size", "2MiB", env=env)
            self.check_objects(rep, rows, 1)
            self.assertTrue(any("SigV4-signed" in n for n in rep["notes"]), rep["notes"])
            bad = self.drive(cfg, port, env=dict(env, AWS_SECRET_ACCESS_KEY="wrong"),
                             check=False)
            self.assertNotEqual(bad.returncode, 0)
            self.assertIn("403", bad.stderr)
            unsigned = self.drive(cfg, port, env={"AWS_ACCESS_KEY_ID": ""}, check=False)
            self.assertNotEqual(unsigned.returncode, 0)
            self.assertIn("403", unsigned.stderr)
        finally:
            rc, err = stop(p)
        self.assertEqual(rc, 0, err)

    def test_failures_are_said(self):
        # No endpoint: one line naming the URL, no report.
        r = self.drive(self.cfg, dltest_free_port(), check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("is the endpoint up?", r.stderr)
        # Another seed's objects: --s3-verify names the object and the range.
        other = dltest.write_config(self.tmp.name, "seed: 22\n" + DATA, name="other.yaml")
        p, port = serve(other)
        try:
            r = self.drive(self.cfg, port, "--s3-verify", check=False)
        finally:
            stop(p)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("not the bytes the config generates", r.stderr)
        # Options that make no sense are refused before any request.
        r = self.drive(self.cfg, 1, "--endpoint", "https://x:1/path", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("--endpoint", r.stderr)


class S3Control(unittest.TestCase):
    """`dliofs stat | set | cache | trace SOCKET` on the endpoint's control
    socket, per-job statistics, and the trace in the mount's format."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="dliofs-s3ctl.")
        self.cfg = dltest.write_config(self.tmp.name, "seed: 21\npacer: {read: {bandwidth: "
                                       "50MB/s}}\n" + DATA)
        self.sizes = object_sizes(self.tmp.name, self.cfg)
        self.total = sum(self.sizes.values())
        self.sock = os.path.join(self.tmp.name, "ctl.sock")
        self.p = subprocess.Popen([dltest.DLIOFS, "s3", "serve", self.cfg, "--listen",
                                   "127.0.0.1:0", "--control", self.sock],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        m = re.search(r":(\d+)$", self.p.stdout.readline().strip())
        if not m:
            self.p.kill()
            raise AssertionError(self.p.stderr.read())
        self.port = int(m.group(1))

    def tearDown(self):
        rc, err = stop(self.p)
        self.assertEqual(rc, 0, err)
        # The socket goes with the server.
        self.assertFalse(os.path.exists(self.sock))
        self.tmp.cleanup()

    def dliofs(self, *args, check=True):
        r = subprocess.run([dltest.DLIOFS] + list(args), capture_output=True, text=True,
                           timeout=60)
        if check:
            self.assertEqual(r.returncode, 0, r.stderr)
        return r

    def drive_mbs(self, *extra):
        r = subprocess.run([DRIVE, "--config", self.cfg, "--storage", "s3", "--endpoint",
                            "http://127.0.0.1:%d" % self.port, "--range-size", "1MiB",
                            "--batch-size", "4", "--read-threads", "2", "--quiet", "--json",
                            "-"] + list(extra), capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout[r.stdout.index("{"):])["summary"]["mb_per_s"]["mean"]

    def test_owner_only(self):
        # Whoever may change the model is whoever may open the socket: its owner.
        self.assertEqual(os.stat(self.sock).st_mode & 0o077, 0)

    def test_stat_jobs_and_live_set(self):
        slow = self.drive_mbs()
        self.assertLess(slow, 56)
        # Live: the next job sees the new model, no restart.
        self.dliofs("set", self.sock, "read.bandwidth=200MB/s")
        self.assertEqual(self.read_pacer(), "200MB/s")
        fast = self.drive_mbs()
        self.assertGreater(fast, 2.5 * slow)
        # A second job, named by the header, counted apart.
        req = urllib.request.Request("http://127.0.0.1:%d/objs/train/img_00_of_12.npz" % self.port,
                                     headers={"x-dliofs-job": "other-job"})
        with urllib.request.urlopen(req) as r:
            got = len(r.read())
        st = json.loads(self.dliofs("stat", self.sock, "--json").stdout)
        jobs = {j["name"]: j for j in st["jobs"]}
        self.assertIn("dlio-drive", jobs)
        self.assertEqual(jobs["other-job"]["classes"]["read"]["bytes"], got)
        self.assertEqual(jobs["dlio-drive"]["classes"]["read"]["bytes"], 2 * self.total)
        table = self.dliofs("stat", self.sock).stdout
        self.assertIn("other-job", table)
        self.assertIn("dlio-drive", table)
        # A refused change changes nothing and says why.
        r = self.dliofs("set", self.sock, "read.bandwidth=1MB/s", "no.such.key=1", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("no.such.key", r.stderr)
        self.assertEqual(self.read_pacer(), "200MB/s")
        # stats reset
        self.dliofs("stat", self.sock, "--reset")
        st = json.loads(self.dliofs("stat", self.sock, "--json").stdout)
        self.assertEqual(st["classes"]["read"]["ops"], 0)

    def read_pacer(self):
        import socket
        with socket.socket(socket.AF_UNIX) as c:
            c.connect(self.sock)
            c.sendall(b"read pacer\n")
            out = b""
            while True:
                b = c.recv(65536)
                if not b:
                    break
                out += b
        head, _, body = out.decode().partition("\n")
        self.assertEqual(head, "ok %d" % len(body))
        # The read class's bandwidth: the first "bandwidth:" line after "read:".
        lines = body.splitlines()
        return lines[lines.index("read:") + 1].split(":", 1)[1].strip()

    def test_trace(self):
        trace = os.path.join(self.tmp.name, "s3.trace")
        self.dliofs("trace", "start", self.sock, trace)
        self.assertIn("trace   on", self.dliofs("stat", self.sock).stdout)
        self.drive_mbs("--range-size", "4MiB")
        self.dliofs("trace", "stop", self.sock)
        ranges = sum((s + 4 * MiB - 1) // (4 * MiB) for s in self.sizes.values())
        r = subprocess.run([os.environ.get("DLIO_TRACE", os.path.join(dltest.BUILD, "dlio-trace")),
                            "summary", "--json", trace], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        summ = json.loads(r.stdout)
        self.assertEqual(summ["ops"]["read"]["count"], ranges)
        self.assertEqual(summ["ops"]["read"]["bytes"], self.total)
        self.assertEqual([j["name"] for j in summ["jobs"]], ["dlio-drive"])
        # A second stop has nothing to stop.
        r = self.dliofs("trace", "stop", self.sock, check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("no trace is running", r.stderr)


class S3BesideMount(unittest.TestCase):
    """`s3: {listen: ...}` in a mount config: the endpoint runs in the mount's
    daemon, its requests shaped by the mount's pacer and counted in the
    mount's stats.json, changed live by `dliofs set MOUNT`, gone at unmount."""

    def test_one_pacer(self):
        with tempfile.TemporaryDirectory(prefix="dliofs-s3mnt.") as tmp:
            port = dltest_free_port()
            cfg = dltest.write_config(tmp, "seed: 21\npacer: {read: {bandwidth: 50MB/s}}\n"
                                      "s3: {listen: 127.0.0.1:%d}\n" % port + DATA)
            sizes = object_sizes(tmp, cfg)
            total = sum(sizes.values())
            with dltest.mounted(cfg) as mnt:
                def drive():
                    r = subprocess.run([DRIVE, "--config", cfg, "--storage", "s3", "--endpoint",
                                        "http://127.0.0.1:%d" % port, "--range-size", "1MiB",
                                        "--batch-size", "4", "--read-threads", "2", "--quiet",
                                        "--json", "-", "--s3-verify"],
                                       capture_output=True, text=True, timeout=300)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    return json.loads(r.stdout[r.stdout.index("{"):])["summary"]["mb_per_s"]
                slow = drive()["mean"]
                self.assertGreater(slow, 40)
                self.assertLess(slow, 56)
                with open(os.path.join(mnt, ".dliofs", "stats.json")) as f:
                    st = json.load(f)
                jobs = {j["name"]: j for j in st["jobs"]}
                self.assertEqual(jobs["dlio-drive"]["classes"]["read"]["bytes"], total)
                # The mount's own files are the same bytes, through the same device.
                key = sorted(sizes)[0]
                with open(os.path.join(mnt, "objs", key), "rb") as f:
                    via_mount = f.read()
                with urllib.request.urlopen("http://127.0.0.1:%d/objs/%s" % (port, key)) as r:
                    self.assertEqual(r.read(), via_mount)
                r = subprocess.run([dltest.DLIOFS, "set", mnt, "read.bandwidth=200MB/s"],
                                   capture_output=True, text=True)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertGreater(drive()["mean"], 2.5 * slow)
            # Unmounted: the endpoint went with the daemon.
            with self.assertRaises(OSError):
                urllib.request.urlopen("http://127.0.0.1:%d/" % port, timeout=5)

    def test_port_refused_is_mount_refused(self):
        import socket
        with tempfile.TemporaryDirectory(prefix="dliofs-s3mnt.") as tmp, \
                socket.socket() as busy:
            busy.bind(("127.0.0.1", 0))
            busy.listen(1)
            cfg = dltest.write_config(tmp, "s3: {listen: 127.0.0.1:%d}\n" %
                                      busy.getsockname()[1] + DATA)
            mnt = os.path.join(tmp, "mnt")
            os.mkdir(mnt)
            r = subprocess.run([dltest.DLIOFS, "mount", mnt, cfg], capture_output=True,
                               text=True, timeout=60)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("s3.listen", r.stderr)
            self.assertFalse(dltest.is_mounted(mnt))


def dltest_free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    dltest.main()
