#!/usr/bin/python3
"""dlio-trace plot TRACE -o OUT.png: the pictures that characterize a deep
learning job's I/O, from a dliofs trace, in one PNG:

  1. spatial pattern: where in the data set each client reads (data set
     offset = files laid end to end in name order, then the offset in the
     file), colour = request size;
  2. temporal pattern: data set offset over time, colour = client;
  3. throughput over time: MiB/s read and written, requests/s.

Run by `dlio-trace plot` with /usr/bin/python3 (Debian's python3-matplotlib
and python3-numpy). The trace is parsed here with numpy, in the layout of
include/dliofs/trace.h.
"""
import argparse
import os
import struct
import sys

HEADER = struct.Struct("<8sIIQQII256s")
FOOTER = struct.Struct("<QQQQQ8s")
NAME = struct.Struct("<QII")
MAGIC = b"DLIOTRC1"
OP_READ, OP_WRITE = 4, 5


def rec_dtype(np, rec_size):
    fields = [("start_ns", "<u8", 0), ("dur_lo", "<u4", 8), ("dur_hi", "<u2", 12),
              ("op", "u1", 14), ("flags", "u1", 15), ("queue_ns", "<u4", 16),
              ("pid", "<u4", 20), ("tid", "<u4", 24), ("result", "<i4", 28),
              ("file_id", "<u8", 32), ("offset", "<u8", 40), ("size", "<u4", 48)]
    return np.dtype({"names": [f[0] for f in fields], "formats": [f[1] for f in fields],
                     "offsets": [f[2] for f in fields], "itemsize": rec_size})


