/* This node's pacer in a cluster of mounts: the counts the exchange reads
 * (dl_pacer_cluster_sample), the share it installs (dl_pacer_cluster_grant)
 * and how a request meets it: the class's limits scaled to the node's
 * fraction of each (pacer_cluster_model), so the token bucket, the IOPS
 * spacing and the queue slots a request goes through are the node's part
 * of the cluster's, and every request is still decided here, with no round
 * trip. Fractions of queue slots and data paths are whole ones held longer
 * (part()); a latency that grows with the requests in service counts the
 * other nodes' (pacer_cluster_in_service); a share that grows re-times the
 * node's waiting requests (boost()). The arithmetic is cluster.c's. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/json.h"
#include "pacer_i.h"

/* The cluster's window when none was granted yet: share.c's default. */
#define CL_WINDOW_NS PACER_DEFAULT_SHARE_WINDOW

static uint64_t scale(uint64_t v, double f)
{
	double x;

	if (!v)
		return 0; /* no limit stays none */
	if (!(f > 0))
		f = 0; /* NaN from a peer's record: none of it */
	x = (double)v * f;
	return x < 1 ? 1 : x >= (double)v ? v : (uint64_t)x;
}

/* A fraction f of v slots (queue slots, data paths): n, the whole number
 * at or above x = f v, each held n / x times as long, so that they serve
 * x of the device's: a node with 2.5 of a device's 10
 * slots serves what 2.5 do, not 2 or 3 (a shared FIFO queue serves each
 * node in proportion to the requests it keeps there). */
static uint32_t part(uint64_t v, double f, double *hold)
{
	double x;
	uint64_t n;

	*hold = 1;
	if (!v)
		return 0; /* no limit stays none */
	if (!(f > 0))
		f = 0;
	x = (double)v * f;
	if (x >= (double)v)
		return (uint32_t)v;
	/* A node with next to nothing still has a slot, held at most as
	 * long as the largest cluster's share of one would be. */
	if (x < 1.0 / DL_CLUSTER_MAX_NODES)
		x = 1.0 / DL_CLUSTER_MAX_NODES;
	n = (uint64_t)ceil(x - 1e-9);
	if (n < 1)
		n = 1;
	*hold = (double)n / x;
	return (uint32_t)n;
}

const struct dl_dev_model *pacer_cluster_model(const struct pacer_class *k,
					       const struct dl_dev_model *m, uint64_t len,
					       struct dl_dev_model *tmp, double *slot_hold,
					       double *lane_hold)
{
	const struct dl_cluster_cls_grant *g = &k->cl;
	double fb = g->bw, fi = g->iops, fq = g->q, fl = g->dev;
	uint64_t window = k->cl_window_ns ? k->cl_window_ns : CL_WINDOW_NS;

	*slot_hold = *lane_hold = 1;
	if (!k->cl_on)
		return m;
	/* At least its fair fraction: a node idle when its share was
	 * computed (it has just become busy: the next exchange counts it),
	 * and a share that would take longer than a window to move this
	 * request (its rate dates from a lighter load). That is the overshoot
	 * cluster.c bounds. */
	if (g->idle) {
		fb = fmax(fb, g->floor);
		fi = fmax(fi, g->floor);
		fq = fmax(fq, g->floor);
	}
	/* No requests counted in the device (too short to be seen, or a
	 * peer's record made none of it): its fair fraction. */
	if (!(fq > 0))
		fq = g->floor;
	if (g->idle || !(fl > 0))
		fl = fmax(fl, g->floor);
	if (m->bandwidth && len && (double)len * 1e9 > (double)m->bandwidth * fb * (double)window)
		fb = fmax(fb, g->floor);
	*tmp = *m;
	tmp->bandwidth = scale(m->bandwidth, fb);
	tmp->iops = scale(m->iops, fi);
	/* Its fraction of the queue slots (fcfs weighs the shares by the
	 * requests each node keeps in the device) and of the device model's
	 * data paths (as its requests in the device are of the cluster's). */
	tmp->queue_depth = part(m->queue_depth, fq, slot_hold);
	if (m->transfer && m->lanes)
		tmp->lanes = part(m->lanes, fl, lane_hold);
	/* Its part of the burst too: the nodes' buckets together hold the
	 * cluster's one, not N of them; but at least this request, so that a
	 * node reading now and then, under its share, gets each read at once
	 * (as from a device not busy for it) and is not slowed into a smaller
	 * share by its own history. A node that becomes busy after idle time
	 * thus moves one request at once: part of the overshoot. */
	tmp->burst = scale(m->burst ? m->burst : PACER_DEFAULT_BURST, fb);
	if (tmp->burst < len)
		tmp->burst = len;
	if (tmp->burst < 4096)
		tmp->burst = 4096;
	if (m->iops_burst)
		tmp->iops_burst = scale(m->iops_burst, fi);
	return tmp;
}

