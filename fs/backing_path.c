/* Where things are in a backing directory, asked of the real file system
 * rather than of path text:
 *
 * - bk_dir_depth: is a directory the daemon holds still below the backing
 *   directory (a client may hold one that was moved out since), and how
 *   deep? Walks ".." up to the backing directory's (dev, ino).
 * - bk_node_parent: the same for something that is not a directory, through
 *   the directory the kernel names as its parent, checked to hold it.
 * - bk_target_inside: would a symlink's text, followed from its directory,
 *   stay inside? Symlinks met on the way are followed as the kernel follows
 *   them, so a chain of links that each look harmless is judged as a whole.
 * - bk_tree_links_inside: the same for every symlink below a directory that
 *   a rename would move.
 *
 * A final symlink is not followed (a link to a link is as safe as that
 * link, and the kernel asks us about it on its own), and ".." may only
 * leave a directory that exists: after a name that is missing, or not a
 * directory, what the ".." would climb from is decided later by whoever
 * creates that name, so it is refused now. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backing_i.h"

/* Levels of ".." walked looking for the backing directory. */
#define BK_MAX_DEPTH 4096
/* Symlinks followed in one resolution: the kernel's own limit (MAXSYMLINKS). */
#define BK_MAX_LINKS 40
/* Entries looked at below a directory that a rename moves. */
#define BK_MAX_SCAN 100000
#define BK_MAX_SCAN_DEPTH 256

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

