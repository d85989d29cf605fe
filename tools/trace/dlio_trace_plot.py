#!/usr/bin/python3
"""dlio-trace plot TRACE -o OUT.png: the pictures that characterize a deep
learning job's I/O, from a dliofs trace, in one PNG:

  1. spatial pattern: where in each file requests go (x: file, by name;
     y: offset in the file; each request a bar over the bytes it asked
     for), colour = request size;
  2. temporal pattern: offset in the file over time, colour = request size
     (both as Mendez et al. draw them);
  3. files over time: which file each client reads when, colour = client;
  4. throughput over time: MiB/s read and written, requests/s.

dlio-trace plot A B -o OUT.png: two runs (e.g. the real job and its
emulation) one above the other on the same time scale, each from its own
first request, for each of:

  1. throughput over time (MiB/s read and written; same y scale);
  2. reads per file over time: each read a point at (time, file), files
     matched by name across the two traces and ranked by name;
  3. per-process lanes: each client thread (pid/tid; version 1 traces: each
     process) a lane, each request a bar from its arrival to its completion
     (read blue, write red, other grey).

Run by `dlio-trace plot` with /usr/bin/python3 (Debian's python3-matplotlib
and python3-numpy). The trace is parsed here with numpy, in the layout of
include/dliofs/trace.h.
"""
import argparse
import json
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
    if magic != MAGIC or version not in (1, 2, 3) or rec_size < 56:
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
    pid_label = lambda p: "pid %d" % p
    if version == 3:
        # A merged trace of a cluster's nodes: each record's node follows
        # it. A process is a node and a pid (hosts reuse pids): the node
        # goes above the pid's 22 bits (Linux's largest pid is 2^22).
        node = np.frombuffer(data, dtype=np.dtype({"names": ["node"], "formats": ["<u4"],
                                                   "offsets": [56], "itemsize": rec_size}),
                             count=n, offset=HEADER.size)["node"]
        recs = recs.copy()
        recs["pid"] = (node.astype(np.uint32) << np.uint32(22)) | (recs["pid"] & 0x3FFFFF)
        pid_label = lambda p: "node %d pid %d" % (p >> 22, p & 0x3FFFFF)
    recs = recs[np.argsort(recs["start_ns"], kind="stable")]
    return {"recs": recs, "names": names, "start_mono": start_mono, "dropped": dropped,
            "version": version, "pid_label": pid_label,
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


def rel_times(np, recs):
    """Start and end of each record in seconds from the trace's first request."""
    start = recs["start_ns"].astype(np.int64)
    t0 = int(start.min()) if len(start) else 0
    dur = (recs["dur_lo"].astype(np.float64) + recs["dur_hi"].astype(np.float64) * 2.0 ** 32) / 1e9
    s = (start - np.int64(t0)) / 1e9
    return s, s + dur


def pair_plot(np, plt, trs, labels, args):
    """Two traces, one above the other, aspect by aspect, on one time axis."""
    times = [rel_times(np, tr["recs"]) for tr in trs]
    span = max([float(e.max()) for _, e in times if len(e)] + [1e-3])
    edges = np.linspace(0, span * (1 + 1e-9), 201)
    width = edges[1] - edges[0]
    # Files matched by name across the traces; a file without a name is its
    # trace's own.
    fname = [lambda fid, tr=tr, k=k: tr["names"].get(int(fid), "%s#%d" % ("AB"[k], int(fid)))
             for k, tr in enumerate(trs)]
    allnames = set()
    for k, tr in enumerate(trs):
        rd = tr["recs"][tr["recs"]["op"] == OP_READ]
        allnames.update(fname[k](f) for f in np.unique(rd["file_id"]))
    rank = {n: i for i, n in enumerate(sorted(allnames))}

    fig, axes = plt.subplots(6, 1, figsize=(12, 20), dpi=100, sharex=True)
    rng = np.random.default_rng(1)
    peak = 0.0
    for k, (tr, lab) in enumerate(zip(trs, labels)):
        recs = tr["recs"]
        start, end = times[k]
        nbytes = np.maximum(recs["result"], 0).astype(np.float64)
        ax = axes[k]
        total = 0.0
        for op, name, colour in ((OP_READ, "read", "tab:blue"), (OP_WRITE, "write", "tab:red")):
            m = recs["op"] == op
            if m.any():
                h = spread(np, start[m], end[m], nbytes[m], edges) / width / (1 << 20)
                peak = max(peak, float(h.max()))
                ax.plot(edges[:-1] + width / 2, h, color=colour, label="%s MiB/s" % name)
                total += float(nbytes[m].sum())
        took = float(end.max()) if len(end) else 0.0
        ax.set_ylabel("MiB/s")
        ax.set_title("%s: throughput over time (%.1f MiB in %.2f s, %.1f MiB/s)"
                     % (lab, total / (1 << 20), took, total / (1 << 20) / max(took, 1e-9)),
                     fontsize="medium")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="upper right", fontsize="small")

        ax = axes[2 + k]
        m = recs["op"] == OP_READ
        rd, rs = recs[m], start[m]
        sel = np.arange(len(rd))
        if len(sel) > args.max_points:
            sel = np.sort(rng.choice(len(rd), args.max_points, replace=False))
        if len(sel):
            y = np.array([rank[fname[k](f)] for f in rd["file_id"][sel]], dtype=np.float64)
            pids = np.unique(rd["pid"])
            c = np.searchsorted(pids, rd["pid"][sel])
            cmap = plt.get_cmap("tab10" if len(pids) <= 10 else "tab20")
            ax.scatter(rs[sel], y, s=3 if len(sel) > 20000 else 8, c=[cmap(i % cmap.N) for i in c],
                       linewidths=0)
        ax.set_ylim(-0.5, max(len(rank), 1) - 0.5)
        ax.set_ylabel("file (by name, %d)" % len(rank))
        ax.set_title("%s: reads per file over time (%d reads of %d files; colour: process)"
                     % (lab, len(rd), len(np.unique(rd["file_id"]))), fontsize="medium")

        ax = axes[4 + k]
        # A lane per thread of each process (version 2 records the
        # client's thread; version 1 only its process).
        if tr["version"] >= 2:
            key = recs["pid"].astype(np.uint64) << np.uint64(32) | recs["tid"].astype(np.uint64)
        else:
            key = recs["pid"].astype(np.uint64)
        keys, lane = np.unique(key, return_inverse=True)
        lane = lane.astype(np.float64)
        pids = np.unique(recs["pid"])
        lane_names = (["%s/%d" % (tr["pid_label"](int(x) >> 32)[4 if tr["version"] < 3 else 0:],
                                  int(x) & 0xFFFFFFFF) for x in keys]
                  if tr["version"] >= 2 else [str(int(x)) for x in keys])
        sel = np.arange(len(recs))
        if len(sel) > args.max_points:
            sel = np.sort(rng.choice(len(recs), args.max_points, replace=False))
        ops = recs["op"][sel]
        # Data requests drawn last, over the opens and closes around them.
        for test, colour, name in (((ops != OP_READ) & (ops != OP_WRITE), "tab:gray", "other"),
                                   (ops == OP_WRITE, "tab:red", "write"),
                                   (ops == OP_READ, "tab:blue", "read")):
            idx = sel[test]
            if len(idx):
                # A bar at least a pixel wide: a 20 us read on a 60 s axis.
                ax.hlines(lane[idx], start[idx], np.maximum(end[idx], start[idx] + span / 2000),
                          colors=colour, linewidth=max(1.0, min(6.0, 120.0 / max(len(keys), 1))),
                          label=name)
        ax.set_yticks(range(len(keys)))
        ax.set_yticklabels(lane_names if len(keys) <= 40 else [""] * len(keys), fontsize="small")
        ax.set_ylim(-0.7, max(len(keys), 1) - 0.3)
        ax.set_ylabel("pid/tid" if tr["version"] >= 2 else "pid")
        ax.set_title("%s: per-process lanes (%d processes, %d lanes: one per thread; bar: "
                     "arrival to completion)" % (lab, len(pids), len(keys)), fontsize="medium")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="upper right", fontsize="small")
    for ax in axes[:2]:
        ax.set_ylim(0, peak * 1.1 if peak > 0 else 1)
    axes[-1].set_xlim(0, span)
    axes[-1].set_xlabel("time since the trace's first request (s); same scale for both runs")
    fig.suptitle(args.title or "%s (above) vs %s (below)" % tuple(labels))
    fig.tight_layout(rect=(0, 0, 1, 0.98))
    try:
        fig.savefig(args.output)
    except OSError as e:
        print("dlio-trace plot: %s: %s" % (args.output, e), file=sys.stderr)
        return 1
    return 0


