/* Private to fs/backing*.c and fs/sink.c. */
#ifndef DLIOFS_FS_BACKING_I_H
#define DLIOFS_FS_BACKING_I_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "backing.h"
#include "fs_i.h"
#include "dliofs/htab.h"
#include "reply.h"
#include "tree_i.h"

/* Real directories can change behind our back: the kernel rechecks often. */
#define BK_TIMEOUT 1.0

/* One looked-up inode of a real directory: every later operation works on
 * that inode (an O_PATH descriptor of it: bk_node_fd), never on a path
 * text. Kept while the kernel holds a reference (lookup count), dropped on
 * forget. Its descriptor is cached, a bounded number per backing directory
 * (backing_fds.c). */
struct bk_node {
	uint64_t id;
	dev_t dev;
	ino_t ino;
	int fd;			/* O_PATH | O_NOFOLLOW; -1: not cached (root lock) */
	struct file_handle *fh;	/* finds the inode again; NULL: by rel */
	char *rel;		/* its path below the backing directory, without a handle */
	struct bk_node *lru_prev, *lru_next;	/* cached descriptors, newest first */
	mode_t type;		/* S_IFMT bits */
	uint64_t nlookup;
	atomic_int moved_out;	/* found outside the backing directory (said once) */
	struct dl_hlink by_id, by_key;	/* in bk_root's tables */
};

struct dl_sink;

/* Open files and directories of a root are listed, so that whatever is still
 * open when the daemon stops is closed with it. */
struct bk_open {
	struct bk_open *prev, *next;	/* NULL: not listed */
	void (*close)(struct bk_open *o);	/* close and free */
};

struct bk_root {
	unsigned index;			/* in cfg->backing (the inode's ds field) */
	const struct dl_backing_cfg *cfg;
	int writable;
	pthread_mutex_t lock;		/* the table below */
	/* Changes to names (create, mkdir, symlink, link, unlink, rmdir, rename)
	 * and the symlink checks: a check and the change it allows are one step
	 * for every client of the mount. Taken before lock, never after. */
	pthread_mutex_t ns_lock;
	struct bk_node top;		/* the directory itself: id 0, never forgotten */
	char real[PATH_MAX];		/* its path as the kernel names it */
	size_t real_len;
	struct dl_htab by_id;		/* nodes by handle id (requests) */
	struct dl_htab by_key;		/* the same by (dev, ino) (lookups) */
	uint64_t next_id;
	struct bk_open open;		/* list head of open files and directories (lock) */
	/* Cached descriptors of nodes (lock): at most fd_cap open. */
	struct bk_node *lru_head, *lru_tail;
	unsigned fd_open, fd_cap;
	int mount_id;			/* of the backing directory; -1: no file handles */
	_Atomic uint64_t fd_errs, fd_errs_at;	/* times out of descriptors, the last */
	struct dl_sink *sink;		/* a sink: no directory, no table */
	_Atomic uint64_t rd_bytes, rd_ops, wr_bytes, wr_ops;
};

/* The entry's name for the log: its `at`, or the overlay's word. */
static inline const char *bk_name(const struct bk_root *r)
{
	return r->cfg->at[0] ? r->cfg->at : "(overlay)";
}

struct dl_backing {
	unsigned n;
	struct bk_root *roots;
};

static inline uint64_t bk_id(fuse_ino_t ino)
{
	return dl_ino_index(ino);
}

static inline fuse_ino_t bk_ino(const struct bk_root *r, uint64_t id)
{
	return dl_ino_make(DL_NODE_BACKING, r->index, 0, 0, id);
}

struct bk_root *bk_root_of(struct dl_fs *fs, fuse_ino_t ino);

/* Same backing entry? (rename and link stay inside one) */
static inline int dl_bk_same_root(fuse_ino_t a, fuse_ino_t b)
{
	return dl_ino_type(a) == dl_ino_type(b) && dl_ino_ds(a) == dl_ino_ds(b);
}

/* Path relative to the mount root ("data/a/b.bin"), for the trace and the
 * log: a real directory's or a sink's inode. */
int bk_path(struct dl_fs *fs, fuse_ino_t ino, char *buf, size_t len);

/* The node of id (0: the directory itself), or -ESTALE. The pointer stays
 * valid while the kernel holds the inode, i.e. for the request's duration. */
int bk_node_get(struct bk_root *r, uint64_t id, struct bk_node **out);
/* Take a reference to the inode fd (O_PATH) names, whose stat is st: the
 * existing node if the inode is known (fd is closed), else a new one. */
