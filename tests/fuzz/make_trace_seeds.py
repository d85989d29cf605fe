"""Seed traces for fuzz_trace, written by the golden-trace writer of
tests/tools/trace/test_dlio_trace.py (which follows include/dliofs/trace.h on its own):
each workload there with and without a footer, with drops, one record, and
an empty trace. Usage: make_trace_seeds.py OUTDIR"""
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
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
