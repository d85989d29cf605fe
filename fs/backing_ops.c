/* FUSE operations on real backing directories. Every name is resolved with
 * *at() calls relative to the parent's O_PATH descriptor and never through a
 * symlink (O_NOFOLLOW / AT_SYMLINK_NOFOLLOW), so nothing outside the backing
 * directory can be reached. A directory (or file) the kernel still holds may
 * have been moved out of it meanwhile: lookups, opens and every change of a
 * name first check that it is still below (backing_path.c); reads and writes
 * of an open file do not. Symlinks a client makes, moves or links are
 * followed in full (chains included) and refused when they would lead out.
 * The work (syscall) is done before the reply is handed to the pacer, which
 * only delays the answer: an acknowledged write is in the file, an
 * acknowledged fsync has reached the disk. */
#include <dirent.h>
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

/* What an open file or directory carries in fi->fh. */
struct bk_file {
	struct bk_open link;	/* first: the list holds &f->link == f */
	struct bk_root *root;
	int fd;
	struct dl_client who;	/* who opened it (the close is theirs) */
};

struct bk_dir {
	struct bk_open link;
	struct bk_root *root;
	pthread_mutex_t lock;
	DIR *dp;
	off_t pos;	/* where the stream stands: the offset after the last entry sent */
};

static struct dl_fs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static int node_of(struct dl_fs *fs, fuse_ino_t ino, struct bk_root **r, struct bk_node **n)
{
	*r = bk_root_of(fs, ino);
	if (!*r || (*r)->sink)
		return -ESTALE;
	return bk_node_get(*r, bk_id(ino), n);
}

/* Say once per node that it was found outside (the log is for people). */
static void moved_out(struct bk_root *root, struct bk_node *n, const char *what)
{
	if (atomic_exchange(&n->moved_out, 1))
		return;
	fprintf(stderr,
		"dliofs: backing %s: a %s the mount served was moved out of the backing "
		"directory; no longer served (EACCES)\n",
		root->cfg->at, what);
}

/* Is directory p still below the backing directory? Its depth if so. */
static int dir_ok(struct bk_root *root, struct bk_node *p, int *depth)
{
	int ret;

	*depth = 0;
	if (p == &root->top)
		return 0;
	ret = bk_dir_depth(root, p->fd, depth);
	if (ret == -EACCES)
		moved_out(root, p, "directory");
	return ret;
}

/* The same for any node (a file through the directory holding it). */
static int node_ok(struct bk_root *root, struct bk_node *n)
{
	int depth, pfd, ret;

	if (S_ISDIR(n->type))
		return dir_ok(root, n, &depth);
	ret = bk_node_parent(root, n, &pfd, &depth);
	if (ret == -EACCES)
		moved_out(root, n, "file");
	if (!ret)
		close(pfd);
	return ret;
}

/* Refuse (and say why) a symlink text that would lead out when followed
 * from directory dirfd at depth. what: "symlink NAME" or "moving NAME". */
static int link_ok(struct bk_root *root, int dirfd, int depth, const char *target,
		   const char *verb, const char *name)
{
	char en[DL_LOG_ESC_MAX], et[DL_LOG_ESC_MAX];
	int ret = bk_target_inside(root, dirfd, depth, target, NULL);

	if (ret == -EACCES)
		fprintf(stderr,
			"dliofs: backing %s: %s %s -> '%s' would lead out of the backing "
			"directory; refused (EACCES)\n",
			root->cfg->at, verb, dl_log_esc(name, en, sizeof(en)),
			dl_log_esc(target, et, sizeof(et)));
	return ret;
}

static struct dl_reply *new_reply(fuse_req_t req, enum dl_reply_kind kind, enum dl_op_class cls,
				  uint8_t top, fuse_ino_t ino)
{
	struct dl_reply *r = dl_reply_new(req, kind, cls, top);

	if (!r) {
		dl_reply_enomem(req);
		return NULL;
	}
	r->preq.file_id = ino;
	return r;
}

