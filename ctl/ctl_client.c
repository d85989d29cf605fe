/* The control-file client (dliofs/ctl_client.h): on nothing but libc, so
 * that the tools link it without the daemon. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dliofs/ctl_client.h"

const char *const dl_ctl_names[DL_CTL__COUNT] = {
	[DL_CTL_DIR] = DL_CTL_DIRNAME,
	[DL_CTL_STATS] = "stats.json",
	[DL_CTL_CONFIG] = "config.yaml",
	[DL_CTL_PACER] = "pacer",
	[DL_CTL_CACHE] = "cache",
	[DL_CTL_TRACE] = "trace",
};

int dl_ctl_path(const char *mnt, enum dl_ctl_file f, char *buf, size_t len)
{
	int n;

	if ((unsigned)f >= DL_CTL__COUNT)
		return -EINVAL;
	n = f == DL_CTL_DIR ? snprintf(buf, len, "%s/%s", mnt, DL_CTL_DIRNAME)
			    : snprintf(buf, len, "%s/%s/%s", mnt, DL_CTL_DIRNAME, dl_ctl_names[f]);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int dl_ctl_is_mount(const char *mnt)
{
	char p[PATH_MAX];
	struct stat st;

	return !dl_ctl_path(mnt, DL_CTL_DIR, p, sizeof(p)) && stat(p, &st) == 0 &&
	       S_ISDIR(st.st_mode);
}

int dl_ctl_read(const char *mnt, enum dl_ctl_file f, char **text, size_t *len)
{
	char p[PATH_MAX], *buf = NULL;
	size_t cap = 16384, n = 0;
	int fd = -1, ret;

	if (dl_ctl_sock_is(mnt))
		return dl_ctl_sock_read(mnt, f, text, len, NULL, 0);
	ret = dl_ctl_path(mnt, f, p, sizeof(p));
	if (ret)
		return ret;
	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	for (;;) {
		ssize_t r;

		if (cap - n < 4096) {
			char *nb = realloc(buf, cap *= 2);

			if (!nb) {
				ret = -ENOMEM;
				goto out;
			}
			buf = nb;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			ret = -errno;
			goto out;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	buf[n] = 0;
	*text = buf;
	*len = n;
	buf = NULL;
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return ret;
}

static void say(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void say(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!why || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
}

/* After a refusal, the same open file reads as the daemon's reason. */
static void refusal(int fd, const char *path, int err, char *why, size_t whylen)
{
	char reason[2048];
	ssize_t n = pread(fd, reason, sizeof(reason) - 1, 0);

	reason[n > 0 ? n : 0] = 0;
	if (!strncmp(reason, "error: ", 7)) {
		reason[strcspn(reason, "\n")] = 0;
		say(why, whylen, "refused, nothing applied: %s", reason + 7);
	} else {
		say(why, whylen, "%s: %s", path, strerror(-err));
	}
}

int dl_ctl_command(const char *mnt, enum dl_ctl_file f, const char *text, size_t len, char *why,
		   size_t whylen)
{
	char path[PATH_MAX];
	size_t done = 0;
	int fd, ret;

	say(why, whylen, "%s", "");
	if (dl_ctl_sock_is(mnt))
		return dl_ctl_sock_command(mnt, f, text, len, why, whylen);
	ret = dl_ctl_path(mnt, f, path, sizeof(path));
	if (ret) {
		say(why, whylen, "%s/%s: %s", mnt, DL_CTL_DIRNAME, strerror(-ret));
		return ret;
	}
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		say(why, whylen, "%s: %s", path, strerror(errno));
		return ret;
	}
	while (done < len) {
		ssize_t n = write(fd, text + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = n < 0 ? -errno : -EIO;
			break;
		}
		/* A short count: the daemon refused a piece (a command over 64 MiB). */
		if ((size_t)n < len - done) {
			ret = -EINVAL;
			break;
		}
		done += (size_t)n;
	}
	if (!ret && fsync(fd))
		ret = -errno;
	if (ret)
		refusal(fd, path, ret, why, whylen);
	if (close(fd) && !ret) {
		ret = -errno;
		say(why, whylen, "%s: %s", path, strerror(errno));
	}
	return ret;
}
