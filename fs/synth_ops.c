/* The synthetic tree: the root and the datasets. Read-only; every file's
 * size and bytes are computed (namespace.c, formats/). Errors are negative
 * errno inside the daemon and become positive in the reply path. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>

#include "backing.h"
#include "fs_i.h"
#include "reply.h"
#include "served.h"
#include "tree_i.h"

/* What an open synthetic file carries in fi->fh. */
struct syn_handle {
	struct dl_handle link;	/* first: the list holds &h->link == h */
	struct dl_client who;	/* who opened it (the close is theirs) */
	struct dl_file f;
	int readahead;		/* emulate the page cache's readahead for its reads */
};

static struct dl_fs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* A call the synthetic tree refuses (or answers with nothing to do):
 * counted and traced as what it is, but no device is involved. */
static void refuse(fuse_req_t req, uint8_t top, fuse_ino_t ino, int err)
{
	dl_reply_nodev(req, 0, top, ino, err);
}

static int syn_stat(struct dl_fs *fs, fuse_ino_t ino, struct stat *st)
{
	struct dl_node n;
	int ret = dl_node_from_ino(fs, ino, &n);

	return ret ? ret : dl_node_stat(fs, &n, st);
}

static int syn_path(struct dl_fs *fs, fuse_ino_t ino, char *buf, size_t len)
{
	return dl_node_path(fs, ino, buf, len);
}

static void drop_handle(struct dl_handle *h)
{
	free(h);
}

static void syn_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dl_fs *fs = fs_of(req);
	struct syn_handle *h = NULL;
	struct dl_reply *r;
	struct dl_node n;
	int ret;

	ret = dl_node_from_ino(fs, ino, &n);
	r = dl_reply_begin(req, DL_R_OPEN, DL_OP_META, DL_TOP_OPEN, ino);
	if (!r)
		return;
	r->preq.inode = ino;
	if (ret)
		goto out;
	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
		/* A refusal costs no device time: the storage answers at once. */
		r->preq.flags |= DL_PREQ_NODEV;
		ret = -EROFS;
		goto out;
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		ret = -ENOMEM;
		goto out;
	}
	dl_handle_add(fs, &h->link, drop_handle);
	ret = dl_node_file(fs, &n, &h->f);
	if (ret)
		goto out;
	/* Decided per open from the policy in force now, so a live change of
	 * cache.policy takes effect for the next open. */
	if (dl_fs_direct_io(fs)) {
		fi->direct_io = 1;
		/* The reader's calls reach us as made: unless it asked for
		 * O_DIRECT, a device would see them through readahead. With the
		 * page cache on, the kernel's requests are that already. */
		h->readahead = !(fi->flags & O_DIRECT);
	} else {
		fi->keep_cache = 1; /* bytes never change: reuse cached pages */
		/* Its pages may now stay in the kernel: remember it, so a cache
		 * drop can invalidate them. */
		dl_served_mark(fs->served, &n);
	}
	fi->noflush = 1; /* nothing is ever dirty */
	h->who = r->client;
	fi->fh = (uint64_t)(uintptr_t)h;
	r->fi = *fi;
	r->on_abort = dl_handle_abort;
	dl_reply_finish(fs, r, 0);
	return;
out:
	dl_handle_free(h ? &h->link : NULL);
	dl_reply_finish(fs, r, ret);
}

static void syn_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct dl_fs *fs = fs_of(req);
	struct syn_handle *h = (struct syn_handle *)(uintptr_t)fi->fh;
	struct dl_reply *r = dl_reply_begin(req, DL_R_BUF, DL_OP_READ, DL_TOP_READ, ino);
	uint64_t fsize = h->f.size;
	size_t len;
	int ret = 0;

	if (!r)
		return;
	r->preq.off = (uint64_t)off;
	r->preq.file_size = fsize;
	if (h->readahead)
		r->preq.flags |= DL_PREQ_BUFFERED;
	if (off < 0) {
		ret = -EINVAL;
		goto out;
	}
	if ((uint64_t)off >= fsize)
		goto out; /* EOF: an empty reply, which no device is asked for */
	len = size;
	if (len > fsize - (uint64_t)off)
		len = (size_t)(fsize - (uint64_t)off);
	if (len > fs->max_read) {
		ret = -EINVAL;
		goto out;
	}
	r->preq.len = len;
	ret = dl_reply_pool_buf(fs, r);
	if (ret)
		goto out;
	ret = dl_file_read(fs->fmt, &h->f, r->buf, (uint64_t)off, len);
	r->len = len;
out:
	dl_reply_finish(fs, r, ret);
}

static void syn_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		      struct fuse_file_info *fi)
{
	(void)buf, (void)size, (void)off, (void)fi;
	dl_reply_err(fs_of(req), req, DL_OP_WRITE, DL_TOP_WRITE, ino, EROFS, 1);
}

