/* FUSE operations on real backing directories: what they share, and the
 * lookups and attributes. Names are changed in backing_names.c, open files
 * and directories are served in backing_files.c.
 *
 * Every name is resolved with *at() calls relative to the parent's O_PATH
 * descriptor and never through a symlink (O_NOFOLLOW / AT_SYMLINK_NOFOLLOW),
 * so nothing outside the backing directory can be reached. A directory (or
 * file) the kernel still holds may have been moved out of it meanwhile:
 * lookups, opens and every change of a name first check that it is still
 * below (backing_path.c); reads and writes of an open file do not. Symlinks
 * a client makes, moves or links are followed in full (chains included) and
 * refused when they would lead out. The work (syscall) is done before the
 * reply is handed to the pacer, which only delays the answer: an
 * acknowledged write is in the file, an acknowledged fsync has reached the
 * disk. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "backing_i.h"
#include "log_i.h"

int bk_node_of(struct dl_fs *fs, fuse_ino_t ino, struct bk_root **r, struct bk_node **n)
{
	*r = bk_root_of(fs, ino);
	if (!*r || (*r)->sink)
		return -ESTALE;
	return bk_node_get(*r, bk_id(ino), n);
}

/* Say once per node that it was found outside (the log is for people). */
void bk_moved_out(struct bk_root *root, struct bk_node *n, const char *what)
{
	if (atomic_exchange(&n->moved_out, 1))
		return;
	fprintf(stderr,
		"dliofs: backing %s: a %s the mount served was moved out of the backing "
		"directory; no longer served (EACCES)\n",
		bk_name(root), what);
}

/* Is directory p still below the backing directory? Its depth if so. */
int bk_dir_ok(struct bk_root *root, struct bk_node *p, int *depth)
{
	int ret, fd;

	*depth = 0;
	if (p == &root->top)
		return 0;
	fd = bk_node_fd(root, p);
	if (fd < 0)
		return fd;
	ret = bk_dir_depth(root, fd, depth);
	close(fd);
	if (ret == -EACCES)
		bk_moved_out(root, p, "directory");
	return ret;
}

/* The same for any node (a file through the directory holding it). */
int bk_node_ok(struct bk_root *root, struct bk_node *n)
{
	int depth, pfd, ret, fd;

	if (S_ISDIR(n->type))
		return bk_dir_ok(root, n, &depth);
	fd = bk_node_fd(root, n);
	if (fd < 0)
		return fd;
	ret = bk_node_parent(root, n, fd, &pfd, &depth);
	close(fd);
	if (ret == -EACCES)
		bk_moved_out(root, n, "file");
	if (!ret)
		close(pfd);
	return ret;
}

/* Refuse (and say why) a symlink text that would lead out when followed
 * from directory dirfd at depth. what: "symlink NAME" or "moving NAME". */
int bk_link_ok(struct bk_root *root, int dirfd, int depth, const char *target, const char *verb,
	       const char *name)
{
	char en[DL_LOG_ESC_MAX], et[DL_LOG_ESC_MAX];
	int ret = bk_target_inside(root, dirfd, depth, target, NULL);

	if (ret == -EACCES)
		fprintf(stderr,
			"dliofs: backing %s: %s %s -> '%s' would lead out of the backing "
			"directory; refused (EACCES)\n",
			bk_name(root), verb, dl_log_esc(name, en, sizeof(en)),
			dl_log_esc(target, et, sizeof(et)));
	return ret;
}

/* fd (O_PATH, consumed; -errno: passed on) becomes a referenced node and an
 * entry for it. */
int bk_entry_of(struct bk_root *r, int fd, struct fuse_entry_param *e)
{
	struct bk_node *n;
	struct stat st;
	int ret;

	if (fd < 0) {
		bk_fd_error(r, -fd, "looking up a name");
		return fd;
	}
	if (fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW)) {
		ret = -errno;
		close(fd);
		return ret;
	}
	ret = bk_node_ref(r, fd, &st, &n);
	if (ret)
		return ret;
	memset(e, 0, sizeof(*e));
	e->ino = bk_ino(r, n->id);
	e->generation = 1;
	e->attr = st;
	if (n == &r->top)
		e->attr.st_ino = e->ino;
	e->attr_timeout = BK_TIMEOUT;
	e->entry_timeout = BK_TIMEOUT;
	return 0;
}

int bk_lookup_at(struct bk_root *r, struct bk_node *p, const char *name,
		 struct fuse_entry_param *e)
{
	int pfd = bk_node_fd(r, p), fd;

