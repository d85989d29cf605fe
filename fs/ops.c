/* FUSE glue: turn namespace/format results into replies. Errors are negative
 * errno inside the daemon and become positive only in reply_err(). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs_i.h"

/* Content and names never change while mounted: let the kernel keep them. */
#define DL_TIMEOUT 86400.0

static struct dl_fs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static void reply_err(fuse_req_t req, int neg_errno)
{
	fuse_reply_err(req, -neg_errno);
}

static void *buf_get(struct dl_fs *fs)
{
	void *b = NULL;

	pthread_mutex_lock(&fs->buf_lock);
	if (fs->nbufs)
		b = fs->bufs[--fs->nbufs];
	pthread_mutex_unlock(&fs->buf_lock);
	if (!b && posix_memalign(&b, 4096, fs->max_read))
		b = NULL;
	return b;
}

static void buf_put(struct dl_fs *fs, void *b)
{
	pthread_mutex_lock(&fs->buf_lock);
	if (fs->nbufs < fs->bufs_cap) {
		fs->bufs[fs->nbufs++] = b;
		b = NULL;
	}
	pthread_mutex_unlock(&fs->buf_lock);
	free(b);
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct dl_fs *fs = userdata;

	/* Ask for 1 MiB requests: libfuse derives max_pages from max_write. */
	conn->max_write = (unsigned)fs->max_read;
	conn->max_readahead = (unsigned)fs->max_read;
	conn->max_background = 64;
	conn->congestion_threshold = 48;
	conn->want &= ~(unsigned)FUSE_CAP_READDIRPLUS;
	conn->want &= ~(unsigned)FUSE_CAP_AUTO_INVAL_DATA;
	if (conn->capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
	if (conn->capable & FUSE_CAP_ASYNC_DIO)
		conn->want |= FUSE_CAP_ASYNC_DIO;
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	if (conn->capable & FUSE_CAP_FLOCK_LOCKS)
		conn->want &= ~(unsigned)FUSE_CAP_FLOCK_LOCKS; /* kernel-local flock: h5py locks */
	if (conn->capable & FUSE_CAP_POSIX_LOCKS)
		conn->want &= ~(unsigned)FUSE_CAP_POSIX_LOCKS;
}

static int fill_entry(struct dl_fs *fs, const struct dl_node *n, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = dl_node_ino(n);
	e->generation = 1;
	e->attr_timeout = DL_TIMEOUT;
	e->entry_timeout = DL_TIMEOUT;
	return dl_node_stat(fs, n, &e->attr);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct dl_fs *fs = fs_of(req);
	struct fuse_entry_param e;
	struct dl_node p, c;
	int ret;

	ret = dl_node_from_ino(fs, parent, &p);
	if (ret)
		goto out;
	ret = dl_node_lookup(fs, &p, name, &c);
	if (ret == -ENOENT) {
		/* Cache the miss too: loaders probe names that never exist. */
		memset(&e, 0, sizeof(e));
		e.entry_timeout = DL_TIMEOUT;
		fuse_reply_entry(req, &e);
		return;
	}
	if (ret)
		goto out;
	ret = fill_entry(fs, &c, &e);
	if (ret)
		goto out;
	fuse_reply_entry(req, &e);
	return;
out:
	reply_err(req, ret);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dl_fs *fs = fs_of(req);
	struct dl_node n;
	struct stat st;
	int ret;

	(void)fi;
	ret = dl_node_from_ino(fs, ino, &n);
	if (!ret)
		ret = dl_node_stat(fs, &n, &st);
	if (ret)
		reply_err(req, ret);
	else
		fuse_reply_attr(req, &st, DL_TIMEOUT);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dl_fs *fs = fs_of(req);
	struct dl_node n;
	int ret = dl_node_from_ino(fs, ino, &n);

	if (!ret && n.type == DL_NODE_FILE)
		ret = -ENOTDIR;
	if (ret) {
		reply_err(req, ret);
		return;
	}
	fi->cache_readdir = 1;
	fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

/* Offsets: 1 is after ".", 2 after "..", k + 3 after child k. Entries are
 * produced on the fly, so a million-file directory needs no allocation. */
static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct dl_fs *fs = fs_of(req);
	struct dl_node dir, child;
	char name[256];
	struct stat st;
	size_t used = 0;
	char *buf = NULL;
	int ret;

	(void)fi;
	ret = dl_node_from_ino(fs, ino, &dir);
	if (ret)
		goto out;
	buf = malloc(size);
	if (!buf) {
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
			st.st_mode = child.type == DL_NODE_FILE ? S_IFREG : S_IFDIR;
		}
		need = fuse_add_direntry(req, buf + used, size - used, name, &st, (off_t)pos + 1);
		if (need > size - used)
			break;
		used += need;
	}
	ret = 0;
	fuse_reply_buf(req, buf, used);
out:
	if (ret)
		reply_err(req, ret);
	free(buf);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dl_fs *fs = fs_of(req);
	struct dl_file *f = NULL;
	struct dl_node n;
	int ret;

	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
		ret = -EROFS;
		goto out;
	}
	ret = dl_node_from_ino(fs, ino, &n);
	if (ret)
		goto out;
	f = malloc(sizeof(*f));
	if (!f) {
		ret = -ENOMEM;
		goto out;
	}
	ret = dl_node_file(fs, &n, f);
	if (ret)
		goto out;
	fi->fh = (uint64_t)(uintptr_t)f;
	if (fs->cfg->io_mode == DL_IO_DIRECT)
		fi->direct_io = 1;
	else
		fi->keep_cache = 1; /* bytes never change: reuse the page cache across opens */
	fi->noflush = 1;
	if (fuse_reply_open(req, fi) == -ENOENT)
		free(f); /* the opener was interrupted; release will not come */
	return;
