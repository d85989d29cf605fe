/* A command said once (dliofs/ctl_client.h): dl_ctl_command, and on
 * refusal the daemon's reason on stderr after the caller's words, so that
 * no caller keeps a reason buffer of its own. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "dliofs/ctl_client.h"

/* A path and the daemon's one-line reason (ctl_client.c reads at most
 * 2 KiB of it). */
#define WHY_MAX (PATH_MAX + 2048 + 64)

static int vsend(const char *mnt, enum dl_ctl_file f, const char *text, size_t len, const char *fmt,
		 va_list ap)
{
	char why[WHY_MAX];
	int ret = dl_ctl_command(mnt, f, text, len, why, sizeof(why));

	if (ret) {
		vfprintf(stderr, fmt, ap);
		fprintf(stderr, ": %s\n", why);
	}
	return ret;
}

int dl_ctl_send(const char *mnt, enum dl_ctl_file f, const char *text, size_t len, const char *fmt,
		...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = vsend(mnt, f, text, len, fmt, ap);
	va_end(ap);
	return ret;
}

int dl_ctl_cache_drop(const char *mnt, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = vsend(mnt, DL_CTL_CACHE, "drop\n", 5, fmt, ap);
	va_end(ap);
	return ret;
}

int dl_ctl_cache_warm(const char *mnt, const char *rel, const char *fmt, ...)
{
	char text[PATH_MAX + 16];
	va_list ap;
	int n, ret;

	while (*rel == '/')
		rel++;
	n = snprintf(text, sizeof(text), "warm /%s\n", rel);
	va_start(ap, fmt);
	if (n < 0 || (size_t)n >= sizeof(text) || strchr(rel, '\n')) {
		vfprintf(stderr, fmt, ap);
		fprintf(stderr, ": %s\n",
			n < 0 || (size_t)n >= sizeof(text) ? "path too long"
							   : "a path with a newline");
		ret = -EINVAL;
	} else {
		ret = vsend(mnt, DL_CTL_CACHE, text, (size_t)n, fmt, ap);
	}
	va_end(ap);
	return ret;
}
