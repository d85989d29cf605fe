/* share.policy fair: each active job gets its weighted share of the class's
 * bandwidth, IOPS and queue depth, and what a job does not use goes to the
 * others (weighted max-min fairness, as fair schedulers do).
 *
 * The pacer decides a request's due time when it arrives, so a share cannot
 * be enforced by reordering a queue: each job goes through its own device
 * (queue slots, IOPS spacing, token bucket) at the limits it is allocated,
 * and the allocations, which add up to the device's limits, are recomputed
 * every window/20 from what each job did over the last window:
 *   - a job is active while it has a request outstanding or made one within
 *     the window;
 *   - for each limit, a job wants more than it has when at least half of its
 *     requests were held back by that limit of its own (tokens, IOPS
 *     spacing, queue slots), or when it has been active for less than half a
 *     window (a newcomer gets its share at once); its demand is then
 *     unbounded;
 *   - otherwise its demand is 1.1x what it used (bytes/s, requests/s; for
 *     queue slots the most requests it had outstanding at once), room to
 *     grow; its token bucket holds at least two of its largest requests, so
 *     a job that reads now and then, under its share, is not slowed;
 *   - the caps of its share rule bound the demand;
 *   - water-filling gives every demand that fits under its weighted share
 *     and splits the rest among the others by weight; what is left when all
 *     are satisfied is spread by weight as head room;
 *   - a request is its job's demand from its arrival: it is counted before
 *     the share it is timed at is computed, a job with requests waiting and
 *     none counted (each longer than the window) is a newcomer, the share is
 *     recomputed at once when it dates from when the job had nothing waiting
 *     (or would take more than a window for this request), and a request
 *     that is its job's only one waiting goes at no less than the job's
 *     weighted share of each limit. Without that, a job that read, paused
 *     until its reads left the window and read again got a share of 0 (1 B/s)
 *     and its request a due time in days (issue #22). The floor lets the
 *     jobs' rates add up to more than the device's by one request each.
 * Requests already admitted keep their due times: after a change of the
 * active set the device can deliver more than its limit for as long as the
 * jobs' admitted requests take (their queue depth times a request's time). */
#include <math.h>
#include <string.h>

#include "pacer_i.h"

#define HEADROOM 1.1

void pacer_share_begin(struct pacer_job_cls *jc, uint64_t now)
{
	jc->outstanding++;
	if (jc->outstanding > jc->peak[0])
		jc->peak[0] = jc->outstanding;
	jc->last_ns = now;
}

static uint64_t window_of(const struct dl_share_cfg *sc)
{
	return sc->window_ns ? sc->window_ns : PACER_DEFAULT_SHARE_WINDOW;
}

static void roll(struct pacer_job_cls *jobs, uint64_t *win_start, uint64_t half, uint64_t now);

void pacer_share_demand(struct pacer_job_cls *jobs, uint64_t *win_start,
			const struct dl_share_cfg *sc, uint32_t js, uint64_t len, uint64_t now)
{
	struct pacer_job_cls *jc = &jobs[js];
	uint64_t half = window_of(sc) / 2 ? window_of(sc) / 2 : 1;

	/* Counted in the half window it arrives in, before the share it is
	 * timed at is computed: a job with a request waiting never looks
	 * idle. */
	if (now >= *win_start)
		roll(jobs, win_start, half, now);
	jc->wbytes[0] += len;
	jc->wops[0]++;
	if (len > jc->wmaxlen[0])
		jc->wmaxlen[0] = len;
}

void pacer_share_account(struct pacer_job_cls *jc, unsigned held)
{
	jc->wheld_q[0] += !!(held & PACER_HELD_QUEUE);
	jc->wheld_iops[0] += !!(held & PACER_HELD_IOPS);
	jc->wheld_bw[0] += !!(held & PACER_HELD_BW);
}

void pacer_share_end(struct pacer_job_cls *jc)
{
	if (jc->outstanding)
		jc->outstanding--;
}

static void shift(struct pacer_job_cls *jc, int idle)
{
	jc->wbytes[1] = idle ? 0 : jc->wbytes[0];
	jc->wops[1] = idle ? 0 : jc->wops[0];
	jc->wheld_q[1] = idle ? 0 : jc->wheld_q[0];
	jc->wheld_iops[1] = idle ? 0 : jc->wheld_iops[0];
	jc->wheld_bw[1] = idle ? 0 : jc->wheld_bw[0];
	jc->peak[1] = idle ? jc->outstanding : jc->peak[0];
	jc->wmaxlen[1] = idle ? 0 : jc->wmaxlen[0];
	jc->wbytes[0] = jc->wops[0] = jc->wheld_q[0] = jc->wheld_iops[0] = jc->wheld_bw[0] = 0;
	jc->wmaxlen[0] = 0;
	jc->peak[0] = jc->outstanding;
}

