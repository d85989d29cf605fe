"""Multi-host checks (issue #25): per-node mounts of one config pass for
one shared file system.

MLPerf Storage's multi-host runs check the data directory before they start
(mlpstorage's CAP-02 probe): rank 0 creates a sentinel file, an MPI barrier,
then every rank stats it (the inode number must be the same on every rank;
later versions read back rank 0's bytes instead). Here each node's mount is a
separate dliofs daemon on this machine over one backing directory, which is
what a real shared file system gives each node:

- synthetic files: the same tree, inode numbers, sizes and modes on every
  mount, whatever order files are looked up, read or listed in, and after a
  restart; readdir's d_ino is the number stat gives (".." included);
- a writable backing directory (the shared area): its inode numbers passed
  through (st_ino and d_ino are the real file's), a file written through one
  mount read back byte for byte through another, renamed on one and seen on
  the other, deleted and gone, a size change and an overwrite seen by a
  reader that keeps the file open, each within the mount's stated attribute
  and entry timeout (BK_TIMEOUT, 1 s; the delays are printed);
- under a real `mpirun` cluster (`cluster: {}`, one mount a rank): our own
  equivalent of the CAP-02 probe, run by MPI ranks (mpi4py) each on its own
  mount, and the ranks' walks of the synthetic tree compared."""
import ctypes
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/: dltest
import dltest  # noqa: E402

# The attribute and entry timeout of a backing directory (fs/backing_i.h
# BK_TIMEOUT): how long a mount may show what it saw before another node's
# change. A change must show within it; the margin is for a loaded machine.
BK_TIMEOUT = 1.0
SEEN_WITHIN = BK_TIMEOUT + 0.75

CONFIG = """\
datasets:
  - {name: vol, format: npz, files: 24, sample_size: 8KiB, subfolders: 3}
  - {name: img, format: jpeg, files: 12, classes: 3, width: 32, height: 32}
  - {name: tok, format: indexed_binary, files: 4, sample_size: 4KiB, samples_per_file: 4}
backing:
  - {path: '%(shared)s', at: shared, writable: true}
  - {at: ckpt, sink: true}
"""

_libc = ctypes.CDLL(None, use_errno=True)
_SYS_getdents64 = 217 if os.uname().machine == "x86_64" else 61


