"""Every format in the registry, with nothing named here: `dliofs formats
--config` writes one small dataset per registered format (from the format's
own example), and each one must validate, generate, mount byte-identical to
dlio-gen's copy, and be read through by dlio-drive with the plan the format
declares. A format added to formats/format_list.h is covered by this file
without touching it; one that is registered but broken fails here.
"""
import json
import os
import subprocess
import tempfile
import shutil
import unittest

import sys  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/: dltest
import dltest  # noqa: E402

DRIVE = os.environ.get("DLIO_DRIVE", os.path.join(dltest.BUILD, "dlio-drive"))


def run(args, **kw):
    r = subprocess.run(args, capture_output=True, text=True, timeout=600, **kw)
    if r.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s%s" % (" ".join(args), r.returncode,
                                                         r.stdout, r.stderr))
    return r.stdout


def table_formats():
    """The FORMAT column of `dliofs formats`."""
    lines = run([dltest.DLIOFS, "formats"]).splitlines()
    assert lines[0].startswith("FORMAT"), lines[0]
    out = []
    for ln in lines[1:]:
        if not ln.strip():
            break
        out.append(ln.split()[0])
    return out


class Registry(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="dliofs-registry-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, True)
        cls.cfg = os.path.join(cls.tmp, "all.yaml")
        with open(cls.cfg, "w") as f:
            f.write(run([dltest.DLIOFS, "formats", "--config"]))
        cls.names = table_formats()
        # samples per file of each dataset, as `dliofs check` reports it
        cls.spf = {}
        for ln in run([dltest.DLIOFS, "check", cls.cfg]).splitlines():
            if ln.startswith("  ") and not ln.startswith("    ") and "per file" in ln:
                name, rest = ln.strip().split(": ", 1)
                cls.spf[name] = int(rest.split(", ")[1].split()[0])

    def test_config_lists_every_format(self):
        with open(self.cfg) as f:
            text = f.read()
        listed = [ln.split("format: ")[1].split(",")[0] for ln in text.splitlines()
                  if "format: " in ln]
        self.assertEqual(listed, self.names)
        self.assertGreaterEqual(len(self.names), 9)

    def test_check(self):
        out = run([dltest.DLIOFS, "check", self.cfg])
        for name in self.names:
            self.assertIn("  %s: %s," % (name, name), out)

    def test_mount_matches_gen_and_drive_reads_all(self):
        ref = dltest.gen(self.cfg, os.path.join(self.tmp, "ref"))
        with dltest.mounted(self.cfg) as mnt:
            files, _ = dltest.tree(mnt)
            ref_files, _ = dltest.tree(ref)
            self.assertEqual(files, ref_files)
            for name in self.names:
                with self.subTest(format=name):
                    mine = [p for p in files if p.split(os.sep)[0] == name]
                    self.assertTrue(mine, "no files for " + name)
                    for rel in mine:
                        self.assertEqual(dltest.read_file(os.path.join(mnt, rel)),
                                         dltest.read_file(os.path.join(ref, rel)), rel)
                    if not os.path.exists(DRIVE):
                        dltest.require(False, "no dlio-drive at " + DRIVE)
                    out = os.path.join(self.tmp, name + ".json")
                    # batch 1: no partial batch is dropped, every sample is read
                    run([DRIVE, "--config", self.cfg, mnt, "--dataset", name, "--quiet",
                         "--epochs", "1", "--no-eval", "--batch-size", "1", "--json", out])
                    with open(out) as f:
                        rep = json.load(f)
                    ep = rep["epochs"][0]
                    self.assertEqual(rep["config"]["format"], name)
                    # Every training sample of the 4 files (the config's files: 4).
                    self.assertEqual(ep["samples"], 4 * self.spf[name])
                    self.assertGreater(ep["bytes"], 0)
                    self.assertGreater(ep["files_opened"], 0)


if __name__ == "__main__":
    dltest.main()
