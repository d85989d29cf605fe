/* A backing directory as a bucket: a key names a file under the directory,
 * its slashes folders. Keys are resolved one component at a time with
 * openat() relative to the folder before, never following a symlink, and
 * "", ".", ".." and the endpoint's own names (.dliofs*) are refused, so
 * no key reaches outside the directory. A key ending in '/' is a folder
 * (the "directory marker" s3fs and consoles create). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "s3_i.h"

#define ETAG_XATTR "user.dliofs.etag"

int dl_s3_store_open(struct dl_s3_bucket *b)
{
	int fd;

	if (!b->bk->path[0])
		return -EINVAL;
	fd = open(b->bk->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	b->dirfd = fd;
	return 0;
}

int dl_s3_store_name_ok(const char *p, size_t n)
{
	if (n == 0 || n > 255)
		return 0;
	if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
		return 0;
	if (n >= 7 && memcmp(p, ".dliofs", 7) == 0)
		return 0;	/* the endpoint's temporary files and uploads */
	return memchr(p, 0, n) == NULL;
}

int dl_s3_store_key_ok(const char *key, int *dir)
{
	size_t len = strlen(key);
	const char *p = key;

	if (len == 0 || len >= DL_S3_KEY_MAX || key[0] == '/')
		return -EINVAL;
	*dir = key[len - 1] == '/';
	while (*p) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);

		if (!dl_s3_store_name_ok(p, n))
			return -EINVAL;
		p += n;
		if (*p == '/')
			p++;
	}
	return 0;
}

/* Open (or, with `create`, make) the folder holding the key's last
 * component; *leaf is that component (without a folder's trailing '/'). */
int dl_s3_store_parent(const struct dl_s3_bucket *b, const char *key, int create, char *leaf,
		       size_t leaflen)
{
	const char *p = key;
	int fd, dir;

	if (dl_s3_store_key_ok(key, &dir))
		return -EINVAL;
	fd = openat(b->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);
		char name[256];
		int next;

		memcpy(name, p, n);
		name[n] = 0;
		if (!slash || slash[1] == 0) {
			if (n >= leaflen) {
				close(fd);
				return -ENAMETOOLONG;
			}
			memcpy(leaf, name, n + 1);
			return fd;
		}
		next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0 && errno == ENOENT && create) {
			if (mkdirat(fd, name, 0755) && errno != EEXIST) {
				next = -errno;
				close(fd);
				return next;
			}
			next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		if (next < 0) {
			next = errno == ENOTDIR || errno == ELOOP ? -ENOTDIR : -errno;
			close(fd);
			return next;
		}
		close(fd);
		fd = next;
		p = slash + 1;
	}
}

int dl_s3_store_open_obj(const struct dl_s3_bucket *b, const char *key, struct stat *st)
{
	char leaf[256];
	int pfd, fd, dir;

	if (dl_s3_store_key_ok(key, &dir))
		return -ENOENT;
	pfd = dl_s3_store_parent(b, key, 0, leaf, sizeof(leaf));
	if (pfd < 0)
		return -ENOENT;
	fd = openat(pfd, leaf, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK |
				       (dir ? O_DIRECTORY : 0));
	close(pfd);
	if (fd < 0)
		return -ENOENT;
	if (fstat(fd, st) || (dir ? !S_ISDIR(st->st_mode) : !S_ISREG(st->st_mode))) {
		close(fd);
		return -ENOENT;
	}
	if (dir)
		st->st_size = 0;	/* a folder reads as an empty marker object */
	return fd;
}

/* The tag a PUT computed (MD5, or MD5 of MD5s-N) is kept in an xattr with
 * the size and mtime it was made for; a file changed since, or one whose
 * filesystem has no user xattrs, gets a hash of its identity instead. */