uint32_t pacer_cluster_in_service(const struct pacer_class *k)
{
	double o = k->cl_on ? k->cl.others : 0;

	if (!(o > 0))
		return k->busy;
	if (o > 1e6)
		o = 1e6;
	return k->busy + (uint32_t)(o + 0.5);
}

void pacer_cluster_hold(const struct pacer_class *k, struct pacer_dev *d,
			const struct pacer_rates *rt, uint64_t start, uint64_t due, uint64_t len,
			int merged)
{
	if (!k->cl_on || merged || due <= start || due == UINT64_MAX)
		return;
	if (k->cl_slot_hold > 1 && rt->queue_depth && d->nslots)
		for (uint32_t i = 0; i < d->nslots; i++)
			if (d->slots[i] == due) {
				double x = (double)start + (double)(due - start) * k->cl_slot_hold;

				d->slots[i] = x >= 1.8e19 ? UINT64_MAX : (uint64_t)x;
				pacer_heap_down(d->slots, d->nslots, i);
				break;
			}
	if (k->cl_lane_hold > 1 && rt->transfer && rt->lanes) {
		unsigned nl = rt->lanes > DL_PACER_MAX_LANES ? DL_PACER_MAX_LANES
							     : (unsigned)rt->lanes;
		/* Its time on the data path: serial and its bytes. */
		double on = (double)rt->serial_ns + (double)len * 1e9 / (double)rt->transfer;

		for (unsigned l = 0; l < nl; l++)
			if (d->lane_free[l] == due) {
				double x = (double)due + on * (k->cl_lane_hold - 1);

				d->lane_free[l] = x >= 1.8e19 ? UINT64_MAX : (uint64_t)x;
				break;
			}
	}
}

void pacer_cluster_busy(struct pacer_class *k, uint64_t now)
{
	if (now > k->cl_busy_at) {
		k->clc.busy_ns += (uint64_t)k->busy * (now - k->cl_busy_at);
		k->cl_busy_at = now;
	}
}

/* The boost's map of a time: what was still ahead at `at` shrinks by c. */
static uint64_t boost_map(uint64_t x, uint64_t at, double c)
{
	if (x <= at || x == UINT64_MAX)
		return x;
	return at + (uint64_t)((double)(x - at) * c + 0.5);
}

/* A device's waiting times after its node's bandwidth share grew: the
 * plain model's pipe (when its bucket is empty), the device model's byte
 * bucket and the throttle's last start (a request held there has not
 * started), and the queue slots and data paths the re-timed requests hold
 * until their due times (the same map: order kept, so the heap stays one;
 * a request whose data was ready later than the map says frees its slot
 * that much early). The IOPS spacing stays: that share is another's. */
static void boost_dev(struct pacer_dev *d, uint64_t at, double c, int slices)
{
	d->pipe_x = boost_map(d->pipe_x, at, c);
	for (uint32_t i = 0; i < d->nslots; i++)
		d->slots[i] = boost_map(d->slots[i], at, c);
	if (slices)
		return; /* blk-throttle's slices grant what they grant */
	if (d->bytes.primed) {
		d->thr_last = boost_map(d->thr_last, at, c);
		d->bytes.ref = boost_map(d->bytes.ref, at, c);
	}
	for (unsigned l = 0; l < DL_PACER_MAX_LANES; l++)
		d->lane_free[l] = boost_map(d->lane_free[l], at, c);
	for (unsigned i = 0; i < PACER_MERGE_STREAMS; i++)
		d->merge[i].due = boost_map(d->merge[i].due, at, c);
}

void pacer_cluster_boost_retime(const struct pacer_class *k, int device_model,
				struct dl_pacer_result *res, uint64_t now)
{
	uint64_t arrival = res->due_ns - res->queue_ns - res->service_ns, start, due, floor;