int bk_node_ref(struct bk_root *r, int fd, const struct stat *st, struct bk_node **out);
void bk_node_forget(struct bk_root *r, uint64_t id, uint64_t nlookup);
void bk_open_add(struct bk_root *r, struct bk_open *o);
void bk_open_del(struct bk_root *r, struct bk_open *o);

/* ---- descriptors of nodes (backing_fds.c) ---- */
/* Cached descriptors of looked-up inodes: at most this many per mount, and
 * never more than half of RLIMIT_NOFILE; split among backing directories. */
#define BK_FD_CACHE_MAX 4096
struct dl_backing;
void bk_fds_setup(struct dl_backing *b, unsigned real_dirs);
/* An O_PATH descriptor of n's inode for the caller to close (a duplicate of
 * the cached one, reopened if it was evicted), or -errno: -ESTALE when the
 * inode is gone, -EMFILE / -ENFILE when out of descriptors (logged). */
int bk_node_fd(struct bk_root *r, struct bk_node *n);
/* Root lock held: fd (consumed) is new node n's; how to find it again. */
int bk_fds_adopt(struct bk_root *r, struct bk_node *n, int fd);
/* Root lock held: fd (consumed) is a fresh descriptor of known node n. */
void bk_fds_refresh(struct bk_root *r, struct bk_node *n, int fd);
/* Root lock held: n is forgotten. */
void bk_fds_drop(struct bk_root *r, struct bk_node *n);
/* Out of descriptors: give back half of the cache (root lock not held). */
void bk_fds_relieve(struct bk_root *r);
/* Log running out of descriptors (EMFILE, ENFILE), once per burst. */
void bk_fd_error(struct bk_root *r, int err, const char *what);

/* A name a client may use: not "", ".", "..", nothing with '/'. */
static inline int bk_name_ok(const char *name)
{
	return name[0] && strcmp(name, ".") && strcmp(name, "..") && !strchr(name, '/');
}

/* The magic link of descriptor fd: its own inode, never a symlink walk. */
static inline void bk_proc_path(int fd, char *buf, size_t len)
{
	snprintf(buf, len, "/proc/self/fd/%d", fd);
}

/* ---- where things are (backing_path.c) ---- */

/* Depth below the backing directory of the directory dirfd (0: itself),
 * found by walking ".." to it: -EACCES when dirfd is not below it (it was
 * moved out). */
int bk_dir_depth(const struct bk_root *r, int dirfd, int *depth);
/* For a node that is not a directory (nfd: a descriptor of it): the
 * directory holding it (an O_PATH descriptor in *pfd, to close) and its
 * depth; -EACCES when that is not
 * below the backing directory, -ESTALE when the node is not there. */
int bk_node_parent(const struct bk_root *r, const struct bk_node *n, int nfd, int *pfd,
		   int *depth);

/* A directory as a rename would leave it: resolving sees it in `to` under
 * to_name and no longer in its old parent under from_name. */
struct bk_moved {
	int fd;				/* the directory moved (O_PATH) */
	dev_t dev;
	ino_t ino;
	int to;				/* its new parent */
	dev_t to_dev;
	ino_t to_ino;
	int to_depth;
	const char *to_name;
	dev_t from_dev;			/* its old parent */
	ino_t from_ino;
	const char *from_name;
};

/* Would a symlink with this text, in directory dirfd `depth` levels below
 * the backing directory, stay inside it when followed, links on the way
 * included (see backing_path.c)? 0, -EACCES (it would not, or it cannot be
 * told) or -ENOMEM. mv: a pending rename to resolve through, or NULL. */
int bk_target_inside(const struct bk_root *r, int dirfd, int depth, const char *target,
		     const struct bk_moved *mv);
/* Every symlink below mv->fd, checked as if the rename were done. -EACCES
 * (bad: the first link that would lead out, relative to the directory) or
 * -E2BIG (too much to check; bad says so). */
int bk_tree_links_inside(const struct bk_root *r, const struct bk_moved *mv, char *bad,
			 size_t badlen);

/* Replies go through the reply path (reply.h: dl_reply_begin, then
 * dl_reply_finish). */
static inline struct dl_fs *bk_fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}
/* dl_reply_finish for real directories: running out of descriptors, wherever
 * it happened, is said in the log (once per burst) before the error goes
 * out. */
void bk_finish(struct dl_fs *fs, struct dl_reply *r, int ret);

/* ---- what the operations on real directories share (backing_ops.c) ---- */

