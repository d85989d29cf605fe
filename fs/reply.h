/* Deferred replies: a request's answer is prepared at once and sent when the
 * pacer says it is due, from the timer thread, so no FUSE worker ever sleeps. */
#ifndef DLIOFS_FS_REPLY_H
#define DLIOFS_FS_REPLY_H

#include <fuse_lowlevel.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "clients.h"
#include "dliofs/pacer.h"

struct dl_fs;

enum dl_reply_kind {
	DL_R_ERR,	/* err (positive errno; 0 = success without data) */
	DL_R_BUF,	/* buf, len; buf is released after the reply */
	DL_R_ENTRY,	/* e */
	DL_R_ATTR,	/* st, attr_timeout */
	DL_R_OPEN,	/* fi */
	DL_R_CREATE,	/* e, fi */
	DL_R_WRITE,	/* count */
	DL_R_STATFS,	/* sv */
	DL_R_READLINK,	/* buf (NUL-terminated, released after the reply) */
};

struct dl_reply {
	enum dl_reply_kind kind;
	fuse_req_t req;
	int err;
	void *buf;
	size_t len;
	int pooled;		/* buf came from the daemon's read-buffer pool */
	struct fuse_entry_param e;
	struct stat st;
	double attr_timeout;
	struct fuse_file_info fi;
	size_t count;
	struct statvfs sv;
	/* what the pacer was told, and what it answered */
	struct dl_pacer_req preq;
	struct dl_pacer_result pres;
	uint64_t submit_ns;
	int paced;		/* the pacer accepted it: dl_pacer_complete is owed */
	uint64_t send_ns;	/* when to reply: the pacer's due time less the kernel's share */
	uint8_t top;		/* enum dl_trace_op, for the trace */
	struct dl_client client;/* who asked */
	int client_new;		/* the client was resolved afresh (a new thread or process) */
	int ctl;		/* control traffic (.dliofs/, the mount command): not
				 * storage traffic, so neither shaped, counted nor traced */
	void (*on_abort)(struct dl_reply *r); /* open/create: free fh if the reply fails */
};

/* Every tree answers a request the same way: begin the reply (this stamps
 * the arrival, so begin before the work), fill in what it carries, finish.
 *
 * Begin the reply to req about file ino (the pacer request's file); the
 * rest of the pacer request is filled by the caller. NULL when out of
 * memory: ENOMEM has then been answered. */
struct dl_reply *dl_reply_begin(fuse_req_t req, enum dl_reply_kind kind, enum dl_op_class cls,
				uint8_t trace_op, fuse_ino_t ino);
/* The same for control traffic (r->ctl set, no client resolved). */
struct dl_reply *dl_reply_begin_ctl(fuse_req_t req, enum dl_reply_kind kind);
/* Finish r: with ret < 0 it answers -ret instead (what it carried is
 * dropped, an open's abort hook with it); then submit. Takes ownership. */
void dl_reply_finish(struct dl_fs *fs, struct dl_reply *r, int ret);
/* A call refused with err (or answered 0 with nothing to do) that reaches
 * no device: as control traffic (ctl) or counted and traced as top. */
void dl_reply_nodev(fuse_req_t req, int ctl, uint8_t trace_op, fuse_ino_t ino, int err);
/* A close (release, releasedir): the kernel sends it on its own (no client),
 * so it is counted for whoever opened the file. */
void dl_reply_close(struct dl_fs *fs, fuse_req_t req, uint8_t trace_op, uint64_t file_id,
		    const struct dl_client *opener);
/* A client packed in 64 bits (a handle field), and back. */
static inline uint64_t dl_client_pack(const struct dl_client *c)
{
	return ((uint64_t)c->job << 32) | c->pid;
}
static inline struct dl_client dl_client_unpack(uint64_t v)
{
	struct dl_client c = {.tid = (uint32_t)v, .pid = (uint32_t)v, .job = (uint32_t)(v >> 32)};

	return c;
}
/* The one answer that cannot go through the path: no memory for a reply. */
void dl_reply_enomem(fuse_req_t req);
/* r->buf from the daemon's read-buffer pool (fs->max_read bytes), given
 * back when the reply is freed: 0 or -ENOMEM. */
int dl_reply_pool_buf(struct dl_fs *fs, struct dl_reply *r);
/* An error (or, with err 0, a success without data) through the path; nodev:
 * the request reaches no device (a refusal, a close), so it costs no time. */
void dl_reply_err(struct dl_fs *fs, fuse_req_t req, enum dl_op_class cls, uint8_t trace_op,
		  uint64_t file_id, int err, int nodev);
/* Ask the pacer when r is due (r->submit_ns must be set before the work that
 * the reply carries was done: dl_reply_begin sets it), then reply now or park it
 * for the timer thread. Takes ownership of r. */
void dl_reply_submit(struct dl_fs *fs, struct dl_reply *r);
/* Send r now and free it (used by the timer thread and the fast path). */
void dl_reply_send(struct dl_fs *fs, struct dl_reply *r);

/* A parked reply whose client was interrupted: answer EINTR now (what it
 * carried is dropped) and free it. */
void dl_reply_interrupted(struct dl_fs *fs, struct dl_reply *r);
/* Ask the pacer when a parked r is due under its new model; sets r->send_ns. */
void dl_reply_retime(struct dl_fs *fs, struct dl_reply *r);

/* Timer thread: a min-heap of parked replies, each sent at its due time.
 * A parked request whose client is interrupted (a signal) is answered EINTR
 * at once. */
struct dl_timer;
int dl_timer_start(struct dl_fs *fs, struct dl_timer **out);
void dl_timer_stop(struct dl_timer *t);	/* sends everything still parked, now */
void dl_timer_park(struct dl_timer *t, struct dl_reply *r);
/* Nothing parked now (a hint, read without the lock). */
int dl_timer_idle(struct dl_timer *t);
/* After a live change of the storage model: every parked reply is timed
 * again under it (never later than it was due). */
void dl_timer_retime(struct dl_timer *t);

uint64_t dl_now_ns(void);

#endif
