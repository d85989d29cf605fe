/* FUSE operations on sinks (the tree is sink.c's). Writes are accepted,
 * shaped by the write model, counted and discarded but for the headers and
 * small writes a reader must parse (sink_keep.c); a read gets deterministic
 * bytes up to the size written with those laid over, shaped by the read
 * model. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/htab.h"
#include "dliofs/prng.h"
#include "log_i.h"
#include "sink_i.h"

/* What statfs shows: room for any checkpoint. */
#define SK_BLOCK 4096ULL
#define SK_BLOCKS (1ULL << 38) /* 1 PiB */

/* The sink of ino, locked; NULL when ino is not a sink's. */
static struct dl_sink *lock_sink(struct dl_fs *fs, fuse_ino_t ino, struct bk_root **root)
{
	struct bk_root *r = bk_root_of(fs, ino);

	if (!r || !r->sink)
		return NULL;
	if (root)
		*root = r;
	pthread_mutex_lock(&r->sink->lock);
	return r->sink;
}

static void entry_locked(struct bk_root *root, struct sk_node *n, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = bk_ino(root, n->id);
	e->generation = 1;
	sk_fill_stat(n, e->ino, &e->attr);
	e->attr_timeout = BK_TIMEOUT;
	e->entry_timeout = BK_TIMEOUT;
	n->nlookup++;
}

static void abort_entry(struct dl_reply *r)
{
	dl_sink_forget((struct dl_sink *)(uintptr_t)r->fi.fh, bk_id(r->e.ino), 1);
}

/* The sink rides in fi.fh for the abort; a sink file's handle is never
 * used (operations go by inode), so a create may carry it to the kernel. */
static void finish_entry(struct dl_fs *fs, struct dl_reply *r, struct dl_sink *s, int ret)
{
	if (!ret && r->e.ino) {
		r->fi.fh = (uint64_t)(uintptr_t)s;
		r->on_abort = abort_entry;
	}
	dl_reply_finish(fs, r, ret);
}

static int dir_of(struct dl_sink *s, fuse_ino_t ino, struct sk_node **out)
{
	struct sk_node *d = sk_find_id(s, bk_id(ino));

	if (!d)
		return -ESTALE;
	if (!S_ISDIR(d->mode))
		return -ENOTDIR;
	if (d != &s->root && !d->parent)
		return -ENOENT; /* removed */
	*out = d;
	return 0;
}

static void sk_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct dl_fs *fs = bk_fs_of(req);
	struct dl_reply *r = dl_reply_begin(req, DL_R_ENTRY, DL_OP_META, DL_TOP_LOOKUP, parent);
	struct bk_root *root;
	struct dl_sink *s;
	struct sk_node *d, *n;
	int ret;

	if (!r)
		return;
	s = lock_sink(fs, parent, &root);
	if (!s) {
		dl_reply_finish(fs, r, -ESTALE);
		return;
	}
	ret = dir_of(s, parent, &d);
	if (!ret) {
		n = bk_name_ok(name) ? sk_find_name(s, d, name) : NULL;
		if (n)
			entry_locked(root, n, &r->e);
		else
			memset(&r->e, 0, sizeof(r->e)); /* a miss, not cached */
	}
	pthread_mutex_unlock(&s->lock);
	finish_entry(fs, r, s, ret);
}

static void sk_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dl_fs *fs = bk_fs_of(req);
	struct dl_reply *r = dl_reply_begin(req, DL_R_ATTR, DL_OP_META, DL_TOP_GETATTR, ino);
	struct bk_root *root = bk_root_of(fs, ino);
	int ret;

	(void)fi;
	if (!r)
		return;
	ret = root && root->sink ? dl_sink_stat(root->sink, bk_id(ino), ino, &r->st) : -ESTALE;
	r->attr_timeout = BK_TIMEOUT;
	dl_reply_finish(fs, r, ret);
}