/* fd (O_PATH, consumed) becomes a referenced node and an entry for it. */
static int entry_of(struct bk_root *r, int fd, struct fuse_entry_param *e)
{
	struct bk_node *n;
	struct stat st;
	int ret;

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

static int lookup_at(struct bk_root *r, struct bk_node *p, const char *name,
		     struct fuse_entry_param *e)
{
	int fd = openat(p->fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	return entry_of(r, fd, e);
}

/* The kernel never saw the entry: give its lookup back. */
static void abort_entry(struct dl_reply *r)
{
	bk_node_forget((struct bk_root *)(uintptr_t)r->fi.fh, bk_id(r->e.ino), 1);
}

static void finish_entry(struct dl_fs *fs, struct dl_reply *r, struct bk_root *root, int ret)
{
	if (!ret && r->e.ino) {
		r->fi.fh = (uint64_t)(uintptr_t)root;
		r->on_abort = abort_entry;
	}
	bk_finish(fs, r, ret);
}

/* A root daemon creating for another user: the new inode is theirs. */
static void give_to_caller(const struct fuse_ctx *c, int dirfd, const char *name, int fd)
{
	if (geteuid() != 0 || !c || c->uid == 0)
		return;
	/* The file exists either way; ownership is best effort. */
	if (fd >= 0) {
		if (fchown(fd, c->uid, c->gid)) {
		}
	} else if (name && fchownat(dirfd, name, c->uid, c->gid, AT_SYMLINK_NOFOLLOW)) {
	}
}

static void bk_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct dl_fs *fs = fs_of(req);
	struct dl_reply *r = new_reply(req, DL_R_ENTRY, DL_OP_META, DL_TOP_LOOKUP, parent);
	struct bk_root *root;
	struct bk_node *p;
	int ret, depth;

	if (!r)
		return;
	ret = node_of(fs, parent, &root, &p);
	if (!ret)
		ret = dir_ok(root, p, &depth);
	if (!ret)
		ret = bk_name_ok(name) ? lookup_at(root, p, name, &r->e) : -EINVAL;
	if (ret == -ENOENT) {
		/* A miss: cached only where nothing can create the name through us. */
		memset(&r->e, 0, sizeof(r->e));
		r->e.entry_timeout = root->writable ? 0 : BK_TIMEOUT;
		ret = 0;
	}
	finish_entry(fs, r, root, ret);
}

static void bk_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dl_fs *fs = fs_of(req);
	struct dl_reply *r = new_reply(req, DL_R_ATTR, DL_OP_META, DL_TOP_GETATTR, ino);
	struct bk_root *root;
	struct bk_node *n;
	int ret;

	(void)fi;
	if (!r)
		return;
	ret = node_of(fs, ino, &root, &n);
	if (!ret && fstatat(n->fd, "", &r->st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW))
		ret = -errno;
	if (!ret && n == &root->top)
		r->st.st_ino = ino;
	r->attr_timeout = BK_TIMEOUT;
	bk_finish(fs, r, ret);
}

static int set_times(struct bk_node *n, struct bk_file *f, const struct stat *a, int to_set)
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
		return utimensat(n->fd, "", ts, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) ? -errno : 0;
	/* The descriptor's own inode (a magic link, not a symlink walk). */
	bk_proc_path(n->fd, proc, sizeof(proc));
	return utimensat(AT_FDCWD, proc, ts, 0) ? -errno : 0;
}

