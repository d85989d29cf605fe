/* FUSE operations on real backing directories that change names: mknod,
 * mkdir, symlink, unlink, rmdir, rename, link. Each takes the root's
 * ns_lock, so that the check that a symlink stays inside and the change it
 * allows are one step for every client (backing_ops.c says the rules). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backing_i.h"
#include "log_i.h"

/* Create something named `name` in parent and answer with its entry. */
enum mk_kind { MK_NODE, MK_DIR, MK_SYMLINK };

static void make(fuse_req_t req, fuse_ino_t parent, const char *name, enum mk_kind kind,
		 mode_t mode, const char *target)
{
	struct dl_fs *fs = bk_fs_of(req);
	uint8_t top = kind == MK_SYMLINK ? DL_TOP_OTHER : DL_TOP_CREATE;
	struct dl_reply *r = dl_reply_begin(req, DL_R_ENTRY, DL_OP_META, top, parent);
	struct bk_root *root;
	struct bk_node *p;
	struct bk_creds cr;
	int ret, depth, locked = 0, pfd = -1;

	if (!r)
		return;
	ret = bk_parent_of(fs, parent, name, 1, -EEXIST, &root, &p);
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
	ret = bk_dir_ok(root, p, &depth);
	if (ret)
		goto out;
	/* Regular files only: no devices, fifos or sockets in a backing store. */
	if (kind == MK_NODE && !S_ISREG(mode)) {
		ret = -EPERM;
		goto out;
	}
	pfd = bk_node_fd(root, p);
	if (pfd < 0) {
		ret = pfd;
		goto out;
	}
	if (kind == MK_SYMLINK)
		ret = bk_link_ok(root, pfd, depth, target, "symlink", name);
	if (ret)
		goto out;
	/* As the caller: the kernel checks its rights, and the new inode is
	 * born its own (bk_creds_enter). */
	ret = bk_creds_enter(req, &cr);
	if (ret)
		goto out;
	switch (kind) {
	case MK_NODE:
		ret = mknodat(pfd, name, mode, 0) ? -errno : 0;
		break;
	case MK_DIR:
		ret = mkdirat(pfd, name, mode) ? -errno : 0;
		break;
	case MK_SYMLINK:
		ret = symlinkat(target, pfd, name) ? -errno : 0;
		break;
	}
	bk_creds_leave(&cr);
	if (ret)
		goto out;
	ret = bk_lookup_at(root, p, name, &r->e);
out:
	if (locked)
		pthread_mutex_unlock(&root->ns_lock);
	if (pfd >= 0)
		close(pfd);
	bk_finish_entry(fs, r, root, ret);
}

void bk_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	(void)rdev;
	make(req, parent, name, MK_NODE, mode, NULL);
}

void bk_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	make(req, parent, name, MK_DIR, mode, NULL);
}

void bk_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	make(req, parent, name, MK_SYMLINK, 0, link);
}

static void remove_name(fuse_req_t req, fuse_ino_t parent, const char *name, int flags)
{
	struct dl_fs *fs = bk_fs_of(req);
	struct dl_reply *r = dl_reply_begin(req, DL_R_ERR, DL_OP_META, DL_TOP_OTHER, parent);
	struct bk_root *root;
	struct bk_node *p;
	struct bk_creds cr;
	int ret, depth, pfd = -1;

	if (!r)
		return;
	ret = bk_parent_of(fs, parent, name, 0, -EPERM, &root, &p);
	if (!ret && !root->writable)
		ret = -EROFS;
	if (!ret && !bk_name_ok(name))
		ret = -EINVAL;
	if (ret)
		goto out;
	pthread_mutex_lock(&root->ns_lock);
	ret = bk_dir_ok(root, p, &depth);
	if (!ret) {
		pfd = bk_node_fd(root, p);
		ret = pfd < 0 ? pfd : 0;
	}
	/* As the caller: the kernel checks the sticky bit and the rights on
	 * the inode at the name when it removes it. */
	if (!ret)
		ret = bk_creds_enter(req, &cr);
	if (!ret) {
		if (unlinkat(pfd, name, flags))
			ret = -errno;
		bk_creds_leave(&cr);
	}
	pthread_mutex_unlock(&root->ns_lock);
	if (pfd >= 0)
		close(pfd);
out:
	bk_finish(fs, r, ret);
}

void bk_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_name(req, parent, name, 0);
}

void bk_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_name(req, parent, name, AT_REMOVEDIR);
}

/* What moving `name` from p to np (at depth ndepth) as `newname` does to
 * symlinks: a link moved must still stay inside from its new directory; a
 * directory moved to another parent takes its links along, and each must
 * still stay inside from where it ends up. Anything else moves freely. */
static int move_ok(struct bk_root *root, struct bk_node *p, int pfd, const char *name,
		   struct bk_node *np, int npfd, int ndepth, const char *newname)
{
	char target[PATH_MAX], bad[PATH_MAX], en[DL_LOG_ESC_MAX], eb[DL_LOG_ESC_MAX];
	struct bk_moved mv;
	struct stat st, to;
	ssize_t len;
	int ret;

	if (p == np || fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return 0;	/* same place; or nothing there, renameat2 says so */
	if (S_ISLNK(st.st_mode)) {
		len = readlinkat(pfd, name, target, sizeof(target) - 1);
		if (len < 0)
			return -errno;
		target[len] = 0;
		return bk_link_ok(root, npfd, ndepth, target, "moving symlink", name);
	}
	if (!S_ISDIR(st.st_mode))
		return 0;
	if (fstat(npfd, &to))
		return -errno;
	mv = (struct bk_moved){ .dev = st.st_dev, .ino = st.st_ino, .to = npfd,
				.to_dev = to.st_dev, .to_ino = to.st_ino, .to_depth = ndepth,
				.to_name = newname, .from_dev = p->dev, .from_ino = p->ino,
				.from_name = name };
	mv.fd = openat(pfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
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
			bk_name(root), dl_log_esc(name, en, sizeof(en)),
			dl_log_esc(bad, eb, sizeof(eb)));
		ret = -EACCES;
	}
	return ret;
}