def getdents(path):
    """readdir as the kernel answers it: [(name, d_ino)] with "." and ".."
    (os.scandir leaves those out)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    buf = ctypes.create_string_buffer(1 << 16)
    out = []
    try:
        while True:
            n = _libc.syscall(_SYS_getdents64, fd, buf, len(buf))
            if n < 0:
                raise OSError(ctypes.get_errno(), "getdents64 %s" % path)
            if n == 0:
                return out
            raw, off = buf.raw[:n], 0
            while off < n:
                ino, _, reclen, _ = struct.unpack_from("<QqHB", raw, off)
                name = raw[off + 19:off + reclen].split(b"\0", 1)[0].decode()
                out.append((name, ino))
                off += reclen
    finally:
        os.close(fd)


def walk(mnt, order):
    """(path, st_ino, st_size, st_mode) of everything below mnt and the
    readdir entries {dir: sorted [(name, d_ino)]}, top down, names in
    order ('sorted') or backwards with the listings bottom up ('reverse')."""
    stats, dents = {}, {}
    dirs = []

    def rec(d, rev):
        dirs.append(d)
        names = sorted(os.listdir(d), reverse=rev)
        for n in names:
            p = os.path.join(d, n)
            st = os.lstat(p)
            stats[os.path.relpath(p, mnt)] = (st.st_ino, st.st_size, st.st_mode)
            if os.path.isdir(p) and not os.path.islink(p):
                rec(p, rev)

    rec(mnt, order == "reverse")
    for d in (reversed(dirs) if order == "reverse" else dirs):
        rel = os.path.relpath(d, mnt)
        dents[rel] = sorted(getdents(d))
    return stats, dents


def walk_by_paths(mnt, paths):
    """Look up, read and stat every path by its full name (deepest first),
    before any directory is listed; then list the directories bottom up."""
    stats, dents = {}, {}
    for rel in sorted(paths, key=lambda p: (-p.count("/"), p), reverse=True):
        p = os.path.join(mnt, rel)
        st = os.lstat(p)
        if not os.path.isdir(p):
            with open(p, "rb") as f:
                f.read(4096)
        stats[rel] = (st.st_ino, st.st_size, st.st_mode)
    for rel in sorted({os.path.dirname(p) or "." for p in paths} | {"."},
                      key=lambda p: -p.count("/")):
        dents[rel] = sorted(getdents(os.path.join(mnt, rel)))
    return stats, dents


class Mounts(unittest.TestCase):
    """Two mounts of one config (two nodes) over one shared directory."""

    @classmethod
    def setUpClass(cls):
        dltest.require(dltest.fuse_available(), "/dev/fuse or fusermount3 not available")
        cls.tmp = tempfile.mkdtemp(prefix="dliofs-hosts-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, True)
        cls.shared = os.path.join(cls.tmp, "shared")
        os.mkdir(cls.shared)
        # Made on the shared file system before any node mounts it.
        os.makedirs(os.path.join(cls.shared, "pre", "sub"))
        with open(os.path.join(cls.shared, "pre", "sub", "f.bin"), "wb") as f:
            f.write(b"p" * 5000)
        cls.config = dltest.write_config(cls.tmp, CONFIG % {"shared": cls.shared})
        cls.mnt = []
        for name in ("A", "B"):
            m = os.path.join(cls.tmp, name)
            os.mkdir(m)
            ctx = dltest.mounted(cls.config, mountpoint=m)
            cls.mnt.append(ctx.__enter__())
            cls.addClassCleanup(ctx.__exit__, None, None, None)
        cls.A, cls.B = cls.mnt

    def check_consistent(self, mnt, stats, dents):
        """Within one mount: every readdir d_ino is what stat tells of that
        name ("." and ".." included)."""
        for d, ents in dents.items():
            for name, ino in ents:
                st = os.lstat(os.path.join(mnt, d, name))
                if d == "." and name == "..":
                    continue        # above the mount: the kernel's, not ours
                self.assertEqual(ino, st.st_ino, "d_ino of %s/%s on %s" % (d, name, mnt))

    def test_same_tree_and_inodes_on_every_node(self):
        sa, da = walk(self.A, "sorted")
        sb, db = walk(self.B, "reverse")
        # Synthetic files and the shared area's: a few hundred names.
        self.assertGreater(len(sa), 60)
        self.assertEqual(sorted(sa.items()), sorted(sb.items()))
        self.assertEqual(da, db)
        self.check_consistent(self.A, sa, da)
        self.check_consistent(self.B, sb, db)
        # The shared area's numbers are the real files' on the shared
        # file system.
        for rel in ("shared/pre", "shared/pre/sub", "shared/pre/sub/f.bin"):
            real = os.lstat(os.path.join(self.shared, os.path.relpath(rel, "shared")))
            self.assertEqual(sa[rel][0], real.st_ino, rel)

    def test_order_and_restart_do_not_change_numbers(self):
        """A third mount (a node that joins later, or one restarted) sees
        every name first by path, reading the files, before any listing."""
        sa, da = walk(self.A, "sorted")
        m = os.path.join(self.tmp, "C")
        os.makedirs(m, exist_ok=True)
        with dltest.mounted(self.config, mountpoint=m) as c:
            sc, dc = walk_by_paths(c, list(sa))
        self.assertEqual(sorted(sa.items()), sorted(sc.items()))
        for d, ents in dc.items():
            self.assertEqual(ents, da[d], "listing of %s" % d)

    def test_sink_listings_agree_with_stat(self):
        """A sink is each node's own, but its listings' "." and ".." are
        what stat says, as everywhere else on the mount."""
        top = os.path.join(self.A, "ckpt")
        os.makedirs(os.path.join(top, "run", "e0"))
        self.addCleanup(shutil.rmtree, os.path.join(top, "run"), True)
        with open(os.path.join(top, "run", "e0", "model.pt"), "wb") as f:
            f.write(b"x" * 1000)
        for d in (top, os.path.join(top, "run"), os.path.join(top, "run", "e0")):
            ents = dict(getdents(d))
            self.assertEqual(ents["."], os.lstat(d).st_ino, d)
            self.assertEqual(ents[".."], os.lstat(os.path.join(d, "..")).st_ino, d)
            for name, ino in ents.items():
                self.assertEqual(ino, os.lstat(os.path.join(d, name)).st_ino, (d, name))

    def path(self, mnt, name):
        return os.path.join(mnt, "shared", name)

    def test_created_on_one_seen_on_all_with_its_inode(self):
        """CAP-02 as mlpstorage runs it, with the nodes taking turns: node B
        has just looked for the name (a miss), node A creates it, and B
        sees it at once with the same inode number and bytes."""
        name = ".dliofs-shared-fs-probe-%d" % os.getpid()
        self.assertFalse(os.path.exists(self.path(self.B, name)))
        payload = os.urandom(64)
        with open(self.path(self.A, name), "wb") as f:
            f.write(payload)
            os.fsync(f.fileno())
        st_a = os.stat(self.path(self.A, name))
        st_b = os.stat(self.path(self.B, name))
        real = os.stat(os.path.join(self.shared, name))
        self.assertEqual((st_a.st_ino, st_b.st_ino), (real.st_ino, real.st_ino))
        with open(self.path(self.B, name), "rb") as f:
            self.assertEqual(f.read(), payload)
        self.assertIn((name, real.st_ino), getdents(os.path.join(self.B, "shared")))
        os.unlink(self.path(self.A, name))

    def seen(self, pred):
        """Seconds until pred() holds (polled), or None after SEEN_WITHIN."""
        t0 = time.monotonic()
        while True:
            if pred():
                return time.monotonic() - t0
            if time.monotonic() - t0 > SEEN_WITHIN:
                return None
            time.sleep(0.005)

    def test_write_rename_delete_across_nodes(self):
        data = os.urandom(3 << 20)
        a, b = self.path(self.A, "w.bin"), self.path(self.B, "w.bin")
        # Both nodes know the name's absence, and B the directory's listing.
        self.assertFalse(os.path.exists(b))
        os.listdir(os.path.dirname(b))
        with open(a, "wb") as f:
            f.write(data)
        t_create = self.seen(lambda: os.path.exists(b))
        with open(b, "rb") as f:
            self.assertEqual(f.read(), data, "written on A, read on B")
        ino = os.stat(a).st_ino
        self.assertEqual(os.stat(b).st_ino, ino)

        # Renamed on B: A (which has just stat'ed the old name) sees it.
        os.stat(a)
        os.rename(b, self.path(self.B, "w2.bin"))
        t_old = self.seen(lambda: not os.path.exists(a))
        t_new = self.seen(lambda: os.path.exists(self.path(self.A, "w2.bin")))
        self.assertEqual(os.stat(self.path(self.A, "w2.bin")).st_ino, ino)

        # A size change on A: B (which has the old size cached) sees it.
        b2 = self.path(self.B, "w2.bin")
        self.assertEqual(os.stat(b2).st_size, len(data))
        with open(self.path(self.A, "w2.bin"), "ab") as f:
            f.write(b"tail")
        t_size = self.seen(lambda: os.stat(b2).st_size == len(data) + 4)

        # Overwritten in place on A (same size) while B keeps it open and
        # has its pages cached: B reads the new bytes.
        fd = os.open(b2, os.O_RDONLY)
        try:
            self.assertEqual(os.pread(fd, 4096, 0), data[:4096])
            new = os.urandom(4096)
            with open(self.path(self.A, "w2.bin"), "r+b") as f:
                f.write(new)
            t_over = self.seen(lambda: os.pread(fd, 4096, 0) == new)
        finally:
            os.close(fd)

        # Deleted on A: gone on B (which has just stat'ed it).
        os.stat(b2)
        os.unlink(self.path(self.A, "w2.bin"))
        t_del = self.seen(lambda: not os.path.exists(b2))
        self.assertNotIn("w2.bin", os.listdir(os.path.join(self.B, "shared")))

        got = {"create": t_create, "rename (old name gone)": t_old, "rename (new name)": t_new,
               "size change": t_size, "overwrite, file open": t_over, "delete": t_del}
        print("seen on the other node after (s): " + ", ".join(
            "%s %s" % (k, "never" if v is None else "%.3f" % v) for k, v in got.items()))
        for k, v in got.items():
            self.assertIsNotNone(v, "%s not seen on the other node within %.2f s" %
                                 (k, SEEN_WITHIN))
        # A creation is never hidden: a writable area's misses are not cached.
        self.assertLess(t_create, 0.25)
        self.assertLess(t_new, 0.25)


# One MPI rank of the probe (mpi4py): rank r uses mount `template % r`.
# Rank 0 creates the sentinel in the shared area with 64 random bytes, a
# barrier, every rank stats and reads it, the results are gathered; rank 0
# removes it, a barrier, every rank checks it is gone within the timeout.
# The same ranks then walk the synthetic tree, each in its own order, and
# compare the walks (path, st_ino, st_size, st_mode and readdir's d_ino).
# Rank 0 prints one JSON line.
PROBE = r"""
import hashlib, json, os, sys, time, uuid
from mpi4py import MPI
comm = MPI.COMM_WORLD
rank = comm.Get_rank()
mnt = sys.argv[1].replace("{rank}", str(rank))
within = float(sys.argv[2])
real = sys.argv[3]
area = os.path.join(mnt, "shared")
name = comm.bcast(".dliofs-shared-fs-probe-" + uuid.uuid4().hex if rank == 0 else None)
path = os.path.join(area, name)
payload = None
if rank == 0:
    payload = os.urandom(64)
    with open(path, "wb") as f:
        f.write(payload)
        os.fsync(f.fileno())
