/* Where things are in a backing directory, asked of the real file system
 * rather than of path text:
 *
 * - bk_dir_depth: is a directory the daemon holds still below the backing
 *   directory (a client may hold one that was moved out since), and how
 *   deep? Walks ".." up to the backing directory's (dev, ino).
 * - bk_node_parent: the same for something that is not a directory, through
 *   the directory the kernel names as its parent, checked to hold it. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "backing_i.h"

/* Levels of ".." walked looking for the backing directory. */
#define BK_MAX_DEPTH 4096

static int same(const struct stat *st, dev_t dev, ino_t ino)
{
	return st->st_dev == dev && st->st_ino == ino;
}

int bk_dir_depth(const struct bk_root *r, int dirfd, int *depth)
{
	struct stat st, up;
	int cur = dirfd, next, d = 0, ret;

	if (fstat(cur, &st))
		return -errno;
	for (;;) {
		if (same(&st, r->top.dev, r->top.ino)) {
			*depth = d;
			ret = 0;
			break;
		}
		if (!S_ISDIR(st.st_mode)) {
			ret = -ENOTDIR;
			break;
		}
		next = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (next < 0) {
			ret = -errno;
			break;
		}
		if (fstat(next, &up)) {
			ret = -errno;
			close(next);
			break;
		}
		if (cur != dirfd)
			close(cur);
		cur = next;
		/* ".." of the file system's root is itself: we have left. */
		if ((up.st_dev == st.st_dev && up.st_ino == st.st_ino) || ++d > BK_MAX_DEPTH) {
			ret = -EACCES;
			break;
		}
		st = up;
	}
	if (cur != dirfd)
		close(cur);
	return ret;
}

int bk_node_parent(const struct bk_root *r, const struct bk_node *n, int *pfd, int *depth)
{
	char proc[64], path[PATH_MAX], *slash;
	struct stat st;
	ssize_t len;
	int fd, ret;

	bk_proc_path(n->fd, proc, sizeof(proc));
	len = readlink(proc, path, sizeof(path) - 1);
	if (len < 0)
		return -errno;
	if (len == 0 || (size_t)len >= sizeof(path) - 1)
		return -ENAMETOOLONG;
	path[len] = 0;
	slash = strrchr(path, '/');
	if (path[0] != '/' || !slash || !slash[1])
		return -EACCES;	/* not a path we can tell (another namespace, deleted) */
	*slash = 0;
	fd = open(slash == path ? "/" : path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESTALE : -errno;
	/* The text came from the kernel but the walk above is by path: make sure
	 * the directory found is below ours and holds this very inode. */
	ret = bk_dir_depth(r, fd, depth);
	if (!ret && (fstatat(fd, slash + 1, &st, AT_SYMLINK_NOFOLLOW) || !same(&st, n->dev, n->ino)))
		ret = -ESTALE;	/* removed or renamed meanwhile */
	if (ret) {
		close(fd);
		return ret;
	}
	*pfd = fd;
	return 0;
}
