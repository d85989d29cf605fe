/* The control tree: `.dliofs/` and its files (control.h says what they
 * hold and how a write is a transaction). Its traffic is control traffic:
 * neither shaped, counted nor traced. Commits run on the control thread
 * (ctl_worker.c), which answers their requests. */
#include <errno.h>
#include <stdlib.h>

#include "control.h"
#include "fs_i.h"
#include "reply.h"
#include "tree_i.h"

/* What an open control file carries in fi->fh. */
struct ctl_open {
	struct dl_handle link;	/* first: the list holds &h->link == h */
	struct dl_ctl_handle c;	/* its snapshot and pending write */
};

static struct dl_fs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* Answer a control request with an error (or 0). */
static void answer(fuse_req_t req, int err)
{
	dl_reply_nodev(req, 1, 0, 0, err);
}

static int ctl_stat(struct dl_fs *fs, fuse_ino_t ino, struct stat *st)
{
	struct dl_node n;
	int ret = dl_node_from_ino(fs, ino, &n);

	if (ret)
		return ret;
	dl_ctl_stat(fs, (unsigned)n.index, st);
	st->st_ino = ino;
	return 0;
}

static int ctl_path(struct dl_fs *fs, fuse_ino_t ino, char *buf, size_t len)
{
	return dl_node_path(fs, ino, buf, len);
}

static void drop_open(struct dl_handle *h)
{
	struct ctl_open *o = (struct ctl_open *)h;

	dl_ctl_handle_free(&o->c);
	free(o);
}

static void ctl_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dl_fs *fs = fs_of(req);
	const struct fuse_ctx *c = fuse_req_ctx(req);
	struct ctl_open *o = NULL;
	struct dl_reply *r;
	struct dl_node n;
	int ret;

	ret = dl_node_from_ino(fs, ino, &n);
	r = dl_reply_begin_ctl(req, DL_R_OPEN);
	if (!r)
		return;
	if (ret)
		goto out;
	o = calloc(1, sizeof(*o));
	if (!o) {
		ret = -ENOMEM;
		goto out;
	}
	ret = dl_ctl_open(fs, (unsigned)n.index, fi->flags, c ? c->uid : 0, c ? c->gid : 0,
			  &o->c);
	if (ret) {
		dl_ctl_handle_free(&o->c);
		free(o);
		goto out;
	}
	dl_handle_add(fs, &o->link, drop_open);
	fi->direct_io = 1; /* content changes; no page cache, no size needed */
	/* Its close commits what was written and reports it. */
	fi->noflush = 0;
	fi->fh = (uint64_t)(uintptr_t)o;
	r->fi = *fi;
	r->on_abort = dl_handle_abort;
out:
	dl_reply_finish(fs, r, ret);
}

/* Control files are not storage traffic: answered at once. */
static void ctl_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct ctl_open *o = (struct ctl_open *)(uintptr_t)fi->fh;
	struct dl_reply *r = dl_reply_begin_ctl(req, DL_R_BUF);

	(void)ino;
	if (!r)
		return;
	dl_reply_finish(fs_of(req), r,
			off < 0 ? -EINVAL
				: dl_ctl_handle_read(&o->c, (uint64_t)off, size, (char **)&r->buf,
						     &r->len));
}

static void ctl_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		      struct fuse_file_info *fi)
{
	struct dl_fs *fs = fs_of(req);
	struct ctl_open *o = (struct ctl_open *)(uintptr_t)fi->fh;
	struct dl_reply *r;

	(void)ino, (void)off;
	if (!o) {
		answer(req, EROFS);
		return;
	}
	r = dl_reply_begin_ctl(req, DL_R_WRITE);
	if (!r)
		return;
	r->count = size;
	dl_reply_finish(fs, r, dl_ctl_write(fs, &o->c, buf, size));
}

/* Commits run on the control thread, which answers the request (control.h);
 * what needs no commit is answered here. */
static int commit_job(struct dl_fs *fs, void *arg)
{
	struct ctl_open *o = arg;

	return dl_ctl_commit(fs, &o->c);
}

static void release_job(void *arg)
{
	dl_handle_free(arg);
}

