/* `dliofs stat | set | cache`: talk to a running mount through `.dliofs/`. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "control.h"
#include "dliofs/pacer.h"

static int ctl_path(const char *mnt, const char *file, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%s/%s", mnt, DL_CTL_DIRNAME, file);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	if (access(buf, F_OK) != 0) {
		fprintf(stderr, "dliofs: %s is not a dliofs mount (no %s/%s)\n", mnt, DL_CTL_DIRNAME,
			file);
		return -ENOENT;
	}
	return 0;
}

static int read_file(const char *path, char **out, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n = 0, r;

	if (!f)
		return -errno;
	do {
		if (n + 4096 > cap) {
			char *nb = realloc(buf, cap = cap * 2 + 8192);
			if (!nb) {
				free(buf);
				fclose(f);
				return -ENOMEM;
			}
			buf = nb;
		}
		r = fread(buf + n, 1, cap - n - 1, f);
		n += r;
	} while (r > 0);
	fclose(f);
	buf[n] = 0;
	*out = buf;
	*len = n;
	return 0;
}

/* One write of a whole command to a control file: the daemon applies it
 * all or nothing and answers the write with its errno. */
static int write_ctl(const char *path, const char *text, size_t len)
{
	int fd = open(path, O_WRONLY | O_TRUNC), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, text, len) != (ssize_t)len)
		ret = -errno;
	close(fd);
	return ret;
}

/* ---- a small JSON walker that prints "path = value" lines ---- */
struct jw {
	const char *p;
	FILE *out;
};

static void skip_ws(struct jw *j)
{
	while (isspace((unsigned char)*j->p))
		j->p++;
}

static int json_value(struct jw *j, char *path, size_t plen);

static int json_string(struct jw *j, char *buf, size_t len)
{
	size_t n = 0;

	if (*j->p != '"')
		return -EINVAL;
	j->p++;
	while (*j->p && *j->p != '"') {
		if (*j->p == '\\' && j->p[1])
			j->p++;
		if (n + 1 < len)
			buf[n++] = *j->p;
		j->p++;
	}
	if (*j->p != '"')
		return -EINVAL;
	j->p++;
	buf[n] = 0;
	return 0;
}

static int json_value(struct jw *j, char *path, size_t plen)
{
	size_t base = strlen(path);
	char key[256];
	unsigned idx = 0;

	skip_ws(j);
	if (*j->p == '{' || *j->p == '[') {
		char close = *j->p == '{' ? '}' : ']';
		int obj = close == '}';
		j->p++;
		skip_ws(j);
		if (*j->p == close) {
			j->p++;
			return 0;
		}
		for (;;) {
			skip_ws(j);
			if (obj) {
				if (json_string(j, key, sizeof(key)))
					return -EINVAL;
				skip_ws(j);
				if (*j->p++ != ':')
					return -EINVAL;
			} else {
				snprintf(key, sizeof(key), "%u", idx++);
			}
			snprintf(path + base, plen - base, "%s%s", base ? "." : "", key);
			if (json_value(j, path, plen))
				return -EINVAL;
			path[base] = 0;
			skip_ws(j);
			if (*j->p == ',') {
				j->p++;
				continue;
			}
			if (*j->p == close) {
				j->p++;
				return 0;
			}
			return -EINVAL;
		}
	}
	if (*j->p == '"') {
		char val[512];
		if (json_string(j, val, sizeof(val)))
			return -EINVAL;
		fprintf(j->out, "%-48s %s\n", path, val);
		return 0;
	}
	const char *start = j->p;
	while (*j->p && *j->p != ',' && *j->p != '}' && *j->p != ']' &&
	       !isspace((unsigned char)*j->p))
		j->p++;
	if (j->p == start)
		return -EINVAL;
	fprintf(j->out, "%-48s %.*s\n", path, (int)(j->p - start), start);
	return 0;
}

int dl_cli_stat(const char *mnt, int watch, double interval, int raw, int reset)
{
	char path[4096], jpath[1024];
	char *buf = NULL;
	size_t len = 0;
	int ret;

	ret = ctl_path(mnt, "stats.json", path, sizeof(path));
	if (ret)
		return 1;
	if (reset) {
		ret = write_ctl(path, "reset\n", 6);
		if (ret)
			fprintf(stderr, "dliofs stat --reset: %s\n", strerror(-ret));
		return ret ? 1 : 0;
	}
	for (;;) {
		ret = read_file(path, &buf, &len);
		if (ret) {
			fprintf(stderr, "dliofs stat: %s: %s\n", path, strerror(-ret));
			return 1;
		}
		if (watch && isatty(1))
			fputs("\033[H\033[2J", stdout);
		if (raw) {
			fwrite(buf, 1, len, stdout);
		} else {
			struct jw j = {.p = buf, .out = stdout};
			jpath[0] = 0;
			if (json_value(&j, jpath, sizeof(jpath))) {
				fprintf(stderr, "dliofs stat: malformed stats.json\n");
				free(buf);
				return 1;
			}
		}
		free(buf);
		fflush(stdout);
		if (!watch)
			return 0;
		usleep((useconds_t)(interval * 1e6));
		if (!isatty(1))
			puts("");
	}
}

