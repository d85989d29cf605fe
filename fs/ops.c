/* FUSE glue: turn namespace/format results into replies. Errors are negative
 * errno inside the daemon and become positive only here. Every answer, the
 * refusals, closes and control files included, goes through one reply path
 * (reply.c): the pacer may delay it, statistics and the trace see it (control
 * traffic excepted, by its flag), workers never wait. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backing.h"
#include "control.h"
#include "fs_i.h"
#include "reply.h"
#include "served.h"

/* Content and names never change while mounted: let the kernel keep them. */
#define DL_TIMEOUT 86400.0

/* What an open file carries in fi->fh. */
struct dl_handle {
	struct dl_handle *prev, *next;	/* fs->handles */
	struct dl_fs *fs;
	int ctl;		/* a control file */
	struct dl_client who;	/* who opened it (the close is theirs) */
	struct dl_ctl_handle c;	/* its snapshot and pending write */
	struct dl_file f;	/* a synthetic file */
	int readahead;		/* emulate the page cache's readahead for its reads */
};

static struct dl_fs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* Inodes of backing directories are served by their own operations
 * (fs/backing_ops.c, fs/sink_ops.c): hand the request over and return. */
#define SERVE_BACKING(fs, ino, op, ...)                                  \
	do {                                                             \
		if (dl_bk_is((fs), (ino))) {                             \
			dl_bk_ops((fs), (ino))->op(__VA_ARGS__);          \
			return;                                          \
		}                                                        \
	} while (0)

/* A control inode (.dliofs/ and its files): not storage traffic. */
static int is_ctl(struct dl_fs *fs, fuse_ino_t ino)
{
	struct dl_node n;

	return dl_node_from_ino(fs, ino, &n) == 0 && n.type == DL_NODE_CTL;
}

/* Answer a control request with an error (or 0). */
static void ctl_err(fuse_req_t req, int err)
{
	struct dl_reply *r = dl_reply_ctl(req, DL_R_ERR);

	if (!r) {
		dl_reply_enomem(req);
		return;
	}
	r->err = err;
	dl_reply_submit(fuse_req_userdata(req), r);
}

/* A call the synthetic tree refuses (or answers with nothing to do): counted
 * and traced as what it is, but no device is involved. */
