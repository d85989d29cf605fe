/* FUSE operations on open files and directories of real backing
 * directories: open, create, read, write, flush, fsync, release, and the
 * streamed directory listing. What is still open when the daemon stops is
 * closed with it (bk_open lists). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backing_i.h"

/* What an open directory carries in fi->fh. */
struct bk_dir {
	struct bk_open link;	/* first: the list holds &d->link == d */
	struct bk_root *root;
	pthread_mutex_t lock;
	DIR *dp;
	off_t pos;	/* where the stream stands: the offset after the last entry sent */
};

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

void bk_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dl_fs *fs = bk_fs_of(req);
	struct dl_reply *r = dl_reply_begin(req, DL_R_OPEN, DL_OP_META, DL_TOP_OPEN, ino);
	struct bk_file *f = NULL;
	struct bk_root *root;
	struct bk_node *n;
	char proc[64];
	int ret, nfd = -1;

	if (!r)
		return;
	ret = bk_node_of(fs, ino, &root, &n);
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
	ret = bk_node_ok(root, n);
	if (ret)
		goto out;
	f = new_file(root);
	if (!f) {
		ret = -ENOMEM;
		goto out;
	}
	nfd = bk_node_fd(root, n);
	if (nfd < 0) {
		ret = nfd;
		goto out;
	}
	bk_proc_path(nfd, proc, sizeof(proc));
	f->fd = open(proc, real_flags(fi->flags));
	if (f->fd < 0 && (errno == EMFILE || errno == ENFILE)) {
		/* Give back half of the cache and try once more. */
		bk_fds_relieve(root);
		f->fd = open(proc, real_flags(fi->flags));
	}
	if (f->fd < 0) {
		ret = -errno;
		bk_fd_error(root, -ret, "opening a file");
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
	if (nfd >= 0)
		close(nfd);
	free_file(f);
	bk_finish(fs, r, ret);
}

void bk_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
	       struct fuse_file_info *fi)
{
	struct dl_fs *fs = bk_fs_of(req);
	struct dl_reply *r = dl_reply_begin(req, DL_R_CREATE, DL_OP_META, DL_TOP_CREATE, parent);
	struct bk_file *f = NULL;
	struct bk_creds cr;
	struct bk_root *root;
	struct bk_node *p;
	char proc[64];
	int ret, pfd, depth, dirfd = -1;

	if (!r)
		return;
	ret = bk_parent_of(fs, parent, name, 1, -EEXIST, &root, &p);
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
	ret = bk_dir_ok(root, p, &depth);
	if (!ret) {
		dirfd = bk_node_fd(root, p);
		ret = dirfd < 0 ? dirfd : 0;
	}
	if (!ret)
		ret = bk_creds_enter(req, &cr);
	if (!ret) {
		/* As the caller, in one call: the kernel checks the caller's
		 * rights on whatever is at the name when it runs (another
		 * user's file that took the name meanwhile is refused), honours
		 * the caller's O_EXCL, and a new file is born the caller's.
		 * O_NOFOLLOW: a symlink in the way is an error (ELOOP), never a
		 * path. */
		f->fd = openat(dirfd, name, real_flags(fi->flags) | O_CREAT | O_NOFOLLOW |
			       (fi->flags & O_EXCL), mode);
		if (f->fd < 0)
			ret = -errno;
		bk_creds_leave(&cr);
	}
	pthread_mutex_unlock(&root->ns_lock);
	if (dirfd >= 0)
		close(dirfd);
	if (ret) {
		f->fd = -1;
		goto fail;
	}
	bk_proc_path(f->fd, proc, sizeof(proc));
	pfd = open(proc, O_PATH | O_CLOEXEC);
	if (pfd < 0) {
		ret = -errno;
		bk_fd_error(root, -ret, "creating a file");
		goto fail;
	}
	ret = bk_entry_of(root, pfd, &r->e);
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

void bk_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct dl_fs *fs = bk_fs_of(req);
	struct bk_file *f = (struct bk_file *)(uintptr_t)fi->fh;
	struct dl_reply *r = dl_reply_begin(req, DL_R_BUF, DL_OP_READ, DL_TOP_READ, ino);
	ssize_t n;
	int ret = 0;

	if (!r)
		return;
	r->preq.off = (uint64_t)off;
	if (off < 0 || size > fs->max_read) {
		ret = -EINVAL;
		goto out;
	}
	ret = dl_reply_pool_buf(fs, r);
	if (ret)
		goto out;
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

void bk_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
	      struct fuse_file_info *fi)
{
	struct dl_fs *fs = bk_fs_of(req);
	struct bk_file *f = (struct bk_file *)(uintptr_t)fi->fh;
	struct dl_reply *r = dl_reply_begin(req, DL_R_WRITE, DL_OP_WRITE, DL_TOP_WRITE, ino);
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

void bk_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dl_fs *fs = bk_fs_of(req);
	struct bk_file *f = (struct bk_file *)(uintptr_t)fi->fh;
	struct dl_reply *r = dl_reply_begin(req, DL_R_ERR, DL_OP_META, DL_TOP_OTHER, ino);
	int ret = 0, fd;

