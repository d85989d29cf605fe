/* Private to fs/: the daemon's context and the namespace arithmetic. */
#ifndef DLIOFS_FS_I_H
#define DLIOFS_FS_I_H

#include <fuse_lowlevel.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>

#include "dliofs/config.h"
#include "dliofs/format.h"
#include "dliofs/pacer.h"
#include "dliofs/trace.h"

struct dl_timer;
struct dl_reply;
struct dl_backing;
struct dl_clients;
struct dl_served;
struct dl_handle;
struct dl_ctl_worker;
struct dl_tree_ops;

/* The trees the daemon serves, each behind its own operation table
 * (tree_i.h). */
enum dl_tree {
	DL_TREE_SYNTH,		/* the root and the datasets */
	DL_TREE_CTL,		/* .dliofs/ */
	DL_TREE_BACKING,	/* real directories under `backing:` */
	DL_TREE_SINK,		/* sinks under `backing:` */
	DL_TREE__COUNT
};
struct dl_cluster;

/* Everything the daemon mutates lives here (no other global state). */
struct dl_fs {
	struct dl_config *cfg;
	struct dl_fmt_ctx *fmt;
	struct timespec mount_time;	/* every timestamp the mount shows */
	uid_t uid;
	gid_t gid;
	size_t max_read;		/* largest read the kernel may send */
	int ready_fd;			/* write end of the readiness pipe, -1 when done */
	/* Read buffers are reused: a fresh 1 MiB malloc per request costs an
	 * mmap and 256 page faults. */
	pthread_mutex_t buf_lock;
	void **bufs;
	unsigned nbufs, bufs_cap;
	struct dl_pacer *pacer;		/* storage model and statistics (NULL with --no-pacer) */
	struct dl_timer *timer;		/* sends parked replies at their due time */
	struct dl_ctl_worker *ctl_worker; /* runs control transactions (ctl_worker.c) */
	struct dl_backing *backing;	/* real directories and sinks (NULL: none) */
	struct fuse_session *se;	/* for invalidating the kernel's caches */
	struct dl_clients *clients;	/* requests' threads to processes and jobs */
	struct dl_served *served;	/* synthetic files the kernel may hold pages of */
	pid_t launcher;			/* the `dliofs mount` that started us (its stat is ours) */
	pid_t self;			/* the daemon (its own lookups of the mount are ours) */
	int io_direct;			/* io: direct: never the page cache */
	uint64_t fuse_overhead_ns;	/* the kernel's part of a request's round trip */
	uint32_t cluster_node;		/* in a cluster of mounts: rank + 1 (traces carry it) */
	/* What handing a data reply to the kernel costs per byte (picoseconds,
	 * a running average of large replies measured in reply.c): a delayed
	 * reply is sent that much earlier too, so that a 1 MiB read is not
	 * its copy time later than the storage model says. */
	atomic_uint_fast64_t reply_ps_per_byte;
	/* FUSE workers waiting for a reply's send time themselves (reply.c):
	 * a short wait is slept on the worker, not handed to the timer thread. */
	atomic_uint inline_waiters;
	/* tracing (trace_hook.c): recorder, ops traced, recorders in flight */
	struct dl_trace *_Atomic trace;
	atomic_uint trace_users;
	uint32_t trace_ops;
	uint64_t trace_dropped_total;
	char trace_path[4096];
	char mnt_real[PATH_MAX];	/* the mountpoint, resolved before mounting */
	dev_t mount_dev;		/* the mount's device, once learnt (trace_hook.c) */
	int mount_dev_known;
	char trace_last[4600];		/* how the last trace ended, for .dliofs/trace */
	pthread_mutex_t trace_lock;
	/* Open synthetic and control files (tree.c): a close the kernel has
	 * queued when the daemon is stopped is never delivered; they are freed
	 * on the way out. */
	pthread_mutex_t handles_lock;
	struct dl_handle *handles;
	/* The operation table of each tree (set at init: ops.c). */
	const struct dl_tree_ops *trees[DL_TREE__COUNT];
};