static int do_setattr(struct bk_root *root, struct bk_node *n, struct bk_file *f,
		      const struct stat *a, int to_set)
{
	char proc[64];

	if (!root->writable)
		return -EROFS;
	bk_proc_path(n->fd, proc, sizeof(proc));
	if (to_set & FUSE_SET_ATTR_MODE) {
		if (S_ISLNK(n->type))
			return -EOPNOTSUPP;
		if (f ? fchmod(f->fd, a->st_mode & 07777) : chmod(proc, a->st_mode & 07777))
			return -errno;
	}
	if (to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) {
		uid_t uid = to_set & FUSE_SET_ATTR_UID ? a->st_uid : (uid_t)-1;
		gid_t gid = to_set & FUSE_SET_ATTR_GID ? a->st_gid : (gid_t)-1;

		if (fchownat(n->fd, "", uid, gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW))
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
		return set_times(n, f, a, to_set);
	return 0;
}

static void bk_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	struct dl_fs *fs = fs_of(req);
	struct dl_reply *r = new_reply(req, DL_R_ATTR, DL_OP_META, DL_TOP_OTHER, ino);
	struct bk_file *f = NULL;
	struct bk_root *root;
	struct bk_node *n;
	int ret;

	if (!r)
		return;
	ret = node_of(fs, ino, &root, &n);
	if (!ret) {
		/* The handle of an open file (truncating through it needs no reopen). */
		if (fi && fi->fh && S_ISREG(n->type))
			f = (struct bk_file *)(uintptr_t)fi->fh;
		/* Through an open file it is the file already opened; by inode it
		 * must still be ours. */
		if (root->writable && !f)
			ret = node_ok(root, n);
		if (!ret)
			ret = do_setattr(root, n, f, attr, to_set);
	}
	if (!ret && fstatat(n->fd, "", &r->st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW))
		ret = -errno;
	if (!ret && n == &root->top)
		r->st.st_ino = ino;
	r->attr_timeout = BK_TIMEOUT;
	bk_finish(fs, r, ret);
}

static void bk_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct dl_fs *fs = fs_of(req);
	struct dl_reply *r = new_reply(req, DL_R_READLINK, DL_OP_META, DL_TOP_OTHER, ino);
	struct bk_root *root;
	struct bk_node *n;
	char where[PATH_MAX], ew[DL_LOG_ESC_MAX], et[DL_LOG_ESC_MAX];
	ssize_t len;
	int ret, depth, pfd = -1;

	if (!r)
		return;
	ret = node_of(fs, ino, &root, &n);
	if (ret)
		goto out;
	r->buf = malloc(PATH_MAX);
	if (!r->buf) {
		ret = -ENOMEM;
		goto out;
	}
	len = readlinkat(n->fd, "", r->buf, PATH_MAX);
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
	ret = bk_node_parent(root, n, &pfd, &depth);
	if (ret == -EACCES)
		moved_out(root, n, "symlink");
	else if (!ret && bk_target_inside(root, pfd, depth, r->buf, NULL))
		ret = -ELOOP;	/* said below */
	pthread_mutex_unlock(&root->ns_lock);
	if (pfd >= 0)
		close(pfd);
	if (ret == -ELOOP) {
		if (dl_bk_path(fs, ino, where, sizeof(where)) < 0)
			snprintf(where, sizeof(where), "%s/?", root->cfg->at);
		fprintf(stderr,
			"dliofs: backing: %s: symlink to '%s' leads out of the backing "
			"directory; refused (EACCES)\n",
			dl_log_esc(where, ew, sizeof(ew)), dl_log_esc(r->buf, et, sizeof(et)));
		ret = -EACCES;
	}
out:
	bk_finish(fs, r, ret);
}

/* Create something named `name` in parent and answer with its entry. */
enum mk_kind { MK_NODE, MK_DIR, MK_SYMLINK };

static void make(fuse_req_t req, fuse_ino_t parent, const char *name, enum mk_kind kind,
		 mode_t mode, const char *target)
{
	struct dl_fs *fs = fs_of(req);
	const struct fuse_ctx *c = fuse_req_ctx(req);
	struct dl_reply *r = new_reply(req, DL_R_ENTRY, DL_OP_META,
				       kind == MK_SYMLINK ? DL_TOP_OTHER : DL_TOP_CREATE, parent);
	struct bk_root *root;
	struct bk_node *p;
	int ret, depth, locked = 0;

	if (!r)
		return;
	ret = node_of(fs, parent, &root, &p);
	if (ret)
		goto out;
	if (!root->writable) {
		ret = -EROFS;
		goto out;
	}
	if (!bk_name_ok(name)) {
		ret = -EINVAL;
		goto out;
	}
	pthread_mutex_lock(&root->ns_lock);
	locked = 1;
	ret = dir_ok(root, p, &depth);
	if (ret)
		goto out;
	switch (kind) {
	case MK_NODE:
		/* Regular files only: no devices, fifos or sockets in a backing store. */
		if (!S_ISREG(mode)) {
			ret = -EPERM;
			goto out;
		}
		ret = mknodat(p->fd, name, mode, 0) ? -errno : 0;
		break;
	case MK_DIR:
		ret = mkdirat(p->fd, name, mode) ? -errno : 0;
		break;
	case MK_SYMLINK:
		ret = link_ok(root, p->fd, depth, target, "symlink", name);
		if (!ret)
			ret = symlinkat(target, p->fd, name) ? -errno : 0;
		break;
	}
	if (ret)
		goto out;
	give_to_caller(c, p->fd, name, -1);
	ret = lookup_at(root, p, name, &r->e);
out:
	if (locked)
		pthread_mutex_unlock(&root->ns_lock);
	finish_entry(fs, r, root, ret);
}

