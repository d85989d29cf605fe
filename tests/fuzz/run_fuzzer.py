"""Run one libFuzzer harness for a bounded time and say what it did.

  run_fuzzer.py FUZZER NAME SECONDS WORKDIR [--keep]

Seeds come from the repository (tests/fuzz/seeds/NAME, configs/ for the
config fuzzers, traces written by make_trace_seeds.py for the trace
reader); the working corpus is WORKDIR/NAME/corpus (emptied first unless
--keep, so CI never writes into the source tree). Fails (exit 1) on any
crash, sanitizer report, leak, timeout (-timeout), memory blow-up
(-rss_limit_mb / -malloc_limit_mb) or a run that did not execute. The last
line is one line of figures:

  fuzz NAME: N executions in S s (R/s), C crashes, corpus A seeds -> B inputs, peak RSS M MB
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))

# Per harness: seed sources and the longest input worth trying.
HARNESS = {
    "config": {"seeds": ["configs/*.yaml", "configs/storage/*.yaml", "tests/fuzz/seeds/config/*",
                         "tests/fuzz/seeds/dlio/*"], "max_len": 16384, "dict": "config.dict"},
    "dlio": {"seeds": ["tests/fuzz/seeds/dlio/*"], "max_len": 8192, "dict": "dlio.dict"},
    "s3": {"seeds": ["tests/fuzz/seeds/s3/*"], "max_len": 2048, "dict": None},
    "pacer_set": {"seeds": ["tests/fuzz/seeds/pacer_set/*"], "max_len": 2048,
                  "dict": "pacer_set.dict"},
    "trace": {"seeds": [], "make_seeds": "make_trace_seeds.py", "max_len": 65536, "dict": None},
}
RSS_LIMIT_MB = 2048
TIMEOUT_S = 10


def seed_dir(name, workdir):
    h = HARNESS[name]
    out = os.path.join(workdir, name, "seeds")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    for pattern in h["seeds"]:
        for p in sorted(glob.glob(os.path.join(SRC, pattern))):
            if os.path.isfile(p):
                rel = os.path.relpath(p, SRC).replace("/", "_")
                shutil.copyfile(p, os.path.join(out, rel))
    if h.get("make_seeds"):
        subprocess.run([sys.executable, os.path.join(HERE, h["make_seeds"]), out], check=True)
    n = len(os.listdir(out))
    if n == 0:
        raise SystemExit("run_fuzzer: no seeds for %s" % name)
    return out, n


def main(argv):
    keep = "--keep" in argv
    argv = [a for a in argv if a != "--keep"]
    if len(argv) != 4 or argv[1] not in HARNESS:
        print(__doc__, file=sys.stderr)
        return 2
    fuzzer, name, seconds, workdir = (os.path.abspath(argv[0]), argv[1], int(argv[2]),
                                      os.path.abspath(argv[3]))
    h = HARNESS[name]
    seeds, nseeds = seed_dir(name, workdir)
    corpus = os.path.join(workdir, name, "corpus")
    artifacts = os.path.join(workdir, name, "artifacts")
    if not keep:
        shutil.rmtree(corpus, ignore_errors=True)
    shutil.rmtree(artifacts, ignore_errors=True)
    os.makedirs(corpus, exist_ok=True)
    os.makedirs(artifacts)
    cmd = [fuzzer, "-max_total_time=%d" % seconds, "-timeout=%d" % TIMEOUT_S,
           "-rss_limit_mb=%d" % RSS_LIMIT_MB, "-malloc_limit_mb=%d" % RSS_LIMIT_MB,
           "-max_len=%d" % h["max_len"], "-print_final_stats=1", "-close_fd_mask=3",
           "-artifact_prefix=" + artifacts + "/"]
    if h["dict"]:
        cmd.append("-dict=" + os.path.join(HERE, h["dict"]))
    cmd += [corpus, seeds]
    env = dict(os.environ)
    # Abort on the first report of any sanitizer; leaks are checked by
    # libFuzzer after each input (-detect_leaks, on by default with ASan).
    env.setdefault("ASAN_OPTIONS", "abort_on_error=1:detect_leaks=1")
    env.setdefault("UBSAN_OPTIONS", "halt_on_error=1:abort_on_error=1:print_stacktrace=1")
    log = os.path.join(workdir, name, "fuzz.log")
    t0 = time.monotonic()
    with open(log, "w") as f:
        rc = subprocess.call(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, cwd=workdir)
    took = time.monotonic() - t0
    with open(log, errors="replace") as f:
        text = f.read()

    def stat(key):
        m = re.search(r"stat::%s:\s*(\d+)" % key, text)
        return int(m.group(1)) if m else 0
    execs, rss = stat("number_of_executed_units"), stat("peak_rss_mb")
    found = sorted(os.listdir(artifacts))
    ncorpus = len(os.listdir(corpus))
    bad = rc != 0 or found or execs == 0
    if bad:
        tail = "\n".join(text.splitlines()[-60:])
        print("run_fuzzer: %s failed (exit %d); artifacts: %s\n--- %s (last lines) ---\n%s"
              % (name, rc, ", ".join(os.path.join(artifacts, a) for a in found) or "none", log,
                 tail))
    print("fuzz %s: %d executions in %.0f s (%.0f/s), %d crashes, corpus %d seeds -> %d inputs, "
          "peak RSS %d MB" % (name, execs, took, execs / max(took, 1e-9), len(found), nseeds,
                              ncorpus, rss))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
