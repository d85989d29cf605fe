/* A sink's journal (`journal: FILE`): its table (directories; files with
 * their sizes, modes, owners and times) kept in a file outside the mount,
 * so that a checkpoint written before the daemon stops (kill -9, a crash, an
 * unmount) is there after the next mount: the same names, the same sizes,
 * and the same bytes read back (they are a function of the seed, the sink
 * and the path). One line a change, appended:
 *   D MODE UID GID PATH                       a directory
 *   F MODE UID GID SIZE MTIME_S MTIME_NS PATH  a file as it is now
 *   R PATH                                    removed
 *   M FLAGS OLD NEW                           renamed (FLAGS: renameat2's)
 * PATH is below the sink, '/'-separated, with bytes <= ' ', '%' and DEL as
 * %XX. A file's line is written when it is created, closed (flush),
 * truncated or fsynced; fsync and fsyncdir then fdatasync the journal, so
 * what an acknowledged fsync covered survives a crash of the machine too,
 * and anything written to the journal survives the daemon's death. It is
 * replayed at mount and rewritten as a snapshot (one line an entry) then
 * and whenever it has grown past twice the entries plus 4096 lines: its size
 * stays bounded by the sink's entries. All under s->lock. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log_i.h"
#include "sink_i.h"

#define REC_MAX (3 * 4096 * 2 + 128)

static size_t esc_path(const char *p, char *out, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	for (; *p && o + 4 < len; p++) {
		unsigned char ch = (unsigned char)*p;

		if (ch <= ' ' || ch == '%' || ch == 0x7f) {
			out[o++] = '%';
			out[o++] = hex[ch >> 4];
			out[o++] = hex[ch & 15];
		} else {
			out[o++] = (char)ch;
		}
	}
	out[o] = '\0';
	return o;
}

static int unhex(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* In place; -EINVAL for a malformed escape or an empty path. */
static int unesc_path(char *p)
{
	char *o = p;

	if (!*p)
		return -EINVAL;
	for (; *p; p++) {
		if (*p == '%') {
			int a = unhex(p[1]), b = a < 0 ? -1 : unhex(p[2]);

			if (b < 0)
				return -EINVAL;
			*o++ = (char)(a << 4 | b);
			p += 2;
		} else {
			*o++ = *p;
		}
	}
	*o = '\0';
	return 0;
}

static void jfail(struct dl_sink *s, int err)
{
	char esc[512];

	if (!s->jerr)
		fprintf(stderr, "dliofs: sink %s: journal %s: %s; fsync on the sink fails from now on\n",
			s->at, dl_log_esc(s->jpath, esc, sizeof(esc)), strerror(err));
	s->jerr = err;
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t k = write(fd, buf, len);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf += k;
		len -= (size_t)k;
	}
	return 0;
}

static void put(struct dl_sink *s, const char *rec, size_t len);

/* The line describing n (path: its escaped path). */
static size_t node_line(const struct sk_node *n, const char *path, char *rec, size_t len)
{
	int k;

	if (S_ISDIR(n->mode))
		k = snprintf(rec, len, "D %o %u %u %s\n", (unsigned)n->mode & 07777,
			     (unsigned)n->uid, (unsigned)n->gid, path);
	else
		k = snprintf(rec, len, "F %o %u %u %" PRIu64 " %lld %ld %s\n",
			     (unsigned)n->mode & 07777, (unsigned)n->uid, (unsigned)n->gid, n->size,
			     (long long)n->mtime.tv_sec, n->mtime.tv_nsec, path);
	return k < 0 || (size_t)k >= len ? 0 : (size_t)k;
}

void sk_journal_node(struct dl_sink *s, struct sk_node *n)
{
	char path[4096], esc[3 * 4096 + 8], rec[REC_MAX];
	size_t len;

	n->dirty = 0;
	if (s->jfd < 0 || sk_path_locked(s, n, path, sizeof(path)))
		return;
	esc_path(path, esc, sizeof(esc));
	len = node_line(n, esc, rec, sizeof(rec));
	if (len)
		put(s, rec, len);
}

