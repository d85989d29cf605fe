"""dlio-trace on golden traces of known workloads, written here with struct
in the layout of include/dliofs/trace.h (independently of the C code), and
on a trace the C recorder wrote (`dlio-trace synth`), parsed here.

Workloads: a sequential read of one file; a shuffled epoch of one sample
per file; two processes each reading their half of the files."""
import csv
import io
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))  # tests/: dltest
import dltest  # noqa: E402

DLIO_TRACE = os.environ.get("DLIO_TRACE", os.path.join(dltest.BUILD, "dlio-trace"))

HEADER = struct.Struct("<8sIIQQII256s")
REC = struct.Struct("<QIHBBIIIiQQII")
NAME = struct.Struct("<QII")
FOOTER = struct.Struct("<QQQQQ8s")
MAGIC = b"DLIOTRC1"
OPS = {"lookup": 1, "getattr": 2, "open": 3, "read": 4, "write": 5, "readdir": 6,
       "opendir": 7, "release": 8, "statfs": 9, "create": 10, "fsync": 11, "other": 12}
EPOCH_NS = 1700000000123456789
START_MONO = 5000000000
KiB = 1024


class Rec:
    """One request; times in ns relative to the trace start."""

    def __init__(self, t, op, pid, fid, off=0, size=0, result=None, dur=50000, tid=None,
                 queue=0, hit=False, job=0):
        self.t, self.op, self.pid, self.fid, self.job = t, op, pid, fid, job
        self.off, self.size, self.dur = off, size, dur
        self.tid = pid if tid is None else tid
        self.result = size if result is None else result
        self.queue, self.hit = queue, hit

    def pack(self):
        flags = (1 if self.hit else 0) | (2 if self.result < 0 else 0)
        return REC.pack(START_MONO + self.t, self.dur & 0xFFFFFFFF, self.dur >> 32, OPS[self.op],
                        flags, self.queue, self.pid, self.tid, self.result, self.fid, self.off,
                        self.size, self.job)


def write_trace(path, recs, names, dropped=0, footer=True, shuffle_batches=True, config="golden.yaml",
                version=1, ops=None):
    """Records go in out of order (writer batches) unless told otherwise."""
    assert REC.size == 56 and HEADER.size == 296 and FOOTER.size == 48
    body = [r.pack() for r in recs]
    if shuffle_batches:
        # Writer batches: chunks of records from different stripes interleave.
        chunks = [body[i:i + 7] for i in range(0, len(body), 7)]
        random.Random(5).shuffle(chunks)
        body = [b for c in chunks for b in c]
    mask = sum(1 << OPS[o] for o in (ops or OPS))
    out = HEADER.pack(MAGIC, version, REC.size, EPOCH_NS, START_MONO, mask, 0, config.encode())
    out += b"".join(body)
    names_off = len(out)
    for fid in sorted(names):
        nm = names[fid].encode()
        out += NAME.pack(fid, len(nm), 0) + nm
    if footer:
        end = START_MONO + max([r.t + r.dur for r in recs] + [0]) + 1000
        out += FOOTER.pack(len(recs), dropped, names_off, len(names), end, MAGIC)
    with open(path, "wb") as f:
        f.write(out)
    return path


def seq_one_file(n=64, chunk=128 * KiB, pid=100):
    """open, n sequential reads of one file, release."""
    recs = [Rec(0, "open", pid, 10)]
    for i in range(n):
        recs.append(Rec(1000000 * (i + 1), "read", pid, 10, i * chunk, chunk))
    recs.append(Rec(1000000 * (n + 1), "release", pid, 10))
    return recs, {10: "train/big.npz"}


def shuffled_epoch(nfiles=100, fsize=100 * KiB, seed=7, pid=200):
    """One sample per file, files in shuffled order: open, one read, release."""
    order = list(range(nfiles))
    random.Random(seed).shuffle(order)
    recs, t = [], 0
    for k in order:
        fid = 1000 + k
        recs.append(Rec(t, "open", pid, fid))
        recs.append(Rec(t + 10000, "read", pid, fid, 0, 128 * KiB, result=fsize))
        recs.append(Rec(t + 90000, "release", pid, fid))
        t += 1000000
    names = {1000 + k: "train/img_%03d.jpg" % k for k in range(nfiles)}
    return recs, names


