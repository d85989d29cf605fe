/* The FUSE handlers: each finds the tree the request's inode belongs to
 * (tree_i.h: the synthetic datasets, the control directory, a real backing
 * directory or a sink) and hands the request to that tree's table. Every
 * answer goes through one reply path (reply.c): the pacer may delay it,
 * statistics and the trace see it (control traffic excepted), workers
 * never wait. */
#include <errno.h>

#include "backing.h"
#include "fs_i.h"
#include "reply.h"
#include "tree_i.h"

static const struct dl_tree_ops *tree_of(fuse_req_t req, fuse_ino_t ino)
{
	return dl_tree_of(fuse_req_userdata(req), ino);
}

static int has_real_backing(const struct dl_fs *fs)
{
	for (unsigned i = 0; i < fs->cfg->nbacking; i++)
		if (!fs->cfg->backing[i].sink)
			return 1;
	return fs->cfg->overlay.path[0] != 0;
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct dl_fs *fs = userdata;

	/* Before any request: INIT is the first the kernel sends. */
	fs->trees[DL_TREE_SYNTH] = &dl_tree_synth;
	fs->trees[DL_TREE_CTL] = &dl_tree_ctl;
	fs->trees[DL_TREE_BACKING] = &dl_tree_backing;
	fs->trees[DL_TREE_SINK] = &dl_tree_sink;
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
	/* A real backing directory may be shared with other nodes' mounts (or
	 * written on the host): their writes reach no kernel cache of ours, so
	 * a changed mtime or size seen when attributes are fetched again
	 * (BK_TIMEOUT) must drop the pages kept of the file, even while it is
	 * open. Synthetic files never change: nothing to check for them. */
	if (has_real_backing(fs) && (conn->capable & FUSE_CAP_AUTO_INVAL_DATA))
		conn->want |= FUSE_CAP_AUTO_INVAL_DATA;
	else
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

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	tree_of(req, parent)->lookup(req, parent, name);
}

/* A forget has no answer; computed inodes have nothing to forget. */
static void forget(struct dl_fs *fs, fuse_ino_t ino, uint64_t nlookup)
{
	const struct dl_tree_ops *t = dl_tree_of(fs, ino);

	if (t->forget)
		t->forget(fs, ino, nlookup);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	forget(fuse_req_userdata(req), ino, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		forget(fuse_req_userdata(req), forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	tree_of(req, ino)->getattr(req, ino, fi);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	tree_of(req, ino)->setattr(req, ino, attr, to_set, fi);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	tree_of(req, ino)->readlink(req, ino);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	tree_of(req, parent)->mknod(req, parent, name, mode, rdev);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	tree_of(req, parent)->mkdir(req, parent, name, mode);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	tree_of(req, parent)->unlink(req, parent, name);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	tree_of(req, parent)->rmdir(req, parent, name);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	tree_of(req, parent)->symlink(req, link, parent, name);
}

/* Renames and links stay inside one tree and, below `backing:`, inside one
 * entry of it; anything else crosses devices where names can change on
 * either side (EXDEV), and is refused as read-only otherwise (EROFS): the
 * refusal is the first inode's tree's (control traffic or not), and reaches
 * no device. */
static fuse_ino_t names_of(struct dl_fs *fs, fuse_ino_t ino)
{
	/* With an overlay, the synthetic tree's names are the overlay's
	 * (backing_overlay.c): one more entry after those of `backing:`. */
	if (dl_tree_id(fs, ino) == DL_TREE_SYNTH && dl_overlay_on(fs))
		return dl_ino_make(DL_NODE_BACKING, fs->cfg->nbacking, 0, 0, 0);
	return ino;
}

static int crosses(struct dl_fs *fs, fuse_ino_t a, fuse_ino_t b, const struct dl_tree_ops **ta)
{
	const struct dl_tree_ops *tb;

	a = names_of(fs, a);
	b = names_of(fs, b);
	tb = dl_tree_of(fs, b);
	*ta = dl_tree_of(fs, a);
	if (*ta == tb && (!tb->xdev || (dl_ino_type(a) == dl_ino_type(b) &&
					dl_ino_ds(a) == dl_ino_ds(b))))
		return 0;
	return (*ta)->xdev || tb->xdev ? EXDEV : EROFS;
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	const struct dl_tree_ops *t;
	int err = crosses(fuse_req_userdata(req), parent, newparent, &t);

	if (err)
		dl_reply_nodev(req, t->ctl, DL_TOP_RENAME, parent, err);
	else
		t->rename(req, parent, name, newparent, newname, flags);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	const struct dl_tree_ops *t;
	int err = crosses(fuse_req_userdata(req), newparent, ino, &t);

	if (err)
		dl_reply_nodev(req, t->ctl, DL_TOP_MKNOD, newparent, err);
	else
		tree_of(req, ino)->link(req, ino, newparent, newname);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	tree_of(req, parent)->create(req, parent, name, mode, fi);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	tree_of(req, ino)->open(req, ino, fi);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	tree_of(req, ino)->read(req, ino, size, off, fi);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	tree_of(req, ino)->write(req, ino, buf, size, off, fi);
}

/* flush, fsync, fsyncdir and releasedir are answered by every tree: an
 * ENOSYS would make the kernel stop sending them for the whole mount. */
static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	tree_of(req, ino)->flush(req, ino, fi);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	tree_of(req, ino)->release(req, ino, fi);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	tree_of(req, ino)->fsync(req, ino, datasync, fi);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	tree_of(req, ino)->opendir(req, ino, fi);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	tree_of(req, ino)->readdir(req, ino, size, off, fi);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	tree_of(req, ino)->readdirplus(req, ino, size, off, fi);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	tree_of(req, ino)->releasedir(req, ino, fi);
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	tree_of(req, ino)->fsyncdir(req, ino, datasync, fi);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	tree_of(req, ino)->statfs(req, ino);
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
