/* One report for the job: every rank's figures gathered on rank 0 and
 * combined the way DLIO combines them (statscounter.py): throughput is the
 * sum over ranks (each rank is an accelerator), AU the mean over ranks. We
 * also keep the lowest rank's AU (a job is as slow as its slowest rank),
 * every rank's own epochs for the JSON, and the step-time percentiles over
 * all ranks' steps rather than an average of percentiles. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "drive_i.h"

/* Measured (AU) steps of a phase: what drv_run keeps in the run-wide arrays. */
static size_t measured(const struct drv_phase_stats *st) { return st->steps - st->excluded; }

/* Sums, means and extremes of one phase over n ranks (recs stride apart). */
static void combine(const struct drv_phase_stats *const *st, size_t n, struct drv_phase_stats *o,
		    double *au_min)
{
	struct drv_phase_stats a = *st[0];
	double au = 0, share = 0, mn = INFINITY;
	unsigned nau = 0, nshare = 0;

	a.samples = 0;
	a.samples_per_s = 0;
	a.wall = a.compute = a.stall = a.barrier = 0;
	a.step_p50 = a.step_p90 = a.step_p99 = -INFINITY;
	a.wait_p50 = a.wait_p90 = a.wait_p99 = -INFINITY;
	for (size_t q = 0; q < n; q++) {
		const struct drv_phase_stats *s = st[q];
		a.samples += s->samples;
		if (isfinite(s->samples_per_s))
			a.samples_per_s += s->samples_per_s;
		if (s->wall > a.wall)
			a.wall = s->wall;
		a.compute += s->compute / (double)n;
		a.stall += s->stall / (double)n;
		a.barrier += s->barrier / (double)n;
		if (isfinite(s->au)) {
			au += s->au;
			nau++;
			mn = s->au < mn ? s->au : mn;
		}
		if (isfinite(s->stall_share)) {
			share += s->stall_share;
			nshare++;
		}
		/* Without the steps themselves (evaluation): the slowest rank's. */
		a.step_p50 = fmax(a.step_p50, s->step_p50);
		a.step_p90 = fmax(a.step_p90, s->step_p90);
		a.step_p99 = fmax(a.step_p99, s->step_p99);
		a.wait_p50 = fmax(a.wait_p50, s->wait_p50);
		a.wait_p90 = fmax(a.wait_p90, s->wait_p90);
		a.wait_p99 = fmax(a.wait_p99, s->wait_p99);
	}
	a.au = nau ? au / nau : NAN;
	a.stall_share = nshare ? share / nshare : NAN;
	*au_min = nau ? mn : NAN;
	*o = a;
}

static void add_io(struct drv_io *d, const struct drv_io *s)
{
	d->bytes += s->bytes;
	d->index_bytes += s->index_bytes;
	d->opens += s->opens;
	d->reads += s->reads;
	d->decoded += s->decoded;
	d->samples += s->samples;
}

/* res->ep[] from the ranks' epochs; steps[] holds each rank's run-wide
 * (step time, stall) pairs, offs[q] where rank q's start. */