/* The half-window counters move on at each half-window boundary. */
static void roll(struct pacer_job_cls *jobs, uint64_t *win_start, uint64_t half, uint64_t now)
{
	uint64_t ws = *win_start;
	int idle = 0;

	for (int r = 0; r < 2 && now >= ws + half; r++) {
		ws += half;
		for (unsigned j = 0; j < PACER_JOB_SLOTS; j++)
			shift(&jobs[j], idle);
		/* A second shift in one go: the half before was empty. */
		idle = 1;
	}
	if (now >= ws + half)
		ws += (now - ws) / half * half;
	*win_start = ws;
}

/* Weighted max-min fair split of cap among n claimants with demand d (may
 * be INFINITY) and caps c (INFINITY: none); leftover is spread by weight up
 * to the caps. */
static void waterfill(unsigned n, const double *w, const double *d, const double *c, double cap,
		      double *alloc)
{
	int done[PACER_JOB_SLOTS] = {0};
	double rem = cap, wsum;
	unsigned left = n;

	for (unsigned i = 0; i < n; i++)
		alloc[i] = 0;
	while (left) {
		int any = 0;

		wsum = 0;
		for (unsigned i = 0; i < n; i++)
			if (!done[i])
				wsum += w[i];
		for (unsigned i = 0; i < n; i++) {
			double want = d[i] < c[i] ? d[i] : c[i];

			if (done[i] || want > rem * w[i] / wsum)
				continue;
			alloc[i] = want;
			done[i] = 2; /* satisfied this round; rem is taken below */
			any = 1;
		}
		if (!any) {
			for (unsigned i = 0; i < n; i++)
				if (!done[i])
					alloc[i] = rem * w[i] / wsum;
			return;
		}
		for (unsigned i = 0; i < n; i++) {
			if (done[i] == 2) {
				rem -= alloc[i];
				done[i] = 1;
				left--;
			}
		}
		if (rem < 0)
			rem = 0;
	}
	/* Everyone is satisfied: the rest is head room, by weight. */
	wsum = 0;
	for (unsigned i = 0; i < n; i++)
		if (alloc[i] < c[i])
			wsum += w[i];
	for (unsigned i = 0; wsum > 0 && i < n; i++) {
		if (alloc[i] >= c[i])
			continue;
		alloc[i] += rem * w[i] / wsum;
		if (alloc[i] > c[i])
			alloc[i] = c[i];
	}
}

/* Demand for one limit: unbounded when held back by it at least half the
 * time (or young), else what was used, with head room. */
static double demand(int young, uint64_t held, uint64_t ops, double used, double headroom)
{
	if (young || (ops && 2 * held >= ops))
		return INFINITY;
	return used * headroom;
}

/* The allocation of job jc cannot serve its request of len bytes arriving
 * now: its rates date from when it had nothing waiting (a job that reads,
 * pauses and reads again), or would move len bytes in more than a window. */
static int stale(const struct pacer_job_cls *jc, const struct dl_dev_model *m, uint64_t len,
		 uint64_t window)
{
	if (!jc->active_since || jc->rates_idle)
		return 1;
	return m->bandwidth && (double)len * 1e9 > (double)jc->rates.bandwidth * (double)window;
}

/* A request that is its job's only one waiting goes at no less than the
 * job's weighted share of each limit: what a job that asks for nothing else
 * is owed, whatever its past use says (a rate below that would time it on a
 * history that no longer holds). */
static void floor_rates(struct pacer_rates *rt, const struct pacer_rates *f)
{
	if (f->bandwidth && rt->bandwidth && rt->bandwidth < f->bandwidth)
		rt->bandwidth = f->bandwidth;
	if (f->iops && rt->iops && rt->iops < f->iops)
		rt->iops = f->iops;
	if (f->queue_depth && rt->queue_depth && rt->queue_depth < f->queue_depth)
		rt->queue_depth = f->queue_depth;
}

static void allocate(struct pacer_job_cls *jobs, uint64_t win_start, const struct dl_dev_model *m,
		     uint64_t window, uint64_t now);

void pacer_share_update(struct pacer_job_cls *jobs, uint64_t *win_start, uint64_t *next_update,
			const struct dl_dev_model *m, const struct dl_share_cfg *sc, uint64_t now,
			uint32_t js, uint64_t len, struct pacer_rates *rt)
{
	uint64_t window = window_of(sc);
	uint64_t half = window / 2 ? window / 2 : 1, period = window / 20;
	struct pacer_job_cls *jc = &jobs[js];

	if (now < *win_start)
		now = *win_start;
	roll(jobs, win_start, half, now);
	if (stale(jc, m, len, window) || now >= *next_update) {
		*next_update = now + (period > 1000000 ? period : 1000000);
		allocate(jobs, *win_start, m, window, now);
	}
	*rt = jc->rates;
	if (jc->outstanding == 1)
		floor_rates(rt, &jc->fair);
}

