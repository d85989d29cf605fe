/* The arithmetic: data-wait share of the training loop, GPU idle time
 * lined up with the data waits (the part of GPU idleness explained by
 * input), and DS-Analyzer's differencing with its throughput ceilings. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/pacer.h"
#include "dliofs/units.h"
#include "stall_i.h"

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_ival(const void *a, const void *b)
{
	const struct st_ival *x = a, *y = b;
	return x->s < y->s ? -1 : x->s > y->s;
}

size_t st_ival_merge(struct st_ival *v, size_t n)
{
	size_t out = 0;

	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_ival);
	for (size_t i = 1; i < n; i++) {
		if (v[i].s <= v[out].e) {
			if (v[i].e > v[out].e)
				v[out].e = v[i].e;
		} else {
			v[++out] = v[i];
		}
	}
	return out + 1;
}

static double quantile(const int64_t *sorted, size_t n, double q)
{
	if (!n)
		return 0;
	size_t i = (size_t)(q * (double)(n - 1) + 0.5);
	return (double)sorted[i < n ? i : n - 1] / 1e9;
}

/* A step counts when it is past the warm-up and its compute is known
 * (the very last step of a job that never exhausts its iterator is not). */
void st_summarize(const struct st_proc *p, size_t warmup, struct st_summary *s)
{
	int64_t *waits;
	size_t nb = 0;
	int bs[8] = {0}, bc[8] = {0};

	memset(s, 0, sizeof(*s));
	s->batch = -1;
	s->overhead_ns = -1;
	if (!p)
		return;
	s->overhead_ns = p->overhead_ns;
	s->steps = p->nsteps;
	s->discarded = warmup < p->nsteps ? warmup : p->nsteps;
	waits = malloc((p->nsteps + 1) * sizeof(*waits));
	for (size_t i = 0; i < p->nsteps; i++) {
		const struct st_step *st = &p->steps[i];

		s->replayed += st->flag == 'r';
		s->filling += st->flag == 'c';
		if (i < warmup || st->compute < 0)
			continue;
		if (!s->counted)
			s->t0 = st->start;
		s->t1 = st->start + st->wait + st->compute;
		s->wait_ns += st->wait;
		s->compute_ns += st->compute;
		if (waits)
			waits[s->counted] = st->wait;
		s->counted++;
		if (st->batch > 0) {
			size_t k;
			s->samples += st->batch;
			for (k = 0; k < nb && bs[k] != st->batch; k++)
				;
			if (k == nb && nb < 8)
				bs[nb++] = st->batch;
			if (k < nb)
				bc[k]++;
		}
	}
	s->window_ns = s->wait_ns + s->compute_ns;
	if (nb) {
		size_t best = 0;
		for (size_t k = 1; k < nb; k++)
			if (bc[k] > bc[best])
				best = k;
		s->batch = bs[best];
	}
	if (s->counted && s->window_ns > 0) {
		double w = (double)s->window_ns / 1e9;

		s->wait_share = (double)s->wait_ns / (double)s->window_ns;
		s->step_mean_s = w / (double)s->counted;
		s->wait_mean_s = (double)s->wait_ns / 1e9 / (double)s->counted;
		s->compute_mean_s = (double)s->compute_ns / 1e9 / (double)s->counted;
		s->steps_per_s = (double)s->counted / w;
		s->samples_per_s = s->samples ? (double)s->samples / w : 0;
	}
	if (waits && s->counted) {
		qsort(waits, s->counted, sizeof(*waits), cmp_i64);
		s->wait_p50_s = quantile(waits, s->counted, 0.5);
		s->wait_p90_s = quantile(waits, s->counted, 0.9);
		s->wait_max_s = (double)waits[s->counted - 1] / 1e9;
	}
	free(waits);
}

