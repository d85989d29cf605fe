/* Deferred replies: ask the pacer, then send now or hand to the timer. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs_i.h"
#include "reply.h"

struct dl_reply *dl_reply_new(fuse_req_t req, enum dl_reply_kind kind, enum dl_op_class cls,
			      uint8_t trace_op)
{
	struct dl_reply *r = calloc(1, sizeof(*r));
	const struct fuse_ctx *c;

	if (!r)
		return NULL;
	r->kind = kind;
	r->top = trace_op;
	r->req = req;
	r->preq.cls = cls;
	c = fuse_req_ctx(req);
	r->preq.pid = c ? (uint32_t)c->pid : 0;
	/* gettid() is a system call: only the trace wants the worker's id. */
	if (atomic_load_explicit(&((struct dl_fs *)fuse_req_userdata(req))->trace,
				 memory_order_relaxed))
		r->tid = (uint32_t)gettid();
	r->submit_ns = dl_now_ns();
	return r;
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

void dl_reply_send(struct dl_fs *fs, struct dl_reply *r)
{
	int ret = 0;

	switch (r->kind) {
	case DL_R_ERR:
		ret = fuse_reply_err(r->req, r->err);
		break;
	case DL_R_BUF:
		ret = fuse_reply_buf(r->req, r->buf, r->len);
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
	dl_fs_trace_reply(fs, r, now);
	release_buf(fs, r);
	free(r);
}

void dl_reply_submit(struct dl_fs *fs, struct dl_reply *r)
{
	if (fs->pacer && dl_pacer_submit(fs->pacer, &r->preq, r->submit_ns, &r->pres) == 0) {
		r->paced = 1;
		/* A reply takes the kernel fuse_overhead_ns to reach the application
		 * (request delivery plus reply copy): send that much early so the job
		 * sees the configured latency. Only delays longer than that move. */
		r->send_ns = r->pres.due_ns;
		if (r->pres.due_ns >= r->submit_ns + 2 * fs->fuse_overhead_ns)
			r->send_ns -= fs->fuse_overhead_ns;
		if (fs->timer && r->send_ns > dl_now_ns()) {
			dl_timer_park(fs->timer, r);
			return;
		}
	}
	dl_reply_send(fs, r);
}