static void bk_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	(void)rdev;
	make(req, parent, name, MK_NODE, mode, NULL);
}

static void bk_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	make(req, parent, name, MK_DIR, mode, NULL);
}

static void bk_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	make(req, parent, name, MK_SYMLINK, 0, link);
}

static void remove_name(fuse_req_t req, fuse_ino_t parent, const char *name, int flags)
{
	struct dl_fs *fs = fs_of(req);
	struct dl_reply *r = new_reply(req, DL_R_ERR, DL_OP_META, DL_TOP_OTHER, parent);
	struct bk_root *root;
	struct bk_node *p;
	int ret, depth;

	if (!r)
		return;
	ret = node_of(fs, parent, &root, &p);
	if (!ret && !root->writable)
		ret = -EROFS;
	if (!ret && !bk_name_ok(name))
		ret = -EINVAL;
	if (ret)
		goto out;
	pthread_mutex_lock(&root->ns_lock);
	ret = dir_ok(root, p, &depth);
	if (!ret && unlinkat(p->fd, name, flags))
		ret = -errno;
	pthread_mutex_unlock(&root->ns_lock);
out:
	bk_finish(fs, r, ret);
}

static void bk_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_name(req, parent, name, 0);
}

static void bk_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_name(req, parent, name, AT_REMOVEDIR);
}

/* What moving `name` from p to np (at depth ndepth) as `newname` does to
 * symlinks: a link moved must still stay inside from its new directory; a
 * directory moved to another parent takes its links along, and each must
 * still stay inside from where it ends up. Anything else moves freely. */
static int move_ok(struct bk_root *root, struct bk_node *p, const char *name, struct bk_node *np,
		   int ndepth, const char *newname)
{
	char target[PATH_MAX], bad[PATH_MAX], en[DL_LOG_ESC_MAX], eb[DL_LOG_ESC_MAX];
	struct bk_moved mv;
	struct stat st, to;
	ssize_t len;
	int ret;

	if (p == np || fstatat(p->fd, name, &st, AT_SYMLINK_NOFOLLOW))
		return 0;	/* same place; or nothing there, renameat2 says so */
	if (S_ISLNK(st.st_mode)) {
		len = readlinkat(p->fd, name, target, sizeof(target) - 1);
		if (len < 0)
			return -errno;
		target[len] = 0;
		return link_ok(root, np->fd, ndepth, target, "moving symlink", name);
	}
	if (!S_ISDIR(st.st_mode))
		return 0;
	if (fstat(np->fd, &to))
		return -errno;
	mv = (struct bk_moved){ .dev = st.st_dev, .ino = st.st_ino, .to = np->fd,
				.to_dev = to.st_dev, .to_ino = to.st_ino, .to_depth = ndepth,
				.to_name = newname, .from_dev = p->dev, .from_ino = p->ino,
				.from_name = name };
	mv.fd = openat(p->fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (mv.fd < 0)
		return -errno;
	bad[0] = 0;
	ret = bk_tree_links_inside(root, &mv, bad, sizeof(bad));
	close(mv.fd);
	if (ret == -EACCES || ret == -E2BIG) {
		fprintf(stderr,
			"dliofs: backing %s: moving directory %s elsewhere: symlink %s in it would "
			"lead out of the backing directory, or could not all be checked; refused "
			"(EACCES)\n",
			root->cfg->at, dl_log_esc(name, en, sizeof(en)),
			dl_log_esc(bad, eb, sizeof(eb)));
		ret = -EACCES;
	}
	return ret;
}

static void bk_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	struct dl_fs *fs = fs_of(req);
	struct dl_reply *r = new_reply(req, DL_R_ERR, DL_OP_META, DL_TOP_OTHER, parent);
	struct bk_root *root, *root2;
	struct bk_node *p, *np;
	int ret, depth, ndepth;

	if (!r)
		return;
	ret = node_of(fs, parent, &root, &p);
	if (!ret)
		ret = node_of(fs, newparent, &root2, &np);
	if (!ret && root != root2)
		ret = -EXDEV;
	if (!ret && !root->writable)
		ret = -EROFS;
	if (!ret && (!bk_name_ok(name) || !bk_name_ok(newname) ||
		     (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE))))
		ret = -EINVAL;
	if (ret)
		goto out;
	pthread_mutex_lock(&root->ns_lock);
	ret = dir_ok(root, p, &depth);
	if (!ret)
		ret = dir_ok(root, np, &ndepth);
	if (!ret)
		ret = move_ok(root, p, name, np, ndepth, newname);
	/* An exchange moves the other one too. */
	if (!ret && (flags & RENAME_EXCHANGE))
		ret = move_ok(root, np, newname, p, depth, name);
	if (!ret && renameat2(p->fd, name, np->fd, newname, flags))
		ret = -errno;
	pthread_mutex_unlock(&root->ns_lock);