static void refuse(fuse_req_t req, uint8_t top, fuse_ino_t ino, int err)
{
	struct dl_fs *fs = fs_of(req);

	if (is_ctl(fs, ino))
		ctl_err(req, err);
	else
		dl_reply_err(fs, req, DL_OP_META, top, ino, err, 1);
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct dl_fs *fs = userdata;

	/* Ask for 1 MiB requests: libfuse derives max_pages from max_write. */
	conn->max_write = (unsigned)fs->max_read;
	conn->max_readahead = (unsigned)fs->max_read;
	conn->max_background = 64;
	conn->congestion_threshold = 48;
	/* readdirplus when a listing is followed by lookups (the kernel's
	 * heuristic): a scan-then-open loader saves a round trip per file. */
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
	if (conn->capable & FUSE_CAP_READDIRPLUS_AUTO)
		conn->want |= FUSE_CAP_READDIRPLUS_AUTO;
	conn->want &= ~(unsigned)FUSE_CAP_AUTO_INVAL_DATA;
	if (conn->capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
	if (conn->capable & FUSE_CAP_ASYNC_DIO)
		conn->want |= FUSE_CAP_ASYNC_DIO;
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	/* flock/fcntl locks stay kernel-local (h5py locks files it opens). */
	conn->want &= ~(unsigned)FUSE_CAP_FLOCK_LOCKS;
	conn->want &= ~(unsigned)FUSE_CAP_POSIX_LOCKS;
}

static int fill_entry(struct dl_fs *fs, const struct dl_node *n, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = dl_node_ino(n);
	e->generation = 1;
	/* Control files change: never let the kernel cache their attributes.
	 * A backing directory's change with what is written into it. */
	if (n->type == DL_NODE_CTL)
		e->attr_timeout = 0;
	else
		e->attr_timeout = n->type == DL_NODE_BACKING ? 1.0 : DL_TIMEOUT;
	e->entry_timeout = DL_TIMEOUT;
	return dl_node_stat(fs, n, &e->attr);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct dl_fs *fs = fs_of(req);
	struct dl_reply *r;
	struct dl_node p, c;
	int ret;

	SERVE_BACKING(fs, parent, lookup, req, parent, name);
	ret = dl_node_from_ino(fs, parent, &p);
	if (!ret)
		ret = dl_node_lookup(fs, &p, name, &c);
	if ((!ret && c.type == DL_NODE_CTL) || p.type == DL_NODE_CTL)
		r = dl_reply_ctl(req, DL_R_ENTRY);
	else
		r = dl_reply_new(req, DL_R_ENTRY, DL_OP_META, DL_TOP_LOOKUP);
	if (!r) {
		dl_reply_enomem(req);
		return;
	}
	r->preq.file_id = parent;
	if (ret == -ENOENT) {
		/* Cache the miss too: loaders probe names that never exist. */
		memset(&r->e, 0, sizeof(r->e));
		r->e.entry_timeout = DL_TIMEOUT;
		ret = 0;
	} else if (!ret) {
		ret = fill_entry(fs, &c, &r->e);
		r->preq.inode = r->e.ino; /* the inode a real lookup reads */
	}
	if (ret) {
		r->kind = DL_R_ERR;
		r->err = -ret;
	}
	dl_reply_submit(fs, r);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dl_fs *fs = fs_of(req);
	struct dl_reply *r;
	struct dl_node n;
	int ret;

	SERVE_BACKING(fs, ino, getattr, req, ino, fi);
	ret = dl_node_from_ino(fs, ino, &n);
	if (!ret && n.type == DL_NODE_CTL)
		r = dl_reply_ctl(req, DL_R_ATTR);
	else
		r = dl_reply_new(req, DL_R_ATTR, DL_OP_META, DL_TOP_GETATTR);
	if (!r) {
		dl_reply_enomem(req);
		return;
	}
	r->preq.file_id = ino;
	r->preq.inode = ino;
	if (!ret)
		ret = dl_node_stat(fs, &n, &r->st);
	r->attr_timeout = n.type == DL_NODE_CTL ? 0 : DL_TIMEOUT;
	if (ret) {
		r->kind = DL_R_ERR;
		r->err = -ret;
	}
	dl_reply_submit(fs, r);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dl_fs *fs = fs_of(req);
	struct dl_reply *r;
	struct dl_node n;
	int ret;

	SERVE_BACKING(fs, ino, opendir, req, ino, fi);
	ret = dl_node_from_ino(fs, ino, &n);
	if (!ret && (n.type == DL_NODE_FILE || (n.type == DL_NODE_CTL && n.index != DL_CTL_DIR)))
		ret = -ENOTDIR;
	if (ret) {
		refuse(req, DL_TOP_OPENDIR, ino, -ret);
		return;
	}
	if (n.type == DL_NODE_CTL)
		r = dl_reply_ctl(req, DL_R_OPEN);
	else
		r = dl_reply_new(req, DL_R_OPEN, DL_OP_META, DL_TOP_OPENDIR);
	if (!r) {
		dl_reply_enomem(req);
		return;
	}
	r->preq.file_id = ino;
	r->preq.inode = ino;
	r->fi = *fi;
	r->fi.cache_readdir = 1;
	r->fi.keep_cache = 1;
	r->fi.fh = dl_client_pack(&r->client); /* who opened it: the close is theirs */
	dl_reply_submit(fs, r);
}

static int is_regular(const struct dl_node *n)
{
	return n->type == DL_NODE_FILE || (n->type == DL_NODE_CTL && n->index != DL_CTL_DIR);
}

/* Offsets: 1 is after ".", 2 after "..", k + 3 after child k. Entries are
 * produced on the fly, so a million-file directory needs no allocation.
 * readdirplus (the kernel asks for it when a listing is followed by
 * lookups, as ImageFolder's scan then open) returns each child's entry and
 * attributes too: its lookup round trip is saved. Synthetic inodes are
 * computed, so the lookups it hands the kernel need no bookkeeping. */
static void list_dir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, int plus)
{
	struct dl_fs *fs = fs_of(req);
	struct dl_reply *r;
	struct dl_node dir, child;
	struct fuse_entry_param e;
	char name[256];
	struct stat st;
	size_t used = 0;
	int ret;

	ret = dl_node_from_ino(fs, ino, &dir);
	if (!ret && dir.type == DL_NODE_CTL)
		r = dl_reply_ctl(req, DL_R_BUF);
	else
		r = dl_reply_new(req, DL_R_BUF, DL_OP_META, DL_TOP_READDIR);
	if (!r) {
		dl_reply_enomem(req);
		return;
	}
	r->preq.file_id = ino;
	if (ret)
		goto out;
	r->buf = malloc(size);
	if (!r->buf) {
		ret = -ENOMEM;
		goto out;
	}
	memset(&st, 0, sizeof(st));
	for (uint64_t pos = (uint64_t)off;; pos++) {
		size_t need;

		if (pos == 0) {
			st.st_ino = ino;
			st.st_mode = S_IFDIR;
			strcpy(name, ".");
		} else if (pos == 1) {
			st.st_ino = FUSE_ROOT_ID; /* the kernel fixes up ".." itself */
			st.st_mode = S_IFDIR;
			strcpy(name, "..");
		} else {
			ret = dl_node_child(fs, &dir, pos - 2, &child, name, sizeof(name));
			if (ret == -ENOENT)
				break;
			if (ret)
				goto out;
			st.st_ino = dl_node_ino(&child);
			st.st_mode = is_regular(&child) ? S_IFREG : S_IFDIR;
		}
		if (plus && pos >= 2) {
			ret = fill_entry(fs, &child, &e);
			if (ret)
				goto out;
			need = fuse_add_direntry_plus(req, (char *)r->buf + used, size - used, name,
						      &e, (off_t)pos + 1);
		} else {
			/* ".", "..": the kernel links neither. */
			need = dl_add_dirent(req, (char *)r->buf + used, size - used, name, &st,
					     (off_t)pos + 1, plus);
		}
		if (need > size - used)
			break;
		used += need;
	}
	ret = 0;
	r->len = used;
out:
	if (ret) {
		r->kind = DL_R_ERR;
		r->err = -ret;
	}
	dl_reply_submit(fs, r);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	SERVE_BACKING(fs_of(req), ino, readdir, req, ino, size, off, fi);
	list_dir(req, ino, size, off, 0);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	SERVE_BACKING(fs_of(req), ino, readdirplus, req, ino, size, off, fi);
	list_dir(req, ino, size, off, 1);
}

