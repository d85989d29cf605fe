"""dlio-drive --loader mlperf-v3: the I/O of MLPerf Storage v3, which runs the
MLCommons DLIO fork (mlcommons/DLIO_local_changes), checked on the mount's
own request trace (`dliofs trace`) and on strace:

- Training reads (reader/_local_fs_iterable_mixin.py): each file read whole,
  by one thread of a pool of min(64, files in a window) threads per reader
  thread, many files in flight at once (DLIO 2.0.0's loader: one file per
  reader thread), each file's bytes exactly once an epoch, in CPython's
  readall() calls (one read of st_size + 1, one that returns 0).
- Checkpoints (checkpointing/pytorch_checkpointing.py through mlpstorage's
  StreamingCheckpointing, file backend): written in 32 MiB write() calls,
  each range POSIX_FADV_DONTNEED'ed as it is written, one fsync a file;
  read back by N threads at once (4, the fork's local-file-system setting;
  8 with --checkpoint-readers 8, StreamingCheckpointing's own default), each
  a contiguous block of ceil(size / N) bytes in pread()s of 128 MiB, with
  POSIX_FADV_RANDOM on its descriptor; every byte written read back once.
The previous dlio-drive had no --loader (exit 2, "unrecognized option")."""
import csv
import io
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest
from collections import defaultdict

import sys  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))  # tests/: dltest
import dltest  # noqa: E402
from test_dlio_drive import DRIVE

MiB = 1 << 20

MOUNT = """datasets:
  - {name: npz, format: npz, files: 24, sample_size: 1MiB}
backing:
  - {at: ckpt, sink: true}
cache: {policy: none}
pacer:
  read: {latency: 5ms}
"""

# One file of 600 MiB (+ 5 bytes: the last write and read are short) and two
# small ones: DLIO's model, optimizer and layer files.
WORKLOAD = """model: llm_small
framework: pytorch
workflow:
  generate_data: False
  train: False
  checkpoint: True
checkpoint:
  checkpoint_folder: checkpoints/llm
  model_size: %d
  type: rank_zero
  optimization_groups: [1000000]
  num_layers: 1
  layer_parameters: [300000]
""" % (600 * MiB + 5)
MODEL = 600 * MiB + 5