out:
	bk_finish(fs, r, ret);
}

static void bk_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct dl_fs *fs = fs_of(req);
	struct dl_reply *r = new_reply(req, DL_R_ENTRY, DL_OP_META, DL_TOP_OTHER, ino);
	struct bk_root *root, *root2 = NULL;
	struct bk_node *n, *np;
	char proc[64], target[PATH_MAX];
	int ret, ndepth, locked = 0;
	ssize_t len;

	if (!r)
		return;
	ret = node_of(fs, ino, &root, &n);
	if (!ret)
		ret = node_of(fs, newparent, &root2, &np);
	if (!ret && root != root2)
		ret = -EXDEV;
	if (!ret && !root->writable)
		ret = -EROFS;
	if (!ret && !bk_name_ok(newname))
		ret = -EINVAL;
	if (!ret && S_ISDIR(n->type))
		ret = -EPERM;
	if (ret)
		goto out;
	pthread_mutex_lock(&root->ns_lock);
	locked = 1;
	/* A file moved out must not be linked back in, and a symlink's text
	 * means something else in another directory. */
	ret = node_ok(root, n);
	if (!ret)
		ret = dir_ok(root, np, &ndepth);
	if (!ret && S_ISLNK(n->type)) {
		len = readlinkat(n->fd, "", target, sizeof(target) - 1);
		ret = len < 0 ? -errno : 0;
		if (!ret) {
			target[len] = 0;
			ret = link_ok(root, np->fd, ndepth, target, "hard link to symlink", newname);
		}
	}
	if (!ret) {
		/* Links the descriptor's own inode (a symlink stays a symlink). */
		bk_proc_path(n->fd, proc, sizeof(proc));
		if (linkat(AT_FDCWD, proc, np->fd, newname, AT_SYMLINK_FOLLOW))
			ret = -errno;
	}
	if (!ret)
		ret = lookup_at(root, np, newname, &r->e);
out:
	if (locked)
		pthread_mutex_unlock(&root->ns_lock);
	finish_entry(fs, r, root2, ret);
}

static void close_file(struct bk_open *o)
{
	struct bk_file *f = (struct bk_file *)o;

	if (f->fd >= 0)
		close(f->fd);
	free(f);
}

static struct bk_file *new_file(struct bk_root *root)
{
	struct bk_file *f = calloc(1, sizeof(*f));

	if (f) {
		f->link.close = close_file;
		f->root = root;
		f->fd = -1;
	}
	return f;
}

static void free_file(struct bk_file *f)
{
	if (!f)
		return;
	bk_open_del(f->root, &f->link);
	close_file(&f->link);
}

static void abort_open(struct dl_reply *r)
{
	free_file((struct bk_file *)(uintptr_t)r->fi.fh);
}

