/* This node's pacer in a cluster of mounts: the counts the exchange reads
 * (dl_pacer_cluster_sample), the share it installs (dl_pacer_cluster_grant)
 * and how a request meets it: the class's limits scaled to the node's
 * fraction of each (pacer_cluster_model), so the token bucket, the IOPS
 * spacing and the queue slots a request goes through are the node's part
 * of the cluster's, and every request is still decided here, with no round
 * trip. The arithmetic is cluster.c's. */
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

const struct dl_dev_model *pacer_cluster_model(const struct pacer_class *k,
					       const struct dl_dev_model *m, uint64_t len,
					       struct dl_dev_model *tmp)
{
	const struct dl_cluster_cls_grant *g = &k->cl;
	double fb = g->bw, fi = g->iops, fq = g->q;
	uint64_t window = k->cl_window_ns ? k->cl_window_ns : CL_WINDOW_NS;

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
	if (m->bandwidth && len && (double)len * 1e9 > (double)m->bandwidth * fb * (double)window)
		fb = fmax(fb, g->floor);
	*tmp = *m;
	tmp->bandwidth = scale(m->bandwidth, fb);
	tmp->iops = scale(m->iops, fi);
	tmp->queue_depth = (uint32_t)scale(m->queue_depth, fq);
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

int dl_pacer_cluster_grant(struct dl_pacer *p, uint32_t rank, const struct dl_cluster_node *table,
			   const struct dl_cluster_grant *grants, unsigned n, uint64_t exchanges,
			   uint64_t period_ns, uint64_t window_ns)
{
	struct pacer_cluster *cl, *old;
	const struct dl_cluster_grant *g = NULL;

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

		pthread_mutex_lock(&k->lock);
		k->cl = g->c[c];
		k->cl_on = 1;
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
	return 0;
}

static void w_want(struct dl_jw *w, const char *name, const struct dl_cluster_want *x,
		   const struct dl_cluster_cls_grant *g)
{
	dl_jw_obj(w, name);
	dl_jw_fixed(w, "MBps", x->used_bps / 1e6, 3);
	dl_jw_fixed(w, "iops", x->used_iops, 1);
	dl_jw_u64(w, "peak_in_device", (uint64_t)x->peak);
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
