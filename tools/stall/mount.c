/* The storage side, through the mount's control directory:
 *   .dliofs/stats.json  pacer statistics (read before, during and after a run)
 *   .dliofs/pacer       key=value lines change the storage model live
 *   .dliofs/cache       "drop" | "warm <path inside the mount>"
 * Every write is one write() call: the daemon applies a write as a whole. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stall_i.h"

#define CTL_DIR ".dliofs"

static int ctl_path(const char *mnt, const char *file, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/" CTL_DIR "/%s", mnt, file);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int st_mount_is_dliofs(const char *mnt)
{
	char p[PATH_MAX];
	struct stat st;

	return !ctl_path(mnt, "", p, sizeof(p)) && stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Control files report size 0 and are read until EOF. */
static int slurp(const char *path, char **out, size_t *len)
{
	size_t cap = 16384, n = 0;
	char *buf = malloc(cap);
	int fd, ret = 0;

	if (!buf)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
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
	*out = buf;
	*len = n;
	buf = NULL;
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return ret;
}

int st_mount_stats(const char *mnt, struct st_json *out)
{
	char p[PATH_MAX], *text = NULL;
	size_t len = 0;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = ctl_path(mnt, "stats.json", p, sizeof(p));
	if (!ret)
		ret = slurp(p, &text, &len);
	if (!ret)
		ret = st_json_parse(text, len, out);
	free(text);
	return ret;
}

/* .dliofs/pacer reads back as the YAML dump of the live settings: pick the
 * keys of the "read:" block whose value is a limit. */
void st_mount_pacer_desc(const char *mnt, char *buf, size_t len)
{
	char p[PATH_MAX], *text = NULL, *save = NULL;
	size_t n = 0, off = 0;
	int in_read = 0;

	buf[0] = 0;
	if (ctl_path(mnt, "pacer", p, sizeof(p)) || slurp(p, &text, &n))
		return;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char key[64], val[128];
		int w;

		if (line[0] != ' ') {
			in_read = !strncmp(line, "read:", 5);
			continue;
		}
		if (!in_read || sscanf(line, " %63[^:]: %127[^\n]", key, val) != 2)
			continue;
		if (!strcmp(val, "unlimited") || !strcmp(val, "none") || !strcmp(key, "burst"))
			continue;
		w = snprintf(buf + off, len - off, "%s%s %s", off ? ", " : "", key, val);
		if (w < 0 || (size_t)w >= len - off)
			break;
		off += (size_t)w;
	}
	if (!off)
		snprintf(buf, len, "no limits");
	free(text);
}

int st_mount_write(const char *mnt, const char *file, const char *text)
{
	char p[PATH_MAX];
	size_t len = strlen(text);
	ssize_t n;
	int fd, ret;

	ret = ctl_path(mnt, file, p, sizeof(p));
	if (ret)
		return ret;
	fd = open(p, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, text, len);
	ret = n < 0 ? -errno : (size_t)n != len ? -EIO : 0;
	if (close(fd) && !ret)
		ret = -errno;
	return ret;
}

/* Path of data relative to the mount root ("" for the root itself). */
static int rel_path(const char *mnt, const char *data, char *buf, size_t len)
{
	char rm[PATH_MAX], rd[PATH_MAX];
	size_t n;

	if (!data) {
		buf[0] = 0;
		return 0;
	}
	if (!realpath(mnt, rm) || !realpath(data, rd))
		return -errno;
	n = strlen(rm);
	if (strncmp(rd, rm, n) || (rd[n] && rd[n] != '/'))
		return -EXDEV;
	snprintf(buf, len, "%s", rd[n] ? rd + n + 1 : "");
	return 0;
}

static int drop_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	int fd;

	(void)st;
	(void)ftw;
	if (type != FTW_F)
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		close(fd);
	}
	return 0;
}

int st_mount_drop(const char *mnt, const char *data)
{
	int ret = st_mount_write(mnt, "cache", "drop\n");
	const struct st_jv *pol = NULL;
	struct st_json j;
	int kernel = 1;

	if (st_mount_stats(mnt, &j) == 0) {
		pol = st_json_get(&j, "cache.policy");
		kernel = !pol || !pol->str || !strcmp(pol->str, "kernel");
		st_json_free(&j);
	}
	/* Under the "kernel" policy the kernel's page cache is the cache: drop
	 * it file by file (fadvise needs no privilege, unlike vm.drop_caches).
	 * The emulated policies keep the page cache out of the way already. */
	if (kernel)
		nftw(data ? data : mnt, drop_one, 16, FTW_PHYS | FTW_MOUNT);
	return ret;
}

int st_mount_warm(const char *mnt, const char *data)
{
	char rel[PATH_MAX], cmd[PATH_MAX + 16];
	int ret = rel_path(mnt, data, rel, sizeof(rel));

	if (ret)
		return ret;
	snprintf(cmd, sizeof(cmd), "warm /%s\n", rel);
	return st_mount_write(mnt, "cache", cmd);
}

void st_io_free(struct st_io *io)
{
	st_json_free(&io->before);
	st_json_free(&io->after);
	free(io->samples);
	memset(io, 0, sizeof(*io));
}

int st_io_sample(const char *mnt, struct st_io *io, int64_t now)
{
	struct st_json j;
	int ret = st_mount_stats(mnt, &j);

	if (ret)
		return ret;
	if (io->nsamples == io->capsamples) {
		size_t cap = io->capsamples ? io->capsamples * 2 : 256;
		struct st_io_sample *ns = realloc(io->samples, cap * sizeof(*ns));
		if (!ns) {
			st_json_free(&j);
			return -ENOMEM;
		}
		io->samples = ns;
		io->capsamples = cap;
	}
	io->samples[io->nsamples++] = (struct st_io_sample){
	    .t = now,
	    .bytes = st_json_num(&j, "classes.read.bytes", 0),
	    .ops = st_json_num(&j, "classes.read.ops", 0),
	};
	st_json_free(&j);
	return 0;
}