static struct dl_handle *new_handle(struct dl_fs *fs)
{
	struct dl_handle *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->fs = fs;
	pthread_mutex_lock(&fs->handles_lock);
	h->next = fs->handles;
	if (h->next)
		h->next->prev = h;
	fs->handles = h;
	pthread_mutex_unlock(&fs->handles_lock);
	return h;
}

static void free_handle(struct dl_handle *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->fs->handles_lock);
	if (h->prev)
		h->prev->next = h->next;
	else
		h->fs->handles = h->next;
	if (h->next)
		h->next->prev = h->prev;
	pthread_mutex_unlock(&h->fs->handles_lock);
	if (h->ctl)
		dl_ctl_handle_free(&h->c);
	free(h);
}

void dl_fs_free_handles(struct dl_fs *fs)
{
	while (fs->handles)
		free_handle(fs->handles);
}

static void abort_open(struct dl_reply *r)
{
	free_handle((struct dl_handle *)(uintptr_t)r->fi.fh);
}

static int open_ctl(fuse_req_t req, const struct dl_node *n, struct fuse_file_info *fi,
		    struct dl_handle *h)
{
	const struct fuse_ctx *c = fuse_req_ctx(req);

	h->ctl = 1;
	fi->direct_io = 1; /* content changes; no page cache, no size needed */
	return dl_ctl_open(fs_of(req), (unsigned)n->index, fi->flags, c ? c->uid : 0,
			   c ? c->gid : 0, &h->c);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dl_fs *fs = fs_of(req);
	struct dl_handle *h = NULL;
	struct dl_reply *r = NULL;
	struct dl_node n;
	int ret;

