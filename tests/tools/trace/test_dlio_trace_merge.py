"""dlio-trace merge (issue #25): the traces of a cluster's nodes as one
timeline. Synthetic node traces are written here with struct (the layout of
include/dliofs/trace.h, independently of the C code), merged, and the merged
file is parsed here too: every record kept with its node, in time order on
the first node's clock, files and jobs matched by name, per-node figures in
summary and export; mismatched inputs refused. The live check (a cluster of
mounts under mpirun, a reader on each) is in tests/mount/test_cluster_trace.py."""
import csv
import io
import json
import os
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
RECN = struct.Struct("<QIHBBIIIiQQIIII")  # version 3: the record, node, reserved
NAME = struct.Struct("<QII")
FOOTER = struct.Struct("<QQQQQ8s")
MAGIC = b"DLIOTRC1"
READ, OPEN, RELEASE = 4, 3, 8
JOB_BIT = 1 << 63
NODE_BIT = 1 << 62
EPOCH = 1700000000000000000
SYN = NODE_BIT | 5  # the mount's synthetic files have inode numbers with bit 62
MiB = 1 << 20


def write_node(path, node, epoch, mono, recs, names, dropped=0, version=2):
    """recs: (t_ns since the node's start, op, pid, tid, fid, off, size, dur, job)."""
    out = HEADER.pack(MAGIC, version, REC.size, epoch, mono, 0xFFFFFFFF, node, b"node.yaml")
    # Writer batches: the last ones first, as a recorder's stripes may land.
    for t, op, pid, tid, fid, off, size, dur, job in reversed(recs):
        out += REC.pack(mono + t, dur, 0, op, 0, 0, pid, tid, size, fid, off, size, job)
    noff = len(out)
    for fid, name in names.items():
        out += NAME.pack(fid, len(name.encode()), 0) + name.encode()
    end = mono + max(r[0] + r[7] for r in recs) + 1000
    out += FOOTER.pack(len(recs), dropped, noff, len(names), end, MAGIC)
    with open(path, "wb") as f:
        f.write(out)
    return path


def read_merged(path):
    with open(path, "rb") as f:
        data = f.read()
    magic, version, rsz, epoch, mono, _mask, node, _cfg = HEADER.unpack_from(data)
    nrec, dropped, noff, nnames, end, fmagic = FOOTER.unpack_from(data, len(data) - FOOTER.size)
    assert magic == MAGIC and fmagic == MAGIC
    recs = [RECN.unpack_from(data, HEADER.size + i * rsz) for i in range(nrec)]
    names, off = {}, noff
    for _ in range(nnames):
        fid, ln, _ = NAME.unpack_from(data, off)
        off += NAME.size
        names[fid] = data[off:off + ln].decode()
        off += ln
    return dict(version=version, rec_size=rsz, epoch=epoch, mono=mono, node=node, recs=recs,
                names=names, dropped=dropped, end=end)


def run(*args, check=True):
    r = subprocess.run([DLIO_TRACE] + list(args), capture_output=True, text=True, timeout=120)
    if check and r.returncode != 0:
        raise AssertionError("dlio-trace %s failed (%d): %s" % (" ".join(args), r.returncode, r.stderr))
    return r


def reads(pid, fid, t0, n, gap=1000000, job=1, tid=None):
    """An open, n reads of 1 MiB a gap apart, a release."""
    tid = tid or pid
    out = [(t0, OPEN, pid, tid, fid, 0, 0, 20000, job)]
    for i in range(n):
        out.append((t0 + (i + 1) * gap, READ, pid, tid, fid, i * MiB, MiB, 500000, job))
    out.append((t0 + (n + 1) * gap, RELEASE, pid, tid, fid, 0, 0, 10000, job))
    return out


class MergeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        dltest.require(os.path.exists(DLIO_TRACE), "dlio-trace not built: " + DLIO_TRACE)
        cls.tmp = tempfile.mkdtemp(prefix="dlio-trace-merge-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, True)

    def path(self, name):
        return os.path.join(self.tmp, name)

    def two_nodes(self, prefix="n"):
        """Node 1 on a host booted at mono 5 s; node 2 on another host
        (mono 900 s) whose daemon started 3 ms later by the wall clock.
        Both read "train/a" (ids 10 and 20: inode numbers differ); node 1
        also "train/b" (11), node 2 "train/c" under node 1's id of a (10).
        Job "train" is 1 on node 1 and 2 on node 2; node 2's job 1 is "eval".
        pid 77 runs on both (two hosts)."""
        n1 = reads(77, 10, 1000000, 4) + reads(78, 11, 1500000, 4) + reads(79, SYN, 1600000, 1)
        n2 = reads(77, 20, 0, 4, job=2) + reads(90, 10, 200000, 2, job=1)
        a = write_node(self.path(prefix + "1.trc"), 1, EPOCH, 5 * 10**9, n1,
                       {10: "train/a", 11: "train/b", SYN: "train/syn", JOB_BIT | 1: "train"},
                       dropped=2)
        b = write_node(self.path(prefix + "2.trc"), 2, EPOCH + 3000000, 900 * 10**9, n2,
                       {20: "train/a", 10: "train/c", JOB_BIT | 2: "train", JOB_BIT | 1: "eval"},
                       dropped=3)
        return a, b, n1, n2

    def test_merge_order_nodes_names(self):
        a, b, n1, n2 = self.two_nodes()
        out = self.path("m.trc")
        r = run("merge", "-o", out, b, a)
        self.assertIn("%d records of 2 nodes" % (len(n1) + len(n2)), r.stdout)
        m = read_merged(out)
        self.assertEqual((m["version"], m["rec_size"], m["node"]), (3, 64, 0))
        # The time base is node 1's: it started first.
        self.assertEqual((m["epoch"], m["mono"]), (EPOCH, 5 * 10**9))
        self.assertEqual(m["dropped"], 5)
        recs = m["recs"]
        self.assertEqual(len(recs), len(n1) + len(n2))
        starts = [x[0] for x in recs]
        self.assertEqual(starts, sorted(starts), "records not in time order")
        nodes = [x[13] for x in recs]
        self.assertEqual((nodes.count(1), nodes.count(2)), (len(n1), len(n2)))
        # Node 2's times on node 1's clock: 3 ms after node 1's start.
        want2 = sorted(5 * 10**9 + 3000000 + x[0] for x in n2)
        self.assertEqual(sorted(x[0] for x in recs if x[13] == 2), want2)
        want1 = sorted(5 * 10**9 + x[0] for x in n1)
        self.assertEqual(sorted(x[0] for x in recs if x[13] == 1), want1)
        # Node 1's first request (+1 ms) before node 2's (+3 ms), whatever
        # the order of the arguments; node 2's pid 77 reads (+4 ms) between
        # node 1's.
        self.assertEqual(recs[0][13], 1)
        self.assertEqual([x[13] for x in recs if x[3] == READ][:4], [1, 1, 1, 1])
        self.assertIn(2, [x[13] for x in recs if x[3] == READ][4:8])
        # Files by name: train/a one id on both nodes (node 1's id, the
        # nodes taken in node order); train/c moved off 10.
        names = m["names"]
        files = {v: k for k, v in names.items() if not k & JOB_BIT}
        self.assertEqual(set(files), {"train/a", "train/b", "train/c", "train/syn"})
        self.assertEqual(files["train/syn"], SYN)
        self.assertEqual(files["train/a"], 10)
        self.assertNotIn(files["train/c"], (10, 11))
        fid_by_node = {(x[13], x[9]) for x in recs if x[3] == READ}
        self.assertEqual(fid_by_node, {(1, 10), (1, 11), (1, SYN), (2, 10), (2, files["train/c"])})
        # Jobs by name: train is one job on both nodes, eval another.
        jobs = {v: k & 0xFFFFFFFF for k, v in names.items() if k & JOB_BIT and not k & NODE_BIT}
        self.assertEqual(set(jobs), {"train", "eval"})
        self.assertEqual({x[12] for x in recs if x[13] == 1}, {jobs["train"]})
        self.assertEqual({x[12] for x in recs if x[13] == 2}, {jobs["train"], jobs["eval"]})
        self.assertNotEqual(jobs["train"], jobs["eval"])
        # Each node's source trace is named.
        self.assertEqual(names[JOB_BIT | NODE_BIT | 1], a)
        self.assertEqual(names[JOB_BIT | NODE_BIT | 2], b)

    def test_summary_per_node(self):
        a, b, n1, n2 = self.two_nodes("s")
        out = self.path("s.trc")
        run("merge", "-o", out, a, b)
        s = json.loads(run("summary", out, "--json").stdout)
        self.assertEqual(s["version"], 3)
        self.assertEqual(s["records"], len(n1) + len(n2))
        nodes = {n["node"]: n for n in s["nodes"]}
        self.assertEqual(set(nodes), {1, 2})
        self.assertEqual(nodes[1]["reads"], 9)
        self.assertEqual(nodes[2]["reads"], 6)
        self.assertEqual(nodes[1]["read_bytes"], 9 * MiB)
        self.assertEqual(nodes[2]["read_bytes"], 6 * MiB)
        self.assertEqual(nodes[1]["requests"], len(n1))
        self.assertEqual(nodes[1]["trace"], a)
        # Node 1's data span: first read at 2 ms, last read's reply at
        # 6 ms since its start (pid 78's last at 5.5 ms, 0.5 ms long).
        self.assertAlmostEqual(nodes[1]["data_span_s"], 0.004, places=6)
        self.assertAlmostEqual(nodes[1]["mb_per_s"], 9 * MiB / 0.004 / 1e6, places=3)
        # The cluster over its data span: node 1's first read (+2 ms) to
        # node 2's last reply (+3 ms + 4.5 ms).
        c = s["cluster"]
        self.assertEqual(c["bytes"], 15 * MiB)
        self.assertAlmostEqual(c["data_span_s"], 0.0055, places=6)
        self.assertAlmostEqual(c["mb_per_s"], 15 * MiB / 0.0055 / 1e6, places=3)
        # pid 77 on both nodes: two clients, not one.
        clients = {(x["node"], x["pid"]) for x in s["clients"]}
        self.assertEqual(clients, {(1, 77), (1, 78), (1, 79), (2, 77), (2, 90)})
        jobs = {j["name"]: j for j in s["jobs"]}
        self.assertEqual(jobs["train"]["nodes"], 2)
        self.assertEqual(jobs["train"]["processes"], 4)
        self.assertEqual(jobs["eval"]["nodes"], 1)
        text = run("summary", out).stdout
        self.assertIn("merged: 2 nodes", text)
        self.assertIn("nodes (MB/s", text)

    def test_export_carries_node(self):
        a, b, n1, n2 = self.two_nodes("e")
        out = self.path("e.trc")
        run("merge", "-o", out, a, b)
        rows = list(csv.DictReader(io.StringIO(run("export", "--csv", out).stdout)))
        self.assertEqual(len(rows), len(n1) + len(n2))
        self.assertEqual(sorted(int(x["node"]) for x in rows),
                         [1] * len(n1) + [2] * len(n2))
        ch = json.loads(run("export", "--chrome", out).stdout)
        names = {e["args"]["name"] for e in ch["traceEvents"] if e.get("name") == "process_name"}
        self.assertIn("node 2, client pid 77", names)
        self.assertIn("node 1, client pid 77", names)
        self.assertEqual({e["args"]["node"] for e in ch["traceEvents"] if e["ph"] == "X"}, {1, 2})
        # A node's own trace has no node column.
        self.assertNotIn("node", run("export", "--csv", a).stdout.splitlines()[0])

    def test_plot_reads_a_merged_trace(self):
        """plot reads a merged trace (its 64-byte records), alone and beside
        a node's own trace."""
        ok = subprocess.run(["/usr/bin/python3", "-c", "import matplotlib, numpy"],
                            capture_output=True).returncode == 0
        dltest.require(ok, "python3-matplotlib not installed")
        a, b, _, _ = self.two_nodes("p")
        out = self.path("p.trc")
        run("merge", "-o", out, a, b)
        for args, png in (([out], "p.png"), ([out, a], "p2.png")):
            r = run("plot", *args, "-o", self.path(png))
            self.assertEqual(r.stderr.strip(), "")
            with open(self.path(png), "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")

    def test_issued_calls_per_node(self):
        """Two hosts, one pid and tid on both, each reading the same 2 MiB
        as two 1 MiB pieces, interleaved in time: a node's pieces join into
        one call, never with the other node's."""
        def piece(t, off):
            return (t, READ, 5, 5, 10, off, MiB, 100000, 1)
        a = write_node(self.path("i1.trc"), 1, EPOCH, 10**9,
                       [piece(0, 0), piece(200000, MiB)], {10: "f"})
        b = write_node(self.path("i2.trc"), 2, EPOCH + 100000, 10**9 + 100000,
                       [piece(0, 0), piece(200000, MiB)], {10: "f"})
        out = self.path("i.trc")
        run("merge", "-o", out, a, b)
        s = json.loads(run("summary", out, "--json").stdout)
        iss = s["ops"]["read"]["issued"]
        self.assertEqual(iss["count"], 2, iss)
        self.assertEqual([(h["lo"], h["count"]) for h in iss["size_hist"]], [(2 * MiB, 2)], iss)

    def test_mono_keeps_monotonic_times(self):
        # One host: same monotonic clock, the wall clock stepped by 1 s
        # between the starts; --mono ignores the step.
        n1 = reads(5, 10, 0, 2)
        n2 = reads(6, 10, 0, 2)
        a = write_node(self.path("o1.trc"), 1, EPOCH, 10**9, n1, {10: "x"})
        b = write_node(self.path("o2.trc"), 2, EPOCH + 10**9 + 10**6, 10**9 + 10**6, n2, {10: "x"})
        run("merge", "-o", self.path("o.trc"), "--mono", a, b)
        m = read_merged(self.path("o.trc"))
        self.assertEqual(sorted(x[0] for x in m["recs"] if x[13] == 2),
                         sorted(10**9 + 10**6 + x[0] for x in n2))
        run("merge", "-o", self.path("o2m.trc"), a, b)
        m = read_merged(self.path("o2m.trc"))
        self.assertEqual(sorted(x[0] for x in m["recs"] if x[13] == 2),
                         sorted(10**9 + 10**9 + 10**6 + x[0] for x in n2))

    def test_refusals(self):
        a, b, _, _ = self.two_nodes("r")
        dup = write_node(self.path("dup.trc"), 1, EPOCH, 10**9, reads(1, 1, 0, 1), {1: "f"})
        r = run("merge", "-o", self.path("x.trc"), a, dup, check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("node 1 twice", r.stderr)
        alone = write_node(self.path("alone.trc"), 0, EPOCH, 10**9, reads(1, 1, 0, 1), {1: "f"})
        r = run("merge", "-o", self.path("x.trc"), a, alone, check=False)
        self.assertIn("node 0 in the header", r.stderr)
        v1 = write_node(self.path("v1.trc"), 3, EPOCH, 10**9, reads(1, 1, 0, 1), {1: "f"},
                        version=1)
        r = run("merge", "-o", self.path("x.trc"), a, v1, check=False)
        self.assertIn("version 1 trace", r.stderr)
        run("merge", "-o", self.path("ab.trc"), a, b)
        r = run("merge", "-o", self.path("x.trc"), self.path("ab.trc"), check=False)
        self.assertIn("already a merged trace", r.stderr)
        r = run("merge", "-o", a, a, b, check=False)
        self.assertIn("is the input", r.stderr)
        self.assertEqual(read_merged(a)["node"], 1, "the input was overwritten")
        r = run("merge", a, b, check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("-o OUT is required", r.stderr)
        self.assertFalse(os.path.exists(self.path("x.trc")))


if __name__ == "__main__":
    unittest.main()