int bk_node_parent(const struct bk_root *r, const struct bk_node *n, int nfd, int *pfd,
		   int *depth)
{
	char proc[64], path[PATH_MAX], *slash;
	struct stat st;
	ssize_t len;
	int fd, ret;

	bk_proc_path(nfd, proc, sizeof(proc));
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

/* ---- following a link's text ---- */

struct walk {
	const struct bk_root *r;
	const struct bk_moved *mv;	/* a rename to see through, or NULL */
	int cur;			/* the directory reached (owned unless == start) */
	int start;
	int depth;			/* of cur below the backing directory */
	struct stat st;			/* of cur */
	int known;			/* cur is a real directory (not past a missing name) */
	unsigned links;
	char *rest;			/* components still to walk ("a/b/../c") */
};

static void set_cur(struct walk *w, int fd, const struct stat *st)
{
	if (w->cur != w->start)
		close(w->cur);
	w->cur = fd;
	w->st = *st;
}

/* rest = text + "/" + rest */
static int prepend(struct walk *w, const char *text)
{
	size_t a = strlen(text), b = strlen(w->rest);
	char *n = malloc(a + b + 2);

	if (!n)
		return -ENOMEM;
	memcpy(n, text, a);
	n[a] = '/';
	memcpy(n + a + 1, w->rest, b + 1);
	free(w->rest);
	w->rest = n;
	return 0;
}

static int step_up(struct walk *w)
{
	struct stat st;
	int fd;

	if (!w->known || w->depth == 0)
		return -EACCES;
	if (w->mv && same(&w->st, w->mv->dev, w->mv->ino)) {
		/* Out of the moved directory: into where it goes. */
		fd = fcntl(w->mv->to, F_DUPFD_CLOEXEC, 0);
	} else {
		fd = openat(w->cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
	}
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		close(fd);
		return -errno;
	}
	set_cur(w, fd, &st);
	w->depth--;
	return 0;
}

/* One name: into a directory, through a link, or past the known. */
static int step_down(struct walk *w, const char *name, int last)
{
	char target[PATH_MAX];
	struct stat st;
	ssize_t len;
	int fd, ret;

	if (!w->known) {
		w->depth++;
		return 0;
	}
	if (w->mv && !strcmp(name, w->mv->to_name) && same(&w->st, w->mv->to_dev, w->mv->to_ino)) {
		fd = fcntl(w->mv->fd, F_DUPFD_CLOEXEC, 0);	/* where the rename puts it */
	} else if (w->mv && !strcmp(name, w->mv->from_name) &&
		   same(&w->st, w->mv->from_dev, w->mv->from_ino)) {
		fd = -1;	/* it will not be there any more */
		errno = ENOENT;
	} else {
		fd = openat(w->cur, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd < 0 || fstat(fd, &st)) {
		/* Missing (or not ours to look at): what follows is text only. */
		if (fd >= 0)
			close(fd);
		w->known = 0;
		w->depth++;
		return 0;
	}
	if (S_ISDIR(st.st_mode)) {
		set_cur(w, fd, &st);
		w->depth++;
		return 0;
	}
	if (!S_ISLNK(st.st_mode) || last) {
		/* A file, or the final link: no ".." may follow it. */
		close(fd);
		w->known = 0;
		w->depth++;
		return 0;
	}
	if (++w->links > BK_MAX_LINKS) {
		close(fd);
		return -EACCES;	/* the kernel would say ELOOP */
	}
	len = readlinkat(fd, "", target, sizeof(target) - 1);
	ret = len < 0 ? -errno : 0;
	close(fd);
	if (ret)
		return ret;
	target[len] = 0;
	if (target[0] == '/')
		return -EACCES;
	/* The link's text goes on from the link's own directory (cur). */
	return prepend(w, target);
}

int bk_target_inside(const struct bk_root *r, int dirfd, int depth, const char *target,
		     const struct bk_moved *mv)
{
	struct walk w = {.r = r, .mv = mv, .cur = dirfd, .start = dirfd, .depth = depth,
			 .known = 1};
	int ret = 0;

	if (!target[0] || target[0] == '/')
		return -EACCES;
	if (fstat(dirfd, &w.st))
		return -errno;
	w.rest = strdup(target);
	if (!w.rest)
		return -ENOMEM;
	while (!ret && w.rest[0]) {
		size_t n = strcspn(w.rest, "/");
		char comp[NAME_MAX + 1];
		/* A trailing slash makes the kernel follow a final link too. */
		int last = w.rest[n] == 0;

		if (n > NAME_MAX) {
			ret = -ENAMETOOLONG;
			break;
		}
		memcpy(comp, w.rest, n);
		comp[n] = 0;
		memmove(w.rest, w.rest + n + !last, strlen(w.rest + n + !last) + 1);
		if (!comp[0] || !strcmp(comp, "."))
			continue;
		if (!strcmp(comp, ".."))
			ret = step_up(&w);
		else
			ret = step_down(&w, comp, last);
	}
	if (w.cur != w.start)
		close(w.cur);
	free(w.rest);
	return ret == -ENOMEM ? ret : ret ? -EACCES : 0;
}

/* ---- every link below a directory a rename moves ---- */

struct scan {
	const struct bk_root *r;
	const struct bk_moved *mv;
	unsigned long seen;
	char bad[PATH_MAX];	/* the link that would lead out, relative to the moved dir */
};

static int scan_dir(struct scan *s, int dirfd, int depth, unsigned level, const char *rel)
{
	char target[PATH_MAX], sub[PATH_MAX];
	struct dirent *de;
	DIR *dp;
	int fd, ret = 0;

	if (level > BK_MAX_SCAN_DEPTH)
		return -E2BIG;
	fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	dp = fdopendir(fd);
	if (!dp) {
		ret = -errno;
		close(fd);
		return ret;
	}
	while (!ret && (errno = 0, de = readdir(dp))) {
		ssize_t len;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (++s->seen > BK_MAX_SCAN) {
			ret = -E2BIG;
			break;
		}
		snprintf(sub, sizeof(sub), "%s%s%s", rel, rel[0] ? "/" : "", de->d_name);
		if (de->d_type == DT_LNK || de->d_type == DT_UNKNOWN) {
			len = readlinkat(dirfd, de->d_name, target, sizeof(target) - 1);
			if (len >= 0) {
				target[len] = 0;
				ret = bk_target_inside(s->r, dirfd, depth, target, s->mv);
				if (ret == -EACCES)
					snprintf(s->bad, sizeof(s->bad), "%s", sub);
				continue;
			}
			if (de->d_type == DT_LNK)
				continue;	/* gone meanwhile */
		}
		if (de->d_type == DT_DIR || de->d_type == DT_UNKNOWN) {
			int sfd = openat(dirfd, de->d_name,
					 O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (sfd < 0)
				continue;	/* not a directory after all, or gone */
			ret = scan_dir(s, sfd, depth + 1, level + 1, sub);
			close(sfd);
		}
	}
	if (!ret && errno)
		ret = -errno;
	closedir(dp);
	return ret;
}

int bk_tree_links_inside(const struct bk_root *r, const struct bk_moved *mv, char *bad,
			 size_t badlen)
{
	struct scan s = {.r = r, .mv = mv};
	int ret = scan_dir(&s, mv->fd, mv->to_depth + 1, 0, "");

	if (ret == -EACCES)
		snprintf(bad, badlen, "%s", s.bad);
	else if (ret == -E2BIG)
		snprintf(bad, badlen, "(more than %d entries or %d levels to check)", BK_MAX_SCAN,
			 BK_MAX_SCAN_DEPTH);
	return ret;
}