out:
	free(f);
	reply_err(req, ret);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct dl_fs *fs = fs_of(req);
	const struct dl_file *f = (const struct dl_file *)(uintptr_t)fi->fh;
	void *buf = NULL;
	size_t len;
	int ret;

	(void)ino;
	if (off < 0) {
		ret = -EINVAL;
		goto out;
	}
	if ((uint64_t)off >= f->size) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	len = size;
	if (len > f->size - (uint64_t)off)
		len = (size_t)(f->size - (uint64_t)off);
	if (len > fs->max_read) {
		ret = -EINVAL;
		goto out;
	}
	buf = buf_get(fs);
	if (!buf) {
		ret = -ENOMEM;
		goto out;
	}
	ret = dl_file_read(fs->fmt, f, buf, (uint64_t)off, len);
	if (ret)
		goto out;
	fuse_reply_buf(req, buf, len);
	buf_put(fs, buf);
	return;
out:
	if (buf)
		buf_put(fs, buf);
	reply_err(req, ret);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	free((void *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct dl_fs *fs = fs_of(req);
	struct statvfs sv;
	uint64_t files = 0;

	(void)ino;
	for (unsigned i = 0; i < fs->cfg->ndatasets; i++)
		for (unsigned s = 0; s < DL_SPLIT__COUNT; s++)
			files += fs->cfg->datasets[i].files[s];
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = 4096;
	sv.f_frsize = 4096;
	sv.f_files = files;
	sv.f_namemax = 255;
	fuse_reply_statfs(req, &sv);
}

/* Synthetic datasets are read-only, whatever mount options were given. */
static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	(void)ino, (void)attr, (void)to_set, (void)fi;
	reply_err(req, -EROFS);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	(void)parent, (void)name, (void)mode, (void)rdev;
	reply_err(req, -EROFS);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	(void)parent, (void)name, (void)mode;
	reply_err(req, -EROFS);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	(void)parent, (void)name;
	reply_err(req, -EROFS);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	(void)link, (void)parent, (void)name;
	reply_err(req, -EROFS);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	(void)parent, (void)name, (void)newparent, (void)newname, (void)flags;
	reply_err(req, -EROFS);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	(void)ino, (void)newparent, (void)newname;
	reply_err(req, -EROFS);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	(void)ino, (void)buf, (void)size, (void)off, (void)fi;
	reply_err(req, -EROFS);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	(void)parent, (void)name, (void)mode, (void)fi;
	reply_err(req, -EROFS);
}

const struct fuse_lowlevel_ops dl_fs_ops = {
	.init = op_init,
	.lookup = op_lookup,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_unlink,
	.symlink = op_symlink,
	.rename = op_rename,
	.link = op_link,
	.open = op_open,
	.read = op_read,
	.write = op_write,
	.release = op_release,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.statfs = op_statfs,
	.create = op_create,
};