/* The two inodes a rename or a link joins: in one backing directory
 * (EXDEV otherwise) that takes writes (EROFS). A synthetic directory is
 * the overlay's (bk_parent_of): a name of its own there is never moved nor
 * replaced (EPERM), nor linked over (EEXIST); the directory a name goes
 * to is made. aname NULL: a is the inode itself (a link's). */
static int writable_pair(struct dl_fs *fs, fuse_ino_t a, const char *aname, fuse_ino_t b,
			 const char *bname, struct bk_root **root, struct bk_node **na,
			 struct bk_node **nb)
{
	struct bk_root *rb;
	int ret = aname ? bk_parent_of(fs, a, aname, 0, -EPERM, root, na)
			: bk_node_of(fs, a, root, na);

	if (!ret)
		ret = bk_parent_of(fs, b, bname, 1, aname ? -EPERM : -EEXIST, &rb, nb);
	if (!ret && *root != rb)
		ret = -EXDEV;
	if (!ret && !(*root)->writable)
		ret = -EROFS;
	return ret;
}

void bk_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
	       const char *newname, unsigned int flags)
{
	struct dl_fs *fs = bk_fs_of(req);
	struct dl_reply *r = dl_reply_begin(req, DL_R_ERR, DL_OP_META, DL_TOP_OTHER, parent);
	struct bk_root *root;
	struct bk_node *p, *np;
	struct bk_creds cr;
	int ret, depth, ndepth, pfd = -1, npfd = -1;

	if (!r)
		return;
	ret = writable_pair(fs, parent, name, newparent, newname, &root, &p, &np);
	if (!ret && (!bk_name_ok(name) || !bk_name_ok(newname) ||
		     (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE))))
		ret = -EINVAL;
	if (ret)
		goto out;
	pthread_mutex_lock(&root->ns_lock);
	ret = bk_dir_ok(root, p, &depth);
	if (!ret)
		ret = bk_dir_ok(root, np, &ndepth);
	if (!ret) {
		pfd = bk_node_fd(root, p);
		npfd = pfd < 0 ? -1 : bk_node_fd(root, np);
		ret = pfd < 0 ? pfd : npfd < 0 ? npfd : 0;
	}
	if (!ret)
		ret = move_ok(root, p, pfd, name, np, npfd, ndepth, newname);
	/* An exchange moves the other one too. */
	if (!ret && (flags & RENAME_EXCHANGE))
		ret = move_ok(root, np, npfd, newname, p, pfd, depth, name);
	/* As the caller: the kernel checks the sticky bit and the rights on
	 * both inodes at the names when it moves them. */
	if (!ret)
		ret = bk_creds_enter(req, &cr);
	if (!ret) {
		if (renameat2(pfd, name, npfd, newname, flags))
			ret = -errno;
		bk_creds_leave(&cr);
	}
	pthread_mutex_unlock(&root->ns_lock);
	if (pfd >= 0)
		close(pfd);
	if (npfd >= 0)
		close(npfd);
out:
	bk_finish(fs, r, ret);
}

void bk_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct dl_fs *fs = bk_fs_of(req);
	struct dl_reply *r = dl_reply_begin(req, DL_R_ENTRY, DL_OP_META, DL_TOP_OTHER, ino);
	struct bk_root *root = NULL;
	struct bk_node *n, *np;
	struct bk_creds cr;
	char proc[64], target[PATH_MAX];
	int ret, ndepth, locked = 0, nfd = -1, npfd = -1;
	ssize_t len;

	if (!r)
		return;
	ret = writable_pair(fs, ino, NULL, newparent, newname, &root, &n, &np);
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
	ret = bk_node_ok(root, n);
	if (!ret)
		ret = bk_dir_ok(root, np, &ndepth);
	if (!ret) {
		nfd = bk_node_fd(root, n);
		npfd = nfd < 0 ? -1 : bk_node_fd(root, np);
		ret = nfd < 0 ? nfd : npfd < 0 ? npfd : 0;
	}
	if (!ret && S_ISLNK(n->type)) {
		len = readlinkat(nfd, "", target, sizeof(target) - 1);
		ret = len < 0 ? -errno : 0;
		if (!ret) {
			target[len] = 0;
			ret = bk_link_ok(root, npfd, ndepth, target, "hard link to symlink",
					 newname);
		}
	}
	if (!ret)
		ret = bk_creds_enter(req, &cr);
	if (!ret) {
		/* Links the descriptor's own inode (a symlink stays a symlink),
		 * as the caller: the kernel's rules on linking another user's
		 * file apply. */
		bk_proc_path(nfd, proc, sizeof(proc));
		if (linkat(AT_FDCWD, proc, npfd, newname, AT_SYMLINK_FOLLOW))
			ret = -errno;
		bk_creds_leave(&cr);
	}
	if (!ret)
		ret = bk_lookup_at(root, np, newname, &r->e);
out:
	if (locked)
		pthread_mutex_unlock(&root->ns_lock);
	if (nfd >= 0)
		close(nfd);
	if (npfd >= 0)
		close(npfd);
	bk_finish_entry(fs, r, root, ret);
}