static int aggregate(struct drv_result *res, unsigned P, size_t nep, const double *steps,
		     const size_t *offs, const size_t *counts)
{
	const struct drv_phase_stats **st = calloc(P, sizeof(*st));
	size_t *pos = calloc(P, sizeof(*pos)), cap = 0;
	double *ts = NULL, *ws = NULL;
	int ret = -ENOMEM;

	if (!st || !pos)
		goto out;
	for (unsigned q = 0; q < P; q++)
		cap += counts[q];
	ts = malloc((cap ? cap : 1) * sizeof(double));
	ws = malloc((cap ? cap : 1) * sizeof(double));
	if (!ts || !ws)
		goto out;
	for (size_t e = 0; e < nep; e++) {
		struct drv_epoch_rec *o = &res->ep[e];
		const struct drv_epoch_rec *r0 = &res->rank_ep[e];
		*o = *r0;
		for (unsigned q = 0; q < P; q++)
			st[q] = &res->rank_ep[(size_t)q * nep + e].st;
		combine(st, P, &o->st, &o->au_min);
		memset(&o->io, 0, sizeof(o->io));
		o->mb_per_s = 0;
		memset(&o->gpu, 0, sizeof(o->gpu));
		size_t n = 0;
		for (unsigned q = 0; q < P; q++) {
			const struct drv_epoch_rec *r = &res->rank_ep[(size_t)q * nep + e];
			add_io(&o->io, &r->io);
			if (isfinite(r->mb_per_s))
				o->mb_per_s += r->mb_per_s;
			o->gpu.kernels += r->gpu.kernels;
			o->gpu.h2d_bytes += r->gpu.h2d_bytes;
			o->gpu.kernel_s += r->gpu.kernel_s / P;
			o->gpu.idle_s += r->gpu.idle_s / P;
			o->gpu.h2d_s += r->gpu.h2d_s / P;
			/* This epoch's measured steps of rank q, pooled. */
			size_t m = measured(&r->st);
			for (size_t i = 0; i < m && pos[q] < counts[q]; i++, pos[q]++) {
				const double *x = steps + 2 * (offs[q] + pos[q]);
				ts[n] = x[0];
				ws[n++] = x[1];
			}
		}
		drv_pcts(ts, n, &o->st.step_p50, &o->st.step_p90, &o->st.step_p99);
		drv_pcts(ws, n, &o->st.wait_p50, &o->st.wait_p90, &o->st.wait_p99);
		if (o->has_eval) {
			double ev_min;
			for (unsigned q = 0; q < P; q++)
				st[q] = &res->rank_ep[(size_t)q * nep + e].ev;
			combine(st, P, &o->ev, &ev_min);
			memset(&o->evio, 0, sizeof(o->evio));
			o->ev_mb_per_s = 0;
			for (unsigned q = 0; q < P; q++) {
				const struct drv_epoch_rec *r = &res->rank_ep[(size_t)q * nep + e];
				add_io(&o->evio, &r->evio);
				if (isfinite(r->ev_mb_per_s))
					o->ev_mb_per_s += r->ev_mb_per_s;
			}
		}
	}
	/* Run-wide percentiles over every rank's steps. */
	free(res->step_times);
	free(res->waits);
	res->step_times = ts;
	res->waits = ws;
	res->nsteps = cap;
	for (size_t i = 0; i < cap; i++) {
		ts[i] = steps[2 * i];
		ws[i] = steps[2 * i + 1];
	}
	ts = ws = NULL;
	ret = 0;
out:
	free(ts);
	free(ws);
	free(st);
	free(pos);
	return ret;
}

int drv_ranks_reduce(const struct drv_ctx *c, struct drv_result *res)
{
	const struct drv_comm *comm = c->comm;
	/* The ranks that meet here: MPI's; a rank running alone reports itself. */
	unsigned P = comm && comm->mpi && comm->size > 1 ? (unsigned)comm->size : 1;
	int root = !comm || comm->rank == 0, ret;
	char host[64] = {0};
	size_t nep = (size_t)drv_comm_min(comm, res->nep);
	struct drv_epoch_rec *all = NULL;
	char(*hosts)[64] = NULL;
	double *mine = NULL;
	void *steps = NULL;
	size_t *lens = NULL, *offs = NULL, *counts = NULL;

	if (gethostname(host, sizeof(host) - 1))
		snprintf(host, sizeof(host), "?");
	/* Rank 0 allocates; its verdict goes to everyone before any gather, so
	 * that no rank sends into a buffer that is not there. */
	if (root) {
		all = calloc(nep ? P * nep : 1, sizeof(*all));
		hosts = calloc(P, sizeof(*hosts));
		lens = calloc(P, sizeof(*lens));
		offs = calloc(P, sizeof(*offs));
		counts = calloc(P, sizeof(*counts));
	}
	ret = root && (!all || !hosts || !lens || !offs || !counts) ? -ENOMEM : 0;
	ret = (int)(int64_t)drv_comm_bcast(comm, (uint64_t)(int64_t)ret);
	if (ret)
		goto out;
	if ((ret = drv_comm_gather(comm, host, sizeof(host), hosts)) ||
	    (ret = drv_comm_gather(comm, res->ep, nep * sizeof(*res->ep), all)))
		goto out;
	mine = malloc((res->nsteps ? res->nsteps : 1) * 2 * sizeof(double));
	size_t n = mine ? res->nsteps : 0; /* short of memory: no percentiles */
	for (size_t i = 0; i < n; i++) {
		mine[2 * i] = res->step_times[i];
		mine[2 * i + 1] = res->waits[i];
	}
	if ((ret =
		 drv_comm_gatherv(comm, mine, n * 2 * sizeof(double), root ? &steps : NULL, lens)))
		goto out;
	if (!root)
		goto out;

	res->nep = nep;
	res->nranks = P;
	res->rank_base = P == 1 ? c->rank : 0;
	res->rank_ep = all;
	res->hosts = hosts;
	all = NULL;
	hosts = NULL;
	for (size_t e = 0; e < nep; e++)
		res->rank_ep[e].au_min = res->rank_ep[e].st.au;
	if (P > 1) {
		size_t off = 0;
		for (unsigned q = 0; q < P; q++) {
			offs[q] = off;
			counts[q] = lens[q] / (2 * sizeof(double));
			off += counts[q];
		}
		ret = aggregate(res, P, nep, steps, offs, counts);
	}
out:
	free(all);
	free(hosts);
	free(mine);
	free(steps);
	free(lens);
	free(offs);
	free(counts);
	return ret;
}