def data_points(np, tr):
    """The data requests (reads and writes) of a trace, for the spatial and
    temporal panels: each with its file's rank (files in name order), its
    offset within the file, its size asked for, its arrival (s since the
    trace started) and its client's index."""
    recs = tr["recs"]
    data = recs[(recs["op"] == OP_READ) | (recs["op"] == OP_WRITE)]
    fids, inv = np.unique(data["file_id"], return_inverse=True)
    label = lambda fid: tr["names"].get(int(fid), "#%d" % int(fid))
    order = sorted(range(len(fids)), key=lambda i: (label(fids[i]), int(fids[i])))
    rank_of = np.zeros(len(fids), dtype=np.int64)
    rank_of[order] = np.arange(len(fids))
    pids = np.unique(recs["pid"])
    return {
        "file": rank_of[inv].reshape(-1),
        "files": [label(fids[i]) for i in order],
        "offset": data["offset"].astype(np.float64),
        "size": data["size"].astype(np.float64),
        "time": (data["start_ns"].astype(np.int64) - np.int64(tr["start_mono"])) / 1e9,
        "client": np.searchsorted(pids, data["pid"]),
        "pids": pids,
        "write": data["op"] == OP_WRITE,
    }


def size_colours(np, size):
    """log2 of the request sizes and the colour range: whole powers of two."""
    lg = np.log2(np.maximum(size, 1))
    if not len(lg):
        return lg, 0.0, 1.0
    lo, hi = float(np.floor(lg.min())), float(np.ceil(lg.max()))
    return lg, lo, hi if hi > lo else lo + 1