void dl_s3_store_etag(int fd, const struct stat *st, char *buf, size_t len)
{
	char x[160], want[64];
	ssize_t n = fgetxattr(fd, ETAG_XATTR, x, sizeof(x) - 1);
	unsigned long long h = 1469598103934665603ULL;
	unsigned long long v[4] = {(unsigned long long)st->st_ino, (unsigned long long)st->st_size,
				   (unsigned long long)st->st_mtim.tv_sec,
				   (unsigned long long)st->st_mtim.tv_nsec};
	char *sp;

	if (n > 0) {
		x[n] = 0;
		snprintf(want, sizeof(want), " %lld.%09ld %lld", (long long)st->st_mtim.tv_sec,
			 st->st_mtim.tv_nsec, (long long)st->st_size);
		sp = strchr(x, ' ');
		if (sp && strcmp(sp, want) == 0 && (size_t)(sp - x) + 3 <= len) {
			snprintf(buf, len, "\"%.*s\"", (int)(sp - x), x);
			return;
		}
	}
	for (int i = 0; i < 4; i++)
		for (int k = 0; k < 8; k++)
			h = (h ^ ((v[i] >> (8 * k)) & 0xff)) * 1099511628211ULL;
	snprintf(buf, len, "\"%016llx%016llx\"", h, h * 0x9e3779b97f4a7c15ULL);
}

void dl_s3_store_set_etag(int fd, const char *etag)
{
	struct stat st;
	char x[160];

	if (fstat(fd, &st))
		return;
	if (etag[0] == '"')
		etag++;
	snprintf(x, sizeof(x), "%.*s %lld.%09ld %lld", (int)strcspn(etag, "\""), etag,
		 (long long)st.st_mtim.tv_sec,
		 st.st_mtim.tv_nsec, (long long)st.st_size);
	(void)fsetxattr(fd, ETAG_XATTR, x, strlen(x), 0);	/* best effort: see above */
}

int dl_s3_store_tmp(int dirfd, char *name, size_t len)
{
	unsigned char r[8];
	int fd;

	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return -EIO;
	snprintf(name, len, ".dliofs.tmp.%02x%02x%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2], r[3],
		 r[4], r[5], r[6], r[7]);
	fd = openat(dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	return fd < 0 ? -errno : fd;
}

#define MARKER_XATTR "user.dliofs.marker"

int dl_s3_store_mkdir(int pfd, const char *leaf)
{
	int fd;

	if (mkdirat(pfd, leaf, 0755) && errno != EEXIST)
		return -errno;
	fd = openat(pfd, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOTDIR || errno == ELOOP ? -EEXIST : -errno;
	(void)fsetxattr(fd, MARKER_XATTR, "1", 1, 0);	/* best effort: see below */
	close(fd);
	return 0;
}

/* S3 has no folders: the ones a PUT made for a key's slashes go with
 * their last object. A folder made as a marker ("dir/") stays, as its
 * marker object would (where user xattrs are not kept, it goes too). */
static void prune_parents(const struct dl_s3_bucket *b, const char *key)
{
	char dir[DL_S3_KEY_MAX], leaf[256], x[4];
	size_t len = strlen(key);

	if (len >= sizeof(dir))
		return;
	memcpy(dir, key, len + 1);
	if (len && dir[len - 1] == '/')
		dir[--len] = 0;
	for (;;) {
		char *slash = strrchr(dir, '/');
		int pfd, fd, keep;

		if (!slash)
			return;
		slash[1] = 0;	/* "a/b/" : the folder holding the last one */
		pfd = dl_s3_store_parent(b, dir, 0, leaf, sizeof(leaf));
		if (pfd < 0)
			return;
		fd = openat(pfd, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		keep = fd < 0 || fgetxattr(fd, MARKER_XATTR, x, sizeof(x)) > 0;
		if (fd >= 0)
			close(fd);
		if (keep || unlinkat(pfd, leaf, AT_REMOVEDIR)) {
			close(pfd);
			return;
		}
		close(pfd);
		*slash = 0;
	}
}

int dl_s3_store_delete(const struct dl_s3_bucket *b, const char *key)
{
	char leaf[256];
	int pfd, dir, ret = 0;
	struct stat st;

	if (dl_s3_store_key_ok(key, &dir))
		return 0;	/* no such object: deleting it succeeds */
	pfd = dl_s3_store_parent(b, key, 0, leaf, sizeof(leaf));
	if (pfd < 0)
		return 0;
	if (fstatat(pfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (dir && S_ISDIR(st.st_mode)) {
			/* A folder with objects under it stays: only its marker goes. */
			if (unlinkat(pfd, leaf, AT_REMOVEDIR) && errno != ENOTEMPTY && errno != EEXIST)
				ret = -errno;
		} else if (!dir && S_ISREG(st.st_mode)) {
			if (unlinkat(pfd, leaf, 0) && errno != ENOENT)
				ret = -errno;
		}
	}
	close(pfd);
	if (!ret)
		prune_parents(b, key);
	return ret;
}