static void abort_create(struct dl_reply *r)
{
	struct bk_file *f = (struct bk_file *)(uintptr_t)r->fi.fh;

	bk_node_forget(f->root, bk_id(r->e.ino), 1);
	free_file(f);
}

/* How the real file is opened for a client's flags: never following a
 * symlink, never becoming our controlling terminal; O_DIRECT's alignment
 * rules are the kernel's business above us, not the real file's. */
static int real_flags(int flags)
{
	return (flags & ~(O_CREAT | O_EXCL | O_NOCTTY | O_DIRECT | O_NOFOLLOW)) | O_CLOEXEC;
}

static void set_open_flags(struct dl_fs *fs, struct fuse_file_info *fi)
{
	/* The real file can change behind us: no page cache kept across opens. */
	fi->keep_cache = 0;
	fi->direct_io = dl_fs_direct_io(fs) ? 1 : 0;
}

static void bk_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dl_fs *fs = fs_of(req);
	struct dl_reply *r = new_reply(req, DL_R_OPEN, DL_OP_META, DL_TOP_OPEN, ino);
	struct bk_file *f = NULL;
	struct bk_root *root;
	struct bk_node *n;
	char proc[64];
	int ret;

	if (!r)
		return;
	ret = node_of(fs, ino, &root, &n);
	if (ret)
		goto out;
	if (!S_ISREG(n->type)) {
		ret = S_ISDIR(n->type) ? -EISDIR : -EACCES;
		goto out;
	}
	if (!root->writable && ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC))) {
		ret = -EROFS;
		goto out;
	}
	ret = node_ok(root, n);
	if (ret)
		goto out;
	f = new_file(root);
	if (!f) {
		ret = -ENOMEM;
		goto out;
	}
	bk_proc_path(n->fd, proc, sizeof(proc));
	f->fd = open(proc, real_flags(fi->flags));
	if (f->fd < 0) {
		ret = -errno;
		goto out;
	}
	set_open_flags(fs, fi);
	f->who = r->client;
	fi->fh = (uint64_t)(uintptr_t)f;
	r->fi = *fi;
	r->on_abort = abort_open;
	bk_open_add(root, &f->link);
	f = NULL;
out:
	free_file(f);
	bk_finish(fs, r, ret);
}

static void bk_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	struct dl_fs *fs = fs_of(req);
	const struct fuse_ctx *c = fuse_req_ctx(req);
	struct dl_reply *r = new_reply(req, DL_R_CREATE, DL_OP_META, DL_TOP_CREATE, parent);
	struct bk_file *f = NULL;
	struct bk_root *root;
	struct bk_node *p;
	struct stat st;
	char proc[64];
	int ret, existed, pfd, depth;

	if (!r)
		return;
	ret = node_of(fs, parent, &root, &p);
	if (ret)
		goto fail;
	if (!root->writable) {
		ret = -EROFS;
		goto fail;
	}
	if (!bk_name_ok(name)) {
		ret = -EINVAL;
		goto fail;
	}
	f = new_file(root);
	if (!f) {
		ret = -ENOMEM;
		goto fail;
	}
	pthread_mutex_lock(&root->ns_lock);
	ret = dir_ok(root, p, &depth);
	if (!ret) {
		existed = fstatat(p->fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
		/* O_NOFOLLOW: a symlink in the way is an error (ELOOP), never a path. */
		f->fd = openat(p->fd, name, real_flags(fi->flags) | O_CREAT | O_NOFOLLOW |
			       (fi->flags & O_EXCL), mode);
		if (f->fd < 0)
			ret = -errno;
	}
	pthread_mutex_unlock(&root->ns_lock);
	if (ret) {
		f->fd = -1;
		goto fail;
	}
	if (!existed)
		give_to_caller(c, -1, "", f->fd);
	bk_proc_path(f->fd, proc, sizeof(proc));
	pfd = open(proc, O_PATH | O_CLOEXEC);
	if (pfd < 0) {
		ret = -errno;
		goto fail;
	}
	ret = entry_of(root, pfd, &r->e);
	if (ret)
		goto fail;
	set_open_flags(fs, fi);
	f->who = r->client;
	fi->fh = (uint64_t)(uintptr_t)f;
	r->fi = *fi;
	r->on_abort = abort_create;
	bk_open_add(root, &f->link);
	bk_finish(fs, r, 0);
	return;
fail:
	free_file(f);
	bk_finish(fs, r, ret);
}