comm.Barrier()
try:
    st = os.stat(path)
    with open(path, "rb") as f:
        seen = (st.st_ino, f.read().hex(), None)
except OSError as e:
    seen = (None, None, e.errno)
dino = dict((e.name, e.inode()) for e in os.scandir(area)).get(name)
everyone = comm.gather((rank, seen, dino))
comm.Barrier()
if rank == 0:
    real_ino = os.stat(os.path.join(real, name)).st_ino
    os.unlink(path)
comm.Barrier()
t0 = time.monotonic()
while os.path.exists(path) and time.monotonic() - t0 < within:
    time.sleep(0.005)
gone = comm.gather(None if os.path.exists(path) else time.monotonic() - t0)
order = sorted if rank % 2 == 0 else (lambda x, key: sorted(x, key=key, reverse=True))
rows = []
def visit(d):
    # readdir's d_ino (scandir's inode()) beside what lstat says.
    for e in order(list(os.scandir(d)), key=lambda e: e.name):
        if d == mnt and e.name == "shared":
            continue
        s = os.lstat(e.path)
        rows.append("%s %d %d %o %d" % (os.path.relpath(e.path, mnt), s.st_ino, s.st_size,
                                         s.st_mode, e.inode()))
        if e.is_dir(follow_symlinks=False):
            visit(e.path)