/* Length of the intersection of two sorted disjoint interval sets. */
static int64_t overlap(const struct st_ival *a, size_t na, const struct st_ival *b, size_t nb)
{
	size_t i = 0, j = 0;
	int64_t sum = 0;

	while (i < na && j < nb) {
		int64_t s = a[i].s > b[j].s ? a[i].s : b[j].s;
		int64_t e = a[i].e < b[j].e ? a[i].e : b[j].e;
		if (e > s)
			sum += e - s;
		if (a[i].e < b[j].e)
			i++;
		else
			j++;
	}
	return sum;
}

void st_gpu_summarize(const struct st_proc *p, const struct st_summary *s, const struct st_gpu *g,
		      struct st_gpu_summary *gs)
{
	struct st_ival *busy = NULL, *idle = NULL, *waits = NULL;
	size_t nbusy = 0, nidle = 0, nwaits = 0;
	int64_t cur;

	memset(gs, 0, sizeof(*gs));
	if (!p || !g->nbusy || !s->counted || s->t1 <= s->t0)
		return;
	busy = malloc(g->nbusy * sizeof(*busy));
	idle = malloc((g->nbusy + 1) * sizeof(*idle));
	waits = malloc(p->nsteps * sizeof(*waits) + 1);
	if (!busy || !idle || !waits)
		goto out;
	/* Busy time clipped to the analysed window. */
	for (size_t i = 0; i < g->nbusy; i++) {
		struct st_ival v = g->busy[i];
		if (v.e <= s->t0 || v.s >= s->t1)
			continue;
		if (v.s < s->t0)
			v.s = s->t0;
		if (v.e > s->t1)
			v.e = s->t1;
		busy[nbusy++] = v;
	}
	nbusy = st_ival_merge(busy, nbusy);
	cur = s->t0;
	for (size_t i = 0; i < nbusy; i++) {
		if (busy[i].s > cur)
			idle[nidle++] = (struct st_ival){cur, busy[i].s};
		cur = busy[i].e;
		gs->busy_ns += busy[i].e - busy[i].s;
	}
	if (s->t1 > cur)
		idle[nidle++] = (struct st_ival){cur, s->t1};
	for (size_t i = 0; i < p->nsteps; i++) {
		const struct st_step *st = &p->steps[i];
		int64_t a = st->start, b = st->start + st->wait;
		if (b <= s->t0 || a >= s->t1)
			continue;
		waits[nwaits++] = (struct st_ival){a > s->t0 ? a : s->t0, b < s->t1 ? b : s->t1};
	}
	nwaits = st_ival_merge(waits, nwaits);
	gs->have = nbusy > 0;
	gs->window_ns = s->t1 - s->t0;
	gs->idle_ns = gs->window_ns - gs->busy_ns;
	gs->gaps = nidle;
	for (size_t i = 0; i < nidle; i++)
		if (idle[i].e - idle[i].s > gs->gap_max_ns)
			gs->gap_max_ns = idle[i].e - idle[i].s;
	gs->idle_input_ns = overlap(idle, nidle, waits, nwaits);
	gs->idle_share = (double)gs->idle_ns / (double)gs->window_ns;
	gs->input_share_of_idle =
	    gs->idle_ns > 0 ? (double)gs->idle_input_ns / (double)gs->idle_ns : 0;
	gs->input_share_of_window = (double)gs->idle_input_ns / (double)gs->window_ns;
	gs->merged = busy;
	gs->nmerged = nbusy;
	busy = NULL;
out:
	free(busy);
	free(idle);
	free(waits);
}

void st_gpu_summary_free(struct st_gpu_summary *gs)
{
	free(gs->merged);
	memset(gs, 0, sizeof(*gs));
}

/* ---- differencing: prep and fetch stalls, the ceilings G, P, F ---- */