def load(np, path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < HEADER.size:
        raise ValueError("too short for a trace header")
    magic, version, rec_size, epoch_ns, start_mono, _mask, _res, config = HEADER.unpack_from(data)
    # Version 2 (what the mount writes since jobs) has the same record
    # layout; its pid is the client's process, not its thread.
    if magic != MAGIC or version not in (1, 2) or rec_size < 56:
        raise ValueError("not a dliofs trace (magic %r, version %d)" % (magic, version))
    names = {}
    dropped = None
    end = len(data)
    if len(data) >= HEADER.size + FOOTER.size:
        nrec, drop, names_off, nnames, _end_mono, fmagic = FOOTER.unpack_from(data, len(data) - FOOTER.size)
        if fmagic == MAGIC and HEADER.size <= names_off <= len(data) - FOOTER.size:
            dropped = drop
            end = names_off
            off = names_off
            for _ in range(nnames):
                fid, ln, _ = NAME.unpack_from(data, off)
                off += NAME.size
                names[fid] = data[off:off + ln].decode("utf-8", "replace")
                off += ln
    if dropped is None:
        print("dlio-trace plot: %s: no footer: plotting the whole records without names" % path,
              file=sys.stderr)
    n = (end - HEADER.size) // rec_size
    recs = np.frombuffer(data, dtype=rec_dtype(np, rec_size), count=n, offset=HEADER.size)
    recs = recs[np.argsort(recs["start_ns"], kind="stable")]
    return {"recs": recs, "names": names, "start_mono": start_mono, "dropped": dropped,
            "config": config.split(b"\0", 1)[0].decode("utf-8", "replace")}


def spread(np, start, end, nbytes, edges):
    """Bytes moved in each bin, each request's bytes spread evenly over its
    duration: F(x) = sum r_i (min(x, e_i) - min(x, s_i)), r_i = bytes / dur,
    evaluated at the edges with sorted prefix sums (no N x bins work)."""
    rate = nbytes / np.maximum(end - start, 1e-9)

    def ramp(points):
        o = np.argsort(points, kind="stable")
        p, w = points[o], rate[o]
        cw = np.concatenate(([0.0], np.cumsum(w)))
        cwp = np.concatenate(([0.0], np.cumsum(w * p)))
        k = np.searchsorted(p, edges, side="right")
        return edges * cw[k] - cwp[k]

    return np.diff(ramp(start) - ramp(end))


def human(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return "%g %s" % (n, unit)
        n /= 1024
    return str(n)


def main():
    ap = argparse.ArgumentParser(prog="dlio-trace plot", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("-o", "--output", required=True, help="PNG to write")
    ap.add_argument("--title", default=None)
    ap.add_argument("--max-points", type=int, default=200000,
                    help="requests drawn in the scatter plots (a sample beyond this)")
    args = ap.parse_args()

    try:
        import numpy as np
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        print("dlio-trace plot: needs numpy and matplotlib (apt install python3-matplotlib): %s" % e,
              file=sys.stderr)
        return 1

    try:
        tr = load(np, args.trace)
    except (OSError, ValueError, struct.error) as e:
        print("dlio-trace plot: %s: %s" % (args.trace, e), file=sys.stderr)
        return 1
    recs = tr["recs"]
    t0 = tr["start_mono"]
    data = recs[(recs["op"] == OP_READ) | (recs["op"] == OP_WRITE)]

    # Data set offset: files end to end in name order, each as long as the
    # furthest byte any request reached.
    fids, inv = np.unique(data["file_id"], return_inverse=True)
    label = lambda fid: tr["names"].get(int(fid), "#%d" % int(fid))
    ends = data["offset"] + data["size"].astype(np.uint64)
    extent = np.zeros(len(fids), dtype=np.uint64)
    np.maximum.at(extent, inv, ends)
    order = sorted(range(len(fids)), key=lambda i: (label(fids[i]), int(fids[i])))
    base = np.zeros(len(fids), dtype=np.float64)
    pos = 0
    for i in order:
        base[i] = pos
        pos += max(int(extent[i]), 1)
    total = max(pos, 1)
    unit, uname = (1 << 30, "GiB") if total >= (4 << 30) else (1 << 20, "MiB") if total >= (4 << 20) else (1 << 10, "KiB")
    dpos = (base[inv] + data["offset"].astype(np.float64)) / unit
    tsec = (data["start_ns"].astype(np.int64) - np.int64(t0)) / 1e9

    pids = np.unique(recs["pid"])
    cidx = np.searchsorted(pids, data["pid"]).astype(np.float64)

    # The scatter plots draw a sample when there are many requests.
    rng = np.random.default_rng(1)
    sel = np.arange(len(data))
    if len(sel) > args.max_points:
        sel = np.sort(rng.choice(len(data), args.max_points, replace=False))

    fig, axes = plt.subplots(3, 1, figsize=(11, 13), dpi=100)
    title = args.title or "%s: %d requests, %d clients, %d files%s" % (
        os.path.basename(args.trace), len(recs), len(pids), len(fids),
        "" if not tr["dropped"] else ", %d dropped" % tr["dropped"])
    fig.suptitle(title)

    ax = axes[0]
    # Marker size: visible for small traces, not a blot for big ones.
    msize = 14 if len(sel) < 5000 else 4 if len(sel) < 50000 else 1.5
    if len(sel):
        jitter = rng.uniform(-0.3, 0.3, len(sel))
        lg = np.log2(np.maximum(data["size"][sel], 1).astype(np.float64))
        lo, hi = np.floor(lg.min()), np.ceil(lg.max())
        if hi <= lo:
            hi = lo + 1
        sc = ax.scatter(cidx[sel] + jitter, dpos[sel], c=lg, s=msize, cmap="viridis",
                        vmin=lo, vmax=hi, linewidths=0)
        cb = fig.colorbar(sc, ax=ax, label="request size")
        ticks = np.arange(lo, hi + 1)
        if len(ticks) > 12:
            ticks = ticks[::int(np.ceil(len(ticks) / 12))]
        cb.set_ticks(ticks)
        cb.set_ticklabels([human(2 ** int(k)) for k in ticks])
    ax.set_xticks(range(len(pids)))
    ax.set_xticklabels([str(p) for p in pids.tolist()], rotation=45 if len(pids) > 8 else 0)
    ax.set_xlim(-0.6, max(len(pids), 1) - 0.4)
    ax.set_xlabel("client pid")
    ax.set_ylabel("data set offset (%s, files in name order)" % uname)
    ax.set_title("spatial pattern: where each client reads and writes")

    ax = axes[1]
    if len(sel):
        cmap = plt.get_cmap("tab10" if len(pids) <= 10 else "tab20")
        for i, p in enumerate(pids.tolist()):
            m = sel[cidx[sel] == i]
            if len(m):
                ax.scatter(tsec[m], dpos[m], s=msize, color=cmap(i % cmap.N), linewidths=0,
                           label="pid %d" % p)
        if len(pids) <= 12:
            ax.legend(loc="upper left", markerscale=4, fontsize="small")
    ax.set_xlabel("time since the trace started (s)")
    ax.set_ylabel("data set offset (%s)" % uname)
    ax.set_title("temporal pattern: offset over time per client")

    ax = axes[2]
    if len(recs):
        start = (recs["start_ns"].astype(np.int64) - np.int64(t0)) / 1e9
        dur = (recs["dur_lo"].astype(np.float64) + recs["dur_hi"].astype(np.float64) * 2.0 ** 32) / 1e9
        end = start + dur
        lo, hi = float(start.min()), float(end.max())
        span = max(hi - lo, 1e-3)
        nb = 200 if len(recs) > 2000 else max(10, len(recs) // 10)
        edges = np.linspace(lo, lo + span * (1 + 1e-9), nb + 1)
        width = edges[1] - edges[0]
        nbytes = np.maximum(recs["result"], 0).astype(np.float64)
        for op, name, colour in ((OP_READ, "read", "tab:blue"), (OP_WRITE, "write", "tab:red")):
            m = recs["op"] == op
            if m.any():
                h = spread(np, start[m], end[m], nbytes[m], edges)
                ax.plot(edges[:-1] + width / 2, h / width / (1 << 20), color=colour,
                        label="%s MiB/s" % name)
        ax.set_ylabel("MiB/s")
        ax2 = ax.twinx()
        h, _ = np.histogram(start, bins=edges)
        ax2.plot(edges[:-1] + width / 2, h / width, color="tab:gray", alpha=0.6, linestyle="--",
                 label="requests/s")
        ax2.set_ylabel("requests/s")
        lines = ax.get_legend_handles_labels()
        lines2 = ax2.get_legend_handles_labels()
        ax.legend(lines[0] + lines2[0], lines[1] + lines2[1], loc="upper right", fontsize="small")
    ax.set_xlabel("time since the trace started (s)")
    ax.set_title("throughput over time")

    fig.tight_layout(rect=(0, 0, 1, 0.97))
    try:
        fig.savefig(args.output)
    except OSError as e:
        print("dlio-trace plot: %s: %s" % (args.output, e), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