	if (!r)
		return;
	/* What close() would report on the real file (NFS reports write errors here). */
	fd = dup(f->fd);
	if (fd < 0 || close(fd))
		ret = -errno;
	bk_finish(fs, r, ret);
}

void bk_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct dl_fs *fs = bk_fs_of(req);
	struct bk_file *f = (struct bk_file *)(uintptr_t)fi->fh;
	struct dl_reply *r = dl_reply_begin(req, DL_R_ERR, DL_OP_META, DL_TOP_FSYNC, ino);
	int ret;

	if (!r)
		return;
	ret = (datasync ? fdatasync(f->fd) : fsync(f->fd)) ? -errno : 0;
	bk_finish(fs, r, ret);
}

void bk_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct bk_file *f = (struct bk_file *)(uintptr_t)fi->fh;
	struct dl_client who = f ? f->who : (struct dl_client){0};

	free_file(f);
	dl_reply_close(bk_fs_of(req), req, DL_TOP_RELEASE, ino, &who);
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

void bk_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dl_fs *fs = bk_fs_of(req);
	struct dl_reply *r = dl_reply_begin(req, DL_R_OPEN, DL_OP_META, DL_TOP_OPENDIR, ino);
	struct bk_dir *d = NULL;
	struct bk_root *root;
	struct bk_node *n;
	int ret, fd, depth;

	if (!r)
		return;
	ret = bk_node_of(fs, ino, &root, &n);
	if (ret)
		goto out;
	if (!S_ISDIR(n->type)) {
		ret = -ENOTDIR;
		goto out;
	}
	ret = bk_dir_ok(root, n, &depth);
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
	fd = bk_node_fd(root, n);
	if (fd >= 0) {
		int nfd = fd;

		fd = openat(nfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			fd = -errno;
			bk_fd_error(root, -fd, "opening a directory");
		}
		close(nfd);
	}
	if (fd < 0) {
		ret = fd;
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

/* A name's inode number as stat tells it through the mount: the real one
 * (the same on every node whose mount shows the same shared directory), but
 * for the backing directory itself, which the mount numbers from the config
 * (bk_ino(r, 0)) and whose parent is the mount's root. */
static ino_t dirent_ino(struct dl_fs *fs, struct bk_root *r, struct bk_node *n,
			const struct dirent *de)
{
	if (de->d_name[0] != '.' || (de->d_name[1] && strcmp(de->d_name, "..")))
		return de->d_ino;
	if (n == &r->top && de->d_name[1])
		return FUSE_ROOT_ID;
	if (r->cfg->at[0])
		return de->d_ino == r->top.ino ? bk_ino(r, 0) : de->d_ino;
	/* The overlay's ".." may be a synthetic directory (its top: the
	 * mount's root), whose number stat gives. */
	return de->d_name[1] ? bk_overlay_parent_ino(fs, r, n, de->d_ino) : de->d_ino;
}

/* Streamed: each call reads only what fits, and offsets are the real
 * directory's own (d_off), so a listing resumes where it stopped. A
 * readdirplus gets names only (the entries change under us: no caching). */
static void list_dir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		     struct fuse_file_info *fi, int plus)
{
	struct dl_fs *fs = bk_fs_of(req);
	struct bk_dir *d = (struct bk_dir *)(uintptr_t)fi->fh;
	struct dl_reply *r = dl_reply_begin(req, DL_R_BUF, DL_OP_META, DL_TOP_READDIR, ino);
	struct bk_root *root;
	struct bk_node *n;
	struct stat st;
	size_t used = 0;
	int ret, depth;

	if (!r)
		return;
	/* A listing is of names: the directory must still be ours. */
	ret = bk_node_of(fs, ino, &root, &n);
	if (!ret)
		ret = bk_dir_ok(root, n, &depth);
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
		st.st_ino = dirent_ino(fs, root, n, de);
		st.st_mode = DTTOIF(de->d_type);
		need = dl_add_dirent(req, (char *)r->buf + used, size - used, de->d_name, &st,
				     de->d_off, plus);
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

void bk_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi)
{
	list_dir(req, ino, size, off, fi, 0);
}

void bk_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	list_dir(req, ino, size, off, fi, 1);
}

void bk_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	free_dir((struct bk_dir *)(uintptr_t)fi->fh);
	dl_reply_err(bk_fs_of(req), req, DL_OP_META, DL_TOP_RELEASEDIR, ino, 0, 1);
}

void bk_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct dl_fs *fs = bk_fs_of(req);
	struct bk_dir *d = (struct bk_dir *)(uintptr_t)fi->fh;
	struct dl_reply *r = dl_reply_begin(req, DL_R_ERR, DL_OP_META, DL_TOP_FSYNC, ino);
	int ret;

	if (!r)
		return;
	ret = (datasync ? fdatasync(dirfd(d->dp)) : fsync(dirfd(d->dp))) ? -errno : 0;
	bk_finish(fs, r, ret);
}