static void sk_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *a, int to_set,
		       struct fuse_file_info *fi)
{
	struct dl_fs *fs = bk_fs_of(req);
	struct dl_reply *r = dl_reply_begin(req, DL_R_ATTR, DL_OP_META, DL_TOP_OTHER, ino);
	struct dl_sink *s;
	struct sk_node *n;
	struct timespec now;
	int ret = 0;

	(void)fi;
	if (!r)
		return;
	s = lock_sink(fs, ino, NULL);
	if (!s) {
		dl_reply_finish(fs, r, -ESTALE);
		return;
	}
	n = sk_find_id(s, bk_id(ino));
	sk_now(&now);
	if (!n) {
		ret = -ESTALE;
		goto out;
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		if (S_ISDIR(n->mode)) {
			ret = -EISDIR;
			goto out;
		}
		n->size = (uint64_t)a->st_size;
		sk_keep_truncate(s, n, n->size);
		n->mtime = now;
	}
	if (to_set & FUSE_SET_ATTR_MODE)
		n->mode = (n->mode & S_IFMT) | (a->st_mode & 07777);
	if (to_set & FUSE_SET_ATTR_UID)
		n->uid = a->st_uid;
	if (to_set & FUSE_SET_ATTR_GID)
		n->gid = a->st_gid;
	if (to_set & FUSE_SET_ATTR_ATIME_NOW)
		n->atime = now;
	else if (to_set & FUSE_SET_ATTR_ATIME)
		n->atime = a->st_atim;
	if (to_set & FUSE_SET_ATTR_MTIME_NOW)
		n->mtime = now;
	else if (to_set & FUSE_SET_ATTR_MTIME)
		n->mtime = a->st_mtim;
	n->ctime = now;
	if (to_set & (FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID |
		      FUSE_SET_ATTR_GID | FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW))
		sk_journal_node(s, n);
	sk_fill_stat(n, ino, &r->st);
	r->attr_timeout = BK_TIMEOUT;
out:
	pthread_mutex_unlock(&s->lock);
	dl_reply_finish(fs, r, ret);
}

/* Create a file or directory; with `fi` (create), open it too. */
static void make(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		 struct fuse_file_info *fi)
{
	struct dl_fs *fs = bk_fs_of(req);
	const struct fuse_ctx *c = fuse_req_ctx(req);
	struct dl_reply *r = dl_reply_begin(req, fi ? DL_R_CREATE : DL_R_ENTRY, DL_OP_META,
					  DL_TOP_CREATE, parent);
	struct bk_root *root;
	struct dl_sink *s;
	struct sk_node *d, *n;
	int ret;

	if (!r)
		return;
	s = lock_sink(fs, parent, &root);
	if (!s) {
		dl_reply_finish(fs, r, -ESTALE);
		return;
	}
	ret = dir_of(s, parent, &d);
	if (ret)
		goto out;
	if (!bk_name_ok(name)) {
		ret = -EINVAL;
		goto out;
	}
	if (!S_ISREG(mode) && !S_ISDIR(mode)) {
		ret = -EPERM; /* files and directories only */
		goto out;
	}
	n = sk_find_name(s, d, name);
	if (n && (!fi || (fi->flags & O_EXCL))) {
		ret = -EEXIST;
		goto out;
	}
	if (n && S_ISDIR(n->mode)) {
		ret = -EISDIR;
		goto out;
	}
	if (!n) {
		ret = sk_add(s, d, name, mode, c, &n);
		if (ret)
			goto out;
		sk_journal_node(s, n);
	} else if (fi->flags & O_TRUNC) {
		n->size = 0;
		sk_keep_truncate(s, n, 0);
		sk_journal_node(s, n);
	}
	entry_locked(root, n, &r->e);
	if (fi) {
		fi->direct_io = 1; /* every read reaches the model, none is cached */
		fi->fh = dl_client_pack(&r->client); /* no handle: who opened it */
		r->fi = *fi;
	}
out:
	pthread_mutex_unlock(&s->lock);
	finish_entry(fs, r, s, ret);
}

