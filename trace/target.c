/* Trace targets: the file a trace is written to is named by a config or a
 * live command, and the daemon runs as root. Opening a device or a FIFO for
 * writing already acts (a FIFO blocks until a reader comes, a device's open
 * runs its driver), and a truncate or a header written to /proc or /sys
 * changes the kernel; so what exists is looked at through an O_PATH handle
 * first, opened for writing only when it is a regular file on an ordinary
 * filesystem, and nothing is truncated here (dl_trace_start_fd does it once
 * every check of the caller has passed too). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "dliofs/trace.h"

/* Kernel filesystems whose files are interfaces, not storage. */
static const struct {
	unsigned long magic;
	const char *name;
} pseudo_fs[] = {
	{0x9fa0, "/proc"},		/* PROC_SUPER_MAGIC */
	{0x62656572, "/sys"},		/* SYSFS_MAGIC */
	{0x64626720, "debugfs"},	/* DEBUGFS_MAGIC */
	{0x74726163, "tracefs"},	/* TRACEFS_MAGIC */
	{0x27e0eb, "a cgroup filesystem"},	/* CGROUP_SUPER_MAGIC */
	{0x63677270, "a cgroup filesystem"},	/* CGROUP2_SUPER_MAGIC */
	{0x73636673, "securityfs"},	/* SECURITYFS_MAGIC */
	{0x62656570, "configfs"},	/* CONFIGFS_MAGIC */
	{0xcafe4a11, "bpffs"},		/* BPF_FS_MAGIC */
	{0xde5e81e4, "efivarfs"},	/* EFIVARFS_MAGIC */
	{0x6165676c, "pstore"},		/* PSTOREFS_MAGIC */
	{0xf97cff8c, "selinuxfs"},	/* SELINUX_MAGIC */
	{0x42494e4d, "binfmt_misc"},	/* BINFMTFS_MAGIC */
	{0x65735543, "fusectl"},	/* FUSE_CTL_SUPER_MAGIC */
	{0x1cd1, "devpts"},		/* DEVPTS_SUPER_MAGIC */
};

static int say(char *why, size_t wl, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int say(char *why, size_t wl, int err, const char *fmt, ...)
{
	va_list ap;

	if (why && wl) {
		va_start(ap, fmt);
		vsnprintf(why, wl, fmt, ap);
		va_end(ap);
	}
	return err;
}

static const char *kind_of(mode_t m)
{
	return S_ISDIR(m)    ? "a directory"
	       : S_ISFIFO(m) ? "a FIFO"
	       : S_ISCHR(m)  ? "a character device"
	       : S_ISBLK(m)  ? "a block device"
	       : S_ISSOCK(m) ? "a socket"
	       : S_ISLNK(m)  ? "a symlink"
			     : "not a file";
}

/* A regular file on storage: 0, or -EINVAL and why. */
static int check_fd(int fd, struct stat *st, char *why, size_t wl)
{
	struct statfs sf;

	if (fstat(fd, st))
		return say(why, wl, -errno, "%s", strerror(errno));
	if (!S_ISREG(st->st_mode))
		return say(why, wl, -EINVAL, "not a regular file (%s)", kind_of(st->st_mode));
	if (fstatfs(fd, &sf))
		return say(why, wl, -errno, "%s", strerror(errno));
	for (size_t i = 0; i < sizeof(pseudo_fs) / sizeof(pseudo_fs[0]); i++)
		if ((unsigned long)sf.f_type == pseudo_fs[i].magic)
			return say(why, wl, -EINVAL,
				   "a file of %s (a kernel interface, not storage)",
				   pseudo_fs[i].name);
	return 0;
}

int dl_trace_open_target(const char *path, int *fdp, int *created, char *why, size_t wl)
{
	struct stat st, seen;
	char self[64];
	int fd, pfd, ret, fl;

	*fdp = -1;
	*created = 0;
	/* A new file: O_EXCL with O_NOFOLLOW creates nothing through a
	 * symlink and opens nothing that was there. */
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
		  0644);
	if (fd >= 0) {
		*created = 1;
		ret = check_fd(fd, &st, why, wl);
		goto out;
	}
	if (errno != EEXIST)
		return say(why, wl, -errno, "%s", strerror(errno));
	/* It exists: see what it is (through links) before opening it. */
	pfd = open(path, O_PATH | O_CLOEXEC);
	if (pfd < 0)
		return say(why, wl, -errno, "%s", strerror(errno));
	ret = check_fd(pfd, &seen, why, wl);
	if (ret) {
		close(pfd);
		return ret;
	}
	/* Reopen what was checked, not what the name may name by now. */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	fd = open(self, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) /* no /proc: the name, checked again below */
		fd = open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		ret = say(why, wl, -errno, "%s", strerror(errno));
		close(pfd);
		return ret;
	}
	close(pfd);
	ret = check_fd(fd, &st, why, wl);
	if (!ret && (st.st_dev != seen.st_dev || st.st_ino != seen.st_ino))
		ret = say(why, wl, -EAGAIN, "the file was replaced while it was opened");
out:
	if (!ret) {
		/* Regular files do not block; the writer wants plain writes. */
		fl = fcntl(fd, F_GETFL);
		if (fl >= 0)
			fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
		*fdp = fd;
		return 0;
	}
	dl_trace_discard_target(path, fd, *created);
	*created = 0;
	return ret;
}

void dl_trace_discard_target(const char *path, int fd, int created)
{
	struct stat a, b;

	/* Only the file this call created, and only while its name names it. */
	if (created && fd >= 0 && fstat(fd, &a) == 0 && lstat(path, &b) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
		unlink(path);
	if (fd >= 0)
		close(fd);
}