/* Add a directory entry to a readdir (plus 0) or readdirplus (plus 1)
 * reply buffer; with plus, the entry carries no lookup (node id 0), for
 * directories whose children are not to be cached by the kernel. Returns
 * the bytes it needs, as fuse_add_direntry (dirent.c). */
size_t dl_add_dirent(fuse_req_t req, char *buf, size_t size, const char *name,
		     const struct stat *st, off_t off, int plus);

/* Free the handles of files still open at exit (tree.c). */
void dl_fs_free_handles(struct dl_fs *fs);

void dl_fs_trace_reply(struct dl_fs *fs, const struct dl_reply *r, uint64_t now);
/* Open data files with direct_io now? (io: direct, or an emulated cache:
 * then no page the kernel keeps may answer a read the model does not see.) */
int dl_fs_direct_io(struct dl_fs *fs);
/* The block size files report (st_blksize): the storage model's, as its
 * profile states it (1 MiB without one). */
uint64_t dl_fs_blksize(struct dl_fs *fs);
/* Invalidate the kernel's pages of every synthetic file served so far;
 * returns how many files were invalidated. */
uint64_t dl_fs_drop_kernel_cache(struct dl_fs *fs);
/* Start tracing to path (trace/target.c's checks, and never a file inside
 * this mount): 0, or -errno and why. live: the mount answers (a start from
 * the control thread), so a file reached through another name of the mount
 * is recognised by its device too. */
int dl_fs_trace_start(struct dl_fs *fs, const char *path, uint32_t ops_mask, int live, char *why,
		      size_t wl);
int dl_fs_trace_stop(struct dl_fs *fs);

/* Read buffers of fs->max_read bytes, reused across requests. */
void *dl_fs_buf_get(struct dl_fs *fs);
void dl_fs_buf_put(struct dl_fs *fs, void *buf);

/* Inode numbers are computed, never stored:
 *   1                                               the root
 *   type:4 | ds:12 | split:2 | part:2 | index:44    everything else
 * The bit positions are known here and nowhere else: build and take apart
 * inode numbers with dl_ino_*(). */
enum dl_node_type {
	DL_NODE_ROOT = 0,
	DL_NODE_DATASET = 1,
	DL_NODE_SPLIT = 2,
	DL_NODE_SUBDIR = 3,
	DL_NODE_FILE = 4,
	DL_NODE_CTL = 5,	/* .dliofs/ (index 0) and its files (index = enum dl_ctl_file) */
	DL_NODE_BACKING = 6,	/* ds = backing entry; index = handle id (0: the directory) */
};

#define DL_INO_INDEX_BITS 44
#define DL_INO_MAX_INDEX ((1ULL << DL_INO_INDEX_BITS) - 1)
#define DL_INO_MAX_DATASETS 4096

#define DL_INO_PART_SHIFT DL_INO_INDEX_BITS		/* 2 bits */
#define DL_INO_SPLIT_SHIFT (DL_INO_PART_SHIFT + 2)	/* 2 bits */
#define DL_INO_DS_SHIFT (DL_INO_SPLIT_SHIFT + 2)	/* 12 bits */
#define DL_INO_TYPE_SHIFT (DL_INO_DS_SHIFT + 12)	/* 4 bits */

static inline fuse_ino_t dl_ino_make(enum dl_node_type type, unsigned ds, uint32_t split,
				     uint32_t part, uint64_t index)
{
	return ((uint64_t)type << DL_INO_TYPE_SHIFT) |
	       ((uint64_t)(ds & (DL_INO_MAX_DATASETS - 1)) << DL_INO_DS_SHIFT) |
	       ((uint64_t)(split & 3) << DL_INO_SPLIT_SHIFT) |
	       ((uint64_t)(part & 3) << DL_INO_PART_SHIFT) | (index & DL_INO_MAX_INDEX);
}