static void sk_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	(void)rdev;
	make(req, parent, name, mode, NULL);
}

static void sk_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	make(req, parent, name, S_IFDIR | (mode & 07777), NULL);
}

static void sk_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	make(req, parent, name, S_IFREG | (mode & 07777), fi);
}

static void remove_name(fuse_req_t req, fuse_ino_t parent, const char *name, int dir)
{
	struct dl_fs *fs = bk_fs_of(req);
	struct dl_reply *r = dl_reply_begin(req, DL_R_ERR, DL_OP_META, DL_TOP_OTHER, parent);
	struct dl_sink *s;
	struct sk_node *d;
	int ret;

	if (!r)
		return;
	s = lock_sink(fs, parent, NULL);
	if (!s) {
		dl_reply_finish(fs, r, -ESTALE);
		return;
	}
	ret = dir_of(s, parent, &d);
	if (ret)
		goto out;
	ret = sk_remove_locked(s, d, name, dir);
	if (!ret)
		sk_journal_remove(s, d, name);
out:
	pthread_mutex_unlock(&s->lock);
	dl_reply_finish(fs, r, ret);
}

static void sk_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_name(req, parent, name, 0);
}

static void sk_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_name(req, parent, name, 1);
}

static void sk_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	struct dl_fs *fs = bk_fs_of(req);
	struct dl_reply *r = dl_reply_begin(req, DL_R_ERR, DL_OP_META, DL_TOP_OTHER, parent);
	struct dl_sink *s;
	struct sk_node *d, *nd;
	int ret;

	if (!r)
		return;
	if (!dl_bk_same_root(parent, newparent)) {
		dl_reply_finish(fs, r, -EXDEV);
		return;
	}
	s = lock_sink(fs, parent, NULL);
	if (!s) {
		dl_reply_finish(fs, r, -ESTALE);
		return;
	}
	ret = dir_of(s, parent, &d);
	if (!ret)
		ret = dir_of(s, newparent, &nd);
	if (!ret)
		ret = sk_rename_locked(s, d, name, nd, newname, flags);
	if (!ret)
		sk_journal_rename(s, d, name, nd, newname, flags);
	pthread_mutex_unlock(&s->lock);
	dl_reply_finish(fs, r, ret);
}

static void sk_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dl_fs *fs = bk_fs_of(req);
	struct dl_reply *r = dl_reply_begin(req, DL_R_OPEN, DL_OP_META, DL_TOP_OPEN, ino);
	struct dl_sink *s;
	struct sk_node *n;
	int ret = 0;

	if (!r)
		return;
	s = lock_sink(fs, ino, NULL);
	if (!s) {
		dl_reply_finish(fs, r, -ESTALE);
		return;
	}
	n = sk_find_id(s, bk_id(ino));
	if (!n)
		ret = -ESTALE;
	else if (S_ISDIR(n->mode))
		ret = -EISDIR;
	else if (fi->flags & O_TRUNC) {
		n->size = 0;
		sk_keep_truncate(s, n, 0);
	}
	pthread_mutex_unlock(&s->lock);
	fi->direct_io = 1; /* every read reaches the model, none is cached */
	fi->fh = dl_client_pack(&r->client); /* no handle: who opened it */
	r->fi = *fi;
	dl_reply_finish(fs, r, ret);
}

/* The stream a sink file reads back: a function of the seed, the sink and
 * the file's path when read (a checkpoint is usually renamed into place
 * before it is read back), or of its id once it has no name. */
static uint64_t read_key(struct dl_fs *fs, struct dl_sink *s, const struct sk_node *n)
{
	char path[1024];

	if (sk_path_locked(s, n, path, sizeof(path)) < 0)
		return dl_key3(fs->cfg->seed, dl_hash_str(0, s->at), n->id);
	return dl_key3(fs->cfg->seed, dl_hash_str(0, s->at), dl_hash_str(1, path));
}