def size_colourbar(np, fig, sc, cax, lo, hi):
    cb = fig.colorbar(sc, cax=cax, label="request size")
    ticks = np.arange(lo, hi + 1)
    if len(ticks) > 12:
        ticks = ticks[::int(np.ceil(len(ticks) / 12))]
    cb.set_ticks(ticks)
    cb.set_ticklabels([human(2 ** int(k)) for k in ticks])


def single_plot(np, plt, tr, args):
    """One trace: spatial and temporal pattern with offsets within each
    file, coloured by request size (as Mendez et al. draw them), which file
    each client reads when, and throughput over time."""
    recs = tr["recs"]
    d = data_points(np, tr)
    n, nfiles = len(d["offset"]), len(d["files"])
    top = float((d["offset"] + d["size"]).max()) if n else 1.0
    unit, uname = ((1 << 30, "GiB") if top >= (4 << 30) else (1 << 20, "MiB")
                   if top >= (4 << 20) else (1 << 10, "KiB"))
    lg, lo, hi = size_colours(np, d["size"])

    # The scatter plots draw a sample when there are many requests.
    rng = np.random.default_rng(1)
    sel = np.arange(n)
    if n > args.max_points:
        sel = np.sort(rng.choice(n, args.max_points, replace=False))
    # Small requests drawn last, over the large ones around them.
    sel = sel[np.argsort(-d["size"][sel], kind="stable")]
    msize = 14 if len(sel) < 5000 else 4 if len(sel) < 50000 else 1.5

    # A column for the colour bars beside the panels, so that the time axes
    # of panels 2-4 line up.
    fig = plt.figure(figsize=(11, 17), dpi=100)
    gs = fig.add_gridspec(4, 2, width_ratios=(60, 1.2), hspace=0.42, wspace=0.03, left=0.08,
                          right=0.87, top=0.95, bottom=0.04)
    axes = [fig.add_subplot(gs[i, 0]) for i in range(4)]
    caxes = [fig.add_subplot(gs[i, 1]) for i in range(2)]
    fig.suptitle(args.title or "%s: %d requests, clients: %d, files: %d%s" % (
        os.path.basename(args.trace), len(recs), len(np.unique(recs["pid"])), nfiles,
        "" if not tr["dropped"] else ", %d dropped" % tr["dropped"]))

    def file_axis(ax, horizontal):
        ticks = range(nfiles) if nfiles <= 30 else []
        (ax.set_xticks if horizontal else ax.set_yticks)(list(ticks))
        if nfiles <= 30:
            (ax.set_xticklabels if horizontal else ax.set_yticklabels)(
                d["files"], rotation=90 if horizontal else 0, fontsize="x-small")
        (ax.set_xlim if horizontal else ax.set_ylim)(-0.6, max(nfiles, 1) - 0.4)
        (ax.set_xlabel if horizontal else ax.set_ylabel)(
            "file (%d, by name)" % nfiles)

    # 1. Spatial: each request a bar over the bytes it asked for, in its file.
    ax = axes[0]
    if len(sel):
        x = d["file"][sel]
        y0 = d["offset"][sel] / unit
        y1 = (d["offset"][sel] + d["size"][sel]) / unit
        cmap = plt.get_cmap("viridis")
        norm = plt.Normalize(lo, hi)
        ax.vlines(x, y0, y1, colors=cmap(norm(lg[sel])),
                  linewidth=max(1.0, min(8.0, 400.0 / max(nfiles, 1))))
        sc = ax.scatter(x, y0, c=lg[sel], s=msize, cmap=cmap, norm=norm, linewidths=0)
        size_colourbar(np, fig, sc, caxes[0], lo, hi)
    file_axis(ax, True)
    ax.set_ylabel("offset in the file (%s)" % uname)
    ax.set_title("spatial pattern: where in each file requests go (bar: the bytes asked for; "
                 "colour: request size)", fontsize="medium")

    # 2. Temporal: offset within the file over time.
    ax = axes[1]
    if len(sel):
        sc = ax.scatter(d["time"][sel], d["offset"][sel] / unit, c=lg[sel], s=msize,
                        cmap="viridis", vmin=lo, vmax=hi, linewidths=0)
        size_colourbar(np, fig, sc, caxes[1], lo, hi)
    ax.set_xlabel("time since the trace started (s)")
    ax.set_ylabel("offset in the file (%s)" % uname)
    ax.set_title("temporal pattern: offset in the file over time (colour: request size)",
                 fontsize="medium")

    # 3. Which file each client reads when.
    ax = axes[2]
    pids = d["pids"]
    if len(sel):
        cmap = plt.get_cmap("tab10" if len(pids) <= 10 else "tab20")
        for i, p in enumerate(pids.tolist()):
            m = sel[d["client"][sel] == i]
            if len(m):
                ax.scatter(d["time"][m], d["file"][m], s=msize, color=cmap(i % cmap.N),
                           linewidths=0, label=tr["pid_label"](p))
        if len(pids) <= 12 and ax.get_legend_handles_labels()[0]:
            ax.legend(loc="upper left", markerscale=3, fontsize="small")
    file_axis(ax, False)
    ax.set_xlabel("time since the trace started (s)")
    ax.set_title("files over time (colour: client)", fontsize="medium")

    ax = axes[3]
    if len(recs):
        start = (recs["start_ns"].astype(np.int64) - np.int64(tr["start_mono"])) / 1e9
        dur = (recs["dur_lo"].astype(np.float64) + recs["dur_hi"].astype(np.float64) * 2.0 ** 32) / 1e9
        end = start + dur
        t_lo, t_hi = float(start.min()), float(end.max())
        span = max(t_hi - t_lo, 1e-3)
        nb = 200 if len(recs) > 2000 else max(10, len(recs) // 10)
        edges = np.linspace(t_lo, t_lo + span * (1 + 1e-9), nb + 1)
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
    ax.set_title("throughput over time", fontsize="medium")
    # The time panels share one axis.
    if len(recs):
        for a in (axes[1], axes[2], axes[3]):
            a.set_xlim(t_lo - span * 0.01, t_lo + span * 1.01)

    for cax in caxes:
        if not cax.collections and not cax.images:
            cax.set_axis_off()
    # Where each panel is, in pixels from the top left (a PNG text chunk):
    # for tests and scripts that look at one panel.
    height = fig.get_figheight() * fig.dpi
    boxes = {}
    for name, ax in zip(("spatial", "temporal", "files", "throughput"), axes):
        b = ax.get_window_extent()
        boxes[name] = [round(b.x0), round(height - b.y1), round(b.x1), round(height - b.y0)]
    try:
        fig.savefig(args.output, metadata={"dlio-trace-panels": json.dumps(boxes)})
    except OSError as e:
        print("dlio-trace plot: %s: %s" % (args.output, e), file=sys.stderr)
        return 1
    return 0


def main():
    ap = argparse.ArgumentParser(prog="dlio-trace plot", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace", nargs="+", help="one trace, or two to compare (A above B)")
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

    if len(args.trace) > 2:
        print("dlio-trace plot: one trace, or two (A B) to compare; %d given" % len(args.trace),
              file=sys.stderr)
        return 2
    trs = []
    for path in args.trace:
        try:
            trs.append(load(np, path))
        except (OSError, ValueError, struct.error) as e:
            print("dlio-trace plot: %s: %s" % (path, e), file=sys.stderr)
            return 1
    if len(trs) == 2:
        labels = [os.path.basename(p) for p in args.trace]
        if labels[0] == labels[1]:
            labels = ["A " + args.trace[0], "B " + args.trace[1]]
        return pair_plot(np, plt, trs, labels, args)
    args.trace = args.trace[0]
    return single_plot(np, plt, trs[0], args)


if __name__ == "__main__":
    sys.exit(main())