	start = arrival + res->queue_ns;
	if (device_model) {
		/* Only a request still held by the throttle moves: its start,
		 * and its due time with it. */
		uint64_t s = boost_map(start, k->cl_boost_at, k->cl_boost_c);

		if (start <= now || s >= start)
			return;
		if (s < now)
			s = now;
		res->due_ns -= start - s;
		res->queue_ns = s - arrival;
		return;
	}
	/* The plain model: its bytes still to come through the node's pipe. */
	due = boost_map(res->due_ns, k->cl_boost_at, k->cl_boost_c);
	floor = res->ready_ns > start ? res->ready_ns : start;
	if (floor < now)
		floor = now;
	if (due < floor)
		due = floor;
	if (due >= res->due_ns)
		return;
	res->due_ns = due;
	res->service_ns = due - start;
}

static void count(struct dl_cluster_count *c, uint64_t len, unsigned held, unsigned bw_held)
{
	c->ops++;
	c->bytes += len;
	c->held_bw += !!(held & bw_held);
	c->held_iops += !!(held & PACER_HELD_IOPS);
	c->held_q += !!(held & PACER_HELD_QUEUE);
}

void pacer_cluster_count(struct pacer_class *k, struct pacer_job_cls *jc, uint64_t len,
			 unsigned held, int model)
{
	/* Held back by its bandwidth share: it queued behind its own earlier
	 * requests in its bucket (the plain model); the device model's
	 * throttle says only that it waited. */
	unsigned bw_held = model ? PACER_HELD_BW : PACER_HELD_BUCKET;

	count(&k->clc, len, held, bw_held);
	if (k->busy > k->clc.peak)
		k->clc.peak = k->busy;
	count(&jc->clc, len, held, bw_held);
	if (jc->outstanding > jc->clc.peak)
		jc->clc.peak = jc->outstanding;
}

/* A job's identity across nodes: its name (FNV-1a); one with no name is
 * known by its number, which another node may give another job. */
static uint64_t job_key(const struct pacer_job *j, uint32_t slot)
{
	char buf[32];
	const char *s = j->name;
	uint64_t h = 0xcbf29ce484222325ULL;

	if (slot == PACER_JOB_OTHER)
		s = "(other)";
	else if (!j->named) {
		snprintf(buf, sizeof(buf), "(job %u)", j->id);
		s = buf;
	}
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h ? h : 1;
}

int dl_pacer_cluster_sample(struct dl_pacer *p, uint64_t now_ns, struct dl_cluster_sample *s)
{
	unsigned idx[PACER_JOB_SLOTS], n = 0;

	if (!p || !s)
		return -EINVAL;
	memset(s, 0, sizeof(*s));
	s->now_ns = now_ns;
	pthread_mutex_lock(&p->jobs.lock);
	for (unsigned j = 0; j < PACER_JOB_SLOTS && n < DL_CLUSTER_SAMPLE_JOBS; j++) {
		const struct pacer_job *jb = &p->jobs.slot[j];

		if (!jb->id && j != PACER_JOB_OTHER)
			continue;
		idx[n] = j;
		s->job[n].key = job_key(jb, j);
		/* The table shows its name's beginning. */
		snprintf(s->job[n].name, sizeof(s->job[n].name), "%.*s",
			 (int)sizeof(s->job[n].name) - 1,
			 j == PACER_JOB_OTHER ? "(other)" : jb->named ? jb->name : "(unnamed)");
		n++;
	}
	s->njobs = n;
	for (int c = 0; c < DL_OP__COUNT; c++) {
		struct pacer_class *k = &p->cls[c];
		const struct dl_dev_model *m;

		pthread_mutex_lock(&k->lock);
		if (c == 0)
			s->policy = p->cfg.share.policy;
		m = pacer_model_at(p, c, now_ns);
		s->bandwidth[c] = p->cfg.enabled ? m->bandwidth : 0;
		s->iops[c] = p->cfg.enabled ? m->iops : 0;
		s->queue_depth[c] = p->cfg.enabled ? m->queue_depth : 0;
		pacer_cluster_busy(k, now_ns);
		s->cls[c] = k->clc;
		s->cls[c].outstanding = k->busy;
		k->clc.peak = k->busy;
		for (unsigned i = 0; i < n; i++) {
			struct pacer_job_cls *jc = &k->jobs[idx[i]];

			s->job[i].weight = jc->weight ? jc->weight : 1;
			s->job[i].c[c] = jc->clc;
			s->job[i].c[c].outstanding = jc->outstanding;
			jc->clc.peak = jc->outstanding;
		}
		pthread_mutex_unlock(&k->lock);
	}
	pthread_mutex_unlock(&p->jobs.lock);
	return 0;
}

