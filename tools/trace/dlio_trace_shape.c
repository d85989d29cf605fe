/* What dlio-trace compare scores beyond per-request counts: the order of
 * reads as a shuffle leaves it (reuse distances, files per epoch, runs
 * within files) and the run's course in time (throughput over normalized
 * time, inter-arrival times, requests in flight). Two runs of one job with
 * different shuffle seeds differ in which file comes when, not in these.
 *
 * Each is kept as a weighted sample of values and scored by the two-sample
 * Kolmogorov-Smirnov distance (dt_ks): binning would score two runs whose
 * values straddle a bin edge as different. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dlio_trace_i.h"

/* The reading thread: version 2 records the client's thread in tid,
 * version 1 had it in pid; a merged trace's threads are its nodes' (hosts
 * reuse tids). Visits and runs are a thread's. */
static uint64_t reader_of(const struct dl_trace_file *t, uint64_t i)
{
	const struct dl_trace_rec *r = &t->recs[i];

	if (t->h.version < 2)
		return r->pid;
	return (uint64_t)dl_trace_node(t, i) << 32 | r->tid;
}

static int is_data(const struct dl_trace_rec *r)
{
	return r->op == DL_TOP_READ || r->op == DL_TOP_WRITE;
}

static int push(struct dt_sample *s, uint64_t v, double w)
{
	if (s->n == s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 256;
		struct dt_wv *nv = realloc(s->v, ncap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		s->v = nv;
		s->cap = ncap;
	}
	s->v[s->n++] = (struct dt_wv){v, w};
	return 0;
}

static int cmp_wv(const void *pa, const void *pb)
{
	uint64_t x = ((const struct dt_wv *)pa)->v, y = ((const struct dt_wv *)pb)->v;

	return x < y ? -1 : x > y;
}

static double total(const struct dt_sample *s)
{
	double t = 0;

	for (size_t i = 0; i < s->n; i++)
		t += s->v[i].w;
	return t;
}

double dt_ks(struct dt_sample *a, struct dt_sample *b)
{
	double ta = total(a), tb = total(b), fa = 0, fb = 0, d = 0;
	size_t i = 0, j = 0;

	if (ta <= 0 && tb <= 0)
		return 0.0;
	if (ta <= 0 || tb <= 0)
		return 1.0;
	qsort(a->v, a->n, sizeof(*a->v), cmp_wv);
	qsort(b->v, b->n, sizeof(*b->v), cmp_wv);
	while (i < a->n || j < b->n) {
		/* Every value equal to the smallest left, from both samples. */
		uint64_t x = i == a->n ? b->v[j].v : j == b->n ? a->v[i].v
				 : a->v[i].v < b->v[j].v ? a->v[i].v : b->v[j].v;

		while (i < a->n && a->v[i].v == x)
			fa += a->v[i++].w / ta;
		while (j < b->n && b->v[j].v == x)
			fb += b->v[j++].w / tb;
		if (fa - fb > d)
			d = fa - fb;
		if (fb - fa > d)
			d = fb - fa;
	}
	return d > 1 ? 1 : d;
}

/* Fenwick tree over visit positions: 1 where a file's latest visit is, so
 * that the distinct files visited between two visits of one file is a sum. */
static void bit_add(int64_t *b, size_t n, size_t i, int64_t v)
{
	for (i++; i <= n; i += i & (~i + 1))
		b[i] += v;
}

static int64_t bit_sum(const int64_t *b, size_t i) /* positions [0, i) */
{
	int64_t s = 0;

	for (; i > 0; i -= i & (~i + 1))
		s += b[i];
	return s;
}

/* Reuse distances, epochs and sequential runs, in one pass over the reads. */
static int order_pass(const struct dl_trace_file *t, struct dt_shape *s)
{
	struct dt_map lastpos = {0}, epoch_of = {0}, lastfile = {0}, next = {0}, run = {0};
	size_t n = 0, pos = 0;
	uint64_t epoch = 1, in_epoch = 0, done_files = 0, done_epochs = 0;
	int64_t *bit = NULL;
	int ret = -ENOMEM, created, opens = !!(t->h.ops_mask & (1u << DL_TOP_OPEN));

	for (uint64_t i = 0; i < t->nrecs; i++)
		n += t->recs[i].op == DL_TOP_READ;
	bit = calloc(n + 1, sizeof(*bit));
	if (!bit)
		goto out;
	for (uint64_t i = 0; i < t->nrecs; i++) {
		const struct dl_trace_rec *r = &t->recs[i];
		uint64_t who = reader_of(t, i), f = r->file_id, *lp, *ep, *lf, *nx, *rb;
		uint64_t got = r->result > 0 ? (uint64_t)r->result : 0;
		int restart;

		if (r->op == DL_TOP_OPEN && opens) {
			/* The thread's next read starts a visit. */
			lf = dt_map_get(&lastfile, who, 0, &created);
			if (!lf)
				goto out;
			*lf = 0;
			continue;
		}
		if (r->op != DL_TOP_READ)
			continue;
		/* A visit is a thread turning to a file (its reads of one file
		 * interleave with other threads' as timing has it), or opening
		 * it again; where opens are not traced, reading it from offset
		 * 0 again. Order is scored on visits. */
		nx = dt_map_find(&next, who, f);
		restart = !opens && !r->offset && nx && *nx > 1;
		lf = dt_map_get(&lastfile, who, 0, &created);
		if (!lf)
			goto out;
		if (created || *lf != f + 1 || restart) {
			*lf = f + 1;
			lp = dt_map_get(&lastpos, f, 0, &created);
			if (!lp)
				goto out;
			if (created) {
				if (push(&s->reuse, UINT64_MAX, 1)) /* first visit */
					goto out;
			} else {
				if (push(&s->reuse,
					 (uint64_t)(bit_sum(bit, pos) - bit_sum(bit, *lp)), 1))
					goto out;
				bit_add(bit, n, *lp - 1, -1);
			}
			bit_add(bit, n, pos, 1);
			*lp = ++pos; /* position + 1: 0 is "none" */

			/* A visit to a file already read in this epoch starts
			 * the next one. */
			ep = dt_map_get(&epoch_of, f, 0, &created);
			if (!ep)
				goto out;
			if (*ep == epoch) {
				done_files += in_epoch;
				done_epochs++;
				epoch++;
				in_epoch = 0;
			}
			*ep = epoch;
			in_epoch++;
		}

		/* Sequential runs per (thread, file): bytes read back to back. */
		nx = dt_map_get(&next, who, f, &created);
		if (!nx)
			goto out;
		rb = dt_map_get(&run, who, f, &created);
		if (!rb)
			goto out;
		if (*nx != r->offset + 1) {
			if (*rb && push(&s->runs, *rb, (double)*rb))
				goto out;
			*rb = 0;
		}
		*rb += got;
		*nx = r->offset + got + 1;
	}
	for (size_t k = 0; k < run.cap; k++)
		if (run.e[k].used && run.e[k].v && push(&s->runs, run.e[k].v, (double)run.e[k].v))
			goto out;
	s->epochs = done_epochs + (in_epoch > 0);
	/* The last epoch may be cut short by the trace's end. */
	s->files_per_epoch = done_epochs ? (double)done_files / (double)done_epochs
					 : (double)in_epoch;
	ret = 0;
out:
	free(bit);
	dt_map_free(&lastpos);
	dt_map_free(&epoch_of);
	dt_map_free(&lastfile);
	dt_map_free(&next);
	dt_map_free(&run);
	return ret;
}

static int cmp_u64(const void *pa, const void *pb)
{
	uint64_t x = *(const uint64_t *)pa, y = *(const uint64_t *)pb;

	return x < y ? -1 : x > y;
}

static int cmp_step(const void *pa, const void *pb)
{
	double x = ((const struct dt_step *)pa)->t, y = ((const struct dt_step *)pb)->t;

	return x < y ? -1 : x > y;
}

/* Two steps per data request that moved bytes: its arrival starts its
 * rate, its reply ends it and adds its bytes to the done ones. */
static int cum_steps(const struct dl_trace_file *t, uint64_t lo, struct dt_shape *s)
{
	size_t n = 0;

	for (uint64_t i = 0; i < t->nrecs; i++)
		n += is_data(&t->recs[i]) && t->recs[i].result > 0;
	s->steps = malloc((n ? n : 1) * 2 * sizeof(*s->steps));
	if (!s->steps)
		return -ENOMEM;
	for (uint64_t i = 0; i < t->nrecs; i++) {
		const struct dl_trace_rec *r = &t->recs[i];
		uint64_t dur = dl_trace_dur(r);
		double a, b, got, rate;

		if (!is_data(r) || r->result <= 0)
			continue;
		got = (double)r->result;
		a = (double)(r->start_ns - lo);
		b = a + (double)(dur ? dur : 1);
		rate = got / (b - a);
		s->steps[s->nsteps++] = (struct dt_step){a, rate, rate * a, 0};
		s->steps[s->nsteps++] = (struct dt_step){b, -rate, -rate * a, got};
	}
	qsort(s->steps, s->nsteps, sizeof(*s->steps), cmp_step);
	return 0;
}

/* One run's cumulative bytes during a sweep over its steps. */
struct cum {
	const struct dt_shape *s;
	size_t i, inflight;
	double r, rs, done;
};

static void cum_apply(struct cum *c, double t)
{
	for (; c->i < c->s->nsteps && c->s->steps[c->i].t <= t; c->i++) {
		const struct dt_step *st = &c->s->steps[c->i];

		c->r += st->dr;
		c->rs += st->drs;
		c->done += st->ddone;
		c->inflight += st->dr > 0 ? 1 : -1;
		/* Nothing in flight: no rounding left over from the sums. */
		if (!c->inflight)
			c->r = c->rs = 0;
	}
}

static double cum_at(const struct cum *c, double t)
{
	double v = c->done + t * c->r - c->rs;

	return v < c->done ? c->done : v;
}

double dt_cum_gap(const struct dt_shape *a, const struct dt_shape *b)
{
	struct cum ca = {.s = a}, cb = {.s = b};
	double top = a->bytes > b->bytes ? a->bytes : b->bytes, gap = 0;

	if (top <= 0)
		return 0.0;
	/* Both are linear between steps: the largest gap is at one. */
	while (ca.i < a->nsteps || cb.i < b->nsteps) {
		double t = ca.i == a->nsteps	     ? b->steps[cb.i].t
			   : cb.i == b->nsteps	     ? a->steps[ca.i].t
			   : a->steps[ca.i].t < b->steps[cb.i].t ? a->steps[ca.i].t
								: b->steps[cb.i].t;
		double d;

		cum_apply(&ca, t);
		cum_apply(&cb, t);
		d = cum_at(&ca, t) - cum_at(&cb, t);
		d = d < 0 ? -d : d;
		if (d > gap)
			gap = d;
	}
	gap /= top;
	return gap > 1 ? 1 : gap;
}

/* Throughput over normalized time, inter-arrival times, time in flight. */
static int time_pass(const struct dl_trace_file *t, struct dt_shape *s)
{
	uint64_t n = 0, lo = UINT64_MAX, hi = 0, prev = 0, *ends = NULL;
	double bytes = 0, tp[DT_TBINS] = {0};
	int ret = -ENOMEM;

	for (uint64_t i = 0; i < t->nrecs; i++) {
		const struct dl_trace_rec *r = &t->recs[i];
		uint64_t end = r->start_ns + dl_trace_dur(r);

		if (!is_data(r))
			continue;
		if (n && push(&s->ia, r->start_ns - prev, 1))
			return -ENOMEM;
		prev = r->start_ns;
		lo = r->start_ns < lo ? r->start_ns : lo;
		hi = end > hi ? end : hi;
		n++;
	}
	if (!n)
		return 0;
	if (hi <= lo)
		hi = lo + 1;
	ends = malloc(n * sizeof(*ends));
	if (!ends)
		return -ENOMEM;
	double span = (double)(hi - lo), w = span / DT_TBINS;
	uint64_t k = 0;
	for (uint64_t i = 0; i < t->nrecs; i++) {
		const struct dl_trace_rec *r = &t->recs[i];
		double a, b, got;

		if (!is_data(r))
			continue;
		ends[k++] = r->start_ns + dl_trace_dur(r);
		got = r->result > 0 ? (double)r->result : 0;
		bytes += got;
		/* Bytes spread evenly over the request's time in service. */
		a = (double)(r->start_ns - lo);
		b = a + (double)dl_trace_dur(r);
		if (b - a < 1) {
			unsigned bin = (unsigned)(a / w);
			tp[bin < DT_TBINS ? bin : DT_TBINS - 1] += got;
			continue;
		}
		for (unsigned bin = (unsigned)(a / w); bin < DT_TBINS && bin * w < b; bin++) {
			double x0 = bin * w > a ? bin * w : a, x1 = (bin + 1) * w < b ? (bin + 1) * w : b;
			tp[bin] += got * (x1 - x0) / (b - a);
		}
	}
	s->rate = bytes / (span / 1e9);
	s->bytes = bytes;
	s->span_ns = span;
	ret = cum_steps(t, lo, s);
	if (ret)
		goto out;
	ret = -ENOMEM;
	for (unsigned bin = 0; bin < DT_TBINS; bin++)
		if (tp[bin] > 0 && push(&s->tp, bin, tp[bin]))
			goto out;
	/* Requests in flight over time: arrivals are sorted, ends sorted here. */
	qsort(ends, n, sizeof(*ends), cmp_u64);
	uint64_t i = 0, j = 0, level = 0, at = lo;
	while (j < n) {
		uint64_t ts;
		int64_t step;

		/* The next arrival of a data request, or the next end. */
		while (i < t->nrecs && !is_data(&t->recs[i]))
			i++;
		if (i < t->nrecs && t->recs[i].start_ns <= ends[j]) {
			ts = t->recs[i].start_ns;
			step = 1;
			i++;
		} else {
			ts = ends[j++];
			step = -1;
		}
		if (ts > at && push(&s->conc, level, (double)(ts - at)))
			goto out;
		at = ts;
		level = (uint64_t)((int64_t)level + step);
	}
	ret = 0;
out:
	free(ends);
	return ret;
}

int dt_shape_compute(const struct dl_trace_file *t, struct dt_shape *s)
{
	int ret;

	memset(s, 0, sizeof(*s));
	ret = order_pass(t, s);
	if (!ret)
		ret = time_pass(t, s);
	if (ret)
		dt_shape_free(s);
	return ret;
}

void dt_shape_free(struct dt_shape *s)
{
	free(s->reuse.v);
	free(s->runs.v);
	free(s->ia.v);
	free(s->tp.v);
	free(s->conc.v);
	free(s->steps);
	memset(s, 0, sizeof(*s));
}