static void bk_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct dl_fs *fs = fs_of(req);
	struct bk_file *f = (struct bk_file *)(uintptr_t)fi->fh;
	struct dl_reply *r = new_reply(req, DL_R_BUF, DL_OP_READ, DL_TOP_READ, ino);
	ssize_t n;
	int ret = 0;

	if (!r)
		return;
	r->preq.off = (uint64_t)off;
	if (off < 0 || size > fs->max_read) {
		ret = -EINVAL;
		goto out;
	}
	r->buf = dl_fs_buf_get(fs);
	if (!r->buf) {
		ret = -ENOMEM;
		goto out;
	}
	r->pooled = 1;
	do
		n = pread(f->fd, r->buf, size, off);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		ret = -errno;
		goto out;
	}
	r->len = (size_t)n;
	r->preq.len = (uint64_t)n;
	atomic_fetch_add(&f->root->rd_bytes, (uint64_t)n);
	atomic_fetch_add(&f->root->rd_ops, 1);
out:
	bk_finish(fs, r, ret);
}

static void bk_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct dl_fs *fs = fs_of(req);
	struct bk_file *f = (struct bk_file *)(uintptr_t)fi->fh;
	struct dl_reply *r = new_reply(req, DL_R_WRITE, DL_OP_WRITE, DL_TOP_WRITE, ino);
	size_t done = 0;
	int ret = 0;

	if (!r)
		return;
	r->preq.off = (uint64_t)off;
	r->preq.len = size;
	if (!f->root->writable) {
		ret = -EROFS;
		goto out;
	}
	/* All of it is in the file before the reply is even handed to the pacer. */
	while (done < size) {
		ssize_t n = pwrite(f->fd, buf + done, size - done, off + (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			if (!done)
				ret = -errno;
			break;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	r->count = done;
	atomic_fetch_add(&f->root->wr_bytes, done);
	atomic_fetch_add(&f->root->wr_ops, 1);
out:
	bk_finish(fs, r, ret);
}

static void bk_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dl_fs *fs = fs_of(req);
	struct bk_file *f = (struct bk_file *)(uintptr_t)fi->fh;
	struct dl_reply *r = new_reply(req, DL_R_ERR, DL_OP_META, DL_TOP_OTHER, ino);
	int ret = 0, fd;

	if (!r)
		return;
	/* What close() would report on the real file (NFS reports write errors here). */
	fd = dup(f->fd);
	if (fd < 0 || close(fd))
		ret = -errno;
	bk_finish(fs, r, ret);
}

static void bk_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct dl_fs *fs = fs_of(req);
	struct bk_file *f = (struct bk_file *)(uintptr_t)fi->fh;
	struct dl_reply *r = new_reply(req, DL_R_ERR, DL_OP_META, DL_TOP_FSYNC, ino);
	int ret;

	if (!r)
		return;
	ret = (datasync ? fdatasync(f->fd) : fsync(f->fd)) ? -errno : 0;
	bk_finish(fs, r, ret);
}

static void bk_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct bk_file *f = (struct bk_file *)(uintptr_t)fi->fh;
	struct dl_client who = f ? f->who : (struct dl_client){0};

	free_file(f);
	dl_reply_close(fs_of(req), req, DL_TOP_RELEASE, ino, &who);
}

