/* The control client's other transport: an S3 endpoint's control socket
 * (`dliofs s3 serve --control SOCKET`, tools/s3/ctl.c has the protocol),
 * so that `dliofs stat | set | cache | trace SOCKET` work on an endpoint
 * as on a mount. On nothing but libc, as ctl_client.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "dliofs/ctl_client.h"

#define REPLY_MAX (64u << 20)

int dl_ctl_sock_is(const char *target)
{
	struct stat st;

	return stat(target, &st) == 0 && S_ISSOCK(st.st_mode);
}

static int dial(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

static int send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The whole reply, NUL-terminated. */
static int recv_all(int fd, char **out, size_t *len)
{
	size_t cap = 16384, n = 0;
	char *buf = malloc(cap);

	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t r;

		if (n + 1 == cap) {
			char *nb = cap >= REPLY_MAX ? NULL : realloc(buf, cap * 2);

			if (!nb) {
				free(buf);
				return -EFBIG;
			}
			buf = nb;
			cap *= 2;
		}
		r = recv(fd, buf + n, cap - 1 - n, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = -errno;

			free(buf);
			return e;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	buf[n] = 0;
	*out = buf;
	*len = n;
	return 0;
}

/* One exchange: the request's head and body; the reply's body into *out
 * (malloc'd) on "ok", the reason into why on "error". 0 or -errno. */
static int exchange(const char *sock, const char *head, const char *body, size_t blen,
		    char **out, size_t *olen, char *why, size_t wl)
{
	char *rep = NULL, *nl;
	size_t rlen = 0, want;
	int fd = dial(sock), ret, err;

	if (fd < 0) {
		snprintf(why, wl, "%s: %s", sock, strerror(-fd));
		return fd;
	}
	ret = send_all(fd, head, strlen(head));
	if (!ret && blen)
		ret = send_all(fd, body, blen);
	if (!ret)
		ret = recv_all(fd, &rep, &rlen);
	close(fd);
	if (ret) {
		snprintf(why, wl, "%s: %s", sock, strerror(-ret));
		return ret;
	}
	nl = memchr(rep, '\n', rlen);
	if (nl && sscanf(rep, "error %d", &err) == 1 && err > 0) {
		snprintf(why, wl, "refused, nothing applied: %s", nl + 1);
		free(rep);
		return -err;
	}
	if (!nl || sscanf(rep, "ok %zu", &want) != 1 || want != rlen - (size_t)(nl + 1 - rep)) {
		snprintf(why, wl, "%s: not a dliofs s3 control socket (or a reply cut short)", sock);
		free(rep);
		return -EPROTO;
	}
	if (out) {
		memmove(rep, nl + 1, want + 1);
		*out = rep;
		*olen = want;
	} else {
		free(rep);
	}
	return 0;
}

int dl_ctl_sock_read(const char *sock, enum dl_ctl_file f, char **text, size_t *len, char *why,
		     size_t wl)
{
	char head[128], w[512];

	if ((unsigned)f >= DL_CTL__COUNT || f == DL_CTL_DIR)
		return -EINVAL;
	snprintf(head, sizeof(head), "read %s\n", dl_ctl_names[f]);
	return exchange(sock, head, NULL, 0, text, len, why ? why : w, why ? wl : sizeof(w));
}

int dl_ctl_sock_command(const char *sock, enum dl_ctl_file f, const char *text, size_t len,
			char *why, size_t wl)
{
	char head[128], w[512];

	if ((unsigned)f >= DL_CTL__COUNT || f == DL_CTL_DIR)
		return -EINVAL;
	snprintf(head, sizeof(head), "write %s %zu\n", dl_ctl_names[f], len);
	return exchange(sock, head, text, len, NULL, NULL, why ? why : w, why ? wl : sizeof(w));
}