	if (pfd < 0)
		return pfd;
	fd = openat(pfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
		/* Give back half of the cache and try once more. */
		bk_fds_relieve(r);
		fd = openat(pfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd < 0)
		fd = -errno;
	close(pfd);
	return bk_entry_of(r, fd, e);
}

/* The kernel never saw the entry: give its lookup back. */
static void abort_entry(struct dl_reply *r)
{
	bk_node_forget((struct bk_root *)(uintptr_t)r->fi.fh, bk_id(r->e.ino), 1);
}

void bk_finish_entry(struct dl_fs *fs, struct dl_reply *r, struct bk_root *root, int ret)
{
	if (!ret && r->e.ino) {
		r->fi.fh = (uint64_t)(uintptr_t)root;
		r->on_abort = abort_entry;
	}
	bk_finish(fs, r, ret);
}

static void bk_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct dl_fs *fs = bk_fs_of(req);
	struct dl_reply *r = dl_reply_begin(req, DL_R_ENTRY, DL_OP_META, DL_TOP_LOOKUP, parent);
	struct bk_root *root;
	struct bk_node *p;
	int ret, depth;

	if (!r)
		return;
	ret = bk_parent_of(fs, parent, NULL, 0, 0, &root, &p);
	if (!ret)
		ret = bk_dir_ok(root, p, &depth);
	if (!ret)
		ret = bk_name_ok(name) ? bk_lookup_at(root, p, name, &r->e) : -EINVAL;
	if (ret == -ENOENT) {
		/* A miss: cached only where nothing can create the name through us. */
		memset(&r->e, 0, sizeof(r->e));
		r->e.entry_timeout = root->writable ? 0 : BK_TIMEOUT;
		ret = 0;
	}
	bk_finish_entry(fs, r, root, ret);
}

static int node_stat(struct bk_root *root, struct bk_node *n, struct stat *st)
{
	int fd = bk_node_fd(root, n), ret = 0;

	if (fd < 0)
		return fd;
	if (fstatat(fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW))
		ret = -errno;
	close(fd);
	return ret;
}

static int bk_stat(struct dl_fs *fs, fuse_ino_t ino, struct stat *st)
{
	struct bk_root *root;
	struct bk_node *n;
	int ret = bk_node_of(fs, ino, &root, &n);

	if (!ret)
		ret = node_stat(root, n, st);
	if (!ret && n == &root->top)
		st->st_ino = ino;
	return ret;
}

static void bk_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dl_fs *fs = bk_fs_of(req);
	struct dl_reply *r = dl_reply_begin(req, DL_R_ATTR, DL_OP_META, DL_TOP_GETATTR, ino);

	(void)fi;
	if (!r)
		return;
	r->attr_timeout = BK_TIMEOUT;
	bk_finish(fs, r, bk_stat(fs, ino, &r->st));
}

static int set_times(int nfd, struct bk_node *n, struct bk_file *f, const struct stat *a,
		     int to_set)
{
	struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_nsec = UTIME_OMIT } };
	char proc[64];

	if (to_set & FUSE_SET_ATTR_ATIME_NOW)
		ts[0].tv_nsec = UTIME_NOW;
	else if (to_set & FUSE_SET_ATTR_ATIME)
		ts[0] = a->st_atim;
	if (to_set & FUSE_SET_ATTR_MTIME_NOW)
		ts[1].tv_nsec = UTIME_NOW;
	else if (to_set & FUSE_SET_ATTR_MTIME)
		ts[1] = a->st_mtim;
	if (f)
		return futimens(f->fd, ts) ? -errno : 0;
	if (S_ISLNK(n->type))
		return utimensat(nfd, "", ts, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) ? -errno : 0;
	/* The descriptor's own inode (a magic link, not a symlink walk). */
	bk_proc_path(nfd, proc, sizeof(proc));
	return utimensat(AT_FDCWD, proc, ts, 0) ? -errno : 0;
}

static int do_setattr(struct bk_root *root, int nfd, struct bk_node *n, struct bk_file *f,
		      const struct stat *a, int to_set)
{
	char proc[64];

	if (!root->writable)
		return -EROFS;
	bk_proc_path(nfd, proc, sizeof(proc));
	if (to_set & FUSE_SET_ATTR_MODE) {
		if (S_ISLNK(n->type))
			return -EOPNOTSUPP;
		if (f ? fchmod(f->fd, a->st_mode & 07777) : chmod(proc, a->st_mode & 07777))
			return -errno;
	}
	if (to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) {
		uid_t uid = to_set & FUSE_SET_ATTR_UID ? a->st_uid : (uid_t)-1;
		gid_t gid = to_set & FUSE_SET_ATTR_GID ? a->st_gid : (gid_t)-1;

		if (fchownat(nfd, "", uid, gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW))
			return -errno;
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		if (!S_ISREG(n->type))
			return S_ISDIR(n->type) ? -EISDIR : -EINVAL;
		if (f ? ftruncate(f->fd, a->st_size) : truncate(proc, a->st_size))
			return -errno;
	}
	if (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_ATIME_NOW |
		      FUSE_SET_ATTR_MTIME_NOW))
		return set_times(nfd, n, f, a, to_set);
	return 0;
}