/* Mean of a latency model, in seconds. */
static double lat_mean(const struct dl_lat_model *m)
{
	double a = (double)m->a_ns / 1e9, b = (double)m->b_ns / 1e9, sum = 0, prev = 0;

	switch (m->kind) {
	case DL_LAT_NONE:
		return 0;
	case DL_LAT_CONST:
	case DL_LAT_NORMAL:
	case DL_LAT_EXP:
		return a;
	case DL_LAT_UNIFORM:
		return (a + b) / 2;
	case DL_LAT_LOGNORMAL: {
		/* median a, p99 b: sigma = ln(b / a) / z(0.99) */
		double sg = a > 0 && b > a ? log(b / a) / 2.326347874 : 0;

		return a * exp(sg * sg / 2);
	}
	case DL_LAT_EMPIRICAL:
		for (unsigned i = 0; i < m->n; i++) {
			sum += (double)m->values_ns[i] / 1e9 * (m->cdf[i] - prev);
			prev = m->cdf[i];
		}
		return sum;
	}
	return 0;
}

/* The "key value" items of the read model's text; commas inside a
 * distribution's parentheses belong to it. */
static int parse_read_model(const char *text, struct dl_pacer_cfg *cfg)
{
	char item[256], key[64], err[256];
	const char *p = text, *start = text;
	int depth = 0;

	dl_pacer_cfg_init(cfg);
	if (!strcmp(text, "no limits"))
		return 0;
	for (;; p++) {
		if (*p == '(')
			depth++;
		else if (*p == ')' && depth)
			depth--;
		if (*p && (*p != ',' || depth))
			continue;
		size_t n = (size_t)(p - start);
		const char *sp;

		if (n >= sizeof(item))
			return -1;
		memcpy(item, start, n);
		item[n] = 0;
		sp = strchr(item + strspn(item, " "), ' ');
		if (!sp)
			return -1;
		snprintf(key, sizeof(key), "read.%.*s", (int)(sp - (item + strspn(item, " "))),
			 item + strspn(item, " "));
		if (dl_pacer_cfg_set(cfg, key, sp + 1, err, sizeof(err)))
			return -1;
		if (!*p)
			return 0;
		start = p + 1;
	}
}

double st_fetch_rate(const char *pacer, double mean_req, double conc)
{
	struct dl_pacer_cfg cfg;
	const struct dl_dev_model *m = &cfg.m[DL_OP_READ];
	double rate = INFINITY, bw, lat, c;

	/* Initialised before anything can fail: the free below walks it. */
	dl_pacer_cfg_init(&cfg);
	if (!pacer || !*pacer || parse_read_model(pacer, &cfg)) {
		dl_pacer_cfg_free(&cfg);
		return NAN;
	}
	bw = m->bandwidth ? (double)m->bandwidth : INFINITY;
	lat = lat_mean(&m->latency);
	c = conc >= 1 ? conc : 1;
	if (m->queue_depth && c > m->queue_depth)
		c = m->queue_depth;
	rate = bw;
	if (m->iops && mean_req > 0)
		rate = fmin(rate, (double)m->iops * mean_req);
	if (m->transfer && mean_req > 0) {
		/* A device model: the buckets' long-run rates above, the
		 * channels' service (fixed cost, serial, bytes) and the data
		 * paths' (serial and bytes, lanes at once). */
		double ser = (double)m->serial_ns / 1e9, x = mean_req / (double)m->transfer;

		rate = fmin(rate, c * mean_req / (lat + ser + x));
		if (m->lanes)
			rate = fmin(rate, (double)m->lanes * mean_req / (ser + x));
	} else if (lat > 0 && mean_req > 0) {
		/* Latency overlaps across the job's requests in flight;
		 * transfers share the bandwidth. */
		rate = fmin(rate, c * mean_req / (lat + mean_req / bw));
	}
	dl_pacer_cfg_free(&cfg);
	return rate;
}

static double io_delta(const struct st_io *io, const char *path)
{
	if (!io->have_after)
		return 0;
	return dl_jdoc_num(&io->after, path, 0) -
	       (io->have_before ? dl_jdoc_num(&io->before, path, 0) : 0);
}

/* Sum of read latencies over the run, from the statistics' count x mean. */
static double io_lat_sum(const struct st_io *io)
{
	double a = dl_jdoc_num(&io->after, "classes.read.latency_us.mean", 0) *
		   dl_jdoc_num(&io->after, "classes.read.latency_us.count", 0);
	double b = io->have_before
		       ? dl_jdoc_num(&io->before, "classes.read.latency_us.mean", 0) *
			     dl_jdoc_num(&io->before, "classes.read.latency_us.count", 0)
		       : 0;

	return a > b ? (a - b) / 1e6 : 0;
}

