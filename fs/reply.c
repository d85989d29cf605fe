/* Deferred replies: ask the pacer, then send now or hand to the timer. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs_i.h"
#include "reply.h"

static struct dl_reply *reply_new(fuse_req_t req, enum dl_reply_kind kind, enum dl_op_class cls,
				  uint8_t trace_op)
{
	struct dl_reply *r = calloc(1, sizeof(*r));
	struct dl_fs *fs = fuse_req_userdata(req);
	const struct fuse_ctx *c;

	if (!r)
		return NULL;
	/* Before anything is done for the request, resolving its client too. */
	r->submit_ns = dl_now_ns();
	r->kind = kind;
	r->top = trace_op;
	r->req = req;
	r->preq.cls = cls;
	c = fuse_req_ctx(req);
	if (c && fs->clients)
		r->client_new = dl_clients_resolve(fs->clients, (uint32_t)c->pid, r->submit_ns,
						   &r->client);
	else if (c)
		r->client.tid = r->client.pid = (uint32_t)c->pid;
	r->preq.job = r->client.job;
	/* `dliofs mount` waits for the mount with a stat, and the daemon looks
	 * up its own mount to set its readahead: neither is a job's. */
	if ((fs->launcher && r->client.pid == (uint32_t)fs->launcher) ||
	    r->client.pid == (uint32_t)fs->self)
		r->ctl = 1;
	return r;
}

void dl_reply_enomem(fuse_req_t req)
{
	fuse_reply_err(req, ENOMEM);
}

struct dl_reply *dl_reply_begin(fuse_req_t req, enum dl_reply_kind kind, enum dl_op_class cls,
				uint8_t trace_op, fuse_ino_t ino)
{
	struct dl_reply *r = reply_new(req, kind, cls, trace_op);

	if (!r) {
		dl_reply_enomem(req);
		return NULL;
	}
	r->preq.file_id = ino;
	return r;
}

struct dl_reply *dl_reply_begin_ctl(fuse_req_t req, enum dl_reply_kind kind)
{
	struct dl_reply *r = calloc(1, sizeof(*r));

	if (!r) {
		dl_reply_enomem(req);
		return NULL;
	}
	r->submit_ns = dl_now_ns();
	r->kind = kind;
	r->req = req;
	r->ctl = 1;
	return r;
}

void dl_reply_nodev(fuse_req_t req, int ctl, uint8_t trace_op, fuse_ino_t ino, int err)
{
	struct dl_reply *r;

	if (!ctl) {
		dl_reply_err(fuse_req_userdata(req), req, DL_OP_META, trace_op, ino, err, 1);
		return;
	}
	r = dl_reply_begin_ctl(req, DL_R_ERR);
	if (!r)
		return;
	r->err = err;
	dl_reply_submit(fuse_req_userdata(req), r);
}

void dl_reply_close(struct dl_fs *fs, fuse_req_t req, uint8_t trace_op, uint64_t file_id,
		    const struct dl_client *opener)
{
	struct dl_reply *r = dl_reply_begin(req, DL_R_ERR, DL_OP_META, trace_op, file_id);

	if (!r)
		return;
	if (!r->client.pid && opener) {
		r->client = *opener;
		r->preq.job = opener->job;
	}
	r->preq.flags |= DL_PREQ_NODEV;
	dl_reply_submit(fs, r);
}

void dl_reply_err(struct dl_fs *fs, fuse_req_t req, enum dl_op_class cls, uint8_t trace_op,
		  uint64_t file_id, int err, int nodev)
{
	struct dl_reply *r = dl_reply_begin(req, DL_R_ERR, cls, trace_op, file_id);

	if (!r)
		return;
	r->err = err;
	if (nodev)
		r->preq.flags |= DL_PREQ_NODEV;
	dl_reply_submit(fs, r);
}

int dl_reply_pool_buf(struct dl_fs *fs, struct dl_reply *r)
{
	r->buf = dl_fs_buf_get(fs);
	if (!r->buf)
		return -ENOMEM;
	r->pooled = 1;
	return 0;
}

static void release_buf(struct dl_fs *fs, struct dl_reply *r)
{
	if (!r->buf)
		return;
	if (r->pooled)
		dl_fs_buf_put(fs, r->buf);
	else
		free(r->buf);
	r->buf = NULL;
}

void dl_reply_finish(struct dl_fs *fs, struct dl_reply *r, int ret)
{
	if (ret < 0) {
		release_buf(fs, r);
		r->kind = DL_R_ERR;
		r->err = -ret;
		r->on_abort = NULL;
	}
	dl_reply_submit(fs, r);
}

/* Replies at least this large teach the copy cost: smaller ones are
 * dominated by the system call's fixed part. */
#define COPY_SAMPLE_MIN (128u << 10)

/* A data reply; large ones are timed: the kernel copies the bytes into the
 * reader's buffer inside this call. */
static int send_buf(struct dl_fs *fs, struct dl_reply *r)
{
	uint64_t t0, dt, ps, old;
	int ret;

	if (r->len < COPY_SAMPLE_MIN)
		return fuse_reply_buf(r->req, r->buf, r->len);
	t0 = dl_now_ns();
	ret = fuse_reply_buf(r->req, r->buf, r->len);
	dt = dl_now_ns() - t0;
	if (ret)
		return ret;
	/* A running average (1/8 new): a lost update between two workers is
	 * only one sample fewer. */
	ps = dt * 1000 / r->len;
	old = atomic_load_explicit(&fs->reply_ps_per_byte, memory_order_relaxed);
	atomic_store_explicit(&fs->reply_ps_per_byte, old ? (7 * old + ps) / 8 : ps,
			      memory_order_relaxed);
	return ret;
}