	SERVE_BACKING(fs, ino, open, req, ino, fi);
	ret = dl_node_from_ino(fs, ino, &n);
	if (!ret && n.type == DL_NODE_CTL)
		r = dl_reply_ctl(req, DL_R_OPEN);
	else
		r = dl_reply_new(req, DL_R_OPEN, DL_OP_META, DL_TOP_OPEN);
	h = new_handle(fs);
	if (!h || !r) {
		free_handle(h);
		free(r);
		dl_reply_enomem(req);
		return;
	}
	r->preq.file_id = ino;
	r->preq.inode = ino;
	if (ret)
		goto out;
	if (n.type == DL_NODE_CTL) {
		ret = open_ctl(req, &n, fi, h);
		if (ret)
			goto out;
	} else {
		if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
			/* A refusal costs no device time: the storage answers at once. */
			r->preq.flags |= DL_PREQ_NODEV;
			ret = -EROFS;
			goto out;
		}
		ret = dl_node_file(fs, &n, &h->f);
		if (ret)
			goto out;
		/* Decided per open from the policy in force now, so a live
		 * change of cache.policy takes effect for the next open. */
		if (dl_fs_direct_io(fs)) {
			fi->direct_io = 1;
			/* The reader's calls reach us as made: unless it asked for
			 * O_DIRECT, a device would see them through readahead. With
			 * the page cache on, the kernel's requests are that already. */
			h->readahead = !(fi->flags & O_DIRECT);
		} else {
			fi->keep_cache = 1; /* bytes never change: reuse cached pages */
			/* Its pages may now stay in the kernel: remember it, so a
			 * cache drop can invalidate them. */
			dl_served_mark(fs->served, &n);
		}
	}
	/* Data files need no flush (nothing is ever dirty); a control file's
	 * close commits what was written and reports it. */
	fi->noflush = !h->ctl;
	h->who = r->client;
	fi->fh = (uint64_t)(uintptr_t)h;
	r->fi = *fi;
	r->on_abort = abort_open;
	dl_reply_submit(fs, r);
	return;
