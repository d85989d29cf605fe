/* A traced job under other storage, in virtual time: its requests go
 * through the same pacer library the mount uses (a pure library with an
 * injected clock), and only the storage's answers change.
 *
 * What stays as recorded is the client: each thread (pid, tid; and its node
 * in a merged trace of a cluster's nodes) keeps its own order of requests
 * and its think time. A thread's request follows one event
 * of its own, the latest before it: the reply of one of its earlier requests
 * (the read it waited for) or, when requests overlap (readahead), its
 * previous request's arrival. The gap after that event is the client's own
 * time (CPU, decode, compute) and is kept. A thread's first request follows
 * the latest event of its job (a DataLoader worker starts when the loop has
 * listed the files), or the job's start.
 *
 * What changes is each reply: the pacer's delay at the new setting, plus the
 * daemon's own time. To tell the two apart, the trace is first run open loop
 * (every request at its recorded arrival) through a pacer at the recorded
 * setting, from the bucket state the recording follows best (open_loop()),
 * replies matched with due times by rank per class: a reply that took up to
 * twice the pacer's time was the storage's, and what came after its due
 * time is the daemon's lateness, kept; a reply that took longer was the
 * daemon's (generating, or no CPU), and its recorded duration stays a
 * floor.
 *
 * clients > 1 starts that many copies of every job of the trace at once on
 * the one pacer (N nodes or N users sharing one device), each copy its own
 * job to the pacer. The event queue is a binary heap of (time, sequence):
 * arrivals are processed in time order, so the pacer sees time move forward
 * as it does in the daemon. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include "dliofs/trace.h"
#include "dlio_whatif_i.h"

#define T0 1000000000ULL /* virtual time of a replay's start (ns) */

struct rreq {
	uint64_t a, d;	/* recorded arrival (since the origin) and duration */
	uint64_t e, g;	/* the daemon's lateness after due, and its floor */
	uint64_t delta; /* gap after the anchor event */
	struct dl_pacer_req preq;
	uint32_t job;	      /* the trace's job (preq.job: the pacer's, per node) */
	int64_t anchor;	      /* request it follows; -1: the origin */
	uint8_t on_reply;     /* follows the anchor's reply, else its arrival */
	uint32_t dep0, ndeps; /* its dependents: deps[dep0 .. dep0 + ndeps) */
};

struct model {
	size_t n;
	struct rreq *r;
	uint32_t *deps;
	uint32_t *jobs; /* the trace's job ids, sorted */
	size_t njobs;
};

static enum dl_op_class class_of(unsigned op)
{
	switch (op) {
	case DL_TOP_READ:
		return DL_OP_READ;
	case DL_TOP_WRITE:
	case DL_TOP_FSYNC:
		return DL_OP_WRITE;
	default:
		return DL_OP_META;
	}
}

/* Answers that reach no device in the daemon: closes and refusals. */
static int nodev(const struct dl_trace_rec *x)
{
	if (x->op == DL_TOP_RELEASE || x->op == DL_TOP_RELEASEDIR || x->op == DL_TOP_FLUSH)
		return 1;
	return (x->flags & 2) && x->op != DL_TOP_LOOKUP && x->op != DL_TOP_GETATTR &&
	       x->op != DL_TOP_READ && x->op != DL_TOP_READDIR;
}

/* ---- the anchors ---- */

struct ev {
	uint64_t t;
	uint64_t i;
};

static void hpush(struct ev *h, size_t *n, struct ev e)
{
	size_t i = (*n)++;

	while (i) {
		size_t p = (i - 1) / 2;

		if (h[p].t < e.t || (h[p].t == e.t && h[p].i <= e.i))
			break;
		h[i] = h[p];
		i = p;
	}
	h[i] = e;
}

static struct ev hpop(struct ev *h, size_t *n)
{
	struct ev top = h[0], last = h[--*n];
	size_t i = 0;