visit(mnt)
digest = comm.gather((len(rows), hashlib.sha256("\n".join(sorted(rows)).encode()).hexdigest()))
if rank == 0:
    print(json.dumps({"name": name, "payload": payload.hex(), "real_ino": real_ino,
                      "ranks": everyone,
                      "gone_after": gone, "walks": digest}))
"""

CLUSTER_CONFIG = CONFIG + """\
pacer: {read.bandwidth: 1GB/s}
cluster: {period: 10ms, window: 100ms}
"""
NODES = 4


def mpi4py_python():
    """The Python with mpi4py (its own MPI: a separate launcher, as
    mlpstorage's probe is a separate job from the mounts), or None."""
    for py in (dltest.VENV_PY, sys.executable):
        if not os.path.exists(py):
            continue
        if subprocess.run([py, "-c", "import mpi4py.MPI"], capture_output=True).returncode == 0:
            mpiexec = os.path.join(os.path.dirname(py), "mpiexec")
            return py, (mpiexec if os.path.exists(mpiexec) else shutil.which("mpiexec"))
    return None


class MpirunCluster(unittest.TestCase):
    """4 mounts started by one mpirun as one cluster, over one shared
    directory; the probe's 4 ranks started by mpiexec, rank r on mount r."""

    @classmethod
    def setUpClass(cls):
        cls.proc = None
        dltest.require(dltest.fuse_available(), "/dev/fuse or fusermount3 not available")
        dltest.require(dltest.mpirun() is not None, "mpirun (openmpi-bin) not installed")
        cls.tmp = tempfile.mkdtemp(prefix="dliofs-hosts-mpi-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, True)
        cls.shared = os.path.join(cls.tmp, "shared")
        os.mkdir(cls.shared)
        cls.config = dltest.write_config(cls.tmp, CLUSTER_CONFIG % {"shared": cls.shared})
        r = subprocess.run([dltest.DLIOFS, "check", cls.config], capture_output=True, text=True)
        dltest.require("built without MPI" not in r.stderr, "dliofs has no MPI: %s" % r.stderr)
        if r.returncode:
            raise AssertionError("dliofs check refused the config: %s" % r.stderr)
        cls.mnts = [os.path.join(cls.tmp, "m%d" % i) for i in range(NODES)]
        for m in cls.mnts:
            os.mkdir(m)
        cls.proc = dltest.Cluster(cls.config, os.path.join(cls.tmp, "m{rank}"), NODES,
                                  os.path.join(cls.tmp, "mpirun.log"))
        cls.addClassCleanup(cls.proc.stop)

    def test_shared_fs_probe_under_mpi(self):
        py = mpi4py_python()
        dltest.require(py is not None and py[1] is not None,
                       "no Python with mpi4py and its mpiexec (scripts/install-deps.sh "
                       "installs mpi4py into /opt/dliofs-venv)")
        python, mpiexec = py
        cmd = [mpiexec, "-n", str(NODES), python, "-c", PROBE,
               os.path.join(self.tmp, "m{rank}"), str(SEEN_WITHIN), self.shared]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                           # Harmless to MPICH's mpiexec; an Open MPI one needs
                           # them as root and with more ranks than cores.
                           env=dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
                                    OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                                    OMPI_MCA_rmaps_base_oversubscribe="1"))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        res = json.loads(r.stdout.strip().splitlines()[-1])
        self.assertEqual(len(res["ranks"]), NODES)
        inos = {rank: seen[0] for rank, seen, _ in res["ranks"]}
        for rank, (ino, data, err) in ((k, s) for k, s, _ in res["ranks"]):
            self.assertIsNone(err, "rank %d could not see the sentinel: errno %s" % (rank, err))
            self.assertEqual(data, res["payload"], "rank %d read other bytes" % rank)
        # The same on every rank, and the shared file system's own.
        self.assertEqual(set(inos.values()), {res["real_ino"]}, "inode numbers per rank: %s, "
                         "the shared file's %d" % (inos, res["real_ino"]))
        for rank, _, dino in res["ranks"]:
            self.assertEqual(dino, inos[0], "rank %d's readdir d_ino" % rank)
        for rank, t in enumerate(res["gone_after"]):
            self.assertIsNotNone(t, "rank %d still saw the sentinel %.2f s after rank 0 "
                                 "removed it" % (rank, SEEN_WITHIN))
        walks = res["walks"]
        self.assertGreater(walks[0][0], 60)
        self.assertEqual(len(set(map(tuple, walks))), 1, "the ranks' walks differ: %s" % walks)
        print("CAP-02 equivalent over %d mounts: inode %d on every rank, sentinel gone on "
              "every rank within %s s" % (NODES, inos[0],
                                          " ".join("%.3f" % t for t in res["gone_after"])))

    def test_rank0_file_has_the_shared_inode(self):
        """The number every node shows is the shared file system's own."""
        name = "from-rank0"
        with open(os.path.join(self.mnts[0], "shared", name), "wb") as f:
            f.write(b"x" * 100)
        real = os.stat(os.path.join(self.shared, name)).st_ino
        got = [os.stat(os.path.join(m, "shared", name)).st_ino for m in self.mnts]
        self.assertEqual(got, [real] * NODES)
        os.unlink(os.path.join(self.mnts[3], "shared", name))


if __name__ == "__main__":
    dltest.main()
