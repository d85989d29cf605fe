#!/usr/bin/env python3
"""dlio-whatif predict against measurement: for each workload, record one run
(dlio-whatif sweep --trace) at one storage setting, predict 7 other
bandwidth and latency settings from that trace (dlio-whatif predict), then
measure each of them (dlio-whatif sweep, every run on a fresh mount, --runs
runs per point, the median taken) and print predicted vs measured run time
and AU (dlio-drive) or data-wait share (a job under dlio-stall), with the
error. The goal is within 10% at every point; the table says where not.

Workloads:
  unet3d  - npz, 32 files of 8 MB, dlio-drive (batch 4, 50 ms compute, 2 epochs)
  torch   - an unmodified PyTorch ImageFolder job over 96 768x768 JPEGs (PIL
            decode, 2 workers), under dlio-stall
  tf      - an unmodified tf.data TFRecord job (venv python), under dlio-stall

Usage: bench/bench_whatif.py [--build DIR] [--runs N] [--only unet3d,torch,tf] [--json F]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JOBS = os.path.join(SRC, "tests", "jobs")
PY = "/usr/bin/python3"
VENV_PY = os.environ.get("DLIOFS_VENV_PY", "/opt/dliofs-venv/bin/python")

WORKLOADS = {
    "unet3d": {
        "config": """\
dataset: {data_folder: data/unet3d, format: npz, num_files_train: 32, record_length_bytes: 8000000}
pacer: {read: {bandwidth: 200MB/s}}
cache: {policy: none}
""",
        "job": ["{build}/dlio-drive", "--config", "{cfg}", "{mount}", "--batch-size", "4",
                "--computation-time", "0.05", "--epochs", "2"],
        "record": "200MB/s",
        "points": [("read.bandwidth", "100MB/s"), ("read.bandwidth", "150MB/s"),
                   ("read.bandwidth", "300MB/s"), ("read.bandwidth", "500MB/s"),
                   ("read.bandwidth", "1GB/s"), ("read.latency", "2ms"),
                   ("read.latency", "10ms")],
        "metric": "au",
    },
    "torch": {
        "config": """\
datasets:
  - name: imgs
    format: jpeg
    files: 96
    classes: 4
    width: 768
    height: 768
    color: RGB
pacer: {read: {bandwidth: 10MB/s}}
cache: {policy: none}
""",
        "job": [PY, os.path.join(JOBS, "train_torch_imagefolder.py"), "{mount}/imgs/train",
                "--batch", "8", "--workers", "2", "--compute-ms", "20"],
        "record": "10MB/s",
        "points": [("read.bandwidth", "5MB/s"), ("read.bandwidth", "7MB/s"),
                   ("read.bandwidth", "15MB/s"), ("read.bandwidth", "25MB/s"),
                   ("read.bandwidth", "100MB/s"), ("read.latency", "5ms"),
                   ("read.latency", "20ms")],
        "metric": "wait_share",
    },
    "tf": {
        "config": """\
datasets:
  - name: tfr
    format: tfrecord
    files: 16
    samples_per_file: 8
    sample_size: 256KB
