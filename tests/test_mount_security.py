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
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import dltest

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
        with open(p, "rb") as f:
            self.assertErrno(errno.EIO, f.read, 1)
        self.assertEqual(self.forged_lines("a sink name"), [])
        self.assertIn("ck\\n" + self.FORGED + " by a sink name", self.log_text())


if __name__ == "__main__":
    dltest.main()
