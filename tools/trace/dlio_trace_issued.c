/* Request sizes as the application issued them, where they can be known.
 *
 * The kernel splits a read or write larger than its largest FUSE request
 * (max_pages: 1 MiB on dliofs) into pieces: a 10 MiB pread arrives as 11
 * requests (the first a page short when the user buffer is not page
 * aligned). The trace holds the pieces; here a thread's pieces of one call
 * are joined again. A piece continues the thread's previous request when
 *   - both come from the same thread (version 1: the same client pid),
 *     on the same file, with the same operation;
 *   - it starts where the previous one ended (offset + size asked for);
 *   - the previous one was a full piece: its size at most DT_PIECE_SLACK
 *     short of the kernel's largest request (DT_MAX_REQUEST on a dliofs
 *     mount, or what `summary --max-request` says, or the largest request
 *     of that operation in the trace if larger) and it returned all it
 *     asked for;
 *   - it arrives at most DT_PIECE_GAP_NS after the previous one's reply.
 * Limits: a loop of calls each the size of the largest request, back to
 * back, looks the same as one large call, and so does readahead (the
 * kernel's own full-size reads ahead of a buffered reader). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dlio_trace_i.h"

struct call {
	uint64_t size;	   /* bytes asked for by the pieces so far */
	uint64_t next_off; /* where the next piece would start */
	uint64_t end_ns;   /* the latest reply of a piece */
	unsigned op;
	int full; /* the last piece was full: the call may go on */
};

static void flush(struct dt_stats *s, struct call *c)
{
	struct dt_op_stats *o = &s->ops[c->op];

	o->issued++;
	o->issued_hist[dt_size_bucket(c->size)]++;
}

static int is_full(const struct dt_stats *s, const struct dl_trace_rec *r)
{
	return r->size + DT_PIECE_SLACK > s->ops[r->op].split_at && r->result >= 0 &&
	       (uint64_t)r->result == r->size;
}

/* A thread (version 1: the pid was the thread); a merged trace's node goes
 * above the pid, which has 22 bits (Linux's largest pid is 2^22). */
static uint64_t thread_key(const struct dl_trace_file *t, uint64_t i)
{
	const struct dl_trace_rec *r = &t->recs[i];
	uint64_t who = t->h.version >= 2 ? (uint64_t)r->pid << 32 | r->tid : r->pid;

	return t->nodes ? who ^ (uint64_t)t->nodes[i] << 54 : who;
}

int dt_issued_compute(const struct dl_trace_file *t, struct dt_stats *s, uint64_t max_request)
{
	struct dt_map open = {0};
	struct call *calls = NULL;
	size_t ncalls = 0, cap = 0;
	int ret = -ENOMEM, created;

	for (unsigned op = DL_TOP_READ; op <= DL_TOP_WRITE; op++) {
		struct dt_op_stats *o = &s->ops[op];

		o->issued = 0;
		memset(o->issued_hist, 0, sizeof(o->issued_hist));
		o->split_at = o->max_size > max_request ? o->max_size : max_request;
	}

	for (uint64_t i = 0; i < t->nrecs; i++) {
		const struct dl_trace_rec *r = &t->recs[i];
		uint64_t who = thread_key(t, i);
		uint64_t *slot, end = r->start_ns + dl_trace_dur(r);
		struct call *c;
		int cont;

		if (r->op != DL_TOP_READ && r->op != DL_TOP_WRITE)
			continue;
		slot = dt_map_get(&open, who, r->file_id, &created);
		if (!slot)
			goto out;
		if (created) {
			if (ncalls == cap) {
				size_t ncap = cap ? cap * 2 : 256;
				struct call *nc = realloc(calls, ncap * sizeof(*nc));

				if (!nc)
					goto out;
				calls = nc;
				cap = ncap;
			}
			*slot = ncalls++;
		}
		c = &calls[*slot];
		cont = !created && c->full && c->op == r->op && r->offset == c->next_off &&
		       r->start_ns <= c->end_ns + DT_PIECE_GAP_NS;
		if (!created && !cont)
			flush(s, c);
		if (!cont) {
			c->size = 0;
			c->end_ns = end;
		}
		c->op = r->op;
		c->size += r->size;
		c->next_off = r->offset + r->size;
		c->end_ns = end > c->end_ns ? end : c->end_ns;
		c->full = is_full(s, r);
	}
	/* Every (thread, file) ends with one call in progress. */
	for (size_t k = 0; k < ncalls; k++)
		flush(s, &calls[k]);
	ret = 0;
out:
	free(calls);
	dt_map_free(&open);
	return ret;
}
