"""The README's first command, scripts/quickstart.sh, as a new user runs it
(with the build directory of this test run instead of ./build): it checks
the default config, mounts it, reads every file once with real readers,
prints what it read and what the mount saw, and unmounts. Checked: exit 0,
every dataset of configs/default.yaml read with bytes > 0, the `dliofs stat`
table with reads counted, and no mount left behind."""
import os
import re
import subprocess
import unittest

import sys  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/: dltest
import dltest  # noqa: E402


class Quickstart(unittest.TestCase):
    def test_quickstart(self):
        dltest.require(dltest.fuse_available(), "/dev/fuse not available")
        dltest.require(os.geteuid() == 0, "the quick start installs packages as root")
        env = dict(os.environ, DLIOFS_BUILD=os.path.dirname(os.path.abspath(dltest.DLIOFS)))
        r = subprocess.run(["bash", os.path.join(dltest.SRC, "scripts", "quickstart.sh")],
                           cwd=dltest.SRC, env=env, capture_output=True, text=True, timeout=600)
        out = r.stdout
        self.assertEqual(r.returncode, 0, r.stderr[-3000:] + out[-3000:])
        m = re.search(r"^mounted \S+ on (\S+) in \d+ ms$", out, re.M)
        self.assertTrue(m, out[-3000:])
        mnt = m.group(1)
        rows = {ln.split()[0]: ln.split() for ln in out.splitlines()
                if re.match(r"^\w+\s+\d+\s+\d+\s+[\d.]+\s+[\d.]+$", ln)}
        for ds in ("dlrm", "resnet", "tensors", "tokens", "unet3d", "total"):
            self.assertIn(ds, rows, out[-3000:])
            self.assertGreater(int(rows[ds][2]), 0, ds)
        stat = out.split("what the mount saw (dliofs stat):", 1)[1]
        read = re.search(r"^\s+read\s+(\d+)\s+([\d.]+)", stat, re.M)
        self.assertTrue(read, stat)
        self.assertGreater(int(read.group(1)), 0, stat)
        self.assertGreater(float(read.group(2)), 0, stat)
        # Unmounted and removed on the way out.
        with open("/proc/mounts") as f:
            self.assertNotIn(" %s " % mnt, f.read())
        self.assertFalse(os.path.exists(mnt))


if __name__ == "__main__":
    dltest.main()