def two_procs(nfiles=20, reads=4, chunk=64 * KiB):
    """pids 300 and 301 read their half of the files sequentially, interleaved."""
    recs, t = [], 0
    for k in range(nfiles // 2):
        for pid, fid in ((300, 2000 + k), (301, 2000 + nfiles // 2 + k)):
            recs.append(Rec(t, "open", pid, fid, tid=pid + 1000))
            for i in range(reads):
                recs.append(Rec(t + 1000 * (i + 1), "read", pid, fid, i * chunk, chunk,
                                tid=pid + 1000 + i % 2))
            t += 500000
    names = {2000 + k: "train/part_%02d.rec" % k for k in range(nfiles)}
    return recs, names


def run(*args, check=True):
    r = subprocess.run([DLIO_TRACE] + list(args), capture_output=True, text=True, timeout=300)
    if check and r.returncode != 0:
        raise AssertionError("dlio-trace %s failed (%d): %s" % (" ".join(args), r.returncode, r.stderr))
    return r


def summary(path):
    return json.loads(run("summary", path, "--json", "--top", "0").stdout)


class TraceTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        dltest.require(os.path.exists(DLIO_TRACE), "dlio-trace not built: " + DLIO_TRACE)
        cls.tmp = tempfile.mkdtemp(prefix="dlio-trace-test-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, True)
        cls.seq = write_trace(os.path.join(cls.tmp, "seq.trc"), *seq_one_file())
        cls.shuf = write_trace(os.path.join(cls.tmp, "shuf.trc"), *shuffled_epoch())
        cls.two = write_trace(os.path.join(cls.tmp, "two.trc"), *two_procs())

    def path(self, name):
        return os.path.join(self.tmp, name)


class Summary(TraceTest):
    def test_sequential_one_file(self):
        s = summary(self.seq)
        self.assertEqual(s["records"], 66)
        self.assertEqual(s["dropped"], 0)
        self.assertTrue(s["complete"])
        self.assertEqual(s["config"], "golden.yaml")
        self.assertEqual(s["ops"]["read"]["count"], 64)
        self.assertEqual(s["ops"]["read"]["bytes"], 64 * 128 * KiB)
        self.assertEqual(s["ops"]["open"]["count"], 1)
        self.assertEqual(s["ops"]["release"]["count"], 1)
        self.assertEqual(s["ops"]["read"]["size_hist"],
                         [{"lo": 128 * KiB, "hi": 256 * KiB, "count": 64}])
        # Every read but the first continues where the previous one ended.
        self.assertEqual(s["reads"]["sequential"], 63)
        self.assertEqual(s["reads"]["first_reads"], 1)
        self.assertAlmostEqual(s["reads"]["sequential_share"], 63 / 64)
        self.assertEqual(s["files"]["accessed"], 1)
        self.assertEqual(s["files"]["opens"], 1)
        # Reads arrive every millisecond; open to first read is 1 ms too.
        self.assertEqual(s["inter_arrival_ns"]["read"]["p50"], 1000000)
        self.assertEqual(s["inter_arrival_ns"]["read"]["p99"], 1000000)
        self.assertEqual(s["inter_arrival_ns"]["all"]["n"], 65)
        self.assertEqual(s["ops"]["read"]["p50_dur_ns"], 50000)
        (f,) = s["top_files"]
        self.assertEqual(f["file"], "train/big.npz")
        self.assertEqual(f["bytes"], 64 * 128 * KiB)
        self.assertEqual(f["sequential_reads"], 63)
        (c,) = s["clients"]
        self.assertEqual((c["pid"], c["reads"], c["read_bytes"], c["files"], c["tids"]),
                         (100, 64, 64 * 128 * KiB, 1, 1))

    def test_shuffled_epoch(self):
        s = summary(self.shuf)
        self.assertEqual(s["records"], 300)
        self.assertEqual(s["ops"]["read"]["count"], 100)
        # Bytes are what the reads returned, not what they asked for.
        self.assertEqual(s["ops"]["read"]["bytes"], 100 * 100 * KiB)
        self.assertEqual(s["ops"]["read"]["size_hist"],
                         [{"lo": 128 * KiB, "hi": 256 * KiB, "count": 100}])
        self.assertEqual(s["reads"]["sequential"], 0)
        self.assertEqual(s["reads"]["first_reads"], 100)
        self.assertEqual(s["reads"]["sequential_share"], 0)
        self.assertEqual(s["files"]["accessed"], 100)
        self.assertEqual(s["files"]["opens"], 100)
        # 100 opens, one every ms, over the ~99.1 ms the requests span.
        self.assertAlmostEqual(s["files"]["opens_per_s"], 100 / 0.09909, delta=1)
        self.assertEqual(s["files"]["opens_peak_per_s"], 100)
        self.assertEqual(len(s["top_files"]), 100)
        self.assertTrue(all(f["bytes"] == 100 * KiB for f in s["top_files"]))
        # Ties in bytes list files by id: the name order here.
        self.assertEqual([f["file"] for f in s["top_files"][:3]],
                         ["train/img_000.jpg", "train/img_001.jpg", "train/img_002.jpg"])
        # First-access ranks follow the shuffled order.
        order = list(range(100))
        random.Random(7).shuffle(order)
        ranks = {f["file"]: f["first_access_rank"] for f in s["top_files"]}
        self.assertEqual(ranks["train/img_%03d.jpg" % order[0]], 0)
        self.assertEqual(ranks["train/img_%03d.jpg" % order[57]], 57)

    def test_two_processes(self):
        s = summary(self.two)
        self.assertEqual(s["ops"]["read"]["count"], 80)
        by = {c["pid"]: c for c in s["clients"]}
        self.assertEqual(sorted(by), [300, 301])
        for pid in (300, 301):
            c = by[pid]
            self.assertEqual(c["reads"], 40)
            self.assertEqual(c["read_bytes"], 40 * 64 * KiB)
            self.assertEqual(c["opens"], 10)
            self.assertEqual(c["files"], 10)
            self.assertEqual(c["tids"], 2)
            # Per file: 1 first read then 3 continuing reads.
            self.assertEqual(c["sequential_reads"], 30)
        self.assertAlmostEqual(s["reads"]["sequential_share"], 0.75)
        self.assertEqual(s["files"]["accessed"], 20)

    def test_jobs(self):
        """Version 2: records carry the client's job; the name table names it
        (id 2^63 | job); processes, threads, opens and releases per job."""
        recs, names = two_procs()
        for r in recs:
            r.job = 5 if r.pid == 300 else 6
        rel = [Rec(r.t + 400000, "release", r.pid, r.fid, tid=r.tid, job=r.job)
               for r in recs if r.op == "open"]
        names = dict(names)
        names[(1 << 63) | 5] = "python train.py"
        names[(1 << 63) | 6] = "python eval.py"
        s = summary(write_trace(self.path("jobs.trc"), recs + rel, names, version=2))
        by = {j["job"]: j for j in s["jobs"]}
        self.assertEqual(sorted(by), [5, 6])
        self.assertEqual(by[5]["name"], "python train.py")
        self.assertEqual(by[6]["name"], "python eval.py")
        for j in by.values():
            self.assertEqual((j["processes"], j["threads"], j["reads"], j["opens"],
                              j["releases"]), (1, 2, 40, 10, 10))
            self.assertEqual(j["read_bytes"], 40 * 64 * KiB)
        # Job names are not files.
        self.assertEqual(s["files"]["accessed"], 20)
        out = run("summary", self.path("jobs.trc")).stdout
        self.assertIn("python train.py", out)

    def test_interleaved_pids_on_one_file(self):
        # Two pids alternate reads of one file, each sequential on its own:
        # continuity is tracked per pid, so both count as sequential.
        recs = [Rec(1000 * i, "read", 400 + i % 2, 7, (i // 2) * 4096, 4096) for i in range(100)]
        s = summary(write_trace(self.path("inter.trc"), recs, {7: "f"}))
        self.assertEqual(s["reads"]["sequential"], 98)
        # A random reader of the same file.
        offs = list(range(100))
        random.Random(3).shuffle(offs)
        recs = [Rec(1000 * i, "read", 500, 7, o * 4096, 4096) for i, o in enumerate(offs)]
        s = summary(write_trace(self.path("rand.trc"), recs, {7: "f"}))
        self.assertLess(s["reads"]["sequential_share"], 0.1)

    def test_text_output(self):
        out = run("summary", self.two).stdout
        self.assertIn("records: 100, dropped: 0", out)
        self.assertIn("75.0% sequential", out)
        self.assertIn("train/part_00.rec", out)
        for pid in ("300", "301"):
            self.assertRegex(out, r"\n\s+%s\s+2\s+50\s+40\s" % pid)

    def test_dropped_and_errors(self):
        recs = [Rec(i * 1000, "read", 1, 1, i * 100, 100) for i in range(10)]
        recs.append(Rec(20000, "read", 1, 1, 0, 100, result=-5))
        recs.append(Rec(21000, "getattr", 1, 1))
        s = summary(write_trace(self.path("drop.trc"), recs, {1: "x"}, dropped=7))
        self.assertEqual(s["dropped"], 7)
        self.assertEqual(s["ops"]["read"]["errors"], 1)
        self.assertEqual(s["ops"]["read"]["bytes"], 1000)
        self.assertEqual(s["ops"]["getattr"]["count"], 1)
        self.assertIn("dropped: 7", run("summary", self.path("drop.trc")).stdout)

    def test_no_footer(self):
        # A trace whose daemon died: records are read, names are not.
        recs, names = seq_one_file(n=8)
        p = write_trace(self.path("cut.trc"), recs, names, footer=False)
        with open(p, "ab") as f:
            f.write(b"\0" * 20)  # half a record
        r = run("summary", p, "--json")
        s = json.loads(r.stdout)
        self.assertEqual(s["records"], 10)
        self.assertFalse(s["complete"])
        self.assertIn("no footer", r.stderr)
        self.assertEqual(s["top_files"][0]["file"], "#10")

    def test_bad_input(self):
        p = self.path("junk.trc")
        with open(p, "wb") as f:
            f.write(b"not a trace at all" * 40)
        r = run("summary", p, check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("bad magic", r.stderr)
        r = run("summary", self.path("missing.trc"), check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("No such file", r.stderr)
        self.assertNotEqual(run("frobnicate", check=False).returncode, 0)
        self.assertNotEqual(run("export", self.seq, check=False).returncode, 0)

    def test_opens_years_apart_cost_no_memory(self):
        # Two opens 2^24 s apart in a 400-byte trace: the busiest second used
        # to be found with an array of one counter per second (128 MB).
        p = write_trace(self.path("years.trc"),
                        [Rec(0, "open", 1, 5), Rec(((1 << 24) + 5) * 10**9, "open", 1, 5)],
                        {5: "f"})
        probe = ("import resource, subprocess, sys\n"
                 "r = subprocess.run(sys.argv[1:], capture_output=True)\n"
                 "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
        out = subprocess.run([sys.executable, "-c", probe, DLIO_TRACE, "summary", p, "--json"],
                             capture_output=True, text=True, timeout=120).stdout.split()
        self.assertEqual(out[0], "0")
        self.assertLess(int(out[1]), 48 << 10, "dlio-trace summary peaked at %s KiB" % out[1])
        s = summary(p)
        self.assertEqual(s["files"]["opens_peak_per_s"], 1)

    def test_recorder_roundtrip(self):
        # The C recorder's file, parsed here with struct.
        p = self.path("synth.trc")
        n = 5000
        run("synth", p, str(n))
        with open(p, "rb") as f:
            data = f.read()
        magic, ver, rsz, epoch, start, mask, _, cfg = HEADER.unpack_from(data)
        self.assertEqual((magic, ver, rsz), (MAGIC, 2, 56))
        self.assertEqual(cfg.rstrip(b"\0"), b"synth.yaml")
        nrec, dropped, noff, nnames, end, fmagic = FOOTER.unpack_from(data, len(data) - FOOTER.size)
        self.assertEqual(fmagic, MAGIC)
        self.assertEqual(nrec + dropped, n)
        self.assertEqual(dropped, 0)
        self.assertEqual(noff, HEADER.size + nrec * REC.size)
        seen = set()
        for k in range(nrec):
            (st, dlo, dhi, op, flags, q, pid, tid, res, fid, off, size, _) = \
                REC.unpack_from(data, HEADER.size + k * REC.size)
            i = off // 4096 * 7 + fid
            self.assertNotIn(i, seen)
            seen.add(i)
            self.assertEqual((dlo, dhi, op, flags, q, pid, tid, res, size),
                             (1000 + i, 0, OPS["read"], i % 2, i * 10, 4242, 4243 + i % 2, 4096, 4096))
            self.assertTrue(start <= st <= end)
        self.assertEqual(len(seen), n)
        pos, names = noff, {}
        for _ in range(nnames):
            fid, ln, _ = NAME.unpack_from(data, pos)
            names[fid] = data[pos + 16:pos + 16 + ln].decode()
            pos += 16 + ln
        self.assertEqual(pos, len(data) - FOOTER.size)
        self.assertEqual(names, {k: "synth/file_%d.bin" % k for k in range(7)})
        s = summary(p)
        self.assertEqual(s["ops"]["read"]["count"], n)
        self.assertEqual(s["reads"]["sequential"], n - 7)


MiB = 1024 * KiB


def reads_of(pid, fid, spans, t=0, tid=None, gap=100000, dur=50000):
    """One read per (offset, size) in spans, one after the other."""
    recs = []
    for off, size in spans:
        recs.append(Rec(t, "read", pid, fid, off, size, tid=tid, dur=dur))
        t += dur + gap
    return recs


class Modes(TraceTest):
    """Access mode per file and the job's pattern, as Darshan-based studies
    name them: one process, shared by N, read whole by each of N."""

    def modes(self, recs, names, *extra):
        p = write_trace(self.path("modes.trc"), recs, names, version=2)
        s = json.loads(run("summary", p, "--json", *extra).stdout)
        return s, {f["file"]: f for f in s["top_files"]}

    def test_file_per_process(self):
        s = summary(self.two)
        self.assertEqual(s["access"]["pattern"], "file per process")
        self.assertEqual(s["access"]["processes"], 2)
        self.assertEqual(s["access"]["files_by_mode"],
                         {"one_process": 20, "shared": 0, "whole_by_each": 0, "no_data": 0})
        for f in s["top_files"]:
            self.assertEqual((f["mode"], f["processes"]), ("one_process", 1), f)
        self.assertEqual(summary(self.shuf)["access"]["pattern"], "single process")

    def test_shared_and_whole(self):
        # File 1: 4 processes, each its quarter. File 2: 3 processes, each
        # all of it, in another order each. File 3: two processes, one all
        # of it, one half.
        q = 256 * KiB
        recs = []
        for k in range(4):
            recs += reads_of(10 + k, 1, [(k * q + i * 64 * KiB, 64 * KiB) for i in range(4)],
                             t=k * 10**6)
        for k in range(3):
            chunks = [(i * 64 * KiB, 64 * KiB) for i in range(4)]
            random.Random(k).shuffle(chunks)
            recs += reads_of(20 + k, 2, chunks, t=k * 10**6)
        recs += reads_of(30, 3, [(0, 100 * KiB), (100 * KiB, 28 * KiB)])
        recs += reads_of(31, 3, [(0, 64 * KiB)])
        names = {1: "shared.rec", 2: "whole.rec", 3: "half.rec"}
        s, by = self.modes(recs, names)
        self.assertEqual((by["shared.rec"]["mode"], by["shared.rec"]["processes"]), ("shared", 4))
        self.assertEqual(by["shared.rec"]["whole_readers"], 0)
        self.assertEqual(by["shared.rec"]["extent"], 1 * MiB)
        self.assertEqual((by["whole.rec"]["mode"], by["whole.rec"]["processes"]),
                         ("whole_by_each", 3))
        self.assertEqual(by["whole.rec"]["whole_readers"], 3)
        self.assertEqual((by["half.rec"]["mode"], by["half.rec"]["whole_readers"]), ("shared", 1))
        self.assertEqual(s["access"]["pattern"], "shared file")
        self.assertEqual(s["access"]["processes"], 9)
        self.assertEqual(s["access"]["files_by_mode"],
                         {"one_process": 0, "shared": 2, "whole_by_each": 1, "no_data": 0})
        out = run("summary", self.path("modes.trc")).stdout
        self.assertIn("access pattern: shared file (processes that read or wrote: 9)", out)
        self.assertRegex(out, r"shared by 4\s+shared\.rec")
        self.assertRegex(out, r"whole by each 3\s+whole\.rec")

    def test_mixed_top_and_opened_only(self):
        # Ten files of one process each, one file both processes read whole,
        # one only opened: a mixed pattern; --top limits the table, not the
        # counts per mode.
        recs = []
        for f in range(10):
            recs += reads_of(40 + f % 2, 100 + f, [(0, 4096)], t=f * 10**6)
        recs += reads_of(40, 200, [(0, 8192)], t=20 * 10**6)
        recs += reads_of(41, 200, [(4096, 4096), (0, 4096)], t=21 * 10**6)
        recs.append(Rec(30 * 10**6, "open", 40, 300))
        names = {100 + f: "f%d" % f for f in range(10)}
        names.update({200: "both", 300: "opened"})
        s, by = self.modes(recs, names, "--top", "2")
        self.assertEqual(len(s["top_files"]), 2)
        self.assertEqual(by["both"]["mode"], "whole_by_each")
        self.assertEqual(s["access"]["pattern"], "mixed")
        self.assertEqual(s["access"]["files_by_mode"],
                         {"one_process": 10, "shared": 0, "whole_by_each": 1, "no_data": 1})
        s, by = self.modes(recs, names, "--top", "0")
        self.assertEqual(by["opened"]["mode"], "no_data")
        self.assertEqual(by["opened"]["processes"], 0)


def pread_pieces(pid, tid, fid, off, total, t, misalign=48, after_reply=500000, dur=200000,
                 piece=MiB):
    """One pread of `total` bytes as the kernel sends it: a first piece a bit
    short of `piece` (the user buffer starts `misalign` bytes into a page),
    whole pieces, the rest; each piece sent after_reply ns after the
    previous reply. Returns (records, time after the last reply)."""
    sizes, left = [], total
    first = min(piece - misalign, left)
    sizes.append(first)
    left -= first
    while left:
        sizes.append(min(piece, left))
        left -= sizes[-1]
    recs = []
    for size in sizes:
        recs.append(Rec(t, "read", pid, fid, off, size, tid=tid, dur=dur))
        off += size
        t += dur + after_reply
    return recs, t


class Issued(TraceTest):
    """Request sizes as issued: a thread's pieces of one call joined."""

    def issued(self, recs, names, *extra):
        p = write_trace(self.path("issued.trc"), recs, names, version=2)
        s = json.loads(run("summary", p, "--json", *extra).stdout)
        return s["ops"]["read"], p

    def test_pieces_of_one_call(self):
        # The 10 MiB pread of a real mount: 11 requests (1 MiB - 48 B,
        # nine of 1 MiB, 48 B), each 0.5 ms after the previous reply.
        recs, t = pread_pieces(50, 51, 1, 0, 10 * MiB, 0)
        self.assertEqual(len(recs), 11)
        # The same thread's next call, 15 ms later, at the next offset:
        # 2 MiB + 100 B, its own call.
        more, t = pread_pieces(50, 51, 1, 10 * MiB, 2 * MiB + 100, t + 15 * 10**6, misalign=0)
        recs += more
        # Another thread, 4 KiB reads back to back: never joined.
        recs += reads_of(50, 2, [(i * 4096, 4096) for i in range(8)], tid=52, gap=1000)
        # A short read (end of file) ends a call even if the next piece
        # follows on.
        recs.append(Rec(0, "read", 50, 2, 0, MiB, result=1000, tid=53, dur=1000))
        recs.append(Rec(2000, "read", 50, 2, MiB, MiB, tid=53, dur=1000))
        # A piece 10.001 ms after the previous reply: a new call.
        recs.append(Rec(0, "read", 50, 3, 0, MiB, tid=54, dur=1000))
        recs.append(Rec(10002000, "read", 50, 3, MiB, 4096, tid=54, dur=1000))
        # Pieces of two threads on one file interleave: each its own call.
        a, _ = pread_pieces(60, 61, 4, 0, 3 * MiB, 0, misalign=0)
        b, _ = pread_pieces(60, 62, 4, 3 * MiB, 3 * MiB, 100, misalign=0)
        recs += a + b
        names = {1: "big.npz", 2: "small", 3: "slow", 4: "two"}
        o, p = self.issued(recs, names)
        self.assertEqual(o["count"], 11 + 3 + 8 + 2 + 2 + 6)
        self.assertEqual(o["max_request"], MiB)
        # As the storage saw them: unchanged.
        self.assertEqual(sum(h["count"] for h in o["size_hist"]), o["count"])
        iss = o["issued"]
        self.assertEqual(iss["split_at"], MiB)
        self.assertEqual(iss["piece_gap_ns"], 10000000)
        # 10 MiB, 2 MiB + 100, eight 4 KiB, 1 MiB (short) + 1 MiB,
        # 1 MiB + 4 KiB, 3 MiB twice.
        self.assertEqual(iss["count"], 1 + 1 + 8 + 2 + 2 + 2)
        self.assertEqual(iss["joined_requests"], o["count"] - iss["count"])
        self.assertEqual(iss["size_hist"], [
            {"lo": 4 * KiB, "hi": 8 * KiB, "count": 9},
            {"lo": MiB, "hi": 2 * MiB, "count": 3},
            {"lo": 2 * MiB, "hi": 4 * MiB, "count": 3},
            {"lo": 8 * MiB, "hi": 16 * MiB, "count": 1}])
        out = run("summary", p).stdout
        self.assertIn("as the storage saw them (32 requests)", out)
        self.assertIn("as issued (16 calls)", out)
        self.assertIn("largest request (1 MiB)", out)

    def test_loop_of_small_calls(self):
        # 64 KiB reads back to back stay 64 KiB calls: below the kernel's
        # largest request nothing was split...
        recs, names = seq_one_file(n=32, chunk=64 * KiB)
        o, p = self.issued(recs, names)
        self.assertEqual(o["issued"]["count"], 32)
        self.assertEqual(o["issued"]["size_hist"], o["size_hist"])
        self.assertIn("as issued: the same", run("summary", p).stdout)
        # ...unless the kernel's largest request was 64 KiB: then a loop of
        # full-size calls looks like one call (the documented limit).
        o, _ = self.issued(recs, names, "--max-request", "64KiB")
        self.assertEqual(o["issued"]["count"], 1)
        self.assertEqual(o["issued"]["size_hist"], [{"lo": 2 * MiB, "hi": 4 * MiB, "count": 1}])
        r = run("summary", p, "--max-request", "1000", check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--max-request 1000", r.stderr)

    def test_writes(self):
        # A 3 MiB write in pieces, then a 4 KiB one elsewhere.
        recs, _ = pread_pieces(70, 70, 1, 0, 3 * MiB, 0)
        for r in recs:
            r.op = "write"
        recs.append(Rec(10**8, "write", 70, 1, 10 * MiB, 4096))
        p = write_trace(self.path("w.trc"), recs, {1: "ckpt"}, version=2)
        w = json.loads(run("summary", p, "--json").stdout)["ops"]["write"]
        self.assertEqual((w["count"], w["issued"]["count"]), (5, 2))


class IssuedOnAMount(TraceTest):
    """A real 10 MiB pread on a mount arrives as pieces of the kernel's
    largest request; summary joins them into one 10 MiB call, and keeps
    a loop of 4 KiB preads apart."""

    def test_pread_10mib(self):
        dltest.require(dltest.fuse_available(), "/dev/fuse or fusermount3 not available")
        cfg = dltest.write_config(self.tmp, "datasets:\n"
                                  "  - {name: big, format: npz, files: 2, sample_size: 24MB}\n"
                                  "cache: {policy: none}\n", name="pread.yaml")
        trc = self.path("pread.trc")
        with dltest.mounted(cfg) as mnt:
            root = os.path.join(mnt, "big", "train")
            files = sorted(os.path.join(root, f) for f in os.listdir(root))
            subprocess.run([dltest.DLIOFS, "trace", "start", mnt, trc, "read,open"], check=True,
                           capture_output=True)
            try:
                fd = os.open(files[0], os.O_RDONLY)
                try:
                    got = len(os.pread(fd, 10 * MiB, 12345))
                    for i in range(16):
                        os.pread(fd, 4096, 20 * MiB + i * 4096)
                finally:
                    os.close(fd)
            finally:
                subprocess.run([dltest.DLIOFS, "trace", "stop", mnt], capture_output=True)
        self.assertEqual(got, 10 * MiB)
        o = summary(trc)["ops"]["read"]
        # The storage saw 11 pieces (or more, never fewer) and 16 reads.
        self.assertGreaterEqual(o["count"] - 16, 11, o)
        self.assertEqual(o["issued"]["count"], 17, o)
        self.assertEqual(o["issued"]["size_hist"], [
            {"lo": 4 * KiB, "hi": 8 * KiB, "count": 16},
            {"lo": 8 * MiB, "hi": 16 * MiB, "count": 1}])


class Export(TraceTest):
    def check_chrome(self, path, recs, names):
        r = run("export", "--chrome", path)
        doc = json.loads(r.stdout)
        events = doc["traceEvents"]
        for e in events:
            for k in ("ph", "ts", "pid", "tid", "name"):
                self.assertIn(k, e)
        xs = [e for e in events if e["ph"] == "X"]
        ms = [e for e in events if e["ph"] == "M"]
        self.assertEqual(len(xs), len(recs))
        pids = sorted({r.pid for r in recs})
        self.assertEqual(sorted(e["pid"] for e in ms if e["name"] == "process_name"), pids)
        self.assertEqual(sorted((e["pid"], e["tid"]) for e in ms if e["name"] == "thread_name"),
                         sorted({(r.pid, r.tid) for r in recs}))
        last = {}
        for e in xs:
            self.assertGreaterEqual(e["dur"], 0)
            self.assertIn(e["name"], OPS)
            self.assertEqual(e["cat"], e["name"])
            for k in ("file", "offset", "size", "queue_us", "hit"):
                self.assertIn(k, e["args"])
            key = (e["pid"], e["tid"])
            self.assertGreaterEqual(e["ts"], last.get(key, 0), "ts not monotone for %r" % (key,))
            last[key] = e["ts"]
        # Microseconds since the Unix epoch: the first request, exactly.
        first = min(recs, key=lambda r: r.t)
        want = (EPOCH_NS + first.t) / 1000
        self.assertAlmostEqual(xs[0]["ts"], want, delta=1)
        self.assertIn('"ts": %d.%03d' % ((EPOCH_NS + first.t) // 1000, (EPOCH_NS + first.t) % 1000),
                      r.stdout)
        self.assertAlmostEqual(xs[0]["dur"], first.dur / 1000)
        self.assertEqual(xs[0]["args"]["file"], names[first.fid])
        return doc

    def test_chrome(self):
        self.check_chrome(self.seq, *seq_one_file())
        doc = self.check_chrome(self.two, *two_procs())
        self.assertEqual(doc["otherData"]["records"], 100)
        reads = [e for e in doc["traceEvents"] if e["name"] == "read"]
        self.assertEqual({e["args"]["size"] for e in reads}, {64 * KiB})

    def test_chrome_queue_hit_escaping(self):
        recs = [Rec(0, "read", 9, 1, 0, 4096, queue=2500, hit=True),
                Rec(10, "read", 9, 2, 0, 4096, result=-2)]
        p = write_trace(self.path("esc.trc"), recs, {1: 'we"ird\\name\n', 2: "ok"},
                        shuffle_batches=False)
        doc = json.loads(run("export", "--chrome", p).stdout)
        xs = [e for e in doc["traceEvents"] if e["ph"] == "X"]
        self.assertEqual(xs[0]["args"]["file"], 'we"ird\\name\n')
        self.assertEqual(xs[0]["args"]["queue_us"], 2.5)
        self.assertIs(xs[0]["args"]["hit"], True)
        self.assertIs(xs[1]["args"]["hit"], False)
        self.assertEqual(xs[1]["args"]["result"], -2)

    def test_csv(self):
        recs, names = two_procs()
        names[2000] = "train/with,comma.rec"
        p = write_trace(self.path("csv.trc"), recs, names)
        out = run("export", "--csv", p).stdout
        rows = list(csv.DictReader(io.StringIO(out)))
        self.assertEqual(len(rows), len(recs))
        self.assertEqual(len(out.splitlines()), len(recs) + 1)
        self.assertEqual(rows[0]["file"], "train/with,comma.rec")
        self.assertEqual(rows[0]["op"], "open")
        self.assertEqual(float(rows[0]["time_s"]), 0.0)
        self.assertEqual(sum(int(r["result"]) for r in rows if r["op"] == "read"), 80 * 64 * KiB)
        times = [int(r["start_ns"]) for r in rows]
        self.assertEqual(times, sorted(times))
        # -o writes the same to a file.
        run("export", "--csv", p, "-o", self.path("out.csv"))
        with open(self.path("out.csv")) as f:
            self.assertEqual(f.read(), out)

    def test_dxt(self):
        out = run("export", "--dxt", self.two).stdout
        blocks = [ln for ln in out.splitlines() if ln.startswith("# DXT, file_id:")]
        self.assertEqual(len(blocks), 20)
        self.assertIn("# DXT, file_id: 2000, file_name: train/part_00.rec", out)
        lines = [ln.split() for ln in out.splitlines() if ln.startswith(" X_POSIX")]
        self.assertEqual(len(lines), 80)
        # Module Rank Wt/Rd Segment Offset Length Start End
        first = lines[0]
        self.assertEqual(first[:6], ["X_POSIX", "300", "read", "0", "0", str(64 * KiB)])
        self.assertLessEqual(float(first[6]), float(first[7]))
        self.assertEqual([ln[3] for ln in lines[:4]], ["0", "1", "2", "3"])


class Plot(TraceTest):
    def test_plot_png(self):
        ok = subprocess.run(["/usr/bin/python3", "-c", "import matplotlib, numpy"],
                            capture_output=True).returncode == 0
        dltest.require(ok, "python3-matplotlib not installed")
        try:
            from PIL import Image
        except ImportError:
            dltest.require(False, "PIL not installed")
        recs, names = two_procs()
        r2, n2 = shuffled_epoch(pid=777)
        p = write_trace(self.path("mix.trc"), recs + r2, {**names, **n2})
        png = self.path("mix.png")
        r = run("plot", p, "-o", png)
        self.assertEqual(r.stderr.strip(), "")
        with Image.open(png) as im:
            self.assertEqual(im.format, "PNG")
            w, h = im.size
            self.assertGreaterEqual(w, 600)
            self.assertGreaterEqual(h, 600)
            # Not a blank canvas: many colours were drawn.
            self.assertGreater(len(im.convert("RGB").getcolors(1 << 20) or []), 50)
        if os.environ.get("DLIO_TRACE_KEEP_PNG"):
            shutil.copy(png, os.environ["DLIO_TRACE_KEEP_PNG"])

    def plot_module(self):
        ok = subprocess.run(["/usr/bin/python3", "-c", "import matplotlib, numpy"],
                            capture_output=True).returncode == 0
        dltest.require(ok, "python3-matplotlib not installed")
        import importlib.util
        src = os.environ.get("DLIOFS_SRC", os.path.join(os.path.dirname(__file__), "..", "..", ".."))
        spec = importlib.util.spec_from_file_location(
            "dlio_trace_plot", os.path.join(src, "tools", "trace", "dlio_trace_plot.py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod

    def test_per_file_offsets(self):
        """The spatial and temporal panels place a request at its offset in
        its own file (files ranked by name), not in the data set laid end
        to end."""
        mod = self.plot_module()
        import numpy as np
        recs = reads_of(1, 7, [(0, MiB), (MiB, MiB)]) + \
            reads_of(1, 3, [(0, 4096), (8192, 4096)], t=10**7) + \
            reads_of(2, 5, [(512 * KiB, 64 * KiB)], t=2 * 10**7)
        p = write_trace(self.path("pf.trc"), recs, {7: "c.npz", 3: "a.npz", 5: "b.npz"},
                        version=2, shuffle_batches=False)
        d = mod.data_points(np, mod.load(np, p))
        self.assertEqual(d["files"], ["a.npz", "b.npz", "c.npz"])
        got = sorted(zip(d["file"].tolist(), d["offset"].tolist(), d["size"].tolist()))
        self.assertEqual(got, [(0, 0, 4096), (0, 8192, 4096), (1, 512 * KiB, 64 * KiB),
                               (2, 0, MiB), (2, MiB, MiB)])
        lg, lo, hi = mod.size_colours(np, d["size"])
        self.assertEqual((lo, hi), (12, 20))

    def test_temporal_coloured_by_size(self):
        """One client reading 4 KiB and 1 MiB requests: the temporal panel
        (second of four) shows both ends of the size colour map (viridis:
        dark purple, yellow), where colour by client had one colour."""
        self.plot_module()
        try:
            from PIL import Image
        except ImportError:
            dltest.require(False, "PIL not installed")
        recs = []
        for f in range(20):
            recs += reads_of(1, 100 + f, [(0, 4096)] + [(k * MiB, MiB) for k in range(4)],
                             t=f * 10**7)
        p = write_trace(self.path("col.trc"), recs, {100 + f: "f%02d" % f for f in range(20)},
                        version=2)
        png = self.path("col.png")
        self.assertEqual(run("plot", p, "-o", png).stderr.strip(), "")
        with Image.open(png) as im:
            # The plot says where its panels are.
            x0, y0, x1, y1 = json.loads(im.info["dlio-trace-panels"])["temporal"]
            rgb = im.convert("RGB")
            yellow = purple = 0
            for y in range(y0 + 2, y1 - 2):
                for x in range(x0 + 2, x1 - 2, 2):
                    r_, g_, b_ = rgb.getpixel((x, y))
                    yellow += r_ > 200 and g_ > 180 and b_ < 100
                    purple += r_ < 110 and g_ < 60 and b_ > 60
        self.assertGreater(yellow, 20, (yellow, purple))
        self.assertGreater(purple, 5, (yellow, purple))
        if os.environ.get("DLIO_TRACE_KEEP_PNG"):
            shutil.copy(png, os.environ["DLIO_TRACE_KEEP_PNG"] + ".sizes.png")

    def test_plot_two(self):
        """Two runs one above the other: six panels on one time axis, the
        longer run setting it; a third trace is refused."""
        ok = subprocess.run(["/usr/bin/python3", "-c", "import matplotlib, numpy"],
                            capture_output=True).returncode == 0
        dltest.require(ok, "python3-matplotlib not installed")
        try:
            from PIL import Image
        except ImportError:
            dltest.require(False, "PIL not installed")
        ra, na = shuffled_epoch(seed=1, pid=500)
        rb, nb = shuffled_epoch(seed=2, pid=600)
        # B is the same job at half speed: its axis must hold twice the time.
        for r in rb:
            r.t *= 2
        a = write_trace(self.path("a.trc"), ra, na)
        b = write_trace(self.path("b.trc"), rb, nb)
        png = self.path("ab.png")
        r = run("plot", a, b, "-o", png)
        self.assertEqual(r.stderr.strip(), "")
        with Image.open(png) as im:
            self.assertEqual(im.format, "PNG")
            w, h = im.size
            self.assertGreater(h, w)  # six panels stacked
            rgb = im.convert("RGB")
            self.assertGreater(len(rgb.getcolors(1 << 20) or []), 50)
            # A's reads end halfway along the shared axis: the right half of
            # A's reads-per-file panel (the third of six) has no blue-ish
            # point, B's (the fourth) has.
            def coloured(y0, y1, x0, x1):
                n = 0
                for y in range(int(y0 * h), int(y1 * h), 2):
                    for x in range(int(x0 * w), int(x1 * w), 2):
                        r_, g_, b_ = rgb.getpixel((x, y))
                        n += (max(r_, g_, b_) - min(r_, g_, b_)) > 60
                return n
            a_right = coloured(2 / 6 + 0.03, 3 / 6 - 0.03, 0.62, 0.88)
            b_right = coloured(3 / 6 + 0.03, 4 / 6 - 0.03, 0.62, 0.88)
            self.assertLess(a_right * 5, b_right, (a_right, b_right))
        if os.environ.get("DLIO_TRACE_KEEP_PNG"):
            shutil.copy(png, os.environ["DLIO_TRACE_KEEP_PNG"] + ".two.png")
        r = run("plot", a, b, a, "-o", png, check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("one trace, or two", r.stderr)

    def test_plot_errors(self):
        r = run("plot", self.path("missing.trc"), "-o", self.path("x.png"), check=False)
        self.assertNotEqual(r.returncode, 0)
        env = dict(os.environ, DLIO_TRACE_PLOT=self.path("no-such-script.py"))
        r = subprocess.run([DLIO_TRACE, "plot", self.seq, "-o", self.path("x.png")],
                           capture_output=True, text=True, env=env)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("DLIO_TRACE_PLOT", r.stderr)


def epochs(nfiles=50, nepochs=3, seed=1, chunks=4, chunk=64 * KiB, readers=1, pid=400,
           gap=1000000, dur=50000, t0=0, names_from=0):
    """A job that reads every file whole each epoch, files shuffled per epoch
    (random.Random(seed)), `readers` threads taking the next file in turn;
    a thread opens its file and reads it in `chunks` sequential reads, one
    every gap ns."""
    rng = random.Random(seed)
    recs, t = [], t0
    for _ in range(nepochs):
        order = list(range(nfiles))
        rng.shuffle(order)
        for k in range(0, nfiles, readers):
            group = order[k:k + readers]
            for i, f in enumerate(group):
                recs.append(Rec(t, "open", pid, 5000 + f, tid=pid + i))
            for c in range(chunks):
                for i, f in enumerate(group):
                    recs.append(Rec(t, "read", pid, 5000 + f, c * chunk, chunk, dur=dur,
                                    tid=pid + i))
                    t += gap
    names = {5000 + f: "train/s_%04d.npz" % (names_from + f) for f in range(nfiles)}
    return recs, names


ASPECTS = ("op_mix", "request_size", "bytes_per_file", "sequentiality", "access_order",
           "throughput", "throughput_time", "inter_arrival", "concurrency",
           "duration", "volume", "throughput_abs")
PARTS = ("reuse_distance", "files_per_epoch", "sequential_runs", "exact_order")


class Compare(TraceTest):
    def compare(self, a, b):
        s = json.loads(run("compare", a, b, "--json").stdout)
        for k in ASPECTS + PARTS + ("overall",):
            self.assertGreaterEqual(s[k], 0.0, k)
            self.assertLessEqual(s[k], 1.0, k)
        self.assertAlmostEqual(s["overall"], sum(s[k] for k in ASPECTS) / 12, places=5)
        self.assertAlmostEqual(s["access_order"], sum(s[k] for k in PARTS[:3]) / 3, places=5)
        return s

    def trace(self, name, recs_names, version=2):
        return write_trace(self.path(name), *recs_names, version=version)

    def test_self_is_one(self):
        for p in (self.seq, self.shuf, self.two):
            s = self.compare(p, p)
            for k, v in s.items():
                if k in ASPECTS + PARTS + ("overall",):
                    self.assertEqual(v, 1.0, "%s of %s vs itself" % (k, p))

    def test_different_workloads(self):
        s = self.compare(self.seq, self.shuf)
        # Both read one request at a time at ~100 MB/s: the time aspects
        # are alike, what and in what order are not.
        self.assertLess(s["overall"], 0.65)
        self.assertLess(s["access_order"], 0.4)
        self.assertEqual(s["bytes_per_file"], 0.0)  # no file in common
        self.assertEqual(s["exact_order"], 0.0)
        self.assertLess(s["sequentiality"], 0.05)
        # One file read in 64 pieces against 100 files read once each.
        self.assertAlmostEqual(s["files_per_epoch"], 0.01, places=6)
        self.assertEqual(s["sequential_runs"], 0.0)  # 8 MiB runs against 100 KiB ones
        s2 = self.compare(self.shuf, self.seq)
        self.assertAlmostEqual(s["overall"], s2["overall"], places=6)

    def test_another_shuffle(self):
        # The same epoch with another shuffle: everything but the exact
        # order matches.
        other = write_trace(self.path("shuf2.trc"), *shuffled_epoch(seed=99))
        s = self.compare(self.shuf, other)
        for k in ASPECTS + PARTS[:3] + ("overall",):
            self.assertEqual(s[k], 1.0, k)
        self.assertLess(s["exact_order"], 0.5)

    def test_shuffled_epochs(self):
        # Three epochs of 50 files, 4 readers, other seeds: a shuffle changes
        # which file comes when, not the distributions.
        a = self.trace("ep_a.trc", epochs(seed=1, readers=4))
        b = self.trace("ep_b.trc", epochs(seed=2, readers=4))
        s = self.compare(a, b)
        self.assertEqual(s["files_per_epoch_a"], 50)
        self.assertEqual(s["files_per_epoch_b"], 50)
        self.assertEqual(s["epochs_a"], 3)
        self.assertEqual(s["files_per_epoch"], 1.0)
        self.assertEqual(s["sequential_runs"], 1.0)
        self.assertGreater(s["reuse_distance"], 0.9)
        self.assertLess(s["exact_order"], 0.5)
        self.assertGreaterEqual(s["overall"], 0.97)
        # The old score of order (exact) would have kept this pair near 0.

    def test_files_per_epoch(self):
        # 40 files per epoch against 20: 0.5.
        a = self.trace("f40.trc", epochs(nfiles=40, seed=1))
        b = self.trace("f20.trc", epochs(nfiles=20, seed=1, nepochs=6))
        s = self.compare(a, b)
        self.assertEqual((s["files_per_epoch_a"], s["files_per_epoch_b"]), (40, 20))
        self.assertEqual((s["epochs_a"], s["epochs_b"]), (3, 6))
        self.assertAlmostEqual(s["files_per_epoch"], 0.5, places=6)

    def test_reuse_distance(self):
        # A: f0 f0 f1 f1 (cold, 0, cold, 0); B: f0 f1 f0 f1 (cold, cold, 1, 1).
        ra = [Rec(i * 1000, "read", 1, fid, off, 4 * KiB)
              for i, (fid, off) in enumerate([(1, 0), (1, 4096), (2, 0), (2, 4096)])]
        rb = [Rec(i * 1000, "read", 1, fid, off, 4 * KiB)
              for i, (fid, off) in enumerate([(1, 0), (2, 0), (1, 4096), (2, 4096)])]
        names = {1: "a", 2: "b"}
        s = self.compare(self.trace("rd_a.trc", (ra, names)), self.trace("rd_b.trc", (rb, names)))
        self.assertAlmostEqual(s["reuse_distance"], 0.5, places=6)
        # Both read each file in two 4 KiB pieces back to back: in A the
        # pieces follow each other, in B another file comes between, but a
        # run is a thread's reads of one file, so both have two 8 KiB runs.
        self.assertEqual(s["sequential_runs"], 1.0)

    def test_visits(self):
        # One thread reads file 1 whole twice, then file 2 whole twice,
        # nothing between: with opens traced, each open starts a visit;
        # where the trace has no opens (traced ops: read), reading offset 0
        # again does.
        seqr = []
        for fid in (1, 1, 2, 2):
            seqr.append(Rec(len(seqr) * 1000, "open", 1, fid))
            for c in range(2):
                seqr.append(Rec(len(seqr) * 1000, "read", 1, fid, c * 4096, 4096))
        names = {1: "a", 2: "b"}
        with_opens = self.trace("v_o.trc", (seqr, names))
        no_opens = write_trace(self.path("v_n.trc"), [r for r in seqr if r.op == "read"], names,
                               version=2, ops=["read"])
        for p in (with_opens, no_opens):
            s = json.loads(run("compare", p, p, "--json").stdout)
            # Visits a a b b: epochs {a}, {a, b}, {b}: 1.5 files per complete one.
            self.assertEqual(s["epochs_a"], 3, p)
            self.assertEqual(s["files_per_epoch_a"], 1.5, p)
        # Two traces that differ only in whether opens were traced order
        # alike.
        s = self.compare(with_opens, no_opens)
        self.assertEqual(s["access_order"], 1.0)

    def test_sequential_runs(self):
        # One 1 MiB file in 8 pieces: in order (one 1 MiB run) against
        # even pieces then odd ones (eight 128 KiB runs).
        ra = [Rec(i * 1000, "read", 1, 1, i * 128 * KiB, 128 * KiB) for i in range(8)]
        rb = [Rec(i * 1000, "read", 1, 1, k * 128 * KiB, 128 * KiB)
              for i, k in enumerate([0, 2, 4, 6, 1, 3, 5, 7])]
        names = {1: "big"}
        s = self.compare(self.trace("run_a.trc", (ra, names)), self.trace("run_b.trc", (rb, names)))
        self.assertEqual(s["sequential_runs"], 0.0)
        self.assertEqual(s["reuse_distance"], 1.0)
        self.assertEqual(s["bytes_per_file"], 1.0)

    def test_time_scaled(self):
        # The same job at half the speed: throughput 0.5, the same course
        # in normalized time, every gap twice as long (one bucket up).
        a = self.trace("t1.trc", epochs(gap=1000000, dur=500000))
        b = self.trace("t2.trc", epochs(gap=2000000, dur=1000000))
        s = self.compare(a, b)
        self.assertAlmostEqual(s["throughput"], 0.5, places=3)
        self.assertGreater(s["throughput_time"], 0.99)
        self.assertEqual(s["inter_arrival"], 0.0)
        self.assertEqual(s["concurrency"], 1.0)  # one in flight half of the time
        self.assertEqual(s["access_order"], 1.0)

    def test_throughput_time(self):
        # 20 reads one after the other, each a twentieth of the span: A
        # reads 64 KiB each time, B 128 KiB in the first half and nothing
        # (end of file) in the second: half of B's bytes would have to move.
        ra = [Rec(i * 1000000, "read", 1, 1, 0, 128 * KiB, result=64 * KiB, dur=1000000)
              for i in range(20)]
        rb = [Rec(i * 1000000, "read", 1, 1, 0, 128 * KiB, result=128 * KiB if i < 10 else 0,
                  dur=1000000) for i in range(20)]
        names = {1: "f"}
        s = self.compare(self.trace("tt_a.trc", (ra, names)), self.trace("tt_b.trc", (rb, names)))
        self.assertAlmostEqual(s["throughput_time"], 0.5, places=3)
        self.assertAlmostEqual(s["throughput"], 1.0, places=3)  # the same bytes in the same span

    def test_concurrency(self):
        # A: one read in flight all the time; B: two at once, then one.
        ra = [Rec(i * 1000000, "read", 1, 1, i * 4096, 4096, dur=1000000) for i in range(20)]
        rb = [Rec((i // 2) * 1000000 if i < 20 else (i - 10) * 1000000, "read", 1, 1, i * 4096,
                  4096, dur=1000000) for i in range(30)]
        names = {1: "f"}
        s = self.compare(self.trace("c_a.trc", (ra, names)), self.trace("c_b.trc", (rb, names)))
        # B: 10 ms with two in flight, 10 ms with one.
        self.assertAlmostEqual(s["concurrency"], 0.5, places=3)
        s = self.compare(self.trace("c_a2.trc", (ra, names)), self.trace("c_a3.trc", (ra, names)))
        self.assertEqual(s["concurrency"], 1.0)

    def test_size_shift(self):
        # Same files and order, half the request size: sizes differ, and the
        # gaps between requests (64 reads in the time of 128).
        recs, names = seq_one_file(n=64, chunk=128 * KiB)
        recs2, _ = seq_one_file(n=128, chunk=64 * KiB)
        a = write_trace(self.path("c128.trc"), recs, names)
        b = write_trace(self.path("c64.trc"), recs2, names)
        s = self.compare(a, b)
        self.assertEqual(s["request_size"], 0.0)
        self.assertEqual(s["bytes_per_file"], 1.0)
        self.assertEqual(s["exact_order"], 1.0)
        self.assertEqual(s["sequential_runs"], 1.0)  # one 8 MiB run in both
        self.assertLess(s["overall"], 1.0)

    def test_one_epoch_of_three(self):
        """One epoch of a three-epoch job at the same pace: the rate, the
        course in normalized time and the shares of bytes per file are the
        same, so those aspects cannot tell it from the job; duration, volume
        and throughput_abs (both on one absolute time axis) can."""
        job = self.trace("e3.trc", epochs(nepochs=3, seed=1))
        one = self.trace("e1.trc", epochs(nepochs=1, seed=1))
        faithful = self.trace("e3b.trc", epochs(nepochs=3, seed=2))
        s = self.compare(job, one)
        for k in ("throughput", "throughput_time", "bytes_per_file", "files_per_epoch"):
            self.assertGreaterEqual(s[k], 0.98, k)
        self.assertEqual(s["bytes_a"], 3 * s["bytes_b"])
        self.assertAlmostEqual(s["volume"], 1 / 3, places=5)
        # 600 reads 1 ms apart (50 us each) against the first 200 of them.
        self.assertAlmostEqual(s["duration"], 199.05 / 599.05, places=5)
        # The same bytes at the same times until B stops: A ends 2/3 ahead.
        self.assertAlmostEqual(s["throughput_abs"], 1 / 3, places=5)
        f = self.compare(job, faithful)
        for k in ("duration", "volume", "throughput_abs"):
            self.assertEqual(f[k], 1.0, k)
            self.assertGreater(f[k] - s[k], 0.6, k)
        self.assertGreaterEqual(f["overall"], 0.97)
        self.assertLess(s["overall"], f["overall"] - 0.15)
        self.assertLess(s["overall"], 0.85)

    def test_duration_volume(self):
        # 64 reads of 128 KiB 1 ms apart against the first 16 of them.
        a = write_trace(self.path("v64.trc"), *seq_one_file(n=64))
        b = write_trace(self.path("v16.trc"), *seq_one_file(n=16))
        s = self.compare(a, b)
        self.assertAlmostEqual(s["volume"], 0.25, places=6)
        self.assertAlmostEqual(s["duration"], 15.05 / 63.05, places=5)
        self.assertAlmostEqual(s["duration_s_a"], 0.06305, places=6)
        self.assertEqual(s["bytes_a"], 64 * 128 * KiB)
        self.assertAlmostEqual(s["throughput_abs"], 0.25, places=5)
        self.assertGreater(s["throughput"], 0.95)  # the same pace
        s2 = self.compare(b, a)
        for k in ("duration", "volume", "throughput_abs"):
            self.assertAlmostEqual(s[k], s2[k], places=6, msg=k)

    def test_throughput_abs(self):
        # The same job at half the speed: the same bytes, twice the time;
        # when A is done B has half of its bytes.
        a = self.trace("ta1.trc", epochs(gap=1000000, dur=500000))
        b = self.trace("ta2.trc", epochs(gap=2000000, dur=1000000))
        s = self.compare(a, b)
        self.assertEqual(s["volume"], 1.0)
        self.assertAlmostEqual(s["duration"], 0.5, places=4)
        self.assertAlmostEqual(s["throughput_abs"], 0.5, places=4)
        # Same bytes in the same span, B all in the first half: B is half
        # of the volume ahead at mid-span (bytes spread over service time).
        ra = [Rec(i * 1000000, "read", 1, 1, 0, 128 * KiB, result=64 * KiB, dur=1000000)
              for i in range(20)]
        rb = [Rec(i * 1000000, "read", 1, 1, 0, 128 * KiB, result=128 * KiB if i < 10 else 0,
                  dur=1000000) for i in range(20)]
        names = {1: "f"}
        s = self.compare(self.trace("tab_a.trc", (ra, names)), self.trace("tab_b.trc", (rb, names)))
        self.assertEqual((s["volume"], s["duration"]), (1.0, 1.0))
        self.assertAlmostEqual(s["throughput_abs"], 0.5, places=4)
        # A late start does not count: each run from its first data arrival.
        late = self.trace("ta_late.trc", epochs(gap=1000000, dur=500000, t0=5 * 10**9))
        s = self.compare(a, late)
        self.assertEqual(s["throughput_abs"], 1.0)

    def test_help_has_method(self):
        out = run("compare", "--help").stdout
        for k in ASPECTS + PARTS + ("overall", "Spearman", "total variation", "shuffle"):
            self.assertIn(k, out)


if __name__ == "__main__":
    dltest.main()