/* What was written is not kept, only its size and its headers: a read of
 * it gets deterministic bytes of the same size with the kept bytes laid
 * over, shaped by the read model like any read, so a restore reads back a
 * checkpoint that still parses at the storage's speed without the disk. */
static void sk_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct dl_fs *fs = bk_fs_of(req);
	struct dl_reply *r = dl_reply_begin(req, DL_R_BUF, DL_OP_READ, DL_TOP_READ, ino);
	struct bk_root *root;
	struct dl_sink *s;
	struct sk_node *n;
	uint64_t key = 0;
	size_t len = 0;
	int ret = 0;

	(void)fi;
	if (!r)
		return;
	r->preq.off = (uint64_t)off;
	if (off < 0 || size > fs->max_read) {
		dl_reply_finish(fs, r, -EINVAL);
		return;
	}
	s = lock_sink(fs, ino, &root);
	if (!s) {
		dl_reply_finish(fs, r, -ESTALE);
		return;
	}
	n = sk_find_id(s, bk_id(ino));
	if (!n) {
		ret = -ESTALE;
	} else if (S_ISDIR(n->mode)) {
		ret = -EISDIR;
	} else if ((uint64_t)off < n->size) {
		len = n->size - (uint64_t)off < size ? (size_t)(n->size - (uint64_t)off) : size;
		key = read_key(fs, s, n);
	}
	pthread_mutex_unlock(&s->lock);
	if (ret)
		goto out;
	ret = dl_reply_pool_buf(fs, r);
	if (ret)
		goto out;
	dl_prng_fill(key, (uint64_t)off, r->buf, len);
	/* The kept bytes over them (a write meanwhile may or may not show, as
	 * with any file); the node may have gone since. */
	s = lock_sink(fs, ino, NULL);
	if (s) {
		n = sk_find_id(s, bk_id(ino));
		if (n)
			sk_keep_read(n, (uint64_t)off, r->buf, len);
		pthread_mutex_unlock(&s->lock);
	}
	r->len = len;
	r->preq.len = len;
	atomic_fetch_add(&root->rd_bytes, len);
	atomic_fetch_add(&root->rd_ops, 1);
	atomic_fetch_add(&s->read_back, len);
out:
	dl_reply_finish(fs, r, ret);
}

static void sk_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct dl_fs *fs = bk_fs_of(req);
	struct dl_reply *r = dl_reply_begin(req, DL_R_WRITE, DL_OP_WRITE, DL_TOP_WRITE, ino);
	struct bk_root *root;
	struct dl_sink *s;
	struct sk_node *n;
	int ret = 0;

	(void)fi;
	if (!r)
		return;
	r->preq.off = (uint64_t)off;
	r->preq.len = size;
	s = lock_sink(fs, ino, &root);
	if (!s) {
		dl_reply_finish(fs, r, -ESTALE);
		return;
	}
	n = sk_find_id(s, bk_id(ino));
	if (!n || S_ISDIR(n->mode) || off < 0) {
		ret = n ? -EINVAL : -ESTALE;
	} else {
		if ((uint64_t)off + size > n->size)
			n->size = (uint64_t)off + size;
		sk_keep_write(s, n, buf, size, (uint64_t)off, fs->max_read);
		sk_now(&n->mtime);
		n->ctime = n->mtime;
		n->dirty = 1;
	}
	pthread_mutex_unlock(&s->lock);
	if (!ret) {
		r->count = size;
		atomic_fetch_add(&s->discarded, size);
		atomic_fetch_add(&root->wr_bytes, size);
		atomic_fetch_add(&root->wr_ops, 1);
	}
	dl_reply_finish(fs, r, ret);
}

/* flush, fsync, fsyncdir: no data is kept, so every byte is as durable as
 * it will be; with a journal, the node's line is written (a file: its size
 * now) and, for fsync, the journal synced. */