/* What an open file carries in fi->fh (backing_files.c). */
struct bk_file {
	struct bk_open link;	/* first: the list holds &f->link == f */
	struct bk_root *root;
	int fd;
	struct dl_client who;	/* who opened it (the close is theirs) */
};

/* The node of ino in a real (not sink) backing directory, or -ESTALE. */
int bk_node_of(struct dl_fs *fs, fuse_ino_t ino, struct bk_root **r, struct bk_node **n);
/* The directory a name in parent lives in, as bk_node_of; for a
 * synthetic directory, with the overlay on, the overlay's directory at its
 * path (made when mk), or `taken` when the synthetic directory has name
 * (taken 0 or name NULL: not checked); -EROFS without an overlay. */
int bk_parent_of(struct dl_fs *fs, fuse_ino_t parent, const char *name, int mk, int taken,
		 struct bk_root **r, struct bk_node **p);
/* The number of overlay directory n's parent as the mount shows it:
 * the synthetic directory at its path if there is one, else real. */
ino_t bk_overlay_parent_ino(struct dl_fs *fs, struct bk_root *r, struct bk_node *n, ino_t real);
/* Say once per node that it was found outside (the log is for people). */
void bk_moved_out(struct bk_root *root, struct bk_node *n, const char *what);
/* Is directory p still below the backing directory? Its depth if so. */
int bk_dir_ok(struct bk_root *root, struct bk_node *p, int *depth);
/* The same for any node (a file through the directory holding it). */
int bk_node_ok(struct bk_root *root, struct bk_node *n);
/* Refuse (and say why) a symlink text that would lead out when followed
 * from directory dirfd at depth. verb and name say what, for the log. */
int bk_link_ok(struct bk_root *root, int dirfd, int depth, const char *target, const char *verb,
	       const char *name);
/* fd (O_PATH, consumed) becomes a referenced node and an entry for it. */
int bk_entry_of(struct bk_root *r, int fd, struct fuse_entry_param *e);
/* name in directory p (never followed), as an entry. */
int bk_lookup_at(struct bk_root *r, struct bk_node *p, const char *name,
		 struct fuse_entry_param *e);
/* Finish an entry reply; the lookup is given back if the kernel never sees it. */
void bk_finish_entry(struct dl_fs *fs, struct dl_reply *r, struct bk_root *root, int ret);
/* ---- acting as the caller (backing_creds.c) ---- */
#define BK_CREDS_GROUPS 32
struct bk_creds {
	int on;
	uid_t fsuid;		/* the thread's own, to restore */
	gid_t fsgid;
	int nown, ncaller;
	gid_t own[BK_CREDS_GROUPS], caller[BK_CREDS_GROUPS];
	gid_t *own_heap, *caller_heap;	/* more groups than fit above */
};
/* Make the calling thread's file system calls those of req's caller (fsuid,
 * fsgid, supplementary groups) until bk_creds_leave; 0 or -errno (nothing
 * changed). A root caller, or a daemon that is not root, stays as it is. */
int bk_creds_enter(fuse_req_t req, struct bk_creds *s);
void bk_creds_leave(struct bk_creds *s);

/* Changes of names (backing_names.c). */
void bk_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev);
void bk_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode);
void bk_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name);
void bk_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void bk_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void bk_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
	       const char *newname, unsigned int flags);
void bk_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname);

/* Open files and directories (backing_files.c). */
void bk_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void bk_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
	       struct fuse_file_info *fi);
void bk_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void bk_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
	      struct fuse_file_info *fi);
void bk_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void bk_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);
void bk_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void bk_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void bk_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi);
void bk_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi);
void bk_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void bk_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);


/* ---- sinks (sink.c) ---- */
/* With a journal (r->cfg->journal), its table is restored from it; the
 * journal must lie outside mnt_real (the mount). */
int dl_sink_new(const struct bk_root *r, const char *mnt_real, struct dl_sink **out);
void dl_sink_free(struct dl_sink *s);
void dl_sink_forget(struct dl_sink *s, uint64_t id, uint64_t nlookup);
int dl_sink_stat(struct dl_sink *s, uint64_t id, fuse_ino_t ino, struct stat *st);
int dl_sink_path(struct dl_sink *s, uint64_t id, char *buf, size_t len);
/* "entries", "max_entries", "discarded_bytes", "reads_refused" into the
 * object open in w. */
void dl_sink_stats_write(struct dl_sink *s, struct dl_jw *w);

#endif
