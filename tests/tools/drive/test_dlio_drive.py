"""dlio-drive against dlio-gen output: it reads what a loader reads (exact
bytes, every file once per epoch, real shuffles), measures AU the MLPerf way,
writes the JSON it documents, and costs little next to fio.

Fidelity checks use the tool's --trace-files log and, where strace works,
the system calls themselves. MpiRanks runs it under Open MPI's mpirun with 2
and 4 ranks. The overhead benchmark prints figures and only asserts that it
ran; the comparison with DLIO itself is tests/tools/drive/test_drive_fidelity.py."""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))  # tests/: dltest
import dltest  # noqa: E402

DRIVE = os.environ.get("DLIO_DRIVE", os.path.join(dltest.BUILD, "dlio-drive"))

CONFIG = """
seed: 11
datasets:
  - name: npz
    format: npz
    files: 24
    eval_files: 4
    samples_per_file: 2
    sample_size: 20000
  - name: tfr
    format: tfrecord
    files: 6
    samples_per_file: 10
    sample_size: {mean: 3000, stdev: 500}
  - name: h5
    format: hdf5
    files: 6
    samples_per_file: 8
    shape: [16, 16, 3]
  - name: jpg
    format: jpeg
    files: 16
    width: {mean: 160, stdev: 30, min: 32, max: 400}
    height: 120
    color: RGB420
  - name: png
    format: png
    files: 8
    width: 96
    height: 64
    color: RGB
  - name: dlrm
    format: dlrm
    files: 2
    samples_per_file: 3000
  - name: raw
    format: raw
    files: 5
    samples_per_file: 6
    sample_size: {mean: 3000, stdev: 700, min: 500, max: 9000}
  - name: ib
    format: indexed_binary
    files: 3
    samples_per_file: 7
    sample_size: 2500
"""

# Documented in tools/drive/drive_report.c.
TOP_KEYS = {"tool", "version", "config", "epochs", "summary", "au_threshold", "au_mean", "au_min",
            "pass", "ranks", "job_ranks", "per_rank", "run_wall_s", "setup_bytes", "checkpoints", "notes", "cuda"}
CONFIG_KEYS = {"config_file", "dir", "dataset", "format", "files", "eval_files",
               "samples_per_file", "batch_size", "eval_batch_size", "read_threads", "prefetch",
               "read_ahead_batches", "epochs", "steps_per_epoch", "total_training_steps",
               "computation_time", "computation_time_mean_s", "eval_time", "file_shuffle",
               "sample_shuffle", "seed", "read_unit", "read_amplification", "checkpoint_model_bytes",
               "nominal_sample_bytes", "data_loader", "loader", "loader_threads",
               "check_crc", "decode",
               "odirect", "accelerator", "accelerator_type", "workload",
               "warmup_steps_excluded", "end_steps_excluded"}
EPOCH_KEYS = {"epoch", "steps", "samples", "bytes", "index_bytes", "files_opened", "read_calls",
              "decoded_bytes", "wall_s", "compute_s", "stall_s", "barrier_s", "stall_share", "au",
              "au_min", "samples_per_s", "mb_per_s", "nominal_mib_per_s", "step_time_s",
              "stall_time_s"}
RANK_KEYS = {"rank", "host", "au_mean", "samples_per_s_mean", "bytes", "epochs"}
RANK_EPOCH_KEYS = {"epoch", "steps", "samples", "bytes", "files_opened", "read_calls", "wall_s",
                   "compute_s", "stall_s", "barrier_s", "au", "samples_per_s", "mb_per_s"}
SUMMARY_KEYS = {"au", "samples_per_s", "mb_per_s", "nominal_mib_per_s", "stall_share", "stall_s",
                "wall_s", "bytes", "step_time_s", "stall_time_s"}
MOMENTS = {"mean", "min", "max", "stdev"}
PCTS = {"p50", "p90", "p99"}