void pacer_cluster_free(struct pacer_cluster *cl)
{
	if (!cl)
		return;
	free(cl->table);
	free(cl->grants);
	free(cl);
}

/* Class k's share grew to g (class lock held; was_idle: the node was idle
 * when its previous share was computed): when the bandwidth its waiting
 * requests were timed at is DL_CLUSTER_BOOST or more below what it now
 * gets, what they still wait for goes at the new rate. A node that
 * becomes busy after idle time goes at its fair fraction until the next
 * exchange counts it; without this its first requests (a reader's streams
 * and their readahead) would keep their slow times, and the node would
 * lose their worth of the budget at each start. Only then: a node busy
 * before keeps its requests' times when its share grows, as it does when
 * its share shrinks (a node whose share shrank finishes what it admitted
 * at the old rate, and one whose share grew got it at the old rate too).
 * Speeding up every node whose share grew made the re-time one-sided:
 * bursty nodes, whose shares swing, moved 10-80% more than the budget
 * between them (test_pacer_cluster's bursty nodes; live, 4 dlio-drive
 * copies, 11-13%). Returns 1 when the waiting requests are to be
 * re-timed. */
static int boost(struct dl_pacer *p, struct pacer_class *k, int c,
		 const struct dl_cluster_cls_grant *g, uint64_t now, int was_idle)
{
	const struct dl_dev_model *m = pacer_model_at(p, c, now);
	uint64_t r1;
	double x;

	if (!p->cfg.enabled || !m->bandwidth || !was_idle || g->idle || !k->cl_rate || !k->busy)
		return 0;
	x = (double)m->bandwidth * g->bw;
	r1 = x >= (double)m->bandwidth ? m->bandwidth : (uint64_t)x;
	if ((double)r1 < DL_CLUSTER_BOOST * (double)k->cl_rate)
		return 0;
	k->cl_boost_at = now;
	k->cl_boost_c = (double)k->cl_rate / (double)r1;
	boost_dev(&k->dev, now, k->cl_boost_c, m->transfer && m->refill_ns);
	for (unsigned j = 0; j < PACER_JOB_SLOTS; j++)
		boost_dev(&k->jobs[j].dev, now, k->cl_boost_c, m->transfer && m->refill_ns);
	/* A buffered reader's readahead windows are there when their IOs
	 * are: the IOs are re-timed, and so are they (a read inside one,
	 * the rest of a read the kernel split, is due with it). */
	for (unsigned i = 0; i < PACER_RUN_SLOTS; i++)
		k->runs.run[i].due = boost_map(k->runs.run[i].due, now, k->cl_boost_c);
	k->cl_rate = r1;
	/* A generation of its own: the re-time moves the waiting requests by
	 * the map alone (no restart of the device, whose state is mapped). */
	k->gen++;
	k->cl_boost_gen = k->gen;
	return 1;
}

