/* What dlio-trace compare scores beyond per-request counts: the order of
 * reads as a shuffle leaves it (reuse distances, files per epoch, runs
 * within files) and the run's course in time (throughput over normalized
 * time, inter-arrival times, requests in flight). Two runs of one job with
 * different shuffle seeds differ in which file comes when, not in these. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dlio_trace_i.h"

/* The reading thread: version 2 records the client's thread in tid,
 * version 1 had it in pid. Visits and runs are a thread's. */
static uint64_t reader_of(const struct dt_trace *t, const struct dl_trace_rec *r)
{
	return t->h.version >= 2 ? r->tid : r->pid;
}

static int is_data(const struct dl_trace_rec *r)
{
	return r->op == DL_TOP_READ || r->op == DL_TOP_WRITE;
}

/* Fenwick tree over read positions: 1 where a file's latest read is, so
 * that the distinct files read between two reads of one file is a sum. */
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

static void close_run(struct dt_shape *s, uint64_t bytes)
{
	if (bytes)
		s->runs[dt_size_bucket(bytes)] += bytes;
}

/* Reuse distances, epochs and sequential runs, in one pass over the reads. */
static int order_pass(const struct dt_trace *t, struct dt_shape *s)
{
	struct dt_map lastpos = {0}, epoch_of = {0}, lastfile = {0}, next = {0}, run = {0};
	size_t n = 0, pos = 0;
	uint64_t epoch = 1, in_epoch = 0, done_files = 0, done_epochs = 0;
	int64_t *bit = NULL;
	int ret = -ENOMEM, created;

	for (uint64_t i = 0; i < t->nrecs; i++)
		n += t->recs[i].op == DL_TOP_READ;
	bit = calloc(n + 1, sizeof(*bit));
	if (!bit)
		goto out;
	for (uint64_t i = 0; i < t->nrecs; i++) {
		const struct dl_trace_rec *r = &t->recs[i];
		uint64_t who = reader_of(t, r), f = r->file_id, *lp, *ep, *lf, *nx, *rb;
		uint64_t got = r->result > 0 ? (uint64_t)r->result : 0, dist = 0;
		int restart;

		if (r->op != DL_TOP_READ)
			continue;
		lp = dt_map_get(&lastpos, f, 0, &created);
		if (!lp)
			goto out;
		if (created) {
			s->reuse[DT_RBUCKETS - 1]++; /* the file's first read */
		} else {
			dist = (uint64_t)(bit_sum(bit, pos) - bit_sum(bit, *lp));
			s->reuse[dt_size_bucket(dist)]++;
			bit_add(bit, n, *lp - 1, -1);
		}
		bit_add(bit, n, pos, 1);
		*lp = ++pos; /* position + 1: 0 is "none" */

		/* A visit is a thread turning to a file (its reads of one file
		 * interleave with other threads' freely), or reading it from the
		 * start again; a visit to a file already read in this epoch starts
		 * the next one. */
		nx = dt_map_find(&next, who, f);
		restart = !r->offset && nx && *nx > 1;
		lf = dt_map_get(&lastfile, who, 0, &created);
		if (!lf)
			goto out;
		if (created || *lf != f + 1 || restart) {
			*lf = f + 1;
			ep = dt_map_get(&epoch_of, f, 0, &created);
			if (!ep)
				goto out;
			if (*ep == epoch) {
				done_files += in_epoch;
				done_epochs++;
				epoch++;
				in_epoch = 0;
			}
			if (*ep != epoch) {
				*ep = epoch;
				in_epoch++;
			}
		}

		/* Sequential runs per (thread, file): bytes read back to back. */
		nx = dt_map_get(&next, who, f, &created);
		if (!nx)
			goto out;
		rb = dt_map_get(&run, who, f, &created);
		if (!rb)
			goto out;
		if (*nx != r->offset + 1) {
			close_run(s, *rb);
			*rb = 0;
		}
		*rb += got;
		*nx = r->offset + got + 1;
	}
	for (size_t k = 0; k < run.cap; k++)
		if (run.e[k].used)
			close_run(s, run.e[k].v);
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

/* Throughput over normalized time, inter-arrival times, time in flight. */
static int time_pass(const struct dt_trace *t, struct dt_shape *s)
{
	uint64_t n = 0, lo = UINT64_MAX, hi = 0, prev = 0, *ends = NULL;
	double bytes = 0;

	for (uint64_t i = 0; i < t->nrecs; i++) {
		const struct dl_trace_rec *r = &t->recs[i];
		uint64_t end = r->start_ns + dl_trace_dur(r);

		if (!is_data(r))
			continue;
		if (n)
			s->ia[dt_size_bucket(r->start_ns - prev)]++;
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
			s->tp[bin < DT_TBINS ? bin : DT_TBINS - 1] += got;
			continue;
		}
		for (unsigned bin = (unsigned)(a / w); bin < DT_TBINS && bin * w < b; bin++) {
			double x0 = bin * w > a ? bin * w : a, x1 = (bin + 1) * w < b ? (bin + 1) * w : b;
			s->tp[bin] += got * (x1 - x0) / (b - a);
		}
	}
	s->rate = bytes / (span / 1e9);
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
		s->conc[dt_size_bucket(level)] += (double)(ts - at);
		at = ts;
		level = (uint64_t)((int64_t)level + step);
	}
	free(ends);
	return 0;
}

int dt_shape_compute(const struct dt_trace *t, struct dt_shape *s)
{
	int ret;

	memset(s, 0, sizeof(*s));
	ret = order_pass(t, s);
	if (!ret)
		ret = time_pass(t, s);
	return ret;
}
