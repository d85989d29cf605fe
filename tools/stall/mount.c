/* The storage side, through the mount's control directory with the
 * control-file client (dliofs/ctl_client.h), or through an S3 endpoint's
 * control socket (`dliofs s3 serve --control SOCKET`) in its place:
 *   stats.json  pacer statistics (read before, during and after a run)
 *   pacer       key=value lines change the storage model live
 *   cache       "drop" | "warm <path inside the mount>"
 * Every command is one transaction: applied whole, or refused with the
 * daemon's reason and nothing applied. */
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

int st_mount_is_dliofs(const char *mnt)
{
	return dl_ctl_is_mount(mnt) || dl_ctl_sock_is(mnt);
}

int st_mount_stats(const char *mnt, struct dl_jdoc *out)
{
	char *text = NULL;
	size_t len = 0;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = dl_ctl_read(mnt, DL_CTL_STATS, &text, &len);
	if (!ret)
		ret = dl_jdoc_parse(text, len, DL_JDOC_PARTIAL, out);
	free(text);
	return ret;
}

/* .dliofs/pacer reads back as the YAML dump of the live settings: pick the
 * keys of the "read:" block whose value is a limit. */
void st_mount_pacer_desc(const char *mnt, char *buf, size_t len)
{
	char *text = NULL, *save = NULL;
	size_t n = 0, off = 0;
	int in_read = 0;

	buf[0] = 0;
	if (dl_ctl_read(mnt, DL_CTL_PACER, &text, &n))
		return;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char key[64], val[128];
		int w;

		if (line[0] != ' ') {
			in_read = !strncmp(line, "read:", 5);
			continue;
		}
		/* A device model is described in comment lines: not keys. */
		if (line[strspn(line, " ")] == '#')
			continue;
		if (!in_read || sscanf(line, " %63[^:]: %127[^\n]", key, val) != 2)
			continue;
		if (!strcmp(val, "unlimited") || !strcmp(val, "none") || !strcmp(val, "{}") ||
		    !strcmp(key, "burst"))
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
	int ret = dl_ctl_cache_drop(mnt, "dlio-stall: cache drop on %s failed", mnt);
	const struct dl_jval *pol = NULL;
	struct dl_jdoc j;
	int kernel = 1;

	/* An endpoint's clients read over HTTP: no page cache of its files on
	 * this machine to walk, its own (emulated) cache is all there is. */
	if (dl_ctl_sock_is(mnt)) {
		if (data)
			fprintf(stderr, "dlio-stall: %s is an endpoint's control socket: "
					"--data %s ignored, its whole cache dropped\n",
				mnt, data);
		return ret;
	}
	if (st_mount_stats(mnt, &j) == 0) {
		pol = dl_jdoc_get(&j, "cache.policy");
		kernel = !pol || !pol->str || !strcmp(pol->str, "kernel");
		dl_jdoc_free(&j);
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
	char rel[PATH_MAX];
	int ret;

	/* The endpoint refuses it (objects are not paths to warm): say what
	 * the prep run reads instead of a refusal. */
	if (dl_ctl_sock_is(mnt)) {
		fprintf(stderr, "dlio-stall: %s is an endpoint's control socket: its cache "
				"is not warmed, the prep run reads every object with the storage "
				"model off\n",
			mnt);
		return 0;
	}
	ret = rel_path(mnt, data, rel, sizeof(rel));
	if (ret) {
		fprintf(stderr, "dlio-stall: cache warm on %s failed: %s: %s\n", mnt,
			data ? data : mnt, strerror(-ret));
		return ret;
	}
	return dl_ctl_cache_warm(mnt, rel, "dlio-stall: cache warm on %s failed", mnt);
}

void st_io_free(struct st_io *io)
{
	dl_jdoc_free(&io->before);
	dl_jdoc_free(&io->after);
	free(io->samples);
	memset(io, 0, sizeof(*io));
}

int st_io_sample(const char *mnt, struct st_io *io, int64_t now)
{
	struct dl_jdoc j;
	int ret = st_mount_stats(mnt, &j);

	if (ret)
		return ret;
	if (io->nsamples == io->capsamples) {
		size_t cap = io->capsamples ? io->capsamples * 2 : 256;
		struct st_io_sample *ns = realloc(io->samples, cap * sizeof(*ns));
		if (!ns) {
			dl_jdoc_free(&j);
			return -ENOMEM;
		}
		io->samples = ns;
		io->capsamples = cap;
	}
	io->samples[io->nsamples++] = (struct st_io_sample){
	    .t = now,
	    .bytes = dl_jdoc_num(&j, "classes.read.bytes", 0),
	    .ops = dl_jdoc_num(&j, "classes.read.ops", 0),
	};
	dl_jdoc_free(&j);
	return 0;
}