static inline enum dl_node_type dl_ino_type(fuse_ino_t ino)
{
	return (enum dl_node_type)(ino >> DL_INO_TYPE_SHIFT);
}

static inline unsigned dl_ino_ds(fuse_ino_t ino)
{
	return (unsigned)((ino >> DL_INO_DS_SHIFT) & (DL_INO_MAX_DATASETS - 1));
}

static inline uint32_t dl_ino_split(fuse_ino_t ino)
{
	return (uint32_t)((ino >> DL_INO_SPLIT_SHIFT) & 3);
}

static inline uint32_t dl_ino_part(fuse_ino_t ino)
{
	return (uint32_t)((ino >> DL_INO_PART_SHIFT) & 3);
}

static inline uint64_t dl_ino_index(fuse_ino_t ino)
{
	return ino & DL_INO_MAX_INDEX;
}

struct dl_node {
	enum dl_node_type type;
	unsigned ds;
	uint32_t split;
	uint32_t part;
	uint64_t index; /* file index, or subfolder number */
};

static inline fuse_ino_t dl_node_ino(const struct dl_node *n)
{
	if (n->type == DL_NODE_ROOT)
		return FUSE_ROOT_ID;
	return dl_ino_make(n->type, n->ds, n->split, n->part, n->index);
}

int dl_node_from_ino(const struct dl_fs *fs, fuse_ino_t ino, struct dl_node *out);
/* Attributes of a synthetic node (the root, a dataset, split, subfolder or
 * file); another tree's node is that tree's to describe (tree_i.h): -ENOENT. */
int dl_node_stat(struct dl_fs *fs, const struct dl_node *n, struct stat *st);
int dl_node_lookup(const struct dl_fs *fs, const struct dl_node *parent, const char *name,
		   struct dl_node *out);
/* The inode of directory n's parent (the root's is the root), for a
 * listing's "..": the kernel passes readdir's numbers on as they are. */
fuse_ino_t dl_node_parent_ino(const struct dl_node *n);
/* Directory entry number k (0-based, "." and ".." excluded) of dir: 0 and the
 * child, or -ENOENT past the end. */
int dl_node_child(const struct dl_fs *fs, const struct dl_node *dir, uint64_t k,
		  struct dl_node *child, char *name, size_t namelen);
int dl_node_file(struct dl_fs *fs, const struct dl_node *n, struct dl_file *f);
/* Path of a synthetic or control inode relative to the mount root
 * ("unet3d/train/img_1_of_8.npz"): its length, or -errno. Any inode's path
 * is its tree's to tell (tree_i.h: path). */
int dl_node_path(const struct dl_fs *fs, uint64_t ino, char *buf, size_t len);
/* The mount's statfs figures (the synthetic files' count). */
void dl_node_statvfs(const struct dl_fs *fs, struct statvfs *sv);

extern const struct fuse_lowlevel_ops dl_fs_ops;

/* Run the daemon on an already loaded config. foreground: no fork. */
struct dl_mount_opts {
	const char *mountpoint;
	const char *fuse_opts;	/* extra -o options, may be NULL */
	const char *log_path;	/* daemon stderr after detaching; NULL = /dev/null */
	int foreground;
	int debug;
	unsigned max_threads;
	uint64_t readahead;	/* bytes of kernel readahead (cache mode); 0 = kernel default */
	int no_pacer;		/* no storage model and no statistics (the unshaped baseline) */
	uint64_t fuse_overhead_ns; /* see struct dl_fs */
	struct dl_cluster *cluster; /* a node of a cluster of mounts (cluster.h), or NULL */
};
int dl_fs_mount(struct dl_config *cfg, const struct dl_mount_opts *o);
int dl_fs_umount(const char *mountpoint);
/* Set the mount's kernel readahead once it answers (from a helper thread). */
void dl_fs_start_readahead(const struct dl_mount_opts *o);

#endif