int dl_cli_set(const char *mnt, int npairs, char **pairs)
{
	char path[4096], err[256];
	struct dl_pacer_cfg probe;
	size_t total = 0;
	char *text;
	int ret, bad = 0;

	if (ctl_path(mnt, "pacer", path, sizeof(path)))
		return 1;
	/* Check syntax here, where the user sees the message; the daemon checks
	 * again against its live settings and refuses the whole write if needed. */
	dl_pacer_cfg_init(&probe);
	for (int i = 0; i < npairs; i++) {
		char *eq = strchr(pairs[i], '=');
		total += strlen(pairs[i]) + 1;
		if (!eq) {
			fprintf(stderr, "dliofs set: '%s': expected key=value\n", pairs[i]);
			bad = 1;
			continue;
		}
		*eq = 0;
		if (dl_pacer_cfg_set(&probe, pairs[i], eq + 1, err, sizeof(err))) {
			fprintf(stderr, "dliofs set: %s\n", err);
			bad = 1;
		}
		*eq = '=';
	}
	dl_pacer_cfg_free(&probe);
	if (bad)
		return 2;
	text = calloc(1, total + 1);
	if (!text)
		return 1;
	for (int i = 0; i < npairs; i++) {
		strcat(text, pairs[i]);
		strcat(text, "\n");
	}
	ret = write_ctl(path, text, strlen(text));
	free(text);
	if (ret) {
		fprintf(stderr, "dliofs set: %s: %s (the daemon's log says which key)\n", path,
			strerror(-ret));
		return 1;
	}
	return 0;
}

int dl_cli_cache(const char *mnt, const char *cmd, const char *arg)
{
	char path[4096], text[4200];
	size_t mlen = strlen(mnt);
	int ret, n;

	if (ctl_path(mnt, "cache", path, sizeof(path)))
		return 1;
	if (!strcmp(cmd, "drop")) {
		n = snprintf(text, sizeof(text), "drop\n");
	} else if (!strcmp(cmd, "warm") && arg) {
		/* Accept a path under the mountpoint or one relative to its root. */
		if (!strncmp(arg, mnt, mlen) && (arg[mlen] == '/' || !arg[mlen]))
			arg += mlen;
		while (*arg == '/')
			arg++;
		n = snprintf(text, sizeof(text), "warm %s\n", arg);
	} else {
		fprintf(stderr, "usage: dliofs cache drop MOUNT | dliofs cache warm MOUNT PATH\n");
		return 2;
	}
	ret = write_ctl(path, text, (size_t)n);
	if (ret)
		fprintf(stderr, "dliofs cache %s: %s\n", cmd, strerror(-ret));
	return ret ? 1 : 0;
}

int dl_cli_trace(const char *mnt, const char *cmd, const char *file, const char *ops)
{
	char path[4096], text[8400], abs[4096];
	int ret, n;

	if (ctl_path(mnt, "trace", path, sizeof(path)))
		return 1;
	if (!strcmp(cmd, "stop")) {
		n = snprintf(text, sizeof(text), "stop\n");
	} else if (!strcmp(cmd, "start") && file) {
		/* The daemon runs in /: hand it an absolute path. */
		if (file[0] != '/') {
			if (!getcwd(abs, sizeof(abs)))
				return 1;
			n = snprintf(text, sizeof(text), "start %s/%s %s\n", abs, file, ops ? ops : "all");
		} else {
			n = snprintf(text, sizeof(text), "start %s %s\n", file, ops ? ops : "all");
		}
	} else {
		fprintf(stderr, "usage: dliofs trace start MOUNT FILE [OPS] | dliofs trace stop MOUNT\n");
		return 2;
	}
	ret = write_ctl(path, text, (size_t)n);
	if (ret)
		fprintf(stderr, "dliofs trace %s: %s\n", cmd, strerror(-ret));
	return ret ? 1 : 0;
}
