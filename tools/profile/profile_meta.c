/* `dliofs profile`: metadata. In a writable directory a probe tree of small
 * files is created (and removed by name afterwards: nothing else is ever
 * deleted), then every file is stat'ed once, opened and closed once, every
 * directory listed once; with --read-only the same is done on what the
 * directory already holds, opening read-only (O_NOATIME where allowed).
 * When the caches can be dropped (root) they are dropped before each pass,
 * so each operation reaches the storage as it does on the mount, where the
 * kernel has nothing cached yet: that is a file's first touch (a real file
 * system reads a block of inodes at once, so many first touches find their
 * inode read already, as they do on the device being measured). The files
 * stat'ed are then stat'ed again without a drop: the cost of a touch once
 * the client has the inode (meta.cached_latency). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dliofs/clock.h"
#include "profile_i.h"

#define FILES_PER_DIR 100
#define MAX_FILES 4000
#define MIN_FILES 200
#define SMALL_FILE 4096
#define MAX_FSYNCS 400

int prof_drop_caches(void)
{
	int fd, ret = 0;

	sync();
	fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, "3\n", 2) != 2)
		ret = -errno;
	close(fd);
	return ret;
}

/* ---- what a directory holds ---- */

struct growing {
	char **v;
	uint64_t *sz;
	size_t n, cap;
};

static int push(struct growing *g, const char *path, uint64_t size, int with_size)
{
	if (g->n == g->cap) {
		size_t cap = g->cap ? 2 * g->cap : 256;
		char **v = realloc(g->v, cap * sizeof(*v));
		uint64_t *sz;

		if (!v)
			return -ENOMEM;
		g->v = v;
		if (with_size) {
			sz = realloc(g->sz, cap * sizeof(*sz));
			if (!sz)
				return -ENOMEM;
			g->sz = sz;
		}
		g->cap = cap;
	}
	g->v[g->n] = strdup(path);
	if (!g->v[g->n])
		return -ENOMEM;
	if (with_size)
		g->sz[g->n] = size;
	g->n++;
	return 0;
}

static int scan(const char *path, unsigned depth, size_t *left, struct growing *files,
		struct growing *dirs, int *truncated)
{
	DIR *d = opendir(path);
	struct dirent *e;
	char sub[PATH_MAX];
	struct stat st;
	int ret = 0;

	if (!d)
		return 0; /* unreadable: measured without it */
	ret = push(dirs, path, 0, 0);
	while (!ret && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    !strncmp(e->d_name, ".dliofs-profile-", 16))
			continue;
		if (!*left) {
			*truncated = 1;
			break;
		}
		--*left;
		if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name) >= sizeof(sub))
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		if (S_ISREG(st.st_mode))
			ret = push(files, sub, (uint64_t)st.st_size, 1);
		else if (S_ISDIR(st.st_mode) && depth < 16)
			ret = scan(sub, depth + 1, left, files, dirs, truncated);
	}
	closedir(d);
	return ret;
}

int prof_scan(const char *dir, size_t max_entries, struct prof_tree *t)
{
	struct growing files = {0}, dirs = {0};
	size_t left = max_entries;
	int ret;

	memset(t, 0, sizeof(*t));
	ret = scan(dir, 0, &left, &files, &dirs, &t->truncated);
	t->files = files.v;
	t->sizes = files.sz;
	t->nfiles = files.n;
	t->dirs = dirs.v;
	t->ndirs = dirs.n;
	if (ret)
		prof_tree_free(t);
	return ret;
}

void prof_tree_free(struct prof_tree *t)
{
	for (size_t i = 0; i < t->nfiles; i++)
		free(t->files[i]);
	for (size_t i = 0; i < t->ndirs; i++)
		free(t->dirs[i]);
	free(t->files);
	free(t->sizes);
	free(t->dirs);
	memset(t, 0, sizeof(*t));
}

/* ---- the probe tree ---- */

static void file_name(char *buf, size_t len, const char *probe, unsigned i)
{
	snprintf(buf, len, "%s/meta/d%02u/f%05u", probe, i / FILES_PER_DIR, i);
}

static void dir_name(char *buf, size_t len, const char *probe, unsigned d)
{
	snprintf(buf, len, "%s/meta/d%02u", probe, d);
}

/* Create files until the time is spent or MAX_FILES; at least MIN_FILES. */
static int create_tree(const char *probe, uint64_t until, struct prof_meta *m, prof_stop_t *stop)
{
	char path[PATH_MAX], block[SMALL_FILE];
	uint64_t t0 = dl_mono_ns();
	int fd;

	memset(block, 0x5a, sizeof(block));
	snprintf(path, sizeof(path), "%s/meta", probe);
	if (mkdir(path, 0700))
		return -errno;
	m->dirs = 0;
	for (m->files = 0; m->files < MAX_FILES && !*stop; m->files++) {
		if (m->files >= MIN_FILES && dl_mono_ns() >= until)
			break;
		if (m->files % FILES_PER_DIR == 0) {
			dir_name(path, sizeof(path), probe, m->files / FILES_PER_DIR);
			if (mkdir(path, 0700))
				return -errno;
			m->dirs++;
		}
		file_name(path, sizeof(path), probe, m->files);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0)
			return -errno;
		if (write(fd, block, sizeof(block)) != (ssize_t)sizeof(block)) {
			int e = errno ? errno : EIO;

			close(fd);
			m->files++; /* created: removed with the others */
			return -e;
		}
		close(fd);
	}
	m->create_ns = dl_mono_ns() - t0;
	return 0;
}