static void sk_ok(fuse_req_t req, fuse_ino_t ino, uint8_t top, int sync)
{
	struct dl_fs *fs = bk_fs_of(req);
	struct dl_reply *r = dl_reply_begin(req, DL_R_ERR, DL_OP_META, top, ino);
	struct dl_sink *s;
	struct sk_node *n;
	int ret = 0, fd = -ENOENT;

	if (!r)
		return;
	s = lock_sink(fs, ino, NULL);
	if (s) {
		n = bk_id(ino) ? sk_find_id(s, bk_id(ino)) : NULL;
		if (n && n->dirty)
			sk_journal_node(s, n);
		if (sync)
			fd = sk_journal_sync_fd(s);
		pthread_mutex_unlock(&s->lock);
		ret = sk_journal_sync(s, fd);
	}
	dl_reply_finish(fs, r, ret);
}

static void sk_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)fi;
	sk_ok(req, ino, DL_TOP_OTHER, 0);
}

static void sk_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)datasync, (void)fi;
	sk_ok(req, ino, DL_TOP_FSYNC, 1);
}

static void sk_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dl_client who = dl_client_unpack(fi->fh);

	dl_reply_close(bk_fs_of(req), req, DL_TOP_RELEASE, ino, &who);
}

static void sk_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dl_fs *fs = bk_fs_of(req);
	struct dl_reply *r = dl_reply_begin(req, DL_R_OPEN, DL_OP_META, DL_TOP_OPENDIR, ino);
	struct dl_sink *s;
	struct sk_node *d;
	int ret;

	if (!r)
		return;
	s = lock_sink(fs, ino, NULL);
	if (!s) {
		dl_reply_finish(fs, r, -ESTALE);
		return;
	}
	ret = dir_of(s, ino, &d);
	pthread_mutex_unlock(&s->lock);
	fi->fh = 0;
	fi->cache_readdir = 0;
	r->fi = *fi;
	dl_reply_finish(fs, r, ret);
}

/* Offsets: 1 after ".", 2 after "..", id + 3 after the child of that id.
 * Children are sorted by id, so a listing resumes at the first child past
 * the last one sent even when entries come and go in between. */
static void sk_list(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, int plus)
{
	struct dl_fs *fs = bk_fs_of(req);
	struct dl_reply *r = dl_reply_begin(req, DL_R_BUF, DL_OP_META, DL_TOP_READDIR, ino);
	struct bk_root *root;
	struct dl_sink *s;
	struct sk_node *d;
	struct stat st;
	size_t used = 0, need;
	int ret;

	if (!r)
		return;
	r->buf = malloc(size);
	s = lock_sink(fs, ino, &root);
	if (!s || !r->buf) {
		if (s)
			pthread_mutex_unlock(&s->lock);
		dl_reply_finish(fs, r, s ? -ENOMEM : -ESTALE);
		return;
	}
	ret = dir_of(s, ino, &d);
	if (ret)
		goto out;
	memset(&st, 0, sizeof(st));
	st.st_mode = S_IFDIR;
	if (off < 1) {
		st.st_ino = ino;
		need = dl_add_dirent(req, r->buf, size, ".", &st, 1, plus);
		if (need > size)
			goto out;
		used += need;
	}
	if (off < 2) {
		/* The parent as stat tells it (the kernel passes it on as is):
		 * the sink's own is the mount's root; its root's id is 0. */
		st.st_ino = d == &s->root ? FUSE_ROOT_ID : bk_ino(root, d->parent->id);
		need = dl_add_dirent(req, (char *)r->buf + used, size - used, "..", &st, 2, plus);
		if (need > size - used)
			goto out;
		used += need;
	}
	for (size_t k = sk_kid_pos(d, off < 2 ? 0 : (uint64_t)off - 2); k < d->nkids; k++) {
		struct sk_node *n = d->kids[k];

		st.st_ino = bk_ino(root, n->id);
		st.st_mode = n->mode & S_IFMT;
		need = dl_add_dirent(req, (char *)r->buf + used, size - used, n->name, &st,
				     (off_t)(n->id + 3), plus);
		if (need > size - used)
			break;
		used += need;
	}
out:
	pthread_mutex_unlock(&s->lock);
	r->len = used;
	dl_reply_finish(fs, r, ret);
}

