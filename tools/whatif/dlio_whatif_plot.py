#!/usr/bin/python3
"""dlio-whatif's plot: JSON (a sweep's or a search's) -> PNG.

One panel per swept key: the metric's mean at each value of the key, with
min-max bars over the measured runs, one line per combination of the other
keys, and the target as a horizontal line. A search's probes are drawn the
same way, in the order they were run (numbered), with the answer marked.

A key whose values are words (cache.policy=lru,minio) gets a categorical
x axis: its values in the order swept, evenly spaced.

usage: dlio_whatif_plot.py JSON OUT.png [--metric M] [--summary]
(--summary: one line per panel on stdout, "KEY: N points[ (categorical)]",
what was drawn)
Run by dlio-whatif with /usr/bin/python3 (Debian's python3-matplotlib).
"""
import argparse
import json
import math
import sys

LABELS = {"au": "AU (%)", "wait_share": "data-wait share (%)", "samples_per_s": "samples/s",
          "mb_per_s": "MB/s", "run_s": "run time (s)",
          "cache_hit_bytes": "cache hit ratio, bytes (%)",
          "cache_hit_requests": "cache hit ratio, requests (%)"}
SHARES = ("au", "wait_share", "cache_hit_bytes", "cache_hit_requests")


def scale(metric, v):
    return v * 100 if metric in SHARES and v is not None else v


def human(key, v):
    """A tick label in the key's unit, as the settings are written."""
    if key.endswith("bandwidth"):
        units, tail = [(1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB"), (1, "B")], "/s"
    elif key.endswith("latency") or key.endswith("duration") or key.endswith("window"):
        units, tail = [(1e9, "s"), (1e6, "ms"), (1e3, "us"), (1, "ns")], ""
    elif key.endswith("size") or key.endswith("block") or key.endswith("burst"):
        units, tail = [(1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB"), (1, "B")], ""
    else:
        return "%g" % v
    for m, u in units:
        if v >= m:
            return "%g %s%s" % (round(v / m, 2), u, tail)
    return "%g" % v


def points_of(doc):
    """(settings dict, numeric values dict, stats) per point or probe."""
    out = []
    for p in doc.get("points", doc.get("probes", [])):
        settings = {s["key"]: s["value"] for s in p["settings"]}
        values = dict(zip(doc["keys"], p.get("values", [])))
        out.append((settings, values, p.get("stats", {})))
    return out


def categorical(key, pts):
    """A key with a value that is no number: its values in the order swept."""
    cats = []
    for settings, values, _ in pts:
        x = values.get(key)
        if x is None or not isinstance(x, (int, float)) or not math.isfinite(x):
            if key in settings and settings[key] not in cats:
                cats.append(settings[key])
            continue
    if not cats:
        return None
    for settings, _, _ in pts:
        if key in settings and settings[key] not in cats:
            cats.append(settings[key])
    return cats


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("json")
    ap.add_argument("png")
    ap.add_argument("--metric", default=None)
    ap.add_argument("--summary", action="store_true")
    a = ap.parse_args()
    with open(a.json) as f:
        doc = json.load(f)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker  # noqa: F401 (the formatters below)

    metric = a.metric or doc.get("metric", "au")
    keys = [k for k in doc["keys"]]
    pts = points_of(doc)
    fig, axes = plt.subplots(1, max(1, len(keys)), figsize=(6 * max(1, len(keys)), 4.2),
                             squeeze=False)
    for i, key in enumerate(keys):
        ax = axes[0][i]
        series = {}
        cats = categorical(key, pts)
        drawn = 0
        for settings, values, stats in pts:
            st = stats.get(metric)
            x = cats.index(settings[key]) if cats else values.get(key)
            if st is None or st.get("mean") is None or x is None or not math.isfinite(x):
                continue
            drawn += 1
            other = ", ".join("%s=%s" % (k, settings[k]) for k in keys if k != key)
            series.setdefault(other, []).append((x, st, settings[key]))
        for label, s in sorted(series.items()):
            if doc.get("command") != "search":
                s.sort(key=lambda t: t[0])
            xs = [t[0] for t in s]
            ys = [scale(metric, t[1]["mean"]) for t in s]
            lo = [scale(metric, t[1]["mean"] - t[1]["min"]) for t in s]
            hi = [scale(metric, t[1]["max"] - t[1]["mean"]) for t in s]
            fmt = "o" if doc.get("command") == "search" else "o-"
            ax.errorbar(xs, ys, yerr=[lo, hi], fmt=fmt, capsize=4, label=label or None)
            if doc.get("command") == "search":
                for n, (x, y) in enumerate(zip(xs, ys)):
                    ax.annotate(str(n + 1), (x, y), textcoords="offset points", xytext=(4, 4),
                                fontsize=8)
        if cats:
            ax.set_xticks(range(len(cats)))
            ax.set_xticklabels(cats)
            ax.set_xlim(-0.5, len(cats) - 0.5)
        else:
            xs_all = [values.get(key) for _, values, _ in pts if values.get(key)]
            if xs_all and max(xs_all) / max(min(xs_all), 1e-300) >= 10:
                ax.set_xscale("log")
            ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(
                lambda v, _p, k=key: human(k, v)))
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        if a.summary:
            print("%s: %d points%s" % (key, drawn, " (categorical)" if cats else ""))
        t = doc.get("target")
        if t and t.get("metric") == metric:
            ax.axhline(scale(metric, t["value"]), color="red", linestyle="--",
                       label="target " + t.get("text", ""))
        ans = doc.get("answer")
        if ans and ans.get("value") is not None and ans.get("key") == key:
            ax.axvline(ans["value"], color="green", linestyle=":", label="answer " + ans["label"])
        ax.set_xlabel(key)
        ax.set_ylabel(LABELS.get(metric, metric))
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    runs = "%d run%s per point" % (doc.get("repeat", 1), "" if doc.get("repeat", 1) == 1 else "s")
    fig.suptitle("dlio-whatif %s: %s (%s, %d job%s at once; bars: min-max)" % (
        doc.get("command", ""), LABELS.get(metric, metric), runs, doc.get("jobs", 1),
        "" if doc.get("jobs", 1) == 1 else "s"), fontsize=10)
    fig.tight_layout()
    fig.savefig(a.png, dpi=100)
    return 0


if __name__ == "__main__":
    sys.exit(main())