out:
	free_handle(h);
	r->kind = DL_R_ERR;
	r->err = -ret;
	dl_reply_submit(fs, r);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct dl_fs *fs = fs_of(req);
	struct dl_handle *h = (struct dl_handle *)(uintptr_t)fi->fh;
	struct dl_reply *r;
	uint64_t fsize;
	size_t len;
	int ret = 0;

	SERVE_BACKING(fs, ino, read, req, ino, size, off, fi);
	if (h->ctl) {
		/* Control files are not storage traffic: answered at once. */
		r = dl_reply_ctl(req, DL_R_BUF);
		if (!r) {
			dl_reply_enomem(req);
			return;
		}
		ret = off < 0 ? -EINVAL
			      : dl_ctl_handle_read(&h->c, (uint64_t)off, size, (char **)&r->buf,
						   &r->len);
		goto out;
	}
	r = dl_reply_new(req, DL_R_BUF, DL_OP_READ, DL_TOP_READ);
	fsize = h->f.size;
	if (!r) {
		dl_reply_enomem(req);
		return;
	}
	r->preq.file_id = ino;
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
	if (ret) {
		r->kind = DL_R_ERR;
		r->err = -ret;
	}
	dl_reply_submit(fs, r);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct dl_fs *fs = fs_of(req);
	struct dl_handle *h = (struct dl_handle *)(uintptr_t)fi->fh;
	struct dl_reply *r;
	int ret;

	SERVE_BACKING(fs, ino, write, req, ino, buf, size, off, fi);
	if (!h || !h->ctl) {
		dl_reply_err(fs, req, DL_OP_WRITE, DL_TOP_WRITE, ino, EROFS, 1);
		return;
	}
	r = dl_reply_ctl(req, DL_R_WRITE);
	if (!r) {
		dl_reply_enomem(req);
		return;
	}
	ret = dl_ctl_write(fs, &h->c, buf, size);
	if (ret) {
		r->kind = DL_R_ERR;
		r->err = -ret;
	}
	r->count = size;
	dl_reply_submit(fs, r);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dl_fs *fs = fs_of(req);
	struct dl_handle *h = (struct dl_handle *)(uintptr_t)fi->fh;

	SERVE_BACKING(fs, ino, release, req, ino, fi);
	if (h && h->ctl) {
		/* A write the kernel split and nobody committed: apply it now. */
		dl_ctl_commit(fs, &h->c);
		free_handle(h);
		ctl_err(req, 0);
		return;
	}
	{
		struct dl_client who = h ? h->who : (struct dl_client){0};

		free_handle(h);
		dl_reply_close(fs, req, DL_TOP_RELEASE, ino, &who);
	}
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct dl_fs *fs = fs_of(req);
	struct dl_reply *r;
	uint64_t files = 0;

	SERVE_BACKING(fs, ino, statfs, req, ino);
	r = dl_reply_new(req, DL_R_STATFS, DL_OP_META, DL_TOP_STATFS);
	if (!r) {
		dl_reply_enomem(req);
		return;
	}
	r->preq.file_id = ino;
	for (unsigned i = 0; i < fs->cfg->ndatasets; i++)
		for (unsigned s = 0; s < DL_SPLIT__COUNT; s++)
			files += fs->cfg->datasets[i].files[s];
	r->sv.f_bsize = 4096;
	r->sv.f_frsize = 4096;
	r->sv.f_files = files;
	r->sv.f_namemax = 255;
	dl_reply_submit(fs, r);
}

/* Synthetic datasets are read-only; control files accept truncation (shell
 * redirections open with O_TRUNC) and nothing else. */
static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	struct dl_fs *fs = fs_of(req);
	struct dl_reply *r;
	struct dl_node n;

	SERVE_BACKING(fs, ino, setattr, req, ino, attr, to_set, fi);
	if (dl_node_from_ino(fs, ino, &n) == 0 && n.type == DL_NODE_CTL && n.index != DL_CTL_DIR &&
	    (to_set & ~(FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME |
			FUSE_SET_ATTR_ATIME_NOW | FUSE_SET_ATTR_MTIME_NOW | FUSE_SET_ATTR_CTIME)) ==
		    0) {
		r = dl_reply_ctl(req, DL_R_ATTR);
		if (!r) {
			dl_reply_enomem(req);
			return;
		}
		dl_node_stat(fs, &n, &r->st);
		dl_reply_submit(fs, r);
		return;
	}
	refuse(req, DL_TOP_SETATTR, ino, EROFS);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	SERVE_BACKING(fs_of(req), parent, mknod, req, parent, name, mode, rdev);
	refuse(req, DL_TOP_MKNOD, parent, EROFS);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	SERVE_BACKING(fs_of(req), parent, mkdir, req, parent, name, mode);
	refuse(req, DL_TOP_MKNOD, parent, EROFS);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	SERVE_BACKING(fs_of(req), parent, unlink, req, parent, name);
	refuse(req, DL_TOP_UNLINK, parent, EROFS);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	SERVE_BACKING(fs_of(req), parent, rmdir, req, parent, name);
	refuse(req, DL_TOP_UNLINK, parent, EROFS);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	SERVE_BACKING(fs_of(req), parent, symlink, req, link, parent, name);
	refuse(req, DL_TOP_MKNOD, parent, EROFS);
}