static void sk_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	(void)fi;
	sk_list(req, ino, size, off, 0);
}

/* Names only: a sink's entries come and go. */
static void sk_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	(void)fi;
	sk_list(req, ino, size, off, 1);
}

static void sk_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)fi;
	dl_reply_err(bk_fs_of(req), req, DL_OP_META, DL_TOP_RELEASEDIR, ino, 0, 1);
}

static void sk_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)datasync, (void)fi;
	sk_ok(req, ino, DL_TOP_FSYNC, 1);
}

static void sk_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct dl_fs *fs = bk_fs_of(req);
	struct dl_reply *r = dl_reply_begin(req, DL_R_STATFS, DL_OP_META, DL_TOP_STATFS, ino);
	struct bk_root *root = bk_root_of(fs, ino);
	size_t count = 0, max = 0;

	if (!r)
		return;
	if (root && root->sink) {
		pthread_mutex_lock(&root->sink->lock);
		count = root->sink->by_id.count;
		max = root->sink->max;
		pthread_mutex_unlock(&root->sink->lock);
	}
	r->sv.f_bsize = SK_BLOCK;
	r->sv.f_frsize = SK_BLOCK;
	r->sv.f_blocks = SK_BLOCKS;
	r->sv.f_bfree = SK_BLOCKS;
	r->sv.f_bavail = SK_BLOCKS;
	r->sv.f_files = max;
	r->sv.f_ffree = max - count;
	r->sv.f_favail = max - count;
	r->sv.f_namemax = 255;
	dl_reply_finish(fs, r, 0);
}

static void sk_refuse(fuse_req_t req, fuse_ino_t ino, int err)
{
	dl_reply_err(bk_fs_of(req), req, DL_OP_META, DL_TOP_OTHER, ino, err, 0);
}

static void sk_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	(void)link, (void)name;
	sk_refuse(req, parent, EPERM); /* a sink holds files and directories only */
}

static void sk_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	(void)newparent, (void)newname;
	sk_refuse(req, ino, EPERM);
}

static void sk_readlink(fuse_req_t req, fuse_ino_t ino)
{
	sk_refuse(req, ino, EINVAL);
}

static int sk_stat(struct dl_fs *fs, fuse_ino_t ino, struct stat *st)
{
	struct bk_root *root = bk_root_of(fs, ino);

	return root && root->sink ? dl_sink_stat(root->sink, bk_id(ino), ino, st) : -ESTALE;
}

static void sk_forget(struct dl_fs *fs, fuse_ino_t ino, uint64_t nlookup)
{
	struct bk_root *root = bk_root_of(fs, ino);

	if (root && root->sink)
		dl_sink_forget(root->sink, bk_id(ino), nlookup);
}

const struct dl_tree_ops dl_tree_sink = {
	.name = "sink",
	.xdev = 1,
	.attr_timeout = BK_TIMEOUT,
	.stat = sk_stat,
	.path = bk_path,
	.forget = sk_forget,
	.lookup = sk_lookup,
	.getattr = sk_getattr,
	.setattr = sk_setattr,
	.readlink = sk_readlink,
	.mknod = sk_mknod,
	.mkdir = sk_mkdir,
	.unlink = sk_unlink,
	.rmdir = sk_rmdir,
	.symlink = sk_symlink,
	.rename = sk_rename,
	.link = sk_link,
	.open = sk_open,
	.read = sk_read,
	.write = sk_write,
	.flush = sk_flush,
	.release = sk_release,
	.fsync = sk_fsync,
	.opendir = sk_opendir,
	.readdir = sk_readdir,
	.readdirplus = sk_readdirplus,
	.releasedir = sk_releasedir,
	.fsyncdir = sk_fsyncdir,
	.statfs = sk_statfs,
	.create = sk_create,
};
