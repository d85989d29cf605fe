"""dlio-drive ranks (issue #25): `--rank R --ranks N`, by default the
launcher's, `{rank}` in the data directory and the output paths, so that
`mpirun -np N dlio-drive --data-dir 'm{rank}'` runs a rank per mount of a
cluster.

What is checked, from the storage side (each mount's own trace, exported
with dlio-trace) and from dlio-drive's per-rank read logs:
- 2 and 4 ranks under one mpirun on one mount and on a cluster of as many
  mounts (rank r reads mount r only): the files the ranks read are the
  dataset, each read whole exactly once per epoch, by the rank DLIO 2.0.0's
  split gives it (rank r: files [r*16/N, (r+1)*16/N)); the job's report is
  the sum of the ranks' (bytes, samples, samples/s) and its bytes are the
  bytes the mounts served;
- the defaults from the launcher's environment (Slurm's variables, no
  mpirun), ranks given by hand running alone, each with its own report, and
  together the dataset once;
- bad values refused with a clear error: --rank 5 --ranks 4, a rank without
  --ranks, a launcher variable that is not a number, --rank disagreeing
  with mpirun's."""
import csv
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))  # tests/: dltest
import dltest  # noqa: E402

DRIVE = os.environ.get("DLIO_DRIVE", os.path.join(dltest.BUILD, "dlio-drive"))
TRACE = os.environ.get("DLIO_TRACE", os.path.join(dltest.BUILD, "dlio-trace"))

FILES = 16
EPOCHS = 2
# Whole npz files, one sample each, read past the page cache (io: direct) so
# that every epoch's reads reach the daemon's trace.
DATASET = """\
io: direct
datasets:
  - {name: npz, format: npz, files: 16, samples_per_file: 1, sample_size: 64KiB}
"""
CLUSTER = "pacer: {read: {bandwidth: 200MB/s}}\ncluster: {period: 10ms}\n"

LAUNCHER_VARS = ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK",
                 "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS")


def plain_env():
    """This environment less any launcher's variables (a test run under srun)."""
    return {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS}


def mount_reads(trace):
    """{file: [(pid, offset, bytes)]} of the data reads a mount's trace holds."""
    r = subprocess.run([TRACE, "export", "--csv", trace], capture_output=True, text=True,
                       check=True)
    out = {}
    for row in csv.DictReader(io.StringIO(r.stdout)):
        if row["op"] == "read" and int(row["result"]) > 0:
            out.setdefault(row["file"], []).append(
                (int(row["pid"]), int(row["offset"]), int(row["result"])))
    return out


def drive_reads(path):
    """[(epoch, file, bytes)] of dlio-drive's --trace-files log."""
    rows = []
    with open(path) as f:
        for line in f:
            if not line.startswith("#"):
                e, _split, _seq, rel, _sample, _off, n = line.rstrip("\n").split("\t")
                rows.append((int(e), rel, int(n)))
    return rows