	for (;;) {
		size_t l = 2 * i + 1, m = i;
		const struct ev *best = &last;

		if (l < *n && (h[l].t < best->t || (h[l].t == best->t && h[l].i < best->i))) {
			m = l;
			best = &h[l];
		}
		if (l + 1 < *n &&
		    (h[l + 1].t < best->t || (h[l + 1].t == best->t && h[l + 1].i < best->i)))
			m = l + 1;
		if (m == i)
			break;
		h[i] = h[m];
		i = m;
	}
	if (*n)
		h[i] = last;
	return top;
}

/* A thread is (job, node, pid, tid): a merged trace's nodes may be hosts
 * whose pids and tids coincide. */
static int same_thread(const struct dl_trace_file *t, uint32_t i, uint32_t j)
{
	const struct dl_trace_rec *a = &t->recs[i], *b = &t->recs[j];

	return a->job == b->job && dl_trace_node(t, i) == dl_trace_node(t, j) &&
	       a->pid == b->pid && a->tid == b->tid;
}

static int cmp_thread(const void *pa, const void *pb, void *arg)
{
	const struct dl_trace_file *t = arg;
	uint32_t ia = *(const uint32_t *)pa, ib = *(const uint32_t *)pb;
	const struct dl_trace_rec *a = &t->recs[ia], *b = &t->recs[ib];

	if (a->job != b->job)
		return a->job < b->job ? -1 : 1;
	if (dl_trace_node(t, ia) != dl_trace_node(t, ib))
		return dl_trace_node(t, ia) < dl_trace_node(t, ib) ? -1 : 1;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	return *(const uint32_t *)pa < *(const uint32_t *)pb ? -1 : 1;
}

static int cmp_file(const void *pa, const void *pb, void *arg)
{
	const struct dl_trace_rec *recs = arg;
	uint64_t a = recs[*(const uint32_t *)pa].file_id, b = recs[*(const uint32_t *)pb].file_id;

	return a < b ? -1 : a > b;
}

/* Latest event of job (an arrival or a reply) strictly before request i's
 * arrival t, among the requests that arrived before it: scanned backwards,
 * stopping where even the longest request could not reply later. */