void prof_meta_cleanup(const char *probe, const struct prof_meta *m)
{
	char path[PATH_MAX];

	for (unsigned i = 0; i < m->files; i++) {
		file_name(path, sizeof(path), probe, i);
		unlink(path);
	}
	for (unsigned d = 0; d < m->dirs; d++) {
		dir_name(path, sizeof(path), probe, d);
		rmdir(path);
	}
	snprintf(path, sizeof(path), "%s/fsync", probe);
	unlink(path);
	snprintf(path, sizeof(path), "%s/meta", probe);
	rmdir(path);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* fsync after a 4 KiB write, repeated: what a checkpoint's last step costs. */
static int fsyncs(const char *probe, uint64_t until, struct prof_meta *m, prof_stop_t *stop)
{
	char path[PATH_MAX], block[SMALL_FILE];
	int fd;

	memset(block, 0xa5, sizeof(block));
	snprintf(path, sizeof(path), "%s/fsync", probe);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	m->fsync = malloc(MAX_FSYNCS * sizeof(*m->fsync));
	if (!m->fsync) {
		close(fd);
		return -ENOMEM;
	}
	while (m->nfsync < MAX_FSYNCS && !*stop && (m->nfsync < 5 || dl_mono_ns() < until)) {
		uint64_t a;

		if (pwrite(fd, block, sizeof(block), (off_t)(m->nfsync % 16) * SMALL_FILE) < 0)
			break;
		a = dl_mono_ns();
		if (fsync(fd))
			break;
		m->fsync[m->nfsync++] = dl_mono_ns() - a;
	}
	close(fd);
	qsort(m->fsync, m->nfsync, sizeof(*m->fsync), cmp_u64);
	return 0;
}

enum pass { P_STAT, P_OPEN, P_READDIR };

/* One pass over names[first..n) (every stride-th): the latency of each. */
static int pass(enum pass kind, char **names, size_t n, uint64_t until, uint64_t **out,
		size_t *nout, prof_stop_t *stop)
{
	uint64_t *v = malloc((n ? n : 1) * sizeof(*v));
	struct stat st;
	size_t k = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n && !*stop && (k < 20 || dl_mono_ns() < until); i++) {
		uint64_t a = dl_mono_ns();
		int ok = 1;

		if (kind == P_STAT) {
			ok = lstat(names[i], &st) == 0;
		} else if (kind == P_OPEN) {
			int fd = open(names[i], O_RDONLY | O_NOATIME | O_CLOEXEC | O_NOFOLLOW);

			if (fd < 0 && errno == EPERM) /* O_NOATIME: not our file */
				fd = open(names[i], O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
			ok = fd >= 0;
			if (ok)
				close(fd);
		} else {
			DIR *d = opendir(names[i]);

			ok = d != NULL;
			while (d && readdir(d))
				;
			if (d)
				closedir(d);
		}
		if (ok)
			v[k++] = dl_mono_ns() - a;
	}
	qsort(v, k, sizeof(*v), cmp_u64);
	*out = v;
	*nout = k;
	return 0;
}

/* The names passes go through: the probe tree's, or the directory's. */
static int names_of(const char *probe, const struct prof_tree *tree, struct prof_meta *m,
		    char ***files, size_t *nf, char ***dirs, size_t *nd)
{
	char path[PATH_MAX];

	if (!probe) {
		*files = tree->files;
		*nf = tree->nfiles;
		*dirs = tree->dirs;
		*nd = tree->ndirs;
		m->files = (unsigned)tree->nfiles;
		m->dirs = (unsigned)tree->ndirs;
		return 0;
	}
	*files = calloc(m->files ? m->files : 1, sizeof(char *));
	*dirs = calloc(m->dirs ? m->dirs : 1, sizeof(char *));
	if (!*files || !*dirs)
		return -ENOMEM;
	for (unsigned i = 0; i < m->files; i++) {
		file_name(path, sizeof(path), probe, i);
		if (!((*files)[i] = strdup(path)))
			return -ENOMEM;
	}
	for (unsigned d = 0; d < m->dirs; d++) {
		dir_name(path, sizeof(path), probe, d);
		if (!((*dirs)[d] = strdup(path)))
			return -ENOMEM;
	}
	*nf = m->files;
	*nd = m->dirs;
	return 0;
}

static void names_free(const char *probe, char **files, size_t nf, char **dirs, size_t nd)
{
	if (!probe)
		return;
	for (size_t i = 0; files && i < nf; i++)
		free(files[i]);
	for (size_t i = 0; dirs && i < nd; i++)
		free(dirs[i]);
	free(files);
	free(dirs);
}

/* Reads completed by the block device (its stat file's first field): the
 * whole device's, so other processes' reads count too (said where it is
 * written). -1 without one. */
static int64_t disk_reads(const char *dev)
{
	char path[128];
	unsigned long long n;
	FILE *f;
	int ok;

	if (!dev || !dev[0])
		return -1;
	snprintf(path, sizeof(path), "/sys/block/%.63s/stat", dev);
	f = fopen(path, "r");
	if (!f)
		return -1;
	ok = fscanf(f, "%llu", &n) == 1;
	fclose(f);
	return ok ? (int64_t)n : -1;
}

/* The device's reads since before (disk_reads then): -1 when either count
 * is unknown. */
static int64_t reads_since(const char *dev, int64_t before)
{
	int64_t now = before >= 0 ? disk_reads(dev) : -1;

	return now >= before && before >= 0 ? now - before : -1;
}

/* At most what the keys take (64: a listing of a huge directory reads
 * more; a first approximation); -1 (not measured) as it is. */
static double per_request(int64_t reads, size_t n)
{
	double x;

	if (reads < 0 || !n)
		return -1;
	x = (double)reads / (double)n;
	return x > 64 ? 64 : x;
}

int prof_meta_run(const char *probe, const struct prof_tree *tree, uint64_t time_ns, int drop,
		  const char *blockdev, struct prof_meta *m, prof_stop_t *stop)
{
	uint64_t t0 = dl_mono_ns(), slice;
	int64_t before, on_stat, on_open = -1, on_list = -1;
	char **files = NULL, **dirs = NULL;
	struct stat st;
	size_t nf = 0, nd = 0, half;
	int ret = 0;

	memset(m, 0, sizeof(*m));
	if (probe) {
		/* Creating takes 40% of the time, fsyncs 15%, the passes the rest. */
		ret = create_tree(probe, t0 + time_ns * 2 / 5, m, stop);
		if (!ret)
			ret = fsyncs(probe, dl_mono_ns() + time_ns * 3 / 20, m, stop);
		if (ret)
			return ret;
		sync();
	}
	ret = names_of(probe, tree, m, &files, &nf, &dirs, &nd);
	if (ret)
		goto out;
	/* What a buffered reader of these files sizes its reads by. */
	if (nf && stat(files[0], &st) == 0 && st.st_blksize > 0)
		m->blksize = (uint64_t)st.st_blksize;
	/* Half the files are stat'ed, the other half opened: each name's first
	 * touch since the caches were dropped. */
	half = nf / 2;
	slice = (t0 + time_ns > dl_mono_ns() ? t0 + time_ns - dl_mono_ns() : time_ns / 4) / 3;
	m->cold = drop && prof_drop_caches() == 0;
	m->device_ios = -1;
	m->readdir_ios = -1;
	before = disk_reads(blockdev);
	ret = pass(P_STAT, files, half, dl_mono_ns() + slice, &m->stat, &m->nstat, stop);
	on_stat = reads_since(blockdev, before);
	/* The same names again, nothing dropped: what a stat, open or lookup
	 * costs once the client has the inode (meta.cached_latency). */
	if (!ret)
		ret = pass(P_STAT, files, m->nstat, dl_mono_ns() + slice / 4, &m->stat_cached,
			   &m->nstat_cached, stop);
	if (!ret) {
		if (m->cold)
			prof_drop_caches();
		before = disk_reads(blockdev);
		ret = pass(P_OPEN, files + half, nf - half, dl_mono_ns() + slice, &m->open,
			   &m->nopen, stop);
		on_open = reads_since(blockdev, before);
	}
	/* What a first touch (stat, or open) made the device read: the cold
	 * passes' reads over their requests. */
	if (!ret && m->cold && on_stat >= 0 && on_open >= 0)
		m->device_ios = per_request(on_stat + on_open, m->nstat + m->nopen);
	if (!ret) {
		if (m->cold)
			prof_drop_caches();
		before = disk_reads(blockdev);
		ret = pass(P_READDIR, dirs, nd, dl_mono_ns() + slice, &m->readdir, &m->nreaddir,
			   stop);
		on_list = reads_since(blockdev, before);
	}
	/* A cold listing's: its directory's inode and blocks. */
	if (!ret && m->cold)
		m->readdir_ios = per_request(on_list, m->nreaddir);
out:
	names_free(probe, files, nf, dirs, nd);
	return ret;
}

void prof_meta_free(struct prof_meta *m)
{
	free(m->stat);
	free(m->stat_cached);
	free(m->open);
	free(m->readdir);
	free(m->fsync);
	m->stat = m->stat_cached = m->open = m->readdir = m->fsync = NULL;
}