/* The escaped path of name in dir; 0, or -ENOENT when dir is unlinked. */
static int child_path(struct dl_sink *s, const struct sk_node *dir, const char *name, char *esc,
		      size_t len)
{
	char path[4096];
	size_t o;

	if (sk_path_locked(s, dir, path, sizeof(path)))
		return -ENOENT;
	o = strlen(path);
	if (o + 1 + strlen(name) + 1 > sizeof(path))
		return -ENAMETOOLONG;
	snprintf(path + o, sizeof(path) - o, "%s%s", o ? "/" : "", name);
	esc_path(path, esc, len);
	return 0;
}

void sk_journal_remove(struct dl_sink *s, const struct sk_node *dir, const char *name)
{
	char esc[3 * 4096 + 8], rec[REC_MAX];
	int k;

	if (s->jfd < 0 || child_path(s, dir, name, esc, sizeof(esc)))
		return;
	k = snprintf(rec, sizeof(rec), "R %s\n", esc);
	if (k > 0 && (size_t)k < sizeof(rec))
		put(s, rec, (size_t)k);
}

void sk_journal_rename(struct dl_sink *s, const struct sk_node *d, const char *name,
		       const struct sk_node *nd, const char *newname, unsigned flags)
{
	char a[3 * 4096 + 8], b[3 * 4096 + 8], rec[2 * REC_MAX];
	int k;

	if (s->jfd < 0 || child_path(s, d, name, a, sizeof(a)) ||
	    child_path(s, nd, newname, b, sizeof(b)))
		return;
	k = snprintf(rec, sizeof(rec), "M %u %s %s\n", flags, a, b);
	if (k > 0 && (size_t)k < sizeof(rec))
		put(s, rec, (size_t)k);
}

int sk_journal_sync_fd(struct dl_sink *s)
{
	int fd;

	if (s->jfd < 0)
		return -ENOENT;
	if (s->jerr)
		return -EIO;
	fd = fcntl(s->jfd, F_DUPFD_CLOEXEC, 0);
	return fd < 0 ? -EIO : fd;
}

int sk_journal_sync(struct dl_sink *s, int fd)
{
	int ret = 0;

	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return -EIO;
	if (fdatasync(fd)) {
		ret = errno;
		pthread_mutex_lock(&s->lock);
		jfail(s, ret);
		pthread_mutex_unlock(&s->lock);
		ret = -EIO;
	}
	close(fd);
	return ret;
}

/* ---- the snapshot ---- */

static int snap_node(struct dl_sink *s, int fd, const struct sk_node *n, char *path, size_t o)
{
	char esc[3 * 4096 + 8], rec[REC_MAX];
	size_t len;
	int ret;

	for (size_t i = 0; i < n->nkids; i++) {
		const struct sk_node *k = n->kids[i];
		size_t kl = strlen(k->name);

		if (o + 1 + kl + 1 > 4096)
			continue; /* deeper than a path can name: not kept */
		snprintf(path + o, 4096 - o, "%s%s", o ? "/" : "", k->name);
		esc_path(path, esc, sizeof(esc));
		len = node_line(k, esc, rec, sizeof(rec));
		if (len && (ret = write_all(fd, rec, len)))
			return ret;
		s->jlines++;
		if (S_ISDIR(k->mode) && (ret = snap_node(s, fd, k, path, o + (o ? 1 : 0) + kl)))
			return ret;
		path[o] = '\0';
	}
	return 0;
}

/* Rewrite the journal as one line an entry: to FILE.tmp, fsynced, renamed
 * over FILE, its directory fsynced; the journal is then appended to. */