pacer: {read: {bandwidth: 20MB/s}}
cache: {policy: none}
""",
        "job": [VENV_PY, os.path.join(JOBS, "train_tf_tfrecord.py"), "{mount}/tfr",
                "--batch", "4", "--compute-ms", "20"],
        "record": "20MB/s",
        "points": [("read.bandwidth", "10MB/s"), ("read.bandwidth", "15MB/s"),
                   ("read.bandwidth", "30MB/s"), ("read.bandwidth", "50MB/s"),
                   ("read.bandwidth", "200MB/s"), ("read.latency", "5ms"),
                   ("read.latency", "20ms")],
        "metric": "wait_share",
    },
}


def whatif(build, args):
    r = subprocess.run([os.path.join(build, "dlio-whatif")] + args, capture_output=True,
                       text=True)
    if r.returncode:
        sys.exit("dlio-whatif %s failed:\n%s\n%s" % (args[0], r.stdout, r.stderr[-3000:]))
    return r


def job_argv(w, build, cfg):
    return [a.replace("{build}", build).replace("{cfg}", cfg) for a in w["job"]]


def measure(build, tmp, cfg, argv, key, value, runs):
    js = os.path.join(tmp, "m.json")
    whatif(build, ["sweep", cfg, "--set", "%s=%s" % (key, value), "--repeat", str(runs),
                   "--json", js, "-q", "--"] + argv)
    with open(js) as f:
        p = json.load(f)["points"][0]
    ok = [x["total"] for x in p["runs"] if not x["warmup"] and x["ok"]]
    return {m: statistics.median(x[m] for x in ok) for m in ("run_s", "au", "wait_share")}


def err(pred, meas, metric):
    """Run time: relative error; a share (AU, wait): points of share."""
    if metric == "run_s":
        return (pred - meas) / meas * 100 if meas else float("nan")
    return (pred - meas) * 100


def bench(name, w, build, runs, tmp):
    if w["job"][0] == VENV_PY and not os.path.exists(VENV_PY):
        print("%s: skipped (no %s)" % (name, VENV_PY))
        return None
    cfg = os.path.join(tmp, name + ".yaml")
    with open(cfg, "w") as f:
        f.write(w["config"])
    argv = job_argv(w, build, cfg)
    trdir = os.path.join(tmp, name + "-trace")
    whatif(build, ["sweep", cfg, "--set", "read.bandwidth=" + w["record"], "--trace", trdir,
                   "-q", "--"] + argv)
    trace = os.path.join(trdir, "p0-r0.trace")
    rows = []
    m = w["metric"]
    for key, value in [("read.bandwidth", w["record"])] + w["points"]:
        pj = os.path.join(tmp, "p.json")
        whatif(build, ["predict", trace, "--set", "%s=%s" % (key, value), "--json", pj, "-q"])
        with open(pj) as f:
            doc = json.load(f)
        pred = doc["predictions"][1]["total"]
        meas = measure(build, tmp, cfg, argv, key, value, runs)
        rows.append({"setting": "%s=%s" % (key, value), "replay_s": doc["predictions"][1]["replay_s"],
                     "pred": pred, "meas": meas,
                     "err_run_pct": err(pred["run_s"], meas["run_s"], "run_s"),
                     "err_metric_pts": err(pred[m], meas[m], m)})
        print("  %s: %s done" % (name, rows[-1]["setting"]), file=sys.stderr)
    label = "AU" if m == "au" else "wait"
    print("\n%s (recorded at read.bandwidth=%s; measured: median of %d cold runs)" %
          (name, w["record"], runs))
    print("%-22s %9s %9s %7s   %7s %7s %8s" % ("setting", "run pred", "run meas", "err",
                                                 label + " pred", label + " meas", "err"))
    for r in rows:
        print("%-22s %8.2fs %8.2fs %+6.1f%%   %6.1f%% %6.1f%% %+6.1fpt%s" % (
            r["setting"], r["pred"]["run_s"], r["meas"]["run_s"], r["err_run_pct"],
            r["pred"][m] * 100, r["meas"][m] * 100, r["err_metric_pts"],
            "" if abs(r["err_run_pct"]) <= 10 else "   (run time off by more than 10%)"))
    within = sum(abs(r["err_run_pct"]) <= 10 for r in rows)
    print("run time within 10%%: %d of %d points (the first row, %s, is the recorded setting "
          "itself, measured again); each prediction took %.3f s or less" %
          (within, len(rows), rows[0]["setting"], max(r["replay_s"] for r in rows)))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", default=",".join(WORKLOADS))
    ap.add_argument("--json")
    a = ap.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
    tmp = tempfile.mkdtemp(prefix="bench-whatif-")
    out = {}
    try:
        for name in a.only.split(","):
            out[name] = bench(name, WORKLOADS[name], a.build, a.runs, tmp)
    finally:
        shutil.rmtree(tmp, True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
