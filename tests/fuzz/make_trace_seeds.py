"""Seed traces for fuzz_trace, written by the golden-trace writer of
tests/tools/trace/test_dlio_trace.py (which follows include/dliofs/trace.h on its own):
each workload there with and without a footer, with drops, one record, and
an empty trace; and a merged trace of two nodes (version 3: each record with
its node). Usage: make_trace_seeds.py OUTDIR"""
import struct
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools", "trace"))
import test_dlio_trace as g  # noqa: E402


def main(out):
    os.makedirs(out, exist_ok=True)
    cases = {
        "seq": g.seq_one_file(16),
        "shuffled": g.shuffled_epoch(12),
        "two_procs": g.two_procs(6, 2),
        "one": ([g.Rec(0, "read", 1, 1, 0, 4096)], {1: "a"}),
        "empty": ([], {}),
    }
    for name, (recs, names) in cases.items():
        g.write_trace(os.path.join(out, name + ".trace"), recs, names)
        g.write_trace(os.path.join(out, name + "-nofooter.trace"), recs, names, footer=False)
    recs, names = g.seq_one_file(4)
    g.write_trace(os.path.join(out, "dropped.trace"), recs, names, dropped=12345)
    write_merged(os.path.join(out, "merged.trace"))
    return 0


def write_merged(path):
    """Two nodes reading one file, records out of order (include/dliofs/trace.h,
    version 3)."""
    recs, names = g.two_procs(4, 2)
    body = []
    for k, r in enumerate(recs):
        body.append(r.pack() + struct.pack("<II", 1 + k % 2, 0))
    body.reverse()
    out = g.HEADER.pack(g.MAGIC, 3, g.REC.size + 8, g.EPOCH_NS, g.START_MONO, 0xFFFF, 0,
                        b"merged.yaml") + b"".join(body)
    noff = len(out)
    names = dict(names)
    names[(1 << 63) | (1 << 62) | 1] = "t0.bin"
    for fid in sorted(names):
        nm = names[fid].encode()
        out += g.NAME.pack(fid, len(nm), 0) + nm
    end = g.START_MONO + max(r.t + r.dur for r in recs) + 1000
    out += g.FOOTER.pack(len(recs), 0, noff, len(names), end, g.MAGIC)
    with open(path, "wb") as f:
        f.write(out)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