def trace_rows(trc):
    r = subprocess.run([os.path.join(dltest.BUILD, "dlio-trace"), "export", "--csv", trc],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise AssertionError("dlio-trace export: " + r.stderr)
    return list(csv.DictReader(io.StringIO(r.stdout)))


def max_overlap(rows):
    """Most requests of rows in flight at one time."""
    ev = []
    for x in rows:
        s = int(x["start_ns"])
        ev += [(s, 1), (s + int(x["dur_ns"]), -1)]
    cur = best = 0
    for _, d in sorted(ev):
        cur += d
        best = max(best, cur)
    return best


def files_in_flight(rows):
    """Most files being read at one time (a file from its first request's
    start to its last one's end: the kernel's readahead sends one reader's
    requests for a file in parallel, so requests alone do not count
    threads)."""
    span = {}
    for x in rows:
        s, e = int(x["start_ns"]), int(x["start_ns"]) + int(x["dur_ns"])
        lo, hi = span.get(x["file"], (s, e))
        span[x["file"]] = (min(lo, s), max(hi, e))
    return max_overlap([{"start_ns": lo, "dur_ns": hi - lo} for lo, hi in span.values()])


def strace_calls(log):
    """[(tid, call, args, result, file)] with interrupted calls joined again;
    file: the path the call's descriptor was opened with (None: none)."""
    pending, out = {}, []
    with open(log) as f:
        for line in f:
            line = line.rstrip()
            if line.endswith("<unfinished ...>"):
                pending[line.split()[0]] = line[:-len("<unfinished ...>")]
                continue
            m = re.match(r"^(\d+)\s+<\.\.\. \w+ resumed>(.*)$", line)
            if m:
                line = pending.pop(m.group(1), m.group(1) + " ?(") + m.group(2)
            m = re.match(r"^(\d+)\s+(\w+)\((.*)\)\s*=\s*(-?\d+)", line)
            if m:
                out.append((m.group(1), m.group(2), m.group(3), int(m.group(4))))
    live, calls = {}, []
    for tid, call, args, res in out:
        if call == "openat":
            path = re.search(r'"([^"]*)"', args).group(1)
            if res >= 0:
                live[res] = path
            calls.append((tid, call, args, res, path))
            continue
        fd = int(args.split(",")[0].strip() or -1)
        calls.append((tid, call, args, res, live.get(fd)))
        if call == "close":
            live.pop(fd, None)
    return calls


class MlperfV3(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(DRIVE, os.X_OK):
            raise unittest.SkipTest("no dlio-drive binary at " + DRIVE)
        cls.tmp = tempfile.mkdtemp(prefix="dlio-drive-mlperf-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, True)
        cls.cfg = dltest.write_config(cls.tmp, MOUNT, name="mnt.yaml")
        cls.wl = dltest.write_config(cls.tmp, WORKLOAD, name="llm.yaml")

    def setUp(self):
        dltest.require(dltest.fuse_available(), "/dev/fuse or fusermount3 not available")

    def traced(self, mnt, trc, ops, cmd, strace_log=None):
        subprocess.run([dltest.DLIOFS, "trace", "start", mnt, trc, ops], check=True,
                       capture_output=True)
        try:
            if strace_log:
                strace = shutil.which("strace")
                dltest.require(strace is not None, "strace not installed")
                cmd = [strace, "-f", "-qq", "-o", strace_log, "-e",
                       "trace=openat,close,read,write,pread64,fadvise64,fsync"] + cmd
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        finally:
            subprocess.run([dltest.DLIOFS, "trace", "stop", mnt], capture_output=True)
        if r.returncode != 0 and strace_log and "ptrace" in r.stderr:
            dltest.require(False, "strace cannot trace here: " + r.stderr.strip())
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return r

    def train(self, mnt, loader):
        trc = os.path.join(self.tmp, "train-%s.trc" % loader)
        out = os.path.join(self.tmp, "train-%s.json" % loader)
        self.traced(mnt, trc, "read,open",
                    [DRIVE, "--config", self.cfg, mnt, "--dataset", "npz", "--loader", loader,
                     "--read-threads", "2", "--batch-size", "4", "--epochs", "1", "-q",
                     "--json", out])
        with open(out) as f:
            j = json.load(f)
        reads = [x for x in trace_rows(trc)
                 if x["op"] == "read" and x["file"].startswith("npz/train/")]
        return j, reads

    def test_training_reads_whole_files_by_a_pool(self):
        with dltest.mounted(self.cfg) as mnt:
            sizes = {"npz/train/" + f: os.path.getsize(os.path.join(mnt, "npz", "train", f))
                     for f in os.listdir(os.path.join(mnt, "npz", "train"))}
            j, reads = self.train(mnt, "mlperf-v3")
            jd, reads_dlio = self.train(mnt, "dlio")
        self.assertEqual(len(sizes), 24)
        self.assertEqual(j["config"]["loader"], "mlperf-v3")
        # 2 reader threads, 12 files each: a pool of min(64, 12) threads each.
        self.assertEqual(j["config"]["loader_threads"], 24)
        e = j["epochs"][0]
        self.assertEqual(e["bytes"], sum(sizes.values()))
        self.assertEqual(e["files_opened"], 24)
        self.assertEqual(e["read_calls"], 2 * 24, "readall: st_size + 1, then EOF")
        # Whole files, once each, each by one thread of the pool.
        per_file, tids = defaultdict(list), defaultdict(set)
        for x in reads:
            per_file[x["file"]].append((int(x["offset"]), int(x["result"])))
            tids[x["file"]].add(x["tid"])
        self.assertEqual(set(per_file), set(sizes))
        for f, rs in per_file.items():
            rs.sort()
            pos = 0
            for off, n in rs:
                self.assertEqual(off, pos, "%s: not one pass over the file" % f)
                pos += n
            self.assertEqual(pos, sizes[f], f)
            self.assertEqual(len(tids[f]), 1, "%s read by threads %s" % (f, tids[f]))
        pool = {x["tid"] for x in reads}
        self.assertGreaterEqual(len(pool), 12, "threads %d" % len(pool))
        self.assertGreaterEqual(files_in_flight(reads), 6, "files in flight at once")
        # DLIO 2.0.0's loader on the same mount: its 2 reader threads. (Not
        # its files in flight: the traced spans of one thread's consecutive
        # files overlap a little, up to 5 files were seen with 2 threads.)
        self.assertEqual(jd["config"]["loader"], "dlio")
        self.assertLessEqual(len({x["tid"] for x in reads_dlio}), 2)

    def checkpoint(self, mnt, readers):
        out = os.path.join(mnt, "ckpt", "llm%d" % readers)
        trc = os.path.join(self.tmp, "ck%d.trc" % readers)
        log = os.path.join(self.tmp, "ck%d.strace" % readers)
        extra = ["--checkpoint-readers", str(readers)] if readers != 4 else []
        r = self.traced(mnt, trc, "read,write",
                        [DRIVE, "--config", self.wl, "--checkpoint-workload", out, "--loader",
                         "mlperf-v3", "--json", "-", "-q"] + extra, strace_log=log)
        j = json.loads(r.stdout)
        rows = [x for x in trace_rows(trc) if x["file"].endswith("model-1-1-0.pt")]
        return j, rows, strace_calls(log)

    def check_checkpoint(self, readers, j, rows, calls):
        o = j["overall"]
        self.assertEqual(o["bytes"], MODEL + 3 * 1000000 + 300000)
        self.assertEqual(o["read_bytes"], o["bytes"])
        # The model file's calls, from strace.
        mine = [(tid, call, args, res) for tid, call, args, res, f in calls
                if f and f.endswith("/model-1-1-0.pt")]
        opens = [(tid, "O_WRONLY" in args) for tid, call, args, res in mine if call == "openat"]
        self.assertEqual(sorted(w for _, w in opens), [False] * readers + [True], opens)
        writes = [res for tid, call, args, res in mine if call == "write"]
        self.assertEqual(writes, [32 * MiB] * (MODEL // (32 * MiB)) + [MODEL % (32 * MiB)])
        drops = [args for tid, call, args, res in mine
                 if call == "fadvise64" and "DONTNEED" in args]
        self.assertEqual(len(drops), len(writes) + sum(1 for tid, call, args, res in mine
                                                       if call == "pread64"),
                         "a DONTNEED after each write and each pread")
        self.assertEqual(sum(1 for tid, call, args, res in mine if call == "fsync"), 1)
        self.assertEqual(sum(1 for tid, call, args, res in mine
                             if call == "fadvise64" and "RANDOM" in args), readers)
        block = -(-MODEL // readers)
        preads = defaultdict(list)
        for tid, call, args, res in mine:
            if call == "pread64":
                preads[tid].append((int(args.rsplit(",", 1)[1]), res))
        self.assertEqual(len(preads), readers)
        starts = []
        for tid, ps in preads.items():
            lo = ps[0][0]
            self.assertEqual(lo % block, 0)
            hi = min(lo + block, MODEL)
            want, pos = [], lo
            while pos < hi:
                want.append((pos, min(128 * MiB, hi - pos)))
                pos += want[-1][1]
            self.assertEqual(ps, want, "thread %s: 128 MiB preads over its block" % tid)
            starts.append(lo)
        self.assertEqual(sorted(starts), [i * block for i in range(readers)])
        # The mount saw the same: the model file written whole, then read
        # whole by `readers` threads at once, each inside its own block.
        wr = [x for x in rows if x["op"] == "write"]
        rd = [x for x in rows if x["op"] == "read"]
        self.assertEqual(sum(int(x["result"]) for x in wr), MODEL)
        self.assertEqual(sum(int(x["result"]) for x in rd), MODEL)
        by_tid = defaultdict(list)
        for x in rd:
            by_tid[x["tid"]].append((int(x["offset"]), int(x["offset"]) + int(x["result"])))
        self.assertEqual(len(by_tid), readers)
        for tid, spans in by_tid.items():
            lo = min(s for s, _ in spans)
            self.assertEqual(lo % block, 0)
            self.assertLessEqual(max(e for _, e in spans), lo + block)
        self.assertGreaterEqual(max_overlap(rd), min(readers, 2) + (readers > 2),
                                "blocks read at the same time")

    def test_checkpoint_streams(self):
        with dltest.mounted(self.cfg) as mnt:
            for readers in (4, 8):
                with self.subTest(readers=readers):
                    j, rows, calls = self.checkpoint(mnt, readers)
                    self.check_checkpoint(readers, j, rows, calls)


if __name__ == "__main__":
    dltest.main()
