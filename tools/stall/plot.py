#!/usr/bin/python3
"""Draw dlio-stall's report (its --json document) as one timeline:

  steps    each step's wait for data (red) and compute (green), one lane per run
  GPU      busy intervals recorded through CUPTI (or why there are none)
  storage  the mount's read throughput, from .dliofs/stats.json samples

usage: plot.py REPORT.json OUT.png
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

WAIT, COMPUTE, GPU, IO = "#d62728", "#2ca02c", "#1f77b4", "#9467bd"


def bars(ax, y, spans, color, h=0.8):
    if spans:
        ax.broken_barh(spans, (y - h / 2, h), facecolors=color, linewidth=0)


def step_spans(run):
    st = run.get("steps", {})
    starts, waits, comps = st.get("start_s", []), st.get("wait_s", []), st.get("compute_s", [])
    w = [(s, d) for s, d in zip(starts, waits) if d > 0]
    c = [(s + d, k) for s, d, k in zip(starts, waits, comps) if k > 0]
    return w, c


def throughput(run):
    smp = run.get("io", {}).get("samples", {})
    t, b = smp.get("t_s", []), smp.get("read_bytes", [])
    xs, ys = [], []
    for i in range(1, len(t)):
        dt = t[i] - t[i - 1]
        if dt > 0:
            xs += [t[i - 1], t[i]]
            ys += [(b[i] - b[i - 1]) / dt / 1e6] * 2
    return xs, ys


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        rep = json.load(f)
    runs = rep.get("runs", [])
    if not runs:
        sys.exit("plot.py: no runs in %s" % sys.argv[1])
    # The run the storage and GPU panels show: the configured one in a diff.
    main_run = runs[-1]

    fig, (a1, a2, a3) = plt.subplots(3, 1, sharex=True, figsize=(12, 6.5),
                                     gridspec_kw={"height_ratios": [max(1, len(runs)), 1, 1.4]})
    for i, run in enumerate(runs):
        w, c = step_spans(run)
        y = len(runs) - 1 - i
        bars(a1, y, w, WAIT)
        bars(a1, y, c, COMPUTE)
    a1.set_yticks(range(len(runs)))
    a1.set_yticklabels([r.get("name", "?") for r in reversed(runs)])
    a1.set_ylim(-0.6, len(runs) - 0.4)
    a1.legend(handles=[plt.Rectangle((0, 0), 1, 1, color=WAIT, label="waiting for data"),
                       plt.Rectangle((0, 0), 1, 1, color=COMPUTE, label="compute")],
              loc="upper right", fontsize=8)
    s = main_run.get("summary", {})
    title = "%s: data wait %.1f %% of step time" % (main_run.get("name", "run"),
                                                      100 * (s.get("wait_share") or 0))
    d = rep.get("diff")
    if d and d.get("valid"):
        title += " | prep stall %.1f %%, fetch stall %.1f %%" % (
            100 * d.get("prep_ratio", 0), 100 * d.get("fetch_ratio", 0))
    a1.set_title(title, fontsize=10)

    gpu = main_run.get("gpu", {})
    if gpu.get("measured"):
        bars(a2, 0, [(b0, b1 - b0) for b0, b1 in gpu.get("busy", [])], GPU)
        a2.set_title("GPU busy: idle %.1f %%, %.1f %% of idle explained by input" % (
            100 * (gpu.get("idle_share") or 0), 100 * (gpu.get("input_share_of_idle") or 0)),
            fontsize=9)
    else:
        a2.text(0.5, 0.5, "GPU: " + gpu.get("status", "not measured"), ha="center",
                va="center", transform=a2.transAxes, fontsize=8)
    a2.set_yticks([0])
    a2.set_yticklabels(["GPU"])
    a2.set_ylim(-0.6, 0.6)

    xs, ys = throughput(main_run)
    if xs:
        a3.plot(xs, ys, color=IO)
        a3.fill_between(xs, ys, color=IO, alpha=0.25)
    else:
        a3.text(0.5, 0.5, "no mount statistics", ha="center", va="center",
                transform=a3.transAxes, fontsize=8)
    a3.set_ylabel("mount read MB/s")
    a3.set_xlabel("seconds since the job started")
    a3.set_ylim(bottom=0)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=100)


if __name__ == "__main__":
    main()