/* Renames and links stay inside one backing directory; between it and
 * anything else (another one, or the synthetic tree) they cross devices. */
static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	struct dl_fs *fs = fs_of(req);
	int a = dl_bk_is(fs, parent), b = dl_bk_is(fs, newparent);

	if (a && b && dl_bk_same_root(parent, newparent)) {
		dl_bk_ops(fs, parent)->rename(req, parent, name, newparent, newname, flags);
		return;
	}
	refuse(req, DL_TOP_RENAME, parent, a || b ? EXDEV : EROFS);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct dl_fs *fs = fs_of(req);
	int a = dl_bk_is(fs, ino), b = dl_bk_is(fs, newparent);

	if (a && b && dl_bk_same_root(ino, newparent)) {
		dl_bk_ops(fs, ino)->link(req, ino, newparent, newname);
		return;
	}
	refuse(req, DL_TOP_MKNOD, newparent, a || b ? EXDEV : EROFS);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	SERVE_BACKING(fs_of(req), parent, create, req, parent, name, mode, fi);
	refuse(req, DL_TOP_CREATE, parent, EROFS);
}

/* Synthetic inodes are computed, so there is nothing to forget. A forget
 * has no answer. */
static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct dl_fs *fs = fs_of(req);

	if (dl_bk_is(fs, ino))
		dl_bk_forget(fs, ino, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct dl_fs *fs = fs_of(req);

	for (size_t i = 0; i < count; i++)
		if (dl_bk_is(fs, forgets[i].ino))
			dl_bk_forget(fs, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	SERVE_BACKING(fs_of(req), ino, readlink, req, ino);
	refuse(req, DL_TOP_READLINK, ino, EINVAL); /* no synthetic symlinks */
}

/* flush, fsync, fsyncdir and releasedir must be answered for synthetic
 * inodes too: an ENOSYS would make the kernel stop sending them for the
 * whole mount, and backing files need their fsync to reach us. A control
 * file's fsync commits its pending write and answers with the result. */
static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dl_fs *fs = fs_of(req);
	struct dl_handle *h = (struct dl_handle *)(uintptr_t)fi->fh;

	SERVE_BACKING(fs, ino, flush, req, ino, fi);
	if (h && h->ctl) {
		ctl_err(req, -dl_ctl_commit(fs, &h->c));
		return;
	}
	refuse(req, DL_TOP_FLUSH, ino, 0);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct dl_fs *fs = fs_of(req);
	struct dl_handle *h = (struct dl_handle *)(uintptr_t)fi->fh;

	SERVE_BACKING(fs, ino, fsync, req, ino, datasync, fi);
	if (h && h->ctl) {
		ctl_err(req, -dl_ctl_commit(fs, &h->c));
		return;
	}
	refuse(req, DL_TOP_FSYNC, ino, 0); /* nothing synthetic is ever dirty */
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dl_client who = dl_client_unpack(fi->fh);

	SERVE_BACKING(fs_of(req), ino, releasedir, req, ino, fi);
	if (is_ctl(fs_of(req), ino))
		ctl_err(req, 0);
	else
		dl_reply_close(fs_of(req), req, DL_TOP_RELEASEDIR, ino, &who);
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	SERVE_BACKING(fs_of(req), ino, fsyncdir, req, ino, datasync, fi);
	refuse(req, DL_TOP_FSYNCDIR, ino, 0);
}

const struct fuse_lowlevel_ops dl_fs_ops = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.readlink = op_readlink,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.symlink = op_symlink,
	.rename = op_rename,
	.link = op_link,
	.open = op_open,
	.read = op_read,
	.write = op_write,
	.flush = op_flush,
	.release = op_release,
	.fsync = op_fsync,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.releasedir = op_releasedir,
	.fsyncdir = op_fsyncdir,
	.statfs = op_statfs,
	.create = op_create,
};
