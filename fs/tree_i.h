/* Private to fs/: the daemon serves four trees, each behind one operation
 * table: the synthetic datasets (synth_ops.c), the control directory
 * `.dliofs/` (control_ops.c), real backing directories (backing_ops.c) and
 * sinks (sink_ops.c). The FUSE handlers (ops.c) only find the tree an inode
 * belongs to and hand the request over; a tree knows its own table, the
 * inode arithmetic (fs_i.h) and the reply path (reply.h), never another
 * tree's code: where it must show another tree's inode (the root lists the
 * backing directories and finds `.dliofs`), it asks that tree's table. */
#ifndef DLIOFS_FS_TREE_I_H
#define DLIOFS_FS_TREE_I_H

#include <fuse_lowlevel.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "fs_i.h"

/* Content and names of the synthetic tree never change while mounted: the
 * kernel may keep them. */
#define DL_TIMEOUT 86400.0

struct dl_reply;

struct dl_tree_ops {
	const char *name;
	/* Control traffic: neither shaped, counted nor traced (reply.h). */
	int ctl;
	/* Its names can be changed: a rename or link between it and another
	 * tree crosses devices (EXDEV); between two trees without it, nothing
	 * can be changed (EROFS). */
	int xdev;
	/* How long the kernel may keep the attributes of its inodes. */
	double attr_timeout;
	/* ino's attributes, for an entry another tree hands out (the root's
	 * lookups and listings): 0 or -errno. */
	int (*stat)(struct dl_fs *fs, fuse_ino_t ino, struct stat *st);
	/* ino's path relative to the mount root, for the trace's name table:
	 * its length, or -errno. */
	int (*path)(struct dl_fs *fs, fuse_ino_t ino, char *buf, size_t len);
	/* The kernel drops nlookup references (no answer); NULL: the tree's
	 * inodes are computed, nothing is kept. */
	void (*forget)(struct dl_fs *fs, fuse_ino_t ino, uint64_t nlookup);

	/* The FUSE operations on its inodes, with libfuse's arguments; each
	 * answers its request (through the reply path). The tree of the
	 * parent (lookup, mknod, ...) or of the inode serves it. */
	void (*lookup)(fuse_req_t req, fuse_ino_t parent, const char *name);
	void (*getattr)(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
	void (*setattr)(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
			struct fuse_file_info *fi);
	void (*readlink)(fuse_req_t req, fuse_ino_t ino);
	void (*mknod)(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      dev_t rdev);
	void (*mkdir)(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode);
	void (*unlink)(fuse_req_t req, fuse_ino_t parent, const char *name);
	void (*rmdir)(fuse_req_t req, fuse_ino_t parent, const char *name);
	void (*symlink)(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name);
	/* Only within one tree and, for backing directories and sinks, one
	 * entry of `backing:` (ops.c refuses the rest). */
	void (*rename)(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		       const char *newname, unsigned int flags);
	void (*link)(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname);
	void (*open)(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
	void (*read)(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		     struct fuse_file_info *fi);
	void (*write)(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		      struct fuse_file_info *fi);
	void (*flush)(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
	void (*release)(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
	void (*fsync)(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);
	void (*opendir)(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
	void (*readdir)(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			struct fuse_file_info *fi);
	void (*readdirplus)(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			    struct fuse_file_info *fi);
	void (*releasedir)(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
	void (*fsyncdir)(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);
	void (*statfs)(fuse_req_t req, fuse_ino_t ino);
	void (*create)(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		       struct fuse_file_info *fi);
};

extern const struct dl_tree_ops dl_tree_synth;
extern const struct dl_tree_ops dl_tree_ctl;
extern const struct dl_tree_ops dl_tree_backing;
extern const struct dl_tree_ops dl_tree_sink;

/* Which tree ino belongs to: arithmetic on the inode number and the
 * config. A number that decodes to nothing is the synthetic tree's, which
 * answers ENOENT. */
static inline enum dl_tree dl_tree_id(const struct dl_fs *fs, fuse_ino_t ino)
{
	unsigned b;

	if (ino == FUSE_ROOT_ID)
		return DL_TREE_SYNTH;
	switch (dl_ino_type(ino)) {
	case DL_NODE_CTL:
		return DL_TREE_CTL;
	case DL_NODE_BACKING:
		if (!fs->cfg->nbacking && !fs->cfg->overlay.path[0])
			return DL_TREE_SYNTH;
		b = dl_ino_ds(ino);
		return b < fs->cfg->nbacking && fs->cfg->backing[b].sink ? DL_TREE_SINK
									 : DL_TREE_BACKING;
	default:
		return DL_TREE_SYNTH;
	}
}

/* The table that serves ino (fs->trees, set at init: ops.c). */
static inline const struct dl_tree_ops *dl_tree_of(const struct dl_fs *fs, fuse_ino_t ino)
{
	return fs->trees[dl_tree_id(fs, ino)];
}

/* ---- what the synthetic and the control tree share (tree.c) ---- */

/* An entry for namespace node n, whichever tree it belongs to: its
 * attributes and timeouts from that tree's table. */
int dl_node_entry(struct dl_fs *fs, const struct dl_node *n, struct fuse_entry_param *e);
/* The operations on the computed namespace (namespace.c), for both trees'
 * tables; the tree of the inode says whether the answer is control traffic.
 * Listings are produced on the fly from the offset (1 is after ".", 2 after
 * "..", k + 3 after child k), so a million-file directory needs no
 * allocation; readdirplus returns each child's entry and attributes too
 * (its lookup round trip is saved), and computed inodes need no
 * bookkeeping for the lookups it hands the kernel. */
void dl_node_lookup_op(fuse_req_t req, fuse_ino_t parent, const char *name);
void dl_node_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void dl_node_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void dl_node_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		     struct fuse_file_info *fi);
void dl_node_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			 struct fuse_file_info *fi);
/* statfs of the mount (the synthetic files' count), as storage traffic. */
void dl_node_statfs(fuse_req_t req, fuse_ino_t ino);

/* An open synthetic or control file's handle (in fi->fh) starts with this:
 * every one is listed, because a close the kernel has queued when the
 * daemon is stopped is never delivered, and whatever is still open is
 * freed on the way out (dl_fs_free_handles). */
struct dl_handle {
	struct dl_handle *prev, *next;	/* fs->handles */
	struct dl_fs *fs;
	void (*drop)(struct dl_handle *h);	/* frees what contains h */
};

void dl_handle_add(struct dl_fs *fs, struct dl_handle *h, void (*drop)(struct dl_handle *h));
/* Unlist h and drop it; NULL is nothing. */
void dl_handle_free(struct dl_handle *h);
/* An open whose reply failed never sees its release: free its handle
 * (r->fi.fh), as the reply's on_abort. */
void dl_handle_abort(struct dl_reply *r);

#endif