/* F: the storage's delivery rate for this job, in its units (samples or
 * steps) per second: what the read model in force delivers (bandwidth,
 * IOPS, latency at the job's measured concurrency) over the bytes the job
 * needed from the device per unit in the configured run. Not the batch over
 * the fetch stall: in a pipeline fetching overlaps compute and prep, so the
 * stall a step sees is not the time its batch took to fetch. */
static void fetch_ceiling(const struct st_run *r, double unit, struct st_diff *d)
{
	const struct st_io *io = &r->io;
	double units = 0, bytes, ops, win, conc;

	for (size_t i = 0; r->main && i < r->main->nsteps; i++)
		units +=
		    d->per_sample ? (r->main->steps[i].batch > 0 ? r->main->steps[i].batch : 0) : 1;
	bytes = io_delta(io, "classes.read.bytes") - io_delta(io, "classes.read.cache.hit_bytes");
	ops = io_delta(io, "classes.read.ops");
	win = (double)(r->t_end - r->t_start) / 1e9;
	conc = win > 0 ? io_lat_sum(io) / win : 1;
	d->fetch_rate = st_fetch_rate(io->pacer, ops > 0 ? bytes / ops : 0, conc);
	d->fetch_bytes = units > 0 ? bytes / units : 0;
	if (io->have_after && !isnan(d->fetch_rate) && d->fetch_bytes > 0) {
		d->F = d->fetch_rate / d->fetch_bytes;
		if (isinf(d->fetch_rate))
			snprintf(d->F_basis, sizeof(d->F_basis),
				 "storage: the read model has no limit");
		else
			snprintf(d->F_basis, sizeof(d->F_basis),
				 "storage: delivers %.1f MB/s to this job, %.0f kB per %s",
				 d->fetch_rate / 1e6, d->fetch_bytes / 1e3,
				 d->per_sample ? "sample" : "step");
		return;
	}
	/* No model to ask (not a dliofs mount): DS-Analyzer's own estimate. */
	d->F = d->fetch_stall_s > 0 ? unit / d->fetch_stall_s : INFINITY;
	snprintf(d->F_basis, sizeof(d->F_basis),
		 "batch over the fetch stall: no storage model to ask");
}

void st_diff_compute(struct st_run *runs, struct st_diff *d)
{
	const struct st_summary *s1 = &runs[0].sum, *s2 = &runs[1].sum, *s3 = &runs[2].sum;
	double unit;

	memset(d, 0, sizeof(*d));
	if (!s1->counted || !s2->counted || !s3->counted) {
		snprintf(d->note, sizeof(d->note), "a run recorded no analysable steps");
		return;
	}
	d->valid = 1;
	d->t1 = s1->step_mean_s;
	d->t2 = s2->step_mean_s;
	d->t3 = s3->step_mean_s;
	d->prep_stall_s = d->t2 - d->t1;
	d->fetch_stall_s = d->t3 - d->t2;
	d->prep_total_s = d->prep_stall_s * (double)s3->counted;
	d->fetch_total_s = d->fetch_stall_s * (double)s3->counted;
	d->prep_ratio = d->t3 > 0 ? d->prep_stall_s / d->t3 : 0;
	d->fetch_ratio = d->t3 > 0 ? d->fetch_stall_s / d->t3 : 0;
	d->per_sample = s3->batch > 0;
	unit = d->per_sample ? (double)s3->batch : 1.0;
	d->G = d->t1 > 0 ? unit / d->t1 : INFINITY;
	d->P = d->t2 > 0 ? unit / d->t2 : INFINITY;
	fetch_ceiling(&runs[2], unit, d);
	if (s1->replayed == 0)
		snprintf(d->note, sizeof(d->note),
			 "the compute-only run replayed no batch (iterator length unknown?)");
}
