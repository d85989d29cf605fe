"""Installed tools find their helpers relative to themselves, not in the
source tree.

`meson install --destdir` into a temporary directory, then the installed
tree is moved elsewhere (so neither the configured prefix nor the destdir
is where the binaries run from), and:
- the installed dlio-trace and dlio-stall, stripped of debug information,
  hold no path of the source or build tree: a path baked in at build time
  (as DLIOFS_TOOLS_DIR was) fails here whatever else the machine has;
- `dlio-trace plot` draws a PNG with its script found under
  <bin>/../share/dliofs, and says where it looked once that copy is gone;
- `dlio-stall run` injects the hook (sitecustomize.py) found the same way
  (the job sees it loaded) and the CUPTI library from <bin>/../<libdir>;
- a build-tree binary copied elsewhere with tools/ beside it finds the
  helper there (the build-tree lookup is relative too).
No environment variable points at a helper in any of these runs."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/: dltest
import dltest  # noqa: E402

BUILD = os.path.realpath(dltest.BUILD)
SRC = os.path.realpath(dltest.SRC)
HELPER_ENV = ("DLIO_TRACE_PLOT", "DLIO_STALL_HOOK", "DLIO_STALL_PLOT", "DLIO_CUPTI_LIB",
              "DLIOFS_SRC", "DLIOFS_BUILD", "PYTHONPATH")


def clean_env():
    env = {k: v for k, v in os.environ.items() if k not in HELPER_ENV}
    # Any lookup through these would fail loudly.
    env["DLIOFS_SRC"] = "/nonexistent-dliofs-src"
    env["DLIOFS_BUILD"] = "/nonexistent-dliofs-build"
    return env


def have_matplotlib():
    r = subprocess.run(["/usr/bin/python3", "-c", "import matplotlib, numpy"],
                       capture_output=True)
    return r.returncode == 0


class Installed(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="dliofs-install-")
        meson = shutil.which("meson")
        dltest.require(meson is not None, "meson not in PATH")
        dltest.require(shutil.which("strip") is not None, "strip (binutils) not installed")
        dest = os.path.join(cls.tmp, "dest")
        r = subprocess.run([meson, "install", "-C", BUILD, "--destdir", dest, "--no-rebuild",
                            "--quiet"], capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            raise AssertionError("meson install failed: %s%s" % (r.stdout, r.stderr))
        r = subprocess.run([meson, "introspect", BUILD, "--installed"], capture_output=True,
                           text=True, check=True)
        installed = json.loads(r.stdout)
        trace = [v for v in installed.values() if v.endswith("/dlio-trace")]
        assert len(trace) == 1, installed
        # The prefix: the directory above bin/ (bindir is one level down by default).
        bindir = os.path.dirname(trace[0])
        prefix = os.path.dirname(bindir)
        # Move the installed prefix: the binaries run from nowhere they
        # were configured or installed for.
        cls.root = os.path.join(cls.tmp, "elsewhere")
        shutil.move(dest + prefix, cls.root)
        shutil.rmtree(dest)
        cls.bin = os.path.join(cls.root, os.path.relpath(bindir, prefix))
        cls.cupti = [os.path.join(cls.root, os.path.relpath(v, prefix))
                     for v in installed.values() if v.endswith("/libdlio_cupti.so")]
        cls.share = os.path.join(cls.root, "share", "dliofs")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_tool(self, args, **kw):
        return subprocess.run(args, capture_output=True, text=True, env=clean_env(),
                              cwd=self.tmp, timeout=300, **kw)

    def test_helpers_installed(self):
        for rel in ("dlio_trace_plot.py", "stall/sitecustomize.py", "stall/plot.py"):
            self.assertTrue(os.path.isfile(os.path.join(self.share, rel)), rel)

    def test_no_tree_path_in_binaries(self):
        for name in ("dlio-trace", "dlio-stall", "dliofs", "dlio-drive", "dlio-gen"):
            stripped = os.path.join(self.tmp, name + ".stripped")
            subprocess.run(["strip", "-o", stripped, os.path.join(self.bin, name)], check=True)
            with open(stripped, "rb") as f:
                data = f.read()
            for tree in (SRC, BUILD):
                self.assertNotIn(tree.encode(), data, "%s holds %s" % (name, tree))

    def test_storage_profile(self):
        """The installed dliofs finds its storage profiles beside itself
        (share/dliofs/storage), not in the source tree."""
        for name in ("nvme-local", "sata-ssd", "nfs-10g", "lustre", "object-store"):
            self.assertTrue(os.path.isfile(os.path.join(self.share, "storage", name + ".yaml")))
        cfg = os.path.join(self.tmp, "p.yaml")
        with open(cfg, "w") as f:
            f.write("datasets: [{name: a, format: raw, sample_size: 1}]\n"
                    "pacer: {profile: nfs-10g}\n")
        r = self.run_tool([os.path.join(self.bin, "dliofs"), "check", cfg])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('profile: "nfs-10g"', r.stdout)
        self.assertIn("lognormal(250us, 2ms)", r.stdout)
        os.rename(os.path.join(self.share, "storage"), os.path.join(self.share, "storage.off"))
        try:
            r = self.run_tool([os.path.join(self.bin, "dliofs"), "check", cfg])
        finally:
            os.rename(os.path.join(self.share, "storage.off"), os.path.join(self.share, "storage"))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("no storage profile 'nfs-10g' (looked in", r.stderr)
        self.assertIn(os.path.join(self.share, "storage"), r.stderr.replace("/bin/../", "/"))

    def test_trace_plot(self):
        dltest.require(have_matplotlib(), "python3-matplotlib not installed")
        trc = os.path.join(self.tmp, "t.trc")
        png = os.path.join(self.tmp, "t.png")
        tool = os.path.join(self.bin, "dlio-trace")
        r = self.run_tool([tool, "synth", trc, "500"])
        self.assertEqual(r.returncode, 0, r.stderr)
        r = self.run_tool([tool, "plot", trc, "-o", png])
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(png, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        # Without its copy under share/ the installed tool finds no script,
        # and says where it looked: relative to itself only.
        script = os.path.join(self.share, "dlio_trace_plot.py")
        moved = script + ".away"
        os.rename(script, moved)
        try:
            r = self.run_tool([tool, "plot", trc, "-o", png + "2"])
        finally:
            os.rename(moved, script)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("not found", r.stderr)
        self.assertIn(os.path.join(self.bin, "..", "share", "dliofs", "dlio_trace_plot.py"),
                      r.stderr)
        self.assertNotIn(SRC + "/tools", r.stderr)
        self.assertFalse(os.path.exists(png + "2"))

    def test_stall_hook_and_cupti(self):
        out = os.path.join(self.tmp, "stall.json")
        job = ("import sys; m = sys.modules.get('sitecustomize'); "
               "print('hook', m.__file__ if m else None)")
        r = self.run_tool([os.path.join(self.bin, "dlio-stall"), "run", "-q", "--json", out,
                           "--", "/usr/bin/python3", "-c", job])
        self.assertEqual(r.returncode, 0, r.stderr)
        # The job ran with the installed hook, copied into dlio-stall's
        # working directory.
        line = [ln for ln in r.stdout.splitlines() if ln.startswith("hook ")]
        self.assertEqual(len(line), 1, r.stdout)
        self.assertTrue(line[0].endswith("/hook/sitecustomize.py"), line[0])
        with open(out) as f:
            rep = json.load(f)
        if self.cupti:
            self.assertEqual(os.path.realpath(rep["cupti_lib"]), os.path.realpath(self.cupti[0]))
        else:
            self.assertIsNone(rep["cupti_lib"])
        # Without the installed hook, run refuses and says where it looked.
        hook = os.path.join(self.share, "stall", "sitecustomize.py")
        os.rename(hook, hook + ".away")
        try:
            r = self.run_tool([os.path.join(self.bin, "dlio-stall"), "run", "-q", "--",
                               "/usr/bin/python3", "-c", "pass"])
        finally:
            os.rename(hook + ".away", hook)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("stall/sitecustomize.py not found", r.stderr)
        self.assertNotIn(SRC + "/tools", r.stderr)


class BuildTree(unittest.TestCase):
    def test_relative_to_the_binary(self):
        dltest.require(have_matplotlib(), "python3-matplotlib not installed")
        tmp = tempfile.mkdtemp(prefix="dliofs-buildtree-")
        try:
            os.makedirs(os.path.join(tmp, "tools"))
            shutil.copy(os.path.join(BUILD, "dlio-trace"), tmp)
            shutil.copy(os.path.join(BUILD, "tools", "dlio_trace_plot.py"),
                        os.path.join(tmp, "tools"))
            tool = os.path.join(tmp, "dlio-trace")
            env = clean_env()
            trc, png = os.path.join(tmp, "t.trc"), os.path.join(tmp, "t.png")
            r = subprocess.run([tool, "synth", trc, "200"], capture_output=True, text=True,
                               env=env, cwd=tmp)
            self.assertEqual(r.returncode, 0, r.stderr)
            r = subprocess.run([tool, "plot", trc, "-o", png], capture_output=True, text=True,
                               env=env, cwd=tmp, timeout=300)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertTrue(os.path.getsize(png) > 1000)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    dltest.main()