/* How much earlier than due a reply is sent: the kernel's share of the
 * round trip, and for data its copy into the reader's buffer. */
static uint64_t early_ns(struct dl_fs *fs, const struct dl_reply *r)
{
	uint64_t e = fs->fuse_overhead_ns;

	if (r->kind == DL_R_BUF && r->len >= COPY_SAMPLE_MIN)
		e += atomic_load_explicit(&fs->reply_ps_per_byte, memory_order_relaxed) * r->len /
		     1000;
	return e;
}

void dl_reply_send(struct dl_fs *fs, struct dl_reply *r)
{
	int ret = 0;

	switch (r->kind) {
	case DL_R_ERR:
		ret = fuse_reply_err(r->req, r->err);
		break;
	case DL_R_BUF:
		ret = send_buf(fs, r);
		break;
	case DL_R_ENTRY:
		ret = fuse_reply_entry(r->req, &r->e);
		break;
	case DL_R_ATTR:
		ret = fuse_reply_attr(r->req, &r->st, r->attr_timeout);
		break;
	case DL_R_OPEN:
		ret = fuse_reply_open(r->req, &r->fi);
		break;
	case DL_R_CREATE:
		ret = fuse_reply_create(r->req, &r->e, &r->fi);
		break;
	case DL_R_WRITE:
		ret = fuse_reply_write(r->req, r->count);
		break;
	case DL_R_STATFS:
		ret = fuse_reply_statfs(r->req, &r->sv);
		break;
	case DL_R_READLINK:
		ret = fuse_reply_readlink(r->req, r->buf);
		break;
	}
	/* An interrupted open never sees its release: free what it carried. */
	if (ret && r->on_abort)
		r->on_abort(r);
	uint64_t now = dl_now_ns();
	/* Counted as the application will see it: the kernel's share of the
	 * round trip (which the early send made room for) is still to come. */
	if (r->paced)
		dl_pacer_complete(fs->pacer, &r->preq, &r->pres,
				  r->send_ns < r->pres.due_ns ? now + fs->fuse_overhead_ns : now);
	if (!r->ctl)
		dl_fs_trace_reply(fs, r, now);
	release_buf(fs, r);
	free(r);
}

/* The pacer knows a job by its id; it learns the name (and the counts of
 * processes and threads) from the client table. */
static void tell_job(struct dl_fs *fs, uint32_t job)
{
	char name[192];
	uint32_t procs = 0, threads = 0;

	if (job && fs->clients &&
	    dl_clients_job(fs->clients, job, name, sizeof(name), &procs, &threads) == 0)
		dl_pacer_job_info(fs->pacer, job, name, procs, threads);
}

/* A reply takes the kernel fuse_overhead_ns to reach the application
 * (request delivery plus reply), and a data reply its copy time on top:
 * send that much early so the job sees the configured latency (a latency
 * shorter than that: at once, the job's floor). */
static void set_send_ns(struct dl_fs *fs, struct dl_reply *r)
{
	uint64_t early = early_ns(fs, r);

	r->send_ns = r->pres.due_ns > r->submit_ns + early ? r->pres.due_ns - early : r->submit_ns;
}

void dl_reply_retime(struct dl_fs *fs, struct dl_reply *r)
{
	if (r->paced && dl_pacer_retime(fs->pacer, &r->preq, &r->pres, dl_now_ns()) == 1)
		set_send_ns(fs, r);
}

void dl_reply_interrupted(struct dl_fs *fs, struct dl_reply *r)
{
	/* An open that is not answered never sees its release. */
	if (r->on_abort) {
		r->on_abort(r);
		r->on_abort = NULL;
	}
	r->kind = DL_R_ERR;
	r->err = EINTR;
	dl_reply_send(fs, r);
}

/* A reply due this soon, with nothing else waiting, is waited for on the
 * worker that made it, spinning: handed to the timer thread it waits for
 * that thread's wake-up (futex; a sleep on this VM wakes 10-30 us late at
 * a load of 3), and a reader with one request in flight pays that on every
 * request (4 KiB reads at QD1 on a 55 us device: 11.7k IOPS, 13.4k inline,
 * the disk 16k). With more in flight the timer thread is busy anyway and a
 * second spinner takes a core from the job: they are parked. One worker
 * spins at a time. */
#define INLINE_NS 100000ULL
#define INLINE_MAX 1u

static int wait_inline(struct dl_fs *fs, uint64_t until)
{
	if (!dl_timer_idle(fs->timer))
		return 0;
	if (atomic_fetch_add(&fs->inline_waiters, 1) >= INLINE_MAX) {
		atomic_fetch_sub(&fs->inline_waiters, 1);
		return 0;
	}
	while (dl_now_ns() < until)
		;
	atomic_fetch_sub(&fs->inline_waiters, 1);
	return 1;
}

void dl_reply_submit(struct dl_fs *fs, struct dl_reply *r)
{
	uint64_t now;

	if (!r->ctl && fs->pacer &&
	    dl_pacer_submit(fs->pacer, &r->preq, r->submit_ns, &r->pres) == 0) {
		r->paced = 1;
		if ((r->pres.flags & DL_PRES_NEW_JOB) || r->client_new)
			tell_job(fs, r->preq.job);
		set_send_ns(fs, r);
		now = dl_now_ns();
		if (fs->timer && r->send_ns > now &&
		    (r->send_ns - now > INLINE_NS || !wait_inline(fs, r->send_ns))) {
			dl_timer_park(fs->timer, r);
			return;
		}
	}
	dl_reply_send(fs, r);
}
