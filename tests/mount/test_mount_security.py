"""What a client of the mount must not reach, as regression tests of the
adversarial review (issue #16):

- a directory moved out of a backing directory is no longer served (item 2);
- symlinks cannot be made to lead out of a backing directory by chains,
  names that do not exist yet, renames or hard links, and planted chains are
  not followed through the mount (item 3);
- names and link targets from clients reach the log escaped (item 9);
- mounting over a live dliofs mount is refused and a dead one is cleaned up
  instead of stacked (item 8).

The layout mirrors the review's: the mountpoint, the backing directory and
an `outside` directory with a secret are siblings, so a link that climbs out
of the backing directory through the mount lands next to the secret.
"""
import ctypes
import errno
import os
import random
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import sys  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/: dltest
import dltest  # noqa: E402

SECRET = b"outside secret\n"
RENAME_EXCHANGE = 2
_libc = ctypes.CDLL(None, use_errno=True)


def renameat2(old, new, flags):
    """renameat2(2), which Python's os module does not offer."""
    if _libc.renameat2(AT_FDCWD, os.fsencode(old), AT_FDCWD, os.fsencode(new), flags) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), old)


AT_FDCWD = -100


def mounts_at(path):
    return dltest.proc_mounts().count(os.path.realpath(path))


class Base(unittest.TestCase):
    """One mount per class: base/{mnt, rw, ro, outside/secret.txt}."""
    EXTRA_BACKING = ""

    @classmethod
    def setUpClass(cls):
        dltest.require(dltest.fuse_available(), "/dev/fuse or fusermount3 not available")
        cls.base = tempfile.mkdtemp(prefix="dliofs-sec-")
        cls.addClassCleanup(shutil.rmtree, cls.base, True)
        b = cls.base
        cls.rw, cls.ro = os.path.join(b, "rw"), os.path.join(b, "ro")
        cls.outside, cls.mnt = os.path.join(b, "outside"), os.path.join(b, "mnt")
        for d in (cls.rw, cls.ro, cls.outside, cls.mnt):
            os.mkdir(d)
        with open(os.path.join(cls.outside, "secret.txt"), "wb") as f:
            f.write(SECRET)
        with open(os.path.join(cls.rw, "file.txt"), "wb") as f:
            f.write(b"inside\n")
        cls.setup_real()
        cls.config = dltest.write_config(b, (
            "datasets:\n  - {name: syn, format: raw, files: 1, sample_size: 4KiB}\n"
            "backing:\n  - {path: %s, at: rw, writable: true}\n  - {path: %s, at: ro}\n"
            "  - {at: ckpt, sink: true}\n" % (cls.rw, cls.ro)))
        cls.log = os.path.join(b, "daemon.log")
        cls.addClassCleanup(dltest.check_daemon_log, cls.log)
        cm = dltest.mounted(cls.config, ("--log", cls.log), mountpoint=cls.mnt)
        cm.__enter__()
        cls.addClassCleanup(cm.__exit__, None, None, None)

    @classmethod
    def setup_real(cls):
        """Things planted in the real directories before the mount."""

    def m(self, *p):
        return os.path.join(self.mnt, *p)

    def r(self, *p):
        return os.path.join(self.rw, *p)

    def log_text(self):
        with open(self.log, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def assertErrno(self, codes, fn, *args, **kw):
        codes = codes if isinstance(codes, tuple) else (codes,)
        with self.assertRaises(OSError) as cm:
            fn(*args, **kw)
        self.assertIn(cm.exception.errno, codes, "%s%r: %s" % (fn.__name__, args, cm.exception))

    def assertNotSecret(self, path):
        """Reading path through the mount fails, and never yields the secret."""
        try:
            data = dltest.read_file(path)
        except OSError:
            return
        self.assertNotEqual(data, SECRET, "%s read the outside file" % path)
        self.fail("%s was readable (%r)" % (path, data[:40]))


class MovedOut(Base):
    """Item 2: the daemon holds a handle on every directory the kernel looked
    up; one moved out of the backing directory must stop being served."""

    def test_held_directory_moved_out_is_not_served(self):
        os.mkdir(self.r("mv"))
        with open(self.r("mv", "before.txt"), "w") as f:
            f.write("x")
        fd = os.open(self.m("rw", "mv"), os.O_RDONLY | os.O_DIRECTORY)  # like a shell's cwd
        try:
            os.rename(self.r("mv"), os.path.join(self.outside, "moved"))
            moved = os.path.join(self.outside, "moved")
            with open(os.path.join(moved, "planted.txt"), "wb") as f:
                f.write(SECRET)
            self.assertErrno((errno.EACCES, errno.ENOENT, errno.ESTALE), os.mkdir, "inner",
                             dir_fd=fd)
            self.assertErrno((errno.EACCES, errno.ENOENT, errno.ESTALE), os.open, "new",
                             os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd)
            self.assertErrno((errno.EACCES, errno.ENOENT, errno.ESTALE), os.open,
                             "planted.txt", os.O_RDONLY, dir_fd=fd)
            self.assertErrno((errno.EACCES, errno.ENOENT, errno.ESTALE), os.listdir, fd)
            self.assertErrno((errno.EACCES, errno.ENOENT, errno.ESTALE), os.unlink,
                             "before.txt", dir_fd=fd)
            self.assertEqual(sorted(os.listdir(moved)), ["before.txt", "planted.txt"])
            self.assertIn("moved out of the backing directory", self.log_text())
        finally:
            os.close(fd)
        # Moved back, it is served again.
        os.rename(os.path.join(self.outside, "moved"), self.r("mv"))
        self.assertEqual(sorted(os.listdir(self.m("rw", "mv"))), ["before.txt", "planted.txt"])
        shutil.rmtree(self.r("mv"))

    def test_held_file_moved_out_is_not_opened(self):
        with open(self.r("held.txt"), "wb") as f:
            f.write(b"held\n")
        os.stat(self.m("rw", "held.txt"))  # the kernel now holds the inode
        os.rename(self.r("held.txt"), os.path.join(self.outside, "held.txt"))
        try:
            self.assertErrno((errno.EACCES, errno.ENOENT, errno.ESTALE), open,
                             self.m("rw", "held.txt"), "rb")
        finally:
            os.unlink(os.path.join(self.outside, "held.txt"))

    def test_directory_inside_still_works_after_moves_inside(self):
        os.makedirs(self.r("d1", "d2"))
        fd = os.open(self.m("rw", "d1", "d2"), os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.rename(self.r("d1"), self.r("d1moved"))  # still inside
            os.mkdir("ok", dir_fd=fd)
            self.assertTrue(os.path.isdir(self.r("d1moved", "d2", "ok")))
        finally:
            os.close(fd)
            shutil.rmtree(self.r("d1moved"))


class Symlinks(Base):
    """Item 3: link checks that count components only are fooled by chains."""

    @classmethod
    def setup_real(cls):
        # Planted on the real file system (not through the mount): a chain whose
        # parts look harmless one by one.
        os.makedirs(os.path.join(cls.rw, "p", "q"))
        os.symlink("../..", os.path.join(cls.rw, "p", "q", "top"))
        os.symlink("p/q/top/../outside/secret.txt", os.path.join(cls.rw, "planted"))

    def test_chain_through_an_inside_link_is_refused(self):
        os.makedirs(self.m("rw", "a", "b", "c"))
        os.symlink("../../..", self.m("rw", "a", "b", "c", "top"))  # the backing dir itself
        self.assertEqual(os.path.realpath(self.r("a", "b", "c", "top")), self.rw)
        self.assertErrno(errno.EACCES, os.symlink, "a/b/c/top/../../outside/secret.txt",
                         self.m("rw", "esc"))
        self.assertFalse(os.path.lexists(self.r("esc")))
        self.assertNotSecret(self.m("rw", "esc"))
        # The same chain one level further down.
        self.assertErrno(errno.EACCES, os.symlink, "../a/b/c/top/../../outside/secret.txt",
                         self.m("rw", "a", "esc"))
        self.assertFalse(os.path.lexists(self.r("a", "esc")))
        # Inside chains still work.
        os.symlink("a/b/c/top/file.txt", self.m("rw", "via_top"))
        self.assertEqual(dltest.read_file(self.m("rw", "via_top")), b"inside\n")
        for p in ("via_top", "a/b/c/top"):
            os.unlink(self.r(p))
        shutil.rmtree(self.r("a"))

    def test_climbing_through_a_name_that_does_not_exist_yet_is_refused(self):
        os.makedirs(self.m("rw", "c1", "c2", "c3"))
        # Lexically inside (c1/c2/outside/...) while `later` is missing; made an
        # escape by creating later -> ../../.. afterwards.
        self.assertErrno(errno.EACCES, os.symlink, "c1/c2/c3/later/../../outside/secret.txt",
                         self.m("rw", "esc2"))
        os.symlink("../../..", self.m("rw", "c1", "c2", "c3", "later"))
        self.assertFalse(os.path.lexists(self.r("esc2")))
        os.unlink(self.r("c1", "c2", "c3", "later"))
        shutil.rmtree(self.r("c1"))

    def test_renaming_a_link_rechecks_it(self):
        os.mkdir(self.m("rw", "s1"))
        os.symlink("../file.txt", self.m("rw", "s1", "lnk"))  # fine where it is
        self.assertEqual(dltest.read_file(self.m("rw", "s1", "lnk")), b"inside\n")
        self.assertErrno(errno.EACCES, os.rename, self.m("rw", "s1", "lnk"), self.m("rw", "lnk"))
        self.assertFalse(os.path.lexists(self.r("lnk")))
        self.assertTrue(os.path.islink(self.r("s1", "lnk")))
        # Down is fine, and a rename within its directory too.
        os.mkdir(self.m("rw", "s1", "deeper"))
        os.rename(self.m("rw", "s1", "lnk"), self.m("rw", "s1", "deeper", "lnk"))
        os.rename(self.m("rw", "s1", "deeper", "lnk"), self.m("rw", "s1", "deeper", "lnk2"))
        self.assertEqual(os.readlink(self.r("s1", "deeper", "lnk2")), "../file.txt")
        shutil.rmtree(self.r("s1"))

    def test_renaming_a_directory_up_rechecks_its_links(self):
        os.makedirs(self.m("rw", "d", "e"))
        os.symlink("../../file.txt", self.m("rw", "d", "e", "l"))  # rw/file.txt
        self.assertErrno(errno.EACCES, os.rename, self.m("rw", "d", "e"), self.m("rw", "e"))
        self.assertFalse(os.path.lexists(self.r("e")))
        # Down, or sideways at the same depth, is fine.
        os.mkdir(self.m("rw", "d2"))
        os.rename(self.m("rw", "d", "e"), self.m("rw", "d2", "e"))
        self.assertEqual(dltest.read_file(self.m("rw", "d2", "e", "l")), b"inside\n")
        shutil.rmtree(self.r("d"))
        shutil.rmtree(self.r("d2"))

    def test_exchange_rechecks_both_sides(self):
        os.makedirs(self.m("rw", "x", "y"))
        os.symlink("../../file.txt", self.m("rw", "x", "y", "l"))  # rw/file.txt
        self.assertEqual(dltest.read_file(self.m("rw", "x", "y", "l")), b"inside\n")
        with open(self.m("rw", "plain"), "w") as f:
            f.write("p")
        # The link would land two levels up: refused, in either order.
        self.assertErrno(errno.EACCES, renameat2, self.m("rw", "x", "y", "l"),
                         self.m("rw", "plain"), RENAME_EXCHANGE)
        self.assertErrno(errno.EACCES, renameat2, self.m("rw", "plain"),
                         self.m("rw", "x", "y", "l"), RENAME_EXCHANGE)
        self.assertTrue(os.path.islink(self.r("x", "y", "l")))
        self.assertFalse(os.path.islink(self.r("plain")))
        # The directory holding it, exchanged with one a level up: refused too.
        os.mkdir(self.m("rw", "z"))
        self.assertErrno(errno.EACCES, renameat2, self.m("rw", "x", "y"), self.m("rw", "z"),
                         RENAME_EXCHANGE)
        self.assertTrue(os.path.islink(self.r("x", "y", "l")))
        # Within one directory nothing moves up or down.
        os.symlink("../../file.txt", self.m("rw", "x", "y", "l2"))
        renameat2(self.m("rw", "x", "y", "l"), self.m("rw", "x", "y", "l2"), RENAME_EXCHANGE)
        self.assertEqual(dltest.read_file(self.m("rw", "x", "y", "l")), b"inside\n")
        shutil.rmtree(self.r("x"))
        os.rmdir(self.r("z"))
        os.unlink(self.r("plain"))

    def test_hard_link_of_a_link_rechecks_it(self):
        os.mkdir(self.m("rw", "h"))
        os.symlink("../file.txt", self.m("rw", "h", "l"))
        self.assertErrno((errno.EACCES, errno.EPERM), os.link, self.m("rw", "h", "l"),
                         self.m("rw", "hl"), follow_symlinks=False)
        self.assertFalse(os.path.lexists(self.r("hl")))
        shutil.rmtree(self.r("h"))

    def test_planted_chain_is_not_followed_through_the_mount(self):
        self.assertTrue(os.path.islink(self.m("rw", "planted")))
        self.assertErrno(errno.EACCES, os.readlink, self.m("rw", "planted"))
        self.assertNotSecret(self.m("rw", "planted"))
        # Its harmless part still reads.
        self.assertEqual(os.readlink(self.m("rw", "p", "q", "top")), "../..")

    def test_existing_rules_still_hold(self):
        for target in ("/etc/passwd", "../outside/secret.txt", "a/../../x", "..", "/"):
            with self.subTest(target=target):
                self.assertErrno(errno.EACCES, os.symlink, target, self.m("rw", "bad"))
                self.assertFalse(os.path.lexists(self.r("bad")))
        # `..` through a name that is no directory (yet) is refused: what it
        # would climb from is not known.
        self.assertErrno(errno.EACCES, os.symlink, "t/../file.txt", self.m("rw", "t_missing"))
        self.assertErrno(errno.EACCES, os.symlink, "file.txt/../file.txt", self.m("rw", "f_dot"))
        os.mkdir(self.m("rw", "t"))
        os.symlink("t/../file.txt", self.m("rw", "t_real"))
        self.assertEqual(dltest.read_file(self.m("rw", "t_real")), b"inside\n")
        os.unlink(self.r("t_real"))
        os.rmdir(self.r("t"))


class LogInjection(Base):
    """Item 9: what clients name reaches the log escaped, one line per message."""
    FORGED = "dliofs: forged"

    @classmethod
    def setup_real(cls):
        os.symlink("/etc/passwd\n" + cls.FORGED + " by a planted link",
                   os.path.join(cls.ro, "evil\n" + cls.FORGED + " by a name"))

    def forged_lines(self, by):
        return [ln for ln in self.log_text().splitlines()
                if ln.startswith(self.FORGED + " by " + by)]

    def test_refused_link_target_is_escaped(self):
        target = "/x\n" + self.FORGED + " by a target\x1b[31m"
        self.assertErrno(errno.EACCES, os.symlink, target, self.m("rw", "bad\nname"))
        self.assertEqual(self.forged_lines("a target"), [])
        self.assertIn("\\n" + self.FORGED + " by a target\\x1b[31m", self.log_text())

    def test_planted_link_name_and_target_are_escaped(self):
        p = self.m("ro", "evil\n" + self.FORGED + " by a name")
        self.assertErrno(errno.EACCES, os.readlink, p)
        self.assertEqual(self.forged_lines("a name"), [])
        self.assertEqual(self.forged_lines("a planted link"), [])
        self.assertIn("evil\\n" + self.FORGED + " by a name", self.log_text())

    def test_sink_path_is_escaped(self):
        p = self.m("ckpt", "ck\n" + self.FORGED + " by a sink name")
        with open(p, "wb") as f:
            f.write(b"x")
        # A sink read is served (generator bytes, the size written) and
        # logs nothing; whatever the daemon says about the name is escaped.
        with open(p, "rb") as f:
            self.assertEqual(len(f.read(10)), 1)
        self.assertEqual(self.forged_lines("a sink name"), [])


class MountOver(unittest.TestCase):
    """Item 8: mounting over a live mount stacked a second one; after kill -9
    the dead ones piled up."""

    def setUp(self):
        dltest.require(dltest.fuse_available(), "/dev/fuse or fusermount3 not available")
        self.tmp = tempfile.mkdtemp(prefix="dliofs-over-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.mnt = os.path.join(self.tmp, "mnt")
        os.mkdir(self.mnt)
        self.config = dltest.write_config(self.tmp, (
            "datasets:\n  - {name: syn, format: raw, files: 2, sample_size: 4KiB}\n"))
        self.addCleanup(self.unmount_all)

    def unmount_all(self):
        for _ in range(10):
            if not dltest.is_mounted(self.mnt):
                break
            subprocess.run(["fusermount3", "-u", "-z", self.mnt], capture_output=True)
        self.assertFalse(dltest.is_mounted(self.mnt))

    def mount(self, *extra):
        return subprocess.run([dltest.DLIOFS, "mount", self.mnt, self.config] + list(extra),
                              capture_output=True, text=True, timeout=60)

    def test_live_mount_is_not_stacked(self):
        r = self.mount()
        self.assertEqual(r.returncode, 0, r.stderr)
        pid = dltest.daemon_pid(self.mnt)
        r2 = self.mount()
        self.assertNotEqual(r2.returncode, 0)
        self.assertIn("already mounted", r2.stderr)
        self.assertIn("dliofs umount", r2.stderr)
        self.assertEqual(mounts_at(self.mnt), 1)
        self.assertEqual(dltest.daemon_pids(self.mnt), [pid])
        self.assertEqual(sorted(os.listdir(self.mnt)), ["syn"])
        u = subprocess.run([dltest.DLIOFS, "umount", self.mnt], capture_output=True, text=True)
        self.assertEqual(u.returncode, 0, u.stderr)
        self.assertEqual(mounts_at(self.mnt), 0)

    def test_dead_mounts_are_cleaned_not_stacked(self):
        for trial in range(3):
            d = subprocess.Popen([dltest.DLIOFS, "mount", self.mnt, self.config, "-f"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            ok = dltest.wait_for(lambda: mounts_at(self.mnt) >= 1 and d.poll() is None, 20)
            self.assertTrue(ok, "trial %d: no mount" % trial)
            dltest.wait_for(lambda: os.path.isdir(os.path.join(self.mnt, "syn")), 10)
            d.send_signal(signal.SIGKILL)
            d.wait()
            d.stderr.close()
            # Dead: every request to the daemon says ENOTCONN.
            self.assertTrue(dltest.wait_for(lambda: self.stat_errno() == errno.ENOTCONN, 10),
                            "trial %d: the mount did not die" % trial)
            self.assertEqual(mounts_at(self.mnt), 1, "trial %d" % trial)
        r = self.mount()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("dead", r.stderr)  # it says what it cleaned up
        self.assertEqual(mounts_at(self.mnt), 1)
        self.assertEqual(sorted(os.listdir(self.mnt)), ["syn"])

    def stat_errno(self):
        try:
            os.statvfs(self.mnt)  # always reaches the daemon (no attribute cache)
        except OSError as e:
            return e.errno
        return 0


NOBODY = 65534
ROOT_SECRET = b"root's secret\n"


class CreateRace(unittest.TestCase):
    """Issue #22 item 2: in a world-writable (1777) backing directory, a
    client creating a name through the mount while root on the host creates
    the same name with O_EXCL and mode 0600 got root's file open read-write (the daemon opened it as root,
    without O_EXCL), or had it chowned to itself (the daemon chowned what it
    found). The creations now run under the caller's credentials: the kernel
    refuses the other user's file and the new file is born the caller's."""
    TRIES = 4000
    SECS = 20

    def setUp(self):
        dltest.require(dltest.fuse_available(), "/dev/fuse or fusermount3 not available")
        dltest.require(os.geteuid() == 0, "needs root (a second user)")
        self.base = tempfile.mkdtemp(prefix="dliofs-race-")
        self.addCleanup(shutil.rmtree, self.base, True)
        os.chmod(self.base, 0o755)
        self.shared, self.mnt = os.path.join(self.base, "shared"), os.path.join(self.base, "mnt")
        os.mkdir(self.shared)
        os.chmod(self.shared, 0o1777)
        os.mkdir(self.mnt)
        # A little latency on metadata widens the window between a
        # client's lookup and its create, as a real backing store has.
        cfg = dltest.write_config(self.base, (
            "datasets: []\nbacking:\n  - {path: %s, at: shared, writable: true}\n"
            "pacer: {meta: {latency: 3ms}}\n" % self.shared))
        log = os.path.join(self.base, "daemon.log")
        self.addCleanup(dltest.check_daemon_log, log)
        cm = dltest.mounted(cfg, ("--log", log), mountpoint=self.mnt)
        cm.__enter__()
        self.addCleanup(cm.__exit__, None, None, None)

    def nobody_loop(self, path, stop, report):
        """As nobody: open-or-create path until stop exists; one line per
        breach into report."""
        made = 0
        with open(report, "w") as out, open(report + ".made", "w") as count:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            while not os.path.exists(stop):
                try:
                    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
                except OSError:
                    continue
                try:
                    st = os.fstat(fd)
                    if st.st_uid != NOBODY:
                        out.write("opened a file of uid %d read-write\n" % st.st_uid)
                    data = os.read(fd, 100)
                    if ROOT_SECRET in data:
                        out.write("read root's content\n")
                finally:
                    os.close(fd)
                if st.st_uid == NOBODY:
                    made += 1
                    try:
                        os.unlink(path)
                    except OSError:
                        pass
                out.flush()
            # Not a breach: how often nobody's own create won.
            count.write(str(made))

    def as_nobody(self, fn):
        """fn() in a child running as nobody: what it returns (a str)."""
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.close(r)
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
                os.write(w, fn().encode())
                code = 0
            finally:
                os._exit(code)
        os.close(w)
        with os.fdopen(r, "rb") as f:
            out = f.read().decode()
        _, status = os.waitpid(pid, 0)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0, "the child failed")
        return out

    def test_names_are_the_callers(self):
        """What nobody makes is nobody's, born so (no chown after the fact);
        root's names in the sticky directory are not nobody's to remove or
        replace."""
        m = os.path.join(self.mnt, "shared")
        with open(os.path.join(self.shared, "roots"), "wb") as f:
            f.write(ROOT_SECRET)
        os.chmod(os.path.join(self.shared, "roots"), 0o644)

        def work():
            out = []
            with open(os.path.join(m, "f"), "wb") as f:
                f.write(b"mine")
            os.mkdir(os.path.join(m, "d"))
            os.symlink("f", os.path.join(m, "l"))
            os.mknod(os.path.join(m, "n"), 0o644 | 0o100000)
            os.link(os.path.join(m, "f"), os.path.join(m, "h"))
            for what, fn in (("unlink", lambda: os.unlink(os.path.join(m, "roots"))),
                             ("rename over", lambda: os.rename(os.path.join(m, "f"),
                                                               os.path.join(m, "roots"))),
                             ("rename away", lambda: os.rename(os.path.join(m, "roots"),
                                                               os.path.join(m, "x"))),
                             ("link", lambda: os.link(os.path.join(m, "roots"),
                                                      os.path.join(m, "r2")))):
                try:
                    fn()
                    out.append(what + " worked")
                except OSError as e:
                    out.append("%s %s" % (what, errno.errorcode[e.errno]))
            return "\n".join(out)

        out = self.as_nobody(work).splitlines()
        for name in ("f", "d", "l", "n", "h"):
            st = os.lstat(os.path.join(self.shared, name))
            self.assertEqual((st.st_uid, st.st_gid), (NOBODY, NOBODY), name)
        # Linking another user's file is the kernel's call (fs.protected_hardlinks).
        with open("/proc/sys/fs/protected_hardlinks") as f:
            link = "link EPERM" if f.read().strip() == "1" else "link worked"
        self.assertEqual(out, ["unlink EPERM", "rename over EPERM", "rename away EPERM", link])
        with open(os.path.join(self.shared, "roots"), "rb") as f:
            self.assertEqual(f.read(), ROOT_SECRET)
        self.assertEqual(os.stat(os.path.join(self.shared, "roots")).st_uid, 0)

    def test_create_race(self):
        # nobody through the mount; root on the host, in the real directory.
        path, real = os.path.join(self.mnt, "shared", "victim"), os.path.join(self.shared, "victim")
        stop, report = os.path.join(self.base, "stop"), os.path.join(self.base, "report")
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                self.nobody_loop(path, stop, report)
                code = 0
            finally:
                os._exit(code)
        breaches, made = [], 0
        try:
            end = time.monotonic() + self.SECS
            for _ in range(self.TRIES):
                if time.monotonic() > end:
                    break
                # The name absent for a while (nobody's lookup finds nothing),
                # then created (maybe between that lookup and its create).
                time.sleep(random.uniform(0, 0.003))
                try:
                    fd = os.open(real, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                except FileExistsError:
                    try:
                        os.unlink(real)  # nobody's: root may remove it
                    except OSError:
                        pass
                    continue
                try:
                    os.write(fd, ROOT_SECRET)
                    st = os.fstat(fd)
                finally:
                    os.close(fd)
                made += 1
                if st.st_uid != 0:
                    breaches.append("root's new file belongs to uid %d" % st.st_uid)
                # On disk: root's content under another owner is root's file
                # chowned.
                try:
                    with open(real, "rb") as f:
                        if f.read() == ROOT_SECRET and os.fstat(f.fileno()).st_uid != 0:
                            breaches.append("root's file chowned to uid %d"
                                            % os.fstat(f.fileno()).st_uid)
                except OSError:
                    pass
                try:
                    os.unlink(real)
                except OSError:
                    pass
        finally:
            with open(stop, "w"):
                pass
            _, status = os.waitpid(pid, 0)
        with open(report) as f:
            breaches += f.read().splitlines()
        with open(report + ".made") as f:
            theirs = int(f.read())
        print("create race: root created the file %d times, nobody %d times" % (made, theirs))
        # nobody's creates work, and give nobody's files (checked in its loop).
        self.assertGreater(theirs, 0, "nobody never created the file")
        self.assertEqual(os.waitstatus_to_exitcode(status), 0, "the nobody loop failed")
        self.assertGreater(made, 100, "too few creations to race")
        self.assertEqual(breaches[:5], [], "%d breaches" % len(breaches))


class SanitizedDaemon(unittest.TestCase):
    """LeakSanitizer checks a process when it exits through exit(); the
    backgrounded daemon used to leave through _exit(), so a sanitizer build
    never checked it. ASan's atexit=1 prints its exit statistics from the
    same place the leak check runs: their presence in the daemon's log shows
    the check ran."""

    def test_backgrounded_daemon_is_leak_checked_on_exit(self):
        if "address" not in os.environ.get("DLIOFS_SANITIZE", ""):
            self.skipTest("needs the sanitizer build (meson -Db_sanitize=address,undefined)")
        dltest.require(dltest.fuse_available(), "/dev/fuse or fusermount3 not available")
        tmp = tempfile.mkdtemp(prefix="dliofs-san-")
        self.addCleanup(shutil.rmtree, tmp, True)
        mnt, log = os.path.join(tmp, "mnt"), os.path.join(tmp, "daemon.log")
        os.mkdir(mnt)
        cfg = dltest.write_config(tmp, "datasets:\n  - {name: syn, format: raw, files: 2, "
                                       "sample_size: 4KiB}\n")
        env = dict(os.environ)
        env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":atexit=1:detect_leaks=1"
        r = subprocess.run([dltest.DLIOFS, "mount", mnt, cfg, "--log", log], env=env,
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        pid = dltest.daemon_pid(mnt)
        self.assertEqual(len(dltest.read_file(os.path.join(mnt, "syn", "train",
                                                           "img_0_of_2.raw"))), 4096)
        u = subprocess.run([dltest.DLIOFS, "umount", mnt], capture_output=True, text=True)
        self.assertEqual(u.returncode, 0, u.stderr)
        self.assertTrue(dltest.wait_for(lambda: not dltest.pid_alive(pid), 60),
                        "the daemon did not exit")
        with open(log, errors="replace") as f:
            text = f.read()
        self.assertIn("AddressSanitizer exit stats:", text,
                      "the daemon left without running its atexit handlers")
        self.assertNotIn("LeakSanitizer", text, text[-3000:])


if __name__ == "__main__":
    dltest.main()
