/* The endpoint's control files on a local socket (`dliofs s3 serve ...
 * --control PATH`): `dliofs stat | set | cache | trace PATH` then work as
 * they do on a mount (ctl/ctl_sock.c is their side). A Unix socket rather
 * than the S3 port: it is reachable only from this machine, and only by
 * whoever may open it (it is made owner-only), as a mount's control files
 * are; the S3 port may be open to a network and its clients must not
 * change the storage model.
 *
 * One request per connection, text:
 *   "read NAME\n"                 -> "ok LEN\n" and LEN bytes
 *   "write NAME LEN\n" LEN bytes  -> "ok 0\n", or "error ERRNO\n" and the reason
 * NAME is a control file's name (stats.json, pacer, cache, trace). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "obs.h"
#include "s3_i.h"

#define CTL_MAX_WRITE (1u << 20)

struct dl_s3_ctl {
	struct dl_s3 *s;
	int fd;
	pthread_t th;
	char path[108];
};

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w <= 0)
			return -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int read_all(int fd, char *p, size_t n)
{
	while (n) {
		ssize_t r = recv(fd, p, n, 0);

		if (r <= 0)
			return -EIO;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/* The request's first line (at most len - 1 bytes). */
static int read_line(int fd, char *buf, size_t len)
{
	size_t n = 0;

	while (n + 1 < len) {
		if (recv(fd, buf + n, 1, 0) != 1)
			return -EIO;
		if (buf[n] == '\n') {
			buf[n] = 0;
			return 0;
		}
		n++;
	}
	return -E2BIG;
}

static int file_of(const char *name, enum dl_ctl_file *f)
{
	for (int i = 1; i < DL_CTL__COUNT; i++) {
		if (!strcmp(name, dl_ctl_names[i])) {
			*f = (enum dl_ctl_file)i;
			return 0;
		}
	}
	return -ENOENT;
}

static void serve_one(struct dl_s3_ctl *c, int fd)
{
	char line[256], name[64], why[1024] = "", *buf = NULL, head[64];
	unsigned long len = 0;
	enum dl_ctl_file f;
	size_t out = 0;
	int ret;

	if (read_line(fd, line, sizeof(line)))
		return;
	if (sscanf(line, "read %63s", name) == 1 && strncmp(line, "read ", 5) == 0) {
		ret = file_of(name, &f);
		if (!ret)
			ret = dl_s3_obs_read(c->s, f, &buf, &out, why, sizeof(why));
	} else if (sscanf(line, "write %63s %lu", name, &len) == 2) {
		ret = file_of(name, &f);
		if (!ret && len > CTL_MAX_WRITE) {
			snprintf(why, sizeof(why), "more than %u bytes", CTL_MAX_WRITE);
			ret = -EFBIG;
		}
		if (!ret && !(buf = malloc(len + 1)))
			ret = -ENOMEM;
		if (!ret && read_all(fd, buf, len))
			goto out;
		if (!ret)
			ret = dl_s3_obs_write(c->s, f, buf, len, why, sizeof(why));
		free(buf);
		buf = NULL;
		out = 0;
	} else {
		snprintf(why, sizeof(why), "expected 'read NAME' or 'write NAME LEN'");
		ret = -EINVAL;
	}
	if (ret == -ENOENT && !why[0])
		snprintf(why, sizeof(why), "no control file '%s'", name);
	if (ret) {
		snprintf(head, sizeof(head), "error %d\n", -ret);
		if (!write_all(fd, head, strlen(head)) && why[0])
			write_all(fd, why, strlen(why));
	} else {
		snprintf(head, sizeof(head), "ok %zu\n", out);
		if (!write_all(fd, head, strlen(head)))
			write_all(fd, buf, out);
	}
out:
	free(buf);
}

static void *run(void *arg)
{
	struct dl_s3_ctl *c = arg;

	for (;;) {
		struct timeval tv = {.tv_sec = 5};
		int fd = accept4(c->fd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return NULL; /* shut down (dl_s3_ctl_stop) */
		}
		/* A client that stops talking is dropped, not waited for. */
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		serve_one(c, fd);
		close(fd);
	}
}

/* A socket left at path by a server that was killed: nobody answers. */
static int stale(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat st;
	int fd, ret;

	if (lstat(path, &st) || !S_ISSOCK(st.st_mode))
		return 0;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	ret = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) && errno == ECONNREFUSED;
	close(fd);
	return ret;
}

int dl_s3_ctl_start(struct dl_s3 *s, const char *path, struct dl_s3_ctl **out, char *why,
		    size_t wl)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct dl_s3_ctl *c;
	mode_t old;
	int ret;

	why[0] = 0;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(why, wl, "%s: a socket path is at most %zu bytes", path,
			 sizeof(sa.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	if (!(c = calloc(1, sizeof(*c))))
		return -ENOMEM;
	c->s = s;
	snprintf(c->path, sizeof(c->path), "%s", path);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (stale(path))
		unlink(path);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		ret = -errno;
		goto fail;
	}
	old = umask(077); /* owner-only from the start: no window with other rights */
	ret = bind(c->fd, (struct sockaddr *)&sa, sizeof(sa)) ? -errno : 0;
	umask(old);
	if (ret) {
		snprintf(why, wl, "%s: %s%s", path, strerror(-ret),
			 ret == -EADDRINUSE ? " (another server's control socket, or a file)" : "");
		goto fail;
	}
	ret = listen(c->fd, 16) ? -errno : -pthread_create(&c->th, NULL, run, c);
	if (ret) {
		unlink(path);
		goto fail;
	}
	*out = c;
	return 0;
fail:
	if (!why[0])
		snprintf(why, wl, "%s: %s", path, strerror(-ret));
	if (c->fd >= 0)
		close(c->fd);
	free(c);
	return ret;
}

void dl_s3_ctl_stop(struct dl_s3_ctl *c)
{
	if (!c)
		return;
	shutdown(c->fd, SHUT_RDWR); /* wakes accept() */
	pthread_join(c->th, NULL);
	close(c->fd);
	unlink(c->path);
	free(c);
}