static int compact(struct dl_sink *s)
{
	char tmp[4200], path[4096] = "", dir[4096], *slash;
	int fd, dfd, ret;

	snprintf(tmp, sizeof(tmp), "%s.tmp", s->jpath);
	/* A new file, never one planted there (a link to another file would
	 * be truncated): what was there is removed first, then O_EXCL. */
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	s->jlines = 0;
	ret = snap_node(s, fd, &s->root, path, 0);
	if (!ret && fsync(fd))
		ret = -errno;
	close(fd);
	if (!ret && rename(tmp, s->jpath))
		ret = -errno;
	if (ret) {
		unlink(tmp);
		return ret;
	}
	snprintf(dir, sizeof(dir), "%s", s->jpath);
	slash = strrchr(dir, '/');
	*(slash == dir ? slash + 1 : slash) = '\0';
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	fd = open(s->jpath, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (s->jfd >= 0)
		close(s->jfd);
	s->jfd = fd;
	return 0;
}

static void put(struct dl_sink *s, const char *rec, size_t len)
{
	int ret;

	if (s->jerr)
		return;
	ret = write_all(s->jfd, rec, len);
	if (ret) {
		jfail(s, -ret);
		return;
	}
	if (++s->jlines > 2 * (uint64_t)s->by_id.count + 4096 && (ret = compact(s)))
		jfail(s, -ret);
}

/* ---- replay ---- */

/* The directory holding path's last component (made, 0755, where missing:
 * its own line may have been lost); *name points at that component. */
static int parent_of(struct dl_sink *s, char *path, struct sk_node **dir, char **name)
{
	struct fuse_ctx root_ctx = {0};
	struct sk_node *d = &s->root, *k;
	char *p = path, *slash;
	int ret;

	while ((slash = strchr(p, '/'))) {
		*slash = '\0';
		if (!*p || !strcmp(p, ".") || !strcmp(p, ".."))
			return -EINVAL;
		k = sk_find_name(s, d, p);
		if (!k && (ret = sk_add(s, d, p, S_IFDIR | 0755, &root_ctx, &k)))
			return ret;
		if (!S_ISDIR(k->mode))
			return -ENOTDIR;
		*slash = '/';
		d = k;
		p = slash + 1;
	}
	if (!*p || !strcmp(p, ".") || !strcmp(p, ".."))
		return -EINVAL;
	*dir = d;
	*name = p;
	return 0;
}

static int replay_node(struct dl_sink *s, char *line, int dir)
{
	unsigned mode, uid, gid;
	unsigned long long size = 0;
	long long sec = 0;
	long nsec = 0;
	int pos = 0, ret;
	struct sk_node *d, *n;
	struct fuse_ctx c = {0};
	char *name;

	if (dir ? sscanf(line, "%o %u %u %n", &mode, &uid, &gid, &pos) < 3
		: sscanf(line, "%o %u %u %llu %lld %ld %n", &mode, &uid, &gid, &size, &sec, &nsec,
			 &pos) < 6)
		return -EINVAL;
	if (!pos || unesc_path(line + pos) || mode > 07777 || nsec < 0 || nsec >= 1000000000L)
		return -EINVAL;
	ret = parent_of(s, line + pos, &d, &name);
	if (ret)
		return ret;
	n = sk_find_name(s, d, name);
	if (n && !S_ISDIR(n->mode) != !dir)
		return -EEXIST;
	c.uid = uid;
	c.gid = gid;
	if (!n && (ret = sk_add(s, d, name, (dir ? S_IFDIR : S_IFREG) | mode, &c, &n)))
		return ret;
	n->mode = (n->mode & S_IFMT) | mode;
	n->uid = uid;
	n->gid = gid;
	if (!dir) {
		n->size = size;
		n->mtime.tv_sec = (time_t)sec;
		n->mtime.tv_nsec = nsec;
		n->ctime = n->atime = n->mtime;
	}
	return 0;
}

static int replay_line(struct dl_sink *s, char *line)
{
	struct sk_node *d, *nd, *n;
	char *name, *newname, *b;
	unsigned flags;
	int pos = 0, ret;

	if (line[0] && line[1] != ' ')
		return -EINVAL;
	switch (line[0]) {
	case 'D':
	case 'F':
		return replay_node(s, line + 2, line[0] == 'D');
	case 'R':
		if (unesc_path(line + 2))
			return -EINVAL;
		ret = parent_of(s, line + 2, &d, &name);
		if (ret)
			return ret;
		n = sk_find_name(s, d, name);
		return n ? sk_remove_locked(s, d, name, S_ISDIR(n->mode)) : 0;
	case 'M':
		if (sscanf(line + 2, "%u %n", &flags, &pos) < 1 || !pos)
			return -EINVAL;
		b = strchr(line + 2 + pos, ' ');
		if (!b)
			return -EINVAL;
		*b++ = '\0';
		if (unesc_path(line + 2 + pos) || unesc_path(b))
			return -EINVAL;
		ret = parent_of(s, line + 2 + pos, &d, &name);
		if (!ret)
			ret = parent_of(s, b, &nd, &newname);
		return ret ? ret : sk_rename_locked(s, d, name, nd, newname, flags);
	}
	return -EINVAL;
}

int sk_journal_open(struct dl_sink *s, const char *path, const char *mnt_real)
{
	char dir[4096], *slash, *real, *line = NULL, esc[512];
	size_t cap = 0, len = strlen(mnt_real ? mnt_real : "");
	unsigned long lineno = 0, bad = 0, applied = 0;
	ssize_t k;
	FILE *f;
	int fd, ret;

	s->jfd = -1;
	/* Outside the mount: the daemon must never write through itself. */
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	*(slash == dir ? slash + 1 : slash) = '\0';
	real = realpath(dir, NULL);
	if (!real) {
		ret = -errno;
		fprintf(stderr, "dliofs: sink %s: journal %s: %s\n", s->at,
			dl_log_esc(path, esc, sizeof(esc)), strerror(errno));
		return ret;
	}
	if (len && !strncmp(real, mnt_real, len) && (real[len] == '/' || !real[len])) {
		fprintf(stderr, "dliofs: sink %s: journal %s is inside the mount %s; it must be "
				"outside it\n",
			s->at, dl_log_esc(path, esc, sizeof(esc)), mnt_real);
		free(real);
		return -EINVAL;
	}
	free(real);
	s->jpath = strdup(path);
	if (!s->jpath)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
	if (fd < 0) {
		ret = -errno;
		fprintf(stderr, "dliofs: sink %s: journal %s: %s\n", s->at,
			dl_log_esc(path, esc, sizeof(esc)), strerror(errno));
		return ret;
	}
	{
		struct stat st;

		if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
			close(fd);
			fprintf(stderr,
				"dliofs: sink %s: journal %s is not a regular file of this daemon's "
				"user\n",
				s->at, dl_log_esc(path, esc, sizeof(esc)));
			return -EINVAL;
		}
	}
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	while ((k = getline(&line, &cap, f)) > 0) {
		lineno++;
		if (line[k - 1] != '\n') {
			bad++; /* the last line, cut short when the daemon died */
			break;
		}
		line[k - 1] = '\0';
		if (replay_line(s, line))
			bad++;
		else
			applied++;
	}
	free(line);
	fclose(f);
	if (bad)
		fprintf(stderr, "dliofs: sink %s: journal %s: %lu of %lu lines not applied "
				"(cut short or not understood)\n",
			s->at, dl_log_esc(path, esc, sizeof(esc)), bad, lineno);
	if (applied)
		fprintf(stderr, "dliofs: sink %s: %zu entries restored from journal %s\n", s->at,
			s->by_id.count, dl_log_esc(path, esc, sizeof(esc)));
	ret = compact(s);
	if (ret)
		fprintf(stderr, "dliofs: sink %s: journal %s: cannot rewrite it: %s\n", s->at,
			dl_log_esc(path, esc, sizeof(esc)), strerror(-ret));
	return ret;
}

void sk_journal_close(struct dl_sink *s)
{
	if (s->jfd >= 0)
		close(s->jfd);
	s->jfd = -1;
	free(s->jpath);
	s->jpath = NULL;
}
