/* The arithmetic: data-wait share of the training loop, and GPU idle time
 * lined up with the data waits (the part of GPU idleness explained by input). */
#include <stdlib.h>
#include <string.h>

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