static void bk_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	struct dl_fs *fs = bk_fs_of(req);
	struct dl_reply *r = dl_reply_begin(req, DL_R_ATTR, DL_OP_META, DL_TOP_OTHER, ino);
	struct bk_file *f = NULL;
	struct bk_root *root;
	struct bk_node *n;
	int ret;

	if (!r)
		return;
	ret = bk_node_of(fs, ino, &root, &n);
	if (!ret) {
		/* The handle of an open file (truncating through it needs no reopen). */
		if (fi && fi->fh && S_ISREG(n->type))
			f = (struct bk_file *)(uintptr_t)fi->fh;
		/* Through an open file it is the file already opened; by inode it
		 * must still be ours. */
		if (root->writable && !f)
			ret = bk_node_ok(root, n);
		if (!ret) {
			int fd = bk_node_fd(root, n);

			ret = fd < 0 ? fd : do_setattr(root, fd, n, f, attr, to_set);
			if (fd >= 0)
				close(fd);
		}
	}
	if (!ret)
		ret = node_stat(root, n, &r->st);
	if (!ret && n == &root->top)
		r->st.st_ino = ino;
	r->attr_timeout = BK_TIMEOUT;
	bk_finish(fs, r, ret);
}

static void bk_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct dl_fs *fs = bk_fs_of(req);
	struct dl_reply *r = dl_reply_begin(req, DL_R_READLINK, DL_OP_META, DL_TOP_OTHER, ino);
	struct bk_root *root;
	struct bk_node *n;
	char where[PATH_MAX], ew[DL_LOG_ESC_MAX], et[DL_LOG_ESC_MAX];
	ssize_t len;
	int ret, depth, pfd = -1, fd = -1;

	if (!r)
		return;
	ret = bk_node_of(fs, ino, &root, &n);
	if (ret)
		goto out;
	r->buf = malloc(PATH_MAX);
	if (!r->buf) {
		ret = -ENOMEM;
		goto out;
	}
	fd = bk_node_fd(root, n);
	if (fd < 0) {
		ret = fd;
		goto out;
	}
	len = readlinkat(fd, "", r->buf, PATH_MAX);
	if (len < 0) {
		ret = -errno;
		goto out;
	}
	if (len >= PATH_MAX) {
		ret = -ENAMETOOLONG;
		goto out;
	}
	((char *)r->buf)[len] = 0;
	/* Followed from where it is now, through whatever it passes now. */
	pthread_mutex_lock(&root->ns_lock);
	ret = bk_node_parent(root, n, fd, &pfd, &depth);
	if (ret == -EACCES)
		bk_moved_out(root, n, "symlink");
	else if (!ret && bk_target_inside(root, pfd, depth, r->buf, NULL))
		ret = -ELOOP;	/* said below */
	pthread_mutex_unlock(&root->ns_lock);
	if (pfd >= 0)
		close(pfd);
	if (ret == -ELOOP) {
		if (bk_path(fs, ino, where, sizeof(where)) < 0)
			snprintf(where, sizeof(where), "%s/?", bk_name(root));
		fprintf(stderr,
			"dliofs: backing: %s: symlink to '%s' leads out of the backing "
			"directory; refused (EACCES)\n",
			dl_log_esc(where, ew, sizeof(ew)), dl_log_esc(r->buf, et, sizeof(et)));
		ret = -EACCES;
	}
out:
	if (fd >= 0)
		close(fd);
	bk_finish(fs, r, ret);
}

static void bk_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct dl_fs *fs = bk_fs_of(req);
	struct dl_reply *r = dl_reply_begin(req, DL_R_STATFS, DL_OP_META, DL_TOP_STATFS, ino);
	struct bk_root *root = bk_root_of(fs, ino);
	int ret = 0;

	if (!r)
		return;
	if (!root || root->sink)
		ret = -ESTALE;
	else if (fstatvfs(root->top.fd, &r->sv))
		ret = -errno;
	bk_finish(fs, r, ret);
}

static void bk_forget(struct dl_fs *fs, fuse_ino_t ino, uint64_t nlookup)
{
	struct bk_root *root = bk_root_of(fs, ino);

	if (root && !root->sink)
		bk_node_forget(root, bk_id(ino), nlookup);
}

const struct dl_tree_ops dl_tree_backing = {
	.name = "backing",
	.xdev = 1,
	.attr_timeout = BK_TIMEOUT,
	.stat = bk_stat,
	.path = bk_path,
	.forget = bk_forget,
	.lookup = bk_lookup,
	.getattr = bk_getattr,
	.setattr = bk_setattr,
	.readlink = bk_readlink,
	.mknod = bk_mknod,
	.mkdir = bk_mkdir,
	.unlink = bk_unlink,
	.rmdir = bk_rmdir,
	.symlink = bk_symlink,
	.rename = bk_rename,
	.link = bk_link,
	.open = bk_open,
	.read = bk_read,
	.write = bk_write,
	.flush = bk_flush,
	.release = bk_release,
	.fsync = bk_fsync,
	.opendir = bk_opendir,
	.readdir = bk_readdir,
	.readdirplus = bk_readdirplus,
	.releasedir = bk_releasedir,
	.fsyncdir = bk_fsyncdir,
	.statfs = bk_statfs,
	.create = bk_create,
};