static void job_event_before(const struct model *m, const uint32_t *rjob, size_t i, uint64_t maxdur,
			     int64_t *anchor, int *on_reply, uint64_t *at)
{
	uint64_t t = m->r[i].a;

	*anchor = -1;
	*at = 0;
	for (size_t k = i; k-- > 0;) {
		const struct rreq *q = &m->r[k];

		if (*anchor >= 0 && q->a + maxdur < *at)
			break;
		if (rjob[k] != rjob[i] || q->a >= t)
			continue;
		if (*anchor < 0 || q->a > *at) {
			*anchor = (int64_t)k;
			*on_reply = 0;
			*at = q->a;
		}
		if (q->a + q->d < t && q->a + q->d > *at) {
			*anchor = (int64_t)k;
			*on_reply = 1;
			*at = q->a + q->d;
		}
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The daemon stamps a reply when its write to /dev/fuse returns, by which
 * time the client may already have sent its next request: a thread's
 * sequential pieces of one pread then seem to overlap by up to a few hundred
 * microseconds (7 us to 0.73 ms in the README's worked example). Taken for
 * overlap, the next piece followed the previous one's *arrival* by the whole
 * recorded service time, and a replay at faster storage kept that slow
 * pacing (its 500 MB/s prediction 10% slow). A reply within REPLY_SKEW after
 * an arrival that came well after the previous one's (a burst of readahead
 * arrives within microseconds, far from any reply) is the event it followed. */
#define REPLY_SKEW 1000000ULL

/* Each thread's requests in order: its anchors, from a heap of its
 * outstanding replies. */
static int thread_anchors(struct model *m, const uint32_t *idx, size_t lo, size_t hi,
			  const uint32_t *rjob, uint64_t maxdur, struct ev *heap)
{
	size_t nh = 0;

	for (size_t k = lo; k < hi; k++) {
		struct rreq *q = &m->r[idx[k]];
		struct ev last = {0, 0};
		int have = 0;

		while (nh && (heap[0].t <= q->a ||
			      (k > lo && heap[0].t <= q->a + REPLY_SKEW &&
			       q->a - m->r[idx[k - 1]].a > 2 * REPLY_SKEW))) {
			last = hpop(heap, &nh);
			have = 1;
		}
		if (k == lo) {
			int on = 0;
			uint64_t at;

			job_event_before(m, rjob, idx[k], maxdur, &q->anchor, &on, &at);
			q->on_reply = (uint8_t)on;
			q->delta = q->a - at;
		} else {
			const struct rreq *prev = &m->r[idx[k - 1]];

			if (have && last.t >= prev->a) {
				q->anchor = (int64_t)last.i;
				q->on_reply = 1;
				q->delta = q->a > last.t ? q->a - last.t : 0;
			} else {
				q->anchor = idx[k - 1];
				q->on_reply = 0;
				q->delta = q->a - prev->a;
			}
		}
		hpush(heap, &nh, (struct ev){q->a + q->d, idx[k]});
	}
	return 0;
}

static int link_deps(struct model *m)
{
	uint32_t *fill;

	for (size_t i = 0; i < m->n; i++)
		if (m->r[i].anchor >= 0)
			m->r[m->r[i].anchor].ndeps++;
	m->deps = malloc((m->n ? m->n : 1) * sizeof(*m->deps));
	fill = calloc(m->n ? m->n : 1, sizeof(*fill));
	if (!m->deps || !fill) {
		free(fill);
		return -ENOMEM;
	}
	for (size_t i = 0, off = 0; i < m->n; i++) {
		m->r[i].dep0 = (uint32_t)off;
		off += m->r[i].ndeps;
	}
	for (size_t i = 0; i < m->n; i++) {
		int64_t a = m->r[i].anchor;

		if (a >= 0)
			m->deps[m->r[a].dep0 + fill[a]++] = (uint32_t)i;
	}
	free(fill);
	return 0;
}

/* ---- the model of a trace ---- */

/* The emulated cache counts a file's bytes by its size: the reads say how
 * far each file goes. idx is scratch. */
static void file_sizes(const struct dl_trace_file *t, struct model *m, uint32_t *idx)
{
	for (size_t i = 0; i < t->nrecs; i++)
		idx[i] = (uint32_t)i;
	qsort_r(idx, t->nrecs, sizeof(*idx), cmp_file, (void *)t->recs);
	for (size_t lo = 0, hi; lo < t->nrecs; lo = hi) {
		uint64_t size = 0, id = t->recs[idx[lo]].file_id;

		for (hi = lo; hi < t->nrecs && t->recs[idx[hi]].file_id == id; hi++) {
			const struct dl_trace_rec *x = &t->recs[idx[hi]];

			if (x->op == DL_TOP_READ && x->offset + x->size > size)
				size = x->offset + x->size;
		}
		for (size_t k = lo; k < hi; k++)
			m->r[idx[k]].preq.file_size = size;
	}
}

static int build(const struct dl_trace_file *t, uint64_t origin, struct model *m, uint32_t *rjob)
{
	uint32_t *idx = malloc((t->nrecs ? t->nrecs : 1) * sizeof(*idx));
	struct ev *heap = malloc((t->nrecs ? t->nrecs : 1) * sizeof(*heap));
	uint64_t maxdur = 0;
	uint32_t jstride = 1;
	int ret = -ENOMEM;

	if (!idx || !heap)
		goto out;
	/* A merged trace's nodes each had a pacer of their own: a job's
	 * streams and runs on one node are not another node's, so each node's
	 * part of a job is a job of its own to the one pacer here. */
	for (size_t i = 0; t->nodes && i < t->nrecs; i++)
		if (t->recs[i].job >= jstride)
			jstride = t->recs[i].job + 1;
	for (size_t i = 0; i < t->nrecs; i++) {
		const struct dl_trace_rec *x = &t->recs[i];
		struct rreq *q = &m->r[i];

		q->a = x->start_ns > origin ? x->start_ns - origin : 0;
		q->d = dl_trace_dur(x);
		q->preq.cls = class_of(x->op);
		q->preq.file_id = x->file_id;
		q->preq.off = x->offset;
		q->preq.len = x->op == DL_TOP_READ || x->op == DL_TOP_WRITE ? x->size : 0;
		q->job = x->job;
		q->preq.job = x->job + (t->nodes ? t->nodes[i] * jstride : 0);
		q->preq.flags = nodev(x) ? DL_PREQ_NODEV : 0;
		if (x->flags & 4)
			q->preq.flags |= DL_PREQ_BUFFERED;
		/* The inode a metadata request reads, as the mount tells the
		 * pacer; a lookup's record names the directory, not what it
		 * found, so it stays a first touch. */
		if (q->preq.cls == DL_OP_META && x->op != DL_TOP_LOOKUP &&
		    x->op != DL_TOP_READDIR)
			q->preq.inode = x->file_id;
		rjob[i] = q->preq.job;
	}
	file_sizes(t, m, idx);
	for (size_t i = 0; i < t->nrecs; i++) {
		idx[i] = (uint32_t)i;
		maxdur = m->r[i].d > maxdur ? m->r[i].d : maxdur;
	}
	qsort_r(idx, t->nrecs, sizeof(*idx), cmp_thread, (void *)t);
	for (size_t lo = 0, hi; lo < t->nrecs; lo = hi) {
		for (hi = lo + 1; hi < t->nrecs && same_thread(t, idx[lo], idx[hi]); hi++)
			;
		thread_anchors(m, idx, lo, hi, rjob, maxdur, heap);
	}
	ret = link_deps(m);
out:
	free(idx);
	free(heap);
	return ret;
}

/* Where the token buckets stood when the recording began is not in the
 * trace: empty at the first read (the run's settings changed the bandwidth
 * just before its job started: a change empties the bucket at the next
 * request), filling since the first request, or full (nothing changed since
 * a mount long before). Each is tried open loop and the one whose due times
 * the recorded replies follow best is taken; a wrong one would shift every
 * due time of a busy period by up to burst / bandwidth. */
static void pacer_starts(const struct model *m, uint64_t st[3])
{
	uint64_t any = UINT64_MAX, rd = UINT64_MAX;

	for (size_t i = 0; i < m->n; i++) {
		any = m->r[i].a < any ? m->r[i].a : any;
		if (m->r[i].preq.cls == DL_OP_READ && m->r[i].a < rd)
			rd = m->r[i].a;
	}
	st[0] = T0 + (rd != UINT64_MAX ? rd : any != UINT64_MAX ? any : 0);
	st[1] = T0 + (any != UINT64_MAX ? any : 0);
	st[2] = T0 / 2; /* half a virtual second of credit: a full bucket */
}

static int cmp_ev(const void *a, const void *b)
{
	const struct ev *x = a, *y = b;

	return x->t < y->t ? -1 : x->t > y->t ? 1 : (x->i > y->i) - (x->i < y->i);
}

/* One open-loop pass from pacer start `start`: each request at its recorded
 * arrival. The daemon hands requests to its pacer in the order their work
 * is done, not quite in arrival order (the first read of a file computes
 * its checksums), so two requests may trade places in the device's queue:
 * a class's recorded replies are matched with its due times by rank, which
 * no such swap changes. With split, each recorded reply is divided into
 * the storage's time and the daemon's (below). Returns how far the replies
 * were from the due times (ns, reads, each capped at 1 s), UINT64_MAX when
 * the pacer failed. */
static uint64_t open_loop(struct model *m, const struct dl_pacer_cfg *rec, uint64_t seed,
			  uint64_t start, int split, double *daemon_share)
{
	size_t paced = 0, daemon = 0;
	uint64_t *due = malloc((m->n ? m->n : 1) * sizeof(*due)), cost = 0;
	struct ev *reply = malloc((m->n ? m->n : 1) * sizeof(*reply));
	struct dl_pacer *p = NULL;

	if (!due || !reply || dl_pacer_new(rec, start, seed, &p)) {
		free(due);
		free(reply);
		return UINT64_MAX;
	}
	for (int c = 0; c < DL_OP__COUNT; c++) {
		size_t k = 0;

		for (size_t i = 0; i < m->n; i++) {
			struct rreq *q = &m->r[i];
			struct dl_pacer_result res;

			if ((int)q->preq.cls != c || (q->preq.flags & DL_PREQ_NODEV))
				continue;
			if (dl_pacer_submit(p, &q->preq, T0 + q->a, &res))
				continue;
			dl_pacer_complete(p, &q->preq, &res, res.due_ns);
			due[k] = res.due_ns;
			reply[k++] = (struct ev){T0 + q->a + q->d, i};
		}
		qsort(due, k, sizeof(*due), cmp_u64);
		qsort(reply, k, sizeof(*reply), cmp_ev);
		for (size_t r = 0; r < k; r++) {
			struct rreq *q = &m->r[reply[r].i];
			uint64_t a = T0 + q->a, pd = due[r] > a ? due[r] - a : 0;
			uint64_t off = reply[r].t > due[r] ? reply[r].t - due[r] : due[r] - reply[r].t;
			int rd = c == DL_OP_READ && q->preq.len;

			if (rd) {
				cost += off < 1000000000ULL ? off : 1000000000ULL;
				paced++;
			}
			if (!split)
				continue;
			/* After its due time a reply waits for the daemon: its
			 * lateness (a timer, a CPU), kept as it was. A reply that
			 * took more than twice the storage's time was the
			 * daemon's work (generating the bytes), which no storage
			 * shortens: its duration is a floor. */
			q->e = q->g = 0;
			if (q->d > pd && pd < q->d / 2) {
				q->g = q->d;
				daemon += rd;
			} else if (q->d > pd) {
				q->e = q->d - pd;
			}
		}
	}
	/* Requests that reach no device: their recorded time is the daemon's. */
	for (size_t i = 0; split && i < m->n; i++)
		if (m->r[i].preq.flags & DL_PREQ_NODEV) {
			m->r[i].e = 0;
			m->r[i].g = m->r[i].d;
		}
	dl_pacer_free(p);
	free(due);
	free(reply);
	if (split)
		*daemon_share = paced ? (double)daemon / (double)paced : 0;
	return cost;
}

/* Open loop at the recorded setting: how much of each recorded reply was
 * the storage's; *start: the pacer start that matched the recording. */
static int split_daemon_time(struct model *m, const struct dl_pacer_cfg *rec, uint64_t seed,
			     double *daemon_share, uint64_t *start)
{
	uint64_t st[3], best = UINT64_MAX;

	pacer_starts(m, st);
	*start = st[0];
	for (int k = 0; k < 3; k++) {
		uint64_t c = open_loop(m, rec, seed, st[k], 0, NULL);

		if (c < best) {
			best = c;
			*start = st[k];
		}
	}
	if (best == UINT64_MAX)
		return -EINVAL;
	open_loop(m, rec, seed, *start, 1, daemon_share);
	return 0;
}

static void model_free(struct model *m)
{
	free(m->r);
	free(m->deps);
	free(m->jobs);
	memset(m, 0, sizeof(*m));
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The trace's jobs, for the figures per job (a merged trace's job on
 * several nodes is one). */
static int model_jobs(struct model *m)
{
	m->jobs = malloc((m->n ? m->n : 1) * sizeof(*m->jobs));
	if (!m->jobs)
		return -ENOMEM;
	for (size_t i = 0; i < m->n; i++)
		m->jobs[i] = m->r[i].job;
	qsort(m->jobs, m->n, sizeof(*m->jobs), cmp_u32);
	for (size_t i = 0; i < m->n; i++)
		if (!m->njobs || m->jobs[m->njobs - 1] != m->jobs[i])
			m->jobs[m->njobs++] = m->jobs[i];
	return 0;
}

static size_t job_slot(const struct model *m, uint32_t job)
{
	size_t lo = 0, hi = m->njobs;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (m->jobs[mid] < job)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* ---- the replay ---- */

static void name_job(struct dl_pacer *p, const struct dl_trace_file *t, uint32_t id, uint32_t job,
		     unsigned client)
{
	const char *n = dl_trace_name_find(t, DL_TRACE_JOB_ID(job));
	char name[160];

	snprintf(name, sizeof(name), "%s#%u", n ? n : "job", client);
	dl_pacer_job_info(p, id, name, 1, 1);
}

static int replay(const struct dl_trace_file *t, const struct model *m, struct dl_pacer *p,
		  unsigned clients, struct wi_replay *out)
{
	size_t cap = 1024, nh = 0;
	struct ev *heap = malloc(cap * sizeof(*heap));
	uint64_t lat_sum = 0, nreads = 0, rbytes = 0, first = UINT64_MAX, last = 0;
	uint32_t stride = 1;

	if (!heap)
		return -ENOMEM;
	for (size_t i = 0; i < m->n; i++)
		if (m->r[i].preq.job >= stride)
			stride = m->r[i].preq.job + 1;
	/* An event's index: request i of client c is c * n + i. */
	for (unsigned c = 0; c < clients; c++)
		for (size_t i = 0; i < m->n; i++)
			if (m->r[i].anchor < 0) {
				if (nh == cap) {
					struct ev *h = realloc(heap, (cap *= 2) * sizeof(*heap));
					if (!h) {
						free(heap);
						return -ENOMEM;
					}
					heap = h;
				}
				hpush(heap, &nh, (struct ev){T0 + m->r[i].delta, c * m->n + i});
			}
	while (nh) {
		struct ev ev = hpop(heap, &nh);
		unsigned c = (unsigned)(ev.i / m->n);
		const struct rreq *q = &m->r[ev.i % m->n];
		struct dl_pacer_req req = q->preq;
		struct dl_pacer_result res;
		struct wi_rjob *jb;
		uint64_t reply;

		req.job = q->preq.job + c * stride;
		if (dl_pacer_submit(p, &req, ev.t, &res)) {
			free(heap);
			return -EINVAL;
		}
		if (res.flags & DL_PRES_NEW_JOB)
			name_job(p, t, req.job, q->job, c);
		reply = res.due_ns + q->e;
		if (ev.t + q->g > reply)
			reply = ev.t + q->g;
		dl_pacer_complete(p, &req, &res, reply);
		jb = &out->jobs[c * m->njobs + job_slot(m, q->job)];
		if (ev.t < jb->first_ns)
			jb->first_ns = ev.t;
		if (reply > jb->last_ns)
			jb->last_ns = reply;
		jb->reqs++;
		if (req.cls == DL_OP_READ) {
			jb->read_bytes += req.len;
			jb->read_wait_s += (double)(reply - ev.t) / 1e9;
			/* A read at the end of a file moves nothing: no cache look-up. */
			jb->cache_reqs += req.len > 0;
			jb->cache_hits += req.len > 0 && res.hit_bytes == req.len;
			jb->hit_bytes += res.hit_bytes;
			jb->miss_bytes += req.len - res.hit_bytes;
			rbytes += req.len;
			lat_sum += reply - ev.t;
			nreads++;
		}
		first = ev.t < first ? ev.t : first;
		last = reply > last ? reply : last;
		if (nh + q->ndeps > cap) {
			while (nh + q->ndeps > cap)
				cap *= 2;
			struct ev *h = realloc(heap, cap * sizeof(*heap));
			if (!h) {
				free(heap);
				return -ENOMEM;
			}
			heap = h;
		}
		for (uint32_t k = 0; k < q->ndeps; k++) {
			uint32_t j = m->deps[q->dep0 + k];
			uint64_t at = (m->r[j].on_reply ? reply : ev.t) + m->r[j].delta;

			hpush(heap, &nh, (struct ev){at, c * m->n + j});
		}
		out->reqs++;
	}
	free(heap);
	out->span_s = last > first ? (double)(last - first) / 1e9 : 0;
	out->read_mb_per_s = out->span_s > 0 ? (double)rbytes / out->span_s / 1e6 : 0;
	out->read_lat_mean_s = nreads ? (double)lat_sum / (double)nreads / 1e9 : 0;
	return 0;
}

int wi_replay_run(const struct dl_trace_file *t, uint64_t origin, const struct dl_pacer_cfg *rec,
		  const struct dl_pacer_cfg *cfg, unsigned clients, uint64_t seed,
		  struct wi_replay *out)
{
	struct model m = {0};
	uint32_t *rjob = NULL;
	struct dl_pacer *p = NULL;
	uint64_t start = T0;
	int ret = -ENOMEM;

	memset(out, 0, sizeof(*out));
	if (!clients)
		clients = 1;
	m.n = t->nrecs;
	m.r = calloc(m.n ? m.n : 1, sizeof(*m.r));
	rjob = malloc((m.n ? m.n : 1) * sizeof(*rjob));
	if (!m.r || !rjob)
		goto out;
	ret = build(t, origin, &m, rjob);
	if (!ret)
		ret = model_jobs(&m);
	if (!ret)
		ret = split_daemon_time(&m, rec, seed, &out->daemon_share, &start);
	if (ret)
		goto out;
	out->clients = clients;
	out->emulated_cache =
	    cfg->cache.policy == DL_CACHE_LRU || cfg->cache.policy == DL_CACHE_MINIO;
	out->njobs = m.njobs * clients;
	out->jobs = calloc(out->njobs ? out->njobs : 1, sizeof(*out->jobs));
	if (!out->jobs) {
		ret = -ENOMEM;
		goto out;
	}
	for (unsigned c = 0; c < clients; c++)
		for (size_t j = 0; j < m.njobs; j++) {
			out->jobs[c * m.njobs + j].job = m.jobs[j];
			out->jobs[c * m.njobs + j].client = c;
			out->jobs[c * m.njobs + j].first_ns = UINT64_MAX;
		}
	ret = dl_pacer_new(cfg, start, seed, &p);
	if (!ret)
		ret = replay(t, &m, p, clients, out);
	/* Times relative to the replay's origin, as the recorded ones are. */
	for (size_t j = 0; j < out->njobs; j++) {
		struct wi_rjob *jb = &out->jobs[j];

		jb->first_ns = jb->first_ns == UINT64_MAX ? 0 : jb->first_ns - T0;
		jb->last_ns = jb->last_ns > T0 ? jb->last_ns - T0 : 0;
	}
out:
	dl_pacer_free(p);
	free(rjob);
	model_free(&m);
	return ret;
}

void wi_replay_free(struct wi_replay *r)
{
	free(r->jobs);
	memset(r, 0, sizeof(*r));
}

const struct wi_rjob *wi_replay_job(const struct wi_replay *r, unsigned client, uint32_t job)
{
	for (size_t j = 0; j < r->njobs; j++)
		if (r->jobs[j].client == client && r->jobs[j].job == job)
			return &r->jobs[j];
	return NULL;
}