/* Every active job's allocation from what it did over the window. */
static void allocate(struct pacer_job_cls *jobs, uint64_t win_start, const struct dl_dev_model *m,
		     uint64_t window, uint64_t now)
{
	uint64_t half = window / 2 ? window / 2 : 1;
	double w[PACER_JOB_SLOTS], dbw[PACER_JOB_SLOTS], dio[PACER_JOB_SLOTS], dq[PACER_JOB_SLOTS];
	double cbw[PACER_JOB_SLOTS], cio[PACER_JOB_SLOTS], none[PACER_JOB_SLOTS];
	double abw[PACER_JOB_SLOTS], aio[PACER_JOB_SLOTS], aq[PACER_JOB_SLOTS], wsum = 0;
	unsigned idx[PACER_JOB_SLOTS], n = 0;

	for (unsigned j = 0; j < PACER_JOB_SLOTS; j++) {
		struct pacer_job_cls *jc = &jobs[j];
		uint64_t span, ops, from = win_start > half ? win_start - half : 0;
		int young;

		if (!jc->outstanding && (!jc->last_ns || jc->last_ns + window <= now)) {
			jc->active_since = 0;
			continue;
		}
		if (!jc->active_since) {
			jc->active_since = now;
			/* A device of its own starts empty, like the class's. */
			if (jc->dev.pipe_x < now) {
				jc->dev.pipe_x = now;
				jc->dev.pipe_frac = 0;
			}
		}
		if (jc->active_since > from)
			from = jc->active_since;
		span = now > from ? now - from : 1;
		young = now - jc->active_since < half;
		ops = jc->wops[0] + jc->wops[1];
		/* In a cluster, what the cluster allocated it: the node
		 * splits its share as the cluster did (cluster.c). */
		w[n] = jc->cl_w > 0 ? jc->cl_w : jc->weight ? (double)jc->weight : 1;
		wsum += w[n];
		/* Requests waiting and none counted (each longer than the
		 * window): what it needs is unknown, as a newcomer's. */
		young = young || (!ops && jc->outstanding);
		dbw[n] = demand(young, jc->wheld_bw[0] + jc->wheld_bw[1], ops,
				(double)(jc->wbytes[0] + jc->wbytes[1]) * 1e9 / (double)span, HEADROOM);
		dio[n] = demand(young, jc->wheld_iops[0] + jc->wheld_iops[1], ops,
				(double)ops * 1e9 / (double)span, HEADROOM);
		/* Slots: as many as it had requests at once (more only when held). */
		dq[n] = demand(young, jc->wheld_q[0] + jc->wheld_q[1], ops,
			       (double)(jc->peak[0] > jc->peak[1] ? jc->peak[0] : jc->peak[1]), 1.0);
		cbw[n] = jc->cap_bw ? (double)jc->cap_bw : INFINITY;
		cio[n] = jc->cap_iops ? (double)jc->cap_iops : INFINITY;
		none[n] = INFINITY;
		idx[n++] = j;
	}
	if (!n)
		return;
	if (m->bandwidth)
		waterfill(n, w, dbw, cbw, (double)m->bandwidth, abw);
	if (m->iops)
		waterfill(n, w, dio, cio, (double)m->iops, aio);
	if (m->queue_depth)
		waterfill(n, w, dq, none, (double)m->queue_depth, aq);
	for (unsigned i = 0; i < n; i++) {
		struct pacer_job_cls *jc = &jobs[idx[i]];
		struct pacer_rates *rt = &jc->rates, *f = &jc->fair;
		uint64_t burst = m->burst ? m->burst : PACER_DEFAULT_BURST;
		uint64_t big = 2 * (jc->wmaxlen[0] > jc->wmaxlen[1] ? jc->wmaxlen[0] : jc->wmaxlen[1]);
		double share = w[i] / wsum;

		/* Unlimited devices leave only the caps. */
		rt->bandwidth = m->bandwidth ? (uint64_t)(abw[i] > 1 ? abw[i] : 1)
					     : (uint64_t)(isinf(cbw[i]) ? 0 : cbw[i]);
		rt->iops = m->iops ? (uint64_t)(aio[i] > 1 ? aio[i] : 1)
				   : (uint64_t)(isinf(cio[i]) ? 0 : cio[i]);
		/* The device's burst, and room for two of the job's largest
		 * requests: a job that reads now and then, under its share on
		 * average, gets each read at once, as from a real device that is
		 * not busy for it. (The sum of the jobs' bursts can pass the
		 * device's: by one burst per job, once.) */
		rt->burst = burst > big ? burst : big;
		rt->queue_depth = m->queue_depth ? (aq[i] >= 1 ? (uint32_t)aq[i] : 1) : 0;
		/* Its weighted share, within its caps: the floor of a request
		 * that is its only one waiting (pacer_share_update). */
		f->bandwidth = m->bandwidth ? (uint64_t)fmin((double)m->bandwidth * share, cbw[i]) : 0;
		f->iops = m->iops ? (uint64_t)fmin((double)m->iops * share, cio[i]) : 0;
		f->queue_depth = m->queue_depth ? (uint32_t)((double)m->queue_depth * share) : 0;
		jc->rates_idle = !jc->outstanding;
		/* A device model: each job's requests take the device's
		 * service time on its share of the channels. */
		rt->transfer = m->transfer;
		rt->refill_ns = m->refill_ns;
		rt->iops_burst = m->iops_burst;
		rt->lanes = m->lanes;
		rt->serial_ns = m->serial_ns;
		rt->max_request = m->max_request;
	}
}