int dl_pacer_cluster_grant(struct dl_pacer *p, uint32_t rank, const struct dl_cluster_node *table,
			   const struct dl_cluster_grant *grants, unsigned n, uint64_t exchanges,
			   uint64_t period_ns, uint64_t window_ns, uint64_t now_ns)
{
	struct pacer_cluster *cl, *old;
	const struct dl_cluster_grant *g = NULL;
	int retime = 0;

	if (!p || !table || !grants || !n)
		return -EINVAL;
	for (unsigned i = 0; i < n; i++)
		if (table[i].rank == rank)
			g = &grants[i];
	if (!g)
		return -EINVAL;
	cl = calloc(1, sizeof(*cl));
	if (!cl)
		return -ENOMEM;
	cl->table = malloc(n * sizeof(*table));
	cl->grants = malloc(n * sizeof(*grants));
	if (!cl->table || !cl->grants) {
		pacer_cluster_free(cl);
		return -ENOMEM;
	}
	memcpy(cl->table, table, n * sizeof(*table));
	memcpy(cl->grants, grants, n * sizeof(*grants));
	cl->rank = rank;
	cl->n = n;
	cl->exchanges = exchanges;
	cl->period_ns = period_ns;
	pthread_mutex_lock(&p->jobs.lock);
	for (int c = 0; c < DL_OP__COUNT; c++) {
		struct pacer_class *k = &p->cls[c];
		int was_idle;

		pthread_mutex_lock(&k->lock);
		/* Its waiting requests were timed at its fair fraction. */
		was_idle = k->cl_on && k->cl.idle;
		k->cl = g->c[c];
		k->cl_on = 1;
		retime |= boost(p, k, c, &g->c[c], now_ns, was_idle);
		k->cl_window_ns = window_ns;
		/* Each local job's weight in the node's fair share: what the
		 * cluster gave it, or a newcomer's fair part. */
		for (unsigned j = 0; j < PACER_JOB_SLOTS; j++) {
			uint64_t key = job_key(&p->jobs.slot[j], j);
			double w = g->job_floor[c];

			for (unsigned i = 0; i < g->njobs; i++)
				if (g->job[i].key == key && g->job[i].w[c] > 0)
					w = g->job[i].w[c];
			k->jobs[j].cl_w = w > 0 ? w : 1.0 / (double)(n + 1);
		}
		/* The node's own fair share follows the new limits at once. */
		k->next_share = 0;
		pthread_mutex_unlock(&k->lock);
	}
	pthread_mutex_unlock(&p->jobs.lock);
	pthread_mutex_lock(&p->cl_lock);
	old = p->cl;
	p->cl = cl;
	pthread_mutex_unlock(&p->cl_lock);
	pacer_cluster_free(old);
	return retime;
}

static void w_want(struct dl_jw *w, const char *name, const struct dl_cluster_want *x,
		   const struct dl_cluster_cls_grant *g)
{
	dl_jw_obj(w, name);
	dl_jw_fixed(w, "MBps", x->used_bps / 1e6, 3);
	dl_jw_fixed(w, "iops", x->used_iops, 1);
	dl_jw_u64(w, "peak_in_device", (uint64_t)x->peak);
	dl_jw_fixed(w, "mean_in_device", x->in_flight, 2);
	if (g) {
		dl_jw_fixed(w, "share_bandwidth", g->bw, 4);
		dl_jw_fixed(w, "share_iops", g->iops, 4);
		dl_jw_fixed(w, "share_queue", g->q, 4);
	}
	dl_jw_end(w);
}

/* stats.json's "cluster": the table as last exchanged, per node (what it
 * moved over the window, its share of each limit) and per job. */
void pacer_cluster_stats(struct dl_pacer *p, struct dl_jw *w)
{
	struct pacer_cluster *cl;

	pthread_mutex_lock(&p->cl_lock);
	cl = p->cl;
	if (!cl) {
		pthread_mutex_unlock(&p->cl_lock);
		return;
	}
	dl_jw_obj(w, "cluster");
	dl_jw_u64(w, "rank", cl->rank);
	dl_jw_u64(w, "nodes", cl->n);
	dl_jw_u64(w, "exchanges", cl->exchanges);
	dl_jw_us(w, "period_us", cl->period_ns);
	dl_jw_arr(w, "table");
	for (unsigned i = 0; i < cl->n; i++) {
		const struct dl_cluster_node *nd = &cl->table[i];

		dl_jw_obj(w, NULL);
		dl_jw_u64(w, "node", nd->rank);
		for (int c = 0; c < DL_OP__COUNT; c++)
			w_want(w, pacer_class_names[c], &nd->w[c], &cl->grants[i].c[c]);
		dl_jw_arr(w, "jobs");
		for (unsigned j = 0; j < nd->njobs; j++) {
			dl_jw_obj(w, NULL);
			dl_jw_str(w, "name", nd->job[j].name);
			dl_jw_u64(w, "weight", nd->job[j].weight);
			for (int c = 0; c < DL_OP__COUNT; c++)
				w_want(w, pacer_class_names[c], &nd->job[j].w[c], NULL);
			dl_jw_end(w);
		}
		dl_jw_end(w);
		dl_jw_end(w);
	}
	dl_jw_end(w);
	dl_jw_end(w);
	pthread_mutex_unlock(&p->cl_lock);
}