def drive(args, check=True, timeout=300):
    r = subprocess.run([DRIVE] + list(args), capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError("dlio-drive %s failed (%d):\n%s%s" % (
            " ".join(args), r.returncode, r.stdout, r.stderr))
    return r


def read_trace(path):
    """[(epoch, split, seq, file, sample, offset, bytes)] from --trace-files."""
    rows = []
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                continue
            e, split, seq, rel, sample, off, n = line.rstrip("\n").split("\t")
            rows.append((int(e), split, int(seq), rel, int(sample), int(off), int(n)))
    return rows


class DriveTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(DRIVE, os.X_OK):
            raise unittest.SkipTest("no dlio-drive binary at " + DRIVE)
        cls.tmp = tempfile.mkdtemp(prefix="dlio-drive-test-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, True)
        cls.cfg = dltest.write_config(cls.tmp, CONFIG)
        cls.data = dltest.gen(cls.cfg, os.path.join(cls.tmp, "data"))

    def run_json(self, *args, name="r.json"):
        out = os.path.join(self.tmp, name)
        drive(["--config", self.cfg, self.data, "--quiet", "--json", out] + list(args))
        with open(out) as f:
            return json.load(f)

    def files_of(self, ds, split="train", data_only=True):
        root = os.path.join(self.data, ds)
        paths = [p for p in glob.glob(os.path.join(root, split, "**", "*"), recursive=True)
                 if os.path.isfile(p)]
        if data_only:
            paths = [p for p in paths if not p.endswith(".idx")]
        return {os.path.relpath(p, root): os.path.getsize(p) for p in paths}

    # -- what is read ---------------------------------------------------------

    def check_whole_files(self, ds, epochs=2, extra=()):
        files = self.files_of(ds)
        trace = os.path.join(self.tmp, ds + ".tsv")
        r = self.run_json("--dataset", ds, "--epochs", str(epochs), "--batch-size", "2",
                          "--computation-time", "0", "--trace-files", trace, *extra)
        spf = r["config"]["samples_per_file"]
        self.assertEqual(len(r["epochs"]), epochs)
        for e in r["epochs"]:
            self.assertEqual(e["samples"], len(files) * spf, ds)
            self.assertEqual(e["bytes"], sum(files.values()), ds)
            self.assertEqual(e["files_opened"], len(files), ds)
        rows = read_trace(trace)
        for ep in range(1, epochs + 1):
            seen = [row[3] for row in rows if row[0] == ep]
            self.assertEqual(sorted(seen), sorted(files), "%s epoch %d: each file once" % (ds, ep))
            for row in rows:
                if row[0] == ep:
                    self.assertEqual(row[6], files[row[3]], "%s: %s read whole" % (ds, row[3]))
        return r

    def test_npz_whole_files(self):
        self.check_whole_files("npz")

    def test_jpeg_decode(self):
        r = self.check_whole_files("jpg", extra=("--decode",))
        # Real pixels: width x 120 x 3 channels summed over the files.
        self.assertGreater(r["epochs"][0]["decoded_bytes"], 16 * 32 * 120 * 3)
        self.assertTrue(r["config"]["decode"])

    def test_png_decode(self):
        r = self.check_whole_files("png", extra=("--decode",))
        self.assertEqual(r["epochs"][0]["decoded_bytes"], 8 * 96 * 64 * 3)

    def test_tfrecord_stream(self):
        files = self.files_of("tfr")
        trace = os.path.join(self.tmp, "tfr.tsv")
        r = self.run_json("--dataset", "tfr", "--epochs", "2", "--batch-size", "5",
                          "--computation-time", "0", "--check-crc", "--trace-files", trace,
                          "--transfer-size", "4KiB")
        for e in r["epochs"]:
            self.assertEqual(e["samples"], 60)
            self.assertEqual(e["bytes"], sum(files.values()))
            self.assertEqual(e["files_opened"], 6)
        rows = read_trace(trace)
        # Every record of every file once per epoch, records framing the whole file.
        for ep in (1, 2):
            per_file = {}
            for row in rows:
                if row[0] == ep:
                    per_file.setdefault(row[3], []).append(row)
            self.assertEqual(sorted(per_file), sorted(files))
            for rel, recs in per_file.items():
                recs.sort(key=lambda x: x[4])
                self.assertEqual([x[4] for x in recs], list(range(10)))
                self.assertEqual(sum(x[6] for x in recs), files[rel])
                pos = 0
                for x in recs:
                    self.assertEqual(x[5], pos, "record offsets are contiguous")
                    pos += x[6]

    def test_tfrecord_crc_catches_corruption(self):
        bad = os.path.join(self.tmp, "bad")
        shutil.copytree(os.path.join(self.data, "tfr"), os.path.join(bad, "tfr"))
        victim = sorted(glob.glob(os.path.join(bad, "tfr", "train", "*")))[2]
        with open(victim, "r+b") as f:
            f.seek(40)
            b = f.read(1)
            f.seek(40)
            f.write(bytes([b[0] ^ 0xFF]))
        r = drive(["--config", self.cfg, bad, "--dataset", "tfr", "--quiet", "--batch-size", "5",
                   "--check-crc"], check=False)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("corrupted record", r.stderr)
        # Without the check, the same file streams through.
        drive(["--config", self.cfg, bad, "--dataset", "tfr", "--quiet", "--batch-size", "5"])

    def test_hdf5_hyperslabs(self):
        trace = os.path.join(self.tmp, "h5.tsv")
        r = self.run_json("--dataset", "h5", "--epochs", "2", "--batch-size", "4",
                          "--computation-time", "0", "--trace-files", trace,
                          "--sample-shuffle", "seed")
        for e in r["epochs"]:
            self.assertEqual(e["samples"], 48)
            self.assertEqual(e["bytes"], 48 * 16 * 16 * 3, "one sample's bytes per read")
        rows = read_trace(trace)
        for ep in (1, 2):
            got = sorted((row[3], row[4]) for row in rows if row[0] == ep)
            want = sorted((f, s) for f in self.files_of("h5") for s in range(8))
            self.assertEqual(got, want, "each sample of each file once")

    def test_dlrm_batch_reads(self):
        trace = os.path.join(self.tmp, "dlrm.tsv")
        r = self.run_json("--dataset", "dlrm", "--epochs", "1", "--batch-size", "512",
                          "--computation-time", "0", "--trace-files", trace)
        e = r["epochs"][0]
        # 2 files x 3000 records: 5 full chunks of 512 and one of 440 per file,
        # 11 steps of 512 (drop_last: 6000 // 512).
        self.assertEqual(e["steps"], 11)
        self.assertEqual(e["samples"], 11 * 512)
        rows = read_trace(trace)
        self.assertTrue(all(x[6] in (160 * 512, 160 * 440) for x in rows), rows[:3])
        self.assertTrue(all(x[5] == 160 * x[4] and x[4] % 512 == 0 for x in rows))
        self.assertEqual(e["bytes"], sum(x[6] for x in rows))
        self.assertGreaterEqual(e["bytes"], 11 * 512 * 160)
        # With a batch dividing the records, exactly the files.
        r = self.run_json("--dataset", "dlrm", "--batch-size", "500", "--sample-shuffle", "seed")
        self.assertEqual(r["epochs"][0]["bytes"], 2 * 3000 * 160)

    def test_raw_and_indexed_binary(self):
        raw = self.files_of("raw")
        r = self.run_json("--dataset", "raw", "--batch-size", "5", "--epochs", "2",
                          "--sample-shuffle", "seed", "--file-shuffle", "seed")
        for e in r["epochs"]:
            self.assertEqual(e["samples"], 30)
            self.assertEqual(e["bytes"], sum(raw.values()))
        ib = self.files_of("ib")
        idx = self.files_of("ib", data_only=False)
        r = self.run_json("--dataset", "ib", "--batch-size", "7", "--epochs", "2")
        for e in r["epochs"]:
            self.assertEqual(e["bytes"], sum(ib.values()))
        # The index files are read once, before the first epoch.
        self.assertEqual(r["setup_bytes"], sum(idx.values()) - sum(ib.values()))
        # DLIO's on-demand reader reads both index files again for every sample.
        r = self.run_json("--dataset", "ib", "--batch-size", "7", "--read-amplification", "dlio")
        self.assertEqual(r["epochs"][0]["index_bytes"], 21 * 2 * 7 * 8)

    def test_dlio_read_amplification(self):
        """DLIO's pytorch reader opens a file per sample and reads it with
        np.load: each 2-sample npz opened twice an epoch, and each open reads
        the file once plus what np.load's buffer reads again (at most one
        st_blksize block and the zip directory; exactly: test_drive_fidelity)."""
        files = self.files_of("npz")
        blk = os.stat(os.path.join(self.data, "npz", sorted(files)[0])).st_blksize
        r = self.run_json("--dataset", "npz", "--batch-size", "4", "--read-amplification", "dlio")
        e = r["epochs"][0]
        self.assertGreaterEqual(e["bytes"], 2 * sum(files.values()), "each file read twice")
        self.assertLessEqual(e["bytes"], 2 * sum(files.values()) + 2 * len(files) * (blk + 1024))
        self.assertEqual(e["files_opened"], 2 * len(files))
        self.assertEqual(r["config"]["read_amplification"], "dlio")
        self.assertEqual(r["config"]["data_loader"], "pytorch")
        # The tensorflow loader keeps a file open for its consecutive samples.
        r = self.run_json("--dataset", "npz", "--batch-size", "4", "--read-amplification", "dlio",
                          "--data-loader", "tensorflow")
        e = r["epochs"][0]
        self.assertEqual(e["files_opened"], len(files))
        self.assertGreaterEqual(e["bytes"], sum(files.values()))
        self.assertLessEqual(e["bytes"], sum(files.values()) + len(files) * (blk + 1024))

    def test_strace_agrees(self):
        """The system calls say the same as the tool: each npz opened once per
        epoch and read to its end (bytes summed from read() results)."""
        strace = shutil.which("strace")
        dltest.require(strace is not None, "strace not installed")
        log = os.path.join(self.tmp, "strace.log")
        r = subprocess.run([strace, "-f", "-qq", "-e", "trace=openat,read,pread64", "-o", log,
                            DRIVE, "--config", self.cfg, self.data, "--dataset", "npz", "--quiet",
                            "--epochs", "2", "--batch-size", "4"],
                           capture_output=True, text=True, timeout=300)
        if r.returncode != 0 and "ptrace" in r.stderr:
            dltest.require(False, "strace cannot trace here: " + r.stderr.strip())
        self.assertEqual(r.returncode, 0, r.stderr)
        files = self.files_of("npz")
        opens, fd_file, nbytes = {}, {}, {}
        op = re.compile(r'^(\d+)\s+openat\(AT_FDCWD, "([^"]+)", [^)]*\)\s*=\s*(\d+)')
        rd = re.compile(r'^(\d+)\s+(read|pread64)\((\d+),.*\)\s*=\s*(\d+)')
        pending = {}
        lines = []
        with open(log) as f:
            for line in f:
                # Threads interrupt each other's calls: join the halves.
                if line.rstrip().endswith("<unfinished ...>"):
                    pending[line.split()[0]] = line.rstrip()[:-len("<unfinished ...>")]
                    continue
                m = re.match(r"^(\d+)\s+<\.\.\. \w+ resumed>(.*)$", line.rstrip())
                if m:
                    line = pending.pop(m.group(1), m.group(1) + " ?(") + m.group(2)
                lines.append(line)
        for line in lines:
            m = op.match(line)
            if m and "/npz/train/" in m.group(2):
                rel = os.path.relpath(m.group(2), os.path.join(self.data, "npz"))
                opens[rel] = opens.get(rel, 0) + 1
                fd_file[(m.group(1), m.group(3))] = rel
                continue
            m = rd.match(line)
            if m and (m.group(1), m.group(3)) in fd_file:
                rel = fd_file[(m.group(1), m.group(3))]
                nbytes[rel] = nbytes.get(rel, 0) + int(m.group(4))
        self.assertEqual(opens, {k: 2 for k in files})
        self.assertEqual(nbytes, {k: 2 * v for k, v in files.items()})

    # -- order ----------------------------------------------------------------

    def order(self, *args):
        trace = os.path.join(self.tmp, "order.tsv")
        self.run_json("--dataset", "npz", "--epochs", "3", "--batch-size", "4",
                      "--read-amplification", "dlio", "--trace-files", trace, *args)
        rows = read_trace(trace)
        return [[(x[3], x[4]) for x in sorted((r for r in rows if r[0] == ep),
                                              key=lambda r: r[2])] for ep in (1, 2, 3)]

    def test_shuffle(self):
        base = self.order("--sample-shuffle", "off", "--file-shuffle", "off")
        inorder = sorted(base[0])
        self.assertEqual(base[0], inorder, "no shuffle: DLIO's file order")
        self.assertEqual(base[0], base[1])
        a = self.order("--sample-shuffle", "seed", "--seed", "5")
        b = self.order("--sample-shuffle", "seed", "--seed", "5")
        c = self.order("--sample-shuffle", "seed", "--seed", "6")
        for ep in range(3):
            self.assertEqual(sorted(a[ep]), inorder, "a shuffle reads everything once")
        self.assertNotEqual(a[0], a[1], "the order changes per epoch")
        self.assertNotEqual(a[1], a[2])
        self.assertNotEqual(a[0], inorder, "and is not the sorted order")
        self.assertEqual(a, b, "same seed, same orders")
        self.assertNotEqual(a, c, "another seed, another order")
        same = self.order("--sample-shuffle", "seed", "--same-seed-every-epoch")
        self.assertEqual(same[0], same[1])
        r1 = self.order("--sample-shuffle", "random")
        r2 = self.order("--sample-shuffle", "random")
        self.assertNotEqual(r1, r2, "random differs run to run")
        # File shuffle alone keeps each file's samples next to each other.
        f = self.order("--file-shuffle", "seed")
        for ep in f:
            self.assertEqual([ep[i][0] for i in range(0, len(ep), 2)],
                             [ep[i][0] for i in range(1, len(ep), 2)])
        self.assertNotEqual(f[0], inorder)

    # -- metrics --------------------------------------------------------------

    def test_au_with_compute(self):
        r = self.run_json("--dataset", "npz", "--epochs", "2", "--batch-size", "4",
                          "--computation-time", "50ms")
        for e in r["epochs"]:
            self.assertGreater(e["au"], 0.9, e)
            self.assertGreaterEqual(e["compute_s"], 0.050 * e["steps"])
            self.assertLess(e["compute_s"], 0.050 * e["steps"] * 1.2, "sleeps are precise")
        self.assertTrue(r["pass"])
        self.assertEqual(r["config"]["warmup_steps_excluded"], 1)
        s = r["summary"]["step_time_s"]
        self.assertTrue(0.049 < s["p50"] <= s["p90"] <= s["p99"] < 0.2, s)

    def test_au_without_compute(self):
        r = self.run_json("--dataset", "npz", "--epochs", "2", "--batch-size", "4",
                          "--computation-time", "0")
        for e in r["epochs"]:
            self.assertLess(e["au"], 0.05)
            self.assertGreater(e["stall_share"], 0.9)
        self.assertFalse(r["pass"])

    def test_distribution_and_total_steps(self):
        r = self.run_json("--dataset", "npz", "--epochs", "5", "--batch-size", "4",
                          "--computation-time", "uniform:2ms,4ms", "--total-steps", "20")
        self.assertEqual(sum(e["steps"] for e in r["epochs"]), 20)
        self.assertEqual([e["steps"] for e in r["epochs"]], [12, 8])
        for e in r["epochs"]:
            per = e["compute_s"] / e["steps"]
            self.assertTrue(0.002 <= per < 0.006, per)  # mean 3 ms; slack for a loaded CI

    def test_json_keys(self):
        """Keys as tools/drive/drive_report.c documents them; alone, one rank whose
        figures are the job's."""
        r = self.run_json("--dataset", "npz", "--epochs", "2", "--batch-size", "4",
                          "--eval-every", "1", "--computation-time", "1ms")
        self.assertEqual(set(r), TOP_KEYS)
        self.assertEqual(set(r["config"]), CONFIG_KEYS)
        for e in r["epochs"]:
            self.assertTrue(EPOCH_KEYS <= set(e), EPOCH_KEYS - set(e))
            self.assertEqual(set(e["step_time_s"]), PCTS)
            self.assertIn("eval", e)
            self.assertEqual(e["eval"]["samples"], 8, "4 eval files x 2 samples")
        self.assertEqual(set(r["summary"]), SUMMARY_KEYS)
        for k in SUMMARY_KEYS - {"step_time_s", "stall_time_s", "nominal_mib_per_s"}:
            self.assertEqual(set(r["summary"][k]), MOMENTS, k)
            m = r["summary"][k]
            self.assertLessEqual(m["min"], m["mean"] + 1e-9)
            self.assertLessEqual(m["mean"], m["max"] + 1e-9)
        self.assertEqual(r["tool"], "dlio-drive")
        self.assertIsNone(r["cuda"])
        self.assertAlmostEqual(r["summary"]["au"]["mean"],
                               sum(e["au"] for e in r["epochs"]) / 2, places=9)
        self.assertEqual(r["ranks"], 1)
        self.assertEqual(len(r["per_rank"]), 1)
        mine = r["per_rank"][0]
        self.assertEqual(set(mine), RANK_KEYS)
        for e, m in zip(r["epochs"], mine["epochs"]):
            self.assertEqual(set(m), RANK_EPOCH_KEYS)
            self.assertEqual((m["samples"], m["bytes"], m["au"]), (e["samples"], e["bytes"], e["au"]))
            self.assertEqual(e["au_min"], e["au"])
            self.assertEqual(e["barrier_s"], 0, "no barrier alone")

    def test_table_on_terminal_output(self):
        r = drive(["--config", self.cfg, self.data, "--dataset", "npz", "--epochs", "2",
                   "--batch-size", "4", "--computation-time", "1ms"])
        self.assertRegex(r.stdout, r"\n\s+1\s+12\s+48 ")
        self.assertRegex(r.stdout, r"\nAU \d+\.\d% \(threshold 90\.0%\): (PASS|FAIL)")
        self.assertNotIn("\r", r.stderr, "no progress bar without a terminal")

    def test_checkpoints(self):
        ck = os.path.join(self.tmp, "ckpt")
        r = self.run_json("--dataset", "npz", "--batch-size", "4", "--checkpoint-dir", ck,
                          "--checkpoint-size", "1MiB", "--checkpoint-every-steps", "5")
        self.assertEqual([c["step"] for c in r["checkpoints"]], [5, 10])
        for c in r["checkpoints"]:
            p = os.path.join(ck, "global_epoch1_step%d" % c["step"], "model_states-0.bin")
            self.assertEqual(os.path.getsize(p), 1 << 20)
            self.assertEqual(c["bytes"], 1 << 20)

    def test_schedules(self):
        """DLIO's schedules: evaluation after epoch eval_after and every N
        after; checkpoints after an epoch and every N epochs, or every N steps."""
        ck = os.path.join(self.tmp, "sched")
        r = self.run_json("--dataset", "npz", "--epochs", "4", "--batch-size", "8",
                          "--eval-every", "2", "--checkpoint-dir", ck, "--checkpoint-size", "4KiB",
                          "--checkpoint-every-epochs", "2", "--checkpoint-after-epoch", "2")
        self.assertEqual([e["epoch"] for e in r["epochs"] if "eval" in e], [1, 3])
        self.assertEqual([(c["epoch"], c["step"]) for c in r["checkpoints"]], [(2, 12), (4, 24)])
        self.assertEqual(sorted(os.listdir(ck)), ["global_epoch2_step12", "global_epoch4_step24"])
        r = self.run_json("--dataset", "npz", "--epochs", "3", "--batch-size", "8",
                          "--eval-every", "1", "--eval-after", "2", "--seed", "77",
                          "--same-seed-every-epoch")
        self.assertEqual([e["epoch"] for e in r["epochs"] if "eval" in e], [2, 3])
        self.assertEqual(r["config"]["seed"], 77)

    def test_workload_steps_schedule_alone(self):
        """A workload file's step schedule without --checkpoint-dir writes no
        checkpoint (it used to write into /global_epoch1_step2)."""
        wl = dltest.write_config(self.tmp, """
dataset: {data_folder: data/stp/, format: npz, num_files_train: 8, num_samples_per_file: 1,
          record_length_bytes: 4096}
reader: {batch_size: 2}
checkpoint: {steps_between_checkpoints: 2}
""", name="stp.yaml")
        root = os.path.join(self.tmp, "stp")
        dltest.gen(wl, root)
        out = os.path.join(self.tmp, "stp.json")
        drive(["--config", wl, root, "--quiet", "--json", out])
        with open(out) as f:
            self.assertEqual(json.load(f)["checkpoints"], [])

    def test_dlio_workload_file(self):
        wl = dltest.write_config(self.tmp, """
model: {name: unet3d, type: cnn, model_size: 1000}
framework: pytorch
workflow: {generate_data: False, train: True, checkpoint: True}
dataset:
  data_folder: data/unet3d/
  format: npz
  num_files_train: 14
  num_samples_per_file: 1
  record_length_bytes: 40000
reader: {data_loader: pytorch, batch_size: 7, read_threads: 2, file_shuffle: seed,
         sample_shuffle: seed}
train: {epochs: 2, computation_time: 0.01}
metric: {au: 0.85}
""", name="unet3d.yaml")
        root = os.path.join(self.tmp, "dlio")
        dltest.gen(wl, root)
        out = os.path.join(self.tmp, "wl.json")
        drive(["--config", wl, root, "--quiet", "--json", out])
        with open(out) as f:
            r = json.load(f)
        c = r["config"]
        self.assertEqual((c["batch_size"], c["read_threads"], c["epochs"]), (7, 2, 2))
        self.assertEqual((c["file_shuffle"], c["sample_shuffle"]), ("seed", "seed"))
        self.assertEqual(c["computation_time_mean_s"], 0.01)
        self.assertEqual(r["au_threshold"], 0.85)
        self.assertEqual(c["dataset"], "unet3d")
        self.assertTrue(any("checkpoint-dir" in n for n in r["notes"]), r["notes"])
        # DLIO's MB/s: samples/s x record_length in MiB, beside the bytes read.
        self.assertEqual(c["nominal_sample_bytes"], 40000)
        for e in r["epochs"]:
            self.assertAlmostEqual(e["nominal_mib_per_s"],
                                   e["samples_per_s"] * 40000 / 2 ** 20, places=6)
        self.assertAlmostEqual(r["summary"]["nominal_mib_per_s"],
                               r["summary"]["samples_per_s"]["mean"] * 40000 / 2 ** 20, places=6)
        t = subprocess.run([DRIVE, "--config", wl, root, "--epochs", "1"], capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(t.returncode, 0, t.stderr)
        m = re.search(r"throughput: read ([\d.]+) MB/s \(bytes moved, 10\^6\); DLIO's nominal "
                      r"([\d.]+) MiB/s \(samples/s x record_length 40000 bytes", t.stdout)
        self.assertIsNotNone(m, t.stdout)
        # npz files are bigger than their record (the zip and npy headers),
        # and read as DLIO's loader reads them (np.load reads some twice).
        self.assertGreater(float(m.group(1)), float(m.group(2)) * 2 ** 20 / 1e6)
        self.assertIn("reads as DLIO's pytorch loader", t.stdout.splitlines()[0])
        # MLPerf Storage's table: unet3d on h100 is 0.323 s per batch of 7.
        drive(["--config", wl, root, "--quiet", "--json", out, "--accelerator-type", "h100",
               "--epochs", "1", "--computation-time", "1ms"])
        with open(out) as f:
            r = json.load(f)
        self.assertEqual(r["config"]["workload"], "unet3d")
        self.assertEqual(r["config"]["accelerator_type"], "h100")
        self.assertEqual(r["config"]["computation_time_mean_s"], 0.001, "command line wins")
        self.assertEqual(r["au_threshold"], 0.9)
        # The table's own figures (2 steps of 0.323 s).
        drive(["--config", wl, root, "--quiet", "--json", out, "--accelerator-type", "h100",
               "--workload", "unet3d", "--epochs", "1"])
        with open(out) as f:
            r = json.load(f)
        self.assertEqual(r["config"]["computation_time_mean_s"], 0.323)
        self.assertEqual(r["config"]["batch_size"], 7)

    def test_errors(self):
        r = drive(["--config", self.cfg, os.path.join(self.tmp, "nowhere"), "--dataset", "npz"],
                  check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("nowhere", r.stderr)
        r = drive(["--config", self.cfg, self.data, "--dataset", "npz", "--batch-size", "1000"],
                  check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("batch size", r.stderr)
        r = drive(["--config", self.cfg, self.data, "--dataset", "nope"], check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("no dataset nope", r.stderr)
        r = drive(["--config", self.cfg, self.data, "--computation-time", "normal:1"],
                  check=False)
        self.assertEqual(r.returncode, 2)
        # Files shorter than the config: a clear error, not a hang.
        short = os.path.join(self.tmp, "short")
        shutil.copytree(os.path.join(self.data, "tfr"), os.path.join(short, "tfr"))
        victim = sorted(glob.glob(os.path.join(short, "tfr", "train", "*")))[0]
        with open(victim, "r+b") as f:
            f.truncate(0)
        r = drive(["--config", self.cfg, short, "--dataset", "tfr", "--batch-size", "5",
                   "--quiet"], check=False, timeout=60)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("fewer samples", r.stderr)

    def test_cuda(self):
        r = drive(["--config", self.cfg, self.data, "--dataset", "npz", "--batch-size", "4",
                   "--accelerator", "cuda", "--computation-time", "5ms", "--quiet", "--json",
                   os.path.join(self.tmp, "cuda.json")], check=False)
        if r.returncode == 3:
            # No GPU here: the binary says so plainly and does nothing else.
            self.assertRegex(r.stderr, r"no CUDA (driver found|device)|CUDA .*failed")
            self.assertFalse(os.path.exists(os.path.join(self.tmp, "cuda.json")))
            return
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(self.tmp, "cuda.json")) as f:
            j = json.load(f)
        self.assertIsNotNone(j["cuda"])
        g = j["epochs"][0]["gpu"]
        self.assertEqual(g["kernels"], j["epochs"][0]["steps"])
        self.assertGreater(g["kernel_s"], 0.9 * 0.005 * g["kernels"])

    def test_cuda_with_a_stand_in_driver(self):
        """The CUDA path end to end against a stand-in libcuda.so.1 that runs
        everything on the host (copies are memcpy, the kernel sleeps for its
        parameter, events are clock readings): symbols resolve, the PTX names
        its kernel and reads %globaltimer, and the GPU figures add up."""
        cc = shutil.which("cc") or shutil.which("gcc")
        dltest.require(cc is not None, "no C compiler for the stand-in driver")
        libdir = os.path.join(self.tmp, "fakecuda")
        os.makedirs(libdir, exist_ok=True)
        src = os.path.join(libdir, "fake.c")
        with open(src, "w") as f:
            f.write(FAKE_CUDA)
        subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", os.path.join(libdir, "libcuda.so.1"),
                        src], check=True)
        env = dict(os.environ, LD_LIBRARY_PATH=libdir)
        out = os.path.join(self.tmp, "fake.json")
        args = [DRIVE, "--config", self.cfg, self.data, "--dataset", "npz", "--batch-size", "4",
                "--epochs", "2", "--accelerator", "cuda", "--computation-time", "3ms",
                "--json", out]
        r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("dlio-drive stand-in GPU", r.stdout)
        with open(out) as f:
            j = json.load(f)
        self.assertEqual(j["cuda"], {"device": "dlio-drive stand-in GPU"})
        for e in j["epochs"]:
            g = e["gpu"]
            self.assertEqual(g["kernels"], e["steps"])
            # batch x one sample's bytes (about 20000: the npz shape rounds it)
            per_step = g["h2d_bytes"] / e["steps"]
            self.assertEqual(per_step % 4, 0)
            self.assertTrue(4 * 19000 <= per_step <= 4 * 20000, per_step)
            self.assertGreaterEqual(g["kernel_s"], 0.003 * e["steps"])
            self.assertLess(g["kernel_s"], e["compute_s"] + 1e-3)
            self.assertGreaterEqual(g["idle_s"], 0)
            self.assertLess(g["idle_s"], e["wall_s"])
            self.assertAlmostEqual(g["gpu_stall_share"], g["idle_s"] / (g["idle_s"] + g["kernel_s"]),
                                   places=6)
            self.assertGreater(e["au"], 0.5)
        # A driver without a device: a clear message and exit status 3.
        env["FAKE_CUDA_NO_DEVICE"] = "1"
        r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(r.returncode, 3)
        self.assertIn("no CUDA device", r.stderr)


def drive_has_mpi():
    r = subprocess.run([DRIVE, "--version"], capture_output=True, text=True)
    return "(MPI:" in r.stdout


class MpiRanks(unittest.TestCase):
    """mpirun -np N dlio-drive: each rank one accelerator reading DLIO's
    share of the samples, an all-reduce after every step, one report."""

    @classmethod
    def setUpClass(cls):
        if not os.access(DRIVE, os.X_OK):
            raise unittest.SkipTest("no dlio-drive binary at " + DRIVE)
        cls.mpirun = dltest.mpirun()
        cls.why = ("" if cls.mpirun and drive_has_mpi() else
                   "dlio-drive built without MPI" if cls.mpirun else
                   "no Open MPI mpirun (apt-get install openmpi-bin libopenmpi-dev)")
        cls.tmp = tempfile.mkdtemp(prefix="dlio-drive-mpi-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, True)
        cls.cfg = dltest.write_config(cls.tmp, CONFIG)
        cls.data = dltest.gen(cls.cfg, os.path.join(cls.tmp, "data"))

    def setUp(self):
        dltest.require(not self.why, self.why)

    def mpi(self, n, args, check=True, timeout=120):
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OMPI_MCA_rmaps_base_oversubscribe="1")
        cmd = [self.mpirun, "--oversubscribe", "-np", str(n)]
        if os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
        cmd += [DRIVE, "--config", self.cfg, self.data] + list(args)
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        if check and r.returncode != 0:
            raise AssertionError("%s failed (%d):\n%s%s" % (" ".join(cmd), r.returncode,
                                                           r.stdout, r.stderr))
        return r

    def run_ranks(self, n, ds, *args, epochs=2):
        out = os.path.join(self.tmp, "%s-%d.json" % (ds, n))
        trace = os.path.join(self.tmp, "%s-%d.tsv" % (ds, n))
        for old in glob.glob(trace + "*"):
            os.unlink(old)
        r = self.mpi(n, ["--dataset", ds, "--epochs", str(epochs), "--quiet", "--json", out,
                         "--trace-files", trace] + list(args))
        with open(out) as f:
            j = json.load(f)
        # One trace per rank, FILE.RANK, and only those.
        self.assertEqual(sorted(glob.glob(trace + "*")),
                         sorted("%s.%d" % (trace, q) for q in range(n)))
        rows = {q: read_trace("%s.%d" % (trace, q)) for q in range(n)}
        return j, rows, r

    def check_report(self, j, n, epochs, steps, batch):
        """The job's figures are the ranks' combined as DLIO combines them."""
        self.assertEqual(j["ranks"], n)
        self.assertEqual(set(j), TOP_KEYS)
        self.assertEqual([p["rank"] for p in j["per_rank"]], list(range(n)))
        for p in j["per_rank"]:
            self.assertEqual(set(p), RANK_KEYS)
            self.assertEqual(len(p["epochs"]), epochs)
            for e in p["epochs"]:
                self.assertEqual(set(e), RANK_EPOCH_KEYS)
                # The all-reduce keeps the ranks in step: the same steps each.
                self.assertEqual(e["steps"], steps)
                self.assertEqual(e["samples"], steps * batch)
                self.assertGreaterEqual(e["barrier_s"], 0)
        for i, e in enumerate(j["epochs"]):
            ranks = [p["epochs"][i] for p in j["per_rank"]]
            self.assertTrue(EPOCH_KEYS <= set(e))
            self.assertEqual(e["steps"], steps)
            self.assertEqual(e["samples"], sum(x["samples"] for x in ranks))
            self.assertEqual(e["bytes"], sum(x["bytes"] for x in ranks))
            self.assertEqual(e["files_opened"], sum(x["files_opened"] for x in ranks))
            self.assertAlmostEqual(e["samples_per_s"], sum(x["samples_per_s"] for x in ranks),
                                   delta=1e-6 * e["samples_per_s"])
            self.assertAlmostEqual(e["au"], sum(x["au"] for x in ranks) / n, places=9)
            self.assertAlmostEqual(e["au_min"], min(x["au"] for x in ranks), places=12)
            self.assertAlmostEqual(e["wall_s"], max(x["wall_s"] for x in ranks), places=12)
        self.assertAlmostEqual(j["au_min"], min(p["au_mean"] for p in j["per_rank"]), places=12)
        self.assertAlmostEqual(j["summary"]["au"]["mean"],
                               sum(e["au"] for e in j["epochs"]) / epochs, places=9)

    def check_shards(self, rows, n, epochs, want, span):
        """Every (file, sample) of `want` once per epoch over all ranks; no
        rank touches another's: span(rank) says which files a rank may read."""
        for ep in range(1, epochs + 1):
            seen = []
            for q in range(n):
                mine = [(x[3], x[4]) for x in rows[q] if x[0] == ep]
                for f, _ in mine:
                    self.assertIn(f, span(q), "rank %d read %s, outside its share" % (q, f))
                seen += mine
            self.assertEqual(sorted(seen), sorted(want), "epoch %d: each sample once" % ep)

    def test_npz_samples_two_and_four_ranks(self):
        """Per-sample reads (DLIO's pytorch reader): rank r owns global samples
        [r * ceil(T/P), (r + 1) * ceil(T/P)), shuffled within its range."""
        files = sorted(self_files(self.data, "npz"))
        want = [(f, s) for f in files for s in range(2)]
        for n in (2, 4):
            with self.subTest(ranks=n):
                j, rows, _ = self.run_ranks(n, "npz", "--batch-size", "4", "--read-amplification",
                                            "dlio", "--sample-shuffle", "seed",
                                            "--computation-time", "2ms")
                per = 48 // n
                self.check_report(j, n, 2, per // 4, 4)
                self.check_shards(rows, n, 2, want,
                                  lambda q: set(files[q * per // 2:(q + 1) * per // 2]))
                for q in range(n):
                    # Global sample g = 2 * file index + sample lies in the range.
                    got = sorted(2 * files.index(x[3]) + x[4] for x in rows[q] if x[0] == 1)
                    self.assertEqual(got, list(range(q * per, (q + 1) * per)))
                    # Shuffled: not the sorted order, and not the same in epoch 2.
                    order = [(x[3], x[4]) for x in sorted(rows[q], key=lambda x: (x[0], x[2]))]
                    self.assertNotEqual(order[:per], sorted(order[:per]))
                    self.assertNotEqual(order[:per], order[per:])
                # Compute counts in AU. A reader reads a whole batch, as a
                # PyTorch worker does, so a step waits for 4 reads in a row;
                # with 4 ranks on 2 loaded cores AU sits near 0.5.
                self.assertGreater(j["au_mean"], 0.3, "2 ms of compute per step")

    def test_ranks_are_one_job_on_a_mount(self):
        """The ranks of one mpirun are one job in the mount's accounting
        (fs/clients.c: PMIX_NAMESPACE / OMPI_MCA_ess_base_jobid in the ranks'
        environment), though each rank leads its own process group: one row
        in stats.json with both processes, and under share.policy fair one
        job that gets the whole device."""
        dltest.require(dltest.fuse_available(), "/dev/fuse or fusermount3 not available")
        cfg = dltest.write_config(self.tmp, CONFIG + (
            "pacer: {read: {bandwidth: 400MB/s}, share: {policy: fair}}\n"
            "cache: {policy: none}\n"), name="fair.yaml")
        mnt = tempfile.mkdtemp(prefix="mnt-", dir=self.tmp)
        out = os.path.join(self.tmp, "job.json")
        with dltest.mounted(cfg, mountpoint=mnt):
            env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
            cmd = [self.mpirun, "--oversubscribe", "-np", "2"]
            if os.geteuid() == 0:
                cmd.append("--allow-run-as-root")
            r = subprocess.run(cmd + [DRIVE, "--config", cfg, mnt, "--dataset", "npz",
                                      "--epochs", "1", "--quiet", "--json", out],
                               capture_output=True, text=True, timeout=120, env=env,
                               start_new_session=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            with open(os.path.join(mnt, ".dliofs", "stats.json")) as f:
                s = json.load(f)
        with open(out) as f:
            j = json.load(f)
        jobs = [x for x in s["jobs"] if x["classes"]["read"]["bytes"]]
        self.assertEqual(len(jobs), 1, json.dumps(s["jobs"], indent=1))
        job = jobs[0]
        self.assertTrue(job["name"].startswith("mpi ") and "dlio-drive" in job["name"], job)
        self.assertEqual(job["processes"], 2, job)
        self.assertEqual(job["classes"]["read"]["bytes"],
                         sum(e["bytes"] for e in j["epochs"]), "every rank's reads in it")
        self.assertEqual(job["classes"]["read"]["share"]["bandwidth_Bps"], 400000000,
                         "alone on the device under fair sharing")

    def test_npz_files_with_file_shuffle(self):
        """Whole files, file shuffle on: the file list is shuffled the same on
        every rank (one seed), so the shares stay disjoint and change per epoch."""
        files = sorted(self_files(self.data, "npz"))
        sizes = self_files(self.data, "npz")
        j, rows, _ = self.run_ranks(4, "npz", "--batch-size", "2", "--file-shuffle", "seed")
        self.check_report(j, 4, 2, 6, 2)
        for ep in (1, 2):
            read = [x[3] for q in range(4) for x in rows[q] if x[0] == ep]
            self.assertEqual(sorted(read), files, "epoch %d: each file once" % ep)
            self.assertEqual(j["epochs"][ep - 1]["bytes"], sum(sizes.values()))
        shares = [{x[3] for x in rows[q] if x[0] == 1} for q in range(4)]
        self.assertNotEqual(shares[0], set(files[:6]), "shuffled files, not the first six")
        self.assertNotEqual(shares[0], {x[3] for x in rows[0] if x[0] == 2})

    def test_tfrecord_files_round_robin(self):
        """tf.data's shard(P, r): rank r streams files r, r + P, ... whole."""
        files = sorted(self_files(self.data, "tfr"))
        j, rows, _ = self.run_ranks(2, "tfr", "--batch-size", "5", "--computation-time", "1ms")
        self.check_report(j, 2, 2, 6, 5)
        want = [(f, k) for f in files for k in range(10)]
        self.check_shards(rows, 2, 2, want, lambda q: set(files[q::2]))
        sizes = self_files(self.data, "tfr")
        self.assertEqual(j["epochs"][0]["bytes"], sum(sizes.values()))

    def test_uneven_split_refused(self):
        """6 tfrecord files over 4 ranks: ranks 2 and 3 get one file (10
        samples) but every rank takes 3 steps of 5. DLIO would crash or
        repeat; we say so before reading anything."""
        r = self.mpi(4, ["--dataset", "tfr", "--batch-size", "5", "--quiet"], check=False)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("rank 2's share holds 10 samples", r.stderr)
        self.assertEqual(r.stderr.count("share holds"), 1, "said once, by rank 0")

    def test_a_failing_rank_stops_all(self):
        """A file only rank 1 reads is truncated: rank 1 fails, the others
        learn it at the next all-reduce; nobody hangs, the exit status is 1."""
        bad = os.path.join(self.tmp, "bad")
        shutil.rmtree(bad, True)
        shutil.copytree(os.path.join(self.data, "tfr"), os.path.join(bad, "tfr"))
        with open(sorted(glob.glob(os.path.join(bad, "tfr", "train", "*")))[3], "r+b") as f:
            f.truncate(100)
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        cmd = [self.mpirun, "--oversubscribe", "-np", "2", DRIVE, "--config", self.cfg, bad,
               "--dataset", "tfr", "--batch-size", "5", "--quiet", "--computation-time", "1ms"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("rank 0: run stopped: another rank failed", r.stderr)
        self.assertIn("rank 1: run stopped", r.stderr)


class WithoutMpi(unittest.TestCase):
    """The single-rank build under a launcher: it says so and runs its rank
    (the launcher's variables) alone: its shard, its own report."""

    def test_launcher_without_mpi(self):
        if not os.access(DRIVE, os.X_OK):
            raise unittest.SkipTest("no dlio-drive binary")
        if drive_has_mpi():
            raise unittest.SkipTest("this dlio-drive has MPI (MpiRanks covers it)")
        tmp = tempfile.mkdtemp(prefix="dlio-drive-nompi-")
        self.addCleanup(shutil.rmtree, tmp, True)
        cfg = dltest.write_config(tmp, CONFIG)
        data = dltest.gen(cfg, os.path.join(tmp, "data"))
        out = os.path.join(tmp, "r.json")
        env = dict(os.environ, PMI_SIZE="3", PMI_RANK="1")
        r = subprocess.run([DRIVE, "--config", cfg, data, "--dataset", "npz", "--batch-size", "4",
                            "--quiet", "--json", out], capture_output=True, text=True, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("built without MPI", r.stderr)
        # Rank 1 of 3 reports alone: FILE.RANK, its third of the samples.
        self.assertFalse(os.path.exists(out))
        with open(out + ".1") as f:
            j = json.load(f)
        self.assertEqual((j["ranks"], j["job_ranks"], j["per_rank"][0]["rank"]), (1, 3, 1))
        self.assertEqual(j["epochs"][0]["samples"], 16, "rank 1's third of 48")
        self.assertTrue(any("built without MPI" in n for n in j["notes"]), j["notes"])


def self_files(data, ds, split="train"):
    root = os.path.join(data, ds)
    return {os.path.relpath(p, root): os.path.getsize(p)
            for p in glob.glob(os.path.join(root, split, "**", "*"), recursive=True)
            if os.path.isfile(p) and not p.endswith(".idx")}


FAKE_CUDA = r"""
#include <stdlib.h>
#include <string.h>
#include <time.h>
typedef int CUresult;
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}
static int dummy;
CUresult cuInit(unsigned f) { (void)f; return 0; }
CUresult cuDeviceGetCount(int *n) { *n = getenv("FAKE_CUDA_NO_DEVICE") ? 0 : 1; return 0; }
CUresult cuDeviceGet(int *d, int i) { *d = i; return i ? 101 : 0; }
CUresult cuDeviceGetName(char *b, int n, int d) { (void)d; strncpy(b, "dlio-drive stand-in GPU", n); return 0; }
CUresult cuDevicePrimaryCtxRetain(void **c, int d) { (void)d; *c = &dummy; return 0; }
CUresult cuDevicePrimaryCtxRelease_v2(int d) { (void)d; return 0; }
CUresult cuCtxSetCurrent(void *c) { (void)c; return 0; }
CUresult cuModuleLoadData(void **m, const void *img)
{
    const char *p = img;
    if (!strstr(p, ".entry dl_spin") || !strstr(p, "%globaltimer") || !strstr(p, ".target sm_"))
        return 218;
    *m = &dummy;
    return 0;
}
CUresult cuModuleUnload(void *m) { (void)m; return 0; }
CUresult cuModuleGetFunction(void **f, void *m, const char *n) { (void)m; *f = &dummy; return strcmp(n, "dl_spin") ? 500 : 0; }
CUresult cuMemAlloc_v2(unsigned long long *p, size_t n) { *p = (unsigned long long)malloc(n); return *p ? 0 : 2; }
CUresult cuMemFree_v2(unsigned long long p) { free((void *)p); return 0; }
CUresult cuMemHostAlloc(void **p, size_t n, unsigned f) { (void)f; *p = malloc(n); return *p ? 0 : 2; }
CUresult cuMemFreeHost(void *p) { free(p); return 0; }
CUresult cuMemcpyHtoDAsync_v2(unsigned long long d, const void *s, size_t n, void *st) { (void)st; memcpy((void *)d, s, n); return 0; }
CUresult cuStreamCreate(void **s, unsigned f) { (void)f; *s = &dummy; return 0; }
CUresult cuStreamDestroy_v2(void *s) { (void)s; return 0; }
CUresult cuEventCreate(void **e, unsigned f) { (void)f; *e = calloc(1, sizeof(double)); return 0; }
CUresult cuEventDestroy_v2(void *e) { free(e); return 0; }
CUresult cuEventRecord(void *e, void *s) { (void)s; *(double *)e = now(); return 0; }
CUresult cuEventSynchronize(void *e) { (void)e; return 0; }
CUresult cuEventElapsedTime(float *ms, void *a, void *b) { *ms = (float)((*(double *)b - *(double *)a) * 1e3); return 0; }
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned sh, void *st, void **params, void **extra)
{
    (void)f; (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)sh; (void)st; (void)extra;
    unsigned long long ns = *(unsigned long long *)params[0];
    struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
    nanosleep(&ts, NULL);
    return 0;
}
CUresult cuGetErrorString(CUresult r, const char **s) { (void)r; *s = "stand-in error"; return 0; }
"""


class OverheadBench(unittest.TestCase):
    """dlio-drive's own cost: page-cached data in /dev/shm, zero compute, next
    to fio reading the same files with the same number of threads. Prints
    figures; asserts only that everything ran."""

    EPOCHS = 10

    def test_overhead(self):
        if not os.access(DRIVE, os.X_OK):
            raise unittest.SkipTest("no dlio-drive binary")
        base = "/dev/shm" if os.path.isdir("/dev/shm") else None
        tmp = tempfile.mkdtemp(prefix="dlio-drive-bench-", dir=base)
        self.addCleanup(shutil.rmtree, tmp, True)
        # Two subfolders: one per fio job (fio's opendir takes a directory).
        cfg = dltest.write_config(tmp, """
seed: 3
datasets:
  - name: small
    format: npz
    files: 2000
    samples_per_file: 1
    sample_size: 64KiB
    subfolders: 2
  - name: large
    format: npz
    files: 8
    samples_per_file: 1
    sample_size: 64MiB
    subfolders: 2
""")
        data = dltest.gen(cfg, os.path.join(tmp, "data"))
        js = os.path.join(tmp, "r.json")

        def run(ds, *extra):
            drive(["--config", cfg, data, "--dataset", ds, "--quiet", "--json", js,
                   "--computation-time", "0", "--epochs", str(self.EPOCHS), "--read-threads",
                   "2"] + list(extra))
            with open(js) as f:
                return json.load(f)

        def tree_bytes(ds):
            return sum(os.path.getsize(p) for p in
                       glob.glob(os.path.join(data, ds, "train", "*", "*")))

        # Small files, read whole as np.load does: 2000 x 64 KiB.
        r = run("small", "--batch-size", "16")
        sps = r["summary"]["samples_per_s"]["mean"]
        files = sorted(glob.glob(os.path.join(data, "small", "train", "*", "*")))
        t0 = time.monotonic()
        for p in files:
            with open(p, "rb", buffering=0) as f:
                while f.read(1 << 20):
                    pass
        py = len(files) / (time.monotonic() - t0)
        fio_small = self.fio(os.path.join(data, "small", "train"), "64k")
        per_file = tree_bytes("small") / len(files)
        print("\nsmall files (2000 x 64 KiB npz, page cache, 2 threads, %d epochs):" % self.EPOCHS)
        print("  dlio-drive        %9.0f samples/s (%.0f MB/s, stdev %.0f samples/s)" % (
            sps, r["summary"]["mb_per_s"]["mean"], r["summary"]["samples_per_s"]["stdev"]))
        print("  python open+read  %9.0f files/s (1 thread)" % py)
        if fio_small:
            fps = fio_small / per_file
            print("  fio psync 64k     %9.0f files/s (%.0f MB/s); dlio-drive / fio = %.2f" % (
                fps, fio_small / 1e6, sps / fps))
        # Large files: 8 x 64 MiB npz read whole in 4 MiB reads.
        r = run("large", "--batch-size", "2")
        mbs = r["summary"]["mb_per_s"]["mean"]
        fio_large = self.fio(os.path.join(data, "large", "train"), "4m")
        print("large files (8 x 64 MiB npz, page cache, 2 threads, %d epochs):" % self.EPOCHS)
        print("  dlio-drive        %9.0f MB/s (stdev %.0f)" % (
            mbs, r["summary"]["mb_per_s"]["stdev"]))
        if fio_large:
            print("  fio psync 4 MiB   %9.0f MB/s; dlio-drive / fio = %.2f" % (
                fio_large / 1e6, mbs * 1e6 / fio_large))
        self.assertGreater(sps, 0)
        self.assertGreater(mbs, 0)

    def fio(self, train, bs):
        """Sequential read bandwidth (bytes/s) of two fio jobs, one per
        subfolder of TRAIN, each file read whole EPOCHS times; None without fio."""
        fio = shutil.which("fio")
        if not fio:
            print("  (fio not installed)")
            return None
        args = [fio, "--output-format=json", "--group_reporting"]
        for sub in sorted(os.listdir(train)):
            args += ["--name=" + sub, "--opendir=" + os.path.join(train, sub), "--rw=read",
                     "--bs=" + bs, "--ioengine=psync", "--loops=%d" % self.EPOCHS,
                     "--invalidate=0"]
        r = subprocess.run(args, capture_output=True, text=True, timeout=600)
        if r.returncode != 0 or "{" not in r.stdout:
            print("  (fio failed: %s)" % r.stderr.strip()[:200])
            return None
        j = json.loads(r.stdout[r.stdout.index("{"):])
        return float(j["jobs"][0]["read"]["bw_bytes"])


if __name__ == "__main__":
    dltest.main()
