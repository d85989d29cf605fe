"""Regression cases from the adversarial review (issue #16) that need no
mount: hostile configs through the real binaries (`dliofs check`, `dliofs
mount`, `dlio-gen`). Each must be refused quickly with a bounded, located
message and never crash. The same inputs are seeds of the fuzzers
(tests/fuzz/corpus/config/)."""
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import sys  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/: dltest
import dltest  # noqa: E402

CASE_TIMEOUT = 30          # seconds; a sanitizer build is slow, the bug ran for minutes
MAX_STDERR = 2 << 20       # bytes; the bug printed 3 GB
CRASH_MARKERS = ("Segmentation", "AddressSanitizer", "LeakSanitizer", "runtime error",
                 "Aborted", "core dumped", "stack-overflow", "Floating point")

DATASET = "datasets:\n  - {name: a, format: raw, sample_size: 1KiB}\n"


def alias_bomb(levels, under="pacer"):
    """&lN [*lN-1 x10] nested `levels` deep under a section: 10^levels leaves."""
    text = DATASET + under + ":\n  l0: &l0 [x]\n"
    for i in range(1, levels + 1):
        text += "  l%d: &l%d [%s]\n" % (i, i, ",".join(["*l%d" % (i - 1)] * 10))
    return text


H5_ZERO = ("datasets:\n  - {name: h5, format: hdf5, files: 4, shape: [16, 16], "
           "hdf5: {datasets: 0, chunks: [4, 8, 8]}}\n")


class HostileConfigs(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="dliofs-hard-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def run_bin(self, argv):
        """Run argv with a timeout; the stderr kept is capped (the process is
        killed past MAX_STDERR so a runaway cannot fill the disk)."""
        errp = os.path.join(self.tmp, "stderr")
        t0 = time.monotonic()
        with open(errp, "wb") as err:
            p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err,
                                 start_new_session=True)
            rc = None
            while rc is None:
                rc = p.poll()
                if rc is not None:
                    break
                if time.monotonic() - t0 > CASE_TIMEOUT or os.path.getsize(errp) > MAX_STDERR:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
                    self.fail("%s: still running after %.1f s with %d bytes of stderr"
                              % (" ".join(argv[:2]), time.monotonic() - t0,
                                 os.path.getsize(errp)))
                time.sleep(0.01)
        with open(errp, "rb") as f:
            text = f.read().decode("utf-8", "replace")
        self.assertGreaterEqual(rc, 0, "%s: killed by signal %d\n%s" % (argv[:2], -rc, text[-2000:]))
        for m in CRASH_MARKERS:
            self.assertNotIn(m, text, "%s: %s\n%s" % (argv[:2], m, text[-2000:]))
        return rc, text

    def three_ways(self, text):
        """check, mount and dlio-gen on the config text: (name, rc, stderr) each."""
        cfg = dltest.write_config(self.tmp, text, "c.yaml")
        mnt = os.path.join(self.tmp, "mnt")
        out = os.path.join(self.tmp, "gen")
        os.mkdir(mnt)
        res = []
        for name, argv in (("check", [dltest.DLIOFS, "check", cfg]),
                           ("mount", [dltest.DLIOFS, "mount", mnt, cfg]),
                           ("dlio-gen", [dltest.DLIO_GEN, cfg, out])):
            rc, err = self.run_bin(argv)
            res.append((name, rc, err.replace(cfg, "c.yaml")))
            self.assertFalse(dltest.is_mounted(mnt), "%s mounted a bad config" % name)
        return res

    def test_alias_bomb_under_pacer_is_refused_quickly(self):
        text = alias_bomb(9)
        self.assertLess(len(text), 600)  # about the review's 521-byte config
        for name, rc, err in self.three_ways(text):
            with self.subTest(name):
                self.assertNotEqual(rc, 0, err[-2000:])
                self.assertIn("c.yaml:", err)
                self.assertIn("too large once its aliases are expanded", err)
                self.assertLess(err.count("\n"), 1100, err[-2000:])

    def test_alias_cycle_under_pacer_is_refused(self):
        text = DATASET + "pacer: &p {read: *p}\n"
        for name, rc, err in self.three_ways(text):
            with self.subTest(name):
                self.assertNotEqual(rc, 0, err[-2000:])
                self.assertIn("c.yaml:3:", err)
                self.assertIn("an alias that contains itself", err)

    def test_repeated_errors_are_capped(self):
        # 5000 distinct bad pacer keys, no aliases: the messages stop at the cap.
        text = DATASET + "pacer:\n" + "".join("  bad_key_%d: 1\n" % i for i in range(5000))
        rc, err = self.run_bin([dltest.DLIOFS, "check", dltest.write_config(self.tmp, text)])
        self.assertEqual(rc, 2, err[-2000:])
        self.assertIn("too many problems; stopping after 1000", err[-2000:])
        self.assertLessEqual(err.count("\n"), 1001)

    def test_hdf5_zero_samples_with_chunks_is_an_error_not_a_crash(self):
        # Found by tests/fuzz/fuzz_dlio in seconds: a DLIO workload with gzip
        # (one sample per chunk) and no samples per file.
        native = ("datasets:\n  - {name: h, format: hdf5, samples_per_file: 0, "
                  "sample_size: 1KiB, hdf5: {chunks: [1, 8, 8]}}\n")
        for name, rc, err in self.three_ways(native):
            with self.subTest(name):
                self.assertNotEqual(rc, 0, err[-2000:])
                self.assertIn("c.yaml:2:47: datasets[0].samples_per_file: must be at least 1", err)
        with open(os.path.join(dltest.SRC, "tests", "fuzz", "seeds", "dlio",
                               "crash-samples-zero-gzip-hdf5.yaml")) as f:
            found = f.read()
        shutil.rmtree(self.tmp)
        os.mkdir(self.tmp)
        for name, rc, err in self.three_ways(found):
            with self.subTest("fuzzer's input: " + name):
                self.assertNotEqual(rc, 0, err[-2000:])
                self.assertIn("workload.dataset.num_samples_per_file: must be at least 1", err)

    def test_hdf5_zero_datasets_is_an_error_not_a_crash(self):
        for name, rc, err in self.three_ways(H5_ZERO):
            with self.subTest(name):
                self.assertNotEqual(rc, 0, err[-2000:])
                self.assertIn("c.yaml:2:74: datasets[0].hdf5.datasets: expected 1 to 4096", err)


if __name__ == "__main__":
    dltest.main()