static void syn_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct syn_handle *h = (struct syn_handle *)(uintptr_t)fi->fh;
	struct dl_client who = h ? h->who : (struct dl_client){0};

	dl_handle_free(h ? &h->link : NULL);
	dl_reply_close(fs_of(req), req, DL_TOP_RELEASE, ino, &who);
}

static void syn_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
			struct fuse_file_info *fi)
{
	(void)attr, (void)to_set, (void)fi;
	refuse(req, DL_TOP_SETATTR, ino, EROFS);
}

/* With an overlay, names are made and removed in a synthetic directory by
 * the overlay's real directory (backing_overlay.c), which refuses the
 * synthetic names themselves; without one, the tree is read-only. */
static const struct dl_tree_ops *overlay(fuse_req_t req)
{
	struct dl_fs *fs = fs_of(req);

	return dl_overlay_on(fs) ? fs->trees[DL_TREE_BACKING] : NULL;
}

static void syn_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      dev_t rdev)
{
	const struct dl_tree_ops *o = overlay(req);

	if (o)
		o->mknod(req, parent, name, mode, rdev);
	else
		refuse(req, DL_TOP_MKNOD, parent, EROFS);
}

static void syn_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	const struct dl_tree_ops *o = overlay(req);

	if (o)
		o->mkdir(req, parent, name, mode);
	else
		refuse(req, DL_TOP_MKNOD, parent, EROFS);
}

static void syn_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	const struct dl_tree_ops *o = overlay(req);

	if (o)
		o->unlink(req, parent, name);
	else
		refuse(req, DL_TOP_UNLINK, parent, EROFS);
}

static void syn_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	const struct dl_tree_ops *o = overlay(req);

	if (o)
		o->rmdir(req, parent, name);
	else
		refuse(req, DL_TOP_UNLINK, parent, EROFS);
}

static void syn_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	const struct dl_tree_ops *o = overlay(req);

	if (o)
		o->symlink(req, link, parent, name);
	else
		refuse(req, DL_TOP_MKNOD, parent, EROFS);
}

/* With an overlay, ops.c hands renames in synthetic directories to the
 * overlay's table: this is the read-only tree's. */
static void syn_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		       const char *newname, unsigned int flags)
{
	(void)name, (void)newparent, (void)newname, (void)flags;
	refuse(req, DL_TOP_RENAME, parent, EROFS);
}

/* A synthetic file gets no second name, overlay or not. */
static void syn_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	(void)ino, (void)newname;
	refuse(req, DL_TOP_MKNOD, newparent, overlay(req) ? EPERM : EROFS);
}

static void syn_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		       struct fuse_file_info *fi)
{
	const struct dl_tree_ops *o = overlay(req);

	if (o)
		o->create(req, parent, name, mode, fi);
	else
		refuse(req, DL_TOP_CREATE, parent, EROFS);
}

static void syn_readlink(fuse_req_t req, fuse_ino_t ino)
{
	refuse(req, DL_TOP_READLINK, ino, EINVAL); /* no synthetic symlinks */
}

/* flush, fsync, fsyncdir and releasedir must be answered: an ENOSYS would
 * make the kernel stop sending them for the whole mount, and backing files
 * need their fsync to reach us. Nothing synthetic is ever dirty. */
static void syn_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)fi;
	refuse(req, DL_TOP_FLUSH, ino, 0);
}

static void syn_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)datasync, (void)fi;
	refuse(req, DL_TOP_FSYNC, ino, 0);
}

static void syn_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dl_client who = dl_client_unpack(fi->fh);

	dl_reply_close(fs_of(req), req, DL_TOP_RELEASEDIR, ino, &who);
}

static void syn_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)datasync, (void)fi;
	refuse(req, DL_TOP_FSYNCDIR, ino, 0);
}

const struct dl_tree_ops dl_tree_synth = {
	.name = "synthetic",
	.attr_timeout = DL_TIMEOUT,
	.stat = syn_stat,
	.path = syn_path,
	.lookup = dl_node_lookup_op,
	.getattr = dl_node_getattr,
	.setattr = syn_setattr,
	.readlink = syn_readlink,
	.mknod = syn_mknod,
	.mkdir = syn_mkdir,
	.unlink = syn_unlink,
	.rmdir = syn_rmdir,
	.symlink = syn_symlink,
	.rename = syn_rename,
	.link = syn_link,
	.open = syn_open,
	.read = syn_read,
	.write = syn_write,
	.flush = syn_flush,
	.release = syn_release,
	.fsync = syn_fsync,
	.opendir = dl_node_opendir,
	.readdir = dl_node_readdir,
	.readdirplus = dl_node_readdirplus,
	.releasedir = syn_releasedir,
	.fsyncdir = syn_fsyncdir,
	.statfs = dl_node_statfs,
	.create = syn_create,
};