static void close_dir(struct bk_open *o)
{
	struct bk_dir *d = (struct bk_dir *)o;

	if (d->dp)
		closedir(d->dp);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

static void free_dir(struct bk_dir *d)
{
	if (!d)
		return;
	bk_open_del(d->root, &d->link);
	close_dir(&d->link);
}

static void abort_opendir(struct dl_reply *r)
{
	free_dir((struct bk_dir *)(uintptr_t)r->fi.fh);
}

static void bk_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dl_fs *fs = fs_of(req);
	struct dl_reply *r = new_reply(req, DL_R_OPEN, DL_OP_META, DL_TOP_OPENDIR, ino);
	struct bk_dir *d = NULL;
	struct bk_root *root;
	struct bk_node *n;
	int ret, fd, depth;

	if (!r)
		return;
	ret = node_of(fs, ino, &root, &n);
	if (ret)
		goto out;
	if (!S_ISDIR(n->type)) {
		ret = -ENOTDIR;
		goto out;
	}
	ret = dir_ok(root, n, &depth);
	if (ret)
		goto out;
	d = calloc(1, sizeof(*d));
	if (!d) {
		ret = -ENOMEM;
		goto out;
	}
	pthread_mutex_init(&d->lock, NULL);
	d->link.close = close_dir;
	d->root = root;
	fd = openat(n->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	d->dp = fdopendir(fd);
	if (!d->dp) {
		ret = -errno;
		close(fd);
		goto out;
	}
	fi->fh = (uint64_t)(uintptr_t)d;
	fi->cache_readdir = 0;
	fi->keep_cache = 0;
	r->fi = *fi;
	r->on_abort = abort_opendir;
	bk_open_add(root, &d->link);
	d = NULL;
out:
	free_dir(d);
	bk_finish(fs, r, ret);
}

/* Streamed: each call reads only what fits, and offsets are the real
 * directory's own (d_off), so a listing resumes where it stopped. */
static void bk_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct dl_fs *fs = fs_of(req);
	struct bk_dir *d = (struct bk_dir *)(uintptr_t)fi->fh;
	struct dl_reply *r = new_reply(req, DL_R_BUF, DL_OP_META, DL_TOP_READDIR, ino);
	struct bk_root *root;
	struct bk_node *n;
	struct stat st;
	size_t used = 0;
	int ret, depth;

	if (!r)
		return;
	/* A listing is of names: the directory must still be ours. */
	ret = node_of(fs, ino, &root, &n);
	if (!ret)
		ret = dir_ok(root, n, &depth);
	if (ret)
		goto out;
	r->buf = malloc(size);
	if (!r->buf) {
		ret = -ENOMEM;
		goto out;
	}
	memset(&st, 0, sizeof(st));
	pthread_mutex_lock(&d->lock);
	if (off != d->pos) {
		seekdir(d->dp, off);
		d->pos = off;
	}
	for (;;) {
		struct dirent *de;
		size_t need;

		errno = 0;
		de = readdir(d->dp);
		if (!de) {
			if (errno)
				ret = -errno;
			break;
		}
		st.st_ino = de->d_ino;
		st.st_mode = DTTOIF(de->d_type);
		need = fuse_add_direntry(req, (char *)r->buf + used, size - used, de->d_name, &st,
					 de->d_off);
		if (need > size - used) {
			/* Not sent: the next call starts with it. */
			seekdir(d->dp, d->pos);
			break;
		}
		used += need;
		d->pos = de->d_off;
	}
	pthread_mutex_unlock(&d->lock);
	if (used)
		ret = 0;
	r->len = used;
out:
	bk_finish(fs, r, ret);
}

static void bk_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	free_dir((struct bk_dir *)(uintptr_t)fi->fh);
	dl_reply_err(fs_of(req), req, DL_OP_META, DL_TOP_RELEASEDIR, ino, 0, 1);
}

static void bk_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct dl_fs *fs = fs_of(req);
	struct bk_dir *d = (struct bk_dir *)(uintptr_t)fi->fh;
	struct dl_reply *r = new_reply(req, DL_R_ERR, DL_OP_META, DL_TOP_FSYNC, ino);
	int ret;

	if (!r)
		return;
	ret = (datasync ? fdatasync(dirfd(d->dp)) : fsync(dirfd(d->dp))) ? -errno : 0;
	bk_finish(fs, r, ret);
}

static void bk_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct dl_fs *fs = fs_of(req);
	struct dl_reply *r = new_reply(req, DL_R_STATFS, DL_OP_META, DL_TOP_STATFS, ino);
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

const struct fuse_lowlevel_ops dl_bk_real_ops = {
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
	.releasedir = bk_releasedir,
	.fsyncdir = bk_fsyncdir,
	.statfs = bk_statfs,
	.create = bk_create,
};