class Ranks(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(DRIVE, os.X_OK):
            raise unittest.SkipTest("no dlio-drive binary at " + DRIVE)
        cls.tmp = tempfile.mkdtemp(prefix="dlio-drive-ranks-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, True)
        cls.cfg = dltest.write_config(cls.tmp, DATASET)
        cls.has_mpi = "(MPI:" in subprocess.run([DRIVE, "--version"], capture_output=True,
                                                text=True).stdout

    def need_mpi(self):
        dltest.require(dltest.mpirun() is not None, "no Open MPI mpirun (openmpi-bin)")
        dltest.require(self.has_mpi, "dlio-drive built without MPI")

    def sizes(self, root):
        tr = os.path.join(root, "npz", "train")
        return {"npz/train/" + f: os.path.getsize(os.path.join(tr, f)) for f in os.listdir(tr)}

    def drive(self, n, data_dir, out, extra=()):
        """mpirun -np n dlio-drive with {rank} in its paths: the job's JSON."""
        cmd = dltest.mpirun_cmd(n) + [DRIVE, "--config", self.cfg, "--data-dir", data_dir,
                            "--dataset", "npz", "--batch-size", "2", "--epochs", str(EPOCHS),
                            "--quiet", "--json", os.path.join(out, "job{rank}.json"),
                            "--trace-files", os.path.join(out, "reads{rank}.tsv")] + list(extra)
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=plain_env())
        self.assertEqual(r.returncode, 0, "%s:\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))
        # The job's report from rank 0 only ({rank} replaced by 0), a read log per rank.
        self.assertEqual(sorted(f for f in os.listdir(out) if f.endswith(".json")),
                         ["job0.json"])
        self.assertEqual(sorted(f for f in os.listdir(out) if f.endswith(".tsv")),
                         sorted("reads%d.tsv" % q for q in range(n)))
        with open(os.path.join(out, "job0.json")) as f:
            return json.load(f)

    def check_shards(self, n, out, sizes):
        """Per epoch, every file once over all ranks, whole, by the rank
        DLIO's split gives it (ceil(16 / n) samples, one a file)."""
        per = FILES // n
        for q in range(n):
            rows = drive_reads(os.path.join(out, "reads%d.tsv" % q))
            for e in range(1, EPOCHS + 1):
                mine = sorted(f for ep, f, _ in rows if ep == e)
                want = sorted("train/img_%02d_of_16.npz" % i for i in range(q * per, (q + 1) * per))
                self.assertEqual(mine, want, "rank %d epoch %d" % (q, e))
                self.assertEqual(sum(b for ep, _, b in rows if ep == e),
                                 sum(sizes["npz/" + f] for f in want))

    def check_report(self, j, n, sizes):
        """The job's report is its ranks' summed (DLIO's statscounter)."""
        total = sum(sizes.values())
        self.assertEqual((j["ranks"], j["job_ranks"]), (n, n))
        self.assertEqual([p["rank"] for p in j["per_rank"]], list(range(n)))
        for i, e in enumerate(j["epochs"]):
            ranks = [p["epochs"][i] for p in j["per_rank"]]
            self.assertEqual(e["bytes"], sum(x["bytes"] for x in ranks))
            self.assertEqual(e["bytes"], total, "epoch %d: the dataset once" % (i + 1))
            self.assertEqual(e["samples"], sum(x["samples"] for x in ranks))
            self.assertEqual(e["samples"], FILES)
            self.assertAlmostEqual(e["samples_per_s"], sum(x["samples_per_s"] for x in ranks),
                                   delta=1e-6 * e["samples_per_s"])
            for x in ranks:
                self.assertEqual(x["bytes"], total // n, "an even split: 16 equal files")

    def check_mount(self, reads, sizes, files, ranks):
        """A mount's trace: each of `files` read whole once per epoch, by one
        process, no other file; `ranks` processes in all."""
        self.assertEqual(sorted(reads), sorted(files))
        pids = set()
        for f in files:
            got = reads[f]
            self.assertEqual(sum(b for _, _, b in got), EPOCHS * sizes[f], f)
            self.assertEqual(sorted(o for _, o, _ in got if o == 0), [0] * EPOCHS, f)
            self.assertEqual(len({p for p, _, _ in got}), 1, "%s read by one rank" % f)
            pids |= {p for p, _, _ in got}
        self.assertEqual(len(pids), ranks)

    def test_one_mount(self):
        """2 and 4 ranks under one mpirun on one mount."""
        self.need_mpi()
        dltest.require(dltest.fuse_available(), "/dev/fuse or fusermount3 not available")
        for n in (2, 4):
            with self.subTest(ranks=n):
                run = tempfile.mkdtemp(dir=self.tmp, prefix="one%d-" % n)
                out = os.path.join(run, "out")
                os.mkdir(out)
                trace = os.path.join(run, "mount.bin")
                cfg = dltest.write_config(run, DATASET + "trace: {file: '%s'}\n" % trace)
                with dltest.mounted(cfg) as mnt:
                    sizes = self.sizes(mnt)
                    j = self.drive(n, mnt, out)
                self.check_shards(n, out, sizes)
                self.check_report(j, n, sizes)
                self.check_mount(mount_reads(trace), sizes, list(sizes), n)

    def cluster(self, n, run):
        """mpirun -np n dliofs mount -f m{rank}, each node tracing to t{rank}.bin."""
        cfg = dltest.write_config(run, DATASET + CLUSTER + "trace: {file: '%s'}\n"
                                  % os.path.join(run, "t{rank}.bin"))
        return dltest.Cluster(cfg, os.path.join(run, "m{rank}"), n,
                              os.path.join(run, "mpirun.log"), env=plain_env())

    def test_cluster_of_mounts(self):
        """A rank per mount of a cluster of 2 and 4 (`--data-dir m{rank}`):
        each node's trace holds its rank's shard and nothing else, the union
        is the dataset, each file once per epoch."""
        self.need_mpi()
        dltest.require(dltest.fuse_available(), "/dev/fuse or fusermount3 not available")
        r = subprocess.run([dltest.DLIOFS, "check",
                            dltest.write_config(self.tmp, DATASET + CLUSTER, "c.yaml")],
                           capture_output=True, text=True)
        dltest.require(r.returncode == 0 or "without MPI" not in r.stderr,
                       "dliofs built without MPI")
        self.assertEqual(r.returncode, 0, r.stderr)
        for n in (2, 4):
            with self.subTest(ranks=n):
                run = tempfile.mkdtemp(dir=self.tmp, prefix="cluster%d-" % n)
                out = os.path.join(run, "out")
                os.mkdir(out)
                c = self.cluster(n, run)
                try:
                    sizes = self.sizes(c.mnts[0])
                    j = self.drive(n, os.path.join(run, "m{rank}"), out)
                finally:
                    c.stop()
                self.check_shards(n, out, sizes)
                self.check_report(j, n, sizes)
                per = FILES // n
                seen = set()
                for q in range(n):
                    mine = ["npz/train/img_%02d_of_16.npz" % i
                            for i in range(q * per, (q + 1) * per)]
                    self.check_mount(mount_reads(os.path.join(run, "t%d.bin" % q)), sizes,
                                     mine, 1)
                    seen |= set(mine)
                self.assertEqual(seen, set(sizes), "the nodes' reads together: the dataset")
                self.assertEqual(j["config"]["dir"], os.path.join(run, "m0", "npz"),
                                 "rank 0 reported from its own mount")

    def data(self):
        if not hasattr(self, "_data"):
            type(self)._data = dltest.gen(self.cfg, os.path.join(self.tmp, "data"))
        return self._data

    def alone(self, args, env_extra=None, expect=0):
        env = plain_env()
        env.update(env_extra or {})
        cmd = [DRIVE, "--config", self.cfg, "--dataset", "npz", "--batch-size", "2",
               "--quiet"] + list(args)
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
        self.assertEqual(r.returncode, expect, "%s:\n%s" % (" ".join(cmd), r.stderr))
        return r

    def test_ranks_by_hand_and_from_slurm(self):
        """Without mpirun: --rank/--ranks given, or Slurm's SLURM_PROCID and
        SLURM_NTASKS; each rank reads its shard alone and writes its own
        report (FILE.RANK, or {rank}); together they read the dataset once."""
        data = self.data()
        sizes = self.sizes(data)
        out = tempfile.mkdtemp(dir=self.tmp, prefix="alone-")
        jpath = os.path.join(out, "r.json")
        procs = []
        for q in range(4):
            env = plain_env()
            args = ["--data-dir", data, "--json", jpath, "--trace-files",
                    os.path.join(out, "reads{rank}.tsv"), "--epochs", str(EPOCHS)]
            if q % 2:
                env.update(SLURM_PROCID=str(q), SLURM_NTASKS="4")
            else:
                args += ["--rank", str(q), "--ranks", "4"]
            procs.append(subprocess.Popen(
                [DRIVE, "--config", self.cfg, "--dataset", "npz", "--batch-size", "2",
                 "--quiet"] + args, env=env, stderr=subprocess.PIPE, text=True))
        errs = [p.communicate(timeout=120)[1] for p in procs]
        for q, p in enumerate(procs):
            self.assertEqual(p.returncode, 0, "rank %d: %s" % (q, errs[q]))
        self.assertFalse(os.path.exists(jpath), "no job report: each rank has its own")
        self.check_shards(4, out, sizes)
        reps = []
        for q in range(4):
            with open("%s.%d" % (jpath, q)) as f:
                j = json.load(f)
            self.assertEqual((j["ranks"], j["job_ranks"], j["per_rank"][0]["rank"]), (1, 4, q))
            self.assertTrue(any("rank %d of 4 runs alone" % q in n for n in j["notes"]),
                            j["notes"])
            reps.append(j)
        # Combined as the README says: bytes and samples summed, the dataset once.
        for i in range(EPOCHS):
            self.assertEqual(sum(j["epochs"][i]["bytes"] for j in reps), sum(sizes.values()))
            self.assertEqual(sum(j["epochs"][i]["samples"] for j in reps), FILES)

    def test_refusals(self):
        """Bad ranks end before anything is read, with the reason."""
        data = self.data()
        cases = [
            (["--rank", "5", "--ranks", "4"], {}, "--rank 5, --ranks 4: ranks are numbered 0 to 3"),
            (["--rank", "4", "--ranks", "4"], {}, "ranks are numbered 0 to 3"),
            (["--rank", "1"], {}, "a rank above 0 needs --ranks N"),
            (["--ranks", "0"], {}, "--ranks 0: must be between 1 and"),
            ([], {"SLURM_PROCID": "5", "SLURM_NTASKS": "4"},
             "rank 5 (SLURM_PROCID), 4 ranks (SLURM_NTASKS): ranks are numbered 0 to 3"),
            ([], {"SLURM_PROCID": "one", "SLURM_NTASKS": "4"},
             "SLURM_PROCID=one (from the launcher): not a rank"),
            ([], {"SLURM_PROCID": "0", "SLURM_NTASKS": "0"},
             "SLURM_NTASKS=0 (from the launcher): not a number of ranks"),
            (["--ranks", "2"], {"SLURM_PROCID": "3", "SLURM_NTASKS": "4"},
             "rank 3 (SLURM_PROCID), --ranks 2: ranks are numbered 0 to 1"),
        ]
        for args, env, msg in cases:
            with self.subTest(args=args, env=env):
                r = self.alone(["--data-dir", data] + args, env, expect=2)
                self.assertIn(msg, r.stderr)
        r = self.alone(["--data-dir", data, data], expect=2)
        self.assertIn("give one", r.stderr)

    def test_rank_must_agree_with_mpi(self):
        """Under mpirun the ranks are MPI's: --rank 1 on both ranks of 2 is
        refused on the one it is wrong for, and no rank waits behind."""
        self.need_mpi()
        data = self.data()
        cmd = dltest.mpirun_cmd(2) + [DRIVE, "--config", self.cfg, "--dataset", "npz", "--batch-size", "2",
                            "--quiet", "--data-dir", data, "--rank", "1"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=plain_env())
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("--rank 1 of 2 ranks (OMPI_COMM_WORLD_SIZE), but MPI made this process "
                      "rank 0 of 2", r.stderr)


if __name__ == "__main__":
    dltest.main()
