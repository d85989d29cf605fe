/* The control directory `.dliofs/` in the mount root: live statistics, the
 * effective config, live pacer settings, cache and trace control. Hidden
 * from listings; its traffic is neither shaped, counted nor traced.
 *
 * A write is a transaction: all of it applies or none of it, whatever its
 * size. The kernel splits a write into pieces (a full request each, or one
 * per few iovecs of a writev) and nothing tells the last one, so pieces are
 * only gathered per open file and applied at fsync or at close (flush,
 * release); a write piece is never answered with a short count. A refused
 * transaction answers EINVAL (or the real errno), a read of the same open
 * file then gives the reason, and every later write, fsync and flush of that
 * open file answers the same error until it is closed: a writer that retries
 * the rest of a write cannot get a tail applied as a transaction of its own.
 *
 * Transactions run on the control thread (ctl_worker.c), never in a FUSE
 * worker: a file a command names may lie on this very mount. */
#ifndef DLIOFS_FS_CONTROL_H
#define DLIOFS_FS_CONTROL_H

#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/* The directory's name, its files (enum dl_ctl_file) and their names
 * (dl_ctl_names): what the clients see is defined there, once. */
#include "dliofs/ctl_client.h"

struct dl_fs;
struct dl_node;

/* A transaction holds at most this much text. */
#define DL_CTL_MAX_WRITE (64u << 20)

/* One open control file. Clients may use one open file from several
 * threads at once: the lock keeps its pending write and reason whole. */
struct dl_ctl_handle {
	pthread_mutex_t lock;
	unsigned id;
	uid_t uid;		/* who opened it: files a write names are opened as them */
	gid_t gid;
	char *snap;		/* content at open (readable files) */
	size_t snap_len;
	char *pending;		/* pieces of a write not yet applied */
	size_t pending_len, pending_cap;
	char *reason;		/* why the last transaction was refused */
	int refused;		/* sticky -errno of a refusal (or EFBIG): answers every
				 * later write, fsync and flush of this open file */
};

/* Attributes of control file id (DL_CTL_DIR: the directory); st_ino is
 * the caller's to set. */
void dl_ctl_stat(struct dl_fs *fs, unsigned id, struct stat *st);
int dl_ctl_open(struct dl_fs *fs, unsigned id, int flags, uid_t uid, gid_t gid,
		struct dl_ctl_handle *h);
void dl_ctl_handle_free(struct dl_ctl_handle *h);
/* A copy of [off, off + size) of what a read of the handle shows: the
 * reason of its last refused transaction, else the content at open. *len
 * is 0 at the end; *out is malloc'd (NULL when empty). */
int dl_ctl_handle_read(struct dl_ctl_handle *h, uint64_t off, size_t size, char **out,
		       size_t *len);
/* A piece of a write: gathered, and applied when it ends a write. */
int dl_ctl_write(struct dl_fs *fs, struct dl_ctl_handle *h, const char *buf, size_t len);
/* Apply what is pending (fsync, flush, close); 0 when nothing is, the
 * sticky error of a refused handle. On the control thread only. */
int dl_ctl_commit(struct dl_fs *fs, struct dl_ctl_handle *h);
/* What a commit would answer without applying anything: -EAGAIN when
 * something is pending (hand the commit to the control thread), else 0 or
 * the handle's sticky error. Safe in a FUSE worker. */
int dl_ctl_commit_quick(struct dl_ctl_handle *h);

/* The control thread (ctl_worker.c): run(fs, arg), then after(arg), then
 * answer req with run's result (0 or -errno). */
struct dl_ctl_worker;
int dl_ctl_worker_start(struct dl_fs *fs, struct dl_ctl_worker **out);
int dl_ctl_worker_submit(struct dl_ctl_worker *w, fuse_req_t req,
			 int (*run)(struct dl_fs *fs, void *arg), void (*after)(void *arg),
			 void *arg);
/* The session is going: from now on jobs are dropped and requests freed
 * unanswered (their handles are freed with the others at exit). */
void dl_ctl_worker_quiesce(struct dl_ctl_worker *w);
/* Quiesce, wait for the job in progress, free. After the unmount: a job
 * may be waiting on this mount, which then fails it. */
void dl_ctl_worker_stop(struct dl_ctl_worker *w);
/* Snapshot of a readable control file's content (malloc'd). */
int dl_ctl_read_all(struct dl_fs *fs, unsigned id, char **buf, size_t *len);

#endif