static void commit(fuse_req_t req, struct ctl_open *o, int release)
{
	struct dl_fs *fs = fs_of(req);
	int ret = dl_ctl_commit_quick(&o->c);

	if (ret == -EAGAIN && fs->ctl_worker &&
	    dl_ctl_worker_submit(fs->ctl_worker, req, commit_job, release ? release_job : NULL,
				 o) == 0)
		return;
	if (ret == -EAGAIN)
		ret = dl_ctl_commit(fs, &o->c); /* no thread, no memory: here, then */
	if (release) {
		dl_handle_free(&o->link);
		ret = 0; /* a close has no answer but done */
	}
	answer(req, -ret);
}

/* A write nobody committed (no flush came) is applied at the close. */
static void ctl_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct ctl_open *o = (struct ctl_open *)(uintptr_t)fi->fh;

	(void)ino;
	if (o)
		commit(req, o, 1);
	else
		answer(req, 0);
}

static void ctl_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct ctl_open *o = (struct ctl_open *)(uintptr_t)fi->fh;

	(void)ino;
	if (o)
		commit(req, o, 0);
	else
		answer(req, 0);
}

static void ctl_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)datasync;
	ctl_flush(req, ino, fi);
}

/* Shell redirections open with O_TRUNC: a control file accepts truncation
 * (and times), nothing else. */
static void ctl_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
			struct fuse_file_info *fi)
{
	struct dl_fs *fs = fs_of(req);
	struct dl_reply *r;
	struct dl_node n;

	(void)attr, (void)fi;
	if (dl_node_from_ino(fs, ino, &n) || n.index == DL_CTL_DIR ||
	    (to_set & ~(FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME |
			FUSE_SET_ATTR_ATIME_NOW | FUSE_SET_ATTR_MTIME_NOW | FUSE_SET_ATTR_CTIME))) {
		answer(req, EROFS);
		return;
	}
	r = dl_reply_begin_ctl(req, DL_R_ATTR);
	if (!r)
		return;
	ctl_stat(fs, ino, &r->st);
	dl_reply_finish(fs, r, 0);
}

static void ctl_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino, (void)fi;
	answer(req, 0);
}

static void ctl_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)ino, (void)datasync, (void)fi;
	answer(req, 0);
}

static void ctl_readlink(fuse_req_t req, fuse_ino_t ino)
{
	(void)ino;
	answer(req, EINVAL);
}

/* Nothing in .dliofs/ is made, removed, renamed or linked. */
static void ctl_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      dev_t rdev)
{
	(void)parent, (void)name, (void)mode, (void)rdev;
	answer(req, EROFS);
}

static void ctl_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	(void)parent, (void)name, (void)mode;
	answer(req, EROFS);
}

static void ctl_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	(void)parent, (void)name;
	answer(req, EROFS);
}

static void ctl_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	(void)link, (void)parent, (void)name;
	answer(req, EROFS);
}

static void ctl_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		       const char *newname, unsigned int flags)
{
	(void)parent, (void)name, (void)newparent, (void)newname, (void)flags;
	answer(req, EROFS);
}

static void ctl_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	(void)ino, (void)newparent, (void)newname;
	answer(req, EROFS);
}

static void ctl_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		       struct fuse_file_info *fi)
{
	(void)parent, (void)name, (void)mode, (void)fi;
	answer(req, EROFS);
}

const struct dl_tree_ops dl_tree_ctl = {
	.name = "control",
	.ctl = 1,
	.attr_timeout = 0, /* the files change: never cached */
	.stat = ctl_stat,
	.path = ctl_path,
	.lookup = dl_node_lookup_op,
	.getattr = dl_node_getattr,
	.setattr = ctl_setattr,
	.readlink = ctl_readlink,
	.mknod = ctl_mknod,
	.mkdir = ctl_mkdir,
	.unlink = ctl_unlink,
	.rmdir = ctl_unlink,
	.symlink = ctl_symlink,
	.rename = ctl_rename,
	.link = ctl_link,
	.open = ctl_open,
	.read = ctl_read,
	.write = ctl_write,
	.flush = ctl_flush,
	.release = ctl_release,
	.fsync = ctl_fsync,
	.opendir = dl_node_opendir,
	.readdir = dl_node_readdir,
	.readdirplus = dl_node_readdirplus,
	.releasedir = ctl_releasedir,
	.fsyncdir = ctl_fsyncdir,
	.statfs = dl_node_statfs,
	.create = ctl_create,
};
